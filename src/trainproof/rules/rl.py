"""Rules for RL and preference objectives (see :mod:`trainproof.rules.objective`)."""
from __future__ import annotations

import numpy as np

from ..findings import Level
from ._fmt import num, step
from .objective import detect_objective
from ._stats import median
from .registry import Need, rule


@rule(
    "TP-RL-OBJECTIVE", Level.INFO, "context", "RL or preference objective: the loss is not a progress signal",
    objectives=("rl",),
    detects="The log has reward or policy metrics (TRL GRPO/PPO/DPO and the like): the run optimises an RL or preference objective.",
    why="Such a loss may be zero by construction (GRPO's first iterations), negative, or rising while the policy improves; the loss-shape rules are skipped as `objective: rl` rather than run and misread.",
    not_mean="It is context, not a judgement; non-finite values and a policy with no gradient are still judged.",
    causes="Not applicable: this is context.",
    try_="Judge progress by the reward and the KL; compare against a known-good run with `trainproof compare`.",
)
def check_rl_objective(ctx):
    _, keys = detect_objective(ctx.run)
    rw = ctx.run.series.get("reward")
    extra = ""
    data: dict = {"keys": keys}
    if rw is not None:
        v = rw.values[np.isfinite(rw.values)]
        if v.size >= 2:
            w = max(1, min(5, v.size // 4))
            first, last = float(median(v[:w])), float(median(v[-w:]))
            extra = f"; reward ({rw.key}) {num(first)} -> {num(last)} (medians of {w} points at each end)"
            data.update(reward_first=first, reward_last=last)
    yield ctx.finding(
        "RL or preference objective: the loss-shape rules are skipped",
        f"keys {', '.join(keys[:5])}{' …' if len(keys) > 5 else ''}{extra}.",
        data,
    )


@rule(
    "TP-RL-DEAD-POLICY", Level.FAIL, "zero", "the policy receives no gradient: gradient norm (and KL) exactly 0 throughout",
    needs=[Need("grad_norm", "zero_min_points")],
    thresholds=["zero_min_points"],
    verdict_bearing=True,
    objectives=("rl",),
    detects="On an RL or preference objective, every finite gradient norm (at least 5) is exactly 0.0, and so is every finite KL when the log has one (TRL does not log the KL when its coefficient beta is 0).",
    why="A KL of exactly 0 throughout means the policy never moved away from the reference model, and a zero gradient norm says why: the updates are empty.",
    not_mean="A KL of 0 at the first steps is normal (the policy starts as the reference); a near-zero loss is normal for GRPO. This needs both exactly zero for the whole run.",
    causes="Every reward identical within each group (zero advantage: all completions right or all wrong), frozen or detached adapters, a learning rate of 0, a reward function that always returns the same value.",
    try_="Check the reward spread within groups (reward_std, frac_reward_zero_std), that the trainable parameters are in the optimizer, and the learning rate applied.",
)
def check_rl_dead_policy(ctx):
    g = ctx.finite("grad_norm")
    kl = ctx.finite("kl") if ctx.has("kl") else None
    if not np.all(g.values == 0) or (kl is not None and len(kl) and not np.all(kl.values == 0)):
        return
    kl_text = (f" and all {len(kl)} finite KL values ({kl.key}) are" if kl is not None and len(kl)
               else " (the log has no KL) are")
    yield ctx.finding(
        "the policy does not move: the gradient norm is exactly 0 at every logged step",
        f"all {len(g)} finite gradient norms (steps {step(g.steps[0])}–{step(g.steps[-1])}){kl_text} exactly 0.0.",
        {"grad_norm_points": len(g), "kl_points": len(kl) if kl is not None else 0,
         "kl_key": kl.key if kl is not None else None},
        step=g.steps[0], line=g.lines[0],
    )
