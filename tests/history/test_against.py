"""A run judged against its experiment's history, in a real store (an SQLite file and a
PostgreSQL server): with the gallery's healthy seeds recorded, its shuffled-label runs are
flagged (after the run and while it trains), and its healthy seeds, restarts and longer
runs of the same task stay silent. The history rules never appear in a report judged
without a history."""

from __future__ import annotations

import glob

import numpy as np
import pytest

from trainproof.api import read_runlog
from trainproof.findings import Level
from trainproof.history.against import envelope, judge_against, record_name, run_trace, trace_of, traces
from trainproof.history.record import Curve, RunRecord, summarize
from trainproof.history.store import open_store
from trainproof.live.guardian import Guardian
from trainproof.rules.engine import judge_runlog
from trainproof.rules.thresholds import DEFAULT

from conftest import REPO, make_run

GALLERY = REPO / "examples" / "gallery"

#: Where each framework's rig writes the log ``doctor`` judges, below a seed's folder.
LOG = {
    "torch": "metrics.jsonl",
    "hf": "trainer_state.json",
    "keras": "training.log",
    "lightning": "tb/version_0/events.out.tfevents.*",
    "coqui": "events.out.tfevents.*",
}
HISTORY_IDS = {"TP-BEHIND-HISTORY", "TP-HISTORY-PASS", "TP-BEHIND-ENVELOPE"}


def log_of(framework: str, config: str, seed: int) -> str:
    [path] = glob.glob(str(GALLERY / framework / config / f"seed{seed}" / LOG[framework]))
    return path


def record_healthy_seeds(location: str, framework: str) -> None:
    with open_store(location) as store:
        for seed in range(3):
            path = log_of(framework, "healthy", seed)
            run = read_runlog(path)
            store.add(summarize(run, judge_runlog(run), experiment=framework, run=f"seed{seed}", source=path))


def judged(location: str, framework: str, config: str, seed: int):
    path = log_of(framework, config, seed)
    run = read_runlog(path)
    with open_store(location) as store:
        siblings = store.runs(framework, limit=DEFAULT.hist_last_runs, healthy_only=True)
    return judge_against(run, judge_runlog(run), siblings, source=path), run


@pytest.mark.slow
@pytest.mark.parametrize("framework", list(LOG))
def test_the_gallery_history_flags_shuffled_labels_and_leaves_healthy_runs_silent(store_location, framework):
    record_healthy_seeds(store_location, framework)
    for seed in range(3):
        rep, _ = judged(store_location, framework, "bad_labels", seed)
        [f] = [f for f in rep.findings if f.id == "TP-BEHIND-HISTORY"]
        assert rep.verdict is Level.WARN and f.level is Level.WARN and f.source == "history"
        assert "Held against: seed2 (#3), seed1 (#2), seed0 (#1)." in f.evidence
        assert rep.meta["history"]["runs"] == ["seed2 (#3)", "seed1 (#2)", "seed0 (#1)"]
    for config in ("cosine_restarts", "converged"):
        for seed in range(3):
            rep, _ = judged(store_location, framework, config, seed)
            assert "TP-BEHIND-HISTORY" not in rep.ids() and "TP-HISTORY-PASS" in rep.ids(), (config, seed)
    # A healthy seed is in the history itself: the two others are too few to judge it.
    rep, _ = judged(store_location, framework, "healthy", 0)
    assert rep.skipped["TP-BEHIND-HISTORY"].reason == "too_few_runs"
    assert not HISTORY_IDS & set(rep.ids()) and rep.verdict is Level.PASS


