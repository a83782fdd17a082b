"""The ``trainproof`` group: one lazy command table, the former names, and :func:`main`,
the one place the process exits.

Start-up cost: this module imports only click. Each command's module (and numpy, rich,
the readers, the rules) is imported when the command runs, so ``trainproof --version``
and ``--help`` stay close to a bare interpreter (tests/cli/test_startup.py).
"""

from __future__ import annotations

import importlib
import os
import sys

import click

from .. import __version__
from . import signals

#: Every command: name -> (module in trainproof.cli.commands, the click command's name in
#: it, the first paragraph of its help). `trainproof --help` shows the static text, so
#: listing the commands imports none of them; tests/cli/test_startup.py checks it against each
#: command's real help. Adding a command is its module, its test and one line here.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "compare": (
        "compare",
        "compare_cmd",
        "Judge each RUN on its own and against BASELINE, a known-good run of the same task.",
    ),
    "data": (
        "speech",
        "data_cmd",
        "Check speech training data before the run: audio/transcript pairs from a folder "
        "(NAME.wav + NAME.txt/.lab), an LJSpeech folder or metadata.csv, or a NeMo manifest.jsonl.",
    ),
    "dataset": (
        "dataset",
        "dataset_cmd",
        "Check a training dataset (JSONL, .json array, .jsonl.gz) before the run: malformed "
        "lines, empty and duplicate texts, and with --tokenizer its EOS/pad/BOS and --max-len "
        "truncation.",
    ),
    "doctor": ("doctor", "doctor_cmd", "Find every training log under each PATH (default: .) and judge each run."),
    "env": (
        "env",
        "env_cmd",
        "Can this machine start this run at all? Probe imports in a child interpreter, verify "
        "checkpoints without unpickling them, and compare RAM and disk with what the run needs.",
    ),
    "history": (
        "history",
        "history_cmd",
        "List the runs of EXPERIMENT in the run history, newest first, with their verdicts and key figures, and "
        "how the last run sits against the others; without EXPERIMENT, list the experiments.",
    ),
    "judge": (
        "judge",
        "judge_cmd",
        "Judge one training log: a file (HF trainer_state.json, TensorBoard event file, "
        "JSONL, CSV, Coqui log, console capture, MLflow metric) or a TensorBoard/MLflow "
        "run folder. LOGFILE may be an fsspec URL (s3://bucket/run.jsonl; the [remote] "
        "extra). A log that holds several runs (a W&B export) gives one report per run, "
        "worst first.",
    ),
    "rules": (
        "rules",
        "rules_cmd",
        "List every rule, or print the page of RULE_ID (its example judged, the thresholds in force).",
    ),
    "targets": (
        "targets",
        "targets_cmd",
        "Check the training objective at step 0: an ignore_index that is a real class, "
        "targets outside [0, N), classes that never appear, and causal-LM labels shifted "
        "twice.",
    ),
    "tokenizer": (
        "speech",
        "tokenizer_cmd",
        "Check a SentencePiece model against the transcripts it will encode: unknown tokens, "
        "character coverage, tokens per second of audio and how numbers are split.",
    ),
    "watch": ("watch", "watch_cmd", "Judge LOGFILE while the run writes it, polling every --interval seconds."),
}

#: Former command names, still accepted (CHANGELOG.md lists them): old name -> command. The
#: new names say what each command judges; scripts and CI files written for the old ones
#: keep working, and the JSON document's ``command`` is the name that was typed.
ALIASES = {"epoch": "judge", "preflight": "dataset", "objective": "targets"}

_DESCRIBING = "trainproof.describing_commands"


def load_command(name: str) -> click.Command:
    """The click command ``name`` of :data:`COMMANDS` (its module imported).

    Raises:
        KeyError: not a command's name.
    """
    module, attr, _ = COMMANDS[name]
    return getattr(importlib.import_module(f"{__package__}.commands.{module}"), attr)


