"""Remote paths: fsspec URLs (``s3://``, ``gs://``, ``file://``, ``memory://``, ...) as the
PATH of ``epoch`` and ``doctor`` (the ``[remote]`` extra: fsspec and s3fs).

Readers know local files only, so a remote run is *staged*: each object is copied into a
private temporary folder under its own name, so content sniffing and file-name rules see
exactly what they would see locally; the same reader then streams it from disk, and the
folder is deleted as soon as the RunLog is built. A first request of at most
:data:`FIRST_BYTES` brings a small log whole, or the head that shows a large file is no
log; a large log is then streamed to disk in chunks (fsspec's ``get_file``). Memory stays
bounded whatever the object's size; disk holds one run at a time per worker. Reports,
notes and errors name the URL, never the temporary path.

``doctor URL`` lists every object under the URL once (one paginated listing, not a
request per folder), walks that listing by the rules of :func:`discover.walk` and groups
it with :func:`discover.group_runs` itself, so a bucket is searched, pruned and grouped
exactly like the same tree on disk.

Every fetch is bounded: a staged URL (one object, or the files of one run folder) brings
at most :func:`max_fetch` bytes (``TRAINPROOF_MAX_FETCH``, default 1 GiB) and must arrive
within :func:`fetch_timeout` seconds in all (``TRAINPROOF_FETCH_TIMEOUT``, default 300 s),
listing included; past either it is a :class:`RemoteError`, so a server that streams
forever or trickles a byte at a time costs at most that much disk and time.

fsspec is imported only when a URL is given: a local path never imports it and never
touches the network.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from .discover import PRUNE_DIRS, Candidate, _is_venv, group_runs, walk
from .formats import ReadError, get_reader, log_name_test
from .formats.tfevents import is_event_name

__all__ = ["MissingExtra", "RemoteError", "discover", "has_password", "is_url", "shown", "staged"]

#: ``scheme://``; a scheme of one letter is a Windows drive (``C://``), never a URL.
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]+://")

#: ``scheme://user:password@``: the password is what lies between the first ``:`` of the
#: authority and its last ``@`` (a password may itself hold ``@``).
_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]+://[^/?#:@]*:(?P<password>[^/?#]*)@")
#: A secret passed as a query parameter (``postgresql:///db?password=...``, a presigned URL's
#: ``token=``/``signature=``): its value is masked like a password in the authority.
_SECRET_PARAM = re.compile(
    r"(?i)(?P<key>[?&](?:password|passwd|pwd|sslpassword|token|access_token|secret|api_key|apikey|signature|sig|"
    r"x-amz-signature|x-amz-credential|x-amz-security-token)=)"
    r"(?P<value>[^&#]*)"
)

_EXTRA_HINT = "pip install 'trainproof[remote]'"

#: The first request for an object asks for this many bytes (at least the head that
#: content sniffing reads): most logs arrive whole in it, and no file that is not a log
#: costs more.
FIRST_BYTES = 1 << 20


#: The most bytes one staged URL (an object, or the files of a run folder) brings, unless
#: ``TRAINPROOF_MAX_FETCH`` says otherwise: the decompression cap's value
#: (:data:`trainproof.formats._io.MAX_DECOMPRESSED`), so a remote log costs at most what a
#: compressed local one may; real logs are far smaller (a million steps of a dozen metrics
#: is about 250 MB of JSONL).
MAX_FETCH = 1 << 30

#: The most seconds staging one URL (listing included) may take, unless
#: ``TRAINPROOF_FETCH_TIMEOUT`` says otherwise: 1 GiB at about 3.5 MB/s, a slow link.
FETCH_TIMEOUT_S = 300.0

#: Bytes asked for in one read of a stream.
_CHUNK = 1 << 20

_SIZE = re.compile(r"\s*(\d+)\s*([kmg]?)(?:i?b)?\s*", re.I)


class RemoteError(ReadError):
    """A URL that cannot be listed or read (missing object, refused, unknown protocol, over
    the fetch cap or past the fetch deadline)."""


def max_fetch() -> int:
    """The fetch cap in bytes: ``TRAINPROOF_MAX_FETCH`` (bytes, or with a ``K``/``M``/``G``
    suffix, powers of 1024) or :data:`MAX_FETCH`.

    Raises:
        RemoteError: the variable is set but is not a size.
    """
    raw = os.environ.get("TRAINPROOF_MAX_FETCH")
    if raw is None or not raw.strip():
        return MAX_FETCH
    m = _SIZE.fullmatch(raw)
    if m is None or int(m.group(1)) <= 0:
        raise RemoteError(f"TRAINPROOF_MAX_FETCH={raw!r} is not a size in bytes (e.g. 4G, 512M, 1048576)")
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]


def fetch_timeout() -> float:
    """The fetch deadline in seconds: ``TRAINPROOF_FETCH_TIMEOUT`` or :data:`FETCH_TIMEOUT_S`.

    Raises:
        RemoteError: the variable is set but is not a positive finite number of seconds.
    """
    import math

    raw = os.environ.get("TRAINPROOF_FETCH_TIMEOUT")
    if raw is None or not raw.strip():
        return FETCH_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise RemoteError(f"TRAINPROOF_FETCH_TIMEOUT={raw!r} is not a positive number of seconds")
    return value


def _size_text(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"


class _Budget:
    """What one staged URL may still take: bytes (:func:`max_fetch`) and time
    (:func:`fetch_timeout`), and whether the caller has given up on it."""

    def __init__(self) -> None:
        self.max_bytes = max_fetch()
        self.seconds = fetch_timeout()
        self.ends = time.monotonic() + self.seconds
        self.used = 0
        self.cancelled = threading.Event()

    def timeout_error(self) -> RemoteError:
        return RemoteError(
            f"not fetched within {self.seconds:g} s (TRAINPROOF_FETCH_TIMEOUT): a server that is slow or never ends"
        )

    def check(self) -> None:
        """Raise :class:`RemoteError` past the deadline or once the caller gave up."""
        if self.cancelled.is_set() or time.monotonic() > self.ends:
            raise self.timeout_error()

    def take(self, n: int) -> None:
        """Count ``n`` more bytes; raise :class:`RemoteError` past the cap or the deadline."""
        self.used += n
        if self.used > self.max_bytes:
            raise RemoteError(f"more than {_size_text(self.max_bytes)} to fetch (TRAINPROOF_MAX_FETCH): not read")
        self.check()


def _bounded(fn, budget: _Budget):
    """``fn()`` run in a worker thread and waited for until ``budget``'s deadline: a read
    that blocks (a server that sends nothing more) cannot hold the command past it. On
    the deadline the worker is told to stop (it writes nothing more once its read
    returns) and :class:`RemoteError` is raised; ``fn``'s own errors are raised here."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            out["error"] = e

    t = threading.Thread(target=run, name="trainproof-fetch", daemon=True)
    t.start()
    t.join(max(0.0, budget.ends - time.monotonic()))
    if t.is_alive():
        budget.cancelled.set()
        raise budget.timeout_error()
    if "error" in out:
        raise out["error"]
    return out.get("value")


