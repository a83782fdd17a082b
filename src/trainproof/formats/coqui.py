"""Coqui Trainer text logs (``trainer_0_log.txt``), as written by Coqui TTS / XTTS / VITS.

A train step block starts with a header line and lists one metric per line::

    --> STEP: 24/36 -- GLOBAL_STEP: 1000025            (newer trainers)
    --> TIME: 2024-05-02 03:11:07 -- STEP: 30/405 -- GLOBAL_STEP: 245650
         | > loss_mel: 19.08429  (23.57030)             current value (running average)

An ``EVALUATION`` block lists averages (``| > avg_loss: 1.70513 (-0.03757)``); they are
read as ``eval/<name>`` at the last global step seen (per-batch ``--> STEP: k`` values
printed with ``print_eval`` are not). A block ends at the first line that is neither a
``| >`` metric nor a ``-->`` sub-header. Colour codes (ANSI escapes) are
stripped first: the trainer colours values green/red inside the fields. Values may be
plain floats, ``tensor(…)`` reprs, ``nan`` or ``inf``. ``BEST MODEL`` and ``CHECKPOINT``
lines are kept as meta (path and step), with the epochs and steps per epoch the log
declares.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from ..runlog import Record
from ._io import open_text

name = "coqui"
description = "Coqui Trainer text log (trainer_0_log.txt)"

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_STEP = re.compile(r"STEP:\s*(\d+)\s*/\s*(\d+)\s*--\s*GLOBAL_STEP:\s*(\d+)")
_METRIC = re.compile(r"^\s*\|\s*>\s*([^:]+?)\s*:\s*(.*)$")
# The lookahead keeps a word that merely starts like a number ("info", "nano", "12abc")
# from reading as one.
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf(?:inity)?)(?![A-Za-z0-9_])",
                     re.I)
_EPOCH = re.compile(r">\s*EPOCH:\s*(\d+)\s*/\s*(\d+)")
# The path runs to the end of the line: Colab's "/content/drive/My Drive/…" has a space.
_BEST = re.compile(r">\s*BEST MODEL\s*:\s*(\S.*?)\s*$")
_CKPT = re.compile(r">\s*CHECKPOINT\s*:\s*(\S.*?)\s*$")
#: ``print_eval``'s per-batch header inside an EVALUATION block (no ``/n`` and no GLOBAL_STEP).
_EVAL_BATCH = re.compile(r"-->\s*STEP:\s*\d+\s*$")
_STEP_IN_NAME = re.compile(r"_(\d+)\.(?:pth|pt|ckpt)(?:\.tar)?$")


def sniff(path: Path, head: str) -> bool:
    """A Coqui step header or its training-environment banner with metric lines."""
    text = ANSI.sub("", head)
    if _STEP.search(text):
        return True
    return "> Training Environment" in text and "| >" in text and ("> EPOCH:" in text or "Model has" in text)


def parse_value(text: str) -> float | None:
    """The current value of a metric field: ``1.5  (1.7)``, ``tensor(1.5, device=…)``,
    ``nan``. Returns ``None`` when the field holds no number."""
    t = text.strip()
    if t.startswith("tensor("):
        t = t[len("tensor("):]
    m = _NUMBER.match(t)
    if not m:
        return None
    try:
        return float(m.group(0))
    except ValueError:
        return None


def read(path: Path, state) -> Iterator[Record]:
    """Yield one record per train step block and one per evaluation block."""
    mode = None  # "train" | "eval"
    step = None
    values: dict[str, float] = {}
    start_line = 0
    best: list[dict] = []
    last_ckpt = None
    in_batch = False  # inside a per-batch eval step, whose values are not the averages
    eval_seen = False  # an "> EVALUATION" header since the last train step block
    with open_text(path) as f:
        for lineno, raw in enumerate(f, 1):
            line = ANSI.sub("", raw)
            m = _STEP.search(line)
            if m:
                if values and mode:
                    yield Record(step, values, start_line)
                values, mode, start_line, in_batch, eval_seen = {}, "train", lineno, False, False
                step = float(m.group(3))
                state.meta["steps_per_epoch"] = int(m.group(2))
                continue
            if "> EVALUATION" in line:
                if values and mode:
                    yield Record(step, values, start_line)
                values, mode, start_line, in_batch, eval_seen = {}, "eval", lineno, False, True
                continue
            if "EVAL PERFORMANCE" in line and mode != "eval":
                # Outside an open evaluation block this header either follows an evaluation
                # whose block a foreign line closed (a stdout capture: the model's own prints
                # during test sentences) and reopens it, or, with no evaluation at all
                # (run_eval=False), lists train averages, which are not step values.
                if values and mode:
                    yield Record(step, values, start_line)
                values, in_batch = {}, False
                mode, start_line = ("eval", lineno) if eval_seen else (None, start_line)
                continue
            if mode is not None:
                mm = _METRIC.match(line)
                if mm:
                    v = parse_value(mm.group(2))
                    if v is not None and not in_batch:
                        key = mm.group(1).strip()
                        values[key if mode == "train" else f"eval/{key}"] = v
                    continue
                s = line.strip()
                if mode == "eval" and _EVAL_BATCH.search(s):
                    in_batch = True
                    continue
                if "EVAL PERFORMANCE" in s:
                    in_batch = False
                    continue
                # A block is its header, ``| >`` lines and ``-->`` sub-headers; any other
                # line ends it, so a banner printed after it (a resumed run appending
                # "| > Num. of GPUs: 1" …) is not read as its metrics. Older trainers print
                # epoch averages under "--> TRAIN PERFORMACE" (sic): not the last step's
                # values, so that header ends the step block too.
                if (s and not s.startswith(("|", "-->"))) or "TRAIN PERFORMA" in s:
                    if values:
                        yield Record(step, values, start_line)
                    values, mode = {}, None
            em = _EPOCH.search(line)
            if em:
                if values and mode:
                    yield Record(step, values, start_line)
                values, mode = {}, None
                state.meta["num_train_epochs"] = int(em.group(2))
                state.meta["last_epoch"] = int(em.group(1))
                continue
            bm = _BEST.search(line)
            if bm:
                p = bm.group(1)
                sm = _STEP_IN_NAME.search(p)
                best.append({"path": p, "step": int(sm.group(1)) if sm else (int(step) if step is not None else None),
                             "line": lineno})
                continue
            cm = _CKPT.search(line)
            if cm:
                p = cm.group(1)
                sm = _STEP_IN_NAME.search(p)
                last_ckpt = {"path": p, "step": int(sm.group(1)) if sm else (int(step) if step is not None else None)}
    if values and mode:
        yield Record(step, values, start_line)
    if best:
        state.meta["best_models"] = best
        state.meta["best_model_checkpoint"] = best[-1]["path"]
        if best[-1]["step"] is not None:
            state.meta["best_global_step"] = best[-1]["step"]
    if last_ckpt:
        state.meta["last_checkpoint"] = last_ckpt
