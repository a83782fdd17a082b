"""TP-GRAD-NORM-JUMP: a gradient norm whose level jumps tenfold or more and holds, on
generated norms of several lengths, noise levels and jump sizes, and the healthy shapes
nearest it (the fall from the initialisation, a slow climb, a few-fold jump when a backbone
is unfrozen, spikes that come back, a bimodal batch-1 norm, a loss term added there)."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import run_of

from trainproof.findings import Level
from trainproof.rules.engine import judge_runlog

from conftest import one


def _norms(n: int, sigma: float, seed: int, jump: float = 1.0, at: float = 0.5, back: float | None = None):
    """A gradient norm falling 10x from its initialisation over the first tenth, then near
    1.0 with log-normal noise ``sigma``; multiplied by ``jump`` from the share ``at`` of the
    run (until ``back``, when given). Returns ``(loss, grad_norm)``: a loss that falls as a
    healthy run's does, whatever the norm does (clipping caps the updates)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    g = (1.0 + 9.0 * np.exp(-t / 0.02)) * np.exp(sigma * rng.standard_normal(n))
    on = (t >= at) & ((t < back) if back is not None else True)
    g = np.where(on, g * jump, g)
    loss = (0.8 + 1.5 * np.exp(-t / 0.2)) * np.exp(0.03 * rng.standard_normal(n))
    return loss, g


@pytest.mark.parametrize("n", [100, 1000, 20000])
@pytest.mark.parametrize("sigma", [0.1, 0.4])
@pytest.mark.parametrize("jump,at", [(30.0, 0.3), (100.0, 0.55), (1000.0, 0.7)])
def test_a_norm_that_jumps_and_holds_warns(n, sigma, jump, at):
    # A helper's run: the loss multiplied by 100 before backward() from 55% of the run
    # (AdamW, norm 1.04 -> 103) PASSed, as did a synthetic x100 at any onset from 30% to 70%.
    loss, g = _norms(n, sigma, seed=n, jump=jump, at=at)
    steps = np.arange(1, n + 1) * 10.0
    f = one(judge_runlog(run_of(loss=loss, grad_norm=g, lr=np.full(n, 1e-4))), "TP-GRAD-NORM-JUMP")
    assert f.level is Level.WARN
    assert abs(f.data["jump_step"] - steps[int(at * n)]) <= 10 * max(2, n // 40), f.data
    assert f.data["ratio"] > jump / 3


@pytest.mark.parametrize("n", [100, 1000, 5000])
@pytest.mark.parametrize("sigma", [0.1, 0.4, 0.8])
def test_healthy_norms_do_not_warn(n, sigma):
    for seed in range(3):
        for jump in (1.0, 4.0):  # flat after the fall; a backbone unfrozen at mid-run
            loss, g = _norms(n, sigma, seed, jump=jump)
            rep = judge_runlog(run_of(loss=loss, grad_norm=g))
            assert "TP-GRAD-NORM-JUMP" not in rep.ids(), (seed, jump, rep.ids())
        # a slow climb of 10x over the run after the fall: no jump
        loss, g = _norms(n, sigma, seed)
        g = g * 10.0 ** np.linspace(0, 1, n)
        assert "TP-GRAD-NORM-JUMP" not in judge_runlog(run_of(loss=loss, grad_norm=g)).ids()
        # a 100x stretch that comes back down before the end, and 3% of points 50x higher
        loss, g = _norms(n, sigma, seed, jump=100.0, at=0.5, back=0.8)
        assert "TP-GRAD-NORM-JUMP" not in judge_runlog(run_of(loss=loss, grad_norm=g)).ids()
        rng = np.random.default_rng(seed)
        loss, g = _norms(n, sigma, seed)
        g = np.where(rng.random(n) < 0.03, g * 50, g)
        assert "TP-GRAD-NORM-JUMP" not in judge_runlog(run_of(loss=loss, grad_norm=g)).ids()


def test_a_norm_logged_scaled_that_moves_with_its_loss_scale_does_not_warn():
    # A helper's fp16 run logging the scaled norm: an overflow burst halves the scale 12
    # times (65536 -> 16), which then doubles every 500 steps back to 65536.
    n = 200
    steps = np.arange(1, n + 1) * 100.0
    scale = np.full(n, 65536.0)
    burst = (steps >= 6000) & (steps < 12000)
    scale[burst] = 16.0 * 2.0 ** np.floor((steps[burst] - 6000) / 500)
    loss, g = _norms(n, 0.1, 5)
    true = g * 0.07
    rep = judge_runlog(run_of(loss=loss, grad_norm=true * scale, loss_scale=scale))
    assert "TP-GRAD-NORM-JUMP" not in rep.ids(), rep.ids()
    # Without the scale logged, the norm is back at the level it held before the burst.
    assert "TP-GRAD-NORM-JUMP" not in judge_runlog(run_of(loss=loss, grad_norm=true * scale)).ids()


def test_a_bimodal_batch_one_norm_does_not_warn():
    # batch size 1: the norm alternates between two levels 40x apart, step by step
    rng = np.random.default_rng(0)
    n = 400
    loss, g = _norms(n, 0.2, 0)
    g = np.where(rng.random(n) < 0.5, g, g * 40)
    assert "TP-GRAD-NORM-JUMP" not in judge_runlog(run_of(loss=loss, grad_norm=g)).ids()


def test_a_loss_term_first_logged_at_the_jump_explains_it():
    n = 1000
    loss, g = _norms(n, 0.2, 1, jump=50.0, at=0.5)
    aux = [None] * (n // 2) + [0.5] * (n - n // 2)
    rep = judge_runlog(run_of(loss=loss, grad_norm=g, loss_aux=aux))
    assert "TP-GRAD-NORM-JUMP" not in rep.ids(), rep.ids()
    assert "TP-GRAD-NORM-JUMP" in judge_runlog(run_of(loss=loss, grad_norm=g)).ids()
