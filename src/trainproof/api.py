"""The Python API: judge a log file (or a RunLog) and get a :class:`Report`."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .aliases import MappingError
from .discover import Candidate, experiment_of, fold_copies, group_runs, walk
from .findings import EXPERIMENT_SEP, Finding, Report, worst_first
from .formats import (
    NoRuns,
    NotALog,
    NotOpened,
    OwnOutput,
    ReadError,
    has_run_name,
    is_trainer_name,
    open_log,
    read_head,
    reading,
)
from .remote import is_url, refuse_password, shown
from .rules.engine import error_report, judge_runlog
from .rules.thresholds import DEFAULT, Thresholds
from .runlog import RunLog, RunStart, build_runlog, build_runlogs


def read_runlog(path: str | Path, fmt: str = "auto", mapping: Mapping[str, str] | None = None) -> RunLog:
    """Read one log into a :class:`RunLog`.

    Args:
        path: the log file or run folder, or an fsspec URL of one (``s3://...``, the
            ``[remote]`` extra): staged locally in chunks, read, and named by the URL; or
            the UI URL of a run on an MLflow tracking server (:mod:`trainproof.mlflow_server`).
        fmt: ``auto`` (sniff the content) or a reader name (``hf``, ``jsonl``, ``csv``).
        mapping: ``--map`` overrides, canonical name -> raw column.

    Raises:
        ReadError: the file cannot be read as a training log (for a URL also: it does not
            exist, cannot be fetched, or the extra is not installed).
        MappingError: an override names a column the log does not have.
    """
    refuse_password(path)
    if _on_server(path):
        runs = read_runlogs(path, fmt, mapping)
        if len(runs) != 1:
            raise ReadError(f"holds {len(runs)} runs: give the URL of one run (…/#/experiments/<id>/runs/<id>)")
        return runs[0]
    if is_url(path):
        from .remote import staged

        with staged(path, fmt) as local:
            return _read_local(local, fmt, mapping, label=path)
    return _read_local(Path(path), fmt, mapping, label=str(path))


def read_runlogs(path: str | Path, fmt: str = "auto", mapping: Mapping[str, str] | None = None) -> list[RunLog]:
    """Read one log into one :class:`RunLog` per run it holds (see
    :func:`trainproof.runlog.build_runlogs`): a list of one for almost every log; one
    per run for a W&B panel export of several runs; one per run of an MLflow tracking
    server's URL, or of one of its experiments. Arguments and errors as
    :func:`read_runlog`."""
    refuse_password(path)
    if _on_server(path):
        from .mlflow_server import read_runlogs as server_runlogs

        with reading():
            return server_runlogs(path, mapping)
    if is_url(path):
        from .remote import staged

        with staged(path, fmt) as local:
            return _read_local(local, fmt, mapping, label=path, every_run=True)
    return _read_local(Path(path), fmt, mapping, label=str(path), every_run=True)


def _on_server(location) -> bool:
    """Whether ``location`` is an MLflow tracking server's URL (or one of its runs')."""
    if not is_url(location):
        return False
    from .mlflow_server import is_tracking_server

    return is_tracking_server(location)


def _read_local(p: Path, fmt: str, mapping: Mapping[str, str] | None, label: str, every_run: bool = False):
    """The RunLog of the local log ``p`` named ``label`` (with ``every_run``: the list of
    one RunLog per run it holds).

    What the reader raises on input it cannot take besides ReadError leaves as a ReadError
    (:func:`trainproof.formats.reading`): an error for this log's runs only."""
    with reading():
        name, records, state = open_log(p, fmt)
        marks: list[tuple[int, int]] = []
        # The build consumes the stream; the reader fills state.meta/notes while it does.
        if every_run:
            runs = build_runlogs(_marking(records, state, marks), label, name, {}, (), mapping)
        else:
            runs = [build_runlog(records, label, name, {}, (), mapping)]
    for i, run in enumerate(runs):
        notes, drops = _notes_of(state, marks, i) if len(marks) == len(runs) > 1 else (state.notes, state.drops)
        if label != str(p):
            notes = [n.replace(str(p), label) for n in notes]
        run.meta.update(state.meta)
        run.notes[:0] = notes
        if drops:
            run.meta["dropped"] = [*drops, *run.meta.get("dropped", ())]
    return runs if every_run else runs[0]


