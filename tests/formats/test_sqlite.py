"""Tracker stores (Trackio, MLflow ``mlflow.db``) are read without creating or changing any
file beside them, with what their write-ahead log holds, and a FIFO named like a store is
never opened for a blocking read."""

from __future__ import annotations

import json
import math
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from trainproof.formats import _sqlite, mlflow_db, trackio

from conftest import run_subprocess

STEPS = 120
#: Steps of the run that are committed to the database file itself; the rest, where the
#: loss turns NaN, are committed only to the write-ahead log in the WAL tests.
CHECKPOINTED = 90

_TRACKIO = (
    "CREATE TABLE metrics (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, "
    "timestamp TEXT NOT NULL, run_name TEXT NOT NULL, step INTEGER NOT NULL, metrics TEXT NOT NULL);"
    "CREATE TABLE configs (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, "
    "run_name TEXT NOT NULL, config TEXT NOT NULL, created_at TEXT NOT NULL);"
)

_MLFLOW = (
    "CREATE TABLE experiments (experiment_id INTEGER PRIMARY KEY, name TEXT, lifecycle_stage TEXT);"
    "CREATE TABLE runs (run_uuid TEXT PRIMARY KEY, name TEXT, start_time BIGINT, experiment_id INTEGER, "
    "lifecycle_stage TEXT);"
    "CREATE TABLE tags (key TEXT, value TEXT, run_uuid TEXT);"
    "CREATE TABLE metrics (key TEXT, value FLOAT, timestamp BIGINT, run_uuid TEXT, step BIGINT, is_nan BOOLEAN);"
    "INSERT INTO experiments VALUES (0, 'Default', 'active');"
    "INSERT INTO runs VALUES ('r0', 'run-0', 1700000000000, 0, 'active');"
)


def _loss(i: int) -> float:
    """A healthy decaying loss with a little deterministic noise; NaN from step
    ``CHECKPOINTED`` on when ``diverge`` rows are written."""
    return 2.0 * math.exp(-i / 40) + 0.3 + 0.01 * math.sin(7.3 * i)


def _rows(kind: str, start: int, stop: int, diverge: bool) -> list[tuple[str, tuple]]:
    out = []
    for i in range(start, stop):
        v = math.nan if diverge and i >= CHECKPOINTED else _loss(i)
        if kind == "trackio":
            row = {"train/loss": "NaN" if math.isnan(v) else v, "train/learning_rate": 1e-4}
            out.append(
                (
                    "INSERT INTO metrics (run_id, timestamp, run_name, step, metrics) VALUES (?, ?, ?, ?, ?)",
                    ("r0", f"2024-01-01T00:{i // 60:02d}:{i % 60:02d}+00:00", "run-0", i + 1, json.dumps(row)),
                )
            )
        else:
            for key, val in (("loss", v), ("lr", 1e-4)):
                nan = math.isnan(val)
                out.append(
                    (
                        "INSERT INTO metrics VALUES (?, ?, ?, ?, ?, ?)",
                        (key, 0.0 if nan else val, 1700000000000 + i, "r0", i + 1, int(nan)),
                    )
                )
    return out


def _store(folder: Path, kind: str, stop: int = STEPS, diverge: bool = False) -> Path:
    """A store in WAL mode with ``stop`` steps, closed cleanly (no ``-wal`` left)."""
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / ("project.db" if kind == "trackio" else "mlflow.db")
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal"
    con.executescript(_TRACKIO if kind == "trackio" else _MLFLOW)
    for sql, args in _rows(kind, 0, stop, diverge):
        con.execute(sql, args)
    con.commit()
    con.close()
    if kind == "trackio":
        (folder / "project.lock").touch()
    return db


def _state(folder: Path) -> dict[str, tuple[int, int, int]]:
    """Every entry of ``folder``: its mode, size and mtime in nanoseconds."""
    out = {}
    for p in sorted(folder.iterdir()):
        st = os.lstat(p)
        out[p.name] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


def _doctor_json(path: Path) -> tuple[int, dict]:
    proc = run_subprocess("doctor", str(path), "--json", "--jobs", "1")
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def _verdicts(doc: dict) -> list[str]:
    return [r["verdict"] for r in doc["reports"]]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["trackio", "mlflow"])
def test_a_wal_mode_store_is_read_without_a_file_made_or_changed_beside_it(tmp_path, kind):
    folder = tmp_path / "trackers"
    _store(folder, kind)
    assert not list(folder.glob("*-wal")) and not list(folder.glob("*-shm"))
    before = _state(folder)
    code, doc = _doctor_json(tmp_path)
    assert code == 0 and _verdicts(doc) == ["PASS"], doc
    assert _state(folder) == before
    # With the folder read-only (as a checkout owned by another user is), it still reads.
    # Root ignores the mode: there this repeats the check above.
    os.chmod(folder, 0o555)
    try:
        code, doc = _doctor_json(tmp_path)
    finally:
        os.chmod(folder, 0o755)
    assert code == 0 and _verdicts(doc) == ["PASS"], doc
    assert _state(folder) == before


