"""Logs that hold several runs (trainproof.aliases.runs): a W&B panel export of several runs
is read and judged run by run, never mixed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from trainproof.aliases import resolve, words
from trainproof.aliases.runs import is_band, run_of, runs_in, split_run
from trainproof.api import doctor, judge, judge_all, read_runlog, read_runlogs
from trainproof.cli import cli


def test_a_panel_export_column_splits_at_its_last_separator() -> None:
    assert split_run("my run - 3 - train/loss") == ("my run - 3", "train/loss")
    assert split_run("train/loss") == (None, "train/loss")
    assert split_run(" alpha  -  lr") == (" alpha ", " lr")  # nothing stripped here
    assert run_of(" alpha  -  lr") == "alpha" and run_of("Step") is None
    # The table, the key words and the runs read a column the same way.
    assert resolve([" alpha  -  lr"])["lr"]["source"] == " alpha  -  lr"
    assert words("a - b - Train/EvalLoss") == ["train", "eval", "loss"]


def test_band_columns_are_any_case() -> None:
    assert is_band("run - loss__MIN") and is_band("run - loss__max") and is_band("loss__Min")
    assert not is_band("loss__mean") and not is_band("min_loss")


def test_two_runs_make_a_log_of_several_runs() -> None:
    assert runs_in(["Step", "a - loss", "a - loss__MIN"]) == {}
    assert runs_in(["Step", "b - loss", "a - loss", "a - lr"]) == {"a": ["a - loss", "a - lr"], "b": ["b - loss"]}


def test_wandb_export_of_several_runs_judges_one_run(tmp_path: Path) -> None:
    head = ["Step"]
    for r in ("alpha", "beta", "gamma"):
        head += [f"{r} - train/loss", f"{r} - train/loss__MIN", f"{r} - train/loss__MAX"]
    rows = [",".join(head)]
    for s in range(40):
        cells = [str(s)]
        for r, n in (("alpha", 20), ("beta", 40), ("gamma", 30)):
            v = "" if s >= n else repr(3.0 - 0.01 * s + (5.0 if r == "beta" and s > 30 else 0.0))
            cells += [v, v, v]
        rows.append(",".join(cells))
    p = tmp_path / "wandb_export.csv"
    p.write_text("\n".join(rows) + "\n")
    run = read_runlog(p)
    assert run.get("loss").key == "beta - train/loss"  # the run with the most points
    assert not [k for k in run.series if k.startswith(("alpha", "gamma"))]  # never mixed
    note = next(n for n in run.notes if "3 runs in one log" in n)
    assert "'alpha'" in note and "'gamma'" in note
    # --map picks the run it names.
    run = read_runlog(p, mapping={"loss": "gamma - train/loss"})
    assert run.get("loss").key == "gamma - train/loss"
    assert not [k for k in run.series if k.startswith(("alpha", "beta"))]


def _wandb_export(path: Path, runs: dict[str, list[float]]) -> Path:
    """A W&B panel export of several runs: ``Step`` then, per run, its value and the
    ``__MIN``/``__MAX`` band columns; a run shorter than the longest leaves empty cells."""
    head = ["Step"]
    for r in runs:
        head += [f"{r} - train/loss", f"{r} - train/loss__MIN", f"{r} - train/loss__MAX"]
    n = max(len(v) for v in runs.values())
    rows = [",".join(head)]
    for s in range(n):
        cells = [str(s)]
        for v in runs.values():
            c = repr(v[s]) if s < len(v) else ""
            cells += [c, c, c]
        rows.append(",".join(cells))
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("n_points", [40, 120])
def test_every_run_of_a_wandb_export_is_judged(tmp_path: Path, n_points: int) -> None:
    # Three runs in one export; the diverging one is the shortest, so judging only the
    # run with the most points would PASS the file.
    rng = np.random.default_rng(n_points)
    healthy = [3.0 * (1 + s) ** -0.3 * (1 + 0.01 * rng.standard_normal()) for s in range(n_points)]
    short = n_points * 2 // 3
    diverged = [
        3.0 * (1 + s) ** -0.3 if s < short // 3 else 3.0 * (1 + s) ** -0.3 * (1 + 0.2 * (s - short // 3))
        for s in range(short)
    ]
    p = _wandb_export(tmp_path / "wandb_export.csv", {"alpha": healthy, "beta": diverged, "gamma": healthy[:-5]})
    runs = read_runlogs(p)
    assert [r.meta["run"] for r in runs] == ["alpha", "beta", "gamma"]
    for r in runs:  # each holds its own run's columns only, and its own steps
        assert {s.key.split(" - ")[0] for s in r.series.values()} == {r.meta["run"]}
    assert runs[1].step_range == (0.0, float(short - 1))
    reports = judge_all(p)
    assert [r.meta["run"] for r in reports][0] == "beta" and reports[0].verdict.value == "FAIL"
    assert {r.verdict.value for r in reports[1:]} == {"PASS"}
    res = CliRunner().invoke(cli, ["epoch", str(p), "--json"])
    assert res.exit_code == 1, res.output
    doc = json.loads(res.stdout)
    assert [r["meta"]["run"] for r in doc["reports"]][0] == "beta" and len(doc["reports"]) == 3
    # doctor: one row per run.
    reps, _ = doctor(tmp_path)
    assert sorted(r.meta["run"] for r in reps) == ["alpha", "beta", "gamma"]
    # --map names one run: only that run.
    only = read_runlogs(p, mapping={"loss": "gamma - train/loss"})
    assert len(only) == 1 and only[0].get("loss").key == "gamma - train/loss"


def test_one_run_log_gives_one_runlog(tmp_path: Path) -> None:
    p = tmp_path / "m.csv"
    p.write_text("step,train/loss\n" + "".join(f"{s},{3.0 / (1 + s)}\n" for s in range(30)))
    runs = read_runlogs(p)
    assert len(runs) == 1 and "run" not in runs[0].meta
    assert judge_all(p)[0].file == judge(p).file == str(p)
