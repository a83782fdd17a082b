"""Findings, reports, verdicts and the one exit-code policy every command shares.

A :class:`Finding` is one statement about a run, with the numbers behind it. A
:class:`Report` holds every finding about one input plus which checks ran and which were
skipped (and why). :func:`exit_code` turns a list of reports into the process exit code:

* ``1`` if any report holds a FAIL about the run;
* else ``2`` if any input could not be judged (unreadable, empty, no loss, NOT-CHECKED);
* else ``0`` (WARN and INFO findings exit 0).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any, Callable


class Level(str, enum.Enum):
    """Level of a finding; also the verdict of a report.

    ``INFO`` findings are context and never part of the verdict.
    """

    FAIL = "FAIL"
    WARN = "WARN"
    NOT_CHECKED = "NOT-CHECKED"
    PASS = "PASS"
    INFO = "INFO"

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.value


#: Severity order for verdicts: a higher number is worse. INFO is not a verdict.
SEVERITY = {Level.PASS: 0, Level.NOT_CHECKED: 1, Level.WARN: 2, Level.FAIL: 3}

#: Where a finding came from.
SOURCES = ("single_run", "compare", "preflight", "live", "reader")


def jsonable(value: Any) -> Any:
    """Convert numpy scalars, tuples and non-finite floats into plain JSON values.

    Non-finite floats become the strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"``
    so the JSON output stays strict JSON.
    """
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    return str(value)


@dataclass
class Finding:
    """One statement about a run.

    Attributes:
        id: stable rule id (``TP-...``).
        level: FAIL / WARN / INFO / PASS / NOT-CHECKED.
        message: one-line summary.
        evidence: a human sentence with the numbers behind the finding.
        data: the same numbers as JSON-able values.
        step: training step where it happened (``None`` when it is about the whole run).
        line: 1-based source line of the offending record in text formats
            (record index in binary ones), or ``None``.
        source: ``single_run``, ``compare``, ``history`` (judged against the run history),
            ``preflight``, ``live`` or ``reader``.
        hint: likely cause and what to try, from the rule's documentation.
    """

    id: str
    level: Level
    message: str
    evidence: str = ""
    data: dict = field(default_factory=dict)
    step: float | None = None
    line: int | None = None
    source: str = "single_run"
    hint: str = ""

    def to_dict(self) -> dict:
        step = self.step
        if step is not None and float(step).is_integer():
            step = int(step)
        return {
            "id": self.id,
            "level": self.level.value,
            "message": self.message,
            "evidence": self.evidence,
            "data": jsonable(self.data),
            "step": jsonable(step),
            "line": self.line,
            "source": self.source,
            "hint": self.hint,
        }


@dataclass
class Skip:
    """Why a check did not run: ``absent``, ``too_few_points``, ``degenerate``,
    ``not_applicable`` (a check of a signed loss on a positive one), ``muted``, or
    ``objective: <kind>``."""

    reason: str
    detail: str = ""

    def to_dict(self) -> dict:
        return {"reason": self.reason, "detail": self.detail}


#: The skip of a check muted by ``--mute`` or the configuration: every command says it so.
MUTED = Skip("muted", "muted by configuration or --mute")


#: Between the place a tracker keeps its runs (a ``wandb/`` folder, an ``mlflow.db``, a
#: tracking server) and the tracker's experiment or project name in
#: :attr:`Report.experiment`: the place comes first, so the runs of one experiment name in
#: two stores are two groups.
EXPERIMENT_SEP = " · "

#: The reports not of a training log whose ``Finding.line`` is a 1-based line of a text
#: file: the data checks' (``trainproof dataset``); a log's format says it itself
#: (:attr:`trainproof.formats.base.Reader.line_anchors`).
_CHECK_LINE_FORMATS = frozenset({"dataset", "speech-data"})


#: The readers' answer to "is a finding's line a line of text in this format" (their
#: ``line_anchors``), set by :mod:`trainproof.formats` when it loads its readers: the data
#: model asks the registry through it and imports no reader (tests/project/test_layering.py). A
#: report of a reader's format comes from a process that loaded the readers (to read or to
#: find its log); before that the answer is "no".
def _no_reader_loaded(fmt: str | None) -> bool:
    return False


_reader_line_anchors: Callable[[str | None], bool] = _no_reader_loaded


def set_line_anchors(resolver: Callable[[str | None], bool]) -> None:
    """Install the readers' ``line_anchors`` lookup (called once by :mod:`trainproof.formats`)."""
    global _reader_line_anchors
    _reader_line_anchors = resolver


def is_line_format(fmt: str | None) -> bool:
    """Whether a ``Finding.line`` of a report of format ``fmt`` is a 1-based line of a text
    file (the log, or for an MLflow run folder one of its metric files): its reader's
    ``line_anchors``, or a data check's report. Otherwise (a database, a binary log, a
    format no reader has) it is a record's index, and the outputs say ``record N``."""
    return fmt in _CHECK_LINE_FORMATS or _reader_line_anchors(fmt)


