"""TP-NAN on an auxiliary train term (a router's load-balancing loss, a z-loss) that the
loss fallback sets aside from the loss's shape: non-finite from some step to its last
logged value FAILs, whatever the judged loss does; a few non-finite values that turn finite
again (steps a loss scaler skipped) do not."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import run_of

from trainproof.rules.engine import judge_runlog


def ids(report) -> set[str]:
    return {f.id for f in report.findings}


def healthy(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (2.3 + 8.0 * np.exp(-np.arange(n) / (n / 8))) * np.exp(0.02 * rng.standard_normal(n))


@pytest.mark.parametrize(
    "main,aux",
    [
        ("lm_loss", "aux_loss"),
        ("loss", "load_balancing_loss"),
        ("ce_loss", "z_loss"),
        ("train/lm_loss", "train/router_z_loss"),
    ],
)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("n,onset", [(40, 0.5), (1000, 0.6), (5000, 0.95)])
def test_an_auxiliary_term_non_finite_to_the_end_fails(main, aux, bad, n, onset):
    rng = np.random.default_rng(n)
    a = 0.01 * np.exp(0.05 * rng.standard_normal(n))
    a[int(onset * n) :] = bad
    f = [x for x in judge_runlog(run_of(**{main: healthy(n, n), aux: a})).findings if x.id == "TP-NAN"]
    assert len(f) == 1 and f[0].data["key"] == aux and f[0].data["count"] == n - int(onset * n)


@pytest.mark.parametrize("case", ["transient", "last-only", "finite", "every-third"])
def test_an_auxiliary_term_that_is_finite_at_its_end_is_no_nan(case):
    n = 1000
    a = np.full(n, 0.01)
    if case == "transient":
        a[[100, 101, 400]] = np.inf  # steps a loss scaler skipped
    elif case == "last-only":
        a[-1] = np.nan  # one value: not a stretch
    elif case == "every-third":
        a[2::3] = np.nan  # an empty mean on steps whose expert layers were skipped, all run
        a[-2:] = np.nan
    assert "TP-NAN" not in ids(judge_runlog(run_of(lm_loss=healthy(n, 1), aux_loss=a)))


# --- a lone non-finite first log ---------------------------------------------------------


@pytest.mark.parametrize("n", [9, 400])
def test_a_non_finite_first_log_followed_by_a_finite_run_is_no_nan(n):
    # a running mean printed before its first batch (0 / 0), then a healthy run
    loss = healthy(n, n)
    loss[0] = np.nan
    report = judge_runlog(run_of(loss=loss))
    assert "TP-NAN" not in ids(report) and report.verdict.value != "NOT-CHECKED"  # the rest is judged
    assert any("read as absent" in n for n in report.notes)


@pytest.mark.parametrize("where", ["first-two", "first-and-later", "short-run"])
def test_a_non_finite_first_log_with_more_of_them_or_too_little_after_is_a_nan(where):
    n = 6 if where == "short-run" else 400
    loss = healthy(n, 3)
    loss[0] = np.nan
    if where == "first-two":
        loss[1] = np.nan
    elif where == "first-and-later":
        loss[300] = np.inf
    assert "TP-NAN" in ids(judge_runlog(run_of(loss=loss)))


@pytest.mark.parametrize("key", ["gaussian_nll", "nll", "train/elbo"])
def test_a_likelihood_that_settles_at_zero_with_both_signs_is_not_a_loss_at_zero(key):
    rng = np.random.default_rng(0)
    n = 900
    loss = 2.0 * np.exp(-np.arange(n) / 60) + 0.0015 * rng.standard_normal(n)
    assert "TP-LOSS-AT-ZERO" not in ids(judge_runlog(run_of(**{key: loss})))
    assert "TP-LOSS-AT-ZERO" in ids(judge_runlog(run_of(loss=loss)))  # a plain loss cannot be negative
