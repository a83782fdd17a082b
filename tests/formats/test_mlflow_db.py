"""The MLflow SQLite tracking-store reader (trainproof.formats.mlflow_db).

The stores are written by the real MLflow client (``sqlite:///…/mlflow.db``, its alembic
migrations, its SQLAlchemy store), once per module: healthy, NaN and diverged runs in two
experiments, a deleted run and a deleted experiment. The same runs are logged to a file
store (``file:…/mlruns``) and as JSONL, and the SQLite reading is compared with both:
the same series as the file-store reader gives, the same verdicts as the JSONL.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import sqlite3
import sys
from pathlib import Path

import numpy as np
import pytest

from trainproof import api
from trainproof.formats import NoRuns, NotALog, ReadError, _sqlite, detect

from conftest import run_cli, run_subprocess

N = 300


def _noise(i: int, seed: int) -> float:
    x = (seed * 7919 + i * 104729) % 1000
    return (x / 1000 - 0.5) * 0.04


def _runs() -> dict[str, dict[str, list[tuple[int, float]]]]:
    """Run name -> metric -> ``(step, value)`` points, as logged with ``step=``."""
    healthy = [(s, 2.3 * math.exp(-s / 80) + 0.4 + _noise(s, 1)) for s in range(N)]
    nan = [(s, (2.3 * math.exp(-s / 80) + 0.4 + _noise(s, 2)) if s < 150 else math.nan) for s in range(N)]
    diverged = [(s, (2.3 - 0.004 * s + _noise(s, 3)) * (1.08 ** max(0, s - 100))) for s in range(N)]
    lr = [(s, 1e-3) for s in range(N)]
    return {
        "healthy": {"loss": healthy, "learning_rate": lr},
        "nan-run": {"loss": nan, "learning_rate": lr},
        "diverged": {
            "loss": diverged,
            "learning_rate": lr,
            "grad_norm": [(s, math.inf if s == 250 else 1.0) for s in range(N)],
        },
    }


#: Which experiment each run is logged in.
EXPERIMENTS = {"healthy": "exp-a", "nan-run": "exp-a", "diverged": "exp-b"}
#: Values logged without ``step=`` (MLflow writes step 0 for each) in the healthy run.
NO_STEP = [0.9, 0.7, 0.6, 0.55]


def _log_all(uri: str) -> None:
    """Log every run of :func:`_runs` to the tracking store at ``uri`` with the client."""
    mlflow = pytest.importorskip("mlflow")  # here, not at import: only the slow tests log (3 s)
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    mlflow.set_tracking_uri(uri)
    client = MlflowClient(uri)
    t0 = 1_700_000_000_000
    for run_name, metrics in _runs().items():
        mlflow.set_experiment(EXPERIMENTS[run_name])
        with mlflow.start_run(run_name=run_name) as run:
            batch = [Metric(key, value, t0 + step, step) for key, points in metrics.items() for step, value in points]
            for i in range(0, len(batch), 1000):  # log_batch takes at most 1000 metrics
                client.log_batch(run.info.run_id, metrics=batch[i : i + 1000])
            if run_name == "healthy":
                for v in NO_STEP:
                    mlflow.log_metric("samples_per_epoch", v)
        t0 += 1_000_000
    # Neither a deleted run nor a run of a deleted experiment is judged.
    mlflow.set_experiment("exp-a")
    with mlflow.start_run(run_name="deleted-run") as run:
        mlflow.log_metric("loss", math.nan, step=0)
    client.delete_run(run.info.run_id)
    exp = mlflow.set_experiment("exp-gone")
    with mlflow.start_run(run_name="in-deleted-experiment"):
        mlflow.log_metric("loss", math.nan, step=0)
    client.delete_experiment(exp.experiment_id)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """``(mlflow.db, mlruns/, jsonl folder)`` holding the same runs."""
    root = tmp_path_factory.mktemp("mlflowdb")
    with pytest.MonkeyPatch.context() as mp:
        for var in ("HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "MLFLOW_HOME"):
            mp.setenv(var, str(root / "home"))
        mp.setenv("MLFLOW_TRACKING_URI", "sqlite:///" + str(root / "mlflow.db"))
        mp.setenv("MLFLOW_DEFAULT_ARTIFACT_ROOT", str(root / "artifacts"))
        mp.setenv("MLFLOW_ENABLE_ASYNC_LOGGING", "false")
        # MLflow 3 refuses the file store unless asked (it is in maintenance mode).
        mp.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
        mp.chdir(root)  # anything the client writes relative goes here
        _log_all("sqlite:///" + str(root / "mlflow.db"))
        _log_all("file:" + str(root / "mlruns"))
        sys.modules["mlflow"].set_tracking_uri(None)
    jsonl = root / "jsonl"
    jsonl.mkdir()
    for run_name, metrics in _runs().items():
        rows: dict[int, dict] = {}
        for key, points in metrics.items():
            for step, value in points:
                rows.setdefault(step, {"step": step})[key] = value
        if run_name == "healthy":
            for i, v in enumerate(NO_STEP):
                rows[i]["samples_per_epoch"] = v
        (jsonl / f"{run_name}.jsonl").write_text("".join(json.dumps(rows[s]) + "\n" for s in sorted(rows)))
    return root / "mlflow.db", root / "mlruns", jsonl


def _file_store_runs(mlruns: Path) -> dict[str, Path]:
    """Run name -> run folder of the live runs in the file store."""
    out = {}
    for meta in mlruns.glob("*/*/meta.yaml"):
        run = meta.parent
        text = meta.read_text()
        if "lifecycle_stage: active" in text and (run / "tags" / "mlflow.runName").exists():
            out[(run / "tags" / "mlflow.runName").read_text().strip()] = run
    return out


def _copy(db: Path, to: Path) -> Path:
    to.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(db, to)
    return to


# --------------------------------------------------------------------------- reading


@pytest.mark.slow
def test_store_gives_one_runlog_per_live_run_in_a_stable_order(stores) -> None:
    db, _, _ = stores
    assert detect(db).name == "mlflow_db"
    runs = api.read_runlogs(db)
    assert [(r.meta["experiment"], r.meta["run"]) for r in runs] == [
        ("exp-a", "healthy"),
        ("exp-a", "nan-run"),
        ("exp-b", "diverged"),
    ]
    assert all(r.format == "mlflow_db" and len(r.meta["run_id"]) == 32 for r in runs)
    assert all(r.meta["started"].endswith("+00:00") for r in runs)
    assert runs == sorted(runs, key=lambda r: r.meta["started"])  # started in this order
    assert api.read_runlogs(db)[2].meta == runs[2].meta  # the same order each time


@pytest.mark.slow
def test_series_equal_the_file_store_readers_of_the_same_runs(stores) -> None:
    db, mlruns, _ = stores
    folders = _file_store_runs(mlruns)
    assert sorted(folders) == ["diverged", "healthy", "nan-run"]
    for run in api.read_runlogs(db):
        file_run = api.read_runlog(folders[run.meta["run"]])
        assert file_run.format == "mlflow"
        assert sorted(run.series) == sorted(file_run.series)
        for name, s in run.series.items():
            f = file_run.series[name]
            assert s.key == f.key
            np.testing.assert_array_equal(s.steps, f.steps)
            np.testing.assert_array_equal(s.values, f.values)  # NaN equals NaN here
    healthy = next(r for r in api.read_runlogs(db) if r.meta["run"] == "healthy")
    s = healthy.series["samples_per_epoch"]
    assert list(s.steps) == [0.0, 1.0, 2.0, 3.0] and list(s.values) == NO_STEP
    assert any("samples_per_epoch: all 4 values are logged at step 0" in n for n in healthy.notes)


@pytest.mark.slow
def test_nan_and_infinity_are_read_as_logged(stores) -> None:
    db, _, _ = stores
    # How MLflow stores them: NaN as value 0 with is_nan, inf as the largest double.
    con = sqlite3.connect(db)
    assert con.execute("SELECT count(*) FROM metrics WHERE is_nan = 1 AND value = 0").fetchone()[0] >= N - 150
    assert con.execute("SELECT max(value) FROM metrics").fetchone()[0] == 1.7976931348623157e308
    con.close()
    by_name = {r.meta["run"]: r for r in api.read_runlogs(db)}
    loss = by_name["nan-run"].series["loss"]
    assert np.isnan(loss.values[150:]).all() and np.isfinite(loss.values[:150]).all()
    grad = by_name["diverged"].series["grad_norm"]
    assert grad.values[250] == math.inf and np.isfinite(np.delete(grad.values, 250)).all()


@pytest.mark.slow
def test_verdicts_equal_those_of_the_same_runs_as_jsonl(stores) -> None:
    db, _, jsonl = stores
    reports = api.judge_all(db)
    by_name = {r.meta["run"]: r for r in reports}
    assert sorted(by_name) == ["diverged", "healthy", "nan-run"]
    for run_name, rep in by_name.items():
        (want,) = api.judge_all(jsonl / f"{run_name}.jsonl")
        assert rep.verdict == want.verdict, run_name
        assert {f.id for f in rep.findings if f.level == "FAIL"} == {
            f.id for f in want.findings if f.level == "FAIL"
        }, run_name
    assert by_name["nan-run"].verdict == "FAIL" and by_name["diverged"].verdict == "FAIL"
    assert by_name["healthy"].verdict != "FAIL"


@pytest.mark.slow
def test_judge_reports_every_run_of_the_store(stores) -> None:
    db, _, _ = stores
    code, out, _, doc = run_cli("judge", str(db), "--json")
    assert code == 1  # a run fails
    assert doc is not None
    assert sorted(r["meta"]["run"] for r in doc["reports"]) == ["diverged", "healthy", "nan-run"]
    code, out, _, _ = run_cli("judge", str(db))
    for run_name in ("healthy", "nan-run", "diverged"):
        assert f"— run {run_name}" in out


@pytest.mark.slow
def test_a_store_under_another_name_is_found_by_its_tables(stores, tmp_path) -> None:
    db, _, _ = stores
    other = _copy(db, tmp_path / "tracking.sqlite")
    assert detect(other).name == "mlflow_db"
    assert [r.meta["run"] for r in api.read_runlogs(other)] == ["healthy", "nan-run", "diverged"]


# --------------------------------------------------------------------------- errors


@pytest.mark.slow
def test_a_locked_store_is_one_clear_error(stores, tmp_path, monkeypatch) -> None:
    db = _copy(stores[0], tmp_path / "locked" / "mlflow.db")
    monkeypatch.setattr(_sqlite, "LOCK_TIMEOUT_S", 0.2)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(ReadError, match=r"^the database is locked by another process"):
            api.read_runlogs(db)
        code, out, err, _ = run_cli("judge", str(db))
        assert code == 2
        assert "locked by another process" in out + err and "Traceback" not in out + err
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert len(api.read_runlogs(db)) == 3  # readable once the lock is released


def _one_line_error(path: Path) -> str:
    """What ``trainproof judge PATH`` says on stderr, as a real process: exit 2, one line,
    no traceback."""
    p = run_subprocess("judge", str(path))
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stdout + p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    return p.stderr


@pytest.mark.slow
def test_a_damaged_store_is_exit_2_with_one_line_and_no_traceback(stores, tmp_path) -> None:
    db = stores[0]
    size = db.stat().st_size
    truncated = _copy(db, tmp_path / "truncated" / "mlflow.db")
    with open(truncated, "r+b") as f:
        f.truncate(size // 3)
    garbled = _copy(db, tmp_path / "garbled" / "mlflow.db")
    with open(garbled, "r+b") as f:
        f.seek(4096)
        f.write(b"\xa5" * (size - 8192))
    header_only = tmp_path / "header" / "mlflow.db"
    header_only.parent.mkdir()
    header_only.write_bytes(_sqlite.MAGIC + b"\x00" * 84)
    for p in (truncated, garbled, header_only):
        with pytest.raises(ReadError, match=r"corrupt|cannot be read"):
            api.read_runlogs(p)
        out = _one_line_error(p)
        assert "mlflow.db" in out and ("corrupt" in out or "cannot be read" in out), out


@pytest.mark.slow
def test_a_store_without_runs_says_so_and_doctor_lists_it_as_not_a_run(stores, tmp_path) -> None:
    root = tmp_path / "tree"
    empty = _copy(stores[0], root / "empty" / "mlflow.db")
    con = sqlite3.connect(empty)
    for table in ("latest_metrics", "metrics", "params", "tags", "runs"):
        con.execute(f"DELETE FROM {table}")
    con.commit()
    con.close()
    with pytest.raises(NoRuns, match=r"^the MLflow store holds no runs: not a run$"):
        api.read_runlogs(empty)
    assert "holds no runs" in _one_line_error(empty)
    _copy(stores[0], root / "full" / "mlflow.db")
    reports, ignored = api.doctor(root, jobs=1)
    assert sorted(r.meta.get("run") for r in reports) == ["diverged", "healthy", "nan-run"]
    assert [Path(i["file"]).parent.name for i in ignored] == ["empty"]
    assert "holds no runs" in ignored[0]["reason"]


@pytest.mark.slow
def test_a_store_whose_runs_are_all_deleted_holds_no_runs(stores, tmp_path) -> None:
    db = _copy(stores[0], tmp_path / "mlflow.db")
    con = sqlite3.connect(db)
    con.execute("UPDATE runs SET lifecycle_stage = 'deleted'")
    con.commit()
    con.close()
    with pytest.raises(NoRuns, match=r"holds no runs \(5 deleted\)"):
        api.read_runlogs(db)


def test_another_applications_sqlite_file_is_not_a_log_quietly(tmp_path) -> None:
    db = tmp_path / "tree" / "cache.db"
    db.parent.mkdir()
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE items (key TEXT, value REAL, step INTEGER)")
    con.executemany("INSERT INTO items VALUES (?, ?, ?)", [("loss", 2.0 / (i + 1), i) for i in range(50)])
    con.commit()
    con.close()
    with pytest.raises(NotALog) as e:
        detect(db)
    assert "mlflow_db" in str(e.value)  # it was tried, and not claimed
    reports, ignored = api.doctor(db.parent, jobs=1)
    assert reports == [] and [Path(i["file"]).name for i in ignored] == ["cache.db"]


def test_a_database_named_mlflow_db_without_mlflows_tables_is_not_a_store(tmp_path) -> None:
    db = tmp_path / "mlflow.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE runs (id TEXT)")
    con.commit()
    con.close()
    with pytest.raises(
        NotALog,
        match=r"^a SQLite database, not an MLflow tracking store \(it has no experiments, metrics, tags tables\)$",
    ):
        api.read_runlogs(db)


# --------------------------------------------------------------------------- damage, fuzzed


def test_the_fuzz_base_stores_are_judged_as_written(tmp_path) -> None:
    import _fuzz_logs as F

    for kind, code in (("healthy", 0), ("broken", 1)):
        p = F.write_input(tmp_path / kind, "mlflow_db", F.valid("mlflow_db", kind))
        out = F.run_epoch(p, "mlflow_db", new_input=False)
        assert out.code == code, (kind, out.ids())
        assert "TP-DATA-DROPPED" not in out.ids()


@pytest.mark.slow
def test_damaged_stores_keep_the_cli_contract(tmp_path) -> None:
    """Stores cut, flipped, padded with NULs, spliced with other bytes: exit 0/1/2 with a
    schema-valid report, a read error exit 2, never a traceback (``_fuzz_logs.run_epoch``)."""
    import _fuzz_logs as F

    ops = (F._truncate, F._flip, F._insert, F._nul, F._splice)
    codes = set()
    for kind in F.KINDS:
        base = F.valid("mlflow_db", kind)
        for seed in range(60):
            rnd = random.Random(seed)
            data = base
            for _ in range(1 + seed % 3):
                data = rnd.choice(ops)(data, rnd)
            codes.add(F.check_input(F.write_input(tmp_path / "in", "mlflow_db", data), "mlflow_db", data).code)
    assert 2 in codes  # some damage is found


def test_rows_of_the_wrong_type_are_dropped_and_said(tmp_path) -> None:
    import _fuzz_logs as F

    db = tmp_path / "mlflow.db"
    db.write_bytes(F.valid("mlflow_db", "healthy"))
    con = sqlite3.connect(db)
    con.execute("UPDATE metrics SET value = 'abc' WHERE key = 'loss' AND step = 50")
    con.execute("UPDATE metrics SET step = x'00' WHERE key = 'loss' AND step = 60")
    con.commit()
    con.close()
    (run,) = api.read_runlogs(db)
    assert len(run.series["loss"]) == F.N - 2
    assert run.meta["dropped"] == [
        "fuzz-run: skipped 2 metric row(s) whose key, step or value is not of the type MLflow writes"
    ]
    (rep,) = api.judge_all(db)
    assert "TP-DATA-DROPPED" in {f.id for f in rep.findings}


@pytest.mark.slow
def test_what_a_reader_says_of_one_run_stays_with_that_run(stores, tmp_path) -> None:
    """A store's notes and drops are per run: a damaged row of one run is that run's
    TP-DATA-DROPPED only, and a note on one run's steps is not repeated on the others."""
    db = _copy(stores[0], tmp_path / "mlflow.db")
    con = sqlite3.connect(db)
    con.execute(
        "UPDATE metrics SET value = 'abc' WHERE key = 'loss' AND step = 50 AND run_uuid = "
        "(SELECT run_uuid FROM runs WHERE name = 'nan-run' AND lifecycle_stage = 'active')"
    )
    con.commit()
    con.close()
    runs = {r.meta["run"]: r for r in api.read_runlogs(db)}
    assert set(runs) == {"healthy", "nan-run", "diverged"}
    assert runs["nan-run"].meta["dropped"] == [
        "nan-run: skipped 1 metric row(s) whose key, step or value is not of the type MLflow writes"
    ]
    assert "dropped" not in runs["healthy"].meta and "dropped" not in runs["diverged"].meta
    step_notes = {name: [n for n in r.notes if "samples_per_epoch" in n] for name, r in runs.items()}
    assert step_notes["healthy"] and not step_notes["nan-run"] and not step_notes["diverged"]
    reports = {rep.meta.get("run"): rep for rep in api.judge_all(db)}
    assert "TP-DATA-DROPPED" in {f.id for f in reports["nan-run"].findings}
    assert "TP-DATA-DROPPED" not in {f.id for f in reports["healthy"].findings}


