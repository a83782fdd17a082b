"""TP-EVAL-SPIKE: a held-out loss that jumps an order of magnitude and comes back.

Generated variants: eval series of 8 to 200 evaluations, log-noise 0.5% to 30% (normal and
heavy-tailed), bursts of 1 to 3 evaluations at random places; the negatives are the healthy
shapes nearest the signature (a noisy small eval set, a first evaluation before training,
overfitting that stays up, a jump at the last evaluation, a 5x bump)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import judge_cols


def _run(evals: np.ndarray, per_eval: int = 5, seed: int = 0) -> dict:
    """Columns of a run with a falling train loss and ``evals`` every ``per_eval`` rows."""
    rng = np.random.default_rng(seed)
    n = evals.size * per_eval
    t = np.arange(n) / n
    loss = (0.3 + 2.0 * np.exp(-5 * t)) * np.exp(0.05 * rng.standard_normal(n))
    ev = [None] * n
    for k, x in enumerate(evals):
        ev[(k + 1) * per_eval - 1] = float(x)
    return dict(loss=loss.tolist(), eval_loss=ev)


def _healthy_evals(m: int, noise: float, rng, heavy: bool = False) -> np.ndarray:
    """A falling eval loss with log-noise of scale ``noise``; ``heavy``: t(4) innovations
    (an eval loss is a mean over a fixed set, so its tails are lighter than a batch's)."""
    t = np.arange(m) / m
    e = rng.standard_t(4, m) / 1.1 if heavy else rng.standard_normal(m)
    return (0.5 + 1.5 * np.exp(-4 * t)) * np.exp(noise * e)


def _ids(cols) -> set[str]:
    return set(judge_cols(**cols).ids())


@pytest.mark.parametrize("seed", range(12))
def test_a_burst_of_tenfold_or_more_that_comes_back_warns(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.choice([8, 12, 30, 80, 200]))
    evals = _healthy_evals(m, float(rng.uniform(0.005, 0.1)), rng)
    width = int(rng.integers(1, 3 if m < 12 else 4))
    at = int(rng.integers(3, m - width))
    evals[at : at + width] *= float(rng.uniform(12, 300))
    rep = judge_cols(**_run(evals, seed=seed))
    f = [f for f in rep.findings if f.id == "TP-EVAL-SPIKE"]
    assert len(f) == 1, (m, width, at, rep.ids())
    assert f[0].level.value == "WARN" and f[0].data["ratio"] >= 10
    assert rep.verdict.value != "FAIL"


@pytest.mark.parametrize("seed", range(40))
def test_healthy_eval_noise_never_warns(seed):
    # Up to 30% normal log-noise (a small eval set of a noisy model), 15% with t(4) tails.
    rng = np.random.default_rng(1000 + seed)
    m = int(rng.choice([8, 12, 30, 80, 200]))
    heavy = bool(seed % 2)
    evals = _healthy_evals(m, float(rng.uniform(0.005, 0.15 if heavy else 0.3)), rng, heavy=heavy)
    assert "TP-EVAL-SPIKE" not in _ids(_run(evals, seed=seed))


@pytest.mark.parametrize("case", ["untrained_first_eval", "overfit_stays_up", "jump_at_last_eval", "fivefold_bump"])
def test_the_healthy_and_other_shapes_nearest_a_spike_do_not_warn(case):
    rng = np.random.default_rng(7)
    evals = _healthy_evals(30, 0.02, rng)
    if case == "untrained_first_eval":  # evaluated before training: 20x the trained level
        evals[0] = 20 * evals[5]
    elif case == "overfit_stays_up":  # a climb that stays is TP-OVERFIT's, not a spike
        evals[15:] = evals[15] * np.linspace(1, 15, 15)
    elif case == "jump_at_last_eval":  # nothing after it shows a return
        evals[-1] *= 50
    else:
        evals[12] *= 5
    assert "TP-EVAL-SPIKE" not in _ids(_run(evals))


def test_too_few_evaluations_are_skipped_not_passed():
    rng = np.random.default_rng(3)
    evals = _healthy_evals(7, 0.02, rng)
    evals[4] *= 100
    rep = judge_cols(**_run(evals))
    assert "TP-EVAL-SPIKE" not in rep.ids()
    assert rep.skipped["TP-EVAL-SPIKE"].reason == "too_few_points"


@pytest.mark.parametrize("n", [3, 4, 5, 6, 7, 40, 501])
def test_the_level_before_each_evaluation_is_the_median_of_the_five_before_it(n):
    from trainproof.rules._stats import median
    from trainproof.rules.evals import _preceding_medians

    y = np.log(np.random.default_rng(n).lognormal(0.0, 1.0, n))
    got = _preceding_medians(y)
    assert np.isnan(got[:3]).all()
    for i in range(3, n):
        assert got[i] == float(median(y[max(0, i - 5) : i])), i
