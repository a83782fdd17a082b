"""Read-only access to the SQLite databases experiment trackers keep (an MLflow
``mlflow.db`` store, a Trackio project database), shared by their readers.

A tracker may be writing the database while it is read (a training run, an ``mlflow
server``): it is opened read-only (``mode=ro``), so reading never takes a write lock or
changes the file, and a lock held too long by the writer is a :class:`ReadError` with a
one-line reason rather than a hang. Only the standard library's :mod:`sqlite3` is used.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from ._io import ReadError

__all__ = [
    "ERRORS",
    "LOCK_TIMEOUT_S",
    "MAGIC",
    "MAX_VALUE_BYTES",
    "WORK_SECONDS",
    "WORK_STEPS",
    "WORK_STEPS_PER_BYTE",
    "connect",
    "is_sqlite",
    "read_error",
    "table_names",
]

#: The first 16 bytes of every SQLite 3 database file (the SQLite file format, section 1.3).
MAGIC = b"SQLite format 3\x00"

#: Seconds a read waits for a writer's lock before it gives up (sqlite3's busy timeout):
#: a tracker commits in milliseconds, so a lock held for this long is a stuck writer.
LOCK_TIMEOUT_S = 5.0

#: The work budget of one store, in SQLite virtual-machine steps: this many, plus
#: :data:`WORK_STEPS_PER_BYTE` per byte of the file. A tracker's store is read in a few
#: ordered passes, about 0.25 steps per byte of an ``mlflow.db`` (measured on a store of
#: 1e5 metric rows); a small file that asks for more is built to burn CPU (generated
#: columns, a view over a recursive query), and reading it stops as a read error.
WORK_STEPS = 20_000_000
#: Steps per byte of the file on top of :data:`WORK_STEPS`: over 200 times what a read
#: takes, room for the per-run queries of a store with thousands of runs.
WORK_STEPS_PER_BYTE = 64
#: Seconds one store may take to read, plus one per MiB of the file: a bound on work
#: the step count does not see (one step of a generated column can build a string of
#: :data:`MAX_VALUE_BYTES`). An ``mlflow.db`` reads at about 10 MiB/s.
WORK_SECONDS = 30.0
#: The longest string or blob a statement may hold or build (SQLite's
#: ``SQLITE_LIMIT_LENGTH``, 1e9 by default): a tracker stores names, JSON rows and tags of
#: a few KiB; a value past this is a read error.
MAX_VALUE_BYTES = 64 << 20
#: VM steps between two looks at the budget.
_CHECK_EVERY = 1000

#: What reading a damaged database raises: sqlite3's errors, and UnicodeDecodeError when
#: the schema text SQLite reports in an error is not UTF-8 (sqlite3 decodes it to raise).
ERRORS = (sqlite3.Error, UnicodeDecodeError)


def is_sqlite(path: Path) -> bool:
    """Whether the file at ``path`` starts with the SQLite 3 header. Never raises."""
    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def read_error(path: Path, e: BaseException) -> ReadError:
    """A one-line :class:`ReadError` for a SQLite failure on ``path`` (one of
    :data:`ERRORS`): locked, corrupt (or not a database), or another error named by
    sqlite3's own message. The reason does not name the file: whoever reports it puts the
    path in front."""
    if isinstance(e, UnicodeDecodeError):
        return ReadError("a corrupt SQLite database (its schema holds text that is not UTF-8)")
    msg = str(e)
    low = msg.lower()
    if "locked" in low or "busy" in low:
        return ReadError(
            f"the database is locked by another process (waited {LOCK_TIMEOUT_S:g} s); "
            "try again when its writer has committed"
        )
    if low == "interrupted":
        return ReadError(
            f"reading the SQLite database took more than its work budget ({WORK_STEPS:,} steps plus "
            f"{WORK_STEPS_PER_BYTE} per byte, or {WORK_SECONDS:g} s plus 1 s per MiB): "
            "a database built to burn CPU (generated columns, recursive views)?"
        )
    if "too big" in low:
        return ReadError(f"the SQLite database holds or builds a value over {MAX_VALUE_BYTES >> 20} MiB ({msg})")
    if "not a database" in low or "malformed" in low or "corrupt" in low:
        return ReadError(f"a corrupt SQLite database ({msg})")
    return ReadError(f"the SQLite database cannot be read ({msg})")


def connect(path: Path) -> sqlite3.Connection:
    """Open the database at ``path`` read-only, waiting at most :data:`LOCK_TIMEOUT_S`
    for a writer's lock on each statement.

    Raises:
        ReadError: it cannot be opened (missing, unreadable, not a database).
    """
    uri = f"file:{quote(str(Path(path).resolve()))}?mode=ro"
    try:
        con = sqlite3.connect(uri, uri=True, timeout=LOCK_TIMEOUT_S, check_same_thread=False)
        _limit_work(con, path)
        # A run or metric name stored with bytes that are not UTF-8 is read with U+FFFD in
        # their place: one damaged name must not hide every run of the store.
        con.text_factory = lambda b: b.decode("utf-8", "replace")
        # Touch the schema now, so that a file that is not a database fails here.
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except ERRORS as e:
        raise read_error(Path(path), e) from None
    return con


def _limit_work(con: sqlite3.Connection, path: Path) -> None:
    """Bound what statements on ``con`` may cost (see :data:`WORK_STEPS`,
    :data:`WORK_SECONDS`, :data:`MAX_VALUE_BYTES`): past the budget the running statement
    stops with ``OperationalError('interrupted')``, which :func:`read_error` names."""
    import time

    try:
        size = os.stat(path).st_size
    except OSError:
        size = 0
    steps_left = WORK_STEPS + WORK_STEPS_PER_BYTE * size
    deadline = time.monotonic() + WORK_SECONDS + size / (1 << 20)

    def tick() -> int:
        nonlocal steps_left
        steps_left -= _CHECK_EVERY
        return steps_left < 0 or time.monotonic() > deadline

    con.set_progress_handler(tick, _CHECK_EVERY)
    setlimit = getattr(con, "setlimit", None)  # Python 3.11 and later
    if setlimit is not None:
        setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)


def table_names(path: Path) -> set[str] | None:
    """The tables of the database at ``path``, or ``None`` when it is not a readable
    SQLite database (no header, corrupt, locked). Never raises."""
    if not is_sqlite(path):
        return None
    try:
        con = connect(path)
    except ReadError:
        return None
    try:
        return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except ERRORS:
        return None
    finally:
        con.close()
