"""Fault-injection rig for a raw PyTorch loop logged through ``trainproof.watch``.

A small MLP (16-64-64-4, ReLU) learns 4 overlapping Gaussian clusters (16 features;
4096 train / 512 held-out samples, the same for every seed), Adam, batch 32, 300 steps.
The loop logs through trainproof's in-loop monitor::

    mon = trainproof.watch(model, opt, check_every=50, policy="silent",
                           log_path=<run>/metrics.jsonl, max_steps=STEPS)
    loss.backward(); mon.log(step, loss.item(), eval_loss=...); opt.step()

so every step's line holds loss, grad_norm (L2 over every parameter gradient), lr and
step_time (wall time between two ``log`` calls), plus eval_loss every 10 steps (on the
held-out set) and any extra metric a configuration adds. One knob per configuration:

* ``healthy``       Adam lr 3e-3: the loss falls and settles.
* ``lr_hot``        Adam lr 0.3 (100x healthy): the loss first falls, then climbs back to
  chance level (ReLUs die, the net predicts label frequencies) and stays there.
* ``lr_zero``       Adam lr 0 throughout: nothing is learned.
* ``frozen``        every model parameter requires_grad=False and the logits detached; the
  loss gets ``+ 0 * dummy`` on a dummy parameter registered in the model so backward runs:
  the only gradient is exactly 0, the loss never improves.
* ``bad_labels``    the training labels shuffled against the inputs (eval labels true): the
  model can only learn the label frequencies; compare vs healthy shows the floor far above.
* ``overfit``       48 training samples, a wider MLP (16-256-256-4), full batch, 400 steps
  of Adam 3e-3, eval on 512 held-out samples: train loss -> 0 while eval loss rises.
* ``fp16_overflow`` autocast(cpu, float16) with a GradScaler forced to grow every 3 steps
  from 2^17: the scaled fp16 gradients keep overflowing to inf; the scaler skips those steps
  and halves the scale (about one step in four is skipped; the logged grad_norm, read after
  ``scaler.unscale_``, is inf on them). ``loss_scale`` is logged as well.
* ``masked_labels`` every label (train and eval, one shared collate) set to the ignore
  index -100: CrossEntropyLoss(mean) is 0/0 = NaN on every batch, and its gradient is
  exactly 0 (what torch really gives), so nothing is learned.
* ``slow_loader``   the batch generator sleeps 0 ms for the first half of the run, then
  from 0 ramping up to 30 ms per batch: step time grows ~20x in the second half. The
  loop also logs ``data_time`` (time spent waiting on the generator).
Negatives (must not FAIL):
* ``converged``         the healthy setup run for 1200 steps on 65536 training samples (less
  than one epoch, so no sample is seen twice): long flat-ish improving tail.
* ``terminal_spike``    healthy, but the very last batch is mislabelled (every label moved
  to the next class): one loss spike at the last logged step only.
* ``noisy_small_batch`` batch size 2, Adam 1e-3, 600 steps: noisy loss that trends down.
* ``cosine_restarts``   Adam 1e-2 with CosineAnnealingWarmRestarts(T_0=75): four cycles.

Each run writes ``metrics.jsonl`` (the monitor's own log) and ``run_meta.json`` into
``<out>/<config>/seed<K>/``. Usage (CPU only, a few seconds per run)::

    python examples/rigs/torch_rig.py                          # every config, seeds 0 1 2
    python examples/rigs/torch_rig.py --config lr_hot --seed 1 --out /tmp/g
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from pathlib import Path

import torch
from torch import nn

import trainproof

STEPS = 300
BATCH = 32
EVAL_EVERY = 10
N_TRAIN, N_EVAL = 4096, 512

CONFIGS: dict[str, dict] = {
    "healthy": {},
    "lr_hot": {"lr": 0.3},
    "lr_zero": {"lr": 0.0},
    "frozen": {"frozen": True},
    "bad_labels": {"shuffle_labels": True},
    "overfit": {"n_train": 48, "batch": 48, "hidden": 256, "steps": 400},
    "fp16_overflow": {"fp16": True},
    "masked_labels": {"mask_labels": True},
    "slow_loader": {"slow_loader": True},
    "converged": {"steps": 1200, "n_train_total": 65536},
    "terminal_spike": {"terminal_spike": True},
    "noisy_small_batch": {"batch": 2, "lr": 1e-3, "steps": 600},
    "cosine_restarts": {"lr": 1e-2, "cosine_restarts": 75},
}

# kind, expected single-run verdict, expected rules, expected compare vs same-seed healthy,
# what was broken. Decided from the mechanism, before running trainproof.
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
        "48 training samples, wide MLP, full batch, 400 steps: train loss falls to ~0 while the "
        "held-out eval loss rises after its minimum.",
    ),
    "fp16_overflow": (
        "broken",
        "WARN",
        ["TP-GRAD-OVERFLOW-SKIPPED"],
        "PASS",
        "fp16 autocast with a GradScaler forced to double its scale every 3 good steps: scaled "
        "fp16 gradients overflow to inf about one step in four and the scaler skips those steps.",
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
        ["TP-STEP-CLIFF", "TP-LOADER-BOUND"],
        "PASS",
        "The batch generator sleeps from the middle of the run on, ramping from 0 to 30 ms per "
        "batch: the loop becomes loader-bound and steps ~20x slower.",
    ),
    "converged": ("negative", "PASS", [], None, None),
    "terminal_spike": ("negative", "PASS", [], None, None),
    "noisy_small_batch": ("negative", "PASS", [], None, None),
    "cosine_restarts": ("negative", "PASS", [], None, None),
}


class MLP(nn.Module):
    def __init__(self, hidden: int, frozen: bool) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 4)
        )
        self.frozen = frozen
        if frozen:
            for p in self.net.parameters():
                p.requires_grad_(False)
            self.dummy = nn.Parameter(torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.net(x)
        if self.frozen:
            out = out.detach() + 0.0 * self.dummy  # graph severed; the dummy keeps backward alive
        return out


def make_data(gen: torch.Generator, n: int, centres: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    y = torch.randint(0, centres.shape[0], (n,), generator=gen)
    x = centres[y] + 1.5 * torch.randn(n, centres.shape[1], generator=gen)
    return x, y


def batches(x, y, batch, steps, gen, slow: bool, spike_last: bool):
    """The training batches, one per step (the 'loader')."""
    for step in range(steps):
        if slow and step >= steps // 2:
            time.sleep(0.030 * (step - steps // 2 + 1) / (steps - steps // 2))
        idx = torch.randint(0, x.shape[0], (batch,), generator=gen)
        xb, yb = x[idx], y[idx]
        if spike_last and step == steps - 1:
            yb = (yb + 1) % 4  # one mislabelled batch at the very end
        yield xb, yb


def train(config: str, seed: int, out: Path) -> dict:
    spec = CONFIGS[config]
    torch.set_num_threads(1)
    steps = spec.get("steps", STEPS)
    batch = spec.get("batch", BATCH)
    lr = spec.get("lr", 3e-3)
    # One task for every seed (the seed changes the initial weights and the batch order),
    # so healthy runs of different seeds are comparable and `compare` across seeds is fair.
    gen = torch.Generator().manual_seed(1000)
    centres = torch.randn(4, 16, generator=gen) * 1.2
    x_train, y_train = make_data(gen, spec.get("n_train_total", N_TRAIN), centres)
    x_eval, y_eval = make_data(gen, N_EVAL, centres)
    if "n_train" in spec:
        x_train, y_train = x_train[: spec["n_train"]], y_train[: spec["n_train"]]
    if spec.get("shuffle_labels"):
        y_train = y_train[torch.randperm(y_train.shape[0], generator=gen)]
    if spec.get("mask_labels"):  # one collate for train and eval masks everything
        y_train = torch.full_like(y_train, -100)
        y_eval = torch.full_like(y_eval, -100)
    torch.manual_seed(seed)
    model = MLP(spec.get("hidden", 64), spec.get("frozen", False))
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    sched = None
    if "cosine_restarts" in spec:
        sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=spec["cosine_restarts"])
    scaler = None
    if spec.get("fp16"):
        scaler = torch.amp.GradScaler(
            "cpu", init_scale=2.0**17, growth_factor=2.0, backoff_factor=0.5, growth_interval=3
        )
    loss_fn = nn.CrossEntropyLoss()  # ignore_index=-100

    run = out / config / f"seed{seed}"
    run.mkdir(parents=True, exist_ok=True)
    for old in run.iterdir():
        old.unlink()
    log = run / "metrics.jsonl"
    mon = trainproof.watch(model, opt, check_every=50, policy="silent", log_path=log, max_steps=steps)
    loader = batches(
        x_train,
        y_train,
        batch,
        steps,
        torch.Generator().manual_seed(seed),
        spec.get("slow_loader", False),
        spec.get("terminal_spike", False),
    )
    t0 = time.perf_counter()
    step = 0
    while True:
        t_fetch = time.perf_counter()
        try:
            xb, yb = next(loader)
        except StopIteration:
            break
        data_time = time.perf_counter() - t_fetch
        step += 1
        model.train()
        opt.zero_grad()
        extra: dict[str, float] = {}
        if scaler is not None:
            with torch.autocast("cpu", dtype=torch.float16):
                loss = loss_fn(model(xb), yb)
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            extra["loss_scale"] = scaler.get_scale()
        else:
            loss = loss_fn(model(xb), yb)
            loss.backward()
        if spec.get("slow_loader"):
            extra["data_time"] = data_time
        eval_loss = None
        if step % EVAL_EVERY == 0:
            model.eval()
            with torch.no_grad():
                eval_loss = loss_fn(model(x_eval), y_eval).item()
        mon.log(step, loss.item(), eval_loss=eval_loss, **extra)
        if scaler is not None:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        if sched is not None:
            sched.step()
    wall = time.perf_counter() - t0
    mon.close()

    kind, verdict, rules, cmp, broken = TRUTH[config]
    meta = {
        "framework": "torch",
        "framework_version": torch.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "config": config,
        "seed": seed,
        "broken": broken,
        "kind": kind,
        "expected_verdict": verdict,
        "expected_rules": rules,
        "expected_compare": cmp,
        "logs": ["metrics.jsonl"],
        "steps": step,
        "wall_time_s": round(wall, 3),
    }
    (run / "run_meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return meta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", choices=sorted(CONFIGS), action="append")
    ap.add_argument("--seed", type=int, action="append")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "gallery" / "torch")
    a = ap.parse_args()
    for config in a.config or list(CONFIGS):
        for seed in a.seed if a.seed is not None else [0, 1, 2]:
            meta = train(config, seed, a.out)
            rows = [json.loads(line) for line in open(a.out / config / f"seed{seed}" / "metrics.jsonl")]
            losses = [r["loss"] for r in rows]
            evals = [r["eval_loss"] for r in rows if "eval_loss" in r]
            print(
                f"{config:<18} seed{seed} steps {meta['steps']:>5} {meta['wall_time_s']:7.2f}s loss "
                f"{losses[0]:.4g} -> min {min(losses):.4g} -> {losses[-1]:.4g} "
                f"eval {evals[0]:.4g} -> min {min(evals):.4g} -> {evals[-1]:.4g} "
                f"nonfinite loss {sum(not math.isfinite(v) for v in losses)} "
                f"grad {sum(not math.isfinite(r['grad_norm']) for r in rows)}",
                flush=True,
            )


if __name__ == "__main__":
    main()
