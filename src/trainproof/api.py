"""The Python API: judge a log file (or a RunLog) and get a :class:`Report`."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import sources
from .aliases.mapping import MappingError
from .discover import Candidate, experiment_of
from .engines import ENDED_POOLS, map_judge, usable_cpus  # noqa: F401 - ENDED_POOLS, usable_cpus: kept importable from the API
from .findings import EXPERIMENT_SEP, Finding, Report, worst_first
from .formats import ReadError
from .remote import is_url, refuse_password, shown
from .rules.engine import error_report, judge_runlog
from .rules.thresholds import DEFAULT, Thresholds
from .runlog import RunLog, same_run
from .sources import Found, file_source, list_locations, source_of

# What a log's name says, still asked of the API (tests/formats/test_base.py).
_trainer_name = sources._trainer_name
_looks_like_log_name = sources._looks_like_log_name


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
    return source_of(path).open(fmt, mapping, every_run=False)


def read_runlogs(path: str | Path, fmt: str = "auto", mapping: Mapping[str, str] | None = None) -> list[RunLog]:
    """Read one log into one :class:`RunLog` per run it holds (see
    :func:`trainproof.runlog.build_runlogs`): a list of one for almost every log; one
    per run for a W&B panel export of several runs; one per run of an MLflow tracking
    server's URL, or of one of its experiments. Arguments and errors as
    :func:`read_runlog`."""
    refuse_password(path)
    return source_of(path).open(fmt, mapping)


def judge(
    path: str | Path,
    fmt: str = "auto",
    mapping: Mapping[str, str] | None = None,
    mute: Iterable[str] = (),
    thresholds: Thresholds = DEFAULT,
    history: str | Path | None = None,
    experiment: str | None = None,
) -> Report:
    """Read and judge one log (for a log of several runs, the worst of
    :func:`judge_all`); with ``history``, judged against and recorded into the run history
    (see :func:`doctor`).

    Never raises for a bad input: a file that cannot be read gives a report with
    ``error`` set and a ``TP-READ-ERROR`` finding (verdict NOT-CHECKED, exit 2). ``path``
    may be an fsspec URL (see :func:`read_runlog`).
    """
    return judge_all(path, fmt, mapping, mute, thresholds, history=history, experiment=experiment)[0]


def judge_all(
    path: str | Path,
    fmt: str = "auto",
    mapping: Mapping[str, str] | None = None,
    mute: Iterable[str] = (),
    thresholds: Thresholds = DEFAULT,
    charts: bool = True,
    history: str | Path | None = None,
    experiment: str | None = None,
) -> list[Report]:
    """Read and judge one log: one report per run it holds (:func:`read_runlogs`), worst
    verdict first (runs of one verdict in the order of their names). Never raises for a
    bad input (an error report, as :func:`judge`); never an empty list. ``history`` and
    ``experiment``: as :func:`doctor`'s."""
    try:
        runs = read_runlogs(path, fmt, mapping)
    except (ReadError, MappingError) as e:
        return [error_report(str(shown(path)), str(e), None if fmt == "auto" else fmt)]
    keep = _recorder(history, experiment, thresholds, mute, charts)
    reports = [keep(run, judge_runlog(run, thresholds, mute)) for run in runs]
    return worst_first([_charted(rep, run, charts) for rep, run in zip(reports, runs)])


def _each_run(paths: Iterable[str | Path], fmt: str, mapping, errors: list[Report]) -> Iterator[RunLog]:
    """Every run of every log in ``paths``, in order; a log that cannot be read adds its
    error report to ``errors`` (in its place among the reports) instead."""
    for p in paths:
        try:
            found = read_runlogs(p, fmt, mapping)
        except (ReadError, MappingError) as e:
            errors.append(error_report(str(shown(p)), str(e)))
            continue
        yield from found


def _recorder(history, experiment, thresholds, mute, charts) -> Callable[[RunLog, Report], Report]:
    """``(run, report) -> report``: each run judged against the run history and recorded
    into it (:func:`trainproof.history.recording.record`), or the report unchanged without
    a history. The runs one command records are judged against the history as it was when
    the recorder was made (``before``), never against each other: the result is the same in
    any order."""
    if history is None:
        return lambda run, rep: rep
    from .history.recording import record

    started = time.time()
    return lambda run, rep: record(
        run, rep, str(history), experiment=experiment, thresholds=thresholds, mute=mute, chart=charts, before=started
    )


