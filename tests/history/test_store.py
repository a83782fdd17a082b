"""The SQLite history store: records kept whole and listed newest first, its schema
created once and migrated forward, and every way it can fail a clear one-line error."""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _postgres import new_database

from trainproof.history import store as store_mod
from trainproof.history.record import Curve, RunRecord
from trainproof.history.store import SCHEMA_VERSION, HistoryError, RunNotFound, open_store


def rec(run: str, t: float, verdict: str = "PASS", experiment: str = "exp", **summary) -> RunRecord:
    steps = np.arange(1.0, 51.0) * 10
    loss = np.linspace(2, 1, 50)
    loss[7] = np.nan
    return RunRecord(
        experiment=experiment,
        run=run,
        source=f"/runs/{run}/train.jsonl",
        verdict=verdict,
        findings=("TP-NAN",) if verdict == "FAIL" else (),
        summary={"steps": 500.0, "loss_last": 1.0, "lr_shape": "decay", "max_steps": None, **summary},
        curves={"loss": Curve(steps, loss), "lr": Curve(steps[:3], np.array([1e-3, 5e-4, 0.0]))},
        commit="a" * 40,
        recorded_at=t,
    )


def test_a_record_comes_back_whole_with_its_id(store_location):
    with open_store(store_location) as st:
        r = rec("seed0", 100.0)
        rid = st.add(r)
        got = st.get("seed0")
    assert got.id == rid and got == RunRecord(**{**vars(r), "id": rid})
    assert np.isnan(got.curves["loss"].values[7]) and dict(got.summary)["max_steps"] is None


def test_runs_are_listed_newest_first_and_filtered(store_location):
    with open_store(store_location) as st:
        for i, v in enumerate(["PASS", "FAIL", "WARN", "PASS"]):
            st.add(rec(f"r{i}", 10.0 * i, v))
        st.add(rec("other", 5.0, experiment="exp2"))
        assert [r.run for r in st.runs("exp")] == ["r3", "r2", "r1", "r0"]
        assert [r.run for r in st.runs("exp", healthy_only=True)] == ["r3", "r2", "r0"]
        assert [r.run for r in st.runs("exp", limit=2, healthy_only=True, before=30.0)] == ["r2", "r0"]
        assert st.experiments() == ["exp", "exp2"] and st.count() == 5 and st.count("exp2") == 1
        assert st.runs("nothing") == []


def test_get_finds_a_run_by_name_source_or_id_and_the_newest_of_a_name(store_location):
    with open_store(store_location) as st:
        st.add(rec("seed0", 1.0, summary_mark=1.0))
        second = st.add(rec("seed0", 2.0, summary_mark=2.0))
        assert st.get("seed0").summary["summary_mark"] == 2.0
        assert st.get("/runs/seed0/train.jsonl").id == second
        assert st.get("#1").summary["summary_mark"] == 1.0
        with pytest.raises(RunNotFound, match="no recorded run seed9"):
            st.get("seed9")
        with pytest.raises(RunNotFound, match="in experiment other"):
            st.get("seed0", experiment="other")


def test_the_store_is_in_wal_mode_with_its_schema_version(tmp_path):
    open_store(tmp_path / "h.db").close()
    con = sqlite3.connect(tmp_path / "h.db")
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("SELECT version FROM trainproof_schema").fetchall() == [(SCHEMA_VERSION,)]


