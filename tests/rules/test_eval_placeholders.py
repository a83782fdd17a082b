"""Non-finite eval losses that stand for rows with no evaluation: a loop that writes its
eval loss on every row puts NaN (or "nan", a NaN token) where it did not evaluate, before
its first evaluation and between evaluations. Those are no NaN evaluations (four healthy
logs of a new user FAILed TP-NAN-EVAL); evaluations that turn NaN are. Generated over
cadences, lengths, onsets and spellings, through the JSONL and CSV readers."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from _helpers import run_of

from trainproof.findings import Level
from trainproof.rules._shared import nan_eval_onset
from trainproof.rules.engine import judge_runlog

from conftest import run_cli


def _rows(n: int, every: int, seed: int, onset: float | None = None, lead: bool = True) -> list[dict]:
    """``n`` train rows of a healthy decay, the eval loss on every ``every``-th row and a
    NaN placeholder on the others (``lead``: before the first evaluation too); with
    ``onset``, the evaluations from that share of the run on are NaN."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(1, n + 1):
        t = i / n
        loss = 0.9 + 1.8 * math.exp(-4 * t) + 0.03 * rng.standard_normal()
        r = {"step": 10 * i, "loss": loss}
        if i % every == 0:
            r["eval_loss"] = float("nan") if onset is not None and t >= onset else 0.95 + 1.8 * math.exp(-4 * t)
        elif lead or i > every:
            r["eval_loss"] = float("nan")
        rows.append(r)
    return rows


def _judge(tmp_path, rows, fmt: str, spelling: str):
    if fmt == "jsonl":
        text = "".join(json.dumps(r).replace("NaN", spelling) + "\n" for r in rows)
        p = tmp_path / "m.jsonl"
    else:
        cell = {"NaN": "nan", '"nan"': "NaN"}[spelling]
        text = "step,loss,eval_loss\n" + "".join(
            f"{r['step']},{r['loss']:.6g},{cell if not math.isfinite(r.get('eval_loss', 0.0)) else r.get('eval_loss', '')}\n"
            for r in rows
        )
        p = tmp_path / "m.csv"
    p.write_text(text)
    code, _, _, doc = run_cli("judge", str(p), "--json")
    return code, doc["reports"][0]


@pytest.mark.parametrize("fmt,spelling", [("jsonl", "NaN"), ("jsonl", '"nan"'), ("csv", "NaN")])
@pytest.mark.parametrize("n,every", [(120, 3), (500, 10), (2000, 50), (3000, 500)])
def test_placeholders_between_evaluations_are_no_nan_evaluation(tmp_path, fmt, spelling, n, every):
    for seed in range(2):
        code, rep = _judge(tmp_path, _rows(n, every, seed), fmt, spelling)
        ids = {f["id"] for f in rep["findings"]}
        assert "TP-NAN-EVAL" not in ids and code == 0, (n, every, ids)
        assert "TP-OVERFIT" in rep["checks"]["ran"] or every == 500  # the evaluations are read
        assert any("stand for rows with no evaluation" in n_ for n_ in rep["notes"])


@pytest.mark.parametrize("onset", [0.3, 0.5, 0.7])
@pytest.mark.parametrize("n,every", [(500, 10), (2000, 50)])
def test_evaluations_that_turn_nan_still_fail_from_their_onset(tmp_path, onset, n, every):
    code, rep = _judge(tmp_path, _rows(n, every, 1, onset=onset), "jsonl", "NaN")
    (f,) = [f for f in rep["findings"] if f["id"] == "TP-NAN-EVAL"]
    assert f["level"] == "FAIL" and code == 1
    # from the last finite evaluation's next row: no later than the first NaN evaluation
    first_nan_eval = 10 * every * math.ceil(onset * n / every)
    assert first_nan_eval - 10 * every < f["data"]["first_step"] <= first_nan_eval


def test_one_evaluation_and_fewer_placeholders_after_it_than_its_cadence():
    bad = np.r_[np.ones(49, bool), [False], np.ones(30, bool)]
    assert nan_eval_onset(bad) is None
    # a stretch after it longer than one and a half cadences: evaluations that turned NaN
    assert nan_eval_onset(np.r_[np.ones(49, bool), [False], np.ones(120, bool)]) == 50


@pytest.mark.parametrize(
    "bad,onset",
    [
        (np.r_[np.zeros(40, bool), [True], np.zeros(40, bool)], 40),  # an evaluation on every row, one NaN
        (np.ones(20, bool), 0),  # never a finite evaluation
        (np.r_[np.zeros(60, bool), np.ones(5, bool)], 60),  # evaluations that turned NaN at the end
        (np.r_[[True], np.zeros(30, bool)], 0),  # an eval-only series whose first evaluation is NaN
    ],
)
def test_a_log_with_no_cadence_of_placeholders_counts_every_nan(bad, onset):
    assert nan_eval_onset(bad) == onset


def test_a_nan_evaluation_of_a_per_row_log_still_fails():
    ev = 1.0 + np.exp(-np.arange(100) / 30)
    ev[70] = np.nan
    rep = judge_runlog(run_of(loss=1.0 + np.exp(-np.arange(100) / 30), eval_loss=ev))
    assert rep.verdict is Level.FAIL and "TP-NAN-EVAL" in rep.ids()
