"""TP-LOSS-RESCALED (a WARN said instead of TP-DIVERGE): a loss that moves to a new level in
one log interval and goes on as before while the gradient norm shows no divergence: a loss
logged in new units after a resume (the Hugging Face Trainer of 4.46 logging the loss times
the accumulation steps; a mean over tokens become a sum over a sequence). Generated over
lengths, noise levels, factors and jump positions; the divergences nearest to it (no
gradient norm logged, a gradient spike at the jump, gradients moving halfway, a climb that
goes on, a ramp over many logs, a loss turned noisy, an eval loss that got worse) stay
TP-DIVERGE's FAIL."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _helpers import run_of

from trainproof.api import read_runlog
from trainproof.findings import Level
from trainproof.rules.engine import judge_runlog

RULE = "TP-LOSS-RESCALED"


def _run(n, sigma, seed, factor, at=0.6, g_sigma=0.05, grad="held", after="descend", ramp=1, noise_after=1.0):
    """``n`` logs of a decaying loss (1.1 + 1.2 e^(-t/0.25) times a lognormal noise of
    ``sigma``) whose logged value is multiplied by ``factor`` from ``at`` of the run on,
    reached over ``ramp`` logs; ``grad``: the gradient norm (noise ``g_sigma``) ``held``
    through the jump, ``scaled`` by the same factor, ``halfway`` (by its square root),
    ``spike`` (held, 20x at the jump) or ``none``. ``after``: ``descend`` (the run goes on
    learning) or ``climb`` (a further 2x climb to the end)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    i0 = int(at * n)
    base = 1.1 + 1.2 * np.exp(-t / 0.25)
    k = np.clip((np.arange(n) - i0 + 1) / ramp, 0, 1)
    mult = factor**k
    if after == "climb":
        mult = mult * np.where(np.arange(n) >= i0, 1 + (t - at) / (1 - at), 1)
    noise = np.where(np.arange(n) >= i0, sigma * noise_after, sigma)
    loss = base * mult * np.exp(noise * rng.standard_normal(n))
    g = np.exp(g_sigma * rng.standard_normal(n))
    if grad == "scaled":
        g = g * mult
    elif grad == "halfway":
        g = g * np.sqrt(mult)
    elif grad == "spike":
        g[i0 : i0 + 2] *= 20
    cols = {"loss": loss, "lr": np.full(n, 5e-5)}
    if grad != "none":
        cols["grad_norm"] = g
    return cols


def _ids(cols):
    rep = judge_runlog(run_of(**cols))
    return rep, {f.id: f for f in rep.findings}


@pytest.mark.parametrize("n", [60, 300, 3000])
@pytest.mark.parametrize("factor", [4.0, 8.0, 64.0])
@pytest.mark.parametrize("grad", ["held", "scaled"])
def test_a_loss_logged_in_new_units_warns_instead_of_failing(n, factor, grad):
    for seed in range(4):
        sigma, at = (0.01, 0.03, 0.05, 0.02)[seed], (0.3, 0.5, 0.6, 0.7)[seed]
        rep, f = _ids(_run(n, sigma, seed, factor, at=at, g_sigma=(0.03, 0.08)[seed % 2], grad=grad))
        assert "TP-DIVERGE" not in f, (n, factor, grad, seed, rep.ids())
        assert RULE in f and f[RULE].level is Level.WARN, (n, factor, grad, seed, rep.ids())
        assert rep.verdict is Level.WARN
        assert f[RULE].data["ratio"] > factor / 2


