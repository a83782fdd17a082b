"""The failure-signature rules on hand-made series: TP-OSCILLATION, TP-VANISHING-GRAD,
TP-PLATEAU and TP-LOSS-SPIKE, each positive and negative.

Every run is built in memory and judged with the default thresholds; the n-th logged
point (0-based) sits at step ``10 * (n + 1)`` and source line ``n + 1``. Noise is
multiplicative (``level * exp(rel * z)``, z standard normal from a seeded generator), so
"5% noise" means a point-to-point relative noise of about 5%. The negatives include the
shapes each rule must not mistake for its signature: constant and decaying oscillation, a
GAN-like loss, a noisy small-batch learner, a warm-restart schedule, a fast-start
fine-tune, a terminal or fully recovered spike, exactly-zero gradient norms.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from trainproof.findings import Level
from trainproof.rules.thresholds import DEFAULT

from conftest import first_seed_fast, one, run_cli, write_jsonl
from conftest import judge_cols as judge

SIGNATURES = ("TP-OSCILLATION", "TP-VANISHING-GRAD", "TP-PLATEAU", "TP-LOSS-SPIKE")


# --- helpers --------------------------------------------------------------------------


def step_of(i: int) -> float:
    return float(10 * (i + 1))


def noisy(level, rel, rng):
    level = np.asarray(level, dtype=float)
    return level * np.exp(rel * rng.standard_normal(level.shape))


def decaying(n, rel=0.02, seed=0, floor=0.5, height=2.5, rate=5.0):
    """A healthy curve: floor + height * exp(-rate * t), t in [0, 1]."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n)
    return noisy(floor + height * np.exp(-rate * t), rel, rng)


def alternating(n, amplitude, rel, seed, level=None):
    """A loss that alternates above and below its level at every logged point:
    ``level * (1 + amplitude(t) * (-1)^i)`` with multiplicative noise."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n)
    base = 1.0 + 0.5 * np.exp(-5 * t) if level is None else level(t)
    return noisy(base * (1 + amplitude(t) * (-1.0) ** np.arange(n)), rel, rng)


def warm_restarts(n, rel=0.03, seed=0, cycles=4):
    """SGDR-like: a decaying trend times a bump that is highest just after each restart
    (learning rate at its peak) and fades as the cosine schedule anneals."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n, endpoint=False)
    phase = (t * cycles) % 1.0
    bump = 1 + 0.3 * (1 + np.cos(np.pi * phase)) / 2
    return noisy((0.5 + 2.0 * np.exp(-3 * t)) * bump, rel, rng)


def gan_like(n, seed=0):
    """A GAN generator loss: swings around a constant level with a stationary amplitude
    (a negatively correlated AR(1) process plus a slow wave), never settling."""
    rng = np.random.default_rng(seed)
    x = np.zeros(n)
    for i in range(1, n):
        x[i] = -0.6 * x[i - 1] + 0.12 * rng.standard_normal()
    t = np.arange(n)
    return 1.2 * np.exp(x + 0.1 * np.sin(2 * np.pi * t / 37.0))


def fired(rep, rule_id):
    return rule_id in rep.ids()


# --- every rule: objective, level, docs -----------------------------------------------


@pytest.mark.parametrize("rule_id", SIGNATURES)
def test_signatures_are_skipped_on_rl_objectives(rule_id):
    n = 120
    rep = judge(loss=decaying(n), grad_norm=[0.5] * n, reward=list(np.linspace(0, 1, n)))
    assert rep.skipped[rule_id].reason == "objective: rl"
    assert rule_id not in rep.ran and not fired(rep, rule_id)


@pytest.mark.parametrize("rule_id", SIGNATURES)
def test_signatures_are_warn_rules_that_do_not_bear_the_verdict(rule_id):
    from trainproof.rules.registry import get

    r = get(rule_id)
    assert r.level is Level.WARN and not r.verdict_bearing
    assert r.objectives == ("supervised",)
    assert r.hint.startswith("Likely:") and "Try:" in r.hint
    for name in r.thresholds:
        assert hasattr(DEFAULT, name)


