"""Numbers a person reads stay short at every magnitude (issue 16 §4): percentages beyond
±1000% read as multiples, ratios from 1e3 up as ``×1.1e9``, NaN and ±Inf by name."""

from __future__ import annotations

import math
import re
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainproof.rules._fmt import PCT_LIMIT, TIMES_LIMIT, pct, sci, signed_pct, times

INF, NAN = float("inf"), float("nan")


@pytest.mark.parametrize(
    "x,text",
    [
        (0.0, "0%"),
        (-0.0, "0%"),
        (1.8e-6, "1.8e-4%"),
        (-8.1e-108, "-8.1e-106%"),
        (1e-5, "0.001%"),
        (0.0018, "0.18%"),
        (0.01, "1%"),
        (0.5, "50%"),
        (1.0, "100%"),
        (-0.014, "-1%"),
        (-1.7, "-170%"),
        (10.0, "1000%"),
        (-10.0, "-1000%"),
        (10.004, "×10"),
        (45.0, "×45"),
        (12.5, "×12.5"),
        (999.7, "×1.0e3"),
        (-45.82, "-×45.8"),
        (-4.582032014e7, "-×4.6e7"),
        (2.1025239733897475e18, "×2.1e18"),
        (INF, "×Inf"),
        (-INF, "-×Inf"),
        (NAN, "NaN%"),
    ],
)
def test_pct(x, text):
    assert pct(x) == text


@pytest.mark.parametrize(
    "x,text",
    [
        (0.0, "0.00x"),
        (0.5, "0.50x"),
        (2.35, "2.35x"),
        (14.06, "14.06x"),
        (999.2, "999.20x"),
        (1e3, "×1.0e3"),
        (1.003e5, "×1.0e5"),
        (1.1e9, "×1.1e9"),
        (3.593e12, "×3.6e12"),
        (6.907e17, "×6.9e17"),
        (INF, "×Inf"),
        (NAN, "NaNx"),
        (-5000.0, "-×5.0e3"),
    ],
)
def test_times(x, text):
    assert times(x) == text


def test_times_keeps_the_callers_decimals_below_the_limit():
    assert times(5.34, 1) == "5.3x" and times(5.34e4, 1) == "×5.3e4"


@pytest.mark.parametrize(
    "x,text",
    [
        (1.1e9, "1.1e9"),
        (-4.6e7, "-4.6e7"),
        (2.5e-7, "2.5e-7"),
        (9.96e3, "1.0e4"),
        (0.0, "0"),
        (INF, "Inf"),
        (-INF, "-Inf"),
        (NAN, "NaN"),
    ],
)
def test_sci(x, text):
    assert sci(x) == text


# At most "-8.1e-106%" (10 characters), whatever the magnitude.
_SHORT = re.compile(r"^(-?\d{1,4}%|-?0\.\d+%|-?\d\.\de-\d{1,3}%|NaN%|-?×(\d{1,3}(\.\d{1,2})?|\d\.\de\d{1,3}|Inf))$")


def _close(text: str, x: float) -> bool:
    """The multiple ``text`` shows is ``|x|`` to two significant digits (compared in
    log10, since the rounded mantissa of 1.79e308 is beyond the largest float)."""
    shown = Decimal(text.lstrip("-").lstrip("×"))
    return abs(float(shown.log10()) - math.log10(abs(x))) < math.log10(1.06)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_pct_is_short_at_every_magnitude(x):
    text = pct(x)
    assert _SHORT.match(text), text
    assert len(text) <= 10, text
    if math.isfinite(x) and abs(x) > PCT_LIMIT:
        assert _close(text, x), text
        assert text.startswith("-") == (x < 0)


@given(st.floats(min_value=-1e308, max_value=1e308) | st.sampled_from([INF, NAN]))
def test_times_is_short_at_every_magnitude(x):
    text = times(x)
    assert len(text) <= 10, text
    if math.isfinite(x) and abs(x) >= TIMES_LIMIT:
        assert re.fullmatch(r"-?×\d\.\de\d{1,3}", text), text
        assert _close(text, x), text


def test_every_magnitude_from_a_millionth_to_1e20_reads_short():
    for x in np.concatenate([np.logspace(-6, 20, 105), -np.logspace(-6, 20, 105)]):
        assert len(pct(x)) <= 8 and "e+" not in pct(x) and "0000" not in pct(x), (x, pct(x))
        if x > 0:
            assert len(times(x)) <= 9 and "e+" not in times(x), (x, times(x))


@pytest.mark.parametrize(
    "x,text",
    [
        (0.125, "+12.5%"),
        (-0.03, "-3.0%"),
        (0.0, "+0.0%"),
        (10.0, "+1000.0%"),
        (45.0, "+×45"),
        (-4.6e7, "-×4.6e7"),
        (INF, "+×Inf"),
        (NAN, "NaN%"),
    ],
)
def test_signed_pct(x, text):
    assert signed_pct(x) == text
