"""Runs read from an MLflow tracking server over its REST API (trainproof.mlflow_server).

The slow tests start a real ``mlflow server`` (SQLite backend, loopback only) and log runs
to it with MLflow's own client; the others talk to a tiny ``http.server`` on 127.0.0.1 that
plays the API (or answers garbage, slowly, or not at all) and records the headers it gets.
"""

from __future__ import annotations

import json
import math
import os
import random
import time
from pathlib import Path

import pytest
from _mlflow_server import RUN, SERVER_ENV, T0, Fake, free_port, mlflow_api, running_server  # noqa: F401

from trainproof import mlflow_server
from trainproof.api import doctor, judge_all, judge_runs, read_runlog
from trainproof.findings import Level
from trainproof.mlflow_server import is_tracking_server

from conftest import run_cli

TOKEN = "tok-3f9a1c77-do-not-print"
PASSWORD = "pw-8d2e5b10-do-not-print"


# --------------------------------------------------------------------------- the runs


def healthy(n: int = 300) -> list[float]:
    rng = random.Random(1)
    return [2.3 * math.exp(-s / 120) + 0.2 + rng.gauss(0, 0.01) for s in range(n)]


def nan_run(n: int = 300) -> list[float]:
    return [v if s < 150 else math.nan for s, v in enumerate(healthy(n))]


def diverged(n: int = 300) -> list[float]:
    rng = random.Random(2)
    return [2.3 * 10 ** (s / 60) * (1 + rng.gauss(0, 0.01)) for s in range(n)]


#: experiment -> run name -> loss per step.
RUNS = {
    "exp-a": {"healthy": healthy(), "nan": nan_run()},
    "exp-b": {"diverged": diverged()},
}
EXPECTED = {"healthy": "not FAIL", "nan": "FAIL", "diverged": "FAIL"}


def log_runs(uri: str) -> dict[str, str]:
    """Log :data:`RUNS` with MLflow's client to ``uri``; returns run name -> run id."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    client = MlflowClient(tracking_uri=uri)
    ids = {}
    for exp, runs in RUNS.items():
        exp_id = client.create_experiment(exp)
        for name, losses in runs.items():
            run = client.create_run(exp_id, run_name=name, start_time=T0)
            metrics = [Metric("loss", v, T0 + 1000 * s, s) for s, v in enumerate(losses)]
            metrics += [Metric("learning_rate", 1e-3, T0 + 1000 * s, s) for s in range(len(losses))]
            # Logged without step= (step 0 each time): read in the order logged.
            metrics += [Metric("epoch_acc", 0.5 + 0.1 * i, T0 + 500 + 1000 * i, 0) for i in range(4)]
            for i in range(0, len(metrics), 900):  # log_batch takes at most 1000 metrics
                client.log_batch(run.info.run_id, metrics=metrics[i : i + 900])
            client.set_terminated(run.info.run_id)
            ids[name] = run.info.run_id
    return ids


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A real ``mlflow server`` on a free loopback port holding :data:`RUNS`, and the same
    runs in a file store: ``(url, ids on the server, file store folder, ids there)``."""
    pytest.importorskip("mlflow")
    tmp = tmp_path_factory.mktemp("mlflow-server")
    env_keys = {"HOME": str(tmp / "home"), **SERVER_ENV}
    (tmp / "home").mkdir()
    saved = {k: os.environ.get(k) for k in [*env_keys, "MLFLOW_TRACKING_URI"]}
    os.environ.update(env_keys)
    os.environ.pop("MLFLOW_TRACKING_URI", None)
    try:
        with running_server(tmp) as url:
            ids = log_runs(url)
            file_ids = log_runs(f"file:{tmp}/mlruns")
            yield url, ids, tmp / "mlruns", file_ids, tmp
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _by_name(reports) -> dict:
    return {r.meta["run"]: r for r in reports}


def _check_verdict(name: str, verdict: Level) -> None:
    if EXPECTED[name] == "FAIL":
        assert verdict is Level.FAIL, name
    else:
        assert verdict is not Level.FAIL, name


