"""The gradient-norm and learning-rate rules on hand-made series: TP-NAN-GRAD,
TP-GRAD-OVERFLOW-SKIPPED, TP-ZERO-GRAD, TP-GRAD-SPIKE, TP-ZERO-LR, TP-ZERO-LR-PARTIAL.

The n-th logged point (0-based) sits at step ``10 * (n + 1)`` and source line ``n + 1``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from trainproof.findings import Level
from trainproof.rules.engine import judge_runlog

from conftest import judge_cols as judge
from conftest import make_run, one


def step_of(i: int) -> float:
    return float(10 * (i + 1))


def healthy_loss(n, seed=0):
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n)
    return (0.5 + 2.5 * np.exp(-5 * t)) * np.exp(0.02 * rng.standard_normal(n))


def still_loss(n, seed=0):
    """A loss that does not move: what a learning rate of 0 leaves (2.0 with 2% noise)."""
    return 2.0 * np.exp(0.02 * np.random.default_rng(seed).standard_normal(n))


def healthy_grad(n, seed=0):
    rng = np.random.default_rng(seed + 100)
    return 0.5 * np.exp(0.1 * rng.standard_normal(n))


# --- TP-NAN-GRAD / TP-GRAD-OVERFLOW-SKIPPED -------------------------------------------


def test_nan_grad_three_consecutive_nonfinite_norms_at_the_end_fail():
    g = list(healthy_grad(40))
    g[37:] = [math.nan, math.inf, math.nan]
    rep = judge(loss=healthy_loss(40), grad_norm=g)
    f = one(rep, "TP-NAN-GRAD")
    assert f.level is Level.FAIL and rep.verdict is Level.FAIL
    assert f.data["first_step"] == step_of(37) and f.data["run_length"] == 3
    assert f.data["nonfinite"] == 3 and f.data["points"] == 40 and f.data["to_end"] is True
    assert (f.step, f.line) == (step_of(37), 38)
    assert "TP-GRAD-OVERFLOW-SKIPPED" not in rep.ids()


def test_consecutive_nonfinite_norms_that_recover_are_the_scaler_not_a_fail():
    """A dynamic loss scaler can skip several steps in a row while it calibrates (the
    Lightning fp16 gallery run skips 3 in a row); NaN weights never give a finite norm
    again, so a run followed by finite norms is WARN, not FAIL."""
    g = list(healthy_grad(40))
    g[10:16] = [math.nan, math.inf, math.nan, math.inf, math.inf, math.inf]
    rep = judge(loss=healthy_loss(40), grad_norm=g)
    assert "TP-NAN-GRAD" not in rep.ids()
    f = one(rep, "TP-GRAD-OVERFLOW-SKIPPED")
    assert f.data["nonfinite"] == 6 and f.data["runs"] == 1 and f.data["at_end"] is False
    assert rep.verdict is Level.WARN


def test_nan_grad_to_the_end_of_the_log():
    g = list(healthy_grad(30))
    g[25:] = [math.nan] * 5
    f = one(judge(loss=healthy_loss(30), grad_norm=g), "TP-NAN-GRAD")
    assert f.data["to_end"] is True and f.data["run_length"] == 5
    assert "to the end of the log" in f.message


@pytest.mark.parametrize("n", [1, 2, 6])
def test_nan_grad_on_every_step_fails_however_short(n):
    rep = judge(loss=[2.0] * n, grad_norm=[math.inf] * n)
    f = one(rep, "TP-NAN-GRAD")
    assert f.data["run_length"] == n and f.data["nonfinite"] == n and f.data["to_end"] is True
    assert rep.verdict is Level.FAIL


def test_nan_grad_isolated_nonfinite_norm_is_a_skipped_step_warning_never_a_fail():
    loss = healthy_loss(50)
    g = list(healthy_grad(50))
    g[20] = math.inf
    rep = judge(loss=loss, grad_norm=g)
    assert "TP-NAN-GRAD" not in rep.ids()
    w = one(rep, "TP-GRAD-OVERFLOW-SKIPPED")
    assert w.level is Level.WARN
    assert w.data["nonfinite"] == 1 and w.data["runs"] == 1 and w.data["first_step"] == step_of(20)
    assert (w.step, w.line) == (step_of(20), 21)
    assert rep.verdict is Level.WARN
    assert all(f.level is not Level.FAIL for f in rep.findings)


def test_nan_grad_two_consecutive_and_scattered_isolated_norms_stay_warnings():
    g = list(healthy_grad(60))
    for i in (5, 6, 30, 47):
        g[i] = math.nan
    rep = judge(loss=healthy_loss(60), grad_norm=g)
    assert "TP-NAN-GRAD" not in rep.ids()
    w = one(rep, "TP-GRAD-OVERFLOW-SKIPPED")
    assert w.data["nonfinite"] == 4 and w.data["runs"] == 3 and w.data["first_step"] == step_of(5)


def test_nan_grad_one_sustained_run_makes_the_isolated_ones_part_of_the_fail():
    g = list(healthy_grad(60))
    g[5] = math.nan
    g[56:] = [math.nan] * 4
    rep = judge(loss=healthy_loss(60), grad_norm=g)
    f = one(rep, "TP-NAN-GRAD")
    assert f.data["first_step"] == step_of(56) and f.data["nonfinite"] == 5
    assert "TP-GRAD-OVERFLOW-SKIPPED" not in rep.ids()


def test_nan_grad_threshold_override_changes_what_is_sustained():
    from trainproof.rules.thresholds import DEFAULT

    g = list(healthy_grad(40))
    g[38:] = [math.nan, math.nan]
    run = make_run(loss=healthy_loss(40), grad_norm=g)
    assert "TP-NAN-GRAD" not in judge_runlog(run).ids()
    rep = judge_runlog(run, DEFAULT.with_overrides({"nan_grad_sustained_points": 2}))
    assert one(rep, "TP-NAN-GRAD").data["run_length"] == 2


def test_nan_grad_all_finite_norms_fire_nothing():
    rep = judge(loss=healthy_loss(40), grad_norm=healthy_grad(40))
    assert not {"TP-NAN-GRAD", "TP-GRAD-OVERFLOW-SKIPPED"} & set(rep.ids())
    assert {"TP-NAN-GRAD", "TP-GRAD-OVERFLOW-SKIPPED"} <= set(rep.ran)
    assert rep.verdict is Level.PASS


# --- TP-ZERO-GRAD ---------------------------------------------------------------------


def test_zero_grad_every_norm_exactly_zero_and_a_loss_that_does_not_improve_fails():
    rng = np.random.default_rng(0)
    loss = 2.3 * np.exp(0.01 * rng.standard_normal(20))
    rep = judge(loss=loss, grad_norm=[0.0] * 20)
    f = one(rep, "TP-ZERO-GRAD")
    assert f.level is Level.FAIL
    assert f.data["points"] == 20
    assert f.data["loss_first"] == pytest.approx(float(np.median(loss[:5])))
    assert f.data["loss_last"] == pytest.approx(float(np.median(loss[-5:])))
    assert (f.step, f.line) == (step_of(0), 1)


def test_zero_grad_ignores_nonfinite_norms_and_counts_negative_zero():
    g = [0.0, -0.0, math.nan, 0.0, 0.0, -0.0]
    f = one(judge(loss=[2.0] * 6, grad_norm=g), "TP-ZERO-GRAD")
    assert f.data["points"] == 5


def test_zero_grad_with_an_improving_loss_does_not_fire():
    rep = judge(loss=healthy_loss(20), grad_norm=[0.0] * 20)
    assert "TP-ZERO-GRAD" not in rep.ids() and "TP-ZERO-GRAD" in rep.ran


@pytest.mark.parametrize("tiny", [1e-12, 1e-30])
def test_zero_grad_tiny_nonzero_norms_do_not_fire(tiny):
    rep = judge(loss=[2.0] * 20, grad_norm=[tiny] * 20)
    assert "TP-ZERO-GRAD" not in rep.ids()


def test_zero_grad_one_nonzero_norm_breaks_every():
    assert "TP-ZERO-GRAD" not in judge(loss=[2.0] * 20, grad_norm=[0.0] * 19 + [0.1]).ids()


def test_zero_grad_needs_five_norms():
    rep = judge(loss=[2.0] * 20, grad_norm=[0.0] * 4)
    assert rep.skipped["TP-ZERO-GRAD"].reason == "too_few_points"
    assert "TP-ZERO-GRAD" not in rep.ids()


# --- TP-GRAD-SPIKE --------------------------------------------------------------------


def test_grad_spike_a_norm_fifty_times_the_median_warns_at_its_step():
    g = list(healthy_grad(50))
    g[30] = 25.0
    rep = judge(loss=healthy_loss(50), grad_norm=g)
    f = one(rep, "TP-GRAD-SPIKE")
    assert f.level is Level.WARN and rep.verdict is Level.WARN
    med = float(np.median(g[1:]))
    assert f.data["median"] == pytest.approx(med)
    assert f.data["max"] == 25.0 and f.data["max_step"] == step_of(30) and f.data["count"] == 1
    assert f.data["factor"] == 10.0
    assert (f.step, f.line) == (step_of(30), 31)


def test_grad_spike_reports_the_largest_of_several():
    g = list(healthy_grad(50))
    g[10], g[40] = 8.0, 30.0
    f = one(judge(loss=healthy_loss(50), grad_norm=g), "TP-GRAD-SPIKE")
    assert f.data["count"] == 2 and f.data["max"] == 30.0 and f.step == step_of(40)


def test_grad_spike_a_huge_first_norm_alone_does_not_fire():
    g = list(healthy_grad(50))
    g[0] = 5000.0
    rep = judge(loss=healthy_loss(50), grad_norm=g)
    assert "TP-GRAD-SPIKE" not in rep.ids() and "TP-GRAD-SPIKE" in rep.ran
    # ... but the same value on the second point does
    g2 = list(healthy_grad(50))
    g2[1] = 5000.0
    assert one(judge(loss=healthy_loss(50), grad_norm=g2), "TP-GRAD-SPIKE").step == step_of(1)


def test_grad_spike_nine_times_the_median_does_not_fire():
    g = [1.0] * 50
    g[25] = 9.0
    assert "TP-GRAD-SPIKE" not in judge(loss=healthy_loss(50), grad_norm=g).ids()
    g[25] = 10.5
    assert one(judge(loss=healthy_loss(50), grad_norm=g), "TP-GRAD-SPIKE").data["max"] == 10.5


def test_grad_spike_a_noisy_but_bounded_norm_does_not_fire():
    rng = np.random.default_rng(7)
    g = 0.5 * np.exp(0.5 * rng.standard_normal(500))  # heavy but bounded: < 10x the median
    assert np.max(g[1:]) < 10 * np.median(g[1:])
    assert "TP-GRAD-SPIKE" not in judge(loss=healthy_loss(500), grad_norm=g).ids()


def test_grad_spike_needs_five_norms():
    rep = judge(loss=healthy_loss(20), grad_norm=[0.5, 0.5, 0.5, 50.0])
    assert rep.skipped["TP-GRAD-SPIKE"].reason == "too_few_points"


# --- TP-ZERO-LR -----------------------------------------------------------------------


def test_zero_lr_everywhere_fails_and_counts_no_negatives():
    rep = judge(loss=still_loss(30), lr=[0.0] * 30)
    f = one(rep, "TP-ZERO-LR")
    assert f.level is Level.FAIL and rep.verdict is Level.FAIL
    # the loss that does not move is TP-DEAD-RUN's too, which the zero rate explains
    assert f.data == {
        "nonpositive": 30,
        "negative": 0,
        "points": 30,
        "share": 1.0,
        "sustained_share": 1.0,
        "implies": ["TP-DEAD-RUN"],
    }
    assert (f.step, f.line) == (step_of(0), 1)
    assert "negative" not in f.evidence
    assert "TP-ZERO-LR-PARTIAL" not in rep.ids()


@pytest.mark.parametrize("key", ["lr_group_1", "learning_rate_pg1", "train/lr_group_2", "lr-param_group-1"])
@pytest.mark.parametrize("n", [10, 30, 400])
@pytest.mark.parametrize("shape", ["falling", "flat"])
def test_zero_lr_on_one_group_while_another_group_trains_is_no_dead_run(key, n, shape):
    # A fine-tune with its backbone's group at lr 0 on purpose: the monitor and many loops
    # log group 0 as the rate, and the head's group beside it (a monitor stopped such a run
    # at its first check with TP-ZERO-LR).
    rng = np.random.default_rng(n)
    t = np.arange(n)
    loss = (0.4 + 1.1 * np.exp(-t / max(n / 5, 2))) if shape == "falling" else np.full(n, 0.9)
    loss = loss * np.exp(0.05 * rng.standard_normal(n))
    rep = judge(loss=loss, lr=[0.0] * n, **{key: [1e-3] * n})
    assert not {"TP-ZERO-LR", "TP-ZERO-LR-PARTIAL", "TP-ZERO-LR-LEARNING", "TP-DEAD-RUN"} & set(rep.ids()), rep.ids()
    assert rep.verdict is not Level.FAIL
    # Every logged group at lr 0, or the other at a rate that moves nothing: a dead run.
    for other in (0.0, 1e-12):
        rep = judge(loss=still_loss(n), lr=[0.0] * n, **{key: [other] * n})
        assert "TP-ZERO-LR" in rep.ids() and rep.verdict is Level.FAIL


def test_zero_lr_another_rate_key_that_names_no_group_changes_nothing():
    # Two spellings of one rate that disagree (a scheduler's and the optimizer's) say
    # nothing about a group that trains: the rate read is still 0.
    rep = judge(loss=still_loss(30), lr=[0.0] * 30, learning_rate_scheduled=[1e-3] * 30)
    assert "TP-ZERO-LR" in rep.ids()


def test_zero_lr_negative_learning_rates_are_counted_as_negative():
    f = one(judge(loss=still_loss(20), lr=[-1e-4] * 15 + [0.0] * 5), "TP-ZERO-LR")
    assert f.data["negative"] == 15 and f.data["nonpositive"] == 20
    assert "15 of them negative" in f.evidence


def test_zero_lr_fail_boundary_99_of_100():
    lr99 = [0.0] * 99 + [1e-4]
    f = one(judge(loss=still_loss(100), lr=lr99), "TP-ZERO-LR")
    assert f.data["share"] == pytest.approx(0.99)
    lr98 = [0.0] * 98 + [1e-4] * 2
    rep = judge(loss=healthy_loss(100), lr=lr98)
    assert "TP-ZERO-LR" not in rep.ids()
    assert one(rep, "TP-ZERO-LR-PARTIAL").data["share"] == pytest.approx(0.98)


def test_zero_lr_needs_five_points():
    rep = judge(loss=healthy_loss(20), lr=[0.0] * 4)
    assert rep.skipped["TP-ZERO-LR"].reason == "too_few_points"
    assert rep.skipped["TP-ZERO-LR-PARTIAL"].reason == "too_few_points"


# --- TP-ZERO-LR-PARTIAL ---------------------------------------------------------------


def test_zero_lr_partial_a_third_of_the_run_at_zero_warns():
    lr = [1e-4] * 40 + [0.0] * 20  # the schedule reached 0 two thirds of the way through
    rep = judge(loss=healthy_loss(60), lr=lr)
    f = one(rep, "TP-ZERO-LR-PARTIAL")
    assert f.level is Level.WARN and rep.verdict is Level.WARN
    assert f.data["nonpositive"] == 20 and f.data["negative"] == 0
    assert f.data["share"] == pytest.approx(1 / 3) and f.data["first_step"] == step_of(40)
    assert (f.step, f.line) == (step_of(40), 41)
    assert "all exactly 0, none negative" in f.evidence
    assert "TP-ZERO-LR" not in rep.ids()


def test_zero_lr_partial_says_how_many_were_negative():
    lr = [1e-4] * 40 + [-1e-5] * 7 + [0.0] * 13
    f = one(judge(loss=healthy_loss(60), lr=lr), "TP-ZERO-LR-PARTIAL")
    assert f.data["negative"] == 7 and f.data["nonpositive"] == 20
    assert "7 negative, the rest exactly 0" in f.evidence


def test_zero_lr_partial_exactly_ten_percent_does_not_fire_eleven_does():
    rep = judge(loss=healthy_loss(100), lr=[0.0] * 10 + [1e-4] * 90)
    assert "TP-ZERO-LR-PARTIAL" not in rep.ids() and "TP-ZERO-LR-PARTIAL" in rep.ran
    rep = judge(loss=healthy_loss(100), lr=[0.0] * 11 + [1e-4] * 89)
    assert one(rep, "TP-ZERO-LR-PARTIAL").data["nonpositive"] == 11


def _warmup_lr(n):
    return list(np.linspace(0.0, 1e-4, n))  # starts at exactly 0 and rises


def _linear_decay_lr(n):
    return list(np.linspace(1e-4, 0.0, n))  # ends at exactly 0


@pytest.mark.parametrize("n", [5, 6, 9, 12, 60])
@pytest.mark.parametrize("shape", ["warmup_start", "decay_end", "both"])
def test_zero_lr_a_single_zero_at_warmup_start_or_schedule_end_fires_nothing(n, shape):
    if shape == "warmup_start":
        lr = _warmup_lr(n)
    elif shape == "decay_end":
        lr = _linear_decay_lr(n)
    else:
        lr = [0.0] + [1e-4] * (n - 2) + [0.0]
    assert sum(x <= 0 for x in lr) == (2 if shape == "both" else 1)
    rep = judge(loss=healthy_loss(n + 10), lr=lr)
    assert not {"TP-ZERO-LR", "TP-ZERO-LR-PARTIAL"} & set(rep.ids()), rep.ids()
    assert {"TP-ZERO-LR", "TP-ZERO-LR-PARTIAL"} <= set(rep.ran)


def test_zero_lr_up_to_three_leading_zeros_are_start_up_more_are_a_stretch():
    # lr_startup_points = 3: warm-up or fp16 start-up may log a few zeros first
    rep = judge(loss=healthy_loss(20), lr=[0.0, 0.0] + [1e-4] * 4)
    assert "TP-ZERO-LR-PARTIAL" not in rep.ids()
    f = one(judge(loss=healthy_loss(20), lr=[0.0] * 4 + [1e-4] * 2), "TP-ZERO-LR-PARTIAL")
    assert f.data["nonpositive"] == 4 and f.data["startup_zeros"] == 0


def test_zero_lr_partial_a_negative_first_lr_is_not_an_edge_zero():
    rep = judge(loss=healthy_loss(20), lr=[-1e-4] + [1e-4] * 5)
    f = one(rep, "TP-ZERO-LR-PARTIAL")
    assert f.data["negative"] == 1 and f.data["startup_zeros"] == 0


def test_zero_lr_partial_edge_zeros_are_not_counted_but_are_reported():
    lr = [0.0] + [1e-4] * 6 + [0.0, 0.0, 1e-4]  # an edge zero and a 2-point gap inside
    f = one(judge(loss=healthy_loss(20), lr=lr), "TP-ZERO-LR-PARTIAL")
    assert f.data["nonpositive"] == 2 and f.data["startup_zeros"] == 1 and f.data["decayed_tail"] == 0
    assert f.data["share"] == pytest.approx(2 / 9)
    assert f.data["first_step"] == step_of(7)
    assert "1 start-up and 0 end-of-schedule zeros not counted" in f.evidence


@pytest.mark.parametrize("tail", [1, 2])
def test_trailing_nonfinite_norms_are_not_called_recovered(tail):
    rep = judge(loss=np.linspace(2, 1, 60), grad_norm=[0.5] * (60 - tail) + [math.nan] * tail)
    f = one(rep, "TP-GRAD-OVERFLOW-SKIPPED")
    assert f.data["at_end"] is True
    assert "not yet followed by a finite norm" in f.evidence
    assert "0 followed by finite norms" in f.evidence
    assert "TP-NAN-GRAD" not in rep.ids()


def test_isolated_nonfinite_norm_in_the_middle_is_recovered():
    g = [0.5] * 60
    g[30] = math.inf
    f = one(judge(loss=np.linspace(2, 1, 60), grad_norm=g), "TP-GRAD-OVERFLOW-SKIPPED")
    assert f.data["at_end"] is False and "1 followed by finite norms" in f.evidence


# --- gradients clipped before unscale_ -----------------------------------------------------


def _amp_run(n: int, seed: int, grad_norm, scale, every: int = 5):
    """``n`` records of a slowly falling loss with ``grad_norm`` (an array) at every record
    and ``scale`` (an array) at every ``every``-th one, as the monitor's probe records it."""
    rng = np.random.default_rng(seed)
    loss = 1.2 * np.exp(-0.1 * np.arange(n) / n + 0.01 * rng.standard_normal(n))
    ls = [float(scale[i]) if (i + 1) % every == 0 else None for i in range(n)]
    return judge(loss=list(loss), grad_norm=list(grad_norm), loss_scale=ls)


