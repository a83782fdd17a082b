"""Rules on the train loss: non-finite values, exact zeros, flatness, divergence, no progress."""

from __future__ import annotations

import math

import numpy as np

from ..aliases import words
from ..findings import Level
from ._checkpoint import best_checkpoint
from ._fmt import num, pct, step, times
from ._shared import log_loss_noise
from ._stats import (
    block_medians,
    block_sizes,
    end_window,
    expected_min_shift,
    improvement,
    level_se,
    mann_kendall_z,
    median,
    runs_of,
    smoothing_block,
)
from .registry import Need, rule


def _grad_at(ctx, steps: np.ndarray) -> tuple[int, int, int]:
    """(points, non-finite, exactly zero) of the gradient norm at the given steps."""
    if not ctx.has("grad_norm"):
        return 0, 0, 0
    g = ctx.series("grad_norm")
    m = np.isin(g.steps, steps)
    vals = g.values[m]
    return int(vals.size), int((~np.isfinite(vals)).sum()), int((vals == 0).sum())


def _grad_clause(ctx, steps: np.ndarray) -> tuple[str, dict]:
    n, nonfinite, zero = _grad_at(ctx, steps)
    if n == 0:
        return "", {}
    data = {"grad_norm_points": n, "grad_norm_nonfinite": nonfinite, "grad_norm_zero": zero}
    if nonfinite == n:
        return (
            f" The gradient norm is NaN/Inf at all {n} of these steps: the loss was NaN and "
            "the logger replaced it with 0 (HF's logging_nan_inf_filter does this), so this "
            "is a hidden NaN, not convergence."
        ), data
    if nonfinite:
        return (
            f" The gradient norm is NaN/Inf at {nonfinite} of {n} of these steps: at least "
            "part of the zero loss is a NaN hidden by the logger."
        ), data
    if zero == n:
        return f" The gradient norm is exactly 0 at all {n} of these steps: nothing is being learned.", data
    return f" The gradient norm is finite and non-zero at these steps ({n} points).", data


@rule(
    "TP-NAN",
    Level.FAIL,
    "nan",
    "a logged loss is NaN or ±Inf",
    needs=[Need("loss", 1, finite=False)],
    implies=("TP-NAN-GRAD",),
    least_evidence="A single non-finite loss is its own evidence: no noise estimate is needed to know NaN is not a loss.",
    detects="A train loss value that is NaN, +Inf or -Inf anywhere in the log.",
    why="Once the loss is non-finite the weights it updates are usually garbage; every step after it is wasted compute.",
    not_mean="It does not mean the whole run is lost if the loss recovers right after one point; the evidence says how many points were non-finite.",
    causes="A learning rate too high for the model, fp16 overflow without a loss scaler, a log of 0 or division by zero in a custom loss, bad input data (NaN features, empty targets).",
    try_="Lower the learning rate or add warm-up, enable gradient clipping, use bf16 or a GradScaler for fp16, and check the batch at the first non-finite step for NaN inputs.",
)
def check_nan(ctx):
    s = ctx.series("loss")
    bad = ~np.isfinite(s.values)
    if not bad.any():
        return
    i = int(np.flatnonzero(bad)[0])
    count = int(bad.sum())
    kinds = []
    for label, m in (("NaN", np.isnan(s.values)), ("+Inf", np.isposinf(s.values)), ("-Inf", np.isneginf(s.values))):
        if m.any():
            kinds.append(f"{int(m.sum())} {label}")
    at = s.steps[i]
    # Other loss components non-finite at the same step (GAN totals, per-head losses).
    others = sorted(
        o.key
        for name, o in ctx.run.series.items()
        if name != "loss"
        and "loss" in o.key.lower()
        and not o.key.startswith("eval")
        and np.any((o.steps == at) & ~np.isfinite(o.values))
    )
    also = f" Also non-finite at that step: {', '.join(others[:8])}{' …' if len(others) > 8 else ''}." if others else ""
    scale = _loss_scale_clause(ctx, at)
    yield ctx.finding(
        f"loss is non-finite from step {step(at)}",
        f"{count} of {len(s)} logged losses ({s.key}) are non-finite ({', '.join(kinds)}); the first is at step "
        f"{step(at)} (line {int(s.lines[i])}).{also}{scale}",
        {"first_step": at, "count": count, "points": len(s), "also_nonfinite": others},
        step=at,
        line=s.lines[i],
    )


def _loss_scale_clause(ctx, at: float) -> str:
    """The mixed-precision loss scale at a step, next to its peak, when the log has one."""
    if not ctx.has("loss_scale"):
        return ""
    ls = ctx.series("loss_scale")
    before = ls.values[(ls.steps <= at) & np.isfinite(ls.values)]
    if before.size == 0:
        return ""
    peak = float(before.max())
    return (
        f" The loss scale ({ls.key}) was {num(before[-1])} there, down from a peak of {num(peak)}."
        if before[-1] < peak
        else f" The loss scale ({ls.key}) was {num(before[-1])} there."
    )


