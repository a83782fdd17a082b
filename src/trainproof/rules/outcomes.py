"""Outcome ids: emitted by the engine or the CLI rather than by a check."""

from __future__ import annotations

from ..findings import Level
from .registry import outcome

outcome(
    "TP-PASS",
    Level.PASS,
    "outcome",
    "no check fired",
    detects="Every check that could run found nothing; the finding lists the checks that ran and those skipped, with the reason.",
    why="A PASS is only as strong as the checks behind it, so it says which ones they were.",
    not_mean="It does not mean the run learned the right thing: a run on shuffled labels can look healthy on its own curve. Compare it against a known-good baseline.",
    causes="Not applicable.",
    try_="Read the skipped checks: a check skipped for lack of data is not a check passed.",
)
outcome(
    "TP-NOT-CHECKED",
    Level.NOT_CHECKED,
    "outcome",
    "no trend check could run",
    detects="The log was read, but none of the checks that judge the loss curve (flat, divergence, dead run) had enough data.",
    why="Without them a PASS would be a claim with nothing behind it; the exit code is 2.",
    not_mean="It does not mean the run is broken; it means the log is too short or lacks the series.",
    causes="A run with a handful of logged points, a log of evaluation rows only, a loss that is non-positive (ratios undefined).",
    try_="Log more often (logging_steps), or wait for more of the run; map the loss column with --map if it was not recognised.",
)
outcome(
    "TP-NO-LOSS",
    Level.NOT_CHECKED,
    "outcome",
    "no loss series in the log",
    detects="The log has records but no series that maps to the train loss or the eval loss.",
    why="Every shape rule judges the loss; without it the run cannot be judged (exit 2).",
    not_mean="It does not mean the run has no loss, only that no column was recognised as one.",
    causes="A custom metric name (train_mse, objective), a log of progress rows only, the wrong file.",
    try_="Name the column: --map loss=COLUMN (the finding lists the metrics seen).",
)
outcome(
    "TP-NO-RECORDS",
    Level.NOT_CHECKED,
    "outcome",
    "no records in the log",
    detects="The file was recognised as a log format but holds no logged rows with numbers.",
    why="There is nothing to judge (exit 2).",
    not_mean="It does not mean the run failed; it may not have logged yet.",
    causes="A run that crashed before its first log, an empty log_history, a header-only CSV.",
    try_="Check the run's logging interval and that the log was written to this file.",
)
outcome(
    "TP-READ-ERROR",
    Level.NOT_CHECKED,
    "outcome",
    "the input could not be read",
    detects="The file is missing, unreadable, empty, not a recognised format, or a Git LFS pointer.",
    why="A read failure is never a verdict about the run: the exit code is 2, with the reason.",
    not_mean="It says nothing about the run itself.",
    causes="A wrong path, a permission problem, a file that is not a training log, an LFS pointer not yet fetched.",
    try_="Check the path, fetch LFS files (git lfs pull), or force a format with --format.",
    source="reader",
)
outcome(
    "TP-STALL",
    Level.WARN,
    "outcome",
    "the log has not grown for the stall timeout",
    detects="`trainproof watch --stall-timeout S`: the log did not grow for S seconds while being watched.",
    why="A run that stops logging is hung (a deadlock, a stuck data loader, a dead node) or was killed; its GPUs may still be reserved.",
    not_mean="It does not judge the run's curve; a long evaluation or checkpoint save can also pause logging.",
    causes="A hung collective (NCCL) or data loader, a crashed process, a full disk, an evaluation or save longer than the timeout.",
    try_="Check the process and the node (py-spy dump, nvidia-smi); raise --stall-timeout above the longest evaluation.",
    source="live",
)
