"""--mute in the preflight family means what it means for the rules (CONTRACTS.md): a
muted id is neither a finding nor in ``checks.ran``; it is in ``checks.skipped`` with
reason ``muted``, whether or not it would have fired."""

from __future__ import annotations

import json

import numpy as np
import pytest

from trainproof.findings import MUTED
from trainproof.preflight import apply_mute
from trainproof.preflight.targets import check_objective

from conftest import run_cli


def _checks(out: str) -> tuple[dict, list[str]]:
    rep = json.loads(out)["reports"][0]
    return rep["checks"], [f["id"] for f in rep["findings"]]


def _assert_muted(checks: dict, ids: list[str], rid: str) -> None:
    assert rid not in checks["ran"]
    assert rid not in ids
    assert checks["skipped"][rid] == {"reason": "muted", "detail": MUTED.detail}


@pytest.fixture
def dataset(tmp_path):
    p = tmp_path / "sft.jsonl"
    p.write_text('{"text": "a b c"}\n{"text": ""}\n{"text": "a b c"}\n{"text": "d e"}\n')
    return p


@pytest.mark.parametrize("rid", ["TP-PRE-EMPTY-TEXT", "TP-PRE-MALFORMED-JSONL"])  # one fires, one would not
def test_preflight_mute_is_a_muted_skip(dataset, rid):
    _, out, _, _ = run_cli("preflight", str(dataset), "--mute", rid, "--json")
    checks, ids = _checks(out)
    _assert_muted(checks, ids, rid)
    assert "TP-PRE-DUPLICATE-TEXT" in checks["ran"] and "TP-PRE-DUPLICATE-TEXT" in ids  # the rest still runs


def test_preflight_mute_from_the_configuration(dataset, tmp_path):
    cfg = tmp_path / "tp.toml"
    cfg.write_text('[tool.trainproof]\nmute = ["TP-PRE-DUPLICATE-TEXT"]\n')
    _, out, _, _ = run_cli("preflight", str(dataset), "--config", str(cfg), "--json")
    _assert_muted(*_checks(out), "TP-PRE-DUPLICATE-TEXT")


@pytest.mark.slow
@pytest.mark.parametrize("rid", ["TP-ENV-IMPORT-OK", "TP-ENV-IMPORT-FAIL"])
def test_env_mute_is_a_muted_skip(rid):
    _, out, _, _ = run_cli("env", "--module", "json", "--mute", rid, "--json")
    checks, ids = _checks(out)
    _assert_muted(checks, ids, rid)
    assert "TP-ENV-PYTHON-INFO" in checks["ran"]


def test_objective_mute_is_a_muted_skip():
    targets = np.array([0, 1] * 300)  # class 2 of 3 never appears in 600 targets
    plain = check_objective(3, targets=targets)
    dead = [f.id for f in plain.findings if f.level.value in ("FAIL", "WARN")]
    assert dead, "the fixture must make a check fire"
    rep = check_objective(3, targets=targets, mute=dead)
    for rid in dead:
        assert rid not in rep.ran and rid not in [f.id for f in rep.findings]
        assert rep.skipped[rid] == MUTED


def test_mute_of_another_family_is_not_listed(dataset):
    """A dataset report does not list an env id as skipped: it was never its check."""
    _, out, _, _ = run_cli("preflight", str(dataset), "--mute", "TP-ENV-IMPORT-OK", "--json")
    checks, _ = _checks(out)
    assert "TP-ENV-IMPORT-OK" not in checks["skipped"] and "TP-ENV-IMPORT-OK" not in checks["ran"]


def test_apply_mute_is_idempotent():
    targets = np.array([0, 1] * 30)
    rep = check_objective(3, targets=targets)
    rid = rep.ran[0]
    once = apply_mute(rep, [rid]).to_dict()
    assert apply_mute(rep, [rid]).to_dict() == once
