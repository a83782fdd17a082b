"""Learning-rate schedules and declared intent: edges of a schedule are normal, a
schedule that ended early or a warm-up that never finished is a WARN, a killed run is
context, and a FAIL says what a stop would have saved."""

from __future__ import annotations

import math

import numpy as np
import pytest

from trainproof import judge
from trainproof.findings import Level
from trainproof.rules.thresholds import DEFAULT

from conftest import judge_cols, one, write_hf


def _loss(n, seed=0):
    rng = np.random.default_rng(seed)
    return list(0.8 + 1.5 * np.exp(-np.arange(n) / (n / 4)) * np.exp(0.03 * rng.standard_normal(n)))


def _cosine(n, warm=0):
    t = np.arange(n)
    lr = 1e-4 * 0.5 * (1 + np.cos(np.pi * t / (n - 1)))
    if warm:
        lr[:warm] = 1e-4 * t[:warm] / warm
    lr[-1] = 0.0
    return list(lr)


@pytest.mark.parametrize("n", [8, 30, 200])
def test_warmup_from_zero_and_cosine_to_zero_are_not_zero_lr(n):
    rep = judge_cols(loss=_loss(n), lr=_cosine(n, warm=max(2, n // 10)))
    assert not {"TP-ZERO-LR", "TP-ZERO-LR-PARTIAL", "TP-LR-SCHEDULE-ENDED-EARLY"} & set(rep.ids())


@pytest.mark.parametrize("n,zero_share", [(40, 0.25), (100, 0.5), (300, 0.15)])
def test_schedule_that_decays_to_zero_early_is_ended_early_not_zero_lr(n, zero_share):
    k = int(n * (1 - zero_share))
    lr = list(np.linspace(1e-4, 0.0, k)) + [0.0] * (n - k)
    rep = judge_cols(loss=_loss(n), lr=lr)
    f = one(rep, "TP-LR-SCHEDULE-ENDED-EARLY")
    assert f.level is Level.WARN
    assert f.step == 10 * k  # the first exact zero
    assert f.data["share"] == pytest.approx((n - k) / (n - 1), rel=0.05)
    assert not {"TP-ZERO-LR", "TP-ZERO-LR-PARTIAL"} & set(rep.ids())


@pytest.mark.parametrize("n,gamma,peak", [(300, 0.9, 1e-3), (1000, 0.98, 1e-3), (3000, 0.95, 5e-5)])
def test_an_exponential_decay_to_effectively_zero_early_is_ended_early(n, gamma, peak):
    # ExponentialLR stepped per batch where per epoch was meant: the rate never reaches 0
    # but falls under both tiny_lr and 1/1000 of its peak within the first tenth, and the
    # rest of the run changes nothing (a new user's run: 1e-3 -> 4.9e-30).
    lr = peak * gamma ** np.arange(n)
    rep = judge_cols(loss=_loss(n), lr=list(lr))
    f = one(rep, "TP-LR-SCHEDULE-ENDED-EARLY")
    floor = min(DEFAULT.tiny_lr, DEFAULT.frozen_lr_share * peak)
    first = int(np.argmax(lr <= floor))
    assert f.step == 10 * (first + 1) and f.data["effective_zero"] == pytest.approx(floor)
    assert "effectively zero" in f.message
    assert f.data["share"] == pytest.approx((n - 1 - first) / (n - 1), rel=0.01) and f.data["share"] > 0.5


@pytest.mark.parametrize(
    "lr",
    [
        # cosine to a floor of 1e-7 at the very end of the run (no more than its last points)
        list(1e-7 + (1e-4 - 1e-7) * 0.5 * (1 + np.cos(np.pi * np.arange(300) / 299))),
        # an RLHF-style peak of 1e-6 decaying to 5e-8: 1/20 of its peak is no zero
        list(np.linspace(1e-6, 5e-8, 300)),
        # a low rate from the start (a preference tune's 5e-7): no schedule's end
        [5e-7] * 300,
        # a step schedule that drops by 10x twice: far from zero
        [1e-3] * 100 + [1e-4] * 100 + [1e-5] * 100,
        # ReduceLROnPlateau down to its min_lr of 1e-6 under a peak of 1e-3, held there for
        # the last third (the corpus's csv-keras-brats-unet): a floor the run trains at
        [1e-3] * 80 + [2e-4] * 40 + [4e-5] * 40 + [8e-6] * 40 + [1e-6] * 100,
    ],
)
def test_schedules_that_do_not_decay_to_effectively_zero_early_are_not_ended_early(lr):
    assert "TP-LR-SCHEDULE-ENDED-EARLY" not in judge_cols(loss=_loss(len(lr)), lr=lr).ids()


def test_schedule_ended_early_uses_declared_max_steps(tmp_path):
    # The log stops at step 300 with lr 0 from step 200; max_steps says 1000.
    rows = []
    for i in range(1, 31):
        lr = max(0.0, 1e-4 * (1 - i / 20))
        rows.append({"step": i * 10, "loss": 2.0 - i * 0.02, "learning_rate": lr})
    p = write_hf(tmp_path / "trainer_state.json", rows, max_steps=1000)
    f = [f for f in judge(p).findings if f.id == "TP-LR-SCHEDULE-ENDED-EARLY"][0]
    assert f.data["declared_end"] is True and f.data["remaining_steps"] == 800
    assert "declared max_steps" in f.evidence


def test_zeros_in_the_middle_are_still_partial_zero_lr():
    lr = [1e-4] * 20 + [0.0] * 10 + [1e-4] * 20
    f = one(judge_cols(loss=_loss(50), lr=lr), "TP-ZERO-LR-PARTIAL")
    assert f.data["nonpositive"] == 10 and f.data["first_step"] == 210


def test_all_zero_is_still_a_fail_whatever_the_edges():
    # a loss that does not move (what a zero rate leaves); a falling one is TP-ZERO-LR-LEARNING's
    still = list(1.5 * np.exp(0.03 * np.random.default_rng(0).standard_normal(60)))
    rep = judge_cols(loss=still, lr=[0.0] * 60)
    assert one(rep, "TP-ZERO-LR").level is Level.FAIL
    rep = judge_cols(loss=_loss(60), lr=[0.0] * 60)
    assert one(rep, "TP-ZERO-LR-LEARNING").level is Level.WARN and "TP-ZERO-LR" not in rep.ids()


def test_warmup_unfinished_when_the_run_reached_max_steps(tmp_path):
    rows = [{"step": i * 10, "loss": 2.0 - i * 0.01, "learning_rate": 1e-5 * i} for i in range(1, 31)]
    p = write_hf(tmp_path / "trainer_state.json", rows, max_steps=300)
    f = [f for f in judge(p).findings if f.id == "TP-WARMUP-UNFINISHED"][0]
    assert f.step == 300 and f.data["max_steps"] == 300


@pytest.mark.parametrize("seed", range(3))
def test_a_run_that_warmed_up_to_its_declared_end_is_judged_as_it_ended(tmp_path, seed):
    # A warm-up lambda without its min(1, .) climbs the rate 600x over the whole run while
    # the loss holds its start: at max_steps there is no later stretch to wait for, so the
    # no-progress rules judge it; the same log at two thirds of its schedule waits.
    rng = np.random.default_rng(seed)
    n = 60
    loss = 0.67 * np.exp(0.01 * rng.standard_normal(n))
    rows = [{"step": (i + 1) * 10, "loss": float(loss[i]), "learning_rate": 1e-4 * (i + 1) * 10} for i in range(n)]
    rep = judge(write_hf(tmp_path / "ended.json", rows, max_steps=n * 10))
    assert "TP-WARMUP-UNFINISHED" in rep.ids() and "warmup" not in {s.reason for s in rep.skipped.values()}
    assert "TP-LOSS-STALLED" in rep.ids()
    rep = judge(write_hf(tmp_path / "running.json", rows, max_steps=n * 15))
    assert rep.skipped["TP-LOSS-STALLED"].reason == "warmup" and "TP-WARMUP-UNFINISHED" not in rep.ids()


def test_rising_lr_in_a_run_that_did_not_reach_its_end_is_not_unfinished_warmup(tmp_path):
    rows = [{"step": i * 10, "loss": 2.0 - i * 0.01, "learning_rate": 1e-5 * i} for i in range(1, 31)]
    p = write_hf(tmp_path / "trainer_state.json", rows, max_steps=3000)
    rep = judge(p)
    assert "TP-WARMUP-UNFINISHED" not in rep.ids()
    f = [f for f in rep.findings if f.id == "TP-RUN-INCOMPLETE"][0]
    assert f.level is Level.INFO and f.data["fraction"] == pytest.approx(0.1)


def test_complete_run_is_not_incomplete(tmp_path):
    rows = [{"step": i * 10, "loss": 2.0 - i * 0.01, "learning_rate": 1e-4} for i in range(1, 31)]
    rep = judge(write_hf(tmp_path / "trainer_state.json", rows, max_steps=305))
    assert "TP-RUN-INCOMPLETE" not in rep.ids() and "TP-RUN-INCOMPLETE" in rep.ran


@pytest.mark.parametrize("at", [50, 120])
def test_fail_summary_names_the_step_and_the_steps_a_stop_would_have_saved(tmp_path, at):
    rows = []
    for i in range(1, 31):
        loss = math.nan if i * 10 >= at else 2.0 - i * 0.01
        rows.append({"step": i * 10, "loss": loss, "learning_rate": 1e-4})
    p = write_hf(
        tmp_path / "trainer_state.json",
        rows,
        max_steps=1000,
        best_model_checkpoint="out/checkpoint-40",
        best_global_step=40,
    )
    rep = judge(p)
    assert rep.verdict is Level.FAIL
    assert rep.summary.startswith(f"FAIL from step {at} (TP-NAN")
    assert f"would have saved {1000 - at} of the 1000 scheduled steps" in rep.summary
    assert "Best checkpoint to resume from: out/checkpoint-40 (step 40" in rep.summary
    assert rep.to_dict()["summary"] == rep.summary


def test_no_summary_without_a_fail():
    rep = judge_cols(loss=_loss(60))
    assert rep.summary is None and rep.to_dict()["summary"] is None


# --- an LR range test -------------------------------------------------------------------


def _sweep(n: int, start: float, end: float, seed: int, blow_from: float = 0.8):
    """An LR range test: the rate climbs geometrically start -> end over n logs; the loss
    falls, then blows up over the last fifth (2% point noise)."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)
    lr = start * (end / start) ** t
    loss = 2.3 - 1.5 * (1 - np.exp(-6 * t))
    loss = np.where(t < blow_from, loss, loss * np.exp(25 * (t - blow_from)))
    return list(loss * np.exp(0.02 * rng.standard_normal(n))), list(lr)


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("n,start,end", [(40, 1e-7, 10.0), (100, 1e-8, 1.0), (600, 1e-6, 3.0)])
def test_an_lr_range_test_is_named_and_its_blow_up_is_no_divergence(seed, n, start, end):
    loss, lr = _sweep(n, start, end, seed)
    rep = judge_cols(loss=loss, lr=lr)
    f = one(rep, "TP-LR-RANGE-TEST")
    assert f.level is Level.INFO and f.data["lr_first"] == pytest.approx(start)
    assert "TP-DIVERGE" not in rep.ids() and rep.skipped["TP-DIVERGE"].reason == "objective: lr_range_test"
    # without the learning rate in the log nothing says so: the blow-up is a divergence
    assert "TP-DIVERGE" in judge_cols(loss=loss).ids()


@pytest.mark.parametrize(
    "lr",
    [
        # ExponentialLR given gamma 1.05 by mistake: it climbs from the rate the run meant
        list(1e-3 * 1.05 ** np.arange(200)),
        # a linear warm-up from near 0 over the whole (short) log
        list(np.linspace(1e-7, 1e-3, 200)),
        # flat, then climbing x1.05 a log (a scheduler's sign error after warm-up)
        list(np.r_[np.full(100, 1e-6), 1e-6 * 1.05 ** np.arange(1, 101)]),
    ],
)
def test_a_climbing_rate_that_is_no_range_test_leaves_the_divergence_judged(lr):
    loss, _ = _sweep(len(lr), 1e-7, 10.0, 0)
    rep = judge_cols(loss=loss, lr=lr)
    assert "TP-LR-RANGE-TEST" not in rep.ids() and "TP-DIVERGE" in rep.ran
