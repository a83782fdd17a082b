"""Writing report files safely."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import tempfile
import threading
from pathlib import Path


def write_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to the report path ``path``.

    What is at ``path`` decides how:

    * nothing, or a regular file: the text goes into a temporary file in the same folder,
      flushed to disk, then renamed over ``path``. A run killed mid-write leaves the old
      file (or none), never half a report. In the main thread, a SIGINT or SIGTERM that
      arrives while the temporary file exists is held until it is renamed (or removed)
      and then handled as it would have been: Ctrl-C or a cancelled CI job stops the
      command, and leaves neither debris nor a partial report.
    * a symlink to a regular file (or to nothing yet): the same, at ``path``: the new
      report replaces the link, and the file it pointed to is left as it was. A link
      planted at the report path (``report.sarif -> ~/.bashrc`` in a pull request) must not
      make the report overwrite its target.
    * a FIFO or a character device, directly or through a symlink (``/dev/stdout``,
      ``/dev/null``, a pipe a CI step reads): the text is written into it. Renaming over
      it would replace the device node or the pipe with a plain file.

    Raises:
        IsADirectoryError: ``path`` is a folder.
        OSError: ``path`` is a block device or a socket (never a report's place), or the
            folder does not exist or cannot be written.
    """
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None  # nothing there, or a dangling link: a new file at the link's target
    if mode is not None and stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", str(path))
    if mode is not None and (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
        if _write_stream(path, text):
            return
    elif mode is not None and not stat.S_ISREG(mode):
        raise OSError(errno.EINVAL, "not a regular file, FIFO or character device", str(path))
    _replace(path, text)


def _write_stream(path: Path, text: str) -> bool:
    """Write into the FIFO or device at ``path``; ``False`` when it has become a regular
    file since it was looked at (then the caller replaces it atomically)."""
    # No O_CREAT and no O_TRUNC: this opens what is there, and creates or empties nothing.
    fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOCTTY", 0))
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        data = text.encode("utf-8")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        return True
    finally:
        os.close(fd)


def _replace(path: Path, text: str) -> None:
    """Temporary file beside ``path``, flushed, renamed over ``path``; SIGINT and SIGTERM
    held meanwhile (see :func:`_signals_held`)."""
    with _signals_held():
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent if str(path.parent) else ".")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o644 & ~_umask())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise


#: The signals a report write holds back: Ctrl-C and a polite kill (CI cancel, ``timeout``).
_HELD = tuple(s for s in (getattr(signal, "SIGINT", None), getattr(signal, "SIGTERM", None)) if s is not None)


@contextlib.contextmanager
def _signals_held():
    """Hold SIGINT and SIGTERM for the body, then handle each one that came, once, as the
    handler in place before would have (a Python handler is called: the CLI's raise
    ``KeyboardInterrupt``; the default action is re-raised; an ignored signal stays
    ignored). Only in the main thread, where Python runs signal handlers; elsewhere, and
    for a handler not set from Python (which could not be put back), nothing is held."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[tuple[int, object]] = []

    def hold(signum, frame):
        if all(signum != s for s, _ in pending):
            pending.append((signum, frame))

    saved = {}
    try:
        for s in _HELD:
            before = signal.getsignal(s)
            if before is None or before == signal.SIG_IGN:
                continue
            signal.signal(s, hold)
            saved[s] = before
    except (ValueError, OSError):  # pragma: no cover - not the main interpreter's main thread
        pass
    try:
        yield
    finally:
        for s, before in saved.items():
            signal.signal(s, before)
        for signum, frame in pending:
            before = saved[signum]
            if callable(before):
                before(signum, frame)
            elif before == signal.SIG_DFL:
                signal.raise_signal(signum)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
