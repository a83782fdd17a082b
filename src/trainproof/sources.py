"""Where runs come from: local paths, fsspec URLs and MLflow tracking servers.

Each kind of location is a :class:`Source` that lists the runs under it (``doctor``'s
search) and opens one location into :class:`~trainproof.runlog.RunLog` objects.
:func:`source_of` is the one place that tells the three apart; the API (:mod:`trainproof.api`)
reads and judges through it and knows no kind of location.

- :class:`LocalSource`: a file or folder on this machine, read by the readers
  (:mod:`trainproof.formats`); a folder is searched by :func:`trainproof.discover.walk`.
- :class:`UrlSource`: an fsspec URL (``s3://...``, the ``[remote]`` extra), staged on this
  machine in chunks under the size cap and deadline of :mod:`trainproof.remote`, read as a
  local path and named by its URL.
- :class:`MlflowServerSource`: an MLflow tracking server's URL, or the UI URL of one of its
  experiments or runs, read over its REST API (:mod:`trainproof.mlflow_server`).

What a reader raises on input it cannot take besides ``ReadError`` leaves as a
``ReadError`` (:func:`trainproof.formats.reading`): an error for that location only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .aliases.mapping import MappingError
from .aliases.vocabulary import words
from .discover import Candidate, fold_copies, group_runs, walk
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
from .remote import is_url
from .runlog import RunLog, RunStart, build_runlog, build_runlogs, same_run

__all__ = [
    "Found",
    "LocalSource",
    "MlflowServerSource",
    "Source",
    "UrlSource",
    "file_source",
    "list_locations",
    "source_of",
]


@dataclass
class Found:
    """What one location holds, as ``doctor`` sees it: runs to judge, or a reason it is not
    a run, or a reason it could not be read.

    Attributes:
        label: the location's name in reports (the path or URL as given).
        runs: the runs it holds (empty when ``skip`` or ``error`` is set).
        skip: why it is not a training log (a data table, a config, an empty file…).
        error: why it could not be read although it is a run's log.
    """

    label: str
    runs: list[RunLog] = field(default_factory=list)
    skip: str | None = None
    error: str | None = None


class Source:
    """One location runs come from. Subclasses open it into RunLogs (:meth:`open`), say
    what it holds for ``doctor`` (:meth:`find`), and list the locations under it
    (:meth:`locations`)."""

    def __init__(self, location) -> None:
        self.location = location

    def open(self, fmt: str = "auto", mapping: Mapping[str, str] | None = None, every_run: bool = True):
        """The RunLogs of this location: a list of one per run it holds (with
        ``every_run``), else the one RunLog it holds.

        Raises:
            ReadError: it cannot be read as a training log.
            MappingError: an override names a column the log does not have.
        """
        raise NotImplementedError

    def find(self, fmt: str, mapping: Mapping[str, str] | None) -> Found:
        """What this location holds for ``doctor``; never raises for a bad input."""
        raise NotImplementedError

    def locations(self, max_depth: int | None, max_files: int | None, limits: list[dict], **narrow) -> list:
        """The locations under this one (``doctor``'s search); where the bounds cut it,
        ``limits`` says so."""
        raise NotImplementedError


#: How deep and how wide :func:`_single_run_in` looks in a folder given as one log: a
#: Lightning logger's ``lightning_logs/version_0/metrics.csv`` is two levels down.
SINGLE_RUN_DEPTH = 3
SINGLE_RUN_FILES = 200


#: What :func:`_single_run_in` says of a folder that holds several runs.
SEVERAL = Path()


def _single_run_in(path: Path, fmt: str, mapping: Mapping[str, str] | None) -> tuple[Path, list[RunLog]] | Path | None:
    """The one run's log (file or run folder) under the folder ``path`` that no reader
    reads as a whole, as ``doctor`` finds them (at most :data:`SINGLE_RUN_DEPTH` levels
    down and :data:`SINGLE_RUN_FILES` files; copies folded), counting only what reads as a
    training log (a config or a data table beside it is none) and a sibling that may hold
    the same run as one more: ``(its path, the runs read from it)`` (read once, as
    ``doctor`` reads it), ``None`` when it holds none, :data:`SEVERAL` when it holds
    several (two seeds), as ``doctor`` would list them. ``judge lightning_logs/version_0``
    means its ``metrics.csv``."""
    found = walk(path, SINGLE_RUN_DEPTH, SINGLE_RUN_FILES, [])
    runs: list[tuple[Path, list[RunLog]]] = []
    for c in fold_copies(group_runs(sorted(set(found)))):
        for p in (c.path, *c.siblings):
            if p == path:
                continue
            held = LocalSource(p).find(fmt, mapping).runs
            if len(held) > 1:
                return SEVERAL
            # a sibling that holds the same run written again (the event file beside a
            # Lightning metrics.csv) is that run, as doctor reads it
            if held and not any(same_run(r[0], held[0]) for _, r in runs):
                runs.append((p, held))
                if len(runs) > 1:
                    return SEVERAL
    return runs[0] if runs else None


class LocalSource(Source):
    """A file or folder on this machine."""

    def open(self, fmt="auto", mapping=None, every_run=True):
        path = Path(self.location)
        try:
            return _read_local(path, fmt, mapping, label=str(self.location), every_run=every_run)
        except NotALog:
            one = _single_run_in(path, fmt, mapping) if path.is_dir() else None
            if one is None:
                raise
            if one is SEVERAL:
                raise NotALog(
                    "is a folder of several runs: judge one of them, or use `trainproof doctor` to judge every log "
                    "under it"
                ) from None
        log, runs = one
        note = f"{self.location} is a folder that holds one run's log: {log} is read"
        for run in runs:
            run.notes.insert(0, note)
        return runs if every_run else runs[0]

    def find(self, fmt, mapping) -> Found:
        path = Path(self.location)
        return _find_at(path, str(path), fmt, mapping)

    def locations(self, max_depth, max_files, limits, **narrow) -> list[Path]:
        """The log files and run folders under this path (:func:`discover.walk`), not yet
        grouped into runs: :func:`list_locations` groups every local path together."""
        return walk(Path(self.location), max_depth, max_files, limits)


class UrlSource(Source):
    """An fsspec URL: staged on this machine (:func:`trainproof.remote.staged`), read as a
    local path, named by the URL."""

    def open(self, fmt="auto", mapping=None, every_run=True):
        from .remote import staged

        with staged(self.location, fmt) as local:
            return _read_local(local, fmt, mapping, label=self.location, every_run=every_run)

    def find(self, fmt, mapping) -> Found:
        from .remote import staged

        label = str(self.location)
        try:
            with staged(self.location, fmt) as local:
                return _find_at(local, label, fmt, mapping)
        except ReadError as e:  # the extra is missing, or the URL cannot be fetched
            return Found(label, error=str(e))

    def locations(self, max_depth, max_files, limits, **narrow) -> list[Candidate]:
        """The runs under the URL, grouped as on disk (:func:`trainproof.remote.discover`)."""
        from .remote import discover

        return discover(self.location, max_depth, max_files, limits)


class MlflowServerSource(Source):
    """An MLflow tracking server's URL, or the UI URL of one of its experiments or runs."""

    def open(self, fmt="auto", mapping=None, every_run=True):
        from .mlflow_server import read_runlogs as server_runlogs

        with reading():
            runs = server_runlogs(self.location, mapping)
        if every_run:
            return runs
        if len(runs) != 1:
            raise ReadError(f"holds {len(runs)} runs: give the URL of one run (…/#/experiments/<id>/runs/<id>)")
        return runs[0]

    def find(self, fmt, mapping) -> Found:
        try:
            return Found(self.location, runs=self.open(fmt, mapping))
        except (ReadError, MappingError) as e:
            return Found(self.location, error=str(e))

    def locations(self, max_depth, max_files, limits, experiments: Sequence[str] = (), runs: Sequence[str] = ()):
        """The server's live runs with a metric, as run URLs (runs without one go to
        ``limits``), narrowed to ``experiments`` (names) and ``runs`` (ids)."""
        from .mlflow_server import discover as server_runs

        return [Candidate(loc) for loc in server_runs(str(self.location), experiments, runs, limits)]


def is_server(location) -> bool:
    """Whether ``location`` is an MLflow tracking server's URL (or one of its runs')."""
    if not is_url(location):
        return False
    from .mlflow_server import is_tracking_server

    return is_tracking_server(location)


def source_of(location) -> Source:
    """The source ``location`` (a path, a URL or an MLflow server's URL) belongs to."""
    if is_server(location):
        return MlflowServerSource(location)
    if is_url(location):
        return UrlSource(location)
    return LocalSource(location)


def list_locations(
    roots: Sequence,
    max_depth: int | None = None,
    max_files: int | None = None,
    limits: list[dict] | None = None,
    experiments: Sequence[str] = (),
    runs: Sequence[str] = (),
) -> list[Candidate]:
    """``doctor``'s candidates under each of ``roots``, in the order found: a URL's and a
    server's as their source lists them, then every local path's grouped together (so
    that snapshots and shards given as separate arguments still fold into their run, and
    a path given twice is one candidate). Where a bound cuts the search, or a server's run
    has no metric, ``limits`` gets a ``{"file", "reason"}``.

    With several roots, a URL or a server that cannot be listed is one candidate of its
    own (judged, it is a NOT-CHECKED report with the reason), so that one hostile server
    never hides the runs of the other roots.

    Raises:
        ReadError: the only root is a URL that cannot be listed, or a tracking server that
            cannot be read.
    """
    limits = [] if limits is None else limits
    candidates: list[Candidate] = []
    local: list[Path] = []
    for one in roots:
        source = source_of(one)
        try:
            found = source.locations(max_depth, max_files, limits, experiments=experiments, runs=runs)
        except ReadError:
            if len(roots) == 1 or isinstance(source, LocalSource):
                raise
            candidates.append(Candidate(one))
            continue
        if isinstance(source, LocalSource):
            local.extend(found)
        else:
            candidates.extend(found)
    candidates.extend(fold_copies(group_runs(sorted(set(local)))))
    return candidates


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


def _find_at(path: Path, label: str, fmt: str, mapping: Mapping[str, str] | None) -> Found:
    """What the local ``path`` (named ``label``) holds for ``doctor``."""
    # Only training logs are runs: a file counts when its content is a log (or, where its
    # content cannot be seen, when only a run writes a file of its name), so a stray
    # config, source file or empty file never makes a clean tree "not judged".
    try:
        runs = _read_local(path, fmt, mapping, label, every_run=True)
    except NotALog as e:
        # A tracker's store with no run in it (NoRuns) is the tracker's file but not a run;
        # a saved trainproof report (OwnOutput) is trainproof's, whatever its name says.
        if _log_by_content(path) and not isinstance(e, (NoRuns, OwnOutput)):
            return Found(label, error=str(e))
        return Found(label, skip=str(e))
    except NotOpened as e:
        if str(e) != "empty file" and _looks_like_log_name(path):
            return Found(label, error=str(e))
        return Found(label, skip=f"{e}: not a run")
    except (ReadError, MappingError) as e:
        return Found(label, error=str(e))
    first = runs[0]
    if first.format in ("jsonl", "csv") and not first.mapping and not first.explicit_steps:
        return Found(label, skip="a data table: no step column and no known metric")
    if first.format in ("jsonl", "csv") and len(runs) == 1 and first.records < 2 and not _looks_like_log_name(path):
        # One object is a config or a summary (HF all_results.json, wandb-summary.json),
        # not a series of records: nothing a trend check could judge.
        return Found(label, skip="one record, not a series (a config or a summary)")
    if first.format in ("jsonl", "csv") and len(runs) == 1 and (why := _table_of_runs(first)) is not None:
        return Found(label, skip=why)
    if first.format == "tfevents" and first.records == 0:
        return Found(label, skip="an event file without scalars (hparams, text, graphs or profiles only)")
    return Found(label, runs=runs)


#: Most rows a table of runs holds: a sweep's results list tens of runs; a log with no step
#: column longer than this is a log (an RL run's episodes with their env seeds, a per-step
#: ``final_loss``), judged rather than left out.
TABLE_OF_RUNS_MAX_ROWS = 100


def _table_of_runs(run: RunLog) -> str | None:
    """Why a JSONL or CSV table with no step column holds one row per run (a sweep's
    results, ``run,lr,seed,final_loss``), not one per step, or ``None``: at most
    :data:`TABLE_OF_RUNS_MAX_ROWS` rows, no column of whole numbers that counts up along every
    row (an epoch, an episode, ``num_updates``, a seed of 42 + epoch: a counter makes it a
    log), and a seed column whose value changes from row to row (one run has one seed) or a
    loss read from a ``final_`` key (each row a run's last value). Its rows in order are no
    curve, and a run that ended in NaN among them is no NaN of a run's log."""
    if run.explicit_steps or run.records > TABLE_OF_RUNS_MAX_ROWS:
        return None
    for s in run.series.values():
        v = s.values
        if v.size >= 3 and bool(s.finite_mask.all() and (v == np.round(v)).all() and (v[1:] > v[:-1]).all()):
            return None
    for s in run.series.values():
        if "seed" in words(s.key) and len(set(s.values[s.finite_mask].tolist())) >= 2:
            return f"a table of runs, not a series: its {s.key} changes from row to row (a sweep's results)"
    source = run.mapping.get("loss", {}).get("source")
    if source and words(source)[:1] == ["final"]:
        return f"a table of runs, not a series: its loss is {source}, each row a run's last value (a sweep's results)"
    return None


def file_source(location) -> Source:
    """The source of a log found by a search (a member of a
    :attr:`~trainproof.discover.Candidate.location`): a URL's or a local path's, never a
    tracking server's (a run folder's URL without a dot could pass for one)."""
    return UrlSource(location) if is_url(location) else LocalSource(location)
