"""What every command shares: output options, configuration, and emitting reports.

The ``trainproof`` group (cli.py) and the preflight commands use these, so every command
prints text, ``--json``, ``--sarif`` and ``--html`` the same way and exits by the same
policy (:func:`trainproof.findings.exit_code`).
"""
from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

# Kept light on purpose: `trainproof --version`, `--help` and `epoch --json` import this module,
# so rich, numpy, the readers and the rules are imported where they are used.
if TYPE_CHECKING:
    from rich.console import Console

    from .findings import Report

#: The reader names, in sniffing order, for ``--format`` choices: a static copy of
#: ``[r.name for r in trainproof.formats.READERS]`` so that building the options does not
#: import every reader (tests/test_startup.py checks the two agree).
FORMAT_NAMES = ("tfevents", "hf", "jsonl", "csv", "coqui", "mlflow", "console")


def _stdout() -> Console:
    from rich.console import Console

    tty = sys.stdout.isatty()
    columns = bool(os.environ.get("COLUMNS"))
    # A pipe or a CI log has no width; 120 columns keep the doctor table readable there,
    # and long lines stay whole (a log viewer wraps them). A terminal, or COLUMNS set,
    # gives a width: paragraphs wrap to it with their indent kept.
    width = None if tty or columns else 120
    return Console(soft_wrap=not (tty or columns), highlight=False, width=width)


def echo_error(message: str) -> None:
    """Print ``trainproof: <message>`` on stderr as one line: a message names paths and
    values from the input, so its control characters are escaped (as the text report
    prints them) and cannot forge or erase lines of the output."""
    from .render.text import printable

    click.echo(f"trainproof: {printable(message)}", err=True)


def _fail_usage(ctx_json: bool, command: str, message: str) -> None:
    from .render import json as render_json

    if ctx_json:
        click.echo(render_json.dumps(render_json.document([], command, error=message)))
    echo_error(message)
    sys.exit(2)


def common_options(fn):
    """Options shared by the commands that read logs."""
    opts = [
        click.option("--format", "fmt", type=click.Choice(["auto", *FORMAT_NAMES]), default="auto",
                     show_default=True, help="Log format; auto sniffs the content."),
        click.option("--map", "maps", multiple=True, metavar="CANON=COLUMN",
                     help="Read a canonical metric from a column, e.g. --map loss=train_mse (repeatable)."),
        click.option("--json", "as_json", is_flag=True, help="Print one JSON document (see the published schema)."),
        click.option("--mute", multiple=True, metavar="TP-ID", help="Do not run this rule (repeatable)."),
        click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
                     help="TOML file with [tool.trainproof] settings (default: nearest pyproject.toml)."),
        click.option("--sarif", "sarif_path", type=click.Path(dir_okay=False, path_type=Path),
                     help="Also write the findings as SARIF 2.1.0 (GitHub code scanning) to this file."),
        click.option("--html", "html_path", is_flag=False, flag_value="trainproof-report.html", default=None,
                     type=click.Path(dir_okay=False, path_type=Path), metavar="[PATH]",
                     help="Also write a self-contained HTML report with charts (default trainproof-report.html)."),
    ]
    for o in reversed(opts):
        fn = o(fn)
    return fn


def invoked(default: str) -> str:
    """The running command's name as typed (an old name such as ``epoch`` stays ``epoch``,
    :data:`trainproof.cli.ALIASES`), or ``default`` outside a click context."""
    ctx = click.get_current_context(silent=True)
    return ctx.info_name if ctx is not None and ctx.info_name else default


def _setup(command: str, as_json: bool, maps, mute, config_path):
    from .aliases import MappingError, parse_map_option
    from .config import ConfigError, load_config

    try:
        overrides = parse_map_option(maps)
        cfg = load_config(config_path, extra_mute=mute)
    except (MappingError, ConfigError) as e:
        _fail_usage(as_json, command, str(e))
    return overrides, cfg


