"""Rules on the evaluation loss."""
from __future__ import annotations

import math

import numpy as np

from ..findings import Level
from ._fmt import num, step, times
from ._checkpoint import best_checkpoint
from ._stats import block_medians, mann_kendall_z, median, window_medians
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
    end_level = float(median(v[-max(3, n // 10):]))
    after = v[b:]
    meds, _ = block_medians(after, max(1, -(-after.size // 40)))
    z = mann_kendall_z(meds)
    return z, bool(best_level > 0 and end_level > th.overfit_slow_ratio * best_level and z >= th.dead_trend_z)


@rule(
    "TP-OVERFIT", Level.WARN, "eval", "eval loss rises after its minimum while the train loss keeps falling",
    needs=[Need("eval_loss", "overfit_min_evals", all_finite=True), Need("loss", 2)],
    thresholds=["overfit_min_evals", "overfit_ratio", "overfit_tail_evals", "overfit_evals_after_min",
                "overfit_slow_ratio", "dead_trend_z"],
    detects=(
        "At least 4 evaluations and at least 3 after the eval minimum; the eval loss ends above 1.2x the minimum "
        "— by the median of the last 3 evaluations, or by the last one when every evaluation after the minimum "
        "rose (a steady climb) — or, when the rise is durable, above 1.05x: every evaluation after the minimum "
        "higher than the one before, or, between levels, the median of the last 10% of evaluations (at least 3) "
        "above 1.05x the lowest median of 5% of them (at least 3) with a Mann-Kendall z of at least 2.326 over "
        "the evaluations from that level on — while the train loss at the end is below the train loss around "
        "the best evaluation."
    ),
    why="Past the eval minimum the model memorises the training set; the checkpoint at the best step generalises better than the last one.",
    not_mean="A single bad evaluation is not overfitting (the median of the last 3 ignores it, and a spike that comes back down is no steady climb); an eval loss that rises together with the train loss is a divergence, not this.",
    causes="Too many epochs for the data size, too little regularisation (dropout, weight decay), a learning rate that stays high too long, a train set much smaller than the model's capacity.",
    try_="Keep the checkpoint at the best eval step (load_best_model_at_end), add early stopping, more data or regularisation, or fewer epochs.",
)
def check_overfit(ctx):
    th = ctx.th
    ev = ctx.finite("eval_loss")
    tr = ctx.finite("loss")
    j = int(np.argmin(ev.values))
    best = float(ev.values[j])
    after = len(ev) - 1 - j
    if after < th.overfit_evals_after_min or best <= 0:
        return
    tail = float(median(ev.values[-th.overfit_tail_evals:]))
    # A steady climb (each evaluation after the minimum higher than the one before) is
    # judged by where it ended; a noisy tail by its median, so one bad evaluation is not
    # enough.
    climb = bool(np.all(np.diff(ev.values[j:]) > 0))
    end = float(ev.values[-1]) if climb else tail
    # A slow durable rise: below the 1.2x bar, but every evaluation after the minimum
    # higher than the one before, or a significant upward trend from the minimum on
    # (Mann-Kendall), ending at least 5% above the minimum.
    trend_z, slow = _durable_rise(ev.values, j, climb, th)
    if end <= th.overfit_ratio * best and not slow:
        return
    best_step = ev.steps[j]
    before = tr.values[tr.steps <= best_step]
    w = max(1, min(5, tr.values.size // 4))
    train_at_best = float(median(before[-w:])) if before.size else float(median(tr.values[:w]))
    train_end = float(median(tr.values[-w:]))
    if train_end >= train_at_best:
        return
    extra, ckpt_data = best_checkpoint(ctx.run)
    yield ctx.finding(
        f"overfitting: eval loss is {times(end / best)} its minimum at step {step(best_step)}",
        f"eval loss reached its minimum {num(best)} at step {step(best_step)} (line {int(ev.lines[j])}); "
        + (f"it then rose at each of the {after} evaluations after it, to {num(end)}, "
           if climb else f"the median of the last {th.overfit_tail_evals} evaluations is {num(tail)} ({after} "
           "evaluations after the minimum), ")
        + f"while the train loss fell from {num(train_at_best)} to {num(train_end)}.{extra}",
        {"best_step": best_step, "eval_min": best, "eval_tail_median": tail, "eval_end": end, "ratio": end / best,
         "trend_z": trend_z,
         "evals_after_min": after, "steady_climb": climb, "train_at_best": train_at_best,
         "train_end": train_end, **ckpt_data},
        step=best_step, line=ev.lines[j],
    )


@rule(
    "TP-NAN-EVAL", Level.FAIL, "nan", "an evaluation loss is NaN or ±Inf",
    needs=[Need("eval_loss", 1, finite=False)],
    least_evidence='A single non-finite evaluation loss is its own evidence.',
    detects="An eval loss value that is NaN, +Inf or -Inf.",
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
    i = int(np.flatnonzero(bad)[0])
    yield ctx.finding(
        f"eval loss is non-finite at step {step(s.steps[i])}",
        f"{int(bad.sum())} of {len(s)} evaluations are non-finite; the first is at step {step(s.steps[i])} "
        f"(line {int(s.lines[i])}).",
        {"first_step": s.steps[i], "count": int(bad.sum()), "points": len(s)},
        step=s.steps[i], line=s.lines[i],
    )
