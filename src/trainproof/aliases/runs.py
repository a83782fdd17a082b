"""The column names of a W&B panel export: which run a column belongs to, and which columns
are a chart's band rather than a metric.

A W&B chart exported as CSV names each column ``"<run name> - <metric key>"`` (``Step``
has no run) and writes, beside each metric, the ``…__MIN`` / ``…__MAX`` band around the
smoothed line. These are facts about one export format that the alias table
(:mod:`.table`), the key words (:mod:`.vocabulary`), the loss fallback and the RunLog
builder all read, so they are written here once, in a module that imports nothing of the
package (every other alias module may import it).
"""

from __future__ import annotations

from collections.abc import Iterable

#: What separates the run name from the metric key in a W&B panel-export column.
RUN_SEPARATOR = " - "

#: W&B export companion columns: the band around a smoothed chart, never the metric
#: (matched case-insensitively at the end of a column name).
WANDB_BAND = ("__min", "__max")


def split_run(raw: str) -> tuple[str | None, str]:
    """``(run, metric)`` of a column: ``"<run> - train/loss"`` -> ``("<run>", "train/loss")``
    (split at the last separator, nothing stripped); ``(None, raw)`` for a column with no
    run part (``Step``, ``train/loss``)."""
    if RUN_SEPARATOR not in raw:
        return None, raw
    run, metric = raw.rsplit(RUN_SEPARATOR, 1)
    return run, metric


def is_band(raw: str) -> bool:
    """True when ``raw`` is a W&B band column (``…__MIN`` / ``…__MAX``, any case), which no
    alias and no loss word may claim."""
    return raw.lower().endswith(WANDB_BAND)


def run_of(raw: str) -> str | None:
    """The run a W&B panel-export column belongs to (``"<run> - train/loss"`` -> ``"<run>"``),
    or ``None`` for a column of no run (``Step``)."""
    run, _ = split_run(raw)
    return None if run is None else run.strip()


def runs_in(keys: Iterable[str]) -> dict[str, list[str]]:
    """Run name -> its columns (sorted), when ``keys`` hold the columns of two or more runs
    (a W&B panel export of several runs); ``{}`` for a log of one run."""
    runs: dict[str, list[str]] = {}
    for k in sorted(set(keys)):
        r = run_of(k)
        if r is not None:
            runs.setdefault(r, []).append(k)
    return runs if len(runs) >= 2 else {}
