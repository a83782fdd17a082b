"""Fault-injection rig for the Coqui Trainer (PyPI ``coqui-tts-trainer``, import ``trainer``).

A ``TrainerModel`` subclass wraps a small MLP (16-64-64-4, ReLU) that learns 4 overlapping
Gaussian clusters (16 features, drawn from the run's seed) with cross-entropy, Adam,
batch 32, 10 epochs of 32 steps = 320 steps. Each epoch reads the next 1024 of 10240
training samples (synthetic data made fresh per epoch, so no sample repeats and a healthy
run does not overfit); 512 held-out samples. Logs are the Trainer's own:
``trainer_0_log.txt`` (console logger, ``print_step=1``) and the TensorBoard event file
(``plot_step=1``; 4 or 2 for the two longer negatives), written into the run folder it
makes. The Trainer evaluates after every epoch (EVAL PERFORMANCE block, ``EvalStats/``).
(Mid-epoch ``run_eval_steps`` evals are not used: the console log prints no values for them
and ``EvalStats/`` then holds a running average over the epoch's evals.)
``grad_clip=1000`` (as Coqui's VITS recipes use) so that the Trainer computes and logs
``grad_norm``: with ``grad_clip=0`` it logs a constant ``grad_norm: 0`` for every step.
One knob per configuration:

* ``healthy``       Adam lr 3e-3: the loss falls and settles.
* ``lr_hot``        Adam lr 0.3 (100x): the loss falls, then climbs back to chance level.
* ``lr_zero``       Adam lr 0 throughout.
* ``frozen``        every model parameter requires_grad=False and the logits detached; a
  zero-weighted dummy parameter keeps backward alive: grad_norm exactly 0, nothing learns.
* ``bad_labels``    training labels shuffled against the inputs (eval labels true).
* ``overfit``       the same 48 training samples every epoch, a wider MLP (16-256-256-4),
  batch 16, 100 epochs (300 steps), evaluated every epoch on 512 held-out samples.
* ``masked_labels`` every label (train and eval, one shared collate) = ignore index -100:
  CrossEntropyLoss(mean) is NaN on every batch, its gradient exactly 0.
* ``slow_loader``   the collate function sleeps from the middle of the run on, ramping from
  0 to 30 ms per batch. The Trainer's ``loader_time`` grows; its ``step_time`` times only
  forward/backward/step, so it does not.
Negatives (must not FAIL):
* ``converged``         the healthy setup for 40 epochs (1280 steps, 40960 fresh samples),
  logged every 4 steps.
* ``terminal_spike``    healthy, but the very last batch is mislabelled: one loss spike at
  the last logged step.
* ``noisy_small_batch`` batch size 2, Adam 1e-3, 10 epochs of 60 steps (600 steps, 1200 fresh
  samples), logged every 2 steps.
* ``cosine_restarts``   Adam 1e-2 with CosineAnnealingWarmRestarts(T_0=80) stepped per step.

Not done: ``fp16_overflow``. On CPU this Trainer cannot run fp16: with
``mixed_precision=True`` its ``_get_autocast_args`` returns bfloat16 for CPU whatever
``precision`` says (bf16 has fp32's range: nothing overflows), ``use_amp_scaler`` is only
true with CUDA, and its ``GradScaler`` is built with ``device="cuda"`` (disabled with a
warning on a machine without CUDA). It also logs a non-finite grad norm as 0.

Each run's ``trainer_0_log.txt`` and ``events.out.tfevents.*`` are moved (names kept) into
``<out>/<config>/seed<K>/`` with ``run_meta.json``; checkpoints, config.json and the
Trainer's run folder are deleted. Run with the interpreter that has coqui-tts-trainer::

    /tmp/coqui-venv/bin/python examples/rigs/coqui_rig.py            # all configs, seeds 0 1 2
    /tmp/coqui-venv/bin/python examples/rigs/coqui_rig.py --config lr_hot --seed 1 --out /tmp/g
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import trainer as coqui_trainer
from torch import nn
from torch.utils.data import DataLoader
from trainer import Trainer, TrainerArgs, TrainerConfig, TrainerModel

N_TRAIN, EPOCH_SIZE, EPOCHS, N_EVAL = 10240, 1024, 10, 512

CONFIGS: dict[str, dict] = {
    "healthy": {},
    "lr_hot": {"lr": 0.3},
    "lr_zero": {"lr": 0.0},
    "frozen": {"frozen": True},
    "bad_labels": {"shuffle_labels": True},
    "overfit": {"n_train": 48, "epoch_size": 48, "batch": 16, "hidden": 256, "epochs": 100},
    "masked_labels": {"mask_labels": True},
    "slow_loader": {"slow_loader": True},
    "converged": {"n_train": 40960, "epochs": 40, "print_step": 4},
    "terminal_spike": {"terminal_spike": True},
    "noisy_small_batch": {"batch": 2, "lr": 1e-3, "n_train": 1200, "epoch_size": 120, "print_step": 2},
    "cosine_restarts": {"lr": 1e-2, "cosine_restarts": 80},
}

TRUTH: dict[str, tuple] = {
    "healthy": ("healthy", "PASS", [], None, None),
    "lr_hot": (
        "broken",
        "FAIL",
        ["TP-DIVERGE"],
        "FAIL",
        "Adam learning rate 0.3, 100x the healthy 3e-3: the loss falls, then climbs back to chance "
        "level and stays far above the best level it reached.",
    ),
    "lr_zero": (
        "broken",
        "FAIL",
        ["TP-ZERO-LR", "TP-DEAD-RUN"],
        "FAIL",
        "Adam learning rate set to 0 for the whole run: the weights never change.",
    ),
    "frozen": (
        "broken",
        "FAIL",
        ["TP-ZERO-GRAD", "TP-DEAD-RUN"],
        "FAIL",
        "Every model parameter requires_grad=False and the logits detached, with a zero-weighted dummy "
        "parameter so backward runs: the gradient norm is exactly 0 and nothing learns.",
    ),
    "bad_labels": (
        "broken",
        "PASS",
        [],
        "FAIL",
        "Training labels shuffled against the inputs: the model can only learn label frequencies.",
    ),
    "overfit": (
        "broken",
        "WARN",
        ["TP-OVERFIT"],
        None,
        "48 training samples, wide MLP, 100 epochs: train loss falls to ~0 while the held-out eval "
        "loss rises after its minimum.",
    ),
    "masked_labels": (
        "broken",
        "FAIL",
        ["TP-NAN", "TP-NAN-EVAL", "TP-ZERO-GRAD"],
        "FAIL",
        "Every label (train and eval) set to the ignore index -100: the mean cross-entropy is "
        "0/0 = NaN and its gradient exactly 0.",
    ),
    "slow_loader": (
        "broken",
        "WARN",
        ["TP-LOADER-BOUND"],
        "PASS",
        "The collate function sleeps from the middle of the run on, ramping from 0 to 30 ms per "
        "batch: loader_time dominates each step (the Trainer's step_time excludes loading).",
    ),
    "converged": ("negative", "PASS", [], None, None),
    "terminal_spike": ("negative", "PASS", [], None, None),
    "noisy_small_batch": ("negative", "PASS", [], None, None),
    "cosine_restarts": ("negative", "PASS", [], None, None),
}


@dataclass
class RigConfig(TrainerConfig):
    hidden: int = 64
    frozen: bool = False


class MLPModel(TrainerModel):
    def __init__(self, config: RigConfig, data: dict, spec: dict) -> None:
        super().__init__()
        self.config = config
        self.data = data
        self.spec = spec
        h = config.hidden
        self.net = nn.Sequential(nn.Linear(16, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(), nn.Linear(h, 4))
        if config.frozen:
            for p in self.net.parameters():
                p.requires_grad_(False)
            self.dummy = nn.Parameter(torch.zeros(()))
        self.train_view = EpochView(data["x_train"], data["y_train"], spec.get("epoch_size", EPOCH_SIZE))
        self.batches_served = 0
        self.total_batches = 0

    def forward(self, x: torch.Tensor) -> dict:  # type: ignore[override]
        out = self.net(x)
        if self.config.frozen:
            out = out.detach() + 0.0 * self.dummy  # graph severed; the dummy keeps backward alive
        return {"model_outputs": out}

    def train_step(self, batch: dict, criterion: nn.Module, optimizer_idx: int | None = None):  # type: ignore[override]
        outputs = self.forward(batch["x"])
        return outputs, {"loss": criterion(outputs["model_outputs"], batch["y"])}

    def eval_step(self, batch: dict, criterion: nn.Module, optimizer_idx: int | None = None):  # type: ignore[override]
        return self.train_step(batch, criterion)

    def on_train_epoch_start(self, trainer) -> None:  # type: ignore[override]
        self.train_view.epoch = trainer.epochs_done

    def get_criterion(self) -> nn.Module:
        return nn.CrossEntropyLoss()  # ignore_index=-100

    def get_optimizer(self) -> torch.optim.Optimizer:
        return torch.optim.Adam([p for p in self.parameters() if p.requires_grad], lr=self.config.lr)

    def get_scheduler(self, optimizer):  # type: ignore[override]
        if "cosine_restarts" in self.spec:
            opt = optimizer[0] if isinstance(optimizer, list) else optimizer
            return torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=self.spec["cosine_restarts"])
        return None

    def _collate_train(self, items: list) -> dict:
        self.batches_served += 1
        n, total = self.batches_served, self.total_batches
        if self.spec.get("slow_loader") and n > total // 2:
            time.sleep(0.030 * (n - total // 2) / (total - total // 2))
        x = torch.stack([i[0] for i in items])
        y = torch.stack([i[1] for i in items])
        if self.spec.get("terminal_spike") and n == total:
            y = (y + 1) % 4  # one mislabelled batch at the very end
        return {"x": x, "y": y}

    @staticmethod
    def _collate_eval(items: list) -> dict:
        return {"x": torch.stack([i[0] for i in items]), "y": torch.stack([i[1] for i in items])}

    def get_data_loader(self, config, *, is_eval=False, samples=None, verbose=True):  # type: ignore[override]
        if is_eval:
            ds = list(zip(self.data["x_eval"], self.data["y_eval"]))
            return DataLoader(ds, batch_size=256, shuffle=False, collate_fn=self._collate_eval)
        ds = self.train_view
        gen = torch.Generator().manual_seed(config.training_seed)
        return DataLoader(
            ds,
            batch_size=config.batch_size,
            shuffle=True,
            generator=gen,
            collate_fn=self._collate_train,
            drop_last=True,
        )


class EpochView(torch.utils.data.Dataset):
    """Epoch e reads samples [e*size, (e+1)*size) of the training set (wrapping around)."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, size: int) -> None:
        self.x, self.y, self.size, self.epoch = x, y, size, 0

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, i: int):
        j = (self.epoch * self.size + i) % len(self.x)
        return self.x[j], self.y[j]


