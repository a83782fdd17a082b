"""The HTML report of a run judged against its history: the run's loss drawn over the
shaded band of the recent healthy runs of its experiment, their median dashed; a report
judged without a history has no band, and attaching the run's chart data keeps it."""

from __future__ import annotations

import re

import numpy as np
import pytest

from trainproof.history.against import judge_against
from trainproof.history.record import Curve, RunRecord
from trainproof.render.charts import HISTORY_BAND, with_charts
from trainproof.render.html import render_html
from trainproof.rules.engine import judge_runlog

from conftest import make_run


def _record(i: int, floor: float) -> RunRecord:
    steps = np.arange(10.0, 1010.0, 10.0)
    loss = floor + (2.5 - floor) * np.exp(-steps / 200)
    return RunRecord(
        "exp", f"seed<{i}>", f"/r/{i}", "PASS", (), {"max_steps": 1000.0}, {"loss": Curve(steps, loss)}, id=i
    )


@pytest.mark.slow
def test_the_loss_is_drawn_over_the_band_of_the_recent_runs():
    run = make_run(loss=list(1.9 + 0.6 * np.exp(-np.arange(10.0, 1010.0, 10.0) / 200)))
    history = [_record(i, 0.3 + 0.02 * i) for i in range(1, 4)]
    rep = with_charts(judge_against(run, judge_runlog(run), history, chart=True), run)
    band = rep.charts[HISTORY_BAND]
    assert band["runs"] == ["seed<1> (#1)", "seed<2> (#2)", "seed<3> (#3)"]
    assert np.all(band["upper"] > band["median"]) and band["steps"].size == 100
    page = render_html([rep])
    loss_chart = re.search(r'<svg[^>]*data-series="loss".*?</svg>', page, re.S).group(0)
    assert '<g class="band" data-band="the band of 3 recent healthy runs">' in loss_chart
    assert loss_chart.index('class="band"') < loss_chart.index('class="series"')  # under the run's line
    assert "Shaded: the band of the 3 recent healthy runs" in page and "seed&lt;1&gt; (#1)" in page
    assert page.count('class="band"') == 1  # the loss chart only


def test_no_band_without_a_history_or_without_a_chart():
    run = make_run(loss=list(np.linspace(2, 1, 50)))
    assert 'class="band"' not in render_html([with_charts(judge_runlog(run), run)])
    rep = judge_against(run, judge_runlog(run), [_record(i, 0.3) for i in range(1, 4)])
    assert HISTORY_BAND not in rep.charts
