"""The record stream and its columns: :class:`Record`, :class:`Series`, :class:`RunLog`.

Readers yield :class:`Record` objects; :func:`build_runlog` turns that stream into a
:class:`RunLog` holding one numpy column per metric. Canonical metrics (``loss``,
``eval_loss``, ``lr``, …, see :mod:`trainproof.aliases`) are stored under their canonical
name; every other metric keeps its raw key.

**Holes are absent, never NaN.** An empty CSV cell or a JSON ``null`` is a *hole*: the
row holds the key with no value (a missing-value word such as ``"None"``, ``#N/A`` or
``<NA>`` is one too). A sparse table (Lightning ``CSVLogger``, a W&B export, a
reinforcement-learning progress table whose rollout rows leave every training column empty,
LLaMA-Factory's ``"eval_loss": null``) writes one wherever a metric was not logged in that
row, so a hole says nothing about the metric's value and is left out. A value is non-finite
only where it is spelled as non-finite (``NaN``, ``inf``, ``1.#QNAN``, a float NaN in a binary
format). A loss that is present and then absent for the rest of the run while records go on
is reported with its step (:func:`_loss_stops`): the note, and ``meta["loss_stopped"]`` for
the rule that warns of it, say how many of the records after it hold the key empty.

**Repeated steps.** A step logged more than once for a metric is kept as logged unless a
*resume* replaced it: when the step counter goes back (a record whose step is below the
one before it), the records from there on are a new segment, and for a step written in
several segments only the latest segment's writes are kept. Repeats within one segment
(two ranks writing one file, several rows a step) are all kept, in stream order, so a
NaN of one writer is judged; identical repeats are kept once.

**A step that counts within the epoch** (OpenMMLab's ``iter``, ``{"epoch": e, "step":
batch_idx}``) goes back where the epoch rises: that is no resume. Such a log's x axis is
the global step the ``(epoch, step)`` pair makes (:func:`_steps_within_epochs`), and the
resume rule above applies to it.

**Bounded per run.** A log read whole (:func:`build_runlog`, :func:`build_runlogs`) folds
a record identical to the one before it (the same explicit step, keys and values) while
reading, and keeps at most :func:`max_records` records and :func:`max_values` values of
each run: what comes after is left out, with a ``TP-DATA-DROPPED`` note saying where. So a
small compressed file that expands to a billion rows costs what its first records cost
(see :data:`MAX_RECORDS` for the memory this allows).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain

import numpy as np

from . import aliases
from ._arrays import intersect1d, median, setdiff1d, unique

#: The most records of one run read from a log (``TRAINPROOF_MAX_RECORDS`` says
#: otherwise), identical repeats folded into one included; the records after them are left
#: out (``TP-DATA-DROPPED``). Five times a run of a million logged steps; the shared
#: corpus's largest real log has about 10,000. With :data:`MAX_VALUES` it sets the memory
#: ceiling of reading and judging one run: about 150 bytes per record of two metrics and
#: 55 per value at the peak, so under 1.2 GB at either cap (measured on CSV logs of 2 and
#: 20 metrics; docs/safety.md).
MAX_RECORDS = 5_000_000
#: The most values (points of every metric together) of one run read from a log
#: (``TRAINPROOF_MAX_VALUES``): a million steps of 20 metrics.
MAX_VALUES = 20_000_000


def _raw(a, dtype) -> memoryview:
    """The bytes of ``a`` as a C-contiguous array of ``dtype``, without the copy that
    ``tobytes`` makes, for ``array.frombytes``."""
    return memoryview(np.ascontiguousarray(a, dtype=dtype)).cast("B")


class LimitError(ValueError):
    """A cap's environment variable (``TRAINPROOF_MAX_RECORDS``, ``TRAINPROOF_MAX_VALUES``)
    is set to something that is not a positive whole number. ``str(err)`` names it."""


def _cap(var: str, default: int) -> int:
    import os

    raw = os.environ.get(var)
    if raw is None or not raw.strip():
        return default
    try:
        n = int(raw.strip().replace("_", ""))
    except ValueError:
        n = 0
    if n <= 0:
        raise LimitError(f"{var}={raw[:40]!r} is not a positive whole number")
    return n


def _count(n: float) -> str:
    return f"{n:,.0f}" if math.isfinite(n) else "any number of"


def max_records() -> int:
    """The records one run keeps: ``TRAINPROOF_MAX_RECORDS`` or :data:`MAX_RECORDS`.

    Raises:
        LimitError: the variable is set and is not a positive whole number.
    """
    return _cap("TRAINPROOF_MAX_RECORDS", MAX_RECORDS)


def max_values() -> int:
    """The values one run keeps: ``TRAINPROOF_MAX_VALUES`` or :data:`MAX_VALUES` (errors
    as :func:`max_records`)."""
    return _cap("TRAINPROOF_MAX_VALUES", MAX_VALUES)


@dataclass
class Record:
    """One logged row.

    Attributes:
        step: training step, or ``None`` when the row carries none (the record index
            or the epoch is used then, see :func:`build_runlog`).
        values: raw metric key -> float. Non-numbers are absent, never 0; NaN and ±Inf
            are kept.
        line: 1-based source line (text formats) or record index (binary formats).
        holes: raw keys the row holds with no value (an empty CSV cell, a JSON
            ``null``): either a NaN written by a strict serializer or a key not logged in
            this row; :meth:`RunLogBuilder.build` tells which from the column's history.
    """

    step: float | None
    values: dict[str, float]
    line: int
    holes: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunStart:
    """In a record stream, where the records of the next run begin: a tracking store
    (an MLflow or Trackio SQLite database) holds many runs in one file, and its reader
    yields one ``RunStart`` before each run's records.

    Attributes:
        meta: what the tracker knows of the run, merged into its ``RunLog.meta``: ``run``
            (its name, shown beside the file), ``run_id``, ``experiment`` (the project or
            experiment it belongs to; ``doctor`` groups runs by it), ``started`` (ISO 8601
            time, UTC) where the store has them.
    """

    meta: Mapping


@dataclass
class Columns:
    """A batch of one metric's points, for readers that decode columns rather than rows
    (binary formats with one scalar per record): the same meaning as one :class:`Record`
    per point, at a fraction of the memory.

    Attributes:
        key: raw metric key.
        steps: float64 array of steps.
        values: float64 array (NaN and ±Inf kept).
        lines: int64 array of record indices (or source lines).
    """

    key: str
    steps: np.ndarray
    values: np.ndarray
    lines: np.ndarray

    def __len__(self) -> int:
        return int(self.values.shape[0])


@dataclass
class Rows:
    """A batch of consecutive records decoded together (readers of row formats that
    parse a chunk at a time): the same meaning as one :class:`Record` per row, in order.

    Attributes:
        steps: float64 array, shape ``(n,)``: each record's step, NaN where it has none.
        lines: int64 array, shape ``(n,)``: each record's source line.
        groups: ``(keys, positions, values)`` triples, one per key set: ``keys`` a tuple
            of ``k`` raw metric keys, ``positions`` an int64 array ``(m,)`` of the
            records (0-based, ascending) that carry exactly those keys, ``values`` a
            float64 array ``(m, k)`` (NaN and ±Inf kept). Every record is in at most
            one group (in none when it carries no metric).
        holes: ``(key, positions)`` pairs, at most one per raw key: the records
            (0-based, ascending int64) that hold ``key`` with no value (see
            :attr:`Record.holes`).
    """

    steps: np.ndarray
    lines: np.ndarray
    groups: list
    holes: list = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.steps.shape[0])


@dataclass
class Series:
    """One metric as parallel numpy arrays, sorted by step.

    Attributes:
        name: canonical name, or the raw key for unmapped metrics.
        key: the raw key the values came from.
        steps: float64 array of steps, non-decreasing: a step repeats only where it was
            logged several times with different values without the step counter going
            back (several writers of one file, several rows a step; see the module
            docstring), its writes in stream order.
        values: float64 array; NaN and ±Inf are kept.
        lines: int64 array of source lines.
    """

    name: str
    key: str
    steps: np.ndarray
    values: np.ndarray
    lines: np.ndarray

    def __len__(self) -> int:
        return int(self.values.shape[0])

    @property
    def finite_mask(self) -> np.ndarray:
        return np.isfinite(self.values)

    def finite(self) -> "Series":
        """The same series restricted to its finite values."""
        m = self.finite_mask
        return Series(self.name, self.key, self.steps[m], self.values[m], self.lines[m])


@dataclass
class RunLog:
    """A run read from one log (or one run directory).

    Attributes:
        path: the input path as given.
        format: reader name.
        series: metric name -> :class:`Series`.
        meta: declared intent read from the log (e.g. ``max_steps``, ``best_global_step``).
        notes: what the reader or normalizer dropped, merged or rewrote.
        mapping: canonical -> ``{"source", "ignored", "how"}`` (see :func:`aliases.resolve`).
        records: number of records read.
        step_range: ``(first, last)`` step over all records, or ``None``.
    """

    path: str
    format: str
    series: dict[str, Series] = field(default_factory=dict)
    meta: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    mapping: dict = field(default_factory=dict)
    records: int = 0
    step_range: tuple[float, float] | None = None
    explicit_steps: bool = False

    def get(self, name: str) -> Series | None:
        return self.series.get(name)


class _Column:
    __slots__ = ("rec", "vals")

    def __init__(self) -> None:
        # Typed arrays: 16 bytes a point instead of two Python objects.
        self.rec = array("q")
        self.vals = array("d")


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a == b) | (np.isnan(a) & np.isnan(b))


def _resolve_repeats(st: np.ndarray, vals: np.ndarray, seg: np.ndarray) -> tuple[np.ndarray, bool, bool]:
    """Which points of a series with repeated steps to keep (see the module docstring).

    Args:
        st, vals, seg: shape ``(m,)``, sorted by step, stream order within a step; ``seg``
            the segment of each point (non-decreasing in stream order).

    Returns:
        ``(keep, replaced, repeated)``: the boolean mask of the points kept; whether a
        later segment replaced a different value; whether a step keeps several different
        values.
    """
    m = st.size
    start = np.ones(m, dtype=bool)
    start[1:] = st[1:] != st[:-1]
    gid = np.cumsum(start) - 1
    ends = np.append(np.flatnonzero(start)[1:] - 1, m - 1)
    latest = seg[ends][gid]  # the latest segment that wrote each point's step
    keep = seg == latest
    gone = np.flatnonzero(~keep)
    replaced = bool(gone.size) and not np.all(_same(vals[gone], vals[ends[gid[gone]]]))
    # Identical writes of a step within its latest segment are kept once (the last).
    idx = np.flatnonzero(keep)
    v = vals[idx]
    nan = np.isnan(v)
    order = np.lexsort((idx, np.where(nan, 0.0, v), nan, gid[idx]))
    so = idx[order]
    same_next = (gid[so[1:]] == gid[so[:-1]]) & _same(vals[so[1:]], vals[so[:-1]])
    keep[so[:-1][same_next]] = False
    kept = np.flatnonzero(keep)
    repeated = bool(kept.size > 1 and np.any(st[kept[1:]] == st[kept[:-1]]))
    return keep, replaced, repeated


def build_runlog(
    records: Iterable[Record | Rows | Columns],
    path: str,
    fmt: str,
    meta: Mapping | None = None,
    notes: Iterable[str] = (),
    overrides: Mapping[str, str] | None = None,
) -> RunLog:
    """Collect a record stream into a :class:`RunLog`.

    The x axis of a record is its ``step``; records without one take the last step seen
    before them. A log in which no record has a step uses its ``epoch`` column as the x
    axis when it has one (Keras ``CSVLogger``), else the record index; a log whose step
    counts within the epoch takes the global step of its ``(epoch, step)`` pair, with a
    note (see the module docstring). Each series is
    sorted by step (stable); when a step is logged twice for the same metric the later
    write wins and, if the values differ, a note says so (a resumed or interleaved run).
    :class:`Rows` batches mean exactly their records in order. :class:`Columns` batches
    carry their own steps; for one key, rows from records come before column batches,
    which keep their stream order. Of a tracking store's stream (:class:`RunStart`
    markers), only the first run is collected (:func:`build_runlogs` gives every one).

    Args:
        records: the reader's stream.
        path, fmt: where it came from.
        meta, notes: the reader's meta and notes (copied).
        overrides: ``--map`` choices, canonical -> raw key.

    Raises:
        aliases.MappingError: an override names a column the log does not have.
    """
    b = _builder_of(records)
    return _trimmed(b, b.build(path, fmt, meta, notes, overrides, copy=False))


def _bounded() -> "RunLogBuilder":
    """A builder of one run read from a log: identical repeats folded, the caps applied."""
    return RunLogBuilder(max_records=max_records(), max_values=max_values())


def build_runlogs(
    records: Iterable[Record | Rows | Columns],
    path: str,
    fmt: str,
    meta: Mapping | None = None,
    notes: Iterable[str] = (),
    overrides: Mapping[str, str] | None = None,
) -> list[RunLog]:
    """Collect a record stream into one :class:`RunLog` per run it holds.

    A log of one run gives a list of one, the RunLog :func:`build_runlog` gives. A log that
    holds the columns of several runs (a W&B panel export, ``"<run> - train/loss"``) gives
    one RunLog per run, in the order of their names, each with ``meta["run"]`` set to its
    name; when ``overrides`` name a column of one run, only that run. A tracking store's
    stream (one :class:`RunStart` before each run's records) gives one RunLog per run, in
    the store's order, each with the marker's meta merged over ``meta``. Arguments and
    errors as :func:`build_runlog`.
    """
    it = iter(records)
    first = next(it, None)
    if type(first) is RunStart:
        parts = _runs_of(first, it)
        return [
            b.build(path, fmt, {**(meta or {}), **part_meta}, notes, overrides, copy=False) for part_meta, b in parts
        ]
    b = _builder_of(it if first is None else chain((first,), it))
    runs = b.runs()
    chosen = {aliases.run_of(col) for col in (overrides or {}).values()} & set(runs)
    if len(runs) < 2 or chosen:
        return _trimmed(b, [b.build(path, fmt, meta, notes, overrides, copy=False)])
    return _trimmed(b, [b.build(path, fmt, meta, notes, overrides, run=r) for r in runs])


#: Records read before the builder hands the allocator's free memory back (below, the
#: heap a read leaves is a few MB and the call would cost more than it returns).
_TRIM_RECORDS = 100_000


def _trimmed(b: "RunLogBuilder", built):
    """``built``, after the heap the build left free is handed back (a long log only):
    the build's temporaries, freed, would otherwise add to what judging then uses."""
    if b.records >= _TRIM_RECORDS:
        _return_free_heap()
    return built


def _return_free_heap() -> None:
    """Give the C allocator's free heap pages back to the system (glibc ``malloc_trim``;
    a no-op elsewhere).

    A long read leaves much of its heap free but resident: the reader's per-chunk arrays
    and the builder's columns, which grow by reallocation, interleave on glibc's heap
    (its mmap threshold rises with the first large buffer freed), and the holes they
    leave stay in the process's memory. At 1e6 steps of a ``trainer_state.json`` that
    is ~120 MiB, 30 bytes a value; the series that :meth:`RunLogBuilder.build` makes next
    are new allocations that cannot reuse it, so it would add to the peak.
    """
    import ctypes  # numpy has imported it already: no start-up cost

    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError, TypeError):  # not glibc (musl, macOS, Windows)
        return
    trim(0)


