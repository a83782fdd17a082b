"""Values several rules read off the same run, computed once per judgement.

Each goes through :meth:`~trainproof.rules.engine.Context.memo`, so the first rule that
needs it computes it and the others reuse it; every rule still sees exactly the value it
would have computed itself.
"""

from __future__ import annotations

import math

import numpy as np

from .._arrays import intersect1d, quantile
from ..aliases.loss_fallback import LOSS_KIND_WORDS, loss_candidate
from ..aliases.table import GROUP_SUFFIX
from ..aliases.vocabulary import words
from ._fmt import num
from ._stats import (
    block_medians,
    change_interval,
    median,
    noise_sigma,
    smoothing_block,
    t_quantile,
    window_medians,
)


def log_loss(ctx) -> np.ndarray:
    """``np.log`` of the finite train losses (read-only)."""

    def compute():
        y = np.log(ctx.finite("loss").values)
        y.flags.writeable = False
        return y

    return ctx.memo("log(loss)", compute)


def log_loss_noise(ctx) -> float:
    """:func:`~trainproof.rules._stats.noise_sigma` of :func:`log_loss`."""
    return ctx.memo("noise_sigma(log(loss))", lambda: noise_sigma(log_loss(ctx)))


def loss_change_interval(ctx) -> tuple[float, float] | None:
    """:func:`~trainproof.rules._stats.change_interval` of the log of the finite train
    losses at ``dead_ci_z`` (nats of a log-loss; a positive value is a fall), computed once
    per judgement; ``None`` with fewer than 3 points."""

    def compute():
        s = ctx.finite("loss")
        return change_interval(s.steps, log_loss(ctx), ctx.th.dead_ci_z) if len(s) >= 3 else None

    return ctx.memo("loss_change_interval", compute)


#: Block medians the level reading of a fall needs: the first, and 5 later ones whose
#: spread stands for the run's block-scale noise (fewer give a spread too often near 0).
LEVEL_FALL_BLOCKS = 6


def fall_shown(ctx) -> bool:
    """Whether the train loss fell beyond what its noise and a slow learner's fall
    explain (:func:`fall_evidence`)."""
    return fall_evidence(ctx) is not None


def fall_evidence(ctx) -> tuple[str, float, float] | None:
    """``(how, low, high)``: the train loss fell beyond what its noise and a slow
    learner's fall (``dead_min_improvement``) explain, ``low`` to ``high`` the
    ``dead_ci_z`` (99%) interval of the fall in nats of the log-loss; ``None`` when it
    did not. Read two ways, either of which suffices (``how`` names it): ``"line"``, the
    fall of the loss's least-squares line over the run (:func:`loss_change_interval`),
    which a steady fall fits; ``"levels"``, the fall from its first block's level to the
    level it then held, against the spread of its later block levels (:func:`_level_fall`),
    which a fast fall that then holds shows and a line does not (a head that learns
    1.9 -> 0.25 in a tenth of the run: the line's residuals are one long bend, whose
    autocorrelation widens its interval past the fall)."""
    bar = -math.log1p(-ctx.th.dead_min_improvement)
    ci = loss_change_interval(ctx)
    if ci is not None and ci[0] > bar:
        return "line", ci[0], ci[1]
    levels = ctx.memo("level_fall", lambda: _level_fall(ctx))
    if levels is not None and levels[0] > bar:
        return "levels", levels[0], levels[1]
    return None


def _level_fall(ctx) -> tuple[float, float] | None:
    """The ``dead_ci_z`` interval of the fall from the start level (the first block
    median, blocks of :func:`~trainproof.rules._stats.smoothing_block` points) to the level
    the run then held (the median of the later block medians), against the spread of those
    later block medians (1.4826 x their MAD): the block-scale noise of the run itself, its
    wander and autocorrelation included; the interval's half-width is a Student-t quantile
    of that spread, since a spread of few blocks is itself uncertain. ``None`` with fewer
    than :data:`LEVEL_FALL_BLOCKS` blocks or non-positive points (see
    :func:`fall_evidence`)."""
    s = ctx.finite("loss")
    if not bool(np.all(s.values > 0)):
        return None
    meds, _ = block_medians(s.values, smoothing_block(len(s)))
    if meds.size < LEVEL_FALL_BLOCKS:
        return None
    y = np.log(meds)
    later = y[1:]
    held = float(median(later))
    spread = 1.4826 * float(median(np.abs(later - held)))
    half = t_quantile(ctx.th.dead_ci_z, later.size - 1) * spread * math.sqrt(1 + 1 / later.size)
    fall = float(y[0]) - held
    return fall - half, fall + half


def lr_restart_after(ctx, at_step: float) -> tuple[float, float, float, float] | None:
    """``(step, trough rate, peak, trough step)`` when the logged learning rate, after
    ``at_step``, climbs to at least ``diverge_lr_rise`` times the trough of the cycle
    ``at_step`` is in and back to a rate the run already held before it (at least half its
    highest rate up to ``at_step``): a new cycle of the schedule (cosine with warm restarts,
    a cyclic rate), after which the loss is expected to rise while the rate is high again.

    The trough is the lowest rate since the last time the rate stood at three quarters of
    that peak before ``at_step`` (the previous cycle's top): with warm restarts it is the
    rate at ``at_step`` or just before; in a triangular cyclic schedule the loss is often
    lowest half-way up a rising phase, whose trough came earlier. ``None`` without a logged
    rate, without one before ``at_step``, or without such a climb (a climb to a rate never
    held is a runaway, which the divergence rules judge as a cause)."""
    if not ctx.has("lr"):
        return None
    lr = ctx.finite("lr")
    upto = lr.steps <= at_step
    before = lr.values[upto]
    after_mask = lr.steps > at_step
    if before.size == 0 or not after_mask.any():
        return None
    peak_i = int(np.argmax(np.where(after_mask, lr.values, -np.inf)))
    peak = float(lr.values[peak_i])
    top = np.flatnonzero(before >= 0.75 * peak)
    since = int(top[-1]) if top.size else 0
    trough_i = since + int(np.argmin(before[since:]))
    rate = float(before[trough_i])
    if not rate > 0 or peak < ctx.th.diverge_lr_rise * rate or peak > 2.0 * float(before.max()):
        return None
    if float(before.max()) < 0.5 * peak:
        return None
    return float(lr.steps[peak_i]), rate, peak, float(lr.steps[np.flatnonzero(upto)[trough_i]])


