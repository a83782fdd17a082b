"""TP-GAN-DISCRIMINATOR-WINS: on a GAN's two losses, a discriminator loss that falls to
near zero and holds while the generator's climbs. Tested on generated distributions of
healthy games (the discriminator wins early and is caught up, a slow DCGAN-style drift,
noise from 5% to 50% with heavy-tailed spikes, 25 to 5,000 logs) and of the broken kind
(the discriminator wins from an onset at 10% to 70% of the run), written through real
formats, and on the shapes that must not be judged (a WGAN critic, one side only)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from _helpers import run_of

from trainproof.findings import Level
from trainproof.rules.engine import judge_runlog
from trainproof.rules.thresholds import DEFAULT

from conftest import run_cli

RULE = "TP-GAN-DISCRIMINATOR-WINS"


def _noise(rng, n: int, sigma: float) -> np.ndarray:
    """Multiplicative noise with a heavy tail: log-normal, and 2% of points x3 or /3."""
    z = np.exp(sigma * rng.standard_normal(n))
    spikes = rng.random(n) < 0.02
    z[spikes] *= np.where(rng.random(int(spikes.sum())) < 0.5, 3.0, 1 / 3)
    return z


def healthy(n: int, sigma: float, seed: int, shape: str) -> tuple[np.ndarray, np.ndarray]:
    """``(generator, discriminator)`` losses of a healthy game of ``n`` logs.

    ``early_win``: the discriminator falls from 2 ln 2 to 2% of it in the first 40% and is
    caught up (back to 0.9); ``drift``: DCGAN-style, the discriminator drifts 1.2 -> 0.3
    while the generator climbs 1.5 -> 4.5; ``steady``: both hold their level;
    ``strong_d``: the discriminator holds at 12% of its start (0.17, confident but not
    certain) while the generator climbs 1 -> 5."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)
    if shape == "early_win":
        dip = np.exp(-(((t - 0.25) / 0.1) ** 2))
        d = 2 * math.log(2) * (1 - 0.98 * dip) * np.where(t > 0.4, 0.65, 1.0)
        g = 1.0 + 4.0 * dip
    elif shape == "drift":
        d, g = 1.2 - 0.9 * t, 1.5 + 3.0 * t
    elif shape == "steady":
        d, g = np.full(n, 0.69), np.full(n, 1.1)
    else:
        d = 0.17 + (1.386 - 0.17) * np.exp(-t / 0.05)
        g = 1.0 + 4.0 * (1 - np.exp(-t / 0.2))
    return g * _noise(rng, n, sigma), d * _noise(rng, n, sigma)


