"""JSON Lines metric logs: one JSON object per line.

Covers hand-rolled ``metrics.jsonl`` loggers, LLaMA-Factory's ``trainer_log.jsonl``
(step key ``current_steps``), and anything else that writes one object per line. Nested
objects flatten to ``outer/inner`` keys. Lines that are not JSON objects (banners, a torn
last line of a killed run) are skipped and counted in the notes.
"""
from __future__ import annotations

from collections.abc import Iterator
from itertools import repeat
from pathlib import Path

import numpy as np

from .. import aliases
from ..runlog import Record, Rows
from . import _rows
from ._io import MAX_LINE, open_text
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
    obj = _parse_object(s)  # as read() decodes a line, so that watch and epoch agree
    if obj is None:
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


#: Characters decoded per chunk (the last, incomplete line is carried to the next).
_CHUNK = 1 << 22


def _step_key(keys: tuple) -> str | None:
    return aliases.step_key(keys)


def _chunk_rows(lines: list[str], first_line: int, bad: list[int], no_bools: bool = False) -> Rows | None:
    """The records among ``lines`` (numbered from ``first_line``) as one batch; the line
    numbers of lines that are not JSON objects are appended to ``bad``. ``no_bools``:
    the lines hold no ``true``/``false`` token."""
    objs: list | None = None
    if _rows.loads is not None and all(map(str.startswith, lines, repeat("{"))):
        try:
            objs = list(map(_rows.loads, lines))
        except _rows.DecodeError:
            objs = None
        if objs is not None and not set(map(type, objs)) <= {dict}:
            objs = None
        if objs is not None:
            nums = np.arange(first_line, first_line + len(lines), dtype=np.int64)
            return _rows.rows_from_dicts(objs, nums, _step_key, no_bools)
    # Per line: blank lines, banners, torn lines, tokens orjson refuses.
    objs, nums = [], []
    for i, raw in enumerate(lines):
        s = raw.strip()
        if not s:
            continue
        obj = _parse_object(s)
        if obj is None:
            bad.append(first_line + i)
        else:
            objs.append(obj)
            nums.append(first_line + i)
    if not objs:
        return None
    return _rows.rows_from_dicts(objs, np.array(nums, dtype=np.int64), _step_key)


def _parse_object(s: str) -> dict | None:
    if not s.startswith("{"):
        return None
    if _rows.loads is not None:
        try:
            obj = _rows.loads(s)
            return obj if isinstance(obj, dict) else None
        except _rows.DecodeError:
            pass
    try:
        obj = JSON.decode(s)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def read(path: Path, state) -> Iterator[Rows]:
    """Stream the JSON-object lines, a chunk of lines at a time (:class:`Rows`)."""
    bad: list[int] = []
    overlong: list[int] = []
    last = (0, False)  # the last non-blank line, and whether it was skipped
    with open_text(path) as f:
        carry = ""
        lineno = 1  # the number of the line that starts ``carry``
        skipping = False  # reading through an overlong line, up to its end
        while True:
            chunk = f.read(_CHUNK)
            if not chunk:
                break
            if skipping:
                nl = chunk.find("\n")
                if nl < 0:
                    continue
                chunk, skipping = chunk[nl + 1:], False
                lineno += 1
            text = carry + chunk if carry else chunk
            cut = text.rfind("\n")
            if cut < 0:
                lines, carry = [], text
            else:
                lines, carry = text[:cut].split("\n"), text[cut + 1:]
            if lines:
                if len(text) >= MAX_LINE:  # given out as blank lines, as _io.Lines does
                    for i, ln in enumerate(lines):
                        if len(ln) >= MAX_LINE:
                            overlong.append(lineno + i)
                            lines[i] = ""
                rows, last = _chunk(lines, lineno, bad, last, "true" not in text and "false" not in text)
                if rows is not None:
                    yield rows
                lineno += len(lines)
            if len(carry) >= MAX_LINE:
                overlong.append(lineno)
                carry, skipping = "", True
        if carry:
            rows, last = _chunk([carry], lineno, bad, last)
            if rows is not None:
                yield rows
    if overlong:
        shown = ", ".join(str(n) for n in overlong[:5]) + (" …" if len(overlong) > 5 else "")
        state.drop(f"skipped {len(overlong)} line(s) longer than {MAX_LINE:,} characters "
                   f"(lines {shown}): not read")
    if bad:
        msg = skipped_note(len(bad), bad[0])
        if last[1]:
            msg += f"; the last line ({last[0]}) is incomplete or not JSON (a run killed mid-write?)"
        state.drop(msg)


def _chunk(lines: list[str], first_line: int, bad: list[int], last: tuple[int, bool], no_bools: bool = False):
    """``(rows or None, last)`` for a chunk of lines: see :func:`_chunk_rows`."""
    n_bad = len(bad)
    rows = _chunk_rows(lines, first_line, bad, no_bools)
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].strip():
            ln = first_line + i
            return rows, (ln, len(bad) > n_bad and bad[-1] == ln)
    return rows, last