def _marking(records, state, marks: list[tuple[int, int]]):
    """``records`` unchanged, noting at each :class:`~trainproof.runlog.RunStart` how many
    notes and drops the reader had written so far: what a store's reader writes between
    two markers is about the run the first one begins."""
    for rec in records:
        if type(rec) is RunStart:
            marks.append((len(state.notes), len(state.drops)))
        yield rec


def _notes_of(state, marks: list[tuple[int, int]], i: int) -> tuple[list[str], list[str]]:
    """Run ``i``'s notes and drops of a store's stream: those written before the first
    run began (about the whole store) and those written while run ``i`` was read."""
    end = marks[i + 1] if i + 1 < len(marks) else (len(state.notes), len(state.drops))
    head_n, head_d = marks[0]
    return (
        state.notes[:head_n] + state.notes[marks[i][0] : end[0]],
        state.drops[:head_d] + state.drops[marks[i][1] : end[1]],
    )


def judge(
    path: str | Path,
    fmt: str = "auto",
    mapping: Mapping[str, str] | None = None,
    mute: Iterable[str] = (),
    thresholds: Thresholds = DEFAULT,
) -> Report:
    """Read and judge one log (for a log of several runs, the worst of
    :func:`judge_all`).

    Never raises for a bad input: a file that cannot be read gives a report with
    ``error`` set and a ``TP-READ-ERROR`` finding (verdict NOT-CHECKED, exit 2). ``path``
    may be an fsspec URL (see :func:`read_runlog`).
    """
    return judge_all(path, fmt, mapping, mute, thresholds)[0]


def judge_all(
    path: str | Path,
    fmt: str = "auto",
    mapping: Mapping[str, str] | None = None,
    mute: Iterable[str] = (),
    thresholds: Thresholds = DEFAULT,
    charts: bool = True,
) -> list[Report]:
    """Read and judge one log: one report per run it holds (:func:`read_runlogs`), worst
    verdict first (runs of one verdict in the order of their names). Never raises for a
    bad input (an error report, as :func:`judge`); never an empty list."""
    try:
        runs = read_runlogs(path, fmt, mapping)
    except (ReadError, MappingError) as e:
        return [error_report(str(shown(path)), str(e), None if fmt == "auto" else fmt)]
    return worst_first([_charted(judge_runlog(run, thresholds, mute), run, charts) for run in runs])


def _charted(rep: Report, run: RunLog, charts: bool) -> Report:
    """``rep`` with ``run``'s chart data attached when ``charts`` (an HTML report is asked for)."""
    if not charts:
        return rep
    from .render.charts import with_charts

    return with_charts(rep, run)


#: Words a training log's lines carry beside their numbers (a file of another dialect
#: that holds them and numbers is a log no reader knows, not a stray file).
_METRIC_WORDS = re.compile(rb"(?i)\b(loss|step|epoch|learning_rate|lr|grad_norm|reward)\b")


def _trainer_name(p: Path) -> bool:
    """A name only a trainer writes (the readers' ``file_names``, an event writer's name):
    a file so named that cannot be read is a run that could not be judged; any other file
    that cannot be read is not counted as a run."""
    return is_trainer_name(p.name)


def _looks_like_log_name(p: Path) -> bool:
    """Whether only a training run would write a file of this name: a trainer's name, or a
    log's suffix (the readers' ``run_suffixes``: ``.jsonl``, ``.ndjson``)."""
    return has_run_name(p.name)