def broken(n: int, sigma: float, seed: int, onset: float) -> tuple[np.ndarray, np.ndarray]:
    """A game the discriminator wins from ``onset`` (share of the run): its loss falls from
    ~2 ln 2 to 0.1-1% of it over 5% of the run and holds; the generator's climbs 3-8x."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)
    k = np.clip((t - onset) / 0.05, 0, 1)
    floor = rng.uniform(0.001, 0.01)
    d = 1.386 * np.exp(np.log(floor) * k)
    g = 1.2 * (1 + rng.uniform(2, 7) * k)
    return g * _noise(rng, n, sigma), d * _noise(rng, n, sigma)


def _judge(g, d, g_key="loss_G", d_key="loss_D"):
    return judge_runlog(run_of(**{g_key: g, d_key: d}))


@pytest.mark.parametrize("shape", ["early_win", "drift", "steady", "strong_d"])
@pytest.mark.parametrize("n", [25, 300, 5000])
def test_healthy_games_are_judged_and_never_warned(shape, n):
    for seed in range(12):
        sigma = (0.05, 0.2, 0.5)[seed % 3]
        rep = _judge(*healthy(n, sigma, seed, shape))
        assert RULE in rep.ran
        assert rep.verdict is Level.PASS, (shape, n, seed, rep.ids())


@pytest.mark.parametrize("onset", [0.1, 0.4, 0.7])
@pytest.mark.parametrize("n", [25, 300, 5000])
def test_a_discriminator_that_wins_and_holds_is_a_warn_from_its_onset(onset, n):
    for seed in range(8):
        sigma = (0.05, 0.2, 0.5, 0.8)[seed % 4]
        g, d = broken(n, sigma, seed, onset)
        rep = _judge(g, d)
        (f,) = [f for f in rep.findings if f.id == RULE]
        assert f.level is Level.WARN and rep.verdict is Level.WARN, (onset, n, seed)
        # the onset is the block where the collapse began, within a twentieth of the run
        at = (f.data["onset_step"] / 10 - 1) / (n - 1)
        assert onset - 0.06 <= at <= onset + 0.11, (at, onset)
        assert f.data["discriminator_end"] <= DEFAULT.gan_win_ratio * f.data["discriminator_start"]


@pytest.mark.parametrize("n", [25, 300, 5000])
@pytest.mark.parametrize("first", [1, 3])
def test_a_discriminator_that_won_before_the_first_fifth_ended_is_measured_against_ln2(n, first):
    # D's learning rate 100x G's: the discriminator wins within the first logs, so its
    # first fifth already sits near 0 and has no level of the game to fall from
    for seed in range(6):
        sigma = (0.05, 0.3, 0.6)[seed % 3]
        rng = np.random.default_rng(seed)
        t = np.linspace(0, 1, n)
        d = 10 ** rng.uniform(-4, -2.5) * _noise(rng, n, sigma)
        d[:first] = 1.3
        g = (5.0 + 7.0 * (1 - np.exp(-t / 0.2))) * _noise(rng, n, 0.05)
        g[:first] = 0.8
        rep = _judge(g, d)
        (f,) = [f for f in rep.findings if f.id == RULE]
        assert f.level is Level.WARN, (n, seed)
        # a generator loss that drifts down from a high start (a composite one, or the
        # generator adapting to a discriminator that still wins) does not undo the win
        if first == 1:  # won at the first log: the first fifth already holds the win
            rep = _judge(np.linspace(15.0, 9.0, n) * _noise(rng, n, 0.05), d)
            assert RULE in rep.ids(), (n, seed)
        # a Wasserstein critic's loss falls toward 0 in a healthy run: not judged
        for keys in (("loss_G", "loss_critic"), ("loss_G", "loss_D")):
            extra = {"gradient_penalty": np.full(n, 0.1)} if keys[1] == "loss_D" else {}
            rep = judge_runlog(run_of(**{keys[0]: g, keys[1]: d}, **extra))
            assert RULE not in rep.ids() and rep.verdict is not Level.WARN, (keys, rep.ids())
        # a discriminator at a tenth of ln 2 all run (confident, not certain) has not won
        rep = _judge(g, np.full(n, 0.07) * _noise(rng, n, sigma))
        assert RULE not in rep.ids(), (n, seed)


def test_a_collapse_that_recovers_at_the_end_is_no_win():
    g, d = broken(400, 0.1, 3, 0.4)
    d[-60:], g[-60:] = 0.7, 1.5  # caught up over the last 15%
    assert _judge(g, d).verdict is Level.PASS


def test_a_falling_generator_loss_is_no_lost_game():
    # a composite generator loss dominated by a reconstruction term that falls while the
    # discriminator's adversarial loss gets small: the generator does not lose
    g, d = broken(300, 0.1, 4, 0.3)
    g = np.linspace(8.0, 2.0, 300)
    assert RULE not in _judge(g, d).ids()


def test_a_critic_loss_with_no_floor_is_not_judged():
    rng = np.random.default_rng(0)
    critic = -np.linspace(0.5, 6.0, 300) + 0.3 * rng.standard_normal(300)
    rep = _judge(np.linspace(1.0, 9.0, 300), critic, "loss/generator", "loss/critic")
    assert rep.skipped[RULE].reason == "not_applicable"
    assert rep.verdict is Level.NOT_CHECKED


def test_too_few_points_are_not_judged():
    g, d = broken(DEFAULT.gan_min_points - 1, 0.05, 1, 0.3)
    rep = _judge(g, d)
    assert rep.skipped[RULE].reason == "too_few_points"


def test_a_discriminator_known_by_its_outputs_only_is_not_judged():
    # DCGAN tutorial: the discriminator's loss is the plain "loss", its outputs D(x) beside
    g, d = broken(200, 0.05, 2, 0.3)
    rep = judge_runlog(run_of(loss=g, **{"D(x)": np.linspace(0.6, 0.99, 200)}))
    assert rep.skipped[RULE].reason == "absent"


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "console"])
def test_through_real_formats_the_gan_log_alone_is_judged(tmp_path, fmt):
    g, d = broken(400, 0.2, 5, 0.5)
    gh, dh = healthy(400, 0.2, 5, "early_win")
    for name, (gg, dd), want in (("broken", (g, d), "WARN"), ("healthy", (gh, dh), "PASS")):
        p = tmp_path / f"{name}.{'log' if fmt == 'console' else fmt}"
        if fmt == "jsonl":
            text = "".join(
                json.dumps({"iter": 10 * i, "loss_D": a, "loss_G": b}) + "\n" for i, (a, b) in enumerate(zip(dd, gg))
            )
        elif fmt == "csv":
            text = "step,loss_D,loss_G\n" + "".join(
                f"{10 * i},{a:.6g},{b:.6g}\n" for i, (a, b) in enumerate(zip(dd, gg))
            )
        else:  # the PyTorch DCGAN tutorial's print
            text = "".join(
                f"[{i // 100}/4][{i % 100}/100]\tLoss_D: {a:.4f}\tLoss_G: {b:.4f}\tD(x): 0.5\tD(G(z)): 0.4 / 0.4\n"
                for i, (a, b) in enumerate(zip(dd, gg))
            )
        p.write_text(text)
        code, _, _, doc = run_cli("judge", str(p), "--json")
        rep = doc["reports"][0]
        assert rep["verdict"] == want, (fmt, name, [f["id"] for f in rep["findings"]])
        assert code == 0
        assert rep["meta"]["objective"] == "adversarial"
        assert rep["mapping"]["loss"]["how"] == "fallback" and "GAN" in rep["mapping"]["loss"]["why"]


@pytest.mark.parametrize("onset", [0.04, 0.08, 0.12])
@pytest.mark.parametrize("n", [100, 1000, 5000])
def test_a_discriminator_that_wins_fast_inside_the_first_fifth_is_a_warn(onset, n):
    # helper 96: the discriminator falls 1.2 -> 0.004 and the generator climbs 1 -> 10,
    # mostly inside the first fifth, whose generator median then sits half way up (5.2):
    # 1.92x, under the rise bar, PASSed; the generator's start is its first twentieth's
    for seed in range(4):
        sigma = (0.05, 0.15, 0.3, 0.1)[seed]
        rng = np.random.default_rng(seed)
        t = np.linspace(0, 1, n)
        k = np.clip((t - onset) / 0.03, 0, 1)
        d = 1.2 * np.exp(np.log(0.004) * k) * _noise(rng, n, sigma)
        g = (1.0 + 9.0 * k) * _noise(rng, n, sigma)
        (f,) = [f for f in _judge(g, d).findings if f.id == RULE]
        assert f.level is Level.WARN and f.data["generator_start"] < 2.0, (onset, n, seed)
        # the same game caught up over the last third is no win
        d[2 * n // 3 :], g[2 * n // 3 :] = 0.7 * _noise(rng, n - 2 * n // 3, sigma), 1.5
        assert RULE not in _judge(g, d).ids(), (onset, n, seed)
