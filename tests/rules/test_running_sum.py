"""A loss logged as a running sum over each epoch (``epoch_loss += loss.item()`` printed at
each log, reset at each epoch) is read as the mean loss of each logging interval, with a
note: judged as logged, its sawtooth read as a divergence (a reviewer's healthy W&B run
FAILed TP-DIVERGE). Generated over epochs, steps per epoch, logging intervals and noise; a
divergence logged the same way still FAILs; per-step losses, a climb with no resets and a
spiky loss are read as they are."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import run_of

from trainproof.findings import Level
from trainproof.rules.engine import judge_runlog


def _per_step(epochs, steps, seed, kind):
    rng = np.random.default_rng(seed)
    t = np.arange(epochs * steps) / (epochs * steps)
    if kind == "healthy":
        loss = 0.6 + 1.6 * np.exp(-4 * t)
    else:  # diverges from 40% of the run on: 8x by the end
        loss = np.where(t < 0.4, 0.6 + 1.6 * np.exp(-4 * t), (0.6 + 1.6 * np.exp(-1.6)) * 8 ** ((t - 0.4) / 0.6))
    return loss * np.exp(0.1 * rng.standard_normal(t.size))


def _running_sum(loss, steps, every):
    """The running sum over each epoch of ``steps`` steps, logged every ``every`` steps:
    (step, sum) rows."""
    rows = []
    for e in range(loss.size // steps):
        acc = np.cumsum(loss[e * steps : (e + 1) * steps])
        for i in range(every - 1, steps, every):
            rows.append((e * steps + i + 1, float(acc[i])))
    return rows


def _judge(rows):
    steps = np.array([r[0] for r in rows], dtype=float)
    vals = np.array([r[1] for r in rows])
    run = run_of(loss=vals)
    s = run.series["loss"]
    run.series["loss"] = type(s)(s.name, s.key, steps, s.values, s.lines)
    return judge_runlog(run)


@pytest.mark.parametrize("epochs,steps,every", [(3, 200, 10), (8, 250, 1), (12, 300, 10), (30, 50, 5)])
def test_a_running_sum_is_judged_as_the_losses_it_adds_up(epochs, steps, every):
    for seed in range(3):
        rep = _judge(_running_sum(_per_step(epochs, steps, seed, "healthy"), steps, every))
        assert rep.verdict is not Level.FAIL, (epochs, steps, every, seed, rep.ids())
        assert any("running sum over each epoch" in n for n in rep.notes), rep.notes
        rep = _judge(_running_sum(_per_step(epochs, steps, seed, "diverge"), steps, every))
        assert "TP-DIVERGE" in rep.ids() or "TP-LOSS-CLIMB" in rep.ids(), (epochs, steps, every, seed, rep.ids())


@pytest.mark.parametrize("n", [60, 600])
def test_losses_that_are_no_running_sum_are_read_as_they_are(n):
    rng = np.random.default_rng(n)
    t = np.arange(n) / n
    shapes = {
        "per step": (0.6 + 1.6 * np.exp(-4 * t)) * np.exp(0.1 * rng.standard_normal(n)),
        "climb, no resets": 0.5 * 8**t * np.exp(0.01 * rng.standard_normal(n)),
        # a spiky loss: spikes fall back to a quarter or less, but it falls at half its steps
        "spiky": (0.6 + 1.6 * np.exp(-4 * t)) * np.where(rng.random(n) < 0.05, 6.0, 1.0),
        # spikes early, then bit-identical: few falls, but a held value is no sum rising
        "spiky, then frozen": np.where(
            t < 0.1, (0.6 + 1.6 * np.exp(-4 * t)) * np.where(np.arange(n) % 3 == 1, 6.0, 1.0), 0.7
        ),
    }
    for name, loss in shapes.items():
        rep = judge_runlog(run_of(loss=loss))
        assert not any("running sum" in note for note in rep.notes), (name, rep.notes)
