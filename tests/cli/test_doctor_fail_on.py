"""``doctor --fail-on``: which verdict exits 1, as the GitHub Action's ``fail-on`` input."""

from __future__ import annotations

import shutil

import pytest

from trainproof.findings import exit_code

from conftest import REPO, run_cli

#: name -> (example run, its verdict)
RUNS = {"pass": "healthy", "warn": "gallery/hf/overfit/seed0", "fail": "lr_hot"}


@pytest.fixture
def tree(tmp_path):
    for name, example in RUNS.items():
        shutil.copytree(REPO / "examples" / example, tmp_path / name)
    (tmp_path / "short").mkdir()
    (tmp_path / "short" / "metrics.jsonl").write_text('{"step": 1, "loss": 1.0}\n', encoding="utf-8")
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize(
    "fail_on, runs, code",
    [
        (None, ["pass", "warn"], 0),
        ("FAIL", ["pass", "warn"], 0),
        ("warn", ["pass", "warn"], 1),  # any case, as the Action's input
        ("WARN", ["pass"], 0),
        ("never", ["pass", "warn", "fail"], 0),
        ("Never", ["fail"], 0),
        ("FAIL", ["fail"], 1),
        ("never", ["pass", "short"], 2),  # could not judge: 2 whatever fail-on is
        ("WARN", ["pass", "short"], 2),
        ("WARN", ["warn", "short"], 1),
    ],
)
def test_fail_on_decides_which_verdict_exits_1(tree, fail_on, runs, code):
    args = ["doctor", *(str(tree / r) for r in runs), "--json"]
    if fail_on is not None:
        args += ["--fail-on", fail_on]
    got, out, err, doc = run_cli(*args)
    verdicts = sorted(r["verdict"] for r in doc["reports"])
    expect = {"pass": "PASS", "warn": "WARN", "fail": "FAIL", "short": "NOT-CHECKED"}
    assert verdicts == sorted(expect[r] for r in runs)
    assert got == code, (verdicts, err)


def test_fail_on_rejects_an_unknown_verdict(tmp_path):
    code, out, err, _ = run_cli("doctor", str(tmp_path), "--fail-on", "PASS")
    assert code == 2 and "--fail-on" in err


def test_exit_code_policy_with_fail_on():
    with pytest.raises(ValueError):
        exit_code([], None, "pass")
    assert exit_code([], "no runs", "never") == 2
