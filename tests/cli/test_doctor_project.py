"""``doctor .`` at the root of a real project (issue 18): only training logs are runs, one
run written several ways is one row, and the exit code follows the runs, never a stray
non-log. The project is built by tests/_project_tree.py with the writers' own layouts
(torch's SummaryWriter for event files)."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

from trainproof.api import same_run
from trainproof.discover import experiment_of
from trainproof.render.text import QUIET_ROWS
from trainproof.runlog import RunLog, Series

from _project_tree import build_project, hf_history, write_hf_output, write_lightning_version, write_non_logs
from conftest import healthy_rows, run_subprocess, write_jsonl

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs")


def doctor_json(root, *args):
    # A real process with a deadline: a FIFO opened by mistake would block it.
    res = run_subprocess("doctor", ".", "--json", *args, cwd=root, timeout=300)
    return res.returncode, json.loads(res.stdout)


@pytest.mark.slow
def test_a_clean_project_is_two_runs_and_exit_0(tmp_path):
    root = build_project(tmp_path / "proj")
    code, doc = doctor_json(root)
    rows = {r["file"]: r for r in doc["reports"]}
    assert code == 0, [(f, r["verdict"], r["error"]) for f, r in rows.items()]
    assert len(rows) == 2
    (hf,) = [r for r in rows.values() if r["format"] == "hf"]
    assert hf["file"] == "outputs/bert-run/trainer_state.json" and hf["verdict"] == "PASS"
    assert [os.path.dirname(a) for a in hf["also"]] == ["outputs/bert-run/runs/Dec02_10-00-00_host"]
    assert hf["snapshots"] == [
        "outputs/bert-run/checkpoint-100/trainer_state.json",
        "outputs/bert-run/checkpoint-200/trainer_state.json",
    ]
    (pl,) = [r for r in rows.values() if r["file"].startswith("lightning_logs/version_0/")]
    # the event file (the richer source) is judged; the CSV of the same run is its other file
    assert os.path.basename(pl["file"]).startswith("events.out.tfevents.") and pl["format"] == "tfevents"
    assert pl["also"] == ["lightning_logs/version_0/metrics.csv"]
    ignored = {i["file"]: i["reason"] for i in doc["ignored"]}
    for name in (
        "configs/train.json",
        "config.json",
        "wandb-summary.json",
        "outputs/bert-run/all_results.json",
        "empty.jsonl",
        "metrics.json",
        "logs/empty.csv",
        "data.csv",
    ):
        assert name in ignored, name
    assert "not a regular file" in ignored["metrics.jsonl"]  # the FIFO, listed, never opened
    for f in [*rows, *ignored]:
        assert not f.startswith((".git", ".venv", "node_modules", ".cache", "env/")), f
    assert not any(f.startswith("src") for f in rows)  # documents and sources about event files


@pytest.mark.slow
@pytest.mark.parametrize("broken", ["hf", "lightning"])
def test_a_broken_run_is_one_fail_row(tmp_path, broken):
    root = tmp_path / "proj"
    write_non_logs(root)
    write_hf_output(root / "outputs" / "bert-run", hf_history(diverge_at=150 if broken == "hf" else None))
    write_lightning_version(root / "lightning_logs" / "version_0", nan_at=1200 if broken == "lightning" else None)
    code, doc = doctor_json(root)
    assert code == 1
    verdicts = sorted((r["verdict"], r["format"]) for r in doc["reports"])
    assert len(verdicts) == 2 and [v for v, _ in verdicts].count("FAIL") == 1
    (fail,) = [r for r in doc["reports"] if r["verdict"] == "FAIL"]
    assert fail["also"], "the other source of the failing run is folded, not a second FAIL row"


@pytest.mark.slow
def test_different_runs_in_one_folder_stay_apart(tmp_path):
    """An event file beside a CSV of another run (a folder reused by a second seed), and an
    HF output folder whose runs/ still holds an earlier run's events: same places, other
    values, so each is its own row."""
    root = tmp_path / "proj"
    v = root / "lightning_logs" / "version_0"
    write_lightning_version(v)
    csv = (v / "metrics.csv").read_text().splitlines()
    shifted = [csv[0]] + [
        ",".join(c if i != 2 or not c else repr(float(c) * 1.01) for i, c in enumerate(row.split(",")))
        for row in csv[1:]
    ]
    (v / "metrics.csv").write_text("\n".join(shifted) + "\n")
    out = root / "outputs" / "run"
    write_hf_output(out, hf_history(), events=False)
    write_hf_output(tmp_path / "older", hf_history(steps=200, diverge_at=100), checkpoints=())
    os.rename(tmp_path / "older" / "runs", out / "runs")
    code, doc = doctor_json(root)
    assert code == 1  # the earlier run diverged
    files = sorted(r["file"] for r in doc["reports"])
    assert len(files) == 4 and not any(r.get("also") for r in doc["reports"]), files


@pytest.mark.slow
def test_a_copy_of_a_log_is_one_row_wherever_it_lies(tmp_path):
    root = tmp_path / "proj"
    rows = [
        {"step": s, "loss": float(2.0 - s / 200 if s < 150 else 1.25 * 1.08 ** (s - 150))} for s in range(0, 300, 5)
    ]
    write_jsonl(root / "runs" / "monitor.jsonl", rows)
    write_jsonl(root / "backup" / "2024" / "12" / "monitor.jsonl", rows)
    write_jsonl(root / "runs" / "other.jsonl", healthy_rows())
    code, doc = doctor_json(root)
    assert code == 1
    by_file = {r["file"]: r for r in doc["reports"]}
    assert set(by_file) == {"runs/monitor.jsonl", "runs/other.jsonl"}
    assert by_file["runs/monitor.jsonl"]["also"] == ["backup/2024/12/monitor.jsonl"]
    assert "also" not in by_file["runs/other.jsonl"]


@pytest.mark.slow
def test_a_real_log_that_cannot_be_read_is_exit_2_and_a_fail_still_wins(tmp_path):
    root = tmp_path / "proj"
    write_non_logs(root)
    torn = root / "outputs" / "x" / "trainer_state.json"
    torn.parent.mkdir(parents=True)
    torn.write_text('{"log_history": [{"step": 10, "loss": 2.0}, {"step": 20, "lo')
    code, doc = doctor_json(root)
    assert code == 2
    (r,) = doc["reports"]
    assert r["file"] == "outputs/x/trainer_state.json" and r["verdict"] == "NOT-CHECKED"
    assert "TP-DATA-DROPPED" in [f["id"] for f in r["findings"]]
    write_jsonl(root / "runs" / "bad.jsonl", [{"step": i, "loss": float("nan") if i > 30 else 1.0} for i in range(60)])
    assert doctor_json(root)[0] == 1


@pytest.mark.slow
def test_runs_of_one_experiment_share_it(tmp_path):
    root = tmp_path / "proj"
    for i in range(3):
        write_jsonl(root / "lightning_logs" / f"version_{i}" / "metrics.jsonl", healthy_rows(seed=i))
        write_jsonl(root / "sweep" / f"seed_{i}" / "train.jsonl", healthy_rows(seed=10 + i))
    write_jsonl(root / "alone" / "train.jsonl", healthy_rows(seed=99))
    code, doc = doctor_json(root)
    assert code == 0
    exp = {r["file"]: r.get("experiment") for r in doc["reports"]}
    assert [exp[f"lightning_logs/version_{i}/metrics.jsonl"] for i in range(3)] == ["lightning_logs"] * 3
    assert [exp[f"sweep/seed_{i}/train.jsonl"] for i in range(3)] == ["sweep"] * 3
    assert exp["alone/train.jsonl"] is None


@pytest.mark.parametrize(
    "path, want",
    [
        ("lightning_logs/version_3/metrics.csv", "lightning_logs"),
        ("a/b/seed_1/train.jsonl", "a/b"),
        ("a/bert-seed42/train.jsonl", "a/bert"),
        ("wandb/run-20240101_000000-ab12cd/files/wandb-history.jsonl", "wandb"),
        ("wandb/offline-run-20240101_000000-ab12cd", "wandb"),
        ("mlruns/0/0123abcd", "mlruns/0"),
        ("runs/monitor.jsonl", None),
        ("train.jsonl", None),
        ("./version_0/m.csv", "."),
    ],
)
def test_experiment_of(path, want):
    assert experiment_of(path) == want


@pytest.mark.parametrize(
    "reader, path, want",
    [
        ("csv", "lightning_logs/version_3/metrics.csv", "lightning_logs"),
        ("mlflow", "mlruns/0/0123abcd", "mlruns/0"),
        ("wandb", "p/wandb/run-20240101_000000-ab12/", "p/wandb"),
    ],
)
def test_a_writers_run_folders_are_named_by_its_reader_alone(reader, path, want, monkeypatch):
    """discover.py holds no writer's run-folder names: without the reader's ``run_part``
    hook the folder is no longer a run of an experiment."""
    import importlib

    module = importlib.import_module(f"trainproof.formats.{reader}")
    assert experiment_of(path) == want
    monkeypatch.setattr(module, "run_part", lambda name, above: False)
    assert experiment_of(path) is None


@pytest.mark.parametrize(
    "folder",
    [
        "run-20240101_000000-ab-12",
        "run-20240101_000000-ab12-1",
        "offline-run-20240101_000000-a.b",
        "run-20240101_000000-ab12",
    ],
)
def test_a_run_folder_the_wandb_reader_claims_names_a_run_of_its_experiment(folder):
    """Every folder name the W&B reader takes for a run folder (run ids with ``-``, the
    ``-N`` of a second folder in one second) is a run of the experiment above it."""
    from trainproof.formats import wandb

    assert wandb.RUN_DIR.match(folder)
    assert experiment_of(f"p/wandb/{folder}/") == "p/wandb"
    assert experiment_of(f"p/wandb/{folder}/files/wandb-history.jsonl") == "p/wandb"


def _run(steps, values, fmt="jsonl") -> RunLog:
    steps, values = np.asarray(steps, float), np.asarray(values, float)
    s = Series("loss", "loss", steps, values, np.arange(len(steps)))
    return RunLog("x", fmt, {"loss": s}, records=len(steps))


def test_same_run_holds_to_float32_and_no_further():
    rng = np.random.default_rng(0)
    steps = np.arange(0, 500, 5)
    loss = 2.0 * np.exp(-steps / 200) + 0.3 + rng.normal(0, 0.01, steps.size)
    as_f32 = loss.astype(np.float32).astype(float)
    assert same_run(_run(steps, loss), _run(steps, as_f32, "tfevents"))
    assert same_run(_run(steps, loss), _run(steps[::2], as_f32[::2]))  # one logs every other step
    other_seed = 2.0 * np.exp(-steps / 200) + 0.3 + rng.normal(0, 0.01, steps.size)
    assert not same_run(_run(steps, loss), _run(steps, other_seed))
    assert not same_run(_run(steps, loss), _run(steps, loss * (1 + 1e-4)))
    assert not same_run(_run(steps[:2], loss[:2]), _run(steps[:2], loss[:2]))  # too few to tell
    assert not same_run(_run(steps, loss), _run(steps + 10_000, loss))  # no common step
    nan = loss.copy()
    nan[50:] = np.nan
    assert same_run(_run(steps, nan), _run(steps, nan.astype(np.float32).astype(float)))


@pytest.mark.slow
def test_the_text_output_of_a_clean_project_counts_two_runs(tmp_path):
    root = build_project(tmp_path / "proj")
    res = run_subprocess("doctor", ".", cwd=root, timeout=300, env={"COLUMNS": "80"})
    assert res.returncode == 0
    lines = res.stdout.rstrip("\n").splitlines()
    assert lines[-1] == "2 runs: 0 FAIL, 0 WARN, 2 PASS, 0 not judged"
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)


def _examples():
    from pathlib import Path

    return Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.slow
def test_quiet_is_a_ci_screen_for_the_examples():
    res = run_subprocess("doctor", str(_examples()), "--quiet", env={"COLUMNS": "80"}, timeout=600)
    assert res.returncode == 1
    lines = res.stdout.rstrip("\n").splitlines()
    assert all(len(line) <= 80 for line in lines)
    # Every row that decides the exit code (each FAIL) is shown; the others are capped.
    rows = [line.split()[0] for line in lines if line.startswith(("FAIL", "WARN", "NOT-CHECKED"))]
    assert 0 < rows.count("FAIL") and len(rows) - rows.count("FAIL") <= QUIET_ROWS
    assert lines[-1].endswith("not judged") and " FAIL, " in lines[-1]
    assert not any(line.startswith("PASS") for line in lines)
    assert any("more: --only FAIL,WARN" in line for line in lines)  # the cut is said


@pytest.mark.slow
def test_only_verbose_and_default_views(tmp_path):
    root = tmp_path / "proj"
    write_jsonl(root / "good" / "train.jsonl", healthy_rows())
    write_jsonl(
        root / "bad" / "train.jsonl",
        [{"step": i, "loss": float("nan") if i > 30 else 1.0 / (i + 1)} for i in range(60)],
    )
    default = run_subprocess("doctor", ".", cwd=root, timeout=300)
    assert default.returncode == 1
    assert "bad/train.jsonl\n  format" in default.stdout and "good/train.jsonl\n  format" not in default.stdout
    verbose = run_subprocess("doctor", ".", "--verbose", cwd=root, timeout=300)
    assert "good/train.jsonl\n  format" in verbose.stdout and "TP-PASS" in verbose.stdout
    only = run_subprocess("doctor", ".", "--only", "PASS", cwd=root, timeout=300)
    assert only.returncode == 1  # the exit code follows every run, not the rows shown
    rows = [line.split()[0] for line in only.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    assert rows == ["FAIL", "PASS"]  # the FAIL that makes exit 1 is shown whatever --only says
    assert only.stdout.rstrip().splitlines()[-1] == "2 runs: 1 FAIL, 0 WARN, 1 PASS, 0 not judged"
    bad = run_subprocess("doctor", ".", "--only", "GREAT", cwd=root, timeout=300)
    assert bad.returncode == 2 and "not a verdict" in bad.stderr
    js = [
        run_subprocess("doctor", ".", "--json", *flags, cwd=root, timeout=300).stdout
        for flags in ((), ("--quiet",), ("--only", "PASS"), ("--verbose",))
    ]
    assert len(set(js)) == 1  # --json is the same whatever the view


@pytest.mark.slow
def test_long_lines_wrap_with_their_indent_at_80_columns(tmp_path):
    log = write_jsonl(
        tmp_path / "run.jsonl", [{"step": i, "loss": float("nan") if i > 30 else 1.0 / (i + 1)} for i in range(60)]
    )
    res = run_subprocess("epoch", str(log), env={"COLUMNS": "80"}, timeout=300)
    lines = res.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    evidence = [i for i, line in enumerate(lines) if line.startswith("        ")]
    assert evidence and all(lines[i].strip() for i in evidence)
    piped = run_subprocess("epoch", str(log), timeout=300, env={"COLUMNS": ""})
    assert max(len(line) for line in piped.stdout.splitlines()) > 80  # a pipe keeps lines whole


@pytest.mark.slow
def test_quiet_row_of_an_unreadable_log_names_its_reason(tmp_path):
    root = tmp_path / "proj"
    (root / "out").mkdir(parents=True)
    (root / "out" / "trainer_state.json").write_text("{not json")
    write_jsonl(root / "good" / "train.jsonl", healthy_rows())  # no folder shared by every row
    res = run_subprocess("doctor", ".", "--quiet", cwd=root, timeout=300)
    assert res.returncode == 2
    (row,) = [line for line in res.stdout.splitlines() if line.startswith("NOT-CHECKED")]
    assert "not a training log" in row or "could not" in row or "JSON" in row, row