@rule(
    "TP-ZERO-LOSS",
    Level.FAIL,
    "zero",
    "every finite loss is exactly 0.0",
    needs=[Need("loss", "zero_min_points")],
    thresholds=["zero_min_points"],
    least_evidence="Every one of at least 5 finite losses exactly 0.0 (compared with ==).",
    detects="A train loss that is exactly 0.0 (compared with ==, never a tolerance) at every finite logged point.",
    why="A real loss is almost never exactly zero; an exact zero from the first log means the loss is not computed on anything.",
    not_mean="It does not mean the model fits the data perfectly. Near-zero but non-zero losses (RL objectives, tiny-loss tasks) do not trigger it.",
    causes="Every label masked to the ignore index (-100), an empty or fully padded batch, no trainable parameters, a loss hidden by a logging filter that replaces NaN with 0.",
    try_="Check that labels are not all -100 after your collator, that the model has parameters with requires_grad=True, and look at the gradient norm in the same steps (NaN means a hidden NaN).",
    objectives=("supervised",),
)
def check_zero_loss(ctx):
    s = ctx.finite("loss")
    if not np.all(s.values == 0):
        return
    clause, gdata = _grad_clause(ctx, s.steps)
    yield ctx.finding(
        "loss is exactly 0.0 at every logged step",
        f"all {len(s)} finite losses are exactly 0.0 (steps {step(s.steps[0])}–{step(s.steps[-1])})." + clause,
        {"points": len(s), "first_step": s.steps[0], "last_step": s.steps[-1], **gdata},
        step=s.steps[0],
        line=s.lines[0],
    )


@rule(
    "TP-ZERO-LOSS-ONSET",
    Level.FAIL,
    "zero",
    "loss was positive, then exactly 0.0 to the end",
    needs=[Need("loss", "zero_min_points")],
    thresholds=["zero_min_points"],
    least_evidence="At least 5 trailing losses exactly 0.0 after positive ones.",
    detects="A loss that was positive earlier in the run and is exactly 0.0 on the last 5 or more logged points.",
    why="A sudden exact zero is almost always a NaN hidden by the logger (HF's logging_nan_inf_filter averages over a window of NaNs to exactly 0.0) or a batch pipeline that stopped producing labels.",
    not_mean="It does not mean the model converged: convergence approaches zero, it does not land on it exactly.",
    causes="NaN losses replaced by 0 in the logger, labels that became fully masked (a truncation or packing bug), a data loader that started yielding empty batches.",
    try_="Look at the gradient norm from the onset step (NaN there confirms a hidden NaN); rerun with logging_nan_inf_filter=False to see the true loss; resume from a checkpoint before the onset with a lower learning rate.",
    objectives=("supervised",),
)
def check_zero_loss_onset(ctx):
    s = ctx.finite("loss")
    zero = s.values == 0
    if zero.all() or not zero[-1]:
        return
    runs = runs_of(zero)
    start, length = runs[-1]
    if length < ctx.th.zero_min_points or not np.any(s.values[:start] > 0):
        return
    clause, gdata = _grad_clause(ctx, s.steps[start:])
    yield ctx.finding(
        f"loss drops to exactly 0.0 at step {step(s.steps[start])} and stays there",
        f"the last {length} of {len(s)} finite losses are exactly 0.0, from step {step(s.steps[start])} "
        f"(line {int(s.lines[start])}); before that the loss was {num(s.values[start - 1])}." + clause,
        {
            "onset_step": s.steps[start],
            "zero_points": length,
            "points": len(s),
            "loss_before": s.values[start - 1],
            **gdata,
        },
        step=s.steps[start],
        line=s.lines[start],
    )


@rule(
    "TP-ZERO-LOSS-MIXED",
    Level.FAIL,
    "zero",
    "exact 0.0 losses mixed among ordinary ones",
    needs=[Need("loss", "zero_min_points")],
    thresholds=["zero_min_points", "zero_mixed_share", "zero_mixed_level", "dead_window"],
    least_evidence="At least {zero_min_points} exact zeros that are also at least {zero_mixed_share:.0%} of the points, among positive losses at least {zero_mixed_level:.0%} of the starting level.",
    detects=(
        "At least {zero_min_points} finite losses, and at least {zero_mixed_share:.0%} of them, are exactly "
        "0.0, the run does not end on a run of zeros (TP-ZERO-LOSS-ONSET's), and the positive losses logged "
        "from the first zero on have a median of at least {zero_mixed_level:.0%} of the run's starting level "
        "(median of its first {dead_window} losses)."
    ),
    why=(
        "A loss averaged over a batch is exactly 0.0 only when every example in it is fitted to the last bit; "
        "batches at 0.0 interleaved with batches at the run's ordinary level mean the loss is not computed on "
        "anything for those batches (every label masked, an empty batch) or a NaN is being replaced by 0."
    ),
    not_mean=(
        "A classifier that has converged can log exact zeros once its losses are tiny (float saturation); those "
        "zeros sit among losses far below the starting level and do not trigger this."
    ),
    causes="Batches whose labels are all the ignore index (-100) after truncation or packing, empty batches from a sampler, a logging filter that writes 0 for NaN, a loss that returns 0 on an exception path.",
    try_="Log the number of unmasked label tokens per batch; look at the batches of the zero steps; rerun with the NaN filter off to see the true values.",
    objectives=("supervised",),
)
def check_zero_loss_mixed(ctx):
    th = ctx.th
    s = ctx.finite("loss")
    v = s.values
    zero = v == 0
    count = int(zero.sum())
    if count < th.zero_min_points or count < th.zero_mixed_share * v.size or zero.all() or zero[-1]:
        return
    first_zero = int(np.argmax(zero))
    start = float(median(v[: th.dead_window]))
    after = v[first_zero:]
    pos = after[after > 0]
    if start <= 0 or pos.size == 0 or float(median(pos)) < th.zero_mixed_level * start:
        return
    at = s.steps[zero]
    shown = ", ".join(step(x) for x in at[:8]) + (" …" if at.size > 8 else "")
    clause, gdata = _grad_clause(ctx, at)
    yield ctx.finding(
        f"{count} losses are exactly 0.0 among ordinary ones, from step {step(at[0])}",
        f"{count} of {len(s)} finite losses are exactly 0.0 (steps {shown}), while the other losses from the first "
        f"zero on have median {num(median(pos))} (the run started at {num(start)})." + clause,
        {
            "zero_points": count,
            "points": len(s),
            "first_step": at[0],
            "positive_median_after": float(median(pos)),
            "start_level": start,
            **gdata,
        },
        step=at[0],
        line=s.lines[first_zero],
    )


