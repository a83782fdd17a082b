"""The MLflow file-store reader (trainproof.formats.mlflow).

The store is written by hand in the layout MLflow's ``FileStore`` uses:
``mlruns/<experiment id>/meta.yaml`` and ``mlruns/<experiment id>/<run id>/{meta.yaml,
metrics/, params/, tags/}``; one file per metric (a ``/`` in the name is a sub-folder), one
``<unix ms> <value> <step>`` line per logged value, values written with ``str(float)``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from _mlflow_store import (  # noqa: F401
    RUN_ID,
    T0,  # noqa: F401
    healthy_points,
    make_store,
    metric_line,  # noqa: F401
)

from trainproof.api import doctor, read_runlog
from trainproof.formats import NotALog, ReadError, detect, mlflow

from conftest import run_cli

# --------------------------------------------------------------------------- run folders


def test_run_folder_with_nested_metric_names(tmp_path: Path) -> None:
    run_dir = make_store(
        tmp_path,
        {
            "loss": [(2.5, 0), (1.75, 1), (1.25, 2)],
            "train/lr": [(1e-05, 0), (2e-05, 1), (3e-05, 2)],
            "val_loss": [(2.0, 1)],
            "accuracy": [(0.5, 0), (0.6, 2)],
        },
    )
    assert detect(run_dir) is mlflow
    run = read_runlog(run_dir)
    assert run.format == "mlflow"
    assert run.meta["metric_files"] == ["accuracy", "loss", "train/lr", "val_loss"]
    loss = run.get("loss")
    assert loss.steps.tolist() == [0, 1, 2] and loss.values.tolist() == [2.5, 1.75, 1.25]
    assert loss.lines.tolist() == [1, 2, 3]  # line within the metric's own file
    lr = run.get("lr")
    assert lr.key == "train/lr" and lr.values.tolist() == [1e-05, 2e-05, 3e-05]
    assert run.get("eval_loss").key == "val_loss" and run.get("eval_loss").steps.tolist() == [1]
    assert run.get("accuracy").steps.tolist() == [0, 2]
    assert not run.notes


def test_epoch_command_on_a_run_folder(tmp_path: Path) -> None:
    run_dir = make_store(tmp_path, {"loss": healthy_points(), "lr": [(1e-3, s) for s in range(40)]})
    code, out, err, doc = run_cli("epoch", str(run_dir), "--json")
    assert code == 0
    (rep,) = doc["reports"]
    assert rep["format"] == "mlflow" and rep["verdict"] == "PASS"
    assert rep["records"] == 80
    assert rep["mapping"]["loss"]["source"] == "loss" and rep["mapping"]["lr"]["source"] == "lr"


def test_non_finite_values_are_kept_and_fail_the_run(tmp_path: Path) -> None:
    pts = healthy_points(30) + [(math.nan, 30), (math.inf, 31), (-math.inf, 32)]
    run_dir = make_store(tmp_path, {"loss": pts})
    assert "nan 30" in (run_dir / "metrics" / "loss").read_text()
    run = read_runlog(run_dir)
    v = run.get("loss").values
    assert np.isnan(v[30]) and v[31] == math.inf and v[32] == -math.inf
    code, _, _, doc = run_cli("epoch", str(run_dir), "--json")
    assert code == 1
    assert next(f for f in doc["reports"][0]["findings"] if f["id"] == "TP-NAN")["step"] == 30


def test_bad_lines_are_skipped_and_noted(tmp_path: Path) -> None:
    run_dir = make_store(tmp_path, {"loss": [(1.0, 0), (0.5, 1)], "train/lr": [(0.1, 0)]})
    f = run_dir / "metrics" / "loss"
    f.write_text(
        f.read_text()
        + "this is not a metric line\n\n"
        + metric_line(9, 0.25, 2)
        + f"{T0} 0.5\n"
        + f"{T0} abc 3\n"
        + f"{T0} 0.1 4"
    )  # torn last line has no newline
    run = read_runlog(run_dir)
    loss = run.get("loss")
    # The torn last line is not read: its step may be cut ("42" torn to "4").
    assert loss.steps.tolist() == [0, 1, 2]
    assert loss.values.tolist() == [1.0, 0.5, 0.25]
    assert loss.lines.tolist() == [1, 2, 5]  # the blank line 4 counts, and is not "bad"
    assert run.notes == [
        "metrics/loss: the last line (8) has no line end: cut mid-write (a run killed or still "
        "writing?), so it was not read",
        "metrics/loss: skipped 3 line(s) that are not 'timestamp value step'",
    ]


def test_steps_logged_twice_keep_both_writes(tmp_path: Path) -> None:
    # Step 1 logged twice without the step going back (no resume): both writes are judged.
    run_dir = make_store(tmp_path, {"loss": [(1.0, 0), (0.9, 1), (0.8, 1), (0.7, 2)]})
    run = read_runlog(run_dir)
    assert run.get("loss").steps.tolist() == [0, 1, 1, 2]
    assert run.get("loss").values.tolist() == [1.0, 0.9, 0.8, 0.7]
    assert any("logged more than once" in n and "every write is kept" in n for n in run.notes)


def test_steps_logged_again_after_the_step_went_back_later_wins(tmp_path: Path) -> None:
    run_dir = make_store(tmp_path, {"loss": [(1.0, 0), (0.9, 1), (0.8, 2), (0.85, 1), (0.7, 2)]})
    run = read_runlog(run_dir)
    assert run.get("loss").values.tolist() == [1.0, 0.85, 0.7]
    assert any("logged more than once" in n and "later write was kept" in n for n in run.notes)


def test_folder_with_empty_metrics_is_not_a_run(tmp_path: Path) -> None:
    run_dir = make_store(tmp_path, {})
    with pytest.raises(NotALog, match="holds no run"):
        read_runlog(run_dir)
    with pytest.raises(ReadError, match="holds no mlflow run"):
        read_runlog(run_dir, "mlflow")
    code, _, err, _ = run_cli("epoch", str(run_dir))
    assert code == 2 and "holds no run" in err


def test_empty_metric_files_are_no_records(tmp_path: Path) -> None:
    run_dir = make_store(tmp_path, {"loss": []})
    run = read_runlog(run_dir)
    assert run.records == 0
    code, _, _, doc = run_cli("epoch", str(run_dir), "--json")
    assert code == 2 and doc["reports"][0]["findings"][0]["id"] == "TP-NO-RECORDS"


# --------------------------------------------------------------------------- single metric files


def test_single_metric_file_named_after_the_file(tmp_path: Path) -> None:
    run_dir = make_store(tmp_path, {"loss": healthy_points(5), "train/lr": [(1e-3, 0)]})
    p = run_dir / "metrics" / "loss"
    assert detect(p) is mlflow
    run = read_runlog(p)
    assert run.format == "mlflow"
    assert run.get("loss").key == "loss"
    assert run.get("loss").values.tolist() == [v for v, _ in healthy_points(5)]
    nested = read_runlog(run_dir / "metrics" / "train" / "lr")
    assert nested.get("lr").key == "lr" and nested.get("lr").values.tolist() == [1e-3]


def test_single_file_being_written_has_a_torn_last_line(tmp_path: Path) -> None:
    p = tmp_path / "loss"
    p.write_text(metric_line(0, 1.0, 0) + metric_line(1, 0.9, 1) + f"{T0 + 5000} 0.8")
    run = read_runlog(p)  # still recognised: only the unfinished line fails to match
    assert run.get("loss").values.tolist() == [1.0, 0.9]
    assert run.notes == ["loss: skipped 1 line(s) that are not 'timestamp value step'"]


def test_single_line_metric_file(tmp_path: Path) -> None:
    p = tmp_path / "loss"
    p.write_text(f"{T0} 3.2727866172790527 0\n")  # one value
    run = read_runlog(p)
    assert run.get("loss").values.tolist() == [3.2727866172790527]
    code, _, _, doc = run_cli("epoch", str(p), "--json")
    assert code == 2  # one point: nothing can be judged
    assert doc["reports"][0]["verdict"] == "NOT-CHECKED"


@pytest.mark.parametrize(
    "text",
    [
        "step,loss\n1,2.0\n",
        "1664364007310,0.5,1\n",
        "16643 0.5 1\n",
        "1664364007310 0.5 1.5\n",
        "1664364007310 0.5 1\nnot a metric\n1664364007310 0.4 2\n",
    ],
    ids=["csv", "commas", "short-timestamp", "float-step", "junk-in-the-middle"],
)
def test_sniff_rejects(tmp_path: Path, text: str) -> None:
    assert not mlflow.sniff(tmp_path / "loss", text)


def test_sniff_accepts_a_head_cut_mid_line(tmp_path: Path) -> None:
    head = "".join(metric_line(i, 0.5, i) for i in range(5000))[:65536]
    assert not head.endswith("\n")
    assert mlflow.sniff(tmp_path / "loss", head)


# --------------------------------------------------------------------------- doctor


def test_doctor_finds_run_folders(tmp_path: Path) -> None:
    a = make_store(tmp_path, {"loss": healthy_points(), "lr": [(1e-3, s) for s in range(40)]})
    b = make_store(tmp_path, {"loss": healthy_points(30) + [(math.nan, 30)]}, run_id="0123456789abcdef")
    c = make_store(tmp_path, {"loss": healthy_points()}, exp="7", run_id="feedface")
    reports, ignored = doctor(tmp_path)
    by = {r.file: r for r in reports}
    assert set(by) == {str(a), str(b), str(c)}
    assert all(r.format == "mlflow" for r in reports)
    assert by[str(a)].verdict.value == "PASS" and by[str(b)].verdict.value == "FAIL"
    # The metric files inside a run folder are not judged again one by one.
    assert not any("metrics" in r.file for r in reports)
    assert not ignored
    code, out, err, doc = run_cli("doctor", str(tmp_path), "--json")
    assert code == 1
    assert sorted(r["file"] for r in doc["reports"]) == sorted(map(str, (a, b, c)))


# --------------------------------------------------------------------------- corpus (skips without ../shared)


def test_corpus_single_value_loss(shared: Path) -> None:
    p = shared / "corpus" / "mlflow" / "mlflow-single-value-loss" / "loss"
    ts, val, step = p.read_text().split()
    run = read_runlog(p)
    assert run.format == "mlflow"
    assert run.get("loss").values.tolist() == [float(val)]
    assert run.get("loss").steps.tolist() == [float(step)]


# --------------------------------------------------------------------------- no step= given


def test_metrics_logged_without_a_step_are_read_in_logged_order(tmp_path: Path) -> None:
    train = [(2.0 - 0.05 * i, 0) for i in range(25)]
    valid = [(1.5 + 0.02 * i, 0) for i in range(25)]
    run_dir = make_store(tmp_path, {"train/loss": train, "valid/loss": valid, "valid/score": [(0.5, 0)]})
    run = read_runlog(run_dir)
    loss = run.get("loss")
    assert loss.steps.tolist() == list(map(float, range(25)))
    assert loss.values.tolist() == [v for v, _ in train]
    ev = run.get("eval_loss")
    assert ev.key == "valid/loss" and ev.values.tolist() == [v for v, _ in valid]
    assert any("metrics/train/loss: all 25 values are logged at step 0" in n for n in run.notes)
    assert run.get("valid/score").steps.tolist() == [0.0]  # one value: its own step


def test_steps_that_move_are_kept_as_logged(tmp_path: Path) -> None:
    # The first lines share a step (two writes of step 0), then the step moves: as logged.
    pts = [(3.0, 0), (2.9, 0)] + [(2.0 - 0.1 * i, i) for i in range(1, 10)]
    run = read_runlog(make_store(tmp_path, {"loss": pts}))
    assert run.get("loss").steps.tolist() == [0.0] + list(map(float, range(10)))
    assert run.get("loss").values[:2].tolist() == [3.0, 2.9]  # no resume: both writes of step 0
    assert not any("values are logged at step" in n for n in run.notes)


def test_doctor_leaves_out_a_run_its_file_store_marks_deleted(tmp_path: Path) -> None:
    # mlflow.delete_run keeps the folder, its meta.yaml saying lifecycle_stage: deleted
    # (in MLflow's bin); the SQLite store and the server leave such runs out, and so does
    # the walk of a file store (a helper's diverged deleted run made doctor exit 1)
    make_store(tmp_path, {"loss": healthy_points()}, run_id="a" * 32)
    gone = make_store(tmp_path, {"loss": [(float(10 + i), i) for i in range(40)]}, run_id="b" * 32)
    meta = gone / "meta.yaml"
    meta.write_text(meta.read_text().replace("lifecycle_stage: active", "lifecycle_stage: deleted"))
    reports, ignored = doctor(tmp_path)
    assert [r.verdict.value for r in reports] == ["PASS"] and "a" * 32 in reports[0].file
    assert any(i["file"] == str(gone) and "deleted" in i["reason"] for i in ignored), ignored
    # pointed at on its own, the run is still read
    assert read_runlog(gone).series["loss"].values.size == 40


def test_two_tracker_runs_of_one_seed_are_two_runs(tmp_path: Path) -> None:
    # the same configuration and seed logged twice holds the same numbers; a tracker that
    # gave them two run ids holds two runs (doctor showed one row with the other "also")
    for rid in ("c" * 32, "d" * 32):
        make_store(tmp_path, {"loss": healthy_points(), "lr": [(1e-3, s) for _, s in healthy_points()]}, run_id=rid)
    reports, _ = doctor(tmp_path)
    assert len(reports) == 2 and not any(r.also for r in reports), [(r.file, r.also) for r in reports]