CLIP_GRID = [
    (scale, bar, n, seed)
    for scale in (2.0**10, 2.0**16, 2.0**24)
    for bar in (0.1, 1.0, 25.0)
    for n, seed in ((20, 0), (300, 1))
]


@pytest.mark.parametrize("scale,bar,n,seed", CLIP_GRID)
def test_gradients_clipped_before_unscale_warn_at_the_third_scale_step(scale, bar, n, seed):
    # Clipped while scaled, the norm the optimizer gets is the bar over the scale at every
    # step, however the unclipped gradient moved.
    norms = np.full(n, np.float32(bar) / np.float32(scale), dtype=np.float64)
    f = one(_amp_run(n, seed, norms, np.full(n, scale)), "TP-CLIP-BEFORE-UNSCALE")
    assert f.level is Level.WARN and f.step == 50.0
    assert f.data["clip_bar"] == pytest.approx(bar, rel=1e-6) and f.data["loss_scale"] == scale


def test_gradients_clipped_before_unscale_across_a_change_of_scale_warn():
    # The scaler halves at an overflow: the norm doubles with it, the product stays the bar.
    n = 60
    scale = np.where(np.arange(n) < 32, 2.0**16, 2.0**15)
    f = one(_amp_run(n, 0, 1.0 / scale, scale), "TP-CLIP-BEFORE-UNSCALE")
    assert f.data["clip_bar"] == pytest.approx(1.0)