class MissingExtra(RemoteError):
    """fsspec, or the fsspec package of the URL's protocol, is not installed."""


def is_url(location) -> bool:
    """True for a ``scheme://`` string. A :class:`~pathlib.Path` is never a URL (it would
    have collapsed ``//`` already), and checking imports nothing."""
    return isinstance(location, str) and bool(_URL.match(location))


def has_password(location) -> bool:
    """True for a URL whose authority holds a password (``scheme://user:secret@host``)."""
    return is_url(location) and _PASSWORD.match(location) is not None


def shown(location):
    """``location`` as output may print it: a URL's password replaced by ``***`` (the user
    name kept), and so the value of a query parameter that carries a secret (``password``,
    ``token``, ``signature`` ...); anything else unchanged."""
    if not is_url(location):
        return location
    m = _PASSWORD.match(location)
    if m is not None:
        location = location[: m.start("password")] + "***" + location[m.end("password") :]
    return _SECRET_PARAM.sub(lambda q: q.group("key") + ("***" if q.group("value") else ""), location)


def refuse_password(location) -> None:
    """Refuse a URL that holds a password: reports, SARIF annotations and CI logs print
    their locations, so the password would be printed with every one.

    Raises:
        ReadError: ``location`` holds a password (the message shows it as ``***``).
    """
    if has_password(location):
        raise ReadError(
            f"{shown(location)}: a URL that holds a password is not read, since every report would print it; "
            "give the credentials another way (an MLflow server: MLFLOW_TRACKING_USERNAME and "
            "MLFLOW_TRACKING_PASSWORD, or MLFLOW_TRACKING_TOKEN; a bucket: its protocol's own configuration)"
        )


