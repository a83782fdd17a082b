"""The engine: runs every registered rule on a RunLog and builds its Report.

The engine, not the rule, decides whether a rule runs: a rule whose needed series is
missing is skipped as ``absent``, one with too few finite points as ``too_few_points``,
one whose data it cannot judge (non-positive values for a ratio rule, a constant series
where variation is needed) as ``degenerate``, and a muted one as ``muted``. A skipped
check is never reported as passed.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..findings import MUTED, Finding, Level, Report, Skip
from ..runlog import RunLog, Series
from ._checkpoint import best_checkpoint
from ._fmt import num, pct
from ._fmt import step as step_fmt
from ._schedule import fraction_ran, still_warming_up
from .objective_kind import detect_objective
from .registry import Need, Rule, all_rules, get
from .thresholds import DEFAULT, Thresholds


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


def _skip_reason(rule: Rule, run: RunLog, th: Thresholds, shared: dict | None = None) -> Skip | None:
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
            facts["warmup"] = still_warming_up(_finite(run, shared, "lr").values, th.warmup_rising_points)
        if facts["warmup"]:
            return Skip(
                "warmup",
                f"the learning rate is still rising at the last logged step (its last "
                f"{th.warmup_rising_points} values increase): warm-up has not ended",
            )
    return None


def judge_runlog(run: RunLog, th: Thresholds = DEFAULT, mute: Iterable[str] = ()) -> Report:
    """Run every single-run rule on ``run``; the report is built once, at the end.

    Chart data (the series the HTML report draws) is not computed here:
    :func:`trainproof.render.charts.with_charts` attaches it where an HTML report is asked for.

    Returns:
        A :class:`Report` whose verdict is FAIL, WARN or PASS when at least one check ran,
        NOT-CHECKED (``TP-NOT-CHECKED``) when none could, and carries ``TP-NO-RECORDS`` or
        ``TP-NO-LOSS`` when there was nothing to judge.
    """
    mute = set(mute)

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
    # An RL run that logs no loss (baselines' DDPG logs actor and critic terms, neither of
    # which must fall) is still judged on its return by the RL rules.
    judged_on_reward = "reward" in run.series and detect_objective(run)[0] == "rl"
    if "loss" not in run.series and "eval_loss" not in run.series and not judged_on_reward:
        keys = sorted(run.series)
        shown = ", ".join(keys[:15]) + (" …" if len(keys) > 15 else "")
        return built(
            [
                _outcome(
                    "TP-NO-LOSS",
                    "no loss series found: nothing to judge",
                    f"metrics in the log: {shown or '(none)'}; name the loss column with --map loss=COLUMN",
                    data={"metrics": keys},
                )
            ],
            meta=dict(run.meta),
        )

    trend_ran = False
    shared: dict = {}  # finite series, facts and memos shared by this run's rules
    objective, because = detect_objective(run)
    meta = {**run.meta, "objective": objective}
    findings: list[Finding] = []
    ran: list[str] = []
    skipped: dict[str, Skip] = {}
    for rule in all_rules():
        if rule.is_outcome or rule.source not in ("single_run", "reader"):
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
            else:
                detail = (
                    f"the log is an {objective.upper()} objective ({', '.join(because[:3])}): "
                    "its loss is not expected to fall, so the loss-shape rules do not apply"
                )
            skipped[rule.id] = Skip(f"objective: {objective}", detail)
            continue
        skip = _skip_reason(rule, run, th, shared)
        if skip is not None:
            skipped[rule.id] = skip
            continue
        ctx = Context(run, th, rule, shared)
        # Overflow to inf (a finite loss of 1e308 squared) is an answer the rules handle,
        # not something to print: numpy's floating-point warnings stay off stderr.
        with np.errstate(all="ignore"):
            findings.extend(rule.check(ctx) or ())
        ran.append(rule.id)
        trend_ran |= rule.verdict_bearing

    findings = merge_implied(findings)
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