@pytest.mark.parametrize("n", [60, 300, 3000])
@pytest.mark.parametrize(
    "variant",
    [
        dict(grad="none"),  # nothing tells a divergence from new units: the FAIL stands
        dict(grad="spike"),  # the gradients spike at the jump: a divergence's mark
        dict(grad="halfway"),  # the gradients moved, by neither relation
        dict(after="climb"),  # the loss climbs on after the jump
        dict(ramp=8),  # a climb over 8 logs, not one interval
        dict(noise_after=4.0),  # the loss turned noisy
    ],
)
def test_the_divergences_nearest_to_it_still_fail(n, variant):
    for seed in range(4):
        sigma = (0.01, 0.03, 0.05, 0.02)[seed]
        rep, f = _ids(_run(n, sigma, seed, 8.0, g_sigma=0.05, **variant))
        assert RULE not in f, (n, variant, seed, rep.ids())
        assert "TP-DIVERGE" in f and rep.verdict is Level.FAIL, (n, variant, seed, rep.ids())


def test_an_eval_loss_across_the_jump_decides():
    n = 300
    cols = _run(n, 0.03, 1, 8.0)
    i0 = int(0.6 * n)
    ev = np.full(n, np.nan)
    ev[::10] = 1.2 * np.exp(0.01 * np.random.default_rng(0).standard_normal(30))
    worse = ev.copy()
    worse[i0::10] *= 4.0
    # held: the eval loss says the model did not get worse, and so says TP-OBJECTIVE-CHANGED
    rep, f = _ids({**cols, "eval_loss": [None if np.isnan(x) else x for x in ev]})
    assert "TP-OBJECTIVE-CHANGED" in f and RULE not in f and "TP-DIVERGE" not in f, rep.ids()
    # worse: the eval loss shows the divergence the gradients did not
    rep, f = _ids({**cols, "eval_loss": [None if np.isnan(x) else x for x in worse]})
    assert "TP-DIVERGE" in f and RULE not in f, rep.ids()


def test_read_from_a_trainer_state_written_by_a_resume_on_a_newer_version(tmp_path):
    """HF's trainer_state.json: the log history continues after a resume, the loss logged
    times 8 (the accumulation steps), the gradient norm unchanged."""
    cols = _run(120, 0.03, 5, 8.0, at=0.55)
    hist = [
        {
            "epoch": round(3 * (i + 1) / 120, 4),
            "step": 10 * (i + 1),
            "loss": round(float(loss), 4),
            "grad_norm": float(g),
            "learning_rate": 5e-5,
        }
        for i, (loss, g) in enumerate(zip(cols["loss"], cols["grad_norm"]))
    ]
    p = tmp_path / "trainer_state.json"
    p.write_text(json.dumps({"global_step": 1200, "max_steps": 1200, "log_history": hist}))
    rep = judge_runlog(read_runlog(p))
    f = {x.id: x for x in rep.findings}
    assert RULE in f and "TP-DIVERGE" not in f, rep.ids()
    assert "step 670" in f[RULE].evidence


@pytest.mark.parametrize("n", [60, 300, 3000])
@pytest.mark.parametrize("key", ["eval_accuracy", "train_accuracy"])
def test_an_accuracy_that_moved_across_the_jump_keeps_the_divergence(n, key):
    """Units of the logged loss do not move what the model predicts: an accuracy that
    collapsed at the jump (evaluated every tenth log, or every log) is a divergence."""
    for seed in range(3):
        cols = _run(n, 0.02, seed, 8.0, at=0.5)
        i0 = n // 2
        rng = np.random.default_rng(seed)
        acc = np.where(np.arange(n) >= i0, 0.005, 0.5) + 0.01 * rng.standard_normal(n)
        every = 10 if key.startswith("eval") else 1
        col = [float(a) if i % every == 0 else None for i, a in enumerate(np.clip(acc, 0, 1))]
        rep, f = _ids({**cols, key: col})
        assert RULE not in f and "TP-DIVERGE" in f, (n, key, seed, rep.ids())
        # the same run with the accuracy unmoved across the jump is new units
        col = [
            float(a) if i % every == 0 else None
            for i, a in enumerate(np.clip(0.5 + 0.01 * rng.standard_normal(n), 0, 1))
        ]
        rep, f = _ids({**cols, key: col})
        assert RULE in f, (n, key, seed, rep.ids())
