"""GAN logs: a generator loss and a discriminator loss play a minimax game, so neither is
expected to fall. A run that logs both is an ``adversarial`` objective: the loss-shape
rules are skipped (``objective: adversarial``) whichever loss is judged, while a
non-finite loss still FAILs (and the game's balance is judged: test_gan_discriminator_wins). Generated healthy GAN dynamics (the discriminator wins early,
then the generator catches up: the discriminator's loss falls from 2 ln 2 and climbs
back, the generator's climbs) in several spellings, lengths and noise levels; the
negatives are logs with one side only, or names that merely contain the letters."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from _helpers import run_of

from trainproof.findings import Level
from trainproof.rules.engine import judge_runlog
from trainproof.rules.objective_kind import adversarial_pair, detect_objective

from conftest import run_cli

PAIRS = [
    ("g_loss", "d_loss"),
    ("Loss_G", "Loss_D"),
    ("errG", "errD"),
    ("train/gen_loss", "train/disc_loss"),
    ("generator/loss", "discriminator/loss"),
    ("loss_generator", "loss_critic"),
    ("lossG", "lossD"),
]


def _gan(n: int, noise: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(generator loss, discriminator loss)`` of a healthy GAN run of ``n`` logs: the
    discriminator falls from 2 ln 2 to 0.3 in the first fifth and climbs back to 1.2 as the
    generator improves; the generator's loss climbs from 0.7 to 3 and settles at 1.1."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)
    d = 0.3 + (2 * math.log(2) - 0.3) * np.exp(-t / 0.05) + 0.9 * (1 - np.exp(-np.maximum(t - 0.2, 0) / 0.2))
    g = 0.7 + 2.3 * np.sin(np.pi * np.minimum(t / 0.4, 1) / 2) - 1.9 * (1 - np.exp(-np.maximum(t - 0.4, 0) / 0.15))
    jitter = np.exp(noise * rng.standard_normal((2, n)))
    return g * jitter[0], d * jitter[1]


@pytest.mark.parametrize("g_key,d_key", PAIRS)
def test_a_generator_and_a_discriminator_loss_make_an_adversarial_objective(g_key, d_key):
    g, d = _gan(100, 0.05, 0)
    # judged as the generator's loss, the discriminator's, or a plain "loss" beside them
    for cols in ({g_key: g, d_key: d, "loss": d}, {"loss": g, d_key: d}):
        kind, because = detect_objective(run_of(**cols))
        assert kind == "adversarial" and because == ["loss", d_key]


@pytest.mark.parametrize("d_out", ["D_x", "D(x)", "D_G_z1", "d_real", "fake_score"])
def test_a_plain_loss_beside_a_generator_loss_and_the_discriminator_outputs_is_adversarial(d_out):
    # The discriminator's loss logged as "loss", the generator's as "loss_G", with the
    # discriminator's outputs on real and generated samples (a new user's healthy GAN whose
    # discriminator loss climbs 0.97 -> 1.23 toward 2 ln 2 FAILed TP-DIVERGE).
    g, d = _gan(200, 0.05, 2)
    run = run_of(loss=d, loss_G=g, **{d_out: np.linspace(0.7, 0.55, 200)})
    assert detect_objective(run) == ("adversarial", ["loss", d_out])
    assert judge_runlog(run).verdict is not Level.FAIL


@pytest.mark.parametrize("g_key", ["loss_G", "G_loss", "generator_loss", "errG", "generator/loss"])
def test_a_plain_loss_beside_only_a_named_generator_loss_is_adversarial(g_key):
    # The discriminator's loss logged as "loss" beside "loss_G" and nothing else (a new
    # user's healthy GAN, its discriminator loss climbing as the generator caught up,
    # FAILed TP-DIVERGE).
    for seed in range(3):
        g, d = _gan(300, 0.1, seed)
        run = run_of(loss=d, **{g_key: g})
        assert detect_objective(run) == ("adversarial", ["loss", g_key])
        assert judge_runlog(run).verdict is not Level.FAIL


@pytest.mark.parametrize("extra", [None, "gen", "loss_pixel", "val_loss"])
def test_a_lowercase_g_loss_or_other_loss_terms_keep_a_plain_loss_supervised(extra):
    # g_loss is as often a gradient-matching term and gen_loss a seq2seq model's generation
    # loss (a reviewer's diverging seq2seq logged loss = gen_loss + 0.002, read as a GAN);
    # beside another loss term, loss_G is a part of a composite generator loss, which falls.
    keys = {None: ("g_loss",), "gen": ("gen_loss",)}.get(extra, ("loss_G", extra))
    cols = {k: np.linspace(2.0, 1.0, 50) for k in keys}
    assert detect_objective(run_of(loss=np.linspace(2.0, 1.0, 50), **cols))[0] == "supervised"


@pytest.mark.parametrize(
    "keys",
    [
        ("dx", "dgz"),  # no separator: not the discriminator's outputs
        ("g_loss",),  # a generator side alone
        ("d_loss", "ce_loss"),  # a distillation term beside another loss
        ("kld_loss", "avg_loss"),  # letters inside words
        ("loss_dice", "bg_loss"),
        ("grad_loss", "lossdg"),
        # VITS: a composite generator loss beside its reconstruction terms falls
        ("loss_0", "loss_gen", "loss_disc", "loss_mel", "loss_kl", "loss_duration"),
    ],
)
def test_one_side_a_composite_or_letters_inside_words_are_no_adversarial_objective(keys):
    cols = {k: np.linspace(2.0, 1.0, 50) for k in keys}
    assert detect_objective(run_of(loss=np.linspace(2.0, 1.0, 50), **cols))[0] == "supervised"


@pytest.mark.parametrize("n,noise", [(40, 0.02), (300, 0.1), (3000, 0.3)])
@pytest.mark.parametrize("judged", ["discriminator", "generator"])
def test_healthy_gan_dynamics_do_not_fail_whichever_loss_is_judged(tmp_path, n, noise, judged):
    for seed in range(3):
        g, d = _gan(n, noise, seed)
        p = tmp_path / f"gan{seed}.jsonl"
        p.write_text(
            "".join(json.dumps({"step": i + 1, "Loss_G": a, "Loss_D": b}) + "\n" for i, (a, b) in enumerate(zip(g, d)))
        )
        col = "Loss_D" if judged == "discriminator" else "Loss_G"
        code, _, _, doc = run_cli("epoch", str(p), "--map", f"loss={col}", "--json")
        rep = doc["reports"][0]
        # Not judged on its loss's shape, but on the game's balance: a PASS, never a FAIL.
        assert rep["verdict"] == "PASS" and code == 0, [f["id"] for f in rep["findings"]]
        assert "TP-GAN-DISCRIMINATOR-WINS" in rep["checks"]["ran"]
        skipped = rep["checks"]["skipped"]
        assert skipped["TP-DIVERGE"]["reason"] == "objective: adversarial"
        other = "Loss_G" if col == "Loss_D" else "Loss_D"
        assert f"ADVERSARIAL objective ({col}, {other})" in skipped["TP-DIVERGE"]["detail"]
        # the same discriminator loss as a supervised loss would be a divergence
        if judged == "discriminator" and n >= 300:
            alone = judge_runlog(run_of(loss=d))
            assert alone.verdict is Level.FAIL and "TP-DIVERGE" in alone.ids()


def test_a_non_finite_gan_loss_still_fails():
    g, d = _gan(200, 0.05, 1)
    d[150:] = np.nan
    rep = judge_runlog(run_of(loss=d, Loss_G=g, Loss_D=d))
    assert rep.meta["objective"] == "adversarial"
    assert rep.verdict is Level.FAIL and "TP-NAN" in rep.ids()


@pytest.mark.parametrize("g_key,d_key", PAIRS)
def test_a_log_of_a_gans_two_losses_alone_is_judged_as_adversarial_not_a_log_without_loss(tmp_path, g_key, d_key):
    # A new user's healthy 1-D GAN (loss_G, loss_D and nothing else) read "no loss series
    # found ... name the loss column with --map": a parsing failure, to the reader. Its
    # generator loss is the judged loss, and the run an adversarial objective.
    g, d = _gan(120, 0.05, 1)
    p = tmp_path / "gan.jsonl"
    p.write_text("".join(json.dumps({"step": i + 1, g_key: a, d_key: b}) + "\n" for i, (a, b) in enumerate(zip(g, d))))
    code, _, _, doc = run_cli("judge", str(p), "--json")
    rep = doc["reports"][0]
    if "critic" in d_key:
        # a Wasserstein critic's loss has no floor that means it won: the game's one check
        # cannot judge it, and the run is not judged rather than passed on nothing
        skip = rep["checks"]["skipped"]["TP-GAN-DISCRIMINATOR-WINS"]
        assert code == 2 and skip["reason"] == "not_applicable" and "Wasserstein" in skip["detail"]
    else:
        assert code == 0 and rep["verdict"] == "PASS", [f["id"] for f in rep["findings"]]
    assert rep["meta"]["objective"] == "adversarial"
    assert rep["mapping"]["loss"]["source"] == g_key and rep["mapping"]["loss"]["how"] == "fallback"
    assert d_key in rep["mapping"]["loss"]["why"]
    assert rep["checks"]["skipped"]["TP-DIVERGE"]["reason"] == "objective: adversarial"
    # a non-finite generator loss in such a log FAILs
    p.write_text(
        "".join(
            json.dumps({"step": i + 1, g_key: a if i < 90 else float("nan"), d_key: b}) + "\n"
            for i, (a, b) in enumerate(zip(g, d))
        )
    )
    code, _, _, doc = run_cli("judge", str(p), "--json")
    assert code == 1 and "TP-NAN" in [f["id"] for f in doc["reports"][0]["findings"]]


@pytest.mark.parametrize("keys", [("accuracy",), ("accuracy", "lr"), ("d_real", "d_fake")])
def test_a_log_without_both_sides_of_a_gan_still_says_it_has_no_loss(tmp_path, keys):
    # One side of the game, or no loss at all: the reader found nothing to read as the loss.
    p = tmp_path / "m.jsonl"
    p.write_text("".join(json.dumps({"step": i + 1, **{k: 0.5 + 0.01 * i for k in keys}}) + "\n" for i in range(30)))
    code, _, _, doc = run_cli("judge", str(p), "--json")
    (f,) = doc["reports"][0]["findings"]
    assert code == 2 and f["id"] == "TP-NO-LOSS"
    assert "objective" not in f["data"] and "--map loss=COLUMN" in f["evidence"]


def test_the_gan_pair_needs_a_generator_and_a_discriminator_loss():
    assert adversarial_pair(["loss_G", "loss_D", "D(x)"]) == ("loss_G", "loss_D")
    assert adversarial_pair(["Loss_D", "D(x)", "D(G(z))"]) is None  # the generator's loss absent
    assert adversarial_pair(["g_loss", "accuracy"]) is None
    assert adversarial_pair(["loss_dice", "bg_loss"]) is None  # letters inside words
