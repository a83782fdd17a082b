"""A run stopped in its blow-up, as users attach it: a short log (6-12 points: a Keras run
of a few epochs, the first lines of a run stopped by hand) whose last logs climb an order of
magnitude above anything it held. TP-DIVERGE reads a blow-up from blowup_min_points (three
points before the climb, then blowup_points rising), below the curve's min_trend_points;
every other short log stays unjudged by it. A log that ends on one or two such points is
TP-LOSS-CLIMB's WARN: the log ends before it can tell a spike from a blow-up. Healthy short
logs (noisy, heavy-tailed, a first epoch far above the rest) get neither."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import judge_cols as judge
from conftest import one


def _fall(k: int, rel: float, seed: int, start: float = 0.7) -> np.ndarray:
    """``k`` points of a loss falling from ``start`` toward 0.6x it, ``rel`` lognormal noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(k)
    return start * (0.6 + 0.4 * np.exp(-t / 2.0)) * np.exp(rel * rng.standard_normal(k))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("before", [3, 4, 5, 8])
@pytest.mark.parametrize("climb", [(2.0, 7.0, 30.0), (1.3, 4.5, 18.0, 60.0)])
@pytest.mark.parametrize("rel", [0.02, 0.1])
def test_a_short_log_that_ends_in_a_blow_up_diverged(seed, before, climb, rel):
    v = _fall(before, rel, seed)
    loss = np.r_[v, v[-1] * np.array(climb)]
    f = one(judge(loss=list(loss)), "TP-DIVERGE")
    assert f.data["end_level"] == loss[-1] and f.data["terminal_points"] >= 3
    assert "climbs at each of its last" in f.message


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("n", [5, 6, 7])
def test_a_healthy_short_log_stays_unjudged_by_the_divergence_rules(seed, n):
    # noisy (15%), heavy-tailed, or with a first epoch 10x the rest: never a FAIL, and the
    # report still says that a log this short is not judged
    rng = np.random.default_rng(seed)
    v = _fall(n, 0.15, seed) * np.exp(0.3 * rng.standard_t(2, n) / 4)
    if seed % 3 == 0:
        v[0] *= 10.0
    rep = judge(loss=list(v))
    assert "TP-DIVERGE" not in rep.ids() and "TP-LOSS-CLIMB" not in rep.ids()
    if n >= 6:
        assert rep.skipped["TP-DIVERGE"].reason == "too_few_points"
        assert f"has {n} finite points; needs 8" in rep.skipped["TP-DIVERGE"].detail
    assert "TP-NOT-CHECKED" in rep.ids()


@pytest.mark.parametrize("seed", range(200))
def test_healthy_short_and_medium_logs_end_in_no_blow_up(seed):
    # 6-20 points, 2-15% noise, heavy tails, a fast fall from 3-10x: none ends in a FAIL
    rng = np.random.default_rng(1000 + seed)
    n = int(rng.integers(6, 21))
    rel = float(rng.uniform(0.02, 0.15))
    v = _fall(n, rel, seed, start=float(rng.uniform(0.1, 10.0)))
    v *= np.exp(rel * rng.standard_t(2, n) / 3)
    v[0] *= float(rng.choice([1.0, 3.0, 10.0]))
    rep = judge(loss=list(v))
    assert not [f.id for f in rep.findings if f.level.name == "FAIL"], rep.ids()


@pytest.mark.parametrize("n", [8, 20, 200])
@pytest.mark.parametrize("tail", [(40.0,), (5.0, 60.0)])
@pytest.mark.parametrize("seed", range(3))
def test_one_or_two_last_logs_far_above_the_run_warn_and_do_not_fail(n, tail, seed):
    v = _fall(n - len(tail), 0.05, seed)
    loss = np.r_[v, v[-1] * np.array(tail)]
    rep = judge(loss=list(loss))
    assert "TP-DIVERGE" not in rep.ids()
    f = one(rep, "TP-LOSS-CLIMB")
    assert "the log ends before it tells" in f.message and f.data["end_level"] == loss[-1]


