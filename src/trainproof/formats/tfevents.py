"""TensorBoard event files (``events.out.tfevents.*``), without TensorFlow.

Layers: :mod:`._tfrecord` reads the framing and checks CRCs, :mod:`._event_proto` decodes
the few protobuf fields that carry scalars, and this module knows files and runs. A run
directory with several event files (a resumed run writes a new one) is read as one run:
the scalars of every shard are merged in wall-time order, so for a step logged twice the
later write wins (the normalizer notes rewritten steps). A torn or corrupt record stops
the reading of its file at the last good record, with a note saying how many bytes were
dropped and why; a file whose first record is unreadable is a read error on its own and a
noted, skipped shard inside a run directory.

Lightning's ``hp_metric`` placeholder (``-1`` at step 0) is not a metric and is dropped.
"""

from __future__ import annotations

import re
import struct
from array import array
from collections.abc import Iterator
from itertools import repeat
from pathlib import Path

import numpy as np

# The helper module by its full name, not `from . import`: a reader never imports the
# package __init__ (which imports the readers), and _tfrecord's attributes stay patchable.
import trainproof.formats._tfrecord as _tfrecord  # noqa: PLR0402

from .._arrays import unique
from ..runlog import Columns
from ._io import ReadError, open_binary
from .base import ReadState

name = "tfevents"
description = "TensorBoard event files (torch.utils.tensorboard, tensorboardX, Lightning, Keras, HF runs/)"
#: Event files are known by :func:`log_name` and :func:`writer_name`, not by a fixed name
#: or an extension (``events.out.tfevents.<time>.<host>…``).
file_names = ()
suffixes = ()
run_suffixes = ()
tail_mode = "records"
preference = 1
#: Whether outputs anchor a finding at its line (binary: a finding's line is an event record's index).
line_anchors = False

IGNORED_TAGS = frozenset({"hp_metric"})


#: Suffixes of source files and documents: ``bench_tfevents.py`` or ``tfevents.md`` is
#: about event files, not one (writers name theirs ``events.out.tfevents.<time>.<host>…``).
NOT_EVENT_SUFFIXES = (
    ".py",
    ".pyc",
    ".ipynb",
    ".md",
    ".rst",
    ".txt",
    ".html",
    ".sh",
    ".json",
    ".jsonl",
    ".csv",
    ".yaml",
    ".yml",
    ".toml",
    ".cfg",
    ".ini",
    ".png",
    ".svg",
    ".pdf",
    ".log",
    ".js",
    ".ts",
    ".c",
    ".cc",
    ".cpp",
    ".h",
    ".rs",
    ".go",
    ".java",
)


def is_event_name(name: str) -> bool:
    """Whether a file of this name may be an event file: ``tfevents`` in it, and not the
    suffix of a source file or document."""
    return "tfevents" in name and not name.lower().endswith(NOT_EVENT_SUFFIXES)


def has_writer_name(name: str) -> bool:
    """Whether ``name`` is as TensorFlow, PyTorch and tensorboardX name event files
    (``events.out.tfevents.<time>.<host>…``): only an event writer makes such a file."""
    return name.startswith("events.out.tfevents")


#: The reader protocol's name hooks (:data:`trainproof.formats.base.OPTIONAL`); event
#: files in one folder are the shards of one run (a resumed run writes a new file).
log_name = is_event_name
writer_name = has_writer_name
shard_name = is_event_name


def is_event_file(p: Path) -> bool:
    """:func:`is_event_name` of ``p``'s name."""
    return is_event_name(p.name)


#: Keras' TensorBoard callback writes ``<log_dir>/train/`` and ``<log_dir>/validation/``,
#: both with ``epoch_loss``: read together, the validation tags get this prefix. A loop with
#: one ``SummaryWriter`` per split names them the same way or shorter (``<run>/train/`` and
#: ``<run>/val/``, ``valid/``, ``eval/``, each with ``loss``): the same run.
KERAS_SPLITS = (("train", ""), ("validation", "validation/"), ("val", "val/"), ("valid", "valid/"), ("eval", "eval/"))


