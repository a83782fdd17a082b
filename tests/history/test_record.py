"""What the history keeps of a run: its curves (bounded, extremes and non-finite markers
kept), its summary figures, its experiment, run name and commit."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from trainproof.history.record import (
    CURVE_POINTS,
    SUMMARY_KEYS,
    Curve,
    RunRecord,
    commit_of,
    experiment_of,
    lr_shape,
    runlog_of,
    summarize,
)
from trainproof.rules.engine import judge_runlog
from trainproof.runlog import Series

from conftest import make_run


def test_a_curve_keeps_extremes_and_non_finite_points_within_its_bound():
    n = 20_000
    steps = np.arange(n, dtype=np.float64)
    values = np.linspace(3, 1, n)
    values[1234] = 50.0  # a spike
    values[7777] = -4.0  # a dip
    values[[5000, 15000]] = [np.nan, np.inf]
    c = Curve.of(steps, values)
    assert len(c) <= CURVE_POINTS
    assert c.values[c.steps == 1234][0] == 50.0 and c.values[c.steps == 7777][0] == -4.0
    assert np.isnan(c.values[c.steps == 5000][0]) and np.isposinf(c.values[c.steps == 15000][0])
    assert c.steps[0] == 0 and c.steps[-1] == n - 1


def test_a_curve_of_only_non_finite_points_is_still_bounded():
    c = Curve.of(np.arange(5000.0), np.full(5000, np.nan))
    assert 0 < len(c) <= CURVE_POINTS and c.steps[-1] == 4999


def test_a_curve_round_trips_through_its_dict_and_refuses_unequal_arrays():
    c = Curve(np.array([1.0, 2.0, 3.0]), np.array([np.nan, -np.inf, 0.5]))
    assert Curve.from_dict(c.to_dict()) == c
    assert c.to_dict()["values"][:2] == ["nan", "-inf"]
    with pytest.raises(ValueError, match="one length"):
        Curve(np.zeros(3), np.zeros(2))


@pytest.mark.slow
def test_summarize_reads_levels_improvement_noise_and_schedule(tmp_path):
    rng = np.random.default_rng(0)
    loss = np.linspace(2.0, 0.5, 200) + rng.normal(0, 0.01, 200)
    lr = np.concatenate([np.linspace(0, 1e-3, 20), np.linspace(1e-3, 1e-5, 180)])
    run = make_run(loss=loss, lr=lr, eval_loss=[None] * 99 + [1.0] + [None] * 99 + [0.7])
    run.meta["max_steps"] = 4000
    rep = judge_runlog(run)
    rec = summarize(run, rep, experiment="exp", run="r1", source="/x/r1", commit="abc", now=12.5)
    s = rec.summary
    assert set(SUMMARY_KEYS) <= set(s)
    assert s["steps"] == 2000 and s["points"] == 200 and s["max_steps"] == 4000
    assert s["loss_first"] == pytest.approx(2.0, abs=0.1) and s["loss_last"] == pytest.approx(0.5, abs=0.1)
    assert s["loss_best"] <= s["loss_last"] + 0.02
    assert s["eval_loss_first"] == 1.0 and s["eval_loss_last"] == 0.7 and s["eval_loss_best"] == 0.7
    assert s["improvement"] == pytest.approx(0.75, abs=0.05)
    assert s["noise"] == pytest.approx(0.01, rel=0.3)
    assert s["lr_shape"] == "warmup-decay" and s["duration_s"] is None
    assert rec.verdict == rep.verdict.value and rec.findings == tuple(dict.fromkeys(rep.ids()))
    assert rec.recorded_at == 12.5 and rec.commit == "abc" and rec.id is None
    assert set(rec.curves) == {"loss", "lr", "eval_loss"}
    assert all(len(c) <= CURVE_POINTS for c in rec.curves.values())


def test_a_record_keeps_no_raw_log_content(tmp_path):
    run = make_run(loss=np.linspace(2, 1, 50))
    rec = summarize(run, judge_runlog(run), experiment="e", now=0)
    assert not hasattr(rec, "lines") and all(set(vars(c)) == {"steps", "values"} for c in rec.curves.values())


@pytest.mark.parametrize(
    ("lr", "shape"),
    [
        ([1e-3] * 50, "constant"),
        (list(np.linspace(1e-3, 0, 50)), "decay"),
        (list(np.linspace(0, 1e-3, 50)), "warmup"),
        (list(np.linspace(0, 1e-3, 10)) + list(np.linspace(1e-3, 1e-5, 40)), "warmup-decay"),
        (list(np.linspace(1e-3, 1e-5, 20)) * 3, "cyclic"),
    ],
)
def test_lr_shape(lr, shape):
    v = np.array(lr, dtype=np.float64)
    assert lr_shape(Series("lr", "lr", np.arange(v.size, dtype=np.float64), v, np.arange(v.size))) == shape


def test_lr_shape_is_none_without_a_learning_rate():
    assert lr_shape(None) is None


@pytest.mark.slow
def test_the_experiment_is_explicit_then_the_trackers_then_the_run_family_then_the_folder(tmp_path):
    (tmp_path / "sweep" / "seed_1").mkdir(parents=True)
    log = tmp_path / "sweep" / "seed_1" / "train.jsonl"
    log.write_text("")
    run = make_run(loss=[1.0, 0.5])
    run.path = str(log)
    assert experiment_of(run, explicit="mine") == "mine"
    assert experiment_of(run) == (tmp_path / "sweep").as_posix()
    run.meta["experiment"] = "proj"
    assert experiment_of(run) == "proj"
    lone = tmp_path / "solo.jsonl"
    assert experiment_of(path=str(lone)) == tmp_path.as_posix()


def test_a_records_run_name_is_its_path_below_the_experiment(tmp_path):
    run = make_run(loss=np.linspace(2, 1, 30))
    run.path = str(tmp_path / "sweep" / "seed_1" / "train.jsonl")
    rec = summarize(run, judge_runlog(run), experiment=experiment_of(run), now=0)
    assert rec.run == "seed_1/train.jsonl" and rec.source == run.path


def test_commit_of_reads_the_checked_out_commit(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "f").write_text("x")
    subprocess.run([*git, "add", "f"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    (repo / "logs").mkdir()
    assert commit_of(str(repo / "logs" / "train.jsonl")) == head
    subprocess.run([*git, "pack-refs", "--all"], check=True)
    assert commit_of(str(repo / "logs" / "train.jsonl")) == head
    wt = tmp_path / "wt"
    subprocess.run([*git, "worktree", "add", "-q", "-b", "other", str(wt)], check=True)
    assert commit_of(str(wt / "x.jsonl")) == head
    assert commit_of(str(tmp_path / "elsewhere.jsonl")) is None
    assert commit_of("http://host/run") is None


def test_a_record_gives_back_a_runlog_of_its_curves():
    run = make_run(loss=np.linspace(2, 1, 40), lr=[1e-3] * 40)
    run.meta["max_steps"] = 800
    rec = summarize(run, judge_runlog(run), experiment="e", run="r", now=0)
    back = runlog_of(RunRecord(**{**vars(rec), "id": 7}))
    assert set(back.series) == {"loss", "lr"} and back.meta["max_steps"] == 800
    assert np.array_equal(back.series["loss"].values, run.series["loss"].values)
    assert back.step_range == (10.0, 400.0) and "history #7" in back.path
    assert judge_runlog(back).verdict.value in ("PASS", "WARN")


def test_a_record_pickles_for_a_worker_process():
    import pickle

    run = make_run(loss=np.linspace(2, 1, 40), lr=[1e-3] * 40)
    rec = summarize(run, judge_runlog(run), experiment="e", run="r", now=1.0)
    assert pickle.loads(pickle.dumps(rec)) == rec
