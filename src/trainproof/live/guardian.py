"""The judge of a run that is still growing: records in, verdicts out.

:class:`Guardian` keeps the records of one run as typed arrays per metric (appending is
O(1) per value) and, when asked, builds a :class:`~trainproof.runlog.RunLog` from them and
runs the same rules as ``trainproof judge``. It remembers which finding ids it has seen,
so each new finding is announced once. The in-loop monitor, ``trainproof watch`` and the
framework callbacks all feed one of these; none of them holds rule logic.

Judging costs O(records) (numpy over the columns); :meth:`Guardian.due` lets a caller
judge only once the history has grown by a share of itself, which keeps the amortised
cost per record constant however long the run gets.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..findings import Finding, Level, Report, Skip
from ..rules.engine import fail_summary, judge_runlog
from ..rules.thresholds import DEFAULT, Thresholds
from ..runlog import Columns, Record, RunLog, RunLogBuilder
from . import stops


def number(value: Any) -> float | None:
    """A logged value as a float (Python and numpy numbers, one-element tensors and arrays),
    or ``None`` for anything else. NaN and ±Inf are kept (an integer too large for a float
    is ±Inf); bools are not numbers."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:  # an integer too large for a float
            return math.inf if value > 0 else -math.inf
    item = getattr(value, "item", None)
    if item is None:
        return None
    try:
        numel = getattr(value, "numel", None)  # torch: numel(); numpy: size
        if (numel() if callable(numel) else getattr(value, "size", 1)) != 1:
            return None
        v = item()
    except (TypeError, ValueError, RuntimeError):
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def numbers(values: Mapping[str, Any]) -> dict[str, float]:
    """The numeric entries of a logged dict, as floats."""
    out = {}
    for k, v in values.items():
        x = number(v)
        if x is not None:
            out[str(k)] = x
    return out


#: See :meth:`Guardian.affordable`: at most 1/JUDGE_COST_RATIO of the wall time is spent
#: judging; judgements cheaper than JUDGE_FREE_SECONDS are never rationed (so short runs
#: are judged at the cadence their caller asks for). Engineering choices, not literature.
JUDGE_COST_RATIO = 10.0
JUDGE_FREE_SECONDS = 0.05


class RunFailed(RuntimeError):
    """Raised by the monitor with ``policy="raise"`` when the run gets a FAIL, or (any
    policy) when a finding named in ``stop_on`` has been found ``patience`` checks in a row.

    Attributes:
        report: the :class:`~trainproof.findings.Report` of the judgement that stopped it.
        findings: the findings the stop rests on (the new FAILs, or the chosen ones).
        message: what the stop tells (also the exception's text): the findings, the last
            good step before their onset and the first remedy.
    """

    def __init__(self, report: Report, message: str | None = None, findings: list[Finding] | None = None) -> None:
        fails = [f for f in report.findings if f.level is Level.FAIL]
        first = fails[0] if fails else None
        self.message = message or report.summary or (f"{first.id}: {first.message}" if first else "FAIL")
        super().__init__(self.message)
        self.report = report
        self.findings = list(fails if findings is None else findings)


#: What a run logs once, when its training has finished: the HF Trainer's end-of-training
#: summary row (``train_runtime``, with ``train_loss`` averaged over the run and
#: ``total_flos``), kept in the run's ``meta["summary"]`` by the HF and console readers and
#: as a metric of its own in a JSONL or CSV log. ``trainproof watch`` ends when it is read.
END_KEYS = frozenset({"train_runtime"})


