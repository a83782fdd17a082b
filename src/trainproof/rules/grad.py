"""Rules on the gradient norm: non-finite norms, skipped overflow steps, zero gradients, spikes."""

from __future__ import annotations

import math

import numpy as np

from .._arrays import quantile
from ..findings import Level
from ._fmt import num, step, times
from ._shared import margin_objective, objective_schedule, zero_loss_fitted
from ._stats import (
    block_medians,
    common_steps,
    improvement,
    median,
    rounding_step,
    runs_of,
    window_medians,
    window_medians_at,
)
from .registry import Need, rule


def _nonfinite_runs(ctx):
    """Runs of consecutive non-finite gradient norms, split into sustained (never followed
    by a finite norm: it lasts to the end of the log) and recovered/isolated."""
    return ctx.memo("nonfinite_grad_runs", lambda: _split_nonfinite_runs(ctx))


def _split_nonfinite_runs(ctx):
    g = ctx.series("grad_norm")
    bad = ~np.isfinite(g.values)
    runs = runs_of(bad)
    n = len(g)
    sustained, isolated = [], []
    for start, length in runs:
        to_end = start + length == n
        if (to_end and length >= ctx.th.nan_grad_sustained_points) or length == n:
            sustained.append((start, length))
        else:
            isolated.append((start, length))
    return g, bad, sustained, isolated


@rule(
    "TP-NAN-GRAD",
    Level.FAIL,
    "nan",
    "the gradient norm is non-finite on a sustained run of steps",
    needs=[Need("grad_norm", 1, finite=False)],
    thresholds=["nan_grad_sustained_points"],
    least_evidence="The last {nan_grad_sustained_points} or more logged norms non-finite with no finite norm after them (a loss scaler skipping steps recovers).",
    detects="Gradient norms that are NaN or Inf on the last {nan_grad_sustained_points} or more logged points (never followed by a finite norm again), or on every logged point.",
    why="A loss scaler skips an overflowing step, lowers its scale and recovers, sometimes after several skips in a row; a norm that never becomes finite again means the weights or the loss are already NaN, whatever the logged loss says.",
    not_mean="Non-finite norms followed by finite ones, however many in a row, are the mixed-precision loss scaler at work (TP-GRAD-OVERFLOW-SKIPPED): NaN weights never give a finite norm again.",
    causes="NaN weights after an overflow, a learning rate far too high, fp16 without a loss scaler, a custom loss that produces NaN on some batches.",
    try_="Resume from the last checkpoint before the first non-finite norm with a lower learning rate, gradient clipping, and bf16 or a GradScaler.",
)
def check_nan_grad(ctx):
    g, bad, sustained, _ = _nonfinite_runs(ctx)
    if not sustained:
        return
    start, length = sustained[0]
    total = int(bad.sum())
    to_end = start + length == len(g)
    yield ctx.finding(
        f"gradient norm is non-finite from step {step(g.steps[start])}"
        + (" to the end of the log" if to_end else f" for {length} logged points"),
        f"{total} of {len(g)} logged gradient norms are NaN/Inf; the first sustained run starts at step "
        f"{step(g.steps[start])} (line {int(g.lines[start])}) and lasts {length} points"
        + (", every later entry is non-finite." if to_end else f", until step {step(g.steps[start + length - 1])}."),
        {"first_step": g.steps[start], "run_length": length, "nonfinite": total, "points": len(g), "to_end": to_end},
        step=g.steps[start],
        line=g.lines[start],
    )


@rule(
    "TP-GRAD-OVERFLOW-SKIPPED",
    Level.WARN,
    "nan",
    "isolated non-finite gradient norms (loss scaler skipped steps)",
    needs=[Need("grad_norm", 1, finite=False)],
    thresholds=["nan_grad_sustained_points"],
    detects="Non-finite gradient norms followed by finite ones again (or fewer than {nan_grad_sustained_points} at the very end of the log), when no sustained run exists.",
    why="With fp16 a loss scaler skips the optimizer step when gradients overflow and lowers its scale; a few of these are normal, many mean the scale keeps collapsing.",
    not_mean="It does not mean the run is broken; losses and norms around these steps are finite.",
    causes="fp16 mixed precision with a dynamic loss scaler meeting an overflowing batch; a spike in the loss; without a scaler, gradients so large that their norm overflows its float format (clipping by that infinite norm zeroes the update).",
    try_="Nothing if it is rare; if it recurs, use bf16, clip gradients, or lower the learning rate.",
)
def check_overflow_skipped(ctx):
    g, bad, sustained, isolated = _nonfinite_runs(ctx)
    if sustained or not isolated:
        return
    first = isolated[0][0]
    total = int(bad.sum())
    steps = [step(g.steps[s]) for s, _ in isolated[:5]]
    # A short run at the very end has no finite norm after it yet: it may be the start of
    # a sustained run, so the evidence says so rather than calling it recovered.
    at_end = isolated[-1][0] + isolated[-1][1] == len(g)
    recovered = len(isolated) - int(at_end)
    tail = f"; the last {isolated[-1][1]} at the end of the log, not yet followed by a finite norm" if at_end else ""
    # Only norms that came back finite say their steps were skipped; one at the end of the
    # log says nothing yet of why (a run with no scaler whose loss became NaN). A logged
    # loss scale names the scaler; without one the log cannot tell a scaler's skipped steps
    # (HF Trainer's fp16 logs no scale) from an fp32 norm whose sum of squares overflowed
    # while the gradients stayed finite (clipping by an infinite norm zeroes the update).
    if not recovered:
        why = "at the end of the log, not yet followed by a finite norm"
    elif ctx.has("loss_scale") and ctx.finite("loss_scale").values.size:
        why = "the loss scaler skipped steps"
    else:
        why = "finite again after them (steps a mixed-precision loss scaler skipped, or a norm too large for its float format)"
    yield ctx.finding(
        f"{total} isolated non-finite gradient norm(s): {why}",
        f"{total} of {len(g)} logged gradient norms are NaN/Inf, in {len(isolated)} run(s) of fewer than "
        f"{ctx.th.nan_grad_sustained_points} points (steps {', '.join(steps)}"
        + (" …" if len(isolated) > 5 else "")
        + f"); {recovered} followed by finite norms{tail}.",
        {"nonfinite": total, "points": len(g), "runs": len(isolated), "first_step": g.steps[first], "at_end": at_end},
        step=g.steps[first],
        line=g.lines[first],
    )


