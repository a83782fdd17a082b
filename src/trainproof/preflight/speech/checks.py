"""The checks of ``trainproof data``: pure functions of the corpus and its measured audio
returning :class:`~trainproof.preflight.Outcome`."""

from __future__ import annotations

import statistics
from collections import Counter

import numpy as np

from ...findings import Finding, Skip
from ...rules.thresholds import Thresholds
from .. import Outcome, finding
from .audio import FRAME_S, Audio, Measured
from .corpus import Corpus, Item
from .present import SHOW, bad_lines, first_line, fmt_s, names
from .text import spoken_chars

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
#: The ids of the audio measurements (:func:`audio`).
AUDIO_IDS = (
    "TP-DATA-INCONSISTENT-SR",
    "TP-DATA-INCONSISTENT-CHANNELS",
    "TP-DATA-DURATION-LONG",
    "TP-DATA-DURATION-SHORT",
    "TP-DATA-CHAR-RATE-OUTLIER",
    "TP-DATA-DUPLICATES",
    "TP-DATA-CLIPPING",
    "TP-DATA-SILENCE",
)
#: The ids of the pairs themselves (:func:`pairs`).
PAIR_IDS = ("TP-DATA-MISSING-AUDIO", "TP-DATA-UNREADABLE-AUDIO", "TP-DATA-EMPTY-TRANSCRIPT")


def invalid_input(corpus: Corpus) -> Outcome:
    """TP-DATA-INVALID-INPUT: the input lines that could not be read."""
    return Outcome(findings=bad_lines(corpus), ran=["TP-DATA-INVALID-INPUT"])


def no_data(path, corpus: Corpus) -> Outcome:
    """TP-DATA-NO-DATA for an input with no pairs (the report's error); an input whose lines
    could not be read says so by TP-DATA-INVALID-INPUT alone."""
    msg = f"{path}: no audio/transcript pairs found"
    found = [] if corpus.bad else [finding("TP-DATA-NO-DATA", msg, data={"path": str(path)})]
    return Outcome(findings=found, ran=["TP-DATA-NO-DATA"], error=msg)


def pairs(items: list[Item], audio: Measured) -> Outcome:
    """Missing audio, audio that cannot be decoded and pairs with no transcript text; its
    ``items`` are the pairs (the report's ``records``)."""
    missing, unreadable = audio.missing, audio.unreadable
    findings: list[Finding] = []
    if missing:
        findings.append(
            finding(
                "TP-DATA-MISSING-AUDIO",
                f"{len(missing)} of {len(items)} pair(s) reference audio that does not exist",
                evidence=f"Missing: {names(missing)}."
                + (f" Looked for: {missing[0].audio}." if missing[0].audio is not None else ""),
                data={
                    "count": len(missing),
                    "items": [m.where for m in missing[:SHOW]],
                    "paths": [str(m.audio) for m in missing[:SHOW]],
                },
                line=first_line(missing),
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
                line=first_line([it for it, _ in unreadable]),
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
                evidence=f"First: {names(empty, fmt=lambda it: f'{it.where} ({it.text_problem})')}.",
                data={"count": len(empty), "kinds": dict(kinds), "items": [it.where for it in empty[:SHOW]]},
                line=first_line(empty),
            )
        )
    return Outcome(findings=findings, ran=list(PAIR_IDS), items=len(items))


def audio(measured: list[tuple[Item, Audio]], th: Thresholds) -> Outcome:
    """Sample rates, channels, durations, characters per second, duplicate audio, clipping
    and edge silence of the measured clips, with ``th``'s limits; skipped, reason
    ``absent``, when no clip could be read. ``meta`` gets the duration statistics (s)."""
    if not measured:
        return Outcome(skipped={rid: Skip("absent", "no readable audio") for rid in AUDIO_IDS})
    ran: list[str] = []
    skipped: dict = {}
    meta: dict = {}
    found = _audio_findings(measured, th, ran, skipped, meta)
    return Outcome(findings=found, ran=ran, skipped=skipped, meta=meta)


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
                    + names(odd, fmt=lambda x: f"{x[0].where} ({getattr(x[1], attr)} {unit})")
                    + ".",
                    data={
                        "counts": {str(k): v for k, v in counts.items()},
                        "majority": major,
                        "differing": len(odd),
                        "items": [it.where for it, _ in odd[:SHOW]],
                    },
                    line=first_line([it for it, _ in odd]),
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
                f"{len(long_)} clip(s) longer than {th.speech_max_duration_s:g} s (longest {fmt_s(long_[0][1].duration)})",
                evidence="Longest first: " + names(long_, fmt=lambda x: f"{x[0].where} ({fmt_s(x[1].duration)})") + ".",
                data={
                    "count": len(long_),
                    "limit_s": th.speech_max_duration_s,
                    "max_s": round(long_[0][1].duration, 3),
                    "items": [it.where for it, _ in long_[:SHOW]],
                },
                line=first_line([it for it, _ in long_]),
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
                f"(shortest {fmt_s(short[0][1].duration)})",
                evidence="Shortest first: "
                + names(short, fmt=lambda x: f"{x[0].where} ({fmt_s(x[1].duration)})")
                + ".",
                data={
                    "count": len(short),
                    "limit_s": th.speech_min_duration_s,
                    "min_s": round(short[0][1].duration, 3),
                    "items": [it.where for it, _ in short[:SHOW]],
                },
                line=first_line([it for it, _ in short]),
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
                    + names(
                        odd,
                        fmt=lambda x: (
                            f"{x[0].where} ({x[2]:.1f} chars/s: "
                            f"{spoken_chars(x[0].text)} chars in {fmt_s(x[1].voiced)} voiced)"
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
                    line=first_line([it for it, _, _ in odd]),
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
                line=first_line([g[1] for g in dups]),
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
                + names(clipped, fmt=lambda x: f"{x[0].where} ({100 * x[1].clip_share:.2f}%)")
                + f". Counted: runs of {th.speech_clip_run}+ samples at >= {th.speech_clip_level:g} of full scale; "
                f"limit {100 * th.speech_clip_share:g}% of samples.",
                data={
                    "count": len(clipped),
                    "worst_share": round(clipped[0][1].clip_share, 6),
                    "items": [it.where for it, _ in clipped[:SHOW]],
                    "shares": [round(a.clip_share, 6) for _, a in clipped[:SHOW]],
                },
                line=first_line([it for it, _ in clipped]),
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
                return f"{it.where} (no sound at all, {fmt_s(a.duration)})"
            return f"{it.where} (leading {fmt_s(a.lead)}, trailing {fmt_s(a.trail)})"

        n_silent = sum(1 for _, a in quiet if a.silent)
        out.append(
            finding(
                "TP-DATA-SILENCE",
                f"{len(quiet)} clip(s) have more than {lim:g} s of leading or trailing silence"
                + (f" ({n_silent} with no sound at all)" if n_silent else ""),
                evidence=f"First: {names(quiet, fmt=_edge)}. Silent: {th.speech_silence_db:g} dB below the clip's "
                f"loudest 10 ms frame.",
                data={
                    "count": len(quiet),
                    "no_sound": n_silent,
                    "limit_s": lim,
                    "items": [it.where for it, _ in quiet[:SHOW]],
                    "lead_s": [round(a.lead, 3) for _, a in quiet[:SHOW]],
                    "trail_s": [round(a.trail, 3) for _, a in quiet[:SHOW]],
                },
                line=first_line([it for it, _ in quiet]),
            )
        )
    return out
