"""What every command does with its reports: print them (text or ``--json``), write the
``--sarif`` and ``--html`` files, and return the exit code (:func:`emit_reports`).

Nothing here exits the process: a command returns :func:`emit_reports`' code, and a
failure found on the way (a bad configuration, a report path that holds a log) prints its
one line and raises :class:`click.exceptions.Exit` with code 2, which the group turns into
the process's exit code in one place (:func:`trainproof.cli.main`). Kept light: rich,
numpy, the readers and the rules are imported where they are used.
"""

from __future__ import annotations

import functools
import os
import re
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from rich.console import Console

    from ..findings import Report
    from ..render import Renderer


def stdout_console() -> Console:
    """The console reports print to: a terminal's width where there is one (or ``COLUMNS``),
    else 120 columns with long lines kept whole."""
    from rich.console import Console

    tty = sys.stdout.isatty()
    columns = bool(os.environ.get("COLUMNS"))
    # A pipe or a CI log has no width; 120 columns keep the doctor table readable there,
    # and long lines stay whole (a log viewer wraps them). A terminal, or COLUMNS set,
    # gives a width: paragraphs wrap to it with their indent kept.
    width = None if tty or columns else 120
    return _lazy_emoji(Console)(soft_wrap=not (tty or columns), highlight=False, width=width)


@functools.cache
def _lazy_emoji(console_class: type) -> type:
    """``console_class`` replacing emoji codes only in text that holds one: rich's
    replacement loads its table of 3,600 emoji names (about 5 ms of start-up) on the first
    string it is given, and a report seldom holds a ``:name:`` code. Text without one prints
    the same either way, so it skips the replacement; text with one gets it as before."""

    # Rich replaces what ``:(\S*?)(?:-(emoji|text))?:`` matches, which matches exactly
    # where this does.
    code = re.compile(r":\S*:")

    class LazyEmojiConsole(console_class):
        def render_str(self, text, *, emoji=None, **kwargs):
            if emoji is None and not code.search(text):
                emoji = False
            return super().render_str(text, emoji=emoji, **kwargs)

    return LazyEmojiConsole


def echo_error(message: str) -> None:
    """Print ``trainproof: <message>`` on stderr as one line: a message names paths and
    values from the input, so its control characters are escaped (as the text report
    prints them) and cannot forge or erase lines of the output."""
    from ..redact import mask
    from ..render.text import printable

    click.echo(f"trainproof: {printable(mask(message))}", err=True)


def fail(message: str, command: str | None = None, as_json: bool = False):
    """Say why the command cannot judge (with ``as_json``, also as the JSON document of
    ``command``) and stop it with exit code 2.

    Raises:
        click.exceptions.Exit: always, with code 2.
    """
    if as_json:
        from ..render import json as render_json

        click.echo(render_json.dumps(render_json.document([], command or invoked("trainproof"), error=message)))
    echo_error(message)
    raise click.exceptions.Exit(2)


def invoked(default: str) -> str:
    """The running command's name as typed (an old name such as ``epoch`` stays ``epoch``,
    :data:`trainproof.cli.ALIASES`), or ``default`` outside a click context."""
    ctx = click.get_current_context(silent=True)
    return ctx.info_name if ctx is not None and ctx.info_name else default


def settings(command: str, as_json: bool, maps=(), mute=(), config_path: Path | None = None):
    """``(--map overrides, configuration)`` of a command: ``--map`` parsed, the configuration
    loaded from ``config_path`` or the nearest pyproject.toml with ``--mute`` added.

    Raises:
        click.exceptions.Exit: a bad ``--map`` or configuration (its line printed; exit 2).
    """
    from ..aliases.mapping import MappingError, parse_map_option
    from ..config import ConfigError, load_config

    try:
        overrides = parse_map_option(maps)
        cfg = load_config(config_path, extra_mute=mute)
    except (MappingError, ConfigError) as e:
        fail(str(e), command, as_json)
    return overrides, cfg


def history_of(option: str | None, cfg) -> str | None:
    """The run history a command records into: ``--history`` (a ``postgresql://`` URL as
    given, a path as typed), else the configuration's ``history``, else ``None``. An empty
    ``--history ""`` turns a configured history off for the command."""
    if option is not None:
        return option or None
    return getattr(cfg, "history", None)


