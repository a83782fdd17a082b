"""Every check rule ships an example log that triggers it, judged here with the real engine.

The examples are literal files (``src/trainproof/rules/examples/<ID>.<ext>``, package data):
the page of each rule (docs/rules/<ID>.md) prints the one judged here, so an example that no
longer triggers its rule fails this test rather than documenting a finding that is not made.
"""

from __future__ import annotations

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib
from pathlib import Path

import pytest

from trainproof import api
from trainproof.rules.docs import judge_with_history
from trainproof.rules.registry import all_rules, baseline_of, example_of, history_of

from conftest import REPO

#: Rules with a check function that have no example, and why. Empty: every one has one
#: (compare rules a run/baseline pair, judged with ``api.compare``).
NO_EXAMPLE: dict[str, str] = {}


def _check_rules():
    return [r for r in all_rules() if not r.is_outcome and r.source != "preflight"]


def _fired_and_implied(rep) -> tuple[set[str], set[str]]:
    fired = {f.id for f in rep.findings}
    implied = {i for f in rep.findings for i in (f.data.get("implies") or [])}
    return fired, implied


def _judge(rule_id: str, folder: Path):
    name, text = example_of(rule_id)
    run = folder / name
    run.write_text(text, encoding="utf-8")
    runs = history_of(rule_id)
    if runs:
        for n, t in runs:
            (folder / n).write_text(t, encoding="utf-8")
        live = next(r for r in all_rules() if r.id == rule_id).source == "live"
        return judge_with_history(run, [folder / n for n, _ in runs], live=live)
    base = baseline_of(rule_id)
    if base is None:
        return api.judge(run)
    (folder / base[0]).write_text(base[1], encoding="utf-8")
    _, [rep] = api.compare(folder / base[0], [run])
    return rep


@pytest.mark.parametrize("rule_id", [r.id for r in _check_rules()])
def test_the_example_triggers_its_rule(rule_id, tmp_path):
    if rule_id in NO_EXAMPLE:
        pytest.skip(NO_EXAMPLE[rule_id])
    assert example_of(rule_id) is not None, f"{rule_id} has no example in src/trainproof/rules/examples/"
    rep = _judge(rule_id, tmp_path)
    fired, implied = _fired_and_implied(rep)
    assert rule_id in fired | implied, (rule_id, sorted(fired), sorted(implied))


@pytest.mark.slow
def test_compare_rules_have_a_baseline_and_no_other_rule_does():
    for r in _check_rules():
        assert (baseline_of(r.id) is not None) == (r.source == "compare"), r.id


def test_every_example_file_belongs_to_a_check_rule_and_is_small():
    ids = {r.id for r in _check_rules()}
    folder = REPO / "src" / "trainproof" / "rules" / "examples"
    for p in folder.iterdir():
        stem = p.name.split(".")[0]
        assert stem in ids, f"{p.name}: no check rule {stem}"
        assert p.stat().st_size < 8_000, f"{p.name}: an example is a few lines a reader can follow"
    for rule_id in NO_EXAMPLE:
        assert rule_id in ids and example_of(rule_id) is None, rule_id


@pytest.mark.slow
def test_outcomes_and_preflight_ids_have_no_log_example():
    for r in all_rules():
        if r.is_outcome:
            assert example_of(r.id) is None, r.id


def test_the_examples_are_package_data():
    conf = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "rules/examples/*" in conf["tool"]["setuptools"]["package-data"]["trainproof"]
