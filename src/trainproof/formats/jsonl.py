"""JSON Lines metric logs: one JSON object per line.

Covers hand-rolled ``metrics.jsonl`` loggers, LLaMA-Factory's ``trainer_log.jsonl``
(step key ``current_steps``), and anything else that writes one object per line. Nested
objects flatten to ``outer/inner`` keys. A NaN may be written as the token ``NaN``, a
string (``"nan"``, ``"-inf"``, ``"1.#QNAN"``, see :func:`~trainproof.formats._values.nonfinite`)
or ``null``; a ``null`` is a NaN or a key not logged in that record, as the column's
history says (:class:`~trainproof.runlog.RunLogBuilder`). Lines that are not JSON objects (banners, a torn
last line of a killed run) are skipped and counted in the notes. detectron2's
``metrics.json`` is this format too (``iteration`` is its step, ``total_loss`` its loss).

**Restarted runs appended to one file.** A logger that opens its file in append mode
writes every new start after the last one: the step counter goes back. Two kinds:

* a step that goes back where the epoch rises is no restart at all: the step counts
  within the epoch (OpenMMLab's ``iter``), see :func:`trainproof.runlog.build_runlog`.
* a *resume* (from a checkpoint) continues the curve: the loss after the step goes
  back is near where it was. It stays one run, and the later write of a step wins
  (:func:`trainproof.runlog.build_runlog`).
* a *restart* (from scratch) starts the curve again: the loss after the step goes back
  is in the upper half, on a log scale, of the range the run so far covered, between
  its first value and its lowest (the range must span a factor of at least
  :data:`RESTART_DROP`, and every value be positive, else it cannot be told from a
  resume and stays one), and the step goes back to the beginning of the run (within
  :data:`RESTART_STEP_SHARE` of its span from its first step; a resume goes back only
  to its checkpoint, so a resume whose loss blows up at once stays one run). The file holds several runs: one is kept, the one with the
  most loss points (ties: the later; an aborted start is short), and a note names every
  run by its lines and steps. Merging them would read one curve that jumps back up at
  each restart.

Deciding needs the whole file, so its records are held (as decoded column blocks, not
text) until the end of the file before any is given out.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import compress, repeat
from pathlib import Path

import numpy as np

# The helper module by its full name, not `from . import`: a reader never imports the
# package __init__ (which imports the readers), and _rows's attributes stay patchable.
import trainproof.formats._columnar as _columnar  # noqa: PLR0402
import trainproof.formats._rows as _rows  # noqa: PLR0402

from .. import aliases
from ..runlog import Record, Rows
from ._io import open_text
from ._values import JSON, as_step, flatten_numeric
from .lines import MAX_LINE, LineSplitter, line_chunks

name = "jsonl"
description = "JSON Lines (one metrics object per line)"
#: HF Trainer callbacks and many loops' ``metrics.jsonl``; LLaMA-Factory's trainer log.
file_names = ("metrics.jsonl", "trainer_log.jsonl")
#: ``.json`` too: a JSON-lines log is often named so (a config or a summary of one
#: object is told apart by its content, not its name).
suffixes = (".jsonl", ".ndjson", ".json")
run_suffixes = (".jsonl", ".ndjson", ".jsonl.gz")
tail_mode = "lines"
preference = 4
#: Whether outputs anchor a finding at its line (a finding's line is the log's line).
line_anchors = True

_SNIFF_LINES = 20


def sniff(path: Path, head: str) -> bool:
    """At least one of the first lines is a JSON object and most ``{`` lines parse."""
    lines = [ln.strip() for ln in head.splitlines()]
    if len(head) >= 65536 and lines:
        lines = lines[:-1]  # the head may cut the last line
    lines = [ln for ln in lines if ln][:_SNIFF_LINES]
    objs = tried = 0
    for ln in lines:
        if not ln.startswith("{"):
            continue
        tried += 1
        try:
            if isinstance(JSON.decode(ln), dict):
                objs += 1
        except (ValueError, RecursionError):
            pass
    return objs >= 1 and objs * 2 >= tried


def parse_line(s: str, lineno: int) -> Record | None:
    """One stripped line as a record, or ``None`` when it is not a JSON object."""
    obj = _parse_object(s)  # as read() decodes a line, so that watch and epoch agree
    if obj is None:
        return None
    nulls: list = []
    values = flatten_numeric(obj, holes=nulls)
    key = aliases.step_key(values.keys())
    step = None
    if key is not None:
        step = as_step(values.pop(key))
    return Record(step, values, lineno, tuple(k for k in nulls if k != key))


def skipped_note(count: int, first_line: int) -> str:
    """The TP-DATA-DROPPED note for lines that are not JSON objects (shared with ``watch``)."""
    return f"skipped {count} line(s) that are not JSON objects (first at line {first_line})"


class LineTail:
    """The :class:`~trainproof.formats.base.LineTailer` of a JSON-lines log being written:
    each appended line is one record, decoded as :func:`read` decodes it (so that
    ``watch`` and ``epoch`` agree); lines that are not JSON objects are counted."""

    def __init__(self) -> None:
        self.bad = 0
        self.first_bad = 0

    def line(self, raw: str, lineno: int) -> Record | None:
        """The record of line ``lineno`` (``raw``), or ``None`` (blank, or not an object)."""
        s = raw.strip()
        if not s:
            return None
        rec = parse_line(s, lineno)
        if rec is None:
            self.bad += 1
            self.first_bad = self.first_bad or lineno
        return rec

    def drops(self) -> list[str]:
        """The lines skipped so far, as one note (:func:`skipped_note`)."""
        return [skipped_note(self.bad, self.first_bad)] if self.bad else []


def line_tailer() -> LineTail:
    """A fresh :class:`LineTail` (``watch`` follows a JSON-lines log line by line)."""
    return LineTail()


#: Characters decoded per chunk (the last, incomplete line is carried to the next).
_CHUNK = 1 << 22


def _step_key(keys: tuple) -> str | None:
    return aliases.step_key(keys)


def _chunk_rows(lines: list[str], first_line: int, bad: list[int], no_bools: bool = False) -> Rows | None:
    """The records among ``lines`` (numbered from ``first_line``) as one batch; the line
    numbers of lines that are not JSON objects are appended to ``bad``. ``no_bools``:
    the lines hold no ``true``/``false`` token."""
    objs: list | None = None
    if _rows.loads is not None and all(map(str.startswith, lines, repeat("{"))):
        try:
            objs = list(map(_rows.loads, lines))
        except _rows.DecodeError:
            objs = None
        if objs is not None and not set(map(type, objs)) <= {dict}:
            objs = None
        if objs is not None:
            nums = np.arange(first_line, first_line + len(lines), dtype=np.int64)
            return _rows.rows_from_dicts(objs, nums, _step_key, no_bools)
    # Per line: blank lines, banners, torn lines, tokens orjson refuses.
    objs, nums = [], []
    for i in compress(range(len(lines)), map(str.strip, lines)):  # blank lines skipped in C
        s = lines[i].strip()
        obj = _parse_object(s)
        if obj is None:
            bad.append(first_line + i)
        else:
            objs.append(obj)
            nums.append(first_line + i)
    if not objs:
        return None
    return _rows.rows_from_dicts(objs, np.array(nums, dtype=np.int64), _step_key)


def _parse_object(s: str) -> dict | None:
    if not s.startswith("{"):
        return None
    if _rows.loads is not None:
        try:
            obj = _rows.loads(s)
            return obj if isinstance(obj, dict) else None
        except _rows.DecodeError:
            pass
    try:
        obj = JSON.decode(s)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


#: The least factor between a run's first loss and its lowest for a step rewind to be
#: told apart as a restart (see the module docstring).
RESTART_DROP = 1.5

#: A restart's first step lies within this share of the run's span from its first step:
#: a run started again counts its steps from the beginning, a resume from its checkpoint.
RESTART_STEP_SHARE = 0.25


def read(path: Path, state) -> Iterator[Rows]:
    """The JSON-object lines as :class:`Rows` batches, one run of them when restarted
    runs were appended to the file (see the module docstring)."""
    batches = _columnar.jsonl_batches(path, _step_key) if _columnar.wanted(path, _columnar.JSONL_MIN_BYTES) else None
    if batches is None:
        batches = list(_read_rows(path, state))
    batches = one_run(batches, state)
    _declared_end(batches, state)
    yield from batches


#: The column in which a trainer writes the step it is scheduled to end at, on every
#: record (LLaMA-Factory's ``trainer_log.jsonl``: ``"current_steps": 5, "total_steps": 400``).
TOTAL_STEPS_KEY = "total_steps"


def _declared_end(batches: list[Rows], state) -> None:
    """Set ``state.meta["max_steps"]`` from a :data:`TOTAL_STEPS_KEY` column that holds
    one positive whole number on every record that has it, as HF's ``max_steps`` is read:
    the run's declared end (a warm-up longer than the run, a log that stops short of its
    schedule). Nothing where the column is absent or changes (a resume that rescheduled)."""
    n = sum(len(b) for b in batches)
    if not n or not any(TOTAL_STEPS_KEY in g[0] for b in batches for g in b.groups):
        return
    v = _column(batches, TOTAL_STEPS_KEY, n)
    v = v[np.isfinite(v)]
    if v.size and np.all(v == v[0]) and v[0] > 0 and float(v[0]).is_integer():
        state.meta.setdefault("max_steps", int(v[0]))


def _slice(rows: Rows, lo: int, hi: int) -> Rows:
    """The records ``lo <= i < hi`` of a batch."""
    groups = []
    for keys, pos, vals in rows.groups:
        m = (pos >= lo) & (pos < hi)
        if m.any():
            groups.append((keys, pos[m] - lo, vals[m]))
    holes = [(k, pos[(pos >= lo) & (pos < hi)] - lo) for k, pos in rows.holes]
    return Rows(rows.steps[lo:hi], rows.lines[lo:hi], groups, [(k, p) for k, p in holes if p.size])


def one_run(batches: list[Rows], state) -> list[Rows]:
    """``batches`` restricted to one run when they hold restarted runs (see the module
    docstring), with a note naming the runs; unchanged otherwise.

    Args:
        batches: the file's records, in order.
        state: the reader state (a note is added to ``state.notes``).
    """
    n = sum(len(b) for b in batches)
    if n < 3:
        return batches
    steps = np.concatenate([b.steps for b in batches])
    finite = np.isfinite(steps)
    fs = steps[finite]
    if fs.size < 3 or not np.any(fs[1:] < fs[:-1]):
        return batches
    keys = {k for b in batches for g in b.groups for k in g[0]}
    m = aliases.resolve(keys).get("loss")
    if m is None:
        return batches
    key = (m.get("sum_of") or [m["source"]])[0]
    loss = _column(batches, key, n)
    idx = np.flatnonzero(finite)
    back = fs[1:] < fs[:-1]
    rewinds = idx[1:][back]  # record indices where the step goes back
    # the index of the first loss at or after each record (n: none)
    loss_rows = np.append(np.flatnonzero(np.isfinite(loss)), n)
    ep_m = aliases.resolve(keys).get("epoch")
    if ep_m is not None:
        # A step that goes back where the epoch rises counts within the epoch (OpenMMLab's
        # ``iter``): the run goes on (trainproof.runlog reads the (epoch, step) pair).
        ep = _column(batches, ep_m["source"], n)
        known = np.flatnonzero(np.isfinite(ep))
        if known.size:
            ep = ep[known[np.maximum(np.searchsorted(known, np.arange(n), side="right") - 1, 0)]]
            rises = ep[rewinds] > ep[idx[:-1][back]]
            # A rewind within the epoch whose next loss comes only after the epoch rises
            # (OpenMMLab's validation row, whose ``iter`` counts validation batches) is
            # not judged by the next epoch's loss either.
            first_loss = loss_rows[np.searchsorted(loss_rows, rewinds)]
            rise_next = np.append(rewinds[rises], n)
            rise_next = rise_next[np.searchsorted(rise_next, rewinds, side="right")]
            rewinds = rewinds[~rises & ~((rise_next <= first_loss) & (rise_next < n))]
    # A row with no loss whose step goes back while the next loss comes at a step past
    # every one before it (OpenMMLab's ``scalars.json``: its validation rows carry the
    # epoch as their step) is a row on another axis, not a restart.
    if rewinds.size:
        reached = np.fmax.accumulate(np.where(np.isfinite(steps), steps, -np.inf))
        nxt = loss_rows[np.searchsorted(loss_rows, rewinds)]
        other_axis = ~np.isfinite(loss[rewinds]) & (nxt < n)
        other_axis[other_axis] = steps[nxt[other_axis]] > reached[rewinds[other_axis] - 1]
        moved = _evals_stepped_by_epoch(batches, keys, rewinds, loss, steps, nxt, reached)
        if moved.any():
            batches = _restep(batches, rewinds[moved], reached[rewinds[moved] - 1])
            steps = np.concatenate([b.steps for b in batches])
        rewinds = rewinds[~(other_axis | moved)]
    starts = [0]
    for r in rewinds.tolist():
        seen = loss[starts[-1] : r]
        seen = seen[np.isfinite(seen)]
        after = loss[r:]
        after = after[np.isfinite(after)]
        if seen.size < 2 or not after.size:
            continue
        first, low, new = float(seen[0]), float(seen.min()), float(after[0])
        if min(first, low, new) <= 0 or first < RESTART_DROP * low:
            continue  # cannot be told from a resume: one run, the later write wins
        # A restart starts its steps again near the beginning; a resume goes back only to
        # its checkpoint, late in the run, however high its loss starts (a resume given a
        # learning rate that blows it up at once is that run diverging).
        run_steps = steps[starts[-1] : r]
        run_steps = run_steps[np.isfinite(run_steps)]
        if run_steps.size and steps[r] > run_steps.min() + RESTART_STEP_SHARE * (run_steps.max() - run_steps.min()):
            continue
        if np.log(new) >= (np.log(first) + np.log(low)) / 2:
            starts.append(r)
    if len(starts) == 1:
        return batches
    bounds = list(zip(starts, starts[1:] + [n]))
    lines = np.concatenate([b.lines for b in batches])
    # A loss written as NaN or Inf is a point of its run (a run that ended in NaN is not
    # the shorter for it), and a run not judged that holds one is named.
    written = _written(batches, key, n)
    points = [int(written[a:b].sum()) for a, b in bounds]
    keep = max(range(len(bounds)), key=lambda i: (points[i], i))
    bad = [int((written[a:b] & ~np.isfinite(loss[a:b])).sum()) for a, b in bounds]

    def describe(i: int) -> str:
        a, b = bounds[i]
        st = steps[a:b][np.isfinite(steps[a:b])]
        span = f"steps {st.min():g}-{st.max():g}, " if st.size else ""
        nonfinite = f" ({bad[i]} of them NaN or Inf)" if bad[i] else ""
        return f"run {i + 1}: lines {lines[a]}-{lines[b - 1]}, {span}{points[i]} {key} points{nonfinite}"

    shown = "; ".join(describe(i) for i in range(min(len(bounds), 8)))
    more = f"; and {len(bounds) - 8} more" if len(bounds) > 8 else ""
    state.notes.append(
        f"{len(bounds)} runs appended to one log (the step goes back and {key} starts again near its first "
        f"level): {shown}{more}. Judged run {keep + 1}, the one with the most loss points; the others were not read"
    )
    lo, hi = bounds[keep]
    out = []
    off = 0
    for b in batches:
        a, z = max(lo - off, 0), min(hi - off, len(b))
        if a < z:
            out.append(_slice(b, a, z))
        off += len(b)
    return out


#: The key OpenMMLab's train rows count their iteration in, beside ``epoch`` and ``step``.
OPENMMLAB_ITER_KEY = "iter"


def _evals_stepped_by_epoch(batches, keys, rewinds, loss, steps, nxt, reached) -> np.ndarray:
    """Which of the rows at ``rewinds`` (indices where the step goes back) are OpenMMLab's
    validation rows: in a log whose train rows carry ``epoch`` and ``iter``, a row with
    metrics, no loss and neither key, whose step is the epoch of the last row before it
    that logged one (MMEngine's ``vis_data/scalars.json`` steps its validation rows by the
    epoch they follow), and after which the next loss comes at a step past every one
    before it, or no loss comes. A boolean array over ``rewinds``."""
    n = loss.size
    out = np.zeros(rewinds.size, dtype=bool)
    if "epoch" not in keys or OPENMMLAB_ITER_KEY not in keys:
        return out
    ep_written = _written(batches, "epoch", n)
    it_written = _written(batches, OPENMMLAB_ITER_KEY, n)
    ep = _column(batches, "epoch", n)
    held = np.zeros(n, dtype=bool)
    off = 0
    for b in batches:
        for ks, pos, _ in b.groups:
            if ks:
                held[pos + off] = True
        off += len(b)
    logged = np.flatnonzero(ep_written & np.isfinite(ep))
    for i, r in enumerate(rewinds.tolist()):
        if np.isfinite(loss[r]) or not held[r] or ep_written[r] or it_written[r]:
            continue
        j = int(np.searchsorted(logged, r)) - 1
        if j < 0 or steps[r] != ep[logged[j]]:
            continue
        out[i] = nxt[i] >= n or steps[nxt[i]] > reached[r - 1]
    return out


def _restep(batches: list[Rows], rows: np.ndarray, steps: np.ndarray) -> list[Rows]:
    """``batches`` with the records at indices ``rows`` (into the concatenated batches,
    ascending) given ``steps`` instead of their own: evaluation rows placed after the last
    step trained. A key such a row shares with the train rows (OpenMMLab's ``data_time``
    and ``time`` of the validation loop) is the evaluation's own and is renamed
    ``val/<key>``, so it neither collides with the train row at that step nor joins the
    train series."""
    # which key sets only moved rows hold, over the whole file (however it was batched)
    moved_sets, stay_sets, off = set(), set(), 0
    for b in batches:
        local = rows[(rows >= off) & (rows < off + len(b))] - off
        for keys, pos, _ in b.groups:
            moving = np.isin(pos, local)
            if moving.any():
                moved_sets.add(keys)
            if not moving.all():
                stay_sets.add(keys)
        off += len(b)
    train_keys = {k for keys in stay_sets for k in keys}
    moved_sets = {keys for keys in moved_sets - stay_sets if set(keys) & train_keys}
    out, off = [], 0
    for b in batches:
        m = (rows >= off) & (rows < off + len(b))
        if m.any():
            st = b.steps.copy()
            st[rows[m] - off] = steps[m]
            groups = [
                (tuple(f"val/{k}" if k in train_keys else k for k in keys), pos, vals)
                if keys in moved_sets
                else (keys, pos, vals)
                for keys, pos, vals in b.groups
            ]
            b = Rows(st, b.lines, groups, b.holes)
        out.append(b)
        off += len(b)
    return out


def _written(batches: list[Rows], key: str, n: int) -> np.ndarray:
    """Whether each of the ``n`` records of ``batches`` writes a value for ``key``,
    finite or not (``NaN`` is a value; an empty or null one, a hole, is none)."""
    out = np.zeros(n, dtype=bool)
    off = 0
    for b in batches:
        for gk, pos, _ in b.groups:
            if key in gk:
                out[off + pos] = True
        for hk, pos in b.holes:
            if hk == key:
                out[off + pos] = False
        off += len(b)
    return out


def _column(batches: list[Rows], key: str, n: int) -> np.ndarray:
    """One raw key's values over the ``n`` records of ``batches``, NaN where absent."""
    out = np.full(n, np.nan)
    off = 0
    for b in batches:
        for gk, pos, vals in b.groups:
            if key in gk:
                out[off + pos] = vals[:, gk.index(key)]
        off += len(b)
    return out


