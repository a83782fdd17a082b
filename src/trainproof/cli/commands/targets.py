"""``trainproof targets`` (formerly ``objective``): failures of the objective decidable at step 0."""

from __future__ import annotations

from pathlib import Path

import click

from ..options import output_options
from ..output import emit_reports, invoked, settings


@click.command("targets")
@click.option(
    "--num-classes",
    type=click.IntRange(min=1),
    required=True,
    metavar="N",
    help="Classes the model predicts: the size of its output layer (an LM's vocabulary size).",
)
@click.option(
    "--ignore-index",
    type=int,
    default=-100,
    show_default=True,
    metavar="I",
    help="The target value the loss skips (PyTorch's and Hugging Face's default is -100).",
)
@click.option(
    "--targets",
    "targets_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="Targets as .npy, .npz or .safetensors (never unpickled). With an input_ids "
    "array next to them, the label alignment is checked too.",
)
@click.option(
    "--key",
    default=None,
    metavar="NAME",
    help="The array holding the targets in a .npz or .safetensors file (default: the only array, "
    "else 'labels' or 'targets').",
)
@click.option(
    "--loss-shifts-labels/--loss-does-not-shift-labels",
    "loss_shifts_labels",
    default=None,
    help="Whether the loss shifts labels itself (Hugging Face *ForCausalLM models do). Without either "
    "flag the alignment is reported, never judged.",
)
@output_options
def targets_cmd(
    num_classes: int,
    ignore_index: int,
    targets_path: Path | None,
    key: str | None,
    loss_shifts_labels: bool | None,
    as_json: bool,
    mute,
    config_path,
    outputs,
) -> int:
    """Check the training objective at step 0: an ignore_index that is a real class, targets
    outside [0, N), classes that never appear, and causal-LM labels shifted twice.

    Exit 1 on a FAIL, 2 when the targets cannot be read or nothing could be judged (only an
    ignore_index of -100 and no --targets), else 0.
    """
    from ...preflight.targets import ignore_index_report, objective_report

    command = invoked("targets")
    _, cfg = settings(command, as_json, (), mute, config_path)
    if targets_path is None:
        rep = ignore_index_report(num_classes, ignore_index, cfg.mute)
    else:
        rep = objective_report(
            targets_path, num_classes, ignore_index, key, loss_shifts_labels, cfg.thresholds, mute=cfg.mute
        )
    return emit_reports([rep], command, as_json, outputs=outputs, error=rep.error)