@rule(
    "TP-ZERO-GRAD",
    Level.FAIL,
    "zero",
    "every gradient norm is exactly 0.0 and the loss did not improve",
    needs=[Need("grad_norm", "zero_min_points"), Need("loss", 2)],
    thresholds=["zero_min_points", "dead_window", "dead_min_improvement"],
    implies=(
        "TP-DEAD-RUN",
        "TP-FLAT",
        "TP-LOSS-STALLED",
        "TP-CHANCE-LEVEL",
        "TP-NEAR-CHANCE",
        "TP-VANISHING-GRAD",
        "TP-LOSS-FROZEN",
    ),
    least_evidence="Every one of at least {zero_min_points} finite norms exactly 0.0, and the loss read over 10% windows (at least {dead_window} points each) not improving by {dead_min_improvement:.0%}.",
    detects="Every finite gradient norm (at least {zero_min_points}) is exactly 0.0 while the loss did not improve by {dead_min_improvement:.0%} (median of the first vs the last 10% of the loss points, at least {dead_window} points each: a wider window than {dead_window} points keeps step-to-step noise on a frozen model from passing for learning).",
    why="With zero gradients the optimizer cannot change the weights: every step is wasted.",
    not_mean="It does not fire on small but non-zero norms (those are TP-VANISHING-GRAD territory), nor when the loss improved (a logger that reports 0 for a norm it did not compute).",
    causes="Every parameter frozen (requires_grad=False), the graph severed (detach, no_grad, a .item() in the loss), every label masked so the loss is a constant.",
    try_="Count the parameters with requires_grad=True, check the loss has a grad_fn, and that labels are not all ignored.",
)
def check_zero_grad(ctx):
    g = ctx.finite("grad_norm")
    if not np.all(g.values == 0):
        return
    loss = ctx.finite("loss")
    n = loss.values.size
    w = min(max(ctx.th.dead_window, n // 10), max(1, n // 2))
    first, last, rel = improvement(loss.values, w)
    if rel >= ctx.th.dead_min_improvement:
        return
    yield ctx.finding(
        "gradient norm is exactly 0.0 at every logged step",
        f"all {len(g)} finite gradient norms are exactly 0.0 (steps {step(g.steps[0])}–{step(g.steps[-1])}); "
        f"the loss went from {num(first)} to {num(last)} (median of {w} points at each end).",
        {"points": len(g), "loss_first": first, "loss_last": last},
        step=g.steps[0],
        line=g.lines[0],
    )


def _norm_rounded_away(before: np.ndarray, share: float) -> bool:
    """Whether a gradient norm that ends on exact zeros was rounded to 0 by its logger
    after it vanished: its values ``before`` the zeros (shape ``(n,)``) are whole multiples
    of a decimal step (:func:`~trainproof.rules._stats.rounding_step`), the last of them is
    at most 2 such steps and at most ``share`` of its start (the largest of the first 3): a
    full-batch fit whose gradient shrank to 1e-06 and then printed as 0.0 at 6 decimals,
    not a graph cut at an ordinary norm."""
    pos = before[before > 0]
    step_ = rounding_step(before)
    if step_ is None or pos.size < 3:
        return False
    return float(pos[-1]) <= 2 * step_ * (1 + 1e-9) and float(pos[-1]) <= share * float(np.max(pos[:3]))


@rule(
    "TP-ZERO-GRAD-ONSET",
    Level.FAIL,
    "zero",
    "the gradient norm was positive, then exactly 0.0 to the end, and the loss stopped moving",
    needs=[Need("grad_norm", "zero_min_points"), Need("loss", 2)],
    thresholds=["zero_min_points", "dead_window", "dead_min_improvement", "zero_fitted_share", "frozen_grad_share"],
    implies=(
        "TP-DEAD-RUN",
        "TP-FLAT",
        "TP-LOSS-STALLED",
        "TP-NEAR-CHANCE",
        "TP-VANISHING-GRAD",
        "TP-PLATEAU",
        "TP-LOSS-FROZEN",
    ),
    least_evidence="At least {zero_min_points} trailing norms exactly 0.0 after positive ones, and the loss over that stretch not improving by {dead_min_improvement:.0%}.",
    detects="The gradient norm is positive earlier in the run and exactly 0.0 at every one of its last {zero_min_points} or more finite points, while the loss logged over that stretch did not improve by {dead_min_improvement:.0%} (median of its first vs its last points there, at least {dead_window} each when it has them).",
    why="From the first zero on the optimizer cannot change the weights: the rest of the run is wasted, and a run that learned first and froze later hides it from rules that read the whole run.",
    not_mean="It does not fire on small but non-zero norms, nor when the loss keeps improving over the zero stretch (a logger that stopped computing the norm), nor on a margin loss (a key naming triplet, hinge or margin) that is exactly 0 over the stretch: every example meets its margin; nor on a loss fitted to float precision (TP-ZERO-LOSS-FITTED's, last positive values at {zero_fitted_share:g} of the start or below) that is exactly 0 over it; nor on a norm its logger rounded to 0 after it vanished (written at a fixed number of decimals, its last value before the zeros at most 2 of those steps and at most {frozen_grad_share:g} of its start: a full-batch fit converged).",
    causes="Parameters frozen partway (a callback that sets requires_grad=False, an unfreezing schedule run backwards), the graph severed after a code path changes (a detach on a later epoch), every label masked from some batch on.",
    try_="Look at what changed at the onset step (callbacks, schedule, data); count the parameters with requires_grad=True and check the loss has a grad_fn after it.",
)
def check_zero_grad_onset(ctx):
    th = ctx.th
    g = ctx.finite("grad_norm")
    zero = g.values == 0
    if zero.all() or not zero[-1] or not np.any(g.values > 0):
        return
    start = int(np.flatnonzero(~zero)[-1]) + 1
    if g.values.size - start < th.zero_min_points:
        return
    if _norm_rounded_away(g.values[:start], th.frozen_grad_share):
        return
    onset = float(g.steps[start])
    loss = ctx.finite("loss")
    tail = loss.values[loss.steps >= onset]
    if tail.size < 2:
        return
    if np.all(tail == 0) and (margin_objective(ctx.run) or zero_loss_fitted(ctx) is not None):
        # a margin loss at 0 has no gradient (every example meets its margin), nor has a
        # loss fitted to float precision (TP-ZERO-LOSS-FITTED's)
        return
    w = min(max(th.dead_window, tail.size // 10), max(1, tail.size // 2))
    first, last, rel = improvement(tail, w)
    if rel >= th.dead_min_improvement:
        return
    yield ctx.finding(
        f"gradient norm is exactly 0.0 from step {step(onset)} to the end",
        f"the last {g.values.size - start} of {len(g)} finite gradient norms are exactly 0.0, from step {step(onset)} "
        f"(line {int(g.lines[start])}); before that the norm was {num(g.values[start - 1])}. Over those steps the "
        f"loss went from {num(first)} to {num(last)} (medians of {w} points at each end).",
        {"onset_step": onset, "zero_points": int(g.values.size - start), "loss_first": first, "loss_last": last},
        step=onset,
        line=g.lines[start],
    )


#: Logged gradient norms around a norm whose median is its local level (TP-GRAD-SPIKE): a
#: norm that falls as the model fits (a regression's gradient shrinks with its residual,
#: 20x over a run) or rises as the learning rate decays is its own level, while a burst of
#: up to 10 high norms in a row leaves the median of 21 at the level around it.
GRAD_SPIKE_WINDOW = 21


def grad_level_around(norms: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The level each gradient norm ``norms[at]`` is compared with (``norms`` shape
    ``(n,)``, finite, the first logged norm included; ``at`` int indices, none 0): the
    largest of the run's median (the first norm left out), the median of the
    :data:`GRAD_SPIKE_WINDOW` logged norms centred on it (the first and last full window at
    the ends; not used when the run is shorter than a window) and the norm logged just
    before it. A spike is a jump: a norm that climbs over several logs, as it does while
    the loss leaves its first plateau (0.6, 1.4, 3.4, 4.3 over four logs of an HF
    classifier), is no spike even where the norms after it fall 20x. Only the windows of
    ``at`` are sorted: a spike is above the run's median anyway, so the caller asks for
    the few norms above it, never for a window per point of a long run."""
    med = float(median(norms[1:]))
    n = norms.size
    level = np.maximum(med, norms[at - 1]) if at.size else np.full(0, med)
    if n >= GRAD_SPIKE_WINDOW and at.size:
        starts = np.clip(at - GRAD_SPIKE_WINDOW // 2, 0, n - GRAD_SPIKE_WINDOW)
        # in slices, so that a run with many norms above its median sorts a bounded block
        for i in range(0, at.size, _LEVEL_BLOCK):
            part = slice(i, i + _LEVEL_BLOCK)
            level[part] = np.maximum(level[part], window_medians_at(norms, GRAD_SPIKE_WINDOW, starts[part]))
    return level


#: Windows sorted at once by :func:`grad_level_around` (65,536 windows of 21 float64: 11 MB).
_LEVEL_BLOCK = 1 << 16


@rule(
    "TP-GRAD-SPIKE",
    Level.WARN,
    "spike",
    "a gradient norm more than {grad_spike_factor:g}x the level around it",
    needs=[Need("grad_norm", "min_value_points")],
    thresholds=["grad_spike_factor", "min_value_points"],
    detects="Finite gradient norms above {grad_spike_factor:g}x the level around them: the largest of the run's median norm, the lower quartile of its first tenth of norms, at least 10 (the scale the run trained at: a hard batch late in a run fitted near its floor gives back a norm its early steps had), the median of the 21 logged norms centred on each and the norm logged just before it (a norm high where the run's norm is high, early in a falling norm or late in a rising one, is its own level, and a norm that climbs over several logs is no jump). The first logged norm is ignored.",
    why="A spike is one step that moved the weights far more than the others; repeated spikes often precede divergence.",
    not_mean="It does not mean the run diverged: the loss may absorb a spike (gradient clipping caps the update). The first logged norm is ignored because large norms at the start are normal.",
    causes="An outlier batch (very long sequence, corrupt sample), a learning rate near the edge of stability, no gradient clipping.",
    try_="Enable gradient clipping (max_grad_norm 1.0), inspect the batches at the spike steps, and lower the learning rate if spikes recur.",
)
def check_grad_spike(ctx):
    g = ctx.finite("grad_norm")
    if len(g) < 2:
        return
    vals, steps, lines = g.values[1:], g.steps[1:], g.lines[1:]
    med = float(median(vals))
    if med <= 0:
        return
    factor = ctx.th.grad_spike_factor
    above = np.flatnonzero(vals > factor * med)
    # The scale the run trained at: the lower quartile of its first tenth (at least 10
    # norms, after the first; a quartile, so that a burst of spikes there is not its own
    # scale). A hard batch late in a run near its floor gives back a norm its early steps
    # had (a new user's healthy MLPs, fitted to a loss of 0.003, logged single norms of
    # 1.2 against a level of 0.06, under their early 0.55): no spike.
    early = float(quantile(vals[: max(10, vals.size // 10)], 0.25))
    levels = np.maximum(grad_level_around(g.values, above + 1), early)
    hit = vals[above] > factor * levels
    if not hit.any():
        return
    spikes, level_of = above[hit], levels[hit]
    k = int(np.argmax(vals[spikes] / level_of))
    i, count, lvl = int(spikes[k]), int(spikes.size), float(level_of[k])
    yield ctx.finding(
        f"gradient norm spikes to {num(vals[i])} at step {step(steps[i])} ({times(vals[i] / lvl, 0)} the level "
        "around it)",
        f"{count} logged gradient norm(s) exceed {num(ctx.th.grad_spike_factor)}x the level around them (the largest "
        f"of the run's median {num(med)}, the median of the {GRAD_SPIKE_WINDOW} norms centred on each and the norm "
        f"logged before it); the "
        f"largest is {num(vals[i])} at step {step(steps[i])} (line {int(lines[i])}), against {num(lvl)}.",
        {
            "count": count,
            "max": vals[i],
            "max_step": steps[i],
            "median": med,
            "level": lvl,
            "factor": ctx.th.grad_spike_factor,
        },
        step=steps[i],
        line=lines[i],
    )


#: Blocks the gradient norm's level is read in by :func:`grad_norm_jump` (after its first tenth).
GRAD_JUMP_BLOCKS = 50


def _norm_blocks(steps: np.ndarray, values: np.ndarray):
    """A gradient norm read as levels: ``(ok, v, st, start, block, meds)``, the mask of its
    positive finite values, those values and their steps (shape ``(n,)``), the first tenth
    left out (``start`` points: a norm falls fast from the initialisation), the block size
    of :data:`GRAD_JUMP_BLOCKS` blocks over the rest and the medians of the log of the norm
    per block; ``None`` under 20 usable points."""
    ok = np.isfinite(values) & (values > 0)
    v, st = values[ok], steps[ok]
    n = v.size
    if n < 20:
        return None
    start = n // 10
    block = max(1, (n - start) // GRAD_JUMP_BLOCKS)
    meds, _ = block_medians(np.log(v[start:]), block)
    return ok, v, st, start, block, meds


def grad_norm_jump(steps: np.ndarray, values: np.ndarray, ratio: float) -> dict | None:
    """The largest held jump of a gradient norm's level, when it is ``ratio`` or more.

    ``steps`` / ``values``: the norm's steps and values, shape ``(n,)`` (non-finite and
    non-positive values are left out). The first tenth of the points is left out (a norm
    falls fast from the initialisation); the rest is read as medians of the log of the norm
    over :data:`GRAD_JUMP_BLOCKS` blocks (medians: robust to spikes). The jump is at the
    block boundary where the mean of the blocks after it stands above the mean of those
    before by the most, weighted by sqrt(blocks before x blocks after) (the change-point
    statistic of a step in the mean, highest at the step's own boundary); it counts when
    the gap between the medians of the blocks after and before is at least ``ratio``,
    every block after it is at least ``sqrt(ratio)`` above the level before (held to the
    end), at least a tenth of the blocks (2 at least) follow it, and at
    least half of the jump (on the log scale) is made within two neighbouring blocks (a
    jump, not a slow climb), and no block before it stood within ``sqrt(ratio)`` of the
    level after (a return to a level the norm held is no jump). Returns ``{"step", "before", "after", "ratio", "line_index"}``
    (levels as norms; ``line_index`` the first point of the block after the jump) or
    ``None``; fewer than 20 usable points give ``None``."""
    read = _norm_blocks(steps, values)
    if read is None:
        return None
    ok, v, st, start, block, meds = read
    nb = meds.size
    least_after = max(2, math.ceil(nb / 10))
    if nb < least_after + 2:
        return None
    # the median of the blocks before each boundary and after it, for every boundary
    cand = range(2, nb - least_after + 1)
    csum = np.cumsum(meds)
    scored = [
        ((float(csum[-1] - csum[b - 1]) / (nb - b) - float(csum[b - 1]) / b) * math.sqrt(b * (nb - b)), b) for b in cand
    ]
    b = max(scored)[1]
    lo = float(median(meds[:b]))
    gap = float(median(meds[b:])) - lo
    if gap < math.log(ratio) or float(np.min(meds[b:])) - lo < 0.5 * math.log(ratio):
        return None
    sharp = max(meds[b] - meds[max(0, b - 2)], meds[min(nb - 1, b + 1)] - meds[b - 1])
    if sharp < 0.5 * gap:
        return None
    # back to a level the norm held before (after its first tenth): a return, not a jump
    # (a loss scaler regrowing to its scale before an overflow burst, with the norm logged
    # scaled)
    if float(np.max(meds[:b])) >= lo + gap - 0.5 * math.log(ratio):
        return None
    first = start + b * block
    return {
        "step": float(st[first]),
        "before": math.exp(lo),
        "after": math.exp(lo + gap),
        "ratio": math.exp(gap),
        "line_index": int(np.flatnonzero(ok)[first]),
    }


@rule(
    "TP-GRAD-NORM-JUMP",
    Level.WARN,
    "spike",
    "the gradient norm jumped {grad_jump_ratio:g}x or more and stayed there",
    needs=[Need("grad_norm", "min_trend_points")],
    thresholds=["grad_jump_ratio", "min_trend_points", "objective_weight_rise"],
    objectives=("supervised",),
    least_evidence="20 positive finite gradient norms; after the first tenth, a level {grad_jump_ratio:g}x above the one before, held to the end over a tenth of the run.",
    detects=(
        "After the first tenth of the log, the gradient norm's level (medians of fiftieths of the run, on the "
        "log scale) jumps at least {grad_jump_ratio:g}x between the blocks before a point and the blocks after "
        "it, every block after it stays at least the square root of that above the level before (held to the "
        "end, over at least a tenth of the blocks), and at least half of the jump happens between two "
        "neighbouring blocks: a jump, not a slow climb; and no block before it stood that close to the level after "
        "(a return to a level the norm held is no jump). Not when a logged schedule of the objective moved there "
        "(a loss weight, a curriculum stage, a loss term first logged: TP-OBJECTIVE-CHANGED's reading), nor when a "
        "logged loss scale rose with it (a norm logged before unscaling)."
    ),
    why=(
        "The gradient norm of a healthy run moves slowly after its first steps; a level that jumps tenfold at "
        "once means the loss's scale or the model's sensitivity changed at that step. With gradient clipping the "
        "updates are capped, so the loss may look fine for a long while; without it, each update is ten times "
        "larger at the same learning rate."
    ),
    not_mean=(
        "A spike that comes back is TP-GRAD-SPIKE's; a norm that climbs slowly (late-training norm growth) or "
        "jumps a few times its level (a backbone unfrozen, an epoch boundary) is not this; the norm's fall from "
        "the initialisation is left out."
    ),
    causes=(
        "A loss multiplied by a constant (reduction 'sum' where 'mean' was meant, a loss scale applied twice, "
        "gradient accumulation that stopped dividing), a term with large gradients added without its weight, "
        "a layer unfrozen with a learning rate meant for a head, an instability that clipping hides."
    ),
    try_=(
        "Compare the code and the configuration at the step in the evidence with those before it (a resumed "
        "run's settings, the loss's reduction, the accumulation); log each loss term's gradient norm; resume "
        "from a checkpoint before the jump if the loss has started to drift."
    ),
)
def check_grad_norm_jump(ctx):
    g = ctx.finite("grad_norm")
    j = grad_norm_jump(g.steps, g.values, ctx.th.grad_jump_ratio)
    if j is None:
        return
    # A loss term added or reweighted there moves the gradient norm with the objective.
    before = g.steps[g.steps < j["step"]]
    if before.size and objective_schedule(ctx, float(before[-1])) is not None:
        return
    # A norm logged before unscaling moves with a loss scale that moved there.
    if ctx.has("loss_scale"):
        ls = ctx.finite("loss_scale")
        lo, hi = ls.values[ls.steps < j["step"]], ls.values[ls.steps >= j["step"]]
        if lo.size and hi.size and float(median(hi)) >= math.sqrt(ctx.th.grad_jump_ratio) * float(median(lo)):
            return
    i = j["line_index"]
    yield ctx.finding(
        f"the gradient norm jumped {times(j['ratio'], 0)} at step {step(j['step'])} and stayed there",
        f"gradient norm level {num(j['before'])} before step {step(j['step'])} (line {int(g.lines[i])}), "
        f"{num(j['after'])} after it (medians of the log of the norm over fiftieths of the run after its first "
        f"tenth), every later block at least {num(math.sqrt(ctx.th.grad_jump_ratio))}x the level before.",
        {"jump_step": j["step"], "level_before": j["before"], "level_after": j["after"], "ratio": j["ratio"]},
        step=j["step"],
        line=g.lines[i],
    )


def grad_norm_growth(steps: np.ndarray, values: np.ndarray, ratio: float) -> dict | None:
    """A gradient norm's level that climbs ``ratio`` times or more from its lowest and holds
    there to the end of the log.

    ``steps`` / ``values``: the norm's steps and values, shape ``(n,)`` (non-finite and
    non-positive values are left out). As :func:`grad_norm_jump`, the first tenth of the
    points is left out and the rest read as medians of the log of the norm over
    :data:`GRAD_JUMP_BLOCKS` blocks; a level is the median of a tenth of those blocks (2 at
    least), so one block's spike moves no level. The growth is from the lowest level wholly
    before the last tenth to the level of the last tenth; it counts when it is ``ratio`` or
    more, every block of the last tenth stays at least ``sqrt(ratio)`` above the lowest
    level (held, not one burst), and neither the first tenth's median nor any level before
    the lowest stood within ``sqrt(ratio)`` of the end (a norm back at a level it held, such
    as a loss scaler regrowing after an overflow burst with the norm logged scaled, is no
    growth). Returns ``{"step", "low_steps", "end_steps", "low", "end", "ratio",
    "line_index"}`` (levels as norms; ``step`` and ``line_index`` the first point of the
    first block after the lowest level that stands ``sqrt(ratio)`` above it) or ``None``;
    fewer than 20 usable points give ``None``."""
    read = _norm_blocks(steps, values)
    if read is None:
        return None
    ok, v, st, start, block, meds = read
    n = v.size
    nb = meds.size
    w = max(2, math.ceil(nb / 10))
    if nb < 3 * w:
        return None
    levels = window_medians(meds, w)
    end = float(levels[-1])
    low = int(np.argmin(levels[: nb - 2 * w + 1]))
    lo = float(levels[low])
    rise, half = end - lo, 0.5 * math.log(ratio)
    if rise < math.log(ratio) or float(np.min(meds[-w:])) < lo + half:
        return None
    before = [float(median(np.log(v[:start])))] if start else []
    before += [float(x) for x in levels[:low]]
    if before and max(before) >= end - half:
        return None
    past = np.flatnonzero(meds[low + w :] >= lo + half)
    ob = low + w + int(past[0])
    first = start + ob * block
    return {
        "step": float(st[first]),
        "low_steps": [float(st[start + low * block]), float(st[min(n - 1, start + (low + w) * block - 1)])],
        "end_steps": [float(st[start + (nb - w) * block]), float(st[-1])],
        "low": math.exp(lo),
        "end": math.exp(end),
        "ratio": math.exp(rise),
        "line_index": int(np.flatnonzero(ok)[first]),
    }


def _levels_at(ctx, name: str, gr: dict) -> tuple[float, float] | None:
    """The medians of series ``name`` over a growth's low steps and over its end steps
    (:func:`grad_norm_growth`), or ``None`` where it is not logged in both."""
    if not ctx.has(name):
        return None
    s = ctx.finite(name)
    low = s.values[(s.steps >= gr["low_steps"][0]) & (s.steps <= gr["low_steps"][1])]
    end = s.values[s.steps >= gr["end_steps"][0]]
    if not (low.size and end.size):
        return None
    return float(median(low)), float(median(end))


@rule(
    "TP-GRAD-NORM-GROWTH",
    Level.WARN,
    "spike",
    "the gradient norm grew {grad_growth_ratio:g}x or more from its lowest level and is still there",
    needs=[Need("grad_norm", "min_trend_points")],
    thresholds=["grad_growth_ratio", "grad_jump_ratio", "min_trend_points", "objective_weight_rise"],
    objectives=("supervised",),
    least_evidence="20 positive finite gradient norms; after the first tenth, the last tenth's level {grad_growth_ratio:g}x above the lowest level before it, every block of the last tenth at least the square root of that above it.",
    detects=(
        "After the first tenth of the log, the gradient norm's level (medians of a tenth of the fiftieths of the "
        "run, on the log scale) ends at least {grad_growth_ratio:g}x above the lowest level it held before its "
        "last tenth, every fiftieth of the last tenth stays at least the square root of that above the lowest "
        "level, and the norm never stood that close to its end level before (its first tenth included): a climb "
        "of two orders of magnitude, however slow. Not when TP-GRAD-NORM-JUMP reads a jump in it, nor when a "
        "logged schedule of the objective moved during the climb, nor when a logged loss scale rose with it (a "
        "norm logged before unscaling)."
    ),
    why=(
        "After its first steps the gradient norm of a healthy run stays within a few times one level (it falls "
        "as the loss falls and may rise a few-fold late in training); one that grows a hundredfold at a steady "
        "objective means the weights or the activations are growing without bound. Clipping caps the updates and "
        "Adam normalises them, so the loss can look fine for a long while before the run diverges."
    ),
    not_mean=(
        "A jump of the level at one step is TP-GRAD-NORM-JUMP's; a spike that comes back is TP-GRAD-SPIKE's; a "
        "norm that climbs a few-fold (late-training growth, an unfrozen backbone) or returns to the level it "
        "started at is not this, and the norm's fall from the initialisation is left out. Reinforcement-learning "
        "and adversarial runs are not judged: their losses' scales move with the returns and the other player."
    ),
    causes=(
        "Logits or attention scores growing without bound (no weight decay on them, a missing normalisation, a "
        "learning rate too high for the model's depth), a loss whose scale grows with the run (a sum over a "
        "growing batch or sequence, a weight that is not logged), an instability that clipping hides."
    ),
    try_=(
        "Log the gradient norm and the weight norm per layer to find the layer that grows; check weight decay, "
        "normalisation layers and the logits' scale; lower the learning rate, or resume from a checkpoint before "
        "the climb with it lowered if the loss has started to drift."
    ),
)
def check_grad_norm_growth(ctx):
    g = ctx.finite("grad_norm")
    th = ctx.th
    gr = grad_norm_growth(g.steps, g.values, th.grad_growth_ratio)
    if gr is None or grad_norm_jump(g.steps, g.values, th.grad_jump_ratio) is not None:
        return
    # A loss term added or reweighted during the climb moves the norm with the objective.
    if objective_schedule(ctx, gr["low_steps"][0]) is not None:
        return
    # A norm logged before unscaling grows with a loss scale that grew with it.
    scale = _levels_at(ctx, "loss_scale", gr)
    if scale is not None and scale[1] >= math.sqrt(th.grad_growth_ratio) * scale[0]:
        return
    i = gr["line_index"]
    loss = _levels_at(ctx, "loss", gr)
    loss_note = f" Over the same steps the loss went from {num(loss[0])} to {num(loss[1])} (medians)." if loss else ""
    yield ctx.finding(
        f"the gradient norm grew {times(gr['ratio'], 0)} from its lowest level and is still there",
        f"gradient norm level {num(gr['low'])} over steps {step(gr['low_steps'][0])}–{step(gr['low_steps'][1])} "
        f"(its lowest after the first tenth), {num(gr['end'])} over steps {step(gr['end_steps'][0])}–"
        f"{step(gr['end_steps'][1])} (medians of the log of the norm over fiftieths of the run, a tenth of them "
        f"per level); it passed {num(math.sqrt(th.grad_growth_ratio))}x its lowest at step {step(gr['step'])} "
        f"(line {int(g.lines[i])}) and every block since stays above that.{loss_note}",
        {
            "onset_step": gr["step"],
            "low_steps": gr["low_steps"],
            "end_steps": gr["end_steps"],
            "level_low": gr["low"],
            "level_end": gr["end"],
            "ratio": gr["ratio"],
            "threshold": th.grad_growth_ratio,
        },
        step=gr["step"],
        line=g.lines[i],
    )


def _scale_search_end(values: np.ndarray, steps: np.ndarray, share: float) -> int:
    """The index where a loss scaler's start-up search ends: the last point of a fall at
    every logged point from the first, when it ends within ``share`` of the logged steps
    and the scale does not fall on at once after it; 0 when the log shows no such search."""
    k = 0
    while k + 1 < len(values) and values[k + 1] < values[k]:
        k += 1
    span = float(steps[-1] - steps[0])
    if k == 0 or k >= len(values) - 1 or span <= 0 or float(steps[k] - steps[0]) > share * span:
        return 0
    return k


@rule(
    "TP-LOSS-SCALE-COLLAPSE",
    Level.WARN,
    "nan",
    "the mixed-precision loss scale collapsed",
    needs=[Need("loss_scale", "min_value_points", finite=False)],
    thresholds=["loss_scale_collapse_factor", "loss_scale_search_share", "min_value_points"],
    detects="The mixed-precision loss scale (GradScaler's scale, DeepSpeed's loss_scale, Coqui's amp_scaler) ends at 0 or at least {loss_scale_collapse_factor:g}x below its peak; the scaler's start-up search (a fall at every logged point from the first, over at most {loss_scale_search_share:g} of the logged steps) is before the peak is read.",
    why="A dynamic loss scaler halves its scale at every overflowing step and grows it back after a long run of good ones; a scale that keeps halving means nearly every step overflows, and at 0 the gradients vanish while the forward pass produces NaN.",
    not_mean="A scale that drops a few times and recovers is the scaler working as designed.",
    causes="fp16 activations or gradients overflowing (a learning rate too high, a diverging model, long sequences), a loss computed in fp16.",
    try_="Switch to bf16 (no loss scaling needed), lower the learning rate, enable gradient clipping, and resume from a checkpoint before the collapse.",
)
def check_loss_scale_collapse(ctx):
    ls = ctx.series("loss_scale")
    fin = ctx.finite("loss_scale")
    if len(fin) < 2:
        return
    first = _scale_search_end(fin.values, fin.steps, ctx.th.loss_scale_search_share)
    j = first + int(np.argmax(fin.values[first:]))
    peak = float(fin.values[j])
    end = float(fin.values[-1])
    if peak <= 0 or (end > 0 and peak / end < ctx.th.loss_scale_collapse_factor):
        return
    halvings = math.log2(peak / end) if end > 0 else math.inf
    yield ctx.finding(
        f"the loss scale collapsed from {num(peak)} to {num(end)}",
        f"{ls.key} peaked at {num(peak)} at step {step(fin.steps[j])} and ends at {num(end)} at step "
        f"{step(fin.steps[-1])}" + (f" ({halvings:.0f} halvings)" if end > 0 else "") + ": the scaler kept "
        "finding overflowing steps.",
        {"peak": peak, "peak_step": fin.steps[j], "end": end, "end_step": fin.steps[-1], "halvings": halvings},
        step=fin.steps[-1],
        line=fin.lines[-1],
    )


#: How close to a short decimal a clipping bar read back must come. The bar a person sets
#: (1.0, 0.5, 25) comes back from norm x scale to float32's precision (about 1e-7). Clipped
#: after unscale_, norm x scale is the bar times a power of two of 2^10 or more, which for
#: every bar of one significant digit from 0.001 to 0.1 lies more than 2e-4 from every
#: decimal of two significant digits (a search over 2^10..2^32); among two-digit bars only
#: 0.0047, 0.0083, 0.0094 and 0.083 come within 1e-4 at some scale.
CLIP_BAR_REL_TOL = 1e-4
#: How much norm x scale may move across the steps of the evidence: a clip returns the same
#: norm at every step to float32's precision (clip_grad_norm_'s 1e-6 in the divisor is 1e-9
#: of a scaled norm), where a smooth unclipped gradient passing a short decimal moves by its
#: own rate from step to step.
CLIP_PRODUCT_REL_SPREAD = 1e-6


def short_decimal(x: float, digits: int, rel_tol: float = CLIP_BAR_REL_TOL) -> float | None:
    """The decimal with at most ``digits`` significant digits within ``rel_tol`` of
    ``x`` (relative), or ``None``: a value a person typed (a clipping bar of 1.0, 0.5, 25)
    read back through float arithmetic. ``x`` must be positive and finite."""
    if not (x > 0 and math.isfinite(x)):
        return None
    e = math.floor(math.log10(x)) - (digits - 1)
    c = round(x / 10.0**e) * 10.0**e
    return c if c > 0 and abs(x - c) <= rel_tol * c else None


@rule(
    "TP-CLIP-BEFORE-UNSCALE",
    Level.WARN,
    "updates",
    "gradients are clipped while still multiplied by the loss scale",
    needs=[Need("loss_scale", "model_checks"), Need(("model/applied_grad_norm", "grad_norm"), "model_checks")],
    thresholds=["model_checks", "clip_unscale_max_product", "clip_unscale_min_scale"],
    least_evidence="The points are steps that log both the loss scale and the gradient norm, {model_checks} "
    "in a row: the clipping bar read back from each of them is the evidence, not a curve.",
    detects="At {model_checks} steps in a row that log the loss scale (at least {clip_unscale_min_scale:g}) "
    "and the norm of the gradient the optimizer applied (the live probe's `model/applied_grad_norm`, else the "
    "logged gradient norm), the norm times the scale is one and the same short decimal (at most two significant "
    "digits, at most {clip_unscale_max_product:g}: a clipping bar someone set): the gradients were clipped to "
    "that bar while still multiplied by the scale.",
    why="A GradScaler multiplies the loss, so the gradients, by its scale (65,536 at the start). Clipping them "
    "before scaler.unscale_ (or with no unscale_ before scaler.step) clips the scaled gradients to the bar; "
    "unscaling then divides by the scale. With SGD every update is the scale times too small and the run barely "
    "moves; Adam's normalisation hides most of the shrink, but the clip then acts at every step whatever the "
    "gradient.",
    not_mean="Gradients clipped after unscale_ have a norm equal to the bar itself (a short decimal), and the "
    "bar times a scale of 2^10 or more is no short decimal. A norm that moves from step to step, however small, "
    "is not a clip; a scaler that fell below 2^10 is left alone.",
    causes="clip_grad_norm_ called between scaler.scale(loss).backward() and scaler.unscale_(optimizer), or "
    "with no unscale_ at all before scaler.step; a custom loop ported from fp32 code to AMP.",
    try_="Call scaler.unscale_(optimizer) before clip_grad_norm_, then scaler.step(optimizer) and "
    "scaler.update(); restart training: the run so far took updates clipped at the scale times the bar.",
)
def check_clip_before_unscale(ctx):
    th = ctx.th
    ls = ctx.finite("loss_scale")
    g = ctx.finite("model/applied_grad_norm" if ctx.has("model/applied_grad_norm") else "grad_norm")
    li, gi = common_steps(ls.steps, g.steps)
    scale, norm, steps, lines = ls.values[li], g.values[gi], ls.steps[li], ls.lines[li]
    product = norm * scale
    bars = [
        short_decimal(float(p), 2) if s >= th.clip_unscale_min_scale and 0 < p <= th.clip_unscale_max_product else None
        for p, s in zip(product.tolist(), scale.tolist())
    ]
    hit = np.array([b is not None for b in bars], dtype=bool)
    need = int(th.model_checks)
    for start, length in runs_of(hit):
        for i in range(start, start + length - need + 1):
            window = product[i : i + need]
            if len({bars[k] for k in range(i, i + need)}) != 1 or np.max(window) > np.min(window) * (
                1 + CLIP_PRODUCT_REL_SPREAD
            ):
                continue
            bar = float(bars[i])
            yield ctx.finding(
                f"gradients are clipped before unscale_: the optimizer gets them {float(scale[i]):,.0f}x below "
                f"the bar {num(bar)}",
                f"at {need} steps in a row from step {step(steps[i])} the norm of the gradient applied ({g.key}) "
                f"times the loss scale is {num(bar)} (norm {num(float(norm[i]))}, scale {num(float(scale[i]))}): the "
                f"gradients were clipped to a bar of {num(bar)} while still scaled, and unscaling divided them by "
                f"the scale. Clipped after unscale_, the norm would be {num(bar)} itself.",
                {"clip_bar": bar, "loss_scale": float(scale[i]), "grad_norm": float(norm[i]), "points": need},
                step=steps[i],
                line=lines[i],
            )
            return
