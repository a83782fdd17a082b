"""A train loss that climbs because what it measures changed, shown by the log: a setting
that moves the loss's level (a data mixture's weight, a distillation or contrastive
temperature, a batch size or a count of negatives) moved after the best level and the loss
fell again after it; or a held-out accuracy that rose beyond its noise over the climb.
TP-OBJECTIVE-CHANGED (INFO) says so instead of TP-DIVERGE. Generated over lengths, noise
levels and onsets; the divergences nearest to each (the loss climbing on after the move, a
move too small, a machine's temperature, an accuracy that did not rise, a train accuracy,
an eval loss that got worse) keep the FAIL."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import run_of

from trainproof.findings import Level
from trainproof.rules.engine import judge_runlog


def _climb(n, sigma, seed, at, jump=3.0, after="learns"):
    """A loss falling 2.5 -> 0.5, moved ``jump`` times at ``at`` of the run; ``after``:
    ``learns`` (it falls again, by a fifth of its new level) or ``climbs`` (on by 1.5x)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    loss = 0.5 + 2.0 * np.exp(-8 * t)
    i0 = int(at * n)
    tail = t >= at
    u = (t - at) / (1 - at)
    if after == "learns":
        loss = np.where(tail, loss * jump * (1 - 0.2 * (1 - np.exp(-5 * u))), loss)
    else:
        loss = np.where(tail, loss * jump * (1 + 0.5 * u), loss)
    return loss * np.exp(sigma * rng.standard_normal(n)), i0


def _setting(n, i0, before, after):
    return np.where(np.arange(n) >= i0, after, before).astype(float)


SETTINGS = [
    ("data/mix_weight_code", 0.05, 0.6),
    ("kd_temperature", 4.0, 1.0),
    ("temperature", 0.07, 0.2),
    ("batch_size", 256, 4096),
    ("global_batch_size", 512, 2048),
    ("num_negatives", 16, 128),
]


def _ids(cols):
    rep = judge_runlog(run_of(**cols))
    return rep, {f.id for f in rep.findings}


@pytest.mark.parametrize("n", [40, 300, 3000])
@pytest.mark.parametrize("key,before,after", SETTINGS)
def test_a_setting_that_moved_and_was_learned_is_no_divergence(n, key, before, after):
    for seed in range(4):
        sigma, at = (0.01, 0.03, 0.06, 0.02)[seed], (0.35, 0.5, 0.6, 0.45)[seed]
        loss, i0 = _climb(n, sigma, seed, at)
        rep, ids = _ids({"loss": loss, key: _setting(n, i0, before, after)})
        assert "TP-DIVERGE" not in ids and rep.verdict is not Level.FAIL, (n, key, seed, rep.ids())
        assert "TP-OBJECTIVE-CHANGED" in ids, (n, key, seed, rep.ids())
        # the same climb without the setting logged is a divergence: the setting decides
        rep, ids = _ids({"loss": loss})
        assert "TP-DIVERGE" in ids, (n, key, seed, rep.ids())


@pytest.mark.parametrize("n", [40, 300, 3000])
@pytest.mark.parametrize(
    "key,before,after,shape",
    [
        ("data/mix_weight_code", 0.05, 0.6, "climbs"),  # a divergence that starts at the move
        ("batch_size", 256, 4096, "climbs"),
        ("kd_temperature", 4.0, 3.0, "learns"),  # moved 1.33x: a nudge, not another objective
        ("system/gpu.0.temp", 40.0, 80.0, "learns"),  # the machine's temperature
    ],
)
def test_the_divergences_nearest_to_it_still_fail(n, key, before, after, shape):
    for seed in range(4):
        sigma, at = (0.01, 0.03, 0.06, 0.02)[seed], (0.35, 0.5, 0.6, 0.45)[seed]
        loss, i0 = _climb(n, sigma, seed, at, after=shape)
        rep, ids = _ids({"loss": loss, key: _setting(n, i0, before, after)})
        assert "TP-DIVERGE" in ids and "TP-OBJECTIVE-CHANGED" not in ids, (n, key, seed, rep.ids())


