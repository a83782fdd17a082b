"""The silent-bug gallery (evidence/silent_bugs/): one test per program.

A healthy program gets no WARN or FAIL from the model-level rules and no FAIL from any
rule. A buggy program's bug has its effect (what the program measured of its own
mechanism, e.g. a layer that never moved) and is caught as its module's ``CATCH`` says
(decided from the mechanism before trainproof judged it). A catch that only the
model-level rules can make skips, with the reason, while this build registers none of its
rule ids; a catch known to be missed is an ``xfail(strict=True)`` naming why (not strict for a
program whose catch float rounding decides: MACHINE_DEPENDENT), so it turns
into a failure the day it is caught and the gallery's page must say so.

Each program trains for a second or more (the two data-parallel ones start two processes),
so every test here is in the slow set.
"""

from __future__ import annotations

import importlib.util

import pytest

from conftest import REPO

torch = pytest.importorskip("torch")

_spec = importlib.util.spec_from_file_location("silent_bugs_evidence", REPO / "evidence" / "silent_bugs.py")
runner = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(runner)

from trainproof.rules import registry  # noqa: E402

NAMES = runner.silent_bugs.names()
BUGS = [n for n in NAMES if n.startswith("bug_")]
HEALTHY = [n for n in NAMES if n.startswith("ok_")]
_ROWS: dict[str, dict] = {}


def measure(name: str) -> dict:
    """The runner's row of program ``name``, run once per session (the page test at the end
    reuses the rows the tests before it measured)."""
    if name not in _ROWS:
        _ROWS[name] = runner.measure(name)
    return _ROWS[name]


def _bug_params():
    out = []
    for name in BUGS:
        reason = runner.KNOWN_MISSES.get(name)
        marks = [pytest.mark.slow]
        if reason:
            # a catch that float rounding decides passes or fails by the machine
            marks.append(pytest.mark.xfail(strict=name not in runner.MACHINE_DEPENDENT, reason=reason))
        out.append(pytest.param(name, marks=marks, id=name))
    return out


@pytest.mark.slow
def test_the_gallery_has_twenty_bugs_and_ten_healthy_programs_each_declared():
    assert len(BUGS) >= 20 and len(HEALTHY) >= 10, (len(BUGS), len(HEALTHY))
    for name in NAMES:
        mod = runner.silent_bugs.load(name)
        assert (mod.BUG is None) == name.startswith("ok_"), name
        assert callable(mod.run), name
        if mod.BUG is not None:
            catch = mod.CATCH
            assert catch["by"] in ("model", "loss") and catch["level"] in ("WARN", "FAIL"), name
            assert catch["rules"] and all(r.startswith("TP-") for r in catch["rules"]), name
            if catch["by"] == "loss":  # the loss-curve rules exist today: a typo would never match
                assert any(registry.get(r) for r in catch["rules"]), name
    assert set(runner.KNOWN_MISSES) <= set(BUGS)


@pytest.mark.slow
@pytest.mark.parametrize("name", HEALTHY)
def test_a_healthy_program_gets_no_model_level_warning_and_no_fail(name):
    row = measure(name)
    assert row["steps"] == row["max_steps"] > 0
    assert not row["model_flags"], row["model_flags"]
    assert "FAIL" not in row["loss_flags"].values(), row["loss_flags"]


@pytest.mark.parametrize("name", _bug_params())
def test_a_buggy_program_is_caught_as_its_mechanism_says(name):
    row = measure(name)
    assert row["meta"].get("effect", True), f"the bug had no effect: {row['meta']}"
    catch = row["catch"]
    if catch["by"] == "model" and all(registry.get(r) is None for r in catch["rules"]):
        pytest.skip(f"only the model-level rules can see this bug, and none of {catch['rules']} is registered yet")
    assert row["expected_met"], (
        f"expected {catch['rules']} at {catch['level']} or worse; got loss-curve {row['loss_flags']}, "
        f"model-level {row['model_flags']}"
    )


@pytest.mark.slow
def test_the_page_is_up_to_date():
    rows = [measure(n) for n in NAMES]
    want = runner.verdicts_only(runner.PAGE.read_text(encoding="utf-8"))
    assert want == runner.verdicts_only(runner.render(rows)), (
        "evidence/silent-bugs.md is stale: run `python evidence/silent_bugs.py`"
    )