@pytest.mark.slow
def test_doctor_reads_every_run_of_the_server_like_the_file_store(server, tmp_path):
    url, ids, mlruns, file_ids, _ = server
    code, out, err, doc = run_cli("doctor", url, "--json")
    assert code == 1, err  # NaN and diverged FAIL
    reports = doc["reports"]
    assert sorted(r["meta"]["run"] for r in reports) == ["diverged", "healthy", "nan"]
    for r in reports:
        name = r["meta"]["run"]
        assert r["file"] == f"{url}/#/experiments/{r['file'].split('/')[-3]}/runs/{ids[name]}"
        assert r["meta"]["run_id"] == ids[name]
        assert r["meta"]["experiment"] == ("exp-b" if name == "diverged" else "exp-a")
        assert r["meta"]["started"].startswith("2023-11-14T22:13:20")
    # The same runs in a file store, read by trainproof's file store reader.
    served, _ = doctor(url)
    stored, _ = doctor(mlruns)
    name_of = {v: k for k, v in file_ids.items()}
    stored = {name_of[Path(r.file).name]: r for r in stored}
    served = _by_name(served)
    assert set(served) == set(stored) == {"healthy", "nan", "diverged"}
    for name, rep in served.items():
        _check_verdict(name, rep.verdict)
        assert rep.verdict is stored[name].verdict, name
        assert [(f.id, f.level) for f in rep.findings] == [(f.id, f.level) for f in stored[name].findings]
        assert rep.records == stored[name].records and rep.step_range == stored[name].step_range
        assert any("metrics/epoch_acc: all 4 values are logged at step 0" in n for n in rep.notes)
        # The same losses written as JSONL lines.
        losses = RUNS["exp-b" if name == "diverged" else "exp-a"][name]
        jl = tmp_path / f"{name}.jsonl"
        jl.write_text(
            "".join(json.dumps({"step": s, "loss": v, "learning_rate": 1e-3}) + "\n" for s, v in enumerate(losses))
        )
        assert judge_all(jl)[0].verdict is rep.verdict, name


@pytest.mark.slow
def test_experiment_and_run_narrow_the_server(server, monkeypatch):
    url, ids, *_ = server
    code, out, err, doc = run_cli("doctor", url, "--experiment", "exp-b", "--json")
    assert [r["meta"]["run"] for r in doc["reports"]] == ["diverged"]
    code, out, err, doc = run_cli("doctor", url, "--run", ids["nan"], "--json")
    assert [r["meta"]["run"] for r in doc["reports"]] == ["nan"]
    assert code == 1
    code, out, err, doc = run_cli("doctor", url, "--experiment", "exp-b", "--run", ids["nan"], "--json")
    assert doc["reports"] == [] and code == 2
    code, out, err, _ = run_cli("doctor", url, "--experiment", "no-such-exp")
    assert code == 2 and "no experiment named 'no-such-exp'" in err and "Traceback" not in err
    # Paging, with pages of one item (the real server's page tokens).
    monkeypatch.setattr(mlflow_server, "_RUNS_PAGE", 1)
    monkeypatch.setattr(mlflow_server, "_EXPERIMENTS_PAGE", 1)
    monkeypatch.setattr(mlflow_server, "_HISTORY_PAGE", 7)
    paged, _ = doctor(url)
    whole = _by_name(doctor(url.rstrip("/") + "/", runs=[ids["healthy"]])[0])
    assert sorted(_by_name(paged)) == ["diverged", "healthy", "nan"]
    assert _by_name(paged)["healthy"].records == whole["healthy"].records == 604


@pytest.mark.slow
def test_judge_a_run_url_and_the_api(server):
    url, ids, *_ = server
    reports, _ = doctor(url, experiments=["exp-a"])
    nan = next(r for r in reports if r.meta["run"] == "nan")
    code, out, err, doc = run_cli("judge", nan.file, "--json")
    assert code == 1 and doc["reports"][0]["verdict"] == "FAIL"
    assert doc["reports"][0]["meta"]["run"] == "nan"
    rl = read_runlog(nan.file)
    assert math.isnan(rl.get("loss").values[-1]) and len(rl.get("loss")) == 300
    reps, skip = judge_runs(nan.file)
    assert skip is None and reps[0].verdict is Level.FAIL
    healthy = next(r for r in reports if r.meta["run"] == "healthy")
    code, out, err, doc = run_cli("compare", healthy.file, nan.file, "--json")
    assert code == 1 and [r["meta"]["run"] for r in doc["reports"]] == ["nan"], err
    assert doc["baseline"]["meta"]["run"] == "healthy"


@pytest.mark.slow
def test_a_server_behind_a_path_prefix(server, tmp_path):
    """``mlflow server --static-prefix /mlflow`` (or a reverse proxy at /mlflow): the API
    lies under the prefix, and so do the run URLs doctor gives."""
    url, ids, *_, tmp = server
    import shutil

    store = tmp_path / "store"
    store.mkdir()
    shutil.copyfile(tmp / "m.db", store / "m.db")  # the same runs, served again
    with running_server(store, prefix="/mlflow") as prefixed:
        want = {r.meta["run"]: r.verdict for r in doctor(url)[0]}
        reports, _ = doctor(prefixed)
        assert {r.meta["run"]: r.verdict for r in reports} == want
        assert all(r.file.startswith(prefixed + "/#/experiments/") for r in reports)
        code, out, err, doc = run_cli("judge", reports[0].file, "--json")
        assert code in (0, 1) and doc["reports"][0]["meta"]["run"] == reports[0].meta["run"]