def _schema_not_utf8(path: Path) -> Path:
    """An SQLite file whose schema text holds a byte that is not UTF-8 (sqlite3 raises
    UnicodeDecodeError, not sqlite3.Error, on reading it)."""
    con = sqlite3.connect(path)
    con.execute('CREATE TABLE metrics("key" VARCHAR(250), value REAL, step INT, run_uuid TEXT)')
    con.commit()
    con.close()
    data = bytearray(path.read_bytes())
    i = data.find(b"VARCHAR(250)") + len("VARCHAR(250")
    data[i] = 0x80
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("name", ["cache.sqlite", "mlflow.db"])
def test_a_database_whose_schema_is_not_utf8_hides_no_other_run(tmp_path, name) -> None:
    import _fuzz_logs as F

    _schema_not_utf8(tmp_path / name)
    F.write_input(tmp_path / "broken", "mlflow_db", F.valid("mlflow_db", "broken"))
    code, out, err, _ = run_cli("doctor", str(tmp_path), "--json")
    assert "internal error" not in err and "Traceback" not in err
    doc = json.loads(out)
    assert [r["verdict"] for r in doc["reports"] if r["file"].startswith(str(tmp_path / "broken"))] == ["FAIL"]
    code_alone, _, err_alone, _ = run_cli("judge", str(tmp_path / name))
    assert code_alone == 2 and len(err_alone.splitlines()) == 1 and "internal error" not in err_alone
    if name == "mlflow.db":  # a store's name: the reason is its damage
        assert "a corrupt SQLite database (its schema holds text that is not UTF-8)" in err_alone