def _runs_of(first: RunStart, rest: Iterator) -> list[tuple[Mapping, "RunLogBuilder"]]:
    """The runs of a store's stream (:class:`RunStart` markers; ``first`` is the first),
    each as its meta and a builder holding its records."""
    b = _bounded()
    parts: list[tuple[Mapping, RunLogBuilder]] = [(first.meta, b)]
    for rec in rest:
        if type(rec) is RunStart:
            b = _bounded()
            parts.append((rec.meta, b))
        else:
            _add_one(b, rec)
    return parts


def _builder_of(records: Iterable[Record | Rows | Columns]) -> "RunLogBuilder":
    """A :class:`RunLogBuilder` holding every record of the stream; in a store's stream
    (:class:`RunStart` markers), those of its first run only."""
    b = _bounded()
    runs = 0
    for rec in records:
        # The stream is read to its end even past the first run: the reader completes
        # its ReadState (notes, drops) only then. A log of one run whose records reach a
        # cap is not read further: everything after is left out, and the note says so.
        if type(rec) is RunStart:
            runs += 1
        elif runs <= 1:
            _add_one(b, rec)
            if runs == 0 and b.full:
                break
    if b.records >= _TRIM_RECORDS:
        _return_free_heap()
    return b


def _add_one(b: "RunLogBuilder", rec) -> None:
    t = type(rec)
    if t is Rows:
        b.add_rows(rec)
    elif t is Columns:
        b.add_columns(rec)
    else:
        b.add(rec.step, rec.values, rec.line, rec.holes)


