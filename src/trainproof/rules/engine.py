"""The engine: runs every registered rule on a RunLog and builds its Report.

The engine, not the rule, decides whether a rule runs: a rule whose needed series is
missing is skipped as ``absent``, one with too few finite points as ``too_few_points``,
one whose data it cannot judge (non-positive values for a ratio rule, a constant series
where variation is needed) as ``degenerate``, and a muted one as ``muted``. A skipped
check is never reported as passed. The rules on the live model probe's keys
(:func:`probe_only`) are left out of the report of a run that holds none of those keys: they
do not apply to a log no probe wrote.

A run still training (``live=True``: the in-loop monitor, the framework callbacks,
``trainproof watch``) is judged on its first points, so a rule that claims the loss made
no progress (one that declares ``min_schedule_share``) needs more there: the run must
declare its schedule (else ``too_little_of_schedule``), and the loss's own noise must be
small enough, over the points seen, for a trend of the rule's bar to stand out of it
(else ``noise``), and a loss that still falls at a pace that improves it by more than the
rule's bar by the scheduled end waits (``still_falling``): see :func:`live_noise_skip`. And a FAIL that rests on the run's noise (a
curve's shape: every group but :data:`EXACT_GROUPS`) is held back, skipped as
``unconfirmed``, until ``live_confirm_checks`` judgements in a row have found it: a run
judged every few steps takes a test at every check, and one test's chance miss on a
noisy small-batch curve is not a fault (see :func:`hold_unconfirmed`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace

import numpy as np

from .._arrays import isin
from ..aliases.vocabulary import words
from ..findings import MUTED, Finding, Level, Report, Skip, is_line_format
from ..runlog import RunLog, Series
from ._checkpoint import best_checkpoint
from ._fmt import num, pct
from ._fmt import step as step_fmt
from ._schedule import fraction_ran, reached_declared_end, still_warming_up
from ._shared import measured_held_out, nan_eval_onset
from ._stats import median, noise_sigma, rounding_step
from .objective_kind import adversarial_pair, detect_objective
from .registry import CannotJudge, Need, Rule, all_rules, canonical_id, get
from .thresholds import DEFAULT, Thresholds

#: How the rules cite where a value is (``(line 12)``); see :meth:`Context.finding`.
_RECORD = re.compile(r"\(line (\d+)\)")


class Context:
    """What a rule's check sees: the run, the thresholds, and a finding factory.

    One judgement's rules share ``shared``: the finite part of each series and any value
    a rule stores with :meth:`memo` (a log of the loss, its noise) are computed once per
    run, not once per rule. Arrays handed out from there are read-only, so no rule can
    change what another one reads.
    """

    def __init__(self, run: RunLog, th: Thresholds, rule: Rule, shared: dict | None = None) -> None:
        self.run = run
        self.th = th
        self.rule = rule
        self.shared = {} if shared is None else shared

    def series(self, name: str) -> Series:
        """The named series (raw values, NaN/Inf kept). The engine guarantees it exists
        when the rule declared it in ``needs``."""
        return self.run.series[name]

    def finite(self, name: str) -> Series:
        """The named series restricted to its finite values (``series(name).finite()``),
        computed once per judgement; its arrays are read-only."""
        return _finite(self.run, self.shared, name)

    def memo(self, key, compute):
        """``compute()``, computed once per judgement under ``key`` (a value depending only
        on the run and the thresholds, shared by the rules that need it)."""
        cache = self.shared.setdefault("memo", {})
        if key not in cache:
            cache[key] = compute()
        return cache[key]

    def has(self, name: str) -> bool:
        return name in self.run.series

    def finding(
        self,
        message: str,
        evidence: str = "",
        data: dict | None = None,
        step: float | None = None,
        line: int | None = None,
    ) -> Finding:
        r = self.rule
        if not is_line_format(self.run.format):
            # A database or binary log has records, not lines: its "(line N)" is a record's index.
            message, evidence = _RECORD.sub(r"(record \1)", message), _RECORD.sub(r"(record \1)", evidence)
        return Finding(
            id=r.id,
            level=r.level,
            message=message,
            evidence=evidence,
            data=dict(data or {}),
            step=step,
            line=None if line is None else int(line),
            source=r.source,
            hint=r.hint_for(self.th),
        )


def _read_only(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


def _finite(run: RunLog, shared: dict, name: str) -> Series:
    """``run.series[name].finite()``, cached in ``shared``, with read-only arrays (views of
    the series' own arrays when every value is finite)."""
    cache = shared.setdefault("finite", {})
    f = cache.get(name)
    if f is None:
        s = run.series[name]
        # A finite sum proves every value finite (one NaN or Inf makes any sum non-finite);
        # an infinite one (an overflow, or a non-finite value) needs the mask.
        with np.errstate(all="ignore"):
            total = np.add.reduce(s.values) if s.values.dtype == np.float64 else np.nan
        if np.isfinite(total):
            f = Series(s.name, s.key, _read_only(s.steps), _read_only(s.values), _read_only(s.lines))
        else:
            m = np.isfinite(s.values)
            f = Series(s.name, s.key, _read_only(s.steps[m]), _read_only(s.values[m]), _read_only(s.lines[m]))
        cache[name] = f
    return f


def _min_points(need: Need, th: Thresholds) -> int:
    mp = need.min_points
    return int(getattr(th, mp)) if isinstance(mp, str) else int(mp)


#: The groups whose FAIL rules rest on exact values, not on a curve judged against its
#: noise: a NaN or Inf, a value exactly zero, a learning rate at or below zero, and the
#: model probe's facts (gradients never reset, a whole ReLU layer dead, replicas apart),
#: which their rules already require at several checks in a row (``model_checks``). One
#: judgement proves them, so a live path stops on the first.
EXACT_GROUPS = frozenset({"nan", "zero", "lr", "model"})


def hold_unconfirmed(
    findings: list[Finding], found_before: Mapping[str, int], th: Thresholds
) -> tuple[list[Finding], dict[str, Skip]]:
    """Split a live judgement's findings into those reported and the FAILs held back.

    A FAIL finding of a rule outside :data:`EXACT_GROUPS` is held (skipped as
    ``unconfirmed``) unless ``found_before[id]`` earlier judgements in a row found it too,
    ``live_confirm_checks`` in all with this one.

    Returns:
        ``(findings kept, {id: Skip})``.
    """
    kept: list[Finding] = []
    held: dict[str, Skip] = {}
    for f in findings:
        r = get(f.id)
        run_of = int(found_before.get(f.id, 0)) + 1
        if f.level is Level.FAIL and r is not None and r.group not in EXACT_GROUPS and run_of < th.live_confirm_checks:
            held[f.id] = Skip(
                "unconfirmed",
                f"found at {run_of} judgement(s) in a row of a run still training; a FAIL from the shape of the "
                f"curve needs {th.live_confirm_checks}: {f.message}",
            )
        else:
            kept.append(f)
    return kept, held


#: The prefix of the keys the live model probe records (``model/params_no_grad``, ...).
PROBE_PREFIX = "model/"


def probe_only(rule: Rule) -> bool:
    """Whether ``rule`` judges only the live model probe's measurements: every series it
    needs is a :data:`PROBE_PREFIX` key. On a run that holds no such key at all (a log no
    probe wrote: every ordinary log) these rules do not apply, and the engine leaves them
    out of the report rather than list them skipped; a probed run that lacks one rule's key
    (activations off) lists that rule skipped as ``absent``."""
    return bool(rule.needs) and all(n.startswith(PROBE_PREFIX) for need in rule.needs for n in need.names)


def no_progress_claim(rule: Rule) -> bool:
    """Whether ``rule`` claims the train loss made no progress: it waits for a share of the
    declared schedule (``min_schedule_share``) and judges the train loss first."""
    return bool(rule.min_schedule_share) and bool(rule.needs) and rule.needs[0].names[0] == "loss"


def live_points_needed(values: np.ndarray, th: Thresholds) -> tuple[int, float]:
    """``(points, noise)``: how many points a run still training must have logged before a
    claim that its loss made no progress may judge it, and the loss's noise that says so.

    The noise is the robust point-to-point noise (:func:`noise_sigma`) of the log of the
    loss (of the loss over its median magnitude when a value is not positive), measured on
    the run itself. Fitted over n points of independent noise s, a trend's total change has
    a standard error of s * sqrt(12 / n); the claim "improved less than
    ``dead_min_improvement``" is evidence only once ``dead_trend_z`` such errors fit inside
    that bar, log(1 + bar): n >= 12 * (z * s / log(1 + bar)) ** 2. Before that a slow but
    healthy learner (Adam at 1e-4, a small batch) and a run that does not learn give the
    same curve; a flat loss (small noise) opens the gate at once.
    """
    v = values[np.isfinite(values)]
    if v.size < 3:
        return th.dead_min_points, 0.0
    if np.all(v > 0):
        s = noise_sigma(np.log(v))
    else:
        scale = float(median(np.abs(v)))
        s = noise_sigma(v) / scale if scale > 0 else 0.0
    bar = math.log1p(th.dead_min_improvement)
    need = 12.0 * (th.dead_trend_z * s / bar) ** 2
    return max(th.dead_min_points, int(math.ceil(need))), s


def live_noise_skip(rule: Rule, run: RunLog, th: Thresholds, shared: dict) -> Skip | None:
    """The typed skip of a no-progress claim (:func:`no_progress_claim`) on a run still
    training: no declared schedule (``too_little_of_schedule``: the share of the run seen
    is unknown, so its first points cannot be told from the whole), or too few points for
    the loss's own noise (``noise``, see :func:`live_points_needed`), or a loss still
    falling at a pace that improves it by more than the claim's bar over the scheduled run
    (``still_falling``, see :func:`still_falling`). ``None`` when it may judge."""
    facts = shared.setdefault("facts", {})
    if "schedule" not in facts:
        facts["schedule"] = fraction_ran(run)
    if facts["schedule"][0] is None:
        return Skip(
            "too_little_of_schedule",
            "the run is still training and declares no schedule (max_steps), so the share of it seen is "
            "unknown: a claim that its loss made no progress waits for the end of the run",
        )
    if "live_points" not in facts:
        facts["live_points"] = live_points_needed(_finite(run, shared, "loss").values, th)
    need, s = facts["live_points"]
    have = int(_finite(run, shared, "loss").values.size)
    if have < need:
        return Skip(
            "noise",
            f"the run is still training and its loss is too noisy yet for a claim of no progress: point-to-point "
            f"noise {num(s)} (log scale) needs {need} points before a change of {pct(th.dead_min_improvement)} "
            f"stands out by {num(th.dead_trend_z)} standard errors; it has {have}",
        )
    if "still_falling" not in facts:
        facts["still_falling"] = still_falling(_finite(run, shared, "loss"), facts["schedule"][1], s, th)
    falling = facts["still_falling"]
    if falling is not None:
        fall, projected, end = falling
        return Skip(
            "still_falling",
            f"the run is still training and its loss still falls: {pct(fall)} over the points seen, beyond the noise; "
            f"at that pace it improves by {pct(projected)} over the run by its scheduled end (step {step_fmt(end)}), "
            f"over the {pct(th.dead_min_improvement)} a claim of no progress is about, so the claim waits",
        )
    return None


def still_falling(loss, end: float | None, noise: float, th: Thresholds) -> tuple[float, float, float] | None:
    """``(fall so far, projected fall over the whole run, scheduled end)`` of a loss that
    is still falling on a run still training, or ``None``.

    ``loss``: the finite train loss seen so far (a :class:`Series`); ``end``: the declared
    last step; ``noise``: the point-to-point noise of the log of the loss. The pace is the
    secant between the medians of the first and the last quarter of the points seen (at
    least 3 each), on the log of the loss: a robust slope that one spike does not move.
    The fall counts when it clears ``dead_trend_z`` standard errors of the two medians
    (1.2533 * noise / sqrt(m) each). The claims of no progress are about the whole run (an
    improvement under ``dead_min_improvement`` from its start to its end): when the fall
    so far, continued at its pace to the scheduled end, improves the loss by more than that
    over the run, the claim cannot be made yet. A slow learner partway through (SGD at a
    small rate on 10 classes: 2.34 -> 2.25 over its first 110 of 300 steps, 2.10 at the
    end) projects 7%; a run that does not learn projects nothing, and a classifier that
    drifts 3% along ln(k) over its whole run projects 3%.
    """
    v, st = loss.values, loss.steps
    if end is None or v.size < 6 or not np.all(v > 0) or not end > st[-1]:
        return None
    q = max(3, v.size // 4)
    y = np.log(v)
    a, b = float(median(y[:q])), float(median(y[-q:]))
    sa, sb = float(median(st[:q])), float(median(st[-q:]))
    fall = a - b
    if not (sb > sa) or fall <= th.dead_trend_z * 1.2533 * noise * math.sqrt(2.0 / q):
        return None
    projected = math.expm1(fall / (sb - sa) * (float(end) - sa))
    if projected <= th.dead_min_improvement:
        return None
    return -math.expm1(-fall), projected, float(end)


def _skip_reason(
    rule: Rule, run: RunLog, th: Thresholds, shared: dict | None = None, live: bool = False
) -> Skip | None:
    shared = {} if shared is None else shared
    facts = shared.setdefault("facts", {})
    for need in rule.needs:
        present = [s for s in need.names if s in run.series]
        if not present:
            return Skip("absent", "no " + " or ".join(need.names) + " series in the log")
        s = run.series[present[0]]
        vals = _finite(run, shared, present[0]).values
        mp = _min_points(need, th)
        counted = vals.size if need.finite else s.values.size
        if counted < mp:
            kind = "finite points" if need.finite else "points"
            return Skip("too_few_points", f"{s.name} has {counted} {kind}; needs {mp}")
        if need.all_finite and vals.size < s.values.size:
            bad = s.values.size - vals.size
            return Skip("degenerate", f"{s.name} has {bad} non-finite value(s); the NaN/Inf rules judge them")
        if need.positive and vals.size:
            key = (present[0], "nonpositive")
            if key not in facts:
                facts[key] = bool(np.any(vals <= 0))
            if facts[key]:
                return Skip("degenerate", f"{s.name} has values <= 0, so ratios of its levels mean nothing")
        if need.signed and vals.size:
            # The complement of ``positive``: a loss with a value at or below 0 (a margin
            # loss's exact zeros among positive values included) is judged here, where the
            # ratio rules cannot judge it.
            key = (present[0], "nonpositive")
            if key not in facts:
                facts[key] = bool(np.any(vals <= 0))
            if not facts[key]:
                return Skip(
                    "not_applicable",
                    f"{s.name} is always above 0: the rules on ratios of its levels judge it",
                )
        if need.varying and vals.size:
            key = (present[0], "constant")
            if key not in facts:
                facts[key] = bool(np.all(vals == vals[0]))
            if facts[key]:
                return Skip("degenerate", f"{s.name} is constant ({num(vals[0])})")
    if rule.min_schedule_share:
        if "schedule" not in facts:
            facts["schedule"] = fraction_ran(run)
        frac, end, source = facts["schedule"]
        least = float(getattr(th, rule.min_schedule_share))
        if frac is not None and frac < least:
            return Skip(
                "too_little_of_schedule",
                f"the log covers {pct(frac)} of the scheduled run (step {step_fmt(run.step_range[1])} of "
                f"{step_fmt(end)}, from {source}); this check needs {pct(least)}",
            )
    if rule.after_warmup and "lr" in run.series:
        if "warmup" not in facts:
            # A run that reached its declared end is judged as it ended: a warm-up that lasts
            # the whole run (TP-WARMUP-UNFINISHED says so) leaves no later stretch to wait for.
            facts["warmup"] = reached_declared_end(run) is None and still_warming_up(
                _finite(run, shared, "lr").values, th.warmup_rising_points
            )
        if facts["warmup"]:
            return Skip(
                "warmup",
                f"the learning rate is still rising at the last logged step (its last "
                f"{th.warmup_rising_points} values increase): warm-up has not ended",
            )
    if live and no_progress_claim(rule) and "loss" in run.series:
        return live_noise_skip(rule, run, th, shared)
    return None


def _neighbours(v: np.ndarray, mask: np.ndarray, k: int) -> np.ndarray:
    """The finite positive values of ``v`` within ``k`` places of a True of ``mask`` (shape
    ``(n,)`` both)."""
    n = v.size
    c = np.r_[0, np.cumsum(mask)]
    i = np.arange(n)
    near = c[np.minimum(i + k + 1, n)] - c[np.maximum(i - k, 0)] > 0
    ok = near & np.isfinite(v) & (v > 0)
    return v[ok]


def _rewrite_zeros(run: RunLog, fix) -> RunLog:
    """``run`` with each of its loss and eval loss that holds an exact 0.0 replaced where
    ``fix(name, series)`` gives ``(series, note)`` (``None``: kept), the notes added.
    ``run`` itself when nothing changes."""
    changed: dict[str, Series] = {}
    notes = []
    for name in ("loss", "eval_loss"):
        s = run.series.get(name)
        if s is None or not np.any(s.values == 0):
            continue
        done = fix(name, s)
        if done is not None:
            changed[name] = done[0]
            notes.append(done[1])
    if not changed:
        return run
    return replace(run, series={**run.series, **changed}, notes=[*run.notes, *notes])


def lift_rounding_zeros(run: RunLog, th: Thresholds = DEFAULT) -> RunLog:
    """``run`` with the zeros of its loss and eval loss that are rounding read as half the
    rounding step: a loss printed at d decimals (:func:`~trainproof.rules._stats.rounding_step`,
    at least 2) whose positive values next to its zeros sit within ``rounding_floor_steps``
    steps of 0 (their median), or whose values right next to them are one step, logs a value below half a step as 0.0, which is no exact zero (a hidden NaN, a batch of
    masked labels) and no value <= 0 for the ratio rules. A note says so. ``run`` itself
    when nothing is lifted."""

    def fix(name: str, s: Series):
        v = s.values
        zero = v == 0
        q = rounding_step(v)
        if q is None or q > 0.01:
            return None
        # The zeros must sit among values a few steps above 0: the positive values next to
        # them (up to 5 either side of each) have a median within rounding_floor_steps. A
        # loss at 0.10 at 2 decimals that drops to 0.0 and stays (masked labels, a NaN hidden
        # as 0) is ten steps up: no rounding explains the drop.
        near = _neighbours(v, zero, 5)
        # ... or the loss walked down the print's steps to 0: the values right next to
        # the zeros are one step (0.0004, 0.0003, 0.0002, 0.0001, then 0.0000 held, a
        # full-batch fit converging below half a step).
        adjacent = _neighbours(v, zero, 1)
        walked = bool(adjacent.size) and float(median(adjacent)) <= q * (1 + 1e-6)
        if not near.size or (float(median(near)) > th.rounding_floor_steps * q and not walked):
            return None
        nv = v.copy()
        nv[zero] = q / 2
        return Series(s.name, s.key, s.steps, nv, s.lines), (
            f"{name}: {int(zero.sum())} values logged as 0 at {round(-math.log10(q))} decimals, among positive values "
            f"of {num(float(median(near)))} (median next to them), read as {num(q / 2)} (below the rounding step, "
            "not an exact zero)"
        )

    return _rewrite_zeros(run, fix)


def set_aside_stray_zeros(run: RunLog, th: Thresholds = DEFAULT) -> RunLog:
    """``run`` with the few exact zeros of its loss and eval loss left out, where they are
    stray: fewer than ``zero_mixed_share`` of the series' finite points, none the last of
    them, every other finite value above 0. Such zeros are not the run's level: batches
    with nothing to learn from (every label masked, the loss then 0 with a gradient norm
    of 0) or values a logger wrote as 0, and one of them made every rule on ratios of the
    loss's levels skip the run (a value <= 0), so that a run of 200 logs with 5 masked
    batches went unjudged (exit 2). A note names them; from ``zero_mixed_share`` of the
    points on, or at the end, they are the zero-loss rules' (TP-ZERO-LOSS-MIXED,
    TP-ZERO-LOSS-ONSET), and a loss rounded to 0 is :func:`lift_rounding_zeros`'s. ``run``
    itself when nothing is left out."""

    def fix(name: str, s: Series):
        v = s.values
        finite = np.isfinite(v)
        zero = v == 0
        count = int(zero.sum())
        last = int(np.flatnonzero(finite)[-1])
        others = v[finite & ~zero]
        if zero[last] or not others.size or not np.all(others > 0) or count >= th.zero_mixed_share * finite.sum():
            return None
        keep = ~zero
        at = s.steps[zero]
        shown = ", ".join(step_fmt(x) for x in at[:5]) + (" …" if count > 5 else "")
        return Series(s.name, s.key, s.steps[keep], v[keep], s.lines[keep]), (
            f"{name}: {count} exact 0.0 value(s) among {others.size} positive ones (step {shown}) left out of the "
            f"judging: fewer than {pct(th.zero_mixed_share)} of its points and not at its end, they are batches with "
            "nothing to learn from (every label masked) or values a logger wrote as 0, not the run's level"
        )

    return _rewrite_zeros(run, fix)


def _eval_placeholders_dropped(run: RunLog) -> RunLog:
    """``run`` with its eval loss's non-finite values left out when every one of them
    stands for a row with no evaluation (:func:`nan_eval_onset`: a loop that writes NaN
    before its first evaluation and between evaluations), with a note; ``run`` itself
    otherwise. The rules then read the evaluations that were made (a placeholder is no
    NaN evaluation, nor a reason to skip the overfitting checks)."""
    s = run.series.get("eval_loss")
    if s is None:
        return run
    bad = ~np.isfinite(s.values)
    if not bad.any() or bad.all() or nan_eval_onset(bad) is not None:
        return run
    keep = ~bad
    note = (
        f"eval loss ({s.key}): {int(bad.sum())} non-finite values stand for rows with no evaluation (before the first "
        "evaluation, and between evaluations at their cadence): read as absent"
    )
    series = {**run.series, "eval_loss": Series(s.name, s.key, s.steps[keep], s.values[keep], s.lines[keep])}
    return replace(run, series=series, notes=[*run.notes, note])


def _is_held_out(name: str, s: Series) -> bool:
    """Whether series ``s`` (run name ``name``) measures on held-out data."""
    return name.startswith("eval") or measured_held_out(s.key or name)


#: Words of a key that counts where the run is (an epoch, a step, a wall time) rather than
#: measuring the model: such a column is written on every row of every kind (HF writes
#: ``epoch`` on its evaluation rows), so it says nothing of a row's kind.
_COUNTER_WORDS = frozenset({"epoch", "step", "steps", "iter", "iteration", "runtime", "timestamp", "time"})


#: The fewest records with a finite train loss that show which columns share its rows
#: (a loss non-finite from its start, or from its second log, shows none).
KIND_MIN_ROWS = 3


def _table_placeholders_dropped(run: RunLog) -> RunLog:
    """``run`` with the non-finite train values of its rows of another kind left out, with
    a note: a table export that writes ``NaN`` in every train column of a row that holds
    only an evaluation or the trainer's summary (``df.to_csv(na_rep="NaN")`` of HF's
    ``log_history``, a tracker's history). A non-finite train loss counts as such a
    placeholder where its record (a log line) holds a finite value of a column of another
    kind (one never finite on a record where the loss is: ``eval_loss`` on rows of its
    own, ``train_runtime``) and every column that is finite beside the loss elsewhere (a
    learning rate, a gradient norm, a ``val_loss`` on the same rows) is non-finite there
    too: a learning rate is no NaN from a blow-up, since its schedule does not read the
    loss, and a wide table's NaN loss beside a finite ``val_loss`` is the run's. Or where its
    record holds a finite eval loss and the same step has a finite train loss on another
    record. Counters (:data:`_COUNTER_WORDS`) say nothing of a row's kind. The kinds of
    rows are read only where the loss is finite on at least :data:`KIND_MIN_ROWS`
    records: a loss non-finite from its start, or from its first logs,
    shows no row a finite loss shares with its columns. The same reading of the eval loss:
    where it is never finite beside a finite train loss (evaluations on rows of their
    own), its non-finite cells on rows that hold no held-out value at all (train rows, the
    summary row, and rows whose loss is NaN too where a train-side column no evaluation's
    row holds, a learning rate or a wall-clock counter, marks them as train rows) are
    filler (an export evaluating at every logging step alternates the two kinds of rows, a cadence of one row that :func:`nan_eval_onset` does not read); an
    evaluation's own row that turned NaN keeps its NaN. Weights gone non-finite make the
    evaluation non-finite as well, so no NaN of the run is read away. ``run`` itself where
    the loss has no such value."""
    s = run.series.get("loss")
    if s is None:
        return run
    bad = ~np.isfinite(s.values)
    if not bad.any() or bad.all():
        return run
    lines = s.lines[bad]
    ev = run.series.get("eval_loss")
    eval_lines = ev.lines[np.isfinite(ev.values)] if ev is not None else np.array([], dtype=s.lines.dtype)
    cand = np.zeros_like(bad)
    cand[bad] = isin(s.steps[bad], s.steps[~bad]) & isin(lines, eval_lines)
    loss_lines = s.lines[~bad]
    kinds_shown = loss_lines.size >= KIND_MIN_ROWS
    other_lines: list[np.ndarray] = []  # rows holding a finite train-side value of another kind
    if kinds_shown:
        # per non-finite loss value, whether its record holds a finite value of a column
        # of another kind, and of a column finite beside the loss elsewhere (one sorted
        # lookup a column: a sparse export of a million rows stays linear)
        finite_other = np.zeros(lines.size, dtype=bool)
        finite_companion = np.zeros(lines.size, dtype=bool)
        for name, o in run.series.items():
            if name != "loss" and eval_lines.size and not _is_held_out(name, o):
                # a train-side column (a learning rate, a wall-clock counter) that no
                # evaluation's row holds marks train rows, also once the loss there is NaN
                fin = o.lines[np.isfinite(o.values)]
                if not isin(fin, eval_lines).any():
                    other_lines.append(fin)
            if name == "loss" or name == "epoch" or set(words(o.key or name)) & _COUNTER_WORDS:
                continue
            fin_lines = o.lines[np.isfinite(o.values)]
            hit = isin(lines, fin_lines)
            if isin(fin_lines, loss_lines).any():
                finite_companion |= hit
            else:
                finite_other |= hit
        cand[bad] |= finite_other & ~finite_companion
    # What is left: a loss written at its own cadence among rows of other columns (a
    # tracker's history exported with NaN for "not logged here"), as an eval loss's
    # placeholders are read (nan_eval_onset): every gap about one length, the log ending
    # within one of them. A non-finite stretch longer than the cadence is the run's.
    left = ~cand
    rest = bad[left]
    fin = np.flatnonzero(~rest)
    # a cadence shows between logged values: non-finite cells before the first value only
    # (two or more) are the run's (a lone first one is _first_log_placeholder_dropped's)
    between = int(rest[fin[0] : fin[-1] + 1].sum()) if fin.size else 0
    cadence = between >= 2 and nan_eval_onset(rest) is None
    if cadence:
        cand = bad.copy()
    series = dict(run.series)
    notes = list(run.notes)
    if ev is not None and kinds_shown:
        e_bad = ~np.isfinite(ev.values)
        if e_bad.any() and not isin(eval_lines, loss_lines).any():
            # train rows, and rows of another kind with no held-out value (the trainer's
            # summary row); an evaluation's own row keeps its NaN (the eval loss is one of
            # the held-out series)
            held = [o.lines[np.isfinite(o.values)] for name, o in run.series.items() if _is_held_out(name, o)]
            train_side = isin(ev.lines, np.concatenate([loss_lines, *other_lines]))
            filler = e_bad & train_side & ~isin(ev.lines, np.concatenate(held))
            if filler.any():
                keep = ~filler
                series["eval_loss"] = Series(ev.name, ev.key, ev.steps[keep], ev.values[keep], ev.lines[keep])
                notes.append(
                    f"eval loss ({ev.key}): {int(filler.sum())} non-finite values on rows with no held-out value (train "
                    "rows, a summary row; the eval loss is never written beside a finite train loss): read as absent"
                )
    if not cand.any():
        return replace(run, series=series, notes=notes) if len(notes) > len(run.notes) else run
    rows = np.array(sorted(set(s.lines[cand].tolist())))
    for name, o in run.series.items():
        if _is_held_out(name, o):
            continue
        drop = ~np.isfinite(o.values) & isin(o.lines, rows)
        if drop.any():
            keep = ~drop
            series[name] = Series(o.name, o.key, o.steps[keep], o.values[keep], o.lines[keep])
    notes.append(
        f"loss ({s.key}): {int(cand.sum())} non-finite values on rows of another kind (an evaluation's or a "
        "summary's: their train columns non-finite, or the step's train loss finite on another row)"
        + (", or between the loss's own logs at their cadence" if cadence else "")
        + ": read as absent"
    )
    return replace(run, series=series, notes=notes)


def _first_log_placeholder_dropped(run: RunLog, after: int) -> RunLog:
    """``run`` with a lone non-finite first train loss left out, with a note, where every
    later one (at least ``after``: ``min_trend_points``, the least a shape rule judges) is
    finite: a running mean printed before its first batch (0 / 0; helper 62's run FAILed
    TP-NAN on it with 400 finite, falling losses after it). Weights gone non-finite make
    every later loss non-finite, so this is no NaN of the run. ``run`` itself otherwise."""
    s = run.series.get("loss")
    if s is None or s.values.size < after + 1:
        return run
    bad = ~np.isfinite(s.values)
    if not bad[0] or bad[1:].any():
        return run
    note = (
        f"loss ({s.key}): its first value, at step {s.steps[0]:g}, is non-finite and every later one is finite: a "
        "running mean printed before its first batch (0 / 0), read as absent"
    )
    series = {**run.series, "loss": Series(s.name, s.key, s.steps[1:], s.values[1:], s.lines[1:])}
    return replace(run, series=series, notes=[*run.notes, note])


#: A running sum of the loss over each epoch (``epoch_loss += loss.item()`` logged at each
#: step, reset at each epoch): rises at every log within an epoch (a sum of positive
#: losses; all but this share of its logs up, for float rounding and a logging slip) ...
RUNNING_SUM_DOWN_SHARE = 0.05
#: ... and falls to at most this share of its last value at each reset (the first step of
#: the next epoch's sum), at least :data:`RUNNING_SUM_RESETS` times, with at least 3 points
#: an epoch on average. A per-step loss falls at about half its steps (noise), and a
#: divergence climbs without resets.
RUNNING_SUM_RESET_SHARE = 0.25
RUNNING_SUM_RESETS = 2


def _running_sum_unrolled(run: RunLog) -> RunLog:
    """``run`` with a loss logged as a running sum over each epoch read as the mean loss of
    each logging interval, with a note: within an epoch, (sum at this log - sum at the last)
    / (steps between them); each epoch's first log, whose interval starts before the log
    does, is left out. Judged as logged, the sums' sawtooth reads as a climb (a divergence)
    within each epoch. ``run`` itself where the loss is no such sum (see
    :data:`RUNNING_SUM_DOWN_SHARE`, :data:`RUNNING_SUM_RESET_SHARE`)."""
    s = run.series.get("loss")
    if s is None:
        return run
    ok = np.isfinite(s.values)
    v, steps, lines = s.values[ok], s.steps[ok], s.lines[ok]
    if v.size < 12 or not np.all(v >= 0):
        return run
    prev = v[:-1]
    reset = (v[1:] <= RUNNING_SUM_RESET_SHARE * prev) & (prev > 0)
    resets = int(reset.sum())
    if resets < RUNNING_SUM_RESETS or v.size < 3 * (resets + 1):
        return run
    dv = np.diff(v)
    # a sum of positive losses rises at every log between resets (a held or frozen stretch
    # does not)
    if float(np.mean(dv[~reset] > 0)) < 1 - RUNNING_SUM_DOWN_SHARE:
        return run
    gap = np.diff(steps)
    keep = ~reset & (gap > 0) & (dv >= 0)
    per = dv[keep] / gap[keep]
    note = (
        f"loss ({s.key}): a running sum over each epoch ({resets} resets, rising at every log between them): read as the "
        "mean loss of each logging interval (the sum's increase over the steps since the last log)"
    )
    series = {**run.series, "loss": Series(s.name, s.key, steps[1:][keep], per, lines[1:][keep])}
    return replace(run, series=series, notes=[*run.notes, note])


def _generator_as_loss(run: RunLog) -> RunLog:
    """``run`` with its generator loss read as the judged loss when it logs no loss but a
    GAN's two (:func:`adversarial_pair`: ``loss_G`` and ``loss_D``, ``errG`` and ``errD``):
    the run is then an adversarial objective (:func:`detect_objective`), judged by the
    rules that apply to one (non-finite values, the game's balance, a log that stops)
    instead of named a log with no loss. ``run`` itself otherwise."""
    if "loss" in run.series or "eval_loss" in run.series:
        return run
    gan = adversarial_pair(s.key for s in run.series.values())
    if gan is None:
        return run
    name = next(n for n, s in run.series.items() if s.key == gan[0])
    series = {
        ("loss" if n == name else n): (replace(s, name="loss") if n == name else s) for n, s in run.series.items()
    }
    why = (
        f"no loss but a GAN's two ({gan[0]}, {gan[1]}): the generator's is read as the judged loss, and the run "
        "as an adversarial objective, so only the rules that apply to a minimax game judge it"
    )
    mapping = {**run.mapping, "loss": {"source": gan[0], "ignored": [], "how": "fallback", "why": why}}
    return replace(run, series=series, mapping=mapping)


def judge_runlog(
    run: RunLog,
    th: Thresholds = DEFAULT,
    mute: Iterable[str] = (),
    live: bool = False,
    found_before: Mapping[str, int] | None = None,
) -> Report:
    """Run every single-run rule on ``run``; the report is built once, at the end.

    ``live``: the run is still training (a live path judging it as it grows), so the
    no-progress claims need the least evidence of :func:`live_noise_skip` too, and a FAIL
    from the shape of the curve is held until confirmed (:func:`hold_unconfirmed`, with
    ``found_before``: for each FAIL id, how many judgements in a row of this run found it
    just before this one).

    Chart data (the series the HTML report draws) is not computed here:
    :func:`trainproof.render.charts.with_charts` attaches it where an HTML report is asked for.

    Returns:
        A :class:`Report` whose verdict is FAIL, WARN or PASS when at least one check ran,
        NOT-CHECKED (``TP-NOT-CHECKED``) when none could, and carries ``TP-NO-RECORDS`` or
        ``TP-NO-LOSS`` when there was nothing to judge.
    """
    mute = {canonical_id(m) if isinstance(m, str) else m for m in mute}  # ``tp-nan`` mutes TP-NAN
    run = set_aside_stray_zeros(lift_rounding_zeros(run, th), th)

    def built(findings: list[Finding], **rest) -> Report:
        return Report(
            file=run.path,
            format=run.format,
            records=run.records,
            step_range=run.step_range,
            mapping={k: dict(v) for k, v in run.mapping.items()},
            notes=list(run.notes),
            findings=findings,
            **rest,
        )

    if run.records == 0:
        return built(
            [
                _outcome(
                    "TP-NO-RECORDS",
                    "no records could be read from the log",
                    "the file holds no logged rows with numbers",
                )
            ],
            meta=dict(run.meta),
        )
    run = _table_placeholders_dropped(_eval_placeholders_dropped(_generator_as_loss(run)))
    run = _running_sum_unrolled(_first_log_placeholder_dropped(run, th.min_trend_points))
    # An RL run that logs no loss (baselines' DDPG logs actor and critic terms, neither of
    # which must fall) is still judged on its return by the RL rules.
    judged_on_reward = "reward" in run.series and detect_objective(run)[0] == "rl"
    if "loss" not in run.series and "eval_loss" not in run.series and not judged_on_reward:
        keys = sorted(run.series)
        shown = ", ".join(keys[:15]) + (" …" if len(keys) > 15 else "")
        message = "no loss series found: nothing to judge"
        evidence = (
            f"metrics in the log: {shown or '(none)'}; name the loss column with --map loss=COLUMN, or an RL run's "
            "return with --map reward=COLUMN (a return must rise, a loss fall)"
        )
        data = {"metrics": keys}
        return built([_outcome("TP-NO-LOSS", message, evidence, data=data)], meta=dict(run.meta))

    trend_ran = False
    shared: dict = {}  # finite series, facts and memos shared by this run's rules
    objective, because = detect_objective(run)
    meta = {**run.meta, "objective": objective}
    findings: list[Finding] = []
    ran: list[str] = []
    skipped: dict[str, Skip] = {}
    probed = any(k.startswith(PROBE_PREFIX) for k in run.series)
    for rule in all_rules():
        if rule.is_outcome or rule.source not in ("single_run", "reader"):
            continue
        if not probed and probe_only(rule):
            continue
        if rule.id in mute:
            skipped[rule.id] = MUTED
            continue
        if objective not in rule.objectives:
            if objective == "supervised":
                detail = (
                    f"applies to {'/'.join(o.upper() for o in sorted(rule.objectives))} objectives only; "
                    "this log has none of their metrics"
                )
            elif objective == "lr_range_test":
                detail = (
                    f"the log is an LR range test (its {because[0]} sweeps up geometrically over the whole run): "
                    "its loss blows up at the end on purpose, so the loss-shape rules do not apply"
                )
            else:
                detail = (
                    f"the log is an {objective.upper()} objective ({', '.join(because[:3])}): "
                    "its loss is not expected to fall, so the loss-shape rules do not apply"
                )
            skipped[rule.id] = Skip(f"objective: {objective}", detail)
            continue
        skip = _skip_reason(rule, run, th, shared, live)
        if skip is not None:
            skipped[rule.id] = skip
            continue
        ctx = Context(run, th, rule, shared)
        # Overflow to inf (a finite loss of 1e308 squared) is an answer the rules handle,
        # not something to print: numpy's floating-point warnings stay off stderr.
        try:
            with np.errstate(all="ignore"):
                findings.extend(rule.check(ctx) or ())
        except CannotJudge as e:
            skipped[rule.id] = Skip(e.reason, e.detail)
            continue
        ran.append(rule.id)
        trend_ran |= rule.verdict_bearing

    findings = merge_implied(findings)
    if live:
        findings, held = hold_unconfirmed(findings, found_before or {}, th)
        skipped.update(held)
        ran = [r for r in ran if r not in held]
    if not any(f.level in (Level.FAIL, Level.WARN) for f in findings):
        skipped_text = "; ".join(f"{k} ({v.reason})" for k, v in skipped.items())
        if trend_ran:
            findings.append(
                _outcome(
                    "TP-PASS",
                    f"no check fired ({len(ran)} ran, {len(skipped)} skipped)",
                    f"ran: {', '.join(ran)}" + (f". skipped: {skipped_text}" if skipped_text else ""),
                    data={"ran": list(ran), "skipped": sorted(skipped)},
                )
            )
        else:
            why = "; ".join(
                f"{k}: {v.detail}" for k, v in skipped.items() if get(k) is not None and get(k).verdict_bearing
            )
            findings.append(
                _outcome(
                    "TP-NOT-CHECKED",
                    "no trend check could run: the run is not judged",
                    why + (f". Also skipped: {skipped_text}" if skipped_text else ""),
                    data={"ran": list(ran), "skipped": sorted(skipped)},
                )
            )
    return built(findings, ran=ran, skipped=skipped, meta=meta, summary=fail_summary(findings, run))


def merge_implied(findings: list[Finding]) -> list[Finding]:
    """One cause, one finding: drop each finding that a FAIL or WARN finding of a more
    specific rule explains (its rule's ``implies``), and list the dropped ids, with their
    messages, in the explaining finding's ``data["implies"]`` and evidence.

    Order is kept; an implied finding that itself implies others passes them on (a zero
    learning rate explains a flat loss, which explains a dead run).
    """
    by_id = {f.id: f for f in findings}
    explained: dict[str, str] = {}
    for f in findings:
        if f.level not in (Level.FAIL, Level.WARN):
            continue
        r = get(f.id)
        for other in r.implies if r is not None else ():
            if other in by_id and other != f.id and other not in explained:
                explained[other] = f.id
    if not explained:
        return findings

    def root(i: str) -> str:
        seen = set()
        while i in explained and i not in seen:
            seen.add(i)
            i = explained[i]
        return i

    out: list[Finding] = []
    for f in findings:
        if f.id in explained:
            continue
        gone = [o for o in explained if root(o) == f.id]
        if gone:
            f.data["implies"] = gone
            f.evidence += " Also explains: " + "; ".join(f"{o} ({by_id[o].message})" for o in gone) + "."
        out.append(f)
    return out


def fail_summary(findings: Iterable[Finding], run: RunLog) -> str | None:
    """For a FAIL among ``findings`` (a report's, about ``run``): the earliest step where a
    FAIL finding places the fault, how much of the run (of its declared schedule when
    known) came after it, and the best checkpoint the log records. ``None`` when there is
    no FAIL."""
    fails = [f for f in findings if f.level is Level.FAIL]
    if not fails:
        return None
    placed = [f for f in fails if f.step is not None]
    if not placed:
        return f"FAIL ({', '.join(dict.fromkeys(f.id for f in fails))})."

    def went_wrong(f: Finding) -> float:
        # A divergence is placed at its best level; it went wrong where the climb began.
        onset = f.data.get("onset_step")
        return float(onset) if isinstance(onset, (int, float)) else float(f.step)

    first = min(placed, key=lambda f: (went_wrong(f), fails.index(f)))
    at = went_wrong(first)
    text = f"FAIL from step {step_fmt(at)} ({first.id}: {first.message})."
    frac, end, source = fraction_ran(run)
    last = run.step_range[1] if run.step_range else None
    if end is not None and end > at:
        saved = end - at
        text += (
            f" A stop at step {step_fmt(at)} would have saved {step_fmt(saved)} of the "
            f"{step_fmt(end)} scheduled steps ({pct(saved / end)})."
        )
    elif last is not None and last > at:
        text += f" The log ran {step_fmt(last - at)} more steps after it ({pct((last - at) / max(last, 1e-300))} of the logged run)."
    ckpt, _ = best_checkpoint(run)
    if ckpt:
        text += ckpt.replace(" The log's best checkpoint is", " Best checkpoint to resume from:")
    return text


def _outcome(rule_id: str, message: str, evidence: str = "", data: dict | None = None) -> Finding:
    r = get(rule_id)
    assert r is not None, rule_id
    return Finding(
        id=r.id, level=r.level, message=message, evidence=evidence, data=dict(data or {}), source=r.source, hint=r.hint
    )


def error_report(path: str, reason: str, fmt: str | None = None) -> Report:
    """A report for an input that could not be read (``TP-READ-ERROR``, exit 2)."""
    return Report(
        file=path, format=fmt, error=reason, findings=[_outcome("TP-READ-ERROR", "the log could not be read", reason)]
    )
