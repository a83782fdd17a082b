"""Human-readable output with rich. Colour only on a terminal; ``NO_COLOR`` is honoured.

Every string that comes from the input (paths, run names, metric names, messages, notes)
is printed through :func:`clean`: a file name is chosen by whoever wrote the log, and a
newline or an escape sequence in it could otherwise forge or erase lines of the report.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from ..findings import Level, Report
from ..rules._fmt import pct, times

if TYPE_CHECKING:
    from rich.console import Console

_STYLE = {
    Level.FAIL: "bold red",
    Level.WARN: "yellow",
    Level.PASS: "green",
    Level.NOT_CHECKED: "magenta",
    Level.INFO: "cyan",
}
_ORDER = {Level.FAIL: 0, Level.WARN: 1, Level.NOT_CHECKED: 2, Level.PASS: 3}

CLOSING_NOTE = (
    "A PASS says the curve shows none of the failures above; it cannot tell whether the run "
    "learned the right thing (a run on shuffled labels can look healthy). Compare against a "
    "known-good baseline to catch that."
)


#: Escapes for the control characters a log or a file name most often holds, the way
#: Python writes them in a string literal; any other unprintable character is ``\\xNN``,
#: ``\\uNNNN`` or ``\\UNNNNNNNN``.
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str) -> str:
    """``text`` with every character that would not print as itself escaped.

    Control characters (C0, DEL, C1: newline, carriage return, ESC), format characters
    (bidirectional overrides, zero-width marks), line and paragraph separators and
    unassigned code points become their Python escape (``\\n``, ``\\x1b``, ``\\u202e``).
    Plain text, spaces, backslashes (Windows paths) and printable non-ASCII letters are
    unchanged. The result is one line that shows what the string holds and cannot move
    the cursor or start a new line.
    """
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch in _NAMED:
            out.append(_NAMED[ch])
        elif ch.isprintable():
            out.append(ch)
        else:
            n = ord(ch)
            out.append(f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}")
    return "".join(out)


def clean(text) -> str:
    """:func:`printable` text of ``str(text)``, with rich markup escaped: what the text
    renderer prints of anything that came from the input."""
    return escape(printable(str(text)))


def _fmt_step(x) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else f"{x:.4g}"


def render_report(console: Console, r: Report) -> None:
    v = r.verdict
    run = f" — run {clean(str(r.meta['run']))}" if r.meta.get("run") else ""
    console.print(f"[bold]{clean(r.file)}[/bold]{run}")
    if r.error is not None:
        console.print(f"  [{_STYLE[v]}]{v.value}[/] could not read: {clean(r.error)}")
        return
    rng = f", steps {_fmt_step(r.step_range[0])}–{_fmt_step(r.step_range[1])}" if r.step_range else ""
    console.print(f"  format {clean(r.format)}, {r.records} records{rng}")
    if r.mapping:
        console.print("  metrics: " + clean(", ".join(
            f"{k}←{m['source']}" if m["source"] != k else k for k, m in sorted(r.mapping.items()))))
    for s in r.snapshots:
        console.print(f"  folded snapshot: {clean(s)}")
    console.print(f"  verdict: [{_STYLE[v]}]{v.value}[/]")
    if r.summary:
        console.print(f"  [bold]{clean(r.summary)}[/bold]")
    for f in r.findings:
        where = ""
        if f.step is not None:
            where = f" (step {_fmt_step(f.step)}" + (f", line {f.line}" if f.line is not None else "") + ")"
        console.print(f"  [{_STYLE.get(f.level, '')}]{f.level.value:<5}[/] {clean(f.id)}: "
                      f"{clean(f.message)}{clean(where)}")
        if f.evidence:
            console.print(f"        {clean(f.evidence)}")
        if f.hint and f.level in (Level.FAIL, Level.WARN):
            console.print(f"        [dim]{clean(f.hint)}[/dim]")
    skipped = [f"{k} ({s.reason})" for k, s in r.skipped.items()]
    if skipped and not any(f.id in ("TP-PASS", "TP-NOT-CHECKED") for f in r.findings):
        console.print(f"  [dim]skipped: {clean(', '.join(skipped))}[/dim]")
    dropped = set(r.meta.get("dropped") or ())  # already shown as TP-DATA-DROPPED
    for n in r.notes:
        if n not in dropped:
            console.print(f"  [yellow]note:[/yellow] {clean(n)}")


def render(console: Console, reports: list[Report], summary: bool = False, unread: bool = True) -> None:
    """Print reports; with ``summary``, a worst-first table first (doctor)."""
    ordered = sorted(reports, key=lambda r: (_ORDER[r.verdict], r.file)) if summary else reports
    if summary and reports:
        from rich.table import Table

        t = Table(title="trainproof doctor", show_lines=False)
        t.add_column("verdict", no_wrap=True)
        t.add_column("run", overflow="fold", ratio=3)
        t.add_column("format", no_wrap=True)
        t.add_column("records", justify="right", no_wrap=True)
        t.add_column("findings", overflow="fold", ratio=2)
        for r in ordered:
            ids = sorted({f.id for f in r.findings if f.level in (Level.FAIL, Level.WARN)})
            t.add_row(f"[{_STYLE[r.verdict]}]{r.verdict.value}[/]", clean(r.file), clean(r.format or "-"),
                      str(r.records), clean(", ".join(ids) or (r.error or "")[:60]))
        console.print(t)
        console.print()
    for r in ordered:
        if r.error is None or not summary:
            render_report(console, r)
            console.print()
    errors = [r for r in ordered if r.error is not None]
    if summary and errors and unread:
        console.print("[bold]Looked like logs but could not be read:[/bold]")
        for r in errors:
            console.print(f"  {clean(r.file)}: {clean(r.error)}")
        console.print()
    if any(r.verdict is Level.PASS for r in reports):
        console.print(f"[dim]{clean(CLOSING_NOTE)}[/dim]")


def _ratio(x) -> str:
    return times(x) if isinstance(x, (int, float)) else "-"


def _lvl(x) -> str:
    return f"{x:.4g}" if isinstance(x, (int, float)) else "-"


def render_compare(console: Console, baseline: Report, reports: list[Report]) -> None:
    """The ranking table of runs against a baseline (worst first), then each report."""
    from rich.table import Table

    t = Table(title=f"trainproof compare — baseline {clean(baseline.file)} ({baseline.verdict.value})")
    for col, just in (("verdict", "left"), ("run", "left"), ("floor", "right"), ("end", "right"),
                      ("improvement", "right"), ("floor ratio", "right"), ("end ratio", "right"),
                      ("findings", "left")):
        t.add_column(col, justify=just, overflow="fold")
    ordered = sorted(reports, key=lambda r: (_ORDER[r.verdict], r.file))
    for r in ordered:
        m = r.meta.get("compare", {})
        ids = sorted({f.id for f in r.findings if f.level in (Level.FAIL, Level.WARN, Level.NOT_CHECKED)
                      and f.id != "TP-NOT-CHECKED"})
        imp = m.get("improvement")
        t.add_row(f"[{_STYLE[r.verdict]}]{r.verdict.value}[/]", clean(r.file), _lvl(m.get("floor")),
                  _lvl(m.get("end")), pct(imp) if isinstance(imp, float) else "-",
                  _ratio(m.get("floor_ratio")), _ratio(m.get("end_ratio")), clean(", ".join(ids) or (r.error or "")))
    console.print(t)
    console.print()
    render(console, ordered, summary=False)
