"""Inline SVG charts of a series against step, written here without a plotting library:
the scales, the ticks, the finding markers and their label placement, and the drawing.

* linear y axis with 1-2-2.5-5 ticks; a log10 axis, said so in the axis label, when every
  finite value is positive and they span more than two decades;
* NaN and +/-Inf are not on any scale, so they are drawn as marks in a band along the top
  edge (x for NaN, up/down triangles for +Inf/-Inf) and counted under the chart; the line
  breaks where they are;
* each marker is a vertical line at its step, coloured by level and labelled with its rule
  id; a marker of kind ``onset`` (where a failure became visible) is dashed and labelled
  ``TP-DIVERGE: FAIL from step 105``; labels are given lanes so that no two overlap; the
  lines carry ``data-rule``/``data-step`` and each chart its plot box and step domain as
  ``data-*`` attributes, so the position of a mark can be checked from the markup.

Every string that reaches the markup (axis labels, rule ids, series labels) goes through
:func:`._markup.esc`. The module knows nothing of reports or of the page around a chart:
:mod:`.html` turns findings into :class:`Marker` objects and lays the charts out.
"""

from __future__ import annotations

import math

import numpy as np

from ..findings import SEVERITY, Level
from ._markup import LEVEL_CLASS, esc, fmt_num, fmt_step, pretty_exp

_LEVEL_COLOR = {
    Level.FAIL: "#b42318",
    Level.WARN: "#b54708",
    Level.PASS: "#067647",
    Level.NOT_CHECKED: "#6941c6",
    Level.INFO: "#475467",
}
_SERIES_COLOR = "#1f4e8c"
_NONFINITE_COLOR = "#9e1f63"
#: Line colours of the compare overlay: the baseline in near-black, then Okabe-Ito
#: (colour-blind safe); past the palette the dash pattern changes too.
PALETTE = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#56b4e9", "#e69f00")
DASHES = ("", "7 3", "2 3")
BASELINE_COLOR = "#1d2433"

#: Width of one character of the SVG marker labels (monospace, 11px), for placing them.
_CHAR_W = 6.8
_LANE_H = 15.0
_BAND_H = 14.0


def _fmt_tick(v: float, step: float) -> str:
    """A tick label with just enough digits to tell neighbouring ticks apart."""
    if abs(v) < abs(step) * 1e-9:
        return "0"
    exp_step = math.floor(math.log10(abs(step)))
    extra = 0 if abs(step / 10**exp_step - round(step / 10**exp_step)) < 1e-9 else 1
    if 1e-4 <= abs(v) < 1e6:
        return f"{v:.{max(0, -exp_step + extra)}f}"
    sig = max(1, math.floor(math.log10(abs(v))) - exp_step + 1 + extra)
    return pretty_exp(f"{v:.{sig}g}")


def _fmt_decade(e: int) -> str:
    return f"{10.0**e:g}" if -3 <= e <= 4 else f"1e{e}"


# ----------------------------------------------------------------------------- scales


def _nice_step(span: float, n: int) -> float:
    raw = span / max(n, 1)
    mag = 10.0 ** math.floor(math.log10(raw))
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        if raw <= m * mag * (1 + 1e-9):
            return m * mag
    return 10 * mag  # pragma: no cover - the loop always returns


def _pad_constant(lo: float, hi: float) -> tuple[float, float]:
    if hi - lo > 1e-12 * max(abs(lo), abs(hi)):
        return lo, hi
    pad = abs(lo) * 0.1 if lo != 0 else 1.0
    return lo - pad, hi + pad


class Scale:
    """Maps data to pixels along one axis; ``log`` maps log10(value)."""

    def __init__(self, lo: float, hi: float, p0: float, p1: float, log: bool = False, k: float = 1.0):
        # lo and hi are in units of k * value (k < 1 keeps a span near 1e308 finite)
        self.lo, self.hi, self.p0, self.p1, self.log, self.k = lo, hi, p0, p1, log, k

    def __call__(self, v: float) -> float:
        t = (math.log10(v) if self.log else v) * self.k
        return self.p0 + (t - self.lo) / (self.hi - self.lo) * (self.p1 - self.p0)


