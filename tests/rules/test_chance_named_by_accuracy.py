"""TP-CHANCE-LEVEL over more than ``chance_max_classes`` classes: the loss alone cannot
name k there (ln 101 / ln 100 = 1.002), the run's own top-1 accuracy at 1/k can. Generated
guessers over 16 to 21,843 classes (lengths, noise levels, train or held-out accuracy on
1,000-50,000 examples), and the runs nearest to them that are no guess: a language model
at the same loss whose accuracy is 0.2, a loss at ln k with no accuracy, a classifier that
learns from ln k, an accuracy at 3/k; and a reviewer's healthy runs whose loss sat near ln k
for some k while a small metric named like an accuracy (exact match, pass@1, retrieval top-1
over a gallery, hit@1 over 50,000 items) sat at 1.2-1.6/k or rose as the model learned. Also a cross-entropy term
logged beside a judged loss of another kind (a distillation run's hard-label term beside
its total) at ln k with the accuracy at 1/k."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _helpers import run_of

from trainproof.findings import Level
from trainproof.rules.engine import judge_runlog

from conftest import run_cli

RULE = "TP-CHANCE-LEVEL"


def _guesser(n, k, sigma, seed, acc_rate=None, examples=10_000):
    rng = np.random.default_rng(seed)
    loss = math.log(k) * np.exp(sigma * rng.standard_normal(n))
    p = 1 / k if acc_rate is None else acc_rate
    acc = rng.binomial(examples, p, n) / examples
    return loss, acc


@pytest.mark.parametrize("k", [16, 37, 100, 200, 1000, 21843])
@pytest.mark.parametrize("n", [40, 300, 3000])
def test_a_guesser_over_many_classes_fails_when_its_accuracy_names_k(k, n):
    for seed, key in enumerate(("accuracy", "val_acc", "eval/top1", "train_accuracy")):
        sigma = (0.005, 0.01, 0.02, 0.01)[seed]
        # evaluation sets of at least 50 expected hits: on fewer a guesser's top-1 is mostly 0
        loss, acc = _guesser(n, k, sigma, seed, examples=max(50 * k, (1000, 10_000, 50_000, 5000)[seed]))
        rep = judge_runlog(run_of(loss=loss, **{key: acc}))
        f = {x.id: x for x in rep.findings}
        assert RULE in f and rep.verdict is Level.FAIL, (k, n, key, rep.ids())
        named = f[RULE].data.get("classes") or f[RULE].data.get("k")
        assert named is None or abs(math.log(named) / math.log(k) - 1) < 0.02, (k, named)


@pytest.mark.parametrize("n", [40, 300, 3000])
def test_the_runs_nearest_to_it_are_no_guess(n):
    for seed in range(3):
        k = (100, 1000, 200)[seed]
        # a language model at the same loss: it predicts a fifth of the tokens
        loss, acc = _guesser(n, k, 0.01, seed, acc_rate=0.2)
        rep = judge_runlog(run_of(loss=loss, token_accuracy=acc))
        assert RULE not in rep.ids() and rep.verdict is not Level.FAIL, (n, k, rep.ids())
        # an accuracy at 3/k: better than a guess
        loss, acc = _guesser(n, k, 0.01, seed, acc_rate=3 / k, examples=50_000)
        rep = judge_runlog(run_of(loss=loss, accuracy=acc))
        assert RULE not in rep.ids(), (n, k, rep.ids())
        # no accuracy: the loss alone does not name k past chance_max_classes
        rep = judge_runlog(run_of(loss=loss))
        assert RULE not in rep.ids() and rep.verdict is not Level.FAIL, (n, k, rep.ids())
        # a classifier that learns from ln k: accuracy 1/k -> 0.6
        t = np.arange(n) / n
        rng = np.random.default_rng(seed)
        learn = math.log(k) * (0.3 + 0.7 * np.exp(-5 * t)) * np.exp(0.01 * rng.standard_normal(n))
        acc = 1 / k + (0.6 - 1 / k) * (1 - np.exp(-5 * t))
        rep = judge_runlog(run_of(loss=learn, accuracy=acc))
        assert RULE not in rep.ids() and rep.verdict is not Level.FAIL, (n, k, rep.ids())


@pytest.mark.parametrize("n", [40, 300, 3000])
def test_a_small_metric_that_rises_or_sits_above_the_band_names_no_k(n):
    t = np.arange(n) / n
    for seed in range(3):
        rng = np.random.default_rng(seed)
        k = (31, 190, 1000)[seed]
        loss = math.log(k) * (1 - 0.025 * t) * np.exp(0.01 * rng.standard_normal(n))
        # an exact-match score rising 1/k -> 4/k as the model learns
        em = (1 + 3 * t) / k * np.exp(0.05 * rng.standard_normal(n))
        rep = judge_runlog(run_of(loss=loss, eval_accuracy=em))
        assert RULE not in rep.ids() and rep.verdict is not Level.FAIL, (n, k, rep.ids())
        # a retrieval top-1 flat at 1.5/k
        top1 = 1.5 / k * np.exp(0.03 * rng.standard_normal(n))
        rep = judge_runlog(run_of(loss=loss, top1_accuracy=top1))
        assert RULE not in rep.ids() and rep.verdict is not Level.FAIL, (n, k, rep.ids())


@pytest.mark.parametrize("k", [200, 1000, 21843])
@pytest.mark.parametrize("n", [30, 90, 600])
def test_a_top1_printed_in_percent_under_one_names_k(k, n, tmp_path):
    # timm's summary.csv, DeiT's log.txt and torchvision print top-1 in percent: a guesser
    # over 1,000 classes prints 0.1 (read as a share, 1/10, whose level ln 10 is not the
    # loss's); the reading whose level agrees with the loss names k
    for seed, key in enumerate(("eval_top1", "test_acc1", "val/acc1")):
        loss, acc = _guesser(n, k, 0.003, seed, examples=max(50 * k, 50_000))
        eval_loss = math.log(k) * np.exp(0.001 * np.random.default_rng(seed).standard_normal(n))
        rep = judge_runlog(run_of(loss=loss, eval_loss=eval_loss, **{key: 100 * acc}))
        assert RULE in rep.ids() and rep.verdict is Level.FAIL, (k, n, key, rep.ids())
    # ... through the CSV reader, timm's columns
    loss, acc = _guesser(n, k, 0.003, 7, examples=max(50 * k, 50_000))
    rows = "".join(
        f"{i},{loss[i]:.6f},{math.log(k):.6f},{100 * acc[i]:.4f},{500 * acc[i]:.4f},{0.1 * (1 - i / n):.6g}\n"
        for i in range(n)
    )
    p = tmp_path / "summary.csv"
    p.write_text("epoch,train_loss,eval_loss,eval_top1,eval_top5,lr\n" + rows)
    code, _, _, doc = run_cli("judge", str(p), "--json")
    assert code == 1 and RULE in {f["id"] for f in doc["reports"][0]["findings"]}


@pytest.mark.parametrize("n", [30, 300])
def test_a_share_that_names_a_small_k_is_not_read_in_percent(n):
    # a 10-class guesser's share 0.1 at ln 10: k = 10 (the loss names it; percent would say 1,000)
    loss, acc = _guesser(n, 10, 0.01, 3, examples=10_000)
    rep = judge_runlog(run_of(loss=loss, accuracy=acc))
    f = {x.id: x for x in rep.findings}
    assert RULE in f
    named = f[RULE].data.get("classes") or f[RULE].data.get("k")
    assert named is None or named == 10, named
    # a 1,000-class model that learns (top-1 in percent 0.1 -> 0.9, under 1 all run) is no guess
    t = np.arange(n) / n
    learn = math.log(1000) * (1 - 0.3 * t) * np.exp(0.003 * np.random.default_rng(1).standard_normal(n))
    rep = judge_runlog(run_of(loss=learn, eval_top1=0.1 + 0.8 * t))
    assert RULE not in rep.ids() and rep.verdict is not Level.FAIL, rep.ids()
    # a plain accuracy is a share: 0.99 beside a composite loss that holds at 4.605 (ln
    # 100), 0.5 beside a loss summed over tokens at 5.30 (ln 200), name no k in percent
    rng = np.random.default_rng(2)
    for level, acc, key in ((math.log(100), 0.99, "accuracy"), (math.log(200), 0.5, "token_accuracy")):
        loss = level * np.exp(0.005 * rng.standard_normal(n))
        rep = judge_runlog(run_of(loss=loss, **{key: acc + 0.002 * rng.standard_normal(n)}))
        assert RULE not in rep.ids() and rep.verdict is not Level.FAIL, (key, rep.ids())


def _distilled(n, k, seed, *, frozen, acc_rate=None):
    """A distillation run's total loss (the judged one: a KD term plus a hard-label CE),
    its CE term and its train accuracy on batches of 128: a frozen student's CE at ln k and
    accuracy at 1/k (or ``acc_rate``); a learning one's CE falling ln k -> 0.4."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    ce = math.log(k) * (np.ones(n) if frozen else 0.15 + 0.85 * np.exp(-5 * t)) * np.exp(0.01 * rng.standard_normal(n))
    kd = 3.1 + 0.1 * t + 0.05 * rng.standard_normal(n)
    p = (
        (1 / k if frozen else 1 / k + (0.85 - 1 / k) * (1 - np.exp(-5 * t)))
        if acc_rate is None
        else np.full(n, acc_rate)
    )
    acc = rng.binomial(128, np.broadcast_to(p, (n,))) / 128
    return 0.5 * ce + 0.5 * kd, ce, acc


