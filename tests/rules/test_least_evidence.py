"""Least evidence before a FAIL, and one cause per failure (issue 16, sections 2 and 4).

Runs are built in memory: the n-th point sits at step ``10 * (n + 1)``. Each mechanism is
tested on variants (lengths, noise levels, seeds), positive and negative.
"""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import run_of  # noqa: F401

from trainproof.findings import Level
from trainproof.rules.engine import judge_runlog, merge_implied, still_warming_up
from trainproof.rules.objective_kind import detect_objective
from trainproof.runlog import Record, build_runlog

from conftest import one


def flat_noisy(n, level=1.25, rel=0.02, seed=0):
    # 1.25 lies between ln 3 and ln 4, so TP-CHANCE-LEVEL does not take these runs
    rng = np.random.default_rng(seed)
    return level * np.exp(rel * rng.standard_normal(n))


def ids(rep):
    return {f.id for f in rep.findings}


# --- the share of the schedule -------------------------------------------------------


@pytest.mark.parametrize("n", [20, 60, 200])
def test_a_flat_loss_early_in_a_declared_schedule_is_skipped_not_failed(n):
    loss = flat_noisy(n)
    # n points at steps 10..10n; the schedule is ten times longer: 10% covered
    rep = judge_runlog(run_of(meta={"max_steps": 100 * n}, loss=loss))
    assert "TP-DEAD-RUN" not in ids(rep)
    assert rep.skipped["TP-DEAD-RUN"].reason == "too_little_of_schedule"
    assert "10%" in rep.skipped["TP-DEAD-RUN"].detail
    assert rep.verdict is not Level.FAIL


@pytest.mark.parametrize("n", [40, 60, 200])
def test_the_same_flat_loss_over_its_whole_schedule_is_judged(n):
    # Judged, not skipped: pinned with no cause in the log is no progress (a WARN); with a
    # learning rate of about zero it is a dead run.
    loss = flat_noisy(n)
    rep = judge_runlog(run_of(meta={"max_steps": 10 * n}, loss=loss))
    assert "TP-DEAD-RUN" in rep.ran and "TP-DEAD-RUN" not in rep.skipped
    assert rep.verdict is Level.WARN and "TP-LOSS-STALLED" in ids(rep)
    rep = judge_runlog(run_of(meta={"max_steps": 10 * n}, loss=loss, lr=np.full(n, 1e-8)))
    assert rep.verdict is Level.FAIL and "TP-DEAD-RUN" in ids(rep)


def test_a_flat_loss_of_twenty_points_is_too_little_to_call_dead():
    # Fewer than dead_flat_min_points: no progress, a WARN, however flat.
    rep = judge_runlog(run_of(meta={"max_steps": 200}, loss=flat_noisy(20)))
    assert rep.verdict is Level.WARN and "TP-LOSS-STALLED" in ids(rep)


def test_without_a_declared_schedule_the_points_alone_decide():
    rep = judge_runlog(run_of(loss=flat_noisy(40), lr=np.full(40, 1e-8)))
    assert "TP-DEAD-RUN" in ids(rep)


# --- warm-up ----------------------------------------------------------------------------


def test_a_flat_loss_while_the_learning_rate_still_warms_up_is_skipped():
    n = 40
    lr = np.linspace(1e-6, 1e-4, n)
    rep = judge_runlog(run_of(loss=flat_noisy(n), lr=lr))
    assert rep.skipped["TP-DEAD-RUN"].reason == "warmup"
    assert rep.skipped["TP-FLAT"].reason == "warmup"
    assert rep.verdict is not Level.FAIL


def test_after_warm_up_the_same_loss_is_judged():
    n = 40
    lr = np.concatenate([np.linspace(1e-6, 1e-4, 5), np.full(n - 5, 1e-4)])
    rep = judge_runlog(run_of(loss=flat_noisy(n), lr=lr))
    # judged, not skipped as warm-up; the optimizer steps at 1e-4, so a pinned loss is no
    # progress rather than death
    assert "TP-DEAD-RUN" in rep.ran and "TP-LOSS-STALLED" in ids(rep)


def test_still_warming_up_needs_strict_increases():
    assert still_warming_up(np.array([1.0, 2.0, 3.0]), 3)
    assert not still_warming_up(np.array([1.0, 2.0, 2.0]), 3)
    assert not still_warming_up(np.array([3.0, 2.0, 1.0]), 3)
    assert not still_warming_up(np.array([1.0]), 3)