@pytest.mark.parametrize("bar", [0.1, 1.0, 25.0])
@pytest.mark.parametrize("scale", [2.0**10, 2.0**16])
def test_gradients_clipped_after_unscale_are_not_flagged(scale, bar):
    # The right order: the norm is the bar itself at every step.
    n = 100
    assert "TP-CLIP-BEFORE-UNSCALE" not in _amp_run(n, 0, np.full(n, bar), np.full(n, scale)).ids()


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("level", [1e-6, 1e-5, 1e-4])
def test_tiny_gradients_that_vary_are_not_read_as_clipped(seed, level):
    # A run near its end with gradient norms of 1e-6..1e-4 at a scale of 65,536: the
    # product sits under the bar, but it moves from step to step as gradients do.
    n = 100
    rng = np.random.default_rng(seed)
    norms = level * np.exp(0.05 * rng.standard_normal(n))
    assert "TP-CLIP-BEFORE-UNSCALE" not in _amp_run(n, seed, norms, np.full(n, 2.0**16)).ids()


def test_a_scaler_that_fell_low_is_left_alone():
    # At a scale of 64 the right order (bar 0.1) and the wrong one (bar 6.4/64) look alike.
    n = 100
    assert "TP-CLIP-BEFORE-UNSCALE" not in _amp_run(n, 0, np.full(n, 0.1), np.full(n, 64.0)).ids()