@pytest.mark.parametrize("k", [2, 3, 7, 10])
@pytest.mark.parametrize("n", [20, 100, 2000])
@pytest.mark.parametrize("key", ["ce_loss", "train/loss_ce", "xent", "cross_entropy_loss", "train/student_ce"])
def test_a_cross_entropy_term_at_chance_with_the_accuracy_there_fails(k, n, key):
    loss, ce, acc = _distilled(n, k, k + n, frozen=True)
    rep = judge_runlog(run_of(loss=loss, **{key: ce, "train_acc": acc}))
    f = {x.id: x for x in rep.findings}
    assert RULE in f and f[RULE].data["classes"] == k and f[RULE].data["series"] == key, (k, n, key, rep.ids())


@pytest.mark.parametrize("n", [20, 100, 2000])
def test_a_cross_entropy_term_that_learns_or_has_no_accuracy_at_chance_is_no_guess(n):
    for k in (2, 3, 10):
        loss, ce, acc = _distilled(n, k, n, frozen=False)
        rep = judge_runlog(run_of(loss=loss, ce_loss=ce, train_acc=acc))
        assert RULE not in rep.ids() and rep.verdict is not Level.FAIL, (k, rep.ids())
        # at ln k, but no accuracy logged, or an accuracy well above 1/k: no proof
        loss, ce, acc = _distilled(n, k, n, frozen=True, acc_rate=min(0.9, 5 / k))
        for extra in ({}, {"train_acc": acc}):
            rep = judge_runlog(run_of(loss=loss, ce_loss=ce, **extra))
            assert RULE not in rep.ids(), (k, extra.keys(), rep.ids())
        # at ln k with the train accuracy at 1/k, but a held-out accuracy far above it
        # (mixup's train accuracy): the classifier does not guess
        loss, ce, acc = _distilled(n, k, n, frozen=True)
        val = np.full(n, min(0.95, 4 / k))
        rep = judge_runlog(run_of(loss=loss, ce_loss=ce, train_acc=acc, val_acc=val))
        assert RULE not in rep.ids(), (k, rep.ids())
        # an auxiliary binary head at chance while the judged multi-task loss learns
        t = np.arange(n) / n
        main = 2.4 * np.exp(-3 * t) + 0.1
        aux_ce, aux_acc = _distilled(n, 2, n + 1, frozen=True)[1:]
        rep = judge_runlog(run_of(loss=main + 0.1 * aux_ce, aux_ce=aux_ce, aux_acc=aux_acc))
        assert RULE not in rep.ids() and rep.verdict is not Level.FAIL, (k, rep.ids())