def _fs(url: str):
    """``(filesystem, path)`` for ``url``; only here is fsspec imported."""
    try:
        import fsspec
    except ImportError:
        raise MissingExtra(f"reading a URL needs fsspec, the [remote] extra: {_EXTRA_HINT}") from None
    try:
        return fsspec.core.url_to_fs(url)
    except ImportError as e:
        # fsspec knows the protocol but its package (s3fs, gcsfs, adlfs...) is absent.
        raise MissingExtra(f"{e} ({_EXTRA_HINT} brings s3fs; other protocols need their fsspec package)") from None
    except ValueError as e:
        raise RemoteError(f"cannot open the URL: {e}") from None


def _is_local(fs) -> bool:
    from fsspec.implementations.local import LocalFileSystem

    return isinstance(fs, LocalFileSystem)


def _info(fs, path: str) -> dict:
    try:
        return fs.info(path)
    except FileNotFoundError:
        raise RemoteError("no such file or directory") from None
    except Exception as e:  # noqa: BLE001 - a storage backend raises its own errors
        raise RemoteError(f"cannot read: {_reason(e)}") from None


def _reason(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return f"{type(e).__name__}: {text}" if type(e).__name__ not in text else text


def _run_folder_file(rel: str) -> bool:
    """Whether a file of a run folder is one a run-folder reader reads: event files directly
    inside it or in Keras' ``train/``/``validation/``, and MLflow's ``metrics/``,
    ``meta.yaml`` and run-name tag. The rest (checkpoints, profiles, artifacts) is never
    copied."""
    parts = rel.split("/")
    if parts[0] == "metrics" and len(parts) > 1:
        return True
    if rel in ("meta.yaml", "tags/mlflow.runName"):
        return True
    return is_event_name(parts[-1]) and (len(parts) == 1 or (len(parts) == 2 and parts[0] in ("train", "validation")))


def _below(path: str, root: str) -> str:
    """``path`` relative to ``root`` (both as the filesystem lists them), or ``""``."""
    if not root:
        return path.lstrip("/")
    return path[len(root) + 1 :] if path.startswith(root + "/") else ""


def _safe_rel(rel: str) -> list[str] | None:
    parts = rel.split("/")
    if not rel or any(p in ("", ".", "..") for p in parts):
        return None
    return parts


def _relabel(text: str, local: str, url: str) -> str:
    return text.replace(local, url) if local in text else text


def _open_stream(fs, rpath: str):
    """``rpath`` opened for reading from its first byte, each read brought as it is asked
    for (no read-ahead block held in memory). Over HTTP, a stream without the request for
    its size fsspec makes first (a server that never ends has none)."""
    protocols = fs.protocol if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,)
    if any(p in ("http", "https") for p in protocols):
        return fs.open(rpath, "rb", block_size=0, size=1)
    return fs.open(rpath, "rb", cache_type="none")


def _copy(src, out, budget: _Budget, limit: int | None = None) -> bool:
    """Copy from the open stream ``src`` into the open file ``out``, at most ``limit``
    bytes (``None``: to the end), each read counted in ``budget``; ``True`` when the
    stream ended."""
    done = 0
    while limit is None or done < limit:
        budget.check()
        chunk = src.read(_CHUNK if limit is None else min(_CHUNK, limit - done))
        if not chunk:
            return True
        budget.take(len(chunk))
        out.write(chunk)
        done += len(chunk)
    return False


def _fetch_file(fs, rpath: str, local: Path, fmt: str, budget: _Budget) -> None:
    """Copy one object to ``local``, streamed, within ``budget``.

    The first :data:`FIRST_BYTES` (plus one) arrive first: a log up to that size is then
    whole, and a larger file that is no log (a tokenizer.json beside the trainer state)
    costs that much, not its size: its head (what content sniffing reads) says so. Only
    a larger log is then fetched whole. A gzip file is fetched whole at once (its
    compressed head cannot be sniffed alone).
    """
    from .formats import detect

    with _open_stream(fs, rpath) as src:
        details = getattr(src, "details", None)
        if isinstance(details, dict) and details.get("type") == "directory":
            raise IsADirectoryError(rpath)  # s3fs opens a folder as an empty file
        with open(local, "wb") as out:
            if rpath.endswith(".gz"):
                _copy(src, out, budget)
                return
            if _copy(src, out, budget, FIRST_BYTES + 1):
                return  # the whole object
        try:
            detect(local, fmt)
        except ReadError:
            return  # not a log, or unreadable: the head says so, as it would locally
        with open(local, "ab") as out:
            _copy(src, out, budget)


