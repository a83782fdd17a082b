"""Rules for adversarial (GAN) runs: a generator and a discriminator play a minimax game,
so neither loss is expected to fall (see :mod:`trainproof.rules.objective_kind`). What
can be judged is the game's balance: a discriminator that wins outright leaves the
generator no gradient to learn from."""

from __future__ import annotations

import math

import numpy as np

from .._arrays import median
from ..aliases.vocabulary import words
from ..findings import Level
from ._fmt import num, step
from .objective_kind import gan_sides
from .registry import CannotJudge, Need, rule


@rule(
    "TP-GAN-DISCRIMINATOR-WINS",
    Level.WARN,
    "diverge",
    "the discriminator won the game: its loss fell to near zero and held while the generator's climbed",
    needs=[Need("loss", "gan_min_points")],
    thresholds=["gan_win_ratio", "gan_rise_ratio", "gan_tail_share", "gan_min_points"],
    verdict_bearing=True,
    objectives=("adversarial",),
    detects=(
        "On an adversarial objective with both sides' losses logged and never below 0: over the last "
        "{gan_tail_share:.0%} of the points and over their last third, the discriminator's loss has a median at or "
        "under {gan_win_ratio:g} of its start (the higher of its first fifth's median and its first twentieth's, 3 points at "
        "least: a discriminator that won within the first fifth has that median half way down), and the generator's median over that tail is at "
        "least {gan_rise_ratio:g}x its own start (the lower of its first fifth's median and its first twentieth's, 3 points at least: "
        "a generator that climbed within the first fifth has that median half way up). A discriminator whose start is already at or under {gan_win_ratio:g} "
        "of ln 2 (it won within its first logs) is measured against ln 2 instead, the loss "
        "per side of a discriminator that cannot tell real from generated, and then the generator's tail median must "
        "be at least {gan_rise_ratio:g}x ln 2. Not judged on a Wasserstein GAN (a critic's key, a Wasserstein distance or a "
        "gradient penalty logged): a critic's loss estimates a distance with no floor that means it won."
    ),
    why=(
        "A discriminator that tells real from generated samples with near certainty passes the generator a "
        "vanishing gradient: the generator's loss climbs and its samples stop improving, for the rest of the run."
    ),
    not_mean=(
        "Not a failure when the generator was meant to be frozen, or in the first phase of a run whose "
        "discriminator wins early and is caught up later (the tail is read, not the start). A critic's loss "
        "(WGAN), which has no floor, is not judged by it."
    ),
    causes=(
        "A discriminator much stronger or faster than the generator (more capacity, a larger learning rate, "
        "several discriminator steps per generator step), a training set so small that the discriminator "
        "memorises it, labels or inputs that let it tell the two apart trivially (real images normalised "
        "differently from generated ones)."
    ),
    try_=(
        "Lower the discriminator's learning rate or its steps per generator step, add label smoothing, instance "
        "noise or a gradient penalty (R1), use differentiable augmentation on small data sets, and check that real "
        "and generated samples go through the same preprocessing."
    ),
)
def check_gan_discriminator_wins(ctx):
    th = ctx.th
    sides = gan_sides(ctx.run)
    if sides is None:
        raise CannotJudge(
            "absent", "the log holds no discriminator loss and generator loss to weigh against each other"
        )
    g, d = sides
    n = min(len(g), len(d))
    if n < th.gan_min_points:
        raise CannotJudge("too_few_points", f"{g.key} and {d.key} have {n} finite points; needs {th.gan_min_points}")
    wgan = _wasserstein_keys(ctx.run, d.key)
    if wgan:
        raise CannotJudge(
            "not_applicable",
            f"{wgan} marks a Wasserstein critic (WGAN): its loss estimates a distance, with no floor that means it won",
        )
    if np.any(d.values < 0) or np.any(g.values < 0):
        raise CannotJudge(
            "not_applicable",
            f"{d.key if np.any(d.values < 0) else g.key} goes below 0 (a critic's or hinge loss): no floor to "
            "call near zero",
        )
    d_head, d_tail = _head_tail(d.values, th.gan_tail_share)
    g_head, g_tail = _head_tail(g.values, th.gan_tail_share)
    d_start, d_end = float(median(d_head)), float(median(d_tail))
    d_last = float(median(d_tail[len(d_tail) - max(1, len(d_tail) // 3) :]))
    g_start, g_end = float(median(g_head)), float(median(g_tail))
    # a game the discriminator won within the first fifth has both first-fifth medians half
    # way there: each side's start is also read over its first twentieth (3 points at
    # least), the discriminator's the higher, the generator's the lower of the two
    early = max(3, n // 20)
    d_start = max(d_start, float(median(d.values[:early])))
    g_start = min(g_start, float(median(g.values[:early])))
    # A discriminator that won within the first fifth has no early level of the game to
    # fall from: it is measured against ln 2, the loss per side of one that cannot tell
    # real from generated (the lower of the two conventions: a mean over both sides, or
    # a sum at 2 ln 2), and the generator's loss must sit above ln 2 by the same factor.
    won_early = d_start <= th.gan_win_ratio * math.log(2)
    bar = th.gan_win_ratio * (math.log(2) if won_early else d_start)
    g_ref = math.log(2) if won_early else g_start
    if max(d_end, d_last) > bar or not g_end >= th.gan_rise_ratio * g_ref:
        return
    # The onset: the first of 20 blocks from which every block's median of the
    # discriminator's loss is under the bar.
    edges = np.linspace(0, len(d), 21).astype(int)
    meds = np.array([median(d.values[a:b]) if b > a else np.inf for a, b in zip(edges[:-1], edges[1:])])
    under = meds <= bar
    first = len(under) - int(np.argmin(under[::-1])) if not under.all() else 0
    i = int(edges[min(first, len(edges) - 2)])
    yield ctx.finding(
        f"the discriminator won the game: {d.key} fell to {num(d_end)} and held while {g.key} climbed to {num(g_end)}",
        f"{d.key}: {num(d_start)} at its start (the higher median of its first fifth and its first twentieth), {num(d_end)} over its last "
        f"{th.gan_tail_share:.0%} ({len(d_tail)} points) and {num(d_last)} over the last third of those, under "
        f"{num(th.gan_win_ratio)} of its start; {g.key}: {num(g_start)} at its start (the lower median of its first fifth "
        f"and its first twentieth), {num(g_end)} "
        f"over its last {th.gan_tail_share:.0%} ({num(g_end / g_start)}x). From step {step(d.steps[i])} the "
        "discriminator tells real from generated samples almost surely, and the generator gets little gradient.",
        {
            "generator_key": g.key,
            "discriminator_key": d.key,
            "discriminator_start": d_start,
            "discriminator_end": d_end,
            "discriminator_last": d_last,
            "generator_start": g_start,
            "generator_end": g_end,
            "onset_step": float(d.steps[i]),
        },
        step=d.steps[i],
        line=d.lines[i],
    )


#: Words of a key that mark a Wasserstein GAN: its critic (``loss_critic``), its distance
#: estimate (``wasserstein``, ``wdist``), its gradient penalty (``gp``,
#: ``gradient_penalty``; StyleGAN's ``r1_penalty`` is a logistic GAN's and is not one).
_WGAN_WORDS = frozenset({"critic", "wasserstein", "wdist", "wgan", "gp"})


def _wasserstein_keys(run, d_key: str) -> str | None:
    """The key that marks ``run`` as a Wasserstein GAN (:data:`_WGAN_WORDS`, or a
    ``gradient`` ``penalty``), the discriminator's own key ``d_key`` first, or ``None``. A
    critic's loss estimates a distance that the generator closes: it falls toward 0 in a
    healthy run and may be logged positive, so near 0 it is no discriminator that won."""
    for key in (d_key, *sorted(s.key for s in run.series.values())):
        w = set(words(key))
        if w & _WGAN_WORDS or {"gradient", "penalty"} <= w:
            return key
    return None


def _head_tail(v: np.ndarray, tail_share: float) -> tuple[np.ndarray, np.ndarray]:
    """The first fifth of ``v`` (shape ``(n,)``) and its last ``tail_share``, each at
    least one point."""
    n = v.size
    return v[: max(1, n // 5)], v[n - max(1, int(round(n * tail_share))) :]
