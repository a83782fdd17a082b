"""Kinds of failure (issue 16, section 3): a classifier stuck at chance, exact zeros mixed
among ordinary losses, slow durable eval rises. Each on built variants, positive and
negative; the n-th point sits at step ``10 * (n + 1)``.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from _helpers import run_of

from trainproof.findings import Level
from trainproof.rules._stats import rounding_step
from trainproof.rules.engine import judge_runlog
from trainproof.rules.loss import accuracy_tolerance, chance_level, eval_set_size
from trainproof.rules.thresholds import DEFAULT
from trainproof.runlog import Record, build_runlog

from conftest import first_cases_fast, one


def ids(rep):
    return {f.id for f in rep.findings}


def at_level(n, level, rel, seed):
    rng = np.random.default_rng(seed)
    return level * np.exp(rel * rng.standard_normal(n))


# --- TP-CHANCE-LEVEL -----------------------------------------------------------------


@pytest.mark.parametrize("k", [5, 7, 10])
@pytest.mark.parametrize("n,rel,seed", first_cases_fast([(20, 0.01, 0), (110, 0.03, 1), (1000, 0.05, 2)], 1))
def test_a_loss_held_at_ln_k_above_four_needs_the_accuracy_to_fail(k, n, rel, seed):
    # From ln 5 on the levels crowd where language-model fine-tunes settle: a WARN alone,
    # a FAIL with an accuracy at 1/k.
    loss = at_level(n, math.log(k), rel, seed)
    loss[0] = math.log(k) * 1.02
    rep = judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-3)))
    assert one(rep, "TP-NEAR-CHANCE").data["classes"] == k and "TP-CHANCE-LEVEL" not in ids(rep)
    acc = [None] * n
    for e in range(1, 5):
        acc[e * n // 4 - 1] = 1 / k
    rep = judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-3), eval_accuracy=acc))
    assert one(rep, "TP-CHANCE-LEVEL").data["classes"] == k


def settled_onto(level, start_ratio, n, rel, seed):
    """A loss that falls from ``start_ratio`` x ``level`` onto it over the first fifth of
    the run and holds it, with relative noise ``rel``."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return level * (1 + (start_ratio - 1) * np.exp(-t / max(1, n / 20))) * np.exp(rel * rng.standard_normal(n))


@pytest.mark.parametrize("k", [5, 6, 7, 8, 10])
@pytest.mark.parametrize("n,rel,seed", [(60, 0.01, 0), (400, 0.03, 1), (5000, 0.05, 2)])
@pytest.mark.parametrize("start_ratio", [1.2, 1.4, 1.8])
def test_a_loss_that_settled_onto_a_crowded_ln_k_is_no_chance_warning(k, n, rel, seed, start_ratio):
    # ln 5 to ln 10 crowd: a 2% window around them covers a third to nine tenths of the way
    # to their neighbours, so a warm-up-then-plateau or a language-model fine-tune that
    # settles near one is a coincidence unless an accuracy names k or the loss sat there
    # from its first points, as a guesser's does
    loss = settled_onto(math.log(k), start_ratio, n, rel, seed)
    rep = judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-3)))
    assert not {"TP-NEAR-CHANCE", "TP-CHANCE-LEVEL"} & ids(rep), ids(rep)
    # an accuracy at 1/k names it
    acc = [None] * n
    for e in range(1, 5):
        acc[e * n // 4 - 1] = 1 / k
    rep = judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-3), eval_accuracy=acc))
    assert {"TP-NEAR-CHANCE", "TP-CHANCE-LEVEL"} & ids(rep), ids(rep)


def landed_at(level, share, n, rel, seed):
    """A guesser's loss: 1.5x ``level`` at the start, falling linearly onto it by
    ``share`` of the run, then holding it with relative noise ``rel``."""
    rng = np.random.default_rng(seed)
    u = np.arange(n) / n
    return level * np.where(u < share, 1.5 - 0.5 * u / share, 1.0) * np.exp(rel * rng.standard_normal(n))


@pytest.mark.parametrize("k", [5, 7, 10])
@pytest.mark.parametrize("share", [0.01, 0.03, 0.05])
@pytest.mark.parametrize("n,rel,seed", [(400, 0.01, 1), (5000, 0.03, 2)])
def test_a_guesser_that_lands_on_a_crowded_ln_k_within_a_twentieth_still_warns(k, share, n, rel, seed):
    loss = landed_at(math.log(k), share, n, rel, seed)
    rep = judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-3)))
    assert one(rep, "TP-NEAR-CHANCE").data["classes"] == k


@pytest.mark.parametrize("k", [5, 7, 10])
@pytest.mark.parametrize("n,rel,seed", [(400, 0.01, 1), (5000, 0.03, 2)])
def test_a_loss_that_takes_a_fifth_of_the_run_onto_a_crowded_ln_k_is_no_chance_warning(k, n, rel, seed):
    loss = landed_at(math.log(k), 0.2, n, rel, seed)
    assert "TP-NEAR-CHANCE" not in ids(judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-3))))


@pytest.mark.parametrize("k", [2, 3, 4])
@pytest.mark.parametrize("n,rel,seed", [(60, 0.01, 0), (400, 0.03, 1), (5000, 0.05, 2)])
def test_a_loss_that_settled_onto_an_isolated_ln_k_still_warns(k, n, rel, seed):
    # ln 2, ln 3, ln 4 stand apart (a 2% window covers at most 22% of the way to their
    # neighbours): a loss that fell 1.4x onto one is still read as near chance
    loss = settled_onto(math.log(k), 1.4, n, rel, seed)
    rep = judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-3)))
    f = one(rep, "TP-NEAR-CHANCE")
    assert f.data["classes"] == k
    # it says that the loss came down to the level, not that it never left it (a helper's
    # translation run 3.57 -> 1.05 was told it "never left the level")
    assert "settled there after falling from" in f.evidence and "never left" not in f.evidence
    guesser = at_level(n, math.log(k), rel, seed)
    assert (
        "It never left the level"
        in one(judge_runlog(run_of(loss=guesser, lr=np.full(n, 1e-3))), "TP-NEAR-CHANCE").evidence
    )


@pytest.mark.parametrize("k", [2, 3, 4])
@pytest.mark.parametrize("n,rel,seed", first_cases_fast([(20, 0.01, 0), (110, 0.03, 1), (1000, 0.05, 2)], 1))
def test_a_loss_held_at_ln_k_is_stuck_at_chance(k, n, rel, seed):
    loss = at_level(n, math.log(k), rel, seed)
    loss[0] = math.log(k) * 1.02
    # The loss alone: a classifier guessing or a loss of another kind settled at ln k, a WARN.
    rep = judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-3)))
    assert one(rep, "TP-NEAR-CHANCE").data["classes"] == k
    assert not [f for f in rep.findings if f.level == Level.FAIL]
    # The accuracy at 1/k says it: a FAIL.
    acc = [None] * n
    for e in range(1, 5):
        acc[e * n // 4 - 1] = 1 / k
    rep = judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-3), eval_accuracy=acc))
    f = one(rep, "TP-CHANCE-LEVEL")
    assert f.data["classes"] == k
    assert f"ln({k})" in f.message
    assert "TP-DEAD-RUN" not in ids(rep)  # implied, not a second FAIL
    # A user whose runs are all classifiers lets the level alone fail one.
    th = dataclasses.replace(DEFAULT, chance_fail_max_classes=4)
    rep = judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-3)), th)
    assert one(rep, "TP-CHANCE-LEVEL").data["classes"] == k


@pytest.mark.parametrize("k,examples", [(2, 32), (3, 32), (4, 100), (3, 500)])
def test_an_accuracy_on_a_small_evaluation_set_is_judged_by_its_own_grain(k, examples):
    # A 3-class GNN evaluated on 32 graphs scores 9/32 or 10/32 while guessing: 0.05 from
    # 1/3 is inside two binomial standard errors (0.17) of a 32-example accuracy.
    rng = np.random.default_rng(examples + k)
    n = 120
    loss = at_level(n, math.log(k), 0.01, k)
    hits = rng.binomial(examples, 1 / k, size=12)
    hits[-6:] = np.clip(np.round(examples / k - 1.6 * math.sqrt(examples * (1 / k) * (1 - 1 / k))), 0, None)
    hits[-6:] += np.arange(6) % 2  # distinct values: the grain is readable
    acc = [None] * n
    for e in range(12):
        acc[(e + 1) * 10 - 1] = float(np.float32(hits[e] / examples))
    assert eval_set_size(np.array([a for a in acc if a is not None])) in (examples, None) or examples > 100
    rep = judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-3), eval_accuracy=acc))
    assert "TP-CHANCE-LEVEL" in ids(rep)


def test_an_accuracy_far_from_one_in_k_on_a_large_evaluation_set_is_not_chance():
    # 5,000 examples: a guesser scores 1/3 within 0.014; 0.28 on such a set is not chance.
    a = np.array([1400, 1410, 1395, 1405]) / 5000
    assert eval_set_size(a) in (None, 1000) or eval_set_size(a) >= 200
    assert abs(0.2805 - 1 / 3) > accuracy_tolerance(a, 1 / 3, DEFAULT.chance_acc_tol)


def test_the_evaluation_set_size_is_read_from_the_accuracy_grain():
    assert eval_set_size(np.float32(np.array([9, 10, 11, 9]) / 32)) == 32
    assert eval_set_size(np.array([0.5, 0.5, 0.5])) is None  # one value: no grain
    assert eval_set_size(np.array([0.3311, 0.3402, 0.3378, 0.3351])) is None  # batch averages
    assert accuracy_tolerance(np.float32(np.array([9, 10, 11]) / 32), 1 / 3, 0.05) == pytest.approx(
        2 * math.sqrt(1 / 3 * 2 / 3 / 32)
    )


def _at_ln6(n, seed, train_p=None, eval_p=None, eval_n=2000):
    """A loss pinned at ln 6 (3% noise) with, optionally, a per-batch train accuracy (32
    examples a batch, true rate ``train_p``) at every point and a held-out accuracy on
    ``eval_n`` examples (true rate ``eval_p``) every 10th point."""
    rng = np.random.default_rng(seed)
    cols = {"loss": math.log(6) * np.exp(0.03 * rng.standard_normal(n)), "lr": np.full(n, 1e-3)}
    if train_p is not None:
        cols["train_accuracy"] = np.float32(rng.binomial(32, train_p, n) / 32)
    if eval_p is not None:
        cols["eval_accuracy"] = [
            float(np.float32(rng.binomial(eval_n, eval_p) / eval_n)) if i % 10 == 9 else None for i in range(n)
        ]
    return cols


@pytest.mark.parametrize("n", [100, 400])
@pytest.mark.parametrize("seed", range(3))
def test_a_train_accuracy_is_read_as_the_mean_of_its_batches(n, seed):
    # Each batch's accuracy is a new sample of 32: their mean sits within the error of a
    # mean of many, not of one batch. A mixup run's train accuracy of 0.28 against its
    # unmixed labels (a helper's healthy run, loss at ln 6 by coincidence) was read as 1/6.
    rep = judge_runlog(run_of(**_at_ln6(n, seed, train_p=0.28)))
    for f in rep.findings:
        assert "confirms" not in f.evidence, f.evidence
    # a train accuracy at 1/6 still confirms the guess
    f = one(judge_runlog(run_of(**_at_ln6(n, seed, train_p=1 / 6))), "TP-CHANCE-LEVEL")
    assert "train_accuracy" in f.evidence


@pytest.mark.parametrize("seed", range(3))
def test_a_train_accuracy_on_batches_of_4_is_read_by_its_mean(seed):
    # A batch of 4 scores 0, 0.25, 0.5…: at 1/6 the median of many is 0.25, their mean 1/6.
    rng = np.random.default_rng(seed)
    cols = _at_ln6(400, seed)
    cols["train_accuracy"] = rng.binomial(4, 1 / 6, 400) / 4
    assert "train_accuracy" in one(judge_runlog(run_of(**cols)), "TP-CHANCE-LEVEL").evidence


@pytest.mark.parametrize("seed", range(3))
def test_a_held_out_accuracy_at_chance_outweighs_another_above_it(seed):
    # The main head's val_acc at 1/6 confirms the guess; an auxiliary head's accuracy, or
    # a top-5 accuracy (torchvision's acc@5), above it says nothing of the main head.
    cols = _at_ln6(400, seed, eval_p=1 / 6)
    rng = np.random.default_rng(seed)
    cols["val_aux_acc"] = [
        float(rng.binomial(2000, 0.92) / 2000) if a is not None else None for a in cols["eval_accuracy"]
    ]
    assert "TP-CHANCE-LEVEL" in ids(judge_runlog(run_of(**cols)))
    cols = _at_ln6(400, seed)
    cols["val_acc@1"] = [float(rng.binomial(2000, 1 / 6) / 2000) if i % 10 == 9 else None for i in range(400)]
    cols["val_acc@5"] = [float(rng.binomial(2000, 0.83) / 2000) if i % 10 == 9 else None for i in range(400)]
    assert "TP-CHANCE-LEVEL" in ids(judge_runlog(run_of(**cols)))


@pytest.mark.parametrize("n", [100, 400])
@pytest.mark.parametrize("seed", range(3))
def test_a_held_out_accuracy_above_chance_makes_the_level_a_coincidence(n, seed):
    # The loss at ln 6 (mixup, label smoothing keep it high) while the classifier scores
    # 0.47 on 2,000 held-out examples: no FAIL, and the WARN names the accuracy.
    rep = judge_runlog(run_of(**_at_ln6(n, seed, train_p=1 / 6, eval_p=0.47)))
    assert rep.verdict is not Level.FAIL, ids(rep)
    assert "eval_accuracy ends at" in one(rep, "TP-NEAR-CHANCE").evidence
    # a held-out accuracy at 1/6, or within twice its tolerance above it, contradicts nothing
    for p in (1 / 6, 0.2):
        assert "TP-CHANCE-LEVEL" in ids(judge_runlog(run_of(**_at_ln6(n, seed, eval_p=p))))


