"""Coqui Trainer text logs (``trainer_0_log.txt``), as written by Coqui TTS / XTTS / VITS.

A train step block starts with a header line and lists one metric per line::

    --> STEP: 24/36 -- GLOBAL_STEP: 1000025            (newer trainers)
    --> TIME: 2024-05-02 03:11:07 -- STEP: 30/405 -- GLOBAL_STEP: 245650
         | > loss_mel: 19.08429  (23.57030)             current value (running average)

An ``EVALUATION`` block lists averages (``| > avg_loss: 1.70513 (-0.03757)``); they are
read as ``eval/<name>`` at the last global step seen (per-batch ``--> STEP: k`` values
printed with ``print_eval`` are not). A block ends at the first line that is neither a
``| >`` metric nor a ``-->`` sub-header. Colour codes (ANSI escapes) are
stripped first: the trainer colours values green/red inside the fields. Values may be
plain floats, ``tensor(…)`` reprs, ``nan`` or ``inf``. ``BEST MODEL`` and ``CHECKPOINT``
lines are kept as meta (path and step), with the epochs and steps per epoch the log
declares.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import compress
from pathlib import Path

import numpy as np

from ..runlog import Record, Rows
from ._io import HEAD_BYTES, ReadError, open_binary, open_text
from .lines import MAX_LINE, Lines, LineSplitter, line_chunks

name = "coqui"
description = "Coqui Trainer text log (trainer_0_log.txt)"
file_names = ("trainer_0_log.txt",)
suffixes = (".txt",)
run_suffixes = ()
#: A step's block spans several lines, so appended lines cannot be read alone.
tail_mode = "whole"
preference = 5
#: Whether outputs anchor a finding at its line (a finding's line is the log's line).
line_anchors = True

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_STEP = re.compile(r"STEP:\s*(\d+)\s*/\s*(\d+)\s*--\s*GLOBAL_STEP:\s*(\d+)")
# The lookahead keeps a word that merely starts like a number ("info", "nano", "12abc")
# from reading as one. Digits before and after the point are split one way only
# (``\d+(?:\.\d*)?``, not ``\d+\.?\d*``): when the lookahead fails, an ambiguous split
# makes the engine try every way of cutting a long digit run (seconds for 10,000 digits).
_NUMBER = re.compile(
    r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf(?:inity)?)"
    r"(?![A-Za-z0-9_])",
    re.I,
)
_EPOCH = re.compile(r">\s*EPOCH:\s*(\d+)\s*/\s*(\d+)")
# The path runs to the end of the line: Colab's "/content/drive/My Drive/…" has a space.
# Greedy to the end of the line, stripped in code: a lazy ``(\S.*?)\s*$`` is quadratic
# on a long run of blanks inside the line.
_BEST = re.compile(r">\s*BEST MODEL\s*:\s*(\S.*)$")
_CKPT = re.compile(r">\s*CHECKPOINT\s*:\s*(\S.*)$")
#: ``print_eval``'s per-batch header inside an EVALUATION block (no ``/n`` and no GLOBAL_STEP).
_EVAL_BATCH = re.compile(r"-->\s*STEP:\s*\d+\s*$")
_STEP_IN_NAME = re.compile(r"_(\d+)\.(?:pth|pt|ckpt)(?:\.tar)?$")


#: How far past the sniffing head :func:`sniff` looks for a step header, in characters. A
#: console copy of a notebook or a Kaggle run puts the trainer's output after the cell's
#: source, file listings and a config dump: hundreds of kilobytes before the first
#: ``--> STEP`` line. The bound keeps a large text file that is no Coqui log cheap to
#: reject (one pass over at most this many characters, in C-level substring tests).
DEEP_SNIFF_CHARS = 8 << 20
_DEEP_CHUNK = 1 << 20


def _head_matches(text: str) -> bool:
    text = ANSI.sub("", text)
    if _STEP.search(text):
        return True
    return "> Training Environment" in text and "| >" in text and ("> EPOCH:" in text or "Model has" in text)


def _deep_step_header(path: Path, limit: int = DEEP_SNIFF_CHARS) -> bool:
    """Whether a step header appears within the first ``limit`` characters of the file.

    Reads in chunks of ``_DEEP_CHUNK`` characters; a header cut by a chunk boundary is
    found through the tail kept from the previous chunk. An unreadable file is no match
    (the reader that takes it reports the error).
    """
    try:
        with open_text(path) as f:
            carry = ""
            seen = 0
            while seen < limit:
                chunk = f.read(_DEEP_CHUNK)
                if not chunk:
                    return False
                seen += len(chunk)
                text = carry + chunk
                # The substring test skips the regex on the chunks that cannot match.
                if "GLOBAL_STEP" in text and _STEP.search(ANSI.sub("", text)):
                    return True
                carry = text[-256:]
    except (OSError, ValueError, EOFError, ReadError):
        return False
    return False


def sniff(path: Path, head: str) -> bool:
    """A Coqui step header or its training-environment banner with metric lines, in the
    head; else a step header within the first :data:`DEEP_SNIFF_CHARS` characters (a
    trainer output pasted after a long preamble)."""
    if _head_matches(head):
        return True
    return _past_head(path) and _deep_step_header(path)


def _past_head(path: Path) -> bool:
    """Whether the file may hold text past the sniffing head: larger than it, or gzip
    (whose small size says nothing of what it expands to)."""
    try:
        if path.stat().st_size > HEAD_BYTES:
            return True
        with open_binary(path) as f:
            return f.read(2) == b"\x1f\x8b"
    except (OSError, ReadError):
        return False


def _count(digits: str) -> int | None:
    """A step or epoch count printed by the trainer; ``None`` for a digit run too long to be
    one (damage: ``int()`` refuses more than 4,300 digits, and a float would be infinite)."""
    return int(digits) if len(digits) <= 18 else None


def _int(step: float | None) -> int | None:
    return None if step is None else int(step)


def metric_line(line: str) -> tuple[str, str] | None:
    """``(name, value text)`` of a ``| > name: value`` line, else ``None``.

    Split by hand rather than with a regex: a pattern such as ``[|]\\s*>\\s*([^:]+?)\\s*:``
    backtracks cubically on a long run of blanks with no colon after it (a progress bar
    that lost its line breaks), minutes for one line of a few thousand tabs.
    """
    s = line.lstrip()
    if not s.startswith("|"):
        return None
    s = s[1:].lstrip()
    if not s.startswith(">"):
        return None
    name, sep, value = s[1:].partition(":")
    name = name.strip()
    if not sep or not name:
        return None
    return name, value.split("\n", 1)[0].strip()


def parse_value(text: str) -> float | None:
    """The current value of a metric field: ``1.5  (1.7)``, ``tensor(1.5, device=…)``,
    ``nan``. Returns ``None`` when the field holds no number."""
    t = text.strip()
    if t.startswith("tensor("):
        t = t[len("tensor(") :]
    tok = t.partition(" ")[0]
    if "_" not in tok:
        # Where float() takes the whole first word (no underscore, which float() allows
        # and the pattern does not), the pattern matches exactly that word: same value,
        # without the regular expression.
        try:
            return float(tok)
        except ValueError:
            pass
    m = _NUMBER.match(t)
    if not m:
        return None
    try:
        return float(m.group(0))
    except ValueError:
        return None


class _Machine:
    """The per-line reading of a Coqui log: the state carried from line to line (open
    block, mode, last global step, best models, last checkpoint) and what one line does
    to it. Both :func:`read` and :func:`_read_lines` drive it, so the chunked reader and
    the line-by-line reader read every line they hand it the same way.
    """

    __slots__ = ("state", "mode", "step", "values", "start_line", "best", "last_ckpt", "in_batch", "eval_seen")

    def __init__(self, state) -> None:
        self.state = state
        self.mode: str | None = None  # "train" | "eval"
        self.step: float | None = None
        self.values: dict[str, float] = {}
        self.start_line = 0
        self.best: list[dict] = []
        self.last_ckpt: dict | None = None
        self.in_batch = False  # inside a per-batch eval step, whose values are not the averages
        self.eval_seen = False  # an "> EVALUATION" header since the last train step block

    def flush(self) -> Record | None:
        """The open block as a record (``None`` when it holds no value), now closed."""
        rec = Record(self.step, self.values, self.start_line) if self.values and self.mode else None
        self.values = {}
        return rec

    def torn(self, line: str, lineno: int) -> None:
        """Note an unfinished last line (``line`` without colour codes and line end)."""
        # The trainer ends every line it prints; an unfinished last line is cut
        # mid-write, and a cut number ("0.8123" torn to "0.") is another value.
        if line.strip():
            self.state.drop(
                f"the last line ({lineno}) has no line end: cut mid-write "
                "(a run killed or still writing?), so it was not read"
            )

    def feed(self, line: str, lineno: int) -> Record | None:
        """Read one line (colour codes already removed, line end kept); return the block
        it closes, if any (a line closes at most one)."""
        state = self.state
        m = _STEP.search(line) if "STEP:" in line else None
        if m:
            rec = self.flush()
            self.mode, self.start_line, self.in_batch, self.eval_seen = "train", lineno, False, False
            n = _count(m.group(3))
            self.step = float(n) if n is not None else None
            if _count(m.group(2)) is not None:
                state.meta["steps_per_epoch"] = _count(m.group(2))
            return rec
        if "> EVALUATION" in line:
            rec = self.flush()
            self.mode, self.start_line, self.in_batch, self.eval_seen = "eval", lineno, False, True
            return rec
        mode = self.mode
        if "EVAL PERFORMANCE" in line and mode != "eval":
            # Outside an open evaluation block this header either follows an evaluation
            # whose block a foreign line closed (a stdout capture: the model's own prints
            # during test sentences) and reopens it, or, with no evaluation at all
            # (run_eval=False), lists train averages, which are not step values.
            rec = self.flush()
            self.in_batch = False
            if self.eval_seen:
                self.mode, self.start_line = "eval", lineno
            else:
                self.mode = None
            return rec
        rec = None
        if mode is not None:
            mm = metric_line(line)
            if mm:
                v = parse_value(mm[1])
                if v is not None and not self.in_batch:
                    key = mm[0]
                    self.values[key if mode == "train" else f"eval/{key}"] = v
                return None
            s = line.strip()
            if mode == "eval" and _EVAL_BATCH.search(s):
                self.in_batch = True
                return None
            if "EVAL PERFORMANCE" in s:
                self.in_batch = False
                return None
            # A block is its header, ``| >`` lines and ``-->`` sub-headers; any other
            # line ends it, so a banner printed after it (a resumed run appending
            # "| > Num. of GPUs: 1" …) is not read as its metrics. Older trainers print
            # epoch averages under "--> TRAIN PERFORMACE" (sic): not the last step's
            # values, so that header ends the step block too.
            if (s and not s.startswith(("|", "-->"))) or "TRAIN PERFORMA" in s:
                rec = Record(self.step, self.values, self.start_line) if self.values else None
                self.values, self.mode = {}, None
        em = _EPOCH.search(line) if "EPOCH:" in line else None
        if em:
            closed = self.flush()  # nothing left open after a block end above
            rec = rec or closed
            self.mode = None
            if _count(em.group(2)) is not None and _count(em.group(1)) is not None:
                state.meta["num_train_epochs"] = _count(em.group(2))
                state.meta["last_epoch"] = _count(em.group(1))
            return rec
        bm = _BEST.search(line) if "BEST MODEL" in line else None
        if bm:
            p = bm.group(1).rstrip()
            sm = _STEP_IN_NAME.search(p)
            self.best.append({"path": p, "step": _count(sm.group(1)) if sm else _int(self.step), "line": lineno})
            return rec
        cm = _CKPT.search(line) if "CHECKPOINT" in line else None
        if cm:
            p = cm.group(1).rstrip()
            sm = _STEP_IN_NAME.search(p)
            self.last_ckpt = {"path": p, "step": _count(sm.group(1)) if sm else _int(self.step)}
        return rec

    def finish(self) -> Iterator[Record]:
        """The block still open at the end of the log; then the meta kept till the end."""
        rec = self.flush()
        if rec is not None:
            yield rec
        best, meta = self.best, self.state.meta
        if best:
            meta["best_models"] = best
            meta["best_model_checkpoint"] = best[-1]["path"]
            if best[-1]["step"] is not None:
                meta["best_global_step"] = best[-1]["step"]
        if self.last_ckpt:
            meta["last_checkpoint"] = self.last_ckpt


#: The longest line read, in characters (:data:`~trainproof.formats.lines.MAX_LINE`; a
#: module constant so that tests can make it small).
_MAX_LINE = MAX_LINE


def _read_lines(path: Path, state) -> Iterator[Record]:
    """The reference reading: one line at a time through :class:`_Machine`. :func:`read`
    gives the same records, meta and notes faster; the tests compare the two."""
    mc = _Machine(state)
    with open_text(path) as f:
        lines = Lines(f, _MAX_LINE)
        for lineno, raw in enumerate(lines, 1):
            line = ANSI.sub("", raw) if "\x1b" in raw else raw
            if not raw.endswith("\n"):
                mc.torn(line, lineno)
                break
            rec = mc.feed(line, lineno)
            if rec is not None:
                yield rec
        lines.note(state)
    yield from mc.finish()


# --------------------------------------------------------------------------- chunked reading
#
# A long run is a million step blocks that all look alike: the same header, the same
# metric names in the same order, the same blank lines. A chunk of the log is matched
# against one regular expression made for that block shape (a "template", learned from
# one of the chunk's first blocks): one ``findall`` gives, per block, its step fields and
# value words, and a line that is not part of such a block comes out whole and goes
# through :class:`_Machine`. Only lines whose reading is certain take the template: the
# header with the colour codes of the learned one at its ends only, ``| > name: value``
# lines without colour codes whose value is a plain word or a ``tensor(number…`` repr,
# blank lines of spaces and tabs; everything else (evaluations, epochs, banners, other
# whitespace, long digit runs …) is read line by line.

#: Characters decoded per chunk (the last, incomplete line is carried to the next).
_CHUNK = 1 << 18
_CODES = r"(?:\x1b\[[0-9;?]*[A-Za-z])*"
# Groups: steps per epoch, global step.
_HEAD = (
    r"[ \t]*-->[ \t]*(?:TIME:[ ][0-9:. -]+[ ]--[ ])?STEP:[ ][0-9]{1,18}/([0-9]{1,18})"
    r"[ ]--[ ]GLOBAL_STEP:[ ]([0-9]{1,18})"
)
# The same with the colour codes before and after it (groups 1 and 4), as printed.
_HEAD_LINE = re.compile("(" + _CODES + ")" + _HEAD + "(" + _CODES + r")[ \t]*\n")
_HEAD_SEARCH = re.compile("^(" + _CODES + ")" + _HEAD + "(" + _CODES + r")[ \t]*\n", re.M)
# The number _NUMBER takes from ``tensor(…``: followed by ``)`` or ``,``, so that its
# longest match is the one _NUMBER's lookahead accepts.
_TNUM = r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
# A plain value word: printable ASCII without blank, parentheses or "_" (parse_value
# reads a word with an underscore with the pattern, not float()), followed by a blank or
# the line end, so that it is the first word parse_value takes.
_WORD = r"[!-'*-^`-~]+"
_NAME = r"[!-9;-~]+"
_METRIC_HEAD = r"[ \t]*\|[ \t]*>[ \t]*"
_REST = r"[^\n]*"
_METRIC_LINE = re.compile(
    _METRIC_HEAD
    + "("
    + _NAME
    + r")[ \t]*:[ \t]*(?:(tensor\()"
    + _TNUM
    + r"(?=[),])"
    + _REST
    + "|"
    + _WORD
    + r"(?:[ ]"
    + _REST
    + r")?)\n"
)
_BLANK_LINE = re.compile(r"[ \t]*\n")
_MAX_TEMPLATE = 256
_templates: dict[tuple, re.Pattern] = {}


def _learn(body: str, pos: int) -> tuple | None:
    """The shape of the step block whose header starts at ``pos``: the colour codes before
    and after the header, then one item per line up to the next header, ``(name,
    is_tensor)`` for a metric line and ``None`` for a blank line. ``None`` when a line of
    the block is of another kind, a metric name repeats, the block holds no metric or does
    not end inside ``body``."""
    m = _HEAD_LINE.match(body, pos)
    if not m:
        return None
    items: list = [m.group(1), m.group(4)]
    p = m.end()
    while len(items) < _MAX_TEMPLATE:
        if p >= len(body):
            return None
        if _HEAD_LINE.match(body, p):
            names = [it[0] for it in items[2:] if it]
            if not names or len(set(names)) != len(names):
                return None
            return tuple(items)
        mm = _METRIC_LINE.match(body, p)
        if mm:
            items.append((mm.group(1), mm.group(2) is not None))
            p = mm.end()
            continue
        bm = _BLANK_LINE.match(body, p)
        if not bm:
            return None
        items.append(None)
        p = bm.end()
    return None


def _pattern(template: tuple) -> re.Pattern:
    """One block of ``template``'s shape (groups: steps per epoch, global step, one value
    word per metric) or, failing that, one whole line (the last group)."""
    rx = _templates.get(template)
    if rx is None:
        parts = [re.escape(template[0]) + _HEAD + re.escape(template[1]) + r"[ \t]*\n"]
        for it in template[2:]:
            if it is None:
                parts.append(r"[ \t]*\n")
                continue
            name, tensor = it
            value = (
                (r"tensor\((" + _TNUM + r")(?=[),])" + _REST) if tensor else ("(" + _WORD + r")(?:[ ]" + _REST + ")?")
            )
            parts.append(_METRIC_HEAD + re.escape(name) + r"[ \t]*:[ \t]*" + value + r"\n")
        if len(_templates) > 64:
            _templates.clear()
        rx = _templates[template] = re.compile("".join(parts) + r"|([^\n]*\n)")
    return rx


def _template_of(body: str) -> tuple | None:
    """The shape of one of the first step blocks of ``body`` (see :func:`_learn`)."""
    pos = 0
    for _ in range(4):
        m = _HEAD_SEARCH.search(body, pos)
        if not m:
            return None
        t = _learn(body, m.start())
        if t is not None:
            return t
        pos = m.end()
    return None


def _floats(words: tuple) -> list:
    """parse_value of each value word (``None`` where it holds no number)."""
    try:
        return list(map(float, words))
    except ValueError:  # nan spelt otherwise, a word: the exact reading, word by word
        return list(map(parse_value, words))


def _feed(mc: _Machine, raw: str, lineno: int) -> Record | None:
    return mc.feed(ANSI.sub("", raw) if "\x1b" in raw else raw, lineno)


def _by_line(mc: _Machine, body: str, lineno: int) -> Iterator[Record]:
    for i, raw in enumerate(body.split("\n")[:-1]):
        rec = _feed(mc, raw + "\n", lineno + i)
        if rec is not None:
            yield rec


def _chunk(mc: _Machine, body: str, lineno: int) -> Iterator[Record | Rows]:
    """The records of ``body`` (complete lines, its first line numbered ``lineno``), read
    as :class:`_Machine` reads them line by line."""
    template = _template_of(body)
    if template is None:
        yield from _by_line(mc, body, lineno)
        return
    found = _pattern(template).findall(body)
    cols = list(zip(*found))
    other = cols[-1]
    others = list(filter(None, other))
    n_blocks = len(found) - len(others)
    # Every part of the pattern ends at a line end and no character class in it takes
    # one, so a block is ``period`` lines and an other line one.
    period = len(template) - 1
    # A keyword inside a block's metric line would make the machine read that line as a
    # header, not a metric; a colour code inside one is removed before the machine reads
    # it (and may join two words): then the whole chunk is read line by line. The
    # header's own codes, at its ends, neither make nor break a keyword.
    if any(
        body.count(w) != per_block * n_blocks + sum(o.count(w) for o in others)
        for w, per_block in (("STEP:", 2), ("EVAL", 0), ("\x1b", (template[0] + template[1]).count("\x1b")))
    ):
        yield from _by_line(mc, body, lineno)
        return
    names = tuple(it[0] for it in template[2:] if it)
    value_cols = cols[2:-1]
    meta = mc.state.meta
    i, n = 0, len(found)
    for o in list(compress(range(n), other)) + [n]:
        if o > i:  # blocks i..o-1, each followed by a header but (perhaps) the last
            k = o - i
            rec = mc.flush()
            if rec is not None:
                yield rec
            # float() of a decimal string and of its int() are both correctly rounded.
            steps = list(map(float, cols[1][i:o]))
            vals = [_floats(c[i:o]) for c in value_cols]
            meta["steps_per_epoch"] = int(cols[0][o - 1])
            if k > 1:
                lines = np.arange(lineno, lineno + (k - 1) * period, period, dtype=np.int64)
                if any(None in v for v in vals):
                    for j in range(k - 1):
                        d = {name: v[j] for name, v in zip(names, vals) if v[j] is not None}
                        if d:
                            yield Record(steps[j], d, int(lines[j]))
                else:
                    arr = np.empty((k - 1, len(names)))
                    for c, v in enumerate(vals):
                        arr[:, c] = v[:-1]
                    yield Rows(np.array(steps[:-1]), lines, [(names, np.arange(k - 1, dtype=np.int64), arr)])
            # The last block stays open: the lines after it may still belong to it.
            mc.mode, mc.step, mc.in_batch, mc.eval_seen = "train", steps[-1], False, False
            mc.start_line = lineno + (k - 1) * period
            mc.values = {name: v[-1] for name, v in zip(names, vals) if v[-1] is not None}
            lineno += k * period
        if o < n:
            rec = _feed(mc, other[o], lineno)
            if rec is not None:
                yield rec
            lineno += 1
        i = o + 1


def read(path: Path, state) -> Iterator[Record | Rows]:
    """Yield the train step blocks and evaluation blocks of a Coqui log, in order: one
    :class:`Record` per block, or a :class:`Rows` batch for a run of alike step blocks."""
    mc = _Machine(state)
    lines = LineSplitter(_MAX_LINE)
    with open_text(path) as f:
        for first, body in line_chunks(f, _CHUNK, lines):
            yield from _chunk(mc, body, first)
        if lines.carry:
            mc.torn(ANSI.sub("", lines.carry) if "\x1b" in lines.carry else lines.carry, lines.next_line)
    lines.note(state)
    yield from mc.finish()