@pytest.mark.slow
def test_a_run_name_that_is_not_utf8_does_not_hide_the_store(stores, tmp_path) -> None:
    db = _copy(stores[0], tmp_path / "mlflow.db")
    con = sqlite3.connect(db)
    con.execute("UPDATE runs SET name = CAST(x'ff6162' AS TEXT) WHERE name = 'healthy'")
    con.execute("UPDATE tags SET value = CAST(x'ff6162' AS TEXT) WHERE key = 'mlflow.runName' AND value = 'healthy'")
    con.commit()
    con.close()
    runs = {r.meta["run"]: r for r in api.read_runlogs(db)}
    assert set(runs) == {"\ufffdab", "nan-run", "diverged"}


@pytest.mark.slow
def test_watch_follows_the_run_that_started_last_and_says_so(stores, tmp_path) -> None:
    """A store holds many runs; the one being written is the one that started last."""
    db = _copy(stores[0], tmp_path / "mlflow.db")
    p = run_subprocess("watch", str(db), "--until-fail", "--interval", "1", timeout=120)
    assert p.returncode == 1, p.stdout[-2000:] + p.stderr[-2000:]
    assert "the store holds 3 runs: following the one that started last, 'diverged'" in p.stdout


def test_latest_run_is_the_last_started() -> None:
    from trainproof.live.tail import latest_run
    from trainproof.runlog import build_runlog

    def run(name, started=None):
        r = build_runlog([], name, "mlflow_db")
        r.meta.update({"run": name, **({"started": started} if started else {})})
        return r

    runs = [
        run("a", "2026-01-02T00:00:00Z"),
        run("b", "2026-01-03T00:00:00Z"),
        run("c"),
        run("d", "2026-01-01T00:00:00Z"),
    ]
    assert latest_run(runs).meta["run"] == "b"
    assert latest_run([run("x"), run("y")]).meta["run"] == "y"  # no times: the store's last
    assert latest_run([run("only")]).meta["run"] == "only"