@pytest.mark.parametrize("rule_id", ["TP-OSCILLATION", "TP-PLATEAU", "TP-LOSS-SPIKE"])
def test_loss_signatures_do_not_judge_a_loss_with_holes_or_non_positive_values(rule_id):
    v = list(decaying(100))
    v[40] = math.nan
    assert judge(loss=v).skipped[rule_id].reason == "degenerate"
    w = list(decaying(100))
    w[40] = -0.1
    assert judge(loss=w).skipped[rule_id].reason == "degenerate"
    # A stray exact zero (a batch with every label masked) is left out, with a note: the
    # positive losses around it are judged.
    z = list(decaying(100))
    z[40] = 0.0
    rep = judge(loss=z)
    assert rule_id not in rep.skipped and any("1 exact 0.0 value(s)" in n for n in rep.notes)


def learned_then_spiked(n, seed=0):
    """Falls 2.0 -> 1.0 over the first 40%, holds, spikes 5x for 2 points at 60%, then
    holds at 1.3: the run improved overall and did not diverge, but the spike cost 30%."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n)
    level = np.where(t < 0.4, 2.0 - 2.5 * t, 1.0)
    i = int(0.6 * n)
    level[i : i + 2] = 5.0
    level[i + 2 :] = 1.3
    return noisy(level, 0.02, rng)


def _rows(**cols):
    n = max(len(c) for c in cols.values())
    return [{"step": 10 * (i + 1), **{k: float(c[i]) for k, c in cols.items()}} for i in range(n)]


@pytest.mark.slow
def test_signatures_through_the_cli_are_warnings_with_valid_json(tmp_path):
    """Each loss signature alone on a log: the --json document validates against the
    schema, the verdict is WARN and the exit code 0; data and step survive serialisation.
    A vanishing gradient comes with a loss that did not improve, so TP-DEAD-RUN fails it."""
    cases = {
        "TP-OSCILLATION": _rows(loss=alternating(120, growing, 0.02, 0)),
        "TP-PLATEAU": _rows(loss=late_start(100, 0.02, 0)),
        "TP-LOSS-SPIKE": _rows(loss=learned_then_spiked(200)),
    }
    for rule_id, rows in cases.items():
        path = write_jsonl(tmp_path / f"{rule_id}.jsonl", rows)
        code, _, _, doc = run_cli("epoch", str(path), "--json")
        rep = doc["reports"][0]
        found = [f for f in rep["findings"] if f["id"] == rule_id]
        assert len(found) == 1, (rule_id, [f["id"] for f in rep["findings"]])
        f = found[0]
        assert f["level"] == "WARN" and f["step"] is not None and f["line"] is not None
        assert f["data"] and f["evidence"]
        assert rep["verdict"] == "WARN" and code == 0, [x["id"] for x in rep["findings"]]
    path = write_jsonl(tmp_path / "vanish.jsonl", _rows(loss=flat_loss(100), grad_norm=collapsing_norms(100)))
    code, _, _, doc = run_cli("epoch", str(path), "--json")
    ids = {f["id"]: f for f in doc["reports"][0]["findings"]}
    assert ids["TP-VANISHING-GRAD"]["level"] == "WARN" and "TP-DEAD-RUN" in ids and code == 1


def test_a_healthy_run_fires_no_signature():
    n = 300
    rng = np.random.default_rng(5)
    rep = judge(loss=decaying(n, 0.05, seed=5), grad_norm=noisy(np.full(n, 0.6), 0.2, rng))
    for rid in SIGNATURES:
        assert rid in rep.ran and not fired(rep, rid)
    assert rep.verdict is Level.PASS


# --- TP-OSCILLATION -------------------------------------------------------------------

OSC_GRID = [(n, rel, seed) for n in (40, 60, 200, 1000) for rel in (0.01, 0.05) for seed in (0, 1)]


def growing(t):
    """Swing growing 55-fold over the run: 1% of the level at the start, 55% at the end."""
    return 0.01 * np.exp(4 * t)


@pytest.mark.parametrize("n,rel,seed", first_seed_fast(OSC_GRID, 2))
def test_oscillation_growing_alternation_fires_with_its_numbers(n, rel, seed):
    v = alternating(n, growing, rel, seed)
    rep = judge(loss=v)
    f = one(rep, "TP-OSCILLATION")
    assert f.level is Level.WARN
    d = f.data
    assert d["growth_abs"] >= 2 and d["growth_rel"] >= 2
    assert d["trend_z_abs"] >= 2.5 and d["trend_z_rel"] >= 2.5
    assert d["alternation"] >= 0.8
    # the step is where the swing first reached 2x, after warm-up, and the line matches it
    assert d["warmup_end_step"] <= f.step <= d["last_third_steps"][0] and f.step == d["onset_step"]
    assert f.line == round(f.step / 10)
    for key in ("amplitude_first", "amplitude_last"):
        assert f"{d[key]:.4g}" in f.evidence
    assert f"{d['growth_abs']:.2f}x" in f.evidence and f"{d['growth_rel']:.2f}x" in f.evidence


def test_oscillation_around_a_constant_level_fires_too():
    v = alternating(150, growing, 0.02, 3, level=lambda t: np.full_like(t, 0.7))
    assert fired(judge(loss=v), "TP-OSCILLATION")


@pytest.mark.parametrize("n,rel,seed", first_seed_fast(OSC_GRID, 2))
def test_oscillation_constant_amplitude_is_silent(n, rel, seed):
    rep = judge(loss=alternating(n, lambda t: np.full_like(t, 0.2), rel, seed))
    assert "TP-OSCILLATION" in rep.ran and not fired(rep, "TP-OSCILLATION")


@pytest.mark.parametrize("n,rel,seed", first_seed_fast(OSC_GRID, 2))
def test_oscillation_decaying_amplitude_is_silent(n, rel, seed):
    rep = judge(loss=alternating(n, lambda t: 0.4 * np.exp(-3 * t), rel, seed))
    assert not fired(rep, "TP-OSCILLATION")


@pytest.mark.parametrize("n", [60, 300, 2000])
@pytest.mark.parametrize("seed", first_seed_fast([0, 1, 2]))
def test_oscillation_gan_like_swings_around_a_constant_level_are_silent(n, seed):
    rep = judge(loss=gan_like(n, seed))
    assert "TP-OSCILLATION" in rep.ran and not fired(rep, "TP-OSCILLATION")


@pytest.mark.parametrize("n", [60, 300, 2000])
@pytest.mark.parametrize("seed", first_seed_fast([0, 1]))
def test_oscillation_fixed_noise_floor_under_a_shrinking_loss_is_silent(n, seed):
    """The loss falls 200-fold onto an alternating swing of fixed absolute size: relative
    to the level the swing grows about 20x and alternates, in absolute terms it does not
    grow at all."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n)
    v = 2.0 * np.exp(-6 * t) + 0.01 + 0.004 * (-1.0) ** np.arange(n) + 0.0005 * rng.standard_normal(n)
    rep = judge(loss=v)
    assert "TP-OSCILLATION" in rep.ran and not fired(rep, "TP-OSCILLATION")


