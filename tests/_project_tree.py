"""A throwaway project as people keep one: configs, empty files, source files named like
logs, a FIFO, caches, one HF output folder (checkpoints and event files) and one
Lightning version folder (CSV and event file), each run written by the real writers'
layout. ``doctor`` on it must count only the runs."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path


def write_non_logs(root: Path) -> None:
    """Files of a repository that are not training logs, and must never count as runs."""
    (root / "configs").mkdir(parents=True, exist_ok=True)
    (root / "configs/train.json").write_text(json.dumps({"lr": 3e-4, "epochs": 10, "loss": "cross_entropy"}))
    (root / "configs/train.yaml").write_text("lr: 0.0003\nepochs: 10\nloss: cross_entropy\n")
    (root / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_size": 64, "loss": 0.5}))
    (root / "wandb-summary.json").write_text(json.dumps({"_step": 300, "loss": 0.31, "_runtime": 12.5}))
    (root / "empty.jsonl").write_text("")
    (root / "metrics.json").write_text("")
    (root / "logs").mkdir(exist_ok=True)
    (root / "logs/empty.csv").write_text("\n\n")
    (root / "src").mkdir(exist_ok=True)
    (root / "src/bench_tfevents.py").write_text("import time\nprint('tfevents bench', time.time())\n")
    (root / "src/tfevents.md").write_text("# Event files\n\nHow we read tfevents.\n")  # beside the .py
    (root / "src/metrics.py").write_text("def loss(x):\n    return x\n")
    (root / "src/metrics.txt").write_text("accuracy is computed per batch\n")
    (root / "requirements.txt").write_text("torch\nnumpy\n")
    (root / "package.json").write_text(json.dumps({"name": "x", "version": "1.0.0"}))
    (root / "data.csv").write_text("id,text,label\n1,hello,0\n2,world,1\n")
    if hasattr(os, "mkfifo"):
        os.mkfifo(root / "metrics.jsonl")  # a FIFO named like a log: never opened
        os.mkfifo(root / "logs/train.log")
    for folder in (".git", ".venv/lib", "node_modules/x", ".cache", "env/lib/python3.11/site-packages/p"):
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / "metrics.jsonl").write_text(json.dumps({"step": 1, "loss": float("nan")}) + "\n")
    (root / ".venv/pyvenv.cfg").write_text("home = /usr\n")


def hf_history(steps: int = 300, every: int = 10, diverge_at: int | None = None) -> list[dict]:
    """An HF Trainer log_history of a decaying loss (or one that diverges from ``diverge_at``)."""
    out = []
    for s in range(every, steps + every, every):
        loss = 2.5 * math.exp(-s / 150) + 0.3
        if diverge_at is not None and s > diverge_at:
            loss *= 1.05 ** (s - diverge_at)
        out.append(
            {
                "epoch": s / 100,
                "grad_norm": 1.0 + 0.1 * math.sin(s),
                "learning_rate": 5e-5 * (1 - s / (steps + every)),
                "loss": loss,
                "step": s,
            }
        )
    return out


def write_hf_output(out: Path, history: list[dict], checkpoints=(100, 200), events: bool = True) -> None:
    """An HF output folder: ``trainer_state.json``, ``checkpoint-N/`` snapshots, the
    ``all_results.json`` summary and ``runs/<date>_<host>/`` event file of the same run."""
    from torch.utils.tensorboard import SummaryWriter

    last = history[-1]["step"]

    def state(upto: int) -> dict:
        return {
            "global_step": upto,
            "max_steps": last,
            "num_train_epochs": 3,
            "epoch": upto / 100,
            "log_history": [r for r in history if r["step"] <= upto],
            "logging_steps": 10,
        }

    for ck in checkpoints:
        (out / f"checkpoint-{ck}").mkdir(parents=True, exist_ok=True)
        (out / f"checkpoint-{ck}/trainer_state.json").write_text(json.dumps(state(ck), indent=2))
    out.mkdir(parents=True, exist_ok=True)
    (out / "trainer_state.json").write_text(json.dumps(state(last), indent=2))
    (out / "all_results.json").write_text(json.dumps({"epoch": last / 100, "train_loss": history[-1]["loss"]}))
    if events:
        w = SummaryWriter(str(out / "runs" / "Dec02_10-00-00_host"))
        for r in history:
            for tag, key in (
                ("train/loss", "loss"),
                ("train/learning_rate", "learning_rate"),
                ("train/grad_norm", "grad_norm"),
                ("train/epoch", "epoch"),
            ):
                w.add_scalar(tag, r[key], r["step"])
        w.close()


def write_lightning_version(v: Path, steps: int = 2000, nan_at: int | None = None) -> None:
    """A Lightning ``version_N/`` folder with both loggers: ``metrics.csv`` (CSVLogger) and
    an event file (TensorBoardLogger), the same values."""
    from torch.utils.tensorboard import SummaryWriter

    v.mkdir(parents=True, exist_ok=True)
    (v / "hparams.yaml").write_text("lr: 0.001\n")
    rows = ["epoch,step,train_loss,val_loss"]
    w = SummaryWriter(str(v))
    for s in range(49, steps, 50):
        loss = 1.5 * math.exp(-s / 800) + 0.2
        if nan_at is not None and s >= nan_at:
            loss = float("nan")
        rows.append(f"{s // 500},{s},{loss!r},")
        w.add_scalar("train_loss", loss, s)
        w.add_scalar("epoch", s // 500, s)
        if (s + 1) % 500 == 0:
            rows.append(f"{s // 500},{s},,{loss + 0.05!r}")
            w.add_scalar("val_loss", loss + 0.05, s)
    w.close()
    (v / "metrics.csv").write_text("\n".join(rows) + "\n")


def build_project(root: Path) -> Path:
    """The whole throwaway project of issue 18: non-logs, one healthy HF output folder and
    one healthy Lightning version folder. Returns ``root``."""
    write_non_logs(root)
    write_hf_output(root / "outputs" / "bert-run", hf_history())
    write_lightning_version(root / "lightning_logs" / "version_0")
    return root
