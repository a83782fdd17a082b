"""Start-up cost: what the command line imports before it has work to do.

`trainproof --version` and `--help` import click and the CLI modules only; `epoch --json`
imports what judging needs (numpy, the readers, the rules) but no rich, no SARIF library
and no torch. Checked on real processes by the modules they load, never by timing
(timings are in bench/).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from trainproof import cli as cli_mod
from trainproof.cli.options import FORMAT_NAMES

from conftest import healthy_rows, run_cli, write_jsonl

HEAVY = ("numpy", "rich", "sarif_om", "jschema_to_python", "torch")
#: All of trainproof that `--version` and `--help` may import.
LIGHT_TRAINPROOF = {
    "trainproof",
    "trainproof.__main__",
    "trainproof.cli",
    "trainproof.cli.app",
    "trainproof.cli.signals",
}

# Runs `python -m trainproof ARGS` in this interpreter, then writes the names of every
# module it loaded to the file named by $TP_MODULES_OUT.
_WRAPPER = """
import json, os, runpy, sys
sys.argv = ["trainproof", *sys.argv[1:]]
code = 0
try:
    runpy.run_module("trainproof", run_name="__main__", alter_sys=True)
except SystemExit as e:
    code = e.code
finally:
    with open(os.environ["TP_MODULES_OUT"], "w") as f:
        json.dump(sorted(sys.modules), f)
sys.exit(code)
"""


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    return env


def loaded_modules(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run the CLI with ``args`` in a fresh interpreter; return the process and the modules it loaded."""
    out = tmp_path / "modules.json"
    proc = subprocess.run(
        [sys.executable, "-c", _WRAPPER, *args],
        capture_output=True,
        text=True,
        env=_env(TP_MODULES_OUT=str(out)),
        timeout=120,
    )
    return proc, set(json.loads(out.read_text()))


