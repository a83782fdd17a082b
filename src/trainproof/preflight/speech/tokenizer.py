"""The checks of ``trainproof tokenizer``: a SentencePiece model against the transcripts it
will encode (unknown tokens, character coverage, tokens per second, how numbers are split)."""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass

from ...findings import Finding, Skip
from ...rules.thresholds import Thresholds
from .. import Outcome, finding
from .corpus import Item
from .present import SHOW, first_line, fmt_s, names

#: Transcripts encoded per SentencePiece call.
_BATCH = 1024

TOK_IDS = (
    "TP-TOK-INVALID-MODEL",
    "TP-TOK-HIGH-OOV",
    "TP-TOK-LOW-COVERAGE",
    "TP-TOK-HIGH-TPS",
    "TP-TOK-TPS-NOT-MEASURED",
    "TP-TOK-SUSPICIOUS-SPLIT",
    "TP-TOK-PASS",
)


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


@dataclass
class Vocab:
    """What a SentencePiece model's vocabulary holds: its size, the unknown id, which ids
    are byte pieces and which are special (control, unknown, byte: they hold no digits)."""

    size: int
    unk: int
    is_byte: list[bool]
    specials: list[bool]

    @classmethod
    def of(cls, sp) -> Vocab:
        """The vocabulary of a loaded ``SentencePieceProcessor``."""
        n_vocab = sp.get_piece_size()
        is_byte = [bool(sp.is_byte(i)) for i in range(n_vocab)]
        specials = [bool(sp.is_control(i) or sp.is_unknown(i) or is_byte[i]) for i in range(n_vocab)]
        return cls(n_vocab, sp.unk_id(), is_byte, specials)


@dataclass
class Encoded:
    """Transcripts encoded as a training script would (``sp.encode(text)``): the ids of each,
    the token and unknown-token counts, and the characters the vocabulary lacks (with how
    often they occur; a character is lacking when it encodes to the unknown id or a byte
    piece)."""

    ids: list[list[int]]
    tokens: int
    unk_tokens: int
    uncovered: Counter
    coverage: float
    unk_share: float


def encode(sp, vocab: Vocab, items: list[Item]) -> Encoded:
    """Encode the text of ``items`` with ``sp`` (in batches of :data:`_BATCH`)."""
    unk, n_vocab, is_byte = vocab.unk, vocab.size, vocab.is_byte
    ids_all: list[list[int]] = []
    for k in range(0, len(items), _BATCH):
        ids_all += sp.encode([it.text for it in items[k : k + _BATCH]])
    n_tokens = sum(len(x) for x in ids_all)
    n_unk = sum(1 for x in ids_all for t in x if t == unk)
    chars = Counter(c for it in items for c in it.text if not c.isspace())
    uncovered: Counter = Counter()
    for c, n in chars.items():
        enc = sp.encode(c)
        if any(t == unk or (0 <= t < n_vocab and is_byte[t]) for t in enc):
            uncovered[c] = n
    total_chars = sum(chars.values())
    coverage = 1.0 - sum(uncovered.values()) / total_chars if total_chars else 1.0
    unk_share = n_unk / n_tokens if n_tokens else 0.0
    return Encoded(ids_all, n_tokens, n_unk, uncovered, coverage, unk_share)


def _chars_txt(cnt: Counter) -> str:
    return ", ".join(f"{c!r} ×{n}" for c, n in cnt.most_common(10)) + (
        f" and {len(cnt) - 10} more" if len(cnt) > 10 else ""
    )


