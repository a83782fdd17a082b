"""How speech findings name the items they are about, and the parts the data and tokenizer
reports share."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ...findings import Finding, Level, Report
from .. import finding, report
from .corpus import Corpus, InputError

#: How many offending items a message or evidence names (presentation only).
SHOW = 5


def names(items, total: int | None = None, fmt=None) -> str:
    """The first :data:`SHOW` items (their ``where``, or ``fmt(item)``) and how many more."""
    shown = [fmt(x) if fmt else x.where for x in list(items)[:SHOW]]
    total = len(items) if total is None else total
    more = f" and {total - len(shown)} more" if total > len(shown) else ""
    return ", ".join(shown) + more


def first_line(items) -> int | None:
    """The first input line among ``items`` (objects with a ``line``), or None."""
    for it in items:
        if it.line is not None:
            return it.line
    return None


def fmt_s(x: float) -> str:
    """Seconds as ``1.23 s``."""
    return f"{x:.2f} s"


def with_pass(rep: Report, mute: set[str], pass_id: str, message: str, data: dict) -> Report:
    """``rep`` with its ``pass_id`` finding added when no finding that is not muted is FAIL,
    WARN or NOT-CHECKED (and ``pass_id`` is not muted); a new report."""
    shown = [f for f in rep.findings if f.id not in mute]
    if pass_id in mute or any(f.level in (Level.FAIL, Level.WARN, Level.NOT_CHECKED) for f in shown):
        return rep
    return replace(rep, findings=[*rep.findings, finding(pass_id, message, data=data)], ran=[*rep.ran, pass_id])


def bad_lines(corpus: Corpus) -> list[Finding]:
    """TP-DATA-INVALID-INPUT for the input lines that could not be read (none: no finding)."""
    if not corpus.bad:
        return []
    n = len(corpus.bad)
    first = "; ".join(f"line {ln}: {why}" for ln, why in corpus.bad[:SHOW])
    what = {"manifest": "manifest", "ljspeech": "metadata.csv", "lines": "transcripts file"}.get(corpus.kind, "input")
    return [
        finding(
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
    ]


def input_report(path: Path, kind: str, e: InputError) -> Report:
    """The NOT-CHECKED report of an input that cannot be used at all (``e.rule_id``)."""
    f = finding(e.rule_id, str(e), data={"path": str(path)})
    return report(str(path), kind, [f], ran=[e.rule_id], error=str(e))
