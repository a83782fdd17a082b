"""Issue 17, "safe to run on a pull request": a NaN is a NaN however it was spelled (a null or
an empty cell is absent, issue 31), a
repeated step is judged rather than overwritten, and the last of two ``log_history`` keys
is the one read.

Every log here is a real file written in ``tmp_path`` and judged by the CLI. The run is
200 steps whose loss falls with a little noise; the broken variant's loss is non-finite
from step 121 to the end.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from trainproof.api import read_runlog

from conftest import run_cli, run_subprocess

STEPS = 200
BAD_FROM = 121


def healthy_loss(step: int) -> float:
    """A falling loss with a deterministic wobble (noise for the rules to measure)."""
    return round(2.5 * math.exp(-step / 60) + 0.4 + 0.03 * math.sin(step * 1.7), 6)


HEALTHY = object()


def rows(bad=HEALTHY) -> list[dict]:
    """Dense rows, every metric on every row; from BAD_FROM on the loss and the gradient
    norm are ``bad`` (a value to write in their place, ``None`` for a null), unless the
    run is ``HEALTHY``."""
    out = []
    for s in range(1, STEPS + 1):
        r = {"step": s, "loss": healthy_loss(s), "grad_norm": round(1.0 + 0.1 * math.cos(s), 6), "learning_rate": 1e-4}
        if bad is not HEALTHY and s >= BAD_FROM:
            r["loss"] = r["grad_norm"] = bad
        out.append(r)
    return out


def write_jsonl(path: Path, recs: list[dict]) -> Path:
    # allow_nan: Python's own spelling of the reference case, the bare NaN token.
    path.write_text("".join(json.dumps(r, allow_nan=True) + "\n" for r in recs), encoding="utf-8")
    return path


def write_csv(path: Path, recs: list[dict], fields: list[str]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields, restval="")
        w.writeheader()
        for r in recs:
            w.writerow({k: ("" if v is None else v) for k, v in r.items()})
    return path


def write_trainer_state(path: Path, *histories: list[dict]) -> Path:
    """A trainer_state.json; several histories give several ``log_history`` keys (json.dumps
    cannot write a duplicate key, so the object is assembled by hand)."""
    parts = ['"best_metric": null', '"global_step": %d' % STEPS]
    parts += ['"log_history": ' + json.dumps(h, indent=2, allow_nan=True) for h in histories]
    parts.append('"max_steps": %d' % STEPS)
    path.write_text("{\n" + ",\n".join(parts) + "\n}\n", encoding="utf-8")
    return path


def hf_entries(recs: list[dict]) -> list[dict]:
    return [{"epoch": r["step"] / STEPS, **r} for r in recs]


def judged(path: Path) -> tuple[int, dict]:
    code, _, _, doc = run_cli("epoch", str(path), "--json")
    (rep,) = doc["reports"]
    return code, rep


def nan_finding(rep: dict) -> dict:
    (f,) = [f for f in rep["findings"] if f["id"] == "TP-NAN"]
    return f


# --------------------------------------------------------------------------- 1. spellings

#: The spellings of a non-finite value each format could not read before (JSON strings; in a
#: CSV, float() always read "nan" and "inf", but not the C runtime's). A null or an empty
#: cell is not among them: it is absent (section 1b).
JSON_SPELLINGS = ["nan", "NaN", "inf", "-inf", "Infinity", "1.#QNAN", "-1.#IND", "1.#INF", "nan(ind)"]
CSV_SPELLINGS = ["1.#QNAN", "-1.#IND", "1.#INF", "nan(ind)", "-nan(ind)"]
CASES = (
    [("jsonl", s) for s in JSON_SPELLINGS] + [("hf", s) for s in JSON_SPELLINGS] + [("csv", s) for s in CSV_SPELLINGS]
)


def write_run(tmp_path: Path, fmt: str, bad) -> Path:
    recs = rows(bad)
    if fmt == "jsonl":
        return write_jsonl(tmp_path / "metrics.jsonl", recs)
    if fmt == "hf":
        return write_trainer_state(tmp_path / "trainer_state.json", hf_entries(recs))
    return write_csv(tmp_path / "metrics.csv", recs, ["step", "loss", "grad_norm", "learning_rate"])


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    """The finding for Python json's spelling of the same run (the bare NaN token)."""
    code, rep = judged(write_run(tmp_path_factory.mktemp("ref"), "jsonl", math.nan))
    assert code == 1
    return nan_finding(rep)


