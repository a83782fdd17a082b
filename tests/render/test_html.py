"""The HTML report: structure, charts (markers, non-finite points), escaping, no network,
determinism, the compare overlay, and a real offline Chromium screenshot."""

from __future__ import annotations

import importlib.util
import math
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from trainproof import judge
from trainproof.api import doctor
from trainproof.findings import Finding, Level, Report, Skip
from trainproof.render.html import render_html, write_html

from conftest import REPO, healthy_rows, write_hf, write_jsonl

EX = REPO / "examples"
NASTY = "<script>alert(1)</script>\"'"
CHROMIUM = "/usr/bin/chromium"


class Doc(HTMLParser):
    """Start tags with their attributes, the chart (``data-chart`` of the enclosing
    figure) each sits in, and the decoded text, from a real HTML parse."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict, str | None]] = []
        self.text: list[str] = []
        self._charts: list[tuple[int, str]] = []
        self._depth = 0
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self._depth += 1
        if tag == "figure" and "data-chart" in a:
            self._charts.append((self._depth, a["data-chart"]))
        self.tags.append((tag, a, self._charts[-1][1] if self._charts else None))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs), self._charts[-1][1] if self._charts else None))

    def handle_endtag(self, tag):
        if tag == "figure" and self._charts and self._charts[-1][0] == self._depth:
            self._charts.pop()
        self._depth -= 1

    def handle_data(self, data):
        self.text.append(data)

    def find(self, tag: str | None = None, chart: str | None = None, **attrs) -> list[dict]:
        out = []
        for t, a, c in self.tags:
            if tag is not None and t != tag:
                continue
            if chart is not None and c != chart:
                continue
            if all(a.get(k.replace("_", "-")) == v for k, v in attrs.items()):
                out.append(a)
        return out

    @property
    def all_text(self) -> str:
        return "".join(self.text)


def x_of(svg: dict, step: float) -> float:
    """The x pixel of ``step`` from the plot box and step domain a chart declares."""
    x0, x1 = float(svg["data-plot-x0"]), float(svg["data-plot-x1"])
    s0, s1 = float(svg["data-step-min"]), float(svg["data-step-max"])
    return x0 + (step - s0) / (s1 - s0) * (x1 - x0)


def marker_lines(doc: Doc, chart: str, rule: str, kind: str = "finding") -> list[tuple[dict, dict]]:
    """``(group attrs, line attrs)`` of the markers of ``rule`` in ``chart``."""
    out, group = [], None
    for t, a, c in doc.tags:
        if c != chart:
            continue
        if t == "g":
            group = a if a.get("class", "").startswith("marker ") else None
        elif t == "line" and group is not None and group.get("data-rule") == rule and group.get("data-kind") == kind:
            out.append((group, a))
    return out


@pytest.fixture(scope="module")
def diverge():
    return judge(EX / "diverge" / "metrics.jsonl")


@pytest.fixture(scope="module")
def lr_hot():
    return judge(EX / "lr_hot" / "metrics.jsonl")


# ------------------------------------------------------------------------ structure


def test_single_report_shows_verdict_findings_checks_and_charts(diverge):
    page = render_html([diverge], title="my run")
    doc = Doc(page)
    text = doc.all_text
    assert page.startswith("<!DOCTYPE html>")
    assert doc.find("header", data_verdict="FAIL")
    assert "overall verdict FAIL" in text
    assert len(doc.find("section", id="run-1")) == 1 and not doc.find("section", id="run-2")
    assert doc.find("section", data_verdict="FAIL")
    assert diverge.summary and diverge.summary in text
    for key in ("jsonl", "60", "5 – 300", str(diverge.file)):
        assert key in text
    # every finding with its level, id, message, evidence, hint, step and line
    for f in diverge.findings:
        [li] = doc.find("li", data_rule=f.id)
        assert f.level.value in li["class"].upper() or f.level is Level.NOT_CHECKED
        for part in (f.id, f.message, f.evidence, f.hint):
            assert part in text
    assert "step 55 · line 11" in text
    # the checks that ran and those skipped, with their reasons
    for check in diverge.ran:
        assert check in text
    assert diverge.skipped
    for check, skip in diverge.skipped.items():
        assert doc.find("tr", data_check=check)
        assert skip.reason in text and skip.detail in text
    # one chart per series, in a fixed order, each against step with labelled axes
    assert [a["data-chart"] for a in doc.find("figure") if "data-chart" in a] == [
        "loss",
        "eval_loss",
        "lr",
        "grad_norm",
    ]
    svgs = doc.find("svg")
    assert [s["data-series"] for s in svgs if "data-series" in s] == ["loss", "eval_loss", "lr", "grad_norm"]
    assert "step" in text and "learning rate" in text and "gradient norm" in text
    assert doc.find("svg", data_series="loss", data_scale="log")  # 0.066 .. 23.4: > 2 decades
    assert "loss (log scale)" in text
    assert doc.find("svg", data_series="eval_loss", data_scale="linear")


def test_divergence_is_marked_on_the_loss_chart_at_its_onset_not_its_best_step(diverge):
    f = next(f for f in diverge.findings if f.id == "TP-DIVERGE")
    onset = float(f.data["onset_step"])
    # placed at its best level (step 55), it failed later, where the climb became visible
    assert float(f.step) == 55.0 and onset > 55.0
    at = f"{onset:g}"
    # the report says where it went wrong; the chart marks the same step
    assert diverge.summary.startswith(f"FAIL from step {at} ")
    doc = Doc(render_html([diverge]))
    [svg] = doc.find("svg", data_series="loss")
    [(group, line)] = marker_lines(doc, "loss", "TP-DIVERGE", "onset")
    assert float(group["data-step"]) == onset and group["data-level"] == "FAIL"
    assert line["x1"] == line["x2"]
    assert abs(float(line["x1"]) - x_of(svg, onset)) < 0.06
    # the line spans the plot down to its bottom edge, dashed
    assert float(line["y2"]) == float(svg["data-plot-y1"]) and float(line["y1"]) < float(svg["data-plot-y0"])
    assert "stroke-dasharray" in line
    # the best level (step 55) is where the divergence is measured from, not where it failed
    assert marker_lines(doc, "loss", "TP-DIVERGE", "finding") == []
    assert not [g for g in doc.find("g", chart="loss", data_step="55") if "marker" in g.get("class", "")]
    labels = doc.find("g", chart="loss", data_step=at, **{"class": "marker-label"})
    assert labels and "TP-DIVERGE" in labels[0]["data-rules"]
    assert f"TP-DIVERGE: FAIL from step {at}" in doc.all_text
    assert "(step 55)" not in doc.all_text and " onset" not in doc.all_text
    # the WARN, which carries no onset, is marked at its own step, in its own colour
    [(group, warn_line)] = marker_lines(doc, "loss", "TP-GRAD-SPIKE")
    assert group["data-level"] == "WARN" and group["data-kind"] == "finding"
    assert warn_line["stroke"] != line["stroke"] and "stroke-dasharray" not in warn_line
    spike = next(f for f in diverge.findings if f.id == "TP-GRAD-SPIKE")
    assert float(group["data-step"]) == float(spike.step)
    assert f"TP-GRAD-SPIKE (step {float(spike.step):g})" in doc.all_text
    # the same markers on every chart of the run
    for chart in ("eval_loss", "lr", "grad_norm"):
        [svg] = doc.find("svg", data_series=chart)
        [(_, line)] = marker_lines(doc, chart, "TP-DIVERGE", "onset")
        assert abs(float(line["x1"]) - x_of(svg, onset)) < 0.06


def test_a_warn_with_an_onset_is_labelled_as_a_warn_from_that_step():
    rep = Report(
        file="run.jsonl",
        format="jsonl",
        records=3,
        step_range=(0.0, 20.0),
        charts={"loss": {"steps": [0.0, 10.0, 20.0], "values": [1.0, 0.8, 0.7], "key": "loss"}},
        findings=[
            Finding("TP-STEP-CLIFF", Level.WARN, "step time grew", step=20.0, data={"onset_step": 10}),
            Finding("TP-X", Level.FAIL, "no onset", step=20.0, data={"onset_step": float("nan")}),
        ],
    )
    doc = Doc(render_html([rep]))
    [(group, _)] = marker_lines(doc, "loss", "TP-STEP-CLIFF", "onset")
    assert group["data-step"] == "10" and group["data-level"] == "WARN"
    assert "TP-STEP-CLIFF: WARN from step 10" in doc.all_text
    # a non-finite onset is no onset: the finding is marked at its step
    [(group, _)] = marker_lines(doc, "loss", "TP-X", "finding")
    assert group["data-step"] == "20"


def test_nan_points_of_lr_hot_are_shown_and_counted(lr_hot):
    page = render_html([lr_hot])
    doc = Doc(page)
    values = lr_hot.charts["loss"]["values"]
    n_nan = int(np.isnan(values).sum())
    assert n_nan == 58
    [svg] = doc.find("svg", data_series="loss")
    assert svg["data-nonfinite"] == "58"
    marks = doc.find("g", chart="loss", **{"class": "nonfinite"})
    assert len(marks) == n_nan and all(m["data-value"] == "NaN" for m in marks)
    nan_steps = sorted(float(s) for s in lr_hot.charts["loss"]["steps"][np.isnan(values)])
    assert sorted(float(m["data-step"]) for m in marks) == nan_steps
    assert "58 non-finite points (58 NaN)" in doc.all_text
    # the two finite losses (2.86 then 7.5e5) span > 2 decades: a log axis
    assert svg["data-scale"] == "log" and "loss (log scale)" in doc.all_text
    # eval loss: every point is NaN; the chart says so instead of drawing nothing
    [ev] = doc.find("svg", data_series="eval_loss")
    assert ev["data-nonfinite"] == "6"
    assert "6 non-finite points (6 NaN)" in doc.all_text
    assert "every point is non-finite" in doc.all_text
    assert len(doc.find("g", chart="grad_norm", **{"class": "nonfinite"})) == 58


def test_infinities_are_marked_apart_from_nan(tmp_path):
    rows = healthy_rows(40)
    rows[20]["grad_norm"] = math.inf
    rows[21]["grad_norm"] = -math.inf
    rows[22]["grad_norm"] = math.nan
    rep = judge(write_jsonl(tmp_path / "metrics.jsonl", rows))
    doc = Doc(render_html([rep]))
    marks = doc.find("g", chart="grad_norm", **{"class": "nonfinite"})
    assert sorted(m["data-value"] for m in marks) == ["+Inf", "-Inf", "NaN"]
    assert "3 non-finite points (1 NaN, 1 +Inf, 1 -Inf)" in doc.all_text


# ------------------------------------------------------------------------ several runs


def test_doctor_summary_table_links_every_section(tmp_path):
    write_hf(tmp_path / "good" / "trainer_state.json", healthy_rows(60))
    rows = healthy_rows(60)
    for i, r in enumerate(rows[30:]):
        r["loss"] = 0.5 * 1.15**i
    write_jsonl(tmp_path / "bad" / "metrics.jsonl", rows)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "trainer_state.json").write_text("{not json", encoding="utf-8")
    reports, _ = doctor(tmp_path)
    assert len(reports) == 3
    page = render_html(reports, title="doctor")
    doc = Doc(page)
    sections = [a for t, a, _ in doc.tags if t == "section" and a.get("class", "").startswith("run")]
    assert len(sections) == len(reports)
    ids = [s["id"] for s in sections]
    assert ids == [f"run-{i}" for i in range(1, 4)]
    links = [a["href"] for a in doc.find("a") if a.get("href", "").startswith("#run-")]
    assert links == [f"#{i}" for i in ids]
    # worst first: FAIL, then the unreadable one (NOT-CHECKED), then PASS
    assert [s["data-verdict"] for s in sections] == ["FAIL", "NOT-CHECKED", "PASS"]
    assert doc.find("header", data_verdict="FAIL")
    text = doc.all_text
    assert "3 runs: 1 FAIL, 1 NOT-CHECKED, 1 PASS" in text
    broken = next(r for r in reports if r.error)
    assert f"could not read: {broken.error}" in " ".join(text.split())
    fail = next(r for r in reports if r.verdict is Level.FAIL)
    flagged = ", ".join(dict.fromkeys(f.id for f in fail.findings if f.level in (Level.FAIL, Level.WARN)))
    assert flagged in text
    # the PASS caveat closes the page
    assert "cannot tell whether the run learned the right thing" in text


@pytest.mark.slow
def test_compare_overlays_every_runs_loss_with_a_legend():
    names = ("healthy", "diverge", "lr_hot", "bad_labels")
    reports = [judge(EX / n / "metrics.jsonl") for n in names]
    doc = Doc(render_html(reports, compare=True))
    [svg] = doc.find("svg", data_series="compare-loss")
    assert svg["data-scale"] == "log"
    paths = doc.find("path", chart="compare-loss", **{"class": "series"})
    assert len(paths) == len(names) and len({p["stroke"] for p in paths}) == len(names)
    items = doc.find("li", chart="compare-loss", **{"class": "legend-item"})
    assert [i["data-run"] for i in items] == [str(r.file) for r in reports]
    assert "baseline" in doc.all_text
    # the compare order is kept (the first is the baseline), not sorted worst first
    sections = [a for t, a, _ in doc.tags if t == "section" and a.get("class", "").startswith("run")]
    assert [s["data-verdict"] for s in sections] == [r.verdict.value for r in reports]
    # lr_hot's NaN losses appear on the overlay too, in that run's colour
    marks = doc.find("g", chart="compare-loss", **{"class": "nonfinite"})
    assert len(marks) == 58
    assert "run 3: 58" in doc.all_text


def test_without_compare_there_is_no_overlay(diverge, lr_hot):
    doc = Doc(render_html([diverge, lr_hot]))
    assert not doc.find("svg", data_series="compare-loss")


def test_empty_and_chartless_reports_render():
    page = render_html([])
    assert "No report to show" in page and "NO INPUT" in page
    rep = Report(
        file="x.jsonl",
        format="jsonl",
        records=3,
        findings=[Finding("TP-NOT-CHECKED", Level.NOT_CHECKED, "no loss series")],
    )
    doc = Doc(render_html([rep]))
    assert "No chartable series" in doc.all_text and not doc.find("svg", data_series="loss")


# ------------------------------------------------------------------------ safety


def _nasty_report() -> Report:
    n = NASTY
    f = Finding(
        "TP-DIVERGE",
        Level.FAIL,
        f"message {n}",
        evidence=f"evidence {n}",
        data={"onset_step": 30.0, n: n},
        step=20.0,
        line=2,
        hint=f"hint {n}",
    )
    g = Finding(f"TP-{n}", Level.WARN, n, evidence=n, step=40.0, hint=n, source=n)
    steps = np.arange(10.0, 110.0, 10.0)
    return Report(
        file=f"runs/{n}/metrics.jsonl",
        format=n,
        records=10,
        step_range=(10.0, 100.0),
        mapping={"loss": {"source": n, "ignored": [n], "how": n}, n: {"source": n, "ignored": [], "how": "map"}},
        findings=[f, g],
        ran=[n],
        skipped={n: Skip(n, n)},
        notes=[f"note {n}"],
        meta={n: n, "k": [n]},
        snapshots=[n],
        summary=f"summary {n}",
        charts={
            "loss": {"key": n, "steps": steps, "values": np.linspace(2, 1, 10)},
            n: {"key": n, "steps": steps, "values": np.r_[np.nan, np.linspace(2, 1, 9)]},
        },
    )


def _assert_inert(page: str) -> Doc:
    assert "<script" not in page.lower()
    doc = Doc(page)
    assert not [t for t, _, _ in doc.tags if t in ("script", "iframe", "object", "embed", "base", "form")]
    for t, attrs, _ in doc.tags:
        for k, v in attrs.items():
            assert not k.startswith("on"), (t, k)
            if k in ("href", "src", "xlink:href", "action", "srcset"):
                assert (v or "").startswith("#"), (t, k, v)
    return doc


def test_everything_from_a_log_is_escaped(tmp_path):
    # a real log whose metric name and path carry markup (the path through a directory,
    # since a file name cannot hold "/")
    d = tmp_path / "<script>alert(1)<"
    path = d / "script>\"'.jsonl"
    rows = [{"step": 10 * (i + 1), NASTY: 2.0 * math.exp(-i / 8) + 0.1, "grad_norm": 1.0} for i in range(40)]
    write_jsonl(path, rows)
    real = judge(path, mapping={"loss": NASTY})
    assert NASTY in real.file and real.charts["loss"]["key"] == NASTY
    broken = d / "trainer_state.json"
    broken.write_text("{", encoding="utf-8")
    unreadable = judge(broken)
    assert unreadable.error
    page = render_html([real, _nasty_report(), unreadable], title=f"title {NASTY}", compare=True)
    doc = _assert_inert(page)
    # ... and shown as text, not dropped
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#x27;" in page
    text = doc.all_text
    assert text.count(NASTY) > 20
    assert f"title {NASTY}" in text and f"summary {NASTY}" in text and f"note {NASTY}" in text
    assert real.file in text
    # inside SVG <text> too: the chart of a series named with markup, the marker labels
    assert doc.find("svg", data_series=NASTY)
    assert f"TP-{NASTY} (step 40)" in text
    for a in doc.find("g", data_rule=f"TP-{NASTY}"):
        assert a["data-rule"] == f"TP-{NASTY}"


# ------------------------------------------------------------------------ self-contained, deterministic

_REMOTE = [
    re.compile(r"https?:", re.I),
    re.compile(r"""(?:src|href|action|srcset|poster|data)\s*=\s*["']?\s*//""", re.I),
    re.compile(r"@import", re.I),
    re.compile(r"url\(", re.I),
    re.compile(r"<(?:link|img|iframe|object|embed|script|base)\b", re.I),
    re.compile(r"""(?:src|href|action)\s*=\s*["']?\s*(?:ftp|file|data|javascript):""", re.I),
]


