"""TP-OVERFIT's noise gate: an eval loss must rise from its minimum by more than
``overfit_noise_z`` of its own noise units. Generated runs: a train loss that falls
tenfold, an eval loss every 10 steps that is flat (healthy: nothing rises) or rises
linearly over the second half (overfitting), with relative noise, 20 seeds each."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from trainproof.rules.engine import judge_runlog
from trainproof.rules.thresholds import DEFAULT
from trainproof.runlog import Record, build_runlog

SEEDS = range(20)


def run(n_eval: int, noise: float, rise: float, seed: int, per: int = 10):
    """A run of ``n_eval * per`` steps: the train loss 0.55 -> 0.05 with 3% noise at every
    step, the eval loss at 0.046 every ``per`` steps, multiplied by ``rise`` at the end
    (linearly from the run's middle on), with ``noise`` relative noise."""
    rng = np.random.default_rng(seed)
    steps = n_eval * per
    recs = []
    for s in range(1, steps + 1):
        tr = 0.5 * np.exp(-s / (steps / 3)) + 0.05
        d = {"loss": float(tr * np.exp(0.03 * rng.standard_normal()))}
        if s % per == 0:
            u = (s // per - 1) / (n_eval - 1)
            level = 0.046 * (1 + (rise - 1) * max(0.0, (u - 0.5) / 0.5))
            d["eval_loss"] = float(level * np.exp(noise * rng.standard_normal()))
        recs.append(Record(float(s), d, s))
    return build_runlog(recs, "x.jsonl", "jsonl")


def warned(n_eval, noise, rise, th=DEFAULT) -> int:
    return sum(
        "TP-OVERFIT" in {f.id for f in judge_runlog(run(n_eval, noise, rise, seed), th).findings} for seed in SEEDS
    )


@pytest.mark.parametrize("n_eval", [12, 40])
def test_a_flat_noisy_eval_loss_warns_less_with_the_gate(n_eval):
    # at 15% noise the minimum of 40 evaluations sits ~2.3 noise units under the level:
    # without the gate most of these flat runs warned
    gated = warned(n_eval, 0.15, 1.0)
    ungated = warned(
        n_eval, 0.15, 1.0, dataclasses.replace(DEFAULT, overfit_noise_z=0.0, overfit_min_shift_margin=-10.0)
    )
    assert gated < ungated and gated <= len(SEEDS) // 2, (gated, ungated)


@pytest.mark.parametrize("n_eval", [8, 12, 40])
@pytest.mark.parametrize("noise,rise", [(0.02, 1.3), (0.07, 1.6), (0.07, 2.0)])
def test_a_real_rise_still_warns(n_eval, noise, rise):
    assert warned(n_eval, noise, rise) >= len(SEEDS) - 1


def test_a_quiet_flat_eval_loss_seldom_warns():
    assert warned(12, 0.02, 1.0) <= 1


@pytest.mark.parametrize("n_eval", [300, 1000])
@pytest.mark.parametrize("noise", [0.05, 0.12])
def test_a_long_flat_eval_loss_warns_no_more_often_than_a_short_one(n_eval, noise):
    # the lowest of 1,000 evaluations sits 3.2 noise units under their level: a fixed gate
    # of 2 warned on most long flat runs (a converged regression over 3,000 epochs); the
    # gate that grows with the expected shift keeps the rate of 10-20 evaluations
    long_flat = warned(n_eval, noise, 1.0, th=DEFAULT)
    fixed = warned(n_eval, noise, 1.0, th=dataclasses.replace(DEFAULT, overfit_min_shift_margin=-10.0))
    assert long_flat <= len(SEEDS) * 0.35 and long_flat <= fixed, (long_flat, fixed)


@pytest.mark.parametrize("n_eval", [300, 1000])
@pytest.mark.parametrize("noise,rise", [(0.05, 1.3), (0.12, 1.6)])
def test_a_real_rise_over_many_evaluations_still_warns(n_eval, noise, rise):
    assert warned(n_eval, noise, rise) >= len(SEEDS) - 1
