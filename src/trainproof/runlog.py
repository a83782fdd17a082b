"""The record stream and its columns: :class:`Record`, :class:`Series`, :class:`RunLog`.

Readers yield :class:`Record` objects; :func:`build_runlog` turns that stream into a
:class:`RunLog` holding one numpy column per metric. Canonical metrics (``loss``,
``eval_loss``, ``lr``, …, see :mod:`trainproof.aliases`) are stored under their canonical
name; every other metric keeps its raw key.
"""
from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from . import aliases


@dataclass
class Record:
    """One logged row.

    Attributes:
        step: training step, or ``None`` when the row carries none (the record index
            or the epoch is used then, see :func:`build_runlog`).
        values: raw metric key -> float. Non-numbers are absent, never 0; NaN and ±Inf
            are kept.
        line: 1-based source line (text formats) or record index (binary formats).
    """

    step: float | None
    values: dict[str, float]
    line: int


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
    """

    steps: np.ndarray
    lines: np.ndarray
    groups: list

    def __len__(self) -> int:
        return int(self.steps.shape[0])


@dataclass
class Series:
    """One metric as parallel numpy arrays, sorted by step, one value per step.

    Attributes:
        name: canonical name, or the raw key for unmapped metrics.
        key: the raw key the values came from.
        steps: float64 array of steps (strictly increasing).
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
    axis when it has one (Keras ``CSVLogger``), else the record index. Each series is
    sorted by step (stable); when a step is logged twice for the same metric the later
    write wins and, if the values differ, a note says so (a resumed or interleaved run).
    :class:`Rows` batches mean exactly their records in order. :class:`Columns` batches
    carry their own steps; for one key, rows from records come before column batches,
    which keep their stream order.

    Args:
        records: the reader's stream.
        path, fmt: where it came from.
        meta, notes: the reader's meta and notes (copied).
        overrides: ``--map`` choices, canonical -> raw key.

    Raises:
        aliases.MappingError: an override names a column the log does not have.
    """
    return _builder_of(records).build(path, fmt, meta, notes, overrides, copy=False)


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
    name; when ``overrides`` name a column of one run, only that run. Arguments and errors
    as :func:`build_runlog`.
    """
    b = _builder_of(records)
    runs = b.runs()
    chosen = {aliases.run_of(col) for col in (overrides or {}).values()} & set(runs)
    if len(runs) < 2 or chosen:
        return [b.build(path, fmt, meta, notes, overrides, copy=False)]
    return [b.build(path, fmt, meta, notes, overrides, run=r) for r in runs]


def _builder_of(records: Iterable[Record | Rows | Columns]) -> "RunLogBuilder":
    """A :class:`RunLogBuilder` holding every record of the stream."""
    b = RunLogBuilder()
    for rec in records:
        t = type(rec)
        if t is Rows:
            b.add_rows(rec)
        elif t is Columns:
            b.add_columns(rec)
        else:
            b.add(rec.step, rec.values, rec.line)
    return b