def _charted(rep: Report, run: RunLog, charts: bool) -> Report:
    """``rep`` with ``run``'s chart data attached when ``charts`` (an HTML report is asked for)."""
    if not charts:
        return rep
    from .render.charts import with_charts

    return with_charts(rep, run)


@dataclass(frozen=True)
class JudgeConfig:
    """Everything a judgement depends on besides the log (picklable: it travels to worker
    processes and cluster engines). ``mapping``: canonical -> raw key (``--map``);
    ``baseline``: a known-good run each run is also compared with; ``charts``: fill
    ``Report.charts`` (only the HTML report draws them; without, a report is a fraction of
    the size to send back from a worker); ``history``: the run history each judged run is
    judged against and recorded into (a location string, opened by whoever judges:
    :mod:`trainproof.history`), under ``experiment`` where given; ``history_before``: each
    run is judged against the runs recorded before this time (seconds since the epoch: when
    the command started), so that the runs of one command are never each other's past and
    the result is the same in any order and for any number of workers."""

    fmt: str = "auto"
    mapping: tuple[tuple[str, str], ...] = ()
    mute: tuple[str, ...] = ()
    thresholds: Thresholds = DEFAULT
    baseline: str | None = None
    charts: bool = True
    history: str | None = None
    experiment: str | None = None
    history_before: float | None = None


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


@dataclass(frozen=True)
class Judgement:
    """What judging one location found by ``doctor`` gives (:func:`judge_location`).

    Attributes:
        reports: one report per run the location holds, worst first (almost always one;
            one per run of a tracker's store or a W&B panel export of several runs; one
            per distinct run of a log and its siblings), or one error report when a run's
            log cannot be read. Empty when nothing there is a run.
        ignored: ``{"file", "reason"}`` for each file looked at that is not a training log
            (a data table, an event file without scalars, content no reader recognises
            under a neutral name).
    """

    reports: list[Report] = field(default_factory=list)
    ignored: list[dict] = field(default_factory=list)


def judge_location(location: str | Path | tuple, config: JudgeConfig = JudgeConfig()) -> Judgement:
    """Judge the log at one location found by ``doctor``: a pure function of the location
    and the config, so that processes or a cluster engine (:mod:`trainproof.engines`) can
    run it anywhere and only schedule. Never raises for a bad input.

    ``location`` is a path, an fsspec URL (a string: the run is staged where this runs, see
    :mod:`trainproof.remote`, so a cluster worker fetches its runs itself), the UI URL of a
    run on an MLflow tracking server (fetched over its API, :mod:`trainproof.mlflow_server`),
    or a tuple of a log and the siblings that may hold the same run
    (:attr:`discover.Candidate.location`): one report per distinct run, the other logs of
    a run in its ``also``.
    """
    if isinstance(location, tuple):
        return _judge_group(location, config)
    try:
        refuse_password(location)
    except ReadError as e:
        return Judgement([error_report(shown(location), str(e))])
    return _judged(source_of(location).find(config.fmt, dict(config.mapping) or None), config)


def judge_run(location: str | Path, config: JudgeConfig = JudgeConfig()) -> tuple[Report | None, dict | None]:
    """:func:`judge_location` of one location with only the worst report of a log that holds
    several runs (kept for callers of the earlier API).

    Returns:
        ``(report, None)`` for a run (an error report when it cannot be read), or
        ``(None, {"file", "reason"})`` for a file that is not a training log.
    """
    reports, skip = judge_runs(location, config)
    return (reports[0] if reports else None), skip


def judge_runs(
    location: str | Path | tuple, config: JudgeConfig = JudgeConfig()
) -> tuple[list[Report], dict | list[dict] | None]:
    """:func:`judge_location` in the earlier API's shape (kept for its callers).

    Returns:
        ``(reports, None)`` for a location that holds runs or cannot be read, or
        ``([], {"file", "reason"})`` for a file that is not a training log; for a tuple of
        a log and its siblings, ``(reports, [{"file", "reason"}, ...])``.
    """
    judged = judge_location(location, config)
    if isinstance(location, tuple):
        return judged.reports, judged.ignored
    return judged.reports, (judged.ignored[0] if judged.ignored else None)


