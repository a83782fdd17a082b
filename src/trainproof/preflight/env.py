"""``trainproof env``: can this machine start this run at all?

Before hours of queueing end in ``ModuleNotFoundError``, a segfaulting extension, a
half-written checkpoint or the OOM killer, check:

* **imports** (``--module``, repeatable): each module is imported in its own child
  interpreter (``--python``, default the one running trainproof), from ``--cwd`` (so
  editable installs and local packages resolve as they will for the run), with a
  ``--timeout``. trainproof itself never imports the module, so a segfault, an ``abort()``
  or an import that hangs is reported, not suffered. The child runs with
  ``-X faulthandler``: a crash or a hang names the Python line it happened at.
* **checkpoints** (``--checkpoint``, repeatable; a file or a directory): never unpickled,
  since loading a pickle runs arbitrary code. A torch checkpoint (``torch.save`` since 1.6)
  is a ZIP archive: its central directory is read, ``<top>/data.pkl`` must exist and every
  entry's CRC-32 is verified (the whole file is read once). The imports ``data.pkl`` would
  perform are listed from its opcodes (:mod:`._pickle`), and any outside what
  ``torch.load(weights_only=True)`` accepts is a warning naming them. A ``.safetensors`` file's
  8-byte header length and JSON header are read here (not by the ``safetensors``
  package): every tensor's bytes must lie inside the file, match its dtype and shape, and
  cover the data area exactly as the format requires. A directory is checked file by file
  (``*.safetensors``, ``*.bin``, ``*.pt``, ``*.pth``, ``*.ckpt``) and every
  ``*.index.json`` in it must name only files that exist; numbered shards
  (``model-00001-of-00004.safetensors``) must all be present.
* **memory**: RAM available now (``psutil``), or less when the process sits in a cgroup
  with a memory limit (a container, a Slurm job, a systemd slice: the limit is what the
  OOM killer enforces), against ``--required-gb``.
* **disk**: free space under ``--output-dir`` (default ``--cwd``) against
  ``--checkpoint-gb`` × ``--keep``.
* **GPUs**: when ``pynvml`` (nvidia-ml-py) is importable, each device and its free
  memory, as INFO only: trainproof does not know what the run needs per device.

**One report for the machine.** Everything goes into one :class:`Report` whose ``file`` is
the ``--cwd`` as given (default ``.``): the question is one question (can this run start
here?), and its verdict is the answer. INFO findings (memory or disk without a
requirement, GPUs, the interpreter) never make that verdict, so a run that asks only for
imports still exits 0 when they pass; with nothing required at all (no ``--module``,
``--checkpoint``, ``--required-gb`` or ``--checkpoint-gb``) the report holds only INFO
and is NOT-CHECKED (exit 2). Each finding's ``data`` names its item (``module``,
``path``), so ``--json`` consumers can group by item.

Paths given to ``--checkpoint`` and ``--output-dir`` are relative to where trainproof
runs, like every path on the command line; only the import probe runs in ``--cwd``.
Sizes are in GB of 2^30 bytes, as ``free -g``, ``df -h`` and ``nvidia-smi`` count them.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import shutil
import signal
import stat
import struct
import subprocess
import sys
import time
import zipfile
import zlib
from pathlib import Path

from ..findings import Finding, Report, Skip
from ..rules.thresholds import Thresholds
from . import finding, report
from ._pickle import UNRESOLVED, PickleScanError, pickle_imports, unsafe_imports

GB = 1024**3

# --- declarations ------------------------------------------------------------------------


# --- small helpers -----------------------------------------------------------------------


def _size(n: float) -> str:
    """Bytes as B, KB, MB or GB (powers of 1024)."""
    for unit, div in (("GB", GB), ("MB", 1024**2), ("KB", 1024)):
        if abs(n) >= div:
            return f"{n / div:.1f} {unit}"
    return f"{int(n)} B"


def _n(k: int, word: str) -> str:
    return f"{k} {word}" + ("" if k == 1 else "s")


def _gb(n: float) -> str:
    return f"{n / GB:.1f} GB"


def _short(text: str, width: int = 120) -> str:
    """``text`` cut to ``width`` characters: names read from a file (a tensor name, a
    pickled global) can be megabytes long, and a message must stay one readable line."""
    return text if len(text) <= width else text[: width - 3] + "..."


def _json_excerpt(obj: object, width: int = 200) -> str:
    """The start of ``obj`` as JSON, or its type when it cannot be written back."""
    try:
        return json.dumps(obj)[:width]
    except (ValueError, TypeError, RecursionError):
        return type(obj).__name__


def _tail(text: str, lines: int = 3, width: int = 300) -> str:
    kept = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    out = " | ".join(kept[-lines:])
    return out if len(out) <= width else "…" + out[-width:]


# --- subprocesses ------------------------------------------------------------------------

_MARKER = "@@trainproof-probe@@:"

# Runs in the interpreter under test: Python 3 only, nothing newer than 3.6 syntax.
_PY_PROBE = r"""
import json, os, platform, sys
sys.stdout.write("\n" + sys.argv[1] + json.dumps({
    "version": platform.python_version(), "executable": sys.executable, "prefix": sys.prefix,
    "implementation": platform.python_implementation(), "major": sys.version_info[0]}) + "\n")
sys.stdout.flush()
"""

_IMPORT_PROBE = r"""
import faulthandler, json, os, sys, time, traceback
name, marker, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])
faulthandler.dump_traceback_later(limit, exit=True)
t0 = time.perf_counter()
try:
    __import__(name)
    mod = sys.modules[name]
    version = getattr(mod, "__version__", None)
    res = {"ok": True, "file": getattr(mod, "__file__", None),
           "version": version if version is None or isinstance(version, str) else str(version)}
except BaseException as e:
    faulthandler.cancel_dump_traceback_later()
    try:
        msg = str(e)
    except BaseException:
        msg = repr(e)
    t = type(e)
    tname = t.__qualname__ if t.__module__ == "builtins" else t.__module__ + "." + t.__qualname__
    frames = [[f.filename, f.lineno, f.name] for f in traceback.extract_tb(e.__traceback__)
              if not f.filename.startswith("<")]
    res = {"ok": False, "type": tname, "message": msg[:2000], "frames": frames}
    if isinstance(e, SyntaxError) and e.filename:
        res["syntax"] = [e.filename, e.lineno]