def _y_axis(values: list[np.ndarray], p0: float, p1: float) -> tuple[Scale, list[tuple[float, str]], bool]:
    """The y scale (``p0`` is the bottom pixel) and its ticks ``(value, label)``."""
    finite = [v[np.isfinite(v)] for v in values]
    finite = [v for v in finite if v.size]
    if not finite:
        return Scale(0.0, 1.0, p0, p1), [], False
    lo = float(min(v.min() for v in finite))
    hi = float(max(v.max() for v in finite))
    try:
        return _nice_y_axis(lo, hi, p0, p1)
    except (ArithmeticError, ValueError):
        return _plain_y_axis(lo, hi, p0, p1)


def _plain_y_axis(lo: float, hi: float, p0: float, p1: float) -> tuple[Scale, list[tuple[float, str]], bool]:
    """For values at the edge of float64 (a span that overflows, subnormals): the plain
    range, computed at half scale, with its two ends as ticks."""
    k = 0.5
    a, b = lo * k, hi * k
    if not b > a:
        pad = abs(a) * 0.25 or 1.0
        a, b = a - pad, b + pad
    ticks = [(lo, fmt_num(lo))] + ([(hi, fmt_num(hi))] if hi != lo else [])
    return Scale(a, b, p0, p1, k=k), ticks, False


def _nice_y_axis(lo: float, hi: float, p0: float, p1: float) -> tuple[Scale, list[tuple[float, str]], bool]:
    if 1e-300 < lo and hi < 1e300 and hi / lo > 100.0:
        e0, e1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
        if e1 == e0:
            e1 += 1
        every = max(1, math.ceil((e1 - e0) / 7))
        ticks = [(10.0**e, _fmt_decade(e)) for e in range(e0, e1 + 1) if (e - e0) % every == 0]
        return Scale(float(e0), float(e1), p0, p1, log=True), ticks, True
    lo, hi = _pad_constant(lo, hi)
    step = _nice_step(hi - lo, 5)
    start = math.floor(lo / step + 1e-9) * step
    end = math.ceil(hi / step - 1e-9) * step
    n = int(round((end - start) / step))
    ticks = [(start + i * step, _fmt_tick(start + i * step, step)) for i in range(n + 1)]
    return Scale(start, end, p0, p1), ticks, False


def _x_ticks(lo: float, hi: float) -> list[tuple[float, str]]:
    step = _nice_step(hi - lo, 6)
    first = math.ceil(lo / step - 1e-9) * step
    out = []
    i = 0
    while first + i * step <= hi + step * 1e-9:
        v = first + i * step
        out.append((v, _fmt_tick(v, step)))
        i += 1
    return out


# ----------------------------------------------------------------------------- charts


class Series:
    """One line of a chart: ``steps`` and ``values`` (array-likes of the same length, as
    float64), kept sorted by step; points without a finite step are left out and counted in
    ``no_step``. ``color``, ``dash`` (an SVG ``stroke-dasharray``, empty for solid) and
    ``width`` (px) style the line; ``label`` names it in the marks' tooltips."""

    def __init__(self, steps, values, color=_SERIES_COLOR, dash="", width=1.8, label=""):
        steps = np.asarray(steps, dtype=np.float64)
        values = np.asarray(values, dtype=np.float64)
        ok = np.isfinite(steps)
        self.no_step = int((~ok).sum())
        order = np.argsort(steps[ok], kind="stable")
        self.steps = steps[ok][order]
        self.values = values[ok][order]
        self.color, self.dash, self.width, self.label = color, dash, width, label

    @property
    def counts(self) -> dict:
        """How many values are NaN, +Inf and -Inf: ``{"NaN": n, "+Inf": n, "-Inf": n}``."""
        v = self.values
        return {"NaN": int(np.isnan(v).sum()), "+Inf": int(np.isposinf(v).sum()), "-Inf": int(np.isneginf(v).sum())}


class Band:
    """A shaded envelope on a chart: at each of ``steps``, the span ``lower``..``upper`` and
    the ``median`` (float64 arrays of one length; a NaN column is a gap), named ``label`` in
    its tooltip (``the band of 3 recent runs``)."""

    def __init__(self, steps, lower, median, upper, label=""):
        self.steps = np.asarray(steps, dtype=np.float64)
        self.lower = np.asarray(lower, dtype=np.float64)
        self.median = np.asarray(median, dtype=np.float64)
        self.upper = np.asarray(upper, dtype=np.float64)
        self.label = label


