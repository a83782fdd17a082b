"""``trainproof watch``: poll a growing log and judge it as it grows."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..findings import Finding, Level, Report
from ..rules.registry import get
from ..rules.thresholds import DEFAULT, Thresholds
from .guardian import Guardian
from .tail import LogTail

#: Judge again once the history grew by this share of itself, or after this many seconds
#: when anything new arrived, as long as the guardian can afford it (see
#: :meth:`Guardian.affordable`).
JUDGE_SHARE = 0.01
JUDGE_EVERY_SECONDS = 30.0


@dataclass
class Poll:
    """What one poll saw. ``time`` is the watcher's clock (monotonic seconds); ``wall``
    the Unix time the poll began (what ``--json`` prints as ``time``)."""

    time: float
    wall: float
    records: int
    new_records: int
    verdict: str | None
    new: list[str] = field(default_factory=list)
    stalled: bool = False
    report: Report | None = None

    def to_dict(self) -> dict:
        return {
            "time": round(self.wall, 3),
            "records": self.records,
            "new_records": self.new_records,
            "verdict": self.verdict,
            "new": list(self.new),
            "stalled": self.stalled,
        }


class Watcher:
    """Follows one log: each :meth:`poll` reads what was appended and judges when due.

    Args:
        path: the log (it may not exist yet).
        fmt, overrides, mute, thresholds: as for ``trainproof judge``.
        stall_timeout: seconds without growth after which ``TP-STALL`` (WARN) is reported.
        clock: the time source (tests pass a fake one).
        history, experiment: the run history the ended run is recorded into, and under
            which experiment (:meth:`record`); ``None``: nothing is written.
    """

    def __init__(
        self,
        path: Path,
        fmt: str = "auto",
        overrides=None,
        mute=(),
        thresholds: Thresholds = DEFAULT,
        stall_timeout: float | None = None,
        clock=time.monotonic,
        wall=time.time,
        history: str | None = None,
        experiment: str | None = None,
    ) -> None:
        self.guardian = Guardian(
            str(path),
            fmt,
            mute,
            thresholds,
            overrides=overrides,
            history=history,
            experiment=experiment,
            source=str(path),
        )
        self.tail = LogTail(Path(path), self.guardian, fmt)
        self.stall_timeout = stall_timeout
        self.clock = clock
        self.wall = wall
        self.last_growth = clock()
        self.last_judge = -1e300
        self.report: Report | None = None
        self._stall_reported = False

    def _judge_due(self, now: float, new: int) -> bool:
        g = self.guardian
        if not g.records:
            return False
        if not g.affordable():
            return False
        return g.due(JUDGE_SHARE) or bool(new and now - self.last_judge >= JUDGE_EVERY_SECONDS)

    def poll(self) -> Poll:
        """Read new records; judge when enough arrived (within the judging budget, see
        :meth:`Guardian.affordable`); report a stall as ``TP-STALL`` until the log grows again;
        once the run has finished (:attr:`ended`), judge every record read.

        Raises:
            ReadError: the file exists but cannot be read as a log.
        """
        now = self.clock()
        # The poll's time is when it began, as the stall's clock is: a judgement in the
        # poll does not move it.
        wall = self.wall()
        restarts = self.guardian.restarts
        new = self.tail.poll()
        if self.guardian.restarts != restarts:
            # A new run under the same name: the old verdict and judging budget are void.
            self.report = None
            self.last_judge = -1e300
        if self.tail.reader is not None:
            self.guardian.fmt = self.tail.reader.name
        if new:
            self.last_growth = now
            self._stall_reported = False
            if self.report is not None and "TP-STALL" in self.report.ids():
                self.report = replace(self.report, findings=[f for f in self.report.findings if f.id != "TP-STALL"])
        judged_new: list[str] = []
        if self._judge_due(now, new):
            # ``watch`` stops no run and its last report is the verdict of the log it read,
            # so it judges each read as ``trainproof judge`` judges a log.
            # Until the run has ended it is also held against its siblings' envelope, as a
            # monitor holds it (with a history).
            self.report = self.guardian.judge(final=True, envelope=self.ended is None)
            self.last_judge = now
            judged_new = [f.id for f in self.guardian.new_findings]
        stalled = self.stall_timeout is not None and now - self.last_growth >= self.stall_timeout
        if stalled:
            if self.report is None:
                # Nothing complete to judge yet: the report says so (TP-NO-RECORDS).
                self.report = self.guardian.judge(final=True)
                self.last_judge = now
            if "TP-STALL" not in self.report.ids():
                r = get("TP-STALL")
                stall = Finding(
                    r.id,
                    r.level,
                    f"the log has not grown for {now - self.last_growth:.0f} s",
                    f"no new record since {now - self.last_growth:.0f} s (stall timeout {self.stall_timeout:g} s); "
                    f"{self.guardian.records} records so far.",
                    {"seconds": now - self.last_growth, "timeout": self.stall_timeout},
                    source="live",
                    hint=r.hint,
                )
                self.report = replace(self.report, findings=[*self.report.findings, stall])
            if not self._stall_reported:
                judged_new.append("TP-STALL")
                self._stall_reported = True
        if self.ended is not None and self.guardian.records and (self.report is None or self.guardian.due(0.0)):
            # The run has finished: every record read is judged now, whatever the cadence
            # left unjudged, for the last verdict; a TP-STALL found stays.
            stall = [f for f in self.report.findings if f.id == "TP-STALL"] if self.report is not None else []
            self.report = self.guardian.judge(final=True)
            self.last_judge = now
            judged_new += [f.id for f in self.guardian.new_findings if f.id not in judged_new]
            if stall:
                self.report = replace(self.report, findings=[*self.report.findings, *stall])
        verdict = self.report.verdict.value if self.report is not None else None
        return Poll(now, wall, self.guardian.records, new, verdict, judged_new, stalled, self.report)

    @property
    def ended(self) -> str | None:
        """Why the run followed has finished, or ``None`` while it may still write: it logged
        its end-of-training summary (:data:`~trainproof.live.guardian.END_KEYS`), or the log
        has not grown for the stall timeout (a run that ended without a marker, or hung)."""
        if self.guardian.finished:
            return "the run logged its end-of-training summary (train_runtime)"
        if self._stall_reported:
            return f"the log has not grown for {self.stall_timeout:g} s (--stall-timeout)"
        return None

    def record(self) -> Report | None:
        """Record the last report into the history (once; see
        :meth:`trainproof.live.guardian.Guardian.record`) and return it, with
        ``history_error`` set where the store could not be used; ``None`` before any."""
        if self.report is not None:
            self.report = self.guardian.record(self.report)
        return self.report

    @property
    def failed(self) -> bool:
        return self.report is not None and self.report.verdict is Level.FAIL
