"""MLflow SQLite tracking store: the ``mlflow.db`` that ``mlflow.set_tracking_uri("sqlite:///
mlflow.db")`` (and ``mlflow ui`` / ``mlflow server`` by default) keeps.

One file holds every run of every experiment. The tables read (MLflow's SQLAlchemy models,
``mlflow/store/tracking/dbmodels/models.py``): ``experiments`` (``experiment_id``,
``name``, ``lifecycle_stage``), ``runs`` (``run_uuid``, ``name``, ``start_time`` in unix
ms, ``experiment_id``, ``lifecycle_stage``), ``tags`` (``mlflow.runName``, the run's
name where ``runs.name`` is empty) and ``metrics`` (``key``, ``value``, ``timestamp``,
``step``, ``is_nan``, ``run_uuid``), one row per logged value. Runs and experiments whose
``lifecycle_stage`` is ``deleted`` (in MLflow's bin) are not read.

MLflow cannot store NaN or infinities in the ``value`` column: it writes a NaN as
``value = 0, is_nan = 1`` and ``±inf`` as ``±1.7976931348623157e308`` (the largest
double). Both are read back as what was logged (NaN, ±inf), as the file store holds them.

Each live run is one :class:`~trainproof.runlog.RunStart` (its name, id, experiment and
start time), then one :class:`~trainproof.runlog.Columns` per metric in the order logged
(the table's ``rowid``, also each value's ``line``). A metric logged without ``step=``
follows the file store's rule (:func:`trainproof.formats.mlflow.steps_as_logged`). Params
are not read, as the file store reader reads none.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..runlog import Columns, RunStart
from ._io import NoRuns, NotALog
from ._sqlite import MAGIC, SNAPSHOT_NOTE, connect, errors, is_sqlite, read_error, read_snapshot, table_names
from .mlflow import steps_as_logged

if TYPE_CHECKING:
    import sqlite3

name = "mlflow_db"
description = "MLflow SQLite tracking store (mlflow.db: every run of every experiment)"
file_names = ("mlflow.db",)
suffixes = (".db", ".sqlite", ".sqlite3")
run_suffixes = ()
#: The writer updates pages in place: read again whole.
tail_mode = "whole"
preference = 2
#: Whether outputs anchor a finding at its line (a database: a finding's line is a row's index).
line_anchors = False

#: The tables a store has (a database without them is some other application's).
TABLES = frozenset({"experiments", "runs", "metrics", "tags"})

#: What MLflow writes for ``±inf`` (``SqlAlchemyStore.sanitize_metric_value``).
_DBL_MAX = 1.7976931348623157e308

_RUNS = """
SELECT r.run_uuid, r.name, r.start_time, e.name,
       (SELECT t.value FROM tags t WHERE t.run_uuid = r.run_uuid AND t.key = 'mlflow.runName')