def _accuracy(n, i0, seed, rise, evals=20, examples=2000):
    """A held-out accuracy evaluated ``evals`` times on ``examples`` examples, at 0.80
    well before the onset (as the loss nears its best level) and moving by ``rise`` from
    the onset to the end (NaN where not evaluated)."""
    rng = np.random.default_rng(seed + 100)
    t = np.arange(n) / n
    at = i0 / n
    p = 0.80 * (1 - np.exp(-25 * t))
    p = np.where(t >= at, 0.80 + rise * (t - at) / (1 - at), p)
    acc = rng.binomial(examples, np.clip(p, 0, 1)) / examples
    out = np.full(n, np.nan)
    idx = np.linspace(n // evals, n - 1, evals).astype(int)
    out[idx] = acc[idx]
    return [None if np.isnan(x) else x for x in out]


@pytest.mark.parametrize("n", [60, 300, 3000])
def test_a_held_out_accuracy_that_rose_over_the_climb_decides(n):
    for seed in range(4):
        sigma, at = (0.01, 0.03, 0.05, 0.02)[seed], (0.35, 0.5, 0.6, 0.45)[seed]
        loss, i0 = _climb(n, sigma, seed, at)
        rep, ids = _ids({"loss": loss, "val_accuracy": _accuracy(n, i0, seed, 0.08)})
        assert "TP-OBJECTIVE-CHANGED" in ids and "TP-DIVERGE" not in ids, (n, seed, rep.ids())
        # held where it was, fell, or a train accuracy instead: the climb stays a divergence
        for key, rise in (("val_accuracy", 0.0), ("val_accuracy", -0.2), ("train_accuracy", 0.08)):
            rep, ids = _ids({"loss": loss, key: _accuracy(n, i0, seed, rise)})
            assert "TP-DIVERGE" in ids, (n, seed, key, rise, rep.ids())


def test_an_eval_loss_that_got_worse_beside_a_rising_accuracy_disputes_the_divergence():
    # the eval loss confirms the climb, the held-out accuracy rose 8 points over it: the
    # held-out measures disagree, so no FAIL and no changed objective, a warning
    n = 300
    loss, i0 = _climb(n, 0.02, 3, 0.5)
    ev = np.full(n, np.nan)
    idx = np.linspace(15, n - 1, 20).astype(int)
    ev[idx] = np.where(idx >= i0, 1.6, 0.9)
    for rise, diverges in ((0.08, False), (0.0, True), (-0.2, True)):
        rep, ids = _ids(
            {
                "loss": loss,
                "val_accuracy": _accuracy(n, i0, 3, rise),
                "eval_loss": [None if np.isnan(x) else x for x in ev],
            }
        )
        assert "TP-OBJECTIVE-CHANGED" not in ids, rep.ids()
        assert ("TP-DIVERGE" in ids) is diverges and ("TP-LOSS-CLIMB" in ids) is not diverges, (rise, rep.ids())


def _annealed(n, i0, before, after):
    """A setting annealed linearly from ``before`` at the onset to ``after`` at the last step."""
    u = np.clip((np.arange(n) - i0) / max(1, n - 1 - i0), 0, 1)
    return before + (after - before) * u


@pytest.mark.parametrize("n", [40, 300, 3000])
def test_a_setting_still_moving_at_the_end_makes_the_climb_a_warning(n):
    """A distillation temperature annealed 4 -> 1 to the last step: the loss climbs with it
    and never falls again, so the setting's effect and a divergence look the same."""
    for seed in range(3):
        sigma, at = (0.01, 0.03, 0.02)[seed], (0.35, 0.5, 0.45)[seed]
        loss, i0 = _climb(n, sigma, seed, at, after="climbs")
        temp = _annealed(n, i0, 4.0, 1.0)
        rep, ids = _ids({"loss": loss, "kd_temperature": temp})
        assert "TP-DIVERGE" not in ids and "TP-LOSS-CLIMB" in ids and rep.verdict is Level.WARN, (n, seed, rep.ids())
        # an eval loss that got worse over the climb shows the divergence
        ev = np.full(n, np.nan)
        idx = np.linspace(n // 10, n - 1, 12).astype(int)
        ev[idx] = np.where(idx >= i0, 2.0, 0.8)
        rep, ids = _ids({"loss": loss, "kd_temperature": temp, "eval_loss": [None if np.isnan(x) else x for x in ev]})
        assert "TP-DIVERGE" in ids, (n, seed, rep.ids())
        # a batch that shrank cannot raise an InfoNCE loss's level: still a divergence
        rep, ids = _ids({"loss": loss, "batch_size": _annealed(n, i0, 4096, 256)})
        assert "TP-DIVERGE" in ids, (n, seed, rep.ids())
