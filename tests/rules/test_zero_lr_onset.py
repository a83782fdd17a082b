"""TP-ZERO-LR-ONSET (a FAIL): a schedule that ended at zero (or effectively zero) with more
than half of the run to go, the loss stopped with it. Generated schedules sized for 4-45% of
the run (exact 0 and an exponential decay to 1e-12), over lengths and noise levels; and the
healthy and ambiguous shapes nearest to it: a cosine to zero at the end, a
warm-up-stable-decay schedule whose decay is the last 20%, a schedule that ended at 60%
(TP-LR-SCHEDULE-ENDED-EARLY's WARN), a loss that keeps falling under a logged rate of zero,
a rate that holds a small floor."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import run_of

from trainproof.findings import Level
from trainproof.rules.engine import judge_runlog

RULE = "TP-ZERO-LR-ONSET"


def _run(n, sigma, seed, ends_at, tail="zero", learns_after=False, floor=0.0):
    """A warm-up + cosine schedule sized for ``ends_at`` of the run (peak 5e-4); after it the
    rate is 0 (``zero``) or decays from 1e-7 by half a log to 1e-12 (``tiny``), or holds
    ``floor``. The
    loss falls in proportion to the rate spent, then holds (``learns_after``: falls on)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    u = np.clip(t / ends_at, 0, 1)
    lr = 5e-4 * np.minimum(1, u / 0.1) * 0.5 * (1 + np.cos(np.pi * u))
    lr = np.maximum(lr, floor)
    done = t >= ends_at
    if tail == "tiny":
        lr = np.where(done, np.maximum(1e-12, 1e-7 * 0.5 ** np.maximum(0, np.arange(n) - done.argmax())), lr)
    else:
        lr = np.where(done & (floor == 0), 0.0, lr)
    spent = np.cumsum(lr) / max(np.sum(lr), 1e-300)
    loss = 0.8 + 2.0 * np.exp(-4 * spent)
    if learns_after:
        loss = loss * np.where(done, 1 - 0.4 * (t - ends_at) / (1 - ends_at), 1)
    return {"loss": loss * np.exp(sigma * rng.standard_normal(n)), "lr": lr}


@pytest.mark.parametrize("n", [40, 300, 3000])
@pytest.mark.parametrize("ends_at", [0.04, 0.2, 0.45])
@pytest.mark.parametrize("tail", ["zero", "tiny"])
def test_a_schedule_that_ended_with_most_of_the_run_to_go_fails(n, ends_at, tail):
    if ends_at * n < 5:
        pytest.skip("a schedule of fewer than 5 logs is no schedule (TP-ZERO-LR-PARTIAL's)")
    for seed in range(3):
        rep = judge_runlog(run_of(**_run(n, (0.005, 0.02, 0.05)[seed], seed, ends_at, tail)))
        f = {x.id: x for x in rep.findings}
        assert RULE in f and rep.verdict is Level.FAIL, (n, ends_at, tail, seed, rep.ids())
        assert f[RULE].data["share"] > 0.5


@pytest.mark.parametrize("n", [40, 300, 3000])
def test_the_shapes_nearest_to_it_do_not_fail(n):
    for seed in range(3):
        sigma = (0.005, 0.02, 0.05)[seed]
        # a cosine to zero at the end, and a schedule whose decay ends at 95%
        for ends_at in (1.0, 0.95):
            rep = judge_runlog(run_of(**_run(n, sigma, seed, ends_at)))
            assert RULE not in rep.ids() and rep.verdict is not Level.FAIL, (n, ends_at, seed, rep.ids())
        # ended at 60%: 40% of the run wasted, TP-LR-SCHEDULE-ENDED-EARLY's WARN alone
        rep = judge_runlog(run_of(**_run(n, sigma, seed, 0.6)))
        assert RULE not in rep.ids(), (n, seed, rep.ids())
        assert "TP-LR-SCHEDULE-ENDED-EARLY" in rep.ids() or n < 100, (n, seed, rep.ids())
        # the loss falls on by 40% under a logged rate of zero: the log's rate is not the one applied
        rep = judge_runlog(run_of(**_run(n, sigma, seed, 0.2, learns_after=True)))
        assert RULE not in rep.ids(), (n, seed, rep.ids())
        # a floor of 1e-5 is a rate that trains
        rep = judge_runlog(run_of(**_run(n, sigma, seed, 0.2, floor=1e-5)))
        assert RULE not in rep.ids(), (n, seed, rep.ids())


@pytest.mark.parametrize("n", [60, 300, 3000])
def test_a_reviewers_healthy_zero_stretches_do_not_fail(n):
    t = np.arange(n) / n
    for seed in range(3):
        rng = np.random.default_rng(seed)
        noise = np.exp(0.02 * rng.standard_normal(n))
        base = _run(n, 0.02, seed, 0.2)
        # a second stage trains the head under its own rate while the backbone's rate is 0
        head = np.where(t >= 0.2, 1e-4, 0.0)
        rep = judge_runlog(run_of(**base, lr_head=head))
        assert RULE not in rep.ids(), (n, seed, rep.ids())
        # a rate set to 0 from its working value (a phase the log does not name)
        lr = np.where(t < 0.3, 5e-4, 0.0)
        loss = (0.8 + 2.0 * np.exp(-10 * np.minimum(t, 0.3))) * noise
        rep = judge_runlog(run_of(loss=loss, lr=lr))
        assert RULE not in rep.ids(), (n, seed, rep.ids())
        # ReduceLROnPlateau: held rates cut 10x after the loss converged, down to 1e-9
        lr = 1e-3 * 0.1 ** np.minimum(6, np.floor(t / 0.06))
        loss = (0.5 + 2.0 * np.exp(-40 * t)) * noise
        rep = judge_runlog(run_of(loss=loss, lr=lr))
        assert RULE not in rep.ids(), (n, seed, rep.ids())