def vocabulary(items: list[Item], vocab: Vocab, enc: Encoded, th: Thresholds) -> Outcome:
    """Unknown tokens (TP-TOK-HIGH-OOV) and characters the vocabulary lacks
    (TP-TOK-LOW-COVERAGE) against ``th``'s limits; ``meta`` gets the counts and shares, and
    its ``items`` are the transcripts (the report's ``records``)."""
    unk, is_byte, ids_all = vocab.unk, vocab.is_byte, enc.ids
    n_tokens, n_unk, uncovered = enc.tokens, enc.unk_tokens, enc.uncovered
    coverage, unk_share = enc.coverage, enc.unk_share
    findings: list[Finding] = []
    meta = {
        "tokens": n_tokens,
        "char_coverage": round(coverage, 6),
        "unk_share": round(unk_share, 6),
        "uncovered_chars": dict(uncovered.most_common(20)),
    }
    if unk_share > th.tok_max_unk_share:
        bad = [it for it, ids in zip(items, ids_all) if unk in ids]
        findings.append(
            finding(
                "TP-TOK-HIGH-OOV",
                f"{100 * unk_share:.2f}% of the tokens are unknown ({n_unk} of {n_tokens}; limit "
                f"{100 * th.tok_max_unk_share:g}%), in {len(bad)} of {len(items)} transcript(s)",
                evidence=f"Characters the vocabulary lacks: {_chars_txt(uncovered) or 'none (unknown pieces)'}. "
                f"First transcripts: {names(bad)}.",
                data={
                    "unk_tokens": n_unk,
                    "tokens": n_tokens,
                    "unk_share": round(unk_share, 6),
                    "transcripts": len(bad),
                    "items": [it.where for it in bad[:SHOW]],
                    "chars": dict(uncovered.most_common(10)),
                },
                line=first_line(bad),
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
                f"First transcripts: {names(bad)}.",
                data={
                    "coverage": round(coverage, 6),
                    "uncovered": dict(uncovered.most_common(20)),
                    "items": [it.where for it in bad[:SHOW]],
                },
                line=first_line(bad),
            )
        )

    return Outcome(findings=findings, ran=["TP-TOK-HIGH-OOV", "TP-TOK-LOW-COVERAGE"], meta=meta, items=len(items))


def tokens_per_second(
    items: list[Item], enc: Encoded, durations: list[float | None], why_not: str, th: Thresholds
) -> Outcome:
    """Transcripts needing more than ``th.tok_max_tokens_per_second`` tokens per second of
    audio (``durations``, seconds per item); TP-TOK-TPS-NOT-MEASURED, with ``why_not``, when
    no item has a duration."""
    findings: list[Finding] = []
    ran: list[str] = []
    skipped: dict[str, Skip] = {}
    notes: list[str] = []
    meta: dict = {}
    pairs = [(it, len(ids), d) for it, ids, d in zip(items, enc.ids, durations) if d and d > 0]
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
                    + names(
                        fast, fmt=lambda x: f"{x[0].where} ({x[1] / x[2]:.1f} tokens/s: {x[1]} tokens in {fmt_s(x[2])})"
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
                    line=first_line([it for it, _, _ in fast]),
                )
            )
    else:
        skipped["TP-TOK-HIGH-TPS"] = Skip("absent", why_not)
        findings.append(
            finding("TP-TOK-TPS-NOT-MEASURED", f"tokens per second not measured: {why_not}", data={"reason": why_not})
        )
        ran.append("TP-TOK-TPS-NOT-MEASURED")

    return Outcome(findings=findings, ran=ran, skipped=skipped, notes=notes, meta=meta)


def numbers(sp, vocab: Vocab, items: list[Item], enc: Encoded) -> Outcome:
    """Numbers split into pieces that are not spoken units (TP-TOK-SUSPICIOUS-SPLIT, see
    :func:`number_splits`); ``meta`` gets how many numbers were found and split."""
    n_vocab, specials = vocab.size, vocab.specials
    findings: list[Finding] = []
    meta: dict = {}
    n_numbers = 0
    splits: list[tuple[Item, str, list[str], str]] = []
    for it, ids in zip(items, enc.ids):
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
                evidence="First: " + names(splits, fmt=lambda x: f"{x[0].where}: {x[1]} -> {' | '.join(x[2])}") + ".",
                data={
                    "count": len(splits),
                    "numbers": n_numbers,
                    "reasons": dict(reasons),
                    "examples": [
                        {"where": it.where, "number": num, "pieces": ps, "reason": r}
                        for it, num, ps, r in splits[:SHOW]
                    ],
                },
                line=first_line([x[0] for x in splits]),
            )
        )

    return Outcome(findings=findings, ran=["TP-TOK-SUSPICIOUS-SPLIT"], meta=meta)
