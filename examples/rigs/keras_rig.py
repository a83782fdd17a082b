"""Fault-injection rig for Keras 3 (torch backend): real CSVLogger logs of broken runs.

One small Keras model (Dense 16-64-64-4, ReLU) is trained on CPU with ``model.fit`` on a
synthetic classification task (4 Gaussian clusters in 16 dimensions, class frequencies
55/25/12/8 %, generated with numpy; the same data for every configuration), with one
fault injected per configuration. Keras logs once per epoch, so a run is many short epochs: 100 epochs of 4
batches of 64 drawn from an 8192-sample pool (fresh samples every epoch), validation on
1024 held-out samples after every epoch.

Logger: ``keras.callbacks.CSVLogger("training.log")`` (the file name of the Keras docs'
example) -> ``<run>/training.log``, one row per epoch: ``epoch``, ``loss``, ``val_loss``
and the keys a small callback placed before it adds to the epoch's ``logs``:
``learning_rate`` (Keras 3's CSVLogger does not record it by itself; only the TensorBoard
callback and the LR callbacks add it), ``step_time`` and ``data_time`` (mean wall time
per training batch in the epoch, and the part of it spent fetching the batch from the
``PyDataset``) and, for the fp16 run only, ``loss_scale`` (the LossScaleOptimizer's scale).

``keras.callbacks.TensorBoard`` is NOT used: under the torch backend it imports
``tensorflow.summary`` to write (keras/src/callbacks/tensorboard.py), so without
TensorFlow installed ``fit`` dies with ``ModuleNotFoundError: No module named
'tensorflow'`` at the first write; tensorboard/tensorboardX are not used by it. No event
files can be produced here. Keras does not expose gradient norms either (none logged).

Configurations (healthy: plain SGD lr 0.05, batch 64, 100 epochs x 4 steps, float32):

* ``healthy``           sane setup: the loss falls and settles.
* ``lr_hot``            SGD lr 5.0 (100x): the loss explodes in the first epoch; with
                        Keras' Glorot init it does not turn NaN, the ReLU network dies and
                        sits at the label-frequency loss (~1.13 nats) for the rest of the run.
* ``lr_zero``           SGD lr 0 throughout: nothing is learned.
* ``frozen``            ``model.trainable = False`` before compile: no trainable weights,
                        the loss only moves with the batches drawn.
* ``bad_labels``        train labels shuffled once against the inputs (val labels true).
* ``overfit``           64 training samples (one pass = 4 batches of 16), 256-wide model,
                        SGD lr 0.2, 150 epochs: val loss rises while train loss falls.
* ``fp16_overflow``     ``mixed_float16`` policy (fp16 compute on CPU through the torch
                        backend; output layer float32 as Keras recommends) with a
                        ``LossScaleOptimizer`` forced to double its scale after every good
                        step (dynamic_growth_steps=1): the scaled fp16 gradients overflow on
                        about every other step, which the optimizer skips. Keras logs per
                        epoch and no gradient norm, so only ``loss_scale`` and a slower
                        loss show it.
* ``masked_labels``     every label (train and val) = -1 with
                        ``SparseCategoricalCrossentropy(ignore_class=-1)`` (the loss every
                        configuration uses): Keras averages over zero unmasked targets.
* ``slow_loader``       the ``PyDataset`` sleeps once per batch: 0 ms for the first half
                        of the run, then rising linearly to 100 ms at the end.
* negatives (must not FAIL):
  ``converged``         the healthy setup for 200 epochs (a long flat-ish, still
                        improving tail);
  ``terminal_spike``    the very last batch of the last epoch has every label rotated
                        (y+1)%4: one bad batch, so the last epoch's mean loss spikes;
  ``noisy_small_batch`` batch size 2 (4 batches per epoch, 150 epochs), SGD lr 0.02: a
                        noisy loss that still trends down;
  ``cosine_restarts``   SGD on ``CosineDecayRestarts(0.05, first_decay_steps=100,
                        t_mul=1)``: the learning rate restarts every 25 epochs.

Usage (CPU only, a few seconds per run)::

    python examples/rigs/keras_rig.py                       # every config, seeds 0 1 2
    python examples/rigs/keras_rig.py --config lr_hot --seed 1 --out /tmp/gallery

Writes ``<out>/keras/<config>/seed<K>/`` (default out: ``examples/gallery``) with
``training.log`` and ``run_meta.json``.
"""

from __future__ import annotations

import os

os.environ["KERAS_BACKEND"] = "torch"  # before keras is imported

