"""A loss held at a fitted level (a converged classifier trained on: its batches at 1e-7 to
1e-4 nats) is no dead run because its gradients and updates are about zero, and its batches'
spread over orders of magnitude is no blow-up (helper 86: a resumed converged classifier was
stopped live at step 5049 of 6000 on TP-LOSS-BLOWUPS; another FAILed TP-DEAD-RUN "with
updates of about zero"). Generated variants of lengths, noise spreads and levels; the broken
shapes nearest them still FAIL."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import run_of

from trainproof.rules.engine import judge_runlog


def _fitted(n: int, level: float, sigma: float, seed: int) -> np.ndarray:
    """Batch losses of a model that fitted its data: log-normal around ``level`` with a
    log-sigma of ``sigma`` (one hard example in a batch moves its mean by orders of
    magnitude), shape ``(n,)``."""
    rng = np.random.default_rng(seed)
    return level * np.exp(sigma * rng.standard_normal(n))


@pytest.mark.parametrize("n", [50, 300, 2000])
@pytest.mark.parametrize("sigma", [0.8, 1.2, 1.6])
@pytest.mark.parametrize("seed", range(3))
def test_a_fitted_loss_spread_over_orders_of_magnitude_is_no_blow_up(n, sigma, seed):
    # a resumed converged model whose restarted optimizer moves it 1e-5 -> 3e-5 over the
    # first fifth of the run, where it holds
    t = np.arange(n) / n
    v = _fitted(n, 1e-5, sigma, seed) * (1 + 2 * np.clip(t / 0.2, 0, 1))
    rep = judge_runlog(run_of(loss=v, lr=np.full(n, 3e-4)))
    assert "TP-LOSS-BLOWUPS" not in rep.ids(), rep.ids()
    assert rep.verdict.value != "FAIL", rep.ids()


@pytest.mark.parametrize("n", [50, 300, 2000])
def test_a_loss_that_leaves_the_fitted_level_still_diverges(n):
    # the same resumed model, climbing 1e-5 -> 1e-2 and holding: out of the fitted range
    t = np.arange(n) / n
    v = _fitted(n, 1e-5, 0.5, n) * 10 ** (3 * np.clip((t - 0.3) / 0.3, 0, 1))
    assert "TP-DIVERGE" in judge_runlog(run_of(loss=v)).ids()


@pytest.mark.parametrize("n", [50, 300, 2000])
@pytest.mark.parametrize("seed", range(3))
def test_a_fitted_run_that_blows_up_to_an_ordinary_level_still_fails(n, seed):
    rng = np.random.default_rng(seed)
    v = _fitted(n, 1e-5, 1.2, seed)
    late = np.arange(n // 2, n)
    hit = late[rng.random(late.size) < 0.35]
    v[hit] = 10 ** rng.uniform(-1, 2, hit.size)
    rep = judge_runlog(run_of(loss=v))
    assert rep.verdict.value == "FAIL", rep.ids()
    assert "TP-LOSS-BLOWUPS" in rep.ids() or "TP-DIVERGE" in rep.ids(), rep.ids()


@pytest.mark.parametrize("n", [60, 500])
@pytest.mark.parametrize("level", [1e-6, 3e-5])
def test_updates_of_about_zero_at_a_fitted_level_are_no_cause(n, level):
    v = _fitted(n, level, 0.02, n)
    ratio = np.full(n, 6e-8)
    rep = judge_runlog(run_of(loss=v, lr=np.full(n, 1e-3), update_ratio=ratio))
    assert "TP-DEAD-RUN" not in rep.ids(), rep.ids()
    assert rep.verdict.value != "FAIL", rep.ids()
    stalled = [f for f in rep.findings if f.id == "TP-LOSS-STALLED"]
    # noisy ends of a short log may show an improvement; a long one is no progress, said so
    assert stalled or n < 100, rep.ids()
    assert all("fitted level" in f.evidence for f in stalled)
    # a gradient norm that collapsed with the loss at that level is no cause either
    g = np.r_[np.full(n // 2, 1e-3), np.full(n - n // 2, 1e-6)]
    assert "TP-DEAD-RUN" not in judge_runlog(run_of(loss=v, lr=np.full(n, 1e-3), grad_norm=g)).ids()


@pytest.mark.parametrize("n", [60, 500])
def test_updates_of_about_zero_at_an_ordinary_level_are_still_a_dead_run(n):
    # the same update ratio under a loss pinned at ln 4: nothing moves a model that has
    # everything left to learn
    rng = np.random.default_rng(n)
    v = np.log(4) * np.exp(0.01 * rng.standard_normal(n))
    rep = judge_runlog(run_of(loss=v, lr=np.full(n, 1e-3), update_ratio=np.full(n, 6e-8)))
    assert "TP-DEAD-RUN" in rep.ids() or "TP-CHANCE-LEVEL" in rep.ids(), rep.ids()
    v = 0.9 * np.exp(0.01 * rng.standard_normal(n))
    rep = judge_runlog(run_of(loss=v, lr=np.full(n, 1e-3), update_ratio=np.full(n, 6e-8)))
    assert "TP-DEAD-RUN" in rep.ids(), rep.ids()


@pytest.mark.parametrize("n", [60, 600])
@pytest.mark.parametrize("end", [1.1e-4, 5e-4])
def test_a_fitted_model_trained_on_with_weight_decay_is_no_divergence(n, end):
    # helper 89: a converged classifier resumed with SGD 0.1, momentum 0.9 and weight decay
    # 5e-4 rose 3.1e-6 -> 1.1e-4 at 100% accuracy (2e-3: to about 5e-4), where the decay
    # balances its vanishing gradient, and FAILed TP-DIVERGE live
    t = np.arange(n) / n
    rise = np.exp(np.log(end / 3e-6) * np.clip(t / 0.3, 0, 1))
    v = _fitted(n, 3e-6, 0.5, n) * rise
    rep = judge_runlog(run_of(loss=v, lr=np.full(n, 0.1)))
    assert "TP-DIVERGE" not in rep.ids(), rep.ids()
    assert rep.verdict.value != "FAIL", rep.ids()


def test_a_climb_on_a_tiny_scale_is_a_warning_that_says_climbed():
    # helper 89: a regression on returns (MSE 1e-6) climbing to 6e-5 and holding is read at
    # a fitted level; its TP-LOSS-CLIMB warning said "loss diverged: ..."
    n = 200
    t = np.arange(n) / n
    v = _fitted(n, 1e-6, 0.1, 3) * 10 ** (1.8 * np.clip((t - 0.5) / 0.2, 0, 1))
    rep = judge_runlog(run_of(loss=v, lr=np.full(n, 1e-2)))
    assert "TP-DIVERGE" not in rep.ids()
    f = next(f for f in rep.findings if f.id == "TP-LOSS-CLIMB")
    assert "climbed" in f.message and "diverged" not in f.message, f.message