def trained_group_rate(ctx) -> tuple[str, float] | None:
    """``(key, rate)``: a learning rate logged for another parameter group than the one
    read as the run's rate (a key such as ``lr_group_1`` or ``learning_rate_pg2`` that the
    mapping left beside ``lr``), whose median is above ``tiny_lr``: the optimizer trains
    that group whatever the rate read shows, as a fine-tune with its backbone's group at lr
    0 on purpose does (the monitor and many loops log group 0 as ``lr``). The group with the
    largest median; ``None`` where no such rate is logged."""

    def compute():
        rates = []
        for key in ctx.run.mapping.get("lr", {}).get("ignored", ()):
            if GROUP_SUFFIX.match(key) and key in ctx.run.series:
                v = ctx.run.series[key].values
                v = v[np.isfinite(v)]
                if v.size:
                    rates.append((float(median(v)), key))
        rate, key = max(rates, default=(0.0, None))
        return (key, rate) if key is not None and rate > ctx.th.tiny_lr else None

    return ctx.memo("trained_group_rate", compute)


#: Words of a key that names a margin loss (a triplet or contrastive margin loss, a
#: hinge loss): exactly 0, with a zero gradient, whenever every example in the batch meets
#: its margin, as a converged metric-learning run does. ``margin`` counts only in the
#: loss's own key: beside it, it names a measurement (a logit margin, DPO's reward margin).
MARGIN_WORDS = frozenset({"triplet", "hinge", "margin"})
OBJECTIVE_MARGIN_WORDS = frozenset({"triplet", "hinge"})

#: The monitor's reading of a hinge in the loss tensor's autograd graph (1 at a check
#: that read one, 0 otherwise).
MARGIN_GRAPH_KEY = "model/margin_graph"


def margin_objective(run) -> str | None:
    """The key that names the run's loss a margin loss, or ``None``: the loss's own key
    with a word of :data:`MARGIN_WORDS`, another key with ``triplet`` or ``hinge``
    (``val_triplet_acc``), or the live monitor's ``model/margin_graph`` where it read a
    hinge (a clamp at 0 under the batch mean) in the loss's graph at every check."""
    for name, s in run.series.items():
        if name == MARGIN_GRAPH_KEY or s.key == MARGIN_GRAPH_KEY:
            continue
        w = set(words(s.key))
        if w & OBJECTIVE_MARGIN_WORDS or (name in ("loss", "eval_loss") and w & MARGIN_WORDS):
            return s.key
    graph = run.series.get(MARGIN_GRAPH_KEY)
    if graph is not None:
        v = np.asarray(graph.values)
        v = v[np.isfinite(v)]
        if v.size and bool(np.all(v == 1)):
            return graph.key
    return None


def trailing_zero_run(v: np.ndarray, min_points: int) -> tuple[int, float, float] | None:
    """``(onset, start, before)`` when the losses ``v`` (finite, shape ``(n,)``) end on at
    least ``min_points`` exact zeros after positive values: the index of the first zero of
    that run, and the medians of the first and of the last 3 positive values before it
    (three at each end: a fall fast enough to underflow crosses decades between logs, and
    five would reach into it; with fewer than 6 positives the last ones are those after the
    first 3, at least the last one: a cross-entropy that went 2.0, 0.067, 5e-8, 0.0 ended
    at 5e-8, not at the median of all three). ``None`` otherwise."""
    zero = v == 0
    if v.size < 2 or zero.all() or not zero[-1]:
        return None
    onset = int(np.flatnonzero(~zero)[-1]) + 1
    pos = v[:onset][v[:onset] > 0]
    if v.size - onset < min_points or not pos.size:
        return None
    tail = pos[max(pos.size - 3, min(3, pos.size - 1)) :]
    return onset, float(median(pos[:3])), float(median(tail))


#: How many positive losses the running level of :func:`zeros_continue_the_tail` spans.
TAIL_WINDOW = 9


def zeros_continue_the_tail(pos: np.ndarray, bar: float) -> bool:
    """Whether positive losses ``pos`` (shape ``(n,)``, in log order) run down toward 0: the
    10th percentile of each against the median of the :data:`TAIL_WINDOW` around it is at
    most ``bar`` (a margin loss's batch means; see ``thresholds.zero_margin_tail``). Too
    few positives for a running level: ``False``."""
    if pos.size < TAIL_WINDOW:
        return False
    level = window_medians(pos, TAIL_WINDOW)
    half = TAIL_WINDOW // 2
    ratio = pos[half : half + level.size] / level
    return float(quantile(ratio, 0.1)) <= bar  # np.percentile(ratio, 10)


