"""Human-readable output with rich. Colour only on a terminal; ``NO_COLOR`` is honoured.

Every string that comes from the input (paths, run names, metric names, messages, notes)
is printed through :func:`clean`: a file name is chosen by whoever wrote the log, and a
newline or an escape sequence in it could otherwise forge or erase lines of the report.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.markup import escape

from ..findings import EXPERIMENT_SEP, Level, Report
from ..redact import scrub
from ..rules._fmt import pct, times
from .names import location_words, run_name, run_words, unshown_run_id  # noqa: F401  (the names every output gives)

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
    # Emoji codes replaced only where there is one (rich loads its emoji table on the
    # first replacement; text without a ``:name:`` reads the same without it).
    emoji = re.search(r":\S*:", markup) is not None
    for line in Text.from_markup(markup, emoji=emoji).wrap(console, max(20, console.width - indent)):
        line.rstrip()
        console.print(pad + line)


def _skipped_brief(r: Report) -> str:
    """The skipped checks counted by reason (``doctor``'s screen; ``--verbose`` lists them)."""
    counts: dict[str, int] = {}
    for sk in r.skipped.values():
        counts[sk.reason] = counts.get(sk.reason, 0) + 1
    by = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"skipped {len(r.skipped)} checks ({by}); --verbose lists them"


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
            where = (
                f" (step {_fmt_step(f.step)}" + (f", {location_words(r, f.line)}" if f.line is not None else "") + ")"
            )
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


#: The fewest characters a path's part keeps when it is cut in the middle (``lr_…ro``).
_PART_MIN = 6


def _join_parts(parts: list[str | None]) -> str:
    """``parts`` joined by ``/``, each run of dropped parts (``None``) one ``…``."""
    out: list[str] = []
    for p in parts:
        if p is None:
            if not out or out[-1] != "…":
                out.append("…")
        else:
            out.append(p)
    return "/".join(out)


def _shorten_path(label: str, width: int, others: list[list[str]]) -> str:
    """``label`` cut to ``width`` keeping what tells it from ``others`` (each split at
    ``/``): the folders it shares with another label at the same place (counted from the
    start or from the end) go first, then a shared file name is cut in its middle, then the
    parts only it has are cut in their middles, evenly; the whole is cut in the middle last."""
    parts: list[str | None] = list(label.split("/"))
    n = len(parts)
    if n < 2:
        return shorten_middle(label, width)

    def shared(k: int) -> bool:
        seg = label.split("/")[k]
        for o in others:
            if (k < len(o) and o[k] == seg) or (n - k <= len(o) and o[len(o) - (n - k)] == seg):
                return True
        return False

    own = [not shared(k) for k in range(n)]
    for k in range(n - 1):
        if len(_join_parts(parts)) <= width:
            return _join_parts(parts)
        if not own[k] and parts[k]:
            parts[k] = None
    text = _join_parts(parts)
    if len(text) > width and not own[-1]:
        last = parts[-1] or ""
        parts[-1] = shorten_middle(last, max(_PART_MIN + 2, len(last) - (len(text) - width)))
        text = _join_parts(parts)
    while len(text) > width:
        cuttable = [k for k in range(n) if parts[k] is not None and len(parts[k]) > _PART_MIN]
        if not cuttable:
            break
        k = max(cuttable, key=lambda k: len(parts[k]))
        part = parts[k]
        parts[k] = shorten_middle(part, max(_PART_MIN, len(part) - (len(text) - width)))
        if parts[k] == part:
            break
        text = _join_parts(parts)
    return text if len(text) <= width else shorten_middle(text, width)


def shorten_paths(labels: list[str], width: int) -> list[str]:
    """Each label (a path, a run's name) cut to ``width`` characters so that labels that
    differ still differ: the parts every colliding label shares are shortened first and
    the part that tells them apart is kept (``hf_runs/lr_zero/checkpoint-300/trainer_state.json``
    and ``…/lr_hot/…`` become ``…/lr_zero/…/trainer_state.json`` and ``…/lr_hot/…/trainer_state.json``,
    not both ``hf_runs/lr_…t-300/trainer_state.json``)."""
    split = [lab.split("/") for lab in labels]
    out = []
    for i, lab in enumerate(labels):
        if len(lab) <= width:
            out.append(lab)
            continue
        others = [s for j, s in enumerate(split) if labels[j] != lab]
        out.append(_shorten_path(lab, width, others))
    # Where cutting still made two different labels equal, keep their ends instead (a
    # run's id, a file's number), which is where paths most often differ.
    seen: dict[str, set[str]] = {}
    for lab, short in zip(labels, out):
        seen.setdefault(short, set()).add(lab)
    return [
        "…" + lab[len(lab) - width + 1 :] if len(seen[short]) > 1 and len(lab) > width else short
        for lab, short in zip(labels, out)
    ]


def deciding(reports: list[Report]) -> list[Report]:
    """The reports whose verdict decides the exit code (:func:`trainproof.findings.exit_code`):
    those with a FAIL (exit 1) and those not judged (exit 2, once no run FAILs), in their
    order. ``doctor`` shows these rows whatever ``--quiet``'s cap or ``--only``'s filter."""
    return [r for r in reports if not r.judged or any(f.level is Level.FAIL for f in r.findings)]


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


#: Most rows ``doctor --quiet`` prints besides the rows that decide the exit code (those
#: are always printed): a CI log shows the worst runs and says how many more there are
#: (``--only`` or ``--json`` list them all).
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


@dataclass
class Row:
    """One row of a table of runs (:func:`runs_table`), its text not yet escaped.

    Attributes:
        verdict: the run's verdict; ``None`` for a group's header row.
        label: the run's name (a path, ``path — run NAME``); shortened to the column.
        cells: the middle columns' texts (``records``; ``compare``'s numbers), one per column.
        findings: the rule ids (``TP-NAN, TP-DIVERGE``) or the reason it was not judged.
        also: a second line under the label (the run's other files), or ``""``.
        section: a rule above the row (a new experiment).
        must: the row decides the exit code: its findings wrap instead of being cut.
    """

    verdict: Level | None
    label: str
    cells: list[str]
    findings: str = ""
    also: str = ""
    section: bool = False
    must: bool = False


#: What rich puts between two columns of these tables: a padding space either side of the
#: box's one-character separator.
_GAP = 3
#: The verdict column's width: ``NOT-CHECKED``, never cut.
_VERDICT_WIDTH = 11
#: The run column's least width, below which a path says too little.
_RUN_MIN = 16


@dataclass(frozen=True)
class Col:
    """A middle column of :func:`runs_table`: its header, width, the least console width at
    which it is shown (narrower consoles leave it out; each report says it too), and how
    its cells are justified."""

    name: str
    width: int
    min_console: int = 0
    justify: str = "right"


def runs_table(console: Console, title: str, columns: list[Col], rows: list[Row], quiet: bool = False):
    """The table of runs ``doctor`` and ``compare`` print: verdict, run, the middle
    ``columns`` (``justify``: ``"left"`` or ``"right"``), findings; its widths fitted to
    the console.

    The verdict is never cut and a rule id never splits (the findings column is at least
    as wide as the longest id in it, and wraps between ids); the run column takes what is
    left and its labels are shortened so that different runs keep different names
    (:func:`shorten_paths`). ``quiet``: one line a row, findings cut with an ellipsis,
    except the rows that decide the exit code (:attr:`Row.must`), whose findings wrap.

    Returns:
        a :class:`rich.table.Table`, or ``None`` for no rows.
    """
    from rich import box
    from rich.table import Table
    from rich.text import Text

    if not rows:
        return None
    width = console.width
    words = [w for r in rows for w in r.findings.replace(",", " ").split()]
    fmin = max([12, *(len(w) + 1 for w in words if w.startswith("TP-"))])  # an id and its comma
    keep = [i for i, c in enumerate(columns) if width >= c.min_console]

    def room(keep: list[int]) -> int:
        return width - _VERDICT_WIDTH - sum(columns[i].width for i in keep) - _GAP * (len(keep) + 2)

    # Where the run and an id would not both fit, the least needed middle column goes too.
    while keep and room(keep) - fmin < _RUN_MIN:
        keep.remove(max(keep, key=lambda i: (columns[i].min_console, i)))
    cols = [columns[i] for i in keep]
    avail = room(keep)
    fwant = max([fmin, *(len(r.findings) for r in rows)])
    labels = [printable(r.label) for r in rows]
    longest = max(len(lab) for lab in labels)
    run_width = max(_RUN_MIN, min(longest, avail - fmin))
    share = avail // 2 if quiet else 20  # the findings' room before the path gets the rest
    run_width = max(_RUN_MIN, min(run_width, avail - min(fwant, max(share, fmin))))
    fwidth = max(fmin, avail - run_width)
    short = shorten_paths(labels, run_width)
    t = Table(title=escape(title), box=box.SIMPLE_HEAD, show_lines=False, pad_edge=False, show_edge=False)
    # Fixed widths: rich would otherwise share the width out by content and cut the paths
    # at their ends; the paths are shortened here instead.
    t.add_column("verdict", no_wrap=True, width=_VERDICT_WIDTH)
    t.add_column("run", no_wrap=True, width=run_width)
    for c in cols:
        t.add_column(c.name, justify=c.justify, no_wrap=True, width=c.width)
    t.add_column("findings", overflow="ellipsis" if quiet else "fold", no_wrap=quiet, width=fwidth)
    for r, label in zip(rows, short):
        if r.section:
            t.add_section()
        if r.verdict is None:
            cell = f"[bold]{escape(label)}[/bold]"
            verdict = ""
            found = f"[dim]{escape(printable(r.findings))}[/dim]"
        else:
            cell = escape(label)
            verdict = f"[{_STYLE[r.verdict]}]{r.verdict.value}[/]"
            found = (
                Text(printable(r.findings), no_wrap=False, overflow="fold") if quiet and r.must else clean(r.findings)
            )
        if r.also:
            cell += "\n[dim]    also: " + escape(shorten_middle(printable(r.also), run_width - 10)) + "[/dim]"
        t.add_row(verdict, cell, *(r.cells[i] for i in keep), found)
    return t


def _ids(reports: list[Report]) -> list[str]:
    """The ids of the FAIL and WARN findings of ``reports``, sorted."""
    return sorted({f.id for r in reports for f in r.findings if f.level in (Level.FAIL, Level.WARN)})


def _not_judged_reason(r: Report) -> str:
    """Why a run was not judged, in one line: its read error, or its NOT-CHECKED findings."""
    if r.error is not None:
        return r.error
    return "; ".join(f"{f.id}: {f.message}" for f in r.findings if f.level is Level.NOT_CHECKED)


def _row_findings(r: Report) -> str:
    ids = _ids([r])
    if ids:
        return ", ".join(ids)
    return _not_judged_reason(r) if not r.judged else ""


def _doctor_rows(groups, prefix: str, quiet: bool, must: set[int]) -> list[Row]:
    """The table rows of ``doctor``: with ``quiet``, a row a run and one an experiment (its
    worst verdict, its runs counted, the findings of all of them), at most
    :data:`QUIET_ROWS` besides the rows that decide the exit code; else a header row an
    experiment and a row each of its runs."""
    rows: list[Row] = []
    for gi, (exp, members) in enumerate(groups):
        if quiet:
            if exp is not None and len(members) > 1:
                label = _under(f"{exp.rstrip('/')}/", prefix)
                cells = [
                    (members[0].format or "-") if len({m.format for m in members}) == 1 else "",
                    f"{len(members)} runs",
                ]
                rows.append(Row(members[0].verdict, label, cells, ", ".join(_ids(members))))
                rows[-1].must = id(members[0]) in must
                # A run that decides the exit code with a verdict its group's row does not
                # show (one not judged under a WARN) gets a row of its own.
                for r in members:
                    if id(r) in must and r.verdict is not members[0].verdict:
                        rows.append(_run_row(r, _under(_run_label(r, None), prefix), True))
            else:
                r = members[0]
                rows.append(_run_row(r, _under(_run_label(r, None), prefix), id(r) in must))
            continue
        if exp is not None:
            counts = ", ".join(f"{n} {lvl}" for lvl, n in _counts(members) if n)
            head = _under(exp.rstrip("/") + "/", prefix)
            rows.append(Row(None, head, ["", ""], f"{len(members)} runs: {counts}", section=gi > 0))
        for r in members:
            label = _run_label(r, exp) if exp is not None else _under(_run_label(r, None), prefix)
            row = _run_row(r, label, id(r) in must)
            if r.also:
                more = f" +{len(r.also) - 1}" if len(r.also) > 1 else ""
                row.also = _also_label(r, r.also[0]) + more
            rows.append(row)
    if not quiet:
        return rows
    firm = sum(r.must for r in rows)
    room = max(0, QUIET_ROWS - firm)
    kept, cut = [], 0
    for r in rows:
        if r.must or room > 0:
            kept.append(r)
            room -= not r.must
        else:
            cut += 1
    if cut:
        kept.append(Row(None, f"… {cut} more: --only FAIL,WARN", ["", ""], "lists every run"))
    return kept


def _run_row(r: Report, label: str, must: bool) -> Row:
    return Row(r.verdict, label, [r.format or "-", str(r.records)], _row_findings(r), must=must)


#: ``doctor``'s middle columns: the format from 100 columns on and the records from 80 (each
#: report says both: the run's path is what a reader needs most).
DOCTOR_COLUMNS = [Col("format", 9, 100, "left"), Col("records", 7, 80)]


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
    the table holds only the runs that did not pass), the runs that could not be judged, and
    the totals line last.

    ``only``: the verdicts whose rows and reports are shown; the totals count every run.
    The runs that decide the exit code (:func:`deciding`) are shown whatever ``only`` and
    ``quiet``'s cap, each with why. ``ignored``: how many files were looked at and are not
    training logs (said once). Paths are shortened to fit the console's width and stay
    distinct (:func:`shorten_paths`).
    """
    decide = deciding(reports)
    must = {id(r) for r in decide}
    shown = [r for r in reports if only is None or r.verdict in only or id(r) in must]
    if view == "quiet":
        shown = [r for r in shown if r.verdict is not Level.PASS]
    prefix = _common_folder([r.file for r in reports])
    if shown:
        title = "trainproof doctor" + (f" — runs under {printable(prefix)}" if prefix else "")
        rows = _doctor_rows(_rows_in_order(shown), prefix, view == "quiet", must)
        _print_table(console, runs_table(console, title, DOCTOR_COLUMNS, rows, quiet=view == "quiet"))
        console.print()
    unjudged = [r for r in decide if not r.judged]
    if view == "quiet":
        if unjudged:
            console.print("[bold]Not judged (exit code 2 unless a run FAILs):[/bold]")
            for r in sorted(unjudged, key=lambda r: r.file):
                _why_not_judged(console, r)
            console.print()
    else:
        full = [
            r
            for _, members in _rows_in_order(shown)
            for r in members
            if r.error is None
            and (view == "verbose" or r.verdict in (Level.FAIL, Level.WARN) or (id(r) in must and not r.judged))
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


def _why_not_judged(console: Console, r: Report) -> None:
    """A run that was not judged, with its reason and what to do (``--quiet``'s list)."""
    name = _run_label(r, None)
    if r.error is not None:
        _para(console, f"{clean(name)}: could not read: {clean(r.error)}", 2)
        return
    _para(console, f"{clean(name)}:", 2)
    for f in r.findings:
        if f.level is Level.NOT_CHECKED:
            _para(console, f"{clean(f.id)}: {clean(f.message)}", 4)
            for extra in (f.evidence, f.hint):
                if extra:
                    _para(console, f"[dim]{clean(extra)}[/dim]", 6)


def _ratio(x) -> str:
    return times(x) if isinstance(x, (int, float)) else "-"


def _lvl(x) -> str:
    return f"{x:.4g}" if isinstance(x, (int, float)) else "-"


#: ``compare``'s middle columns, the ratios to the baseline kept longest as the console
#: narrows (they are what the verdict against the baseline reads).
COMPARE_COLUMNS = [
    Col("floor", 9, 120),
    Col("end", 9, 120),
    Col("improvement", 11, 100),
    Col("floor ratio", 11),
    Col("end ratio", 9, 80),
]


def render_compare(console: Console, baseline: Report, reports: list[Report]) -> None:
    """The ranking table of runs against a baseline (worst first; the table :func:`runs_table`
    draws for ``doctor`` too), then each report."""
    baseline, reports = scrub((baseline, reports))
    ordered = sorted(reports, key=lambda r: (_ORDER[r.verdict], r.file))
    rows = []
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
        cells = [
            _lvl(m.get("floor")),
            _lvl(m.get("end")),
            pct(imp) if isinstance(imp, float) else "-",
            _ratio(m.get("floor_ratio")),
            _ratio(m.get("end_ratio")),
        ]
        rows.append(Row(r.verdict, _run_label(r, None), cells, ", ".join(ids) or (r.error or "")))
    title = f"trainproof compare — baseline {printable(baseline.file)} ({baseline.verdict.value})"
    table = runs_table(console, title, COMPARE_COLUMNS, rows)
    if table is not None:
        _print_table(console, table)
        console.print()
    render(console, ordered, summary=False)
