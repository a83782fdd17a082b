"""Weights & Biases runs: the ``run-<id>.wandb`` transaction log and the run folder that
holds it (``wandb/run-YYYYMMDD_HHMMSS-<id>/``, ``wandb/offline-run-…/``), without wandb.

Three layers, as the event files have (:mod:`._tfrecord`, :mod:`._event_proto`,
:mod:`.tfevents`): the **framing** of a ``.wandb`` file into record payloads
(:mod:`._wandb_log`: W&B's variant of the LevelDB log format, 32 KiB blocks of
checksummed chunks), the **records** (:mod:`._wandb_records`: the few fields of
``wandb_internal.Record`` judging needs, over the shared protobuf wire format of
:mod:`._protowire`; history values are JSON, media skipped), and here the **run**: the run
folder, its log and a resumed run's folders, the x axis and what the run declares.

**The x axis** is ``_step``, W&B's own row counter, unless a metric definition
(``run.define_metric(..., step_metric=...)``, which the Hugging Face and Lightning
integrations make for ``train/global_step`` and ``trainer/global_step``) names a step
metric that the rows hold: then that metric is the run's step. A row that does not hold it
takes its last value (what W&B's ``step_sync`` does; ``0`` before the first). A row that
holds nothing but W&B's clock (``_timestamp``, ``_runtime``: a row of media only) is not a
record.

A torn record at the end stops the reading at the last good one, with a note saying how
many bytes were dropped and why (a run still writing, or killed, ends inside a record). A
damaged chunk inside the file loses the rest of its 32 KiB block only: reading goes on at
the next block, as W&B's own reader does, and each region skipped is a drop note (so a
verdict never rests silently on a log with a hole in it, nor stops at the hole). A
run folder of an older client with no ``.wandb`` file is read from
``files/wandb-history.jsonl`` (one JSON object per row) and ``files/config.yaml``.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path

from .. import aliases
from ..runlog import Record
from ._io import NoRuns, ReadError, open_binary, open_text
from ._protowire import ProtoError
from ._tfrecord import MAX_RECORD
from ._values import JSON, as_step

# The framing and record layers; their names a caller of this reader used stay here too.
from ._wandb_log import BLOCK, CHUNK_HEADER, FIRST, FULL, HEADER, LAST, MIDDLE, Tail, is_wandb_header, records
from ._wandb_records import Row, Run, items_to_values, json_value, read_record
from .base import RunDir

__all__ = [
    "BLOCK",
    "CHUNK_HEADER",
    "FIRST",
    "FULL",
    "HEADER",
    "LAST",
    "MIDDLE",
    "RUN_DIR",
    "Tail",
    "is_wandb_header",
    "records",
]

name = "wandb"
description = "Weights & Biases run folders (wandb/run-*/, offline-run-*/) and their run-<id>.wandb logs, read directly"
#: The log of a run folder is ``run-<id>.wandb``; older clients' ``wandb-history.jsonl``
#: is only read inside a run folder (:func:`sniff_dir`).
file_names = ()
suffixes = (".wandb",)
run_suffixes = ()
#: A ``.wandb`` log is appended to, but its records span 32 KiB block boundaries and are
#: flushed every few seconds; it is read again whole.
tail_mode = "whole"
preference = 2
#: Whether outputs anchor a finding at its line (binary: a finding's line is a history record's index).
line_anchors = False

#: W&B's bookkeeping keys: ``_step`` is the x axis, ``_wandb`` the client's own config
#: and summary entries.
_STEP = "_step"
_PRIVATE = ("_wandb",)
#: The clock W&B adds to every row (``_timestamp`` is wall time, ``_runtime`` seconds since
#: the start): a row that holds nothing else (media only) is not a record.
_CLOCK = frozenset({"_timestamp", "_runtime"})
#: Config keys that declare the run's length, and the meta key each one sets.
_INTENT = (
    ("max_steps", "max_steps"),
    ("num_train_epochs", "num_train_epochs"),
    ("epochs", "num_train_epochs"),
    ("max_epochs", "num_train_epochs"),
)

#: ``run-20261203_114121-37a31ibg``, ``offline-run-…``: the folders W&B makes per run.
#: A run id may hold ``-`` and ``_`` (a user may choose it), and a second folder made in
#: the same second for the same id (a run resumed at once) gets ``-1``, ``-2``… after it
#: (``wandb_init.set_sync_dir_suffix``), so the id is everything after the time.
RUN_DIR = re.compile(r"^(?:offline-)?run-\d{8}_\d{6}-([^/\\#?%:]+)$")


def _read_log(path: Path, state) -> tuple[list[Row], Run]:
    """The history rows of a ``.wandb`` file and what it says of its run.

    Raises:
        ReadError: unreadable, not a W&B log, or no complete record at all.
        NoRuns: only the file header (a run that has logged nothing yet).
    """
    try:
        with open_binary(path) as f:
            data = f.read()
    except OSError as e:
        raise ReadError(f"cannot read {path.name}: {e.strerror or e}") from None
    tail = Tail()
    rows: list[Row] = []
    run = Run({}, {}, {}, [])
    bad = 0
    for idx, payload in enumerate(records(data, tail), 1):
        try:
            read_record(payload, idx, rows, run)
        except (ProtoError, UnicodeDecodeError, OverflowError):
            bad += 1
    if tail.records == 0:
        if tail.reason is None and not tail.skipped:
            # What the client writes first: a run in its first seconds, not a damaged log.
            raise NoRuns(f"{path.name} holds only its file header: a W&B run that has logged nothing yet")
        raise ReadError(f"no complete record in {path.name}: {tail.reason or tail.skipped[0][2]}")
    for at, length, why in tail.skipped:
        state.drop(f"{path.name}: {why}; skipped {length} bytes from byte {at} and read on from the next 32 KiB block")
    if tail.reason is not None:
        state.drop(
            f"{path.name}: reading stopped after {tail.records} records: {tail.reason}; "
            f"{tail.size - tail.consumed} bytes dropped"
        )
    if bad:
        state.drop(f"{path.name}: {bad} records are not valid W&B Record messages and were skipped")
    return rows, run


# --- older clients: files/wandb-history.jsonl --------------------------------------------------


def _history_jsonl(path: Path, state) -> list[Row]:
    rows: list[Row] = []
    bad = 0
    label = "files/wandb-history.jsonl"
    with open_text(path) as f:
        for lineno, raw in enumerate(f, 1):
            s = raw.strip()
            if not s:
                continue
            if not raw.endswith("\n"):
                state.drop(f"{label}: the last line ({lineno}) has no line end: cut mid-write, so it was not read")
                break
            obj = json_value(s)
            if not isinstance(obj, Mapping):
                bad += 1
                continue
            items = [((str(k),), v) for k, v in obj.items()]
            values, holes = items_to_values(items)
            rows.append(Row(values, holes, None, lineno))
    if bad:
        state.drop(f"{label}: skipped {bad} line(s) that are not JSON objects")
    return rows


def _config_yaml(path: Path) -> dict[tuple[str, ...], object]:
    """The top-level scalar entries of an older client's ``files/config.yaml``
    (``key:`` then an indented ``value: <scalar>``), enough for the run's intent."""
    out: dict[tuple[str, ...], object] = {}
    key = None
    try:
        with open_text(path) as f:
            for raw in f:
                line = raw.rstrip("\r\n")
                if line and not line[0].isspace() and line.endswith(":"):
                    key = line[:-1].strip()
                elif key is not None and line.strip().startswith("value:"):
                    out[(key,)] = json_value(line.split(":", 1)[1].strip())
                    key = None
    except (OSError, ReadError):
        return {}
    return out


