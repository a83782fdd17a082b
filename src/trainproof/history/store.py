"""Where the run history is kept: an SQLite file, or a PostgreSQL database.

:func:`open_store` takes a location: a path is an SQLite file (the standard library's
``sqlite3``), a ``postgresql://`` (or ``postgres://``) URL a PostgreSQL database (the
``psycopg`` driver, the ``postgres`` extra). Both go through one SQL layer, :class:`Store`:
the same tables, the same statements (only the placeholder and three column types differ,
:class:`_Dialect`), the same versioned schema and migrations (:data:`MIGRATIONS`).

Tables (schema version 1; ``trainproof_`` prefixed, so a shared PostgreSQL database can
hold them beside others):

- ``trainproof_schema(version)``: one row, the schema's version;
- ``trainproof_runs(id, experiment, run, source, verdict, findings, summary, commit_sha,
  recorded_at)``: one row a recorded run; ``findings`` a JSON list of ids, ``summary`` a
  JSON object (:data:`~trainproof.history.record.SUMMARY_KEYS`);
- ``trainproof_curves(run_id, metric, points, steps, vals)``: one row a metric of a run,
  its steps and values as little-endian float64 bytes (NaN and ±Inf kept).

Many writers: a record is written in one transaction (SQLite: ``BEGIN IMMEDIATE``, so a
writer waits for the write lock up front under the busy timeout instead of failing on an
upgrade; WAL mode, so readers never wait for a writer). Creating or migrating the schema
holds the write lock (SQLite) or an advisory lock (PostgreSQL), so concurrent first
writers create it once.

Every failure of the store is a :class:`HistoryError` with one line naming the store and
what is wrong: locked past the busy timeout, read-only, not a history or corrupt, of a
newer schema, unreachable.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .record import Curve, RunRecord

#: The schema version this code writes and reads. A store of a higher version was written
#: by a newer trainproof and is refused (its layout may mean something this code does not
#: know); a lower one is migrated forward by :data:`MIGRATIONS`.
SCHEMA_VERSION = 1

#: Seconds a writer waits for another writer's lock before the store is "locked". A record
#: is written in milliseconds; 30 s leaves room for dozens of writers on a loaded machine
#: and still ends a wait on a store some process holds open in a transaction for good.
BUSY_TIMEOUT_S = 30.0

#: The rule whose finding takes a run out of the references of the next ones.
BEHIND_HISTORY = "TP-BEHIND-HISTORY"

#: Seconds to wait for a PostgreSQL server to answer a connection.
CONNECT_TIMEOUT_S = 10

#: Largest number of ids in one ``IN (...)`` list (SQLite's default limit of host
#: parameters is 32766 since 3.32; older builds have 999).
_CHUNK = 500

#: The PostgreSQL advisory lock key the schema's creation and migrations hold
#: (``'trainproof'`` as bytes, read as a number: any constant that other applications of
#: the database are unlikely to take).
_PG_LOCK_KEY = 0x747261696E70726F

_TABLES = ("trainproof_schema", "trainproof_runs", "trainproof_curves")

#: The schema's migrations: ``MIGRATIONS[v]`` takes a store from version ``v`` to ``v + 1``.
#: Statements are templates over :class:`_Dialect`'s column types (``{serial}``,
#: ``{real}``, ``{blob}``). A migration is only ever appended: a released one never changes.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        "CREATE TABLE trainproof_schema (version INTEGER NOT NULL)",
        "CREATE TABLE trainproof_runs ("
        " id {serial},"
        " experiment TEXT NOT NULL,"
        " run TEXT NOT NULL,"
        " source TEXT NOT NULL,"
        " verdict TEXT NOT NULL,"
        " findings TEXT NOT NULL,"
        " summary TEXT NOT NULL,"
        " commit_sha TEXT,"
        " recorded_at {real} NOT NULL)",
        "CREATE INDEX trainproof_runs_experiment ON trainproof_runs (experiment, recorded_at, id)",
        "CREATE INDEX trainproof_runs_run ON trainproof_runs (run, recorded_at, id)",
        "CREATE TABLE trainproof_curves ("
        " run_id INTEGER NOT NULL REFERENCES trainproof_runs (id) ON DELETE CASCADE,"
        " metric TEXT NOT NULL,"
        " points INTEGER NOT NULL,"
        " steps {blob} NOT NULL,"
        " vals {blob} NOT NULL,"
        " PRIMARY KEY (run_id, metric))",
    ),
)
assert len(MIGRATIONS) == SCHEMA_VERSION


class HistoryError(Exception):
    """The history store cannot be used; the message is one line naming the store (a
    URL's password shown as ``***``) and what is wrong."""


class RunNotFound(HistoryError, LookupError):
    """No recorded run of that name (:meth:`Store.get`)."""


@dataclass(frozen=True)
class _Dialect:
    """What differs between the two databases in the statements: the placeholder and
    three column types."""

    name: str
    param: str
    serial: str
    real: str
    blob: str

    def sql(self, text: str) -> str:
        """``text`` (written with ``?`` placeholders) in this dialect."""
        return text if self.param == "?" else text.replace("?", self.param)


_SQLITE = _Dialect("sqlite", "?", "INTEGER PRIMARY KEY AUTOINCREMENT", "REAL", "BLOB")
_POSTGRES = _Dialect("postgresql", "%s", "BIGSERIAL PRIMARY KEY", "DOUBLE PRECISION", "BYTEA")


def is_postgres(location: str) -> bool:
    """Whether ``location`` names a PostgreSQL database (a ``postgresql://`` or
    ``postgres://`` URL) rather than an SQLite file."""
    low = str(location).lower()
    return low.startswith("postgresql://") or low.startswith("postgres://")


def shown(location: str) -> str:
    """``location`` as messages print it: a URL's password as ``***``."""
    from ..remote import shown as _shown

    return str(_shown(str(location)))


def open_store(location: str | os.PathLike, *, create: bool = True, timeout: float = BUSY_TIMEOUT_S) -> Store:
    """Open the history at ``location``: a path (an SQLite file) or a ``postgresql://`` URL.

    ``create``: create the file (SQLite) and the tables where they are missing, and
    migrate an older schema; without it a missing store is an error, and nothing is
    written. ``timeout``: seconds a write waits for another writer's lock
    (:data:`BUSY_TIMEOUT_S`).

    Raises:
        HistoryError: the store is missing (``create=False``), cannot be opened or reached,
            is not a trainproof history or is corrupt, is of a newer schema, or is locked or
            read-only when its schema must be created or migrated; for a PostgreSQL URL
            also when the ``psycopg`` driver is not installed.
    """
    loc = os.fspath(location)
    if not loc:
        raise HistoryError("history: no location given (a file path or a postgresql:// URL)")
    store = _open_postgres(loc, timeout) if is_postgres(loc) else _open_sqlite(loc, create, timeout)
    try:
        store._prepare(create)
    except BaseException:
        store.close()
        raise
    return store


def _open_sqlite(loc: str, create: bool, timeout: float) -> Store:
    path = Path(loc)
    if path.is_dir():
        raise HistoryError(f"history {loc}: is a folder; give a file path (e.g. {Path(loc) / 'history.db'})")
    if not path.exists():
        if not create:
            raise HistoryError(f"history {loc}: no such file (nothing recorded there yet)")
        if not path.parent.is_dir():
            raise HistoryError(f"history {loc}: the folder {path.parent} does not exist")
    target: str = loc
    uri = False
    if not create and not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
        # Only read, from a file or a folder that cannot be written (a read-only mount, a
        # shared copy): a WAL store cannot be opened the usual way there (SQLite would
        # create its -shm beside it), so it is opened read-only as an immutable file.
        target, uri = path.resolve().as_uri() + "?mode=ro&immutable=1", True
    try:
        # isolation_level=None: the store issues BEGIN/COMMIT itself (BEGIN IMMEDIATE for
        # writes); check_same_thread=False: one Store is shared by a monitor's threads, and
        # its lock serialises them.
        conn = sqlite3.connect(target, timeout=timeout, isolation_level=None, check_same_thread=False, uri=uri)
    except sqlite3.Error as e:
        raise HistoryError(f"history {loc}: {_sqlite_reason(e, timeout)}") from None
    return Store(loc, _SQLITE, conn, timeout)


def _open_postgres(loc: str, timeout: float) -> Store:
    try:
        import psycopg
    except ImportError:
        raise HistoryError(
            f"history {shown(loc)}: a PostgreSQL history needs the psycopg driver: pip install 'trainproof[postgres]'"
        ) from None
    try:
        conn = psycopg.connect(
            loc,
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT_S,
            # a lock held by another writer past the busy timeout is "locked", as in SQLite
            options=f"-c lock_timeout={int(timeout * 1000)}",
        )
    except psycopg.Error as e:
        raise HistoryError(f"history {shown(loc)}: cannot connect: {_first_line(e)}") from None
    return Store(loc, _POSTGRES, conn, timeout)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0].strip() if text else type(e).__name__


