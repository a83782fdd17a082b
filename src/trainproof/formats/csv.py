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

* YOLOv5 ``results.csv``: names and numbers padded with spaces to a fixed width (cells
  are stripped); CatBoost ``learn_error.tsv`` (``iter<TAB>Logloss``).
* TensorBoard's download of one scalar chart (``Wall time,Step,Value``): the value column
  is named by the file, ``run-<run>-tag-<tag>.csv`` as the TensorBoard UI names it (the tag;
  ``<run>/<tag>`` where the run names a held-out split, as Keras' ``validation`` run does),
  else the file's own name (``val_loss.csv``).
* MLflow UI *long-format* export: ``Run,Run ID,metric,step,timestamp,value``, one row per
  logged value. Rows are pivoted into records (``{metric: value}`` at ``step``); an
  export of several runs keeps the run with the most rows (ties: the first in the file),
  with a note naming the others, so runs are never mixed into one series.

A cell that spells a non-finite number is that number: ``nan``, ``inf``, ``-Infinity``
(what ``float()`` reads) and the Windows C runtime's ``1.#QNAN``, ``-1.#IND``, ``1.#INF``,
``nan(ind)`` (:func:`~trainproof.formats._values.nonfinite`). A framework's printed scalar
is its number (``tensor(0.53, device='cuda:0')``, ``np.float32(0.53)``,
:func:`~trainproof.formats._values.string_number`). Other non-numeric cells are absent
values, never 0; a missing-value word (``None``, ``#N/A``, ``<NA>``, ``NA``, ``null``) is a
hole as an empty cell is. An empty cell is a *hole*: ``pandas.to_csv`` writes NaN as an
empty cell, and a sparse table (Lightning, W&B) leaves a cell empty where the metric was
not logged; the column's history tells the two apart (the rule is
:class:`~trainproof.runlog.RunLogBuilder`'s). A row whose field count differs from its
header cannot be mapped to columns and is skipped, with a note.

A table whose first row is data rather than names has no column names. It is read only
when the names are defensible (:func:`headerless_columns`): the file's own name says it
holds a loss (``loss.csv``, ``train_cost.txt``), a first column of increasing integers is
the step, and the loss is the only other column, or the one column equal to the sum of
all the others in every row read to decide (a total beside its parts). Anything else is
a :class:`ReadError` with the reason: no column is guessed.
"""

from __future__ import annotations

import csv
import operator
import re
from collections.abc import Iterator
from itertools import chain, repeat
from pathlib import Path

import numpy as np

# The helper module by its full name, not `from . import`: a reader never imports the
# package __init__ (which imports the readers), and _rows's attributes stay patchable.
import trainproof.formats._columnar as _columnar  # noqa: PLR0402
import trainproof.formats._rows as _rows  # noqa: PLR0402

from .. import aliases
from .._arrays import unique
from ..aliases.vocabulary import key_words, words
from ..runlog import Record, Rows
from ._io import NotALog, ReadError, open_text
from ._values import is_absent, string_number
from .base import ReadState
from .lines import MAX_LINE, Lines

name = "csv"
description = "CSV/TSV metric table (Lightning, Keras, W&B export, pandas)"
#: Lightning's CSVLogger, Stable-Baselines3's logger, Keras' CSVLogger (its default name).
file_names = ("metrics.csv", "progress.csv", "training.log")
suffixes = (".csv", ".tsv")
run_suffixes = ()
tail_mode = "lines"
preference = 3
#: Whether outputs anchor a finding at its line (a finding's line is the table's line).
line_anchors = True

_DELIMS = (",", "\t", ";")


def _is_number(cell: str) -> bool:
    try:
        float(cell)
        return True
    except ValueError:
        return False


def delimiter_of(line: str) -> str | None:
    """The delimiter of a table whose first line is ``line``: the one of ``,``, tab and
    ``;`` it holds most often (the first of a tie), or ``None`` when it holds none."""
    counts = [(line.count(d), -i, d) for i, d in enumerate(_DELIMS)]
    best = max(counts)
    return best[2] if best[0] > 0 else None


#: A date and a time of day: a value (a log line's time stamp), never a column's name.
#: Python's logging writes ``2025-04-24 21:16:20,207 - INFO - …``, whose comma makes every
#: line of a console capture look like a row of a table.
_TIME_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")


def _looks_like_header(cells: list[str]) -> bool:
    named = [c.strip() for c in cells if c.strip()]
    if not named or len(named) * 2 < len(cells):
        return False
    return not any(_is_number(c) or _TIME_STAMP.match(c) for c in named)


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


#: Lightning's loggers (CSVLogger's ``metrics.csv``, TensorBoardLogger's event file) write
#: each run of an experiment into its own ``<save_dir>/<name>/version_N/``.
LIGHTNING_VERSION = re.compile(r"^version_\d+$")


def run_part(name: str, above: tuple[str, ...] = ()) -> bool:
    """Whether a path part of this name is one run of a Lightning experiment
    (:data:`LIGHTNING_VERSION`): the folder above it names the experiment (reader protocol
    hook)."""
    return bool(LIGHTNING_VERSION.match(name))


def sniff(path: Path, head: str) -> bool:
    """A header row of names followed by a row with the same field count and a number;
    or a header-less table of numbers in a file whose name says it holds a loss (see
    :func:`headerless_columns`)."""
    lines = [ln for ln in head.splitlines() if ln.strip()]
    if len(lines) < 2:
        return False
    if head.lstrip().startswith(("{", "[")):
        return False
    d = delimiter_of(lines[0])
    if d is None:
        return False
    rows = list(csv.reader(lines[:3], delimiter=d))
    if len(rows) < 2:  # a quoted field swallowed the line breaks
        return False
    header = rows[0]
    if len(header) >= 2 and _all_numbers(header) and _names_a_loss(path):
        return all(len(r) == len(header) and _all_numbers(r) for r in rows[1:2])
    if len(header) < 2 or not _looks_like_header(header):
        return False
    if any(len(c) > 200 for c in header):
        return False
    row = rows[1]
    if len(row) == len(header) + 1 and not row[-1].strip():
        row = row[:-1]  # a trailing delimiter, as :func:`read` accepts
    return len(row) == len(header) and any(c.strip() and _is_number(c) for c in row)


def _all_numbers(cells: list[str]) -> bool:
    return bool(cells) and all(c.strip() and _is_number(c) for c in cells)


def _names_a_loss(path: Path) -> bool:
    """The file's name (without suffixes, ``loss.csv.gz`` -> ``loss``) names a loss."""
    stem = path.name.split(".", 1)[0]
    return aliases.loss_candidate(stem) is not None


#: Rows read to decide what the columns of a header-less table are.
_HEADERLESS_ROWS = 200


def headerless_columns(path: Path, rows: list[list[str]]) -> tuple[list[str], str]:
    """Column names for a table with no header row, and the note that says why.

    Args:
        path: the file (its name must name a loss, e.g. ``loss.csv``).
        rows: its first rows (up to :data:`_HEADERLESS_ROWS`), cells as strings.

    Returns:
        ``(names, note)``: ``step`` for a first column of strictly increasing integers,
        ``loss`` (``eval_loss`` when the file name names a validation or test loss) for
        the loss column, ``column <i>`` (1-based) for the others.

    Raises:
        ReadError: the names cannot be defended: the file name does not name a loss,
            rows of different widths or non-numbers, or several value columns of which
            none is the sum of the others.
    """
    first = rows[0] if rows else []
    shown = ",".join(c.strip() for c in first)[:60]
    no_names = f"no header row: line 1 is data ({shown}), so the columns have no names"
    cand = aliases.loss_candidate(path.name.split(".", 1)[0])
    if cand is None:
        raise ReadError(no_names)
    k = len(first)
    if not all(len(r) == k and _all_numbers(r) for r in rows):
        raise ReadError(no_names + "; its rows are not all numbers of one width, so none is guessed")
    vals = np.array([[float(c) for c in r] for r in rows], dtype=np.float64)
    names = [f"column {i + 1}" for i in range(k)]
    value_cols = list(range(k))
    why = []
    c0 = vals[:, 0]
    if k >= 2 and len(rows) >= 2 and np.all(np.isfinite(c0)) and np.all(c0 == np.round(c0)) and np.all(np.diff(c0) > 0):
        names[0] = "step"
        value_cols = value_cols[1:]
        why.append("column 1 holds increasing integers: the step")
    loss_name = "eval_loss" if cand["split"] == "eval" else "loss"
    if len(value_cols) == 1:
        j = value_cols[0]
        why.append(f"column {j + 1} is the only value column: the {loss_name.replace('_', ' ')}")
    else:
        j = _sum_column(vals[:, value_cols])
        if j is None:
            raise ReadError(
                no_names + f"; {len(value_cols)} value columns and none is the sum of the others, "
                "so which one is the loss cannot be known and none is guessed"
            )
        j = value_cols[j]
        others = [i + 1 for i in value_cols if i != j]
        why.append(
            f"column {j + 1} equals the sum of columns {', '.join(map(str, others))} in each of the "
            f"first {len(rows)} rows: the total {loss_name.replace('_', ' ')}, beside its parts"
        )
    names[j] = loss_name
    note = (
        f"no header row: the file name {path.name!r} says it holds a loss, and "
        + "; ".join(why)
        + " (the other columns keep their positions as names)"
    )
    return names, note


def _sum_column(vals: np.ndarray) -> int | None:
    """The one column of ``vals`` (rows x columns) equal to the sum of the others in every
    row (to a relative 1e-4: the parts are printed rounded), or ``None``."""
    if not np.all(np.isfinite(vals)):
        return None
    total = vals.sum(axis=1)
    hits = []
    for j in range(vals.shape[1]):
        rest = total - vals[:, j]
        scale = np.maximum(np.abs(vals[:, j]), np.abs(rest))
        if np.all(np.abs(vals[:, j] - rest) <= 1e-4 * scale + 1e-12) and np.any(vals[:, j] != 0):
            hits.append(j)
    return hits[0] if len(hits) == 1 else None


#: TensorBoard's download of one scalar chart as CSV: these three columns, the metric named
#: only by the file (:func:`tensorboard_export_metric`).
TB_EXPORT_COLUMNS = ("Wall time", "Step", "Value")
#: Its file name, ``run-<run>-tag-<tag>.csv``, each ``/`` of the run and the tag written ``_``.
_TB_EXPORT_NAME = re.compile(r"run[-_](.*?)[-_]tag[-_](.+)")


def tensorboard_export_metric(path: Path) -> str:
    """The metric a TensorBoard export of one chart holds (its ``Value`` column), named by
    its file: the tag of ``run-<run>-tag-<tag>.csv``, as ``<split>/<tag>`` where a word of
    the run names a held-out split (Keras writes its validation curves under the run
    ``validation``, with the train curves' tags; ``exp2_lr_hot_val`` is ``val``: the run's
    other words are its name, not the metric's, and ``lr`` among them made a loss read as
    none), unless the tag names its own split (``run-test_run-tag-Loss_train.csv`` is the
    train loss); else the file's own name (``val_loss.csv``), without its suffixes."""
    name = path.name.removesuffix(".gz")
    stem = name.rsplit(".", 1)[0] if "." in name else name
    m = _TB_EXPORT_NAME.fullmatch(stem)
    if m is None:
        return stem
    run, tag = m.groups()
    held_out = key_words("eval", "test")
    # a tag that names its own split (``Loss/train``, ``val_loss``) is named by it
    if set(words(tag)) & (held_out | key_words("train")):
        return tag
    split = next((w for w in words(run) if w in held_out), None)
    return f"{split}/{tag}" if split is not None else tag


def tensorboard_export_loss(path: Path) -> str:
    """:func:`tensorboard_export_metric` of an export that holds a loss.

    Raises:
        NotALog: the file's name names no loss: the chart of a learning rate or an
            accuracy alone is no run to judge (``doctor`` lists it as ignored, as it does a
            table of settings).
    """
    metric = tensorboard_export_metric(path)
    if aliases.loss_candidate(metric) is None:
        raise NotALog(f"a TensorBoard export of {metric!r}, which names no loss")
    return metric


def _named_export(names: list[str], path: Path | None) -> list[str]:
    """``names`` with a TensorBoard export's ``Value`` column named by its file.

    Raises:
        NotALog: the export names no loss (:func:`tensorboard_export_loss`).
    """
    if path is not None and tuple(names) == TB_EXPORT_COLUMNS:
        return [*names[:2], tensorboard_export_loss(path)]
    return names


#: The columns of an MLflow UI long-format export (``Run`` and ``timestamp`` optional).
_LONG = ("metric", "step", "value")


def _is_long_format(header: list[str]) -> bool:
    names = [c.strip().lower() for c in header]
    return all(n in names for n in _LONG) and len(names) <= 8


class RowParser:
    """Turns the rows of one table into records, following its header as it changes.

    Holds the current header (a repeated header mid-file resets it), the step column, and
    what was skipped. :func:`read` feeds it a whole file; a live tail feeds it the rows
    appended since the last poll.
    """

    def __init__(self, delimiter: str, path: Path | None = None) -> None:
        self.delimiter = delimiter
        self.path = path  # names a TensorBoard export's value column (:func:`_named_export`)
        self.header: list[str] | None = None
        self.step_idx: int | None = None
        self.bad_rows: list[int] = []
        self.bad_shape = ""
        self.header_changes: list[str] = []
        self.stopped = False  # an unclosed quote ended the reading (see _row_by_row)
        # Long format: (metric, step, value, run) column indices, and the run kept.
        self.long: tuple[int, int, int, int | None] | None = None
        self.long_run: str | None = None
        self.long_skipped: dict[str, int] = {}

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
            new = _named_export([c.strip() for c in row], self.path)
            if header is not None:
                added = [c for c in new if c not in header]
                removed = [c for c in header if c not in new]
                change = ""
                if added or removed:
                    change = (
                        "; column set changed ("
                        + ", ".join([f"+{c}" for c in added] + [f"-{c}" for c in removed])
                        + ")"
                    )
                self.header_changes.append(f"header repeated at line {start}{change}")
            self.header = new
            sk = aliases.step_key(new)
            self.step_idx = new.index(sk) if sk is not None else None
            self.long = None
            if _is_long_format(new):
                low = [c.lower() for c in new]
                run = next((low.index(n) for n in ("run id", "run_id", "run") if n in low), None)
                self.long = (low.index("metric"), low.index("step"), low.index("value"), run)
            return None
        if len(row) != len(header):
            if len(row) == len(header) + 1 and not row[-1].strip():
                row = row[:-1]  # a trailing delimiter
            else:
                if not self.bad_rows:
                    self.bad_shape = f"{len(row)} fields under a {len(header)}-field header"
                self.bad_rows.append(start)
                return None
        if self.long is not None:
            return self._long_row(row, start)
        values: dict[str, float] = {}
        holes = []
        step = None
        step_idx = self.step_idx
        for i, cell in enumerate(row):
            c = cell.strip()
            if not c:
                if i != step_idx:
                    holes.append(header[i])
                continue
            try:
                v = float(c)
            except ValueError:
                v = string_number(c)
                if v is None:
                    if i != step_idx and is_absent(c):
                        holes.append(header[i])
                    continue
            if i == step_idx:
                if v == v and abs(v) != float("inf"):
                    step = v
                continue
            values[header[i]] = v
        return Record(step, values, start, tuple(holes))

    def _long_row(self, row: list[str], start: int) -> Record | None:
        """One row of a long-format export: ``{metric: value}`` at its step, for the run
        kept (:meth:`choose_long_run`); rows of other runs are counted, not read."""
        mi, si, vi, ri = self.long
        if ri is not None and self.long_run is not None and row[ri].strip() != self.long_run:
            r = row[ri].strip()
            self.long_skipped[r] = self.long_skipped.get(r, 0) + 1
            return None
        metric = row[mi].strip()
        try:
            v = float(row[vi].strip())
        except ValueError:
            v = string_number(row[vi])
            if v is None:
                return None
        try:
            step = float(row[si].strip())
        except ValueError:
            step = None
        if step is not None and not (step == step and abs(step) != float("inf")):
            step = None
        return Record(step, {metric: v}, start) if metric else None

    def finish(self, state) -> None:
        """Report header changes and skipped rows into the reader state."""
        if self.long_skipped:
            shown = ", ".join(f"{r!r} ({n} rows)" for r, n in sorted(self.long_skipped.items())[:7])
            state.notes.append(
                f"long-format export of {len(self.long_skipped) + 1} runs: judged {self.long_run!r}, the run "
                f"with the most rows; not read: {shown}"
                + (f" and {len(self.long_skipped) - 7} more" if len(self.long_skipped) > 7 else "")
            )
        state.notes.extend(self.header_changes)
        if self.bad_rows:
            shown = ", ".join(str(n) for n in self.bad_rows[:5]) + (" …" if len(self.bad_rows) > 5 else "")
            state.drop(
                f"skipped {len(self.bad_rows)} row(s) whose field count does not match the header "
                f"(first: {self.bad_shape}; lines {shown}): their columns cannot be known, so they were not guessed"
            )


class LineTail:
    """The :class:`~trainproof.formats.base.LineTailer` of a table being written: each
    appended line is one row, parsed with the header the table has so far (the delimiter
    is the first non-blank line's)."""

    def __init__(self) -> None:
        self.parser: RowParser | None = None

    def line(self, raw: str, lineno: int) -> Record | None:
        """The record of the row ``raw`` (line ``lineno``), or ``None``.

        Raises:
            ReadError: the first non-blank row is data (see :meth:`RowParser.row`).
        """
        if self.parser is None:
            if not raw.strip():
                return None
            self.parser = RowParser(delimiter_of(raw) or ",")
        row = next(csv.reader([raw], delimiter=self.parser.delimiter), [])
        return self.parser.row(row, lineno)

    def drops(self) -> list[str]:
        """The rows skipped so far (field counts that do not match the header)."""
        if self.parser is None:
            return []
        state = ReadState()
        self.parser.finish(state)
        return state.drops


def line_tailer() -> LineTail:
    """A fresh :class:`LineTail` (``watch`` follows a table line by line)."""
    return LineTail()


#: Characters of text decoded per chunk (the last, incomplete line is carried over).
_CHUNK = 1 << 22


def _fast_rows(text: str, first_line: int, parser: RowParser) -> Rows | None:
    """The records of ``text`` (whole lines, each ending in ``\n``, the first numbered
    ``first_line``) as one :class:`Rows` batch, or ``None`` when the chunk needs the
    row-by-row path: a quote, a bare ``\r``, a non-empty cell that is not a number (a
    header, a word), a row of another field count, more than 62 columns, or repeated
    column names. Cells are converted by ``orjson`` when the chunk is plain decimal
    numbers, else by ``float()`` as the row-by-row path does, in C loops (``map``); one
    numpy array per chunk."""
    header, delim = parser.header, parser.delimiter
    k = len(header)
    if parser.long is not None or k > 62 or len(set(header)) != k or '"' in text:
        return None
    body = text.replace("\r\n", "\n") if "\r" in text else text
    if "\r" in body:
        return None
    lines = body[:-1].split("\n")
    # Empty lines are no records (as row by row): they are dropped here, in C loops, so a
    # run of them (a gzip bomb of newlines) stays on the fast path; ``kept`` numbers the
    # remaining lines within the chunk.
    kept = None
    if "" in lines:
        lens = np.fromiter(map(len, lines), dtype=np.int64, count=len(lines))
        kept = np.flatnonzero(lens)
        if not kept.size:
            return Rows(np.empty(0), np.empty(0, dtype=np.int64), [])
        lines = list(map(lines.__getitem__, kept.tolist()))
        body = "\n".join(lines) + "\n"
    if max(map(len, lines)) >= MAX_LINE:
        return None
    # Every row must have the header's field count: a chunk-wide cell count alone lets a
    # long row and a short one cancel out and shift cells into the wrong columns.
    if set(map(str.count, lines, repeat(delim))) != {k - 1}:
        return None
    n_cells = k * len(lines)
    vals = empty = None
    if not (" " in body or "\t" in body or "n" in body or "N" in body):
        # No blanks and no letter n: a NaN can only come from an empty cell, so empty
        # cells are written as a NaN token in the text and found again as NaN.
        inner = "\n" + body[:-1] + "\n"
        if _rows.loads is not None and not body.translate(_drop_decimal(delim)):
            # Only digits, points, exponents and signs: every cell is a JSON number (or
            # empty, written null) or the chunk is not JSON. orjson's numbers are
            # Python's (correctly rounded), except the integer "-0", which float() reads
            # as -0.0: such chunks take float().
            filled = _fill_empty(inner, delim, "null")[1:-1]
            js = "[" + (filled if delim == "," else filled.replace(delim, ",")).replace("\n", ",") + "]"
            if "-0," not in js and "-0]" not in js:
                try:
                    vals = np.array(_rows.loads(js), dtype=np.float64)
                except (_rows.DecodeError, OverflowError):
                    vals = None
                if vals is not None and vals.shape != (n_cells,):
                    vals = None
        if vals is None:
            filled = _fill_empty(inner, delim, "nan")[1:-1]
            cells = filled.replace("\n", delim).split(delim)
            if len(cells) != n_cells:
                return None  # a row of another field count (or a blank line)
            try:
                vals = np.fromiter(map(float, cells), dtype=np.float64, count=n_cells)
            except ValueError:
                return None
    else:
        cells = list(chain.from_iterable(map(str.split, lines, repeat(delim))))
        if len(cells) != n_cells:
            return None  # a row of another field count (or a blank line)
        cells = list(map(str.strip, cells))
        empty = np.fromiter(map(operator.not_, cells), dtype=bool, count=n_cells)
        # float() of each cell, as the row-by-row path does; an empty cell is absent,
        # any other cell float() refuses (a mid-file header, a word) sends the chunk row
        # by row.
        try:
            vals = np.fromiter(map(float, map(_EMPTY_AS_NAN.get, cells, cells)), dtype=np.float64, count=n_cells)
        except ValueError:
            return None
    if empty is None:
        empty = np.isnan(vals)
    vals = vals.reshape(len(lines), k)
    present = ~empty.reshape(len(lines), k)
    nums = (
        np.arange(first_line, first_line + len(lines), dtype=np.int64)
        if kept is None
        else first_line + kept.astype(np.int64)
    )
    return _table_rows(vals, present, nums, header, parser.step_idx)


def _table_rows(vals: np.ndarray, present: np.ndarray, nums: np.ndarray, header: list[str], si: int | None) -> Rows:
    """Rows of a table as :class:`Rows`: ``vals`` float64 ``(n, k)`` (any value where a
    cell is empty), ``present`` bool ``(n, k)`` (the cell is not empty), ``nums`` the int64
    ``(n,)`` line numbers, ``header`` the ``k`` column names (distinct, at most 62),
    ``si`` the step column. A row of empty cells is no record; an empty cell is a hole
    (the step column's excepted)."""
    k = len(header)
    keep = present.any(axis=1)  # a row of empty cells is no record
    if not keep.all():
        vals, present, nums = vals[keep], present[keep], nums[keep]
    n = len(nums)
    steps = np.full(n, np.nan)
    if si is not None:
        col = vals[:, si]
        ok = present[:, si] & np.isfinite(col)
        steps[ok] = col[ok]
        present = present.copy()
        present[:, si] = False
    pattern = present @ (np.int64(1) << np.arange(k, dtype=np.int64))
    groups = []
    patterns = unique(pattern).tolist()
    for pat in patterns:
        cols = [j for j in range(k) if pat >> j & 1]
        pos = np.arange(n) if len(patterns) == 1 else np.flatnonzero(pattern == pat)
        if cols:
            groups.append((tuple(header[j] for j in cols), pos, vals[np.ix_(pos, cols)]))
    holes = []
    if len(patterns) > 1 or not present.all():
        blank = ~present
        for j in range(k):
            if j != si and blank[:, j].any():
                holes.append((header[j], np.flatnonzero(blank[:, j])))
    return Rows(steps, nums, groups, holes)


_EMPTY_AS_NAN = {"": "nan"}
_decimal_tables: dict = {}


def _drop_decimal(delim: str) -> dict:
    """A ``str.translate`` table that deletes decimal-number characters, ``delim`` and
    ``\n``: what remains is anything else."""
    t = _decimal_tables.get(delim)
    if t is None:
        t = _decimal_tables[delim] = str.maketrans("", "", "0123456789.eE+-\n" + delim)
    return t


def _fill_empty(text: str, delim: str, token: str) -> str:
    """``text`` (lines between ``\n``s) with every empty cell written as ``token``."""
    dd, dnd = delim + delim, delim + token + delim
    while dd in text:  # twice covers runs: ",,," -> ",nan,," -> ",nan,nan,"
        text = text.replace(dd, dnd)
    return text.replace("\n" + delim, "\n" + token + delim).replace(delim + "\n", delim + token + "\n")


def _plain_header(line: str, plan: list, path: Path | None = None) -> tuple[str, int] | None:
    """``(delimiter, width)`` when ``line``, a table's first line, is a header the columnar
    path can follow (:class:`trainproof.formats._columnar.TableRead`): named columns
    (:func:`_looks_like_header`), distinct, at most 62 of them, not a long-format export;
    its names and step column are appended to ``plan``. ``None`` otherwise."""
    delim = delimiter_of(line) or ","
    names = _named_export([c.strip() for c in line.split(delim)], path)
    if not _looks_like_header(names) or len(names) > 62 or len(set(names)) != len(names) or _is_long_format(names):
        return None
    sk = aliases.step_key(names)
    plan.append((names, names.index(sk) if sk is not None else None))
    return delim, len(names)


def read(path: Path, state) -> Iterator[Record | Rows]:
    """Stream the data rows: the header row by row, then chunks of whole lines, each
    converted in one go when it is plain numbers (:class:`Rows`), else row by row.

    A last row without a line end is not read (with a note): every CSV writer ends its
    rows with one, so an unfinished last line is a row cut mid-write, and a cut number
    (``0.8123`` torn to ``0.``) would otherwise be read as a different value.
    """
    resume = None
    if _columnar.wanted(path, _columnar.TABLE_MIN_BYTES):
        plan: list = []
        table_read = _columnar.TableRead(path, lambda line: _plain_header(line, plan, path))
        for vals, present, nums in table_read:
            rows = _table_rows(vals, present, nums, *plan[0])
            if len(rows):
                yield rows
        if table_read.started:
            if table_read.rest is None:
                return
            resume = (table_read.rest, plan[0])
    # A quoted field may span lines; an unclosed quote would make the rest of the file one
    # field, so a field is bounded like a line.
    csv.field_size_limit(MAX_LINE)
    with open_text(path, newline="") as f:
        first = ""
        for first in Lines(f, newline=""):
            if first.strip():
                break
        delim = delimiter_of(first) or ","
        f.seek(0)
        parser = RowParser(delim, path)
        start = 1
        if resume is None:
            _prepare(path, f, parser, state)
            f.seek(0)
        else:
            # The columnar path read the header and the rows before ``offset``: the rest
            # from there (a plain file's byte offset at a line start is its text position).
            (offset, start), (parser.header, parser.step_idx) = resume
            f.seek(offset)
        table = Lines(f, MAX_LINE, newline="", size=_CHUNK, start=start)
        yield from _read_chunks(table, parser, state)
    table.note(state)
    parser.finish(state)


def _prepare(path: Path, f, parser: RowParser, state) -> None:
    """What the first rows decide before the table is read: the column names of a
    header-less table (:func:`headerless_columns`), and, for a long-format export of
    several runs, the run kept (the one with the most rows; ties: the first seen), which
    needs one pass over its run column."""
    reader = csv.reader(Lines(f, newline=""), delimiter=parser.delimiter)
    head: list[list[str]] = []
    try:
        for row in reader:
            if any(c.strip() for c in row):
                head.append(row)
                if len(head) >= _HEADERLESS_ROWS or (len(head) == 1 and _looks_like_header(row)):
                    break
    except csv.Error:
        return  # the read reports it where it happens
    if not head:
        return
    if not _looks_like_header(head[0]):
        names, note = headerless_columns(path, head)
        parser.header = names
        parser.step_idx = names.index("step") if "step" in names else None
        state.notes.append(note)
        return
    header = [c.strip() for c in head[0]]
    if not _is_long_format(header):
        return
    low = [c.lower() for c in header]
    ri = next((low.index(n) for n in ("run id", "run_id", "run") if n in low), None)
    if ri is None:
        return
    counts: dict[str, int] = {}
    try:
        for row in reader:
            if len(row) > ri and row[ri].strip() and not _is_new_header(row, header):
                r = row[ri].strip()
                counts[r] = counts.get(r, 0) + 1
    except csv.Error:
        pass
    if counts:
        parser.long_run = max(counts, key=lambda r: counts[r])  # first seen wins a tie


def _read_chunks(table: Lines, parser: RowParser, state) -> Iterator[Record | Rows]:
    """Row by row up to the header, then chunks of whole lines (see :func:`read`)."""
    yield from _row_by_row(table, parser, state, stop_at_header=True)
    if parser.header is None or parser.stopped:
        return
    # The numbers are the table's own: a lone CR ends a line too, as row by row.
    for first, whole in table.chunks():
        if '"' in whole or '"' in table.carry:
            # Quoted fields may span lines: the rest of the file row by row.
            table.unread(first, whole)
            break
        rows = _fast_rows(whole, first, parser)
        if rows is not None:
            if len(rows):
                yield rows
        else:
            yield from _row_by_row(Lines(None, newline="", first=whole, start=first), parser, state)
            if parser.stopped:
                return
    # What is left: the rest of the file from a quoted field on, or the unfinished last line.
    yield from _row_by_row(table, parser, state)


def _row_by_row(lines: Lines, parser: RowParser, state, stop_at_header: bool = False) -> Iterator[Record]:
    """The rows of ``lines`` one at a time, from where its reading is; with
    ``stop_at_header``, only up to the first header. Sets ``parser.stopped`` when an
    unclosed quote ended it."""
    reader = csv.reader(lines, delimiter=parser.delimiter)
    while True:
        if stop_at_header and parser.header is not None:
            break
        start = lines.next_line
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            state.drop(f"line {start}: {e} (an unclosed quote?); the rest of the file was not read")
            parser.stopped = True
            break
        rec = parser.row(row, start)
        if rec is not None:
            if lines.unterminated:
                state.drop(
                    f"the last row (line {start}) has no line end: a row cut mid-write "
                    "(a run killed or still writing?), so it was not read"
                )
                continue
            yield rec