def test_an_older_schema_is_migrated_forward_and_a_newer_one_refused(store_location, monkeypatch):
    path = store_location
    with open_store(path) as st:
        st.add(rec("seed0", 1.0))
    step = ("CREATE INDEX trainproof_runs_verdict ON trainproof_runs (verdict)",)
    monkeypatch.setattr(store_mod, "MIGRATIONS", (*store_mod.MIGRATIONS, step))
    monkeypatch.setattr(store_mod, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with pytest.raises(HistoryError, match="older than"):
        open_store(path, create=False)
    with open_store(path) as st:
        assert st.schema_version() == SCHEMA_VERSION + 1 and st.get("seed0").run == "seed0"
    monkeypatch.undo()
    with pytest.raises(HistoryError, match=f"schema version {SCHEMA_VERSION + 1} was written by a newer trainproof"):
        open_store(path)


def test_concurrent_first_writers_create_the_schema_once(store_location):
    # Eight threads, each with its own connection, open a store that does not exist yet
    # and record one run each: the schema is made once, no record is lost.
    import threading

    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def write(i: int) -> None:
        try:
            start.wait()
            with open_store(store_location) as st:
                st.add(rec(f"r{i}", float(i)))
        except BaseException as e:  # noqa: BLE001 - reported by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    with open_store(store_location, create=False) as st:
        assert st.count() == 8 and st.schema_version() == SCHEMA_VERSION


def test_a_missing_store_is_an_error_without_create_and_nothing_is_written(tmp_path):
    with pytest.raises(HistoryError, match="no such file"):
        open_store(tmp_path / "h.db", create=False)
    assert not (tmp_path / "h.db").exists()
    with pytest.raises(HistoryError, match="does not exist"):
        open_store(tmp_path / "no" / "h.db")
    with pytest.raises(HistoryError, match="is a folder"):
        open_store(tmp_path)


def test_a_corrupt_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "h.db"
    bad.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(HistoryError, match=r"h\.db: not a trainproof history, or corrupt") as e:
        open_store(bad)
    assert "\n" not in str(e.value)


def test_another_sqlite_database_is_refused_not_written_into(tmp_path):
    other = tmp_path / "mlflow.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE experiments (id INTEGER)")
    con.commit()
    con.close()
    with pytest.raises(HistoryError, match="not a trainproof history .it holds experiments"):
        open_store(other)
    assert [r[0] for r in sqlite3.connect(other).execute("SELECT name FROM sqlite_master")] == ["experiments"]


@pytest.mark.slow
def test_a_store_locked_past_the_busy_timeout_is_a_clear_error(tmp_path):
    path = tmp_path / "h.db"
    st = open_store(path, timeout=0.2)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the write lock
    try:
        with pytest.raises(HistoryError, match=r"locked by another process \(waited 0.2 s"):
            st.add(rec("seed0", 1.0))
    finally:
        holder.execute("ROLLBACK")
    st.add(rec("seed0", 1.0))  # the lock released, the same store writes
    assert st.count() == 1
    st.close()


def test_a_closed_store_says_so(tmp_path):
    st = open_store(tmp_path / "h.db")
    st.close()
    st.close()
    with pytest.raises(HistoryError, match="closed"):
        st.runs("exp")