def _summary_json(path: Path) -> dict[tuple[str, ...], object]:
    """An older client's ``files/wandb-summary.json`` (the run's last values, one JSON
    object), as summary items keyed by path; ``{}`` when absent, not an object, or not
    JSON (nested deeper than a decoder follows, too)."""
    try:
        if path.stat().st_size > MAX_RECORD:
            return {}
        with open_text(path) as f:
            obj = JSON.decode(f.read())
    except (OSError, ReadError, ValueError):
        return {}
    return {(str(k),): v for k, v in obj.items()} if isinstance(obj, dict) else {}


# --- the run ----------------------------------------------------------------------------------


def _regular(p: Path) -> bool:
    """Whether ``p`` itself is a regular file (a symlink is not one, wherever it leads)."""
    try:
        return stat.S_ISREG(os.lstat(p).st_mode)
    except OSError:
        return False


def _own_ids(d: Path) -> list[str]:
    """The run ids the name of run folder ``d`` may give its log: the id in the name, and
    without the ``-N`` W&B adds to a folder made in the same second as another."""
    m = RUN_DIR.match(d.name)
    if m is None:
        return []
    rid = m.group(1)
    base = re.match(r"^(.+)-\d+$", rid)
    return [rid, base.group(1)] if base else [rid]


def log_files(d: Path) -> list[Path]:
    """The ``.wandb`` logs of run folder ``d`` that are regular files, sorted by name
    (a symlink is never a log: it may lead out of the searched tree)."""
    try:
        return sorted(p for p in d.glob("*.wandb") if _regular(p))
    except OSError:
        return []


