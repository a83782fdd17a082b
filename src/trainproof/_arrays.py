"""numpy functions that import ``numpy.ma`` on first use, as plain numpy, bit for bit.

numpy 2's ``np.unique`` asks ``np.ma.is_masked`` and ``np.median`` of floats asks
``np.ma.isMaskedArray`` for its NaN check; the first such call imports ``numpy.ma``
(about 10 ms of every command's start-up, for a module nothing here uses). These give the
same values without it. A leaf: numpy only, so readers, RunLog and rules may all use it.
"""

from __future__ import annotations

import math

import numpy as np


def unique(values) -> np.ndarray:
    """``np.unique(values)``: the distinct values, flattened and ascending, NaNs as one
    (``equal_nan``), bit for bit what numpy returns. This is numpy's own sort path, which
    it takes for floats anyway; for integers its hash table gives the same sorted set."""
    ar = np.asanyarray(values).flatten()
    ar.sort()
    mask = np.empty(ar.shape, dtype=bool)
    mask[:1] = True
    if ar.shape[0] > 0 and ar.dtype.kind in "cfmM" and np.isnan(ar[-1]):
        if ar.dtype.kind == "c":  # every complex NaN is one value
            first_nan = np.searchsorted(np.isnan(ar), True, side="left")
        else:
            first_nan = np.searchsorted(ar, ar[-1], side="left")
        if first_nan > 0:
            mask[1:first_nan] = ar[1:first_nan] != ar[: first_nan - 1]
        mask[first_nan] = True
        mask[first_nan + 1 :] = False
    else:
        mask[1:] = ar[1:] != ar[:-1]
    return ar[mask]


def median(values) -> np.floating:
    """``np.median(values)`` of a 1-D array: the same value, bit for bit, and faster.

    ``np.median`` partitions around two or three indices (the middle pair and the last
    element, its NaN check), which numpy does with a scalar introselect; a partition
    around one index uses its vectorised selection. Here the array is partitioned at the
    upper middle index only, the lower middle is the largest value below it, and the pair
    goes through the same ``np.mean`` call as in ``np.median``; an array holding a NaN has
    the median NaN, as there; a median of zero (whose sign depends on which of equal zeros
    a partition puts in the middle) is taken from np.median's own partition. Arrays that
    are not 1-D float64 (an integer median never reaches ``numpy.ma``) and empty ones take
    ``np.median`` itself.
    """
    a = np.asarray(values)
    n = a.size
    if a.ndim != 1 or n == 0 or a.dtype != np.float64:
        return np.median(a)
    nan = np.isnan(a)
    if nan.any():
        return a[nan.argmax()]
    h = n // 2
    part = np.partition(a, h)
    if n % 2:
        m = np.mean(part[h : h + 1], axis=0)
    else:
        part[h - 1] = part[:h].max()
        m = np.mean(part[h - 1 : h + 1], axis=0)
    if m != 0:
        return m
    # A zero's sign is that of the zeros numpy's own partition leaves in the middle: the
    # partition np.median takes (around the middle and the last index), and its mean.
    part = np.partition(a, [h, -1] if n % 2 else [h - 1, h, -1])
    return np.mean(part[h : h + 1] if n % 2 else part[h - 1 : h + 1], axis=0)


def quantile(values, q: float) -> np.floating:
    """``np.quantile(values, q)`` (its default, linear interpolation) of a 1-D array and a
    Python float ``q``: the same value, bit for bit. ``np.quantile`` partitions the array
    at the indices of ``np.unique`` of the neighbours of ``q``; here the same partition is
    taken with :func:`unique` and the same interpolation done, in the same float64 steps, on
    the two neighbours it leaves there. Arrays that are not 1-D float64, empty ones and
    those holding a NaN take ``np.quantile`` itself."""
    a = np.asarray(values)
    n = a.size
    if a.ndim != 1 or n == 0 or a.dtype != np.float64 or type(q) is not float or not 0.0 <= q <= 1.0:
        return np.quantile(a, q)
    if np.isnan(a).any():
        return np.quantile(a, q)
    v = (n - 1) * q
    lo = -1 if v >= n - 1 else math.floor(v)
    hi = -1 if v >= n - 1 else lo + 1
    part = np.partition(a, unique(np.array([0, -1, lo, hi], dtype=np.intp)))
    below, above = float(part[lo]), float(part[hi])
    t = v - lo
    diff = above - below
    r = above - diff * (1 - t) if t >= 0.5 else below + diff * t
    return np.float64(r)


def isin(values, test) -> np.ndarray:
    """``np.isin(values, test)`` of 1-D arrays: whether each value is one of ``test``, as
    numpy finds it (it takes the distinct values of both, then their sorted merge)."""
    distinct, inverse = np.unique(values, return_inverse=True)  # with an inverse, no numpy.ma
    return np.isin(distinct, unique(test), assume_unique=True)[inverse]


def intersect1d(a, b) -> np.ndarray:
    """``np.intersect1d(a, b)``: the sorted values in both, numpy's own steps."""
    return np.intersect1d(unique(a), unique(b), assume_unique=True)


def setdiff1d(a, b) -> np.ndarray:
    """``np.setdiff1d(a, b)``: the sorted distinct values of ``a`` not in ``b``, numpy's own
    steps."""
    return np.setdiff1d(unique(a), unique(b), assume_unique=True)
