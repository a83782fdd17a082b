"""What the reader could not use: reported, so a verdict never rests silently on part of a log."""

from __future__ import annotations

from ..findings import Level
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
