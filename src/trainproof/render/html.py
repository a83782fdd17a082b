"""One self-contained HTML file: verdicts, findings, checks and inline SVG charts.

The page needs nothing but itself: the CSS is inline, the charts are SVG written here
(no plotting library), there is no JavaScript, no font, image or stylesheet is fetched,
and nothing links outside the page except ``#run-N`` anchors. So it opens the same way
offline, from a CI artifact or an e-mail attachment.

Everything that comes from a log (paths, metric names, messages, evidence, notes,
mapping and meta strings) goes through :func:`html.escape`, in SVG ``<text>`` as much as
in HTML. The output is deterministic: the same reports give the same bytes (no clock).

Charts (one per series in :attr:`Report.charts`, against step):

* linear y axis with 1-2-2.5-5 ticks; a log10 axis, said so in the axis label, when every
  finite value is positive and they span more than two decades;
* NaN and +/-Inf are not on any scale, so they are drawn as marks in a band along the top
  edge (x for NaN, up/down triangles for +Inf/-Inf) and counted under the chart; the line
  breaks where they are;
* each finding with a step is a vertical line at that step, coloured by level and
  labelled with its rule id; a finding that carries an ``onset_step`` (a divergence is
  placed at its best level, but failed where the climb began) is marked at its onset
  instead, dashed and labelled ``TP-DIVERGE: FAIL from step 105``, the step the
  report's summary names; the lines carry ``data-rule``/``data-step`` and each chart its
  plot box and step domain as ``data-*`` attributes, so the position of a mark can be
  checked from the markup.
"""

from __future__ import annotations

import html as _html
import json
import math
from pathlib import Path

import numpy as np

from .._files import write_atomic
from ..findings import SEVERITY, Level, Report, jsonable, worst_verdict
from ..redact import scrub
from .names import location_words, run_name
from .text import CLOSING_NOTE

# ----------------------------------------------------------------------------- helpers

_LEVEL_COLOR = {
    Level.FAIL: "#b42318",
    Level.WARN: "#b54708",
    Level.PASS: "#067647",
    Level.NOT_CHECKED: "#6941c6",
    Level.INFO: "#475467",
}
_LEVEL_CLASS = {Level.FAIL: "fail", Level.WARN: "warn", Level.PASS: "pass", Level.NOT_CHECKED: "nc", Level.INFO: "info"}
_SERIES_COLOR = "#1f4e8c"
_NONFINITE_COLOR = "#9e1f63"
#: Line colours of the compare overlay: the baseline in near-black, then Okabe-Ito
#: (colour-blind safe); past the palette the dash pattern changes too.
_PALETTE = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#56b4e9", "#e69f00")
_DASHES = ("", "7 3", "2 3")
_BASELINE_COLOR = "#1d2433"

_CHART_ORDER = ("loss", "eval_loss", "lr", "grad_norm")
_CHART_LABEL = {"loss": "loss", "eval_loss": "eval loss", "lr": "learning rate", "grad_norm": "gradient norm"}

#: Width of one character of the SVG marker labels (monospace, 11px), for placing them.
_CHAR_W = 6.8
_LANE_H = 15.0
_BAND_H = 14.0


#: Control characters other than tab and line ends (C0, DEL, C1) shown as their escape:
#: HTML forbids them, and a file name holding ESC must show what it holds.
_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0x7F, 0xA0)]}


def _esc(x) -> str:
    return _html.escape(str(x).translate(_CONTROLS), quote=True)


def _fmt_step(x) -> str:
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    return str(int(x)) if x.is_integer() else f"{x:.6g}"


def _pretty_exp(s: str) -> str:
    """``1.5e-05`` -> ``1.5e-5``, ``1e+06`` -> ``1e6``."""
    if "e" not in s:
        return s
    mant, exp = s.split("e")
    sign = "-" if exp.startswith("-") else ""
    return f"{mant}e{sign}{exp.lstrip('+-').lstrip('0') or '0'}"


def _fmt_num(v: float, sig: int = 4) -> str:
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return _pretty_exp(f"{v:.{sig}g}")


