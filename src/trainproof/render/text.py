"""Human-readable output with rich. Colour only on a terminal; ``NO_COLOR`` is honoured.

Every string that comes from the input (paths, run names, metric names, messages, notes)
is printed through :func:`clean`: a file name is chosen by whoever wrote the log, and a
newline or an escape sequence in it could otherwise forge or erase lines of the report.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from rich.markup import escape

from ..findings import EXPERIMENT_SEP, Level, Report
from ..redact import scrub
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


def _para(console: Console, markup: str, indent: int) -> None:
    """Print ``markup`` as a paragraph ``indent`` columns in: where the console wraps (a
    terminal, or ``COLUMNS`` set), continuation lines keep the indent; where it does not
    (a pipe), the paragraph is one line."""
    if getattr(console, "soft_wrap", False):
        console.print(" " * indent + markup)
        return
    from rich.text import Text

    pad = Text(" " * indent)
    for line in Text.from_markup(markup).wrap(console, max(20, console.width - indent)):
        line.rstrip()
        console.print(pad + line)


def _skipped_brief(r: Report) -> str:
    """The skipped checks counted by reason (``doctor``'s screen; ``--verbose`` lists them)."""
    counts: dict[str, int] = {}
    for sk in r.skipped.values():
        counts[sk.reason] = counts.get(sk.reason, 0) + 1
    by = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"skipped {len(r.skipped)} checks ({by}); --verbose lists them"


def unshown_run_id(r: Report) -> str:
    """The run id of a report whose file does not name its run (a run of a tracker's
    store, one file for many runs), else ``""``: the text and SARIF outputs add it to tell
    the runs of one file apart."""
    rid = r.meta.get("run_id")
    return rid if isinstance(rid, str) and rid and rid not in r.file else ""


def run_words(r: Report, grouped: bool = False) -> str:
    """How a tracker's run is named after its file: ``run NAME``, with the first 8
    characters of its id when the file does not name it (a store holds many runs and a
    tracker's run names need not be unique: ``[3f9a1c77]``), and its experiment when no
    group header above it names that (``grouped``); ``""`` for a log of one unnamed run.
    Not escaped (the caller escapes)."""
    name = r.meta.get("run")
    if not name:
        return ""
    words = f"run {name}"
    rid = unshown_run_id(r)
    if rid and rid != name:
        words += f" [{rid[:8]}]"
    exp = r.meta.get("experiment")
    if not grouped and isinstance(exp, str) and exp and exp not in r.file:
        words += f" in {exp}"
    return words


def render_report(console: Console, r: Report, brief: bool = False) -> None:
    """Print one report. ``brief`` (``doctor``'s screen) counts the skipped checks instead
    of listing them and says which other files hold the same run."""
    v = r.verdict
    run = f" — {clean(run_words(r))}" if r.meta.get("run") else ""
    console.print(f"[bold]{clean(r.file)}[/bold]{run}")
    if r.error is not None:
        console.print(f"  [{_STYLE[v]}]{v.value}[/] could not read: {clean(r.error)}")
        return
    rng = f", steps {_fmt_step(r.step_range[0])}–{_fmt_step(r.step_range[1])}" if r.step_range else ""
    console.print(f"  format {clean(r.format)}, {r.records} records{rng}")
    if r.mapping:
        console.print(
            "  metrics: "
            + clean(", ".join(f"{k}←{m['source']}" if m["source"] != k else k for k, m in sorted(r.mapping.items())))
        )
    for s in r.snapshots:
        _para(console, f"folded snapshot: {clean(s)}", 2)
    for a in r.also:
        _para(console, f"also: {clean(a)} (the same run, not judged again)", 2)
    console.print(f"  verdict: [{_STYLE[v]}]{v.value}[/]")
    if r.summary:
        _para(console, f"[bold]{clean(r.summary)}[/bold]", 2)
    for f in r.findings:
        where = ""
        if f.step is not None:
            where = f" (step {_fmt_step(f.step)}" + (f", line {f.line}" if f.line is not None else "") + ")"
        _para(
            console,
            f"[{_STYLE.get(f.level, '')}]{f.level.value:<5}[/] {clean(f.id)}: {clean(f.message)}{clean(where)}",
            2,
        )
        if f.evidence:
            _para(console, clean(f.evidence), 8)
        if f.hint and f.level in (Level.FAIL, Level.WARN):
            _para(console, f"[dim]{clean(f.hint)}[/dim]", 8)
    skipped = [f"{k} ({s.reason})" for k, s in r.skipped.items()]
    if skipped and not any(f.id in ("TP-PASS", "TP-NOT-CHECKED") for f in r.findings):
        text = _skipped_brief(r) if brief else "skipped: " + ", ".join(skipped)
        _para(console, f"[dim]{clean(text)}[/dim]", 2)
    dropped = set(r.meta.get("dropped") or ())  # already shown as TP-DATA-DROPPED
    for n in r.notes:
        if n not in dropped:
            _para(console, f"[yellow]note:[/yellow] {clean(n)}", 2)


def render(
    console: Console,
    reports: list[Report],
    summary: bool = False,
    unread: bool = True,
    view: str = "default",
    only: Collection[Level] | None = None,
    ignored: int = 0,
) -> None:
    """Print reports; with ``summary``, ``doctor``'s screen (:func:`render_doctor`)."""
    reports = scrub(reports)
    if summary:
        render_doctor(console, reports, view=view, only=only, unread=unread, ignored=ignored)
        return
    for r in reports:
        render_report(console, r)
        console.print()
    if any(r.verdict is Level.PASS for r in reports):
        console.print(f"[dim]{clean(CLOSING_NOTE)}[/dim]")


#: ``doctor``'s views: which full reports follow the table.
VIEWS = ("quiet", "default", "verbose")


def _counts(reports: list[Report]) -> list[tuple[str, int]]:
    n = {lvl: 0 for lvl in _ORDER}
    for r in reports:
        n[r.verdict] += 1
    return [
        ("FAIL", n[Level.FAIL]),
        ("WARN", n[Level.WARN]),
        ("PASS", n[Level.PASS]),
        ("not judged", n[Level.NOT_CHECKED]),
    ]


def totals_line(reports: list[Report]) -> str:
    """``312 runs: 12 FAIL, 30 WARN, 268 PASS, 2 not judged``: the last line ``doctor`` prints."""
    runs = "run" if len(reports) == 1 else "runs"
    return f"{len(reports)} {runs}: " + ", ".join(f"{n} {lvl}" for lvl, n in _counts(reports))


def shorten_middle(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters by an ellipsis in the middle, keeping its start
    and its end (a path's top folder and file name)."""
    if len(text) <= width or width < 5:
        return text
    keep = width - 1
    head = keep // 3
    return text[:head] + "…" + text[len(text) - (keep - head) :]


def _rows_in_order(reports: list[Report]) -> list[tuple[str | None, list[Report]]]:
    """Reports in groups by experiment (a run of none is a group of its own), groups worst
    first, then by name; runs in a group worst first, then by file."""
    experiments: dict[str, list[Report]] = {}
    groups: list[tuple[str | None, list[Report]]] = []
    for r in reports:
        if r.experiment is None:
            groups.append((None, [r]))
        elif r.experiment not in experiments:
            experiments[r.experiment] = [r]
            groups.append((r.experiment, experiments[r.experiment]))
        else:
            experiments[r.experiment].append(r)
    for _, members in groups:
        members.sort(key=lambda r: (_ORDER[r.verdict], r.file, str(r.meta.get("run", ""))))
    groups.sort(key=lambda g: (_ORDER[g[1][0].verdict], g[0] if g[0] is not None else g[1][0].file))
    return groups


def _run_label(r: Report, experiment: str | None) -> str:
    name = r.file
    if experiment is not None:
        experiment = experiment.split(EXPERIMENT_SEP, 1)[0]  # the store's place
    if experiment is not None and name.startswith(experiment.rstrip("/") + "/"):
        name = "  " + name[len(experiment.rstrip("/")) + 1 :]
    elif experiment is not None and name == experiment:
        name = "  "
    if r.meta.get("run"):
        words = run_words(r, grouped=experiment is not None)
        name = f"{name} — {words}" if name.strip() else f"  {words}"
    return printable(name)


#: Most rows ``doctor --quiet`` prints: a CI log shows the worst runs and says how many
#: more there are (``--only`` or ``--json`` list them all).
QUIET_ROWS = 20


def _under(label: str, prefix: str) -> str:
    """``label`` without the folder ``prefix`` every row shares (the table's title names it)."""
    return label[len(prefix) :] if prefix and label.startswith(prefix) and len(label) > len(prefix) else label


def _common_folder(files: list[str]) -> str:
    """The folder every path lies under (``examples/``), with its slash; ``""`` for none."""
    if not files:
        return ""
    first = files[0]
    cut = first.rfind("/") + 1
    while cut > 0 and not all(f.startswith(first[:cut]) for f in files):
        cut = first.rfind("/", 0, cut - 1) + 1
    return first[:cut]


def _quiet_rows(t, groups, run_width: int, with_format: bool, prefix: str = "") -> None:
    """``--quiet``'s rows: one a run, and one an experiment (its worst verdict, its runs
    counted, the findings of all of them), each one line, at most ``QUIET_ROWS``."""
    rows = []
    for exp, members in groups:
        ids = sorted({f.id for r in members for f in r.findings if f.level in (Level.FAIL, Level.WARN)})
        if exp is not None and len(members) > 1:
            label, records = f"{exp.rstrip('/')}/", f"{len(members)} runs"
        else:
            r = members[0]
            label, records = _run_label(r, None), str(r.records)
            if not ids and r.error:
                ids = [r.error[:60]]
        label = _under(label, prefix)
        fmt = [clean(members[0].format or "-") if len(members) == 1 else ""] if with_format else []
        v = members[0].verdict
        rows.append(
            (
                f"[{_STYLE[v]}]{v.value}[/]",
                escape(shorten_middle(printable(label), run_width)),
                *fmt,
                records,
                clean(", ".join(ids)),
            )
        )
    for row in rows[:QUIET_ROWS]:
        t.add_row(*row)
    if len(rows) > QUIET_ROWS:
        t.add_row(
            "",
            f"… {len(rows) - QUIET_ROWS} more: --only FAIL,WARN",
            *([""] if with_format else []),
            "",
            "lists every run",
        )


def _print_table(console: Console, table) -> None:
    """Print a table; where there is no colour (a pipe, ``NO_COLOR``) without the padding
    spaces at the ends of its lines, so that the output diffs and copies cleanly."""
    if console.is_terminal and console.color_system is not None:
        console.print(table)
        return
    with console.capture() as cap:
        console.print(table)
    for line in cap.get().splitlines():
        console.out(line.rstrip(), highlight=False)


def _also_label(r: Report, other: str) -> str:
    """Another file of ``r``'s run, relative to the run's folder where it lies under it."""
    folder = r.file.rsplit("/", 1)[0] + "/" if "/" in r.file else ""
    return other[len(folder) :] if folder and other.startswith(folder) else other


def render_doctor(
    console: Console,
    reports: list[Report],
    view: str = "default",
    only: Collection[Level] | None = None,
    unread: bool = True,
    ignored: int = 0,
) -> None:
    """``doctor``'s screen: the worst-first table (runs of one experiment under it), then
    the full report of each FAIL and WARN run (``verbose``: every run; ``quiet``: none, and
    the table holds only the runs that did not pass), the runs that could not be read, and
    the totals line last.

    ``only``: the verdicts whose rows and reports are shown; the totals count every run.
    ``ignored``: how many files were looked at and are not training logs (said once).
    Paths are shortened in the middle to fit the console's width.
    """
    from rich import box
    from rich.table import Table

    shown = [r for r in reports if only is None or r.verdict in only]
    if view == "quiet":
        shown = [r for r in shown if r.verdict is not Level.PASS]
    prefix = _common_folder([r.file for r in reports])
    width = console.width
    # Below 100 columns the format column goes (each report names it): the run's path is
    # what a reader needs most. The rest: verdict 11, records 7, findings at least 18, and
    # two columns of padding between columns.
    with_format = width >= 100
    run_width = max(24, width - 11 - 7 - 20 - (8 + 2 if with_format else 0) - 6)
    if shown:
        longest = max(len(printable(r.file)) - len(prefix) for r in shown)
        run_width = min(run_width, max(24, longest))
        if view == "quiet":  # one line a row: the findings get as much room as the path
            run_width = min(run_width, max(28, (width - 11 - 7 - 6 - (10 if with_format else 0)) // 2))
        title = "trainproof doctor" + (f" — runs under {printable(prefix)}" if prefix else "")
        t = Table(title=escape(title), box=box.SIMPLE_HEAD, show_lines=False, pad_edge=False, show_edge=False)
        # Fixed widths: rich would otherwise share the width out by content and cut the
        # paths at their ends; the paths are cut in the middle here instead.
        t.add_column("verdict", no_wrap=True, width=11)
        t.add_column("run", no_wrap=True, width=run_width)
        if with_format:
            t.add_column("format", no_wrap=True, width=8)
        t.add_column("records", justify="right", no_wrap=True, width=7)
        quiet = view == "quiet"
        rest = max(12, width - 11 - run_width - 7 - (8 + 2 if with_format else 0) - 8)
        t.add_column("findings", overflow="ellipsis" if quiet else "fold", no_wrap=quiet, min_width=12, max_width=rest)
        groups = _rows_in_order(shown)
        if quiet:
            _quiet_rows(t, groups, run_width, with_format, prefix)
            groups = []
        for gi, (exp, members) in enumerate(groups):
            if exp is not None:
                if gi:
                    t.add_section()
                counts = ", ".join(f"{n} {lvl}" for lvl, n in _counts(members) if n)
                head = _under(exp.rstrip("/") + "/", prefix)
                t.add_row(
                    "",
                    f"[bold]{escape(shorten_middle(printable(head), run_width))}[/bold]",
                    *([""] if with_format else []),
                    "",
                    f"[dim]{len(members)} runs: {escape(counts)}[/dim]",
                )
            for r in members:
                ids = sorted({f.id for f in r.findings if f.level in (Level.FAIL, Level.WARN)})
                label = _run_label(r, exp) if exp is not None else _under(_run_label(r, None), prefix)
                cell = escape(shorten_middle(label, run_width))
                if r.also:
                    more = f" +{len(r.also) - 1}" if len(r.also) > 1 else ""
                    room = run_width - len("    also: ") - len(more)
                    also = shorten_middle(printable(_also_label(r, r.also[0])), room)
                    cell += "\n[dim]    also: " + escape(also) + more + "[/dim]"
                fmt = [clean(r.format or "-")] if with_format else []
                t.add_row(
                    f"[{_STYLE[r.verdict]}]{r.verdict.value}[/]",
                    cell,
                    *fmt,
                    str(r.records),
                    clean(", ".join(ids) or (r.error or "")[:60]),
                )
        _print_table(console, t)
        console.print()
    if view != "quiet":
        full = [
            r
            for _, members in _rows_in_order(shown)
            for r in members
            if r.error is None and (view == "verbose" or r.verdict in (Level.FAIL, Level.WARN))
        ]
        for r in full:
            render_report(console, r, brief=view != "verbose")
            console.print()
        errors = [r for r in shown if r.error is not None]
        if errors and unread:
            console.print("[bold]Looked like logs but could not be read:[/bold]")
            for r in sorted(errors, key=lambda r: r.file):
                _para(console, f"{clean(r.file)}: {clean(r.error)}", 2)
            console.print()
        if any(r.verdict is Level.PASS for r in shown):
            _para(console, f"[dim]{clean(CLOSING_NOTE)}[/dim]", 0)
        if ignored:
            console.print(f"{ignored} file(s) looked at are not training logs (--json lists them and why).")
    if reports:
        console.print(totals_line(reports))


def _ratio(x) -> str:
    return times(x) if isinstance(x, (int, float)) else "-"


def _lvl(x) -> str:
    return f"{x:.4g}" if isinstance(x, (int, float)) else "-"


def render_compare(console: Console, baseline: Report, reports: list[Report]) -> None:
    """The ranking table of runs against a baseline (worst first), then each report."""
    from rich.table import Table

    baseline, reports = scrub((baseline, reports))
    t = Table(title=f"trainproof compare — baseline {clean(baseline.file)} ({baseline.verdict.value})")
    for col, just in (
        ("verdict", "left"),
        ("run", "left"),
        ("floor", "right"),
        ("end", "right"),
        ("improvement", "right"),
        ("floor ratio", "right"),
        ("end ratio", "right"),
        ("findings", "left"),
    ):
        t.add_column(col, justify=just, overflow="fold")
    ordered = sorted(reports, key=lambda r: (_ORDER[r.verdict], r.file))
    for r in ordered:
        m = r.meta.get("compare", {})
        ids = sorted(
            {
                f.id
                for f in r.findings
                if f.level in (Level.FAIL, Level.WARN, Level.NOT_CHECKED) and f.id != "TP-NOT-CHECKED"
            }
        )
        imp = m.get("improvement")
        t.add_row(
            f"[{_STYLE[r.verdict]}]{r.verdict.value}[/]",
            clean(r.file),
            _lvl(m.get("floor")),
            _lvl(m.get("end")),
            pct(imp) if isinstance(imp, float) else "-",
            _ratio(m.get("floor_ratio")),
            _ratio(m.get("end_ratio")),
            clean(", ".join(ids) or (r.error or "")),
        )
    console.print(t)
    console.print()
    render(console, ordered, summary=False)
