"""One self-contained HTML file: verdicts, findings, checks and inline SVG charts.

The page needs nothing but itself: the CSS is inline, the charts are SVG written by
:mod:`.svgchart` (no plotting library), there is no JavaScript, no font, image or
stylesheet is fetched, and nothing links outside the page except ``#run-N`` anchors. So it
opens the same way offline, from a CI artifact or an e-mail attachment.

This module is the page's layout: the header, the summary table, each run's section, the
compare overlay, and which findings become chart markers. The charts themselves (scales,
ticks, marker labels, drawing) are :mod:`.svgchart`; the stylesheet is the package data
file ``render/report.css``, inlined and pinned by its hash in the page's
Content-Security-Policy.

Everything that comes from a log (paths, metric names, messages, evidence, notes,
mapping and meta strings) goes through :func:`html.escape`, in SVG ``<text>`` as much as
in HTML. The output is deterministic: the same reports give the same bytes (no clock).

Each report gets one chart per series in :attr:`Report.charts`, against step; each finding
with a step is a marker at that step, and a finding that carries an ``onset_step`` (a
divergence is placed at its best level, but failed where the climb began) is marked at its
onset instead, labelled ``TP-DIVERGE: FAIL from step 105``, the step the report's summary
names.
"""

from __future__ import annotations

import json
import math
from importlib.resources import files
from pathlib import Path

import numpy as np

from .._files import write_atomic
from ..findings import SEVERITY, Level, Report, jsonable, worst_verdict
from ..redact import scrub
from ._markup import LEVEL_CLASS, esc, fmt_step
from .charts import HISTORY_BAND
from .names import location_words, run_name
from .svgchart import BASELINE_COLOR, DASHES, PALETTE, Band, Marker, Series, nonfinite_note, step_domain, svg_chart
from .text import CLOSING_NOTE

# ----------------------------------------------------------------------------- helpers

_CHART_ORDER = ("loss", "eval_loss", "lr", "grad_norm")
_CHART_LABEL = {"loss": "loss", "eval_loss": "eval loss", "lr": "learning rate", "grad_norm": "gradient norm"}


def _badge(level: Level, big: bool = False) -> str:
    cls = "badge big" if big else "badge"
    return f'<span class="{cls} lv-{LEVEL_CLASS[level]}">{esc(level.value)}</span>'


def _jsonish(v) -> str:
    if isinstance(v, str):
        return v
    return json.dumps(jsonable(v), ensure_ascii=False)


def _onset(f) -> float | None:
    """The finite ``onset_step`` a finding carries, else ``None``."""
    onset = f.data.get("onset_step") if isinstance(f.data, dict) else None
    if onset is None or isinstance(onset, bool) or not isinstance(onset, (int, float, np.number)):
        return None
    onset = float(onset)
    return onset if math.isfinite(onset) else None


def _markers(r: Report) -> list[Marker]:
    """One marker per finding with a step: at its onset when it carries one (where the
    failure became visible, the step "FAIL from step N" names), else at its step."""
    out, seen = [], set()
    for f in r.findings:
        onset = _onset(f)
        if onset is not None:
            step, kind = onset, "onset"
        elif f.step is not None:
            step, kind = float(f.step), "finding"
        else:
            continue
        key = (f.id, step, kind)
        if math.isfinite(step) and key not in seen:
            seen.add(key)
            out.append(Marker(step, f.id, f.level, kind))
    return out


def _chart_names(charts: dict) -> list[str]:
    known = [n for n in _CHART_ORDER if n in charts]
    return known + sorted(n for n in charts if n not in _CHART_ORDER and n != HISTORY_BAND)


def _history_band(charts: dict) -> Band | None:
    """The band of the run's history under its loss chart (:data:`charts.HISTORY_BAND`)."""
    b = charts.get(HISTORY_BAND)
    if not b:
        return None
    runs = list(b.get("runs", ()))
    return Band(b["steps"], b["lower"], b["median"], b["upper"], f"the band of {len(runs)} recent healthy runs")


