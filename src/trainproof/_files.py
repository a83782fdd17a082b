"""Writing report files safely."""
from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path


def write_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to the report path ``path``.

    What is at ``path`` decides how:

    * nothing, or a regular file: the text goes into a temporary file in the same folder,
      flushed to disk, then renamed over ``path``. A run killed mid-write leaves the old
      file (or none), never half a report.
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
            view = view[os.write(fd, view):]
        return True
    finally:
        os.close(fd)


def _replace(path: Path, text: str) -> None:
    """Temporary file beside ``path``, flushed, renamed over ``path``."""
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


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
