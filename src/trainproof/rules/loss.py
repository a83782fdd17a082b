"""Rules on the train loss: non-finite values, exact zeros, flatness, divergence, no progress."""

from __future__ import annotations

import math
import re

import numpy as np

from .._arrays import isin, quantile, unique
from ..aliases import auxiliary_terms, loss_candidate
from ..aliases.loss_fallback import BITS_LOSS_WORDS
from ..aliases.vocabulary import words
from ..findings import Level
from ._checkpoint import best_checkpoint
from ._fmt import num, pct, step, times
from ._shared import (
    CLEARED_KEY,
    LAYER_UPDATE_RATIO_KEY,
    NOT_UPDATED_KEY,
    OPTIMIZER_STEPS_KEY,
    OUTSIDE_KEY,
    fall_shown,
    has_train_terms,
    log_loss_noise,
    loss_change_interval,
    lr_restart_after,
    margin_objective,
    measured_held_out,
    objective_schedule,
    setting_moved,
    trailing_zero_run,
    trainable_tensors,
    trained_group_rate,
    zero_loss_fitted,
    zeros_continue_the_tail,
)
from ._stats import (
    ar1_inflation,
    block_medians,
    block_sizes,
    change_interval,
    common_steps,
    curvature_noise_sigma,
    end_window,
    expected_min_shift,
    improvement,
    level_se,
    mann_kendall_z,
    median,
    neighbour_median,
    noise_sigma,
    repeat_cadence,
    repeats_one_value,
    rounding_step,
    runs_of,
    smoothing_block,
    t_quantile,
    trend_z,
    window_medians,
)
from .registry import CannotJudge, Need, rule


def _grad_at(ctx, steps: np.ndarray) -> tuple[int, int, int]:
    """(points, non-finite, exactly zero) of the gradient norm at the given steps."""
    if not ctx.has("grad_norm"):
        return 0, 0, 0
    g = ctx.series("grad_norm")
    m = isin(g.steps, steps)
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
    needs=[Need(("loss", "reward"), 1, finite=False)],
    implies=("TP-NAN-GRAD",),
    least_evidence="A single non-finite loss is its own evidence: no noise estimate is needed to know NaN is not a loss. So is the training program's own line that it stopped on one.",
    detects="A train loss value that is NaN, +Inf or -Inf anywhere in the log (in a run with no single loss, an RL run whose terms are an actor's and a critic's, any train loss term); an auxiliary train term set aside from the loss's shape (a router's load-balancing loss, a z-loss, an aux loss) finite at every log until it turns non-finite and stays so to its last logged value, at least 2 values, since the training adds it to the objective it steps on; or, in a console capture, the program's own line that training stopped because the loss became non-finite (detectron2's 'Loss became infinite or NaN', the torchvision references' 'Loss is nan, stopping training', Keras' TerminateOnNaN, an exception whose message says the loss is NaN), which programs that stop at the first NaN print instead of the value.",
    why="Once the loss is non-finite the weights it updates are usually garbage; every step after it is wasted compute.",
    not_mean="It does not mean the whole run is lost if the loss recovers right after one point; the evidence says how many points were non-finite. A non-finite first log followed by finite losses only (at least min_trend_points of them) is read as absent, with a note, and the run judged on the rest: a running mean printed before its first batch (0 / 0), which weights gone non-finite cannot produce. So are the non-finite train values of a row of another kind (a table export writing NaN in every train column of an evaluation's or the trainer's summary row): a column finite on that row that is never finite beside a finite loss, and every column that is (a learning rate, a gradient norm, a wide table's val_loss) non-finite there too; or an eval loss finite on that row while the step's train loss is finite on another row.",
    causes="A learning rate too high for the model, fp16 overflow without a loss scaler, a log of 0 or division by zero in a custom loss, bad input data (NaN features, empty targets).",
    try_="Lower the learning rate or add warm-up, enable gradient clipping, use bf16 or a GradScaler for fp16, and check the batch at the first non-finite step for NaN inputs.",
)
def check_nan(ctx):
    if not ctx.has("loss"):
        # An RL run judged on its reward, whose loss terms are separate networks' (an
        # actor's and a critic's) and so map to no single loss: a term that turns
        # non-finite is still a NaN loss.
        yield from _nonfinite_term(ctx)
        return
    s = ctx.series("loss")
    bad = ~np.isfinite(s.values)
    if not bad.any():
        aux = list(_nonfinite_auxiliary(ctx, s))
        yield from aux or _stopped_on_nonfinite(ctx, s)
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


def _nonfinite_auxiliary(ctx, s):
    """TP-NAN's finding on an auxiliary train term (:func:`~trainproof.aliases.auxiliary_terms`:
    a router's load-balancing loss, a z-loss) that turned non-finite and stayed so to its
    last logged value (at least 2 values) after being finite at every log before, while the
    judged loss ``s`` stayed finite: the
    loss fallback sets such a term aside from the loss's shape, but the training adds it to
    the objective it steps on, so the router's gradients are NaN from there (or, under a
    loss scaler, every step is skipped). A term non-finite at a few steps and finite again
    is left alone (a step the scaler skipped), and so is one non-finite now and then all
    run (an empty mean on steps whose expert layers were skipped)."""
    own = set(ctx.run.mapping.get("loss", {}).get("sum_of") or [s.key])
    aux = set(auxiliary_terms(o.key for o in ctx.run.series.values())) - own
    for o in ctx.run.series.values():
        if o.key not in aux:
            continue
        key = o.key
        fin = np.isfinite(o.values)
        if fin.all() or fin[-1]:
            continue
        i = int(np.flatnonzero(fin)[-1]) + 1 if fin.any() else 0
        if o.values.size - i < 2 or not fin[:i].all():
            continue  # a term non-finite now and then all run (a placeholder) is no onset
        yield ctx.finding(
            f"an auxiliary loss term ({key}) is non-finite from step {step(o.steps[i])} to the end",
            f"{o.values.size - i} of {len(o)} logged values of {key} are non-finite, every one from step "
            f"{step(o.steps[i])} (line {int(o.lines[i])}) to its last; the judged loss ({s.key}) stays finite. "
            "The term is set aside from the loss's shape, but the training adds it to the objective it steps on.",
            {
                "first_step": o.steps[i],
                "count": int(o.values.size - i),
                "points": len(o),
                "also_nonfinite": [],
                "key": key,
            },
            step=o.steps[i],
            line=o.lines[i],
        )
        return


def _nonfinite_term(ctx):
    """TP-NAN's finding on a run with no mapped loss: the first train loss term (a key the
    loss fallback reads as a train or unmarked loss) with a non-finite value."""
    hits = []
    for o in ctx.run.series.values():
        c = loss_candidate(o.key)
        bad = np.flatnonzero(~np.isfinite(o.values)) if c is not None and c["split"] != "eval" else ()
        if len(bad):
            # the earliest; at one step a term named a loss in its own name first (CleanRL's
            # losses/value_loss before the losses/approx_kl in the same namespace)
            hits.append((o.steps[bad[0]], "loss" not in o.key.rsplit("/", 1)[-1].lower(), o.key, o, bad))
    if not hits:
        return
    *_, o, bad = min(hits, key=lambda h: h[:3])
    i = int(bad[0])
    yield ctx.finding(
        f"a loss term ({o.key}) is non-finite from step {step(o.steps[i])}",
        f"{bad.size} of {len(o)} logged values of {o.key} are non-finite; the first is at step {step(o.steps[i])} "
        f"(line {int(o.lines[i])}). The run logs no single loss (its terms are separate networks'), so this term "
        "is read on its own.",
        {"first_step": o.steps[i], "count": int(bad.size), "points": len(o), "also_nonfinite": [], "key": o.key},
        step=o.steps[i],
        line=o.lines[i],
    )


def _stopped_on_nonfinite(ctx, s):
    """TP-NAN's finding from the reader's ``nonfinite_stop`` meta (the capture's line where
    the program says it stopped on a non-finite loss), placed after the last logged loss
    before that line."""
    stop = ctx.run.meta.get("nonfinite_stop")
    if not isinstance(stop, dict) or not isinstance(stop.get("line"), int):
        return
    before = np.flatnonzero(s.lines < stop["line"])
    if before.size == 0:
        return
    i = int(before[-1])
    at = s.steps[i]
    yield ctx.finding(
        f"training stopped on a non-finite loss after step {step(at)}",
        f"line {stop['line']} says so: {stop.get('message', '')!s}; every logged loss ({s.key}) is finite, "
        f"the last one before that line {num(s.values[i])} at step {step(at)}: the program stops at the first "
        "non-finite loss without logging it.",
        {"first_step": None, "count": 0, "points": len(s), "also_nonfinite": [], "stop_line": stop["line"]},
        step=at,
        line=stop["line"],
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
    implies=("TP-NO-PROGRESS-SIGNED",),
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
    thresholds=["zero_min_points", "zero_fitted_share", "zero_fitted_abs", "zero_mixed_level", "zero_mixed_share"],
    least_evidence="At least 5 trailing losses exactly 0.0 after positive ones.",
    detects="A loss that was positive earlier in the run and is exactly 0.0 on the last 5 or more logged points.",
    why="A sudden exact zero is almost always a NaN hidden by the logger (HF's logging_nan_inf_filter averages over a window of NaNs to exactly 0.0) or a batch pipeline that stopped producing labels.",
    not_mean="It does not mean the model converged: convergence approaches zero, it does not land on it from an ordinary level; a loss whose last positive values were already at {zero_fitted_share:g} of its start or below underflowed to 0 (TP-ZERO-LOSS-FITTED, a WARN), and a margin loss (a key naming triplet, hinge or margin, or a hinge the live monitor read in the loss's graph) is exactly 0 whenever every example meets its margin, which this does not judge.",
    causes="NaN losses replaced by 0 in the logger, labels that became fully masked (a truncation or packing bug), a data loader that started yielding empty batches.",
    try_="Look at the gradient norm from the onset step (NaN there confirms a hidden NaN); rerun with logging_nan_inf_filter=False to see the true loss; resume from a checkpoint before the onset with a lower learning rate.",
    objectives=("supervised",),
    implies=("TP-NO-PROGRESS-SIGNED",),
)
def check_zero_loss_onset(ctx):
    s = ctx.finite("loss")
    run = trailing_zero_run(s.values, ctx.th.zero_min_points)
    if run is None:
        return
    start, length = run[0], len(s) - run[0]
    if margin_objective(ctx.run):
        return  # a margin loss lands on 0 when every example meets its margin
    if zero_loss_fitted(ctx) is not None:
        return  # fitted to float precision: TP-ZERO-LOSS-FITTED's
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


def _margin_met(ctx) -> dict | None:
    """For a margin loss: its trailing run of at least ``zero_min_points`` exact zeros after
    positive values, read as :func:`~trainproof.rules._shared.zero_loss_fitted` reads an
    underflow (``how`` ``"margin"``), or ``None``."""
    run = trailing_zero_run(ctx.finite("loss").values, ctx.th.zero_min_points)
    if run is None:
        return None
    onset, start, before = run
    return {"start": start, "before": before, "onset": onset, "how": "margin"}


@rule(
    "TP-ZERO-LOSS-FITTED",
    Level.WARN,
    "zero",
    "the loss fell to float precision, then exactly 0.0 to the end",
    needs=[Need("loss", "zero_min_points")],
    thresholds=["zero_min_points", "zero_fitted_share", "zero_fitted_abs", "zero_mixed_level", "zero_mixed_share"],
    least_evidence="At least {zero_min_points} trailing losses exactly 0.0 after positive ones whose last values (median of up to 3) are at most {zero_fitted_share:g} of the starting level and {zero_fitted_abs:g}, or after zeros that came and went (on {zero_mixed_share:.0%} of the points since the first) among positives under {zero_mixed_level:.0%} of it; no non-finite gradient norm over the zeros.",
    detects="TP-ZERO-LOSS-ONSET's condition (a loss exactly 0.0 on its last {zero_min_points} or more points after positive ones) where the positive losses just before the zeros (median of up to 3) are at most {zero_fitted_share:g} of the run's starting level (median of its first 3 positive points) and at most {zero_fitted_abs:g} (a float32 batch loss rounds to 0 only from there), or where exact zeros already came and went before the trailing run, on at least {zero_mixed_share:.0%} of the points since the first, among positive losses whose median is under {zero_mixed_level:.0%} of that start (batches every example fits exactly: a hinge or triplet loss at its margin, easy batches), and no gradient norm logged over the zeros is NaN or Inf: the loss fitted its data to float precision.",
    why="A loss averaged over a batch is exactly 0.0 once every example is fitted to the last bit of float precision: a float32 cross-entropy reaches it when every margin passes about 17 nats. The model learned its training data perfectly, which is as often a label leak, a duplicated split or a task too easy as a success; the rest of the run changes nothing.",
    not_mean="It is not a hidden NaN or a fully masked batch: those zero a loss from an ordinary level (TP-ZERO-LOSS-ONSET, a FAIL), and a non-finite gradient norm over the zeros keeps it that. A margin loss (a key naming triplet, hinge or margin, or a hinge the live monitor read in the loss's graph) that ends on exact zeros is read the same, from any level: every example meets its margin.",
    causes="An easy or separable task (a few well-separated classes), labels visible in the inputs (a leak), the evaluation data in the training set, a model far larger than the data.",
    try_="Check the held-out loss and accuracy: perfect there too on a hard task means a leak; otherwise stop the run earlier (early stopping) or make the task harder.",
    objectives=("supervised",),
    implies=("TP-NO-PROGRESS-SIGNED",),
)
def check_zero_loss_fitted(ctx):
    fit = zero_loss_fitted(ctx)
    margin = margin_objective(ctx.run)
    if fit is None and margin:
        # a margin loss that ends on zeros from a higher level: every example met its margin
        fit = _margin_met(ctx)
    if fit is None:
        return
    s = ctx.finite("loss")
    i = fit["onset"]
    length = len(s) - i
    clause, gdata = _grad_clause(ctx, s.steps[i:])
    if fit["how"] == "underflow":
        before = f"the positive losses just before were {num(fit['before'])} (median of up to 3)"
    elif fit["how"] == "margin":
        before = f"a margin loss ({margin}): every example of every batch meets its margin, from {num(fit['before'])}"
    else:
        before = (
            f"exact zeros came and went before, among positive losses of median {num(fit['before'])} "
            "(batches every example fits exactly)"
        )
    yield ctx.finding(
        f"the loss fell to {num(fit['before'])} and then to exactly 0.0 at step {step(s.steps[i])}: fitted to "
        "float precision",
        f"the last {length} of {len(s)} finite losses are exactly 0.0, from step {step(s.steps[i])} (line "
        f"{int(s.lines[i])}); {before}, {num(fit['before'] / fit['start'])} of the starting level "
        f"{num(fit['start'])}." + clause,
        {
            "onset_step": s.steps[i],
            "zero_points": length,
            "points": len(s),
            "loss_before": fit["before"],
            "start_level": fit["start"],
            "read": fit["how"],
            **gdata,
        },
        step=s.steps[i],
        line=s.lines[i],
    )


@rule(
    "TP-ZERO-LOSS-MIXED",
    Level.FAIL,
    "zero",
    "exact 0.0 losses mixed among ordinary ones",
    needs=[Need("loss", "zero_min_points")],
    thresholds=["zero_min_points", "zero_mixed_share", "zero_mixed_level", "zero_fitted_abs", "zero_margin_tail"],
    least_evidence="At least {zero_min_points} exact zeros that are also at least {zero_mixed_share:.0%} of the points, among positive losses at least {zero_mixed_level:.0%} of the starting level and above {zero_fitted_abs:g}, whose low tail stays away from 0 (10th percentile above {zero_margin_tail:.0%} of their running median).",
    detects=(
        "At least {zero_min_points} finite losses, and at least {zero_mixed_share:.0%} of them, are exactly "
        "0.0, the run does not end on a run of zeros (TP-ZERO-LOSS-ONSET's), and the positive losses logged "
        "from the first zero on have a median of at least {zero_mixed_level:.0%} of the run's starting level "
        "(median of its first 3 positive losses) and is above {zero_fitted_abs:g}, where a batch's float32 loss "
        "cannot round to 0, and whose 10th percentile, each taken against the median of the 9 positives "
        "around it, is above {zero_margin_tail:.0%}: the zeros do not continue the losses' own low tail."
    ),
    why=(
        "A loss averaged over a batch is exactly 0.0 only when every example in it is fitted to the last bit; "
        "batches at 0.0 interleaved with batches at the run's ordinary level mean the loss is not computed on "
        "anything for those batches (every label masked, an empty batch) or a NaN is being replaced by 0."
    ),
    not_mean=(
        "A classifier that has converged can log exact zeros once its losses are tiny (float saturation); those "
        "zeros sit among losses far below the starting level and do not trigger this. Nor does a margin loss (a "
        "key naming triplet, hinge or margin, or the monitor's reading of a hinge in the loss's graph): it is "
        "exactly 0 on every batch whose examples all meet the margin, among batches at its ordinary level. A "
        "margin loss under another name is told by its shape: its positive batch means run down toward 0 (a "
        "batch where one example misses the margin by a little), where zeros that replace an ordinary loss "
        "stand apart from positives at their level."
    ),
    causes="Batches whose labels are all the ignore index (-100) after truncation or packing, empty batches from a sampler, a logging filter that writes 0 for NaN, a loss that returns 0 on an exception path.",
    try_="Log the number of unmasked label tokens per batch; look at the batches of the zero steps; rerun with the NaN filter off to see the true values.",
    objectives=("supervised",),
    implies=("TP-NO-PROGRESS-SIGNED",),
)
def check_zero_loss_mixed(ctx):
    th = ctx.th
    s = ctx.finite("loss")
    v = s.values
    zero = v == 0
    count = int(zero.sum())
    if count < th.zero_min_points or count < th.zero_mixed_share * v.size or zero.all():
        return
    if trailing_zero_run(v, th.zero_min_points) is not None:
        return  # a run that ends on zeros: TP-ZERO-LOSS-ONSET's (one last zero is still a mix)
    if margin_objective(ctx.run):
        return  # a margin loss is exactly 0 on every batch whose examples all meet the margin
    first_zero = int(np.argmax(zero))
    # the first 3 positive losses: a loss that falls within a few logs (a separable task)
    # has left its start by the fifth, and zeros there are no level
    head = v[v > 0][:3]
    start = float(median(head)) if head.size else 0.0
    after = v[first_zero:]
    pos = after[after > 0]
    if start <= 0 or pos.size == 0 or float(median(pos)) < th.zero_mixed_level * start:
        return
    if float(median(pos)) <= th.zero_fitted_abs:
        # positives at float precision are no ordinary level: a batch mean that small is
        # exactly 0 whenever every example of the batch is fitted (an easy task, small batches)
        return
    if zeros_continue_the_tail(pos, th.zero_margin_tail):
        return  # a margin loss under another name (thresholds.zero_margin_tail)
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
#: Words of a loss key that name a regression's error.
REGRESSION_WORDS = frozenset({"mse", "mae", "rmse", "l1", "l2", "huber", "smoothl1"})
NONNEGATIVE_WORDS = (
    frozenset({"ce", "xent", "crossentropy", "logloss", "bce", "ctc", "perplexity", "ppl"}) | REGRESSION_WORDS
)


def nonnegative_objective(run) -> str | None:
    """Why the run's train loss cannot be negative, read from the log, or ``None``.

    The loss key's words name a cross-entropy, squared/absolute error or CTC loss
    (:data:`NONNEGATIVE_WORDS`, after splitting ``CamelCase``, ``/``, ``_``, ``-``, ``.`` and
    spaces), or the log also carries a perplexity (``perplexity``, ``ppl``) that is exp of
    its train or eval loss (:func:`_perplexity_of_a_loss`): exp(cross-entropy).
    """
    s = run.series.get("loss")
    if s is None:
        return None
    low = s.key.lower().replace("_", "").replace("-", "")
    hit = (set(words(s.key)) & NONNEGATIVE_WORDS) or {w for w in ("crossentropy", "logloss") if w in low}
    if hit:
        return f"its key {s.key!r} names a {sorted(hit)[0]} loss, which cannot be negative"
    for other in run.series.values():
        if set(words(other.key)) & {"perplexity", "ppl"} and _perplexity_of_a_loss(run, other):
            return f"the log carries a perplexity ({other.key}), exp of a cross-entropy, which cannot be negative"
    return None


#: How closely the log of a perplexity must track a logged loss, in nats (median absolute
#: difference over the steps both are logged at), for the perplexity to be that loss's:
#: exp(loss) printed to 4 significant digits is within 1e-3 nats; 0.05 leaves room for a
#: perplexity computed from a running mean over the logging interval and no more.
PERPLEXITY_MATCH_NATS = 0.05


def _perplexity_of_a_loss(run, ppl) -> bool:
    """Whether the perplexity series ``ppl`` is the loss's: exp (or 2 to the power) of the
    train or eval loss, or of its negation (a sign-flipped loss beside the perplexity of the
    true cross-entropy), within :data:`PERPLEXITY_MATCH_NATS` at the steps both are logged
    at. Only then does it say the objective is a cross-entropy: the perplexity of something
    else says nothing of the loss's sign, whatever its key (a VQ model logs its codebook's
    usage as ``perplexity``, 30-430, beside a likelihood loss negative by design)."""
    p = ppl.values
    ok = np.isfinite(p) & (p > 0)
    if not ok.any():
        return False
    steps, logp = ppl.steps[ok], np.log(p[ok])
    for name in ("loss", "eval_loss"):
        s = run.series.get(name)
        if s is None:
            continue
        fin = np.isfinite(s.values)
        i, j = common_steps(steps, s.steps[fin])
        a, b = logp[i], np.abs(s.values[fin][j])
        if not a.size:
            continue
        for scale in (1.0, math.log(2)):
            if float(median(np.abs(a - scale * b))) <= PERPLEXITY_MATCH_NATS:
                return True
    return False


