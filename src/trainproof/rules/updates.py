"""Rules on the update/weight ratio ||dW|| / ||W|| across an optimizer step (recorded by the
in-loop monitor with ``track_update_ratio=True``, or logged by the user as
``update_ratio``)."""

from __future__ import annotations

import numpy as np

from ..findings import Level
from ._fmt import num, step
from ._stats import median
from .registry import Need, rule


def _log_median(ctx):
    s = ctx.finite("update_ratio")
    skip = int(len(s) * ctx.th.update_ratio_warmup_share)
    v = s.values[skip:]
    v = v[v > 0]
    if v.size < ctx.th.update_ratio_min_points // 2:
        return None, s, skip
    return float(median(np.log10(v))), s, skip


_DOC = dict(
    needs=[Need("update_ratio", "update_ratio_min_points")],
)
#: The thresholds both rules read; each adds its own bar.
_COMMON_TH = ["update_ratio_min_points", "update_ratio_warmup_share"]


@rule(
    "TP-UPDATE-RATIO-HIGH",
    Level.WARN,
    "updates",
    "each optimizer step changes the weights by too large a share",
    **_DOC,
    thresholds=[*_COMMON_TH, "update_ratio_high_log10"],
    detects="After warm-up (the first {update_ratio_warmup_share:.0%} of points), the median log10 of the update/weight ratio ||dW||/||W|| is above {update_ratio_high_log10:g}: each step moves the weights by more than ~1% of their norm.",
    why="The rule of thumb (Karpathy's 'ratio of updates to weights') is ~1e-3 per step; far above it, training is unstable or about to diverge.",
    not_mean="It is a warning: some setups (very small models, the first steps of fine-tuning) run hot and still converge.",
    causes="A learning rate too high, no warm-up, weight decay or momentum set wrong, parameters with tiny norms (a freshly initialised head).",
    try_="Lower the learning rate until the median ratio is near 1e-3; add warm-up; check which parameter groups carry the large updates.",
)
def check_update_high(ctx):
    med, s, skip = _log_median(ctx)
    if med is None or med <= ctx.th.update_ratio_high_log10:
        return
    yield ctx.finding(
        f"update/weight ratio is 10^{med:.1f} per step (rule of thumb ~1e-3)",
        f"median log10 of ||dW||/||W|| over {len(s) - skip} points after warm-up (from step {step(s.steps[skip])}) "
        f"is {med:.2f}, above {num(ctx.th.update_ratio_high_log10)}.",
        {"median_log10": med, "points": len(s) - skip},
        step=s.steps[skip],
        line=s.lines[skip],
    )


@rule(
    "TP-UPDATE-RATIO-LOW",
    Level.WARN,
    "updates",
    "each optimizer step barely changes the weights",
    **_DOC,
    thresholds=[*_COMMON_TH, "update_ratio_low_log10"],
    detects="After warm-up (the first {update_ratio_warmup_share:.0%} of points), the median log10 of the update/weight ratio ||dW||/||W|| is below {update_ratio_low_log10:g}: each step moves the weights by less than ~0.01% of their norm.",
    why="Far below the ~1e-3 rule of thumb, the model learns too slowly to use the compute it is given.",
    not_mean="It is a warning: the end of a decaying schedule and very large models legitimately run low.",
    causes="A learning rate too small, most parameters frozen, gradients clipped to almost nothing, a scheduler that decayed too early.",
    try_="Raise the learning rate (sweep a few x10 steps); check clipping and the trainable parameter count.",
)
def check_update_low(ctx):
    med, s, skip = _log_median(ctx)
    if med is None or med >= ctx.th.update_ratio_low_log10:
        return
    yield ctx.finding(
        f"update/weight ratio is 10^{med:.1f} per step (rule of thumb ~1e-3)",
        f"median log10 of ||dW||/||W|| over {len(s) - skip} points after warm-up (from step {step(s.steps[skip])}) "
        f"is {med:.2f}, below {num(ctx.th.update_ratio_low_log10)}.",
        {"median_log10": med, "points": len(s) - skip},
        step=s.steps[skip],
        line=s.lines[skip],
    )
