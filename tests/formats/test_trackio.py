"""The Trackio reader (``formats/trackio.py``) on databases the real ``trackio`` package
writes in local mode: one report per run, under Trackio's run names, with the verdicts
the same metrics get as JSONL; a locked or corrupt database is exit 2 with one line.

The client runs in a subprocess whose ``HOME``, ``HF_HOME`` and ``TRACKIO_DIR`` lie in a
temporary folder (Trackio reads its folder when imported), with the Hub offline, every
Trackio remote setting removed from the environment, no dashboard, no hardware sampling,
and sockets refused: the script records any connection attempt and the test asserts none.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from trainproof.api import judge_all, read_runlogs
from trainproof.cli import cli
from trainproof.formats import ReadState, _sqlite, detect
from trainproof.formats import trackio as reader
from trainproof.runlog import Record, RunStart

import _fuzz_logs as F

PROJECT = "i20.proj"  # Trackio keeps [A-Za-z0-9_-] of it: i20proj.db
DB_NAME = "i20proj.db"
RUNS = ("healthy", "nan-run", "diverged")
STEPS = 300

_WRITER = textwrap.dedent(
    """
    import json, socket, sys

    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(repr(args[:2]))
        raise OSError("network refused by the test")

    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse
    socket.create_connection = refuse

    import trackio

    spec = json.load(open(sys.argv[1]))
    for name, rows in spec["runs"].items():
        trackio.init(
            project=spec["project"], name=name, config={"lr": 3e-4, "optim": {"name": "adamw"}},
            embed=False, auto_log_gpu=False, auto_log_cpu=False,
        )
        for r in rows:
            trackio.log(
                {"train": {"loss": r["loss"], "learning_rate": r["learning_rate"]},
                 "note": "text is not a metric", "flag": True},
                step=r["step"],
            )
        trackio.finish()
    json.dump(attempts, open(sys.argv[2], "w"))
    """
)


def _curve(kind: str) -> list[float]:
    """A loss from ~2.3 with mild noise; NaN from 60 % of the run, or growing by orders of
    magnitude from half of it."""
    out, x = [], 12345
    for i in range(STEPS):
        x = (x * 1103515245 + 12345) % (1 << 31)
        v = 0.6 + 1.7 * math.exp(-i / 60) + (x / (1 << 31) - 0.5) * 0.04
        if kind == "nan-run" and i >= 0.6 * STEPS:
            v = math.nan
        if kind == "diverged" and i >= STEPS // 2:
            v *= 1.08 ** (i - STEPS // 2)
        out.append(v)
    return out


def _rows(kind: str) -> list[dict]:
    return [{"step": 10 * (i + 1), "loss": v, "learning_rate": 3e-4} for i, v in enumerate(_curve(kind))]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """``(the project database, {run: its metrics as a JSONL file}, connection attempts)``,
    written once for the module by the real client."""
    pytest.importorskip("trackio")
    root = tmp_path_factory.mktemp("trackio")
    spec = root / "spec.json"
    spec.write_text(json.dumps({"project": PROJECT, "runs": {k: _rows(k) for k in RUNS}}))
    (root / "writer.py").write_text(_WRITER)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACKIO_", "HF_", "HUGGING"))}
    env.update(
        HOME=str(root / "home"),
        HF_HOME=str(root / "hf"),
        XDG_CACHE_HOME=str(root / "cache"),
        TRACKIO_DIR=str(root / "trackio"),
        HF_HUB_OFFLINE="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        GRADIO_ANALYTICS_ENABLED="False",
    )
    attempts = root / "attempts.json"
    proc = subprocess.run(
        [sys.executable, str(root / "writer.py"), str(spec), str(attempts)],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    jsonl = {}
    for k in RUNS:
        jsonl[k] = root / f"{k}.jsonl"
        jsonl[k].write_text("".join(json.dumps(r) + "\n" for r in _rows(k)))
    return root / "trackio" / DB_NAME, jsonl, json.loads(attempts.read_text())


def _fails(rep) -> set[str]:
    return {f.id for f in rep.findings if f.level == "FAIL"}


@pytest.mark.slow
def test_the_client_writes_where_the_reader_looks_and_stays_offline(written):
    db, _, attempts = written
    assert attempts == []
    assert db.is_file() and db.with_suffix(".lock").is_file()
    assert detect(db).name == "trackio"


@pytest.mark.slow
def test_one_report_per_run_with_the_verdicts_of_the_same_metrics_as_jsonl(written):
    db, jsonl, _ = written
    reports = judge_all(db)
    by_run = {r.meta["run"]: r for r in reports}
    assert sorted(by_run) == sorted(RUNS)
    assert {r.meta["experiment"] for r in reports} == {"i20proj"}
    for name in RUNS:
        want = judge_all(jsonl[name])
        assert len(want) == 1
        got = by_run[name]
        assert (got.verdict, _fails(got)) == (want[0].verdict, _fails(want[0])), name
    assert by_run["nan-run"].verdict == "FAIL" and "TP-NAN" in _fails(by_run["nan-run"])
    assert by_run["diverged"].verdict == "FAIL"
    assert by_run["healthy"].verdict != "FAIL"


@pytest.mark.slow
def test_the_stream_holds_each_run_as_trackio_logged_it(written):
    db, _, _ = written
    state = ReadState()
    items = list(reader.read(db, state))
    starts = [i for i, x in enumerate(items) if isinstance(x, RunStart)]
    # In the order the runs were created, each with Trackio's id and a UTC start time.
    assert [items[i].meta["run"] for i in starts] == list(RUNS)
    con = sqlite3.connect(db)
    ids = dict(con.execute("SELECT run_name, run_id FROM configs"))
    con.close()
    for i in starts:
        meta = items[i].meta
        assert meta["run_id"] == ids[meta["run"]]
        assert meta["experiment"] == "i20proj"
        assert meta["started"].endswith("Z") and meta["started"][:2] == "20"
    nan_recs = items[starts[1] + 1 : starts[2]]
    assert all(type(r) is Record for r in nan_recs)
    assert [r.step for r in nan_recs] == [float(10 * (i + 1)) for i in range(STEPS)]
    # Nested keys flattened; the string and the boolean are not metrics; NaN is a value.
    assert set(nan_recs[0].values) == {"train/loss", "train/learning_rate"}
    losses = [r.values["train/loss"] for r in nan_recs]
    assert losses[:10] == pytest.approx(_curve("nan-run")[:10])
    assert sum(math.isnan(v) for v in losses) == STEPS - int(0.6 * STEPS)
    lines = [r.line for r in nan_recs]
    assert lines == sorted(lines) and len(set(lines)) == STEPS
    assert state.drops == []


@pytest.mark.slow
def test_a_locked_database_is_one_line_and_exit_2(written, tmp_path, monkeypatch):
    """A writer holding an exclusive lock (Trackio on Spaces, or with
    ``TRACKIO_SQLITE_JOURNAL_MODE=delete``, keeps a rollback journal)."""
    db = tmp_path / "trackio" / "locked.db"
    db.parent.mkdir()
    shutil.copy(written[0], db)
    con = sqlite3.connect(db, isolation_level=None)
    assert con.execute("PRAGMA journal_mode = DELETE").fetchone()[0] == "delete"
    con.execute("BEGIN EXCLUSIVE")
    monkeypatch.setattr(_sqlite, "LOCK_TIMEOUT_S", 0.3)
    try:
        res = CliRunner().invoke(cli, ["judge", str(db)])
    finally:
        con.rollback()
        con.close()
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    errs = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(errs) == 1 and "locked" in errs[0], res.stderr


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_a_corrupt_database_is_one_line_and_exit_2(written, tmp_path, damage):
    db = tmp_path / "trackio" / DB_NAME
    db.parent.mkdir()
    data = written[0].read_bytes()
    db.write_bytes(data[: len(data) // 3] if damage == "truncated" else bytes(range(256)) * 40)
    proc = subprocess.run(
        [sys.executable, "-m", "trainproof", "judge", str(db)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    errs = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(errs) == 1 and "corrupt SQLite database" in errs[0], proc.stderr


# --------------------------------------------------------------------------- without the client


def _db(path: Path, script: str, rows: list[tuple] = ()) -> Path:
    con = sqlite3.connect(path)
    con.executescript(script)
    for sql, args in rows:
        con.execute(sql, args)
    con.commit()
    con.close()
    return path


_MLFLOW = (
    "CREATE TABLE experiments (experiment_id INTEGER PRIMARY KEY, name TEXT);"
    "CREATE TABLE runs (run_uuid TEXT PRIMARY KEY, name TEXT, experiment_id INTEGER);"
    "CREATE TABLE metrics (key TEXT, value FLOAT, timestamp BIGINT, run_uuid TEXT, step BIGINT, is_nan BOOLEAN);"
)


def test_only_trackio_databases_are_claimed(tmp_path):
    trk = tmp_path / "project.db"
    trk.write_bytes(F.trackio_db("healthy"))
    assert detect(trk).name == "trackio"
    mlflow = _db(tmp_path / "mlflow.db", _MLFLOW)
    other = _db(tmp_path / "app.db", "CREATE TABLE users (id INTEGER, name TEXT);")
    junk = tmp_path / "notes.db"
    junk.write_bytes(b"not a database at all\n" * 20)
    for p in (mlflow, other, junk):
        assert not reader.sniff(p, p.read_bytes()[:4096].decode("latin-1")), p.name
    # The same junk where only Trackio keeps databases is a damaged Trackio database.
    (tmp_path / "notes.lock").touch()
    assert reader.sniff(junk, "")


def test_an_old_database_without_run_ids_reads_runs_by_name(tmp_path):
    rows = [
        (
            "INSERT INTO metrics (timestamp, run_name, step, metrics) VALUES (?, ?, ?, ?)",
            (f"2024-05-01T10:00:0{i}", n, i, m),
        )
        for i, (n, m) in enumerate(
            [("b", '{"loss": 2.0}'), ("a", '{"loss": "NaN", "x": {"y": "Infinity"}}'), ("b", '{"loss": null}')]
        )
    ]
    db = _db(
        tmp_path / "old.db",
        "CREATE TABLE metrics (id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp TEXT NOT NULL, "
        "run_name TEXT NOT NULL, step INTEGER NOT NULL, metrics TEXT NOT NULL);",
        rows,
    )
    items = list(reader.read(db, ReadState()))
    assert items[0] == RunStart({"run": "b", "run_id": "b", "experiment": "old", "started": "2024-05-01T10:00:00Z"})
    assert items[1] == Record(0.0, {"loss": 2.0}, 1)
    assert items[2] == Record(2.0, {}, 3, ("loss",))
    assert items[3].meta["run"] == "a"
    rec = items[4]
    assert math.isnan(rec.values["loss"]) and rec.values["x/y"] == math.inf
    runs = read_runlogs(db)
    assert [r.meta["run"] for r in runs] == ["b", "a"]


def test_media_objects_and_bad_rows_are_left_out_and_said(tmp_path):
    sql = "INSERT INTO metrics (run_id, timestamp, run_name, step, metrics) VALUES (?, ?, ?, ?, ?)"
    db = tmp_path / "p.db"
    db.write_bytes(F.trackio_db("healthy"))
    _db(
        db,
        "",
        [
            (
                sql,
                (
                    "r1",
                    "2024-01-02T00:00:00+00:00",
                    "media",
                    1,
                    '{"img": {"_type": "trackio.image", "width": 3}, "v": 1}',
                ),
            ),
            (sql, ("r1", "2024-01-02T00:00:00+00:00", "media", 2, "{not json")),
            (sql, ("r1", "2024-01-02T00:00:00+00:00", "media", 3, "[1, 2]")),
        ],
    )
    state = ReadState()
    items = list(reader.read(db, state))
    start = next(i for i, x in enumerate(items) if isinstance(x, RunStart) and x.meta["run"] == "media")
    assert items[start + 1 :] == [Record(1.0, {"v": 1.0}, items[start + 1].line)]
    assert len(state.drops) == 1 and "2 metrics row(s)" in state.drops[0]


def test_an_empty_project_database_is_not_a_run(tmp_path):
    db = tmp_path / "empty.db"
    con = sqlite3.connect(db)
    con.executescript(
        "CREATE TABLE metrics (id INTEGER PRIMARY KEY, run_id TEXT, timestamp TEXT, run_name TEXT, step INTEGER, metrics TEXT);"
    )
    con.close()
    assert detect(db).name == "trackio"
    res = CliRunner().invoke(cli, ["judge", str(db)])
    assert res.exit_code == 2 and "no logged metrics" in res.stderr
    assert res.stderr.count("empty.db") == 1  # the name once, in front
    from trainproof.api import doctor

    reports, ignored = doctor(tmp_path)  # doctor lists it as not a run
    assert reports == [] and [i["file"] for i in ignored] == [str(db)]


@pytest.mark.slow
def test_damaged_databases_keep_the_cli_contract(tmp_path):
    """Truncated, flipped, NUL-filled and spliced databases, and rows whose values are
    odd tokens, through ``epoch --json``: exit 0/1/2, no traceback, a read error is 2."""
    import random

    ops = (F._truncate, F._flip, F._nul, F._insert, F._splice)
    seen = set()
    for kind in F.KINDS:
        base = F.valid("trackio", kind)
        for seed in range(12):
            op = ops[seed % len(ops)]
            blob = op(base, random.Random(seed))
            out = F.run_epoch(F.write_input(tmp_path / "bytes", "trackio", blob), "trackio", cli_run=seed % 4 == 0)
            seen.add(out.code)
        for j, tok in enumerate(F.TOKENS[:20]):
            p = F.write_input(tmp_path / "tokens", "trackio", base)
            con = sqlite3.connect(p)
            con.execute(
                "UPDATE metrics SET metrics = ? WHERE id = ?",
                (b'{"train/loss": ' + tok + b"}", 5 + j % 10),
            )
            con.commit()
            con.close()
            seen.add(F.run_epoch(p, "trackio", cli_run=j % 5 == 0).code)
    assert 2 in seen and seen & {0, 1}