@rule(
    "TP-NEGATIVE-LOSS",
    Level.FAIL,
    "zero",
    "a loss that cannot be negative is negative",
    needs=[Need("loss", 1)],
    thresholds=["negative_loss_tol"],
    least_evidence="One loss below -1e-6, in a run whose log says its objective cannot be negative (the loss key names a cross-entropy, squared or absolute error or CTC loss, or a perplexity of the loss is logged).",
    detects=(
        "A finite train loss below -1e-6 in a run whose objective cannot be negative, as the log tells it: the "
        "loss key's words name a cross-entropy (ce, xent, CrossEntropyLoss, logloss, bce), a squared or absolute "
        "error (mse, mae, rmse, l1, l2, huber), a CTC loss or a perplexity, or the log also logs a perplexity that "
        "is exp (or 2 to the power) of the train or eval loss, or of their negation, within 0.05 nats at the steps "
        "both are logged at (the perplexity of something else, a VQ codebook's usage logged as perplexity, says "
        "nothing of the loss)."
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


#: Words in a loss key that name a difference of terms, which may sit at zero and take
#: both signs by design (a GAN's critic, an adversarial or contrastive margin).
SIGNED_WORDS = frozenset({"gan", "adv", "adversarial", "disc", "discriminator", "critic", "wasserstein", "margin"})
#: Words in a loss key that name a likelihood: the negative log-likelihood of a continuous
#: density may settle at zero and take both signs there by design (a Gaussian NLL,
#: 0.5 (ln sigma^2 + r^2 / sigma^2), is 0 where the residual variance is 1/e; helper 62's
#: ``gaussian_nll`` and ``nll`` at their floor FAILed TP-LOSS-AT-ZERO). ``nll`` alone may
#: also be a classifier's, which cannot be negative: the key cannot tell, so no FAIL.
LIKELIHOOD_WORDS = frozenset({"nll", "nelbo", "elbo", "likelihood", "loglik", "logprob", "gaussian", "gauss"})


@rule(
    "TP-LOSS-AT-ZERO",
    Level.FAIL,
    "zero",
    "a supervised loss collapsed onto zero and takes both signs",
    needs=[Need("loss", "min_trend_points")],
    thresholds=["min_trend_points", "zero_min_points", "negative_loss_tol", "zero_collapse_share"],
    least_evidence="A start level above 0; the last 40% of the run at a median magnitude under {zero_collapse_share:g} of it; at least {zero_min_points} of those points below -{negative_loss_tol:g}.",
    detects=(
        "A supervised train loss that started above 0 (the median of its first 5% of points, at least 3) and whose "
        "last 40% of points (at least {zero_min_points}) sit around zero: their median magnitude under "
        "{zero_collapse_share:g} of the start level, with at least {zero_min_points} of them below "
        "-{negative_loss_tol:g}. The key must not name a difference of terms (GAN, adversarial, critic, margin) nor "
        "a likelihood (nll, elbo, likelihood, gaussian: a continuous density's NLL settles at zero with both signs)."
    ),
    why=(
        "A loss that is noise around exactly zero with both signs is no longer a sum of positive terms computed on "
        "data: a cross-entropy or a squared error cannot be negative, and a signed objective does not fall three "
        "orders of magnitude onto 0 and stay there. The logger's rounding (HF rounds to 4 decimals) hides the "
        "collapse behind values like -0.0001."
    ),
    not_mean=(
        "A tiny but positive loss of a task fitted to the last example is not this (no negative values), nor an RL "
        "or preference objective (judged by its own rules), nor a GAN's critic."
    ),
    causes="Every label masked to the ignore index, a loss computed on padding only, label leakage into the inputs, a loss term subtracted instead of added that cancels the rest.",
    try_="Count the unmasked label tokens of a batch from the collapse step on; check that the labels are not visible to the model; log each loss term on its own.",
    objectives=("supervised",),
)
def check_loss_at_zero(ctx):
    th = ctx.th
    s = ctx.finite("loss")
    if set(words(s.key)) & (SIGNED_WORDS | LIKELIHOOD_WORDS):
        return
    v = s.values
    n = v.size
    start = float(median(v[: max(3, n // 20)]))
    tail = v[-max(th.zero_min_points, int(0.4 * n)) :]
    if not start > 0 or tail.size < th.zero_min_points:
        return
    neg = int((tail < -th.negative_loss_tol).sum())
    mag = float(median(np.abs(tail)))
    if neg < th.zero_min_points or mag > th.zero_collapse_share * start:
        return
    i0 = n - tail.size
    yield ctx.finding(
        f"loss collapsed onto zero: it fell from {num(start)} to {num(mag)} in magnitude and goes negative",
        f"the median of the first {max(3, n // 20)} losses ({s.key}) is {num(start)}; the last {tail.size} "
        f"(steps {step(s.steps[i0])}–{step(s.steps[-1])}) have a median magnitude of {num(mag)} "
        f"({num(mag / start)} of the start, under {num(th.zero_collapse_share)}) and {neg} of them are below "
        f"-{num(th.negative_loss_tol)} (minimum {num(float(tail.min()))}).",
        {"start_level": start, "tail_points": int(tail.size), "tail_magnitude": mag, "negative_points": neg},
        step=s.steps[i0],
        line=s.lines[i0],
    )


def _hump_bar(ctx, v: np.ndarray) -> tuple[float, float]:
    """``(end, bar)`` of a loss ``v`` (finite, first value positive) for the blow-up
    readings: its end level (the median of its last 10%, at least 3 points) and the bar a
    blow-up from the first point rises above, ``blowup_hump_factor`` x the larger of the
    first loss and that end (a first log that noise drew low is no level to blow up from:
    a healthy run at its floor under 50% noise has block medians 3x a low first point)."""
    end = float(median(v[-max(3, v.size // 10) :]))
    return end, ctx.th.blowup_hump_factor * max(float(v[0]), end)


def blowup_no_gain(ctx) -> dict | None:
    """The numbers of a loss that blew up from its first point and came back no lower
    than it started, or ``None``: the block medians (:func:`smoothing_block`) rose to at
    least ``blowup_hump_factor`` x both the first logged loss and the end of the run (the
    median of its last 10%, at least 3 points: a hump it came down from, not a loss that
    held high, which is TP-DIVERGE's), at least ``blowup_hump_share`` of the points (5 or
    more) sit above that bar, and the end is no more than ``dead_min_improvement`` below
    the first loss. Not where a logged schedule of the objective moved (a stage, a size,
    a weight: the start measured something else), nor where the climb from the first point
    has the shape of a running average started at zero filling up (:func:`_average_filling_up`)."""
    th = ctx.th
    s = ctx.finite("loss")
    v = s.values
    n = v.size
    first = float(v[0])
    if not first > 0:
        return None
    meds, _ = block_medians(v, smoothing_block(n))
    if not meds.size:
        return None
    peak = float(np.max(meds))
    end, bar = _hump_bar(ctx, v)
    above = int(np.count_nonzero(v > bar))
    if peak < bar or above < max(5, th.blowup_hump_share * n):
        return None
    if end < first * (1 - th.dead_min_improvement):
        return None
    if objective_schedule(ctx, float(s.steps[0]), peak / first) is not None:
        return None
    # a running average started at zero fills up from a first log of (1 - b) x the loss
    # and falls with the run: no blow-up, its first log no start (TP-DIVERGE reads it so)
    if _average_filling_up(v, s.steps, th.average_fill_slack) is not None:
        return None
    onset = int(np.flatnonzero(v > bar)[0])
    return {"s": s, "first": first, "peak": peak, "above": above, "end": end, "bar": bar, "onset": onset}


@rule(
    "TP-BLOWUP-NO-GAIN",
    Level.WARN,
    "diverge",
    "the loss blew up from its start and came back no lower than it started: the run learned nothing",
    needs=[Need("loss", "min_trend_points", positive=True, all_finite=True)],
    thresholds=[
        "min_trend_points",
        "blowup_hump_factor",
        "blowup_hump_share",
        "dead_min_improvement",
        "average_fill_slack",
    ],
    implies=("TP-LOSS-SPIKE", "TP-LOSS-STALLED", "TP-LOSS-CLIMB", "TP-NEAR-CHANCE"),
    # a loss that blew up and also held a level above its best is TP-DIVERGE's, which names where
    implied_by=("TP-DIVERGE",),
    detects=(
        "The train loss rose to at least {blowup_hump_factor:g}x its first logged value and its end level (the median "
        "of its last 10%) (a block median, 5% of the run), with at least {blowup_hump_share:.0%} of its points above "
        "that bar, and came back: the end no more than {dead_min_improvement:.0%} below the first loss. Not where "
        "a logged schedule of the objective moved (a stage, an example size, a loss-term weight), nor where the climb "
        "from the first point is a running average started at zero filling up (concave, at most "
        "{average_fill_slack:g}x (steps + 1) at its second point)."
    ),
    why=(
        "A run that blows up and settles back at the loss it started from has spent its whole run and is no "
        "better than its initialisation: the weights were wrecked and what it re-learned got it back to where a "
        "guessing model starts (a language model at ln of its vocabulary, a classifier at ln k). A healthy run "
        "that spikes early ends far below its first loss; one that climbs and holds is TP-DIVERGE's."
    ),
    not_mean=(
        "A spike the run recovers from and then improves on (TP-LOSS-SPIKE), a warm-up bump in a run that ends below "
        "its start, or a change of what the loss measures that the log names. It is a warning, not a FAIL: a loss "
        "logged as a running average started at zero climbs from a first log of (1 - b) x the loss and can end "
        "above it after a healthy run; where the climb has that average's smooth concave shape it is not read at "
        "all, but a noisy one cannot be told apart."
    ),
    causes="A learning rate far too high from the first step (Adam at 0.5, SGD at 10), no warm-up, no gradient clipping, fp16 overflow; the network's units died in the blow-up (dead ReLUs), so it ends at a constant guess.",
    try_="Restart with a learning rate 10x lower and a warm-up, enable gradient clipping (max_grad_norm 1.0); check the first 50 steps' loss and gradient norm.",
    objectives=("supervised",),
)
def check_blowup_no_gain(ctx):
    st = blowup_no_gain(ctx)
    if st is None:
        return
    s, i = st["s"], st["onset"]
    yield ctx.finding(
        f"the loss blew up to {num(st['peak'])} ({times(st['peak'] / st['first'])} its first value {num(st['first'])}) "
        f"and came back only to {num(st['end'])}: no lower than it started",
        f"{st['above']} of {len(s)} losses are above {num(st['bar'])} ({times(ctx.th.blowup_hump_factor)} the first loss "
        f"{num(st['first'])}), the first at step {step(s.steps[i])} (line {int(s.lines[i])}); the highest block median "
        f"is {num(st['peak'])}, and the run ends at {num(st['end'])} (median of its last 10%), "
        f"{pct(st['end'] / st['first'] - 1) if st['end'] >= st['first'] else '-' + pct(1 - st['end'] / st['first'])} "
        "against its first loss: it never got better than its initialisation.",
        {
            "first": st["first"],
            "peak": st["peak"],
            "end": st["end"],
            "points_above": st["above"],
            "onset_step": float(s.steps[i]),
        },
        step=s.steps[i],
        line=s.lines[i],
    )


def blowup_ends_high(ctx) -> dict | None:
    """The numbers of a loss that blew up from its first point by orders of magnitude and
    ends above where it started, or ``None``. The blow-up: at least ``blowup_points``
    losses ``blowup_wreck_factor`` x above both the first loss and the level the run ends
    at, however short (six steps at SGD lr 50 wreck a model as surely as a third of the
    run). The level: the median of the losses after the last one above
    ``blowup_hump_factor`` x the larger of the first loss and the end (the median of the
    last 10%, as :func:`blowup_no_gain` reads a hump), at least ``diverge_level_points`` of
    them, at least ``diverge_ratio`` x the first loss and more than ``diverge_noise_z``
    sigmas above it. Sigma is :func:`noise_sigma` of the log of those losses only: the
    blow-up's own swings (1e19 beside 10) say nothing about how far noise throws a point of
    the level the run came back to. Not where a logged schedule of the objective moved
    after the first point, nor where the climb from it has the shape of a running average
    started at zero filling up. Returns ``s``, ``first``, ``peak`` (the highest loss),
    ``above`` (the losses above the wreck bar ``bar``), ``onset`` (the first of them),
    ``level``, ``tail_points``, ``sigma`` and ``tail_start`` (indices)."""
    th = ctx.th
    s = ctx.finite("loss")
    v = s.values
    first = float(v[0])
    if not first > 0:
        return None
    _, hump_bar = _hump_bar(ctx, v)
    hump = np.flatnonzero(v > hump_bar)
    if hump.size < th.blowup_points:
        return None
    after = int(hump[-1]) + 1
    tail = v[after:]
    m = tail.size
    if m < max(3, th.diverge_level_points):
        return None
    level = float(median(tail))
    bar = th.blowup_wreck_factor * max(first, level)
    wrecked = np.flatnonzero(v > bar)
    if wrecked.size < th.blowup_points:
        return None
    sigma = noise_sigma(np.log(tail))
    # the first loss is one point with the tail's noise; the level, a median of m of them
    if level < th.diverge_ratio * first or math.log(level / first) <= th.diverge_noise_z * math.hypot(
        sigma, level_se(sigma, m)
    ):
        return None
    peak = float(np.max(v))
    if objective_schedule(ctx, float(s.steps[0]), peak / first) is not None:
        return None
    if _average_filling_up(v, s.steps, th.average_fill_slack) is not None:
        return None
    return {
        "s": s,
        "first": first,
        "peak": peak,
        "above": int(wrecked.size),
        "bar": bar,
        "onset": int(wrecked[0]),
        "level": level,
        "tail_points": m,
        "sigma": sigma,
        "tail_start": after,
        "hump_bar": hump_bar,
    }


@rule(
    "TP-BLOWUP-ENDS-HIGH",
    Level.FAIL,
    "diverge",
    "the loss blew up by orders of magnitude from its start and ends above where it started",
    needs=[Need("loss", "min_trend_points", positive=True, all_finite=True)],
    thresholds=[
        "min_trend_points",
        "blowup_hump_factor",
        "blowup_points",
        "average_fill_slack",
        "blowup_wreck_factor",
        "diverge_level_points",
        "diverge_ratio",
        "diverge_noise_z",
    ],
    least_evidence=(
        "At least {blowup_points} losses {blowup_wreck_factor:g}x above both the first loss and the level the run "
        "ends at, and at least {diverge_level_points} losses after the last one above {blowup_hump_factor:g}x the "
        "first loss and the end."
    ),
    implies=("TP-BLOWUP-NO-GAIN", "TP-LOSS-SPIKE", "TP-LOSS-STALLED", "TP-LOSS-CLIMB", "TP-NEAR-CHANCE"),
    # a level held above the best is TP-DIVERGE's; blow-ups that recur late are TP-LOSS-BLOWUPS'
    implied_by=("TP-DIVERGE", "TP-LOSS-BLOWUPS"),
    detects=(
        "A blow-up of a size no healthy run makes: at least {blowup_points} losses {blowup_wreck_factor:g}x above "
        "both the first logged loss and the level the run ends at, however few steps it lasted. The level: the "
        "median of the losses after the last one above {blowup_hump_factor:g}x the larger of the first loss and the "
        "end (the median of the last 10%), at least {diverge_level_points} of them, at least {diverge_ratio:g}x the "
        "first loss and more than {diverge_noise_z:g} sigmas above it, the sigma read from those losses alone "
        "(robust point-to-point noise of their log): the run came back down from the blow-up but not to where it "
        "started. Not where a logged schedule of the objective moved after the first point (a loss-term weight, a "
        "stage, an example size), nor where the climb from the first point is a running average started at zero "
        "filling up (concave, at most {average_fill_slack:g}x (steps + 1) at its second point)."
    ),
    why=(
        "Losses a thousandfold above the start, for however few steps, mean the weights were wrecked (an "
        "exploding step, overflow); a run that then settles above its untrained start is worse than its "
        "initialisation after spending its whole budget. The blow-up's swings would swamp any noise read over "
        "the whole run, so the comparison with the first loss uses the noise of the level the run came back to."
    ),
    not_mean=(
        "Healthy shapes nearest to it: a warm-up bump or an early spike the run learns past (it ends below its "
        "start), a blow-up the run recovers from to its first level or below (TP-BLOWUP-NO-GAIN's WARN at most), "
        "a running average started at zero filling up (it climbs at most 1/(1 - b) and stays at the loss's "
        "level), a loss whose objective changed as logged (a loss-term weight ramped up), a running sum that "
        "resets each epoch (its end is no thousandth of its top), and a first log drawn low by noise (the end must "
        "stand above it by {diverge_noise_z:g} sigmas of the level's own noise)."
    ),
    causes="A learning rate far too high from the first step (SGD at 10-30, Adam at 0.5+), no gradient clipping, fp16 overflow without a loss scaler; the units that died in the blow-up leave the model at a worse constant guess.",
    try_="Restart from scratch with a learning rate 10-100x lower, a warm-up and gradient clipping (max_grad_norm 1.0); check the first 10 steps' loss and gradient norm before a long run.",
    objectives=("supervised",),
)
def check_blowup_ends_high(ctx):
    st = blowup_ends_high(ctx)
    if st is None:
        return
    s, i, t = st["s"], st["onset"], st["tail_start"]
    yield ctx.finding(
        f"the loss blew up to {num(st['peak'])} ({times(st['peak'] / st['first'])} its first value "
        f"{num(st['first'])}) and ends at {num(st['level'])}, {times(st['level'] / st['first'])} where it started",
        f"{st['above']} of {len(s)} losses are above {num(st['bar'])} ({times(ctx.th.blowup_wreck_factor)} the "
        f"larger of the first loss and the level the run ends at), the first at step {step(s.steps[i])} (line "
        f"{int(s.lines[i])}), the highest {num(st['peak'])}; the {st['tail_points']} losses after the last one above "
        f"{num(st['hump_bar'])} (steps {step(s.steps[t])}–{step(s.steps[-1])}) hold a median of {num(st['level'])}, "
        f"{num(math.log(st['level'] / st['first']))} nats above the first loss {num(st['first'])} against a "
        f"point noise of {num(st['sigma'])} nats there: the run came back from the blow-up but not to its start.",
        {
            "first": st["first"],
            "peak": st["peak"],
            "level": st["level"],
            "tail_points": st["tail_points"],
            "noise_sigma": st["sigma"],
            "onset_step": float(s.steps[i]),
        },
        step=s.steps[i],
        line=s.lines[i],
    )


@rule(
    "TP-LOSS-BLOWUPS",
    Level.FAIL,
    "diverge",
    "the loss keeps blowing up far above where the run started",
    needs=[Need("loss", "min_trend_points", positive=True, all_finite=True)],
    thresholds=[
        "min_trend_points",
        "blowup_share",
        "blowup_bursts",
        "spike_excursion_factor",
        "diverge_start_points",
        "diverge_noise_z",
        "fitted_loss_level",
        "objective_weight_rise",
    ],
    implies=("TP-LOSS-SPIKE",),
    # A late half that climbed to a level and held it is TP-DIVERGE's, which names where.
    implied_by=("TP-DIVERGE",),
    least_evidence="At least {min_trend_points} losses; in the second half of the run at least {blowup_share:.0%} of the points (and 5 or more), in at least {blowup_bursts} separate bursts, above {spike_excursion_factor:g}x the starting level.",
    detects=(
        "In the second half of the run, at least {blowup_share:.0%} of the losses (5 or more), in at least "
        "{blowup_bursts} separate bursts, are more than "
        "{spike_excursion_factor:g}x the run's starting level (the higher of the median of its first "
        "{diverge_start_points} points and of its first block, 5% of the run), and more than {diverge_noise_z:g} "
        "sigmas of the late losses' own spread above it (read in the log from their 5th to 25th percentile, "
        "which blow-ups above do not reach: a fitted classifier's batches spread over orders of magnitude), and "
        "above {spike_excursion_factor:g}x {fitted_loss_level:g} (a start at a fitted level is no untrained level): "
        "a loss that blows up again and "
        "again, however often it comes back in between. Where TP-DIVERGE fires (a level the run climbed to and "
        "held), it is listed under it. Not where a logged schedule of the objective moved after the first point "
        "(a loss-term weight or a never-falling noise level that climbed {objective_weight_rise}x, a stage that "
        "changed): the starting level then measured something else."
    ),
    why=(
        "A spike that comes back is a warning; a loss that sits tenfold above where the untrained model "
        "started on a large share of the late run has not been learning for a long time. Its median can "
        "still look ordinary (half the batches at 1.1, half at 1e15), which the level rules read."
    ),
    not_mean=(
        "Isolated spikes, however large, that the run comes back from (TP-LOSS-SPIKE, a WARN: healthy runs "
        "spike on a few percent of their points at most), and a loss above its start only in its first half "
        "(a warm-up bump) are not this."
    ),
    causes="A learning rate far too high (SGD at 20), no gradient clipping, fp16 overflow feeding back into the weights, replicas of a data-parallel run that diverged apart.",
    try_="Restart from scratch or from the last checkpoint before the first blow-up with a learning rate 10x lower, gradient clipping (max_grad_norm 1.0) and a warm-up.",
    objectives=("supervised",),
)
def check_loss_blowups(ctx):
    th = ctx.th
    s = ctx.finite("loss")
    v = s.values
    n = v.size
    k = max(1, int(th.diverge_start_points))
    meds, _ = block_medians(v, smoothing_block(n))
    start = max(float(median(v[:k])), float(meds[0]))
    late = v[n // 2 :]
    # Tenfold, and beyond the spread of the late losses' ordinary points: a loss whose single
    # batches spread over orders of magnitude (a fitted classifier's 1e-7 to 1e-4) is ten
    # times its median on many points without blowing up. The spread is read from the lower
    # quarter of the late losses (their 5th to 25th percentile of the log, a standard
    # normal's 0.971 sigmas apart), which blow-ups above do not reach while they are under
    # 75% of the points.
    logs = np.log(late)
    spread = (float(quantile(logs, 0.25)) - float(quantile(logs, 0.05))) / 0.971
    # (capped below float overflow: a configured z of 1e300 asks for no blow-up to count)
    factor = max(th.spike_excursion_factor, math.exp(min(th.diverge_noise_z * spread, 700.0)))
    # A start at a fitted level (a resumed converged model, whose restarted optimizer moves
    # it 1e-5 -> 1e-4) shows no untrained level: a blow-up must leave the fitted range too.
    floor = th.spike_excursion_factor * th.fitted_loss_level
    bar = max(factor * start, floor)
    up = late > bar
    count = int(up.sum())
    if count < 5 or count < th.blowup_share * late.size:
        return
    # Again and again: one excursion the run comes back from, however long, is a spike
    # (TP-LOSS-SPIKE reads a blow-up of two orders of magnitude that recovers within a few
    # epochs); this needs at least blowup_bursts separate ones.
    bursts = len(runs_of(up))
    if bursts < th.blowup_bursts:
        return
    # A logged schedule of the objective that moved since the start (a KL weight annealed
    # up, a noise level raised, a new stage) makes the starting level no yardstick.
    if objective_schedule(ctx, float(s.steps[0])) is not None:
        return
    first = n // 2 + int(np.argmax(up))
    peak = float(late.max())
    yield ctx.finding(
        f"the loss blows up again and again: {count} of the last {late.size} losses are over "
        f"{times(factor)} its starting level, up to {num(peak)}",
        f"{count} of the {late.size} losses of the second half (steps {step(s.steps[n // 2])}–{step(s.steps[-1])}), "
        f"in {bursts} separate bursts, are above {num(bar)}, {times(factor)} the starting level {num(start)}"
        + (
            f" ({th.diverge_noise_z:g} sigmas of the late losses' spread, {spread:.2f} in the log)"
            if factor > th.spike_excursion_factor and bar > floor
            else f" ({times(th.spike_excursion_factor)} the fitted level {num(th.fitted_loss_level)}: the run "
            "started at it)"
            if bar == floor and floor > factor * start
            else ""
        )
        + f"; the first at step "
        f"{step(s.steps[first])} (line {int(s.lines[first])}), the largest {num(peak)}, the median of that half "
        f"{num(float(median(late)))}.",
        {
            "count": count,
            "points": int(late.size),
            "bursts": bursts,
            "start_level": start,
            "bar": bar,
            "peak": peak,
            "first_step": float(s.steps[first]),
        },
        step=s.steps[first],
        line=s.lines[first],
    )


def unbounded_run(v: np.ndarray, factor: float, late_factor: float, floor: float) -> dict | None:
    """A loss driven towards minus infinity, or ``None``. ``v``: the finite loss, shape
    ``(n,)``. The end level (median of the last ``w`` = max(3, n // 10) points) must be
    negative and at least ``factor`` times the run's starting scale in magnitude: the
    magnitude of its first logged value (``start_level``; a likelihood loss starts above
    zero and crosses it on its way down), at least ``floor`` (in the loss's units: a start
    near zero, or a first value drawn there by noise, is no scale).
    The loss must also still be running away: the end at least ``late_factor`` times the
    median magnitude of the middle ``w`` points, so that one that settled is not this.

    Returns ``{"start_level", "end_level", "factor", "scale", "crossed", "window"}``."""
    n = v.size
    w = max(3, n // 10)
    end = float(median(v[-w:]))
    if not end < 0:
        return None
    # The level it started at: its first logged value (a runaway's second and third logs,
    # and its first tenth, are far along the climb already: -1.7, -7.6, -13.5 ... -4998),
    # at least the floor (a first value near zero, or drawn there by noise, is no scale).
    crossed = not bool(np.all(v < 0))
    start = float(v[0])
    scale = max(abs(start), floor)
    # still running away: a loss that settled, from however small a start, is not this
    mid = v[max(0, n // 2 - w // 2) : n // 2 - w // 2 + w]
    if not -end >= late_factor * float(median(np.abs(mid))):
        return None
    if not scale > 0 or -end < factor * scale:
        return None
    return {
        "start_level": start,
        "end_level": end,
        "factor": -end / scale,
        "scale": scale,
        "crossed": crossed,
        "window": w,
    }


@rule(
    "TP-LOSS-UNBOUNDED",
    Level.FAIL,
    "diverge",
    "a negative loss grew without bound",
    needs=[Need("loss", "min_trend_points")],
    thresholds=["min_trend_points", "unbounded_factor", "unbounded_late_factor", "unbounded_scale_floor"],
    least_evidence=(
        "The end level negative, at least {unbounded_factor:g}x the start in magnitude and "
        "{unbounded_late_factor:g}x its mid-run level."
    ),
    detects=(
        "A train loss whose end level (median of its last 10%, at least 3 points) is negative, at least "
        "{unbounded_factor:g} times its starting scale in magnitude (its first logged value, at least "
        "{unbounded_scale_floor:g} in the loss's units: a start near zero is no scale) and {unbounded_late_factor:g}x its mid-run level in magnitude (still running away). "
        "An objective that is being driven towards minus infinity."
    ),
    why=(
        "A divergence is a divergence whatever the loss's sign: a negative log-likelihood whose variance collapses, "
        "or a loss unbounded below, runs off to ever larger negative values; the model is exploiting the objective, "
        "not fitting the data. A healthy signed objective settles: it does not grow a thousandfold. A likelihood "
        "loss usually starts above zero and crosses it, so the runaway is sized against the loss's first values, "
        "not its sign at the start."
    ),
    not_mean=(
        "A negative log-likelihood that crosses zero and settles at a negative level is not this (it must grow "
        "{unbounded_factor:g}x its starting scale and still be growing {unbounded_late_factor:g}x over the second "
        "half); nor a runaway that stopped growing over its second half (a staircase held at its last level)."
    ),
    causes="A predicted variance or scale that collapses to zero (log-likelihood of a Gaussian head), a reward maximised with no bound, a sign error that turns a penalty into a bonus, a learning rate far too high.",
    try_="Bound the predicted variance (a floor or softplus with an offset), clip the log-likelihood, check the sign of every term.",
    objectives=("supervised",),
)
def check_loss_unbounded(ctx):
    s = ctx.finite("loss")
    hit = unbounded_run(s.values, ctx.th.unbounded_factor, ctx.th.unbounded_late_factor, ctx.th.unbounded_scale_floor)
    if hit is None:
        return
    start, end, w = hit["start_level"], hit["end_level"], hit["window"]
    how = (
        f"the loss started at {num(start)} (its first logged value) and crossed zero; its starting scale (that "
        f"in magnitude, at least {num(ctx.th.unbounded_scale_floor)}) is {num(hit['scale'])}"
        if hit["crossed"]
        else f"every one of {s.values.size} finite losses is negative; the first is {num(start)} (its starting scale, at least {num(ctx.th.unbounded_scale_floor)}: {num(hit['scale'])})"
    )
    yield ctx.finding(
        f"loss ran off to minus infinity: {num(start)} -> {num(end)} ({times(hit['factor'])} its starting scale)",
        f"{how}; the median of the last {w} ({s.key}) is {num(end)}: {times(hit['factor'])} that in magnitude, at "
        f"least {num(ctx.th.unbounded_factor)}x.",
        {
            "start_level": start,
            "end_level": end,
            "factor": hit["factor"],
            "scale": hit["scale"],
            "crossed": hit["crossed"],
        },
        step=s.steps[-1],
        line=s.lines[-1],
    )


#: The largest lag-1 autocorrelation the signed rules credit: a progress bar's running
#: loss (an EMA with beta 0.95-0.98, fastai's default) is autocorrelated at 0.95 and more,
#: and TP-DIVERGE's cap of 0.9 left its wander looking like a level: healthy running losses
#: of 10,000 points (t(2) batch noise, EMA 0.95, at their floor) FAILed TP-DIVERGE-SIGNED
#: on 6 of 20 seeds at 0.9, on none at 0.99.
SIGNED_AR_CAP = 0.99
#: How many noise gates the fall from the first block to the best must clear before
#: TP-DIVERGE-SIGNED reads a climb as giving it back: at 1, healthy running losses of t(2)
#: batch noise through an EMA of 0.95, at their floor from the start, FAILed 5 of 20 over
#: 1,000 points; at 2, 2 of 20 (a helper's sweep of such runs: 1 of 240 configurations).
SIGNED_FALL_GATES = 2


def signed_levels(ctx) -> dict:
    """The levels of a loss read on its own additive scale, computed once for
    TP-DIVERGE-SIGNED and TP-NO-PROGRESS-SIGNED: ``start`` (the first block's median),
    ``best`` (the lowest block median, at index ``best_idx`` of the finite loss),
    ``end`` (median of the end window of ``w`` points), the point noise ``sigma``
    (:func:`~trainproof.rules._stats.noise_sigma` of the values, not their log, widened
    for autocorrelated noise as TP-DIVERGE widens it) and ``se(points)``, the standard
    error of a level of that many points."""

    def compute():
        s = ctx.finite("loss")
        v = s.values
        n = v.size
        block = smoothing_block(n)
        meds, centres = block_medians(v, block)
        sizes = block_sizes(n, block)
        # As TP-DIVERGE reads it: first differences see only the part of the noise that
        # changes from point to point, and a smoothed loss (an EMA in a progress bar)
        # wanders; the residuals around the block medians give the lag-1 autocorrelation
        # rho, the point noise is sigma / sqrt(1 - rho) and a level's error is widened by
        # the AR(1) factor (from DIVERGE_AR_MIN_POINTS points on).
        rho, infl = 0.0, 1.0
        if n >= DIVERGE_AR_MIN_POINTS:
            rho, infl = ar1_inflation(v - np.interp(np.arange(n), centres, meds), cap=SIGNED_AR_CAP)
        sigma = noise_sigma(v) / math.sqrt(1 - rho)
        j = int(np.argmin(meds))
        w = end_window(n)
        return {
            "s": s,
            "v": v,
            "meds": meds,
            "sizes": sizes,
            "start": float(meds[0]),
            "start_points": int(sizes[0]),
            "j": j,
            "best": float(meds[j]),
            "best_idx": int(centres[j]),
            "best_points": int(sizes[j]),
            "end": float(median(v[-w:])),
            "w": w,
            "sigma": sigma,
            "se": lambda points: level_se(sigma, points) * (infl if points > 1 else 1.0),
        }

    return ctx.memo("signed_levels", compute)


@rule(
    "TP-DIVERGE-SIGNED",
    Level.FAIL,
    "shape",
    "a loss that is negative by design climbs back much of what it learned",
    needs=[Need("loss", "min_trend_points", signed=True, all_finite=True)],
    thresholds=[
        "min_trend_points",
        "diverge_noise_z",
        "signed_regain_share",
        "objective_eval_after",
        "objective_weight_rise",
    ],
    verdict_bearing=True,
    least_evidence="A fall from the first block's level to the best level beyond twice {diverge_noise_z:g} standard errors of the two, and a held climb back of at least {signed_regain_share:.0%} of it, past the noise gate.",
    detects=(
        "For a train loss with values below 0 (a negative log-likelihood of a continuous density, an ELBO), "
        "judged in its own units: the run learned (its best block median sits below its first block's median by more "
        "than twice {diverge_noise_z:g} standard errors of the two, blocks of 5% of the run, the noise read from first "
        "differences of the values and widened for autocorrelation, as a running average's is) and then climbed back: its end level (median of its last 10%, at least 3 points) "
        "is above the best level by at least {signed_regain_share:.0%} of that fall and by more than {diverge_noise_z:g} "
        "standard errors of the two levels (the best also allowed the shift of the lowest of the blocks tied with it), "
        "and the climb is held (from some point after the best, that point and the next two and at least 80% of the "
        "points to the end are above the bar). Not when the log shows that the loss measures something else after its "
        "best level (an eval loss no worse than before the climb, a loss-term weight annealed up, a stage that "
        "changed: see TP-OBJECTIVE-CHANGED)."
    ),
    why="A divergence is a divergence whatever the loss's sign: a negative log-likelihood that gives back half of what "
    "the run learned and stays there has lost its fit, and further steps spend compute undoing damage.",
    not_mean="A positive loss is not judged here (TP-DIVERGE judges it on ratios). A negative NLL that wiggles at its "
    "floor regains a sliver of its fall, and a run that learned nothing beyond its noise has no fall to give back "
    "(TP-NO-PROGRESS-SIGNED speaks of it).",
    causes="A learning rate too high, a predicted variance or scale that collapses and rebounds, no gradient clipping.",
    try_="Resume from the checkpoint at the best step with a lower learning rate or gradient clipping; bound the "
    "predicted variance (a floor or a softplus with an offset).",
    objectives=("supervised",),
)
def check_diverge_signed(ctx):
    L = signed_levels(ctx)
    th, z, se, meds = ctx.th, ctx.th.diverge_noise_z, L["se"], L["meds"]
    fall = L["start"] - L["best"]
    # The run must have learned plainly, twice past the noise gate, before a climb can give
    # it back: a fall barely past the gate is as likely the wander of a heavy-tailed,
    # smoothed loss, whose best block is one shock decaying through the running average.
    if fall <= SIGNED_FALL_GATES * z * math.hypot(se(L["start_points"]), se(L["best_points"])):
        return
    se_best = se(L["best_points"])
    tied = int(np.sum(meds - L["best"] <= z * math.sqrt(2) * se_best))
    gate = z * math.hypot(se_best, se(L["w"])) + expected_min_shift(tied) * se_best
    rise = L["end"] - L["best"]
    need = max(gate, th.signed_regain_share * fall)
    if rise <= need:
        return
    s, v, best_idx = L["s"], L["v"], L["best_idx"]
    onset = held_climb_onset(v, L["best"] + need, best_idx)
    if onset is None:
        return
    reach = reached_step(s.steps, meds, smoothing_block(v.size), L["best"] + need)
    left = left_level_step(s.steps, v, L["best"] + need, best_idx)
    if objective_changed(ctx, float(s.steps[best_idx]), float(s.steps[onset]), reach, left):
        return
    yield ctx.finding(
        f"loss diverged: it climbed back {pct(rise / fall)} of what it learned",
        f"the loss ({s.key}) fell from {num(L['start'])} (median of its first {L['start_points']} points) to "
        f"{num(L['best'])} (median of {L['best_points']} points) at step {step(s.steps[best_idx])}, then ended at "
        f"{num(L['end'])} (median of the last {L['w']} points, steps {step(s.steps[-L['w']])}–{step(s.steps[-1])}): "
        f"{pct(rise / fall)} of the fall given back, at least {pct(th.signed_regain_share)} and past a noise gate of "
        f"{num(gate)} (point noise {num(L['sigma'])}); held from step {step(s.steps[onset])}.",
        {
            "start_level": L["start"],
            "best_level": L["best"],
            "end_level": L["end"],
            "best_step": s.steps[best_idx],
            "regain": rise / fall,
            "noise_gate": gate,
            "noise_std": L["sigma"],
            "onset_step": s.steps[onset],
            "threshold": th.signed_regain_share,
        },
        step=s.steps[best_idx],
        line=s.lines[best_idx],
    )


@rule(
    "TP-NO-PROGRESS-SIGNED",
    Level.WARN,
    "shape",
    "a loss that is negative by design did not fall beyond its noise",
    needs=[Need("loss", "min_trend_points", signed=True, all_finite=True)],
    thresholds=["min_trend_points", "diverge_noise_z", "dead_min_schedule_share"],
    verdict_bearing=True,
    implied_by=("TP-DIVERGE-SIGNED", "TP-ZERO-LR", "TP-ZERO-GRAD", "TP-ZERO-GRAD-ONSET"),
    min_schedule_share="dead_min_schedule_share",
    after_warmup=True,
    detects=(
        "For a train loss with values below 0, judged in its own units: its end level (median of its last 10%, "
        "at least 3 points) is not below its first block's level (median of its first 5%, at least 3 points) by more "
        "than {diverge_noise_z:g} standard errors of the two (the noise read from first differences of the values)."
    ),
    why="A loss that ends where it started, within its own noise, spent its compute without measurable learning.",
    not_mean="It is not a dead run: a run at its floor before its first log holds one level too, and a signed loss has "
    "no ratio to size a slow learner's fall by; a positive loss is judged by TP-DEAD-RUN and TP-LOSS-STALLED.",
    causes="A learning rate too small, frozen parameters, an optimizer that does not hold the parameters, a run "
    "already converged before its first log.",
    try_="Check the learning rate actually applied and that the optimizer holds the trainable parameters; check the "
    "held-out likelihood.",
    objectives=("supervised",),
)
def check_no_progress_signed(ctx):
    L = signed_levels(ctx)
    z, se, s = ctx.th.diverge_noise_z, L["se"], L["s"]
    gate = z * math.hypot(se(L["start_points"]), se(L["w"]))
    fall = L["start"] - L["end"]
    if fall > gate:
        return
    yield ctx.finding(
        f"loss made no progress: {num(L['start'])} -> {num(L['end'])}, within its noise",
        f"the loss ({s.key}) started at {num(L['start'])} (median of its first {L['start_points']} points) and ended at "
        f"{num(L['end'])} (median of the last {L['w']} points): a fall of {num(fall)}, not beyond a noise gate of "
        f"{num(gate)} (point noise {num(L['sigma'])}).",
        {"start_level": L["start"], "end_level": L["end"], "fall": fall, "noise_gate": gate, "noise_std": L["sigma"]},
        step=s.steps[-1],
        line=s.lines[-1],
    )


@rule(
    "TP-FLAT",
    Level.FAIL,
    "shape",
    "the loss does not move at all",
    needs=[Need("loss", "min_trend_points", positive=True, all_finite=True)],
    thresholds=[
        "min_trend_points",
        "flat_rel_std",
        "flat_repeat_share",
        "flat_float_rel_std",
        "dead_min_schedule_share",
    ],
    verdict_bearing=True,
    min_schedule_share="dead_min_schedule_share",
    after_warmup=True,
    implies=("TP-DEAD-RUN", "TP-LOSS-STALLED", "TP-NEAR-CHANCE"),
    least_evidence="Relative variation below {flat_rel_std:.1%} over every point, and either at least {flat_repeat_share:.0%} of consecutive values exactly equal or a relative variation below {flat_float_rel_std:.0e} (float rounding).",
    detects="A loss whose relative variation (standard deviation / mean over every finite point) is below {flat_rel_std:.1%} and that does not move at the log's resolution: at least {flat_repeat_share:.0%} of consecutive logged values are exactly equal, or the variation is below {flat_float_rel_std:.0e}, the size of float rounding.",
    why="A training loss moves from batch to batch; a loss that repeats its logged value, or moves only by float rounding, no longer depends on the data or on the updates.",
    not_mean="It does not flag a slowly improving or a noisy loss, nor a run at its floor whose small variation the log still resolves (values that differ from log to log); a loss pinned to one level without a cause in the log is TP-LOSS-STALLED.",
    causes="Frozen parameters, a zero learning rate, a model that predicts a constant (collapsed output, dead ReLUs), a loss computed on a constant tensor.",
    try_="Check that the optimizer holds the trainable parameters and the learning rate is non-zero; print the gradient norm; overfit one batch to confirm the model can learn.",
    objectives=("supervised",),
)
def check_flat(ctx):
    s = ctx.finite("loss")
    th = ctx.th
    v = s.values
    mean = float(np.mean(v))
    rel = float(np.std(v)) / mean
    if rel >= th.flat_rel_std:
        return
    repeats = float(np.mean(v[1:] == v[:-1]))
    if repeats < th.flat_repeat_share and rel >= th.flat_float_rel_std:
        return
    how = (
        f"{repeats:.0%} of consecutive values are exactly equal"
        if repeats >= th.flat_repeat_share
        else f"it varies only by float rounding (below {num(th.flat_float_rel_std)})"
    )
    yield ctx.finding(
        "loss is flat: it does not change over the run",
        f"over {len(s)} points (steps {step(s.steps[0])}–{step(s.steps[-1])}) the loss has mean {num(mean)} "
        f"and std/mean {num(rel)}, below {num(th.flat_rel_std)}, and {how}.",
        {"points": len(s), "mean": mean, "rel_std": rel, "threshold": th.flat_rel_std, "repeat_share": repeats},
        step=s.steps[0],
        line=s.lines[0],
    )


def _significant_digits(x: float) -> int:
    """Significant digits of ``x`` as its shortest repr writes it (``5.9712`` -> 5,
    ``0.05`` -> 1)."""
    mantissa = repr(abs(float(x))).split("e")[0]
    digits = mantissa.replace(".", "").lstrip("0")
    return len(digits.rstrip("0")) if "." in mantissa else len(digits)


def _written_digits(x: float, before: np.ndarray) -> int:
    """Significant digits ``x`` is written with, at the precision its logger prints: its
    shortest repr's (:func:`_significant_digits`), or more where the values ``before`` it
    (shape ``(n,)``) are all whole multiples of a decimal step (:func:`rounding_step`): HF
    Trainer's ``round(loss, 4)`` writes 0.9860 as ``0.986``, four digits at its step of
    1e-4, not three."""
    digits = _significant_digits(x)
    step = rounding_step(before)
    if step is None or not x:
        return digits
    return max(digits, math.floor(math.log10(abs(x))) - round(math.log10(step)) + 1)


def _creeping_under_print(before: np.ndarray, changes: int) -> bool:
    """Whether a loss printed at a decimal step (:func:`rounding_step`) moved by at most
    that one step per log over its last ``changes`` logs (their median change, and its last
    move; ``before``, shape ``(n,)``: the values up to the first of a stretch of one
    repeated value), with at least one move: a loss drifting by less than the printed
    precision (a running average over a long epoch printed at 3 decimals,
    1.088 -> 1.087 -> 1.086, then 1.086 for 19 logs while its evaluations still move) sits
    on one printed value without being frozen. A real loss's batch noise moves it by many
    steps at every log before a freeze. The creep must be a descent (lower at its end than
    at its start, a one-step wiggle allowed): a moving average of a loss frozen on a cached
    batch glides up into the value."""
    tail = before[-(changes + 1) :]
    step = rounding_step(tail)
    if step is None or tail.size < 3:
        return False
    if not tail[-1] < tail[0]:
        return False  # an average filling up to a constant climbs into it: not a descent
    d = np.abs(np.diff(tail))
    moved = d[d > 0]
    # slowing into the value (a decelerating average moved by a few steps early on): its
    # median change and its last one at most one printed step
    return bool(moved.size) and float(median(d)) <= step * (1 + 1e-6) and float(moved[-1]) <= step * (1 + 1e-6)


def _full_precision(x: float, digits: int) -> bool:
    """Whether ``x`` is written at full precision: at least ``digits`` significant digits
    (:func:`_significant_digits`), and not a value that a float16 or a bfloat16 holds
    exactly (a loss computed in 16 bits moves in coarse steps that repeat at a floor)."""
    if _significant_digits(x) < digits:
        return False
    f32 = np.float32(x)
    if float(f32) != x:
        return True  # finer than a float32: no 16-bit float holds it
    bf16_exact = int(f32.view(np.uint32)) & 0xFFFF == 0
    return not bf16_exact and float(np.float16(f32)) != x


def frozen_stretch(ctx) -> tuple[str, object, int, int] | None:
    """``(name, series, start, length)``: the train loss, or else the eval loss, whose last
    ``length`` finite points from index ``start`` are one bit-identical value (TP-LOSS-FROZEN's
    condition), or ``None``.

    The points are counted in measurements: where the points before the stretch repeat
    each value over several rows (:func:`repeat_cadence`: a progress bar or a logger that
    carries the latest evaluation onto every train row), the stretch's length is divided
    by that cadence, so a value carried over the rows up to the next evaluation is one
    measurement, not a frozen model."""

    def compute():
        th = ctx.th
        for name in ("loss", "eval_loss"):
            if not ctx.has(name):
                continue
            s = ctx.finite(name)
            v = s.values
            if v.size < 2:
                continue
            same = np.r_[False, v[1:] == v[:-1]]
            if not same[-1]:
                continue
            start = int(np.flatnonzero(~same)[-1])
            length = v.size - start
            measured = length / repeat_cadence(v[:start])
            # A held-out loss at full precision repeats to the bit only over unchanged weights.
            fewest = (
                th.frozen_eval_min_points
                if name == "eval_loss" and _full_precision(float(v[-1]), th.frozen_eval_digits)
                else th.frozen_min_points
            )
            if measured < fewest or length < th.frozen_share * v.size:
                continue
            if _written_digits(float(v[-1]), v[:start]) < th.frozen_digits:
                continue
            return name, s, start, length
        return None

    return ctx.memo("frozen_stretch", compute)


def lr_decayed_under(ctx, at_step: float) -> tuple[float, float] | None:
    """``(highest rate from at_step on, peak rate before it)`` when the logged learning
    rate, from ``at_step`` to the end (at least one logged rate), never exceeds ``tiny_lr``
    or ``frozen_lr_share`` of its peak before, whichever is higher, after a peak above it: a schedule that decayed the rate to about zero
    (ReduceLROnPlateau with ``min_lr=0``, Keras's default), under which the weights stop
    changing. ``None`` without such a decay (a rate tiny from the start is TP-DEAD-RUN's
    cause)."""
    if not ctx.has("lr"):
        return None
    lr = ctx.finite("lr")
    after = lr.values[lr.steps >= at_step]
    before = lr.values[lr.steps < at_step]
    if not after.size or not before.size:
        return None
    hi, peak = float(after.max()), float(before.max())
    bar = max(ctx.th.tiny_lr, ctx.th.frozen_lr_share * peak)
    return (hi, peak) if 0 <= hi <= bar < peak else None


def _converged_decades(ctx, s, start: int) -> float | None:
    """How many decades the series ``s`` (finite) fell from its first value to the value
    it froze at from index ``start``, when the freeze reads as a deterministic full-batch
    optimizer converged to its precision (L-BFGS stops moving the weights); ``None``
    otherwise: the series fell ``frozen_fall_log10`` or more, or a gradient norm
    logged over the frozen stretch is at most ``frozen_grad_share`` of its start (the
    largest of its first 3 values: the gradient vanished, however little the loss fell, as
    a fit to noisy data stops at its noise floor). A gradient norm logged there must repeat
    one value too (the same weights on the same data) and be above 0 (an exactly zero
    gradient is a graph cut off or a loss multiplied by 0: TP-ZERO-GRAD-ONSET's)."""
    v0, v1 = float(s.values[0]), float(s.values[-1])
    if not (v0 > 0 and v1 > 0):
        return None
    decades = math.log10(v0 / v1)
    if ctx.has("grad_norm"):
        g = ctx.finite("grad_norm")
        # after the freeze's first point: a loop may log the norm of the step before it
        tail = g.values[g.steps > s.steps[start]]
        head = g.values[:3]
        if not tail.size or not (tail.size == 1 or repeats_one_value(tail)) or not tail[0] > 0 or not head.size:
            return None
        if float(tail[0]) <= ctx.th.frozen_grad_share * float(np.max(head)):
            return decades  # the gradient vanished: converged, however little the loss fell
    return decades if decades >= ctx.th.frozen_fall_log10 else None


#: How many printed values before a frozen stretch :func:`_converged_at_print` reads, and
#: how many of the printer's steps its last change may be.
CONVERGED_APPROACH_POINTS = 10
CONVERGED_LAST_STEPS = 2


def _converged_at_print(s, start: int) -> float | None:
    """The decades the series ``s`` (finite) fell from its first value, when it froze at
    index ``start`` only at its logger's printed precision: its values are whole multiples
    of a decimal step (:func:`rounding_step`: a console's ``%.4f``, Keras's progress line),
    the last :data:`CONVERGED_APPROACH_POINTS` values up to the frozen one change in one
    direction only, and the last change is at most :data:`CONVERGED_LAST_STEPS` steps: a
    full-batch fit whose loss still moves below the printed digits (0.3952, 0.3950, 0.3949,
    0.3948, 0.3948, …). A loss on fresh batches does not approach its value monotonically,
    and a model that stops being updated stops mid-stride. ``None`` otherwise."""
    v = s.values
    step_ = rounding_step(v[: start + 1])
    if step_ is None or start < 3 or not (v[0] > 0 and v[-1] > 0):
        return None
    d = np.diff(v[max(0, start - CONVERGED_APPROACH_POINTS) : start + 1])
    moved = d[d != 0]
    if not moved.size or not (np.all(moved < 0) or np.all(moved > 0)):
        return None
    if abs(float(moved[-1])) > CONVERGED_LAST_STEPS * step_ * (1 + 1e-9):
        return None
    return math.log10(float(v[0]) / float(v[-1]))


def _deterministic_descent(ctx, s, start: int) -> float | None:
    """The decades the series ``s`` (finite) fell from its first value, when every value
    up to the first frozen one (index ``start``, at least one step before it) is at or
    below the one before, and it fell: a deterministic descent (a full batch, L-BFGS's
    line search, which never accepts a rise) that stopped moving, as one that converged
    does. A loss on fresh batches rises between some logs; a noisy descent that freezes is
    a model no longer updated, not a converged fit. Under a logged learning rate that is
    still live the descent must also have slowed into the freeze (its last change at most
    ``frozen_descent_last_share`` of its largest), since a step that a bug skips stops the
    descent mid-stride while a converged fit's changes shrink to nothing. ``None``
    otherwise."""
    v = s.values
    if start < 1 or not (v[0] > 0 and v[-1] > 0):
        return None
    d = np.diff(v[: start + 1])
    if np.any(d > 0) or not np.any(d < 0):
        return None
    if ctx.has("lr"):
        moved = -d[d < 0]
        if not float(moved[-1]) <= ctx.th.frozen_descent_last_share * float(moved.max()):
            return None
    return math.log10(float(v[0]) / float(v[-1]))


def _train_fell_by(ctx, at_step: float) -> tuple[float, float] | None:
    """``(first, held)``: the median of the train loss's second to fourth finite values and
    its median from ``at_step`` on, when that median is more than ``dead_min_improvement``
    below the first (the run learned before ``at_step``, after its first log); ``None``
    otherwise, with fewer than 4 train losses, or without a train loss.

    An eval loss is first logged only after training began: a Keras epoch's end, or an
    HF evaluation at ``eval_steps``, already holds most of the learning, so an eval loss
    that froze near its first value says nothing about whether the run learned; the
    train loss beside it does, where it stopped too (no significant downward trend from
    ``at_step`` on, over at most ``dead_trend_blocks`` block medians)."""
    if not ctx.has("loss"):
        return None
    th = ctx.th
    tr = ctx.finite("loss")
    held = tr.values[tr.steps >= at_step]
    if tr.values.size < 4 or not held.size:
        return None
    # a train loss still falling after the eval loss froze is weights still changing: the
    # evaluation is of a stale copy, not of a model whose rate decayed away
    if trend_z(held, th.dead_trend_blocks) <= -th.dead_trend_z:
        return None
    # the first log of an epoch-level run averages over the untrained start: a model that
    # collapsed onto its class prior in epoch 1 "falls" from it and never again, so the
    # fall is read from the next three logs' median
    first, level = float(np.median(tr.values[1:4])), float(np.median(held))
    return (first, level) if level < first * (1 - th.dead_min_improvement) else None


def _at_uniform_guess(ctx, value: float) -> bool:
    """Whether ``value`` is within ``frozen_guess_tol`` (relative) of ln(k) for some k from
    2 to ``chance_max_classes``: the loss of outputs that are a uniform guess over k
    classes, whatever the input."""
    th = ctx.th
    return any(abs(value / math.log(k) - 1) <= th.frozen_guess_tol for k in range(2, th.chance_max_classes + 1))


def _frozen_after_learning(ctx) -> tuple | None:
    """``(stretch, decay, decades, train)`` when a frozen stretch (:func:`frozen_stretch`) came
    after the run learned (its value more than ``dead_min_improvement`` below the series'
    first, or, for an eval loss that took two values or more before it froze and is not
    at a uniform guess's ln(k) (:func:`_at_uniform_guess`), the train loss's level from
    the stretch on that far below the median of its 2nd-4th values and no longer falling,
    :func:`_train_fell_by`) and a healthy run can produce it: the logged learning rate decayed to about
    zero (:func:`lr_decayed_under`, ``decay`` its rates), a full-batch fit converged
    before it froze (:func:`_converged_decades`, ``decades`` the series' fall), or the
    frozen series is the eval loss
    in a log without a learning rate (on a fixed set it stops moving whenever the weights
    do, and such a log cannot say why they did; ``decay`` and ``decades`` ``None`` then).
    A fit that converged below the printed digits (:func:`_converged_at_print`) counts as
    a converged full-batch fit. ``None`` otherwise: a train loss on fresh batches that
    repeats to the bit without a decayed rate depends on neither, and a frozen loss under a
    live logged rate is a model no longer updated. ``train``: :func:`_train_fell_by`'s
    ``(first, held)`` where the train loss, not the frozen eval loss's own fall, shows the
    run learned, else ``None``. Computed once per judgement (both frozen rules read it)."""
    return ctx.memo("frozen_after_learning", lambda: _read_frozen_after_learning(ctx))


def _read_frozen_after_learning(ctx) -> tuple | None:
    """:func:`_frozen_after_learning`'s reading, uncached."""
    fr = frozen_stretch(ctx)
    if fr is None:
        return None
    name, s, start, _ = fr
    v = s.values
    train = None
    if not v[-1] < v[0] * (1 - ctx.th.dead_min_improvement):
        # An eval loss that moved between evaluations before it froze was computed from
        # weights that changed; one frozen from its first evaluations never was (an
        # evaluation of a stale copy of the model), whatever the train loss did.
        if name != "eval_loss" or np.unique(v[:start]).size < 2 or _at_uniform_guess(ctx, float(v[-1])):
            return None
        train = _train_fell_by(ctx, float(s.steps[start]))
        if train is None:
            return None
    decay = lr_decayed_under(ctx, float(s.steps[start]))
    decades = None if decay is not None else _converged_decades(ctx, s, start)
    if decay is None and decades is None:
        decades = _converged_at_print(s, start)
    if decay is None and decades is None and name == "loss":
        decades = _deterministic_descent(ctx, s, start)
    # A live logged rate under a frozen loss is a model that stopped being updated
    # (optimizer.step() skipped, requires_grad turned off): the FAIL, eval loss or not,
    # unless a full-batch fit converged first.
    if decay is None and decades is None and (name != "eval_loss" or ctx.has("lr")):
        return None
    return fr, decay, decades, train


#: What TP-LOSS-FROZEN and TP-FROZEN-AFTER-LEARNING read (one frozen stretch, two
#: readings of what froze it) and what either explains.
_FROZEN_THRESHOLDS = [
    "min_trend_points",
    "frozen_min_points",
    "frozen_share",
    "frozen_digits",
    "frozen_eval_min_points",
    "frozen_eval_digits",
    "dead_min_improvement",
    "tiny_lr",
    "frozen_lr_share",
    "frozen_fall_log10",
    "frozen_grad_share",
    "frozen_descent_last_share",
    "frozen_guess_tol",
    "chance_max_classes",
    "dead_trend_z",
    "dead_trend_blocks",
]
# A gradient norm that collapsed under a frozen loss is the same stop (a converged
# full-batch fit's, a frozen model's), not a second finding.
_FROZEN_IMPLIES = ("TP-DEAD-RUN", "TP-FLAT", "TP-LOSS-STALLED", "TP-PLATEAU", "TP-NEAR-CHANCE", "TP-VANISHING-GRAD")


@rule(
    "TP-LOSS-FROZEN",
    Level.FAIL,
    "zero",
    "the loss (or the eval loss) holds one bit-identical value to the end",
    # the train loss, or else the eval loss (a log that prints only its evaluations)
    needs=[Need(("loss", "eval_loss"), "min_trend_points")],
    thresholds=_FROZEN_THRESHOLDS,
    implies=_FROZEN_IMPLIES,
    least_evidence="The last {frozen_min_points} or more finite losses (for an eval loss written at full precision, {frozen_eval_min_points} or more evaluations), and at least {frozen_share:.0%} of them, exactly equal (compared with ==), the value written with at least {frozen_digits} significant digits.",
    detects="The train loss, or else the eval loss, is exactly the same value (compared with ==) at each of its last {frozen_min_points} or more finite points, which are at least {frozen_share:.0%} of its points, and that value is written with at least {frozen_digits} significant digits at its logger's precision (the decimal step every value before the stretch is a multiple of: HF Trainer's round(loss, 4) writes 0.9860 as 0.986, four digits), so a log that rounds to two decimals at a converged floor is not read as frozen. Points count as measurements: where the series repeats each value over several rows before the stretch (the latest evaluation carried onto every train row until the next), the stretch's rows are divided by the median length of those repeats. An eval loss on a fixed validation set repeats to the bit only when the weights do not change: an eval loss written at full precision (at least {frozen_eval_digits} significant digits, a value no float16 or bfloat16 holds exactly) needs {frozen_eval_min_points} such evaluations.",
    why="A loss computed on fresh batches varies in its last digits from batch to batch; one value repeated to the bit for many logs means the number no longer depends on the data or the weights: a frozen model on a fixed batch, a cached loss tensor, a logger repeating its last value.",
    not_mean="It does not flag a loss rounded coarsely by its logger (fewer than {frozen_digits} significant digits), nor one that crept into its value by at most one printed decimal step per log (a running average drifting under the printed precision), nor a full-batch run that still moves in its last digits; nor a run that learned and then froze where a healthy run can (an eval loss, a train loss under a rate decayed to about zero, or a full-batch fit that converged: a fall of {frozen_fall_log10:g} decades, a gradient norm frozen with it at {frozen_grad_share:g} of its start or below, or a descent that never rose between logs): that is TP-FROZEN-AFTER-LEARNING, a WARN.",
    causes="A model whose output no longer depends on its input (collapsed to a constant), frozen weights evaluated on one fixed batch, a loss variable that is never updated in the logging code, a data loader stuck on one batch.",
    try_="Print two consecutive batches and the model's outputs on them; check that the logged loss is the current step's; check requires_grad and the optimizer's parameter groups.",
    objectives=("supervised",),
)
def check_loss_frozen(ctx):
    fr = frozen_stretch(ctx)
    if fr is None or _frozen_after_learning(ctx) is not None:
        return
    name, s, start, length = fr
    if _creeping_under_print(s.values[: start + 1], ctx.th.frozen_min_points):
        return
    v = s.values
    what = "loss" if name == "loss" else "eval loss"
    yield ctx.finding(
        f"{what} is frozen: exactly {float(v[-1])!r} at its last {length} points, from step {step(s.steps[start])}",
        f"the last {length} of {v.size} finite {what}es ({s.key}) are all exactly {float(v[-1])!r}, from step "
        f"{step(s.steps[start])} (line {int(s.lines[start])}) to step {step(s.steps[-1])}.",
        {"value": float(v[-1]), "points": int(length), "onset_step": float(s.steps[start]), "series": name},
        step=s.steps[start],
        line=s.lines[start],
    )


@rule(
    "TP-FROZEN-AFTER-LEARNING",
    Level.WARN,
    "zero",
    "the run learned, then its loss stopped moving to the bit while the run went on",
    # the train loss, or else the eval loss (a log that prints only its evaluations)
    needs=[Need(("loss", "eval_loss"), "min_trend_points")],
    thresholds=_FROZEN_THRESHOLDS,
    implies=_FROZEN_IMPLIES,
    least_evidence="TP-LOSS-FROZEN's frozen stretch at a value more than {dead_min_improvement:.0%} below where the series started (for an eval loss that took two values or more before it froze and is not within {frozen_guess_tol:g} of a uniform guess's ln(k), or with the train loss's median from the stretch on that far below the median of its second to fourth values and not still falling), under a logged learning rate decayed to at most {tiny_lr} or {frozen_lr_share:g} of its peak, {frozen_fall_log10:g} decades or more below the series' first value or with a logged gradient norm at {frozen_grad_share:g} of its start or below (a logged gradient norm frozen with it, above 0), after a train loss that never rose between two logs (slowing into the freeze under a live logged rate), or on the eval loss of a log with no learning rate.",
    detects="TP-LOSS-FROZEN's condition (the train loss, or else the eval loss, bit-identical at its last {frozen_min_points} or more points, at least {frozen_share:.0%} of them, written with at least {frozen_digits} significant digits) at a value more than {dead_min_improvement:.0%} below the series' first, or, for an eval loss that took two values or more before it froze (one frozen from its first evaluations was never computed from changing weights) at a value more than {frozen_guess_tol:g} (relative) from every ln(k), k from 2 to {chance_max_classes} (a uniform guess's loss), with the train loss's median from the stretch's start on that far below the median of its second to fourth values (a Keras epoch's first average holds the untrained start, which a model that collapsed onto its class prior in epoch 1 falls from) and no significant downward trend of it there (a train loss still falling is weights still changing under a stale evaluation); an eval loss is first logged after training began, a Keras epoch's end or an HF evaluation holding most of the learning: the run learned, then stopped moving, where every logged learning rate from the start of the frozen stretch is at most {tiny_lr} or {frozen_lr_share:g} of its peak before (a full batch at a rate decayed to about zero repeats its loss to the bit), or where a full-batch fit converged (a full-batch optimizer such as L-BFGS stops moving the weights): the frozen value is {frozen_fall_log10:g} decades or more below the series' first, or a gradient norm logged over the stretch is at most {frozen_grad_share:g} of its start (the largest of its first 3), and any gradient norm logged there repeats one value too, above 0, or the train loss never rose between two logs before it froze (a deterministic descent, which converges or stops; under a live logged learning rate its last change at most {frozen_descent_last_share:g} of its largest), or, on the eval loss only, where the log has no learning rate to tell. Under a live logged rate it stays TP-LOSS-FROZEN.",
    why="Every step after the freeze costs compute and changes nothing. The model is where the run had taken it, not broken: a schedule that decays the rate to about zero does exactly this to a healthy run, so it is a warning.",
    not_mean="It does not mean the model collapsed to a constant (TP-LOSS-FROZEN, a FAIL: a value repeated from where the run started with nothing learned, or a train loss on fresh batches repeated without a decayed rate).",
    causes="ReduceLROnPlateau with min_lr=0 (Keras's default) cutting the rate by 10x at every plateau, a decay schedule far shorter than the run, a full-batch optimizer (L-BFGS) that converged and ran on; or weights frozen mid-run, or training stopped while evaluation and logging went on.",
    try_="Log the learning rate; set min_lr (1e-6, or 1e-2 of the peak) and stop with early stopping when the rate reaches it, or shorten the run. If the rate is alive, check that optimizer.step() still runs and no callback froze the weights.",
    objectives=("supervised",),
)
def check_frozen_after_learning(ctx):
    found = _frozen_after_learning(ctx)
    if found is None:
        return
    (name, s, start, length), decay, decades, train = found
    v = s.values
    what = "loss" if name == "loss" else "eval loss"
    if decay is not None:
        why = f"every logged learning rate from there is at most {num(decay[0])}, down from a peak of {num(decay[1])}"
    elif decades is not None:
        why = f"it had fallen {decades:.1f} decades from its first value {num(v[0])}"
        if _converged_at_print(s, start) is not None:
            why += (
                " by changes that shrank to the last digit the log prints: a fit that converged below the printed "
                "precision on a full batch"
            )
        elif _converged_decades(ctx, s, start) is None:
            why += (
                " by a descent that never rose between two logs (a full batch): a fit that converged, or an "
                "optimizer that stopped, which the loss alone cannot tell apart"
            )
        else:
            if ctx.has("grad_norm"):
                why += f" and the logged gradient norm froze with it at {num(ctx.finite('grad_norm').values[-1])}"
            why += ": an optimizer converged to its precision on a full batch"
    else:
        why = "the log has no learning rate to say whether a schedule decayed it to about zero"
    fell = f"the {what} fell from {num(v[0])}, then froze"
    if train is not None:
        fell = f"the train loss fell from {num(train[0])} (its 2nd-4th logs) to {num(train[1])} and the {what} froze"
    yield ctx.finding(
        f"{fell} at {float(v[-1])!r} from step {step(s.steps[start])}: its last {length} points changed nothing",
        f"the last {length} of {v.size} finite {what}es ({s.key}) are exactly {float(v[-1])!r}, from step "
        f"{step(s.steps[start])} (line {int(s.lines[start])}); {why}.",
        {
            "value": float(v[-1]),
            "points": int(length),
            "onset_step": float(s.steps[start]),
            "series": name,
            "lr_after": decay[0] if decay else None,
            "lr_peak": decay[1] if decay else None,
            "decades_fallen": decades,
        },
        step=s.steps[start],
        line=s.lines[start],
    )


#: Standard errors (99%, two-sided) within which a block median of a noisy loss still
#: counts as at ln(k): a block of 3 points with 3% noise has a median as uncertain as 3%.
CHANCE_BLOCK_Z = 2.576


def _band_names_level(hit: tuple) -> bool:
    """Whether the band :func:`chance_level` read a loss's blocks in (``hit[6]``, relative
    to ln k) leaves out ln(k-1) and ln(k+1): a noisy series whose 99% band around ln 3 is
    37% wide holds ln 2 and ln 4 as well (a breaker's 10 noisy evaluations were read "100%
    of their blocks at ln 3"), so the loss alone names no k there."""
    k, level, margin = hit[0], hit[1], hit[6]
    up = math.log(k + 1) / level - 1
    down = 1 - math.log(k - 1) / level if k > 2 else math.inf
    return margin < min(up, down)


def chance_block(n: int) -> int:
    """Points per block of the chance-level reading: 5% of the run, at least 3
    (:func:`~trainproof.rules._stats.smoothing_block`), and small enough for 3 blocks, so
    that a run of ``min_trend_points`` (8: an 8-epoch Keras run) has a level to read (two
    blocks of 3 and a remainder of 2, dropped, left it unread: an 8-epoch run at ln 10 with
    its accuracy at 1/10 PASSed, and FAILed at 9 epochs)."""
    block = smoothing_block(n)
    return block if n // block >= 3 else max(1, n // 3)


def chance_level(
    values: np.ndarray,
    max_classes: int,
    tol_level: float,
    tol_block: float,
    share: float,
    classes: tuple[int, ...] | None = None,
    above: float = 0.0,
) -> tuple[int, float, float, float, float] | None:
    """The class count k whose uniform-guess cross-entropy ln(k) a loss sits at, or None.

    Whether the loss is leaving that level is an effect size, not a trend test: how far
    the end of the run (the median of its last 10% of points, at least 3) sits below ln(k),
    in nats, against ln(k). With many points a trend test calls a drift of 3% over 68,000
    steps significant; a 4-class loss that goes 1.42 -> 1.36 (ln 4 = 1.386) has still
    learned nothing worth the name.

    Args:
        values: finite losses in step order (n >= 3).
        max_classes: the largest k tried (2..max_classes). Beyond about 10 classes the
            levels ln(k) crowd too close together (ln 11 / ln 10 = 1.04) for a level to name
            one k, so larger k are not guessed.
        tol_level: the median of the run must be within this relative distance of ln(k).
        tol_block: a block median (5% of the run) counts as at that level within this,
            and the end of the run (median of its last 10%) may sit at most this far below
            ln(k) (relative); for a median of few noisy points (a block, the end), within
            its own 99% margin (:data:`CHANCE_BLOCK_Z` standard errors of a median of that
            many points, on the log of the loss) when that is wider.
        share: the least share of the blocks at that level ("most of the run").
        classes: the class counts to try instead of 2..max_classes (one named by a logged
            accuracy: :func:`_chance_named_by_accuracy`).
        above: how far above ln(k) the median and the blocks may also sit (relative; the
            blocks within their margin above that): a collapsed classifier scores ln(k) or
            more (:func:`collapsed_to_chance`). 0 reads the level on both sides alike.

    Returns:
        ``(k, ln k, median, share of blocks at it, end level, Mann-Kendall z of the block
        medians, the relative band the blocks were read in)``.
    """
    n = values.size
    block = chance_block(n)
    meds, _ = block_medians(values, block)
    if meds.size < 3:
        return None
    med = float(median(values))
    w = max(3, n // 10)
    end = float(median(values[-w:]))
    sigma = noise_sigma(np.log(values))
    margin = max(tol_block, CHANCE_BLOCK_Z * level_se(sigma, block))
    # The end level is a median of w points too: it has left ln(k) only past its own 99%
    # margin (a loss at ln 4 with 16% noise ends 5% below it by chance over 7 points).
    end_margin = max(tol_block, CHANCE_BLOCK_Z * level_se(sigma, w))
    for k in classes or range(2, max_classes + 1):
        level = math.log(k)
        if not -tol_level <= med / level - 1 <= max(tol_level, above):
            continue
        r = meds / level - 1
        at = float(np.mean((r >= -margin) & (r <= above + margin)))
        if at >= share and (level - end) / level <= end_margin:
            return k, level, med, at, end, mann_kendall_z(meds), margin
    return None


def accuracy_as_share(v: np.ndarray) -> np.ndarray:
    """A logged accuracy ``v`` (shape ``(n,)``) as a share: divided by 100 when it is in
    percent (its largest value above 1 and at most 100), else as it is."""
    return v / 100 if v.size and 1 < float(v.max()) <= 100 else v


#: A top-1 accuracy named by its k (timm's and torchvision's ``acc1``, ``top1``, ``top_1``).
_TOP1 = re.compile(r"(?:^|[/_ .-])(?:acc|top)[_-]?1(?!\d)")


#: Words of an accuracy key that name an adversary's accuracy: a domain classifier's
#: (DANN), a discriminator's or a critic's, trained against a model whose goal is to hold
#: it at chance (a domain-adversarial run's ``domain_acc`` of 0.50 beside a task that
#: learns), so it says nothing of the model's own guessing.
ADVERSARY_WORDS = frozenset({"domain", "disc", "discriminator", "adversary", "critic"})


def is_accuracy_key(key: str) -> bool:
    """Whether a logged key is a top-1 accuracy (train or held-out): it names ``acc`` or
    ``accuracy``, or a top-1 by its k (``val_acc1``, ``top1``), and no top-k (a top-5
    accuracy sits far above a top-1's chance), nor an adversary's (:data:`ADVERSARY_WORDS`)."""
    low = key.lower()
    if "acc" not in words(key) and "accuracy" not in low and not low.endswith("_acc") and not _TOP1.search(low):
        return False
    if not ADVERSARY_WORDS.isdisjoint(words(key)):
        return False
    # a top-k accuracy for k > 1: top5, top_5, top-5, topk, acc@5 (torchvision's spelling)
    return "topk" not in low and not any(int(m) > 1 for m in re.findall(r"(?:top[_-]?|@)(\d+)", low))


def accuracy_series(ctx):
    """``(key, steps, values)`` of every logged top-1 accuracy (:func:`is_accuracy_key`)
    whose finite values lie in [0, 100], in the order of the series' names: ``steps`` and
    ``values`` (as shares in [0, 1], :func:`accuracy_as_share`) float64 arrays of shape
    ``(n,)``, n >= 1. Accuracies in another range (a count, a misnamed metric) are left
    out."""
    for name, s in sorted(ctx.run.series.items()):
        key = s.key or name
        if not is_accuracy_key(key):
            continue
        f = ctx.finite(name)
        if f.values.size and float(f.values.min()) >= 0 and float(f.values.max()) <= 100:
            yield key, f.steps, accuracy_as_share(f.values)


def _accuracy_levels(ctx, k: int, held_out: bool = False):
    """``(key, late level, tolerance, every value in [0, 1])`` of every logged top-1
    accuracy (:func:`is_accuracy_key`, in [0, 1] or in percent, at least 2 finite values),
    in the order of the series' names; with ``held_out``, only one whose key names held-out
    data (:data:`HELD_OUT_WORDS`). The late level is that of its second half: a held-out
    set measured again is one sample, read as the median of its evaluations; a train
    accuracy's batches are each a new sample, read as their mean (a median of batch
    accuracies on 4 examples takes one of five values, 0.25 for a mean of 0.17), with the
    mean's tolerance (:func:`accuracy_tolerance` at 1/k)."""
    for _, s in sorted(ctx.run.series.items()):
        if not is_accuracy_key(s.key):
            continue
        held = measured_held_out(s.key)
        if held_out and not held:
            continue
        v = s.values[np.isfinite(s.values)]
        if v.size < 2:
            continue
        v = accuracy_as_share(v)
        late = v[v.size // 2 :]
        samples = 1 if held else late.size
        level = float(median(late)) if held else float(np.mean(late))
        in_range = bool(v.min() >= 0 and v.max() <= 1)
        yield s.key, level, accuracy_tolerance(v, 1 / k, ctx.th.chance_acc_tol, samples), in_range


def _accuracy_at_chance(ctx, k: int, held_out: bool = False, max_tol: float | None = None) -> tuple[str, float] | None:
    """``(key, late level)`` of a logged accuracy (:func:`_accuracy_levels`; with
    ``held_out``, only a held-out one) whose second half sits within its tolerance of 1/k
    (below it, within twice that): the classifier's own evidence that it guesses. With
    ``max_tol``, an accuracy whose tolerance is wider (an evaluation set too small to show
    chance) is passed over. ``None`` when no accuracy is logged or none sits there."""
    for key, late, tol, _ in _accuracy_levels(ctx, k, held_out):
        if max_tol is not None and tol > max_tol:
            continue
        # Below 1/k by up to twice the tolerance: a guesser that favours a class rarer in
        # the evaluation set than in its training labels scores under 1/k (a model trained
        # on shuffled labels: 0.17-0.26 on 4 balanced classes).
        if -2 * tol <= late - 1 / k <= tol:
            return key, late
    return None


def held_out_above_chance(ctx, k: int) -> tuple[str, float] | None:
    """``(key, late median)`` of a held-out accuracy (:func:`_accuracy_levels`) whose
    second half sits above 1/k by more than twice its tolerance: the classifier beats a
    uniform guess over k on data it was not trained on, so a loss at ln(k) is a
    coincidence of the objective (mixup, label smoothing and distillation keep a train
    loss high), not a guess. ``None`` otherwise."""
    for key, late, tol, in_range in _accuracy_levels(ctx, k, held_out=True):
        if in_range and late - 1 / k > 2 * tol:
            return key, late
    return None


#: The largest evaluation set whose size is read from an accuracy's granularity: beyond it
#: the sampling error is below ``chance_acc_tol`` for every k and the granularity cannot be
#: told from float rounding.
MAX_GRAIN_EXAMPLES = 1000


def eval_set_size(acc: np.ndarray) -> int | None:
    """The number of examples an accuracy was measured on, read from its granularity: the
    smallest N (2 to :data:`MAX_GRAIN_EXAMPLES`) that makes every logged value a whole
    number of correct answers (``acc * N`` within 1e-4 of an integer, float32's rounding
    of fractions at that size). ``None`` with fewer than 3 distinct values (a frozen
    accuracy says nothing of its grain) or when no such N exists (an average over
    batches)."""
    # A sample of the distinct values decides it (the grain holds for all or for none).
    u = unique(acc[(acc >= 0) & (acc <= 1)])[:64]
    if u.size < 3:
        return None
    # Values printed at d decimals are all whole numbers of 10^-d: that grain is the print's,
    # not the evaluation set's (0.60 at 2 decimals is no proof of 100 examples).
    q = rounding_step(u, max_decimals=4)
    for n in range(2, MAX_GRAIN_EXAMPLES + 1):
        x = u * n
        if np.all(np.abs(x - np.round(x)) <= 1e-4 * max(1.0, n / 100)):
            return None if q is not None and q < 1 and n % round(1 / q) == 0 else n
    return None


def accuracy_tolerance(acc: np.ndarray, p: float, floor: float, samples: int = 1) -> float:
    """How far an accuracy may sit from the chance rate ``p`` = 1/k and still be chance:
    ``floor`` (``chance_acc_tol``), widened to two binomial standard errors
    ``2 * sqrt(p (1 - p) / N)`` when the evaluation set's size N is read from the values'
    granularity (:func:`eval_set_size`): on 32 examples a 3-class guesser scores anywhere
    in 0.19-0.48 (one corpus run logs 0.28 and 0.31 at ln 3), on 10,000 within 0.01.
    ``samples``: how many independent draws the judged level is the mean of (a train
    accuracy's batches: each is a new sample, so their mean of m sits within
    ``1 / sqrt(m)`` of one draw's error; a held-out set measured again is one sample, 1)."""
    n = eval_set_size(acc)
    if n is None:
        return floor
    return max(floor, 2.0 * math.sqrt(p * (1 - p) / n) / math.sqrt(max(1, samples)))


#: Words of a loss key that name an objective whose level is no k-class guess in nats: a
#: regression's error (``mse``, ``l1``, ``huber``…) and a cross-entropy in bits per
#: dimension, byte or character (``bpd``, ``bpb``, ``bpc``; a byte-level model's guess is 8
#: bits). An enwik8 model's 1.1 bits per byte read as ln 3.
NOT_NATS_WORDS = REGRESSION_WORDS | BITS_LOSS_WORDS


def collapsed_to_chance(ctx, s) -> dict | None:
    """TP-CHANCE-LEVEL's reading of a classifier that blew up and collapsed to a uniform
    guess: the train loss ``s`` (finite, positive) peaks above ``chance_collapse_nats`` in
    its first fifth (no guess over any label space: a blow-up), and from its first point
    after that peak at or under ``chance_start_ratio`` x ln(k) on, a stretch of at least ``chance_collapse_share``
    of the run (and ``min_trend_points``) sits at or just above ln(k) (:func:`chance_level`
    with its band widened up by ``chance_collapse_above``); with a logged accuracy at 1/k
    (:func:`_accuracy_at_chance`) and no logged accuracy above it by more than twice its
    tolerance. Where several k fit (the levels crowd from ln 5 on), the one whose ln(k) the
    median sits nearest: the accuracy cannot tell 1/10 from 1/11. Returns
    :func:`chance_state`'s dict (``fails`` set, ``collapse`` the peak and the index the
    stretch starts at), or ``None``."""
    th = ctx.th
    v = s.values
    n = v.size
    top = int(np.argmax(v[: max(1, n // 5)]))
    peak = float(v[top])
    if not peak > th.chance_collapse_nats:
        return None
    best = None
    for k in range(2, th.chance_max_classes + 1):
        level = math.log(k)
        # the stretch starts where the blow-up ends, at the first point after the peak at
        # or under chance_start_ratio x ln(k): a later spike inside it (an SGD at lr 10
        # kicked to 1e9 at one step of 80) is one block's noise to chance_level, not the
        # start of another stretch
        down = np.flatnonzero(v[top:] <= th.chance_start_ratio * level)
        if not down.size:
            continue
        i0 = top + int(down[0])
        tail = v[i0:]
        if tail.size < max(th.min_trend_points, th.chance_collapse_share * n):
            continue
        hit = chance_level(
            tail,
            th.chance_max_classes,
            th.chance_tol_level,
            th.chance_tol_block,
            th.chance_share,
            classes=(k,),
            above=th.chance_collapse_above,
        )
        if hit is None:
            continue
        acc = _accuracy_at_chance(ctx, k)
        # every logged accuracy must agree: one well above 1/k (a detector's overall
        # cls_accuracy beside its foreground one) says the model does not guess
        if not acc or any(in_range and late - 1 / k > 2 * tol for _, late, tol, in_range in _accuracy_levels(ctx, k)):
            continue
        if best is None or abs(hit[2] / level - 1) < abs(hit[2] / best["hit"][1] - 1):
            best = {
                "s": s,
                "name": "loss",
                "hit": hit,
                "z": hit[5],
                "accuracy": acc,
                "start": peak,
                "from_above": False,
                "above": None,
                "fails": True,
                "collapse": (peak, i0),
            }
    return best


def chance_state(ctx) -> dict | None:
    """The chance-level judgement, computed once for TP-CHANCE-LEVEL and TP-NEAR-CHANCE:
    ``None``, or the series judged, the hit of :func:`chance_level`, the Mann-Kendall z of
    its block medians and the accuracy that confirms it (:func:`_accuracy_at_chance`)."""

    def compute():
        th = ctx.th
        name = "loss" if ctx.has("loss") else "eval_loss"
        s = ctx.finite(name)
        if name == "loss" and len(s) < th.min_trend_points:
            return None
        if ctx.has("lr"):
            lr = ctx.finite("lr").values
            if lr.size and not float(median(lr)) > 0:
                return None  # TP-ZERO-LR's
        args = (th.chance_max_classes, th.chance_tol_level, th.chance_tol_block, th.chance_share)
        # A guesser starts at ln(k); a loss that fell there from far above beat it. The
        # run's start is the train loss's (an eval loss first measured after the fall
        # starts at the level).
        start = float(median(s.values[:3])) if len(s) else math.nan
        found = []
        for key, series in (
            (name, s),
            ("eval_loss", ctx.finite("eval_loss") if name == "loss" and ctx.has("eval_loss") else None),
        ):
            if series is None or (
                key == "eval_loss"
                and name == "loss"
                and not (len(series) >= th.min_trend_points and np.all(series.values > 0))
            ):
                continue
            if set(words(series.key)) & NOT_NATS_WORDS:
                continue  # no cross-entropy in nats: ln(k) is not its guess
            hit = chance_level(series.values, *args)
            above_band = slow_start = None
            if (
                (hit is None or not _accuracy_at_chance(ctx, hit[0]))
                and not _blew_up(ctx, s.values)
                and not has_train_terms(ctx)
                and next(cross_entropy_terms(ctx), None) is None
            ):
                # no level that an accuracy confirms: a guesser's cross-entropy may sit above
                # it (a blow-up's collapse is collapsed_to_chance's, read from where it ends;
                # a total of several terms is no single cross-entropy, whatever its level,
                # and a cross-entropy term beside it is read on its own)
                guess = _guessing_above(ctx, series.values, args)
                if guess is not None:
                    hit, above_band = guess, th.chance_guess_above
                    slow_start = _learning_from_above(ctx, series.values)
            if hit is not None:
                acc = _accuracy_at_chance(ctx, hit[0])
                if not acc and not _band_names_level(hit):
                    continue  # too noisy to tell ln(k) from its neighbours, and no accuracy names k
                st = {
                    "s": series,
                    "name": key,
                    "hit": hit,
                    "z": hit[5],
                    "accuracy": acc,
                    "band_above": above_band,
                    "slow_start": bool(slow_start),
                }
                st["start"] = start
                st["from_above"] = start >= th.chance_start_ratio * hit[1]
                # A held-out accuracy that beats a guess over k says the level is a
                # coincidence of the objective (mixup, label smoothing): no FAIL.
                st["above"] = (
                    None if _accuracy_at_chance(ctx, hit[0], held_out=True) else held_out_above_chance(ctx, hit[0])
                )
                st["fails"] = (
                    not st["from_above"]
                    and st["above"] is None
                    # falling onto the level while the accuracy climbs: ambiguous, a warning
                    and not st["slow_start"]
                    and (bool(st["accuracy"]) or (st["z"] > -th.dead_trend_z and hit[0] <= th.chance_fail_max_classes))
                )
                found.append(st)
        if not found and name == "loss":
            st = _chance_named_by_accuracy(ctx, s)
            if st is None and _blew_up(ctx, s.values):
                # past chance_max_classes an accuracy names k only to a quarter of 1/k, and a
                # loss above the level widens that: only outputs that blew up and collapsed
                # (no guess and no initialisation reaches chance_collapse_nats) are read there
                st = _chance_named_by_accuracy(ctx, s, above=th.chance_guess_above)
            if st is not None:
                st["start"] = start
                # A start above chance_collapse_nats is a blow-up, not a model that beat a
                # guess on its way down: the collapse that collapsed_to_chance reads for k up
                # to chance_max_classes, here for a k the accuracy names.
                st["from_above"] = start >= th.chance_start_ratio * st["hit"][1] and not _blew_up(ctx, s.values)
                st["above"] = None
                st["fails"] = not st["from_above"]
                found.append(st)
        # The train loss first; the eval loss where the train loss drifts and the eval loss
        # shows the level plainly.
        for st in found:
            if st["fails"]:
                return st
        if name == "loss":
            st = collapsed_to_chance(ctx, s)
            if st is not None:
                return st
        if name == "loss" and ctx.has("eval_loss"):
            st = _held_out_at_chance(ctx, s.values)
            if st is not None:
                return st
        if name == "loss":
            st = _cross_entropy_term_at_chance(ctx, args)
            if st is not None:
                return st
        return found[0] if found else None

    return ctx.memo("chance_state", compute)


def _blew_up(ctx, values: np.ndarray) -> bool:
    """Whether a train loss (``values``, finite, shape ``(n,)``) peaks above
    ``chance_collapse_nats`` in its first fifth: no guess over any label space and no
    initialisation scores that, a blow-up does (:func:`collapsed_to_chance`)."""
    return bool(values.size) and float(np.max(values[: max(1, values.size // 5)])) > ctx.th.chance_collapse_nats


def _guessing_above(ctx, values: np.ndarray, args: tuple) -> tuple | None:
    """:func:`chance_level`'s hit for a loss ``values`` (finite, positive, shape ``(n,)``)
    that sits at ln(k) or above it, by up to ``chance_guess_above`` (relative), where the
    run's accuracy says the classifier guesses over k (:func:`_accuracy_guesses`): a
    prediction that ignores the input scores ln(k) or more, and a learning rate far too
    high keeps its logits jittering above the level. ``args``: chance_level's class and
    tolerance thresholds. A loss above its level does not name k, the accuracy does: of the
    k whose band the loss sits in and whose 1/k the accuracy sits within its tolerance of
    (which covers 1/4 and 1/5) and within half ``chance_acc_tol`` of the nearest any k's
    1/k is to it, the one whose 1/k it sits nearest. ``None`` when none."""
    gaps = {k: _accuracy_guesses(ctx, k) for k in range(2, ctx.th.chance_max_classes + 1)}
    named = [g for g in gaps.values() if g is not None]
    if not named:
        return None
    # the accuracy names k as well as any class count does, within half the accuracy's
    # tolerance floor: 0.289 names 3 (0.044 off) and 4 (0.039 off) alike, but 0.100 names
    # 10, not 7 (0.043 off), however well a loss above ln 7 fits
    slack = min(named) + ctx.th.chance_acc_tol / 2
    best = None
    for k, gap in gaps.items():
        if gap is None or gap > slack:
            continue
        hit = chance_level(values, *args, classes=(k,), above=ctx.th.chance_guess_above)
        # a guess never scores below ln(k): an end below it by more than chance_tol_block,
        # whatever the noise, is a loss leaving a level the accuracy cannot tell from its
        # neighbour's (1/9 and 1/10 are 0.011 apart), not a guess above it
        if hit is not None and hit[4] < hit[1] * (1 - args[2]):
            continue
        if hit is not None and (best is None or gap < best[0]):
            best = (gap, hit)
    return None if best is None else best[1]


def _learning_from_above(ctx, values: np.ndarray) -> bool:
    """Whether a loss ``values`` (finite, shape ``(n,)``) read as a guesser's above ln(k)
    falls with a significant trend (Mann-Kendall over at most ``dead_trend_blocks`` block
    medians, below -``dead_trend_z``) while a logged accuracy climbs with one: a slow
    learner's first epochs look so (a run cut at 8 of its 40 epochs: 2.41 -> 2.36 at every
    log, its accuracy 0.098 -> 0.11 on the way to 0.27), and so does a guesser whose
    accuracy creeps towards its majority class's share. The log cannot tell them apart."""
    th = ctx.th
    return trend_z(values, th.dead_trend_blocks) <= -th.dead_trend_z and any(
        trend_z(v, th.dead_trend_blocks) >= th.dead_trend_z for _, _, v in accuracy_series(ctx)
    )


def _accuracy_guesses(ctx, k: int) -> float | None:
    """How far from 1/k the run's accuracy sits when it says the classifier guesses over k
    classes to its end, else ``None``: a logged top-1 accuracy whose second half sits
    within its tolerance of 1/k on either side (the distance returned), and no logged
    top-1 accuracy above 1/k by more than its tolerance (:func:`accuracy_tolerance`) over
    its second half or at the end of the run (the median of its last tenth, at least 3
    values): a model that starts to learn late leaves 1/k there first."""
    gaps = []
    for key, late, tol, in_range in _accuracy_levels(ctx, k):
        if not in_range or late - 1 / k > tol:
            return None
        if abs(late - 1 / k) <= tol:
            gaps.append(abs(late - 1 / k))
    if not gaps:
        return None
    floor = ctx.th.chance_acc_tol
    for key, _, v in accuracy_series(ctx):
        w = max(3, v.size // 10)
        tail = v[-w:]
        held = measured_held_out(key)
        level = float(median(tail)) if held else float(np.mean(tail))
        if level - 1 / k > accuracy_tolerance(v, 1 / k, floor, 1 if held else tail.size):
            return None
    return min(gaps)


#: Words of a loss term's key that make it a classifier's cross-entropy (``ce_loss``,
#: ``xent``, ``nll_loss``, ``cross_entropy``), read by :func:`_cross_entropy_term_at_chance`.
CROSS_ENTROPY_WORDS = frozenset({"ce", "xent", "crossentropy", "nll"})


def cross_entropy_terms(ctx):
    """``(name, key)`` of each logged cross-entropy term beside the judged train loss: a
    key with one of :data:`CROSS_ENTROPY_WORDS`, or ``cross`` then ``entropy``, naming no
    held-out data and no objective in other units (:data:`NOT_NATS_WORDS`), other than the
    judged loss's own key; in the order of the series' names."""
    judged = ctx.run.series["loss"].key if "loss" in ctx.run.series else None
    for name, series in sorted(ctx.run.series.items()):
        key = series.key or name
        w = set(words(key))
        if key == judged or measured_held_out(key) or w & NOT_NATS_WORDS:
            continue
        if w & CROSS_ENTROPY_WORDS or ("cross" in w and "entropy" in w):
            yield name, key


def _cross_entropy_term_at_chance(ctx, args: tuple) -> dict | None:
    """TP-CHANCE-LEVEL's judgement of a cross-entropy term logged beside a judged loss of
    another kind (a distillation loss's hard-label ``ce_loss`` beside its total): the
    term (a key with one of :data:`CROSS_ENTROPY_WORDS`, or ``cross`` then ``entropy``,
    naming no held-out data; not the judged loss itself, at least ``min_trend_points``
    positive points) at ln(k) by :func:`chance_level`'s measure (``args``: its class and
    tolerance thresholds), never having fallen there from ``chance_start_ratio`` x the
    level, a logged accuracy at 1/k (:func:`_accuracy_at_chance`) and no held-out accuracy
    above it (:func:`held_out_above_chance`), while the judged loss made no progress either
    (:func:`improvement` over its end windows, :func:`end_window`, at most
    ``dead_min_improvement``): the
    classifier inside the objective guesses and the objective does not move. A multi-task
    run whose main loss learns while an auxiliary head sits at chance is not it; without
    the accuracy a term at ln(k) is no proof (a soft-target term can sit anywhere). The
    same dict as :func:`chance_state`'s; ``None`` otherwise."""
    th = ctx.th
    total = ctx.finite("loss")
    if (
        len(total) < th.min_trend_points
        or improvement(total.values, end_window(len(total)))[2] > th.dead_min_improvement
    ):
        return None  # the judged objective learned: an auxiliary head at chance is no run at chance
    for name, key in cross_entropy_terms(ctx):
        f = ctx.finite(name)
        if len(f) < th.min_trend_points or not np.all(f.values > 0):
            continue
        hit = chance_level(f.values, *args)
        if hit is None:
            continue
        acc = _accuracy_at_chance(ctx, hit[0])
        start = float(median(f.values[:3]))
        if not acc or start >= th.chance_start_ratio * hit[1] or held_out_above_chance(ctx, hit[0]):
            continue
        return {
            "s": f,
            "name": key,
            "hit": hit,
            "z": hit[5],
            "accuracy": acc,
            "start": start,
            "from_above": False,
            "above": None,
            "fails": True,
        }
    return None


def _chance_named_by_accuracy(ctx, s, above: float = 0.0) -> dict | None:
    """The chance level of a classifier over more than ``chance_max_classes`` classes,
    where the loss alone cannot name k (ln 101 / ln 100 = 1.002) and the run's own top-1
    accuracy does: among the k whose ln(k) lies within ``chance_tol_level`` of the loss's
    median, those with a logged accuracy (:func:`_accuracy_levels`) that held one level
    (:func:`_accuracy_held`), whose own level -ln(accuracy) of its second half is within
    ``chance_tol_level`` of the loss's median too, and which sits within
    :data:`CHANCE_NAMED_BAND` of 1/k (a language model at a loss of 4.6 nats scores 0.2,
    a 100-class guesser 0.01), the roundest (fewest significant digits) of those whose
    ln(k) is within :data:`CHANCE_NAMED_ROUND` of the loss's median (class counts are
    mostly round, and neither the loss nor an accuracy of 1/k tells 1,000 from 1,001),
    else the one nearest it; then the loss must sit at that level by :func:`chance_level`'s
    measure. ``s``: the finite train loss. ``None`` otherwise, or for
    k above :data:`CHANCE_NAMED_MAX_CLASSES`. The same dict as :func:`chance_state`'s
    (``s``, ``name``, ``hit``, ``z``, ``accuracy``).

    With ``above`` (``chance_guess_above``), the reading of a guesser whose loss sits above
    ln(k), by up to that share: the loss's median may sit that far above the accuracy's
    level -ln(accuracy) and above ln(k), k is the roundest (then nearest) class count whose
    1/k the accuracy sits within :data:`CHANCE_NAMED_BAND` of, and every logged accuracy
    must say the model guesses to the end of the run (:func:`_accuracy_guesses`)."""
    th = ctx.th
    med = float(median(s.values)) if len(s) else math.nan
    tol = th.chance_tol_level
    up = max(tol, above)
    if not math.log(th.chance_max_classes + 1) * (1 - tol) < med <= math.log(CHANCE_NAMED_MAX_CLASSES) * (1 + up):
        return None
    lo = max(th.chance_max_classes + 1, math.ceil(math.exp(med / (1 + up) if above else med * (1 - tol))))
    hi = min(CHANCE_NAMED_MAX_CLASSES, math.floor(math.exp(med * (1 + tol))))
    if hi < lo:
        return None
    # the accuracy names a level of its own, -ln(accuracy), that must agree with the loss's
    # as closely as the loss must sit at ln(k): a free k between lo and hi would otherwise
    # let any small metric within 40% of 1/k confirm a coincidence
    # An accuracy whose values all lie in [0, 1] may be a share or a percentage (timm's
    # eval_top1, DeiT's test_acc1 and torchvision's Acc@1 are percentages: a 1,000-class
    # guesser prints 0.1); both readings are tried, and only the one whose level agrees
    # with the loss's can name k.
    levels = [
        (key, level)
        for key, late, _, ok in _accuracy_levels(ctx, round(math.exp(med)))
        for level in ((late, late / 100) if _percent_ambiguous(ctx, key) else (late,))
        if ok and level > 0 and -tol <= med / -math.log(level) - 1 <= up and _accuracy_held(ctx, key)
    ]
    best = None
    for k in range(lo, hi + 1):
        for key, late in levels:
            if above and round(1 / late) <= th.chance_max_classes:
                continue  # an accuracy that names a k up to chance_max_classes is _guessing_above's
            if 1 - CHANCE_NAMED_BAND <= late * k <= 1 + CHANCE_NAMED_BAND:
                digits = len(str(k).rstrip("0"))
                if above:
                    # the accuracy names k: the loss sits anywhere in its band above ln(k)
                    rank = (False, digits, abs(math.log(k * late)))
                else:
                    gap = abs(math.log(k) - med)
                    rank = (gap > CHANCE_NAMED_ROUND * med, digits, gap)
                if best is None or rank < best[0]:
                    best = (rank, k, (key, late))
                break
    if best is None:
        return None
    _, k, acc = best
    hit = chance_level(
        s.values, k, th.chance_tol_level, th.chance_tol_block, th.chance_share, classes=(k,), above=above
    )
    if hit is None or (above and _accuracy_guesses(ctx, k) is None):
        return None
    return {"s": s, "name": "loss", "hit": hit, "z": hit[5], "accuracy": acc, "band_above": above or None}


def _percent_ambiguous(ctx, key: str) -> bool:
    """Whether the accuracy logged under ``key`` reads as a share and as a percentage
    alike: a top-1 named by its k (``top1``, ``acc1``: timm's, DeiT's and torchvision's
    spelling, which print percentages) with every finite value in [0, 1]
    (:func:`accuracy_as_share` takes it as a share). A plain ``accuracy`` or
    ``token_accuracy`` is a share: read as a percentage, a model right 99% of the time
    would name 100 classes beside a loss that happens to sit at ln 100."""
    if not _TOP1.search(key.lower()):
        return False
    for name, s in ctx.run.series.items():
        if (s.key or name) == key:
            v = ctx.finite(name).values
            return bool(v.size) and float(v.min()) >= 0 and float(v.max()) <= 1
    return False


def _accuracy_held(ctx, key: str) -> bool:
    """Whether the accuracy logged under ``key`` (at least :data:`CHANCE_NAMED_MIN_POINTS`
    finite values) held one level: its second half's median at most ``1 +
    CHANCE_NAMED_BAND`` times its first half's, and not both up by
    :data:`CHANCE_NAMED_RISE` and rising with a significant trend (Mann-Kendall z at or
    above ``dead_trend_z``). A guesser's accuracy does not climb; a model scored by exact match,
    pass@1 or a retrieval hit over a large gallery, small for good reason, does as it
    learns (0.01 -> 0.04)."""
    for k, _, v in accuracy_series(ctx):
        if k != key:
            continue
        if v.size < CHANCE_NAMED_MIN_POINTS:
            return False
        h = v.size // 2
        first, second = float(median(v[:h])), float(median(v[h:]))
        if second > (1 + CHANCE_NAMED_BAND) * first:
            return False
        # a rise is an effect and a trend: a guesser's 0.0099 -> 0.0100 over 3,000 points can
        # pass the trend test by chance
        return not (second > (1 + CHANCE_NAMED_RISE) * first and mann_kendall_z(v) >= ctx.th.dead_trend_z)
    return False


#: How far (relative) from 1/k a logged accuracy may sit and still name k past
#: ``chance_max_classes``: a guesser over 100 classes scores 0.0100 +- 0.0014 on
#: ImageNet-style evaluation sets of 5,000 or more (a binomial error of 14% at 1/k = 0.01 on
#: 5,000 examples, 4% on 50,000), so 0.75/k-1.25/k; models scored by a small metric for good
#: reason (retrieval top-1 over a gallery, exact match, pass@1, hit@1 over 50,000 items) sat
#: at 1.3-1.6/k of the k their loss named in a reviewer's cases.
CHANCE_NAMED_BAND = 0.25
#: The least rise (second half's median over the first's) that, with a significant trend,
#: says an accuracy climbs: a tenth, one binomial standard error of a guesser's accuracy on
#: 10,000 examples at 1/k = 0.01 (sqrt(0.01 * 0.99 / 10,000) = 0.001).
CHANCE_NAMED_RISE = 0.1
#: The fewest accuracy points that can show the accuracy held one level.
CHANCE_NAMED_MIN_POINTS = 5
#: How near (relative, in ln k) to the loss's median a rounder class count is preferred to
#: the nearest one: 0.5%, half the standard error of a median of 40 points at 5% noise
#: (1.2533 * 0.05 / sqrt(40) = 1%); ln 1001 and ln 1000 differ by 0.014%, ln 40 and ln 37
#: by 2.2%.
CHANCE_NAMED_ROUND = 0.005
#: The most classes a logged accuracy may name a chance level for: ImageNet-21k's 21,841
#: classes, with room; past it a top-1 accuracy of 1/k is below any evaluation's resolution.
CHANCE_NAMED_MAX_CLASSES = 100_000


def _held_out_at_chance(ctx, train: np.ndarray) -> dict | None:
    """A classifier that memorises its training labels and never beats a uniform guess on
    held-out data (labels shuffled against the inputs): the train loss falls below ln(k)
    while the eval loss holds at or climbs above it, never lower. TP-CHANCE-LEVEL's state
    (``"above": True``), or ``None``.

    k is a class count (2 to ``chance_max_classes``) whose 1/k a held-out accuracy's
    second half confirms (:func:`_accuracy_at_chance`); where several do (0.24 is within
    the tolerance of 1/4 and 1/5), the first, by how near its ln(k) is to the eval loss's
    first block (where a guesser starts), whose band below holds. Every block median of the eval loss (at least ``min_trend_points``
    evaluations) must sit in [ln(k) (1 - margin), ln(k) x ``chance_above_ratio``] (the
    margin as :func:`chance_level`'s), with the eval loss no lower than its first block by
    more than ``dead_min_improvement``: an eval loss that falls onto the band is a model
    learning (a language model at 1.6 nats with a token accuracy of 0.2), and one far above
    it is not a uniform guess's, and its end (the median of its last 10%, at least 3
    evaluations) no lower than ln(k) less that margin: a model that recovers in its last
    evaluations beat the guess. The train loss must end below ln(k) by more than the
    margin: a train loss at ln(k) is read by :func:`chance_level` itself.

    Args:
        train: the finite train losses, shape ``(n,)``.
    """
    th = ctx.th
    ev = ctx.finite("eval_loss")
    v = ev.values
    if v.size < th.min_trend_points or not np.all(v > 0):
        return None
    # An evaluation set so small that chance spans a wide band (8 examples: 0.15-0.85 for
    # two classes) cannot show a guesser: this reading needs the accuracy within twice
    # chance_acc_tol of 1/k.
    wide = 2 * th.chance_acc_tol
    matches = [
        (k, a)
        for k in range(2, int(th.chance_max_classes) + 1)
        if (a := _accuracy_at_chance(ctx, k, held_out=True, max_tol=wide))
    ]
    if not matches:
        return None
    # At least 4 blocks: a held-out series is short (8 evaluations give 4 blocks of 2).
    block = max(1, min(smoothing_block(v.size), v.size // 4))
    meds, _ = block_medians(v, block)
    if float(meds.min()) < float(meds[0]) * (1 - th.dead_min_improvement):
        return None  # the eval loss fell: the model learned something that carries
    margin = max(th.chance_tol_block, CHANCE_BLOCK_Z * level_se(noise_sigma(np.log(v)), block))
    late_train = float(median(train[-max(3, train.size // 10) :]))
    end = float(median(v[-max(3, v.size // 10) :]))
    for k, acc in sorted(matches, key=lambda m: abs(math.log(float(meds[0]) / math.log(m[0])))):
        level = math.log(k)
        if float(meds.min()) < level * (1 - margin) or float(meds.max()) > level * th.chance_above_ratio:
            continue
        if late_train >= level * (1 - margin) or end < level * (1 - margin):
            # a train loss at ln(k) is chance_level's; an eval loss that ends below the
            # guess (its last evaluations, which a trailing part-block leaves out of the
            # block medians) beat it: a model that recovered late learned
            continue
        hit = (k, level, float(median(v)), 1.0, end, mann_kendall_z(meds))
        return {"s": ev, "name": "eval_loss", "hit": hit, "z": hit[5], "accuracy": acc, "fails": True, "above": True}
    return None


def _chance_finding(ctx, st: dict, verb: str, tail: str):
    th = ctx.th
    s, name = st["s"], st["name"]
    k, level, med, at, end, _, margin = st["hit"]
    what = {"loss": "train loss", "eval_loss": "eval loss"}.get(name, "cross-entropy term")
    acc = st["accuracy"]
    data = {
        "classes": k,
        "chance_level": level,
        "median": med,
        "share_at_level": at,
        "end_level": end,
        "trend_z": st["z"],
        "series": name,
    }
    if acc:
        data.update(accuracy_key=acc[0], accuracy_late=acc[1])
    band = (
        f"{pct(margin)} of it (their own 99% margin, wider than {pct(th.chance_tol_block)} for points this noisy)"
        if margin > th.chance_tol_block
        else f"{pct(th.chance_tol_block)} of it"
    )
    if st.get("band_above"):
        # a guesser whose logits jitter scores ln(k) or more: its band reaches above the level
        band = f"{pct(margin)} below to {pct(st['band_above'] + margin)} above it (a prediction that ignores the input scores ln({k}) or more)"
        data["band_above"] = st["band_above"]
    data["block_margin"] = margin
    return ctx.finding(
        f"{what} {verb} ln({k}) = {num(level)}, a uniform guess over {k} classes",
        f"the {what} ({s.key}) has median {num(med)} over {len(s)} points (steps {step(s.steps[0])}–"
        f"{step(s.steps[-1])}), {pct(abs(med / level - 1))} {'above' if st.get('band_above') and med > level else 'from'} ln({k}) = {num(level)}; {pct(at)} of its block medians "
        f"are {'from' if st.get('band_above') else 'within'} {band}, and the run ends at {num(end)} (median of its last 10%), "
        f"{num(abs(level - end))} nats ({pct(abs(level - end) / level)} of ln({k})) "
        f"{'below' if end <= level else 'above'} it. " + tail,
        data,
        step=s.steps[0],
        line=s.lines[0],
    )


#: What TP-CHANCE-LEVEL and TP-NEAR-CHANCE need and read: one judgement (:func:`chance_state`).
_CHANCE_NEEDS = [Need(("loss", "eval_loss"), "min_trend_points", positive=True, all_finite=True)]
_CHANCE_TH = [
    "min_trend_points",
    "chance_above_ratio",
    "dead_min_improvement",
    "chance_max_classes",
    "chance_tol_level",
    "chance_tol_block",
    "chance_share",
    "chance_acc_tol",
    "chance_fail_max_classes",
    "chance_start_ratio",
    "chance_collapse_nats",
    "chance_collapse_above",
    "chance_guess_above",
    "chance_collapse_share",
    "dead_trend_z",
    "dead_trend_blocks",
    "dead_min_schedule_share",
]


@rule(
    "TP-CHANCE-LEVEL",
    Level.FAIL,
    "shape",
    "the loss sits at ln(k), a k-class classifier's uniform guess, for most of the run",
    needs=_CHANCE_NEEDS,
    thresholds=_CHANCE_TH,
    verdict_bearing=True,
    min_schedule_share="dead_min_schedule_share",
    after_warmup=True,
    implies=("TP-DEAD-RUN", "TP-FLAT", "TP-LOSS-STALLED", "TP-LOSS-FROZEN"),
    least_evidence="{chance_share:.0%} of the run's block medians at ln(k), the end of the run less than {chance_tol_block:.0%} below it (or within its noise margin), and a logged accuracy at 1/k (or, for k up to {chance_fail_max_classes}, no significant downward trend).",
    detects=(
        "A train loss (or, when it does not, an eval loss with at least {min_trend_points} evaluations) whose "
        "median is within {chance_tol_level:.0%} of ln(k) for some k from 2 to {chance_max_classes} (0.693, "
        "1.099, 1.386, 1.609, …), with at least {chance_share:.0%} of its block medians (blocks of 5% of the "
        "run) within {chance_tol_block:.0%} of it and the end of the run (the median of its last 10%) less than "
        "{chance_tol_block:.0%} of ln(k) below it (each of these medians of few noisy points within its own 99% margin, "
        "2.576 standard errors of a median of that many points on the log of the loss, where that is wider), while "
        "the learning rate (when logged) is above zero; and either no "
        "significant downward trend (Mann-Kendall z above -{dead_trend_z}) and k at most {chance_fail_max_classes}, or a "
        "logged accuracy whose second-half median is within {chance_acc_tol} of 1/k (wider for a small evaluation set: "
        "two binomial standard errors, its size read from the accuracy's granularity; for a train accuracy, "
        "of the median of its second-half batches, each a new sample), however significant the "
        "drift. Beyond {chance_max_classes} classes, where ln(k) levels crowd and the loss alone cannot name k, a "
        "train loss at ln(k) by the same measure for a k that a logged top-1 accuracy names: an accuracy that held "
        "one level (its second half at most 25% above its first, and not both 10% up and rising with a significant "
        "trend; at least 5 points), whose own level -ln(accuracy) is within {chance_tol_level:.0%} of the loss's median "
        "and whose second half is within 25% of 1/k (a language model at a loss of 4.6 nats scores about 0.2, a "
        "100-class guesser 0.01; exact match, pass@1 or a retrieval hit, small for good reason, rise as the model "
        "learns), the roundest such k within 0.5% of the loss's median in ln(k), up to 100,000 classes; a top-1 named "
        "by its k (top1, acc1) whose values all lie in [0, 1] is read as a share and as a percentage (timm, DeiT and "
        "torchvision print top-1 in percent: a 1,000-class guesser prints 0.1), and only the reading whose level agrees "
        "with the loss's names k. "
        "Also a cross-entropy term logged beside a judged loss of another kind (a distillation run's hard-label ce_loss "
        "beside its total; a key naming ce, xent, nll or cross entropy and no held-out data) at ln(k) by the same measure, "
        "never having fallen there from {chance_start_ratio}x ln(k), with a logged accuracy at 1/k and no held-out accuracy "
        "above it, while the judged loss improved by at most {dead_min_improvement:.0%} (medians of its first and last 10%, at most 500 points): "
        "the classifier inside the objective guesses and the objective does not move. "
        "A level with no accuracy to confirm it is TP-NEAR-CHANCE, a WARN; so is one where a held-out "
        "accuracy's second-half median sits above 1/k by more than twice that tolerance (the classifier beats a "
        "guess: mixup or label smoothing keep its loss high). A loss whose key names a regression error (mse, "
        "mae, l1, huber) or a cross-entropy in bits (bpd, bpb, bpc) is not read: ln(k) is no level of it. Also a model that learns its "
        "training labels and never beats the uniform guess on held-out data: a train loss that ends below ln(k) "
        "while every block median of the eval loss (at least {min_trend_points} evaluations) sits between ln(k) "
        "(less that margin) and {chance_above_ratio:g}x ln(k), never below its first block by "
        "{dead_min_improvement:.0%}, and its end (the median of its last 10%, at least 3 evaluations) not below "
        "ln(k) less that margin, and a held-out accuracy (a key naming val, eval, test or dev) whose second "
        "half sits at 1/k (of the class counts it matches, the one nearest the eval loss's first block whose band holds). "
        "Also a classifier that blew up and collapsed to a guess: a train loss above {chance_collapse_nats:g} nats in "
        "its first fifth (no uniform guess and no initialisation gives that: a blow-up) that, from its first point after "
        "that peak at or under {chance_start_ratio:g}x ln(k) (later spikes inside the stretch are its noise), holds ln(k) or just above it over at least {chance_collapse_share:.0%} of "
        "the run (median from {chance_tol_level:.0%} below to {chance_collapse_above:.0%} above, {chance_share:.0%} of the "
        "block medians in that band widened by their own 99% margin; a constant prediction scores ln(k) or more), with a "
        "logged accuracy at 1/k and no logged accuracy above it. And a guesser whose loss sits above the level, with no "
        "blow-up: a train (or eval) loss whose median is from {chance_tol_level:.0%} below to {chance_guess_above:.0%} "
        "above ln(k) ({chance_share:.0%} of its block medians in that band widened by their own margin, its end not "
        "below ln(k) by more than {chance_tol_block:.0%}; where it falls with a significant trend over at most "
        "{dead_trend_blocks} block medians while a logged accuracy climbs with one, a slow learner's first epochs look "
        "the same, and it is TP-NEAR-CHANCE's warning), logged with no terms of its own "
        "and no cross-entropy term "
        "beside it (a composite objective's total is no single cross-entropy), where a logged accuracy's second half sits "
        "within its tolerance of 1/k and names k, within half {chance_acc_tol} of the nearest, as well as any class count "
        "does, and no logged accuracy sits above 1/k by more than its tolerance, over its second half or its last tenth; "
        "for k beyond {chance_max_classes}, only after a blow-up, the k the accuracy names as above with the loss's median "
        "up to {chance_guess_above:.0%} above -ln(accuracy). An adversary's accuracy (a domain classifier's, a "
        "discriminator's, a critic's) is not the model's."
    ),
    why=(
        "ln(k) is the cross-entropy of predicting every one of k classes with probability 1/k: a classifier whose "
        "loss holds that value has learned nothing, not even the class frequencies."
    ),
    not_mean=(
        "A loss that passes through such a value on its way down is not stuck (its end sits well below it, and "
        "the {chance_share:.0%} share exempts it). It cannot know the task's class count: a regression loss that "
        "happens to sit at 0.693 is reported too, which is still a loss that does not move."
    ),
    causes="Labels unrelated to the inputs (shuffled, or a join that misaligned them), a collapsed output layer, a learning rate too small to leave the initialisation, features that carry no signal (all zeros, constant after a normalisation bug).",
    try_="Overfit a single batch; check that labels and inputs line up after loading and shuffling; print the output distribution; check the learning rate after warm-up.",
    objectives=("supervised",),
)
def check_chance_level(ctx):
    st = chance_state(ctx)
    if st is None:
        return
    acc = st["accuracy"]
    if not st["fails"]:
        return  # a drift along ln(k) with no accuracy to confirm it: TP-NEAR-CHANCE's
    if st.get("above"):
        k, level = st["hit"][0], st["hit"][1]
        tr = ctx.finite("loss").values
        yield ctx.finding(
            f"held-out loss never beat a uniform guess over {k} classes while the train loss fell: nothing "
            "the model learns carries to held-out data",
            f"every block median of the eval loss ({st['s'].key}, {len(st['s'])} evaluations, steps "
            f"{step(st['s'].steps[0])}–{step(st['s'].steps[-1])}) is at or above ln({k}) = {num(level)} (median "
            f"{num(st['hit'][2])}, end {num(st['hit'][4])}), and it never fell from its first level; {acc[0]} has a "
            f"second-half median of {num(acc[1])}, 1/{k}; the train loss fell from {num(tr[0])} to "
            f"{num(float(median(tr[-max(3, tr.size // 10) :])))}, below ln({k}).",
            {
                "classes": k,
                "chance_level": level,
                "median": st["hit"][2],
                "end_level": st["hit"][4],
                "series": "eval_loss",
                "accuracy_key": acc[0],
                "accuracy_late": acc[1],
                "held_out": True,
            },
            step=st["s"].steps[0],
            line=st["s"].lines[0],
        )
        return
    if st.get("collapse"):
        k, level, med, at, end, _, margin = st["hit"]
        peak, i0 = st["collapse"]
        s = st["s"]
        yield ctx.finding(
            f"train loss blew up and collapsed to ln({k}) = {num(level)}, a uniform guess over {k} classes",
            f"the train loss ({s.key}) reached {num(peak)} in the first fifth of the run, above "
            f"{num(ctx.th.chance_collapse_nats)} nats (no guess and no initialisation: a blow-up), and from step {step(s.steps[i0])} ({len(s) - i0} of its "
            f"{len(s)} points) sits at or just above ln({k}): median {num(med)}, {pct(at)} of its block medians from "
            f"{pct(margin)} below to {pct(ctx.th.chance_collapse_above + margin)} above it, ending at {num(end)}. A "
            f"classifier whose outputs collapsed to one prediction scores ln({k}) or more, never less. The accuracy "
            f"confirms it: {acc[0]} has a second-half median of {num(acc[1])}, 1/{k}.",
            {
                "classes": k,
                "chance_level": level,
                "median": med,
                "share_at_level": at,
                "end_level": end,
                "series": "loss",
                "accuracy_key": acc[0],
                "accuracy_late": acc[1],
                "peak": peak,
                "collapse_step": s.steps[i0],
                "block_margin": margin,
            },
            step=s.steps[i0],
            line=s.lines[i0],
        )
        return
    if acc:
        tail = f"The accuracy confirms it: {acc[0]} has a second-half median of {num(acc[1])}, 1/{st['hit'][0]}."
    else:
        tail = f"It never left the level and shows no significant downward trend (Mann-Kendall z {st['z']:.2f})."
    yield _chance_finding(ctx, st, "is stuck at chance: it sits at", tail)


def chance_level_isolated(k: int, th) -> bool:
    """Whether ln(k) stands apart enough from its neighbours that a loss settling near it
    is unlikely to be a coincidence: the window a run's median may sit in (within
    ``chance_tol_level`` of ln k, on both sides) covers at most ``chance_coincidence_share``
    of the level's neighbourhood (half the gap from ln(k-1) to ln(k+1)). With a 2% window
    that holds for k = 2, 3, 4 (5%, 13%, 22% of the neighbourhood) and no more (k = 6: 43%;
    k = 10: 92%)."""
    window = 2 * th.chance_tol_level * math.log(k)
    neighbourhood = (math.log(k + 1) - math.log(k - 1)) / 2
    return window <= th.chance_coincidence_share * neighbourhood


def _at_level_early(st: dict, th) -> bool:
    """Whether the judged loss reached ln(k) within the first ``chance_onset_share`` of
    the run and held it: the first block (5% of the run each, as :func:`chance_level`
    reads them: :func:`chance_block`) at the level (within the wider of ``chance_tol_block`` and its own 99%
    margin) from which at least ``chance_share`` of the blocks to the end are at it too
    starts within that share (the first or, at 20 blocks, the second block). A
    guesser's loss gets there at once (a shift of the output bias: the first few percent
    of the run) and holds it; a model that learns and settles near a level takes its
    warm-up and more (new users' plateaus and the corpus's healthy fine-tunes reached
    theirs at 10% to 55% of the run)."""
    s = st["s"]
    level = st["hit"][1]
    v = s.values
    block = chance_block(v.size)
    meds, _ = block_medians(v, block)
    if not meds.size or np.any(v <= 0):
        return False
    margin = max(th.chance_tol_block, CHANCE_BLOCK_Z * level_se(noise_sigma(np.log(v)), block))
    at = np.abs(meds / level - 1) <= margin
    # the share of the blocks from each one to the end that are at the level
    held = np.cumsum(at[::-1])[::-1] / np.arange(meds.size, 0, -1)
    first = np.flatnonzero(at & (held >= th.chance_share))
    return bool(first.size) and first[0] <= th.chance_onset_share * meds.size + 1e-9


@rule(
    "TP-NEAR-CHANCE",
    Level.WARN,
    "shape",
    "the loss drifts along ln(k), a k-class classifier's uniform guess, for most of the run",
    needs=_CHANCE_NEEDS,
    thresholds=[*_CHANCE_TH, "chance_coincidence_share", "chance_onset_share"],
    min_schedule_share="dead_min_schedule_share",
    after_warmup=True,
    detects=(
        "TP-CHANCE-LEVEL's level (the median within {chance_tol_level:.0%} of ln(k), {chance_share:.0%} of the "
        "block medians within {chance_tol_block:.0%}, the end less than {chance_tol_block:.0%} of ln(k) below it) "
        "on a loss that falls with a significant trend (Mann-Kendall z at most -{dead_trend_z}), or sits at ln(k) "
        "for a k above {chance_fail_max_classes} (by default: any k), while no logged accuracy sits at 1/k: a classifier that has moved less than {chance_tol_block:.0%} of ln(k) away from a "
        "uniform guess, or a loss of another kind that happens to sit at that value. Not where a held-out top-1 "
        "accuracy (acc, accuracy, acc1, top1) ends above 1/k by more than twice its tolerance and no logged "
        "accuracy sits at 1/k: that classifier beats a guess. With no accuracy at 1/k, a k whose ln(k) crowds its "
        "neighbours (the {chance_tol_level:.0%} window covers more than {chance_coincidence_share:.0%} of the way "
        "to them: k of 5 and more) is read only where the loss reached ln(k) within the first "
        "{chance_onset_share:.0%} of the run (its first block at the level, 5% of the run each, starts there) and "
        "held it, as a guesser's does. Also TP-CHANCE-LEVEL's guesser above ln(k) (an accuracy at 1/k) whose loss "
        "falls with a significant trend while a logged accuracy climbs with one: a slow learner's first epochs, or a "
        "guesser creeping towards its majority class's share. Not, with no accuracy at 1/k, a loss that "
        "fell onto the level from {chance_start_ratio:g}x ln(k) or more, still falls with that significant "
        "trend and ends more than {chance_tol_block:.0%} below ln(k) (a noise band wider than that held it): a "
        "learner passing through the level."
    ),
    why=(
        "A k-class classifier whose loss has left ln(k) by only a few percent after most of its run has learned "
        "next to nothing, however significant the drift; but a language model or a regression loss can sit at "
        "1.386 or 1.792 by coincidence, and nothing in the log tells the two apart, so this warns."
    ),
    not_mean=(
        "It does not mean the run is at chance: without an accuracy at 1/k the log cannot say the loss is a "
        "k-class cross-entropy. A language model's loss near 1.4-2.3 lands near some ln(k) often."
    ),
    causes="Labels that carry almost no signal, a learning rate too small to leave the initialisation, a collapsed output layer; or a coincidence of level.",
    try_="Log the accuracy: at 1/k the classifier guesses. Overfit a single batch; check labels against inputs.",
    objectives=("supervised",),
)
def check_near_chance(ctx):
    st = chance_state(ctx)
    if st is None or st["fails"]:
        return
    if st.get("above") and not st["accuracy"]:
        # A held-out accuracy well above 1/k, and no accuracy at 1/k: the classifier beats
        # a guess on data it was not trained on, so the level is the objective's (mixup,
        # label smoothing), and no warning is true of it.
        return
    th, hit = ctx.th, st["hit"]
    k = hit[0]
    if (
        st.get("from_above")
        and not st["accuracy"]
        and st["z"] <= -th.dead_trend_z
        and hit[4] < hit[1] * (1 - th.chance_tol_block)
    ):
        # it fell onto ln(k) from twice that or more, still falls with a significant
        # trend and ends below the level by more than its fixed band: a learner passing
        # through the level (a noise band wide enough to hold it read it as "at" it), not
        # a model held there
        return
    if not st["accuracy"] and not chance_level_isolated(k, th) and not _at_level_early(st, th):
        # no accuracy names k, the loss did not reach ln(k) at once as a guesser's does,
        # and the levels crowd so that a settled loss lands near some ln(k) by coincidence
        return
    if st.get("slow_start"):
        acc = st["accuracy"]
        tail = (
            f"It falls with a significant trend onto the level from above while {acc[0]} climbs with one, still "
            f"within its tolerance of 1/{k} ({num(acc[1])} over its second half): the first epochs of a slow learner "
            "look so, and so does a guesser whose accuracy creeps towards its majority class's share; the log cannot "
            "tell them apart yet."
        )
    elif st.get("from_above"):
        acc = st["accuracy"]
        tail = (
            f"It fell there from {num(st['start'])} (median of its first 3 points), "
            f"{times(st['start'] / st['hit'][1])} ln({k}): a {k}-class model that guesses starts at ln({k}), so this "
            f"is a model at the floor of its data (a language model over text that branches {k} ways) or a classifier "
            "that learned only the class frequencies, which the log cannot tell apart"
            + (f"; {acc[0]} sits at 1/{k} ({num(acc[1])})." if acc else ".")
        )
    else:
        tail = (
            f"It falls with a significant trend (Mann-Kendall z {st['z']:.2f}) but has left the level by less than "
            f"{pct(ctx.th.chance_tol_block)} of ln({k})"
            if st["z"] <= -ctx.th.dead_trend_z
            else (
                "It never left the level"
                if _at_level_early(st, ctx.th)
                else f"It settled there after falling from {num(st['start'])} (median of its first 3 points)"
            )
            + f", but a loss of another kind (a language model's, a regression's) settles at ln({k}) by coincidence "
            "as well"
        ) + (
            f"; the held-out accuracy {st['above'][0]} ends at {num(st['above'][1])}, well above 1/{k}: the level is "
            "more likely a coincidence of the objective (mixup, label smoothing keep a loss high) than a guess."
            if st.get("above")
            else f"; no logged accuracy sits at 1/{k} to say whether this is a guessing classifier."
        )
    yield _chance_finding(ctx, st, "drifts along" if st["z"] <= -ctx.th.dead_trend_z else "sits at", tail)


def prior_collapse(ctx) -> dict | None:
    """A binary classifier collapsed onto its class prior: at each of the last
    ``prior_min_evals`` points a loss (the eval loss with a held-out accuracy, else the
    train loss with a train accuracy) and a top-1 accuracy logged at the same step, the
    accuracy one bit-identical value p above 0.5 and below 1 (the majority share) and the
    loss within ``prior_loss_tol`` of the prior's entropy H(p) = -p ln p - (1-p) ln(1-p).
    Returns the numbers, or ``None``. Computed once per judgement."""

    def compute():
        th = ctx.th
        m = int(th.prior_min_evals)
        for name, held in (("eval_loss", True), ("loss", False)):
            if not ctx.has(name):
                continue
            ls = ctx.finite(name)
            for _, acc in sorted(ctx.run.series.items()):
                if not is_accuracy_key(acc.key) or measured_held_out(acc.key) != held:
                    continue
                ok = np.isfinite(acc.values)
                ia, il = common_steps(acc.steps[ok], ls.steps)
                a = accuracy_as_share(acc.values[ok])[ia]
                lv, st = ls.values[il], ls.steps[il]
                if a.size < m or not (0.5 < a[-1] < 1) or not np.all(a[-m:] == a[-1]):
                    continue
                p = float(a[-1])
                h = -p * math.log(p) - (1 - p) * math.log(1 - p)
                if not np.all(np.abs(lv[-m:] / h - 1) <= th.prior_loss_tol):
                    continue
                return {"loss": ls, "accuracy_key": acc.key, "p": p, "entropy": h, "values": lv[-m:], "steps": st[-m:]}
        return None

    return ctx.memo("prior_collapse", compute)


@rule(
    "TP-PRIOR-COLLAPSE",
    Level.FAIL,
    "shape",
    "a binary classifier predicts its class prior: accuracy pinned at the majority share, loss at the prior's entropy",
    needs=[Need(("loss", "eval_loss"), "prior_min_evals", positive=True, all_finite=True)],
    thresholds=["prior_min_evals", "prior_loss_tol", "tiny_lr", "min_value_points"],
    implies=("TP-DEAD-RUN", "TP-LOSS-STALLED", "TP-NEAR-CHANCE", "TP-CHANCE-LEVEL"),
    least_evidence=(
        "{prior_min_evals} points in a row, to the last, where a top-1 accuracy and a loss are logged at the same "
        "step: the accuracy one bit-identical value p in (0.5, 1), the loss within {prior_loss_tol:.0%} of H(p)."
    ),
    detects=(
        "At each of the last {prior_min_evals} steps where both are logged, a top-1 accuracy (held-out with the eval "
        "loss, else a train accuracy with the train loss) holds one bit-identical value p above 0.5 and below 1, and "
        "the loss sits within {prior_loss_tol:.0%} of H(p) = -p ln p - (1-p) ln(1-p), the cross-entropy of "
        "predicting the class frequencies of a two-class problem whose majority class is a share p: the model "
        "outputs the prior for every example. Not where the learning rate is at most {tiny_lr} over the run (at least "
        "{min_value_points} logged rates): nothing moves the predictions of such a model, whatever they are."
    ),
    why=(
        "Chance for an imbalanced classifier is not ln k but the entropy of its class prior, and a model that "
        "predicts the prior scores exactly the majority share. Both at once, evaluation after evaluation, is a "
        "model whose outputs ignore their inputs: a learning rate that killed the units, inputs scaled to nothing, "
        "labels unrelated to the inputs."
    ),
    not_mean=(
        "Not a converged model on a small evaluation set whose accuracy holds (its loss sits below H(p), or "
        "moves), nor a miscalibrated one above H(p). More than two classes are not judged: the prior's entropy "
        "then depends on the minority shares, which the log does not give."
    ),
    causes="Inputs not normalised (or scaled to nothing), a learning rate that killed the ReLUs, labels unrelated to the inputs, a class imbalance the loss does not weight.",
    try_="Check the input scale and the predicted class distribution of one batch; weight the loss by class or resample; overfit one batch.",
    objectives=("supervised",),
)
def check_prior_collapse(ctx):
    st = prior_collapse(ctx)
    if st is None:
        return
    # A learning rate of about zero leaves every prediction where the checkpoint put it: a
    # frozen accuracy and loss then say nothing of a prior (a 5-class fine-tune at lr 0 held
    # 0.882 and 0.3624, within 1% of H(0.882) by chance). TP-ZERO-LR names that run.
    if _tiny_lr(ctx) is not None:
        return
    ls, p, h, m = st["loss"], st["p"], st["entropy"], len(st["values"])
    at = int(np.searchsorted(ls.steps, st["steps"][0]))
    yield ctx.finding(
        f"the model predicts its class prior: {st['accuracy_key']} is exactly {num(p)} and the {ls.key} sits at "
        f"the prior's entropy {num(h)}",
        f"at each of the last {m} steps with both logged (steps {step(st['steps'][0])}–{step(st['steps'][-1])}), "
        f"{st['accuracy_key']} is exactly {num(p)} and {ls.key} is {num(float(np.min(st['values'])))}–"
        f"{num(float(np.max(st['values'])))}, within {pct(ctx.th.prior_loss_tol)} of H({num(p)}) = {num(h)}: the "
        "cross-entropy and the accuracy of predicting the class frequencies of a two-class problem for every example.",
        {"accuracy_key": st["accuracy_key"], "majority_share": p, "prior_entropy": h, "points": m, "series": ls.key},
        step=st["steps"][0],
        line=ls.lines[at],
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


#: Points a loss needs before TP-DIVERGE measures the autocorrelation of its noise (see
#: check_diverge): 40 give at least 8 block medians of 5 points to follow the curve by.
DIVERGE_AR_MIN_POINTS = 40


def _lr_climb(ctx, s) -> tuple[float, float, float, float] | None:
    """``(step, before, peak, regain)`` when the learning rate climbed after its warm-up: from
    ``before`` (its median up to the step where its rise begins) to at least
    ``diverge_lr_rise`` times that (``peak``, its highest value after), the rise starting
    after the learning rate had held or fallen for at least a tenth of the run, taking 3
    logs or more (or jumping there and holding half of it for 3 logs or more), ending at
    half its peak or more, and reaching a rate the run never held after its warm-up (not
    a warm restart or a cyclic schedule). ``regain`` is the share of the fall a held rise
    of the loss must give back to count with this cause: ``diverge_new_rate_regain`` when
    ``peak`` is at least ``diverge_new_rate`` times every rate the run held up to the climb
    (a rate no schedule of the run set), else ``diverge_caused_regain``. ``None``
    without a logged learning rate or such a climb."""
    if not ctx.has("lr"):
        return None
    lr = ctx.finite("lr")
    x, st = lr.values, lr.steps
    if x.size < 5:
        return None
    # The start of the climb: the last point at which the lr sits at its lowest since the
    # peak of the warm-up (a warm-up is not a climb).
    peak0 = int(np.argmax(x[: max(2, x.size // 10 + 1)]))
    floor = float(np.min(x[peak0:]))
    low = peak0 + int(np.flatnonzero(x[peak0:] <= floor)[-1])
    if low < x.size // 10 or low >= x.size - 1:
        return _new_rate_jump(ctx, x, st, peak0)
    before = float(median(x[max(0, low - 5) : low + 1]))
    peak = float(np.max(x[low:]))
    if not before > 0 or peak < ctx.th.diverge_lr_rise * before:
        return None
    # A climb that persists: it takes at least 3 logs to reach its peak, or it jumps there
    # and holds half of it or more for 3 logs (a rate raised by hand, a resumed run given a
    # larger one), and the rate ends at half of it or more. A warm restart jumps in one
    # log and decays again (SGDR, a cyclic schedule): a schedule, not a runaway.
    top = low + int(np.argmax(x[low:]))
    held = int(np.count_nonzero(x[top:] >= 0.5 * peak))
    if (top - low < 3 and held < 3) or x[-1] < 0.5 * peak:
        return _new_rate_jump(ctx, x, st, peak0)
    # A climb back to a rate the run already held after its warm-up is a cycle of the
    # schedule (cosine with warm restarts, a cyclic or triangular rate), not a runaway.
    if low > peak0 and float(np.max(x[peak0:low])) >= 0.5 * peak:
        return None
    th = ctx.th
    new_rate = peak >= th.diverge_new_rate * float(np.max(x[: low + 1]))
    return float(st[low]), before, peak, th.diverge_new_rate_regain if new_rate else th.diverge_caused_regain


def _new_rate_jump(ctx, x: np.ndarray, st: np.ndarray, peak0: int) -> tuple[float, float, float, float] | None:
    """:func:`_lr_climb`'s answer for a rate that jumps, after the warm-up's peak ``peak0``
    and a tenth of the run, to ``diverge_new_rate`` times every rate logged before it
    (``x``, at steps ``st``) and holds half of that for a tenth of the logs (3 at least),
    whatever the schedule does after it: a schedule that goes on decaying from the wrong
    rate (a resume given a rate 100x too large, its cosine continued) ends low, but no warm
    restart or cycle reaches a rate the run never came near; a jump that decays again within
    a tenth of the run is a schedule's (a fresh decay of its own)."""
    th = ctx.th
    most = np.maximum.accumulate(x)
    jump = np.flatnonzero((x[1:] >= th.diverge_new_rate * most[:-1]) & (most[:-1] > 0)) + 1
    jump = jump[jump >= max(peak0 + 1, x.size // 10)]
    if not jump.size:
        return None
    i = int(jump[0])
    if int(np.count_nonzero(x[i:] >= 0.5 * x[i])) < max(3, x.size // 10):
        return None
    before = float(median(x[max(0, i - 6) : i]))
    return float(st[i - 1]), before, float(np.max(x[i:])), th.diverge_new_rate_regain


def _stands_apart(y: np.ndarray, k: int, level: float) -> bool:
    """Whether a starting level of the first ``k`` points, ``level`` on the log scale of
    ``y`` (the log of a loss), sits further below the 4 points after it (their median)
    than any later point strays from the median of its four neighbours
    (:func:`~trainproof.rules._stats.neighbour_median`): how far the run's own noise
    throws a single point, tails included. A start held by fewer points than a level needs
    is one more stray point when the run's noise throws points as far."""
    idx, around = neighbour_median(y[k:])
    largest = float(np.max(np.abs(y[k:][idx] - around))) if idx.size else 0.0
    return float(median(y[k : k + 4])) - level > largest


#: Share of its climb by which a running average's climb sits above its chord, on average,
#: at least (see _average_filling_up): a filling average sits about a sixth above it
#: (1 - e^-x to 90% of its top), a steady climb on it, an accelerating blow-up below it.
AVERAGE_CHORD_TOL = 0.05


def _average_filling_up(v: np.ndarray, steps: np.ndarray, slack: float) -> int | None:
    """The index where the climb after a lone low first point ends, when the climb has
    the shape of a running average started at zero filling up (``r = b * r + (1 - b) *
    loss`` from ``r = 0``, logged before it reaches the loss's level) rather than of a
    blow-up from the start; ``None`` otherwise.

    ``v``: the loss, in log order; ``steps``: their steps; ``slack``: the threshold
    ``average_fill_slack``. Two things hold, each what such an average must do:

    * the climb, to where it first comes within a tenth of its highest point in the first
      quarter of the run, is concave: its points sit above the chord from the first point,
      on average, by at least ``AVERAGE_CHORD_TOL`` of the climb. An average approaches the
      loss as ``1 - b**t``, about a sixth of its climb above the chord on average; a steady
      climb sits on it, and a blow-up that accelerates (each rise larger than the last)
      below it. The mean, not each point: the noise of the losses moves each point of the
      average;
    * the second point is at most ``slack`` x (steps between them + 1) the first: an
      average over constant losses grows by at most one loss a step, so it rises at most
      t + 1 times in t steps (the slack lets the loss itself move).

    The shape alone does not clear a run: TP-DIVERGE also asks that the run falls after the
    climb (a blow-up that holds its new level has the same concave step up).
    """
    n = v.size
    top = max(3, n // 4)
    # An average's slow approach to its top and a noisy plateau after it are no climb.
    p = int(np.argmax(v[:top] >= 0.9 * float(np.max(v[:top]))))
    if p < 1:
        return None
    t = steps[: p + 1] - steps[0]
    if t[-1] <= 0:
        return None
    chord = v[0] + (v[p] - v[0]) * t / t[-1]
    if p >= 2 and float(np.mean(v[1:p] - chord[1:p])) < AVERAGE_CHORD_TOL * (v[p] - v[0]):
        return None
    gap = max(float(steps[1] - steps[0]), 1.0)
    if v[1] > slack * (gap + 1) * v[0]:
        return None
    return p


def _three_above(values: np.ndarray, bar: float, best_idx: int) -> tuple[np.ndarray, np.ndarray]:
    """``(high, three)``: the points after ``best_idx`` above ``bar``, and those that are so
    with the next two (never the last two points, which have fewer after them)."""
    high = values > bar
    high[: best_idx + 1] = False
    three = high.copy()
    for k in (1, 2):
        three[:-k] &= high[k:]
    three[max(0, values.size - 2) :] = False
    return high, three


def left_level_step(steps: np.ndarray, values: np.ndarray, bar: float, best_idx: int) -> float:
    """The step where the loss first left the level it held at ``best_idx``: the first point
    after it that, with the next two, is above ``bar`` (held or not), else the last step.
    ``steps``, ``values``: shape ``(n,)``."""
    i = np.flatnonzero(_three_above(values, bar, best_idx)[1])
    return float(steps[int(i[0])]) if i.size else float(steps[-1])


def held_climb_onset(values: np.ndarray, bar: float, best_idx: int) -> int | None:
    """The index where a climb above ``bar`` after ``best_idx`` begins and is held, or
    ``None``: the first point after the best level that, with the next two, is above the
    bar, with at least 80% of the points from it to the end above it too. A lone high point
    followed by a return to the old level is not where a run went wrong, and the last two
    points of a log have fewer than two after them: they cannot show a held climb.
    ``values``: shape ``(n,)``; ``bar`` on their scale."""
    n = values.size
    high, held = _three_above(values, bar, best_idx)
    suffix = np.cumsum(high[::-1])[::-1] / np.arange(n, 0, -1)
    cand = np.flatnonzero(held & (suffix >= 0.8))
    return int(cand[0]) if cand.size else None


def _warm_restart_cycle(ctx, s, meds, centres, best_idx: int, end: float, gate: float) -> bool:
    """Whether the rise after the best level is a new cycle of a restarting schedule.

    After the best level the learning rate climbed back to a rate the run held before it
    (:func:`~trainproof.rules._shared.lr_restart_after`: cosine with warm restarts, a
    cyclic rate), and the end level is no higher, beyond the noise ``gate`` (log scale),
    than the highest block median of the previous high-rate phase: from the start of the
    last stretch before the cycle's trough where the rate was at least half the new peak
    (the previous restart), to the best. The loss
    rises with the rate and comes down with it; a blow-up after a restart climbs above
    where the previous cycle stood at the same rate.
    """
    best_step = float(s.steps[best_idx])
    restart = lr_restart_after(ctx, best_step)
    if restart is None:
        return False
    lr = ctx.finite("lr")
    # Before the cycle's trough: a best half-way up a rising phase of a cyclic rate sits
    # among rates already above half the peak.
    before = lr.steps < min(best_step, restart[3])
    high = before & (lr.values >= 0.5 * restart[2])
    if not high.any():
        return False
    # The start of the last stretch of high rates before the trough: the previous restart.
    first = runs_of(high)[-1][0]
    at = s.steps[centres]
    prev = meds[(at >= float(lr.steps[first])) & (at <= best_step)]
    return prev.size > 0 and math.log(end) - math.log(float(np.max(prev))) <= gate


def _returned_from_dip(meds: np.ndarray, j: int, tied_total: int, end: float, gate: float, se_best: float, th) -> bool:
    """Whether the best level is a brief dip below a plateau the run held just before it,
    and the run ends back at that plateau rather than above it.

    ``meds``: the block medians; ``j``: the best block; ``gate``: the rule's noise gate (on
    the log of the loss); ``se_best``: the best level's standard error. The dip is the
    stretch of consecutive blocks around ``j`` statistically tied with the best, at most
    ``diverge_dip_blocks`` long; the plateau is the two blocks right before it, neither the
    run's first block (its starting level, which a run that unlearns everything returns to),
    tied with each other (a level held, not a descent passed through), and no lower than
    the end level by more than the gate. A run that dips and returns has lost nothing it
    held; a divergence climbs above where the run stood before its best.
    """
    logm = np.log(meds)
    tie = th.diverge_noise_z * math.sqrt(2) * se_best
    lo = hi = j
    while lo > 0 and logm[lo - 1] - logm[j] <= tie:
        lo -= 1
    while hi + 1 < logm.size and logm[hi + 1] - logm[j] <= tie:
        hi += 1
    if hi - lo + 1 > th.diverge_dip_blocks or lo < 3 or tied_total > hi - lo + 1:
        return False
    a, b = logm[lo - 2], logm[lo - 1]
    if abs(a - b) > tie:
        return False
    return math.log(end) - min(a, b) <= gate


#: The thresholds :func:`diverge_state` reads, declared by both rules that share it
#: (TP-DIVERGE and TP-OBJECTIVE-CHANGED).
DIVERGE_THRESHOLDS = [
    "min_trend_points",
    "fitted_loss_level",
    "rescale_window_points",
    "rescale_min_points",
    "rescale_noise_ratio",
    "diverge_ratio",
    "diverge_noise_z",
    "diverge_level_points",
    "diverge_start_points",
    "average_fill_slack",
    "floor_regain_share",
    "diverge_dip_blocks",
    "diverge_caused_ratio",
    "diverge_caused_regain",
    "climb_durable_share",
    "diverge_new_rate",
    "diverge_new_rate_regain",
    "diverge_lr_rise",
    "blowup_ratio",
    "blowup_points",
    "objective_eval_after",
    "objective_eval_resolution",
    "objective_climb_share",
    "objective_weight_rise",
    "objective_accuracy_rise",
    "objective_eval_climb_share",
    "objective_fill_max_ratio",
    "dead_min_improvement",
    "dead_trend_z",
]


@rule(
    "TP-DIVERGE",
    Level.FAIL,
    "shape",
    "the run ends well above the best loss level it reached",
    needs=[Need("loss", "blowup_min_points", positive=True, all_finite=True)],
    thresholds=[*DIVERGE_THRESHOLDS, "blowup_min_points"],
    verdict_bearing=True,
    implies=("TP-DEAD-RUN", "TP-LOSS-STALLED"),
    least_evidence="The run's own noise, measured on the log of the loss: the end level must clear the best level by the ratio and by {diverge_noise_z:g} standard errors of the two levels. A curve needs {min_trend_points} points; a blow-up is read from {blowup_min_points} (three before the climb).",
    detects=(
        "A run whose end level (median of its last 10% of points, at least 3) is more than {diverge_ratio}x "
        "the best level it held, and above it by more than {diverge_noise_z:g} standard errors of the two "
        "levels (noise measured on the log of the loss; a block minimum also allows for the lowest of several "
        "tied blocks sitting low by chance). The best level is the lowest of: the medians of consecutive "
        "blocks of 5% of the run (at least 3 points), a block shorter than {diverge_level_points} points raised to the lowest median of "
        "{diverge_level_points} consecutive points when that is higher (two low points of a 3-point block are not a level); the starting level, the higher of the first "
        "{diverge_start_points} points when they agree within the noise; and the first point alone, when the "
        "run right after it (median of the next 5 points) sits more than 3x above it, and further above it than any "
        "other point of the run strays from the median of its four neighbours (a low first point among heavy-tailed "
        "noise is one more stray point), unless it starts a running average from zero filling up: the second point above it beyond the "
        "noise but at most {average_fill_slack:g}x (steps between them + 1) it, the climb after it concave (on "
        "average above its chord), and the run then falling below that climb's highest block beyond the noise "
        "(the best level is then looked for after the climb). Not a divergence: a loss whose end level is at most "
        "{fitted_loss_level:g} (a fitted level: a converged model resumed with a fresh optimizer drifts 1e-5 -> "
        "5e-5); a climb that regains less than {floor_regain_share:.0%} of the drop from the first block's level to the "
        "best level (a loss at its noise floor after a large fall). The climb must be held: from some point "
        "after the best level (the onset the finding names), that point and the next two are above the bar and "
        "so are at least 80% of the points to the end; a few high points among low ones at the end of the log "
        "are not a level the run moved to. Not a new cycle of a restarting schedule: a learning rate that climbed after the best level back to a "
        "rate the run held before, with the end level no higher, within the gate, than the highest block level of the previous "
        "high-rate phase. With a cause in the log, a learning rate "
        "that climbed at least {diverge_lr_rise:g}x after it had held or fallen (not a warm-up), a smaller rise "
        "counts: at least {diverge_caused_ratio}x the best level, past the same noise gate, giving back at least "
        "{diverge_caused_regain:.0%} of the fall ({diverge_new_rate_regain:.0%} when the rate climbed to "
        "{diverge_new_rate:g}x or more of every rate the run held before). A climb while a logged setting of the loss's level moved "
        "(TP-LOSS-CLIMB's setting clause) and no eval loss was logged over it is TP-LOSS-CLIMB's WARN. Not a divergence when the loss measures something else after "
        "its best level (TP-OBJECTIVE-CHANGED says so instead): an eval loss that did not get worse over the climb "
        "(the median of its last 3 of at least {objective_eval_after} evaluations after the climb began no higher than "
        "its best evaluation, beyond {diverge_noise_z:g} standard errors of the evaluations' own noise where that allowance is at most {objective_eval_resolution:.0%} of the level the eval loss held just before the climb, while the run held the level it climbed from; with no evaluation then, no higher than "
        "its first evaluation in the climb while the train loss climbs on by {objective_climb_share:.0%} of its climb "
        "after it), a logged loss-term weight (beta, "
        "kl_weight, kl_coef, kl_warmup, …) or a noise level never falling (sigma, noise_level) that climbed "
        "{objective_weight_rise}x or more after the best level, a logged stage (a key naming a stage or a curriculum, not a scheduler's phase) that changed after it, "
        "a data mixture's weight, a temperature, a batch size or a count of negatives that moved {objective_weight_rise}x or more "
        "either way after it with the loss falling again after the move, a held-out accuracy that rose beyond its noise over the climb "
        "(with no eval loss logged then), or the "
        "run's own accuracy ending {objective_accuracy_rise} or more (and beyond its noise) above where it stood at the loss's best level, "
        "under a climb from the first point that slows down. A climb that the eval loss confirms while a held-out accuracy rose over it "
        "by {objective_accuracy_rise} or more and beyond its noise is TP-LOSS-CLIMB's WARN: the held-out measures disagree; so is a "
        "climb over at most 5 logs at the run's end with fewer than {objective_eval_after} evaluations after its onset, each no "
        "worse than the level the eval loss held just before it beyond its noise. A run stopped in a blow-up has no end level yet and is read "
        "apart: its last {blowup_points} or more points each above the one before and above the highest block level the run "
        "held before the climb (its start included), the last at least {blowup_ratio:g}x that level and further above it, on the log "
        "scale, than any earlier point strays from the median of its four neighbours (from the median of all of them, "
        "when fewer than 5 came before the climb, where the climb must also go on multiplying: its last log at least twice "
        "the one before, or its last rise, on the log scale, at least half its largest); at least 3 points before the climb; a logged cause (a changed objective or a "
        "setting that moved, as above) reads it as the level reading does. A log of fewer than "
        "{min_trend_points} points (at least {blowup_min_points}) is read for such a blow-up only, and is otherwise not judged here."
    ),
    why="Once a run has climbed far above a level it already reached, further steps are spent undoing damage; the best checkpoint is behind you.",
    not_mean="A single deep dip is not a level (a block median ignores it, and a low first point needs the run to sit 3x above it), a terminal spike of one or two points is not an end level (the end window median ignores it, and a blow-up needs {blowup_points} rising points), and an ordinarily noisy curve is not diverging. Nor is a train loss whose objective changed after its best level while the model improved: a VAE's KL weight annealed up, a curriculum's harder stage, with a held-out loss that kept falling.",
    causes="A learning rate too high (often revealed after warm-up ends), no gradient clipping, fp16 overflow handled by skipping steps, a data-order change late in the run.",
    try_="Resume from the checkpoint at the best step with a lower peak learning rate, longer warm-up or gradient clipping (max_grad_norm 1.0).",
    objectives=("supervised",),
)
def check_diverge(ctx):
    st = diverge_state(ctx)
    explained = st is None or st["objective_changed"] or st["rescaled"] or st["setting"] or st.get("disputed")
    n = ctx.finite("loss").values.size
    if explained and n < ctx.th.min_trend_points:
        # A blow-up is read from blowup_min_points; anything else (a climb a logged cause
        # explains too: the rules that say so need a curve) leaves the log unjudged here.
        raise CannotJudge(
            "too_few_points", f"{ctx.run.series['loss'].name} has {n} finite points; needs {ctx.th.min_trend_points}"
        )
    if explained:
        return
    yield ctx.finding(st["message"], st["evidence"], st["data"], step=st["step"], line=st["line"])


@rule(
    "TP-OBJECTIVE-CHANGED",
    Level.INFO,
    "context",
    "the train loss climbed from its best level after what it measures changed",
    needs=[Need("loss", "min_trend_points", positive=True, all_finite=True)],
    thresholds=DIVERGE_THRESHOLDS,
    detects=(
        "A climb of the train loss that TP-DIVERGE would call a divergence, in a log that shows the loss "
        "measures something else after its best level: an eval loss that did not get worse over the climb "
        "(the median of its last 3 of at least {objective_eval_after} evaluations after the climb began no "
        "higher than its best evaluation, beyond {diverge_noise_z:g} standard errors of the evaluations' own noise where that allowance is at most {objective_eval_resolution:.0%} of the level the eval loss held just before the climb, while the run held the level it climbed from, from the step it first "
        "reached it; with no evaluation then, no higher than its first evaluation in the climb while the train "
        "loss climbs on by {objective_climb_share:.0%} of its climb after it), a logged loss-term weight (beta, kl_weight, kl_coef, kl_warmup, label_smoothing, l2_weight, reg_weight, loss_weight, mse_weight, lambda_ce, …, "
        "from 0, or from a > 0 to b where the climb is at most twice b / a: a term weighted r times more adds at most "
        "r times what it added; "
        "or a VAE's KL weight read from its logged terms, (loss - reconstruction) / KL; or the loss a weighted sum of "
        "two or more of its logged terms, each fit within 1%, whose weights moved after the best level: a distillation "
        "moving its weight from the teacher's term to the labels') "
        "or a noise level a curriculum adds to the data (sigma, noise_level; never falling) "
        "that climbed {objective_weight_rise}x or more after the best level, a logged stage (a key naming a stage or "
        "a curriculum, not a scheduler's phase) that changed after it, a logged setting that moves the loss's level (a data "
        "mixture's weight, a temperature, a batch size or a count of negatives; not the machine's) that moved "
        "{objective_weight_rise}x or more either way after it with the loss falling again after the move, a held-out "
        "accuracy that ended above the highest level it held up to the loss's best level beyond "
        "{diverge_noise_z:g} standard errors (at least {objective_eval_after} evaluations after the climb began, and "
        "no eval loss logged then), or the run's own accuracy (train or held-out) "
        "ending {objective_accuracy_rise} or more, and beyond its noise, above where it stood at the loss's best level, under a climb "
        "from the first point that slows down: the model got better at its task while the loss climbed (a running average filling up)."
    ),
    why="Levels of a loss compare only while it measures one thing. A VAE whose KL weight is annealed from 0 to 1, "
    "or a curriculum that moves to harder data, raises the train loss while the model improves; a divergence would "
    "make the held-out loss worse too.",
    not_mean="It is context, not a judgement: the climb is not called a divergence, and the held-out loss or the "
    "schedule named is what to judge progress by.",
    causes="Not applicable: this is context.",
    try_="Judge the run by its held-out loss (or the unweighted terms of the loss); log the objective's schedule "
    "beside the loss so that its levels can be read.",
    objectives=("supervised",),
)
def check_objective_changed(ctx):
    st = diverge_state(ctx)
    if st is None or not st["objective_changed"]:
        return
    yield _not_divergence(ctx, st, "after what it measures changed", "objective_changed", "reason")


def _not_divergence(ctx, st: dict, how: str, why: str, key: str, tail: str = "", subject: str = "the train loss"):
    """The finding of a climb :func:`diverge_state` (or :func:`climb_state`) reads as no
    divergence: its message (``subject``, the ratio over the best level, then ``how``), its
    evidence with the reason ``st[why]`` (and ``tail``), and its data with that reason
    under ``key``."""
    d = st["data"]
    return ctx.finding(
        f"{subject} ends {times(d['ratio'])} above its best level {how}",
        f"{st['evidence']} Not called a divergence: {st[why]}{tail}.",
        {**d, key: st[why]},
        step=st["step"],
        line=st["line"],
    )


@rule(
    "TP-LOSS-RESCALED",
    Level.WARN,
    "shape",
    "the loss jumped to a new level in one log interval while the gradients show no divergence",
    needs=[Need("loss", "min_trend_points", positive=True, all_finite=True), Need("grad_norm", "rescale_min_points")],
    thresholds=DIVERGE_THRESHOLDS,
    implies=("TP-DEAD-RUN", "TP-LOSS-STALLED"),
    least_evidence="A gradient norm logged on both sides of the jump ({rescale_min_points} points or more each), precise enough that its allowance ({diverge_noise_z:g} standard errors of its step) is under a quarter of the loss's jump.",
    detects=(
        "A climb that TP-DIVERGE would call a divergence, made in one log interval: the point before the onset within "
        "{diverge_noise_z:g} noise units of the level before it and the onset point within as many of the level after "
        "(levels the medians of {rescale_window_points} points each side), no further climb to the end (the end level "
        "not above the level after the jump beyond the noise gate), the relative noise kept (within "
        "{rescale_noise_ratio:g}x), and a gradient norm that holds its level through the jump or moves by the same "
        "factor as the loss, with no spike at the jump, and no accuracy logged across it that moved by a tenth "
        "and beyond its noise (units do not move predictions). Said instead of TP-DIVERGE; TP-OBJECTIVE-CHANGED, where the "
        "log shows what changed (an eval loss that did not get worse), comes first."
    ),
    why=(
        "A diverging model changes its gradients: they spike at the onset and settle at another level. A loss "
        "logged in other units after a resume (the Hugging Face Trainer of 4.46 logging the loss times the "
        "gradient-accumulation steps, a reduction changed from a mean over tokens to a sum over a sequence) moves "
        "in one step and goes on as before, its gradients unchanged, or scaled with the loss where the objective "
        "itself was multiplied. The log cannot tell the two apart with certainty, so a warning, not a failure."
    ),
    not_mean=(
        "Not that the run is healthy: a divergence whose gradients are clipped before they are logged, or a "
        "resume that broke the model in a way its gradients do not show, looks the same. An eval loss decides."
    ),
    causes="A resume on another library version, a changed loss reduction or accumulation, a changed loss weight; or a divergence at a resume.",
    try_="Compare an eval loss across the jump; check what changed at that step (library version, reduction, gradient accumulation, loss weights) and log the loss in one unit.",
    objectives=("supervised",),
)
def check_loss_rescaled(ctx):
    st = diverge_state(ctx)
    if st is None or st["objective_changed"] or not st.get("rescaled"):
        return
    yield _not_divergence(
        ctx,
        st,
        "after a jump in one log interval, with no divergence in its gradients",
        "rescaled",
        "reason",
        subject="the loss",
    )


@rule(
    "TP-LOSS-CLIMB",
    Level.WARN,
    "shape",
    "the loss climbed back from its best level, beyond its noise, short of a divergence",
    needs=[Need("loss", "min_trend_points", positive=True, all_finite=True)],
    thresholds=DIVERGE_THRESHOLDS,
    implies=("TP-LOSS-STALLED",),
    least_evidence="The run's own noise, measured on the log of the loss: the end level must clear the best level by {diverge_caused_ratio}x and by {diverge_noise_z:g} standard errors of the two levels.",
    detects=(
        "A climb that TP-DIVERGE reads the same way (the best level, the end level, the noise gate, the held "
        "onset and every exception: a loss at its noise floor, a dip it returned from, a warm restart, a changed "
        "objective), ending at least {diverge_caused_ratio}x above the best level but under {diverge_ratio}x, "
        "giving back at least {diverge_caused_regain:.0%} of the fall from the first block's level to the best "
        "(or climbing above the start, or climbing steadily: held above the best level beyond the noise gate over at least "
        "{climb_durable_share:.0%} of the logged points, with an upward Mann-Kendall trend of {dead_trend_z} from the best "
        "level over at most 40 block medians, however little of the fall it regains and at a noise floor too, unless the "
        "eval loss fell over it: the median of its last 3 of {objective_eval_after} or more evaluations after the best level below "
        "that of its last 3 up to it), with no cause in the "
        "log: the rise TP-DIVERGE counts as a divergence "
        "when the learning rate climbed, without that cause. Also a climb over the run's last logs after a best "
        "block that the end window overlaps (the end read over the {blowup_points} or more points after that block, "
        "with their wider noise gate): too few logs for a divergence's end level. Also a log that ends on one or two "
        "points (fewer than {blowup_points}) above every level the run held, the last at least {blowup_ratio:g}x the "
        "highest and further above it than any earlier point strays (TP-DIVERGE's blow-up reading, short of its rising "
        "logs): a spike or a blow-up, the log ends before it tells. Also a climb TP-DIVERGE would call a divergence "
        "while a logged setting that moves the loss's level moved {objective_weight_rise}x or more after the best "
        "level (a data mixture's weight or a temperature either way, a batch size or a count of negatives up), "
        "still moving over the second half of the climb (its last value sqrt({objective_weight_rise:g})x off its "
        "value there), with no eval loss logged over the climb: the setting's effect and a "
        "divergence look the same (a distillation temperature annealed to the last step). Also a climb TP-DIVERGE would "
        "call a divergence, confirmed by an eval loss that got worse, while a held-out accuracy rose over it by "
        "{objective_accuracy_rise} or more and beyond {diverge_noise_z:g} standard errors ({objective_eval_after} or more "
        "evaluations after the onset): the held-out measures disagree (overconfident predictions on a harder training "
        "distribution, such as augmentation ramped up), and a diverging model does not get better at its task. "
        "And a climb TP-DIVERGE would call a divergence over at most 5 train logs at the run's end with 1 to "
        "{objective_eval_after} - 1 evaluations after its onset (none a repeat of the one before it), each made where the train loss was up and no higher than the level "
        "the eval loss held just before the climb (the median of its last 3 evaluations) beyond {diverge_noise_z:g} "
        "standard errors of its noise: the model that logged those train losses was no worse on held-out data."
    ),
    why=(
        "A held climb beyond the noise that gives back a quarter or more of what the run learned is the shape "
        "of a slow divergence (a learning rate a little too high, a loss scale that keeps overflowing, weight "
        "decay pulling the weights back), and each step spent there undoes earlier ones. Without a cause in "
        "the log it is also the shape of a harder stretch of data or a change of objective the log does not "
        "name, so it is a warning, not a failure."
    ),
    not_mean=(
        "Not that the run failed: a curriculum moving to harder data, hard-negative mining, augmentation "
        "switched on, or a loss weight ramped without being logged raise the train loss while the model "
        "improves. Judge by a held-out loss or metric where the log has one."
    ),
    causes="A learning rate a little too high for the late phase, no decay in the schedule, weight decay too strong, a data-order or data-mix change.",
    try_="Compare with a held-out loss; resume from the checkpoint at the best step with a lower learning rate or a decaying schedule.",
    objectives=("supervised",),
)
def check_loss_climb(ctx):
    st = climb_state(ctx)
    if st is None or st["objective_changed"]:
        return
    if st.get("disputed"):
        yield _not_divergence(ctx, st, "and the log disputes a divergence", "disputed", "disputed")
        return
    if st.get("setting"):
        yield _not_divergence(
            ctx,
            st,
            "while a logged setting moved",
            "setting",
            "setting",
            ", and no eval loss was logged over the climb: the setting's effect on the loss's level and a divergence "
            "look the same",
        )
        return
    # The same reading as TP-DIVERGE's, short of its evidence: a warning says the loss climbed.
    message = st["message"].replace("loss diverged:", "loss climbed:", 1)
    yield ctx.finding(message, st["evidence"], st["data"], step=st["step"], line=st["line"])


def climb_state(ctx) -> dict | None:
    """TP-LOSS-CLIMB's judgement: ``None`` where TP-DIVERGE (or TP-OBJECTIVE-CHANGED) already
    judges the climb or there is none; otherwise :func:`diverge_state`'s dict for a climb
    that the caused thresholds (``diverge_caused_ratio``, ``diverge_caused_regain``) would
    count, read without the cause."""

    def compute():
        st = diverge_state(ctx)
        if st is not None:
            # a divergence a logged setting's move explains as well: said as a climb
            explained = st["setting"] or st.get("disputed")
            return st if explained and not st["objective_changed"] and not st["rescaled"] else None
        return _diverge_level(ctx, climb_only=True) or _terminal_jump(ctx)

    return ctx.memo("climb_state", compute)


def diverge_state(ctx) -> dict | None:
    """The divergence judgement, computed once for TP-DIVERGE and TP-OBJECTIVE-CHANGED.

    ``None`` when the loss has not diverged by TP-DIVERGE's measure; otherwise a dict with
    the finding's ``message``, ``evidence``, ``data``, ``step`` and ``line``, and
    ``objective_changed``: the reason (a sentence with the numbers), when the log shows
    that what the loss measures changed after its best level, or ``None``
    (see :func:`objective_changed`).
    """
    return ctx.memo("diverge_state", lambda: _diverge(ctx))


def _diverge(ctx) -> dict | None:
    # A loss that ends at a fitted level has not diverged, however far it rose in ratio: a
    # converged model resumed with a fresh optimizer drifts 1e-5 -> 5e-5 and holds, a
    # fivefold rise that any ratio calls a divergence (fitted_loss_level).
    v = ctx.finite("loss").values
    if v.size and 0 < float(median(v[-end_window(v.size) :])) <= ctx.th.fitted_loss_level:
        return None
    # A run that ends in a blow-up is named as one, whatever its end window says; a log
    # shorter than a curve (min_trend_points) is read for a blow-up only.
    if ctx.finite("loss").values.size < ctx.th.min_trend_points:
        return _terminal_blowup(ctx)
    return _terminal_blowup(ctx) or _diverge_level(ctx)


def _terminal_climb(ctx) -> tuple | None:
    """The run's last logs where they leave every level it held: ``(start, above, meds,
    centres, stray)``, where ``start`` is the index of the climb's lowest point (the last
    points each above the one before from there), ``meds`` and ``centres`` the block
    medians of the points up to ``start`` and their indices, ``above`` how many of the last
    points climb above ``top``, the highest of those medians (the run's start included),
    and ``stray`` how far (on the log scale) any point up to ``start`` strays
    from the median of its four neighbours (of all of them, when fewer than 5: a short
    log's own spread). ``None`` when the log does not end at least ``blowup_ratio`` times
    ``top`` and further above it than ``stray``, or has fewer than 3 points before the
    climb (a level, however rough)."""
    s = ctx.finite("loss")
    v = s.values
    n = v.size
    th = ctx.th
    start = n - 1
    while start > 0 and v[start - 1] < v[start]:
        start -= 1
    if n - 1 - start < 1 or start < 2 or not v[start] > 0:
        return None
    before = v[: start + 1]
    meds, centres = block_medians(before, smoothing_block(before.size))
    top = float(np.max(meds))
    last = float(v[-1])
    if not top > 0 or last < th.blowup_ratio * top:
        return None
    above = 0
    while above < n - 1 - start and v[n - 1 - above] > top:
        above += 1
    y = np.log(before)
    idx, around = neighbour_median(y)
    if idx.size:
        stray = float(np.max(np.abs(y[idx] - around)))
    else:
        stray = float(np.max(np.abs(y - median(y))))
    if math.log(last / top) <= stray:
        return None
    rises = np.diff(np.log(v[start:]))
    if start < LEAD_POINTS and rises[-1] < min(math.log(2.0), 0.5 * float(np.max(rises))):
        # Read from fewer points than a level's neighbours need, a blow-up must also go on
        # multiplying: its last log at least twice the one before, or its last rise at
        # least half its largest, on the log scale. A loss that a schedule lifts from a low
        # base (a loss weight ramped up from 0: 0.034 -> 0.28 -> 0.46 -> 0.63 -> 0.81, its
        # last step x1.28) leaps once, then adds less each log; 0.9 -> 15 -> 80 -> 300
        # multiplies on.
        return None
    return start, above, meds, centres, stray


def _terminal_blowup(ctx) -> dict | None:
    """TP-DIVERGE's judgement of a run stopped in a blow-up (see ``blowup_ratio``): its last
    ``blowup_points`` or more points each above the one before and above the highest block
    level the run held before the climb, the last at least ``blowup_ratio`` times it and
    further above it, on the log scale, than any earlier point strays from the median of
    its four neighbours (:func:`_terminal_climb`). The same dict as :func:`_diverge_level`;
    ``None`` otherwise."""
    tc = _terminal_climb(ctx)
    if tc is None or tc[1] < ctx.th.blowup_points:
        return None
    return _blowup_state(ctx, *tc)


def _terminal_jump(ctx) -> dict | None:
    """TP-LOSS-CLIMB's reading of a log that ends on one or two points (fewer than
    ``blowup_points``) above every level the run held, the last at least ``blowup_ratio``
    times the highest and further above it than any earlier point strays
    (:func:`_terminal_climb`): a spike the log ends before it can tell from a blow-up.
    The same dict as :func:`_diverge_level`; ``None`` otherwise."""
    tc = _terminal_climb(ctx)
    if tc is None or not 1 <= tc[1] < ctx.th.blowup_points:
        return None
    return _blowup_state(ctx, *tc)


def _blowup_state(ctx, start: int, above: int, meds: np.ndarray, centres: np.ndarray, stray: float) -> dict:
    """The dict of :func:`_diverge_level`'s shape for the terminal climb
    :func:`_terminal_climb` found: a blow-up (``above`` at least ``blowup_points``) or a
    jump of one or two logs, with any logged cause that explains it."""
    s = ctx.finite("loss")
    v = s.values
    n = v.size
    th = ctx.th
    last = float(v[-1])
    top = float(np.max(meds))
    gap = math.log(last / top)
    j = int(np.argmin(meds))
    best, best_idx = float(meds[j]), int(centres[j])
    onset = start + 1
    ratio = last / best
    rising = n - 1 - start
    through = (s.steps[best_idx] - s.steps[0]) / max(s.steps[-1] - s.steps[0], 1e-300)
    extra, ckpt_data = best_checkpoint(ctx.run)
    # A logged cause reads the climb as TP-DIVERGE's level reading does: a changed
    # objective (TP-OBJECTIVE-CHANGED), a setting that moved with no eval loss over it
    # (TP-LOSS-CLIMB's WARN).
    best_step, onset_step = float(s.steps[best_idx]), float(s.steps[onset])
    changed = objective_changed(ctx, best_step, onset_step, best_step, positive=True, rise=ratio)
    setting = None if changed else _setting_without_eval(ctx, best_step, onset_step)
    if above >= th.blowup_points:
        message = (
            f"loss diverged: it climbs at each of its last {rising} logs, ending {times(ratio)} above its best level"
        )
        what = f"the loss climbs at each of its last {rising} logs"
        tail, frm = "", start
    else:
        logs = "log" if above == 1 else f"{above} logs"
        message = (
            f"the loss ends {times(ratio)} above its best level, jumping at its last {logs}: a spike or a blow-up, "
            "the log ends before it tells"
        )
        what, frm = f"the loss jumps at its last {logs}", n - 1 - above
        tail = (
            f" A blow-up needs {num(th.blowup_points)} rising logs above that level; with {above} the log cannot tell "
            "it from a spike that comes back."
        )
    return dict(
        objective_changed=changed,
        rescaled=None,
        setting=setting,
        step=s.steps[best_idx],
        line=s.lines[best_idx],
        message=message,
        evidence=(
            f"{what}, from {num(float(v[frm]))} at step {step(s.steps[frm])} to {num(last)} at step {step(s.steps[-1])}, where the log ends: "
            f"{times(last / top)} the highest level the run held before (block median {num(top)}; at least "
            f"{num(th.blowup_ratio)}x), further above it than any earlier point strays from its neighbours "
            f"(log gap {num(gap)} against {num(stray)}); its best level was {num(best)} around step "
            f"{step(s.steps[best_idx])} ({pct(through)} through the run).{extra}{tail}"
        ),
        data={
            "end_level": last,
            "best_level": best,
            "best_step": s.steps[best_idx],
            "ratio": ratio,
            "terminal_points": rising,
            "held_top": top,
            "log_gap": gap,
            "stray_log": stray,
            "best_fraction": through,
            "onset_step": s.steps[onset],
            "threshold": th.blowup_ratio,
            **ckpt_data,
        },
    )


def _durable_climb(ctx, v: np.ndarray, best_idx: int, best_step: float, bar: float) -> float | None:
    """The Mann-Kendall z of the climb where the loss ``v`` (finite, positive) climbs
    steadily from its best level at
    ``best_idx``: above ``bar`` (the best level and its noise gate) from a held onset
    (:func:`held_climb_onset`) over at least ``climb_durable_share`` of the points (and 8),
    and its points from the best level on showing an upward Mann-Kendall trend of at least
    ``dead_trend_z`` read over at most 40 block medians (:func:`trend_z`: a long log's
    autocorrelated points do not inflate it, one extreme point is no trend). A loss that
    wiggles at its floor has no such trend; one that a few high points lift at its end is
    above the bar over too little of the run. Not where the eval loss fell over the climb
    (the median of its last 3 of ``objective_eval_after`` or more evaluations after the best
    level's step ``best_step`` below the median of its last 3 up to it): the model got
    better on held-out data while the train loss rose (augmentation or mixup ramped up).
    ``None`` where it does not climb so."""
    th = ctx.th
    onset = held_climb_onset(v, bar, best_idx)
    if onset is None or v.size - onset < max(th.climb_durable_share * v.size, 8):
        return None
    z = trend_z(v[best_idx:], 40)
    if z < th.dead_trend_z:
        return None
    if ctx.has("eval_loss"):
        e = ctx.finite("eval_loss")
        before, after = e.values[e.steps <= best_step], e.values[e.steps > best_step]
        if before.size and after.size >= th.objective_eval_after:
            if float(median(after[-3:])) < float(median(before[-3:])):
                return None
    return z


def _diverge_level(ctx, climb_only: bool = False) -> dict | None:
    s = ctx.finite("loss")
    v = s.values
    n = v.size
    th = ctx.th
    ratio_th = th.diverge_ratio
    w = end_window(n)
    end = float(median(v[-w:]))
    # A cause in the log (the learning rate climbed after the best level) lets a smaller
    # rise count, when it is beyond the noise and gives back a large share of what the run
    # learned: a rise judged in the loss's own units, not by one ratio for every scale.
    # climb_only reads the same smaller rise without a cause, for TP-LOSS-CLIMB's WARN.
    cause = _lr_climb(ctx, s)
    if cause is not None or climb_only:
        ratio_th = min(ratio_th, th.diverge_caused_ratio)
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
    # Autocorrelated noise (a running-average loss, a small-batch curve that wanders):
    # first differences see only the part of the noise that changes from point to point,
    # and a level read from m correlated points is less sure than from m independent ones.
    # The residuals around the block medians give the lag-1 autocorrelation rho; the point
    # noise is sigma / sqrt(1 - rho) and a level's error is widened by the AR(1) factor.
    # Below DIVERGE_AR_MIN_POINTS the block medians are too few to separate a curve's bend
    # from its noise, and the estimate would read the bend as autocorrelation.
    y = np.log(v)
    rho, infl = 0.0, 1.0
    if n >= DIVERGE_AR_MIN_POINTS:
        rho, infl = ar1_inflation(y - np.interp(np.arange(n), centres, np.log(meds)))
    sigma = sigma / math.sqrt(1 - rho)
    z = th.diverge_noise_z

    def se(points: int) -> float:
        return level_se(sigma, points) * (infl if points > 1 else 1.0)

    # A lone first point far below the run right after it (averaging it with what follows
    # still leaves it a level below), standing apart from the run's own stray points: a
    # run whose heavy-tailed noise throws points 40x off their level shows a low first
    # point to be one more of them. One standard error of margin: the level after the
    # point is itself an estimate.
    k = max(1, int(th.diverge_start_points))
    lead_vals = v[1 : 1 + max(LEAD_POINTS, block)]
    cut = _lone_start_cut(ratio_th, k)
    lone = (
        lead_vals.size >= 3
        and math.isfinite(cut)
        and math.log(float(median(lead_vals)) / v[0]) - math.log(cut) > se(lead_vals.size)
        and _stands_apart(y, 1, float(y[0]))
    )
    # The first k points agreeing within the noise are a start the run held.
    head = np.log(v[:k])
    head_held = head.size == k and float(np.ptp(head)) <= z * math.sqrt(2) * sigma
    # A lone first point that starts a running average from zero (r = b r + (1 - b) loss
    # from r = 0; it rises from its first log to the next by about 1 + b, so never a held
    # start) filling up, that the run then falls from beyond the noise: the first log and
    # the climb after it are shares of the loss, not levels the run held, so the best
    # level is looked for after the climb.
    climb = _average_filling_up(v, s.steps, th.average_fill_slack) if lone and not head_held else None
    if climb is not None and not (math.log(float(np.max(meds)) / end) > z * math.hypot(se(int(np.max(sizes))), se(w))):
        climb = None
    after = -1 if climb is None else climb
    j = int(np.argmin(np.where(centres > after, meds, np.inf)))
    if not centres[j] > after:
        return
    best, best_idx, best_points, from_start = float(meds[j]), int(centres[j]), int(sizes[j]), False
    # A median of 3 points ignores one stray point, not two: heavy-tailed noise puts two
    # low points in one short block of a short run. A level is held by a majority of
    # diverge_level_points consecutive points: a shorter block's minimum is raised to the
    # lowest sliding median of that many (a dip held by 3 points of 5 keeps its level,
    # wherever the blocks cut it).
    m = int(th.diverge_level_points)
    if block < m <= n - after - 1:
        wm = window_medians(v[after + 1 :], m)
        at = int(np.argmin(wm))
        if float(wm[at]) > best:
            best, best_idx = float(wm[at]), after + 1 + at + m // 2
    if climb is None:
        # The starting level: the first k points, when they agree within the noise, held
        # the highest of them (a run that blows up right after its first logs did hold it)
        if head_held:
            start = float(np.max(v[:k]))
            # Fewer points than a level needs (diverge_level_points) count only when they
            # stand apart from the run's own stray points.
            if start < best and (k >= m or _stands_apart(y, k, math.log(start))):
                best, best_idx, best_points, from_start = start, 0, k, True
        # ... or the lone first point.
        if lone and v[0] < best:
            best, best_idx, best_points, from_start = float(v[0]), 0, 1, True
    if best <= 0 or end <= ratio_th * best:
        return
    terminal = False
    # The end level must be read after the best level, not over it: a best block that
    # lies inside the end window is a low stretch of the level the run ends at (a batch-1
    # run's heavy-tailed block medians), not a level it climbed from.
    if not from_start and best_idx - best_points // 2 >= n - w:
        # ... except, for TP-LOSS-CLIMB's warning, a climb in the run's last logs after a
        # best block the end window overlaps: read over the points after that block (at
        # least blowup_points), whose noise gate below widens with so few points (a run
        # 5x up over its last 11 of 190 logs PASSed)
        k = n - 1 - (best_idx + best_points // 2)
        if not climb_only or k < th.blowup_points:
            return
        w, terminal = k, True
        end = float(median(v[-w:]))
        if end <= ratio_th * best:
            return
    # A starting level rests on one or two points: it is given a single point's noise, so
    # that a one-point dip next to an ordinary low swing is not taken for a held level.
    se_best = se(1 if from_start else best_points)
    gate = z * math.hypot(se_best, se(w))
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
    # Not when the best level is the run's start: a first block above it holds the climb
    # itself (a run that blew up from its first step), not a fall the run made.
    start_level = float(meds[0])
    # for TP-LOSS-CLIMB's warning, a climb that goes on steadily over much of the run is
    # no wiggle at the floor, however little of the fall it regains
    durable = _durable_climb(ctx, v, best_idx, float(s.steps[best_idx]), best * math.exp(gate)) if climb_only else None
    if (
        not from_start
        and start_level > best
        and (end - best) < th.floor_regain_share * (start_level - best)
        and durable is None
    ):
        return
    if not from_start and _returned_from_dip(meds, j, tied, end, gate, se_best, th):
        return
    if not from_start and _warm_restart_cycle(ctx, s, meds, centres, best_idx, end, gate):
        return
    regain = (end - best) / (start_level - best) if start_level > best else math.inf
    uncaused = False
    if end <= th.diverge_ratio * best and (cause is None or s.steps[best_idx] > cause[0] or regain < cause[3]):
        # under the plain ratio, only a caused rise that gives back enough counts; the
        # same rise without a cause is TP-LOSS-CLIMB's, and so is a rise that gives back
        # less but climbs steadily over much of the run (a run that fell tenfold and
        # climbs back 1.45x over its second half regains 5% of its fall)
        if not climb_only or (regain < th.diverge_caused_regain and durable is None):
            return
        uncaused = True
    ratio = end / best
    through = (s.steps[best_idx] - s.steps[0]) / max(s.steps[-1] - s.steps[0], 1e-300)
    # Onset: where the climb past the bar this rule judges the end level by (the ratio and
    # the noise gate above the best level) begins and is held. A loss that explodes on a
    # log scale passes that bar long before it nears its end level.
    bar = best * max(ratio_th, math.exp(gate))
    onset = held_climb_onset(v, bar, best_idx)
    if onset is None and cause is not None and s.steps[best_idx] <= cause[0]:
        # After a logged cause the level the run moved to need not clear the ratio point
        # by point: an end 1.18x its best under 5% noise has a quarter of its points under
        # 1.15x. Held halfway (on the log scale) between the best and the end level does.
        onset = held_climb_onset(v, best * max(math.exp(gate), math.sqrt(end / best)), best_idx)
    if onset is None:
        # No point from which the run stays up: the end window's median is lifted by a
        # few high points among low ones (a heavy-tailed tail, a last-logs wobble), not by
        # a level the run moved to.
        return
    where = "its starting level" if best_idx == 0 else f"the level it held around step {step(s.steps[best_idx])}"
    extra, ckpt_data = best_checkpoint(ctx.run)
    held = (
        ("its first point" if best_points == 1 else f"median of its first {best_points} points")
        if from_start
        else f"median of {best_points} points"
    )
    because = ""
    if cause is not None and end <= th.diverge_ratio * best:
        because = (
            f" The learning rate climbed from {num(cause[1])} to {num(cause[2])} after step {step(cause[0])} and the "
            f"loss gave back {pct(regain)} of its fall from {num(start_level)}: a rise under {num(th.diverge_ratio)}x "
            f"counts with that cause (at least {num(th.diverge_caused_ratio)}x and {pct(cause[3])}"
            + (
                f", a rate {num(th.diverge_new_rate)}x or more above any the run held before"
                if cause[3] < th.diverge_caused_regain
                else ""
            )
            + ")."
        )
    short = ""
    if uncaused:
        short = (
            f" Under the {num(th.diverge_ratio)}x that a divergence needs without a cause in the log (a learning rate "
            f"that climbed), but held beyond the noise, giving back "
            + (
                "more than the run fell from its start"
                if regain > 1
                else f"{pct(regain)} of its fall from {num(start_level)}"
            )
            + f" (with a cause, a climb counts as a divergence from {num(th.diverge_caused_ratio)}x and {pct(th.diverge_caused_regain)})."
        )
        if durable is not None and regain < th.diverge_caused_regain:
            short += (
                f" It climbs steadily: held above {times(math.exp(gate))} its best level (its noise gate) over at least "
                f"{pct(th.climb_durable_share)} of the logged points, with an upward "
                f"trend (Mann-Kendall z {num(durable)} over block medians, at least {num(th.dead_trend_z)})."
            )
        if regain <= 1:
            message = f"the loss climbed back from its best level: it ends {times(ratio)} above {where}, giving back {pct(regain)} of what it learned"
        else:
            message = f"the loss climbed: it ends {times(ratio)} above {where}, and above where it started"
    else:
        message = f"loss diverged: the run ends {times(ratio)} above {where}"
    if terminal:
        message = (
            f"the loss climbed over the run's last {w} logs: they sit {times(ratio)} above {where}, where the log ends"
        )
        short += (
            f" The climb fills only the last {w} logs, fewer than the end window a divergence's end level is read "
            "over: too few to tell a run that broke from a few bad batches at its end."
        )
    changed = objective_changed(
        ctx,
        float(s.steps[best_idx]),
        float(s.steps[onset]),
        reached_step(s.steps, meds, block, bar),
        # the level held: within its noise gate, or a slow learner's 5%, of the best
        left_level_step(s.steps, v, best * math.exp(max(gate, math.log1p(th.dead_min_improvement))), best_idx),
        positive=True,
        rise=ratio,
    )
    return dict(
        objective_changed=changed,
        rescaled=None if changed or climb_only else loss_rescaled(ctx, s, onset, sigma, w),
        setting=None
        if changed or climb_only
        else _setting_without_eval(ctx, float(s.steps[best_idx]), float(s.steps[onset])),
        disputed=None
        if changed or climb_only
        else _disputed(ctx, float(s.steps[best_idx]))
        or _evaluated_fine_in_climb(ctx, s, onset, bar)
        or _eval_climbed_less(ctx, float(s.steps[onset]), ratio),
        step=s.steps[best_idx],
        line=s.lines[best_idx],
        message=message,
        evidence=(
            f"end level {num(end)} (median of the last {w} points, steps {step(s.steps[-w])}–{step(s.steps[-1])}) is "
            f"{times(ratio)} the best level {num(best)} ({held}) at step {step(s.steps[best_idx])} "
            f"({pct(through)} through the run); threshold {num(ratio_th if because or uncaused else th.diverge_ratio)}x, relative noise {num(sigma)}, "
            f"log gap {num(gap)} against a noise gate of {num(gate)}.{because}{short}{extra}"
        ),
        data={
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
            "start_level": start_level,
            "regain": regain if math.isfinite(regain) else None,
            # the learning rate climbed from before the best level: a cause in the log
            "caused": cause is not None and s.steps[best_idx] <= cause[0],
            **ckpt_data,
        },
    )


def _step_fit(x: np.ndarray, y: np.ndarray, at: float) -> tuple[float, float, np.ndarray] | None:
    """Least squares of ``y`` (shape ``(n,)``) on a line in ``x`` with one slope for both
    sides and a step at ``x >= at``: (the step, its standard error, the residuals), or
    ``None`` when the fit has no residual degree of freedom or a side is empty."""
    side = (x >= at).astype(float)
    if x.size < 4 or not 0 < side.sum() < x.size:
        return None
    a = np.column_stack([np.ones_like(x), (x - x.mean()) / max(float(np.ptp(x)), 1e-300), side])
    coef, _, rank, _ = np.linalg.lstsq(a, y, rcond=None)
    if rank < 3:
        return None
    resid = y - a @ coef
    var = float(resid @ resid) / (x.size - 3)
    cov = np.linalg.inv(a.T @ a) * var
    return float(coef[2]), math.sqrt(max(float(cov[2, 2]), 0.0)), resid


def _evaluated_after(ctx, step: float) -> bool:
    """Whether a finite eval loss is logged after ``step`` (a climb's onset): the held-out
    loss then decides whether the model got worse, before any other reading of the climb."""
    return ctx.has("eval_loss") and bool(np.any(ctx.finite("eval_loss").steps > step))


def _disputed(ctx, best_step: float) -> str | None:
    """Why a climb the eval loss confirms is still no divergence to fail on: a held-out
    accuracy that rose by ``objective_accuracy_rise`` or more, and beyond its noise, over
    the climb from the best level (``objective_eval_after`` or more evaluations after
    ``best_step``: the held climb's onset can come late in a slow climb;
    :func:`held_out_accuracy_gain`), while the eval loss logged after it got worse. The
    two held-out measures disagree (overconfident predictions on a harder training
    distribution: augmentation ramped up, a curriculum), and a diverging model does not
    get better at its task, so the climb is TP-LOSS-CLIMB's warning. ``None`` where no
    eval loss is logged after the best level, or the accuracy did not rise so. Read only
    where :func:`objective_changed` found no reason."""
    if not _evaluated_after(ctx, best_step):
        return None
    gain = held_out_accuracy_gain(ctx, best_step, best_step, ctx.th.objective_accuracy_rise)
    if gain is None:
        return None
    return (
        f"{gain}; but the eval loss got worse over the climb too. The held-out measures disagree (overconfident "
        "predictions on a harder training distribution, such as augmentation ramped up), and a diverging model does "
        "not get better at its task"
    )


#: The most train logs a climb may span, from its onset to the end, for an evaluation made
#: in it to dispute a divergence (:func:`_evaluated_fine_in_climb`): a few bad batches at
#: the run's end (a new user's runs: 1-3 logs). A loss held 3x up over dozens of logs has
#: diverged whatever one evaluation made early in it, or an averaged (EMA) model's, says.
CLIMB_DISPUTE_MAX_LOGS = 5


def _evaluated_fine_in_climb(ctx, s, onset: int, bar: float) -> str | None:
    """Why a climb is still no divergence to fail on when too few evaluations follow its
    onset for TP-OBJECTIVE-CHANGED (1 to ``objective_eval_after`` - 1) and it spans at most
    :data:`CLIMB_DISPUTE_MAX_LOGS` train logs (a climb in the run's last logs): every
    evaluation after the onset, none a repeat of the one before it, made at a step whose
    nearest train losses on both sides (or the last, at the log's end) are above ``bar``
    (the climb held there), no higher than the level the eval loss held just before the
    onset (the median of its last 3 evaluations up to it, of at least 3) beyond
    ``diverge_noise_z`` standard errors of their difference, an allowance of at most
    ``objective_eval_resolution`` of that level. The model that logged those train losses
    was no worse on held-out data, which a diverged model cannot be: a few bad batches, or
    data the run is not learning from, not damaged weights. TP-LOSS-CLIMB's warning.
    ``s``: the finite train loss; ``onset``: the climb's first index into it. ``None``
    otherwise."""
    if not ctx.has("eval_loss") or s.values.size - onset > CLIMB_DISPUTE_MAX_LOGS:
        return None
    e = ctx.finite("eval_loss")
    onset_step = float(s.steps[onset])
    before = e.values[e.steps <= onset_step]
    after = np.flatnonzero(e.steps > onset_step)
    if (
        before.size < 3
        or not 1 <= after.size < ctx.th.objective_eval_after
        or np.any(e.values <= 0)
        or repeats_one_value(e.values)
    ):
        return None
    ref = float(median(before[-3:]))
    # the relative noise from the second differences of the log of the evaluations up to
    # the onset (a falling eval loss's trend does not inflate them; a few evaluations'
    # first differences show too little of their noise), for a single later evaluation
    # against a median of 3
    sigma = curvature_noise_sigma(np.log(before))
    gate = ctx.th.diverge_noise_z * math.hypot(level_se(sigma, 3), sigma)
    if gate > math.log1p(ctx.th.objective_eval_resolution):
        return None  # evaluations too noisy to show the model no worse
    for i in after:
        if e.values[i] == e.values[i - 1]:
            return None  # a stale evaluation repeated, no measure of the model then
        k = int(np.searchsorted(s.steps, e.steps[i]))
        near = s.values[max(k - 1, 0) : k + 1]
        if not (near.size and np.all(near > bar)) or math.log(float(e.values[i]) / ref) > gate:
            return None
    shown = ", ".join(f"{num(float(e.values[i]))} at step {step(float(e.steps[i]))}" for i in after)
    return (
        f"the eval loss ({e.key}) measured while the train loss was up ({shown}) is no higher than the level "
        f"{num(ref)} it held just before the climb, within {pct(math.expm1(gate))} ({ctx.th.diverge_noise_z:g} standard errors of its noise): the model that logged those train losses was no worse on held-out data, "
        f"which a diverged model cannot be (too few evaluations, under {ctx.th.objective_eval_after}, to read the "
        "objective as changed)"
    )


def _eval_climbed_less(ctx, onset_step: float, ratio: float) -> str | None:
    """Why a climb of the train loss by ``ratio`` (end level over best, from
    ``onset_step``) is still no divergence to fail on: the held-out loss rose by less than
    ``objective_eval_climb_share`` of it on the log scale, its rise read at the top of its
    noise allowance: ``diverge_noise_z`` standard errors of the level before (the median
    of its last 10 evaluations up to the onset, or of its last 3 where lower) and of the
    level after (the median of every evaluation after it, at least
    ``objective_eval_after``, or of its last 3 where higher), with the larger
    point-to-point noise of the two stretches. A
    diverged model is worse on held-out data about as much as on its training data; a
    train loss that climbs alone measures other data. And that rise at most
    ``objective_eval_resolution`` of the level: an eval loss 35% worse is a model that got
    worse, whatever the train loss measures. TP-LOSS-CLIMB's warning. ``None``
    otherwise, or where the eval loss is not positive or repeats one value."""
    if not ctx.has("eval_loss") or not ratio > 1:
        return None
    e = ctx.finite("eval_loss")
    before = e.values[e.steps <= onset_step]
    after = e.values[e.steps > onset_step]
    if before.size < 3 or after.size < ctx.th.objective_eval_after or np.any(e.values <= 0):
        return None
    if repeats_one_value(after):
        return None
    # the level before the climb from its last 10 evaluations (a noisy eval's last 3 say
    # little), but never above the median of its last 3: an eval loss still falling there
    # is compared with where it got to
    held = before[-10:]
    ref = min(float(median(held)), float(median(before[-3:])))
    # the median of every evaluation after the onset, or of its last 3 where higher: an
    # eval loss that climbs steadily over the climb is judged by where it got to
    end = max(float(median(after)), float(median(after[-3:])))
    sigma = max(noise_sigma(np.log(held)), noise_sigma(np.log(after)))
    gate = ctx.th.diverge_noise_z * math.hypot(level_se(sigma, held.size), level_se(sigma, after.size))
    rise = math.log(end / ref)
    share = ctx.th.objective_eval_climb_share
    # and no more than objective_eval_resolution worse at all: an eval loss 35% up beside a
    # train loss 10x up is a model that got worse, whatever the train loss measures
    if rise + gate >= min(share * math.log(ratio), math.log1p(ctx.th.objective_eval_resolution)):
        return None
    return (
        f"the eval loss ({e.key}) went from {num(ref)} (the lower median of its last 3 and last {held.size} "
        f"evaluations before the climb) to "
        f"{num(end)} (the higher median of its {after.size} evaluations after it began and of its last 3), "
        f"{times(end / ref)}, at most "
        f"{times(math.exp(rise + gate))} within {ctx.th.diverge_noise_z:g} standard errors of its noise, while the "
        f"train loss climbed {times(ratio)}: under {pct(share)} of the climb on the log scale, and no more than "
        f"{pct(ctx.th.objective_eval_resolution)} worse. A diverged model is "
        "worse on held-out data about as much as on its training data; a train loss that climbs alone measures other "
        "data (a harder stage of a curriculum, a data-loader change)"
    )


def _setting_without_eval(ctx, best_step: float, onset_step: float) -> str | None:
    """:func:`setting_moved` for a climb with no eval loss logged after its onset (an eval
    loss that got worse shows the divergence; one that did not is TP-OBJECTIVE-CHANGED's),
    still moving over the second half of the climb, or ``None``."""
    if _evaluated_after(ctx, onset_step):
        return None
    s = ctx.finite("loss")
    return setting_moved(ctx, best_step, (onset_step + float(s.steps[-1])) / 2)


def _accuracy_moved(ctx, lo: float, at: float, hi: float, z: float) -> bool:
    """Whether an accuracy (train or held-out, :func:`is_accuracy_key`) logged on both sides
    of step ``at`` moved across it (its points from ``lo`` to ``hi``, or its nearest 3 a
    side where fewer, an evaluation's cadence being coarser than the loss's; 2 or more a
    side): its median after differs from its median before by more than a tenth of the
    level before and ``z`` standard errors of the two (one point's noise from its first
    differences).
    Units of the logged loss do not move what the model predicts."""
    for _, steps, v in accuracy_series(ctx):
        # the evaluations nearest the jump, within the loss's window or the nearest 3 a side
        a = v[steps < at][-max(3, int(np.sum((steps >= lo) & (steps < at)))) :]
        b = v[steps >= at][: max(3, int(np.sum((steps >= at) & (steps <= hi))))]
        if a.size < 2 or b.size < 2:
            continue
        before, after = float(median(a)), float(median(b))
        sigma = noise_sigma(np.concatenate([a, b]))
        gap = abs(after - before)
        if gap > 0.1 * before and gap > z * math.hypot(level_se(sigma, a.size), level_se(sigma, b.size)):
            return True
    return False


def loss_rescaled(ctx, s, onset: int, sigma: float, w: int) -> str | None:
    """Why a climb of the train loss (``s``, its finite series, climbing from index
    ``onset``) reads as the logged loss changing scale rather than the model diverging, in
    a sentence with the numbers, or ``None``.

    Both the log of the loss and the log of the gradient norm over ``rescale_window_points``
    points each side of the onset are fitted with one line and a step at the onset
    (:func:`_step_fit`: a run still learning keeps its slope through a change of units).
    The shape: the loss's step is its move to the new level within one log interval (the
    residuals at the last point before the onset and at the onset within
    ``diverge_noise_z`` point noises), it climbs no further after it (the end level, the
    median of the last ``w`` points, not above the fitted level just after the step beyond
    the noise gate), and it keeps its relative noise (the point-to-point noise of the log
    loss from the onset to the end within ``rescale_noise_ratio`` of its noise before).
    An accuracy logged across the onset that moved (:func:`_accuracy_moved`) says the
    predictions changed: no change of units. The cause it needs: a gradient norm logged on
    both sides whose step is either zero (it holds its level) or the loss's step (the loss
    was multiplied by a constant and the gradients with it), within ``diverge_noise_z``
    standard errors of the gradient's step, an allowance under a quarter of the loss's step
    so that a gradient norm that moved halfway (a divergence's in-between) stands a whole
    allowance off both readings, and no gradient point at the onset standing apart from
    the fit by more than any other point there does. A divergence moves the gradients without
    keeping either relation; a loss logged in new units (a reduction changed from a mean
    to a sum, a resume on a version that logs the loss times the accumulation steps)
    keeps the gradients or scales them with the loss.

    ``sigma`` is the point noise of the log loss (:func:`log_loss_noise`, widened for
    autocorrelation). Raises nothing; ``None`` when either side has fewer than
    ``rescale_min_points`` points of the loss or of the gradient norm, and when an eval loss
    is logged on both sides of the onset (it decides: TP-OBJECTIVE-CHANGED where it did not
    get worse, the divergence where it did).
    """
    th = ctx.th
    if not ctx.has("grad_norm") or onset < 1:
        return None
    at = float(s.steps[onset])
    if ctx.has("eval_loss"):
        e = ctx.finite("eval_loss").steps
        if np.any(e < at) and np.any(e >= at):
            return None
    m = int(th.rescale_window_points)
    lo = int(th.rescale_min_points)
    z = th.diverge_noise_z
    y = np.log(s.values)
    i0, i1 = max(0, onset - m), min(y.size, onset + m)
    if onset - i0 < lo or i1 - onset < lo:
        return None
    fit = _step_fit(s.steps[i0:i1], y[i0:i1], at)
    if fit is None:
        return None
    jump, _, resid = fit
    k = onset - i0
    # one log interval: the points either side of the onset sit on the fitted step
    if not (jump > 2 * z * sigma and abs(resid[k - 1]) <= z * sigma and abs(resid[k]) <= z * sigma):
        return None
    after = float(median(y[onset:i1] - resid[k:]))  # the fitted level just after the step
    if float(median(y[-w:])) - after > z * math.hypot(level_se(sigma, i1 - onset), level_se(sigma, w)):
        return None
    # each side's whole length: a MAD of a window's few differences scatters 3x either way
    n_pre, n_post = noise_sigma(y[:onset]), noise_sigma(y[onset:])
    if n_pre > 0 and n_post > 0 and max(n_pre / n_post, n_post / n_pre) > th.rescale_noise_ratio:
        return None
    if _accuracy_moved(ctx, float(s.steps[i0]), at, float(s.steps[i1 - 1]), z):
        return None
    g = ctx.finite("grad_norm")
    ok = (g.values > 0) & (g.steps >= s.steps[i0]) & (g.steps <= s.steps[i1 - 1])
    gs, gy = g.steps[ok], np.log(g.values[ok])
    if int(np.sum(gs < at)) < lo or int(np.sum(gs >= at)) < lo:
        return None
    gfit = _step_fit(gs, gy, at)
    if gfit is None:
        return None
    moved, g_se, g_resid = gfit
    gate = z * g_se
    # under a quarter of the jump: a gradient norm that moved halfway (on the log scale),
    # as a diverging model's does, then stands a whole allowance off both readings
    if not gate < jump / 4:
        return None
    if abs(moved) <= gate:
        how = "the gradient norm holds its level through it"
    elif abs(moved - jump) <= gate:
        how = f"the gradient norm moves by the same factor ({times(math.exp(moved))})"
    else:
        return None
    # a spike at the onset is a divergence's mark: no gradient point there stands apart
    near = np.abs(g_resid[np.abs(np.searchsorted(gs, at) - np.arange(gs.size) - 0.5) <= 2])
    rest = np.abs(g_resid[np.abs(np.searchsorted(gs, at) - np.arange(gs.size) - 0.5) > 2])
    g_point = float(np.sqrt(g_resid @ g_resid / max(1, gs.size - 3)))
    if near.size and float(np.max(near)) > max(float(np.max(rest, initial=0.0)), z * g_point):
        return None
    return (
        f"the loss moves {times(math.exp(jump))} in one log interval at step {step(at)} (a step fitted to "
        f"{i1 - i0} points around it, one slope for both sides), climbs no further and keeps its relative "
        f"noise, and {how} ({num(math.exp(moved))}x, allowance {num(gate)} in log): the logged loss changed "
        "its units, or the run diverged without its gradients showing it"
    )


def reached_step(steps: np.ndarray, meds: np.ndarray, block: int, bar: float) -> float:
    """The step where the run first reached the level it later climbed from: the first
    step of the first block (of ``block`` points, medians ``meds``) whose median is at or
    below ``bar``. ``steps``: the loss's steps, shape ``(n,)``."""
    j = int(np.argmax(meds <= bar))
    return float(steps[min(j * block, steps.size - 1)])


def _eval_not_worse(
    ctx, reach_step: float, onset_step: float, left_step: float | None = None, positive: bool = False
) -> str | None:
    """The held-out loss says the model did not get worse while the train loss climbed:
    the median of its last 3 evaluations after ``onset_step`` (where the climb begins), of
    at least ``objective_eval_after``, no higher than the best evaluation made while the
    run held the level it climbed from (from ``reach_step``, where it first reached it, to
    the onset, or to ``left_step`` where the loss first left that level when it did so
    before the climb it held began). The best, not the last: a run whose eval loss spiked as the climb began
    and then settled at chance has not improved on what it held; and not an evaluation
    from before the run reached that level (an untrained model's, at step 0), nor one made
    after the loss had already left it (a run that collapsed to chance before its first
    evaluation has none of the level it lost).

    Or, for a positive loss (``positive``), the end no higher than the level the
    eval loss held just before the climb (the median of its last 3 evaluations in that
    window) by ``diverge_noise_z`` standard errors of the two medians (the larger
    point-to-point noise of the held and the later evaluations; none from fewer than 3),
    where that allowance is at
    most ``objective_eval_resolution`` of the level: evaluations too noisy to show a rise
    of that share of their level say nothing of whether the model got worse, and the
    allowance does not grow with the train loss's climb."""
    if not ctx.has("eval_loss"):
        return None
    e = ctx.finite("eval_loss")
    held = (e.steps >= reach_step) & (e.steps <= onset_step)
    if left_step is not None:
        held &= e.steps < left_step  # made while the loss still held the level
    before = np.flatnonzero(held)
    after = np.flatnonzero(e.steps > onset_step)
    late = e.values[after]
    if late.size < ctx.th.objective_eval_after:
        return None
    if repeats_one_value(late):
        return None  # a stale evaluation, no measure of the model
    if not before.size:
        return _eval_flat_while_climbing(ctx, e, after, onset_step)
    at = int(before[np.argmin(e.values[before])])
    ref = float(e.values[at])
    end, k = _eval_end(late)
    within = ""
    if end > ref:
        # A healthy eval loss wanders by a few percent from evaluation to evaluation, and
        # the best of many sits low by chance: the end is compared with the level held
        # just before the climb, within the noise of the two medians; a diverged model's
        # moves far past it.
        held_values = e.values[before]
        level, k_ref = _eval_end(held_values)
        # at the held level (not the fall before it) and after the onset: the larger, as a
        # few evaluations can show little of their noise by chance
        sigma = max(noise_sigma(held_values), noise_sigma(late))
        gate = ctx.th.diverge_noise_z * math.hypot(level_se(sigma, k_ref), level_se(sigma, k))
        if not positive or not level > 0 or gate > ctx.th.objective_eval_resolution * level:
            return None
        if end > level + gate:
            return None
        within = (
            f", within {num(gate)} ({ctx.th.diverge_noise_z:g} standard errors of its noise) of the level {num(level)} "
            f"it held just before the climb (median of its last {k_ref} evaluations there)"
        )
    return (
        f"the eval loss ({e.key}) was at best {num(ref)} (step {step(e.steps[at])}) before the climb and "
        f"{num(end)} at the end (median of its last {k} of {late.size} evaluations after it{within}): the held-out "
        "loss did not get worse"
    )


def _eval_end(late: np.ndarray) -> tuple[float, int]:
    """``(level, k)``: the median of the last ``k`` = min(3, n) of ``late`` evaluations
    (shape ``(n,)``, n >= 1), so that one lucky evaluation does not decide."""
    k = min(3, late.size)
    return float(median(late[-k:])), k


def _eval_flat_while_climbing(ctx, e, after: np.ndarray, onset_step: float) -> str | None:
    """The held-out loss did not get worse while the train loss went on climbing across
    the evaluations, where none was made before the climb: the train loss (median of the
    ``end_window`` points centred on the first evaluation after ``onset_step``, against the
    median of the run's last as many points and of as many before the onset) climbs on by at least
    ``objective_climb_share`` of its whole climb after that evaluation, and the median of
    the last 3 evaluations is no higher than it. ``e``: the finite eval loss; ``after``:
    the indices of its evaluations after ``onset_step`` (at least one)."""
    s = ctx.finite("loss")
    v, n = s.values, len(s)
    w = end_window(n)
    first = int(after[0])
    i_on = int(np.searchsorted(s.steps, onset_step))
    i_ev = int(np.searchsorted(s.steps, e.steps[first], side="right"))
    if i_ev <= i_on:
        return None
    t_on = float(median(v[max(0, i_on - w) : max(i_on, 1)]))
    # centred on the evaluation: a window before it lags behind a fast climb, and three
    # points of a noisy plateau are no level
    t_ev = float(median(v[max(i_on, i_ev - w // 2) : i_ev + w // 2 + 1]))
    t_end = float(median(v[-w:]))
    if not t_end - t_ev >= ctx.th.objective_climb_share * (t_end - t_on) > 0:
        return None
    ref, late = float(e.values[first]), e.values[after]
    end, k = _eval_end(late)
    if end > ref:
        return None
    return (
        f"the eval loss ({e.key}) was {num(ref)} at its first evaluation in the climb (step {step(e.steps[first])}) "
        f"and {num(end)} at the end (median of its last {k} of {late.size}), while the train loss climbed on from "
        f"{num(t_ev)} to {num(t_end)}: the held-out loss did not get worse"
    )


def objective_changed(
    ctx,
    best_step: float,
    onset_step: float,
    reach_step: float,
    left_step: float | None = None,
    positive: bool = False,
    rise: float | None = None,
) -> str | None:
    """Why a climb of the train loss from its best level (at ``best_step``, first reached
    at ``reach_step``, climbing from ``onset_step``) is not a divergence, in a sentence
    with the numbers, or ``None``. ``positive``: the loss is positive, so an eval loss
    may be read within its noise (:func:`_eval_not_worse`); a signed loss is compared
    strictly. ``rise``: the climb as a ratio of levels, which a logged loss-term weight
    must be able to explain (:func:`objective_schedule`); ``None`` for a signed loss.

    The loss's levels compare only while it measures one thing. A held-out loss that did
    not get worse over the climb says the model did not (:func:`_eval_not_worse`); a
    logged schedule of the objective that moved after the best level says the loss now
    measures something else (:func:`objective_schedule`): a VAE's KL weight annealed up,
    a curriculum's next stage.
    """
    return (
        _eval_not_worse(ctx, reach_step, onset_step, left_step, positive)
        or objective_schedule(ctx, best_step, rise)
        or _accuracy_rose(ctx, best_step, onset_step)
        or _held_out_accuracy_rose(ctx, best_step, onset_step)
    )


def _climb_decelerates(ctx, onset_step: float) -> bool:
    """Whether the train loss's climb from ``onset_step`` to the end slows down: it rises
    no more over the second half of those steps than over the first (levels the median of
    ``end_window`` // 2 points, at least 1, around the onset, the midpoint and the end). A
    running average filling up climbs so (each step adds a share of what is left); a
    blow-up accelerates, and no accuracy explains that away."""
    s = ctx.finite("loss")
    v, n = s.values, len(s)
    i_on = int(np.searchsorted(s.steps, onset_step))
    if n - i_on < 3:
        return False
    h = max(1, end_window(n) // 4)

    def level(i: int) -> float:
        return float(median(v[max(i_on, i - h) : min(n, i + h + 1)]))

    i_mid = (i_on + n - 1) // 2
    on, mid, end = level(i_on), level(i_mid), float(median(v[max(i_on, n - 1 - 2 * h) :]))
    return end - mid <= mid - on


def _accuracy_rose(ctx, best_step: float, onset_step: float) -> str | None:
    """The run's own accuracy (train or held-out, :func:`is_accuracy_key`; in [0, 1] or in
    percent) ended above where it stood when the loss was at its best level (at
    ``best_step``) by at least ``objective_accuracy_rise`` and by ``diverge_noise_z``
    standard errors of the two levels: the model got better at its task while the loss
    climbed, so the loss no longer measures its error (a running average filling up, a
    changed objective). The end is the median of the last 10% of the accuracies after the
    climb's onset (``onset_step``), at least 3; the level at the best, the median of as
    many up to ``best_step`` (or the first accuracy, where it came later but before the
    onset). Only for a climb from the run's first point that slows down
    (:func:`_climb_decelerates`) and ends at most ``objective_fill_max_ratio`` times that
    first point."""
    th = ctx.th
    # An average that filled and held, then climbs, follows a loss that climbs: only a
    # climb from the run's first point is an average filling up from zero.
    s = ctx.finite("loss")
    if best_step > float(s.steps[0]) or not _climb_decelerates(ctx, onset_step):
        return None
    # An average of r = b r + (1 - b) loss from 0 logs (1 - b) of the loss first: it can
    # fill up by 1 / (1 - b) at the most.
    loss_end = float(median(s.values[-end_window(len(s)) :]))
    if not 0 < float(s.values[0]) or loss_end > th.objective_fill_max_ratio * float(s.values[0]):
        return None
    for name, series in sorted(ctx.run.series.items()):
        if not is_accuracy_key(series.key or name):
            continue
        f = ctx.finite(name)
        v = f.values
        if not v.size or float(v.min()) < 0 or float(v.max()) > 100:
            continue
        v = accuracy_as_share(v)
        after = v[f.steps > onset_step]
        k = max(3, after.size // 10)
        ref = v[f.steps <= best_step][-k:]
        if not ref.size:
            ref = v[f.steps <= onset_step][:1]
        if not ref.size or after.size < k:
            continue
        at_best, end = float(median(ref)), float(median(after[-k:]))
        sigma = noise_sigma(v)
        gate = th.diverge_noise_z * math.hypot(level_se(sigma, ref.size), level_se(sigma, k))
        if end - at_best >= max(th.objective_accuracy_rise, gate):
            return (
                f"the accuracy {series.key or name} ended at {num(end)} (median of its last {k}), up from "
                f"{num(at_best)} when the loss was at its best: the model got better at its task while the loss "
                "climbed"
            )
    return None


def _held_out_accuracy_rose(ctx, best_step: float, onset_step: float) -> str | None:
    """A held-out accuracy (:func:`is_accuracy_key` and :func:`measured_held_out`; in
    [0, 1] or in percent) that ended above where it stood when the train loss was at its
    best level (at ``best_step``), beyond ``diverge_noise_z`` standard errors of the two
    levels, with at least ``objective_eval_after`` evaluations after the climb's onset
    (``onset_step``): the model got better on data it does not train on while its train
    loss climbed, so the loss measures something else (a curriculum's harder stage, a
    changed loss the log does not name). A diverging model gets worse on held-out data.
    The end level is the median of the last 10% of the evaluations after the onset (at
    least 3); the level at the best, the highest median of as many consecutive evaluations
    up to ``best_step``. Only where no eval loss is logged after the onset:
    an eval loss that got worse over the climb decides (a held-out accuracy can rise while
    the held-out loss climbs on overconfident predictions): there the two disagree, and
    :func:`held_out_accuracy_gain` says so. ``None`` otherwise."""
    if _evaluated_after(ctx, onset_step):
        return None
    return held_out_accuracy_gain(ctx, best_step, onset_step)


def held_out_accuracy_gain(ctx, best_step: float, onset_step: float, floor: float = 0.0) -> str | None:
    """The reading of :func:`_held_out_accuracy_rose` whatever the eval loss did: a
    held-out accuracy that ended above its level at the train loss's best step (at
    ``best_step``) beyond ``diverge_noise_z`` standard errors, with at least
    ``objective_eval_after`` evaluations after the climb's onset (``onset_step``), and by
    at least ``floor`` (a share), as a sentence with the numbers, or ``None`` (also where
    its last values repeat one value to the bit: a model collapsed onto its majority
    class scores the class prior at every evaluation, above where it stood). Beside an eval loss that got worse it is no
    proof that the objective changed (overconfident predictions raise a held-out loss
    while its accuracy rises), but it is evidence a diverging model cannot produce: the
    divergence rules read such a run as disputed (a warning) instead of failed."""
    th = ctx.th
    for key, steps, v in accuracy_series(ctx):
        if not measured_held_out(key):
            continue
        after = v[steps > onset_step]
        k = max(3, after.size // 10)
        upto = v[steps <= best_step]
        if not upto.size or after.size < max(k, th.objective_eval_after):
            continue
        # the highest level it held up to then: an accuracy still rising at the loss's best
        # step is not compared with where it stood earlier
        if repeats_one_value(after[-k:]):
            continue  # pinned to one value (a model predicting its majority class): no gain
        m = min(k, upto.size)
        at_best, end = float(np.max(window_medians(upto, m))), float(median(after[-k:]))
        gate = th.diverge_noise_z * math.hypot(level_se(noise_sigma(v), m), level_se(noise_sigma(v), k))
        if end - at_best > max(gate, floor):
            return (
                f"the held-out accuracy {key} ended at {num(end)} (median of its last {k}), up from {num(at_best)} "
                f"when the loss was at its best, beyond its noise ({num(gate)}): the model got better on held-out "
                "data while the train loss climbed"
            )
    return None


#: Evaluations the trend test of :func:`_learning_elsewhere` reads one by one; a longer
#: eval series is read as this many block medians (a median of k evaluations is a level,
#: not a loss of the trend: the test is rank-based).
EVAL_TREND_MAX_POINTS = 1000


def _learning_elsewhere(ctx, effect: bool = False, any_size: bool = False) -> str | None:
    """Evidence, outside the train loss, that the model is learning: a held-out loss that
    falls with a significant trend (Mann-Kendall z at or below ``-dead_trend_z`` over its
    evaluations, last below first, by at least ``eval_min_fall`` of the first). An
    evaluation loss carries no mini-batch noise, so a steady fall there is learning that a
    noisy or resumed train curve can hide. With
    ``effect`` (a learning rate at most ``tiny_lr``) the fall must also be an effect, at
    least ``dead_min_improvement`` of the first evaluation: at a rate of 1e-9 an eval loss
    drifts by float rounding (1e-6 of its value) at every evaluation, which a rank test
    calls significant."""
    if not ctx.has("eval_loss"):
        return None
    ev = ctx.finite("eval_loss")
    if len(ev) < 3 or not ev.values[-1] < ev.values[0]:
        return None
    if effect and not ev.values[-1] <= (1 - ctx.th.dead_min_improvement) * ev.values[0]:
        return None
    # An effect, whatever a rank test says: a frozen model's eval loss drifts one way too
    # (``any_size``: a faint fall, read as context under a pinned loss, never as learning).
    first, last = float(ev.values[0]), float(ev.values[-1])
    if not any_size and not first - last >= ctx.th.eval_min_fall * abs(first):
        return None
    # Read as at most EVAL_TREND_MAX_POINTS block medians: a log that evaluates at every
    # step has tens of thousands of evaluations, and the test compares every pair.
    z = trend_z(ev.values, EVAL_TREND_MAX_POINTS)
    if z > -ctx.th.dead_trend_z:
        return None
    return (
        f"the eval loss falls with a significant trend ({num(ev.values[0])} -> {num(ev.values[-1])} over "
        f"{len(ev)} evaluations, Mann-Kendall z {z:.2f}"
        + (" over their block medians)" if len(ev) > EVAL_TREND_MAX_POINTS else ")")
    )


def _lr_late(ctx) -> float | None:
    """The median learning rate over the second half of the run, or ``None`` (not logged,
    or fewer than 2 finite points)."""
    if not ctx.has("lr"):
        return None
    lr = ctx.finite("lr").values
    return float(median(lr[lr.size // 2 :])) if lr.size >= 2 else None


def _grad_levels(ctx) -> tuple[float, float] | None:
    """``(early, late)`` medians of the gradient norm: its first tenth with the first
    logged norm left out, and its second half; ``None`` without 4 finite norms."""
    if not ctx.has("grad_norm"):
        return None
    g = ctx.finite("grad_norm").values
    if g.size < 4:
        return None
    return float(median(g[1 : max(2, g.size // 10 + 1)])), float(median(g[g.size // 2 :]))


def grad_collapsed(ctx) -> tuple[float, float] | None:
    """``(early, late)`` (:func:`_grad_levels`) when the gradient norm collapsed over the
    run: the late median exactly 0 or under ``vanish_ratio`` of the early one; else
    ``None``."""
    levels = _grad_levels(ctx)
    if levels is None:
        return None
    early, late = levels
    return levels if late <= 0 or (early > 0 and late < ctx.th.vanish_ratio * early) else None


def _alive(ctx) -> tuple[bool, str]:
    """Whether the log shows the optimizer still moving the weights over the second half
    of the run: a learning rate above ``tiny_lr`` and a finite, non-zero gradient norm
    that has not collapsed below ``vanish_ratio`` of its early level. Both series must be
    logged: without them nothing says the run is alive."""
    lr_late, levels = _lr_late(ctx), _grad_levels(ctx)
    if lr_late is None or levels is None or lr_late <= ctx.th.tiny_lr or grad_collapsed(ctx):
        return False, ""
    return True, f"learning rate {num(lr_late)} and gradient norm {num(levels[1])} (medians of the second half)"


def _stepping(ctx) -> str:
    """The evidence that the optimizer steps, or ``""``: :func:`_alive`'s, or, in a log
    with a learning rate and no gradient norm, a second-half learning rate above
    ``tiny_lr`` (a frozen model would show a zero gradient norm, had one been logged)."""
    alive, text = _alive(ctx)
    if alive:
        return text
    lr_late = _lr_late(ctx)
    if ctx.has("grad_norm") or lr_late is None or lr_late <= ctx.th.tiny_lr:
        return ""
    return f"learning rate {num(lr_late)} (median of the second half; no gradient norm logged)"


#: Words of a metric computed from the model's predictions (accuracy, F1, precision,
#: recall, IoU): bit-identical over many evaluations, it says the predictions are frozen.
PREDICTION_WORDS = frozenset({"acc", "accuracy", "f1", "precision", "recall", "iou", "miou", "auc"})


def _frozen_metric(ctx) -> tuple[str, int, float] | None:
    """``(key, evaluations, value)`` of a prediction metric (:data:`PREDICTION_WORDS`) that
    holds one bit-identical value at every one of at least ``dead_flat_min_points``
    evaluations after its first: the model's predictions do not change however the loss
    wobbles. ``None`` when no such metric is logged. Computed once per judgement."""

    def compute():
        for s in (ctx.run.series[name] for name in sorted(ctx.run.series)):
            if not set(words(s.key)) & PREDICTION_WORDS:
                continue
            v = s.values[np.isfinite(s.values)]
            # A perfect score held is a solved task, not a frozen model.
            if v.size - 1 >= ctx.th.dead_flat_min_points and np.all(v[1:] == v[1]) and v[1] not in (1.0, 100.0):
                return s.key, int(v.size - 1), float(v[1])
        return None

    return ctx.memo("frozen_metric", compute)


def _tiny_lr(ctx) -> float | None:
    """The learning rate's maximum when it is at most ``tiny_lr`` over the whole run (a
    named cause of a dead run; 0 too, where TP-ZERO-LR fails the run and lists the dead
    run as what it explains), else ``None``. The cause needs the least evidence TP-ZERO-LR
    needs, ``min_value_points`` logged rates: a warm-up that starts at 0 and a cosine that
    ends at 0, logged once each, show the schedule's edges, not the rate between them. Not
    where another parameter group's logged rate trains (:func:`_shared.trained_group_rate`)."""
    if not ctx.has("lr") or trained_group_rate(ctx):
        return None  # another parameter group trains at a real rate
    lr = ctx.finite("lr").values
    if lr.size < ctx.th.min_value_points:
        return None
    return float(lr.max()) if 0 <= float(lr.max()) <= ctx.th.tiny_lr else None


def _slow_learner_nats(th) -> float:
    """A slow learner's fall over a run, ``dead_min_improvement`` of its level, in nats
    of the log-loss (0.051 for 5%): the effect a change over the run is measured against."""
    return -math.log1p(-th.dead_min_improvement)


def _pinned(ctx) -> bool:
    """Whether the loss's 99% interval of its change over the run (log scale, at least
    ``dead_flat_min_points`` points) lies inside a slow learner's fall in both directions:
    whatever its trend, the run moved less than a learning run does."""
    if len(ctx.finite("loss")) < ctx.th.dead_flat_min_points:
        return False
    ci = loss_change_interval(ctx)
    bar = _slow_learner_nats(ctx.th)
    return ci is not None and -bar < ci[0] and ci[1] < bar


def updates_zero(ctx) -> tuple[str, float | None, str] | None:
    """``(key, median ratio or None, sentence)`` when what the log measured across the
    optimizer step says the steps do not move the weights, whatever the learning rate and
    gradient norm logged (a gradient clipped to 1e-8, gradients cleared before step()):
    the median over the run of ``update_ratio``, or of the monitor's largest per-tensor
    ratio (``model/layer_update_ratio_max``, log10), at most
    ``10 ** live_zero_update_ratio_log10``, from at least ``min_value_points`` values; or
    the monitor's count of trainable tensors whose gradients are cleared before the step
    (``model/grads_cleared_before_step``), that are in no param group of the optimizer
    (``model/params_outside_optimizer``), or that did not change across it
    (``model/params_not_updated``) covering every trainable tensor at its last
    ``model_checks`` checks; or the monitor's count of optimizer steps
    (``model/optimizer_steps``) 0 at every one of at least ``model_checks`` checks (an
    ``optimizer.step()`` never called). ``None`` otherwise."""
    th = ctx.th
    k = int(th.model_checks)
    steps_taken = ctx.run.series.get(OPTIMIZER_STEPS_KEY)
    if steps_taken is not None:
        v = steps_taken.values[np.isfinite(steps_taken.values)]
        if v.size >= k and np.all(v == 0):
            return (
                steps_taken.key,
                None,
                f"{steps_taken.key} is 0 at all {v.size} checks: the optimizer never stepped (optimizer.step() is "
                "never called), so no weight changes",
            )
    total = trainable_tensors(ctx.run)
    for key, why in (
        (CLEARED_KEY, "backward gives them gradients and they are cleared before optimizer.step()"),
        (
            OUTSIDE_KEY,
            "they get gradients but are in no param group of the optimizer (one built over a copy of the model)",
        ),
        (NOT_UPDATED_KEY, "they have gradients and a learning rate above 0 but do not change across optimizer.step()"),
    ):
        counted = ctx.run.series.get(key)
        if counted is None or total is None:
            continue
        v = counted.values[np.isfinite(counted.values)]
        if v.size >= k and np.all(v[-k:] >= total):
            return (
                counted.key,
                None,
                f"{counted.key} covers all {total} trainable tensors at the last {k} checks: {why}, so no step changes a weight",
            )
    bar = 10.0**th.live_zero_update_ratio_log10
    for key, log10 in (("update_ratio", False), (LAYER_UPDATE_RATIO_KEY, True)):
        sr = ctx.run.series.get(key)
        if sr is None:
            continue
        v = sr.values[np.isfinite(sr.values)]
        if v.size < th.min_value_points:
            continue
        med = float(median(v))
        ratio = 10.0**med if log10 else med
        if ratio <= bar:
            return (
                sr.key,
                ratio,
                (
                    f"the median update/weight ratio ({sr.key}) is {num(ratio)}, at most {num(bar)}: the optimizer steps "
                    "do not move the weights"
                ),
            )
    return None


def _trend_too_small(ctx) -> bool:
    """Whether a run too short for :func:`_pinned` (under ``dead_flat_min_points`` points)
    cannot have fallen by a slow learner's share, whatever its trend: the upper end of the
    interval of its fall over the run (the least-squares line of the log-loss, Student-t
    quantile at ``dead_ci_z`` for its n - 2 degrees of freedom) is under a slow learner's
    fall. A Keras run at lr 1e-8 whose loss drifts 1.69591 -> 1.69583 over 20 epochs has a
    trend every rank test calls significant and a fall of 5e-5 nats."""
    s = ctx.finite("loss")
    if len(s) >= ctx.th.dead_flat_min_points:
        return False
    ci = change_interval(s.steps, np.log(s.values), t_quantile(ctx.th.dead_ci_z, len(s) - 2))
    return ci is not None and ci[1] < _slow_learner_nats(ctx.th)


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
        # Robust to noise: the ends read over 10% of the run must agree, and a run whose loss
        # falls with a significant trend (Mann-Kendall on block medians) is learning, however
        # slowly: a noisy small-batch curve whose first and last five points happen to sit
        # close together is not a dead run.
        wide = max(w, min(n // 10, 500))
        _, last_wide, rel_wide = improvement(v, wide)
        # With a learning rate that never exceeds tiny_lr (a named cause), progress is an
        # effect size: ends that differ by noise, or a trend the test calls significant
        # because it has many points (0.15% over a run at lr 4e-10), are not progress; the
        # fall must show in the interval of the change over the run, beyond a slow
        # learner's. Not in a log that starts past its own span: a resumed run's late
        # window at a low rate is a fine-tune's continuation, and its ends are the only
        # evidence it has.
        resumed = float(s.steps[0]) > 0 and float(s.steps[0]) >= float(s.steps[-1] - s.steps[0])
        tiny = _tiny_lr(ctx)
        effect_only = not resumed and tiny is not None and not fall_shown(ctx)
        if (rel >= th.dead_min_improvement or rel_wide >= th.dead_min_improvement) and not effect_only:
            return None
        meds, _ = block_medians(v, max(1, -(-n // th.dead_trend_blocks)))
        z = mann_kendall_z(meds)
        # A significant trend is learning only if it can be of a learning run's size: a
        # loss that drifts one way by 0.01% over 300 points (a contrastive model collapsed
        # at ln(2B-1)) has a trend any rank test calls significant and a 99% interval of
        # its change over the run inside a slow learner's fall, both ways: pinned, an
        # effect too small to be progress (see loss_change_interval).
        if z <= -th.dead_trend_z and not effect_only and not _pinned(ctx) and not _trend_too_small(ctx):
            return None
        # The same holds for the held-out loss: under a pinned train loss, a fall of the eval
        # loss is learning only as an effect (a model frozen but for its final LayerNorm
        # drifts 0.4-0.7% over 6-10 evaluations, which a rank test calls significant).
        # Such a drift is no cause for a FAIL either: at most no progress, a WARN.
        pinned = not effect_only and _pinned(ctx)
        if _learning_elsewhere(ctx, effect=effect_only or pinned):
            return None
        faint = _learning_elsewhere(ctx, any_size=True) if pinned else None
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
        state.update(fall=fall, alive=alive_text, sigma=sigma)
        if faint is not None:
            ev = ctx.finite("eval_loss").values
            state.update(
                kind="stalled",
                faint_eval=faint,
                eval_fall=float(1 - ev[-1] / ev[0]),
                ci=loss_change_interval(ctx),
                ci_bar=_slow_learner_nats(th),
            )
            return state
        if tiny is not None:
            state["tiny_lr"] = tiny
            return state  # the cause is named: a dead run, however it started
        frozen = _frozen_metric(ctx)
        if frozen is not None:
            state["frozen_metric"] = frozen
            return state  # the cause is named: the model's predictions do not change
        # A loss held at a fitted level (both ends at most fitted_loss_level) has gradients,
        # and so updates, of about zero because nothing is left to fit: a collapsed norm or a
        # tiny update ratio is then its consequence, no cause. What the monitor counts
        # (steps never taken, gradients cleared, parameters outside the optimizer) still is.
        fitted = max(first, last) <= th.fitted_loss_level
        collapsed = grad_collapsed(ctx)
        if collapsed is not None and not fitted:
            state["grad_collapsed"] = collapsed
            return state  # the cause is named: the gradients that move the weights are gone
        still = updates_zero(ctx)
        if still is not None and (still[1] is None or not fitted):
            state["updates_zero"] = still
            return state  # the cause is named: the optimizer steps move the weights by nothing
        if fitted and (collapsed is not None or still is not None):
            state["fitted"] = "a gradient norm that collapsed" if still is None else "updates of about zero"
        # Did not improve is not dead: without a named cause the run must show that nothing
        # moves. A loss that fell from its first point beyond the noise learned something
        # and then held a level (a fine-tune at its floor, a distillation that steps down
        # once); one that ended higher than it started moved (the divergence rules judge
        # rises); a log that starts later than its own length (a resumed run: Coqui's
        # global step, a JSONL appended after a restart) shows a late window of a longer
        # training. Each is no progress, a WARN.
        state["kind"] = "stalled"
        first_step, span = float(s.steps[0]), float(s.steps[-1] - s.steps[0])
        if first_step > 0 and first_step >= span:
            state["resumed"] = first_step
            return state
        if fall > max(math.log1p(th.dead_min_improvement), th.diverge_noise_z * math.sqrt(2) * sigma):
            state["fell_early"] = True
            return state
        # A loss is called pinned only when it is pinned from its first point. A first
        # log more than a slow learner's 5% above the end level, even inside the noise, is
        # the shape of a log that starts at the end of the run's drop (a fine-tune logged
        # every few hundred steps), which a healthy run produces; so is a first point too
        # noisy to show such a drop (dead_ci_z single-point sigmas wider than the 5%).
        bar_up = math.log1p(th.dead_min_improvement)
        head_drop = fall > bar_up or th.dead_ci_z * sigma > bar_up
        state["head_drop"] = head_drop
        if max(rel, rel_wide) < -th.dead_min_improvement:
            state["rose"] = True
            return state
        # A flat loss whose 99% interval for the change over the run excludes the fall of a
        # slow learner, in both directions (see dead_flat_min_points) ...
        ci = loss_change_interval(ctx) if n >= th.dead_flat_min_points else None
        state.update(ci=ci, ci_bar=_slow_learner_nats(th))
        if _pinned(ctx):
            # ... is pinned, but pinned is not dead without a cause. A learning rate above
            # tiny_lr and a live gradient norm move the weights, and a loss that holds while
            # they move is a model at its floor (a fine-tune converged before its first log)
            # as often as one that cannot learn; a log that names neither shows less, not
            # more, and a run that reached its floor before its first log holds one level
            # from its first point too. The causes above make it a TP-DEAD-RUN.
            stepping = _stepping(ctx)
            if stepping:
                state["stepping"] = stepping
            elif not head_drop:
                state["pinned"] = True
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
            else f"a downward trend (Mann-Kendall z {st['z']:.2f}) whose size is no progress: the 99% interval of "
            "the change over the run does not show a fall beyond a slow learner's."
            if st["z"] <= -st["trend_z_bar"]
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
        "change_interval": list(st["ci"]) if st.get("ci") else None,
    }


#: What TP-DEAD-RUN reads, and TP-LOSS-STALLED with it (one no-progress reading, two verdicts).
_DEAD_THRESHOLDS = [
    "dead_min_points",
    "dead_window",
    "dead_min_improvement",
    "dead_trend_z",
    "eval_min_fall",
    "dead_trend_blocks",
    "dead_min_schedule_share",
    "dead_flat_min_points",
    "dead_ci_z",
    "tiny_lr",
    "min_value_points",
    "diverge_noise_z",
    "vanish_ratio",
    "live_zero_update_ratio_log10",
    "model_checks",
    "fitted_loss_level",
]


@rule(
    "TP-DEAD-RUN",
    Level.FAIL,
    "shape",
    "the loss did not move over the run",
    needs=[Need("loss", "dead_min_points", positive=True, all_finite=True)],
    thresholds=_DEAD_THRESHOLDS,
    verdict_bearing=True,
    min_schedule_share="dead_min_schedule_share",
    after_warmup=True,
    implies=("TP-NEAR-CHANCE",),
    least_evidence="No progress (both the {dead_window}-point ends and the 10% ends under {dead_min_improvement:.0%} improvement, no significant downward trend, no falling eval loss) and a cause in the log: a learning rate at most {tiny_lr} over the whole run (at least {min_value_points} logged rates), a gradient norm collapsed below {vanish_ratio:.0%} of its early level, a logged update/weight ratio whose median is at most 10^{live_zero_update_ratio_log10:g} (these two not where both ends of the loss are at most {fitted_loss_level:g}: a model with nothing left to fit has them too), gradients cleared before optimizer.step() for every trainable tensor (or every one in no param group of the optimizer, or none changed across the step), or an accuracy-like metric bit-identical at {dead_flat_min_points} evaluations. A loss pinned within its noise with no cause named is TP-LOSS-STALLED: a run that reached its floor before its first log holds one level too.",
    detects="The median of the last {dead_window} losses is less than {dead_min_improvement:.0%} below the median of the first {dead_window} (at least {dead_min_points} points), the same holds for the medians of the first and last 10% of the run, the loss shows no significant downward trend (Mann-Kendall z above -{dead_trend_z}, one-sided 1%, over at most {dead_trend_blocks} block medians; a significant trend counts only where the 99% interval of the change over the run, from {dead_flat_min_points} points, reaches a slow learner's {dead_min_improvement:.0%} in either direction: a drift of 0.01% over 300 points is significant and is not progress) and no eval loss falls with such a trend by at least {eval_min_fall:.0%} of its first evaluation (a frozen model's eval loss drifts one way too); with a learning rate at most {tiny_lr}, ends or a trend count as progress only where the 99% interval of the change over the run shows a fall beyond {dead_min_improvement:.0%} (an effect size: many points make a drift of a fraction of a percent significant), and a falling eval loss only where its last evaluation is at least {dead_min_improvement:.0%} below its first (at such a rate it drifts by float rounding). And a cause that nothing moves, named in the finding. A learning rate at most {tiny_lr} over the whole run (at least {min_value_points} logged rates: a warm-up that starts at 0 and a schedule that ends at 0, logged once each, are its edges, not its rate), a gradient norm collapsed below {vanish_ratio:.0%} of its early level, a logged update/weight ratio (update_ratio, or the monitor's largest per-tensor ratio) whose median over the run is at most 10^{live_zero_update_ratio_log10:g}, the monitor's count of tensors whose gradients are cleared before optimizer.step(), that are in no param group of the optimizer (one built over a copy of the model), or that did not change across the step, covering every trainable tensor at its last {model_checks} checks, the monitor's count of optimizer steps at 0 over {model_checks} checks or more (optimizer.step() never called), or a prediction metric (accuracy, F1, precision, recall, IoU) bit-identical at every one of at least {dead_flat_min_points} evaluations after its first. Without a cause the run is no progress, not death (TP-LOSS-STALLED, a WARN), however flat the loss: a loss that fell from its first point beyond its noise and then held, a loss pinned to one level within its noise (a run at its floor before its first log looks the same, with or without a logged learning rate), one that ended more than {dead_min_improvement:.0%} higher than it started, a log that starts past its own span (a resumed run), and a flat loss too noisy to exclude slow learning. A loss bit-identical from point to point is TP-LOSS-FROZEN; one at a uniform guess over k classes is TP-CHANCE-LEVEL.",
    why="A run whose loss is pinned to one level, within its own noise, for the whole run has spent its compute without learning anything.",
    not_mean="A noisy curve that is still falling is not dead (the trend test exempts it), nor a slow learner whose interval reaches a slow learner's fall, nor a fine-tune whose loss fell before or at its first logged point and holds a plateau, nor a run judged early in its schedule or during warm-up. A flat loss with no cause in the log is not dead either: a run that had converged before its first logged point holds one level from its first point.",
    causes="A zero or far too small learning rate, frozen parameters, an optimizer that does not hold the trainable parameters, labels unrelated to inputs.",
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
    message = f"loss did not move: it {change}"
    if "tiny_lr" in st and st["tiny_lr"] == 0:
        message += ", with a learning rate of 0"
        evidence += " The learning rate is 0 at every logged step: the weights cannot move."
        data.update(cause="zero_lr", lr_max=0.0)
    elif "tiny_lr" in st:
        message += f", with a learning rate of at most {num(st['tiny_lr'])} (effectively zero)"
        evidence += (
            f" The learning rate never exceeds {num(st['tiny_lr'])} (at most {num(th.tiny_lr)}): "
            "too small for the weights to move."
        )
        data.update(cause="tiny_lr", lr_max=st["tiny_lr"])
    elif "frozen_metric" in st:
        key, count, value = st["frozen_metric"]
        message += f", with frozen predictions ({key} identical at {count} evaluations)"
        evidence += (
            f" {key} is exactly {num(value)} at every one of {count} evaluations after its first: the model's "
            "predictions do not change, so nothing the updates do reaches them."
        )
        data.update(cause="frozen_predictions", metric=key, evaluations=count, value=value)
    elif "updates_zero" in st:
        key, ratio, sentence = st["updates_zero"]
        message += ", with updates of about zero" + (
            f" (update/weight ratio {num(ratio)})" if ratio is not None else ""
        )
        evidence += (
            f" Measured across the optimizer step, {sentence}, whatever the learning rate and gradient norm logged."
        )
        data.update(cause="updates_zero", update_key=key, update_ratio=ratio)
    else:  # dead_run_state calls a run dead only with one of these five causes
        early, late = st["grad_collapsed"]
        message += ", with a gradient norm that collapsed"
        evidence += (
            f" The gradient norm fell from {num(early)} (early median) to {num(late)} (median of the second "
            f"half), below {pct(th.vanish_ratio)} of its early level: nothing moves the weights."
        )
        data.update(cause="grad_collapsed", grad_norm_early=early, grad_norm_late=late)
    yield ctx.finding(message, evidence, data, step=s.steps[-1], line=s.lines[-1])


@rule(
    "TP-FROZEN-PREDICTIONS",
    Level.FAIL,
    "shape",
    "a metric of the model's predictions is bit-identical at every evaluation while the loss makes no progress",
    needs=[Need(("loss", "eval_loss"), "dead_flat_min_points", positive=True, all_finite=True)],
    thresholds=["dead_flat_min_points", "dead_min_improvement", "dead_min_schedule_share"],
    min_schedule_share="dead_min_schedule_share",
    after_warmup=True,
    implies=("TP-DEAD-RUN", "TP-LOSS-STALLED", "TP-NEAR-CHANCE", "TP-CHANCE-LEVEL"),
    least_evidence="A prediction metric (accuracy, F1, precision, recall, IoU, AUC) exactly equal at every one of at least {dead_flat_min_points} evaluations after its first, short of a perfect score, and an eval loss (else the train loss) whose last tenth is less than {dead_min_improvement:.0%} below its first tenth.",
    detects="A metric computed from the model's predictions (a key naming accuracy, F1, precision, recall, IoU or AUC) that holds one bit-identical value, other than a perfect 1.0 or 100, at every one of at least {dead_flat_min_points} evaluations after its first, while the eval loss (the train loss when no eval loss is logged) made no progress: the median of its last 10% less than {dead_min_improvement:.0%} below the median of its first 10%.",
    why="A metric of a model's predictions that does not change by a single example over dozens of evaluations means the predictions themselves do not change: the updates never reach the outputs (a frozen model, a collapsed output layer predicting one class, a metric computed on a cached tensor).",
    not_mean="It does not flag a task solved to a perfect score, nor a metric that stays put while the loss still improves (a confident model sharpening the same predictions).",
    causes="Frozen or unregistered parameters, an output layer collapsed to the majority class, a learning rate far too small, a metric computed on the wrong (cached) predictions.",
    try_="Print the predicted class distribution of one batch; check that the optimizer holds the trainable parameters and that the metric is computed on this step's outputs.",
    objectives=("supervised",),
)
def check_frozen_predictions(ctx):
    frozen = _frozen_metric(ctx)
    if frozen is None:
        return
    name = "eval_loss" if ctx.has("eval_loss") else "loss"
    s = ctx.finite(name)
    w = max(1, len(s) // 10)
    first, last, rel = improvement(s.values, w)
    if rel >= ctx.th.dead_min_improvement:
        return
    key, count, value = frozen
    what = "eval loss" if name == "eval_loss" else "train loss"
    yield ctx.finding(
        f"predictions are frozen: {key} is exactly {num(value)} at {count} evaluations while the {what} makes no progress",
        f"{key} is exactly {num(value)} at every one of {count} evaluations after its first; the {what} ({s.key}) "
        f"goes {num(first)} -> {num(last)} (medians of its first and last {w} points, {pct(rel)} improvement, "
        f"under {pct(ctx.th.dead_min_improvement)}).",
        {"metric": key, "evaluations": count, "value": value, "series": name, "first": first, "last": last},
        step=s.steps[-1],
        line=s.lines[-1],
    )


def _learned_beside_change(ctx, best_step: float) -> bool:
    """Whether the train loss fell on either side of a climb that TP-OBJECTIVE-CHANGED
    reads (its best level at ``best_step``): from its first points down to the best level,
    or from the highest level after it down to the end, by more than
    ``dead_min_improvement`` and more than ``diverge_noise_z`` standard errors of the
    difference of two such medians, on the log of the loss (medians of a tenth of each
    side, at least 1 point). A loss flat on both sides learned nothing on either side of
    the change, whatever the change."""
    th = ctx.th
    s = ctx.finite("loss")
    keep = s.values > 0
    y, steps = np.log(s.values[keep]), s.steps[keep]
    for side, after in ((y[steps <= best_step], False), (y[steps > best_step], True)):
        if side.size < 2:
            continue
        w = max(1, side.size // 10)
        top = float(np.max(block_medians(side, w)[0])) if after else float(median(side[:w]))
        fall = top - float(median(side[-w:]))
        # two medians of w points each differ by noise alone with a standard error of
        # about 1.25 sigma sqrt(2 / w)
        gate = th.diverge_noise_z * 1.25 * noise_sigma(side) * math.sqrt(2 / w)
        if fall > max(math.log1p(th.dead_min_improvement), gate):
            return True
    return False


#: What TP-LOSS-STALLED reads itself: TP-DEAD-RUN's reading, and whether a climb that
#: TP-OBJECTIVE-CHANGED reads (diverge_state) skips it.
_STALLED_THRESHOLDS = [*_DEAD_THRESHOLDS, "objective_weight_rise"]


@rule(
    "TP-LOSS-STALLED",
    Level.WARN,
    "shape",
    "the loss made no progress, but nothing in the log shows the run is dead",
    needs=[Need("loss", "dead_min_points", positive=True, all_finite=True)],
    thresholds=[*_STALLED_THRESHOLDS, *(t for t in DIVERGE_THRESHOLDS if t not in _STALLED_THRESHOLDS)],
    verdict_bearing=True,
    min_schedule_share="dead_min_schedule_share",
    after_warmup=True,
    detects="TP-DEAD-RUN's no-progress condition (ends and wide ends within {dead_min_improvement:.0%}, no significant downward trend of a learning run's size, no eval loss falling by {eval_min_fall:.0%} or more with a significant trend) without its evidence that nothing moves: the loss fell from its first point by more than {dead_min_improvement:.0%} and more than {diverge_noise_z:g} noise sigmas of single points and then held a level; or it ended more than {dead_min_improvement:.0%} higher than it started; or the log starts at a step past its own span (a resumed run whose earlier training is not in the log); or its interval for the change over the run is too wide (or rests on fewer than {dead_flat_min_points} points) to exclude a slow learner's fall; or the loss is pinned to one level within its noise ({dead_ci_z:g}-sigma interval inside the slow learner's fall) with no cause in the log, which a run at its floor before its first log shows too. A cause (a learning rate of at most {tiny_lr}, a collapsed gradient norm, updates of about zero, a frozen prediction metric) makes it a TP-DEAD-RUN. Not where the loss climbed after what it measures changed (TP-OBJECTIVE-CHANGED) and fell on one side of the change (from its first points to its best level, or from the highest level after it to its end: medians of a tenth of that side, by more than {dead_min_improvement:.0%} and {diverge_noise_z:g} standard errors of their difference): its start and end do not compare.",
    why="A loss that stops improving spends the rest of the run for little gain; but a plateau after an early fall, a level held by a fine-tune or a resumed run, and a curve too noisy to tell are not a run that never trained, so this is a warning to look, not a failure.",
    not_mean="It does not mean the run is broken: fine-tunes from a good checkpoint, runs at their data's noise floor, slow learners on short or noisy logs and resumed runs look like this. It is not TP-DEAD-RUN, which needs a cause in the log: a learning rate of about zero, a collapsed gradient norm or a frozen prediction metric.",
    causes="A model at the floor of what its data allow, a learning rate too small after warm-up to make further progress, a resumed run already converged, too little capacity, a change of the loss's definition partway (a re-weighted objective).",
    try_="Check the eval metrics: if they still improve, nothing is wrong; otherwise try a larger learning rate, a longer schedule, or more capacity.",
    objectives=("supervised",),
)
def check_loss_stalled(ctx):
    st = dead_run_state(ctx)
    if st is None or st["kind"] != "stalled":
        return
    climb = diverge_state(ctx)
    if climb is not None and climb["objective_changed"] and _learned_beside_change(ctx, climb["data"]["best_step"]):
        # the loss climbed after what it measures changed (TP-OBJECTIVE-CHANGED) and
        # learned on one side of the change: its levels before and after it do not
        # compare, so neither does its start with its end
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
    elif st.get("fell_early"):
        # "than it started" would read as "than its first point", which it fell from: the
        # comparison is with the median of the first points.
        change = change.replace("than it started", f"than the median of its first {st['w']} points")
        message = f"loss stalled: it fell from its first point {num(s.values[0])}, then {change}"
        evidence += f" The first loss {num(s.values[0])} sits {times(math.exp(st['fall']))} above the end level."
        if st["alive"]:
            evidence += f" The optimizer is alive: {st['alive']}."
    elif st.get("rose"):
        if objective_schedule(ctx, float(s.steps[0])) is not None:
            # what the loss measures changed during the run (a stage, a weight, a term
            # added): its end is not comparable with its start (TP-OBJECTIVE-CHANGED's)
            return
        message = f"loss made no progress: it {change}"
        evidence += " A loss that rose is not a dead run; the divergence rules judge how far it rose."
    else:
        message = f"loss made no progress: it {change}"
        ci = st.get("ci")
        if ci is not None:
            interval = (
                f" The {ctx.th.dead_ci_z:g}-sigma interval of the fall in log-loss over the run is [{ci[0]:.3f}, "
                f"{ci[1]:.3f}] nats"
            )
            inside = f"{interval}, inside a slow learner's {st['ci_bar']:.3f}"
        if st.get("faint_eval"):
            evidence += (
                f"{inside}; and {st['faint_eval']}, a fall of {pct(st['eval_fall'])}, under the "
                f"{pct(ctx.th.dead_min_improvement)} a slow learner makes: a trend a rank test calls significant, "
                "but no progress."
            )
        elif st.get("stepping"):
            evidence += (
                f"{inside}, but the optimizer is stepping ({st['stepping']}): a loss that holds while the weights "
                "move is a model at its floor as often as one that cannot learn."
            )
        elif st.get("pinned"):
            evidence += (
                f"{inside}: the loss is pinned to one level within its noise from its first point. The log names "
                "no cause (no learning rate of about zero, no collapsed gradient norm, no frozen prediction "
                "metric), and a run that reached its floor before its first log holds one level too: check that "
                "the optimizer steps."
            )
        elif ci is not None and -st["ci_bar"] < ci[0] and ci[1] < st["ci_bar"] and st.get("head_drop"):
            evidence += (
                f"{inside}, but "
                + (
                    f"the first loss {num(s.values[0])} sits {times(math.exp(st['fall']))} above the end level"
                    if st["fall"] > math.log1p(ctx.th.dead_min_improvement)
                    else f"single points are too noisy (log-loss sigma {st['sigma']:.3f}) to show whether its first "
                    "log sits above the level it holds"
                )
                + ": a log that starts at the end of the run's drop holds a level too, so this is not evidence "
                "that nothing moves."
            )
        elif ci is None:
            evidence += (
                f" With {len(s)} points (fewer than {ctx.th.dead_flat_min_points}) the log is too short to call "
                "the loss pinned: not enough evidence that nothing moves."
            )
        else:
            evidence += (
                f"{interval}, which reaches past a slow learner's {st['ci_bar']:.3f}: not enough evidence that "
                "nothing moves."
            )
    if st.get("fitted"):
        evidence += (
            f" The log shows {st['fitted']}, but the loss holds at a fitted level (both ends at most "
            f"{num(ctx.th.fitted_loss_level)}): with nothing left to fit the gradients and the updates are about "
            "zero too, so they name no cause."
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
