"""Number formatting for evidence sentences: short, deterministic, locale-free.

Numbers a person reads stay short at every magnitude. Two rules keep them so:

* a **percentage** beyond ±1000% is shown as the multiple it is: ``pct(45.0)`` is
  ``×45`` (4500%), ``pct(-4.6e7)`` is ``-×4.6e7``, never ``-4582032014%``;
* a **ratio** from 1e3 up is shown as ``×`` and a short scientific number: ``times(1.1e9)``
  is ``×1.1e9``; below 1e3 it keeps the ``14.06x`` form.

The short scientific form (:func:`sci`) has two significant digits and an exponent
without sign padding (``1.1e9``, ``2.5e-7``). NaN and ±Inf are spelled ``NaN``, ``Inf``
and ``-Inf`` everywhere.
"""

from __future__ import annotations

import math

#: A percentage beyond this share (1000%) is shown as a multiple (see :func:`pct`).
PCT_LIMIT = 10.0
#: A ratio from this size up is shown in the short scientific form (see :func:`times`).
TIMES_LIMIT = 1e3


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


def sci(x: float) -> str:
    """``x`` in the short scientific form: two significant digits, a bare exponent
    (``1.1e9``, ``-4.6e7``, ``2.5e-7``; ``0``, ``NaN``, ``Inf``, ``-Inf`` as such)."""
    x = float(x)
    if math.isnan(x) or math.isinf(x) or x == 0:
        return num(x)
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _multiple(m: float) -> str:
    """A multiple ``m >= 0``: up to 3 significant digits below :data:`TIMES_LIMIT`
    (``45``, ``12.5``), the short scientific form from it up (``1.1e9``)."""
    if math.isinf(m):
        return "Inf"
    short = f"{m:.3g}"
    # 999.7 rounds to "1e+03" at 3 digits: that is the short scientific form's case
    return sci(m) if m >= TIMES_LIMIT or "e" in short else short


def pct(x: float) -> str:
    """A share (1 = 100%) as a percentage a person can read.

    Within ±1000% it is a percentage: whole percent from 1% up (``3%``, ``-170%``,
    ``1000%``), two significant digits below (``0.18%``, ``0.001%``), the short scientific
    form below 0.001% (``1.8e-4%``). Beyond ±1000% the number of
    digits would grow with the share, so it is the multiple instead, with its sign:
    ``×45`` for 45 (4500%), ``-×4.6e7`` for -4.6e7, ``×Inf`` for +Inf. NaN is ``NaN%``.
    """
    x = float(x)
    if math.isnan(x):
        return "NaN%"
    if x == 0:
        return "0%"
    if abs(x) > PCT_LIMIT:
        return f"{'-' if x < 0 else ''}×{_multiple(abs(x))}"
    if abs(x) >= 0.01:
        return f"{100 * x:.0f}%"
    # below 0.001% the fixed form needs ever more zeros: the short scientific one has none
    return f"{100 * x:.2g}%" if abs(x) >= 1e-5 else f"{sci(100 * x)}%"


def times(x: float, digits: int = 2) -> str:
    """A ratio a person can read: ``14.06x`` below 1e3 (``digits`` decimals), and from
    1e3 up the short scientific form ``×1.1e9`` (``×Inf`` for +Inf, ``-×2.0e3`` for a
    negative ratio that large). NaN is ``NaNx``."""
    x = float(x)
    if math.isnan(x):
        return "NaNx"
    if abs(x) >= TIMES_LIMIT:
        return f"{'-' if x < 0 else ''}×{_multiple(abs(x))}"
    return f"{x:.{digits}f}x"


def signed_pct(x: float, decimals: int = 1) -> str:
    """A signed relative change: ``+12.5%``, ``-3.0%`` (``decimals`` decimals) within
    ±1000%, and beyond it the multiple with its sign, as :func:`pct` (``+×45``, ``-×4.6e7``)."""
    x = float(x)
    if math.isnan(x):
        return "NaN%"
    if abs(x) > PCT_LIMIT:
        return ("+" if x > 0 else "") + pct(x)
    return f"{100 * x:+.{decimals}f}%"