def test_a_gradient_norm_logged_before_unscale_is_not_read_as_clipped():
    # Logged while scaled, the norm is the scale times an ordinary gradient: far above the bar.
    n = 100
    rng = np.random.default_rng(3)
    norms = 2.0**16 * 0.5 * np.exp(0.1 * rng.standard_normal(n))
    assert "TP-CLIP-BEFORE-UNSCALE" not in _amp_run(n, 0, norms, np.full(n, 2.0**16)).ids()


@pytest.mark.parametrize("bar,scale", [(0.05, 2.0**10), (0.01, 2.0**12), (0.01, 2.0**13), (0.002, 2.0**15)])
def test_a_small_bar_clipped_after_unscale_at_a_low_scale_is_not_flagged(bar, scale):
    # The right order with a bar under 0.1 and a scaler that fell to 2^10..2^15: norm x
    # scale (51.2, 40.96, 81.92, 65.536) is under 100 but no short decimal; the bar itself
    # is the norm.
    n = 100
    norms = np.full(n, np.float32(bar) * (1 - 1e-6 / 0.3), dtype=np.float64)  # clip_grad_norm_'s 1e-6
    assert "TP-CLIP-BEFORE-UNSCALE" not in _amp_run(n, 0, norms, np.full(n, scale)).ids()