def _sqlite_reason(e: BaseException, timeout: float) -> str:
    """The one-line reason of an SQLite error, in the store's terms."""
    msg = _first_line(e)
    low = msg.lower()
    if "locked" in low or "busy" in low:
        return f"locked by another process (waited {timeout:g} s for it)"
    if "readonly" in low or "read-only" in low:
        return "read-only (no permission to write the file or its folder)"
    if "not a database" in low or "malformed" in low or "corrupt" in low:
        return f"not a trainproof history, or corrupt ({msg})"
    if "unable to open" in low:
        return f"cannot be opened ({msg}: a missing folder or no permission)"
    if "disk" in low and "full" in low:
        return "the disk is full"
    return msg


def _pg_reason(e: BaseException) -> str:
    """The one-line reason of a PostgreSQL error, in the store's terms."""
    import psycopg.errors as pe

    if isinstance(e, (pe.LockNotAvailable, pe.DeadlockDetected, pe.QueryCanceled)):
        return f"locked by another client ({_first_line(e)})"
    if isinstance(e, (pe.ReadOnlySqlTransaction, pe.InsufficientPrivilege)):
        return f"read-only ({_first_line(e)})"
    if isinstance(e, (pe.OperationalError, pe.InterfaceError)):
        return f"unreachable ({_first_line(e)})"
    return _first_line(e)