@pytest.mark.parametrize("n", [60, 300, 2000])
def test_oscillation_growing_noise_that_does_not_alternate_is_silent(n):
    """Independent noise whose size grows 10x around a constant level: it grows on both
    scales, but the loss crosses its level only about 62% of the time."""
    rng = np.random.default_rng(7)
    t = np.linspace(0.0, 1.0, n)
    v = 1.0 * np.exp(0.02 * np.exp(2.3 * t) * rng.standard_normal(n))
    rep = judge(loss=v)
    assert not fired(rep, "TP-OSCILLATION")


@pytest.mark.parametrize("n", [60, 300, 2000])
def test_oscillation_a_rising_level_with_proportional_noise_is_silent(n):
    """An alternating swing proportional to a loss that climbs 10x: the absolute swing
    grows with the level, the relative one not at all."""
    rng = np.random.default_rng(3)
    t = np.linspace(0.0, 1.0, n)
    v = (1 + 9 * t) * (1 + 0.05 * (-1.0) ** np.arange(n)) * np.exp(0.01 * rng.standard_normal(n))
    assert not fired(judge(loss=v), "TP-OSCILLATION")


@pytest.mark.parametrize("n", [100, 1000])
@pytest.mark.parametrize("rel", [0.1, 0.3])
@pytest.mark.parametrize("seed", first_seed_fast([0, 1, 2]))
def test_oscillation_noisy_small_batch_learner_is_silent(n, rel, seed):
    assert not fired(judge(loss=decaying(n, rel, seed)), "TP-OSCILLATION")


@pytest.mark.parametrize("n", [80, 400, 2000])
def test_oscillation_warm_restart_schedule_is_silent(n):
    assert not fired(judge(loss=warm_restarts(n)), "TP-OSCILLATION")


def test_oscillation_needs_forty_points():
    rep = judge(loss=alternating(39, growing, 0.01, 0))
    assert rep.skipped["TP-OSCILLATION"].reason == "too_few_points"
    assert fired(judge(loss=alternating(40, growing, 0.01, 0)), "TP-OSCILLATION")


# --- TP-VANISHING-GRAD ----------------------------------------------------------------


