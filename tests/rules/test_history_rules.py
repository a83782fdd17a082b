"""The history rules over generated curves: a healthy sweep (seeds, noise levels, lengths,
small learning-rate changes, a restart from a checkpoint) stays silent against its siblings;
a shifted floor, a run that barely learns and a run that trails its siblings while it trains
are caught, with the runs held against named in the evidence."""

from __future__ import annotations

import numpy as np
import pytest

from trainproof.findings import Level
from trainproof.rules.history import Trace, band, envelope_finding, judge_history
from trainproof.rules.thresholds import DEFAULT

from conftest import first_cases_fast, first_seed_fast


def curve(
    name="run",
    n=300,
    start=2.5,
    floor=0.3,
    rate=5.0,
    noise=0.02,
    seed=0,
    per="step",
    first=1,
    end=None,
):
    """A loss falling from ``start`` to ``floor`` exponentially, at ``rate`` per 300 steps
    (``per="step"``: a run that learns per step) or per its own length (``per="fraction"``:
    a schedule that stretches with the run, as a cosine decay does), with relative noise."""
    rng = np.random.default_rng(seed)
    steps = np.arange(first, n + 1, dtype=float)
    x = steps / (300.0 if per == "step" else n)
    values = (floor + (start - floor) * np.exp(-rate * x)) * (1 + noise * rng.standard_normal(steps.size))
    return Trace(name, steps, values, float(end or n))


def siblings(k=5, **kw):
    return [curve(f"seed{i}", seed=i, **kw) for i in range(k)]


def history_ids(run, runs, th=DEFAULT):
    findings, skipped, ran, metrics = judge_history(run, runs, th)
    return [f.id for f in findings], skipped, findings


#: (label, run's curve arguments, siblings' curve arguments) of healthy sweeps.
HEALTHY = [
    ("another seed", dict(seed=11), {}),
    ("low noise", dict(seed=12, noise=0.005), dict(noise=0.005)),
    ("high noise", dict(seed=13, noise=0.15), dict(noise=0.15)),
    ("shorter run", dict(seed=14, n=200), {}),
    ("longer run", dict(seed=15, n=450), {}),
    ("shorter schedule", dict(seed=16, n=200, per="fraction"), dict(per="fraction")),
    ("longer schedule", dict(seed=17, n=500, per="fraction"), dict(per="fraction")),
    ("lower lr", dict(seed=18, rate=3.5), {}),
    ("higher lr", dict(seed=19, rate=7.0), {}),
    ("a slightly higher floor", dict(seed=20, floor=0.4), {}),
    ("restarted from a checkpoint", dict(seed=21, first=150), {}),
    ("siblings of mixed lengths", dict(seed=22), dict(n=None)),
]


@pytest.mark.parametrize("label,run_kw,sib_kw", first_cases_fast(HEALTHY, keep=3))
def test_a_healthy_sweep_stays_silent(label, run_kw, sib_kw):
    if sib_kw.get("n", 0) is None:  # mixed lengths: 240, 300, 360, 420, 480
        runs = [curve(f"seed{i}", seed=i, n=240 + 60 * i) for i in range(5)]
    else:
        runs = siblings(**sib_kw)
    ids, _, findings = history_ids(curve(**run_kw), runs)
    assert ids == ["TP-HISTORY-PASS"], (label, [f.evidence for f in findings])


@pytest.mark.parametrize("seed", first_seed_fast(range(4)))
def test_a_run_of_a_noisy_sweep_is_silent_whichever_seed_is_judged(seed):
    runs = [curve(f"seed{i}", seed=i, noise=0.1, rate=4.0 + 0.5 * i) for i in range(6)]
    me, rest = runs[seed], runs[:seed] + runs[seed + 1 :]
    assert history_ids(me, rest)[0] == ["TP-HISTORY-PASS"]


