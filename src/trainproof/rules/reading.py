"""What the reader could not use: reported, so a verdict never rests silently on part of a log."""

from __future__ import annotations

from ..findings import Level
from ._fmt import step
from .registry import rule


@rule(
    "TP-DATA-DROPPED",
    Level.INFO,
    "reader",
    "part of the log could not be read and was left out",
    source="reader",
    detects="The reader skipped part of the input: a torn last record or line (a run killed mid-write), lines that are not records, table rows whose columns cannot be known, a damaged event file of a run.",
    why="The verdict is given on what was read; this says what was not, so a PASS is never built on data that was silently dropped.",
    not_mean="It is not a finding about the run. A torn tail is normal for a log that is still being written.",
    causes="A run killed while writing, a log still being written, two writers appending to one file, a resumed Keras CSVLogger that changed its columns without a new header.",
    try_="Read the dropped parts listed in the evidence; if they matter, fix the log (or judge it again once the run has finished writing).",
)
def check_data_dropped(ctx):
    drops = ctx.run.meta.get("dropped") or []
    if not drops:
        return
    yield ctx.finding(
        f"the reader left out part of the log ({len(drops)} place(s))",
        "; ".join(drops),
        {"dropped": list(drops)},
    )


@rule(
    "TP-LOSS-STOPPED",
    Level.WARN,
    "reader",
    "the loss stops being logged while the log goes on",
    source="reader",
    detects="The train loss has no value after some step while more records follow than the loss ever went "
    "without (its largest gap) and more than four of its usual logging intervals: the rest of the run is "
    "not judged on its loss. An empty cell or a null is absent, never a NaN, so a loss written empty to the "
    "end lands here and not in TP-NAN.",
    why="The verdict rests on the part of the log that holds the loss; this says where that part ends, so a "
    "PASS is never given silently on the first part of a run.",
    not_mean="It does not mean the loss was NaN: a serializer that writes NaN as an empty cell or null "
    "(pandas, orjson, JSON.stringify) and a logger that stopped logging the loss look the same, and the "
    "log cannot tell them apart. Final rows of another kind (evaluation, test, a summary) are not a stop.",
    causes="A loss that turned NaN written by a strict serializer, a logging callback removed or failing "
    "after a resume, a run that went on evaluating without training.",
    try_="Look at the run after the step in the evidence: log the loss with a serializer that writes NaN as "
    "NaN, or check why the training loop stopped reporting it.",
)
def check_loss_stopped(ctx):
    stop = ctx.run.meta.get("loss_stopped")
    if not stop:
        return
    empty = f", {stop['held_empty']} of them holding it empty or null" if stop.get("held_empty") else ""
    yield ctx.finding(
        f"the loss stops being logged at step {step(stop['step'])} while the log goes on",
        f"the last loss ({stop['key']}) is at step {step(stop['step'])} (line {stop['line']}); "
        f"{stop['records_after']} more records follow without it{empty}, to step {step(stop['last_step'])}. "
        "The run after that step is not judged on its loss.",
        dict(stop),
        step=stop["step"],
        line=stop["line"],
    )