# --------------------------------------------------------------------------- a fake API


def test_a_fake_api_is_read_page_by_page(clean_env):
    with Fake(mlflow_api) as fake:
        code, out, err, doc = run_cli("doctor", fake.url, "--json")
    assert code == 1, err
    (rep,) = doc["reports"]
    assert rep["file"] == f"{fake.url}/#/experiments/7/runs/abc123"
    assert rep["meta"]["run"] == "fake-run" and rep["meta"]["experiment"] == "fake-exp"
    assert rep["records"] == 60 and rep["verdict"] == "FAIL"
    assert any(f["id"] == "TP-NAN" for f in rep["findings"])
    assert not any("Authorization" in h for h in fake.headers)


def test_the_token_is_sent_and_never_printed(clean_env):
    clean_env.setenv("MLFLOW_TRACKING_TOKEN", TOKEN)
    with Fake(mlflow_api) as fake:
        code, out, err, doc = run_cli("doctor", fake.url, "--json")
        code2, out2, err2, _ = run_cli("doctor", fake.url, "-v")
    assert code == code2 == 1
    assert fake.headers and all(h.get("Authorization") == f"Bearer {TOKEN}" for h in fake.headers)
    assert TOKEN not in out + err + out2 + err2


def test_user_and_password_are_sent_as_basic_auth(clean_env):
    import base64

    clean_env.setenv("MLFLOW_TRACKING_USERNAME", "ana")
    clean_env.setenv("MLFLOW_TRACKING_PASSWORD", PASSWORD)
    clean_env.setenv("MLFLOW_TRACKING_TOKEN", TOKEN)  # MLflow's client prefers Basic too
    with Fake(mlflow_api) as fake:
        code, out, err, _ = run_cli("doctor", fake.url)
    want = "Basic " + base64.b64encode(f"ana:{PASSWORD}".encode()).decode()
    assert fake.headers and all(h.get("Authorization") == want for h in fake.headers)
    assert PASSWORD not in out + err and TOKEN not in out + err


def _answer(status: int, ctype: str, data: bytes):
    return lambda fake, path, query, body: (status, ctype, data)


def _echo_token(fake, path, query, body):
    return 401, "application/json", json.dumps({"error_code": "UNAUTHENTICATED", "message": f"bad {TOKEN}"}).encode()


@pytest.mark.parametrize(
    "answer, reason",
    [
        (_answer(200, "text/html", b"<!DOCTYPE html><html><body>login</body></html>"), "the answer is an HTML page"),
        (_answer(200, "text/plain", b"hello"), "the answer is not JSON"),
        (_answer(200, "application/json", b'{"experiments": "all of them"}'), "unexpected answer"),
        (_answer(200, "application/json", b"[1, 2]"), "not a JSON object"),
        (_answer(500, "text/plain", b"Internal Server Error"), "HTTP 500"),
        (_answer(302, "text/plain", b""), "a redirect (not followed)"),
        (_echo_token, "HTTP 401, not allowed"),
    ],
)
def test_a_server_answering_garbage_is_one_line_exit_2(clean_env, answer, reason):
    clean_env.setenv("MLFLOW_TRACKING_TOKEN", TOKEN)
    with Fake(answer) as fake:
        code, out, err, _ = run_cli("doctor", fake.url)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"trainproof: {fake.url}: ") and reason in lines[0], err
    assert "Traceback" not in out + err and TOKEN not in out + err


@pytest.mark.slow
def test_a_slow_server_times_out(clean_env):
    def slow(fake, path, query, body):
        fake.release.wait(30)  # released when the test leaves the server
        return 200, "application/json", b"{}"

    clean_env.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "0.5")
    with Fake(slow) as fake:
        t = time.monotonic()
        code, out, err, _ = run_cli("doctor", fake.url)
        took = time.monotonic() - t
    assert code == 2 and took < 20
    assert (
        err.strip()
        == f"trainproof: {fake.url}: experiments/search: no answer within 0.5 s (MLFLOW_HTTP_REQUEST_TIMEOUT sets the limit)"
    )


@pytest.mark.slow
def test_a_server_that_trickles_its_answer_times_out(clean_env):
    """The limit bounds the whole request, not each read: a byte every 0.3 s would take
    minutes to finish a page."""

    def trickle(fake, path, query, body):
        data = b'{"experiments": [' + b" " * 2000 + b"]}"
        return 200, "application/json", [data[i : i + 1] for i in range(len(data))]

    clean_env.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "1")
    with Fake(trickle) as fake:
        t = time.monotonic()
        code, out, err, _ = run_cli("doctor", fake.url)
        took = time.monotonic() - t
    assert code == 2 and took < 30, took
    assert (
        err.strip()
        == (
            f"trainproof: {fake.url}: experiments/search: no answer within 1 s (MLFLOW_HTTP_REQUEST_TIMEOUT sets the limit)"
        )
        or "no complete answer within 1 s" in err
    ), err


