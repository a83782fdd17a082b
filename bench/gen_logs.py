#!/usr/bin/env python3
"""Generator: realistic training logs in every format trainproof reads, 1e3 … 1e7 steps.

One synthetic run (fixed seed) written as

* ``jsonl``    one object per step, ``{"step", "epoch", "loss", "grad_norm", "learning_rate"}``,
  plus an ``{"step", "epoch", "eval_loss"}`` line every ``--eval-every`` steps (a
  hand-rolled logger: full ``float(torch_tensor.item())`` reprs);
* ``csv``      ``step,epoch,loss,grad_norm,learning_rate,eval_loss`` with the eval cell empty
  except every ``--eval-every`` steps;
* ``hf``       ``trainer_state.json`` exactly the way HF's ``TrainerState.save_to_json`` writes
  it (``json.dumps(asdict(state), indent=2, sort_keys=True)``): ``log_history`` train rows
  ``{epoch, grad_norm, learning_rate, loss (rounded to 4 digits), step}``, an eval row
  ``{epoch, eval_loss, eval_runtime, eval_samples_per_second, eval_steps_per_second, step}``
  every ``--eval-every`` steps and the end-of-training summary row;
* ``coqui``    Coqui Trainer ``trainer_0_log.txt``: the block layout of a real Trainer log
  (``examples/gallery/coqui/*/trainer_0_log.txt``, the ``TIME: … -- STEP: i/n --
  GLOBAL_STEP: g`` header of current Trainer versions, ANSI codes, ``value  (running
  epoch average)`` pairs, ``tensor(…)`` grad norms), one block per step with
  ``current_lr, loss, grad_norm, step_time, loader_time``; an EVALUATION block and a
  ``BEST MODEL`` line at the end of each epoch of ``--epoch-steps`` steps;
* ``tfevents`` a TensorBoard event file as ``SummaryWriter.add_scalar`` writes it: one Event
  per scalar (``train/loss``, ``train/grad_norm``, ``train/learning_rate``, ``train/epoch``
  every step, ``eval/loss`` every ``--eval-every`` steps), TFRecord framing with both
  masked CRC-32Cs (``google_crc32c``). Events are encoded by hand (no protobuf runtime per
  record); ``--check`` decodes a small file with TensorBoard's own ``event_pb2`` and
  re-encodes it with protobuf to prove the bytes identical.

The curves: a noisy exponentially decaying loss, a linear warm-up (1% of the run) then
cosine learning rate, log-normal gradient norms (larger early, a rare x25 spike), an eval
loss a little above the train loss. ``--diverge-at F`` makes the loss (and gradient norm)
grow exponentially from fraction F of the run; ``--nan-at F`` turns loss and gradient norm
NaN from fraction F on.

Everything is streamed: the curves are drawn and formatted in chunks of 50,000 steps and
written as they are made, so memory stays flat at any size (1e7 steps of HF JSON is ~1.8
GB on disk). Each output gets a ``<file>.meta.json`` sidecar (steps, records, numeric
samples, bytes, generator options) that ``bench/run_bench.py`` reads.

Usage (from the repository root)::

    .venv/bin/python bench/gen_logs.py jsonl 1000000 /tmp/bench9/data/jsonl_1e6.jsonl
    .venv/bin/python bench/gen_logs.py hf 100000 /tmp/x/trainer_state.json --nan-at 0.7
    .venv/bin/python bench/gen_logs.py all 10000 /tmp/bench9/data      # every format into a folder
    .venv/bin/python bench/gen_logs.py --check                         # self-check of the encoders
"""

from __future__ import annotations

import argparse
import json
import math
import os
import struct
import sys
import time
from pathlib import Path

import numpy as np

