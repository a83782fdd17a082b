"""The one chunked line reader: the whole lines of a text log, a chunk at a time, numbered.

Every text format (JSON lines, CSV, Coqui, console captures, MLflow metric files) and
``watch`` (:mod:`trainproof.live.tail`) cut their input into lines here, so a line is the
same line, with the same number, for all of them. There is one read loop
(:func:`line_chunks`), one rule for overlong lines and one count of line numbers
(:class:`LineSplitter`):

* :class:`LineSplitter` takes text piece by piece (a chunk read from a file, or what a
  poll of a growing log decoded) and gives out the whole lines it completes as one
  string, with the number of its first line (1-based). The unfinished last line waits in
  :attr:`LineSplitter.carry` for the next piece: at the end of a file it is the file's
  unterminated tail, in ``watch`` a line still being written.
* :func:`line_chunks` reads a text stream a chunk at a time through a splitter: a stream
  opened with :func:`~trainproof.formats._io.open_text` (gzip and its decompression cap,
  the byte-order mark and undecodable bytes are handled there), or the bytes appended to
  a growing log decoded by :class:`IncrementalText`.
* :class:`Lines` gives the lines of a stream one at a time (:meth:`Lines.numbered`, with
  a run of blank lines counted in one scan), or a chunk at a time (:meth:`Lines.chunks`),
  from the same reading.

Lines end at ``\\n``: the stream translates ``\\r\\n`` and a lone ``\\r`` first where its
format needs it (``open_text``'s universal newlines; :class:`io.IncrementalNewlineDecoder`
in ``watch``, which holds a ``\\r`` that ends a poll until it knows whether a ``\\n``
follows). CSV reads with ``newline=""`` and keeps the ``\\r`` in its lines: its splitter
(``cr=True``) ends a line at ``\\r\\n``, ``\\r`` or ``\\n``, as :mod:`csv` does.

Memory is bounded: a chunk plus at most one line of :data:`MAX_LINE` characters. A
longer line is read through without being kept and given out as an empty line, so the
numbers after it stay right; its number is kept in :attr:`LineSplitter.overlong` for the
reader's ``TP-DATA-DROPPED`` note (:func:`overlong_note`).
"""

from __future__ import annotations

import codecs
import io
import re
from collections.abc import Iterable, Iterator
from typing import IO

#: The longest line a text reader holds in memory, in characters (16 Mi). A longer line (a
#: runaway print, binary junk without line breaks) is skipped, with a note, so memory stays
#: bounded whatever the file holds. Documented in ``docs/safety.md``.
MAX_LINE = 16 << 20

#: Characters read at a time by :class:`Lines` (1 Mi): large enough that the per-chunk
#: work is a small part of reading, small enough to add little to :data:`MAX_LINE`.
CHUNK = 1 << 20

#: Whole blank lines (whitespace only), as many as follow each other.
_BLANK_RUN = re.compile(r"[ \t\f\v\n]*\n")  # one character class: a C loop, no backtracking per line
#: A line and its end, where ``\r\n``, ``\r`` and ``\n`` end lines (``cr=True``).
_CR_LINE = re.compile(r"[^\r\n]*(?:\r\n?|\n)")
#: A line and its end, where ``\n`` ends lines.
_LF_LINE = re.compile(r"[^\n]*\n")
#: A line end, where ``\r\n``, ``\r`` and ``\n`` end lines.
_CR_END = re.compile(r"\r\n?|\n")


