"""A train loss that climbs while the eval loss climbs too but a held-out accuracy rises:
the held-out measures disagree (overconfident predictions on a harder training
distribution: augmentation ramped up, harder data), and a diverging model does not get
better at its task. TP-DIVERGE and TP-EVAL-DIVERGE leave it to TP-LOSS-CLIMB's and
TP-EVAL-DEGRADE's warnings (a new user's run with its augmentation strength ramped
0.1 -> 0.9 FAILed TP-DIVERGE while its eval accuracy rose 0.71 -> 0.85). The same climb
with the accuracy falling, flat, or rising by less than objective_accuracy_rise still
FAILs. Generated over lengths, eval cadences, noise and rise sizes, through the JSONL
reader and HF's trainer_state.json."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from conftest import run_cli


def _run(
    n: int, evals: int, seed: int, *, rise: float, acc_gain: float, noise: float, eval_rise: float = 1.7
) -> tuple[list[dict], list[dict]]:
    """``n`` train logs every 10 steps: a fall 1.4 -> 0.4 over the first half, then a
    climb to ``rise`` x that level by the end (relative noise ``noise``); ``evals``
    evaluations: the eval loss falls with it, then climbs to ``eval_rise`` x its minimum,
    and the accuracy rises 0.70 -> 0.75 over the first half, then by ``acc_gain`` more
    (negative: falls) by the end, on 2,000 examples (binomial noise)."""
    rng = np.random.default_rng(seed)
    train, ev = [], []
    for i in range(1, n + 1):
        t = i / n
        base = 0.4 + 1.0 * math.exp(-10 * t) if t < 0.5 else 0.4 * (1 + (rise - 1) * (t - 0.5) / 0.5)
        train.append({"step": 10 * i, "loss": base * (1 + noise * rng.standard_normal())})
    for j in range(1, evals + 1):
        t = j / evals
        el = 0.45 + 0.6 * math.exp(-8 * t) if t < 0.5 else 0.45 * (1 + (eval_rise - 1) * (t - 0.5) / 0.5)
        p = 0.70 + 0.05 * t / 0.5 if t < 0.5 else 0.75 + acc_gain * (t - 0.5) / 0.5
        acc = rng.binomial(2000, min(max(p, 0.0), 1.0)) / 2000
        ev.append(
            {
                "step": 10 * round(j * n / evals),
                "eval_loss": el * (1 + 0.01 * rng.standard_normal()),
                "eval_accuracy": acc,
            }
        )
    return train, ev


def _judge(tmp_path, train, ev, fmt: str) -> tuple[int, dict]:
    if fmt == "jsonl":
        rows = sorted([*train, *ev], key=lambda r: (r["step"], "eval_loss" in r))
        p = tmp_path / "metrics.jsonl"
        p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        hist = sorted(
            [{**r, "learning_rate": 3e-4, "epoch": r["step"] / 1000} for r in train]
            + [{**r, "epoch": r["step"] / 1000} for r in ev],
            key=lambda r: (r["step"], "eval_loss" in r),
        )
        p = tmp_path / "trainer_state.json"
        p.write_text(
            json.dumps({"global_step": train[-1]["step"], "max_steps": train[-1]["step"], "log_history": hist})
        )
    code, _, _, doc = run_cli("judge", str(p), "--json")
    return code, doc["reports"][0]


def _levels(rep: dict) -> dict[str, str]:
    return {f["id"]: f["level"] for f in rep["findings"]}


@pytest.mark.parametrize("fmt", ["jsonl", "hf"])
@pytest.mark.parametrize(
    "n,evals,noise,rise,acc_gain",
    [(200, 10, 0.03, 1.7, 0.10), (600, 20, 0.05, 2.0, 0.08), (2000, 40, 0.08, 1.6, 0.12), (400, 12, 0.02, 2.5, 0.07)],
)
def test_a_climb_with_held_out_accuracy_rising_is_a_warning(tmp_path, fmt, n, evals, noise, rise, acc_gain):
    for seed in range(2):
        code, rep = _judge(tmp_path, *_run(n, evals, seed, rise=rise, acc_gain=acc_gain, noise=noise), fmt)
        lv = _levels(rep)
        assert code == 0 and "FAIL" not in lv.values(), (seed, lv)
        assert lv.get("TP-LOSS-CLIMB") == "WARN", lv
        (f,) = [f for f in rep["findings"] if f["id"] == "TP-LOSS-CLIMB"]
        assert "disputes" in f["message"] and "held-out accuracy" in f["data"]["disputed"]


@pytest.mark.parametrize("fmt", ["jsonl", "hf"])
@pytest.mark.parametrize("acc_gain", [-0.2, -0.05, 0.0, 0.02])
@pytest.mark.parametrize("n,evals,noise,rise", [(200, 10, 0.03, 1.8), (1000, 25, 0.06, 2.2)])
def test_the_same_climb_with_accuracy_falling_flat_or_barely_up_still_fails(
    tmp_path, fmt, acc_gain, n, evals, noise, rise
):
    code, rep = _judge(tmp_path, *_run(n, evals, 3, rise=rise, acc_gain=acc_gain, noise=noise), fmt)
    lv = _levels(rep)
    assert code == 1 and lv.get("TP-DIVERGE") == "FAIL", lv


def test_eval_divergence_with_held_out_accuracy_rising_is_no_eval_diverge_fail(tmp_path):
    # train loss 3x, eval loss 3x its minimum: TP-EVAL-DIVERGE's size, with the accuracy up
    train, ev = _run(300, 30, 5, rise=3.0, acc_gain=0.1, noise=0.03, eval_rise=3.0)
    code, rep = _judge(tmp_path, train, ev, "jsonl")
    lv = _levels(rep)
    assert code == 0 and "TP-EVAL-DIVERGE" not in lv and "TP-DIVERGE" not in lv, lv
    # ... and with the accuracy falling, both losses' divergence FAILs
    train, ev = _run(300, 30, 5, rise=3.0, acc_gain=-0.2, noise=0.03, eval_rise=3.0)
    code, rep = _judge(tmp_path, train, ev, "jsonl")
    assert code == 1 and "FAIL" in _levels(rep).values()
