"""The optional columnar path of the JSON-lines and table (CSV, TSV) readers: ``polars``
parses a chunk of lines in compiled code when it is installed (the ``fast`` extra), and
the pure paths (:mod:`trainproof.formats.jsonl` with ``orjson``,
:mod:`trainproof.formats.csv`) stay the reference and the fallback. Tables: see
:class:`TableRead`; the rest of this docstring is the JSON-lines path.

The columnar path reads only what it can prove it reads exactly as the pure path does. A
chunk is taken only when every test below holds; otherwise :func:`jsonl_batches` gives
``None`` and the caller reads the whole file again on the pure path (nothing is reported
to the reader's state before then):

* the file is a plain (not gzip) file, its first bytes no byte-order mark;
* the chunk's bytes are ASCII and hold no backslash, ``\\r`` or ``null`` (escapes, other
  line ends and holes are the pure path's);
* polars parses the chunk with every column a float64 (the keys of the earlier chunks, or
  of the first lines, as its schema) or, where the chunk has a new key, with each column inferred as a 64-bit
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

# Helper modules by their full names, not `from . import`: a reader's helper never imports
# the package __init__ (which imports the readers).
import trainproof.formats._rows as _rows  # noqa: PLR0402

from ..runlog import Rows
from ._io import open_binary
from .lines import LineTooLong, byte_line_chunks, first_byte_line

#: Bytes parsed per chunk (the last, incomplete line is carried to the next). Measured at
#: 1e6 steps (2-core machine): from 16 MiB down to 2 MiB the read is no slower, and the
#: peak memory over polars' import falls from about 125 MB to 36 MB (CSV), polars' own
#: buffers growing with the chunk; below 1 MiB the calls into polars begin to cost.
CHUNK = 2 << 20

#: JSON-lines files smaller than this are read on the pure path: importing polars costs
#: about 0.27 s (2-core machine), and the columnar read saves about 7 ms a MB over the pure
#: one (1e6 steps, 137 MB: 1.4 s against 2.3 s, ``read_runlog`` in one process), so below
#: about 40 MB the import costs more than it saves.
JSONL_MIN_BYTES = 40 << 20

#: Tables (CSV, TSV) smaller than this are read on the pure path: the columnar read saves
#: about 15 ms a MB (1e6 steps, 77 MB: 1.2 s against 2.3 s), so it pays for polars' import
#: from about 18 MB.
TABLE_MIN_BYTES = 20 << 20

#: ``TRAINPROOF_COLUMNAR``: ``0`` never takes the columnar path; ``1`` takes it at any size
#: when polars is installed; unset, from the size of each reader's threshold up.
ENV = "TRAINPROOF_COLUMNAR"

_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")
_GZIP = b"\x1f\x8b"  # gzip's magic: a compressed log is the pure path's (the decompression cap)
_REFUSED = (b"\\", b"\r", b"null")
_NUMERIC = frozenset(("Int64", "Float64"))


def _polars():
    """The polars module, or ``None`` when it is not installed."""
    try:
        import polars
    except ImportError:
        return None
    return polars


def wanted(path: Path, least: int) -> bool:
    """Whether ``path`` is read on the columnar path: :data:`ENV` says so, or it is unset
    and the file has at least ``least`` bytes (:data:`JSONL_MIN_BYTES`,
    :data:`TABLE_MIN_BYTES`; a file that cannot be stat-ed is the pure path's, which
    reports why)."""
    mode = os.environ.get(ENV, "").strip()
    if mode == "0":
        return False
    if mode != "1":
        try:
            if os.stat(path).st_size < least:
                return False
        except OSError:
            return False
    return _polars() is not None


def _plain_start(f) -> bool:
    """Whether the stream ``f`` (at its start, left there) is not gzip and has no
    byte-order mark (both are the pure path's)."""
    head = f.read(4)
    f.seek(0)
    return not (head.startswith(_GZIP) or head.startswith(_BOMS))


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
        if not _plain_start(f):
            return None
        try:
            for body, final in byte_line_chunks(f, CHUNK):
                if not body:
                    continue
                rows = _chunk(pl, body, line, step_of, known, final)
                if rows is None:
                    return None
                out.append(rows)
                line += len(rows)
        except LineTooLong:
            return None
    return out


def _frame(pl, body: bytes, n: int, known: dict):
    """``(frame, present)``: the chunk parsed into float64 columns, and its int64
    ``(n, width)`` mask of the values present; ``None`` when a test fails.

    The keys seen in earlier chunks are given as the schema (every column float64: polars
    then refuses any value that is not a number, and parses no schema); a chunk with a key
    not yet seen holds more ``:`` than values read, and is parsed again with its schema
    inferred from all its lines (``known`` grows by its keys)."""
    colons = _count(body, b":")
    if not known:
        _seed(body, known)
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
            df.select(pl.all().is_not_null()).to_numpy().astype(bool, copy=False)  # one query
            if df.width
            else np.zeros((n, 0), dtype=bool)
        )
        if int(present.sum()) == colons:
            return df, present
    return None


def _count(body: bytes, byte: bytes) -> int:
    """How often the one byte ``byte`` occurs in ``body`` (numpy: about twice the speed of
    ``bytes.count`` on a chunk)."""
    return int(np.count_nonzero(np.frombuffer(body, dtype=np.uint8) == byte[0]))


#: Bytes of a chunk's first lines whose keys seed the schema (:func:`_seed`).
_SEED_BYTES = 1 << 16