def _log_by_content(p: Path) -> bool:
    """A file no reader recognises that is still a run's log: a trainer's name (a corrupt
    ``trainer_state.json`` or event file, not a stray file), or a log's suffix and, in its
    first bytes, metric words beside digits (a dialect no reader knows)."""
    if _trainer_name(p):
        return True
    if not _looks_like_log_name(p):
        return False
    try:
        head = read_head(p)
    except (OSError, ReadError):
        return False
    return bool(_METRIC_WORDS.search(head)) and any(c in head for c in b"0123456789")


@dataclass(frozen=True)
class JudgeConfig:
    """Everything a judgement depends on besides the log (picklable: it travels to worker
    processes and cluster engines). ``mapping``: canonical -> raw key (``--map``);
    ``baseline``: a known-good run each run is also compared with; ``charts``: fill
    ``Report.charts`` (only the HTML report draws them; without, a report is a fraction of
    the size to send back from a worker)."""

    fmt: str = "auto"
    mapping: tuple[tuple[str, str], ...] = ()
    mute: tuple[str, ...] = ()
    thresholds: Thresholds = DEFAULT
    baseline: str | None = None
    charts: bool = True


_BASELINES: dict = {}


def _baseline(cfg: JudgeConfig):
    """``(runlog, report, error)`` of the configured baseline, read once per process."""
    key = (cfg.baseline, cfg.fmt, cfg.mapping, cfg.mute, cfg.thresholds)
    if key not in _BASELINES:
        try:
            base = read_runlog(cfg.baseline, cfg.fmt, dict(cfg.mapping) or None)
            _BASELINES[key] = (base, judge_runlog(base, cfg.thresholds, cfg.mute), None)
        except (ReadError, MappingError) as e:
            _BASELINES[key] = (None, None, f"the baseline {shown(cfg.baseline)} could not be read: {e}")
    return _BASELINES[key]


def judge_run(location: str | Path, config: JudgeConfig = JudgeConfig()) -> tuple[Report | None, dict | None]:
    """Judge one run found by ``doctor``: :func:`judge_runs` with only the worst report
    of a log that holds several runs.

    Returns:
        ``(report, None)`` for a run (an error report when it cannot be read), or
        ``(None, {"file", "reason"})`` for a file that is not a training log.
    """
    reports, skip = judge_runs(location, config)
    return (reports[0] if reports else None), skip


def judge_runs(
    location: str | Path | tuple, config: JudgeConfig = JudgeConfig()
) -> tuple[list[Report], dict | list[dict] | None]:
    """Judge the log at one location found by ``doctor``: a pure function of the location
    and the config, so that processes or a cluster engine can run it anywhere and only
    schedule.

    Returns:
        ``(reports, None)``: one report per run the log holds (almost always one; one per
        run of a W&B panel export of several), worst first, or one error report when it
        cannot be read; or ``([], {"file", "reason"})`` for a file that is not a training
        log (a data table, an event file without scalars, content no reader recognises
        under a neutral name).

    ``location`` may be an fsspec URL (a string): the run is staged where this runs (see
    :mod:`trainproof.remote`), so a cluster worker fetches its runs itself; the UI URL of
    a run on an MLflow tracking server is fetched over its API
    (:mod:`trainproof.mlflow_server`). A tuple of
    local paths is a log and the siblings that may hold the same run
    (:attr:`discover.Candidate.location`): one report per distinct run, the other logs of
    a run in its ``also``, and a list of ``{"file", "reason"}`` for members that are not
    runs.
    """
    if isinstance(location, tuple):
        return _judge_group(location, config)
    try:
        refuse_password(location)
    except ReadError as e:
        return [error_report(shown(location), str(e))], None
    if _on_server(location):
        # A run of an MLflow tracking server, fetched over its API where this runs.
        try:
            runs = read_runlogs(location, config.fmt, dict(config.mapping) or None)
        except (ReadError, MappingError) as e:
            return [error_report(location, str(e))], None
        return worst_first([_judge_one(run, run.path, config) for run in runs]), None
    if is_url(location):
        from .remote import staged

        try:
            with staged(location, config.fmt) as local:
                return _judge_at(local, location, config)
        except ReadError as e:  # the extra is missing, or the URL cannot be fetched
            return [error_report(location, str(e))], None
    path = Path(location)
    return _judge_at(path, str(path), config)