def collapsing_norms(n, seed=0, floor=1e-4, start=0.3):
    """Norms near 1 (20% noise) up to ``start`` of the run, then decaying geometrically
    to ``floor``; the first logged norm is a large start-up value."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n)
    level = np.where(t < start, 1.0, np.exp(np.log(floor) * (t - start) / (1 - start)))
    g = noisy(level, 0.2, rng)
    g[0] = 40.0
    return g


def flat_loss(n, rel=0.01, seed=1, level=2.5):
    # 2.5 is no ln(k) for k <= 10 (ln 10 = 2.303): TP-CHANCE-LEVEL leaves these to TP-DEAD-RUN
    return noisy(np.full(n, level), rel, np.random.default_rng(seed))


@pytest.mark.parametrize("n", [10, 20, 100, 1000])
@pytest.mark.parametrize("seed", first_seed_fast([0, 1]))
def test_vanishing_grad_collapse_with_a_stuck_loss_fires_with_its_numbers(n, seed):
    g = collapsing_norms(n, seed)
    rep = judge(loss=flat_loss(n), grad_norm=g)
    f = one(rep, "TP-VANISHING-GRAD")
    assert f.level is Level.WARN
    d = f.data
    w = d["window"]
    assert d["early_median"] == pytest.approx(float(np.median(g[1 : 1 + w])))
    assert d["late_median"] == pytest.approx(float(np.median(g[-w:])))
    assert d["ratio"] < 0.01 and d["loss_improvement"] < 0.05
    assert d["early_steps"][0] == step_of(1)  # the first logged norm is ignored
    assert f.step == d["first_below_step"] and f.line == round(f.step / 10)
    assert g[int(f.line) - 1] < 0.01 * d["early_median"]
    assert f"{d['early_median']:.4g}" in f.evidence and f"{d['late_median']:.4g}" in f.evidence
    assert "TP-DEAD-RUN" in rep.ids()  # the loss condition is DEAD-RUN's: it fails too
    assert rep.verdict is Level.FAIL


def test_vanishing_grad_collapse_to_exact_zero_mid_run_is_the_exact_zero_rules():
    # A norm exactly 0.0 from mid-run to the end is TP-ZERO-GRAD-ONSET's (exact evidence, a
    # FAIL); the collapse it also is, is listed as implied.
    n = 60
    g = [1.0] * 30 + [0.0] * 30
    f = one(judge(loss=flat_loss(n), grad_norm=g), "TP-ZERO-GRAD-ONSET")
    assert f.data["onset_step"] == step_of(30) and "TP-VANISHING-GRAD" in f.data["implies"]


def test_vanishing_grad_every_norm_exactly_zero_is_zero_grads_job():
    n = 60
    rep = judge(loss=flat_loss(n), grad_norm=[0.0] * n)
    assert "TP-VANISHING-GRAD" in rep.ran and not fired(rep, "TP-VANISHING-GRAD")
    assert fired(rep, "TP-ZERO-GRAD")


@pytest.mark.parametrize("n", [20, 200])
def test_vanishing_grad_collapse_while_the_loss_converges_is_silent(n):
    rep = judge(loss=decaying(n), grad_norm=collapsing_norms(n))
    assert "TP-VANISHING-GRAD" in rep.ran and not fired(rep, "TP-VANISHING-GRAD")


@pytest.mark.parametrize("floor", [0.02, 0.05])
def test_vanishing_grad_a_smaller_drop_than_a_hundredfold_is_silent(floor):
    n = 100
    g = np.concatenate(([40.0], np.full(29, 1.0), np.full(70, floor)))
    rep = judge(loss=flat_loss(n), grad_norm=g)
    assert "TP-VANISHING-GRAD" in rep.ran and not fired(rep, "TP-VANISHING-GRAD")


def test_vanishing_grad_ignores_the_first_logged_norm():
    """A huge first norm, then a steady 1.0: measured from the first point, the late
    median would be 1/1000 of a level the run never held."""
    g = [1000.0, 1000.0] + [1.0] * 58
    rep = judge(loss=flat_loss(60), grad_norm=g)
    assert not fired(rep, "TP-VANISHING-GRAD")


def test_vanishing_grad_an_isolated_non_finite_norm_does_not_stop_the_judgement():
    n = 60
    g = list(collapsing_norms(n))
    g[20] = math.nan
    rep = judge(loss=flat_loss(n), grad_norm=g)
    assert fired(rep, "TP-VANISHING-GRAD")
    assert fired(rep, "TP-GRAD-OVERFLOW-SKIPPED")


def test_vanishing_grad_needs_ten_norms():
    rep = judge(loss=flat_loss(20), grad_norm=list(collapsing_norms(9)))
    assert rep.skipped["TP-VANISHING-GRAD"].reason == "too_few_points"


# --- TP-PLATEAU -----------------------------------------------------------------------


def late_start(n, rel, seed, flat_share=0.4, level=2.3, floor=0.6):
    """Flat at ``level`` for the first ``flat_share`` of the run, then an exponential fall
    towards ``floor``."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n)
    u = np.clip((t - flat_share) / (1 - flat_share), 0, None)
    return noisy(floor + (level - floor) * np.exp(-4 * u), rel, rng)