@pytest.mark.slow
def test_the_page_references_nothing_outside_itself(diverge, lr_hot, core_examples):
    reports, _ = doctor(core_examples)
    for page in (
        render_html([diverge]),
        render_html([lr_hot]),
        render_html(reports, title="doctor"),
        render_html([diverge, lr_hot], compare=True),
    ):
        for rx in _REMOTE:
            assert not rx.search(page), rx.pattern
        doc = _assert_inert(page)
        hrefs = [a["href"] for a in doc.find("a")]
        assert hrefs and all(h.startswith("#") for h in hrefs)
        targets = {a["id"] for t, a, _ in doc.tags if "id" in a}
        assert {h[1:] for h in hrefs} <= targets


def test_same_reports_give_the_same_html(tmp_path):
    a = render_html([judge(EX / "diverge" / "metrics.jsonl"), judge(EX / "lr_hot" / "metrics.jsonl")], compare=True)
    b = render_html([judge(EX / "diverge" / "metrics.jsonl"), judge(EX / "lr_hot" / "metrics.jsonl")], compare=True)
    assert a == b
    write_html([judge(EX / "diverge" / "metrics.jsonl")], tmp_path / "r.html", title="t")
    assert (tmp_path / "r.html").read_bytes() == render_html(
        [judge(EX / "diverge" / "metrics.jsonl")], title="t"
    ).encode("utf-8")
    assert b"\r\n" not in (tmp_path / "r.html").read_bytes()


