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
:func:`check_tokenizer` (:mod:`.judge`) run them; the ids they emit are declared, with
their documentation, in :mod:`.ids`. The names below are loaded on first use (PEP 562):
importing this package imports no check, so the rule registry reaches :mod:`.ids` through
it without loading the checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import lazy_names

if TYPE_CHECKING:
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
        import_sentencepiece,
        import_soundfile,
        load_corpus,
    )
    from .judge import check_data, check_tokenizer
    from .present import SHOW
    from .text import script_of, scripts_in, spoken_chars
    from .tokenizer import SPACE, TOK_IDS, Encoded, Vocab, number_splits

#: Each public name -> the module of this package that defines it.
_WHERE = {
    "AUDIO_EXT": "corpus",
    "BLOCK_S": "audio",
    "DATA_IDS": "checks",
    "FRAME_S": "audio",
    "NOT_TRANSCRIPTS": "corpus",
    "SHOW": "present",
    "SPACE": "tokenizer",
    "SPEECH_EXTRA": "corpus",
    "TEXT_SUFFIXES": "corpus",
    "TOK_IDS": "tokenizer",
    "Audio": "audio",
    "Corpus": "corpus",
    "Encoded": "tokenizer",
    "ExtraMissing": "corpus",
    "InputError": "corpus",
    "Item": "corpus",
    "Vocab": "tokenizer",
    "_clip_runs": "audio",
    "analyse_audio": "audio",
    "check_data": "judge",
    "check_tokenizer": "judge",
    "import_sentencepiece": "corpus",
    "import_soundfile": "corpus",
    "load_corpus": "corpus",
    "number_splits": "tokenizer",
    "read_audio": "audio",
    "script_of": "text",
    "scripts_in": "text",
    "spoken_chars": "text",
}

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

__getattr__, __dir__ = lazy_names(__name__, _WHERE)