def zero_loss_fitted(ctx) -> dict | None:
    """The train loss ends on at least ``zero_min_points`` exact zeros after positive
    values, the last of which (median of up to 3) are at most ``zero_fitted_abs`` and at
    most ``zero_fitted_share`` of its starting level (median of its first 3 positive points;
    a start itself at most ``zero_fitted_abs`` shows no ordinary level, so the fall is not
    asked) (``how`` ``"underflow"``), or zeros came and went before the trailing run, on at least
    ``zero_mixed_share`` of the points since the first, among positives whose median is
    under ``zero_mixed_level`` of that start (``"intermittent"``, ``before`` that median:
    batches every example fits exactly, a margin loss at its margin); and no gradient norm logged
    over the zeros is non-finite: a loss fitted to float precision, not zeroed by a bug (a
    hidden NaN, a masked batch). ``{"start", "before", "onset", "how"}`` (levels, the index
    of the first zero of the trailing run, the reading), or ``None``."""

    def compute():
        th = ctx.th
        s = ctx.finite("loss")
        v = s.values
        run = trailing_zero_run(v, th.zero_min_points)
        if run is None:
            return None
        onset, start, before = run
        zero = v == 0
        how = "underflow"
        # A log whose first positive losses already sit at float precision shows no ordinary
        # level the zeros could fall from: the fall from the start cannot be measured, and
        # a loss that small rounds to 0 by itself (an easy task fitted within its first
        # logging intervals).
        fell = before <= th.zero_fitted_share * start or start <= th.zero_fitted_abs
        if before > th.zero_fitted_abs or not fell:
            # Zeros that came and went before the trailing run, among positives far below
            # the start: batches that every example fits exactly (a hinge or triplet loss at
            # its margin, easy batches), not a bug that zeroes an ordinary loss
            # (TP-ZERO-LOSS-MIXED's zero_mixed_level).
            first = int(np.argmax(zero))
            mid = v[first:onset][v[first:onset] > 0]
            if first >= onset or not mid.size:
                return None
            # The start is the first positive loss when it stands higher than the median of
            # the first three: a margin loss on an easy task leaves its start within its
            # first logs (a triplet loss at 0.209, then 0.004 by its second step). Or the
            # positives among the zeros run down toward 0 (a margin loss's batch means).
            ref = max(start, float(v[v > 0][0]))
            if float(median(mid)) >= th.zero_mixed_level * ref and not zeros_continue_the_tail(
                mid, th.zero_margin_tail
            ):
                return None
            # ... on a real share of the batches: a margin met batch after batch, not three
            # stray masked batches in a thousand
            if float(np.mean(zero[first:onset])) < th.zero_mixed_share:
                return None
            how, before = "intermittent", float(median(mid))
        if ctx.has("grad_norm"):
            g = ctx.series("grad_norm")
            gv = g.values[g.steps >= s.steps[onset]]
            if not bool(np.all(np.isfinite(gv))):
                return None
        return {"start": start, "before": before, "onset": onset, "how": how}

    return ctx.memo("zero_loss_fitted", compute)


#: Words of a key that logs the weight of a term of the loss (KL annealing of a VAE, where
#: a ``beta`` climbs from 0 to 1 as training goes: Bowman et al. 2016), read by
#: :func:`objective_schedule`. A key with ``kl`` (or ``kld``) is a KL weight only with one of
#: :data:`KL_WEIGHT_WORDS`: ``kl`` alone is the KL term's value.
OBJECTIVE_WEIGHT_WORDS = frozenset({"beta", "anneal", "annealing", "smoothing"})
KL_WEIGHT_WORDS = frozenset(
    {"weight", "coef", "coeff", "coefficient", "scale", "beta", "lambda", "factor", "w", "warmup", "mult", "multiplier"}
)
#: Words of a key that names a penalty term added to the loss (``l2_weight``, ``reg_weight``,
#: ``lambda_reg``): a weight of the objective only beside one of :data:`KL_WEIGHT_WORDS`.
#: Label smoothing (``label_smoothing`` among :data:`OBJECTIVE_WEIGHT_WORDS`) raises the
#: floor of a cross-entropy as it climbs: at 0.4 over 10 classes the floor is 1.44 nats. A
#: ``weight_decay`` is no such weight: AdamW's decoupled decay is not part of the loss.
PENALTY_WORDS = frozenset({"reg", "l2", "penalty", "regularization", "regularisation", "regularizer"})
#: Words of a key that logs which data the loss is measured on: a curriculum's stage or
#: difficulty. Not a "phase" (a scheduler's warm-up/stable/decay phase says nothing of the
#: data).
STAGE_WORDS = frozenset({"stage", "curriculum", "difficulty"})
#: Words of a key that logs the size of the examples (``seq_len``, ``max_seq_length``,
#: ``context_length``, ``image_size``, ``resolution``): one of :data:`EXAMPLE_WORDS` with
#: one of :data:`SIZE_WORDS`, or ``resolution``. A size that grew after the best level,
#: with the loss falling again after it (:func:`_fell_after`), explains a rise: a loss
#: summed over each sequence grows with its length (128 -> 512 tokens: 1.67 -> 6.79), and
#: positions or scales the model never saw are harder at first. A loss that climbs on
#: after the size grew is a divergence (longer sequences destabilise training too).
EXAMPLE_WORDS = frozenset({"seq", "sequence", "context", "ctx", "block", "image", "img", "crop", "input"})
SIZE_WORDS = frozenset({"len", "length", "size", "res", "resolution"})
#: Words of a key that logs the noise a curriculum adds to the data (a denoiser's
#: ``sigma``, a ``noise_level``): a schedule only where it never falls (a learned noise
#: scale wobbles), read by :func:`objective_schedule`. Not a gradient's noise scale.
NOISE_WORDS = frozenset({"sigma", "noise"})
_MEASURED_NOISE_WORDS = frozenset({"grad", "gradient", "lr"})
#: Words of a key that logs a setting which moves the loss's level when it changes, in
#: either direction, while the model goes on learning, read by :func:`objective_schedule`:
#: a data mixture's weight (``data/mix_weight_code``: a mixture that moves to a harder
#: domain raises the loss), a temperature (``kd_temperature``: a distillation loss scales
#: with T^2 and its soft targets sharpen as T falls; a contrastive or Gumbel-softmax
#: temperature rescales the logits), a batch size or a count of negatives
#: (``global_batch_size``, ``num_negatives``, MoCo's ``queue_size``: an InfoNCE loss starts at ln of its negatives, so
#: a batch raised 256 -> 4096 lifts its level by ln 16 = 2.8 nats). Each counts only where
#: it moved ``objective_weight_rise`` times or more and the loss fell again after it
#: (:func:`_fell_after`): a divergence that happens to start there does not come down.
MIXTURE_WORDS = frozenset({"mix", "mixture", "proportion", "proportions"})
TEMPERATURE_WORDS = frozenset({"temperature", "temp", "tau"})
BATCH_WORDS = frozenset({"batch", "bs"})
NEGATIVES_WORDS = frozenset({"negatives", "queue"})
#: Words of a key that measures the machine, not the training (W&B's ``system/gpu.0.temp``):
#: never a setting of the objective.
_MACHINE_WORDS = frozenset({"system", "sys", "gpu", "cpu", "device", "mem", "memory", "power", "util", "disk"})
#: Words that make a stage key the optimizer's or the scheduler's, not the data's.
_SCHEDULE_WORDS = frozenset({"lr", "learning", "rate", "sched", "scheduler", "warmup", "optim", "optimizer"})
#: Series the schedule search never reads: the metrics the rules know by their canonical
#: names are measurements or the optimizer's own schedule, not the objective's.
_NOT_OBJECTIVE_SCHEDULES = frozenset({"loss", "eval_loss", "lr", "grad_norm", "epoch", "step_time"})