import argparse
import csv
import json
import platform
import shutil
import sys
import time
import warnings
from pathlib import Path

import keras
import numpy as np
import torch

FRAMEWORK = "keras"
DATA_SEED = 1234
N_FEATURES = 16
N_CLASSES = 4
CLASS_P = (0.55, 0.25, 0.12, 0.08)  # label entropy 1.13 nats vs ln 4 = 1.39
IGNORE = -1
#: Cross-entropy of predicting the class frequencies: the loss of a model that learned nothing else.
LABEL_ENTROPY = float(-sum(p * np.log(p) for p in CLASS_P))
LOG_NAME = "training.log"

BASE = {
    "lr": 0.05,
    "batch": 64,
    "steps_per_epoch": 4,
    "epochs": 100,
    "hidden": 64,
    "n_train": 8192,
    "n_val": 1024,
}

#: config -> overrides of BASE, kind, what was broken, and the expectations (decided from
#: the mechanism and the rules' documentation, before running trainproof).
CONFIGS: dict[str, dict] = {
    "healthy": dict(over={}, kind="healthy", broken=None, verdict="PASS", rules=[], compare=None),
    "lr_hot": dict(
        over={"lr": 5.0},
        kind="broken",
        broken="SGD learning rate 5.0 instead of 0.05 (100x), no clipping: the loss "
        "explodes in the first epoch",  # + the outcome, appended after the run
        verdict="FAIL",
        rules=None,
        compare="FAIL",
    ),
    "lr_zero": dict(
        over={"lr": 0.0},
        kind="broken",
        broken="SGD learning rate 0 for the whole run.",
        verdict="FAIL",
        rules=["TP-ZERO-LR", "TP-DEAD-RUN"],
        compare="FAIL",
    ),
    "frozen": dict(
        over={"frozen": True},
        kind="broken",
        broken="model.trainable = False before compile: no trainable weights, "
        "nothing is updated (Keras logs no gradient norm).",
        verdict="FAIL",
        rules=["TP-DEAD-RUN"],
        compare="FAIL",
    ),
    "bad_labels": dict(
        over={"shuffle_labels": True},
        kind="broken",
        broken="Training labels shuffled once against the inputs (validation labels left true).",
        verdict="PASS",
        rules=[],
        compare="FAIL",
    ),
    "overfit": dict(
        over={"n_train": 64, "batch": 16, "hidden": 256, "epochs": 150, "lr": 0.2},
        kind="broken",
        broken="64 training samples, 256-wide model, SGD lr 0.2, 150 epochs: "
        "memorises the train set while val loss climbs.",
        verdict="WARN",
        rules=["TP-OVERFIT"],
        compare="PASS",
    ),
    "fp16_overflow": dict(
        over={"fp16": True},
        kind="broken",
        broken="mixed_float16 with a LossScaleOptimizer forced to double its "
        "scale after every good step (dynamic_growth_steps=1): fp16 "
        "gradients overflow on about every other step, which is "
        "skipped; per-epoch logs only show a slower loss.",
        verdict="PASS",
        rules=[],
        compare="PASS",
    ),
    "masked_labels": dict(
        over={"mask_labels": True},
        kind="broken",
        broken="Every label (train and val) = -1, the loss's ignore_class: no target is left to compute the loss on.",
        verdict="FAIL",
        rules=None,
        compare=None,
    ),
    "slow_loader": dict(
        over={"slow_loader": True},
        kind="broken",
        broken="The PyDataset sleeps once per batch: 0 ms for the first half of "
        "the run, then rising linearly to 100 ms.",
        verdict="WARN",
        rules=["TP-STEP-CLIFF", "TP-LOADER-BOUND"],
        compare="PASS",
    ),
    "converged": dict(over={"epochs": 200}, kind="negative", broken=None, verdict="PASS", rules=[], compare=None),
    "terminal_spike": dict(
        over={"terminal_spike": True}, kind="negative", broken=None, verdict="PASS", rules=[], compare=None
    ),
    "noisy_small_batch": dict(
        over={"batch": 2, "epochs": 150, "lr": 0.02},
        kind="negative",
        broken=None,
        verdict="PASS",
        rules=[],
        compare=None,
    ),
    "cosine_restarts": dict(
        over={"cosine_restarts": 100}, kind="negative", broken=None, verdict="PASS", rules=[], compare=None
    ),
}
SEEDS = (0, 1, 2)