PLATEAU_GRID = [(n, rel, seed) for n in (40, 100, 1000) for rel in (0.01, 0.05) for seed in (0, 1)]


@pytest.mark.parametrize("n,rel,seed", first_seed_fast(PLATEAU_GRID, 2))
def test_plateau_flat_start_then_a_fall_fires_with_its_numbers(n, rel, seed):
    v = late_start(n, rel, seed)
    rep = judge(loss=v)
    f = one(rep, "TP-PLATEAU")
    assert f.level is Level.WARN
    d = f.data
    h = math.ceil(0.3 * n)
    assert d["head_points"] == h and d["points"] == n
    assert d["head_t"] > -2.5 and d["accel_z"] <= -3 and d["rest_t"] < 0
    assert d["head_median"] == pytest.approx(float(np.median(v[:h])))
    assert (f.step, f.line) == (step_of(h - 1), h)
    assert f"{d['head_median']:.4g}" in f.evidence and f"{d['head_t']:.2f}" in f.evidence
    assert "TP-DEAD-RUN" not in rep.ids()


@pytest.mark.parametrize("n,rel,seed", first_seed_fast(PLATEAU_GRID, 2))
def test_plateau_healthy_decay_is_silent(n, rel, seed):
    rep = judge(loss=decaying(n, rel, seed))
    assert "TP-PLATEAU" in rep.ran and not fired(rep, "TP-PLATEAU")


@pytest.mark.parametrize("n", [40, 100, 1000])
@pytest.mark.parametrize("drop_points", [1, 3])
@pytest.mark.parametrize("seed", first_seed_fast([0, 1]))
def test_plateau_fast_start_fine_tune_that_levels_off_is_silent(n, drop_points, seed):
    """The loss falls from 2.0 to 1.2 within its first logs, then drifts 1.2 -> 1.1."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n)
    level = 1.2 - 0.1 * t
    level[:drop_points] = np.linspace(2.0, 1.4, drop_points)
    rep = judge(loss=noisy(level, 0.02, rng))
    assert "TP-PLATEAU" in rep.ran and not fired(rep, "TP-PLATEAU")


@pytest.mark.slow
@pytest.mark.parametrize("n", [40, 100, 1000])
@pytest.mark.parametrize("rel", [0.1, 0.3])
@pytest.mark.parametrize("seed", first_seed_fast([0, 1, 2]))
def test_plateau_noisy_small_batch_learner_is_silent(n, rel, seed):
    """A steady 30% decrease under heavy noise: too noisy for the first 30% to show a
    significant fall, and it falls no faster afterwards."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n)
    rep = judge(loss=noisy(2.0 * np.exp(-0.36 * t), rel, rng))
    assert not fired(rep, "TP-PLATEAU")


@pytest.mark.parametrize("n", [80, 400, 2000])
@pytest.mark.parametrize("cycles", [3, 4, 8])
def test_plateau_warm_restart_schedule_is_silent(n, cycles):
    assert not fired(judge(loss=warm_restarts(n, cycles=cycles)), "TP-PLATEAU")


def test_plateau_a_run_that_never_improves_is_left_to_the_no_progress_rules():
    rep = judge(loss=flat_loss(100, 0.02))
    assert "TP-PLATEAU" in rep.ran and not fired(rep, "TP-PLATEAU")
    assert fired(rep, "TP-LOSS-STALLED")


def test_plateau_a_stall_after_an_early_fall_is_not_an_early_plateau():
    """Falls over the first 20%, stalls, falls again: the head did fall."""
    rng = np.random.default_rng(4)
    t = np.linspace(0.0, 1.0, 200)
    level = np.where(t < 0.2, 3.0 - 5 * t, np.where(t < 0.5, 2.0, 2.0 * np.exp(-3 * (t - 0.5))))
    assert not fired(judge(loss=noisy(level, 0.02, rng)), "TP-PLATEAU")


