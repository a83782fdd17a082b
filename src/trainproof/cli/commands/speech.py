"""``trainproof data`` and ``trainproof tokenizer``: speech training data and its tokenizer."""

from __future__ import annotations

from pathlib import Path

import click

from ..options import output_options
from ..output import emit_reports, invoked, settings


@click.command("data")
@click.argument("source", type=click.Path(path_type=Path), metavar="DIR_OR_MANIFEST")
@output_options
def data_cmd(source: Path, as_json: bool, mute, config_path, outputs) -> int:
    """Check speech training data before the run: audio/transcript pairs from a folder
    (NAME.wav + NAME.txt/.lab), an LJSpeech folder or metadata.csv, or a NeMo manifest.jsonl.

    Missing or unreadable audio, empty transcripts, mixed sample rates or channels (FAIL);
    durations, transcript/audio rate outliers, duplicates, clipping, edge silence, digits
    and mixed scripts in the text (WARN). Needs trainproof[speech]. Exit 1 on a FAIL, 2 when
    the data cannot be read, else 0.
    """
    from ...preflight.speech import ExtraMissing, check_data

    command = invoked("data")
    _, cfg = settings(command, as_json, (), mute, config_path)
    try:
        rep = check_data(source, cfg.thresholds, cfg.mute)
    except ExtraMissing as e:
        return emit_reports([], command, as_json, outputs=outputs, error=str(e))
    return emit_reports([rep], command, as_json, outputs=outputs, error=rep.error)


@click.command("tokenizer")
@click.argument("spm_model", type=click.Path(path_type=Path))
@click.argument("transcripts", type=click.Path(path_type=Path))
@output_options
def tokenizer_cmd(spm_model: Path, transcripts: Path, as_json: bool, mute, config_path, outputs) -> int:
    """Check a SentencePiece model against the transcripts it will encode: unknown tokens,
    character coverage, tokens per second of audio and how numbers are split.

    TRANSCRIPTS is a text file (one per line), a manifest.jsonl or an LJSpeech metadata.csv
    (or its folder); tokens per second need durations (manifest `duration` or the audio).
    Needs trainproof[speech]. Exit 1 on a FAIL, 2 when an input cannot be read, else 0.
    """
    from ...preflight.speech import ExtraMissing, check_tokenizer

    command = invoked("tokenizer")
    _, cfg = settings(command, as_json, (), mute, config_path)
    try:
        rep = check_tokenizer(spm_model, transcripts, cfg.thresholds, cfg.mute)
    except ExtraMissing as e:
        return emit_reports([], command, as_json, outputs=outputs, error=str(e))
    return emit_reports([rep], command, as_json, outputs=outputs, error=rep.error)