@dataclass(frozen=True)
class Report:
    """Everything trainproof says about one input.

    Built once: a step that adds to a report (a comparison, doctor's grouping, a live
    stall) makes a new one (:func:`dataclasses.replace`), and nothing changes a report's
    lists or mappings after it is built (tests/cli/test_report_built_once.py).

    Attributes:
        file: the path as given (relative paths stay relative).
        format: reader name (``hf``, ``jsonl``, ``csv``, ...) or ``None`` if unknown.
        records: number of records read.
        step_range: ``(first, last)`` step of the records, or ``None``.
        mapping: canonical metric -> the raw key it was read from, plus ignored candidates.
        findings: ordered findings.
        ran: ids of the checks that ran.
        skipped: id -> :class:`Skip` for the checks that did not run.
        notes: reader and normalizer notes (skipped lines, torn tail, folded snapshots).
        meta: declared intent read from the log (e.g. HF ``max_steps``).
        error: one-line reason when the input could not be read, else ``None``.
        summary: for a FAIL, where it went wrong, what a stop there would have saved and
            the best checkpoint the log records; ``None`` otherwise.
        also: other files that hold the same run (an HF ``trainer_state.json``'s event
            file, a Lightning ``metrics.csv``'s event file, a byte-identical copy): found
            by ``doctor``, not judged again.
        experiment: the experiment ``doctor`` groups this run under (the folder of its
            seeds, ``version_N`` folders or tracker runs; for a run a tracker names an
            experiment or project of, ``"<store> · <experiment>"``, see
            :data:`EXPERIMENT_SEP`), or ``None``.
        history_error: why the run could not be judged against or recorded into the run
            history (``--history``; one line), or ``None``. The verdict is the run's own
            either way.
    """

    file: str
    format: str | None = None
    records: int = 0
    step_range: tuple[float, float] | None = None
    mapping: dict = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    skipped: dict[str, Skip] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    error: str | None = None
    snapshots: list[str] = field(default_factory=list)
    summary: str | None = None
    also: list[str] = field(default_factory=list)
    experiment: str | None = None
    history_error: str | None = None
    #: Series for charts (HTML): name -> {"key", "steps", "values"}, downsampled; not part
    #: of the JSON document.
    charts: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def verdict(self) -> Level:
        """Worst level among the findings (FAIL > WARN > NOT-CHECKED > PASS).

        A report with an error, or with no verdict-bearing finding, is NOT-CHECKED.
        """
        worst = None
        for f in self.findings:
            if f.level in SEVERITY and (worst is None or SEVERITY[f.level] > SEVERITY[worst]):
                worst = f.level
        if self.error is not None and (worst is None or SEVERITY[worst] < SEVERITY[Level.NOT_CHECKED]):
            return Level.NOT_CHECKED
        return worst if worst is not None else Level.NOT_CHECKED

    @property
    def judged(self) -> bool:
        """True when the report carries a verdict about the run (PASS, WARN or FAIL)."""
        return self.verdict in (Level.PASS, Level.WARN, Level.FAIL)

    def ids(self) -> list[str]:
        return [f.id for f in self.findings]

    def to_dict(self) -> dict:
        sr = None
        if self.step_range is not None:
            sr = [jsonable(int(s) if float(s).is_integer() else s) for s in self.step_range]
        out = {
            "file": self.file,
            "format": self.format,
            "records": self.records,
            "step_range": sr,
            "mapping": jsonable(self.mapping),
            "verdict": self.verdict.value,
            "findings": [f.to_dict() for f in self.findings],
            "checks": {
                "ran": list(self.ran),
                "skipped": {k: v.to_dict() for k, v in self.skipped.items()},
            },
            "notes": list(self.notes),
            "meta": jsonable(self.meta),
            "snapshots": list(self.snapshots),
            "summary": self.summary,
            "error": self.error,
        }
        # Only doctor sets these: every other command's document is as before.
        if self.also:
            out["also"] = list(self.also)
        if self.experiment is not None:
            out["experiment"] = self.experiment
        if self.history_error is not None:
            out["history_error"] = self.history_error
        return out


def worst_verdict(reports: list[Report]) -> Level | None:
    """Worst verdict over several reports, or ``None`` for an empty list."""
    worst = None
    for r in reports:
        v = r.verdict
        if worst is None or SEVERITY[v] > SEVERITY[worst]:
            worst = v
    return worst


def worst_first(reports: list[Report]) -> list[Report]:
    """``reports`` ordered by verdict, worst first (FAIL, WARN, NOT-CHECKED, PASS); reports
    of one verdict keep their order (a stable sort)."""
    return sorted(reports, key=lambda r: -SEVERITY[r.verdict])


#: ``doctor --fail-on`` (and the GitHub Action's ``fail-on``): the verdict that exits 1.
FAIL_ON = ("FAIL", "WARN", "never")


def exit_code(reports: list[Report], error: str | None = None, fail_on: str = "FAIL") -> int:
    """The exit-code policy shared by every command.

    Returns 1 if any report has a FAIL finding; else 2 if ``error`` is set, the list is
    empty, or any report could not be judged; else 0.

    ``fail_on`` (one of :data:`FAIL_ON`) moves the first step: ``WARN`` also returns 1 when
    a report WARNs; ``never`` never returns 1 (only 2, could not judge, or 0).

    Raises:
        ValueError: ``fail_on`` is not one of :data:`FAIL_ON`.
    """
    if fail_on not in FAIL_ON:
        raise ValueError(f"fail_on must be one of {', '.join(FAIL_ON)}, not {fail_on!r}")
    if fail_on != "never" and any(f.level is Level.FAIL for r in reports for f in r.findings):
        return 1
    if fail_on == "WARN" and any(r.verdict is Level.WARN for r in reports):
        return 1
    if error is not None or not reports:
        return 2
    if any(not r.judged for r in reports):
        return 2
    return 0
