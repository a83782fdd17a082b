"""TP-GRAD-NORM-GROWTH: a gradient norm whose level climbs a hundredfold or more from its
lowest and holds there, however slowly, on generated norms of several lengths, noise levels,
growth factors and onsets, and the healthy shapes nearest it (the fall from the
initialisation, a few-fold late climb, a climb that comes back, spikes, a bimodal batch-1
norm, a norm logged scaled beside its loss scale, a loss term added, a reinforcement-learning
run whose losses grow with its returns)."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import run_of

from trainproof.findings import Level
from trainproof.rules.engine import judge_runlog

from conftest import one

ID = "TP-GRAD-NORM-GROWTH"


def _norms(n: int, sigma: float, seed: int, growth: float = 1.0, at: float = 0.4, until: float = 1.0):
    """A gradient norm falling 5x from its initialisation over the first tenth, then near 1.0
    with log-normal noise ``sigma``, multiplied by ``growth ** s`` where ``s`` climbs linearly
    from 0 at the share ``at`` of the run to 1 at ``until`` (and stays 1 after it). Returns
    ``(loss, grad_norm)``: a loss that falls as a healthy run's does (clipping and Adam cap
    the updates, so the loss need not follow the norm)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    s = np.clip((t - at) / (until - at), 0.0, 1.0)
    g = (1.0 + 4.0 * np.exp(-t / 0.02)) * growth**s * np.exp(sigma * rng.standard_normal(n))
    loss = (0.8 + 1.5 * np.exp(-t / 0.2)) * np.exp(0.03 * rng.standard_normal(n))
    return loss, g


@pytest.mark.parametrize("n", [40, 300, 5000])
@pytest.mark.parametrize("sigma", [0.1, 0.5])
@pytest.mark.parametrize("growth,at", [(300.0, 0.2), (1e4, 0.5), (1e5, 0.3)])
def test_a_norm_that_climbs_two_orders_of_magnitude_warns(n, sigma, growth, at):
    # A new user's generated runs: the norm climbing 130x-5e5x at a constant learning rate
    # while the loss stayed near its best PASSed (no jump: TP-GRAD-NORM-JUMP reads none).
    loss, g = _norms(n, sigma, seed=n, growth=growth, at=at)
    rep = judge_runlog(run_of(loss=loss, grad_norm=g, lr=np.full(n, 1e-4)))
    f = one(rep, ID)
    assert f.level is Level.WARN
    assert "TP-GRAD-NORM-JUMP" not in rep.ids()
    assert f.data["ratio"] >= 100.0
    # the onset lies in the climb, after its start
    steps = np.arange(1, n + 1) * 10.0
    assert steps[int(at * n)] - 10 * max(2, n // 20) <= f.data["onset_step"] <= steps[-1]
    assert rep.verdict is not None and rep.verdict.value != "FAIL"


@pytest.mark.parametrize("n", [40, 300, 5000])
@pytest.mark.parametrize("sigma", [0.1, 0.5, 0.9])
def test_healthy_norms_do_not_warn(n, sigma):
    for seed in range(3):
        # flat after the fall; a few-fold late climb (the growth a decaying lr brings); a
        # 30x climb over the whole run
        for growth, at in ((1.0, 0.4), (5.0, 0.7), (30.0, 0.1)):
            loss, g = _norms(n, sigma, seed, growth=growth, at=at)
            assert ID not in judge_runlog(run_of(loss=loss, grad_norm=g)).ids(), (seed, growth)
        # a 1000x climb that comes back down before the end
        loss, g = _norms(n, sigma, seed, growth=1000.0, at=0.3, until=0.6)
        t = np.arange(n) / n
        g = np.where(t > 0.8, g / 1000.0, g)
        assert ID not in judge_runlog(run_of(loss=loss, grad_norm=g)).ids(), seed
        # 3% of the points 300x higher
        rng = np.random.default_rng(seed)
        loss, g = _norms(n, sigma, seed)
        g = np.where(rng.random(n) < 0.03, g * 300, g)
        assert ID not in judge_runlog(run_of(loss=loss, grad_norm=g)).ids(), seed


def test_a_norm_back_at_its_initial_level_does_not_warn():
    # The norm falls 1000x from the initialisation over the first third, then climbs back
    # to where it started: a return, not a growth.
    n = 600
    t = np.arange(n) / n
    rng = np.random.default_rng(3)
    g = 10.0 ** (3 * np.abs(t - 0.35) / 0.65 * (t > 0.35) + 3 * (1 - t / 0.35) * (t <= 0.35))
    g = g * np.exp(0.2 * rng.standard_normal(n))
    loss = 0.8 + 1.5 * np.exp(-t / 0.2)
    assert ID not in judge_runlog(run_of(loss=loss, grad_norm=g)).ids()


def test_a_jump_is_left_to_the_jump_rule():
    n = 1000
    loss, g = _norms(n, 0.2, 1)
    g = np.where(np.arange(n) >= 600, g * 500.0, g)
    rep = judge_runlog(run_of(loss=loss, grad_norm=g))
    assert "TP-GRAD-NORM-JUMP" in rep.ids()
    assert ID not in rep.ids()


def test_a_norm_logged_scaled_that_grows_with_its_loss_scale_does_not_warn():
    # fp16 with the norm logged before unscaling: the scaler starts low and doubles every
    # 2,000 clean steps (torch GradScaler's growth interval), 2 -> 65536.
    n = 400
    steps = np.arange(1, n + 1) * 100.0
    scale = np.minimum(2.0 * 2.0 ** np.floor(steps / 2000.0), 65536.0)
    loss, g = _norms(n, 0.1, 5)
    rep = judge_runlog(run_of(loss=loss, grad_norm=g * scale, loss_scale=scale))
    assert ID not in rep.ids(), rep.ids()
    assert ID in judge_runlog(run_of(loss=loss, grad_norm=g * scale)).ids()


def test_a_loss_term_first_logged_during_the_climb_explains_it():
    n = 1000
    loss, g = _norms(n, 0.2, 1, growth=1e3, at=0.5)
    aux = [None] * (n // 2) + [0.5] * (n - n // 2)
    rep = judge_runlog(run_of(loss=loss, grad_norm=g, loss_aux=aux))
    assert ID not in rep.ids(), rep.ids()
    assert ID in judge_runlog(run_of(loss=loss, grad_norm=g)).ids()


def test_a_reinforcement_learning_run_is_not_judged():
    # PPO without value normalisation: the value loss and the gradient norm grow with the
    # returns as the policy improves (10 -> 500).
    n = 500
    loss, g = _norms(n, 0.2, 2, growth=1e3, at=0.2)
    ret = np.linspace(10.0, 500.0, n)
    rep = judge_runlog(run_of(loss=loss * ret, grad_norm=g, episode_reward=ret))
    assert ID not in rep.ids(), rep.ids()
    assert ID in rep.skipped