def split_dirs() -> tuple[str, ...]:
    """The split folders of a Keras log folder (:data:`KERAS_SPLITS`), ``train`` first
    (reader protocol hook: a folder with ``train/`` is one run)."""
    return tuple(sub for sub, _ in KERAS_SPLITS)


def writer_dirs(path: Path) -> list[Path]:
    """Reader protocol hook: :func:`writer_subdirs` of a run folder that holds event files
    itself (none otherwise)."""
    return writer_subdirs(path) if path.is_dir() and shards(path) else []


def run_files(path: Path) -> list[tuple[Path, str]]:
    """``(event file, tag prefix)`` of the run at ``path``: a file, a folder of event
    files with the event files of its direct sub-folders (:func:`writer_subdirs`, their
    tags prefixed ``<sub-folder>/``), or a Keras log folder with ``train/`` and
    ``validation/`` sub-folders."""
    if not path.is_dir():
        return [(path, "")]
    files = [(p, "") for p in shards(path)]
    if files:
        for sub in writer_subdirs(path):
            files += [(p, f"{sub.name}/") for p in shards(sub)]
    else:
        for sub, prefix in KERAS_SPLITS:
            files += [(p, prefix) for p in shards(path / sub)]
    return files


#: The folder ``SummaryWriter.add_hparams`` writes its summary into, named by
#: ``time.time()``: a run of hyperparameters and final metrics, not a writer of the run.
_HPARAMS_RUN = re.compile(r"^\d{9,}\.\d+$")


def writer_subdirs(path: Path) -> list[Path]:
    """The direct sub-folders of run folder ``path`` (which holds event files itself) that
    hold event files and no folder of their own, in name order: the writers of the same
    run. ``SummaryWriter.add_scalars("loss", {"train": ..., "val": ...})`` writes
    ``<log_dir>/loss_train/`` and ``<log_dir>/loss_val/``, each with the tag ``loss``, and
    a loop often gives its evaluation a writer of its own in ``<log_dir>/eval/``: read
    alone, each was a run of its own, its validation loss judged as a train loss. Not the
    folder ``add_hparams`` writes (:data:`_HPARAMS_RUN`)."""
    try:
        subs = sorted(d for d in path.iterdir() if d.is_dir() and not d.is_symlink() and not _HPARAMS_RUN.match(d.name))
    except OSError:
        return []
    out = []
    for d in subs:
        try:
            entries = list(d.iterdir())
        except OSError:
            continue
        if any(e.is_dir() for e in entries) or not any(e.is_file() and is_event_file(e) for e in entries):
            continue
        out.append(d)
    return out


def sniff_dir(path: Path) -> bool:
    """A run directory: event files directly inside, or Keras' train/validation split."""
    return bool(run_files(path))


def sniff(path: Path, head: str) -> bool:
    """A first record whose length checksum is valid, or TensorBoard's own file name.

    A file named ``events.out.tfevents.*`` is claimed even when its first bytes are damaged
    (zeros, a torn first record), so the reason given is about the event file rather than
    "no reader recognises it". Other names need valid framing.
    """
    try:
        with open_binary(path) as f:
            first = f.read(12)
    except (OSError, ReadError):
        return False
    return _tfrecord.looks_like_tfrecord(first) or has_writer_name(path.name)


def shards(d: Path) -> list[Path]:
    """Event files directly inside ``d``, in name order (the name starts with the time)."""
    try:
        return sorted(p for p in d.iterdir() if p.is_file() and is_event_file(p))
    except OSError:
        return []


class _TagColumns:
    """One tag's scalars as typed arrays (about 32 bytes a scalar while reading)."""

    __slots__ = ("steps", "values", "lines", "walls", "shards")

    def __init__(self) -> None:
        self.steps = array("d")
        self.values = array("d")
        self.lines = array("q")
        self.walls = array("d")
        self.shards = array("l")