def _same_location(a: str, b: str) -> bool:
    if is_url(a) or is_url(b):
        return a == b
    return Path(a).resolve() == Path(b).resolve()


def _judge_at(path: Path, label: str, config: JudgeConfig) -> tuple[list[Report], dict | None]:
    """:func:`judge_runs` of the local ``path``, named ``label`` in what it returns."""
    runs, out = _read_at(path, label, config)
    if runs is None:
        return out
    return worst_first([_judge_one(run, label, config) for run in runs]), None


def _read_at(path: Path, label: str, config: JudgeConfig):
    """The runs of the local ``path`` as ``(runs, None)``, or ``(None, (reports, skip))``
    when it is not a run (``skip``) or cannot be read (an error report)."""
    mapping = dict(config.mapping) or None
    # Only training logs are runs: a file counts when its content is a log (or, where its
    # content cannot be seen, when only a run writes a file of its name), so a stray
    # config, source file or empty file never makes a clean tree "not judged".
    try:
        runs = _read_local(path, config.fmt, mapping, label, every_run=True)
    except NotALog as e:
        # A tracker's store with no run in it (NoRuns) is the tracker's file but not a run;
        # a saved trainproof report (OwnOutput) is trainproof's, whatever its name says.
        if _log_by_content(path) and not isinstance(e, (NoRuns, OwnOutput)):
            return None, ([error_report(label, str(e))], None)
        return None, ([], {"file": label, "reason": str(e)})
    except NotOpened as e:
        if str(e) != "empty file" and _looks_like_log_name(path):
            return None, ([error_report(label, str(e))], None)
        return None, ([], {"file": label, "reason": f"{e}: not a run"})
    except (ReadError, MappingError) as e:
        return None, ([error_report(label, str(e))], None)
    first = runs[0]
    if first.format in ("jsonl", "csv") and not first.mapping and not first.explicit_steps:
        return None, ([], {"file": label, "reason": "a data table: no step column and no known metric"})
    if first.format in ("jsonl", "csv") and len(runs) == 1 and first.records < 2 and not _looks_like_log_name(path):
        # One object is a config or a summary (HF all_results.json, wandb-summary.json),
        # not a series of records: nothing a trend check could judge.
        return None, ([], {"file": label, "reason": "one record, not a series (a config or a summary)"})
    if first.format == "tfevents" and first.records == 0:
        return None, (
            [],
            {"file": label, "reason": "an event file without scalars (hparams, text, graphs or profiles only)"},
        )
    return runs, None


#: The series two logs of one run must agree on, the first both hold.
_SAME_RUN_SERIES = ("loss", "eval_loss", "reward", "return")


def same_run(a: RunLog, b: RunLog, min_common: int = 3) -> bool:
    """Whether two logs hold the same run written twice (an HF ``trainer_state.json`` and
    its event file, a Lightning ``metrics.csv`` and its event file).

    They must share the first of loss, eval loss, reward or return, on at least
    ``min_common`` steps and at least half the steps of the shorter series, and agree on
    every shared step (NaN with NaN) to 1e-5 relative: an event file stores float32 (7 significant
    digits), so the same number read from JSON or CSV differs by at most about 6e-8
    relative; two different runs, even seeds of one configuration, differ far more on
    some step. ``False`` when either lacks the series.
    """
    import numpy as np

    for name in _SAME_RUN_SERIES:
        sa, sb = a.get(name), b.get(name)
        if sa is not None and sb is not None:
            break
    else:
        return False
    # NaN and infinities count as values: the same run has them at the same steps.
    common, ia, ib = np.intersect1d(sa.steps, sb.steps, return_indices=True)
    if len(common) < max(min_common, 0.5 * min(len(sa), len(sb))):
        return False
    return bool(np.allclose(sa.values[ia], sb.values[ib], rtol=1e-5, atol=1e-8, equal_nan=True))


