"""Readers, one module per log format, the content sniffing that picks one, and what the
rest of trainproof asks of the formats (names, suffixes, how to follow a log).

The protocol every reader module follows is :class:`~trainproof.formats.base.Reader`:
``name``, ``description``, ``sniff(path, head) -> bool``, ``read(path, state)``, which
yields :class:`~trainproof.runlog.Record`, :class:`~trainproof.runlog.Rows` and
:class:`~trainproof.runlog.Columns` (what :func:`trainproof.runlog.build_runlogs` takes)
and fills ``state`` (a :class:`ReadState`) while it streams, and the declarations
``file_names``, ``suffixes``, ``run_suffixes`` and ``tail_mode``; where a reader needs
them, ``sniff_dir(path)`` (it reads run folders), ``log_name(name)`` and
``writer_name(name)`` (names besides the declared ones), ``line_tailer()`` or
``record_tailer()`` (how ``watch`` follows it). A reader raises :class:`ReadError` with a
one-line reason when the input is not readable as its format. Readers know bytes and
formats only: no rules, thresholds or output.

``doctor``'s walk (:mod:`trainproof.discover`), its judgement of what is a run
(:mod:`trainproof.api`) and ``watch`` (:mod:`trainproof.live.tail`) ask the readers
through :func:`is_log_name`, :func:`is_trainer_name`, :func:`has_run_name` and
:func:`tail_mode`, so they hold no list of their own; the walk learns what a run folder is
(a W&B or MLflow run, a resumed run's folders, a folder of event-file shards, HF
checkpoint snapshots) through :func:`run_dir`, :func:`resumed_run`,
:func:`client_entries`, :func:`run_part_test`, :func:`shard_name_test`, :func:`split_dirs`,
:func:`snapshot` and :func:`sibling_dirs`, which ask the readers' run-folder hooks
(:data:`base.OPTIONAL`).

To add a format: the module, its test, and one line in :data:`READER_MODULES` (order =
sniffing priority). This package imports no reader and nothing heavy until one is asked
for (:data:`READERS` is loaded on first use), so the command line reads the ``--format``
choices from :data:`READER_MODULES` without importing numpy.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ._io import (
    HEAD_BYTES,
    NoRuns,
    NotALog,
    NotOpened,
    OwnOutput,
    ReadError,
    Unreadable,
    check_readable_file,
    encoding_of,
    head_text,
    is_lfs_pointer,
    open_binary,
    read_head,
    reading,
    reporting_to,
)
from .lines import MAX_LINE

if TYPE_CHECKING:
    from ..runlog import Columns, Record, Rows
    from .base import LineTailer, Reader, ReadState, RecordTailer, RunDir

__all__ = [
    "HEAD_BYTES",
    "MAX_LINE",
    "READERS",
    "READER_MODULES",
    "LineTailer",
    "NoRuns",
    "NotALog",
    "NotOpened",
    "OwnOutput",
    "ReadError",
    "ReadState",
    "Reader",
    "RecordTailer",
    "Unreadable",
    "client_entries",
    "decode_json",
    "detect",
    "encoding_of",
    "format_names",
    "get_reader",
    "has_run_name",
    "is_log_name",
    "is_trainer_name",
    "line_anchors",
    "log_name_test",
    "log_suffixes",
    "open_binary",
    "open_log",
    "preference",
    "read_head",
    "reading",
    "resumed_run",
    "run_dir",
    "run_part_test",
    "shard_name_test",
    "sibling_dirs",
    "snapshot",
    "split_dirs",
    "writer_dirs",
    "tail_mode",
    "trainer_file_names",
]

#: The reader modules under ``trainproof.formats``, in sniffing order (the most specific
#: formats first). A module's name is its reader's ``name`` (the ``--format`` value). The
#: one line that registers a format.
#: ``mlflow_db`` stands before the text readers: a SQLite file's first pages hold its schema
#: and rows as text (commas, metric names beside digits), which csv or console could take for
#: a log. ``columns`` stands before ``jsonl``: a one-line JSON object of columns is also one
#: JSON object per line.
READER_MODULES = (
    "tfevents",
    "hf",
    "wandb",
    "trackio",
    "mlflow_db",
    "columns",
    "jsonl",
    "csv",
    "coqui",
    "mlflow",
    "notebook",
    "console",
)

#: Names loaded on first use (PEP 562), so that importing this package stays light.
_BASE_NAMES = ("LineTailer", "Reader", "ReadState", "RecordTailer")


def __getattr__(name: str):
    if name == "READERS":
        readers = tuple(importlib.import_module(f"{__name__}.{m}") for m in READER_MODULES)
        globals()["READERS"] = readers
        # The data model asks the readers whether a finding's line is a line of text
        # through this lookup, so that it imports no reader (tests/project/test_layering.py).
        from .. import findings

        findings.set_line_anchors(line_anchors)
        return readers
    if name in _BASE_NAMES:
        from . import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "READERS", *_BASE_NAMES})


def _readers() -> tuple:
    """:data:`READERS`: the reader modules of :data:`READER_MODULES`, imported once (a test
    may put another tuple in its place)."""
    g = globals()
    return g["READERS"] if "READERS" in g else __getattr__("READERS")


def _reader(name: str):
    """The reader module of :data:`READER_MODULES` called ``name``, importing only it:
    a command that reads one log pays for the readers it tries, not for all of them
    (the console reader's patterns alone cost a few milliseconds of start-up)."""
    g = globals()
    if "READERS" in g:
        return next(r for r in g["READERS"] if r.name == name)
    module = importlib.import_module(f"{__name__}.{name}")
    from .. import findings

    findings.set_line_anchors(line_anchors)
    return module


def _sniffing_order():
    """The readers in sniffing order, each imported when it is reached (:data:`READERS`
    itself where it is loaded or a test replaced it)."""
    g = globals()
    if "READERS" in g:
        yield from g["READERS"]
        return
    for name in READER_MODULES:
        yield _reader(name)


def decode_json(text: str) -> object:
    """``text`` decoded as every reader decodes JSON: ``NaN``/``Infinity`` allowed, an
    integer of more digits than Python parses read as the float it rounds to (±inf).

    Raises:
        ValueError: not JSON, or nested deeper than the interpreter's recursion limit.
    """
    from ._values import JSON

    return JSON.decode(text)


def trainer_file_names() -> frozenset[str]:
    """Every reader's :attr:`~base.Reader.file_names`: lower-case names only a trainer
    gives a file."""
    return frozenset(n for r in _readers() for n in r.file_names)


def log_suffixes() -> frozenset[str]:
    """Every reader's :attr:`~base.Reader.suffixes`: the extensions a log can have."""
    return frozenset(s for r in _readers() for s in r.suffixes)


def run_suffixes() -> tuple[str, ...]:
    """Every reader's :attr:`~base.Reader.run_suffixes`, in reader order, each once."""
    return tuple(dict.fromkeys(s for r in _readers() for s in r.run_suffixes))


def log_name_test() -> Callable[[str], bool]:
    """:func:`is_log_name` with the readers' declarations read once, for a walk that asks
    of every file name in a tree."""
    suffixes = log_suffixes()
    names = trainer_file_names()
    hooks = tuple(h for h in (getattr(r, "log_name", None) for r in _readers()) if h is not None)

    def test(name: str) -> bool:
        low = name.lower()
        if low in names:
            return True
        return os.path.splitext(low.removesuffix(".gz"))[1] in suffixes or any(h(name) for h in hooks)

    return test


def is_log_name(name: str) -> bool:
    """Whether a file named ``name`` may hold a training log (``doctor``'s walk looks at
    it): a trainer's file name, one of the readers' suffixes (also followed by ``.gz``), or
    a name a reader's ``log_name`` hook claims (``tfevents`` in it)."""
    return log_name_test()(name)


def is_trainer_name(name: str) -> bool:
    """Whether only a trainer gives a file this name: a reader's ``file_names`` (compared
    in lower case) or a name its ``writer_name`` hook claims (``events.out.tfevents.*``)."""
    low = name.lower()
    return low in trainer_file_names() or any(
        h(low) for h in (getattr(r, "writer_name", None) for r in _readers()) if h is not None
    )


def has_run_name(name: str) -> bool:
    """Whether only a training run would write a file of this name: :func:`is_trainer_name`
    or one of the readers' ``run_suffixes`` (``.jsonl``, ``.ndjson``)."""
    return is_trainer_name(name) or name.lower().endswith(run_suffixes())


# --- run folders: what the readers say of the places their runs are written ----------------
# ``doctor``'s walk (:mod:`trainproof.discover`) asks these instead of knowing any format's
# folders; each asks every reader's hook of that name (:data:`base.OPTIONAL`), in reader order.


def _hooks(name: str) -> tuple[Callable, ...]:
    return tuple(h for h in (getattr(r, name, None) for r in _readers()) if h is not None)


def run_dir(path: str | Path, dirnames: Collection[str], names: Collection[str]) -> RunDir | None:
    """What the first reader that takes folder ``path`` for one of its run folders reads of
    it (:class:`base.RunDir`), judged by the names of its subfolders (``dirnames``) and
    entries (``names``) alone; ``None`` when no reader does."""
    for hook in _hooks("run_dir"):
        found = hook(path, dirnames, names)
        if found is not None:
            return found
    return None


def resumed_run(path: Path) -> tuple[str, str, tuple] | None:
    """``(format, run id, place)`` of run folder ``path`` where its reader reads a resumed
    run's folders through the last one (the highest ``place`` among the folders of one run
    id side by side), else ``None``."""
    for r in _readers():
        hook = getattr(r, "resumed_run", None)
        found = hook(path) if hook is not None else None
        if found is not None:
            return (r.name, *found)
    return None


def client_entries(path: str | Path, names: Collection[str]) -> frozenset[str]:
    """Of the entries ``names`` of folder ``path``, those a tracker's client keeps for
    itself there and that hold no run (W&B's ``latest-run`` link and debug logs)."""
    return frozenset(n for hook in _hooks("client_entries") for n in hook(path, names))


def run_part_test() -> Callable[[str, tuple[str, ...]], bool]:
    """Whether a path part (a name, below the parts ``above``) names one run of an
    experiment by a reader's ``run_part`` hook (a W&B run folder, Lightning's
    ``version_N``), with the hooks read once."""
    hooks = _hooks("run_part")
    return lambda name, above: any(h(name, above) for h in hooks)


def shard_name_test() -> Callable[[str], bool]:
    """Whether files of a name are shards of the run their folder holds (event files), by
    the readers' ``shard_name`` hooks read once."""
    hooks = _hooks("shard_name")
    return lambda name: any(h(name) for h in hooks)


def split_dirs() -> tuple[str, ...]:
    """The split folders of a run folder of shards (Keras' ``train``, ``validation``), the
    first always present; every reader's ``split_dirs``, each once."""
    return tuple(dict.fromkeys(d for hook in _hooks("split_dirs") for d in hook()))


def writer_dirs(path: Path) -> list[Path]:
    """The subfolders of run folder ``path`` where other writers of its run log, read
    through ``path`` (every reader's ``writer_dirs`` hook)."""
    return [d for hook in _hooks("writer_dirs") for d in hook(path)]


def snapshot(path: Path) -> tuple[Path, int | None] | None:
    """``(output folder, place)`` where a reader takes the log at ``path`` for a snapshot
    of the run in that output folder (``None`` place: the run's final state), else
    ``None`` (:data:`base.OPTIONAL`)."""
    for hook in _hooks("snapshot"):
        found = hook(path)
        if found is not None:
            return found
    return None


def sibling_dirs(path: Path) -> tuple[Path, ...]:
    """The folders under output folder ``path`` where another logger writes the same run
    (the HF Trainer's ``runs/``), by every reader's ``sibling_dirs`` hook."""
    return tuple(d for hook in _hooks("sibling_dirs") for d in hook(path))


def tail_mode(reader) -> str:
    """How ``watch`` follows a log of ``reader`` (``lines``, ``records`` or ``whole``, see
    :data:`base.TailMode`); a reader that declares none is read again whole."""
    return getattr(reader, "tail_mode", "whole")


def preference(name: str | None) -> int:
    """The :attr:`~base.Reader.preference` of format ``name`` (lower is judged first when
    one run is written in several formats); an unknown format comes after every reader."""
    readers = _readers()
    return next((r.preference for r in readers if r.name == name), len(readers))


def line_anchors(name: str | None) -> bool:
    """The :attr:`~base.Reader.line_anchors` of format ``name``: whether a finding's
    ``line`` in its logs is a line of a text file; ``False`` for a name no reader has
    (asked without importing the readers: a reader's name is its module's)."""
    if name not in READER_MODULES:
        return False
    return bool(_reader(name).line_anchors)


def format_names() -> list[str]:
    """The reader names, in sniffing order."""
    g = globals()
    return [r.name for r in g["READERS"]] if "READERS" in g else list(READER_MODULES)


def get_reader(name: str) -> Reader:
    """The reader module called ``name``.

    Raises:
        ReadError: no reader has that name.
    """
    if "READERS" not in globals() and name in READER_MODULES:
        return _reader(name)
    for r in _readers():
        if r.name == name:
            return r
    raise ReadError(f"unknown format {name!r}; known: {', '.join(format_names())}")


def detect(path: Path, fmt: str = "auto") -> Reader:
    """Pick the reader for ``path``: by content unless ``fmt`` names one.

    Raises:
        ReadError: missing, unreadable, empty, an LFS pointer, or no reader recognises it.
        OwnOutput: the file is trainproof's own output (a saved report), not a training log.
    """
    if path.is_dir():
        for r in _readers():
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
    from ._own import KINDS, own_output

    text = head_text(head)
    # Before any reader, and whatever --format says: a saved report names steps and losses
    # and would read as a console capture of a run.
    own = own_output(text)
    if own is not None:
        raise OwnOutput(
            f"{KINDS[own]}, not a training log: trainproof reads the logs a run writes, not its own reports"
        )
    if fmt != "auto":
        return get_reader(fmt)
    for r in _sniffing_order():
        if r.sniff(path, text):
            return r
    raise NotALog(
        f"not a training log trainproof can read (tried {', '.join(format_names())}); "
        f"no reader recognises it ({describe_shape(path, head, text)})"
    )


#: Separators a table's first line may use, with the word the description gives each.
_SEPARATORS = ((",", "comma"), ("\t", "tab"), (";", "semicolon"), ("|", "bar"))


def _json_array_start(first: str) -> bool:
    """Whether a file's first non-blank line opens a JSON array: the bracket alone (a
    pretty-printed array), its first element an object, array or string, or the whole line
    a JSON array. A log line that opens with a bracketed tag (``[LightGBM] [Info]``,
    ``[2024-05-01 12:00:10,000][00001]``, ``[11]\\ttraining's …``) is none."""
    rest = first[1:].lstrip() if first[:1] == "[" else None
    if rest is None:
        return False
    if rest[:1] in ("", "{", "[", '"'):
        return True
    import json  # the message of a file no reader took: not worth an import at start-up

    try:
        json.loads(first.rstrip(","))
    except ValueError:
        return False
    return True


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
    if first[:1] == "{" or _json_array_start(first):
        what = "a JSON object" if first[0] == "{" else "a JSON array"
    else:
        what = "plain text"
        for sep, word in _SEPARATORS:
            if sep in first:
                what = f"{first.count(sep) + 1} {word}-separated fields"
                break
    return f"text, {size}, {more}{lines:,} line(s); first line: {what}"


def open_log(path: Path, fmt: str = "auto") -> tuple[str, Iterator[Record | Rows | Columns], ReadState]:
    """Detect the format and start streaming.

    Returns:
        ``(format_name, records, state)``: ``records`` yields what the reader's ``read``
        yields (records, row and column batches, for :func:`trainproof.runlog.build_runlogs`);
        ``state`` is complete once ``records`` is exhausted.

    Raises:
        ReadError: see :func:`detect`; the iterator itself may raise it too.
    """
    reader = detect(path, fmt)
    from .base import ReadState

    state = ReadState()
    # A gzip log cut at the decompression cap says so in this state (TP-DATA-DROPPED).
    return reader.name, reporting_to(iter(reader.read(path, state)), state), state