def _unprivileged() -> list[str]:
    """The command prefix that runs a child without root's power to write any file (a
    root child drops CAP_DAC_OVERRIDE; another user's child needs nothing), or skips."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root and setpriv (util-linux) is absent: a read-only file cannot be made so for root")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]


@pytest.mark.slow
def test_a_read_only_store_is_read_and_refuses_a_write_with_a_clear_error(tmp_path):
    path = tmp_path / "h.db"
    with open_store(path) as st:
        st.add(rec("seed0", 1.0))
    path.chmod(0o444)
    child = textwrap.dedent(f"""
        from trainproof.history.store import open_store, HistoryError
        from trainproof.history.record import RunRecord
        st = open_store({str(path)!r}, create=False)
        print([r.run for r in st.runs("exp")])
        try:
            st.add(RunRecord("exp", "seed1", "/x", "PASS", (), {{}}, {{}}))
        except HistoryError as e:
            print(e)
    """)
    out = subprocess.run(
        [*_unprivileged(), sys.executable, "-c", child], capture_output=True, text=True, timeout=120, check=True
    ).stdout.splitlines()
    assert out == ["['seed0']", f"history {path}: read-only (no permission to write the file or its folder)"]


@pytest.mark.slow
def test_a_store_in_a_folder_that_cannot_be_written_is_read(tmp_path):
    """A store on a read-only mount, or in a folder the user cannot write: a WAL store
    cannot be opened the usual way there (its -shm would be created beside it), so a
    command that only reads opens it read-only; a write is still the clear error."""
    folder = tmp_path / "shared"
    folder.mkdir()
    path = folder / "h.db"
    with open_store(path) as st:
        st.add(rec("seed0", 1.0))
        st.add(rec("seed1", 2.0))
    for extra in ("-wal", "-shm"):
        (folder / f"h.db{extra}").unlink(missing_ok=True)
    path.chmod(0o444)
    folder.chmod(0o555)
    child = textwrap.dedent(f"""
        from trainproof.history.store import open_store, HistoryError
        from trainproof.history.record import RunRecord
        st = open_store({str(path)!r}, create=False)
        print([r.run for r in st.runs("exp")])
        try:
            st.add(RunRecord("exp", "seed2", "/x", "PASS", (), {{}}, {{}}))
        except HistoryError as e:
            print("refused:", e)
    """)
    try:
        out = subprocess.run(
            [*_unprivileged(), sys.executable, "-c", child], capture_output=True, text=True, timeout=120, check=True
        ).stdout.splitlines()
    finally:
        folder.chmod(0o755)
    assert out[0] == "['seed1', 'seed0']"
    assert out[1].startswith(f"refused: history {path}: read-only"), out


def test_an_unreachable_postgresql_server_is_a_clear_error():
    pytest.importorskip("psycopg", reason="the psycopg driver (the postgres extra) is not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once the socket closes
    with pytest.raises(HistoryError, match=rf"history postgresql://u:\*\*\*@127.0.0.1:{port}/x: cannot connect"):
        open_store(f"postgresql://u:secret@127.0.0.1:{port}/x")


@pytest.mark.slow
def test_a_postgresql_store_locked_past_the_timeout_is_a_clear_error(pg):
    import psycopg

    url = new_database(pg)
    open_store(url).close()
    with psycopg.connect(url) as holder:
        holder.execute("LOCK TABLE trainproof_runs IN EXCLUSIVE MODE")  # held until the block ends
        with open_store(url, timeout=0.2) as st, pytest.raises(HistoryError, match="locked by another client"):
            st.add(rec("seed0", 1.0))
    with open_store(url) as st:
        st.add(rec("seed0", 1.0))
        assert st.count() == 1


@pytest.mark.slow
def test_a_postgresql_role_that_may_only_read_gets_a_read_only_error(pg):
    import psycopg

    url = new_database(pg)
    with open_store(url) as st:
        st.add(rec("seed0", 1.0))
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("CREATE ROLE reader LOGIN")
        admin.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader")
    reader = url.replace("trainproof@", "reader@")
    with open_store(reader, create=False) as st:
        assert [r.run for r in st.runs("exp")] == ["seed0"]
        with pytest.raises(HistoryError, match="read-only .permission denied"):
            st.add(rec("seed1", 2.0))


def test_references_are_one_per_run_without_the_run_itself_nor_what_came_after(store_location):
    """A run judged many times is one past run (its newest record), the run being judged is
    not its own past however often it was recorded, a run flagged behind its past is no
    reference, and ``before`` leaves out what the same command recorded."""
    from trainproof.history.recording import references

    with open_store(store_location) as st:
        for i, name in enumerate(("b", "c", "d")):
            st.add(rec(name, 10.0 + i))
        for k in range(13):  # the run being judged, recorded again and again
            st.add(rec("a", 20.0 + k))
        for k in range(3):  # one other run recorded three times
            st.add(rec("d", 40.0 + k))
        behind = rec("e", 50.0)
        st.add(RunRecord(**{**behind.__dict__, "verdict": "WARN", "findings": ("TP-BEHIND-HISTORY",)}))
        st.add(rec("f", 60.0))  # recorded by the same command, after it started
        got = references(st, "exp", 10, exclude=("/runs/a/train.jsonl", "a"), before=55.0)
        assert [r.run for r in got] == ["d", "c", "b"]
        assert got[0].recorded_at == 42.0  # the newest record of d
        assert [r.run for r in references(st, "exp", 2)] == ["f", "d"]
