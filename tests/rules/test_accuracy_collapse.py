"""TP-ACCURACY-COLLAPSE (a WARN): a train and a held-out accuracy that both fell 40% or more
from their best and stayed down, whatever the loss does. Generated collapses (to 15-60% of
the best, onsets 30-50%, 8-300 points, binomial noise of 2,000 examples) and the healthy
shapes nearest to it: overfitting (held-out down 20%, train up), mixup or a harder
curriculum (train down, held-out up or held), a dip that recovers, a run learning."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import run_of

from trainproof.rules.engine import judge_runlog

RULE = "TP-ACCURACY-COLLAPSE"


def _acc(n, seed, shape, examples):
    """An accuracy of ``n`` points: ``(start, best, end, onset share, recover)``."""
    start, best, end, at, recover = shape
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    p = start + (best - start) * np.minimum(1, t / max(at / 3, 1e-9))  # held from a third of the way
    p = np.where(t >= at, best + (end - best) * np.minimum(1, (t - at) / 0.05), p)
    if recover:
        p = np.where(t >= at + 0.3, best, p)
    return rng.binomial(examples, np.clip(p, 0, 1)) / examples


def _judge(n, seed, train, held, examples=2000):
    t = np.arange(n) / n
    loss = 2.0 * np.exp(-2 * t) + 0.3  # a falling loss: the collapse shows in the accuracies only
    rep = judge_runlog(
        run_of(
            loss=loss * np.exp(0.02 * np.random.default_rng(seed).standard_normal(n)),
            accuracy=_acc(n, seed, train, examples),
            val_accuracy=_acc(n, seed + 50, held, examples),
        )
    )
    return rep


@pytest.mark.parametrize("n", [8, 12, 60, 300])
@pytest.mark.parametrize("drop", [0.15, 0.4, 0.55])
def test_both_accuracies_collapsing_warns(n, drop):
    for seed in range(3):
        at = (0.3, 0.4, 0.5)[seed]  # the best held for 3 points or more
        rep = _judge(n, seed, (0.3, 0.8, 0.8 * drop, at, False), (0.3, 0.75, 0.75 * drop, at, False))
        assert RULE in rep.ids(), (n, drop, seed, rep.ids())


@pytest.mark.parametrize("n", [8, 12, 60, 300])
@pytest.mark.parametrize(
    "train,held",
    [
        ((0.3, 0.8, 0.98, 0.3, False), (0.3, 0.75, 0.6, 0.3, False)),  # overfitting
        ((0.3, 0.8, 0.4, 0.3, False), (0.3, 0.75, 0.8, 0.3, False)),  # mixup switched on
        ((0.3, 0.8, 0.45, 0.5, False), (0.3, 0.75, 0.75, 0.5, False)),  # a harder curriculum
        ((0.3, 0.8, 0.3, 0.3, True), (0.3, 0.75, 0.3, 0.3, True)),  # a dip both recover from
        ((0.1, 0.9, 0.9, 0.6, False), (0.1, 0.85, 0.85, 0.6, False)),  # learning
    ],
)
def test_the_healthy_shapes_nearest_to_it_do_not_warn(n, train, held):
    for seed in range(3):
        rep = _judge(n, seed, train, held)
        assert RULE not in rep.ids(), (n, train, held, seed, rep.ids())
