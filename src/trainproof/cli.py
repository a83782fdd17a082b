"""The ``trainproof`` command line: click options -> the layers -> printed output -> exit code.

Exit codes (every command): 0 judged, no FAIL (WARN allowed) · 1 at least one FAIL about
the run · 2 could not judge (missing/unreadable/empty input, no loss, NOT-CHECKED, bad
option or configuration, internal error).
"""
from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

import click

from . import __version__
from .cliutil import FORMAT_NAMES, _emit, _setup, _stdout, _write_outputs, common_options, echo_error, invoked

# Start-up cost: this module imports only click and cliutil. numpy, rich, the readers, the
# rules and the preflight modules are imported by the command that needs them, so
# `trainproof --version` and `--help` stay close to a bare interpreter (tests/test_startup.py).

#: Commands defined in preflight modules, imported when first run: name -> (module in
#: trainproof.preflight, the first paragraph of the command's help). `trainproof --help`
#: shows the static text so that listing the commands imports none of them;
#: tests/test_startup.py checks it against each command's real help.
_LAZY_COMMANDS = {
    "data": ("speech", "Check speech training data before the run: audio/transcript pairs from a folder "
                       "(NAME.wav + NAME.txt/.lab), an LJSpeech folder or metadata.csv, or a NeMo manifest.jsonl."),
    "env": ("env", "Can this machine start this run at all? Probe imports in a child interpreter, verify "
                   "checkpoints without unpickling them, and compare RAM and disk with what the run needs."),
    "targets": ("targets", "Check the training objective at step 0: an ignore_index that is a real class, "
                               "targets outside [0, N), classes that never appear, and causal-LM labels shifted "
                               "twice."),
    "dataset": ("dataset", "Check a training dataset (JSONL, .json array, .jsonl.gz) before the run: malformed "
                             "lines, empty and duplicate texts, and with --tokenizer its EOS/pad/BOS and --max-len "
                             "truncation."),
    "tokenizer": ("speech", "Check a SentencePiece model against the transcripts it will encode: unknown tokens, "
                            "character coverage, tokens per second of audio and how numbers are split."),
}
_DESCRIBING = "trainproof.describing_commands"

#: Former command names, still accepted (CHANGELOG.md lists them): old name -> command. The
#: new names say what each command judges; scripts and CI files written for the old ones
#: keep working, and the JSON document's ``command`` is the name that was typed.
ALIASES = {"epoch": "judge", "preflight": "dataset", "objective": "targets"}


