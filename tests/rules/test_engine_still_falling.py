"""A run still training whose loss still falls is not judged as making no progress: the
claims of no progress (TP-DEAD-RUN, TP-LOSS-STALLED, TP-NEAR-CHANCE, TP-CHANCE-LEVEL) are
skipped as ``still_falling`` while the fall seen so far, held to the scheduled end, would
improve the loss by more than ``dead_min_improvement`` over the run
(:func:`trainproof.rules.engine.still_falling`). Generated curves, judged as the live
monitor judges them (:class:`Guardian`), positive and negative."""

from __future__ import annotations

import math

import numpy as np
import pytest

from trainproof.live.guardian import Guardian
from trainproof.rules.engine import still_falling
from trainproof.rules.thresholds import DEFAULT
from trainproof.runlog import Series

CLAIMS = ("TP-DEAD-RUN", "TP-LOSS-STALLED", "TP-NEAR-CHANCE", "TP-CHANCE-LEVEL")


def _live(values, max_steps: int):
    g = Guardian(meta={"max_steps": max_steps})
    for i, v in enumerate(values):
        g.add(float(i), {"loss": float(v)})
    return g.judge()


def _curve(level: float, total_fall: float, schedule: int, seen: int, rel: float, seed: int) -> np.ndarray:
    """A loss falling linearly by ``total_fall`` (a share) over ``schedule`` steps, the
    first ``seen`` of them, with relative noise ``rel``."""
    rng = np.random.default_rng(seed)
    t = np.arange(seen) / schedule
    return level * (1 - total_fall * t) * np.exp(rel * rng.standard_normal(seen))


SLOW = [(seen, rel, seed) for seen in (100, 150, 220) for rel in (0.003, 0.01) for seed in range(2)]


@pytest.mark.parametrize("seen,rel,seed", SLOW)
def test_a_slow_learner_near_chance_partway_through_is_not_judged_yet(seen, rel, seed):
    # 10 classes, the loss falls 10% over a 300-step schedule: partway through it still sits
    # near ln 10, but it is leaving the level at a pace that takes it well out by the end.
    v = _curve(math.log(10), 0.10, 300, seen, rel, seed)
    rep = _live(v, 300)
    assert not set(CLAIMS) & set(rep.ids()), rep.ids()
    assert rep.skipped["TP-NEAR-CHANCE"].reason == "still_falling", rep.skipped["TP-NEAR-CHANCE"]
    assert "over the run by its scheduled end (step 300)" in rep.skipped["TP-NEAR-CHANCE"].detail


@pytest.mark.parametrize("seed", range(3))
def test_a_drift_of_three_percent_over_the_whole_schedule_is_still_judged(seed):
    # The same pace leaves ln 4 by only 3% over the whole run: the claim is made live.
    v = _curve(math.log(4), 0.03, 300, 150, 0.003, seed)
    rep = _live(v, 300)
    assert "TP-NEAR-CHANCE" in rep.ids(), (rep.ids(), rep.skipped.get("TP-NEAR-CHANCE"))


@pytest.mark.parametrize("seed", range(3))
def test_a_flat_loss_at_chance_is_still_judged(seed):
    # No fall: the claims of no progress are made (a WARN each: the log names no cause
    # that would make the pinned loss a dead run).
    v = _curve(math.log(10), 0.0, 300, 150, 0.003, seed)
    rep = _live(v, 300)
    assert all(rep.skipped[c].reason != "still_falling" for c in CLAIMS if c in rep.skipped)
    assert {"TP-NEAR-CHANCE", "TP-LOSS-STALLED"} <= set(rep.ids()) and "TP-DEAD-RUN" not in rep.ids()


def test_the_same_slow_learner_as_a_finished_log_is_judged_on_what_it_did():
    # Offline a log is what the run did, with no schedule left to wait for: the first 80
    # points of the slow learner sit within the rule's band of ln 10, and TP-NEAR-CHANCE
    # warns.
    from trainproof.rules.engine import judge_runlog
    from trainproof.runlog import Record, build_runlog

    v = _curve(math.log(10), 0.10, 300, 80, 0.003, 0)
    run = build_runlog([Record(float(i), {"loss": float(x)}, i + 1) for i, x in enumerate(v)], "x.jsonl", "jsonl")
    rep = judge_runlog(run)
    assert "TP-NEAR-CHANCE" in rep.ids(), rep.ids()
    assert all(s.reason != "still_falling" for s in rep.skipped.values())


def _series(v) -> Series:
    v = np.asarray(v, dtype=float)
    return Series("loss", "loss", np.arange(v.size, dtype=float), v, np.arange(1, v.size + 1))


def test_still_falling_needs_a_scheduled_end_and_a_fall_beyond_the_noise():
    v = _curve(2.0, 0.10, 300, 120, 0.003, 0)
    got = still_falling(_series(v), 300.0, 0.003, DEFAULT)
    assert got is not None
    fall, projected, end = got
    assert 0.02 < fall < 0.04 and 0.07 < projected < 0.13 and end == 300.0
    assert still_falling(_series(v), None, 0.003, DEFAULT) is None  # no schedule declared
    assert still_falling(_series(v), 119.0, 0.003, DEFAULT) is None  # the schedule is over
    # The same fall inside noise ten times larger is not a fall.
    assert still_falling(_series(v), 300.0, 0.05, DEFAULT) is None