@pytest.mark.parametrize("seed", range(5))
def test_a_last_log_within_the_runs_own_strays_is_no_jump(seed):
    # 5% of batches thrown 20-60x up before: a last one 40x up is one more of them
    rng = np.random.default_rng(seed)
    v = _fall(300, 0.05, seed)
    hit = rng.random(300) < 0.05
    v[hit] *= rng.uniform(20, 60, int(hit.sum()))
    v[-1] = 40.0 * np.median(v[-20:-1])
    rep = judge(loss=list(v))
    assert "TP-DIVERGE" not in rep.ids()
    assert not any("the log ends before it tells" in f.message for f in rep.findings)


@pytest.mark.parametrize("n_before", [3, 5, 36])
@pytest.mark.parametrize(
    ("key", "schedule"),
    [
        ("kl_weight", [0.0, 0.25, 0.5, 0.75, 1.0]),  # a KL term switched on (beta-VAE)
        ("beta", [0.0, 0.25, 0.5, 0.75, 1.0]),
        ("curriculum_stage", [1, 2, 3, 3, 3]),  # a harder stage of the data
    ],
)
def test_a_blow_up_that_a_logged_schedule_explains_is_no_divergence(n_before, key, schedule):
    # the loss is the reconstruction (falling slowly) plus the weighted term: 12x-30x up
    # from a low base in the last logs, the weight or stage logged beside it (a breaker's
    # 7-epoch Keras beta-VAE and 40-log beta ramp FAILed TP-DIVERGE)
    recon = list(0.06 * np.exp(-np.arange(n_before + 4) / 8))
    w = [schedule[0]] * n_before + schedule[1:]
    if key == "curriculum_stage":
        loss = [r * (1 if s == 1 else 12 * s) for r, s in zip(recon, w)]
    else:
        loss = [r + 0.8 * b for r, b in zip(recon, w)]
    rep = judge(loss=loss, **{key: w})
    assert "TP-DIVERGE" not in rep.ids(), rep.ids()


@pytest.mark.parametrize("seed", range(3))
def test_a_short_ramp_from_a_low_base_is_no_blow_up(seed):
    # the same KL ramp over a 7-epoch log with no weight logged: it leaps once, then adds
    # less each log (its last rise on the log scale under half its first); too few points
    # to call it broken (at 8 points and more the curve reading judges it, as before)
    v = list(_fall(3, 0.02, seed, start=0.06)) + [0.281, 0.455, 0.629, 0.808]
    rep = judge(loss=v)
    assert "TP-DIVERGE" not in rep.ids(), rep.ids()


def test_a_short_blow_up_a_logged_weight_explains_leaves_the_log_unjudged():
    # 7 epochs: the rules that would say what the weight explains need a curve (8 points),
    # so the log is not judged rather than passed
    w = [0.0, 0.0, 0.0, 0.5, 2.0, 8.0, 32.0]
    loss = [0.06, 0.05, 0.045, 0.5, 2.0, 8.0, 32.0]
    rep = judge(loss=loss, kl_weight=w)
    assert "TP-DIVERGE" not in rep.ids() and rep.skipped["TP-DIVERGE"].reason == "too_few_points"


@pytest.mark.parametrize("climb", [(15.0, 80.0, 300.0), (40.0, 90.0, 200.0), (8.0, 30.0, 70.0)])
def test_a_short_blow_up_whose_first_leap_is_its_largest_still_fails(climb):
    # a new user's 6-epoch Keras log 2.3 1.2 0.9 15 80 300: each log at least twice the
    # one before, though its first leap is the largest
    rep = judge(loss=[2.3, 1.2, 0.9, *climb])
    assert "TP-DIVERGE" in rep.ids(), rep.ids()
