"""The train-loss rules on hand-made series: TP-NAN, TP-ZERO-LOSS, TP-ZERO-LOSS-ONSET,
TP-FLAT, TP-DEAD-RUN and TP-DIVERGE, each positive and negative.

Every run is built in memory with ``build_runlog`` and judged with ``judge_runlog``; the
n-th logged point (0-based) sits at step ``10 * (n + 1)`` and source line ``n + 1``.
Noise is multiplicative (``level * exp(rel * z)``, z standard normal from a seeded
generator), so "10% noise" means a point-to-point relative noise of about 10%.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from _helpers import run_of

from trainproof.findings import Level
from trainproof.rules.engine import judge_runlog
from trainproof.rules.thresholds import DEFAULT

from conftest import first_seed_fast, make_run, one
from conftest import judge_cols as judge

# --- helpers --------------------------------------------------------------------------


def step_of(i: int) -> float:
    return float(10 * (i + 1))


def noisy(level, rel, rng):
    level = np.asarray(level, dtype=float)
    return level * np.exp(rel * rng.standard_normal(level.shape))


def decaying(n, rel=0.02, seed=0):
    """A healthy curve: 0.5 + 2.5 exp(-5t), t in [0, 1]."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n)
    return noisy(0.5 + 2.5 * np.exp(-5 * t), rel, rng)


# --- TP-NAN ---------------------------------------------------------------------------


def test_nan_one_nan_in_the_middle_fires_with_first_step_and_count():
    loss = list(decaying(40))
    loss[17] = math.nan
    rep = judge(loss=loss)
    f = one(rep, "TP-NAN")
    assert f.level is Level.FAIL and rep.verdict is Level.FAIL
    assert f.data["count"] == 1 and f.data["points"] == 40
    assert f.data["first_step"] == step_of(17)
    assert (f.step, f.line) == (step_of(17), 18)
    assert "1 of 40" in f.evidence and "1 NaN" in f.evidence


def test_nan_counts_nan_and_both_infinities_and_points_at_the_first():
    loss = list(decaying(30))
    loss[5] = math.inf
    loss[9] = math.nan
    loss[20] = -math.inf
    f = one(judge(loss=loss), "TP-NAN")
    assert f.data["count"] == 3
    assert f.data["first_step"] == step_of(5) and f.line == 6
    for part in ("1 NaN", "1 +Inf", "1 -Inf"):
        assert part in f.evidence


def test_nan_absent_when_every_loss_is_finite():
    rep = judge(loss=decaying(40))
    assert "TP-NAN" not in rep.ids()
    assert "TP-NAN" in rep.ran


def test_nan_every_loss_nan_fails_and_the_shape_rules_are_skipped():
    rep = judge(loss=[math.nan] * 12)
    f = one(rep, "TP-NAN")
    assert f.data["count"] == 12 and f.data["first_step"] == step_of(0)
    assert rep.verdict is Level.FAIL
    for rid in ("TP-FLAT", "TP-DIVERGE", "TP-DEAD-RUN"):
        assert rep.skipped[rid].reason == "too_few_points"


# --- TP-ZERO-LOSS ---------------------------------------------------------------------


def test_zero_loss_every_finite_loss_exactly_zero_fails():
    rep = judge(loss=[0.0] * 8)
    f = one(rep, "TP-ZERO-LOSS")
    assert f.level is Level.FAIL and rep.verdict is Level.FAIL
    assert f.data["points"] == 8
    assert (f.data["first_step"], f.data["last_step"]) == (step_of(0), step_of(7))
    assert (f.step, f.line) == (step_of(0), 1)
    assert "TP-ZERO-LOSS-ONSET" not in rep.ids()


def test_zero_loss_negative_zero_counts_as_zero():
    f = one(judge(loss=[0.0, -0.0, 0.0, -0.0, -0.0, 0.0]), "TP-ZERO-LOSS")
    assert f.data["points"] == 6


def test_zero_loss_ignores_non_finite_points_but_needs_five_finite_zeros():
    rep = judge(loss=[0.0, math.nan, 0.0, 0.0, 0.0, 0.0])
    assert one(rep, "TP-ZERO-LOSS").data["points"] == 5
    rep4 = judge(loss=[0.0, math.nan, 0.0, 0.0, 0.0])
    assert "TP-ZERO-LOSS" not in rep4.ids()
    assert rep4.skipped["TP-ZERO-LOSS"].reason == "too_few_points"


@pytest.mark.parametrize("value", [1e-4, 1e-12, -1e-4])
def test_zero_loss_near_zero_but_nonzero_losses_do_not_fire(value):
    rng = np.random.default_rng(3)
    loss = value * (1 + 0.01 * rng.standard_normal(30))
    rep = judge(loss=loss)
    assert "TP-ZERO-LOSS" not in rep.ids()
    assert "TP-ZERO-LOSS-ONSET" not in rep.ids()
    assert "TP-ZERO-LOSS" in rep.ran


def test_zero_loss_one_nonzero_point_breaks_every():
    rep = judge(loss=[0.0] * 9 + [1e-9])
    assert "TP-ZERO-LOSS" not in rep.ids()


def test_zero_loss_with_nan_grad_norm_says_hidden_nan():
    rep = judge(loss=[0.0] * 6, grad_norm=[math.nan] * 6)
    f = one(rep, "TP-ZERO-LOSS")
    assert "hidden NaN" in f.evidence
    assert f.data["grad_norm_points"] == 6 and f.data["grad_norm_nonfinite"] == 6


def test_zero_loss_with_zero_grad_norm_says_nothing_is_learned():
    f = one(judge(loss=[0.0] * 6, grad_norm=[0.0] * 6), "TP-ZERO-LOSS")
    assert "hidden NaN" not in f.evidence and "exactly 0" in f.evidence
    assert f.data["grad_norm_zero"] == 6


# --- TP-ZERO-LOSS-ONSET ---------------------------------------------------------------


def test_zero_loss_onset_positive_then_five_zeros_fails_at_the_onset():
    loss = list(decaying(20)) + [0.0] * 5
    rep = judge(loss=loss)
    f = one(rep, "TP-ZERO-LOSS-ONSET")
    assert f.level is Level.FAIL and rep.verdict is Level.FAIL
    assert f.data["onset_step"] == step_of(20) and f.data["zero_points"] == 5
    assert f.data["points"] == 25
    assert f.data["loss_before"] == pytest.approx(loss[19])
    assert (f.step, f.line) == (step_of(20), 21)
    assert "TP-ZERO-LOSS" not in rep.ids()


def test_zero_loss_onset_with_nan_grad_norm_at_those_steps_is_a_hidden_nan():
    loss = list(decaying(20)) + [0.0] * 6
    grad = [0.5] * 20 + [math.nan] * 6
    f = one(judge(loss=loss, grad_norm=grad), "TP-ZERO-LOSS-ONSET")
    assert "hidden NaN" in f.evidence
    assert f.data["grad_norm_points"] == 6 and f.data["grad_norm_nonfinite"] == 6


def test_zero_loss_onset_with_finite_grad_norm_does_not_claim_a_hidden_nan():
    loss = list(decaying(20)) + [0.0] * 6
    f = one(judge(loss=loss, grad_norm=[0.5] * 26), "TP-ZERO-LOSS-ONSET")
    assert "hidden NaN" not in f.evidence
    assert f.data["grad_norm_nonfinite"] == 0


def test_zero_loss_onset_counts_negative_zero():
    loss = list(decaying(20)) + [0.0, -0.0, 0.0, -0.0, 0.0]
    assert one(judge(loss=loss), "TP-ZERO-LOSS-ONSET").data["zero_points"] == 5


def test_zero_loss_onset_needs_five_trailing_zeros():
    rep = judge(loss=list(decaying(20)) + [0.0] * 4)
    assert "TP-ZERO-LOSS-ONSET" not in rep.ids()
    assert "TP-ZERO-LOSS-ONSET" in rep.ran


def test_zero_loss_onset_zeros_in_the_middle_that_recover_do_not_fire():
    loss = list(decaying(20)) + [0.0] * 8 + list(decaying(5) * 0.2)
    assert "TP-ZERO-LOSS-ONSET" not in judge(loss=loss).ids()


def test_zero_loss_onset_near_zero_tail_does_not_fire():
    loss = list(decaying(20)) + [1e-4] * 10
    rep = judge(loss=loss)
    assert "TP-ZERO-LOSS-ONSET" not in rep.ids() and "TP-ZERO-LOSS" not in rep.ids()


# --- TP-ZERO-LOSS-FITTED --------------------------------------------------------------


def _underflow(n, decades_per_log, start=0.76, seed=0):
    """A loss that falls ``decades_per_log`` decades a log with a wobble until it
    underflows (below 1e-9) to exactly 0.0, as a float32 cross-entropy on an easy task
    does; the rest of the run is 0.0."""
    rng = np.random.default_rng(seed)
    v = start * 10.0 ** (-decades_per_log * np.arange(n)) * np.exp(0.3 * rng.standard_normal(n))
    v[v < 1e-9] = 0.0
    return v


@pytest.mark.parametrize("n,dpl", [(20, 1.5), (100, 0.5), (2000, 0.05)])
@pytest.mark.parametrize("grad", ["zero", "none"])
def test_zero_loss_fitted_a_loss_that_underflows_to_zero_is_a_warning(n, dpl, grad):
    # Helpers' easy 2- and 4-class tasks went 0.76 -> 3.7e-9 -> 0.0 and were stopped
    # in-loop by TP-ZERO-LOSS-ONSET ("a hidden NaN").
    loss = _underflow(n, dpl)
    cols = {"loss": loss}
    if grad == "zero":
        cols["grad_norm"] = np.where(loss > 0, 1e-3 + loss, 0.0)
    rep = judge(**cols)
    f = one(rep, "TP-ZERO-LOSS-FITTED")
    assert rep.verdict is Level.WARN and f.data["read"] == "underflow"
    assert not {"TP-ZERO-LOSS-ONSET", "TP-ZERO-GRAD-ONSET"} & set(rep.ids())