def _seed(body: bytes, known: dict) -> None:
    """Add the keys of the first lines of ``body`` to ``known`` (float64 columns), so
    that polars parses the first chunk with a schema instead of inferring one from every
    line (three times the parse). A key the seed misses shows in the colon count, and the
    chunk is then parsed with its schema inferred."""
    pl = _polars()
    end = body.rfind(b"\n", 0, _SEED_BYTES)
    if end < 0 or _rows.loads is None:
        return
    for ln in body[:end].split(b"\n"):
        try:
            obj = _rows.loads(ln)
        except _rows.DecodeError:
            return
        if not isinstance(obj, dict):
            return
        for k in obj:
            known.setdefault(k, pl.Float64)


def _chunk(pl, body: bytes, first_line: int, step_of, known: dict, final: bool = False) -> Rows | None:
    """One chunk of whole lines as :class:`Rows`, or ``None`` (see the module docstring).
    ``final``: the chunk is the end of the file (its last line may lack its ``\\n``)."""
    if not body.isascii() or any(t in body for t in _REFUSED):
        return None
    n = _count(body, b"\n") + (final and not body.endswith(b"\n"))
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
        _rows.add_group(groups, steps, keys, pos, block, step_of)
    lines = np.arange(first_line, first_line + n, dtype=np.int64)
    return Rows(steps, lines, groups)


#: The bytes a plain numeric table holds besides its delimiter: digits, the decimal point,
#: exponents, signs and line ends. Anything else (a quote, a blank, a letter, a ``\\r``)
#: is the pure path's (quoted fields, stripping, ``nan`` and the printed scalars).
_TABLE_BYTES = b"0123456789.eE+-\n"


class TableRead:
    """The data rows of a plain numeric table (CSV, TSV), read by polars a chunk at a
    time for as long as each chunk is one the columnar path reads exactly as the pure path
    does; iterating gives ``(values, present, lines)`` per chunk, and :attr:`rest` says
    where the pure path takes over.

    A chunk is read here when the file is plain (no gzip, no byte-order mark), its first
    line a header that ``plan`` accepts, and the chunk holds whole lines (each ending in
    ``\\n``), each with exactly the header's field count, no blank line, and only the
    bytes of :data:`_TABLE_BYTES` and the delimiter; polars must parse every cell as a
    float64 (it refuses what ``float()`` refuses, such as ``e5``, ``1.2.3`` or ``--1``) or
    find it empty. The first chunk that fails, and everything after it, is the pure path's
    (from :attr:`rest`): the rows given out so far stay what they are, the pure path's
    reading does not depend on where its chunks start, and memory stays one chunk plus
    what the caller keeps.

    Args:
        path: a regular file.
        plan: given the header line (text without its line end), ``(delimiter, width)``
            when the table's header is plain, else ``None``.

    Attributes:
        started: the header was accepted (else nothing is given out and the whole file
            is the pure path's).
        rest: after iterating, ``None`` when every row was given out, else ``(offset,
            line)``: the byte offset and the number of the first line the pure path reads.

    Iterating gives per chunk ``values`` a float64 ``(n, width)`` array (NaN where
    empty), ``present`` a bool ``(n, width)`` array (the cell is not empty), ``lines`` the
    int64 ``(n,)`` line numbers.

    Raises:
        ReadError: the file cannot be opened (as the pure path would raise).
    """

    def __init__(self, path: Path, plan) -> None:
        self.path = path
        self.plan = plan
        self.started = False
        self.rest: tuple[int, int] | None = (0, 1)

    def __iter__(self):
        pl = _polars()
        if pl is None:
            return
        with open_binary(self.path) as f:
            if not _plain_start(f):
                return
            first = first_byte_line(f)
            if not first.endswith(b"\n") or not first.isascii() or any(t in first for t in (b"\r", b'"')):
                return
            got = self.plan(first[:-1].decode("ascii"))
            if got is None:
                return
            self.started = True
            delim, k = got
            d = delim.encode("ascii")
            schema = {f"c{j}": pl.Float64 for j in range(k)}
            offset, line = len(first), 2
            self.rest = (offset, line)
            try:
                for body, final in byte_line_chunks(f, CHUNK):
                    if not body:
                        continue
                    got = None if final else _table_chunk(pl, body, k, d, delim, schema)
                    if got is None:
                        return  # this chunk on: the pure path's (a last row without a line end too)
                    vals, present = got
                    n = len(vals)
                    yield vals, present, np.arange(line, line + n, dtype=np.int64)
                    offset, line = offset + len(body), line + n
                    self.rest = (offset, line)
            except LineTooLong:
                return
        self.rest = None


def _table_chunk(pl, body, k: int, d: bytes, delim: str, schema: dict) -> tuple[np.ndarray, np.ndarray] | None:
    """``(values, present)`` of a chunk of whole table lines, or ``None`` when a test of
    :class:`TableRead` fails."""
    if not body.isascii() or body.translate(None, _TABLE_BYTES + d) or b"\n\n" in body or body.startswith(b"\n"):
        return None
    n = _count(body, b"\n")
    if _count(body, d) != (k - 1) * n:
        return None
    try:
        df = pl.read_csv(body, has_header=False, schema=schema, separator=delim)
    except Exception:  # noqa: BLE001 - any refusal of polars sends the chunk to the pure path
        return None
    if df.height != n:
        return None
    present = df.select(pl.all().is_not_null()).to_numpy().astype(bool, copy=False)  # one query
    return df.to_numpy(), present