def make_data(n_train: int, n_val: int) -> tuple[np.ndarray, ...]:
    """4 overlapping Gaussian clusters in 16-D with unequal class frequencies (CLASS_P, so
    that a model fed shuffled labels still lowers its loss by learning the frequencies);
    always the same draw (DATA_SEED)."""
    rng = np.random.default_rng(DATA_SEED)
    centres = rng.normal(size=(N_CLASSES, N_FEATURES))

    def draw(n: int) -> tuple[np.ndarray, np.ndarray]:
        y = rng.choice(N_CLASSES, size=n, p=CLASS_P)
        x = centres[y] + 2.0 * rng.normal(size=(n, N_FEATURES))
        return x.astype(np.float32), y.astype(np.int64)

    x_val, y_val = draw(n_val)
    x_tr, y_tr = draw(n_train)
    return x_tr, y_tr, x_val, y_val


class ClusterBatches(keras.utils.PyDataset):
    """``steps_per_epoch`` batches per epoch, taken in order from a seeded stream of
    permutations of the training pool. Optionally sleeps once per batch (slow loader)
    or rotates the labels of one batch (``bad_at``, a 0-based fetch count)."""

    def __init__(self, x, y, batch, steps_per_epoch, total_steps, seed, slow=False, max_sleep=0.100, bad_at=None):
        super().__init__(workers=1, use_multiprocessing=False)
        self.x, self.y, self.batch = x, y, batch
        self.steps_per_epoch, self.total = steps_per_epoch, total_steps
        rng = np.random.default_rng(seed)
        need = total_steps * batch
        self.stream = np.concatenate([rng.permutation(len(y)) for _ in range(need // len(y) + 1)])
        self.slow, self.max_sleep, self.bad_at = slow, max_sleep, bad_at
        self.fetches = 0
        self.last_fetch_s = 0.0

    def __len__(self):
        return self.steps_per_epoch

    def __getitem__(self, i):
        t0 = time.perf_counter()
        k = self.fetches
        self.fetches += 1
        if self.slow and k >= self.total // 2:
            frac = min(1.0, (k - self.total // 2 + 1) / (self.total - self.total // 2))
            time.sleep(self.max_sleep * frac)
        idx = self.stream[k * self.batch : (k + 1) * self.batch]
        x, y = self.x[idx], self.y[idx]
        if k == self.bad_at:
            y = (y + 1) % N_CLASSES
        self.last_fetch_s = time.perf_counter() - t0
        return x, y


class EpochExtras(keras.callbacks.Callback):
    """Adds learning_rate, step_time, data_time (and loss_scale with fp16) to each
    epoch's logs; placed before CSVLogger so that it records them."""

    def __init__(self, data: ClusterBatches):
        super().__init__()
        self.data = data

    def on_epoch_begin(self, epoch, logs=None):
        self.t_begin = self.prev_end = time.perf_counter()
        self.data_s, self.n = 0.0, 0

    def on_train_batch_begin(self, batch, logs=None):
        self.data_s += self.data.last_fetch_s

    def on_train_batch_end(self, batch, logs=None):
        self.prev_end = time.perf_counter()
        self.n += 1

    def on_epoch_end(self, epoch, logs=None):
        opt = self.model.optimizer
        logs["learning_rate"] = float(keras.ops.convert_to_numpy(opt.learning_rate))
        logs["step_time"] = (self.prev_end - self.t_begin) / max(self.n, 1)
        logs["data_time"] = self.data_s / max(self.n, 1)
        if isinstance(opt, keras.optimizers.LossScaleOptimizer):
            logs["loss_scale"] = float(keras.ops.convert_to_numpy(opt.dynamic_scale))


def run(config: str, seed: int, out_root: Path) -> dict:
    spec = CONFIGS[config]
    hp = dict(BASE, **spec["over"])
    run_dir = out_root / FRAMEWORK / config / f"seed{seed}"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)

    keras.utils.set_random_seed(seed)
    keras.mixed_precision.set_global_policy("mixed_float16" if hp.get("fp16") else "float32")
    x_tr, y_tr, x_val, y_val = make_data(hp["n_train"], hp["n_val"])
    if hp.get("shuffle_labels"):
        y_tr = y_tr[np.random.default_rng(DATA_SEED + 1).permutation(len(y_tr))]
    if hp.get("mask_labels"):
        y_tr = np.full_like(y_tr, IGNORE)
        y_val = np.full_like(y_val, IGNORE)

    epochs, spe = hp["epochs"], hp["steps_per_epoch"]
    total = epochs * spe
    data = ClusterBatches(
        x_tr,
        y_tr,
        hp["batch"],
        spe,
        total,
        seed,
        slow=bool(hp.get("slow_loader")),
        bad_at=total - 1 if hp.get("terminal_spike") else None,
    )

    h = hp["hidden"]
    model = keras.Sequential(
        [
            keras.Input((N_FEATURES,)),
            keras.layers.Dense(h, activation="relu"),
            keras.layers.Dense(h, activation="relu"),
            keras.layers.Dense(N_CLASSES, dtype="float32"),  # logits in float32 (Keras' AMP advice)
        ]
    )
    if hp.get("frozen"):
        model.trainable = False
    lr = hp["lr"]
    if hp.get("cosine_restarts"):
        lr = keras.optimizers.schedules.CosineDecayRestarts(
            hp["lr"], first_decay_steps=hp["cosine_restarts"], t_mul=1.0, m_mul=1.0
        )
    optimizer = keras.optimizers.SGD(learning_rate=lr)
    if hp.get("fp16"):
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer, initial_scale=2.0**15, dynamic_growth_steps=1)
    model.compile(
        optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=IGNORE)
    )
    callbacks = [EpochExtras(data), keras.callbacks.CSVLogger(str(run_dir / LOG_NAME))]
    t0 = time.perf_counter()
    model.fit(
        data,
        epochs=epochs,
        validation_data=(x_val, y_val),
        validation_batch_size=len(y_val),
        callbacks=callbacks,
        shuffle=False,
        verbose=0,
    )
    wall = time.perf_counter() - t0
    steps = int(keras.ops.convert_to_numpy(model.optimizer.iterations))
    keras.mixed_precision.set_global_policy("float32")

    meta = {
        "framework": FRAMEWORK,
        "framework_version": keras.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "config": config,
        "seed": seed,
        "broken": spec["broken"],
        "kind": spec["kind"],
        "expected_verdict": spec["verdict"],
        "expected_rules": expected_rules(config, run_dir),
        "expected_compare": spec["compare"],
        "logs": [LOG_NAME],
        "steps": total,
        "wall_time_s": round(wall, 3),
    }
    if config == "lr_hot":
        meta["broken"] += outcome(run_dir)
    if steps != total:  # LossScaleOptimizer counts only the steps it applied
        meta["broken"] += f" ({total - steps} of {total} steps skipped.)"
    (run_dir / "run_meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def _series(run_dir: Path, key: str) -> np.ndarray:
    with (run_dir / LOG_NAME).open() as fh:
        return np.array([float(r[key]) for r in csv.DictReader(fh) if r.get(key) not in (None, "")])


def expected_rules(config: str, run_dir: Path) -> list[str]:
    """Rules that should fire, from what the run physically did (NaN, exact zeros)."""
    rules = CONFIGS[config]["rules"]
    if rules is not None:
        return list(rules)
    loss, val = _series(run_dir, "loss"), _series(run_dir, "val_loss")
    out = []
    if not np.isfinite(loss).all():
        out.append("TP-NAN")
    elif len(loss) and (loss == 0).all():
        out.append("TP-ZERO-LOSS")
    # A run that exploded without NaN and then died at the label-frequency loss is still a
    # FAIL (expected_verdict), but no documented single-run rule is claimed for it.
    if len(val) and not np.isfinite(val).all():
        out.append("TP-NAN-EVAL")
    return out


def outcome(run_dir: Path) -> str:
    """A factual clause on how a run that blew up ended (NaN or a dead network)."""
    loss = _series(run_dir, "loss")
    bad = np.flatnonzero(~np.isfinite(loss))
    if len(bad):
        return f" and is NaN from epoch {int(bad[0])} on."
    tail = float(np.median(loss[-max(3, len(loss) // 10) :]))
    return (
        f" (epoch-0 mean {loss[0]:.3g}); no NaN: the ReLU network dies and ends at loss "
        f"{tail:.3f}, the label-frequency level ({LABEL_ENTROPY:.2f} nats)."
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", choices=sorted(CONFIGS), action="append")
    ap.add_argument("--seed", type=int, action="append")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "gallery")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    configs = args.config or list(CONFIGS)
    seeds = args.seed if args.seed is not None else list(SEEDS)
    t_all = time.perf_counter()
    for config in configs:
        for seed in seeds:
            meta = run(config, seed, args.out)
            print(
                f"{FRAMEWORK}/{config}/seed{seed}: {meta['steps']} steps, "
                f"{meta['wall_time_s']:.1f} s, expected {meta['expected_verdict']} "
                f"{meta['expected_rules']}",
                flush=True,
            )
    print(f"total {time.perf_counter() - t_all:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
