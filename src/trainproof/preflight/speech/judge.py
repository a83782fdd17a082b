""":func:`check_data` and :func:`check_tokenizer`: the checks of ``trainproof speech``
(:mod:`.corpus`, :mod:`.audio`, :mod:`.checks`, :mod:`.text`, :mod:`.tokenizer`) run on a
corpus, each as one report."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ...config import Config
from ...findings import Report
from ...rules.thresholds import DEFAULT, Thresholds
from .. import Check, Outcome, apply_mute, finding, report, run
from . import checks, text, tokenizer
from .audio import read_audio
from .corpus import (
    InputError,
    durations,
    import_sentencepiece,
    import_soundfile,
    load_corpus,
)
from .present import bad_lines, input_report, with_pass
from .tokenizer import Vocab

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