def _report_charts(r: Report) -> str:
    charts = r.charts or {}
    names = [n for n in _chart_names(charts) if len(np.asarray(charts[n].get("values", ()))) > 0]
    if not names:
        return (
            '<p class="muted">No chartable series (loss, eval loss, learning rate, gradient norm) in this report.</p>'
        )
    series = {n: Series(charts[n]["steps"], charts[n]["values"]) for n in names}
    markers = _markers(r)
    dom = step_domain([s.steps for s in series.values()], [m.step for m in markers])
    if dom is None:
        return '<p class="muted">No chartable series: no point has a finite step.</p>'
    out = ['<div class="charts">']
    for i, n in enumerate(names):
        s = series[n]
        label = _CHART_LABEL.get(n, str(n))
        band = _history_band(charts) if n == "loss" else None
        svg, counts = svg_chart(
            [s], label, n, markers, dom, width=900 if i == 0 else 500, plot_h=260 if i == 0 else 200, envelope=band
        )
        key = charts[n].get("key", n)
        fin = int(np.isfinite(s.values).sum())
        cap = [
            f'<b>{esc(label)}</b> <span class="muted">(raw key <code>{esc(key)}</code>, '
            f"{len(s.values)} points charted, {fin} finite)</span>"
        ]
        if band is not None:
            runs = charts[HISTORY_BAND].get("runs", ())
            cap.append(
                f'<span class="muted small">Shaded: the band of the {len(runs)} recent healthy runs of its '
                f"experiment ({esc(', '.join(runs[:6]))}{' …' if len(runs) > 6 else ''}): their median "
                "dashed, edges at the median plus and minus the margin the history rules allow.</span>"
            )
        note = nonfinite_note(counts)
        if note:
            cap.append(note)
        if s.no_step:
            cap.append(f'<span class="nfnote">{s.no_step} point(s) without a finite step are not charted.</span>')
        cls = "chart-fig wide" if i == 0 else "chart-fig"
        out.append(
            f'<figure class="{cls}" data-chart="{esc(n)}">{svg}<figcaption>{" ".join(cap)}</figcaption></figure>'
        )
    out.append("</div>")
    if markers:
        out.append(
            '<p class="muted small">Vertical lines: the step of each finding, coloured by level '
            "(red FAIL, amber WARN, grey INFO); a dashed line is where a failure became visible "
            "(\u201cFAIL from step N\u201d), for a finding placed elsewhere, such as a divergence "
            "at its best level.</p>"
        )
    return "".join(out)