#: Words in a loss key that name an objective that cannot be negative: cross-entropy
#: (``ce``, ``xent``, ``crossentropy``, ``logloss``, ``bce``), squared or absolute error
#: (``mse``, ``mae``, ``l1``, ``l2``, ``rmse``), CTC and perplexity. ``nll`` is not among
#: them: the negative log-likelihood of a continuous density can be negative.
NONNEGATIVE_WORDS = frozenset(
    {
        "ce",
        "xent",
        "crossentropy",
        "logloss",
        "bce",
        "mse",
        "mae",
        "rmse",
        "l1",
        "l2",
        "ctc",
        "perplexity",
        "ppl",
        "huber",
        "smoothl1",
    }
)


def nonnegative_objective(run) -> str | None:
    """Why the run's train loss cannot be negative, read from the log, or ``None``.

    The loss key's words name a cross-entropy, squared/absolute error or CTC loss
    (:data:`NONNEGATIVE_WORDS`, after splitting ``CamelCase``, ``/``, ``_``, ``-``, ``.`` and
    spaces), or the log also carries a perplexity (``perplexity``, ``ppl``), which is
    exp(cross-entropy).
    """
    s = run.series.get("loss")
    if s is None:
        return None
    low = s.key.lower().replace("_", "").replace("-", "")
    hit = (set(words(s.key)) & NONNEGATIVE_WORDS) or {w for w in ("crossentropy", "logloss") if w in low}
    if hit:
        return f"its key {s.key!r} names a {sorted(hit)[0]} loss, which cannot be negative"
    for other in run.series.values():
        if set(words(other.key)) & {"perplexity", "ppl"}:
            return f"the log carries a perplexity ({other.key}), exp of a cross-entropy, which cannot be negative"
    return None


@rule(
    "TP-NEGATIVE-LOSS",
    Level.FAIL,
    "zero",
    "a loss that cannot be negative is negative",
    needs=[Need("loss", 1)],
    thresholds=["negative_loss_tol"],
    least_evidence="One loss below -1e-6, in a run whose log says its objective cannot be negative (the loss key names a cross-entropy, squared or absolute error or CTC loss, or a perplexity is logged).",
    detects=(
        "A finite train loss below -1e-6 in a run whose objective cannot be negative, as the log tells it: the "
        "loss key's words name a cross-entropy (ce, xent, CrossEntropyLoss, logloss, bce), a squared or absolute "
        "error (mse, mae, rmse, l1, l2, huber), a CTC loss or a perplexity, or the log also logs a perplexity."
    ),
    why="A cross-entropy or a squared error is a sum of non-negative terms: a negative value means the number logged is not that loss (a sign flip, a regulariser subtracted, label smoothing computed wrongly, an overflow).",
    not_mean="Losses that are negative by design (the NLL of a continuous density, adversarial or domain-adaptation terms, RL objectives) are not judged by this: their keys do not say they cannot be negative.",
    causes="A loss term subtracted instead of added, a reward logged under the loss's name, a log of probabilities above 1 (unnormalised outputs), float overflow in a custom loss.",
    try_="Recompute the loss on one batch by hand; log each term of a composite loss separately; check the sign of every regulariser.",
    objectives=("supervised",),
)
def check_negative_loss(ctx):
    s = ctx.finite("loss")
    neg = s.values < -ctx.th.negative_loss_tol
    if not neg.any():
        return
    why = nonnegative_objective(ctx.run)
    if why is None:
        return
    i = int(np.argmax(neg))
    yield ctx.finding(
        f"loss is negative ({num(s.values[i])} at step {step(s.steps[i])}) although it cannot be",
        f"{int(neg.sum())} of {len(s)} finite losses ({s.key}) are below 0, the first at step {step(s.steps[i])} "
        f"(line {int(s.lines[i])}), minimum {num(s.values.min())}; {why}.",
        {
            "negative_points": int(neg.sum()),
            "points": len(s),
            "first_step": s.steps[i],
            "min": float(s.values.min()),
            "because": why,
        },
        step=s.steps[i],
        line=s.lines[i],
    )


