"""Incremental reading of a log that is still being written (``trainproof watch``).

Each reader says how a log of its format is followed (its ``tail_mode``,
:data:`trainproof.formats.base.TailMode`). Append-only formats are read from the byte
offset where the last poll stopped, so a poll costs what was appended, not the length of
the log:

* ``lines`` (JSONL, CSV): complete new lines, each handed to the reader's line tailer
  (a CSV row is parsed with the header the table has so far); a half-written last line
  waits for the next poll.
* ``records`` (TensorBoard event files): the reader's record tailer reads the complete
  new records; a torn last record is a record not written yet, not damage.

``whole`` formats (HF ``trainer_state.json``, rewritten at each save; Coqui, console
captures, MLflow metric files) and gzip logs are re-read whole, but only when the file's
size or modification time changed. A file that shrank or was replaced (rotation, a
restarted run) is read again from the start, with a note. What is watched is one regular
file: a folder or a FIFO is a usage error.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..formats import MAX_LINE, ReadError, detect, encoding_of, open_binary, tail_mode
from ..formats.lines import IncrementalText, LineSplitter, line_chunks, numbered_lines, overlong_note
from .guardian import Guardian

#: How many first bytes are kept to notice a file rewritten in place.
_HEAD_BYTES = 256
#: Bytes read and decoded at a time: a poll holds this much plus at most one line
#: (:data:`~trainproof.formats.MAX_LINE`), whatever was appended.
_READ_CHUNK = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"


def _still_starting(path: Path) -> bool:
    """True for a file that holds fewer than two complete lines (a first line still being
    written, or a CSV header alone): too little to tell its format yet."""
    with open_binary(path) as f:
        head = f.read(1 << 16)
    return head.count(b"\n") < 2 and len(head) < (1 << 16)


def latest_run(runs: list):
    """Of a store's runs (an MLflow or Trackio database), the one ``watch`` follows: the
    one that started last (``meta["started"]``, ISO 8601 UTC; a run without one counts as
    oldest), the last in the store's order on a tie. A log of one run is that run."""
    best = runs[-1]
    best_at = best.meta.get("started") or ""
    for run in reversed(runs[:-1]):
        at = run.meta.get("started") or ""
        if at > best_at:
            best, best_at = run, at
    return best


