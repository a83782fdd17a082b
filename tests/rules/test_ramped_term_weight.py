"""A loss that sums logged terms under a weight that ramps up and is not logged: the
total climbs for as long as the ramp outpaces the model, while every term it adds falls.
A healthy multi-task run (a classifier's cross-entropy plus an unnormalised regression
term whose weight ramps from 0) FAILed TP-DIVERGE ("ends 2.23x above its starting
level"): no single reweighting fits a ramp. Where every logged term ends below its level
at the best step, the climb is the weights', not the model's. A divergence raises the
terms themselves and still FAILs, as does one whose terms stopped being logged before it.
Generated over lengths, ramp spans, term scales, noise and two readers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _helpers import write_rows

from conftest import run_cli


def _ramp_run(
    n: int, ramp: float, scale: float, noise: float, seed: int, *, blow_at: float | None = None
) -> list[dict]:
    """``n`` logs of ``loss = ce_loss + w * mse_loss``: ce falls 1.1 -> 0.1, the MSE falls
    from ``scale`` to its noise floor 2.25, and ``w`` ramps linearly from 0 to 1 over the
    first ``ramp`` of the run (not logged); relative noise ``noise`` on each term.
    ``blow_at``: from that fraction on both terms climb (ce to 3x its start, MSE 20x its
    floor and up), a divergence."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        t = i / (n - 1)
        ce = 0.1 + 1.0 * math.exp(-5 * t)
        mse = 2.25 + (scale - 2.25) * math.exp(-25 * t)
        if blow_at is not None and t > blow_at:
            g = (t - blow_at) / (1 - blow_at)
            ce = ce + 3.3 * min(1.0, 4 * g)
            mse = mse * (1 + 20 * min(1.0, 4 * g))
        ce *= 1 + noise * rng.standard_normal()
        mse *= 1 + noise * rng.standard_normal()
        w = min(1.0, t / ramp)
        rows.append({"step": 10 * i, "loss": ce + w * mse, "ce_loss": ce, "mse_loss": mse})
    return rows


def _judge(tmp_path, rows: list[dict], fmt: str) -> tuple[int, dict]:
    p = write_rows(tmp_path, rows, fmt, "train_log.jsonl")
    code, _, _, doc = run_cli("judge", str(p), "--json")
    return code, doc["reports"][0]


def _fails(rep: dict) -> set[str]:
    return {f["id"] for f in rep["findings"] if f["level"] == "FAIL"}


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize(
    "n,ramp,scale,noise",
    [(60, 0.6, 1e2, 0.02), (60, 0.3, 1e3, 0.0), (300, 0.1, 1e4, 0.02), (300, 0.6, 1e4, 0.05), (3000, 0.6, 1e2, 0.02)],
)
def test_a_ramped_weight_beside_falling_terms_is_no_divergence(tmp_path, fmt, n, ramp, scale, noise):
    rows = _ramp_run(n, ramp, scale, noise, seed=n)
    assert rows[-1]["loss"] > 1.5 * rows[0]["loss"]  # the total does climb
    code, rep = _judge(tmp_path, rows, fmt)
    assert code == 0 and not _fails(rep), rep["findings"]


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize("n,ramp,noise", [(300, 0.1, 0.02), (3000, 0.2, 0.03)])
def test_terms_that_climb_under_the_ramp_still_fail(tmp_path, fmt, n, ramp, noise):
    code, rep = _judge(tmp_path, _ramp_run(n, ramp, 1e3, noise, seed=n + 1, blow_at=0.6), fmt)
    assert code == 1 and "TP-DIVERGE" in _fails(rep), rep["findings"]


def test_terms_that_stopped_being_logged_before_the_climb_explain_nothing(tmp_path):
    # the same divergence, its terms logged for the first half only: they fell while they
    # were logged, which says nothing of the climb after
    rows = _ramp_run(400, 0.1, 1e3, 0.02, seed=7, blow_at=0.6)
    for r in rows[200:]:
        del r["ce_loss"], r["mse_loss"]
    code, rep = _judge(tmp_path, rows, "jsonl")
    assert code == 1 and "TP-DIVERGE" in _fails(rep), rep["findings"]


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize("n", [60, 400, 4000])
def test_a_total_that_outgrows_its_falling_terms_still_fails(tmp_path, fmt, n):
    # a breaker's divergence (helper 99): an unlogged auxiliary term explodes 300x while the
    # logged terms fall; the total ends 4.5x up, 2.4 times the logged terms' sum, which no
    # weight ramped to 1 gives
    rows = _ramp_run(n, 0.2, 1e2, 0.02, seed=n)
    for i, r in enumerate(rows):
        t = i / (n - 1)
        aux = 0.01 * 300 ** max(0.0, (t - 0.4) / 0.6)
        r["loss"] = r["ce_loss"] + min(1.0, t / 0.2) * r["mse_loss"] + aux
    code, rep = _judge(tmp_path, rows, fmt)
    assert code == 1 and "TP-DIVERGE" in _fails(rep), rep["findings"]
