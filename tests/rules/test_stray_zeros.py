"""A few exact zeros among positive losses (batches whose every label is masked, a
logger writing a NaN as 0) are left out of the judging with a note, so that the rules on
ratios of the loss's levels judge the run instead of skipping it; zeros from
``zero_mixed_share`` of the points on, or at the end, stay the zero-loss rules'."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import run_of

from trainproof.rules.engine import judge_runlog


def _ids(rep) -> set[str]:
    return {f.id for f in rep.findings}


def _with_zeros(loss: np.ndarray, at) -> np.ndarray:
    out = loss.copy()
    out[list(at)] = 0.0
    return out


def _learning(n, seed=0):
    rng = np.random.default_rng(seed)
    return (0.4 + 2.0 * np.exp(-np.arange(n) / (n / 5))) * np.exp(0.03 * rng.standard_normal(n))


@pytest.mark.parametrize("n,zeros", [(200, (9, 13, 76, 82, 84)), (4800, (4332,)), (60, (20,))])
def test_a_few_masked_batches_leave_a_healthy_run_judged(n, zeros):
    # A helper's HF run with 5 fully masked batches of 200 went NOT-CHECKED (exit 2).
    rep = judge_runlog(run_of(loss=_with_zeros(_learning(n), zeros), lr=np.full(n, 1e-3)))
    assert rep.verdict.value == "PASS", rep.ids()
    assert any(f"{len(zeros)} exact 0.0 value(s)" in note for note in rep.notes)


def test_a_diverging_run_with_stray_zeros_still_fails():
    n = 300
    t = np.arange(n)
    loss = np.where(t < 150, _learning(n)[:n], 0.5 * np.exp((t - 150) / 40))
    rep = judge_runlog(run_of(loss=_with_zeros(loss, (30, 90, 200)), lr=np.full(n, 1e-3)))
    assert "TP-DIVERGE" in _ids(rep) and rep.verdict.value == "FAIL", rep.ids()


def test_zeros_at_the_end_or_from_a_tenth_of_the_points_stay_the_zero_rules():
    n = 200
    onset = _learning(n)
    onset[-20:] = 0.0  # a run that ends on zeros: TP-ZERO-LOSS-ONSET's
    assert "TP-ZERO-LOSS-ONSET" in _ids(judge_runlog(run_of(loss=onset, lr=np.full(n, 1e-3))))
    rng = np.random.default_rng(3)
    mixed = _with_zeros(1.8 * np.exp(0.05 * rng.standard_normal(n)), range(5, n - 1, 8))  # 12% of the points
    rep = judge_runlog(run_of(loss=mixed, lr=np.full(n, 1e-3)))
    assert "TP-ZERO-LOSS-MIXED" in _ids(rep) and not any("left out of the judging" in x for x in rep.notes)


def test_a_loss_with_negative_values_is_not_touched():
    n = 200
    loss = _with_zeros(_learning(n), (50,))
    loss[60] = -0.2
    rep = judge_runlog(run_of(loss=loss))
    assert not any("left out of the judging" in x for x in rep.notes)
