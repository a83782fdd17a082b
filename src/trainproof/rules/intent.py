"""Declared intent against what happened: the run's scheduled end and the log's end."""

from __future__ import annotations

from ..findings import Level
from ._fmt import pct, step
from ._schedule import fraction_ran
from .registry import rule


@rule(
    "TP-RUN-INCOMPLETE",
    Level.INFO,
    "context",
    "the log ends well before the run's scheduled end",
    thresholds=["incomplete_share"],
    detects="The last logged step is below 95% of the scheduled end the log declares (HF max_steps; Coqui's epochs).",
    why="Context: a run killed early, or one still running, is judged on the part that exists; a FAIL's evidence says how much of the schedule a stop would have saved.",
    not_mean="It is not a judgement of the run: a run stopped on purpose (early stopping) looks the same.",
    causes="A run killed (out of memory, preempted, timed out), a run still in progress, early stopping.",
    try_="If it was killed, resume from its last checkpoint; if it is still running, judge it again later or watch it.",
)
def check_run_incomplete(ctx):
    frac, end, source = fraction_ran(ctx.run)
    if frac is None or frac >= 1 - ctx.th.incomplete_share:
        return
    last = ctx.run.step_range[1]
    what = (
        f"max_steps {step(end)}"
        if source == "max_steps"
        else f"{ctx.run.meta['num_train_epochs']} epochs (epoch {int(ctx.run.meta['last_epoch']) + 1} reached)"
    )
    yield ctx.finding(
        f"the log covers {pct(frac)} of the scheduled run: killed, stopped early, or still running",
        f"last logged step {step(last)}; the log declares {what}.",
        {"fraction": frac, "last_step": last, "scheduled_end": end, "source": source},
        step=last,
    )


@rule(
    "TP-RUN-CRASHED",
    Level.WARN,
    "context",
    "the capture ends with the run's crash: a traceback or a kill after its last logged step",
    least_evidence="A console capture whose last Python traceback (ending in its exception line), or a 'Killed' line, comes after every record the run is judged on.",
    detects="A console capture in which a Python traceback, ended by its exception line (RuntimeError: CUDA out of memory…), or the shell's 'Killed', comes after the last record of the judged run: the script died there, and the log says no more of the run.",
    why="The verdict judges the part that exists; a run that crashed did not finish, whatever its curve says, and its last checkpoint is where it can resume.",
    not_mean="It is not a judgement of the curve. A traceback followed by more training records (an exception caught and printed, a restart) is not this.",
    causes="Out of memory on the GPU (a longer batch, an evaluation at a larger size), the out-of-memory killer, a data error in one batch, a failed checkpoint save, a preempted or timed-out job.",
    try_="Read the exception; resume from the last checkpoint with the cause fixed (a smaller batch or gradient accumulation for memory).",
)
def check_run_crashed(ctx):
    crash = ctx.run.meta.get("crash")
    if not isinstance(crash, dict):
        return
    last = ctx.run.step_range[1] if ctx.run.step_range else None
    after = f" after step {step(last)}" if last is not None else ""
    yield ctx.finding(
        f"the run crashed{after}: {crash.get('error', '')[:120]}",
        f"the capture's last traceback starts at line {crash.get('line')}, after the last logged record"
        + (f" (step {step(last)})" if last is not None else "")
        + f": {crash.get('error', '')}.",
        {"line": crash.get("line"), "error": crash.get("error"), "last_step": last},
        step=last,
        line=crash.get("line"),
    )
