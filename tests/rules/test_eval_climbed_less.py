"""A train loss that jumps when a curriculum moves to harder data, with no stage logged,
beside a fixed-set eval loss that barely moves: the climb is disputed (TP-LOSS-CLIMB's
warning), not a divergence (a new user's generated curricula, the train loss 2x up in one
step and ending 1.5-2.2x above its best, FAILed TP-DIVERGE while their eval loss held or
rose 8% from overfitting). A divergence moves the held-out loss as well and still FAILs,
as does a climb beside an eval loss too noisy to show it rose less. Generated over
lengths, jump sizes, eval cadences and noise, in three readers."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from conftest import run_cli


def _curriculum(
    n: int, jump: float, eval_every: int, eval_noise: float, seed: int, *, eval_share: float = 0.0, overfit: float = 0.0
) -> list[dict]:
    """``n`` train logs of a loss falling 5.0 -> 2.9 (1% noise) that jumps ``jump``-fold at
    55% of the run and falls 40% of the way back over the rest; an eval loss every
    ``eval_every`` logs (relative noise ``eval_noise``) that falls 5.2 -> 3.1 and from the
    jump rises by ``eval_share`` of the train loss's jump on the log scale (0: a fixed set
    the harder stage does not touch; near 1: a model that diverged), plus a drift up by
    ``overfit`` over the second half (overfitting)."""
    rng = np.random.default_rng(seed)
    at = int(0.55 * n)
    rows = []
    for i in range(n):
        t = i / n
        base = 2.9 + 2.1 * math.exp(-6 * min(t, 0.55) / 0.55 * 1.0)
        if i < at:
            mult = 1.0
        else:
            g = (i - at) / max(n - at, 1)
            mult = jump ** (1 - 0.4 * (1 - math.exp(-4 * g)) / (1 - math.exp(-4)))
        row = {"step": 10 * (i + 1), "loss": base * mult * (1 + 0.01 * rng.standard_normal())}
        if (i + 1) % eval_every == 0:
            ev = (3.1 + 2.1 * math.exp(-6 * min(t, 0.55) / 0.55)) * (mult**eval_share if i >= at else 1.0)
            if t > 0.5:
                ev *= 1 + overfit * (t - 0.5) / 0.5
            row["eval_loss"] = ev * (1 + eval_noise * rng.standard_normal())
        rows.append(row)
    return rows


def _write(tmp_path, rows: list[dict], fmt: str):
    if fmt == "jsonl":
        p = tmp_path / "log.jsonl"
        p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif fmt == "csv":
        p = tmp_path / "metrics.csv"
        p.write_text(
            "step,loss,eval_loss\n" + "".join(f"{r['step']},{r['loss']:.6g},{r.get('eval_loss', '')}\n" for r in rows)
        )
    else:
        history = []
        for r in rows:
            history.append({"step": r["step"], "loss": round(r["loss"], 4), "epoch": r["step"] / 1000})
            if "eval_loss" in r:
                history.append({"step": r["step"], "eval_loss": r["eval_loss"], "epoch": r["step"] / 1000})
        p = tmp_path / "trainer_state.json"
        p.write_text(json.dumps({"global_step": rows[-1]["step"], "log_history": history}))
    return p


def _judge(path) -> tuple[int, dict]:
    code, _, _, doc = run_cli("judge", str(path), "--json")
    return code, doc["reports"][0]


def _ids(rep: dict, level: str) -> set[str]:
    return {f["id"] for f in rep["findings"] if f["level"] == level}


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "hf"])
@pytest.mark.parametrize(
    "n,jump,eval_every,eval_noise,overfit",
    [(300, 2.2, 5, 0.07, 0.0), (1000, 2.0, 10, 0.02, 0.1), (3000, 2.5, 50, 0.08, 0.0), (200, 2.1, 2, 0.01, 0.08)],
)
def test_a_climb_the_eval_loss_does_not_share_is_a_warning(tmp_path, fmt, n, jump, eval_every, eval_noise, overfit):
    # evaluations too noisy (7-8%) to show the model no worse, or drifting up 8-10% from
    # overfitting: TP-OBJECTIVE-CHANGED's reading does not hold, this one does
    rows = _curriculum(n, jump, eval_every, eval_noise, seed=n, overfit=overfit)
    code, rep = _judge(_write(tmp_path, rows, fmt))
    assert code == 0 and not _ids(rep, "FAIL"), rep["findings"]
    assert "TP-LOSS-CLIMB" in _ids(rep, "WARN"), rep["findings"]
    # without the eval loss the same climb is a divergence: the held-out loss decided
    code, rep = _judge(_write(tmp_path, [{k: v for k, v in r.items() if k != "eval_loss"} for r in rows], fmt))
    assert code == 1 and "TP-DIVERGE" in _ids(rep, "FAIL"), rep["findings"]


@pytest.mark.parametrize("fmt", ["jsonl", "hf"])
@pytest.mark.parametrize("eval_share", [0.6, 1.0])
@pytest.mark.parametrize("n,eval_every,eval_noise", [(300, 10, 0.01), (3000, 100, 0.03)])
def test_a_climb_the_eval_loss_shares_still_fails(tmp_path, fmt, eval_share, n, eval_every, eval_noise):
    rows = _curriculum(n, 2.2, eval_every, eval_noise, seed=n + 1, eval_share=eval_share)
    code, rep = _judge(_write(tmp_path, rows, fmt))
    assert code == 1 and "TP-DIVERGE" in _ids(rep, "FAIL"), rep["findings"]


def test_an_eval_loss_too_noisy_to_show_a_smaller_rise_disputes_nothing(tmp_path):
    # 30% noise per evaluation: its allowance alone is more than a third of the climb
    rows = _curriculum(1000, 2.3, 50, 0.3, seed=5)
    code, rep = _judge(_write(tmp_path, rows, "jsonl"))
    assert code == 1 and "TP-DIVERGE" in _ids(rep, "FAIL"), rep["findings"]