def _fmt_tick(v: float, step: float) -> str:
    """A tick label with just enough digits to tell neighbouring ticks apart."""
    if abs(v) < abs(step) * 1e-9:
        return "0"
    exp_step = math.floor(math.log10(abs(step)))
    extra = 0 if abs(step / 10**exp_step - round(step / 10**exp_step)) < 1e-9 else 1
    if 1e-4 <= abs(v) < 1e6:
        return f"{v:.{max(0, -exp_step + extra)}f}"
    sig = max(1, math.floor(math.log10(abs(v))) - exp_step + 1 + extra)
    return _pretty_exp(f"{v:.{sig}g}")


def _fmt_decade(e: int) -> str:
    return f"{10.0**e:g}" if -3 <= e <= 4 else f"1e{e}"


def _badge(level: Level, big: bool = False) -> str:
    cls = "badge big" if big else "badge"
    return f'<span class="{cls} lv-{_LEVEL_CLASS[level]}">{_esc(level.value)}</span>'


def _jsonish(v) -> str:
    if isinstance(v, str):
        return v
    return json.dumps(jsonable(v), ensure_ascii=False)


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


class _Scale:
    """Maps data to pixels along one axis; ``log`` maps log10(value)."""

    def __init__(self, lo: float, hi: float, p0: float, p1: float, log: bool = False, k: float = 1.0):
        # lo and hi are in units of k * value (k < 1 keeps a span near 1e308 finite)
        self.lo, self.hi, self.p0, self.p1, self.log, self.k = lo, hi, p0, p1, log, k

    def __call__(self, v: float) -> float:
        t = (math.log10(v) if self.log else v) * self.k
        return self.p0 + (t - self.lo) / (self.hi - self.lo) * (self.p1 - self.p0)


def _y_axis(values: list[np.ndarray], p0: float, p1: float) -> tuple[_Scale, list[tuple[float, str]], bool]:
    """The y scale (``p0`` is the bottom pixel) and its ticks ``(value, label)``."""
    finite = [v[np.isfinite(v)] for v in values]
    finite = [v for v in finite if v.size]
    if not finite:
        return _Scale(0.0, 1.0, p0, p1), [], False
    lo = float(min(v.min() for v in finite))
    hi = float(max(v.max() for v in finite))
    try:
        return _nice_y_axis(lo, hi, p0, p1)
    except (ArithmeticError, ValueError):
        return _plain_y_axis(lo, hi, p0, p1)


def _plain_y_axis(lo: float, hi: float, p0: float, p1: float) -> tuple[_Scale, list[tuple[float, str]], bool]:
    """For values at the edge of float64 (a span that overflows, subnormals): the plain
    range, computed at half scale, with its two ends as ticks."""
    k = 0.5
    a, b = lo * k, hi * k
    if not b > a:
        pad = abs(a) * 0.25 or 1.0
        a, b = a - pad, b + pad
    ticks = [(lo, _fmt_num(lo))] + ([(hi, _fmt_num(hi))] if hi != lo else [])
    return _Scale(a, b, p0, p1, k=k), ticks, False


def _nice_y_axis(lo: float, hi: float, p0: float, p1: float) -> tuple[_Scale, list[tuple[float, str]], bool]:
    if 1e-300 < lo and hi < 1e300 and hi / lo > 100.0:
        e0, e1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
        if e1 == e0:
            e1 += 1
        every = max(1, math.ceil((e1 - e0) / 7))
        ticks = [(10.0**e, _fmt_decade(e)) for e in range(e0, e1 + 1) if (e - e0) % every == 0]
        return _Scale(float(e0), float(e1), p0, p1, log=True), ticks, True
    lo, hi = _pad_constant(lo, hi)
    step = _nice_step(hi - lo, 5)
    start = math.floor(lo / step + 1e-9) * step
    end = math.ceil(hi / step - 1e-9) * step
    n = int(round((end - start) / step))
    ticks = [(start + i * step, _fmt_tick(start + i * step, step)) for i in range(n + 1)]
    return _Scale(start, end, p0, p1), ticks, False


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


class _Series:
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
        v = self.values
        return {"NaN": int(np.isnan(v).sum()), "+Inf": int(np.isposinf(v).sum()), "-Inf": int(np.isneginf(v).sum())}