@pytest.mark.parametrize("rate", [1e-6, 1e-5, 1e-4])
def test_a_smooth_unclipped_gradient_under_the_bar_is_not_flagged(rate):
    # Full-batch training with no clipping at all: the gradient norm falls smoothly
    # (rate per logged step), norm x scale passes 100 and keeps falling through numbers
    # that are no short decimals for three steps in a row.
    n = 400
    norms = 1.53e-3 * np.exp(-rate * np.arange(n))
    rep = _amp_run(n, 0, norms, np.full(n, 2.0**16), every=1)
    assert "TP-CLIP-BEFORE-UNSCALE" not in rep.ids()


def test_the_probe_s_applied_gradient_norm_is_read_before_the_logged_one():
    # Clipped with no unscale_ at all and logged before scaler.step: the logged norm is the
    # bar (the scaled gradients, clipped); the probe's applied norm is what the optimizer got.
    n = 60
    ls = [2.0**16 if (i + 1) % 5 == 0 else None for i in range(n)]
    applied = [1.0 / 2.0**16 if (i + 1) % 5 == 0 else None for i in range(n)]
    rep = judge(
        loss=list(1.2 - 0.001 * np.arange(n)),
        grad_norm=[1.0] * n,
        loss_scale=ls,
        **{"model/applied_grad_norm": applied},
    )
    f = one(rep, "TP-CLIP-BEFORE-UNSCALE")
    assert f.data["clip_bar"] == 1.0 and "model/applied_grad_norm" in f.evidence


