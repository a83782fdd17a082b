"""The optional columnar path of the JSON-lines reader: ``polars`` parses a chunk of lines
in compiled code when it is installed (the ``fast`` extra), and the pure path
(:mod:`trainproof.formats.jsonl` with ``orjson``) stays the reference and the fallback.

The columnar path reads only what it can prove it reads exactly as the pure path does. A
chunk is taken only when every test below holds; otherwise :func:`jsonl_batches` gives
``None`` and the caller reads the whole file again on the pure path (nothing is reported
to the reader's state before then):

* the file is a plain (not gzip) file, its first bytes no byte-order mark;
* the chunk's bytes are ASCII and hold no backslash, ``\\r`` or ``null`` (escapes, other
  line ends and holes are the pure path's);
* polars parses the chunk with every column a float64 (the keys of the earlier chunks as
  its schema) or, where the chunk has a new key, with each column inferred as a 64-bit
  integer or float: polars refuses a string, a boolean, a nested object, a list, the
  ``NaN``/``Infinity`` tokens and a number beyond a float's range, which are the pure
  path's (flattening, string numbers, non-finite spellings);
* one row per line: the chunk's line count is the frame's height (a blank or torn line
  is the pure path's, which skips and counts it);
* one value per ``:``: the chunk's colon count is the frame's count of values (a key
  repeated in one object, which polars reads first-wins and ``orjson`` last-wins, or a
  key holding a colon, is the pure path's).

Every value is then a plain JSON number in a flat object, each record's key set is the set
of its non-null columns, and the :class:`~trainproof.runlog.Rows` built here hold what
:func:`trainproof.formats._rows.rows_from_dicts` builds from the same lines
(``tests/formats/test_columnar.py`` checks it on the corpus, the fuzz corpus and the
examples). Memory stays bounded: the file is read :data:`CHUNK` bytes at a time, and a line
longer than :data:`~trainproof.formats.lines.MAX_LINE` sends the file to the pure path,
which skips such a line.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..runlog import Rows
from . import _rows
from ._io import _GZIP_MAGIC, open_binary
from .lines import MAX_LINE

#: Bytes parsed per chunk (the last, incomplete line is carried to the next): large enough
#: that the per-call cost of polars is a small part of each chunk, small enough to keep
#: the chunk's text and its frame a few tens of MB.
CHUNK = 16 << 20

#: Files smaller than this are read on the pure path: importing polars costs about 0.27 s
#: (2-core machine), what the pure path needs for about 15 MB of JSON lines, and the
#: columnar read saves about two thirds of the pure read's time (``bench/bench_readers.py``).
MIN_BYTES = 24 << 20

#: ``TRAINPROOF_COLUMNAR``: ``0`` never takes the columnar path; ``1`` takes it at any size
#: when polars is installed; unset, it is taken from :data:`MIN_BYTES` up.
ENV = "TRAINPROOF_COLUMNAR"

_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")
_REFUSED = (b"\\", b"\r", b"null")
_NUMERIC = frozenset(("Int64", "Float64"))


def _polars():
    """The polars module, or ``None`` when it is not installed."""
    try:
        import polars
    except ImportError:
        return None
    return polars


def wanted(path: Path) -> bool:
    """Whether ``path`` is read on the columnar path: :data:`ENV` says so, or it is unset
    and the file has at least :data:`MIN_BYTES` bytes (a file that cannot be stat-ed is the
    pure path's, which reports why)."""
    mode = os.environ.get(ENV, "").strip()
    if mode == "0":
        return False
    if mode != "1":
        try:
            if os.stat(path).st_size < MIN_BYTES:
                return False
        except OSError:
            return False
    return _polars() is not None


def jsonl_batches(path: Path, step_of) -> list[Rows] | None:
    """The records of a JSON-lines file as :class:`Rows` batches, or ``None`` when a test
    of the module docstring fails (the caller then reads the file on the pure path).

    Args:
        path: a regular file.
        step_of: given a record's key tuple, its step key or ``None`` (as the pure path).

    Raises:
        ReadError: the file cannot be opened (as the pure path would raise).
    """
    pl = _polars()
    if pl is None:
        return None
    out: list[Rows] = []
    line = 1
    known: dict = {}  # every key seen so far, as polars' schema (all float64)
    with open_binary(path) as f:
        carry = f.read(4)
        if carry.startswith(_GZIP_MAGIC) or carry.startswith(_BOMS):
            return None
        while True:
            block = f.read(CHUNK)
            data = carry + block if carry else block
            if not block:
                if data:
                    rows = _chunk(pl, data, line, step_of, known, final=True)
                    if rows is None:
                        return None
                    out.append(rows)
                return out
            end = data.rfind(b"\n")
            if end < 0:
                if len(data) > MAX_LINE:
                    return None
                carry = data
                continue
            body, carry = data[: end + 1], data[end + 1 :]
            if len(carry) > MAX_LINE:
                return None
            rows = _chunk(pl, body, line, step_of, known)
            if rows is None:
                return None
            out.append(rows)
            line += len(rows)


def _frame(pl, body: bytes, n: int, known: dict):
    """``(frame, present)``: the chunk parsed into float64 columns, and its int64
    ``(n, width)`` mask of the values present; ``None`` when a test fails.

    The keys seen in earlier chunks are given as the schema (every column float64: polars
    then refuses any value that is not a number, and parses no schema); a chunk with a key
    not yet seen holds more ``:`` than values read, and is parsed again with its schema
    inferred from all its lines (``known`` grows by its keys)."""
    colons = body.count(b":")
    for infer in (False, True) if known else (True,):
        try:
            if infer:
                df = pl.read_ndjson(body, infer_schema_length=None)
            else:
                df = pl.read_ndjson(body, schema=known)
        except Exception:  # noqa: BLE001 - any refusal of polars sends the file to the pure path
            return None
        if df.height != n:
            return None
        if infer:
            if not all(str(t) in _NUMERIC for t in df.dtypes):
                return None
            for c in df.columns:
                known.setdefault(c, pl.Float64)
            df = df.select(pl.all().cast(pl.Float64))
        present = (
            np.column_stack([s.is_not_null().to_numpy() for s in df.get_columns()])
            if df.width
            else np.zeros((n, 0), dtype=bool)
        )
        if int(present.sum()) == colons:
            return df, present
    return None


def _chunk(pl, body: bytes, first_line: int, step_of, known: dict, final: bool = False) -> Rows | None:
    """One chunk of whole lines as :class:`Rows`, or ``None`` (see the module docstring).
    ``final``: the chunk is the end of the file (its last line may lack its ``\\n``)."""
    if not body.isascii() or any(t in body for t in _REFUSED):
        return None
    n = body.count(b"\n") + (final and not body.endswith(b"\n"))
    got = _frame(pl, body, n, known)
    if got is None:
        return None
    df, present = got
    vals = df.to_numpy() if df.width else np.empty((n, 0))
    names = df.columns
    steps = np.full(n, np.nan)
    groups: list = []
    # Each record's key set as one code: an int64 of bits while the columns fit in one,
    # else the packed bits of its row.
    if df.width < 63:
        code = present.astype(np.int64) @ (np.int64(1) << np.arange(df.width, dtype=np.int64))
        _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    else:
        _, first, inverse = np.unique(np.packbits(present, axis=1), axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    for g in np.argsort(first, kind="stable").tolist():
        pos = np.flatnonzero(inverse == g)
        cols = np.flatnonzero(present[pos[0]])
        keys = tuple(names[j] for j in cols.tolist())
        block = np.ascontiguousarray(vals[np.ix_(pos, cols)]) if cols.size else np.empty((pos.size, 0))
        _rows._add_group(groups, steps, keys, pos, block, step_of)
    lines = np.arange(first_line, first_line + n, dtype=np.int64)
    return Rows(steps, lines, groups)