class _LazyGroup(click.Group):
    """A group whose preflight commands are imported on first use (see :data:`_LAZY_COMMANDS`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *_LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd_name = ALIASES.get(cmd_name, cmd_name)
        cmd = self.commands.get(cmd_name)
        if cmd is not None or cmd_name not in _LAZY_COMMANDS:
            return cmd
        module, short = _LAZY_COMMANDS[cmd_name]
        if ctx.meta.get(_DESCRIBING):
            # Listing commands for --help: a stand-in with the same first paragraph gives
            # the same one-line summary without importing the module.
            return click.Command(cmd_name, help=short)
        _load_preflight(module)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        ctx.meta[_DESCRIBING] = True
        try:
            super().format_commands(ctx, formatter)
        finally:
            del ctx.meta[_DESCRIBING]


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="trainproof")
@click.option("--debug", is_flag=True, help="Show tracebacks of internal errors.")
def cli(debug: bool) -> None:
    """A deterministic linter for ML training runs.

    Exit codes: 0 judged, no FAIL (WARN allowed); 1 at least one FAIL about the run;
    2 could not judge (unreadable input, no loss, NOT-CHECKED, bad option, internal error).

    Former names, still accepted: epoch (judge), preflight (dataset), objective (targets).
    """


def _location(arg: str | None) -> str | Path | None:
    """A PATH argument: an fsspec URL stays a string (a Path would collapse its ``//``)."""
    if arg is None:
        return None
    from .remote import is_url

    return arg if is_url(arg) else Path(arg)


@cli.command("judge")
@click.argument("logfile", type=click.Path(path_type=str))
@common_options
def judge_cmd(logfile: str, fmt: str, maps, as_json: bool, mute, config_path, sarif_path, html_path) -> None:
    """Judge one training log: a file (HF trainer_state.json, TensorBoard event file, JSONL,
    CSV, Coqui log, console capture, MLflow metric) or a TensorBoard/MLflow run folder.
    LOGFILE may be an fsspec URL (s3://bucket/run.jsonl; the [remote] extra). A log that
    holds several runs (a W&B export) gives one report per run, worst first."""
    from .aliases import MappingError
    from .api import read_runlogs
    from .findings import worst_first
    from .formats import ReadError
    from .rules.engine import error_report, judge_runlog

    overrides, cfg = _setup(invoked("judge"), as_json, maps, mute, config_path)
    logfile = _location(logfile)
    try:
        runs = read_runlogs(logfile, fmt, overrides)
    except (ReadError, MappingError) as e:
        rep = error_report(str(logfile), str(e), None if fmt == "auto" else fmt)
        _emit([rep], invoked("judge"), as_json, summary=False, error=f"{logfile}: {e}", sarif_path=sarif_path,
              html_path=html_path)
        return
    # One report per run the log holds (a W&B export of several runs), worst first; chart
    # series only for the HTML report (the only output that draws them).
    reports = worst_first([judge_runlog(run, cfg.thresholds, cfg.mute, charts=html_path is not None)
                           for run in runs])
    _emit(reports, invoked("judge"), as_json, summary=False, sarif_path=sarif_path, html_path=html_path)


class _LazyProgress:
    """A progress bar on stderr that appears only on a terminal and after a moment."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.bar = None
        self.task = None
        self.enabled = sys.stderr.isatty()

    def advance(self, done: int, total: int, label: str) -> None:
        if not self.enabled or total < 2:
            return
        self.total = total
        if self.bar is None and time.monotonic() - self.t0 > 0.5:
            from rich.console import Console
            from rich.progress import Progress

            self.bar = Progress(console=Console(stderr=True), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("judging", total=self.total)
        if self.bar is not None:
            self.bar.update(self.task, completed=done, description=label[-40:])

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _levels(value: str | None):
    """``--only``'s comma-separated verdicts as levels (``None``: every verdict); an unknown
    name is a usage error (exit 2)."""
    if value is None:
        return None
    from .findings import Level

    names = {lvl.value: lvl for lvl in (Level.FAIL, Level.WARN, Level.PASS, Level.NOT_CHECKED)}
    names["NOT-JUDGED"] = Level.NOT_CHECKED
    out = set()
    for part in value.replace(" ", ",").split(","):
        if not part:
            continue
        lvl = names.get(part.strip().upper().replace("_", "-"))
        if lvl is None:
            raise click.BadParameter(f"{part!r} is not a verdict; use FAIL, WARN, PASS or NOT-CHECKED")
        out.add(lvl)
    return out


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@common_options
@click.option("--baseline", type=click.Path(path_type=str),
              help="Also compare every run with this known-good run of the same task.")
@click.option("--max-depth", type=click.IntRange(min=0), default=None, metavar="N",
              help="Search at most N folder levels below PATH (for huge or untrusted trees).")
@click.option("--max-files", type=click.IntRange(min=1), default=None, metavar="N",
              help="Judge at most N log files; the cut is listed among the ignored files.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, metavar="N",
              help="Judge runs in N processes (default and most: one per usable core, more would only add memory); "
                   "the output is the same and in the same order for any N. With --engine dask/ray and no "
                   "--address: the local cluster's workers.")
@click.option("--engine", type=click.Choice(["local", "dask", "ray"]), default="local", show_default=True,
              help="Where runs are judged: local processes, or a Dask or Ray cluster (extras [dask], [ray]); "
                   "the output is the same.")
@click.option("--address", metavar="ADDR", default=None,
              help="The cluster for --engine: a Dask scheduler (tcp://host:8786) or a Ray address (auto, "
                   "ray://host:10001). Default: start a local one for this run.")
@click.option("--allow-empty", is_flag=True,
              help="Exit 0 when no training log is found (a pre-commit hook on files that hold none).")
@click.option("--quiet", "-q", "view", flag_value="quiet",
              help="Print only the table of runs that did not pass, and the totals (for CI logs).")
@click.option("--verbose", "-v", "view", flag_value="verbose",
              help="Print every run's full report (default: only FAIL and WARN runs').")
@click.option("--only", "only", callback=lambda ctx, param, value: _levels(value), metavar="LEVELS",
              help="Show only runs of these verdicts, e.g. --only FAIL,WARN (FAIL, WARN, PASS, NOT-CHECKED); "
                   "the totals line and --json still count every run.")
def doctor(paths: tuple[str, ...], fmt: str, maps, as_json: bool, mute, config_path, sarif_path, html_path,
           baseline, max_depth, max_files, jobs, engine, address, allow_empty, view, only) -> None:
    """Find every training log under each PATH (default: .) and judge each run.

    A PATH may be a folder, a file (a pre-commit hook passes the changed files) or an
    fsspec URL (s3://bucket/runs/; the [remote] extra): objects are listed once and each
    run is fetched, in chunks, by whoever judges it.
    """
    from .api import doctor as api_doctor
    from .engines import EngineError
    from .formats import ReadError
    from .remote import is_url

    overrides, cfg = _setup("doctor", as_json, maps, mute, config_path)
    if address is not None and engine == "local":
        _emit([], "doctor", as_json, summary=True, error="--address needs --engine dask or --engine ray")
        return
    roots = [_location(p) for p in (paths or (".",))]
    for path in roots:
        if not is_url(path) and not path.exists():
            _emit([], "doctor", as_json, summary=True, error=f"no such file or directory: {path}", sarif_path=sarif_path)
            return
    label = " ".join(str(p) for p in roots)
    progress = _LazyProgress()
    try:
        reports, ignored = api_doctor(roots, fmt, overrides, cfg.mute, cfg.thresholds, progress=progress.advance,
                                      baseline=_location(baseline), max_depth=max_depth, max_files=max_files,
                                      jobs=jobs, engine=engine, address=address, charts=html_path is not None)
    except (ReadError, EngineError) as e:
        progress.close()
        _emit([], "doctor", as_json, summary=True, error=f"{label}: {e}" if isinstance(e, ReadError) else str(e),
              sarif_path=sarif_path)
        return
    for cut in ignored:
        if "--max-depth" in cut["reason"] or "--max-files" in cut["reason"]:
            echo_error(f"{cut['file']}: {cut['reason']}")
    progress.close()
    if not reports and allow_empty:
        if as_json:
            from .render import json as render_json

            click.echo(render_json.dumps(render_json.document([], "doctor", extra={"ignored": ignored})))
        else:
            click.echo(f"no training logs found under {label}: nothing to judge")
        sys.exit(0)
    error = None if reports else f"no training logs found under {label}"
    _emit(reports, "doctor", as_json, summary=True, extra={"ignored": ignored}, error=error, sarif_path=sarif_path,
          html_path=html_path, view=view or "default", only=only)


@cli.command("compare")
@click.argument("baseline", type=click.Path(path_type=Path))
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@common_options
def compare_cmd(baseline: Path, runs, fmt: str, maps, as_json: bool, mute, config_path, sarif_path, html_path) -> None:
    """Judge each RUN on its own and against BASELINE, a known-good run of the same task.

    A run on shuffled labels lowers its own loss and looks healthy alone; against a
    baseline its loss floor sits far above. Prints a ranking table, worst first.
    """
    from .aliases import MappingError
    from .api import compare as api_compare
    from .findings import exit_code
    from .formats import ReadError
    from .render import text as render_text

    overrides, cfg = _setup("compare", as_json, maps, mute, config_path)
    try:
        base_report, reports = api_compare(baseline, runs, fmt, overrides, cfg.mute, cfg.thresholds)
    except (ReadError, MappingError) as e:
        _emit([], "compare", as_json, summary=False, error=f"baseline {baseline}: {e}")
        return
    extra = {"baseline": base_report.to_dict()}
    _write_outputs(reports, sarif_path, html_path, compare_with=base_report)
    if as_json:
        _emit(reports, "compare", as_json, summary=False, extra=extra)
        return
    render_text.render_compare(_stdout(), base_report, reports)
    sys.exit(exit_code(reports))


def _seconds(positive: bool):
    """A click callback: a finite number of seconds, above 0 (``positive``) or at least 0;
    NaN, infinities and negatives are usage errors (exit 2), not a loop that never sleeps
    or never stalls."""
    def check(ctx, param, value):
        if value is None:
            return value
        if not math.isfinite(value) or value < 0 or (positive and value == 0):
            raise click.BadParameter(f"{value:g} is not a {'positive' if positive else 'non-negative'} "
                                     "finite number of seconds")
        return value
    return check


@cli.command()
@click.argument("logfile", type=click.Path(path_type=Path))
@click.option("--interval", type=float, default=10.0, show_default=True, callback=_seconds(True),
              help="Seconds between polls (a positive number).")
@click.option("--format", "fmt", type=click.Choice(["auto", *FORMAT_NAMES]), default="auto", show_default=True,
              help="Log format; auto sniffs the content.")
@click.option("--map", "maps", multiple=True, metavar="CANON=COLUMN", help="Read a canonical metric from a column.")
@click.option("--until-fail", is_flag=True, help="Exit 1 as soon as the verdict becomes FAIL.")
@click.option("--stall-timeout", type=float, default=None, metavar="SECONDS", callback=_seconds(False),
              help="WARN (TP-STALL) when the log has not grown for this long; a log that does not exist "
                   "yet is waited for this long, then exit 2.")
@click.option("--json", "as_json", is_flag=True, help="One JSON line per poll: time, records, verdict, new ids.")
@click.option("--mute", multiple=True, metavar="TP-ID", help="Do not run this rule (repeatable).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="TOML file with [tool.trainproof] settings.")
def watch(logfile: Path, interval: float, fmt: str, maps, until_fail: bool, stall_timeout, as_json: bool, mute,
          config_path) -> None:
    """Judge LOGFILE while the run writes it, polling every --interval seconds.

    Each poll reads only what was appended (HF trainer_state.json, rewritten at each save,
    and gzip-compressed logs are re-read whole when they change); a log that is replaced
    or truncated is read again from the start. LOGFILE must be a regular file (or not
    exist yet): a directory or a FIFO is a usage error. Ctrl-C or SIGTERM (also SIGINT to
    a background job) stops watching and exits with the last verdict's code, not 130:
    0 (judged, no FAIL), 1 (FAIL), 2 (nothing judged yet).
    """
    from types import SimpleNamespace

    # Stopped (Ctrl-C, SIGTERM) at any point, from the imports on: the last verdict and
    # its code; before the first report, "-" and exit 2 (nothing judged).
    state = SimpleNamespace(watcher=None, live=None)
    try:
        _watch(state, logfile, interval, fmt, maps, until_fail, stall_timeout, as_json, mute, config_path)
    except (KeyboardInterrupt, Exception) as e:
        if not isinstance(e, KeyboardInterrupt) and not _by_interrupt(e):
            raise
        from .findings import exit_code

        if state.live is not None:
            state.live.stop()
        report = state.watcher.report if state.watcher is not None else None
        code = exit_code([report] if report is not None else [])
        if not as_json:
            click.echo(_stopped_watching(report.verdict.value if report is not None else None, code), err=True)
        sys.exit(code)


def _watch(state, logfile: Path, interval: float, fmt: str, maps, until_fail: bool, stall_timeout, as_json: bool,
           mute, config_path) -> None:
    """The body of :func:`watch`; ``state`` holds the watcher and the live display as they
    are made, for the interrupt handler."""
    import json as _json

    from .formats import ReadError
    from .live.watcher import Watcher
    from .render import text as render_text

    overrides, cfg = _setup("watch", as_json, maps, mute, config_path)
    if logfile.exists() and not logfile.is_file():
        # is_file() stats without opening: a FIFO is refused here, never opened.
        kind = "a directory" if logfile.is_dir() else "not a regular file"
        raise click.UsageError(f"{logfile}: {kind}; watch follows one log file as it grows")
    w = state.watcher = Watcher(logfile, fmt, overrides, cfg.mute, cfg.thresholds, stall_timeout)
    tty = sys.stdout.isatty() and not as_json
    live = None
    if tty:
        from rich.live import Live
        from rich.text import Text

        live = Live(Text("trainproof watch: waiting for the log"), console=_stdout(), transient=False,
                    refresh_per_second=4)
        state.live = live
        live.start()
    started = time.monotonic()
    last = None
    while True:
        _stop_requested()
        if last is None and not w.tail.exists():
            # Waiting for a log that was never seen is bounded; a log that existed and
            # went away (deleted before a rotation) is stall-checked by the watcher.
            if stall_timeout is not None and time.monotonic() - started >= stall_timeout:
                if live is not None:
                    live.stop()
                click.echo(f"trainproof: {logfile}: no such file after waiting {stall_timeout:g} s", err=True)
                sys.exit(2)
            time.sleep(interval)
            continue
        try:
            p = w.poll()
        except ReadError as e:
            if live is not None:
                live.stop()
            click.echo(f"trainproof: {logfile}: {e}", err=True)
            sys.exit(2)
        last = p
        line = (f"{time.strftime('%H:%M:%S')} records={p.records} verdict={p.verdict or '-'}"
                + (f" new={','.join(p.new)}" if p.new else "") + (" STALLED" if p.stalled else ""))
        if as_json:
            click.echo(_json.dumps(p.to_dict()))
        elif live is not None:
            from rich.text import Text

            live.update(Text(f"trainproof watch {logfile}: {line}"))
        else:
            click.echo(line)
        if p.new and not as_json and p.report is not None:
            for f in p.report.findings:
                if f.id in p.new:
                    msg = f"  {f.level.value} {f.id}: {f.message}"
                    (live.console.print(msg) if live is not None else click.echo(msg))
        if until_fail and w.failed:
            if live is not None:
                live.stop()
            if not as_json and w.report is not None:
                render_text.render(_stdout(), [w.report])
            sys.exit(1)
        time.sleep(interval)


@cli.command("rules")
@click.argument("rule_id", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the rule list as JSON.")
@click.option("--markdown", is_flag=True, help="Print RULES.md (the ids by family, linking their pages, and every threshold).")
@click.option("--pages", "pages_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Write one page per id and an index by family into this folder (docs/rules), removing stale pages.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="With RULE_ID: state the thresholds of this TOML file's [tool.trainproof] settings "
                   "(default: nearest pyproject.toml).")
def rules_cmd(rule_id: str | None, as_json: bool, markdown: bool, pages_dir: Path | None,
              config_path: Path | None) -> None:
    """List every rule, or print the page of RULE_ID (its example judged, the thresholds in force)."""
    import json

    from .rules.registry import all_rules, get

    if markdown:
        from .rules.docs import rules_markdown

        click.echo(rules_markdown(), nl=False)
        return
    if pages_dir is not None:
        from .rules.docs import write_pages

        for name in write_pages(pages_dir):
            click.echo(f"removed stale page {name}", err=True)
        return

    if rule_id:
        r = get(rule_id)
        if r is None:
            click.echo(f"trainproof: unknown rule id {rule_id!r} (see `trainproof rules`)", err=True)
            sys.exit(2)
        if as_json:
            click.echo(json.dumps(_rule_dict(r), indent=2))
            return
        # The configuration a run would be judged with (the same loader as epoch and
        # doctor), so the text states the numbers that would be compared against.
        from .config import ConfigError, load_config
        from .rules.thresholds import DEFAULT, shown

        try:
            cfg = load_config(config_path)
        except ConfigError as e:
            echo_error(str(e))
            sys.exit(2)
        from .rules.docs import rule_page

        th = cfg.thresholds
        text = rule_page(r, th)
        changed = [n for n in r.thresholds if getattr(th, n) != getattr(DEFAULT, n)]
        if changed:
            text += f"\nThresholds other than the defaults ({', '.join(changed)}) are from {cfg.source}.\n"
        click.echo(text)
        return
    rules = all_rules()
    if as_json:
        click.echo(json.dumps([_rule_dict(r) for r in rules], indent=2))
        return
    from rich.markup import escape
    from rich.table import Table

    t = Table(title="trainproof rules")
    for col in ("id", "level", "group", "summary"):
        t.add_column(col)
    for r in rules:
        t.add_row(r.id, r.level.value, r.group, escape(r.text("summary")))
    _stdout().print(t)


def _rule_dict(r) -> dict:
    return {
        "id": r.id, "level": r.level.value, "group": r.group, "summary": r.text("summary"),
        "detects": r.text("detects"), "why": r.text("why"), "not_mean": r.text("not_mean"),
        "causes": r.text("causes"), "try": r.text("try_"), "hint": r.hint, "needs": [{"series": list(n.names), "min_points": n.min_points} for n in r.needs],
        "thresholds": list(r.thresholds), "source": r.source,
    }


def _load_preflight(name: str) -> None:
    """Import ``trainproof.preflight.<name>`` and add the click commands it lists in ``COMMANDS``."""
    import importlib

    mod = importlib.import_module(f"{__package__}.preflight.{name}")
    for cmd in getattr(mod, "COMMANDS", ()):
        cli.add_command(cmd)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI, turning every unexpected error into one line and exit 2."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or bool(os.environ.get("TRAINPROOF_DEBUG"))
    try:
        os.getcwd()
    except OSError:
        # The working directory was removed: relative paths mean nothing any more.
        click.echo("trainproof: the current directory no longer exists (it was removed); run from an existing one",
                   err=True)
        sys.exit(2)
    _STOP.clear()
    previous = _interrupt_handlers()
    try:
        rv = cli.main(args=args, prog_name="trainproof", standalone_mode=False)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.ClickException as e:
        e.show()
        sys.exit(2)
    except click.exceptions.Abort:
        if _command_name(args) == "watch":
            # Stopped before watch's own loop ran (parsing its options): nothing judged.
            if "--json" not in args:
                click.echo(_stopped_watching(None, 2), err=True)
        else:
            click.echo("trainproof: aborted", err=True)
        sys.exit(2)
    except SystemExit:
        raise
    except BrokenPipeError:
        sys.exit(2)
    except Exception as e:  # noqa: BLE001 - the contract: one line, exit 2
        if _by_interrupt(e):
            # Ctrl-C or SIGTERM wrapped by the interpreter (Python < 3.12 wraps what a
            # class body's __set_name__ raises, as during an import): stopped, not a bug.
            click.echo(_stopped_watching(None, 2) if _command_name(args) == "watch" else "trainproof: aborted",
                       err=True)
            sys.exit(2)
        if debug:
            raise
        click.echo(f"trainproof: internal error: {type(e).__name__}: {e} (run with --debug for a traceback)",
                   err=True)
        sys.exit(2)
    finally:
        if previous:
            import signal

            for signum, handler in previous.items():
                signal.signal(signum, handler)
    sys.exit(rv if isinstance(rv, int) else 0)


#: The signals that asked this process to stop (see :func:`_interrupt_handlers`). The
#: ``KeyboardInterrupt`` a handler raises can land in code that swallows it (a library's
#: bare ``except`` during an import); a loop that runs on (``watch``) checks this too.
_STOP: list[int] = []


def _stop_requested() -> None:
    """Raise ``KeyboardInterrupt`` if a stop signal came and was swallowed on its way."""
    if _STOP:
        raise KeyboardInterrupt


def _in_exec_string(frame) -> bool:
    """Whether ``frame`` runs inside code compiled from a string (``exec(str)``)."""
    while frame is not None:
        if frame.f_code.co_filename == "<string>":
            return True
        frame = frame.f_back
    return False


def _command_name(args: list[str]) -> str | None:
    """The subcommand in ``args``: the first word that is not one of the group's options."""
    for a in args:
        if not a.startswith("-"):
            return a
    return None


def _by_interrupt(e: BaseException) -> bool:
    """Whether ``e`` was caused by a ``KeyboardInterrupt`` (a signal that arrived while
    code that wraps exceptions ran)."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


def _stopped_watching(verdict: str | None, code: int) -> str:
    return f"trainproof: stopped watching; last verdict {verdict or '-'} (exit {code})"


def _interrupt_handlers() -> dict:
    """Handle SIGTERM (a CI job cancelled, ``timeout``) as Ctrl-C: the command unwinds,
    ``doctor`` ends its workers, report files are whole or absent, and the exit code
    follows the policy (``watch``: its last verdict's; otherwise 2). A SIGINT inherited as
    ignored (a shell script's background job, ``trainproof watch LOG &``) is handled as
    Ctrl-C too, so that ``kill -INT`` stops the command.

    Returns ``{signal: previous handler}`` for what was changed, for :func:`main` to put
    back (tests call it in-process); empty where nothing could be set (not the main
    thread)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}

    def interrupt(signum, frame):
        _STOP.append(signum)
        if _in_exec_string(frame):
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
