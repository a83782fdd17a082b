"""Non-finite train values on rows that hold only an evaluation: a table export that
writes ``NaN`` in every train column of an evaluation's row (``df.to_csv(na_rep="NaN")``,
a tracker's history export) wrote no NaN loss (a new user's healthy export FAILed TP-NAN).
A NaN of the run stays a FAIL: weights gone non-finite make the evaluation non-finite too,
a learning rate is no NaN from a blow-up, and a NaN train loss on a train row is read as
before. Generated over lengths, cadences, noise and the two row layouts, through the CSV
and JSONL readers."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from conftest import run_cli


def _export(
    n: int,
    every: int,
    seed: int,
    *,
    own_step: bool,
    lr: bool = True,
    nan_from: float | None = None,
    noise: float = 0.03,
) -> list[dict]:
    """A healthy decay logged every 5 steps as train rows ``{step, train/loss,
    train/learning_rate}``, with an evaluation every ``every`` train rows on a row of its
    own whose train columns are NaN. ``own_step``: the evaluation row has its own step
    (a tracker's counter advanced by the eval log call), else the step of the train row
    before it. ``nan_from``: from that share of the run on, the loss and every evaluation
    are NaN (a real blow-up)."""
    rng = np.random.default_rng(seed)
    rows, step = [], 0
    nan = float("nan")
    for i in range(1, n + 1):
        t = i / n
        step += 5
        dead = nan_from is not None and t >= nan_from
        loss = nan if dead else (0.8 + 1.6 * math.exp(-4 * t)) * (1 + noise * rng.standard_normal())
        r = {"step": step, "train/loss": loss, "eval/loss": nan}
        if lr:
            r["train/learning_rate"] = 3e-4 * min(1.0, i / 20) * (1 - 0.9 * t)
        rows.append(r)
        if i % every == 0:
            if own_step:
                step += 1
            ev = nan if dead else 0.85 + 1.6 * math.exp(-4 * t)
            e = {"step": step, "train/loss": nan, "eval/loss": ev}
            if lr:
                e["train/learning_rate"] = nan
            rows.append(e)
    return rows


def _judge(tmp_path, rows: list[dict], fmt: str) -> tuple[int, dict]:
    keys = list(rows[0])
    if fmt == "csv":
        text = (
            ",".join(keys)
            + "\n"
            + "".join(",".join("NaN" if r[k] != r[k] else f"{r[k]:.6g}" for k in keys) + "\n" for r in rows)
        )
        p = tmp_path / "export.csv"
    else:
        text = "".join(json.dumps(r) + "\n" for r in rows)
        p = tmp_path / "history.jsonl"
    p.write_text(text)
    code, _, _, doc = run_cli("judge", str(p), "--json")
    return code, doc["reports"][0]


def _ids(rep: dict) -> set[str]:
    return {f["id"] for f in rep["findings"] if f["level"] == "FAIL"}


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize("own_step", [True, False])
@pytest.mark.parametrize("n,every,noise", [(60, 10, 0.02), (400, 40, 0.05), (2000, 100, 0.1)])
def test_nan_train_cells_of_evaluation_rows_are_absent(tmp_path, fmt, own_step, n, every, noise):
    for seed in range(2):
        code, rep = _judge(tmp_path, _export(n, every, seed, own_step=own_step, noise=noise), fmt)
        assert code == 0 and not _ids(rep), (seed, _ids(rep))
        assert "TP-NAN" in rep["checks"]["ran"]
        assert any("rows of another kind" in x and "read as absent" in x for x in rep["notes"]), rep["notes"]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize("own_step", [True, False])
def test_without_a_learning_rate_the_row_s_kind_decides(tmp_path, fmt, own_step):
    # eval rows hold nothing but the evaluation, and the eval loss is never written beside
    # a finite train loss: the eval rows are rows of another kind, their NaN a filler
    code, rep = _judge(tmp_path, _export(400, 40, 0, own_step=own_step, lr=False), fmt)
    assert code == 0 and not _ids(rep), _ids(rep)


@pytest.mark.parametrize("n", [20, 60])
def test_a_wide_table_s_nan_loss_beside_a_finite_val_loss_is_the_run_s(tmp_path, n):
    # Keras' CSVLogger writes loss and val_loss on every row: a NaN loss there (the val
    # loss frozen or finite) is the run's, not a filler
    rng = np.random.default_rng(n)
    rows = []
    for e in range(n):
        t = e / n
        loss = float("nan") if t >= 0.6 else 0.5 + 1.6 * math.exp(-5 * t) * (1 + 0.02 * rng.standard_normal())
        rows.append({"epoch": e, "loss": loss, "val_loss": 0.55 + 1.6 * math.exp(-5 * min(t, 0.6))})
    code, rep = _judge(tmp_path, rows, "csv")
    assert code == 1 and "TP-NAN" in _ids(rep)


def test_an_hf_log_history_export_with_epochs_and_its_summary_row(tmp_path):
    # pandas' export of HF's log_history: `epoch` is finite on every row (eval rows too),
    # eval every 25 steps off the logging steps, and the trainer's summary row last
    # (train_loss, train_runtime; loss NaN)
    rng = np.random.default_rng(4)
    rows = []
    nan = float("nan")
    for step in range(10, 1010, 10):
        t = step / 1000
        loss = (0.3 + 1.5 * math.exp(-5 * t)) * (1 + 0.05 * rng.standard_normal())
        rows.append(
            {
                "loss": loss,
                "grad_norm": 2.0 + rng.random(),
                "learning_rate": 5e-5 * (1 - t),
                "epoch": t * 3,
                "step": step,
                "eval_loss": nan,
                "eval_runtime": nan,
                "train_runtime": nan,
                "train_loss": nan,
            }
        )
        if step % 250 == 0 or (step + 5) % 250 == 0:
            rows.append(
                {
                    "loss": nan,
                    "grad_norm": nan,
                    "learning_rate": nan,
                    "epoch": t * 3,
                    "step": step + 5 if (step + 5) % 250 == 0 else step,
                    "eval_loss": 0.35 + 1.5 * math.exp(-5 * t),
                    "eval_runtime": 1.2,
                    "train_runtime": nan,
                    "train_loss": nan,
                }
            )
    rows.append(
        {
            "loss": nan,
            "grad_norm": nan,
            "learning_rate": nan,
            "epoch": 3.0,
            "step": 1000,
            "eval_loss": nan,
            "eval_runtime": nan,
            "train_runtime": 120.5,
            "train_loss": 0.52,
        }
    )
    code, rep = _judge(tmp_path, rows, "csv")
    assert code == 0 and not _ids(rep) and not any(f["level"] == "WARN" for f in rep["findings"]), rep["findings"]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize("own_step", [True, False])
@pytest.mark.parametrize("nan_from", [0.3, 0.6])
def test_a_real_blow_up_in_the_same_export_still_fails(tmp_path, fmt, own_step, nan_from):
    code, rep = _judge(tmp_path, _export(400, 40, 1, own_step=own_step, nan_from=nan_from), fmt)
    assert code == 1 and "TP-NAN" in _ids(rep)
    (f,) = [f for f in rep["findings"] if f["id"] == "TP-NAN"]
    # the onset is the first NaN train row, not an earlier evaluation row
    assert f["data"]["first_step"] >= 5 * math.ceil(nan_from * 400)
    # the evaluations counted are the evaluations made: the train rows' eval cells after
    # the blow-up (their learning rate finite, a column no evaluation's row holds) are
    # filler, as before it
    (e,) = [f for f in rep["findings"] if f["id"] == "TP-NAN-EVAL"]
    made = [i for i in range(40, 401, 40)]
    assert e["data"]["points"] == len(made)
    assert e["data"]["count"] == sum(i / 400 >= nan_from for i in made)


def test_a_nan_loss_on_a_train_row_with_a_finite_learning_rate_still_fails(tmp_path):
    rows = _export(400, 40, 2, own_step=True)
    k = next(
        i for i, r in enumerate(rows) if r["step"] >= 1000 and r["train/learning_rate"] == r["train/learning_rate"]
    )
    rows[k]["train/loss"] = float("nan")  # a transient NaN on a train row: the run's own
    code, rep = _judge(tmp_path, rows, "csv")
    assert code == 1 and "TP-NAN" in _ids(rep)


@pytest.mark.parametrize("every", [5, 10, 50])
@pytest.mark.parametrize("n", [400, 3000])
def test_a_loss_at_its_own_cadence_beside_a_column_logged_every_row(tmp_path, every, n):
    # a tracker's history exported with NaN for "not logged here": the lr on every row,
    # the loss on every `every`-th (a breaker's `1,1e-05,NaN,NaN`); a blow-up from 60% of
    # the run is a stretch longer than the cadence, the run's own
    rng = np.random.default_rng(n + every)
    nan = float("nan")
    for blow in (False, True):
        rows = []
        for i in range(1, n + 1):
            t = i / n
            loss = (0.9 + 2.0 * math.exp(-4 * t)) * (1 + 0.03 * rng.standard_normal()) if i % every == 0 else nan
            if blow and t >= 0.6:
                loss = nan
            rows.append({"step": i, "lr": 1e-4 * min(1.0, i / 50), "loss": loss})
        code, rep = _judge(tmp_path, rows, "csv")
        if blow:
            assert code == 1 and "TP-NAN" in _ids(rep), _ids(rep)
        else:
            assert code == 0 and not _ids(rep), _ids(rep)


def test_a_short_export_evaluating_at_every_logging_step(tmp_path):
    # 6 train logs, an evaluation at each (its own row, the same step) and HF's summary
    # row (train_loss, total_flos, train_runtime): too short to judge, and no NaN of the run
    cols = (
        "loss",
        "grad_norm",
        "learning_rate",
        "epoch",
        "step",
        "eval_loss",
        "eval_runtime",
        "train_runtime",
        "train_loss",
        "total_flos",
    )

    def row(**given):
        return {c: given.get(c, float("nan")) for c in cols}

    rows = []
    for k, step in enumerate(range(10, 70, 10)):
        rows.append(
            row(loss=3.6 - 0.12 * k, grad_norm=0.55, learning_rate=2.5e-3 * (1 - k / 6), epoch=step / 125, step=step)
        )
        rows.append(row(epoch=step / 125, step=step, eval_loss=3.45 - 0.1 * k, eval_runtime=0.2))
    rows.append(row(epoch=0.48, step=60, train_runtime=5.8, train_loss=3.3, total_flos=2.35e9))
    code, rep = _judge(tmp_path, rows, "csv")
    ids = {f["id"] for f in rep["findings"] if f["level"] in ("FAIL", "WARN")}
    assert code == 2 and not ids & {"TP-NAN", "TP-NAN-EVAL", "TP-GRAD-OVERFLOW-SKIPPED"}, ids