def log_file(d: Path) -> Path | None:
    """The ``run-<id>.wandb`` log of run folder ``d``, or ``None``.

    Where the folder's name holds the run id (``run-<date>-<id>``), the log is the file
    the client writes there, ``run-<id>.wandb``: another ``.wandb`` file in the folder (a
    copy, a planted file) never takes its place. Otherwise, or when that file is absent,
    the last log by name. Only regular files count, never a symlink."""
    for rid in _own_ids(d):
        own = d / f"run-{rid}.wandb"
        if _regular(own):
            return own
    logs = log_files(d)
    return logs[-1] if logs else None


def log_id(log: Path) -> str | None:
    """The run id in a log's name (``run-<id>.wandb``), or ``None``."""
    n = log.name
    return n[4:-6] if n.startswith("run-") and n.endswith(".wandb") and len(n) > 10 else None


_PART_TIME = re.compile(r"run-(\d{8}_\d{6})-")


def part_order(d: Path, run_id: str) -> tuple[str, int]:
    """Where run folder ``d`` of run ``run_id`` falls among the folders of that run: by the
    time in its name, then by the ``-N`` W&B adds to a folder made in the same second."""
    m = _PART_TIME.search(d.name)
    tail = d.name.rsplit(f"-{run_id}", 1)[-1] if run_id else ""
    n = int(tail[1:]) if tail.startswith("-") and tail[1:].isdigit() else 0
    return (m.group(1) if m else "", n)


def resumed_parts(d: Path) -> list[Path]:
    """The run folders beside ``d`` that hold the same run (a run resumed with the same id,
    ``wandb.init(id=…, resume=…)``, writes a new folder each time), ``d`` among them, in
    the order they were written; ``[d]`` for a run written once. Folders reached through a
    symlink (``latest-run``) and logs that are symlinks are not parts."""
    log = log_file(d)
    rid = log_id(log) if log is not None else None
    if rid is None:
        return [d]
    try:
        siblings = [p for p in d.parent.iterdir() if RUN_DIR.match(p.name) and not p.is_symlink() and p.is_dir()]
    except OSError:
        return [d]
    parts = []
    for p in siblings:
        if f"-{rid}" not in p.name:  # a folder name holds its run's id: no stat for others
            continue
        if _regular(p / log.name):
            parts.append(p)
    if d not in parts:
        return [d]
    return sorted(parts, key=lambda p: part_order(p, rid))


def run_part(name: str, above: tuple[str, ...] = ()) -> bool:
    """Whether a path part of this name is a W&B run folder (:data:`RUN_DIR`): one run of
    the experiment (the ``wandb/`` folder) above it (reader protocol hook)."""
    return bool(RUN_DIR.match(name))


#: What the walk leaves of a W&B run folder: it reads the ``.wandb`` log in the folder
#: and, for an older client, ``files/``; the client's ``logs/`` links into ``~/.cache``
#: (``debug-core.log``) in every run and is never read, and no subfolder holds another run.
_RUN_DIR = RunDir(parts=None, reads=frozenset({"files"}), owns_files=True)


def run_dir(path: str | Path, dirnames: Collection[str], names: Collection[str]) -> RunDir | None:
    """A W&B run folder, by the names in it (reader protocol hook): named as W&B names
    run folders (:data:`RUN_DIR`), with the run's ``.wandb`` log or an older client's
    ``files/`` folder in it. The walk reads it whole through the folder."""
    if RUN_DIR.match(os.path.basename(path)) and ("files" in dirnames or any(n.endswith(".wandb") for n in names)):
        return _RUN_DIR
    return None


def resumed_run(path: Path) -> tuple[str, tuple[str, int]] | None:
    """The run id of run folder ``path`` (its log's name) and the folder's place among
    the folders of that run (:func:`part_order`), or ``None`` when it is not a run folder
    with a log (reader protocol hook; :func:`resumed_parts` reads them all)."""
    if not RUN_DIR.match(path.name):
        return None
    log = log_file(path)
    rid = log_id(log) if log is not None else None
    return None if rid is None else (rid, part_order(path, rid))


#: The wandb client's own logs in a ``wandb/`` folder (``debug.log``,
#: ``debug-internal.log``, ``debug-cli.<user>.log``).
_CLIENT_LOG = re.compile(r"^debug(?:-internal|-cli\.[^/]*)?\.log$")