@pytest.mark.slow
@pytest.mark.parametrize("framework", list(LOG))
def test_the_monitor_warns_while_a_shuffled_label_run_trains_and_not_on_a_restart(tmp_path, framework):
    location = str(tmp_path / "history.db")
    record_healthy_seeds(location, framework)
    with open_store(location) as store:
        siblings = traces(store.runs(framework, healthy_only=True))
    quiet = ["cosine_restarts", "converged", "slow_loader", "terminal_spike", "overfit"]
    quiet += ["fp16_overflow"] if framework not in ("hf", "coqui") else []
    cases = [("bad_labels", True), *((c, False) for c in quiet)]
    for (config, behind), seed in ((case, seed) for case in cases for seed in range(3)):
        run = read_runlog(log_of(framework, config, seed))
        loss = run.series["loss"]
        g = Guardian(siblings=siblings, meta=dict(run.meta))
        found = []
        for i, (s, v) in enumerate(zip(loss.steps, loss.values), start=1):
            g.add(float(s), {"loss": float(v)})
            if i % max(1, loss.steps.size // 10) == 0:
                found += [f for f in g.judge().findings if f.id == "TP-BEHIND-ENVELOPE"]
        assert bool(found) is behind, (config, seed, [f.message for f in found])
        if behind:
            assert found[0].level is Level.WARN and g.chosen_stops() == []
            assert f"at step {int(found[0].step)}" in found[0].message and found[0].data["margin"] > 0


def test_a_report_judged_without_a_history_has_no_history_rule():
    rep = judge_runlog(make_run(loss=np.linspace(2, 1, 40)))
    assert not HISTORY_IDS & (set(rep.ids()) | set(rep.ran) | set(rep.skipped))
    assert "history" not in rep.meta


def _record(name: str, floor: float, rid: int, verdict: str = "PASS", source: str | None = None) -> RunRecord:
    steps = np.arange(1.0, 101.0)
    loss = floor + (2.5 - floor) * np.exp(-steps / 20)
    return RunRecord(
        experiment="exp",
        run=name,
        source=source or f"/runs/{name}",
        verdict=verdict,
        findings=(),
        summary={"max_steps": 100.0},
        curves={"loss": Curve.of(steps, loss)},
        id=rid,
    )


def test_the_run_itself_and_failed_runs_are_no_siblings():
    good = [_record(f"s{i}", 0.3 + 0.01 * i, i) for i in range(1, 4)]
    failed = _record("broken", 2.4, 9, verdict="FAIL")
    me = _record("me", 1.9, 10, source="/runs/me")
    assert [t.name for t in traces([*good, failed, me], exclude="/runs/me")] == ["s1 (#1)", "s2 (#2)", "s3 (#3)"]
    assert record_name(_record("x", 0.3, None)) == "x"  # type: ignore[arg-type]
    t = trace_of(good[0])
    assert t.end == 100.0 and t.steps.size == 100
    run = make_run(loss=list(1.9 + (2.5 - 1.9) * np.exp(-np.arange(1, 101) / 20)))
    rep = judge_against(run, judge_runlog(run), [*good, failed, me], source="/runs/me")
    f = next(f for f in rep.findings if f.id == "TP-BEHIND-HISTORY")
    assert f.data["runs"] == ["s1 (#1)", "s2 (#2)", "s3 (#3)"]
    # Two healthy runs besides a failed one and the run itself: too few.
    rep = judge_against(run, judge_runlog(run), [*good[:2], failed, me], source="/runs/me")
    assert rep.skipped["TP-BEHIND-HISTORY"].reason == "too_few_runs"


def test_the_run_is_levelled_from_a_curve_as_its_record_keeps_it():
    run = make_run(loss=list(np.linspace(3, 1, 1000)))
    t = run_trace(run)
    assert t.steps.size <= 300 and t.end == run.step_range[1]
    assert run_trace(make_run(eval_loss=[1.0, 0.9])) is None


def test_the_envelope_of_the_stored_runs_is_their_band_at_given_steps():
    good = [_record(f"s{i}", 0.3 + 0.01 * i, i) for i in range(1, 4)]
    b = envelope(good, np.array([10.0, 50.0, 100.0]))
    assert b.runs == ("s1 (#1)", "s2 (#2)", "s3 (#3)")
    assert np.all(np.diff(b.median) < 0) and np.all(b.upper > b.median)
    assert envelope(good[:2], np.array([10.0])) is None