class RunLogBuilder:
    """The incremental form of :func:`build_runlog`: records go in one at a time (O(1)
    each, typed arrays), and :meth:`build` makes a RunLog of everything so far, as often
    as wanted, with exactly the semantics of :func:`build_runlog` (the live guardian
    judges the same RunLog ``trainproof epoch`` would read from the same lines).
    """

    def __init__(self) -> None:
        self._cols: dict[str, _Column] = {}
        self._batches: dict[str, tuple[array, array, array]] = {}
        self._rec_steps = array("d")
        self._rec_lines = array("q")
        self._last_step = math.nan
        self._n = 0
        self._n_batched = 0

    @property
    def records(self) -> int:
        """Records added so far (rows, plus one per point of a column batch)."""
        return self._n + self._n_batched

    def add(self, step: float | None, values: Mapping[str, float], line: int) -> None:
        """Add one row: ``values`` maps raw keys to floats; a row without a finite step
        takes the last step seen before it."""
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
        self._n = n + 1

    def add_rows(self, rows: Rows) -> None:
        """Add a :class:`Rows` batch: exactly what :meth:`add` of each of its records, in
        order, would add, in O(keys) Python operations."""
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
        self._rec_steps.frombytes(np.ascontiguousarray(filled, dtype=np.float64).tobytes())
        self._rec_lines.frombytes(np.ascontiguousarray(rows.lines, dtype=np.int64).tobytes())
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
            c.rec.frombytes((np.asarray(pos, dtype=np.int64) + n0).tobytes())
            c.vals.frombytes(np.ascontiguousarray(v, dtype=np.float64).tobytes())
        self._n = n0 + n

    def set_records(self, n: int) -> None:
        """Declare how many records the data came from (when it was added as column
        batches taken from a RunLog read whole, whose point count is not its row count)."""
        self._n_batched = int(n) - self._n

    def add_columns(self, col: Columns) -> None:
        """Add a column batch (one key, its own steps)."""
        b = self._batches.get(col.key)
        if b is None:
            b = self._batches[col.key] = (array("d"), array("d"), array("q"))
        b[0].frombytes(np.ascontiguousarray(col.steps, dtype=np.float64).tobytes())
        b[1].frombytes(np.ascontiguousarray(col.values, dtype=np.float64).tobytes())
        b[2].frombytes(np.ascontiguousarray(col.lines, dtype=np.int64).tobytes())
        self._n_batched += len(col)

    def runs(self) -> list[str]:
        """The names of the runs whose columns were added, sorted, when there are two or
        more (a W&B panel export of several runs); ``[]`` for a log of one run."""
        return sorted(aliases.runs_in(set(self._cols) | set(self._batches)))

    def build(self, path: str, fmt: str, meta: Mapping | None = None, notes: Iterable[str] = (),
              overrides: Mapping[str, str] | None = None, copy: bool = True,
              run: str | None = None) -> RunLog:
        """The RunLog of everything added so far (see :func:`build_runlog`).

        Args:
            copy: copy the arrays out of the builder (needed when more records will be
                added while the RunLog is alive, or when several runs are built from it;
                ``False`` only for a one-shot build).
            run: for a log of several runs (:meth:`runs`), the one to build; ``None``
                picks one (see :func:`_other_runs`).

        Raises:
            aliases.MappingError: an override names a column the log does not have.
        """
        cols, batches, n, n_batched = self._cols, self._batches, self._n, self._n_batched

        def arr(a: array, dtype) -> np.ndarray:
            v = np.frombuffer(a, dtype=dtype) if len(a) else np.empty(0, dtype=dtype)
            return v.copy() if copy else v

        steps_all = np.frombuffer(self._rec_steps, dtype=np.float64).copy() if n else np.empty(0)
        lines_all = arr(self._rec_lines, np.int64)
        out_notes = list(notes)
        all_keys = set(cols) | set(batches)
        dropped = _other_runs(all_keys, cols, batches, overrides, out_notes, run)
        mapping = aliases.resolve(all_keys - dropped, overrides)

        explicit_steps = (bool(n) and not np.all(np.isnan(steps_all))) or n_batched > 0
        if n and not explicit_steps:
            epoch_key = mapping.get("epoch", {}).get("source")
            steps_all = np.arange(n, dtype=np.float64)
            if epoch_key is not None:
                ec = cols[epoch_key]
                ev = np.asarray(ec.vals, dtype=np.float64)
                if len(ec.rec) == n and np.all(np.isfinite(ev)):
                    steps_all = ev
                    out_notes.append("no step column: the epoch is the x axis")
        elif n and np.isnan(steps_all).any():
            # Records before the first step carry no step of their own: use the first one
            # (the record index when no record has a step but column batches do).
            known = np.flatnonzero(~np.isnan(steps_all))
            if known.size:
                steps_all[: known[0]] = steps_all[known[0]]
            else:
                steps_all = np.arange(n, dtype=np.float64)

        source_to_name = {m["source"]: canon for canon, m in mapping.items()}
        series: dict[str, Series] = {}
        rewritten: list[str] = []
        for key in sorted(all_keys - dropped):
            parts = []
            c = cols.get(key)
            if c is not None:
                idx = np.frombuffer(c.rec, dtype=np.int64)
                parts.append((steps_all[idx], arr(c.vals, np.float64), lines_all[idx]))
            bt = batches.get(key)
            if bt is not None and len(bt[0]):
                parts.append((arr(bt[0], np.float64), arr(bt[1], np.float64), arr(bt[2], np.int64)))
            if len(parts) == 1:
                st, vals, ln = parts[0]
            elif parts:
                st, vals, ln = (np.concatenate([p[i] for p in parts]) for i in range(3))
            else:
                st = vals = np.empty(0)
                ln = np.empty(0, dtype=np.int64)
            if st.size > 1 and not np.all(st[1:] >= st[:-1]):
                order = np.argsort(st, kind="stable")
                st, vals, ln = st[order], vals[order], ln[order]
            if st.size > 1:
                dup_next = st[1:] == st[:-1]
                if dup_next.any():
                    keep = np.ones(st.size, dtype=bool)
                    keep[:-1] = ~dup_next  # keep the last write of each step
                    if not np.all(_same(vals[:-1][dup_next], vals[1:][dup_next])):
                        rewritten.append(key)
                    st, vals, ln = st[keep], vals[keep], ln[keep]
            name = source_to_name.get(key)
            if name is None:
                # An unmapped raw key never shadows a canonical name (possible after --map).
                name = key if key not in aliases.CANONICAL else f"raw:{key}"
            series[name] = Series(name, key, st, vals, ln)

        for canon, m in mapping.items():
            if m.get("sum_of"):
                _add_sum(canon, m, series, out_notes)
        if rewritten:
            out_notes.append(
                "steps logged more than once with different values (a resumed or interleaved run); "
                "the later write was kept for: " + ", ".join(rewritten[:10])
                + (f" and {len(rewritten) - 10} more" if len(rewritten) > 10 else "")
            )
        for canon, m in sorted(mapping.items()):
            if m["ignored"]:
                out_notes.append(
                    f"{canon}: read from {m['source']!r}; also present: "
                    + ", ".join(repr(k) for k in m["ignored"][:5])
                    + (f" and {len(m['ignored']) - 5} more" if len(m["ignored"]) > 5 else "")
                )
        step_range = None
        ends = [(float(np.nanmin(steps_all)), float(np.nanmax(steps_all)))] if n else []
        ends += [(float(np.min(bt[0])), float(np.max(bt[0]))) for bt in batches.values() if len(bt[0])]
        if dropped:  # one run of several: its own steps, not the other runs'
            ends = [(float(x.steps[0]), float(x.steps[-1])) for x in series.values() if len(x.steps)]
        if ends:
            step_range = (min(e[0] for e in ends), max(e[1] for e in ends))
        run_meta = dict(meta or {})
        if run is not None:
            run_meta["run"] = run
        return RunLog(
            path=path,
            format=fmt,
            series=series,
            meta=run_meta,
            notes=out_notes,
            mapping=mapping,
            records=n + n_batched,
            step_range=step_range,
            explicit_steps=explicit_steps,
        )


