"""The numpy functions of ``trainproof._arrays`` give numpy's own results, bit for bit,
and none of them imports ``numpy.ma``."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

from trainproof._arrays import intersect1d, isin, median, quantile, setdiff1d, unique

# Values whose order, ties and signs make a median or quantile go wrong first: signed
# zeros, infinities, subnormal-sized and repeated values.
_POOL = np.array([0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, 1e-300, 3.0, 0.1, 7.0])


def _arrays(count: int = 1000):
    rng = np.random.default_rng(0)
    yield from (np.array([]), np.array([0.0, -0.0]), np.array([-0.0, 0.0, 0.0]), np.array([np.nan, np.nan]))
    for i in range(count):
        n = int(rng.integers(1, 70))
        kind = i % 4
        if kind == 0:
            yield rng.choice(_POOL, n)
        elif kind == 1:
            yield rng.standard_normal(n)
        elif kind == 2:
            yield np.round(rng.standard_normal(n), 1)  # many ties
        else:
            yield rng.choice(np.append(_POOL, np.nan), n)


def _same(expected, got) -> bool:
    if type(expected) is not type(got):
        return False
    if np.isscalar(expected) and np.isnan(expected):
        return bool(np.isnan(got))  # a NaN's payload is whichever NaN the partition left last
    return np.asarray(expected).tobytes() == np.asarray(got).tobytes()


def test_unique_is_np_unique_bit_for_bit():
    rng = np.random.default_rng(1)
    extra = [
        rng.integers(-5, 5, 40),
        rng.integers(0, 3, 30).astype(np.int32),
        np.array([True, False, True]),
        [1, 2, 2.5],
    ]
    for a in [*_arrays(200), *extra, np.array([[1, 2], [2, 3]])]:
        expected, got = np.unique(a), unique(a)
        assert expected.dtype == got.dtype and expected.tobytes() == got.tobytes(), a


def test_set_operations_are_numpy_bit_for_bit():
    rng = np.random.default_rng(2)
    for i in range(150):
        a = rng.choice(_POOL if i % 2 else np.append(_POOL, np.nan), int(rng.integers(0, 20)))
        b = rng.choice(_POOL, int(rng.integers(0, 20)))
        if i % 3 == 0:
            a, b = rng.integers(-4, 4, a.size), rng.integers(-4, 4, b.size)
        assert np.array_equal(np.isin(a, b), isin(a, b)), (a, b)
        for ours, theirs in ((intersect1d, np.intersect1d), (setdiff1d, np.setdiff1d)):
            expected, got = theirs(a, b), ours(a, b)
            assert expected.dtype == got.dtype and expected.tobytes() == got.tobytes(), (a, b)


@pytest.mark.slow
def test_median_and_quantile_are_numpy_bit_for_bit():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the median of nothing
        for a in _arrays():
            assert _same(np.median(a), median(a)), a
            if a.size:
                for q in (0.0, 0.1, 0.25, 0.5, 0.9, 1.0):
                    assert _same(np.quantile(a, q), quantile(a, q)), (a, q)
                assert _same(np.percentile(a, 10), quantile(a, 0.1)), a
    # What is not a 1-D float64 array goes to numpy itself.
    assert _same(np.median([[1.0, 2.0], [3.0, 5.0]]), median([[1.0, 2.0], [3.0, 5.0]]))
    assert _same(np.median(np.arange(5)), median(np.arange(5)))
    assert _same(np.quantile(np.arange(5.0, dtype=np.float32), 0.25), quantile(np.arange(5.0, dtype=np.float32), 0.25))


@pytest.mark.slow
def test_none_of_them_imports_numpy_ma():
    code = (
        "import sys, numpy as np\n"
        "from trainproof._arrays import intersect1d, isin, median, quantile, setdiff1d, unique\n"
        "a = np.array([3.0, 1.0, np.nan, 2.0, 1.0])\n"
        "unique(a); unique(np.arange(9)); median(a); median(a[:2]); median(a[[0, 1, 3]]); quantile(a[:2], 0.25)\n"
        "isin(a, a[:2]); intersect1d(a, a[1:]); setdiff1d(a, a[:1])\n"
        "assert 'numpy.ma' not in sys.modules, 'numpy.ma imported'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
