"""Failure signatures on one run: growing oscillation, vanishing gradients, an early
plateau, a loss spike that leaves the run worse.

Each is a WARN: a shape that often comes with a known failure, not proof of one. They
judge the train loss of supervised objectives only (an RL loss is not expected to fall),
and read levels on the log of the loss where they compare ratios of levels.
"""

from __future__ import annotations

import math

import numpy as np

from ..findings import Level
from ._fmt import num, pct, signed_pct, step, times
from ._schedule import fraction_ran
from ._shared import log_loss, log_loss_noise, lr_restart_after, objective_moved_between, objective_schedule
from ._stats import (
    ar1_inflation,
    block_medians,
    end_window,
    improvement,
    level_se,
    mann_kendall_z,
    median,
    neighbour_median,
    ols_slope,
    sign_change_share,
    smoothing_block,
    window_medians,
    window_medians_at,
    window_mins,
)
from .registry import Need, rule

#: Points per amplitude window (at least) and windows (at most) for TP-OSCILLATION: four
#: residuals is the smallest window whose median ignores one stray point, and twelve
#: windows give the trend test its power without making "window" mean most of a long run.
OSC_WINDOW_POINTS = 4
OSC_MAX_WINDOWS = 12


def _split_bounds(m: int, parts: int) -> list[tuple[int, int]]:
    """``(start, stop)`` of each part of ``np.array_split(np.arange(m), parts)``: the first
    ``m % parts`` parts have one point more."""
    q, r = divmod(m, parts)
    bounds, a = [], 0
    for p in range(parts):
        b = a + q + (1 if p < r else 0)
        bounds.append((a, b))
        a = b
    return bounds