@pytest.mark.parametrize("module", ["html.py", "svgchart.py", "_markup.py"])
def test_the_renderer_knows_only_a_report(module):
    src = (REPO / "src" / "trainproof" / "render" / module).read_text(encoding="utf-8")
    assert "from ..rules" not in src and "from ..formats" not in src and "import rules" not in src
    assert "datetime" not in src and "time.time" not in src and "random" not in src


def test_the_stylesheet_is_package_data_inlined_whole_and_pinned_by_the_csp(diverge):
    """render/report.css ships with the package, is the page's whole <style>, and is what
    the Content-Security-Policy's hash allows (a browser drops a style whose hash differs)."""
    import base64
    import hashlib

    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    conf = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "render/*.css" in conf["tool"]["setuptools"]["package-data"]["trainproof"]
    css = (REPO / "src" / "trainproof" / "render" / "report.css").read_text(encoding="utf-8")
    assert "svg.chart .marker-line" in css and "section.run" in css
    page = render_html([diverge])
    (style,) = re.findall(r"<style>(.*?)</style>", page, re.S)
    assert style == "\n" + css
    digest = base64.b64encode(hashlib.sha256(style.encode("utf-8")).digest()).decode("ascii")
    assert f"style-src 'sha256-{digest}'" in page


def test_the_committed_evidence_page_is_current():
    committed = REPO / "evidence" / "diverge_report.html"
    if not committed.exists():
        pytest.skip("evidence/diverge_report.html is not generated yet")
    import os

    cwd = os.getcwd()
    try:
        os.chdir(REPO)
        page = render_html([judge("examples/diverge/metrics.jsonl")], title="trainproof report: examples/diverge")
    finally:
        os.chdir(cwd)
    assert committed.read_text(encoding="utf-8") == page, "rerun evidence/html_screenshot.py"


