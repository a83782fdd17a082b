"""Reading a speech corpus: audio/transcript pairs from a directory, an LJSpeech
``metadata.csv`` or a NeMo manifest, or a file of one transcript per line (see
:mod:`trainproof.preflight.speech` for the shapes), and the optional ``[speech]`` imports."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

SPEECH_EXTRA = 'pip install "trainproof[speech]"'
AUDIO_EXT = (".wav", ".flac")
#: Transcript names tried next to ``NAME.wav``, in order of preference.
TEXT_SUFFIXES = (".normalized.txt", ".txt", ".lab", ".original.txt")
#: Text files that sit in corpus folders without being transcripts.
NOT_TRANSCRIPTS = frozenset({"readme", "license", "licence", "changelog", "copying", "notes", "authors"})


class ExtraMissing(Exception):
    """A package of the ``[speech]`` extra is not installed: exit 2, nothing judged."""


class InputError(Exception):
    """The input as a whole cannot be used; ``rule_id`` says which NOT-CHECKED id applies."""

    def __init__(self, message: str, rule_id: str = "TP-DATA-INVALID-INPUT") -> None:
        super().__init__(message)
        self.rule_id = rule_id


def import_soundfile():
    """The ``soundfile`` module. Raises :class:`ExtraMissing` when it (or libsndfile) is absent."""
    try:
        import soundfile
    except (ImportError, OSError) as e:  # OSError: the package is there but libsndfile is not
        raise ExtraMissing(f"reading audio needs soundfile ({e.__class__.__name__}: {e}): {SPEECH_EXTRA}") from None
    return soundfile


def import_sentencepiece():
    """The ``sentencepiece`` module. Raises :class:`ExtraMissing` when it is absent."""
    try:
        import sentencepiece
    except ImportError as e:
        raise ExtraMissing(
            f"the tokenizer check needs sentencepiece ({e.__class__.__name__}: {e}): {SPEECH_EXTRA}"
        ) from None
    return sentencepiece


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
    """What an input holds: its kind, its pairs, the lines that could not be read (all of
    them, 1-based), notes for the report, and the file line numbers refer to."""

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


def durations(corpus: Corpus, items: list[Item]) -> tuple[list[float | None], str]:
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