# --- gradient spikes against the level around them -------------------------------------------


def _norm_curve(n: int, start: float, end: float, noise: float, seed: int) -> np.ndarray:
    """A gradient norm moving geometrically from ``start`` to ``end`` over ``n`` logs,
    with log-normal noise of sd ``noise``."""
    rng = np.random.default_rng(seed)
    return np.geomspace(start, end, n) * np.exp(noise * rng.standard_normal(n))


SPIKE_GRID = [(n, noise, seed) for n in (60, 300, 3000) for noise in (0.1, 0.3) for seed in (0, 1)]


@pytest.mark.parametrize("n,noise,seed", SPIKE_GRID)
@pytest.mark.parametrize("start,end", [(0.4, 0.01), (1.0, 0.02), (0.5, 5.0)])
def test_a_gradient_norm_that_falls_or_rises_over_the_run_is_no_spike(n, noise, seed, start, end):
    # A regression's gradient shrinks with its residual (40x, 50x); a language model's
    # grows as its learning rate decays (10x): each norm is at the level around it.
    g = _norm_curve(n, start, end, noise, seed)
    rep = judge(loss=list(np.geomspace(3.0, 0.5, n)), grad_norm=list(g))
    assert "TP-GRAD-SPIKE" in rep.ran and "TP-GRAD-SPIKE" not in rep.ids(), one(rep, "TP-GRAD-SPIKE").evidence


