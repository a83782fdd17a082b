"""RL logs under the names their libraries give them (RLlib, CleanRL, Dopamine, Tianshou,
Stable-Baselines3's EvalCallback): the reward is mapped, the run is judged as RL (a PPO
value loss that grows with the return is no divergence), and a loss term that turns NaN
fails even where the terms map to no single loss."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from trainproof.api import judge


def _ppo_rows(reward_key: str, n: int = 40, seed: int = 0, **extra) -> list[dict]:
    """A healthy PPO run: the return climbs 21 -> ~190, the total loss climbs with it (the
    value targets grow with the return), as real CartPole runs do."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        ret = 21 + 170 / (1 + np.exp(-(i - n / 2) / (n / 10))) + rng.normal(0, 6)
        rows.append(
            {
                "training_iteration": i + 1,
                reward_key: float(ret),
                "total_loss": float(20 + 0.1 * ret + rng.normal(0, 1.5)),
                **{k: (v(i) if callable(v) else v) for k, v in extra.items()},
            }
        )
    return rows


def _write(tmp_path: Path, rows: list[dict]) -> Path:
    p = tmp_path / "result.json"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


@pytest.mark.parametrize(
    "key",
    [
        "episode_reward_mean",  # RLlib, old API
        "env_runners/episode_return_mean",  # RLlib, new API
        "sampler_results/episode_reward_mean",
        "charts/episodic_return",  # CleanRL
        "Train/AverageReturns",  # Dopamine
        "rew",  # Tianshou's bar
        "eval/mean_reward",  # SB3 EvalCallback
        "episode_reward",  # a hand-written DQN loop
        "ep_reward",
    ],
)
def test_a_healthy_ppo_run_under_each_librarys_reward_name_is_rl_and_passes(tmp_path: Path, key: str) -> None:
    rep = judge(_write(tmp_path, _ppo_rows(key)))
    assert rep.mapping["reward"]["source"] == key
    assert "TP-RL-OBJECTIVE" in rep.ids() and rep.verdict.value == "PASS", rep.ids()


def test_the_same_rising_loss_beside_no_reward_is_still_a_divergence(tmp_path: Path) -> None:
    # the negative: a metric that is no reward leaves the run supervised, and a loss that
    # climbs far above its best is judged so
    rows = _ppo_rows("val_accuracy")
    for i, r in enumerate(rows):
        r["total_loss"] = 2.0 - i / 40 if i < 20 else 1.5 + (i - 20) * 0.6
    rep = judge(_write(tmp_path, rows))
    assert "TP-RL-OBJECTIVE" not in rep.ids() and "TP-DIVERGE" in rep.ids(), rep.ids()


def test_rllib_nested_learning_rate_of_zero_is_read(tmp_path: Path) -> None:
    rows = _ppo_rows("episode_reward_mean", **{"info/learner/default_policy/learner_stats/cur_lr": 0.0})
    rep = judge(_write(tmp_path, rows))
    assert rep.mapping["lr"]["source"].endswith("learner_stats/cur_lr")
    assert "TP-ZERO-LR" in rep.ids() and rep.verdict.value == "FAIL"


def test_a_nan_term_of_an_actor_critic_with_no_single_loss_fails(tmp_path: Path) -> None:
    def rows(nan_from: int | None) -> list[dict]:
        out = []
        for i in range(40):
            bad = nan_from is not None and i >= nan_from
            out.append(
                {
                    "global_step": 512 * (i + 1),
                    "charts/episodic_return": 21.0 + 4 * i,
                    "losses/value_loss": float("nan") if bad else 40.0 + i,
                    "losses/policy_loss": float("nan") if bad else -0.01,
                    "losses/approx_kl": float("nan") if bad else 0.004,
                }
            )
        return out

    healthy = judge(_write(tmp_path, rows(None)))
    assert "loss" not in healthy.mapping and healthy.verdict.value == "PASS", healthy.ids()
    broken = judge(_write(tmp_path, rows(30)))
    f = [x for x in broken.findings if x.id == "TP-NAN"]
    assert broken.verdict.value == "FAIL" and f and f[0].data["key"] == "losses/policy_loss"
    assert f[0].data["first_step"] == 512 * 31


def test_ray_tune_and_rllib_rows_step_by_their_counters(tmp_path: Path) -> None:
    from trainproof.api import read_runlog

    rows = _ppo_rows("episode_reward_mean", timesteps_total=lambda i: 2048 * (i + 1), timestamp=1.7e9)
    assert read_runlog(_write(tmp_path, rows)).series["loss"].steps[[0, -1]].tolist() == [2048.0, 2048.0 * 40]
    for r in rows:
        del r["timesteps_total"]  # a Tune trainable that is no RLlib algorithm: its report count
    assert read_runlog(_write(tmp_path, rows)).series["loss"].steps[[0, -1]].tolist() == [1.0, 40.0]
