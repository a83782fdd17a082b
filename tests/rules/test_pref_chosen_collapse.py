"""TP-PREF-CHOSEN-COLLAPSE (a WARN): a preference run whose chosen answers' log-probability
fell to twice its start or further. Generated DPO logs in TRL's keys (10-1,000 logs, 1-5%
noise, starts of -30 to -400) whose chosen log-probability falls 3-7x over the run, and the healthy
shapes nearest to it: flat, a mild 1.3x fall, ORPO's per-token log-probabilities rising
toward 0, a short log."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import run_of

from trainproof.findings import Level
from trainproof.rules.engine import judge_runlog

RULE = "TP-PREF-CHOSEN-COLLAPSE"


def _dpo(n, seed, start, end_ratio, sigma):
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    chosen = start * end_ratio**t * np.exp(sigma * rng.standard_normal(n))
    rejected = chosen * 1.1 + start * 0.3 * t
    margin = (chosen - rejected) * -0.1
    loss = np.log1p(np.exp(-margin)) * np.exp(sigma * rng.standard_normal(n))
    return {
        "loss": loss,
        "rewards/margins": margin,
        "rewards/accuracies": np.clip(0.5 + 0.4 * t, 0, 1),
        "logps/chosen": chosen,
        "logps/rejected": rejected,
    }


@pytest.mark.parametrize("n", [20, 100, 1000])
@pytest.mark.parametrize("ratio", [3.0, 4.0, 7.0])
def test_a_chosen_log_probability_that_collapses_warns(n, ratio):
    for seed in range(3):
        start, sigma = (-30.0, -147.0, -400.0)[seed], (0.01, 0.03, 0.05)[seed]
        rep = judge_runlog(run_of(**_dpo(n, seed, start, ratio, sigma)))
        f = {x.id: x for x in rep.findings}
        assert RULE in f and f[RULE].level is Level.WARN, (n, ratio, seed, rep.ids())


@pytest.mark.parametrize("n", [10, 100, 1000])
def test_the_healthy_shapes_nearest_to_it_do_not_warn(n):
    for seed in range(3):
        start, sigma = (-30.0, -147.0, -400.0)[seed], (0.01, 0.03, 0.05)[seed]
        for ratio in (1.0, 1.3):
            rep = judge_runlog(run_of(**_dpo(n, seed, start, ratio, sigma)))
            assert RULE not in rep.ids(), (n, ratio, seed, rep.ids())
        # ORPO's per-token log-probabilities rise toward 0 as the policy fits the chosen answers
        cols = _dpo(n, seed, -0.9, 0.1, sigma)
        rep = judge_runlog(run_of(**cols))
        assert RULE not in rep.ids(), (n, seed, rep.ids())
    # too short a log to read a start and an end
    rep = judge_runlog(run_of(**_dpo(8, 0, -147.0, 7.0, 0.01)))
    assert RULE not in rep.ids()