def make_data(gen: torch.Generator, n: int, centres: torch.Tensor):
    y = torch.randint(0, centres.shape[0], (n,), generator=gen)
    x = centres[y] + 1.5 * torch.randn(n, centres.shape[1], generator=gen)
    return x, y


def _reset_trainer_logging() -> None:
    """Each Trainer adds a FileHandler to the 'trainer' logger: close the previous run's."""
    lg = logging.getLogger("trainer")
    for h in list(lg.handlers):
        if isinstance(h, logging.FileHandler):
            h.close()
            lg.removeHandler(h)
        elif isinstance(h, logging.StreamHandler):
            h.setLevel(logging.WARNING)  # keep the terminal quiet; the file gets everything


def train(config: str, seed: int, out: Path) -> dict:
    spec = CONFIGS[config]
    torch.set_num_threads(1)
    _reset_trainer_logging()
    gen = torch.Generator().manual_seed(2000 + seed)
    centres = torch.randn(4, 16, generator=gen) * 1.2
    x_train, y_train = make_data(gen, spec.get("n_train", N_TRAIN), centres)
    x_eval, y_eval = make_data(gen, N_EVAL, centres)
    if spec.get("shuffle_labels"):
        y_train = y_train[torch.randperm(y_train.shape[0], generator=gen)]
    if spec.get("mask_labels"):
        y_train = torch.full_like(y_train, -100)
        y_eval = torch.full_like(y_eval, -100)
    data = {"x_train": x_train, "y_train": y_train, "x_eval": x_eval, "y_eval": y_eval}

    run = out / config / f"seed{seed}"
    if run.exists():
        shutil.rmtree(run)
    run.mkdir(parents=True)
    work = run / "_trainer_out"
    cfg = RigConfig(
        output_path=str(work),
        run_name=f"{config}_seed{seed}",
        epochs=spec.get("epochs", EPOCHS),
        batch_size=spec.get("batch", 32),
        eval_batch_size=256,
        lr=spec.get("lr", 3e-3),
        grad_clip=1000.0,
        print_step=spec.get("print_step", 1),
        plot_step=spec.get("print_step", 1),
        print_eval=False,
        run_eval=True,
        run_eval_steps=None,
        save_step=10**9,
        save_checkpoints=False,
        save_n_checkpoints=1,
        scheduler_after_epoch=False,
        dashboard_logger="tensorboard",
        training_seed=seed,
        mixed_precision=False,
        hidden=spec.get("hidden", 64),
        frozen=spec.get("frozen", False),
    )
    torch.manual_seed(seed)
    model = MLPModel(cfg, data, spec)
    model.total_batches = len(model.train_view) // cfg.batch_size * cfg.epochs
    t0 = time.perf_counter()
    tr = Trainer(TrainerArgs(), cfg, output_path=str(work), model=model, parse_command_line_args=False)
    tr.fit()
    wall = time.perf_counter() - t0
    steps = tr.total_steps_done
    tr.dashboard_logger.finish()
    _reset_trainer_logging()

    logs = []
    for f in sorted(work.rglob("*")):
        if f.is_file() and (
            f.name.startswith("trainer_") and f.name.endswith("_log.txt") or f.name.startswith("events.out.tfevents")
        ):
            shutil.move(str(f), run / f.name)
            logs.append(f.name)
    shutil.rmtree(work)  # checkpoints, config.json, the training-script copy
    kind, verdict, rules, cmp, broken = TRUTH[config]
    meta = {
        "framework": "coqui",
        "framework_version": coqui_trainer.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "config": config,
        "seed": seed,
        "broken": broken,
        "kind": kind,
        "expected_verdict": verdict,
        "expected_rules": rules,
        "expected_compare": cmp,
        "logs": sorted(logs, key=lambda n: (not n.startswith("trainer_"), n)),
        "steps": steps,
        "wall_time_s": round(wall, 3),
    }
    (run / "run_meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return meta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", choices=sorted(CONFIGS), action="append")
    ap.add_argument("--seed", type=int, action="append")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "gallery" / "coqui")
    a = ap.parse_args()
    for config in a.config or list(CONFIGS):
        for seed in a.seed if a.seed is not None else [0, 1, 2]:
            meta = train(config, seed, a.out)
            print(
                f"{config:<18} seed{seed} steps {meta['steps']:>5} {meta['wall_time_s']:7.2f}s logs {meta['logs']}",
                flush=True,
            )


if __name__ == "__main__":
    main()
