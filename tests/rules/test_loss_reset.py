"""TP-LOSS-RESET: a loss that goes back to where the run started and falls again (weights
that started over mid-run), on generated runs of several lengths, noise levels and
formats; and the healthy shapes nearest it (a warm restart of a logged rate, a curriculum
stage the log names, a spike that comes back, a climb that stays, a run that gives back
part of what it learned), which must not fire it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _helpers import run_of

from trainproof.rules.engine import judge_runlog

from conftest import one, run_cli


def _learn(n: int, start: float, floor: float, rng, noise: float, tau: float | None = None) -> np.ndarray:
    """``n`` losses falling from ``start`` to ``floor`` with time constant ``tau`` points
    (a sixth of ``n`` unless given), with log-normal point noise."""
    t = np.arange(n)
    tau = n / 6 if tau is None else tau
    return (floor + (start - floor) * np.exp(-t / tau)) * np.exp(noise * rng.standard_normal(n))


def _reset_run(n: int, at: float, noise: float, seed: int, back: float = 1.0) -> np.ndarray:
    """A classifier from ln 5 to 0.6 that, at ``at`` of the run, starts over from ``back``
    of the way back (1.0: its untrained level) and learns again as fast as it did the
    first time (the same model at the same rate: a tenth of the run)."""
    rng = np.random.default_rng(seed)
    k = int(n * at)
    tau = n / 10
    first = _learn(k, math.log(5), 0.6, rng, noise, tau)
    restart = math.exp(math.log(0.6) + back * (math.log(math.log(5)) - math.log(0.6)))
    second = _learn(n - k, restart, 0.6, rng, noise, tau)
    return np.r_[first, second]


def _ids(rep) -> set[str]:
    return {f.id for f in rep.findings}


@pytest.mark.parametrize("n", [120, 300, 3000])
@pytest.mark.parametrize("noise", [0.01, 0.05, 0.15])
@pytest.mark.parametrize("at", [0.3, 0.5, 0.7])
def test_weights_that_start_over_mid_run_warn(n, noise, at):
    for seed in range(3):
        rep = judge_runlog(run_of(loss=_reset_run(n, at, noise, seed), lr=np.full(n, 1e-3)))
        f = one(rep, "TP-LOSS-RESET")
        assert rep.verdict.value == "WARN", rep.ids()
        # the step it names is within a block or two of the restart (steps are 10 apart)
        assert abs(f.data["reset_step"] - 10 * n * at) <= 10 * max(2, n // 10), (f.data, n, at)


def test_a_reset_in_a_csv_log_read_from_disk_warns(tmp_path):
    loss = _reset_run(400, 0.5, 0.05, 7)
    p = tmp_path / "metrics.csv"
    p.write_text("step,train_loss\n" + "".join(f"{10 * (i + 1)},{x!r}\n" for i, x in enumerate(loss)))
    code, _, _, doc = run_cli("judge", str(p), "--json")
    assert code == 0 and "TP-LOSS-RESET" in [f["id"] for f in doc["reports"][0]["findings"]]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("noise", [0.02, 0.1, 0.3])
def test_healthy_runs_do_not_reset(seed, noise):
    rng = np.random.default_rng(seed)
    n = 500
    rep = judge_runlog(run_of(loss=_learn(n, math.log(5), 0.3, rng, noise), lr=np.full(n, 1e-3)))
    assert "TP-LOSS-RESET" not in _ids(rep)


@pytest.mark.parametrize("n", [300, 3000])
@pytest.mark.parametrize("noise", [0.01, 0.05, 0.15])
def test_part_of_the_way_back_is_not_a_reset(n, noise):
    # A harder stage of unlogged data or a warm restart gives back part of what it learned.
    for back in (0.3, 0.6):
        for seed in range(3):
            loss = _reset_run(n, 0.5, noise, seed, back=back)
            rep = judge_runlog(run_of(loss=loss, lr=np.full(n, 1e-3)))
            assert "TP-LOSS-RESET" not in _ids(rep), (back, seed)


def test_a_warm_restart_of_a_logged_learning_rate_is_not_a_reset():
    # Cosine with warm restarts: the rate climbs back to its peak at the restart.
    n = 400
    loss = _reset_run(n, 0.5, 0.03, 2)
    cyc = np.r_[np.arange(n // 2), np.arange(n - n // 2)] / (n // 2)
    lr = 1e-3 * 0.5 * (1 + np.cos(np.pi * cyc)) + 1e-6
    assert "TP-LOSS-RESET" not in _ids(judge_runlog(run_of(loss=loss, lr=lr)))


def test_a_curriculum_stage_that_the_log_names_is_not_a_reset():
    n = 400
    stage = np.r_[np.zeros(n // 2), np.ones(n - n // 2)]
    rep = judge_runlog(run_of(loss=_reset_run(n, 0.5, 0.03, 3), curriculum_stage=stage))
    assert "TP-LOSS-RESET" not in _ids(rep)


def test_a_short_spike_and_a_climb_that_stays_are_not_a_reset():
    rng = np.random.default_rng(4)
    n = 400
    loss = _learn(n, math.log(5), 0.6, rng, 0.03)
    spiked = loss.copy()
    spiked[200:204] = 1.7  # four points back at the start: a spike, not a block's level
    assert "TP-LOSS-RESET" not in _ids(judge_runlog(run_of(loss=spiked)))
    stays = loss.copy()
    stays[250:] = math.log(5) * np.exp(0.03 * rng.standard_normal(n - 250))  # never falls again
    rep = judge_runlog(run_of(loss=stays))
    assert "TP-LOSS-RESET" not in _ids(rep) and "TP-DIVERGE" in _ids(rep), rep.ids()


def test_a_loss_that_never_fell_far_is_not_a_reset():
    # 1.61 -> 1.45 (10%) and back: a noisy run near its start shows no return.
    rng = np.random.default_rng(5)
    n = 300
    loss = np.r_[np.linspace(1.61, 1.45, n // 2), np.linspace(1.6, 1.45, n - n // 2)] * np.exp(
        0.02 * rng.standard_normal(n)
    )
    assert "TP-LOSS-RESET" not in _ids(judge_runlog(run_of(loss=loss)))