#: Words of a key that logs a VAE's reconstruction term, read by :func:`_implied_kl_weight`.
RECON_WORDS = frozenset({"recon", "reconstruction", "rec"})


def _implied_kl_weight(ctx, best_step: float) -> str | None:
    """A summed loss that logs its reconstruction and KL terms but not the KL's weight: the
    weight is ``(loss - reconstruction) / KL`` at the steps that log all three (an ELBO is
    the reconstruction plus beta times the KL). A weight that climbed ``objective_weight_rise``
    times after ``best_step`` (from at most a tenth of its final value where it starts near
    0) is KL annealing, as a logged beta is; a weight that holds (beta 1, or a beta-VAE's
    constant) explains nothing."""
    recon = kl = None
    for name, series in ctx.run.series.items():
        w = set(words(series.key or name))
        if recon is None and w & RECON_WORDS and not w & KL_WEIGHT_WORDS:
            recon = name
        elif kl is None and w & {"kl", "kld"} and not w & KL_WEIGHT_WORDS and not w & RECON_WORDS:
            kl = name
    if recon is None or kl is None:
        return None
    loss, r, k = ctx.finite("loss"), ctx.finite(recon), ctx.finite(kl)
    at = intersect1d(intersect1d(loss.steps, r.steps), k.steps)
    if at.size < 8:
        return None
    lv = loss.values[np.searchsorted(loss.steps, at)]
    rv = r.values[np.searchsorted(r.steps, at)]
    kv = k.values[np.searchsorted(k.steps, at)]
    ok = kv > 1e-6 * np.maximum(np.abs(lv), 1e-12)
    if np.count_nonzero(ok) < 8:
        return None
    weight, st = (lv[ok] - rv[ok]) / kv[ok], at[ok]
    before, after = weight[st <= best_step], weight[st > best_step]
    if not after.size or not before.size:
        return None
    ref, top = float(median(before[-3:])), float(median(after[-3:]))
    if not (top > 0 and (ref <= 0.1 * top or top >= ctx.th.objective_weight_rise * ref)):
        return None
    return (
        f"the KL term's weight, ({loss.key} - {r.key}) / {k.key}, climbed from {num(max(ref, 0.0))} at the best "
        f"level's step to {num(top)} at the end: the loss weighs its terms differently (KL annealing)"
    )


#: Words of a key that names a term added to the loss, whose weight (with one of
#: :data:`KL_WEIGHT_WORDS`: ``kl_weight``, ``aux_weight``, ``lambda_reg``) is a weight of
#: the objective: a KL term, an auxiliary head's loss, a penalty.
LOSS_TERM_WORDS = frozenset({"kl", "kld", "aux", "auxiliary"}) | PENALTY_WORDS
#: Words of a key that names a loss, or a term by the kind of loss it is, whose weight
#: (with one of :data:`LOSS_WEIGHT_WORDS`: ``loss_weight``, ``mse_weight``, ``lambda_ce``)
#: is a weight of the objective: a multi-task run that switches an unnormalised MSE term on
#: after its first logs, its weight logged as ``mse_weight``, blew up 1.1 -> 4,660 by design
#: (helper 93). Not with ``scale``: ``loss_scale`` is fp16's loss scaler, which the
#: optimizer divides out again.
LOSS_NAME_WORDS = frozenset({"loss", "losses"}) | LOSS_KIND_WORDS
LOSS_WEIGHT_WORDS = KL_WEIGHT_WORDS - {"scale", "warmup"}


def _schedule_kind(w: set) -> tuple[bool, bool, bool, bool]:
    """``(weight, size, stage, noise)``: whether a key of words ``w`` logs a loss-term
    weight (:data:`OBJECTIVE_WEIGHT_WORDS`, one of :data:`LOSS_TERM_WORDS` with one of
    :data:`KL_WEIGHT_WORDS`, or one of :data:`LOSS_NAME_WORDS` with one of
    :data:`LOSS_WEIGHT_WORDS`), an example size, a curriculum's stage (or a size) or a noise
    level added to the data (see :func:`objective_schedule`)."""
    weight = (
        bool(w & OBJECTIVE_WEIGHT_WORDS)
        or bool(w & LOSS_TERM_WORDS and w & KL_WEIGHT_WORDS)
        or bool(w & LOSS_NAME_WORDS and w & LOSS_WEIGHT_WORDS)
    )
    size = bool(w & EXAMPLE_WORDS and w & SIZE_WORDS) or "resolution" in w
    stage = (bool(w & STAGE_WORDS) or size) and not w & _SCHEDULE_WORDS
    noise = bool(w & NOISE_WORDS) and not w & _MEASURED_NOISE_WORDS
    return weight, size, stage, noise


def objective_moved_between(ctx, lo_step: float, hi_step: float) -> tuple[str, float] | None:
    """A logged schedule of the objective (:func:`_schedule_kind`: a loss-term weight, a
    stage, an example size, a noise level) whose value changed between its last log at or
    before ``lo_step`` and its first at or after ``hi_step`` (a weight, a size or a noise
    level by ``objective_weight_rise`` either way, or from 0; a stage to any other value):
    ``(a sentence, the most it can multiply the loss by)``, or ``None``. A loss that jumps
    where the objective it sums changed (an auxiliary head switched on, a curriculum's next
    stage) jumps by design. A weight that moved from a to b scales its term by b/a, and a
    loss summed over examples that grew from a to b grows by b/a at most: that ratio bounds
    the jump it explains; a term switched on from 0, a stage and a noise level bound
    nothing (a near-zero loss meets a new term, harder data)."""
    for name, series in ctx.run.series.items():
        if name in _NOT_OBJECTIVE_SCHEDULES:
            continue
        weight, size, stage, noise = _schedule_kind(set(words(series.key or name)))
        if not (weight or stage or noise):
            continue
        f = ctx.finite(name)
        i = np.flatnonzero(f.steps <= lo_step)
        j = np.flatnonzero(f.steps >= hi_step)
        if not i.size or not j.size:
            continue
        a, b = float(f.values[i[-1]]), float(f.values[j[0]])
        said = f"{series.key or name} went from {num(a)} to {num(b)} there"
        if stage and not (weight or noise or size):
            if a != b:
                return said, math.inf
            continue
        if (a == 0) != (b == 0):
            return said, math.inf
        r = max(a / b, b / a) if a * b > 0 else 1.0
        if r >= ctx.th.objective_weight_rise:
            return said, math.inf if noise and not (weight or size) else r
    return None


