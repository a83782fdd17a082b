"""Rules on speed: step-time cliffs, data-loader-bound runs, throughput and GPU context."""

from __future__ import annotations

import numpy as np

from ..findings import Level
from ._fmt import num, pct, step, times
from ._stats import common_steps, median
from .registry import Need, rule


@rule(
    "TP-STEP-CLIFF",
    Level.WARN,
    "speed",
    "steps became much slower late in the run",
    needs=[Need("step_time", "step_cliff_min_points")],
    thresholds=["step_cliff_factor", "step_cliff_tail_share", "step_cliff_min_points"],
    detects="The median step time of the last {step_cliff_tail_share:.0%} of the run is more than {step_cliff_factor:g}x that of the first half (at least {step_cliff_min_points} points).",
    why="A run that slows down threefold costs three times the GPU hours for the rest of its steps.",
    not_mean="It does not judge the model; the loss may be fine.",
    causes="A data loader slowing down (growing file reads, memory pressure, swapping), thermal throttling, a checkpoint or eval hook running inside the step, sequence lengths growing with curriculum.",
    try_="Profile one slow step; compare loader time with step time; check host memory and disk I/O at the cliff.",
)
def check_step_cliff(ctx):
    s = ctx.finite("step_time")
    n = len(s)
    head = s.values[: n // 2]
    tail_n = max(1, int(round(n * ctx.th.step_cliff_tail_share)))
    tail = s.values[-tail_n:]
    h, t = float(median(head)), float(median(tail))
    if h <= 0 or t <= ctx.th.step_cliff_factor * h:
        return
    # Onset: the first point from which at least 80% of the remaining steps are slow
    # (above the geometric middle of the two levels).
    slow = s.values > (h * t) ** 0.5
    suffix_share = np.cumsum(slow[::-1])[::-1] / np.arange(n, 0, -1)
    cand = np.flatnonzero(slow & (suffix_share >= 0.8))
    at = int(cand[0]) if cand.size else n - tail_n
    data = {"head_median": h, "tail_median": t, "ratio": t / h, "tail_points": tail_n, "onset_step": s.steps[at]}
    why = ""
    if ctx.has("loader_time"):
        lt = ctx.finite("loader_time")
        if len(lt) >= 2:
            lh = float(median(lt.values[lt.steps < s.steps[n // 2]])) if np.any(lt.steps < s.steps[n // 2]) else 0.0
            ltail = (
                float(median(lt.values[lt.steps >= s.steps[-tail_n]])) if np.any(lt.steps >= s.steps[-tail_n]) else 0.0
            )
            grew = t - h
            share = (ltail - lh) / grew if grew > 0 else 0.0
            data.update(loader_head_median=lh, loader_tail_median=ltail, loader_share_of_increase=share)
            why = (
                f" Data loading accounts for {pct(min(max(share, 0.0), 1.0))} of the increase "
                f"(loader time {num(lh)} -> {num(ltail)})."
            )
    yield ctx.finding(
        f"step time grew {times(t / h, 1)} from step {step(s.steps[at])}",
        f"median step time of the last {tail_n} points (from step {step(s.steps[-tail_n])}) is {num(t)}, "
        f"{times(t / h, 1)} the first half's median {num(h)}; threshold {num(ctx.th.step_cliff_factor)}x. Steps are slow "
        f"from step {step(s.steps[at])} on.{why}",
        data,
        step=s.steps[at],
        line=s.lines[at],
    )


def _loader_shares(ctx):
    """loader_time / step_time at the steps that log both (step_time > 0)."""
    lt = ctx.finite("loader_time")
    st = ctx.finite("step_time")
    li, si = common_steps(lt.steps, st.steps)
    steps, loader, step_time, lines = st.steps[si], lt.values[li], st.values[si], st.lines[si]
    ok = step_time > 0
    if not ok.all():
        steps, loader, step_time, lines = steps[ok], loader[ok], step_time[ok], lines[ok]
    return steps, loader / step_time, lines


@rule(
    "TP-LOADER-BOUND",
    Level.WARN,
    "speed",
    "data loading takes more than half of each step",
    needs=[Need("loader_time", "min_value_points"), Need("step_time", "min_value_points")],
    thresholds=["loader_bound_share", "min_value_points", "step_cliff_tail_share"],
    detects="The median of loader_time / step_time over the steps that log both is above {loader_bound_share}, over the whole run or over its last {step_cliff_tail_share:.0%} (a loader that became the bottleneck).",
    why="The accelerator waits on the input pipeline for most of each step: more GPUs will not make the run faster.",
    not_mean="It does not judge the model or the loss.",
    causes="Too few data-loader workers, heavy per-sample preprocessing on the CPU, slow storage, no pinned memory or prefetching.",
    try_="Raise num_workers, pre-tokenize or cache the dataset, enable pin_memory and persistent_workers.",
)
def check_loader_bound(ctx):
    steps, ratio, lines = _loader_shares(ctx)
    n = ratio.size
    if n < ctx.th.min_value_points:
        return
    th = ctx.th.loader_bound_share
    med = float(median(ratio))
    tail_n = max(1, int(round(n * ctx.th.step_cliff_tail_share)))
    head_med = float(median(ratio[: max(1, n // 2)]))
    tail_med = float(median(ratio[-tail_n:]))
    if med > th:
        yield ctx.finding(
            f"data loading takes {pct(med)} of each step",
            f"over {n} steps that log both, the median loader_time/step_time is {num(med)} (threshold {num(th)}).",
            {"median_share": med, "points": n, "head_share": head_med, "tail_share": tail_med},
        )
    elif tail_med > th:
        yield ctx.finding(
            f"data loading became the bottleneck: {pct(tail_med)} of each step at the end, {pct(head_med)} before",
            f"median loader_time/step_time {num(head_med)} over the first half, {num(tail_med)} over the last "
            f"{tail_n} steps that log both (from step {step(steps[-tail_n])}); threshold {num(th)}.",
            {"median_share": med, "points": n, "head_share": head_med, "tail_share": tail_med},
            step=steps[-tail_n],
            line=lines[-tail_n],
        )


@rule(
    "TP-THROUGHPUT",
    Level.INFO,
    "context",
    "throughput of the run (context)",
    needs=[Need(("throughput", "step_time"), 1)],
    detects="Reports the median throughput or step time the log records.",
    why="Context for reading the other findings and for comparing runs; never part of the verdict.",
    not_mean="It is not a judgement: there is no threshold.",
    causes="Not applicable: this is context.",
    try_="Compare it with a known-good run of the same model and hardware.",
)
def check_throughput(ctx):
    name = "throughput" if ctx.has("throughput") else "step_time"
    s = ctx.finite(name)
    if not len(s):
        return
    med = float(median(s.values))
    what = f"median throughput {num(med)}/s ({s.key})" if name == "throughput" else f"median step time {num(med)} s"
    yield ctx.finding(what, f"over {len(s)} logged points.", {"series": s.key, "median": med, "points": len(s)})


@rule(
    "TP-GPU-UTIL",
    Level.INFO,
    "context",
    "GPU utilisation of the run (context)",
    needs=[Need("gpu_util", 1)],
    detects="Reports the median and minimum GPU utilisation the log records.",
    why="Context: low utilisation with a healthy loss means the run is paying for idle accelerators.",
    not_mean="It is not a judgement: there is no threshold.",
    causes="Not applicable: this is context.",
    try_="If utilisation is low, check TP-LOADER-BOUND and the batch size.",
)
def check_gpu_util(ctx):
    s = ctx.finite("gpu_util")
    if not len(s):
        return
    med, lo = float(median(s.values)), float(np.min(s.values))
    yield ctx.finding(
        f"median GPU utilisation {num(med)}",
        f"minimum {num(lo)} over {len(s)} points.",
        {"median": med, "min": lo, "points": len(s)},
    )
