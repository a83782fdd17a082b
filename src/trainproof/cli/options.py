"""Every command-line option declared once: its flags, type, default and help text.

Commands take the options they need by name (:func:`options`), so an option means the
same and reads the same in every command that has it. Kept light: building the options
imports click and the two registration tables only (the readers' and the renderers'; no
reader or renderer), as ``trainproof --help`` loads this module.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import click

from ..formats import READER_MODULES
from ..render import RENDERERS, Renderer

#: The reader names, in sniffing order, for ``--format`` choices: the formats' registration
#: (a module's name is its reader's), read without importing any reader.
FORMAT_NAMES = READER_MODULES

_CONFIG_HELP = "TOML file with [tool.trainproof] settings (default: nearest pyproject.toml)."

#: name -> (click.option args, keyword arguments).
OPTIONS: dict[str, tuple[tuple[str, ...], dict]] = {
    "format": (
        ("--format", "fmt"),
        dict(
            type=click.Choice(["auto", *FORMAT_NAMES]),
            default="auto",
            show_default=True,
            help="Log format; auto sniffs the content.",
        ),
    ),
    "map": (
        ("--map", "maps"),
        dict(
            multiple=True,
            metavar="CANON=COLUMN",
            help="Read a canonical metric from a column, e.g. --map loss=train_mse (repeatable).",
        ),
    ),
    "json": (("--json", "as_json"), dict(is_flag=True, help="Print one JSON document (see the published schema).")),
    "mute": (
        ("--mute",),
        dict(
            multiple=True,
            metavar="TP-ID",
            help="Do not run this check; it is reported as skipped, reason muted (repeatable).",
        ),
    ),
    # readable=False: an unreadable configuration is the loader's to report (exit 2, in the
    # JSON document with --json).
    "config": (
        ("--config", "config_path"),
        dict(type=click.Path(dir_okay=False, readable=False, path_type=Path), help=_CONFIG_HELP),
    ),
    "history": (
        ("--history",),
        dict(
            metavar="PATH|URL",
            default=None,
            help="Record each judged run into this run history (an SQLite file, created if missing, or a "
            "postgresql:// URL) and judge it against its experiment's recent healthy runs there "
            "(default: [tool.trainproof] history; none: nothing is written; an empty value turns a configured "
            "history off).",
        ),
    ),
    "experiment": (
        ("--experiment",),
        dict(
            metavar="NAME",
            default=None,
            callback=lambda ctx, param, value: experiment_name(value),
            help="With --history: the experiment runs are recorded under and judged within (default: the "
            "tracker's project or experiment, else the folder of the run family, else the log's folder).",
        ),
    ),
}


def _file_option(r: Renderer) -> tuple[tuple[str, ...], dict]:
    """The option of a report file (:data:`trainproof.render.RENDERERS`)."""
    kwargs: dict = dict(type=click.Path(dir_okay=False, path_type=Path), help=r.help)
    if r.default_file is not None:
        kwargs.update(is_flag=False, flag_value=r.default_file, default=None, metavar="[PATH]")
    return (r.option, _dest(r)), kwargs


def _dest(r: Renderer) -> str:
    return f"{r.name}_path"


OPTIONS.update({r.name: _file_option(r) for r in RENDERERS})
#: The names of the report-file options: a command that takes any gets them as one
#: ``outputs`` parameter (renderer name -> path, for those given).
FILE_OPTIONS = tuple(r.name for r in RENDERERS)


def options(*names: str, **changes: dict):
    """A decorator adding the options ``names`` (keys of :data:`OPTIONS`), in that order.

    ``changes`` replaces keyword arguments of one option for one command, e.g.
    ``json={"help": "One JSON line per poll."}``: the flag and its meaning stay the same.

    Raises:
        KeyError: a name that is not an option.
    """
    decls = []
    for name in names:
        args, kwargs = OPTIONS[name]
        decls.append(click.option(*args, **{**kwargs, **changes.get(name, {})}))
    files = [r for r in RENDERERS if r.name in names]

    def add(fn):
        if files:
            fn = _collect_outputs(fn, files)
        for o in reversed(decls):
            fn = o(fn)
        return fn

    return add


def _collect_outputs(fn, files: list[Renderer]):
    """``fn`` called with the report-file options ``files`` as one ``outputs`` keyword
    (renderer name -> path, for the options given), in place of one keyword each."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        given = {r.name: kwargs.pop(_dest(r)) for r in files}
        return fn(*args, outputs={k: v for k, v in given.items() if v is not None}, **kwargs)

    return call


#: The options of the commands that read logs (judge, doctor, compare): every report file.
log_options = options("format", "map", "json", "mute", "config", *FILE_OPTIONS)
#: The options of the commands that check what a run starts from (the preflight family):
#: the report files that need no log.
output_options = options("json", "mute", "config", *(r.name for r in RENDERERS if r.everywhere))


def seconds(positive: bool):
    """A click callback: a finite number of seconds, above 0 (``positive``) or at least 0;
    NaN, infinities and negatives are usage errors (exit 2), not a loop that never sleeps
    or never stalls."""

    def check(ctx, param, value):
        if value is None:
            return value
        if not math.isfinite(value) or value < 0 or (positive and value == 0):
            raise click.BadParameter(
                f"{value:g} is not a {'positive' if positive else 'non-negative'} finite number of seconds"
            )
        return value

    return check


def location(arg: str | None, command: str | None = None, as_json: bool = False) -> str | Path | None:
    """A PATH argument: an fsspec URL stays a string (a Path would collapse its ``//``).

    Raises:
        click.exceptions.Exit: a URL that holds a password (its line printed with the
            password as ``***``, as the JSON document of ``command`` with ``as_json``;
            exit 2).
    """
    if arg is None:
        return None
    from ..formats import ReadError
    from ..remote import is_url, refuse_password

    try:
        refuse_password(arg)
    except ReadError as e:
        from .output import fail

        fail(str(e), command, as_json)
    return arg if is_url(arg) else Path(arg)


def experiment_name(value: str | None) -> str | None:
    """``--experiment``'s value, checked: ``None`` when not given; a name with nothing but
    spaces, or with a control character (a newline would split the history's listing), is
    refused as a usage error; spaces around it are dropped (``"mnist "`` is ``mnist``).

    Raises:
        click.BadParameter: a blank name or one with a control character.
    """
    if value is None:
        return None
    name = value.strip()
    if not name or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise click.BadParameter(f"{value!r}: an experiment's name needs a printable, non-blank name")
    return name
