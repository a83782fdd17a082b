"""A train loss up 2-4x on its last few logs while the eval loss measured at those steps
is no worse than the level it held: the model that logged those losses was no worse on
held-out data, which a diverged model cannot be (a new user's healthy run, three bad
batches at its end, FAILed TP-DIVERGE with its eval loss at its best). Too few
evaluations follow for TP-OBJECTIVE-CHANGED, so TP-LOSS-CLIMB warns. The same climb with
the eval loss rising with it still FAILs. Generated over lengths, noise, spike sizes and
eval cadences, through the JSONL reader and HF's trainer_state.json."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from conftest import run_cli


def _run(n: int, seed: int, *, noise: float, spike: float, tail: int, eval_every: int, eval_rise: float) -> list[dict]:
    """``n`` logs every 100 steps (a short log: 3-4 high logs are its end level) of an LM loss decaying to 2.2 (relative noise ``noise``),
    its last ``tail`` logs multiplied by ``spike``; an eval loss every ``eval_every`` logs,
    decaying to 2.5 with 0.5% noise, multiplied by ``eval_rise`` over the last ``tail`` logs."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(1, n + 1):
        t = i / n
        r = {"step": 100 * i, "loss": (2.2 + 2.0 * math.exp(-5 * t)) * (1 + noise * rng.standard_normal())}
        if i > n - tail:
            r["loss"] *= spike
        if i % eval_every == 0:
            ev = (2.5 + 1.8 * math.exp(-5 * t)) * (1 + 0.005 * rng.standard_normal())
            r["eval_loss"] = ev * (eval_rise if i > n - tail else 1.0)
        rows.append(r)
    return rows


def _judge(tmp_path, rows: list[dict], fmt: str) -> tuple[int, set[str], set[str]]:
    if fmt == "jsonl":
        p = tmp_path / "metrics.jsonl"
        p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        hist = []
        for r in rows:
            hist.append({"step": r["step"], "loss": r["loss"], "learning_rate": 1e-5, "epoch": r["step"] / 1e4})
            if "eval_loss" in r:
                hist.append({"step": r["step"], "eval_loss": r["eval_loss"], "epoch": r["step"] / 1e4})
        p = tmp_path / "trainer_state.json"
        p.write_text(json.dumps({"global_step": rows[-1]["step"], "log_history": hist}))
    code, _, _, doc = run_cli("judge", str(p), "--json")
    rep = doc["reports"][0]
    level = lambda lv: {f["id"] for f in rep["findings"] if f["level"] == lv}  # noqa: E731
    return code, level("FAIL"), level("WARN")


@pytest.mark.parametrize("fmt", ["jsonl", "hf"])
@pytest.mark.parametrize(
    "n,noise,spike,tail,eval_every",
    [(30, 0.05, 2.5, 3, 1), (40, 0.05, 2.5, 3, 1), (60, 0.1, 3.0, 3, 1), (50, 0.03, 4.0, 3, 2), (40, 0.02, 1.8, 4, 2)],
)
def test_a_terminal_climb_the_eval_loss_disputes_is_a_warning(tmp_path, fmt, n, noise, spike, tail, eval_every):
    code, fails, warns = _judge(
        tmp_path, _run(n, n, noise=noise, spike=spike, tail=tail, eval_every=eval_every, eval_rise=1.0), fmt
    )
    assert code == 0 and not fails, fails
    assert "TP-LOSS-CLIMB" in warns, warns


@pytest.mark.parametrize("fmt", ["jsonl", "hf"])
@pytest.mark.parametrize("n,noise,spike,tail,eval_every", [(40, 0.05, 2.5, 3, 1), (50, 0.03, 4.0, 3, 2)])
def test_the_same_climb_with_the_eval_loss_rising_still_fails(tmp_path, fmt, n, noise, spike, tail, eval_every):
    # the eval loss 10% up over the same logs: the model got worse on held-out data too
    code, fails, _ = _judge(
        tmp_path, _run(n, n + 1, noise=noise, spike=spike, tail=tail, eval_every=eval_every, eval_rise=1.1), fmt
    )
    assert code == 1 and "TP-DIVERGE" in fails, fails


@pytest.mark.parametrize("fmt", ["jsonl", "hf"])
def test_a_climb_held_over_many_logs_is_no_few_bad_batches(tmp_path, fmt):
    # the train loss 3x up over the last 40 of 400 logs, with one evaluation early in the
    # climb that is still fine (or an averaged model's): a divergence, not bad batches
    rows = _run(400, 3, noise=0.03, spike=3.0, tail=40, eval_every=30, eval_rise=1.0)
    code, fails, _ = _judge(tmp_path, rows, fmt)
    assert code == 1 and "TP-DIVERGE" in fails, fails


def test_a_stale_evaluation_disputes_nothing(tmp_path):
    # the evaluations after the onset repeat the last one before it: no measure of the model
    rows = _run(40, 4, noise=0.05, spike=2.5, tail=3, eval_every=1, eval_rise=1.0)
    last = rows[-4]["eval_loss"]
    for r in rows[-3:]:
        r["eval_loss"] = last
    code, fails, _ = _judge(tmp_path, rows, "jsonl")
    assert code == 1 and "TP-DIVERGE" in fails, fails
