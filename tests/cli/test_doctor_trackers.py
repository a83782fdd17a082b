"""doctor's walk and grouping for the places trackers keep runs: W&B run folders are
returned as folders (their insides, the client's debug logs and ``latest-run`` link are
not runs), and runs a tracker names an experiment of are grouped by it, per store."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trainproof.api import _experiment_key, _with_experiments
from trainproof.discover import walk
from trainproof.findings import EXPERIMENT_SEP, Report
from trainproof.render.text import _run_label

LOSS_LINES = "".join(f"step {s} loss {2.0 - s / 100:.3f}\n" for s in range(50))


def _wandb_tree(root: Path) -> tuple[Path, Path]:
    wb = root / "wandb"
    new = wb / "offline-run-20240102_101500-ab12cd34"
    old = wb / "run-20230101_000000-zz99"
    (new / "files").mkdir(parents=True)
    (new / "logs").mkdir()
    (new / "tmp").mkdir()
    (new / "run-ab12cd34.wandb").write_bytes(b":W&B\x00\x00\x00")
    (new / "files" / "output.log").write_text(LOSS_LINES)  # the console capture: same run
    (new / "files" / "wandb-summary.json").write_text('{"loss": 0.5}')
    (new / "logs" / "debug.log").write_text("2024 INFO wandb setup\n")
    (old / "files").mkdir(parents=True)
    (old / "files" / "wandb-history.jsonl").write_text('{"_step": 0, "loss": 2.0}\n')
    for name in ("debug.log", "debug-internal.log", "debug-cli.root.log"):
        (wb / name).write_text("2024 INFO wandb\n")
    os.symlink(new.name, wb / "latest-run")
    return new, old


def _wandb_run(wandb_dir: Path, name: str) -> Path:
    run = wandb_dir / name
    (run / "files").mkdir(parents=True)
    (run / f"run-{name.rsplit('-', 1)[1]}.wandb").write_bytes(b":W&B\x00\x00\x00")
    return run


def test_walk_returns_wandb_run_folders_only(tmp_path):
    new, old = _wandb_tree(tmp_path)
    (tmp_path / "train.log").write_text(LOSS_LINES)  # a log beside the wandb folder still counts
    assert walk(tmp_path) == sorted([new, old, tmp_path / "train.log"])


def test_a_folder_named_like_a_run_without_wandb_files_is_walked_into(tmp_path):
    # Only the name: not a W&B run folder, so its logs are found as files.
    d = tmp_path / "run-20240101_000000-abc"
    (d / "logs").mkdir(parents=True)
    (d / "logs" / "train.jsonl").write_text('{"step": 1, "loss": 1.0}\n')
    assert walk(tmp_path) == [d / "logs" / "train.jsonl"]


def test_latest_run_elsewhere_is_an_ordinary_folder(tmp_path):
    # The link is skipped only in a wandb/ folder, where the client makes it.
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "train.jsonl").write_text('{"step": 1, "loss": 1.0}\n')
    os.symlink("real", tmp_path / "latest-run")
    # The folder is searched once, through whichever name comes first.
    assert [p.resolve() for p in walk(tmp_path)] == [(tmp_path / "real" / "train.jsonl").resolve()]
    assert walk(tmp_path) == [tmp_path / "latest-run" / "train.jsonl"]


def _rep(file: str, **meta) -> Report:
    return Report(file=file, meta=meta)


@pytest.mark.parametrize(
    "rep, key",
    [
        # W&B run folders: the wandb/ folder, then the project.
        (_rep("p/wandb/run-20240101_000000-ab", experiment="gpt", run="a"), f"p/wandb{EXPERIMENT_SEP}gpt"),
        # A SQLite store of several runs: the file, then the experiment.
        (_rep("p/mlflow.db", experiment="Default", run="r1"), f"p/mlflow.db{EXPERIMENT_SEP}Default"),
        # A tracking server's run: the server, then the experiment.
        (
            _rep("http://127.0.0.1:5000/#/experiments/1/runs/abc", experiment="e", run="r"),
            f"http://127.0.0.1:5000{EXPERIMENT_SEP}e",
        ),
        # No tracker experiment: the runs of one file, or the folder the path names.
        (_rep("p/export.csv", run="r"), "p/export.csv"),
        (_rep("sweep/seed_1/train.jsonl"), "sweep"),
        (_rep("p/train.jsonl"), None),
    ],
)
def test_experiment_key(rep, key):
    assert _experiment_key(rep) == key


def test_runs_group_by_experiment_per_store():
    reps = [
        _rep("p/mlflow.db", experiment="a", run="1"),
        _rep("p/mlflow.db", experiment="a", run="2"),
        _rep("p/mlflow.db", experiment="b", run="3"),  # alone in its experiment: no group
        _rep("q/mlflow.db", experiment="a", run="4"),  # the same name in another store
    ]
    got = [r.experiment for r in _with_experiments(reps)]
    assert got == [f"p/mlflow.db{EXPERIMENT_SEP}a"] * 2 + [None, None]


def test_run_label_strips_the_store_place():
    exp = f"p/wandb{EXPERIMENT_SEP}gpt"
    assert _run_label(_rep("p/wandb/run-20240101_000000-ab", run="brisk-1"), exp) == (
        "  run-20240101_000000-ab — run brisk-1"
    )
    assert _run_label(_rep("p/mlflow.db", run="r1"), f"p/mlflow.db{EXPERIMENT_SEP}a") == "  run r1"


def test_a_run_folders_client_log_linking_out_of_the_tree_does_not_hide_the_run(tmp_path):
    """W&B links every run's logs/debug-core.log into ~/.cache, outside the project: the
    reader never reads logs/, so the run is judged; a link out of files/ (which an older
    client's run is read from) still keeps the run out."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "core-debug.log").write_text("debug\n")
    project = tmp_path / "project"
    good = _wandb_run(project / "wandb", "run-20261203_101010-aaaa1111")
    (good / "logs").mkdir()
    (good / "logs" / "debug-core.log").symlink_to(outside / "core-debug.log")
    bad = _wandb_run(project / "wandb", "run-20261203_111111-bbbb2222")
    (bad / "files" / "wandb-summary.json").symlink_to(outside / "core-debug.log")
    ignored: list[dict] = []
    assert walk(project, limits=ignored) == [good]
    assert [i["file"] for i in ignored] == [str(bad)]
    assert "symlink that leaves the searched tree" in ignored[0]["reason"]


@pytest.mark.parametrize(
    "name",
    [
        "run-20261203_101010-ab12cd34",
        "offline-run-20261203_101010-ab12cd34-1",  # a second folder made in the same second
        "run-20261203_101010-my_run-id",  # an id the user chose
    ],
)
def test_every_name_wandb_gives_a_run_folder_is_a_run(tmp_path, name):
    run = _wandb_run(tmp_path / "wandb", name)
    (run / "files" / "output.log").write_text(LOSS_LINES)  # the console capture: not a run of its own
    assert walk(tmp_path) == [run]


def test_a_store_run_is_named_by_its_name_id_and_experiment():
    """Tracker run names need not be unique and a lone run's experiment has no group
    header: the text names a store's run by its name, a short id, and its experiment."""
    from trainproof.render.text import run_words

    store = Report(file="ml/mlflow.db", meta={"run": "train", "run_id": "3f9a1c77e2d04b", "experiment": "bert/lr1e-4"})
    assert run_words(store) == "run train [3f9a1c77] in bert/lr1e-4"
    assert run_words(store, grouped=True) == "run train [3f9a1c77]"  # the group header names it
    # a W&B run folder names its id, a server URL its run id: not said twice
    wb = Report(file="wandb/run-20261203_000000-ab12cd34", meta={"run": "r", "run_id": "ab12cd34", "experiment": "p"})
    assert run_words(wb) == "run r in p"
    assert run_words(Report(file="a.jsonl", meta={})) == ""
    assert _run_label(store, None) == "ml/mlflow.db — run train [3f9a1c77] in bert/lr1e-4"


def test_a_wandb_folder_is_known_by_its_real_name_through_a_link(tmp_path, monkeypatch):
    # Without its latest-run link, a client's folder is known by its name alone: the real
    # one, through a link named otherwise or through ".", not the written one.
    from trainproof.formats import client_entries

    _wandb_tree(tmp_path / "z")
    (tmp_path / "z" / "wandb" / "latest-run").unlink()
    names = os.listdir(tmp_path / "z" / "wandb")
    own = {"debug.log", "debug-internal.log", "debug-cli.root.log"}
    os.symlink(tmp_path / "z" / "wandb", tmp_path / "runs")
    assert client_entries(str(tmp_path / "runs"), names) == own
    monkeypatch.chdir(tmp_path / "z" / "wandb")
    assert client_entries(".", names) == own
    os.symlink(tmp_path / "z", tmp_path / "w")  # a link above: the folder's own name counts
    assert client_entries(str(tmp_path / "w" / "wandb"), names) == own
    (tmp_path / "z" / "other").mkdir()
    assert client_entries(str(tmp_path / "z" / "other"), names) == frozenset()


def test_latest_run_is_skipped_from_inside_the_wandb_folder_and_in_a_renamed_copy(tmp_path, monkeypatch):
    import shutil

    new, old = _wandb_tree(tmp_path)
    monkeypatch.chdir(tmp_path / "wandb")
    assert sorted(p.name for p in walk(Path("."))) == sorted([new.name, old.name])
    copy = tmp_path / "runs_backup"
    shutil.copytree(tmp_path / "wandb", copy, symlinks=True)
    assert sorted(p.name for p in walk(copy)) == sorted([new.name, old.name])