def _compare_section(reports: list[Report], ids: list[str]) -> str:
    series, legend = [], []
    for i, r in enumerate(reports):
        if i == 0:
            color, dash, width = BASELINE_COLOR, "", 2.4
        else:
            color = PALETTE[(i - 1) % len(PALETTE)]
            dash = DASHES[((i - 1) // len(PALETTE)) % len(DASHES)]
            width = 1.8
        name = run_name(r)
        loss = (r.charts or {}).get("loss")
        role = "baseline" if i == 0 else f"run {i + 1}"
        swatch = (
            f'<svg class="swatch" width="30" height="12" viewBox="0 0 30 12" aria-hidden="true">'
            f'<line x1="1" x2="29" y1="6" y2="6" stroke="{color}" stroke-width="{width + 0.6}"'
            f"{f' stroke-dasharray={chr(34)}{dash}{chr(34)}' if dash else ''}/></svg>"
        )
        extra = ""
        if loss is not None and len(np.asarray(loss["values"])):
            series.append(Series(loss["steps"], loss["values"], color, dash, width, label=f"{role}: {name}"))
        else:
            extra = ' <span class="muted">(no loss series: not drawn)</span>'
        legend.append(
            f'<li class="legend-item" data-run="{esc(name)}">{swatch} <span class="role">{esc(role)}</span> '
            f'<a href="#{ids[i]}"><code>{esc(name)}</code></a> {_badge(r.verdict)}{extra}</li>'
        )
    out = ['<section class="compare" id="compare"><h2>Loss of every run</h2>']
    dom = step_domain([s.steps for s in series], [])
    if series and dom is not None:
        svg, counts = svg_chart(series, "loss", "compare-loss", [], dom, width=900, plot_h=300)
        note = nonfinite_note(counts)
        if note:
            per_run = "; ".join(
                f"{s.label.split(':')[0]}: {sum(s.counts.values())}" for s in series if sum(s.counts.values())
            )
            note = note.replace("marked along", "marked in each run’s colour along").replace(
                "</span>", f" By run: {esc(per_run)}.</span>"
            )
        out.append(
            f'<figure class="chart-fig wide" data-chart="compare-loss">{svg}<figcaption>'
            f'<ul class="legend">{"".join(legend)}</ul>{note}'
            '<span class="muted small">The first run is the baseline. Finding markers are on '
            "each run's own charts below.</span></figcaption></figure>"
        )
    else:
        out.append(
            f'<ul class="legend">{"".join(legend)}</ul><p class="muted">No run has a loss series to overlay.</p>'
        )
    out.append("</section>")
    return "".join(out)


# ----------------------------------------------------------------------------- sections


def _finding(f, r: Report) -> str:
    where = []
    if f.step is not None:
        where.append(f"step {fmt_step(f.step)}")
    if f.line is not None:
        where.append(location_words(r, f.line))
    where_html = f'<span class="where">{esc(" · ".join(where))}</span>' if where else ""
    parts = [
        f'<li class="finding lv-{LEVEL_CLASS.get(f.level, "info")}" data-rule="{esc(f.id)}">',
        f'<div class="fhead">{_badge(f.level)} <code class="rule">{esc(f.id)}</code> '
        f'<span class="message">{esc(f.message)}</span> {where_html}</div>',
    ]
    if f.evidence:
        parts.append(f'<p class="evidence">{esc(f.evidence)}</p>')
    if f.hint:
        parts.append(f'<p class="hint">{esc(f.hint)}</p>')
    if f.source and f.source != "single_run":
        parts.append(f'<p class="muted small">source: {esc(f.source)}</p>')
    parts.append("</li>")
    return "".join(parts)


def _report_section(r: Report, anchor: str, n: int) -> str:
    v = r.verdict
    out = [
        f'<section class="run lv-{LEVEL_CLASS[v]}" id="{anchor}" data-verdict="{esc(v.value)}">',
        f'<h2><span class="runno">{n}</span> {_badge(v)} <code class="file">{esc(run_name(r))}</code></h2>',
    ]
    if r.error is not None:
        out.append(f'<p class="error"><b>could not read:</b> {esc(r.error)}</p>')
    facts = [("format", esc(r.format or "unknown")), ("records", esc(r.records))]
    if r.step_range is not None:
        facts.append(("steps", f"{esc(fmt_step(r.step_range[0]))} – {esc(fmt_step(r.step_range[1]))}"))
    out.append('<dl class="facts">' + "".join(f"<dt>{k}</dt><dd>{val}</dd>" for k, val in facts) + "</dl>")
    if r.summary:
        out.append(f'<p class="summary lv-{LEVEL_CLASS[v]}">{esc(r.summary)}</p>')
    for s in r.snapshots:
        out.append(f'<p class="muted small">folded snapshot: <code>{esc(s)}</code></p>')

    out.append(f"<h3>Findings ({len(r.findings)})</h3>")
    if r.findings:
        out.append('<ol class="findings">' + "".join(_finding(f, r) for f in r.findings) + "</ol>")
    else:
        out.append('<p class="muted">No findings.</p>')

    if r.error is None:
        out.append("<h3>Charts</h3>")
        out.append(_report_charts(r))

    out.append("<h3>Checks</h3>")
    if r.ran:
        out.append(
            f'<p class="ran"><b>Ran ({len(r.ran)}):</b> '
            + " ".join(f'<code class="chip">{esc(c)}</code>' for c in r.ran)
            + "</p>"
        )
    else:
        out.append('<p class="muted">No check ran.</p>')
    if r.skipped:
        rows = "".join(
            f'<tr data-check="{esc(k)}"><td><code>{esc(k)}</code></td><td>{esc(s.reason)}</td>'
            f"<td>{esc(s.detail)}</td></tr>"
            for k, s in r.skipped.items()
        )
        out.append(
            f'<table class="skipped"><caption>Skipped ({len(r.skipped)}): not judged, so not passed'
            f"</caption><thead><tr><th>check</th><th>reason</th><th>detail</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
        )

    if r.notes:
        out.append('<h3>Notes</h3><ul class="notes">' + "".join(f"<li>{esc(n_)}</li>" for n_ in r.notes) + "</ul>")
    if r.mapping:
        rows = []
        for k, m in r.mapping.items():
            if isinstance(m, dict):
                src, how, ign = m.get("source", ""), m.get("how", ""), m.get("ignored") or []
            else:
                src, how, ign = m, "", []
            rows.append(
                f"<tr><td>{esc(k)}</td><td><code>{esc(_jsonish(src))}</code></td><td>{esc(_jsonish(how))}</td>"
                f"<td>{esc(', '.join(_jsonish(x) for x in ign))}</td></tr>"
            )
        out.append(
            '<h3>Metrics read</h3><table class="mapping"><thead><tr><th>metric</th><th>raw key</th>'
            f"<th>how</th><th>ignored candidates</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )
    if r.meta:
        rows = "".join(f"<tr><td>{esc(k)}</td><td>{esc(_jsonish(val))}</td></tr>" for k, val in r.meta.items())
        out.append(f'<h3>Declared in the log</h3><table class="meta"><tbody>{rows}</tbody></table>')
    out.append('<p class="top"><a href="#top">back to top</a></p></section>')
    return "".join(out)


def _summary_table(reports: list[Report], ids: list[str]) -> str:
    rows = []
    for i, r in enumerate(reports):
        flagged = list(dict.fromkeys(f.id for f in r.findings if f.level in (Level.FAIL, Level.WARN)))
        what = ", ".join(flagged) if flagged else ("could not read: " + r.error if r.error else "")
        rows.append(
            f'<tr class="lv-{LEVEL_CLASS[r.verdict]}"><td class="num">{i + 1}</td><td>{_badge(r.verdict)}</td>'
            f'<td><a href="#{ids[i]}"><code>{esc(run_name(r))}</code></a></td><td>{esc(r.format or "-")}</td>'
            f'<td class="num">{esc(r.records)}</td><td>{esc(what)}</td></tr>'
        )
    return (
        '<table class="summary-table"><thead><tr><th>#</th><th>verdict</th><th>run</th><th>format</th>'
        f"<th>records</th><th>FAIL / WARN</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


#: The page's stylesheet (package data, ``render/report.css``), as the ``<style>`` element
#: holds it: after the newline that opens the element, so the hash in :data:`CSP` is of
#: exactly the text the browser reads.
_CSS = "\n" + files(__package__).joinpath("report.css").read_text(encoding="utf-8")


def render_html(reports: list[Report], title: str = "trainproof report", compare: bool = False) -> str:
    """One self-contained HTML page for ``reports``.

    Several reports get a summary table linking to each run's section; for a doctor run
    they are ordered worst first. With ``compare`` the order is kept (the first report is
    the baseline) and a chart overlays the loss of every run.
    """
    reports, title = scrub((list(reports), title))
    if compare or len(reports) < 2:
        ordered = reports
    else:
        ordered = [r for _, r in sorted(enumerate(reports), key=lambda p: (-SEVERITY[p[1].verdict], p[1].file, p[0]))]
    ids = [f"run-{i + 1}" for i in range(len(ordered))]
    worst = worst_verdict(ordered)
    from .. import __version__

    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title>",
        f'<meta name="generator" content="trainproof {esc(__version__)}">',
        f"<style>{_CSS}</style></head>",
        '<body><main id="top">',
    ]
    n = len(ordered)
    tally = {}
    for r in ordered:
        tally[r.verdict] = tally.get(r.verdict, 0) + 1
    counts = ", ".join(
        f"{tally[lv]} {lv.value}" for lv in (Level.FAIL, Level.WARN, Level.NOT_CHECKED, Level.PASS) if lv in tally
    )
    verdict_html = _badge(worst, big=True) if worst is not None else '<span class="badge big lv-info">NO INPUT</span>'
    what = f"{n} run{'s' if n != 1 else ''}" + (f": {counts}" if counts else "")
    if n == 1:
        what = f"<code>{esc(run_name(ordered[0]))}</code>"
    out.append(
        f'<header class="page" data-verdict="{esc(worst.value if worst else "")}">'
        f'<div>{verdict_html}</div><div class="overall"><h1>{esc(title)}</h1>'
        f'<div class="counts">overall verdict <b>{esc(worst.value if worst else "none")}</b> · {what}</div>'
        "</div></header>"
    )
    if n > 1:
        out.append(
            f'<section class="overview"><h2>{"Runs compared" if compare else "Runs"}</h2>'
            f"{_summary_table(ordered, ids)}</section>"
        )
    if compare and n:
        out.append(_compare_section(ordered, ids))
    if not n:
        out.append('<section class="overview"><p>No report to show: nothing was judged.</p></section>')
    for i, r in enumerate(ordered):
        out.append(_report_section(r, ids[i], i + 1))
    if any(r.verdict is Level.PASS for r in ordered):
        out.append(f"<footer><p>{esc(CLOSING_NOTE)}</p></footer>")
    out.append(
        f"<footer><p>trainproof {esc(__version__)}: a deterministic linter for training runs. "
        "This page is self-contained: it loads nothing from the network.</p></footer>"
    )
    out.append("</main></body></html>\n")
    return "\n".join(out)


def _csp() -> str:
    """The page's Content-Security-Policy: nothing may load from anywhere (no scripts at
    all, no images, fonts, frames, forms or connections), and the only style allowed is
    the page's own stylesheet, pinned by its SHA-256 hash, so text injected from a log
    could neither run nor restyle the page even if escaping failed."""
    import base64
    import hashlib

    digest = base64.b64encode(hashlib.sha256(_CSS.encode("utf-8")).digest()).decode("ascii")
    return (
        f"default-src 'none'; style-src 'sha256-{digest}'; script-src 'none'; img-src 'none'; "
        "base-uri 'none'; form-action 'none'"
    )


CSP = _csp()


def write_html(reports: list[Report], path: Path, title: str = "trainproof report", compare: bool = False) -> None:
    """Write :func:`render_html` to ``path`` (UTF-8, ``\\n`` line ends)."""
    write_atomic(path, render_html(reports, title=title, compare=compare))


def write(reports: list[Report], path: Path, *, baseline: Report | None = None) -> None:
    """The ``--html`` file (:data:`trainproof.render.RENDERERS`): :func:`write_html` of
    ``reports``, or with a ``compare`` baseline, the comparison page (the baseline first)."""
    if baseline is not None:
        write_html([baseline, *reports], path, title="trainproof compare", compare=True)
    else:
        write_html(reports, path)