#: How the start of a report file looks, per option (its first bytes, and a word its first
#: 512 bytes hold): a regular file at the report path that does not is not a report to
#: replace. A SARIF log names its schema first; a JSONL training log also starts with "{".
_REPORT_STARTS = {"--html": (b"<!doctype html", b"<html"), "--sarif": (b"{", b"sarif")}


def _not_a_report(path: Path | None, option: str) -> str | None:
    """Why ``path`` must not be overwritten by ``option``'s report, or ``None``: a regular
    file (not a link, FIFO or device: those are handled by the atomic write) holding
    something other than such a report, e.g. the training log itself when ``--html`` took
    the next argument as its value (``epoch --html run.jsonl``)."""
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
    start, word = _REPORT_STARTS[option]
    if head.startswith(start) and word in head:
        return None
    return (f"{option} {path}: the file exists and is not a trainproof report (a training log?); "
            f"not overwritten. Give {option} a new file name, after the log (`epoch LOG {option} report`)")


def _write_outputs(reports: list[Report], sarif_path: Path | None, html_path: Path | None,
                   compare_with: Report | None = None) -> None:
    """Write the SARIF and HTML files asked for, and say on stderr where each went; a file at
    a report path that is not such a report (the log itself, taken as the option's value)
    is left alone, and that or a failure to write is one line, exit 2."""
    for path, option in ((sarif_path, "--sarif"), (html_path, "--html")):
        why = _not_a_report(path, option)
        if why is not None:
            echo_error(why)
            sys.exit(2)
    try:
        if sarif_path is not None:
            from .render.sarif import write_sarif

            write_sarif(list(reports), sarif_path, base=Path.cwd())
        if html_path is not None:
            from .render.html import write_html

            if compare_with is not None:
                write_html([compare_with, *reports], html_path, title="trainproof compare", compare=True)
            else:
                write_html(reports, html_path)
            echo_error(f"wrote the HTML report to {html_path}")
    except OSError as e:
        # The reason and the path as asked for; str(e) would print the path unescaped.
        where = e.filename if e.filename is not None else ""
        echo_error(f"cannot write report {where}: {e.strerror or e}")
        sys.exit(2)


def _emit(reports: list[Report], command: str, as_json: bool, summary: bool, extra: dict | None = None,
          error: str | None = None, sarif_path: Path | None = None, html_path: Path | None = None,
          view: str = "default", only=None) -> None:
    from .findings import exit_code

    _write_outputs(reports, sarif_path, html_path)
    if as_json:
        from .render import json as render_json

        click.echo(render_json.dumps(render_json.document(reports, command, error=error, extra=extra)))
    else:
        from .render import text as render_text

        ignored = len((extra or {}).get("ignored") or ()) if summary else 0
        render_text.render(_stdout(), reports, summary=summary, view=view, only=only, ignored=ignored)
        if error:
            echo_error(error)
    sys.exit(exit_code(reports, error))


def output_options(fn):
    """``--json``, ``--sarif PATH``, ``--mute`` and ``--config`` for commands that do not read logs."""
    opts = [
        click.option("--json", "as_json", is_flag=True, help="Print one JSON document (see the published schema)."),
        click.option("--mute", multiple=True, metavar="TP-ID", help="Do not report this id (repeatable)."),
        click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
                     help="TOML file with [tool.trainproof] settings (default: nearest pyproject.toml)."),
        click.option("--sarif", "sarif_path", type=click.Path(dir_okay=False, path_type=Path),
                     help="Also write the findings as SARIF 2.1.0 (GitHub code scanning) to this file."),
    ]
    for o in reversed(opts):
        fn = o(fn)
    return fn


def emit(reports: list[Report], command: str, as_json: bool, *, sarif_path: Path | None = None,
         mute=(), error: str | None = None, extra: dict | None = None) -> None:
    """Print ``reports`` (text or JSON), write SARIF when asked, and exit by the shared policy.

    The ids in ``mute`` are muted first as the engine mutes a rule
    (:func:`trainproof.preflight.apply_mute`: skipped, reason ``muted``).
    """
    from .preflight import apply_mute

    for r in reports:
        apply_mute(r, mute)
    _emit(reports, command, as_json, summary=False, extra=extra, error=error, sarif_path=sarif_path)
