"""Guardian.affordable: judging is rationed to a share of the wall time, and the first
judgement (which pays the start-up costs) is never charged."""

from __future__ import annotations

import pytest

from trainproof.live import guardian as G


@pytest.fixture
def slow_judge(monkeypatch):
    """Every judgement takes ``cost[0]`` seconds of a fake clock."""
    clock = [1000.0]
    cost = [0.0]
    real = G.judge_runlog

    def perf_counter():
        return clock[0]

    def judge(run, thresholds, mute, **live):
        clock[0] += cost[0]
        return real(run, thresholds, mute, **live)

    monkeypatch.setattr(G.time, "perf_counter", perf_counter)
    monkeypatch.setattr(G, "judge_runlog", judge)
    return clock, cost


def _guardian() -> G.Guardian:
    g = G.Guardian()
    for i in range(20):
        g.add(float(i), {"loss": 2.0 - 0.05 * i})
    return g


def test_the_first_judgement_is_never_charged(slow_judge):
    clock, cost = slow_judge
    g = _guardian()
    cost[0] = 0.3  # importing the rules on a cold process
    g.judge()
    assert g.judge_seconds == 0.0 and g.affordable()
    g.judge()  # the same cost again is the judging's own
    assert g.judge_seconds == pytest.approx(0.3)
    assert not g.affordable()
    clock[0] += G.JUDGE_COST_RATIO * 0.3 - 0.01
    assert not g.affordable()
    clock[0] += 0.02
    assert g.affordable()


def test_cheap_judgements_are_never_rationed(slow_judge):
    clock, cost = slow_judge
    g = _guardian()
    cost[0] = G.JUDGE_FREE_SECONDS / 2
    for _ in range(3):
        g.judge()
        assert g.affordable()
