"""What a reader module is: the :class:`Reader` protocol, the :class:`ReadState` it fills
while it streams, and the errors it raises.

This module is a leaf of the ``formats`` package: the readers import their contract from
here (and their I/O from :mod:`._io`), never from the package ``__init__``, which imports
them; so the package has no import cycle.

A reader is a *module*, not a class: :data:`trainproof.formats.READERS` lists modules that
each satisfy :class:`Reader` by their module-level names. ``tests/formats/test_base.py``
checks every one of them against :data:`REQUIRED` and :data:`OPTIONAL` with
:mod:`inspect` (``isinstance`` with a runtime-checkable protocol only checks that the
names exist, not their signatures).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from ..runlog import Columns, Record, Rows
from ._io import NotALog, NotOpened, ReadError

__all__ = [
    "OPTIONAL",
    "REQUIRED",
    "TAIL_MODES",
    "LineTailer",
    "NotALog",
    "NotOpened",
    "ReadError",
    "ReadState",
    "Reader",
    "RecordTailer",
    "RunDir",
    "TailMode",
]

#: How ``trainproof watch`` follows a log of the format (:mod:`trainproof.live.tail`):
#: ``lines``: an append-only text log, its complete new lines fed to the reader's
#: :meth:`Reader.line_tailer`; ``records``: an append-only binary log, read from the
#: offset where the last poll stopped by its :meth:`Reader.record_tailer`; ``whole``: a
#: log rewritten at each save (or one whose appends cannot be parsed alone), read again
#: whole when its size or modification time changes.
TailMode = Literal["lines", "records", "whole"]
TAIL_MODES = ("lines", "records", "whole")


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


@dataclass(frozen=True)
class RunDir:
    """What a reader reads of a run folder ``doctor``'s walk found, as its
    :meth:`Reader.run_dir` hook says (the walk returns the folder, not its files).

    Attributes:
        parts: the subfolders that are the run's own: the walk does not descend into them
            (``None``: none of its subfolders; an MLflow run's ``artifacts/`` is not a
            part, so the walk still finds the logs in it).
        reads: the subfolders its reader reads besides the folder's own entries: a symlink
            in them that leaves the searched tree keeps the run from being read.
        owns_files: the folder's own files are the run's, read through the folder: the
            walk does not return them alone (a W&B run's ``.wandb`` log).
        skip: why the run is not judged though it is one (an MLflow run its store marks
            deleted): the walk lists it as ignored with this reason.
    """

    parts: frozenset[str] | None
    reads: frozenset[str]
    owns_files: bool = False
    skip: str | None = None


class LineTailer(Protocol):
    """Turns the lines appended to a ``lines``-mode log into records, one line at a time,
    keeping what it needs across polls (a CSV header, counts of skipped lines)."""

    def line(self, raw: str, lineno: int) -> Record | None:
        """The record of one complete line (without its line end), or ``None`` (a blank,
        a header, a line that is not a record).

        Raises:
            ReadError: the log is not readable as the format (a CSV without a header).
        """

    def drops(self) -> list[str]:
        """What was not read so far, one note each (as :attr:`ReadState.drops`)."""


class RecordTailer(Protocol):
    """Reads what was appended to a ``records``-mode log since the last poll."""

    def poll(self, path: Path, offset: int) -> tuple[int, list[Columns]]:
        """Read ``path`` from byte ``offset`` (where the previous poll stopped).

        Returns:
            ``(consumed, columns)``: the bytes read that need not be read again (a torn
            last record is left for the next poll), and the new points.

        Raises:
            ReadError: the file is not of the format.
        """

    def drops(self) -> list[str]:
        """What was not read so far, one note each (as :attr:`ReadState.drops`)."""


class Reader(Protocol):
    """What every module in :data:`trainproof.formats.READERS` provides.

    Attributes:
        name: the format's name (``--format`` choices, ``RunLog.format``).
        description: one line for ``trainproof formats`` and the docs.
        file_names: lower-case file names only this format's writer gives a file
            (``trainer_state.json``): ``doctor`` reports such a file it cannot read as a
            run not judged rather than skipping it, and its walk looks at it.
        suffixes: lower-case file name extensions this format's logs have (``.csv``);
            ``doctor``'s walk looks at files with one of them, also followed by ``.gz``.
        run_suffixes: lower-case endings of names only a run's log has (``.jsonl``): such
            a file that cannot be opened, or holds one record, still counts as a log.
        tail_mode: how ``trainproof watch`` follows it (:data:`TailMode`).
        preference: where its log stands when one run is written in several formats
            (``doctor`` judges the lowest and lists the others as the same run); the
            trainer's own state first, as it also holds the run's intent (``max_steps``),
            then event files (every scalar, one per step), then tables and text logs.
        line_anchors: whether a finding's ``line`` in its logs is a 1-based line of a text
            file (SARIF anchors the result's region there; the outputs say ``line N``);
            ``False`` where it is a record's index (a database, a binary log: ``record N``).

    Readers know bytes and formats only: no rules, thresholds or output. The optional
    hooks (:data:`OPTIONAL`) are module functions a reader defines where it needs them.
    """

    name: str
    description: str
    file_names: tuple[str, ...]
    suffixes: tuple[str, ...]
    run_suffixes: tuple[str, ...]
    tail_mode: TailMode
    preference: int
    line_anchors: bool

    def sniff(self, path: Path, head: str) -> bool:
        """Whether the file at ``path`` is of this format, judged from ``head`` (its first
        :data:`~trainproof.formats._io.HEAD_BYTES`, decoded) and, where that is not
        enough, by reading more of it. Never raises: an unreadable file is ``False``."""

    def read(self, path: Path, state: ReadState) -> Iterator[Record | Rows | Columns]:
        """Stream the log at ``path`` (a file, or a run folder :meth:`sniff_dir` claims) as
        records, row batches and column batches, in order: what
        :func:`trainproof.runlog.build_runlogs` takes. It fills ``state`` as it goes
        (complete once the iterator is exhausted).

        Raises:
            ReadError: with a one-line reason, when the input is not readable as the format
                (raised when iterated, the first record or later).
        """


#: The names each reader module defines, and the parameters of those that are functions.
REQUIRED: dict[str, tuple[str, ...] | type] = {
    "name": str,
    "description": str,
    "file_names": tuple,
    "suffixes": tuple,
    "run_suffixes": tuple,
    "tail_mode": str,
    "preference": int,
    "line_anchors": bool,
    "sniff": ("path", "head"),
    "read": ("path", "state"),
}

#: Functions a reader defines where it needs them, with their parameters:
#:
#: * ``sniff_dir(path) -> bool``: the reader reads run folders (several files of one run)
#:   and ``path`` is one.
#: * ``log_name(name) -> bool``: ``doctor``'s walk also looks at files of this name,
#:   besides :attr:`Reader.suffixes` (event files: ``tfevents`` anywhere in the name).
#: * ``writer_name(name) -> bool``: besides :attr:`Reader.file_names`, a name only this
#:   format's writer gives a file (``events.out.tfevents.*``).
#: * ``run_dir(path, dirnames, names) -> RunDir | None``: folder ``path``, whose
#:   subfolders are ``dirnames`` and whose entries are ``names`` (as the walk listed
#:   them, nothing more is read), is a run folder of this format: what the reader reads of
#:   it (:class:`RunDir`); ``None`` otherwise.
#: * ``resumed_run(path) -> tuple[str, tuple] | None``: the run id a run folder holds and
#:   where the folder stands among the folders of that run (a run resumed with its id
#:   writes a folder each time and the reader reads them all through the last one), or
#:   ``None``: the walk keeps the last folder of each run id among folders side by side.
#: * ``client_entries(path, names) -> frozenset[str]``: of the entries ``names`` of folder
#:   ``path``, those the format's client keeps for itself and that hold no run (W&B's
#:   ``latest-run`` link and debug logs in its ``wandb/`` folder): never searched.
#: * ``run_part(name, above) -> bool``: a path part of this name, below the parts
#:   ``above`` (a tuple of names, outermost first), is one run of an experiment (a W&B run
#:   folder, Lightning's ``version_N``, an MLflow run folder): the folder above it names
#:   the experiment.
#: * ``shard_name(name) -> bool``: files of this name in one folder are the shards of one
#:   run, read through the folder (event files; a resumed run writes a new one).
#: * ``split_dirs() -> tuple[str, ...]``: the subfolders a run folder of sharded logs may
#:   hold its splits in, the first always present (Keras' ``train/`` and ``validation/``):
#:   such a folder is one run.
#: * ``writer_dirs(path) -> list[Path]``: the subfolders of run folder ``path`` (a folder
#:   of sharded logs) where other writers of the same run log (``add_scalars``' per-series
#:   folders, an evaluation writer's): read through ``path``, never a run of their own.
#: * ``snapshot(path) -> tuple[Path, int | None] | None``: the log at ``path`` is a
#:   snapshot of the run in an output folder: that folder, and the snapshot's place among
#:   them (``None`` for the run's final state): ``doctor`` judges the final state or the
#:   last snapshot and folds the others into it (HF's ``checkpoint-N/trainer_state.json``).
#: * ``sibling_dirs(path) -> tuple[Path, ...]``: the folders under the output folder
#:   ``path`` of a run (:meth:`snapshot`) where another logger writes the same run (the
#:   HF Trainer's ``runs/``): sharded logs there or in ``path`` are its siblings.
#: * ``line_tailer() -> LineTailer``: required with ``tail_mode == "lines"``.
#: * ``record_tailer() -> RecordTailer``: required with ``tail_mode == "records"``.
OPTIONAL: dict[str, tuple[str, ...]] = {
    "sniff_dir": ("path",),
    "log_name": ("name",),
    "writer_name": ("name",),
    "run_dir": ("path", "dirnames", "names"),
    "resumed_run": ("path",),
    "client_entries": ("path", "names"),
    "run_part": ("name", "above"),
    "shard_name": ("name",),
    "split_dirs": (),
    "writer_dirs": ("path",),
    "snapshot": ("path",),
    "sibling_dirs": ("path",),
    "line_tailer": (),
    "record_tailer": (),
}
