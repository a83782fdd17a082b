"""Train a tiny real model on CPU and write its metrics as JSONL and CSV.

This is the rig behind ``examples/``: one small multi-layer perceptron on a synthetic
classification task (Gaussian clusters, 4 classes), trained with plain PyTorch for a few
hundred steps, with one knob set per configuration:

* ``healthy``  Adam, lr 3e-3: the loss falls and settles.
* ``lr_hot``   SGD with lr 3.0 (about 30x a workable SGD rate here), no clipping: the loss
  explodes within the first logs and then is NaN.
* ``lr_zero``  Adam, lr 0: nothing is learned; the loss stays where it started.
* ``diverge``  Adam at 3e-3 for 100 steps, then 0.3: the loss falls, climbs back, stays high.
* ``bad_labels`` labels shuffled against the inputs: looks like a learner on its own curve;
  `trainproof compare` against ``healthy_seed1`` shows its floor far above.
* ``healthy_seed1`` the healthy configuration at another model seed (the baseline).

Each run writes ``metrics.jsonl`` and ``metrics.csv`` (the same rows) and
``run_meta.json`` (how it was made) into ``examples/<config>/``.

Usage (needs torch; CPU only, a few seconds per run)::

    python examples/rig/train_tiny.py                 # every configuration
    python examples/rig/train_tiny.py --config healthy --out /tmp/ex
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import platform
import time
from pathlib import Path

import torch
from torch import nn

CONFIGS = {
    "healthy": {"optimizer": "adam", "lr": 3e-3},
    # The same configuration at another seed: a second healthy run, the baseline of
    # `trainproof compare` in the tests and the README.
    "healthy_seed1": {"optimizer": "adam", "lr": 3e-3, "seed": 1},
    "lr_hot": {"optimizer": "sgd", "lr": 3.0},
    "lr_zero": {"optimizer": "adam", "lr": 0.0},
    # A schedule that jumps from a good rate to one 100x too high after 100 steps: the
    # loss falls, then climbs back and stays high (no NaN).
    "diverge": {"optimizer": "adam", "lr": 3e-3, "lr_after": 0.3, "switch_step": 100},
    # Labels shuffled once against the inputs: the model can only learn the label
    # frequencies, so its loss floor sits far above a healthy run's.
    "bad_labels": {"optimizer": "adam", "lr": 3e-3, "shuffle_labels": True},
}
#: What trainproof should say about each run on its own (bad_labels needs `compare`).
EXPECTED_VERDICT = {
    "healthy": "PASS",
    "healthy_seed1": "PASS",
    "lr_hot": "FAIL",
    "lr_zero": "FAIL",
    # shuffled labels on balanced classes hold the loss at ln(4) and the eval accuracy near
    # 1/4: TP-CHANCE-LEVEL
    "diverge": "FAIL",
    "bad_labels": "FAIL",
}
STEPS = 300
LOG_EVERY = 5
EVAL_EVERY = 50
BATCH = 32
SEED = 0


def make_data(gen: torch.Generator, n: int, centres: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` samples of 16 features around 4 class centres, with heavy overlap."""
    y = torch.randint(0, centres.shape[0], (n,), generator=gen)
    x = centres[y] + 1.5 * torch.randn(n, centres.shape[1], generator=gen)
    return x, y


def train(config: str, out: Path) -> dict:
    spec = CONFIGS[config]
    seed = spec.get("seed", SEED)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(SEED)  # the same data for every configuration
    centres = torch.randn(4, 16, generator=gen) * 1.2
    x_train, y_train = make_data(gen, 4096, centres)
    x_eval, y_eval = make_data(gen, 512, centres)
    if spec.get("shuffle_labels"):
        y_train = y_train[torch.randperm(y_train.shape[0], generator=gen)]
    gen = torch.Generator().manual_seed(seed)  # batch order follows the run's seed
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))
    if spec["optimizer"] == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=spec["lr"])
    else:
        opt = torch.optim.SGD(model.parameters(), lr=spec["lr"])
    loss_fn = nn.CrossEntropyLoss()
    rows: list[dict] = []
    window: list[float] = []
    t_last = time.perf_counter()
    for step in range(1, STEPS + 1):
        idx = torch.randint(0, x_train.shape[0], (BATCH,), generator=gen)
        model.train()
        loss = loss_fn(model(x_train[idx]), y_train[idx])
        opt.zero_grad()
        loss.backward()
        grad_norm = torch.linalg.vector_norm(
            torch.stack([p.grad.detach().norm() for p in model.parameters() if p.grad is not None])
        ).item()
        opt.step()
        if step == spec.get("switch_step"):
            for group in opt.param_groups:
                group["lr"] = spec["lr_after"]
        window.append(loss.item())
        if step % LOG_EVERY == 0:
            now = time.perf_counter()
            row = {
                "step": step,
                "epoch": round(step * BATCH / x_train.shape[0], 4),
                "loss": sum(window) / len(window),
                "grad_norm": grad_norm,
                "learning_rate": opt.param_groups[0]["lr"],
            }
            row["step_time"] = round((now - t_last) / LOG_EVERY, 6)
            t_last = now
            window.clear()
            if step % EVAL_EVERY == 0:
                model.eval()
                with torch.no_grad():
                    logits = model(x_eval)
                    row["eval_loss"] = loss_fn(logits, y_eval).item()
                    # A classifier's evaluation reports its accuracy too: on shuffled
                    # labels it sits at the majority class's share, near 1/4.
                    row["eval_accuracy"] = (logits.argmax(dim=1) == y_eval).float().mean().item()
            rows.append(row)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "metrics.jsonl", "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")  # NaN/Infinity tokens as Python writes them
    cols = ["step", "epoch", "loss", "grad_norm", "learning_rate", "step_time", "eval_loss", "eval_accuracy"]
    with open(out / "metrics.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for row in rows:
            w.writerow(["" if row.get(c) is None else repr(float(row[c])) if c != "step" else row[c] for c in cols])
    losses = [r["loss"] for r in rows]
    meta = {
        "config": config,
        "what": spec,
        "how": "examples/rig/train_tiny.py: 3-layer MLP (16-64-64-4), cross-entropy on 4 Gaussian clusters "
        f"(4096 train / 512 eval samples, one data seed {SEED}), batch {BATCH}, {STEPS} steps, loss "
        f"averaged over each {LOG_EVERY}-step logging window, eval every {EVAL_EVERY} steps, "
        f"model seed {seed}, CPU.",
        "expected_verdict": EXPECTED_VERDICT[config],
        "first_loss": losses[0],
        "last_loss": losses[-1],
        "nonfinite_losses": sum(1 for v in losses if not math.isfinite(v)),
        "torch": torch.__version__,
        "python": platform.python_version(),
    }
    (out / "run_meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return meta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", choices=sorted(CONFIGS), action="append")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent)
    a = ap.parse_args()
    for config in a.config or list(CONFIGS):
        meta = train(config, a.out / config)
        print(
            f"{config:<8} first loss {meta['first_loss']:.4g} last loss {meta['last_loss']:.4g} "
            f"non-finite {meta['nonfinite_losses']}"
        )


if __name__ == "__main__":
    main()
