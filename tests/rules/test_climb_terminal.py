"""A climb in the run's last logs: the loss 3-5x up over its last 11-28 of 190-400 logs,
where the log ends. The end window a divergence's end level is read over (the last 10%)
overlaps the best block just before the climb, so the run PASSed with no finding (a
breaker's run 5x up over its last 11 of 190 logs, its eval loss 2.5x up). TP-LOSS-CLIMB
warns, reading the end over the points after that block (at least blowup_points); too few
logs to tell a broken run from a few bad batches at its end, so no FAIL. One or two high
last logs, and heavy-tailed healthy runs at their floor, stay quiet."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import run_cli


def _run(
    n: int, seed: int, *, tail: int, jump: float, noise: float, df: float | None = None, tau: float = 0.15
) -> np.ndarray:
    """``n`` logs of a loss falling 2.9 -> 0.9 (time constant ``tau`` of the run), relative
    noise ``noise`` (Student t with ``df`` degrees of freedom, halved, where given), its
    last ``tail`` logs multiplied by ``jump``."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)
    eps = rng.standard_t(df, n) / 2 if df else rng.standard_normal(n)
    v = (0.9 + 2.0 * np.exp(-t / tau)) * np.exp(noise * eps)
    if tail:
        v[-tail:] *= jump
    return v


def _ids(tmp_path, v: np.ndarray) -> tuple[set[str], set[str]]:
    p = tmp_path / "metrics.jsonl"
    p.write_text("".join(json.dumps({"step": 10 * (i + 1), "loss": float(x)}) + "\n" for i, x in enumerate(v)))
    _, _, _, doc = run_cli("judge", str(p), "--json")
    f = doc["reports"][0]["findings"]
    return {x["id"] for x in f if x["level"] == "FAIL"}, {x["id"] for x in f if x["level"] == "WARN"}


@pytest.mark.parametrize("n,tail", [(190, 11), (190, 14), (400, 22), (400, 28)])
@pytest.mark.parametrize("jump,noise", [(5.0, 0.04), (3.0, 0.1)])
def test_a_climb_over_the_last_logs_is_never_a_pass(tmp_path, n, tail, jump, noise):
    # over more than half the end window: TP-DIVERGE where its end window starts after the
    # best block, TP-LOSS-CLIMB's warning where the best block reaches into it
    fails, warns = _ids(tmp_path, _run(n, n + tail, tail=tail, jump=jump, noise=noise))
    assert "TP-LOSS-CLIMB" in warns or "TP-DIVERGE" in fails, (fails, warns)


def test_the_breakers_run_warns(tmp_path):
    # a loss still falling slowly, then up over its last 11 logs to 5x (a ramp of 4, then
    # held), 190 in all: its best block, just before the climb, reaches into the end window
    v = _run(190, 5, tail=0, jump=1.0, noise=0.04, tau=0.5)
    v[-11:] *= np.array([1.5, 2.4, 3.6, 4.6, 5.0, 4.9, 5.1, 5.2, 5.0, 5.1, 5.2])
    fails, warns = _ids(tmp_path, v)
    assert "TP-LOSS-CLIMB" in warns and not fails, (fails, warns)


@pytest.mark.parametrize("n", [190, 400])
@pytest.mark.parametrize("tail", [0, 1, 2])
def test_one_or_two_high_last_logs_are_no_climb(tmp_path, n, tail):
    fails, warns = _ids(tmp_path, _run(n, n + tail + 7, tail=tail, jump=3.0, noise=0.04))
    assert "TP-LOSS-CLIMB" not in warns and not fails, (fails, warns)


@pytest.mark.parametrize("n", [200, 2000])
@pytest.mark.parametrize("seed", range(4))
def test_a_heavy_tailed_healthy_run_at_its_floor_stays_quiet(tmp_path, n, seed):
    # batch-1 losses: Student t with 2 degrees of freedom on the log, a low block of them
    # often inside the end window
    fails, warns = _ids(tmp_path, _run(n, seed, tail=0, jump=1.0, noise=0.3, df=2.0))
    assert "TP-LOSS-CLIMB" not in warns and not fails, (fails, warns)