@pytest.mark.parametrize("acc_key", ["val_acc", "val_acc1", "val/top1", "eval_accuracy"])
@pytest.mark.parametrize("k", [5, 10])
def test_a_held_out_accuracy_far_above_chance_alone_leaves_no_warning_at_ln_k(acc_key, k):
    # A new user's DeiT fine-tune with mixup and label smoothing (ImageNet-1k): train loss
    # 2.28-2.30 for 100 epochs (ln 10 by coincidence) beside val_acc1 0.76 -> 0.81, read
    # NEAR-CHANCE. A held-out accuracy far above 1/k and none at 1/k: no warning.
    rng = np.random.default_rng(k)
    n = 100
    loss = math.log(k) * (1.0 + 0.01 * rng.standard_normal(n)) * np.linspace(1.0, 0.99, n)
    acc = np.linspace(0.76, 0.81, n) + 0.003 * rng.standard_normal(n)
    rep = judge_runlog(run_of(loss=loss, **{acc_key: acc}))
    assert "TP-NEAR-CHANCE" not in ids(rep) and "TP-CHANCE-LEVEL" not in ids(rep), ids(rep)
    # the same loss with a held-out top-5 accuracy only (far above 1/k by nature) still warns
    rep5 = judge_runlog(run_of(loss=loss, val_acc5=acc))
    assert "TP-NEAR-CHANCE" in ids(rep5) or "TP-CHANCE-LEVEL" in ids(rep5)
    # and with a held-out accuracy at 1/k the level is a guess
    at = 1 / k + 0.002 * rng.standard_normal(n)
    assert "TP-CHANCE-LEVEL" in ids(judge_runlog(run_of(loss=loss, **{acc_key: at})))


@pytest.mark.parametrize("key", ["train/bpb", "bpc", "train_mse", "l1_loss", "huber_loss"])
@pytest.mark.parametrize("k", [3, 10])
def test_a_loss_in_bits_or_a_regression_error_at_ln_k_is_no_guess(key, k):
    # A new user's enwik8 model at 1.1 bits per byte read NEAR-CHANCE at ln 3: a level in
    # bits, or a regression's error, is no k-class guess in nats.
    rng = np.random.default_rng(k)
    loss = math.log(k) * (1.0 + 0.02 * rng.standard_normal(300))
    rep = judge_runlog(run_of(**{key: loss}))
    assert not {"TP-NEAR-CHANCE", "TP-CHANCE-LEVEL"} & ids(rep), (key, ids(rep))
    # a cross-entropy in nats at the same level is read
    assert {"TP-NEAR-CHANCE", "TP-CHANCE-LEVEL"} & ids(judge_runlog(run_of(train_ce_loss=loss)))


@pytest.mark.parametrize("k", [2, 3, 4])
@pytest.mark.parametrize("n", [40, 300])
def test_a_loss_passing_through_ln_k_is_not_stuck(k, n):
    # a healthy fall from 2 ln(k) to a tenth of it crosses ln(k) on the way
    t = np.linspace(0, 1, n)
    loss = at_level(n, 1.0, 0.03, 0) * (0.2 * math.log(k) + 1.8 * math.log(k) * np.exp(-3 * t))
    rep = judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-3)))
    assert "TP-CHANCE-LEVEL" not in ids(rep)


DRIFTS = [(4, 1.42, 1.36, 6800), (3, 1.128, 1.105, 50), (3, 1.10, 1.09, 400)]


@pytest.mark.parametrize("k,start,end,n", DRIFTS)
def test_a_drift_at_chance_with_the_accuracy_at_one_in_k_fails(k, start, end, n):
    # A 4-class classifier going 1.42 -> 1.36 over 68,000 steps (ln 4 = 1.386), a 3-class
    # NLI model at ln 3 whole run: a trend test calls the drift significant; the departure
    # from ln k, in nats against ln k, is under 3%, and the accuracy sits at 1/k.
    loss = np.linspace(start, end, n) * at_level(n, 1.0, 0.01, 3)
    acc = [None] * n
    for e in range(1, 6):
        acc[e * n // 5 - 1] = 1 / k + 0.01 * (-1) ** e
    rep = judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-3), eval_accuracy=acc))
    f = one(rep, "TP-CHANCE-LEVEL")
    assert f.data["classes"] == k and (math.log(k) - f.data["end_level"]) / math.log(k) < 0.03
    assert f.data["accuracy_key"] == "eval_accuracy" and "TP-NEAR-CHANCE" not in ids(rep)


@pytest.mark.parametrize("k,start,end,n", DRIFTS)
def test_a_drift_at_chance_without_an_accuracy_is_a_warning(k, start, end, n):
    # The same losses alone: a language model can sit at 1.386 by coincidence, so a drift
    # along ln k with a significant trend warns; a level with no trend still fails.
    loss = np.linspace(start, end, n) * at_level(n, 1.0, 0.01, 3)
    rep = judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-3)))
    found = ids(rep) & {"TP-CHANCE-LEVEL", "TP-NEAR-CHANCE"}
    assert len(found) == 1
    (f,) = [f for f in rep.findings if f.id in found]
    assert (f.id == "TP-NEAR-CHANCE") == (f.data["trend_z"] <= -2.326)


def test_an_accuracy_far_from_one_in_k_does_not_confirm_chance():
    n = 400
    loss = np.linspace(1.42, 1.36, n) * at_level(n, 1.0, 0.01, 3)
    acc = [None] * n
    for e in range(1, 6):
        acc[e * n // 5 - 1] = 0.7
    rep = judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-3), eval_accuracy=acc))
    assert "TP-CHANCE-LEVEL" not in ids(rep)


def test_a_language_model_passing_through_ln4_is_never_failed_at_chance():
    # jsonl-llamafactory-reward-keys' shape: 1.75 falling to 1.35, most of the run near
    # ln 4 = 1.386, the trend significant.
    n = 1700
    t = np.linspace(0, 1, n)
    loss = (1.33 + 0.42 * np.exp(-6 * t)) * at_level(n, 1.0, 0.02, 5)
    rep = judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-4)))
    assert rep.verdict is not Level.FAIL


@pytest.mark.parametrize("n", [50, 400, 6800])
def test_a_loss_that_leaves_chance_by_more_than_three_percent_is_not_stuck(n):
    # The same start at ln 4, but the end 6% below it: the model is learning.
    loss = np.linspace(1.40, 1.30, n) * at_level(n, 1.0, 0.01, 3)
    assert "TP-CHANCE-LEVEL" not in ids(judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-3))))


def _fall_to(level, start, n, rel, seed, fall_share=0.08):
    """A loss that falls from ``start`` to ``level`` over the first ``fall_share`` of ``n``
    points and holds it, with ``rel`` noise."""
    t = np.arange(n) / n
    return (level + (start - level) * np.exp(-t / (fall_share / 4))) * at_level(n, 1.0, rel, seed)


