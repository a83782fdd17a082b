"""Every number the single-run rules compare against, with the reason for its value.

Each threshold can be overridden by name from ``[tool.trainproof]`` in pyproject.toml
(``[tool.trainproof.thresholds]`` or directly under ``[tool.trainproof]``) or from a file
given with ``--config``. An unknown name is an error, never ignored, and so is a value
outside the threshold's declared range (:data:`RANGES`): a configuration may come from a
pull request, and a value such as ``nan``, ``0`` or ``2**62`` must be refused with its
name rather than crash a rule or turn a healthy run into a FAIL.

**A FAIL only where a healthy run cannot produce the evidence.** A threshold that lets a
rule fail a run is sized in the run's own units and noise: an effect size (how far, in
nats or in standard errors of the run's own levels), never a p-value alone (with many
points any drift is significant) and never one ratio for every scale. Where the evidence
is ambiguous the rule warns or skips with its reason. Every FAIL rule names, in its "What
it does NOT mean" section, the healthy run shapes that look most like its signature (a
fine-tune at its floor for a dead run, a loss passing through ln k for chance level, a
wiggle at the noise floor for a divergence), and its tests carry a negative case for each;
the zoo of generated runs (``tests/_zoo.py``, ``bench/zoo.py``) measures its false-FAIL
rate on ten thousand healthy runs.

A new threshold is a field of :class:`Thresholds` declared once, with :func:`threshold`: its
default, the reason for that value (RULES.md prints the reason: :func:`reason`), its unit
(``unit=``, a key of :data:`UNITS`: :func:`unit_of`) and the values it accepts (``valid=``, a
:class:`Range`); :data:`RANGES` is read from the declarations.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass


class ThresholdError(ValueError):
    """An override names no threshold, or gives a value of the wrong type or range."""


# --- valid ranges -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Range:
    """The values one threshold accepts.

    ``kind`` is ``int`` (a whole number: TOML ``8`` and ``8.0`` both give 8) or ``float``
    (an integer or a float). ``lo`` and ``hi`` bound the value, inclusive unless
    ``lo_open`` / ``hi_open``; ``None`` leaves that side unbounded. Every value must be
    finite whatever the bounds: no rule compares against ``nan`` or ``inf`` meaningfully.
    """

    kind: type
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False

    def describe(self) -> str:
        """The range in words and interval notation, e.g. ``a whole number in [1, 10000000]``."""
        what = "a whole number" if self.kind is int else "a finite number"
        lo = "-inf" if self.lo is None else f"{self.lo:g}"
        hi = "inf" if self.hi is None else f"{self.hi:g}"
        left = "(" if self.lo_open or self.lo is None else "["
        right = ")" if self.hi_open or self.hi is None else "]"
        return f"{what} in {left}{lo}, {hi}{right}"

    def contains(self, v: float) -> bool:
        """Whether the (finite) number ``v`` lies inside the bounds."""
        if self.lo is not None and (v < self.lo or (self.lo_open and v == self.lo)):
            return False
        if self.hi is not None and (v > self.hi or (self.hi_open and v == self.hi)):
            return False
        return True

    def check(self, name: str, val: object, unit: str = "") -> int | float:
        """``val`` as the threshold's type.

        ``unit``, when given, is the threshold's unit (a key of :data:`UNITS`), written in
        brackets after the range in an error message: ``... in [1, 1e+07] (points), got 0``.

        Raises:
            ThresholdError: not a number, a fraction for a whole-number range, not finite,
                or outside the bounds; the message names ``name``, the range and the unit.
        """
        of = f" ({unit})" if unit else ""
        bad = f"threshold {name!r} must be {self.describe()}{of}, got {val!r}"
        if isinstance(val, bool) or not isinstance(val, (int, float)):
            raise ThresholdError(f"threshold {name!r} must be a number{of}, got {val!r}")
        if isinstance(val, float) and not math.isfinite(val):
            raise ThresholdError(bad)
        if self.kind is int:
            if isinstance(val, float) and not val.is_integer():
                raise ThresholdError(f"threshold {name!r} must be a whole number{of}, got {val!r}")
            val = int(val)
        if not self.contains(val):  # Python ints compare exactly at any size
            raise ThresholdError(bad)
        if self.kind is int:
            return val
        try:
            out = float(val)
        except OverflowError:  # a TOML integer such as 10**400 has no float
            raise ThresholdError(bad) from None
        return out


#: The largest point count a threshold may ask for. No training log holds 10**7 points of
#: one metric (a point logged at every step of a 10-million-step run); above it a count can
#: only switch its rule off, and counts near 2**62 make the rules' loops and block splits
#: run for hours or allocate without bound.
MAX_POINTS = 10**7


def count(lo: int = 1, hi: int = MAX_POINTS) -> Range:
    """A number of logged points (or items): a whole number in ``[lo, hi]``."""
    return Range(int, lo, hi)


#: A share of points, steps or items, and the relative tolerances: ``[0, 1]``.
SHARE = Range(float, 0.0, 1.0)
#: A factor between two levels of one quantity, which the rule needs above 1: at or below
#: 1 every point is "above its own level" (a spike, a cliff, a divergence).
FACTOR = Range(float, 1.0, None, lo_open=True)
#: A number of standard errors (z, t): above 0, since a bar of 0 sigmas lets noise alone
#: pass the gate. Any finite bar above it is accepted: past about 38 no normal tail
#: probability is representable in float64, so a larger bar switches its test off, which
#: is a choice (as muting is), not an error.
SIGMAS = Range(float, 0.0, None, lo_open=True)
#: A non-negative finite quantity in the threshold's own unit (seconds, a loss value).
NONNEG = Range(float, 0.0, None)
#: A positive finite quantity in the threshold's own unit.
POSITIVE = Range(float, 0.0, None, lo_open=True)


# --- units ------------------------------------------------------------------------------

#: Every unit a threshold may be declared in (``threshold(..., unit=)``), with what it means.
#: The documentation prints the unit beside the default; the judging never reads it.
UNITS: dict[str, str] = {
    "points": "logged points of one series (not training steps)",
    "evaluations": "logged evaluations (points of an eval series)",
    "checks": "consecutive checks of a running training (judgements of the log, or a monitor's model or replica checks)",
    "steps": "optimizer steps",
    "blocks": "blocks of consecutive points, each read as its median",
    "classes": "class ids",
    "targets/class": "valid class targets per class, on average",
    "items": "dataset items (audio and transcript pairs)",
    "samples": "consecutive audio samples",
    "checkpoints": "saved checkpoints",
    "runs": "runs of one experiment recorded in the run history",
    "digits": "significant digits of a logged value",
    "bursts": "separate runs of consecutive points above a bar",
    "rounding steps": "steps of the decimal precision a value was printed at (1e-4 for 4 decimals)",
    "share": "a fraction in [0, 1] of a whole that the reason names: of points, steps, items, samples, "
    "groups, units or tokens, of the run's length or of a step's time; an accuracy",
    "ratio": "a quotient of two values of one quantity that the reason names: a factor (end level / best "
    "level) or a relative difference (a change as a fraction of a level, a gap as a fraction of a drop)",
    "log10": "the base-10 logarithm of a ratio (-3 is 1e-3)",
    "z": "standard errors of a difference or a trend (a normal quantile, a Mann-Kendall z)",
    "t": "a t statistic (standard errors of a fitted slope or of a difference of slopes)",
    "nats": "natural-log units of a KL divergence",
    "loss units": "the logged loss's own units",
    "learning rate": "the optimizer's learning rate, as logged",
    "gradient norm": "the L2 norm of the gradient over the parameters, as logged",
    "seconds": "seconds of audio",
    "rows": "observations of each unit of a layer at one check: the examples of its batch (times the positions, "
    "for a sequence or an image)",
    "dB": "decibels of power below a reference that the reason names",
    "tokens/second": "tokens per second of audio",
}


def threshold(default: int | float, why: str = "", *, see: str = "", unit: str, valid: Range):
    """Declare one :class:`Thresholds` field, in one place: its default, why the default is
    that value, its unit and the values it accepts.

    Args:
        default: the value (an int for a count of points, a float otherwise).
        why: the reason for the value, in prose: what was measured, the source it comes
            from, or that it is a judgement. RULES.md prints it beside the default.
        see: instead of ``why``, the name of an earlier field whose reason explains this
            one too (one paragraph for a group of thresholds read together).
        unit: what the value counts or measures, a key of :data:`UNITS` (``"points"``,
            ``"share"``, ``"ratio"``, ``"z"``...).
        valid: the values an override may take (:class:`Range`); a comment above the field
            says where a bound comes from when it is not that of its kind.

    Returns:
        A :func:`dataclasses.field` with ``default`` and the metadata ``{"why": why}`` or
        ``{"see": see}``, and ``{"unit": unit, "valid": valid}``.

    Raises:
        ValueError: neither or both of ``why`` and ``see`` are given, ``unit`` is not a key
            of :data:`UNITS`, or ``valid`` does not contain the default.
    """
    if bool(why) == bool(see):
        raise ValueError("a threshold declares exactly one of why= and see=")
    if unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r}; known: {', '.join(UNITS)}")
    if not valid.contains(default) or (valid.kind is int) != isinstance(default, int):
        raise ValueError(f"default {default!r} is not {valid.describe()}")
    meta = {"why": why} if why else {"see": see}
    return dataclasses.field(default=default, metadata={**meta, "unit": unit, "valid": valid})


# The methods a dataclass would generate for 160 fields (__init__, __repr__, __eq__,
# __hash__) are written below instead: generated code is compiled at every import (about
# 5 ms of every command's start-up), written code comes from the bytecode cache.
@dataclass(frozen=True, init=False, repr=False, eq=False)
class Thresholds:
    """The rules' thresholds. Each field's unit is declared with it (:func:`unit_of`,
    :data:`UNITS`): ratios are plain multiples, shares are in [0, 1], points are logged
    points (not training steps).

    ``Thresholds(**values)`` takes keyword arguments only, each a field's name; the fields
    not given keep their defaults. Unchecked: :meth:`with_overrides` checks values.

    Raises:
        TypeError: a positional argument, or a name that is no field.
    """

    # --- minimum lengths -------------------------------------------------------------
    # A first point, a last point and one between: with fewer there is no curve, and a 1-point
    # log would be judged (a FAIL on one number).
    min_trend_points: int = threshold(
        8,
        "Shape rules (flatness, divergence) judge a curve; below 8 logged points a curve is a "
        "handful of noisy samples (8 = a 3-point starting block, a 3-point end window and room "
        "between them). Short Keras runs log one point per epoch, and 8 epochs is a common "
        "length, so the bar is not set higher.",
        unit="points",
        valid=count(3),
    )
    # Two points: one start-up value is then not "every value".
    min_value_points: int = threshold(
        5,
        "Value rules on gradient norms and learning rate need a few points so that one warm-up "
        'or start-up value is not "every value".',
        unit="points",
        valid=count(2),
    )

    # --- flatness ----------------------------------------------------------------------
    # std/mean: at 1 the noise is as large as the loss itself, and no curve is flatter
    # than that. Healthy runs sit at 1%-30% (the reason of the default), so a bar in that
    # span calls them flat; that is the configuration's choice, not an error.
    flat_rel_std: float = threshold(
        0.001,
        "std/mean of the loss below 0.1% means the loss is constant to three significant "
        "digits over the whole run: nothing is being learned (a frozen model, a constant "
        "prediction). Healthy noisy runs sit at 1%..30%.",
        unit="ratio",
        valid=Range(float, 0.0, 1.0),
    )
    # A small spread alone is what a healthy run at its floor logs as well: a loss averaged
    # over 100 steps of a converged model moves by 0.05%, every value distinct (the zoo's
    # floor shape at 0.07% noise, the corpus's quietest healthy file at 0.075%). A frozen
    # model leaves another trace: the logged value repeats, because the loss no longer
    # depends on the batch (a collapsed output scores every example alike; the corpus's
    # gait transformer writes 0.5000 at 9 of its 10 epochs), or it moves only by float
    # rounding (a fixed batch through nondeterministic kernels: about 1e-7 relative in
    # float32, below any batch-to-batch noise). So a flat FAIL needs one of the two.
    flat_repeat_share: float = threshold(
        0.5,
        "Share of consecutive logged losses exactly equal at which the log does not resolve "
        "any movement: at least half of them, so a loss that moves between most logs is "
        "moving (a run at its floor), and one written to coarse digits that repeats is not.",
        unit="share",
        valid=SHARE,
    )
    flat_float_rel_std: float = threshold(
        1e-6,
        "std/mean at which a loss moves only by float rounding: about 8 float32 ulps "
        "(eps 1.2e-7). No batch-to-batch variation is that small; a fixed batch through a "
        "frozen model with nondeterministic reductions is.",
        unit="ratio",
        valid=Range(float, 0.0, 1.0),
    )

    # --- divergence --------------------------------------------------------------------
    diverge_ratio: float = threshold(
        1.5,
        "The run's end level (median of its last window) must exceed the best level it held by "
        "this factor (the value the foundation issue sets). Measured on the 27 healthy "
        "HF/JSONL/CSV runs of the shared corpus: end/best is at most 1.24, except one Whisper "
        "fine-tune whose loss ends near 0.01 (1.60, see the noise gate below); the diverged "
        "runs there sit at 5.2-5.5.",
        unit="ratio",
        valid=FACTOR,
    )
    diverge_noise_z: float = threshold(
        3.0,
        "... and by this many standard errors of the two levels, so that a noisy curve whose "
        "smoothed minimum is an ordinary low swing is not called diverging. The noise is the "
        "robust point-to-point noise of the log of the loss (1.4826 * MAD of first differences "
        "/ sqrt(2)): loss noise scales with the loss, and the rule compares ratios of levels. "
        "A level read from m points has standard error noise * 1.2533 / sqrt(m) (a median), so "
        "a long run's levels are sharp and a short run's are not; a block minimum is also "
        "allowed the shift by which the lowest of the blocks tied with it falls below their "
        "common level by chance. Measured on the same runs: log(end/best) is at most 0.46 of "
        "this gate for healthy runs and at least 19 times it for diverged ones.",
        unit="z",
        valid=SIGMAS,
    )
    diverge_level_points: int = threshold(
        5,
        "Least points whose median TP-DIVERGE takes for a level the run held: a median of 3 "
        "ignores one stray point, not two, and heavy-tailed noise puts two low points in one "
        "3-point block of a short run (its 5% blocks are 3 points below 80 points). A block "
        "shorter than this is raised to the lowest median of this many consecutive points, so "
        "a level needs 3 points of 5 below it; a dip held by 3 points keeps its level wherever "
        "the blocks cut it; the first diverge_start_points points, fewer than this, count as "
        "the starting level only when they sit further below the points after them than any "
        "stray point of the run strays from its neighbours. 3 turns it off. On the zoo "
        "(tests/_zoo.py), healthy TP-DIVERGE FAILs go 2 -> 0 on seeds 0-9,999, 2 -> 1 on "
        "10,000,000-10,009,999 and 6 -> 2 on 30,000,000-30,009,999; recall on generated "
        "diverged runs stays 220 of 223. On short (15-60 points) noisy (10-30%, normal or t "
        "with 4 degrees of freedom) generated runs healthy FAILs go 14 -> 6 in 10,800 and a 7x "
        "climb over the last 40% is caught in 4,996 of 5,400 (5,049 without). A median of 5 "
        "around a 3-point block (half a block each way) would make it 0 in 10,800, but a dip "
        "held by 3 points of a 60-point run at 2% noise would no longer be a level.",
        unit="points",
        valid=count(3),
    )
    diverge_caused_ratio: float = threshold(
        1.15,
        "A rise judged in the loss's own units: with a cause in the log, a learning rate that "
        "climbed 2x or more after it had held or fallen for a tenth of the run (not a "
        "warm-up), a loss that ends 1.15x above its best level, past the noise gate, and gives "
        "back 25% or more of what the run learned (the fall from the first block's level to "
        "the best) has diverged. A cross-entropy that rises 2.5 -> 3.3 and stays after the "
        "learning rate climbed 1,500x (end/best 1.32) gives back half its fall; a healthy run "
        "does not climb its learning rate after warm-up, and a healthy loss that wiggles at "
        "its floor gives back a sliver (floor_regain_share). Without the cause the plain "
        "ratio (diverge_ratio) stands for a FAIL, and the same rise is TP-LOSS-CLIMB's WARN: a "
        "harder stretch of data or a loss weight changed without being logged climbs the same "
        "way in a healthy run, so the evidence is ambiguous.",
        unit="ratio",
        valid=FACTOR,
    )
    diverge_caused_regain: float = threshold(0.25, see="diverge_caused_ratio", unit="ratio", valid=SHARE)
    climb_durable_share: float = threshold(
        0.3,
        "TP-LOSS-CLIMB (a WARN) also reads a climb that gives back less than "
        "diverge_caused_regain of the run's fall when it is durable: held above the best level "
        "beyond its noise gate (from a held onset) over at least this share of the logged points, with an upward Mann-Kendall trend of "
        "dead_trend_z from the best level over at most 40 block medians. Regain is measured on the loss's own "
        "scale, where a run that fell tenfold regains 5% of its fall by climbing back 1.45x; "
        "three new users' generated slow divergences (1.3-1.48x over the last half of the run, "
        "1-5% noise, some with the learning rate climbing 12x) PASSed. A third of the run is "
        "a climb, not a step in the last logs; a loss wiggling at its floor has no trend over it. "
        "Not where the eval loss fell over the climb (a breaker's mixup ramp: train 1.2x up, eval "
        "0.45 -> 0.38).",
        unit="share",
        valid=SHARE,
    )

    diverge_new_rate: float = threshold(
        10.0,
        "A learning rate that climbs to 10x the highest rate the run held before the climb, its "
        "warm-up's peak included, is a rate no schedule of the run set: a typo in a resumed run's "
        "rate, a scheduler stepped with the wrong argument. A run retuned on purpose raises its "
        "rate 2-3x (a resume given a larger rate, a batch size doubled with the rate scaled "
        "linearly or by its square root). After such a climb a held rise of diverge_caused_ratio "
        "past the noise counts as a divergence once it gives back diverge_new_rate_regain (10%) of "
        "the fall, twice the wiggle of a loss at its noise floor (floor_regain_share), instead of "
        "diverge_caused_regain: a new user's run whose rate jumped 87x at mid-run (3.1e-5 -> 2.2e-3, "
        "its peak 5e-5) held a loss 19% above its best, 20% of its fall, for the other half of the "
        "run, at 5% point noise over 2,000 points, and PASSed.",
        unit="ratio",
        valid=FACTOR,
    )
    diverge_new_rate_regain: float = threshold(0.1, see="diverge_new_rate", unit="ratio", valid=SHARE)
    blowup_ratio: float = threshold(
        10.0,
        "A run that ends in a blow-up has no end level to read: it is stopped (by hand, by a "
        "guard on the loss, by a crash) within a few logs of its climb, so the median of its "
        "last 10% is still the level it held. Its last blowup_points or more points each "
        "above the one before and above the highest level the run held before (the highest "
        "of its block medians, its start included), the last at least this many times that "
        "level and further "
        "above it than any earlier point strays from its neighbours, is a "
        "divergence: no healthy run ends an order of magnitude worse than it ever was, "
        "climbing at every log, and one stray batch is one point, not a climb. A new user's "
        "SGD regression stopped at a loss over 1e6 went 0.98 (its best) -> 14 -> 304 -> "
        "4.9e3 -> 4.1e4 -> 2.8e5 -> 3.7e6 over its last logs, from a start of 33.6, and "
        "PASSed; a 1,000-point run whose last 8 logs climbed to 9.2e7 PASSed too.",
        unit="ratio",
        valid=FACTOR,
    )
    blowup_points: int = threshold(
        3,
        "Rising points a terminal blow-up needs (see blowup_ratio): three logs in a row, each "
        "above the one before, is a climb; a spike is one or two. A log that ends on one or two "
        "such points is TP-LOSS-CLIMB's WARN: the log ends before it can tell a spike that comes "
        "back from a blow-up.",
        unit="points",
        valid=count(2),
    )
    blowup_min_points: int = threshold(
        6,
        "The fewest logged points a blow-up is read from (TP-DIVERGE's terminal reading): three "
        "before the climb, the least a level is read from however roughly, then blowup_points "
        "rising. A log shorter than a curve (min_trend_points) is read for a blow-up only: a "
        "user stops a run within a few logs of its blow-up and attaches what it printed, and a "
        "new user's 7-epoch Keras log 0.70 0.52 0.45 0.9 3.2 12 40 (89x its best) went "
        "unjudged while NaN and a zero learning rate were judged from 5 rows. Its bar (the last "
        "point blowup_ratio times the highest level held before, further above it than any "
        "earlier point strays, on the log scale, from the others' median when there are too "
        "few for four neighbours each, and then a climb that goes on multiplying, its last "
        "log at least twice the one before or its last rise on the log scale at least half its "
        "largest) is one no healthy run's last logs "
        "reach without a cause in the log: a breaker's beta-VAE whose KL weight ramps 0 -> 1 "
        "over its last 4 of 7 epochs (0.034 -> 0.28 -> 0.46 -> 0.63 -> 0.81) leaps once and "
        "then adds less each log, and a logged weight, stage or setting explains the climb "
        "as it does for a curve. A loss summed over a size that grows 4x a log with the size "
        "not logged (a progressive resize) climbs as a blow-up does and is read as one.",
        unit="points",
        valid=count(4),
    )

    diverge_lr_rise: float = threshold(2.0, see="diverge_caused_ratio", unit="ratio", valid=FACTOR)
    diverge_start_points: int = threshold(
        2,
        "The starting level is the first 2 points: a run that blows up right after its first "
        "logs did hold that level (the higher of the two, when they agree within the noise), "
        "but a single low first point (a one-point dip) is averaged with what follows rather "
        "than taken as a level. What follows is read as the median of the next 5 points (or "
        "block), not one noisy neighbour, so a lone first point counts only when the run right "
        "after it sits 3x above it (the median of the two is then still 1.5x below).",
        unit="points",
        valid=count(1),
    )
    average_fill_slack: float = threshold(
        1.5,
        "A lone low first point followed by a concave climb that the run then falls from is a "
        "running average started at zero filling up (r = b*r + (1-b)*loss from r = 0, as "
        "hand-written loops log it), not a starting level TP-DIVERGE may count from. Such an "
        "average grows by at most one loss a step, so its second log is at most (steps between "
        "them + 1) times its first; this slack lets the loss itself move 1.5x between the two "
        "logs. A blow-up logged every step (3.27 -> 60 at HF lr 2.0) jumps 18x, past 2 x 1.5; "
        "PyTorch MLP runs with a 0.9 average from zero (first log 0.23 against a loss of 2.3) "
        "rise 1.9x a step, or 6.4x over 10 steps.",
        unit="ratio",
        valid=FACTOR,
    )
    objective_eval_after: int = threshold(
        3,
        "A train loss that climbs from its best level is not a divergence when the held-out "
        "loss did not get worse over the climb: the median of the last 3 of at least this many "
        "evaluations after the climb began no higher than the best evaluation before it (for a "
        "positive loss, beyond the evaluations' own noise where objective_eval_resolution "
        "allows it). A "
        "model that diverges gets worse on held-out data too; a train loss whose objective "
        "changed (a VAE's KL weight annealed up, a curriculum's harder stage, stronger "
        "augmentation) climbs while the held-out loss falls. Found by a new user's real runs: "
        "a Lightning VAE with KL warm-up (train loss 2.0 -> 3.9, validation ELBO 9.8 -> 3.6) and "
        "a two-stage language model (eval loss on the target data at its minimum at the end) "
        "FAILed TP-DIVERGE. 3, so that one lucky evaluation does not decide.",
        unit="evaluations",
        valid=count(1),
    )
    objective_eval_resolution: float = threshold(
        0.2,
        "The eval loss's end may exceed its best held evaluation by its own noise only where "
        "that noise can show a rise of this share of its level: the end is compared with the "
        "level the eval loss held just before the climb (median of its last 3 evaluations "
        "there), allowing diverge_noise_z standard errors of the two medians (point-to-point "
        "noise of the held evaluations), and only where that allowance is at most 20% of the "
        "level. A healthy eval loss wanders a few percent between evaluations and the best of "
        "many sits low by chance: a cyclical-KL VAE's validation ELBO ended at 3.737 against a "
        "best of 3.644 and a held level of 3.816, at 3% noise (an allowance of about 3 times "
        "the noise, 9%; 20% is reached at about 6% noise, and the estimate of the noise from "
        "a few held evaluations varies by a third). Evaluations at 10-15% noise (allowances of "
        "30-45%) cannot show that a model did not get worse: divergences whose eval rose 30-35% "
        "are compared strictly, whatever the train loss's climb.",
        unit="share",
        valid=SHARE,
    )
    objective_eval_climb_share: float = threshold(
        1 / 3,
        "A train loss that climbs past TP-DIVERGE's bar while the held-out loss rose by less "
        "than this share of the climb (both on the log scale, the eval loss's rise taken at "
        "the top of its own noise allowance: diverge_noise_z standard errors of the median of "
        "its last 10 evaluations before the climb (no higher than that of its last 3) and of "
        "every evaluation after it (no lower than that of its last 3: an eval loss that climbs "
        "steadily is judged by where it got to), at least "
        "objective_eval_after of them), and by at most objective_eval_resolution of its level "
        "(an eval loss 35% worse beside a train loss 10x up is a model that got worse), is "
        "disputed, a warning (TP-LOSS-CLIMB), not a failure: "
        "a diverged model is worse on held-out data about as much as on its training data, and "
        "a train loss that climbs alone measures other data (a curriculum's harder stage with "
        "no stage logged, a data-loader change). A new user's generated curricula (helper 97: "
        "train loss 2.0-2.5x up in one step at the stage change, falling after, ending "
        "1.5-2.2x above its best; a fixed-set eval loss flat, or 8% up from overfitting) "
        "FAILed TP-DIVERGE: their eval noise (5%) was too large for the eval loss to show "
        "the model no worse, but not to show it far less worse than a 1.66x climb. A third: "
        "an eval loss 1.5x up beside a train loss 2x up (0.58 of the climb) still fails.",
        unit="share",
        valid=SHARE,
    )
    objective_accuracy_rise: float = threshold(
        0.05,
        "A train loss that climbs while the run's own accuracy (train or held-out) ends above "
        "where it stood when the loss was at its best level, by at least this much (5 points) "
        "and by diverge_noise_z standard errors of the accuracy's point noise, does not "
        "measure the model's error any more: a model that diverges gets worse at its task, and "
        "its accuracy falls (a running average of the accuracy falls with it). A new user's "
        "language model whose loss was logged as a running average from zero with a decay of "
        "0.995 climbed 0.09 -> 1.03 over 1,000 steps while its token accuracy rose 0.10 -> "
        "0.54 and its eval loss held at 1.05. Only for a climb from the run's first point that "
        "slows down (it rises no more over the second half of its steps than over the "
        "first), as an average filling up from zero does: an average that filled and held "
        "and then climbs follows a loss that climbs, and a blow-up accelerates, whatever an "
        "accuracy beside it says.",
        unit="share",
        valid=SHARE,
    )
    objective_fill_max_ratio: float = threshold(
        1000.0,
        "A running average r = b r + (1 - b) loss started at 0 logs (1 - b) of the loss first, "
        "so it fills up by at most 1 / (1 - b): 1,000x at a decay of 0.999 logged every step, "
        "the slowest average seen in practice (new users' language models: 2.7x-25x at "
        "0.995-0.999 logged every 5 steps). A climb from the first point past this is no "
        "average filling up, whatever an accuracy beside it says (a reviewer's run at lr 3 "
        "whose averaged loss reached 1.8e32x its first log while its averaged accuracy rose "
        "to chance).",
        unit="ratio",
        valid=FACTOR,
    )
    objective_climb_share: float = threshold(
        0.25,
        "Where no evaluation was made while the train loss held the level it climbed from, "
        "the evaluations made during the climb serve: the train loss must climb on across them "
        "(from the first evaluation after the climb began to the end, at least this share of "
        "its whole climb) while the held-out loss does not get worse (the median of its last 3 "
        "no higher than that first evaluation). A model that diverges gets worse on held-out "
        "data while its train loss climbs; a train loss logged as a running average started at "
        "zero with a slow decay (0.995-0.999 a step, a new user's healthy language models) "
        "climbs for the whole run toward a loss the model held from the start, its eval loss "
        "flat (1.050 -> 1.040) and its accuracy rising. A run that collapsed before its first "
        "evaluation has a train loss that no longer climbs across the evaluations, so this "
        "reading does not clear it.",
        unit="share",
        valid=SHARE,
    )
    objective_weight_rise: float = threshold(
        1.5,
        "A logged weight of a term of the loss (a key such as beta, kl_weight, kl_coef) that "
        "climbs at least this factor after the train loss's best level (or from 0) changes "
        "what the loss measures: KL annealing takes beta from about 0 to 1 over the first "
        "10-100% of a VAE's training (Bowman et al. 2016, 'Generating Sentences from a "
        "Continuous Space'), and the summed loss climbs with it while the model improves. "
        "1.5x is a change of the objective, not a rounding of a constant. The same factor, "
        "either way, for a logged setting that moves the loss's level while the model learns "
        "(a data mixture's weight 0.05 -> 0.6, a distillation temperature 4 -> 1, an InfoNCE "
        "batch 256 -> 4096, whose loss starts at ln of the batch), counted only where the loss "
        "falls again after the move: three new users' healthy runs of these kinds FAILed "
        "TP-DIVERGE at 1.6-1.85x.",
        unit="ratio",
        valid=FACTOR,
    )
    diverge_dip_blocks: int = threshold(
        2,
        "A best level that is a dip of at most 2 smoothing blocks (10% of the run) below a "
        "plateau the run held just before it (two blocks tied with each other within the "
        "noise, not the run's first block), with the run ending no higher than that plateau "
        "(within the noise gate) and no other block tied with the dip, is a dip and a return, "
        "not a divergence: the run lost nothing it held. Heavy-tailed, autocorrelated noise "
        "makes such dips: one of the four TP-DIVERGE false FAILs on 10,000 generated healthy "
        "runs (tests/_zoo.py, seed 1486: a plateau at 0.55-0.76, a dip to 0.25, back to 0.68) "
        "is one, and on the corpus a loss at its noise floor (hf-sentiment-eval-rises-from-ln2, "
        "whose train loss ends far below its start) was called diverged through one. No "
        "generated diverged run that the rule catches (220 of 223) ends within 1.3x of the two "
        "blocks before its best, and none is lost. A divergence climbs above where the run "
        "stood; a V-shaped one passes through its pre-best blocks on a descent (not tied, so "
        "not a plateau), and a drop held for longer than the dip is a level the run held, so "
        "a return from it still counts. 0 turns the exception off.",
        unit="blocks",
        valid=count(0),
    )
    floor_regain_share: float = threshold(
        0.05,
        "A rise above the best level that regains less than 5% of what the run fell (first "
        "block's median minus the best level, on the loss's own scale) is the wiggle of a loss "
        "at its noise floor, not a divergence: a ViT fine-tune that falls 1.5 -> 1.5e-4 and "
        "ends at 7e-4 is 4.7x its best but has regained 0.04% of its fall. Runs that really "
        "diverge undo a large part of what they learned (lr far too high: 100% or more); a "
        "late but durable climb from 0.002 back towards a start of 0.03 regains over half. "
        "Ratios cannot express this: only the absolute climb measured against the fall does.",
        unit="ratio",
        valid=SHARE,
    )

    # --- dead run ----------------------------------------------------------------------
    dead_window: int = threshold(
        5,
        "Median of the last 5 vs the first 5 losses; under 5% relative improvement over the "
        "whole run means the optimiser is not making progress (the values the foundation issue "
        "specifies).",
        unit="points",
        valid=count(1),
    )
    dead_min_improvement: float = threshold(0.05, see="dead_window", unit="ratio", valid=SHARE)
    dead_min_points: int = threshold(10, "Two non-overlapping windows of 5.", unit="points", valid=count(2))
    eval_min_fall: float = threshold(
        0.01,
        "An eval loss that falls by less than 1% of its first evaluation over the run is no "
        "evidence of learning, however steadily it falls: a model that does not learn drifts "
        "one way too, and a rank test calls any monotone drift significant. A new user's "
        "float16 weights with no loss scaler (updates rounded away) had an eval loss falling "
        "0.004% over 6 evaluations, which hid its flat train loss; in the corpus the "
        "significant eval falls under 1% are 0.011% and 0.17%, both in runs labelled "
        "flat_or_dead, and the smallest in a healthy run is 2.7%.",
        unit="share",
        valid=SHARE,
    )
    dead_trend_z: float = threshold(
        2.326,
        "A loss with a significant downward trend is learning, however slowly: Mann-Kendall z "
        "below -2.326 (one-sided 1%) exempts a run from TP-DEAD-RUN. Measured over at most 40 "
        "block medians, which damps the autocorrelation of running-average losses and keeps "
        "the test O(1) in the run length. On the corpus: a VAE loss falling 1008 -> 995 "
        "steadily has z = -10 (learning); a LoRA run drifting 2.17 -> 2.12 inside +-0.2 noise "
        "has z = -1.0 to -1.8 (no progress).",
        unit="z",
        valid=SIGMAS,
    )
    # The Mann-Kendall test needs 3 block medians.
    dead_trend_blocks: int = threshold(40, see="dead_trend_z", unit="blocks", valid=count(3))
    dead_min_schedule_share: float = threshold(
        0.3,
        "Least evidence for the rules that claim nothing happened (TP-DEAD-RUN, TP-FLAT, "
        "TP-LOSS-STALLED): where the log declares its schedule (HF max_steps, a monitor's "
        "max_steps, Coqui's epochs), it must cover 30% of it. Early in a run a slow but "
        "healthy optimiser (Adam at 1e-4 on a small model, a LoRA with a gentle warm-up) has "
        "moved the loss by less than the 5% bar while the noise of the first points is at its "
        "largest; warm-up schedules commonly take 3-10% of the steps and the first few percent "
        "after them are still far from the steady state. By 30% a run that is training at all "
        "has shown it on the wide windows or the trend test.",
        unit="share",
        valid=SHARE,
    )
    dead_flat_min_points: int = threshold(
        30,
        "Did not improve is not dead, and pinned is not dead without a cause. TP-DEAD-RUN "
        "fails a run only with a cause named in the log (a learning rate at most tiny_lr, a "
        "collapsed gradient norm, a prediction metric bit-identical at this many evaluations). "
        "A loss that shows no movement is called pinned (in TP-LOSS-STALLED's evidence, a "
        "WARN) when the 99% confidence interval (z = dead_ci_z) of the change in log-loss over "
        "the run, from a least-squares line whose standard error is widened for the "
        "autocorrelation of the residuals (AR(1)), lies inside +-ln(1/(1 - "
        "dead_min_improvement)) = +-0.051 nats, the fall a slow but steady learner makes over a "
        "run (the healthy slow learners of the corpus fall 5-10% over their logs; Adam at 1e-4 "
        "on a small regression falls 10% in 300 steps), over at least this many points: 30 "
        "make the interval's width a property of the run's noise rather than of the few points "
        "it has (a t quantile with 28 degrees of freedom is within 5% of the normal's). A "
        "pinned loss stays a WARN without a cause because a run that reached its floor before "
        "its first log holds one level from its first point too: on 20,000 generated healthy "
        "runs of unseen seeds (tests/_zoo.py, seeds 10,000-29,999) four of the floor shape, "
        "with no learning rate logged, were pinned; the same loss with a learning rate logged "
        "was already a WARN (the optimizer stepping). On the corpus a small LM stuck at its "
        "unigram plateau for 45 points gives [-0.001, 0.020] (pinned, no cause: a WARN); a LoRA "
        "plateau of 31 points gives [-0.05, 0.05] and a 100-point LoRA with +-0.2 noise gives "
        "[-0.04, 0.06] (not even pinned). The loss must also be pinned from its first point to "
        "be called so: a first log more than 5% above the end level, or single points so noisy "
        "(dead_ci_z point sigmas of the log-loss wider than 5%) that a 5% drop in the first "
        "log would not show, is the shape of a log that starts at the end of the run's drop.",
        unit="points",
        valid=count(3),
    )
    dead_ci_z: float = threshold(2.576, see="dead_flat_min_points", unit="z", valid=SIGMAS)
    live_confirm_checks: int = threshold(
        3,
        "A run still training is judged every few steps, so each check is one more chance for a "
        "test on a noisy curve to miss; a FAIL from the shape of the curve (a divergence, a dead "
        "or flat loss) stops a live run only when 3 judgements in a row find it. Measured on "
        "the healthy grid of tests/live/test_monitor_grid.py (3 problems, Adam, AdamW, SGD with and "
        "without momentum, batches 8-64, checks every 10 steps): at 1 or 2, batch-8 SGD runs "
        "at their noise floor are called diverging from a 3- to 6-point dip (end level 1.7x-68x "
        "it); at 3 none is, while runs that really diverge (40x and climbing) are stopped 2 "
        "checks later. A NaN, an exact zero or a zero learning rate needs no confirmation.",
        unit="checks",
        valid=count(1),
    )
    live_diverge_regain: float = threshold(
        0.5,
        "A divergence of a run still training stops it only when its climb gives back at least "
        "this share of what the run learned (end level - best level over first block level - "
        "best level), or blows up (blowup_ratio), or follows a learning rate that climbed: "
        "stopping a healthy run is the worst outcome, and a healthy run climbs for a while and "
        "comes back. A new user's CNN (SGD, momentum 0.9, lr 0.01, batch 8) climbed 0.21 -> "
        "0.55 for 80 steps over 3 checks, giving back 29% of its fall from 1.37, and was "
        "stopped at step 429 of 1,000; left to run it came back to 0.25 and PASSed. Runs that "
        "really diverge give back most or all of it (the grid's SGD lr 0.05 CNN wandered back "
        "to chance, 100%). Below the share the finding is a WARN while the run trains; the "
        "judgement of the ended run is not touched.",
        unit="share",
        valid=SHARE,
    )
    # An Adam step moves a weight by about lr: a rate above 1 is never "effectively zero".
    tiny_lr: float = threshold(
        1e-7,
        "A learning rate that never exceeds 1e-7 over a whole supervised run is effectively "
        "zero: an Adam step moves each weight by about lr, so even 10,000 steps move a weight "
        "of scale 0.02 (a usual initialisation) by at most 1e-3 of the way it would travel at "
        "a common fine-tuning rate (1e-5 to 5e-4). It sits an order of magnitude below the "
        "lowest rates used on purpose: full fine-tunes of large language models run at "
        "1e-6 to 5e-6 and preference tuning at 5e-7 to 1e-6, and a new user's tiny GPT-2 "
        "fine-tuned at a constant 1e-6 fell 5% in 500 steps with its eval loss falling at "
        "every evaluation (a FAIL at the former 1e-6). TP-DEAD-RUN names it as the cause.",
        unit="learning rate",
        valid=Range(float, 0.0, 1.0),
    )

    # --- chance level --------------------------------------------------------------------
    # ln(101) / ln(100) = 1.002, inside the 2% level tolerance: past 100 classes a level
    # cannot name one k, and each k is one more pass over the run.
    chance_max_classes: int = threshold(
        10,
        "ln(k) is the cross-entropy of a uniform guess over k classes. k is tried from 2 to "
        "10: beyond that the levels crowd (ln 11 / ln 10 = 1.04) so a level cannot name one k. "
        "The run's median within 2% of ln(k) and 80% of its block medians within 3% (\"most of "
        'the run"): a 3-class GNN stuck at 1.06-1.10 against ln 3 = 1.0986 sits inside; a '
        "healthy loss that passes through ln(k) spends a few blocks there and ends far below. "
        "Leaving the level is an effect size, not a trend test: the end of the run (median of "
        "its last 10%) more than 3% of ln(k) below it. With many points a trend test calls a "
        "3% drift significant (a 4-class loss going 1.42 -> 1.36 over 68,000 steps, ln 4 = "
        "1.386; a 3-class NLI model at 1.128 -> 1.105, ln 3 = 1.0986), yet such a model has "
        "learned next to nothing.",
        unit="classes",
        valid=Range(int, 2, 100),
    )
    chance_tol_level: float = threshold(0.02, see="chance_max_classes", unit="ratio", valid=SHARE)
    chance_tol_block: float = threshold(0.03, see="chance_max_classes", unit="ratio", valid=SHARE)
    chance_share: float = threshold(0.8, see="chance_max_classes", unit="share", valid=SHARE)
    chance_coincidence_share: float = threshold(
        0.25,
        "With no accuracy to name k, a settled loss lands within chance_tol_level of some ln(k) "
        "by coincidence more often the more the levels crowd: the window covers 5% of the way "
        "to the neighbouring levels at k = 2, 13% at 3, 22% at 4, 43% at 6 and 92% at 10. New "
        "users' healthy runs warned at ln 6, ln 7 (a plateau after warm-up, language-model "
        "fine-tunes) and so did 4 healthy corpus runs (T5 summarisation at ln 6, a fine-tune at "
        "ln 7). Above a quarter, a loss that did not reach the level at once, as a guesser's "
        "does (chance_onset_share), is not read as near chance. Engineering choice: a "
        "one-in-four coincidence is no evidence.",
        unit="share",
        valid=SHARE,
    )
    chance_onset_share: float = threshold(
        0.05,
        "A guesser's loss reaches ln(k) at once: a shift of the output bias within the first "
        "twentieth of the run (the zoo's chance runs, tests/_zoo.py, reach it at 0-5%), then "
        "holds it. The healthy runs that settled near a crowded ln(k) by coincidence reached "
        "it at 10% (new users' warm-up-then-plateau runs at ln 6 and ln 7), 14% (a T5 "
        "summariser at ln 6) and 55% (a fine-tune at ln 7) of the run. Measured in blocks of "
        "5% of the run (at most 200 points each).",
        unit="share",
        valid=SHARE,
    )
    chance_collapse_nats: float = threshold(
        100.0,
        "A per-example cross-entropy of 100 nats means logits about 100 apart on the wrong "
        "class: no uniform guess over any label space (the largest tokenizers hold about 256k "
        "tokens: ln = 12.45) and no initialisation gives it, but a learning rate far too high "
        "or weights scaled far too large do. A run whose loss starts there and falls to ln(k) "
        "did not beat a guess, it blew up and its outputs collapsed to one; such a fall is read "
        "as a collapse (TP-CHANCE-LEVEL, with an accuracy at 1/k), not as the fall of "
        "chance_start_ratio that a model at the floor of its data makes. Helper 78's MLP at Adam "
        "lr 1.0 (1,175 -> 2.33-2.41 at ln 10, eval accuracy 0.09-0.14) and CNN at RMSprop lr "
        "0.5 (161,802 -> 1.43-1.50 at ln 4, eval accuracy 0.23-0.28) PASSed or only WARNed. "
        "Lower bars catch healthy starts: helper 84's detectron2 total loss of 17 at its first "
        "iteration, a tiny GPT first logged at 16.4 and a language model at 41, each falling "
        "to a level near some ln(k) with an accuracy near 1/k by coincidence.",
        unit="nats",
        valid=POSITIVE,
    )
    chance_collapse_above: float = threshold(
        0.08,
        "How far above ln(k) a collapsed classifier's loss may sit: outputs collapsed to a "
        "constant prediction p score ln(k) + KL(uniform || p) on balanced labels, at or above "
        "ln(k) and never below it, and under a learning rate far too high the logits jitter "
        "(helper 78's collapsed runs sat 1-8% above ln k). Read only after a blow-up "
        "(chance_collapse_nats) and with an accuracy at 1/k.",
        unit="ratio",
        valid=SHARE,
    )
    chance_guess_above: float = threshold(
        0.2,
        "How far above ln(k) the loss of a classifier whose every logged top-1 accuracy sits "
        "at 1/k, to its end, may sit and still be read as a guess. A prediction that does not "
        "depend on the input scores ln(k) + KL(uniform || p) on balanced labels: ln(k) or "
        "more, never less; under a learning rate far too high its logits jitter around that "
        "constant. New users' and reviewers' guessers sat above the 2% level band: SGD at lr "
        "1.0 on 4 classes at 1.05-1.18x ln 4 for 600 steps (Lightning) and 1.03-1.10x for "
        "1,280 (Keras); Adam at lr 1 on 3 classes at 1.01-1.04x ln 3 with its val_accuracy "
        "at 0.3305 for 30 epochs; SGD at lr 10 on 10 classes at 1.037x ln 10; Adam at lr 1 "
        "on 100 and 1,000 classes at 1.05-1.07x and 1.13-1.15x. Read only with that "
        "accuracy: the loss alone cannot tell a guess from the level of another objective, "
        "and the band's top, ln(k) x 1.2, stops short of the next level but one for k up to "
        "10 (ln 4 x 1.2 = ln 5.3). A model that learns leaves 1/k in its accuracy, whatever "
        "its loss; one whose loss sits above a guess's with the accuracy of a guess has "
        "learned nothing.",
        unit="ratio",
        valid=SHARE,
    )
    chance_collapse_share: float = threshold(
        0.5,
        "The stretch after a blow-up (from its first point after the peak at or under "
        "chance_start_ratio x ln(k); later spikes inside it are noise to its block medians) "
        "must be at least this share of the run for its level to be read: a collapse held, "
        "not a run still coming down.",
        unit="share",
        valid=SHARE,
    )
    chance_start_ratio: float = threshold(
        2.0,
        "A loss at ln(k) fails a run as chance only when it did not fall there from this many "
        "times ln(k) or more (the median of its first 3 points). A k-class classifier that "
        "guesses starts at ln(k): its initial logits are near uniform, so its first losses sit "
        "at ln(k) (every chance-level run of the corpus starts within 4% of it). A loss that "
        "starts at 2x ln(k) or more and falls to it has beaten a uniform guess over k: a "
        "language model over a 48-token vocabulary (ln 48 = 3.87) whose data branch three ways "
        "at every token reaches its floor at ln 3 with an accuracy of 1/3, a new user's healthy "
        "runs. A classifier with badly scaled initial logits that falls to the class prior "
        "looks the same, so such a level is TP-NEAR-CHANCE, a WARN, not a PASS.",
        unit="ratio",
        valid=FACTOR,
    )
    chance_fail_max_classes: int = threshold(
        1,
        "Without an accuracy at 1/k, a level fails a run as chance only for k up to this: by "
        "default none (1). A loss at ln 2, ln 3 or ln 4 for a whole run with no accuracy logged "
        "is a classifier guessing or a loss of another kind that settled there (a language "
        "model's 1.386, a regression's 0.693), and the log cannot tell which: in the zoo, 5 of "
        "10,000 generated healthy runs sit at ln 2-4 for their whole run, eval loss or train "
        "loss. Every chance-level run of the corpus logs an accuracy at 1/k, which says it. "
        "Without one the level is TP-NEAR-CHANCE, a WARN. Raise it to 4 (ln 2, ln 3, ln 4 "
        "stand 26% apart) where every run judged is a classifier; above 4 the bands around "
        "ln 5 ... ln 10 cover about 40% of 1.6-2.35, where language-model fine-tunes settle.",
        unit="classes",
        valid=Range(int, 1, 100),
    )
    chance_above_ratio: float = threshold(
        1.3,
        "A held-out loss of a classifier that memorises shuffled labels holds at or climbs "
        "above ln(k), the uniform guess's: confident answers that are wrong cost more than "
        "1/k each (a Keras MLP on 10 shuffled classes, built by a new user: 1.09-1.18x ln 10 "
        "over 25 epochs). Up to 1.3x ln(k) is that band; far above it the loss is not a "
        "guesser's, and a model whose eval loss falls onto the band is learning.",
        unit="ratio",
        valid=FACTOR,
    )
    chance_acc_tol: float = threshold(
        0.05,
        "A loss at ln(k) fails a run when the run's own accuracy confirms the guess: its "
        "second-half median within 0.05 of 1/k (a 3-class NLI model at ln 3 with an eval "
        "accuracy of 0.33), or within two binomial standard errors of 1/k when the size of the "
        "evaluation set is read from the accuracy's granularity (a GNN at ln 3 whose val_acc on "
        "32 graphs is 0.28-0.31: 2 x sqrt(1/3 x 2/3 / 32) = 0.17). Without that "
        "confirmation a drift along ln(k) is a WARN (TP-NEAR-CHANCE): language-model and "
        "summarisation losses sit at 1.386 or 1.792 by coincidence (two healthy fine-tunes of "
        "the corpus, 1.75 -> 1.35 and 1.87 -> 1.77) and the loss alone cannot tell them from a "
        "classifier that left chance by 3%. A train accuracy's second-half median is over its "
        "batches, each a new sample, so its error is that of a median of that many (a mixup run's "
        "0.28 over 125 batches of 32 is not 1/6, however wide one batch's band). A held-out "
        "accuracy above 1/k by more than twice its tolerance makes the level a coincidence of "
        "the objective (the same mixup run scored 0.47 on 2,000 held-out examples): a WARN at most.",
        unit="share",
        valid=SHARE,
    )
    prior_min_evals: int = threshold(
        5,
        "A binary classifier collapsed onto its class prior predicts the majority class for "
        "every example and the prior's probability for each: its accuracy is the majority "
        "share p to the bit at every evaluation, and its cross-entropy is the prior's "
        "entropy H(p) = -p ln p - (1-p) ln(1-p) (0.325 nats at 90/10; a new user's inputs "
        "scaled by 1e-6 held 0.3251-0.3254 over 12 evaluations at accuracy 0.9). A model "
        "that learned anything scores a loss below H(p), or moves its accuracy by an "
        "example; one that is miscalibrated sits above it. 5 evaluations in a row at both "
        "levels (prior_loss_tol) leave no healthy run that looks the same: a converged "
        "model on a small evaluation set can hold its accuracy, not a loss at the prior's "
        "entropy to 1% (prior_loss_tol, relative: a prior-predictor's bias wobbles the loss by "
        "a fraction of a percent above H(p)).",
        unit="evaluations",
        valid=count(2),
    )
    prior_loss_tol: float = threshold(0.01, see="prior_min_evals", unit="ratio", valid=SHARE)

    # --- exactly-zero values -----------------------------------------------------------
    zero_min_points: int = threshold(
        5,
        "Exact zero is compared with ==, never a tolerance. 5 points so that one logging "
        'artefact does not make "every value".',
        unit="points",
        valid=count(1),
    )
    zero_fitted_share: float = threshold(
        1e-4,
        "A loss that ends on exact zeros after its last positive values (the median of up to "
        "3) had fallen to this share of its starting level or below was fitted to float "
        "precision, not zeroed by a bug: a float32 cross-entropy is exactly 0 once every "
        "example's margin passes about 17 nats (helpers' easy 2- and 4-class tasks went "
        "0.76 -> 3.7e-9 -> 0.0), a sum of squares underflows the same way. A hidden NaN or "
        "a fully masked batch zeroes a loss from an ordinary level (HF's NaN filter writes "
        "0.0 where the loss was 0.3). Such zeros are TP-ZERO-LOSS-FITTED, a warning: a task "
        "solved to the last bit is as often a label leak or a task too easy as a success.",
        unit="ratio",
        valid=SHARE,
    )
    fitted_loss_level: float = threshold(
        1e-3,
        "A positive loss whose first and last levels (TP-DEAD-RUN's end medians) are both at "
        "most this has fitted its data: a cross-entropy of 1e-3 nats puts probability 0.999 on "
        "the labels, a mean squared error of 1e-3 on standardised targets leaves 0.1% of their "
        "variance. A fitted model trained on with weight decay settles where the decay balances "
        "its vanishing gradient, above where it was: a breaker's converged classifier resumed "
        "with SGD 0.1, momentum 0.9 and the standard decay 5e-4 rose 3.1e-6 -> 1.1e-4 at 100% "
        "accuracy (2e-3: 160x, to about 5e-4) and FAILed TP-DIVERGE at 1e-4, live too. Its gradients, and so its updates, are about zero because nothing is left to "
        "fit, so a collapsed gradient norm or a tiny update/weight ratio is no cause of a dead "
        "run there (a helper's converged 4-class classifier trained on with SGD 1e-3 held "
        "1e-6..1e-5 with an update ratio of 6e-8 and FAILed TP-DEAD-RUN). A loss measured on "
        "targets far smaller than 1 (returns of 1e-3) sits that low unfitted: there the run is "
        "TP-LOSS-STALLED's WARN, not missed. A learning rate of 0 and what the monitor counts "
        "(steps never taken, gradients cleared, parameters outside the optimizer) stay causes. "
        "The cost, measured on bench/zoo.py's 223 generated divergences: one whose loss is on a "
        "scale of 1e-4 (rising 1.57x) is TP-LOSS-CLIMB's WARN instead of a FAIL. "
        "TP-DIVERGE reads no divergence in a loss whose end level is at most this, however far "
        "it rose in ratio (1e-5 -> 5e-5 held is a fivefold rise), and "
        "TP-LOSS-BLOWUPS counts a blow-up only above 10x this: a start at a fitted level is no "
        "untrained level (the same helper's resumed converged classifier, Adam restarted on it, "
        "drifted 1e-5 -> 1e-4 with batches to 7.7e-4, and was stopped live at step 5049 of "
        "6000 on TP-LOSS-BLOWUPS).",
        unit="loss units",
        valid=POSITIVE,
    )
    zero_fitted_abs: float = threshold(
        1e-5,
        "...and at most this in the loss's own units: a batch's float32 cross-entropy is "
        "exactly 0.0 only when every example's loss is below 2^-24 (6e-8), so the batches just "
        "before hold values of 1e-9 to 1e-6 (helpers' easy tasks 3.7e-9, the corpus's 37-class "
        "LSTM 2.6e-8). A loss at 0.68 cannot round to 0 whatever its start: a reviewer's "
        "regression from 7,876 to its noise floor of 0.68, then 0.0 where a NaN was written as "
        "0, is a hidden NaN. A log whose start (the median of its first 3 positive points) is "
        "itself at most this shows no ordinary level for the zeros to fall from, so the fall "
        "from the start is not asked (an easy task fitted within its first logging intervals: "
        "a helper's Lightning run logged 5.5e-6, then 149 exact zeros, and FAILed as a hidden "
        "NaN); and positives at most this are no ordinary level for TP-ZERO-LOSS-MIXED (batches "
        "of 4 on such a task log 0.0 or a few float32 ulps, 3e-8 to 1.5e-6). A NaN gradient "
        "norm over the zeros keeps either a FAIL.",
        unit="loss units",
        valid=Range(float, 0.0, 1.0, lo_open=True),
    )
    frozen_lr_share: float = threshold(
        1e-3,
        "A loss that froze after the run learned is a schedule that decayed the rate away (a "
        "warning) when every logged rate from the freeze on is at most tiny_lr or a thousandth "
        "of its peak: a rate cut 1000x moves the weights 1000x slower than the run learned at, "
        "and an eval loss printed at 6 decimals stops changing (a new user's ReduceLROnPlateau "
        "run froze at 6.6e-6 of a 0.1 peak). Above that the rate is live, and a frozen loss is "
        "a model no longer updated (a reviewer's optimizer.step() skipped from step 400 at 1e-3).",
        unit="ratio",
        valid=SHARE,
    )
    frozen_guess_tol: float = threshold(
        1e-4,
        "An eval loss frozen within this share of ln(k) (k from 2 to chance_max_classes) is a "
        "model whose outputs are a uniform guess over k classes: a constant output that ignores "
        "its input scores ln(k) exactly, up to float32 rounding (1e-7) and logits a little off "
        "equal. A train loss that fell beside it does not make the freeze a healthy run's (a "
        "breaker's Keras collapse froze its val_loss at 2.30258512, ln 10 to 3e-8, after an "
        "epoch-1 train average of 2.95 that held the untrained start). The nine windows are 1.8e-3 "
        "wide in log-loss together: a healthy eval loss frozen anywhere from 0.05 to 5, log-"
        "uniformly, lands in one by coincidence 4 times in 10,000.",
        unit="share",
        valid=SHARE,
    )
    frozen_fall_log10: float = threshold(
        3.0,
        "A loss that fell this many decades below its first logged value and then repeats one "
        "value to the bit has converged to the precision of a deterministic full-batch "
        "optimizer (L-BFGS stops moving the weights once a step changes the loss by less than "
        "its tolerance_change of 1e-9; full-batch gradient descent at a minimum), not a model "
        "that stopped learning: a warning that the rest of the run changes nothing, not a "
        "FAIL. A new user's full-batch L-BFGS fits fell 3.7-5.3 decades before their loss and "
        "gradient norm froze. A stale logger or a model collapsed to a constant repeats a level "
        "near where the run started or one it held; a fall of 1000x is the model fitting its "
        "data. Where a gradient norm is logged over the frozen stretch it must repeat one "
        "value too, above 0 (the same weights on the same data): a norm that still moves "
        "under a frozen loss is a loss no longer computed from the model.",
        unit="log10",
        valid=Range(float, 1.0, 30.0),
    )
    frozen_grad_share: float = threshold(
        1e-3,
        "A frozen loss also reads as a converged full-batch fit, however little it fell, when a "
        "logged gradient norm froze with it at this share of its start (the largest of its "
        "first 3 values) or below: the gradient vanished, so the optimizer has nothing left "
        "to do (a reviewer's L-BFGS fit of noisy data stopped at its noise floor, 1.25 decades "
        "down, its gradient at 1.5e-6 of its start). An exactly zero frozen norm is a loss cut "
        "off from the weights (a reviewer's loss multiplied by a weight decayed to 0) and stays "
        "TP-LOSS-FROZEN. Not separated: a full-batch run whose optimizer.step() a bug skips "
        "after the loss fell 3 decades, its norm frozen at 3.6e-3 of its start, reads as a "
        "float32 L-BFGS fit that stopped at 3.3e-3 of its own.",
        unit="ratio",
        valid=SHARE,
    )
    frozen_descent_last_share: float = threshold(
        0.01,
        "A train loss that never rose between two logs before it froze, and fell, is a "
        "deterministic descent (a full batch; L-BFGS's line search accepts no rise) that "
        "stopped moving: a fit that converged, or an optimizer that stopped, which its loss "
        "alone cannot tell apart, so a warning (a new user's real full-batch L-BFGS "
        "logistic regressions, 0.61 -> 0.4116 and 0.69 -> 0.4116, at a floor no fall of 3 "
        "decades can reach, FAILed). A loss on fresh batches rises between logs, so a noisy "
        "descent that freezes stays TP-LOSS-FROZEN. Under a logged learning rate that is "
        "still live, the last change before the freeze must be at most 1% of the descent's "
        "largest: a converged fit's changes shrink geometrically (the L-BFGS run's last was "
        "1e-6 of its largest), while optimizer.step() skipped by a bug on a full batch stops "
        "a descent mid-stride, its last change one of its ordinary ones (a linear descent's "
        "are all alike).",
        unit="share",
        valid=SHARE,
    )
    rounding_floor_steps: float = threshold(
        2.0,
        "A 0.0 in a loss printed at d decimals (every value a multiple of 10^-d) is a value below "
        "half that step, not an exact zero, when the positive losses next to the zeros sit "
        "within 2 steps of 0 (their median): HF Trainer before 4.46 rounds the logged loss to 4 decimals, so a "
        "fine-tune at its floor logs 0.0001, 0.0002 and 0.0 (a new user's runs FAILed "
        "TP-ZERO-LOSS-ONSET and went unjudged), while a NaN hidden as 0.0 or a batch of masked "
        "labels lands on 0 from an ordinary level, more steps above (a reviewer's losses at 3-4 "
        "and 10 steps, 0.003-0.004 at 3 decimals or 0.10 at 2, dropping to 0.0 and staying there).",
        unit="rounding steps",
        valid=POSITIVE,
    )
    zero_collapse_share: float = threshold(
        1e-3,
        "A loss that fell three orders of magnitude (its last 40% at a median magnitude under "
        "0.001 of its start) onto zero and takes both signs there (at least zero_min_points "
        "values below -negative_loss_tol) has collapsed: an unsloth SFT run went 0.31 -> "
        "+-0.0002 with 19 negative values in 35 steps. A tiny-loss task fitted to the last "
        "example stays positive (a vision-LM at 0.002, a GRPO loss near 1e-4 is RL's).",
        unit="ratio",
        valid=SHARE,
    )
    frozen_min_points: int = threshold(
        10,
        "A loss exactly equal (==) at its last 10 or more logs, at least 10% of the run, "
        "written with 4 or more significant digits, no longer depends on the data: batch "
        "noise changes the last digits of a real loss at every log (a frozen run of the corpus "
        "repeats one value for 74 rows; its healthy logs never repeat a 4-digit loss 10 times "
        "in a row). Fewer digits are a logger's rounding at a converged floor. Points count "
        "as measurements: where the series before the stretch repeats each value over several "
        "rows (a progress bar or logger that copies the latest evaluation onto every train "
        "row), the stretch's rows are divided by that median repeat, so one evaluation "
        "carried to the next is one point.",
        unit="points",
        valid=count(2),
    )
    frozen_share: float = threshold(0.1, see="frozen_min_points", unit="share", valid=SHARE)
    frozen_digits: int = threshold(4, see="frozen_min_points", unit="digits", valid=count(1, 17))
    frozen_eval_min_points: int = threshold(
        5,
        "An eval loss written at full precision (at least frozen_eval_digits significant "
        "digits, and not a value a 16-bit float can hold: a loss computed in float16 or "
        "bfloat16 moves in steps of 0.1-0.8% of itself) that is bit-identical at its last 5 "
        "or more evaluations is a model whose weights did not change between them: an average "
        "over a fixed held-out set moves in its last float32 digits (a relative 6e-8) whenever "
        "any weight moves, and a live learning rate moves them by far more. The train loss "
        "needs frozen_min_points: a fixed batch or a cached loss tensor repeats it too. Five "
        "evaluations are four comparisons, each of which a changed model fails; a new user's "
        "loop without optimizer.step() evaluated 8 times, all identical, and its coarser twin "
        "went unflagged. A rate decayed to about zero (frozen_lr_share) is still "
        "TP-FROZEN-AFTER-LEARNING's warning.",
        unit="points",
        valid=count(2),
    )
    frozen_eval_digits: int = threshold(8, see="frozen_eval_min_points", unit="digits", valid=count(1, 17))
    unbounded_factor: float = threshold(
        1000.0,
        "A negative loss whose end level is 1000x its start in magnitude is driven to minus "
        "infinity (a Keras model whose loss runs -3e4 -> -6.5e7: 2,000x). A healthy negative "
        "log-likelihood settles within a small multiple of where it started. The start is the "
        "loss's first logged value, not its first tenth or its first few: a linear runaway's "
        "later logs are already far along its climb (see "
        "unbounded_late_factor and unbounded_scale_floor).",
        unit="ratio",
        valid=FACTOR,
    )
    unbounded_scale_floor: float = threshold(
        1.0,
        "The least starting scale a runaway is sized against, in the loss's units: a likelihood "
        "loss whose first values happen to sit near zero (a Gaussian NLL from a unit-scale "
        "start: 0.5 ln(2 pi sigma^2) is 0 at sigma = 0.40) has no scale of its own there, and "
        "1000x its 2e-4 is 0.2 nats, less than a healthy NLL improves by (a breaker's 9e-6 -> "
        "-3.0 FAILed). One unit (a nat, for a likelihood) is what such a loss moves by as it "
        "learns; a runaway goes to thousands of them. Its first negative values do not size "
        "it either: a runaway that crosses zero within its first logs is already part of the "
        "climb there (1.5 -> -1.5 -> -3000 read as 950x its first negatives). Engineering "
        "choice: a loss logged in tiny units that runs off to -500 of them is missed (a "
        "breaker's real loss = -net(x).mean(), 0.013 -> -402 in 2,000 steps, PASSes).",
        unit="loss units",
        valid=Range(float, 0.0, 1e12, lo_open=True),
    )
    unbounded_late_factor: float = threshold(
        1.5,
        "A negative loss is unbounded only while still running "
        "away: its end level at least 1.5x its mid-run level in magnitude. A runaway to minus "
        "infinity keeps growing over its second half (linear: 2x, quadratic: 4x, exponential: "
        "orders of magnitude: -877 at mid-run, -2,278,582 at the end in a new user's likelihood "
        "run); a likelihood loss that crossed zero and settled (2.0 -> -3.0) moves by a few "
        "percent there, however small its start. Engineering choice between the two.",
        unit="ratio",
        valid=FACTOR,
    )
    signed_regain_share: float = threshold(
        0.5,
        "A loss that is negative by design (the negative log-likelihood of a continuous "
        "density: a Gaussian NLL, a flow, a VAE's ELBO with a Gaussian likelihood) has no "
        "ratio of levels: its climb is judged in its own units, as a share of what the run "
        "learned (the fall from its first block's level to its best level). A climb back of "
        "half of it, past the noise gate (diverge_noise_z standard errors of the two levels) "
        "and held, is a divergence: a healthy run at its floor wiggles by its noise, a sliver "
        "of a fall that had to clear the same gate to count. Half is the rise at which "
        "TP-DIVERGE's 1.5x bar sits for a positive loss that fell 2x (from 3 to 1.5, back to "
        "2.25). On the zoo's 981 healthy negative-NLL runs (tests/_zoo.py, seed 5) it fires "
        "on none.",
        unit="share",
        valid=SHARE,
    )
    negative_loss_tol: float = threshold(
        1e-6,
        "Exact zeros mixed among ordinary losses: at least 10% of the points (so that one "
        "logging artefact in a long run is not it), and the positive losses around them at "
        "least 10% of the starting level: a batch-mean loss lands on exactly 0.0 by float "
        "saturation only when it is already tiny, orders of magnitude below its start. A loss "
        "that cannot be negative (cross-entropy, squared error) is negative when it is below "
        "-1e-6: float rounding of a sum of tiny non-negative terms stays far above that.",
        unit="loss units",
        valid=NONNEG,
    )
    zero_mixed_share: float = threshold(0.1, see="negative_loss_tol", unit="share", valid=SHARE)
    zero_mixed_level: float = threshold(0.1, see="negative_loss_tol", unit="ratio", valid=SHARE)
    zero_margin_tail: float = threshold(
        0.3,
        "Exact zeros that continue the loss's own low tail are a margin loss's, not a bug's: a "
        "batch mean of max(0, 1 - margin) is 0 when every example meets the margin and just above "
        "0 when one does not, so its positive values run down toward 0 (simulated hinge batches of "
        "4 to 64 examples with 10-90% of them at 0: the 10th percentile of the positive batch "
        "means is 0.15-0.25 of their median; a new user's real linear SVM, batch 8, 34 zeros in "
        "200 logs: 0.20). Zeros that replace an ordinary loss (masked or empty batches) leave the "
        "positives at their level: under log-normal batch noise of sigma the ratio is "
        "exp(-1.28 sigma), 0.3 only at sigma 0.94 (a loss whose batches scatter 2.6x). The ratio "
        "is taken against a running median of 9 positives, so a falling level does not widen it.",
        unit="ratio",
        valid=SHARE,
    )

    # --- eval loss worse together with the train loss ---------------------------------------
    eval_diverge_min_evals: int = threshold(
        6,
        "A held-out loss that stays at least 20% above its minimum at every one of at least 5 "
        "later evaluations, while the train loss ends, or sits over the time after the minimum "
        "(its median there), at least 20% above where it was at that minimum: both losses got "
        "worse, so training made the model worse (a learning rate far "
        "too high, a broken schedule). Overfitting, where the train loss falls, is "
        "TP-OVERFIT's. A low outlier is not a minimum to measure from. The minimum must be a "
        "level the run left: the gap from it to the lowest later evaluation (log scale) at "
        "least 2x the median change between later evaluations, the rise to their median at "
        "least 4x; and the series must be quieter than the bar it is judged by (that median "
        "change at most half of ln 1.2). For iid noise the lowest and second-lowest points lie "
        "close together, so noise rarely passes: of 2,400 built runs whose 8-47 evaluations "
        "are pure noise (relative sd 2-50%) and whose train loss rises 1.27x, 3 fire, all at "
        "15% sd; with a train loss that falls or holds, none can. On the corpus the median "
        "change between consecutive evaluations is 2.2% (quartiles 0.8% and 6.8%, 80 eval "
        "series). Five later evaluations, not six: a Whisper fine-tune whose eval loss went "
        "0.219 -> 0.40-0.44 at all 5 evaluations after warm-up (a rise of 13x the change "
        "between them) while its train loss sat 1.9x above its level at the minimum is a "
        "degraded run, and waiting for a sixth evaluation is compute spent on it.",
        unit="evaluations",
        valid=count(2),
    )
    eval_diverge_evals_after: int = threshold(5, see="eval_diverge_min_evals", unit="evaluations", valid=count(1))
    eval_diverge_rise: float = threshold(1.2, see="eval_diverge_min_evals", unit="ratio", valid=FACTOR)
    eval_diverge_noise_factor: float = threshold(2.0, see="eval_diverge_min_evals", unit="ratio", valid=SIGMAS)

    # --- RL and preference signal -----------------------------------------------------------
    rl_zero_std_fail: float = threshold(
        0.95,
        "GRPO's advantage is a completion's reward minus its group's mean: a group whose "
        "completions share one reward (TRL logs the share as frac_reward_zero_std) teaches "
        "nothing. A median of 0.95 over the run with the reward exactly 0 on 80% of the steps "
        "is a run with no signal at all (FAIL); half of the groups without spread over the "
        "last third is most of each batch wasted (WARN). Healthy GRPO runs on the corpus sit "
        "at 0.0-0.2.",
        unit="share",
        valid=SHARE,
    )
    rl_zero_reward_share: float = threshold(0.8, see="rl_zero_std_fail", unit="share", valid=SHARE)
    rl_zero_std_warn: float = threshold(0.5, see="rl_zero_std_fail", unit="share", valid=SHARE)
    rl_pinned_share: float = threshold(
        0.9,
        "TP-RL-NO-SIGNAL on a reward that never varies after its first few logs: equal to its "
        "last value at no fewer than this share of its points (and zero_min_points), unbroken "
        "over the last half of them or more, below the best of the points that differ (a policy "
        "that found the environment's maximum holds the best return it ever got). "
        "A random first policy may stumble on a few different returns, or one rare success, "
        "before it settles; every update after that sees one return. A sparse reward the policy "
        "keeps finding (a tenth of its iterations or more, or late in the run) breaks the share "
        "or the stretch. A new user's PPO with its policy loss's sign flipped returned -0.066 "
        "and -0.068, then exactly -0.2 (the corridor's worst: never reaching the goal) at 147 "
        "of 150 iterations with one -0.135 at iteration 28, and PASSed: the whole-run check "
        "needs every value equal, and the end-to-start comparisons read medians that already "
        "held the fall. Its healthy twin holds 0.94 from iteration 15 of 150 (90%), its best. A "
        "breaker's policy collapsed (entropy 0) to exactly 10.0 for 188 of 200 iterations after "
        "random returns of 6-13: pinned above their median, below their best.",
        unit="share",
        valid=SHARE,
    )
    pref_chance_accuracy: float = threshold(
        0.6,
        "A preference run (DPO, IPO, ORPO, CPO: TRL logs rewards/accuracies, the share of "
        "pairs whose chosen answer gets the higher implicit reward) starts at 0.5 and, on its "
        "own training pairs, rises well above it when it learns (the healthy DPO runs of the "
        "corpus reach 0.75 in the second half). An accuracy whose second-half median is at "
        "most 0.6, with no significant upward trend there, while the loss has no significant "
        "downward trend (dead_trend_z), is a run that does not learn its preferences. 20 "
        "accuracy points make the second half 10.",
        unit="share",
        valid=SHARE,
    )
    rl_flat_noise_share: float = threshold(
        0.5,
        "An RL reward is noisy from step to step; it made no progress when the 99% interval "
        "(dead_ci_z) of its change over the run, from a least-squares line with an AR(1)-widened "
        "error, lies within half its own point-to-point noise in both directions. A healthy "
        "GRPO or PPO reward rises by its noise or more over a run; the interval's half-width is "
        "2.576 * noise * sqrt(12 / n), and the estimate's own error comes on top of it: "
        "generated pinned rewards (iid noise, 12 seeds each) meet the bar in 0 runs at 320 "
        "points, 1 at 400, about two thirds at 550-800 and all at 1,200. A shorter flat reward "
        "is not enough evidence, and a run logged every 10 steps needs thousands of steps.",
        unit="ratio",
        valid=SHARE,
    )
    rl_flat_warn_share: float = threshold(
        1.0,
        "TP-RL-NO-PROGRESS, a WARN, reads a reward pinned when the same 99% interval lies within "
        "one point-to-point noise of zero (the FAIL, TP-RL-FROZEN-POLICY, keeps "
        "rl_flat_noise_share): a reward that moved less than its own step-to-step noise over "
        "the whole run made no progress a chart shows, and the wider bar reaches the 200-500 "
        "step runs GRPO is trained for (the half-width 2.576 * noise * sqrt(12 / n) is under 1 "
        "from 80 points; at 0.5 it needs 320, and a new user's flat GRPO rewards of 250 and 500 "
        "steps, 0.308 +- 0.063, went unflagged). Measured on the corpus: its healthy rewards "
        "that rise move 1.9-3.1 noise units (99% interval ends -3.08/-1.90 and -2.07/-0.83, a "
        "diffusion-LM GRPO), outside the bar; its flat ones (-0.61/0.71) inside.",
        unit="ratio",
        valid=POSITIVE,
    )
    rl_kl_tiny: float = threshold(
        1e-3,
        "A KL to the reference policy whose second-half median is above 0 and below 0.001 "
        "nats: the policy has not left where it started (healthy GRPO runs grow their KL to "
        "0.01-0.1; TRL logs exactly 0 when beta is 0, which says nothing). With a pinned "
        "reward it is a FAIL (TP-RL-FROZEN-POLICY).",
        unit="nats",
        valid=Range(float, 0.0, 1.0),
    )
    # Two halves of 2 points each, the least a trend over the second half is read from.
    pref_min_points: int = threshold(20, see="pref_chance_accuracy", unit="points", valid=count(4))
    rl_collapse_min_points: int = threshold(
        30,
        "An RL return (reward) that rose and then fell back to or below where it started has "
        "lost everything it learned: a policy collapse (an exploding critic in DDPG/TD3, a "
        "Q-value blow-up in DQN, entropy collapse). It is read on 10 block medians, so single "
        "bad episodes do not count. The rise must be at least 6 standard errors of a block "
        "median (pure-noise returns reach 3 in about 1 run in 7 over 9 blocks; 6, in about 1 "
        "in 10^4), and the last 3 blocks (30% of the run) must all sit below the halfway point "
        "between start and peak, so a late dip that recovers is not it. 30 points give block "
        "medians of 3 points; fewer is skipped.",
        unit="points",
        valid=count(3),
    )
    # A start, a peak and a tail block at least.
    rl_collapse_blocks: int = threshold(10, see="rl_collapse_min_points", unit="blocks", valid=count(3))
    rl_collapse_tail_blocks: int = threshold(3, see="rl_collapse_min_points", unit="blocks", valid=count(1))
    rl_collapse_rise_se: float = threshold(6.0, see="rl_collapse_min_points", unit="z", valid=SIGMAS)

    # --- adversarial (GAN) -----------------------------------------------------------------
    gan_win_ratio: float = threshold(
        0.05,
        "A discriminator whose loss holds at 5% of its early level or less has won the game: "
        "a binary cross-entropy discriminator starts near 2 ln 2 = 1.386 (ln 2 per side) and a "
        "healthy one stays within a few tenths of it (DCGAN-style runs: 0.3-1.4), while at 5% "
        "of ln 2 (0.035 nats a side) it gives the right side at least 0.966 probability on "
        "average. Its gradient to the generator then vanishes (Arjovsky & Bottou 2017, "
        "'Towards principled methods for training GANs'), and the generator's loss climbs. "
        "The median of the last gan_tail_share of the run and that of its last third must "
        "both be under the bar, so a dip that recovers is not it (nor a collapse that began "
        "within the tail); the early level is the median of the first fifth.",
        unit="ratio",
        valid=Range(float, 0.0, 1.0, lo_open=True),
    )
    gan_rise_ratio: float = threshold(
        2.0,
        "With the discriminator's loss collapsed, the generator's must have climbed to at "
        "least twice its early median over the same tail: the generator losing the game, not "
        "a discriminator loss that falls while the generator's falls too (a reconstruction "
        "term that dominates a composite generator loss).",
        unit="ratio",
        valid=FACTOR,
    )
    gan_tail_share: float = threshold(
        0.3, see="gan_win_ratio", unit="share", valid=Range(float, 0.0, 1.0, lo_open=True)
    )
    # 20 points: a first fifth of 4 and a tail of 6 to take medians and a percentile of.
    gan_min_points: int = threshold(20, see="gan_win_ratio", unit="points", valid=count(10))

    # --- gradients -----------------------------------------------------------------------
    grad_spike_factor: float = threshold(
        10.0,
        "A gradient norm 10x the run's median is a spike (clipping thresholds are usually set "
        "at a few times the typical norm). The first logged norm is ignored: large norms at "
        "the first log are normal (measured on the corpus: most files).",
        unit="ratio",
        valid=FACTOR,
    )
    nan_grad_sustained_points: int = threshold(
        3,
        "Non-finite gradient norms on the last 3 or more logged points, never followed by a "
        "finite one, are not the loss scaler skipping steps (it lowers its scale and the norm "
        "becomes finite again, sometimes after several skips in a row while it calibrates).",
        unit="points",
        valid=count(1),
    )
    clip_unscale_max_product: float = threshold(
        100.0,
        "The largest gradient-clipping bar in use: max_grad_norm 1.0 is the HF Trainer and "
        "Megatron-LM default, fairseq recipes clip at 0.1 to 25 (wav2vec 2.0 at 25). Gradients "
        "clipped while still multiplied by the loss scale come out of unscale_ with a norm of "
        "the bar divided by the scale, so their norm times the scale sits at or below this.",
        unit="gradient norm",
        valid=POSITIVE,
    )
    clip_unscale_min_scale: float = threshold(
        1024.0,
        "A loss scale of at least 2^10 (torch's GradScaler starts at 2^16, DeepSpeed's at 2^16 "
        "or 2^32): there, gradients clipped after unscale_ at any bar of 0.1 or more give a "
        "norm times the scale of at least 102, above clip_unscale_max_product, so the two "
        "orders cannot be confused. A scaler that fell lower is left alone.",
        unit="ratio",
        valid=FACTOR,
    )
    grad_jump_ratio: float = threshold(
        10.0,
        "A gradient norm whose level jumps 10x (medians of fiftieths of the run, its first tenth "
        "left out: a norm falls fast from the initialisation) and holds: every later fiftieth at "
        "least sqrt(10) above the level before, for at least a tenth of the run, with at least "
        "half the jump between two neighbouring fiftieths. Measured on the 84 logs of the corpus "
        "that log a gradient norm: the largest such level shift of a healthy run is 3.2x (an SFT "
        "run's norm rising with its epochs), held at most 1.1x; a batch-1 run's bimodal norm "
        "jumps 39x but does not hold (0.22x). A loss multiplied by a constant (a reduction of "
        "'sum' for 'mean', a scale applied twice) or a term with large gradients added moves it "
        "by the factor at once; with clipping on, the loss may not show it.",
        unit="ratio",
        valid=FACTOR,
    )
    grad_growth_ratio: float = threshold(
        100.0,
        "A gradient norm whose level (medians of a tenth of the fiftieths of the run, its first "
        "tenth left out) ends 100x above the lowest level it held, however slowly it got there. "
        "Measured on the 98 gradient-norm series of the corpus's 251 logs: the largest such "
        "growth of a healthy run is 3.3x (an SFT run's and a GRPO run's norms rising with their "
        "epochs), of any run 8.3x (a T5 run whose loss diverged late); a norm grows a few-fold "
        "late in a healthy run as the learning rate decays. Two orders of magnitude is 30x "
        "above every healthy growth measured, and above the 10x of a held jump "
        "(grad_jump_ratio): a climb has no sharp edge to tell it from drift. A new user's "
        "generated runs whose norm grew 130x-5e5x at a constant learning rate, the loss still "
        "near its best (Adam and clipping cap the updates), PASSed.",
        unit="ratio",
        valid=FACTOR,
    )
    loss_scale_collapse_factor: float = threshold(
        1024.0,
        "A dynamic loss scaler halves on each overflow and doubles back only after a long run "
        "of clean steps (torch GradScaler: 2000); ending 2^10 below its peak means ten "
        "overflows it never recovered from.",
        unit="ratio",
        valid=FACTOR,
    )
    loss_scale_search_share: float = threshold(
        0.1,
        "A scaler starts high and halves at each of its first steps until one fits (Megatron-LM "
        "and DeepSpeed start at 2^32, torch's GradScaler at 2^16): a fall at every logged point "
        "from the first that ends within this share of the logged steps is that search, and the "
        "peak is read after it. A fall that goes on longer is no search.",
        unit="share",
        valid=SHARE,
    )

    # --- learning rate -----------------------------------------------------------------
    # 0 would FAIL every run: a share of zero learning rates of 0 is "at least 0".
    zero_lr_fail_share: float = threshold(
        0.99,
        "lr <= 0 on 99% of logged points: the optimiser never moved the weights. Over 10%: a "
        "real share of the run was wasted (warm-up starts at 0 and schedules end at 0, so one "
        "or two edge points are normal).",
        unit="share",
        valid=Range(float, 0.0, 1.0, lo_open=True),
    )
    zero_lr_warn_share: float = threshold(0.1, see="zero_lr_fail_share", unit="share", valid=SHARE)
    zero_lr_decayed_share: float = threshold(
        0.1,
        "TP-ZERO-LR-ONSET: the last learning rate before the zero stretch at most 10% of the "
        "peak: a schedule that decayed into zero, not a rate cut to 0 from its working value "
        "(a phase the log does not name: a batch-norm recalibration, evaluation-only epochs "
        "logged with the optimizer's rate), which sits at half its peak or more. A decay "
        "logged 10 times or more ends at or below it at its last point before 0: a cosine at "
        "2.5% of its peak, a linear decay at 10%.",
        unit="share",
        valid=SHARE,
    )
    zero_lr_onset_share: float = threshold(
        0.5,
        "TP-ZERO-LR-ONSET (a FAIL): a schedule that ended at effectively zero with more than "
        "half of the run to go, the loss stopped with it. Healthy schedules end at zero at "
        "their last step or after a cool-down of 10-20% of the run (WSD schedules decay over "
        "the last 10-20%; a cosine to zero reaches a tenth of its peak at 80%); between 10% "
        "and this share it stays TP-LR-SCHEDULE-ENDED-EARLY's WARN. A new user's schedules "
        "that decayed to 1e-12 at 7% of a 5,000-step run (HF trainer_state, Lightning CSV) "
        "and a timm run cut to lr 0 at 12% only WARNed, their loss flat to the end.",
        unit="share",
        valid=SHARE,
    )
    lr_startup_points: int = threshold(
        3,
        "Leading zeros are warm-up or mixed-precision start-up when they last at most 3 logged "
        "points or 5% of the run, whichever is more (HF logs lr 0 at the first step when "
        "warm-up is on and logging_steps=1; fp16 start-up skips its first steps).",
        unit="points",
        valid=count(0),
    )
    lr_startup_share: float = threshold(0.05, see="lr_startup_points", unit="share", valid=SHARE)
    # One value cannot increase: two are the least that show a rise.
    warmup_rising_points: int = threshold(
        3,
        "Warm-up is still running at the end when the last 3 logged learning rates strictly "
        "increase (two increases in a row are not noise: schedules are deterministic).",
        unit="points",
        valid=count(2),
    )

    # --- throughput --------------------------------------------------------------------
    step_cliff_factor: float = threshold(
        3.0,
        "The median step time of the last 20% of the run more than 3x that of the first half.",
        unit="ratio",
        valid=FACTOR,
    )
    step_cliff_tail_share: float = threshold(0.2, see="step_cliff_factor", unit="share", valid=SHARE)
    step_cliff_min_points: int = threshold(
        10,
        "10 points: the last 20% is then at least 2 points, so one slow step is not a cliff.",
        unit="points",
        valid=count(2),
    )
    loader_bound_share: float = threshold(
        0.5,
        "Data loading takes more than half of each step: the accelerator waits on the input pipeline.",
        unit="share",
        valid=SHARE,
    )

    # --- update/weight ratio ------------------------------------------------------------
    update_ratio_min_points: int = threshold(
        30,
        '||dW||/||W|| per optimizer step: ~1e-3 is the usual rule of thumb (Karpathy, "A '
        'Recipe for Training Neural Networks", 2019: "ratio of updates to weights ... should '
        'be around 1e-3"); a decade either side is still ordinary, so warn outside [1e-4, '
        "1e-2]. Judged after warm-up (the first 10% of points) on at least 30 points.",
        unit="points",
        valid=count(2),
    )
    # 1 would skip every point as warm-up.
    update_ratio_warmup_share: float = threshold(
        0.1, see="update_ratio_min_points", unit="share", valid=Range(float, 0.0, 1.0, hi_open=True)
    )
    # log10 of ||dW||/||W||: float64 resolves a relative change down to its epsilon
    # (2.2e-16, log10 about -15.7), and an update 100 times the weights is a reset, not
    # training.
    update_ratio_high_log10: float = threshold(
        -2.0, see="update_ratio_min_points", unit="log10", valid=Range(float, -16.0, 2.0)
    )
    update_ratio_low_log10: float = threshold(
        -4.0, see="update_ratio_min_points", unit="log10", valid=Range(float, -16.0, 2.0)
    )
    # log10, bounded as the two above.
    live_zero_update_ratio_log10: float = threshold(
        -6.0,
        "Updates about zero, a measured cause that lets a live stop rest on a claim of no "
        "progress: an update/weight ratio of at most 1e-6 per step moves the weights by at "
        "most 1% of their norm over 10,000 steps even when every step points the same way "
        "(1e-6 x 1e4), two decades below TP-UPDATE-RATIO-LOW's bar (1e-4, a slow but "
        "moving run) and a few float32 roundings (6e-8) above no change at all. Adam at "
        "1e-4 on weights of scale 0.1 gives about 1e-3. TP-DEAD-RUN reads the same bar, on the "
        "median over the run, as its cause that nothing moves.",
        unit="log10",
        valid=Range(float, -16.0, 2.0),
    )

    # --- model (measured at check steps by trainproof.live.probes.ModelProbe) ------------
    model_checks: int = threshold(
        3,
        "A model-level rule needs its evidence at 3 checks in a row (2 check intervals). One "
        "check measures one step and one batch, and a single batch has legitimate quirks: a "
        "mixture-of-experts expert no token was routed to, a validation pass between two checks, "
        "a loss scaler calibrating its scale. A configuration fault (a layer outside the "
        "optimizer, zero_grad missing, model.eval() left on) holds at every check, so it is still "
        "found at the third. Engineering choice: the least that rules out one batch.",
        unit="checks",
        valid=count(1),
    )
    replica_drift_tol: float = threshold(
        1e-6,
        "Data-parallel (DDP) replicas hold bit-identical parameters: DDP broadcasts rank 0's "
        "parameters when it wraps the model and every rank applies the same all-reduced gradient, "
        "so the float64 checksums of identical tensors agree exactly. 1e-6 (relative) leaves room "
        "for a different summation order on mixed hardware, far below the O(1) difference of a "
        "rank that started from another seed. Engineering choice above exact equality.",
        unit="ratio",
        valid=NONNEG,
    )
    # Replica checks come at the first two checks, then every replica_every checks (10 by
    # default): a rank apart from the start is told at the second check.
    replica_drift_checks: int = threshold(
        2,
        "Replicas apart at 2 replica checks in a row (the monitor compares them at its first "
        "two checks, then every replica_every=10): one measurement could be a rank caught "
        "mid-update by a hook; a difference that persists across two is in the parameters.",
        unit="checks",
        valid=count(1),
    )
    # 0 would call every run eval-mode (a share of 0 is "at least 0").
    eval_mode_share: float = threshold(
        0.9,
        "model.training False at 90% or more of the log() calls between two checks: a periodic "
        "validation pass that logs inside the training loop takes a minority of the calls, while "
        "model.eval() left on takes all of them. Engineering choice between the two.",
        unit="share",
        valid=Range(float, 0.0, 1.0, lo_open=True),
    )
    params_not_updated_step_log10: float = threshold(
        0.0,
        "A tensor left unchanged by the optimizer step counts for TP-PARAMS-NOT-UPDATED only where the "
        "update plain SGD makes of it, lr x RMS(gradient), is at least one float resolution of its "
        "weights, machine epsilon x RMS(weights) (model/params_not_updated_step, log10, the largest among "
        "the unchanged tensors). Under round-to-nearest an update below half a unit in the last place is "
        "lost, so a healthy float32 tensor that stays bit-identical under SGD sits below log10(0.5): the "
        "bias of a layer that feeds a batch norm, whose true gradient is 0 (the norm subtracts the batch "
        "mean) and whose gradient is the rounding noise of a sum that cancels; a learning rate too small "
        "for the weight. A float16 or bf16 tensor is always counted (the probe records 12): float32 master "
        "weights would have kept what it rounds away (the gallery's bug_fp16_no_scaler). Measured "
        "(bench/model_probe_healthy.py's 240 healthy MLPs, runs 0-119 and 1000-1119): 67 runs, every one with batch norm, left a tensor unchanged at 1,612 checks, "
        "each owed at most 10^-0.80 float steps; the rule warned on 60 of the 240 runs (59 under SGD) "
        "without this bar and on none with it. An SGD whose step computes nothing owes more than 10^3 "
        "(tests/live/test_probes.py). Engineering choice: one float step, above the rounding bound.",
        unit="log10",
        valid=Range(float, -16.0, 16.0),
    )
    layer_update_ratio_high_log10: float = threshold(
        -1.0,
        "A weight matrix changed by more than 10% of its norm in one optimizer step: 100x the "
        "~1e-3 rule of thumb for ||dW||/||W|| (Karpathy, 2019; see update_ratio_min_points). "
        "Measured on tiny healthy models (MLPs of depth 2 and 6, a CNN with batch norm, a "
        "2-layer transformer; Adam, AdamW, SGD; a check every 25 of 200-300 steps): the largest "
        "per-layer ratio stayed below 10^-1.3, except a zero-initialised positional embedding "
        "under SGD at lr 0.1, which starts at 1 and falls below 0.1 within 50 steps (a falling "
        "ratio is left out: a layer settling).",
        unit="log10",
        valid=Range(float, -16.0, 2.0),
    )
    # float32 resolves a relative change down to about 6e-8 (log10 -7.2); below it nothing changes.
    layer_update_ratio_low_log10: float = threshold(
        -6.0,
        "One weight matrix changed by less than 1e-6 of its norm in a step, a thousandth of the "
        "rule of thumb, while the fastest one moved at least update_ratio_low_log10 (the whole "
        "model is not simply at a low learning rate, which TP-UPDATE-RATIO-LOW judges). "
        "Engineering choice: float32 resolves changes down to about 6e-8, so the layer does "
        "change, but too little to learn.",
        unit="log10",
        valid=Range(float, -16.0, 2.0),
    )
    layer_grad_exploding_log10: float = threshold(
        3.0,
        "A weight matrix whose gradient norm is 1000x (10^3) the median weight matrix's of the "
        "same model at the same step. Measured against the model's own median, the bar holds at "
        "any scale of loss or learning rate. Measured on tiny healthy models (MLPs of depth 2 "
        "and 6, a CNN with batch norm, a 2-layer transformer; Adam, AdamW, SGD): the largest "
        "weight matrix's gradient norm sat at most 10^1.0 above the median, the smallest at most "
        "10^0.8 below it. Three decades is an engineering choice well above that spread, which "
        "deeper and larger models widen. On bench/model_probe_healthy.py's 240 generated MLPs (runs 0-119 "
        "and 1000-1119) this bar and layer_grad_vanishing_log10 were each crossed at 3 checks in a row on "
        "13 runs (15 in all), every one with batch norm at a batch of 2, none at a batch of 4 or more or "
        "without batch norm. Those runs are degenerate, not healthy: batch norm over 2 examples maps each "
        "unit to about +/-1 whatever its input, so the gradient through it is near 0, or up to "
        "1/(2 sqrt(eps)) (158 at eps 1e-5) where the two examples nearly coincide; after 300 steps they "
        "sat at chance on 1,024 training examples (cross-entropy 2.25-2.50, ln 10 = 2.30), where the same "
        "models at a batch of 4 reached 1.56-2.29 (lower in 13 of 15). The bar stays.",
        unit="log10",
        valid=Range(float, 0.0, 16.0, lo_open=True),
    )
    layer_grad_vanishing_log10: float = threshold(
        -4.0,
        "A weight matrix whose gradient norm is 1e-4 of the median weight matrix's at the same "
        "step: that layer learns ten thousand times slower than the typical one. Engineering "
        "choice, three decades beyond the spread measured on healthy models (see "
        "layer_grad_exploding_log10, which also gives the 13 generated runs, all batch norm over a batch "
        "of 2, that cross it). All-zero gradients are TP-PARAMS-NO-GRAD's.",
        unit="log10",
        valid=Range(float, -16.0, 0.0, hi_open=True),
    )
    # 1 is the whole layer; below it a configuration turns the FAIL into a judgement of a share.
    dead_relu_share: float = threshold(
        1.0,
        "Every output unit of a ReLU layer non-positive for every example of the check's batch: "
        "the layer passes no signal and no gradient, so nothing before it on that path learns. "
        "An exact fact, not a statistical bar. Measured on tiny healthy MLPs (widths 16 and 64, "
        "Adam at lr 1e-3 to 1e-2, batches of 1 to 64, a check every 25 steps): the largest share "
        "reached 0.98 at batch 1 (one example leaves most units inactive) and 0.42 at batch 8, "
        "and never 1 at any of 714 checks; hence the whole layer, not a share, is the bar. On "
        "bench/model_probe_healthy.py's 240 generated MLPs (runs 0-119 and 1000-1119) 3 runs held a "
        "whole layer dead at 3 checks in a row: two with batch norm at a batch of 2 and a width-8 net at "
        "a batch of 1; each ended at chance (2.31-2.39 nats, ln 10 = 2.30), and the batch-1 net's last "
        "hidden layer was dead on all of 1,024 training examples: dead layers, not a small batch's quirk.",
        unit="share",
        valid=Range(float, 0.0, 1.0, lo_open=True),
    )
    saturation_share: float = threshold(
        0.9,
        "90% of a tanh/sigmoid layer's outputs within 1% of an asymptote (|tanh| > 0.99, "
        "sigmoid < 0.01 or > 0.99), where the derivative is below 0.02: almost no gradient "
        "passes. Glorot and Bengio (2010) describe the saturated sigmoid layer that stalls "
        "training. Measured on tiny MLPs (Adam at lr 1e-3 to 1e-2, batches of 1 to 64): tanh "
        "layers reached at most 0.38, sigmoid layers 0.30 at batch 8 and more but 0.98 at batch "
        "1 and lr 1e-2, which is why the rule only warns. The share is an engineering choice "
        "above the healthy spread. On bench/model_probe_healthy.py's 240 generated MLPs (runs 0-119 and "
        "1000-1119) 4 runs held it at 3 checks in a row, none healthy: two with batch norm at a batch of 2 "
        "(one at chance, 2.30 nats; one diverging, 3.45 to 4.96), a sigmoid net at a batch of 4 at chance "
        "(2.27 nats; a layer saturated on 0.97 of 1,024 training examples) and a tanh net at a batch of 1 "
        "at lr 0.097 that diverged (10.8 to 136 nats; 0.97-0.98 saturated on 1,024 examples). Requiring "
        "activation_min_rows rows here would lose them.",
        unit="share",
        valid=Range(float, 0.0, 1.0, lo_open=True),
    )
    # The two bars below read a check only where each unit was seen this many times.
    activation_min_rows: int = threshold(
        8,
        "A check judges a share of dead or saturated units below the whole-layer bars only where "
        "each unit was seen at least 8 times (8 examples of an MLP's batch; examples times positions "
        "for a sequence or an image). Measured (bench/model_probe_healthy.py, runs 0-119 and 1000-1119) "
        "on 240 generated healthy MLPs (widths 8-256, depths "
        "1-6, batches 1-64, Adam at lr 1e-4 to 1e-2 and SGD with or without momentum at 1e-3 to "
        "1e-1, ReLU, tanh or sigmoid, with and without batch norm; 300 steps, a check every 10): "
        "at batches of 1 to 4 the largest share held at 3 checks in a row reached 1.0 for ReLU "
        "(one example leaves most units inactive, and a width-8 net at batch 1 lost a layer) and "
        "0.98 for tanh and sigmoid (small noisy batches drive the weights up); from 8 rows on it "
        "was 0.69 and 0.16. Engineering choice: the smallest batch of the grid above 4.",
        unit="rows",
        valid=count(1),
    )
    dead_relu_most_share: float = threshold(
        0.85,
        "85% of a ReLU layer's units never positive over a batch of at least activation_min_rows "
        "rows, at model_checks checks in a row. Measured on the same 240 healthy MLPs (see "
        "activation_min_rows; 58 ReLU runs of 8 rows or more, 1,740 checks): the largest share held "
        "at 3 checks in a row was 0.62 at batches of 8-16 and 0.69 at 32-64 (a width-16, depth-6 "
        "net under Adam that learned, 2.32 to 1.25 nats), the largest single check 0.75. The gallery's "
        "biases at -2 leave 0.94 dead from the first check. Engineering choice between the two, "
        "above the healthy maximum by 0.16.",
        unit="share",
        valid=Range(float, 0.0, 1.0, lo_open=True),
    )
    saturation_rows_share: float = threshold(
        0.5,
        "Half of a hidden tanh/sigmoid layer's outputs within 1% of an asymptote over a batch of at "
        "least activation_min_rows rows, at model_checks checks in a row. Measured on the same 240 "
        "healthy MLPs (see activation_min_rows; 84 tanh or sigmoid runs of 8 rows or more, 2,520 "
        "checks): the largest share held at 3 checks in a row was 0.05 at batches of 8-16 and 0.16 "
        "at 32-64, the largest single check 0.20; the gallery's 30x init holds 0.79 from the first "
        "check. Engineering choice between the two; below 8 rows saturation_share alone judges.",
        unit="share",
        valid=Range(float, 0.0, 1.0, lo_open=True),
    )
    same_batch_checks: int = threshold(
        2,
        "Checks in a row (each a comparison with the check before it, 10 steps apart at the "
        "monitor's default) whose training input is the same batch, bit for bit: three checks "
        "that saw one batch. Engineering choice: a fingerprint of the input (its shape, float64 "
        "sum and sum of squares) that repeats across independent draws of a shuffled loader "
        "does not happen by chance, so two comparisons suffice; one could be a loader that "
        "yields a batch twice at an epoch boundary.",
        unit="checks",
        valid=count(1),
    )
    scheduler_stuck_steps: int = threshold(
        2000,
        "A learning-rate scheduler whose step count did not move while the optimizer took 2000 "
        "steps (or, where the log records the epoch, while a whole epoch passed). A scheduler "
        "stepped once per epoch legitimately stands still within an epoch; 2000 steps is an "
        "engineering choice above most epochs of small and medium datasets.",
        unit="steps",
        valid=count(1),
    )

    # --- env (can this machine start the run: `trainproof env`) ------------------------------
    env_mem_headroom: float = threshold(
        0.2,
        "Available RAM must exceed --required-gb by a fifth of it, else TP-ENV-MEM-TIGHT. A "
        "requirement is an estimate of the steady state, and start-up costs more: torch.load "
        "without mmap holds a checkpoint's tensors next to the freshly built model, and each "
        'data-loader worker forks with its own copy of the dataset object; "available" also '
        "moves as other processes and the page cache come and go. A fifth is a judgement, not "
        "a measurement: below it ordinary variation is enough to reach the OOM killer.",
        unit="ratio",
        valid=NONNEG,
    )
    env_disk_headroom_checkpoints: int = threshold(
        1,
        "Free disk must hold one checkpoint more than --keep, else TP-ENV-DISK-TIGHT: trainers "
        "write the new checkpoint before deleting the oldest (the HF Trainer rotates after "
        "saving), so --keep + 1 checkpoints are on disk while each save completes.",
        unit="checkpoints",
        valid=count(0),
    )

    # --- objective (targets and labels at step 0: `trainproof objective`) --------------------
    obj_coverage_min_per_class: int = threshold(
        50,
        "A class is named dead (TP-OBJ-DEAD-CLASS) only after at least 50 valid targets per "
        "class on average (valid targets / num_classes). A class at a tenth of its fair share "
        "(1% of the targets of a 10-class task) is then still expected 5 times, and goes "
        "unseen by chance with probability e^-5 = 0.7%; at 20 per class that chance would be "
        "13%. 50 per class is 500 targets for 10 classes (a few batches) and 50,000 for "
        "ImageNet's 1,000 (4% of an epoch). Below it the check only says it saw too few.",
        unit="targets/class",
        valid=count(1),
    )
    obj_dead_class_max_missing: int = threshold(
        5,
        'At most 5 never-seen classes count as "few": the bugs that kill classes typically '
        "kill one or two ids (an ignore_index or pad mask equal to a real id such as EOS, an "
        "off-by-one label map that drops class 0 or the last class). More never-seen ids "
        "usually mean a label space sparse by design, which a FAIL naming each id would "
        "misdescribe: the reserved special tokens of an LM vocabulary, the 13 byte values that "
        "never occur in UTF-8 text (a byte-level BPE has a token for each), or a num_classes "
        "larger than the label set. The check then reports TP-OBJ-COVERAGE-INSUFFICIENT.",
        unit="classes",
        valid=count(0),
    )

    # --- speech data and tokenizer (`trainproof data`, `trainproof tokenizer`) ---------------
    speech_min_duration_s: float = threshold(
        0.5,
        "Clips under half a second hold a word or two at most: half LJSpeech's shortest clip "
        "(1.11 s; its README gives 1.11-10.10 s, mean 6.57 s, for 13,100 clips). Shorter clips "
        "are truncated files or mis-segmented pairs, and give a subsampling encoder few "
        "frames.",
        unit="seconds",
        valid=NONNEG,
    )
    speech_max_duration_s: float = threshold(
        20.0,
        "Clips over 20 s: twice LJSpeech's longest (10.10 s) and past NeMo's ASR training cap "
        "(`max_duration: 16.7` in its documented train_ds config); Whisper pads or truncates "
        "every input to a 30 s window. Between 16.7 and 30 s a clip is still trainable by some "
        "models, so the bar is set between the two rather than at either.",
        unit="seconds",
        valid=POSITIVE,
    )
    speech_char_rate_factor: float = threshold(
        2.0,
        "A transcript whose characters per voiced second sit more than 2x above or below the "
        "corpus median does not match its audio. LJSpeech averages 15.2 characters a second, "
        "spaces and punctuation included (its README: 1,308,674 characters in 23:55:17), and "
        "one reader's rate varies far less than 2x; a truncated or neighbouring transcript is "
        "off by about 2x or more. A judgement, not a measurement: speakers of a multi-speaker "
        "corpus differ more.",
        unit="ratio",
        valid=FACTOR,
    )
    speech_char_rate_min_items: int = threshold(
        10,
        "The median needs 10 measurable pairs: with fewer, two or three mismatched pairs move "
        "it far enough to hide themselves (a median of 10 survives 4 outliers).",
        unit="items",
        valid=count(1),
    )
    # A fraction of full scale: 1 is the rails themselves.
    speech_clip_level: float = threshold(
        0.999,
        "A sample within 0.01 dB of full scale (0.999) is at the rails: int16 full scale is "
        "32767/32768 = 0.99997, and 0.1% leaves room for dither on a clipped plateau. At 99% "
        "instead, the top of every loud peak of clean 48 kHz speech normalised to 0 dBFS would "
        "count (a 150 Hz sine stays above 0.99 for 14 samples at 48 kHz, above 0.999 for 4).",
        unit="ratio",
        valid=Range(float, 0.0, 1.0, lo_open=True),
    )
    speech_clip_run: int = threshold(
        3,
        "Only runs of 3 or more consecutive such samples count: Audacity's Analyze > Find "
        'Clipping default ("Start threshold ... default 3 samples"). A clean peak at full '
        "scale stays above the level for at most 2 samples at 16-22 kHz when its frequency is "
        "150 Hz or more (3 at 100 Hz and 22.05 kHz; longer at 48 kHz, which the share below "
        "absorbs).",
        unit="samples",
        valid=count(1),
    )
    speech_clip_share: float = threshold(
        0.001,
        "A clip is reported when over 0.1% of its samples are clipped: ~22 samples a second at "
        "22.05 kHz, several flattened peaks in every second of speech, audible as distortion; "
        "the few peak samples of clean audio normalised to full scale stay far below it (a "
        "dozen loud peaks of 4 samples in a 5 s clip at 48 kHz is 0.02%). A judgement, not a "
        "measurement.",
        unit="share",
        valid=SHARE,
    )
    # 24-bit PCM spans 144 dB; 300 dB (a power ratio of 1e-30) is below any recording's
    # noise floor, and far above it 10**(-dB/10) underflows to 0.
    speech_silence_db: float = threshold(
        45.0,
        "A 10 ms frame is silent when its power is 45 dB below the clip's loudest frame: the "
        "default `trim_db` of Coqui TTS's BaseAudioConfig, which trims with "
        "librosa.effects.trim on the same relative scale (librosa's own default, 60 dB, trims "
        "less). The weakest speech sounds sit about 28 dB below the strongest vowels "
        '(Fletcher, "Speech and Hearing in Communication", 1953: "th" in "thin" vs "aw" in '
        '"talk"), so 45 dB leaves room before soft consonants would be counted as silence.',
        unit="dB",
        valid=Range(float, 0.0, 300.0, lo_open=True),
    )
    speech_silence_max_s: float = threshold(
        1.0,
        "More than 1 s of silence before the first or after the last sound: longer than a "
        "pause between sentences in read speech, so it is padding or a missed cut rather than "
        "a breath. A judgement, not a measurement.",
        unit="seconds",
        valid=NONNEG,
    )
    tok_min_char_coverage: float = threshold(
        0.9995,
        "Characters of the transcripts the vocabulary must cover (share of occurrences, spaces "
        "excluded): SentencePiece's own default `character_coverage=0.9995`, which its docs "
        "recommend for large character sets (1.0 for small alphabets); a tokenizer trained on "
        "these transcripts with the defaults passes, one trained on other text does not.",
        unit="share",
        valid=SHARE,
    )
    tok_max_unk_share: float = threshold(
        0.01,
        "Unknown tokens above 1% of all tokens: 20 times the 0.05% of characters that the "
        "default coverage leaves out, and at ~30 tokens a sentence an unknown token in every "
        "third transcript: the tokenizer does not fit the text, it is not a rare symbol.",
        unit="share",
        valid=SHARE,
    )
    tok_max_tokens_per_second: float = threshold(
        12.5,
        "12.5 tokens per second of audio is the frame rate of an 8x-subsampling encoder "
        "(FastConformer, the encoder of NeMo's current ASR models: \"8x depthwise-separable "
        'convolutional downsampling" of 10 ms feature frames = 80 ms per frame). CTC needs at '
        "least one frame per token, so an utterance above it cannot be aligned. A 4x Conformer "
        "has 25 frames/s.",
        unit="tokens/second",
        valid=POSITIVE,
    )

    # --- compare (a run against a known-good baseline of the same task) -------------------
    cmp_min_points: int = threshold(
        10,
        "Levels are compared only when both sides have at least 10 finite loss points over the "
        "steps they share (the shape rules' minimum plus room for a 10% end window).",
        unit="points",
        valid=count(2),
    )
    cmp_floor_ratio: float = threshold(
        2.0,
        "A floor or an end level twice the baseline's is far outside seed-to-seed variation "
        "(the two healthy example seeds differ by under 1.5x at their floors); a run on "
        "shuffled labels sits at 5-20x.",
        unit="ratio",
        valid=FACTOR,
    )
    cmp_end_ratio: float = threshold(2.0, see="cmp_floor_ratio", unit="ratio", valid=FACTOR)
    cmp_min_gap_share: float = threshold(
        0.1,
        "...and the gap must be a material share of what the baseline learned (its start minus "
        "its floor or end): near a floor of almost zero a ratio of two small numbers says "
        "little (the gallery's healthy torch seeds reach 0.043 and 0.089 from 1.39, a 2.07x "
        "ratio but a 3% share), while shuffled labels miss 60-80% of it.",
        unit="ratio",
        valid=SHARE,
    )
    cmp_eval_ratio: float = threshold(
        1.2,
        "An eval loss that ends 20% above the baseline's, on the same held-out data at the same "
        "point of training, is beyond what a seed changes in a run large enough for the gap to be "
        "material (cmp_min_gap_share decides small tasks: the gallery's healthy Coqui seeds end "
        "their eval loss at 0.20-0.27, 1.35x apart, a 5% share of what they learned); a train "
        "loss that counted unmasked padding tokens (a new user's tiny language model) ended 34% worse on held-out data than its baseline.",
        unit="ratio",
        valid=FACTOR,
    )
    # 1 would FAIL a run that improves exactly as much as its baseline, minus noise.
    cmp_improve_deficit: float = threshold(
        0.25,
        "Improving less than a quarter of what the baseline improved over the same steps.",
        unit="ratio",
        valid=Range(float, 0.0, 1.0, hi_open=True),
    )
    cmp_gradnorm_ratio: float = threshold(
        5.0,
        "Gradient norms five times the baseline's: well beyond batch-to-batch variation.",
        unit="ratio",
        valid=FACTOR,
    )

    # --- history (a run against the recent healthy runs of its experiment) ---------------
    # A median and a MAD of fewer than 3 values are no robust spread at all.
    hist_min_runs: int = threshold(
        3,
        "A median and a median absolute deviation (MAD) need at least 3 runs: with 2 the median "
        "is their mean and the MAD half their distance, which one odd run moves at will.",
        unit="runs",
        valid=count(3, 1000),
    )
    hist_last_runs: int = threshold(
        10,
        "The last 10 healthy runs of the experiment: enough for a MAD that one odd run does not "
        "move, recent enough that the code and the data they ran on are close to the run's.",
        unit="runs",
        valid=count(3, 1000),
    )
    hist_mad_z: float = threshold(
        4.0,
        "A level more than 4 robust standard deviations (1.4826 x MAD) of the recent runs beyond "
        "their median: a healthy seed lies beyond 4 with a chance of about 3e-5 (one-sided) under normal "
        "seed-to-seed variation, and the MAD of a few runs is itself uncertain, hence not 3.",
        unit="z",
        valid=SIGMAS,
    )
    hist_min_gap_share: float = threshold(
        0.5,
        "...and the gap must be over half of what the recent runs learned (their median start "
        "minus their median floor or end; for the improvement, half their median improvement): "
        "the run kept more than half of the loss its siblings removed. Seeds of one "
        "configuration can agree so closely that their MAD is almost 0 (the gallery's HF seeds "
        "reach floors 1.228, 1.276 and 1.228 from 3.5), so a spread alone would flag any "
        "difference. Measured on the gallery against its healthy seeds (five frameworks): its "
        "cosine-restart, converged, slow-loader, spike and fp16 runs of the same task stay under "
        "0.47 of it under at least one alignment, its small-batch runs (another configuration) "
        "under 0.40; its shuffled-label runs miss 0.58-3.2 of it under both.",
        unit="ratio",
        valid=Range(float, 0.0, 1.0, lo_open=True),
    )
    hist_live_min_share: float = threshold(
        0.2,
        "A run still training is held against the envelope of its siblings only past 20% of "
        "their length: before it, they have learned too little for a gap to stand out of the "
        "noise of one small-batch step.",
        unit="share",
        valid=SHARE,
    )

    # --- intent ---------------------------------------------------------------------------
    incomplete_share: float = threshold(
        0.05,
        "A log whose last step is more than 5% short of the declared end did not finish (HF "
        "logs every logging_steps, so the last log may sit a few steps before max_steps).",
        unit="share",
        valid=SHARE,
    )

    # --- overfitting -------------------------------------------------------------------
    overfit_min_evals: int = threshold(
        4,
        "At least 4 evaluations; the median of the last 3 above 1.2x the eval minimum, with at "
        "least 3 evaluations after it, while the train loss kept falling.",
        unit="evaluations",
        valid=count(2),
    )
    overfit_ratio: float = threshold(1.2, see="overfit_min_evals", unit="ratio", valid=FACTOR)
    overfit_noise_z: float = threshold(
        2.0,
        "The eval loss must have risen from its minimum by more than 2 of its own noise units "
        "(log scale, point noise from second differences, which a trend does not inflate): "
        "the lowest of n noisy evaluations sits 1.5-2.3 units below their level (n = 10 to 40), "
        "so a flat eval loss at 15% noise reached 1.2x its minimum at 16 of 20 generated "
        "40-evaluation runs whose train loss fell (a new user's 12-epoch Keras twins at 7%: 3 "
        "of 20). Measured on generated runs (8 to 40 evaluations, noise 2-15%, 20 seeds each: "
        "tests/rules/test_overfit_noise.py): flat eval losses warn on 36 of 240 (57 without "
        "the gate); rises of 1.3x are caught on 215 of 240 (236), of 1.6x on 234 (239), of 2x "
        "on 239 (240); every overfit run of the corpus keeps its WARN. At 2.5 units a noisy "
        "corpus overfit (eval 0.232 at its minimum, 0.29 over its last evaluations, 11% noise) "
        "is lost. A judgement between the two kinds of error, for a WARN.",
        unit="z",
        valid=NONNEG,
    )
    overfit_tail_evals: int = threshold(3, see="overfit_min_evals", unit="evaluations", valid=count(1))
    overfit_min_shift_margin: float = threshold(
        0.5,
        "For an eval loss judged against its lowest evaluation, the rise must also clear the "
        "expected shift of the lowest of its n evaluations below their level (Blom's "
        "approximation of the expected extreme of n normals: 1.5 noise units at 10, 2.2 at 40, "
        "3.2 at 1,000, 3.5 at 3,000) plus this many noise units; overfit_noise_z's floor of 2 "
        "binds up to about 12 evaluations. Measured on flat eval losses (lognormal noise, 400 "
        "generated runs a cell, with the 1.2x bar): a fixed 2 units warned on 18% of them at 10 "
        "evaluations and 15% noise, 36% at 20, 55% at 40, 74% at 100, 94% at 1,000, 99% at "
        "3,000 (at 5% noise, where the 1.2x bar binds first: 1%, 2%, 4%, 8%, 27%, 42%); with the "
        "shift and this margin 18%, 25%, 28%, 27%, 28%, 29% (1%, 2%, 4%, 8%, 22%, 24%): the rate "
        "the floor was set for at 10-20 evaluations, at every length (a new user's converged "
        "regressions and PINN curves, 500-3,000 evaluations, warned at 1.2-2.1x their minimum). "
        "0.5 keeps every overfit run of the corpus: the noisiest, hf-dnabert-overfit, rises 2.22 "
        "units over 11 evaluations, against a gate of 2.09 there.",
        unit="z",
        valid=NONNEG,
    )

    pref_collapse_ratio: float = threshold(
        2.0,
        "TP-PREF-CHOSEN-COLLAPSE (a WARN): the chosen answers' log-probability ending twice "
        "as far from zero as it started or more. Measured on the corpus's DPO logs (medians "
        "of the first and last tenths): the healthy runs' chosen log-probability ends at "
        "0.99-1.00x its start (the rejected one's at 1.03-1.08x); a new user's "
        "over-optimised run ended at 6.7x (-147 -> -991) with its margin at 27 and its loss "
        "at 0.000.",
        unit="ratio",
        valid=FACTOR,
    )
    pref_collapse_min_points: int = threshold(
        10,
        "TP-PREF-CHOSEN-COLLAPSE: the fewest logged points of the chosen log-probability, so "
        "that its first and last tenths are medians of 3 or more of the run's own points.",
        unit="points",
        valid=count(4),
    )
    accuracy_collapse_share: float = threshold(
        0.4,
        "TP-ACCURACY-COLLAPSE (a WARN): a train and a held-out accuracy each ending 40% or "
        "more below their best level. Overfitting lowers the held-out accuracy while the "
        "train accuracy rises; mixup or a harder curriculum lowers the train accuracy alone. "
        "Measured on the corpus's 251 logs (the same best-median-of-3 and end-third levels): "
        "no healthy run has either accuracy fall more than 25% (a reward model's batch "
        "accuracy on a few pairs, 1.0 -> 0.75), overfitting runs' held-out accuracies fall "
        "11-20%, and no log has both fall 40%. A new user's real Keras model at Adam lr 20 "
        "went 0.42 -> 0.15 (train) and 0.29 -> 0.16 (validation, 44%) over 12 epochs while its "
        "cross-entropy fell 13,016 -> 5.8, and PASSed.",
        unit="share",
        valid=SHARE,
    )
    accuracy_collapse_min_points: int = threshold(
        6,
        "TP-ACCURACY-COLLAPSE: the fewest points of each accuracy. Below 6, the best median "
        "of 3 and the end third overlap or rest on one or two points.",
        unit="points",
        valid=count(4),
    )
    overfit_evals_after_min: int = threshold(3, see="overfit_min_evals", unit="evaluations", valid=count(1))
    overfit_slow_ratio: float = threshold(
        1.05,
        "A durable rise needs less height: an eval loss that climbs at every evaluation after "
        "its minimum, or with a significant trend (Mann-Kendall z >= dead_trend_z), by at "
        "least 5% is overfitting even below the 1.2x bar (a +12% creep over ten Keras epochs "
        "with val accuracy flat). 5% is above the evaluation-to-evaluation wiggle of a fixed "
        "eval set, and the trend or the strict climb rules out one noisy evaluation.",
        unit="ratio",
        valid=FACTOR,
    )

    # --- failure signatures ------------------------------------------------------------
    osc_min_points: int = threshold(
        40,
        "Growing oscillation: 40 points leave 34 residuals after the 10% warm-up (the last two "
        "points have no right-hand neighbours), enough for 8 windows of 4 (the trend test "
        "needs at least 6) and thirds of 11 or 12.",
        unit="points",
        valid=count(10),
    )
    # 1 would leave no points after the warm-up.
    osc_warmup_share: float = threshold(
        0.1,
        "The first 10% of the run is warm-up: the loss falls fastest and the learning rate is "
        "still moving there, so its swings say nothing about stability.",
        unit="share",
        valid=Range(float, 0.0, 1.0, hi_open=True),
    )
    osc_growth: float = threshold(
        2.0,
        "The median swing of the last third at least 2x that of the first third, measured both "
        "in absolute terms and relative to the local level, and both must grow: a loss that "
        "approaches a fixed noise floor has a relative swing that grows while the absolute one "
        "does not, and a rising loss with proportional noise has an absolute swing that grows "
        "while the relative one does not; neither is an oscillation. On its own 2x is reached "
        "by chance under constant-amplitude noise in 10% of 40-point runs (thirds of 12 "
        "residuals), 6% of 60-point and 0.4% of 200-point ones (simulated); together with the "
        "trend and alternation tests below, none of 24,000 simulated constant-amplitude runs "
        "of 40-200 points fired, noisy or alternating.",
        unit="ratio",
        valid=FACTOR,
    )
    osc_trend_z: float = threshold(
        2.5,
        "The window amplitudes rise consistently: a Mann–Kendall z of 2.5 (one-sided p 0.006) "
        "on both scales, so one late burst is not a growing oscillation.",
        unit="z",
        valid=SIGMAS,
    )
    osc_min_alternation: float = threshold(
        0.8,
        "The residuals alternate: the loss crosses its local level between at least 80% of "
        "consecutive points in the last third. A step size past the edge of stability "
        "overshoots to the other side at every update, which gives close to 100%; independent "
        "noise gives 62% on average (the residuals of a 4-neighbour median are slightly "
        "anti-correlated) and reaches 80% by chance in 13% of 11-pair last thirds (40-point "
        "runs), 4% of 17-pair ones and never in 60-pair ones (simulated).",
        unit="share",
        valid=SHARE,
    )
    # The first and the last 10% must hold 3 points each besides the ignored first norm.
    vanish_min_points: int = threshold(
        10,
        "Vanishing gradient: 10 norms, so that the first 10% and the last 10% (at least 3 "
        "each, the first logged norm ignored) do not overlap.",
        unit="points",
        valid=count(7),
    )
    vanish_ratio: float = threshold(
        0.01,
        "The late median below 1% of the early one: a hundredfold collapse. Measured on the 26 "
        "shared-corpus runs with gradient norms: healthy runs keep the late median at 8.7% of "
        "the early one or more (the lowest is the tiny-loss SmolVLM fine-tune, whose loss fell "
        "99%); the only ratio below 1% (0.8%, the lr_hot gallery run) compares norms that died "
        "after a blow-up with the blow-up's own norms, and its loss condition keeps it out "
        "(TP-DIVERGE judges that run). The loss condition (TP-DEAD-RUN's window and share) "
        "keeps converged runs out in general.",
        unit="ratio",
        valid=SHARE,
    )
    vanish_stretch_share: float = threshold(
        0.5,
        "A run that learned first and then lost its gradient (dead ReLUs after a bad update, "
        "saturated units) is judged on the stretch after the norm fell below vanish_ratio of its "
        "early level: that stretch must hold at least half of the run's loss points, so the "
        "collapse held for most of the run, not a last stretch where a schedule ends. A "
        "minibatch gradient does not vanish at a level: each batch's gradient keeps the noise "
        "of its examples, so healthy runs keep their norm at 8.7% of its early level or more "
        "(vanish_ratio); a reviewer's generated runs whose norm fell 1.6 -> 1.6e-7 while the "
        "loss held 2.15 for 75% of the run only PASSed. The bar there is vanish_ratio squared "
        "(four orders of magnitude): a norm inflated in its first steps (a transformer's 40-150 "
        "beside 0.3 later) falls two in a healthy run, and so does a frozen backbone's "
        "head-only phase, on purpose.",
        unit="share",
        valid=SHARE,
    )
    plateau_min_points: int = threshold(
        34,
        "Early plateau: the first 30% of the run must hold at least 10 points for its slope to "
        "mean something, so the run needs 34.",
        unit="points",
        valid=count(10),
    )
    # The head and the rest must both hold points.
    plateau_head_share: float = threshold(
        0.3,
        '"Early" is the first 30% of the run: long enough that a normal warm-up (a few % of '
        "the run) plus the fast first fall are inside it, short enough to leave most of the "
        "run to show the decrease that came later.",
        unit="share",
        valid=Range(float, 0.0, 1.0, lo_open=True, hi_open=True),
    )
    plateau_t: float = threshold(
        2.5,
        "The head held its level: the slope t-statistic of the log of the loss on the step is "
        "above -2.5 (a decrease significant at one-sided p 0.006 is a fall, however early), "
        "and the fitted change over the head is under TP-DEAD-RUN's 5% (a noisy head can fall "
        "10% without it being significant; that is not a plateau). Standard errors are widened "
        "for the lag-1 autocorrelation of the head's residuals: a running-average loss is "
        "autocorrelated, and plain least squares would find trends in its drift.",
        unit="t",
        valid=SIGMAS,
    )
    plateau_accel_t: float = threshold(
        3.0,
        "... and the rest of the run falls faster than the head did, by at least 3 standard "
        "errors of the difference of the two slopes: no significant decrease alone is what a "
        "noisy learner shows too, and it falls no faster later, while a healthy curve falls "
        "fastest first. 3 rather than 2.5 (one-sided p 0.0013) because every noisy run passes "
        "the first test, so this one carries the false-alarm rate. On the shared corpus no run "
        "passes both; on 9,000 simulated healthy curves (exponential, power-law and "
        "step-schedule decays; normal, heavy-tailed and autocorrelated noise of 0.5-40%) 4 "
        "fired, all step-schedule curves whose first 30% fell less than 5%.",
        unit="t",
        valid=SIGMAS,
    )
    # --- a return to the untrained level (TP-LOSS-RESET) --------------------------------------
    reset_min_points: int = threshold(
        40,
        "A loss that went back to where the run started: 40 points, 20 block medians of 5% of "
        "the run (blocks of at least 3 points), so that a fall, a return and a second fall "
        "each span several blocks and one noisy block decides nothing.",
        unit="points",
        valid=count(8),
    )
    reset_min_block: int = threshold(
        5,
        "Block medians of at least 5 points (a run of 100 points or more): the median of 3 "
        "spiky small-batch losses jumps back toward the start by chance (a healthy GAT at "
        "batch 1 and a Keras run at batch 4 did), one of 5 ignores two outliers.",
        unit="points",
        valid=count(3),
    )
    reset_min_fall: float = threshold(
        0.3,
        "The run must first have fallen 30% below its start (the median of its first 3 "
        "points; block medians of 5% of the run): a return to the start is told from noise "
        "only against a fall far larger than a block median's wobble (a few percent on the "
        "corpus's healthy logs). Engineering choice.",
        unit="share",
        valid=SHARE,
    )
    reset_regain: float = threshold(
        0.65,
        "The loss regains 65% or more of the run's fall so far, in log-loss (a run at 1.61 "
        "that fell to 0.60 and is back at 1.14 or above): the model is back near its untrained "
        "level. Read on blocks of 5% of the run: the level reached is the lowest mean of 3 "
        "neighbouring blocks (the lowest single block of many sits low by chance), the return "
        "the mean of 2 blocks (weights that start over relearn about as slowly as they first "
        "learned, while one block of a noisy healthy run jumps by chance: the first version, "
        "on single blocks, warned on 28 of 10,000 generated healthy runs, this on 0 of 3,000). "
        "Generated runs that start over at 30-70% of the run and relearn at their first pace "
        "read 0.65-0.96 (120 to 3,000 points, noise 1-15%); a helper's run whose resume "
        "skipped the weights (1.61 -> 0.60 -> 1.6 -> 0.64) reads 0.90. Giving back 60% or 30% "
        "of the fall (a warm restart, a harder stage) never reached it.",
        unit="share",
        valid=SHARE,
    )
    reset_peak_ratio: float = threshold(
        1.5,
        "That block median at most 1.5x the start: an untrained model sits near the start "
        "level, while a blow-up far above it is a divergence or a spike (TP-DIVERGE, "
        "TP-LOSS-SPIKE).",
        unit="ratio",
        valid=FACTOR,
    )
    reset_relearn: float = threshold(
        0.5,
        "After the return, the run falls again by at least half its first fall (the end of "
        "the run, the median of its last 10%, in log-loss): it relearns what it had. A rise "
        "that stays is TP-DIVERGE's.",
        unit="share",
        valid=SHARE,
    )

    spike_min_points: int = threshold(
        20,
        "Loss spike: 20 points, so that a spike has its 5-point level before it, up to 5 burst "
        "points and 5 points after it to settle.",
        unit="points",
        valid=count(3),
    )
    spike_window: int = threshold(
        10,
        "The level before a spike is the median of up to the 10 points before it (at least 5): "
        "local, and steady against a spike of up to 5 points inside it.",
        unit="points",
        valid=count(1),
    )
    spike_factor: float = threshold(
        3.0,
        "A spike is a point more than 3x the level before it and more than 6 noise sigmas "
        "above it (noise of the log of the loss, as TP-DIVERGE), so a very noisy curve's "
        "ordinary swings are not spikes. The factor alone does not separate harm from noise: "
        "on the shared corpus the healthy GPT run logged every step and the PINN run jump to "
        "3.7-28x their trailing level and recover fully; the recovery test below does.",
        unit="ratio",
        valid=FACTOR,
    )
    spike_noise_z: float = threshold(6.0, see="spike_factor", unit="z", valid=SIGMAS)
    spike_max_points: int = threshold(
        5,
        "A burst of at most 5 consecutive points: longer, and it is a new level (TP-DIVERGE), not a spike.",
        unit="points",
        valid=count(1),
    )
    spike_excursion_factor: float = threshold(
        10.0,
        "A burst longer than 5 points is still a spike when it is an excursion of an order of "
        "magnitude or more (10x the level before it) that lasts at most a quarter of the run "
        "and that the run comes back from: a loss that blows up a hundredfold and recovers "
        "within a few epochs is a spike to warn of, not a level (and not a divergence, which "
        "reads where the run ends). Healthy noise does not stay 10x above its level for more "
        "than a point or two. The same factor lets a burst within the first 5 points count "
        "against the median of however few points precede it: no descent or warm-up "
        "multiplies the loss 10x and comes back (in the zoo, 13 of 15 missed spikes sat "
        "among the first 5 logged points).",
        unit="ratio",
        valid=FACTOR,
    )
    spike_excursion_share: float = threshold(0.25, see="spike_excursion_factor", unit="share", valid=SHARE)
    blowup_hump_factor: float = threshold(
        3.0,
        "TP-BLOWUP-NO-GAIN (a WARN): a loss whose block medians rose to 3x its first logged value and "
        "that ends no lower than that first value blew up and never recovered past its "
        "initialisation. A healthy run's first logged loss is its highest level or close to it "
        "(an untrained model's); warm-up bumps in the corpus's healthy files stay under 2x "
        "the first loss, and those runs end far below it. A new user's tiny GPT-2 at Adam lr "
        "0.5 went 3.49 -> 13 (block medians 3.7x) -> 3.58 (ln 32, a uniform guess over its "
        "32 tokens) and PASSed; an MLP at SGD lr 10 went 1.39 -> 1e23 -> 2.2 with 5 of its 6 "
        "tensors dead. The end must be back under half the peak (a hump; a loss that held "
        "high is TP-DIVERGE's).",
        unit="ratio",
        valid=FACTOR,
    )
    rescale_window_points: int = threshold(
        8,
        "TP-LOSS-RESCALED: the points each side of a jump whose medians are the levels before "
        "and after it (the loss's and the gradient norm's). Short enough that a run still "
        "falling before the jump keeps one level over the window (8 logs of a curve that "
        "halves over 200 logs move 3%), long enough for a median to stand 1/sqrt(8) of a "
        "point's noise off its level.",
        unit="points",
        valid=count(3),
    )
    rescale_min_points: int = threshold(
        5,
        "TP-LOSS-RESCALED: the fewest points of the loss and of the gradient norm on each "
        "side of the jump. Below 5 a median of the gradient norm is a point or two of it, "
        "and holding its level cannot be told from moving with the loss.",
        unit="points",
        valid=count(3),
    )
    rescale_noise_ratio: float = threshold(
        2.0,
        "TP-LOSS-RESCALED: the point-to-point noise of the log loss from the jump to the end "
        "within this factor of its noise before the jump. A loss multiplied by a constant "
        "keeps its relative noise exactly; the estimate (a MAD of first differences) from 20 "
        "points a side scatters by about 1.4x either way, so 2x leaves room for that and not "
        "for a model whose loss turned noisy (a broken model's batches disagree more).",
        unit="ratio",
        valid=FACTOR,
    )
    blowup_hump_share: float = threshold(
        0.02,
        "...with 2% of the points (5 or more) above that bar, and a block median (5% of the "
        "run) there: a sustained excursion, not scattered spikes (a fine-tune at its floor "
        "with batch spikes 3x above its first loss has ordinary block medians). The two runs "
        "above had 21 points of 300 (7%) and 13 of 300 (4%) above the bar.",
        unit="share",
        valid=SHARE,
    )
    blowup_wreck_factor: float = threshold(
        1e3,
        "TP-BLOWUP-ENDS-HIGH (a FAIL): a blow-up of blowup_points losses or more 1000x above "
        "both the first loss and the level the run ends at. No healthy supervised run logs "
        "losses a thousandfold above where it started and then ends above that start, and no "
        "logging artefact makes one that comes back down: a running average started at zero "
        "climbs at most 1/(1 - b) from its first log (1000x needs b = 0.999 logged from step "
        "1) and then stays at the loss's level, not a thousandfold below its top. The new "
        "user's SGD at lr 30 went 1.398 -> 1.9e19 -> ends 9.8 (ln 4 = 1.39) and drew only "
        "TP-BLOWUP-NO-GAIN's WARN; the MLP at SGD lr 10 above went 1.39 -> 1e23 -> 2.2; helper "
        "93's SGD at lr 50 went 1.40 -> 8.7e24 in six steps and held 13-22. With that evidence "
        "the end need only stand above the first loss by diverge_ratio and by diverge_noise_z "
        "sigmas of the noise after the last blow-up point.",
        unit="ratio",
        valid=FACTOR,
    )
    blowup_share: float = threshold(
        0.2,
        "TP-LOSS-BLOWUPS needs 20% of the second half of the run tenfold above the starting "
        "level. Healthy runs spike on a few percent of their points at most (the corpus's "
        "healthy files: p90 5.8% of points more than 4 sigmas up, max 15%, and those up against "
        "their local level, not tenfold above the untrained start); a data-parallel run at SGD "
        "lr 20 logs 1e14-1e16 on 40% of its late points between ordinary ones.",
        unit="share",
        valid=SHARE,
    )
    blowup_bursts: int = threshold(
        3,
        "...in at least 3 separate bursts: a loss that blows up again and again. One excursion "
        "the run comes back from, however long, is a spike to warn of (TP-LOSS-SPIKE; the zoo's "
        "recovering blow-ups of two orders of magnitude), and two may be a spike and its echo.",
        unit="bursts",
        valid=count(1),
    )
    eval_spike_min_evals: int = threshold(
        8,
        "TP-EVAL-SPIKE needs 8 evaluations: 3 before a burst give its level, 1 after shows the "
        "return, and a burst of a quarter of the evaluations (spike_excursion_share) is then at "
        "least 2 evaluations long. An eval loss is measured on a fixed set, so the tenfold bar "
        "(spike_excursion_factor) is no noise of it: the corpus's YOLOv5 run whose validation "
        "collapsed during warm-up jumps 300x for 3 epochs.",
        unit="evaluations",
        valid=count(4),
    )
    spike_settle_points: int = threshold(
        5,
        "The level after the spike is the lowest median of any 5 consecutive points from the "
        "end of the burst to the end of the log: a slow recovery still counts as recovery, and "
        "5 points after the spike are needed to read a level at all. The lowest of many such "
        "medians sits below the true level by chance, so the rule errs towards silence.",
        unit="points",
        valid=count(1),
    )
    spike_worse_ratio: float = threshold(
        1.1,
        "Left worse: that level more than 1.1x the level before the spike, and above it by "
        "more than 3 standard errors of the two levels (as TP-DIVERGE's noise gate).",
        unit="ratio",
        valid=FACTOR,
    )
    spike_worse_z: float = threshold(3.0, see="spike_worse_ratio", unit="z", valid=SIGMAS)

    def __init__(self, **values: object) -> None:
        defaults = _DEFAULTS
        unknown = values.keys() - defaults.keys()
        if unknown:
            raise TypeError(f"Thresholds() got an unexpected keyword argument {sorted(unknown)[0]!r}")
        for name, default in defaults.items():
            object.__setattr__(self, name, values.get(name, default))

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in _DEFAULTS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self is other or self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        changed = ", ".join(f"{n}={getattr(self, n)!r}" for n, d in _DEFAULTS.items() if getattr(self, n) != d)
        return f"Thresholds({changed})"

    def with_overrides(self, overrides: Mapping[str, object]) -> "Thresholds":
        """A copy with some values replaced, each checked against its :data:`RANGES` entry
        and the result against :data:`CONSTRAINTS`.

        Raises:
            ThresholdError: unknown name; a value that is not a number (bools are not);
                a fraction for a whole-number threshold; a non-finite value; a value
                outside the threshold's range, or breaking a constraint between two
                thresholds. The message names the key, the range and the unit.
        """
        fields = {f.name for f in dataclasses.fields(self)}
        clean: dict[str, object] = {}
        for key, val in overrides.items():
            if key not in fields:
                raise ThresholdError(f"unknown threshold {key!r}; known: {', '.join(sorted(fields))}")
            clean[key] = range_of(key).check(key, val, unit_of(key))
        out = dataclasses.replace(self, **clean)
        for c in CONSTRAINTS:
            if (c.a in clean or c.b in clean) and not c.holds(getattr(out, c.a), getattr(out, c.b)):
                raise ThresholdError(
                    f"threshold {c.a!r} ({getattr(out, c.a)!r}) must be {c.text} ({c.b!r} is {getattr(out, c.b)!r})"
                )
        return out

    def as_dict(self) -> dict:
        """Every threshold by name."""
        return dataclasses.asdict(self)


#: Every field's default, by name, in the order of the fields.
_DEFAULTS: dict[str, object] = {f.name: f.default for f in dataclasses.fields(Thresholds)}

DEFAULT = Thresholds()


def names() -> list[str]:
    """Every threshold name, in the order of the fields."""
    return [f.name for f in dataclasses.fields(Thresholds)]


def is_threshold(name: str) -> bool:
    """Whether ``name`` is a field of :class:`Thresholds`."""
    return name in _FIELDS


def reason(name: str) -> str:
    """Why threshold ``name`` has its default: the ``why`` it was declared with, or that of
    the field its ``see`` names.

    Raises:
        ThresholdError: ``name`` is not a threshold, or its ``see`` names none.
    """
    meta = _FIELDS[name].metadata if name in _FIELDS else None
    if meta is None:
        raise ThresholdError(f"unknown threshold {name!r}")
    if "see" in meta:
        target = _FIELDS.get(meta["see"])
        if target is None or "why" not in target.metadata:
            raise ThresholdError(f"threshold {name!r}: see={meta['see']!r} names no threshold with a reason")
        return target.metadata["why"]
    return meta["why"]


def unit_of(name: str) -> str:
    """The unit threshold ``name`` was declared in, a key of :data:`UNITS`.

    Raises:
        ThresholdError: ``name`` is not a threshold.
    """
    if name not in _FIELDS:
        raise ThresholdError(f"unknown threshold {name!r}")
    return _FIELDS[name].metadata["unit"]


def shown(value: int | float) -> str:
    """A default as the documentation writes it: ``repr``, with an exponent's leading zero
    dropped (``1e-6``, not ``1e-06``)."""
    return re.sub(r"e([-+])0(\d)$", r"e\1\2", repr(value))


_FIELDS = {f.name: f for f in dataclasses.fields(Thresholds)}


#: The valid range of every threshold, by name, in the order of the fields. Where the
#: bound is not that of its kind, the comment says where it comes from.
RANGES: dict[str, Range] = {f.name: f.metadata["valid"] for f in dataclasses.fields(Thresholds)}


@dataclass(frozen=True)
class Constraint:
    """A relation two thresholds must keep: ``holds(value of a, value of b)``; ``text``
    says it in words after "must be"."""

    a: str
    b: str
    holds: Callable[[float, float], bool]
    text: str


#: Relations between thresholds that a rule relies on. Checked when either side is set.
CONSTRAINTS: tuple[Constraint, ...] = (
    # TP-DEAD-RUN reads its first and last windows of dead_window points from the run and
    # cites the steps at both ends of each: a run shorter than a window has no such steps.
    Constraint(
        "dead_min_points",
        "dead_window",
        lambda a, b: a >= b,
        "at least 'dead_window' (each window is read from the run's own points)",
    ),
    # Each block median needs a point.
    Constraint(
        "rl_collapse_min_points",
        "rl_collapse_blocks",
        lambda a, b: a >= b,
        "at least 'rl_collapse_blocks' (a point in every block)",
    ),
    # The tail must leave a start and a peak before it.
    Constraint(
        "rl_collapse_tail_blocks",
        "rl_collapse_blocks",
        lambda a, b: a <= b - 2,
        "at most 'rl_collapse_blocks' - 2 (a start and a peak before the tail)",
    ),
    Constraint(
        "update_ratio_low_log10", "update_ratio_high_log10", lambda a, b: a < b, "below 'update_ratio_high_log10'"
    ),
    Constraint(
        "layer_update_ratio_low_log10",
        "layer_update_ratio_high_log10",
        lambda a, b: a < b,
        "below 'layer_update_ratio_high_log10'",
    ),
    Constraint("speech_min_duration_s", "speech_max_duration_s", lambda a, b: a < b, "below 'speech_max_duration_s'"),
    Constraint("zero_lr_warn_share", "zero_lr_fail_share", lambda a, b: a <= b, "at most 'zero_lr_fail_share'"),
)


def range_of(name: str) -> Range:
    """The declared range of threshold ``name``.

    Raises:
        ThresholdError: ``name`` is not a threshold.
    """
    try:
        return RANGES[name]
    except KeyError:
        raise ThresholdError(f"unknown threshold {name!r}") from None
