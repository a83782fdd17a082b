"""Read-only access to the SQLite databases experiment trackers keep (an MLflow
``mlflow.db`` store, a Trackio project database), shared by their readers.

Reading never creates, changes or locks a file beside the store (a tracker in CI may run
as another user, and a ``-wal`` or ``-shm`` file made by the reader, owned by root, would
stop its own writer). How a database is opened depends on what is beside it:

* a ``-wal`` (write-ahead log) or ``-journal`` (rollback journal) file that is not empty:
  the last commits, or a transaction a killed writer left, are in it, so the database and
  that file are copied into a private temporary folder and the copy is opened; SQLite
  reads the copy exactly as it would read the store (the log's commits included, a torn
  transaction rolled back), and the folder is deleted when the connection is closed;
* else, a database in WAL mode (its header's format version 2): opened ``immutable``, so
  SQLite makes no ``-wal``/``-shm`` file and takes no lock (a writer that starts while it
  is read appends to a new log, which is not read);
* else (rollback-journal mode, no journal): opened read-only (``mode=ro``), so a reader
  waits for a writer's lock and creates nothing.

A lock held too long by a writer is a :class:`ReadError` with a one-line reason rather
than a hang. Only the standard library's :mod:`sqlite3` is used.
"""

from __future__ import annotations

import functools
import os
import stat
import weakref
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from ._io import ReadError, open_binary

if TYPE_CHECKING:
    import sqlite3

__all__ = [
    "errors",
    "LOCK_TIMEOUT_S",
    "MAGIC",
    "MAX_VALUE_BYTES",
    "SIDECARS",
    "SNAPSHOT_NOTE",
    "WORK_SECONDS",
    "WORK_STEPS",
    "WORK_STEPS_PER_BYTE",
    "connect",
    "is_sqlite",
    "read_error",
    "read_snapshot",
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


@functools.cache
def errors() -> tuple[type[BaseException], ...]:
    """What reading a damaged database raises (:data:`ERRORS`): sqlite3's errors, and
    UnicodeDecodeError when the schema text SQLite reports in an error is not UTF-8
    (sqlite3 decodes it to raise). A function, so that sniffing a log that is no database
    (every JSONL and CSV log is asked) never imports :mod:`sqlite3`."""
    import sqlite3

    return (sqlite3.Error, UnicodeDecodeError)


def __getattr__(name: str):
    # ERRORS, for who names the tuple: sqlite3 is imported on first use.
    if name == "ERRORS":
        return errors()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: The sidecar files SQLite keeps beside a database whose content a reader needs: the
#: write-ahead log (WAL mode) and the rollback journal (a transaction in progress, or one
#: a killed writer left).
SIDECARS = ("-wal", "-journal")


def _header(path: Path) -> bytes:
    """The first 100 bytes of the regular file at ``path`` (the SQLite header), ``b""``
    when it cannot be read. Opened without blocking and checked on the descriptor, so a
    FIFO or device named like a store is never waited on."""
    try:
        with open_binary(Path(path)) as f:
            return f.read(100)
    except (OSError, ReadError):
        return b""


def is_sqlite(path: Path) -> bool:
    """Whether the file at ``path`` is a regular file that starts with the SQLite 3
    header. Never raises, never blocks (a FIFO is not opened for a blocking read)."""
    return _header(path)[: len(MAGIC)] == MAGIC


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


def _sidecars(path: Path) -> list[Path]:
    """The non-empty regular ``-wal`` and ``-journal`` files beside ``path``. A symlink in
    their place is not one: SQLite would follow it, and it may lead out of the tree."""
    out = []
    for suffix in SIDECARS:
        side = path.with_name(path.name + suffix)
        try:
            st = os.lstat(side)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_size > 0:
            out.append(side)
    return out


def _snapshot(path: Path, sidecars: list[Path]) -> Path:
    """Copy ``path`` and its ``sidecars`` into a new private temporary folder; the copy of
    the database. Every file is opened without blocking and checked to be regular.

    Raises:
        ReadError: a file cannot be read, or the copy cannot be written.
    """
    # shutil and tempfile (with random, bz2, lzma) only when a store is copied: every
    # log's format sniffing imports this module.
    import shutil
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="trainproof-sqlite-"))
    try:
        for src in (path, *sidecars):
            with open_binary(src) as fin, open(tmp / src.name, "wb") as fout:
                shutil.copyfileobj(fin, fout, 1 << 20)
    except BaseException as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, OSError):
            raise ReadError(f"the SQLite database cannot be copied to be read ({e.strerror or e})") from None
        raise
    return tmp / path.name


