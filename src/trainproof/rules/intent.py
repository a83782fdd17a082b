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