def _is_client_dir(path: str | Path) -> bool:
    """A W&B client's ``wandb/`` folder: so named (``.`` inside it counts by its real
    name), or holding the client's ``latest-run`` link to a run folder beside it (a copy
    under another name)."""
    name = os.path.basename(path)
    # The real name is the written one unless the last part is ``.``, ``..``, empty (a
    # trailing ``/``) or a link; realpath costs one lstat per part of the path, and the
    # walk asks for every folder, 1,200 deep in a hostile tree.
    if name in ("", ".", "..") or os.path.islink(path):
        name = os.path.basename(os.path.realpath(path))
    if name == "wandb":
        return True
    try:
        target = os.readlink(os.path.join(path, "latest-run"))
    except OSError:
        return False
    return os.path.dirname(target.rstrip("/")) in ("", ".") and bool(RUN_DIR.match(os.path.basename(target)))


def client_entries(path: str | Path, names: Collection[str]) -> frozenset[str]:
    """In a W&B client's ``wandb/`` folder, the client's own entries (reader protocol
    hook): its debug logs (links into the newest run's ``logs/``, no metrics) and its
    ``latest-run`` link to the newest run folder beside it (that run, not another)."""
    if not _is_client_dir(path):
        return frozenset()
    own = {n for n in names if _CLIENT_LOG.match(n)}
    if os.path.islink(os.path.join(path, "latest-run")):
        own.add("latest-run")
    return frozenset(own)


def sniff_dir(path: Path) -> bool:
    """A W&B run folder: it holds a ``.wandb`` log, or is named as W&B names run folders
    (``run-YYYYMMDD_HHMMSS-<id>``, ``offline-run-…``) and holds an older client's
    ``files/wandb-history.jsonl``."""
    if log_file(path) is not None:
        return True
    return bool(RUN_DIR.match(path.name)) and (path / "files" / "wandb-history.jsonl").is_file()


def sniff(path: Path, head: str) -> bool:
    """W&B's file header, or a ``.wandb`` name (so that a damaged log is reported as
    one rather than as a file no reader recognises)."""
    try:
        with open_binary(path) as f:
            first = f.read(len(HEADER))
    except (OSError, ReadError):
        return False
    return is_wandb_header(first) or path.name.lower().endswith(".wandb")


def _x_axis(run: Run, rows: list[Row]) -> str:
    """The run's step key: a defined step metric that the rows hold (the one defined for
    ``*``, else the one most metrics use, the first defined on a tie), else ``_step``."""
    counts: dict[str, int] = {}
    for metric, step in run.step_metrics:
        counts[step] = counts.get(step, 0) + (1 << 20 if metric == "*" else 1)
    for step in sorted(counts, key=lambda s: -counts[s]):
        if any(as_step(r.values.get(step)) is not None for r in rows):
            return step
    return _STEP


def _intent(config: Mapping[tuple[str, ...], object], meta: dict) -> None:
    for key, meta_key in _INTENT:
        v = config.get((key,))
        if isinstance(v, Mapping):  # config.yaml's {"value": …}
            v = v.get("value")
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        if v > 0 and float(v).is_integer() and meta_key not in meta:
            meta[meta_key] = int(v)


def _numeric_summary(summary: Mapping[tuple[str, ...], object]) -> dict[str, float]:
    values, _ = items_to_values([(p, v) for p, v in summary.items() if p and p[0] not in _PRIVATE])
    return {k: v for k, v in values.items() if not k.startswith("_")}


def read(path: Path, state) -> Iterator[Record]:
    """Yield one record per history row, stepped by the run's x axis (module docstring).

    Fills ``state.meta`` with ``run`` (the display name), ``run_id``, ``experiment`` (the
    project) and ``started`` (ISO 8601, UTC) where the log has them, the run's intent
    from its config (``max_steps``, ``num_train_epochs``) and its numeric ``summary``;
    for a run folder, ``log_file``: the file read, relative to the folder (the run file a
    SARIF result points at).

    Raises:
        ReadError: not a W&B log or run folder, or nothing in it is readable.
        NoRuns: a run that logged no number (only its file header, or media, tables
            and a summary): ``doctor`` lists it as not a run.
    """
    log = path
    if path.is_dir():
        log = log_file(path)
        if log is None:
            history = path / "files" / "wandb-history.jsonl"
            if not history.is_file():
                raise ReadError("no .wandb log or files/wandb-history.jsonl in this W&B run folder")
            rows = _history_jsonl(history, state)
            files = path / "files"
            run = Run({}, _config_yaml(files / "config.yaml"), _summary_json(files / "wandb-summary.json"), [])
            m = RUN_DIR.match(path.name)
            if m:
                run.meta["run_id"] = m.group(1)
            state.notes.append("read from files/wandb-history.jsonl (a run folder of an older W&B client)")
            state.meta["log_file"] = "files/wandb-history.jsonl"
            x = aliases.step_key({k for r in rows for k in r.values}) or _STEP
        else:
            others = [p.name for p in log_files(path) if p != log]
            if others:
                state.notes.append(
                    f"read {log.name}, the run's own log; {len(others)} other .wandb file(s) in the run folder "
                    f"not read: {', '.join(others[:5])}" + (", …" if len(others) > 5 else "")
                )
            parts = resumed_parts(path)
            if len(parts) > 1:
                yield from _read_parts(parts, path, state)
                return
            rows, run = _read_log(log, state)
            x = _x_axis(run, rows)
            state.meta["log_file"] = log.name
    else:
        rows, run = _read_log(log, state)
        x = _x_axis(run, rows)
    _describe(run, state)
    if x != _STEP:
        state.notes.append(f"the x axis is {x!r}, the step metric the run defines (define_metric)")
    n = 0
    for rec in _stepped(rows, x, state):
        n += 1
        yield rec
    if not n and not state.drops:
        raise NoRuns(_NO_NUMBERS)