def history_errors(reports: list[Report], error: str | None) -> str | None:
    """``error`` with the reports' run-history errors after it (each once): a store that
    could not be used is said on its own line and makes the exit code 2 (unless a run
    FAILs), while each verdict stays the run's own."""
    lines = list(dict.fromkeys(r.history_error for r in reports if getattr(r, "history_error", None)))
    if not lines:
        return error
    return "; ".join([*([error] if error else []), *lines])


def not_a_report(path: Path | None, renderer: Renderer) -> str | None:
    """Why ``path`` must not be overwritten by ``renderer``'s report file, or ``None``: a
    regular file (not a link, FIFO or device: those are handled by the atomic write)
    holding something other than such a report (:attr:`Renderer.starts`), e.g. the training
    log itself when ``--html`` took the next argument as its value (``epoch --html run.jsonl``)."""
    if path is None:
        return None
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
        return None
    try:
        with open(path, "rb") as f:
            head = f.read(512).lstrip().lower()
    except OSError:
        return None
    start, word = renderer.starts
    if head.startswith(start) and word in head:
        return None
    option = renderer.option
    return (
        f"{option} {path}: the file exists and is not a trainproof report (a training log?); "
        f"not overwritten. Give {option} a new file name, after the log (`epoch LOG {option} report`)"
    )


def write_outputs(reports: list[Report], outputs: dict[str, Path] | None, baseline: Report | None = None) -> None:
    """Write the report files asked for (``outputs``: renderer name -> path, see
    :data:`trainproof.render.RENDERERS`), and say on stderr where those that announce
    themselves went. A file at a report path that is not such a report (the log itself,
    taken as the option's value) is left alone. ``baseline``: ``compare``'s baseline report.

    Raises:
        click.exceptions.Exit: such a file, or a report that cannot be written (one line
            printed; exit 2).
    """
    from ..render import RENDERERS, write_files

    outputs = dict(outputs or {})
    for r in RENDERERS:
        why = not_a_report(outputs.get(r.name), r)
        if why is not None:
            fail(why)
    try:
        for r in write_files(reports, outputs, baseline=baseline):
            if r.announce is not None:
                echo_error(f"wrote the {r.announce} to {outputs[r.name]}")
    except OSError as e:
        # The reason and the path as asked for; str(e) would print the path unescaped.
        where = e.filename if e.filename is not None else ""
        fail(f"cannot write report {where}: {e.strerror or e}")


def emit_reports(
    reports: list[Report],
    command: str,
    as_json: bool,
    *,
    summary: bool = False,
    extra: dict | None = None,
    error: str | None = None,
    outputs: dict[str, Path] | None = None,
    view: str = "default",
    only=None,
    fail_on: str = "FAIL",
) -> int:
    """Write the report files asked for, print ``reports`` (the text report, or with
    ``as_json`` the JSON document of ``command``), and return the exit code by the shared
    policy (:func:`trainproof.findings.exit_code`).

    ``summary``: doctor's view (a table of runs, the totals line; ``extra["ignored"]``
    counted). ``error``: why nothing could be judged (printed on stderr, and in the JSON
    document). ``outputs``: the report files asked for (renderer name -> path, the
    command's ``outputs`` parameter; :func:`write_outputs`). The reports are printed as they were built: muting is the check's (the
    rule engine's, :func:`trainproof.preflight.apply_mute`), never done here.
    ``fail_on``: which verdict exits 1 (``doctor --fail-on``; :func:`trainproof.findings.exit_code`).

    Raises:
        click.exceptions.Exit: a report file that cannot be written (exit 2).
    """
    from ..findings import exit_code

    error = history_errors(reports, error)
    write_outputs(reports, outputs)
    if as_json:
        from ..render import json as render_json

        click.echo(render_json.dumps(render_json.document(reports, command, error=error, extra=extra)))
    else:
        from ..render import text as render_text

        ignored = len((extra or {}).get("ignored") or ()) if summary else 0
        render_text.render(stdout_console(), reports, summary=summary, view=view, only=only, ignored=ignored)
        if error:
            echo_error(error)
    return exit_code(reports, error, fail_on)
