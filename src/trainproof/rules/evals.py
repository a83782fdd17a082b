"""Rules on the evaluation loss."""

from __future__ import annotations

import math
import re

import numpy as np

from ..aliases.table import EVAL_SET_LOSS
from ..findings import Level
from ._checkpoint import best_checkpoint
from ._fmt import num, step, times
from ._shared import lr_restart_after, nan_eval_onset, objective_schedule
from ._stats import (
    ar1_level_widening,
    block_medians,
    curvature_noise_sigma,
    expected_min_shift,
    level_se,
    mann_kendall_z,
    median,
    noise_sigma,
    ols_slope,
    row_medians,
    t_quantile,
    trend_z,
    window_medians,
)
from .loss import (
    accuracy_as_share,
    accuracy_series,
    eval_set_size,
    held_out_accuracy_gain,
    is_accuracy_key,
    measured_held_out,
)
from .registry import Need, rule


def _durable_rise(v: np.ndarray, j: int, climb: bool, th) -> tuple[float, bool]:
    """``(trend z, durable)`` for an eval loss ``v`` whose minimum is at index ``j``.

    A strict climb after the minimum counts when the last evaluation is above
    ``overfit_slow_ratio`` x the minimum. Otherwise the rise is measured between levels,
    not points, so that one low evaluation is not the reference: the best level is the
    lowest median of ``max(3, 5%)`` consecutive evaluations, the end level the median of
    the last ``max(3, 10%)``, and the evaluations from the best level on must rise with a
    Mann-Kendall z of at least ``dead_trend_z`` (over at most 40 block medians).
    """
    if climb:
        return math.inf, bool(v[-1] > th.overfit_slow_ratio * v[j])
    n = v.size
    w = max(3, n // 20)
    if n < w + 3:
        return 0.0, False
    levels = window_medians(v, w)
    b = int(np.argmin(levels))
    best_level = float(levels[b])
    end_level = float(median(v[-max(3, n // 10) :]))
    after = v[b:]
    z = trend_z(after, 40)
    return z, bool(best_level > 0 and end_level > th.overfit_slow_ratio * best_level and z >= th.dead_trend_z)


#: The thresholds :func:`_eval_rise` reads, declared by both rules that share it (TP-OVERFIT
#: and TP-EVAL-DEGRADE).
EVAL_RISE_THRESHOLDS = [
    "overfit_noise_z",
    "overfit_min_shift_margin",
    "overfit_min_evals",
    "overfit_ratio",
    "overfit_tail_evals",
    "overfit_evals_after_min",
    "overfit_slow_ratio",
    "dead_trend_z",
]


#: The loss of one of several held-out sets of an HF evaluation, as the alias table reads it.
_EVAL_SET_LOSS = re.compile(EVAL_SET_LOSS)


def _other_eval_sets(ctx):
    """The finite series of the held-out sets other than the one read as ``eval_loss``
    (:data:`_EVAL_SET_LOSS` keys), each with at least ``overfit_min_evals`` evaluations,
    all finite, in key order."""
    mapped = ctx.run.series["eval_loss"].key
    for name, series in sorted(ctx.run.series.items()):
        key = series.key or name
        if key == mapped or not _EVAL_SET_LOSS.fullmatch(key):
            continue
        if np.all(np.isfinite(series.values)) and series.values.size >= ctx.th.overfit_min_evals:
            yield series


@rule(
    "TP-OVERFIT",
    Level.WARN,
    "eval",
    "eval loss rises after its minimum while the train loss keeps falling",
    needs=[Need("eval_loss", "overfit_min_evals", all_finite=True), Need("loss", 2)],
    thresholds=EVAL_RISE_THRESHOLDS,
    detects=(
        "At least {overfit_min_evals} evaluations and at least {overfit_evals_after_min} after the eval "
        "minimum; the eval loss ends above {overfit_ratio}x the minimum — by the median of the last "
        "{overfit_tail_evals} evaluations, or by the last one when every evaluation after the minimum rose (a "
        "steady climb) — or, when the rise is durable, above {overfit_slow_ratio}x: every evaluation after the "
        "minimum higher than the one before, or, between levels, the median of the last 10% of evaluations (at "
        "least 3) above {overfit_slow_ratio}x the lowest median of 5% of them (at least 3) with a Mann-Kendall "
        "z of at least {dead_trend_z} over the evaluations from that level on; in every case a rise over the "
        "minimum of more than {overfit_noise_z:g} of the eval loss's own noise units (log scale, second "
        "differences), and, over many evaluations, more than the lowest of them sits below their level by chance "
        "(the expected shift of the lowest of n, 2.2 units at 40 and 3.2 at 1,000) plus {overfit_min_shift_margin:g} "
        "— while the train loss at the end is below the train loss around the "
        "best evaluation. Where it does not hold on the eval loss, the "
        "same on each other held-out set of an HF evaluation of several (``eval_<name>_loss``), with at least "
        "{overfit_min_evals} finite evaluations: a fine-tune that forgets its first task shows it on that "
        "task's set."
    ),
    why="Past the eval minimum the model memorises the training set; the checkpoint at the best step generalises better than the last one.",
    not_mean="A single bad evaluation is not overfitting (the median of the last {overfit_tail_evals} ignores it, and a spike that comes back down is no steady climb); an eval loss that rises together with the train loss is a divergence, not this.",
    causes="Too many epochs for the data size, too little regularisation (dropout, weight decay), a learning rate that stays high too long, a train set much smaller than the model's capacity.",
    try_="Keep the checkpoint at the best eval step (load_best_model_at_end), add early stopping, more data or regularisation, or fewer epochs.",
)
def check_overfit(ctx):
    """TP-OVERFIT on the eval loss, or else on another held-out set of the log (a model
    fine-tuned on a new task that forgets the old one: its second set's loss climbs)."""
    f = _overfit(ctx, ctx.finite("eval_loss"))
    if f is None:
        for series in _other_eval_sets(ctx):
            f = _overfit(ctx, series, other=True)
            if f is not None:
                break
    if f is not None:
        yield f


def _eval_rise(ev, th, level_min: bool):
    """The rise of the held-out loss ``ev`` (finite, ``(n,)``) from its minimum, as
    TP-OVERFIT reads it: ``(j, best, end, tail, climb, trend_z)``, or ``None`` when it did
    not rise past ``overfit_ratio`` (or ``overfit_slow_ratio`` durably) with at least
    ``overfit_evals_after_min`` evaluations after the minimum.

    ``j`` indexes the minimum, ``best`` is its value, ``end`` the level it is judged at (the
    last evaluation of a steady climb, else ``tail``, the median of the last
    ``overfit_tail_evals``). ``level_min``: the minimum is the lowest median of 3
    consecutive evaluations, a level the series held (one lucky evaluation is no minimum),
    with ``j`` its middle evaluation."""
    j = int(np.argmin(ev.values))
    best = float(ev.values[j])
    if level_min and ev.values.size >= 3:
        level = row_medians(np.lib.stride_tricks.sliding_window_view(ev.values, 3))
        j = int(np.argmin(level)) + 1
        best = float(level[j - 1])
    after = len(ev) - 1 - j
    if after < th.overfit_evals_after_min or best <= 0:
        return None
    tail = float(median(ev.values[-th.overfit_tail_evals :]))
    # A steady climb (each evaluation after the minimum higher than the one before) is
    # judged by where it ended; a noisy tail by its median, so one bad evaluation is not
    # enough.
    climb = bool(np.all(np.diff(ev.values[j:]) > 0))
    end = float(ev.values[-1]) if climb else tail
    # A slow durable rise: below the 1.2x bar, but every evaluation after the minimum
    # higher than the one before, or a significant upward trend from the minimum on
    # (Mann-Kendall), ending at least 5% above the minimum.
    z, slow = _durable_rise(ev.values, j, climb, th)
    if end <= th.overfit_ratio * best and not slow:
        return None
    units = th.overfit_noise_z
    if not level_min:
        # the lowest of n evaluations sits lower the more there are (2.2 noise units below
        # their level at 40, 3.2 at 1,000): the gate grows with it
        units = max(units, expected_min_shift(len(ev)) + th.overfit_min_shift_margin)
    if not _rise_beyond_noise(ev.values, best, end, units):
        return None
    return j, best, end, tail, climb, z


def _rise_beyond_noise(v: np.ndarray, best: float, end: float, z: float) -> bool:
    """Whether a held-out loss ``v`` (finite, positive, ``(n,)``) rose from its minimum
    ``best`` (its lowest evaluation, or the level of the lowest 3 in a row) to ``end`` by
    more than ``z`` times its own point noise, on the log scale. The noise is read from
    second differences of log ``v`` (:func:`~trainproof.rules._stats.curvature_noise_sigma`),
    which a steady rise or fall does not inflate. The lowest of n noisy evaluations sits 1.5-2.3 noise units below
    their level (n = 10 to 40), so a rise of the median of the last 3 over it short of 2
    units is what a flat eval loss makes by itself (the caller sizes ``z`` for longer series)."""
    if not (end > 0 and best > 0) or v.size < 3 or np.any(v <= 0):
        return True
    sigma = curvature_noise_sigma(np.log(v))
    return math.log(end / best) > z * sigma


def _train_levels(tr, best_step: float, wide: bool = False) -> tuple[float, float, np.ndarray, np.ndarray, int]:
    """``(train_at_best, train_end, before, after, w)``: the train loss ``tr`` around the
    evaluation at ``best_step`` (median of up to its last ``w`` points logged up to it, else
    of its first ``w``) and at the end (median of its last ``w``), ``w`` = a quarter of the
    points, 1 to 5; ``before`` / ``after`` the train losses up to / after that step.

    ``wide`` (whether the train loss still falls, for TP-OVERFIT past ``overfit_ratio``
    and TP-EVAL-ACCURACY-DROP): ``w`` is a twentieth of the points, at least 5 (at most a
    quarter), so a loss logged at every step is read over as much of the run as a thin
    log's 5 points span: medians of 5 per-step points at 5% noise move 3%, and a train loss
    still falling 2% under an eval loss up 47% read as not falling on 20,000 points, and as
    falling on every 5th of them."""
    before = tr.values[tr.steps <= best_step]
    after = tr.values[tr.steps > best_step]
    n = tr.values.size
    w = max(1, min(n // 4, max(5, n // 20))) if wide else max(1, min(5, n // 4))
    train_at_best = float(median(before[-w:])) if before.size else float(median(tr.values[:w]))
    return train_at_best, float(median(tr.values[-w:])), before, after, w


def _overfit(ctx, ev, other: bool = False):
    """TP-OVERFIT's finding on the held-out loss ``ev`` (finite, ``(n,)``), or ``None``;
    ``other``: ``ev`` is a held-out set beside the one read as the eval loss."""
    th = ctx.th
    tr = ctx.finite("loss")
    # A set read beside the eval loss warns only from a level it held.
    rise = _eval_rise(ev, th, level_min=other)
    if rise is None:
        return None
    j, best, end, tail, climb, trend_z = rise
    after = len(ev) - 1 - j
    best_step = ev.steps[j]
    # A rise past overfit_ratio reads the train loss over a twentieth of the run; a slow
    # durable rise, a few percent over a few evaluations that the eval's own noise can
    # make, keeps the narrow reading (5 points), which a train loss at its floor does not
    # clear as often.
    train_at_best, train_end, _, _, _ = _train_levels(tr, best_step, wide=end > th.overfit_ratio * best)
    if train_end >= train_at_best:
        return None
    # The best checkpoint is chosen on the eval loss, not on another held-out set.
    extra, ckpt_data = ("", {}) if other else best_checkpoint(ctx.run)
    what = f"the held-out loss {ev.key}" if other else "eval loss"
    return ctx.finding(
        (
            f"overfitting on {ev.key}: it is {times(end / best)} its minimum at step {step(best_step)}"
            if other
            else f"overfitting: eval loss is {times(end / best)} its minimum at step {step(best_step)}"
        ),
        f"{what} reached its minimum {num(best)} at step {step(best_step)} (line {int(ev.lines[j])}); "
        + (
            f"it then rose at each of the {after} evaluations after it, to {num(end)}, "
            if climb
            else f"the median of the last {th.overfit_tail_evals} evaluations is {num(tail)} ({after} "
            "evaluations after the minimum), "
        )
        + f"while the train loss fell from {num(train_at_best)} to {num(train_end)}.{extra}",
        {
            "best_step": best_step,
            "eval_min": best,
            "eval_tail_median": tail,
            "eval_end": end,
            "ratio": end / best,
            "trend_z": trend_z,
            "evals_after_min": after,
            "steady_climb": climb,
            "train_at_best": train_at_best,
            "train_end": train_end,
            **({"series": ev.key} if other else ckpt_data),
        },
        step=best_step,
        line=ev.lines[j],
    )


def _returned_to_level_before(v: np.ndarray, j: int, z: float) -> bool:
    """Whether the evaluations after the minimum ``v[j]`` are back at a level the series
    held just before it: a dip and a return, not a divergence.

    The level before is the two evaluations before the minimum (both after the first: a
    run that unlearns everything returns to its starting level), held when they are tied
    with each other; the series is back at it when the median of the evaluations after the
    minimum is no higher than it beyond ``z`` standard errors. The noise is read from the
    second differences of the log of the later evaluations
    (:func:`~trainproof.rules._stats.curvature_noise_sigma`), which a steady climb does not
    inflate: the rising side of a V-shaped divergence has none, so its minimum stays a
    level the run left.
    """
    later = np.log(v[j + 1 :])
    if later.size < 3:
        return False
    sigma = curvature_noise_sigma(later)
    a, b = math.log(float(v[j - 2])), math.log(float(v[j - 1]))
    if abs(a - b) > z * math.sqrt(2) * sigma:
        return False
    se = math.hypot(sigma / math.sqrt(2), level_se(sigma, later.size))
    return float(median(later)) - (a + b) / 2 <= z * se


def _stepped_and_learning(steps: np.ndarray, v: np.ndarray, j: int, z: float, max_step: float) -> bool:
    """Whether the eval loss ``v`` (positive, at ``steps``) rose from its minimum ``v[j]``
    in one step and fell steadily from there: a level shift of what the loss measures (a
    distillation's weights moved from the teacher's term to the labels', a harder data
    mixture, a loss term switched on, none of them logged) while the model goes on
    learning, or a blow-up the run is recovering from. A healthy run makes this shape
    whenever its objective changes, and its pace after the step says nothing either way
    (an up-weighted term has room to fall fast, as a damaged model regains what it knew),
    so the log cannot tell the two apart: not a divergence's FAIL. A divergence climbs
    after its first step or holds.

    On the log of the loss: the first evaluation after the minimum at least the median of
    those after it (no climb after the step) and at most ``max_step`` times the minimum
    (``objective_weight_rise``, the move of a loss-term weight this project reads as a change
    of the objective: a jump of 3-7x back to where the run started is a blow-up), at least 4 evaluations after the minimum and
    3 up to it, the least-squares slope on the step falling before the minimum (the run was
    learning) and after it beyond its standard errors at the t quantile of ``z`` sigma (on
    ``n - 2`` degrees of freedom: 4 flat evaluations draw a steep slope by chance). TP-LOSS-CLIMB and
    TP-EVAL-DEGRADE keep their warnings."""
    later = np.log(v[j + 1 :])
    n = later.size
    if n < 4 or later[0] < float(median(later)) or later[0] - math.log(float(v[j])) > math.log(max_step):
        return False
    lo = max(0, j + 1 - max(n, 3))
    if j + 1 - lo < 3:
        return False
    pre_slope = ols_slope(steps[lo : j + 1], np.log(v[lo : j + 1]))[0]
    post_slope, _, post_t = ols_slope(steps[j + 1 :], later)
    return pre_slope < 0 and post_slope < 0 and post_t <= -t_quantile(z, n - 2)


#: Train losses the noise gate of TP-EVAL-DIVERGE needs: fewer first differences are
#: dominated by the curve's own fall and rise, not its noise (the rule also judges runs whose
#: train loss is logged a handful of times, where it keeps the plain ratio).
TRAIN_NOISE_MIN_POINTS = 20


def _train_rise_shown(v: np.ndarray, before: np.ndarray, after: np.ndarray, w: int, z: float) -> bool:
    """Whether the train loss after the eval minimum (``after``) stands above the train
    loss up to it (``before``) by ``z`` standard errors of the loss's point noise
    (:func:`noise_sigma` of the log of ``v``, the finite train losses), each level the
    median of its last ``k`` points, ``k`` = the larger of ``w`` and a quarter of the run
    (at most what each side has): a level read from more points is surer (a rise of 1.4x
    at 25% noise over 100 points a side stands 8 standard errors out of 50-point medians,
    under 3 of 5-point ones). Always, with
    fewer than :data:`TRAIN_NOISE_MIN_POINTS` positive losses."""
    pos = v[v > 0]
    if pos.size < TRAIN_NOISE_MIN_POINTS or not before.size or not after.size:
        return True
    k = max(1, min(before.size, after.size, max(w, v.size // 4)))
    a, b = float(median(after[-k:])), float(median(before[-k:]))
    if not (a > 0 and b > 0):
        return True
    se = math.sqrt(2) * level_se(noise_sigma(np.log(pos)), k)
    return math.log(a / b) > z * se


@rule(
    "TP-EVAL-DIVERGE",
    Level.FAIL,
    "diverge",
    "eval loss never came back to its minimum while the train loss got worse too",
    needs=[Need("eval_loss", "eval_diverge_min_evals", positive=True, all_finite=True), Need("loss", 2)],
    thresholds=[
        "eval_diverge_min_evals",
        "eval_diverge_evals_after",
        "eval_diverge_rise",
        "eval_diverge_noise_factor",
        "diverge_noise_z",
        "diverge_lr_rise",
        "objective_weight_rise",
        "objective_eval_after",
        "objective_accuracy_rise",
    ],
    # Not verdict-bearing: when it does not fire, a run with too few train points for the
    # trend rules stays not judged rather than PASSed on its eval loss alone.
    after_warmup=True,
    implies=("TP-DEAD-RUN", "TP-FLAT", "TP-LOSS-STALLED"),
    # A divergence of the train loss explains an eval loss that follows it.
    implied_by=("TP-DIVERGE",),
    least_evidence=(
        "{eval_diverge_min_evals} evaluations, {eval_diverge_evals_after} of them after the eval minimum and every one at least {eval_diverge_rise}x it; a train "
        "loss that ends, or sits over the time after the minimum, {eval_diverge_rise}x above its level at that minimum."
    ),
    detects=(
        "At least {eval_diverge_min_evals} evaluations; every one of the at least {eval_diverge_evals_after} evaluations after the eval minimum is at least "
        "{eval_diverge_rise}x the minimum; the lowest of them is above it by at least {eval_diverge_noise_factor:g}x their median evaluation-to-evaluation "
        "change (log scale) and their median by at least 4x, with that change at most half of ln {eval_diverge_rise}, so the "
        "minimum is a level the run left, not the low tail of noise; the evaluations after it are not back at a level the series held just before it (two evaluations "
        "after the first, tied with each other within {diverge_noise_z:g} standard errors, and the median of the later ones no higher than "
        "their mean beyond {diverge_noise_z:g} standard errors, the noise read from second differences, which a steady climb does not "
        "inflate), so one low evaluation the series returns from is not the minimum of a divergence; and the train loss at the end "
        "(median of up to its last 5 points), or its median over every point after the eval minimum, is at least "
        "{eval_diverge_rise}x the train loss at the eval minimum (the points logged up to it, else its first): a run "
        "that blew up and recovered part of the way by its end spent the time after the minimum worse; that rise "
        "beyond {diverge_noise_z:g} standard errors of the train loss's own noise (on its log; from 20 train points "
        "on), so that a heavy-tailed loss at its floor moving by chance is not read as worse. Judged on the eval loss when the train loss is logged too rarely "
        "for the train-loss trend rules. Not when the learning rate, after the minimum, climbed {diverge_lr_rise:g}x "
        "back to a rate the run held before it (a warm restart or a cyclic schedule), nor when a logged schedule "
        "of the objective moved after it (a loss-term weight or a never-falling noise level that climbed "
        "{objective_weight_rise}x, a stage that changed, the loss a weighted sum of its logged terms whose weights "
        "moved: what both losses measure changed), nor when a held-out accuracy "
        "rose over the climb by {objective_accuracy_rise} or more and beyond {diverge_noise_z:g} standard errors, with "
        "{objective_eval_after} or more evaluations after the minimum (the held-out measures disagree: overconfident "
        "predictions, not a model getting worse at its task; TP-EVAL-DEGRADE's warning remains), nor when the eval loss "
        "rose in one step, by at most {objective_weight_rise}x, and fell from there (the first evaluation after the minimum at least the median of the later "
        "ones, their least-squares slope on the log falling beyond the t quantile of {diverge_noise_z:g} standard errors, and falling "
        "before the minimum too): an unlogged change of what the loss measures makes that shape as a blow-up the run "
        "recovers from does, so TP-LOSS-CLIMB's and TP-EVAL-DEGRADE's warnings say it."
    ),
    why=(
        "Both the held-out loss and the train loss are worse than they were: training made the model worse "
        "and kept it there, which is a divergence seen on both curves. It is not overfitting, where the train "
        "loss keeps falling while the eval loss rises."
    ),
    not_mean=(
        "An eval loss that rises while the train loss falls is TP-OVERFIT's (a WARN); a single bad "
        "evaluation, noise around a flat level measured from its lowest point, or both losses up in a new "
        "cycle of a restarting schedule, is not this."
    ),
    causes=(
        "A peak learning rate far too high for the model (fine-tuning a pretrained model at a from-scratch "
        "learning rate), no warm-up, a schedule that restarts at a high learning rate, fp16 overflow."
    ),
    try_=(
        "Resume from the checkpoint at the eval minimum with a peak learning rate 10x lower, a warm-up, and "
        "gradient clipping (max_grad_norm 1.0)."
    ),
)
def check_eval_diverge(ctx):
    th = ctx.th
    ev = ctx.finite("eval_loss")
    tr = ctx.finite("loss")
    v = ev.values
    j = int(np.argmin(v))
    later = v[j + 1 :]
    if later.size < th.eval_diverge_evals_after or later.min() < th.eval_diverge_rise * v[j]:
        return
    # The minimum must stand apart from every later evaluation, not be the low tail of
    # noise: the gap to the lowest later one, on a log scale, at least
    # eval_diverge_noise_factor times the median change between later evaluations.
    rise = math.log(float(median(later)) / float(v[j]))
    gap = math.log(float(later.min()) / float(v[j]))
    noise = float(median(np.abs(np.diff(np.log(later))))) if later.size > 1 else 0.0
    # ... and the series must be quieter than the bar it is judged by: an eval loss that
    # moves by more than half the 1.2x bar between evaluations cannot show a rise of 1.2x.
    if (
        gap < th.eval_diverge_noise_factor * noise
        or rise < 2 * th.eval_diverge_noise_factor * noise
        or noise > 0.5 * math.log(th.eval_diverge_rise)
    ):
        return
    if j >= 3 and _returned_to_level_before(v, j, th.diverge_noise_z):
        return
    if _stepped_and_learning(ev.steps, v, j, th.diverge_noise_z, th.objective_weight_rise):
        return
    best_step = ev.steps[j]
    # A learning rate that restarted after the minimum, back to a rate the run held before
    # (a warm restart, a cyclic schedule), raises both losses while it is high again: the
    # schedule's cycle, not a divergence.
    if lr_restart_after(ctx, best_step) is not None:
        return
    # A logged schedule of the objective that moved after the minimum (a KL weight
    # annealed up, a curriculum's next stage, a noise level raised) raises both losses
    # while the model improves: what they measure changed, not the model.
    if objective_schedule(ctx, best_step) is not None:
        return
    # A held-out accuracy that rose over the climb: the held-out measures disagree, and a
    # diverging model does not get better at its task (TP-EVAL-DEGRADE's warning remains).
    if held_out_accuracy_gain(ctx, best_step, best_step, th.objective_accuracy_rise) is not None:
        return
    train_at_best, train_end, before, after, w = _train_levels(tr, best_step)
    # The train loss after the minimum: its end, or its median over everything logged after
    # the minimum, whichever is higher (a run that blew up and recovered part of the way by
    # its end spent the time after the minimum worse than it was there).
    train_after = max(train_end, float(median(after))) if after.size else train_end
    if train_at_best <= 0 or train_after < th.eval_diverge_rise * train_at_best:
        return
    # ... and beyond the train loss's own noise: levels of a few points of a heavy-tailed
    # loss at its floor (a converged classifier's batches at 1e-5 to 3e-3) move 4x by
    # chance. The noise on the log of the loss, as TP-DIVERGE reads it.
    if not _train_rise_shown(tr.values, before, after, w, th.diverge_noise_z):
        return
    extra, ckpt_data = best_checkpoint(ctx.run)
    yield ctx.finding(
        f"eval loss diverged: every evaluation after step {step(best_step)} is at least "
        f"{times(float(later.min()) / float(v[j]))} its minimum, and the train loss rose "
        f"{times(train_after / train_at_best)}",
        f"eval loss minimum {num(v[j])} at step {step(best_step)} (line {int(ev.lines[j])}); the {later.size} "
        f"evaluations after it lie between {num(later.min())} and {num(later.max())} (median {num(median(later))}, "
        f"last {num(v[-1])}; log gap {num(gap)} from the minimum to the lowest of them against a median change "
        f"of {num(noise)} between evaluations); "
        f"train loss {num(train_at_best)} at the minimum -> {num(train_end)} at the end (medians of {w} point(s)), "
        f"{num(float(median(after)) if after.size else train_end)} over the {after.size} point(s) after the minimum "
        f"({len(tr)} train points in all).{extra}",
        {
            "best_step": best_step,
            "eval_min": float(v[j]),
            "evals_after_min": int(later.size),
            "later_min": float(later.min()),
            "later_median": float(median(later)),
            "log_rise": rise,
            "log_gap": gap,
            "log_noise": noise,
            "train_at_best": train_at_best,
            "train_end": train_end,
            "train_after": train_after,
            **ckpt_data,
        },
        step=ev.steps[j + 1],
        line=ev.lines[j + 1],
    )


def _train_gave_back(tr, best_step: float, th) -> tuple[float, float, float, int] | None:
    """``(train_at_best, train_end, start, k)`` when the train loss ``tr`` (finite,
    positive, at least :data:`TRAIN_NOISE_MIN_POINTS` points) ends worse than it stood at the
    eval minimum ``best_step``, by an effect the run's own units and noise can show.

    Both levels are medians of ``k`` points, a tenth of the run (at least 5): the one at the
    minimum centred on the last point logged up to ``best_step`` (a V-shaped curve's
    neighbours on both sides only raise it), the end one the last ``k``. The end must be at
    least ``overfit_slow_ratio`` x the level at the minimum and above it by
    ``diverge_noise_z`` standard errors of two such medians, the point noise read on the log
    of the loss (:func:`noise_sigma`, from first differences) and widened for its AR(1)
    autocorrelation (:func:`~trainproof.rules._stats.ar1_level_widening`: a running average, or a loss that follows
    the data's order, moves in runs that a median does not average out). The end must also stand within that many standard errors of the highest median of
    ``k`` points after the minimum: a loss that jumped and is falling again (a warm restart
    whose rate is not logged, a spike that recovers) is not getting worse. ``start`` is the
    median of the first ``k``; ``None`` also for a run that had not fallen from it by the
    eval minimum (a rise from the start is TP-DIVERGE's)."""
    v = tr.values
    n = v.size
    if n < TRAIN_NOISE_MIN_POINTS or not np.all(v > 0):
        return None
    k = max(5, n // 10)
    i = int(np.searchsorted(tr.steps, best_step, side="right")) - 1
    lo = min(max(0, i - k // 2), n - k)
    if i < 0 or lo + k > n - k:
        return None
    at_best = float(median(v[lo : lo + k]))
    end = float(median(v[-k:]))
    start = float(median(v[:k]))
    if start <= at_best or end < th.overfit_slow_ratio * at_best:
        return None
    y = np.log(v)
    widen = ar1_level_widening(y, k)
    gate = th.diverge_noise_z * math.sqrt(2) * level_se(noise_sigma(y) * widen, k)
    if math.log(end / at_best) <= gate:
        return None
    # ... and the end is the level the rise reached, not one the loss is falling back from
    # (a jump and a fall: a warm restart whose rate is not logged, a spike that recovers).
    # The blocks are counted back from the end, so that the last is the end's own k points:
    # counted forward, a short last block of a steady climb sits above the end's median
    # by half a window of the climb, and a steeper climb was cleared as a fall back.
    peak = float(np.max(block_medians(v[i:][::-1], k)[0]))
    if math.log(peak / end) > gate:
        return None
    return at_best, end, start, k


@rule(
    "TP-EVAL-DEGRADE",
    Level.WARN,
    "eval",
    "eval loss rose after its minimum and the train loss rose with it",
    needs=[
        Need("eval_loss", "overfit_min_evals", positive=True, all_finite=True),
        Need("loss", TRAIN_NOISE_MIN_POINTS),
    ],
    thresholds=[*EVAL_RISE_THRESHOLDS, "diverge_noise_z", "diverge_lr_rise", "objective_weight_rise"],
    objectives=("supervised",),
    after_warmup=True,
    # A divergence of either curve explains a milder rise of both.
    implied_by=("TP-DIVERGE", "TP-EVAL-DIVERGE"),
    # A train loss shown to rise overrules TP-OVERFIT's reading of it as falling (medians of
    # up to 5 points a side, which a noisy loss crosses by chance).
    implies=("TP-OVERFIT",),
    detects=(
        "The eval loss rose after its minimum as TP-OVERFIT reads a rise (at least {overfit_min_evals} "
        "evaluations, {overfit_evals_after_min} after the minimum; the median of the last {overfit_tail_evals} "
        "above {overfit_ratio}x it, or a durable rise above {overfit_slow_ratio}x), the minimum taken as the "
        "lowest median of 3 consecutive evaluations, so that one lucky evaluation is not the reference; and "
        "the train loss (at least 20 positive points) ends at least {overfit_slow_ratio}x its level at that "
        "minimum (median of up to 5 points each), after falling from its first points to that level, and "
        "stands above it by {diverge_noise_z:g} standard "
        "errors of its own point noise (on its log, medians of a tenth of the run, the noise widened for its "
        "autocorrelation), and still stands there at the end (within the same standard errors of the highest "
        "such median after the minimum: a jump it is falling back from is a restart or a spike). Not when the "
        "learning rate climbed {diverge_lr_rise:g}x after the minimum back to a rate the run held before it "
        "(a warm restart, a cyclic schedule), nor when a logged schedule of the objective moved after it (a "
        "loss-term weight that climbed {objective_weight_rise}x, a stage that changed, the loss a weighted sum of its "
        "logged terms whose weights moved)."
    ),
    why=(
        "Both curves are worse than at the best evaluation: the model is getting worse on the data it "
        "trains on and on held-out data alike, which overfitting does not do. It is the mild form of "
        "TP-EVAL-DIVERGE's divergence (a rise of 20% or more on both curves, a FAIL): too small to call "
        "a blow-up, too consistent to be noise; compute spent from here on undoes training."
    ),
    not_mean=(
        "An eval loss that rises while the train loss falls is TP-OVERFIT's; a train loss at its noise "
        "floor that wiggles up by a sliver of what it learned is not worse; both losses up in a new cycle of "
        "a restarting schedule, or after a logged change of the objective (a KL weight annealed up, a harder "
        "curriculum stage), measure something else. A schedule that restarts without the learning rate "
        "logged cannot be told apart: log it."
    ),
    causes=(
        "A learning rate that stays too high after warm-up (constant, or a schedule whose decay never "
        "comes), a rate that climbs again, optimizer state lost on a resume, data order that changes "
        "mid-run (a new shard of harder or noisier data), fp16 precision loss at a small loss."
    ),
    try_=(
        "Keep the checkpoint at the eval minimum; resume from it with the learning rate halved or a decay "
        "to 10% of the peak, and check what the data loader serves after that step."
    ),
)
def check_eval_degrade(ctx):
    """TP-EVAL-DEGRADE: the eval loss rose from a level it held and the train loss ended
    worse than it stood there, in its own units and noise."""
    th = ctx.th
    ev = ctx.finite("eval_loss")
    rise = _eval_rise(ev, th, level_min=True)
    if rise is None:
        return
    j, best, end, tail, climb, trend_z = rise
    best_step = ev.steps[j]
    if lr_restart_after(ctx, best_step) is not None or objective_schedule(ctx, best_step) is not None:
        return
    gave = _train_gave_back(ctx.finite("loss"), best_step, th)
    if gave is None:
        return
    train_at_best, train_end, start, k = gave
    extra, ckpt_data = best_checkpoint(ctx.run)
    yield ctx.finding(
        f"both losses rose after step {step(best_step)}: eval loss {times(end / best)} its minimum level, "
        f"train loss {times(train_end / train_at_best)} its level there",
        f"eval loss held {num(best)} around step {step(best_step)} (median of 3 evaluations, line "
        f"{int(ev.lines[j])}) and ends at {num(end)} "
        + (
            f"after rising at each of the {len(ev) - 1 - j} evaluations after it; "
            if climb
            else f"(median of the last {th.overfit_tail_evals} of {len(ev) - 1 - j} evaluations after it); "
        )
        + f"train loss {num(start)} at the start, {num(train_at_best)} around that step, {num(train_end)} at "
        f"the end (medians of {k} points; {len(ctx.finite('loss'))} in all), a rise beyond its own noise.{extra}",
        {
            "best_step": best_step,
            "eval_min_level": best,
            "eval_end": end,
            "eval_tail_median": tail,
            "eval_ratio": end / best,
            "trend_z": trend_z,
            "steady_climb": climb,
            "train_start": start,
            "train_at_best": train_at_best,
            "train_end": train_end,
            "train_ratio": train_end / train_at_best,
            "train_level_points": k,
            **ckpt_data,
        },
        step=best_step,
        line=ev.lines[j],
    )


@rule(
    "TP-NAN-EVAL",
    Level.FAIL,
    "nan",
    "an evaluation loss is NaN or ±Inf",
    needs=[Need("eval_loss", 1, finite=False)],
    least_evidence="A single non-finite evaluation loss is its own evidence.",
    detects="An eval loss value that is NaN, +Inf or -Inf, and is a measurement: non-finite values that stand for rows with no evaluation (written before the first evaluation and followed by finite ones to the end, or between evaluations in gaps of about one length, at most 1.5x their median of at least 2 rows) are read as absent, with a note; a non-finite stretch longer than that cadence is evaluations that turned non-finite, measured from the row after the last finite one.",
    why="A non-finite evaluation means the model's outputs are non-finite on held-out data: the weights are already broken, or the evaluation overflows in reduced precision.",
    not_mean="It says nothing about overfitting: TP-OVERFIT is skipped (degenerate) on such a series rather than passed.",
    causes="NaN weights after a divergence, fp16 evaluation overflowing (long sequences, large logits), an empty evaluation set (0/0), a metric computed on padding only.",
    try_="Check the train loss and gradient norm before that step; evaluate in fp32/bf16; make sure the evaluation set is not empty after filtering.",
)
def check_nan_eval(ctx):
    s = ctx.series("eval_loss")
    bad = ~np.isfinite(s.values)
    if not bad.any():
        return
    i = nan_eval_onset(bad)
    if i is None:
        return
    count = int(bad[i:].sum())
    placeholders = int(bad[:i].sum())
    yield ctx.finding(
        f"eval loss is non-finite at step {step(s.steps[i])}",
        f"{count} of {len(s) - i} evaluations from step {step(s.steps[i])} (line {int(s.lines[i])}) are non-finite"
        + (f"; {placeholders} earlier non-finite values stand for rows with no evaluation" if placeholders else "")
        + ".",
        {"first_step": s.steps[i], "count": count, "points": len(s)},
        step=s.steps[i],
        line=s.lines[i],
    )


def _preceding_medians(y: np.ndarray) -> np.ndarray:
    """Per evaluation ``i`` (``y`` shape ``(n,)``), the median of the up to 5 before it,
    ``y[max(0, i - 5):i]`` (NaN for ``i`` < 3): TP-EVAL-SPIKE's level before each
    evaluation, the same values as :func:`median` of each window, in one call."""
    n = y.size
    out = np.full(n, np.nan)
    for i in range(3, min(5, n)):
        out[i] = median(y[:i])
    if n > 5:
        out[5:] = row_medians(np.lib.stride_tricks.sliding_window_view(y, 5)[: n - 5])
    return out


@rule(
    "TP-EVAL-SPIKE",
    Level.WARN,
    "eval",
    "an eval-loss spike: held-out loss jumped an order of magnitude and came back",
    needs=[Need("eval_loss", "eval_spike_min_evals", positive=True, all_finite=True)],
    thresholds=[
        "eval_spike_min_evals",
        "spike_excursion_factor",
        "spike_noise_z",
        "spike_factor",
        "spike_excursion_share",
    ],
    least_evidence=(
        "{eval_spike_min_evals} evaluations: at least 3 before the burst (its level) and one after it back under "
        "{spike_factor:g}x that level."
    ),
    detects=(
        "An evaluation at least {spike_excursion_factor:g}x the eval loss's level before it (the median of up to the "
        "5 evaluations before, at least 3) and more than {spike_noise_z:g} noise sigmas above it (noise of the log of "
        "the eval loss, from second differences), in a burst of evaluations above {spike_factor:g}x that level lasting at "
        "most {spike_excursion_share:.0%} of the evaluations, after which an evaluation is back under "
        "{spike_factor:g}x the level."
    ),
    why=(
        "An eval loss is measured on a fixed held-out set: it does not jump tenfold by batch noise. A burst that "
        "size is the model broken for a while (a learning rate at the edge of stability, normalisation statistics "
        "corrupted, an EMA or checkpoint swap gone wrong) that the train loss may barely show; the run came back, "
        "but the checkpoints saved inside the burst are bad and the instability can return."
    ),
    not_mean=(
        "An eval loss that rises and stays up is TP-OVERFIT or TP-EVAL-DIVERGE; an ordinary noisy evaluation of a "
        "small eval set moves by far less than tenfold. A recovered spike is a warning, never a FAIL."
    ),
    causes=(
        "A warm-up that peaks too high, BatchNorm statistics updated on an odd batch, a mixed-precision overflow, "
        "an evaluation run on the EMA weights before they warmed up, a data or label error in one evaluation."
    ),
    try_=(
        "Look at the train loss and gradient norm at those steps; lower the peak learning rate or lengthen the "
        "warm-up, clip gradients, and do not keep a checkpoint saved inside the burst."
    ),
    objectives=("supervised",),
)
def check_eval_spike(ctx):
    th = ctx.th
    ev = ctx.finite("eval_loss")
    y = np.log(ev.values)
    n = y.size
    # The bar is the higher of tenfold and spike_noise_z of the evaluations' own noise
    # (second differences of the log: a trend is not noise), as TP-LOSS-SPIKE's is.
    spike = max(math.log(th.spike_excursion_factor), th.spike_noise_z * curvature_noise_sigma(y))
    back = math.log(th.spike_factor)
    longest = max(1, int(th.spike_excursion_share * n))
    hits = []
    pres = _preceding_medians(y)
    i = 3
    for i0 in np.flatnonzero(y[3 : n - 1] - pres[3 : n - 1] > back).tolist():
        if i0 + 3 < i:
            continue  # inside a burst already read
        i = i0 + 3
        pre = float(pres[i])
        end = i
        while end < n and y[end] - pre > back:
            end += 1
        peak = i + int(np.argmax(y[i:end]))
        # Back under spike_factor x the level before it, within spike_excursion_share of the
        # evaluations: a burst, not a new level (TP-OVERFIT, TP-EVAL-DIVERGE read those).
        if y[peak] - pre >= spike and end < n and end - i <= longest:
            hits.append((i, end, peak, pre))
        i = end + 1
    if not hits:
        return
    i, end, peak, pre = max(hits, key=lambda h: y[h[2]] - h[3])
    pre_v, peak_v = math.exp(pre), float(ev.values[peak])
    more = f" {len(hits)} such bursts; the largest is shown." if len(hits) > 1 else ""
    burst = (
        f"the evaluation at step {step(ev.steps[i])} alone is"
        if end - i == 1
        else f"{end - i} evaluations, steps {step(ev.steps[i])}–{step(ev.steps[end - 1])}, are"
    )
    yield ctx.finding(
        f"eval loss spiked to {num(peak_v)} at step {step(ev.steps[peak])}, {times(peak_v / pre_v)} its level; it came back",
        f"at step {step(ev.steps[peak])} (line {int(ev.lines[peak])}) the eval loss is {num(peak_v)}, "
        f"{times(peak_v / pre_v)} its level before (median {num(pre_v)} of the {min(i, 5)} evaluations to step "
        f"{step(ev.steps[i - 1])}); {burst} above {num(th.spike_factor)}x that level; back to "
        f"{num(ev.values[end])} at step {step(ev.steps[end])}.{more}",
        {
            "spike_step": float(ev.steps[peak]),
            "peak": peak_v,
            "pre_level": pre_v,
            "ratio": peak_v / pre_v,
            "burst_evals": end - i,
            "back_step": float(ev.steps[end]),
            "back_level": float(ev.values[end]),
            "bursts": len(hits),
        },
        step=ev.steps[peak],
        line=ev.lines[peak],
    )


def _collapsed_accuracy(ctx, steps: np.ndarray, v: np.ndarray) -> tuple[float, float, float, float] | None:
    """``(best, end, best step, gate)`` of an accuracy (``steps`` and its values ``v`` as
    shares, :func:`accuracy_series`; at least ``accuracy_collapse_min_points`` of them)
    whose end level (the median of
    its last third, at least 3) sits below its best level (the highest median of 3
    consecutive values, before that last third) by ``accuracy_collapse_share`` of the best
    or more, and by ``diverge_noise_z`` standard errors of the two medians (one value's
    noise: 1.4826 times the median absolute deviation of the points of the two levels from
    them); ``None`` otherwise."""
    th = ctx.th
    if v.size < th.accuracy_collapse_min_points:
        return None
    t = max(3, v.size // 3)
    meds = window_medians(v[: v.size - t], 3)
    if not meds.size:
        return None
    j = int(np.argmax(meds))
    best, end = float(meds[j]), float(median(v[-t:]))
    # one point's noise: the spread of the points around the two levels compared (second
    # differences of a short series are the step itself)
    spread = np.concatenate([v[j : j + 3] - best, v[-t:] - end])
    sigma = 1.4826 * float(median(np.abs(spread)))
    gate = th.diverge_noise_z * math.hypot(level_se(sigma, 3), level_se(sigma, t))
    if not best > 0 or (best - end) / best < th.accuracy_collapse_share or best - end <= gate:
        return None
    return best, end, float(steps[j + 1]), gate


@rule(
    "TP-ACCURACY-COLLAPSE",
    Level.WARN,
    "eval",
    "the accuracy fell far on training and held-out data alike, and stayed down",
    needs=[Need("loss", 2)],
    thresholds=["accuracy_collapse_share", "accuracy_collapse_min_points", "diverge_noise_z"],
    least_evidence="A train accuracy and a held-out accuracy of {accuracy_collapse_min_points} points or more each, both fallen by {accuracy_collapse_share:.0%} of their best beyond their noise.",
    detects=(
        "A train top-1 accuracy and a held-out one (a key naming accuracy and val, eval, test or dev) whose end "
        "levels (the median of the last third, at least 3 points) both sit below their best levels (the highest "
        "median of 3 consecutive points before that third) by {accuracy_collapse_share:.0%} of the best or more "
        "and by {diverge_noise_z:g} standard errors of the two medians (one point's noise: the spread of the "
        "points of the two levels around them), whatever the loss does."
    ),
    why=(
        "A model that got worse at its task on the data it trains on and on data it never sees has been "
        "damaged: overfitting lowers only the held-out accuracy, a harder curriculum or mixup only the train "
        "accuracy. A loss can still fall meanwhile (a Keras model at lr 20 whose cross-entropy fell 13,016 -> 5.8 "
        "while its accuracies went 0.42 -> 0.15 and 0.29 -> 0.16), so the loss rules do not see it."
    ),
    not_mean="Not proof that the run diverged: the accuracies measure the predictions, not why they changed. It is a warning to look.",
    causes="A learning rate far too high, a label or class-order bug introduced mid-run, a broken data pipeline after an epoch boundary.",
    try_="Resume from the checkpoint at the best accuracy with a lower learning rate; check the labels and the data pipeline at the step the accuracy fell.",
    objectives=("supervised",),
)
def check_accuracy_collapse(ctx):
    found = {}
    for key, steps, v in accuracy_series(ctx):
        held = measured_held_out(key)
        if held in found:
            continue
        hit = _collapsed_accuracy(ctx, steps, v)
        if hit is not None:
            found[held] = (key, *hit)
    if True not in found or False not in found:
        return
    (tk, tb, te, ts, _), (hk, hb, he, hs, _) = found[False], found[True]
    yield ctx.finding(
        f"the accuracy fell on training and held-out data alike: {tk} {num(tb)} -> {num(te)}, "
        f"{hk} {num(hb)} -> {num(he)}",
        f"{tk}: best level {num(tb)} (median of 3 around step {step(ts)}), {num(te)} over its last third; {hk}: "
        f"best {num(hb)} (around step {step(hs)}), {num(he)} over its last third; each below its best by "
        f"{num(ctx.th.accuracy_collapse_share * 100)}% or more and beyond its noise.",
        {
            "train_key": tk,
            "train_best": tb,
            "train_end": te,
            "held_out_key": hk,
            "held_out_best": hb,
            "held_out_end": he,
        },
        step=min(ts, hs),
    )


@rule(
    "TP-EVAL-ACCURACY-DROP",
    Level.WARN,
    "eval",
    "a held-out accuracy fell from its best beyond its noise while the train loss kept falling",
    needs=[Need("loss", 2)],
    thresholds=[
        "overfit_min_evals",
        "overfit_evals_after_min",
        "overfit_tail_evals",
        "diverge_noise_z",
        "dead_trend_z",
    ],
    least_evidence=(
        "A held-out top-1 accuracy at {overfit_min_evals} evaluations or more, {overfit_evals_after_min} of them "
        "after its best, and no eval loss logged (TP-OVERFIT judges the eval loss)."
    ),
    detects=(
        "With no eval loss logged, a held-out top-1 accuracy (a key naming accuracy and val, eval, test or dev) "
        "whose best level, the highest median of 3 consecutive evaluations, is followed by at least "
        "{overfit_evals_after_min} evaluations, and whose last {overfit_tail_evals} evaluations' median sits below "
        "that level by more than {diverge_noise_z:g} standard errors of the two medians (the noise of one "
        "evaluation: the binomial error of the evaluation set's size where its granularity gives it, or the spread "
        "of the second differences of the evaluations from the best on where larger; without a set size, that "
        "spread with the Student-t quantile for their number in place of {diverge_noise_z:g}), the evaluations from the best on falling with a significant trend "
        "(Mann-Kendall z at most -{dead_trend_z}), while the train loss ends below its level at the best evaluation."
    ),
    why=(
        "The model that scored best on held-out data is behind the run: it memorises its training set (the "
        "train loss still falls) and generalises worse at each evaluation. A log without an eval loss shows "
        "overfitting only in its held-out metric."
    ),
    not_mean=(
        "A held-out accuracy that wanders within its noise after a peak is not this (the medians of 3 and the "
        "noise gate ignore one lucky evaluation), nor one that falls while the train loss rises (a divergence)."
    ),
    causes="Too many epochs for the data size, too little regularisation, noisy or corrupted training labels the model memorises.",
    try_="Keep the checkpoint at the best evaluation (early stopping on the held-out accuracy), add regularisation or data, or clean the labels.",
)
def check_eval_accuracy_drop(ctx):
    th = ctx.th
    if ctx.has("eval_loss"):
        return
    tr = ctx.finite("loss")
    for _, s in sorted(ctx.run.series.items()):
        if not is_accuracy_key(s.key) or not measured_held_out(s.key):
            continue
        ok = np.isfinite(s.values)
        v, steps, lines = accuracy_as_share(s.values[ok]), s.steps[ok], s.lines[ok]
        if v.size < max(th.overfit_min_evals, 3) or not (v.min() >= 0 and v.max() <= 1):
            continue
        meds = window_medians(v, 3)  # medians of evaluations i..i+2
        j = int(np.argmax(meds)) + 1  # the middle one of the best three
        t = int(th.overfit_tail_evals)
        if v.size - 1 - j < th.overfit_evals_after_min:
            continue
        best, end = float(meds[j - 1]), float(median(v[-t:]))
        n = eval_set_size(v)
        # One evaluation's noise: the binomial error of the evaluation set where its size is
        # read from the values, else read from the evaluations since the best one (second
        # differences: a steady fall is not noise), with a Student-t quantile for so few.
        after = v[j - 1 :]
        if n:
            sigma, z_gate = max(curvature_noise_sigma(after), math.sqrt(best * (1 - best) / n)), th.diverge_noise_z
        else:
            sigma, z_gate = curvature_noise_sigma(after), t_quantile(th.diverge_noise_z, after.size - 2)
        gate = z_gate * math.hypot(level_se(sigma, 3), level_se(sigma, t))
        # The highest of many medians sits high by chance; a plateau after a lucky best
        # regresses to its level and then holds, so the evaluations from the best on must
        # also fall with a significant trend.
        z = mann_kendall_z(v[j:])
        if not best - end > gate or z > -th.dead_trend_z:
            continue
        train_at_best, train_end, _, _, _ = _train_levels(tr, float(steps[j]), wide=True)
        if train_end >= train_at_best:
            continue
        yield ctx.finding(
            f"held-out accuracy fell from its best: {s.key} went {num(best)} -> {num(end)} while the train loss kept falling",
            f"{s.key}: best level {num(best)} (median of 3 evaluations around step {step(steps[j])}), last "
            f"{t} evaluations' median {num(end)} (to step {step(steps[-1])}): {num(best - end)} below it, against a "
            f"noise gate of {num(gate)} ({num(z_gate)} standard errors of the two medians; "
            f"Mann-Kendall z {z:.2f} from the best on; one "
            f"evaluation's noise {num(sigma)}" + (f", the binomial error on {n} examples" if n else "") + "); the "
            f"train loss went {num(train_at_best)} -> {num(train_end)} meanwhile. No eval loss is logged to judge "
            "overfitting by.",
            {
                "metric": s.key,
                "best_level": best,
                "end_level": end,
                "best_step": float(steps[j]),
                "noise": sigma,
                "gate": gate,
                "eval_set_size": n,
                "train_at_best": train_at_best,
                "train_end": train_end,
            },
            step=steps[j],
            line=lines[j],
        )
        return
