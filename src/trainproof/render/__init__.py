"""Renderers: reports -> text (rich), JSON, and the report files a command writes besides
what it prints (SARIF, HTML). They never compute verdicts.

The report files are registered in :data:`RENDERERS`, one line each: every command of a
family offers its option (``--sarif``, ``--html``), hands the paths asked for to
:func:`trainproof.cli.output.emit_reports` as one ``outputs`` mapping, and the files are
written by looping over this table. Kept light: importing this module imports no renderer.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path

    from ..findings import Report


@dataclass(frozen=True)
class Renderer:
    """One report file a command can write.

    Attributes:
        name: the option is ``--<name>`` and the key of the command's ``outputs`` mapping.
        module: the module (dotted name) whose ``write(reports, path, *, baseline=None)``
            writes the file; imported only when the file is asked for.
            ``baseline``: ``compare``'s known-good run's report, or ``None``.
        starts: how the start of such a file looks: its first bytes (case-folded, after
            leading white space) and a word its first 512 bytes hold. A regular file at the
            path that does not look so is not a report to replace (the training log, taken
            as the option's value).
        help: the option's help text.
        default_file: the file written when the option is given without a value (``None``:
            the option needs one).
        charts: the file draws chart data (:mod:`trainproof.render.charts`): commands
            attach it only when such a file is asked for.
        everywhere: every command offers it (the preflight family too), not only the
            commands that read logs (charts need a log).
        announce: what to say on stderr once written (``wrote the <announce> to PATH``), or
            ``None`` to say nothing.
    """

    name: str
    module: str
    starts: tuple[bytes, bytes]
    help: str
    default_file: str | None = None
    charts: bool = False
    everywhere: bool = False
    announce: str | None = None

    @property
    def option(self) -> str:
        """The command-line option, ``--<name>``."""
        return f"--{self.name}"

    def writer(self) -> Callable[..., None]:
        """The module's ``write`` function (imports the module)."""
        return import_module(self.module).write


#: The report files, in the order their options are listed and their files written.
RENDERERS: tuple[Renderer, ...] = (
    # A SARIF log names its schema first; a JSONL training log also starts with "{".
    Renderer(
        "sarif",
        "trainproof.render.sarif",
        (b"{", b"sarif"),
        "Also write the findings as SARIF 2.1.0 (GitHub code scanning) to this file.",
        everywhere=True,
    ),
    Renderer(
        "html",
        "trainproof.render.html",
        (b"<!doctype html", b"<html"),
        "Also write a self-contained HTML report with charts (default trainproof-report.html).",
        default_file="trainproof-report.html",
        charts=True,
        announce="HTML report",
    ),
)


def renderer(name: str) -> Renderer:
    """The registered renderer ``name``.

    Raises:
        KeyError: no renderer has that name.
    """
    for r in RENDERERS:
        if r.name == name:
            return r
    raise KeyError(name)


def needs_charts(outputs: Iterable[str]) -> bool:
    """Whether any of the report files ``outputs`` (renderer names) draws chart data."""
    names = set(outputs)
    return any(r.charts for r in RENDERERS if r.name in names)


def write_files(reports: list[Report], outputs: dict[str, Path], baseline: Report | None = None) -> list[Renderer]:
    """Write each report file of ``outputs`` (renderer name -> path), in :data:`RENDERERS`
    order; returns the renderers written.

    Raises:
        OSError: a file cannot be written (those before it are written).
        KeyError: a name that is not a renderer.
    """
    written = []
    for name in outputs:
        renderer(name)
    for r in RENDERERS:
        if r.name in outputs:
            r.writer()(list(reports), outputs[r.name], baseline=baseline)
            written.append(r)
    return written


def without_runs(outputs: dict[str, Path]) -> dict[str, Path]:
    """The report files of ``outputs`` written when a command judged nothing (an error
    before any log was read): those every command offers (:attr:`Renderer.everywhere`),
    such as a SARIF log with no results, which a CI upload step still expects."""
    return {k: v for k, v in outputs.items() if renderer(k).everywhere}
