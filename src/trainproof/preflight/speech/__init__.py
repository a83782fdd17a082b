"""``trainproof data`` and ``trainproof tokenizer``: speech training data, before the run.

**Inputs** (both commands read the same shapes; :func:`load_corpus`):

========================  ================================================================
input                     pairs
========================  ================================================================
a directory               every ``*.wav`` / ``*.flac`` under it (recursively) with the
                          transcript next to it: ``NAME.txt`` or ``NAME.lab`` (LibriTTS's
                          ``NAME.normalized.txt`` is preferred, ``NAME.original.txt`` is
                          the last resort). A transcript with no audio of its name, in a
                          folder that holds audio, is a pair whose audio is missing
                          (README/LICENSE-like names are not transcripts).
a directory holding       LJSpeech: ``metadata.csv`` lines ``id|text|normalized``, the
``metadata.csv``, or the  audio at ``wavs/<id>.wav`` next to it. The trained text is the
``metadata.csv`` itself   third column (numbers written out) when it is not blank, else
                          the second (Coqui's ``ljspeech`` formatter reads the third).
a ``.jsonl`` / ``.json``  a NeMo manifest: one JSON object per line with
manifest                  ``audio_filepath`` (relative paths are resolved against the
                          manifest's folder, as NeMo does), ``text`` and optionally
                          ``duration`` (seconds).
any other file            ``trainproof tokenizer`` only: one transcript per line.
========================  ================================================================

Line numbers (``Finding.line``) are 1-based lines of the manifest or ``metadata.csv``.

**Audio** is read with ``soundfile`` in blocks (bounded memory whatever the clip length):
sample rate, channels, length, a BLAKE2b hash of the decoded samples (float32; identical
audio content in two files, whatever their names or containers), clipping (runs of at
least ``speech_clip_run`` consecutive samples at ``speech_clip_level`` of full scale or
above, per channel) and the edge silence: the clip's power in 10 ms frames (mean square
over channels), silent where it is more than ``speech_silence_db`` below the loudest
frame, as ``librosa.effects.trim`` decides it. The *voiced span* is the clip between its
first and last non-silent frame; characters per second are measured on it, so edge
silence (its own finding) does not move the rate.

**Tokenizer**: a SentencePiece ``.model`` encodes every transcript as a training script
would (``sp.encode(text)``: the model's own normalisation, no extra markers).

``soundfile`` and ``sentencepiece`` are the ``[speech]`` extra, imported lazily: without
them the command exits 2 naming the extra, and says nothing about the data.

The package: :mod:`.corpus` reads the input, :mod:`.audio` measures each file,
:mod:`.checks` judges the pairs and their audio, :mod:`.text` the transcripts,
:mod:`.tokenizer` a SentencePiece model against them; :func:`check_data` and
:func:`check_tokenizer` run them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ...config import Config
from ...findings import Report
from ...rules.thresholds import DEFAULT, Thresholds
from .. import Check, Outcome, apply_mute, finding, report, run
from . import checks, text, tokenizer
from .audio import BLOCK_S, FRAME_S, Audio, _clip_runs, analyse_audio, read_audio
from .checks import DATA_IDS
from .corpus import (
    AUDIO_EXT,
    NOT_TRANSCRIPTS,
    SPEECH_EXTRA,
    TEXT_SUFFIXES,
    Corpus,
    ExtraMissing,
    InputError,
    Item,
    durations,
    import_sentencepiece,
    import_soundfile,
    load_corpus,
)
from .present import SHOW, bad_lines, input_report, with_pass
from .text import script_of, scripts_in, spoken_chars
from .tokenizer import SPACE, TOK_IDS, Encoded, Vocab, number_splits

__all__ = [
    "AUDIO_EXT",
    "BLOCK_S",
    "DATA_IDS",
    "FRAME_S",
    "NOT_TRANSCRIPTS",
    "SHOW",
    "SPACE",
    "SPEECH_EXTRA",
    "TEXT_SUFFIXES",
    "TOK_IDS",
    "Audio",
    "Corpus",
    "Encoded",
    "ExtraMissing",
    "InputError",
    "Item",
    "Vocab",
    "_clip_runs",
    "analyse_audio",
    "check_data",
    "check_tokenizer",
    "import_sentencepiece",
    "import_soundfile",
    "load_corpus",
    "number_splits",
    "read_audio",
    "script_of",
    "scripts_in",
    "spoken_chars",
]

# Both reports are built by preflight.run with nothing muted, and mute is applied after, as
# apply_mute does it: the pass finding summarises the other checks' findings left after
# mute (a check sees only the thresholds), and a check that run would leave out for its ids
# being muted still places its skips where the reports have always listed them.


def _config(th: Thresholds) -> Config:
    """The thresholds ``th`` with nothing muted (mute is applied after the run)."""
    return Config(thresholds=th)


def _unmuted(rep: Report, mute: set[str]) -> Report:
    """An input with nothing to judge: its muted findings dropped, and (as these reports
    have always been) its muted ids neither removed from ``ran`` nor listed skipped."""
    return replace(rep, findings=[f for f in rep.findings if f.id not in mute])


def check_data(path: Path, th: Thresholds = DEFAULT, mute=()) -> Report:
    """Judge a speech corpus (a directory, LJSpeech metadata.csv or NeMo manifest) with the
    thresholds ``th``; ``mute``: ids reported skipped, reason ``muted``.

    An input that cannot be read is a report with ``error`` set (its NOT-CHECKED reason).

    Raises:
        ExtraMissing: soundfile is not installed.
    """
    sf = import_soundfile()
    mute = set(mute)
    kind = "speech-data"
    try:
        corpus = load_corpus(path)
    except InputError as e:
        return input_report(path, kind, e)
    items = corpus.items
    meta: dict = {
        "input": corpus.kind,
        "pairs": len(items),
        "lines_file": str(corpus.lines_file) if corpus.lines_file else None,
    }
    notes = list(corpus.notes)
    found = [Check(("TP-DATA-INVALID-INPUT",), lambda th: checks.invalid_input(corpus), "input lines")]
    if not items:
        found.append(Check(("TP-DATA-NO-DATA",), lambda th: checks.no_data(path, corpus), "pairs found"))
        rep = run(found, _config(th), file=str(path), kind=kind, meta=meta, notes=notes)
        return _unmuted(rep, mute)
    audio = read_audio(sf, items, th)
    found += [
        Check(checks.PAIR_IDS, lambda th: checks.pairs(items, audio), "pairs"),
        Check(checks.AUDIO_IDS, lambda th: checks.audio(audio.measured, th), "audio"),
        Check(text.TEXT_IDS, lambda th: text.transcripts(items), "transcripts"),
    ]
    rep = run(found, _config(th), file=str(path), kind=kind, meta=meta, notes=notes)
    rep = with_pass(
        rep,
        mute,
        "TP-DATA-PASS",
        f"{len(items)} pair(s), {len(audio.measured)} clip(s) read, "
        f"{rep.meta.get('duration_s', {}).get('total', 0.0) / 60:.1f} min of audio: no findings",
        {"pairs": len(items)},
    )
    return apply_mute(rep, mute)


def check_tokenizer(model: Path, source: Path, th: Thresholds = DEFAULT, mute=()) -> Report:
    """Judge a SentencePiece ``model`` against the transcripts of ``source`` (a text file of
    one per line, a manifest, an LJSpeech metadata.csv or a corpus directory) with the
    thresholds ``th``; ``mute``: ids reported skipped, reason ``muted``.

    An input or model that cannot be read is a report with ``error`` set.

    Raises:
        ExtraMissing: sentencepiece (or, for durations read from audio, soundfile) is not installed.
    """
    spm = import_sentencepiece()
    mute = set(mute)
    kind = "tokenizer"
    try:
        corpus = load_corpus(source, allow_lines=True)
    except InputError as e:
        return input_report(source, kind, e)
    try:
        if not model.is_file():
            raise OSError(f"no such file: {model}")
        sp = spm.SentencePieceProcessor(model_file=str(model))
    except (OSError, RuntimeError, ValueError, TypeError) as e:
        msg = f"{model}: cannot load the SentencePiece model: {' '.join(str(e).split())}"
        return report(
            str(source),
            kind,
            [finding("TP-TOK-INVALID-MODEL", msg, data={"model": str(model)})],
            ran=["TP-TOK-INVALID-MODEL"],
            error=msg,
        )

    notes = list(corpus.notes)
    items = [it for it in corpus.items if it.text]
    vocab = Vocab.of(sp)
    meta: dict = {
        "model": {
            "file": str(model),
            "vocab_size": vocab.size,
            "unk_id": vocab.unk,
            "byte_fallback": any(vocab.is_byte),
        },
        "input": corpus.kind,
        "transcripts": len(items),
    }
    # The tokenizer report lists the input lines that cannot be read without counting
    # TP-DATA-INVALID-INPUT among the ids it ran.
    found = [Check(("TP-DATA-INVALID-INPUT",), lambda th: Outcome(findings=bad_lines(corpus), ran=[]), "input lines")]
    if not items:
        msg = f"{source}: no transcripts with text"
        no_text = Outcome(
            findings=[finding("TP-DATA-NO-DATA", msg, data={"path": str(source)})], ran=["TP-DATA-NO-DATA"], error=msg
        )
        found.append(Check(("TP-DATA-NO-DATA",), lambda th: no_text, "transcripts found"))
        return _unmuted(run(found, _config(th), file=str(source), kind=kind, meta=meta, notes=notes), mute)
    enc = tokenizer.encode(sp, vocab, items)
    secs, why_not = durations(corpus, items)
    found += [
        Check(
            ("TP-TOK-HIGH-OOV", "TP-TOK-LOW-COVERAGE"),
            lambda th: tokenizer.vocabulary(items, vocab, enc, th),
            "vocabulary",
        ),
        Check(
            ("TP-TOK-HIGH-TPS", "TP-TOK-TPS-NOT-MEASURED"),
            lambda th: tokenizer.tokens_per_second(items, enc, secs, why_not, th),
            "tokens per second",
        ),
        Check(("TP-TOK-SUSPICIOUS-SPLIT",), lambda th: tokenizer.numbers(sp, vocab, items, enc), "numbers"),
    ]
    rep = run(found, _config(th), file=str(source), kind=kind, meta=meta, notes=notes)
    rep = with_pass(
        rep,
        mute,
        "TP-TOK-PASS",
        f"{len(items)} transcript(s), {enc.tokens} tokens: {100 * enc.coverage:.2f}% of characters "
        f"covered, {100 * enc.unk_share:.2f}% unknown tokens",
        {"transcripts": len(items), "tokens": enc.tokens},
    )
    return apply_mute(rep, mute)