@contextlib.contextmanager
def staged(url: str, fmt: str = "auto") -> Iterator[Path]:
    """A local copy of the object (or run folder) at ``url`` for the length of the block.

    A ``file://`` URL is read in place. Errors raised in the block that name the temporary
    path are re-raised naming the URL. ``fmt``: the format asked for (``--format``), which
    decides whether a large object is a log worth fetching whole.

    Raises:
        MissingExtra: fsspec or the protocol's package is not installed.
        RemoteError: the URL does not exist or cannot be read.
    """
    import shutil
    import tempfile

    fs, rpath = _fs(url)
    if _is_local(fs):
        local = Path(rpath)
        if not local.exists():
            raise RemoteError("no such file or directory")
        yield local
        return
    budget = _Budget()
    tmp = tempfile.mkdtemp(prefix="trainproof-")
    try:
        rpath = rpath.rstrip("/") or rpath
        local = Path(tmp) / (rpath.rsplit("/", 1)[-1] or "run")
        try:
            _bounded(lambda: _fetch(fs, rpath, local, fmt, budget, tmp), budget)
        except RemoteError:
            raise
        except FileNotFoundError:
            raise RemoteError("no such file or directory") from None
        except Exception as e:  # noqa: BLE001 - network and backend errors are read errors
            raise RemoteError(f"cannot copy: {_reason(e)}") from None
        try:
            yield local
        except ReadError as e:
            msg = _relabel(str(e), str(local), url)
            if msg == str(e):
                raise
            raise type(e)(msg) from None
    finally:
        # A worker past the deadline writes nothing more once its read returns.
        budget.cancelled.set()
        shutil.rmtree(tmp, ignore_errors=True)


def _fetch(fs, rpath: str, local: Path, fmt: str, budget: _Budget, tmp: str) -> None:
    """Bring the object (or run folder) at ``rpath`` to ``local``, within ``budget``
    (see :func:`staged`)."""
    # An object is fetched straight away; only when there is no such object is the
    # URL asked whether it is a folder.
    try:
        is_dir = False
        _fetch_file(fs, rpath, local, fmt, budget)
    except (FileNotFoundError, IsADirectoryError):
        is_dir = _info(fs, rpath).get("type") == "directory"
        if not is_dir:
            raise
    if is_dir:
        local.mkdir(exist_ok=True)
        remote, dest = [], []
        listed = sorted(fs.find(rpath))
        fs.invalidate_cache(rpath)  # a long-lived worker keeps no listings
        for f in listed:
            rel = _below(f, rpath)
            parts = _safe_rel(rel)
            if parts is None or not _run_folder_file(rel):
                continue
            target = local.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            remote.append(f)
            dest.append(str(target))
        if any(r.startswith(rpath + "/metrics/") for r in remote):
            # An MLflow run folder: its experiment's name is in the folder above.
            above = rpath.rsplit("/", 1)[0] + "/meta.yaml" if "/" in rpath else ""
            if above and fs.exists(above):
                remote.append(above)
                dest.append(str(Path(tmp) / "meta.yaml"))
        # One file at a time, each counted against the cap and the deadline.
        for r, d in zip(remote, dest):
            with _open_stream(fs, r) as src, open(d, "wb") as out:
                _copy(src, out, budget)


