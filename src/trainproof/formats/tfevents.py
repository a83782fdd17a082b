"""TensorBoard event files (``events.out.tfevents.*``), without TensorFlow.

Layers: :mod:`._tfrecord` reads the framing and checks CRCs, :mod:`._event_proto` decodes
the few protobuf fields that carry scalars, and this module knows files and runs. A run
directory with several event files (a resumed run writes a new one) is read as one run:
the scalars of every shard are merged in wall-time order, so for a step logged twice the
later write wins (the normalizer notes rewritten steps). A torn or corrupt record stops
the reading of its file at the last good record, with a note saying how many bytes were
dropped and why.

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
    """An event-file name, or a first record whose length checksum is valid."""
    try:
        with open(path, "rb") as f:
            first = f.read(12)
    except OSError:
        return False
    return _tfrecord.looks_like_tfrecord(first) or (is_event_file(path) and len(first) == 0)


def shards(d: Path) -> list[Path]:
    """Event files directly inside ``d``, in name order (the name starts with the time)."""
    try:
        return sorted(p for p in d.iterdir() if p.is_file() and is_event_file(p))
    except OSError:
        return []


def _read_file(path: Path, state, shard_no: int, out: list) -> None:
    plugins: dict[str, str] = {}
    tail = _tfrecord.Tail()
    bad_events = 0
    try:
        with open(path, "rb") as f:
            for idx, payload in enumerate(_tfrecord.records(f, tail), 1):
                try:
                    wall, step, values = parse_event(payload, plugins)
                except (ProtoError, struct.error, ValueError, OverflowError):
                    bad_events += 1
                    continue
                for tag, val in values:
                    if tag not in IGNORED_TAGS:
                        out.append((wall, shard_no, idx, step, tag, val))
    except OSError as e:
        raise ReadError(f"cannot read {path.name}: {e.strerror or e}") from None
    if tail.reason is not None:
        if tail.records == 0 and shard_no == 0 and not out:
            raise ReadError(f"not a TensorBoard event file: {tail.reason}")
        state.notes.append(
            f"{path.name}: reading stopped after {tail.records} records: {tail.reason}; "
            f"{tail.dropped_bytes} bytes dropped"
        )
    if bad_events:
        state.notes.append(f"{path.name}: {bad_events} records are not valid Event messages and were skipped")


def read(path: Path, state) -> Iterator[Record]:
    """Yield one record per scalar, in wall-time order across the run's event files."""
    files = shards(path) if path.is_dir() else [path]
    if not files:
        raise ReadError("no TensorBoard event files in this directory")
    scalars: list = []
    for i, p in enumerate(files):
        _read_file(p, state, i, scalars)
    if len(files) > 1:
        scalars.sort(key=lambda s: (s[0], s[1], s[2]))  # wall time, then file order
        state.notes.append(f"merged {len(files)} event files of one run in wall-time order")
    state.meta["event_files"] = [p.name for p in files]
    for wall, _shard, idx, step, tag, val in scalars:
        yield Record(float(step), {tag: val}, idx)
