"""Recording judged runs: the one place every command, the monitor and the callbacks go
through to judge a run against its experiment's past and then keep it.

:func:`record` never raises for the store: a store that cannot be used leaves the run's
verdict as it was and says why in :attr:`~trainproof.findings.Report.history_error`, which
the command line prints as one line (exit 2 unless a run FAILs).
"""

from __future__ import annotations

import atexit
import os
import threading

from ..findings import Report
from ..runlog import RunLog
from .record import experiment_of, live_source, run_name_of, source_of, summarize
from .store import HistoryError, Store, open_store

#: Open stores of this process, by (process id, location): a worker of ``doctor --jobs``
#: opens each store once for all the runs it judges, and a forked worker never uses its
#: parent's connection.
_STORES: dict[tuple[int, str], Store] = {}
_LOCK = threading.Lock()


def store_at(location: str) -> Store:
    """The open store at ``location`` for this process (opened, and created where missing,
    on first use; closed when the process exits).

    Raises:
        HistoryError: the store cannot be opened (:func:`~trainproof.history.store.open_store`).
    """
    key = (os.getpid(), str(location))
    with _LOCK:
        st = _STORES.get(key)
        if st is None:
            st = _STORES[key] = open_store(location)
        return st


def forget(location: str) -> None:
    """Close and forget this process's store at ``location`` (the next :func:`store_at`
    opens it again)."""
    with _LOCK:
        st = _STORES.pop((os.getpid(), str(location)), None)
    if st is not None:
        st.close()


@atexit.register
def _close_all() -> None:
    with _LOCK:
        stores = [st for (pid, _), st in _STORES.items() if pid == os.getpid()]
        _STORES.clear()
    for st in stores:
        st.close()


def record(
    run: RunLog,
    report: Report,
    location: str | None,
    *,
    experiment: str | None = None,
    thresholds=None,
    source: str | None = None,
    name: str | None = None,
    mute=(),
    chart: bool = False,
    before: float | None = None,
) -> Report:
    """Judge ``run`` (judged alone as ``report``) against the recent healthy runs of its
    experiment in the history at ``location``, record it, and return its report.

    Nothing is read or written when ``location`` is ``None``, nor for a report that could
    not be judged (a read error: there is no run to keep). ``experiment`` is
    ``--experiment`` (else :func:`~trainproof.history.record.experiment_of`); ``source``
    where the run was read from (default: the run log's path); ``name`` the run's name
    (default: :func:`~trainproof.history.record.run_name_of`); ``mute`` the ids not to
    judge; ``chart``: attach the band of the recent runs for the HTML report; ``before``:
    judge against the runs recorded before this time only (seconds since the epoch; a
    command's start, so that the runs it records are not each other's past).

    Returns:
        the report, with the judgement against the history merged in; where the store
        cannot be used, the report as it was with ``history_error`` set (one line).
    """
    if location is None or not report.judged:
        return report
    exp = experiment_of(run, report, explicit=experiment, path=source)
    src = source_of(source if source is not None else run.path)
    name = name if name is not None else run_name_of(run, exp, src)
    try:
        st = store_at(location)
        report = against_history(st, run, report, exp, src, name, thresholds, mute, chart, before)
        st.add(summarize(run, report, experiment=exp, run=name, source=src))
    except HistoryError as e:
        forget(location)
        from dataclasses import replace

        return replace(report, history_error=str(e))
    return report


def references(st: Store, experiment: str, last: int, exclude=None, before: float | None = None) -> list:
    """The runs of ``experiment`` that a new run is held against: its healthy records
    (:meth:`Store.runs` with ``healthy_only``), newest first, one per run (a log judged
    several times is one past run, at its newest record), leaving out ``exclude`` (a
    ``(source, name)``: the run being judged is not its own past) and anything recorded at
    or after ``before``; at most ``last`` of them.

    Raises:
        HistoryError: the store cannot be read.
    """
    out, seen = [], {exclude} if exclude is not None else set()
    # Pages of records until ``last`` distinct runs are found: repeats of one run (or of the
    # run being judged) must not crowd the others out of a fixed window.
    offset, page = 0, max(4 * last, 32)
    while len(out) < last:
        batch = st.runs(experiment, healthy_only=True, limit=page, offset=offset, before=before)
        for r in batch:
            key = (r.source, r.run)
            if key not in seen:
                seen.add(key)
                out.append(r)
                if len(out) == last:
                    break
        if len(batch) < page:
            break
        offset += page
    return out


def against_history(
    st: Store,
    run: RunLog,
    report: Report,
    experiment: str,
    source: str,
    name: str,
    thresholds,
    mute=(),
    chart: bool = False,
    before: float | None = None,
) -> Report:
    """``report`` judged also against the recent healthy runs of ``experiment`` in ``st``
    (but the records of this run, ``name`` read from ``source``: a run judged again is not
    its own sibling; the last ``hist_last_runs`` of them), by
    :func:`trainproof.history.against.judge_against`.

    Raises:
        HistoryError: the store cannot be read.
    """
    from ..rules.thresholds import DEFAULT
    from .against import judge_against

    th = thresholds if thresholds is not None else DEFAULT
    last = th.hist_last_runs
    siblings = references(st, experiment, last, exclude=(source, name), before=before)
    return judge_against(run, report, siblings, th, mute, chart=chart)


__all__ = ["against_history", "forget", "live_source", "record", "store_at"]