@pytest.mark.parametrize("n,noise,seed", SPIKE_GRID)
@pytest.mark.parametrize("where", [0.05, 0.3, 0.5])
@pytest.mark.parametrize("burst", [1, 5])
def test_a_spike_above_the_level_around_it_warns_in_a_falling_norm(n, noise, seed, where, burst):
    # Up to the middle of the run the level around a norm is at or above the run's median;
    # later the median is the level (a spike must clear 10x of it), as it was before the
    # level around a norm counted; and the run's early scale (its first tenth's median).
    g = _norm_curve(n, 0.4, 0.01, noise, seed)
    at = min(max(1, int(where * n)), n - burst)
    g[at : at + burst] *= 300.0
    f = one(judge(loss=list(np.geomspace(3.0, 0.5, n)), grad_norm=list(g)), "TP-GRAD-SPIKE")
    assert f.level is Level.WARN and at * 10 + 10 <= f.step <= (at + burst) * 10


@pytest.mark.parametrize("n,noise,seed", SPIKE_GRID)
@pytest.mark.parametrize("where", [0.3, 0.5, 0.9])
def test_a_late_norm_within_the_runs_early_scale_is_no_spike(n, noise, seed, where):
    # A new user's healthy MLPs fitted to a loss of 0.003 logged single norms of 1.2
    # against a late level of 0.06 (20x), under their first tenth's 0.55: a hard batch
    # gives back a norm the run's early steps had. 11 of 28 healthy runs WARNed.
    g = _norm_curve(n, 0.4, 0.01, noise, seed)
    at = min(max(1, int(where * n)), n - 1)
    g[at] = 2.0  # 5x the early median, 20-200x the level around it
    rep = judge(loss=list(np.geomspace(3.0, 0.5, n)), grad_norm=list(g))
    assert "TP-GRAD-SPIKE" in rep.ran and "TP-GRAD-SPIKE" not in rep.ids()


@pytest.mark.parametrize("n,noise,seed", SPIKE_GRID)
@pytest.mark.parametrize("at", [1, 3, 10])
def test_a_norm_that_climbs_over_several_logs_while_the_loss_leaves_its_plateau_is_no_spike(n, noise, seed, at):
    # An HF classifier's norm: 0.6, 1.4, 3.4, 4.3, 2.7, 1.3, 0.8 while the loss falls 5.5 -> 0.7,
    # then down to 20x under its peak as the model fits: a hump, not a jump.
    g = _norm_curve(n, 0.3, 0.09, noise, seed)
    hump = np.array([0.63, 1.42, 3.43, 4.33, 2.74, 1.30, 0.83])
    k = min(hump.size, n - at)
    g[at : at + k] = hump[:k] * np.exp(0.05 * np.random.default_rng(seed).standard_normal(k))
    rep = judge(loss=list(np.geomspace(5.5, 0.03, n)), grad_norm=list(g))
    assert "TP-GRAD-SPIKE" in rep.ran and "TP-GRAD-SPIKE" not in rep.ids(), one(rep, "TP-GRAD-SPIKE").evidence


def _lr_zero_run(n, seed, fall, noise=0.03, phi=0.0):
    """A run that logs lr 0 on every point and a loss that falls by ``fall`` (a share of
    its start) with log-noise ``noise`` (AR(1) ``phi``)."""
    rng = np.random.default_rng(seed)
    e = rng.standard_normal(n)
    for i in range(1, n):
        e[i] = phi * e[i - 1] + math.sqrt(1 - phi * phi) * e[i]
    t = np.arange(n) / n
    loss = 0.7 * (1 - fall + fall * np.exp(-4 * t)) * np.exp(noise * e)
    return dict(loss=loss.tolist(), lr=[0.0] * n)


@pytest.mark.parametrize("n,seed,fall", [(12, 0, 0.6), (40, 1, 0.3), (300, 2, 0.5), (2000, 3, 0.2)])
def test_a_logged_zero_rate_under_a_falling_loss_warns_that_the_log_misreports_it(n, seed, fall):
    # HF logs the first parameter group's rate: a frozen embedding group at lr 0 while the
    # head trains; a cyclic schedule logged only at its zero troughs.
    rep = judge(**_lr_zero_run(n, seed, fall))
    assert "TP-ZERO-LR" not in rep.ids() and rep.verdict.value == "WARN"
    assert one(rep, "TP-ZERO-LR-LEARNING").data["loss_fall_low"] > math.log(1 / 0.95)


