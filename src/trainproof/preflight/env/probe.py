"""The import sandbox of ``trainproof env``: a module is imported in its own child
interpreter, never in trainproof's, so a segfault, an ``abort()`` or an import that hangs is
reported, not suffered.

The child runs ``python -X faulthandler`` from the run's working directory with a hard
timeout, in its own process group (killed whole when it overruns), with stdin closed and
its argv a list (never a shell). It writes its result as one JSON line after a marker; a
child that dies first is judged from its exit status and the faulthandler dump on its
stderr, which names the Python line the crash or the hang happened at.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

from ...findings import Finding
from .. import finding


def _tail(text: str, lines: int = 3, width: int = 300) -> str:
    kept = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    out = " | ".join(kept[-lines:])
    return out if len(out) <= width else "…" + out[-width:]


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


def clean_environment() -> dict[str, str]:
    """The minimal environment of a ``--clean-env`` probe (see ``CLEAN_ENV_KEEP``)."""
    return {k: v for k, v in os.environ.items() if k in CLEAN_ENV_KEEP}


def _run(argv: list[str], cwd: str | None, timeout: float, env: dict[str, str] | None = None) -> _Run:
    """Run ``argv`` (a list: never through a shell) with a hard timeout, in the environment
    ``env`` (``None``: trainproof's own); OSError when it cannot be started."""
    t0 = time.monotonic()
    p = subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=(os.name == "posix"),
        env=env,
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


def probe_python(
    python: str, cwd: str | None, timeout: float, env: dict[str, str] | None = None
) -> tuple[dict | None, str]:
    """``(info, "")`` when ``python`` runs as Python 3 (started in ``cwd``, in the
    environment ``env``, ``None`` for trainproof's own, within ``timeout`` seconds), else
    ``(None, why not)``. ``info``: version, executable, prefix, implementation, major."""
    try:
        run = _run([python, "-c", _PY_PROBE, _MARKER], cwd, timeout, env)
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


def probe_import(name: str, python: str, cwd: str | None, timeout: float, env: dict[str, str] | None = None) -> Finding:
    """Import ``name`` in a child ``python`` started in ``cwd`` in the environment ``env``
    (``None``: trainproof's own), stopped after ``timeout`` seconds; one finding about it
    (``TP-ENV-IMPORT-OK``, ``-FAIL``, ``-TIMEOUT``, ``-CRASH`` or ``TP-ENV-PYTHON-UNUSABLE``)."""
    data: dict = {"module": name, "python": python, "cwd": cwd, "timeout_s": timeout}
    try:
        # The child stops itself at the timeout (dumping its stack); the parent's limit is
        # a backstop for a child that hangs before the probe runs.
        run = _run(
            [python, "-X", "faulthandler", "-c", _IMPORT_PROBE, name, _MARKER, repr(timeout)],
            cwd,
            timeout + 5.0,
            env,
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