faulthandler.cancel_dump_traceback_later()
res["seconds"] = time.perf_counter() - t0
try:
    os.write(1, ("\n" + marker + json.dumps(res, default=str) + "\n").encode("utf-8", "replace"))
finally:
    os._exit(0)
"""


class _Run:
    def __init__(self, rc: int | None, out: str, err: str, timed_out: bool, seconds: float):
        self.rc, self.out, self.err, self.timed_out, self.seconds = rc, out, err, timed_out, seconds

    def result(self) -> dict | None:
        for line in reversed(self.out.split("\n")):
            if line.startswith(_MARKER):
                try:
                    return json.loads(line[len(_MARKER) :])
                except ValueError:
                    return None
        return None


def _kill_group(p: subprocess.Popen) -> None:
    """Kill the child and everything it started (it leads its own process group)."""
    try:
        if os.name == "posix":
            os.killpg(p.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            p.kill()
    except (ProcessLookupError, PermissionError):
        pass


#: What a ``--clean-env`` probe keeps of the environment: enough to find programs and
#: decode text, nothing that changes what Python imports or loads (PYTHONPATH,
#: PYTHONSTARTUP, LD_PRELOAD, LD_LIBRARY_PATH, site customisations...).
CLEAN_ENV_KEEP = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT")

#: The environment probes run in: ``None`` inherits trainproof's; set by ``clean_env``.
_PROBE_ENV: dict | None = None


def clean_environment() -> dict[str, str]:
    """The minimal environment of a ``--clean-env`` probe (see ``CLEAN_ENV_KEEP``)."""
    return {k: v for k, v in os.environ.items() if k in CLEAN_ENV_KEEP}


def _run(argv: list[str], cwd: str | None, timeout: float) -> _Run:
    """Run ``argv`` (a list: never through a shell) with a hard timeout; OSError when it
    cannot be started."""
    t0 = time.monotonic()
    p = subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=(os.name == "posix"),
        env=_PROBE_ENV,
        shell=False,
    )
    timed_out = False
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(p)
        try:
            out, err = p.communicate(timeout=5)
        except subprocess.TimeoutExpired:  # a grandchild in another session holds the pipes
            out, err = b"", b""
            for s in (p.stdout, p.stderr):
                if s is not None:
                    s.close()
            p.wait()
    except BaseException:  # Ctrl-C: the child is in its own session and would not get it
        _kill_group(p)
        p.wait()
        raise
    dec = lambda b: (b or b"").decode("utf-8", "replace")  # noqa: E731
    return _Run(p.returncode, dec(out), dec(err), timed_out, time.monotonic() - t0)


_FRAME = re.compile(r'^\s*File "(.+)", line (\d+)(?: in (.+))?')


def _fault_frames(stderr: str, main: bool = False) -> list[tuple[str, int, str]]:
    """Frames ``(file, line, function)`` of one thread's stack in a faulthandler dump,
    innermost first, without ``<frozen ...>`` and ``<string>`` frames.

    The first stack is the thread that crashed ("Current thread"); with ``main`` it is the
    thread running the probe (its ``<string>`` module frame), which is the importing one
    in a timeout dump, where every thread is listed.
    """
    stacks: list[list[tuple[str, int, str]]] = []
    cur: list[tuple[str, int, str]] | None = None
    for line in stderr.splitlines():
        m = _FRAME.match(line)
        if m:
            if cur is None:
                cur = []
                stacks.append(cur)
            cur.append((m.group(1), int(m.group(2)), (m.group(3) or "").strip()))
        else:
            cur = None  # a thread header or a blank line ends a stack
    chosen = stacks[0] if stacks else []
    if main:
        chosen = next((st for st in stacks if any(f == "<string>" and fn == "<module>" for f, _, fn in st)), chosen)
    return [fr for fr in chosen if not fr[0].startswith("<")]


#: Lines of a faulthandler dump (its stack), left out of the stderr quoted as evidence.
_DUMP_LINE = re.compile(
    r'^\s*(File "|Current thread |Thread 0x|Stack \(most recent|Extension modules:|<no Python frame>)'
)


def _where(innermost: tuple[str, int] | None, module_frame: tuple[str, int] | None) -> str:
    """``" at FILE:LINE"``, plus the module-level line being run when that is elsewhere."""
    if innermost is None:
        return ""
    out = f" at {innermost[0]}:{innermost[1]}"
    if module_frame is not None and tuple(module_frame) != tuple(innermost):
        out += f" (while running {module_frame[0]}:{module_frame[1]})"
    return out


def _signal_name(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


def _signal_text(n: int) -> str:
    desc = signal.strsignal(n) if hasattr(signal, "strsignal") else None
    return f"{_signal_name(n)} ({desc.lower()})" if desc else _signal_name(n)


# --- imports -----------------------------------------------------------------------------

_MODULE_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def is_module_name(name: str) -> bool:
    """Whether ``name`` is a dotted Python module name (``torch``, ``mypkg.sub``): only
    such a name is handed to the child interpreter that probes the import."""
    return bool(_MODULE_NAME.match(name))


def probe_python(python: str, cwd: str | None, timeout: float) -> tuple[dict | None, str]:
    """``(info, "")`` when ``python`` runs as Python 3, else ``(None, why not)``."""
    try:
        run = _run([python, "-c", _PY_PROBE, _MARKER], cwd, timeout)
    except OSError as e:
        return None, f"cannot run {python}: {e.strerror or e}"
    if run.timed_out:
        return None, f"{python} did not answer within {timeout:g} s"
    info = run.result()
    if info is None:
        how = f"killed by {_signal_name(-run.rc)}" if run.rc is not None and run.rc < 0 else f"exit status {run.rc}"
        tail = _tail(run.err or run.out)
        return None, f"{python} did not run as Python ({how})" + (f": {tail}" if tail else "")
    if info.get("major") != 3:
        return None, f"{python} is Python {info.get('version')}; Python 3 is required"
    return info, ""


def probe_import(name: str, python: str, cwd: str | None, timeout: float) -> Finding:
    """Import ``name`` in a child ``python`` started in ``cwd``; one finding about it."""
    data: dict = {"module": name, "python": python, "cwd": cwd, "timeout_s": timeout}
    try:
        # The child stops itself at the timeout (dumping its stack); the parent's limit is
        # a backstop for a child that hangs before the probe runs.
        run = _run(
            [python, "-X", "faulthandler", "-c", _IMPORT_PROBE, name, _MARKER, repr(timeout)], cwd, timeout + 5.0
        )
    except OSError as e:
        return finding(
            "TP-ENV-PYTHON-UNUSABLE", f"cannot start {python} to import {name}: {e.strerror or e}", data=data
        )
    res = run.result()
    if res is not None:
        data["seconds"] = round(float(res.get("seconds", run.seconds)), 3)
        if res.get("ok"):
            data.update(file=res.get("file"), version=res.get("version"))
            ver = f" {res['version']}" if res.get("version") else ""
            where = f" from {res['file']}" if res.get("file") else ""
            return finding(
                "TP-ENV-IMPORT-OK",
                f"import {name} works ({name}{ver})",
                evidence=f"imported in {data['seconds']:.2f} s{where}",
                data=data,
            )
        frames = res.get("frames") or []
        loc = None
        if res.get("syntax"):
            loc = (res["syntax"][0], res["syntax"][1])
        elif frames:
            loc = (frames[-1][0], frames[-1][1])
        data.update(
            exception=res.get("type"),
            message=res.get("message"),
            file=loc[0] if loc else None,
            line=loc[1] if loc else None,
            frames=[f"{f}:{ln} in {fn}" for f, ln, fn in frames],
        )
        mods = [(f, ln) for f, ln, fn in frames if fn == "<module>"]
        if mods and loc is not None and not res.get("syntax"):
            data["module_line"] = f"{mods[-1][0]}:{mods[-1][1]}"
        at = (
            f" (raised{_where(loc, None if res.get('syntax') else (mods[-1] if mods else None))})"
            if loc
            else " (raised by the import system: no module file)"
        )
        chain = " -> ".join(f"{f}:{ln}" for f, ln, _ in frames)
        if chain:
            how = f"import chain: {chain}"
        elif res.get("syntax"):
            how = "the module's source does not compile"
        elif res.get("type") == "ModuleNotFoundError":
            how = f"{name} itself was not found on sys.path from {cwd}"
        else:
            how = "raised inside the import system"
        msg = " ".join(str(res.get("message")).split())
        msg = msg if len(msg) <= 300 else msg[:300] + "…"
        return finding(
            "TP-ENV-IMPORT-FAIL",
            f"import {name} raises {res.get('type')}: {msg}{at}",
            evidence=f"{how}; after {data['seconds']:.2f} s",
            data=data,
        )
    timed_out = run.timed_out or "\nTimeout (" in "\n" + run.err
    frames = _fault_frames(run.err, main=timed_out)
    data["seconds"] = round(run.seconds, 3)
    data["stderr_tail"] = _tail(run.err, 6, 1000)
    data["frames"] = [f"{f}:{ln} in {fn}" for f, ln, fn in frames]
    inner = frames[0][:2] if frames else None
    mod = next((fr[:2] for fr in frames if fr[2] == "<module>"), None)
    if mod is not None:
        data["module_line"] = f"{mod[0]}:{mod[1]}"
    if timed_out:
        where = f"; it was waiting{_where(inner, mod)}" if frames else ""
        return finding(
            "TP-ENV-IMPORT-TIMEOUT",
            f"import {name} did not finish within {timeout:g} s (stopped)",
            evidence=f"the child was stopped after {timeout:g} s{where}",
            data=data,
        )
    at = _where(inner, mod)
    rc = run.rc
    data["returncode"] = rc
    if rc is not None and rc < 0:
        data["signal"] = _signal_name(-rc)
        how = f"killed by {_signal_text(-rc)}"
    elif rc is not None and 128 < rc <= 128 + 64:
        data["signal"] = _signal_name(rc - 128)
        how = f"exited with status {rc} (a shell's code for death by {_signal_name(rc - 128)})"
    else:
        how = f"exited with status {rc} and no Python exception"
    said = _tail("\n".join(ln for ln in run.err.splitlines() if not _DUMP_LINE.match(ln)))
    return finding(
        "TP-ENV-IMPORT-CRASH",
        f"import {name} crashed the interpreter: {how}{at}",
        evidence="stderr: " + (said or "(empty)"),
        data=data,
    )


# --- checkpoints -------------------------------------------------------------------------

_CKPT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt")
_SHARD = re.compile(r"^(?P<stem>.+)-(?P<i>\d+)-of-(?P<n>\d+)(?P<ext>\.[A-Za-z0-9]+)$")
_LFS = b"version https://git-lfs"
_ST_MAX_HEADER = 100_000_000  # the safetensors format's own limit on the header length
#: The largest data.pkl whose imports are listed. A state dict pickles in ~100-200 bytes a
#: tensor (a 7B-parameter model's is tens of kilobytes, its Adam state a few hundred), and
#: the opcode walk reads about 2 MB a second in pure Python, so 16 MiB is far above real
#: checkpoints while a planted pickle costs seconds, not minutes.
_MAX_PICKLE_BYTES = 16 << 20

#: Bits per element of every safetensors dtype.
_ST_BITS = {
    "BOOL": 8,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "I64": 64,
    "U64": 64,
    "F64": 64,
    "C64": 64,
}


def check_checkpoint(path: str) -> list[Finding]:
    """Findings about one ``--checkpoint`` (a file: one finding; a directory: one per
    problem, plus one OK per format that passed)."""
    p = Path(path)
    if os.path.isdir(p):
        return _check_dir(path)
    return [check_file(path)]


def check_file(path: str) -> Finding:
    """One finding about one checkpoint file; never unpickles anything."""
    data: dict = {"path": path}
    try:
        st = os.stat(path)
    except FileNotFoundError:
        why = "a symlink to a missing file" if os.path.islink(path) else "no such file"
        return finding("TP-ENV-CKPT-MISSING", f"checkpoint {path} does not exist ({why})", data=data)
    except OSError as e:
        return finding("TP-ENV-CKPT-UNREADABLE", f"checkpoint {path} cannot be read: {e.strerror or e}", data=data)
    if not stat.S_ISREG(st.st_mode):
        return finding("TP-ENV-CKPT-UNREADABLE", f"checkpoint {path} is not a regular file", data=data)
    data["bytes"] = st.st_size
    if st.st_size == 0:
        return finding("TP-ENV-CKPT-EMPTY", f"checkpoint {path} is empty (0 bytes)", data=data)
    try:
        with open(path, "rb") as f:
            head = f.read(512)
    except OSError as e:
        return finding("TP-ENV-CKPT-UNREADABLE", f"checkpoint {path} cannot be read: {e.strerror or e}", data=data)
    try:
        if head.startswith(_LFS):
            return finding(
                "TP-ENV-CKPT-LFS-POINTER",
                f"checkpoint {path} is a Git LFS pointer ({st.st_size} bytes), not the weights",
                evidence=head.decode("ascii", "replace").strip().replace("\n", " | ")[:200],
                data=data,
            )
        if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
            return _check_torch_zip(path, st.st_size, data)
        if path.endswith(".safetensors") or (len(head) >= 9 and head[8:9] == b"{"):
            return _check_safetensors(path, st.st_size, data)
        if head[:1] == b"\x80" and len(head) > 1 and 2 <= head[1] <= 5:
            legacy = head[2:4] == b"\x8a\x0a"  # torch's legacy magic number, pickled as a long
            data["format"] = "torch-legacy" if legacy else "pickle"
            what = "a legacy (pre-1.6) torch checkpoint" if legacy else "a bare pickle"
            return finding(
                "TP-ENV-CKPT-LEGACY",
                f"checkpoint {path} is {what}: not opened (unpickling runs code)",
                evidence=f"pickle protocol {head[1]}, {_size(st.st_size)}; re-save it with a current "
                "torch.save or as safetensors to have it checked",
                data=data,
            )
        if len(head) > 262 and head[257:262] == b"ustar":
            data["format"] = "torch-tar"
            return finding(
                "TP-ENV-CKPT-LEGACY",
                f"checkpoint {path} is a tar archive (torch < 0.4 format): not opened",
                evidence="its entries are pickles; re-save it with a current torch.save",
                data=data,
            )
    except OSError as e:
        return finding("TP-ENV-CKPT-UNREADABLE", f"checkpoint {path} cannot be read: {e.strerror or e}", data=data)
    return finding(
        "TP-ENV-CKPT-UNKNOWN-FORMAT",
        f"checkpoint {path} is in no format trainproof checks",
        evidence=f"{_size(st.st_size)}, starts with {head[:16]!r}",
        data=data,
    )


def _started_entries(path: str, size: int) -> list[str]:
    """Names of the ZIP local headers found in a file without a central directory."""
    names: list[str] = []
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        pos = m.find(b"PK\x03\x04", 0)
        while pos != -1 and pos + 30 <= size:
            n, x = struct.unpack_from("<HH", m, pos + 26)
            raw = m[pos + 30 : pos + 30 + n]
            try:
                name = raw.decode("utf-8")
            except UnicodeDecodeError:
                name = ""
            # A signature inside tensor bytes is noise: a real entry is named under the
            # archive's top folder (the first entry's).
            if name and name.isprintable() and (not names or name.split("/")[0] == names[0].split("/")[0]):
                names.append(name)
                pos = m.find(b"PK\x03\x04", pos + 30 + n + x)
            else:
                pos = m.find(b"PK\x03\x04", pos + 4)
    return names


def _check_torch_zip(path: str, size: int, data: dict) -> Finding:
    data["format"] = "torch-zip"
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile as e:
        names = _started_entries(path, size)
        data.update(entries_started=len(names), last_entry=names[-1] if names else None, zip_error=str(e))
        return finding(
            "TP-ENV-CKPT-TRUNCATED",
            f"checkpoint {path} ends early: no ZIP central directory (the save did not finish)",
            evidence=f"the file stops at {_size(size)}; {_n(len(names), 'entry')} started".replace("entrys", "entries")
            + (f", the last one {names[-1]}" if names else ""),
            data=data,
        )
    with zf:
        infos = zf.infolist()
        data["entries"] = len(infos)
        if not infos:
            return finding("TP-ENV-CKPT-CORRUPT", f"checkpoint {path} is an empty ZIP archive", data=data)
        top = infos[0].filename.split("/")[0]
        names = {i.filename for i in infos}
        if "/" not in infos[0].filename or f"{top}/data.pkl" not in names:
            return finding(
                "TP-ENV-CKPT-CORRUPT",
                f"checkpoint {path} is a ZIP archive without {top}/data.pkl: not a torch checkpoint",
                evidence=f"{len(infos)} entries, the first {infos[0].filename}",
                data=data,
            )
        storages = [i for i in infos if i.filename.startswith(f"{top}/data/")]
        data["storages"] = len(storages)
        data["storage_bytes"] = sum(i.file_size for i in storages)
        crc_recorded = any(i.CRC != 0 for i in infos if i.file_size > 0)
        try:
            with open(path, "rb") as raw:
                for info in infos:
                    # Where the local header says the bytes are, and that they are all there.
                    raw.seek(info.header_offset)
                    local = raw.read(30)
                    if len(local) < 30 or local[:4] != b"PK\x03\x04":
                        raise zipfile.BadZipFile(f"no local header at byte {info.header_offset}")
                    n, x = struct.unpack_from("<HH", local, 26)
                    end = info.header_offset + 30 + n + x + info.compress_size
                    if end > size:
                        raise zipfile.BadZipFile(f"its bytes end at {end}, past the end of the file ({size})")
                    if not crc_recorded:
                        continue
                    with zf.open(info) as f:  # zipfile compares the CRC-32 at the end of the entry
                        while f.read(8 << 20):
                            pass
        except (zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError) as e:
            msg = str(e)
            data["entry"] = info.filename
            if "CRC" in msg:
                return finding(
                    "TP-ENV-CKPT-CORRUPT",
                    f"checkpoint {path}: entry {info.filename} fails its CRC-32 (its bytes changed)",
                    evidence=f"stored CRC {info.CRC:08x}, {_size(info.file_size)} entry; {msg}",
                    data=data,
                )
            return finding(
                "TP-ENV-CKPT-CORRUPT", f"checkpoint {path}: entry {info.filename} cannot be read: {msg}", data=data
            )
        except OSError as e:
            return finding("TP-ENV-CKPT-UNREADABLE", f"checkpoint {path} cannot be read: {e.strerror or e}", data=data)
        data["crc_verified"] = crc_recorded
        crc_text = (
            "every CRC-32 matches" if crc_recorded else "no CRC recorded (saved with crc32 off): contents not verified"
        )
        try:
            pinfo = zf.getinfo(f"{top}/data.pkl")
            if pinfo.compress_type == zipfile.ZIP_STORED:
                # Read where its local header puts it (checked above): zipfile.open would
                # compare a CRC that an archive saved with crc32 off does not record.
                with open(path, "rb") as raw:
                    raw.seek(pinfo.header_offset)
                    n, x = struct.unpack_from("<HH", raw.read(30), 26)
                    raw.seek(pinfo.header_offset + 30 + n + x)
                    pkl = raw.read(min(pinfo.file_size, _MAX_PICKLE_BYTES + 1))
            else:
                with zf.open(pinfo) as f:
                    pkl = f.read(_MAX_PICKLE_BYTES + 1)
        except (zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError) as e:
            return finding("TP-ENV-CKPT-CORRUPT", f"checkpoint {path}: {top}/data.pkl cannot be read: {e}", data=data)
        except OSError as e:
            return finding("TP-ENV-CKPT-UNREADABLE", f"checkpoint {path} cannot be read: {e.strerror or e}", data=data)
    if len(pkl) > _MAX_PICKLE_BYTES:
        data["imports"] = [UNRESOLVED]
        return finding(
            "TP-ENV-CKPT-UNSAFE-PICKLE",
            f"checkpoint {path}: {top}/data.pkl is over {_size(_MAX_PICKLE_BYTES)}: its imports were not listed",
            evidence=f"the archive is intact ({crc_text}); load it only with torch.load(weights_only=True)",
            data=data,
        )
    try:
        imports = pickle_imports(pkl)
    except PickleScanError as e:
        return finding(
            "TP-ENV-CKPT-CORRUPT",
            f"checkpoint {path}: {top}/data.pkl is not a pickle stream ({e})",
            evidence="torch.load fails on it",
            data=data,
        )
    unsafe = unsafe_imports(imports)
    data["imports"] = imports
    if unsafe:
        data["unsafe_imports"] = unsafe
        shown = ", ".join(_short(u) for u in unsafe[:8]) + (f" and {len(unsafe) - 8} more" if len(unsafe) > 8 else "")
        return finding(
            "TP-ENV-CKPT-UNSAFE-PICKLE",
            f"checkpoint {path}: loading it imports {shown}, beyond what weights_only=True accepts",
            evidence=f"{_n(len(unsafe), 'global')} of {len(imports)} imported by {top}/data.pkl lie "
            "outside torch's weights-only allowlist; torch.load(weights_only=False) imports "
            f"and can call them. The archive is intact ({crc_text}); not unpickled",
            data=data,
        )
    return finding(
        "TP-ENV-CKPT-OK",
        f"checkpoint {path} is a complete torch archive",
        evidence=f"{_size(size)}, {len(infos)} entries ({_n(len(storages), 'storage')}, "
        f"{_size(data['storage_bytes'])}), {crc_text}; its pickle imports only what "
        "weights_only=True accepts; not unpickled",
        data=data,
    )


def _st_numel(shape: list, cap: int) -> int | None:
    """The element count of ``shape``, or ``None`` once it exceeds ``cap``: a declared
    shape such as [2**62, 2**62, ...] would otherwise build an integer of millions of
    digits before being compared with a byte range of a few bytes."""
    if any(d == 0 for d in shape):
        return 0
    n = 1
    for d in shape:
        n *= d
        if n > cap:
            return None
    return n


def _check_safetensors(path: str, size: int, data: dict, expect: set[str] | None = None) -> Finding:
    data["format"] = "safetensors"
    corrupt = lambda msg, ev="": finding(  # noqa: E731
        "TP-ENV-SAFETENSORS-CORRUPT",
        f"safetensors {path}: {msg}",
        evidence=ev,
        data=data,
    )
    if size < 8:
        return finding(
            "TP-ENV-SAFETENSORS-TRUNCATED",
            f"safetensors {path} ends early: {size} bytes, shorter than its 8-byte header length",
            data=data,
        )
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        data["header_bytes"] = n
        if n > _ST_MAX_HEADER:
            return corrupt(
                f"header length {n} is over the format's 100 MB limit",
                "the first 8 bytes are not a safetensors header length",
            )
        if 8 + n > size:
            return finding(
                "TP-ENV-SAFETENSORS-TRUNCATED",
                f"safetensors {path} ends early: inside its header",
                evidence=f"the header needs bytes 8-{8 + n}, the file has {size}",
                data=data,
            )
        raw = f.read(n)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        return corrupt(f"the header is not valid JSON ({_short(str(e))})")
    except RecursionError:
        return corrupt(
            "the header nests deeper than a JSON parser can follow",
            "a safetensors header is one flat object of tensor entries",
        )
    if not isinstance(header, dict):
        return corrupt("the header is not a JSON object")
    meta = header.pop("__metadata__", None)
    if meta is not None and not (isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())):
        return corrupt("__metadata__ is not a map of strings")
    data_len = size - 8 - n
    data["tensors"] = len(header)
    data["data_bytes"] = data_len
    spans = []
    for name, t in header.items():
        tname = repr(_short(name))
        if not isinstance(t, dict):
            return corrupt(f"tensor {tname} is not an object")
        dtype, shape, offs = t.get("dtype"), t.get("shape"), t.get("data_offsets")
        if not isinstance(dtype, str) or not isinstance(shape, list) or not isinstance(offs, list) or len(offs) != 2:
            return corrupt(f"tensor {tname} lacks a dtype, a shape or two data_offsets", _json_excerpt(t))
        if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape) or not all(
            isinstance(o, int) and not isinstance(o, bool) and o >= 0 for o in offs
        ):
            return corrupt(
                f"tensor {tname} has a shape or offsets that are not non-negative integers", _json_excerpt(t)
            )
        b, e = offs
        if e < b:
            return corrupt(f"tensor {tname} ends (byte {_short(str(e))}) before it begins (byte {_short(str(b))})")
        bits = _ST_BITS.get(dtype)
        if bits is None:
            return corrupt(f"tensor {tname} has unknown dtype {_short(dtype)!r}")
        shape_text = _short(str(shape), 80)
        # A consistent entry has no more elements than its byte range has bits.
        numel = _st_numel(shape, cap=8 * (e - b))
        if numel is None:
            data["tensor"] = _short(name)
            return corrupt(
                f"tensor {tname} ({dtype} {shape_text}) needs more bytes than its offsets give ({_short(str(e - b))})",
                f"data area {data_len} bytes",
            )
        if (numel * bits) % 8 or e - b != numel * bits // 8:
            data["tensor"] = _short(name)
            return corrupt(
                f"tensor {tname} ({dtype} {shape_text}) needs {numel * bits / 8:g} bytes, "
                f"its offsets give {_short(str(e - b))}",
                f"data_offsets [{_short(str(b))}, {_short(str(e))}], data area {data_len} bytes",
            )
        spans.append((b, e, name))
    spans.sort()
    pos = 0
    for b, e, name in spans:
        if b != pos:
            data["tensor"] = name
            what = "overlaps the tensor before it" if b < pos else f"leaves a gap of {b - pos} bytes before it"
            return corrupt(f"tensor {name!r} {what} (starts at {b}, previous end {pos})")
        pos = e
    if pos > data_len:
        cut = [name for b, e, name in spans if e > data_len]
        data["tensors_cut"] = cut
        return finding(
            "TP-ENV-SAFETENSORS-TRUNCATED",
            f"safetensors {path} ends early: {pos - data_len} bytes of tensor data missing",
            evidence=f"the header describes {pos} bytes of data, the file holds {data_len}; tensors cut: "
            + ", ".join(cut[:5])
            + (f" and {len(cut) - 5} more" if len(cut) > 5 else ""),
            data=data,
        )
    if pos < data_len:
        return corrupt(
            f"{data_len - pos} bytes follow the last tensor",
            "safetensors refuses a file its header does not cover exactly",
        )
    if expect:
        absent = sorted(expect - set(header))
        if absent:
            data["absent"] = absent
            return corrupt(f"lacks {len(absent)} tensors its index assigns to it: {', '.join(absent[:5])}")
    return finding(
        "TP-ENV-SAFETENSORS-OK",
        f"safetensors {path} is complete",
        evidence=f"{_size(size)}, {len(spans)} tensors, every byte range inside the file and consistent "
        "with its dtype and shape",
        data=data,
    )


def _ok_id(f: Finding) -> bool:
    return f.id in ("TP-ENV-CKPT-OK", "TP-ENV-SAFETENSORS-OK")


def _check_dir(path: str) -> list[Finding]:
    d = Path(path)
    try:
        entries = sorted(os.listdir(d))
    except OSError as e:
        return [
            finding(
                "TP-ENV-CKPT-UNREADABLE",
                f"checkpoint directory {path} cannot be listed: {e.strerror or e}",
                data={"path": path},
            )
        ]
    problems: list[Finding] = []
    files: dict[str, set[str] | None] = {}  # file name -> tensors an index assigns to it
    for idx in (e for e in entries if e.endswith(".index.json")):
        ipath = os.path.join(path, idx)
        bad = "TP-ENV-SAFETENSORS-CORRUPT" if idx.endswith(".safetensors.index.json") else "TP-ENV-CKPT-CORRUPT"
        try:
            if os.path.getsize(ipath) > _ST_MAX_HEADER:  # an index lists names: kilobytes, not gigabytes
                raise ValueError(f"over {_size(_ST_MAX_HEADER)}")
            doc = json.loads(Path(ipath).read_text(encoding="utf-8"))
            wmap = doc["weight_map"]
            if not isinstance(wmap, dict) or not all(isinstance(v, str) for v in wmap.values()):
                raise ValueError("weight_map is not a map of file names")
        except OSError as e:
            problems.append(
                finding(
                    "TP-ENV-CKPT-UNREADABLE",
                    f"shard index {ipath} cannot be read: {e.strerror or e}",
                    data={"path": ipath},
                )
            )
            continue
        except (ValueError, KeyError, TypeError, UnicodeDecodeError, RecursionError) as e:
            why = "it nests too deeply" if isinstance(e, RecursionError) else _short(str(e))
            problems.append(finding(bad, f"shard index {ipath} is not a valid index: {why}", data={"path": ipath}))
            continue
        missing = sorted({v for v in wmap.values() if not os.path.isfile(os.path.join(path, v))})
        if missing:
            problems.append(
                finding(
                    "TP-ENV-SHARD-MISSING",
                    f"shard index {ipath} names {len(missing)} missing file(s): "
                    + ", ".join(missing[:5])
                    + (" ..." if len(missing) > 5 else ""),
                    evidence=f"{len(set(wmap.values()))} files named, {len(wmap)} tensors",
                    data={"path": ipath, "missing": missing},
                )
            )
        for tensor, fname in wmap.items():
            if fname not in missing:
                s = files.setdefault(fname, set())
                if s is not None:
                    s.add(tensor)
    for e in entries:
        if e.endswith(_CKPT_SUFFIXES) and os.path.isfile(os.path.join(path, e)):
            files.setdefault(e, None)
    # Numbered shards without an index (or beyond it) must all be there.
    groups: dict[tuple[str, str, str], set[int]] = {}
    for e in entries:
        m = _SHARD.match(e)
        if m and e.endswith(_CKPT_SUFFIXES):
            groups.setdefault((m["stem"], m["n"], m["ext"]), set()).add(int(m["i"]))
    for (stem, n, ext), have in sorted(groups.items()):
        width = len(n)
        absent = [f"{stem}-{i:0{width}d}-of-{n}{ext}" for i in range(1, int(n) + 1) if i not in have]
        already = {x for f in problems if f.id == "TP-ENV-SHARD-MISSING" for x in f.data.get("missing", ())}
        absent = [a for a in absent if a not in already]
        if absent:
            problems.append(
                finding(
                    "TP-ENV-SHARD-MISSING",
                    f"checkpoint {path}: {len(absent)} of {int(n)} shards missing: "
                    + ", ".join(absent[:5])
                    + (" ..." if len(absent) > 5 else ""),
                    data={"path": path, "missing": absent},
                )
            )
    if not files:
        if problems:
            return problems
        return [
            finding(
                "TP-ENV-CKPT-MISSING",
                f"checkpoint directory {path} holds no checkpoint file",
                evidence="looked for *.index.json, " + ", ".join(f"*{s}" for s in _CKPT_SUFFIXES),
                data={"path": path},
            )
        ]
    oks: dict[str, list[Finding]] = {}
    for fname, expect in sorted(files.items()):
        fpath = os.path.join(path, fname)
        f = check_file(fpath)
        if f.id == "TP-ENV-SAFETENSORS-OK" and expect:
            try:
                size = os.path.getsize(fpath)
                f = _check_safetensors(fpath, size, {"path": fpath, "bytes": size}, expect)
            except OSError as e:
                f = finding(
                    "TP-ENV-CKPT-UNREADABLE",
                    f"checkpoint {fpath} cannot be read: {e.strerror or e}",
                    data={"path": fpath},
                )
        (oks.setdefault(f.id, []) if _ok_id(f) else problems).append(f)
    out = list(problems)
    for rid, fs in oks.items():
        total = sum(f.data.get("bytes", 0) for f in fs)
        kind = "safetensors" if rid == "TP-ENV-SAFETENSORS-OK" else "torch"
        names = [Path(f.data["path"]).name for f in fs]
        extra = ""
        if rid == "TP-ENV-SAFETENSORS-OK":
            extra = f", {sum(f.data.get('tensors', 0) for f in fs)} tensors"
        out.append(
            finding(
                rid,
                f"checkpoint {path}: {len(fs)} {kind} file(s) complete",
                evidence=f"{_size(total)}{extra}: "
                + ", ".join(names[:6])
                + (f" and {len(names) - 6} more" if len(names) > 6 else ""),
                data={"path": path, "files": names, "bytes": total},
            )
        )
    return out


# --- memory, disk, GPUs --------------------------------------------------------------------


def _read_int(p: Path) -> int | None:
    try:
        s = p.read_text().strip()
    except OSError:
        return None
    return int(s) if s.isdigit() else None


def _stat_value(p: Path, key: str) -> int:
    try:
        for line in p.read_text().splitlines():
            k, _, v = line.partition(" ")
            if k == key and v.strip().isdigit():
                return int(v)
    except OSError:
        pass
    return 0


def cgroup_memory() -> tuple[int, int] | None:
    """``(limit, available under it)`` of the tightest cgroup memory limit on this process
    (v2 ``memory.max``, v1 ``memory.limit_in_bytes``), or ``None`` when none applies.

    Available is the limit minus the working set (usage minus inactive file cache, which
    the kernel reclaims before it OOM-kills), as container runtimes count it.
    """
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    root = Path("/sys/fs/cgroup")
    cands: list[tuple[Path, str, str, str]] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, ctrls, rel = parts
        rel = rel.lstrip("/")
        if ctrls == "":
            for base in (root, root / "unified"):
                cands.append((base / rel, "memory.max", "memory.current", "inactive_file"))
        elif "memory" in ctrls.split(","):
            cands.append((root / ctrls / rel, "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"))
    best = None
    for leaf, lim_f, use_f, inactive in cands:
        # Limits of every ancestor apply too; inside a container the mount shows only
        # its own part, so walk up to the mount root.
        d = leaf
        while True:
            lim = _read_int(d / lim_f)
            if lim is not None and lim < (1 << 60):
                use = _read_int(d / use_f) or 0
                ws = max(0, use - _stat_value(d / "memory.stat", inactive))
                avail = max(0, lim - ws)
                if best is None or avail < best[1]:
                    best = (lim, avail)
            if d == root or d.parent == d or root not in d.parents:
                break
            d = d.parent
    return best


def check_memory(required_gb: float | None, th: Thresholds) -> tuple[Finding | None, Skip | None]:
    try:
        import psutil

        vm = psutil.virtual_memory()
        avail, total = int(vm.available), int(vm.total)
    except Exception as e:  # noqa: BLE001 - ImportError, or psutil failing on this platform
        why = "psutil is not installed" if isinstance(e, ImportError) else f"psutil failed: {e}"
        if required_gb is None:
            return None, Skip("absent", why)
        return finding(
            "TP-ENV-MEM-UNKNOWN", f"available RAM could not be measured: {why}", data={"required_gb": required_gb}
        ), None
    data = {"available_bytes": avail, "total_bytes": total}
    src = f"{_gb(avail)} of {_gb(total)} available"
    cg = cgroup_memory()
    if cg is not None:
        data.update(cgroup_limit_bytes=cg[0], cgroup_available_bytes=cg[1])
        if cg[1] < avail:
            avail = cg[1]
            src = f"{_gb(avail)} available under this process's cgroup limit of {_gb(cg[0])} (machine: {src})"
        else:
            src += f" (cgroup limit {_gb(cg[0])})"
    data["usable_bytes"] = avail
    if required_gb is None:
        return finding("TP-ENV-MEM-INFO", f"RAM: {src}", data=data), None
    need = required_gb * GB
    want = need * (1 + th.env_mem_headroom)
    data.update(required_gb=required_gb, headroom=th.env_mem_headroom)
    if avail < need:
        return finding(
            "TP-ENV-MEM-INSUFFICIENT",
            f"RAM: {_gb(avail)} available, the run needs {required_gb:g} GB",
            evidence=f"{src}; short by {_gb(need - avail)}",
            data=data,
        ), None
    if avail < want:
        return finding(
            "TP-ENV-MEM-TIGHT",
            f"RAM: {_gb(avail)} available for {required_gb:g} GB required, less "
            f"than the {th.env_mem_headroom:.0%} headroom",
            evidence=f"{src}; wanted {_gb(want)}",
            data=data,
        ), None
    return finding(
        "TP-ENV-MEM-OK",
        f"RAM: {_gb(avail)} available for {required_gb:g} GB required",
        evidence=f"{src}; at least {_gb(want)} wanted ({th.env_mem_headroom:.0%} headroom)",
        data=data,
    ), None


def check_disk(output_dir: str, checkpoint_gb: float | None, keep: int, th: Thresholds) -> Finding:
    data: dict = {"path": output_dir}
    p = Path(output_dir)
    if p.exists() and not p.is_dir():
        return finding("TP-ENV-DISK-UNKNOWN", f"output directory {output_dir} is a file, not a directory", data=data)
    q = p.absolute()
    while not q.exists() and q.parent != q:
        q = q.parent
    where = output_dir if q == p.absolute() else f"{output_dir} (not there yet; measured at {q})"
    data["measured_at"] = str(q)
    try:
        du = shutil.disk_usage(q)
    except OSError as e:
        return finding(
            "TP-ENV-DISK-UNKNOWN", f"free space under {output_dir} could not be measured: {e.strerror or e}", data=data
        )
    data.update(free_bytes=du.free, total_bytes=du.total)
    if checkpoint_gb is None:
        return finding("TP-ENV-DISK-INFO", f"disk: {_gb(du.free)} free of {_gb(du.total)} under {where}", data=data)
    need = checkpoint_gb * keep * GB
    want = checkpoint_gb * (keep + th.env_disk_headroom_checkpoints) * GB
    data.update(checkpoint_gb=checkpoint_gb, keep=keep, headroom_checkpoints=th.env_disk_headroom_checkpoints)
    plan = f"{keep} x {checkpoint_gb:g} GB checkpoints"
    if du.free < need:
        return finding(
            "TP-ENV-DISK-INSUFFICIENT",
            f"disk: {_gb(du.free)} free under {where}, {plan} need {_gb(need)}",
            evidence=f"short by {_gb(need - du.free)}",
            data=data,
        )
    if du.free < want:
        return finding(
            "TP-ENV-DISK-TIGHT",
            f"disk: {_gb(du.free)} free under {where} holds {plan} but not "
            f"{th.env_disk_headroom_checkpoints} more while a save rotates",
            evidence=f"wanted {_gb(want)}",
            data=data,
        )
    return finding(
        "TP-ENV-DISK-OK",
        f"disk: {_gb(du.free)} free under {where} for {plan}",
        evidence=f"at least {_gb(want)} wanted ({th.env_disk_headroom_checkpoints} checkpoint(s) of "
        "headroom for rotation)",
        data=data,
    )


def check_gpus() -> tuple[list[Finding], Skip | None]:
    try:
        import pynvml
    except Exception:  # noqa: BLE001 - ImportError or a broken install
        return [], Skip("absent", "pynvml (nvidia-ml-py) is not installed: GPUs were not probed")
    try:
        pynvml.nvmlInit()
    except Exception as e:  # noqa: BLE001 - pynvml.NVMLError and friends
        return [finding("TP-ENV-GPU-INFO", f"GPUs: NVML could not be initialised ({e})", data={"error": str(e)})], None
    out = []
    try:
        drv = pynvml.nvmlSystemGetDriverVersion()
        drv = drv.decode() if isinstance(drv, bytes) else str(drv)
        n = pynvml.nvmlDeviceGetCount()
        if n == 0:
            out.append(finding("TP-ENV-GPU-INFO", f"GPUs: none (driver {drv})", data={"count": 0, "driver": drv}))
        for i in range(n):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(h)
            name = name.decode() if isinstance(name, bytes) else str(name)
            mem = pynvml.nvmlDeviceGetMemoryInfo(h)
            out.append(
                finding(
                    "TP-ENV-GPU-INFO",
                    f"GPU {i}: {name}, {_gb(mem.free)} free of {_gb(mem.total)}",
                    evidence=f"driver {drv}; {_gb(mem.used)} used by other processes",
                    data={
                        "index": i,
                        "name": name,
                        "free_bytes": int(mem.free),
                        "total_bytes": int(mem.total),
                        "driver": drv,
                    },
                )
            )
    except Exception as e:  # noqa: BLE001
        out.append(finding("TP-ENV-GPU-INFO", f"GPUs: NVML query failed ({e})", data={"error": str(e)}))
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass
    return out, None


# --- the report ----------------------------------------------------------------------------


def env_report(
    modules=(),
    python: str | None = None,
    cwd: str = ".",
    cwd_given: bool = False,
    checkpoints=(),
    required_gb: float | None = None,
    output_dir: str | None = None,
    checkpoint_gb: float | None = None,
    keep: int = 1,
    timeout: float = 120.0,
    th: Thresholds | None = None,
    clean_env: bool = False,
    mute=(),
) -> Report:
    """The one report about this machine (see the module documentation).

    With ``clean_env`` the child interpreters get a minimal environment
    (:func:`clean_environment`) instead of trainproof's own. ``mute``: ids reported as
    skipped, reason ``muted``.
    """
    global _PROBE_ENV
    _PROBE_ENV = clean_environment() if clean_env else None
    try:
        return _env_report(
            modules,
            python,
            cwd,
            cwd_given,
            checkpoints,
            required_gb,
            output_dir,
            checkpoint_gb,
            keep,
            timeout,
            th,
            clean_env,
            mute,
        )
    finally:
        _PROBE_ENV = None


def _env_report(
    modules,
    python,
    cwd,
    cwd_given,
    checkpoints,
    required_gb,
    output_dir,
    checkpoint_gb,
    keep,
    timeout,
    th,
    clean_env,
    mute=(),
) -> Report:
    th = th or Thresholds()
    findings: list[Finding] = []
    skipped: dict[str, Skip] = {}
    notes: list[str] = []
    meta: dict = {"cwd": cwd, "clean_env": clean_env}
    items = 0
    cwd_ok = os.path.isdir(cwd)
    if not cwd_ok and (cwd_given or modules):
        what = "is not a directory" if os.path.exists(cwd) else "does not exist"
        findings.append(
            finding(
                "TP-ENV-CWD-MISSING",
                f"--cwd {cwd} {what}" + (f": {len(modules)} import(s) not probed" if modules else ""),
                data={"cwd": cwd},
            )
        )
    if modules or python is not None:
        py = python or sys.executable
        info, why = probe_python(py, cwd if cwd_ok else None, timeout)
        if info is None:
            findings.append(
                finding(
                    "TP-ENV-PYTHON-UNUSABLE",
                    why + (f": {len(modules)} import(s) not probed" if modules else ""),
                    data={"python": py},
                )
            )
        else:
            meta["python"] = info
            findings.append(
                finding(
                    "TP-ENV-PYTHON-INFO",
                    f"Python {info['version']} ({info['implementation']}) at {info['executable']}",
                    evidence=f"prefix {info['prefix']}; imports run from {cwd}",
                    data={"python": py, **info},
                )
            )
            if cwd_ok:
                for m in modules:
                    items += 1
                    findings.append(probe_import(m, py, cwd, timeout))
    for c in checkpoints:
        items += 1
        findings.extend(check_checkpoint(c))
    f, skip = check_memory(required_gb, th)
    items += 1
    if f is not None:
        findings.append(f)
    if skip is not None:
        skipped["TP-ENV-MEM-INFO"] = skip
    items += 1
    findings.append(check_disk(output_dir if output_dir is not None else cwd, checkpoint_gb, keep, th))
    gpus, skip = check_gpus()
    findings.extend(gpus)
    if skip is not None:
        skipped["TP-ENV-GPU-INFO"] = skip
    if not (
        modules
        or checkpoints
        or required_gb is not None
        or checkpoint_gb is not None
        or python is not None
        or cwd_given
    ):
        notes.append(
            "nothing was required: give --module, --checkpoint, --required-gb or --checkpoint-gb for a verdict"
        )
    return report(
        cwd,
        "env",
        findings,
        ran=sorted({f.id for f in findings}),
        skipped=skipped,
        records=items,
        meta=meta,
        notes=notes,
        mute=mute,
    )