#: Why a W&B run whose history holds no number is not a run to judge.
_NO_NUMBERS = "a W&B run whose history holds no numbers (media, tables or a summary only): nothing to judge"


def _describe(run: Run, state) -> None:
    """Fill ``state.meta`` from what the log says of its run (see :func:`read`)."""
    _intent(run.config, run.meta)
    summary = _numeric_summary(run.summary)
    if summary:
        run.meta["summary"] = summary
    for k, v in run.meta.items():
        state.meta.setdefault(k, v)


def _read_parts(parts: list[Path], path: Path, state) -> Iterator[Record]:
    """The records of a resumed run's folders as one run, in the order they were written.

    A part whose steps start at or before the previous part's first step restarted W&B's
    step counter (an offline run resumed does not learn the run's last step; online, the
    server continues it): its steps are placed after the previous part's last step, as
    the online client would number them. A part that starts later keeps its own steps;
    where it logs a step again (a resume from an earlier checkpoint), the later write
    wins (:func:`trainproof.runlog.build_runlog`). The display name, config, intent and
    summary are the last part's, the start time the first part's.
    """
    # Each part's log of the name resumed_parts found in it (a regular file), never
    # another .wandb file of that folder.
    name = log_file(path).name
    read = []
    for p in parts:
        try:
            read.append((p, *_read_log(p / name, state)))
        except NoRuns:  # a session that logged nothing (just started, or killed at once)
            continue
    if not read:
        raise NoRuns(f"the {len(parts)} folders of this resumed W&B run hold only their file headers")
    _describe(read[-1][2], state)
    first_started = read[0][2].meta.get("started")
    if first_started:
        state.meta["started"] = first_started
    state.meta["log_file"] = name
    state.notes.append(
        f"one W&B run resumed in {len(parts)} folders, read as one run in the order written: "
        + ", ".join(p.name for p in parts)
    )
    prev_first = prev_last = None
    line_base = 0
    shifted = 0
    for _, rows, run in read:
        x = _x_axis(run, rows)
        recs = list(_stepped(rows, x, state))
        if not recs:
            continue
        first = recs[0].step
        offset = 0.0
        if prev_first is not None and first <= prev_first:
            offset = prev_last + 1 - first
            shifted += 1
        top = 0
        for r in recs:
            top = max(top, r.line)
            yield Record(r.step + offset, r.values, r.line + line_base, r.holes)
        prev_first = first + offset
        prev_last = max(r.step for r in recs) + offset
        line_base += top
    if shifted:
        state.notes.append(
            f"{shifted} resumed part(s) restarted W&B's step counter: their steps are placed after the part before"
        )
    if prev_first is None and not state.drops:
        raise NoRuns(_NO_NUMBERS)


def _stepped(rows: list, x: str, state) -> Iterator[Record]:
    """One log's rows as records stepped by its x axis ``x`` (see the module docstring)."""
    last = 0.0
    synced = 0
    for r in rows:
        step = as_step(r.values.pop(x, None))
        own = as_step(r.values.pop(_STEP, None))
        if x == _STEP and step is None:
            step = r.step if r.step is not None else own
        if not r.holes and r.values.keys() <= _CLOCK:
            continue  # a row of media only: nothing but W&B's clock
        if step is None:
            step = last
            synced += 1
        last = step
        yield Record(step, r.values, r.line, tuple(k for k in r.holes if k not in (x, _STEP)))
    if synced:
        state.notes.append(f"{synced} row(s) do not hold {x!r}: each is read at its last value, as W&B does")
