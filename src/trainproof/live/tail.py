"""Incremental reading of a log that is still being written (``trainproof watch``).

Append-only formats are read from the byte offset where the last poll stopped, so a poll
costs what was appended, not the length of the log:

* JSONL: complete new lines; a half-written last line waits for the next poll.
* CSV: complete new rows, parsed with the header the table has so far.
* TensorBoard event files: complete new records; a torn last record is a record not
  written yet, not damage.

HF ``trainer_state.json`` is rewritten whole at each save, and the other formats (Coqui,
console captures, MLflow folders) are re-read whole, but only when the file's size or
modification time changed. A file that shrank or was replaced (rotation, a restarted run)
is read again from the start, with a note.
"""
from __future__ import annotations

import csv as _csv
import os
from pathlib import Path

import numpy as np

from ..formats import ReadError, ReadState, detect
from ..formats import csv as csv_fmt
from ..formats import jsonl as jsonl_fmt
from ..formats import tfevents as tf_fmt
from ..formats._io import encoding_of
from ..runlog import Columns
from .guardian import Guardian


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
        self.lineno = 0
        self.ident: tuple | None = None  # (inode, device) of the file being followed
        self.size = -1
        self.mtime = -1.0
        self._csv: csv_fmt.RowParser | None = None
        self._tf_plugins: dict[str, str] = {}
        self._tf_records = 0
        self._encoding = "utf-8"

    def exists(self) -> bool:
        return self.path.exists()

    def _restart(self, why: str) -> None:
        self.g.reset(why)
        self.offset = 0
        self.lineno = 0
        self._csv = None
        self._tf_plugins = {}
        self._tf_records = 0

    def poll(self) -> int:
        """Read what was appended since the last poll; returns the number of new records."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return 0
        ident = (st.st_ino, st.st_dev)
        if self.ident is not None and (ident != self.ident or st.st_size < self.offset
                                       or (st.st_size < self.size and self.reader is not None)):
            self._restart("the log was replaced or truncated (rotation, a restarted run): read again from the start")
            self.reader = None
        self.ident = ident
        if self.reader is None:
            if st.st_size == 0:
                return 0
            self.reader = detect(self.path, self.fmt)
            with open(self.path, "rb") as f:
                self._encoding = encoding_of(f.read(4))
        before = self.g.records
        name = self.reader.name
        if name == "jsonl":
            self._poll_lines(self._jsonl_line)
        elif name == "csv":
            self._poll_lines(self._csv_line)
        elif name == "tfevents":
            self._poll_tfevents()
        elif st.st_size != self.size or st.st_mtime != self.mtime:
            self._reread()
        self.size, self.mtime = st.st_size, st.st_mtime
        return self.g.records - before

    # --- append-only text ---------------------------------------------------------------
    def _poll_lines(self, handle) -> None:
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        end = data.rfind(b"\n")
        if end < 0:
            return  # no complete line yet
        chunk = data[: end + 1]
        self.offset += len(chunk)
        text = chunk.decode(self._encoding if self._encoding != "utf-16" else "utf-16", errors="replace")
        if self.lineno == 0:
            text = text.lstrip("\ufeff")
        for raw in text.splitlines():
            self.lineno += 1
            handle(raw)

    def _jsonl_line(self, raw: str) -> None:
        s = raw.strip()
        if s:
            rec = jsonl_fmt.parse_line(s, self.lineno)
            if rec is not None:
                self.g.add_record(rec)

    def _csv_line(self, raw: str) -> None:
        if self._csv is None:
            if not raw.strip():
                return
            self._csv = csv_fmt.RowParser(csv_fmt._delimiter(raw) or ",")
        row = next(_csv.reader([raw], delimiter=self._csv.delimiter), [])
        rec = self._csv.row(row, self.lineno)
        if rec is not None:
            self.g.add_record(rec)

    # --- event files --------------------------------------------------------------------
    def _poll_tfevents(self) -> None:
        cols: dict = {}
        state = ReadState()
        tail = tf_fmt._read_file(self.path, state, 0, cols, offset=self.offset, plugins=self._tf_plugins,
                                 first_index=self._tf_records, live=True)
        self.offset += tail.consumed
        self._tf_records += tail.records
        if tail.reason is not None and tail.bad_framing and tail.records == 0 and self.offset == 0:
            raise ReadError(f"not a TensorBoard event file: {tail.reason}")
        for tag in sorted(cols):
            c = cols[tag]
            self.g.add_columns(Columns(tag, np.frombuffer(c.steps, dtype=np.float64).copy(),
                                       np.frombuffer(c.values, dtype=np.float64).copy(),
                                       np.frombuffer(c.lines, dtype=np.int64).copy()))
        for n in state.notes:
            if n not in self.g.notes:
                self.g.notes.append(n)

    # --- rewritten whole ----------------------------------------------------------------
    def _reread(self) -> None:
        from ..api import read_runlog

        run = read_runlog(self.path, self.fmt)
        self.g.reset()
        for s in run.series.values():
            self.g.add_columns(Columns(s.key, s.steps, s.values, s.lines))
        self.g.meta.update(run.meta)
        self.g._count = run.records
