"""Guardian with siblings: a run still training is held against the envelope of its
experiment's recent healthy runs at the same step; a run that trails them gets one WARN
with the step and the margin, never a stop unless ``stop_on`` names it; a healthy run and
a guardian without siblings get none."""

from __future__ import annotations

import numpy as np
import pytest

from trainproof.findings import Level
from trainproof.live.guardian import Guardian
from trainproof.rules.history import Trace


def _loss(n, floor, seed, rate=5.0):
    rng = np.random.default_rng(seed)
    x = np.arange(1, n + 1) / 300.0
    return (floor + (2.5 - floor) * np.exp(-rate * x)) * (1 + 0.02 * rng.standard_normal(n))


SIBLINGS = [Trace(f"seed{i}", np.arange(1.0, 301.0), _loss(300, 0.3, i), 300.0) for i in range(4)]


def _train(g: Guardian, loss: np.ndarray, every: int = 30) -> list:
    reports = []
    for i, v in enumerate(loss, start=1):
        g.add(float(i), {"loss": float(v)})
        if i % every == 0:
            reports.append(g.judge())
    return reports


@pytest.mark.slow
def test_a_run_behind_its_siblings_warns_once_with_the_step_and_no_stop():
    alerts = []
    g = Guardian(siblings=SIBLINGS, on_alert=alerts.append, meta={"max_steps": 300})
    reports = _train(g, _loss(150, 2.0, 9, rate=1.0))
    first = reports[0]  # step 30: 10% of the siblings' length, too early
    assert first.skipped["TP-BEHIND-ENVELOPE"].reason == "too_little_of_schedule"
    # Behind from step 60: held back until three judgements in a row have found it.
    assert [r.skipped["TP-BEHIND-ENVELOPE"].reason for r in reports[1:3]] == ["unconfirmed"] * 2
    assert "TP-BEHIND-ENVELOPE" in reports[3].ids()
    found = [f for f in reports[-1].findings if f.id == "TP-BEHIND-ENVELOPE"]
    assert len(found) == 1 and found[0].level is Level.WARN and found[0].step == 150
    assert "at step 150" in found[0].message and "margin" in found[0].evidence
    assert [a.id for a in alerts if a.id == "TP-BEHIND-ENVELOPE"] == ["TP-BEHIND-ENVELOPE"]  # announced once
    assert g.chosen_stops() == []
    assert reports[-1].verdict is Level.WARN


@pytest.mark.slow
def test_stop_on_makes_the_envelope_a_stop():
    g = Guardian(siblings=SIBLINGS, stop_on=["TP-BEHIND-ENVELOPE"], patience=2)
    _train(g, _loss(150, 2.0, 9, rate=1.0))
    assert [f.id for f in g.chosen_stops()] == ["TP-BEHIND-ENVELOPE"]


@pytest.mark.slow
def test_a_healthy_run_and_a_guardian_without_siblings_get_no_envelope_finding():
    g = Guardian(siblings=SIBLINGS, meta={"max_steps": 300})
    for rep in _train(g, _loss(300, 0.3, 11)):
        assert "TP-BEHIND-ENVELOPE" not in rep.ids()
    assert "TP-BEHIND-ENVELOPE" in g.report.ran
    plain = Guardian()
    rep = _train(plain, _loss(150, 2.0, 9, rate=1.0))[-1]
    assert "TP-BEHIND-ENVELOPE" not in rep.ids() + rep.ran + list(rep.skipped)


def test_a_history_of_too_few_runs_lists_the_envelope_skipped(tmp_path):
    g = Guardian(history=str(tmp_path / "history.db"), experiment="exp")
    for i, v in enumerate(_loss(40, 0.3, 1), start=1):
        g.add(float(i), {"loss": float(v)})
    rep = g.judge()
    assert (
        rep.skipped["TP-BEHIND-ENVELOPE"].reason == "too_few_runs"
        and "holds 0" in rep.skipped["TP-BEHIND-ENVELOPE"].detail
    )