def _read_rows(path: Path, state) -> Iterator[Rows]:
    """Stream the JSON-object lines, a chunk of lines at a time (:class:`Rows`)."""
    bad: list[int] = []
    last = (0, False)  # the last non-blank line, and whether it was skipped
    lines = LineSplitter(MAX_LINE)
    with open_text(path) as f:
        for first, body in line_chunks(f, _CHUNK, lines):
            if body.isspace():
                # Only blank lines (a run of newlines is a cheap gzip bomb): counted by
                # the splitter, not a Python step per line.
                continue
            chunk = body.split("\n")
            chunk.pop()  # the empty string after the last line end
            rows, last = _chunk(chunk, first, bad, last, "true" not in body and "false" not in body)
            if rows is not None:
                yield rows
        if lines.carry:
            rows, last = _chunk([lines.carry], lines.next_line, bad, last)
            if rows is not None:
                yield rows
    lines.note(state)
    if bad:
        msg = skipped_note(len(bad), bad[0])
        if last[1]:
            msg += f"; the last line ({last[0]}) is incomplete or not JSON (a run killed mid-write?)"
        state.drop(msg)


def _chunk(lines: list[str], first_line: int, bad: list[int], last: tuple[int, bool], no_bools: bool = False):
    """``(rows or None, last)`` for a chunk of lines: see :func:`_chunk_rows`."""
    n_bad = len(bad)
    rows = _chunk_rows(lines, first_line, bad, no_bools)
    i = next(compress(range(len(lines) - 1, -1, -1), map(str.strip, reversed(lines))), None)
    if i is not None:
        ln = first_line + i
        return rows, (ln, len(bad) > n_bad and bad[-1] == ln)
    return rows, last