def importtime_modules(argv: list[str]) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run ``argv`` with ``-X importtime`` (via its environment variable); return the modules it imported."""
    proc = subprocess.run(argv, capture_output=True, text=True, env=_env(PYTHONPROFILEIMPORTTIME="1"), timeout=120)
    mods = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                mods.add(name)
    return proc, mods


def heavy(mods: set[str], roots=HEAVY) -> list[str]:
    return sorted(m for m in mods if m.split(".")[0] in roots)


def trainproof_modules(mods: set[str]) -> set[str]:
    return {m for m in mods if m == "trainproof" or m.startswith("trainproof.")}


#: The command module each command's --help may import (``epoch`` is the old name of ``judge``).
COMMANDS_OF = {"rules": "rules", "epoch": "judge", "doctor": "doctor"}


@pytest.mark.parametrize(
    "args", [("--version",), ("--help",), ("rules", "--help"), ("epoch", "--help"), ("doctor", "--help")]
)
def test_version_and_help_import_nothing_heavy(tmp_path, args):
    proc, mods = loaded_modules(tmp_path, *args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()
    assert heavy(mods) == []
    # A command's own --help imports its command module and the options and output
    # helpers it is built from (click only), nothing of the layers below.
    light = LIGHT_TRAINPROOF | (
        {
            "trainproof.cli.commands",
            "trainproof.cli.options",
            "trainproof.cli.output",
            # the --format choices: the formats' registration, no reader (stdlib only)
            "trainproof.formats",
            "trainproof.formats._io",
            "trainproof.formats.lines",  # MAX_LINE, the line cap (stdlib only)
            # the report-file options: the renderers' registration, no renderer (stdlib only)
            "trainproof.render",
            f"trainproof.cli.commands.{COMMANDS_OF[args[0]]}",
        }
        if args[0] in COMMANDS_OF
        else set()
    )
    assert trainproof_modules(mods) <= light, (
        f"`trainproof {' '.join(args)}` imported {sorted(trainproof_modules(mods) - light)}"
    )


def test_python_m_version_under_importtime():
    proc, mods = importtime_modules([sys.executable, "-m", "trainproof", "--version"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"trainproof, version {__import__('trainproof').__version__}"
    assert "trainproof.cli" in mods, "the -X importtime output was not parsed"
    assert heavy(mods) == []
    assert trainproof_modules(mods) <= LIGHT_TRAINPROOF


@pytest.mark.slow
def test_console_script_version_under_importtime():
    script = Path(sys.executable).with_name("trainproof")
    if not script.exists():
        pytest.skip("no trainproof console script next to this interpreter")
    for args in (["--version"], ["--help"]):
        proc, mods = importtime_modules([str(script), *args])
        assert proc.returncode == 0, proc.stderr
        assert "trainproof.cli" in mods
        assert heavy(mods) == []
        assert trainproof_modules(mods) <= LIGHT_TRAINPROOF


@pytest.mark.slow
def test_epoch_json_on_a_small_log_imports_no_rich_sarif_or_torch(tmp_path):
    log = write_jsonl(tmp_path / "tiny.jsonl", healthy_rows(n=10))
    proc, mods = loaded_modules(tmp_path, "epoch", str(log), "--json")
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["reports"][0]["records"] == 10
    assert "numpy" in mods and "trainproof.rules.engine" in mods  # it did judge
    assert heavy(mods, ("rich", "sarif_om", "jschema_to_python", "torch")) == []


@pytest.mark.slow
def test_epoch_text_imports_rich_but_no_table_sarif_or_torch(tmp_path):
    log = write_jsonl(tmp_path / "tiny.jsonl", healthy_rows(n=10))
    proc, mods = loaded_modules(tmp_path, "epoch", str(log))
    assert proc.returncode in (0, 1), proc.stderr
    assert "records" in proc.stdout
    assert "rich.console" in mods
    assert "rich.table" not in mods
    assert heavy(mods, ("sarif_om", "jschema_to_python", "torch")) == []


#: Everything of trainproof that `judge` on a small JSONL log may import: the command, the
#: readers' sniffing (every reader module, none of their decoders), the rules and the text
#: renderer. A module added here is a start-up cost every `judge` pays; a reader's decoder
#: (the event-file protobuf and CRC code) or a preflight check is not one.
JUDGE_JSONL_TRAINPROOF = {
    "trainproof",
    "trainproof.__main__",
    "trainproof._arrays",  # np.unique / np.median / np.quantile without numpy.ma
    *(f"trainproof.aliases{m}" for m in ("", ".loss_fallback", ".mapping", ".runs", ".table", ".vocabulary")),
    "trainproof.api",
    *(f"trainproof.cli{m}" for m in ("", ".app", ".commands", ".commands.judge", ".options", ".output", ".signals")),
    "trainproof.config",
    "trainproof.discover",
    "trainproof.engines",
    "trainproof.findings",
    "trainproof.formats",
    *(
        f"trainproof.formats.{m}"
        for m in (
            "_columnar",  # the size test of the optional polars path (polars itself not imported)
            "_io",
            "_own",
            "_protowire",  # W&B's record walker (70 lines of stdlib), imported by its reader
            "_rows",
            "_sqlite",
            "_tfrecord",
            "_values",
            "_wandb_log",
            "_wandb_records",
            "base",
            "columns",
            "console",
            "coqui",
            "csv",
            "hf",
            "jsonl",
            "lines",
            "mlflow",
            "mlflow_db",
            "tfevents",
            "trackio",
            "wandb",
        )
    ),
    # the rule-id lists of the preflight families (config validation), not their checks
    "trainproof.preflight",
    *(f"trainproof.preflight.{m}{s}" for m in ("dataset", "env", "speech", "targets") for s in ("", ".ids")),
    "trainproof.redact",
    "trainproof.remote",
    *(f"trainproof.render{m}" for m in ("", ".charts", ".names", ".text")),
    "trainproof.rules",
    *(
        f"trainproof.rules.{m}"
        for m in (
            "_checkpoint",
            "_fmt",
            "_schedule",
            "_shared",
            "_stats",
            "adversarial",
            "compare",
            "engine",
            "evals",
            "grad",
            "history",
            "intent",
            "loss",
            "lr",
            "model",
            "objective_kind",
            "outcomes",
            "perf",
            "reading",
            "registry",
            "rl",
            "signatures",
            "thresholds",
            "updates",
        )
    ),
    "trainproof.runlog",
    "trainproof.sources",
}
#: The packages outside the standard library `judge` on a small JSONL log may import.
JUDGE_JSONL_THIRD_PARTY = {"click", "numpy", "orjson", "rich"}
#: Standard-library modules `judge` on a JSONL log does not need: numpy.random's (secrets,
#: hmac), statistics' (fractions, decimal), the SQLite readers' copying (tempfile, shutil)
#: and sqlite3 itself (their sniffing reads the file's header first), gzip (for a
#: compressed log only).
JUDGE_JSONL_NOT_STDLIB = {
    "secrets",
    "hmac",
    "statistics",
    "fractions",
    "decimal",
    "tempfile",
    "shutil",
    "sqlite3",
    "gzip",
}

_WRAPPER_ENV = _WRAPPER.replace(
    "json.dump(sorted(sys.modules), f)",
    "json.dump([*sorted(sys.modules), 'OPENBLAS_NUM_THREADS=' + os.environ.get('OPENBLAS_NUM_THREADS', '')], f)",
)


@pytest.mark.slow
def test_judge_on_a_small_jsonl_log_imports_only_what_it_needs(tmp_path):
    """The import set of `judge` on a 10-line JSONL log, pinned: no event-file decoder, no
    CRC library, no numpy.random or statistics, no table/SARIF/torch; one BLAS thread."""
    log = write_jsonl(tmp_path / "tiny.jsonl", healthy_rows(n=10))
    out = tmp_path / "modules.json"
    proc = subprocess.run(
        [sys.executable, "-c", _WRAPPER_ENV, "judge", str(log)],
        capture_output=True,
        text=True,
        env={k: v for k, v in _env(TP_MODULES_OUT=str(out)).items() if k != "OPENBLAS_NUM_THREADS"},
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr
    assert "records" in proc.stdout  # it did judge
    names = json.loads(out.read_text())
    assert names[-1] == "OPENBLAS_NUM_THREADS=1"
    mods = set(names[:-1])
    assert "trainproof.rules.engine" in mods and "numpy" in mods
    extra = trainproof_modules(mods) - JUDGE_JSONL_TRAINPROOF
    assert not extra, f"`judge` on a JSONL log imported {sorted(extra)}"
    roots = {m.split(".")[0] for m in mods}
    # (private top-level names: the interpreter's own and site hooks such as _distutils_hack)
    outside = {r for r in roots if r not in sys.stdlib_module_names and not r.startswith("_")} - {"trainproof"}
    assert outside <= JUDGE_JSONL_THIRD_PARTY, sorted(outside - JUDGE_JSONL_THIRD_PARTY)
    assert not roots & JUDGE_JSONL_NOT_STDLIB, sorted(roots & JUDGE_JSONL_NOT_STDLIB)
    assert not {"numpy.random", "google_crc32c", "trainproof.formats._event_proto"} & mods
    assert "rich.table" not in mods
    # numpy.ma (what np.unique and np.median load on first use) and rich's emoji table
    # (loaded on the first emoji replacement) are ~15 ms of start-up a report never needs.
    assert not {"numpy.ma", "rich._emoji_codes"} & mods, sorted({"numpy.ma", "rich._emoji_codes"} & mods)


@pytest.mark.slow
def test_judge_keeps_a_blas_thread_count_the_user_set(tmp_path):
    log = write_jsonl(tmp_path / "tiny.jsonl", healthy_rows(n=10))
    out = tmp_path / "modules.json"
    proc = subprocess.run(
        [sys.executable, "-c", _WRAPPER_ENV, "judge", str(log)],
        capture_output=True,
        text=True,
        env=_env(TP_MODULES_OUT=str(out), OPENBLAS_NUM_THREADS="2"),
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr
    assert json.loads(out.read_text())[-1] == "OPENBLAS_NUM_THREADS=2"


def test_static_format_names_match_the_reader_registry():
    from trainproof.formats import format_names

    assert list(FORMAT_NAMES) == format_names()


def test_static_short_help_matches_the_commands():
    """`trainproof --help` describes every command without importing it: the static text
    of the command table is each command's own first paragraph, and every command module
    is in the table."""
    import importlib
    import pkgutil

    import trainproof.cli.commands as family

    found = {}
    for info in pkgutil.iter_modules(family.__path__):
        mod = importlib.import_module(f"trainproof.cli.commands.{info.name}")
        for attr, cmd in vars(mod).items():
            if isinstance(cmd, click.Command):
                found[cmd.name] = (info.name, attr, cmd)
    assert set(found) == set(cli_mod.COMMANDS)
    for name, (module, attr, cmd) in found.items():
        static_module, static_attr, static_help = cli_mod.COMMANDS[name]
        assert (static_module, static_attr) == (module, attr), name
        first_paragraph = " ".join(cmd.help.partition("\n\n")[0].split())
        assert static_help == first_paragraph, f"update the short help of {name!r} in cli.app.COMMANDS"
        for limit in (30, 45, 72, 200):
            assert click.Command(name, help=static_help).get_short_help_str(limit) == cmd.get_short_help_str(limit)


def test_help_lists_every_command_as_when_all_are_loaded():
    # A fresh process lists the preflight commands from the static help; in this process,
    # with every command loaded, the help must be the same (COLUMNS=80 gives click a
    # width of 78 columns).
    fresh = subprocess.run(
        [sys.executable, "-m", "trainproof", "--help"],
        capture_output=True,
        text=True,
        env=_env(COLUMNS="80"),
        timeout=120,
    )
    assert fresh.returncode == 0, fresh.stderr
    for name in cli_mod.COMMANDS:
        cli_mod.cli.add_command(cli_mod.load_command(name), name)
    assert set(cli_mod.COMMANDS) <= set(cli_mod.cli.commands)
    ctx = click.Context(cli_mod.cli, info_name="trainproof", terminal_width=78, **cli_mod.cli.context_settings)
    out = cli_mod.cli.get_help(ctx)
    assert fresh.stdout == out + "\n"
    listed = out.split("Commands:", 1)[1].split()
    for name in cli_mod.cli.list_commands(ctx):
        assert name in listed


def test_every_listed_command_resolves():
    ctx = click.Context(cli_mod.cli)
    names = cli_mod.cli.list_commands(ctx)
    assert {"judge", "doctor", "compare", "watch", "rules", *cli_mod.COMMANDS} <= set(names)
    for name in names:
        cmd = cli_mod.cli.get_command(ctx, name)
        assert cmd is not None and cmd.name == name
        code, out, _, _ = run_cli(name, "--help")
        assert code == 0 and f" {name} [OPTIONS]" in out