def _read_file(
    path: Path,
    state,
    shard_no: int,
    out: dict[str, _TagColumns],
    merge: bool = False,
    prefix: str = "",
    offset: int = 0,
    plugins: dict[str, str] | None = None,
    first_index: int = 0,
    live: bool = False,
) -> _tfrecord.Tail:
    """Read one event file into ``out``; with ``merge`` also keep wall time and file
    number per scalar (needed to interleave several files of one run); ``prefix`` is put
    before every tag (Keras' validation folder).

    A live reader resumes at ``offset`` (the ``consumed`` bytes of the previous call) with
    its ``plugins`` and record count ``first_index``; with ``live`` a torn last record is
    a record not written yet, not damage, and is neither noted nor dropped.
    """
    # The event decoder is imported by the first event file read, not by sniffing: every
    # log's format detection imports this module.
    from ._event_proto import ProtoError, parse_event, parse_simple_spans

    plugins = {} if plugins is None else plugins
    tail = _tfrecord.Tail()
    bad_events = 0
    ignored: set[str] = set()
    # The standard add_scalar event is decoded by parse_simple_spans, keyed by the tag's
    # bytes (decoded once per tag); everything else goes through parse_event.
    before = sum(len(c.values) for c in out.values())
    by_bytes: dict[bytes, _TagColumns | None] = {}
    idx = first_index

    def columns(tag: str) -> _TagColumns | None:
        if tag in IGNORED_TAGS:
            ignored.add(tag)
            return None
        c = out.get(prefix + tag)
        if c is None:
            c = out[prefix + tag] = _TagColumns()
        return c

    try:
        with open_binary(path) as f:
            if offset:
                f.seek(offset)
            for spans in _tfrecord.record_spans(f, tail):
                # The standard add_scalar events of the batch decoded at once; runs of them
                # go to the columns as arrays, any other record one at a time, in order.
                ok, walls, steps, vals, tag_ids, tags = parse_simple_spans(spans.buf, spans.starts, spans.lengths)
                cols_of = []
                for tag_b in tags:
                    try:
                        c = by_bytes[tag_b]
                    except KeyError:
                        c = by_bytes[tag_b] = columns(tag_b.decode("utf-8", "replace"))
                    cols_of.append(c)
                bounds = [0, *(np.flatnonzero(ok[1:] != ok[:-1]) + 1).tolist(), len(spans)]
                for a, b in zip(bounds[:-1], bounds[1:]):
                    if ok[a]:
                        ids = tag_ids[a:b]
                        for t in unique(ids).tolist():
                            c = cols_of[t]
                            if c is None:
                                continue
                            sel = np.flatnonzero(ids == t) + a
                            c.steps.frombytes(steps[sel].astype(np.float64).tobytes())
                            c.values.frombytes(vals[sel].tobytes())
                            c.lines.frombytes((sel + (idx + 1)).astype(np.int64).tobytes())
                            if merge:
                                c.walls.frombytes(walls[sel].tobytes())
                                c.shards.extend(repeat(shard_no, sel.size))
                        continue
                    for k in range(a, b):
                        payload = spans.payload(k)
                        try:
                            wall, step, values = parse_event(payload, plugins)
                        except (ProtoError, struct.error, ValueError, OverflowError):
                            bad_events += 1
                            continue
                        for tag, val in values:
                            c = columns(tag)
                            if c is None:
                                continue
                            c.steps.append(step)
                            c.values.append(val)
                            c.lines.append(idx + k + 1)
                            if merge:
                                c.walls.append(wall)
                                c.shards.append(shard_no)
                idx += len(spans)
    except OSError as e:
        raise ReadError(f"cannot read {path.name}: {e.strerror or e}") from None
    torn_tail = tail.reason is not None and not tail.bad_framing and "ends inside" in tail.reason
    if live and torn_tail:
        tail.reason = None  # the writer has not finished this record yet
    if tail.reason is not None and tail.records > 0:
        state.drop(
            f"{path.name}: reading stopped after {tail.records} records: {tail.reason}; "
            f"{tail.dropped_bytes} bytes dropped"
        )
    if bad_events:
        state.drop(f"{path.name}: {bad_events} records are not valid Event messages and were skipped")
    scalars = sum(len(c.values) for c in out.values()) - before
    if tail.records and not scalars:
        # Says why a valid event file gives no records, rather than leaving "no records"
        # unexplained.
        if tail.records == 1:
            why = "only the file header, no scalars"
        elif ignored:
            why = f"{tail.records} event records, no scalars but {', '.join(sorted(ignored))} (a placeholder)"
        else:
            why = f"{tail.records} event records, none holds a scalar (hparams, text, images or graphs only)"
        state.notes.append(f"{path.name}: {why}")
    return tail


