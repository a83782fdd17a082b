"""The one chunked line reader: the whole lines of a text log, a chunk at a time, numbered.

Every text format (JSON lines, CSV, Coqui) and ``watch`` (:mod:`trainproof.live.tail`)
cut their input into lines here, so a line is the same line, with the same number, for
all of them:

* :class:`LineSplitter` takes text piece by piece (a chunk read from a file, or what a
  poll of a growing log decoded) and gives out the whole lines it completes as one
  string, with the number of its first line (1-based). The unfinished last line waits in
  :attr:`LineSplitter.carry` for the next piece: at the end of a file it is the file's
  unterminated tail, in ``watch`` a line still being written.
* :func:`line_chunks` drives a splitter over a text stream opened with
  :func:`~trainproof.formats._io.open_text` (gzip and its decompression cap, the
  byte-order mark and undecodable bytes are handled there).

Lines end at ``\\n``: the stream translates ``\\r\\n`` and a lone ``\\r`` first where its
format needs it (``open_text``'s universal newlines; :class:`io.IncrementalNewlineDecoder`
in ``watch``, which holds a ``\\r`` that ends a poll until it knows whether a ``\\n``
follows). CSV reads with ``newline=""`` and keeps the ``\\r`` in its lines.

Memory is bounded: a chunk plus at most one line of
:data:`~trainproof.formats._io.MAX_LINE` characters. A longer line is read through
without being kept, and given out as an empty line or not at all (the numbers after it
stay right);
its number is kept in :attr:`LineSplitter.overlong` for the reader's ``TP-DATA-DROPPED``
note (:func:`overlong_note`).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import IO

from ._io import MAX_LINE


class LineSplitter:
    """Cuts text given piece by piece into chunks of whole lines, each numbered.

    Args:
        limit: the longest line kept, in characters (:data:`~trainproof.formats._io.MAX_LINE`);
            ``None``: no limit (the caller bounds the text it gives, as CSV does by going
            row by row when a chunk holds no line end).
        start: the number of the first line given.

    Attributes:
        next_line: the number of the line :attr:`carry` starts (the lines given out so
            far, plus ``start``).
        carry: the unfinished last line so far (shorter than ``limit``).
        overlong: the numbers of the lines skipped for their length, in order.
    """

    __slots__ = ("limit", "next_line", "carry", "overlong", "_skipping")

    def __init__(self, limit: int | None = MAX_LINE, start: int = 1) -> None:
        self.limit = limit
        self.next_line = start
        self.carry = ""
        self.overlong: list[int] = []
        self._skipping = False  # reading through an overlong line, up to its end

    def feed(self, text: str) -> tuple[int, str] | None:
        """Add ``text``; return ``(number of its first line, lines)`` for the lines it
        completes (each ending in ``\\n``; an overlong one emptied to ``\\n``, or not given
        out when it was read through in pieces), or ``None`` when it completes none."""
        if self._skipping:
            nl = text.find("\n")
            if nl < 0:
                return None
            # The overlong line is given out as nothing: its number is counted here.
            text, self._skipping = text[nl + 1 :], False
            self.next_line += 1
        text = self.carry + text if self.carry else text
        cut = text.rfind("\n") + 1
        body, self.carry = text[:cut], text[cut:]
        first = self.next_line
        limit = self.limit
        if body:
            n = body.count("\n")
            if limit is not None and len(body) > limit:
                lines = body.split("\n")
                for i, ln in enumerate(lines):
                    if len(ln) >= limit:
                        self.overlong.append(first + i)
                        lines[i] = ""
                body = "\n".join(lines)
            self.next_line += n
        if limit is not None and len(self.carry) >= limit:
            self.overlong.append(self.next_line)
            self.carry, self._skipping = "", True
        return (first, body) if body else None

    def take(self) -> str:
        """The unfinished last line, now no longer held (the caller reads on from it)."""
        carry, self.carry = self.carry, ""
        return carry

    def note(self, state, label: str = "") -> None:
        """Report the overlong lines, if any, to ``state`` (see :func:`overlong_note`)."""
        if self.overlong:
            state.drop(overlong_note(self.overlong, self.limit, label))


def overlong_note(lines: list[int], limit: int, label: str = "") -> str:
    """The ``TP-DATA-DROPPED`` note for the lines numbered ``lines`` (non-empty), skipped
    as longer than ``limit`` characters; ``label`` goes before it (a file's name)."""
    shown = ", ".join(str(n) for n in lines[:5]) + (" …" if len(lines) > 5 else "")
    return f"{label}skipped {len(lines)} line(s) longer than {limit:,} characters (lines {shown}): not read"


def line_chunks(f: IO[str], size: int, splitter: LineSplitter) -> Iterator[tuple[int, str]]:
    """``(number of the first line, whole lines)`` of the text stream ``f``, read
    ``size`` characters at a time through ``splitter``; at the end its
    :attr:`~LineSplitter.carry` is the last line when that has no line end (``""``
    when the stream ends with one)."""
    read = f.read
    while True:
        text = read(size)
        if not text:
            return
        got = splitter.feed(text)
        if got is not None:
            yield got


class ChainedText:
    """``readline`` over a text buffer, then over the stream it was read from: the rest
    of a stream read line by line after a chunk of it was taken (CSV's quoted fields,
    which may span lines, are read so). A ``\\r`` at the end of the buffer and a ``\\n``
    at the start of the stream are one CRLF line end."""

    def __init__(self, first: str, then: IO[str]) -> None:
        self.first: io.StringIO | None = io.StringIO(first, newline="")
        self.then = then

    def readline(self, limit: int = -1) -> str:
        """The next line (``limit``: at most that many characters), ``""`` at the end."""
        if self.first is not None:
            line = self.first.readline(limit)
            if line.endswith("\r") and self._exhausted():
                # The buffer ended between the CR and the LF of a CRLF: the LF, if it is
                # one, is the stream's next character and belongs to this line.
                nxt = self.then.read(1)
                if nxt == "\n":
                    return line + nxt
                self.first = io.StringIO(nxt, newline="") if nxt else None
                return line
            if line.endswith(("\n", "\r")) or (limit > 0 and len(line) >= limit):
                return line
            self.first = None
            if line:
                return line + self.then.readline(limit - len(line) if limit > 0 else -1)
        return self.then.readline(limit)

    def _exhausted(self) -> bool:
        pos = self.first.tell()
        if self.first.read(1):
            self.first.seek(pos)
            return False
        return True
