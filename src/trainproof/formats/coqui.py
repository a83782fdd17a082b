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
from ._io import Lines, open_text

name = "coqui"
description = "Coqui Trainer text log (trainer_0_log.txt)"

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_STEP = re.compile(r"STEP:\s*(\d+)\s*/\s*(\d+)\s*--\s*GLOBAL_STEP:\s*(\d+)")
# The lookahead keeps a word that merely starts like a number ("info", "nano", "12abc")
# from reading as one. Digits before and after the point are split one way only
# (``\d+(?:\.\d*)?``, not ``\d+\.?\d*``): when the lookahead fails, an ambiguous split
# makes the engine try every way of cutting a long digit run (seconds for 10,000 digits).
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf(?:inity)?)"
                     r"(?![A-Za-z0-9_])", re.I)
_EPOCH = re.compile(r">\s*EPOCH:\s*(\d+)\s*/\s*(\d+)")
# The path runs to the end of the line: Colab's "/content/drive/My Drive/…" has a space.
# Greedy to the end of the line, stripped in code: a lazy ``(\S.*?)\s*$`` is quadratic
# on a long run of blanks inside the line.
_BEST = re.compile(r">\s*BEST MODEL\s*:\s*(\S.*)$")
_CKPT = re.compile(r">\s*CHECKPOINT\s*:\s*(\S.*)$")
#: ``print_eval``'s per-batch header inside an EVALUATION block (no ``/n`` and no GLOBAL_STEP).
_EVAL_BATCH = re.compile(r"-->\s*STEP:\s*\d+\s*$")
_STEP_IN_NAME = re.compile(r"_(\d+)\.(?:pth|pt|ckpt)(?:\.tar)?$")


def sniff(path: Path, head: str) -> bool:
    """A Coqui step header or its training-environment banner with metric lines."""
    text = ANSI.sub("", head)
    if _STEP.search(text):
        return True
    return "> Training Environment" in text and "| >" in text and ("> EPOCH:" in text or "Model has" in text)


def _count(digits: str) -> int | None:
    """A step or epoch count printed by the trainer; ``None`` for a digit run too long to be
    one (damage: ``int()`` refuses more than 4,300 digits, and a float would be infinite)."""
    return int(digits) if len(digits) <= 18 else None


def _int(step: float | None) -> int | None:
    return None if step is None else int(step)


def metric_line(line: str) -> tuple[str, str] | None:
    """``(name, value text)`` of a ``| > name: value`` line, else ``None``.

    Split by hand rather than with a regex: a pattern such as ``[|]\\s*>\\s*([^:]+?)\\s*:``
    backtracks cubically on a long run of blanks with no colon after it (a progress bar
    that lost its line breaks), minutes for one line of a few thousand tabs.
    """
    s = line.lstrip()
    if not s.startswith("|"):
        return None
    s = s[1:].lstrip()
    if not s.startswith(">"):
        return None
    name, sep, value = s[1:].partition(":")
    name = name.strip()
    if not sep or not name:
        return None
    return name, value.split("\n", 1)[0].strip()


def parse_value(text: str) -> float | None:
    """The current value of a metric field: ``1.5  (1.7)``, ``tensor(1.5, device=…)``,
    ``nan``. Returns ``None`` when the field holds no number."""
    t = text.strip()
    if t.startswith("tensor("):
        t = t[len("tensor("):]
    tok = t.partition(" ")[0]
    if "_" not in tok:
        # Where float() takes the whole first word (no underscore, which float() allows
        # and the pattern does not), the pattern matches exactly that word: same value,
        # without the regular expression.
        try:
            return float(tok)
        except ValueError:
            pass
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
        lines = Lines(f)
        for lineno, raw in enumerate(lines, 1):
            line = ANSI.sub("", raw) if "\x1b" in raw else raw
            if not raw.endswith("\n"):
                # The trainer ends every line it prints; an unfinished last line is cut
                # mid-write, and a cut number ("0.8123" torn to "0.") is another value.
                if line.strip():
                    state.drop(f"the last line ({lineno}) has no line end: cut mid-write "
                               "(a run killed or still writing?), so it was not read")
                break
            m = _STEP.search(line) if "STEP:" in line else None
            if m:
                if values and mode:
                    yield Record(step, values, start_line)
                values, mode, start_line, in_batch, eval_seen = {}, "train", lineno, False, False
                n = _count(m.group(3))
                step = float(n) if n is not None else None
                if _count(m.group(2)) is not None:
                    state.meta["steps_per_epoch"] = _count(m.group(2))
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
                mm = metric_line(line)
                if mm:
                    v = parse_value(mm[1])
                    if v is not None and not in_batch:
                        key = mm[0]
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
            em = _EPOCH.search(line) if "EPOCH:" in line else None
            if em:
                if values and mode:
                    yield Record(step, values, start_line)
                values, mode = {}, None
                if _count(em.group(2)) is not None and _count(em.group(1)) is not None:
                    state.meta["num_train_epochs"] = _count(em.group(2))
                    state.meta["last_epoch"] = _count(em.group(1))
                continue
            bm = _BEST.search(line) if "BEST MODEL" in line else None
            if bm:
                p = bm.group(1).rstrip()
                sm = _STEP_IN_NAME.search(p)
                best.append({"path": p, "step": _count(sm.group(1)) if sm else _int(step), "line": lineno})
                continue
            cm = _CKPT.search(line) if "CHECKPOINT" in line else None
            if cm:
                p = cm.group(1).rstrip()
                sm = _STEP_IN_NAME.search(p)
                last_ckpt = {"path": p, "step": _count(sm.group(1)) if sm else _int(step)}
        lines.note(state)
    if values and mode:
        yield Record(step, values, start_line)
    if best:
        state.meta["best_models"] = best
        state.meta["best_model_checkpoint"] = best[-1]["path"]
        if best[-1]["step"] is not None:
            state.meta["best_global_step"] = best[-1]["step"]
    if last_ckpt:
        state.meta["last_checkpoint"] = last_ckpt
