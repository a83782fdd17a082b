"""Stopping a command by signal: SIGTERM (a cancelled CI job, ``timeout``) and a SIGINT
inherited as ignored (a script's background job) handled as Ctrl-C, so every command
unwinds the same way (``doctor`` ends its workers, report files stay whole)."""

from __future__ import annotations

import os
import sys

#: The signals that asked this process to stop (see :func:`interrupt_handlers`). The
#: ``KeyboardInterrupt`` a handler raises can land in code that swallows it (a library's
#: bare ``except`` during an import); a loop that runs on (``watch``) checks this too.
STOP: list[int] = []


def stop_requested() -> None:
    """Raise ``KeyboardInterrupt`` if a stop signal came and was swallowed on its way."""
    if STOP:
        raise KeyboardInterrupt


def _in_exec_string(frame, catcher=None) -> bool:
    """Whether a ``KeyboardInterrupt`` raised in ``frame`` would leave code compiled from a
    string (``exec(str)``, ``eval(str)``: the code ``dataclasses`` and
    ``collections.namedtuple`` run while a module is imported) on its way to ``catcher``,
    the code object of the function that catches it (:func:`trainproof.cli.main`).

    The frames below the catcher do not count: the exception never reaches them, and a
    harness that runs the whole program from a string (pytest-xdist's workers,
    ``python -c``) puts such frames at the bottom of every stack. Without a catcher on the
    stack, every frame counts."""
    while frame is not None:
        if catcher is not None and frame.f_code is catcher:
            return False
        if frame.f_code.co_filename == "<string>":
            return True
        frame = frame.f_back
    return False


def command_name(args: list[str]) -> str | None:
    """The subcommand in ``args``: the first word that is not one of the group's options."""
    for a in args:
        if not a.startswith("-"):
            return a
    return None


def by_interrupt(e: BaseException) -> bool:
    """Whether ``e`` was caused by a ``KeyboardInterrupt`` (a signal that arrived while
    code that wraps exceptions ran)."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


def stopped_watching(verdict: str | None, code: int) -> str:
    """The line ``watch`` ends with when it is stopped: its last verdict and exit code."""
    return f"trainproof: stopped watching; last verdict {verdict or '-'} (exit {code})"


def interrupt_handlers(catcher=None) -> dict:
    """Handle SIGTERM (a CI job cancelled, ``timeout``) as Ctrl-C: the command unwinds,
    ``doctor`` ends its workers, report files are whole or absent, and the exit code
    follows the policy (``watch``: its last verdict's; otherwise 2). A SIGINT inherited as
    ignored (a shell script's background job, ``trainproof watch LOG &``) is handled as
    Ctrl-C too, so that ``kill -INT`` stops the command.

    ``catcher`` is the code object of the function that catches the ``KeyboardInterrupt``
    (default: the caller's, :func:`trainproof.cli.main`'s); see :func:`_in_exec_string`.

    Returns ``{signal: previous handler}`` for what was changed, for :func:`trainproof.cli.main` to put
    back (tests call it in-process); empty where nothing could be set (not the main
    thread)."""
    import signal
    import threading

    if catcher is None:
        catcher = sys._getframe(1).f_code

    if threading.current_thread() is not threading.main_thread():
        return {}

    def interrupt(signum, frame):
        STOP.append(signum)
        # In importlib's own code the handler may run inside a weakref callback (a module
        # lock's ``cb``), where CPython prints an exception and drops it: the signal would
        # be lost and the command would finish and write its reports. Sent again a moment
        # later, it lands outside, as below.
        in_import = frame is not None and frame.f_code.co_filename.startswith("<frozen importlib")
        if in_import or _in_exec_string(frame, catcher):
            # A KeyboardInterrupt that leaves code run by exec(str) (dataclasses build
            # their methods so, during imports) makes CPython end the process by SIGINT
            # once it exits, whatever the exit code: send the signal again a moment
            # later, out of that code.
            import threading

            t = threading.Timer(0.02, os.kill, (os.getpid(), signum))
            t.daemon = True
            t.start()
            return
        raise KeyboardInterrupt

    previous = {}
    try:
        previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, interrupt)
        if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.default_int_handler):
            # Python's own Ctrl-C handler, or none at all: the same one as for SIGTERM.
            previous[signal.SIGINT] = signal.signal(signal.SIGINT, interrupt)
    except ValueError:  # pragma: no cover - a sub-interpreter's main thread
        pass
    # A handler not set from Python reads as None and cannot be put back; the default
    # action is the closest (that is what a fresh interpreter has for SIGTERM).
    return {s: (signal.SIG_DFL if h is None else h) for s, h in previous.items()}