class EventTail:
    """The :class:`~trainproof.formats.base.RecordTailer` of an event file being written:
    each poll reads the complete records appended since the previous one (a torn last
    record is one not written yet, not damage), keeping the plugin table and the record
    count across polls."""

    def __init__(self) -> None:
        self.plugins: dict[str, str] = {}
        self.records = 0
        self.dropped: list[str] = []

    def poll(self, path: Path, offset: int) -> tuple[int, list[Columns]]:
        """Read ``path`` from ``offset``; ``(consumed bytes, one column batch per tag)``.

        Raises:
            ReadError: the file's first record is not TensorBoard framing.
        """
        cols: dict[str, _TagColumns] = {}
        state = ReadState()
        tail = _read_file(
            path, state, 0, cols, offset=offset, plugins=self.plugins, first_index=self.records, live=True
        )
        self.records += tail.records
        if tail.reason is not None and tail.bad_framing and tail.records == 0 and offset + tail.consumed == 0:
            raise ReadError(f"not a TensorBoard event file: {tail.reason}")
        # Only what was dropped carries over: the reader's notes describe the file as it
        # was at this poll (e.g. "only the file header so far") and go stale.
        for n in state.drops:
            if n not in self.dropped:
                self.dropped.append(n)
        return tail.consumed, [
            Columns(
                tag,
                np.frombuffer(c.steps, dtype=np.float64).copy(),
                np.frombuffer(c.values, dtype=np.float64).copy(),
                np.frombuffer(c.lines, dtype=np.int64).copy(),
            )
            for tag, c in sorted(cols.items())
        ]

    def drops(self) -> list[str]:
        """The damage met so far (each note once)."""
        return list(self.dropped)


def record_tailer() -> EventTail:
    """A fresh :class:`EventTail` (``watch`` follows an event file record by record)."""
    return EventTail()


def _unreadable(tail: _tfrecord.Tail) -> str:
    """The reason a file whose first record cannot be read gives, framing vs. damage."""
    if tail.bad_framing:
        return f"not a TensorBoard event file: {tail.reason}"
    return f"no complete event record: {tail.reason}"


def read(path: Path, state) -> Iterator[Columns]:
    """Yield one column batch per tag; across a run's event files, in wall-time order."""
    listed = run_files(path)
    if not listed:
        raise ReadError("no TensorBoard event files in this directory")
    files = [p for p, _ in listed]
    cols: dict[str, _TagColumns] = {}
    unreadable: list[tuple[Path, str]] = []
    for i, (p, prefix) in enumerate(listed):
        tail = _read_file(p, state, i, cols, merge=len(files) > 1, prefix=prefix)
        if tail.reason is not None and tail.records == 0:
            unreadable.append((p, _unreadable(tail)))
    if len(unreadable) == len(files):
        # Nothing readable at all: one reason, for the first file (a run directory whose
        # every shard is damaged is as unjudgeable as one damaged file).
        p, why = unreadable[0]
        raise ReadError(why if len(files) == 1 else f"{p.name}: {why}")
    # In a run directory one damaged shard does not hide the others; it is noted.
    for p, why in unreadable:
        state.drop(f"{p.name}: skipped, {why}")
    if len(files) > 1:
        state.notes.append(f"merged {len(files)} event files of one run in wall-time order")
    state.meta["event_files"] = [p.relative_to(path).as_posix() if path.is_dir() else p.name for p in files]
    for tag in sorted(cols):
        c = cols.pop(tag)
        steps = np.frombuffer(c.steps, dtype=np.float64)
        values = np.frombuffer(c.values, dtype=np.float64)
        lines = np.frombuffer(c.lines, dtype=np.int64)
        if len(files) > 1:
            # Wall time, then file order, then record order: for a step logged twice the
            # later write comes last, and the normalizer keeps the last.
            order = np.lexsort((lines, np.asarray(c.shards, dtype=np.int64), np.frombuffer(c.walls, dtype=np.float64)))
            steps, values, lines = steps[order], values[order], lines[order]
        yield Columns(tag, steps, values, lines)