def test_a_shifted_floor_is_caught_and_the_runs_are_named():
    run = curve(seed=30, floor=1.6)  # keeps 0.9 of the 2.2 its siblings removed
    ids, _, findings = history_ids(run, siblings())
    assert ids == ["TP-BEHIND-HISTORY"]
    f = findings[0]
    assert f.level is Level.WARN and f.source == "history"
    assert f.message.startswith("loss floor 1.6") and "5 recent healthy runs" in f.message
    assert "Held against: seed0, seed1, seed2, seed3, seed4." in f.evidence
    assert f.data["runs"] == [f"seed{i}" for i in range(5)]
    assert f.data["alignments"] == ["step", "fraction"]
    b = f.data["behind"]["floor"]
    assert b["gap"] > b["margin"] > 0 and b["median"] == pytest.approx(0.3, rel=0.1)
    assert {"floor", "end", "improvement"} <= set(f.data["behind"])


@pytest.mark.parametrize("floor", first_cases_fast([1.8, 1.4, 2.3], keep=1))
def test_shifted_floors_are_caught_at_every_noise_level(floor):
    for noise in (0.005, 0.05, 0.15):
        ids, _, findings = history_ids(curve(seed=31, floor=floor, noise=noise), siblings(noise=noise))
        assert ids == ["TP-BEHIND-HISTORY"], (floor, noise)


def test_a_run_that_barely_improves_is_caught_on_its_improvement():
    # It starts where its siblings start and ends a little lower: floor, end and improvement.
    ids, _, findings = history_ids(curve(seed=32, rate=0.3), siblings())
    assert ids == ["TP-BEHIND-HISTORY"]
    assert "improvement" in findings[0].data["behind"]


def test_a_run_resumed_low_is_not_judged_on_its_improvement():
    # A warm start: begins near the floor, so it improves little, and ends with its siblings.
    warm = curve(seed=33, start=0.5)
    ids, _, _ = history_ids(warm, siblings())
    assert ids == ["TP-HISTORY-PASS"]


def test_siblings_that_agree_exactly_do_not_turn_a_small_difference_into_a_finding():
    runs = [curve(f"twin{i}", noise=0.0) for i in range(4)]  # MAD 0
    assert history_ids(curve(seed=34, floor=0.45, noise=0.01), runs)[0] == ["TP-HISTORY-PASS"]


def test_fewer_than_three_siblings_skip_the_rule_with_the_reason():
    ids, skipped, _ = history_ids(curve(floor=2.0), siblings(k=2))
    assert ids == []
    s = skipped["TP-BEHIND-HISTORY"]
    assert s.reason == "too_few_runs" and "holds 2 usable healthy run(s)" in s.detail and "need 3" in s.detail


def test_unusable_siblings_are_left_out_and_named():
    runs = siblings(k=3) + [Trace("nan-run", np.arange(5.0), np.full(5, np.nan), 5.0)]
    findings, skipped, _, _ = judge_history(curve(seed=35, floor=1.7), runs)
    assert [f.id for f in findings] == ["TP-BEHIND-HISTORY"]
    assert "Left out: nan-run: it has 0 finite loss points" in findings[0].evidence
    findings, skipped, _, _ = judge_history(curve(seed=35), siblings(k=2) + runs[3:])
    assert skipped["TP-BEHIND-HISTORY"].reason == "too_few_runs" and "nan-run" in skipped["TP-BEHIND-HISTORY"].detail


def test_a_run_without_a_usable_loss_is_skipped_as_degenerate():
    _, skipped, _ = history_ids(Trace("r", np.arange(20.0), np.zeros(20), 20.0), siblings())
    assert skipped["TP-BEHIND-HISTORY"].reason == "degenerate" and "<= 0" in skipped["TP-BEHIND-HISTORY"].detail


def test_muted_history_rules_are_skipped_as_muted():
    findings, skipped, ran, _ = judge_history(curve(floor=2.0), siblings(), mute={"TP-BEHIND-HISTORY"})
    assert "TP-BEHIND-HISTORY" not in ran and skipped["TP-BEHIND-HISTORY"].reason == "muted"
    assert findings == []  # nothing ran, so nothing passed


