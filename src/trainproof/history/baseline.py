"""A compare baseline taken from the run history: ``compare --against best|last:N|RUN``.

The history keeps downsampled curves (:data:`~trainproof.history.record.CURVE_POINTS`
points a metric), so the baseline is rebuilt as a RunLog from its record's curves
(:func:`~trainproof.history.record.runlog_of`): its levels and floor are the stored
extremes' and medians', within a point or two of the full log's.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from .record import RunRecord
from .store import HistoryError, RunNotFound, Store, shown


@dataclass(frozen=True)
class Against:
    """A parsed ``--against``: ``kind`` is ``best``, ``last`` (with ``n`` runs) or ``run``
    (with ``run``: a run's name, source or ``#id``)."""

    kind: str
    n: int = 1
    run: str | None = None

    @classmethod
    def parse(cls, spec: str) -> Against:
        """``best``, ``last`` (= ``last:1``), ``last:N`` (N >= 1), else a run's name.

        Raises:
            ValueError: ``last:`` with something other than a whole number from 1.
        """
        text = spec.strip()
        if text == "best":
            return cls("best")
        if text == "last" or text.startswith("last:"):
            raw = text[5:] if text.startswith("last:") else "1"
            if not raw.isdigit() or int(raw) < 1:
                raise ValueError(f"--against {spec}: last:N needs a whole number of runs N from 1")
            return cls("last", int(raw))
        if not text:
            raise ValueError("--against needs best, last:N or a recorded run's name")
        return cls("run", run=text)

    def __str__(self) -> str:
        if self.kind == "last":
            return f"last:{self.n}"
        return self.run if self.kind == "run" else self.kind


def floor_of(record: RunRecord) -> float | None:
    """The level a run reached: its best eval loss where it logged one, else its best
    training loss (:func:`~trainproof.history.record.summarize`); ``None`` without either."""
    for key in ("eval_loss_best", "loss_best"):
        v = record.summary.get(key)
        if isinstance(v, (int, float)):
            return float(v)
    return None


def _named(store: Store, experiment: str, name: str) -> RunRecord:
    """The run ``--against NAME`` names (see :func:`pick`)."""
    from .record import source_of

    if name.startswith("#") and name[1:].isdigit():
        rec = store.get(name)
    else:
        try:
            rec = store.get(name, experiment=experiment)
        except RunNotFound as by_name:
            try:
                rec = store.get(source_of(name), experiment=experiment)  # a path, relative here
            except RunNotFound:
                raise by_name from None
    if rec.verdict not in ("PASS", "WARN"):
        raise HistoryError(
            f"--against {name}: that run (#{rec.id}, {rec.run}) was judged {rec.verdict}, not a known-good baseline"
        )
    return rec


def pick(store: Store, experiment: str, against: Against, exclude: tuple[str, str] | None = None) -> RunRecord:
    """The baseline ``against`` names in ``experiment`` of ``store``; never the run
    ``exclude`` (its ``(source, name)``: a run is not its own baseline).

    - ``best``: of the experiment's healthy runs (PASS or WARN), the one with the lowest
      floor (:func:`floor_of`; eval loss compared with eval loss: where some runs lack
      one, every run's training loss), the newest of equals;
    - ``last:N``: of its N most recent healthy runs, the one whose floor is their median
      (the lower middle of an even N): a typical recent run, not the luckiest or the
      unluckiest of them;
    - a run: the newest record of that name or source (a path as given or made absolute)
      in the experiment, or the record ``#id`` in any; it must have been judged PASS or
      WARN (a known-good baseline).

    Raises:
        HistoryError: no such run, a named run judged FAIL (or not judged), or no healthy
            run of the experiment to take (the message
            names the experiment and the store); or the store cannot be read.
    """
    if against.kind == "run":
        rec = _named(store, experiment, against.run)
        if exclude is not None and (rec.source, rec.run) == exclude:
            raise HistoryError(f"--against {against.run}: that is the run being compared")
        return rec
    from .recording import references

    if against.kind == "last":
        runs = references(store, experiment, against.n, exclude=exclude)
    else:
        runs = [r for r in store.runs(experiment, healthy_only=True) if (r.source, r.run) != exclude]
    runs = [r for r in runs if floor_of(r) is not None]
    if not runs:
        raise HistoryError(
            f"history {shown(store.location)}: no healthy run with a loss recorded in experiment {experiment} "
            f"to compare with (--against {against})"
        )
    key = (
        "eval_loss_best"
        if all(isinstance(r.summary.get("eval_loss_best"), (int, float)) for r in runs)
        else "loss_best"
    )
    level = {id(r): float(r.summary[key]) for r in runs}
    if against.kind == "best":
        # runs are newest first and min() keeps the first of equals
        return min(runs, key=lambda r: level[id(r)])
    middle = statistics.median_low([level[id(r)] for r in runs])
    return next(r for r in runs if level[id(r)] == middle)


__all__ = ["Against", "floor_of", "pick"]
