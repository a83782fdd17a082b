"""The issue-20 acceptance case: one throwaway project holding a ``wandb/`` folder of
offline runs, an ``mlflow.db`` and a Trackio database, and a live MLflow tracking server on
loopback, each with a healthy, a NaN and a diverged run written by the real client;
``doctor`` on the project and the server judges every run, named and grouped by its
tracker, with the verdicts the same metrics get as JSONL.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import _wandb_runs as W
import pytest
from _mlflow_server import SERVER_ENV, running_server

from trainproof.api import doctor, judge_all
from trainproof.findings import EXPERIMENT_SEP

pytestmark = pytest.mark.slow

KINDS = ("healthy", "nan", "diverged")

_MLFLOW = textwrap.dedent(
    """
    import json, sys, time
    import mlflow
    from mlflow.entities import Metric

    mlflow.set_tracking_uri(sys.argv[1])
    mlflow.set_experiment("sweep")
    client = mlflow.MlflowClient()
    for name, losses in json.load(open(sys.argv[2])).items():
        with mlflow.start_run(run_name=name) as run:
            # One batch per run, not one request per step: the same rows in the store, in
            # seconds instead of a minute against a server on a loaded machine.
            t = int(time.time() * 1000)
            metrics = []
            for i, v in enumerate(losses):
                metrics += [Metric("loss", v, t + i, i), Metric("learning_rate", 1e-3 * (1 - i / len(losses)), t + i, i)]
            for k in range(0, len(metrics), 900):  # log_batch takes at most 1000 metrics
                client.log_batch(run.info.run_id, metrics=metrics[k : k + 900])
    """
)

_TRACKIO = textwrap.dedent(
    """
    import json, sys
    import trackio

    for name, losses in json.load(open(sys.argv[1])).items():
        trackio.init(project="sweep", name=name, embed=False, auto_log_gpu=False, auto_log_cpu=False)
        for i, v in enumerate(losses):
            trackio.log({"train/loss": v, "train/learning_rate": 1e-3 * (1 - i / len(losses))}, step=i)
        trackio.finish()
    """
)


def _child(script: str, args: list[str], env: dict, cwd: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", script, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    for client in ("wandb", "mlflow", "trackio"):
        pytest.importorskip(client)
    root = tmp_path_factory.mktemp("project")
    specs = [W.Spec(name=k, kind=k) for k in KINDS]
    curves = {s.name: W.curve(s) for s in specs}
    # The client's cache lies outside the project, as a user's ~/.cache does: every run's
    # logs/debug-core.log is a link that leaves the project.
    W.write_runs(root, specs, home=tmp_path_factory.mktemp("wandb-home"))
    (root / "curves.json").write_text(json.dumps(curves))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TRACKIO_", "HF_"))}
    env.update(
        HOME=str(root / "home"),
        HF_HOME=str(root / "hf"),
        TRACKIO_DIR=str(root / "trackio"),
        HF_HUB_OFFLINE="1",
        GRADIO_ANALYTICS_ENABLED="False",
        MLFLOW_TRACKING_URI="",
    )
    _child(_MLFLOW, ["sqlite:///" + str(root / "mlflow.db"), str(root / "curves.json")], env, root)
    _child(_TRACKIO, [str(root / "curves.json")], env, root)
    # The server's own store lies outside the project, so doctor meets its runs only
    # through the server.
    with running_server(tmp_path_factory.mktemp("server"), {"HOME": str(root / "home")}) as url:
        _child(_MLFLOW, [url, str(root / "curves.json")], {**env, **SERVER_ENV}, root)
        yield root, _jsonl_verdicts(tmp_path_factory, curves), url


def _jsonl_verdicts(tmp_path_factory, curves: dict[str, list[float]]) -> dict[str, str]:
    """Run name -> the verdict of the same losses written as JSONL (outside the project)."""
    ref = tmp_path_factory.mktemp("jsonl")
    want = {}
    for name, losses in curves.items():
        p = ref / f"{name}.jsonl"
        p.write_text("".join(json.dumps({"step": i, "loss": v}) + "\n" for i, v in enumerate(losses)))
        want[name] = judge_all(p)[0].verdict.value
    return want


def test_doctor_judges_every_tracked_run_as_its_jsonl(project):
    root, want, url = project
    reports, _ignored = doctor([root, url])
    got: dict[str, dict[str, str]] = {}
    for r in reports:
        assert r.error is None, (r.file, r.error)
        got.setdefault(r.format, {})[r.meta["run"]] = r.verdict.value
    assert set(got) == {"wandb", "mlflow_db", "trackio", "mlflow"}
    for fmt, verdicts in got.items():
        assert verdicts == want, fmt
    assert want["healthy"] != "FAIL" and want["nan"] == want["diverged"] == "FAIL"


def test_runs_are_grouped_by_their_trackers_experiment_per_store(project):
    root, _, url = project
    reports, _ = doctor([root, url])
    groups = {r.experiment for r in reports}
    assert groups == {
        f"{root / 'wandb'}{EXPERIMENT_SEP}trainproof-tests",
        f"{root / 'mlflow.db'}{EXPERIMENT_SEP}sweep",
        f"{root / 'trackio' / 'sweep.db'}{EXPERIMENT_SEP}sweep",
        f"{url}{EXPERIMENT_SEP}sweep",
    }


def test_the_cli_table_names_each_run_and_exits_1(project):
    root, _, url = project
    proc = subprocess.run(
        [sys.executable, "-m", "trainproof", "doctor", str(root), url], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.count("run diverged") >= 4 and proc.stdout.count("run nan") >= 4
    assert "Traceback" not in proc.stderr
