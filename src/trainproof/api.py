"""The Python API: judge a log file (or a RunLog) and get a :class:`Report`."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from .aliases import MappingError
from .findings import Report
from .formats import ReadError, open_log
from .rules.engine import error_report, judge_runlog
from .rules.thresholds import DEFAULT, Thresholds
from .runlog import RunLog, build_runlog


def read_runlog(path: str | Path, fmt: str = "auto", mapping: Mapping[str, str] | None = None) -> RunLog:
    """Read one log into a :class:`RunLog`.

    Args:
        path: the log file.
        fmt: ``auto`` (sniff the content) or a reader name (``hf``, ``jsonl``, ``csv``).
        mapping: ``--map`` overrides, canonical name -> raw column.

    Raises:
        ReadError: the file cannot be read as a training log.
        MappingError: an override names a column the log does not have.
    """
    p = Path(path)
    name, records, state = open_log(p, fmt)
    # build_runlog consumes the stream; the reader fills state.meta/notes while it does.
    run = build_runlog(records, str(path), name, {}, (), mapping)
    run.meta.update(state.meta)
    run.notes[:0] = state.notes
    return run


def judge(path: str | Path, fmt: str = "auto", mapping: Mapping[str, str] | None = None,
          mute: Iterable[str] = (), thresholds: Thresholds = DEFAULT) -> Report:
    """Read and judge one log.

    Never raises for a bad input: a file that cannot be read gives a report with
    ``error`` set and a ``TP-READ-ERROR`` finding (verdict NOT-CHECKED, exit 2).
    """
    try:
        run = read_runlog(path, fmt, mapping)
    except (ReadError, MappingError) as e:
        return error_report(str(path), str(e), None if fmt == "auto" else fmt)
    return judge_runlog(run, thresholds, mute)