class LineSplitter:
    """Cuts text given piece by piece into chunks of whole lines, each numbered.

    Args:
        limit: the longest line kept, in characters (:data:`MAX_LINE`); ``None``: no
            limit (the caller bounds the text it gives).
        start: the number of the first line given.
        cr: lines end at ``\\r\\n``, ``\\r`` or ``\\n`` (a stream opened with
            ``newline=""``, whose line ends are kept as written); otherwise at ``\\n``
            only. A ``\\r`` that ends a piece waits for the next one, which says whether
            a ``\\n`` follows it; :meth:`end` gives it out at the end of the text.

    Attributes:
        next_line: the number of the line :attr:`carry` starts (the lines given out so
            far, plus ``start``).
        carry: the unfinished last line so far (shorter than ``limit``).
        overlong: the numbers of the lines skipped for their length, in order.
        skipping: reading through an overlong line, up to its end (its number is
            ``next_line``).
    """

    __slots__ = ("limit", "cr", "next_line", "carry", "overlong", "skipping", "_cr")

    def __init__(self, limit: int | None = MAX_LINE, start: int = 1, cr: bool = False) -> None:
        self.limit = limit
        self.cr = cr
        self.next_line = start
        self.carry = ""
        self.overlong: list[int] = []
        self.skipping = False
        self._cr = False  # a \r ended the last piece: held until the next one

    def feed(self, text: str) -> tuple[int, str] | None:
        """Add ``text``; return ``(number of its first line, lines)`` for the lines it
        completes (each with its line end; an overlong one given out empty, as
        :attr:`empty`), or ``None`` when it completes none."""
        cr = self.cr
        if cr:
            if self._cr:
                text = "\r" + text
            self._cr = text.endswith("\r")
            if self._cr:
                text = text[:-1]
        if self.skipping:
            if cr:
                m = _CR_END.search(text)
                if m is None:
                    return None
                end = m.end()
            else:
                end = text.find("\n") + 1
                if not end:
                    return None
            # The overlong line ends here: it is given out as an empty line.
            text, self.skipping = self.empty + text[end:], False
        text = self.carry + text if self.carry else text
        cut = (max(text.rfind("\n"), text.rfind("\r")) if cr else text.rfind("\n")) + 1
        body, self.carry = text[:cut], text[cut:]
        first = self.next_line
        limit = self.limit
        if body:
            n = body.count("\n")
            if cr:
                n += body.count("\r") - body.count("\r\n")
            if limit is not None and len(body) > limit:
                body = self._empty_overlong(body, first)
            self.next_line += n
        if limit is not None and len(self.carry) >= limit:
            self.overlong.append(self.next_line)
            self.carry, self.skipping = "", True
        return (first, body) if body else None

    def _empty_overlong(self, body: str, first: int) -> str:
        """``body`` with each line of ``limit`` characters or more (its end not counted)
        given out as :attr:`empty`, its number noted."""
        limit = self.limit
        if self.cr:
            lines = _CR_LINE.findall(body)
            for i, ln in enumerate(lines):
                if len(ln.rstrip("\r\n")) >= limit:
                    self.overlong.append(first + i)
                    lines[i] = "\r\n"
            return "".join(lines)
        lines = body.split("\n")
        for i, ln in enumerate(lines):
            if len(ln) >= limit:
                self.overlong.append(first + i)
                lines[i] = ""
        return "\n".join(lines)

    @property
    def empty(self) -> str:
        """The empty line an overlong line is given out as: ``\\n``; ``\\r\\n`` with
        ``cr=True``, which no line end before or after it joins (a ``\\n`` after a
        line that ends in a lone ``\\r`` would make one CRLF of the two)."""
        return "\r\n" if self.cr else "\n"

    def end(self) -> tuple[int, str] | None:
        """At the end of the text: the line a held ``\\r`` ends (``cr=True``), as
        :meth:`feed` gives it; ``None`` when none was held. The unterminated last line
        stays in :attr:`carry`."""
        if not self._cr:
            return None
        self._cr = False
        first = self.next_line
        self.next_line += 1
        if self.skipping:
            self.skipping = False
            return first, self.empty
        body, self.carry = self.carry + "\r", ""
        return first, body

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


def line_chunks(
    f: IO[str] | None, size: int, splitter: LineSplitter, first: str = "", end: bool = True
) -> Iterator[tuple[int, str]]:
    """``(number of the first line, whole lines)`` of ``first`` and then of the text
    stream ``f`` (any object whose ``read(size)`` gives text, ``""`` at its end; ``None``:
    ``first`` alone), read ``size`` characters at a time through ``splitter``. With
    ``end``, the end of the stream is the end of the text (see :meth:`LineSplitter.end`);
    ``watch`` reads on at its next poll. Afterwards the splitter's
    :attr:`~LineSplitter.carry` is the last line when that has no line end (``""`` when
    the text ends with one). The one read loop of the text readers: nothing is read
    ahead of the chunk being given out."""
    if first:
        got = splitter.feed(first)
        if got is not None:
            yield got
    if f is not None:
        read = f.read
        while True:
            text = read(size)
            if not text:
                break
            got = splitter.feed(text)
            if got is not None:
                yield got
    if end:
        got = splitter.end()
        if got is not None:
            yield got