@pytest.mark.slow
@pytest.mark.parametrize("fmt,bad", CASES, ids=[f"{f}-{b!r}" for f, b in CASES])
def test_every_spelling_of_a_nan_fails_as_the_nan_token_does(tmp_path, reference, fmt, bad) -> None:
    code, rep = judged(write_run(tmp_path, fmt, bad))
    assert code == 1 and rep["verdict"] == "FAIL"
    f = nan_finding(rep)
    assert f["step"] == BAD_FROM == reference["step"]
    assert f["data"] == reference["data"]
    want_inf = isinstance(bad, str) and "inf" in bad.lower() and "-" in bad
    loss = read_runlog(write_run(tmp_path, fmt, bad)).get("loss")
    bad_part = loss.values[loss.steps >= BAD_FROM]
    assert bad_part.size == STEPS - BAD_FROM + 1 and not np.isfinite(bad_part).any()
    assert np.isfinite(loss.values[loss.steps < BAD_FROM]).all()
    if want_inf:
        assert np.all(bad_part == -np.inf)


# --------------------------------------------------------------------------- 1b. nulls are absent


def stopped_finding(rep: dict) -> dict:
    (f,) = [f for f in rep["findings"] if f["id"] == "TP-LOSS-STOPPED"]
    return f


@pytest.mark.parametrize("fmt", ["jsonl", "hf", "csv"])
def test_a_loss_written_null_or_empty_to_the_end_is_absent_and_warned(tmp_path, fmt) -> None:
    """A null or an empty cell says nothing of the value: no TP-NAN, but the step where
    the loss stops is a WARN, so the verdict does not rest silently on part of the log."""
    p = write_run(tmp_path, fmt, None if fmt != "csv" else "")
    code, rep = judged(p)
    assert code == 0 and rep["verdict"] == "WARN", rep["findings"]
    assert not any(f["id"] == "TP-NAN" for f in rep["findings"])
    f = stopped_finding(rep)
    assert f["step"] == BAD_FROM - 1 and f["data"]["records_after"] == STEPS - BAD_FROM + 1
    assert f["data"]["held_empty"] == STEPS - BAD_FROM + 1
    loss = read_runlog(p).get("loss")
    assert np.isfinite(loss.values).all() and loss.steps[-1] == BAD_FROM - 1


@pytest.mark.slow
def test_a_null_loss_is_not_a_nan_in_a_real_process(tmp_path) -> None:
    p = write_jsonl(tmp_path / "metrics.jsonl", rows(None))
    res = run_subprocess("epoch", str(p), "--json", timeout=300)
    assert res.returncode == 0, res.stderr
    (rep,) = json.loads(res.stdout)["reports"]
    assert stopped_finding(rep)["step"] == BAD_FROM - 1
    assert any("stops at step" in n and "empty or null" in n for n in rep["notes"])


def test_pandas_dense_csv_with_blanks_after_step_120_warns_where_the_loss_stops(tmp_path) -> None:
    # pandas.to_csv of a frame whose loss is missing from step 121: empty cells, index column.
    p = tmp_path / "history.csv"
    lines = [",step,loss,lr"]
    for i, s in enumerate(range(1, STEPS + 1)):
        loss = "" if s >= BAD_FROM else repr(healthy_loss(s))
        lines.append(f"{i},{s},{loss},0.0001")
    p.write_text("\n".join(lines) + "\n")
    code, rep = judged(p)
    assert code == 0 and stopped_finding(rep)["step"] == BAD_FROM - 1
    assert not any(f["id"] == "TP-NAN" for f in rep["findings"])