class _Marker:
    def __init__(self, step: float, rule: str, level: Level, kind: str = "finding"):
        self.step, self.rule, self.level, self.kind = float(step), rule, level, kind


def _rank(level: Level) -> int:
    return SEVERITY.get(level, -1)


class _Label:
    """One label for every marker at the same step and of the same kind."""

    def __init__(self, markers: list[_Marker]):
        m0 = markers[0]
        self.step, self.kind = m0.step, m0.kind
        self.rules = list(dict.fromkeys(m.rule for m in markers))
        self.level = max((m.level for m in markers), key=_rank)
        if self.kind == "onset":
            self.text = f"{', '.join(self.rules)}: {self.level.value} from step {_fmt_step(self.step)}"
        else:
            self.text = f"{', '.join(self.rules)} (step {_fmt_step(self.step)})"


def _place_labels(
    markers: list[_Marker], sx: _Scale, left: float, right: float
) -> list[tuple[_Label, float, float, str, int]]:
    """Give each label a lane so that no two labels overlap.

    Returns ``(label, box_left, box_right, anchor, lane)``; lane 0 is nearest the plot. A
    label sits right of its line, or left of it when it would run past the right edge.
    """
    groups: dict[tuple[float, str], list[_Marker]] = {}
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


def _chart(
    series: list[_Series],
    ylabel: str,
    name: str,
    markers: list[_Marker],
    x_domain: tuple[float, float],
    width: int = 900,
    plot_h: int = 250,
) -> tuple[str, dict]:
    """An SVG chart of ``series`` against step; returns ``(svg, counts of non-finite points)``."""
    left, right_m, bottom = 74.0, 18.0, 46.0
    x0, x1 = left, width - right_m
    lo, hi = x_domain
    if not hi > lo:
        pad = max(abs(lo) * 0.05, 1.0)
        lo, hi = lo - pad, hi + pad
    # a step span that overflows float64 is scaled by half (see _Scale)
    sx = _Scale(lo, hi, x0, x1) if math.isfinite(hi - lo) else _Scale(lo / 2, hi / 2, x0, x1, k=0.5)
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
    sy, yticks, log = _y_axis([s.values for s in series], y1, y0)
    f1 = lambda v: f"{v:.1f}"  # noqa: E731 - one decimal keeps the output small and stable

    ylab = f"{ylabel} (log scale)" if log else ylabel
    out = [
        f'<svg class="chart" viewBox="0 0 {width} {f1(height)}" width="{width}" height="{f1(height)}" '
        f'role="img" aria-label="{_esc(ylab)} against step" data-series="{_esc(name)}" '
        f'data-scale="{"log" if log else "linear"}" data-plot-x0="{f1(x0)}" data-plot-x1="{f1(x1)}" '
        f'data-plot-y0="{f1(y0)}" data-plot-y1="{f1(y1)}" data-step-min="{_esc(repr(float(lo)))}" '
        f'data-step-max="{_esc(repr(float(hi)))}" data-nonfinite="{nonfinite}">',
        f"<title>{_esc(ylab)} against step</title>",
        f'<rect x="{f1(x0)}" y="{f1(y0)}" width="{f1(x1 - x0)}" height="{f1(plot_h)}" class="plotbg"/>',
    ]
    # grid and ticks
    for v, lab in yticks:
        y = sy(v)
        out.append(f'<line class="grid" x1="{f1(x0)}" x2="{f1(x1)}" y1="{f1(y)}" y2="{f1(y)}"/>')
        out.append(f'<text class="tick" x="{f1(x0 - 7)}" y="{f1(y + 4)}" text-anchor="end">{_esc(lab)}</text>')
    if log and sy.hi - sy.lo <= 8:
        for e in range(int(sy.lo), int(sy.hi)):
            for m in range(2, 10):
                y = sy(m * 10.0**e)
                out.append(f'<line class="minor" x1="{f1(x0 - 3)}" x2="{f1(x0)}" y1="{f1(y)}" y2="{f1(y)}"/>')
    try:
        xticks = _x_ticks(lo, hi)
    except (ArithmeticError, ValueError):
        xticks = [(lo, _fmt_num(lo)), (hi, _fmt_num(hi))]
    for v, lab in xticks:
        x = sx(v)
        out.append(f'<line class="grid" x1="{f1(x)}" x2="{f1(x)}" y1="{f1(y0)}" y2="{f1(y1)}"/>')
        out.append(f'<line class="axis" x1="{f1(x)}" x2="{f1(x)}" y1="{f1(y1)}" y2="{f1(y1 + 4)}"/>')
        out.append(f'<text class="tick" x="{f1(x)}" y="{f1(y1 + 17)}" text-anchor="middle">{_esc(lab)}</text>')
    out.append(f'<line class="axis" x1="{f1(x0)}" x2="{f1(x0)}" y1="{f1(y0)}" y2="{f1(y1)}"/>')
    out.append(f'<line class="axis" x1="{f1(x0)}" x2="{f1(x1)}" y1="{f1(y1)}" y2="{f1(y1)}"/>')
    out.append(f'<text class="axlabel" x="{f1((x0 + x1) / 2)}" y="{f1(y1 + 36)}" text-anchor="middle">step</text>')
    cy = (y0 + y1) / 2
    out.append(
        f'<text class="axlabel" x="16" y="{f1(cy)}" text-anchor="middle" '
        f'transform="rotate(-90 16 {f1(cy)})">{_esc(ylab)}</text>'
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
            f'<g class="marker lv-{_LEVEL_CLASS.get(m.level, "info")}" data-rule="{_esc(m.rule)}" '
            f'data-step="{_esc(_fmt_step(m.step))}" data-kind="{_esc(m.kind)}" data-level="{_esc(m.level.value)}">'
            f"<title>{_esc(_marker_title(m))}</title>"
            f'<line class="marker-line" x1="{f1(x)}" x2="{f1(x)}" y1="{f1(ly + 3)}" y2="{f1(y1)}" '
            f'stroke="{_LEVEL_COLOR.get(m.level, "#475467")}"{dash}/></g>'
        )
    for lab, a, b, anchor, lane in placed:
        ly = lane_y[(lab.step, lab.kind)]
        tx = a + 3 if anchor == "start" else b - 3
        out.append(
            f'<g class="marker-label" data-rules="{_esc(" ".join(lab.rules))}" data-step="{_esc(_fmt_step(lab.step))}">'
            f'<rect x="{f1(a)}" y="{f1(ly - 11)}" width="{f1(b - a)}" height="14" rx="2"/>'
            f'<text x="{f1(tx)}" y="{f1(ly)}" text-anchor="{anchor}" fill="{_LEVEL_COLOR.get(lab.level, "#475467")}">'
            f"{_esc(lab.text)}</text></g>"
        )

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
        out.append(f'<text class="nflabel" x="{f1(x0 - 10)}" y="{f1(by + 4)}" text-anchor="end">{_esc(kinds)}</text>')
        for s in series:
            color = _NONFINITE_COLOR if len(series) == 1 else s.color
            xs = [sx(st) for st, v in zip(s.steps.tolist(), s.values.tolist()) if not math.isfinite(v)]
            gap = min((b - a for a, b in zip(xs, xs[1:]) if b > a), default=10.0)
            h = max(1.5, min(3.5, gap * 0.4))  # half-size of a mark: dense marks stay apart
            for st, v in zip(s.steps.tolist(), s.values.tolist()):
                if math.isfinite(v):
                    continue
                x = sx(st)
                kind = _fmt_num(v)
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
                    f'<g class="nonfinite" data-step="{_esc(_fmt_step(st))}" data-value="{kind}">'
                    f"<title>{_esc(tip)}step {_esc(_fmt_step(st))}: {kind}</title>{shape}</g>"
                )
    out.append("</svg>")
    return "".join(out), counts


