"""TP-BLOWUP-NO-GAIN (a WARN): a loss that blew up from its start and came back no lower
than it started. Generated broken runs (an lr far too high from the first step: a hump of 3-100x
the first loss over 3-30% of the run, ending at or just above the first loss) and the
healthy shapes nearest to them (an early warm-up bump that the run then learns past, a
fine-tune at its floor with batch spikes 3-5x, a first loss below the rest, a long
plateau at the first level), over lengths and noise levels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _helpers import run_of

from trainproof.findings import Level
from trainproof.rules.engine import judge_runlog
from trainproof.rules.loss import _average_filling_up
from trainproof.rules.thresholds import DEFAULT

RULE = "TP-BLOWUP-NO-GAIN"


def _noise(rng, n, sigma):
    return np.exp(sigma * rng.standard_normal(n))


def broken(n: int, sigma: float, seed: int, height: float, width: float, end_ratio: float) -> np.ndarray:
    """First loss ``first``, then a blow-up: the loss grows geometrically (x1.6 a log, the
    convex climb of an lr far too high) to ``height`` x it and decays back over about
    ``width`` of the run to ``end_ratio`` x the first loss (a model back at its guess)."""
    rng = np.random.default_rng(seed)
    first = rng.uniform(0.6, 8.0)
    k = np.arange(n, dtype=float)
    rise = int(math.ceil(math.log(height) / math.log(1.6)))
    tau = max(2.0, width * n / math.log(height / 2))
    level = np.where(k <= rise, np.minimum(1.6 ** np.minimum(k, rise), height), 0.0)
    level = np.where(k > rise, end_ratio + (height - end_ratio) * np.exp(-(k - rise) / tau), level)
    loss = first * level * _noise(rng, n, sigma)
    loss[0] = first
    return loss


@pytest.mark.parametrize("n", [40, 300, 3000])
@pytest.mark.parametrize("height,width", [(4.5, 0.1), (10.0, 0.05), (100.0, 0.03), (6.0, 0.2)])
def test_a_blowup_that_ends_no_lower_than_it_started_warns(n, height, width):
    like_average = 0
    for seed in range(6):
        sigma, end_ratio = (0.02, 0.05, 0.1)[seed % 3], (1.0, 1.04, 1.1)[seed % 3]
        loss = broken(n, sigma, seed, height, width, end_ratio)
        end = float(np.median(loss[-max(3, n // 10) :]))
        if np.count_nonzero(loss > 3 * max(loss[0], end)) < 5:
            continue  # fewer than 5 points above the bar: not enough evidence
        if _average_filling_up(loss, 10.0 * np.arange(1, n + 1), DEFAULT.average_fill_slack) is not None:
            # a climb of a few logs that a running average started at zero could make (logged
            # every 10 steps, it may grow 11x from its first log): not read, by design
            like_average += 1
            continue
        rep = judge_runlog(run_of(loss=loss, lr=np.full(n, 0.5)))
        f = [f for f in rep.findings if f.id == RULE]
        if not f:  # a run that also ends well above its first loss is TP-DIVERGE's, which lists this one
            d = [x for x in rep.findings if x.id == "TP-DIVERGE"]
            assert d and RULE in d[0].data["implies"], (n, height, width, seed, rep.ids())
            continue
        assert f[0].level is Level.WARN and rep.verdict is not Level.PASS, (n, height, width, seed, rep.ids())
    assert like_average <= 2


@pytest.mark.parametrize("n", [40, 300, 3000])
@pytest.mark.parametrize("shape", ["warmup_bump", "floor_spikes", "low_first", "plateau", "healthy_decay"])
def test_the_healthy_shapes_nearest_to_it_do_not_fire(n, shape):
    for seed in range(6):
        rng = np.random.default_rng(seed)
        t = np.arange(n) / n
        sigma = (0.02, 0.05, 0.15)[seed % 3]
        if shape == "warmup_bump":  # a bump to 3x in the first 10%, then learns far below its start
            loss = 2.0 * (1 + 2.0 * np.exp(-(((t - 0.04) / 0.03) ** 2))) * np.exp(-3 * t) + 0.3
        elif shape == "floor_spikes":  # a fine-tune at its floor, 2% of batches 3-5x up
            loss = np.full(n, 0.8)
            loss[rng.random(n) < 0.02] *= rng.uniform(3, 5)
        elif shape == "low_first":  # a first logged loss below the rest (a partial batch)
            loss = np.r_[0.2, 1.0 + 0.5 * np.exp(-3 * t[1:])]
        elif shape == "plateau":  # at its first level all along (TP-LOSS-STALLED's)
            loss = np.full(n, 2.3)
        else:
            loss = 0.5 + 3.0 * np.exp(-4 * t)
        loss = loss * _noise(rng, n, sigma)
        rep = judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-3)))
        assert RULE in rep.ran and RULE not in rep.ids(), (shape, n, seed, rep.ids())


def test_a_blowup_that_the_run_then_learns_past_is_no_fail():
    # the same hump, then the run learns to a quarter of its first loss
    n = 300
    loss = broken(n, 0.05, 1, 10.0, 0.1, 1.0)
    loss[n // 2 :] *= np.linspace(1.0, 0.25, n - n // 2)
    assert RULE not in judge_runlog(run_of(loss=loss)).ids()


def test_a_loss_that_climbed_and_held_is_divergence_not_this():
    n = 300
    t = np.arange(n) / n
    loss = 2.0 * (1 + 4.0 * np.clip((t - 0.1) / 0.1, 0, 1)) * np.exp(0.03 * np.random.default_rng(0).standard_normal(n))
    rep = judge_runlog(run_of(loss=loss))
    assert RULE not in rep.ids() and "TP-DIVERGE" in rep.ids()


def test_the_finding_names_the_first_loss_and_the_end():
    n = 300
    loss = broken(n, 0.02, 4, 10.0, 0.1, 1.04)
    f = next(f for f in judge_runlog(run_of(loss=loss)).findings if f.id == RULE)
    assert f.data["first"] == pytest.approx(loss[0])
    assert f.data["end"] >= loss[0] * 0.95 and f.data["peak"] >= 3 * loss[0]
    assert math.isfinite(f.data["onset_step"])