class LogTail:
    """Follows one log file and feeds what is new to a :class:`Guardian`.

    Args:
        path: the log file (it may not exist yet).
        guardian: where new records go.
        fmt: ``auto`` or a reader name.

    Raises:
        ReadError (from :meth:`poll`): the file exists but is not a log we can read.
    """

    def __init__(self, path: Path, guardian: Guardian, fmt: str = "auto") -> None:
        self.path = Path(path)
        self.g = guardian
        self.fmt = fmt
        self.reader = None
        self.offset = 0
        self.ident: tuple | None = None  # (inode, device) of the file being followed
        self.size = -1
        self.mtime = -1.0
        self._head = b""  # the file's first bytes as first read: a rewrite changes them
        self._tailer = None  # the reader's line or record tailer, made at the first poll
        self._torn: tuple | None = None
        self._encoding = "utf-8"
        self._gzip = False
        self._text: IncrementalText | None = None  # decodes what is appended, poll by poll
        self._lines = LineSplitter(MAX_LINE)  # the unfinished last line waits in it
        self._run_key: tuple | None = None  # the store run followed (see _reread)

    @property
    def _carry(self) -> str:
        """The unfinished last line, decoded: it waits for the next poll."""
        return self._lines.carry

    def exists(self) -> bool:
        """Whether the log file exists yet."""
        return self.path.exists()

    def _restart(self, why: str | None) -> None:
        self.g.reset(why)
        self.offset = 0
        self._head = b""
        self._tailer = None
        self._text = None
        self._lines = LineSplitter(MAX_LINE)

    def _whole(self) -> bool:
        """Whether the log is re-read whole when it changes rather than from an offset:
        formats rewritten at each save, and compressed logs (their bytes cannot be
        decoded from the middle)."""
        return tail_mode(self.reader) == "whole" or self._gzip

    def _rewritten(self, st: os.stat_result, ident: tuple) -> bool:
        """True when the file followed so far was replaced, truncated or rewritten in place
        (its first bytes changed: Lightning's CSVLogger rewrites metrics.csv with a new
        header when a new metric appears)."""
        if self.ident is None or self.reader is None:
            return False
        if ident != self.ident or st.st_size < self.offset:
            return True
        if self._head:
            with open_binary(self.path) as f:
                return f.read(len(self._head)) != self._head
        return False

    def poll(self) -> int:
        """Read what was appended since the last poll; returns the number of new records.

        Raises:
            ReadError: the file is not a log we can read (a file that is still being
                started, e.g. a first line half written or a CSV header alone, waits).
        """
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return 0
        ident = (st.st_ino, st.st_dev)
        if self.reader is not None and self._whole():
            self.ident = ident
            return self._poll_rewritten(st)
        if self._rewritten(st, ident):
            self._restart(
                "the log was replaced or truncated, or rewritten in place (rotation, a restarted "
                "run, a new CSV header): read again from the start"
            )
            self.reader = None
        self.ident = ident
        if self.reader is None:
            if st.st_size == 0:
                return 0
            try:
                self.reader = detect(self.path, self.fmt)
            except ReadError:
                if _still_starting(self.path):
                    return 0
                raise
            with open_binary(self.path) as f:
                head = f.read(4)
            self._encoding = encoding_of(head)
            self._gzip = head.startswith(_GZIP_MAGIC)
            if self._whole():
                return self._poll_rewritten(st)
        before = self.g.records
        if tail_mode(self.reader) == "lines":
            if self._tailer is None:
                self._tailer = self.reader.line_tailer()
            self._poll_lines(self._line)
        else:
            if self._tailer is None:
                self._tailer = self.reader.record_tailer()
            self._poll_records()
        if not self._head and self.offset:
            with open_binary(self.path) as f:
                self._head = f.read(min(self.offset, _HEAD_BYTES))
        self._set_drops()
        self.size, self.mtime = st.st_size, st.st_mtime
        return self.g.records - before

    def _poll_rewritten(self, st: os.stat_result) -> int:
        if st.st_size == self.size and st.st_mtime == self.mtime:
            return 0
        before = self.g.records
        try:
            self._reread()
        except ReadError:
            # A save caught half-written is retried at the next poll; the same bytes
            # failing twice are a broken file.
            if self._torn == (st.st_size, st.st_mtime):
                raise
            self._torn = (st.st_size, st.st_mtime)
            return 0
        self._torn = None
        self.size, self.mtime = st.st_size, st.st_mtime
        return max(0, self.g.records - before)

    def _set_drops(self) -> None:
        drops = []
        if self._lines.overlong:
            drops.append(overlong_note(self._lines.overlong, MAX_LINE))
        if self._tailer is not None:
            drops += self._tailer.drops()
        if drops:
            self.g.meta["dropped"] = drops
        else:
            self.g.meta.pop("dropped", None)

    # --- append-only text ---------------------------------------------------------------
    def _poll_lines(self, handle) -> None:
        """Decode what was appended, a chunk at a time, and hand each complete line and its
        number to ``handle``; the unfinished last line waits in the line splitter for the
        next poll. The chunks and their lines are cut as `epoch`'s readers cut them
        (:func:`~trainproof.formats.lines.line_chunks`), a line longer than ``MAX_LINE``
        skipped as `epoch` skips it, and the text decoded as `epoch` decodes it (the
        byte-order mark's encoding, universal newlines:
        :class:`~trainproof.formats.lines.IncrementalText`)."""
        if self._text is None:
            self._text = IncrementalText(self._encoding)
        with open_binary(self.path) as f:
            f.seek(self.offset)
            try:
                chunks = line_chunks(self._text.reading(f), _READ_CHUNK, self._lines, end=False)
                for lineno, raw in numbered_lines(chunks):
                    handle(raw, lineno)
            finally:
                self.offset = f.tell()

    def _line(self, raw: str, lineno: int) -> None:
        rec = self._tailer.line(raw, lineno)
        if rec is not None:
            self.g.add_record(rec)

    # --- appended records ---------------------------------------------------------------
    def _poll_records(self) -> None:
        consumed, columns = self._tailer.poll(self.path, self.offset)
        self.offset += consumed
        for c in columns:
            self.g.add_columns(c)

    # --- rewritten whole ----------------------------------------------------------------
    def _reread(self) -> None:
        from ..api import read_runlogs

        runs = read_runlogs(self.path, self.fmt)
        run = latest_run(runs)
        key = (run.meta.get("run_id"), run.meta.get("run")) if len(runs) > 1 else None
        if key != self._run_key and self._run_key is not None:
            # Another run of the store began after the one followed: a new run.
            self.g.reset(f"a newer run began in the store: following {run.meta.get('run')!r}")
        self._run_key = key
        self.g.load(run)
        if key is not None:
            note = f"the store holds {len(runs)} runs: following the one that started last, {run.meta.get('run')!r}"
            self.g.notes[:] = [n for n in self.g.notes if not n.startswith("the store holds ")] + [note]
