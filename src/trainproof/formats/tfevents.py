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

import struct
from collections.abc import Iterator
from pathlib import Path

from ..runlog import Record
from . import _tfrecord
from ._event_proto import ProtoError, parse_event
from ._io import ReadError

name = "tfevents"
description = "TensorBoard event files (torch.utils.tensorboard, tensorboardX, Lightning, Keras, HF runs/)"

IGNORED_TAGS = frozenset({"hp_metric"})


def is_event_file(p: Path) -> bool:
    return "tfevents" in p.name


def sniff_dir(path: Path) -> bool:
    """A run directory: it holds event files directly."""
    return bool(shards(path))


def sniff(path: Path, head: str) -> bool:
    """A first record whose length checksum is valid, or TensorBoard's own file name.

    A file named ``events.out.tfevents.*`` is claimed even when its first bytes are damaged
    (zeros, a torn first record), so the reason given is about the event file rather than
    "no reader recognises it". Other names need valid framing.
    """
    try:
        with open(path, "rb") as f:
            first = f.read(12)
    except OSError:
        return False
    return _tfrecord.looks_like_tfrecord(first) or path.name.startswith("events.out.tfevents")


def shards(d: Path) -> list[Path]:
    """Event files directly inside ``d``, in name order (the name starts with the time)."""
    try:
        return sorted(p for p in d.iterdir() if p.is_file() and is_event_file(p))
    except OSError:
        return []


def _read_file(path: Path, state, shard_no: int, out: list) -> _tfrecord.Tail:
    plugins: dict[str, str] = {}
    tail = _tfrecord.Tail()
    bad_events = 0
    scalars = 0
    ignored: set[str] = set()
    try:
        with open(path, "rb") as f:
            for idx, payload in enumerate(_tfrecord.records(f, tail), 1):
                try:
                    wall, step, values = parse_event(payload, plugins)
                except (ProtoError, struct.error, ValueError, OverflowError):
                    bad_events += 1
                    continue
                for tag, val in values:
                    if tag in IGNORED_TAGS:
                        ignored.add(tag)
                    else:
                        out.append((wall, shard_no, idx, step, tag, val))
                        scalars += 1
    except OSError as e:
        raise ReadError(f"cannot read {path.name}: {e.strerror or e}") from None
    if tail.reason is not None and tail.records > 0:
        state.notes.append(
            f"{path.name}: reading stopped after {tail.records} records: {tail.reason}; "
            f"{tail.dropped_bytes} bytes dropped"
        )
    if bad_events:
        state.notes.append(f"{path.name}: {bad_events} records are not valid Event messages and were skipped")
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


def _unreadable(tail: _tfrecord.Tail) -> str:
    """The reason a file whose first record cannot be read gives, framing vs. damage."""
    if tail.bad_framing:
        return f"not a TensorBoard event file: {tail.reason}"
    return f"no complete event record: {tail.reason}"


def read(path: Path, state) -> Iterator[Record]:
    """Yield one record per scalar, in wall-time order across the run's event files."""
    files = shards(path) if path.is_dir() else [path]
    if not files:
        raise ReadError("no TensorBoard event files in this directory")
    scalars: list = []
    unreadable: list[tuple[Path, str]] = []
    for i, p in enumerate(files):
        tail = _read_file(p, state, i, scalars)
        if tail.reason is not None and tail.records == 0:
            unreadable.append((p, _unreadable(tail)))
    if len(unreadable) == len(files):
        # Nothing readable at all: one reason, for the first file (a run directory whose
        # every shard is damaged is as unjudgeable as one damaged file).
        p, why = unreadable[0]
        raise ReadError(why if len(files) == 1 else f"{p.name}: {why}")
    # In a run directory one damaged shard does not hide the others; it is noted.
    for p, why in unreadable:
        state.notes.append(f"{p.name}: skipped, {why}")
    if len(files) > 1:
        scalars.sort(key=lambda s: (s[0], s[1], s[2]))  # wall time, then file order
        state.notes.append(f"merged {len(files)} event files of one run in wall-time order")
    state.meta["event_files"] = [p.name for p in files]
    for wall, _shard, idx, step, tag, val in scalars:
        yield Record(float(step), {tag: val}, idx)