#: How far beyond the factor a loss-term weight climbed by a rise of the loss may go and still
#: be that weight's doing: a term weighted r times more adds at most r times what it added,
#: so the total rises at most r-fold, the term itself still being learned down; twice that
#: leaves room for a term that is not yet falling when its weight is raised. A weight 1 ->
#: 1.5 logged beside a loss that rose 800x (helper 94) explains none of it.
WEIGHT_RISE_SLACK = 2.0


def objective_schedule(ctx, best_step: float, rise: float | None = None) -> str | None:
    """A logged schedule of the objective that moved after ``best_step``: a loss-term
    weight (:data:`OBJECTIVE_WEIGHT_WORDS`, a KL weight) or a noise level that a
    curriculum adds to the data (:data:`NOISE_WORDS`, never falling over the run) that
    climbed at least ``objective_weight_rise`` times (or from 0), a stage
    (:data:`STAGE_WORDS`) that took another value, an example size (:data:`SIZE_WORDS`
    of :data:`EXAMPLE_WORDS`) that grew, or a data mixture's weight, a temperature, a batch
    size or a count of negatives (:data:`MIXTURE_WORDS`) that moved that factor either way
    with the loss falling again after it. ``rise`` (a ratio of levels): the climb of the loss
    to explain; a weight that climbed from ``a > 0`` to ``b`` explains one of at most
    ``WEIGHT_RISE_SLACK * b / a`` (from 0, any); ``None``: any climb."""
    for name, series in ctx.run.series.items():
        if name in _NOT_OBJECTIVE_SCHEDULES:
            continue
        w = set(words(series.key or name))
        weight, size, stage, noise = _schedule_kind(w)
        setting = _setting_words(w) is not None
        if setting and not (weight or stage or noise):
            moved = _moved_and_was_learned(ctx, ctx.finite(name), best_step)
            if moved:
                return f"{series.key or name} went from {moved}: the loss is measured under another setting"
            continue
        if not (weight or stage or noise):
            continue
        f = ctx.finite(name)
        before = np.flatnonzero(f.steps <= best_step)
        after = f.values[f.steps > best_step]
        if not after.size or not f.values.size:
            continue
        ref = float(f.values[before[-1]] if before.size else f.values[0])
        top = float(np.max(after))
        climbed = (ref > 0 and top >= ctx.th.objective_weight_rise * ref) or (ref == 0 and top > 0)
        if noise and not (weight or stage):
            set_by_code = bool(np.all(np.diff(f.values) >= 0))
            if set_by_code and climbed:
                return (
                    f"the noise level {series.key or name} climbed from {num(ref)} at the best level's step to "
                    f"{num(top)} after it, never falling: the loss is measured on noisier data"
                )
            continue
        if weight:
            if climbed and (rise is None or ref == 0 or rise <= WEIGHT_RISE_SLACK * top / ref):
                return (
                    f"the loss weight {series.key or name} climbed from {num(ref)} at the best level's step to "
                    f"{num(top)} after it: the loss weighs its terms differently"
                )
        elif _grew_and_was_learned(ctx, f, best_step, ref) if size else np.any(after != ref):
            later = float(after[np.flatnonzero(after != ref)[0]])
            return (
                f"{series.key or name} went from {num(ref)} at the best level's step to {num(later)} after it: "
                "the loss is measured on other data"
            )
    return (
        _added_loss_term(ctx, best_step)
        or _implied_kl_weight(ctx, best_step)
        or _reweighted_terms(ctx, best_step)
        or _every_term_fell(ctx, best_step)
    )


def _setting_move(ctx, f, best_step: float, grow_only: bool) -> tuple[float, float, float] | None:
    """``(value at best_step, first moved value, its step)`` where the setting ``f`` (a
    finite series) moved ``objective_weight_rise`` times or more after ``best_step`` from
    its value there (or its first value); up only with ``grow_only``; ``None`` otherwise."""
    if not f.values.size:
        return None
    before = np.flatnonzero(f.steps <= best_step)
    ref = float(f.values[before[-1]] if before.size else f.values[0])
    later = f.steps > best_step
    after, at = f.values[later], f.steps[later]
    rise = ctx.th.objective_weight_rise
    if ref > 0:
        moved = np.flatnonzero((after >= rise * ref) | ((after <= ref / rise) & (not grow_only)))
    elif ref == 0:
        moved = np.flatnonzero(after > 0)
    else:
        return None
    if not moved.size:
        return None
    i = int(moved[0])
    return ref, float(after[i]), float(at[i])


def _moved_and_was_learned(ctx, f, best_step: float) -> str | None:
    """Where the setting ``f`` (a finite series: a mixture weight, a temperature, a batch
    size) moved ``objective_weight_rise`` times or more, either way, from its value at
    ``best_step`` (or its first value) after it, and the train loss fell after the move
    (:func:`_fell_after`): "A at the best level's step to B at step S", or ``None``."""
    move = _setting_move(ctx, f, best_step, grow_only=False)
    if move is None or not _fell_after(ctx, move[2]):
        return None
    return f"{num(move[0])} at the best level's step to {num(move[1])} at step {num(move[2])}"


def _setting_words(w: set) -> str | None:
    """``"either"`` for a key naming a setting that moves the loss's level either way (a
    data mixture's weight, a temperature), ``"grow"`` for one whose growth raises it (a
    batch size or a count of negatives: an InfoNCE loss starts at ln of its negatives), or
    ``None``; never the optimizer's, the scheduler's or the machine's."""
    if w & (_SCHEDULE_WORDS | _MACHINE_WORDS):
        return None
    if w & (MIXTURE_WORDS | TEMPERATURE_WORDS):
        return "either"
    if w & NEGATIVES_WORDS or (w & BATCH_WORDS and (w & SIZE_WORDS or "bs" in w)):
        return "grow"
    return None


