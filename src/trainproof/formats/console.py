"""Console captures (``nohup.out``, ``slurm-*.out``, ``train.log``) of training scripts.

Two shapes are read, anywhere in a line (progress bars share lines with them):

* HF Trainer's log dicts, printed as Python literals:
  ``{'loss': 1.234, 'grad_norm': 0.56, 'learning_rate': 2e-05, 'epoch': 0.1}`` (newer
  versions quote the numbers: ``{'loss': '1.234', …}``). They are parsed with
  ``ast.literal_eval`` (never ``eval``); bare ``nan``/``inf`` become values. The step is
  the ``'step'`` key when present, else the running count of train dicts. Eval dicts
  (``{'eval_loss': …}``) take the step of the last train dict; the end-of-training summary
  (``{'train_runtime': …}``) is kept as meta.
* Epoch lines of hand-written loops: ``Epoch 3/200 | Loss: 0.6924`` or
  ``Epoch [1/50], Train Loss: 1.9463, Train Acc: 20.34%, Val Loss: 1.9097``: the epoch
  number is the step and each ``Name: number`` pair a metric (``Train Loss`` ->
  ``train_loss``).

ANSI escapes and carriage-return progress output are ignored. A capture with none of these
lines is not a training log.
"""
from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from ..runlog import Record
from ._io import Lines, open_text
from .coqui import ANSI

name = "console"
description = "console capture: HF Trainer log dicts or 'Epoch N ... Loss: x' lines"

_DICT = re.compile(r"\{'(?:loss|eval_[A-Za-z0-9_]+|train_runtime|learning_rate|grad_norm|epoch)'\s*:[^{}]*\}")
_BARE = re.compile(r"(?<=[:\[,\s])(-?inf|nan)(?=\s*[,}\]])")
# ``\s*(?:[\[:]\s*)?`` rather than ``\s*[\[:]?\s*``: two blank runs that can split a long
# run of blanks either way make a failing search quadratic (20 s for 32,000 spaces).
_EPOCH_LINE = re.compile(r"\bepoch\b\s*(?:[\[:]\s*)?(\d+)\s*(?:/\s*(\d+))?\s*\]?", re.I)
# A name is up to six words, each starting with a letter ("Train Loss", "val/loss"), so a
# value printed without a separator before it ("lr 0.001 Loss: 0.5", "Step 200 Loss: 2.3")
# is not swallowed into the next name.
_PAIR = re.compile(r"(?<![A-Za-z0-9_])([A-Za-z][A-Za-z0-9_]*(?:[ ./-][A-Za-z][A-Za-z0-9_]*){0,5})\s*[:=]\s*"
                   r"([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+|nan|inf))\s*%?", re.I)


# Python refuses integer literals longer than this many digits (a ValueError, which would
# skip the whole dict); such a number is written as the float it rounds to, as the JSON
# readers read it.
_MAX_DIGITS = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 0
_HUGE_INT = re.compile(r"(?<![\w.])\d{%d,}(?![\w.])" % (_MAX_DIGITS + 1)) if _MAX_DIGITS else None


#: ``ast.literal_eval`` only ever sees a bounded text: a logged metrics dict is a few
#: hundred characters; anything longer than this is not one (and is skipped).
MAX_DICT_CHARS = 1 << 16


def _dict_values(text: str) -> dict | None:
    if len(text) > MAX_DICT_CHARS:
        return None
    if _HUGE_INT is not None:
        text = _HUGE_INT.sub("1e999", text)
    try:
        obj = ast.literal_eval(_BARE.sub(lambda m: f"'{m.group(1)}'", text))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(obj, dict):
        return None
    out: dict[str, float] = {}
    for k, v in obj.items():
        if not isinstance(k, str) or isinstance(v, bool):
            continue
        if isinstance(v, (int, float)):
            try:
                out[k] = float(v)
            except OverflowError:  # an integer literal too large for a float
                out[k] = float("inf") if v > 0 else float("-inf")
        elif isinstance(v, str):
            try:
                out[k] = float(v)
            except ValueError:
                continue
    return out


def _epoch_values(line: str) -> tuple[float, dict[str, float]] | None:
    m = _EPOCH_LINE.search(line)
    if not m:
        return None
    rest = line[m.end():]
    vals: dict[str, float] = {}
    for pm in _PAIR.finditer(rest):
        key = re.sub(r"[\s./-]+", "_", pm.group(1).strip().lower()).strip("_")
        if not key or key in ("epoch", "step"):
            continue
        try:
            vals[key] = float(pm.group(2))
        except ValueError:
            continue
    if not any("loss" in k for k in vals):
        return None
    return float(m.group(1)), vals


def sniff(path: Path, head: str) -> bool:
    """At least one HF log dict, or an epoch line with a loss."""
    text = ANSI.sub("", head)
    if _DICT.search(text):
        return True
    return any(_epoch_values(ln) for ln in text.splitlines()[:400])


def read(path: Path, state) -> Iterator[Record]:
    """Yield one record per log dict or epoch line."""
    train_count = 0
    last_step: float | None = None
    with open_text(path) as f:
        lines = Lines(f)
        for lineno, raw in enumerate(lines, 1):
            # A capture is mostly progress-bar lines: the substring tests skip the regexes
            # on the lines that cannot match them.
            line = ANSI.sub("", raw) if "\x1b" in raw else raw
            found = False
            for m in (_DICT.finditer(line) if "{'" in line else ()):
                vals = _dict_values(m.group(0))
                if vals is None:
                    continue
                found = True
                if "train_runtime" in vals:
                    state.meta.setdefault("summary", {}).update(vals)
                    continue
                step = vals.pop("step", None)
                if any(k.startswith("eval_") for k in vals):
                    yield Record(step if step is not None else last_step, vals, lineno)
                    continue
                train_count += 1
                last_step = step if step is not None else float(train_count)
                yield Record(last_step, vals, lineno)
            if not found and "epoch" in line.lower():
                ev = _epoch_values(line)
                if ev is not None:
                    if not raw.endswith("\n"):
                        # An epoch line has no closing delimiter: unfinished, its last
                        # number may be cut ("0.6924" torn to "0.6"). A log dict is read
                        # whole or not at all, so only epoch lines wait for their line end.
                        state.drop(f"the last line ({lineno}) has no line end: an epoch line cut "
                                   "mid-write (a run killed or still writing?), so it was not read")
                        continue
                    yield Record(ev[0], ev[1], lineno)
        lines.note(state)