def _band_svg(band: Band, sx: Scale, sy: Scale, y0: float, y1: float, x0: float, x1: float) -> str:
    """The band's shaded polygons (one per run of columns with every value finite, clamped
    to the plot) and its dashed median line, in one ``<g class="band">``."""
    f1 = lambda v: f"{v:.1f}"  # noqa: E731

    def y(v: float) -> float:
        if sy.log and v <= 0:
            return y1
        return min(max(sy(v), y0), y1)

    ok = (
        np.isfinite(band.steps)
        & np.isfinite(band.lower)
        & np.isfinite(band.median)
        & np.isfinite(band.upper)
        & (band.steps >= min(sx.lo, sx.hi) / sx.k)
        & (band.steps <= max(sx.lo, sx.hi) / sx.k)
    )
    runs, cur = [], []
    for i, good in enumerate(ok.tolist()):
        if good:
            cur.append(i)
        elif cur:
            runs.append(cur)
            cur = []
    if cur:
        runs.append(cur)
    parts = [f'<g class="band" data-band="{esc(band.label)}"><title>{esc(band.label)}</title>']
    for idx in runs:
        if len(idx) < 2:
            continue
        xs = [min(max(sx(float(band.steps[i])), x0), x1) for i in idx]
        top = [f"{f1(x)} {f1(y(float(band.upper[i])))}" for x, i in zip(xs, idx)]
        bottom = [f"{f1(x)} {f1(y(float(band.lower[i])))}" for x, i in reversed(list(zip(xs, idx)))]
        parts.append(f'<path d="M{" L".join(top + bottom)} Z" fill="{_BAND_FILL}" fill-opacity="0.22" stroke="none"/>')
        mid = " L".join(f"{f1(x)} {f1(y(float(band.median[i])))}" for x, i in zip(xs, idx))
        parts.append(f'<path d="M{mid}" fill="none" stroke="{_BAND_FILL}" stroke-width="1.2" stroke-dasharray="4 3"/>')
    parts.append("</g>")
    return "".join(parts)


#: The band's fill and median colour: a neutral grey-blue that the series' colour and the
#: finding markers stand out of.
_BAND_FILL = "#667085"


class Marker:
    """A vertical line at ``step`` for the rule ``rule`` at ``level``; ``kind`` is ``finding``
    (the step of a finding) or ``onset`` (where a failure became visible: drawn dashed)."""

    def __init__(self, step: float, rule: str, level: Level, kind: str = "finding"):
        self.step, self.rule, self.level, self.kind = float(step), rule, level, kind


def _rank(level: Level) -> int:
    return SEVERITY.get(level, -1)


class _Label:
    """One label for every marker at the same step and of the same kind."""

    def __init__(self, markers: list[Marker]):
        m0 = markers[0]
        self.step, self.kind = m0.step, m0.kind
        self.rules = list(dict.fromkeys(m.rule for m in markers))
        self.level = max((m.level for m in markers), key=_rank)
        if self.kind == "onset":
            self.text = f"{', '.join(self.rules)}: {self.level.value} from step {fmt_step(self.step)}"
        else:
            self.text = f"{', '.join(self.rules)} (step {fmt_step(self.step)})"


def _place_labels(
    markers: list[Marker], sx: Scale, left: float, right: float
) -> list[tuple[_Label, float, float, str, int]]:
    """Give each label a lane so that no two labels overlap.

    Returns ``(label, box_left, box_right, anchor, lane)``; lane 0 is nearest the plot. A
    label sits right of its line, or left of it when it would run past the right edge.
    """
    groups: dict[tuple[float, str], list[Marker]] = {}
    for m in markers:
        groups.setdefault((m.step, m.kind), []).append(m)
    labels = [_Label(g) for _, g in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] != "finding"))]
    lanes: list[list[tuple[float, float]]] = []
    out = []
    for lab in labels:
        x = sx(lab.step)
        w = len(lab.text) * _CHAR_W + 6
        if x + 2 + w <= right or x - 2 - w < left - 60:
            a, b, anchor = x + 2, x + 2 + w, "start"
        else:
            a, b, anchor = x - 2 - w, x - 2, "end"
        for lane, used in enumerate(lanes):
            if all(b + 4 <= ua or a - 4 >= ub for ua, ub in used):
                used.append((a, b))
                break
        else:
            lanes.append([(a, b)])
            lane = len(lanes) - 1
        out.append((lab, a, b, anchor, lane))
    return out


