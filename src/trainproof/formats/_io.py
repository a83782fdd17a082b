"""Opening log files the same way for every reader: encodings, gzip, LFS pointers, heads."""

from __future__ import annotations

import codecs
import contextlib
import contextvars
import functools
import io
import os
import re
import stat
from pathlib import Path
from typing import IO

HEAD_BYTES = 65536
_GZIP_MAGIC = b"\x1f\x8b"
_LFS_PREFIX = b"version https://git-lfs.github.com/spec/"


class ReadError(Exception):
    """The input cannot be read as a training log. ``str(err)`` is a one-line reason."""


class NotALog(ReadError):
    """No reader recognises the content: the file is not a training log we know."""


class OwnOutput(NotALog):
    """The file is trainproof's own output (a saved report, the monitor's printout), not a
    training log (see :mod:`trainproof.formats._own`); ``doctor`` lists it as skipped."""


class NoRuns(NotALog):
    """A tracking store (an MLflow ``mlflow.db``) that holds no run: the file is the
    tracker's, but there is nothing to judge in it (``doctor`` lists it as not a run)."""


class NotOpened(ReadError):
    """The file was not looked into: missing, unreadable, not a regular file, empty (or
    only whitespace), or a Git LFS pointer. Nothing of its content says whether it is a
    training log; ``doctor`` goes by its name."""


class Unreadable(ReadError):
    """A reader or a source raised something other than :class:`ReadError` on its input
    (a JSON document nested past the recursion limit, a number too large for a float, a
    column of the wrong type, memory): the input is one it cannot take. Raised by
    :func:`reading`, the exception it replaces kept as ``__cause__``."""


#: The longest reason :func:`reading` puts in a read error (an exception's text may
#: quote the input at length).
_REASON_CHARS = 160


@contextlib.contextmanager
def reading():
    """The guard around reading one source: whatever its reader or its source raises
    besides :class:`ReadError` (and ``aliases.MappingError``, a mistake in the command's
    own ``--map``) leaves as :class:`Unreadable`, so one hostile file is an error for its
    own run and every other run is still judged. KeyboardInterrupt, SystemExit and
    exceptions caused by them go on as they are."""
    try:
        yield
    except ReadError:
        raise
    except Exception as e:
        from ..aliases.mapping import MappingError
        from ..runlog import LimitError

        if isinstance(e, MappingError) or _by_interrupt(e):
            raise
        if isinstance(e, LimitError):
            raise ReadError(str(e)) from None
        text = " ".join(str(e).split())
        if len(text) > _REASON_CHARS:
            text = text[: _REASON_CHARS - 1] + "…"
        raise Unreadable(
            f"cannot be read: its reader stopped on {type(e).__name__}" + (f" ({text})" if text else "")
        ) from e


def _by_interrupt(e: BaseException) -> bool:
    """Whether ``e`` was caused by a KeyboardInterrupt (a signal that arrived while code
    that wraps exceptions ran): a stop, not a property of the input."""
    seen = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, KeyboardInterrupt):
            return True
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return False


def _open_error(e: OSError) -> ReadError:
    """The :class:`ReadError` of a failed stat or open."""
    if isinstance(e, FileNotFoundError):
        return NotOpened("no such file")
    if isinstance(e, PermissionError):
        return NotOpened("permission denied")
    return NotOpened(f"cannot open: {e.strerror or e}")


def _require_regular(mode: int) -> None:
    """Raise :class:`NotOpened` unless ``mode`` is a regular file's."""
    if stat.S_ISDIR(mode):
        raise NotOpened("is a directory (use `trainproof doctor` to judge every log under it)")
    if not stat.S_ISREG(mode):
        raise NotOpened("not a regular file")


def check_readable_file(path: Path) -> os.stat_result:
    """Stat ``path`` and raise :class:`NotOpened` unless it is a readable regular file."""
    try:
        st = path.stat()
    except OSError as e:
        raise _open_error(e) from None
    _require_regular(st.st_mode)
    if not os.access(path, os.R_OK):
        raise NotOpened("permission denied")
    return st