@pytest.mark.parametrize("max_steps", [3000, 1000])
def test_plateau_waits_for_its_share_of_a_declared_schedule(max_steps):
    """A run still training, judged live at step 400 of a declared 3000 (13 %) or 1000
    (40 %): the first 30 % of its points (a warm-up, say) are not the first 30 % of the
    run, so the claim waits until 30 % of the schedule is logged; the same points as a
    whole run (max_steps 400) are an early plateau."""
    from trainproof.live.guardian import Guardian

    def live(end):
        g = Guardian(meta={"max_steps": end})
        for i, v in enumerate(late_start(40, 0.01, 0)):
            g.add(step_of(i), {"loss": float(v)})
        return g.judge()

    assert fired(live(400), "TP-PLATEAU")
    assert fired(live(max_steps), "TP-PLATEAU") is (max_steps == 1000)


def test_plateau_needs_thirty_four_points():
    assert judge(loss=late_start(33, 0.01, 0)).skipped["TP-PLATEAU"].reason == "too_few_points"
    assert fired(judge(loss=late_start(34, 0.01, 0)), "TP-PLATEAU")


# --- TP-LOSS-SPIKE --------------------------------------------------------------------


def spiked(n, rel, seed, at=0.5, height=5.0, burst=2, after=1.3, recovery=0):
    """A slowly decaying loss with a burst of ``burst`` points at ``height``x the level at
    ``at`` of the run, after which the level is multiplied by ``after``; with
    ``recovery`` > 0 the excess decays back over that many points."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n)
    level = 1.0 + 0.3 * np.exp(-3 * t)
    i = int(at * n)
    mult = np.ones(n)
    mult[i + burst :] = after
    if recovery:
        k = np.arange(n - i - burst)
        mult[i + burst :] = 1 + (after - 1) * np.exp(-5 * k / recovery)
    v = noisy(level * mult, rel, rng)
    v[i : i + burst] = height * level[i : i + burst] * np.exp(rel * rng.standard_normal(burst))
    return v, i


SPIKE_GRID = [(n, rel, seed) for n in (40, 200, 2000) for rel in (0.01, 0.05) for seed in (0, 1)]


@pytest.mark.parametrize("n,rel,seed", first_seed_fast(SPIKE_GRID, 2))
@pytest.mark.parametrize("burst", [1, 3])
def test_loss_spike_that_leaves_the_run_worse_fires_with_its_numbers(n, rel, seed, burst):
    v, i = spiked(n, rel, seed, burst=burst)
    rep = judge(loss=v)
    f = one(rep, "TP-LOSS-SPIKE")
    assert f.level is Level.WARN
    d = f.data
    peak = i + int(np.argmax(v[i : i + burst]))
    assert (f.step, f.line) == (step_of(peak), peak + 1)
    assert d["spike_step"] == step_of(peak) and d["peak"] == pytest.approx(v[peak])
    assert d["burst_points"] == burst
    assert d["ratio"] == pytest.approx(1.3, rel=0.1) and d["ratio"] > 1.1
    assert d["post_step"] > d["spike_step"]
    assert d["log_gap"] > d["noise_gate"]
    for key in ("peak", "pre_level", "post_level"):
        assert f"{d[key]:.4g}" in f.evidence
    assert f"{d['ratio']:.2f}x" in f.evidence


def recovered(rep):
    """The TP-LOSS-SPIKE finding, asserted to be about a spike the run came back from."""
    f = one(rep, "TP-LOSS-SPIKE")
    assert f.level is Level.WARN and f.data.get("recovered") is True and "came back" in f.message
    return f


@pytest.mark.parametrize("n,rel,seed", first_seed_fast(SPIKE_GRID, 2))
def test_loss_spike_fully_recovered_is_a_recovered_spike(n, rel, seed):
    v, i = spiked(n, rel, seed, after=1.0)
    f = recovered(judge(loss=v))
    assert step_of(i) <= f.data["largest_step"] <= step_of(i + 1)
    assert "settled" not in f.message


@pytest.mark.parametrize("n", [200, 2000])
def test_loss_spike_recovered_slowly_is_a_recovered_spike(n):
    """The loss comes back over 30 points to where it was: a slow recovery is one."""
    v, _ = spiked(n, 0.02, 0, after=2.0, recovery=30)
    recovered(judge(loss=v))


@pytest.mark.parametrize("n", [30, 200])
@pytest.mark.parametrize("at", [1, 2, 4])
def test_an_order_of_magnitude_burst_in_the_first_points_is_a_spike(n, at):
    """Before 5 points make a level, a burst 10x or more above the points before it is a
    spike however few they are; 5x there is not (a warm-up or a noisy start)."""
    v = decaying(n, 0.02)
    big = v.copy()
    big[at] = 30 * v[at - 1]
    f = one(judge(loss=big), "TP-LOSS-SPIKE")
    assert f.level is Level.WARN and f.step == step_of(at)
    small = v.copy()
    small[at] = 5 * v[at - 1]
    assert not fired(judge(loss=small), "TP-LOSS-SPIKE")


@pytest.mark.parametrize("n", [40, 200, 2000])
@pytest.mark.parametrize("burst", [1, 2])
def test_loss_spike_at_the_very_end_of_the_log_is_silent(n, burst):
    """A terminal spike has no after-part to read a level from."""
    v = decaying(n, 0.02)
    v[-burst:] = 6.0 * v[-burst - 1]
    rep = judge(loss=v)
    assert "TP-LOSS-SPIKE" in rep.ran and not fired(rep, "TP-LOSS-SPIKE")


@pytest.mark.parametrize("n", [40, 200, 2000])
@pytest.mark.parametrize("after", [1, 4])
def test_loss_spike_with_fewer_than_five_points_after_it_is_silent(n, after):
    """A spike followed by 1 or 4 points 1.5x worse than before it: too few to read the
    level it settled at."""
    v = decaying(n, 0.02)
    i = n - after - 1
    v[i] = 6.0 * v[i - 1]
    v[i + 1 :] *= 1.5
    assert not fired(judge(loss=v), "TP-LOSS-SPIKE")


def test_loss_spike_with_five_points_after_it_is_judged():
    v = decaying(200, 0.01)
    v[194] = 6.0 * v[193]
    v[195:] *= 1.5
    f = one(judge(loss=v), "TP-LOSS-SPIKE")
    assert f.data["post_points"] == 5 and f.data["spike_step"] == step_of(194)


def test_loss_spike_a_jump_to_a_new_level_is_not_a_spike():
    """Six or more points above the bar never came back down: a divergence."""
    v, _ = spiked(200, 0.02, 0, burst=30, after=1.3)
    rep = judge(loss=v)
    assert not fired(rep, "TP-LOSS-SPIKE")


def test_loss_spike_that_never_comes_back_below_the_bar_is_not_this():
    v, _ = spiked(200, 0.02, 0, burst=2, height=8.0, after=4.0)
    rep = judge(loss=v)
    assert not fired(rep, "TP-LOSS-SPIKE")
    assert fired(rep, "TP-DIVERGE")


def test_loss_spike_below_three_times_the_level_is_not_a_spike():
    v, _ = spiked(200, 0.01, 0, height=2.5, after=1.3)
    assert not fired(judge(loss=v), "TP-LOSS-SPIKE")


def test_loss_spike_a_ten_percent_setback_within_the_noise_counts_as_recovered():
    """A 12% worse level after the spike under 30% point noise: the best 5-point level
    after it is within the noise of the level before, so the run came back."""
    v, _ = spiked(200, 0.3, 0, height=40.0, after=1.12)
    recovered(judge(loss=v))


@pytest.mark.parametrize("n", [60, 300, 2000])
@pytest.mark.parametrize("seed", first_seed_fast([0, 1, 2]))
def test_loss_spike_gan_like_swings_are_silent(n, seed):
    assert not fired(judge(loss=gan_like(n, seed)), "TP-LOSS-SPIKE")


@pytest.mark.parametrize("n", [100, 1000])
@pytest.mark.parametrize("rel", [0.1, 0.3])
@pytest.mark.parametrize("seed", first_seed_fast([0, 1, 2]))
def test_loss_spike_noisy_small_batch_learner_is_silent(n, rel, seed):
    assert not fired(judge(loss=decaying(n, rel, seed)), "TP-LOSS-SPIKE")


@pytest.mark.parametrize("n", [80, 400, 2000])
@pytest.mark.parametrize("cycles", [3, 4, 8])
def test_loss_spike_warm_restart_schedule_is_silent(n, cycles):
    assert not fired(judge(loss=warm_restarts(n, cycles=cycles)), "TP-LOSS-SPIKE")


def test_loss_spike_counts_every_spike_that_left_damage():
    v, _ = spiked(300, 0.01, 0, at=0.3, after=1.3)
    j = int(0.7 * 300)
    v[j] = 6.0 * v[j - 1]
    v[j + 1 :] *= 1.3
    f = one(judge(loss=v), "TP-LOSS-SPIKE")
    assert f.data["spikes"] == 2 and f.data["spike_step"] == step_of(90)
    assert "2 such spikes" in f.evidence


def test_loss_spike_needs_twenty_points():
    v, _ = spiked(19, 0.01, 0)
    assert judge(loss=v).skipped["TP-LOSS-SPIKE"].reason == "too_few_points"


# --- the _stats helpers the signatures use --------------------------------------------


def test_neighbour_median_leaves_the_point_out_and_splits_an_alternation():
    from trainproof.rules._stats import neighbour_median

    idx, level = neighbour_median(np.array([1.0, 3.0, 1.0, 3.0, 1.0, 3.0]))
    assert list(idx) == [2, 3] and list(level) == [2.0, 2.0]
    assert neighbour_median(np.ones(4))[0].size == 0


def test_sign_change_share():
    from trainproof.rules._stats import sign_change_share

    assert sign_change_share(np.array([1.0, -1.0, 2.0, -0.5])) == 1.0
    assert sign_change_share(np.array([1.0, 0.0, 2.0, -1.0])) == 0.5  # zeros are skipped
    assert sign_change_share(np.array([1.0])) == 0.0


def test_ols_slope_matches_numpy_and_handles_exact_lines():
    from trainproof.rules._stats import ols_slope

    rng = np.random.default_rng(0)
    x = np.arange(50.0)
    y = 0.3 * x + rng.standard_normal(50)
    b, se, t = ols_slope(x, y)
    assert b == pytest.approx(np.polyfit(x, y, 1)[0])
    assert t == pytest.approx(b / se)
    assert ols_slope(x, 2 * x)[2] == math.inf and ols_slope(x, np.ones(50))[2] == 0.0
    assert ols_slope(np.ones(5), x[:5]) == (0.0, math.inf, 0.0)


def test_mann_kendall_z_sign_and_size():
    from trainproof.rules._stats import mann_kendall_z

    assert mann_kendall_z(np.arange(12.0)) == pytest.approx((66 - 1) / math.sqrt(12 * 11 * 29 / 18))
    assert mann_kendall_z(np.arange(12.0)[::-1]) < -4
    assert mann_kendall_z(np.ones(12)) == 0.0 and mann_kendall_z(np.array([1.0, 2.0])) == 0.0


def test_ar1_inflation_widens_for_positive_autocorrelation_only():
    from trainproof.rules._stats import ar1_inflation

    rng = np.random.default_rng(1)
    z = rng.standard_normal(5000)
    ar = np.zeros(5000)
    for i in range(1, 5000):
        ar[i] = 0.6 * ar[i - 1] + z[i]
    rho, factor = ar1_inflation(ar)
    assert rho == pytest.approx(0.6, abs=0.05) and factor == pytest.approx(2.0, rel=0.1)
    assert ar1_inflation((-1.0) ** np.arange(100)) == (0.0, 1.0)
    assert ar1_inflation(np.zeros(10)) == (0.0, 1.0)


@pytest.mark.parametrize("n,burst", [(100, 8), (300, 30), (2000, 200)])
def test_a_blow_up_of_two_orders_of_magnitude_that_recovers_is_a_spike_warning(n, burst):
    # The loss jumps 100x for a few epochs' worth of logs, then comes back to its level.
    rng = np.random.default_rng(n)
    v = (2.0 * np.exp(-np.arange(n) / (n / 6)) + 0.5) * np.exp(0.02 * rng.standard_normal(n))
    k = n // 2
    v[k : k + burst] *= np.r_[np.geomspace(10, 100, burst // 2), np.geomspace(100, 3, burst - burst // 2)]
    rep = judge(loss=list(v))
    f = one(rep, "TP-LOSS-SPIKE")
    assert f.level is Level.WARN and f.data["recovered"] and f.data["largest_ratio"] > 50
    assert rep.verdict is Level.WARN


def test_a_long_climb_of_the_same_size_that_stays_is_not_a_spike():
    # 100x above its level over the last third: a new level (TP-DIVERGE's), not a spike.
    n = 300
    v = np.r_[np.full(200, 1.0), np.full(100, 100.0)] * np.exp(0.02 * np.random.default_rng(0).standard_normal(n))
    rep = judge(loss=list(v))
    assert "TP-DIVERGE" in rep.ids()