def discover(
    url: str, max_depth: int | None = None, max_files: int | None = None, limits: list[dict] | None = None
) -> list[Candidate]:
    """``doctor``'s candidates under ``url``, as :func:`discover.group_runs` gives them
    for the same tree on disk, with every path a URL string.

    Raises:
        MissingExtra, RemoteError: as :func:`staged`.
    """
    fs, rpath = _fs(url)
    base = url.rstrip("/")
    local_limits: list[dict] = []
    if _is_local(fs):
        root = Path(rpath)
        if not root.exists():
            raise RemoteError("no such file or directory")
        return _to_urls(group_runs(walk(root, max_depth, max_files, local_limits)), root, base, limits, local_limits)
    budget = _Budget()
    info = _bounded(lambda: _info(fs, rpath), budget)
    if info.get("type") != "directory":
        return [Candidate(url)]
    rroot = rpath.rstrip("/")
    try:
        names = _bounded(lambda: fs.find(rroot), budget)
    except RemoteError:
        raise
    except Exception as e:  # noqa: BLE001
        raise RemoteError(f"cannot list: {_reason(e)}") from None
    finally:
        budget.cancelled.set()
    # The listing is not kept (s3fs caches every entry it lists: ~1 KB an object).
    fs.invalidate_cache(rroot)
    keys = [rel for rel in (_below(n, rroot) for n in names) if _safe_rel(rel) is not None]
    paths = _walk_listing(keys, max_depth, max_files, local_limits)
    return _to_urls(group_runs(paths), None, base, limits, local_limits)


class _Key(PurePosixPath):
    """A path of the listing, relative to the URL: what :func:`discover.group_runs` needs
    of a path (name, parents, and ``is_file``: every listed key is an object)."""

    def is_file(self) -> bool:
        return True


def _walk_listing(keys: list[str], max_depth: int | None, max_files: int | None, limits: list[dict]) -> list[_Key]:
    """:func:`discover.walk` over an object listing instead of a disk: the same pruning, the
    same virtual-environment and MLflow-run rules, the same limits, the same order."""
    dirs: dict[str, tuple[set[str], list[str]]] = {"": (set(), [])}

    def folder(d: str) -> tuple[set[str], list[str]]:
        entry = dirs.get(d)
        if entry is None:
            parent, _, name = d.rpartition("/")
            folder(parent)[0].add(name)
            entry = dirs[d] = (set(), [])
        return entry

    for key in keys:
        parent, _, name = key.rpartition("/")
        folder(parent)[1].append(name)
    out: list[str] = []

    def done() -> list[_Key]:
        # Sorted as paths sort (by their parts), like the walk's result.
        return [_Key(p) for p in sorted(out, key=lambda p: [] if p == "." else p.split("/"))]

    is_log = log_name_test()  # the readers' names and suffixes, read once for the listing
    mlflow_run_dir = get_reader("mlflow").run_dir
    stack = [""]
    while stack:
        rel = stack.pop()
        subdirs, files = dirs[rel]
        dirnames, filenames = sorted(subdirs), sorted(files)
        if _is_venv(rel, filenames):
            continue
        skip = set(PRUNE_DIRS)
        # Of the run folders, a listing holds MLflow's (its reader reads them from files).
        run = mlflow_run_dir(rel, dirnames, filenames)
        if run is not None:
            out.append(rel or ".")
            skip |= run.parts
        dirnames = [d for d in dirnames if d not in skip and not d.endswith(".egg-info")]
        depth = rel.count("/") + 1 if rel else 0
        if max_depth is not None and depth >= max_depth and dirnames:
            limits.append(
                {
                    "file": rel or ".",
                    "reason": f"{len(dirnames)} folder(s) below it not searched: deeper than --max-depth {max_depth}",
                }
            )
            dirnames = []
        for f in filenames:
            if is_log(f):
                if max_files is not None and len(out) >= max_files:
                    limits.append(
                        {
                            "file": ".",
                            "reason": f"search stopped at --max-files {max_files}: later logs were not judged",
                        }
                    )
                    return done()
                out.append(f"{rel}/{f}" if rel else f)
        stack.extend(f"{rel}/{d}" if rel else d for d in reversed(dirnames))
    return done()


def _to_urls(
    cands: list[Candidate], root: Path | None, base: str, limits: list[dict] | None, local_limits: list[dict]
) -> list[Candidate]:
    """Candidates and cuts as URLs: paths are under ``root`` on disk (a ``file://`` URL) or,
    with ``root`` None, relative keys of the listing."""

    def url(p) -> str:
        rel = (Path(p).relative_to(root) if root is not None else PurePosixPath(p)).as_posix()
        return base if rel == "." else f"{base}/{rel}"

    for cut in local_limits if limits is not None else ():
        try:
            f = url(cut["file"])
        except ValueError:
            f = cut["file"]
        limits.append({"file": f, "reason": cut["reason"]})
    return [Candidate(url(c.path), [url(s) for s in c.snapshots], [url(s) for s in c.siblings]) for c in cands]