def _same_location(a: str, b: str) -> bool:
    if is_url(a) or is_url(b):
        return a == b
    return Path(a).resolve() == Path(b).resolve()


def _judged(found: Found, config: JudgeConfig) -> Judgement:
    """The judgement of what one location holds: its runs' reports (worst first), or an
    error report, or the reason it is not a run."""
    if found.error is not None:
        return Judgement([error_report(found.label, found.error)])
    if found.skip is not None:
        return Judgement([], [{"file": found.label, "reason": found.skip}])
    # A run's own path is its name (the label; a tracking server's run: its run URL).
    return Judgement(worst_first([_judge_one(run, run.path, config) for run in found.runs]))


def _richness(run: RunLog) -> tuple:
    from .formats import preference

    return (-preference(run.format), len(run.series), run.records)


def _judge_group(paths: tuple, config: JudgeConfig) -> Judgement:
    """Judge a log and the siblings that may hold the same run (:class:`discover.Candidate`):
    logs that hold one run and agree by :func:`same_run` are one report, of the richest
    (by the readers' ``preference``, then most metrics, then records), with the others in ``also``;
    the rest are judged on their own."""
    reports: list[Report] = []
    skips: list[dict] = []
    single: list[tuple[str, RunLog]] = []
    for p in paths:
        label = str(p)
        found = file_source(p).find(config.fmt, dict(config.mapping) or None)
        if found.runs:
            if len(found.runs) == 1:
                single.append((label, found.runs[0]))
            else:
                reports.extend(_judge_one(run, label, config) for run in found.runs)
            continue
        judged = _judged(found, config)
        reports.extend(judged.reports)
        skips.extend(judged.ignored)
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
    return Judgement(worst_first(reports), skips)


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
    if config.history is not None:
        from .history.recording import record

        rep = record(
            run,
            rep,
            config.history,
            experiment=config.experiment,
            thresholds=config.thresholds,
            source=label,
            mute=config.mute,
            chart=config.charts,
            before=config.history_before,
        )
    return _charted(rep, run, config.charts)


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
    history: str | Path | None = None,
    experiment: str | None = None,
) -> tuple[list[Report], list[dict]]:
    """Find every training log under ``root`` and judge each run: the locations listed by
    their sources (:func:`trainproof.sources.list_locations`), each judged by
    :func:`judge_location` on ``engine``, the judgements folded into one list of reports.

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

    ``history``: a run history (an SQLite file or a ``postgresql://`` URL,
    :mod:`trainproof.history`): each judged run is judged also against its experiment's
    recent healthy runs there, then recorded, under ``experiment`` where given (else its
    tracker's experiment or its folder). A store that cannot be used sets the report's
    ``history_error``; the verdict stays the run's own.

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
        str(history) if history is not None else None,
        experiment,
        time.time() if history is not None else None,
    )
    limits: list[dict] = []
    roots = [root] if isinstance(root, (str, Path)) else list(root)
    candidates = list_locations(roots, max_depth, max_files, limits, experiments, runs)
    reports: list[Report] = []
    ignored: list[dict] = list(limits)
    results = map_judge(
        engine, [c.location for c in candidates], config, judge=judge_location, address=address, workers=jobs
    )
    try:
        for i, (cand, judged) in enumerate(zip(candidates, results)):
            if progress is not None:
                progress(i, len(candidates), str(cand.path))
            reps, skips = _folded(cand, judged)
            reports.extend(reps)
            ignored.extend(skips)
    except BaseException:
        results.abort()  # stopped (Ctrl-C, SIGTERM, an error): the workers end now
        raise
    finally:
        results.close()
    return _with_experiments(reports), ignored


def _folded(cand: Candidate, judged: Judgement) -> tuple[list[Report], list[dict]]:
    """``judged``'s reports and ignored files with what the search folded into ``cand``:
    its checkpoint snapshots and its byte-identical copies (a copy of a file that is not a
    run is not one either, for the same reason)."""
    path = str(cand.path)
    ignored = [*judged.ignored]
    ignored.extend(
        {"file": str(c), "reason": s["reason"]} for s in judged.ignored if s["file"] == path for c in cand.copies
    )
    reports = []
    for rep in judged.reports:
        if rep.file == path or path in rep.also:
            folded = (
                [f"folded {len(cand.snapshots)} checkpoint snapshot(s) of the same run; judged the most complete"]
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
    return reports, ignored


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
    history: str | Path | None = None,
    experiment: str | None = None,
) -> tuple[Report, list[Report]]:
    """Judge each run on its own and against a known-good baseline of the same task.

    ``charts=False`` leaves ``Report.charts`` empty (nothing but the HTML report uses them).
    ``history`` and ``experiment``: each run (not the baseline) is judged against and
    recorded into the run history, as :func:`doctor`'s.

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
    keep = _recorder(history, experiment, thresholds, mute, charts)
    for run in _each_run(runs, fmt, mapping, reports):
        rep = _with_comparison(judge_runlog(run, thresholds, mute), base, run, base_report, thresholds, mute)
        reports.append(_charted(keep(run, rep), run, charts))
    return base_report, reports