def _points(key: str, cols: dict, batches: dict) -> int:
    """Finite values logged for ``key``."""
    n = 0
    c = cols.get(key)
    if c is not None and len(c.vals):
        n += int(np.isfinite(np.frombuffer(c.vals, dtype=np.float64)).sum())
    b = batches.get(key)
    if b is not None and len(b[1]):
        n += int(np.isfinite(np.frombuffer(b[1], dtype=np.float64)).sum())
    return n


def _other_runs(keys: set, cols: dict, batches: dict, overrides: Mapping[str, str] | None,
                notes: list[str], run: str | None = None) -> set:
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
        notes.append(f"{len(runs)} runs in one log (W&B export): this report is run {run!r}; "
                     "each run is judged on its own")
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
    shown = ", ".join(f"{r!r} ({counts[r]} loss points)" for r in others[:7])
    notes.append(
        f"{len(runs)} runs in one log (W&B export): judged {chosen!r}, {why}; not read: {shown}"
        + (f" and {len(others) - 7} more" if len(others) > 7 else "")
        + " (judge each run from its own export to see them)"
    )
    return {k for r in others for k in runs[r]}


def _add_sum(canon: str, m: dict, series: dict, notes: list[str]) -> None:
    """Add the synthesized total ``canon`` of the component series ``m["sum_of"]``: their
    sum at the steps where every one of them is logged (NaN in a part stays NaN in the
    sum). When those steps are fewer than half of the shortest part's, the parts are not
    logged together and the first part is read instead (``m`` is updated to say so)."""
    parts = [series[k] for k in m["sum_of"] if k in series]
    if len(parts) != len(m["sum_of"]):
        return
    steps = parts[0].steps
    for p in parts[1:]:
        steps = np.intersect1d(steps, p.steps, assume_unique=True)
    shortest = min(len(p) for p in parts)
    if steps.size * 2 < shortest or steps.size == 0:
        first = m["sum_of"][0]
        notes.append(f"{canon}: its parts {', '.join(m['sum_of'])} are not logged at the same steps, "
                     f"so {first!r} alone is read")
        m["ignored"] = [k for k in m["sum_of"][1:]] + list(m["ignored"])
        m["source"], m["why"] = first, "no total loss and its parts are not logged together: the first part is read"
        del m["sum_of"]
        s = parts[0]
        series[canon] = Series(canon, first, s.steps, s.values, s.lines)
        return
    total = np.zeros(steps.size)
    lines = None
    for p in parts:
        idx = np.searchsorted(p.steps, steps)
        total = total + p.values[idx]
        ln = p.lines[idx]
        lines = ln if lines is None else np.minimum(lines, ln)
    series[canon] = Series(canon, m["source"], steps, total, lines)
    notes.append(f"{canon}: no total is logged; read as the sum of {', '.join(m['sum_of'])} "
                 f"at the {steps.size} steps where all are logged")


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