# --- evidence of learning elsewhere ----------------------------------------------------


@pytest.mark.parametrize("evals", [6, 10, 20])
def test_a_flat_train_loss_with_a_steadily_falling_eval_loss_is_not_dead(evals):
    n = 120
    loss = flat_noisy(n, level=0.73, rel=0.05)
    ev = [None] * n
    every = n // evals
    for k in range(evals):
        ev[(k + 1) * every - 1] = 0.75 - 0.003 * k
    rep = judge_runlog(run_of(loss=loss, eval_loss=ev))
    assert "TP-DEAD-RUN" not in ids(rep)
    assert rep.verdict is not Level.FAIL


def test_a_flat_eval_loss_does_not_rescue_a_dead_run():
    n = 120
    rng = np.random.default_rng(3)
    loss = flat_noisy(n, level=0.73, rel=0.01)
    ev = [None] * n
    for k in range(10):
        ev[(k + 1) * 12 - 1] = 0.75 + 0.002 * rng.standard_normal()
    rep = judge_runlog(run_of(loss=loss, eval_loss=ev, lr=np.full(n, 1e-8)))
    assert "TP-DEAD-RUN" in ids(rep)


# --- an early fall, then a plateau, with the optimizer alive ----------------------------


def plateau_after_fall(n, seed=0, rel=0.03):
    v = flat_noisy(n, level=1.0, rel=rel, seed=seed)
    v[0] = 2.3  # the first logged point, before the fall
    return v


@pytest.mark.parametrize("n,seed", [(30, 0), (100, 1), (400, 2)])
def test_a_plateau_after_an_early_fall_with_lr_and_grads_alive_is_a_warn(n, seed):
    rng = np.random.default_rng(seed)
    grad = 0.5 * np.exp(0.2 * rng.standard_normal(n))
    rep = judge_runlog(run_of(loss=plateau_after_fall(n, seed), lr=np.full(n, 3e-4), grad_norm=grad))
    assert "TP-DEAD-RUN" not in ids(rep)
    f = one(rep, "TP-LOSS-STALLED")
    assert f.level is Level.WARN
    assert "gradient norm" in f.evidence


def test_the_same_plateau_without_gradient_evidence_is_no_progress_not_death():
    # The fall from the first point is the model learning; a plateau after it is no
    # progress whatever the optimizer shows.
    n = 100
    rep = judge_runlog(run_of(loss=plateau_after_fall(n), lr=np.full(n, 3e-4)))
    assert "TP-LOSS-STALLED" in ids(rep) and "TP-DEAD-RUN" not in ids(rep)


def test_a_plateau_with_collapsed_gradients_is_not_alive():
    n = 100
    grad = np.concatenate([np.full(10, 0.5), np.full(n - 10, 1e-5)])
    rep = judge_runlog(run_of(loss=plateau_after_fall(n), lr=np.full(n, 3e-4), grad_norm=grad))
    assert "TP-LOSS-STALLED" not in ids(rep)


# --- an effectively zero learning rate --------------------------------------------------


@pytest.mark.parametrize("lr", [1e-9, 5e-8, 1e-7])
def test_a_tiny_learning_rate_is_named_as_the_dead_runs_cause(lr):
    n = 80
    rep = judge_runlog(run_of(loss=flat_noisy(n), lr=np.full(n, lr)))
    f = one(rep, "TP-DEAD-RUN")
    assert f.data["cause"] == "tiny_lr"
    assert "effectively zero" in f.message


@pytest.mark.parametrize("lr", [2e-5, 1e-6, 5e-7])
def test_an_ordinary_learning_rate_is_not_called_tiny(lr):
    # 1e-6 and 5e-7: a large model's full fine-tune, a preference tune
    n = 80
    rep = judge_runlog(run_of(loss=flat_noisy(n), lr=np.full(n, lr)))
    f = one(rep, "TP-LOSS-STALLED")
    assert "optimizer is stepping" in f.evidence and "effectively zero" not in f.message
    f = one(judge_runlog(run_of(loss=flat_noisy(n))), "TP-LOSS-STALLED")  # no lr logged: no cause
    assert "names no cause" in f.evidence


# --- the noise floor: no divergence -----------------------------------------------------


