"""Read-only access to the SQLite databases experiment trackers keep (an MLflow
``mlflow.db`` store, a Trackio project database), shared by their readers.

A tracker may be writing the database while it is read (a training run, an ``mlflow
server``): it is opened read-only (``mode=ro``), so reading never takes a write lock or
changes the file, and a lock held too long by the writer is a :class:`ReadError` with a
one-line reason rather than a hang. Only the standard library's :mod:`sqlite3` is used.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote

from ._io import ReadError

__all__ = ["ERRORS", "MAGIC", "LOCK_TIMEOUT_S", "connect", "is_sqlite", "read_error", "table_names"]

#: The first 16 bytes of every SQLite 3 database file (the SQLite file format, section 1.3).
MAGIC = b"SQLite format 3\x00"

#: Seconds a read waits for a writer's lock before it gives up (sqlite3's busy timeout):
#: a tracker commits in milliseconds, so a lock held for this long is a stuck writer.
LOCK_TIMEOUT_S = 5.0

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
        # A run or metric name stored with bytes that are not UTF-8 is read with U+FFFD in
        # their place: one damaged name must not hide every run of the store.
        con.text_factory = lambda b: b.decode("utf-8", "replace")
        # Touch the schema now, so that a file that is not a database fails here.
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except ERRORS as e:
        raise read_error(Path(path), e) from None
    return con


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