FROM runs r JOIN experiments e ON e.experiment_id = r.experiment_id
WHERE coalesce(r.lifecycle_stage, '') != 'deleted' AND coalesce(e.lifecycle_stage, '') != 'deleted'
ORDER BY r.experiment_id, r.start_time, r.run_uuid
"""

#: Every metric row of the store in one ordered pass (``{rowid}``: a name of the table's
#: row id that no column shadows). One statement, not one per run: a store whose metrics
#: table has no index on ``run_uuid`` is sorted once instead of scanned once per run.
_METRICS = "SELECT run_uuid, key, step, value, is_nan, {rowid} FROM metrics ORDER BY run_uuid, key, {rowid}"

#: SQLite's names of a table's row id; a column may take any of them for itself.
_ROWID_NAMES = ("rowid", "_rowid_", "oid")


def sniff(path: Path, head: str) -> bool:
    """A SQLite database with MLflow's tables; a file named ``mlflow.db`` with the SQLite
    header is claimed without them, so that a locked or damaged store reads as such."""
    if not head.startswith(MAGIC.decode("ascii").rstrip("\x00")) or not is_sqlite(path):
        return False
    if path.name.lower() in file_names:
        return True
    tables = table_names(path)
    return tables is not None and TABLES <= tables


def _started(ms) -> str | None:
    """The ISO 8601 UTC time of ``runs.start_time`` (unix ms), ``None`` where it has none."""
    if not isinstance(ms, (int, float)) or isinstance(ms, bool):
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="seconds")
    except (ValueError, OverflowError, OSError):
        return None


def _text(*candidates) -> str | None:
    """The first candidate that is a non-empty string (a damaged row may hold anything)."""
    return next((c for c in candidates if isinstance(c, str) and c), None)


def _value(v: float, is_nan) -> float:
    if is_nan:
        return math.nan
    if abs(v) == _DBL_MAX:
        return math.copysign(math.inf, v)
    return float(v)


def read(path: Path, state) -> Iterator[RunStart | Columns]:
    """Yield each live run's :class:`RunStart` and then its metrics as :class:`Columns`,
    runs in the order (experiment id, start time, run id), metrics by name.

    Raises:
        NotALog: a SQLite database without MLflow's tables.
        NoRuns: a store that holds no live run, or none that logged a metric.
        ReadError: the database is locked past the wait, corrupt, or cannot be read.
    """
    con = connect(path)
    if read_snapshot(con):
        state.notes.append(SNAPSHOT_NOTE)
    try:
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not TABLES <= tables:
                missing = sorted(TABLES - tables)
                raise NotALog(
                    "a SQLite database, not an MLflow tracking store "
                    f"(it has no {', '.join(missing)} table{'s' if len(missing) > 1 else ''})"
                )
            runs = con.execute(_RUNS).fetchall()
            if not runs:
                deleted = con.execute("SELECT count(*) FROM runs").fetchone()[0]
                raise NoRuns(
                    "the MLflow store holds no runs" + (f" ({deleted} deleted)" if deleted else "") + ": not a run"
                )
            # A run without a metric (a sweep's parent, a run that only logged params or
            # artifacts) is the tracker's record of something, but no run to judge.
            metrics = _all_metrics(con, {r[0] for r in runs})
            silent = [r for r in runs if r[0] not in metrics]
            runs = [r for r in runs if r[0] in metrics]
            if not runs:
                raise NoRuns(f"none of the MLflow store's {len(silent)} run(s) logged a metric: not a run")
            if silent:
                names = ", ".join(repr(_text(r[1], r[4], r[0]) or "?") for r in silent[:5])
                state.notes.append(
                    f"{len(silent)} run(s) of the store logged no metric and are not judged: {names}"
                    + (", …" if len(silent) > 5 else "")
                )
            for i, (run_id, run_name, start, experiment, tag_name) in enumerate(runs, 1):
                label = _text(run_name, tag_name, run_id) or f"run {i}"
                yield RunStart(
                    {"run": label, "run_id": _text(run_id), "experiment": _text(experiment), "started": _started(start)}
                )
                series, bad = metrics[run_id]
                for key, steps, values, lines in series:
                    yield _columns(key, steps, values, lines, label, state)
                if bad:
                    state.drop(
                        f"{label}: skipped {bad} metric row(s) whose key, step or value is not of the type MLflow writes"
                    )
        except errors() as e:
            raise read_error(path, e) from None
    finally:
        con.close()


def _rowid(con: sqlite3.Connection) -> str | None:
    """A name of the metrics table's row id that no column of it shadows (a column may be
    called ``rowid``), or ``None`` when it has none to read (every name taken, or a
    ``WITHOUT ROWID`` table)."""
    import sqlite3

    taken = {str(r[1]).lower() for r in con.execute("PRAGMA table_info(metrics)")}
    for alias in _ROWID_NAMES:
        if alias not in taken:
            try:
                con.execute(f"SELECT {alias} FROM metrics LIMIT 0")
            except sqlite3.OperationalError:
                return None
            return alias
    return None


_Series = tuple[str, np.ndarray, np.ndarray, np.ndarray]


def _all_metrics(con: sqlite3.Connection, live: set) -> dict[object, tuple[list[_Series], int]]:
    """Run id -> ``(series, bad)`` for each run of ``live`` with a metric row, read in one
    ordered pass: ``series`` one ``(key, steps, values, lines)`` per metric (by key, each
    in the order logged: by row id), ``bad`` the count of rows of types MLflow never
    writes. A row's line is its row id (its place in the pass where the table has none)."""
    rowid = _rowid(con)
    query = _METRICS.format(rowid=rowid) if rowid else _METRICS.format(rowid="NULL")
    out: dict[object, tuple[list[_Series], int]] = {}
    run = key = None
    series: list[_Series] = []
    bad = 0
    steps: list[float] = []
    values: list[float] = []
    lines: list[int] = []

    def close_metric() -> None:
        if key is not None and steps:
            series.append(
                (key, np.asarray(steps, np.float64), np.asarray(values, np.float64), np.asarray(lines, np.int64))
            )

    def close_run() -> None:
        close_metric()
        if run is not None and (series or bad):
            out[run] = (series, bad)

    for n, (r, k, step, value, is_nan, rid) in enumerate(con.execute(query), 1):
        if r != run:
            close_run()
            run, key, series, bad, steps, values, lines = r, None, [], 0, [], [], []
        if r not in live:
            continue
        # MLflow writes a text key, an integer step and a real value; a row of other types
        # is damage (the file edited, a page overwritten), not a value to guess at.
        if not isinstance(k, str) or not _number(step) or not _number(value):
            bad += 1
            continue
        if k != key:
            close_metric()
            key, steps, values, lines = k, [], [], []
        steps.append(float(step))
        values.append(_value(value, is_nan))
        lines.append(rid if isinstance(rid, int) else n)
    close_run()
    return out


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and not (isinstance(x, float) and math.isnan(x))


def _columns(key: str, steps: np.ndarray, values: np.ndarray, lines: np.ndarray, label: str, state) -> Columns:
    logged = steps_as_logged(steps, f"{label}: metrics/{key}", state)
    return Columns(key, steps if logged is None else np.asarray(logged, dtype=np.float64), values, lines)