def compare_against(
    runs: Iterable[str | Path],
    against: str,
    history: str | Path,
    fmt: str = "auto",
    mapping: Mapping[str, str] | None = None,
    mute: Iterable[str] = (),
    thresholds: Thresholds = DEFAULT,
    charts: bool = True,
    experiment: str | None = None,
) -> tuple[list[Report], list[Report]]:
    """Judge each run on its own and against a baseline taken from the run history:
    ``against`` is ``best`` (the experiment's healthy run with the lowest floor),
    ``last:N`` (the median of its N most recent healthy runs) or a recorded run's name
    (:func:`trainproof.history.baseline.pick`). Each run's experiment is ``experiment``,
    else its own (:func:`trainproof.history.record.experiment_of`); each run is then
    recorded into the history, as :func:`compare` with ``history`` does.

    Returns:
        ``(baseline_reports, run_reports)``: each distinct baseline's own report (its
        record's curves judged; file ``<run> (history #<id>)``), in the order first used,
        and one report per run (``meta["compare"]["baseline"]`` names its baseline's file). A run
        whose baseline cannot be found gets its own report with ``history_error`` set.

    Raises:
        ValueError: ``against`` is not ``best``, ``last:N`` or a name.
        trainproof.history.store.HistoryError: the history cannot be opened.
    """
    from .history.baseline import Against, pick
    from .history.record import experiment_of, run_name_of, runlog_of, source_of
    from .history.recording import store_at
    from .history.store import HistoryError, is_postgres

    spec = Against.parse(against)
    mute = list(mute)
    keep = _recorder(history, experiment, thresholds, mute, charts)
    # A history file that does not exist holds no baseline; and since a run is recorded
    # only once compared, nothing would be written: it is not created.
    loc = str(history)
    missing = (
        None
        if is_postgres(loc) or Path(loc).exists()
        else f"history {loc}: no such file (nothing recorded there yet, so no run to compare with)"
    )
    store = None if missing else store_at(loc)
    bases: dict[int, tuple[RunLog, Report]] = {}
    reports = []
    for run in _each_run(runs, fmt, mapping, reports):
        rep = judge_runlog(run, thresholds, mute)
        exp = experiment_of(run, rep, explicit=experiment)
        src = source_of(run.path)
        error = missing
        if store is not None:
            try:
                chosen = pick(store, exp, spec, exclude=(src, run_name_of(run, exp, src)))
            except HistoryError as e:
                error = str(e)
        if error:
            reports.append(_charted(replace(rep, history_error=error), run, charts))
            continue
        if chosen.id not in bases:
            base = runlog_of(chosen)
            bases[chosen.id] = (base, _charted(judge_runlog(base, thresholds, mute), base, charts))
        base, base_report = bases[chosen.id]
        rep = _with_comparison(rep, base, run, base_report, thresholds, mute)
        rep = replace(rep, meta={**rep.meta, "compare": {**rep.meta.get("compare", {}), "baseline": base_report.file}})
        reports.append(_charted(keep(run, rep), run, charts))
    return [b for _, b in bases.values()], reports