def _richness(run: RunLog) -> tuple:
    from .formats import preference

    return (-preference(run.format), len(run.series), run.records)


def _judge_group(paths: tuple, config: JudgeConfig) -> tuple[list[Report], list[dict]]:
    """Judge a log and the siblings that may hold the same run (:class:`discover.Candidate`):
    logs that hold one run and agree by :func:`same_run` are one report, of the richest
    (by the readers' ``preference``, then most metrics, then records), with the others in ``also``;
    the rest are judged on their own."""
    reports: list[Report] = []
    skips: list[dict] = []
    single: list[tuple[str, RunLog]] = []
    for p in paths:
        label = str(p)
        if is_url(p):
            from .remote import staged

            try:
                with staged(p, config.fmt) as local:
                    runs, out = _read_at(local, label, config)
            except ReadError as e:
                runs, out = None, ([error_report(label, str(e))], None)
        else:
            runs, out = _read_at(Path(p), label, config)
        if runs is None:
            reports.extend(out[0])
            if out[1] is not None:
                skips.append(out[1])
        elif len(runs) == 1:
            single.append((label, runs[0]))
        else:
            reports.extend(_judge_one(run, label, config) for run in runs)
    clusters: list[list[tuple[str, RunLog]]] = []
    for item in single:
        for cl in clusters:
            if same_run(cl[0][1], item[1]):
                cl.append(item)
                break
        else:
            clusters.append([item])
    for cl in clusters:
        label, run = max(cl, key=lambda it: _richness(it[1]))
        rep = _judge_one(run, label, config)
        reports.append(replace(rep, also=[lbl for lbl, _ in cl if lbl != label]))
    return worst_first(reports), skips


def _judge_one(run: RunLog, label: str, config: JudgeConfig) -> Report:
    """The report of one RunLog of ``label``, compared with the configured baseline."""
    rep = judge_runlog(run, config.thresholds, config.mute)
    if config.baseline is not None:
        base, base_report, base_error = _baseline(config)
        if base is not None and not _same_location(label, config.baseline):
            rep = _with_comparison(rep, base, run, base_report, config.thresholds, config.mute)
        elif base_error is not None:
            from .rules.registry import get

            r = get("TP-CMP-ERROR")
            cmp_error = Finding(
                r.id,
                r.level,
                "the comparison with the baseline could not run",
                base_error,
                {"reason": base_error},
                source="compare",
                hint=r.hint,
            )
            rep = replace(rep, findings=[*rep.findings, cmp_error])
    return _charted(rep, run, config.charts)


def _judge_candidate(args: tuple) -> tuple[list[Report], dict | None]:
    path, config = args
    return judge_runs(path, config)


#: Below this many runs a process pool costs more than it saves.
_MIN_PARALLEL = 8


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one, else
    ``os.cpu_count()``; at least 1): the most worker processes ``doctor`` starts, since
    more workers than cores only add memory and switching."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


#: The signals held while the worker processes are forked (see :func:`_signals_held`).
_STOP_SIGNALS = ("SIGINT", "SIGTERM")


