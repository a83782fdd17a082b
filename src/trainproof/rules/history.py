"""History rules: a run judged against the recent healthy runs of its experiment.

A run trained on shuffled labels lowers its own loss and looks healthy on its own curve;
the compare rules catch it against one known-good baseline, which nobody keeps at hand.
The run history (:mod:`trainproof.history`) keeps the recent runs of each experiment, so
a run can be held against the spread of its siblings instead: the same robust levels as
the compare rules (:func:`trainproof.rules.compare.loss_levels`: start, end, floor,
improvement) for the run and each sibling, then the siblings' median and median absolute
deviation (MAD) of each level.

A level is *behind* when it falls beyond the siblings' median by more than a robust margin,
the larger of ``hist_mad_z`` robust standard deviations (1.4826 x MAD) and
``hist_min_gap_share`` of what the siblings learned: seeds of one configuration can agree
so closely that their MAD is about 0, and a spread alone would flag any difference.

Runs are aligned by step (each curve over the steps all of them share) and, where every
run's schedule length is known (its declared ``max_steps``, else the last step of a
finished run), by fraction of the schedule. A level is behind only when it is behind under
every alignment there is: a run of another length in a healthy sweep ends higher at its
last step than a longer sibling there (behind by fraction, not by step), and a run with a
slower schedule is higher at the same step (behind by step, not by fraction); a run that
learned the wrong thing is behind both ways.

These rules know curves as arrays (:class:`Trace`), not the store: the history package
turns its records into traces and calls :func:`judge_history` (a finished run) or
:func:`envelope_finding` (a run still training).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..findings import MUTED, Finding, Level, Skip
from ._fmt import num, pct, step
from ._stats import block_medians, end_window, median, smoothing_block
from .compare import loss_levels, rule_finding, run_rules
from .registry import get, outcome, rule
from .thresholds import DEFAULT, Thresholds

#: 1.4826 x MAD estimates the standard deviation of normal data (1 / Phi^-1(3/4)).
MAD_SCALE = 1.4826


@dataclass(frozen=True)
class Trace:
    """One run's loss curve, as the history rules see it.

    Attributes:
        name: how the findings name the run (``seed0 (#12)``).
        steps: float64 array of shape (n,), in step order.
        values: float64 array of shape (n,), the loss at each step (NaN and Inf allowed:
            they are left out).
        end: the run's schedule length in steps (its declared ``max_steps``, else the last
            step of a finished run), or ``None`` when unknown (a run still training that
            declares none).
    """

    name: str
    steps: np.ndarray
    values: np.ndarray
    end: float | None = None

    def finite(self) -> Trace:
        """The trace restricted to its finite values."""
        m = np.isfinite(self.values) & np.isfinite(self.steps)
        return Trace(self.name, np.asarray(self.steps[m], float), np.asarray(self.values[m], float), self.end)


@dataclass(frozen=True)
class Levels:
    """Robust levels of one loss curve over an aligned range (see the module docstring)."""

    start: float
    end: float
    floor: float
    floor_step: float

    @property
    def improvement(self) -> float:
        """``(start - end) / start``: the share of its start the loss lost."""
        return (self.start - self.end) / self.start if self.start else 0.0


@dataclass(frozen=True)
class Alignment:
    """The run and its siblings over one shared range.

    Attributes:
        how: ``step`` or ``fraction`` (of each run's schedule).
        lo, hi: the shared range, in steps or in fractions of the schedule.
        run: the run's levels there.
        runs: each sibling's levels there, in the order of ``HistoryContext.names``.
    """

    how: str
    lo: float
    hi: float
    run: Levels
    runs: tuple[Levels, ...]

    @property
    def label(self) -> str:
        if self.how == "step":
            return f"by step (steps {step(self.lo)}–{step(self.hi)})"
        return f"by fraction of the schedule ({pct(self.lo)}–{pct(self.hi)})"


@dataclass(frozen=True)
class Behind:
    """One level of the run beyond its siblings' spread.

    Attributes:
        metric: ``floor``, ``end`` or ``improvement``.
        value: the run's level.
        median: the siblings' median level.
        spread: 1.4826 x the siblings' MAD.
        margin: the gap allowed: max(``hist_mad_z`` x spread, ``hist_min_gap_share`` x learned).
        gap: how far the run's level is beyond the median, in the direction that is worse
            (higher for a floor or an end, lower for an improvement).
    """

    metric: str
    value: float
    median: float
    spread: float
    margin: float
    gap: float

    def to_dict(self) -> dict:
        return {
            "value": self.value,
            "median": self.median,
            "spread": self.spread,
            "margin": self.margin,
            "gap": self.gap,
        }


def robust_spread(values: Sequence[float]) -> tuple[float, float]:
    """``(median, 1.4826 x MAD)`` of ``values`` (at least one number)."""
    x = np.asarray(values, dtype=float)
    m = float(median(x))
    return m, MAD_SCALE * float(median(np.abs(x - m)))


def behind(al: Alignment, metric: str, th: Thresholds) -> Behind | None:
    """Whether the run's ``metric`` level (``floor``, ``end`` or ``improvement``) under
    ``al`` falls beyond its siblings' median by more than the robust margin.

    What the siblings learned is their median start minus their median ``metric`` level
    (for the improvement: their median improvement); when they learned nothing the level
    is not judged. The improvement is not judged either for a run that started below its
    siblings' start by more than the margin (a run resumed or warm-started from a
    checkpoint improves less because it starts lower, not because it learns less).
    """
    starts = [r.start for r in al.runs]
    m_start, s_start = robust_spread(starts)
    if metric in ("floor", "end"):
        m, s = robust_spread([getattr(r, metric) for r in al.runs])
        learned = m_start - m
        if learned <= 0:
            return None
        value = getattr(al.run, metric)
        gap = value - m
        margin = max(th.hist_mad_z * s, th.hist_min_gap_share * learned)
    else:
        m, s = robust_spread([r.improvement for r in al.runs])
        if m <= 0:
            return None
        m_floor = float(median([r.floor for r in al.runs]))
        start_margin = max(th.hist_mad_z * s_start, th.hist_min_gap_share * max(m_start - m_floor, 0.0))
        if al.run.start < m_start - start_margin:
            return None
        value = al.run.improvement
        gap = m - value
        margin = max(th.hist_mad_z * s, th.hist_min_gap_share * m)
    if gap <= margin:
        return None
    return Behind(metric, value, m, s, margin, gap)


@dataclass
class HistoryContext:
    """What a history rule sees: the run and its siblings (finite, usable traces), the
    thresholds, and notes for the evidence."""

    run: Trace
    runs: list[Trace]
    th: Thresholds
    notes: list[str] = field(default_factory=list)
    rule_id: str = ""

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.runs]

    def finding(self, message: str, evidence: str, data: dict | None = None, step_: float | None = None) -> Finding:
        return rule_finding(self.rule_id, self.th, message, f"{evidence} {' '.join(self.notes)}", data, step_)


#: The levels judged, most telling first: the finding's message names the first behind.
METRICS = ("floor", "end", "improvement")
_WORDS = {"floor": "loss floor", "end": "end loss", "improvement": "improvement"}


def _shown(metric: str, v: float) -> str:
    return pct(v) if metric == "improvement" else num(v)


def named(names: Sequence[str], most: int = 6) -> str:
    """The runs ``names`` in a sentence, the first ``most`` of them and a count of the rest."""
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


@rule(
    "TP-BEHIND-HISTORY",
    Level.WARN,
    "history",
    "the run falls outside the spread of its experiment's recent healthy runs",
    thresholds=["hist_min_runs", "hist_mad_z", "hist_min_gap_share", "cmp_min_points"],
    source="history",
    objectives=("supervised",),
    least_evidence="A history of at least {hist_min_runs} healthy runs of the experiment, each with "
    "{cmp_min_points} finite, positive loss points over the steps (or the share of the schedule) "
    "they share with the run; the run behind under every alignment there is.",
    detects="Judged with a run history (`--history`): the run's loss floor (smoothed minimum), end "
    "loss (median of its last 10%) or improvement falls beyond the median of the recent healthy "
    "runs of its experiment by more than the larger of {hist_mad_z:g} robust standard deviations "
    "(1.4826 x their MAD) and {hist_min_gap_share:.0%} of what they learned, aligned by step and, "
    "where every schedule length is known, by fraction of the schedule (behind under both). The "
    "runs it was held against are named in the evidence.",
    why="A run on shuffled labels lowers its own loss and passes every single-run check; its "
    "experiment's own past shows a floor far below it. No baseline needs picking: the history "
    "holds the recent healthy runs.",
    not_mean="It does not judge runs of another task, model or loss definition recorded under the "
    "same experiment name: the history compares what it is given. A healthy sweep (seeds, a "
    "slightly different learning rate, a restart from a checkpoint, a run of another length) "
    "stays inside the margin; a deliberately different configuration may not (a smaller model, "
    "another data mix, a sweep over sizes recorded under one project), and nothing in the logs "
    "tells such a run from a broken one. That is why it warns and never fails a run on its own: "
    "where every run of the experiment is meant to match its past, `--fail-on warn` makes a WARN "
    "exit 1, or a CI step reads the finding's id from `--json`.",
    causes="Labels shuffled or misaligned with inputs, a wrong preprocessing or tokenizer, a "
    "frozen or smaller model, a learning rate far below the usual, a data-loading change.",
    try_="Compare the run's configuration and data with the runs named in the evidence (`trainproof "
    "compare --against best RUN`); check inputs and labels side by side on a few samples.",
)
def check_behind_history(c: HistoryContext):
    if len(c.runs) < c.th.hist_min_runs:
        return
    alignments, _ = _alignments(c.run, c.runs, c.th)
    found: dict[str, list[tuple[Alignment, Behind]]] = {}
    for metric in METRICS:
        each = [(al, behind(al, metric, c.th)) for al in alignments]
        if each and all(b is not None for _, b in each):
            found[metric] = each
    if not found:
        return
    first = next(iter(found))
    al, b = found[first][0]
    parts = []
    for metric, each in found.items():
        b0 = each[0][1]
        parts.append(
            f"{_WORDS[metric]} {_shown(metric, b0.value)} vs their median {_shown(metric, b0.median)} "
            f"(margin {_shown(metric, b0.margin)}, spread {_shown(metric, b0.spread)})"
        )
    how = " and ".join(a.label for a, _ in next(iter(found.values())))
    rule_text = (
        f"The margin is the larger of {num(c.th.hist_mad_z)} x the spread (1.4826 x MAD) and "
        f"{pct(c.th.hist_min_gap_share)} of what they learned; behind {how}."
    )
    worse = "above" if first != "improvement" else "below"
    yield c.finding(
        f"{_WORDS[first]} {_shown(first, b.value)} is far {worse} the {_shown(first, b.median)} of "
        f"{len(c.names)} recent healthy runs of the experiment",
        "; ".join(parts) + f". {rule_text} Held against: {named(c.names)}.",
        {
            "behind": {m: each[0][1].to_dict() for m, each in found.items()},
            "runs": list(c.names),
            "alignments": [a.how for a in alignments],
        },
        al.run.floor_step if first == "floor" else None,
    )


outcome(
    "TP-HISTORY-PASS",
    Level.PASS,
    "history",
    "the run sits within the spread of its experiment's recent healthy runs",
    detects="Judged with a run history: no history rule fired: the run's floor, end loss and "
    "improvement are within the margin of the recent healthy runs of its experiment.",
    why="The run learns as the experiment's recent healthy runs did.",
    not_mean="It does not make the run better than them; it is not much worse.",
    causes="Not applicable.",
    try_="Keep recording healthy runs, so the history follows the experiment as it changes.",
    source="history",
)


@rule(
    "TP-BEHIND-ENVELOPE",
    Level.WARN,
    "history",
    "a run still training has fallen behind the envelope of its siblings",
    thresholds=["hist_min_runs", "hist_mad_z", "hist_min_gap_share", "hist_live_min_share", "cmp_min_points"],
    source="live",
    objectives=("supervised",),
    detects="The in-loop monitor, a framework callback or `watch`, given a run history: past "
    "{hist_live_min_share:.0%} of the recent runs' length, the run's loss (median of its last "
    "points) is above the median of at least {hist_min_runs} recent healthy runs of its experiment "
    "at the same steps (and at the same fraction of the schedule, where every schedule length is "
    "known) by more than the larger of {hist_mad_z:g} robust standard deviations and "
    "{hist_min_gap_share:.0%} of what they had learned by then, at `live_confirm_checks` judgements "
    "in a row (a cosine restart or a few skipped fp16 steps lift a healthy run above it for a check "
    "or two). The step and the margin are in the evidence.",
    why="A run on the wrong labels or data trails its siblings from early on; seeing it at a fifth "
    "of the run saves the other four fifths.",
    not_mean="It never stops the run (unless its id is in `stop_on`): a run may catch up, and a "
    "deliberately different configuration trails for good reasons.",
    causes="Labels or data changed, a learning rate far below the usual, frozen layers, a bad resume.",
    try_="Compare the run's configuration with its siblings'; check inputs and labels on a few samples.",
)
def check_behind_envelope(c: HistoryContext):
    if len(c.runs) < c.th.hist_min_runs or c.run.values.size < c.th.cmp_min_points:
        return
    me = c.run
    length = float(median([t.steps[-1] for t in c.runs]))
    if me.steps[-1] < c.th.hist_live_min_share * length:
        return
    w = end_window(me.values.size)
    level = float(median(me.values[-w:]))
    at = float(median(me.steps[-w:]))
    checks = [("step", at, c.runs)]
    if me.end and all(t.end for t in c.runs):
        # The same fraction of each sibling's schedule, as steps of a schedule as long as the run's.
        scaled = [Trace(t.name, t.steps / t.end * me.end, t.values, me.end) for t in c.runs]
        checks.append(("fraction", at, scaled))
    outs = []
    for how, where, sibs in checks:
        b = band(sibs, np.array([where]), c.th)
        if b is None or not np.isfinite(b.median[0]):
            return
        med, upper = float(b.median[0]), float(b.upper[0])
        if level <= upper:
            return
        outs.append((how, med, upper))
    _, med, upper = outs[0]
    last = float(me.steps[-1])
    ways = " and ".join("by step" if h == "step" else "by fraction of the schedule" for h, _, _ in outs)
    yield c.finding(
        f"at step {step(last)} the loss {num(level)} is above the envelope of {len(c.runs)} recent runs "
        f"(median {num(med)}, edge {num(upper)})",
        f"median of the last {w} points {num(level)} around step {step(at)}; the recent healthy runs' "
        f"median there {num(med)}, margin {num(upper - med)} (the larger of {num(c.th.hist_mad_z)} x 1.4826 "
        f"MAD and {pct(c.th.hist_min_gap_share)} of what they had learned), {ways}; the run is "
        f"{num(level - med)} above their median. Held against: {named(c.names)}.",
        {"step": last, "level": level, "median": med, "upper": upper, "margin": upper - med, "runs": c.names},
        last,
    )


def _usable(t: Trace, th: Thresholds) -> str | None:
    if t.values.size < th.cmp_min_points:
        return f"it has {t.values.size} finite loss points (needs {th.cmp_min_points})"
    if np.any(t.values <= 0):
        return "its loss has values <= 0, so its levels say nothing of what it learned"
    return None


def _positions(t: Trace, how: str) -> np.ndarray:
    return t.steps if how == "step" else t.steps / t.end


def align(run: Trace, runs: Sequence[Trace], how: str, th: Thresholds) -> Alignment | str:
    """The run and ``runs`` over the range they share, ``how`` = ``step`` or ``fraction`` (of
    each one's :attr:`Trace.end`, which must be known for all): the :class:`Alignment`, or
    why they cannot be aligned so (a sentence)."""
    pos = [_positions(t, how) for t in (run, *runs)]
    lo = max(float(p[0]) for p in pos)
    hi = min(float(p[-1]) for p in pos)
    levels = []
    for t, p in zip((run, *runs), pos):
        m = (p >= lo) & (p <= hi)
        if int(m.sum()) < th.cmp_min_points:
            where = f"steps {step(lo)}–{step(hi)}" if how == "step" else f"{pct(lo)}–{pct(hi)} of the schedule"
            return (
                f"{t.name} has {int(m.sum())} loss points over the {where} the runs share (needs {th.cmp_min_points})"
            )
        levels.append(Levels(*loss_levels(t.steps[m], t.values[m])))
    return Alignment(how, lo, hi, levels[0], tuple(levels[1:]))


def _alignments(run: Trace, runs: Sequence[Trace], th: Thresholds) -> tuple[list[Alignment], list[str]]:
    hows = ["step"]
    if run.end and all(t.end for t in runs):
        hows.append("fraction")
    out, why = [], []
    for how in hows:
        a = align(run, runs, how, th)
        (why if isinstance(a, str) else out).append(a)
    return out, why


def _history_rules():
    from .registry import all_rules

    return [r for r in all_rules() if r.source == "history" and not r.is_outcome]


def judge_history(
    run: Trace,
    runs: Sequence[Trace],
    th: Thresholds = DEFAULT,
    mute: Iterable[str] = (),
    objective: str = "supervised",
) -> tuple[list[Finding], dict[str, Skip], list[str], dict]:
    """Judge a finished ``run`` against ``runs``, the recent healthy runs of its experiment
    (the run itself left out). ``objective``: the run's kind of objective (its report's
    ``meta["objective"]``); a rule that does not judge it is skipped as ``objective: <kind>``
    (an RL loss is not expected to fall).

    Returns:
        ``(findings, skipped, ran, metrics)`` as :func:`trainproof.rules.compare.compare_runlogs`:
        the history findings (source ``history``; ``TP-HISTORY-PASS`` when none fired), the
        history rules skipped (``too_few_runs``: fewer than ``hist_min_runs`` usable runs, with
        the reason; ``degenerate``: the run's own loss cannot be levelled, or the runs share
        too few steps) and run, and the levels used (for the report's ``meta["history"]``).
    """
    mute = set(mute)
    rules = _history_rules()
    skipped: dict[str, Skip] = {}
    findings: list[Finding] = []
    ran: list[str] = []

    def skip_all(reason: str, detail: str):
        for r in rules:
            skipped[r.id] = MUTED if r.id in mute else Skip(reason, detail)
        return findings, skipped, ran, {}

    if any(objective not in r.objectives for r in rules):
        for r in rules:
            if objective not in r.objectives:
                skipped[r.id] = (
                    MUTED
                    if r.id in mute
                    else Skip(
                        f"objective: {objective}",
                        f"the log is an {objective.upper()} objective: its loss is not expected to fall as its "
                        "siblings' did",
                    )
                )
        rules = [r for r in rules if r.id not in skipped]
        if not rules:
            return findings, skipped, ran, {}
    me = run.finite()
    why = _usable(me, th)
    if why is not None:
        return skip_all("degenerate", f"the run ({run.name}) {why}")
    usable, left_out = [], []
    for t in runs:
        f = t.finite()
        reason = _usable(f, th)
        (left_out if reason else usable).append(f"{t.name}: {reason}" if reason else f)
    if len(usable) < th.hist_min_runs:
        detail = (
            f"the history holds {len(usable)} usable healthy run(s) of the experiment besides this one; "
            f"a median and a MAD need {th.hist_min_runs}"
        )
        if left_out:
            detail += f" (left out: {'; '.join(left_out)})"
        return skip_all("too_few_runs", detail)
    alignments, why_not = _alignments(me, usable, th)
    if not alignments:
        return skip_all("degenerate", "the runs cannot be aligned: " + "; ".join(why_not))
    notes = [f"Left out: {'; '.join(left_out)}."] if left_out else []
    ctx = HistoryContext(me, usable, th, notes)
    run_rules(rules, ctx, mute, findings, skipped, ran)
    al = alignments[0]
    floors = robust_spread([x.floor for x in al.runs])
    ends = robust_spread([x.end for x in al.runs])
    # A PASS only for checks that ran: a muted rule is never reported as passed.
    if ran and not any(f.level in (Level.FAIL, Level.WARN) for f in findings) and "TP-HISTORY-PASS" not in mute:
        p = get("TP-HISTORY-PASS")
        findings.append(
            Finding(
                p.id,
                p.level,
                f"the run sits within the spread of {len(usable)} recent healthy runs of its experiment",
                f"floor {num(al.run.floor)} vs their median {num(floors[0])}, end {num(al.run.end)} vs "
                f"{num(ends[0])}, improvement {pct(al.run.improvement)} vs "
                f"{pct(float(median([x.improvement for x in al.runs])))}, "
                + " and ".join(a.label for a in alignments)
                + f". Held against: {named(ctx.names)}.",
                source="history",
                hint=p.hint,
            )
        )
    metrics = {
        "runs": list(ctx.names),
        "alignments": [a.how for a in alignments],
        "floor": al.run.floor,
        "runs_floor_median": floors[0],
        "end": al.run.end,
        "runs_end_median": ends[0],
        "improvement": al.run.improvement,
        "runs_improvement_median": float(median([x.improvement for x in al.runs])),
    }
    return findings, skipped, ran, metrics


# --- a run still training: the envelope of its siblings at the same step -----------------


@dataclass(frozen=True)
class Band:
    """The siblings' loss at a run's steps: per step, the median and the edge a run may reach.

    Attributes:
        steps: float64 array (n,): the steps.
        median: float64 array (n,): the siblings' median smoothed loss there.
        upper: float64 array (n,): median + the margin of :func:`behind` (``hist_mad_z`` robust
            standard deviations or ``hist_min_gap_share`` of what they had learned by then).
        lower: float64 array (n,): median - the same margin (for drawing).
        runs: the siblings' names.
    """

    steps: np.ndarray
    median: np.ndarray
    upper: np.ndarray
    lower: np.ndarray
    runs: tuple[str, ...]


def _smoothed(t: Trace) -> tuple[np.ndarray, np.ndarray]:
    """A trace's block medians (blocks of 5%, at least 3 points) at their blocks' centre steps."""
    meds, centres = block_medians(t.values, smoothing_block(t.values.size))
    return t.steps[np.minimum(centres, t.values.size - 1)], meds


def band(runs: Sequence[Trace], steps: np.ndarray, th: Thresholds = DEFAULT) -> Band | None:
    """The envelope of ``runs`` (finished healthy runs) at ``steps``: each run's smoothed curve
    interpolated there, then the median and margin across runs at each step (a step past a
    run's last step leaves that run out there). ``None`` when fewer than ``hist_min_runs``
    runs have ``cmp_min_points`` finite, positive points."""
    usable = [f for f in (t.finite() for t in runs) if _usable(f, th) is None]
    if len(usable) < th.hist_min_runs:
        return None
    steps = np.asarray(steps, dtype=float)
    grid = np.full((len(usable), steps.size), np.nan)
    starts = []
    for i, t in enumerate(usable):
        x, y = _smoothed(t)
        inside = (steps >= t.steps[0]) & (steps <= t.steps[-1])
        grid[i, inside] = np.interp(steps[inside], x, y)
        starts.append(float(median(t.values[: end_window(t.values.size)])))
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column: no run there
            med = np.nanmedian(grid, axis=0)
            spread = MAD_SCALE * np.nanmedian(np.abs(grid - med), axis=0)
    count = np.sum(np.isfinite(grid), axis=0)
    learned = np.maximum(float(median(starts)) - med, 0.0)
    margin = np.maximum(th.hist_mad_z * spread, th.hist_min_gap_share * learned)
    few = count < th.hist_min_runs
    med[few] = np.nan
    margin[few] = np.nan
    return Band(steps, med, med + margin, med - margin, tuple(t.name for t in usable))


def envelope_finding(
    run: Trace, runs: Sequence[Trace], th: Thresholds = DEFAULT, mute: Iterable[str] = ()
) -> tuple[Finding | None, Skip | None]:
    """Judge a run still training against the envelope of ``runs`` at its latest steps
    (``TP-BEHIND-ENVELOPE``).

    The run's level is the median of its last points (10%, at least 3); each sibling's is
    its smoothed curve at the same step, and the run is behind when that level is above the
    siblings' median by more than the margin of :func:`band`, by step and, where the run
    declares its schedule and every sibling's length is known, by fraction of it too.

    Returns:
        ``(finding, None)`` when the run is behind; ``(None, skip)`` with the typed reason
        when it is not judged (``muted``; ``too_few_runs``; ``too_few_points``;
        ``too_little_of_schedule``: before ``hist_live_min_share`` of the runs' length);
        ``(None, None)`` when it is within the envelope.
    """
    rid = "TP-BEHIND-ENVELOPE"
    if rid in set(mute):
        return None, MUTED
    me = run.finite()
    usable = [f for f in (t.finite() for t in runs) if _usable(f, th) is None]
    if len(usable) < th.hist_min_runs:
        return None, Skip(
            "too_few_runs",
            f"the history holds {len(usable)} usable healthy run(s) of the experiment; the envelope needs "
            f"{th.hist_min_runs}",
        )
    if me.values.size < th.cmp_min_points:
        return None, Skip("too_few_points", f"loss has {me.values.size} finite points; needs {th.cmp_min_points}")
    length = float(median([t.steps[-1] for t in usable]))
    if me.steps[-1] < th.hist_live_min_share * length:
        return None, Skip(
            "too_little_of_schedule",
            f"step {step(me.steps[-1])} is under {pct(th.hist_live_min_share)} of the recent runs' length "
            f"({step(length)} steps)",
        )
    ctx = HistoryContext(me, usable, th, rule_id=rid)
    with np.errstate(all="ignore"):
        found = list(get(rid).check(ctx) or ())
    return (found[0] if found else None), None