@rule(
    "TP-FLAT",
    Level.FAIL,
    "shape",
    "the loss does not move at all",
    needs=[Need("loss", "min_trend_points", positive=True, all_finite=True)],
    thresholds=["min_trend_points", "flat_rel_std", "dead_min_schedule_share"],
    verdict_bearing=True,
    min_schedule_share="dead_min_schedule_share",
    after_warmup=True,
    implies=("TP-DEAD-RUN", "TP-LOSS-STALLED"),
    least_evidence="Relative variation below {flat_rel_std:.1%} over every point.",
    detects="A loss whose relative variation (standard deviation / mean over every finite point) is below {flat_rel_std:.1%}.",
    why="A training loss always moves a little from batch to batch; a loss constant to three significant digits means the model's output does not depend on the updates.",
    not_mean="It does not flag a slowly improving or a noisy loss; those vary far more than {flat_rel_std:.1%}.",
    causes="Frozen parameters, a zero learning rate, a model that predicts a constant (collapsed output, dead ReLUs), a loss computed on a constant tensor.",
    try_="Check that the optimizer holds the trainable parameters and the learning rate is non-zero; print the gradient norm; overfit one batch to confirm the model can learn.",
    objectives=("supervised",),
)
def check_flat(ctx):
    s = ctx.finite("loss")
    mean = float(np.mean(s.values))
    rel = float(np.std(s.values)) / mean
    if rel >= ctx.th.flat_rel_std:
        return
    yield ctx.finding(
        "loss is flat: it does not change over the run",
        f"over {len(s)} points (steps {step(s.steps[0])}–{step(s.steps[-1])}) the loss has mean {num(mean)} "
        f"and std/mean {num(rel)}, below {num(ctx.th.flat_rel_std)}.",
        {"points": len(s), "mean": mean, "rel_std": rel, "threshold": ctx.th.flat_rel_std},
        step=s.steps[0],
        line=s.lines[0],
    )


def chance_level(
    values: np.ndarray, max_classes: int, tol_level: float, tol_block: float, share: float, trend_z: float
) -> tuple[int, float, float, float] | None:
    """The class count k whose uniform-guess cross-entropy ln(k) a loss sits at, or None.

    Args:
        values: finite losses in step order (n >= 3).
        max_classes: the largest k tried (2..max_classes). Beyond about 10 classes the
            levels ln(k) crowd too close together (ln 11 / ln 10 = 1.04) for a level to name
            one k, so larger k are not guessed.
        tol_level: the median of the run must be within this relative distance of ln(k).
        tol_block: a block median (5% of the run) counts as at that level within this.
        share: the least share of the blocks at that level ("most of the run").
        trend_z: a significant downward trend (Mann-Kendall z <= -trend_z over the block
            medians) means the loss is leaving that level: passing through, not stuck.

    Returns:
        ``(k, ln k, median, share of blocks at it)``.
    """
    n = values.size
    block = smoothing_block(n)
    meds, _ = block_medians(values, block)
    if meds.size < 3:
        return None
    med = float(median(values))
    for k in range(2, max_classes + 1):
        level = math.log(k)
        if abs(med / level - 1) > tol_level:
            continue
        at = float(np.mean(np.abs(meds / level - 1) <= tol_block))
        if at >= share and mann_kendall_z(meds) > -trend_z:
            return k, level, med, at
    return None


@rule(
    "TP-CHANCE-LEVEL",
    Level.FAIL,
    "shape",
    "the loss sits at ln(k), a k-class classifier's uniform guess, for most of the run",
    needs=[Need(("loss", "eval_loss"), "min_trend_points", positive=True, all_finite=True)],
    thresholds=[
        "min_trend_points",
        "chance_max_classes",
        "chance_tol_level",
        "chance_tol_block",
        "chance_share",
        "dead_trend_z",
        "dead_min_schedule_share",
    ],
    verdict_bearing=True,
    min_schedule_share="dead_min_schedule_share",
    after_warmup=True,
    implies=("TP-DEAD-RUN", "TP-FLAT", "TP-LOSS-STALLED"),
    least_evidence="{chance_share:.0%} of the run's block medians at ln(k) and no significant downward trend.",
    detects=(
        "A train loss (or, when it does not, an eval loss with at least {min_trend_points} evaluations) whose "
        "median is within {chance_tol_level:.0%} of ln(k) for some k from 2 to {chance_max_classes} (0.693, "
        "1.099, 1.386, 1.609, …), with at least {chance_share:.0%} of its block medians (blocks of 5% of the "
        "run) within {chance_tol_block:.0%} of it and no significant downward trend (Mann-Kendall z above "
        "-{dead_trend_z}), while the learning rate (when logged) is above zero."
    ),
    why=(
        "ln(k) is the cross-entropy of predicting every one of k classes with probability 1/k: a classifier whose "
        "loss holds that value has learned nothing, not even the class frequencies."
    ),
    not_mean=(
        "A loss that passes through such a value on its way down is not stuck (the trend test and the "
        "{chance_share:.0%} share exempt it). It cannot know the task's class count: a regression loss that "
        "happens to sit at 0.693 is reported too, which is still a loss that does not move."
    ),
    causes="Labels unrelated to the inputs (shuffled, or a join that misaligned them), a collapsed output layer, a learning rate too small to leave the initialisation, features that carry no signal (all zeros, constant after a normalisation bug).",
    try_="Overfit a single batch; check that labels and inputs line up after loading and shuffling; print the output distribution; check the learning rate after warm-up.",
    objectives=("supervised",),
)
def check_chance_level(ctx):
    th = ctx.th
    name = "loss" if ctx.has("loss") else "eval_loss"
    s = ctx.finite(name)
    if name == "loss" and len(s) < th.min_trend_points:
        return
    if ctx.has("lr"):
        lr = ctx.finite("lr").values
        if lr.size and not float(median(lr)) > 0:
            return  # TP-ZERO-LR's
    hit = chance_level(
        s.values, th.chance_max_classes, th.chance_tol_level, th.chance_tol_block, th.chance_share, th.dead_trend_z
    )
    if hit is None and name == "loss" and ctx.has("eval_loss"):
        ev = ctx.finite("eval_loss")
        if len(ev) >= th.min_trend_points and np.all(ev.values > 0):
            s, name = ev, "eval_loss"
            hit = chance_level(
                ev.values,
                th.chance_max_classes,
                th.chance_tol_level,
                th.chance_tol_block,
                th.chance_share,
                th.dead_trend_z,
            )
    if hit is None:
        return
    k, level, med, at = hit
    what = "train loss" if name == "loss" else "eval loss"
    yield ctx.finding(
        f"{what} is stuck at chance: it sits at ln({k}) = {num(level)}, a uniform guess over {k} classes",
        f"the {what} ({s.key}) has median {num(med)} over {len(s)} points (steps {step(s.steps[0])}–"
        f"{step(s.steps[-1])}), {pct(abs(med / level - 1))} from ln({k}) = {num(level)}; {pct(at)} of its block medians "
        f"are within {pct(th.chance_tol_block)} of it, with no significant downward trend.",
        {"classes": k, "chance_level": level, "median": med, "share_at_level": at, "series": name},
        step=s.steps[0],
        line=s.lines[0],
    )


