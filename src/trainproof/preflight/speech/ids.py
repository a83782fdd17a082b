"""The ids the speech-data check (`trainproof speech`) emits, with their documentation:
declarations only, beside the checks that emit them (:mod:`.checks`, :mod:`.tokenizer`,
:mod:`.judge`, ...).

The rule registry imports this module by name, through this package, whose ``__init__``
imports no check (:func:`trainproof.rules.registry.preflight_id_modules`): so ``trainproof
rules``, RULES.md and judging a run know these ids without loading the checks.
"""

from __future__ import annotations

from ...findings import Level
from ...rules.registry import declare

GROUP = "speech"
#: Where this family is listed among the preflight families (trainproof rules, RULES.md).
ORDER = 4

declare(
    "TP-DATA-INVALID-INPUT",
    Level.NOT_CHECKED,
    GROUP,
    "The speech data (or part of it) cannot be read",
    detects="The path does not exist or is not a directory, a manifest (.jsonl/.json) or a metadata.csv; or "
    "lines of a manifest are not JSON objects with an `audio_filepath` string, or lines of metadata.csv "
    "are not `id|text[|normalized]`. Gives the count, the first line numbers and the reason. Used by "
    "`trainproof data` and by `trainproof tokenizer` for its transcripts.",
    why="What cannot be parsed cannot be judged, and the training loader stops at the same lines "
    "(NeMo's manifest reader raises on the first bad line) or drops them silently.",
    not_mean="When only some lines are bad, every line that parsed was still checked: the other findings stand. "
    "The verdict is NOT-CHECKED (exit 2) unless a FAIL was found, because part of the data was not "
    "judged.",
    causes="A path typo; a manifest written with `str(dict)` instead of `json.dumps`; a truncated last line; a "
    "metadata.csv saved with commas or tabs instead of `|`; a header line.",
    try_="Fix or drop the reported lines (`sed -n '<line>p' FILE`) and write manifests with one "
    "`json.dumps({{...}})` per line; point the command at the corpus folder, the manifest or metadata.csv.",
)
declare(
    "TP-DATA-NO-DATA",
    Level.NOT_CHECKED,
    GROUP,
    "No audio/transcript pairs were found",
    detects="The input was read but holds no pair: a directory with no .wav/.flac and no .txt/.lab, an empty "
    "manifest or metadata.csv (blank lines only), or transcripts with no text at all for `trainproof "
    "tokenizer`.",
    why="Nothing can be judged (exit 2), and a training job pointed at the same place would start on nothing or "
    "fail at its first batch.",
    not_mean="It says nothing about the data you meant: most often the path points one folder too high or low.",
    causes="The wrong folder; audio in a format other than WAV/FLAC; an export that wrote an empty manifest.",
    try_="Point the command at the folder holding the audio, at metadata.csv, or at the manifest.jsonl the "
    "training config uses.",
)
declare(
    "TP-DATA-MISSING-AUDIO",
    Level.FAIL,
    GROUP,
    "Transcripts reference audio files that do not exist",
    detects="A manifest `audio_filepath`, a metadata.csv id (`wavs/<id>.wav`) or a directory transcript "
    "(`NAME.txt`/`NAME.lab` without `NAME.wav`) names audio that is not there. Gives the count and the "
    "first lines or files.",
    why="The data loader raises on the first missing file, somewhere inside the first epoch, after the job has "
    "queued and started; loaders that skip it train on fewer pairs than the manifest says.",
    not_mean="The audio may exist elsewhere: relative manifest paths are resolved against the manifest's folder "
    "(as NeMo does), which differs from a loader that resolves them against its working directory.",
    causes="A manifest moved without its audio, or written with paths relative to another folder; files deleted "
    "by a filtering step whose manifest was not regenerated; an incomplete download or copy.",
    try_="Regenerate the manifest from the audio that exists, write absolute paths, or copy the missing files; "
    "`ls` the first reported path to see which folder it expects.",
)
declare(
    "TP-DATA-INCONSISTENT-SR",
    Level.FAIL,
    GROUP,
    "The audio files do not share one sample rate",
    detects="The readable audio files have more than one sample rate. Gives each rate with its file count and "
    "the first files that differ from the most common rate.",
    why="Features are computed at one assumed rate: a 16 kHz file read as 22.05 kHz plays 38% fast, its mel "
    "frames cover other frequencies and its duration is wrong, so the model learns from mislabelled "
    "spectra. Loaders that check the rate (Coqui, ESPnet) stop with an error instead.",
    not_mean="Harmless when the loader resamples every file to one rate on the fly (`datasets.Audio("
    "sampling_rate=...)`, NeMo's `sample_rate` with resampling, `torchaudio.functional.resample`). "
    "Check the loader before re-encoding the corpus.",
    causes="Corpora merged from several sources; some files re-exported by an editor at its default rate; a "
    "recording session at another rate.",
    try_="Resample everything to the rate the model is configured for, once, before training "
    "(`sox in.wav -r 22050 out.wav`, or librosa/torchaudio), and regenerate durations.",
)
declare(
    "TP-DATA-INCONSISTENT-CHANNELS",
    Level.FAIL,
    GROUP,
    "The audio files do not share one channel count",
    detects="The readable audio files mix channel counts (stereo among mono). Gives the counts and the first "
    "files that differ from the most common count.",
    why="Speech models take one channel. A stereo file either breaks batching (a 2-D array where 1-D is "
    "expected), is read as interleaved samples at twice the length, or has one channel silently dropped.",
    not_mean="A loader that downmixes every file (`librosa.load(mono=True)`, `datasets.Audio(mono=True)`) makes "
    "it harmless; the stereo files' two channels may even be identical.",
    causes="Files from another recording setup or an editor export; a conversion step that kept the source's channels.",
    try_="Downmix to mono before training (`sox in.wav -c 1 out.wav`, `ffmpeg -ac 1`), or make sure the loader does.",
)
declare(
    "TP-DATA-UNREADABLE-AUDIO",
    Level.FAIL,
    GROUP,
    "Audio files that exist but cannot be decoded",
    detects="soundfile (libsndfile) cannot open or decode the file. Gives the count, the first files and "
    "libsndfile's reason.",
    why="The data loader raises on that file when a batch first includes it: possibly hours into the run, and "
    "at a random point because batches are shuffled.",
    not_mean="The file may be fine for another decoder (an MP3 or M4A renamed .wav is not WAV to libsndfile, "
    "although ffmpeg reads it); what matters is what your loader uses.",
    causes="Truncated downloads or copies, zero-byte files, files in another container with a .wav name, "
    "corrupted headers from an interrupted write.",
    try_="Re-export or re-download the reported files (`soxi FILE`, `ffprobe FILE` show what they are), or drop "
    "them from the manifest.",
)
declare(
    "TP-DATA-EMPTY-TRANSCRIPT",
    Level.FAIL,
    GROUP,
    "Pairs with no transcript text",
    detects="The transcript is missing (audio with no .txt/.lab, a manifest line without `text`), not a "
    "string, not UTF-8, or empty or whitespace only. Gives the count by kind and the first items.",
    why="A TTS model given an empty input has nothing to align the audio to (attention over zero tokens, NaN "
    "losses or a crash in the aligner); an ASR model is taught that speech transcribes to nothing, which "
    "raises deletions everywhere.",
    not_mean="Nothing about the audio: it may be fine and only the text was lost. A deliberately empty target "
    "(non-speech examples for an ASR model) is legitimate but rare: mute the id if so.",
    causes="A transcription step that failed or timed out and wrote nothing; a column mix-up in metadata.csv; "
    "transcripts saved in a legacy encoding (cp1252, latin-1).",
    try_="Re-run the transcription for the reported items or drop them; re-save transcripts as UTF-8.",
)
declare(
    "TP-DATA-DURATION-LONG",
    Level.WARN,
    GROUP,
    "Clips longer than the longest a speech model trains on",
    detects="Readable clips longer than `speech_max_duration_s` seconds. Gives the count, the longest and the "
    "first files.",
    why="Attention memory grows with the square of the length, so one long clip sets the batch's memory: an "
    "out-of-memory error in the middle of an epoch. Recipes drop them (NeMo's `max_duration: 16.7`), so "
    "they cost preparation and are never trained on; Whisper truncates its input at 30 s, cutting the "
    "audio away from the end of its transcript.",
    not_mean="Fine for models and loaders that chunk long audio (long-form ASR with forced alignment, "
    "segmenting loaders); the audio itself may be perfect.",
    causes="Unsegmented recordings (whole chapters or calls), a failed segmentation step, silence left at the "
    "end of a take.",
    try_="Segment long recordings at pauses (forced alignment, VAD) or drop them; set the loader's max "
    "duration deliberately.",
    thresholds=("speech_max_duration_s",),
)
declare(
    "TP-DATA-DURATION-SHORT",
    Level.WARN,
    GROUP,
    "Clips too short to hold a spoken sentence",
    detects="Readable clips shorter than `speech_min_duration_s` seconds (empty files included). Gives the "
    "count, the shortest and the first files.",
    why="Half a second holds a word or two at most: with a sentence-long transcript the pair is misaligned, and "
    "a clip shorter than the model's receptive field or subsampling gives zero frames (a CTC loss of "
    "infinity, an empty mel spectrogram).",
    not_mean="Single-word corpora (commands, digits) are short by design; raise or zero the threshold for them.",
    causes="Segmentation that cut at a breath; truncated files; placeholder or test clips left in the corpus.",
    try_="Listen to the shortest clips first; drop or re-segment them, or set the loader's min duration.",
    thresholds=("speech_min_duration_s",),
)
declare(
    "TP-DATA-CHAR-RATE-OUTLIER",
    Level.WARN,
    GROUP,
    "Transcripts far too long or too short for their audio",
    detects="Characters per second (letters and digits of the transcript over the clip's voiced span) more than "
    "`speech_char_rate_factor` times above or below the corpus median. Needs "
    "`speech_char_rate_min_items` measurable pairs. Gives the median and the first outliers with their "
    "rates.",
    why="A transcript that does not match its audio is the most damaging speech-data error: a TTS model learns "
    "wrong alignments (mumbling, skipped or repeated words), an ASR model learns to hallucinate or drop "
    "words. A rate far from the corpus's own speaking rate is how a mismatch shows without listening.",
    not_mean="It does not prove a mismatch: very slow or fast speakers, long pauses inside a clip, or text full "
    "of abbreviations move the rate too. It does not catch a transcript of the right length for the "
    "wrong clip.",
    causes="Off-by-one pairing after sorting or filtering; a transcript of a neighbouring segment; segmentation "
    "that cut the audio but kept the whole sentence; a clip that is mostly noise.",
    try_="Listen to the reported clips while reading their transcripts; check the pairing step (ids, sort "
    "order) for off-by-one errors.",
    thresholds=("speech_char_rate_factor", "speech_char_rate_min_items", "speech_silence_db"),
)
declare(
    "TP-DATA-DUPLICATES",
    Level.WARN,
    GROUP,
    "Audio files with identical content",
    detects="Two or more pairs whose decoded samples (and channel count) hash the same, whatever the file "
    "names. Gives the number of groups, the extra copies and the first groups.",
    why="A duplicated clip is trained on several times per epoch and, when a copy sits in the validation or "
    "test split, the evaluation is optimistic. Two copies with different transcripts teach the model "
    "contradictions.",
    not_mean="Only exact copies are found: re-encoded, trimmed or resampled copies are not. Intentional "
    "upsampling of a small speaker also duplicates.",
    causes="A manifest listing the same file twice; corpora merged with overlap; a copy step that ran twice "
    "into different names.",
    try_="Keep one copy per group (and one transcript); check that no copy crosses the train/validation split.",
)
declare(
    "TP-DATA-CLIPPING",
    Level.WARN,
    GROUP,
    "Clips with clipped (flattened) peaks",
    detects="Clips where more than `speech_clip_share` of the samples lie in runs of at least "
    "`speech_clip_run` consecutive samples at `speech_clip_level` of full scale or above (any channel). "
    "Gives the count, the worst share and the first files.",
    why="Clipping adds harmonic distortion a TTS model reproduces as a harsh, buzzy voice, and shifts the "
    "spectra an ASR model learns from. It cannot be undone by normalising the level afterwards.",
    not_mean="Peaks normalised to exactly full scale touch 1.0 for a sample or two; those runs are shorter "
    "than `speech_clip_run` and are not counted. Clipping that was scaled down after it happened sits "
    "below the level and is missed.",
    causes="Recording gain set too high; loudness normalisation that amplified past full scale without a "
    "limiter; float audio above 1.0 written to a PCM file.",
    try_="Re-record or drop the worst clips; normalise with headroom (peak at -1 dBFS) and a limiter; Audacity's "
    "Analyze > Find Clipping shows where.",
    thresholds=("speech_clip_level", "speech_clip_run", "speech_clip_share"),
)
declare(
    "TP-DATA-SILENCE",
    Level.WARN,
    GROUP,
    "Clips with long leading or trailing silence",
    detects="Clips whose silence before the first or after the last non-silent 10 ms frame lasts more than "
    "`speech_silence_max_s` seconds (silent: more than `speech_silence_db` below the clip's loudest "
    "frame), and clips with no sound at all. Gives the count, the longest edge and the first files.",
    why="A TTS model learns the silence as part of the utterance (long pauses before speaking, a stop token "
    "that fires late or never); attention-based aligners struggle to start. Edge silence also inflates "
    "durations, so duration-based batching and the char-rate check see the wrong length.",
    not_mean="Harmless when the loader trims silence itself (Coqui's `do_trim_silence`, on by default; NeMo's "
    "`trim_silence`); for ASR a little edge silence is normal and even useful. Background noise louder "
    "than the threshold is counted as sound, so noisy silence is missed.",
    causes="Takes recorded with a long count-in or tail; segmentation at coarse boundaries; padding added by a "
    "conversion tool.",
    try_="Trim the edges once before training (`librosa.effects.trim(y, top_db=45)`, or `sox in.wav out.wav "
    "silence 1 0.1 1% reverse silence 1 0.1 1% reverse`), or enable trimming in the loader.",
    thresholds=("speech_silence_db", "speech_silence_max_s"),
)
declare(
    "TP-DATA-UNNORMALIZED",
    Level.WARN,
    GROUP,
    "Transcripts with digits or symbols left unspoken",
    detects="Transcripts containing digits (any script's decimal digits) or symbols that are read aloud as "
    "words: % $ € £ ¥ & @ # + = * / \\ < > | ~ ^ _ § ° №. Gives the count, the first transcripts and "
    "the tokens found.",
    why="The audio says `nineteen eighty-four`, the text says `1984`: a TTS model has to guess how to read "
    "each number and symbol from too few examples (and reads them wrongly at inference), and a character "
    "ASR model has no alignment between the sounds and the digits. LJSpeech ships a normalised column for "
    "this reason.",
    not_mean="Written-form ASR (Whisper-style targets with digits and symbols) keeps them on purpose. "
    "Abbreviations (Dr., St.) and acronyms are not detected.",
    causes="Transcripts taken from written sources (books, subtitles) without text normalisation; the raw "
    "column of metadata.csv used instead of the normalised one.",
    try_="Normalise the text before training (NeMo text processing, `num2words`, a TTS frontend's cleaners) and "
    "check a few expansions by ear.",
)
declare(
    "TP-DATA-MIXED-SCRIPTS",
    Level.WARN,
    GROUP,
    "Transcripts that mix writing systems",
    detects="Transcripts whose letters come from more than one script (Latin and Cyrillic, Latin and Greek, "
    "...; Han, kana and Hangul count as one). Gives the count, the scripts and the first transcripts, "
    "with the words that mix scripts inside one word (look-alike letters).",
    why="Look-alike letters (Cyrillic `а` for Latin `a`) are different symbols to a model: the word is split "
    "into rare or unknown tokens, a TTS model reads it wrongly, and the tokenizer wastes vocabulary on both "
    "spellings.",
    not_mean="A bilingual sentence or a quoted foreign name mixes scripts legitimately; a word that mixes "
    "scripts inside itself almost never does.",
    causes="Text typed on a keyboard with the wrong layout; OCR or scraping that substituted look-alike "
    "characters; corpora merged across languages.",
    try_="Map look-alike characters to the corpus's script (a confusables table such as Unicode's "
    "confusables.txt) and filter out sentences in another language.",
)
declare(
    "TP-DATA-PASS",
    Level.PASS,
    GROUP,
    "The speech data passed every check that ran",
    detects="Every pair has readable audio and a transcript; one sample rate and channel count; no duration, "
    "char-rate, duplicate, clipping, silence, normalisation or script findings.",
    why="A clean, machine-readable result (exit 0) that CI can gate a training job on.",
    not_mean="It does not say the transcripts are correct or the audio is good speech: listening to a sample is "
    "still needed. Checks reported as skipped did not run.",
    causes="The corpus is consistent for every check that ran.",
    try_="Nothing to fix; keep `trainproof data` in CI so a regenerated corpus is checked again.",
)
declare(
    "TP-TOK-INVALID-MODEL",
    Level.NOT_CHECKED,
    GROUP,
    "The SentencePiece model cannot be loaded",
    detects="`sentencepiece.SentencePieceProcessor(model_file=...)` fails: the file is missing, is not a "
    "SentencePiece model (a vocab file, a Hugging Face tokenizer.json) or is corrupt.",
    why="Nothing about the tokenizer can be judged (exit 2); the training script would fail the same way.",
    not_mean="It says nothing about the transcripts.",
    causes="The `.vocab` file given instead of the `.model`; a Git LFS pointer instead of the file; a "
    "tokenizer directory instead of its model file.",
    try_="Pass the `.model` file itself (for NeMo, `tokenizer.model` inside the tokenizer dir).",
)
declare(
    "TP-TOK-HIGH-OOV",
    Level.FAIL,
    GROUP,
    "The tokenizer encodes the transcripts with many unknown tokens",
    detects="More than `tok_max_unk_share` of the tokens of the encoded transcripts are the unknown token "
    "(`sp.unk_id()`). Gives the share, the characters behind them and the first transcripts.",
    why="Every unknown token is the same target for different sounds: an ASR model learns to emit `⁇`, a TTS "
    "model cannot pronounce what it cannot see. The loss trains on noise for those positions.",
    not_mean="A model with byte fallback encodes unknown characters as bytes, not as unknown tokens (see "
    "TP-TOK-LOW-COVERAGE).",
    causes="A tokenizer trained on other text (another language, lowercase text while the transcripts are "
    "cased, normalised text while the transcripts keep digits); `character_coverage` below 1.0 on a "
    "small alphabet.",
    try_="Normalise the transcripts as the tokenizer's training text was, or retrain the tokenizer on these "
    "transcripts (`character_coverage=1.0` for alphabetic languages).",
    thresholds=("tok_max_unk_share",),
)
declare(
    "TP-TOK-LOW-COVERAGE",
    Level.WARN,
    GROUP,
    "The vocabulary does not cover the transcripts' characters",
    detects="The share of character occurrences (whitespace excluded) whose character the model encodes only as "
    "an unknown token or byte-fallback pieces is above 1 - `tok_min_char_coverage`. Gives the coverage "
    "and the uncovered characters with counts.",
    why="Uncovered characters become unknown tokens or several byte pieces each: longer sequences, targets the "
    "model sees rarely, and output it can only produce byte by byte.",
    not_mean="A handful of rare characters is expected with SentencePiece's default `character_coverage=0.9995`; "
    "the threshold leaves exactly that much room.",
    causes="A tokenizer trained on a different alphabet or normalisation (accents, case, punctuation); "
    "transcripts with symbols the training text lacked.",
    try_="Normalise the reported characters away if they carry no sound, or retrain the tokenizer with them.",
    thresholds=("tok_min_char_coverage",),
)
declare(
    "TP-TOK-HIGH-TPS",
    Level.WARN,
    GROUP,
    "More tokens per second of audio than a CTC encoder has frames",
    detects="Transcripts whose token count per second of audio exceeds `tok_max_tokens_per_second`. Durations "
    "come from the manifest's `duration` or from the audio files. Gives the corpus rate, the median and "
    "the first transcripts over the limit.",
    why="CTC needs at least one encoder frame per token (two for a repeated token): an utterance with more "
    "tokens than frames has an infinite loss (NaN, or zeroed by `zero_infinity` and silently not "
    "trained on). Transducers and attention decoders also do worse when the output is longer than the "
    "encoder's sequence.",
    not_mean="The limit is the frame rate of an 8x-subsampling encoder (FastConformer); a 4x Conformer has "
    "twice the frames. Short clips with one or two words can exceed it without harm to a non-CTC model.",
    causes="A character or very small vocabulary with an 8x encoder; fast speech; transcripts longer than their "
    "audio (see TP-DATA-CHAR-RATE-OUTLIER).",
    try_="Use a larger vocabulary (fewer tokens per second) or an encoder with less subsampling; drop clips "
    "whose transcript does not match.",
    thresholds=("tok_max_tokens_per_second",),
)
declare(
    "TP-TOK-TPS-NOT-MEASURED",
    Level.INFO,
    GROUP,
    "Tokens per second of audio were not measured",
    detects="The transcripts came without durations (a plain text file, a manifest without `duration` whose "
    "audio is missing), so tokens per second could not be computed.",
    why="The CTC frame-rate limit depends on audio length, which plain text does not carry; a skipped check is "
    "not a passed one.",
    not_mean="Nothing was found or ruled out about the rate.",
    causes="The transcripts were given as a text file, or their audio is not where the manifest says.",
    try_="Pass the manifest.jsonl (with `duration`) or the LJSpeech folder instead of a text file.",
)
declare(
    "TP-TOK-SUSPICIOUS-SPLIT",
    Level.WARN,
    GROUP,
    "Numbers and dates split into pieces that are not spoken units",
    detects="Numbers in the transcripts (digit groups with `. , : / -` separators) whose pieces cut inside a "
    "digit group with multi-digit pieces (`1984` -> `▁198` `4`), span a separator without covering the "
    "whole number (`12/03/2021` -> `▁12/03/20` `2` `1`), or glue its digits to neighbouring letters or "
    "punctuation (`84,`; ordinal suffixes like `1st` are allowed). Whole numbers and digit-by-digit "
    "splits are not flagged. Gives the count and examples with their pieces.",
    why="The pieces of a number are what the model must say or recognise, and `198` + `4` is not how anyone "
    "reads 1984: the mapping from sound to pieces changes with the digits, so numbers are transcribed or "
    "synthesised inconsistently.",
    not_mean="Digits in speech transcripts are often the real problem (TP-DATA-UNNORMALIZED): normalised text "
    "has no numbers to split. Written-form ASR may accept arbitrary number pieces.",
    causes="A BPE/unigram model trained on text with few numbers; transcripts not normalised; no "
    "`split_digits=true` when training the tokenizer.",
    try_="Normalise numbers to words in the transcripts, or retrain the tokenizer with `split_digits=true` so "
    "numbers are spelled digit by digit.",
)
declare(
    "TP-TOK-PASS",
    Level.PASS,
    GROUP,
    "The tokenizer suits the transcripts for every check that ran",
    detects="Unknown tokens, character coverage, tokens per second (when durations are known) and number "
    "splits are all within their thresholds.",
    why="A clean, machine-readable result (exit 0) that CI can gate a training job on.",
    not_mean="It does not say the vocabulary size is a good choice, only that it can represent these "
    "transcripts; checks reported as skipped did not run.",
    causes="The tokenizer was trained on text like these transcripts.",
    try_="Nothing to fix; rerun when the transcripts or the tokenizer change.",
)
