"""Readers, one module per log format, and the content sniffing that picks one.

Each reader module exposes ``name``, ``description``, ``sniff(path, head_text) -> bool``
and ``read(path, state) -> Iterator[Record]``; ``state`` has ``meta`` (dict) and ``notes``
(list) that the reader fills while it streams. A reader that reads a run directory (several
files of one run) also exposes ``sniff_dir(path) -> bool``. A reader raises :class:`ReadError` with a
one-line reason when the input is not readable as its format. Readers know bytes and
formats only: no rules, thresholds or output.

To add a format, add a module and list it in :data:`READERS` (order = sniffing priority),
and its name in :data:`trainproof.cliutil.FORMAT_NAMES`, the static copy the command line
offers as ``--format`` choices without importing the readers (a test checks the two agree).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..runlog import Record
from . import csv as csv_reader
from . import coqui, console, hf, jsonl, mlflow, tfevents
from ._io import (NotALog, ReadError, check_readable_file, describe_head, head_text, is_lfs_pointer, read_head,
                  reporting_to)

__all__ = ["READERS", "NotALog", "ReadError", "ReadState", "detect", "format_names", "open_log", "get_reader"]

#: Sniffing order: the most specific formats first.
READERS = (tfevents, hf, jsonl, csv_reader, coqui, mlflow, console)


@dataclass
class ReadState:
    """What a reader learns besides records: declared intent, notes, and what it dropped.

    ``drops`` lists the input a reader could not use (torn tails, unparseable lines or
    rows, damaged shards), each as a note; the engine reports them as ``TP-DATA-DROPPED``
    so a verdict never silently rests on part of a log.
    """

    meta: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    drops: list[str] = field(default_factory=list)

    def drop(self, note: str) -> None:
        """Record that part of the input was not read, and why (also a note)."""
        self.notes.append(note)
        self.drops.append(note)


def format_names() -> list[str]:
    """The reader names, in sniffing order."""
    return [r.name for r in READERS]


def get_reader(name: str):
    for r in READERS:
        if r.name == name:
            return r
    raise ReadError(f"unknown format {name!r}; known: {', '.join(format_names())}")


def detect(path: Path, fmt: str = "auto"):
    """Pick the reader for ``path``: by content unless ``fmt`` names one.

    Raises:
        ReadError: missing, unreadable, empty, an LFS pointer, or no reader recognises it.
    """
    if path.is_dir():
        for r in READERS:
            sniff_dir = getattr(r, "sniff_dir", None)
            if sniff_dir is not None and fmt in ("auto", r.name) and sniff_dir(path):
                return r
        if fmt != "auto":
            get_reader(fmt)  # an unknown name is its own error
            raise ReadError(f"is a directory that holds no {fmt} run")
        raise NotALog("is a directory that holds no run (use `trainproof doctor` to judge every log under it)")
    check_readable_file(path)
    head = read_head(path)
    if not head.strip():
        raise ReadError("empty file")
    if is_lfs_pointer(head):
        raise ReadError("a Git LFS pointer, not data (run `git lfs pull` to fetch the file)")
    if fmt != "auto":
        return get_reader(fmt)
    text = head_text(head)
    for r in READERS:
        if r.sniff(path, text):
            return r
    raise NotALog(
        f"not a training log trainproof can read (tried {', '.join(format_names())}); "
        f"it starts with: {describe_head(text)}"
    )


def open_log(path: Path, fmt: str = "auto") -> tuple[str, Iterator[Record], ReadState]:
    """Detect the format and start streaming.

    Returns:
        ``(format_name, records, state)``; ``state`` is complete once ``records`` is exhausted.

    Raises:
        ReadError: see :func:`detect`; the iterator itself may raise it too.
    """
    reader = detect(path, fmt)
    state = ReadState()
    # A gzip log cut at the decompression cap says so in this state (TP-DATA-DROPPED).
    return reader.name, reporting_to(iter(reader.read(path, state)), state), state