@pytest.mark.parametrize("n,seed", [(60, 0), (400, 1), (3000, 2)])
def test_zero_loss_fitted_zeros_that_come_and_go_far_below_the_start(n, seed):
    # A hinge loss on separable data: 1.39 at the start, then batches at 0.001-0.01
    # among batches where every example meets the margin (exactly 0), then 0 to the end.
    rng = np.random.default_rng(seed)
    loss = np.where(rng.random(n) < 0.5, 0.0, 0.005 * np.exp(rng.standard_normal(n)))
    loss[:3] = [1.39, 0.14, 0.016]
    loss[-max(5, n // 10) :] = 0.0
    rep = judge(loss=loss)
    assert one(rep, "TP-ZERO-LOSS-FITTED").data["read"] == "intermittent"
    assert rep.verdict is Level.WARN


@pytest.mark.parametrize("n", [30, 150, 600])
@pytest.mark.parametrize("first", [[5.5e-6], [1.26e-3, 3.0e-6, 1.86e-8], [3.2e-5, 1.49e-8, 1.49e-8]])
def test_zero_loss_fitted_a_run_logged_from_float_precision_is_a_warning(n, first):
    # An easy task fitted within its first logging intervals (a helper's Lightning run:
    # 5.5e-6 at its first log, then 149 exact zeros) shows no ordinary level for the zeros
    # to fall from: TP-ZERO-LOSS-ONSET failed it as a hidden NaN.
    loss = list(first) + [0.0] * (n - len(first))
    rep = judge(loss=loss)
    assert rep.verdict is Level.WARN and "TP-ZERO-LOSS-FITTED" in rep.ids(), rep.ids()
    assert "TP-ZERO-LOSS-ONSET" not in rep.ids()
    # The same first level with a NaN gradient norm over the zeros is still the hidden NaN.
    grad = [0.1] * len(first) + [math.nan] * (n - len(first))
    assert judge(loss=loss, grad_norm=grad).verdict is Level.FAIL


@pytest.mark.parametrize("n,seed", [(200, 0), (1000, 1)])
def test_zero_loss_mixed_zeros_among_float_precision_losses_are_no_fail(n, seed):
    # Batches of 4 on an easy task: 0.0 whenever every example is fitted, else one or a few
    # float32 ulps (2.98e-8, 5.96e-8, ...): positives at float precision are no ordinary level.
    rng = np.random.default_rng(seed)
    loss = np.where(rng.random(n) < 0.85, 0.0, 2.98e-8 * rng.integers(1, 6, n))
    loss[:3] = [1.36e-4, 1.19e-7, 2.98e-8]
    loss[-1] = 2.98e-8
    rep = judge(loss=loss)
    assert "TP-ZERO-LOSS-MIXED" not in rep.ids() and rep.verdict is not Level.FAIL, rep.ids()
    # Zeros among ordinary losses still fail.
    ordinary = np.where(rng.random(n) < 0.3, 0.0, 0.9 * np.exp(0.05 * rng.standard_normal(n)))
    ordinary[:3], ordinary[-1] = [2.3, 2.2, 2.1], 0.9
    assert "TP-ZERO-LOSS-MIXED" in judge(loss=ordinary).ids()


@pytest.mark.parametrize(
    "case",
    ["ordinary-level", "nan-grad", "fell-three-decades", "zeros-among-ordinary", "large-start", "stray-zeros"],
)
def test_zero_loss_fitted_a_zero_from_a_level_the_run_holds_is_still_the_fail(case):
    loss = list(decaying(20)) + [0.0] * 6  # an ordinary level, then zeros: a hidden NaN
    cols = {}
    if case == "nan-grad":  # an underflow shape whose zeros have NaN gradient norms
        loss = list(_underflow(40, 0.5))
        cols["grad_norm"] = [0.5 if x > 0 else math.nan for x in loss]
    elif case == "fell-three-decades":  # 1e-3 of the start, then abruptly 0.0
        loss = list(0.76 * 10.0 ** (-3 * np.linspace(0, 1, 30))) + [0.0] * 8
    elif case == "zeros-among-ordinary":  # zeros that came and went among ordinary losses
        loss = [2.3, 2.2, 2.1] + [0.0 if i % 3 == 0 else 0.9 for i in range(30)] + [0.0] * 6
    elif case == "large-start":  # a regression from 7,876 to its noise floor 0.68, then a NaN written as 0
        loss = list(0.68 + 7876 * np.exp(-np.arange(60) / 5)) + [0.0] * 8
    elif case == "stray-zeros":  # three fully masked batches in 600, then every label masked
        rng = np.random.default_rng(0)
        loss = list(1.93 * np.exp(-np.arange(600) / 20) + 0.13 * np.exp(0.1 * rng.standard_normal(600)))
        for i in (150, 300, 450):
            loss[i] = 0.0
        loss += [0.0] * 50
    rep = judge(loss=loss, **cols)
    assert "TP-ZERO-LOSS-FITTED" not in rep.ids() and rep.verdict is Level.FAIL, rep.ids()


# --- TP-FLAT --------------------------------------------------------------------------


def test_flat_constant_at_the_logs_resolution_fails():
    # A collapsed output scores every example alike: written to 4 decimals, the loss
    # repeats its value at most logs.
    rng = np.random.default_rng(0)
    loss = np.round(2.0 * (1 + 2e-4 * rng.standard_normal(50)), 3)
    rep = judge(loss=loss)
    f = one(rep, "TP-FLAT")
    assert f.level is Level.FAIL and rep.verdict is Level.FAIL
    assert f.data["points"] == 50
    assert f.data["rel_std"] < 0.001 and f.data["threshold"] == 0.001
    assert f.data["repeat_share"] >= 0.5
    assert f.data["mean"] == pytest.approx(2.0, rel=1e-3)
    assert (f.step, f.line) == (step_of(0), 1)
    assert "exactly equal" in f.evidence


@pytest.mark.parametrize("n", [12, 50, 5000])
def test_flat_float_rounding_alone_fails(n):
    # A fixed batch through a frozen model with nondeterministic kernels: distinct values,
    # a spread of float32 rounding.
    rng = np.random.default_rng(n)
    loss = 2.0 * (1 + 2e-7 * rng.standard_normal(n))
    f = one(judge(loss=loss), "TP-FLAT")
    assert f.data["repeat_share"] < 0.5 and f.data["rel_std"] < 1e-6
    assert "float rounding" in f.evidence


@pytest.mark.parametrize("n,rel", [(12, 2e-4), (50, 2e-4), (50, 7e-4), (5000, 5e-5), (40000, 7e-4)])
def test_flat_a_resolved_small_spread_is_a_floor_not_a_fail(n, rel):
    # A run at its floor, its loss averaged over many steps: tiny noise, but every logged
    # value differs. Nothing in the log says the model is frozen: a WARN at most.
    rng = np.random.default_rng(n)
    loss = 0.002 * (1 + rel * rng.standard_normal(n))
    rep = judge(loss=loss)
    assert "TP-FLAT" not in rep.ids() and "TP-FLAT" in rep.ran
    assert rep.verdict is not Level.FAIL, rep.ids()
    # The same loss beside a learning rate of 0 is dead, through its cause.
    rep = judge(loss=loss, learning_rate=[0.0] * n)
    assert rep.verdict is Level.FAIL and "TP-FLAT" not in rep.ids()


def test_flat_exactly_constant_loss_fails():
    f = one(judge(loss=[2.5] * 20), "TP-FLAT")
    assert f.data["rel_std"] == 0.0


def test_flat_at_ln3_is_explained_by_the_chance_level():
    rep = judge(loss=[1.098612] * 20, eval_accuracy=[None] * 4 + [0.33, 0.34] * 8)
    assert "TP-FLAT" in one(rep, "TP-CHANCE-LEVEL").data["implies"]
    # Without an accuracy the frozen loss is the FAIL, and it explains the level (a WARN).
    rep = judge(loss=[1.098612] * 20)
    assert "TP-NEAR-CHANCE" in one(rep, "TP-LOSS-FROZEN").data["implies"]


@pytest.mark.parametrize("rel", [0.003, 0.02, 0.3])
def test_flat_a_loss_that_moves_does_not_fire(rel):
    rng = np.random.default_rng(1)
    rep = judge(loss=noisy(np.full(60, 2.0), rel, rng))
    assert "TP-FLAT" not in rep.ids()
    assert "TP-FLAT" in rep.ran


def test_flat_needs_eight_points():
    rep = judge(loss=[2.0] * 7)
    assert "TP-FLAT" not in rep.ids()
    assert rep.skipped["TP-FLAT"].reason == "too_few_points"


# --- TP-DEAD-RUN ----------------------------------------------------------------------


def test_dead_run_flat_noisy_loss_fails_with_both_medians():
    rng = np.random.default_rng(2)
    loss = noisy(np.full(50, 2.0), 0.01, rng)
    rep = judge(loss=loss, lr=[1e-8] * 50)  # the cause: a learning rate of about zero
    f = one(rep, "TP-DEAD-RUN")
    assert f.data["cause"] == "tiny_lr"
    assert f.level is Level.FAIL
    assert f.data["first_median"] == pytest.approx(float(np.median(loss[:5])))
    assert f.data["last_median"] == pytest.approx(float(np.median(loss[-5:])))
    assert f.data["improvement"] < 0.05 and f.data["window"] == 5
    assert (f.step, f.line) == (step_of(49), 50)


def test_dead_run_boundary_four_percent_is_no_progress_six_percent_is_progress():
    # The 5% boundary alone: the trend exemption is switched off (a noise-free curve
    # always has a "significant" trend). 20 points are too few to show that nothing moves,
    # so no progress is a WARN.
    th = DEFAULT.with_overrides({"dead_trend_z": 1e9})
    head = [1.0] * 5
    mid = list(np.linspace(1.0, 0.9, 10))
    rep4 = judge_runlog(make_run(loss=head + mid + [0.96] * 5), th)
    assert one(rep4, "TP-LOSS-STALLED").data["improvement"] == pytest.approx(0.04)
    assert "TP-DEAD-RUN" not in rep4.ids()
    rep6 = judge_runlog(make_run(loss=head + mid + [0.94] * 5), th)
    assert not {"TP-DEAD-RUN", "TP-LOSS-STALLED"} & set(rep6.ids())


@pytest.mark.parametrize("seed", range(5))
def test_dead_run_a_steady_slow_decline_is_learning_not_dead(seed):
    # A loss with a large constant offset falling 1.3% steadily (a VAE's ELBO): under 5%,
    # but the trend is unmistakable.
    rng = np.random.default_rng(seed)
    n = 240
    v = 995 + 13 * np.exp(-np.arange(n) / 40) + 0.05 * rng.standard_normal(n)
    rep = judge(loss=list(v))
    assert "TP-DEAD-RUN" not in rep.ids()
    assert "TP-DEAD-RUN" in rep.ran


@pytest.mark.parametrize("seed", range(5))
def test_dead_run_noise_around_a_constant_is_pinned_but_dead_only_with_a_cause(seed):
    # +-1% noise around a constant level. Over 100 points the 99% interval of the change
    # is about +-0.008 nats, inside a slow learner's +-0.051: pinned. A run that reached
    # its floor before its first log holds one level too, so without a cause in the log
    # it is no progress (a WARN that says the loss is pinned); a learning rate of about
    # zero makes it a dead run. Over 25 points the interval is never enough.
    rng = np.random.default_rng(seed)
    v = list(2.6 * np.exp(0.01 * rng.standard_normal(100)))
    rep = judge(loss=v)
    f = one(rep, "TP-LOSS-STALLED")
    lo, hi = f.data["change_interval"]
    bar = -math.log(0.95)
    assert -bar < lo < hi < bar and "pinned to one level" in f.evidence and "names no cause" in f.evidence
    assert "TP-DEAD-RUN" not in rep.ids() and rep.verdict is Level.WARN
    assert one(judge(loss=v, lr=[5e-9] * 100), "TP-DEAD-RUN").data["cause"] == "tiny_lr"
    short = judge(loss=list(2.6 * np.exp(0.01 * rng.standard_normal(25))))
    assert "TP-DEAD-RUN" not in short.ids() and "TP-LOSS-STALLED" in short.ids()


@pytest.mark.parametrize("seed", range(5))
def test_dead_run_a_loss_is_called_pinned_only_when_pinned_from_its_first_point(seed):
    # kevin-flat-1k's noise (+-5%) or a first log 10% above the level: the log may start at
    # the end of a drop the run made before it (a fine-tune logged every few hundred
    # steps), so a tight interval over the run is no progress, a WARN, not a dead run.
    rng = np.random.default_rng(seed)
    noisy_run = judge(loss=list(2.6 * np.exp(0.05 * rng.standard_normal(1000))))
    f = one(noisy_run, "TP-LOSS-STALLED")
    lo, hi = f.data["change_interval"]
    assert -0.051 < lo < hi < 0.051
    assert ("too noisy" in f.evidence or "above the end level" in f.evidence) and "TP-DEAD-RUN" not in noisy_run.ids()
    head = 2.6 * np.exp(0.005 * rng.standard_normal(300))
    head[0] *= 1.1
    f = one(judge(loss=list(head)), "TP-LOSS-STALLED")
    assert "above the end level" in f.evidence
    head[0] /= 1.1  # pinned from its first point, with precise points: pinned, named so
    f = one(judge(loss=list(head)), "TP-LOSS-STALLED")
    assert "pinned to one level" in f.evidence and "above the end level" not in f.evidence


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("n", [60, 300, 3000])
def test_dead_run_a_slow_learner_at_the_bar_is_never_dead(seed, n):
    # A slow learner whose loss falls 5% over the run, hidden in 5% point noise (its trend
    # may or may not reach significance): never a FAIL, at any length.
    rng = np.random.default_rng(100 + seed)
    v = 8.4 * np.exp(np.linspace(0, -0.052, n) + 0.05 * rng.standard_normal(n))
    assert "TP-DEAD-RUN" not in judge(loss=list(v)).ids()


@pytest.mark.parametrize("seed", range(3))
def test_dead_run_a_plateau_after_a_drop_at_the_first_log_is_no_progress(seed):
    # hf-qwen-lora-plateau's shape: 1.57 at the first log, then a plateau near 1.42 with
    # 3% noise for 30 logs, the optimizer alive.
    rng = np.random.default_rng(seed)
    v = [1.57] + list(1.42 * np.exp(0.03 * rng.standard_normal(30)))
    rep = judge(loss=v, grad_norm=list(0.5 + 0.05 * rng.standard_normal(31)), lr=[1e-4] * 31)
    assert "TP-DEAD-RUN" not in rep.ids() and rep.verdict is not Level.FAIL


def test_dead_run_a_step_down_then_hold_is_no_progress():
    # A distillation loss that steps up once when its weights change, then holds and falls
    # a little: it moved, so it is not dead.
    v = list(np.linspace(4.2, 3.6, 17)) + [4.88, 4.85, 4.83]
    rep = judge(loss=v)
    assert "TP-DEAD-RUN" not in rep.ids()


@pytest.mark.parametrize("seed", range(10))
def test_dead_run_a_noisy_learner_does_not_fail(seed):
    # A small-batch learner: 25% point noise, a real 25% improvement over 300 logs.
    rng = np.random.default_rng(seed)
    n = 300
    level = 1.0 + 0.33 * np.exp(-np.arange(n) / 100)
    v = level * np.exp(0.25 * rng.standard_normal(n))
    assert "TP-DEAD-RUN" not in judge(loss=list(v)).ids()


def test_dead_run_a_run_that_ends_higher_is_no_progress_and_says_so():
    f = one(judge(loss=[1.0] * 5 + [1.05] * 5 + [1.1] * 5), "TP-LOSS-STALLED")
    assert f.data["improvement"] == pytest.approx(-0.1)
    assert "higher than it started" in f.message
    # 1.2x above its start and held is a climb, which says more than "no progress"
    f = one(judge(loss=[1.0] * 5 + [1.05] * 5 + [1.2] * 5), "TP-LOSS-CLIMB")
    assert "TP-LOSS-STALLED" in f.data["implies"] and "above where it started" in f.message


def test_dead_run_a_decaying_run_does_not_fire():
    rep = judge(loss=decaying(60, 0.05, seed=4))
    assert "TP-DEAD-RUN" not in rep.ids()
    assert rep.verdict is Level.PASS


def test_dead_run_needs_ten_points():
    rep = judge(loss=[2.0, 2.01, 1.99, 2.0, 2.02, 2.0, 1.98, 2.01, 2.0])
    assert rep.skipped["TP-DEAD-RUN"].reason == "too_few_points"


# --- TP-DIVERGE -----------------------------------------------------------------------
#
# The five required shapes, each over lengths, noise levels and seeds. Where a cell is
# left out, the reason is given: TP-DIVERGE's noise gate asks the gap between the end
# level and the best level to exceed 3 standard errors of those two levels, and a level
# read from the 3-point windows of a 20- or 60-point run at 30% noise is known only to
# about +-22%, so a 2x rise there is within the gate by design (the rule prefers a miss
# to a false FAIL).

LENGTHS = (20, 60, 300, 3000)
NOISES = (0.02, 0.10, 0.30)
SEEDS = (0, 1, 2)
GRID = [(n, rel, seed) for n in LENGTHS for rel in NOISES for seed in SEEDS]


def flat_with_dips(n, rel, seed, level=2.0):
    """A flat noisy series with one-point dips to 40% of the level on 1% of the points
    (at least one), never two in a row, one of them at index 0."""
    rng = np.random.default_rng(seed)
    v = noisy(np.full(n, level), rel, rng)
    k = max(1, n // 100)
    others = rng.choice(np.arange(1, n // 2), size=k - 1, replace=False) * 2
    v[np.concatenate(([0], others)).astype(int)] = 0.4 * level
    return v


@pytest.mark.parametrize("n,rel,seed", first_seed_fast(GRID, 2))
def test_diverge_a_flat_series_with_one_point_dips_does_not_fire(n, rel, seed):
    v = flat_with_dips(n, rel, seed)
    assert v[0] == pytest.approx(0.8) and np.sum(np.isclose(v, 0.8)) >= max(1, n // 100)
    rep = judge(loss=v)
    assert "TP-DIVERGE" in rep.ran
    assert "TP-DIVERGE" not in rep.ids(), one(rep, "TP-DIVERGE").evidence


def blow_up(n, rel, seed, head):
    """First ``head`` points at ~1.4 (1% jitter), then ~7.5 with ``rel`` noise to the end."""
    rng = np.random.default_rng(seed)
    v = noisy(np.full(n, 7.5), rel, rng)
    v[:head] = 1.4 * np.exp(0.01 * rng.standard_normal(head))
    return v


BLOWUP_GRID = [
    (n, rel, seed, head)
    for (n, rel, seed) in GRID
    for head in (1, 2, 3)
    # 20 points at 30% noise: a 3-point end window and a noise estimate from 19
    # differences miss a 5x blow-up in about 1 run in 10 (measured over 1000 seeds).
    if not (n == 20 and rel == 0.30)
]


@pytest.mark.parametrize("n,rel,seed,head", first_seed_fast(BLOWUP_GRID, 2))
def test_diverge_an_early_blow_up_fires_from_the_starting_level(n, rel, seed, head):
    v = blow_up(n, rel, seed, head)
    rep = judge(loss=v)
    f = one(rep, "TP-DIVERGE")
    assert f.level is Level.FAIL and rep.verdict is Level.FAIL
    assert f.data["best_level"] == pytest.approx(1.4, rel=0.05)
    assert f.data["ratio"] > 3.5
    assert f.data["best_step"] <= step_of(head - 1) + 10  # the starting level, not later
    assert f.step == f.data["best_step"] and f.line == int(f.step // 10)
    assert f.data["end_level"] == pytest.approx(7.5, rel=0.35)
    if head == 1:
        assert f.data["from_start"] is True and f.data["best_points"] == 1
        assert "starting level" in f.message


def test_diverge_single_point_start_is_the_level_the_corpus_shape():
    # The shape of the corpus' lr_hot runs: 1.4, a climb, a peak, and a long plateau near 7.5.
    loss = [1.4, 3.3, 24.2, 26.4, 20.1, 16.3, 36.8, 24.7, 12.4, 9.9] + [7.6 + 0.1 * math.sin(i) for i in range(50)]
    f = one(judge(loss=loss), "TP-DIVERGE")
    assert f.data["best_step"] == step_of(0) and f.line == 1
    assert f.data["best_level"] == 1.4
    assert f.data["ratio"] == pytest.approx(f.data["end_level"] / 1.4)


@pytest.mark.parametrize("n,seed", [(40, 0), (150, 1), (600, 2)])
def test_diverge_a_blow_up_from_the_first_step_that_settles_at_twice_the_start_fires(n, seed):
    # HF Trainer at lr 2.0, logging every step: 3.27 at step 1, a peak of 235, and a run that
    # settles around twice its starting loss. The first block holds the blow-up itself, so
    # the regain against it (3% of 235) is no noise-floor wiggle: the run never fell.
    rng = np.random.default_rng(seed)
    k = max(3, n // 15)
    up = np.exp(np.linspace(math.log(60), math.log(235), k))
    down = np.exp(np.linspace(math.log(235), math.log(7), k))
    tail = 6.5 * np.exp(0.08 * rng.standard_normal(n - 1 - 2 * k))
    v = np.r_[3.27, up, down, tail]
    f = one(judge(loss=v.tolist()), "TP-DIVERGE")
    assert f.data["from_start"] is True and f.data["best_level"] == 3.27


def _cyclic_lr(n):
    """A triangular cyclic learning rate, 0.005 -> 0.099 over 20 points, down to 0.002 over
    the next 20 (torch's CyclicLR with base_lr 0.002, max_lr 0.1, logged every 5 steps)."""
    cycle = np.r_[np.linspace(0.005, 0.099, 20), np.linspace(0.096, 0.002, 20)]
    return np.resize(cycle, n)


#: Block levels (12 points each) of a healthy run under that schedule: the loss falls with the
#: run and rises with the rate, and its lowest block (0.08) falls half-way up the last rising
#: phase, the run ending at the next peak (a new user's real run, 2 of 6 seeds FAILed).
CYCLIC_LEVELS = [
    1.31,
    0.73,
    0.43,
    0.16,
    0.32,
    0.47,
    0.146,
    0.167,
    0.42,
    0.216,
    0.165,
    0.32,
    0.23,
    0.108,
    0.23,
    0.26,
    0.15,
    0.08,
    0.32,
    0.23,
]


@pytest.mark.parametrize("seed", range(6))
def test_diverge_a_cyclic_rate_whose_best_is_half_way_up_a_rising_phase_is_not_a_divergence(seed):
    # The rate at the best block (0.05) climbs under 2x to the next peak, so the rate there
    # alone shows no new cycle; the cycle's trough (0.002) does.
    rng = np.random.default_rng(seed)
    lr = _cyclic_lr(240)
    loss = np.repeat(CYCLIC_LEVELS, 12) * np.exp(0.3 * rng.standard_normal(240))
    assert "TP-DIVERGE" not in judge(loss=loss.tolist(), lr=lr.tolist()).ids()
    # the same run blowing up in its last cycle, far above where the earlier cycles stood at
    # the same rates, still fails
    loss[-24:] *= 8
    assert "TP-DIVERGE" in judge(loss=loss.tolist(), lr=lr.tolist()).ids()


def decay_with_terminal_spike(n, rel, seed):
    v = decaying(n, rel, seed)
    v[-1] = 6.0  # 12x the end level, on the last point only
    return v


@pytest.mark.parametrize("n,rel,seed", first_seed_fast(GRID, 2))
def test_diverge_a_healthy_curve_with_one_terminal_spike_does_not_fire(n, rel, seed):
    v = decay_with_terminal_spike(n, rel, seed)
    rep = judge(loss=v)
    assert "TP-DIVERGE" in rep.ran
    assert "TP-DIVERGE" not in rep.ids(), one(rep, "TP-DIVERGE").evidence


def decay_with_terminal_pair(n, rel, seed, factor):
    v = decaying(n, rel, seed)
    v[-2:] *= factor  # the last two points only: nothing after them shows the climb held
    return v


@pytest.mark.parametrize("factor", [2.5, 8.0])
@pytest.mark.parametrize("n,rel,seed", first_seed_fast(GRID, 2))
def test_diverge_two_high_points_at_the_end_of_the_log_are_not_a_held_climb(n, rel, seed, factor):
    # The onset must be followed by two points above the bar: the last two points of a
    # log have fewer, so two high last points (a terminal pair of spikes, a log cut in
    # the middle of a wobble) are not a level the run moved to.
    rep = judge(loss=list(decay_with_terminal_pair(n, rel, seed, factor)))
    assert "TP-DIVERGE" in rep.ran
    assert "TP-DIVERGE" not in rep.ids(), one(rep, "TP-DIVERGE").evidence


@pytest.mark.parametrize("n", [20, 29, 60, 300])
def test_diverge_a_climb_held_over_the_end_window_is_a_held_climb(n):
    # The positive side of the test above: the same curve with its whole end window (3
    # points up to 29 points, 10% after) 8x up shows the climb held from its first point.
    w = max(3, n // 10)
    v = decaying(n, 0.02, 0)
    v[-w:] *= 8.0
    f = one(judge(loss=list(v)), "TP-DIVERGE")
    assert f.level is Level.FAIL and f.data["onset_step"] == step_of(n - w)


def warm_restarts(n, rel, seed, cycles=4):
    """Cosine-like warm restarts: within each cycle the loss decays by ~17%; at each
    restart it bumps back up by ~20%; the whole curve trends down from 3.6 to 0.8."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n, endpoint=False)
    phase = (t * cycles) % 1.0
    bump = 1.0 + 0.2 * (0.5 + 0.5 * np.cos(np.pi * phase))  # 1.2 at a restart, 1.0 at the cycle end
    return noisy(3.0 * np.exp(-1.5 * t) * bump, rel, rng)


@pytest.mark.parametrize("n,rel,seed", first_seed_fast(GRID, 2))
def test_diverge_warm_restarts_that_trend_down_do_not_fire(n, rel, seed):
    v = warm_restarts(n, rel, seed)
    rep = judge(loss=v)
    assert "TP-DIVERGE" in rep.ran
    assert "TP-DIVERGE" not in rep.ids(), one(rep, "TP-DIVERGE").evidence


def test_diverge_warm_restart_bumps_are_there():
    v = warm_restarts(400, 0.0, 0)
    jumps = np.flatnonzero(np.diff(v) > 0)
    assert len(jumps) == 3  # three restarts after the first cycle
    assert all(v[j + 1] / v[j] == pytest.approx(1.2, abs=0.02) for j in jumps)


def fall_and_climb(n, rel, seed):
    """3.0 falls to 1.0 by 35% of the run, holds to 45%, climbs back to 2.0 by 60% and stays."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n)
    level = np.interp(t, [0.0, 0.35, 0.45, 0.60, 1.0], [3.0, 1.0, 1.0, 2.0, 2.0])
    return noisy(level, rel, rng)


CLIMB_GRID = [
    (n, rel, seed)
    for (n, rel, seed) in GRID
    # 20 points: the minimum is held for 2 points and the noise estimate takes in the
    # steep fall and climb; above 2% noise a 2x rise is within the gate (about 1 run in
    # 8 missed at 10%). 60 points at 30%: 3-point levels, see the note above.
    if not (n == 20 and rel > 0.02) and not (n == 60 and rel == 0.30)
]


@pytest.mark.parametrize("n,rel,seed", first_seed_fast(CLIMB_GRID, 2))
def test_diverge_a_climb_back_to_twice_the_minimum_fires_at_the_minimum(n, rel, seed):
    v = fall_and_climb(n, rel, seed)
    rep = judge(loss=v)
    f = one(rep, "TP-DIVERGE")
    assert f.level is Level.FAIL
    t_best = (f.data["best_step"] - 10) / (10 * (n - 1))
    assert 0.30 <= t_best <= 0.50, t_best  # the minimum is held over 35%..45% of the run
    assert f.data["best_fraction"] == pytest.approx(t_best)
    assert f.data["best_level"] == pytest.approx(1.0, rel=0.25)
    assert f.data["ratio"] == pytest.approx(2.0, rel=0.3)
    assert f.data["end_window"] == max(3, n // 10)
    assert f.step == f.data["best_step"] and f.line == int(f.step // 10)


def test_diverge_a_climb_to_only_1_4x_does_not_fire():
    rng = np.random.default_rng(5)
    t = np.linspace(0.0, 1.0, 300)
    v = noisy(np.interp(t, [0.0, 0.35, 0.45, 0.60, 1.0], [3.0, 1.0, 1.0, 1.4, 1.4]), 0.02, rng)
    assert "TP-DIVERGE" not in judge(loss=v).ids()


def test_diverge_is_skipped_as_degenerate_when_a_loss_is_not_positive():
    v = list(decaying(30))
    v[10] = -0.1
    rep = judge(loss=v)
    assert rep.skipped["TP-DIVERGE"].reason == "degenerate"
    assert rep.skipped["TP-FLAT"].reason == "degenerate"
    assert "TP-DIVERGE" not in rep.ran


def test_diverge_needs_eight_points():
    rep = judge(loss=[1.0, 1.0, 5.0, 5.0, 5.0, 5.0, 5.0])
    assert rep.skipped["TP-DIVERGE"].reason == "too_few_points"


def test_diverge_evidence_carries_the_numbers():
    v = blow_up(300, 0.02, 0, 1)
    f = one(judge(loss=v), "TP-DIVERGE")
    assert f"{f.data['ratio']:.2f}x" in f.evidence
    assert "median of the last 30 points" in f.evidence
    assert f.data["log_gap"] == pytest.approx(math.log(f.data["ratio"]))
    assert f.data["log_gap"] > f.data["noise_gate"] > 0
    assert f.data["threshold"] == 1.5


@pytest.mark.parametrize("n", [300, 3000])
@pytest.mark.parametrize("rel", [0.02, 0.10])
def test_diverge_a_two_point_start_that_the_run_leaves_for_twice_its_level_fires(n, rel):
    rng = np.random.default_rng(11)
    v = noisy(np.full(n, 2.0), rel, rng)
    v[:2] = [1.0, 1.01]
    f = one(judge(loss=v), "TP-DIVERGE")
    assert f.data["from_start"] is True and f.data["best_points"] == 2
    assert f.data["best_level"] == 1.01  # the higher of the two points the run held
    assert (f.step, f.line) == (step_of(0), 1)
    assert f.data["ratio"] == pytest.approx(2.0 / 1.01, rel=0.05)


@pytest.mark.parametrize("n,rel,seed", first_seed_fast(GRID, 2))
def test_diverge_a_flat_noisy_series_does_not_fire(n, rel, seed):
    rng = np.random.default_rng(seed)
    rep = judge(loss=noisy(np.full(n, 2.0), rel, rng))
    assert "TP-DIVERGE" in rep.ran and "TP-DIVERGE" not in rep.ids()


def test_diverge_start_points_threshold_sets_what_a_lone_first_point_needs():
    from trainproof.rules.thresholds import DEFAULT

    rng = np.random.default_rng(4)
    dip = noisy(np.full(300, 2.0), 0.02, rng)
    dip[0] = 0.8  # the run sits 2.5x above its first point
    run = make_run(loss=dip)
    assert "TP-DIVERGE" not in judge_runlog(run).ids()  # 2 start points: a lone point needs 3x
    f = one(judge_runlog(run, DEFAULT.with_overrides({"diverge_start_points": 1})), "TP-DIVERGE")
    assert f.data["best_step"] == step_of(0) and f.data["best_level"] == 0.8
    blow = make_run(loss=blow_up(300, 0.02, 0, 1))
    assert "TP-DIVERGE" in judge_runlog(blow).ids()
    # 3 start points: the median of 3 ignores a lone first point
    assert "TP-DIVERGE" not in judge_runlog(blow, DEFAULT.with_overrides({"diverge_start_points": 3})).ids()


# --- divergence in the loss's own units (issue 31, part 2) ------------------------------


def _lr_climb_run(
    n_flat: int, n_climb: int, seed: int, rise_to: float = 3.3, climb: bool = True, jump: float | None = None
):
    """A cross-entropy falling 4.0 -> 2.5 under a flat learning rate for ``n_flat`` logs,
    then (``climb``) a learning rate multiplied by 1.05 a log (or, with ``jump``, raised
    that many times in one log and held) while the loss rises to ``rise_to`` and stays; 1%
    point noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(n_flat + n_climb)
    base = np.where(t < n_flat, 2.5 + 1.5 * np.exp(-t / (n_flat / 5)), 0.0)
    k = np.clip((t - n_flat) / max(1, n_climb // 3), 0, 1)
    loss = np.where(t < n_flat, base, 2.5 + (rise_to - 2.5) * k) * np.exp(0.01 * rng.standard_normal(t.size))
    raised = 1e-3 * jump if jump is not None else 1e-3 * 1.05 ** (t - n_flat + 1)
    lr = np.where(t < n_flat, 1e-3, raised) if climb else np.full(t.size, 1e-3)
    return list(loss), list(lr)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("n_flat,n_climb", [(150, 150), (60, 40), (400, 300)])
def test_a_rise_after_the_learning_rate_climbed_diverged_under_the_plain_ratio(seed, n_flat, n_climb):
    loss, lr = _lr_climb_run(n_flat, n_climb, seed)
    f = one(judge(loss=loss, lr=lr), "TP-DIVERGE")
    assert f.data["ratio"] < 1.5 and "learning rate climbed" in f.evidence


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("jump", [3.0, 30.0, 1500.0])
def test_a_rise_after_the_learning_rate_was_raised_in_one_log_diverged(seed, jump):
    # A rate raised by hand (or a resumed run given a larger one) jumps in one log and holds:
    # the same cause as a climb (a new user's 30-class run: 2.54 -> 3.12 after lr x30).
    loss, lr = _lr_climb_run(150, 150, seed, rise_to=3.1, jump=jump)
    f = one(judge(loss=loss, lr=lr), "TP-DIVERGE")
    assert f.data["ratio"] < 1.5 and "learning rate climbed" in f.evidence


@pytest.mark.parametrize("seed", range(3))
def test_a_raised_rate_whose_loss_holds_or_recovers_is_not_a_divergence(seed):
    # A higher rate in a second stage (a backbone unfrozen with a larger rate): the loss
    # holds, or bumps and comes back; a rate that jumps and decays again is a schedule.
    loss, lr = _lr_climb_run(150, 150, seed, rise_to=2.6, jump=10.0)
    assert "TP-DIVERGE" not in judge(loss=loss, lr=lr).ids()
    loss, lr = _lr_climb_run(150, 150, seed, rise_to=3.1, jump=10.0)
    t = np.arange(150)
    loss = list(np.r_[loss[:150], (2.4 + 0.7 * np.exp(-t / 15)) * np.array(loss[150:]) / 3.1])
    assert "TP-DIVERGE" not in judge(loss=loss, lr=lr).ids()
    loss, _ = _lr_climb_run(150, 150, seed, rise_to=3.1, jump=10.0)
    decays = list(np.r_[np.full(150, 1e-3), 1e-2 * 0.9 ** np.arange(150)])
    assert "learning rate climbed" not in " ".join(f.evidence for f in judge(loss=loss, lr=decays).findings)


def _rate_typo_run(n: int, at: float, mult: float, rise: float, noise: float, seed: int):
    """A run with a 5% warm-up and a cosine decay to 0 over ``n`` logs whose learning rate is
    multiplied by ``mult`` from the share ``at`` of the run on, the cosine continued from
    the wrong rate; its loss (falling 2.0 -> 1.0) rises ``rise`` above its level there
    within a twentieth of the run and holds, with log-normal point noise ``noise``.
    Returns ``(loss, lr)``."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    lr = 5e-5 * np.where(t < 0.05, t / 0.05, 0.5 * (1 + np.cos(np.pi * (t - 0.05) / 0.95)))
    lr = np.where(t >= at, lr * mult, lr)
    level = 1.0 + 1.0 * np.exp(-t / 0.1)
    at_level = 1.0 + 1.0 * np.exp(-at / 0.1)
    climbed = at_level * (1 + rise * np.clip((t - at) / 0.05, 0, 1))
    loss = np.where(t < at, level, climbed) * np.exp(noise * rng.standard_normal(n))
    return list(loss), list(lr)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("n,noise", [(1000, 0.02), (2000, 0.05), (5000, 0.05)])
@pytest.mark.parametrize("mult", [30.0, 87.0])
def test_a_rate_far_above_any_the_run_held_needs_less_of_the_fall_given_back(seed, n, noise, mult):
    # A new user's run whose rate jumped 87x at mid-run, its cosine continued from there
    # (3.1e-5 -> 2.2e-3, peak 5e-5): the loss held 19% above its best, 20% of its fall, for
    # the rest of 2,000 logs at 5% noise, and PASSed (the caused path wanted 25%, a rate
    # ending at half its peak, and each point above 1.15x).
    loss, lr = _rate_typo_run(n, 0.5, mult, 0.19, noise, seed)
    f = one(judge(loss=loss, lr=lr), "TP-DIVERGE")
    assert f.level is Level.FAIL and "learning rate climbed" in f.evidence, f.evidence


@pytest.mark.parametrize("seed", range(3))
def test_a_rate_raised_on_purpose_or_a_loss_that_holds_is_no_divergence_by_the_new_rate(seed):
    # A rate raised 3x (a retune) with the same 19% rise: the caused path's 25% stands.
    loss, lr = _rate_typo_run(2000, 0.5, 3.0, 0.19, 0.05, seed)
    assert "TP-DIVERGE" not in judge(loss=loss, lr=lr).ids()
    # The 87x rate with a loss that holds its level: no rise, no divergence.
    loss, lr = _rate_typo_run(2000, 0.5, 87.0, 0.0, 0.05, seed)
    assert "TP-DIVERGE" not in judge(loss=loss, lr=lr).ids()
    # ... or rises by a sliver of its fall (5%, a floor wiggle's size).
    loss, lr = _rate_typo_run(2000, 0.5, 87.0, 0.05, 0.02, seed)
    assert "TP-DIVERGE" not in judge(loss=loss, lr=lr).ids()


def test_a_best_block_inside_the_end_window_is_no_level_the_run_climbed_from():
    # A healthy batch-1 run (single-sample cross-entropy, heavy-tailed): its lowest 5% block
    # median (steps 900-949) lies inside the end window (the last 100 points), so the end
    # level is read over it, not after it. It FAILed at 1,000 points and WARNed at 999.
    path = Path(__file__).parent / "data" / "mlp_adam_batch1_loss.txt"
    v = np.loadtxt(path)
    assert v.size == 1000
    for loss in (v, v[1:], v[:999]):
        assert "TP-DIVERGE" not in judge(loss=list(loss)).ids()
    # the same climb with the low block before the end window is still judged
    moved = np.r_[v[:800], v[900:950], v[800:900], np.full(50, 1.2) * v[950:] / np.median(v[950:])]
    assert "TP-DIVERGE" in judge(loss=list(moved)).ran


# --- a run stopped in a blow-up ----------------------------------------------------------


def _falling(n: int, rel: float, seed: int, tail: float = 0.0) -> np.ndarray:
    """A loss falling 3.0 -> 0.9 with ``rel`` lognormal point noise; with ``tail``, that
    share of points thrown up to 20x (heavy-tailed batch noise)."""
    rng = np.random.default_rng(seed)
    v = (0.9 + 2.1 * np.exp(-np.arange(n) / (n / 6))) * np.exp(rel * rng.standard_normal(n))
    if tail:
        hit = rng.random(n) < tail
        v[hit] *= rng.uniform(3, 20, int(hit.sum()))
    return v


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("n,k,factor", [(40, 3, 10.0), (100, 3, 10.0), (1000, 8, 10.0), (300, 5, 4.0), (5000, 12, 3.0)])
@pytest.mark.parametrize("rel", [0.01, 0.1])
def test_a_run_stopped_in_a_blow_up_diverged(seed, n, k, factor, rel):
    # The run is stopped k logs into its climb (a guard on the loss, a crash): the median of
    # its last 10% is still its level, but its last k points climb by `factor` a log.
    v = _falling(n, rel, seed)
    v[-k:] = v[-k - 1] * factor ** np.arange(1, k + 1)
    f = one(judge(loss=list(v)), "TP-DIVERGE")
    assert step_of(n - k - 5) <= f.data["onset_step"] <= step_of(n - k)
    if k >= max(3, n // 20):  # half the end window climbed: its median reads the level
        return
    assert f.data["terminal_points"] >= k and f.data["end_level"] == v[-1]
    assert "climbs at each of its last" in f.message


@pytest.mark.parametrize("seed", range(5))
def test_terminal_spikes_and_small_climbs_are_no_blow_up(seed):
    n = 200
    v = _falling(n, 0.05, seed)
    one_spike = v.copy()
    one_spike[-1] *= 40  # one stray batch at the end
    two = v.copy()
    two[-2:] *= [8.0, 30.0]  # two rising points: a spike, not a climb
    mild = v.copy()
    mild[-4:] = v[-5] * np.array([1.2, 1.5, 2.0, 2.6])  # rising, but under 10x what the run held
    for loss in (one_spike, two, mild):
        assert "TP-DIVERGE" not in judge(loss=list(loss)).ids()
    # A fitted loss at its floor rising 100x in its last logs stays far below its start.
    fitted = 2.0 * np.exp(-np.arange(n) / 10) + 1e-7
    fitted[-3:] = fitted[-4] * np.array([10.0, 100.0, 1000.0])
    assert "TP-DIVERGE" not in judge(loss=list(fitted)).ids()


@pytest.mark.parametrize("seed", range(5))
def test_a_heavy_tailed_run_ending_within_its_own_strays_is_no_blow_up(seed):
    # 5% of batches thrown 3-20x up: three rising last points at 15x the run's level are
    # within what its own stray points do.
    v = _falling(400, 0.05, seed, tail=0.05)
    v[-3:] = v[-4] * np.array([2.0, 5.0, 15.0]) / max(1.0, v[-4] / 0.9)
    assert "TP-DIVERGE" not in judge(loss=list(v)).ids()


@pytest.mark.parametrize("seed", range(3))
def test_the_same_rise_without_a_learning_rate_climb_is_not_a_divergence(seed):
    loss, lr = _lr_climb_run(150, 150, seed, climb=False)
    assert "TP-DIVERGE" not in judge(loss=loss, lr=lr).ids()


@pytest.mark.parametrize("seed", range(3))
def test_a_learning_rate_climb_with_a_loss_that_holds_is_not_a_divergence(seed):
    loss, lr = _lr_climb_run(150, 150, seed, rise_to=2.6)
    assert "TP-DIVERGE" not in judge(loss=loss, lr=lr).ids()


def test_a_warmup_is_not_a_learning_rate_climb():
    # lr warms up 100x over the first 10% while the loss falls; a later wiggle of 1.2x at
    # the floor is not a caused divergence.
    n = 300
    lr = list(np.minimum(1.0, (np.arange(n) + 1) / 30) * 1e-3)
    rng = np.random.default_rng(0)
    loss = list((2.5 + 1.5 * np.exp(-np.arange(n) / 30)) * np.exp(0.01 * rng.standard_normal(n)))
    loss[-20:] = [x * 1.2 for x in loss[-20:]]
    assert "TP-DIVERGE" not in judge(loss=loss, lr=lr).ids()


def test_a_learning_rate_that_climbs_after_it_held_is_not_an_unfinished_warmup():
    # Flat for 150 logs, then x1.05 a log to the end: the divergence rules are not skipped
    # as "warm-up", and TP-WARMUP-UNFINISHED does not call it one.
    from trainproof.rules._schedule import still_warming_up

    lr = np.r_[np.full(150, 1e-3), 1e-3 * 1.05 ** np.arange(1, 61)]
    assert not still_warming_up(lr, 3)
    assert still_warming_up(np.linspace(1e-5, 1e-3, 40), 3)  # a warm-up from the start is one
    loss, _ = _lr_climb_run(150, 60, 0)
    rep = judge(loss=loss, lr=list(lr))
    assert "TP-DIVERGE" in rep.ran and "TP-WARMUP-UNFINISHED" not in rep.ids()


@pytest.mark.parametrize("hold", [0.12, 0.45])
def test_a_warmup_that_held_and_then_climbs_again_has_ended(hold):
    # A warm-up to 0.05, a hold for part of the run, then a scheduler's sign bug ramps the
    # rate 3x to the end (a helper's Lightning and JSONL runs): not a warm-up, so the rules
    # that wait for one judge the run.
    from trainproof.rules._schedule import still_warming_up

    n = 400
    w, h = n // 20, int(n * hold)
    lr = np.r_[np.linspace(0.005, 0.05, w), np.full(h, 0.05), np.linspace(0.05, 0.15, n - w - h + 1)[1:]]
    assert not still_warming_up(lr, 3)
    # a warm-up with a short hold (a logger that repeats a value) is still one
    short = np.r_[np.linspace(0.005, 0.05, 30), np.full(3, 0.05), np.linspace(0.05, 0.1, 30)[1:]]
    assert still_warming_up(short, 3)
    loss, _ = _lr_climb_run(150, 60, 0)
    rep = judge(loss=loss, lr=list(lr[: len(loss)]))
    assert "TP-DIVERGE" in rep.ran


@pytest.mark.parametrize("seed", range(3))
def test_warm_restarts_are_a_schedule_not_a_caused_divergence(seed):
    # SGDR: the learning rate jumps back up in one log and decays again; the loss bumps at
    # each restart and comes back. The end of the log just after a restart is no
    # divergence either.
    rng = np.random.default_rng(seed)
    n = 400
    t = np.arange(n)
    cycle = t % 100
    lr = 1e-5 + 0.5 * 1e-3 * (1 + np.cos(np.pi * cycle / 100))
    base = 0.8 + 1.5 * np.exp(-t / 80)
    loss = base * (1 + 0.25 * np.exp(-cycle / 8) * (t >= 100)) * np.exp(0.02 * rng.standard_normal(n))
    rep = judge(loss=list(loss[:310]), lr=list(lr[:310]))
    assert "TP-DIVERGE" not in rep.ids()


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("n,phi", [(60, 0.6), (150, 0.8), (600, 0.8)])
def test_autocorrelated_noise_around_a_falling_curve_is_not_a_divergence(seed, n, phi):
    # A running-average loss (AR(1) noise, phi 0.6-0.8, 10% per point) wanders above a low
    # swing for many points: its levels are less sure than first differences say.
    rng = np.random.default_rng(seed)
    e = np.zeros(n)
    for i in range(1, n):
        e[i] = phi * e[i - 1] + math.sqrt(1 - phi**2) * rng.standard_normal()
    v = (1.0 + 2.0 * np.exp(-np.arange(n) / (n / 8))) * np.exp(0.1 * e)
    assert "TP-DIVERGE" not in judge(loss=list(v)).ids()


def test_a_cyclic_learning_rate_with_warm_up_in_every_cycle_is_no_cause():
    # Each cycle warms up over 5 logs, then decays: the climb returns to a rate the run
    # held before, so the loss bump at the end of the log (mid-cycle) is not caused.
    n = 230
    cycle = np.arange(n) % 50
    lr = np.where(cycle < 5, 1e-3 * (cycle + 1) / 5, 1e-3 * (1 - (cycle - 5) / 45) + 1e-5)
    rng = np.random.default_rng(0)
    loss = (0.8 + 1.5 * np.exp(-np.arange(n) / 40)) * (1 + 0.3 * (cycle < 10) * (np.arange(n) >= 50))
    loss = loss * np.exp(0.01 * rng.standard_normal(n))
    assert "TP-DIVERGE" not in judge(loss=list(loss), lr=list(lr)).ids()


@pytest.mark.parametrize("rel", [0.005, 0.05])
def test_dead_run_a_learning_rate_of_zero_is_its_cause_whatever_the_noise(rel):
    # A learning rate of 0 at every step is a cause however noisy the per-step loss:
    # TP-ZERO-LR fails the run and lists the dead run as what it explains.
    rng = np.random.default_rng(7)
    rep = judge(loss=list(1.49 * np.exp(rel * rng.standard_normal(300))), lr=[0.0] * 300)
    f = one(rep, "TP-ZERO-LR")
    assert f.level is Level.FAIL and "TP-DEAD-RUN" in f.data["implies"]


def _dip_run(n: int, rel: float, seed: int, dip_share: float, end_level: float, descent: bool = False):
    """3.0 falls to a plateau of 1.0 by 30% of the run (or, with ``descent``, keeps falling
    through it), dips to 0.4 at 60% for ``dip_share`` of the run, then returns to
    ``end_level`` within 5% of the run and holds it to the end."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n)
    d0, d1 = 0.60, 0.60 + dip_share
    if descent:
        knots, levels = [0.0, d0 - 0.02, d0, d1, d1 + 0.05, 1.0], [3.0, 0.45, 0.4, 0.4, end_level, end_level]
    else:
        knots = [0.0, 0.30, d0 - 0.02, d0, d1, d1 + 0.05, 1.0]
        levels = [3.0, 1.0, 1.0, 0.4, 0.4, end_level, end_level]
    return noisy(np.interp(t, knots, levels), rel, rng)


DIP_GRID = [(n, rel, seed) for n in (60, 200, 1000) for rel in (0.02, 0.08) for seed in range(3)]


@pytest.mark.parametrize("n,rel,seed", first_seed_fast(DIP_GRID, 2))
def test_diverge_a_brief_dip_and_a_return_to_the_plateau_does_not_fire(n, rel, seed):
    # The run held 1.0, dipped to 0.4 for 5% of the run and came back to where it stood:
    # it lost nothing it held (diverge_dip_blocks).
    v = _dip_run(n, rel, seed, dip_share=0.05, end_level=1.0)
    assert "TP-DIVERGE" not in judge(loss=list(v)).ids()


@pytest.mark.parametrize("n,rel,seed", first_seed_fast(DIP_GRID, 2))
def test_diverge_a_drop_held_for_a_quarter_of_the_run_then_lost_fires(n, rel, seed):
    # The same shape with the low level held for 25% of the run: a level the run reached
    # and held, then gave back (2.5x), is a divergence.
    v = _dip_run(n, rel, seed, dip_share=0.25, end_level=1.0)
    f = one(judge(loss=list(v)), "TP-DIVERGE")
    assert f.level is Level.FAIL and f.data["ratio"] == pytest.approx(2.5, rel=0.2)


@pytest.mark.parametrize("n,rel,seed", first_seed_fast(DIP_GRID, 2))
def test_diverge_a_brief_minimum_on_a_descent_then_a_climb_fires(n, rel, seed):
    # A V: the run falls straight through 1.0 to a brief minimum and climbs back to 1.0.
    # Before its best it was descending, not holding a plateau: a divergence.
    v = _dip_run(n, rel, seed, dip_share=0.05, end_level=1.0, descent=True)
    assert one(judge(loss=list(v)), "TP-DIVERGE").level is Level.FAIL


@pytest.mark.parametrize("n,rel,seed", first_seed_fast(DIP_GRID, 2))
def test_diverge_a_brief_dip_then_a_climb_above_the_plateau_fires(n, rel, seed):
    # Back past where the run stood before its dip (2x the plateau): a divergence.
    v = _dip_run(n, rel, seed, dip_share=0.05, end_level=2.0)
    f = one(judge(loss=list(v)), "TP-DIVERGE")
    assert f.level is Level.FAIL and f.data["ratio"] == pytest.approx(5.0, rel=0.25)


def test_diverge_dip_blocks_threshold_sets_how_brief_a_dip_is():
    # With diverge_dip_blocks 0 no dip is brief enough: the return to the plateau fails.
    v = _dip_run(200, 0.02, 0, dip_share=0.05, end_level=1.0)
    assert "TP-DIVERGE" not in judge(loss=list(v)).ids()
    th = DEFAULT.with_overrides({"diverge_dip_blocks": 0})
    assert "TP-DIVERGE" in judge_runlog(make_run(loss=list(v)), th).ids()


# --- long series: the trend tests hold memory bounded ---------------------------------------


def _mk_reference(v: np.ndarray) -> float:
    k = v.size
    s = float(np.sum(np.sign((v[None, :] - v[:, None])[np.triu_indices(k, 1)])))
    return 0.0 if s == 0 else (s - math.copysign(1.0, s)) / math.sqrt(k * (k - 1) * (2 * k + 5) / 18.0)


@pytest.mark.parametrize("chunk", [1, 7, 50, 1 << 22])
def test_mann_kendall_compares_pairs_in_bands_with_the_same_result(chunk, monkeypatch):
    # Ties and trends, lengths around the band edges: the banded sum of signs is the sum
    # over the whole upper triangle, exactly.
    from trainproof.rules import _stats

    monkeypatch.setattr(_stats, "MK_CHUNK_VALUES", chunk)
    rng = np.random.default_rng(chunk)
    for k in (3, 4, 10, 57, 301):
        for tilt in (0.0, 1.0, -3.0):
            v = rng.standard_normal(k) + np.linspace(0, tilt, k)
            v[::7] = v[0]
            assert _stats.mann_kendall_z(v) == _mk_reference(v)


@pytest.mark.slow
def test_a_log_that_evaluates_at_every_step_is_judged():
    # 60,000 evaluations beside a flat train loss: the test of a falling eval loss compared
    # every pair at once (a 60,000 x 60,000 matrix, 29 GB) and the judge died of it. Read as
    # block medians, a falling eval loss still shows learning, and a flat one does not.
    rng = np.random.default_rng(0)
    n = 60_000
    loss = list(2.6 * np.exp(0.01 * rng.standard_normal(n)))
    falling = list(np.linspace(3.0, 2.0, n) * np.exp(0.01 * rng.standard_normal(n)))
    flat = list(2.5 * np.exp(0.01 * rng.standard_normal(n)))
    learning = judge(loss=loss, eval_loss=falling)
    assert not {"TP-DEAD-RUN", "TP-LOSS-STALLED"} & set(learning.ids())
    stalled = judge(loss=loss, eval_loss=flat)
    assert "TP-LOSS-STALLED" in stalled.ids()


@pytest.mark.parametrize("seed", range(3))
def test_dead_run_two_logged_rates_at_the_schedule_edges_are_not_a_cause(seed):
    # A short log whose learning rate is logged at the first and the last step only: a
    # warm-up starting at 0 and a cosine ending at 0. Those are the schedule's edges, not
    # its rate: no dead run (generated healthy run, tests/_zoo.py seed 20007030's shape).
    rng = np.random.default_rng(seed)
    n = 40
    loss = list(1.9 * np.exp(0.01 * rng.standard_normal(n)))
    edges = [0.0] + [None] * (n - 2) + [0.0]
    assert "TP-DEAD-RUN" not in judge(loss=loss, lr=edges).ids()
    # the same rate logged at every step is a cause
    assert one(judge(loss=loss, lr=[1e-9] * n), "TP-DEAD-RUN").data["cause"] == "tiny_lr"
    # ... and at five points, the least TP-ZERO-LR reads too
    five = [1e-9 if i % 10 == 0 or i == n - 1 else None for i in range(n)]
    assert one(judge(loss=loss, lr=five), "TP-DEAD-RUN").data["cause"] == "tiny_lr"


@pytest.mark.parametrize("n", [30, 200, 3000])
def test_dead_run_at_a_tiny_lr_a_significant_drift_is_not_progress(n):
    # 0.15% down over the run at lr 4e-10: a trend test calls it significant, an effect
    # size calls it nothing. The cause in the log makes it dead.
    rng = np.random.default_rng(n)
    loss = 16.5 * (1 - 0.0015 * np.linspace(0, 1, n)) * (1 + 3e-4 * rng.standard_normal(n))
    rep = judge(loss=loss, learning_rate=[3.6e-10] * n)
    f = one(rep, "TP-DEAD-RUN")
    assert f.data["cause"] == "tiny_lr" and f.data["trend_z"] < -2.326
    assert "whose size is no progress" in f.evidence
    # The same drift at a live learning rate is no FAIL; a real fall at the tiny rate
    # (20% over the run, beyond any noise) is not dead either.
    assert judge(loss=loss, learning_rate=[3e-4] * n).verdict is not Level.FAIL
    falling = 16.5 * np.exp(-0.2 * np.linspace(0, 1, n)) * (1 + 3e-4 * rng.standard_normal(n))
    assert "TP-DEAD-RUN" not in judge(loss=falling, learning_rate=[3.6e-10] * n).ids()


@pytest.mark.parametrize("n", [40, 182, 1000])
def test_diverge_a_low_first_point_among_heavy_tailed_noise_is_not_a_level(n):
    # Healthy falling runs whose noise (t with 2.9 degrees of freedom at 54%) throws a
    # point e^5 = 150x off its level somewhere, and whose first point is one more stray
    # point, e^4 = 55x below the points after it. Without the comparison with the run's
    # own stray points, 24 of these 60 runs failed.
    fails = 0
    for seed in range(20):
        rng = np.random.default_rng(seed * 7 + n)
        y = 1.9 * np.exp(-np.linspace(0, 1, n) / 0.15) + 0.54 * rng.standard_t(2.9, n)
        y[n // 3] += 5.0
        y[0] = np.median(y[1:5]) - 4.0
        fails += "TP-DIVERGE" in judge(loss=np.exp(y)).ids()
    assert fails == 0
    # A run that blows up right after its first point and stays up, with ordinary noise:
    # its first point is a level no other point strays as far from.
    rng = np.random.default_rng(n)
    z = np.log(2.3) + np.r_[0.0, np.full(n - 1, 3.0)] + 0.1 * rng.standard_normal(n)
    f = one(judge(loss=np.exp(z)), "TP-DIVERGE")
    assert f.data["from_start"] and f.data["best_points"] == 1


def _short_noisy(rng, n, sigma, df):
    """The log of a healthy short run: a fall of 1.2 nats and noise ``sigma`` (Student t
    with ``df`` degrees of freedom, normal for 0)."""
    e = rng.standard_t(df, n) if df else rng.standard_normal(n)
    return 1.2 * np.exp(-np.linspace(0, 1, n) / 0.2) + sigma * e


@pytest.mark.parametrize("n,at", [(19, 3), (19, 6), (25, 6), (33, 3), (33, 6)])
def test_diverge_two_stray_low_points_in_one_short_block_are_not_a_level(n, at):
    # A short run at its level after a first fall, with 10% noise and two points of one
    # 3-point block 0.56x that level: the block's median is theirs.
    rng = np.random.default_rng(n + at)
    y = 0.1 * rng.standard_normal(n)
    y[0] += 1.3
    y[at] = y[at + 2] = math.log(0.56)
    run = make_run(loss=np.exp(y))
    assert "TP-DIVERGE" not in judge_runlog(run).ids()
    assert "TP-DIVERGE" in judge_runlog(run, DEFAULT.with_overrides({"diverge_level_points": 3})).ids()


@pytest.mark.slow
def test_diverge_two_low_points_in_a_short_block_are_not_a_level():
    # Short noisy healthy runs: a 3-point block holds two low points now and then, and its
    # median sat below anything the run held. A level of 3 points of 5 does not.
    off = DEFAULT.with_overrides({"diverge_level_points": 3})
    on_fails = off_fails = 0
    rng = np.random.default_rng(5)
    for n in (15, 20, 25, 30, 40, 60):
        for sigma, df in ((0.2, 0), (0.3, 0), (0.2, 4), (0.3, 4)):
            for _ in range(40):
                loss = np.exp(_short_noisy(rng, n, sigma, df))
                run = make_run(loss=loss)
                on_fails += "TP-DIVERGE" in judge_runlog(run).ids()
                off_fails += "TP-DIVERGE" in judge_runlog(run, off).ids()
    assert on_fails == 0 and off_fails >= 1


@pytest.mark.parametrize("n", [15, 25, 60, 100, 1000])
def test_diverge_a_sharp_minimum_still_fails_with_its_neighbourhood(n):
    rng = np.random.default_rng(n)
    # A V: 3.0 down to 0.38 at 40% of the run, back up to 1.0 and held (at 15 points its
    # bottom is two points, which is not a level).
    t = np.linspace(0, 1, n)
    v_shape = np.where(
        t < 0.4,
        np.log(3.0) + (np.log(0.38) - np.log(3.0)) * t / 0.4,
        np.minimum(np.log(1.0), np.log(0.38) + (t - 0.4) * 8),
    )
    if n > 15:
        f = one(judge(loss=np.exp(v_shape + 0.05 * rng.standard_normal(n))), "TP-DIVERGE")
        assert f.data["ratio"] > 1.5
    # A climb of 7x over the last 40% of a short noisy run.
    y = _short_noisy(rng, n, 0.1, 0)
    y[int(0.6 * n) :] += np.linspace(0, 2.0, n - int(0.6 * n))
    assert "TP-DIVERGE" in judge(loss=np.exp(y)).ids()


def _warm_restarts(n, seed, blowup=1.0):
    """Cosine with warm restarts over 4 cycles, the run ending 30% into its last one: the
    loss (2.5 -> 0.5 underneath) rises with the rate, x(1 + lr / peak), 3% noise; the
    last cycle times ``blowup``. Returns ``(loss, lr)``."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)
    phase = (t * 3.3) % 1.0
    lr = 1e-3 * 0.5 * (1 + np.cos(np.pi * phase))
    loss = (0.5 + 2.0 * np.exp(-t / 0.15)) * (1 + lr / 1e-3) * np.exp(0.03 * rng.standard_normal(n))
    loss[t >= 3 / 3.3] *= blowup
    return loss, lr


@pytest.mark.parametrize("n,seed", [(60, 0), (200, 1), (1000, 2)])
def test_diverge_a_new_cycle_of_warm_restarts_is_not_a_divergence(n, seed):
    # The run ends early in a cycle, its rate back at the peak: the loss stands 1.8x its
    # best (the end of the previous cycle), no higher than where the previous cycle stood
    # at the same rate.
    loss, lr = _warm_restarts(n, seed)
    assert "TP-DIVERGE" not in judge(loss=loss, learning_rate=lr).ids()
    # The same loss with no learning rate in the log names no restart: a FAIL.
    assert "TP-DIVERGE" in judge(loss=loss).ids()
    # A blow-up after the restart climbs above the previous cycle: a divergence.
    loss, lr = _warm_restarts(n, seed, blowup=5.0)
    assert one(judge(loss=loss, learning_rate=lr), "TP-DIVERGE").level is Level.FAIL


def _annealed(n, ramp_share, rel, seed, kl=3.0):
    """A VAE's summed loss: a reconstruction term that falls 8 -> 1 and a KL term of
    ``kl`` nats weighted by beta, annealed from 0 to 1 over the first ``ramp_share`` of the
    run (noise ``rel``, relative). Returns ``(loss, beta)``."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)
    beta = np.minimum(1.0, t / ramp_share)
    recon = 1.0 + 7.0 * np.exp(-t / 0.03)
    return (recon + beta * kl) * np.exp(rel * rng.standard_normal(n)), beta


@pytest.mark.parametrize("n", [40, 200, 1000])
@pytest.mark.parametrize("ramp_share", [0.3, 1.0])
@pytest.mark.parametrize("rel", [0.02, 0.08])
def test_objective_changed_a_kl_weight_annealed_up_is_not_a_divergence(n, ramp_share, rel):
    # The summed loss climbs 2-4x from its best as beta goes 0 -> 1 while the model
    # improves (a new user's VAE runs FAILed TP-DIVERGE). The logged beta says so.
    loss, beta = _annealed(n, ramp_share, rel, seed=n)
    rep = judge(loss=loss, beta=beta)
    assert "TP-DIVERGE" not in rep.ids()
    f = one(rep, "TP-OBJECTIVE-CHANGED")
    assert f.level is Level.INFO and "beta climbed" in f.data["reason"]
    # The same loss without its schedule is a climb the log cannot explain.
    assert "TP-DIVERGE" in judge(loss=loss).ids()


@pytest.mark.parametrize("key", ["kl_weight", "train/kl_coef", "klBeta", "kl_warmup", "kld_mult"])
def test_objective_changed_reads_the_spellings_of_a_kl_weight(key):
    loss, beta = _annealed(200, 0.5, 0.03, seed=1)
    rep = judge(loss=loss, **{key: beta})
    assert "TP-DIVERGE" not in rep.ids() and "TP-OBJECTIVE-CHANGED" in rep.ids()


@pytest.mark.parametrize(
    "key",
    [
        "label_smoothing",
        "smoothing",
        "l2_weight",
        "reg_weight",
        "lambda_reg",
        "penalty_coef",
        "aux_weight",
        "train/aux_loss_coef",
        "auxiliary_loss_weight",
        "loss_weight",
        "mse_weight",
        "lambda_ce",
        "train/l1_loss_coef",
    ],
)
def test_objective_changed_a_smoothing_or_penalty_weight_ramped_up(key):
    # A helper's healthy runs: label smoothing ramped 0 -> 0.4 (the cross-entropy's floor
    # climbs to 1.44 nats) and an L2 penalty weight ramped inside the loss FAILed TP-DIVERGE.
    loss, weight = _annealed(200, 0.7, 0.03, seed=2)
    rep = judge(loss=loss, **{key: 0.4 * weight})
    assert "TP-DIVERGE" not in rep.ids() and "TP-OBJECTIVE-CHANGED" in rep.ids(), rep.ids()


@pytest.mark.parametrize("key", ["loss_weight", "aux_weight", "mse_weight", "kl_weight"])
def test_a_weight_that_climbed_a_little_explains_no_blowup_of_the_loss(key):
    # a weight 1 -> 1.5 scales its term 1.5x at most: a loss that rose 800x diverged (helper 94)
    n = 300
    rng = np.random.default_rng(4)
    t = np.arange(n) / n
    loss = np.where(t < 0.5, 2.0 * np.exp(-6 * t) + 0.1, 0.1 * 800 ** ((t - 0.5) / 0.5)) + 0.1
    loss = loss * np.exp(0.03 * rng.standard_normal(n))
    weight = np.where(t < 0.5, 1.0, 1.5)
    rep = judge(loss=loss, **{key: weight})
    assert "TP-DIVERGE" in rep.ids() and "TP-OBJECTIVE-CHANGED" not in rep.ids(), rep.ids()


@pytest.mark.parametrize("key", ["loss_scale", "train/loss_scale", "scaler_scale"])
def test_a_climbing_fp16_loss_scale_explains_no_divergence(key):
    # fp16's loss scaler doubles after every run of finite steps: a factor the optimizer
    # divides out again, no weight of the objective, whatever its key says
    loss, weight = _annealed(200, 0.7, 0.03, seed=2)
    rep = judge(loss=loss, **{key: 2.0 ** (10 + 10 * weight)})
    assert "TP-DIVERGE" in rep.ids() and "TP-OBJECTIVE-CHANGED" not in rep.ids(), rep.ids()


@pytest.mark.parametrize("n", [40, 200, 1000])
@pytest.mark.parametrize("keys", [("recon_loss", "kl"), ("train/reconstruction_loss", "train/kl_div"), ("rec", "kld")])
def test_objective_changed_a_kl_weight_read_from_the_logged_terms(n, keys):
    # A VAE logging loss, reconstruction and KL but not beta (a helper's Lightning run):
    # (loss - recon) / kl is beta, climbing 0 -> 1 while the summed loss climbs 2-4x.
    rng = np.random.default_rng(n)
    t = np.linspace(0, 1, n)
    beta = np.minimum(1.0, t / 0.8)
    recon = (1.0 + 7.0 * np.exp(-t / 0.03)) * np.exp(0.02 * rng.standard_normal(n))
    kl = 3.0 + 2.0 * np.exp(-t / 0.3)
    rep = judge(loss=recon + beta * kl, **{keys[0]: recon, keys[1]: kl})
    assert "TP-DIVERGE" not in rep.ids() and "TP-OBJECTIVE-CHANGED" in rep.ids(), rep.ids()
    assert "KL term's weight" in one(rep, "TP-OBJECTIVE-CHANGED").data["reason"]


@pytest.mark.parametrize("beta", [1.0, 4.0])
def test_objective_changed_a_vae_whose_terms_diverge_at_a_constant_weight_still_diverges(beta):
    # Logged terms whose weight holds (a plain VAE, a beta-VAE at 4) explain no climb: the
    # reconstruction itself blew up.
    rng = np.random.default_rng(5)
    n = 200
    t = np.linspace(0, 1, n)
    recon = np.where(t < 0.5, 2.0 * np.exp(-t / 0.1) + 0.5, 0.5 + 3.0 * (t - 0.5)) * np.exp(
        0.03 * rng.standard_normal(n)
    )
    kl = 0.3 + 0.1 * np.exp(-t / 0.3)
    rep = judge(loss=recon + beta * kl, recon_loss=recon, kl=kl)
    assert "TP-DIVERGE" in rep.ids() and "TP-OBJECTIVE-CHANGED" not in rep.ids(), rep.ids()


def test_objective_changed_a_weight_decay_schedule_explains_no_climb():
    # AdamW's decoupled weight decay is not part of the loss: its schedule excuses nothing.
    loss, weight = _annealed(200, 0.7, 0.03, seed=2)
    assert "TP-DIVERGE" in judge(loss=loss, weight_decay=0.1 * weight).ids()


def test_objective_changed_a_constant_weight_or_the_kl_value_itself_explains_nothing():
    # A divergence in a run that logs a constant beta (a beta-VAE at beta 4) or the KL
    # term's own value (which climbs with the loss) is still a divergence.
    rng = np.random.default_rng(3)
    n = 200
    t = np.linspace(0, 1, n)
    level = np.where(t < 0.5, 2.0 * np.exp(-t / 0.1) + 0.5, 0.5 + 3.0 * (t - 0.5))
    loss = level * np.exp(0.03 * rng.standard_normal(n))
    rep = judge(loss=loss, beta=[4.0] * n, kl=loss * 0.3)
    assert "TP-DIVERGE" in rep.ids() and "TP-OBJECTIVE-CHANGED" not in rep.ids()


def _climb_with_eval(n, eval_every, eval_trend, seed):
    """A train loss that falls to 1.0 by 30% of the run, then climbs to 2.5x that by
    the end; an eval loss every ``eval_every`` points, falling 3.0 -> 2.0 until 30% and
    then ``eval_trend`` (``"falls"`` on to 1.6, ``"rises"`` to 3.5)."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)
    train = np.where(t < 0.3, 1.0 + 4.0 * (1 - t / 0.3) ** 2, 1.0 + 1.5 * (t - 0.3) / 0.7)
    end = 1.6 if eval_trend == "falls" else 3.5
    ev = np.where(t < 0.3, 3.0 - t / 0.3, 2.0 + (end - 2.0) * (t - 0.3) / 0.7)
    ev = ev * np.exp(0.005 * rng.standard_normal(n))
    ev_col = [float(e) if (i + 1) % eval_every == 0 else None for i, e in enumerate(ev)]
    return train * np.exp(0.03 * rng.standard_normal(n)), ev_col


@pytest.mark.parametrize("n,eval_every", [(60, 5), (300, 25), (2000, 100)])
def test_objective_changed_an_eval_loss_that_kept_falling_over_the_climb(n, eval_every):
    # A curriculum's harder data, stronger augmentation: the train loss climbs while the
    # held-out loss keeps falling. A divergence makes the held-out loss worse too.
    train, ev = _climb_with_eval(n, eval_every, "falls", seed=n)
    rep = judge(loss=train, eval_loss=ev)
    assert "TP-DIVERGE" not in rep.ids()
    assert "did not get worse" in one(rep, "TP-OBJECTIVE-CHANGED").data["reason"]
    train, ev = _climb_with_eval(n, eval_every, "rises", seed=n)
    rep = judge(loss=train, eval_loss=ev)
    assert "TP-DIVERGE" in rep.ids() and "TP-OBJECTIVE-CHANGED" not in rep.ids()


def _cyclical_kl(n, cycles, rel_eval, seed, eval_rise=1.0):
    """A VAE under cyclical KL annealing with the weight not logged: the summed train loss
    (reconstruction 8 -> 1 plus beta x 3 nats, beta climbing 0 -> 1 over the first half of
    each of ``cycles`` cycles and holding) drops at every cycle's start and climbs back;
    the eval loss at the full weight every n/30 points, flat with relative noise
    ``rel_eval``, or climbing to ``eval_rise`` times its level over the last cycle."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)
    beta = np.minimum(1.0, ((t * cycles) % 1.0) / 0.5)
    recon = 1.0 + 7.0 * np.exp(-t / 0.03)
    train = (recon + 3.0 * beta) * np.exp(0.03 * rng.standard_normal(n))
    last = (cycles - 1) / cycles
    rise = 1.0 + (eval_rise - 1.0) * np.clip((t - last) / (1 - last), 0, 1)
    ev = (recon + 3.0) * rise * np.exp(rel_eval * rng.standard_normal(n))
    every = n // 30
    return train, [float(e) if (i + 1) % every == 0 else None for i, e in enumerate(ev)]


@pytest.mark.parametrize("n,cycles", [(600, 3), (1500, 4), (3000, 4), (6000, 5)])
@pytest.mark.parametrize("rel_eval", [0.01, 0.02, 0.03])
@pytest.mark.parametrize("seed", range(3))
def test_objective_changed_an_eval_loss_that_wanders_within_its_noise_did_not_get_worse(n, cycles, rel_eval, seed):
    # The end of the eval loss is compared with the best of many held evaluations: it sits
    # a little above it by chance (a helper's cyclical-KL VAE, 3.737 against a best of 3.644
    # at 3% noise, FAILed TP-DIVERGE at 2.96x); within the noise of the level it held just
    # before the climb, it did not get worse. (At 4-6% noise the allowance often passes
    # objective_eval_resolution, and the comparison is strict again.)
    train, ev = _cyclical_kl(n, cycles, rel_eval, seed)
    assert "TP-DIVERGE" in judge(loss=train).ids()  # the train loss alone cannot tell
    rep = judge(loss=train, eval_loss=ev)
    assert "TP-DIVERGE" not in rep.ids(), one(rep, "TP-DIVERGE").evidence
    # The same train loss while the eval loss climbs 1.5x over the last cycle: a divergence.
    train, ev = _cyclical_kl(n, cycles, rel_eval, seed, eval_rise=1.5)
    assert one(judge(loss=train, eval_loss=ev), "TP-DIVERGE").level is Level.FAIL


@pytest.mark.parametrize("seed", range(8))
def test_objective_changed_evaluations_too_noisy_to_show_the_climb_are_compared_strictly(seed):
    # A run at far too high a learning rate: its evaluations swing +-35% and end twice their
    # level. Their noise would allow more than the train loss's whole climb, so it is not
    # allowed at all: the model got worse (the gallery's lr_hot runs).
    train, ev = _cyclical_kl(1500, 4, 0.35, seed, eval_rise=2.0)
    assert one(judge(loss=train, eval_loss=ev), "TP-DIVERGE").level is Level.FAIL


@pytest.mark.parametrize("seed", range(6))
def test_objective_changed_the_noise_allowed_does_not_grow_with_the_train_climb(seed):
    # A divergence whose train loss climbs 10x while its evaluations, at 15% noise, end 35%
    # above the level they held: noise that large cannot show the model did not get worse
    # (a reviewer's case passed when the allowance was sized by the train loss's climb).
    rng = np.random.default_rng(seed)
    n = 600
    t = np.linspace(0, 1, n)
    train = np.where(t < 0.4, 0.8 + 3.0 * np.exp(-t / 0.05), 0.8 * np.exp(2.3 * (t - 0.4) / 0.6))
    train = train * np.exp(0.03 * rng.standard_normal(n))
    level = np.where(t < 0.4, 0.9 + 2.0 * np.exp(-t / 0.05), 0.9 * (1 + 0.35 * (t - 0.4) / 0.6))
    ev = level * np.exp(0.15 * rng.standard_normal(n))
    ev_col = [float(e) if (i + 1) % 20 == 0 else None for i, e in enumerate(ev)]
    assert one(judge(loss=train, eval_loss=ev_col), "TP-DIVERGE").level is Level.FAIL


def test_objective_changed_a_stale_evaluation_repeated_to_the_bit_is_no_evidence():
    # An eval worker that died: its last value forward-filled at every later evaluation
    # says nothing of the model.
    train, ev = _climb_with_eval(300, 25, "falls", seed=7)
    stale = [None if e is None else (e if i < 100 else 1.020871639251709) for i, e in enumerate(ev)]
    rep = judge(loss=train, eval_loss=stale)
    assert "TP-DIVERGE" in rep.ids() and "TP-OBJECTIVE-CHANGED" not in rep.ids()


def test_objective_changed_needs_evaluations_on_both_sides_of_the_climb():
    train, ev = _climb_with_eval(300, 25, "falls", seed=7)
    # Evaluations only before the climb began: they say nothing about it.
    early = [e if i < 80 else None for i, e in enumerate(ev)]
    assert "TP-DIVERGE" in judge(loss=train, eval_loss=early).ids()
    # Fewer than objective_eval_after evaluations after it: one lucky evaluation does not decide.
    few = [e if i < 80 or i in (199, 299) else None for i, e in enumerate(ev)]
    assert "TP-DIVERGE" in judge(loss=train, eval_loss=few).ids()


def _two_stage(n=150):
    """Two-stage training: a floor of 1.4 on stage 1's data, then from 40% of the run a
    floor of 3.1 on stage 2's harder data (2% noise). Returns ``(loss, t)``."""
    rng = np.random.default_rng(5)
    t = np.linspace(0, 1, n)
    loss = np.where(t < 0.4, 1.4 + 2.0 * np.exp(-t / 0.05), 3.1 + 1.0 * np.exp(-(t - 0.4) / 0.05))
    return loss * np.exp(0.02 * rng.standard_normal(n)), t


@pytest.mark.parametrize(
    "key",
    [
        "stage",
        "curriculum_stage",
        "train/stage",
        "curriculum",
        "difficulty",
        "task_difficulty",
        "seq_len",
        "max_seq_length",
        "image_size",
    ],
)
def test_objective_changed_a_stage_that_changed(key):
    # seq_len: a helper's loss summed over each sequence, 128 -> 512 tokens at step 1,200
    # (1.67 -> 6.79), FAILed TP-DIVERGE and WARNed TP-LOSS-STALLED across the change.
    loss, t = _two_stage()
    n = t.size
    stage = np.where(t < 0.4, 1.0, 2.0)
    rep = judge(loss=loss, **{key: stage})
    assert "TP-DIVERGE" not in rep.ids() and "TP-OBJECTIVE-CHANGED" in rep.ids()
    assert "TP-LOSS-STALLED" not in rep.ids()
    # A stage that never changes explains nothing.
    assert "TP-DIVERGE" in judge(loss=loss, **{key: np.ones(n)}).ids()


def _added_term(n, at, rel, seed, aux_scale=1.5):
    """A cross-entropy ``loss_ce`` falling 2.0 -> 0.3 with relative noise ``rel``; from the
    share ``at`` of the run an auxiliary term ``loss_aux`` (``aux_scale`` at its start,
    falling to a third of it) is added to the total ``loss``. Returns ``(loss, ce, aux)``,
    ``aux`` ``None`` before the term starts."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)
    ce = (0.3 + 1.7 * np.exp(-t / 0.1)) * np.exp(rel * rng.standard_normal(n))
    on = t >= at
    aux = np.where(on, aux_scale * (1 / 3 + 2 / 3 * np.exp(-(t - at) / 0.1)), 0.0) * np.exp(
        rel * rng.standard_normal(n)
    )
    return ce + np.where(on, aux, 0.0), ce, [float(a) if o else None for a, o in zip(aux, on)]


@pytest.mark.parametrize("n,at,rel", [(200, 0.5, 0.02), (1000, 0.3, 0.05), (5000, 0.6, 0.1)])
@pytest.mark.parametrize("key", ["loss_aux", "aux_loss", "train/kl_loss"])
def test_objective_changed_a_loss_term_added_mid_run(n, at, rel, key):
    # A helper's healthy run: an auxiliary loss switched on at step 1,000, the total jumps
    # 0.38 -> 1.89 and ends 1.87x its best while loss_ce goes on falling: TP-DIVERGE FAILed.
    # The term first logged after the best level is the cause.
    loss, ce, aux = _added_term(n, at, rel, seed=n)
    rep = judge(loss=loss, loss_ce=ce, **{key: aux})
    assert rep.verdict is not Level.FAIL, rep.ids()
    assert "gained a term" in one(rep, "TP-OBJECTIVE-CHANGED").data["reason"]
    # The same total with the term logged from the start (zero before it is switched on)
    # shows no new term: the log cannot tell the jump from a divergence.
    from_start = [0.0 if a is None else a for a in aux]
    assert "TP-DIVERGE" in judge(loss=loss, loss_ce=ce, **{key: from_start}).ids()
    # Nor does a held-out loss term that starts late (an evaluation added mid-run).
    assert "TP-DIVERGE" in judge(loss=loss, loss_ce=ce, val_aux_loss=aux).ids()


def test_objective_changed_an_example_size_that_shrank_explains_no_rise():
    # shorter sequences or smaller images are easier: a rise after they shrank is the loss's own
    loss, t = _two_stage()
    rep = judge(loss=loss, seq_len=np.where(t < 0.4, 512.0, 128.0))
    assert "TP-DIVERGE" in rep.ids() and "TP-OBJECTIVE-CHANGED" not in rep.ids()


def _noise_curriculum(n, stages, rel, seed, ramp=False, learned=False):
    """A denoiser trained on data whose noise level sigma doubles at each of ``stages``
    stages (or climbs smoothly, ``ramp``): within a stage the loss falls toward a floor
    that grows with sigma squared; an eval loss every 20 points at the current sigma.
    ``learned``: sigma is a noisy learned scale instead of a schedule. Returns
    ``(loss, eval_loss, sigma)``."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n, endpoint=False)
    k = np.floor(t * stages)
    sigma = 0.1 * 2.0 ** (t * stages if ramp else k)
    within = t * stages - k
    floor = 0.8 * sigma**2
    fresh = np.exp(-t / 0.05) if ramp else np.exp(-within / 0.1)  # re-learning at each new level
    loss = floor * (1 + 0.5 * fresh) * np.exp(rel * rng.standard_normal(n))
    ev = [float(floor[i] * (1.05 + 0.01 * rng.standard_normal())) if (i + 1) % 20 == 0 else None for i in range(n)]
    if learned:
        sigma = sigma * np.exp(0.05 * rng.standard_normal(n))
    return loss, ev, sigma


@pytest.mark.parametrize("n,stages,rel", [(200, 3, 0.05), (1000, 4, 0.1), (4000, 5, 0.2)])
@pytest.mark.parametrize("key", ["sigma", "noise_level", "train/noise_std"])
def test_objective_changed_a_noise_curriculum_that_raises_the_loss(n, stages, rel, key):
    # A denoiser whose curriculum doubles the noise: both losses climb with sigma squared
    # while the model improves at each level (a new user's healthy run FAILed TP-DIVERGE
    # and TP-EVAL-DIVERGE). A schedule set by the code never falls.
    for ramp in (False, True):
        loss, ev, sigma = _noise_curriculum(n, stages, rel, seed=n, ramp=ramp)
        rep = judge(loss=loss, eval_loss=ev, **{key: sigma})
        assert rep.verdict is not Level.FAIL, (ramp, rep.ids())
        assert "never falling" in one(rep, "TP-OBJECTIVE-CHANGED").data["reason"]
        bare = judge(loss=loss, eval_loss=ev)
        assert "TP-DIVERGE" in bare.ids() or "TP-EVAL-DIVERGE" in bare.ids()


@pytest.mark.parametrize("key", ["sigma", "grad_noise_scale"])
def test_objective_changed_a_learned_noise_scale_or_a_gradient_noise_explains_nothing(key):
    # A learned scale wobbles (a heteroscedastic model's sigma grows as it gets worse); a
    # gradient's noise scale is a measurement: neither is a curriculum.
    loss, ev, sigma = _noise_curriculum(1000, 4, 0.1, seed=3, learned=key == "sigma")
    rep = judge(loss=loss, eval_loss=ev, **{key: sigma})
    assert "TP-OBJECTIVE-CHANGED" not in rep.ids() and rep.verdict is Level.FAIL


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("rate", [1e-6, 5e-7])
def test_dead_run_a_fine_tune_at_a_low_but_real_rate_is_no_dead_run(seed, rate):
    # A large model's full fine-tune runs at 1e-6, a preference tune at 5e-7: a real rate.
    # A new user's tiny GPT-2 at a constant 1e-6: the loss falls 5% over 55 logs and the eval
    # loss at every one of 5 evaluations (3%); no FAIL. The same log at 1e-9 (a typo) is dead.
    rng = np.random.default_rng(seed)
    n = 55
    loss = 2.33 * (1 - 0.05 * np.linspace(0, 1, n)) * np.exp(0.02 * rng.standard_normal(n))
    ev = [2.235 * (1 - 0.031 * (i + 1) / 5) if (i + 1) % 11 == 0 else None for i in range(n)]
    assert "TP-DEAD-RUN" not in judge(loss=loss, learning_rate=[rate] * n, eval_loss=ev).ids()
    flat = 2.33 * np.exp(0.02 * rng.standard_normal(n))
    dead = judge(loss=flat, learning_rate=[1e-9] * n, eval_loss=[2.235 if x else None for x in ev])
    assert one(dead, "TP-DEAD-RUN").data["cause"] == "tiny_lr"


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("scale", [5e-6, 1.0, 300.0])
def test_an_eval_loss_that_drifts_by_a_sliver_is_no_learning_elsewhere(seed, scale):
    # float16 weights with no loss scaler: updates round away, the train loss is flat and
    # the eval loss drifts down 0.004% over 6 evaluations, steadily (a rank test calls it
    # significant). No progress, at any scale; a 3% fall of the eval loss is learning.
    rng = np.random.default_rng(seed)
    n = 60
    loss = list(scale * np.exp(0.07 * rng.standard_normal(n)))
    sliver = [scale * (1 - 7e-6 * i) if (i + 1) % 10 == 0 else None for i in range(n)]
    rep = judge(loss=loss, learning_rate=[0.05] * n, eval_loss=sliver)
    assert "TP-LOSS-STALLED" in rep.ids() and "TP-DEAD-RUN" not in rep.ids()
    real = [scale * (1 - 0.006 * i / 10) if (i + 1) % 10 == 0 else None for i in range(n)]
    assert not {"TP-LOSS-STALLED", "TP-DEAD-RUN"} & set(
        judge(loss=loss, learning_rate=[0.05] * n, eval_loss=real).ids()
    )


@pytest.mark.parametrize("n,eval_every", [(40, 4), (120, 10), (800, 50)])
def test_dead_run_an_eval_loss_drifting_by_rounding_at_a_tiny_lr_is_no_learning(n, eval_every):
    # lr 1e-9 (a typo): the eval loss falls by 1e-6 of its value at every evaluation, a
    # trend a rank test calls significant; it is float rounding, not learning (a new
    # user's HF run PASSed through it).
    rng = np.random.default_rng(n)
    loss = 2.30 * np.exp(0.02 * rng.standard_normal(n))
    ev = [2.3081677 * (1 - 1e-7 * i) if (i + 1) % eval_every == 0 else None for i in range(n)]
    rep = judge(loss=loss, learning_rate=[1e-9] * n, eval_loss=ev)
    assert one(rep, "TP-DEAD-RUN").data["cause"] == "tiny_lr"
    # An eval loss that falls 20% at that rate is learning the train curve hides.
    falling = [2.3 * (1 - 0.2 * i / n) if (i + 1) % eval_every == 0 else None for i in range(n)]
    assert "TP-DEAD-RUN" not in judge(loss=loss, learning_rate=[1e-9] * n, eval_loss=falling).ids()
    # At a live rate the same drifting eval loss keeps its say (no cause, no FAIL).
    assert "TP-DEAD-RUN" not in judge(loss=loss, learning_rate=[3e-4] * n, eval_loss=ev).ids()


def _signed(n, rel, seed, rise_share=0.0, at=0.5):
    """A negative log-likelihood by design: A*exp(-t/0.1) + c with c < 0 (it crosses 0
    and settles at c), additive noise ``rel`` of the fall; from ``at`` of the run it climbs
    back ``rise_share`` of its fall over a tenth of the run and stays there."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)
    a, c = 3.0, -2.0
    level = a * np.exp(-t / 0.1) + c + rise_share * a * np.clip((t - at) / 0.1, 0, 1)
    return level + rel * a * rng.standard_normal(n)


@pytest.mark.parametrize("n", [20, 100, 1000])
@pytest.mark.parametrize("rel", [0.005, 0.05])
def test_signed_loss_a_healthy_negative_nll_is_judged_and_passes(n, rel):
    # A Gaussian NLL that crosses 0 was NOT-CHECKED (exit 2): every trend rule reads
    # ratios of levels. It is judged in its own units now.
    for seed in range(5):
        rep = judge(loss=_signed(n, rel, seed))
        assert rep.verdict is not Level.NOT_CHECKED, rep.ids()
        assert not {"TP-DIVERGE-SIGNED", "TP-NO-PROGRESS-SIGNED"} & set(rep.ids())


@pytest.mark.parametrize("n", [40, 200, 2000])
@pytest.mark.parametrize("rel", [0.005, 0.05])
def test_signed_loss_a_climb_back_of_most_of_the_fall_is_a_divergence(n, rel):
    f = one(judge(loss=_signed(n, rel, seed=n, rise_share=0.8)), "TP-DIVERGE-SIGNED")
    assert f.data["regain"] > 0.6  # of the fall from the first block, which sits below the first point
    # A climb back of a fifth of the fall is the floor's wiggle, not a divergence.
    assert "TP-DIVERGE-SIGNED" not in judge(loss=_signed(n, rel, seed=n, rise_share=0.2)).ids()


def test_signed_loss_that_never_falls_is_no_progress():
    rng = np.random.default_rng(2)
    rep = judge(loss=-1.0 + 0.05 * rng.standard_normal(200))
    assert one(rep, "TP-NO-PROGRESS-SIGNED").level is Level.WARN
    assert "TP-DIVERGE-SIGNED" not in rep.ids()


def test_signed_loss_rules_leave_a_positive_loss_to_the_ratio_rules():
    rep = judge(loss=np.linspace(3.0, 1.0, 50))
    assert rep.skipped["TP-DIVERGE-SIGNED"].reason == "not_applicable"
    # Nor a loss at 0: the zero-loss rules judge it.
    assert "TP-NO-PROGRESS-SIGNED" not in judge(loss=[0.0] * 50).ids()
    assert rep.skipped["TP-NO-PROGRESS-SIGNED"].reason == "not_applicable"


@pytest.mark.parametrize("key", ["lr_phase", "scheduler_stage", "phase"])
def test_objective_changed_a_scheduler_phase_explains_nothing(key):
    # A WSD scheduler's phase flag (0/1/2) says nothing of the data: a divergence logged
    # beside it is still one (a helper's divergence with an lr_phase column PASSed).
    loss, t = _two_stage()
    rep = judge(loss=loss, **{key: np.where(t < 0.4, 1.0, 2.0)})
    assert "TP-DIVERGE" in rep.ids() and "TP-OBJECTIVE-CHANGED" not in rep.ids()


@pytest.mark.parametrize("key", ["seq_len", "image_size"])
def test_objective_changed_an_example_size_explains_a_rise_only_when_the_loss_falls_after_it(key):
    # Longer sequences destabilise training too: a loss that climbs on after the size grew
    # is a divergence; one that jumps and is learned again (_two_stage's second stage) is not.
    loss, t = _two_stage()
    size = np.where(t < 0.4, 128.0, 512.0)
    assert "TP-OBJECTIVE-CHANGED" in judge(loss=loss, **{key: size}).ids()
    rng = np.random.default_rng(2)
    climbing = np.where(t < 0.4, loss, 1.4 * (1 + 2.0 * (t - 0.4))) * np.exp(0.02 * rng.standard_normal(t.size))
    rep = judge(loss=climbing, **{key: size})
    assert "TP-DIVERGE" in rep.ids() and "TP-OBJECTIVE-CHANGED" not in rep.ids()


@pytest.mark.parametrize("n", [100, 400])
def test_objective_changed_an_evaluation_from_before_the_run_learned_is_no_reference(n):
    # nanoGPT evaluates at iteration 0 and then every 1000: the untrained model's eval
    # loss (11) is no reference for a run that learned to 4.2 and diverged to 7.5 with its
    # eval loss at 7.5 (a helper's diverged run PASSed through it).
    rng = np.random.default_rng(n)
    t = np.linspace(0, 1, n)
    train = np.where(t < 0.2, 4.2 + 6.7 * np.exp(-t / 0.04), 7.5) * np.exp(0.01 * rng.standard_normal(n))
    ev = [None] * n
    ev[0] = 10.95
    for i in range(n // 4, n, n // 4):
        ev[i] = 7.5 * (1 + 0.003 * rng.standard_normal())
    ev[-1] = 7.47
    rep = judge(loss=train, eval_loss=ev)
    assert "TP-DIVERGE" in rep.ids() and "TP-OBJECTIVE-CHANGED" not in rep.ids()


@pytest.mark.parametrize("seed", range(4))
def test_objective_changed_an_evaluation_after_the_loss_left_its_level_is_no_reference(seed):
    # A cyclic rate too high: the loss learns to 1.4 by step 40, slides up from step 70 and
    # collapses to ln 10 for the rest of the run; the first evaluation (step 100) comes
    # after it left the level, so its 2.33 says nothing of the model that held 1.4 (a
    # reviewer's run read as "the held-out loss did not get worse").
    rng = np.random.default_rng(seed)
    n = 150
    head = [2.26, 1.8, 1.45, 1.43, 1.37, 1.41, 1.91, 1.92, 1.99, 2.45, 2.15, 2.6]
    train = np.r_[head, 2.32 * np.exp(0.005 * rng.standard_normal(n - len(head)))]
    ev = [None] * n
    for i in range(9, n, 10):
        ev[i] = 2.33 * (1 + 0.004 * rng.standard_normal())
    rep = judge(loss=train.tolist(), eval_loss=ev)
    assert "TP-DIVERGE" in rep.ids() and "TP-OBJECTIVE-CHANGED" not in rep.ids()
    # an evaluation made while the loss held 1.4, no better than the end (what a changed
    # objective shows), is the reference
    ev[4] = 2.4
    rep = judge(loss=train.tolist(), eval_loss=ev)
    assert "TP-OBJECTIVE-CHANGED" in rep.ids() and "TP-DIVERGE" not in rep.ids()


def _smoothed_nll(seed, rise_share=0.0, n=2000):
    """A fine-tune of a Gaussian-NLL regressor logged as fastai logs it: per-batch NLL
    falling -0.40 -> -0.60 over its first 10% (t noise, 4 degrees of freedom, sd 0.4),
    smoothed by an EMA of beta 0.98 with debiasing, logged every 5 iterations; from 60% of
    the run the level climbs back ``rise_share`` of its fall (0.2) and stays."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    level = -0.60 + 0.2 * np.exp(-t / 70) + rise_share * 0.2 * np.clip((t - 0.6 * n) / (0.05 * n), 0, 1)
    raw = level + 0.4 * rng.standard_t(4, n) / np.sqrt(2)
    smooth, acc = np.empty(n), 0.0
    for i, x in enumerate(raw):
        acc = 0.98 * acc + 0.02 * x
        smooth[i] = acc / (1 - 0.98 ** (i + 1))
    return smooth[4::5]


def test_signed_loss_a_smoothed_running_loss_wanders_without_diverging():
    # The running loss wanders by a block's worth: read with TP-DIVERGE's AR(1) cap of 0.9
    # it FAILed TP-DIVERGE-SIGNED on 4 of 20 seeds of a helper's fine-tune (and on none
    # with GaussianNLLLoss(full=True)'s +0.919, which makes it positive: a verdict must not
    # flip with an additive constant). The signed rules credit autocorrelation up to 0.99.
    assert sum("TP-DIVERGE-SIGNED" in judge(loss=_smoothed_nll(seed)).ids() for seed in range(20)) == 0
    # A climb back of all of its fall through the same smoothing is still a divergence.
    assert "TP-DIVERGE-SIGNED" in judge(loss=_smoothed_nll(0, rise_share=1.5)).ids()


def _running_at_floor(n, seed):
    """A running loss (EMA 0.95) of t(2) batch noise around a Gaussian NLL at its floor
    from the start (-1.1 -> -1.2), as a helper's sweep wrote it."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)
    y = -1.2 + 0.1 * np.exp(-t / 0.15) + 0.2 * rng.standard_t(2, n)
    out, acc = np.empty(n), y[0]
    for i, x in enumerate(y):
        acc = 0.95 * acc + 0.05 * x
        out[i] = acc
    return out


def test_signed_loss_a_heavy_tailed_running_loss_at_its_floor_is_no_divergence():
    # Its best block is one shock decaying through the average: at 10,000 points TP-DIVERGE's
    # AR(1) cap of 0.9 FAILed 6 of 20 seeds (SIGNED_AR_CAP 0.99: none); at 1,000 a fall of
    # one noise gate FAILed 5 of 20 (SIGNED_FALL_GATES 2: 2, left as they are).
    assert sum("TP-DIVERGE-SIGNED" in judge(loss=_running_at_floor(10_000, s)).ids() for s in range(20)) == 0
    assert sum("TP-DIVERGE-SIGNED" in judge(loss=_running_at_floor(1_000, s)).ids() for s in range(20)) <= 2


@pytest.mark.parametrize("n", [60, 300, 3000])
def test_dead_run_a_significant_drift_too_small_to_be_learning_is_no_progress(n):
    # A contrastive model collapsed at ln(2B - 1) = ln 511: its loss drifts one way by
    # 0.01% over the run, with noise of 1e-5 (a helper's SimCLR run). The rank test calls
    # the drift significant, and it PASSed as "learning, however slowly"; its 99% interval
    # of change sits inside a slow learner's 5% both ways: pinned.
    rng = np.random.default_rng(n)
    t = np.linspace(0, 1, n)
    loss = math.log(511) * (1 + 1e-4 * (1 - t)) * (1 + 1e-5 * rng.standard_normal(n))
    rep = judge(loss=loss)
    assert "TP-LOSS-STALLED" in rep.ids() and rep.verdict is Level.WARN
    # With the gradient norm collapsed a hundredfold, the cause is named: a dead run.
    gn = 5e-3 * np.where(t < 0.2, 1.0, 5e-3)
    assert "TP-DEAD-RUN" in judge(loss=loss, grad_norm=gn).ids()
    # A slow learner whose trend is an effect (8% over the run) is learning.
    slow = 2.0 * (1 - 0.08 * t) * (1 + 0.002 * rng.standard_normal(n))
    assert not {"TP-LOSS-STALLED", "TP-DEAD-RUN"} & set(judge(loss=slow).ids())


@pytest.mark.parametrize("n", [80, 400])
def test_zero_loss_onset_a_margin_loss_that_lands_on_zero_is_not_a_failure(n):
    # A triplet-margin run converges: its loss is exactly 0, with a zero gradient, once
    # every triplet in a batch meets the margin, more and more often, then on every batch
    # (a helper's metric-learning run FAILed TP-ZERO-LOSS-ONSET and TP-ZERO-GRAD-ONSET).
    # The log names the margin loss (val_triplet_acc).
    rng = np.random.default_rng(n)
    t = np.linspace(0, 1, n)
    hit = rng.random(n) < 0.6 * np.exp(-t / 0.3)
    loss = np.where(hit, 0.02 * rng.random(n), 0.0)
    loss[: n // 20] = 0.03
    loss[-n // 10 :] = 0.0
    grad = np.where(loss > 0, 0.5, 0.0)
    acc = [0.99 + 0.01 * x if (i + 1) % 10 == 0 else None for i, x in enumerate(t)]
    rep = judge(loss=loss, grad_norm=grad, val_triplet_acc=acc)
    assert not {"TP-ZERO-LOSS-ONSET", "TP-ZERO-GRAD-ONSET"} & set(rep.ids())
    # The same log without a key naming the margin loss is still flagged: a FAIL where its
    # stray positives sit at its level (n=80), a WARN where they run down toward 0 among the
    # zeros, as a margin loss's batch means do (n=400: TP-ZERO-LOSS-FITTED).
    rep = judge(loss=loss, grad_norm=grad)
    assert {"TP-ZERO-LOSS-ONSET", "TP-ZERO-LOSS-FITTED"} & set(rep.ids())


@pytest.mark.parametrize("zeros", [5, 7, 40])
def test_zero_loss_a_cross_entropy_that_underflows_within_three_logs_is_fitted(zeros):
    # A float32 cross-entropy on well-separated classes with large logits: 2.0, 0.067,
    # 5e-8, then exactly 0 (the monitor's first check sees 3 positives). The last positive
    # value, not the median of all three, is where the loss stood before the zeros.
    rep = judge(loss=[2.0, 0.067, 5e-8] + [0.0] * zeros)
    assert "TP-ZERO-LOSS-ONSET" not in rep.ids() and "TP-ZERO-LOSS-FITTED" in rep.ids()
    # from an ordinary level straight to 0: a zeroed loss
    assert "TP-ZERO-LOSS-ONSET" in judge(loss=[2.0, 1.9, 1.8] + [0.0] * zeros).ids()


@pytest.mark.parametrize("n", [60, 200, 2000])
@pytest.mark.parametrize("zero_share", [0.15, 0.3, 0.7])
def test_zero_loss_mixed_a_margin_loss_zero_on_easy_batches_is_not_a_failure(n, zero_share):
    # A triplet-margin run: a batch whose triplets all meet the margin has loss exactly 0,
    # the others sit at the run's ordinary level (the monitor stopped a helper's run at step
    # 49 with TP-ZERO-LOSS-MIXED; its loss graph was read as a hinge, model/margin_graph).
    rng = np.random.default_rng(n)
    loss = 0.05 * np.exp(0.3 * rng.standard_normal(n))
    loss[3:][rng.random(n - 3) < zero_share] = 0.0
    loss[-1] = 0.04
    assert "TP-ZERO-LOSS-MIXED" not in judge(loss=loss, **{"model/margin_graph": np.ones(n)}).ids()
    assert "TP-ZERO-LOSS-MIXED" not in judge(train_triplet_margin_loss=loss).ids()
    # The same zeros in a loss that names no margin: batches computed on nothing. A
    # measurement named margin beside it (a logit margin, a mean margin), or a graph
    # reading that found a hinge at only some checks, names no margin objective.
    assert "TP-ZERO-LOSS-MIXED" in judge(loss=loss).ids()
    assert "TP-ZERO-LOSS-MIXED" in judge(loss=loss, logit_margin=np.full(n, 2.0)).ids()
    assert "TP-ZERO-LOSS-MIXED" in judge(loss=loss, margin_mean=np.full(n, 0.5)).ids()
    half = np.where(np.arange(n) % 2 == 0, 1.0, 0.0)
    assert "TP-ZERO-LOSS-MIXED" in judge(loss=loss, **{"model/margin_graph": half}).ids()


def _hinge_batches(n, batch, seed):
    """A linear SVM's logged batch losses: the mean of max(0, 1 - margin) over ``batch``
    examples whose margins are normal around a centre that climbs 0 -> 2.8 (fast, then
    slowly), so that more and more batches meet the margin whole and log exactly 0."""
    rng = np.random.default_rng(seed)
    centre = 2.8 * (1 - np.exp(-np.arange(n) / (n / 4)))
    margins = centre[:, None] + rng.standard_normal((n, batch))
    return np.maximum(0.0, 1.0 - margins).mean(axis=1)


@pytest.mark.parametrize("n", [200, 1000, 5000])
@pytest.mark.parametrize("batch", [4, 8, 16, 32])
def test_zero_loss_mixed_a_margin_loss_under_a_plain_name_is_told_by_its_shape(n, batch):
    # A new user's real linear SVM logged as `loss` (batch 8, 34 zeros in 200 logs) FAILed:
    # its positive batch means run down toward 0, the zeros are their tail, and the run is
    # judged in its own units (it was NOT-CHECKED under `hinge_loss`).
    loss = _hinge_batches(n, batch, seed=n + batch)
    if np.mean(loss == 0) < 0.1 or loss[-1] == 0:
        loss[-1] = 0.05  # the rule reads zeros mixed in, not a run that ends on them
    rep = judge(loss=loss)
    assert "TP-ZERO-LOSS-MIXED" not in rep.ids() and rep.verdict not in (Level.FAIL, Level.NOT_CHECKED), rep.ids()


def test_zero_loss_mixed_a_last_log_at_zero_is_still_a_mix():
    # A helper's masked-batch bug (12-20% of batches with every label -100, written as 0.0)
    # PASSed whenever its last logged loss was one of them: one trailing zero is no run of
    # zeros to the end (TP-ZERO-LOSS-ONSET's, which needs zero_min_points).
    rng = np.random.default_rng(7)
    n = 600
    loss = (2.0 + 1.5 * np.exp(-np.arange(n) / 100)) * np.exp(0.3 * rng.standard_normal(n))
    loss[rng.random(n) < 0.15] = 0.0
    for last in (0.0, 3.9):
        loss[0], loss[-1] = 3.5, last
        assert one(judge(loss=loss), "TP-ZERO-LOSS-MIXED").level is Level.FAIL, last


def test_zero_loss_a_margin_loss_fitted_in_its_first_logs_is_no_hidden_nan():
    # A real triplet-margin run on an easy task logged as `loss`: 0.209, then 0.004 by its
    # second step, 571 of 600 losses exactly 0 with stray positives of 0.003-0.05, zeros
    # to the end: TP-ZERO-LOSS-ONSET's "hidden NaN" FAILed it (as `triplet_loss` it WARNed).
    rng = np.random.default_rng(3)
    n = 600
    loss = np.where(rng.random(n) < 0.05, 0.003 + 0.02 * rng.random(n) + 0.03 * (rng.random(n) < 0.1), 0.0)
    loss[:3] = [0.209, 0.004, 0.0174]
    loss[-80:] = 0.0
    rep = judge(loss=loss)
    assert "TP-ZERO-LOSS-ONSET" not in rep.ids() and "TP-ZERO-LOSS-FITTED" in rep.ids(), rep.ids()
    # An ordinary loss that drops to zeros from its level stays the FAIL.
    ordinary = np.r_[2.0 * np.exp(0.05 * rng.standard_normal(500)), np.zeros(100)]
    assert "TP-ZERO-LOSS-ONSET" in judge(loss=ordinary).ids()


@pytest.mark.parametrize("n", [200, 1000, 5000])
@pytest.mark.parametrize("rel", [0.05, 0.3, 0.6])
@pytest.mark.parametrize("share", [0.15, 0.3])
def test_zero_loss_mixed_zeros_apart_from_a_falling_noisy_loss_still_fail(n, rel, share):
    # The negative: a cross-entropy falling 2.3 -> 0.4 with log-normal batch noise up to
    # 0.6, and a share of its batches zeroed (every label masked): the positives stay at
    # their level, away from 0.
    rng = np.random.default_rng(n)
    loss = (0.4 + 1.9 * np.exp(-np.arange(n) / (n / 5))) * np.exp(rel * rng.standard_normal(n))
    loss[3:-1][rng.random(n - 4) < share] = 0.0
    assert one(judge(loss=loss), "TP-ZERO-LOSS-MIXED").level is Level.FAIL


def _running_average_from_zero(steps_total, every, beta, rel, seed, raw):
    """A hand-written loop's running loss, ``r = beta * r + (1 - beta) * loss`` from
    ``r = 0``, logged every ``every`` steps from step 0: ``raw(t)`` is the loss's level at
    step t, with lognormal noise ``rel``. A RunLog of the logged values."""
    from trainproof.runlog import Record, build_runlog

    rng = np.random.default_rng(seed)
    r, recs = 0.0, []
    for t in range(steps_total):
        r = beta * r + (1 - beta) * raw(t) * math.exp(rel * rng.standard_normal())
        if t % every == 0:
            recs.append(Record(float(t), {"loss": r}, len(recs) + 1))
    return build_runlog(recs, "x.jsonl", "jsonl")


AVERAGE_GRID = [
    (total, every, beta, rel, seed)
    for total in (400, 3000)
    for every in (1, 10)
    for beta in (0.9, 0.98)
    for rel in (0.1, 0.3)
    for seed in range(3)
]


@pytest.mark.parametrize("total,every,beta,rel", sorted({g[:4] for g in AVERAGE_GRID}))
def test_diverge_a_running_average_started_at_zero_is_no_blow_up_from_the_start(total, every, beta, rel):
    # A healthy run (2.3 -> 0.4) logged as an average from zero: its first log is (1 - beta)
    # of the loss, then the average fills up and falls with the run.
    for seed in range(3):
        log = _running_average_from_zero(
            total, every, beta, rel, seed, lambda t: 0.4 + 1.9 * math.exp(-t / (0.15 * total))
        )
        rep = judge_runlog(log)
        assert "TP-DIVERGE" not in rep.ids(), (seed, one(rep, "TP-DIVERGE").evidence)
        assert rep.verdict is not Level.FAIL, (seed, rep.ids())


@pytest.mark.parametrize("total,every", [(400, 1), (3000, 10)])
def test_diverge_a_running_average_of_a_loss_that_blows_up_still_fires(total, every):
    # The same average over a loss that climbs 8x after a fifth of the run and stays: the
    # average fills up concavely, but the run never falls below that climb.
    for seed in range(3):
        log = _running_average_from_zero(total, every, 0.9, 0.2, seed, lambda t: 2.3 * (1 if t < total // 5 else 8))
        assert "TP-DIVERGE" in judge_runlog(log).ids(), seed


@pytest.mark.parametrize("every", [1, 10])
def test_diverge_a_jump_from_the_first_log_faster_than_an_average_can_fill_fires(every):
    # A loss that jumps 30x from its first log to the next (one log, or ten steps, later),
    # then falls back to twice its start: no average over losses near the first can climb
    # so fast, so the first log is a level the run held.
    from trainproof.runlog import Record, build_runlog

    rng = np.random.default_rng(every)
    n = 200
    v = np.r_[1.0, 30 * np.exp(-np.arange(n - 1) / 10) + 2.0] * np.exp(0.03 * rng.standard_normal(n))
    v[0] = 1.0
    log = build_runlog(
        [Record(float(i * every), {"loss": float(x)}, i + 1) for i, x in enumerate(v)], "x.jsonl", "jsonl"
    )
    f = one(judge_runlog(log), "TP-DIVERGE")
    assert f.data["from_start"] and f.data["best_points"] == 1


@pytest.mark.parametrize("n", [100, 400])
def test_objective_changed_a_train_loss_that_climbs_on_across_flat_evaluations(n):
    # A running average from zero with a slow decay (0.995 a step) over a language model at
    # its floor from the start: the logged train loss climbs for the whole run toward 1.03,
    # every evaluation made during the climb sits at 1.05-1.04 (a new user's healthy runs
    # FAILed TP-DIVERGE). The held-out loss did not get worse while the train loss climbed
    # on, so it is no divergence.
    rng = np.random.default_rng(n)
    steps = np.arange(1, n + 1) * (1000 // n)
    train = 1.03 * (1 - 0.995 ** (steps + 40)) * np.exp(0.002 * rng.standard_normal(n))
    ev = [None] * n
    for j, i in enumerate(range(n // 4 - 1, n, n // 4)):
        ev[i] = 1.05 - 0.003 * j
    rep = judge(loss=train, eval_loss=ev)
    assert "TP-DIVERGE" not in rep.ids() and rep.verdict is not Level.FAIL
    reason = one(rep, "TP-OBJECTIVE-CHANGED").data["reason"]
    assert "first evaluation in the climb" in reason and "did not get worse" in reason
    # The same climb with the held-out loss getting worse across it is a divergence (a
    # climb that ended before the first evaluation is
    # test_objective_changed_an_evaluation_after_the_loss_left_its_level_is_no_reference).
    worse = [None if v is None else v + 0.05 * j for j, v in enumerate(ev)]
    assert "TP-DIVERGE" in judge(loss=train, eval_loss=worse).ids()


def _slow_average_with_accuracy(total, every, beta, seed, acc_of, key="accuracy", percent=False, with_acc=True):
    """A slow running average from zero (decay ``beta``) over a model at its floor (1.04)
    after a fast fall from ln 48 in its first few dozen steps, logged every ``every``
    steps with the batch accuracy of that step (64 examples, true rate ``acc_of(t)``)."""
    from trainproof.runlog import Record, build_runlog

    rng = np.random.default_rng(seed)
    r, recs = 0.0, []
    for t in range(total):
        raw = (1.04 + 2.83 * math.exp(-t / 20)) * math.exp(0.1 * rng.standard_normal())
        r = beta * r + (1 - beta) * raw
        if t % every == 0:
            acc = rng.binomial(64, acc_of(t)) / 64
            row = {"loss": r, key: 100 * acc if percent else acc} if with_acc else {"loss": r}
            recs.append(Record(float(t + 1), row, len(recs) + 1))
    return build_runlog(recs, "x.jsonl", "jsonl")


def _rising(t):
    return 0.55 - 0.45 * math.exp(-t / 20)


@pytest.mark.parametrize("total,every,beta", [(1000, 5, 0.995), (3000, 20, 0.998), (2000, 10, 0.999), (400, 4, 0.99)])
def test_objective_changed_a_loss_that_climbs_while_the_accuracy_rises(total, every, beta):
    # The average climbs toward the floor for the whole run and never falls: without the
    # accuracy it reads as a blow-up from the first log; the accuracy that rose from 0.1 to
    # 0.55 meanwhile says the loss no longer measures the model's error.
    for seed in range(2):
        log = _slow_average_with_accuracy(total, every, beta, seed, _rising)
        rep = judge_runlog(log)
        assert "TP-DIVERGE" not in rep.ids() and rep.verdict is not Level.FAIL, (seed, rep.ids())
        assert "accuracy" in one(rep, "TP-OBJECTIVE-CHANGED").data["reason"]
        bare = _slow_average_with_accuracy(total, every, beta, seed, _rising, with_acc=False)
        assert "TP-DIVERGE" in judge_runlog(bare).ids(), seed


@pytest.mark.parametrize("key,percent", [("train_acc", True), ("eval_accuracy", False)])
def test_objective_changed_reads_an_accuracy_in_percent_or_held_out(key, percent):
    log = _slow_average_with_accuracy(1000, 5, 0.995, 0, _rising, key=key, percent=percent)
    assert "TP-OBJECTIVE-CHANGED" in judge_runlog(log).ids()


@pytest.mark.parametrize(
    "acc_of",
    [
        lambda t: 0.8 - 0.6 * min(1.0, t / 300),  # the model gets worse at its task
        lambda t: 0.12,  # flat at chance, within its noise
        lambda t: 0.14 if t > 500 else 0.1,  # a rise smaller than the bar
    ],
    ids=["falls", "flat", "small-rise"],
)
def test_objective_changed_needs_an_accuracy_that_rose_beyond_its_noise(acc_of):
    for seed in range(2):
        rep = judge_runlog(_slow_average_with_accuracy(1000, 5, 0.995, seed, acc_of))
        assert "TP-DIVERGE" in rep.ids(), (seed, rep.ids())


@pytest.mark.parametrize("n", [30, 300])
def test_diverge_an_accelerating_blow_up_fires_whatever_the_accuracy_says(n):
    # A loss that grows 3x a log from two thirds of the run on: no running average climbs
    # faster and faster, so an accuracy that goes on rising does not explain it.
    t = np.arange(n)
    k = 2 * n // 3
    loss = (0.8 + 1.5 * np.exp(-t / (n / 4))) * np.where(t >= k, 3.0 ** np.minimum(t - k + 1, 12), 1.0)
    rep = judge(loss=loss, accuracy=0.5 + t / (3 * n))
    assert "TP-DIVERGE" in rep.ids() and "TP-OBJECTIVE-CHANGED" not in rep.ids()


def test_diverge_a_climb_no_average_can_fill_fires_whatever_the_accuracy_says():
    # lr 3 from the first step, loss and accuracy logged as averages from 0: the loss
    # reaches 1e30x its first log while the averaged accuracy creeps to chance. An average
    # from 0 fills by 1 / (1 - decay) at the most (objective_fill_max_ratio).
    n = 200
    t = np.arange(n)
    loss = 0.24 * np.exp(np.minimum(t, 30) * 2.3) * (1 - 0.5 ** (t + 1))
    acc = 0.1 * (1 - 0.98 ** (t + 1))
    rep = judge(loss=loss, accuracy=acc)
    assert "TP-DIVERGE" in rep.ids() and "TP-OBJECTIVE-CHANGED" not in rep.ids()


def test_diverge_after_learning_fires_though_the_accuracy_rose_before_the_climb():
    # A run that learns (loss 2.3 -> 0.4, accuracy 0.1 -> 0.85), then blows up at step 600
    # (loss to 2.0, accuracy to 0.3): the accuracy's best came before the climb.
    rng = np.random.default_rng(0)
    t = np.arange(1000)
    loss = np.where(t < 600, 0.4 + 1.9 * np.exp(-t / 100), 2.0) * np.exp(0.05 * rng.standard_normal(t.size))
    acc = np.where(t < 600, 0.85 - 0.75 * np.exp(-t / 100), 0.3) + 0.03 * rng.standard_normal(t.size)
    rep = judge(loss=loss, accuracy=acc)
    assert "TP-DIVERGE" in rep.ids() and "TP-OBJECTIVE-CHANGED" not in rep.ids()


def _climb_back(n: int, rel: float, seed: int, start: float, best: float, end: float, at: float = 0.5):
    """A loss falling from ``start`` to ``best`` over the first ``at`` of ``n`` logs, then
    climbing smoothly to ``end`` within a tenth of the run and holding it; ``rel``
    lognormal point noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    k = int(n * at)
    fall = best + (start - best) * np.exp(-t / (k / 5))
    rise = best + (end - best) * np.clip((t - k) / max(1, n // 10), 0, 1)
    return list(np.where(t < k, fall, rise) * np.exp(rel * rng.standard_normal(n)))


@pytest.mark.parametrize(
    "seed,n,rel",
    first_seed_fast(
        [(s, n, rel) for s in range(3) for n, rel in [(40, 0.01), (150, 0.03), (1000, 0.05), (5000, 0.1)]], 0
    ),
)
@pytest.mark.parametrize("start,best,end", [(1.6, 0.9, 1.15), (4.0, 2.5, 3.2), (0.05, 0.03, 0.04)])
def test_a_held_climb_short_of_a_divergence_is_a_warning(seed, n, rel, start, best, end):
    # Falls under 3x, then climbs back 1.28-1.33x, giving back 36-50% of its fall, held
    # to the end: a slow divergence or a harder stretch of data; with no cause in the log
    # a warning, at any scale of the loss.
    rep = judge(loss=_climb_back(n, rel, seed, start, best, end))
    f = one(rep, "TP-LOSS-CLIMB")
    assert "TP-DIVERGE" not in rep.ids() and rep.verdict == Level.WARN
    assert 1.15 < f.data["ratio"] < 1.5 and f.data["regain"] >= 0.25
    assert "giving back" in f.message
    # a warning says the loss climbed; "diverged" is TP-DIVERGE's FAIL (two helpers read the
    # WARN's "loss diverged: ..." as a contradiction)
    assert "climbed" in f.message and "diverged" not in f.message


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("n,rel", [(150, 0.03), (1000, 0.05)])
def test_a_wiggle_at_the_floor_of_a_large_fall_is_no_climb(seed, n, rel):
    # Fell 10x, then 1.3x up over the last tenth of the run only: back a sliver (3%) of what
    # it learned, above its best over too little of the run to be a steady climb.
    rep = judge(loss=_climb_back(n, rel, seed, 9.0, 0.9, 1.17, at=0.9))
    assert not {"TP-LOSS-CLIMB", "TP-DIVERGE"} & set(rep.ids())
    # The same 1.3x held over the last half of the run is a climb (climb_durable_share),
    # however little of the tenfold fall it regains: a warning, never a divergence.
    # (tests/rules/test_climb_durable.py sizes it over lengths and noise)
    rep = judge(loss=_climb_back(n, rel, seed, 9.0, 0.9, 1.17))
    assert "TP-DIVERGE" not in rep.ids()
    if rel <= 0.03:
        assert "TP-LOSS-CLIMB" in rep.ids()


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("n,rel,tail", [(60, 0.05, 0.0), (400, 0.1, 0.0), (2000, 0.2, 0.0), (400, 0.05, 0.05)])
def test_a_noisy_healthy_run_at_its_floor_does_not_climb(seed, n, rel, tail):
    # Ordinary noise, heavy-tailed stray batches included, around a curve that flattens.
    v = _falling(n, rel, seed, tail=tail)
    assert "TP-LOSS-CLIMB" not in judge(loss=list(v)).ids()


@pytest.mark.parametrize("seed", range(3))
def test_a_climb_beyond_the_noise_of_a_few_points_needs_the_gate(seed):
    # 12 logs with 15% noise: a 1.25x climb over the last 4 points is within two
    # standard errors of the levels, not a held climb.
    rep = judge(loss=_climb_back(12, 0.15, seed, 1.6, 0.9, 1.1, at=0.6))
    assert "TP-LOSS-CLIMB" not in rep.ids()
    # the same 12 points at 1% noise clear the gate
    assert "TP-LOSS-CLIMB" in judge(loss=_climb_back(12, 0.01, seed, 1.6, 0.9, 1.1, at=0.6)).ids()


@pytest.mark.parametrize("seed", range(3))
def test_a_climb_with_a_learning_rate_cause_is_a_divergence_not_a_warning(seed):
    loss, lr = _lr_climb_run(150, 150, seed)
    ids = judge(loss=loss, lr=lr).ids()
    assert "TP-DIVERGE" in ids and "TP-LOSS-CLIMB" not in ids
    loss, lr = _lr_climb_run(150, 150, seed, climb=False)
    ids = judge(loss=loss, lr=lr).ids()
    assert "TP-LOSS-CLIMB" in ids and "TP-DIVERGE" not in ids


def test_a_climb_under_a_logged_loss_weight_is_a_changed_objective():
    # A KL weight ramped 0.1 -> 1 after the best level: the loss measures more, not worse.
    n = 300
    loss = _climb_back(n, 0.02, 0, 1.6, 0.9, 1.15)
    beta = list(np.where(np.arange(n) < n // 2, 0.1, np.minimum(1.0, 0.1 + (np.arange(n) - n // 2) / 30)))
    assert "TP-LOSS-CLIMB" in judge(loss=loss).ids()
    assert "TP-LOSS-CLIMB" not in judge(loss=loss, kl_weight=beta).ids()


@pytest.mark.parametrize("seed", range(3))
def test_a_climb_that_comes_back_is_no_climb(seed):
    # Up 1.3x for a fifth of the run, back to the best level by the end.
    n = 400
    v = np.array(_climb_back(n, 0.02, seed, 1.6, 0.9, 1.17, at=0.5))
    assert "TP-LOSS-CLIMB" in judge(loss=list(v)).ids()  # held to the end, it is one
    v[int(n * 0.75) :] *= 0.9 / 1.17
    assert "TP-LOSS-CLIMB" not in judge(loss=list(v)).ids()


@pytest.mark.parametrize("n", [12, 20, 29])
@pytest.mark.parametrize("seed", range(3))
def test_a_significant_trend_too_small_to_be_progress_does_not_clear_a_short_run(n, seed):
    # lr 1e-8 with no rate logged: the loss drifts down 5e-5 of itself over the run, a
    # trend any rank test calls significant, too short a log for the pinned interval.
    rng = np.random.default_rng(seed)
    loss = 1.6959 * (1 - 5e-5 * np.arange(n) / n) * (1 + 1e-7 * rng.standard_normal(n))
    rep = judge(loss=list(loss))
    assert "TP-LOSS-STALLED" in rep.ids() and rep.verdict == Level.WARN


@pytest.mark.parametrize("n", [12, 20, 29])
@pytest.mark.parametrize("seed", range(3))
def test_a_short_slow_learner_with_a_trend_is_still_learning(n, seed):
    # 4% over the run (ends under the 5% bar) in 1% noise: its interval reaches a slow
    # learner's fall, so its trend is progress.
    rng = np.random.default_rng(seed)
    loss = 1.7 * (1 - 0.045 * np.arange(n) / (n - 1)) * np.exp(0.01 * rng.standard_normal(n))
    rep = judge(loss=list(loss))
    assert not {"TP-LOSS-STALLED", "TP-DEAD-RUN"} & set(rep.ids())


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("n", [60, 400])
def test_updates_of_about_zero_are_a_cause_that_nothing_moves(seed, n):
    # Gradients clipped to 1e-8: the lr (0.05) and the pre-clip gradient norm look alive,
    # the update/weight ratio measured across the step says the weights do not move.
    rng = np.random.default_rng(seed)
    loss = list(1.41 * np.exp(0.02 * rng.standard_normal(n)))
    alive = dict(loss=loss, lr=[0.05] * n, grad_norm=list(0.33 * np.exp(0.1 * rng.standard_normal(n))))
    rep = judge(**alive, update_ratio=list(1e-10 * np.exp(rng.standard_normal(n))))
    f = one(rep, "TP-DEAD-RUN")
    assert f.data["cause"] == "updates_zero" and "updates of about zero" in f.message
    layer = list(-9.3 + 0.2 * rng.standard_normal(n))  # the monitor's log10 per-tensor maximum
    assert one(judge(**alive, **{"model/layer_update_ratio_max": layer}), "TP-DEAD-RUN").data["cause"] == "updates_zero"
    # a slow run's ratio (1e-5, a fine-tune at a low rate) is no such cause: no progress only
    rep = judge(**alive, update_ratio=list(1e-5 * np.exp(rng.standard_normal(n))))
    assert "TP-DEAD-RUN" not in rep.ids() and "TP-LOSS-STALLED" in rep.ids()


@pytest.mark.parametrize("key", ["model/params_outside_optimizer", "model/params_not_updated"])
@pytest.mark.parametrize("n", [60, 600])
def test_every_trainable_tensor_left_unstepped_is_a_cause_that_nothing_moves(key, n):
    # An optimizer built over a copy of the model (a helper's live run): the model's 6
    # tensors get gradients, the optimizer holds none of them, and the gradient norm
    # grows as they accumulate; the lr and the norm look alive, the probe's count of
    # tensors outside the optimizer (or not changed across the step) covers all 6.
    rng = np.random.default_rng(n)
    loss = list(1.386 * np.exp(0.003 * rng.standard_normal(n)))
    alive = dict(loss=loss, lr=[1e-3] * n, grad_norm=list(np.linspace(0.4, 120, n)))
    checks = [6.0 if i % 10 == 9 else None for i in range(n)]
    rep = judge_runlog(run_of(meta={"trainable_tensors": 6}, **alive, **{key: checks}))
    f = one(rep, "TP-DEAD-RUN")
    assert f.level is Level.FAIL and f.data["cause"] == "updates_zero", rep.ids()
    # 5 of 6 left out (the head trains), or the count of trainable tensors unknown: no cause
    part = [5.0 if c else None for c in checks]
    rep = judge_runlog(run_of(meta={"trainable_tensors": 6}, **alive, **{key: part}))
    assert "TP-DEAD-RUN" not in rep.ids(), rep.ids()
    rep = judge_runlog(run_of(**alive, **{key: checks}))
    assert "TP-DEAD-RUN" not in rep.ids(), rep.ids()


@pytest.mark.parametrize("n", [60, 600])
def test_an_optimizer_that_never_stepped_is_a_cause_that_nothing_moves(n):
    # optimizer.step() never called (a breaker's live run): the monitor's count of steps
    # taken stays 0 at every check while the lr and the gradient norm look alive
    rng = np.random.default_rng(n)
    alive = dict(loss=list(1.42 * np.exp(0.003 * rng.standard_normal(n))), lr=[1e-3] * n, grad_norm=[0.58] * n)
    checks = [0.0 if i % 10 == 9 else None for i in range(n)]
    f = one(judge_runlog(run_of(**alive, **{"model/optimizer_steps": checks})), "TP-DEAD-RUN")
    assert f.level is Level.FAIL and f.data["cause"] == "updates_zero"
    # steps taken (a count that grows, gradient accumulation's fewer steps too): no cause
    taken = [float((i + 1) // 4) if i % 10 == 9 else None for i in range(n)]
    rep = judge_runlog(run_of(**alive, **{"model/optimizer_steps": taken}))
    assert "TP-DEAD-RUN" not in rep.ids(), rep.ids()


def _binary_evals(p: float, n_eval: int, evals: int, seed: int, collapsed: bool, acc_noise: bool = True):
    """A binary classifier's evaluations on ``n_eval`` examples, majority share ``p``: the
    eval loss falling onto the prior's entropy H(p) with its accuracy pinned at p
    (``collapsed``), or a model that learned: accuracy a few examples above p, moving from
    evaluation to evaluation, and a loss below H(p)."""
    rng = np.random.default_rng(seed)
    h = -p * math.log(p) - (1 - p) * math.log(1 - p)
    k = np.arange(evals)
    if collapsed:
        loss = h * (1 + 0.4 * (k == 0) + 0.002 * rng.random(evals))  # at the prior from the second on
        acc = np.full(evals, round(p * n_eval) / n_eval)
    else:
        loss = h * (0.9 - 0.3 * (1 - np.exp(-k / 3))) * np.exp(0.02 * rng.standard_normal(evals))
        acc = (
            np.round(
                (p + (1 - p) * 0.4 * (1 - np.exp(-k / 3))) * n_eval + (rng.integers(-2, 3, evals) if acc_noise else 0)
            )
            / n_eval
        )
    return list(loss), list(np.minimum(acc, 1.0))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("p,n_eval,evals", [(0.9, 1000, 12), (0.6, 500, 6), (0.75, 200, 30), (0.97, 5000, 8)])
def test_a_binary_classifier_at_its_class_prior_fails(seed, p, n_eval, evals):
    loss, acc = _binary_evals(p, n_eval, evals, seed, collapsed=True)
    rep = judge(loss=list(np.linspace(0.9, 0.5, evals)), eval_loss=loss, eval_accuracy=acc)
    f = one(rep, "TP-PRIOR-COLLAPSE")
    assert f.level is Level.FAIL and abs(f.data["majority_share"] - p) < 1 / n_eval
    # the same as a train loss with a train accuracy in percent (a Keras log)
    rep = judge(loss=loss, accuracy=[100 * a for a in acc])
    assert "TP-PRIOR-COLLAPSE" in rep.ids()


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("p,n_eval,evals", [(0.9, 1000, 12), (0.6, 500, 6), (0.75, 20, 30)])
def test_a_binary_classifier_that_learned_is_no_prior_collapse(seed, p, n_eval, evals):
    # learned: accuracy above the prior and moving, loss below H(p); a converged model on 20
    # examples holds its accuracy to the bit, with a loss below H(p); a miscalibrated one
    # holds it above H(p); a solved task holds 1.0
    loss, acc = _binary_evals(p, n_eval, evals, seed, collapsed=False)
    assert "TP-PRIOR-COLLAPSE" not in judge(loss=loss, eval_loss=loss, eval_accuracy=acc).ids()
    held, _ = _binary_evals(p, n_eval, evals, seed, collapsed=False, acc_noise=False)
    pinned = [round(p * n_eval) / n_eval] * evals
    assert "TP-PRIOR-COLLAPSE" not in judge(loss=held, eval_loss=held, eval_accuracy=pinned).ids()
    h = -p * math.log(p) - (1 - p) * math.log(1 - p)
    high = [1.3 * h] * evals
    assert "TP-PRIOR-COLLAPSE" not in judge(loss=held, eval_loss=high, eval_accuracy=pinned).ids()
    assert "TP-PRIOR-COLLAPSE" not in judge(loss=held, eval_loss=held, eval_accuracy=[1.0] * evals).ids()


@pytest.mark.parametrize("evals", [6, 20])
def test_a_model_frozen_at_lr_zero_is_no_prior_collapse(evals):
    # A 5-class fine-tune at lr 0 (helper 85): val_acc frozen at its checkpoint's 0.882 and
    # val_loss at 0.3624, within 1% of H(0.882) = 0.3629 by chance, FAILed as a binary
    # classifier predicting its prior beside TP-ZERO-LR. Nothing moves its predictions.
    n = 10 * evals
    rng = np.random.default_rng(evals)
    train = list(0.36 * np.exp(0.2 * rng.standard_normal(n)))
    evl = [None] * n
    acc = [None] * n
    for i in range(9, n, 10):
        evl[i], acc[i] = 0.3624, 0.882
    rep = judge(loss=train, eval_loss=evl, eval_accuracy=acc, lr=[0.0] * n)
    assert "TP-ZERO-LR" in rep.ids()
    assert "TP-PRIOR-COLLAPSE" not in rep.ids()
    # the same log at a learning rate that moves the weights is the prior's signature
    assert "TP-PRIOR-COLLAPSE" in judge(loss=train, eval_loss=evl, eval_accuracy=acc, lr=[1e-3] * n).ids()


def test_three_classes_at_their_prior_are_not_judged():
    # 70/20/10: the prior's entropy 0.80 is not H(0.7) = 0.61; the log does not give the
    # minority shares, so no level is claimed.
    rep = judge(loss=[0.9] * 12, eval_loss=[0.8018] * 12, eval_accuracy=[0.7] * 12)
    assert "TP-PRIOR-COLLAPSE" not in rep.ids()
