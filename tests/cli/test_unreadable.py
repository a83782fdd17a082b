"""What cannot be read still gives the documented outputs: ``judge --json`` on an
unreadable file prints its JSON document (exit 2), ``doctor`` over a folder it cannot
search exits 2 and says so, and a SARIF file holds at most code scanning's number of
results per run, saying which were left out."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from _helpers import check_sarif, failing_log

from trainproof.findings import Finding, Level, Report
from trainproof.render import sarif

from conftest import healthy_rows, run_subprocess, validate_doc, write_jsonl


def _permissions_apply(tmp_path: Path) -> bool:
    """Whether file modes bind this process (not root with CAP_DAC_OVERRIDE)."""
    probe = tmp_path / "probe"
    probe.write_text("x")
    probe.chmod(0)
    try:
        return not os.access(probe, os.R_OK)
    finally:
        probe.chmod(0o644)
        probe.unlink()


@pytest.fixture
def modes_bind(tmp_path):
    if not _permissions_apply(tmp_path):
        pytest.skip("file modes do not bind this process (root): an unreadable file cannot be made")


def test_judge_json_on_an_unreadable_file_prints_the_document(tmp_path, modes_bind):
    log = write_jsonl(tmp_path / "train.jsonl", healthy_rows())
    log.chmod(0)
    try:
        res = run_subprocess("judge", str(log), "--json")
    finally:
        log.chmod(0o644)
    assert res.returncode == 2, res.stdout + res.stderr
    doc = validate_doc(json.loads(res.stdout))
    assert "permission denied" in doc["error"]
    assert [r["verdict"] for r in doc["reports"]] == ["NOT-CHECKED"]
    assert "Usage:" not in res.stderr and "Traceback" not in res.stderr


def test_an_unreadable_config_is_reported_in_the_json_document(tmp_path, modes_bind):
    log = write_jsonl(tmp_path / "train.jsonl", healthy_rows())
    cfg = tmp_path / "tp.toml"
    cfg.write_text("[tool.trainproof]\n")
    cfg.chmod(0)
    try:
        res = run_subprocess("judge", str(log), "--json", "--config", str(cfg))
    finally:
        cfg.chmod(0o644)
    assert res.returncode == 2, res.stdout + res.stderr
    doc = validate_doc(json.loads(res.stdout))
    assert str(cfg) in doc["error"] and "Usage:" not in res.stderr


@pytest.mark.parametrize("mode", [0o000, 0o300, 0o600])
def test_doctor_over_a_folder_it_cannot_search_exits_2_and_says_so(tmp_path, modes_bind, mode):
    root = tmp_path / "repo"
    write_jsonl(root / "a" / "metrics.jsonl", healthy_rows())
    locked = root / "b"
    write_jsonl(locked / "metrics.jsonl", healthy_rows())
    locked.chmod(mode)
    try:
        res = run_subprocess("doctor", str(root), "--json", "--jobs", "1")
        text = run_subprocess("doctor", str(root), "--jobs", "1")
    finally:
        locked.chmod(0o755)
    assert res.returncode == 2, res.stdout + res.stderr
    doc = validate_doc(json.loads(res.stdout))
    assert [r["verdict"] for r in doc["reports"]] == ["PASS"]
    assert str(locked) in doc["error"] and "could not be searched" in doc["error"]
    assert text.returncode == 2
    assert any("could not be searched" in ln and str(locked) in ln for ln in text.stderr.splitlines())


def test_a_fail_still_exits_1_beside_a_folder_it_cannot_search(tmp_path, modes_bind):
    root = tmp_path / "repo"
    failing_log(root / "a" / "metrics.jsonl")
    locked = root / "b"
    locked.mkdir(parents=True)
    locked.chmod(0)
    try:
        res = run_subprocess("doctor", str(root), "--json", "--jobs", "1")
    finally:
        locked.chmod(0o755)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "could not be searched" in json.loads(res.stdout)["error"]


def _report(i: int, level: Level, n: int) -> Report:
    findings = [
        Finding(id=rid, level=level, message=f"finding {k}", evidence="e", step=float(k), line=k + 1)
        for k in range(n)
        for rid in (
            ("TP-NAN",) if level is Level.FAIL else ("TP-LOSS-SPIKE",) if level is Level.WARN else ("TP-THROUGHPUT",)
        )
    ]
    return Report(file=f"logs/run{i}.jsonl", format="jsonl", findings=findings, records=n)


@pytest.mark.slow
def test_sarif_drops_the_lowest_severity_first_past_the_cap(monkeypatch):
    # 90 errors, 90 warnings and 90 notes against a cap of 250: 20 notes too many. The cap
    # is lowered so the test stays fast (building a result costs about 2 ms).
    monkeypatch.setattr(sarif, "MAX_RESULTS", 250)
    reports = [_report(0, Level.FAIL, 90), _report(1, Level.WARN, 90), _report(2, Level.INFO, 90)]
    doc = check_sarif(json.loads(sarif.dumps(reports)))
    [run] = doc["runs"]
    assert len(run["results"]) == 250
    by_level: dict[str, int] = {}
    for r in run["results"]:
        by_level[r["level"]] = by_level.get(r["level"], 0) + 1
    assert by_level == {"error": 90, "warning": 90, "note": 70}
    dropped = run["properties"]["droppedResults"]
    assert dropped["count"] == 20 and dropped["byLevel"] == {"note": 20} and dropped["byRule"] == {"TP-THROUGHPUT": 20}
    [note] = run["invocations"][0]["toolExecutionNotifications"]
    assert "20 of 270 results were left out" in note["message"]["text"]
    # The kept notes are the first ones, with the fingerprints they have uncapped.
    kept = [r for r in run["results"] if r["level"] == "note"]
    assert kept[-1]["properties"]["step"] == 69
    monkeypatch.setattr(sarif, "MAX_RESULTS", 10**6)
    full = json.loads(sarif.dumps(reports))["runs"][0]
    assert "droppedResults" not in full["properties"] and "invocations" not in full
    assert [r["partialFingerprints"] for r in full["results"][:250]] == [
        r["partialFingerprints"] for r in run["results"]
    ]


@pytest.mark.slow
def test_within_one_level_the_last_results_go_and_rules_listed_are_those_kept(monkeypatch):
    monkeypatch.setattr(sarif, "MAX_RESULTS", 100)
    reports = [_report(0, Level.WARN, 60), _report(1, Level.WARN, 60), _report(2, Level.INFO, 5)]
    doc = check_sarif(json.loads(sarif.dumps(reports)))
    run = doc["runs"][0]
    assert len(run["results"]) == 100
    assert run["properties"]["droppedResults"]["byLevel"] == {"note": 5, "warning": 20}
    assert run["results"][-1]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "logs/run1.jsonl"
    assert run["results"][-1]["properties"]["step"] == 39
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["TP-LOSS-SPIKE"]
    assert all(r["ruleIndex"] == 0 for r in run["results"])


@pytest.mark.slow
def test_sarif_holds_at_most_25000_results():
    """A run is cut at code scanning's 25,000 results, the lowest severity first, and the
    cut is said (how long writing them takes: bench/bench_sarif.py)."""
    assert sarif.MAX_RESULTS == 25_000
    reports = [_report(0, Level.WARN, 12_510), _report(1, Level.INFO, 12_510)]
    doc = json.loads(sarif.dumps(reports))
    run = doc["runs"][0]
    assert len(run["results"]) == 25_000
    assert run["properties"]["droppedResults"] == {
        "count": 20,
        "byLevel": {"note": 20},
        "byRule": {"TP-THROUGHPUT": 20},
        "message": run["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"],
    }
