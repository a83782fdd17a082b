"""Opening log files the same way for every reader: encodings, gzip, LFS pointers, heads."""
from __future__ import annotations

import codecs
import gzip
import io
import os
import stat
import zlib
from pathlib import Path
from typing import IO

HEAD_BYTES = 65536
_GZIP_MAGIC = b"\x1f\x8b"
_LFS_PREFIX = b"version https://git-lfs.github.com/spec/"


class ReadError(Exception):
    """The input cannot be read as a training log. ``str(err)`` is a one-line reason."""


class NotALog(ReadError):
    """No reader recognises the content: the file is not a training log we know."""


def check_readable_file(path: Path) -> os.stat_result:
    """Stat ``path`` and raise :class:`ReadError` unless it is a readable regular file."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise ReadError("no such file") from None
    except PermissionError:
        raise ReadError("permission denied") from None
    except OSError as e:
        raise ReadError(f"cannot open: {e.strerror or e}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ReadError("is a directory (use `trainproof doctor` to judge every log under it)")
    if not stat.S_ISREG(st.st_mode):
        raise ReadError("not a regular file")
    if not os.access(path, os.R_OK):
        raise ReadError("permission denied")
    return st


class _GzipFile(gzip.GzipFile):
    """A gzip stream whose corruption is a :class:`ReadError` wherever it shows.

    A bad deflate block raises ``zlib.error`` (not an ``OSError``) and may sit far past the
    head that sniffing read, so every read path converts it here, once for all readers.
    """

    def _guard(self, fn, *args):
        try:
            return fn(*args)
        except (OSError, EOFError, zlib.error) as e:
            raise ReadError(f"corrupt gzip stream: {e}") from None

    def read(self, size=-1):
        return self._guard(super().read, size)

    def read1(self, size=-1):
        return self._guard(super().read1, size)

    def peek(self, n=0):
        return self._guard(super().peek, n)

    def readline(self, size=-1):
        return self._guard(super().readline, size)


def _raw_open(path: Path) -> IO[bytes]:
    f = open(path, "rb")
    magic = f.read(2)
    f.seek(0)
    if magic == _GZIP_MAGIC:
        return _GzipFile(fileobj=f, mode="rb")  # type: ignore[return-value]
    return f


def read_head(path: Path, n: int = HEAD_BYTES) -> bytes:
    """The first ``n`` bytes of the (decompressed) file.

    Raises:
        ReadError: the file cannot be opened or its gzip stream is corrupt.
    """
    try:
        with _raw_open(path) as f:
            return f.read(n)
    except (OSError, EOFError) as e:
        raise ReadError(f"cannot read: {e}") from None


def is_lfs_pointer(head: bytes) -> bool:
    """True when the bytes are a Git LFS pointer file rather than the file's content."""
    return head.startswith(_LFS_PREFIX) and len(head) < 1024


def encoding_of(head: bytes) -> str:
    """Text encoding from the byte-order mark; UTF-8 when there is none."""
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    return "utf-8"


def head_text(head: bytes) -> str:
    """Decode a head of bytes for sniffing (undecodable bytes replaced)."""
    enc = encoding_of(head)
    text = head.decode(enc, errors="replace")
    return text.lstrip("\ufeff")


def open_text(path: Path, newline: str | None = None) -> IO[str]:
    """Open a (possibly gzip-compressed) text log for streaming.

    The encoding comes from the byte-order mark (UTF-8 without one); undecodable bytes are
    replaced rather than fatal, so one bad byte never hides the rest of a log.

    Raises:
        ReadError: the file cannot be opened.
    """
    try:
        raw = _raw_open(path)
        enc = encoding_of(raw.read(4))
        raw.seek(0)
    except OSError as e:
        raise ReadError(f"cannot read: {e}") from None
    return io.TextIOWrapper(raw, encoding=enc, errors="replace", newline=newline)


#: The longest line a text reader holds in memory, in characters. A longer line (a
#: runaway print, binary junk without line breaks) is skipped, with a note, so memory stays
#: bounded whatever the file holds.
MAX_LINE = 16 << 20


class Lines:
    """The lines of a text stream, each at most ``limit`` characters in memory.

    An overlong line is read through in ``limit``-sized pieces and given out as a blank
    line (so line numbers stay right); :meth:`note` reports it. ``unterminated`` says
    whether the last line given out has no line end (the file's unfinished tail).
    """

    def __init__(self, f, limit: int = MAX_LINE) -> None:
        self.f = f
        self.limit = limit
        self.overlong: list[int] = []
        self.unterminated = False

    def __iter__(self):
        readline, limit = self.f.readline, self.limit
        n = 0
        while True:
            line = readline(limit)
            if not line:
                return
            n += 1
            if len(line) >= limit and not line.endswith(("\n", "\r")):
                rest = line
                while len(rest) >= limit and not rest.endswith(("\n", "\r")):
                    rest = readline(limit)
                self.overlong.append(n)
                line = "\n" if rest.endswith(("\n", "\r")) else " "
            self.unterminated = not line.endswith(("\n", "\r"))
            yield line

    def note(self, state, label: str = "") -> None:
        """Report the overlong lines skipped, if any, as dropped input."""
        if self.overlong:
            shown = ", ".join(str(n) for n in self.overlong[:5]) + (" …" if len(self.overlong) > 5 else "")
            state.drop(f"{label}skipped {len(self.overlong)} line(s) longer than {self.limit:,} characters "
                       f"(lines {shown}): not read")


def describe_head(text: str) -> str:
    """A short printable excerpt of the first non-blank line, for error messages."""
    for line in text.splitlines():
        s = line.strip()
        if s:
            s = "".join(ch if ch.isprintable() else "?" for ch in s)
            return s[:60] + ("…" if len(s) > 60 else "")
    return "(blank)"
