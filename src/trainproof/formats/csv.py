"""Delimited metric tables: CSV, semicolon- or tab-separated.

Dialects that occur in the wild and are handled here:

* PyTorch Lightning ``CSVLogger`` ``metrics.csv``: one row per ``log_metrics`` call, the
  union of all columns, empty cells for keys not logged in that row; several rows share a
  step (train, validation, learning-rate monitor).
* Keras ``CSVLogger`` (often named ``training.log``): ``epoch,…`` header, no step column,
  epoch is the x axis; a run resumed with ``append=True`` repeats the header mid-file,
  possibly with a different column set. The repeated header resets the column mapping.
* W&B chart exports: ``Step``/``_step`` column, ``<run> - train/loss`` columns and
  ``… __MIN`` / ``… __MAX`` companion columns (kept as raw series, never the metric).

Empty cells and non-numeric cells are absent values, never 0. A row whose field count
differs from its header cannot be mapped to columns and is skipped, with a note. A table
whose first row is data rather than names is a :class:`ReadError`: no column is guessed.
"""
from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

from .. import aliases
from ..runlog import Record
from ._io import MAX_LINE, Lines, ReadError, open_text

name = "csv"
description = "CSV/TSV metric table (Lightning, Keras, W&B export, pandas)"

_DELIMS = (",", "\t", ";")


def _is_number(cell: str) -> bool:
    try:
        float(cell)
        return True
    except ValueError:
        return False


def _delimiter(line: str) -> str | None:
    counts = [(line.count(d), -i, d) for i, d in enumerate(_DELIMS)]
    best = max(counts)
    return best[2] if best[0] > 0 else None


def _looks_like_header(cells: list[str]) -> bool:
    named = [c.strip() for c in cells if c.strip()]
    if not named or len(named) * 2 < len(cells):
        return False
    return not any(_is_number(c) for c in named)


def _is_new_header(row: list[str], header: list[str]) -> bool:
    """A mid-file row that starts a new column mapping (a resumed or concatenated log).

    It shares a name or its first column with the current header, or it is a row of
    distinct names, each with a letter: mapping the rows under it to the old header by
    position would put values under the wrong names. Placeholder rows (``-,-,-``,
    ``N/A,N/A``) repeat one token and stay data rows.
    """
    if not _looks_like_header(row):
        return False
    cells = [c.strip() for c in row]
    if cells[0] == header[0] or set(cells) & set(header):
        return True
    named = [c for c in cells if c]
    return len(set(named)) == len(named) and all(any(ch.isalpha() for ch in c) for c in named)


def sniff(path: Path, head: str) -> bool:
    """A header row of names followed by a row with the same field count and a number."""
    lines = [ln for ln in head.splitlines() if ln.strip()]
    if len(lines) < 2:
        return False
    if head.lstrip().startswith(("{", "[")):
        return False
    d = _delimiter(lines[0])
    if d is None:
        return False
    rows = list(csv.reader(lines[:3], delimiter=d))
    if len(rows) < 2:  # a quoted field swallowed the line breaks
        return False
    header = rows[0]
    if len(header) < 2 or not _looks_like_header(header):
        return False
    if any(len(c) > 200 for c in header):
        return False
    row = rows[1]
    if len(row) == len(header) + 1 and not row[-1].strip():
        row = row[:-1]  # a trailing delimiter, as :func:`read` accepts
    return len(row) == len(header) and any(c.strip() and _is_number(c) for c in row)


class RowParser:
    """Turns the rows of one table into records, following its header as it changes.

    Holds the current header (a repeated header mid-file resets it), the step column, and
    what was skipped. :func:`read` feeds it a whole file; a live tail feeds it the rows
    appended since the last poll.
    """

    def __init__(self, delimiter: str) -> None:
        self.delimiter = delimiter
        self.header: list[str] | None = None
        self.step_idx: int | None = None
        self.bad_rows: list[int] = []
        self.bad_shape = ""
        self.header_changes: list[str] = []

    def row(self, row: list[str], start: int) -> Record | None:
        """The record of one row starting at line ``start``, or ``None`` (blank, header,
        or a row whose columns cannot be known).

        Raises:
            ReadError: the first non-blank row is data: the columns have no names.
        """
        if not row or not any(c.strip() for c in row):
            return None
        header = self.header
        if header is None and not _looks_like_header(row):
            # Columns named after the first row's numbers would be invented names.
            shown = self.delimiter.join(c.strip() for c in row)[:60]
            raise ReadError(f"no header row: line {start} is data ({shown}), so the columns have no names")
        if header is None or _is_new_header(row, header):
            new = [c.strip() for c in row]
            if header is not None:
                added = [c for c in new if c not in header]
                removed = [c for c in header if c not in new]
                change = ""
                if added or removed:
                    change = "; column set changed (" + ", ".join(
                        [f"+{c}" for c in added] + [f"-{c}" for c in removed]
                    ) + ")"
                self.header_changes.append(f"header repeated at line {start}{change}")
            self.header = new
            sk = aliases.step_key(new)
            self.step_idx = new.index(sk) if sk is not None else None
            return None
        if len(row) != len(header):
            if len(row) == len(header) + 1 and not row[-1].strip():
                row = row[:-1]  # a trailing delimiter
            else:
                if not self.bad_rows:
                    self.bad_shape = f"{len(row)} fields under a {len(header)}-field header"
                self.bad_rows.append(start)
                return None
        values: dict[str, float] = {}
        step = None
        step_idx = self.step_idx
        for i, cell in enumerate(row):
            c = cell.strip()
            if not c:
                continue
            try:
                v = float(c)
            except ValueError:
                continue
            if i == step_idx:
                if v == v and abs(v) != float("inf"):
                    step = v
                continue
            values[header[i]] = v
        return Record(step, values, start)

    def finish(self, state) -> None:
        """Report header changes and skipped rows into the reader state."""
        state.notes.extend(self.header_changes)
        if self.bad_rows:
            shown = ", ".join(str(n) for n in self.bad_rows[:5]) + (" …" if len(self.bad_rows) > 5 else "")
            state.drop(
                f"skipped {len(self.bad_rows)} row(s) whose field count does not match the header "
                f"(first: {self.bad_shape}; lines {shown}): their columns cannot be known, so they were not guessed"
            )


def read(path: Path, state) -> Iterator[Record]:
    """Stream one record per data row.

    A last row without a line end is not read (with a note): every CSV writer ends its
    rows with one, so an unfinished last line is a row cut mid-write, and a cut number
    (``0.8123`` torn to ``0.``) would otherwise be read as a different value.
    """
    # A quoted field may span lines; an unclosed quote would make the rest of the file one
    # field, so a field is bounded like a line.
    csv.field_size_limit(MAX_LINE)
    with open_text(path, newline="") as f:
        first = ""
        for first in Lines(f):
            if first.strip():
                break
        delim = _delimiter(first) or ","
        f.seek(0)
        lines = Lines(f)
        reader = csv.reader(lines, delimiter=delim)
        parser = RowParser(delim)
        prev_end = 0
        while True:
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as e:
                state.drop(f"line {prev_end + 1}: {e} (an unclosed quote?); the rest of the file was not read")
                break
            start = prev_end + 1
            prev_end = reader.line_num
            rec = parser.row(row, start)
            if rec is not None:
                if lines.unterminated:
                    state.drop(f"the last row (line {start}) has no line end: a row cut mid-write "
                               "(a run killed or still writing?), so it was not read")
                    continue
                yield rec
        lines.note(state)
    parser.finish(state)
