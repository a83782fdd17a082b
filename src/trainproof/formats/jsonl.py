"""JSON Lines metric logs: one JSON object per line.

Covers hand-rolled ``metrics.jsonl`` loggers, LLaMA-Factory's ``trainer_log.jsonl``
(step key ``current_steps``), and anything else that writes one object per line. Nested
objects flatten to ``outer/inner`` keys. Lines that are not JSON objects (banners, a torn
last line of a killed run) are skipped and counted in the notes.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from .. import aliases
from ..runlog import Record
from ._io import Lines, open_text
from ._values import JSON, as_step, flatten_numeric

name = "jsonl"
description = "JSON Lines (one metrics object per line)"

_SNIFF_LINES = 20


def sniff(path: Path, head: str) -> bool:
    """At least one of the first lines is a JSON object and most ``{`` lines parse."""
    lines = [ln.strip() for ln in head.splitlines()]
    if len(head) >= 65536 and lines:
        lines = lines[:-1]  # the head may cut the last line
    lines = [ln for ln in lines if ln][:_SNIFF_LINES]
    objs = tried = 0
    for ln in lines:
        if not ln.startswith("{"):
            continue
        tried += 1
        try:
            if isinstance(JSON.decode(ln), dict):
                objs += 1
        except (ValueError, RecursionError):
            pass
    return objs >= 1 and objs * 2 >= tried


def parse_line(s: str, lineno: int) -> Record | None:
    """One stripped line as a record, or ``None`` when it is not a JSON object."""
    if not s.startswith("{"):
        return None
    try:
        obj = JSON.decode(s)
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict):
        return None
    values = flatten_numeric(obj)
    key = aliases.step_key(values.keys())
    step = None
    if key is not None:
        step = as_step(values.pop(key))
    return Record(step, values, lineno)


def skipped_note(count: int, first_line: int) -> str:
    """The TP-DATA-DROPPED note for lines that are not JSON objects (shared with ``watch``)."""
    return f"skipped {count} line(s) that are not JSON objects (first at line {first_line})"


def read(path: Path, state) -> Iterator[Record]:
    """Stream one record per JSON-object line."""
    skipped = 0
    first_skipped = None
    last_bad = False
    last_line = 0
    with open_text(path) as f:
        lines = Lines(f)
        for lineno, raw in enumerate(lines, 1):
            s = raw.strip()
            if not s:
                continue
            last_line = lineno
            rec = parse_line(s, lineno)
            if rec is None:
                skipped += 1
                last_bad = True
                if first_skipped is None:
                    first_skipped = lineno
                continue
            last_bad = False
            yield rec
    lines.note(state)
    if skipped:
        msg = skipped_note(skipped, first_skipped)
        if last_bad:
            msg += f"; the last line ({last_line}) is incomplete or not JSON (a run killed mid-write?)"
        state.drop(msg)
