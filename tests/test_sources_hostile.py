"""One hostile source never hides the other runs, and every source's work is bounded
(issue 32, sections 2, 3 and 6).

Each test runs ``doctor`` over a tree that holds one hostile source beside a diverging
``fail.jsonl`` and a healthy log: the hostile source is an error for its own run (or is
read as far as it can be), the other runs are judged, and the FAIL still decides the exit
code (1). The MLflow server's answers come from a tiny ``http.server`` on 127.0.0.1.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from pathlib import Path

import pytest
from _mlflow_server import RUN, T0, Fake, mlflow_api

from trainproof import mlflow_server
from trainproof.aliases import MappingError
from trainproof.formats import ReadError, Unreadable, _sqlite, reading

import _fuzz_logs as F
from conftest import run_cli

#: Deeper than any JSON parser of the interpreter follows (the issue's 100,000 levels).
DEEP = "[" * 100_000 + "]" * 100_000


def _tree(root: Path) -> Path:
    """A diverging run and a healthy one; the hostile source goes beside them."""
    (root / "fail").mkdir(parents=True)
    (root / "fail" / "fail.jsonl").write_bytes(F.jsonl_log("diverge"))
    (root / "ok").mkdir()
    (root / "ok" / "metrics.jsonl").write_bytes(F.jsonl_log("healthy"))
    return root


def _by_file(doc: dict) -> dict[str, dict]:
    return {Path(r["file"]).relative_to(Path(r["file"]).parents[1]).as_posix(): r for r in doc["reports"]}


def _doctor(*roots) -> tuple[int, dict, str]:
    code, out, err, doc = run_cli("doctor", *map(str, roots), "--json")
    assert doc is not None, err
    assert "internal error" not in err and "Traceback" not in out + err
    return code, doc, err


def _the_others_are_judged(code: int, doc: dict) -> None:
    by = {Path(r["file"]).name: r for r in doc["reports"]}
    assert by["fail.jsonl"]["verdict"] == "FAIL"
    assert by["metrics.jsonl"]["verdict"] == "PASS"
    assert code == 1


# --------------------------------------------------------------------------- hostile files


def _wandb_summary_nesting(root: Path) -> str:
    run = root / "wandb" / "run-20240101_000000-abc123"
    (run / "files").mkdir(parents=True)
    rows = (json.dumps({"_step": i, "loss": 2.0 / (1 + i / 30)}) for i in range(100))
    (run / "files" / "wandb-history.jsonl").write_text("".join(r + "\n" for r in rows))
    (run / "files" / "wandb-summary.json").write_text('{"loss": ' + DEEP + "}")
    return "run-20240101_000000-abc123"


def _trackio_db(root: Path) -> Path:
    p = root / "trackio" / "proj.db"
    p.parent.mkdir()
    p.write_bytes(F.trackio_db("healthy"))
    return p


def _trackio_metrics_nesting(root: Path) -> str:
    con = sqlite3.connect(_trackio_db(root))
    con.execute("UPDATE metrics SET metrics = ? WHERE id = 3", ('{"train/loss": ' + DEEP + "}",))
    con.commit()
    con.close()
    return "proj.db"


def _trackio_text_id(root: Path) -> str:
    con = sqlite3.connect(_trackio_db(root))
    # A column without a type takes what it is given: text in the id column.
    con.executescript(
        "CREATE TABLE m2 AS SELECT * FROM metrics; DROP TABLE metrics; "
        "CREATE TABLE metrics (id, run_id, timestamp, run_name, step, metrics, log_id, space_id); "
        "INSERT INTO metrics SELECT * FROM m2; DROP TABLE m2; UPDATE metrics SET id = 'abc' WHERE rowid = 5;"
    )
    con.commit()
    con.close()
    return "proj.db"


def _mlflow_rowid_column(root: Path) -> str:
    p = root / "ml" / "mlflow.db"
    p.parent.mkdir()
    p.write_bytes(F.mlflow_db_log("healthy"))
    con = sqlite3.connect(p)
    con.executescript("ALTER TABLE metrics ADD COLUMN rowid TEXT; UPDATE metrics SET rowid = 'x';")
    con.commit()
    con.close()
    return "mlflow.db"


HOSTILE_FILES = {
    "wandb_summary_nesting": _wandb_summary_nesting,
    "trackio_metrics_nesting": _trackio_metrics_nesting,
    "trackio_text_id": _trackio_text_id,
    "mlflow_rowid_column": _mlflow_rowid_column,
}


@pytest.mark.parametrize("case", sorted(HOSTILE_FILES))
def test_a_hostile_file_never_hides_the_other_runs(tmp_path, case):
    name = HOSTILE_FILES[case](_tree(tmp_path))
    code, doc, _ = _doctor(tmp_path)
    _the_others_are_judged(code, doc)
    (hostile,) = [r for r in doc["reports"] if Path(r["file"]).name == name]
    # Each is read as far as it goes: the summary is left out, the bad row dropped, the
    # row id read under a name the column does not shadow.
    assert hostile["verdict"] in ("PASS", "WARN"), hostile.get("error")
    if case.startswith("trackio"):
        assert any(
            f["id"] == "TP-DATA-DROPPED" and "skipped 1 metrics row" in f["evidence"] for f in hostile["findings"]
        )


def test_mlflow_db_lines_are_the_row_ids_when_a_column_takes_the_name(tmp_path):
    from trainproof.api import read_runlog

    name = _mlflow_rowid_column(tmp_path)
    run = read_runlog(tmp_path / "ml" / name)
    loss = run.get("loss")
    # Rows were inserted loss, learning_rate, loss, …: the loss is at the odd row ids.
    assert loss.lines[:3].tolist() == [1, 3, 5]


def test_a_new_source_gets_the_guard_for_free(tmp_path, monkeypatch):
    """A reader that raises something other than ReadError on its input (a new source
    whose author did not foresee it) is a read error for its own run only."""
    import types

    from trainproof import formats

    def read(path, state):
        yield from ()
        raise OverflowError("int too large to convert to float")

    toy = types.SimpleNamespace(
        name="toy",
        description="toy log",
        file_names=(),
        suffixes=(".toy",),
        run_suffixes=(".toy",),
        tail_mode="whole",
        preference=7,
        sniff=lambda path, head: head.startswith("TOYLOG"),
        read=read,
    )
    monkeypatch.setattr(formats, "READERS", (*formats._readers(), toy))
    _tree(tmp_path)
    (tmp_path / "run.toy").write_text("TOYLOG\nTOY 1 2.0\n")
    code, doc, _ = _doctor(tmp_path)
    _the_others_are_judged(code, doc)
    (toy_rep,) = [r for r in doc["reports"] if r["file"].endswith("run.toy")]
    assert toy_rep["verdict"] == "NOT-CHECKED"
    assert "its reader stopped on OverflowError (int too large to convert to float)" in toy_rep["error"]


def test_reading_turns_what_a_reader_raises_into_a_read_error():
    with pytest.raises(Unreadable, match=r"stopped on RecursionError"):
        with reading():
            raise RecursionError("maximum recursion depth exceeded")
    with pytest.raises(Unreadable) as e:
        with reading():
            raise ValueError("x" * 10_000)
    assert len(str(e.value)) < 250 and isinstance(e.value, ReadError)
    for passes in (ReadError("not a log"), MappingError("no such column"), KeyboardInterrupt()):
        with pytest.raises(type(passes)):
            with reading():
                raise passes


# --------------------------------------------------------------------------- a hostile server


def _two_runs(bad_answer):
    """An API of two runs of one experiment: ``good`` (healthy, 60 points) and ``bad``,
    whose answers ``bad_answer(path, query)`` gives (``None``: as the good run's)."""
    good = json.loads(json.dumps(RUN))
    good["info"].update(run_id="good1", run_name="good")
    bad = json.loads(json.dumps(RUN))
    bad["info"].update(run_id="bad1", run_name="bad")

    def api(fake, path, query, body):
        ok = lambda doc: (200, "application/json", doc if isinstance(doc, bytes) else json.dumps(doc).encode())  # noqa: E731
        if path.endswith("/runs/search"):
            return ok({"runs": [good, bad]})
        run_id = (query.get("run_id") or [None])[0]
        if run_id == "bad1":
            answer = bad_answer(path, query)
            if answer is not None:
                return ok(answer)
        if path.endswith("/runs/get"):
            return ok({"run": good if run_id == "good1" else bad})
        if path.endswith("/metrics/get-history"):
            start = int(query.get("page_token", ["0"])[0])
            pts = [
                {"key": "loss", "value": 2.0 / (s + 1) + 0.3, "timestamp": T0 + s, "step": s}
                for s in range(start, min(start + 30, 60))
            ]
            return ok({"metrics": pts, **({"next_page_token": str(start + 30)} if start + 30 < 60 else {})})
        return mlflow_api(fake, path, query, body)

    return api


def _history(points: list[dict]):
    def answer(path, query):
        if path.endswith("/metrics/get-history"):
            return {"metrics": points}
        return None

    return answer


def _steps(n: int = 60) -> list[dict]:
    return [{"key": "loss", "value": 2.0 / (s + 1) + 0.3, "timestamp": T0 + s, "step": s} for s in range(n)]


def _run_get(patch):
    def answer(path, query):
        if path.endswith("/runs/get"):
            run = json.loads(json.dumps(RUN))
            run["info"].update(run_id="bad1", run_name="bad")
            patch(run)
            return {"run": run}
        return None

    return answer


HOSTILE_ANSWERS = {
    # RecursionError in the JSON decoder: the run is not read.
    "nested_json": (lambda path, query: ('{"run": ' + DEEP + "}").encode() if "runs/get" in path else None, "error"),
    # A step too large for a float (OverflowError): not an int64, the run is not read.
    "step_overflow": (_history([*_steps(30), {"key": "loss", "value": 1.0, "step": 10**400}]), "error"),
    # A value too large for a float: the infinity it rounds to, the run judged on it.
    "value_overflow": (
        lambda path, query: (
            (
                '{"metrics": [' + ", ".join(json.dumps(p) for p in _steps(59)) + ', {"key": "loss", '
                '"value": 1' + "0" * 400 + ', "step": 59}]}'
            ).encode()
            if "get-history" in path
            else None
        ),
        "judged",
    ),
    # A 5,000-digit integer string (int() refuses it: ValueError): not an int64.
    "step_digits": (_history([*_steps(30), {"key": "loss", "value": 1.0, "step": "9" * 5000}]), "error"),
    # A 5,000-digit JSON number as a value: read as the infinity it rounds to.
    "value_digits": (
        lambda path, query: (
            (
                '{"metrics": [' + ", ".join(json.dumps(p) for p in _steps(59)) + ', {"key": "loss", '
                '"value": ' + "9" * 5000 + ', "step": 59}]}'
            ).encode()
            if "get-history" in path
            else None
        ),
        "judged",
    ),
    # A start time past the calendar's years: no start time, the run judged.
    "start_time": (_run_get(lambda run: run["info"].update(start_time=10**30)), "judged"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_ANSWERS))
def test_a_hostile_server_answer_never_hides_the_other_runs(clean_env, tmp_path, case):  # noqa: F811
    answer, outcome = HOSTILE_ANSWERS[case]
    _tree(tmp_path)
    with Fake(_two_runs(answer)) as fake:
        code, doc, _ = _doctor(tmp_path, fake.url)
    _the_others_are_judged(code, doc)
    runs = {r["meta"].get("run"): r for r in doc["reports"] if r["file"].startswith(fake.url)}
    assert runs["good"]["verdict"] == "PASS"
    bad = [r for r in doc["reports"] if r["file"].endswith("/runs/bad1")]
    assert len(bad) == 1
    if outcome == "error":
        assert bad[0]["verdict"] == "NOT-CHECKED" and bad[0]["error"]
    else:
        assert bad[0]["verdict"] != "NOT-CHECKED", bad[0].get("error")
    if case == "start_time":
        assert "started" not in bad[0]["meta"]


def test_history_paging_that_never_ends_is_an_error_for_that_run(clean_env, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setattr(mlflow_server, "MAX_HISTORY_PAGES", 20)
    pages = []

    def endless(path, query):
        if path.endswith("/metrics/get-history"):
            pages.append(1)
            n = len(pages)
            return {"metrics": [{"key": "loss", "value": 1.0, "step": n}], "next_page_token": f"t{n}"}
        return None

    _tree(tmp_path)
    with Fake(_two_runs(endless)) as fake:
        code, doc, _ = _doctor(tmp_path, fake.url)
    _the_others_are_judged(code, doc)
    (bad,) = [r for r in doc["reports"] if r["file"].endswith("/runs/bad1")]
    assert bad["verdict"] == "NOT-CHECKED" and "more than 20 pages: the paging does not end" in bad["error"]
    assert len(pages) == 20


def test_history_is_read_up_to_the_points_of_a_run(clean_env, monkeypatch):  # noqa: F811
    monkeypatch.setattr(mlflow_server, "MAX_POINTS_PER_METRIC", 25)
    asked = []

    def api(fake, path, query, body):
        if path.endswith("/metrics/get-history"):
            asked.append(int(query["max_results"][0]))
        return mlflow_api(fake, path, query, body)

    with Fake(api) as fake:
        code, out, err, doc = run_cli("judge", f"{fake.url}/#/experiments/7/runs/abc123", "--json")
    (rep,) = doc["reports"]
    assert rep["records"] == 25
    (drop,) = [f for f in rep["findings"] if f["id"] == "TP-DATA-DROPPED"]
    assert "metrics/loss: only the first 25 points were read" in drop["evidence"]
    # The NaN from step 40 on is past what was read: the verdict rests on the first points.
    assert not any(f["id"] == "TP-NAN" for f in rep["findings"])
    assert asked and all(n <= 25 for n in asked) and len(asked) == 3  # pages of 10: 10, 20, then the cut


def test_the_bytes_read_from_a_server_are_bounded(clean_env, monkeypatch):  # noqa: F811
    monkeypatch.setattr(mlflow_server, "MAX_BYTES_PER_SERVER", 4000)
    with Fake(mlflow_api) as fake:
        code, out, err, doc = run_cli("doctor", fake.url, "--json")
    assert code == 2 and "internal error" not in err
    text = json.dumps(doc) + err
    assert "GiB read from the server: it is not read further" in text or "not read further" in text


# --------------------------------------------------------------------------- SQLite CPU bombs


def _balanced(leaf: str, n: int) -> str:
    """An expression adding ``leaf`` ``n`` times, nested ``log2(n)`` deep (SQLite refuses
    expressions nested over 1,000 deep, not long ones)."""
    if n == 1:
        return leaf
    return f"({_balanced(leaf, n // 2)}+{_balanced(leaf, n - n // 2)})"


def mlflow_cpu_bomb(path: Path, rows: int = 6000, leaves: int = 4096) -> Path:
    """An ``mlflow.db`` whose metric values are a generated column costing ~8,000 VM steps
    a row: 48 M steps for a 200 KB file."""
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE experiments (experiment_id INTEGER PRIMARY KEY, name TEXT, lifecycle_stage TEXT)")
    con.execute(
        "CREATE TABLE runs (run_uuid TEXT PRIMARY KEY, name TEXT, start_time INTEGER, lifecycle_stage TEXT, "
        "experiment_id INTEGER)"
    )
    con.execute("CREATE TABLE tags (key TEXT, value TEXT, run_uuid TEXT)")
    con.execute(
        "CREATE TABLE metrics (key TEXT, n INTEGER, timestamp INTEGER, run_uuid TEXT, step INTEGER, is_nan INTEGER, "
        f"value REAL GENERATED ALWAYS AS ({_balanced('n', leaves)}))"
    )
    con.execute("INSERT INTO experiments VALUES (0, 'Default', 'active')")
    con.execute("INSERT INTO runs VALUES ('r1', 'bomb', 0, 'active', 0)")
    con.executemany(
        "INSERT INTO metrics (key, n, timestamp, run_uuid, step, is_nan) VALUES ('loss', 1, 0, 'r1', ?, 0)",
        ((i,) for i in range(rows)),
    )
    con.commit()
    con.close()
    return path


def trackio_cpu_bomb(path: Path, rows: int = 6000, leaves: int = 4096) -> Path:
    """A Trackio database whose ``id`` is a generated column of ~8,000 VM steps a row."""
    con = sqlite3.connect(path)
    con.execute(
        "CREATE TABLE metrics (n INTEGER, timestamp TEXT, run_name TEXT, step INTEGER, metrics TEXT, "
        f"id INTEGER GENERATED ALWAYS AS ({_balanced('n', leaves)} / {leaves}))"
    )
    con.executemany(
        "INSERT INTO metrics (n, timestamp, run_name, step, metrics) VALUES (?, '2024-01-01T00:00:00', 'run', ?, ?)",
        ((i, i, json.dumps({"loss": 2.0 / i})) for i in range(1, rows + 1)),
    )
    con.commit()
    con.close()
    (path.with_suffix(".lock")).write_text("")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("bomb", [mlflow_cpu_bomb, trackio_cpu_bomb], ids=["mlflow_db", "trackio"])
def test_a_sqlite_cpu_bomb_stops_at_the_work_budget(tmp_path, bomb):
    _tree(tmp_path)
    (tmp_path / "store").mkdir()
    p = bomb(tmp_path / "store" / ("mlflow.db" if bomb is mlflow_cpu_bomb else "proj.db"))
    t = time.monotonic()
    code, doc, _ = _doctor(tmp_path)
    took = time.monotonic() - t
    _the_others_are_judged(code, doc)
    (rep,) = [r for r in doc["reports"] if r["file"] == str(p)]
    assert rep["verdict"] == "NOT-CHECKED"
    assert "took more than its work budget" in rep["error"]
    assert took < 60


def _time_bomb(path: Path, rows: int, blob: int) -> Path:
    """An ``mlflow.db`` whose metric values are a generated column building a string of
    ``2 * blob`` bytes a row: few VM steps, much time. SQLite computes the column on insert
    too, so the rows are written with a tiny blob and the schema's expression edited after
    (``writable_schema``), as an attacker crafting the file would."""
    mlflow_cpu_bomb(path, rows=1, leaves=1)
    con = sqlite3.connect(path)
    con.executescript(
        "DROP TABLE metrics; CREATE TABLE metrics (key TEXT, n INTEGER, timestamp INTEGER, run_uuid TEXT, "
        "step INTEGER, is_nan INTEGER, value REAL GENERATED ALWAYS AS (length(hex(zeroblob(n * 1)))));"
    )
    con.executemany(
        "INSERT INTO metrics (key, n, timestamp, run_uuid, step, is_nan) VALUES ('loss', 1, 0, 'r1', ?, 0)",
        ((i,) for i in range(rows)),
    )
    con.commit()
    con.execute("PRAGMA writable_schema = ON")
    con.execute(
        "UPDATE sqlite_master SET sql = replace(sql, 'zeroblob(n * 1)', ?) WHERE name = 'metrics'",
        (f"zeroblob(n * {blob})",),
    )
    con.commit()
    con.close()
    return path


@pytest.mark.slow
def test_a_generated_column_that_spends_time_not_steps_stops_at_the_deadline(tmp_path, monkeypatch):
    """20,000 rows of 4 MB strings (about 400 s): few VM steps, much time. The deadline
    (lowered here) stops it."""
    monkeypatch.setattr(_sqlite, "WORK_SECONDS", 0.5)
    p = _time_bomb(tmp_path / "mlflow.db", 20_000, 2_000_000)
    t = time.monotonic()
    code, out, err, doc = run_cli("judge", str(p), "--json")
    took = time.monotonic() - t
    assert code == 2 and "took more than its work budget" in doc["reports"][0]["error"]
    assert took < 30


def test_a_value_over_the_length_limit_is_a_read_error(tmp_path):
    p = _time_bomb(tmp_path / "mlflow.db", 1, 100_000_000)
    code, out, err, doc = run_cli("judge", str(p), "--json")
    assert code == 2
    assert f"over {_sqlite.MAX_VALUE_BYTES >> 20} MiB" in doc["reports"][0]["error"]


# --------------------------------------------------------------------------- mlflow.db in one pass


def test_mlflow_db_metrics_are_read_in_one_ordered_pass(tmp_path, monkeypatch):
    """A store of 40 runs whose metrics table has no index on the run id: one statement
    reads the metrics table (one scan and one sort), not one per run."""
    from trainproof.api import read_runlogs

    p = tmp_path / "mlflow.db"
    con = sqlite3.connect(p)
    for ddl in F.MLFLOW_DB_SCHEMA:
        con.execute(ddl)
    con.execute("INSERT INTO experiments VALUES (0, 'Default', 'x', 'active', 0, 0)")
    for r in range(40):
        con.execute("INSERT INTO runs VALUES (?, ?, 'FINISHED', ?, 0, 'active', 0)", (f"run{r:02d}", f"r{r}", r))
    con.executemany(
        "INSERT INTO metrics VALUES ('loss', ?, ?, ?, ?, 0)",
        ((2.0 / (1 + s), s, f"run{r:02d}", s) for s in range(30) for r in range(40)),
    )
    con.commit()
    con.close()
    statements: list[str] = []
    connect = sqlite3.connect

    def traced(*args, **kwargs):
        c = connect(*args, **kwargs)
        c.set_trace_callback(statements.append)
        return c

    monkeypatch.setattr(sqlite3, "connect", traced)
    runs = read_runlogs(p)
    assert [r.meta["run"] for r in runs] == [f"r{r}" for r in range(40)]
    assert all(len(r.get("loss")) == 30 for r in runs)
    on_metrics = [s for s in statements if "FROM metrics" in s and "LIMIT 0" not in s]
    assert len(on_metrics) == 1, on_metrics
    plan = connect(p).execute("EXPLAIN QUERY PLAN " + on_metrics[0]).fetchall()
    assert [row[-1] for row in plan if "metrics" in row[-1]] == ["SCAN metrics"]


# --------------------------------------------------------------------------- memory per record


def _limited(args: list[str], env: dict, limit_bytes: int):
    """``python -m trainproof ARGS`` in a child whose address space is capped at
    ``limit_bytes`` (RLIMIT_AS): what it allocates past that is a MemoryError."""
    import os
    import resource
    import subprocess

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    e = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", **env}
    return subprocess.run(
        [sys.executable, "-m", "trainproof", *args], capture_output=True, text=True, env=e, preexec_fn=cap, timeout=600
    )


def _gzip_rows(path: Path, header: bytes, row: bytes, n: int) -> Path:
    import zlib

    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        f.write(comp.compress(header))
        chunk = row * 65536
        for _ in range(n // 65536):
            f.write(comp.compress(chunk))
        f.write(comp.compress(row * (n % 65536)))
        f.write(comp.flush())
    return path


#: The address space the reading children get: room for the interpreter, numpy and a run
#: at the lowered caps, far below what 16 M unbounded records take (about 2.4 GB).
LIMIT = 1 << 30


@pytest.mark.slow
def test_a_gzip_of_identical_rows_stays_under_the_memory_limit(tmp_path):
    p = _gzip_rows(tmp_path / "metrics.csv.gz", b"step,loss\n", b"1,1\n", 16 << 20)
    assert p.stat().st_size < 100_000
    r = _limited(["judge", str(p), "--json"], {"TRAINPROOF_MAX_RECORDS": "1000000"}, LIMIT)
    assert "MemoryError" not in r.stderr and "internal error" not in r.stderr, r.stderr[-500:]
    rep = json.loads(r.stdout)["reports"][0]
    (drop,) = [f for f in rep["findings"] if f["id"] == "TP-DATA-DROPPED"]
    assert "from line 1000002 on were left out" in drop["evidence"]
    assert rep["records"] == 1_000_000


def test_rows_past_the_record_cap_are_left_out_and_said(tmp_path, monkeypatch):
    from trainproof.api import judge

    p = tmp_path / "metrics.csv"
    p.write_text("step,loss\n" + "".join(f"{s},{2.0 / (1 + s / 50):.5f}\n" for s in range(1, 3001)))
    monkeypatch.setenv("TRAINPROOF_MAX_RECORDS", "1000")
    rep = judge(p)
    (drop,) = [f for f in rep.findings if f.id == "TP-DATA-DROPPED"]
    assert "records from line 1002 on were left out" in drop.evidence and "1,000 records" in drop.evidence
    assert rep.meta.get("dropped")


def test_identical_repeats_are_folded_and_the_later_line_kept(tmp_path):
    from trainproof.api import read_runlog

    p = tmp_path / "metrics.csv"
    rows = ["step,loss"] + [f"{s},{2.0 / s:.5f}" for s in range(1, 41)]
    rows[5:5] = [rows[4]] * 3  # step 4 written four times, identically
    p.write_text("\n".join(rows) + "\n")
    run = read_runlog(p)
    loss = run.get("loss")
    assert len(loss) == 40 and run.records == 43
    assert loss.lines[3] == 8  # the last of the four writes (lines 5-8)


def test_the_caps_must_be_whole_numbers(tmp_path, monkeypatch):
    from trainproof.api import judge

    p = tmp_path / "metrics.csv"
    p.write_text("step,loss\n1,2\n2,1\n")
    monkeypatch.setenv("TRAINPROOF_MAX_VALUES", "lots")
    rep = judge(p)
    assert rep.verdict.value == "NOT-CHECKED" and "TRAINPROOF_MAX_VALUES='lots'" in rep.error


@pytest.mark.slow
def test_the_issue_gzip_bomb_stays_under_the_memory_ceiling(tmp_path):
    """The issue's bomb: 1 GiB of ``1,1`` rows in about 1 MiB of gzip, at the default caps."""
    p = _gzip_rows(tmp_path / "metrics.csv.gz", b"step,loss\n", b"1,1\n", (1 << 30) // 4)
    assert p.stat().st_size < 2 << 20
    r = _limited(["judge", str(p), "--json"], {}, 3 << 30)
    assert "MemoryError" not in r.stderr and "internal error" not in r.stderr, r.stderr[-500:]
    rep = json.loads(r.stdout)["reports"][0]
    assert any(f["id"] == "TP-DATA-DROPPED" and "line 5000002" in f["evidence"] for f in rep["findings"])
