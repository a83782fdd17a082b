"""Number formatting for evidence sentences: short, deterministic, locale-free."""
from __future__ import annotations

import math


def num(x: float) -> str:
    """A number with 4 significant digits (``1.234``, ``2.5e-05``, ``NaN``, ``Inf``)."""
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Inf" if x > 0 else "-Inf"
    if x == 0:
        return "0"
    return f"{x:.4g}"


def step(x: float) -> str:
    """A step as an integer when it is one."""
    x = float(x)
    return str(int(x)) if x.is_integer() else f"{x:.4g}"


def pct(x: float) -> str:
    """A share in [0, 1] as a percentage."""
    return f"{100 * float(x):.0f}%" if abs(x) >= 0.01 or x == 0 else f"{100 * float(x):.2g}%"