#: Points (at least) behind the level right after the first point, against which a lone
#: first point is judged: enough that one noisy neighbour does not decide it.
LEAD_POINTS = 5


def _lone_start_cut(ratio: float, k: int) -> float:
    """How far (as a multiple) the level right after a lone first point must sit above it
    for that point to count as the starting level.

    The starting level is read from the first ``k`` points, so a single low first point is
    averaged with what follows rather than taken as a level: the median of the point and
    ``k - 1`` values at the level after it. The point still counts when even that median
    is ``ratio`` below the level after it: for k = 1 the multiple is the ratio itself, for
    k = 2 it is ratio / (2 - ratio) (3x for the default 1.5), and for k >= 3 the median
    ignores the lone point.
    """
    if k <= 1:
        return ratio
    if k == 2 and ratio < 2:
        return ratio / (2 - ratio)
    return math.inf


@rule(
    "TP-DIVERGE",
    Level.FAIL,
    "shape",
    "the run ends well above the best loss level it reached",
    needs=[Need("loss", "min_trend_points", positive=True, all_finite=True)],
    thresholds=["min_trend_points", "diverge_ratio", "diverge_noise_z", "diverge_start_points", "floor_regain_share"],
    verdict_bearing=True,
    implies=("TP-DEAD-RUN", "TP-LOSS-STALLED", "TP-EVAL-DIVERGE"),
    least_evidence="The run's own noise, measured on the log of the loss: the end level must clear the best level by the ratio and by {diverge_noise_z:g} standard errors of the two levels.",
    detects=(
        "A run whose end level (median of its last 10% of points, at least 3) is more than {diverge_ratio}x "
        "the best level it held, and above it by more than {diverge_noise_z:g} standard errors of the two "
        "levels (noise measured on the log of the loss; a block minimum also allows for the lowest of several "
        "tied blocks sitting low by chance). The best level is the lowest of: the medians of consecutive "
        "blocks of 5% of the run (at least 3 points); the starting level, the higher of the first "
        "{diverge_start_points} points when they agree within the noise; and the first point alone, when the "
        "run right after it (median of the next 5 points) sits more than 3x above it. Not a divergence: a "
        "climb that regains less than {floor_regain_share:.0%} of the drop from the first block's level to the "
        "best level (a loss at its noise floor after a large fall)."
    ),
    why="Once a run has climbed far above a level it already reached, further steps are spent undoing damage; the best checkpoint is behind you.",
    not_mean="A single deep dip is not a level (a block median ignores it, and a low first point needs the run to sit 3x above it), a single terminal spike is not an end level (the end window median ignores it), and an ordinarily noisy curve is not diverging.",
    causes="A learning rate too high (often revealed after warm-up ends), no gradient clipping, fp16 overflow handled by skipping steps, a data-order change late in the run.",
    try_="Resume from the checkpoint at the best step with a lower peak learning rate, longer warm-up or gradient clipping (max_grad_norm 1.0).",
    objectives=("supervised",),
)
def check_diverge(ctx):
    s = ctx.finite("loss")
    v = s.values
    n = v.size
    th = ctx.th
    ratio_th, z = th.diverge_ratio, th.diverge_noise_z
    w = end_window(n)
    end = float(median(v[-w:]))
    # Every candidate best level (a block median, the highest of the first points, the
    # first point) is at least the lowest point, so a run whose end level is within the
    # ratio of its lowest point has not diverged: settled without the noise and the block
    # levels.
    if ratio_th >= 0 and end <= ratio_th * float(np.min(v)):
        return
    # Loss noise scales with the loss, and the rule compares ratios of levels: measure the
    # noise on the log of the loss so a level and its uncertainty share one scale.
    sigma = log_loss_noise(ctx)
    block = smoothing_block(n)
    meds, centres = block_medians(v, block)
    sizes = block_sizes(n, block)
    j = int(np.argmin(meds))
    best, best_idx, best_points, from_start = float(meds[j]), int(centres[j]), int(sizes[j]), False
    # The starting level: the first k points, when they agree within the noise, held the
    # highest of them (a run that blows up right after its first logs did hold it) ...
    k = max(1, int(th.diverge_start_points))
    head = np.log(v[:k])
    if head.size == k and float(np.ptp(head)) <= z * math.sqrt(2) * sigma:
        start = float(np.max(v[:k]))
        if start < best:
            best, best_idx, best_points, from_start = start, 0, k, True
    # ... or a lone first point, when the run right after it sits so far above it that
    # averaging it with what follows still leaves it a level below.
    lead_vals = v[1 : 1 + max(LEAD_POINTS, block)]
    cut = _lone_start_cut(ratio_th, k)
    if v[0] < best and lead_vals.size >= 3 and math.isfinite(cut):
        lead = float(median(lead_vals))
        # one standard error of margin: the level after the point is itself an estimate
        if math.log(lead / v[0]) - math.log(cut) > level_se(sigma, lead_vals.size):
            best, best_idx, best_points, from_start = float(v[0]), 0, 1, True
    if best <= 0 or end <= ratio_th * best:
        return
    # A starting level rests on one or two points: it is given a single point's noise, so
    # that a one-point dip next to an ordinary low swing is not taken for a held level.
    se_best = level_se(sigma, 1 if from_start else best_points)
    gate = z * math.hypot(se_best, level_se(sigma, w))
    if not from_start:
        # The lowest of several block medians at one level sits below that level by chance;
        # count the blocks statistically tied with the minimum and allow for that shift.
        tied = int(np.sum(np.log(meds) - math.log(best) <= z * math.sqrt(2) * se_best))
        gate += expected_min_shift(tied) * se_best
    gap = math.log(end / best)
    if gap <= gate:
        return
    # At a noise floor: a run that fell far (an order of magnitude or more) sits where a
    # few examples decide each batch's loss, so its relative wiggle is large; a climb
    # that regains a sliver of what the run learned is that wiggle, not a divergence.
    start_level = float(meds[0])
    if start_level > best and (end - best) < th.floor_regain_share * (start_level - best):
        return
    ratio = end / best
    through = (s.steps[best_idx] - s.steps[0]) / max(s.steps[-1] - s.steps[0], 1e-300)
    # Onset: the first point after the best level from which the failure is visible and
    # stays so: at least 80% of the remaining points above the bar this rule judges the
    # end level by (the ratio and the noise gate above the best level). A loss that
    # explodes on a log scale passes that bar long before it nears its end level.
    # The point and the next two must all be above it, so a lone high point followed by a
    # return to the old level is not where the run went wrong.
    bar = best * max(ratio_th, math.exp(gate))
    high = v > bar
    high[: best_idx + 1] = False
    suffix = np.cumsum(high[::-1])[::-1] / np.arange(n, 0, -1)
    held = high.copy()
    for k in (1, 2):
        held[:-k] &= high[k:]
    cand = np.flatnonzero(held & (suffix >= 0.8))
    onset = int(cand[0]) if cand.size else n - w
    where = "its starting level" if best_idx == 0 else f"the level it held around step {step(s.steps[best_idx])}"
    extra, ckpt_data = best_checkpoint(ctx.run)
    held = (
        ("its first point" if best_points == 1 else f"median of its first {best_points} points")
        if from_start
        else f"median of {best_points} points"
    )
    yield ctx.finding(
        f"loss diverged: the run ends {times(ratio)} above {where}",
        f"end level {num(end)} (median of the last {w} points, steps {step(s.steps[-w])}–{step(s.steps[-1])}) is "
        f"{times(ratio)} the best level {num(best)} ({held}) at step {step(s.steps[best_idx])} "
        f"({pct(through)} through the run); threshold {num(ratio_th)}x, relative noise {num(sigma)}, "
        f"log gap {num(gap)} against a noise gate of {num(gate)}.{extra}",
        {
            "end_level": end,
            "best_level": best,
            "best_step": s.steps[best_idx],
            "ratio": ratio,
            "end_window": w,
            "block": block,
            "best_points": best_points,
            "from_start": from_start,
            "noise_std": sigma,
            "log_gap": gap,
            "noise_gate": gate,
            "best_fraction": through,
            "onset_step": s.steps[onset],
            "threshold": th.diverge_ratio,
            **ckpt_data,
        },
        step=s.steps[best_idx],
        line=s.lines[best_idx],
    )


