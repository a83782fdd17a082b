"""Rules on the learning rate."""
from __future__ import annotations

import numpy as np

from ..findings import Level
from ._fmt import pct, step
from .registry import Need, rule


def _zero_share(ctx):
    s = ctx.series("lr").finite()
    nonpos = s.values <= 0
    return s, nonpos, float(nonpos.mean()), int((s.values < 0).sum())


def _edge_zeros(values) -> int:
    """Lone exact zeros at the first and the last logged point: a warm-up that starts at
    0 and a schedule that ends at 0 (a neighbour that is also <= 0 makes it a stretch)."""
    if values.size < 2:
        return 0
    return (int(values[0] == 0 and values[1] > 0)
            + int(values[-1] == 0 and values[-2] > 0))


@rule(
    "TP-ZERO-LR", Level.FAIL, "lr", "the learning rate is zero (or negative) for the whole run",
    needs=[Need("lr", "min_value_points")], thresholds=["zero_lr_fail_share", "min_value_points"],
    detects="A learning rate <= 0 on at least 99% of the logged points.",
    why="With a zero learning rate the optimizer never changes the weights; the run computes gradients for nothing.",
    not_mean="A zero at the first warm-up step or at the end of a decaying schedule is normal and far below 99%.",
    causes="A scheduler configured with zero peak or zero warm-up target, DeepSpeed/accelerate config overriding the optimizer's lr, lr set in the wrong config field, a warm-up longer than the run.",
    try_="Print optimizer.param_groups[0]['lr'] after the first step; check the scheduler's total and warm-up steps and any DeepSpeed optimizer/scheduler block.",
)
def check_zero_lr(ctx):
    s, nonpos, share, neg = _zero_share(ctx)
    if share < ctx.th.zero_lr_fail_share:
        return
    yield ctx.finding(
        f"learning rate is <= 0 on {pct(share)} of logged steps",
        f"{int(nonpos.sum())} of {len(s)} logged learning rates are <= 0 (steps {step(s.steps[0])}–{step(s.steps[-1])})"
        + (f", {neg} of them negative" if neg else "") + ".",
        {"nonpositive": int(nonpos.sum()), "negative": neg, "points": len(s), "share": share},
        step=s.steps[0], line=s.lines[0],
    )


@rule(
    "TP-ZERO-LR-PARTIAL", Level.WARN, "lr", "the learning rate is <= 0 on a real share of the run",
    needs=[Need("lr", "min_value_points")], thresholds=["zero_lr_warn_share", "zero_lr_fail_share", "min_value_points"],
    detects="A learning rate <= 0 on more than 10% (and less than 99%) of the logged points, not counting a lone zero at the first or the last logged point.",
    why="Steps taken at lr 0 cost compute and change nothing; negative values move the weights uphill.",
    not_mean="One zero at warm-up start or at the schedule's end is normal; this fires only when the share is large.",
    causes="A schedule whose total steps are shorter than the run (it reaches 0 early), a long warm-up starting at 0, a restart that reset the scheduler.",
    try_="Match the scheduler's total steps to the run's real length and check where the zeros are in the evidence.",
)
def check_zero_lr_partial(ctx):
    s, nonpos, share, neg = _zero_share(ctx)
    # The edge zeros of a schedule are normal however short the log is; they do not count.
    edge = _edge_zeros(s.values)
    counted = (int(nonpos.sum()) - edge) / len(s)
    if counted <= ctx.th.zero_lr_warn_share or share >= ctx.th.zero_lr_fail_share:
        return
    i = int(np.flatnonzero(nonpos)[0])
    yield ctx.finding(
        f"learning rate is <= 0 on {pct(share)} of logged steps",
        f"{int(nonpos.sum())} of {len(s)} logged learning rates are <= 0 "
        + (f"({neg} negative, the rest exactly 0)" if neg else "(all exactly 0, none negative)")
        + (f", {edge} of them a lone zero at the start or end of the schedule (not counted)" if edge else "")
        + f"; the first is at step {step(s.steps[i])}.",
        {"nonpositive": int(nonpos.sum()), "negative": neg, "points": len(s), "share": share,
         "edge_zeros": edge, "counted_share": counted, "first_step": s.steps[i]},
        step=s.steps[i], line=s.lines[i],
    )
