"""``trainproof env``: can this machine start this run at all?"""

from __future__ import annotations

import click

from ..options import output_options
from ..output import emit_reports, fail, invoked, settings


@click.command("env")
@click.option(
    "--module",
    "modules",
    multiple=True,
    metavar="NAME",
    help="Import this module in a child interpreter (repeatable), e.g. --module torch --module mypkg.",
)
@click.option(
    "--python",
    "python",
    metavar="PATH",
    default=None,
    help="The interpreter the run uses (default: the one running trainproof).",
)
@click.option(
    "--cwd",
    "cwd",
    metavar="DIR",
    default=None,
    help="The directory the run starts from; imports are probed from there (default: .).",
)
@click.option(
    "--checkpoint",
    "checkpoints",
    multiple=True,
    metavar="PATH",
    help="A checkpoint file (torch .pt/.bin, .safetensors) or a directory of shards; never unpickled (repeatable).",
)
@click.option(
    "--required-gb",
    type=click.FloatRange(min=0),
    default=None,
    metavar="N",
    help="Host RAM the run needs, in GB (2^30 bytes).",
)
@click.option(
    "--output-dir",
    metavar="DIR",
    default=None,
    help="Where the run writes checkpoints (default: --cwd); need not exist yet.",
)
@click.option(
    "--checkpoint-gb",
    type=click.FloatRange(min=0),
    default=None,
    metavar="N",
    help="Size of one checkpoint, in GB (2^30 bytes).",
)
@click.option(
    "--keep",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="N",
    help="Checkpoints kept on disk at once (save_total_limit).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=120.0,
    show_default=True,
    metavar="S",
    help="Seconds each import may take (cold imports of large stacks from network filesystems take tens of seconds).",
)
@click.option(
    "--clean-env",
    is_flag=True,
    help="Probe imports with a minimal environment (PATH, HOME, locale, temp dir only): no PYTHONPATH, "
    "LD_PRELOAD or other variables of this shell.",
)
@output_options
def env_cmd(
    modules,
    python,
    cwd,
    checkpoints,
    required_gb,
    output_dir,
    checkpoint_gb,
    keep,
    timeout,
    clean_env,
    as_json,
    mute,
    config_path,
    outputs,
) -> int:
    """Can this machine start this run at all? Probe imports in a child interpreter, verify
    checkpoints without unpickling them, and compare RAM and disk with what the run needs.

    One report for the machine: FAIL (exit 1) when the run cannot start as asked, PASS or
    WARN (exit 0) when it can, NOT-CHECKED (exit 2) when something asked for could not be
    checked or nothing was asked for.
    """
    from ...preflight.env import env_report, is_module_name

    command = invoked("env")
    for m in modules:
        if not is_module_name(m):
            fail(f"--module {m!r} is not a dotted module name", command, as_json)
    _, cfg = settings(command, as_json, (), mute, config_path)
    rep = env_report(
        modules=modules,
        python=python,
        cwd=cwd if cwd is not None else ".",
        cwd_given=cwd is not None,
        checkpoints=checkpoints,
        required_gb=required_gb,
        output_dir=output_dir,
        checkpoint_gb=checkpoint_gb,
        keep=keep,
        timeout=timeout,
        th=cfg.thresholds,
        clean_env=clean_env,
        mute=cfg.mute,
    )
    return emit_reports([rep], command, as_json, outputs=outputs)
