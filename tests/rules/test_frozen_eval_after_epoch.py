"""An eval loss that froze under a learning rate decayed to about zero, in an epoch log.

Keras's ReduceLROnPlateau with its default ``min_lr=0`` cuts the rate by its factor at
every plateau until float32 weights stop changing; the validation loss on a fixed set then
repeats to the bit. Its first value is written at the end of epoch 1, after most of the
learning, so it is often within a few percent of where it froze: whether the run learned is
read on the train loss beside it (a healthy Keras run once FAILed TP-LOSS-FROZEN here).
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from trainproof.api import judge


def ids(rep) -> set[str]:
    return {f.id for f in rep.findings}


def _keras_run(epochs: int, factor: float, patience: int, seed: int, *, learned: bool = True, lr_live: bool = False):
    """Columns of a Keras ``History`` per epoch: train loss an epoch average that falls from
    ``start`` to a floor while the rate is 1e-6 or more (1% batch noise; still moving in its
    last digits under a frozen model, as a shuffled epoch sum does), val_loss first written after epoch 1 within 1-4%
    of its floor and bit-identical once the rate is under 1e-8, the rate cut by ``factor``
    after ``patience`` flat epochs from epoch 5 (held at 1e-3 with ``lr_live``)."""
    rng = np.random.default_rng(seed)
    t = np.arange(epochs)
    start, floor = rng.uniform(0.9, 2.5), rng.uniform(0.2, 0.6)
    lr = np.full(epochs, 1e-3)
    if not lr_live:
        for e in range(5, epochs):
            lr[e] = lr[e - 1] * (factor if (e - 5) % (patience + 1) == patience else 1.0)
    # the model learns only while its rate is alive: progress counted in epochs at 1e-6 or more
    progress = np.cumsum(lr >= 1e-6) - 1
    if learned:
        train = floor + (start - floor) * np.exp(-progress / rng.uniform(1.0, 3.0))
    else:
        train = np.full(epochs, start)
    train = train * np.exp(0.01 * rng.standard_normal(epochs))
    ev_floor = floor * rng.uniform(1.1, 1.4) if learned else start
    ev = ev_floor * (1 + rng.uniform(0.01, 0.04) * np.exp(-t)) * (1 + 0.003 * rng.standard_normal(epochs))
    frozen = np.flatnonzero(lr < 1e-8)
    if lr_live:
        frozen = np.arange(epochs // 2, epochs)  # a model no longer updated under a live rate
    if frozen.size:
        ev[frozen] = float(np.float32(ev[frozen[0]]))
    return {"loss": train, "val_loss": ev, "learning_rate": lr}


def _write(tmp_path, cols, fmt):
    n = len(cols["loss"])
    if fmt == "history":
        p = tmp_path / "history.json"
        p.write_text(json.dumps({k: [float(x) for x in v] for k, v in cols.items()}))
    else:
        p = tmp_path / "training.log"
        with p.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["epoch", "learning_rate", "loss", "val_loss"])
            for e in range(n):
                w.writerow(
                    [
                        e,
                        repr(float(cols["learning_rate"][e])),
                        repr(float(cols["loss"][e])),
                        repr(float(cols["val_loss"][e])),
                    ]
                )
    return p


CASES = [(30, 0.1, 1, 0), (40, 0.2, 2, 1), (80, 0.5, 3, 2), (120, 0.2, 5, 3), (25, 0.1, 1, 4)]


@pytest.mark.parametrize("epochs,factor,patience,seed", CASES)
@pytest.mark.parametrize("fmt", ["history", "csvlogger"])
def test_an_eval_loss_frozen_under_a_decayed_rate_after_epoch_one_is_a_warning(
    tmp_path, epochs, factor, patience, seed, fmt
):
    cols = _keras_run(epochs, factor, patience, seed)
    assert (cols["learning_rate"] < 1e-8).sum() >= 6  # the variant does freeze for a while
    rep = judge(_write(tmp_path, cols, fmt))
    assert rep.verdict.value == "WARN", ids(rep)
    assert "TP-FROZEN-AFTER-LEARNING" in ids(rep) and "TP-LOSS-FROZEN" not in ids(rep)
    f = next(f for f in rep.findings if f.id == "TP-FROZEN-AFTER-LEARNING")
    assert f.data["series"] == "eval_loss" and f.data["lr_after"] < 1e-8
    assert "train loss fell" in f.message


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_an_eval_loss_frozen_under_a_live_rate_is_still_the_fail(tmp_path, seed):
    # the weights stopped changing while the logged rate did not: not a schedule's doing
    cols = _keras_run(40, 0.2, 2, seed, lr_live=True)
    rep = judge(_write(tmp_path, cols, "history"))
    assert "TP-LOSS-FROZEN" in ids(rep) and "TP-FROZEN-AFTER-LEARNING" not in ids(rep)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_run_that_never_learned_is_not_let_off_by_the_decayed_rate(tmp_path, seed):
    # the plateau scheduler cut the rate because nothing improved: the train loss held its
    # first level, so the decayed rate does not explain the freeze as a healthy run's
    cols = _keras_run(40, 0.2, 2, seed, learned=False)
    rep = judge(_write(tmp_path, cols, "history"))
    assert "TP-FROZEN-AFTER-LEARNING" not in ids(rep)
    assert rep.verdict.value == "FAIL", ids(rep)


@pytest.mark.parametrize("fmt", ["history", "csvlogger"])
def test_an_eval_loss_frozen_from_its_first_epoch_is_still_the_fail(tmp_path, fmt):
    # the eval loss never moved while the train loss fell: it was never computed from the
    # weights being trained (a stale copy evaluated), whatever the rate did later
    cols = _keras_run(40, 0.2, 2, 5)
    cols["val_loss"] = np.full(40, float(np.float32(cols["val_loss"][0])))
    rep = judge(_write(tmp_path, cols, fmt))
    assert "TP-LOSS-FROZEN" in ids(rep) and "TP-FROZEN-AFTER-LEARNING" not in ids(rep)


@pytest.mark.parametrize("seed", [0, 1])
def test_an_eval_loss_frozen_while_the_train_loss_still_falls_is_still_the_fail(tmp_path, seed):
    # no rate logged; the eval loss moved, then froze, while the train loss went on falling
    # at every epoch: the weights still change, so the evaluation is of a stale copy
    n = 40
    rng = np.random.default_rng(seed)
    train = 1.5 * np.exp(-np.arange(n) / 35) * np.exp(0.003 * rng.standard_normal(n))
    ev = 1.45 + 0.01 * np.sin(np.arange(n))  # it never fell: the stale copy's level
    ev[20:] = float(np.float32(ev[20]))
    p = tmp_path / "history.json"
    p.write_text(json.dumps({"loss": [float(x) for x in train], "val_loss": [float(x) for x in ev]}))
    rep = judge(p)
    assert "TP-LOSS-FROZEN" in ids(rep) and "TP-FROZEN-AFTER-LEARNING" not in ids(rep)


@pytest.mark.parametrize("k", [2, 10])
def test_an_eval_loss_frozen_at_a_uniform_guess_is_still_the_fail(tmp_path, k):
    # val_loss at ln(k) to float32 precision: outputs that ignore the input. The train loss
    # "fell" only because Keras's first epoch average holds the untrained start.
    cols = _keras_run(40, 0.2, 2, k)
    cols["loss"] = np.r_[1.3 * np.log(k), np.log(k) * np.exp(0.002 * np.random.default_rng(k).standard_normal(39))]
    frozen = cols["learning_rate"] < 1e-8
    cols["val_loss"] = np.log(k) * (1 + 1e-4 * np.random.default_rng(k + 1).standard_normal(40))
    cols["val_loss"][frozen] = float(np.float32(np.log(k)))
    rep = judge(_write(tmp_path, cols, "history"))
    assert "TP-FROZEN-AFTER-LEARNING" not in ids(rep) and rep.verdict.value == "FAIL", ids(rep)


@pytest.mark.parametrize("p", [0.8, 0.9])
def test_an_eval_loss_frozen_at_the_class_prior_after_epoch_one_is_still_the_fail(tmp_path, p):
    # a binary model that collapsed onto its class prior within epoch 1: the first epoch's
    # average holds the untrained start, and every later train loss sits at H(p), as the
    # frozen eval loss does; only that first average "fell"
    n = 30
    h = -p * np.log(p) - (1 - p) * np.log(1 - p)
    rng = np.random.default_rng(int(10 * p))
    train = np.r_[1.18 * h, h * np.exp(0.002 * rng.standard_normal(n - 1))]
    lr = 1e-3 * 0.1 ** np.minimum(np.arange(n) // 3, 9)
    ev = h * (1 + np.r_[0.04, 0.01, 0.003, 0.001, 1e-4 * rng.standard_normal(n - 4)])
    ev[lr < 1e-8] = float(np.float32(ev[int(np.flatnonzero(lr < 1e-8)[0])]))
    cols = {"loss": train, "val_loss": ev, "learning_rate": lr}
    rep = judge(_write(tmp_path, cols, "history"))
    assert "TP-FROZEN-AFTER-LEARNING" not in ids(rep) and rep.verdict.value == "FAIL", ids(rep)
