"""The judge of a run that is still growing: records in, verdicts out.

:class:`Guardian` keeps the records of one run as typed arrays per metric (appending is
O(1) per value) and, when asked, builds a :class:`~trainproof.runlog.RunLog` from them and
runs the same rules as ``trainproof epoch``. It remembers which finding ids it has seen,
so each new finding is announced once. The in-loop monitor, ``trainproof watch`` and the
framework callbacks all feed one of these; none of them holds rule logic.

Judging costs O(records) (numpy over the columns); :meth:`Guardian.due` lets a caller
judge only once the history has grown by a share of itself, which keeps the amortised
cost per record constant however long the run gets.
"""
from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable, Mapping

import numpy as np

from ..findings import Finding, Level, Report
from ..rules.engine import judge_runlog
from ..rules.thresholds import DEFAULT, Thresholds
from ..runlog import Columns, Record, RunLog, build_runlog


class RunFailed(RuntimeError):
    """Raised by a guardian with ``policy="raise"`` when the run gets a FAIL.

    Attributes:
        report: the :class:`~trainproof.findings.Report` that failed.
    """

    def __init__(self, report: Report) -> None:
        fails = [f for f in report.findings if f.level is Level.FAIL]
        first = fails[0] if fails else None
        super().__init__(report.summary or (f"{first.id}: {first.message}" if first else "FAIL"))
        self.report = report


class _Col:
    __slots__ = ("steps", "values", "lines")

    def __init__(self) -> None:
        self.steps = array("d")
        self.values = array("d")
        self.lines = array("q")


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
    """

    def __init__(self, path: str = "<live>", fmt: str = "live", mute: Iterable[str] = (),
                 thresholds: Thresholds = DEFAULT, on_alert: Callable[[Finding], None] | None = None,
                 meta: Mapping | None = None, overrides: Mapping[str, str] | None = None) -> None:
        self.path = path
        self.fmt = fmt
        self.mute = set(mute)
        self.thresholds = thresholds
        self.on_alert = on_alert
        self.meta = dict(meta or {})
        self.notes: list[str] = []
        self.overrides = dict(overrides or {})
        self._cols: dict[str, _Col] = {}
        self._count = 0
        self._judged_at = 0
        self._seen: set[str] = set()
        self.report: Report | None = None
        self.new_findings: list[Finding] = []

    # --- records in ---------------------------------------------------------------------
    @property
    def records(self) -> int:
        return self._count

    def add(self, step: float | None, values: Mapping[str, float], line: int | None = None) -> None:
        """Append one logged row. ``values`` maps raw metric keys to numbers (NaN and ±Inf
        kept; anything that is not a number is skipped). ``step`` defaults to the record
        index."""
        self._count += 1
        if step is None or not math.isfinite(step):
            step = float(self._count - 1)
        ln = self._count if line is None else int(line)
        for k, v in values.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            c = self._cols.get(k)
            if c is None:
                c = self._cols[k] = _Col()
            c.steps.append(float(step))
            c.values.append(float(v))
            c.lines.append(ln)

    def add_record(self, rec: Record) -> None:
        self.add(rec.step, rec.values, rec.line)

    def add_columns(self, col: Columns) -> None:
        """Append a column batch (one metric, many points)."""
        c = self._cols.get(col.key)
        if c is None:
            c = self._cols[col.key] = _Col()
        c.steps.extend(np.asarray(col.steps, dtype=np.float64).tolist())
        c.values.extend(np.asarray(col.values, dtype=np.float64).tolist())
        c.lines.extend(np.asarray(col.lines, dtype=np.int64).tolist())
        self._count += len(col)

    def reset(self, note: str | None = None) -> None:
        """Forget every record (a log that was replaced or rotated)."""
        self._cols.clear()
        self._count = 0
        self._judged_at = 0
        if note:
            self.notes.append(note)

    # --- verdicts out -------------------------------------------------------------------
    def due(self, share: float = 0.01) -> bool:
        """True when the history grew by at least ``share`` of itself since the last
        judgement (always true for the first record)."""
        new = self._count - self._judged_at
        return new > 0 and new >= max(1, share * self._judged_at)

    def runlog(self) -> RunLog:
        """The history so far as a RunLog (copies the columns)."""
        cols = [Columns(k, np.array(c.steps), np.array(c.values), np.array(c.lines))
                for k, c in self._cols.items()]
        run = build_runlog(cols, self.path, self.fmt, self.meta, self.notes, self.overrides)
        run.records = self._count
        return run

    def judge(self) -> Report:
        """Judge the history; remember and announce (``on_alert``) the new finding ids."""
        self._judged_at = self._count
        rep = judge_runlog(self.runlog(), self.thresholds, self.mute)
        self.new_findings = [f for f in rep.findings
                             if f.level in (Level.FAIL, Level.WARN) and f.id not in self._seen]
        for f in self.new_findings:
            self._seen.add(f.id)
            if self.on_alert is not None:
                self.on_alert(f)
        self.report = rep
        return rep
