"""Shared test helpers: writing small logs, running the CLI, validating --json output."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from _mlflow_server import clean_env  # noqa: F401  (a fixture of the MLflow server tests)
from _postgres import pg, store_location  # noqa: F401  (fixtures of the run-history tests)
from _watch_procs import procs  # noqa: F401  (a fixture of the watch tests)
from click.testing import CliRunner

from trainproof.cli import cli

import _hypothesis_profiles  # noqa: F401  (registers the fuzz profiles before --hypothesis-profile is read)

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SCHEMA = json.loads((REPO / "src" / "trainproof" / "schema" / "report.schema.json").read_text())


def validate_doc(doc: dict) -> dict:
    """Validate a --json document against the published schema and return it."""
    jsonschema.validate(doc, SCHEMA)
    return doc


def run_cli(*args: str, input: str | None = None):
    """Run the CLI in-process; returns (exit_code, stdout, stderr, parsed_json_or_None)."""
    runner = CliRunner()
    res = runner.invoke(cli, list(args), input=input, catch_exceptions=False)
    out = res.stdout
    doc = None
    if "--json" in args and out.strip().startswith("{"):
        doc = validate_doc(json.loads(out))
    return res.exit_code, out, res.stderr, doc


def run_subprocess(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 120):
    """Run ``python -m trainproof`` as a real process."""
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(
        [sys.executable, "-m", "trainproof", *args], capture_output=True, text=True, cwd=cwd, env=e, timeout=timeout
    )
    return p


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return path


def write_hf(path: Path, rows: list[dict], **top) -> Path:
    """A trainer_state.json the way HF writes it (indent=2, sorted keys)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {
        "global_step": int(rows[-1].get("step", 0)) if rows else 0,
        "is_world_process_zero": True,
        "log_history": rows,
        "max_steps": top.pop("max_steps", 0),
        **top,
    }
    path.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def healthy_rows(n: int = 60, seed: int = 0, every: int = 10) -> list[dict]:
    """A decaying noisy loss with warm-up-free constant lr and finite grad norms."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        step = (i + 1) * every
        loss = 0.8 + 1.5 * math.exp(-i / (n / 4)) + 0.04 * rng.standard_normal()
        rows.append(
            {
                "step": step,
                "loss": float(loss),
                "learning_rate": 1e-4,
                "grad_norm": float(0.5 + 0.1 * rng.random()),
                "epoch": round(step / (n * every), 4),
            }
        )
    return rows


def zero_lr_rows(n: int = 60, seed: int = 0) -> list[dict]:
    """:func:`healthy_rows` of a run at learning rate 0: its loss does not move (2.0 with
    1% noise); a loss that falls under a logged rate of 0 is TP-ZERO-LR-LEARNING's WARN, not
    TP-ZERO-LR's FAIL."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = healthy_rows(n, seed)
    for r in rows:
        r["learning_rate"] = 0.0
        r["loss"] = float(2.0 * np.exp(0.01 * rng.standard_normal()))
    return rows


def make_run(**cols):
    """A RunLog whose n-th record has step 10*(n+1), line n+1 and the n-th value of each
    column (``None`` = the metric is absent from that record)."""
    from trainproof.runlog import Record, build_runlog

    length = max(len(c) for c in cols.values())
    recs = []
    for i in range(length):
        vals = {k: float(c[i]) for k, c in cols.items() if i < len(c) and c[i] is not None}
        recs.append(Record(float(10 * (i + 1)), vals, i + 1))
    return build_runlog(recs, "x.jsonl", "jsonl")


def judge_cols(**cols):
    """Judge a :func:`make_run` RunLog with the default thresholds."""
    from trainproof.rules.engine import judge_runlog

    return judge_runlog(make_run(**cols))


def one(rep, rule_id):
    """The single finding ``rule_id`` of a report (fails unless exactly one)."""
    found = [f for f in rep.findings if f.id == rule_id]
    assert len(found) == 1, (rule_id, rep.ids())
    return found[0]


@pytest.fixture
def shared() -> Path:
    if not (SHARED / "corpus" / "MANIFEST.tsv").exists():
        pytest.skip("../shared is absent")
    return SHARED


#: The six example runs at the top of examples/ (examples/gallery/ holds many more).
CORE_EXAMPLES = ("healthy", "healthy_seed1", "bad_labels", "lr_hot", "lr_zero", "diverge")


@pytest.fixture
def core_examples(tmp_path) -> Path:
    """A copy of examples/ holding only the six top-level runs, at ``tmp_path/examples``
    (tests that doctor a whole tree use it: the gallery would make them slow and change
    their expected findings whenever the gallery grows)."""
    import shutil

    dst = tmp_path / "examples"
    for name in CORE_EXAMPLES:
        shutil.copytree(REPO / "examples" / name, dst / name)
    return dst


@pytest.fixture
def judging_always_affordable(monkeypatch):
    """Every judgement a guardian finds due is affordable. ``Guardian.affordable`` rations
    judging by wall time (after a judgement over ``JUDGE_FREE_SECONDS`` the next one waits
    ``JUDGE_COST_RATIO`` times as long), so on a loaded machine it skips judgements a test of
    the cadence or of the step a run stops at expects; the rationing itself is tested in
    tests/live/test_guardian.py."""
    from trainproof.live.guardian import Guardian

    monkeypatch.setattr(Guardian, "affordable", lambda self, now=None: True)


@pytest.fixture
def torch_one_thread():
    """torch on one thread for the test, restored after: a small model's step on a small
    machine is faster and steadier so."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


# The fast loop's guard (tests/_fast_loop_guard.py): its hooks, registered with this conftest.
from _fast_loop_guard import (  # noqa: E402, F401
    pytest_collection_finish,
    pytest_fixture_setup,
    pytest_runtest_call,
    pytest_runtest_logreport,
    pytest_runtest_makereport,
    pytest_runtest_setup,
    pytest_sessionstart,
    pytest_terminal_summary,
)


def first_seed_fast(cases, seed_at: int | None = None) -> list:
    """Parametrize ``cases`` (tuples holding a seed at ``seed_at``, or bare seeds) with every
    case of a seed other than the lowest marked slow: the inner loop judges each shape of a
    generated run (length, noise, ...) once, the full suite every seed of it."""
    cases = list(cases)
    seed_of = (lambda c: c) if seed_at is None else (lambda c: c[seed_at])
    first = min(seed_of(c) for c in cases)
    return [
        c if seed_of(c) == first else pytest.param(*(c if seed_at is not None else (c,)), marks=pytest.mark.slow)
        for c in cases
    ]


def first_cases_fast(cases, keep: int = 2) -> list:
    """Parametrize ``cases`` with all but the first ``keep`` marked slow: the inner loop
    judges the first variants of a kind, the full suite every variant."""
    out = []
    for i, c in enumerate(cases):
        if i < keep:
            out.append(c)
        else:
            out.append(pytest.param(*(c if isinstance(c, tuple) else (c,)), marks=pytest.mark.slow))
    return out
