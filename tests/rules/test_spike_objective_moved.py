"""A loss that jumps where a logged schedule of the objective moved is the objective
changing, not a spike (a new user's healthy multi-task run, its auxiliary head switched on
with `aux_weight` 0 -> 1 logged, and a curriculum whose logged difficulty stepped up, each
WARNed TP-LOSS-SPIKE). Generated over lengths, onsets, jump sizes and noise; the negatives
are the same runs with the jump away from the move, or a weight that barely moved."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _helpers import run_of

from trainproof.rules.engine import judge_runlog

from conftest import run_cli


def _switched(n: int, at: float, jump: float, seed: int, *, moved_at: float | None = None, w: tuple = (0.0, 1.0)):
    """``n`` logs of a falling loss; at share ``at`` it jumps ``jump`` x and falls back
    below its level within a tenth of the run (an auxiliary head's term added, then
    learned). ``aux_weight`` goes ``w[0]`` -> ``w[1]`` at share ``moved_at`` (``at`` by
    default)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    base = 0.02 + 2.0 * np.exp(-8 * t)
    k = int(at * n)
    extra = np.where(t >= at, (jump - 1) * base[k] * np.exp(-(t - at) / 0.02), 0.0)
    loss = (base + extra) * np.exp(0.05 * rng.standard_normal(n))
    m = int((at if moved_at is None else moved_at) * n)
    weight = np.where(np.arange(n) >= m, w[1], w[0])
    return loss, weight


@pytest.mark.parametrize("n", [120, 600, 3000])
@pytest.mark.parametrize("at,jump", [(0.3, 20.0), (0.5, 70.0), (0.7, 12.0)])
def test_a_jump_where_a_loss_term_weight_switched_on_is_no_spike(n, at, jump):
    for seed in range(2):
        loss, weight = _switched(n, at, jump, seed)
        rep = judge_runlog(run_of(loss=loss, aux_weight=weight))
        assert "TP-LOSS-SPIKE" not in rep.ids(), (n, at, jump, seed, rep.ids())
        # the same jump with the weight switched on a fifth of the run earlier is a spike
        loss, weight = _switched(n, at, jump, seed, moved_at=at - 0.2)
        rep = judge_runlog(run_of(loss=loss, aux_weight=weight))
        assert "TP-LOSS-SPIKE" in rep.ids(), (n, at, jump, seed, rep.ids())
        # ... and so is one where the weight moved by less than objective_weight_rise
        loss, weight = _switched(n, at, jump, seed, w=(1.0, 1.2))
        rep = judge_runlog(run_of(loss=loss, aux_weight=weight))
        assert "TP-LOSS-SPIKE" in rep.ids(), (n, at, jump, seed, rep.ids())


@pytest.mark.parametrize("n", [150, 1500])
def test_a_jump_at_a_curriculum_stage_through_the_jsonl_reader(tmp_path, n):
    loss, _ = _switched(n, 0.5, 15.0, 3)
    rows = [
        {"step": 10 * i, "train/loss": float(loss[i]), "train/difficulty": 0.5 if i < n // 2 else 1.0} for i in range(n)
    ]
    p = tmp_path / "metrics.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, _, _, doc = run_cli("judge", str(p), "--json")
    assert code == 0 and "TP-LOSS-SPIKE" not in {f["id"] for f in doc["reports"][0]["findings"]}
    # with no stage logged, the same jump is a spike
    p.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "train/difficulty"}) + "\n" for r in rows))
    code, _, _, doc = run_cli("judge", str(p), "--json")
    assert "TP-LOSS-SPIKE" in {f["id"] for f in doc["reports"][0]["findings"]}


@pytest.mark.parametrize("n", [300, 2000])
def test_a_weight_between_two_non_zero_values_explains_a_jump_of_its_ratio_only(n):
    # kl_weight 0.5 -> 1.0 doubles its term: a 5x jump (within 2 x spike_factor) is the
    # objective, a 40x one (an fp16 overflow at the same step) is still a spike
    for seed in range(2):
        for jump, spike in ((5.0, False), (40.0, True)):
            loss, weight = _switched(n, 0.5, jump, seed, w=(0.5, 1.0))
            rep = judge_runlog(run_of(loss=loss, kl_weight=weight))
            assert ("TP-LOSS-SPIKE" in rep.ids()) is spike, (n, seed, jump, rep.ids())
            if spike:  # and a spike with no weight logged
                assert "TP-LOSS-SPIKE" in judge_runlog(run_of(loss=loss)).ids()