class RunLogBuilder:
    """The incremental form of :func:`build_runlog`: records go in one at a time (O(1)
    each, typed arrays), and :meth:`build` makes a RunLog of everything so far, as often
    as wanted, with exactly the semantics of :func:`build_runlog` (the live guardian
    judges the same RunLog ``trainproof judge`` would read from the same lines).

    With ``max_records`` or ``max_values`` (a log read whole; the live paths keep every
    record), a record identical to the one before it (the same explicit step, keys and
    values, no hole) is folded into it as it is added (the kept record takes its line: the
    later write, as :meth:`build` keeps it), and once either cap is reached the records
    after are counted, not kept: :meth:`build` notes them in ``meta["dropped"]``
    (``TP-DATA-DROPPED``).
    """

    def __init__(self, max_records: int | None = None, max_values: int | None = None) -> None:
        self._cols: dict[str, _Column] = {}
        self._holes: dict[str, array] = {}  # raw key -> record indices of its holes
        self._batches: dict[str, tuple[array, array, array]] = {}
        self._rec_steps = array("d")
        self._rec_lines = array("q")
        self._last_step = math.nan
        self._n = 0
        self._n_batched = 0
        self._bounded = max_records is not None or max_values is not None
        self._max_records = max_records if max_records is not None else math.inf
        self._max_values = max_values if max_values is not None else math.inf
        self._read = 0  # records read (kept or folded)
        self._values = 0  # values read
        self._folded = 0  # records folded into the one before them
        self._over_line: int | None = None  # the line of the first record past a cap
        # The last record kept, for folding: (step, values) of a foldable record, else None.
        self._prev: tuple[float, dict] | None = None

    @property
    def records(self) -> int:
        """Records added so far (rows, plus one per point of a column batch), folded ones
        included, those past a cap not."""
        return self._n + self._n_batched + self._folded

    @property
    def full(self) -> bool:
        """Whether a cap was reached: every record added from now on is left out."""
        return self._over_line is not None

    def _fits(self, counts: np.ndarray | int) -> int:
        """How many of the next records, holding ``counts`` values each, stay within the caps
        (``counts`` an int: the one next record, checked without building arrays, as
        :meth:`add` does once per record)."""
        if self.full:
            return 0
        if isinstance(counts, int):
            return int(self._read + 1 <= self._max_records and self._values + counts <= self._max_values)
        ok = (self._read + np.arange(1, counts.size + 1) <= self._max_records) & (
            self._values + np.cumsum(counts) <= self._max_values
        )
        return counts.size if ok.all() else int(np.argmin(ok))

    def _take(self, records: int, values: int, first_left_out: int | None) -> None:
        """Count ``records`` records of ``values`` values as read; ``first_left_out``: the
        line of the first record past a cap, if one was."""
        self._read += records
        self._values += values
        if first_left_out is not None and self._over_line is None:
            self._over_line = int(first_left_out)
            self._prev = None

    def add(self, step: float | None, values: Mapping[str, float], line: int, holes: Iterable[str] = ()) -> None:
        """Add one row: ``values`` maps raw keys to floats, ``holes`` names the keys the
        row holds with no value (:attr:`Record.holes`); a row without a finite step takes
        the last step seen before it."""
        if self._bounded:
            if not self._fits(len(values)):
                self._take(0, 0, line)
                return
            self._take(1, len(values), None)
            holes = tuple(holes)
            explicit = step is not None and math.isfinite(step)
            prev = self._prev
            if explicit and not holes and prev is not None and prev[0] == step and prev[1] == values:
                self._rec_lines[-1] = line
                self._folded += 1
                return
            self._prev = (float(step), dict(values)) if explicit and not holes else None
        if step is not None and math.isfinite(step):
            self._last_step = float(step)
        self._rec_steps.append(self._last_step)
        self._rec_lines.append(line)
        n = self._n
        cols = self._cols
        for k, v in values.items():
            c = cols.get(k)
            if c is None:
                c = cols[k] = _Column()
            c.rec.append(n)
            c.vals.append(v)
        for k in holes:
            h = self._holes.get(k)
            if h is None:
                h = self._holes[k] = array("q")
            h.append(n)
        self._n = n + 1

    def add_rows(self, rows: Rows) -> None:
        """Add a :class:`Rows` batch: exactly what :meth:`add` of each of its records, in
        order, would add, in O(keys) Python operations."""
        if self._bounded:
            rows = self._bounded_rows(rows)
        n = len(rows)
        if not n:
            return
        n0 = self._n
        steps = np.asarray(rows.steps, dtype=np.float64)
        known = np.isfinite(steps)
        if known.all():
            filled = steps
        elif known.any():
            idx = np.where(known, np.arange(n), -1)
            np.maximum.accumulate(idx, out=idx)
            filled = np.where(idx >= 0, steps[np.maximum(idx, 0)], self._last_step)
        else:
            filled = np.full(n, self._last_step)
        if known.any():
            self._last_step = float(steps[np.flatnonzero(known)[-1]])
        self._rec_steps.frombytes(_raw(filled, np.float64))
        self._rec_lines.frombytes(_raw(rows.lines, np.int64))
        per_key: dict[str, list] = {}
        for keys, pos, vals in rows.groups:
            for j, k in enumerate(keys):
                per_key.setdefault(k, []).append((pos, vals[:, j]))
        cols = self._cols
        for k, parts in per_key.items():
            if len(parts) == 1:
                pos, v = parts[0]
            else:  # one key in several key sets: back into record order
                pos = np.concatenate([p for p, _ in parts])
                v = np.concatenate([x for _, x in parts])
                order = np.argsort(pos, kind="stable")
                pos, v = pos[order], v[order]
            c = cols.get(k)
            if c is None:
                c = cols[k] = _Column()
            c.rec.frombytes(_raw(np.asarray(pos, dtype=np.int64) + n0, np.int64))
            c.vals.frombytes(_raw(v, np.float64))
        for k, pos in rows.holes:
            h = self._holes.get(k)
            if h is None:
                h = self._holes[k] = array("q")
            h.frombytes(_raw(np.asarray(pos, dtype=np.int64) + n0, np.int64))
        self._n = n0 + n

    def _bounded_rows(self, rows: Rows) -> Rows:
        """``rows`` cut at the caps, each record identical to the one before it folded into
        that one (across the batch's start too; see the class docstring)."""
        n = len(rows)
        if not n:
            return rows
        steps = np.asarray(rows.steps, dtype=np.float64)
        lines = np.asarray(rows.lines, dtype=np.int64)
        groups = [(keys, np.asarray(pos, dtype=np.int64), vals) for keys, pos, vals in rows.groups]
        holes = [(key, np.asarray(pos, dtype=np.int64)) for key, pos in rows.holes]
        counts = np.zeros(n, dtype=np.int64)
        for keys, pos, _vals in groups:
            counts[pos] = len(keys)
        take = self._fits(counts)
        self._take(take, int(counts[:take].sum()), int(lines[take]) if take < n else None)
        if take < n:
            n, steps, lines = take, steps[:take], lines[:take]
            groups = [(k, pos[pos < take], vals[pos < take]) for k, pos, vals in groups]
            holes = [(k, pos[pos < take]) for k, pos in holes]
            if not n:
                return Rows(steps, lines, [], [])
        gid = np.full(n, -1, dtype=np.int64)
        same = np.zeros(n, dtype=bool)  # the record holds what the record before it holds
        for g, (_keys, pos, vals) in enumerate(groups):
            gid[pos] = g
            if pos.size > 1:
                adj = (pos[1:] == pos[:-1] + 1) & np.all(vals[1:] == vals[:-1], axis=1)
                same[pos[1:][adj]] = True
        foldable = np.isfinite(steps)
        for _k, pos in holes:
            foldable[pos] = False
        fold = np.zeros(n, dtype=bool)
        fold[1:] = same[1:] & foldable[1:] & foldable[:-1] & (steps[1:] == steps[:-1]) & (gid[1:] == gid[:-1])
        prev = self._prev
        if prev is not None and foldable[0] and gid[0] >= 0 and steps[0] == prev[0]:
            keys, _pos, vals = groups[gid[0]]
            fold[0] = dict(zip(keys, vals[0].tolist())) == prev[1]
        kept = np.flatnonzero(~fold)
        if kept.size and not self.full:
            k = int(kept[-1])
            if foldable[k] and gid[k] >= 0:
                keys, pos, vals = groups[gid[k]]
                self._prev = (float(steps[k]), dict(zip(keys, vals[int(np.searchsorted(pos, k))].tolist())))
            else:
                self._prev = None
        if kept.size == n:
            return rows if take == len(rows) else Rows(steps, lines, groups, holes)
        # A kept record takes the line of the last record folded into it; records folded
        # into the last record of the batch before take theirs to it.
        self._folded += n - kept.size
        if kept.size == 0 or kept[0] > 0:
            self._rec_lines[-1] = int(lines[kept[0] - 1 if kept.size else n - 1])
        last_of = np.append(kept[1:] - 1, n - 1) if kept.size else kept
        new_index = np.full(n, -1, dtype=np.int64)
        new_index[kept] = np.arange(kept.size)
        out_groups = []
        for keys, pos, vals in groups:
            m = new_index[pos] >= 0
            if m.any():
                out_groups.append((keys, new_index[pos[m]], vals[m]))
        out_holes = [(key, new_index[pos]) for key, pos in holes if pos.size]
        return Rows(steps[kept], lines[last_of], out_groups, out_holes)

    def set_records(self, n: int) -> None:
        """Declare how many records the data came from (when it was added as column
        batches taken from a RunLog read whole, whose point count is not its row count)."""
        self._n_batched = int(n) - self._n

    def add_columns(self, col: Columns) -> None:
        """Add a column batch (one key, its own steps)."""
        if self._bounded and len(col):
            take = self._fits(np.ones(len(col), dtype=np.int64))
            self._take(take, take, int(col.lines[take]) if take < len(col) else None)
            if take < len(col):
                col = Columns(col.key, col.steps[:take], col.values[:take], col.lines[:take])
        b = self._batches.get(col.key)
        if b is None:
            b = self._batches[col.key] = (array("d"), array("d"), array("q"))
        b[0].frombytes(_raw(col.steps, np.float64))
        b[1].frombytes(_raw(col.values, np.float64))
        b[2].frombytes(_raw(col.lines, np.int64))
        self._n_batched += len(col)

    def runs(self) -> list[str]:
        """The names of the runs whose columns were added, sorted, when there are two or
        more (a W&B panel export of several runs); ``[]`` for a log of one run."""
        return sorted(aliases.runs_in(set(self._cols) | set(self._batches)))

    def build(
        self,
        path: str,
        fmt: str,
        meta: Mapping | None = None,
        notes: Iterable[str] = (),
        overrides: Mapping[str, str] | None = None,
        copy: bool = True,
        run: str | None = None,
    ) -> RunLog:
        """The RunLog of everything added so far (see :func:`build_runlog`).

        In order: the columns of the runs not judged are set aside (:func:`_other_runs`)
        and the others mapped to canonical names (:func:`aliases.resolve`); every record's
        x value is made (:meth:`_record_steps`); each column becomes a :class:`Series`,
        its resumed and repeated steps resolved (:meth:`_collect_series`); totals are
        summed from their parts (:func:`_add_sum`); then come the notes of repeated steps
        (:func:`_repeat_notes`), of a loss that stops (:func:`_loss_stops`), of aliases
        not read (:func:`_alias_notes`) and of the caps (:meth:`_run_meta`), in that order
        after the reader's ``notes``.

        Args:
            copy: copy the arrays out of the builder (needed when more records will be
                added while the RunLog is alive, or when several runs are built from it;
                ``False`` only for a one-shot build).
            run: for a log of several runs (:meth:`runs`), the one to build; ``None``
                picks one (see :func:`_other_runs`).

        Raises:
            aliases.MappingError: an override names a column the log does not have.
        """
        out_notes = list(notes)
        all_keys = set(self._cols) | set(self._batches)
        dropped = _other_runs(all_keys, self._cols, self._batches, overrides, out_notes, run)
        mapping = aliases.resolve(all_keys - dropped, overrides)
        richer = _richer_loss(mapping, self._cols, self._batches)
        if richer:
            out_notes.append(richer)
        steps_all, explicit_steps = self._record_steps(mapping, out_notes)
        lines_all = _view(self._rec_lines, np.int64, copy)
        series, rec_of, rewritten, repeated = self._collect_series(
            sorted(all_keys - dropped), mapping, steps_all, lines_all, copy
        )
        for canon, m in mapping.items():
            if m.get("sum_of"):
                _add_sum(canon, m, series, out_notes)
        out_notes += _repeat_notes(rewritten, repeated)
        others = [np.frombuffer(self._cols[k].rec, dtype=np.int64) for k in dropped if k in self._cols]
        stop = _loss_stops(mapping, rec_of, self._holes, steps_all, lines_all, self._n, others)
        if stop is None and not rec_of:
            stop = _loss_stops_in_columns(mapping, series)
        if stop:
            out_notes.append(stop[0])
        out_notes += _alias_notes(mapping)
        step_range = self._step_range(steps_all, series, one_run_of_several=bool(dropped))
        return RunLog(
            path=path,
            format=fmt,
            series=series,
            meta=self._run_meta(meta, out_notes, stop, run),
            notes=out_notes,
            mapping=mapping,
            records=self.records,
            step_range=step_range,
            explicit_steps=explicit_steps,
        )

    def _record_steps(self, mapping: dict, notes: list[str]) -> tuple[np.ndarray, bool]:
        """Every row record's x value, and whether the log carries steps of its own.

        A log in which no record has a step takes its epoch column
        (:meth:`_steps_without_step`); records before the first step take the first step
        (:func:`_fill_leading`); a step that counts within the epoch becomes the global
        step (:meth:`_steps_in_epochs`). The notes of the last two are appended to
        ``notes``.

        Args:
            mapping: canonical name -> ``{"source", ...}`` (:func:`aliases.resolve`).
            notes: the RunLog's notes, appended to.

        Returns:
            ``(steps, explicit)``: ``steps`` a float64 array of shape ``(n,)`` (``n`` the
            row records added), NaN nowhere; filling it never writes to the builder (where
            the epoch is the x axis it is a view of the epoch column, read only);
            ``explicit`` whether a row record has a step or a column batch was added.
        """
        n = self._n
        steps = np.frombuffer(self._rec_steps, dtype=np.float64).copy() if n else np.empty(0)
        explicit = (bool(n) and not np.all(np.isnan(steps))) or self._n_batched > 0
        if n and not explicit:
            steps = self._steps_without_step(mapping, notes)
        elif n and np.isnan(steps).any():
            steps = _fill_leading(steps)
        if n > 1 and explicit:
            steps = self._steps_in_epochs(steps, mapping, notes)
        return steps, explicit

    def _steps_without_step(self, mapping: dict, notes: list[str]) -> np.ndarray:
        """The x axis of a log in which no record has a step: its epoch column when every
        row record holds a finite epoch (Keras ``CSVLogger``; noted in ``notes``), else the
        record index. Returns a float64 array of shape ``(n,)``."""
        n = self._n
        steps = np.arange(n, dtype=np.float64)
        epoch_key = mapping.get("epoch", {}).get("source")
        if epoch_key is not None:
            ec = self._cols[epoch_key]
            ev = np.asarray(ec.vals, dtype=np.float64)
            if len(ec.rec) == n and np.all(np.isfinite(ev)):
                steps = ev
                notes.append("no step column: the epoch is the x axis")
        return steps

    def _steps_in_epochs(self, steps: np.ndarray, mapping: dict, notes: list[str]) -> np.ndarray:
        """``steps`` (float64, shape ``(n,)``, filled), or the global step when the step
        counts within the epoch (:func:`_steps_within_epochs`; its note appended to
        ``notes``): a new array of the same shape."""
        epoch_key = mapping.get("epoch", {}).get("source")
        ec = self._cols.get(epoch_key) if epoch_key is not None else None
        if ec is None or not len(ec.rec):
            return steps
        within = _steps_within_epochs(
            steps, np.frombuffer(ec.rec, dtype=np.int64), np.frombuffer(ec.vals, dtype=np.float64)
        )
        if within is None:
            return steps
        notes.append(within[1])
        return within[0]

    def _collect_series(
        self, keys: list[str], mapping: dict, steps_all: np.ndarray, lines_all: np.ndarray, copy: bool
    ) -> tuple[dict[str, Series], dict[str, np.ndarray], list[str], list[str]]:
        """One :class:`Series` per raw key, its repeated steps resolved (see the module
        docstring): sorted by step (stable), the writes a resume replaced left out
        (:func:`_resolve_steps`).

        Args:
            keys: the raw keys to collect, in the order the series are made.
            mapping: canonical name -> ``{"source", ...}``: a key that is a source is
                stored under its canonical name; another key under itself, or
                ``raw:<key>`` where it is a canonical name (possible after ``--map``).
            steps_all, lines_all: every row record's x value (float64) and line (int64),
                shape ``(n,)``.
            copy: copy the values out of the builder (see :meth:`build`).

        Returns:
            ``(series, rec_of, rewritten, repeated)``: name -> Series; raw key -> the
            record indices (int64, ascending) of its row points, for the keys rows hold;
            the keys of which a resume replaced a different value; the keys (the epoch
            counter's aside) that keep several different values at one step.
        """
        source_to_name = {m["source"]: canon for canon, m in mapping.items()}
        seg_all = _segments(steps_all)
        batch_seg0 = int(seg_all[-1]) + 1 if self._n else 0
        series: dict[str, Series] = {}
        rec_of: dict[str, np.ndarray] = {}
        rewritten: list[str] = []
        repeated: list[str] = []
        for key in keys:
            st, vals, ln, sg, rec = self._points_of(key, steps_all, lines_all, seg_all, batch_seg0, copy)
            if rec is not None:
                rec_of[key] = rec
            name = source_to_name.get(key)
            if st.size > 1 and not np.all(st[1:] > st[:-1]):
                st, vals, ln, was_replaced, is_repeated = _resolve_steps(st, vals, ln, sg)
                if was_replaced:
                    rewritten.append(key)
                # The epoch counter takes its next value at the step where an epoch ends:
                # two epoch values at one step are that boundary, not two writers.
                if is_repeated and name != "epoch":
                    repeated.append(key)
            if name is None:
                # An unmapped raw key never shadows a canonical name (possible after --map).
                name = key if key not in aliases.CANONICAL else f"raw:{key}"
            series[name] = Series(name, key, st, vals, ln)
        return series, rec_of, rewritten, repeated

    def _points_of(
        self,
        key: str,
        steps_all: np.ndarray,
        lines_all: np.ndarray,
        seg_all: np.ndarray,
        batch_seg0: int,
        copy: bool,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """Every point of one raw key in stream order: its row points, then its column
        batches' points.

        Args:
            steps_all, lines_all, seg_all: every row record's x value (float64), line and
                resume segment (int64), shape ``(n,)``.
            batch_seg0: the first segment of the column batches' points (after every row
                record's segment); a batch's step going back starts a further one.
            copy: copy the values out of the builder.

        Returns:
            ``(steps, values, lines, segments, rec)``: float64, float64, int64, int64
            arrays of shape ``(m,)``; ``rec`` the record indices (int64, shape ``(r,)``)
            of the row points, ``None`` when no row holds the key.
        """
        parts = []
        rec = None
        c = self._cols.get(key)
        if c is not None:
            rec = np.frombuffer(c.rec, dtype=np.int64)
            parts.append((steps_all[rec], _view(c.vals, np.float64, copy), lines_all[rec], seg_all[rec]))
        bt = self._batches.get(key)
        if bt is not None and len(bt[0]):
            bst = _view(bt[0], np.float64, copy)
            parts.append(
                (bst, _view(bt[1], np.float64, copy), _view(bt[2], np.int64, copy), _segments(bst) + batch_seg0)
            )
        if len(parts) == 1:
            return (*parts[0], rec)
        if parts:
            st, vals, ln, sg = (np.concatenate([p[i] for p in parts]) for i in range(4))
            return st, vals, ln, sg, rec
        empty = np.empty(0, dtype=np.int64)
        return np.empty(0), np.empty(0), empty, empty, rec

    def _step_range(
        self, steps_all: np.ndarray, series: dict[str, Series], one_run_of_several: bool
    ) -> tuple[float, float] | None:
        """``(first, last)`` step over every record and column batch (``steps_all``:
        every row record's x value, shape ``(n,)``); for one run of a log of several,
        over its own series only. ``None`` when there is none."""
        ends = [(float(np.nanmin(steps_all)), float(np.nanmax(steps_all)))] if self._n else []
        ends += [(float(np.min(bt[0])), float(np.max(bt[0]))) for bt in self._batches.values() if len(bt[0])]
        if one_run_of_several:  # its own steps, not the other runs'
            ends = [(float(x.steps[0]), float(x.steps[-1])) for x in series.values() if len(x.steps)]
        if not ends:
            return None
        return (min(e[0] for e in ends), max(e[1] for e in ends))

    def _run_meta(self, meta: Mapping | None, notes: list[str], stop: tuple[str, dict] | None, run: str | None) -> dict:
        """The RunLog's meta: a copy of the reader's ``meta`` with ``dropped`` (records
        past a cap; its note also appended to ``notes``), ``loss_stopped`` (the numbers of
        :func:`_loss_stops`' ``stop``) and ``run`` (the run built) added where they apply."""
        run_meta = dict(meta or {})
        if self.full:
            left = (
                f"the run's records from line {self._over_line} on were left out: a run is read up to "
                f"{_count(self._max_records)} records and {_count(self._max_values)} values "
                "(TRAINPROOF_MAX_RECORDS, TRAINPROOF_MAX_VALUES)"
            )
            notes.append(left)
            run_meta["dropped"] = [*run_meta.get("dropped", ()), left]
        if stop:
            run_meta["loss_stopped"] = stop[1]
        if run is not None:
            run_meta["run"] = run
        return run_meta


def _view(a: array, dtype, copy: bool) -> np.ndarray:
    """A typed array's contents as a numpy array of ``dtype`` (shape ``(len(a),)``): a view
    of its buffer, or a copy when ``copy``."""
    v = np.frombuffer(a, dtype=dtype) if len(a) else np.empty(0, dtype=dtype)
    return v.copy() if copy else v


def _fill_leading(steps: np.ndarray) -> np.ndarray:
    """``steps`` (float64, shape ``(n,)``, NaN before the first record with a step) with
    those records given the first step, in place; the record index when no record has a
    step (a log whose steps come in column batches)."""
    known = np.flatnonzero(~np.isnan(steps))
    if not known.size:
        return np.arange(steps.size, dtype=np.float64)
    steps[: known[0]] = steps[known[0]]
    return steps


def _segments(steps: np.ndarray) -> np.ndarray:
    """The resume segment of each point of ``steps`` (shape ``(m,)``, stream order): 0, and
    one more from each point whose step is below the one before it. int64, shape ``(m,)``."""
    seg = np.zeros(steps.size, dtype=np.int64)
    if steps.size > 1:
        np.cumsum(steps[1:] < steps[:-1], out=seg[1:])
    return seg


def _resolve_steps(
    st: np.ndarray, vals: np.ndarray, ln: np.ndarray, sg: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool, bool]:
    """One key's points, shape ``(m,)`` in stream order with their segments ``sg``, sorted
    by step (stable) and with the writes :func:`_resolve_repeats` does not keep left out.

    Returns:
        ``(steps, values, lines, replaced, repeated)``: the kept points (shape ``(k,)``,
        ``k <= m``) and :func:`_resolve_repeats`' two flags.
    """
    if not np.all(st[1:] >= st[:-1]):
        order = np.argsort(st, kind="stable")
        st, vals, ln, sg = st[order], vals[order], ln[order], sg[order]
    keep, replaced, repeated = _resolve_repeats(st, vals, sg)
    if not keep.all():
        st, vals, ln = st[keep], vals[keep], ln[keep]
    return st, vals, ln, replaced, repeated


def _and_more(items: Sequence[str], shown: int) -> str:
    """The first ``shown`` of ``items`` joined by ``", "``, then ``" and N more"`` when
    ``N`` more are left out: how a note names a list that may be long."""
    text = ", ".join(items[:shown])
    return text + (f" and {len(items) - shown} more" if len(items) > shown else "")


def _repeat_notes(rewritten: list[str], repeated: list[str]) -> list[str]:
    """The notes of the keys whose steps a resume rewrote and of those that keep several
    values at a step (:meth:`RunLogBuilder._collect_series`): zero, one or two strings."""
    out = []
    if rewritten:
        out.append(
            "steps logged more than once with different values (a resumed run: the step went back); "
            "the later write was kept for: " + _and_more(rewritten, 10)
        )
    if repeated:
        out.append(
            "steps logged more than once with different values without the step going back (several "
            "writers of one file, or several rows a step); every write is kept and judged for: "
            + _and_more(repeated, 10)
        )
    return out


def _alias_notes(mapping: dict) -> list[str]:
    """One note per canonical name (sorted) for which more than one column matched: which
    was read and which were not (``mapping`` as :func:`aliases.resolve` gives it)."""
    return [
        f"{canon}: read from {m['source']!r}; also present: " + _and_more([repr(k) for k in m["ignored"]], 5)
        for canon, m in sorted(mapping.items())
        if m["ignored"]
    ]


def _epoch_of_records(ep_rec: np.ndarray, ep_vals: np.ndarray, n: int) -> np.ndarray:
    """Each record's epoch: the last finite epoch value logged at or before it (the first
    one for the records before any), shape ``(n,)``; NaN where the log has none."""
    ok = np.isfinite(ep_vals)
    rec, vals = ep_rec[ok], ep_vals[ok]
    if not rec.size:
        return np.full(n, np.nan)
    pos = np.searchsorted(rec, np.arange(n), side="right") - 1
    return vals[np.maximum(pos, 0)]


def _steps_within_epochs(steps: np.ndarray, ep_rec: np.ndarray, ep_vals: np.ndarray) -> tuple[np.ndarray, str] | None:
    """The global step of a log whose step counts within the epoch, and the note saying
    how it was built; ``None`` for a log whose step does not restart with each epoch.

    OpenMMLab's ``*.log.json`` (``iter`` counts within the epoch) and loops that log
    ``{"epoch": e, "step": batch_idx}`` restart their step counter at every epoch: the x
    axis is the ``(epoch, step in the epoch)`` pair, not a resume at each epoch. A log is
    read so when its step goes back where the epoch rises, at two thirds of the epoch
    changes or more (a resume's step goes back while its epoch stays or goes back with it;
    a global step reset once by a resume that kept counting epochs goes back at one
    epoch change of many). The global step is then
    ``(epoch - first epoch) * L + step`` with ``L`` the steps per epoch seen (the span of
    the steps within the epochs plus their median interval), when every epoch value is a
    whole number; else the count of the epochs begun so far stands for the epoch. A real
    resume inside such a log (the step goes back, the epoch does not rise) still goes
    back on the global axis, so it stays a resume (see the module docstring).

    Args:
        steps: shape ``(n,)``, every record's step (finite, filled).
        ep_rec, ep_vals: the epoch column: record indices (ascending) and values.
    """
    n = steps.size
    back = np.flatnonzero(steps[1:] < steps[:-1]) + 1  # records where the step goes back
    if not back.size:
        return None
    ep = _epoch_of_records(ep_rec, ep_vals, n)
    if not np.isfinite(ep).any():
        return None
    rises = back[ep[back] > ep[back - 1]]
    # Where the step counts within the epoch it goes back at (nearly) every epoch change;
    # a global step that went back once, at a resume that kept counting epochs, does not.
    changes = int(np.count_nonzero(ep[1:] > ep[:-1]))
    if not rises.size or rises.size * 3 < changes * 2:
        return None
    # The first record of each epoch as the counter knows it: where the step goes back and
    # the epoch rises.
    block = np.zeros(n, dtype=np.int64)
    block[rises] = 1
    np.cumsum(block, out=block)
    lo, hi = float(steps.min()), float(steps.max())
    d = np.diff(steps)
    same_block = block[1:] == block[:-1]
    gaps = d[same_block & (d > 0)]
    interval = float(median(gaps)) if gaps.size else 1.0
    per_epoch = hi - lo + interval
    whole = bool(np.all(ep[np.isfinite(ep)] == np.round(ep[np.isfinite(ep)])))
    index = ep - float(np.nanmin(ep)) if whole else block.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        glob = index * per_epoch + steps
    if not np.all(np.isfinite(glob[np.isfinite(index)])):
        # Steps near the float range (a hostile or corrupt log): epochs of that many steps
        # overflow, and the steps are kept as logged rather than read as inf or NaN.
        return None
    what = "the epoch minus the first epoch" if whole else "the number of epochs begun before it"
    note = (
        f"the step counts within each epoch (it goes back as the epoch rises, at {rises.size} epoch "
        f"change(s)): the x axis is the global step, ({what}) x {per_epoch:g} (the steps per epoch "
        "seen) + the step in the epoch"
    )
    return glob, note


def _loss_stops(
    mapping: dict,
    rec_of: dict,
    holes: dict,
    steps_all: np.ndarray,
    lines_all: np.ndarray,
    n: int,
    others: list[np.ndarray] = (),
) -> tuple[str, dict] | None:
    """The note for a loss that stops while the records go on, and its numbers; or ``None``.

    The loss stops when the log goes on past its last step by more than the loss ever went
    without (its largest gap between logged steps) and more than four of its usual
    intervals (the median gap), on at least three later steps: a log whose last rows are a
    validation, test or summary row is not a loss that stopped. Steps, not record order,
    measure it: a store read one metric at a time (an MLflow run folder) gives the loss's
    records before the others', whatever their steps. The numbers (``step``, ``line``,
    ``records_after``, ``held_empty``: how many of those records hold the loss's key empty
    or ``null``, ``last_step``, ``key``) go to ``meta["loss_stopped"]``. ``others``: the
    records (index arrays) that hold values of other runs' columns (a W&B export of
    several runs), whose empty cells are not this run's.
    """
    m = mapping.get("loss")
    if m is None:
        return None
    key = (m.get("sum_of") or [m["source"]])[0]
    rec = rec_of.get(key)
    if rec is None or not rec.size:
        return None
    last = int(rec[np.argmax(steps_all[rec])])
    stop_step = float(steps_all[last])
    gaps = np.diff(unique(steps_all[rec]))
    bound = max(4 * float(median(gaps)), float(gaps.max())) if gaps.size else 0.0
    # Only records of this run count (a W&B export's other runs may go on longer): those
    # with a value of its columns, and those that hold the loss's own key with no value (a
    # log of step and loss alone whose loss turns into "None").
    h = np.frombuffer(holes[key], dtype=np.int64) if key in holes else np.empty(0, dtype=np.int64)
    alone = setdiff1d(h, np.concatenate(others)) if len(others) and h.size else h
    # Each key's records are cut to those past the stop before they are merged: the merge
    # of every key's record indices would be a copy (and a sort) of all the log's points.
    after = _unique_indices(np.concatenate([r[steps_all[r] > stop_step] for r in (*rec_of.values(), alone)]))
    later = unique(steps_all[after])
    if later.size < 3 or float(later[-1]) - stop_step <= bound:
        return None
    end = int(after[np.argmax(steps_all[after])])
    held = int(intersect1d(h, after).size)
    empty = f", {held} of them holding it empty or null" if held else ""
    note = (
        f"loss ({key!r}) stops at step {steps_all[last]:g} (line {int(lines_all[last])}) while the log goes "
        f"on: {after.size} more records follow without it{empty}, to step {steps_all[end]:g} (line "
        f"{int(lines_all[end])}); the run after it is not judged on its loss"
    )
    data = {
        "key": key,
        "step": float(steps_all[last]),
        "line": int(lines_all[last]),
        "records_after": int(after.size),
        "held_empty": held,
        "last_step": float(steps_all[end]),
    }
    return note, data


def _loss_stops_in_columns(mapping: dict, series: dict[str, Series]) -> tuple[str, dict] | None:
    """:func:`_loss_stops` for a log read as one column per metric (a TensorBoard event
    file: no records, each tag its own steps): the loss stops where the other series go on
    past its last step by more than it ever went without and more than four of its usual
    intervals, on at least three later steps. ``records_after`` counts the other series'
    points after the stop."""
    m = mapping.get("loss")
    loss = series.get("loss")
    if m is None or m.get("sum_of") or loss is None or not loss.steps.size:
        return None
    stop_step = float(loss.steps.max())
    gaps = np.diff(unique(loss.steps))
    bound = max(4 * float(median(gaps)), float(gaps.max())) if gaps.size else 0.0
    # Tags of another cadence count on another axis: Keras's TensorBoard callback writes
    # epoch_loss at epochs 0..19 and batch_loss at batches 0..1999 in the same file.
    own = _axis_word(str(m["source"]))
    rest = [
        x.steps[x.steps > stop_step]
        for name, x in series.items()
        if name != "loss" and not (own and _axis_word(x.key or name) not in (None, own))
    ]
    later = unique(np.concatenate(rest)) if rest else np.empty(0)
    if later.size < 3 or float(later[-1]) - stop_step <= bound:
        return None
    last = int(np.argmax(loss.steps))
    after = int(sum(r.size for r in rest))
    note = (
        f"loss ({m['source']!r}) stops at step {stop_step:g} (record {int(loss.lines[last])}) while the log goes "
        f"on: {after} more points of other metrics follow without it, to step {float(later[-1]):g}; the run "
        "after it is not judged on its loss"
    )
    data = {
        "key": m["source"],
        "step": stop_step,
        "line": int(loss.lines[last]),
        "records_after": after,
        "held_empty": 0,
        "last_step": float(later[-1]),
    }
    return note, data


def _axis_word(key: str) -> str | None:
    """``"epoch"`` or ``"step"`` when a key's words name the cadence it is logged at
    (``epoch_loss``; ``batch_loss``, ``train_loss_step``), else ``None``."""
    ws = set(aliases.words(key))
    if ws & aliases.key_words("epoch"):
        return "epoch"
    if ws & aliases.key_words("step"):
        return "step"
    return None


def _unique_indices(idx: np.ndarray) -> np.ndarray:
    """The distinct values of an int64 array, ascending: what ``np.unique`` gives, by a
    sort. numpy 2.3+'s ``np.unique`` of integers takes a hash table that costs about 30
    times the sort on the millions of record indices of a long log (2 s against 0.07 s
    of CPU for 4 million)."""
    s = np.sort(idx)
    first = np.ones(s.size, dtype=bool)
    np.not_equal(s[1:], s[:-1], out=first[1:])
    return s[first]


#: Fewer finite loss points than this leave every trend rule unjudged (the rules'
#: ``min_trend_points``, 8): a loss the aliases chose with fewer is replaced by another
#: alias of the loss that has at least this many (:func:`_richer_loss`).
LOSS_TREND_POINTS = 8


def _richer_loss(mapping: dict, cols: dict, batches: dict) -> str | None:
    """Read the loss from another of its aliases when the one the alias order chose is too
    short to judge and the other is not, and say so; ``mapping`` is changed in place.

    Lightning logs ``train_loss_step`` every ``log_every_n_steps`` (50 by default) and
    ``train_loss_epoch`` at every epoch: a run of 20 short epochs has 6 step points and 20
    epoch points, and the alias order (per step first) left it unjudged. Only an alias
    choice is revised (never a ``--map`` or a fallback), only below
    :data:`LOSS_TREND_POINTS`, only when every value of the chosen loss is finite (a NaN is
    evidence the NaN rule reads), and only for the same key at the epoch cadence (its
    words with ``step`` read as ``epoch``).
    Returns the note, or ``None`` when the choice stands.
    """
    m = mapping.get("loss")
    if m is None or m["how"] != "alias" or not m["ignored"]:
        return None
    have = _points(m["source"], cols, batches)
    if have >= LOSS_TREND_POINTS or _points(m["source"], cols, batches, finite=False) > have:
        # A non-finite value is evidence of its own (TP-NAN reads it): the choice stands.
        return None
    # Only the same loss at another cadence: the chosen key's words with "step" for
    # "epoch" (train_loss_step -> train_loss_epoch), never another alias that may be one
    # component of the loss (loss_1 is Coqui's generator loss, a task loss elsewhere).
    w = aliases.words(m["source"])
    if "step" not in w:
        return None
    same = [k for k in m["ignored"] if aliases.words(k) == ["epoch" if x == "step" else x for x in w]]
    if not same:
        return None
    best = same[0]
    more = _points(best, cols, batches)
    if more < LOSS_TREND_POINTS:
        return None
    old = m["source"]
    m["source"], m["ignored"] = best, [old] + [k for k in m["ignored"] if k != best]
    return (
        f"loss: {old!r} has {have} finite points, too few for the trend rules ({LOSS_TREND_POINTS}); "
        f"read from {best!r} ({more} points) instead"
    )


def _points(key: str, cols: dict, batches: dict, finite: bool = True) -> int:
    """Finite values logged for ``key`` (every value, non-finite too, with ``finite=False``)."""
    n = 0
    for vals in (cols[key].vals if key in cols else None, batches[key][1] if key in batches else None):
        if vals is not None and len(vals):
            n += int(np.isfinite(np.frombuffer(vals, dtype=np.float64)).sum()) if finite else len(vals)
    return n


def _other_runs(
    keys: set, cols: dict, batches: dict, overrides: Mapping[str, str] | None, notes: list[str], run: str | None = None
) -> set:
    """The columns of the runs not judged, when the log holds several (a W&B panel export
    with ``"<run> - <metric>"`` columns for two or more runs): one RunLog is one run, so
    one run is kept, never a mix. The kept run is ``run`` when given (one RunLog per run,
    :func:`build_runlogs`), else the one a ``--map`` column names, else the one whose
    loss has the most finite points (ties: the alphabetically first name); a note names
    it and the others."""
    runs = aliases.runs_in(keys)
    if not runs:
        return set()
    if run is not None:
        if run not in runs:
            raise ValueError(f"no run {run!r} in this log")
        notes.append(
            f"{len(runs)} runs in one log (W&B export): this report is run {run!r}; each run is judged on its own"
        )
        return {k for r in runs if r != run for k in runs[r]}
    chosen = None
    for col in (overrides or {}).values():
        if aliases.run_of(col) in runs:
            chosen = aliases.run_of(col)
            break
    counts = {}
    for run, rk in runs.items():
        m = aliases.resolve(rk).get("loss")
        src = (m.get("sum_of") or [m["source"]]) if m else []
        counts[run] = min((_points(k, cols, batches) for k in src), default=0)
    if chosen is None:
        chosen = min(runs, key=lambda r: (-counts[r], r))
        why = f"the run whose loss has the most points ({counts[chosen]})"
    else:
        why = "the run --map names"
    others = sorted(r for r in runs if r != chosen)
    shown = _and_more([f"{r!r} ({counts[r]} loss points)" for r in others], 7)
    notes.append(
        f"{len(runs)} runs in one log (W&B export): judged {chosen!r}, {why}; not read: {shown}"
        " (judge each run from its own export to see them)"
    )
    return {k for r in others for k in runs[r]}


def _add_sum(canon: str, m: dict, series: dict, notes: list[str]) -> None:
    """Add the synthesized total ``canon`` of the component series ``m["sum_of"]``: their
    sum at the steps where every one of them is logged (NaN in a part stays NaN in the
    sum). When those steps are fewer than half of the shortest part's, the parts are not
    logged together and the first part is read instead (``m`` is updated to say so). A
    step a part repeats (see the module docstring) pairs the parts' writes of it in stream
    order: the first with the first, and so on."""
    parts = [series[k] for k in m["sum_of"] if k in series]
    if len(parts) != len(m["sum_of"]):
        return
    repeated = any(p.steps.size > 1 and not np.all(p.steps[1:] > p.steps[:-1]) for p in parts)
    steps, idxs = _paired_writes(parts) if repeated else _common_steps(parts)
    if steps.size * 2 < min(len(p) for p in parts) or steps.size == 0:
        _first_part_only(canon, m, series, notes, parts)
        return
    total = np.zeros(steps.size)
    lines = None
    for p, idx in zip(parts, idxs):
        total = total + p.values[idx]
        ln = p.lines[idx]
        lines = ln if lines is None else np.minimum(lines, ln)
    series[canon] = Series(canon, m["source"], steps, total, lines)
    notes.append(
        f"{canon}: no total is logged; read as the sum of {', '.join(m['sum_of'])} "
        f"at the {steps.size} {'points' if repeated else 'steps'} where all are logged"
    )


def _common_steps(parts: list[Series]) -> tuple[np.ndarray, list[np.ndarray]]:
    """The steps every part logs (each part's steps strictly increasing), and each part's
    indices of them."""
    steps = parts[0].steps
    for p in parts[1:]:
        steps = np.intersect1d(steps, p.steps, assume_unique=True)
    return steps, [np.searchsorted(p.steps, steps) for p in parts]


def _paired_writes(parts: list[Series]) -> tuple[np.ndarray, list[np.ndarray]]:
    """For parts of which one repeats a step: the ``(step, n-th write of that step)`` pairs
    every part has, in order, as their steps and each part's indices of them."""

    def keyed(p: Series) -> dict:
        out: dict = {}
        seen: dict = {}
        for i, st in enumerate(p.steps.tolist()):
            j = seen[st] = seen.get(st, -1) + 1
            out[(st, j)] = i
        return out

    maps = [keyed(p) for p in parts]
    common = set(maps[0])
    for mp in maps[1:]:
        common &= set(mp)
    order = sorted(common)
    steps = np.array([k[0] for k in order], dtype=np.float64)
    return steps, [np.array([mp[k] for k in order], dtype=np.int64) for mp in maps]


def _first_part_only(canon: str, m: dict, series: dict, notes: list[str], parts: list[Series]) -> None:
    """Read the first part of a sum as ``canon`` (its parts are not logged together)."""
    first = m["sum_of"][0]
    notes.append(
        f"{canon}: its parts {', '.join(m['sum_of'])} are not logged at the same steps, so {first!r} alone is read"
    )
    m["ignored"] = [k for k in m["sum_of"][1:]] + list(m["ignored"])
    m["source"], m["why"] = first, "no total loss and its parts are not logged together: the first part is read"
    del m["sum_of"]
    s = parts[0]
    series[canon] = Series(canon, first, s.steps, s.values, s.lines)


def downsample(steps: np.ndarray, values: np.ndarray, max_points: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """At most about ``max_points`` points of a series for a chart, keeping its shape.

    Consecutive buckets keep their minimum and maximum finite points (so spikes and dips
    survive) and every non-finite point (so a NaN is never dropped silently). Both arrays
    have shape (n,); the result is two arrays of the same length m <= n, in step order.
    The buckets are reduced with numpy at once, not one Python iteration per bucket.
    """
    n = values.size
    if n <= max_points:
        return steps, values
    buckets = max(1, max_points // 2)
    edges = np.linspace(0, n, buckets + 1).astype(np.int64)
    starts = edges[:-1][edges[1:] > edges[:-1]]  # the non-empty buckets, in order
    sizes = np.diff(np.append(starts, n))
    finite = np.isfinite(values)
    all_finite = bool(finite.all())
    keep = np.zeros(n, dtype=bool)
    if all_finite:
        filled_lo = filled_hi = values
        has_finite = slice(None)
    else:
        keep[~finite] = True
        filled_lo = np.where(finite, values, np.inf)
        filled_hi = np.where(finite, values, -np.inf)
        has_finite = np.logical_or.reduceat(finite, starts)
    for filled, reduce in ((filled_lo, np.minimum), (filled_hi, np.maximum)):
        # The first point of each bucket that reaches the bucket's extreme (what np.argmin
        # and np.argmax pick): the first hit at or after the bucket's start.
        reached = filled == np.repeat(reduce.reduceat(filled, starts), sizes)
        hits = np.flatnonzero(reached if all_finite else reached & finite)
        if hits.size:
            first = hits[np.minimum(np.searchsorted(hits, starts), hits.size - 1)]
            keep[first[has_finite]] = True
    keep[0] = keep[-1] = True
    return steps[keep], values[keep]


#: The series two logs of one run must agree on, the first both hold.
_SAME_RUN_SERIES = ("loss", "eval_loss", "reward", "return")


def same_run(a: RunLog, b: RunLog, min_common: int = 3) -> bool:
    """Whether two logs hold the same run written twice (an HF ``trainer_state.json`` and
    its event file, a Lightning ``metrics.csv`` and its event file).

    They must share the first of loss, eval loss, reward or return, on at least
    ``min_common`` steps and at least half the steps of the shorter series, and agree on
    every shared step (NaN with NaN) to 1e-5 relative: an event file stores float32 (7 significant
    digits), so the same number read from JSON or CSV differs by at most about 6e-8
    relative; two different runs, even seeds of one configuration, differ far more on
    some step. ``False`` when either lacks the series, or when each carries a tracker's
    run id and the ids differ: two runs of one configuration and seed hold the same
    numbers, and a tracker that gave them two ids holds two runs.
    """
    import numpy as np

    ida, idb = a.meta.get("run_id"), b.meta.get("run_id")
    if ida and idb and ida != idb:
        return False
    for name in _SAME_RUN_SERIES:
        sa, sb = a.get(name), b.get(name)
        if sa is not None and sb is not None:
            break
    else:
        return False
    # NaN and infinities count as values: the same run has them at the same steps.
    common, ia, ib = np.intersect1d(sa.steps, sb.steps, return_indices=True)
    if len(common) < max(min_common, 0.5 * min(len(sa), len(sb))):
        return False
    return bool(np.allclose(sa.values[ia], sb.values[ib], rtol=1e-5, atol=1e-8, equal_nan=True))
