"""A run judged against the recent healthy runs of its experiment.

The one call the recording paths make (``doctor --history``, ``judge --history``, the
monitor and the callbacks at the end of a run): :func:`judge_against` takes a run's
RunLog, its own report and the records the store holds of its experiment, and returns the
report with the history's findings merged in (``TP-BEHIND-HISTORY``, ``TP-HISTORY-PASS``,
or the history rules skipped with the reason). A run still training is held against the
envelope of the same records (:func:`traces`, given to the live
:class:`~trainproof.live.guardian.Guardian`).

The judging itself is :mod:`trainproof.rules.history`, over arrays; this module only turns
records and RunLogs into its :class:`~trainproof.rules.history.Trace` curves, the run's
own curve downsampled the way its record's is (:meth:`~.record.Curve.of`), so both sides
of the comparison are read from curves of the same resolution.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from ..findings import Report
from ..rules.compare import merge_comparison
from ..rules.history import Band, Trace, band, judge_history
from ..rules.registry import canonical_id
from ..rules.thresholds import DEFAULT, Thresholds
from ..runlog import RunLog
from .record import Curve, RunRecord


def record_name(record: RunRecord) -> str:
    """How findings name a stored run: its run name and its id in the store (``seed0 (#12)``)."""
    return record.run if record.id is None else f"{record.run} (#{record.id})"


def trace_of(record: RunRecord) -> Trace | None:
    """The loss curve of a stored run, with its schedule length (its declared ``max_steps``,
    else its last step: a recorded run has ended); ``None`` when it kept no loss curve."""
    curve = record.curves.get("loss")
    if curve is None or len(curve) == 0:
        return None
    end = record.summary.get("max_steps")
    if not isinstance(end, (int, float)) or end <= 0:
        end = float(curve.steps[-1]) if curve.steps.size else None
    return Trace(record_name(record), curve.steps, curve.values, float(end) if end else None)


def traces(records: Iterable[RunRecord], *, exclude: str | None = None) -> list[Trace]:
    """The loss curves of the healthy runs among ``records`` (judged, no FAIL), in their
    order, leaving out the run recorded from ``exclude`` (a source: the run judged, should
    an earlier judgement of it be in the store) and runs that kept no loss curve."""
    out = []
    for r in records:
        if not r.healthy or (exclude is not None and r.source == exclude):
            continue
        t = trace_of(r)
        if t is not None:
            out.append(t)
    return out


def run_trace(runlog: RunLog, *, finished: bool = True) -> Trace | None:
    """The loss curve of ``runlog`` as its record would keep it (:meth:`Curve.of`), with its
    schedule length: the declared one, else (``finished``) its last step; ``None`` without a
    loss series."""
    from ..rules._schedule import scheduled_end

    s = runlog.get("loss")
    if s is None or len(s) == 0:
        return None
    c = Curve.of(s.steps, s.values)
    end, _ = scheduled_end(runlog)
    if end is None and finished and c.steps.size:
        end = float(c.steps[-1])
    return Trace(str(runlog.path), c.steps, c.values, end)


def judge_against(
    runlog: RunLog,
    report: Report,
    siblings: Sequence[RunRecord],
    thresholds: Thresholds = DEFAULT,
    mute: Iterable[str] = (),
    *,
    source: str | None = None,
    chart: bool = False,
) -> Report:
    """``report`` (the run's own) with the run judged against ``siblings``, the records of
    its experiment the store holds (newest first, as :meth:`Store.runs` gives them; the
    caller takes the last ``hist_last_runs``). Only the healthy ones are used (a FAIL in the
    history is no reference), and not the run itself (``source``: the source the run is
    recorded under, should an earlier judgement of it be there).

    ``chart``: also attach the band of the siblings at the run's steps for the HTML report
    (:data:`trainproof.render.charts.HISTORY_BAND`; only where an HTML report is asked for,
    as the run's own chart data).

    Returns:
        A new report (``report`` is left as it was): the history findings merged in by
        :func:`trainproof.rules.compare.merge_comparison`, their levels in
        ``meta["history"]``. A run without a loss, or with fewer than ``hist_min_runs``
        healthy siblings, gets the history rules skipped with the reason and no finding.
    """
    mute = {canonical_id(m) for m in mute}
    me = run_trace(runlog)
    if me is None:
        return report
    runs = traces(siblings, exclude=source)
    objective = report.meta.get("objective") or "supervised"
    findings, skipped, ran, metrics = judge_history(me, runs, thresholds, mute, objective)
    merged = merge_comparison(report, findings, skipped, ran, metrics, key="history")
    if chart:
        b = band(runs, me.steps, thresholds)
        if b is not None:
            from ..render.charts import HISTORY_BAND

            drawn = {"steps": b.steps, "lower": b.lower, "median": b.median, "upper": b.upper, "runs": list(b.runs)}
            merged = replace(merged, charts={**(merged.charts or {}), HISTORY_BAND: drawn})
    return merged


def envelope(siblings: Sequence[RunRecord], steps, thresholds: Thresholds = DEFAULT) -> Band | None:
    """The band of the healthy runs among ``siblings`` at ``steps`` (a float array (n,)):
    their median and the edges a run may reach (:func:`trainproof.rules.history.band`), for
    the HTML chart; ``None`` with fewer than ``hist_min_runs`` of them."""
    return band(traces(siblings), steps, thresholds)