def setting_moved(ctx, best_step: float, moving_from: float) -> str | None:
    """A logged setting (:func:`_setting_words`) that moved ``objective_weight_rise`` times
    or more after ``best_step`` (a batch size or a count of negatives: grew) and was still
    moving from step ``moving_from`` to the end (its last value at least
    sqrt(``objective_weight_rise``) times, or that fraction of, its value there; grown for a
    batch size), whether or not the loss fell after it: "KEY went from A at the best
    level's step to B at step S", or ``None``. A climb that goes on while a setting goes on
    moving is explained by the setting as well as by a divergence; one that goes on after a
    setting changed once and held is not (the change moves the level once)."""
    step_rise = math.sqrt(ctx.th.objective_weight_rise)
    for name, series in ctx.run.series.items():
        if name in _NOT_OBJECTIVE_SCHEDULES:
            continue
        kind = _setting_words(set(words(series.key or name)))
        if kind is None:
            continue
        f = ctx.finite(name)
        move = _setting_move(ctx, f, best_step, grow_only=kind == "grow")
        if move is None:
            continue
        at = np.flatnonzero(f.steps <= moving_from)
        mid, last = float(f.values[at[-1] if at.size else 0]), float(f.values[-1])
        if not mid > 0 or not (last >= step_rise * mid or (kind == "either" and last <= mid / step_rise)):
            continue
        return (
            f"{series.key or name} went from {num(move[0])} at the best level's step to {num(move[1])} at step "
            f"{num(move[2])}"
        )
    return None


def _grew_and_was_learned(ctx, f, best_step: float, ref: float) -> bool:
    """Whether the example size ``f`` (a finite series) grew above ``ref`` after
    ``best_step`` and the train loss fell after it grew (:func:`_fell_after`)."""
    later = f.steps > best_step
    grew = np.flatnonzero(f.values[later] > ref)
    return bool(grew.size) and _fell_after(ctx, float(f.steps[later][grew[0]]))