class _LazyGroup(click.Group):
    """A group whose commands are imported on first use (see :data:`COMMANDS`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd_name = ALIASES.get(cmd_name, cmd_name)
        if cmd_name in self.commands or cmd_name not in COMMANDS:
            return self.commands.get(cmd_name)
        if ctx is not None and ctx.meta.get(_DESCRIBING):
            # Listing commands for --help: a stand-in with the same first paragraph gives
            # the same one-line summary without importing the module.
            return click.Command(cmd_name, help=COMMANDS[cmd_name][2])
        cmd = load_command(cmd_name)
        self.add_command(cmd, cmd_name)
        return cmd

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


@cli.result_callback()
def _exit_code(rv, **_params) -> None:
    """A command returns its exit code; the group ends the command with it (click's own
    ``Exit``, which :func:`main`, and click's standalone mode, turn into the process's)."""
    if isinstance(rv, int) and rv != 0:
        raise click.exceptions.Exit(rv)


def _exit_stopped(code: int) -> None:
    """Exit a command stopped by a signal with ``code``. Where ``doctor`` ended a pool of
    worker processes (:data:`trainproof.engines.ENDED_POOLS`), the process ends at once once
    its output is flushed: the interpreter's exit would join the pool's threads, and one
    may wait forever on half a message a killed worker left in its pipe. Everything the
    command writes is written or removed by then (report files are whole or absent; the
    staging folders are removed as the stop unwinds)."""
    engines = sys.modules.get("trainproof.engines")
    if argv_is_main() and engines is not None and getattr(engines, "ENDED_POOLS", None):
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    sys.exit(code)


def argv_is_main() -> bool:
    """Whether this process runs the command line itself (``python -m trainproof``, the
    ``trainproof`` script), not a caller's program that called :func:`main`, whose own
    exit must run as it would."""
    main_mod = sys.modules.get("__main__")
    spec = getattr(main_mod, "__spec__", None)
    name = getattr(spec, "name", "") or ""
    if name.startswith("trainproof"):
        return True
    return os.path.basename(sys.argv[0] or "") == "trainproof"


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI, turning every unexpected error into one line and exit 2."""
    args = list(sys.argv[1:] if argv is None else argv)
    if argv is None:
        # numpy's OpenBLAS starts a thread per core when it loads, a third of numpy's import
        # time (~55 ms a process on 2 cores); the rules' dot products are on vectors short
        # enough that one thread is as fast, and each doctor worker is a process of its own.
        # A value the user set is kept. Only the command's own process: a program that calls
        # main(argv) keeps its threads.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    debug = "--debug" in args or bool(os.environ.get("TRAINPROOF_DEBUG"))
    try:
        os.getcwd()
    except OSError:
        # The working directory was removed: relative paths mean nothing any more.
        click.echo(
            "trainproof: the current directory no longer exists (it was removed); run from an existing one", err=True
        )
        sys.exit(2)
    signals.STOP.clear()
    previous: dict = {}
    try:
        # Inside the try: a SIGTERM that lands the moment its handler is set (before this
        # function's own handlers are in force) raises KeyboardInterrupt here, and it is a
        # stop like any other, not a traceback.
        previous = signals.interrupt_handlers()
        rv = cli.main(args=args, prog_name="trainproof", standalone_mode=False)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.ClickException as e:
        e.show()
        sys.exit(2)
    except (click.exceptions.Abort, KeyboardInterrupt):
        if signals.command_name(args) == "watch":
            # Stopped before watch's own loop ran (parsing its options): nothing judged.
            if "--json" not in args:
                click.echo(signals.stopped_watching(None, 2), err=True)
        else:
            click.echo("trainproof: aborted", err=True)
        _exit_stopped(2)
    except SystemExit:
        raise
    except BrokenPipeError:
        sys.exit(2)
    except Exception as e:  # noqa: BLE001 - the contract: one line, exit 2
        if signals.by_interrupt(e):
            # Ctrl-C or SIGTERM wrapped by the interpreter (Python < 3.12 wraps what a
            # class body's __set_name__ raises, as during an import): stopped, not a bug.
            click.echo(
                signals.stopped_watching(None, 2) if signals.command_name(args) == "watch" else "trainproof: aborted",
                err=True,
            )
            _exit_stopped(2)
        if debug:
            raise
        from ..redact import mask
        from ..render.text import printable

        click.echo(
            f"trainproof: internal error: {type(e).__name__}: {printable(mask(str(e)))} (run with --debug for a traceback)",
            err=True,
        )
        sys.exit(2)
    finally:
        if previous:
            import signal

            for signum, handler in previous.items():
                signal.signal(signum, handler)
    sys.exit(rv if isinstance(rv, int) else 0)
