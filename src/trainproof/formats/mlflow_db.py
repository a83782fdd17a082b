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
import sqlite3
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ..runlog import Columns, RunStart
from ._io import NoRuns, NotALog
from ._sqlite import ERRORS, MAGIC, SNAPSHOT_NOTE, connect, is_sqlite, read_error, read_snapshot, table_names
from .mlflow import steps_as_logged

name = "mlflow_db"
description = "MLflow SQLite tracking store (mlflow.db: every run of every experiment)"
file_names = ("mlflow.db",)
suffixes = (".db", ".sqlite", ".sqlite3")
run_suffixes = ()
#: The writer updates pages in place: read again whole.
tail_mode = "whole"
preference = 2

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

_METRICS = """
SELECT key, step, value, is_nan, rowid FROM metrics WHERE run_uuid = ? ORDER BY key, rowid
"""


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
            logged = {r[0] for r in con.execute("SELECT DISTINCT run_uuid FROM metrics")}
            silent = [r for r in runs if r[0] not in logged]
            runs = [r for r in runs if r[0] in logged]
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
                yield from _metrics(con, run_id, label, state)
        except ERRORS as e:
            raise read_error(path, e) from None
    finally:
        con.close()


def _metrics(con: sqlite3.Connection, run_id: str, label: str, state) -> Iterator[Columns]:
    """The run's metrics, one :class:`Columns` each, values in the order logged."""
    key = None
    steps: list[float] = []
    values: list[float] = []
    lines: list[int] = []
    bad = 0
    for k, step, value, is_nan, rowid in con.execute(_METRICS, (run_id,)):
        # MLflow writes a text key, an integer step and a real value; a row of other types
        # is damage (the file edited, a page overwritten), not a value to guess at.
        if not isinstance(k, str) or not _number(step) or not _number(value):
            bad += 1
            continue
        if k != key:
            if key is not None:
                yield _columns(key, steps, values, lines, label, state)
            key, steps, values, lines = k, [], [], []
        steps.append(float(step))
        values.append(_value(value, is_nan))
        lines.append(rowid)
    if key is not None:
        yield _columns(key, steps, values, lines, label, state)
    if bad:
        state.drop(f"{label}: skipped {bad} metric row(s) whose key, step or value is not of the type MLflow writes")


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and not (isinstance(x, float) and math.isnan(x))


def _columns(key: str, steps: list[float], values: list[float], lines: list[int], label: str, state) -> Columns:
    logged = steps_as_logged(steps, f"{label}: metrics/{key}", state)
    return Columns(
        key,
        np.asarray(steps if logged is None else logged, dtype=np.float64),
        np.asarray(values, dtype=np.float64),
        np.asarray(lines, dtype=np.int64),
    )
