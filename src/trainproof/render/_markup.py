"""Markup helpers shared by the HTML report (:mod:`.html`) and its SVG charts
(:mod:`.svgchart`): escaping, the short number formats both print, and the CSS class of
each level."""

from __future__ import annotations

import html as _html
import math

from ..findings import Level

#: The CSS class of each level: ``lv-fail``, ``lv-warn``, ... (the stylesheet colours them).
LEVEL_CLASS = {Level.FAIL: "fail", Level.WARN: "warn", Level.PASS: "pass", Level.NOT_CHECKED: "nc", Level.INFO: "info"}

#: Control characters other than tab and line ends (C0, DEL, C1) shown as their escape:
#: HTML forbids them, and a file name holding ESC must show what it holds.
_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0x7F, 0xA0)]}


def esc(x) -> str:
    """``str(x)`` safe in HTML text, in an attribute value (quotes escaped) and in SVG
    ``<text>``; control characters shown as ``\\xNN``."""
    return _html.escape(str(x).translate(_CONTROLS), quote=True)


def fmt_step(x) -> str:
    """A step as it is printed: ``105``, ``12.5``, ``inf``/``nan`` for a non-finite one."""
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    return str(int(x)) if x.is_integer() else f"{x:.6g}"


def pretty_exp(s: str) -> str:
    """``1.5e-05`` -> ``1.5e-5``, ``1e+06`` -> ``1e6``."""
    if "e" not in s:
        return s
    mant, exp = s.split("e")
    sign = "-" if exp.startswith("-") else ""
    return f"{mant}e{sign}{exp.lstrip('+-').lstrip('0') or '0'}"


def fmt_num(v: float, sig: int = 4) -> str:
    """``v`` to ``sig`` significant digits (short exponent), or ``NaN``/``+Inf``/``-Inf``."""
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return pretty_exp(f"{v:.{sig}g}")