def _uri(path: Path) -> tuple[str, str | None]:
    """The URI that opens the database at ``path`` without writing beside it (module
    docstring), and the private folder of a copy (``None`` when the store is opened in
    place)."""
    real = Path(path).resolve()
    sidecars = _sidecars(real)
    if sidecars:
        copy = _snapshot(real, sidecars)
        # A rollback journal is rolled back on open, which needs a writable connection;
        # it is the private copy's, and the connection is made query-only.
        mode = "rw" if any(s.name.endswith("-journal") for s in sidecars) else "ro"
        return f"file:{quote(str(copy))}?mode={mode}", str(copy.parent)
    header = _header(real)
    if len(header) < 20 or header[18:20] != b"\x02\x02":
        return f"file:{quote(str(real))}?mode=ro", None
    return f"file:{quote(str(real))}?mode=ro&immutable=1", None


@functools.cache
def _connection_class() -> type:
    """The connection class :func:`connect` opens: a :class:`sqlite3.Connection` that
    deletes the private copy it reads (if any) when it is closed or collected (made on
    first use, with :mod:`sqlite3`)."""
    import sqlite3

    class _Connection(sqlite3.Connection):
        _cleanup = None

        def close(self) -> None:
            try:
                super().close()
            finally:
                if self._cleanup is not None:
                    self._cleanup()

    return _Connection


def connect(path: Path) -> sqlite3.Connection:
    """Open the database at ``path`` for reading without creating or changing any file
    beside it (module docstring), waiting at most :data:`LOCK_TIMEOUT_S` for a writer's
    lock on each statement. A FIFO or device named like a store is never opened.

    Raises:
        ReadError: it cannot be opened (missing, unreadable, not a regular file, not a
            database), or its write-ahead log or journal cannot be copied.
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise ReadError("not a regular file")
    except OSError as e:
        raise ReadError(f"the SQLite database cannot be opened ({e.strerror or e})") from None
    import shutil
    import sqlite3

    uri, copy_dir = _uri(Path(path))
    con = None
    try:
        con = sqlite3.connect(
            uri, uri=True, timeout=LOCK_TIMEOUT_S, check_same_thread=False, factory=_connection_class()
        )
        _limit_work(con, path)
        if copy_dir is not None:
            con._cleanup = weakref.finalize(con, shutil.rmtree, copy_dir, True)
            con.execute("PRAGMA query_only = ON")
        # A run or metric name stored with bytes that are not UTF-8 is read with U+FFFD in
        # their place: one damaged name must not hide every run of the store.
        con.text_factory = lambda b: b.decode("utf-8", "replace")
        # Touch the schema now, so that a file that is not a database fails here.
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except errors() as e:
        if con is not None:
            con.close()
        if copy_dir is not None:
            shutil.rmtree(copy_dir, ignore_errors=True)
        raise read_error(Path(path), e) from None
    return con


#: The note a reader adds when it reads a private copy with the store's write-ahead log or
#: journal (:func:`read_snapshot`).
SNAPSHOT_NOTE = (
    "read with its write-ahead log or journal, from a private copy: the store was being written, "
    "or its writer stopped before its last commits were moved into the database"
)


def read_snapshot(con: sqlite3.Connection) -> bool:
    """Whether ``con`` (from :func:`connect`) reads a private copy of the store with its
    write-ahead log or journal (the store was being written, or its writer was killed)."""
    return getattr(con, "_cleanup", None) is not None


def _limit_work(con: sqlite3.Connection, path: Path) -> None:
    """Bound what statements on ``con`` may cost (see :data:`WORK_STEPS`,
    :data:`WORK_SECONDS`, :data:`MAX_VALUE_BYTES`): past the budget the running statement
    stops with ``OperationalError('interrupted')``, which :func:`read_error` names."""
    import sqlite3
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
    except errors():
        return None
    finally:
        con.close()
