"""Trackio project database: ``<TRACKIO_DIR>/<project>.db``, one SQLite file per project.

Hugging Face's Trackio keeps every run of a project in one database, in ``$TRACKIO_DIR``
or else ``$HF_HOME/trackio`` (``~/.cache/huggingface/trackio``), named after the project
with every character but ``[A-Za-z0-9_-]`` removed (``my.proj`` -> ``myproj.db``), with a
``<project>.lock`` file beside it. The database does not hold the project's name as
written, so the project is the file's stem.

Its ``metrics`` table holds one row per ``log()`` call: ``id`` (the insertion order),
``run_id``, ``run_name``, ``step`` (an integer), ``timestamp`` (ISO 8601 with an offset)
and ``metrics``, the logged dict as JSON text, nested dicts kept nested. Trackio writes
NaN and ±Inf as the strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"``; media, tables
and histograms are objects with a ``"_type"`` key. ``configs`` holds one row per run
(``run_id``, ``run_name``, ``config`` JSON with ``_Created``, ``created_at``);
``system_metrics`` holds CPU/GPU samples, which are not training metrics. Databases of
older Trackio versions have no ``run_id`` column: a run is its name there.

The reader yields, for each run in the order its first metric was logged, a
:class:`~trainproof.runlog.RunStart` and then one record per metrics row, in the order
logged: nested keys flattened to ``a/b``, the NaN/Inf strings read as values, booleans,
other strings, lists and media objects left out, a ``null`` (an unserialised NaN) a hole.
A record's line is the row's ``id``.

The database is opened read-only (:mod:`._sqlite`): a run that is still logging is read
as committed so far.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from ..runlog import Record, RunStart
from ._io import NoRuns, ReadError
from ._sqlite import SNAPSHOT_NOTE, connect, errors, read_error, read_snapshot, table_names
from ._values import JSON, MAX_DEPTH, flatten_numeric

if TYPE_CHECKING:
    import sqlite3

name = "trackio"
description = "Trackio project database (<TRACKIO_DIR>/<project>.db, one SQLite file per project)"
file_names = ()
#: ``doctor``'s walk looks at ``.db`` files; :func:`sniff` claims only Trackio's.
suffixes = (".db",)
run_suffixes = ()
#: Rows are committed into pages of one file: it is read again whole.
tail_mode = "whole"
#: A tracker's store, read as written by the tracker: beside the trainer's own files.
preference = 2
#: Whether outputs anchor a finding at its line (a database: a finding's line is a row's index).
line_anchors = False

#: The columns of Trackio's ``metrics`` table that tell it from another store's (an
#: MLflow ``metrics`` table has ``key``, ``value``, ``run_uuid`` instead).
_METRICS_COLUMNS = frozenset(("run_name", "step", "metrics", "timestamp"))


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in con.execute(f"PRAGMA table_info({table})")}


def _trackio_place(path: Path) -> bool:
    """Where only Trackio puts a database: ``<name>.db`` beside its ``<name>.lock``, or in
    a folder called ``trackio`` (``$HF_HOME/trackio``)."""
    if path.suffix.lower() != ".db":
        return False
    return path.with_suffix(".lock").is_file() or path.parent.name.lower() == "trackio"


def sniff(path: Path, head: str) -> bool:
    """A SQLite database whose ``metrics`` table has Trackio's columns; or, at a place
    only Trackio puts a database (:func:`_trackio_place`), a ``.db`` file whose schema
    cannot be read (corrupt, not a database, locked), so that reading it says why."""
    tables = table_names(path)
    if tables is None:
        return _trackio_place(path)
    if "metrics" not in tables:
        return False
    try:
        con = connect(path)
    except ReadError:
        return _trackio_place(path)
    try:
        return _METRICS_COLUMNS <= _columns(con, "metrics")
    except errors():
        return _trackio_place(path)
    finally:
        con.close()


def _iso_utc(text: object) -> str | None:
    """An ISO 8601 time as UTC, ``2026-01-02T03:04:05Z`` (a time without an offset is
    taken as UTC, as Trackio writes UTC), or ``None`` when ``text`` is not one."""
    if not isinstance(text, str):
        return None
    try:
        t = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _json(raw: object) -> object:
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8")
    return JSON.decode(raw) if isinstance(raw, str) else None


def _without_media(obj: Mapping, depth: int = 0) -> dict:
    """``obj`` without Trackio's media, table and histogram objects (dicts with a
    ``_type``): their numbers (an image's width, a histogram's bins) are not metrics."""
    out = {}
    for k, v in obj.items():
        if isinstance(v, Mapping):
            if "_type" in v:
                continue
            if depth < MAX_DEPTH:
                v = _without_media(v, depth + 1)
        out[k] = v
    return out


def _run_key(has_ids: bool) -> str:
    # Old databases have no run_id: a run is its name there.
    return "run_id" if has_ids else "run_name"


def _runs(con: sqlite3.Connection, has_ids: bool) -> list[tuple[str, str, str | None]]:
    """``(key, name, first timestamp)`` of every run with a metric, in the order its first
    metric was logged. SQLite takes the bare columns of a ``MIN()`` query from the row
    holding the minimum."""
    key = _run_key(has_ids)
    rows = con.execute(
        f"SELECT {key}, run_name, timestamp, MIN(id) AS first FROM metrics GROUP BY {key} ORDER BY first"
    ).fetchall()
    return [(str(r[0]), str(r[1]), r[2]) for r in rows]


def _created(con: sqlite3.Connection, has_ids: bool) -> dict[str, str]:
    """Run key -> the time the run was created, from ``configs`` (its ``_Created`` entry,
    else the row's ``created_at``)."""
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "configs" not in tables:
        return {}
    cols = _columns(con, "configs")
    key = _run_key(has_ids and "run_id" in cols)
    if key not in cols or "config" not in cols:
        return {}
    created_col = ", created_at" if "created_at" in cols else ""
    out: dict[str, str] = {}
    for row in con.execute(f"SELECT {key}, config{created_col} FROM configs ORDER BY id"):
        try:
            config = _json(row[1])
        except ValueError:
            config = None
        when = _iso_utc(config.get("_Created")) if isinstance(config, dict) else None
        when = when or (_iso_utc(row[2]) if created_col else None)
        if when is not None:
            out.setdefault(str(row[0]), when)
    return out


def _finite_step(step: object) -> bool:
    """Whether a row's ``step`` is a number that a float holds (SQLite integers reach
    2**63, within a float's range; a REAL may be NaN or infinite)."""
    if isinstance(step, bool) or not isinstance(step, (int, float)):
        return False
    return math.isfinite(step)


def _records(con: sqlite3.Connection, key_col: str, key: str, state, label: str) -> Iterator[Record]:
    bad = 0
    for rid, step, raw in con.execute(f"SELECT id, step, metrics FROM metrics WHERE {key_col} = ? ORDER BY id", (key,)):
        try:
            obj = _json(raw)
        except (ValueError, UnicodeDecodeError):
            obj = None
        # Trackio writes an integer id and step; a row of other types (text in the id
        # column, a step too large for a float) is damage, not a record to guess at.
        if not isinstance(obj, dict) or not isinstance(rid, int) or not _finite_step(step):
            bad += 1
            continue
        holes: list[str] = []
        values = flatten_numeric(_without_media(obj), holes=holes)
        if values or holes:
            yield Record(float(step), values, int(rid), tuple(holes))
    if bad:
        state.drop(f"{label}: skipped {bad} metrics row(s) that are not a JSON object with a step")


def read(path: Path, state) -> Iterator[Record | RunStart]:
    """Yield each run's :class:`~trainproof.runlog.RunStart` (``run``, ``run_id``,
    ``experiment`` = the project, ``started``), then its records (see the module
    docstring).

    Raises:
        ReadError: the file cannot be opened or read as SQLite (corrupt, locked past
            :data:`._sqlite.LOCK_TIMEOUT_S`) or has no Trackio ``metrics`` table.
        NoRuns: it holds no logged metric (``doctor`` lists it as not a run).
    """
    con = connect(path)
    if read_snapshot(con):
        state.notes.append(SNAPSHOT_NOTE)
    try:
        yield from _read(con, path, state)
    except errors() as e:
        raise read_error(path, e) from None
    finally:
        con.close()


def _read(con: sqlite3.Connection, path: Path, state) -> Iterator[Record | RunStart]:
    cols = _columns(con, "metrics")
    if not _METRICS_COLUMNS <= cols:
        raise ReadError("not a Trackio database (no metrics table with run_name, step, metrics)")
    has_ids = "run_id" in cols
    runs = _runs(con, has_ids)
    if not runs:
        raise NoRuns("a Trackio database with no logged metrics: no run to judge")
    created = _created(con, has_ids)
    project = path.stem
    for key, run_name, first_ts in runs:
        meta = {"run": run_name, "run_id": key, "experiment": project}
        started = created.get(key) or _iso_utc(first_ts)
        if started is not None:
            meta["started"] = started
        yield RunStart(meta)
        yield from _records(con, _run_key(has_ids), key, state, f"run {run_name}")
