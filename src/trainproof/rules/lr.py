"""Rules on the learning rate and its schedule.

A schedule legitimately sits at zero at its two ends: warm-up (or a mixed-precision
start-up) may begin at 0 for a few steps, and a decaying schedule (linear, cosine) ends at
0. Those edges are read off the curve (:func:`schedule_profile`) and never count toward the
zero-lr rules, which judge the sustained share *between* start-up and the scheduled end.
A decayed-to-zero tail that lasts a real share of the run is a schedule configured for a
shorter run (TP-LR-SCHEDULE-ENDED-EARLY), not a zero learning rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .._arrays import median
from ..aliases.vocabulary import words
from ..findings import Level
from ..runlog import Series
from ._fmt import num, pct, step
from ._schedule import declared_max_steps, reached_declared_end, still_warming_up
from ._shared import fall_evidence, fall_shown, trained_group_rate
from ._stats import repeats_one_value
from .registry import Need, rule


@dataclass
class ScheduleProfile:
    """Where the learning rate is <= 0, split into the schedule's edges and the rest.

    Attributes:
        s: the finite lr series.
        nonpos: mask of points with lr <= 0.
        startup: number of leading points <= 0 that are warm-up / start-up (0 if none).
        decayed_tail: number of trailing points <= 0 reached by a decaying schedule.
        negative: number of points < 0.
        troughs: mask of the zeros that are a restarting schedule's cycle ends (see
            :func:`cycle_troughs`), not counted with the rest.
    """

    s: Series
    nonpos: np.ndarray
    startup: int
    decayed_tail: int
    negative: int
    troughs: np.ndarray

    @property
    def between(self) -> np.ndarray:
        """The nonpos mask of the points between start-up and the decayed tail, less the
        cycle ends."""
        counted = self.nonpos & ~self.troughs
        return counted[self.startup : len(self.nonpos) - self.decayed_tail]

    @property
    def sustained_share(self) -> float:
        b = self.between
        return float(b.mean()) if b.size else 0.0


def schedule_profile(s: Series, startup_share: float, startup_points: int) -> ScheduleProfile:
    """Read the schedule's zero edges off a finite lr series.

    * Start-up: a leading run of lr <= 0 of at most ``max(startup_points, startup_share *
      n)`` points, followed by positive values.
    * Decayed tail: a trailing run of exact zeros that the schedule reached by decaying
      (the last positive values before it fall toward zero and are below the run's peak),
      or a single final zero after any schedule.
    """
    v = s.values
    n = v.size
    nonpos = v <= 0
    startup = 0
    if n and v[0] == 0 and not nonpos.all():
        lead = int(np.argmax(v != 0))  # exact zeros only: a negative rate is no warm-up
        if lead <= max(startup_points, int(startup_share * n)) and v[lead] > 0:
            startup = lead
    tail = 0
    if n and v[-1] == 0 and not nonpos.all():
        last_pos = int(np.flatnonzero(v > 0)[-1])
        run = n - 1 - last_pos
        if np.all(v[last_pos + 1 :] == 0):
            before = v[max(0, last_pos - 2) : last_pos + 1]
            decaying = before.size >= 2 and np.all(np.diff(before) <= 0) and before[-1] < v.max()
            if decaying or run == 1:  # one final zero ends any schedule
                tail = run
    return ScheduleProfile(s, nonpos, startup, tail, int((v < 0).sum()), cycle_troughs(v))


#: The fewest log rows a cycle of a restarting schedule spans for its lone zero to be read
#: as its last step (:func:`cycle_troughs`): a decay logged over 4 rows into the zero shows
#: it reached 0 at the cycle's end; at 2-3 rows a cycle a third of which sits at 0 (a
#: LinearLR re-created every 3 epochs) logs the same values.
CYCLE_MIN_LOGS = 5


def cycle_troughs(v: np.ndarray) -> np.ndarray:
    """Mask of the exact zeros of the learning rate ``v`` (shape ``(n,)``) that end a cycle
    of a restarting schedule: a lone zero log after two or more positive rates that fall
    into it and before a rate back at least where the decay stood two logs before (a
    per-epoch linear decay to 0 and its reset), where the log holds two such zeros or more,
    each cycle :data:`CYCLE_MIN_LOGS` logs or more. Such a log row is the one step of its cycle at
    rate 0, not a stretch of the run without updates: read at the logging cadence, an
    epoch of five log rows would count a fifth of the run at 0 (a new user's per-epoch
    sawtooth warned TP-ZERO-LR-PARTIAL at 12-19%). A zero phase (two zeros or more in a
    row) and a rate that jumps to 0 without decaying stay counted."""
    n = v.size
    out = np.zeros(n, dtype=bool)
    if n < 4:
        return out
    z = np.flatnonzero(v[2:-1] == 0) + 2
    if not z.size:
        return out
    # a restart: the rate after the zero jumps back to at least where the decay stood two
    # logs before it (a cosine stepped per epoch climbs out of 0 gradually: a zero phase)
    lone = (v[z - 1] > 0) & (v[z - 2] > v[z - 1]) & (v[z + 1] >= v[z - 2])
    z = z[lone]
    # cycles of CYCLE_MIN_LOGS logs or more: the decay into the zero is logged, so the one
    # zero log is the cycle's last step; a cycle of 2-3 logs cannot show whether a zero
    # phase filled a third of it
    if z.size >= 2 and int(np.min(np.diff(z))) >= CYCLE_MIN_LOGS:
        out[z] = True
    return out


def _profile(ctx) -> ScheduleProfile:
    th = ctx.th
    return ctx.memo(
        "schedule_profile", lambda: schedule_profile(ctx.finite("lr"), th.lr_startup_share, th.lr_startup_points)
    )


#: What the zero-rate rules leave to a log with another parameter group's rate beside the
#: one read (:func:`~trainproof.rules._shared.trained_group_rate`).
_OTHER_GROUP = (
    " Not where the log also holds another parameter group's rate (`lr_group_1`, `learning_rate_pg2`) with a "
    "median above {tiny_lr}: the optimizer trains that group, and the group read as the rate is frozen on purpose "
    "(a fine-tune's backbone at lr 0)."
)

_EDGES = (
    "Zeros at the schedule's edges — the first few points of warm-up or start-up, and the end a "
    "decaying schedule reaches — are not counted, nor the lone zeros that end each cycle of a "
    "restarting schedule (a rate that decays into a single zero log and jumps back at least to where it stood "
    "two logs before, every cycle 5 logs or more, twice or more)."
)


def _learns_anyway(ctx) -> bool:
    """Whether the train loss falls beyond what noise and a slow learner explain
    (:func:`~trainproof.rules._shared.fall_shown`): either the logged rate is not the one
    applied (weights a zero rate cannot move are moving) or the loss falls without
    learning (data that gets easier); TP-ZERO-LR-LEARNING warns of both."""
    if not ctx.has("loss"):
        return False
    v = ctx.finite("loss").values
    if ctx.has("eval_loss"):
        # An eval loss repeated to the bit at 3 or more evaluations: the weights did not
        # move, so the falling train loss is the data's doing (an unshuffled loader), and
        # the zero rate is the one applied.
        e = ctx.finite("eval_loss").values
        if e.size >= 3 and repeats_one_value(e):
            return False
    return v.size >= ctx.th.min_trend_points and bool(np.all(v > 0)) and fall_shown(ctx)


@rule(
    "TP-ZERO-LR",
    Level.FAIL,
    "lr",
    "the learning rate is zero (or negative) for the whole run",
    needs=[Need("lr", "min_value_points")],
    thresholds=[
        "zero_lr_fail_share",
        "min_value_points",
        "lr_startup_share",
        "lr_startup_points",
        "min_trend_points",
        "dead_min_improvement",
        "dead_ci_z",
        "tiny_lr",
    ],
    implies=(
        "TP-DEAD-RUN",
        "TP-FLAT",
        "TP-LOSS-STALLED",
        "TP-CHANCE-LEVEL",
        "TP-NEAR-CHANCE",
        "TP-ZERO-LR-PARTIAL",
        "TP-LOSS-FROZEN",
    ),
    least_evidence="At least {zero_lr_fail_share:.0%} of the points between start-up and a decayed end at lr <= 0.",
    detects="A learning rate <= 0 on at least {zero_lr_fail_share:.0%} of the logged points between start-up and the scheduled end. "
    + _EDGES,
    why="With a zero learning rate the optimizer never changes the weights; the run computes gradients for nothing.",
    not_mean="A zero at the first warm-up step or at the end of a decaying schedule is normal and is not counted. A logged rate of 0 under a loss that falls beyond its noise is not this: the rate logged is not the one applied, or the loss falls for another reason (TP-ZERO-LR-LEARNING, a WARN)."
    + _OTHER_GROUP,
    causes="A scheduler configured with zero peak or zero warm-up target, DeepSpeed/accelerate config overriding the optimizer's lr, lr set in the wrong config field, a warm-up longer than the run.",
    try_="Print the learning rate the optimizer applies after the first step (PyTorch: optimizer.param_groups[0]['lr']; Keras: model.optimizer.learning_rate); check the scheduler's total and warm-up steps and any DeepSpeed optimizer/scheduler block.",
)
def check_zero_lr(ctx):
    p = _profile(ctx)
    if p.sustained_share < ctx.th.zero_lr_fail_share or _learns_anyway(ctx) or trained_group_rate(ctx):
        return
    s = p.s
    k = int(p.nonpos.sum())
    yield ctx.finding(
        f"learning rate is <= 0 on {pct(k / len(s))} of logged steps",
        f"{k} of {len(s)} logged learning rates are <= 0 (steps {step(s.steps[0])}–{step(s.steps[-1])})"
        + (f", {p.negative} of them negative" if p.negative else "")
        + ".",
        {
            "nonpositive": k,
            "negative": p.negative,
            "points": len(s),
            "share": k / len(s),
            "sustained_share": p.sustained_share,
        },
        step=s.steps[0],
        line=s.lines[0],
    )


@rule(
    "TP-ZERO-LR-LEARNING",
    Level.WARN,
    "lr",
    "the logged learning rate is zero, yet the loss falls",
    needs=[Need("lr", "min_value_points"), Need("loss", "min_trend_points", positive=True, all_finite=True)],
    thresholds=[
        "zero_lr_fail_share",
        "dead_min_improvement",
        "dead_ci_z",
        "min_value_points",
        "lr_startup_share",
        "lr_startup_points",
        "tiny_lr",
    ],
    least_evidence="TP-ZERO-LR's share of logged rates <= 0 and a train loss whose fall shows beyond its noise.",
    detects="TP-ZERO-LR's condition (a learning rate <= 0 on at least {zero_lr_fail_share:.0%} of the logged points between start-up and the scheduled end) while the train loss falls: the {dead_ci_z:g}-sigma interval of its change over the run (log scale, widened for autocorrelation), or of the change from its first block's level to the level it then held (the median of its later block medians, against their spread: a fall that is fast and then holds), lies above a slow learner's {dead_min_improvement:.0%} fall. "
    + _EDGES,
    why="A zero rate cannot move the weights, so a loss that falls beyond its noise shows either that the rate in the log is not the one training the model (then every lr check reads the wrong number) or that the loss falls without learning (data that gets easier as the run goes on). The log cannot tell the two apart, so it warns instead of failing.",
    not_mean="It does not say the run is healthy: check which it is. It does not fail the run either, because the first reading is a common logging artefact."
    + _OTHER_GROUP,
    causes="HF Trainer logs the first parameter group's rate, and that group (embeddings, a frozen backbone) has lr 0 on purpose; a cyclic schedule whose base rate is 0, logged only at its troughs; a custom optimizer that ignores the scheduler's rate. Or a rate that really is 0 under data that gets easier (a curriculum, a drifting loader).",
    try_="Log the rate of the group that trains (optimizer.param_groups[i]['lr']) or all of them; for a cyclic schedule, log at a step that is not a multiple of the cycle.",
)
def check_zero_lr_learning(ctx):
    p = _profile(ctx)
    if p.sustained_share < ctx.th.zero_lr_fail_share or not _learns_anyway(ctx) or trained_group_rate(ctx):
        return
    s = p.s
    k = int(p.nonpos.sum())
    how, lo, hi = fall_evidence(ctx)
    loss = ctx.finite("loss")
    over = "over the run" if how == "line" else "from its first block to the level it then held"
    yield ctx.finding(
        f"the logged learning rate is <= 0 on {pct(k / len(s))} of logged steps, yet the loss falls: the rate in the "
        "log is not the one applied, or the loss falls for another reason",
        f"{k} of {len(s)} logged learning rates are <= 0 (steps {step(s.steps[0])}–{step(s.steps[-1])}); the train "
        f"loss goes {num(loss.values[0])} -> {num(loss.values[-1])}, and the 99% interval of its fall {over} is "
        f"{num(lo)} to {num(hi)} nats (log scale), beyond a slow learner's {pct(ctx.th.dead_min_improvement)}.",
        {
            "nonpositive": k,
            "points": len(s),
            "share": k / len(s),
            "loss_fall_low": lo,
            "loss_fall_high": hi,
            "loss_fall_read": how,
        },
        step=s.steps[0],
        line=s.lines[0],
    )


@rule(
    "TP-ZERO-LR-PARTIAL",
    Level.WARN,
    "lr",
    "the learning rate is <= 0 on a real share of the run",
    needs=[Need("lr", "min_value_points")],
    thresholds=[
        "zero_lr_warn_share",
        "zero_lr_fail_share",
        "min_value_points",
        "lr_startup_share",
        "lr_startup_points",
        "tiny_lr",
    ],
    detects="A learning rate <= 0 on more than {zero_lr_warn_share:.0%} (and less than {zero_lr_fail_share:.0%}) of the logged points between start-up and the scheduled end. "
    + _EDGES,
    why="Steps taken at lr 0 cost compute and change nothing; negative values move the weights uphill.",
    not_mean="Warm-up that starts at 0 and a schedule that ends at 0 are normal; a schedule that decayed to 0 long before the run ended is TP-LR-SCHEDULE-ENDED-EARLY instead."
    + _OTHER_GROUP,
    causes="A restart that reset the scheduler to a zero phase, a long warm-up starting at 0, a scheduler stepped at the wrong frequency, negative values from a misconfigured cyclic schedule.",
    try_="Look at where the zeros are (the evidence gives the first); match the scheduler's warm-up and total steps to the run.",
)
def check_zero_lr_partial(ctx):
    p = _profile(ctx)
    share = p.sustained_share
    if share <= ctx.th.zero_lr_warn_share or share >= ctx.th.zero_lr_fail_share or trained_group_rate(ctx):
        return
    s = p.s
    idx = np.flatnonzero(p.between) + p.startup
    i = int(idx[0])
    counted = int(idx.size)
    yield ctx.finding(
        f"learning rate is <= 0 on {pct(share)} of the run between start-up and the schedule's end",
        f"{counted} of {len(s) - p.startup - p.decayed_tail} logged learning rates between start-up and the scheduled "
        "end are <= 0 "
        + (f"({p.negative} negative, the rest exactly 0)" if p.negative else "(all exactly 0, none negative)")
        + f"; the first is at step {step(s.steps[i])}"
        + (
            f"; {p.startup} start-up and {p.decayed_tail} end-of-schedule zeros not counted"
            if p.startup or p.decayed_tail
            else ""
        )
        + (
            f"; {int(p.troughs.sum())} zeros ending a restarting schedule's cycles not counted"
            if p.troughs.any()
            else ""
        )
        + ".",
        {
            "nonpositive": counted,
            "negative": p.negative,
            "points": len(s),
            "share": share,
            "startup_zeros": p.startup,
            "decayed_tail": p.decayed_tail,
            "first_step": s.steps[i],
        },
        step=s.steps[i],
        line=s.lines[i],
    )


def _effectively_zero_tail(s: Series, floor: float, decay: float) -> int:
    """Trailing points of a positive learning rate at or below ``floor`` that a decaying
    schedule reached (the 3 points before them do not rise) and that decays on, to
    ``decay`` x ``floor`` or below by the end; 0 otherwise. A floor a scheduler holds
    (ReduceLROnPlateau's ``min_lr`` of 1e-6 under a peak of 1e-3, a step schedule's last
    stage) is a rate the run trains at, however small; a rate that goes on shrinking
    geometrically to 1e-30 (``ExponentialLR`` stepped per batch) is none."""
    v = s.values
    low = (v > 0) & (v <= floor)
    if not v.size or not low[-1] or not v[-1] <= decay * floor:
        return 0
    above = np.flatnonzero(~low)
    if not above.size:
        return 0  # a rate that was never above it is TP-DEAD-RUN's tiny rate, not a schedule's end
    first = int(above[-1]) + 1
    before = v[max(0, first - 3) : first + 1]
    return v.size - first if np.all(np.diff(before) <= 0) else 0


class EndedEarly(NamedTuple):
    """Where a schedule reached 0 (or effectively zero) for good (:func:`ended_early`)."""

    tail: int  # logged points at (effectively) zero, to the end
    floor: float  # the effective zero it stays at or under (0.0 for an exact 0)
    zero_step: float  # the first of them
    end: float  # the run's end: its declared max_steps, else its last logged step
    declared: bool  # whether the end is declared
    remaining: float  # steps from the zero to the end
    span: float  # steps from the first log to the end
    share: float  # remaining / span


def ended_early(ctx) -> EndedEarly | None:
    """Where the schedule reached 0 (or effectively zero) for good, or ``None`` when it
    never does."""
    p = _profile(ctx)
    s = p.s
    tail, floor = p.decayed_tail, 0.0
    if not tail:
        v = s.values
        floor = min(ctx.th.tiny_lr, ctx.th.frozen_lr_share * float(np.max(v))) if v.size else 0.0
        tail = _effectively_zero_tail(s, floor, ctx.th.frozen_lr_share)
    if not tail:
        return None
    zero_step = float(s.steps[len(s) - tail])
    declared = declared_max_steps(ctx.run)
    end = declared or float(s.steps[-1])
    span = max(end - float(s.steps[0]), 1e-300)
    remaining = end - zero_step
    return EndedEarly(tail, floor, zero_step, end, declared is not None, remaining, span, remaining / span)


@rule(
    "TP-LR-SCHEDULE-ENDED-EARLY",
    Level.WARN,
    "lr",
    "the schedule decayed to zero while many steps remained",
    needs=[Need("lr", "min_value_points")],
    thresholds=[
        "zero_lr_warn_share",
        "min_value_points",
        "lr_startup_share",
        "lr_startup_points",
        "tiny_lr",
        "frozen_lr_share",
    ],
    detects="The learning rate decays to exactly 0, or to effectively zero (at or below both {tiny_lr:g} and {frozen_lr_share:g} of its peak, decaying on to {frozen_lr_share:g} of that by the end: an exponential decay stepped per batch that never reaches 0, not a floor a scheduler holds), and stays there for more than {zero_lr_warn_share:.0%} of the run: the scheduled end (HF's max_steps when the log declares it, else the last logged step) is far beyond the step where the schedule ended.",
    why="Every step after the schedule reached 0 costs compute and changes nothing.",
    not_mean="A zero at the very end of a decaying schedule is normal; so is a short tail.",
    causes="A scheduler configured with fewer total steps than the run (epochs changed but not the scheduler, gradient accumulation not accounted for, a resumed run that kept the old schedule).",
    try_="Set the scheduler's total steps to the run's real number of optimizer steps (num_training_steps = epochs * steps_per_epoch / grad_accum).",
)
def check_schedule_ended_early(ctx):
    ended = ended_early(ctx)
    if ended is None or ended.share <= ctx.th.zero_lr_warn_share:
        return
    s = _profile(ctx).s
    tail, floor, zero_step, end, declared, remaining, span, share = ended
    i = len(s) - tail
    reached = (
        f"decays to exactly 0 at step {step(zero_step)}"
        if not floor
        else f"decays to effectively zero at step {step(zero_step)} ({num(float(s.values[i]))}, at or below "
        f"{num(floor)}: {num(ctx.th.tiny_lr)} and {num(ctx.th.frozen_lr_share)} of its peak "
        f"{num(float(np.max(s.values)))}; {num(float(s.values[-1]))} at the end)"
    )
    yield ctx.finding(
        f"the learning rate reached {'0' if not floor else 'effectively zero'} at step {step(zero_step)} with "
        f"{pct(share)} of the run still to go",
        f"lr {reached} (line {int(s.lines[i])}) and stays there for the last "
        f"{tail} logged points; {step(remaining)} of the run's {step(span)} steps "
        + ("(to its declared max_steps) " if declared else "(to its last logged step) ")
        + "come after it.",
        {
            "zero_step": zero_step,
            "remaining_steps": remaining,
            "share": share,
            "tail_points": tail,
            "scheduled_end": end,
            "declared_end": declared,
            "effective_zero": floor or None,
        },
        step=zero_step,
        line=s.lines[i],
    )


def _other_rate_after(ctx, at: float) -> str | None:
    """A learning rate logged under another key than the run's (``lr_head``,
    ``lr-AdamW/pg2``: any key whose words name a learning rate) whose median from step
    ``at`` on is above ``tiny_lr``: a parameter group that goes on training, or a second
    stage under its own rate. ``None`` otherwise."""
    mapped = ctx.run.series["lr"].key if "lr" in ctx.run.series else None
    for name, s in sorted(ctx.run.series.items()):
        if name == "lr" or s.key == mapped:
            continue
        w = set(words(s.key or name))
        if not ("lr" in w or {"learning", "rate"} <= w):
            continue
        v = s.values[(s.steps >= at) & np.isfinite(s.values)]
        if v.size and float(median(v)) > ctx.th.tiny_lr:
            return s.key or name
    return None


def _decayed_into_zero(s: Series, tail: int, peak_share: float) -> bool:
    """Whether the rate ``s`` decayed into its zero tail (its last ``tail`` points): the last
    rate before the tail at most ``peak_share`` of the peak, and from the last point at half
    the peak or more to the tail at least 3 points, no two consecutive ones equal. A
    schedule sized for fewer steps than the run (a cosine, a linear or an exponential decay)
    moves at every step; ReduceLROnPlateau holds each rate until the loss stops improving
    and cuts it then (a run that converged first), and a rate set to 0 from its working
    value is a phase the log does not name."""
    v = s.values
    i = len(v) - tail
    if i < 1 or not np.isfinite(v[:i]).all():
        return False
    peak = float(np.max(v[:i]))
    if not peak > 0 or v[i - 1] > peak_share * peak:
        return False
    high = np.flatnonzero(v[:i] >= 0.5 * peak)
    run = v[int(high[-1]) : i]
    return run.size >= 3 and bool(np.all(np.diff(run) != 0))


@rule(
    "TP-ZERO-LR-ONSET",
    Level.FAIL,
    "lr",
    "the learning rate reached zero with most of the run to go, and the loss stopped there",
    needs=[Need("lr", "min_value_points"), Need("loss", "min_trend_points", positive=True)],
    thresholds=[
        "zero_lr_onset_share",
        "dead_min_improvement",
        "min_trend_points",
        "tiny_lr",
        "frozen_lr_share",
        "lr_startup_share",
        "lr_startup_points",
        "zero_lr_decayed_share",
    ],
    implies=(
        "TP-LR-SCHEDULE-ENDED-EARLY",
        "TP-DEAD-RUN",
        "TP-FLAT",
        "TP-LOSS-STALLED",
        "TP-PLATEAU",
        "TP-NEAR-CHANCE",
        "TP-LOSS-FROZEN",
        "TP-FROZEN-AFTER-LEARNING",
    ),
    least_evidence="A learning rate at 0 or effectively zero (TP-LR-SCHEDULE-ENDED-EARLY's measure) for more than {zero_lr_onset_share:.0%} of the run, and at least {min_trend_points} train losses after it that move less than {dead_min_improvement:.0%}.",
    detects=(
        "TP-LR-SCHEDULE-ENDED-EARLY's finding (the learning rate decays to exactly 0, or to at most {tiny_lr:g} "
        "and {frozen_lr_share:g} of its peak, and stays there), with more than {zero_lr_onset_share:.0%} of the run "
        "still to go, and a train loss that stopped where the rate did: its median over the last tenth of the "
        "points after that step (at least 3) within {dead_min_improvement:.0%} of its median over the first tenth "
        "(at least {min_trend_points} points there), after a schedule that decayed into it: the last rate before "
        "it at most {zero_lr_decayed_share:.0%} of the peak, and from the last rate at half the peak or more at least "
        "3 logged rates, no two consecutive ones equal (a cosine, linear or exponential decay sized for fewer steps "
        "than the run). A loss that goes on moving under a logged rate of zero is trained by a rate the log does "
        "not show, a rate logged under another key that stays above {tiny_lr:g} trains another group or stage, "
        "ReduceLROnPlateau's held rates are cut because the run had converged, and a rate set to 0 from its working "
        "value is a phase the log does not name: TP-LR-SCHEDULE-ENDED-EARLY's WARN alone."
    ),
    why=(
        "At a learning rate of effectively zero the optimizer cannot move the weights, so every step after "
        "the schedule ended is spent computing gradients for nothing; when that is most of the run, the run "
        "is the failure TP-ZERO-LR names, from a step on. A healthy schedule reaches zero at its end or in a "
        "short cool-down, never with more than half of the run to go."
    ),
    not_mean="Not that the part before the onset was wasted: the checkpoint at the onset is what the run trained.",
    causes="A scheduler sized for fewer steps than the run (epochs raised without the scheduler's total, gradient accumulation not accounted for, num_training_steps computed for one epoch), a resumed run that kept an ended schedule.",
    try_="Set the scheduler's total steps to the run's real number of optimizer steps and resume from the checkpoint at the onset.",
    objectives=("supervised",),
)
def check_zero_lr_onset(ctx):
    ended = ended_early(ctx)
    if ended is None or ended.share <= ctx.th.zero_lr_onset_share or trained_group_rate(ctx):
        return
    tail, floor, zero_step, _, _, remaining, span, share = ended
    if _other_rate_after(ctx, zero_step) or not _decayed_into_zero(_profile(ctx).s, tail, ctx.th.zero_lr_decayed_share):
        return
    loss = ctx.finite("loss")
    after = loss.values[loss.steps >= zero_step]
    k = max(3, after.size // 10)
    if after.size < max(ctx.th.min_trend_points, 2 * k):
        return
    first, last = float(median(after[:k])), float(median(after[-k:]))
    moved = abs(last - first) / max(abs(first), 1e-300)
    if not first > 0 or moved >= ctx.th.dead_min_improvement:
        return
    s = _profile(ctx).s
    i = len(s) - tail
    yield ctx.finding(
        f"the learning rate reached {'0' if not floor else 'effectively zero'} at step {step(zero_step)} with "
        f"{pct(share)} of the run to go, and the loss stopped there",
        f"lr {num(float(s.values[i]))} at step {step(zero_step)} (line {int(s.lines[i])}) and at most that to the "
        f"end ({num(float(s.values[-1]))}); the train loss after it moves {pct(moved)} (median {num(first)} over "
        f"its first {k} points, {num(last)} over its last {k}, of {after.size}): {step(remaining)} of the run's "
        f"{step(span)} steps trained nothing.",
        {
            "zero_step": zero_step,
            "share": share,
            "remaining_steps": remaining,
            "loss_first": first,
            "loss_last": last,
            "loss_moved": moved,
            "effective_zero": floor or None,
        },
        step=zero_step,
        line=s.lines[i],
    )


@rule(
    "TP-WARMUP-UNFINISHED",
    Level.WARN,
    "lr",
    "the run reached its scheduled end while warm-up was still rising",
    needs=[Need("lr", "min_value_points")],
    thresholds=["min_value_points", "warmup_rising_points"],
    detects="The learning rate is still rising at the last logged step (its last {warmup_rising_points} logged values strictly increase and the last is the run's peak) although the run reached its declared end (HF max_steps).",
    why="The run never trained at its intended learning rate: the warm-up was longer than the run.",
    not_mean="A run that is still in progress, or killed early, is not this (the end must be the declared one).",
    causes="warmup_steps larger than max_steps, a warm-up ratio applied to the wrong total, a schedule set up for a longer run.",
    try_="Make warm-up a small share of the run (a few percent of the optimizer steps).",
)
def check_warmup_unfinished(ctx):
    s = ctx.finite("lr")
    k = ctx.th.warmup_rising_points
    end = reached_declared_end(ctx.run)
    if end is None or len(s) < k:
        return
    tail = s.values[-k:]
    if not (still_warming_up(s.values, k) and tail[-1] >= s.values.max()):
        return
    yield ctx.finding(
        f"warm-up never finished: the learning rate was still rising at the run's end (step {step(s.steps[-1])})",
        f"the last {k} logged learning rates rise ({', '.join(num(x) for x in tail)}) up to step {step(s.steps[-1])}; "
        f"the log declares max_steps {step(end)}.",
        {"last_lr": float(tail[-1]), "max_steps": end, "rising_points": k},
        step=s.steps[-1],
        line=s.lines[-1],
    )


@rule(
    "TP-LR-RANGE-TEST",
    Level.INFO,
    "context",
    "LR range test: the learning rate sweeps up over the run and the loss-shape rules are skipped",
    objectives=("lr_range_test",),
    detects=(
        "The learning rate climbs geometrically over the whole log, never falling: from at most 1e-5 at its "
        "first logged value over at least 4 decades, its log a straight line in the step (R^2 at least 0.98), "
        "at least 10 logged rates (trainproof.rules.objective_kind.lr_range_test): the sweep of fastai's "
        "lr_find, Lightning's tuner or torch-lr-finder."
    ),
    why="An LR range test raises the rate until the loss blows up, on purpose, to pick a rate for a real run; "
    "a loss that falls and then explodes is its result, not a divergence.",
    not_mean="It is context, not a judgement; non-finite values and the other checks that apply to any run still run.",
    causes="Not applicable: this is context.",
    try_="Read the rate where the loss falls fastest (or a tenth of where it is lowest) and train with it.",
)
def check_lr_range_test(ctx):
    s = ctx.finite("lr")
    loss = ctx.run.series.get("loss")
    extra = ""
    data: dict = {"lr_first": float(s.values[0]), "lr_last": float(s.values[-1])}
    if loss is not None:
        f = loss.finite()
        if len(f):
            i = int(np.argmin(f.values))
            at = float(np.interp(f.steps[i], s.steps, s.values))
            extra = f"; the loss is lowest ({num(float(f.values[i]))}) at step {step(f.steps[i])}, near lr {num(at)}"
            data.update(loss_min=float(f.values[i]), lr_at_loss_min=at)
    yield ctx.finding(
        "LR range test: the learning rate sweeps up over the run; the loss-shape rules are skipped",
        f"{s.key} climbs from {num(s.values[0])} to {num(s.values[-1])} over {len(s)} logged rates, geometrically"
        f"{extra}.",
        data,
        step=s.steps[-1],
        line=s.lines[-1],
    )