def _nonfinite_note(counts: dict) -> str:
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
        f'<span class="nfnote">{n} non-finite {word} ({_esc(parts)}): not on the scale, '
        f"marked along the top edge ({_esc(', '.join(marks))}).</span>"
    )


def _marker_title(m: _Marker) -> str:
    if m.kind == "onset":
        return f"{m.rule}: {m.level.value} from step {_fmt_step(m.step)}"
    return f"{m.rule}, step {_fmt_step(m.step)}: {m.level.value}"


def _onset(f) -> float | None:
    """The finite ``onset_step`` a finding carries, else ``None``."""
    onset = f.data.get("onset_step") if isinstance(f.data, dict) else None
    if onset is None or isinstance(onset, bool) or not isinstance(onset, (int, float, np.number)):
        return None
    onset = float(onset)
    return onset if math.isfinite(onset) else None


def _markers(r: Report) -> list[_Marker]:
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
            out.append(_Marker(step, f.id, f.level, kind))
    return out


def _chart_names(charts: dict) -> list[str]:
    known = [n for n in _CHART_ORDER if n in charts]
    return known + sorted(n for n in charts if n not in _CHART_ORDER)


def _domain(steps: list[np.ndarray], extra: list[float]) -> tuple[float, float] | None:
    vals = [float(a.min()) for a in steps if a.size] + [float(a.max()) for a in steps if a.size] + extra
    vals = [v for v in vals if math.isfinite(v)]
    if not vals:
        return None
    return min(vals), max(vals)


