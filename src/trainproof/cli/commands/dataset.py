"""``trainproof dataset DATASET...`` (formerly ``preflight``): is this training data usable?"""

from __future__ import annotations

from pathlib import Path

import click

from ..options import output_options
from ..output import emit_reports, invoked, settings


@click.command("dataset")
@click.argument("datasets", metavar="DATASET...", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--tokenizer",
    metavar="PATH",
    help="A local tokenizer directory or tokenizer.json (never downloaded; needs trainproof[hf]).",
)
@click.option(
    "--max-len",
    "max_len",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Warn about records longer than N tokens (the run's max_seq_length); needs --tokenizer.",
)
@click.option(
    "--text-field",
    "text_field",
    metavar="F",
    help="Read the text from this key or dotted path (e.g. data.body) instead of detecting it.",
)
@output_options
def dataset_cmd(
    datasets: tuple[Path, ...],
    tokenizer: str | None,
    max_len: int | None,
    text_field: str | None,
    as_json: bool,
    mute,
    config_path,
    outputs,
) -> int:
    """Check a training dataset (JSONL, .json array, .jsonl.gz) before the run: malformed lines,
    empty and duplicate texts, and with --tokenizer its EOS/pad/BOS and --max-len truncation.

    The text is found in the common shapes (text, prompt/completion, Alpaca, chat messages)
    or read from --text-field. Several DATASETs (a pre-commit hook passes the changed files)
    are each judged, one report each, in the order given. Exit 1 on a FAIL, 2 when a dataset
    or the tokenizer cannot be used, else 0.
    """
    from ...preflight.dataset import check_dataset

    command = invoked("dataset")
    _, cfg = settings(command, as_json, (), mute, config_path)
    reports, errors = [], []
    for dataset in datasets:
        rep, error = check_dataset(dataset, text_field, tokenizer, max_len, cfg.mute)
        reports.append(rep)
        # The tokenizer's error is the same for every dataset: said once, before the
        # datasets' own (one dataset: the tokenizer's, else its own, as it always was).
        for why in (error or rep.error,) if len(datasets) == 1 else (error, rep.error):
            if why is not None and why not in errors:
                errors.append(why)
    return emit_reports(reports, command, as_json, outputs=outputs, error="; ".join(errors) or None)
