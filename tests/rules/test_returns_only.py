"""An RL log with returns and no loss (DreamerV3's ``episode/score``, an RLlib evaluation's
``eval_episode_reward_mean``) is judged on its return, as issue 31 asks: it was NOT-CHECKED
(TP-NO-LOSS), and mapping the return by hand (``--map reward=KEY``) did not help, while the
advice to map it as a loss made a collapsed return PASS as a loss that fell. TRL's PPO is
judged on the reward model's score before ``objective/rlhf_reward`` (the score less the
KL penalty, which falls by design where the KL coefficient is ramped up).
Generated over lengths, noise, key names and two readers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import run_cli


def _returns(n: int, seed: int, *, collapse: bool, noise: float) -> np.ndarray:
    """A return that climbs 50 -> 750 over the first 60% of ``n`` evaluations and holds,
    or (``collapse``) falls to 30 over the last 30%; relative noise ``noise``."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)
    r = 50 + 700 * np.minimum(t / 0.6, 1.0)
    if collapse:
        r = np.where(t > 0.7, 30.0, r)
    return r * (1 + noise * rng.standard_normal(n))


def _write(tmp_path, key: str, values: np.ndarray, fmt: str):
    if fmt == "jsonl":
        p = tmp_path / "metrics.jsonl"
        p.write_text(
            "".join(
                json.dumps({"step": 2500 * (i + 1), key: float(v), "episode/length": 1000}) + "\n"
                for i, v in enumerate(values)
            )
        )
    else:
        p = tmp_path / "progress.csv"
        p.write_text(f"step,{key},fps\n" + "".join(f"{2500 * (i + 1)},{v:.4f},320\n" for i, v in enumerate(values)))
    return p


def _judge(path, *args) -> tuple[int, dict]:
    code, _, _, doc = run_cli("judge", str(path), "--json", *args)
    return code, doc["reports"][0]


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize("key", ["episode/score", "avg_return", "eval/episode_reward", "eval_episode_reward_mean"])
@pytest.mark.parametrize("n,noise", [(40, 0.05), (400, 0.15)])
def test_a_log_of_returns_alone_is_judged_on_them(tmp_path, fmt, key, n, noise):
    code, rep = _judge(_write(tmp_path, key, _returns(n, n, collapse=True, noise=noise), fmt))
    assert code == 1 and "TP-RL-RETURN-COLLAPSE" in {f["id"] for f in rep["findings"] if f["level"] == "FAIL"}
    assert rep["mapping"]["reward"]["source"] == key
    code, rep = _judge(_write(tmp_path, key, _returns(n, n + 1, collapse=False, noise=noise), fmt))
    assert code == 0 and rep["verdict"] in ("PASS", "WARN"), rep["findings"]


def test_a_return_mapped_by_hand_is_judged_as_one(tmp_path):
    p = _write(tmp_path, "score", _returns(200, 3, collapse=True, noise=0.1), "jsonl")
    code, rep = _judge(p)
    assert code == 2 and rep["findings"][0]["id"] == "TP-NO-LOSS"
    assert "--map reward=COLUMN" in rep["findings"][0]["evidence"]
    code, rep = _judge(p, "--map", "reward=score")
    assert code == 1 and any(f["id"] == "TP-RL-RETURN-COLLAPSE" for f in rep["findings"]), rep["findings"]


@pytest.mark.parametrize("n", [60, 600])
def test_trl_ppo_is_judged_on_its_score_and_a_kl_penalty_ramp_is_no_collapse(tmp_path, n):
    # a healthy PPO whose KL coefficient is ramped up (helper 99): the reward model's score
    # climbs all run while the KL-penalised objective/rlhf_reward rises and then falls below
    # its start; judged on the score, no collapse. A log holding only the penalised reward
    # is still read as the reward.
    rng = np.random.default_rng(n)
    t = np.linspace(0, 1, n)
    scores = 0.2 + 0.9 * t + 0.05 * rng.standard_normal(n)
    kl = 1.0 + 4.0 * t
    beta = 0.02 + 0.3 * t**2
    rlhf = scores - beta * kl
    rows = [
        {
            "step": 10 * (i + 1),
            "objective/scores": scores[i],
            "objective/kl": kl[i],
            "objective/rlhf_reward": rlhf[i],
            "loss/policy_avg": 0.01,
            "epoch": t[i],
        }
        for i in range(n)
    ]
    p = tmp_path / "trainer_state.json"
    p.write_text(json.dumps({"global_step": 10 * n, "log_history": rows}))
    code, rep = _judge(p)
    assert rep["mapping"]["reward"]["source"] == "objective/scores"
    assert code == 0 and rep["verdict"] in ("PASS", "WARN"), rep["findings"]
    only = [{k: v for k, v in r.items() if k != "objective/scores"} for r in rows]
    p.write_text(json.dumps({"global_step": 10 * n, "log_history": only}))
    code, rep = _judge(p)
    assert rep["mapping"]["reward"]["source"] == "objective/rlhf_reward"