# ------------------------------------------------------------------------ a real browser, offline


def _evidence_module():
    spec = importlib.util.spec_from_file_location("html_screenshot", REPO / "evidence" / "html_screenshot.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
@pytest.mark.skipif(
    not Path(CHROMIUM).exists() or shutil.which(CHROMIUM) is None, reason="no Chromium at /usr/bin/chromium"
)
def test_chromium_renders_a_readable_page_offline(tmp_path, diverge):
    shot = _evidence_module()
    html_path = tmp_path / "report.html"
    png = tmp_path / "report.png"
    write_html([diverge], html_path)
    proc = shot.chromium_screenshot(html_path, png, CHROMIUM, size=(1280, 2000), timeout=180)
    assert png.exists(), (proc.returncode, proc.stderr[-2000:])
    assert png.stat().st_size > 30_000
    st = shot.png_stats(png)
    assert (st["width"], st["height"]) == (1280, 2000)
    # not a blank page: much of it is not background, with text, lines and colours
    assert st["not_background"] > 0.10, st
    assert st["colours"] > 200, st
    # the FAIL colour (badges, the divergence marker) made it to the screen
    assert st["red"] > 0.002, st


def test_png_reader_decodes_every_filter_type(tmp_path):
    """The standard-library PNG reader the screenshot test relies on, on a PNG written
    here with each of the five row filters."""
    import struct
    import zlib

    shot = _evidence_module()
    w, h, bpp = 7, 5, 3
    pixels = [bytes((x * 30 + y * 7) % 256 for x in range(w * bpp)) for y in range(h)]

    def paeth(a, b, c):
        p = a + b - c
        pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
        return a if pa <= pb and pa <= pc else (b if pb <= pc else c)

    raw = bytearray()
    prev = bytes(w * bpp)
    for y, row in enumerate(pixels):
        ft = y % 5
        raw.append(ft)
        for i, v in enumerate(row):
            left = row[i - bpp] if i >= bpp else 0
            up, ul = prev[i], (prev[i - bpp] if i >= bpp else 0)
            pred = (0, left, up, (left + up) >> 1, paeth(left, up, ul))[ft]
            raw.append((v - pred) & 255)
        prev = row

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(bytes(raw)))
        + chunk(b"IEND", b"")
    )
    (tmp_path / "t.png").write_bytes(png)
    assert shot._read_png(tmp_path / "t.png") == (w, h, bpp, pixels)