@pytest.mark.parametrize("k", [2, 3, 4])
@pytest.mark.parametrize("n,rel,seed", first_cases_fast([(100, 0.01, 0), (1000, 0.03, 1), (5000, 0.02, 2)], 1))
def test_a_loss_that_fell_to_ln_k_from_far_above_is_a_warning_not_chance(k, n, rel, seed):
    # A language model over 48 tokens whose data branch k ways: ln 48 -> ln k in the first
    # tenth, accuracy 1/k (train and held out). It beat a uniform guess over k, so the
    # level is no FAIL; a classifier that learned only the class prior looks the same, so
    # it is a WARN that says so.
    loss = _fall_to(math.log(k), math.log(48), n, rel, seed)
    ev = [None] * n
    for e in range(1, 11):
        ev[e * n // 10 - 1] = math.log(k) * (1 + 0.003 * (-1) ** e)
    acc = [None if v is None else 1 / k for v in ev]
    rep = judge_runlog(run_of(loss=loss, eval_loss=ev, eval_accuracy=acc, lr=np.full(n, 1e-3)))
    assert rep.verdict is not Level.FAIL, ids(rep)
    f = one(rep, "TP-NEAR-CHANCE")
    assert f.data["classes"] == k and "fell there from" in f.evidence
    # The same level from a start at ln k (a guesser's) still fails, and so does a start
    # under twice ln k (a classifier whose first logits were a little off).
    for start in (math.log(k), 1.6 * math.log(k)):
        rep = judge_runlog(
            run_of(
                loss=_fall_to(math.log(k), start, n, rel, seed), eval_loss=ev, eval_accuracy=acc, lr=np.full(n, 1e-3)
            )
        )
        assert rep.verdict is Level.FAIL and "TP-CHANCE-LEVEL" in ids(rep), (start, ids(rep))


def test_a_plateau_between_chance_levels_is_not_called_chance():
    # 1.25 sits between ln 3 (1.099) and ln 4 (1.386)
    assert chance_level(at_level(200, 1.25, 0.02, 0), 10, 0.02, 0.03, 0.8) is None


def test_classes_beyond_ten_are_not_guessed():
    assert chance_level(at_level(200, math.log(20), 0.01, 0), 10, 0.02, 0.03, 0.8) is None


def test_an_eval_loss_at_chance_is_caught_when_the_train_loss_is_not():
    n = 120
    train = at_level(n, 1.0, 0.05, 0) * np.linspace(1.3, 1.0, n)  # noisy, some trend
    ev = [None] * n
    for e in range(12):
        ev[(e + 1) * 10 - 1] = math.log(4) * (1 + 0.004 * ((-1) ** e))
    rep = judge_runlog(run_of(loss=train, eval_loss=ev, lr=np.full(n, 1e-3)))
    f = one(rep, "TP-NEAR-CHANCE")
    assert f.data["series"] == "eval_loss" and f.data["classes"] == 4
    acc = [None if v is None else 0.25 for v in ev]
    rep = judge_runlog(run_of(loss=train, eval_loss=ev, eval_accuracy=acc, lr=np.full(n, 1e-3)))
    f = one(rep, "TP-CHANCE-LEVEL")
    assert f.data["series"] == "eval_loss" and f.data["classes"] == 4


def test_a_zero_learning_rate_is_left_to_its_own_rule():
    n = 60
    rep = judge_runlog(run_of(loss=at_level(n, math.log(2), 0.01, 0), lr=np.zeros(n)))
    assert "TP-CHANCE-LEVEL" not in ids(rep)
    assert "TP-ZERO-LR" in ids(rep)


def test_an_rl_objective_near_ln2_is_not_judged_at_chance():
    n = 60  # a DPO loss starts at ln 2 by construction
    rep = judge_runlog(run_of(loss=at_level(n, math.log(2), 0.01, 0), **{"rewards/margins": np.linspace(0, 1, n)}))
    assert "TP-CHANCE-LEVEL" not in ids(rep)


# --- TP-ZERO-LOSS-MIXED ---------------------------------------------------------------


@pytest.mark.parametrize("n,share,seed", [(50, 0.3, 0), (200, 0.12, 1), (2000, 0.5, 2)])
def test_exact_zeros_among_ordinary_losses_fail(n, share, seed):
    rng = np.random.default_rng(seed)
    loss = at_level(n, 9.0, 0.2, seed)
    idx = rng.choice(np.arange(n // 4, n - 1), size=max(5, int(share * n)), replace=False)
    loss[idx] = 0.0
    loss[-1] = 8.0
    rep = judge_runlog(run_of(loss=loss))
    f = one(rep, "TP-ZERO-LOSS-MIXED")
    assert f.level is Level.FAIL
    assert f.data["zero_points"] == idx.size


def test_saturation_zeros_of_a_converged_classifier_are_not_mixed_zeros():
    loss = np.concatenate([np.geomspace(0.8, 1e-4, 150), at_level(150, 1e-4, 0.5, 0)])
    loss[np.arange(160, 300, 3)] = 0.0
    loss[-1] = 1e-4
    rep = judge_runlog(run_of(loss=loss))
    assert "TP-ZERO-LOSS-MIXED" not in ids(rep)


def test_a_few_zeros_in_a_long_run_are_not_mixed_zeros():
    n = 500
    loss = at_level(n, 2.0, 0.1, 0)
    loss[[100, 200, 300, 400, 450]] = 0.0  # 1%
    rep = judge_runlog(run_of(loss=loss))
    assert "TP-ZERO-LOSS-MIXED" not in ids(rep)


# --- TP-OVERFIT: slow durable rises -----------------------------------------------------


def eval_curve(values, every=10):
    n = every * len(values)
    ev = [None] * n
    for i, v in enumerate(values):
        ev[(i + 1) * every - 1] = v
    return n, ev


@pytest.mark.parametrize("evals_after,rise", [(4, 0.08), (10, 0.12), (30, 0.10)])
def test_a_slow_steady_eval_rise_while_train_falls_warns(evals_after, rise):
    rng = np.random.default_rng(evals_after)
    down = list(np.linspace(0.70, 0.52, 5))
    up = list(0.52 * (1 + np.linspace(0, rise, evals_after + 1)[1:]) * (1 + 0.003 * rng.standard_normal(evals_after)))
    n, ev = eval_curve(down + up)
    train = np.geomspace(0.7, 0.1, n)
    f = one(judge_runlog(run_of(loss=train, eval_loss=ev)), "TP-OVERFIT")
    assert f.level is Level.WARN
    assert f.data["ratio"] > 1.05


def test_eval_noise_around_a_level_is_not_a_slow_rise():
    rng = np.random.default_rng(0)
    vals = list(np.linspace(0.7, 0.52, 5)) + list(0.53 * (1 + 0.02 * rng.standard_normal(12)))
    n, ev = eval_curve(vals)
    rep = judge_runlog(run_of(loss=np.geomspace(0.7, 0.1, n), eval_loss=ev))
    assert "TP-OVERFIT" not in ids(rep)


def test_a_slow_rise_under_five_percent_is_not_overfitting():
    vals = list(np.linspace(0.7, 0.52, 5)) + list(0.52 * (1 + np.linspace(0.003, 0.03, 8)))
    n, ev = eval_curve(vals)
    rep = judge_runlog(run_of(loss=np.geomspace(0.7, 0.1, n), eval_loss=ev))
    assert "TP-OVERFIT" not in ids(rep)


def test_a_slow_eval_rise_with_the_train_loss_rising_too_is_not_overfitting():
    vals = list(np.linspace(0.7, 0.52, 5)) + list(0.52 * (1 + np.linspace(0.01, 0.12, 10)))
    n, ev = eval_curve(vals)
    train = np.concatenate([np.geomspace(0.7, 0.3, n // 3), np.linspace(0.3, 0.4, n - n // 3)])
    rep = judge_runlog(run_of(loss=train, eval_loss=ev))
    assert "TP-OVERFIT" not in ids(rep)


# --- RL and preference runs: judged without a gradient norm; no signal; fading signal ----


def dpo(n, margins):
    loss = np.log(2) * np.exp(-np.linspace(0, 0.5, n)) * at_level(n, 1.0, 0.02, 0)
    return run_of(
        loss=loss,
        **{
            "rewards/margins": margins,
            "rewards/accuracies": np.linspace(0.5, 0.8, n),
            "logps/chosen": np.linspace(-100, -90, n),
        },
    )


@pytest.mark.parametrize("n", [10, 100])
def test_a_dpo_run_without_a_gradient_norm_is_judged(n):
    rep = judge_runlog(dpo(n, np.linspace(0.0, 1.0, n)))
    assert rep.verdict is Level.PASS
    assert "TP-RL-NO-SIGNAL" in rep.ran


def test_dpo_margins_exactly_zero_throughout_is_no_signal():
    rep = judge_runlog(dpo(50, np.zeros(50)))
    f = one(rep, "TP-RL-NO-SIGNAL")
    assert f.level is Level.FAIL and f.data["value"] == 0.0


def _returns(n, seed, *, first, floor, blips=0, solved_at=None, top=1.0, noise=0.0):
    """``n`` episodic returns of a policy: ``first`` random returns around the middle of
    the range, then ``floor`` at every iteration with ``blips`` rare successes spread over
    the first third; with ``solved_at`` (a share), a noisy rise to ``top`` held exactly
    from there on (a policy that found the environment's maximum)."""
    rng = np.random.default_rng(seed)
    r = np.full(n, floor, dtype=float)
    r[:first] = floor + (top - floor) * rng.uniform(0.2, 0.6, first)
    for i in rng.choice(np.arange(first, max(first + 1, n // 3)), size=blips, replace=False):
        r[i] = floor + (top - floor) * rng.uniform(0.3, 1.0)
    if solved_at is not None:
        k = int(solved_at * n)
        r[first:k] = floor + (top - floor) * np.linspace(0.2, 0.9, k - first) + noise * rng.standard_normal(k - first)
        r[k:] = top
    return run_of(reward=r, **{"losses/value_loss": np.exp(-np.linspace(0, 2, n)) + 0.01})


@pytest.mark.parametrize("n", [60, 150, 1000])
@pytest.mark.parametrize("first,blips", [(1, 0), (2, 1), (4, 2)])
def test_a_return_pinned_at_its_floor_after_its_first_logs_is_no_signal(n, first, blips):
    # at most a tenth of the returns differ (rl_pinned_share)
    for seed in range(2):
        rep = judge_runlog(_returns(n, seed, first=first, floor=-0.2, blips=blips))
        f = one(rep, "TP-RL-NO-SIGNAL")
        assert f.level is Level.FAIL and f.data["value"] == -0.2, rep.ids()


def test_a_return_pinned_above_the_first_median_but_below_the_best_is_no_signal():
    # a policy collapsed (entropy 0) to exactly 10 after random returns of 6-13: not the
    # best it has had, so no environment maximum held
    rng = np.random.default_rng(5)
    r = np.full(200, 10.0)
    r[:12] = rng.uniform(6, 13, 12)
    r[3] = 13.0
    rep = judge_runlog(run_of(reward=r, **{"losses/value_loss": np.linspace(1, 0.1, 200)}))
    assert one(rep, "TP-RL-NO-SIGNAL").level is Level.FAIL


@pytest.mark.parametrize("n", [40, 150, 1000])
def test_a_return_held_at_the_maximum_or_a_sparse_reward_found_again_is_signal(n):
    for seed in range(2):
        # solved: rises, then the maximum at every iteration from 10-60% of the run on
        for solved_at in (0.1, 0.3, 0.6):
            rep = judge_runlog(_returns(n, seed, first=3, floor=-0.2, solved_at=solved_at, top=0.94, noise=0.02))
            assert "TP-RL-NO-SIGNAL" not in ids(rep) and rep.verdict is not Level.FAIL, (solved_at, rep.ids())
        # a sparse reward found at a tenth of the iterations, all through the run
        rng = np.random.default_rng(seed)
        r = np.zeros(n)
        r[rng.choice(n, size=max(4, n // 10), replace=False)] = 1.0
        r[-1] = 0.0
        rep = judge_runlog(run_of(reward=r, **{"losses/value_loss": np.linspace(1, 0.5, n)}))
        assert "TP-RL-NO-SIGNAL" not in ids(rep), rep.ids()


def grpo(n, zero_std, reward):
    return run_of(loss=np.full(n, 1e-4), reward=reward, frac_reward_zero_std=zero_std, grad_norm=np.full(n, 0.3))


@pytest.mark.parametrize("n", [20, 200])
def test_a_grpo_run_with_no_reward_spread_and_zero_reward_fails(n):
    reward = np.zeros(n)
    reward[::7] = 0.25  # a few groups get something
    rep = judge_runlog(grpo(n, np.full(n, 1.0), reward))
    f = one(rep, "TP-RL-NO-SIGNAL")
    assert f.data["zero_std_median"] == 1.0 and f.data["reward_zero_share"] >= 0.8


def test_a_learning_grpo_run_has_signal():
    n = 100
    rep = judge_runlog(grpo(n, np.linspace(0.0, 0.2, n), np.linspace(0.1, 2.0, n)))
    assert "TP-RL-NO-SIGNAL" not in ids(rep) and "TP-RL-SIGNAL-FADING" not in ids(rep)
    assert rep.verdict is not Level.FAIL


def test_half_the_groups_without_spread_at_the_end_is_a_fading_signal_warn():
    n = 60
    zs = np.concatenate([np.full(40, 0.1), np.full(20, 0.7)])
    rep = judge_runlog(grpo(n, zs, np.linspace(0.5, 1.0, n)))
    assert one(rep, "TP-RL-SIGNAL-FADING").level is Level.WARN
    assert rep.verdict is Level.WARN


# --- TP-LOSS-SPIKE: spikes the run came back from ------------------------------------------


@pytest.mark.parametrize("n,burst,seed", [(60, 1, 0), (200, 3, 1), (1000, 5, 2)])
def test_a_spike_that_comes_back_is_a_warn_with_its_steps(n, burst, seed):
    t = np.linspace(0, 1, n)
    loss = (0.5 + 2.0 * np.exp(-4 * t)) * at_level(n, 1.0, 0.02, seed)
    at = n // 2
    loss[at : at + burst] *= 8.0
    rep = judge_runlog(run_of(loss=loss))
    f = one(rep, "TP-LOSS-SPIKE")
    assert f.level is Level.WARN and f.data["recovered"] is True
    assert 10 * (at + 1) <= f.data["largest_step"] <= 10 * (at + burst)
    assert rep.verdict is Level.WARN
    assert "TP-DIVERGE" not in ids(rep)


def test_a_spike_before_a_plateau_does_not_make_the_plateau_a_divergence():
    n = 120
    loss = at_level(n, 1.0, 0.02, 3) * np.concatenate([np.geomspace(3.0, 0.6, 40), np.full(n - 40, 0.6)])
    loss[60:63] *= 10
    rep = judge_runlog(run_of(loss=loss))
    assert "TP-DIVERGE" not in ids(rep) and rep.verdict is not Level.FAIL
    assert "TP-LOSS-SPIKE" in ids(rep)


def test_ordinary_noise_is_no_spike():
    n = 300
    rep = judge_runlog(run_of(loss=at_level(n, 1.0, 0.15, 4) * np.geomspace(3, 0.5, n)))
    assert "TP-LOSS-SPIKE" not in ids(rep)


# --- TP-NEGATIVE-LOSS ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "key", ["train/CrossEntropyLoss", "ce_loss", "train_mse", "train_bce_loss", "loss_ctc", "LogLoss"]
)
def test_a_negative_value_of_a_loss_that_cannot_be_negative_fails(key):
    n = 40
    loss = np.geomspace(2.0, 0.01, n)
    loss[30:] = -0.05
    rep = judge_runlog(run_of(**{key: loss}))
    assert rep.mapping["loss"]["source"] == key
    f = one(rep, "TP-NEGATIVE-LOSS")
    assert f.data["negative_points"] == 10 and f.step == 310


def test_a_perplexity_beside_the_loss_says_it_is_a_cross_entropy():
    n = 40
    loss = np.linspace(3.0, -0.2, n)
    rep = judge_runlog(run_of(loss=loss, perplexity=np.exp(np.abs(loss))))
    assert "perplexity" in one(rep, "TP-NEGATIVE-LOSS").data["because"]


@pytest.mark.parametrize("key", ["loss", "nll_loss", "total_loss", "elbo_loss"])
def test_a_loss_that_may_be_negative_by_design_is_not_failed_for_it(key):
    n = 40
    rep = judge_runlog(run_of(**{key: np.linspace(1.0, -3.0, n)}))
    assert "TP-NEGATIVE-LOSS" not in ids(rep)


def test_rounding_noise_below_zero_is_not_negative():
    n = 40
    loss = np.geomspace(1.0, 1e-4, n)
    loss[-1] = -1e-9
    rep = judge_runlog(run_of(ce_loss=loss))
    assert "TP-NEGATIVE-LOSS" not in ids(rep)


# --- TP-RL-RETURN-COLLAPSE: a return that rose and fell back to its start ----------------


def returns(n, shape, noise, seed, start=-1800.0, peak=2500.0, end=-1900.0):
    """An episode return over ``n`` points: ``rise`` climbs start -> peak; ``collapse``
    climbs to the peak by 40% of the run, then falls to ``end`` by 70% and stays;
    ``late_dip`` climbs and loses a third of its gain over the last 20%."""
    t = np.linspace(0, 1, n)
    rng = np.random.default_rng(seed)
    gain = peak - start
    if shape == "rise":
        y = start + gain * (1 - np.exp(-5 * t))
    elif shape == "collapse":
        y = np.where(t < 0.4, start + gain * t / 0.4, np.where(t < 0.7, peak + (end - peak) * (t - 0.4) / 0.3, end))
    elif shape == "late_dip":
        y = np.where(t < 0.8, start + gain * np.minimum(1, t / 0.5), peak - gain / 3 * (t - 0.8) / 0.2)
    else:
        raise ValueError(shape)
    return y + noise * gain * rng.standard_normal(n)


def rl_run(reward, key="rollout/return_history", **extra):
    # DDPG-style: actor and critic terms only, no loss.
    n = len(reward)
    return run_of(
        **{key: reward, "train/loss_actor": np.linspace(-100, 90, n), "train/loss_critic": np.full(n, 80.0)}, **extra
    )


@pytest.mark.parametrize("n,noise,seed", [(30, 0.02, 0), (200, 0.1, 1), (850, 0.3, 2), (3000, 0.5, 3)])
@pytest.mark.parametrize("key", ["rollout/return_history", "rollout/ep_rew_mean", "episode_return"])
def test_a_return_that_collapses_back_to_its_start_fails(n, noise, seed, key):
    rep = judge_runlog(rl_run(returns(n, "collapse", noise, seed), key=key))
    f = one(rep, "TP-RL-RETURN-COLLAPSE")
    assert f.level is Level.FAIL and rep.verdict is Level.FAIL
    assert f.data["end"] <= f.data["start"] < f.data["peak"]
    # the collapse is visible after the peak (40% of the run) and before it settles (70%)
    assert f.data["peak_step"] < f.data["onset_step"] <= 10 * n * 0.85
    assert "TP-NO-LOSS" not in ids(rep)  # judged on its return without a loss


@pytest.mark.parametrize("n,noise,seed", [(30, 0.02, 0), (300, 0.2, 1), (1000, 0.5, 2)])
def test_a_rising_return_and_a_late_dip_above_the_start_pass(n, noise, seed):
    for shape in ("rise", "late_dip"):
        rep = judge_runlog(rl_run(returns(n, shape, noise, seed)))
        assert "TP-RL-RETURN-COLLAPSE" not in ids(rep), shape
        assert rep.verdict is not Level.FAIL and "TP-RL-RETURN-COLLAPSE" in rep.ran


@pytest.mark.slow
def test_pure_noise_returns_never_collapse_nor_fall():
    fired = []
    for seed in range(300):
        n = 30 + 17 * seed % 900
        rng = np.random.default_rng(seed)
        rep = judge_runlog(rl_run(100.0 * rng.standard_normal(n) - 50.0))
        fired += [i for i in ("TP-RL-RETURN-COLLAPSE", "TP-RL-RETURN-FALLING") if i in ids(rep)]
    assert fired == []


def test_a_return_that_only_falls_is_not_a_collapse_and_short_runs_are_skipped():
    n = 200
    falling = np.linspace(1000, -1000, n) + np.random.default_rng(0).normal(0, 50, n)
    rep = judge_runlog(rl_run(falling))
    assert "TP-RL-RETURN-COLLAPSE" not in ids(rep) and "TP-RL-RETURN-FALLING" in ids(rep)
    rep = judge_runlog(rl_run(returns(29, "collapse", 0.0, 0)))
    assert rep.skipped["TP-RL-RETURN-COLLAPSE"].reason == "too_few_points"


def test_a_preference_margin_is_not_a_return():
    n = 100
    m = returns(n, "collapse", 0.05, 0, start=0.0, peak=2.0, end=-0.1)
    rep = judge_runlog(run_of(loss=np.full(n, 0.69) * np.linspace(1, 0.8, n), **{"rewards/margins": m}))
    assert "TP-RL-RETURN-COLLAPSE" not in ids(rep)


def test_a_collapsed_return_is_read_from_a_baselines_progress_csv(tmp_path):
    from trainproof.api import judge

    n = 400
    r = returns(n, "collapse", 0.1, 4)
    lines = ["rollout/return,rollout/return_history,train/loss_actor,train/loss_critic,total/steps"]
    for i in range(n):
        lines.append(f"{float(np.mean(r[: i + 1]))},{r[i]},{-100 + i * 0.5},{80.0},{2000 * (i + 1)}")
    p = tmp_path / "progress.csv"
    p.write_text("\n".join(lines) + "\n")
    rep = judge(p)
    assert rep.mapping["reward"]["source"] == "rollout/return_history"  # the 100-episode window, not the lagging mean
    assert one(rep, "TP-RL-RETURN-COLLAPSE").level is Level.FAIL


# --- TP-EVAL-DIVERGE: eval loss and train loss both worse than they were ---------------------


def eval_run(n_train, n_eval, train, evals):
    """A run of ``n_train`` train-loss points and ``n_eval`` evaluations spread over the
    same steps (10..10 * max(n_train, n_eval) * 4), like an HF run logging every
    ``logging_steps`` and evaluating every epoch."""
    last = 40 * max(n_train, n_eval)
    recs = []
    for i, s in enumerate(np.linspace(last / n_train, last, n_train)):
        recs.append(Record(float(round(s)), {"loss": float(train[i]), "learning_rate": 1e-4}, 2 * i + 1))
    for i, s in enumerate(np.linspace(last / n_eval, last, n_eval)):
        recs.append(Record(float(round(s)) + 0.5, {"eval_loss": float(evals[i])}, 2 * i + 2))
    recs.sort(key=lambda r: r.step)
    return build_runlog(recs, "x.jsonl", "jsonl")


@pytest.mark.parametrize(
    "n_train,n_eval,noise,seed", [(3, 8, 0.02, 0), (5, 20, 0.08, 1), (50, 60, 0.05, 2), (400, 12, 0.03, 3)]
)
def test_eval_and_train_both_worse_than_at_the_eval_minimum_fail(n_train, n_eval, noise, seed):
    rng = np.random.default_rng(seed)
    evals = 2.5 * np.r_[1.0, np.full(n_eval - 1, 1.45)] * np.exp(noise * rng.standard_normal(n_eval))
    evals[0] = 2.5
    train = np.linspace(1.2, 1.9, n_train) * np.exp(0.02 * rng.standard_normal(n_train))
    rep = judge_runlog(eval_run(n_train, n_eval, train, evals))
    fails = [f for f in rep.findings if f.level is Level.FAIL]
    assert len(fails) == 1, rep.ids()  # one cause, one FAIL
    if fails[0].id == "TP-DIVERGE":  # the train loss alone shows it: the eval finding is implied
        assert "TP-EVAL-DIVERGE" in fails[0].data["implies"]
    else:
        f = one(rep, "TP-EVAL-DIVERGE")
        assert f.data["evals_after_min"] == n_eval - 1
    assert n_train >= 10 or fails[0].id == "TP-EVAL-DIVERGE"
    assert "TP-OVERFIT" not in ids(rep)


@pytest.mark.parametrize("n_eval,sd,seed", [(12, 0.02, 0), (30, 0.05, 1), (60, 0.06, 2), (129, 0.04, 3)])
def test_one_low_evaluation_the_series_returns_from_is_not_a_minimum_to_diverge_from(n_eval, sd, seed):
    # A noisy validation subset: one evaluation 35% below a level the series holds before
    # and after it, while the train loss dips and comes back 1.3x higher.
    rng = np.random.default_rng(seed)
    evals = 1.5 * np.exp(sd * rng.standard_normal(n_eval))
    j = n_eval // 2
    evals[j] = 0.65 * evals[j - 1]
    n_train = max(6, n_eval)
    train = np.where(np.arange(n_train) < n_train // 2, 0.8, 1.05) * np.exp(0.02 * rng.standard_normal(n_train))
    assert "TP-EVAL-DIVERGE" not in ids(judge_runlog(eval_run(n_train, n_eval, train, evals)))
    # The same dip followed by a climb above where the series stood before it diverged.
    climbed = evals.copy()
    climbed[j + 1 :] *= 1.6
    assert "TP-EVAL-DIVERGE" in ids(judge_runlog(eval_run(n_train, n_eval, train, climbed)))


@pytest.mark.parametrize(
    "evals",
    [
        [3.0, 2.0, 1.5, 2.5, 3.0, 3.5, 3.6, 3.7],  # a steep V
        [3.0, 2.6, 2.2, 1.8, 1.5, 2.4, 2.5, 2.45, 2.5, 2.55],  # a gradual fall, then a step up that holds
        [2.0, 1.0, 3.0, 3.1, 3.0, 3.2, 3.1],  # a step up after the second evaluation
        [
            3.0,
            2.0,
            1.9,
            1.8,
            1.0,
            2.5,
            2.6,
            2.5,
            2.7,
            2.6,
        ],  # one deep evaluation, then above every earlier level but the first
    ],
)
def test_a_divergence_from_a_sharp_eval_minimum_still_fails(evals):
    n = len(evals)
    train = np.r_[np.linspace(1.2, 0.8, n // 2), np.full(n - n // 2, 1.3)]
    assert "TP-EVAL-DIVERGE" in ids(judge_runlog(eval_run(n, n, train, np.array(evals))))


@pytest.mark.parametrize("n_train,seed", [(60, 0), (300, 1), (1000, 2)])
def test_eval_diverge_needs_a_train_rise_beyond_the_train_losss_own_noise(n_train, seed):
    # A converged classifier trained on at lr 1e-4: its batches at 1e-5..3e-3 (heavy-tailed
    # around 3e-5), its eval loss 0.0040 -> 0.0011 and then wiggling at 0.0015-0.0018 (one
    # example of 1,024 deciding). Medians of 5 such train points differ 4x by chance (a
    # helper's run FAILed TP-EVAL-DIVERGE, "the train loss rose 4.39x").
    rng = np.random.default_rng(seed)
    train = 3e-5 * np.exp(1.5 * rng.standard_normal(n_train))
    evals = np.array([0.0040, 0.0021, 0.0019, 0.0014, 0.0013, 0.0011, 0.00108, 0.0018, 0.0017, 0.0017, 0.0016, 0.0016])
    rep = judge_runlog(eval_run(n_train, evals.size, train, evals))
    assert "TP-EVAL-DIVERGE" not in ids(rep) and rep.verdict is not Level.FAIL, ids(rep)
    # The same evaluations over a train loss that climbs 3x beyond its noise: a divergence.
    climbing = np.where(np.arange(n_train) < n_train * 7 // 12, 0.2, 0.6) * np.exp(0.1 * rng.standard_normal(n_train))
    rep = judge_runlog(eval_run(n_train, evals.size, climbing, evals * 100))
    assert {"TP-EVAL-DIVERGE", "TP-DIVERGE"} & ids(rep) and rep.verdict is Level.FAIL, ids(rep)


@pytest.mark.parametrize("seed", range(3))
def test_eval_diverge_reads_the_train_levels_from_enough_points(seed):
    # A reviewer's run: train loss 0.60 then 0.84 from step 1,000 (1.4x) at 25% noise, 100
    # points a side; eval 0.645 at its minimum, then 1.14-1.16 at all 6 later evaluations.
    # Levels of 5 points would hide the rise in their noise; a quarter of the run does not.
    rng = np.random.default_rng(seed)
    n = 200
    train = np.where(np.arange(n) < 100, 0.6, 0.84) * np.exp(0.25 * rng.standard_normal(n))
    evals = np.array([1.54, 1.11, 0.87, 0.75, 0.66, 0.645, 1.16, 1.16, 1.14, 1.16, 1.14, 1.16])
    rep = judge_runlog(eval_run(n, evals.size, train, evals))
    assert "TP-EVAL-DIVERGE" in ids(rep), ids(rep)


@pytest.mark.parametrize("restart_rate", [1e-4, 2e-4])
def test_both_losses_up_in_a_new_cycle_of_a_restarting_schedule_are_not_divergence(restart_rate):
    # Cosine with warm restarts: the rate decays to ~0 by the eval minimum, jumps back to a
    # rate the run held before (1e-4, or 2e-4 from a 2e-4 warm-up), and the run ends while
    # it is high: both losses are up in the new cycle, by the schedule.
    n_train, n_eval = 40, 12
    last = 40 * n_train
    tr_steps = np.linspace(last / n_train, last, n_train)
    ev_steps = np.linspace(last / n_eval, last, n_eval) + 0.5
    rng = np.random.default_rng(0)
    lr = np.where(tr_steps <= 1000, restart_rate * (1 - tr_steps / 1000) + 1e-7, restart_rate)
    train = np.where(tr_steps <= 1000, 1.5 - 0.5 * tr_steps / 1000, 1.3) * np.exp(0.01 * rng.standard_normal(n_train))
    evals = np.where(ev_steps <= 1000, 1.6 - 0.5 * ev_steps / 1000, 1.45) * np.exp(0.01 * rng.standard_normal(n_eval))

    def run(lr_values):
        recs = [
            Record(float(s), {"loss": float(v), "learning_rate": float(r)}, i + 1)
            for i, (s, v, r) in enumerate(zip(tr_steps, train, lr_values))
        ]
        recs += [Record(float(s), {"eval_loss": float(v)}, 100 + i) for i, (s, v) in enumerate(zip(ev_steps, evals))]
        recs.sort(key=lambda r: r.step)
        return build_runlog(recs, "x.jsonl", "jsonl")

    assert "TP-EVAL-DIVERGE" not in ids(judge_runlog(run(lr)))
    # The same losses with a rate that never came back: a divergence.
    flat_after = np.where(tr_steps <= 1000, lr, 1e-7)
    assert "TP-EVAL-DIVERGE" in ids(judge_runlog(run(flat_after)))


@pytest.mark.parametrize("n_train,n_eval", [(5, 20), (200, 30)])
def test_eval_rising_while_train_falls_is_overfitting_not_divergence(n_train, n_eval):
    evals = np.r_[2.0, np.linspace(2.5, 3.5, n_eval - 1)]
    train = np.linspace(1.5, 0.3, n_train)
    rep = judge_runlog(eval_run(n_train, n_eval, train, evals))
    assert "TP-EVAL-DIVERGE" not in ids(rep)
    assert "TP-OVERFIT" in ids(rep)


@pytest.mark.slow
@pytest.mark.parametrize("sd", [0.02, 0.1, 0.3])
def test_a_low_outlier_among_noisy_evaluations_is_not_a_minimum_to_diverge_from(sd):
    healthy = rising = 0
    for seed in range(200):
        rng = np.random.default_rng(seed)
        n_eval = 8 + seed % 40
        evals = 3.0 * np.exp(sd * rng.standard_normal(n_eval))
        healthy += "TP-EVAL-DIVERGE" in ids(judge_runlog(eval_run(6, n_eval, np.linspace(1.9, 1.5, 6), evals)))
        # the train loss even rises 1.27x: the minimum of noise still rarely passes
        rising += "TP-EVAL-DIVERGE" in ids(judge_runlog(eval_run(6, n_eval, np.linspace(1.5, 1.9, 6), evals)))
    assert healthy == 0 and rising <= 2


def test_too_few_evaluations_after_the_minimum_or_a_train_loss_that_held_is_not_divergence():
    evals = np.r_[2.0, np.full(4, 3.0)]  # 4 after the minimum, 5 needed
    rep = judge_runlog(eval_run(5, 5, np.linspace(1.2, 1.9, 5), evals))
    assert rep.skipped["TP-EVAL-DIVERGE"].reason == "too_few_points"
    evals = np.r_[2.0, np.full(19, 3.0) * np.linspace(1, 1.02, 19)]
    rep = judge_runlog(eval_run(5, 20, np.linspace(1.2, 1.3, 5), evals))  # train up only 8%
    assert "TP-EVAL-DIVERGE" not in ids(rep)
    evals = np.r_[2.0, np.full(10, 3.0), np.full(9, 2.1)]  # came back near the minimum
    rep = judge_runlog(eval_run(5, 20, np.linspace(1.2, 1.9, 5), evals))
    assert "TP-EVAL-DIVERGE" not in ids(rep)


@pytest.mark.parametrize("total", [2000, 11000])
def test_a_run_that_blew_up_and_recovered_part_of_the_way_diverged_on_its_eval(total):
    # hf-whisper-warmup-degrade's shape: after warm-up the train loss climbs 2.8x and comes
    # back to 1.4x its best only at the end; the eval loss doubles at all 5 evaluations
    # after its minimum. Judged whatever share of its schedule the log covers (EarlyStopping
    # ended it at 14%).
    n = 60
    t = np.arange(1, n + 1) * 25
    train = np.where(
        t < 150, 0.9 * np.exp(-t / 40) + 0.12, np.where(t < 1100, np.minimum(0.30, 0.12 + (t - 150) * 0.0005), 0.17)
    )
    evals = [None] * n
    for i, e in enumerate([0.219, 0.416, 0.423, 0.410, 0.438, 0.402]):
        evals[(i + 1) * 10 - 1] = e
    rows = [
        Record(float(s), {"loss": float(x), "learning_rate": 1e-4}, i + 1) for i, (s, x) in enumerate(zip(t, train))
    ]
    for i, e in enumerate(evals):
        if e is not None:
            rows.append(Record(float(t[i]), {"eval_loss": e}, n + i + 1))
    run = build_runlog(rows, "x.json", "hf", meta={"max_steps": total})
    f = one(judge_runlog(run), "TP-EVAL-DIVERGE")
    assert f.data["train_end"] < 1.2 * f.data["train_at_best"] < f.data["train_after"]


def test_eval_divergence_is_read_from_an_hf_trainer_state(tmp_path):
    import json

    from trainproof.api import judge

    hist = []
    for e in range(1, 21):
        hist.append({"epoch": float(e), "step": 100 * e, "eval_loss": 2.5 if e == 1 else 3.4 + 0.05 * (e % 4)})
        if e % 4 == 0:
            hist.append(
                {
                    "epoch": float(e),
                    "step": 100 * e,
                    "loss": 1.2 + 0.15 * (e // 4),
                    "learning_rate": 1e-3,
                    "grad_norm": 10.0,
                }
            )
    p = tmp_path / "trainer_state.json"
    p.write_text(json.dumps({"global_step": 2000, "max_steps": 2000, "log_history": hist}))
    rep = judge(p)
    assert one(rep, "TP-EVAL-DIVERGE").level is Level.FAIL


# --- TP-PREF-NOT-LEARNING: preference accuracy at chance, objective no better -----------------


def pref_run(n, acc, loss, seed=0):
    rng = np.random.default_rng(seed)
    return run_of(
        loss=loss * np.exp(0.02 * rng.standard_normal(n)),
        **{
            "rewards/accuracies": np.clip(acc + 0.05 * rng.standard_normal(n), 0, 1),
            "rewards/margins": np.linspace(0.1, 1.0, n),
            "logps/chosen": np.linspace(-200, -190, n),
            "grad_norm": np.linspace(1.3, 7.5, n),
        },
    )


@pytest.mark.parametrize("n,seed", [(20, 0), (100, 1), (400, 2)])
@pytest.mark.parametrize("loss_shape", ["flat", "rises"])
def test_preference_accuracy_at_chance_with_no_better_loss_fails(n, seed, loss_shape):
    loss = (
        np.full(n, 0.693) if loss_shape == "flat" else np.r_[np.linspace(1.6, 2.8, n // 10), np.full(n - n // 10, 2.8)]
    )
    rep = judge_runlog(pref_run(n, np.full(n, 0.55), loss, seed))
    f = one(rep, "TP-PREF-NOT-LEARNING")
    assert f.level is Level.FAIL and f.data["accuracy_level"] <= 0.6
    assert f.data["loss_trend_z"] > -2.326


@pytest.mark.parametrize("n", [20, 100, 400])
def test_preferences_being_learned_are_not_flagged(n):
    t = np.linspace(0, 1, n)
    healthy = pref_run(n, 0.5 + 0.3 * (1 - np.exp(-5 * t)), 0.693 - 0.12 * t)  # accuracy to 0.8, loss falls
    # a low learning rate: still near chance, but the loss falls beyond its noise
    slow = pref_run(n, np.full(n, 0.55), 0.693 - 0.06 * t)
    late = pref_run(n, np.r_[np.full(n // 2, 0.5), np.linspace(0.5, 0.6, n - n // 2)], np.full(n, 0.693))
    for run in (healthy, slow, late):
        rep = judge_runlog(run)
        assert "TP-PREF-NOT-LEARNING" not in ids(rep), rep.ids()


@pytest.mark.parametrize("n,seed", [(60, 0), (300, 1)])
def test_the_train_preference_accuracy_is_judged_before_a_held_out_one(n, seed):
    # TRL logs eval_rewards/accuracies at each evaluation beside the train series at every
    # log; whichever key the log names first, the train series (on the run's own pairs) is
    # the one judged
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)
    evals = np.full(n, np.nan)
    evals[:: n // 6] = 0.5 + 0.02 * rng.standard_normal(evals[:: n // 6].size)

    def run(train_acc, loss):
        return run_of(
            **{"eval_rewards/accuracies": evals.copy()},
            loss=loss * np.exp(0.003 * rng.standard_normal(n)),
            **{"rewards/accuracies": np.clip(train_acc + 0.04 * rng.standard_normal(n), 0, 1)},
            **{"rewards/margins": 1e-5 * rng.standard_normal(n)},
        )

    stuck = judge_runlog(run(np.full(n, 0.5), np.full(n, 0.6931)))
    assert one(stuck, "TP-PREF-NOT-LEARNING").data["accuracy_key"] == "rewards/accuracies"
    learning = judge_runlog(run(0.5 + 0.3 * (1 - np.exp(-5 * t)), 0.693 - 0.2 * t))
    assert "TP-PREF-NOT-LEARNING" not in ids(learning)


def test_too_few_accuracy_points_or_none_is_not_judged_by_it():
    rep = judge_runlog(pref_run(19, np.full(19, 0.5), np.full(19, 0.693)))
    assert rep.skipped["TP-PREF-NOT-LEARNING"].reason == "too_few_points"
    n = 100
    rep = judge_runlog(run_of(loss=np.full(n, 0.693), **{"rewards/margins": np.linspace(0, 1, n)}))
    assert "TP-PREF-NOT-LEARNING" not in ids(rep)


def _margins_run(n, margin_end, loss_end, seed, noise=0.15):
    """A DPO log without rewards/accuracies: the mean margin goes 0 -> ``margin_end`` and
    the loss 0.693 -> ``loss_end`` over the run, with point noise."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)
    return run_of(
        loss=(0.693 + (loss_end - 0.693) * t) * np.exp(0.03 * rng.standard_normal(n)),
        **{
            "rewards/margins": margin_end * t + noise * rng.standard_normal(n),
            "rewards/chosen": 0.5 * margin_end * t,
            "logps/chosen": np.linspace(-13, -20, n),
        },
    )


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("n", [20, 80, 400])
def test_margins_below_zero_without_an_accuracy_are_preferences_learned_backwards(n, seed):
    # Gradient ascent on the preference loss (a sign error): the loss climbs past ln 2 and
    # the policy ranks the rejected answers higher, margins to -2.5; no accuracy logged.
    f = one(judge_runlog(_margins_run(n, -2.5, 2.6, seed)), "TP-PREF-NOT-LEARNING")
    assert f.level is Level.FAIL and f.data["margins_level"] < 0 and "backwards" in f.message


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("n", [20, 80, 400])
def test_margins_that_grow_or_hover_at_zero_are_not_backwards(n, seed):
    assert "TP-PREF-NOT-LEARNING" not in ids(judge_runlog(_margins_run(n, 2.0, 0.3, seed)))
    # an early run whose margins hover at 0 within their noise
    assert "TP-PREF-NOT-LEARNING" not in ids(judge_runlog(_margins_run(n, 0.0, 0.69, seed, noise=0.3)))


def test_a_dead_policy_explains_its_chance_accuracy():
    n = 100
    run = run_of(
        loss=np.full(n, 0.6931),
        grad_norm=np.zeros(n),
        **{"rewards/accuracies": np.zeros(n), "rewards/margins": np.zeros(n)},
    )
    rep = judge_runlog(run)
    assert [f.id for f in rep.findings if f.level is Level.FAIL] == ["TP-RL-DEAD-POLICY"]


# --- TP-FROZEN-PREDICTIONS -----------------------------------------------------------


def _frozen_run(n_eval, acc_value, eval_fall, seed, vary=False):
    rng = np.random.default_rng(seed)
    n = n_eval * 5
    train = at_level(n, 1.0, 0.03, seed) * np.linspace(1.9, 1.75, n)
    ev = [None] * n
    acc = [None] * n
    for e in range(n_eval):
        i = (e + 1) * 5 - 1
        ev[i] = 1.77 * (1 - eval_fall * e / n_eval) * math.exp(0.002 * rng.standard_normal())
        acc[i] = 0.5 if e == 0 else acc_value + (0.01 * rng.standard_normal() if vary else 0.0)
    return run_of(loss=train, eval_loss=ev, valid_accuracy=acc, lr=np.full(n, 1e-5))


@pytest.mark.parametrize("n_eval,seed", [(31, 0), (120, 1), (300, 2)])
def test_an_accuracy_identical_at_every_evaluation_with_a_flat_eval_loss_is_frozen(n_eval, seed):
    f = one(judge_runlog(_frozen_run(n_eval, 0.7615, 0.003, seed)), "TP-FROZEN-PREDICTIONS")
    assert f.data["metric"] == "valid_accuracy" and f.data["evaluations"] == n_eval - 1


@pytest.mark.parametrize(
    "n_eval,acc,fall,vary",
    [(20, 0.7615, 0.003, False), (120, 1.0, 0.003, False), (120, 0.7615, 0.2, False), (120, 0.7615, 0.003, True)],
    ids=["too-few", "perfect-score", "eval-improves", "accuracy-moves"],
)
def test_frozen_predictions_needs_every_piece_of_its_evidence(n_eval, acc, fall, vary):
    assert "TP-FROZEN-PREDICTIONS" not in ids(judge_runlog(_frozen_run(n_eval, acc, fall, 0, vary)))


# --- TP-LOSS-AT-ZERO and TP-LOSS-UNBOUNDED ----------------------------------------------


@pytest.mark.parametrize("n,seed", [(60, 0), (300, 1), (3000, 2)])
def test_a_loss_that_collapses_onto_zero_with_both_signs_fails(n, seed):
    rng = np.random.default_rng(seed)
    k = n // 3
    loss = np.r_[np.geomspace(0.31, 1e-3, k), np.round(2e-4 * rng.standard_normal(n - k), 4)]
    f = one(judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-4))), "TP-LOSS-AT-ZERO")
    assert f.data["negative_points"] >= 5 and f.data["tail_magnitude"] < 1e-3 * 0.31


@pytest.mark.parametrize(
    "case", ["tiny-but-positive", "gan-critic", "rl-objective", "crosses-zero-and-settles"], ids=str
)
def test_a_loss_near_zero_is_not_a_collapse_without_every_piece_of_evidence(case):
    rng = np.random.default_rng(0)
    n = 300
    cols = {"lr": np.full(n, 1e-4)}
    loss = np.r_[np.geomspace(0.31, 1e-3, 100), 2e-4 * rng.standard_normal(200)]
    key = "loss"
    if case == "tiny-but-positive":
        loss = np.abs(loss) + 1e-5
    elif case == "gan-critic":
        key = "loss_critic"
    elif case == "rl-objective":
        cols["reward"] = np.linspace(0, 1, n)
    else:  # a density NLL: 2.0 -> -3.0, settling
        loss = -3.0 + 5.0 * np.exp(-np.arange(n) / 40) + 0.05 * rng.standard_normal(n)
    cols[key] = loss
    assert "TP-LOSS-AT-ZERO" not in ids(judge_runlog(run_of(**cols)))


@pytest.mark.parametrize("n,seed", [(30, 0), (200, 1), (2000, 2)])
def test_a_negative_loss_that_grows_a_thousandfold_diverged(n, seed):
    rng = np.random.default_rng(seed)
    loss = -np.geomspace(3e4, 6.5e7, n) * np.exp(0.05 * rng.standard_normal(n))
    f = one(judge_runlog(run_of(loss=loss)), "TP-LOSS-UNBOUNDED")
    assert f.data["factor"] > 1000


@pytest.mark.parametrize("start,end", [(-1.0, -5.0), (-30.0, -300.0), (2.0, -3.0), (1e-3, -5.0), (0.05, -40.0)])
@pytest.mark.parametrize("n,noise", [(200, 0.0), (1000, 0.05), (5000, 0.15)])
def test_a_negative_loss_that_settles_is_not_unbounded(start, end, n, noise):
    # settling from any start, a tiny positive one included (its scale is what it moved by
    # around zero, and it stops growing: no runaway over the second half)
    rng = np.random.default_rng(n)
    loss = end + (start - end) * np.exp(-np.arange(n) / (n / 7)) + noise * abs(end) * rng.standard_normal(n) / 10
    assert "TP-LOSS-UNBOUNDED" not in ids(judge_runlog(run_of(loss=loss)))


@pytest.mark.parametrize("start", [1.48, 0.5, 0.05])
@pytest.mark.parametrize("n,noise", [(100, 0.01), (1000, 0.05), (5000, 0.15)])
def test_a_likelihood_loss_that_crosses_zero_and_runs_away_diverged(start, n, noise):
    # a likelihood loss starts above zero, crosses it and runs off: -2 at 12%, -877 at
    # half, -2e6 at the end (a new user's case PASSed: every point had to be negative)
    rng = np.random.default_rng(n)
    t = np.linspace(0, 1, n)
    loss = start - 2.5 * t / 0.12 * (t < 0.12) - (t >= 0.12) * (2.0 + np.expm1(14.6 * (t - 0.12)) * 1.0)
    loss = loss * np.exp(noise * rng.standard_normal(n) * (loss < -1))
    f = one(judge_runlog(run_of(loss=loss)), "TP-LOSS-UNBOUNDED")
    assert f.data["crossed"] and f.data["factor"] >= 1000 and f.data["end_level"] < -1e5


@pytest.mark.parametrize("power", [1, 2])
@pytest.mark.parametrize("n", [5000, 20000])
def test_a_likelihood_loss_that_runs_away_linearly_or_quadratically_diverged(power, n):
    # 1.5 -> -1433 at half -> -2952 at the end (a breaker's linear runaway PASSed while
    # the end had to be 10x its mid-run level); logged finely enough that its first values
    # show where it started (a log whose third point is already at -28 does not)
    u = np.linspace(0, 1, n)
    loss = 1.5 - 3000 * u**power
    f = one(judge_runlog(run_of(loss=loss)), "TP-LOSS-UNBOUNDED")
    assert f.data["crossed"]


@pytest.mark.parametrize("power", [1.0, 1.5, 3.0])
@pytest.mark.parametrize("n,noise", [(200, 0.01), (2000, 0.03), (10000, 0.1)])
def test_a_likelihood_loss_that_starts_near_zero_and_keeps_improving_is_not_unbounded(power, n, noise):
    # a Gaussian NLL from a unit-scale start sits at ~0 (0.5 ln(2 pi 0.4^2)) and improves by
    # a few nats, still improving over its second half: 1000x a start of 2e-4 is 0.2 nats
    rng = np.random.default_rng(n)
    t = np.linspace(0, 1, n)
    loss = -3.0 * t**power + noise * rng.standard_normal(n) * np.maximum(t, 0.01)
    loss[0] = 9e-6
    assert "TP-LOSS-UNBOUNDED" not in ids(judge_runlog(run_of(loss=loss)))


@pytest.mark.parametrize("slope", [3000, 30000])
@pytest.mark.parametrize("n", [300, 1000, 3000])
def test_a_linear_runaway_that_crosses_zero_within_its_first_logs_diverged(slope, n):
    # 1.5 -> -8.5 at its second log -> -3000: its first negative values are already part
    # of the runaway, so they do not size it (read as 950x them, a breaker's PASSed)
    t = np.linspace(0, 1, n) + 1 / n
    loss = 1.5 - slope * t
    loss[0] = 1.48
    f = one(judge_runlog(run_of(loss=loss)), "TP-LOSS-UNBOUNDED")
    assert f.data["crossed"] and f.data["scale"] >= 1.0


@pytest.mark.parametrize("start,slope", [(-1.7, 5000.0), (-1007.0, 2e6)])
@pytest.mark.parametrize("n", [300, 2000])
def test_a_linear_runaway_negative_from_its_first_log_diverged(start, slope, n):
    # -1.7, -7.6, ... -4998: its first tenth (-250 at the median) is far along the climb
    # already, and read against it the run was 20x its start (a breaker's PASSed)
    t = np.linspace(0, 1, n)
    loss = start - slope * t
    f = one(judge_runlog(run_of(loss=loss)), "TP-LOSS-UNBOUNDED")
    assert not f.data["crossed"] and f.data["factor"] >= 1000


@pytest.mark.parametrize("end", [-30.0, -3000.0])
def test_a_negative_loss_that_ran_off_and_then_held_is_not_unbounded(end):
    # settled over its second half (a staircase that stopped; a summed NLL at its floor)
    n = 1000
    loss = np.where(np.arange(n) < n // 3, np.linspace(-1.0, end, n), end)
    assert "TP-LOSS-UNBOUNDED" not in ids(judge_runlog(run_of(loss=loss)))


def test_a_loss_whose_first_two_points_are_positive_still_runs_away():
    n = 1000
    loss = np.r_[[0.8, 0.2], -np.geomspace(0.5, 2.04e6, n - 2)]
    f = one(judge_runlog(run_of(loss=loss)), "TP-LOSS-UNBOUNDED")
    assert f.data["crossed"]


def test_a_loss_oscillating_around_zero_is_not_unbounded():
    rng = np.random.default_rng(3)
    n = 2000
    loss = 0.3 * rng.standard_normal(n) + np.where(np.arange(n) > n // 2, -0.5, 0.0)
    assert "TP-LOSS-UNBOUNDED" not in ids(judge_runlog(run_of(loss=loss)))


# --- TP-ZERO-GRAD-ONSET --------------------------------------------------------------


@pytest.mark.parametrize("n,share", [(30, 0.3), (300, 0.5), (3000, 0.9)])
def test_a_gradient_norm_exactly_zero_from_mid_run_with_a_frozen_loss_fails(n, share):
    rng = np.random.default_rng(n)
    k = int(n * (1 - share))
    loss = np.r_[np.geomspace(3.0, 1.0, k), np.full(n - k, 1.0) * np.exp(0.01 * rng.standard_normal(n - k))]
    grad = np.r_[np.full(k, 0.8) * np.exp(0.1 * rng.standard_normal(k)), np.zeros(n - k)]
    f = one(judge_runlog(run_of(loss=loss, grad_norm=grad, lr=np.full(n, 1e-3))), "TP-ZERO-GRAD-ONSET")
    assert f.data["zero_points"] == n - k


@pytest.mark.parametrize("case", ["loss-still-falls", "a-few-zeros", "zeros-then-positive"])
def test_zero_grad_onset_needs_a_trailing_stretch_and_a_loss_that_stopped(case):
    n = 200
    loss = np.geomspace(3.0, 0.5, n)
    grad = np.full(n, 0.8)
    if case == "loss-still-falls":
        grad[100:] = 0.0  # a logger that stopped computing the norm
    elif case == "a-few-zeros":
        loss[100:] = 0.5
        grad[-3:] = 0.0
    else:
        loss[100:] = 0.5
        grad[100:150] = 0.0
    assert "TP-ZERO-GRAD-ONSET" not in ids(judge_runlog(run_of(loss=loss, grad_norm=grad, lr=np.full(n, 1e-3))))


# --- TP-LOSS-FROZEN -------------------------------------------------------------------


@pytest.mark.parametrize("n,share,value", [(30, 0.4, 5.9712), (400, 0.2, 16.74222755432129), (5000, 0.9, 0.5712)])
def test_a_loss_bit_identical_to_the_end_is_frozen(n, share, value):
    rng = np.random.default_rng(n)
    k = int(n * (1 - share))
    loss = np.r_[value * 1.5 * np.exp(0.05 * rng.standard_normal(k)), np.full(n - k, value)]
    f = one(judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-3))), "TP-LOSS-FROZEN")
    assert f.data["points"] == n - k and f.data["value"] == value


@pytest.mark.parametrize("n,value", [(1000, 0.986), (5000, 1.25), (400, 0.5)])
@pytest.mark.parametrize("noise", [0.02, 0.05])
def test_a_frozen_loss_is_read_at_its_loggers_precision(n, value, noise):
    # HF Trainer writes round(loss, 4): a model frozen at 0.9860 is written "0.986", three
    # digits by its repr; a new user's run repeated it 2,638 times (53% of the run) and
    # PASSed. The values before the stretch show the logger's step of 1e-4.
    rng = np.random.default_rng(n)
    k = n // 2
    loss = np.r_[np.round(value * 1.3 * np.exp(noise * rng.standard_normal(k)), 4), np.full(n - k, value)]
    f = one(judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-3))), "TP-LOSS-FROZEN")
    assert f.data["value"] == value
    # The same stretch from a logger at two decimals is its rounding at a floor, not a freeze.
    coarse = np.r_[np.round(loss[:k], 2), np.full(n - k, value)]
    if rounding_step(coarse[:k]) == 0.01 and len(repr(value)) <= 4:
        assert "TP-LOSS-FROZEN" not in ids(judge_runlog(run_of(loss=coarse, lr=np.full(n, 1e-3))))


@pytest.mark.parametrize("decimals", [4, 6])
def test_a_gradient_norm_rounded_to_zero_after_it_vanished_is_no_cut_graph(decimals):
    # A helper's full-batch logistic regression logged its norm at 6 decimals: 0.32 down to
    # 1e-06, then 0.0 for the last 82 logs: TP-ZERO-GRAD-ONSET FAILed a converged fit.
    n = 300
    t = np.arange(n)
    loss = np.round(0.39484 + 0.284 * np.exp(-t / 25), 4)
    gn = np.round(0.32 * np.exp(-t / 12), decimals)
    assert gn[-1] == 0 and gn[0] > 0
    assert "TP-ZERO-GRAD-ONSET" not in ids(judge_runlog(run_of(loss=loss, grad_norm=gn, lr=np.full(n, 0.05))))
    # A norm at its ordinary level that drops to 0 while the loss holds: a graph cut off.
    cut = np.where(t < 200, np.round(0.3 + 0.01 * np.sin(t), decimals), 0.0)
    flat = np.where(t < 200, loss, loss[199])
    assert "TP-ZERO-GRAD-ONSET" in ids(judge_runlog(run_of(loss=flat, grad_norm=cut, lr=np.full(n, 0.05))))


@pytest.mark.parametrize("decimals,n", [(4, 200), (4, 400), (4, 1000)])
def test_a_full_batch_fit_converged_below_the_printed_digits_is_no_frozen_model(decimals, n):
    # A real full-batch logistic regression (Adam, lr 0.05 live): 0.679 -> 0.39484, still
    # moving in its 6th digit, printed at 4 decimals reads 0.3948 for its last 149 logs and
    # FAILed TP-LOSS-FROZEN. Its printed values approach the frozen one in one direction by
    # changes that shrink to the last printed digit: a fit converged below the print.
    t = np.arange(n)
    true = 0.39484 + 0.284 * np.exp(-t / (n / 12))
    loss = np.round(true, decimals)
    rep = judge_runlog(run_of(loss=loss, lr=np.full(n, 0.05)))
    assert "TP-LOSS-FROZEN" not in ids(rep) and "TP-FROZEN-AFTER-LEARNING" in ids(rep), ids(rep)
    # A model that stops being updated mid-stride (its loss still falling many printed steps
    # a log) freezes to the bit under a live rate: the FAIL.
    stopped = np.round(np.where(t < n // 3, 0.4 + 0.3 * (1 - t / n), 0.4 + 0.3 * (1 - (n // 3) / n)), decimals)
    assert "TP-LOSS-FROZEN" in ids(judge_runlog(run_of(loss=stopped, lr=np.full(n, 0.05))))


@pytest.mark.parametrize("before", [1, 2, 7, 40, 300])
@pytest.mark.parametrize("frozen", [12, 60, 500])
def test_a_deterministic_descent_that_stops_is_a_warn_not_a_frozen_model(before, frozen):
    # A new user's real full-batch L-BFGS logistic regressions: 0.6931 -> 0.41157618165016174
    # in one outer step, or 0.6107 -> 0.4116 over 7, then the same value to the bit (the fit
    # converged at a floor no fall of 3 decades can reach) FAILed TP-LOSS-FROZEN. A loss that
    # never rose between logs before it froze is a deterministic descent that stopped:
    # converged, or an optimizer that stopped, which the loss alone cannot tell: a WARN.
    rng = np.random.default_rng(before * 1000 + frozen)
    floor = rng.uniform(0.05, 2.0)
    gap = floor * rng.uniform(0.3, 3.0)
    # a geometric approach (each remaining gap 5-60% of the one before), its last step
    # onto the value it freezes at
    descent = floor + gap * np.r_[1.0, np.cumprod(rng.uniform(0.05, 0.6, before))]
    descent[-1] = floor
    loss = np.r_[descent, np.full(frozen, floor)]
    for cols in ({}, {"lr": np.full(loss.size, 1.0)}):
        if cols and before < 7:
            continue  # a few changes cannot show a descent slowing into the freeze
        rep = judge_runlog(run_of(loss=loss, **cols))
        if frozen / loss.size < 0.1:
            continue  # too small a share of the run to read as frozen at all
        assert "TP-LOSS-FROZEN" not in ids(rep) and "TP-FROZEN-AFTER-LEARNING" in ids(rep), (cols, ids(rep))
        assert rep.verdict is Level.WARN
    # The same freeze after a descent on fresh batches (it rises between some logs): a model
    # no longer updated, whose loss no healthy run repeats to the bit.
    noisy = descent * np.exp(0.03 * rng.standard_normal(descent.size)) if before >= 7 else None
    if noisy is not None and frozen / (before + 1 + frozen) >= 0.1:
        rep = judge_runlog(run_of(loss=np.r_[noisy, np.full(frozen, noisy[-1])]))
        assert "TP-LOSS-FROZEN" in ids(rep) and rep.verdict is Level.FAIL


def test_a_gradient_norm_that_vanished_under_a_converged_fit_is_no_second_finding():
    # The same real L-BFGS fit with its gradient norm logged (2e-5 at the freeze) also
    # WARNed TP-VANISHING-GRAD ("the loss did not improve", measured after most of its fall)
    loss = np.r_[[0.61066, 0.45022, 0.42375, 0.41321, 0.41182, 0.41168, 0.4115763], np.full(53, 0.41157618165016174)]
    gn = np.r_[[0.2604, 0.0804, 0.0388, 0.0128, 0.0076, 0.0055, 1.7e-4], np.full(53, 2.136e-05)]
    rep = judge_runlog(run_of(loss=loss, grad_norm=gn))
    assert ids(rep) == {"TP-FROZEN-AFTER-LEARNING"}, ids(rep)
    assert "TP-VANISHING-GRAD" in one(rep, "TP-FROZEN-AFTER-LEARNING").data["implies"]


def test_a_descent_stopped_mid_stride_under_a_live_rate_stays_frozen():
    # optimizer.step() skipped by a bug on a full batch: the descent stops with its ordinary
    # change (a linear or slowly curving descent), under a logged live learning rate.
    for k, shape in enumerate((np.linspace(2.0, 1.2034567, 80), 1.0 + np.exp(-np.arange(80) / 200))):
        loss = np.r_[shape, np.full(40, shape[-1])]
        rep = judge_runlog(run_of(loss=loss, lr=np.full(loss.size, 3e-4)))
        assert "TP-LOSS-FROZEN" in ids(rep) and rep.verdict is Level.FAIL, (k, ids(rep))
        # with no rate logged the log cannot tell it from a converged fit: the WARN
        assert judge_runlog(run_of(loss=loss)).verdict is Level.WARN


@pytest.mark.parametrize("n", [8, 10, 30])
def test_an_eval_loss_frozen_in_a_log_of_evaluations_alone_is_frozen(n):
    # accelerate's run_clm_no_trainer prints only its evaluations: at lr 0 the eval loss is
    # 3.680377721786499 at every epoch, and 10 epochs PASSed (the rule needed a train loss).
    rep = judge_runlog(run_of(eval_loss=np.full(n, 3.680377721786499)))
    assert one(rep, "TP-LOSS-FROZEN").data["series"] == "eval_loss"
    # The same log of a model that learns is no freeze; too few evaluations are not judged.
    moving = 3.68 * np.exp(-np.arange(n) / 20) * (1 + 1e-3 * np.random.default_rng(n).standard_normal(n))
    assert "TP-LOSS-FROZEN" not in ids(judge_runlog(run_of(eval_loss=moving)))
    assert "TP-LOSS-FROZEN" not in ids(judge_runlog(run_of(eval_loss=np.full(6, 3.680377721786499))))


@pytest.mark.parametrize("case", ["coarse-rounding", "short-tail", "small-share", "last-digits-move"])
def test_a_repeated_loss_is_not_frozen_without_every_piece_of_evidence(case):
    n = 300
    rng = np.random.default_rng(0)
    loss = 2.0 * np.exp(-np.arange(n) / 50) + 0.05
    if case == "coarse-rounding":  # a logger at two decimals, converged at 0.05
        loss = np.round(loss, 2)
    elif case == "short-tail":
        loss[-8:] = 0.1234
    elif case == "small-share":  # 25 repeats in 3,000 points
        loss = np.r_[2.0 * np.exp(-np.arange(3000) / 500) + 0.05 * rng.random(3000)]
        loss[-25:] = 0.1234
    else:  # a full-batch run converging in its last digits
        loss = 0.25 + 1e-6 * np.exp(-np.arange(n) / 100)
    assert "TP-LOSS-FROZEN" not in ids(judge_runlog(run_of(loss=loss, lr=np.full(loss.size, 1e-3))))


def _learned_then_frozen(n, frozen_at, series="eval_loss", lr=None, seed=0):
    """A run whose train loss falls with batch noise; ``series`` (the eval loss, every 5th
    point, or the train loss) repeats one value to the bit from index ``frozen_at``."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    loss = (0.1 + 2.0 * np.exp(-t / (n / 6))) * np.exp(0.05 * rng.standard_normal(n))
    cols = {"loss": loss}
    if series == "eval_loss":
        ev = [None] * n
        for i in range(4, n, 5):
            ev[i] = float(0.15 + 2.0 * np.exp(-min(i, frozen_at) / (n / 6))) if i < frozen_at else 0.2345678
        cols["eval_loss"] = ev
    else:
        loss[frozen_at:] = 0.1234567
    if lr is not None:
        cols["lr"] = lr
    return cols


@pytest.mark.parametrize("n", [100, 400, 3000])
@pytest.mark.parametrize("lr_kind", ["none", "decayed", "alive"])
def test_an_eval_loss_that_froze_after_the_run_learned_is_a_warning_unless_the_rate_is_live(n, lr_kind):
    # ReduceLROnPlateau with min_lr=0 (Keras's default): the rate falls 10x per plateau until
    # the weights stop changing, and an eval loss on a fixed set repeats to the bit.
    lr = {"none": None, "decayed": 1e-3 * 0.1 ** np.minimum(np.arange(n) // (n // 8), 7), "alive": np.full(n, 1e-4)}
    rep = judge_runlog(run_of(**_learned_then_frozen(n, n // 2, lr=lr[lr_kind])))
    if lr_kind == "alive":
        # a live logged rate under a frozen eval loss: a model no longer updated
        # (optimizer.step() skipped, requires_grad turned off mid-run)
        assert "TP-LOSS-FROZEN" in ids(rep) and "TP-FROZEN-AFTER-LEARNING" not in ids(rep)
        return
    f = one(rep, "TP-FROZEN-AFTER-LEARNING")
    assert "TP-LOSS-FROZEN" not in ids(rep) and rep.verdict.value == "WARN"
    assert f.data["series"] == "eval_loss" and f.data["value"] == 0.2345678


def test_a_train_loss_frozen_after_learning_is_a_warning_only_under_a_decayed_rate():
    n = 400
    decayed = 1e-3 * 0.1 ** np.minimum(np.arange(n) // 40, 8)  # at 1e-9 from step 320 on
    rep = judge_runlog(run_of(**_learned_then_frozen(n, 330, series="loss", lr=decayed)))
    assert one(rep, "TP-FROZEN-AFTER-LEARNING").data["lr_after"] <= 1e-6
    # on fresh batches, a train loss repeated to the bit under a live rate (or no logged
    # rate) depends on neither the data nor the weights: still the FAIL
    for lr in (np.full(n, 1e-3), None):
        rep = judge_runlog(run_of(**_learned_then_frozen(n, 330, series="loss", lr=lr)))
        assert "TP-LOSS-FROZEN" in ids(rep) and "TP-FROZEN-AFTER-LEARNING" not in ids(rep)


def _converged(n, start, decades, fall_steps, grad="frozen", seed=0):
    """A full-batch fit: the loss falls ``decades`` decades from ``start`` in ``fall_steps``
    logs (geometrically, with a wobble), then repeats its last value to the bit; the lr is
    a constant 1; the gradient norm falls from 1e-2 and is frozen with it at 5e-4 of its
    start, frozen at an ordinary size or at 0, still moving, or not logged."""
    rng = np.random.default_rng(seed)
    fall = start * 10 ** (-decades * np.linspace(0, 1, fall_steps)) * np.exp(0.2 * rng.standard_normal(fall_steps))
    fall[-1] = start * 10.0**-decades * 1.0123456
    loss = np.r_[fall, np.full(n - fall_steps, fall[-1])]
    cols = {"loss": loss, "lr": np.ones(n)}
    if grad != "none":
        g = 1e-2 * np.exp(-np.arange(n) / 5) + 1e-6
        tail = {"frozen": 5.1198024481288606e-06, "ordinary": 3.3e-3, "zero": 0.0}.get(grad)
        g[fall_steps:] = tail if tail is not None else 5e-6 * np.exp(0.1 * rng.standard_normal(n - fall_steps))
        cols["grad_norm"] = g
    return cols


@pytest.mark.parametrize(
    "n,start,decades,fall_steps", [(100, 0.16, 5.3, 18), (300, 1e4, 3.2, 40), (2000, 2.5, 8.0, 200)]
)
@pytest.mark.parametrize("grad", ["frozen", "none"])
def test_a_loss_frozen_after_falling_three_decades_has_converged(n, start, decades, fall_steps, grad):
    # L-BFGS on a full batch stops moving the weights once a step changes the loss by less
    # than its tolerance: loss and gradient norm repeat to the bit under a live rate.
    rep = judge_runlog(run_of(**_converged(n, start, decades, fall_steps, grad)))
    f = one(rep, "TP-FROZEN-AFTER-LEARNING")
    assert "TP-LOSS-FROZEN" not in ids(rep) and rep.verdict.value == "WARN"
    assert f.data["decades_fallen"] >= DEFAULT.frozen_fall_log10 and f.data["lr_after"] is None


@pytest.mark.parametrize(
    "decades,grad", [(2.5, "none"), (1.0, "none"), (2.5, "ordinary"), (5.0, "moving"), (5.0, "zero")]
)
def test_a_loss_frozen_without_a_converged_fit_is_still_the_fail(decades, grad):
    # With no gradient norm, a fall of under three decades is a level a stale logger or a
    # collapsed model repeats; a gradient norm that still moves under a frozen loss is a
    # loss no longer computed from the model; one frozen at its ordinary size after a fall
    # of under three decades is weights no longer updated; an exactly zero one a loss cut
    # off from the weights (a reviewer's loss multiplied by a weight decayed to 0, read as
    # TP-ZERO-GRAD-ONSET, which lists the frozen loss under it).
    rep = judge_runlog(run_of(**_converged(300, 2.0, decades, 40, grad)))
    assert rep.verdict is Level.FAIL and "TP-FROZEN-AFTER-LEARNING" not in ids(rep)
    assert {"TP-LOSS-FROZEN", "TP-ZERO-GRAD-ONSET"} & ids(rep)


@pytest.mark.parametrize("decades", [1.25, 2.0])
def test_a_fit_whose_gradient_vanished_has_converged_at_its_noise_floor(decades):
    # L-BFGS on noisy data stops at the noise floor, 1.25 decades down, its gradient norm
    # frozen at 1.5e-6 of its start (a reviewer's healthy run FAILed TP-LOSS-FROZEN).
    rep = judge_runlog(run_of(**_converged(300, 4.16, decades, 40, "frozen")))
    assert "TP-LOSS-FROZEN" not in ids(rep) and "TP-FROZEN-AFTER-LEARNING" in ids(rep)


def test_a_real_lbfgs_fit_that_converged_is_a_warning(tmp_path):
    torch = pytest.importorskip("torch")
    from trainproof.api import read_runlog

    torch.manual_seed(0)
    x = torch.linspace(-1, 1, 64).unsqueeze(1)
    y = 0.7 * x**3 - 0.2 * x + 0.1  # noiseless: a small MLP fits it to far below 1e-4 of its start
    model = torch.nn.Sequential(torch.nn.Linear(1, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    opt = torch.optim.LBFGS(model.parameters(), lr=1, max_iter=5, history_size=50, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss

    lines = []
    for step in range(1, 301):
        opt.step(closure)
        loss = closure()
        g = torch.sqrt(sum((p.grad**2).sum() for p in model.parameters()))
        lines.append(f'{{"step": {step}, "loss": {loss.item()!r}, "lr": 1, "grad_norm": {g.item()!r}}}')
    path = tmp_path / "metrics.jsonl"
    path.write_text("\n".join(lines) + "\n")
    run = read_runlog(path)
    v = np.asarray(run.series["loss"].values)
    assert v[-1] == v[-2] and math.log10(v[0] / v[-1]) >= 3  # the fit converged and froze
    rep = judge_runlog(run)
    assert "TP-FROZEN-AFTER-LEARNING" in ids(rep) and rep.verdict.value != "FAIL"


def test_an_eval_loss_frozen_from_its_first_evaluation_is_still_the_fail():
    # a frozen model: nothing learned before the freeze
    rep = judge_runlog(run_of(**_learned_then_frozen(200, 0)))
    assert "TP-LOSS-FROZEN" in ids(rep) and "TP-FROZEN-AFTER-LEARNING" not in ids(rep)


def test_a_loss_frozen_at_ln2_is_named_for_chance_with_the_frozen_loss_implied():
    acc = [None if i % 10 else 0.5 for i in range(100)]
    rep = judge_runlog(run_of(loss=np.full(100, 0.6931), lr=np.full(100, 1e-3), eval_accuracy=acc))
    assert "TP-LOSS-FROZEN" in one(rep, "TP-CHANCE-LEVEL").data["implies"]
    # Without the accuracy the frozen loss is the FAIL, and it explains the level (a WARN).
    rep = judge_runlog(run_of(loss=np.full(100, 0.6931), lr=np.full(100, 1e-3)))
    assert "TP-NEAR-CHANCE" in one(rep, "TP-LOSS-FROZEN").data["implies"]


@pytest.mark.parametrize("n", [12, 100])
def test_an_eval_loss_bit_identical_at_every_evaluation_is_frozen(n):
    # A frozen Keras model: the train loss wobbles with its batches, the validation loss on
    # a fixed set repeats to the bit.
    rng = np.random.default_rng(n)
    rep = judge_runlog(
        run_of(loss=1.9 * np.exp(0.03 * rng.standard_normal(n)), eval_loss=np.full(n, 1.9191406965255737))
    )
    f = one(rep, "TP-LOSS-FROZEN")
    assert f.data["series"] == "eval_loss" and f.data["points"] == n


def _carried(n, cadence, series, frozen_measurements=0, seed=0):
    """A run whose ``series`` is shown on every row and changes only every ``cadence``
    rows (a progress bar or logger that copies the latest measurement onto each train
    row); with ``frozen_measurements`` the last that many measurements are one value."""
    rng = np.random.default_rng(seed)
    m = -(-n // cadence)
    measured = (0.1 + 2.0 * np.exp(-np.arange(m) / (m / 5))) * np.exp(0.03 * rng.standard_normal(m))
    if frozen_measurements:
        measured[-frozen_measurements:] = 0.2345678
    shown = np.repeat(measured, cadence)[:n]
    t = np.arange(n)
    cols = {"loss": (0.1 + 2.0 * np.exp(-t / (n / 5))) * np.exp(0.05 * rng.standard_normal(n)), "lr": np.full(n, 1e-3)}
    cols[series] = shown
    return cols


@pytest.mark.parametrize("n,cadence", [(120, 12), (200, 25), (500, 50), (1000, 100), (1000, 7)])
@pytest.mark.parametrize("series", ["eval_loss", "loss"])
def test_a_measurement_carried_onto_every_row_until_the_next_is_not_frozen(n, cadence, series):
    # The last measurement is carried over up to one cadence of rows at the end (10 or
    # more rows, a tenth of the run or more where there are 10 measurements or fewer: an
    # epoch's progress bar showing the last validation loss): one measurement, however
    # many rows show it.
    rep = judge_runlog(run_of(**_carried(n, cadence, series)))
    assert not {"TP-LOSS-FROZEN", "TP-FROZEN-AFTER-LEARNING"} & set(ids(rep)), ids(rep)


@pytest.mark.parametrize("n,cadence", [(300, 5), (1200, 20), (3000, 50)])
@pytest.mark.parametrize("series", ["eval_loss", "loss"])
def test_a_carried_measurement_frozen_for_many_measurements_is_still_frozen(n, cadence, series):
    # The same logger over a model that stopped changing: twelve measurements in a row
    # are one value to the bit, under a live learning rate.
    rep = judge_runlog(run_of(**_carried(n, cadence, series, frozen_measurements=12)))
    f = one(rep, "TP-LOSS-FROZEN")
    assert f.data["series"] == series and f.data["value"] == 0.2345678
    # nine measurements are not enough, whatever the rows they cover
    rep = judge_runlog(run_of(**_carried(n, cadence, series, frozen_measurements=9)))
    assert "TP-LOSS-FROZEN" not in ids(rep), ids(rep)


def test_an_eval_loss_that_moves_in_its_last_digits_is_not_frozen():
    n = 100
    ev = 1.9191406965255737 + 1e-9 * np.arange(n)
    rep = judge_runlog(run_of(loss=np.geomspace(3, 1.5, n), eval_loss=ev))
    assert "TP-LOSS-FROZEN" not in ids(rep)


def _sparse_evals(n_evals, frozen, value, every=10, lr=1e-3, seed=0, fall=0.0):
    """A run logged every 10 steps with an evaluation every ``every`` rows (its own
    values, absent in between): the train loss wobbles with its batches; the eval loss
    moves (from ``fall`` above its level down) until its last ``frozen`` evaluations,
    which are ``value`` to the bit. ``lr``: a number, or an array per row."""
    rng = np.random.default_rng(seed)
    n = n_evals * every
    loss = 1.7 * np.exp(0.03 * rng.standard_normal(n))
    moving = 1.65 * (1 + fall * np.linspace(1, 0, n_evals)) * np.exp(0.004 * rng.standard_normal(n_evals))
    if frozen:
        moving[-frozen:] = value
    ev = [None] * n
    for j in range(n_evals):
        ev[(j + 1) * every - 1] = moving[j]
    lr_col = np.full(n, lr) if np.isscalar(lr) else lr
    return run_of(loss=loss, eval_loss=ev, lr=lr_col)


@pytest.mark.parametrize("n_evals,frozen", [(8, 8), (6, 6), (20, 5), (40, 6)])
@pytest.mark.parametrize("value", [1.6439998149871826, 1.6434312345678])
def test_an_eval_loss_at_full_precision_bit_identical_at_5_evaluations_is_frozen(n_evals, frozen, value):
    # optimizer.step() removed: the weights never change, so every evaluation on the fixed
    # set gives one float32 value (or one float64 average) to the bit, under a live rate.
    rep = judge_runlog(_sparse_evals(n_evals, frozen, value))
    f = one(rep, "TP-LOSS-FROZEN")
    assert f.data["series"] == "eval_loss" and f.data["points"] == frozen and rep.verdict.value == "FAIL"


@pytest.mark.parametrize(
    "frozen,value,why",
    [
        (4, 1.6439998149871826, "four evaluations are three comparisons"),
        (6, 1.6484375, "a bfloat16 value: a loss computed in 16 bits moves in coarse steps"),
        (6, float(np.float16(1.6439998149871826)), "a float16 value"),
        (6, 1.643999, "printed at 6 decimals: 7 significant digits"),
        (9, 1.6440, "printed at 4 decimals: the train loss's bar of 10 applies"),
    ],
)
def test_an_eval_loss_repeated_fewer_times_or_written_coarsely_is_not_frozen(frozen, value, why):
    rep = judge_runlog(_sparse_evals(20, frozen, value))
    assert not {"TP-LOSS-FROZEN", "TP-FROZEN-AFTER-LEARNING"} & set(ids(rep)), (why, ids(rep))


def test_an_eval_loss_frozen_under_a_rate_decayed_to_about_zero_is_a_warning():
    # A schedule that decays the rate to ~0 freezes a healthy model's evaluations: the
    # run learned (its eval loss fell 40%) and the rest changes nothing.
    lr = np.r_[np.full(140, 1e-3), np.full(60, 1e-9)]
    rep = judge_runlog(_sparse_evals(20, 6, 1.6439998149871826, lr=lr, fall=0.4))
    assert "TP-LOSS-FROZEN" not in ids(rep) and "TP-FROZEN-AFTER-LEARNING" in ids(rep), ids(rep)


@pytest.mark.parametrize("seed", range(6))
def test_healthy_full_precision_evaluations_of_a_run_at_its_floor_are_not_frozen(seed):
    # A converged run's evaluations move in their last float32 digits at every evaluation.
    rep = judge_runlog(_sparse_evals(30, 0, 0.0, seed=seed))
    assert not {"TP-LOSS-FROZEN", "TP-FROZEN-AFTER-LEARNING"} & set(ids(rep)), ids(rep)


# --- TP-RL-NO-PROGRESS and TP-RL-FROZEN-POLICY --------------------------------------------


def _grpo(n, slope, kl_level, seed):
    rng = np.random.default_rng(seed)
    reward = -0.25 + slope * np.linspace(0, 1, n) + 0.08 * rng.standard_normal(n)
    kl = np.full(n, kl_level) * np.exp(0.1 * rng.standard_normal(n)) if kl_level is not None else None
    cols = {"loss": 1e-4 * rng.standard_normal(n), "reward": reward, "reward_std": np.full(n, 0.3)}
    if kl is not None:
        cols["kl"] = kl
    return run_of(**cols)


@pytest.mark.parametrize("n,seed", [(400, 1), (1000, 0), (3000, 2)])
def test_a_flat_reward_with_a_kl_near_zero_is_a_frozen_policy(n, seed):
    f = one(judge_runlog(_grpo(n, 0.0, 3e-4, seed)), "TP-RL-FROZEN-POLICY")
    assert f.level is Level.FAIL and 0 < f.data["kl"] < 1e-3


@pytest.mark.parametrize("kl", [None, 0.0, 0.03])
def test_a_flat_reward_without_a_tiny_kl_is_only_a_warning(kl):
    rep = judge_runlog(_grpo(1000, 0.0, kl, 3))
    assert "TP-RL-FROZEN-POLICY" not in ids(rep) and "TP-RL-NO-PROGRESS" in ids(rep)


@pytest.mark.parametrize("n,slope", [(100, 0.3), (400, 0.15), (2000, 0.08)])
def test_a_reward_that_rises_past_its_noise_is_progress(n, slope):
    rep = judge_runlog(_grpo(n, slope, 3e-4, 4))
    assert not ids(rep) & {"TP-RL-FROZEN-POLICY", "TP-RL-NO-PROGRESS"}


@pytest.mark.parametrize("n,slope,seed", [(4000, 0.03, 0), (8000, 0.02, 1), (20000, 0.012, 2)])
def test_a_reward_that_rises_measurably_but_slowly_is_no_frozen_policy(n, slope, seed):
    # A slow GRPO (helper 96: 0.30 -> 0.35 over 2,000 logs at 0.12 noise, its 99% interval
    # of change [0.026, 0.074]) rose, however little: no frozen policy even with a tiny KL,
    # and the warning says the reward barely moved rather than that it made no progress
    rep = judge_runlog(_grpo(n, slope, 3e-4, seed))
    assert "TP-RL-FROZEN-POLICY" not in ids(rep)
    f = one(rep, "TP-RL-NO-PROGRESS")
    lo, hi = f.data["change_interval"]
    assert lo > 0 and "barely moved" in f.message and "no progress" not in f.message


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("n,rise_share", [(3000, 0.02), (6000, 0.01), (2000, 0.05)])
def test_a_reward_that_rose_early_and_held_is_no_frozen_policy(seed, n, rise_share):
    # A policy that solves its task in the first few percent of a run and holds (a helper's
    # PPO: episodic return 0.27 -> 0.84 in the first 2%); its per-update KL then goes to
    # about zero. The line over the run is flat; the start is not.
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    reward = 0.27 + 0.57 * np.minimum(1.0, t / (rise_share * n)) + 0.4 * rng.standard_normal(n)
    kl = 1e-8 * np.exp(0.3 * rng.standard_normal(n))
    rep = judge_runlog(run_of(loss=1e-3 * rng.standard_normal(n), reward=reward, kl=kl))
    assert not ids(rep) & {"TP-RL-FROZEN-POLICY", "TP-RL-NO-PROGRESS"}
    # the same noise without the rise is still a frozen policy
    flat = run_of(loss=1e-3 * rng.standard_normal(n), reward=0.84 + 0.4 * rng.standard_normal(n), kl=kl)
    assert "TP-RL-FROZEN-POLICY" in ids(judge_runlog(flat))


@pytest.mark.parametrize("n", [250, 500])
def test_a_flat_reward_over_a_grpo_length_run_is_a_warning_not_a_fail(n):
    # A new user's flat GRPO rewards (0.308 +- 0.063 over 250 and 500 steps) went unflagged:
    # the WARN's bar is one noise unit, the FAIL's (a tiny KL too) half of one.
    for seed in range(8):
        rep = judge_runlog(_grpo(n, 0.0, 3e-4, seed))
        assert "TP-RL-NO-PROGRESS" in ids(rep) or "TP-RL-FROZEN-POLICY" in ids(rep), (n, seed, ids(rep))
        if n == 250:
            assert "TP-RL-FROZEN-POLICY" not in ids(rep)  # too short for the FAIL's bar
        # the same run whose reward rises by 1.5 noise units over the run learned
        rising = judge_runlog(_grpo(n, 1.5 * 0.08, 0.03, seed))
        assert not ids(rising) & {"TP-RL-FROZEN-POLICY", "TP-RL-NO-PROGRESS"}, (n, seed, ids(rising))


def test_a_short_flat_reward_is_not_enough_evidence():
    rep = judge_runlog(_grpo(100, 0.0, 3e-4, 0))  # the interval cannot reach one noise unit
    assert "TP-RL-NO-PROGRESS" in rep.ran and not ids(rep) & {"TP-RL-FROZEN-POLICY", "TP-RL-NO-PROGRESS"}


@pytest.mark.parametrize("key", ["eval_return", "train_return", "return", "evaluation/return"])
def test_a_model_based_rl_log_with_returns_and_no_loss_is_judged_on_its_return(key):
    n = 200
    rng = np.random.default_rng(0)
    rising = run_of(**{key: -200 + 2.0 * np.arange(n) + 10 * rng.standard_normal(n)})
    rep = judge_runlog(rising)
    assert "reward" in rising.series and rep.verdict is Level.PASS and "TP-RL-OBJECTIVE" in ids(rep)
    # ... and a return that rises and collapses back fails on it
    t = np.arange(n)
    collapse = np.where(t < n // 2, -200 + 6.0 * t, -200 + 6.0 * (n - t) - 400) + 10 * rng.standard_normal(n)
    assert judge_runlog(run_of(**{key: collapse})).verdict is Level.FAIL


@pytest.mark.parametrize("k", [3, 4, 7, 10])
@pytest.mark.parametrize("n,rel", [(30, 0.06), (72, 0.1), (100, 0.15)])
def test_a_noisy_short_run_at_chance_is_not_let_off_by_its_end_window(k, n, rel):
    # Short noisy runs at ln k whose accuracy sits at 1/k: the median of the last 10% (3-10
    # points) strays 4-5% below ln k by noise alone, and a fixed 3% bar for the end let 6
    # of 117 generated chance runs pass (zoo seed 5). The end is read within its own 99%
    # margin, as the blocks are.
    fails = 0
    for seed in range(10):
        loss = at_level(n, math.log(k), rel, seed)
        acc = [1 / k if (i + 1) % 5 == 0 else None for i in range(n)]
        fails += "TP-CHANCE-LEVEL" in ids(judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-3), eval_accuracy=acc)))
    assert fails >= 9
    # A run that leaves ln k by a fifth over its second half is learning, noise or not.
    t = np.linspace(0, 1, n)
    leaving = math.log(k) * (1 - 0.2 * np.clip((t - 0.5) / 0.5, 0, 1)) * at_level(n, 1.0, rel, 1)
    acc = [1 / k if (i + 1) % 5 == 0 else None for i in range(n)]
    assert "TP-CHANCE-LEVEL" not in ids(judge_runlog(run_of(loss=leaving, lr=np.full(n, 1e-3), eval_accuracy=acc)))


def _frozen_but_norm(n_evals, eval_fall, seed=0, grad=None):
    """A model frozen but for its final LayerNorm: a train loss at 3.26 drifting down
    0.5% with 1% batch noise, logged every 10 steps; an evaluation every 10 rows falling
    ``eval_fall`` of its first value, smoothly (a fixed set: no batch noise)."""
    rng = np.random.default_rng(seed)
    n = 10 * n_evals
    loss = 3.26 * (1 - 0.005 * np.linspace(0, 1, n)) * np.exp(0.01 * rng.standard_normal(n))
    ev = [None] * n
    for j in range(n_evals):
        ev[(j + 1) * 10 - 1] = 3.26 * (1 - eval_fall * j / (n_evals - 1)) * (1 + 1e-4 * rng.standard_normal())
    cols = {"loss": loss, "eval_loss": ev, "lr": np.full(n, 1e-3)}
    if grad is not None:
        cols["grad_norm"] = grad(n)
    return run_of(**cols)


@pytest.mark.parametrize("n_evals", [6, 10, 30])
@pytest.mark.parametrize("eval_fall", [0.004, 0.007, 0.02])
def test_a_pinned_loss_whose_eval_falls_significantly_but_slightly_made_no_progress(n_evals, eval_fall):
    # Two helpers' freeze loops that froze everything but ln_f PASSed: the eval loss fell
    # 0.4-0.7% with a significant trend, which read as learning.
    rep = judge_runlog(_frozen_but_norm(n_evals, eval_fall))
    f = one(rep, "TP-LOSS-STALLED")
    assert rep.verdict.value == "WARN" and "under the 5% a slow learner makes" in f.evidence


def test_a_faint_eval_fall_is_never_a_fail_even_with_a_named_cause():
    # A gradient norm that collapses is a cause of a dead run; a significant eval drift
    # under a pinned loss stays a WARN, as the held-out loss did move.
    rep = judge_runlog(_frozen_but_norm(10, 0.01, grad=lambda n: np.geomspace(1.0, 1e-5, n)))
    assert rep.verdict.value == "WARN" and "TP-DEAD-RUN" not in ids(rep), ids(rep)


@pytest.mark.parametrize("eval_fall", [0.06, 0.15])
def test_a_pinned_loss_whose_eval_falls_by_a_learners_effect_is_learning(eval_fall):
    # The train loss can hide learning (a fine-tune at its batch floor); an eval loss that
    # falls 6% or more shows it.
    rep = judge_runlog(_frozen_but_norm(10, eval_fall))
    assert not {"TP-LOSS-STALLED", "TP-DEAD-RUN"} & set(ids(rep)), ids(rep)


# --- TP-RL-RETURN-FALLING: a return that only fell from where it started -----------------


@pytest.mark.parametrize("n,noise,seed", [(30, 0.02, 0), (200, 0.1, 1), (850, 0.3, 2), (3000, 0.5, 3)])
@pytest.mark.parametrize("key", ["reward", "reward_mean", "rollout/ep_rew_mean"])
def test_a_return_that_falls_from_its_start_is_a_warning(n, noise, seed, key):
    # A policy gradient with its sign flipped: the bandit's mean reward goes 0.48 -> 0.03,
    # falling fastest at first, with Bernoulli-like noise.
    t = np.linspace(0, 1, n)
    rng = np.random.default_rng(seed)
    reward = 0.03 + 0.45 * np.exp(-4 * t) + noise * 0.45 * rng.standard_normal(n)
    rep = judge_runlog(run_of(**{key: reward}))
    f = one(rep, "TP-RL-RETURN-FALLING")
    assert f.level is Level.WARN and rep.verdict is Level.WARN
    assert f.data["end"] < f.data["start"] and "TP-NO-LOSS" not in ids(rep)


@pytest.mark.parametrize("n,noise,seed", [(30, 0.02, 0), (300, 0.2, 1), (1000, 0.5, 2)])
def test_a_rising_return_a_collapse_and_an_early_dip_are_not_a_fall(n, noise, seed):
    for shape in ("rise", "late_dip", "collapse"):
        rep = judge_runlog(rl_run(returns(n, shape, noise, seed)))
        assert "TP-RL-RETURN-FALLING" not in ids(rep), shape
    # exploration first: the return dips below the start, then climbs above it
    t = np.linspace(0, 1, n)
    dip = -np.sin(np.pi * np.minimum(t / 0.3, 1)) * 300 + 600 * np.clip((t - 0.3) / 0.7, 0, 1)
    rep = judge_runlog(rl_run(dip + noise * 600 * np.random.default_rng(seed).standard_normal(n)))
    assert "TP-RL-RETURN-FALLING" not in ids(rep)


@pytest.mark.parametrize("n", [40, 400])
def test_the_perplexity_of_something_else_says_nothing_of_the_loss(n):
    # a likelihood loss negative by design beside a VQ codebook's perplexity (its usage,
    # 80-300 codes): not exp of the loss, so the loss may be negative (a new user's
    # generated runs FAILed 44 of 49 times); a perplexity that is exp of the loss still
    # says the loss is a cross-entropy
    loss = np.linspace(2.0, -1.5, n)
    usage = np.linspace(80.0, 300.0, n)
    rep = judge_runlog(run_of(loss=loss, codebook_perplexity=usage))
    assert not any(f.id == "TP-NEGATIVE-LOSS" for f in rep.findings)
    rep = judge_runlog(run_of(loss=loss, vq_ppl=np.exp(np.abs(loss))))
    assert "vq_ppl" in one(rep, "TP-NEGATIVE-LOSS").data["because"]
    # a VQ model names its codebook's usage plain "perplexity" (helper 99): its values, not
    # its key, say it is no exp of the loss
    for key in ("perplexity", "train/perplexity", "val_perplexity"):
        rep = judge_runlog(run_of(loss=loss, **{key: usage}))
        assert not any(f.id == "TP-NEGATIVE-LOSS" for f in rep.findings), key