def _worker_start() -> None:
    """In each worker: die on SIGTERM (the parent ends its workers so) and leave Ctrl-C
    to the parent, which stops them all. The worker was forked while the parent held the
    stop signals, so it takes them again here."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {getattr(signal, n) for n in _STOP_SIGNALS})


def _signals_held():
    """Hold SIGINT and SIGTERM in this thread (where the platform can) and return a function
    that lets them through again. The worker pool forks its processes as the work is
    submitted; a stop signal handled in the middle of a fork raises its KeyboardInterrupt
    inside the interpreter's at-fork hooks, which print it as an ignored exception with a
    traceback and go on. Held, it arrives once the forks are done, where ``doctor`` ends
    the workers."""
    import signal

    if not hasattr(signal, "pthread_sigmask"):
        return lambda: None
    held = {getattr(signal, n) for n in _STOP_SIGNALS}
    before = signal.pthread_sigmask(signal.SIG_BLOCK, held)

    def release() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)

    return release


def _quiet_broken_pool() -> None:
    """Keep the pool's manager thread from printing a traceback as the command stops:
    before Python 3.12 it sets an exception on every pending future of a pool whose
    workers died, and one this command has just cancelled raises InvalidStateError there
    (a race in ``concurrent.futures.process``, handled in 3.12). Nothing is lost: the
    command is stopping and its futures are cancelled."""
    import threading
    from concurrent.futures import InvalidStateError

    before = threading.excepthook
    if getattr(before, "_trainproof", False):
        return

    def hook(args) -> None:
        if args.exc_type is not None and issubclass(args.exc_type, InvalidStateError):
            return
        before(args)

    hook._trainproof = True  # type: ignore[attr-defined]
    threading.excepthook = hook


#: The work queues of the process pools ended by an interrupt in this process
#: (:func:`_end_workers`), kept referenced until the process exits. Non-empty means the
#: pool's own threads may never end: the command line exits without joining them
#: (:func:`trainproof.cli.app.main`).
ENDED_POOLS: list = []


def _end_workers(pool) -> None:
    """Stop a process pool's workers now (the command was interrupted): terminate them,
    then reap them, so none outlives the command holding its output.

    The pool's queue of work is kept referenced and not joined at exit: dropped, its pipe
    would be closed under the thread still writing to it (an ``OSError`` traceback
    printed as the command stops), and joined, that thread may wait forever on a pipe no
    worker reads any more."""
    _quiet_broken_pool()
    call_queue = getattr(pool, "_call_queue", None)
    if call_queue is not None:
        call_queue.cancel_join_thread()
    ENDED_POOLS.append(call_queue)
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for p in procs:
        p.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        p.join(10)
        if p.is_alive():
            p.kill()
            p.join(10)


def doctor(
    root: str | Path | Sequence[str | Path],
    fmt: str = "auto",
    mapping: Mapping[str, str] | None = None,
    mute: Iterable[str] = (),
    thresholds: Thresholds = DEFAULT,
    progress: Callable[[int, int, str], None] | None = None,
    baseline: str | Path | None = None,
    max_depth: int | None = None,
    max_files: int | None = None,
    jobs: int | None = 1,
    engine: str = "local",
    address: str | None = None,
    charts: bool = True,
    experiments: Sequence[str] = (),
    runs: Sequence[str] = (),
) -> tuple[list[Report], list[dict]]:
    """Find every training log under ``root`` and judge each run (:func:`judge_runs`).

    ``root`` is a folder, a file or a URL, or a list of them (their runs together, each
    location once, in the order found).

    ``max_depth`` and ``max_files`` bound the search of an untrusted or huge tree (see
    :func:`discover.walk`); where they cut it, ``ignored`` says so.

    With ``baseline``, each run is also compared with it (compare findings added to its
    report); when the comparison cannot run, ``TP-CMP-ERROR`` (WARN) says why.

    ``jobs``: worker processes (``None``: one per core), at most :func:`usable_cpus`. The
    output is the same, in the same order, whatever the number. When the call is
    interrupted (Ctrl-C, or SIGTERM as the command line handles it) the workers are
    terminated before the exception goes on.

    ``root`` may be an fsspec URL (``s3://bucket/runs/``): its objects are listed once and
    each run is fetched by whoever judges it. ``engine``: ``local`` (the process pool),
    ``dask`` or ``ray`` (:mod:`trainproof.engines`), on the cluster at ``address`` or on
    one started for the call (``jobs`` workers); the output is the same as ``local``.

    ``charts=False`` leaves ``Report.charts`` empty (nothing but the HTML report uses them).

    ``root`` may be an MLflow tracking server (``http://host:5000``, see
    :mod:`trainproof.mlflow_server`): each of its live runs is a location, fetched by
    whoever judges it. ``experiments`` (names) and ``runs`` (run ids) narrow what such a
    root gives; other roots ignore them. A run with no metric is listed in ``ignored``.

    Raises:
        ReadError: a URL ``root`` cannot be listed (or the ``[remote]`` extra is missing),
            or a tracking server cannot be read.
        engines.EngineError: the engine's package is missing or its cluster unreachable.

    Returns:
        ``(reports, ignored)``: one report per run (unreadable logs as error reports; a log
        of several runs gives one report per run, worst first) and
        ``{"file", "reason"}`` for each file that was looked at and is not a training log
        (a data table, an event file without scalars, a file no reader recognises).
    """
    config = JudgeConfig(
        fmt,
        tuple(sorted((mapping or {}).items())),
        tuple(mute),
        thresholds,
        str(baseline) if baseline is not None else None,
        charts,
    )
    limits: list[dict] = []
    candidates = []
    local: list[Path] = []
    for one in [root] if isinstance(root, (str, Path)) else list(root):
        if _on_server(one):
            from .mlflow_server import discover as server_runs

            candidates.extend(Candidate(loc) for loc in server_runs(str(one), experiments, runs, limits))
        elif is_url(one):
            from .remote import discover

            candidates.extend(discover(one, max_depth, max_files, limits))
        else:
            local.extend(walk(Path(one), max_depth, max_files, limits))
    # One grouping over every local path: snapshots and shards given as separate
    # arguments still fold into their run; a path given twice is one candidate.
    candidates.extend(fold_copies(group_runs(sorted(set(local)))))
    reports: list[Report] = []
    ignored: list[dict] = list(limits)
    work = [(c.location, config) for c in candidates]
    pool = None
    release = lambda: None  # noqa: E731 - nothing held unless the pool is started
    if engine != "local":
        from .engines import map_judge

        if address is None and jobs is not None:
            jobs = min(max(1, int(jobs)), usable_cpus())  # a local cluster on this machine
        results = map_judge(
            engine, [c.location for c in candidates], config, judge=judge_runs, address=address, workers=jobs
        )
    else:
        jobs = usable_cpus() if jobs is None else min(max(1, int(jobs)), usable_cpus())
        if jobs > 1 and len(work) >= _MIN_PARALLEL:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
            release = _signals_held()
            try:
                pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_worker_start)
                # map submits every chunk now, and the pool forks all its workers on the first.
                results = pool.map(_judge_candidate, work, chunksize=max(1, min(16, len(work) // (4 * jobs))))
            except BaseException:
                release()
                if pool is not None:
                    _end_workers(pool)
                raise
        else:
            results = map(_judge_candidate, work)
    try:
        release()  # a stop signal held during the forks is handled here, inside the try
        for i, (cand, (reps, skip)) in enumerate(zip(candidates, results)):
            if progress is not None:
                progress(i, len(candidates), str(cand.path))
            if skip is not None:
                skips = skip if isinstance(skip, list) else [skip]
                ignored.extend(skips)
                # a copy of a file that is not a run is not one either, for the same reason
                ignored.extend(
                    {"file": str(c), "reason": s["reason"]}
                    for s in skips
                    if s["file"] == str(cand.path)
                    for c in cand.copies
                )
            for rep in reps:
                if rep.file == str(cand.path) or str(cand.path) in rep.also:
                    folded = (
                        [
                            f"folded {len(cand.snapshots)} checkpoint snapshot(s) of the same run; "
                            "judged the most complete"
                        ]
                        if cand.snapshots
                        else []
                    )
                    rep = replace(
                        rep,
                        snapshots=[str(p) for p in cand.snapshots],
                        notes=[*rep.notes, *folded],
                        also=[*rep.also, *(str(p) for p in cand.copies)],
                    )
                reports.append(rep)
    except BaseException:
        if pool is not None:
            _end_workers(pool)
            pool = None  # ended: its threads are not waited for (a killed worker may have left half a message)
        raise
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        close = getattr(results, "close", None)
        if close is not None:
            close()
    return _with_experiments(reports), ignored


def _with_experiments(reports: list[Report]) -> list[Report]:
    """``reports`` with ``experiment`` set on runs that share one with another run
    (:func:`discover.experiment_of`; the runs of one multi-run file share the file): a lone
    run is not a group."""
    from collections import Counter

    keys = [_experiment_key(r) for r in reports]
    counts = Counter(k for k in keys if k is not None)
    return [replace(r, experiment=k) if k is not None and counts[k] > 1 else r for r, k in zip(reports, keys)]


def _experiment_key(r: Report) -> str | None:
    """The group of ``r`` in ``doctor``'s table: the tracker's experiment or project where
    the reader found one (qualified by the store: the folder of W&B run folders, the
    SQLite file, the tracking server), else the runs of one multi-run file together, else
    the folder its path names (:func:`discover.experiment_of`)."""
    exp = r.meta.get("experiment")
    if exp:
        if is_url(r.file):
            where = r.file.split("#", 1)[0].rstrip("/")
        else:
            where = experiment_of(r.file) or (r.file if r.meta.get("run") else str(Path(r.file).parent))
        return f"{where}{EXPERIMENT_SEP}{exp}"
    return r.file if r.meta.get("run") else experiment_of(r.file)


def _with_comparison(
    rep: Report, baseline: RunLog, run: RunLog, base_report: Report | None, thresholds: Thresholds, mute: Iterable[str]
) -> Report:
    """``rep`` (``run``'s own report) with its comparison with ``baseline`` merged in, and
    the FAIL summary of the merged findings."""
    from .rules.compare import compare_runlogs, merge_comparison
    from .rules.engine import fail_summary

    merged = merge_comparison(rep, *compare_runlogs(baseline, run, base_report, thresholds, mute))
    return replace(merged, summary=fail_summary(merged.findings, run))


def compare(
    baseline: str | Path,
    runs: Iterable[str | Path],
    fmt: str = "auto",
    mapping: Mapping[str, str] | None = None,
    mute: Iterable[str] = (),
    thresholds: Thresholds = DEFAULT,
    charts: bool = True,
) -> tuple[Report, list[Report]]:
    """Judge each run on its own and against a known-good baseline of the same task.

    ``charts=False`` leaves ``Report.charts`` empty (nothing but the HTML report uses them).

    Returns:
        ``(baseline_report, run_reports)``: the baseline's own single-run report, and one
        report per run holding its single-run findings plus its compare findings (source
        ``compare``); a log that holds several runs (a tracker's store) gives one report
        per run. A run that cannot be read gives an error report.

    Raises:
        ReadError: the baseline cannot be read, or holds several runs (nothing, or no one
            run, to compare with).
    """
    mute = list(mute)
    bases = read_runlogs(baseline, fmt, mapping)
    if len(bases) != 1:
        names = ", ".join(repr(r.meta.get("run", "?")) for r in bases[:5])
        raise ReadError(f"holds {len(bases)} runs ({names}{', …' if len(bases) > 5 else ''}): a baseline is one run")
    base = bases[0]
    base_report = _charted(judge_runlog(base, thresholds, mute), base, charts)
    reports = []
    for p in runs:
        try:
            found = read_runlogs(p, fmt, mapping)
        except (ReadError, MappingError) as e:
            reports.append(error_report(str(shown(p)), str(e)))
            continue
        for run in found:
            rep = _with_comparison(judge_runlog(run, thresholds, mute), base, run, base_report, thresholds, mute)
            reports.append(_charted(rep, run, charts))
    return base_report, reports