_KILLED_WRITER = textwrap.dedent(
    """
    import json, os, sqlite3, sys
    db, rows = sys.argv[1], json.loads(sys.stdin.read())
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_autocheckpoint = 0")
    for sql, args in rows:
        con.execute(sql, args)
    con.commit()
    os._exit(0)  # killed: no close, so no checkpoint; the commits stay in the -wal file
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["trackio", "mlflow"])
def test_a_divergence_held_only_in_the_write_ahead_log_fails(tmp_path, kind):
    folder = tmp_path / "trackers"
    db = _store(folder, kind, stop=CHECKPOINTED)
    rows = _rows(kind, CHECKPOINTED, STEPS, diverge=True)
    subprocess.run(
        [sys.executable, "-c", _KILLED_WRITER, str(db)], input=json.dumps(rows), text=True, check=True, timeout=60
    )
    wal = db.with_name(db.name + "-wal")
    assert wal.stat().st_size > 0
    # What the database file alone holds is healthy: the NaN steps are in the log only.
    alone = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    table_rows = alone.execute("SELECT count(*) FROM metrics").fetchone()[0]
    alone.close()
    assert table_rows == CHECKPOINTED * (1 if kind == "trackio" else 2)
    # As a checkout brings it: the store and its log, no shared-memory index.
    for shm in folder.glob("*-shm"):
        shm.unlink()
    before = _state(folder)
    code, doc = _doctor_json(tmp_path)
    assert code == 1 and _verdicts(doc) == ["FAIL"], doc
    assert any("write-ahead log" in n for r in doc["reports"] for n in r.get("notes", [])), doc["reports"][0]
    assert _state(folder) == before


@pytest.mark.parametrize("kind", ["trackio", "mlflow"])
def test_a_writer_holding_uncheckpointed_commits_is_read_with_them(tmp_path, kind):
    """A run still logging: its writer is open and its last commits are in the log."""
    folder = tmp_path / "trackers"
    db = _store(folder, kind, stop=CHECKPOINTED)
    writer = sqlite3.connect(db)
    try:
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        for sql, args in _rows(kind, CHECKPOINTED, STEPS, diverge=True):
            writer.execute(sql, args)
        writer.commit()
        before = _state(folder)
        con = _sqlite.connect(db)
        try:
            assert _sqlite.read_snapshot(con)
            assert con.execute("SELECT count(*) FROM metrics").fetchone()[0] == STEPS * (1 if kind == "trackio" else 2)
        finally:
            con.close()
        assert _state(folder) == before
    finally:
        writer.close()


def test_the_private_copy_is_deleted_when_the_connection_closes(tmp_path):
    db = _store(tmp_path, "mlflow", stop=CHECKPOINTED)
    writer = sqlite3.connect(db)
    try:
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        writer.execute("INSERT INTO metrics VALUES ('loss', 1.0, 0, 'r0', 999, 0)")
        writer.commit()
        con = _sqlite.connect(db)
        copy = Path(con.execute("PRAGMA database_list").fetchone()[2]).parent
        assert copy.is_dir() and copy != tmp_path
        con.close()
        assert not copy.exists()
    finally:
        writer.close()


@pytest.mark.parametrize("name", ["mlflow.db", "x.db", "project.db"])
def test_a_fifo_named_like_a_store_is_never_waited_on(tmp_path, name):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    if name == "project.db":
        (tmp_path / "project.lock").touch()
    results: list = []

    def sniff_all():
        results.append(_sqlite.is_sqlite(fifo))
        results.append(_sqlite.table_names(fifo))
        results.append(mlflow_db.sniff(fifo, "SQLite format 3"))
        results.append(trackio.sniff(fifo, ""))
        try:
            _sqlite.connect(fifo)
        except Exception as e:  # noqa: BLE001 - the error is what is checked
            results.append(type(e).__name__)

    t = threading.Thread(target=sniff_all, daemon=True)
    t.start()
    t.join(timeout=30)
    if t.is_alive():
        # Unblock the stuck open so the thread ends, then fail.
        with open(fifo, "wb"):
            pass
        pytest.fail("a sniffer opened the FIFO for a blocking read")
    assert results[:3] == [False, None, False]
    assert results[4] == "ReadError"


@pytest.mark.slow
def test_doctor_over_fifos_named_like_stores_ends(tmp_path):
    os.mkfifo(tmp_path / "mlflow.db")
    os.mkfifo(tmp_path / "x.db")
    (tmp_path / "train.jsonl").write_text(
        "".join(json.dumps({"step": i, "loss": _loss(i)}) + "\n" for i in range(STEPS))
    )
    proc = run_subprocess("doctor", str(tmp_path), "--json", "--jobs", "1", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _verdicts(json.loads(proc.stdout)) == ["PASS"]


_KILLED_MID_TRANSACTION = textwrap.dedent(
    """
    import os, sqlite3, sys
    con = sqlite3.connect(sys.argv[1], isolation_level=None)
    con.execute("PRAGMA cache_size = 1")  # pages spill into the database file mid-transaction
    con.execute("BEGIN")
    for i in range(3000):
        con.execute("INSERT INTO metrics VALUES ('loss', 1e30, 0, 'r0', 100000 + ?, 0)", (i,))
    os._exit(0)  # killed before COMMIT: a hot rollback journal is left beside the store
    """
)


def test_a_transaction_a_killed_writer_left_is_rolled_back_in_the_copy_only(tmp_path):
    folder = tmp_path / "trackers"
    folder.mkdir()
    db = folder / "mlflow.db"
    con = sqlite3.connect(db)
    con.executescript(_MLFLOW)
    for sql, args in _rows("mlflow", 0, STEPS, diverge=False):
        con.execute(sql, args)
    con.commit()
    con.close()
    subprocess.run([sys.executable, "-c", _KILLED_MID_TRANSACTION, str(db)], check=True, timeout=60)
    assert db.with_name("mlflow.db-journal").stat().st_size > 0
    before = _state(folder)
    con = _sqlite.connect(db)
    try:
        assert _sqlite.read_snapshot(con)
        # The committed rows only, as SQLite reads the store once it has rolled back.
        assert con.execute("SELECT count(*), max(step) FROM metrics").fetchone() == (2 * STEPS, STEPS)
    finally:
        con.close()
    assert _state(folder) == before
