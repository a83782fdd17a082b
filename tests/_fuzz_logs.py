"""Valid training logs of every format, the mutations the fuzz tests apply to them, and the
CLI check every fuzzed input must pass.

Shared by ``tests/formats/test_fuzz_readers.py``, ``tests/cli/test_hostile_inputs.py``,
``evidence/robustness.py`` and ``evidence/atheris_fuzz.py``. Every valid log here is
written the way its real writer writes it (HF's ``json.dumps(indent=2, sort_keys=True)``,
Keras' ``csv.writer`` with ``\\r\\n``, Lightning's sparse rows, W&B's quoted export
header, Coqui's ``ConsoleLogger`` lines with ANSI codes, tqdm progress text around HF log
dicts, MLflow's ``<ms> <value> <step>`` lines, tensorboardX event files).
"""

from __future__ import annotations

import gzip
import json
import math
import os
import random
import re
import signal
import sqlite3
import struct
import tempfile
import threading
import time
import zlib
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import jsonschema
from click.testing import CliRunner
from hypothesis import strategies as st

from trainproof.cli import cli

from conftest import SCHEMA

# --------------------------------------------------------------------------- valid logs


def _curve(n: int, seed: int, diverge_at: int | None = None, nan_at: int | None = None) -> list[float]:
    """A decaying loss with deterministic noise; optionally exploding or turning NaN."""
    out = []
    x = seed * 7919 + 17
    for i in range(n):
        x = (x * 1103515245 + 12345) % (1 << 31)
        noise = (x / (1 << 31) - 0.5) * 0.06
        v = 0.8 + 1.5 * math.exp(-i / (n / 4)) + noise
        if diverge_at is not None and i >= diverge_at:
            v *= 3.0 ** (i - diverge_at + 1)
        if nan_at is not None and i >= nan_at:
            v = float("nan")
        out.append(round(v, 6))
    return out


N = 30  # records per log: enough for every trend check, small enough to judge in milliseconds