class Guardian:
    """Accumulates a run's records and judges them on demand.

    Args:
        path: what the reports call the run (a file name, or ``<live>``).
        fmt: the format name reported.
        mute: rule ids not to run.
        thresholds: rule thresholds.
        on_alert: called once per new WARN or FAIL finding id, with the finding.
        meta: declared intent (e.g. ``{"max_steps": 1000}``), used by the schedule rules.
        overrides: ``--map`` choices, canonical -> raw key.
        stop_on: rule ids (any level) on which the live path stops the run once they have
            been found ``patience`` judgements in a row (see :meth:`chosen_stops`).
        patience: judgements in a row a ``stop_on`` finding must be present (at least 1).
        siblings: the loss curves of the recent healthy runs of the run's experiment
            (:class:`trainproof.rules.history.Trace`, from a run history:
            :func:`trainproof.history.against.traces`): each judgement of the run still
            training also holds it against their envelope at the same step
            (``TP-BEHIND-ENVELOPE``, a WARN; a stop only when ``stop_on`` names it).
        history: a run history (an SQLite file or a ``postgresql://`` URL,
            :mod:`trainproof.history`) :meth:`record` judges the ended run against and
            records it into; ``None``: nothing is read or written.
        experiment: the experiment the run is recorded under (default: the tracker's, else
            the folder of ``source``'s run family, else the current folder).
        source: where the run is written (its log), for the history; default ``path``.
        run_name: the run's name in the history (default: from ``source``).

    Raises:
        ValueError: ``stop_on`` names no rule, or ``patience`` is below 1.
    """

    def __init__(
        self,
        path: str = "<live>",
        fmt: str = "live",
        mute: Iterable[str] = (),
        thresholds: Thresholds = DEFAULT,
        on_alert: Callable[[Finding], None] | None = None,
        meta: Mapping | None = None,
        overrides: Mapping[str, str] | None = None,
        stop_on: Iterable[str] = (),
        patience: int = 1,
        siblings: Sequence = (),
        history: str | None = None,
        experiment: str | None = None,
        source: str | None = None,
        run_name: str | None = None,
    ) -> None:
        if int(patience) < 1:
            raise ValueError(f"patience must be at least 1 (checks in a row), got {patience!r}")
        self.stop_on = stops.stop_ids(stop_on)
        self.patience = int(patience)
        #: finding id -> how many judgements in a row found it (any level), up to the last one.
        self.present_runs: dict[str, int] = {}
        self.path = path
        self.fmt = fmt
        self.mute = set(mute)
        self.thresholds = thresholds
        self.on_alert = on_alert
        self.meta = dict(meta or {})
        self.notes: list[str] = []
        self.overrides = dict(overrides or {})
        self.siblings = list(siblings)
        #: Whether :attr:`siblings` are settled: given, or (with a history) read from it at
        #: the first judgement (:meth:`_load_siblings`).
        self._siblings_read = bool(self.siblings) or history is None
        #: Judgements in a row that found the run behind its siblings' envelope.
        self._behind_runs = 0
        self._builder = RunLogBuilder()
        self._judged_at = 0
        self._seen: set[tuple[str, Level]] = set()
        #: FAIL id -> how many judgements in a row found it, up to the last one.
        self._fail_runs: dict[str, int] = {}
        #: How many times the history was forgotten as a new run (see :meth:`reset`).
        self.restarts = 0
        #: Wall seconds the last judgement took (see :meth:`affordable`).
        self.judge_seconds = 0.0
        self._judge_end = 0.0
        self._judgements = 0
        self.report: Report | None = None
        self.new_findings: list[Finding] = []
        #: The run logged that its training has finished (:data:`END_KEYS`).
        self.finished = False
        self.history = None if history is None else str(history)
        self.experiment = experiment
        self.source = source
        self.run_name = run_name
        #: The report :meth:`record` kept in the history (``None`` before).
        self.recorded: Report | None = None
        self._recorded_at = 0

    # --- records in ---------------------------------------------------------------------
    @property
    def records(self) -> int:
        return self._builder.records

    def add(self, step: float | None, values: Mapping[str, object], line: int | None = None) -> None:
        """Append one logged row. ``values`` maps raw metric keys to numbers: Python and
        numpy numbers and one-element tensors or arrays are taken as floats (NaN and ±Inf
        kept); anything else is skipped. A row without a finite ``step`` takes the last
        step seen before it, as ``trainproof judge`` does."""
        nums = {}
        for k, v in values.items():
            x = number(v)
            if x is not None:
                nums[str(k)] = x
        self._builder.add(step, nums, self.records + 1 if line is None else int(line))

    def add_record(self, rec: Record) -> None:
        self._builder.add(rec.step, rec.values, rec.line, rec.holes)
        if not self.finished and not END_KEYS.isdisjoint(rec.values):
            self.finished = True

    def add_columns(self, col: Columns) -> None:
        """Append a column batch (one metric, many points)."""
        self._builder.add_columns(col)
        if col.key in END_KEYS:
            self.finished = True

    def reset(self, note: str | None = None, forget_findings: bool = True) -> None:
        """Forget every record and, unless ``forget_findings`` is False, every finding
        already announced (a log that was replaced or rotated is a new run)."""
        self._builder = RunLogBuilder()
        self._judged_at = 0
        self.judge_seconds = 0.0
        self.finished = False
        if forget_findings:
            self._behind_runs = 0
            self._fail_runs = {}
            self.present_runs = {}
            self._seen.clear()
            self.restarts += 1
        self.meta.pop("dropped", None)
        if note:
            self.notes.append(note)

    def load(self, run: RunLog) -> None:
        """Replace the history with a whole RunLog read again (a log rewritten whole at
        each save, like HF ``trainer_state.json``); announced findings are kept."""
        self.reset(forget_findings=False)
        self.meta.pop("dropped", None)
        for s in run.series.values():
            self._builder.add_columns(Columns(s.key, s.steps, s.values, s.lines))
        self._builder.set_records(run.records)
        self.meta.update(run.meta)
        summary = run.meta.get("summary")
        self.finished = not END_KEYS.isdisjoint(run.series) or (
            isinstance(summary, dict) and not END_KEYS.isdisjoint(summary)
        )

    # --- verdicts out -------------------------------------------------------------------
    def due(self, share: float = 0.01) -> bool:
        """True when the history grew by at least ``share`` of itself since the last
        judgement (always true for the first record)."""
        new = self.records - self._judged_at
        return new > 0 and new >= max(1, share * self._judged_at)

    def affordable(self, now: float | None = None) -> bool:
        """True unless judging now would spend more than 1/``JUDGE_COST_RATIO`` of the wall
        time on judging: after a judgement that took d seconds (more than
        ``JUDGE_FREE_SECONDS``), the next one waits ``JUDGE_COST_RATIO * d`` seconds. The
        first judgement of a guardian is never charged (it pays one-off start-up costs).

        Judging costs O(records), so on a long run this, not the caller's cadence, bounds
        the time spent judging (with the default ratio, under ~10% of one core).
        ``now`` is ``time.perf_counter()`` seconds (the default).
        """
        if self.judge_seconds <= JUDGE_FREE_SECONDS:
            return True
        now = time.perf_counter() if now is None else now
        return now - self._judge_end >= JUDGE_COST_RATIO * self.judge_seconds

    def runlog(self) -> RunLog:
        """The history so far as a RunLog (copies the columns)."""
        return self._builder.build(self.path, self.fmt, self.meta, self.notes, self.overrides)

    def judge(self, charts: bool = False, final: bool = False, envelope: bool | None = None) -> Report:
        """Judge the history; remember and announce (``on_alert``) the new finding ids.

        A judgement of a run still training (the default) holds its claims that the loss
        made no progress to the least evidence of
        :func:`trainproof.rules.engine.live_noise_skip` (a declared schedule, and enough
        points for the loss's own noise), and reports a FAIL from the shape of the curve
        only once ``live_confirm_checks`` judgements in a row have found it
        (:func:`trainproof.rules.engine.hold_unconfirmed`). Such a FAIL that claims no
        progress needs a measured cause in the history too (a learning rate, updates or
        gradients about zero, parameters outside the optimizer or none updated): without
        one it is reported as a WARN that says so, and no live path stops on it
        (:func:`trainproof.live.stops.demote_uncaused`). A divergence of the train loss
        whose held-out loss, evaluated since the climb began, is no worse than before it is
        held as a WARN until an evaluation shows it
        (:func:`trainproof.live.stops.hold_unconfirmed_divergence`), and one whose climb gives
        back little of what the run learned is held as a WARN too
        (:func:`trainproof.live.stops.hold_small_divergence`). The report of a run
        that has ended (``final``) is judged as ``trainproof judge`` judges its log.

        Args:
            charts: also attach the chart series (:func:`trainproof.render.charts.with_charts`;
                only a final report needs them).
            final: the run has ended: judge the whole history as a complete log.
            envelope: hold the run against the envelope of its siblings (:attr:`siblings`,
                or those of :attr:`history`; ``TP-BEHIND-ENVELOPE``); default: while it
                trains (not ``final``). ``watch`` judges each read of a growing log as a
                complete log, and asks for the envelope until the run has ended.
        """
        self._judged_at = self.records
        t0 = time.perf_counter()
        run = self.runlog()
        rep = judge_runlog(run, self.thresholds, self.mute, live=not final, found_before=self._fail_runs)
        found = {f.id for f in rep.findings if f.level is Level.FAIL}
        found |= {k for k, v in rep.skipped.items() if v.reason == "unconfirmed"}
        self._fail_runs = {k: self._fail_runs.get(k, 0) + 1 for k in found}
        if not final:
            # After the confirmation count: a claim held as a WARN for want of a cause keeps
            # its count, so it stops at once when a cause is measured later.
            kept = stops.demote_uncaused(rep.findings, run, self.thresholds)
            kept = stops.hold_unconfirmed_divergence(kept, run)
            kept = stops.hold_small_divergence(kept, self.thresholds)
            if kept != rep.findings:
                rep = replace(rep, findings=kept, summary=fail_summary(kept, run))
        if (not final) if envelope is None else envelope:
            if not self._siblings_read:
                self._load_siblings(run, rep)
            if self.siblings or self.history is not None:
                # With a history of too few runs the rule is listed skipped, saying so.
                rep = self._against_siblings(rep, run)
        present = {f.id for f in rep.findings if f.level in (Level.FAIL, Level.WARN)}
        self.present_runs = {k: self.present_runs.get(k, 0) + 1 for k in present}
        if charts:
            from ..render.charts import with_charts

            rep = with_charts(rep, run)
        self._judge_end = time.perf_counter()
        # The first judgement in a process also pays one-off costs (importing the rules,
        # numpy's first calls: ~0.3 s on a small machine), which say nothing of what the
        # next one costs; rationing on it would hold back the early checks of every run.
        self.judge_seconds = self._judge_end - t0 if self._judgements else 0.0
        self._judgements += 1
        # Seen by id and level: a claim reported as a WARN for want of a cause is announced
        # again when it becomes a FAIL.
        self.new_findings = [
            f for f in rep.findings if f.level in (Level.FAIL, Level.WARN) and (f.id, f.level) not in self._seen
        ]
        for f in self.new_findings:
            self._seen.add((f.id, f.level))
            if self.on_alert is not None:
                self.on_alert(f)
        self.report = rep
        return rep

    def _load_siblings(self, run: RunLog, rep: Report) -> None:
        """Read :attr:`siblings` from :attr:`history`, once: the last ``hist_last_runs``
        healthy runs of the experiment the run will be recorded under (as
        :func:`trainproof.history.recording.record` names it), not the run itself. A store
        that cannot be read leaves them empty: the run is still judged, and :meth:`record`
        says why the store failed when the run ends."""
        from ..history.against import traces
        from ..history.record import experiment_of, live_source, run_name_of, source_of
        from ..history.recording import references, store_at
        from ..history.store import HistoryError

        self._siblings_read = True
        where = self.source or live_source()
        exp = experiment_of(run, rep, explicit=self.experiment, path=where)
        src = source_of(where)
        name = self.run_name or run_name_of(run, exp, src)
        last = self.thresholds.hist_last_runs
        try:
            recent = references(store_at(self.history), exp, last, exclude=(src, name))
        except HistoryError as e:
            self.notes.append(f"The history could not be read for the envelope of the recent runs: {e}")
            return
        self.siblings = traces(recent)

    def _against_siblings(self, rep: Report, run: RunLog) -> Report:
        """``rep`` with the run held against the envelope of :attr:`siblings` at its latest
        steps: the ``TP-BEHIND-ENVELOPE`` finding added, or the rule's skip with its reason
        (:func:`trainproof.rules.history.envelope_finding`)."""
        from ..rules._schedule import scheduled_end
        from ..rules.history import Trace, envelope_finding
        from ..rules.registry import get

        rid = "TP-BEHIND-ENVELOPE"
        objective = rep.meta.get("objective") or "supervised"
        loss = run.get("loss")
        if objective not in get(rid).objectives:
            return replace(
                rep, skipped={**rep.skipped, rid: Skip(f"objective: {objective}", "its loss is not expected to fall")}
            )
        if loss is None:
            return replace(rep, skipped={**rep.skipped, rid: Skip("absent", "no loss series in the log")})
        end, _ = scheduled_end(run)
        found, skip = envelope_finding(
            Trace(run.path, loss.steps, loss.values, end), self.siblings, self.thresholds, self.mute
        )
        self._behind_runs = self._behind_runs + 1 if found is not None else 0
        # A restart of a cosine schedule or a run of skipped fp16 steps puts a healthy run
        # above the envelope for a check or two; a run that learns the wrong thing stays there.
        if found is not None and self._behind_runs < self.thresholds.live_confirm_checks:
            skip = Skip(
                "unconfirmed",
                f"behind the envelope at {self._behind_runs} judgement(s) in a row; a WARN needs "
                f"{self.thresholds.live_confirm_checks}: {found.message}",
            )
            found = None
        if found is not None:
            return replace(rep, findings=[*rep.findings, found], ran=[*rep.ran, rid])
        if skip is not None:
            return replace(rep, skipped={**rep.skipped, rid: skip})
        return replace(rep, ran=[*rep.ran, rid])

    @property
    def unrecorded(self) -> bool:
        """Whether there is a history and records it has not been given (:meth:`record`)."""
        return (
            self.history is not None
            and self.records > 0
            and (self.recorded is None or self._recorded_at != self.records)
        )

    def record(self, report: Report) -> Report:
        """Judge the ended run (its final ``report``) against its experiment's recent
        healthy runs in :attr:`history` and record it there, once (a second call returns
        the report it recorded, unless records arrived since): see
        :func:`trainproof.history.recording.record`. Without a history, ``report`` as it is.

        Returns:
            the report, with ``history_error`` set where the store could not be used.
        """
        if self.history is None or not self.records:
            return report
        if not self.unrecorded:
            return self.recorded
        from ..history.recording import live_source, record

        source = self.source or live_source()
        self.recorded = record(
            self.runlog(),
            report,
            self.history,
            experiment=self.experiment,
            thresholds=self.thresholds,
            source=source,
            name=self.run_name,
            mute=self.mute,
            chart=bool(report.charts),
        )
        self._recorded_at = self.records
        return self.recorded

    def chosen_stops(self, report: Report | None = None) -> list[Finding]:
        """The findings of ``report`` (default: the latest judgement's) whose id is in
        ``stop_on`` and that the last ``patience`` judgements in a row have found (at
        WARN or FAIL)."""
        rep = self.report if report is None else report
        if rep is None or not self.stop_on:
            return []
        return [
            f
            for f in rep.findings
            if f.id in self.stop_on
            and f.level in (Level.FAIL, Level.WARN)
            and self.present_runs.get(f.id, 0) >= self.patience
        ]
