"""TP-LOSS-STALLED does not compare a loss's start with its end across a change of what
the loss measures (TP-OBJECTIVE-CHANGED).

A run that fits easy data almost to 0, then has harder data mixed in, restarts its train loss
near its first level and learns again while its eval loss improves: TP-OBJECTIVE-CHANGED
says why the climb is no divergence. TP-LOSS-STALLED still compared the first five points
(on the easy data) with the last five (on the mixture) and warned that the loss "ended 20x
higher than it started", though it fell at every epoch after the change (a real Lightning
run, 1.016 -> 0.517 over the ten epochs after it).
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import judge_cols as judge


def ids(rep) -> set[str]:
    return {f.id for f in rep.findings}


def _harder_data_added(epochs: int, switch: float, floor: float, seed: int):
    """Per-epoch train and eval losses: the train loss falls from 1.2 to ``floor`` on easy
    data while the eval loss (on the full mixture) rises; from ``switch`` of the run on the
    mixture restarts the train loss near 1.0, which falls again, and the eval loss drops
    and holds its level."""
    rng = np.random.default_rng(seed)
    at = int(epochs * switch)
    t = np.arange(epochs)
    train = np.where(
        t < at,
        floor + 1.2 * np.exp(-2.5 * t),
        0.45 + 0.55 * np.exp(-(t - at) / (0.4 * (epochs - at))),
    ) * np.exp(0.01 * rng.standard_normal(epochs))
    # the eval loss on the mixture drops at the change, then holds about its level
    ev = np.where(t < at, 0.92 + 0.12 * t, 0.80 + 0.04 * (t - at) / max(1, epochs - at)) * np.exp(
        0.01 * rng.standard_normal(epochs)
    )
    return train, ev


@pytest.mark.parametrize("epochs", [15, 30, 60])
@pytest.mark.parametrize("switch,floor", [(1 / 3, 0.012), (0.4, 0.03)])
@pytest.mark.parametrize("seed", [0, 1])
def test_a_loss_restarted_by_harder_data_is_not_a_stall(epochs, switch, floor, seed):
    train, ev = _harder_data_added(epochs, switch, floor, seed)
    rep = judge(loss=train, eval_loss=ev)
    assert "TP-OBJECTIVE-CHANGED" in ids(rep), ids(rep)
    assert "TP-LOSS-STALLED" not in ids(rep) and rep.verdict.value != "FAIL"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_level_held_after_an_early_fall_with_no_change_is_still_a_stall(seed):
    # the same shape without a change of objective: the loss fell in its first epochs, then
    # held one level for the rest of the run while the eval loss held too
    rng = np.random.default_rng(seed)
    n = 30
    train = np.r_[[1.2, 0.7], np.full(n - 2, 0.5)] * np.exp(0.01 * rng.standard_normal(n))
    ev = np.full(n, 0.8) * np.exp(0.01 * rng.standard_normal(n))
    rep = judge(loss=train, eval_loss=ev)
    assert "TP-LOSS-STALLED" in ids(rep) and "TP-OBJECTIVE-CHANGED" not in ids(rep)


@pytest.mark.parametrize("n", [12, 30, 120])
@pytest.mark.parametrize("noise", [0.01, 0.08])
def test_a_loss_flat_on_both_sides_of_a_change_is_still_a_stall(n, noise):
    # flat at 0.85 from its first log, one jump of 1.76x at mid-run, flat again, the eval
    # loss flat throughout: an eval loss that never moved is "not worse" over the climb,
    # but nothing learned on either side of it
    rng = np.random.default_rng(n)
    train = np.where(np.arange(n) < n // 2, 0.85, 1.5) * np.exp(noise * rng.standard_normal(n))
    ev = np.full(n, 0.90) * np.exp(0.002 * rng.standard_normal(n))
    rep = judge(loss=train, eval_loss=ev)
    assert "TP-LOSS-STALLED" in ids(rep) or rep.verdict.value == "FAIL", ids(rep)