def _residuals(v: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """(residuals, local levels) of the points ``lo .. hi - 1`` (``lo >= 2``, ``hi <=
    v.size - 2``): the level is :func:`neighbour_median`, the residual ``v - level``
    (relative to the level: ``residual / level``)."""
    _, level = neighbour_median(v[lo - 2 : hi + 2])
    return v[lo:hi] - level, level


def _growth(first_res: np.ndarray, last_res: np.ndarray) -> tuple[float, float, float]:
    """(first-third amplitude, last-third amplitude, growth); amplitude = median absolute
    residual."""
    first = float(median(np.abs(first_res)))
    last = float(median(np.abs(last_res)))
    if first > 0:
        growth = last / first
    else:
        growth = math.inf if last > 0 else 0.0
    return first, last, growth


def _window_trend(res: np.ndarray, windows: list[tuple[int, int]]) -> tuple[np.ndarray, float]:
    """(per-window amplitudes, their Mann–Kendall trend z)."""
    a = np.abs(res)
    amps = np.array([median(a[w0:w1]) for w0, w1 in windows])
    return amps, mann_kendall_z(amps)


@rule(
    "TP-OSCILLATION",
    Level.WARN,
    "signature",
    "the loss swings up and down with a growing amplitude after warm-up",
    needs=[Need("loss", "osc_min_points", positive=True, all_finite=True)],
    thresholds=["osc_min_points", "osc_warmup_share", "osc_growth", "osc_trend_z", "osc_min_alternation"],
    detects=(
        "After the first {osc_warmup_share:.0%} of the run (warm-up), each loss is compared with its local level, the median of its "
        "four neighbours (two logged points on each side, the point itself left out); the residual's size is its "
        "amplitude. The rule fires when the median amplitude of the last third of the judged part is at least {osc_growth:g}x "
        "that of the first third both in absolute terms and relative to the level, the amplitudes of consecutive "
        "windows (at most 12, at least 4 points each) rise with a Mann–Kendall z of at least {osc_trend_z} on both scales, "
        "and in the last third the residual changes sign between consecutive points at least {osc_min_alternation:.0%} of the time "
        "(independent noise: about 62%)."
    ),
    why=(
        "A step size past the edge of stability makes the optimiser overshoot the valley it is in: each update "
        "lands on the other side, further out than the last, so the loss alternates up and down with a growing "
        "swing. It usually ends in a divergence or NaN; caught while it grows, it is cheap to fix."
    ),
    not_mean=(
        "A loss that swings with a constant or shrinking amplitude (GANs, RL, a run settling down) is not this, "
        "nor is noise that only looks larger because the loss has become small next to a fixed noise floor (the "
        "amplitude must grow in absolute terms too), nor noise that grows with a rising level (it must grow "
        "relative to the level too), nor slow waves of several logged points (the residuals must alternate)."
    ),
    causes=(
        "A learning rate too high for the current curvature (often once warm-up ends or a schedule restarts), no "
        "gradient clipping, a momentum or Adam beta2 too high for the batch size, fp16 loss-scale cycling."
    ),
    try_=(
        "Lower the peak learning rate (a factor of 2 to 3), lengthen the warm-up or add gradient clipping (max_grad_norm "
        "1.0), and resume from a checkpoint taken before the swing grew."
    ),
    objectives=("supervised",),
)
def check_oscillation(ctx):
    s = ctx.finite("loss")
    v = s.values
    n = v.size
    th = ctx.th
    # The judged points are start .. n - 3 (each needs two neighbours on each side); point
    # p of the judged part is the series' point start + p.
    start = max(2, math.ceil(th.osc_warmup_share * n))
    m = max(0, n - 2 - start) if n >= 5 else 0
    k = min(OSC_MAX_WINDOWS, m // OSC_WINDOW_POINTS)
    if k < 6:
        return
    thirds = _split_bounds(m, 3)
    windows = _split_bounds(m, k)
    (t0, t1), (u0, u1) = thirds[0], thirds[-1]
    # All three conditions must hold; they are tested cheapest first (each on exactly the
    # residuals it reads), so a run that fails one is not charged for the others.
    last_abs, last_level = _residuals(v, start + u0, start + u1)
    alternation = sign_change_share(last_abs)
    if alternation < th.osc_min_alternation:
        return
    first_abs, first_level = _residuals(v, start + t0, start + t1)
    first_rel, last_rel = first_abs / first_level, last_abs / last_level
    a1, a3, g_abs = _growth(first_abs, last_abs)
    r1, r3, g_rel = _growth(first_rel, last_rel)
    growth = min(g_abs, g_rel)
    if growth < th.osc_growth:
        return
    mid_abs, mid_level = _residuals(v, start + t1, start + u0)
    mid_rel = mid_abs / mid_level
    amps_abs, z_abs = _window_trend(np.concatenate([first_abs, mid_abs, last_abs]), windows)
    amps_rel, z_rel = _window_trend(np.concatenate([first_rel, mid_rel, last_rel]), windows)
    trend = min(z_abs, z_rel)
    if trend < th.osc_trend_z:
        return
    # Onset: the first window after the first third whose amplitude reached the growth
    # factor on both scales.
    onset = u0
    for (w0, _), aa, ar in zip(windows, amps_abs, amps_rel):
        if w0 > t1 - 1 and aa >= th.osc_growth * a1 and ar >= th.osc_growth * r1:
            onset = w0
            break
    i = start + onset
    f0, f1 = start + t0, start + t1 - 1
    l0, l1 = start + u0, start + u1 - 1
    yield ctx.finding(
        f"loss oscillates with a growing amplitude from step {step(s.steps[i])}",
        f"after warm-up (from step {step(s.steps[start])}) the loss swings around its local level (median of its 4 "
        f"neighbouring points) by a median {num(a1)} ({pct(r1)} of the level) over steps "
        f"{step(s.steps[f0])}–{step(s.steps[f1])} and by {num(a3)} ({pct(r3)}) over steps "
        f"{step(s.steps[l0])}–{step(s.steps[l1])}: {times(g_abs)} in absolute terms and {times(g_rel)} relative to "
        f"the level (threshold {num(th.osc_growth)}x); the amplitudes of {k} consecutive windows rise steadily "
        f"(Mann–Kendall z {z_abs:.2f} absolute, {z_rel:.2f} relative; threshold {num(th.osc_trend_z)}), and in "
        f"the last third the loss crosses its level at {pct(alternation)} of consecutive points (threshold "
        f"{pct(th.osc_min_alternation)}); the swing first reached {num(th.osc_growth)}x at step "
        f"{step(s.steps[i])}.",
        {
            "onset_step": s.steps[i],
            "warmup_end_step": s.steps[start],
            "first_third_steps": [s.steps[f0], s.steps[f1]],
            "last_third_steps": [s.steps[l0], s.steps[l1]],
            "amplitude_first": a1,
            "amplitude_last": a3,
            "rel_amplitude_first": r1,
            "rel_amplitude_last": r3,
            "growth_abs": g_abs,
            "growth_rel": g_rel,
            "trend_z_abs": z_abs,
            "trend_z_rel": z_rel,
            "windows": k,
            "alternation": alternation,
            "growth_threshold": th.osc_growth,
            "trend_threshold": th.osc_trend_z,
            "alternation_threshold": th.osc_min_alternation,
        },
        step=s.steps[i],
        line=s.lines[i],
    )


@rule(
    "TP-VANISHING-GRAD",
    Level.WARN,
    "signature",
    "the gradient norm collapsed while the loss did not improve",
    needs=[Need("grad_norm", "vanish_min_points"), Need("loss", "dead_min_points", positive=True, all_finite=True)],
    thresholds=[
        "vanish_min_points",
        "vanish_ratio",
        "vanish_stretch_share",
        "dead_window",
        "dead_min_improvement",
        "dead_min_points",
    ],
    detects=(
        "The median gradient norm of the last 10% of the logged norms (at least 3) is below {vanish_ratio:.0%} of the median of "
        "the first 10% (the first logged norm ignored), while the loss improved by less than {dead_min_improvement:.0%} over the run "
        "(median of the first {dead_window} losses against the last {dead_window}, as TP-DEAD-RUN). Also a run that learned first: "
        "the norm fell below {vanish_ratio:.0%} of {vanish_ratio:.0%} of its early level (four orders of magnitude at the "
        "default: a norm inflated in its first steps falls two in a healthy run) and stayed there over at least "
        "{vanish_stretch_share:.0%} of the loss points (and {dead_min_points}), over which the loss improved by less than "
        "{dead_min_improvement:.0%} (first against last tenth), still rose "
        "between logs at a fifth of them or more (a minibatch loss, not a converged full-batch fit) and held a level above "
        "sqrt(late / early norm) of its start (a loss fitted towards 0 takes its gradient down with it). A run whose every "
        "norm is exactly 0 is TP-ZERO-GRAD's."
    ),
    why=(
        "When the gradient that reaches the weights shrinks a hundredfold and the loss stays where it was, the "
        "optimiser has stopped moving the model: the rest of the run is spent without learning."
    ),
    not_mean=(
        "Small norms alone are not a problem: a run converging to a minimum has shrinking gradients too, which "
        "is why the rule needs the loss not to have improved. A full-batch fit whose loss converged (it never "
        "rises between logs) and a loss fitted towards zero (its norm falls with it) are not flagged; exactly-zero "
        "norms throughout are TP-ZERO-GRAD."
    ),
    causes=(
        "Dead ReLUs or saturated sigmoid/tanh units after a bad update, parameters frozen or detached mid-run, a "
        "learning-rate schedule that drove the weights into a flat region, a loss scale that underflows the "
        "gradients in fp16, a deep network without residual connections or normalisation."
    ),
    try_=(
        "Check the per-layer gradient norms for the layer where they die, look for frozen or detached parameters, "
        "use bf16 or a dynamic loss scaler, and try a smaller learning rate, normalisation layers or a "
        "non-saturating activation."
    ),
    objectives=("supervised",),
)
def check_vanishing_grad(ctx):
    th = ctx.th
    g = ctx.finite("grad_norm")
    if np.all(g.values == 0):
        return
    vals, steps, lines = g.values[1:], g.steps[1:], g.lines[1:]
    if vals.size < 6:
        return
    w = end_window(vals.size)
    early = float(median(vals[:w]))
    late = float(median(vals[-w:]))
    if early <= 0 or late >= th.vanish_ratio * early:
        return
    loss = ctx.finite("loss")
    lw = th.dead_window
    first, last, rel = improvement(loss.values, lw)
    if rel >= th.dead_min_improvement:
        yield from _vanished_after_learning(ctx, g, early, late)
        return
    below = np.flatnonzero(vals[w:] < th.vanish_ratio * early)
    i = w + int(below[0]) if below.size else vals.size - w
    ratio = late / early
    yield ctx.finding(
        f"gradient norm collapsed to {pct(ratio)} of its early level while the loss did not improve",
        f"median gradient norm {num(late)} over the last {w} logged norms (steps {step(steps[-w])}–{step(steps[-1])}) "
        f"is {pct(ratio)} of the early median {num(early)} (steps {step(steps[0])}–{step(steps[w - 1])}, the first "
        f"logged norm ignored), below {pct(th.vanish_ratio)}; it first fell below that at step {step(steps[i])}. The "
        f"loss went from {num(first)} to {num(last)} (median of {lw} points at each end): {pct(rel)} improvement, "
        f"below {pct(th.dead_min_improvement)}.",
        {
            "early_median": early,
            "late_median": late,
            "ratio": ratio,
            "window": w,
            "early_steps": [steps[0], steps[w - 1]],
            "late_steps": [steps[-w], steps[-1]],
            "first_below_step": steps[i],
            "loss_first": first,
            "loss_last": last,
            "loss_improvement": rel,
            "threshold": th.vanish_ratio,
        },
        step=steps[i],
        line=lines[i],
    )


#: The least share of a loss's moves between logs, over the stretch after its gradient
#: norm collapsed, that are rises, for that loss to be a minibatch loss: at a level a
#: minibatch loss rises about as often as it falls; a full-batch fit that converged (its
#: gradient vanishing with good reason) never rises.
VANISH_MINIBATCH_RISES = 0.2


def _vanished_after_learning(ctx, g, early: float, late: float):
    """TP-VANISHING-GRAD's reading of a run that learned first and then lost its gradient:
    the gradient norm ``g`` (finite) fell below ``vanish_ratio`` squared of its early level
    ``early`` and stayed there (``late``: its last tenth's median) over at least
    ``vanish_stretch_share`` of the logged loss points (and ``dead_min_points``), while the
    loss over that stretch improved by less than ``dead_min_improvement`` (first vs last
    tenth of it, at least ``dead_window`` points each), still moves as a minibatch loss does
    (:data:`VANISH_MINIBATCH_RISES` of its moves are rises) and held a level far from a
    fit: its median there above sqrt(late / early) of its first points' (a loss fitted
    towards 0 takes its gradient down with it, a cross-entropy's in proportion). Yields
    the finding, or nothing."""
    th = ctx.th
    vals, steps = g.values, g.steps
    # four orders of magnitude, vanish_ratio squared: a norm inflated at the start (a
    # transformer's first steps, 40-150 beside 0.3 later) falls two orders in a healthy
    # run; a gradient that is gone falls far below a minibatch's noise
    bar = th.vanish_ratio**2 * early
    if late >= bar:
        return
    high = np.flatnonzero(vals >= bar)
    if not high.size or high[-1] + 1 >= vals.size:
        return
    onset = float(steps[high[-1] + 1])
    loss = ctx.finite("loss")
    after = loss.values[loss.steps >= onset]
    if after.size < max(th.dead_min_points, th.vanish_stretch_share * len(loss)):
        return
    # the stretch's ends read over a tenth of it each (at least dead_window points): a
    # creeping loss read over 5 noisy points flips either way by chance
    w = max(th.dead_window, end_window(after.size))
    first, last, rel = improvement(after, w)
    rises = float(np.mean(np.diff(after) > 0))
    if rel >= th.dead_min_improvement or rises < VANISH_MINIBATCH_RISES:
        return
    start = float(median(loss.values[: th.dead_window]))
    level = float(median(after))
    if not (start > 0 and level >= math.sqrt(late / early) * start):
        return
    i = int(np.searchsorted(loss.steps, onset))
    ratio = late / early
    yield ctx.finding(
        f"gradient norm collapsed to {pct(ratio)} of its early level and the loss stopped improving with it",
        f"the gradient norm fell below {pct(th.vanish_ratio**2)} of its early median {num(early)} at step "
        f"{step(onset)} and stayed there (median {num(late)} over its last tenth); over the {after.size} loss points "
        f"from there ({pct(after.size / len(loss))} of the run) the loss went from {num(first)} to {num(last)} "
        f"(median of {w} points at each end): {signed_pct(-rel)}, while it still moves from batch to "
        f"batch (it rises at {pct(rises)} of its logs) at {num(level)}, "
        f"{pct(level / start)} of where it started: the gradient is gone, not the loss it should reduce.",
        {
            "early_median": early,
            "late_median": late,
            "ratio": ratio,
            "first_below_step": onset,
            "loss_first": first,
            "loss_last": last,
            "loss_improvement": rel,
            "stretch_points": int(after.size),
            "threshold": th.vanish_ratio**2,
        },
        step=onset,
        line=loss.lines[min(i, len(loss) - 1)],
    )


def _trend_change(slope: float, span: float) -> float:
    """Relative change of the loss implied by a slope of its log over ``span`` steps."""
    return math.expm1(slope * span)


@rule(
    "TP-PLATEAU",
    Level.WARN,
    "signature",
    "the loss held its starting level through the first {plateau_head_share:.0%} of the run, and only fell later",
    needs=[Need("loss", "plateau_min_points", positive=True, all_finite=True)],
    thresholds=[
        "plateau_min_points",
        "plateau_head_share",
        "plateau_t",
        "plateau_accel_t",
        "dead_window",
        "dead_min_improvement",
    ],
    detects=(
        "The loss holds its starting level through the first {plateau_head_share:.0%} of the points (at least "
        "10): the least-squares line of the log of the loss on the step there shows no significant decrease (t "
        "> -{plateau_t}, one-sided) and a fitted change of less than {dead_min_improvement:.0%} (TP-DEAD-RUN's "
        "bar for a whole run); while over the rest of the run the loss falls significantly faster than it did "
        "there (difference of the two slopes at least {plateau_accel_t:g} standard errors, z <= "
        "-{plateau_accel_t:g}). Standard errors are widened for the lag-1 autocorrelation of the head's "
        "residuals (a running-average loss is autocorrelated). A run whose loss did not improve overall "
        "(TP-DEAD-RUN's condition) is left to TP-DEAD-RUN. Where the log declares its schedule (a monitor's "
        "max_steps, HF max_steps), the rule judges only once that share of the schedule is logged."
    ),
    why=(
        "A healthy curve falls fastest at the start and slows down; one that sits at its starting level for "
        "the first {plateau_head_share:.0%} and only then starts falling has spent that compute waiting for "
        "the optimiser to get going."
    ),
    not_mean=(
        "A run that drops quickly in its first logs and then levels off is not on a plateau (it fell, and the "
        "rest does not fall faster), nor is a noisy learner whose decrease is too small to be significant "
        "early on (it falls no faster later), nor a run that never improves (that is TP-DEAD-RUN, a FAIL: a "
        "plateau that never ends is a dead run, and one message is enough). Being flat at the end of a run is "
        "convergence, not this; a plateau that starts after the first {plateau_head_share:.0%} is not judged."
    ),
    causes=(
        "A warm-up far longer than needed or a learning rate that starts too low, a poor initialisation (outputs "
        "at the uniform prediction, a symmetric or saturated start), a first learning-rate phase too high to make "
        "progress until a step schedule lowered it, frozen layers unfrozen later in the run, a curriculum or data "
        "order that starts with uninformative batches."
    ),
    try_=(
        "Shorten the warm-up or raise the starting learning rate, check the initialisation (the first loss should "
        "be near ln(number of classes) and fall at once), and check when each parameter group starts training."
    ),
    objectives=("supervised",),
)
def check_plateau(ctx):
    th = ctx.th
    s = ctx.finite("loss")
    v = s.values
    n = v.size
    _, _, rel = improvement(v, th.dead_window)
    if rel < th.dead_min_improvement:
        return
    # The claim is about the first share of the run: a log that declares its schedule and
    # covers less of it (a run still training, judged live) has not shown that share yet,
    # and its points' first share is a shorter stretch (a warm-up, say) than the claim names.
    done, _, _ = fraction_ran(ctx.run)
    if done is not None and done < th.plateau_head_share:
        return
    h = math.ceil(th.plateau_head_share * n)
    if h < 3 or n - h < 3:
        return
    x, y = s.steps, log_loss(ctx)
    b_head, se_head, _ = ols_slope(x[:h], y[:h])
    # Least squares assumes independent noise; a smoothed (running-average) loss is
    # autocorrelated, which would make a chance drift look like a trend. The
    # autocorrelation is measured in the head, where the loss is claimed flat, and widens
    # both standard errors.
    xh, yh = x[:h] - x[:h].mean(), y[:h] - y[:h].mean()
    rho, widen = ar1_inflation(yh - b_head * xh)
    se_head *= widen
    t_head = b_head / se_head if se_head > 0 else (0.0 if b_head == 0 else math.copysign(math.inf, b_head))
    head_change = _trend_change(b_head, x[h - 1] - x[0])
    # Held its level: no significant decrease, and not even the 5% TP-DEAD-RUN asks of a
    # whole run (a noisy head can fall 10% without it being significant).
    if not t_head > -th.plateau_t or head_change <= -th.dead_min_improvement:
        return
    b_rest, se_rest, _ = ols_slope(x[h:], y[h:])
    se_rest *= widen
    t_rest = b_rest / se_rest if se_rest > 0 else (0.0 if b_rest == 0 else math.copysign(math.inf, b_rest))
    se = math.hypot(se_head, se_rest)
    if not math.isfinite(se):
        return
    if se == 0:
        accel = -math.inf if b_rest < b_head else 0.0
    else:
        accel = (b_rest - b_head) / se
    if accel > -th.plateau_accel_t:
        return
    rest_change = _trend_change(b_rest, x[-1] - x[h])
    head_level = float(median(v[:h]))
    w = th.dead_window
    end_level = float(median(v[-w:]))
    yield ctx.finding(
        f"early plateau: the loss held its level for the first {pct(h / n)} of the run (to step {step(s.steps[h - 1])})",
        f"over the first {h} of {n} points (steps {step(s.steps[0])}–{step(s.steps[h - 1])}) the fitted trend of the "
        f"loss changes it by {signed_pct(head_change)} (t {t_head:.2f}, not a significant decrease: threshold "
        f"{num(-th.plateau_t)}) around a median of {num(head_level)}; over the rest (steps "
        f"{step(s.steps[h])}–{step(s.steps[-1])}) it changes it by {signed_pct(rest_change)} (t {t_rest:.2f}), "
        f"significantly faster (z {accel:.2f}, threshold {num(-th.plateau_accel_t)}); the run ends at "
        f"{num(end_level)} (median of the last {w} points), {pct(rel)} below where it started.",
        {
            "head_points": h,
            "points": n,
            "head_end_step": s.steps[h - 1],
            "head_slope": b_head,
            "head_t": t_head,
            "head_change": head_change,
            "head_median": head_level,
            "rest_slope": b_rest,
            "rest_t": t_rest,
            "rest_change": rest_change,
            "accel_z": accel,
            "head_autocorr": rho,
            "end_level": end_level,
            "improvement": rel,
            "t_threshold": th.plateau_t,
            "accel_threshold": th.plateau_accel_t,
        },
        step=s.steps[h - 1],
        line=s.lines[h - 1],
    )


def _log_or_minus_inf(x: float) -> float:
    """The log of a ratio threshold; an override of 0 means "any ratio"."""
    return math.log(x) if x > 0 else -math.inf


def _trailing_medians(y: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
    """For each index i >= 1: the median of the up-to-``window`` values before it, and
    how many values that is (index 0 has none: NaN, 0)."""
    n = y.size
    med = np.full(n, np.nan)
    count = np.minimum(np.arange(n), window)
    for i in range(1, min(window, n)):
        med[i] = median(y[:i])
    if n > window:
        med[window:] = window_medians(y[:-1], window)
    return med, count


def _spike_candidates(y: np.ndarray, window: int, first: int, bar: float) -> tuple[np.ndarray, np.ndarray]:
    """The points ``i >= first`` more than ``bar`` above the median of the up-to-``window``
    points before them (:func:`_trailing_medians`), and those medians.

    A median is never below its window's minimum, so a point that is not more than
    ``bar`` above the minimum of the points before it is not above their median either:
    the medians are computed only at the points that pass that cheap test (on a loss
    curve, a handful). The result is exactly that of the medians at every point.
    """
    n = y.size
    if not np.isfinite(y).all():
        pre_all, _ = _trailing_medians(y, window)
        cand = np.flatnonzero(y[first:] - pre_all[first:] > bar) + first
        return cand, pre_all[cand]
    # Points before a full window: the median of all the points before them.
    head = np.arange(first, min(window, n))
    head_meds = np.full(head.size, np.nan)
    for h, i in enumerate(head):
        head_meds[h] = median(y[:i])
    head_hit = y[head] - head_meds > bar
    # Points after a full window: the median of the window points before them.
    mins = window_mins(y[:-1], window)
    maybe = np.flatnonzero(y[window:] - mins > bar)
    tail_meds = window_medians_at(y[:-1], window, maybe)
    tail_hit = y[window + maybe] - tail_meds > bar
    return (
        np.concatenate([head[head_hit], window + maybe[tail_hit]]),
        np.concatenate([head_meds[head_hit], tail_meds[tail_hit]]),
    )


def _reset(ctx) -> dict | None:
    """The first return of the train loss to where the run started (TP-LOSS-RESET), or
    ``None``. Read on block medians of 5% of the run (at least ``reset_min_block``
    points) of the positive loss, in log-loss; the start is the first block's median. Two
    neighbouring blocks (their mean) that regained ``reset_regain`` of the run's fall so
    far (from the lowest mean of 3 neighbouring blocks before them), after a fall of at
    least ``reset_min_fall``, the first at most ``reset_peak_ratio`` x the start, with the
    fall and the return each beyond ``diverge_noise_z`` standard errors of two block
    medians (point noise widened by its lag-1 autocorrelation), and the run's end (its
    last 10%) below the first of them again by ``reset_relearn`` of that fall."""
    th = ctx.th
    s = ctx.finite("loss")
    v = s.values
    n = v.size
    block = smoothing_block(n)
    meds, centres = block_medians(v, block)
    if block < th.reset_min_block or meds.size < 6:
        return None
    lm = np.log(meds)
    start = float(meds[0])
    # A block median's noise: the point noise of the log-loss, widened where the points are
    # autocorrelated (a running average moves in runs that a block does not average out).
    y = log_loss(ctx)
    _, widen = ar1_inflation(y - np.interp(np.arange(n), centres, lm))
    gate = th.diverge_noise_z * math.sqrt(2) * level_se(log_loss_noise(ctx) * widen, block)
    # The level the run had reached: the lowest mean of 3 neighbouring blocks (the lowest
    # single block of many sits low by chance). The return: the mean of 2 blocks, as weights
    # that start over take as long to relearn as the run took to learn, where one block's
    # median of a noisy run jumps by chance.
    smooth = np.convolve(lm, np.ones(3) / 3, mode="valid")  # blocks i..i+2 at index i
    low = np.r_[np.full(3, np.nan), np.minimum.accumulate(smooth)[:-1]]  # reached before block i
    fall = lm[0] - low
    back = np.r_[(lm[:-1] + lm[1:]) / 2, np.nan]  # blocks i and i+1
    with np.errstate(invalid="ignore", divide="ignore"):
        regained = (back - low) / fall
        hit = (
            (fall >= max(-math.log1p(-th.reset_min_fall), gate))
            & (regained >= th.reset_regain)
            & (meds <= th.reset_peak_ratio * start)
            & (back - low > gate)
        )
    if not hit.any():
        return None
    j = int(np.flatnonzero(hit)[0])
    lo = int(np.argmin(smooth[: j - 2])) + 1  # the middle block of the lowest three
    end = float(median(v[-end_window(n) :]))
    if math.log(meds[j]) - math.log(end) < th.reset_relearn * fall[j]:
        return None  # no second fall: a rise that stays (TP-DIVERGE reads it)
    low_step, at_step = float(s.steps[int(centres[lo])]), float(s.steps[int(centres[j])])
    # A new cycle of a logged schedule, or a logged change of the objective, explains a climb.
    if lr_restart_after(ctx, low_step) is not None or objective_schedule(ctx, low_step) is not None:
        return None
    return {
        "start": start,
        "low": math.exp(float(low[j])),
        "low_step": low_step,
        "back": math.exp(float(back[j])),
        "reset_step": at_step,
        "regained": float(regained[j]),
        "end": end,
        "block": block,
        "noise_gate": gate,
        "line": int(s.lines[int(centres[j])]),
    }


@rule(
    "TP-LOSS-RESET",
    Level.WARN,
    "signature",
    "the loss went back to where the run started, then fell again: the model started over",
    needs=[Need("loss", "reset_min_points", positive=True, all_finite=True)],
    thresholds=[
        "reset_min_points",
        "reset_min_block",
        "reset_min_fall",
        "reset_regain",
        "reset_peak_ratio",
        "reset_relearn",
        "diverge_noise_z",
    ],
    least_evidence=(
        "{reset_min_points} points, and blocks of 5% of the run of at least {reset_min_block} points: block medians "
        "that fall {reset_min_fall:.0%} below the start, come back {reset_regain:.0%} of the way and fall again."
    ),
    detects=(
        "Two neighbouring block medians of the loss (blocks of 5% of the run, their mean in log-loss) that regain "
        "at least {reset_regain:.0%} of the run's fall so far (from the lowest mean of 3 neighbouring blocks "
        "before them back toward the start, the first block's median), after the run had fallen at least "
        "{reset_min_fall:.0%} below its start, the first of them at most "
        "{reset_peak_ratio:g}x the start (a blow-up far above it is TP-LOSS-SPIKE's or TP-DIVERGE's), and above "
        "the lowest block by more than {diverge_noise_z:g} standard "
        "errors of the two block medians (the noise of the log of the loss, widened by its lag-1 "
        "autocorrelation), as the fall below the start must be too; blocks of at least "
        "{reset_min_block} points; the run's end (median of its last 10%) below that block again by at "
        "least {reset_relearn:.0%} of the first fall; and no logged learning rate starting a new cycle "
        "(a warm restart) nor a logged objective schedule (a loss weight, a curriculum stage) changing after the "
        "lowest block."
    ),
    why=(
        "A model that learned does not unlearn everything by noise: a loss back at its untrained level, then "
        "falling along the same path again, is weights that started over (a resume that loaded the step count "
        "but not the checkpoint, a re-initialisation, a new run appended to the log under continuing step "
        "numbers). The steps before it were lost, and the checkpoints saved from there hold an untrained model."
    ),
    not_mean=(
        "A warm restart of a logged learning rate, a harder curriculum stage that the log names, or a spike that "
        "comes back within a few points (TP-LOSS-SPIKE) is not this; a climb that stays is TP-DIVERGE. A warning, "
        "never a FAIL: an unlogged warm-restart schedule or a change of data can give back what the run learned."
    ),
    causes=(
        "resume_from_checkpoint given the step but not the weights, a model or optimizer re-created inside the "
        "training loop, a second run appended to the same log file, an unlogged schedule that restarts; or an "
        "instability that threw the loss back up and took as long to recover as the first fall (the steps before "
        "it are lost either way)."
    ),
    try_="Check that the resume loads the model and optimizer state; give each run its own log; log the learning rate.",
    objectives=("supervised",),
)
def check_loss_reset(ctx):
    r = _reset(ctx)
    if r is None:
        return
    yield ctx.finding(
        f"the loss went back to where the run started at step {step(r['reset_step'])}, then fell again",
        f"the loss started at {num(r['start'])} (median of its first {r['block']} points) and fell to {num(r['low'])} by step "
        f"{step(r['low_step'])} (blocks of {r['block']} points), then went back to {num(r['back'])} at step "
        f"{step(r['reset_step'])}, {pct(r['regained'])} of the way back in log-loss, and fell again to {num(r['end'])} "
        "(median of the last 10%): the model started over, and what it learned before was lost.",
        {k: v for k, v in r.items() if k not in ("line",)},
        step=r["reset_step"],
        line=r["line"],
    )


@rule(
    "TP-LOSS-SPIKE",
    Level.WARN,
    "signature",
    "a loss spike: the loss jumped several times above its level",
    needs=[Need("loss", "spike_min_points", positive=True, all_finite=True)],
    thresholds=[
        "spike_min_points",
        "spike_window",
        "spike_factor",
        "spike_noise_z",
        "spike_max_points",
        "spike_settle_points",
        "spike_worse_ratio",
        "spike_worse_z",
        "spike_excursion_factor",
        "spike_excursion_share",
        "objective_weight_rise",
    ],
    detects=(
        "A burst of at most {spike_max_points} consecutive points (or, for an excursion reaching "
        "{spike_excursion_factor:g}x the level before it, at most {spike_excursion_share:.0%} of the run) more "
        "than {spike_factor:g}x the loss level "
        "before it (median of up to the {spike_window} points before, at least 5; within the first 5 points, "
        "an excursion of {spike_excursion_factor:g}x above the median of the points before it, however few) and more than "
        "{spike_noise_z:g} noise sigmas above it (noise of the log of the loss), followed by at least "
        "{spike_settle_points} more points. The loss must come back below that bar, and the best level the run "
        "reaches from there to the end of the log (the lowest median of any {spike_settle_points} consecutive "
        "points) must still be more than {spike_worse_ratio}x the level before the spike and above it by more "
        "than {spike_worse_z:g} standard errors of the two levels (the run settled worse); otherwise the "
        "spikes came back, and the finding lists their steps. Not a spike: a jump where a logged schedule of the "
        "objective moved between the start of the level it is measured against and its first point (a loss-term weight such as beta, "
        "kl_weight or aux_weight by {objective_weight_rise}x either way or from 0, a curriculum's stage, an "
        "example size or a noise level): the objective changed; a weight that moved between two non-zero values, "
        "or an example size, explains a jump of at most its ratio times {spike_factor:g} (a term scaled by b/a, a sum "
        "over examples grown by b/a), and a larger one is still a spike. Never a FAIL: a spike that recovers is "
        "instability to watch, and it does not make a later plateau a divergence (TP-DIVERGE reads levels, "
        "which a burst of at most {spike_max_points} points does not move)."
    ),
    why=(
        "A spike that the run absorbs costs a few steps; one after which the loss never gets back to where it "
        "was has damaged the weights (or the optimiser state), and every later step starts from a worse model."
    ),
    not_mean=(
        "A spike that recovers is not damage: the finding says so. A single spike at the very end of the log "
        "(there is nothing after it to judge), a jump to a new level that does not come back down (that is "
        "TP-DIVERGE) and an ordinarily noisy curve are not this."
    ),
    causes=(
        "An outlier batch (corrupt or extremely long sample) meeting a learning rate near the edge of stability, "
        "no gradient clipping, fp16 overflow that corrupted the optimiser moments, a data-loader restart that "
        "replayed or skipped data."
    ),
    try_=(
        "Resume from the checkpoint before the spike with gradient clipping (max_grad_norm 1.0) or a lower "
        "learning rate, skip or inspect the batches at the spike steps, and consider lowering Adam's beta2 or "
        "raising its epsilon."
    ),
    objectives=("supervised",),
)
def check_loss_spike(ctx):
    th = ctx.th
    s = ctx.finite("loss")
    v = s.values
    n = v.size
    y = log_loss(ctx)
    factor_bar = _log_or_minus_inf(th.spike_factor)
    worse = _log_or_minus_inf(th.spike_worse_ratio)
    win = max(1, int(th.spike_window))
    first = max(1, (win + 1) // 2)
    settle = max(1, int(th.spike_settle_points))
    if n < first + 1 + settle:
        return
    # The bar is the higher of the factor's and the noise's: the points above the factor's
    # bar are found first, and the noise is measured only when there are any.
    cand, cand_pre = _spike_candidates(y, win, first, factor_bar)
    if not cand.size and not np.any(y[1:first] - np.minimum.accumulate(y)[: max(0, first - 1)] > factor_bar):
        return
    sigma = log_loss_noise(ctx)
    bar = max(factor_bar, th.spike_noise_z * sigma)
    above = y[cand] - cand_pre > bar
    cand, cand_pre = cand[above], cand_pre[above]
    # Within the first points, before a level of `first` points exists, an excursion of an
    # order of magnitude (spike_excursion_factor) above the points before it is a spike
    # however few they are: no descent or warm-up multiplies the loss 10x and comes back.
    head_bar = max(bar, math.log(th.spike_excursion_factor))
    head = [(i, float(median(y[:i]))) for i in range(1, min(first, n))]
    head = [(i, pre) for i, pre in head if y[i] - pre > head_bar]
    if head:
        cand = np.concatenate([np.array([i for i, _ in head], dtype=cand.dtype), cand])
        cand_pre = np.concatenate([np.array([pre for _, pre in head]), cand_pre])
    # The best level after index k: the lowest median of `settle` consecutive points
    # starting at k or later (a suffix minimum, so each spike costs O(1)); computed when a
    # first spike needs it.
    post_meds = post_best = None
    se_post = level_se(sigma, settle)
    hits = []
    recovered: list[tuple[int, int, float]] = []  # (peak index, burst points, log jump)
    c = 0
    while c < cand.size:
        i = int(cand[c])
        pre, pre_points = float(cand_pre[c]), min(i, win)
        end = i + 1
        while end < n and y[end] - pre > bar:
            end += 1
        c = int(np.searchsorted(cand, end))
        # A jump where a logged schedule of the objective moved (an auxiliary head's weight
        # switched on, a curriculum's next stage), from the start of the level it is measured
        # against to its first point, is the objective changing, not a spike.
        lo = float(s.steps[max(i - pre_points - 1, 0)])
        moved = objective_moved_between(ctx, lo, float(s.steps[i])) if i > 0 else None
        if moved is not None and float(np.max(y[i:end])) - pre <= math.log(moved[1] * th.spike_factor):
            continue
        # A burst longer than spike_max_points is a new level, unless it is an excursion of
        # an order of magnitude or more that lasts at most spike_excursion_share of the run:
        # a blow-up the run came back from within a few epochs is a spike, not a level.
        excursion = float(np.max(y[i:end])) - pre >= math.log(th.spike_excursion_factor) and (
            end - i <= th.spike_excursion_share * n
        )
        if (end - i > th.spike_max_points and not excursion) or n - end < settle:
            continue
        if post_best is None:
            post_meds = window_medians(y, settle)
            post_best = np.minimum.accumulate(post_meds[::-1])[::-1]
        post = float(post_best[end])
        gap = post - pre
        gate = th.spike_worse_z * math.hypot(level_se(sigma, pre_points), se_post)
        peak = i + int(np.argmax(y[i:end]))
        if gap > worse and gap > gate and gap < bar:
            at = end + int(np.flatnonzero(post_meds[end:] == post)[0]) + settle // 2
            hits.append((i, end, peak, pre, pre_points, post, at, settle, gap, gate))
        elif gap <= worse or gap <= gate:
            recovered.append((peak, end - i, float(y[peak] - pre)))
    if not hits:
        if recovered:
            yield _recovered_spikes(ctx, s, recovered)
        return
    i, end, peak, pre, pre_points, post, post_idx, post_points, gap, gate = hits[0]
    pre_v, post_v, peak_v = math.exp(pre), math.exp(post), float(v[peak])
    ratio = post_v / pre_v
    more = f" ({len(hits)} such spikes; the first is shown)" if len(hits) > 1 else ""
    yield ctx.finding(
        f"loss spike at step {step(s.steps[peak])} left the run {times(ratio)} worse than before it",
        f"at step {step(s.steps[peak])} (line {int(s.lines[peak])}) the loss jumps to {num(peak_v)}, "
        f"{times(peak_v / pre_v, 1)} its level before (median {num(pre_v)} of the {pre_points} points to step "
        f"{step(s.steps[i - 1])}; bar {times(math.exp(bar))}), for {end - i} point(s); it comes back down, but the "
        f"best level after it is {num(post_v)} (median of {post_points} points around step "
        f"{step(s.steps[post_idx])}), {times(ratio)} the level before (threshold {num(th.spike_worse_ratio)}x; log gap "
        f"{num(gap)} against a noise gate of {num(gate)}){more}.",
        {
            "spike_step": s.steps[peak],
            "peak": peak_v,
            "pre_level": pre_v,
            "pre_points": pre_points,
            "burst_points": end - i,
            "post_level": post_v,
            "post_step": s.steps[post_idx],
            "post_points": post_points,
            "ratio": ratio,
            "spike_ratio": peak_v / pre_v,
            "log_gap": gap,
            "noise_gate": gate,
            "noise_std": sigma,
            "spikes": len(hits),
            "threshold": th.spike_worse_ratio,
        },
        step=s.steps[peak],
        line=s.lines[peak],
    )


def _recovered_spikes(ctx, s, recovered: list[tuple[int, int, float]]):
    """The finding for spikes the run came back from: their steps, the largest jump."""
    peaks = [p for p, _, _ in recovered]
    big = max(recovered, key=lambda r: r[2])
    shown = ", ".join(step(s.steps[p]) for p in peaks[:8]) + (" …" if len(peaks) > 8 else "")
    jump = math.exp(big[2])
    return ctx.finding(
        f"loss spike{'s' if len(peaks) > 1 else ''} at step{'s' if len(peaks) > 1 else ''} {shown}; the run came back",
        f"{len(peaks)} burst(s) above {num(ctx.th.spike_factor)}x the loss level before them and "
        f"{num(ctx.th.spike_noise_z)} noise sigmas, each at most {ctx.th.spike_max_points} points long or an excursion "
        f"of {num(ctx.th.spike_excursion_factor)}x or more within {pct(ctx.th.spike_excursion_share)} of the run; the "
        f"largest jumps to {num(s.values[big[0]])} "
        f"at step {step(s.steps[big[0]])} ({times(jump)} its level before, for {big[1]} point(s)). Each time the "
        "loss came back to within 10% or the noise of where it was.",
        {
            "spike_steps": [float(s.steps[p]) for p in peaks],
            "spikes": len(peaks),
            "largest_ratio": jump,
            "largest_step": float(s.steps[big[0]]),
            "recovered": True,
        },
        step=s.steps[big[0]],
        line=s.lines[big[0]],
    )
