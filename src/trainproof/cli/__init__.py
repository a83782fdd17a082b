"""The ``trainproof`` command line: click options -> the layers -> printed output -> exit code.

Exit codes (every command): 0 judged, no FAIL (WARN allowed) · 1 at least one FAIL about
the run · 2 could not judge (missing/unreadable/empty input, no loss, NOT-CHECKED, bad
option or configuration, internal error).

:mod:`.app` holds the group, its lazy command table and :func:`main` (the entry point, and
the one place the process exits); :mod:`.commands` one thin module per command;
:mod:`.options` every option, declared once; :mod:`.output` printing reports and the exit
code (:func:`~trainproof.cli.output.emit_reports`); :mod:`.signals` stopping by signal.
"""

from __future__ import annotations

from .app import ALIASES, COMMANDS, cli, load_command, main

__all__ = ["ALIASES", "COMMANDS", "cli", "load_command", "main"]