@pytest.mark.slow
def test_compare_judges_every_run_of_a_store_and_refuses_one_as_baseline(stores) -> None:
    db, _, jsonl = stores
    base, reports = api.compare(jsonl / "healthy.jsonl", [db])
    assert sorted(r.meta["run"] for r in reports) == ["diverged", "healthy", "nan-run"]
    code, out, err, _ = run_cli("compare", str(jsonl / "healthy.jsonl"), str(db))
    assert code == 1
    code, out, err, _ = run_cli("compare", str(db), str(jsonl / "healthy.jsonl"))
    assert code == 2 and "holds 3 runs ('healthy', 'nan-run', 'diverged'): a baseline is one run" in err


@pytest.mark.slow
def test_a_run_that_logged_no_metric_is_not_judged_and_said(stores, tmp_path) -> None:
    """A sweep's parent run (params and children, no metric) is not a run to judge: the
    store's other runs say it was left out, and a store of such runs only is not a run."""
    db = _copy(stores[0], tmp_path / "mlflow.db")
    con = sqlite3.connect(db)
    con.execute("CREATE TEMP TABLE t AS SELECT * FROM runs WHERE name = 'healthy'")
    con.execute("UPDATE t SET run_uuid = 'parent0', name = 'sweep-parent'")
    con.execute("INSERT INTO runs SELECT * FROM t")
    con.commit()
    runs = api.read_runlogs(db)
    assert sorted(r.meta["run"] for r in runs) == ["diverged", "healthy", "nan-run"]
    assert all("1 run(s) of the store logged no metric and are not judged: 'sweep-parent'" in r.notes for r in runs)
    con.execute("DELETE FROM metrics")
    con.commit()
    con.close()
    with pytest.raises(NoRuns, match="logged a metric"):
        api.read_runlogs(db)
    reports, ignored = api.doctor(tmp_path)
    assert reports == [] and [i["file"] for i in ignored] == [str(db)]