# --- a run still training ---------------------------------------------------------------


def _first(t: Trace, share: float) -> Trace:
    k = int(share * t.steps.size)
    return Trace(t.name, t.steps[:k], t.values[:k], t.end)


def test_a_run_behind_the_envelope_warns_with_the_step_and_the_margin():
    f, skip = envelope_finding(_first(curve(seed=40, floor=2.0, rate=1.0), 0.3), siblings())
    assert skip is None and f is not None
    assert f.id == "TP-BEHIND-ENVELOPE" and f.level is Level.WARN and f.source == "live"
    assert f.step == 90 and f.data["step"] == 90
    assert f.data["level"] > f.data["upper"] == pytest.approx(f.data["median"] + f.data["margin"])
    assert "at step 90" in f.message and "margin" in f.evidence and "Held against: seed0" in f.evidence


@pytest.mark.parametrize("share", first_cases_fast([0.25, 0.5, 0.8, 1.0], keep=1))
def test_a_healthy_run_stays_inside_the_envelope_as_it_trains(share):
    for kw in (dict(seed=41), dict(seed=42, noise=0.15), dict(seed=43, rate=3.5), dict(seed=44, first=150)):
        f, skip = envelope_finding(_first(curve(**kw), share), siblings(noise=kw.get("noise", 0.02)))
        assert f is None, (kw, share, f and f.evidence)


def test_the_envelope_waits_for_a_share_of_the_siblings_length_and_for_three_of_them():
    f, skip = envelope_finding(_first(curve(floor=2.0, rate=1.0), 0.1), siblings())
    assert f is None and skip.reason == "too_little_of_schedule" and "20%" in skip.detail
    f, skip = envelope_finding(_first(curve(floor=2.0, rate=1.0), 0.5), siblings(k=2))
    assert f is None and skip.reason == "too_few_runs"
    f, skip = envelope_finding(_first(curve(floor=2.0, rate=1.0), 0.5), siblings(), mute=["TP-BEHIND-ENVELOPE"])
    assert f is None and skip.reason == "muted"


def test_the_band_is_the_median_and_margin_of_the_siblings_at_each_step():
    runs = siblings()
    b = band(runs, np.array([1.0, 150.0, 300.0, 900.0]))
    assert b.runs == tuple(f"seed{i}" for i in range(5))
    assert b.median[0] > b.median[1] > b.median[2] and np.isnan(b.median[3])  # past every run's end
    assert np.all(b.upper[:3] > b.median[:3]) and np.all(b.lower[:3] < b.median[:3])
    assert band(runs[:2], np.array([1.0])) is None


def _drawn(rng, name, shift=0.0):
    """A run of a healthy sweep drawn at random: 150-600 steps, learning per step or per its
    schedule, noise 0.5-15%, learning rate (rate) within 0.7-1.4x, floor within 0.8-1.25x,
    sometimes resumed from a checkpoint; ``shift`` raises its floor by that share of the
    2.2 the sweep's runs learn."""
    floor = 0.3 * rng.uniform(0.8, 1.25) + shift * 2.2
    return curve(
        name,
        n=int(rng.integers(150, 601)),
        floor=floor,
        rate=5.0 * rng.uniform(0.7, 1.4),
        noise=float(rng.uniform(0.005, 0.15)),
        seed=int(rng.integers(1 << 30)),
        per="step" if rng.random() < 0.5 else "fraction",
        first=1 if rng.random() < 0.8 else int(rng.integers(20, 100)),
    )


@pytest.mark.slow
def test_drawn_healthy_sweeps_are_silent_and_shifted_floors_caught():
    rng = np.random.default_rng(2026)
    for trial in range(200):
        k = int(rng.integers(3, 11))
        runs = [_drawn(rng, f"r{i}") for i in range(k)]
        assert history_ids(_drawn(rng, "me"), runs)[0] == ["TP-HISTORY-PASS"], trial
        assert history_ids(_drawn(rng, "me", shift=0.8), runs)[0] == ["TP-BEHIND-HISTORY"], trial
