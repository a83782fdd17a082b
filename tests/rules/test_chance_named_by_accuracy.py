"""TP-CHANCE-LEVEL over more than ``chance_max_classes`` classes: the loss alone cannot
name k there (ln 101 / ln 100 = 1.002), the run's own top-1 accuracy at 1/k can. Generated
guessers over 16 to 21,843 classes (lengths, noise levels, train or held-out accuracy on
1,000-50,000 examples), and the runs nearest to them that are no guess: a language model
at the same loss whose accuracy is 0.2, a loss at ln k with no accuracy, a classifier that
learns from ln k, an accuracy at 3/k; and a reviewer's healthy runs whose loss sat near ln k
for some k while a small metric named like an accuracy (exact match, pass@1, retrieval top-1
over a gallery, hit@1 over 50,000 items) sat at 1.2-1.6/k or rose as the model learned."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _helpers import run_of

from trainproof.findings import Level
from trainproof.rules.engine import judge_runlog

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
