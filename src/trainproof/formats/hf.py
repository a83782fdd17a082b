"""Hugging Face Trainer ``trainer_state.json``.

The file is one JSON object whose ``log_history`` list holds one entry per ``Trainer.log``
call. Training entries carry ``loss``, ``grad_norm``, ``learning_rate``, ``epoch`` and
``step``; evaluation entries carry ``eval_*`` keys; the final summary entry
(``train_runtime``, ``train_loss``, ``total_flos``, …) is a run average, kept in
``meta["summary"]`` and never read as a step's loss.

The object is read in chunks: each top-level value and each ``log_history`` entry is
decoded on its own, so the text held grows with the largest entry, not with the file; the
decoded records are held until the object ends, because a file with two ``log_history``
keys means the last one (what ``json.load`` and Hugging Face read). Python's ``json``
writes ``NaN``, ``Infinity`` and ``-Infinity``; they are values, not errors, and so are
the other spellings of a NaN (a ``"nan"`` string, a ``null``, see
:mod:`trainproof.formats.jsonl`).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from itertools import repeat
from pathlib import Path

import numpy as np

# The helper module by its full name, not `from . import`: a reader never imports the
# package __init__ (which imports the readers), and _rows's attributes stay patchable.
import trainproof.formats._rows as _rows  # noqa: PLR0402

from ..runlog import Record, Rows
from ._io import ReadError, encoding_of, open_text, raw_open
from ._values import JSON, as_step, flatten_numeric
from .lines import MAX_LINE

name = "hf"
description = "Hugging Face Trainer trainer_state.json"
file_names = ("trainer_state.json",)
suffixes = (".json",)
run_suffixes = ()
#: The Trainer rewrites the whole file at each save.
tail_mode = "whole"
preference = 0
#: Whether outputs anchor a finding at its line (a finding's line is a line of trainer_state.json).
line_anchors = True

#: Top-level keys kept as the run's declared intent.
META_KEYS = (
    "max_steps",
    "num_train_epochs",
    "logging_steps",
    "eval_steps",
    "save_steps",
    "train_batch_size",
    "best_metric",
    "best_global_step",
    "best_model_checkpoint",
    "global_step",
)
#: Keys that mark the end-of-training summary entry.
SUMMARY_KEYS = ("train_runtime", "total_flos")

_CHUNK = 1 << 20
#: The largest JSON value held in memory, in characters: a log_history entry is a few
#: hundred; a longer value is damage, and reading it whole would make memory grow with it.
MAX_VALUE = 4 * MAX_LINE
_WS = " \t\r\n"
_DECODER = JSON
_STRUCTURE = ',:[]{}" \t\r\n'


#: The Trainer's snapshot folders in its output folder, ``checkpoint-<global step>``.
_CHECKPOINT = re.compile(r"checkpoint-(\d+)$")


def snapshot(path: Path) -> tuple[Path, int | None] | None:
    """The output folder whose run a ``trainer_state.json`` at ``path`` records, and the
    snapshot's step (reader protocol hook): ``checkpoint-N/trainer_state.json`` is the
    state saved at step ``N``, a prefix of the run; the output folder's own file is the
    final state (``None``)."""
    if path.name != "trainer_state.json":
        return None
    m = _CHECKPOINT.match(path.parent.name)
    return (path.parent.parent, int(m.group(1))) if m else (path.parent, None)


def sibling_dirs(path: Path) -> tuple[Path, ...]:
    """Where the Trainer's TensorBoard callback writes the run of output folder ``path``:
    ``runs/<date>_<host>/``, its default logging folder (reader protocol hook)."""
    return (path / "runs",)


def sniff(path: Path, head: str) -> bool:
    """A JSON object with a ``log_history`` key (or HF's ``global_step`` bookkeeping)."""
    s = head.lstrip()
    if not s.startswith("{"):
        return False
    if '"log_history"' in s:
        return True
    first = s.split("\n", 1)[0].strip()
    try:  # one complete object on the first line is a JSONL record, not this format
        json.loads(first)
        return False
    except ValueError:
        pass
    return '"global_step"' in s and '"is_world_process_zero"' in s


class _Truncated(Exception):
    pass


def _ends_in_tear(buf: str, e: json.JSONDecodeError) -> bool:
    """At end of input: did decoding fail because the text stops, not because it is wrong?

    The decoder reports an unterminated string at the string's start, and a cut literal or
    number (``tr``, ``-Inf``, ``1.5e-``, ``\\u12``) at the token's start, so "the error is at
    the end" is not enough: the error is a tear when nothing but the last token follows it.
    """
    if e.msg.startswith("Unterminated string"):
        return True
    tail = buf[e.pos :].rstrip(_WS)
    return not any(c in _STRUCTURE for c in tail)


class _Scanner:
    """Decode one JSON value at a time from a text stream, counting lines."""

    def __init__(self, f) -> None:
        self.f = f
        self.buf = ""
        self.pos = 0
        self.line = 1
        self.eof = False
        self.consumed = 0  # characters dropped from the front of buf
        self.batch_from = 0  # no batch decoding before this offset (see _batch)

    def _more(self, cap: int | None = None) -> bool:
        """Read more text: as much again as the buffer holds (at least a chunk), and with
        ``cap`` no more than keeps the unread part of the buffer within ``cap``."""
        if self.eof:
            return False
        size = max(_CHUNK, len(self.buf))
        if cap is not None:
            size = min(size, max(cap - (len(self.buf) - self.pos), 1))
        chunk = self.f.read(size)
        if not chunk:
            self.eof = True
            return False
        if self.pos > _CHUNK:
            self.consumed += self.pos
            self.buf = self.buf[self.pos :]
            self.pos = 0
        self.buf += chunk
        return True

    def _advance(self, to: int) -> None:
        self.line += self.buf.count("\n", self.pos, to)
        self.pos = to

    def skip_ws(self) -> None:
        while True:
            b, p, n = self.buf, self.pos, len(self.buf)
            while p < n and b[p] in _WS:
                p += 1
            self._advance(p)
            if p < n or not self._more():
                return

    def peek(self) -> str:
        self.skip_ws()
        return self.buf[self.pos] if self.pos < len(self.buf) else ""

    def expect(self, chars: str) -> str:
        c = self.peek()
        if not c:
            raise _Truncated(f"file ends at line {self.line}, expected {chars!r}")
        if c not in chars:
            raise ReadError(f"not valid JSON at line {self.line}: expected {chars!r}, found {c!r}")
        self._advance(self.pos + 1)
        return c

    def value(self):
        self.skip_ws()
        while True:
            try:
                obj, end = self._decode()
            except RecursionError:
                raise ReadError(f"JSON nested too deeply at line {self.line}") from None
            except json.JSONDecodeError as e:
                # More bytes can only mend a value the buffer cuts short; wrong JSON is
                # an error now, not after the rest of the file has been read into memory.
                if self.pos < len(self.buf) and not _ends_in_tear(self.buf, e):
                    raise ReadError(f"not valid JSON at line {self.line}: {e.msg}") from None
                if len(self.buf) - self.pos > MAX_VALUE:
                    raise ReadError(
                        f"a JSON value at line {self.line} is longer than {MAX_VALUE:,} characters (not a log entry)"
                    ) from None
                if self._more(MAX_VALUE + 1):
                    continue
                raise _Truncated(f"file ends inside a value that starts at line {self.line}") from None
            except ValueError as e:  # anything else the decoder refuses is bad data, not a crash
                raise ReadError(f"not valid JSON at line {self.line}: {e}") from None
            if end >= len(self.buf) and self._more():
                continue  # a number may continue in the next chunk
            start_line = self.line
            self._advance(end)
            return obj, start_line

    def _decode(self):
        """``json`` raw_decode at the current position. An entry nested deeper than the
        interpreter's recursion limit allows is retried once with room for
        ``_DEEPEST`` more levels, so that what an entry decoded alone reads does not depend
        on whether it was batched (orjson reads up to 1,024 levels)."""
        try:
            return _DECODER.raw_decode(self.buf, self.pos)
        except RecursionError:
            old = sys.getrecursionlimit()
            sys.setrecursionlimit(old + _DEEPEST)
            try:
                return _DECODER.raw_decode(self.buf, self.pos)
            finally:
                sys.setrecursionlimit(old)

    def remaining_bytes(self) -> int:
        """Characters left after the current position, counted without keeping them."""
        rest = len(self.buf) - self.pos
        while not self.eof:
            chunk = self.f.read(_CHUNK)
            if not chunk:
                self.eof = True
            rest += len(chunk)
        return max(rest, 0)


_KEY = b'"log_history"'


def _one_history_key(path: Path) -> bool:
    """Whether ``path`` (UTF-8, plain or gzip) spells ``"log_history"`` exactly once and
    holds no ``\\u`` escape: then no other object key can decode to ``log_history`` (only
    a ``\\u`` escape writes a letter or ``_`` another way), so the one key there is is the
    last, and its entries can be handed on as they are decoded instead of held until the
    object ends. ``False`` for UTF-16 (the byte pattern is UTF-8's). The bytes are searched
    in 1 MiB chunks (an ASCII pattern matches the same in UTF-8 bytes as in their text);
    the search stops at the second spelling or the first escape."""
    tail = b""
    seen = 0
    try:
        with raw_open(path) as f:
            # A gzip stream is scanned up to its decompression cap, no further: the read
            # stops there too, and it is the read that notes the cap (once).
            limit = getattr(f, "limit", None)
            head = f.read(4)
            if encoding_of(head) == "utf-16":
                return False
            chunk = head
            while chunk:
                data = tail + chunk
                if b"\\u" in data:
                    return False
                seen += data.count(_KEY)
                if seen > 1:
                    return False
                tail = data[-(len(_KEY) - 1) :]
                size = _CHUNK if limit is None else min(_CHUNK, limit - f.tell())
                chunk = f.read(size) if size > 0 else b""
    except ReadError:  # unreadable or a corrupt stream: the read says what and where
        return False
    return seen == 1


def read(path: Path, state) -> Iterator[Record | Rows]:
    """Stream the ``log_history`` entries of a ``trainer_state.json`` as records.

    Raises:
        ReadError: not a JSON object, or ``log_history`` is not a list.
    """
    # ``json.load`` and HF keep the last of duplicated keys. Where the text shows that only
    # one key can be log_history (:func:`_one_history_key`, a scan that costs a fraction of
    # the decoding), its entries go on as they are decoded, so memory does not grow with the
    # history; otherwise each log_history array is held until the object ends, when it is
    # known which one is the last.
    streaming = _one_history_key(path)
    histories: list[tuple[list, dict, _Drops]] = []
    with open_text(path) as f:
        sc = _Scanner(f)
        seen_history = False
        try:
            if sc.peek() != "{":
                raise ReadError("not a trainer_state.json: the file is not a JSON object")
            sc.expect("{")
            if sc.peek() == "}":
                sc.expect("}")
                raise ReadError("trainer_state.json is an empty object (no log_history)")
            while True:
                key, _ = sc.value()
                if not isinstance(key, str):
                    raise ReadError(f"not valid JSON at line {sc.line}: object key is not a string")
                sc.expect(":")
                if key == "log_history":
                    if sc.peek() != "[":
                        # A tear inside (or right before) a log_history that is not a list
                        # leaves nothing to read: that is an error, not a torn tail.
                        val, ln = sc.value()
                        raise ReadError(f"log_history at line {ln} is {type(val).__name__}, not a list")
                    if streaming and seen_history:
                        # The file changed between the scan and this read (the Trainer
                        # rewrites it at each save): the first history was handed on.
                        raise ReadError("the file changed while it was read (a second log_history key)")
                    seen_history = True
                    cur: tuple[list, dict, _Drops] = ([], {}, state if streaming else _Drops())
                    histories.append(cur)
                    if streaming:
                        yield from _entries(sc, state, cur[1])
                    else:
                        for rec in _entries(sc, cur[2], cur[1]):
                            cur[0].append(rec)
                else:
                    val, _ = sc.value()
                    if (
                        key in META_KEYS
                        and not isinstance(val, bool)
                        and (val is None or isinstance(val, (int, float, str)))
                    ):
                        state.meta[key] = val
                if sc.expect(",}") == "}":
                    break
        except _Truncated as e:
            if not seen_history:
                raise ReadError(f"torn trainer_state.json: {e}") from None
            tail = f"torn file: {e}; everything before it was read"
        except ReadError as e:
            if not seen_history:
                raise
            # log_history was read whole; only the bookkeeping after it is damaged.
            tail = f"after log_history: {e}; the rest of the file was not read"
        else:
            tail = None
        if not seen_history:
            raise ReadError("trainer_state.json has no log_history")
        records, summary, drops = histories[-1]
        if len(histories) > 1:
            lost = sum(len(r) for r, _, _ in histories[:-1])
            state.notes.append(
                f"the file holds {len(histories)} log_history keys; the last one is read, as json.load and "
                f"Hugging Face read it ({lost} records of the earlier ones are not)"
            )
        if not streaming:  # a streamed history gave its drops to state as they came
            for note in drops.drops:
                state.drop(note)
        if tail is not None:
            state.drop(tail)
        if summary:
            state.meta["summary"] = summary
        yield from records


class _Drops:
    """The drops of one log_history array, given to the reader state only when the array
    is the one read (:func:`read`)."""

    def __init__(self) -> None:
        self.drops: list[str] = []

    def drop(self, note: str) -> None:
        self.drops.append(note)


#: How consecutive log_history entries are separated, as HF's ``indent=2`` writes them
#: first; a separator holding a line end can never be inside a JSON string.
_SEPARATORS = ("},\n    {", "},\n        {", "}, {", "},{")
#: Below this many characters of entries ahead, decoding them one at a time is as cheap.
_MIN_BATCH = 4096
#: Extra nesting levels allowed when decoding one entry with ``json`` (see _Scanner._decode).
_DEEPEST = 1100


def _step_of(keys: tuple) -> str | None:
    return "step" if "step" in keys else None


def _batch(sc: _Scanner, summary: dict) -> tuple[Rows | None, int] | None:
    """Decode every complete entry in the scanner's buffer at once (``orjson``) and move
    past them: ``(rows, entries that are not objects)``, or ``None`` when the text ahead
    does not split into entries exactly (then the caller decodes one entry at a time).

    The buffer is cut after the last entry separator; the cut text is decoded as one JSON
    array, and it is taken only when every separator turns out to be an entry boundary
    (the element count is the separator count plus one), so line numbers stay exact.
    """
    if _rows.loads is None:
        return None
    if sc.consumed + sc.pos < sc.batch_from:
        return None  # the text ahead was tried already
    if len(sc.buf) - sc.pos < _CHUNK:
        sc._more()
    buf, pos = sc.buf, sc.pos
    if len(buf) - pos < _MIN_BATCH or buf[pos : pos + 1] != "{":
        return None
    for sep in _SEPARATORS:
        idx = buf.rfind(sep, pos)
        if idx >= 0:
            break
    else:
        sc.batch_from = sc.consumed + len(buf)
        return None
    seg = buf[pos : idx + 1]
    pieces = seg.split(sep)
    try:
        objs = _rows.loads("[" + seg + "]")
    except _rows.DecodeError:  # e.g. NaN tokens: these entries one at a time
        objs = None
    # Line numbers come from the pieces, so every separator must be an entry boundary:
    # the element count alone can hide a separator inside a string cancelled by a
    # boundary written another way. With exactly one "{" per entry (no nested objects, no
    # braces in strings) every "{" after a separator starts an entry; anything else is
    # decoded an entry at a time.
    if objs is None or len(objs) != len(pieces) or seg.count("{") != len(pieces):
        sc.batch_from = sc.consumed + idx + 1
        return None
    nl = np.fromiter(map(str.count, pieces, repeat("\n")), dtype=np.int64, count=len(pieces))
    nl += sep.count("\n")
    lines = np.empty(len(pieces), dtype=np.int64)
    lines[0] = sc.line
    np.cumsum(nl[:-1], out=lines[1:])
    lines[1:] += sc.line
    skipped = 0
    if not set(map(type, objs)) <= {dict} or any(k in seg for k in SUMMARY_KEYS):
        keep = []
        for i, e in enumerate(objs):
            if not isinstance(e, dict):
                skipped += 1
            elif any(k in e for k in SUMMARY_KEYS):
                summary.update(flatten_numeric(e))
            else:
                keep.append(i)
        objs = [objs[i] for i in keep]
        lines = lines[np.array(keep, dtype=np.int64)]
    rows = _rows.rows_from_dicts(objs, lines, _step_of, "true" not in seg and "false" not in seg) if objs else None
    sc._advance(idx + len(sep) - 1)  # the next entry's "{"
    return rows, skipped


def _entries(sc: _Scanner, state, summary: dict) -> Iterator[Record | Rows]:
    sc.expect("[")
    if sc.peek() == "]":
        sc.expect("]")
        return
    skipped = 0
    while True:
        got = _batch(sc, summary)
        if got is not None:
            rows, n_bad = got
            skipped += n_bad
            if rows is not None:
                yield rows
            continue
        try:
            entry, line = sc.value()
        except ReadError as e:
            rest = sc.remaining_bytes()
            state.drop(f"log_history: {e}; the remaining {rest} characters were not read")
            raise _Truncated("inside log_history") from None
        if isinstance(entry, dict):
            nulls: list = []
            values = flatten_numeric(entry, holes=nulls)
            if any(k in entry for k in SUMMARY_KEYS):
                summary.update(values)
            else:
                step = as_step(entry.get("step"))
                values.pop("step", None)
                yield Record(step, values, line, tuple(k for k in nulls if k != "step"))
        else:
            skipped += 1
        if sc.expect(",]") == "]":
            break
    if skipped:
        state.drop(f"log_history: {skipped} entries are not objects and were skipped")