FORMATS = ("jsonl", "csv", "hf", "coqui", "tfevents")
FILE_NAMES = {
    "jsonl": "metrics.jsonl",
    "csv": "metrics.csv",
    "hf": "trainer_state.json",
    "coqui": "trainer_0_log.txt",
    "tfevents": "events.out.tfevents.1767225600.bench.0.0",
}
CHUNK = 50_000  # steps drawn and formatted at a time (a multiple of --epoch-steps for coqui)
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z: fixed, so files are reproducible
STEP_SECONDS = 0.25
PEAK_LR = 3e-4
TF_TAGS = ("train/loss", "train/grad_norm", "train/learning_rate", "train/epoch")
EVAL_TAG = "eval/loss"


# --------------------------------------------------------------------------- the curves


class Curves:
    """Draws the run chunk by chunk; the same seed and options give the same numbers."""

    def __init__(
        self,
        steps: int,
        seed: int = 0,
        diverge_at: float | None = None,
        nan_at: float | None = None,
        epochs: float = 3.0,
    ) -> None:
        self.steps = steps
        self.rng = np.random.default_rng(seed)
        self.diverge_at = diverge_at
        self.nan_at = nan_at
        self.epochs = epochs
        self.warm = max(steps // 100, 1)

    def chunk(self, start: int, n: int) -> dict[str, np.ndarray]:
        """Steps ``start+1 … start+n`` (HF and most loggers count from 1)."""
        rng = self.rng
        step = np.arange(start + 1, start + n + 1, dtype=np.int64)
        frac = (step - 1) / max(self.steps - 1, 1)
        level = 0.9 + 2.6 * np.exp(-6.0 * frac)
        loss = level * np.exp(rng.normal(0.0, 0.03, n)) + rng.normal(0.0, 0.02, n)
        lr = np.where(
            step <= self.warm,
            PEAK_LR * step / self.warm,
            PEAK_LR * 0.5 * (1.0 + np.cos(np.pi * (step - self.warm) / max(self.steps - self.warm, 1))),
        )
        gn = rng.lognormal(0.0, 0.35, n) * (1.0 + 2.0 * np.exp(-20.0 * frac))
        spikes = rng.random(n) < 1 / 5000
        gn[spikes] *= 25.0
        ev = 1.02 * level + 0.05 + rng.normal(0.0, 0.01, n)
        if self.diverge_at is not None:
            d0 = self.diverge_at * self.steps
            grow = np.exp(np.clip((step - d0) / max(0.02 * self.steps, 1.0), 0.0, 60.0))
            loss = loss * grow
            ev = ev * grow
            gn = gn * np.sqrt(grow)
        if self.nan_at is not None:
            bad = step >= self.nan_at * self.steps
            loss = np.where(bad, np.nan, loss)
            gn = np.where(bad, np.nan, gn)
            ev = np.where(bad, np.nan, ev)
        f32 = lambda a: a.astype(np.float32).astype(np.float64)  # noqa: E731 - what tensor.item() gives
        return {
            "step": step,
            "epoch": self.epochs * step / self.steps,
            "loss": f32(loss),
            "grad_norm": f32(gn),
            "lr": lr,
            "eval_loss": f32(ev),
            "step_time": np.abs(rng.normal(0.25, 0.01, n)),
            "loader_time": np.abs(rng.normal(0.002, 0.0005, n)),
        }


def _chunks(steps: int, chunk: int = CHUNK):
    s = 0
    while s < steps:
        n = min(chunk, steps - s)
        yield s, n
        s += n


def _num(x: float) -> str:
    """A float as Python's json module writes it (``NaN``, ``Infinity``)."""
    if x != x:
        return "NaN"
    if x in (math.inf, -math.inf):
        return "Infinity" if x > 0 else "-Infinity"
    return repr(x)


# --------------------------------------------------------------------------- writers
# Each returns (records, numeric samples): records as trainproof counts them (a line, a
# log_history row, a step block, a scalar event), samples = metric values excluding step.


def write_jsonl(f, cur: Curves, eval_every: int) -> tuple[int, int]:
    records = samples = 0
    for s, n in _chunks(cur.steps):
        c = cur.chunk(s, n)
        out = []
        ap = out.append
        for st, ep, lo, gn, lr, ev in zip(
            c["step"].tolist(),
            c["epoch"].tolist(),
            c["loss"].tolist(),
            c["grad_norm"].tolist(),
            c["lr"].tolist(),
            c["eval_loss"].tolist(),
        ):
            ap(
                '{"step": %d, "epoch": %r, "loss": %s, "grad_norm": %s, "learning_rate": %r}\n'
                % (st, ep, _num(lo), _num(gn), lr)
            )
            if st % eval_every == 0:
                ap('{"step": %d, "epoch": %r, "eval_loss": %s}\n' % (st, ep, _num(ev)))
                records += 1
                samples += 2
        records += n
        samples += 4 * n
        f.write("".join(out))
    return records, samples


def _csv(x: float) -> str:
    return "nan" if x != x else repr(x)


def write_csv(f, cur: Curves, eval_every: int) -> tuple[int, int]:
    f.write("step,epoch,loss,grad_norm,learning_rate,eval_loss\n")
    records = samples = 0
    for s, n in _chunks(cur.steps):
        c = cur.chunk(s, n)
        out = []
        ap = out.append
        for st, ep, lo, gn, lr, ev in zip(
            c["step"].tolist(),
            c["epoch"].tolist(),
            c["loss"].tolist(),
            c["grad_norm"].tolist(),
            c["lr"].tolist(),
            c["eval_loss"].tolist(),
        ):
            if st % eval_every == 0:
                ap("%d,%r,%s,%s,%r,%s\n" % (st, ep, _csv(lo), _csv(gn), lr, _csv(ev)))
                samples += 1
            else:
                ap("%d,%r,%s,%s,%r,\n" % (st, ep, _csv(lo), _csv(gn), lr))
        records += n
        samples += 4 * n
        f.write("".join(out))
    return records, samples


_HF_TRAIN = (
    '    {\n      "epoch": %r,\n      "grad_norm": %s,\n      "learning_rate": %r,\n'
    '      "loss": %s,\n      "step": %d\n    }'
)
_HF_EVAL = (
    '    {\n      "epoch": %r,\n      "eval_loss": %s,\n      "eval_runtime": %r,\n'
    '      "eval_samples_per_second": %r,\n      "eval_steps_per_second": %r,\n      "step": %d\n    }'
)


def write_hf(f, cur: Curves, eval_every: int) -> tuple[int, int]:
    steps = cur.steps
    head = {
        "best_global_step": None,
        "best_metric": None,
        "best_model_checkpoint": None,
        "epoch": cur.epochs,
        "eval_steps": eval_every,
        "global_step": steps,
        "is_hyper_param_search": False,
        "is_local_process_zero": True,
        "is_world_process_zero": True,
    }
    f.write(json.dumps(head, indent=2, sort_keys=True)[:-2] + ',\n  "log_history": [\n')
    records = samples = 0
    first = True
    loss_sum = 0.0
    for s, n in _chunks(steps):
        c = cur.chunk(s, n)
        out = []
        ap = out.append
        loss4 = np.round(c["loss"], 4)
        loss_sum += float(np.nansum(loss4))
        for st, ep, lo, gn, lr, ev in zip(
            c["step"].tolist(),
            c["epoch"].tolist(),
            loss4.tolist(),
            c["grad_norm"].tolist(),
            c["lr"].tolist(),
            c["eval_loss"].tolist(),
        ):
            ap(_HF_TRAIN % (ep, _num(gn), lr, _num(lo), st))
            if st % eval_every == 0:
                ap(_HF_EVAL % (ep, _num(ev), 12.3456, 81.004, 10.126, st))
                records += 1
                samples += 5
        records += n
        samples += 4 * n
        f.write(("" if first else ",\n") + ",\n".join(out))
        first = False
    runtime = steps * STEP_SECONDS
    summary = {
        "epoch": cur.epochs,
        "step": steps,
        "total_flos": 3.250414559428608e15,
        "train_loss": loss_sum / max(steps, 1),
        "train_runtime": runtime,
        "train_samples_per_second": round(8 * steps / runtime, 3),
        "train_steps_per_second": round(steps / runtime, 3),
    }
    body = json.dumps(summary, indent=2, sort_keys=True).replace("\n", "\n    ")
    f.write(("" if first else ",\n") + "    " + body + "\n  ],\n")
    tail = {
        "logging_steps": 1,
        "max_steps": steps,
        "num_input_tokens_seen": 0,
        "num_train_epochs": math.ceil(cur.epochs),
        "save_steps": 500,
        "stateful_callbacks": {
            "TrainerControl": {
                "args": {
                    "should_epoch_stop": False,
                    "should_evaluate": False,
                    "should_log": False,
                    "should_save": True,
                    "should_training_stop": True,
                },
                "attributes": {},
            }
        },
        "total_flos": 3.250414559428608e15,
        "train_batch_size": 8,
        "trial_name": None,
        "trial_params": None,
    }
    f.write(json.dumps(tail, indent=2, sort_keys=True)[2:] + "\n")
    return records, samples


_ESC = "\x1b"
_OUT_DIR = "/runs/bench_vits-January-01-2026_12+00AM-0000000"


def _coqui_block(
    t: str,
    i: int,
    last: int,
    g: int,
    lr: float,
    lr_avg: float,
    lo: float,
    lo_avg: float,
    gn: float,
    gn_avg: float,
    stt: float,
    st_avg: float,
    ldt: float,
    ld_avg: float,
) -> str:
    return (
        f"{_ESC}[1m   --> TIME: {t} -- STEP: {i}/{last} -- GLOBAL_STEP: {g}{_ESC}[0m\n"
        f"     | > current_lr: {lr!r}  ({lr_avg!r})\n"
        f"     | > loss: {lo!r}  ({lo_avg!r})\n"
        f"     | > grad_norm: tensor({gn:.4f})  (tensor({gn_avg:.4f}))\n"
        f"     | > step_time: {stt!r}  ({st_avg!r})\n"
        f"     | > loader_time: {ldt!r}  ({ld_avg!r})\n\n\n"
    )


def _running_avg(a: np.ndarray, epoch_steps: int) -> np.ndarray:
    """Coqui's KeepAverage: the mean of the epoch so far, reset at each epoch."""
    m = a.reshape(-1, epoch_steps)
    return (np.cumsum(m, axis=1) / np.arange(1, epoch_steps + 1)).reshape(-1)


def write_coqui(f, cur: Curves, epoch_steps: int) -> tuple[int, int]:
    steps = cur.steps
    n_epochs = -(-steps // epoch_steps)
    f.write(
        " > Training Environment:\n | > Backend: Torch\n | > Mixed precision: False\n"
        " | > Precision: float32\n | > Num. of CPUs: 2\n | > Num. of Torch Threads: 1\n"
        " | > Torch seed: 54321\n | > Torch CUDNN: True\n | > Torch CUDNN deterministic: False\n"
        " | > Torch CUDNN benchmark: False\n | > Torch TF32 MatMul: False\n"
        f" > Start Tensorboard: tensorboard --logdir={_OUT_DIR}\n\n > Model has 83059180 parameters\n\n"
    )
    chunk = max(CHUNK // epoch_steps, 1) * epoch_steps
    records = samples = 0
    best = math.inf
    prev_eval = None
    last_sec = -1
    tstr = ""
    for s, n in _chunks(steps, chunk):
        pad = -n % epoch_steps  # a partial last epoch: draw it whole, print only the real steps
        c = cur.chunk(s, n + pad)
        lr = np.round(c["lr"], 8)
        stt = np.round(c["step_time"], 4)
        ldt = np.round(c["loader_time"], 4)
        avgs = [_running_avg(a, epoch_steps).tolist() for a in (lr, c["loss"], c["grad_norm"], stt, ldt)]
        cols = [a[:n].tolist() for a in (c["step"], lr, c["loss"], c["grad_norm"], stt, ldt)]
        out = []
        ap = out.append
        for k in range(n):
            g = cols[0][k] - 1  # GLOBAL_STEP counts from 0
            i = g % epoch_steps
            sec = int(T0 + g * STEP_SECONDS)
            if sec != last_sec:
                last_sec = sec
                tstr = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(sec))
            if i == 0:
                ep = g // epoch_steps
                ap(
                    f"{_ESC}[4m{_ESC}[1m > EPOCH: {ep}/{n_epochs - 1}{_ESC}[0m\n --> {_OUT_DIR}\n\n"
                    f"{_ESC}[1m > TRAINING ({tstr}) {_ESC}[0m\n\n"
                )
            ap(
                _coqui_block(
                    tstr,
                    i,
                    epoch_steps - 1,
                    g,
                    cols[1][k],
                    avgs[0][k],
                    cols[2][k],
                    avgs[1][k],
                    cols[3][k],
                    avgs[2][k],
                    cols[4][k],
                    avgs[3][k],
                    cols[5][k],
                    avgs[4][k],
                )
            )
            if i == epoch_steps - 1 or g == steps - 1:
                j = k + (epoch_steps - 1 - i)  # eval at the epoch's end (the last, padded, epoch too)
                ev, ld = float(c["eval_loss"][j]), float(ldt[j])
                ap(f"{_ESC}[1m > EVALUATION {_ESC}[0m\n\n\n  {_ESC}[1m--> EVAL PERFORMANCE{_ESC}[0m\n")
                if prev_eval is None:
                    ap(f"     | > avg_loader_time: {ld!r} {_ESC}[0m(+0.0)\n     | > avg_loss: {ev!r} {_ESC}[0m(+0.0)\n")
                else:
                    for name, v, p in (("avg_loader_time", ld, prev_eval[0]), ("avg_loss", ev, prev_eval[1])):
                        col = 91 if v > p else 92
                        ap(f"     | > {name}:{_ESC}[{col}m {v!r} {_ESC}[0m({'+' if v - p >= 0 else ''}{v - p!r})\n")
                prev_eval = (ld, ev)
                records += 1  # trainproof counts the EVALUATION block as a record
                samples += 2
                if ev < best:
                    best = ev
                    ap(f"\n > BEST MODEL : {_OUT_DIR}/best_model_{g + 1}.pth\n")
                ap("\n")
        records += n
        samples += 5 * n
        f.write("".join(out))
    return records, samples


# TensorBoard Event protobuf, encoded by hand (field numbers from tensorboard's event.proto
# and summary.proto): Event{1: double wall_time, 2: int64 step, 3: string file_version,
# 5: Summary summary}; Summary{1: repeated Value value}; Value{1: string tag, 2: float
# simple_value}. Protobuf serialises known fields in field-number order, so these are the
# bytes SerializeToString gives.


def _varint(x: int) -> bytes:
    out = bytearray()
    while True:
        b = x & 0x7F
        x >>= 7
        if x:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


_MASK_DELTA = 0xA282EAD8


def _masked_crc(data: bytes) -> int:
    import google_crc32c

    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def frame(payload: bytes) -> bytes:
    """One TFRecord: length, masked CRC-32C of the length, payload, masked CRC-32C of it."""
    head = struct.pack("<Q", len(payload))
    return head + struct.pack("<I", _masked_crc(head)) + payload + struct.pack("<I", _masked_crc(payload))


def header_event(wall: float) -> bytes:
    fv = b"brain.Event:2"
    return b"\x09" + struct.pack("<d", wall) + b"\x1a" + _varint(len(fv)) + fv


class _ScalarEncoder:
    def __init__(self) -> None:
        import google_crc32c

        self._crc = google_crc32c.value
        self._pre: dict[str, tuple[bytes, int]] = {}
        self._heads: dict[int, bytes] = {}

    def value_prefix(self, tag: str) -> tuple[bytes, int]:
        p = self._pre.get(tag)
        if p is None:
            t = tag.encode()
            value_len = 1 + len(_varint(len(t))) + len(t) + 5
            summary = b"\x0a" + _varint(value_len) + b"\x0a" + _varint(len(t)) + t + b"\x15"
            p = self._pre[tag] = (b"\x2a" + _varint(len(summary) + 4) + summary, len(summary) + 4)
        return p

    def record(self, wall: float, step: int, tag: str, value: float) -> bytes:
        pre, _ = self.value_prefix(tag)
        payload = b"\x09" + struct.pack("<d", wall) + b"\x10" + _varint(step) + pre + struct.pack("<f", value)
        n = len(payload)
        head = self._heads.get(n)
        if head is None:
            h = struct.pack("<Q", n)
            head = self._heads[n] = h + struct.pack("<I", self._mask(self._crc(h)))
        return head + payload + struct.pack("<I", self._mask(self._crc(payload)))

    @staticmethod
    def _mask(crc: int) -> int:
        return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def write_tfevents(f, cur: Curves, eval_every: int) -> tuple[int, int]:
    enc = _ScalarEncoder()
    f.write(frame(header_event(T0)))
    records = 0
    for s, n in _chunks(cur.steps):
        c = cur.chunk(s, n)
        out = []
        ap = out.append
        rec = enc.record
        t1, t2, t3, t4 = TF_TAGS
        for st, ep, lo, gn, lr, ev in zip(
            c["step"].tolist(),
            c["epoch"].tolist(),
            c["loss"].tolist(),
            c["grad_norm"].tolist(),
            c["lr"].tolist(),
            c["eval_loss"].tolist(),
        ):
            w = T0 + 1.0 + st * STEP_SECONDS
            ap(rec(w, st, t1, lo))
            ap(rec(w + 1e-4, st, t2, gn))
            ap(rec(w + 2e-4, st, t3, lr))
            ap(rec(w + 3e-4, st, t4, ep))
            if st % eval_every == 0:
                ap(rec(w + 5e-4, st, EVAL_TAG, ev))
                records += 1
        records += 4 * n
        f.write(b"".join(out))
    return records, records


# --------------------------------------------------------------------------- driver


def generate(
    fmt: str,
    steps: int,
    out: Path,
    seed: int = 0,
    diverge_at: float | None = None,
    nan_at: float | None = None,
    eval_every: int = 100,
    epoch_steps: int = 1000,
) -> dict:
    """Write one log and its ``.meta.json`` sidecar; returns the metadata."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}")
    out.parent.mkdir(parents=True, exist_ok=True)
    cur = Curves(steps, seed, diverge_at, nan_at)
    tmp = out.with_name(out.name + ".part")
    t0 = time.perf_counter()
    if fmt == "tfevents":
        with open(tmp, "wb", buffering=1 << 20) as f:
            records, samples = write_tfevents(f, cur, eval_every)
    else:
        with open(tmp, "w", encoding="utf-8", newline="\n", buffering=1 << 20) as f:
            if fmt == "jsonl":
                records, samples = write_jsonl(f, cur, eval_every)
            elif fmt == "csv":
                records, samples = write_csv(f, cur, eval_every)
            elif fmt == "hf":
                records, samples = write_hf(f, cur, eval_every)
            else:
                records, samples = write_coqui(f, cur, epoch_steps)
    os.replace(tmp, out)
    meta = {
        "format": fmt,
        "steps": steps,
        "records": records,
        "samples": samples,
        "bytes": out.stat().st_size,
        "seed": seed,
        "diverge_at": diverge_at,
        "nan_at": nan_at,
        "eval_every": eval_every,
        "epoch_steps": epoch_steps if fmt == "coqui" else None,
        "seconds": round(time.perf_counter() - t0, 2),
    }
    Path(str(out) + ".meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def check() -> int:
    """Self-check: the event encoder against protobuf, the text formats against their parsers."""
    import csv as _csv_mod
    import io
    import tempfile

    from tensorboard.compat.proto import event_pb2

    enc = _ScalarEncoder()
    for tag, step, v in (("train/loss", 1, 2.5), ("eval/loss", 300, float("nan")), ("x" * 200, 2**40, -1e-7)):
        ev = event_pb2.Event(wall_time=T0 + 0.123, step=step)
        ev.summary.value.add(tag=tag, simple_value=v)
        ref = frame(ev.SerializeToString())
        if enc.record(T0 + 0.123, step, tag, v) != ref:
            print(f"FAILED: scalar event {tag!r} differs from protobuf's bytes")
            return 1
    if frame(header_event(T0)) != frame(
        event_pb2.Event(wall_time=T0, file_version="brain.Event:2").SerializeToString()
    ):
        print("FAILED: header event differs from protobuf's bytes")
        return 1
    with tempfile.TemporaryDirectory() as d:
        for fmt in FORMATS:
            p = Path(d) / FILE_NAMES[fmt]
            meta = generate(fmt, 2500, p, nan_at=0.9, epoch_steps=100)
            data = p.read_bytes()
            if fmt == "jsonl":
                rows = [json.loads(x) for x in data.decode().splitlines()]
                assert len(rows) == meta["records"], (len(rows), meta)
            elif fmt == "csv":
                rows = list(_csv_mod.DictReader(io.StringIO(data.decode())))
                assert len(rows) == 2500
            elif fmt == "hf":
                st = json.loads(data)
                assert len(st["log_history"]) == meta["records"] + 1
                assert data.decode() == json.dumps(st, indent=2, sort_keys=True) + "\n", "not HF's own layout"
            elif fmt == "tfevents":
                from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

                n = sum(len(e.summary.value) for e in EventFileLoader(str(p)).Load())
                assert n == meta["records"], (n, meta)
            elif fmt == "coqui":
                assert data.count(b"GLOBAL_STEP") == 2500 and data.count(b"EVAL PERFORMANCE") == 25
            print(f"  {fmt:8s} ok: {meta['records']:,} records, {meta['bytes']:,} bytes")
    print("check: event encoder byte-identical to protobuf; every format parses back")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("format", nargs="?", choices=FORMATS + ("all",))
    ap.add_argument("steps", nargs="?", type=float, help="logged steps (1e6 or 1000000)")
    ap.add_argument("out", nargs="?", help="output file; for 'all', a folder (one <fmt>_<steps>/ per format)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--diverge-at", type=float, metavar="FRAC", help="loss grows exponentially from this fraction of the run"
    )
    ap.add_argument("--nan-at", type=float, metavar="FRAC", help="loss and grad norm are NaN from this fraction on")
    ap.add_argument("--eval-every", type=int, default=100, help="steps between eval rows (default %(default)s)")
    ap.add_argument("--epoch-steps", type=int, default=1000, help="coqui: steps per epoch (default %(default)s)")
    ap.add_argument("--check", action="store_true", help="self-check the encoders and exit")
    args = ap.parse_args(argv)
    if args.check:
        return check()
    if not (args.format and args.steps and args.out):
        ap.error("FORMAT STEPS OUT are required (or --check)")
    steps = int(args.steps)
    fmts = FORMATS if args.format == "all" else (args.format,)
    for fmt in fmts:
        out = Path(args.out) / f"{fmt}_{steps}" / FILE_NAMES[fmt] if args.format == "all" else Path(args.out)
        meta = generate(fmt, steps, out, args.seed, args.diverge_at, args.nan_at, args.eval_every, args.epoch_steps)
        print(
            f"{fmt:8s} {steps:>10,} steps  {meta['records']:>11,} records  {meta['samples']:>11,} samples  "
            f"{meta['bytes'] / 2**20:9.1f} MiB  {meta['seconds']:6.1f}s  {out}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