def _report_charts(r: Report) -> str:
    charts = r.charts or {}
    names = [n for n in _chart_names(charts) if len(np.asarray(charts[n].get("values", ()))) > 0]
    if not names:
        return (
            '<p class="muted">No chartable series (loss, eval loss, learning rate, gradient norm) in this report.</p>'
        )
    series = {n: _Series(charts[n]["steps"], charts[n]["values"]) for n in names}
    markers = _markers(r)
    dom = _domain([s.steps for s in series.values()], [m.step for m in markers])
    if dom is None:
        return '<p class="muted">No chartable series: no point has a finite step.</p>'
    out = ['<div class="charts">']
    for i, n in enumerate(names):
        s = series[n]
        label = _CHART_LABEL.get(n, str(n))
        svg, counts = _chart([s], label, n, markers, dom, width=900 if i == 0 else 500, plot_h=260 if i == 0 else 200)
        key = charts[n].get("key", n)
        fin = int(np.isfinite(s.values).sum())
        cap = [
            f'<b>{_esc(label)}</b> <span class="muted">(raw key <code>{_esc(key)}</code>, '
            f"{len(s.values)} points charted, {fin} finite)</span>"
        ]
        note = _nonfinite_note(counts)
        if note:
            cap.append(note)
        if s.no_step:
            cap.append(f'<span class="nfnote">{s.no_step} point(s) without a finite step are not charted.</span>')
        cls = "chart-fig wide" if i == 0 else "chart-fig"
        out.append(
            f'<figure class="{cls}" data-chart="{_esc(n)}">{svg}<figcaption>{" ".join(cap)}</figcaption></figure>'
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
            color, dash, width = _BASELINE_COLOR, "", 2.4
        else:
            color = _PALETTE[(i - 1) % len(_PALETTE)]
            dash = _DASHES[((i - 1) // len(_PALETTE)) % len(_DASHES)]
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
            series.append(_Series(loss["steps"], loss["values"], color, dash, width, label=f"{role}: {name}"))
        else:
            extra = ' <span class="muted">(no loss series: not drawn)</span>'
        legend.append(
            f'<li class="legend-item" data-run="{_esc(name)}">{swatch} <span class="role">{_esc(role)}</span> '
            f'<a href="#{ids[i]}"><code>{_esc(name)}</code></a> {_badge(r.verdict)}{extra}</li>'
        )
    out = ['<section class="compare" id="compare"><h2>Loss of every run</h2>']
    dom = _domain([s.steps for s in series], [])
    if series and dom is not None:
        svg, counts = _chart(series, "loss", "compare-loss", [], dom, width=900, plot_h=300)
        note = _nonfinite_note(counts)
        if note:
            per_run = "; ".join(
                f"{s.label.split(':')[0]}: {sum(s.counts.values())}" for s in series if sum(s.counts.values())
            )
            note = note.replace("marked along", "marked in each run’s colour along").replace(
                "</span>", f" By run: {_esc(per_run)}.</span>"
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
        where.append(f"step {_fmt_step(f.step)}")
    if f.line is not None:
        where.append(location_words(r, f.line))
    where_html = f'<span class="where">{_esc(" · ".join(where))}</span>' if where else ""
    parts = [
        f'<li class="finding lv-{_LEVEL_CLASS.get(f.level, "info")}" data-rule="{_esc(f.id)}">',
        f'<div class="fhead">{_badge(f.level)} <code class="rule">{_esc(f.id)}</code> '
        f'<span class="message">{_esc(f.message)}</span> {where_html}</div>',
    ]
    if f.evidence:
        parts.append(f'<p class="evidence">{_esc(f.evidence)}</p>')
    if f.hint:
        parts.append(f'<p class="hint">{_esc(f.hint)}</p>')
    if f.source and f.source != "single_run":
        parts.append(f'<p class="muted small">source: {_esc(f.source)}</p>')
    parts.append("</li>")
    return "".join(parts)


def _report_section(r: Report, anchor: str, n: int) -> str:
    v = r.verdict
    out = [
        f'<section class="run lv-{_LEVEL_CLASS[v]}" id="{anchor}" data-verdict="{_esc(v.value)}">',
        f'<h2><span class="runno">{n}</span> {_badge(v)} <code class="file">{_esc(run_name(r))}</code></h2>',
    ]
    if r.error is not None:
        out.append(f'<p class="error"><b>could not read:</b> {_esc(r.error)}</p>')
    facts = [("format", _esc(r.format or "unknown")), ("records", _esc(r.records))]
    if r.step_range is not None:
        facts.append(("steps", f"{_esc(_fmt_step(r.step_range[0]))} – {_esc(_fmt_step(r.step_range[1]))}"))
    out.append('<dl class="facts">' + "".join(f"<dt>{k}</dt><dd>{val}</dd>" for k, val in facts) + "</dl>")
    if r.summary:
        out.append(f'<p class="summary lv-{_LEVEL_CLASS[v]}">{_esc(r.summary)}</p>')
    for s in r.snapshots:
        out.append(f'<p class="muted small">folded snapshot: <code>{_esc(s)}</code></p>')

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
            + " ".join(f'<code class="chip">{_esc(c)}</code>' for c in r.ran)
            + "</p>"
        )
    else:
        out.append('<p class="muted">No check ran.</p>')
    if r.skipped:
        rows = "".join(
            f'<tr data-check="{_esc(k)}"><td><code>{_esc(k)}</code></td><td>{_esc(s.reason)}</td>'
            f"<td>{_esc(s.detail)}</td></tr>"
            for k, s in r.skipped.items()
        )
        out.append(
            f'<table class="skipped"><caption>Skipped ({len(r.skipped)}): not judged, so not passed'
            f"</caption><thead><tr><th>check</th><th>reason</th><th>detail</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
        )

    if r.notes:
        out.append('<h3>Notes</h3><ul class="notes">' + "".join(f"<li>{_esc(n_)}</li>" for n_ in r.notes) + "</ul>")
    if r.mapping:
        rows = []
        for k, m in r.mapping.items():
            if isinstance(m, dict):
                src, how, ign = m.get("source", ""), m.get("how", ""), m.get("ignored") or []
            else:
                src, how, ign = m, "", []
            rows.append(
                f"<tr><td>{_esc(k)}</td><td><code>{_esc(_jsonish(src))}</code></td><td>{_esc(_jsonish(how))}</td>"
                f"<td>{_esc(', '.join(_jsonish(x) for x in ign))}</td></tr>"
            )
        out.append(
            '<h3>Metrics read</h3><table class="mapping"><thead><tr><th>metric</th><th>raw key</th>'
            f"<th>how</th><th>ignored candidates</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )
    if r.meta:
        rows = "".join(f"<tr><td>{_esc(k)}</td><td>{_esc(_jsonish(val))}</td></tr>" for k, val in r.meta.items())
        out.append(f'<h3>Declared in the log</h3><table class="meta"><tbody>{rows}</tbody></table>')
    out.append('<p class="top"><a href="#top">back to top</a></p></section>')
    return "".join(out)


def _summary_table(reports: list[Report], ids: list[str]) -> str:
    rows = []
    for i, r in enumerate(reports):
        flagged = list(dict.fromkeys(f.id for f in r.findings if f.level in (Level.FAIL, Level.WARN)))
        what = ", ".join(flagged) if flagged else ("could not read: " + r.error if r.error else "")
        rows.append(
            f'<tr class="lv-{_LEVEL_CLASS[r.verdict]}"><td class="num">{i + 1}</td><td>{_badge(r.verdict)}</td>'
            f'<td><a href="#{ids[i]}"><code>{_esc(run_name(r))}</code></a></td><td>{_esc(r.format or "-")}</td>'
            f'<td class="num">{_esc(r.records)}</td><td>{_esc(what)}</td></tr>'
        )
    return (
        '<table class="summary-table"><thead><tr><th>#</th><th>verdict</th><th>run</th><th>format</th>'
        f"<th>records</th><th>FAIL / WARN</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


_CSS = """
:root{color-scheme:light}
*{box-sizing:border-box}
body{margin:0;background:#f4f5f7;color:#1d2433;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"DejaVu Sans",sans-serif}
main{max-width:1120px;margin:0 auto;padding:20px 24px 40px}
code,.chip,.rule,.mono{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,"DejaVu Sans Mono","Liberation Mono",monospace;font-size:.9em}
h1{font-size:1.5rem;margin:0 0 4px}
h2{font-size:1.15rem;margin:0 0 10px;display:flex;align-items:center;gap:10px;flex-wrap:wrap}
h3{font-size:.95rem;margin:20px 0 8px;text-transform:uppercase;letter-spacing:.04em;color:#475467}
header.page{background:#fff;border:1px solid #d8dce3;border-radius:8px;padding:16px 20px;margin-bottom:18px;display:flex;gap:18px;align-items:center;flex-wrap:wrap}
.overall{display:flex;flex-direction:column;gap:2px}
.counts{color:#475467}
section.run,section.compare,section.overview{background:#fff;border:1px solid #d8dce3;border-radius:8px;padding:16px 20px;margin-bottom:18px}
section.run{border-left:6px solid #d8dce3}
section.run.lv-fail{border-left-color:#b42318}section.run.lv-warn{border-left-color:#b54708}
section.run.lv-pass{border-left-color:#067647}section.run.lv-nc{border-left-color:#6941c6}
.runno{color:#98a2b3;font-weight:600}
.file{word-break:break-all}
.badge{display:inline-block;padding:1px 8px;border-radius:4px;font-weight:700;font-size:.8rem;letter-spacing:.03em;border:1px solid;white-space:nowrap;font-family:ui-monospace,"DejaVu Sans Mono",monospace}
.badge.big{font-size:1.3rem;padding:4px 14px}
.badge.lv-fail{color:#fff;background:#b42318;border-color:#b42318}
.badge.lv-warn{color:#fff;background:#b54708;border-color:#b54708}
.badge.lv-pass{color:#fff;background:#067647;border-color:#067647}
.badge.lv-nc{color:#fff;background:#6941c6;border-color:#6941c6}
.badge.lv-info{color:#344054;background:#f2f4f7;border-color:#d0d5dd}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0 0 10px}
dl.facts dt{color:#667085}dl.facts dd{margin:0;word-break:break-all}
.summary{margin:8px 0;padding:10px 12px;border-radius:6px;background:#f2f4f7;font-weight:600}
.summary.lv-fail{background:#fef3f2;color:#7a271a}.summary.lv-warn{background:#fffaeb;color:#7a2e0e}
.error{padding:10px 12px;border-radius:6px;background:#f4f3ff;color:#3e1c96;border:1px solid #d9d6fe}
ol.findings{list-style:none;margin:0;padding:0}
.finding{border:1px solid #e4e7ec;border-left:4px solid #98a2b3;border-radius:6px;padding:8px 12px;margin:0 0 8px}
.finding.lv-fail{border-left-color:#b42318}.finding.lv-warn{border-left-color:#b54708}
.finding.lv-pass{border-left-color:#067647}.finding.lv-nc{border-left-color:#6941c6}
.fhead{display:flex;gap:8px;align-items:baseline;flex-wrap:wrap}
.rule{font-weight:700}
.message{font-weight:600}
.where{margin-left:auto;color:#475467;font-size:.85rem;white-space:nowrap;font-family:ui-monospace,"DejaVu Sans Mono",monospace}
.evidence{margin:4px 0 0}
.hint{margin:4px 0 0;color:#475467;font-size:.9rem}
.muted{color:#667085}.small{font-size:.85rem}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(440px,1fr));gap:14px}
figure.chart-fig{margin:0;border:1px solid #e4e7ec;border-radius:6px;padding:8px 8px 6px;background:#fff}
figure.chart-fig.wide{grid-column:1/-1}
figure.chart-fig svg.chart{display:block;width:100%;height:auto}
svg.swatch{flex:none}
figcaption{font-size:.88rem;padding:4px 4px 0;display:flex;flex-direction:column;gap:2px}
.nfnote{color:#9e1f63;font-weight:600}
svg.chart{font-family:system-ui,"DejaVu Sans",Arial,sans-serif}
svg.chart .plotbg{fill:#fcfcfd;stroke:none}
svg.chart .grid{stroke:#e4e7ec;stroke-width:1}
svg.chart .minor{stroke:#98a2b3;stroke-width:1}
svg.chart .axis{stroke:#667085;stroke-width:1}
svg.chart .tick{font-size:12px;fill:#344054}
svg.chart .axlabel{font-size:13px;fill:#1d2433;font-weight:600}
svg.chart .series{fill:none;stroke-linejoin:round;stroke-linecap:round}
svg.chart .marker-line{stroke-width:1.6}
svg.chart .marker-label rect{fill:#fff;fill-opacity:.9}
svg.chart .marker-label text{font-size:11.5px;font-weight:700;font-family:ui-monospace,"DejaVu Sans Mono","Liberation Mono",monospace}
svg.chart .nfband{fill:#fdf2fa;stroke:#fcceee;stroke-width:1}
svg.chart .nflabel{font-size:11px;fill:#9e1f63;font-weight:700}
svg.chart .empty{font-size:13px;fill:#9e1f63}
.ran{line-height:2}
.chip{display:inline-block;background:#f2f4f7;border:1px solid #e4e7ec;border-radius:4px;padding:0 5px;margin:0 2px;line-height:1.6}
table{border-collapse:collapse;width:100%;font-size:.9rem;margin:4px 0 8px}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #e4e7ec;vertical-align:top}
th{color:#475467;font-weight:600;background:#f9fafb}
td.num{text-align:right;font-variant-numeric:tabular-nums}
caption{text-align:left;font-weight:600;padding:4px 0;color:#344054}
td code{word-break:break-all}
ul.legend{list-style:none;padding:0;margin:4px 0;display:flex;flex-direction:column;gap:3px}
.legend-item{display:flex;align-items:center;gap:8px;flex-wrap:wrap}
.role{font-weight:600;min-width:5em}
ul.notes{margin:0;padding-left:20px}
p.top{margin:14px 0 0;font-size:.85rem}
a{color:#1f4e8c}
footer{color:#667085;font-size:.85rem;margin-top:10px}
@media print{body{background:#fff}section.run,section.compare,section.overview,header.page{break-inside:avoid-page;border-color:#bbb}}
"""


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
        f"<title>{_esc(title)}</title>",
        f'<meta name="generator" content="trainproof {_esc(__version__)}">',
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
        what = f"<code>{_esc(run_name(ordered[0]))}</code>"
    out.append(
        f'<header class="page" data-verdict="{_esc(worst.value if worst else "")}">'
        f'<div>{verdict_html}</div><div class="overall"><h1>{_esc(title)}</h1>'
        f'<div class="counts">overall verdict <b>{_esc(worst.value if worst else "none")}</b> · {what}</div>'
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
        out.append(f"<footer><p>{_esc(CLOSING_NOTE)}</p></footer>")
    out.append(
        f"<footer><p>trainproof {_esc(__version__)}: a deterministic linter for training runs. "
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
