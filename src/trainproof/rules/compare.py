"""Compare rules: a run judged against a known-good baseline of the same task.

A run trained on shuffled labels lowers its own loss and looks healthy on its own curve;
its signature is relative — a loss floor far above a baseline's. These rules read two
RunLogs over the step range they share and compare robust levels of their losses:

* start: the median of the first points of the shared range (10% of them, at least 3);
* end: the median of the last points (10%, at least 3);
* floor: the smoothed minimum — the lowest median of consecutive blocks of 5% of the
  points (at least 3), so a one-point dip is not a floor;
* improvement: ``(start - end) / start``.

:func:`compare_runlogs` is the engine for them: it checks that both sides have a usable
loss scale (else ``TP-CMP-UNCOMPARABLE``, exit 2), restricts both to the shared steps,
runs every compare rule and returns the findings with the metrics it used.
:func:`merge_comparison` adds them to the run's own report so that the report states
one verdict: a PASS of either half is kept as a note when the other half is not a PASS.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

from ..findings import MUTED, Finding, Level, Report, Skip
from ..runlog import RunLog
from ._fmt import num, pct, step, times
from ._stats import block_medians, end_window, median, smoothing_block
from .registry import get, outcome, rule
from .thresholds import DEFAULT, Thresholds


@dataclass
class Side:
    """Robust levels of one run's loss over the shared step range."""

    name: str
    steps: np.ndarray
    values: np.ndarray
    start: float
    end: float
    floor: float
    floor_step: float
    grad_median: float | None
    eval_end: float | None = None
    eval_step: float | None = None
    eval_points: int = 0

    @property
    def improvement(self) -> float:
        return (self.start - self.end) / self.start if self.start else 0.0


def loss_levels(steps: np.ndarray, values: np.ndarray) -> tuple[float, float, float, float]:
    """``(start, end, floor, floor_step)`` of a loss curve: the robust levels of the module's
    docstring (medians of the first and last 10%, the lowest median of blocks of 5%).

    Args:
        steps, values: float arrays of shape (n,), n >= 1, finite, in step order.
    """
    n = values.size
    w = end_window(n)
    meds, centres = block_medians(values, smoothing_block(n))
    j = int(np.argmin(meds))
    return (
        float(median(values[:w])),
        float(median(values[-w:])),
        float(meds[j]),
        float(steps[min(int(centres[j]), n - 1)]),
    )


def _levels(name: str, run: RunLog, lo: float, hi: float) -> Side:
    s = run.series["loss"].finite()
    m = (s.steps >= lo) & (s.steps <= hi)
    st, v = s.steps[m], s.values[m]
    g = run.series.get("grad_norm")
    gm = None
    if g is not None:
        gv = g.values[np.isfinite(g.values) & (g.steps >= lo) & (g.steps <= hi)]
        gm = float(median(gv)) if gv.size else None
    return Side(name, st, v, *loss_levels(st, v), gm, *eval_end(run, lo, hi))


