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
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..findings import Finding, Level, Report, Skip
from ..rules.thresholds import DEFAULT, Thresholds
from . import finding, report

SPEECH_EXTRA = 'pip install "trainproof[speech]"'
#: How many offending items a message or evidence names (presentation only).
SHOW = 5
AUDIO_EXT = (".wav", ".flac")
#: Transcript names tried next to ``NAME.wav``, in order of preference.
TEXT_SUFFIXES = (".normalized.txt", ".txt", ".lab", ".original.txt")
#: Text files that sit in corpus folders without being transcripts.
NOT_TRANSCRIPTS = frozenset({"readme", "license", "licence", "changelog", "copying", "notes", "authors"})
#: Silence is judged on frames of this length (seconds).
FRAME_S = 0.010
#: Audio is decoded in blocks of about this many seconds.
BLOCK_S = 30.0
#: Transcripts encoded per SentencePiece call.
_BATCH = 1024

# --- declarations ------------------------------------------------------------------------


DATA_IDS = (
    "TP-DATA-INVALID-INPUT",
    "TP-DATA-NO-DATA",
    "TP-DATA-MISSING-AUDIO",
    "TP-DATA-INCONSISTENT-SR",
    "TP-DATA-INCONSISTENT-CHANNELS",
    "TP-DATA-UNREADABLE-AUDIO",
    "TP-DATA-EMPTY-TRANSCRIPT",
    "TP-DATA-DURATION-LONG",
    "TP-DATA-DURATION-SHORT",
    "TP-DATA-CHAR-RATE-OUTLIER",
    "TP-DATA-DUPLICATES",
    "TP-DATA-CLIPPING",
    "TP-DATA-SILENCE",
    "TP-DATA-UNNORMALIZED",
    "TP-DATA-MIXED-SCRIPTS",
    "TP-DATA-PASS",
)
TOK_IDS = (
    "TP-TOK-INVALID-MODEL",
    "TP-TOK-HIGH-OOV",
    "TP-TOK-LOW-COVERAGE",
    "TP-TOK-HIGH-TPS",
    "TP-TOK-TPS-NOT-MEASURED",
    "TP-TOK-SUSPICIOUS-SPLIT",
    "TP-TOK-PASS",
)


class ExtraMissing(Exception):
    """A package of the ``[speech]`` extra is not installed: exit 2, nothing judged."""


class InputError(Exception):
    """The input as a whole cannot be used; ``rule_id`` says which NOT-CHECKED id applies."""

    def __init__(self, message: str, rule_id: str = "TP-DATA-INVALID-INPUT") -> None:
        super().__init__(message)
        self.rule_id = rule_id


def import_soundfile():
    try:
        import soundfile
    except (ImportError, OSError) as e:  # OSError: the package is there but libsndfile is not
        raise ExtraMissing(f"reading audio needs soundfile ({e.__class__.__name__}: {e}): {SPEECH_EXTRA}") from None
    return soundfile


def import_sentencepiece():
    try:
        import sentencepiece
    except ImportError as e:
        raise ExtraMissing(
            f"the tokenizer check needs sentencepiece ({e.__class__.__name__}: {e}): {SPEECH_EXTRA}"
        ) from None
    return sentencepiece


# --- reading the corpus ------------------------------------------------------------------


@dataclass
class Item:
    """One audio/transcript pair as the input lists it."""

    where: str  # how findings name it: "line 3 (wavs/a.wav)" or "spk1/a.wav"
    audio: Path | None  # resolved audio path (None: plain-text transcripts)
    text: str | None  # None: missing
    text_problem: str | None = None  # missing | not a string | not UTF-8 | empty
    line: int | None = None
    declared_duration: float | None = None


@dataclass
class Corpus:
    kind: str  # directory | ljspeech | manifest | lines
    items: list[Item] = field(default_factory=list)
    bad: list[tuple[int, str]] = field(default_factory=list)  # (line, reason), all of them
    notes: list[str] = field(default_factory=list)
    lines_file: Path | None = None


def load_corpus(path: Path, allow_lines: bool = False) -> Corpus:
    """Read the pairs of a corpus directory, LJSpeech metadata.csv or NeMo manifest (or, with
    ``allow_lines``, a file of one transcript per line).

    Raises:
        InputError: the input as a whole cannot be read.
    """
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    if path.is_dir():
        meta = path / "metadata.csv"
        if meta.is_file():
            return _ljspeech(meta, path / "wavs")
        return _directory(path)
    name = path.name.lower()
    if name.endswith((".jsonl", ".json")):
        return _manifest(path)
    if name.endswith(".csv"):
        return _ljspeech(path, path.parent / "wavs")
    if allow_lines:
        return _lines(path)
    raise InputError(f"{path}: not a corpus directory, a manifest (.jsonl/.json) or an LJSpeech metadata.csv")


