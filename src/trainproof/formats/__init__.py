"""Readers, one module per log format, and the content sniffing that picks one.

Each reader module exposes ``name``, ``description``, ``sniff(path, head_text) -> bool``
and ``read(path, state) -> Iterator[Record]``; ``state`` has ``meta`` (dict) and ``notes``
(list) that the reader fills while it streams. A reader that reads a run directory (several
files of one run) also exposes ``sniff_dir(path) -> bool``. A reader raises :class:`ReadError` with a
one-line reason when the input is not readable as its format. Readers know bytes and
formats only: no rules, thresholds or output.

To add a format, add a module and list it in :data:`READERS` (order = sniffing priority),
and its name in :data:`trainproof.cli.options.FORMAT_NAMES`, the static copy the command line
offers as ``--format`` choices without importing the readers (a test checks the two agree).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..runlog import Record
from . import csv as csv_reader
from . import coqui, console, hf, jsonl, mlflow, tfevents
from ._io import (HEAD_BYTES, NotALog, NotOpened, ReadError, check_readable_file, head_text, is_lfs_pointer,
                  read_head,
                  reporting_to)

__all__ = ["READERS", "NotALog", "NotOpened", "ReadError", "ReadState", "detect", "format_names", "open_log", "get_reader"]

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
        raise NotOpened("empty file")
    if is_lfs_pointer(head):
        raise NotOpened("a Git LFS pointer, not data (run `git lfs pull` to fetch the file)")
    if fmt != "auto":
        return get_reader(fmt)
    text = head_text(head)
    for r in READERS:
        if r.sniff(path, text):
            return r
    raise NotALog(
        f"not a training log trainproof can read (tried {', '.join(format_names())}); "
        f"no reader recognises it ({describe_shape(path, head, text)})"
    )


#: Separators a table's first line may use, with the word the description gives each.
_SEPARATORS = ((",", "comma"), ("\t", "tab"), (";", "semicolon"), ("|", "bar"))


def describe_shape(path: Path, head: bytes, text: str) -> str:
    """The shape of a file no reader recognises, for its error message: its size, text or
    binary, its lines, and what its first line looks like (a JSON value, or N fields with
    a separator), e.g. ``"text, 2,310 bytes, 41 lines; first line: 3 comma-separated fields"``.

    It counts and never quotes: a file that is not a training log may hold anything (a
    token, a key), and the message reaches the terminal, ``--json``, SARIF and HTML.

    Args:
        head: the first bytes of the (decompressed) file, as :func:`read_head` gives them.
        text: ``head`` decoded, as :func:`head_text` gives it.
    """
    try:
        size = f"{path.stat().st_size:,} bytes"
    except OSError:
        size = "size unknown"
    printable = sum(ch.isprintable() or ch in "\t\r\n" for ch in text)
    # Judged on the decoded text: a UTF-16 log has NUL bytes but is text.
    if "\x00" in text or printable < 0.9 * len(text):
        return f"binary, {size}"
    lines = text.count("\n") + (not text.endswith("\n"))
    more = "at least " if len(head) >= HEAD_BYTES else ""
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if first[:1] in ("{", "["):
        what = "a JSON object" if first[0] == "{" else "a JSON array"
    else:
        what = "plain text"
        for sep, word in _SEPARATORS:
            if sep in first:
                what = f"{first.count(sep) + 1} {word}-separated fields"
                break
    return f"text, {size}, {more}{lines:,} line(s); first line: {what}"


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