def svg_chart(
    series: list[Series],
    ylabel: str,
    name: str,
    markers: list[Marker],
    x_domain: tuple[float, float],
    width: int = 900,
    plot_h: int = 250,
    envelope: Band | None = None,
) -> tuple[str, dict]:
    """An SVG chart of ``series`` against step; returns ``(svg, counts of non-finite points)``.

    ``ylabel`` labels the y axis, ``name`` is the chart's ``data-series``, ``markers`` are
    drawn over every series, ``x_domain`` is the ``(first, last)`` step shown (widened when
    they are equal); ``width`` and ``plot_h`` are in px. ``envelope``: a shaded band (other
    runs' spread) drawn under the series, its median dashed; its edges count in the y scale,
    and an edge off the plot is drawn at the plot's edge.
    """
    left, right_m, bottom = 74.0, 18.0, 46.0
    x0, x1 = left, width - right_m
    lo, hi = x_domain
    if not hi > lo:
        pad = max(abs(lo) * 0.05, 1.0)
        lo, hi = lo - pad, hi + pad
    # a step span that overflows float64 is scaled by half (see Scale)
    sx = Scale(lo, hi, x0, x1) if math.isfinite(hi - lo) else Scale(lo / 2, hi / 2, x0, x1, k=0.5)
    placed = _place_labels(markers, sx, x0, float(width) - 4)
    n_lanes = 1 + max((p[4] for p in placed), default=-1)
    counts = {"NaN": 0, "+Inf": 0, "-Inf": 0}
    for s in series:
        for k, c in s.counts.items():
            counts[k] += c
    nonfinite = sum(counts.values())
    band = _BAND_H + 4 if nonfinite else 0.0
    top = 10.0 + n_lanes * _LANE_H + band + (4.0 if n_lanes else 0.0)
    y0, y1 = top, top + plot_h  # y0: top of the plot, y1: bottom
    height = y1 + bottom
    banded = [envelope.median, envelope.upper] if envelope is not None else []
    sy, yticks, log = _y_axis([s.values for s in series] + banded, y1, y0)
    f1 = lambda v: f"{v:.1f}"  # noqa: E731 - one decimal keeps the output small and stable

    ylab = f"{ylabel} (log scale)" if log else ylabel
    out = [
        f'<svg class="chart" viewBox="0 0 {width} {f1(height)}" width="{width}" height="{f1(height)}" '
        f'role="img" aria-label="{esc(ylab)} against step" data-series="{esc(name)}" '
        f'data-scale="{"log" if log else "linear"}" data-plot-x0="{f1(x0)}" data-plot-x1="{f1(x1)}" '
        f'data-plot-y0="{f1(y0)}" data-plot-y1="{f1(y1)}" data-step-min="{esc(repr(float(lo)))}" '
        f'data-step-max="{esc(repr(float(hi)))}" data-nonfinite="{nonfinite}">',
        f"<title>{esc(ylab)} against step</title>",
        f'<rect x="{f1(x0)}" y="{f1(y0)}" width="{f1(x1 - x0)}" height="{f1(plot_h)}" class="plotbg"/>',
    ]
    # grid and ticks
    for v, lab in yticks:
        y = sy(v)
        out.append(f'<line class="grid" x1="{f1(x0)}" x2="{f1(x1)}" y1="{f1(y)}" y2="{f1(y)}"/>')
        out.append(f'<text class="tick" x="{f1(x0 - 7)}" y="{f1(y + 4)}" text-anchor="end">{esc(lab)}</text>')
    if log and sy.hi - sy.lo <= 8:
        for e in range(int(sy.lo), int(sy.hi)):
            for m in range(2, 10):
                y = sy(m * 10.0**e)
                out.append(f'<line class="minor" x1="{f1(x0 - 3)}" x2="{f1(x0)}" y1="{f1(y)}" y2="{f1(y)}"/>')
    try:
        xticks = _x_ticks(lo, hi)
    except (ArithmeticError, ValueError):
        xticks = [(lo, fmt_num(lo)), (hi, fmt_num(hi))]
    for v, lab in xticks:
        x = sx(v)
        out.append(f'<line class="grid" x1="{f1(x)}" x2="{f1(x)}" y1="{f1(y0)}" y2="{f1(y1)}"/>')
        out.append(f'<line class="axis" x1="{f1(x)}" x2="{f1(x)}" y1="{f1(y1)}" y2="{f1(y1 + 4)}"/>')
        out.append(f'<text class="tick" x="{f1(x)}" y="{f1(y1 + 17)}" text-anchor="middle">{esc(lab)}</text>')
    out.append(f'<line class="axis" x1="{f1(x0)}" x2="{f1(x0)}" y1="{f1(y0)}" y2="{f1(y1)}"/>')
    out.append(f'<line class="axis" x1="{f1(x0)}" x2="{f1(x1)}" y1="{f1(y1)}" y2="{f1(y1)}"/>')
    out.append(f'<text class="axlabel" x="{f1((x0 + x1) / 2)}" y="{f1(y1 + 36)}" text-anchor="middle">step</text>')
    cy = (y0 + y1) / 2
    out.append(
        f'<text class="axlabel" x="16" y="{f1(cy)}" text-anchor="middle" '
        f'transform="rotate(-90 16 {f1(cy)})">{esc(ylab)}</text>'
    )
    if not any(np.isfinite(s.values).any() for s in series):
        out.append(
            f'<text class="empty" x="{f1((x0 + x1) / 2)}" y="{f1(cy)}" text-anchor="middle">'
            "no finite value to draw: every point is non-finite</text>"
        )

    # finding markers: a line per finding, under the data; one label per step above the
    # plot, drawn after every line on a white box so a line crossing it does not hide it
    band_top = y0 - band
    lane_y = {}
    for lab, a, b, anchor, lane in placed:
        lane_y[(lab.step, lab.kind)] = band_top - 4 - lane * _LANE_H - 4
    for m in markers:
        x = sx(m.step)
        ly = lane_y[(m.step, m.kind)]
        dash = ' stroke-dasharray="6 4"' if m.kind == "onset" else ""
        out.append(
            f'<g class="marker lv-{LEVEL_CLASS.get(m.level, "info")}" data-rule="{esc(m.rule)}" '
            f'data-step="{esc(fmt_step(m.step))}" data-kind="{esc(m.kind)}" data-level="{esc(m.level.value)}">'
            f"<title>{esc(_marker_title(m))}</title>"
            f'<line class="marker-line" x1="{f1(x)}" x2="{f1(x)}" y1="{f1(ly + 3)}" y2="{f1(y1)}" '
            f'stroke="{_LEVEL_COLOR.get(m.level, "#475467")}"{dash}/></g>'
        )
    for lab, a, b, anchor, lane in placed:
        ly = lane_y[(lab.step, lab.kind)]
        tx = a + 3 if anchor == "start" else b - 3
        out.append(
            f'<g class="marker-label" data-rules="{esc(" ".join(lab.rules))}" data-step="{esc(fmt_step(lab.step))}">'
            f'<rect x="{f1(a)}" y="{f1(ly - 11)}" width="{f1(b - a)}" height="14" rx="2"/>'
            f'<text x="{f1(tx)}" y="{f1(ly)}" text-anchor="{anchor}" fill="{_LEVEL_COLOR.get(lab.level, "#475467")}">'
            f"{esc(lab.text)}</text></g>"
        )

    if envelope is not None:
        out.append(_band_svg(envelope, sx, sy, y0, y1, x0, x1))

    # data
    for s in series:
        fin = np.isfinite(s.values)
        dash = f' stroke-dasharray="{s.dash}"' if s.dash else ""
        segs, cur = [], []
        for st, v, ok in zip(s.steps.tolist(), s.values.tolist(), fin.tolist()):
            if ok:
                cur.append((sx(st), sy(v)))
            elif cur:
                segs.append(cur)
                cur = []
        if cur:
            segs.append(cur)
        d = " ".join("M" + " L".join(f"{f1(x)} {f1(y)}" for x, y in seg) for seg in segs if len(seg) > 1)
        if d:
            out.append(f'<path class="series" d="{d}" stroke="{s.color}" stroke-width="{s.width}"{dash}/>')
        dots = [p for seg in segs for p in seg] if int(fin.sum()) <= 40 else [seg[0] for seg in segs if len(seg) == 1]
        for x, y in dots:
            out.append(f'<circle cx="{f1(x)}" cy="{f1(y)}" r="2.6" fill="{s.color}"/>')

    # non-finite points: marks in a band along the top edge
    if nonfinite:
        by = band_top + _BAND_H / 2
        out.append(
            f'<rect class="nfband" x="{f1(x0)}" y="{f1(band_top)}" width="{f1(x1 - x0)}" height="{f1(_BAND_H)}"/>'
        )
        kinds = "/".join(k for k in ("NaN", "+Inf", "-Inf") if counts[k])
        out.append(f'<text class="nflabel" x="{f1(x0 - 10)}" y="{f1(by + 4)}" text-anchor="end">{esc(kinds)}</text>')
        for s in series:
            color = _NONFINITE_COLOR if len(series) == 1 else s.color
            xs = [sx(st) for st, v in zip(s.steps.tolist(), s.values.tolist()) if not math.isfinite(v)]
            gap = min((b - a for a, b in zip(xs, xs[1:]) if b > a), default=10.0)
            h = max(1.5, min(3.5, gap * 0.4))  # half-size of a mark: dense marks stay apart
            for st, v in zip(s.steps.tolist(), s.values.tolist()):
                if math.isfinite(v):
                    continue
                x = sx(st)
                kind = fmt_num(v)
                if math.isnan(v):
                    shape = (
                        f'<path d="M{f1(x - h)} {f1(by - 3.5)} L{f1(x + h)} {f1(by + 3.5)} '
                        f'M{f1(x - h)} {f1(by + 3.5)} L{f1(x + h)} {f1(by - 3.5)}" '
                        f'stroke="{color}" stroke-width="1.6"/>'
                    )
                elif v > 0:
                    shape = (
                        f'<path d="M{f1(x)} {f1(by - 4.5)} L{f1(x + h)} {f1(by + 3.5)} '
                        f'L{f1(x - h)} {f1(by + 3.5)} Z" fill="{color}"/>'
                    )
                else:
                    shape = (
                        f'<path d="M{f1(x)} {f1(by + 4.5)} L{f1(x + h)} {f1(by - 3.5)} '
                        f'L{f1(x - h)} {f1(by - 3.5)} Z" fill="{color}"/>'
                    )
                tip = f"{s.label}: " if s.label else ""
                out.append(
                    f'<g class="nonfinite" data-step="{esc(fmt_step(st))}" data-value="{kind}">'
                    f"<title>{esc(tip)}step {esc(fmt_step(st))}: {kind}</title>{shape}</g>"
                )
    out.append("</svg>")
    return "".join(out), counts


