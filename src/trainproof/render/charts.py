"""Chart data: the downsampled series the HTML report draws, attached to a report as a
separate step, and only where an HTML report is asked for (judging never computes them).

A report's :attr:`~trainproof.findings.Report.charts` is not part of the JSON document,
the text report or SARIF; without charts a report is a fraction of the size to send back
from a worker process or a cluster engine.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..findings import Report
    from ..runlog import RunLog

#: The series drawn in reports, in this order.
CHART_SERIES = ("loss", "eval_loss", "lr", "grad_norm")

#: The key of :attr:`Report.charts` that holds the band of the run's history (the recent
#: healthy runs of its experiment, :func:`trainproof.history.against.judge_against`), drawn
#: under the loss: ``{"steps", "lower", "median", "upper", "runs"}``. A judgement against a
#: history attaches it; attaching the run's own chart data keeps it.
HISTORY_BAND = "history_band"


def chart_series(run: RunLog) -> dict:
    """Downsampled copies of ``run``'s charted series (:data:`CHART_SERIES`, see
    :func:`trainproof.runlog.downsample`): name -> ``{"key": raw key, "steps": array,
    "values": array}``, for the series the run has with at least one point."""
    from ..runlog import downsample

    out = {}
    for name in CHART_SERIES:
        s = run.series.get(name)
        if s is not None and len(s):
            st, v = downsample(s.steps, s.values)
            out[name] = {"key": s.key, "steps": st, "values": v}
    return out


def with_charts(report: Report, run: RunLog) -> Report:
    """``report`` with the chart data of ``run`` (the RunLog it judged) attached: a new
    report; ``report`` itself is left as it was built."""
    kept = {HISTORY_BAND: report.charts[HISTORY_BAND]} if HISTORY_BAND in (report.charts or {}) else {}
    return replace(report, charts={**chart_series(run), **kept})
