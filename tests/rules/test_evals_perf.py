"""The eval-loss and speed rules on hand-made series: TP-OVERFIT, TP-STEP-CLIFF,
TP-LOADER-BOUND, and the context-only TP-THROUGHPUT and TP-GPU-UTIL.

Train rows are logged every 10 steps; evaluation rows are separate records that repeat
the step of a train row, the way HF's ``log_history`` writes them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from trainproof.findings import Level
from trainproof.rules.engine import judge_runlog
from trainproof.runlog import Record, build_runlog

from conftest import make_run, one


def run_with_evals(train_loss, eval_loss, eval_every):
    """Train rows every 10 steps; after every ``eval_every``-th train row, an eval row at
    the same step. Returns the RunLog and the (step, line) of each eval row."""
    recs, evals = [], []
    line = 0
    e = iter(eval_loss)
    for i, v in enumerate(train_loss):
        step = float(10 * (i + 1))
        line += 1
        recs.append(Record(step, {"loss": float(v)}, line))
        if (i + 1) % eval_every == 0:
            ev = next(e, None)
            if ev is not None:
                line += 1
                recs.append(Record(step, {"eval_loss": float(ev)}, line))
                evals.append((step, line))
    return build_runlog(recs, "trainer_state.json", "hf"), evals


def falling(n, seed=0, lo=0.2, hi=2.5):
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n)
    return (lo + (hi - lo) * np.exp(-4 * t)) * np.exp(0.02 * rng.standard_normal(n))


# --- TP-OVERFIT -----------------------------------------------------------------------


def test_overfit_eval_rises_after_its_minimum_while_train_falls():
    train = falling(100)
    evals = [1.5, 1.1, 0.9, 0.95, 1.05, 1.2, 1.3, 1.4, 1.5, 1.6]  # minimum at the 3rd eval
    run, ev = run_with_evals(train, evals, 10)
    rep = judge_runlog(run)
    f = one(rep, "TP-OVERFIT")
    assert f.level is Level.WARN and rep.verdict is Level.WARN
    best_step, best_line = ev[2]
    assert f.data["best_step"] == best_step == 300.0
    assert (f.step, f.line) == (best_step, best_line)
    assert f.data["eval_min"] == 0.9 and f.data["evals_after_min"] == 7
    assert f.data["eval_tail_median"] == pytest.approx(1.5)
    # every evaluation after the minimum rose: a steady climb is judged where it ended
    assert f.data["steady_climb"] is True and f.data["eval_end"] == 1.6
    assert f.data["ratio"] == pytest.approx(1.6 / 0.9)
    assert f.data["train_end"] < f.data["train_at_best"]
    assert "step 300" in f.evidence and "step 300" in f.message


def test_overfit_eval_rising_together_with_train_is_not_overfitting():
    rng = np.random.default_rng(1)
    train = np.concatenate([falling(50, 1, lo=1.0, hi=2.5), np.linspace(1.0, 2.0, 50)])
    train = train * np.exp(0.01 * rng.standard_normal(100))
    evals = [1.8, 1.4, 1.2, 1.1, 1.1, 1.3, 1.5, 1.7, 1.9, 2.1]
    run, _ = run_with_evals(train, evals, 10)
    rep = judge_runlog(run)
    assert "TP-OVERFIT" not in rep.ids() and "TP-OVERFIT" in rep.ran


def test_overfit_one_bad_eval_then_recovery_does_not_fire():
    # minimum at the 4th eval, 5 evals after it, one of them 2.6x the minimum
    evals = [1.5, 1.2, 1.0, 0.95, 2.5, 0.97, 0.98, 0.99, 1.0]
    run, _ = run_with_evals(falling(90), evals, 10)
    rep = judge_runlog(run)
    assert "TP-OVERFIT" not in rep.ids() and "TP-OVERFIT" in rep.ran


def test_overfit_a_spike_in_the_last_three_is_ignored_by_the_median():
    evals = [1.5, 1.2, 1.0, 0.9, 0.95, 0.97, 1.0, 3.0, 1.0]
    run, _ = run_with_evals(falling(90), evals, 10)
    assert "TP-OVERFIT" not in judge_runlog(run).ids()


def test_overfit_needs_three_evaluations_after_the_minimum():
    evals = [1.5, 1.2, 1.0, 0.8, 0.7, 0.6, 0.9, 1.2]  # minimum 2 evals from the end
    run, _ = run_with_evals(falling(80), evals, 10)
    assert "TP-OVERFIT" not in judge_runlog(run).ids()
    evals = [1.5, 1.2, 1.0, 0.8, 0.7, 0.6, 0.9, 1.2, 1.3]  # ... now 3 after it
    run, _ = run_with_evals(falling(90), evals, 10)
    assert one(judge_runlog(run), "TP-OVERFIT").data["evals_after_min"] == 3


def test_overfit_ratio_boundary_1_15_does_not_fire_1_25_does():
    base = [1.5, 1.2, 1.0]
    run, _ = run_with_evals(falling(60), base + [1.1, 1.15, 1.15], 10)
    assert "TP-OVERFIT" not in judge_runlog(run).ids()
    run, _ = run_with_evals(falling(60), base + [1.2, 1.25, 1.25], 10)
    assert one(judge_runlog(run), "TP-OVERFIT").data["ratio"] == pytest.approx(1.25)


def test_overfit_needs_four_evaluations():
    run, _ = run_with_evals(falling(30), [1.0, 1.5, 2.0], 10)
    rep = judge_runlog(run)
    assert rep.skipped["TP-OVERFIT"].reason == "too_few_points"


def test_overfit_without_a_train_loss_is_skipped_as_absent():
    run = make_run(eval_loss=[1.0, 0.8, 0.9, 1.2, 1.4, 1.5])
    rep = judge_runlog(run)
    assert rep.skipped["TP-OVERFIT"].reason == "absent"


# --- TP-STEP-CLIFF --------------------------------------------------------------------


def step_times(n, head=0.1, tail=None, tail_share=0.2, seed=0):
    rng = np.random.default_rng(seed)
    st = head * np.exp(0.05 * rng.standard_normal(n))
    if tail is not None:
        k = int(round(n * tail_share))
        st[-k:] = tail * np.exp(0.05 * rng.standard_normal(k))
    return st


@pytest.mark.parametrize("n", [10, 50, 400])
def test_step_cliff_the_last_fifth_five_times_slower_warns(n):
    st = step_times(n, 0.1, 0.5)
    rep = judge_runlog(make_run(loss=falling(n), step_time=st))
    f = one(rep, "TP-STEP-CLIFF")
    assert f.level is Level.WARN and rep.verdict is Level.WARN
    k = int(round(n * 0.2))
    assert f.data["tail_points"] == k
    assert f.data["head_median"] == pytest.approx(float(np.median(st[: n // 2])))
    assert f.data["tail_median"] == pytest.approx(float(np.median(st[-k:])))
    assert f.data["ratio"] == pytest.approx(5.0, rel=0.15)
    assert (f.step, f.line) == (10.0 * (n - k + 1), n - k + 1)


@pytest.mark.parametrize("factor", [1.0, 2.0, 2.9])
def test_step_cliff_a_slowdown_under_three_times_does_not_fire(factor):
    rep = judge_runlog(make_run(loss=falling(100), step_time=step_times(100, 0.1, 0.1 * factor)))
    assert "TP-STEP-CLIFF" not in rep.ids() and "TP-STEP-CLIFF" in rep.ran


def test_step_cliff_a_slow_middle_that_recovers_does_not_fire():
    st = step_times(100)
    st[55:75] = 1.0
    assert "TP-STEP-CLIFF" not in judge_runlog(make_run(loss=falling(100), step_time=st)).ids()


def test_step_cliff_is_skipped_on_a_short_log():
    rep = judge_runlog(make_run(loss=falling(20), step_time=[0.1] * 5 + [1.0] * 2))
    assert rep.skipped["TP-STEP-CLIFF"].reason == "too_few_points"


# --- TP-LOADER-BOUND ------------------------------------------------------------------


def test_loader_bound_seventy_percent_of_each_step_warns():
    rng = np.random.default_rng(0)
    st = 0.1 * np.exp(0.05 * rng.standard_normal(40))
    lt = 0.7 * st
    rep = judge_runlog(make_run(loss=falling(40), step_time=st, loader_time=lt))
    f = one(rep, "TP-LOADER-BOUND")
    assert f.level is Level.WARN
    assert f.data["median_share"] == pytest.approx(0.7) and f.data["points"] == 40


@pytest.mark.parametrize("share", [0.3, 0.5])
def test_loader_bound_half_or_less_does_not_fire(share):
    st = [0.1] * 40
    rep = judge_runlog(make_run(loss=falling(40), step_time=st, loader_time=[share * 0.1] * 40))
    assert "TP-LOADER-BOUND" not in rep.ids() and "TP-LOADER-BOUND" in rep.ran


def test_loader_bound_uses_only_steps_that_log_both():
    # loader_time on the first 10 rows only, where it is 90% of the step; step_time everywhere
    st = [0.1] * 40
    lt = [0.09] * 10 + [None] * 30
    f = one(judge_runlog(make_run(loss=falling(40), step_time=st, loader_time=lt)), "TP-LOADER-BOUND")
    assert f.data["points"] == 10 and f.data["median_share"] == pytest.approx(0.9)


def test_loader_bound_needs_both_series():
    rep = judge_runlog(make_run(loss=falling(40), loader_time=[0.09] * 40))
    assert rep.skipped["TP-LOADER-BOUND"].reason == "absent"


# --- TP-THROUGHPUT / TP-GPU-UTIL: context only ----------------------------------------


def test_throughput_and_gpu_util_are_info_and_never_change_a_pass():
    n = 60
    run = make_run(
        loss=falling(n), throughput=[120.0] * (n // 2) + [80.0] * (n // 2), gpu_util=[95.0] * (n - 1) + [3.0]
    )
    rep = judge_runlog(run)
    tp = one(rep, "TP-THROUGHPUT")
    gu = one(rep, "TP-GPU-UTIL")
    assert tp.level is Level.INFO and gu.level is Level.INFO
    assert tp.data["median"] == 100.0 and tp.data["points"] == n and tp.data["series"] == "throughput"
    assert gu.data["median"] == 95.0 and gu.data["min"] == 3.0
    assert rep.verdict is Level.PASS
    assert one(rep, "TP-PASS").level is Level.PASS


def test_throughput_falls_back_to_step_time():
    rep = judge_runlog(make_run(loss=falling(30), step_time=[0.25] * 30))
    tp = one(rep, "TP-THROUGHPUT")
    assert tp.data["series"] == "step_time" and tp.data["median"] == 0.25
    assert "step time" in tp.message


def test_info_findings_do_not_soften_or_harden_a_fail_or_a_warn():
    n = 60
    fail = judge_runlog(make_run(loss=[2.0] * n, gpu_util=[10.0] * n))
    assert fail.verdict is Level.FAIL and "TP-GPU-UTIL" in fail.ids()
    warn = judge_runlog(make_run(loss=falling(n), step_time=step_times(n, 0.1, 0.6)))
    assert warn.verdict is Level.WARN and {"TP-STEP-CLIFF", "TP-THROUGHPUT"} <= set(warn.ids())


def test_info_alone_is_not_a_verdict():
    # one loss point: no trend check can run; the context rule running does not make it a PASS
    rep = judge_runlog(make_run(loss=[2.0], throughput=[100.0]))
    assert "TP-THROUGHPUT" in rep.ran
    assert rep.verdict is Level.NOT_CHECKED
    assert "TP-NOT-CHECKED" in rep.ids() and "TP-PASS" not in rep.ids()


def test_step_cliff_needs_ten_points():
    short = judge_runlog(make_run(loss=np.linspace(2, 1, 8), step_time=[0.1] * 6 + [1.0] * 2))
    assert short.skipped["TP-STEP-CLIFF"].reason == "too_few_points"
    long = judge_runlog(make_run(loss=np.linspace(2, 1, 10), step_time=[0.1] * 8 + [1.0] * 2))
    assert "TP-STEP-CLIFF" in long.ids()


@pytest.mark.parametrize("after,rise", [(3, 0.07), (4, 0.055), (6, 0.04)])
def test_overfit_a_steady_climb_counts_where_it_ends(after, rise):
    # The case-16 shape: the eval minimum, then a rise at every evaluation; the median of
    # the last 3 stays under 1.2x but the last evaluation is above it.
    train = falling(100)
    best = 1.12
    evals = [1.31] + [best] + [best * (1 + rise) ** (k + 1) for k in range(after)]
    assert evals[-1] > 1.2 * best
    run, ev = run_with_evals(train, evals, 10)
    f = one(judge_runlog(run), "TP-OVERFIT")
    assert f.data["steady_climb"] is True and f.data["best_step"] == ev[1][0]


def test_overfit_a_spike_that_comes_back_is_not_a_climb():
    train = falling(100)
    evals = [1.3, 1.12, 1.15, 1.5, 1.16, 1.17, 1.18]  # last above 1.0x, median of last 3 < 1.2x
    run, _ = run_with_evals(train, evals, 10)
    assert "TP-OVERFIT" not in judge_runlog(run).ids()


@pytest.mark.parametrize("where", [0, 3, -1])
def test_nan_eval_fails_and_overfit_is_skipped_not_passed(where):
    train = falling(100)
    evals = [1.5, 1.1, 0.9, 0.95, 1.05, 1.2, 1.3, 1.4]
    evals[where] = float("nan")
    run, ev = run_with_evals(train, evals, 10)
    rep = judge_runlog(run)
    f = one(rep, "TP-NAN-EVAL")
    assert f.level is Level.FAIL and f.step == ev[where][0]
    assert rep.skipped["TP-OVERFIT"].reason == "degenerate"
    assert "TP-OVERFIT" not in rep.ran


def _two_sets(n_evals, orig, new, seed=0, noise=0.02):
    """An HF-style log: a train loss every 10 steps falling 2.0 -> 0.3, and after every
    10th train row one evaluation row with two held-out sets, ``eval_new_loss`` and
    ``eval_orig_loss`` (each a function of the evaluation's index in [0, 1])."""
    rng = np.random.default_rng(seed)
    recs, line = [], 0
    n = 10 * n_evals
    train = (0.3 + 1.7 * np.exp(-np.arange(n) / (n / 5))) * np.exp(noise * rng.standard_normal(n))
    for i, v in enumerate(train):
        step = float(10 * (i + 1))
        line += 1
        recs.append(Record(step, {"loss": float(v)}, line))
        if (i + 1) % 10 == 0:
            x = (i + 1) / n
            line += 1
            vals = {
                "eval_new_loss": new(x) * math.exp(noise * rng.standard_normal()),
                "eval_orig_loss": orig(x) * math.exp(noise * rng.standard_normal()),
            }
            recs.append(Record(step, vals, line))
    return build_runlog(recs, "trainer_state.json", "hf")


@pytest.mark.parametrize("n_evals", [10, 30, 100])
@pytest.mark.parametrize("noise", [0.01, 0.05])
def test_a_second_held_out_set_that_climbs_while_the_train_loss_falls_warns(n_evals, noise):
    # Fine-tuned on a new task, the model forgets the old one: the new task's set falls,
    # the old task's climbs 1.9 -> 3.2.
    run = _two_sets(n_evals, orig=lambda x: 1.9 + 1.3 * x, new=lambda x: 1.5 - 0.8 * x, noise=noise)
    f = one(judge_runlog(run), "TP-OVERFIT")
    assert f.data["series"] == "eval_orig_loss" and f.data["ratio"] > 1.3
    assert f.message.startswith("overfitting on eval_orig_loss")


@pytest.mark.parametrize("seed", range(4))
def test_second_held_out_sets_that_hold_or_fall_do_not_warn(seed):
    for orig in (lambda x: 1.9, lambda x: 1.9 - 0.3 * x):
        run = _two_sets(30, orig=orig, new=lambda x: 1.5 - 0.8 * x, seed=seed, noise=0.05)
        assert "TP-OVERFIT" not in {f.id for f in judge_runlog(run).findings}


def test_the_mapped_eval_loss_is_read_first_and_other_sets_only_when_it_holds():
    # Both sets climb: the finding is the eval loss's own, with its best checkpoint.
    run = _two_sets(30, orig=lambda x: 1.9 + 1.3 * x, new=lambda x: 1.5 + 1.0 * x)
    f = one(judge_runlog(run), "TP-OVERFIT")
    assert "series" not in f.data and f.message.startswith("overfitting: eval loss")