def nonfinite_note(counts: dict) -> str:
    """The HTML caption line for a chart's non-finite ``counts`` (as :func:`svg_chart`
    returns them), or ``""`` when there are none."""
    n = sum(counts.values())
    if not n:
        return ""
    parts = ", ".join(f"{c} {k}" for k, c in counts.items() if c)
    marks = []
    if counts["NaN"]:
        marks.append("× NaN")
    if counts["+Inf"]:
        marks.append("▲ +Inf")
    if counts["-Inf"]:
        marks.append("▼ −Inf")
    word = "point" if n == 1 else "points"
    return (
        f'<span class="nfnote">{n} non-finite {word} ({esc(parts)}): not on the scale, '
        f"marked along the top edge ({esc(', '.join(marks))}).</span>"
    )


def _marker_title(m: Marker) -> str:
    if m.kind == "onset":
        return f"{m.rule}: {m.level.value} from step {fmt_step(m.step)}"
    return f"{m.rule}, step {fmt_step(m.step)}: {m.level.value}"


def step_domain(steps: list[np.ndarray], extra: list[float]) -> tuple[float, float] | None:
    """The ``(lowest, highest)`` finite step among the arrays ``steps`` and the steps
    ``extra`` (markers), or ``None`` when there is none."""
    vals = [float(a.min()) for a in steps if a.size] + [float(a.max()) for a in steps if a.size] + extra
    vals = [v for v in vals if math.isfinite(v)]
    if not vals:
        return None
    return min(vals), max(vals)