def test_paging_that_never_ends_is_an_error(clean_env, monkeypatch):
    monkeypatch.setattr(mlflow_server, "_MAX_PAGES", 5)
    pages = []

    def endless(fake, path, query, body):
        pages.append(1)
        doc = {"experiments": [{"experiment_id": str(len(pages)), "name": f"e{len(pages)}"}]}
        doc["next_page_token"] = f"tok{len(pages)}"
        return 200, "application/json", json.dumps(doc).encode()

    with Fake(endless) as fake:
        code, out, err, _ = run_cli("doctor", fake.url)
    assert code == 2 and "more than 5 pages: the paging does not end" in err
    assert len(pages) == 5


def test_a_server_that_is_down_is_one_line_exit_2(clean_env):
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    code, out, err, _ = run_cli("doctor", url)
    assert code == 2
    assert err.strip() == f"trainproof: {url}: cannot connect: connection refused (is the server running?)"
    code, out, err, _ = run_cli("judge", f"{url}/#/experiments/1/runs/abc")
    assert code == 2 and "connection refused" in err and "Traceback" not in out + err


def test_a_run_that_cannot_be_fetched_is_an_error_report(clean_env):
    def broken_history(fake, path, query, body):
        if path.endswith("/metrics/get-history"):
            return 500, "text/plain", b"boom"
        return mlflow_api(fake, path, query, body)

    with Fake(broken_history) as fake:
        code, out, err, doc = run_cli("doctor", fake.url, "--json")
    assert code == 2
    (rep,) = doc["reports"]
    assert rep["verdict"] == "NOT-CHECKED" and "metrics/get-history: HTTP 500" in rep["error"]


def test_credentials_in_the_url_are_refused(clean_env):
    with Fake(mlflow_api) as fake:
        url = fake.url.replace("http://", "http://ana@")
        code, out, err, _ = run_cli("doctor", url)
    assert code == 2 and "credentials in the URL are not used" in err
    assert not fake.headers  # nothing was asked


def test_experiment_and_run_need_a_server(tmp_path):
    code, out, err, _ = run_cli("doctor", str(tmp_path), "--experiment", "x")
    assert code == 2 and "--experiment and --run narrow an MLflow tracking server" in err


@pytest.mark.parametrize(
    "url, yes",
    [
        ("http://host:5000", True),
        ("http://host:5000/", True),
        ("https://mlflow.example.org", True),
        ("http://host:5000/#/experiments/3", True),
        ("http://host:5000/#/experiments/3/runs/0a1b", True),
        ("http://host:5000/#/experiments/3/runs/0a1b/model-metrics", True),
        ("http://host:5000/runs/train.jsonl", False),
        ("http://host:5000/mlflow", True),  # behind a path prefix
        ("http://host:5000/mlflow/#/experiments/3/runs/0a1b", True),
        ("https://example.org/team/mlflow/", True),
        ("http://host:5000/?x=1", False),
        ("http://host:5000/#/models", False),
        ("http://host:port", False),
        ("s3://bucket/runs", False),
        ("C://runs", False),
        (Path("http:/host"), False),
    ],
)
def test_what_is_a_tracking_server(url, yes):
    assert is_tracking_server(url) is yes


@pytest.mark.parametrize(
    "answer",
    [
        _answer(200, "text/html", b"<!DOCTYPE html><html><body>login</body></html>"),
        _answer(200, "application/json", b"[" * 100_000 + b"]" * 100_000),
        _echo_token,
    ],
)
def test_a_server_answering_garbage_beside_a_tree_never_hides_the_trees_fail(clean_env, tmp_path, answer):
    # doctor TREE URL: the server is one NOT-CHECKED entry with its reason, the tree's runs
    # are judged and its FAIL still decides the exit code.
    clean_env.setenv("MLFLOW_TRACKING_TOKEN", TOKEN)
    tree = tmp_path / "tree"
    tree.mkdir()
    rows = [{"step": i, "loss": 2.0 * 0.98**i if i < 60 else 0.6 * 1.08 ** (i - 60)} for i in range(120)]
    (tree / "fail.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with Fake(answer) as fake:
        code, out, err, _ = run_cli("doctor", str(tree), fake.url, "--json")
    doc = json.loads(out)
    by_file = {r["file"]: r["verdict"] for r in doc["reports"]}
    assert code == 1, (out, err)
    assert by_file[str(tree / "fail.jsonl")] == "FAIL"
    assert by_file[fake.url] == "NOT-CHECKED"
    assert "Traceback" not in out + err and TOKEN not in out + err