@pytest.mark.slow
def test_sarif_results_of_a_store_say_which_run(stores, tmp_path) -> None:
    """The runs of one store share its file: each result names its run (message and
    properties) and its fingerprint holds the run id, not the order of the runs."""
    from trainproof.render.sarif import _document as document
    from trainproof.render.sarif import sarif_log

    db = _copy(stores[0], tmp_path / "mlflow.db")
    reports = api.judge_all(db)
    doc = document(sarif_log(reports))
    results = doc["runs"][0]["results"]
    nan = [r for r in results if r["ruleId"] == "TP-NAN"]
    assert {r["properties"]["run"] for r in nan} == {"nan-run"}
    assert all(r["message"]["text"].startswith("run nan-run [") for r in nan)
    from trainproof.render.sarif import fingerprint

    # the fingerprint holds the run's id: the same finding of another run of the file differs
    run = next(r for r in reports if r.meta["run"] == "nan-run")
    (first,) = [r for r in nan if r["partialFingerprints"]["trainproofFinding/v1"].endswith(":1")][:1]
    uri = first["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    step = first["properties"].get("step")
    assert first["partialFingerprints"]["trainproofFinding/v1"] == fingerprint(
        "TP-NAN", uri, step, 1, run.meta["run_id"]
    )
    assert fingerprint("TP-NAN", uri, step, 1, run.meta["run_id"]) != fingerprint("TP-NAN", uri, step, 1)


def test_a_url_stays_a_uri_in_sarif() -> None:
    from trainproof.render.sarif import artifact_uri

    url = "http://127.0.0.1:5000/#/experiments/1/runs/0a1b"
    assert artifact_uri(url) == url
    assert artifact_uri("s3://bucket/runs/a b.jsonl") == "s3://bucket/runs/a%20b.jsonl"


@pytest.mark.slow
def test_file_store_runs_are_named_like_the_sqlite_stores(stores) -> None:
    """The same runs written to a file store and to SQLite: each run folder is named by
    its run name and experiment, as the SQLite store's runs are."""
    db, mlruns, _ = stores
    by_db = {r.meta["run"]: r.meta for r in api.read_runlogs(db)}
    for name, folder in _file_store_runs(mlruns).items():
        meta = api.read_runlog(folder).meta
        assert meta["run"] == name and meta["experiment"] == EXPERIMENTS[name]
        assert meta["run_id"] == folder.name and meta["started"][:4] == by_db[name]["started"][:4]