def numbered_lines(chunks: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` for each line of ``chunks`` (as :func:`line_chunks` gives
    them, lines ending in ``\\n``), the line without its end."""
    for first, body in chunks:
        yield from enumerate(body.split("\n")[:-1], first)


class IncrementalText:
    """The bytes appended to a text log, decoded as :func:`~trainproof.formats._io.open_text`
    decodes a whole one, read poll by poll (``watch``): the encoding is the byte-order
    mark's (the mark itself is dropped), undecodable bytes are replaced, and ``\\r\\n``
    and a lone ``\\r`` end lines as ``\\n``. The decoder lives from poll to poll, so a
    character (or a CRLF) split by the end of what was written is decoded whole at the
    next poll.

    Args:
        encoding: the log's encoding (:func:`~trainproof.formats._io.encoding_of`).
    """

    def __init__(self, encoding: str) -> None:
        # str.splitlines would also split at \x0b, \x0c, \x1c-\x1e, \x85, \u2028 and
        # \u2029, which JSON strings may hold raw: the newline decoder translates only
        # \r\n and \r, as universal newlines do.
        self._decoder = io.IncrementalNewlineDecoder(
            codecs.getincrementaldecoder(encoding)(errors="replace"), translate=True
        )
        self._started = False  # some text was given out: a byte-order mark is no longer one
        self.source: IO[bytes] | None = None

    def reading(self, source: IO[bytes]) -> IncrementalText:
        """Read on from ``source`` (a binary file, at the offset where the last poll
        stopped); returns this object, for :func:`line_chunks`."""
        self.source = source
        return self

    def read(self, size: int) -> str:
        """The text of the next ``size`` bytes of the source (more when they decode to
        nothing yet: a character or a CR cut by the read); ``""`` at its end."""
        read = self.source.read
        while True:
            data = read(size)
            if not data:
                return ""
            text = self._decoder.decode(data)
            if not self._started:
                text = text.lstrip("\ufeff")
                self._started = bool(text)
            if text:
                return text


class Lines:
    """The lines of a text stream, read a chunk at a time through one
    :class:`LineSplitter`: each line at most ``limit`` characters in memory, numbered
    from ``start``.

    An overlong line is given out as a blank line (:attr:`LineSplitter.empty`), so the line numbers stay
    right; :meth:`note` reports it. The file's unfinished last line is given out last, as
    it is (``" "`` when it was overlong), and :attr:`unterminated` says that the line
    just given out is that one. Iterating, :meth:`numbered` and :meth:`chunks` read on
    from where each other stopped (CSV reads its header line by line, then its rows a
    chunk at a time, and goes back to line by line where a quoted field may span lines).

    Args:
        f: the text stream (``None``: ``first`` alone).
        limit: the longest line kept (:data:`MAX_LINE`).
        newline: as the stream was opened (:func:`~trainproof.formats._io.open_text`):
            ``None``, universal newlines, lines end at ``\\n``; ``""``, line ends kept,
            lines end at ``\\r\\n``, ``\\r`` or ``\\n``.
        size: characters read at a time (:data:`CHUNK`).
        first: text given out before the stream's.
        start: the number of the first line.
    """

    def __init__(
        self,
        f: IO[str] | None,
        limit: int = MAX_LINE,
        *,
        newline: str | None = None,
        size: int = CHUNK,
        first: str = "",
        start: int = 1,
    ) -> None:
        self.splitter = LineSplitter(limit, start, cr=newline == "")
        self.limit = limit
        self.overlong = self.splitter.overlong
        self.unterminated = False
        self._source = line_chunks(f, size, self.splitter, first)
        # The chunk being given out line by line: its lines, the next one's index, and
        # the number of its first line.
        self._lines: list[str] = []
        self._i = 0
        self._first = start

    @property
    def carry(self) -> str:
        """The unfinished line read so far after the lines read (see :class:`LineSplitter`)."""
        return self.splitter.carry

    @property
    def next_line(self) -> int:
        """The number of the next line given out."""
        if self._i < len(self._lines):
            return self._first + self._i
        return self.splitter.next_line

    def _load(self, first: int, body: str) -> None:
        self._lines = (_CR_LINE if self.splitter.cr and "\r" in body else _LF_LINE).findall(body)
        self._i, self._first = 0, first
        self.unterminated = False

    def _last(self) -> str | None:
        """The unfinished last line, once, after the last whole one."""
        sp = self.splitter
        if sp.carry:
            line = sp.take()
        elif sp.skipping:
            sp.skipping = False
            line = " "
        else:
            return None
        self.unterminated = True
        return line

    def __iter__(self) -> Iterator[str]:
        while True:
            i = self._i
            if i < len(self._lines):
                self._i = i + 1
                yield self._lines[i]
                continue
            got = next(self._source, None)
            if got is None:
                break
            self._load(*got)
        last = self._last()
        if last is not None:
            yield last

    def chunks(self) -> Iterator[tuple[int, str]]:
        """``(number of the first line, whole lines)`` from where the reading is, as
        :func:`line_chunks` gives them (the unfinished last line is not given: iterating
        gives it, after the chunks)."""
        if self._i < len(self._lines):
            first, body = self._first + self._i, "".join(self._lines[self._i :])
            self._lines, self._i = [], 0
            yield first, body
        # Not ``yield from``: a caller that stops taking chunks closes this generator,
        # and the reading goes on (line by line) from where it is.
        source = self._source
        while (got := next(source, None)) is not None:
            yield got

    def unread(self, first: int, body: str) -> None:
        """Give out the chunk ``body`` (from :meth:`chunks`, its first line numbered
        ``first``) again, line by line."""
        self._load(first, body)

    def numbered(self) -> Iterator[tuple[int, str]]:
        """``(line number, line)`` for the lines of a stream whose line ends are ``\\n``
        (opened with universal newlines), as iterating gives them out, except that of a
        run of blank lines only the first is given out.

        The rest of a run is counted in one regular-expression match rather than a Python
        step per line: a file of newlines (a gzip bomb packs a gigabyte of them into a
        megabyte) costs a scan, not hours. An overlong line, given out as ``\\n``, is a
        blank line here too.
        """
        blank = False
        match = _BLANK_RUN.match
        for first, body in self.chunks():
            self.unterminated = False
            n, pos, end = first, 0, len(body)
            find = body.find
            while pos < end:
                if blank:
                    m = match(body, pos)
                    if m is not None:
                        # Whole blank lines only: the chunk ends with a line end.
                        n += body.count("\n", pos, m.end())
                        pos = m.end()
                        if pos >= end:
                            break
                nl = find("\n", pos) + 1
                line = body[pos:nl]
                yield n, line
                blank = not line.strip()
                n += 1
                pos = nl
        last = self._last()
        if last is not None:
            yield self.splitter.next_line, last

    def note(self, state, label: str = "") -> None:
        """Report the overlong lines skipped, if any, as dropped input."""
        self.splitter.note(state, label)


class LineTooLong(Exception):
    """A line of more than the limit's bytes (:func:`byte_line_chunks`): a byte reader
    that cannot skip it as :class:`LineSplitter` does leaves the file to a text reader."""


def byte_line_chunks(f: IO[bytes], size: int, limit: int = MAX_LINE) -> Iterator[tuple[bytes, bool]]:
    """The binary stream ``f`` from where it is, as ``(body, final)`` pieces of whole
    lines ending in ``\\n`` (lines end at ``\\n`` only), about ``size`` bytes each; the
    last piece has ``final`` set and holds what follows the last ``\\n`` (empty when the
    stream ends in one). Lines are numbered as :class:`LineSplitter` numbers them (one
    per ``\\n``), for readers of bytes (the columnar path) that count them.

    Raises:
        LineTooLong: a line of more than ``limit`` bytes (memory stays one piece and one
            line).
    """
    carry = b""
    while True:
        block = f.read(size)
        if not block:
            yield carry, True
            return
        end = block.rfind(b"\n")
        if end < 0:
            carry += block
            if len(carry) > limit:
                raise LineTooLong
            continue
        # One copy of the block: the carried line's start joined to its whole lines.
        body = carry + memoryview(block)[: end + 1] if carry else block[: end + 1]
        carry = block[end + 1 :]
        if len(carry) > limit:
            raise LineTooLong
        yield body, False


def first_byte_line(f: IO[bytes], limit: int = MAX_LINE) -> bytes:
    """The next line of the binary stream ``f`` with its ``\\n`` (without one at the end of
    the stream, or when it is longer than ``limit`` bytes: then only its first ``limit``)."""
    return f.readline(limit)