def _losses(kind: str) -> list[float]:
    return _curve(N, 1) if kind == "healthy" else _curve(N, 2, diverge_at=2 * N // 3)


def hf_entries(kind: str = "healthy") -> list[dict]:
    rows = []
    for i, loss in enumerate(_losses(kind)):
        step = 10 * (i + 1)
        rows.append(
            {
                "epoch": round(step / (10 * N), 4),
                "grad_norm": round(0.5 + 0.01 * (i % 7), 4),
                "learning_rate": 1e-4,
                "loss": loss,
                "step": step,
            }
        )
        if (i + 1) % 10 == 0:
            rows.append(
                {
                    "epoch": round(step / (10 * N), 4),
                    "eval_loss": round(loss + 0.05, 6),
                    "eval_runtime": 1.5,
                    "step": step,
                }
            )
    return rows


_HF_SUMMARY = {
    "epoch": 1.0,
    "step": 10 * N,
    "total_flos": 1.0e12,
    "train_loss": 1.2,
    "train_runtime": 12.5,
    "train_samples_per_second": 80.0,
}


def hf_parts(entries: list[dict], tail: bool = True) -> tuple[bytes, list[int]]:
    """A trainer_state.json as HF writes it, and the byte offset where each entry ends.

    With ``tail`` the keys HF sorts after ``log_history`` (``max_steps`` …) follow it."""
    head = (
        '{\n  "best_global_step": null,\n  "best_metric": null,\n  "epoch": 1.0,\n  "eval_steps": 100,\n'
        f'  "global_step": {10 * N},\n  "is_world_process_zero": true,\n  "log_history": [\n'
    )
    text = head
    ends = []
    for i, e in enumerate(entries):
        body = json.dumps(e, indent=2, sort_keys=True).replace("\n", "\n    ")
        text += ("" if i == 0 else ",\n") + "    " + body
        ends.append(len(text.encode()))
    text += "\n  ]"
    if tail:
        text += (
            f',\n  "logging_steps": 10,\n  "max_steps": {10 * N},\n  "num_train_epochs": 1,\n'
            '  "save_steps": 500,\n  "train_batch_size": 8\n}\n'
        )
    else:
        text += "\n}\n"
    return text.encode(), ends


def hf_log(kind: str = "healthy") -> bytes:
    return hf_parts(hf_entries(kind) + [_HF_SUMMARY])[0]


def jsonl_log(kind: str = "healthy") -> bytes:
    rows = [
        {"step": 10 * (i + 1), "loss": v, "learning_rate": 1e-4, "grad_norm": 0.5, "epoch": (i + 1) / N}
        for i, v in enumerate(_losses(kind))
    ]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def columns_log(kind: str = "healthy") -> bytes:
    """Keras' ``History.history`` as ``json.dump`` writes it: one line, a list per metric."""
    losses = _losses(kind)
    doc = {
        "loss": losses,
        "val_loss": [round(v + 0.05, 6) for v in losses],
        "learning_rate": [1e-4] * len(losses),
    }
    return json.dumps(doc).encode()


def csv_log(kind: str = "healthy") -> bytes:
    lines = ["step,loss,learning_rate,grad_norm"]
    lines += [f"{10 * (i + 1)},{v},0.0001,0.5" for i, v in enumerate(_losses(kind))]
    return ("\n".join(lines) + "\n").encode()


def lightning_log(kind: str = "healthy") -> bytes:
    """PyTorch Lightning CSVLogger: sparse rows, train/val/lr rows sharing a step."""
    lines = ["epoch,lr-Adam,step,train_loss,val_loss"]
    for i, v in enumerate(_losses(kind)):
        step = 10 * (i + 1) - 1
        lines.append(f",0.001,{step},,")
        lines.append(f"{i // 10},,{step},{v},")
        if (i + 1) % 10 == 0:
            lines.append(f"{i // 10},,{step},,{round(v + 0.05, 6)}")
    return ("\n".join(lines) + "\n").encode()


def keras_log(kind: str = "healthy") -> bytes:
    """Keras CSVLogger: epoch as the x axis, csv.writer's \\r\\n line ends."""
    lines = ["epoch,accuracy,learning_rate,loss,val_accuracy,val_loss"]
    for i, v in enumerate(_losses(kind)):
        lines.append(f"{i},{0.5 + i / (3 * N):.4f},0.001,{v},{0.5 + i / (4 * N):.4f},{round(v + 0.05, 6)}")
    return ("\r\n".join(lines) + "\r\n").encode()


def wandb_log(kind: str = "healthy") -> bytes:
    """A W&B chart export: quoted header, run-prefixed columns, __MIN/__MAX bands."""
    lines = ['"Step","run-a - train/loss","run-a - train/loss__MIN","run-a - train/loss__MAX"']
    for i, v in enumerate(_losses(kind)):
        lines.append(f"{10 * (i + 1)},{v},{round(v - 0.01, 6)},{round(v + 0.01, 6)}")
    return ("\n".join(lines) + "\n").encode()


_B, _U, _E = "\x1b[1m", "\x1b[4m", "\x1b[0m"


def coqui_log(kind: str = "healthy") -> bytes:
    """A Coqui Trainer trainer_0_log.txt (ConsoleLogger's lines, ANSI codes included)."""
    out = [
        " > Training Environment:",
        " | > Backend: Torch",
        " | > Mixed precision: False",
        " | > Current device: 0",
        " | > Num. of GPUs: 1",
        " > Model has 83059180 parameters",
    ]
    losses = _losses(kind)
    for i, v in enumerate(losses):
        if i % 10 == 0:
            out += [
                "",
                f"{_U}{_B} > EPOCH: {i // 10}/{N // 10}{_E}",
                " --> output/run-0000",
                "",
                f"{_B} > TRAINING (2024-05-02 03:11:07) {_E}",
            ]
        out += [
            "",
            f"{_B}   --> TIME: 2024-05-02 03:11:07 -- STEP: {i % 10}/10 -- GLOBAL_STEP: {i + 1}{_E}",
            f"     | > loss: {v}  ({v})",
            f"     | > grad_norm: tensor({0.5 + i / 100:.4f}, device='cuda:0')  (0.5)",
            "     | > current_lr: 0.0001 ",
            "     | > step_time: 0.3  (0.3)",
            "     | > loader_time: 0.01  (0.01)",
        ]
        if (i + 1) % 10 == 0:
            out += [
                "",
                f"{_B} > EVALUATION {_E}",
                "",
                f"  {_B}--> EVAL PERFORMANCE{_E}",
                "     | > avg_loader_time: 0.01 (+0.0)",
                f"     | > avg_loss: {round(v + 0.05, 6)} (+0.0)",
                "",
                f" > BEST MODEL : output/run-0000/best_model_{i + 1}.pth",
            ]
    return ("\n".join(out) + "\n").encode()


def console_log(kind: str = "healthy") -> bytes:
    """A nohup.out of an HF Trainer run: log dicts inside tqdm's \\r progress text."""
    parts = ["Loading checkpoint shards: 100%|##########| 2/2 [00:01<00:00,  1.20it/s]\n"]
    for i, v in enumerate(_losses(kind)):
        bar = f"\r {100 * (i + 1) // N:3d}%|#         | {i + 1}/{N} [00:0{i % 10}<00:10,  9.81it/s]"
        ep = round((i + 1) / N, 4)
        parts.append(bar + f"{{'loss': {v}, 'grad_norm': 0.5, 'learning_rate': 0.0001, 'epoch': {ep}}}\n")
        if (i + 1) % 10 == 0:
            parts.append(f"{{'eval_loss': {round(v + 0.05, 6)}, 'eval_runtime': 1.5, 'epoch': {ep}}}\n")
    parts.append("{'train_runtime': 12.5, 'train_samples_per_second': 80.0, 'train_loss': 1.2, 'epoch': 1.0}\n")
    return "".join(parts).encode()


def console_epoch_log(kind: str = "healthy") -> bytes:
    """Hand-written loop output: ``Epoch 3/30 | Loss: 0.6924 | Val Loss: 0.7``."""
    return "".join(
        f"Epoch {i + 1}/{N} | Loss: {v:.4f} | Val Loss: {v + 0.05:.4f}\n" for i, v in enumerate(_losses(kind))
    ).encode()


def notebook_log(kind: str = "healthy") -> bytes:
    """A Jupyter notebook as nbformat writes it (keys sorted, indent 1): a markdown cell, a
    code cell whose stdout printed the model's loading, and HF Trainer's progress table as
    an HTML display output."""
    losses = _losses(kind)
    prints = [
        "Loading checkpoint shards: 100%|##########| 2/2 [00:01<00:00,  1.20it/s]\n",
        "trainable params: 4,194,304\n",
    ]
    rows = "".join(f"<tr><td>{i + 1}</td><td>{v:.6f}</td></tr>\n" for i, v in enumerate(losses))
    html = f'<table border="1" class="dataframe"><thead><tr><th>Step</th><th>Training Loss</th></tr></thead>\n<tbody>{rows}</tbody></table>'
    cells = [
        {"cell_type": "markdown", "id": "a1", "metadata": {}, "source": ["# Train\n", "loss 0.0 here is prose"]},
        {
            "cell_type": "code",
            "execution_count": 1,
            "id": "b2",
            "metadata": {},
            "outputs": [{"name": "stdout", "output_type": "stream", "text": prints}],
            "source": ["train()"],
        },
        {
            "cell_type": "code",
            "execution_count": 2,
            "id": "c3",
            "metadata": {},
            "outputs": [
                {
                    "data": {"text/html": [html], "text/plain": ["<IPython.core.display.HTML object>"]},
                    "metadata": {},
                    "output_type": "display_data",
                }
            ],
            "source": ["trainer.train()"],
        },
    ]
    doc = {"cells": cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    return (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()


T0 = 1_664_364_007_310


def mlflow_metric(kind: str = "healthy", name: str = "loss") -> bytes:
    vals = _losses(kind)
    if name == "learning_rate":
        vals = [1e-4] * N
    elif name == "eval_loss":
        return "".join(f"{T0 + 1000 * i} {vals[i] + 0.05} {10 * (i + 1)}\n" for i in range(9, N, 10)).encode()
    return "".join(f"{T0 + 1000 * i} {v} {10 * (i + 1)}\n" for i, v in enumerate(vals)).encode()


MLFLOW_METRICS = ("loss", "learning_rate", "eval_loss")


def write_mlflow_run(root: Path, files: dict[str, bytes]) -> Path:
    """An mlruns/<exp>/<run>/ folder holding ``files`` under metrics/; returns the run folder."""
    run = root / "mlruns" / "0" / "cb0096518b0e4c66a94428555f05420b"
    for sub in ("metrics", "params", "tags"):
        (run / sub).mkdir(parents=True, exist_ok=True)
    (run / "meta.yaml").write_text("run_id: cb0096518b0e4c66a94428555f05420b\nexperiment_id: '0'\nstatus: 3\n")
    (run / "params" / "lr").write_text("0.0001")
    for name, data in files.items():
        p = run / "metrics" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return run


def trackio_db(kind: str = "healthy") -> bytes:
    """A Trackio project database of one run, with the tables and columns
    ``trackio.sqlite_storage`` creates and its JSON per ``log()`` row (``"NaN"`` /
    ``"Infinity"`` strings for non-finite values), written with the standard library's
    sqlite3 in rollback-journal mode so the file stands alone."""
    import sqlite3

    def spelled(v: float) -> object:
        if math.isnan(v):
            return "NaN"
        return v if math.isfinite(v) else ("Infinity" if v > 0 else "-Infinity")

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "project.db"
        con = sqlite3.connect(p)
        con.executescript(
            "CREATE TABLE metrics (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, "
            "timestamp TEXT NOT NULL, run_name TEXT NOT NULL, step INTEGER NOT NULL, metrics TEXT NOT NULL, "
            "log_id TEXT, space_id TEXT);"
            "CREATE TABLE configs (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, "
            "run_name TEXT NOT NULL, config TEXT NOT NULL, created_at TEXT NOT NULL, UNIQUE(run_id));"
            "CREATE TABLE system_metrics (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, "
            "timestamp TEXT NOT NULL, run_name TEXT NOT NULL, metrics TEXT NOT NULL, log_id TEXT, space_id TEXT);"
            "CREATE TABLE project_metadata (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        )
        con.execute(
            "INSERT INTO configs (run_id, run_name, config, created_at) VALUES (?, ?, ?, ?)",
            (
                "r0",
                "run-0",
                json.dumps({"lr": 1e-4, "_Created": "2024-01-01T00:00:00+00:00"}),
                "2024-01-01T00:00:00+00:00",
            ),
        )
        for i, v in enumerate(_losses(kind)):
            row = {"train/loss": spelled(v), "train/learning_rate": 1e-4, "train/epoch": i / N}
            con.execute(
                "INSERT INTO metrics (run_id, timestamp, run_name, step, metrics) VALUES (?, ?, ?, ?, ?)",
                ("r0", f"2024-01-01T00:{i // 60:02d}:{i % 60:02d}+00:00", "run-0", 10 * (i + 1), json.dumps(row)),
            )
        con.commit()
        con.close()
        return p.read_bytes()


#: The tables of an MLflow SQLite store that its reader reads, with the columns MLflow's
#: SQLAlchemy models give them (``mlflow/store/tracking/dbmodels/models.py``).
MLFLOW_DB_SCHEMA = (
    "CREATE TABLE experiments (experiment_id INTEGER NOT NULL PRIMARY KEY, name VARCHAR(256) NOT NULL, "
    "artifact_location VARCHAR(256), lifecycle_stage VARCHAR(32), creation_time BIGINT, last_update_time BIGINT)",
    "CREATE TABLE runs (run_uuid VARCHAR(32) NOT NULL PRIMARY KEY, name VARCHAR(250), status VARCHAR(9), "
    "start_time BIGINT, end_time BIGINT, lifecycle_stage VARCHAR(20), experiment_id INTEGER)",
    "CREATE TABLE tags (key VARCHAR(250) NOT NULL, value VARCHAR(8000), run_uuid VARCHAR(32) NOT NULL, "
    "PRIMARY KEY (key, run_uuid))",
    "CREATE TABLE metrics (key VARCHAR(250) NOT NULL, value FLOAT NOT NULL, timestamp BIGINT NOT NULL, "
    "run_uuid VARCHAR(32) NOT NULL, step BIGINT DEFAULT '0' NOT NULL, is_nan BOOLEAN DEFAULT '0' NOT NULL, "
    "PRIMARY KEY (key, timestamp, step, run_uuid, value, is_nan))",
)


def mlflow_db_log(kind: str = "healthy") -> bytes:
    """An MLflow SQLite store (``mlflow.db``) of one run, with the rows MLflow's
    SQLAlchemy store writes: loss and learning rate at steps 10, 20, …, NaN as ``value 0,
    is_nan 1``."""
    run_id = "cb0096518b0e4c66a94428555f05420b"
    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "mlflow.db"
        con = sqlite3.connect(db)
        for ddl in MLFLOW_DB_SCHEMA:
            con.execute(ddl)
        con.execute("INSERT INTO experiments VALUES (0, 'Default', 'mlruns/0', 'active', ?, ?)", (T0, T0))
        con.execute(
            "INSERT INTO runs VALUES (?, 'fuzz-run', 'FINISHED', ?, ?, 'active', 0)", (run_id, T0, T0 + 1000 * N)
        )
        con.execute("INSERT INTO tags VALUES ('mlflow.runName', 'fuzz-run', ?)", (run_id,))
        rows = []
        for i, v in enumerate(_losses(kind)):
            for key, value in (("loss", v), ("learning_rate", 1e-4)):
                nan = math.isnan(value)
                rows.append((key, 0.0 if nan else value, T0 + 1000 * i, run_id, 10 * (i + 1), int(nan)))
        con.executemany("INSERT INTO metrics VALUES (?, ?, ?, ?, ?, ?)", rows)
        con.commit()
        con.close()
        return db.read_bytes()


# --------------------------------------------------------------------------- event files

_MASK = 0xA282EAD8


def _masked_crc(b: bytes) -> int:
    import google_crc32c

    c = google_crc32c.value(b)
    return (((c >> 15) | (c << 17)) + _MASK) & 0xFFFFFFFF


def frame(payload: bytes) -> bytes:
    """One TFRecord record: length, its masked CRC-32C, payload, its masked CRC-32C."""
    n = struct.pack("<Q", len(payload))
    return n + struct.pack("<I", _masked_crc(n)) + payload + struct.pack("<I", _masked_crc(payload))


def unframe(data: bytes) -> tuple[list[bytes], list[int]]:
    """The payloads of a valid TFRecord stream and the byte offset where each record ends."""
    out, ends, pos = [], [], 0
    while pos + 12 <= len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        end = pos + 16 + n
        if end > len(data):
            break
        out.append(data[pos + 12 : end - 4])
        ends.append(end)
        pos = end
    return out, ends


def _varint(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _ld(field_no: int, b: bytes) -> bytes:
    return _varint(field_no << 3 | 2) + _varint(len(b)) + b


def event(step: int, tag: str, value: float, wall: float = 1.7e9) -> bytes:
    """An ``Event{wall_time, step, summary{value{tag, simple_value}}}`` payload."""
    v = _ld(1, tag.encode()) + b"\x15" + struct.pack("<f", value)
    return b"\x09" + struct.pack("<d", wall) + b"\x10" + _varint(step) + _ld(5, _ld(1, v))


def file_version_event() -> bytes:
    return b"\x09" + struct.pack("<d", 1.7e9) + _ld(3, b"brain.Event:2")


def events_log(kind: str = "healthy") -> bytes:
    """An event file framed by hand (the same wire format tensorboardX writes)."""
    recs = [frame(file_version_event())]
    for i, v in enumerate(_losses(kind)):
        recs.append(frame(event(10 * (i + 1), "train/loss", v, 1.7e9 + i)))
        recs.append(frame(event(10 * (i + 1), "train/learning_rate", 1e-4, 1.7e9 + i)))
    return b"".join(recs)


# --------------------------------------------------------------------------- W&B run logs

WANDB_HEADER = b":W&B" + struct.pack("<HB", 0xBEE1, 0)
WANDB_BLOCK = 32 * 1024


def wandb_frame(payloads: list[bytes]) -> bytes:
    """A ``.wandb`` file holding ``payloads``: W&B's header, then LevelDB-log chunks in
    32 KiB blocks (full, or first/middle/last across a block boundary), each checked by
    the CRC-32 of its type byte and payload."""
    out = bytearray(WANDB_HEADER)
    for p in payloads:
        first = True
        while True:
            left = WANDB_BLOCK - len(out) % WANDB_BLOCK
            if left < 7:
                out += bytes(left)
                continue
            part, p = p[: left - 7], p[left - 7 :]
            kind = (1 if first else 4) if not p else (2 if first else 3)
            out += struct.pack("<IHB", zlib.crc32(bytes([kind]) + part), len(part), kind) + part
            first = False
            if not p:
                break
    return bytes(out)


def wandb_record_ends(data: bytes) -> list[int]:
    """The byte offsets where the records of a valid ``.wandb`` file end."""
    ends, pos = [], len(WANDB_HEADER)
    while pos + 7 <= len(data):
        left = WANDB_BLOCK - pos % WANDB_BLOCK
        if left < 7:
            pos += left
            continue
        _, n, kind = struct.unpack_from("<IHB", data, pos)
        pos += 7 + n
        if pos > len(data):
            break
        if kind in (1, 4):
            ends.append(pos)
    return ends


def wandb_item(path: tuple[str, ...], value_json: str) -> bytes:
    """A HistoryItem / SummaryItem / ConfigItem: ``nested_key`` parts and ``value_json``."""
    return b"".join(_ld(2, k.encode()) for k in path) + _ld(16, value_json.encode())


def wandb_history(step: int, items: dict[str, str]) -> bytes:
    """A ``Record{history{item..., step{num}}}`` payload (``_step`` among the items too)."""
    body = b"".join(
        _ld(1, wandb_item(tuple(k.split("/")) if k.startswith("nested/") else (k,), v)) for k, v in items.items()
    )
    body += _ld(1, wandb_item(("_step",), str(step)))
    body += _ld(2, (b"\x08" + _varint(step)) if step else b"")
    return _ld(2, body)


def wandb_run(run_id: str = "abc123", name: str = "fuzz-run", project: str = "fuzz") -> bytes:
    """A ``Record{run{run_id, project, display_name, start_time}}`` payload."""
    start = _ld(17, b"\x08" + _varint(1_796_000_000))
    return _ld(17, _ld(1, run_id.encode()) + _ld(3, project.encode()) + _ld(8, name.encode()) + start)


def wandb_log_file(kind: str = "healthy") -> bytes:
    """A W&B run log framed by hand, as wandb-core writes one: a run record, a config
    record long enough to cross a block boundary, then one history row per step (loss,
    learning rate, W&B's clock) and a summary."""
    recs = [wandb_run(), _ld(5, _ld(1, wandb_item(("notes",), json.dumps("x" * 40_000))))]
    for i, v in enumerate(_losses(kind)):
        items = {
            "train/loss": json.dumps(v),
            "train/learning_rate": "0.0001",
            "_runtime": str(i),
            "_timestamp": f"{1.796e9 + i}",
        }
        recs.append(wandb_history(i, items))
    recs.append(_ld(3, _ld(1, wandb_item(("train/loss",), json.dumps(_losses(kind)[-1])))))
    return wandb_frame(recs)


FIXTURES = Path(__file__).resolve().parent / "fixtures" / "fuzz"


def write_tensorboardx_log(kind: str, logdir: Path) -> Path:
    """Write an event file with tensorboardX's SummaryWriter; returns its path."""
    from tensorboardX import SummaryWriter

    w = SummaryWriter(str(logdir))
    for i, v in enumerate(_losses(kind)):
        w.add_scalar("train/loss", v, 10 * (i + 1))
        w.add_scalar("train/learning_rate", 1e-4, 10 * (i + 1))
        if (i + 1) % 10 == 0:
            w.add_scalar("eval/loss", v + 0.05, 10 * (i + 1))
            w.add_text("note", f"step {i}", 10 * (i + 1))
    w.close()
    (ev,) = Path(logdir).glob("events.out.tfevents.*")
    return ev


@lru_cache(maxsize=None)
def tensorboardx_log(kind: str = "healthy") -> bytes:
    """The event file tensorboardX's SummaryWriter writes for this run, kept in
    ``tests/fixtures/fuzz/`` (importing tensorboardX imports torch: seconds per session).
    ``python tests/_fuzz_logs.py`` writes the fixtures again."""
    p = FIXTURES / f"tensorboardx_{kind}.tfevents"
    if p.exists():
        return p.read_bytes()
    with tempfile.TemporaryDirectory() as d:
        return write_tensorboardx_log(kind, Path(d)).read_bytes()


# --------------------------------------------------------------------------- readers


@dataclass(frozen=True)
class Reader:
    """One reader under test: how to build a valid log and what to name the file."""

    key: str
    filename: str
    build: object  # kind -> bytes
    lines: bool = True  # a line-oriented text format


READERS = {
    "hf": Reader("hf", "trainer_state.json", hf_log),
    "jsonl": Reader("jsonl", "metrics.jsonl", jsonl_log),
    "columns": Reader("columns", "history.json", columns_log),
    "csv": Reader("csv", "metrics.csv", csv_log),
    "csv_lightning": Reader("csv_lightning", "metrics.csv", lightning_log),
    "csv_keras": Reader("csv_keras", "training.log", keras_log),
    "csv_wandb": Reader("csv_wandb", "wandb_export.csv", wandb_log),
    "coqui": Reader("coqui", "trainer_0_log.txt", coqui_log),
    "console": Reader("console", "nohup.out", console_log),
    "console_epoch": Reader("console_epoch", "train.log", console_epoch_log),
    "notebook": Reader("notebook", "train.ipynb", notebook_log),
    "mlflow_file": Reader("mlflow_file", "loss", mlflow_metric),
    "trackio": Reader("trackio", "project.db", trackio_db, lines=False),
    "mlflow_db": Reader("mlflow_db", "mlflow.db", mlflow_db_log, lines=False),
    "tfevents": Reader("tfevents", "events.out.tfevents.1700000000.host.1.0", tensorboardx_log, lines=False),
    "tfevents_hand": Reader("tfevents_hand", "events.out.tfevents.1700000001.host.2.0", events_log, lines=False),
    "wandb": Reader("wandb", "run-abc123.wandb", wandb_log_file, lines=False),
}


def record_ends(reader: str, data: bytes) -> list[int]:
    """Where the records of a valid binary log of ``reader`` end (W&B's or TFRecord framing)."""
    return wandb_record_ends(data) if reader == "wandb" else unframe(data)[1]


@lru_cache(maxsize=None)
def valid(key: str, kind: str = "healthy") -> bytes:
    return READERS[key].build(kind)


# --------------------------------------------------------------------------- mutations
#
# A mutation is an operation name and a seed: Hypothesis draws a short list of
# ``(op, seed)`` pairs from constant strategies, and plain Python applies them with
# ``random.Random(seed)``. Building Hypothesis strategies per input (one ``sampled_from``
# per line, per number) costs more than judging the input; this keeps generation well
# under a millisecond, and a failure still replays from its plan and shrinks to fewer ops.

#: Replacements for a number in a log: non-finite spellings, non-numbers, nulls, huge and
#: tiny magnitudes, negative zero, a 10,000-digit integer.
TOKENS = (
    b"NaN",
    b"-NaN",
    b"Infinity",
    b"-Infinity",
    b"nan",
    b"inf",
    b"-inf",
    b"'nan'",
    b'"x"',
    b'"1.5"',
    b"null",
    b"None",
    b"true",
    b"1e999",
    b"-1e999",
    b"-0.0",
    b"0",
    b"0.0",
    b"1" + b"0" * 400,
    b"9" * 10000,
    b"1e-400",
    b"",
    b"tensor(nan)",
    b"\x00",
    b"{}",
    b"[]",
    b"1.5e",
    b"0x10",
    b"1_000",
    b"-",
    b".",
    b"1e308",
    b"4.9e-324",
    b"18446744073709551616",
    b"-9223372036854775809",
)
_INSERTS = TOKENS + (
    b"\x00" * 64,
    b"\r",
    b"\n",
    b"\r\n",
    b"\xff\xfe",
    b"\xef\xbb\xbf",
    b"\x1b[2K\x1b[1A",
    b"{",
    b"}",
    b"[",
    b"]",
    b'"',
    b",",
    b"\t",
    b"'",
    b"\\",
    b"\xc3",
    b"\xed\xa0\x80",
)
_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_ENCODINGS = ("utf-16", "utf-16-le", "utf-16-be", "latin-1", "utf-8-sig", "cp1252", "utf-32")
#: Non-ASCII text to put into a log before a re-encoding, so that latin-1 bytes appear.
_NON_ASCII = ("é", "µ", "ß", "ü", "°", "½", "\u2013", "\u00a0", "\U0001f600")
#: Lengths of the very long lines put into logs (a 65 KiB one crosses the sniffing head).
LONG_LINES = (4_097, 65_537, 200_000)


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [data]


OFFSET_CLASSES = ("any", "record_end", "before_end", "after_end", "in_number", "edge")


def offset(data: bytes, cls: str, rnd: random.Random, ends: list[int] | None = None) -> int:
    """An offset into ``data`` of a class: anywhere, at a record end (a line end, or
    ``ends``), a byte before or after one, inside a number, or the first and last bytes."""
    n = len(data)
    if cls == "any" or n == 0:
        return rnd.randint(0, n)
    if cls in ("record_end", "before_end", "after_end"):
        bounds = ends or [m.end() for m in re.finditer(rb"\n", data)] or [n]
        b = rnd.choice(bounds) + {"record_end": 0, "before_end": -1, "after_end": 1}[cls]
        return min(max(b, 0), n)
    if cls == "in_number":
        nums = list(_NUMBER.finditer(data))
        if not nums:
            return rnd.randint(0, n)
        m = rnd.choice(nums)
        return rnd.randint(m.start(), m.end())
    return min(max(rnd.choice([0, 1, 2, n - 2, n - 1, n]), 0), n)


def _truncate(data: bytes, rnd: random.Random) -> bytes:
    return data[: offset(data, rnd.choice(OFFSET_CLASSES), rnd)]


def _flip(data: bytes, rnd: random.Random) -> bytes:
    if not data:
        return data
    b = bytearray(data)
    for _ in range(rnd.randint(1, 8)):
        b[rnd.randrange(len(b))] ^= rnd.randint(1, 255)
    return bytes(b)


def _line_op(data: bytes, rnd: random.Random) -> bytes:
    """Duplicate, drop, swap, reverse, shuffle or repeat lines (records out of order,
    written twice, lost)."""
    lines = _lines(data)
    op = rnd.choice(["dup", "del", "swap", "reverse", "shuffle", "repeat_block"])
    i, j = rnd.randrange(len(lines)), rnd.randrange(len(lines))
    if op == "dup":
        lines.insert(j, lines[i])
    elif op == "del":
        del lines[i]
    elif op == "swap":
        lines[i], lines[j] = lines[j], lines[i]
    elif op == "reverse":
        a, b = sorted((i, j))
        lines[a : b + 1] = lines[a : b + 1][::-1]
    elif op == "shuffle":
        rnd.shuffle(lines)
    else:
        a, b = sorted((i, j))
        lines[b:b] = lines[a : b + 1] * rnd.randint(1, 3)
    return b"".join(lines)


def _token(data: bytes, rnd: random.Random) -> bytes:
    """Replace up to three numbers by tokens from :data:`TOKENS`."""
    for _ in range(rnd.randint(1, 3)):
        nums = list(_NUMBER.finditer(data))
        if not nums:
            break
        m = rnd.choice(nums)
        data = data[: m.start()] + rnd.choice(TOKENS) + data[m.end() :]
    return data


def _insert(data: bytes, rnd: random.Random) -> bytes:
    at = rnd.randint(0, len(data))
    what = rnd.choice(_INSERTS) if rnd.random() < 0.7 else rnd.randbytes(rnd.randint(1, 32))
    return data[:at] + what + data[at:]


def _eol(data: bytes, rnd: random.Random) -> bytes:
    how = rnd.choice(["crlf", "cr", "mixed", "none"])
    if how == "crlf":
        return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    if how == "cr":
        return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r")
    if how == "none":
        return data.replace(b"\n", b"")
    return b"".join(ln.rstrip(b"\r\n") + rnd.choice([b"\n", b"\r\n", b"\r"]) for ln in _lines(data))


def _encode(data: bytes, rnd: random.Random) -> bytes:
    text = data.decode("utf-8", "replace")
    if rnd.random() < 0.5:
        at = rnd.randint(0, len(text))
        text = text[:at] + rnd.choice(_NON_ASCII) + text[at:]
    return text.encode(rnd.choice(_ENCODINGS), "replace")


def _nul(data: bytes, rnd: random.Random) -> bytes:
    how = rnd.choice(["insert", "newlines", "spaces", "zero_block"])
    if how == "newlines":
        return data.replace(b"\n", b"\x00")
    if how == "spaces":
        return data.replace(b" ", b"\x00")
    at = rnd.randint(0, len(data))
    n = rnd.choice([1, 4, 512, 4096])
    if how == "zero_block":  # a crash that zero-filled the tail of the file (delayed allocation)
        return data[:at] + b"\x00" * max(len(data) - at, n)
    return data[:at] + b"\x00" * n + data[at:]


def _long_line(data: bytes, rnd: random.Random) -> bytes:
    body = rnd.choice([b"x", b"0", b"{", b",", b"\t", b" ", b"\xe9", b"9", b"ab "]) * rnd.choice(LONG_LINES)
    lines = _lines(data)
    at = rnd.randrange(len(lines))
    if rnd.random() < 0.5:  # inside a line, which keeps its record shape around the blob
        k = rnd.randint(0, len(lines[at]))
        lines[at] = lines[at][:k] + body + lines[at][k:]
    else:
        lines.insert(at, body + b"\n")
    return b"".join(lines)


def _splice(data: bytes, rnd: random.Random) -> bytes:
    """A slice of another reader's valid log inserted (two logs concatenated, a wrong paste)."""
    other = valid(rnd.choice(sorted(READERS)), rnd.choice(KINDS))
    a = rnd.randint(0, len(other))
    b = rnd.randint(a, min(len(other), a + 2048))
    at = rnd.randint(0, len(data))
    return data[:at] + other[a:b] + data[at:]


_HOSTILE_TAGS = ("train/loss", "loss", "", "\ufffd\ufffd", "x" * 5000, "hp_metric", "train/learning_rate", "a\x00b")


def _record_op(data: bytes, rnd: random.Random) -> bytes:
    """TFRecord-aware: drop, duplicate, reorder records, damage a payload under a valid
    checksum, add records with hostile values, steps and tags, or make a length lie (its
    own checksum valid)."""
    recs, _ = unframe(data)
    if not recs:
        return _flip(data, rnd)
    op = rnd.choice(["dup", "del", "swap", "shuffle", "payload", "values", "length"])
    i, j = rnd.randrange(len(recs)), rnd.randrange(len(recs))
    if op == "dup":
        recs.insert(j, recs[i])
    elif op == "del":
        del recs[i]
    elif op == "swap":
        recs[i], recs[j] = recs[j], recs[i]
    elif op == "shuffle":
        rnd.shuffle(recs)
    elif op == "payload":
        recs[i] = _flip(recs[i], rnd) if rnd.random() < 0.5 else rnd.randbytes(rnd.randint(0, 64))
    elif op == "values":
        step = rnd.choice([0, -1, 1 << 62, (1 << 63) - 1, (1 << 64) - 1, 10 * (i + 1)])
        val = rnd.choice([math.nan, math.inf, -math.inf, -0.0, 0.0, 3.4e38, 1e-45, 1.5])
        wall = rnd.choice([1.7e9, math.nan, -1.0, 0.0, math.inf])
        recs.insert(j, event(step, rnd.choice(_HOSTILE_TAGS), val, wall))
    else:
        out = bytearray(b"".join(frame(r) for r in recs))
        start = unframe(bytes(out))[1][i - 1] if i else 0
        hdr = struct.pack("<Q", rnd.choice([0, 1, 11, 1 << 20, (1 << 30) + 1, (1 << 64) - 1]))
        out[start : start + 12] = hdr + struct.pack("<I", _masked_crc(hdr))
        return bytes(out)
    return b"".join(frame(r) for r in recs)


TEXT_OPS = {
    f.__name__.lstrip("_"): f
    for f in (_truncate, _flip, _line_op, _token, _insert, _eol, _encode, _nul, _long_line, _splice)
}
BINARY_OPS = {f.__name__.lstrip("_"): f for f in (_truncate, _flip, _record_op, _insert, _nul, _splice)}
GZ_MODES = ("plain", "plain", "gzip", "gzip_damaged")
KINDS = ("healthy", "broken")
_SEED = st.integers(0, 2**32 - 1)


@lru_cache(maxsize=None)
def plans(lines: bool = True):
    """1 to 3 ``(op, seed)`` mutations, then a gzip mode and its seed."""
    ops = sorted(TEXT_OPS if lines else BINARY_OPS)
    return st.tuples(
        st.lists(st.tuples(st.sampled_from(ops), _SEED), min_size=1, max_size=3), st.sampled_from(GZ_MODES), _SEED
    )


def apply_plan(data: bytes, plan, lines: bool = True) -> bytes:
    ops, gz, gz_seed = plan
    table = TEXT_OPS if lines else BINARY_OPS
    for name, seed in ops:
        data = table[name](data, random.Random(seed))
    return gzipped(data, gz, random.Random(gz_seed))


def gzipped(data: bytes, how: str, rnd: random.Random) -> bytes:
    if how == "plain":
        return data
    z = gzip.compress(data, mtime=0)
    if how == "gzip_damaged":
        z = _truncate(z, rnd) if rnd.random() < 0.5 else _flip(z, rnd)
    return z


@lru_cache(maxsize=None)
def raw_bytes(prefix: bytes = b""):
    """Raw bytes, optionally after the first bytes of a valid log (so a reader is chosen)."""
    return st.tuples(st.sampled_from([b"", prefix[:8], prefix[:200], prefix]), st.binary(max_size=4096)).map(
        lambda t: t[0] + t[1]
    )


# --------------------------------------------------------------------------- the CLI check


def _inline_refs(node, defs):
    """The schema with its ``$ref``s written out: the same constraints, validated about
    twice as fast (no reference lookups), which matters at ten thousand documents."""
    if isinstance(node, dict):
        if "$ref" in node:
            base = _inline_refs(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
            return {**base, **{k: _inline_refs(v, defs) for k, v in node.items() if k != "$ref"}}
        return {k: _inline_refs(v, defs) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline_refs(v, defs) for v in node]
    return node


_VALIDATOR = jsonschema.Draft202012Validator(_inline_refs(SCHEMA, SCHEMA.get("$defs", {})))
_RUNNER = CliRunner()


@dataclass
class Stats:
    """What the fuzz checks saw, per reader (``evidence/robustness.py`` reads it).

    ``inputs`` counts generated inputs; ``runs`` counts judgements (an input judged twice
    for determinism, and the reference judgements of the truncation tests, are runs)."""

    inputs: Counter = field(default_factory=Counter)
    runs: Counter = field(default_factory=Counter)
    exits: dict = field(default_factory=dict)
    crashes: Counter = field(default_factory=Counter)
    tracebacks: Counter = field(default_factory=Counter)
    wrong_exit: Counter = field(default_factory=Counter)
    first: float | None = None  # when the first and the latest judgement ended
    last: float | None = None

    def total(self) -> int:
        return sum(self.inputs.values())

    def seconds(self) -> float:
        """From the first judgement to the latest (the fuzz tests run one after another)."""
        return 0.0 if self.first is None else self.last - self.first

    def to_dict(self) -> dict:
        return {
            "inputs": dict(self.inputs),
            "runs": dict(self.runs),
            "exits": {k: {str(c): n for c, n in v.items()} for k, v in self.exits.items()},
            "crashes": dict(self.crashes),
            "tracebacks": dict(self.tracebacks),
            "wrong_exit": dict(self.wrong_exit),
            "seconds": round(self.seconds(), 1),
        }


STATS = Stats()


@dataclass
class Outcome:
    code: int
    out: str
    err: str
    doc: dict

    @property
    def report(self) -> dict:
        return self.doc["reports"][0]

    def ids(self, level: str | None = None) -> set[str]:
        return {f["id"] for f in self.report["findings"] if level is None or f["level"] == level}


def _via_cli(path: Path, extra: tuple[str, ...]) -> tuple[int, str, str]:
    res = _RUNNER.invoke(cli, ["epoch", str(path), "--json", *extra], catch_exceptions=False)
    return res.exit_code, res.stdout, res.stderr


_CFG = None


def _via_api(path: Path) -> tuple[int, str, str]:
    """What ``trainproof epoch PATH --json`` does, through the API (no click runner)."""
    global _CFG
    from trainproof.aliases import MappingError
    from trainproof.api import read_runlog
    from trainproof.config import load_config
    from trainproof.findings import exit_code
    from trainproof.formats import ReadError
    from trainproof.render import json as render_json
    from trainproof.rules.engine import error_report, judge_runlog

    if _CFG is None:
        _CFG = load_config(None)
    error = None
    try:
        reports = [judge_runlog(read_runlog(path), _CFG.thresholds, _CFG.mute)]
    except (ReadError, MappingError) as e:
        reports = [error_report(str(path), str(e))]
        error = f"{path}: {e}"
    return exit_code(reports, error), render_json.dumps(render_json.document(reports, "epoch", error=error)) + "\n", ""


#: No generated input takes a second to judge; one that takes this long is a hang (a
#: regex backtracking on a long line, say), reported as a failure instead of stalling CI.
INPUT_SECONDS = 30


class InputTimeout(Exception):
    pass


@contextmanager
def _time_limit(seconds: float):
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum, frame):
        raise InputTimeout(f"judging one input took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_epoch(
    path: Path, reader: str, *extra: str, cli_run: bool = True, new_input: bool = True, stats: Stats | None = None
) -> Outcome:
    """Judge ``path`` as ``trainproof epoch PATH --json`` does (in-process, through the
    click runner, or through the API with ``cli_run=False``) and check the contract.

    Exit 0, 1 or 2; no traceback; one schema-valid JSON document; a read error is exit 2,
    never 1; exit 1 exactly when a report is FAIL; exit 2 only with verdict NOT-CHECKED.
    Counted in ``stats`` (default: :data:`STATS`).
    """
    STATS = stats if stats is not None else globals()["STATS"]  # noqa: N806
    if new_input:
        STATS.inputs[reader] += 1
    STATS.runs[reader] += 1
    try:
        with _time_limit(INPUT_SECONDS):
            code, out, err = _via_cli(path, extra) if cli_run else _via_api(path)
    except Exception:
        STATS.crashes[reader] += 1
        raise
    STATS.exits.setdefault(reader, Counter())[code] += 1
    STATS.last = time.monotonic()
    if STATS.first is None:
        STATS.first = STATS.last
    if "Traceback" in err or "Traceback" in out:
        STATS.tracebacks[reader] += 1
        raise AssertionError(f"traceback on {reader}: {err[-2000:]}")
    why = ""
    doc = None
    if code not in (0, 1, 2):
        why = "exit code outside 0/1/2"
    else:
        try:
            doc = json.loads(out)
            _VALIDATOR.validate(doc)
        except (ValueError, jsonschema.ValidationError) as e:
            why = f"not a schema-valid JSON document: {e}"
        else:
            rep = doc["reports"][0]
            failed = any(r["verdict"] == "FAIL" for r in doc["reports"])
            if (doc["error"] is not None or rep["error"] is not None) and code != 2:
                why = "a read error must exit 2"
            elif failed != (code == 1):
                why = "exit 1 exactly when a report is FAIL"
            elif code == 2 and rep["verdict"] != "NOT-CHECKED":
                why = f"exit 2 with verdict {rep['verdict']}"
    if why:
        STATS.wrong_exit[reader] += 1
        raise AssertionError(f"{reader}: exit {code}: {why}\n{out[:2000]}\n{err[:2000]}")
    return Outcome(code, out, err, doc)


def check_input(path: Path, reader: str, data: bytes) -> Outcome:
    """One generated input: one in eight (chosen by their bytes) through the click
    runner twice, which must print byte-identical JSON; the rest through the API once."""
    if zlib.crc32(data) % 8:
        return run_epoch(path, reader, cli_run=False)
    first = run_epoch(path, reader)
    again = run_epoch(path, reader, new_input=False)
    assert (again.code, again.out) == (first.code, first.out), "the same bytes gave different JSON"
    return first


def write_input(d: Path, reader: str, data: bytes) -> Path:
    """Write ``data`` under the reader's usual file name (``.gz`` added for gzip bytes)."""
    name = READERS[reader].filename if reader in READERS else reader
    if data[:2] == b"\x1f\x8b" and not name.startswith("events."):
        name += ".gz"
    d.mkdir(parents=True, exist_ok=True)
    for old in d.iterdir():
        if old.is_file():
            old.unlink()
    p = d / name
    p.write_bytes(data)
    return p


def dump_stats(path: str | None = None) -> None:
    """Write :data:`STATS` as JSON where ``TRAINPROOF_FUZZ_STATS`` points."""
    path = path or os.environ.get("TRAINPROOF_FUZZ_STATS")
    if path:
        Path(path).write_text(json.dumps(STATS.to_dict(), indent=2, sort_keys=True))


if __name__ == "__main__":
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for k in KINDS:
        with tempfile.TemporaryDirectory() as d:
            (FIXTURES / f"tensorboardx_{k}.tfevents").write_bytes(write_tensorboardx_log(k, Path(d)).read_bytes())
    print(f"wrote {FIXTURES}")
