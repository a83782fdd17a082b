"""Rules on speed: step-time cliffs, data-loader-bound runs, throughput and GPU context."""
from __future__ import annotations

import numpy as np

from ..findings import Level
from ._fmt import num, pct, step
from .registry import Need, rule


@rule(
    "TP-STEP-CLIFF", Level.WARN, "speed", "steps became much slower late in the run",
    needs=[Need("step_time", "step_cliff_min_points")],
    thresholds=["step_cliff_factor", "step_cliff_tail_share", "step_cliff_min_points"],
    detects="The median step time of the last 20% of the run is more than 3x that of the first half (at least 10 points).",
    why="A run that slows down threefold costs three times the GPU hours for the rest of its steps.",
    not_mean="It does not judge the model; the loss may be fine.",
    causes="A data loader slowing down (growing file reads, memory pressure, swapping), thermal throttling, a checkpoint or eval hook running inside the step, sequence lengths growing with curriculum.",
    try_="Profile one slow step; compare loader time with step time; check host memory and disk I/O at the cliff.",
)
def check_step_cliff(ctx):
    s = ctx.series("step_time").finite()
    n = len(s)
    head = s.values[: n // 2]
    tail_n = max(1, int(round(n * ctx.th.step_cliff_tail_share)))
    tail = s.values[-tail_n:]
    h, t = float(np.median(head)), float(np.median(tail))
    if h <= 0 or t <= ctx.th.step_cliff_factor * h:
        return
    yield ctx.finding(
        f"step time grew {t / h:.1f}x late in the run",
        f"median step time of the last {tail_n} points (from step {step(s.steps[-tail_n])}) is {num(t)}, "
        f"{t / h:.1f}x the first half's median {num(h)}; threshold {num(ctx.th.step_cliff_factor)}x.",
        {"head_median": h, "tail_median": t, "ratio": t / h, "tail_points": tail_n},
        step=s.steps[-tail_n], line=s.lines[-tail_n],
    )


@rule(
    "TP-LOADER-BOUND", Level.WARN, "speed", "data loading takes more than half of each step",
    needs=[Need("loader_time", "min_value_points"), Need("step_time", "min_value_points")],
    thresholds=["loader_bound_share", "min_value_points"],
    detects="The median of loader_time / step_time over the steps that log both is above 0.5.",
    why="The accelerator waits on the input pipeline for most of each step: more GPUs will not make the run faster.",
    not_mean="It does not judge the model or the loss.",
    causes="Too few data-loader workers, heavy per-sample preprocessing on the CPU, slow storage, no pinned memory or prefetching.",
    try_="Raise num_workers, pre-tokenize or cache the dataset, enable pin_memory and persistent_workers.",
)
def check_loader_bound(ctx):
    lt = ctx.series("loader_time").finite()
    st = ctx.series("step_time").finite()
    common, li, si = np.intersect1d(lt.steps, st.steps, return_indices=True)
    ok = st.values[si] > 0
    if ok.sum() < ctx.th.min_value_points:
        return
    ratio = lt.values[li][ok] / st.values[si][ok]
    med = float(np.median(ratio))
    if med <= ctx.th.loader_bound_share:
        return
    yield ctx.finding(
        f"data loading takes {pct(med)} of each step",
        f"over {int(ok.sum())} steps that log both, the median loader_time/step_time is {num(med)} "
        f"(threshold {num(ctx.th.loader_bound_share)}).",
        {"median_share": med, "points": int(ok.sum())},
    )


@rule(
    "TP-THROUGHPUT", Level.INFO, "context", "throughput of the run (context)",
    needs=[Need(("throughput", "step_time"), 1)],
    detects="Reports the median throughput or step time the log records.",
    why="Context for reading the other findings and for comparing runs; never part of the verdict.",
    not_mean="It is not a judgement: there is no threshold.",
    causes="Not applicable: this is context.",
    try_="Compare it with a known-good run of the same model and hardware.",
)
def check_throughput(ctx):
    name = "throughput" if ctx.has("throughput") else "step_time"
    s = ctx.series(name).finite()
    if not len(s):
        return
    med = float(np.median(s.values))
    what = f"median throughput {num(med)}/s ({s.key})" if name == "throughput" else f"median step time {num(med)} s"
    yield ctx.finding(what, f"over {len(s)} logged points.", {"series": s.key, "median": med, "points": len(s)})


@rule(
    "TP-GPU-UTIL", Level.INFO, "context", "GPU utilisation of the run (context)",
    needs=[Need("gpu_util", 1)],
    detects="Reports the median and minimum GPU utilisation the log records.",
    why="Context: low utilisation with a healthy loss means the run is paying for idle accelerators.",
    not_mean="It is not a judgement: there is no threshold.",
    causes="Not applicable: this is context.",
    try_="If utilisation is low, check TP-LOADER-BOUND and the batch size.",
)
def check_gpu_util(ctx):
    s = ctx.series("gpu_util").finite()
    if not len(s):
        return
    med, lo = float(np.median(s.values)), float(np.min(s.values))
    yield ctx.finding(f"median GPU utilisation {num(med)}", f"minimum {num(lo)} over {len(s)} points.",
                      {"median": med, "min": lo, "points": len(s)})
