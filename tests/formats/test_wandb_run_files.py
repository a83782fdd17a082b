"""Which ``.wandb`` file of a W&B run folder is read: the run's own log, a regular file,
never another ``.wandb`` file beside it and never a symlink, in the folder given and in
the folders of a resumed run (``formats.wandb.resumed_parts``). Logs framed by hand
(``_fuzz_logs.wandb_log_file``, run id ``abc123``), so no wandb client is needed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from trainproof.api import read_runlogs
from trainproof.formats import wandb as tp_wandb

import _fuzz_logs as F
from conftest import run_subprocess

RID = "abc123"  # the run id in _fuzz_logs.wandb_log_file's run record


def _run_folder(wandb_dir: Path, when: str, kind: str) -> Path:
    d = wandb_dir / f"run-{when}-{RID}"
    (d / "files").mkdir(parents=True)
    (d / f"run-{RID}.wandb").write_bytes(F.wandb_log_file(kind))
    return d


def _doctor(root: Path) -> tuple[int, dict]:
    proc = run_subprocess("doctor", str(root), "--json", "--jobs", "1")
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def _judge(path: Path) -> tuple[int, dict]:
    proc = run_subprocess("judge", str(path), "--json")
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


@pytest.mark.slow
def test_a_second_wandb_file_does_not_hide_the_folders_own_log(tmp_path):
    run = _run_folder(tmp_path / "wandb", "20240101_000000", "diverge")
    # Sorts after the run's own log: the last by name was read, and it is healthy.
    (run / "run-zzzzzz.wandb").write_bytes(F.wandb_log_file("healthy"))
    assert tp_wandb.log_file(run) == run / f"run-{RID}.wandb"
    code, doc = _doctor(tmp_path)
    assert code == 1, doc
    [rep] = doc["reports"]
    assert rep["verdict"] == "FAIL"
    assert any("run-zzzzzz.wandb" in n and "not read" in n for n in rep["notes"]), rep["notes"]


def test_a_folder_made_in_the_same_second_reads_its_own_log(tmp_path):
    run = tmp_path / f"run-20240101_000000-{RID}-1"
    run.mkdir()
    (run / f"run-{RID}.wandb").write_bytes(F.wandb_log_file("diverge"))
    (run / "run-zzzzzz.wandb").write_bytes(F.wandb_log_file("healthy"))
    assert tp_wandb.log_file(run) == run / f"run-{RID}.wandb"


@pytest.mark.slow
def test_a_symlinked_log_in_the_folder_given_is_never_read(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.wandb").write_bytes(F.wandb_log_file("diverge"))
    tree = tmp_path / "tree"
    run = _run_folder(tree / "wandb", "20240101_000000", "healthy")
    os.symlink(outside / "secret.wandb", run / "run-zzzzzz.wandb")
    assert tp_wandb.log_file(run) == run / f"run-{RID}.wandb"
    assert tp_wandb.log_files(run) == [run / f"run-{RID}.wandb"]
    code, doc = _judge(run)
    assert code == 0 and doc["reports"][0]["verdict"] == "PASS", doc
    # With no log of its own, a folder holding only a link has no log at all.
    (run / f"run-{RID}.wandb").unlink()
    assert tp_wandb.log_file(run) is None


@pytest.mark.slow
def test_a_resumed_runs_sibling_folder_never_reads_a_link_out_of_the_tree(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.wandb").write_bytes(F.wandb_log_file("diverge"))
    tree = tmp_path / "tree"
    first = _run_folder(tree / "wandb", "20240101_000000", "healthy")
    newest = _run_folder(tree / "wandb", "20240102_000000", "healthy")
    # In the earlier session's folder, a link that sorts after the run's own log.
    os.symlink(outside / "secret.wandb", first / "run-zzzzzz.wandb")
    assert tp_wandb.resumed_parts(newest) == [first, newest]
    [log] = read_runlogs(newest)
    assert not any(n.startswith("skipped") for n in log.notes)
    code, doc = _judge(newest)
    assert code == 0, doc
    assert [r["verdict"] for r in doc["reports"]] == ["PASS"]
    code, doc = _doctor(tree)
    assert code == 0, doc
    assert [r["verdict"] for r in doc["reports"]] == ["PASS"]


@pytest.mark.slow
def test_a_resumed_part_whose_own_log_is_a_link_is_not_a_part(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / f"run-{RID}.wandb").write_bytes(F.wandb_log_file("diverge"))
    tree = tmp_path / "tree"
    first = tree / "wandb" / f"run-20240101_000000-{RID}"
    first.mkdir(parents=True)
    os.symlink(outside / f"run-{RID}.wandb", first / f"run-{RID}.wandb")
    newest = _run_folder(tree / "wandb", "20240102_000000", "healthy")
    assert tp_wandb.resumed_parts(newest) == [newest]
    code, doc = _judge(newest)
    assert code == 0 and [r["verdict"] for r in doc["reports"]] == ["PASS"], doc


def test_an_mlflow_experiments_meta_yaml_that_links_out_is_not_read(tmp_path):
    """The MLflow file store's reader reads the experiment folder's ``meta.yaml`` (its
    name) beside the run folder: a link there out of the tree is not followed, and a FIFO
    there is not waited on."""
    from _mlflow_store import healthy_points, make_store

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("name: the-secret-name\n")
    tree = tmp_path / "tree"
    run = make_store(tree, {"loss": healthy_points()})
    meta = run.parent / "meta.yaml"
    meta.unlink()
    os.symlink(outside / "secret", meta)
    [log] = read_runlogs(run)
    assert log.meta.get("experiment") != "the-secret-name"
    meta.unlink()
    os.mkfifo(meta)
    [log] = read_runlogs(run)
    assert "experiment" not in log.meta