def test_rollout_rows_with_empty_training_columns_are_not_nan(tmp_path) -> None:
    """A reinforcement-learning progress table: every 20th row is a rollout row that leaves
    every training column empty. Nothing is non-finite and nothing stops."""
    recs = []
    for s in range(1, STEPS + 1):
        recs.append({"step": s, "loss": healthy_loss(s), "lr": 1e-4, "ep_rew_mean": None})
        if s % 20 == 0:
            recs.append({"step": s, "loss": None, "lr": None, "ep_rew_mean": round(10 + s / 10, 3)})
    for p in (
        write_csv(tmp_path / "progress.csv", recs, ["step", "loss", "lr", "ep_rew_mean"]),
        write_jsonl(tmp_path / "progress.jsonl", recs),
    ):
        code, rep = judged(p)
        ids = {f["id"] for f in rep["findings"]}
        assert code == 0 and not ids & {"TP-NAN", "TP-LOSS-STOPPED"}, ids


def test_null_keys_on_most_rows_are_absent(tmp_path) -> None:
    """LLaMA-Factory writes ``"eval_loss": null`` and ``"reward": null`` on most rows."""
    recs = [
        {"current_steps": s, "loss": healthy_loss(s), "lr": 1e-4, "eval_loss": None, "reward": None}
        for s in range(1, STEPS + 1)
    ]
    for s in (50, 100, 150, 200):
        recs[s - 1]["eval_loss"] = round(healthy_loss(s) + 0.05, 6)
    code, rep = judged(write_jsonl(tmp_path / "trainer_log.jsonl", recs))
    assert code == 0 and rep["verdict"] == "PASS", rep["findings"]
    run = read_runlog(tmp_path / "trainer_log.jsonl")
    assert len(run.get("eval_loss")) == 4 and np.isfinite(run.get("eval_loss").values).all()


def lightning_rows(val_loss_bad: bool = False) -> list[dict]:
    """A Lightning CSVLogger table: train rows, and every 10th row a validation row on
    which the train columns are empty (and val_loss is empty on the train rows)."""
    out = []
    for s in range(1, STEPS + 1):
        epoch = (s - 1) // 10
        out.append({"step": s, "epoch": epoch, "train/loss": healthy_loss(s), "val_loss": None})
        if s % 10 == 0:
            out.append({"step": s, "epoch": epoch, "train/loss": None, "val_loss": healthy_loss(s) + 0.1})
    return out


@pytest.mark.parametrize("last_rows", [None, 11], ids=["200-steps", "one-epoch"])
def test_lightning_sparse_csv_blanks_stay_absent(tmp_path, last_rows) -> None:
    recs = lightning_rows()[:last_rows]
    p = write_csv(tmp_path / "metrics.csv", recs, ["step", "epoch", "train/loss", "val_loss"])
    code, rep = judged(p)
    assert not any(f["id"] == "TP-NAN" for f in rep["findings"])
    assert not any("stops at step" in n for n in rep["notes"])
    run = read_runlog(p)
    assert np.isfinite(run.get("loss").values).all() and np.isfinite(run.get("eval_loss").values).all()
    assert len(run.get("eval_loss")) == len(recs) // 11
    if last_rows is None:
        assert code == 0 and rep["verdict"] == "PASS"


def test_sparse_nulls_of_a_pandas_json_export_stay_absent(tmp_path) -> None:
    # pandas.to_json(orient="records", lines=True) of a sparse frame: null where not logged.
    p = write_jsonl(tmp_path / "history.jsonl", lightning_rows())
    code, rep = judged(p)
    assert code == 0 and rep["verdict"] == "PASS"
    assert not any("stops at step" in n for n in rep["notes"])