def _fell_after(ctx, at_step: float) -> bool:
    """Whether the train loss fell after ``at_step`` (where the examples grew): the median of
    its last tenth (3 points at least) below the median of its first such share from that
    step on. Longer sequences or larger images raise the loss at first (positions or scales
    the model never saw, a loss summed over a longer sequence) and the model then learns
    them; a divergence that happens to start there does not come down."""
    loss = ctx.finite("loss")
    v = loss.values[loss.steps > at_step]
    k = max(3, v.size // 10)
    if v.size < 2 * k:
        return False
    return float(median(v[-k:])) < float(median(v[:k]))


def _loss_terms(ctx):
    """``(name, key, candidate)`` of each series beside the judged loss that the loss
    fallback reads as a loss (:func:`loss_candidate`: its candidate dict) on the train
    side (not an eval split), the canonical metrics (:data:`_NOT_OBJECTIVE_SCHEDULES`)
    left out: the terms a train loss can sum."""
    mapped = ctx.run.series["loss"].key if "loss" in ctx.run.series else None
    for name, series in ctx.run.series.items():
        key = series.key or name
        if name in _NOT_OBJECTIVE_SCHEDULES or key == mapped:
            continue
        c = loss_candidate(key)
        if c is not None and c["split"] != "eval":
            yield name, key, c


def _added_loss_term(ctx, best_step: float) -> str | None:
    """A term of the train loss that the log starts after ``best_step`` while the loss was
    logged before it: an auxiliary loss switched on mid-run (``loss_aux`` first logged at
    step 1,000) adds its value to the total, which jumps while the terms logged before go
    on falling. A key is a term when the loss fallback reads it as a train component
    (:func:`~trainproof.aliases.loss_fallback.loss_candidate`: ``loss_aux``,
    ``train/kl_loss``), never a total or a held-out loss."""
    loss = ctx.finite("loss")
    if not loss.steps.size:
        return None
    for name, key, c in _loss_terms(ctx):
        if c["total"]:
            continue
        f = ctx.finite(name)
        if f.steps.size and f.steps[0] > best_step and loss.steps[0] < f.steps[0]:
            return (
                f"the loss term {key} is first logged at step {num(float(f.steps[0]))}, after the best level's step "
                f"{num(best_step)}: the objective gained a term"
            )
    return None


def _train_terms(ctx):
    """``(key, finite series)`` of each logged term of the train loss that the term
    readings (:func:`_reweighted_terms`, :func:`_every_term_fell`) weigh: a train-side
    loss term (:func:`_loss_terms`) whose key does not name a held-out measurement, with
    at least 6 finite logs."""
    for name, key, _ in _loss_terms(ctx):
        if measured_held_out(key):
            continue
        f = ctx.finite(name)
        if f.steps.size >= 6:
            yield key, f


def has_train_terms(ctx) -> bool:
    """Whether the train loss is logged beside terms of its own (:func:`_train_terms`): an
    objective that sums several losses, whose total is no single cross-entropy."""
    return next(_train_terms(ctx), None) is not None


#: How closely a weighted sum of a loss's logged terms must reproduce the logged total
#: (root mean square of the relative residual) for :func:`_reweighted_terms` to read the
#: total as that sum: a total a loop computes from the terms it logs on the same record
#: matches to the logger's rounding (five significant digits: 1e-5); 1% leaves room for
#: three digits and for an unlogged term of a hundredth of the total, and no more.
REWEIGHT_FIT_TOLERANCE = 0.01
#: How far the total after the best step must stand from what the weights before it
#: predict, in units of :data:`REWEIGHT_FIT_TOLERANCE`: a fit that holds to 1% before and
#: after, and weights before that miss the total by 5% or more after, is a change of the
#: weights, not of the fit's error.
REWEIGHT_MISS_FACTOR = 5.0


def _term_weights(total: np.ndarray, terms: np.ndarray) -> tuple[np.ndarray, float] | None:
    """``(weights, relative RMS residual)`` of the least-squares fit ``total ~ terms @
    weights`` (``total`` shape ``(n,)``, ``terms`` shape ``(n, k)``, ``n > k``), or ``None``
    where a weight is negative beyond rounding (a loss adds its terms; a negative weight is
    a fit of something else), the total is not positive, or the terms do not determine the
    weights (a term at 0 throughout, two terms in proportion: a hinge penalty at 0 until
    the model gets worse on it has no weight to read)."""
    if np.any(total <= 0):
        return None
    lstsq = np.linalg.lstsq(terms, total, rcond=None)
    if lstsq[2] < terms.shape[1]:
        return None
    w = lstsq[0]
    if np.any(w < -1e-6 * np.max(np.abs(w))):
        return None
    res = (terms @ w - total) / total
    return w, float(np.sqrt(np.mean(res * res)))


def _reweighted_terms(ctx, best_step: float) -> str | None:
    """The train loss a weighted sum of two or more of its logged terms (keys the loss
    fallback reads as a loss, :func:`loss_candidate`, other than the mapped one and not
    held-out: ``teacher_loss``, ``human_loss``, ``ce_loss``) up to ``best_step`` and, with
    other weights, from the first point after it that the weights before miss by
    :data:`REWEIGHT_MISS_FACTOR` times :data:`REWEIGHT_FIT_TOLERANCE` to the end (each fit to
    that tolerance, and most of those points missed by the weights before): a distillation
    that moves its weight from the teacher's term to the labels' (0.7/0.3 to 0.3/0.7) raises
    the total in one step while the model trades one term for the other. A divergence raises
    the terms, and the weights before predict the total as before. At least one more point than terms on each side (a fit with as many
    points as weights is exact and shows nothing; the weights before read from at least two
    more points than terms; the log where they moved may hold both weightings). And not
    every term worse at the end (median of its last 3 logs) than just before the move by
    that 5%, nor the total's last 3 logs above its first 3 under the new weights by as much:
    a reweighting trades the terms off (a real distillation's teacher term rose 2.41 ->
    3.11 as its labels' term fell 6.36 -> 5.56); a run whose every term climbs, or whose
    new total climbs, has diverged under its new weights."""
    loss = ctx.finite("loss")
    if loss.steps.size < 6 or np.unique(loss.steps).size != loss.steps.size:
        return None
    terms = []  # (key, finite series) of each term
    at = loss.steps
    # a term named by its kind (``ce_loss``) reads as a total; another total beside the
    # mapped loss fits with the same weight on both sides and explains nothing
    for key, f in _train_terms(ctx):
        if np.unique(f.steps).size != f.steps.size:
            continue
        terms.append((key, f))
        at = intersect1d(at, f.steps)
    if len(terms) < 2:
        return None
    total = loss.values[np.searchsorted(loss.steps, at)]
    x = np.column_stack([f.values[np.searchsorted(f.steps, at)] for _, f in terms])
    k = len(terms)
    # the weights up to the best step, read from at least k + 2 points (a best step at the
    # first point asks whether the weights moved anywhere in the run)
    before = np.arange(at.size) < max(int(np.count_nonzero(at <= best_step)), k + 2)
    if at.size - before.sum() <= k:
        return None
    fit_b = _term_weights(total[before], x[before])
    if fit_b is None or fit_b[1] > REWEIGHT_FIT_TOLERANCE:
        return None
    # the weights moved at the first point after the best step that the weights before
    # miss: from there on the total is another weighted sum of the same terms
    bar = REWEIGHT_MISS_FACTOR * REWEIGHT_FIT_TOLERANCE
    missed = np.abs(np.log(total / np.maximum(x @ fit_b[0], 1e-300))) >= bar
    first = np.flatnonzero(missed & ~before)
    if not first.size:
        return None
    # the first missed log can hold both weightings (a switch inside a logging interval):
    # the weights after are read from it or from the next log on
    for start in (int(first[0]), int(first[0]) + 1):
        after = np.arange(at.size) >= start
        if after.sum() <= k:
            return None
        fit_a = _term_weights(total[after], x[after])
        if fit_a is not None and fit_a[1] <= REWEIGHT_FIT_TOLERANCE and np.mean(missed[after]) >= 0.5:
            break
    else:
        return None
    # the weights explain the total's move only where the run trades its terms off (a
    # reweighting moves the model toward the up-weighted term: one term falls while another
    # may rise) and the total under the new weights does not climb: every term worse, or
    # the new total rising, is a divergence under the new weights
    rose = [float(median(x[after, j][-3:])) > float(median(x[before, j][-3:])) * (1 + bar) for j in range(k)]
    new_total = total[after]
    if all(rose) or float(median(new_total[-3:])) > float(median(new_total[:3])) * (1 + bar):
        return None
    names = ", ".join(key for key, _ in terms)
    wb = "/".join(num(float(v)) for v in fit_b[0])
    wa = "/".join(num(float(v)) for v in fit_a[0])
    return (
        f"the loss is a weighted sum of its logged terms {names} with weights {wb} up to the best level's step and "
        f"{wa} from step {num(float(at[start]))} (each fit within {num(100 * REWEIGHT_FIT_TOLERANCE)}%): the loss weighs its "
        "terms differently"
    )


#: How far the train loss may outgrow the plain sum of its logged terms between the best
#: step and the end (their ratio, against the larger of its value at the best step and 1)
#: for :func:`_every_term_fell` to read the climb as the terms' weights: a weight ramped
#: from 0 to 1 takes the total to at most the sum; 1.2 leaves room for an unlogged
#: regulariser of a fifth of the logged terms and no more (a new user's divergence by an
#: unlogged auxiliary term took the total to 2.4 times the logged terms' sum).
TERM_SUM_SLACK = 1.2


def _every_term_fell(ctx, best_step: float) -> str | None:
    """Two or more logged terms of the train loss (as :func:`_reweighted_terms` reads them:
    ``ce_loss``, ``mse_loss``, never a held-out loss), each with at least 6 finite logs and
    logs after ``best_step``, every one of which ends (median of its last tenth, 3 logs at
    least) below its level at ``best_step`` (median of its last 3 logs up to it, or of its
    first 3), while the total outgrows their plain sum by no more than
    :data:`TERM_SUM_SLACK`: "KEY A -> B, …", or ``None``. A total that climbs while every
    term it adds falls climbs by its weights (a weight ramped up over many steps, which no
    single reweighting fits), not by the model: a divergence makes the terms themselves
    worse, or a term the log does not show."""
    loss = ctx.finite("loss")
    if not loss.steps.size:
        return None
    # a term must be logged into the loss's last tenth: terms that stopped being logged
    # before the climb say nothing of it
    end_from = float(loss.steps[-max(3, loss.steps.size // 10)]) if loss.steps.size >= 3 else float(loss.steps[0])
    fell = []
    refs, ends = 0.0, 0.0
    for key, f in _train_terms(ctx):
        if not np.any(f.steps > best_step) or f.steps[-1] < end_from:
            continue
        upto = f.values[f.steps <= best_step]
        ref = float(median(upto[-3:] if upto.size else f.values[:3]))
        k = max(3, f.values.size // 10)
        end = float(median(f.values[-k:]))
        if not end < ref:
            return None
        fell.append(f"{key} {num(ref)} -> {num(end)}")
        refs, ends = refs + abs(ref), ends + abs(end)
    if len(fell) < 2 or not ends > 0:
        return None
    # the terms must account for the total at the end as they did at the best step: the
    # total over their plain sum no higher than it was there (or than 1, a weight ramped up
    # to 1) by TERM_SUM_SLACK. A total that outgrows its logged terms climbs by a term the
    # log does not show (an auxiliary loss exploding, a student's loss beside a teacher's
    # terms): a divergence still.
    upto = loss.values[loss.steps <= best_step]
    total_ref = float(median(upto[-3:] if upto.size else loss.values[:3]))
    total_end = float(median(loss.values[-max(3, loss.values.size // 10) :]))
    share_ref = total_ref / refs if refs > 0 else 0.0
    if total_end / ends > TERM_SUM_SLACK * max(1.0, share_ref):
        return None
    return (
        f"every logged term of the loss ends below its level at the best level's step ({', '.join(fell)}): "
        "the total climbed by the weights of its terms, not by the model"
    )


#: The monitor's per-check records the dead-run judgement and the live stops read: the
#: largest per-tensor update/weight ratio (log10), and the tensors whose gradients were
#: cleared between backward() and step().
LAYER_UPDATE_RATIO_KEY = "model/layer_update_ratio_max"
CLEARED_KEY = "model/grads_cleared_before_step"
#: The probes' counts of trainable tensors with a gradient in no param group of the
#: optimizer, and of those in it that did not change across a step.
OUTSIDE_KEY = "model/params_outside_optimizer"
NOT_UPDATED_KEY = "model/params_not_updated"
#: The probes' count of optimizer steps taken so far.
OPTIMIZER_STEPS_KEY = "model/optimizer_steps"


def trainable_tensors(run) -> int | None:
    """The number of parameter tensors that require grad, as the live path recorded it in
    the meta of ``run`` (a :class:`~trainproof.runlog.RunLog`): its ``trainable_tensors``,
    or the probe's ``model_probe`` details; ``None`` when not known."""
    for holder in (run.meta, run.meta.get("model_probe")):
        if isinstance(holder, dict):
            n = holder.get("trainable_tensors")
            if isinstance(n, (int, float)) and not isinstance(n, bool) and n > 0:
                return int(n)
    return None


def _runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, lengths)`` of the runs of True in ``mask`` (shape ``(n,)``)."""
    d = np.diff(np.r_[0, mask.astype(np.int8), 0])
    starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
    return starts, ends - starts


def nan_eval_onset(bad: np.ndarray) -> int | None:
    """The index of the first non-finite evaluation that is a measurement, or ``None``
    when every non-finite value of the eval loss (``bad``, shape ``(n,)``, True where
    non-finite) stands for a row with no evaluation.

    A loop that writes its eval loss on every row writes a placeholder (``NaN``, ``"nan"``)
    where it did not evaluate: before its first evaluation, and between evaluations at
    their cadence (49 rows of NaN, one evaluation, 49 of NaN…). Those are no
    measurements: values before the first finite one, followed by finite values to the
    end, and gaps between finite evaluations that are all about one length (at most
    ``PLACEHOLDER_GAP_SLACK`` x their median, itself at least 2 rows, the finite runs
    between them no longer than it), with the log ending less than one such gap after the
    last finite evaluation. A non-finite stretch longer than the cadence (evaluations that
    turned NaN) is measured from its start; a log with no cadence to read (an evaluation
    on every row, or only non-finite values) is measured from its first non-finite value,
    as before."""
    fin = np.flatnonzero(~bad)
    first_bad = int(np.flatnonzero(bad)[0])
    if not fin.size:
        return first_bad
    first, last = int(fin[0]), int(fin[-1])
    trail = bad.size - 1 - last
    g_starts, gaps = _runs(bad[first : last + 1])
    if not gaps.size and not trail:
        # placeholders before the first evaluation, finite ever since; one non-finite
        # value first is the first evaluation's (an eval-only series' own)
        return None if first >= 2 else first_bad
    seen = [*gaps.tolist(), *([first] if first else [])]
    if not seen:
        return first_bad
    c = float(median(seen))
    _, fin_runs = _runs(~bad[first : last + 1])
    if c < 2 or float(median(fin_runs)) > c:
        return first_bad  # no cadence of placeholders: every non-finite value counts
    bar = PLACEHOLDER_GAP_SLACK * c + 1
    long = np.flatnonzero(gaps > bar)
    if long.size:
        return first + int(g_starts[long[0]])
    return last + 1 if trail > bar else None


#: How much longer than the median gap between finite evaluations a gap of placeholders
#: may be (an evaluation every N rows leaves N - 1 placeholders; a last partial epoch or
#: an evaluation skipped at a resume one and a half times that), before the stretch is
#: evaluations that turned non-finite.
PLACEHOLDER_GAP_SLACK = 1.5


#: Words of a key that measures on held-out data (an eval or validation accuracy).
HELD_OUT_WORDS = frozenset({"val", "valid", "validation", "eval", "test", "dev"})


def measured_held_out(key: str) -> bool:
    """Whether a logged key names held-out data (:data:`HELD_OUT_WORDS`)."""
    return bool(HELD_OUT_WORDS & set(words(key)))