def open_binary(path: Path) -> IO[bytes]:
    """Open ``path`` for reading bytes, refusing anything but a regular file.

    The file is opened with ``O_NONBLOCK`` and checked with ``fstat`` on the descriptor
    itself: a FIFO put in the log's place after it was stat-ed (or a symlink to a device)
    is then an error instead of an ``open()`` or ``read()`` that never returns.

    Raises:
        ReadError: missing, permission denied, a directory, or not a regular file.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise _open_error(e) from None
    try:
        _require_regular(os.fstat(fd).st_mode)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


#: The most bytes one compressed log is decompressed to, unless
#: ``TRAINPROOF_MAX_DECOMPRESSED`` says otherwise (bytes, or with a ``K``/``M``/``G``
#: suffix, powers of 1024). Deflate packs up to about 1000 bytes into one, so without a cap
#: a 1 MiB file is a gigabyte of rows and tens of gigabytes of memory. With it a compressed
#: log costs at most what a plain log of this size costs. Real logs are far smaller: the
#: largest of the shared corpus's real logs is 3 MB, and a million steps of a dozen metrics
#: is about 250 MB of JSONL.
MAX_DECOMPRESSED = 1 << 30
_SIZE = re.compile(r"\s*(\d+)\s*([kmg]?)(?:i?b)?\s*", re.I)


def max_decompressed() -> int:
    """The decompression cap in bytes: ``TRAINPROOF_MAX_DECOMPRESSED`` or :data:`MAX_DECOMPRESSED`.

    Raises:
        ReadError: the variable is set but is not a size (``4G``, ``512M``, ``1048576``).
    """
    raw = os.environ.get("TRAINPROOF_MAX_DECOMPRESSED")
    if raw is None or not raw.strip():
        return MAX_DECOMPRESSED
    m = _SIZE.fullmatch(raw)
    if m is None or int(m.group(1)) <= 0:
        raise ReadError(f"TRAINPROOF_MAX_DECOMPRESSED={raw!r} is not a size in bytes (e.g. 4G, 512M, 1048576)")
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]


#: Where a stream that reaches the decompression cap reports it while a reader runs: the
#: reader's ``ReadState`` (see :func:`reporting_to`); nowhere while sniffing.
_DROPS: contextvars.ContextVar = contextvars.ContextVar("trainproof_drops", default=None)


def reporting_to(records, state):
    """Run the reader generator ``records`` with caps reached inside it reported to ``state``.

    Each step of the generator runs with ``state`` as the place a capped gzip stream drops
    its note (``TP-DATA-DROPPED``); the consumer's own context is left as it was.
    """
    while True:
        token = _DROPS.set(state)
        try:
            rec = next(records)
        except StopIteration:
            return
        finally:
            _DROPS.reset(token)
        yield rec


@functools.cache
def _gzip_class() -> type:
    """The gzip stream :func:`raw_open` reads a compressed log through: corruption is a
    :class:`ReadError` wherever it shows, and the decompressed length is capped at
    ``limit`` bytes (:data:`MAX_DECOMPRESSED`).

    A bad deflate block raises ``zlib.error`` (not an ``OSError``) and may sit far past the
    head that sniffing read, so every read path converts it here, once for all readers.
    Past the cap the stream ends, as if the file ended there, and the reader's state is
    told (a ``TP-DATA-DROPPED`` note) rather than an exception stopping the read. The
    class is made on first use, with :mod:`gzip`: reading a plain log never imports it.
    """
    import gzip
    import zlib

    class _GzipFile(gzip.GzipFile):
        def __init__(self, *args, limit: int = MAX_DECOMPRESSED, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.limit = limit
            self.capped = False

        def _guard(self, fn, *args):
            try:
                return fn(*args)
            except (OSError, EOFError, zlib.error) as e:
                raise ReadError(f"corrupt gzip stream: {e}") from None

        def _size(self, size) -> int:
            """``size`` clamped to what the cap leaves; 0 at the cap (noted once if more follows)."""
            left = self.limit - self.tell()
            if left <= 0:
                if not self.capped and self._guard(super().peek, 1):
                    self.capped = True
                    state = _DROPS.get()
                    if state is not None:
                        state.drop(
                            f"the decompressed log is longer than {self.limit:,} bytes "
                            "(TRAINPROOF_MAX_DECOMPRESSED): the rest was not read"
                        )
                return 0
            return left if size is None or size < 0 else min(size, left)

        def read(self, size=-1):
            n = self._size(size)
            return self._guard(super().read, n) if n else b""

        def read1(self, size=-1):
            n = self._size(size)
            return self._guard(super().read1, n) if n else b""

        def peek(self, n=0):
            return self._guard(super().peek, n) if self._size(1) else b""

        def readline(self, size=-1):
            n = self._size(size)
            return self._guard(super().readline, n) if n else b""

    return _GzipFile


def raw_open(path: Path) -> IO[bytes]:
    """``path`` opened for bytes, a gzip stream decompressed (within its cap), as the text
    opener reads it.

    Raises:
        ReadError: the file cannot be opened.
    """
    f = open_binary(path)
    try:
        magic = f.read(2)
        f.seek(0)
        if magic == _GZIP_MAGIC:
            g = _gzip_class()(fileobj=f, mode="rb", limit=max_decompressed())
            g.myfileobj = f  # closed with the gzip stream (a passed fileobj is not)
            return g  # type: ignore[return-value]
    except BaseException:
        f.close()
        raise
    return f


#: How far sniffing reads to find the end of a first line longer than the head (a config
#: dump, a W&B export's header of thousands of columns); such lines run to a few hundred
#: KiB, and sniffing needs the lines after it too.
MAX_FIRST_LINE = 4 << 20


def read_head(path: Path, n: int = HEAD_BYTES) -> bytes:
    """The first ``n`` bytes of the (decompressed) file; when the first line is longer
    than that, through its end (at most :data:`MAX_FIRST_LINE` bytes) and ``n`` more, so
    that the lines after it can be sniffed.

    Raises:
        ReadError: the file cannot be opened or its gzip stream is corrupt.
    """
    try:
        with raw_open(path) as f:
            head = f.read(n)
            if len(head) < n or b"\n" in head:
                return head
            parts = [head]
            seen = len(head)
            while seen < MAX_FIRST_LINE:
                more = f.read(min(n, MAX_FIRST_LINE - seen))
                if not more:
                    break
                parts.append(more)
                seen += len(more)
                if b"\n" in more:
                    parts.append(f.read(n))
                    break
            return b"".join(parts)
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
        raw = raw_open(path)
        enc = encoding_of(raw.read(4))
        raw.seek(0)
    except OSError as e:
        raise ReadError(f"cannot read: {e}") from None
    return io.TextIOWrapper(raw, encoding=enc, errors="replace", newline=newline)


def read_json_document(path: Path, max_bytes: int, what: str):
    """The JSON document in ``path`` (gzip decompressed), parsed whole with
    :data:`~trainproof.formats._values.JSON`: a format read as one document (a Keras
    history, a notebook), bounded by ``max_bytes`` since it is held in memory.

    Raises:
        ReadError: the file cannot be opened, or is larger than ``max_bytes`` (``what`` names
            the document in the message).
        NotALog: the bytes are no JSON document.
    """
    from ._values import JSON  # on first use: the command line's start-up imports no reader helper

    try:
        with open_binary(path) as f:
            raw = f.read(max_bytes + 1)
    except OSError as e:
        raise ReadError(f"cannot open {path}: {e.strerror or e}") from None
    if len(raw) > max_bytes:
        raise ReadError(f"{what} larger than {max_bytes >> 20} MiB is not read")
    try:
        return JSON.decode(raw.decode("utf-8-sig"))
    except (ValueError, UnicodeDecodeError):
        raise NotALog("not a JSON document") from None