def _read_lines(path: Path) -> list[tuple[int, str | None]]:
    """``(line number, text or None when not UTF-8)`` for every line of a text file."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read {path}: {e}") from None
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    out = []
    for i, line in enumerate(raw.splitlines(), 1):
        try:
            out.append((i, line.decode("utf-8")))
        except UnicodeDecodeError:
            out.append((i, None))
    return out


def _text_item(item: Item, value) -> Item:
    if value is None:
        item.text_problem = "missing"
    elif not isinstance(value, str):
        item.text_problem = "not a string"
    elif not value.strip():
        item.text, item.text_problem = value, "empty"
    else:
        item.text = value.strip()
    return item


def _manifest(path: Path) -> Corpus:
    c = Corpus("manifest", lines_file=path)
    blank = 0
    for lineno, line in _read_lines(path):
        if line is None:
            c.bad.append((lineno, "not UTF-8"))
            continue
        if not line.strip():
            blank += 1
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            c.bad.append((lineno, f"invalid JSON: {e.msg} (column {e.colno})"))
            continue
        if not isinstance(obj, dict):
            c.bad.append((lineno, "not a JSON object"))
            continue
        ref = obj.get("audio_filepath")
        if not isinstance(ref, str) or not ref.strip():
            c.bad.append((lineno, "no `audio_filepath` string"))
            continue
        audio = Path(ref)
        if not audio.is_absolute():
            audio = path.parent / audio
        dur = obj.get("duration")
        dur = float(dur) if isinstance(dur, (int, float)) and not isinstance(dur, bool) else None
        item = Item(f"line {lineno} ({ref})", audio, None, line=lineno, declared_duration=dur)
        c.items.append(_text_item(item, obj.get("text")))
    if blank:
        c.notes.append(f"{blank} blank line(s) skipped")
    return c


def _ljspeech(meta: Path, wavs: Path) -> Corpus:
    c = Corpus("ljspeech", lines_file=meta)
    normalized = raw = 0
    for lineno, line in _read_lines(meta):
        if line is None:
            c.bad.append((lineno, "not UTF-8"))
            continue
        if not line.strip():
            continue
        cols = line.split("|")
        if len(cols) < 2 or not cols[0].strip():
            c.bad.append((lineno, "not `id|text|normalized` (no `|`-separated id and text)"))
            continue
        uid = cols[0].strip()
        if len(cols) >= 3 and cols[2].strip():
            text = cols[2]
            normalized += 1
        else:
            text = cols[1]
            raw += 1
        rel = f"wavs/{uid}.wav"
        c.items.append(_text_item(Item(f"line {lineno} ({rel})", wavs / f"{uid}.wav", None, line=lineno), text))
    if normalized:
        c.notes.append(
            f"LJSpeech metadata: the normalized (third) column is the text for {normalized} line(s)"
            + (f", the second column for {raw}" if raw else "")
        )
    return c


def _lines(path: Path) -> Corpus:
    c = Corpus("lines", lines_file=path)
    for lineno, line in _read_lines(path):
        if line is None:
            c.bad.append((lineno, "not UTF-8"))
        elif line.strip():
            c.items.append(Item(f"line {lineno}", None, line.strip(), line=lineno))
    return c


def _stem(p: Path) -> Path:
    """``a/b/x`` for ``a/b/x.wav``, ``a/b/x.txt`` and ``a/b/x.normalized.txt``."""
    name = p.name
    for suf in (*TEXT_SUFFIXES, *AUDIO_EXT):
        if name.lower().endswith(suf):
            return p.with_name(name[: -len(suf)])
    return p.with_suffix("")


def _directory(root: Path) -> Corpus:
    c = Corpus("directory")
    audio: dict[Path, Path] = {}
    texts: dict[Path, list[Path]] = {}
    for p in sorted(root.rglob("*")):
        if not p.is_file() or any(part.startswith(".") for part in p.relative_to(root).parts):
            continue
        low = p.name.lower()
        if low.endswith(AUDIO_EXT):
            audio.setdefault(_stem(p), p)
        elif low.endswith((".txt", ".lab")):
            texts.setdefault(_stem(p), []).append(p)
    audio_dirs = {p.parent for p in audio.values()}
    for stem, wav in sorted(audio.items()):
        rel = wav.relative_to(root).as_posix()
        item = Item(rel, wav, None)
        found = None
        for suf in TEXT_SUFFIXES:
            cand = stem.with_name(stem.name + suf)
            if cand.is_file():
                found = cand
                break
        if found is None:
            c.items.append(_text_item(item, None))
            continue
        try:
            value = found.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError:
            item.text_problem = "not UTF-8"
            c.items.append(item)
            continue
        except OSError:
            value = None
        c.items.append(_text_item(item, " ".join(value.split()) if isinstance(value, str) else None))
    orphans = 0
    for stem, files in sorted(texts.items()):
        if stem in audio or stem.parent not in audio_dirs or stem.name.lower() in NOT_TRANSCRIPTS:
            continue
        t = files[0]
        wav = stem.with_name(stem.name + ".wav")
        try:
            value = " ".join(t.read_bytes().decode("utf-8-sig").split())
        except (UnicodeDecodeError, OSError):
            value = None
        c.items.append(_text_item(Item(t.relative_to(root).as_posix(), wav, None), value))
        orphans += 1
    if orphans:
        c.notes.append(f"{orphans} transcript(s) have no audio file of their name")
    return c


# --- audio ---------------------------------------------------------------------------------


@dataclass
class Audio:
    sr: int
    channels: int
    frames: int
    digest: str
    clipped: int
    lead: float
    trail: float
    voiced: float
    silent: bool  # no sound at all

    @property
    def duration(self) -> float:
        return self.frames / self.sr if self.sr else 0.0

    @property
    def clip_share(self) -> float:
        n = self.frames * self.channels
        return self.clipped / n if n else 0.0


def _clip_runs(flags: np.ndarray, carry: np.ndarray, run_min: int) -> tuple[int, np.ndarray]:
    """Samples in runs of at least ``run_min`` True values per column of ``flags``; a run
    touching the end of the block is carried into the next one (``carry``)."""
    n = flags.shape[0]
    counted = 0
    new = np.zeros_like(carry)
    for ch in range(flags.shape[1]):
        f = flags[:, ch]
        if not f.any():
            if carry[ch] >= run_min:
                counted += int(carry[ch])
            continue
        d = np.diff(np.concatenate(([0], f.astype(np.int8), [0])))
        starts = np.flatnonzero(d == 1)
        ends = np.flatnonzero(d == -1)
        lens = (ends - starts).astype(np.int64)
        if starts[0] == 0:
            lens[0] += carry[ch]
        elif carry[ch] >= run_min:
            counted += int(carry[ch])
        if ends[-1] == n:
            new[ch] = lens[-1]
            lens = lens[:-1]
        counted += int(lens[lens >= run_min].sum())
    return counted, new


def analyse_audio(sf, path: Path, th: Thresholds) -> Audio:
    """Decode ``path`` in blocks and measure it. Raises whatever the decoder raises."""
    info = sf.info(str(path))
    sr, ch = int(info.samplerate), int(info.channels)
    flen = max(1, int(round(sr * FRAME_S)))
    block = flen * max(1, int(round(BLOCK_S / FRAME_S)))
    h = hashlib.blake2b(digest_size=16)
    h.update(f"channels={ch};".encode())
    carry = np.zeros(ch, dtype=np.int64)
    clipped = frames = 0
    power: list[np.ndarray] = []
    for blk in sf.blocks(str(path), blocksize=block, dtype="float32", always_2d=True):
        if not len(blk):
            continue
        frames += len(blk)
        h.update(np.ascontiguousarray(blk, dtype="<f4").tobytes())
        n, carry = _clip_runs(np.abs(blk) >= th.speech_clip_level, carry, th.speech_clip_run)
        clipped += n
        sq = (blk.astype(np.float64) ** 2).mean(axis=1)
        full = len(sq) // flen
        if full:
            power.append(sq[: full * flen].reshape(full, flen).mean(axis=1))
        if len(sq) % flen:
            power.append(np.array([sq[full * flen :].mean()]))
    clipped += int(carry[carry >= th.speech_clip_run].sum())
    duration = frames / sr if sr else 0.0
    lead = trail = 0.0
    voiced = duration
    silent = False
    if frames:
        p = np.concatenate(power)
        ref = float(p.max())
        if ref <= 1e-20:
            silent, lead, voiced = True, duration, 0.0
        else:
            loud = np.flatnonzero(p >= ref * 10.0 ** (-th.speech_silence_db / 10.0))
            first, last = int(loud[0]), int(loud[-1])
            lead = first * flen / sr
            trail = max(0, frames - (last + 1) * flen) / sr
            voiced = max(0.0, duration - lead - trail)
    return Audio(sr, ch, frames, h.hexdigest(), clipped, lead, trail, voiced, silent)


# --- text ------------------------------------------------------------------------------------

_SYMBOLS = "%$€£¥&@#+=*/\\<>|~^_§°№"
_UNSPOKEN = re.compile(r"\S*(?:\d|[" + re.escape(_SYMBOLS) + r"])\S*")
_SCRIPTS = frozenset(
    (
        "LATIN",
        "CYRILLIC",
        "GREEK",
        "ARABIC",
        "HEBREW",
        "ARMENIAN",
        "GEORGIAN",
        "DEVANAGARI",
        "BENGALI",
        "GURMUKHI",
        "GUJARATI",
        "ORIYA",
        "TAMIL",
        "TELUGU",
        "KANNADA",
        "MALAYALAM",
        "SINHALA",
        "THAI",
        "LAO",
        "TIBETAN",
        "MYANMAR",
        "ETHIOPIC",
        "KHMER",
        "MONGOLIAN",
        "SYRIAC",
        "THAANA",
        "CJK",
        "HIRAGANA",
        "KATAKANA",
        "HANGUL",
        "BOPOMOFO",
    )
)
_CJK = frozenset(("CJK", "HIRAGANA", "KATAKANA", "HANGUL", "BOPOMOFO"))


@lru_cache(maxsize=4096)
def script_of(ch: str) -> str | None:
    """The writing system of a letter (Han, kana and Hangul together as ``CJK``), or None."""
    if not ch.isalpha():
        return None
    try:
        name = unicodedata.name(ch)
    except ValueError:
        return None
    for word in name.split():
        if word in _SCRIPTS:
            return "CJK" if word in _CJK else word
    return None


def scripts_in(text: str) -> Counter:
    return Counter(s for s in map(script_of, text) if s is not None)


def spoken_chars(text: str) -> int:
    """Letters and digits: what a speaker says (punctuation and spaces are not counted)."""
    return sum(1 for c in text if c.isalnum())


# --- presentation ----------------------------------------------------------------------------


def _names(items, total: int | None = None, fmt=None) -> str:
    shown = [fmt(x) if fmt else x.where for x in list(items)[:SHOW]]
    total = len(items) if total is None else total
    more = f" and {total - len(shown)} more" if total > len(shown) else ""
    return ", ".join(shown) + more


def _first_line(items) -> int | None:
    for it in items:
        if it.line is not None:
            return it.line
    return None


def _s(x: float) -> str:
    return f"{x:.2f} s"


def _finish(
    findings: list[Finding],
    ran: list[str],
    skipped: dict,
    mute: set,
    ids: tuple,
    pass_id: str,
    pass_msg: str,
    pass_data: dict,
) -> list[Finding]:
    findings = [f for f in findings if f.id not in mute]
    if pass_id not in mute and not any(f.level in (Level.FAIL, Level.WARN, Level.NOT_CHECKED) for f in findings):
        findings.append(finding(pass_id, pass_msg, data=pass_data))
        ran.append(pass_id)
    return findings


def _bad_lines_finding(corpus: Corpus) -> Finding:
    n = len(corpus.bad)
    first = "; ".join(f"line {ln}: {why}" for ln, why in corpus.bad[:SHOW])
    what = {"manifest": "manifest", "ljspeech": "metadata.csv", "lines": "transcripts file"}.get(corpus.kind, "input")
    return finding(
        "TP-DATA-INVALID-INPUT",
        f"{n} {what} line(s) could not be read ({first.split(';')[0]}" + (f" and {n - 1} more)" if n > 1 else ")"),
        evidence=f"First: {first}. {len(corpus.items)} pair(s) from the other lines were checked.",
        data={
            "count": n,
            "lines": [ln for ln, _ in corpus.bad[:SHOW]],
            "reasons": [w for _, w in corpus.bad[:SHOW]],
            "file": str(corpus.lines_file) if corpus.lines_file else None,
        },
        line=corpus.bad[0][0],
    )


def _input_report(path: Path, kind: str, e: InputError) -> Report:
    f = finding(e.rule_id, str(e), data={"path": str(path)})
    return report(str(path), kind, [f], ran=[e.rule_id], error=str(e))


# --- trainproof data ---------------------------------------------------------------------------


def check_data(path: Path, th: Thresholds = DEFAULT, mute=()) -> Report:
    """Judge a speech corpus. Raises :class:`ExtraMissing` when soundfile is not installed."""
    sf = import_soundfile()
    mute = set(mute)
    kind = "speech-data"
    try:
        corpus = load_corpus(path)
    except InputError as e:
        return _input_report(path, kind, e)
    items = corpus.items
    meta: dict = {
        "input": corpus.kind,
        "pairs": len(items),
        "lines_file": str(corpus.lines_file) if corpus.lines_file else None,
    }
    notes = list(corpus.notes)
    findings: list[Finding] = []
    ran: list[str] = ["TP-DATA-INVALID-INPUT"]
    skipped: dict[str, Skip] = {}
    if corpus.bad:
        findings.append(_bad_lines_finding(corpus))
    if not items:
        msg = f"{path}: no audio/transcript pairs found"
        if not corpus.bad:
            findings.append(finding("TP-DATA-NO-DATA", msg, data={"path": str(path)}))
        ran.append("TP-DATA-NO-DATA")
        findings = [f for f in findings if f.id not in mute]
        return report(str(path), kind, findings, ran=ran, meta=meta, notes=notes, error=msg)

    # audio, decoded once per distinct file
    cache: dict[Path, Audio | str] = {}
    missing, unreadable, measured = [], [], []
    for it in items:
        p = it.audio
        if p is None or not p.is_file():
            missing.append(it)
            continue
        key = p.resolve()
        if key not in cache:
            try:
                cache[key] = analyse_audio(sf, p, th)
            except Exception as e:  # noqa: BLE001 - any decoder failure is an unreadable file
                cache[key] = " ".join(str(e).split()).rstrip(".") or type(e).__name__
        a = cache[key]
        if isinstance(a, str):
            unreadable.append((it, a))
        else:
            measured.append((it, a))

    ran += ["TP-DATA-MISSING-AUDIO", "TP-DATA-UNREADABLE-AUDIO", "TP-DATA-EMPTY-TRANSCRIPT"]
    if missing:
        findings.append(
            finding(
                "TP-DATA-MISSING-AUDIO",
                f"{len(missing)} of {len(items)} pair(s) reference audio that does not exist",
                evidence=f"Missing: {_names(missing)}."
                + (f" Looked for: {missing[0].audio}." if missing[0].audio is not None else ""),
                data={
                    "count": len(missing),
                    "items": [m.where for m in missing[:SHOW]],
                    "paths": [str(m.audio) for m in missing[:SHOW]],
                },
                line=_first_line(missing),
            )
        )
    if unreadable:
        findings.append(
            finding(
                "TP-DATA-UNREADABLE-AUDIO",
                f"{len(unreadable)} audio file(s) cannot be decoded",
                evidence="First: "
                + "; ".join(f"{it.where}: {why}" for it, why in unreadable[:SHOW])
                + (f" (and {len(unreadable) - SHOW} more)" if len(unreadable) > SHOW else "")
                + ".",
                data={
                    "count": len(unreadable),
                    "items": [it.where for it, _ in unreadable[:SHOW]],
                    "reasons": [why for _, why in unreadable[:SHOW]],
                },
                line=_first_line([it for it, _ in unreadable]),
            )
        )
    empty = [it for it in items if it.text_problem]
    if empty:
        kinds = Counter(it.text_problem for it in empty)
        findings.append(
            finding(
                "TP-DATA-EMPTY-TRANSCRIPT",
                f"{len(empty)} pair(s) have no transcript text ("
                + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
                + ")",
                evidence=f"First: {_names(empty, fmt=lambda it: f'{it.where} ({it.text_problem})')}.",
                data={"count": len(empty), "kinds": dict(kinds), "items": [it.where for it in empty[:SHOW]]},
                line=_first_line(empty),
            )
        )

    if measured:
        findings += _audio_findings(measured, th, ran, skipped, meta)
    else:
        for rid in (
            "TP-DATA-INCONSISTENT-SR",
            "TP-DATA-INCONSISTENT-CHANNELS",
            "TP-DATA-DURATION-LONG",
            "TP-DATA-DURATION-SHORT",
            "TP-DATA-CHAR-RATE-OUTLIER",
            "TP-DATA-DUPLICATES",
            "TP-DATA-CLIPPING",
            "TP-DATA-SILENCE",
        ):
            skipped[rid] = Skip("absent", "no readable audio")
    findings += _text_findings(items, ran)

    findings = _finish(
        findings,
        ran,
        skipped,
        mute,
        DATA_IDS,
        "TP-DATA-PASS",
        f"{len(items)} pair(s), {len(measured)} clip(s) read, "
        f"{meta.get('duration_s', {}).get('total', 0.0) / 60:.1f} min of audio: no findings",
        {"pairs": len(items)},
    )
    return report(
        str(path), kind, findings, ran=ran, skipped=skipped, records=len(items), meta=meta, notes=notes, mute=mute
    )


def _majority(counter: Counter):
    return sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


def _audio_findings(
    measured: list[tuple[Item, Audio]], th: Thresholds, ran: list, skipped: dict, meta: dict
) -> list[Finding]:
    out: list[Finding] = []
    durs = [a.duration for _, a in measured]
    meta["audio_read"] = len(measured)
    meta["duration_s"] = {
        "total": round(sum(durs), 3),
        "min": round(min(durs), 3),
        "median": round(statistics.median(durs), 3),
        "max": round(max(durs), 3),
    }

    for rid, attr, unit, label in (
        ("TP-DATA-INCONSISTENT-SR", "sr", "Hz", "sample rates"),
        ("TP-DATA-INCONSISTENT-CHANNELS", "channels", "channel(s)", "channel counts"),
    ):
        ran.append(rid)
        counts = Counter(getattr(a, attr) for _, a in measured)
        meta["sample_rates" if attr == "sr" else "channels"] = {str(k): v for k, v in sorted(counts.items())}
        if len(counts) > 1:
            major = _majority(counts)
            odd = [(it, a) for it, a in measured if getattr(a, attr) != major]
            spread = ", ".join(f"{k} {unit}: {v}" for k, v in sorted(counts.items()))
            out.append(
                finding(
                    rid,
                    f"{len(counts)} {label} among {len(measured)} clips ({spread})",
                    evidence=f"Most common: {major} {unit}. Differing: "
                    + _names(odd, fmt=lambda x: f"{x[0].where} ({getattr(x[1], attr)} {unit})")
                    + ".",
                    data={
                        "counts": {str(k): v for k, v in counts.items()},
                        "majority": major,
                        "differing": len(odd),
                        "items": [it.where for it, _ in odd[:SHOW]],
                    },
                    line=_first_line([it for it, _ in odd]),
                )
            )

    ran += ["TP-DATA-DURATION-LONG", "TP-DATA-DURATION-SHORT"]
    long_ = sorted(
        [(it, a) for it, a in measured if a.duration > th.speech_max_duration_s], key=lambda x: -x[1].duration
    )
    if long_:
        out.append(
            finding(
                "TP-DATA-DURATION-LONG",
                f"{len(long_)} clip(s) longer than {th.speech_max_duration_s:g} s (longest {_s(long_[0][1].duration)})",
                evidence="Longest first: " + _names(long_, fmt=lambda x: f"{x[0].where} ({_s(x[1].duration)})") + ".",
                data={
                    "count": len(long_),
                    "limit_s": th.speech_max_duration_s,
                    "max_s": round(long_[0][1].duration, 3),
                    "items": [it.where for it, _ in long_[:SHOW]],
                },
                line=_first_line([it for it, _ in long_]),
            )
        )
    short = sorted(
        [(it, a) for it, a in measured if a.duration < th.speech_min_duration_s], key=lambda x: x[1].duration
    )
    if short:
        out.append(
            finding(
                "TP-DATA-DURATION-SHORT",
                f"{len(short)} clip(s) shorter than {th.speech_min_duration_s:g} s "
                f"(shortest {_s(short[0][1].duration)})",
                evidence="Shortest first: " + _names(short, fmt=lambda x: f"{x[0].where} ({_s(x[1].duration)})") + ".",
                data={
                    "count": len(short),
                    "limit_s": th.speech_min_duration_s,
                    "min_s": round(short[0][1].duration, 3),
                    "items": [it.where for it, _ in short[:SHOW]],
                },
                line=_first_line([it for it, _ in short]),
            )
        )

    # characters per second of voiced audio
    rates = [
        (it, a, spoken_chars(it.text) / a.voiced)
        for it, a in measured
        if it.text and spoken_chars(it.text) and a.voiced >= FRAME_S
    ]
    if len(rates) >= th.speech_char_rate_min_items:
        ran.append("TP-DATA-CHAR-RATE-OUTLIER")
        med = statistics.median(r for _, _, r in rates)
        meta["char_rate"] = {"median": round(med, 3), "measured": len(rates)}
        f = th.speech_char_rate_factor
        odd = sorted([x for x in rates if x[2] > med * f or x[2] < med / f], key=lambda x: -abs(np.log(x[2] / med)))
        if odd:
            out.append(
                finding(
                    "TP-DATA-CHAR-RATE-OUTLIER",
                    f"{len(odd)} transcript(s) are more than {f:g}x off the corpus's {med:.1f} characters per second",
                    evidence="Furthest first: "
                    + _names(
                        odd,
                        fmt=lambda x: (
                            f"{x[0].where} ({x[2]:.1f} chars/s: "
                            f"{spoken_chars(x[0].text)} chars in {_s(x[1].voiced)} voiced)"
                        ),
                    )
                    + f". Median over {len(rates)} pairs: {med:.1f} chars/s.",
                    data={
                        "count": len(odd),
                        "median": round(med, 3),
                        "factor": f,
                        "items": [it.where for it, _, _ in odd[:SHOW]],
                        "rates": [round(r, 3) for _, _, r in odd[:SHOW]],
                    },
                    line=_first_line([it for it, _, _ in odd]),
                )
            )
    else:
        skipped["TP-DATA-CHAR-RATE-OUTLIER"] = Skip(
            "too_few_points", f"{len(rates)} measurable pair(s), {th.speech_char_rate_min_items} needed"
        )

    ran.append("TP-DATA-DUPLICATES")
    groups: dict[str, list[Item]] = {}
    for it, a in measured:
        if a.frames:
            groups.setdefault(a.digest, []).append(it)
    dups = [g for g in groups.values() if len(g) > 1]
    if dups:
        extra = sum(len(g) - 1 for g in dups)
        out.append(
            finding(
                "TP-DATA-DUPLICATES",
                f"{extra} clip(s) duplicate the audio of another ({len(dups)} group(s))",
                evidence="Groups: "
                + "; ".join(" = ".join(it.where for it in g[:SHOW]) for g in dups[:SHOW])
                + (f" (and {len(dups) - SHOW} more groups)" if len(dups) > SHOW else "")
                + ".",
                data={
                    "groups": len(dups),
                    "extra_copies": extra,
                    "first_groups": [[it.where for it in g[:SHOW]] for g in dups[:SHOW]],
                },
                line=_first_line([g[1] for g in dups]),
            )
        )

    ran.append("TP-DATA-CLIPPING")
    clipped = sorted(
        [(it, a) for it, a in measured if a.clip_share > th.speech_clip_share], key=lambda x: -x[1].clip_share
    )
    if clipped:
        out.append(
            finding(
                "TP-DATA-CLIPPING",
                f"{len(clipped)} clip(s) are clipped (worst: {100 * clipped[0][1].clip_share:.1f}% "
                f"of samples flattened at full scale)",
                evidence="Worst first: "
                + _names(clipped, fmt=lambda x: f"{x[0].where} ({100 * x[1].clip_share:.2f}%)")
                + f". Counted: runs of {th.speech_clip_run}+ samples at >= {th.speech_clip_level:g} of full scale; "
                f"limit {100 * th.speech_clip_share:g}% of samples.",
                data={
                    "count": len(clipped),
                    "worst_share": round(clipped[0][1].clip_share, 6),
                    "items": [it.where for it, _ in clipped[:SHOW]],
                    "shares": [round(a.clip_share, 6) for _, a in clipped[:SHOW]],
                },
                line=_first_line([it for it, _ in clipped]),
            )
        )

    ran.append("TP-DATA-SILENCE")
    lim = th.speech_silence_max_s
    quiet = sorted(
        [(it, a) for it, a in measured if a.frames and (a.silent or max(a.lead, a.trail) > lim)],
        key=lambda x: (not x[1].silent, -max(x[1].lead, x[1].trail)),
    )
    if quiet:

        def _edge(x):
            it, a = x
            if a.silent:
                return f"{it.where} (no sound at all, {_s(a.duration)})"
            return f"{it.where} (leading {_s(a.lead)}, trailing {_s(a.trail)})"

        n_silent = sum(1 for _, a in quiet if a.silent)
        out.append(
            finding(
                "TP-DATA-SILENCE",
                f"{len(quiet)} clip(s) have more than {lim:g} s of leading or trailing silence"
                + (f" ({n_silent} with no sound at all)" if n_silent else ""),
                evidence=f"First: {_names(quiet, fmt=_edge)}. Silent: {th.speech_silence_db:g} dB below the clip's "
                f"loudest 10 ms frame.",
                data={
                    "count": len(quiet),
                    "no_sound": n_silent,
                    "limit_s": lim,
                    "items": [it.where for it, _ in quiet[:SHOW]],
                    "lead_s": [round(a.lead, 3) for _, a in quiet[:SHOW]],
                    "trail_s": [round(a.trail, 3) for _, a in quiet[:SHOW]],
                },
                line=_first_line([it for it, _ in quiet]),
            )
        )
    return out


def _text_findings(items: list[Item], ran: list) -> list[Finding]:
    out = []
    texts = [it for it in items if it.text]
    ran += ["TP-DATA-UNNORMALIZED", "TP-DATA-MIXED-SCRIPTS"]
    unnorm = [(it, _UNSPOKEN.findall(it.text)) for it in texts]
    unnorm = [(it, toks) for it, toks in unnorm if toks]
    if unnorm:
        tokens = Counter(t for _, toks in unnorm for t in toks)
        out.append(
            finding(
                "TP-DATA-UNNORMALIZED",
                f"{len(unnorm)} of {len(texts)} transcript(s) contain digits or symbols that are spoken as words",
                evidence="First: " + _names(unnorm, fmt=lambda x: f"{x[0].where}: {' '.join(x[1][:4])}") + ".",
                data={
                    "count": len(unnorm),
                    "items": [it.where for it, _ in unnorm[:SHOW]],
                    "tokens": dict(tokens.most_common(10)),
                },
                line=_first_line([it for it, _ in unnorm]),
            )
        )
    mixed = []
    corpus_scripts: Counter = Counter()
    for it in texts:
        sc = scripts_in(it.text)
        corpus_scripts.update(sc.keys())
        if len(sc) > 1:
            words = [w for w in it.text.split() if len(scripts_in(w)) > 1]
            mixed.append((it, sc, words))
    if mixed:

        def _fmt(x):
            it, sc, words = x
            s = f"{it.where}: {'+'.join(sorted(sc))}"
            return s + (f" in {', '.join(repr(w) for w in words[:3])}" if words else "")

        out.append(
            finding(
                "TP-DATA-MIXED-SCRIPTS",
                f"{len(mixed)} transcript(s) mix writing systems"
                + (f" ({sum(1 for _, _, w in mixed if w)} inside a word)" if any(w for _, _, w in mixed) else ""),
                evidence=f"First: {_names(mixed, fmt=_fmt)}. Transcripts per script: "
                + ", ".join(f"{k} {v}" for k, v in corpus_scripts.most_common())
                + ".",
                data={
                    "count": len(mixed),
                    "in_word": sum(1 for _, _, w in mixed if w),
                    "items": [it.where for it, _, _ in mixed[:SHOW]],
                    "scripts": [sorted(sc) for _, sc, _ in mixed[:SHOW]],
                    "corpus_scripts": dict(corpus_scripts),
                },
                line=_first_line([it for it, _, _ in mixed]),
            )
        )
    return out


# --- trainproof tokenizer ------------------------------------------------------------------------

_NUMBER = re.compile(r"\d+(?:[.,:/\-]\d+)*")
_SUFFIX = re.compile(r"^(?:st|nd|rd|th|s|'s)$", re.I)
SPACE = "▁"


def number_splits(pieces: list[str], special: list[bool]) -> tuple[int, list[tuple[str, list[str], str]]]:
    """The numbers of one encoded transcript, and those split into pieces that are not
    spoken units: ``(count, [(number, its pieces, reason)])``. ``special[i]`` marks unknown,
    control and byte pieces (they hold no digits)."""
    found = 0
    out = []
    words: list[list[int]] = []
    for i, p in enumerate(pieces):
        if not words or (p.startswith(SPACE) and not special[i]):
            words.append([])
        words[-1].append(i)
    for w in words:
        chars: list[str] = []
        owner: list[int] = []
        for i in w:
            text = "\x00" if special[i] else pieces[i].replace(SPACE, "")
            chars.extend(text)
            owner.extend([i] * len(text))
        word = "".join(chars)
        for m in _NUMBER.finditer(word):
            found += 1
            a, b = m.span()
            inside = sorted(set(owner[a:b]))
            reason = None
            for i in inside:
                lo = owner.index(i)
                hi = len(owner) - owner[::-1].index(i)
                outside = word[lo:a] + word[b:hi] if (lo < a or hi > b) else ""
                if outside and not _SUFFIX.match(outside):
                    reason = "digits glued to neighbouring characters"
                    break
            if reason is None and len(inside) > 1:
                groups = [(g.start() + a, g.end() + a) for g in re.finditer(r"\d+", m.group())]
                for i in inside:
                    if sum(1 for ga, gb in groups if i in owner[ga:gb]) > 1:
                        reason = "a piece spans a separator without the whole number"
                        break
                if reason is None:
                    for ga, gb in groups:
                        cover = Counter(owner[ga:gb])
                        if len(cover) > 1 and max(cover.values()) > 1:
                            reason = "cut inside a digit group"
                            break
            if reason:
                out.append((m.group(), [pieces[i] for i in inside], reason))
    return found, out


def check_tokenizer(model: Path, source: Path, th: Thresholds = DEFAULT, mute=()) -> Report:
    """Judge a SentencePiece model against transcripts. Raises :class:`ExtraMissing`."""
    spm = import_sentencepiece()
    mute = set(mute)
    kind = "tokenizer"
    try:
        corpus = load_corpus(source, allow_lines=True)
    except InputError as e:
        return _input_report(source, kind, e)
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

    findings: list[Finding] = []
    ran: list[str] = []
    skipped: dict[str, Skip] = {}
    notes = list(corpus.notes)
    if corpus.bad:
        findings.append(_bad_lines_finding(corpus))
    items = [it for it in corpus.items if it.text]
    n_vocab = sp.get_piece_size()
    unk = sp.unk_id()
    is_byte = [bool(sp.is_byte(i)) for i in range(n_vocab)]
    specials = [bool(sp.is_control(i) or sp.is_unknown(i) or is_byte[i]) for i in range(n_vocab)]
    meta: dict = {
        "model": {"file": str(model), "vocab_size": n_vocab, "unk_id": unk, "byte_fallback": any(is_byte)},
        "input": corpus.kind,
        "transcripts": len(items),
    }
    if not items:
        msg = f"{source}: no transcripts with text"
        findings.append(finding("TP-DATA-NO-DATA", msg, data={"path": str(source)}))
        findings = [f for f in findings if f.id not in mute]
        return report(str(source), kind, findings, ran=["TP-DATA-NO-DATA"], meta=meta, notes=notes, error=msg)

    # encode
    ids_all: list[list[int]] = []
    for k in range(0, len(items), _BATCH):
        ids_all += sp.encode([it.text for it in items[k : k + _BATCH]])
    n_tokens = sum(len(x) for x in ids_all)
    n_unk = sum(1 for x in ids_all for t in x if t == unk)
    meta["tokens"] = n_tokens

    # characters covered by the vocabulary
    chars = Counter(c for it in items for c in it.text if not c.isspace())
    uncovered: Counter = Counter()
    for c, n in chars.items():
        enc = sp.encode(c)
        if any(t == unk or (0 <= t < n_vocab and is_byte[t]) for t in enc):
            uncovered[c] = n
    total_chars = sum(chars.values())
    coverage = 1.0 - sum(uncovered.values()) / total_chars if total_chars else 1.0
    unk_share = n_unk / n_tokens if n_tokens else 0.0
    meta["char_coverage"] = round(coverage, 6)
    meta["unk_share"] = round(unk_share, 6)
    meta["uncovered_chars"] = dict(uncovered.most_common(20))

    def _chars_txt(cnt: Counter) -> str:
        return ", ".join(f"{c!r} ×{n}" for c, n in cnt.most_common(10)) + (
            f" and {len(cnt) - 10} more" if len(cnt) > 10 else ""
        )

    ran += ["TP-TOK-HIGH-OOV", "TP-TOK-LOW-COVERAGE"]
    if unk_share > th.tok_max_unk_share:
        bad = [it for it, ids in zip(items, ids_all) if unk in ids]
        findings.append(
            finding(
                "TP-TOK-HIGH-OOV",
                f"{100 * unk_share:.2f}% of the tokens are unknown ({n_unk} of {n_tokens}; limit "
                f"{100 * th.tok_max_unk_share:g}%), in {len(bad)} of {len(items)} transcript(s)",
                evidence=f"Characters the vocabulary lacks: {_chars_txt(uncovered) or 'none (unknown pieces)'}. "
                f"First transcripts: {_names(bad)}.",
                data={
                    "unk_tokens": n_unk,
                    "tokens": n_tokens,
                    "unk_share": round(unk_share, 6),
                    "transcripts": len(bad),
                    "items": [it.where for it in bad[:SHOW]],
                    "chars": dict(uncovered.most_common(10)),
                },
                line=_first_line(bad),
            )
        )
    if coverage < th.tok_min_char_coverage:
        bad = [it for it in items if any(c in uncovered for c in it.text)]
        findings.append(
            finding(
                "TP-TOK-LOW-COVERAGE",
                f"the vocabulary covers {100 * coverage:.2f}% of the transcripts' characters "
                f"(needs {100 * th.tok_min_char_coverage:g}%): {len(uncovered)} character(s) missing",
                evidence=f"Uncovered ({'byte fallback' if any(is_byte) else 'unknown token'}): {_chars_txt(uncovered)}. "
                f"First transcripts: {_names(bad)}.",
                data={
                    "coverage": round(coverage, 6),
                    "uncovered": dict(uncovered.most_common(20)),
                    "items": [it.where for it in bad[:SHOW]],
                },
                line=_first_line(bad),
            )
        )

    # tokens per second of audio
    durations, why_not = _durations(corpus, items)
    pairs = [(it, len(ids), d) for it, ids, d in zip(items, ids_all, durations) if d and d > 0]
    if pairs:
        ran.append("TP-TOK-HIGH-TPS")
        rate = sum(n for _, n, _ in pairs) / sum(d for _, _, d in pairs)
        med = statistics.median(n / d for _, n, d in pairs)
        meta["tokens_per_second"] = {"corpus": round(rate, 3), "median": round(med, 3), "measured": len(pairs)}
        if len(pairs) < len(items):
            notes.append(
                f"tokens per second measured on {len(pairs)} of {len(items)} transcripts (no duration for the others)"
            )
        fast = sorted([x for x in pairs if x[1] / x[2] > th.tok_max_tokens_per_second], key=lambda x: -x[1] / x[2])
        if fast:
            findings.append(
                finding(
                    "TP-TOK-HIGH-TPS",
                    f"{len(fast)} transcript(s) need more than {th.tok_max_tokens_per_second:g} "
                    f"tokens per second of audio (corpus {rate:.1f}, median {med:.1f})",
                    evidence="Fastest first: "
                    + _names(
                        fast, fmt=lambda x: f"{x[0].where} ({x[1] / x[2]:.1f} tokens/s: {x[1]} tokens in {_s(x[2])})"
                    )
                    + ".",
                    data={
                        "count": len(fast),
                        "corpus_rate": round(rate, 3),
                        "median_rate": round(med, 3),
                        "limit": th.tok_max_tokens_per_second,
                        "items": [it.where for it, _, _ in fast[:SHOW]],
                        "rates": [round(n / d, 3) for _, n, d in fast[:SHOW]],
                    },
                    line=_first_line([it for it, _, _ in fast]),
                )
            )
    else:
        skipped["TP-TOK-HIGH-TPS"] = Skip("absent", why_not)
        findings.append(
            finding("TP-TOK-TPS-NOT-MEASURED", f"tokens per second not measured: {why_not}", data={"reason": why_not})
        )
        ran.append("TP-TOK-TPS-NOT-MEASURED")

    # numbers
    ran.append("TP-TOK-SUSPICIOUS-SPLIT")
    n_numbers = 0
    splits: list[tuple[Item, str, list[str], str]] = []
    for it, ids in zip(items, ids_all):
        if not any(c.isdecimal() for c in it.text):
            continue
        pieces = [sp.id_to_piece(t) for t in ids]
        special = [specials[t] if 0 <= t < n_vocab else True for t in ids]
        found, bad = number_splits(pieces, special)
        n_numbers += found
        splits += [(it, num, ps, reason) for num, ps, reason in bad]
    meta["numbers"] = {"found": n_numbers, "suspicious": len(splits)}
    if splits:
        reasons = Counter(r for *_, r in splits)
        findings.append(
            finding(
                "TP-TOK-SUSPICIOUS-SPLIT",
                f"{len(splits)} of {n_numbers} number(s) are split into pieces that are not "
                f"spoken units (" + ", ".join(f"{n} {r}" for r, n in reasons.most_common()) + ")",
                evidence="First: " + _names(splits, fmt=lambda x: f"{x[0].where}: {x[1]} -> {' | '.join(x[2])}") + ".",
                data={
                    "count": len(splits),
                    "numbers": n_numbers,
                    "reasons": dict(reasons),
                    "examples": [
                        {"where": it.where, "number": num, "pieces": ps, "reason": r}
                        for it, num, ps, r in splits[:SHOW]
                    ],
                },
                line=_first_line([x[0] for x in splits]),
            )
        )

    findings = _finish(
        findings,
        ran,
        skipped,
        mute,
        TOK_IDS,
        "TP-TOK-PASS",
        f"{len(items)} transcript(s), {n_tokens} tokens: {100 * coverage:.2f}% of characters "
        f"covered, {100 * unk_share:.2f}% unknown tokens",
        {"transcripts": len(items), "tokens": n_tokens},
    )
    return report(
        str(source), kind, findings, ran=ran, skipped=skipped, records=len(items), meta=meta, notes=notes, mute=mute
    )


def _durations(corpus: Corpus, items: list[Item]) -> tuple[list[float | None], str]:
    """Seconds of audio per transcript: the manifest's ``duration``, else the audio file's
    length (soundfile header). Returns the list and, when none is known, why."""
    if corpus.kind == "lines":
        return [None] * len(items), "plain-text transcripts carry no durations"
    out: list[float | None] = []
    sf = None
    for it in items:
        d = it.declared_duration
        if d is None and it.audio is not None and it.audio.is_file():
            if sf is None:
                sf = import_soundfile()
            try:
                info = sf.info(str(it.audio))
                d = info.frames / info.samplerate if info.samplerate else None
            except Exception:  # noqa: BLE001 - unreadable audio: no duration (`trainproof data` reports it)
                d = None
        out.append(d)
    return out, "no transcript has a duration or a readable audio file"