@pytest.mark.parametrize("n,seed,tau", [(20, 0, 0.1), (51, 1, 0.05), (300, 2, 0.03), (2000, 3, 0.08)])
def test_a_logged_zero_rate_over_a_fast_fall_that_holds_warns(n, seed, tau):
    # A head that learns 1.9 -> 0.25 within the first tenth of the run and then holds
    # (its backbone's group at lr 0 logged): a line over the run fits it badly, and its
    # interval, widened for the bend, crossed a slow learner's fall (a helper's run FAILed
    # TP-ZERO-LR). The fall from the start level to the end level shows it.
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    loss = (0.25 + 1.65 * np.exp(-t / tau)) * np.exp(0.1 * rng.standard_normal(n))
    rep = judge(loss=loss.tolist(), lr=[0.0] * n)
    assert "TP-ZERO-LR" not in rep.ids() and rep.verdict.value == "WARN"
    assert one(rep, "TP-ZERO-LR-LEARNING").data["loss_fall_low"] > math.log(1 / 0.95)


def test_a_zero_rate_whose_eval_loss_repeats_to_the_bit_still_fails():
    # lr really 0 (a schedule given total=3), the train loss falling only because an
    # unshuffled loader serves the longest sequences first: the eval loss, the same value
    # to the bit at every evaluation, shows the weights never moved.
    n = 200
    loss = (21 + 144 * np.exp(-np.arange(n) / 40)).tolist()
    ev = [4.085160446166992 if (i + 1) % 28 == 0 else None for i in range(n)]
    rep = judge(loss=loss, lr=[0.0] * n, eval_loss=ev)
    assert "TP-ZERO-LR" in rep.ids() and "TP-ZERO-LR-LEARNING" not in rep.ids()


@pytest.mark.parametrize("seed", range(12))
def test_a_zero_rate_with_a_loss_that_does_not_fall_still_fails(seed):
    # noisy and wandering losses that do not move (what lr 0 produces): never read as learning
    rng = np.random.default_rng(seed)
    n = int(rng.choice([12, 40, 300, 2000]))
    cols = _lr_zero_run(n, seed, 0.0, noise=float(rng.uniform(0.005, 0.3)), phi=float(rng.choice([0.0, 0.5, 0.85])))
    rep = judge(**cols)
    assert "TP-ZERO-LR" in rep.ids() and "TP-ZERO-LR-LEARNING" not in rep.ids()


def _scaled_run(ls: list[float]) -> dict:
    n = len(ls)
    return {"loss": [3.0 * math.exp(-i / (n / 3)) + 1.0 for i in range(n)], "loss_scale": ls}


@pytest.mark.parametrize("start", [2.0**32, 2.0**16])
def test_a_scalers_start_up_search_is_no_collapse(start: float) -> None:
    # Megatron/DeepSpeed start at 2^32, GradScaler at 2^16, and halve at each first step
    # until one fits; then the scale holds and doubles back now and then.
    search = [start / 2**k for k in range(16)]
    rest = [search[-1] * (2 if 40 <= i < 70 else 1) for i in range(184)]
    ids = judge(**_scaled_run(search + rest)).ids()
    assert "TP-LOSS-SCALE-COLLAPSE" not in ids, ids


def test_a_collapse_after_the_search_and_a_run_long_fall_are_still_collapses() -> None:
    search = [2.0**32 / 2**k for k in range(16)]
    settled = [2.0**17] * 100
    collapse = [2.0**17 / 2 ** min(i // 4, 14) for i in range(84)]
    assert "TP-LOSS-SCALE-COLLAPSE" in judge(**_scaled_run(search + settled + collapse)).ids()
    # a fall at every point of the run is no start-up search
    fall = [2.0**16 / 2 ** (i // 10) for i in range(200)]
    assert "TP-LOSS-SCALE-COLLAPSE" in judge(**_scaled_run(fall)).ids()


def test_a_non_finite_norm_at_the_end_is_not_called_a_scaler_skip():
    # One NaN gradient norm at the end of the log (a run with no loss scaler whose loss
    # just became NaN): nothing yet says a scaler skipped it. One that came back finite is.
    n = 60
    g = [1.0] * (n - 1) + [math.nan]
    f = one(judge(loss=[2.0 - i * 0.01 for i in range(n)], grad_norm=g), "TP-GRAD-OVERFLOW-SKIPPED")
    assert "at the end of the log" in f.message and "loss scaler" not in f.message
    g = [1.0] * 30 + [math.nan] + [1.0] * (n - 31)
    f = one(judge(loss=[2.0 - i * 0.01 for i in range(n)], grad_norm=g), "TP-GRAD-OVERFLOW-SKIPPED")
    assert "loss scaler" in f.message and "or a norm too large" in f.message
    # a logged loss scale names the scaler; without one (an fp32 run whose norm's sum of
    # squares overflowed, or HF fp16 logging no scale) the message names both causes
    scale = [65536.0] * 30 + [32768.0] * (n - 30)
    f = one(judge(loss=[2.0 - i * 0.01 for i in range(n)], grad_norm=g, loss_scale=scale), "TP-GRAD-OVERFLOW-SKIPPED")
    assert "the loss scaler skipped steps" in f.message and "float format" not in f.message