def eval_end(run: RunLog, lo: float, hi: float) -> tuple[float | None, float | None, int]:
    """``(level, step, points)``: where the run's eval loss ends over steps ``lo``..``hi``,
    the median of its last evaluations there (a quarter of them, 1 to 3) and the step of the
    last one; ``(None, None, 0)`` without a positive, finite eval loss in that range."""
    s = run.series.get("eval_loss")
    if s is None:
        return None, None, 0
    s = s.finite()
    m = (s.steps >= lo) & (s.steps <= hi) & (s.values > 0)
    st, v = s.steps[m], s.values[m]
    if not v.size:
        return None, None, 0
    k = min(3, max(1, v.size // 4))
    return float(median(v[-k:])), float(st[-1]), int(v.size)


@dataclass
class CompareContext:
    """What a compare rule sees: both sides, the thresholds, the shared range."""

    base: Side
    run: Side
    th: Thresholds
    lo: float
    hi: float
    range_note: str
    rule_id: str = ""

    def finding(self, message: str, evidence: str, data: dict | None = None, step_: float | None = None) -> Finding:
        return rule_finding(self.rule_id, self.th, message, f"{evidence} {self.range_note}", data, step_)


def rule_finding(
    rule_id: str, th: Thresholds, message: str, evidence: str, data: dict | None = None, step_: float | None = None
) -> Finding:
    """The finding of the registered rule ``rule_id`` for a judgement of more than one run
    (compare, history): its id, level and source as registered, the hint under ``th``;
    ``step_`` the step it is placed at (``None``: not at a step)."""
    r = get(rule_id)
    return Finding(
        id=r.id,
        level=r.level,
        message=message,
        evidence=evidence.strip(),
        data=dict(data or {}),
        step=step_,
        source=r.source,
        hint=r.hint_for(th),
    )


def run_rules(rules, ctx, mute, findings: list, skipped: dict, ran: list) -> None:
    """Run each rule of ``rules`` on ``ctx`` (a judgement of more than one run: compare,
    history), a muted one recorded in ``skipped`` as muted; its findings go to
    ``findings`` and its id to ``ran``. ``ctx.rule_id`` names the rule running (its
    findings are built with :func:`rule_finding`)."""
    for r in rules:
        if r.id in mute:
            skipped[r.id] = MUTED
            continue
        ctx.rule_id = r.id
        with np.errstate(all="ignore"):
            findings.extend(r.check(ctx) or ())
        ran.append(r.id)


_COMMON = dict(source="compare", objectives=("supervised",))


def _immaterial(c: CompareContext, run_level: float, base_level: float) -> bool:
    """True when the run misses under ``cmp_min_gap_share`` of what the baseline learned."""
    learned = c.base.start - base_level
    return learned > 0 and run_level - base_level <= c.th.cmp_min_gap_share * learned


@rule(
    "TP-FLOOR-RATIO",
    Level.FAIL,
    "compare",
    "the run's loss floor is far above the baseline's",
    thresholds=["cmp_floor_ratio", "cmp_min_gap_share"],
    **_COMMON,
    least_evidence="Both runs usable (10 finite, positive loss points each) and a gap above 10% of what the baseline learned.",
    detects="The run's loss floor (smoothed minimum over the shared steps) is more than {cmp_floor_ratio:g}x the baseline's, and the gap is more than {cmp_min_gap_share:.0%} of what the baseline learned (its start minus its floor), when it learned anything.",
    why="The lowest loss a run holds is what it can learn; twice the baseline's floor on the same task means it learns something else, or much less.",
    not_mean="It does not compare different tasks, tokenizers or loss definitions meaningfully: the baseline must be a known-good run of the same task.",
    causes="Labels shuffled or misaligned with inputs, a wrong preprocessing or tokenizer, a frozen or too-small model, a much lower learning rate.",
    try_="Check the data pipeline end to end on a few samples (inputs and labels side by side), then the learning rate and the trainable parameters.",
)
def check_floor_ratio(c: CompareContext):
    if c.base.floor <= 0 or c.run.floor <= c.th.cmp_floor_ratio * c.base.floor:
        return
    if _immaterial(c, c.run.floor, c.base.floor):
        return
    r = c.run.floor / c.base.floor
    yield c.finding(
        f"loss floor {num(c.run.floor)} is {times(r)} the baseline's {num(c.base.floor)}",
        f"floor (lowest block median) {num(c.run.floor)} at step {step(c.run.floor_step)} vs the baseline's "
        f"{num(c.base.floor)} at step {step(c.base.floor_step)}; threshold {num(c.th.cmp_floor_ratio)}x.",
        {"run_floor": c.run.floor, "baseline_floor": c.base.floor, "ratio": r},
        c.run.floor_step,
    )


@rule(
    "TP-END-RATIO",
    Level.FAIL,
    "compare",
    "the run ends far above the baseline",
    thresholds=["cmp_end_ratio", "cmp_min_gap_share"],
    **_COMMON,
    least_evidence="Both runs usable (10 finite, positive loss points each) and a gap above 10% of what the baseline learned.",
    detects="The run's end loss (median of its last 10% over the shared steps) is more than {cmp_end_ratio:g}x the baseline's, and the gap is more than {cmp_min_gap_share:.0%} of what the baseline learned (its start minus its end), when it learned anything.",
    why="Where a run ends is what its checkpoint is worth; twice the baseline's loss at the same step is a much worse model.",
    not_mean="It does not mean the run is broken on its own; it is worse than the baseline.",
    causes="A divergence late in the run, a wrong learning rate or schedule, a data or label problem.",
    try_="Compare the configurations of the two runs line by line; check the run's own findings for the step where it went wrong.",
)
def check_end_ratio(c: CompareContext):
    if c.base.end <= 0 or c.run.end <= c.th.cmp_end_ratio * c.base.end:
        return
    if _immaterial(c, c.run.end, c.base.end):
        return
    r = c.run.end / c.base.end
    yield c.finding(
        f"end loss {num(c.run.end)} is {times(r)} the baseline's {num(c.base.end)}",
        f"median of the last points: {num(c.run.end)} vs {num(c.base.end)}; threshold {num(c.th.cmp_end_ratio)}x.",
        {"run_end": c.run.end, "baseline_end": c.base.end, "ratio": r},
        float(c.run.steps[-1]),
    )


@rule(
    "TP-NEG-IMPROVE",
    Level.FAIL,
    "compare",
    "the run ended higher than it started",
    **_COMMON,
    least_evidence="Both runs usable (10 finite, positive loss points each).",
    detects="Over the shared steps the run's end loss (median of its last 10%) is above its start (median of its first 10%).",
    why="A run that ends worse than it started has lost what it learned, whatever the baseline did.",
    not_mean="A fine-tune whose loss rises slightly at the start of a new task and recovers is not this: the end is compared with the start.",
    causes="A learning rate too high, a divergence, a broken resume (optimizer state lost), data that changed mid-run.",
    try_="Find the step where the loss turned (the run's own TP-DIVERGE finding) and resume before it with a lower learning rate.",
)
def check_neg_improve(c: CompareContext):
    if c.run.end <= c.run.start:
        return
    yield c.finding(
        f"the run ended higher than it started ({num(c.run.start)} -> {num(c.run.end)})",
        f"start {num(c.run.start)} (median of its first points), end {num(c.run.end)}; the baseline went "
        f"{num(c.base.start)} -> {num(c.base.end)}.",
        {"run_start": c.run.start, "run_end": c.run.end, "baseline_start": c.base.start, "baseline_end": c.base.end},
        float(c.run.steps[-1]),
    )


@rule(
    "TP-IMPROVE-DEFICIT",
    Level.FAIL,
    "compare",
    "the run improved far less than the baseline",
    thresholds=["cmp_improve_deficit"],
    **_COMMON,
    least_evidence="Both runs usable (10 finite, positive loss points each).",
    detects="The run's relative improvement over the shared steps is below {cmp_improve_deficit:.0%} of the baseline's (only when the baseline improved).",
    why="Over the same steps the baseline learned four times as much: the run is not training the same way.",
    not_mean="Nothing when the baseline itself did not improve (then the comparison says nothing about learning).",
    causes="A learning rate far too small or zero, frozen layers, labels that carry little signal, a much smaller effective batch.",
    try_="Diff the two runs' configurations; check the learning rate actually applied and the trainable parameter count.",
)
def check_improve_deficit(c: CompareContext):
    bi, ri = c.base.improvement, c.run.improvement
    if bi <= 0 or ri >= c.th.cmp_improve_deficit * bi:
        return
    yield c.finding(
        f"the run improved {pct(ri)} where the baseline improved {pct(bi)}",
        f"relative improvement {pct(ri)} ({num(c.run.start)} -> {num(c.run.end)}) vs the baseline's {pct(bi)} "
        f"({num(c.base.start)} -> {num(c.base.end)}); threshold {pct(c.th.cmp_improve_deficit)} of the baseline's.",
        {"run_improvement": ri, "baseline_improvement": bi},
        float(c.run.steps[-1]),
    )


@rule(
    "TP-GRADNORM-RATIO",
    Level.WARN,
    "compare",
    "the run's gradient norms are far larger than the baseline's",
    thresholds=["cmp_gradnorm_ratio"],
    **_COMMON,
    detects="The run's median gradient norm over the shared steps is more than {cmp_gradnorm_ratio:g}x the baseline's.",
    why="Much larger gradients on the same task mean a harder optimisation: a learning rate too high, or inputs or labels off-scale.",
    not_mean="It is a warning: clipping may keep such a run stable.",
    causes="A higher learning rate, no normalisation of inputs, mixed-precision scaling reported unscaled, label noise.",
    try_="Compare the learning rates and the clipping settings; look at the run's own gradient findings.",
)
def check_gradnorm_ratio(c: CompareContext):
    b, r = c.base.grad_median, c.run.grad_median
    if b is None or r is None or b <= 0 or r <= c.th.cmp_gradnorm_ratio * b:
        return
    yield c.finding(
        f"median gradient norm {num(r)} is {times(r / b, 1)} the baseline's {num(b)}",
        f"median gradient norm over the shared steps {num(r)} vs {num(b)}; threshold {num(c.th.cmp_gradnorm_ratio)}x.",
        {"run_grad_median": r, "baseline_grad_median": b, "ratio": r / b},
    )


@rule(
    "TP-CMP-EVAL-WORSE",
    Level.WARN,
    "compare",
    "the run's eval loss ends far above the baseline's",
    thresholds=["cmp_eval_ratio", "cmp_min_gap_share"],
    **_COMMON,
    least_evidence="Both runs usable (10 finite, positive loss points each), each with an eval loss in the shared steps, their last evaluations within 10% of the shared span of each other.",
    detects="The run's eval loss where it ends (the median of its last evaluations in the shared steps: a quarter of them, 1 to 3) is more than {cmp_eval_ratio:g}x the baseline's, and the gap is more than {cmp_min_gap_share:.0%} of what the baseline's train loss learned over the shared steps (its start minus its end).",
    why="The held-out loss is what the model is for. A run whose train loss looks as good as the baseline's, or better, while its eval loss ends far worse learns something that does not carry to held-out data: the train-loss rules cannot see it.",
    not_mean="It does not say the run is broken: it compares where each run got by the same step. A run that sees fewer examples per step than the baseline (a batch of 1 against 16) ends worse by this measure too. Nor does it judge evaluations on another set or of another metric than the baseline's: both must evaluate the same held-out data.",
    causes="Overfitting (less data, less regularisation than the baseline), a train loss that counts something the eval loss does not (padding tokens not masked, a different reduction), a data leak from the eval set into the baseline, a different eval set.",
    try_="Check that both runs evaluate the same data the same way; then compare their data pipelines and regularisation (dropout, weight decay, augmentation), and how the train loss masks padding.",
)
def check_eval_worse(c: CompareContext):
    b, r = c.base.eval_end, c.run.eval_end
    if b is None or r is None or r <= c.th.cmp_eval_ratio * b:
        return
    # Evaluations at different points of training say how far each run got, not how well.
    if abs(c.run.eval_step - c.base.eval_step) > 0.1 * (c.hi - c.lo):
        return
    learned = c.base.start - c.base.end
    if learned > 0 and r - b <= c.th.cmp_min_gap_share * learned:
        return
    ratio = r / b
    train = ""
    if c.run.end <= c.base.end:
        train = (
            f" Its train loss ends at {num(c.run.end)}, no higher than the baseline's {num(c.base.end)}: it fits its "
            "training data as well or better and does worse on held-out data."
        )
    yield c.finding(
        f"eval loss ends at {num(r)}, {times(ratio)} the baseline's {num(b)}",
        f"eval loss {num(r)} (median of its last evaluations, the last at step {step(c.run.eval_step)}) vs the "
        f"baseline's {num(b)} (last at step {step(c.base.eval_step)}); threshold {num(c.th.cmp_eval_ratio)}x, and the "
        f"gap {num(r - b)} is more than {pct(c.th.cmp_min_gap_share)} of the {num(learned)} the baseline's train loss "
        f"learned.{train}",
        {"run_eval_end": r, "baseline_eval_end": b, "ratio": ratio, "run_eval_step": c.run.eval_step},
        c.run.eval_step,
    )


outcome(
    "TP-BAD-BASELINE",
    Level.WARN,
    "compare",
    "the baseline fails its own single-run checks",
    detects="The baseline's single-run verdict is FAIL.",
    why="Comparing against a broken run can make a broken run look fine: the comparison may be meaningless.",
    not_mean="It says nothing about the run being compared.",
    causes="The wrong file given as baseline, or a baseline that was never healthy.",
    try_="Pick a baseline that passes `trainproof epoch` on its own.",
    source="compare",
)
outcome(
    "TP-CMP-UNCOMPARABLE",
    Level.NOT_CHECKED,
    "compare",
    "the runs cannot be compared",
    detects="Either side has no usable loss scale over the shared steps: no loss, fewer than 10 finite points, a loss that is 0 or negative, or too little overlap of steps.",
    why="Ratios of levels need a positive loss on both sides; no comparison verdict is given (exit 2).",
    not_mean="It does not judge either run; their own findings still stand.",
    causes="A run that turned NaN early, an RL objective whose loss is zero by construction, runs logged over different step ranges.",
    try_="Compare runs of the same task over the same steps; judge a NaN run with `trainproof epoch` first.",
    source="compare",
)
outcome(
    "TP-CMP-PASS",
    Level.PASS,
    "compare",
    "the run compares favourably with the baseline",
    detects="No compare rule fired: floor, end, improvement, eval loss and gradient norms are within the thresholds of the baseline's.",
    why="The run learns as much as a known-good run of the same task, over the same steps.",
    not_mean="It does not make the run better than the baseline; it is not much worse.",
    causes="Not applicable.",
    try_="Keep the baseline current as the training setup changes.",
    source="compare",
)
outcome(
    "TP-CMP-ERROR",
    Level.WARN,
    "compare",
    "the comparison with the baseline could not run",
    detects="`doctor --baseline`: the baseline could not be read, or the comparison failed for this run.",
    why="The comparison is not silently left out: this says why it is missing.",
    not_mean="It says nothing about the run itself.",
    causes="A wrong baseline path, an unreadable or unrecognised baseline log.",
    try_="Check the baseline with `trainproof epoch BASELINE`.",
    source="compare",
)


def _usable(run: RunLog, th: Thresholds) -> str | None:
    s = run.series.get("loss")
    if s is None:
        return "it has no loss series"
    v = s.values[np.isfinite(s.values)]
    if v.size < th.cmp_min_points:
        return f"it has {v.size} finite loss points (needs {th.cmp_min_points})"
    if np.all(v == 0):
        return "its loss is exactly 0 everywhere"
    if np.any(v <= 0):
        return "its loss has values <= 0, so ratios of its levels mean nothing"
    return None


def compare_runlogs(
    baseline: RunLog,
    run: RunLog,
    baseline_report: Report | None = None,
    th: Thresholds = DEFAULT,
    mute: Iterable[str] = (),
) -> tuple[list[Finding], dict[str, Skip], list[str], dict]:
    """Compare ``run`` with ``baseline``.

    Returns:
        ``(findings, skipped, ran, metrics)``: compare findings (source ``compare``), the
        compare rules skipped and run, and the levels used (for tables and JSON).
    """
    mute = set(mute)
    rules = [r for r in _compare_rules()]
    skipped: dict[str, Skip] = {}
    findings: list[Finding] = []
    ran: list[str] = []
    if baseline_report is not None and baseline_report.verdict is Level.FAIL and "TP-BAD-BASELINE" not in mute:
        r = get("TP-BAD-BASELINE")
        ids = sorted({f.id for f in baseline_report.findings if f.level is Level.FAIL})
        findings.append(
            Finding(
                r.id,
                r.level,
                "the baseline fails its own checks: the comparison may be meaningless",
                f"{baseline.path}: {', '.join(ids)}.",
                {"baseline_fails": ids},
                source="compare",
                hint=r.hint,
            )
        )
    why = None
    for side, rl in (("baseline", baseline), ("run", run)):
        reason = _usable(rl, th)
        if reason:
            why = f"the {side} ({rl.path}) {reason}"
            break
    lo = hi = None
    if why is None:
        bs, rs = baseline.series["loss"].finite(), run.series["loss"].finite()
        lo, hi = max(bs.steps[0], rs.steps[0]), min(bs.steps[-1], rs.steps[-1])
        nb = int(((bs.steps >= lo) & (bs.steps <= hi)).sum())
        nr = int(((rs.steps >= lo) & (rs.steps <= hi)).sum())
        if hi <= lo or min(nb, nr) < th.cmp_min_points:
            why = (
                f"the runs share too few logged steps (steps {step(lo)}–{step(hi)}: {nr} run points, "
                f"{nb} baseline points; needs {th.cmp_min_points} each)"
            )
    if why is not None:
        out = get("TP-CMP-UNCOMPARABLE")
        findings.append(
            Finding(
                out.id,
                out.level,
                "the runs cannot be compared: no comparison verdict",
                why,
                {"reason": why},
                source="compare",
                hint=out.hint,
            )
        )
        for r in rules:
            skipped[r.id] = Skip("degenerate", why)
        return findings, skipped, ran, {}
    base, other = _levels(baseline.path, baseline, lo, hi), _levels(run.path, run, lo, hi)
    notes = [f"Compared over steps {step(lo)}–{step(hi)}."]
    for label, rl in (("run", run), ("baseline", baseline)):
        s = rl.series["loss"].finite()
        if s.steps[-1] < max(baseline.series["loss"].steps[-1], run.series["loss"].steps[-1]):
            notes.append(f"The {label} stopped early, at step {step(s.steps[-1])}.")
    ctx = CompareContext(base, other, th, lo, hi, " ".join(notes))
    run_rules(rules, ctx, mute, findings, skipped, ran)
    if not any(f.level in (Level.FAIL, Level.WARN) for f in findings):
        p = get("TP-CMP-PASS")
        findings.append(
            Finding(
                p.id,
                p.level,
                "the run compares favourably with the baseline",
                f"floor {num(other.floor)} vs {num(base.floor)}, end {num(other.end)} vs {num(base.end)}, "
                f"improvement {pct(other.improvement)} vs {pct(base.improvement)}. {ctx.range_note}",
                source="compare",
                hint=p.hint,
            )
        )
    metrics = {
        "baseline": str(baseline.path),
        "steps": [lo, hi],
        "floor": other.floor,
        "baseline_floor": base.floor,
        "floor_ratio": other.floor / base.floor,
        "end": other.end,
        "baseline_end": base.end,
        "end_ratio": other.end / base.end,
        "improvement": other.improvement,
        "baseline_improvement": base.improvement,
        "grad_ratio": (other.grad_median / base.grad_median if other.grad_median and base.grad_median else None),
        "eval_end": other.eval_end,
        "baseline_eval_end": base.eval_end,
    }
    return findings, skipped, ran, metrics


#: How a PASS finding of one half reads as a note of a report whose verdict the other
#: half sets, by the PASS finding's source.
_PASS_NOTE = {
    "single_run": "On its own curve",
    "compare": "Against the baseline",
    "history": "Against the experiment's history",
}


def merge_comparison(
    report: Report,
    findings: list[Finding],
    skipped: dict[str, Skip],
    ran: list[str],
    metrics: dict,
    key: str = "compare",
) -> Report:
    """``report``, the run's own report, with the output of :func:`compare_runlogs` merged in.

    The merged report has one verdict. A PASS finding of one half (``TP-PASS`` on the run
    alone, ``TP-CMP-PASS`` against the baseline) stays a finding unless the merged verdict
    is FAIL or NOT-CHECKED, where it would print PASS under a failure; there what it says
    becomes a note (``On its own curve: no check fired (25 ran, 7 skipped).``) and the checks it
    counts stay in ``ran`` and ``skipped``.

    ``key``: where ``metrics`` go in the report's ``meta`` (``compare``; ``history`` for
    :func:`trainproof.rules.history.judge_history`, which returns the same four parts).

    Returns:
        A new report: ``report`` itself is left as it was built.
    """
    merged = replace(
        report,
        findings=[*report.findings, *findings],
        skipped={**report.skipped, **skipped},
        ran=[*report.ran, *ran],
        meta={**report.meta, key: metrics} if metrics else dict(report.meta),
    )
    # Under a WARN a PASS of the other half is no contradiction (the run compares well and
    # has something to watch); under a FAIL or NOT-CHECKED it would read as one.
    if merged.verdict in (Level.FAIL, Level.NOT_CHECKED):
        passes = [f for f in merged.findings if f.level is Level.PASS]
        merged = replace(
            merged,
            findings=[f for f in merged.findings if f.level is not Level.PASS],
            notes=[*merged.notes, *(f"{_PASS_NOTE.get(f.source, f.source)}: {f.message}." for f in passes)],
        )
    return merged


def _compare_rules():
    from .registry import all_rules

    return [r for r in all_rules() if r.source == "compare" and not r.is_outcome]
