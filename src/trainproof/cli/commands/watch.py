"""``trainproof watch LOG``: judge a log while the run writes it."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import SimpleNamespace

import click

from ..options import options, seconds
from ..output import echo_error, history_of, settings, stdout_console
from ..signals import by_interrupt, stop_requested, stopped_watching


@click.command("watch")
@click.argument("logfile", type=click.Path(path_type=Path))
@click.option(
    "--interval",
    type=float,
    default=10.0,
    show_default=True,
    callback=seconds(True),
    help="Seconds between polls (a positive number).",
)
@options("format", "map")
@click.option("--until-fail", is_flag=True, help="Exit 1 as soon as the verdict becomes FAIL.")
@click.option(
    "--stall-timeout",
    type=float,
    default=None,
    metavar="SECONDS",
    callback=seconds(False),
    help="WARN (TP-STALL) and stop watching when the log has not grown for this long; a log that "
    "does not exist yet is waited for this long, then exit 2.",
)
@options("json", "mute", "config", json={"help": "One JSON line per poll: time, records, verdict, new ids."})
@options("history", "experiment")
def watch_cmd(
    logfile: Path,
    interval: float,
    fmt: str,
    maps,
    until_fail: bool,
    stall_timeout,
    as_json: bool,
    mute,
    config_path,
    history,
    experiment,
) -> int:
    """Judge LOGFILE while the run writes it, polling every --interval seconds.

    Each poll reads only what was appended (HF trainer_state.json, rewritten at each save,
    and gzip-compressed logs are re-read whole when they change); a log that is replaced
    or truncated is read again from the start. LOGFILE must be a regular file (or not
    exist yet): a directory or a FIFO is a usage error. Watching ends by itself when the
    run has finished: it logged its end-of-training summary (HF's train_runtime row), or
    the log has not grown for --stall-timeout seconds; the full report is printed and the
    exit code is the verdict's. In a pipe a poll's line is printed only when something
    changed. Ctrl-C or SIGTERM (also SIGINT to a background job) stops watching and exits
    with the last verdict's code, not 130: 0 (judged, no FAIL), 1 (FAIL), 2 (nothing
    judged yet). With --history, the run is recorded when watching ends (a store that
    cannot be used is a line on stderr and exit 2 unless the verdict is FAIL).
    """
    # Stopped (Ctrl-C, SIGTERM) at any point, from the imports on: the last verdict and
    # its code; before the first report, "-" and exit 2 (nothing judged).
    state = SimpleNamespace(watcher=None, presenter=None)
    try:
        return _follow(
            state,
            logfile,
            interval,
            fmt,
            maps,
            until_fail,
            stall_timeout,
            as_json,
            mute,
            config_path,
            history,
            experiment,
        )
    except (KeyboardInterrupt, Exception) as e:
        if not isinstance(e, KeyboardInterrupt) and not by_interrupt(e):
            raise
        if state.presenter is not None:
            state.presenter.stop()
        report = state.watcher.record() if state.watcher is not None else None
        code = _code(report)
        if not as_json:
            click.echo(stopped_watching(report.verdict.value if report is not None else None, code), err=True)
        return code


def _follow(
    state,
    logfile: Path,
    interval: float,
    fmt: str,
    maps,
    until_fail: bool,
    stall_timeout,
    as_json: bool,
    mute,
    config_path,
    history=None,
    experiment=None,
) -> int:
    """The poll loop of :func:`watch_cmd`; ``state`` holds the watcher and the presenter as
    they are made, for the interrupt handler. Returns the exit code."""
    from ...formats import ReadError
    from ...live.presenter import WatchPresenter
    from ...live.watcher import Watcher

    overrides, cfg = settings("watch", as_json, maps, mute, config_path)
    if logfile.exists() and not logfile.is_file():
        # is_file() stats without opening: a FIFO is refused here, never opened.
        kind = "a directory" if logfile.is_dir() else "not a regular file"
        raise click.UsageError(f"{logfile}: {kind}; watch follows one log file as it grows")
    w = state.watcher = Watcher(
        logfile,
        fmt,
        overrides,
        cfg.mute,
        cfg.thresholds,
        stall_timeout,
        history=history_of(history, cfg),
        experiment=experiment,
    )
    show = state.presenter = WatchPresenter(logfile, as_json, stdout_console, tty=sys.stdout.isatty())
    started = time.monotonic()
    seen = False
    while True:
        stop_requested()
        if not seen and not w.tail.exists():
            # Waiting for a log that was never seen is bounded; a log that existed and
            # went away (deleted before a rotation) is stall-checked by the watcher.
            if stall_timeout is not None and time.monotonic() - started >= stall_timeout:
                show.stop()
                echo_error(f"{logfile}: no such file after waiting {stall_timeout:g} s")
                return 2
            time.sleep(interval)
            continue
        try:
            p = w.poll()
        except ReadError as e:
            show.stop()
            echo_error(f"{logfile}: {e}")
            return 2
        seen = True
        show.poll(p)
        if until_fail and w.failed:
            show.final(w.record())
            _code(w.report)
            return 1
        why = w.ended
        if why is not None:
            report = w.record()
            show.final(report)
            code = _code(report)
            verdict = report.verdict.value if report is not None else "-"
            echo_error(f"stopped watching: {why}; last verdict {verdict} (exit {code})")
            return code
        time.sleep(interval)


def _code(report) -> int:
    """The exit code of the last report (:func:`trainproof.findings.exit_code`); a run
    history that could not be used is said on stderr and counts as an error."""
    from ...findings import exit_code

    error = getattr(report, "history_error", None)
    if error is not None:
        echo_error(error)
    return exit_code([report] if report is not None else [], error)
