"""What a transcript says: its writing systems, the characters a speaker says, and the
transcript checks (digits and symbols not written out, mixed scripts)."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import lru_cache

from ...findings import Finding
from .. import Outcome, finding
from .corpus import Item
from .present import SHOW, first_line, names

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
    """How many letters of each writing system (:func:`script_of`) ``text`` holds."""
    return Counter(s for s in map(script_of, text) if s is not None)


def spoken_chars(text: str) -> int:
    """Letters and digits: what a speaker says (punctuation and spaces are not counted)."""
    return sum(1 for c in text if c.isalnum())


#: The ids of the transcript checks (:func:`transcripts`).
TEXT_IDS = ("TP-DATA-UNNORMALIZED", "TP-DATA-MIXED-SCRIPTS")


def transcripts(items: list[Item]) -> Outcome:
    """Transcripts with digits or symbols a speaker says as words (TP-DATA-UNNORMALIZED)
    and transcripts that mix writing systems (TP-DATA-MIXED-SCRIPTS)."""
    out: list[Finding] = []
    texts = [it for it in items if it.text]
    unnorm = [(it, _UNSPOKEN.findall(it.text)) for it in texts]
    unnorm = [(it, toks) for it, toks in unnorm if toks]
    if unnorm:
        tokens = Counter(t for _, toks in unnorm for t in toks)
        out.append(
            finding(
                "TP-DATA-UNNORMALIZED",
                f"{len(unnorm)} of {len(texts)} transcript(s) contain digits or symbols that are spoken as words",
                evidence="First: " + names(unnorm, fmt=lambda x: f"{x[0].where}: {' '.join(x[1][:4])}") + ".",
                data={
                    "count": len(unnorm),
                    "items": [it.where for it, _ in unnorm[:SHOW]],
                    "tokens": dict(tokens.most_common(10)),
                },
                line=first_line([it for it, _ in unnorm]),
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
                evidence=f"First: {names(mixed, fmt=_fmt)}. Transcripts per script: "
                + ", ".join(f"{k} {v}" for k, v in corpus_scripts.most_common())
                + ".",
                data={
                    "count": len(mixed),
                    "in_word": sum(1 for _, _, w in mixed if w),
                    "items": [it.where for it, _, _ in mixed[:SHOW]],
                    "scripts": [sorted(sc) for _, sc, _ in mixed[:SHOW]],
                    "corpus_scripts": dict(corpus_scripts),
                },
                line=first_line([it for it, _, _ in mixed]),
            )
        )
    return Outcome(findings=out, ran=list(TEXT_IDS))
