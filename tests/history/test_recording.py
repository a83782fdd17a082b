"""Recording a judged run: nothing without a history, the run's identity as recorded, a
store that cannot be used never costs the verdict, and the live paths record once."""

from __future__ import annotations

import numpy as np
import pytest

from trainproof.history.recording import forget, record
from trainproof.history.store import open_store
from trainproof.live.guardian import Guardian
from trainproof.rules.engine import error_report, judge_runlog

from conftest import REPO, make_run

HEALTHY = REPO / "examples" / "gallery" / "torch" / "healthy"


@pytest.mark.slow
def test_nothing_is_written_without_a_history_nor_for_a_run_that_was_not_judged(tmp_path):
    run = make_run(loss=np.linspace(2, 1, 40))
    rep = judge_runlog(run)
    assert record(run, rep, None) is rep
    err = error_report("x.jsonl", "no such file")
    assert record(run, err, str(tmp_path / "h.db")) is err
    assert not (tmp_path / "h.db").exists()


@pytest.mark.slow
def test_a_recorded_run_keeps_its_experiment_name_source_and_verdict(tmp_path):
    from trainproof.api import read_runlog

    log = HEALTHY / "seed1" / "metrics.jsonl"
    run = read_runlog(log)
    rep = judge_runlog(run)
    where = str(tmp_path / "h.db")
    assert record(run, rep, where).history_error is None
    forget(where)
    with open_store(where, create=False) as st:
        (got,) = st.runs(HEALTHY.as_posix())
    assert (got.run, got.source, got.verdict) == ("seed1/metrics.jsonl", log.as_posix(), rep.verdict.value)
    assert got.summary["points"] == len(run.series["loss"])


def test_a_store_that_cannot_be_used_keeps_the_verdict_and_says_why(tmp_path):
    run = make_run(loss=np.linspace(2, 1, 40))
    rep = judge_runlog(run)
    bad = tmp_path / "h.db"
    bad.write_bytes(b"not a database" * 200)
    got = record(run, rep, str(bad))
    assert got.verdict == rep.verdict and got.findings == rep.findings
    assert got.history_error.startswith(f"history {bad}: not a trainproof history, or corrupt")
    assert got.to_dict()["history_error"] == got.history_error


def test_a_guardian_records_the_ended_run_once_and_again_after_new_records(tmp_path):
    where = str(tmp_path / "h.db")
    g = Guardian(history=where, experiment="live", run_name="run-a")
    for i in range(40):
        g.add(i + 1, {"loss": 2.0 - i / 40})
    assert g.unrecorded
    first = g.record(g.judge(final=True))
    assert first.history_error is None and not g.unrecorded
    assert g.record(g.judge(final=True)) is first  # nothing new: not recorded twice
    g.add(41, {"loss": 1.0})
    g.record(g.judge(final=True))
    forget(where)
    with open_store(where, create=False) as st:
        runs = st.runs("live")
    assert [r.run for r in runs] == ["run-a", "run-a"] and runs[0].summary["points"] == 41
    assert runs[0].source.startswith("live:")


@pytest.mark.slow
def test_the_watcher_records_the_log_it_watched(tmp_path):
    from trainproof.live.watcher import Watcher

    where = str(tmp_path / "h.db")
    w = Watcher(HEALTHY / "seed0" / "metrics.jsonl", history=where, experiment="watched")
    while w.report is None:
        w.poll()
    assert w.record().history_error is None
    forget(where)
    with open_store(where, create=False) as st:
        (got,) = st.runs("watched")
    assert got.source == (HEALTHY / "seed0" / "metrics.jsonl").as_posix()


@pytest.mark.slow
def test_the_python_api_records_a_judged_log(tmp_path):
    import trainproof

    where = str(tmp_path / "h.db")
    rep = trainproof.judge(HEALTHY / "seed2" / "metrics.jsonl", history=where, experiment="api")
    assert rep.verdict.value == "PASS" and rep.history_error is None
    forget(where)
    with open_store(where, create=False) as st:
        assert [r.run for r in st.runs("api")] == ["seed2/metrics.jsonl"]


def test_the_experiment_of_a_log_is_the_same_from_any_folder(tmp_path, monkeypatch):
    """The same log, named from inside its seed folder or from above it, is one experiment;
    a folder far above the project whose name looks like a run's does not name it."""
    from trainproof.history.record import experiment_of

    log = tmp_path / "run1" / "proj" / "sweep" / "seed0" / "train.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text('{"step": 1, "loss": 1.0}\n')
    want = (tmp_path / "run1" / "proj" / "sweep").as_posix()
    assert experiment_of(path=str(log)) == want
    monkeypatch.chdir(log.parent)
    assert experiment_of(path="train.jsonl") == want
    monkeypatch.chdir(tmp_path / "run1")
    assert experiment_of(path="proj/sweep/seed0/train.jsonl") == want