def fall_to_floor(n, floor, end_floor, seed=0, rel=0.5):
    """1.5 falling to ``floor`` by a third of the run, the last tenth at ``end_floor``,
    with a large relative wiggle (a loss decided by a few examples per batch)."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)
    level = np.maximum(1.5 * np.exp(-t * 30), floor)
    level[int(0.9 * n) :] = end_floor
    return level * np.exp(rel * rng.standard_normal(n))


@pytest.mark.parametrize("n,seed", [(100, 0), (176, 1), (500, 2)])
def test_a_wiggle_at_the_noise_floor_is_not_a_divergence(n, seed):
    loss = fall_to_floor(n, 1.5e-4, 7e-4, seed)
    rep = judge_runlog(run_of(loss=loss))
    assert "TP-DIVERGE" not in ids(rep)


@pytest.mark.parametrize("n,seed", [(100, 0), (176, 1), (500, 2)])
def test_a_climb_back_over_a_real_share_of_the_fall_is_still_a_divergence(n, seed):
    loss = fall_to_floor(n, 1.5e-3, 0.4, seed, rel=0.1)
    rep = judge_runlog(run_of(loss=loss))
    assert "TP-DIVERGE" in ids(rep)


# --- one cause, one finding -----------------------------------------------------------


def test_a_diverged_run_gets_the_divergence_and_the_dead_run_as_implied():
    n = 60
    rng = np.random.default_rng(0)
    loss = np.concatenate([np.full(10, 1.0), np.full(n - 10, 20.0)]) * np.exp(0.02 * rng.standard_normal(n))
    rep = judge_runlog(run_of(loss=loss))
    assert "TP-LOSS-STALLED" not in ids(rep)
    f = one(rep, "TP-DIVERGE")
    assert f.data["implies"] == ["TP-LOSS-STALLED"]
    assert "Also explains: TP-LOSS-STALLED" in f.evidence
    assert "too small learning rate" not in f.hint


def test_a_zero_learning_rate_explains_the_dead_run():
    n = 40
    rep = judge_runlog(run_of(loss=flat_noisy(n), lr=np.zeros(n)))
    assert "TP-DEAD-RUN" not in ids(rep)
    assert "TP-DEAD-RUN" in one(rep, "TP-ZERO-LR").data["implies"]


def test_merge_implied_passes_a_chain_to_its_root():
    from trainproof.findings import Finding

    def f(i, level=Level.FAIL):
        return Finding(id=i, level=level, message=i.lower(), evidence="e.", data={})

    out = merge_implied([f("TP-DEAD-RUN"), f("TP-FLAT"), f("TP-ZERO-LR")])
    assert [x.id for x in out] == ["TP-ZERO-LR"]
    assert sorted(out[0].data["implies"]) == ["TP-DEAD-RUN", "TP-FLAT"]
    # an INFO finding explains nothing
    out = merge_implied([f("TP-DEAD-RUN"), f("TP-ZERO-LR", Level.INFO)])
    assert [x.id for x in out] == ["TP-DEAD-RUN", "TP-ZERO-LR"]


# --- RL is recognised by its return ----------------------------------------------------


@pytest.mark.parametrize(
    "key", ["rollout/return", "AI_return", "episode/Return", "eval/episode_return", "ep_return_mean"]
)
def test_an_episode_return_marks_an_rl_objective(key):
    assert detect_objective(run_of(loss=[1.0, 2.0], **{key: [1.0, 2.0]}))[0] == "rl"


@pytest.mark.parametrize("key", ["returned_samples", "return_code_count", "val_loss"])
def test_words_that_merely_contain_return_do_not(key):
    assert detect_objective(run_of(loss=[1.0, 2.0], **{key: [1.0, 2.0]}))[0] == "supervised"


# --- a resumed run's late window -----------------------------------------------------------


def resumed_run(n, first_step, seed=0, lr=2e-4):
    loss = flat_noisy(n, level=27.5, rel=0.03, seed=seed)
    recs = [Record(float(first_step + 100 * i), {"loss": float(loss[i]), "lr": lr}, i + 1) for i in range(n)]
    return build_runlog(recs, "x.jsonl", "jsonl")


@pytest.mark.parametrize("n,first", [(30, 5000), (300, 877100), (100, 10000)])
def test_a_flat_loss_in_a_log_that_starts_past_its_own_span_is_a_warn(n, first):
    rep = judge_runlog(resumed_run(n, first))
    assert "TP-DEAD-RUN" not in ids(rep)
    f = one(rep, "TP-LOSS-STALLED")
    assert f.data["resumed_at"] == first and "resumed" in f.message


def test_a_log_that_starts_early_in_its_span_is_judged_as_usual():
    rep = judge_runlog(resumed_run(100, 500))  # starts at 500, spans 9,900 steps
    f = one(rep, "TP-LOSS-STALLED")  # judged as usual: the optimizer steps at 2e-4
    assert f.data["resumed_at"] is None and "optimizer is stepping" in f.evidence


def test_a_resumed_run_at_a_tiny_learning_rate_is_still_dead():
    rep = judge_runlog(resumed_run(100, 877100, lr=1e-7))
    assert one(rep, "TP-DEAD-RUN").data["cause"] == "tiny_lr"


# --- "FAIL from step N": where the failure became visible --------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_an_exploding_loss_fails_from_where_it_left_its_level_not_near_its_end(seed):
    rng = np.random.default_rng(seed)
    n = 97  # steps 10..970: flat at 2.5 for the first 11 points, then x1.3 a point to ~2.6e10
    loss = np.concatenate([np.full(11, 2.5), 24.8 * 1.3 ** np.arange(n - 11)]) * np.exp(0.02 * rng.standard_normal(n))
    f = one(judge_runlog(run_of(loss=loss)), "TP-DIVERGE")
    assert f.data["onset_step"] <= 130  # the 12th-13th point, not the geometric midpoint (~step 500)


def test_a_lone_high_point_before_the_blow_up_is_not_the_onset():
    loss = [0.3, 0.2, 0.15, 0.12, 0.1, 0.1, 0.1, 0.25, 0.1, 0.1, 0.1] + [5.0] * 20
    f = one(judge_runlog(run_of(loss=loss)), "TP-DIVERGE")
    assert f.data["onset_step"] == 120  # the first point of the climb (the 12th), not the 8th


def test_a_rising_dead_run_says_its_trend_rises():
    n = 40
    rng = np.random.default_rng(0)
    loss = np.linspace(1.0, 1.04, n) * np.exp(0.001 * rng.standard_normal(n))
    rep = judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-8)))
    f = one(rep, "TP-DEAD-RUN")
    assert "significant upward trend" in f.evidence
    assert "no significant downward trend" not in f.evidence


# --- RULES.md states each FAIL rule's least evidence ------------------------------------------


@pytest.mark.slow
def test_every_fail_rule_on_a_run_states_its_least_evidence():
    from trainproof.rules.docs import rule_page
    from trainproof.rules.registry import all_rules

    fail_rules = [
        r for r in all_rules() if r.level is Level.FAIL and not r.is_outcome and r.source in ("single_run", "compare")
    ]
    assert len(fail_rules) >= 15
    for r in fail_rules:
        assert r.least_evidence, r.id
        assert "**Least evidence.**" in rule_page(r).split("\n## ", 1)[0], r.id
    dead = rule_page(next(r for r in fail_rules if r.id == "TP-DEAD-RUN"))
    assert "30% of the scheduled run" in dead and "warming up" in dead


@pytest.mark.parametrize("seed", range(6))
def test_a_tiny_learning_rate_with_noisy_ends_is_still_dead(seed):
    # lr 1e-8 for the whole run, 10% point noise: the 5-point ends may differ by more than
    # 5% by chance, but the interval of the change shows no fall beyond a slow learner's.
    n = 60
    rng = np.random.default_rng(seed)
    loss = 2.0 * np.exp(0.1 * rng.standard_normal(n))
    loss[:5] *= 1.15  # noisy first points
    f = one(judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-8))), "TP-DEAD-RUN")
    assert f.data["cause"] == "tiny_lr"


def test_a_tiny_learning_rate_with_a_real_fall_is_not_called_dead():
    n = 200
    loss = 3.0 * np.exp(-np.arange(n) / 50) + 0.5
    rep = judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-7)))
    assert "TP-DEAD-RUN" not in ids(rep)


def test_a_resumed_run_at_a_tiny_learning_rate_whose_ends_improve_is_not_overridden():
    # A late window (starts at step 32950, spans 1,700) at lr 1e-7 whose ends improve 6%:
    # a fine-tune's continuation, judged on its ends as any resumed run.
    n = 35
    rng = np.random.default_rng(0)
    loss = np.linspace(4.2, 3.93, n) * np.exp(0.04 * rng.standard_normal(n))
    recs = [Record(float(32950 + 50 * i), {"loss": float(loss[i]), "lr": 1e-7}, i + 1) for i in range(n)]
    rep = judge_runlog(build_runlog(recs, "x.jsonl", "jsonl"))
    assert "TP-DEAD-RUN" not in ids(rep)
