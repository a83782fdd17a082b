"""`doctor --jobs N`: runs judged in N processes give the same output, in the same order."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trainproof.api import JudgeConfig, Judgement, doctor, judge_location, judge_run, judge_runs

from conftest import REPO, healthy_rows, run_cli, write_jsonl


def _tree(tmp_path):
    root = tmp_path / "runs"
    for i, fw in enumerate(("hf", "lightning", "torch", "coqui")):
        src = REPO / "examples" / "gallery" / fw
        for cfg in ("healthy", "lr_zero", "bad_labels"):
            shutil.copytree(src / cfg / "seed0", root / fw / cfg)
    write_jsonl(root / "table" / "data.jsonl", [{"a": i, "b": i * 2} for i in range(20)])  # not a log
    (root / "notes.json").write_text('{"hello": 1}')
    return root


@pytest.mark.slow
def test_jobs_give_identical_json_in_identical_order(tmp_path):
    root = _tree(tmp_path)
    outs = []
    for jobs in ("1", "2", "3"):
        code, out, _, doc = run_cli("doctor", str(root), "--jobs", jobs, "--json")
        outs.append((code, out))
        assert len(doc["reports"]) >= 12 and doc["ignored"]
    assert outs[0] == outs[1] == outs[2]


@pytest.mark.slow
def test_jobs_with_a_baseline_compare_every_run(tmp_path):
    root = _tree(tmp_path)
    base = root / "torch" / "healthy" / "metrics.jsonl"
    r1, i1 = doctor(root, baseline=base, jobs=1)
    r2, i2 = doctor(root, baseline=base, jobs=2)
    assert [r.to_dict() for r in r1] == [r.to_dict() for r in r2] and i1 == i2
    bad = next(r for r in r2 if r.file.endswith("torch/bad_labels/metrics.jsonl"))
    assert "TP-FLOOR-RATIO" in bad.ids()


def test_judge_run_is_the_unit_of_work(tmp_path):
    log = write_jsonl(tmp_path / "run.jsonl", healthy_rows(60))
    rep, skip = judge_run(log, JudgeConfig())
    assert skip is None and rep.verdict.value == "PASS"
    table = write_jsonl(tmp_path / "t.jsonl", [{"a": i} for i in range(20)])
    rep, skip = judge_run(table, JudgeConfig())
    assert rep is None and "data table" in skip["reason"]
    rep, skip = judge_run(tmp_path / "missing.jsonl", JudgeConfig())
    assert rep.error is not None and skip is None


def test_judge_location_gives_one_typed_result_for_every_kind_of_location(tmp_path):
    log = write_jsonl(tmp_path / "run.jsonl", healthy_rows(60))
    got = judge_location(log, JudgeConfig(charts=False))
    assert isinstance(got, Judgement) and got.ignored == []
    assert [r.verdict.value for r in got.reports] == ["PASS"] and got.reports[0].file == str(log)
    table = write_jsonl(tmp_path / "t.jsonl", [{"a": i} for i in range(20)])
    got = judge_location(table, JudgeConfig())
    assert got.reports == [] and [i["file"] for i in got.ignored] == [str(table)]
    got = judge_location(tmp_path / "missing.jsonl", JudgeConfig())
    assert len(got.reports) == 1 and got.reports[0].error is not None and got.ignored == []
    # A log and its siblings: one Judgement too, members that are not runs in ``ignored``.
    got = judge_location((log, table), JudgeConfig(charts=False))
    assert [r.file for r in got.reports] == [str(log)] and [i["file"] for i in got.ignored] == [str(table)]
    # The earlier forms keep their shapes.
    assert judge_runs(table, JudgeConfig())[1]["file"] == str(table)
    assert judge_runs((log, table), JudgeConfig())[1] == got.ignored


@pytest.mark.slow
def test_chart_series_only_where_the_html_report_needs_them(tmp_path):
    root = _tree(tmp_path)
    with_charts, _ = doctor(root, jobs=2)
    without, _ = doctor(root, jobs=2, charts=False)
    assert all(r.charts for r in with_charts if r.error is None)
    assert not any(r.charts for r in without)
    assert [r.to_dict() for r in with_charts] == [r.to_dict() for r in without]  # JSON, text, SARIF: the same
    html = tmp_path / "report.html"
    code, _, _, _ = run_cli("doctor", str(root), "--jobs", "2", "--html", str(html), "--json")
    assert code in (0, 1)
    assert html.read_text().count('<svg class="chart"') >= 12  # the workers still sent the series


def _children(pid: int) -> set[int]:
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            out |= {int(c) for c in task.read_text().split()}
        except OSError:
            pass
    return out


def _catches(pid: int, signum: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next((int(ln.split()[1], 16) for ln in status.splitlines() if ln.startswith("SigCgt:")), 0)
    return bool(mask >> (signum - 1) & 1)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc/<pid>/status and task children")
def test_sigterm_to_doctor_jobs_exits_promptly_with_2_and_no_traceback(tmp_path):
    """SIGTERM at each stage of a ``doctor --jobs 2`` over a tree, many times: its handlers
    just installed, its first worker forked, both workers at work, and the workers'
    results arriving (the report file being written). Every time: exit 2 within the
    deadline, ``trainproof: aborted``, no traceback, no worker left."""
    root = tmp_path / "runs"
    for i in range(24):
        rows = [{"step": s, "loss": 2.0 * 0.999**s + 0.001 * i, "lr": 1e-3} for s in range(1, 4001)]
        write_jsonl(root / f"r{i:02d}" / "metrics.jsonl", rows)
    html = tmp_path / "r.html"
    stages = ("handlers", "one worker", "two workers", "results")
    for it in range(24):
        stage = stages[it % len(stages)]
        # stdout to a file: a pipe nobody reads until the end would stop a doctor that
        # finished before the signal from writing its JSON document.
        with open(tmp_path / "out.json", "wb") as stdout:
            proc = subprocess.Popen(
                [sys.executable, "-m", "trainproof", "doctor", str(root), "--jobs", "2", "--json", "--html", str(html)],
                stdout=stdout,
                stderr=subprocess.PIPE,
            )
        deadline = time.monotonic() + 90
        kids: set[int] = set()
        seen_kids: set[int] = set()
        while proc.poll() is None and time.monotonic() < deadline:
            kids = _children(proc.pid)
            seen_kids |= kids
            if stage == "handlers" and _catches(proc.pid, signal.SIGTERM):
                break
            if stage == "one worker" and kids:
                break
            if stage == "two workers" and len(kids) >= 2:
                break
            # a worker's first results are back once the parent's progress reaches the runs
            if stage == "results" and len(kids) >= 2 and any(_done_one(k) for k in kids):
                break
            time.sleep(0.005)
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            # A worker left behind holds the stderr pipe open, so a wait for its end with
            # no deadline would hang the suite instead of failing this test: end them all.
            left = [k for k in seen_kids | kids if _alive(k)]
            for pid in (proc.pid, *left):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.communicate(timeout=30)
            pytest.fail(
                f"doctor --jobs 2 did not finish within 60 s of SIGTERM ({stage}, try {it}); workers left: {left}"
            )
        text = err.decode()
        if proc.returncode == 0:
            continue  # it had finished before the signal came: nothing to stop
        assert proc.returncode == 2, (stage, it, text)
        assert "Traceback" not in text and "Exception ignored" not in text, (stage, it, text)
        assert "trainproof: aborted" in text, (stage, it, text)
        assert not [k for k in seen_kids | kids if _alive(k)], (stage, it)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a worker dies with its parent through Linux's prctl")
def test_workers_die_with_a_doctor_killed_outright(tmp_path):
    """SIGKILL gives ``doctor`` no chance to end its workers: each worker asked the kernel
    to end it with its parent, so none is left once the parent is gone."""
    root = tmp_path / "runs"
    for i in range(24):
        rows = [{"step": s, "loss": 2.0 * 0.999**s + 0.001 * i, "lr": 1e-3} for s in range(1, 4001)]
        write_jsonl(root / f"r{i:02d}" / "metrics.jsonl", rows)
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainproof", "doctor", str(root), "--jobs", "2", "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    kids: set[int] = set()
    deadline = time.monotonic() + 90
    while proc.poll() is None and len(kids) < 2 and time.monotonic() < deadline:
        kids |= _children(proc.pid)
        time.sleep(0.005)
    if proc.poll() is not None:
        pytest.skip("doctor finished before both workers were seen")
    proc.kill()
    proc.wait(30)
    deadline = time.monotonic() + 60
    while any(_alive(k) for k in kids) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [k for k in kids if _alive(k)]
    for k in left:
        with contextlib.suppress(OSError):
            os.kill(k, signal.SIGKILL)
    assert len(kids) >= 2 and not left, left


def _done_one(pid: int) -> bool:
    """Whether worker ``pid`` has used some CPU time (it is judging, or has judged, a run)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return int(fields[11]) + int(fields[12]) > 5  # utime + stime, in clock ticks


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False
