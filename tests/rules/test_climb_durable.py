"""A slow climb after a large fall: a loss that fell tenfold and climbs back 1.3-1.45x
over the second half of the run regains 3-5% of its fall, under TP-LOSS-CLIMB's 25% and
its noise-floor allowance, and PASSed (three new users' generated slow divergences). A
climb that goes on steadily over a third of the run or more (an upward Mann-Kendall trend
over block medians) is TP-LOSS-CLIMB's WARN however little of the fall it regains. Its
healthy twins (the same fall, then a plateau with noise up to 15% or heavy tails, or a
few high points at the very end) stay quiet. Generated over lengths, noise and formats."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from conftest import run_cli


def _loss(n: int, seed: int, *, fall: float, climb: float, noise: float, heavy: bool = False) -> np.ndarray:
    """``n`` points: from ``fall`` x the floor 1.0 down to it by 30% of the run, then held,
    then from 40% to 90% a steady climb to ``climb`` x the floor, held to the end;
    relative noise ``noise`` (Student t with 3 degrees of freedom where ``heavy``)."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)
    base = 1.0 + (fall - 1.0) * np.exp(-t / 0.06)
    up = np.clip((t - 0.4) / 0.5, 0, 1)
    level = base * (1 + (climb - 1) * up)
    eps = rng.standard_t(3, n) / math.sqrt(3) if heavy else rng.standard_normal(n)
    return level * np.exp(noise * eps)


def _judge(tmp_path, v: np.ndarray, fmt: str) -> tuple[int, set[str], set[str]]:
    if fmt == "jsonl":
        p = tmp_path / "metrics.jsonl"
        p.write_text("".join(json.dumps({"step": 10 * (i + 1), "loss": float(x)}) + "\n" for i, x in enumerate(v)))
    else:
        p = tmp_path / "metrics.csv"
        p.write_text("step,train_loss\n" + "".join(f"{10 * (i + 1)},{x:.6g}\n" for i, x in enumerate(v)))
    code, _, _, doc = run_cli("judge", str(p), "--json")
    rep = doc["reports"][0]
    return (
        code,
        {f["id"] for f in rep["findings"] if f["level"] == "FAIL"},
        {f["id"] for f in rep["findings"] if f["level"] == "WARN"},
    )


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize(
    "n,climb,noise",
    # 120 points at 5% noise show a 1.45x climb; 1.3x there stays within what the noise
    # and the onset's bar allow
    [(120, 1.3, 0.01), (120, 1.45, 0.05), (400, 1.3, 0.05), (400, 1.45, 0.05), (4000, 1.3, 0.01), (4000, 1.3, 0.05)],
)
def test_a_slow_climb_after_a_large_fall_warns(tmp_path, fmt, n, climb, noise):
    code, fails, warns = _judge(tmp_path, _loss(n, n, fall=10.0, climb=climb, noise=noise), fmt)
    assert "TP-LOSS-CLIMB" in warns, (fails, warns)


@pytest.mark.parametrize("n", [120, 400, 4000])
@pytest.mark.parametrize("noise,heavy", [(0.05, False), (0.15, False), (0.1, True)])
def test_the_same_fall_then_a_plateau_stays_quiet(tmp_path, n, noise, heavy):
    code, fails, warns = _judge(tmp_path, _loss(n, n + 1, fall=10.0, climb=1.0, noise=noise, heavy=heavy), "jsonl")
    assert "TP-LOSS-CLIMB" not in warns and not fails, (fails, warns)


@pytest.mark.parametrize("n", [400, 4000])
def test_a_rise_over_the_last_logs_only_is_no_steady_climb(tmp_path, n):
    # the same plateau with its last 10% of points 1.3x up: a climb of a tenth of the run
    # regaining 3% of the fall, at 5% noise, is the floor's wiggle allowance's, not a trend's
    v = _loss(n, n + 2, fall=10.0, climb=1.0, noise=0.05)
    v[-n // 10 :] *= 1.3
    code, fails, warns = _judge(tmp_path, v, "jsonl")
    assert "TP-LOSS-CLIMB" not in warns and not fails, (fails, warns)


@pytest.mark.parametrize("evals", [10, 20, 40])
def test_a_slow_climb_under_a_falling_eval_loss_stays_quiet(tmp_path, evals):
    # mixup or augmentation ramped up: the train loss climbs 1.2x over the last 60% while
    # the eval loss falls 0.45 -> 0.38; the model got better on held-out data (a breaker's
    # healthy run warned)
    v = _loss(1500, 3, fall=10.0, climb=1.3, noise=0.03)
    rows = [{"step": 10 * (i + 1), "loss": float(x)} for i, x in enumerate(v)]
    every = len(rows) // evals
    for k, i in enumerate(range(every - 1, len(rows), every)):
        rows[i]["eval_loss"] = 0.45 - 0.07 * k / max(1, evals - 1)
    p = tmp_path / "metrics.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _, _, _, doc = run_cli("judge", str(p), "--json")
    warns = {f["id"] for f in doc["reports"][0]["findings"] if f["level"] in ("WARN", "FAIL")}
    assert not warns & {"TP-LOSS-CLIMB", "TP-DIVERGE"}, warns