def _learning_elsewhere(ctx) -> str | None:
    """Evidence, outside the train loss, that the model is learning: a held-out loss that
    falls with a significant trend (Mann-Kendall z at or below ``-dead_trend_z`` over its
    evaluations, last below first). An evaluation loss carries no mini-batch noise, so a
    steady fall there is learning that a noisy or resumed train curve can hide."""
    if not ctx.has("eval_loss"):
        return None
    ev = ctx.finite("eval_loss")
    if len(ev) < 3 or not ev.values[-1] < ev.values[0]:
        return None
    z = mann_kendall_z(ev.values)
    if z > -ctx.th.dead_trend_z:
        return None
    return (
        f"the eval loss falls with a significant trend ({num(ev.values[0])} -> {num(ev.values[-1])} over "
        f"{len(ev)} evaluations, Mann-Kendall z {z:.2f})"
    )


def _alive(ctx) -> tuple[bool, str]:
    """Whether the log shows the optimizer still moving the weights over the second half
    of the run: a learning rate above ``tiny_lr`` and a finite, non-zero gradient norm
    that has not collapsed below ``vanish_ratio`` of its early level. Both series must be
    logged: without them nothing says the run is alive."""
    th = ctx.th
    if not (ctx.has("lr") and ctx.has("grad_norm")):
        return False, ""
    lr, g = ctx.finite("lr").values, ctx.finite("grad_norm").values
    if lr.size < 2 or g.size < 4:
        return False, ""
    lr_late, g_late = float(median(lr[lr.size // 2 :])), float(median(g[g.size // 2 :]))
    g_early = float(median(g[1 : max(2, g.size // 10 + 1)]))
    if lr_late <= th.tiny_lr or g_late <= 0 or (g_early > 0 and g_late < th.vanish_ratio * g_early):
        return False, ""
    return True, f"learning rate {num(lr_late)} and gradient norm {num(g_late)} (medians of the second half)"


def dead_run_state(ctx) -> dict | None:
    """The dead-run judgement, computed once for TP-DEAD-RUN and TP-LOSS-STALLED.

    ``None`` when the loss improved (by the ends, the wide ends, or a significant
    downward trend) or a held-out loss shows learning; otherwise a dict of the numbers with
    ``kind`` ``"dead"`` (TP-DEAD-RUN, a FAIL) or ``"stalled"`` (TP-LOSS-STALLED, a WARN):
    the loss fell from its first point by more than the bar and the noise, and then held a
    level while the learning rate and the gradients stayed alive: a plateau, not a run
    that never learned.
    """

    def compute():
        s = ctx.finite("loss")
        v = s.values
        n = v.size
        th = ctx.th
        w = th.dead_window
        first, last, rel = improvement(v, w)
        if rel >= th.dead_min_improvement:
            return None
        # Robust to noise: the ends read over 10% of the run must agree, and a run whose loss
        # falls with a significant trend (Mann-Kendall on block medians) is learning, however
        # slowly: a noisy small-batch curve whose first and last five points happen to sit
        # close together is not a dead run.
        wide = max(w, min(n // 10, 500))
        _, last_wide, rel_wide = improvement(v, wide)
        if rel_wide >= th.dead_min_improvement:
            return None
        meds, _ = block_medians(v, max(1, -(-n // th.dead_trend_blocks)))
        z = mann_kendall_z(meds)
        if z <= -th.dead_trend_z:
            return None
        elsewhere = _learning_elsewhere(ctx)
        if elsewhere:
            return None
        state = {
            "first": first,
            "last": last,
            "rel": rel,
            "w": w,
            "wide": wide,
            "rel_wide": rel_wide,
            "z": z,
            "trend_z_bar": th.dead_trend_z,
            "kind": "dead",
            "s": s,
        }
        # An early fall: the first point sits above the end level by more than the bar and
        # more than the noise of single points (3 sigma of the log of the loss).
        sigma = log_loss_noise(ctx)
        end_level = min(last, last_wide)
        fall = math.log(v[0] / end_level) if v[0] > 0 and end_level > 0 else 0.0
        alive, alive_text = _alive(ctx)
        state.update(fall=fall, alive=alive_text)
        if ctx.has("lr"):
            lr = ctx.finite("lr").values
            if lr.size and 0 < float(lr.max()) <= th.tiny_lr:
                state["tiny_lr"] = float(lr.max())
                return state  # the cause is named: a dead run, however it started
        if alive and fall > max(math.log1p(th.dead_min_improvement), th.diverge_noise_z * math.sqrt(2) * sigma):
            state["kind"] = "stalled"
        # A log that starts later than its own length (a resumed run: Coqui's global step,
        # a JSONL appended after a restart) shows a late window of a longer training; a
        # level held there is the model the earlier steps trained, not a run that never
        # learned.
        first_step, span = float(s.steps[0]), float(s.steps[-1] - s.steps[0])
        if first_step > 0 and first_step >= span:
            state["kind"] = "stalled"
            state["resumed"] = first_step
        return state

    return ctx.memo("dead_run_state", compute)


def _no_progress_text(st: dict) -> tuple[str, str]:
    s, rel, first, last, w = st["s"], st["rel"], st["first"], st["last"], st["w"]
    if rel >= 0:
        change = f"improved only {pct(rel)}"
    elif last > 2 * first:
        change = f"ended {times(last / first)} higher than it started"
    else:
        change = f"ended {pct(-rel)} higher than it started"
    evidence = (
        f"median of the first {w} losses {num(first)} (steps {step(s.steps[0])}–{step(s.steps[w - 1])}), "
        f"median of the last {w} {num(last)} (steps {step(s.steps[-w])}–{step(s.steps[-1])}): "
        f"{pct(rel)} improvement ({pct(st['rel_wide'])} over the first and last {st['wide']} points); "
        + (
            f"a significant upward trend (Mann-Kendall z {st['z']:.2f})."
            if st["z"] >= st["trend_z_bar"]
            else f"no significant downward trend (Mann-Kendall z {st['z']:.2f})."
        )
    )
    return change, evidence


def _dead_data(st: dict, th) -> dict:
    return {
        "first_median": st["first"],
        "last_median": st["last"],
        "improvement": st["rel"],
        "window": st["w"],
        "improvement_wide": st["rel_wide"],
        "wide_window": st["wide"],
        "trend_z": st["z"],
        "threshold": th.dead_min_improvement,
    }


@rule(
    "TP-DEAD-RUN",
    Level.FAIL,
    "shape",
    "the loss did not improve over the run",
    needs=[Need("loss", "dead_min_points", positive=True, all_finite=True)],
    thresholds=[
        "dead_min_points",
        "dead_window",
        "dead_min_improvement",
        "dead_trend_z",
        "dead_trend_blocks",
        "dead_min_schedule_share",
        "tiny_lr",
        "diverge_noise_z",
        "vanish_ratio",
    ],
    verdict_bearing=True,
    min_schedule_share="dead_min_schedule_share",
    after_warmup=True,
    least_evidence="Both the {dead_window}-point ends and the 10% ends under {dead_min_improvement:.0%} improvement, and no significant trend over up to {dead_trend_blocks} block medians; no falling eval loss.",
    detects="The median of the last {dead_window} losses is less than {dead_min_improvement:.0%} below the median of the first {dead_window} (at least {dead_min_points} points), the same holds for the medians of the first and last 10% of the run, and the loss shows no significant downward trend (Mann-Kendall z above -{dead_trend_z}, one-sided 1%, over at most {dead_trend_blocks} block medians). Not a dead run: an eval loss that falls with a significant trend (the model is learning); a loss that fell from its first point beyond the noise and then held a level while the learning rate and the gradient norm stayed alive, or a log that starts past its own span (a resumed run): TP-LOSS-STALLED, a WARN. A learning rate at most {tiny_lr} over the whole run is named as the cause.",
    why="A run that ends where it started has spent its compute without learning.",
    not_mean="A noisy curve that is still falling is not dead (the trend test exempts it), nor a loss with a large constant offset that falls slowly but steadily, nor a run judged early in its schedule or during warm-up. It does flag runs already converged at the start because they resumed from a good checkpoint; read the evidence with the run's history in mind.",
    causes="A zero or far too small learning rate, frozen parameters, a model already at its floor (resumed run), labels unrelated to inputs.",
    try_="Check the learning rate actually applied (schedulers, DeepSpeed configs), that the optimizer holds the trainable parameters, and that one batch can be overfit.",
    objectives=("supervised",),
)
def check_dead_run(ctx):
    st = dead_run_state(ctx)
    if st is None or st["kind"] != "dead":
        return
    th = ctx.th
    s = st["s"]
    change, evidence = _no_progress_text(st)
    data = _dead_data(st, th)
    message = f"loss did not improve: it {change}"
    if "tiny_lr" in st:
        message += f", with a learning rate of at most {num(st['tiny_lr'])} (effectively zero)"
        evidence += (
            f" The learning rate never exceeds {num(st['tiny_lr'])} (at most {num(th.tiny_lr)}): "
            "too small for the weights to move."
        )
        data.update(cause="tiny_lr", lr_max=st["tiny_lr"])
    yield ctx.finding(message, evidence, data, step=s.steps[-1], line=s.lines[-1])


@rule(
    "TP-LOSS-STALLED",
    Level.WARN,
    "shape",
    "the loss fell early, then held a level while the optimizer stayed alive",
    needs=[Need("loss", "dead_min_points", positive=True, all_finite=True)],
    thresholds=[
        "dead_min_points",
        "dead_window",
        "dead_min_improvement",
        "dead_trend_z",
        "dead_trend_blocks",
        "diverge_noise_z",
        "dead_min_schedule_share",
        "tiny_lr",
        "vanish_ratio",
    ],
    min_schedule_share="dead_min_schedule_share",
    after_warmup=True,
    detects="TP-DEAD-RUN's no-progress condition (ends and wide ends within {dead_min_improvement:.0%}, no significant downward trend, no falling eval loss) on a loss whose first point sits above the end level by more than {dead_min_improvement:.0%} and more than {diverge_noise_z:g} noise sigmas of single points, while the learning rate (above {tiny_lr}) and the gradient norm (finite, non-zero, not collapsed below {vanish_ratio:.0%} of its early level) stay alive over the second half; or on a log that starts at a step past its own span (a resumed run whose earlier training is not in the log). A learning rate of at most {tiny_lr} keeps it a TP-DEAD-RUN.",
    why="A loss that dropped at once and then stopped improving while the optimizer still moves the weights has reached a plateau: the rest of the run may be spent for little gain, but it is not a run that never trained.",
    not_mean="It does not mean the run is broken: fine-tunes from a good checkpoint, runs at their data's noise floor and resumed runs look like this. It is not TP-DEAD-RUN, which needs the loss never to have moved.",
    causes="A model at the floor of what its data allow, a learning rate too small after warm-up to make further progress, a resumed run already converged, too little capacity.",
    try_="Check the eval metrics: if they still improve, nothing is wrong; otherwise try a larger learning rate, a longer schedule, or more capacity.",
    objectives=("supervised",),
)
def check_loss_stalled(ctx):
    st = dead_run_state(ctx)
    if st is None or st["kind"] != "stalled":
        return
    s = st["s"]
    change, evidence = _no_progress_text(st)
    if "resumed" in st:
        message = f"loss stalled: the log starts at step {step(st['resumed'])} (a resumed run) and {change}"
        evidence += (
            f" The first logged step {step(st['resumed'])} is past the log's own span "
            f"({step(s.steps[-1] - s.steps[0])} steps): earlier training is not in this log, so a level "
            "held here is a plateau of a trained model, not a run that never learned."
        )
    else:
        message = f"loss stalled: it fell from its first point {num(s.values[0])}, then {change}"
        evidence += (
            f" The first loss {num(s.values[0])} sits {times(math.exp(st['fall']))} above the end level, "
            f"and the optimizer is alive: {st['alive']}."
        )
    yield ctx.finding(
        message,
        evidence,
        {
            **_dead_data(st, ctx.th),
            "first_point": float(s.values[0]),
            "log_fall": st["fall"],
            "resumed_at": st.get("resumed"),
        },
        step=s.steps[-1],
        line=s.lines[-1],
    )
