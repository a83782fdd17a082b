"""TP-CHANCE-LEVEL at the shortest length the shape rules judge (``min_trend_points``, 8
points: an 8-epoch Keras or fastai run), on generated epoch-level runs: a guesser at ln k
with its accuracy at 1/k FAILs at 8 points as at 9 and more, and an 8-epoch run that learns
from ln k is not read at chance."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _helpers import run_of

from trainproof.rules.engine import judge_runlog


def ids(report) -> set[str]:
    return {f.id for f in report.findings}


@pytest.mark.parametrize("k", [2, 3, 4, 7, 10])
@pytest.mark.parametrize("n", [8, 9, 12])
@pytest.mark.parametrize("seed", range(3))
def test_a_short_epoch_level_guesser_fails(k, n, seed):
    rng = np.random.default_rng(seed * 100 + n)
    noise = 0.004 * (1 + seed)
    loss = math.log(k) * np.exp(noise * rng.standard_normal(n))
    val_loss = math.log(k) * np.exp(noise * rng.standard_normal(n))
    acc = np.clip(1 / k + 0.01 * rng.standard_normal(n), 0, 1)
    run = run_of(loss=loss, eval_loss=val_loss, accuracy=acc, val_accuracy=acc)
    assert "TP-CHANCE-LEVEL" in ids(judge_runlog(run))


@pytest.mark.parametrize("k", [2, 4, 10])
@pytest.mark.parametrize("noise", [0.01, 0.05])
@pytest.mark.parametrize("seed", range(3))
def test_a_short_run_that_learns_from_ln_k_is_not_at_chance(k, noise, seed):
    n = 8
    rng = np.random.default_rng(seed)
    floor = 0.3 * math.log(k)
    loss = (floor + (math.log(k) - floor) * np.exp(-np.arange(n) / 2.5)) * np.exp(noise * rng.standard_normal(n))
    acc = np.linspace(1 / k, 0.8, n)
    run = run_of(loss=loss, accuracy=acc)
    assert not ids(judge_runlog(run)) & {"TP-CHANCE-LEVEL", "TP-NEAR-CHANCE"}


# --- TP-LOSS-FROZEN and a loss drifting under its printed precision -------------------


@pytest.mark.parametrize("decimals", [3, 4])
@pytest.mark.parametrize("n", [40, 200])
def test_a_running_average_creeping_under_its_printed_precision_is_not_frozen(decimals, n):
    # a running average over a long epoch, printed at a few decimals: it creeps down by one
    # printed step now and then, then sits on one printed value while it still moves
    step = 10.0**-decimals
    t = np.arange(n)
    avg = 1.1 - 12 * step * (1 - np.exp(-t / (n / 10)))
    loss = np.round(avg, decimals)
    assert np.all(loss[-max(10, n // 4) :] == loss[-1])  # the premise: a repeated last value
    assert "TP-LOSS-FROZEN" not in ids(judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-4))))


@pytest.mark.parametrize("decimals", [3, 4])
@pytest.mark.parametrize("n", [40, 200])
def test_a_noisy_loss_printed_coarsely_that_then_repeats_one_value_is_frozen(decimals, n):
    rng = np.random.default_rng(n)
    loss = np.round(2.0 * np.exp(0.05 * rng.standard_normal(n)), decimals)
    loss[n // 2 :] = loss[n // 2]
    assert "TP-LOSS-FROZEN" in ids(judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-4))))


# --- a band too wide to name k ----------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_a_noisy_eval_loss_near_ln_k_names_no_level_without_an_accuracy(seed):
    # 10 evaluations at 30% noise around 1.1: their blocks' own 99% band (~35%) holds ln 2
    # and ln 4 as well as ln 3, so the loss alone names no class count
    rng = np.random.default_rng(seed)
    n = 10
    ev = 1.1 * np.exp(0.3 * rng.standard_normal(n))
    tr = np.geomspace(2.0, 0.2, n)
    report = judge_runlog(run_of(loss=tr, eval_loss=ev))
    assert not ids(report) & {"TP-CHANCE-LEVEL", "TP-NEAR-CHANCE"}


@pytest.mark.parametrize("k", [2, 3, 4])
@pytest.mark.parametrize("noise", [0.005, 0.02])
def test_a_quiet_loss_at_ln_k_is_still_read_at_its_level(k, noise):
    rng = np.random.default_rng(k)
    n = 300
    loss = math.log(k) * np.exp(noise * rng.standard_normal(n))
    assert ids(judge_runlog(run_of(loss=loss))) & {"TP-CHANCE-LEVEL", "TP-NEAR-CHANCE"}


def test_a_moving_average_that_climbs_into_a_frozen_value_is_frozen():
    # a model frozen on a cached batch: the printed EMA glides up into its loss, then repeats
    rng = np.random.default_rng(0)
    n = 200
    noisy = 1.38 * np.exp(0.02 * rng.standard_normal(120))
    ema = 1.386 + (1.5 - 1.386) * (1 - 0.9 ** np.arange(1, n - 120 + 1))
    loss = np.round(np.r_[noisy, ema], 3)
    assert np.all(loss[-20:] == 1.5)
    assert "TP-LOSS-FROZEN" in ids(judge_runlog(run_of(loss=loss, lr=np.full(n, 3e-4))))
