"""What ``trainproof watch`` shows while it follows a log: a line per poll (or one JSON
object per poll), the new findings under it, and on a terminal a status line that updates
in place. The poll loop (``trainproof.cli.commands.watch``) decides; this only displays.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path


class WatchPresenter:
    """The display of one ``watch``.

    Args:
        logfile: the log followed (named in the terminal's status line).
        as_json: one JSON object per poll on stdout, nothing else.
        console: a function returning the rich console reports print to; called only when
            something is printed through it.
        tty: stdout is a terminal (and not ``as_json``): the status line updates in place.
    """

    def __init__(self, logfile: Path, as_json: bool, console: Callable, tty: bool) -> None:
        self.logfile = logfile
        self.as_json = as_json
        self._console = console
        self.live = None
        self._last: str | None = None  # the last poll line printed, without its time
        if tty and not as_json:
            from rich.live import Live
            from rich.text import Text

            self.live = Live(
                Text("trainproof watch: waiting for the log"), console=console(), transient=False, refresh_per_second=4
            )
            self.live.start()

    def _echo(self, text: str) -> None:
        import click

        click.echo(text)

    def poll(self, p) -> None:
        """Show one poll (:class:`~trainproof.live.watcher.Poll`): its status line, and each
        finding it made new under it. In a pipe (a CI log) the line is printed only when it
        says something the last one did not (records, verdict, new findings, a stall): an
        idle run prints nothing. ``--json`` prints every poll, as documented."""
        said = (
            f"records={p.records} verdict={p.verdict or '-'}"
            + (f" new={','.join(p.new)}" if p.new else "")
            + (" STALLED" if p.stalled else "")
        )
        line = f"{time.strftime('%H:%M:%S')} {said}"
        if self.as_json:
            self._echo(json.dumps(p.to_dict()))
            return
        if self.live is not None:
            from rich.text import Text

            self.live.update(Text(f"trainproof watch {self.logfile}: {line}"))
        elif said != self._last:
            self._last = said
            self._echo(line)
        if p.new and p.report is not None:
            for f in p.report.findings:
                if f.id in p.new:
                    msg = f"  {f.level.value} {f.id}: {f.message}"
                    (self.live.console.print(msg) if self.live is not None else self._echo(msg))

    def final(self, report) -> None:
        """Stop the status line and print ``report`` in full (a run that FAILed under
        ``--until-fail``); nothing with ``as_json``."""
        self.stop()
        if not self.as_json and report is not None:
            from ..render import text as render_text

            render_text.render(self._console(), [report])

    def stop(self) -> None:
        """Stop the status line (idempotent)."""
        if self.live is not None:
            self.live.stop()
            self.live = None