class Store:
    """A run history: records added, an experiment's runs listed newest first.

    Opened by :func:`open_store`; usable from several threads (one statement at a time)
    and as a context manager (closed on exit). Every method raises :class:`HistoryError`
    for a store that cannot answer.
    """

    def __init__(self, location: str, dialect: _Dialect, conn, timeout: float) -> None:
        self.location = location
        self.dialect = dialect
        self.timeout = timeout
        self._conn = conn
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Store({shown(self.location)!r}, {self.dialect.name})"

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the SQL layer -------------------------------------------------------------------

    def _error(self, e: BaseException) -> HistoryError:
        why = _sqlite_reason(e, self.timeout) if self.dialect is _SQLITE else _pg_reason(e)
        return HistoryError(f"history {shown(self.location)}: {why}")

    def _errors(self) -> tuple[type[BaseException], ...]:
        if self.dialect is _SQLITE:
            return (sqlite3.Error,)
        import psycopg

        return (psycopg.Error,)

    @contextmanager
    def _transaction(self, write: bool) -> Iterator:
        """A cursor in one transaction, committed when the block ends and rolled back when
        it raises; a database error becomes :class:`HistoryError`. A write transaction
        takes SQLite's write lock at its start."""
        with self._lock:
            if self._conn is None:
                raise HistoryError(f"history {shown(self.location)}: the store is closed")
            try:
                cur = self._conn.cursor()
                cur.execute("BEGIN IMMEDIATE" if write and self.dialect is _SQLITE else "BEGIN")
                try:
                    yield cur
                except BaseException:
                    cur.execute("ROLLBACK")
                    raise
                cur.execute("COMMIT")
            except self._errors() as e:
                self._rollback_quietly()
                raise self._error(e) from None

    def _rollback_quietly(self) -> None:
        try:
            # the store runs in autocommit mode and issues BEGIN itself, so the driver does
            # not know a transaction is open: end it with a statement
            self._conn.execute("ROLLBACK")
        except Exception:  # noqa: BLE001 - the connection may be gone; the first error is the one reported
            pass

    def _x(self, cur, sql: str, params: Sequence = ()) -> None:
        cur.execute(self.dialect.sql(sql), tuple(params))

    # -- schema ----------------------------------------------------------------------------

    def _version(self, cur) -> int | None:
        """The stored schema version, ``None`` where the store has no trainproof tables."""
        if self.dialect is _SQLITE:
            cur.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        else:
            cur.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
                " AND table_name LIKE 'trainproof%%'"
            )
        tables = {r[0] for r in cur.fetchall()}
        if "trainproof_schema" not in tables:
            others = sorted(t for t in tables if not t.startswith("sqlite_"))
            if self.dialect is _SQLITE and others:
                raise HistoryError(
                    f"history {self.location}: an SQLite database that is not a trainproof history "
                    f"(it holds {', '.join(others[:3])}{', …' if len(others) > 3 else ''}); give a new file"
                )
            return None
        cur.execute("SELECT version FROM trainproof_schema")
        rows = cur.fetchall()
        if len(rows) != 1 or not isinstance(rows[0][0], int):
            raise HistoryError(
                f"history {shown(self.location)}: not a trainproof history, or corrupt (no schema version)"
            )
        return int(rows[0][0])

    def _prepare(self, create: bool) -> None:
        """Check the schema, and create or migrate it where ``create`` allows."""
        with self._transaction(write=False) as cur:
            version = self._version(cur)
        if version == SCHEMA_VERSION:
            return
        self._refuse_newer(version)
        if not create:
            if version is None:
                raise HistoryError(
                    f"history {shown(self.location)}: no trainproof history there (nothing recorded yet)"
                )
            raise HistoryError(
                f"history {shown(self.location)}: schema version {version} is older than this trainproof's "
                f"({SCHEMA_VERSION}); record one run into it to migrate it"
            )
        if self.dialect is _SQLITE:
            self._wal()
        with self._transaction(write=True) as cur:
            if self.dialect is _POSTGRES:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (_PG_LOCK_KEY,))
            # another writer may have created or migrated it while this one waited
            version = self._version(cur)
            self._refuse_newer(version)
            start = version or 0
            for step in MIGRATIONS[start:]:
                for stmt in step:
                    cur.execute(stmt.format(serial=self.dialect.serial, real=self.dialect.real, blob=self.dialect.blob))
            if version is None:
                self._x(cur, "INSERT INTO trainproof_schema (version) VALUES (?)", (SCHEMA_VERSION,))
            else:
                self._x(cur, "UPDATE trainproof_schema SET version = ?", (SCHEMA_VERSION,))

    def _wal(self) -> None:
        """Put the SQLite file in WAL mode (kept in the file: set once, before the schema is
        made), so readers never wait for a writer and a writer never waits for readers.

        Changing the journal mode needs the file to itself, and SQLite answers "busy" at
        once, without its busy handler, while another connection reads it (concurrent
        first writers do): the change is retried, waiting a little longer each time (as
        the busy handler itself does), until it is made or the busy timeout is spent."""
        deadline = time.monotonic() + self.timeout
        pause = 0.001
        while True:
            with self._lock:
                try:
                    mode = self._conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                    self._conn.execute("PRAGMA synchronous=NORMAL")
                    if str(mode).lower() == "wal":
                        return
                    raise HistoryError(f"history {self.location}: cannot use WAL mode (the journal mode stays {mode})")
                except sqlite3.OperationalError as e:
                    if "locked" not in str(e).lower() or time.monotonic() + pause > deadline:
                        raise self._error(e) from None
                except sqlite3.Error as e:
                    raise self._error(e) from None
            time.sleep(pause)
            pause = min(pause * 2, 0.1)

    def _refuse_newer(self, version: int | None) -> None:
        if version is not None and version > SCHEMA_VERSION:
            raise HistoryError(
                f"history {shown(self.location)}: schema version {version} was written by a newer trainproof "
                f"(this one reads up to {SCHEMA_VERSION}); upgrade trainproof"
            )

    def schema_version(self) -> int:
        """The store's schema version."""
        with self._transaction(write=False) as cur:
            return self._version(cur) or 0

    # -- records -------------------------------------------------------------------------

    def add(self, record: RunRecord) -> int:
        """Record ``record`` (its ``id`` is ignored); returns the id the store gives it.
        The run and its curves are written in one transaction: a reader sees all of it or
        none."""
        summary = {k: (v if not isinstance(v, float) or math.isfinite(v) else None) for k, v in record.summary.items()}
        row = (
            record.experiment,
            record.run,
            record.source,
            record.verdict,
            json.dumps(list(record.findings)),
            json.dumps(summary, allow_nan=False, sort_keys=True),
            record.commit,
            float(record.recorded_at),
        )
        curves = [
            (name, len(c), c.steps.astype("<f8").tobytes(), c.values.astype("<f8").tobytes())
            for name, c in sorted(record.curves.items())
        ]
        with self._transaction(write=True) as cur:
            self._x(
                cur,
                "INSERT INTO trainproof_runs (experiment, run, source, verdict, findings, summary, commit_sha,"
                " recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                row,
            )
            rid = int(cur.fetchone()[0])
            if curves:
                cur.executemany(
                    self.dialect.sql(
                        "INSERT INTO trainproof_curves (run_id, metric, points, steps, vals) VALUES (?, ?, ?, ?, ?)"
                    ),
                    [(rid, *c) for c in curves],
                )
        return rid

    _COLUMNS = "id, experiment, run, source, verdict, findings, summary, commit_sha, recorded_at"

    def runs(
        self,
        experiment: str,
        *,
        limit: int | None = None,
        healthy_only: bool = False,
        before: float | None = None,
        offset: int = 0,
    ) -> list[RunRecord]:
        """The runs recorded under ``experiment``, newest first (by ``recorded_at``, then
        by id). ``limit``: at most that many; ``healthy_only``: only runs judged PASS or
        WARN and not found behind their own past by TP-BEHIND-HISTORY (the ones the history
        takes as references); ``before``: only runs recorded
        before that time (seconds since the epoch); ``offset``: skip that many first (with
        ``limit``, a page)."""
        sql = f"SELECT {self._COLUMNS} FROM trainproof_runs WHERE experiment = ?"
        params: list = [experiment]
        if healthy_only:
            # A run the history itself found behind its past is no reference for the next
            # one: TP-BEHIND-HISTORY is a WARN, so its runs are judged WARN like healthy ones.
            sql += " AND verdict IN ('PASS', 'WARN') AND findings NOT LIKE ?"
            params.append(f'%"{BEHIND_HISTORY}"%')
        if before is not None:
            sql += " AND recorded_at < ?"
            params.append(float(before))
        sql += " ORDER BY recorded_at DESC, id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(max(0, int(limit)))
            if offset:
                sql += " OFFSET ?"
                params.append(max(0, int(offset)))
        with self._transaction(write=False) as cur:
            self._x(cur, sql, params)
            rows = cur.fetchall()
            curves = self._curves(cur, [r[0] for r in rows])
        return [self._record(r, curves.get(int(r[0]), {})) for r in rows]

    def get(self, run: str, *, experiment: str | None = None) -> RunRecord:
        """The newest record of the run named ``run`` (its name, else its source; ``#N``
        is the record of id N), within ``experiment`` where given.

        Raises:
            RunNotFound: no such run.
        """
        where, params = "run = ?", [run]
        if run.startswith("#") and run[1:].isdigit():
            where, params = "id = ?", [int(run[1:])]
        if experiment is not None:
            where += " AND experiment = ?"
            params.append(experiment)
        order = " ORDER BY recorded_at DESC, id DESC LIMIT 1"
        with self._transaction(write=False) as cur:
            self._x(cur, f"SELECT {self._COLUMNS} FROM trainproof_runs WHERE {where}{order}", params)
            row = cur.fetchone()
            if row is None and where.startswith("run"):
                self._x(
                    cur,
                    f"SELECT {self._COLUMNS} FROM trainproof_runs WHERE {where.replace('run', 'source', 1)}{order}",
                    params,
                )
                row = cur.fetchone()
            if row is None:
                scope = f" in experiment {experiment}" if experiment is not None else ""
                raise RunNotFound(f"history {shown(self.location)}: no recorded run {run}{scope}")
            curves = self._curves(cur, [row[0]])
        return self._record(row, curves.get(int(row[0]), {}))

    def experiments(self) -> list[str]:
        """The experiments with recorded runs, by name."""
        with self._transaction(write=False) as cur:
            cur.execute("SELECT DISTINCT experiment FROM trainproof_runs ORDER BY experiment")
            return [r[0] for r in cur.fetchall()]

    def recent_experiments(self, limit: int) -> list[tuple[str, int]]:
        """``(experiment, number of runs)`` of the ``limit`` experiments recorded into most
        recently, newest first: one query, however many experiments the history holds."""
        with self._transaction(write=False) as cur:
            self._x(
                cur,
                "SELECT experiment, COUNT(*), MAX(recorded_at) AS last FROM trainproof_runs "
                "GROUP BY experiment ORDER BY last DESC, experiment LIMIT ?",
                (max(0, int(limit)),),
            )
            return [(r[0], int(r[1])) for r in cur.fetchall()]

    def count(self, experiment: str | None = None) -> int:
        """The number of recorded runs (of ``experiment``, where given)."""
        with self._transaction(write=False) as cur:
            if experiment is None:
                cur.execute("SELECT COUNT(*) FROM trainproof_runs")
            else:
                self._x(cur, "SELECT COUNT(*) FROM trainproof_runs WHERE experiment = ?", (experiment,))
            return int(cur.fetchone()[0])

    def _curves(self, cur, ids: list) -> dict[int, dict[str, Curve]]:
        out: dict[int, dict[str, Curve]] = {}
        for i in range(0, len(ids), _CHUNK):
            chunk = [int(x) for x in ids[i : i + _CHUNK]]
            marks = ", ".join("?" * len(chunk))
            self._x(
                cur,
                f"SELECT run_id, metric, points, steps, vals FROM trainproof_curves WHERE run_id IN ({marks})",
                chunk,
            )
            for rid, metric, points, steps, vals in cur.fetchall():
                s = np.frombuffer(bytes(steps), dtype="<f8").astype(np.float64)
                v = np.frombuffer(bytes(vals), dtype="<f8").astype(np.float64)
                if s.size != points or v.size != points:
                    raise HistoryError(
                        f"history {shown(self.location)}: corrupt: the curve {metric} of record #{rid} has "
                        f"{s.size} steps and {v.size} values for {points} points"
                    )
                out.setdefault(int(rid), {})[metric] = Curve(s, v)
        return out

    def _record(self, row, curves: dict[str, Curve]) -> RunRecord:
        rid, experiment, run, source, verdict, findings, summary, commit, recorded_at = row
        try:
            ids = tuple(json.loads(findings))
            summ = json.loads(summary)
        except (TypeError, ValueError):
            raise HistoryError(f"history {shown(self.location)}: corrupt: record #{rid} is not readable") from None
        return RunRecord(
            experiment=experiment,
            run=run,
            source=source,
            verdict=verdict,
            findings=ids,
            summary=summ,
            curves=curves,
            commit=commit,
            recorded_at=float(recorded_at),
            id=int(rid),
        )

    def close(self) -> None:
        """Close the connection (a second close does nothing)."""
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - closing a broken connection has nothing left to report
                pass


__all__ = [
    "BUSY_TIMEOUT_S",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "HistoryError",
    "RunNotFound",
    "Store",
    "is_postgres",
    "open_store",
    "shown",
]
