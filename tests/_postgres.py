"""A real PostgreSQL server for tests: initdb into a fresh folder, listening on 127.0.0.1
only, on a free port; started by :func:`running_server` and always stopped by it.

PostgreSQL refuses to run as root, so where the tests run as root the server runs as the
``postgres`` user (``runuser``). Where no server can be started (no PostgreSQL binaries,
no ``psycopg``, root without a ``postgres`` user) the tests that need one skip, saying
why.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

#: Seconds the server may take to start (initdb, then ready for connections) and to stop
#: on a loaded 2-core machine.
START_DEADLINE_S = 120

_READY = "database system is ready to accept connections"


def bindir() -> Path | None:
    """The folder of ``initdb`` and ``postgres``: Debian's newest
    ``/usr/lib/postgresql/<v>/bin``, else the ``PATH``'s."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[4]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _as_server_user() -> list[str]:
    if os.geteuid() != 0:
        return []
    try:
        import pwd

        pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("running as root (which PostgreSQL refuses) and there is no postgres user to run the server as")
    if shutil.which("runuser") is None:
        pytest.skip("running as root (which PostgreSQL refuses) and runuser is absent")
    return ["runuser", "-u", "postgres", "--"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_server() -> Iterator[str]:
    """Start a PostgreSQL server and yield its URL
    (``postgresql://trainproof@127.0.0.1:<port>/postgres``, user ``trainproof``, a
    superuser, trusted on loopback); stop it and remove its folder on exit. Skips the
    test where none can start."""
    pytest.importorskip("psycopg", reason="the psycopg driver (the postgres extra) is not installed")
    bins = bindir()
    if bins is None:
        pytest.skip("no PostgreSQL server binaries (initdb): install Debian's postgresql package")
    prefix = _as_server_user()
    # A folder of its own under the system's temporary folder: pytest's own is private to
    # the user running the tests, and the server's user must own its data folder.
    folder = Path(tempfile.mkdtemp(prefix="trainproof-pg-"))
    data = folder / "data"
    try:
        if prefix:
            shutil.chown(folder, "postgres", "postgres")
        subprocess.run(
            [*prefix, str(bins / "initdb"), "-D", str(data), "-U", "trainproof", "-A", "trust", "-E", "UTF8",
             "--no-sync", "--no-instructions"],
            check=True, capture_output=True, timeout=START_DEADLINE_S,
        )  # fmt: skip
        port = _free_port()
        proc = subprocess.Popen(
            # -F: no fsync (a test's data need not survive a power cut); -k: the Unix socket
            # in the data's folder, not /var/run/postgresql; -c listen_addresses: loopback only.
            [*prefix, str(bins / "postgres"), "-D", str(data), "-p", str(port), "-F", "-k", str(folder),
             "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=50"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
        try:
            _wait_ready(proc)
            yield f"postgresql://trainproof@127.0.0.1:{port}/postgres"
        finally:
            # SIGINT: PostgreSQL's fast shutdown (ends the sessions, stops cleanly).
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=START_DEADLINE_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _wait_ready(proc: subprocess.Popen) -> None:
    """Wait until the server's log says it accepts connections, then keep draining its
    log in a thread (a full pipe would stop the server). Fails the test with the log's
    end if the server exits or stays silent past the deadline."""
    ready = threading.Event()
    tail: list[str] = []

    def drain() -> None:
        for line in proc.stderr:
            tail[:] = [*tail[-20:], line]
            if _READY in line:
                ready.set()
        ready.set()  # the log ended: the server is gone

    threading.Thread(target=drain, daemon=True).start()
    if not ready.wait(START_DEADLINE_S) or proc.poll() is not None:
        raise RuntimeError("the PostgreSQL server did not start:\n" + "".join(tail))


_DB_NUMBERS = itertools.count(1)


def new_database(server_url: str) -> str:
    """A new, empty database on the server at ``server_url``; its URL."""
    import psycopg

    name = f"t{os.getpid()}_{next(_DB_NUMBERS)}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return server_url.rsplit("/", 1)[0] + f"/{name}"


#: The kinds of history a test runs on: an SQLite file, and a PostgreSQL database (slow: a
#: server starts once a module). A module parametrizes its ``store_location`` fixture
#: with them and builds each with :func:`location_of`.
STORE_KINDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)]


def location_of(kind: str, tmp_path: Path, request) -> str:
    """A new history location of ``kind``: a file in ``tmp_path``, or a new database on the
    server of the requesting module's ``pg`` fixture (a module-scoped
    :func:`running_server`)."""
    if kind == "sqlite":
        return str(tmp_path / "history.db")
    return new_database(request.getfixturevalue("pg"))


@pytest.fixture(scope="module")
def pg() -> Iterator[str]:
    """A PostgreSQL server for the requesting module (:func:`running_server`); its URL."""
    with running_server() as url:
        yield url


@pytest.fixture(params=STORE_KINDS)
def store_location(request, tmp_path) -> str:
    """A new history location of each kind in :data:`STORE_KINDS` (:func:`location_of`)."""
    return location_of(request.param, tmp_path, request)