def test_a_loss_that_stops_while_records_go_on_is_noted(tmp_path) -> None:
    recs = rows()
    for r in recs[BAD_FROM - 1 :]:
        del r["loss"]  # the key is simply gone for the rest of the run
    code, rep = judged(write_jsonl(tmp_path / "metrics.jsonl", recs))
    (note,) = [n for n in rep["notes"] if "stops at step" in n]
    assert f"stops at step {BAD_FROM - 1} " in note and f"{STEPS - BAD_FROM + 1} more records" in note
    assert f"to step {STEPS}" in note


def test_a_last_validation_row_is_not_a_loss_that_stops(tmp_path) -> None:
    p = write_csv(tmp_path / "metrics.csv", lightning_rows(), ["step", "epoch", "train/loss", "val_loss"])
    assert not any("stops at step" in n for n in read_runlog(p).notes)


# --------------------------------------------------------------------------- 2. repeated steps


def test_two_ranks_writing_one_file_are_both_judged(tmp_path) -> None:
    recs = []
    for r in rows():
        other = {**r, "loss": round(r["loss"] + 0.01, 6)}
        if r["step"] >= BAD_FROM:
            r = {**r, "loss": math.nan}  # rank 0 (the first writer of each step) goes NaN
        recs += [r, other]
    code, rep = judged(write_jsonl(tmp_path / "metrics.jsonl", recs))
    assert code == 1 and nan_finding(rep)["step"] == BAD_FROM
    loss = read_runlog(tmp_path / "metrics.jsonl").get("loss")
    assert len(loss) == 2 * STEPS
    assert any("every write is kept" in n and "loss" in n for n in rep["notes"])


def test_micro_batch_rows_of_one_step_are_all_judged(tmp_path) -> None:
    recs = []
    for r in rows():
        for k in range(4):
            bad = r["step"] == BAD_FROM and k == 1
            recs.append({**r, "loss": math.nan if bad else round(r["loss"] + 0.001 * k, 6)})
    code, rep = judged(write_jsonl(tmp_path / "metrics.jsonl", recs))
    assert code == 1 and nan_finding(rep)["step"] == BAD_FROM


def test_a_resume_still_replaces_the_earlier_writes(tmp_path) -> None:
    first = [{"step": s, "loss": healthy_loss(s)} for s in range(1, 101)]
    resumed = [{"step": s, "loss": round(healthy_loss(s) * 1.01, 6)} for s in range(50, 151)]
    p = write_jsonl(tmp_path / "metrics.jsonl", first + resumed)
    run = read_runlog(p)
    loss = run.get("loss")
    assert loss.steps.tolist() == list(range(1, 151))
    assert loss.values[:49].tolist() == [r["loss"] for r in first[:49]]
    assert loss.values[49:].tolist() == [r["loss"] for r in resumed]
    assert loss.lines.tolist()[49:] == list(range(101, 202))
    assert any("later write was kept for: loss" in n for n in run.notes)
    assert not any("every write is kept" in n for n in run.notes)


# --------------------------------------------------------------------------- 3. log_history twice


def test_the_last_of_two_log_history_keys_is_read(tmp_path) -> None:
    healthy = hf_entries(rows())
    broken = hf_entries(rows(math.nan))[:150]  # another length, so no step lines up by chance
    (tmp_path / "a").mkdir()
    code, rep = judged(write_trainer_state(tmp_path / "a" / "trainer_state.json", healthy, broken))
    assert code == 1 and nan_finding(rep)["step"] == BAD_FROM
    assert rep["records"] == 150
    assert any("2 log_history keys" in n for n in rep["notes"])

    (tmp_path / "b").mkdir()
    p = write_trainer_state(tmp_path / "b" / "trainer_state.json", hf_entries(rows(math.nan)), healthy[:150])
    code, rep = judged(p)
    assert code == 0 and rep["verdict"] == "PASS" and rep["records"] == 150
    assert read_runlog(p).get("loss").steps.tolist() == list(range(1, 151))