@pytest.mark.parametrize(
    "values",
    [
        [1e308, -1e308, 1.7e308, -1.7e308],
        [1.7e308] * 5,
        [5e-324] * 5,
        [5e-324, 1e-320, 2e-320],
        [0.0] * 5,
        [-3.0, -3.0, math.nan],
        [1e-30, 1e30, math.inf, -math.inf],
        [0.1, 0.1 + 1e-16, 0.1 + 2e-16],
        [math.nan],
    ],
)
@pytest.mark.parametrize("steps", ["index", "same", "huge"])
def test_extreme_values_still_draw(values, steps):
    steps = {
        "index": np.arange(1.0, len(values) + 1.0),
        "same": np.full(len(values), 1e300),
        "huge": np.array([-1.7e308 * (1 - 2 * i / max(len(values) - 1, 1)) for i in range(len(values))]),
    }[steps]
    assert np.isfinite(steps).all()
    rep = Report(
        file="x.jsonl",
        format="jsonl",
        records=len(values),
        step_range=(float(steps[0]), float(steps[-1])),
        findings=[Finding("TP-X", Level.WARN, "m", step=float(steps[0]))],
        charts={"loss": {"key": "loss", "steps": steps, "values": np.array(values, dtype=float)}},
    )
    doc = _assert_inert(render_html([rep]))
    [svg] = doc.find("svg", data_series="loss")
    assert svg["data-nonfinite"] == str(sum(not math.isfinite(v) for v in values))
    for t, a, c in doc.tags:
        if c == "loss":
            for k in ("x", "y", "x1", "x2", "y1", "y2", "cx", "cy"):
                if k in a:
                    assert math.isfinite(float(a[k])), (t, a)
            if "d" in a:
                assert "nan" not in a["d"] and "inf" not in a["d"], a["d"]
