"""TP-BLOWUP-ENDS-HIGH (a FAIL): a loss that blew up from its first point by orders of
magnitude and ends above where it started. Generated broken runs (an lr far too high from
the first step: a chaotic stretch of losses 1e3-1e19 times the first, scattered back to the
run's level now and then, that settles 2-8x above the first loss) over lengths, noise levels
and blow-up sizes, and the healthy shapes nearest to them: a blow-up the run recovers from to
its start or below, a smaller hump, a running average started at zero over a loss that falls
a thousandfold, a running sum that resets each epoch, an end within its own noise of the
first loss, a loss whose logged objective weight ramped up."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import run_of

from trainproof.findings import Level
from trainproof.rules.engine import judge_runlog

RULE = "TP-BLOWUP-ENDS-HIGH"


def blown(n: int, sigma: float, seed: int, orders: float, width: float, end_ratio: float) -> np.ndarray:
    """First loss ``first``; then, over ``width`` of the run, losses 10^(orders/2)..10^orders
    times it with a third of them back at the run's level; then the run's level,
    ``end_ratio`` x the first loss, under log-normal noise ``sigma``."""
    rng = np.random.default_rng(seed)
    first = rng.uniform(0.5, 8.0)
    loss = first * end_ratio * np.exp(sigma * rng.standard_normal(n))
    stop = max(4, int(width * n))
    blow = first * 10 ** rng.uniform(orders / 2, orders, stop - 1)
    back = rng.random(stop - 1) < 1 / 3
    loss[1:stop] = np.where(back, loss[1:stop], blow)
    loss[0] = first
    return loss


def fail_ids(rep) -> set[str]:
    return {f.id for f in rep.findings if f.level is Level.FAIL}


@pytest.mark.parametrize("n", [60, 300, 3000])
@pytest.mark.parametrize("orders,width", [(8.0, 0.15), (10.0, 0.3), (19.0, 0.6), (12.0, 0.2)])
def test_a_blowup_that_ends_above_its_start_fails(n, orders, width):
    judged = 0
    for seed in range(6):
        sigma, end_ratio = (0.02, 0.15, 0.4)[seed % 3], (2.0, 4.0, 8.0)[seed % 3]
        loss = blown(n, sigma, seed, orders, width, end_ratio)
        if np.count_nonzero(loss > 3 * max(loss[0], float(np.median(loss[-max(3, n // 10) :])))) < 5:
            continue  # fewer than 5 points of blow-up (a short run's tenth): not enough evidence
        judged += 1
        rep = judge_runlog(run_of(loss=loss, lr=np.full(n, 30.0)))
        assert rep.verdict is Level.FAIL, (n, orders, width, seed, rep.ids())
        f = [f for f in rep.findings if f.id == RULE]
        if not f:  # a level held above the best, or blow-ups that recur late: those rules' FAIL
            assert fail_ids(rep) & {"TP-DIVERGE", "TP-LOSS-BLOWUPS"}, (n, orders, width, seed, rep.ids())
            continue
        assert f[0].data["first"] == pytest.approx(loss[0])
        assert f[0].data["level"] >= 1.5 * loss[0] and f[0].data["peak"] >= 1e3 * loss[0]
    assert judged >= 3


@pytest.mark.parametrize("n", [300, 3000, 20000])
@pytest.mark.parametrize("points", [3, 6])
def test_a_blowup_of_a_few_steps_that_leaves_the_model_worse_fails(n, points):
    # SGD at lr 50: 1.40 -> 8.7e24 in six steps, then a dead model at 13-22 for the rest
    # (helper 93); a block median of 5% of the run never sees so short a blow-up
    for seed in range(4):
        rng = np.random.default_rng(seed)
        sigma, end_ratio = (0.05, 0.3)[seed % 2], (5.0, 12.0)[seed % 2]
        loss = 1.4 * end_ratio * np.exp(sigma * rng.standard_normal(n))
        loss[0] = 1.4
        loss[1 : 1 + points] = 1.4 * 10 ** rng.uniform(6, 24, points)
        rep = judge_runlog(run_of(loss=loss))
        assert rep.verdict is Level.FAIL and fail_ids(rep) & {RULE, "TP-DIVERGE"}, (n, points, seed, rep.ids())


def test_two_blown_points_are_no_blowup_here():
    # under blowup_points losses above the bar: a logging glitch as much as a blow-up
    n = 300
    rng = np.random.default_rng(1)
    loss = 5.0 * np.exp(0.05 * rng.standard_normal(n))
    loss[0], loss[1:3] = 1.0, 1e12
    assert RULE not in judge_runlog(run_of(loss=loss)).ids()


def test_the_new_users_sgd_at_lr_30_fails():
    """The console capture that drew only TP-BLOWUP-NO-GAIN: 1.398 at step 0, 7.2e7 at step
    5, losses to 5.5e19 with some back near 10 until step 180, then 3.2-19.3."""
    loss = [1.3983, 7.2e7, 4.4e15, 1.4e19, 1.9e19, 5.5e19, 8.4e18, 2.4e19, 2.5e18, 1.7e19, 7.0e18, 1.3e18, 4.6e16]
    loss += [1.3e19, 2.3e17, 1.4e18, 2.4e18, 3.5712, 1.6e19, 14.32, 8.52, 13.39, 3.9e18, 12.07, 1.4e18, 1.5e18]
    loss += [9.18, 1.4e17, 11.13, 2.1e18, 8.27, 8.09, 13.18, 8.69, 8.24, 8.05, 1.9e17, 9.55, 9.64, 3.63, 16.48]
    loss += [11.49, 19.35, 9.75, 13.4, 6.2, 12.85, 9.88, 14.98, 8.31, 6.44, 3.2, 5.63, 14.95, 10.91, 10.32, 8.98]
    loss += [9.29, 12.43, 7.73]
    rep = judge_runlog(run_of(loss=loss, lr=[30.0] * len(loss)))
    f = next(f for f in rep.findings if f.id == RULE)
    assert rep.verdict is Level.FAIL and f.data["tail_points"] == 23
    assert 9 < f.data["level"] < 10.5 and "TP-BLOWUP-NO-GAIN" in f.data["implies"]


@pytest.mark.parametrize("n", [40, 300, 3000])
@pytest.mark.parametrize("end_ratio", [1.0, 0.5, 0.1])
def test_a_blowup_the_run_recovers_from_to_its_start_or_below_is_no_fail(n, end_ratio):
    for seed in range(6):
        loss = blown(n, (0.02, 0.15, 0.4)[seed % 3], seed, 10.0, 0.2, end_ratio)
        rep = judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-3)))
        assert RULE in rep.ran and RULE not in rep.ids(), (n, end_ratio, seed, rep.ids())


@pytest.mark.parametrize("n", [40, 300, 3000])
def test_a_hump_under_a_thousandfold_is_no_more_than_a_warning_here(n):
    for seed in range(6):
        loss = blown(n, 0.05, seed, 2.5, 0.2, 4.0)  # 18-300x the first loss
        assert RULE not in judge_runlog(run_of(loss=loss)).ids(), (n, seed)


@pytest.mark.parametrize("sigma", [0.5, 0.8])
def test_an_end_within_its_own_noise_of_the_first_loss_is_no_fail(sigma):
    # a very noisy level 2x the first loss: ln 2 = 0.69 nats, under 3 sigmas of its noise
    for seed in range(6):
        loss = blown(300, sigma, seed, 10.0, 0.2, 2.0)
        assert RULE not in judge_runlog(run_of(loss=loss)).ids(), (sigma, seed)


@pytest.mark.parametrize("b", [0.99, 0.999])
def test_a_running_average_started_at_zero_over_a_falling_loss_is_no_fail(b):
    # logged every step from step 1: the first log is (1 - b) x the loss, the average fills
    # up to the untrained level and then follows a loss that falls a thousandfold
    for seed in range(4):
        rng = np.random.default_rng(seed)
        n = 5000
        raw = 100.0 * 1e-3 ** (np.arange(n) / n) * np.exp(0.3 * rng.standard_normal(n))
        avg, r = np.empty(n), 0.0
        for i, x in enumerate(raw):
            r = b * r + (1 - b) * x
            avg[i] = r
        rep = judge_runlog(run_of(loss=avg))
        assert not fail_ids(rep), (b, seed, rep.ids())


def test_a_running_sum_that_resets_each_epoch_is_no_fail():
    # total += loss, printed every 10 batches and reset each epoch of 2000 batches, ending mid-epoch
    rng = np.random.default_rng(0)
    n_batches = 2000 * 5 + 700
    raw = (0.3 + 2.0 * np.exp(-np.arange(n_batches) / 3000)) * np.exp(0.1 * rng.standard_normal(n_batches))
    printed = []
    for i in range(0, n_batches, 10):
        start = (i // 2000) * 2000
        printed.append(float(raw[start : i + 1].sum()))
    rep = judge_runlog(run_of(loss=printed))
    assert RULE in rep.ran and RULE not in rep.ids(), rep.ids()


def test_a_loss_whose_logged_objective_weight_ramped_up_is_not_read():
    # a KL weight ramped 1e-4 -> 1 from the first step: the loss a thousandfold above its
    # first log measures another objective
    n = 300
    rng = np.random.default_rng(3)
    beta = np.minimum(1.0, 1e-4 * 10 ** (np.arange(n) / 30))
    loss = 0.2 + beta * 5e3 * np.exp(-np.arange(n) / 20) + 2.0 * np.minimum(1, np.arange(n) / 100)
    loss = loss * np.exp(0.05 * rng.standard_normal(n))
    rep = judge_runlog(run_of(loss=loss, kl_weight=beta))
    assert RULE not in rep.ids(), rep.ids()
