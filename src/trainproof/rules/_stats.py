"""Robust statistics shared by the rules (medians over windows, noise, levels)."""
from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

#: Largest smoothing block and end window; bounds memory and keeps "level" local.
MAX_BLOCK = 200
MAX_END_WINDOW = 500


def smoothing_block(n: int) -> int:
    """Points per block for the smoothed minimum: 5% of the run, at least 3.

    Three points is the smallest block whose median ignores a one-point dip; 5% of the
    run keeps a long noisy run's level estimate steady without erasing structure.
    """
    return max(3, min(n // 20, MAX_BLOCK))


def end_window(n: int) -> int:
    """Points in the end window: the last 10% of the run, at least 3."""
    return max(3, min(n // 10, MAX_END_WINDOW))


def block_medians(values: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """Medians of consecutive non-overlapping blocks, and each block's centre index.

    A trailing partial block is kept when it has at least 3 points.
    """
    n = values.size
    full = n // block
    meds = []
    centres = []
    if full:
        m = np.median(values[: full * block].reshape(full, block), axis=1)
        meds.append(m)
        centres.append(np.arange(full) * block + block // 2)
    rest = n - full * block
    if rest >= 3:
        meds.append(np.array([np.median(values[full * block:])]))
        centres.append(np.array([full * block + rest // 2]))
    if not meds:
        return np.array([np.median(values)]), np.array([n // 2])
    return np.concatenate(meds), np.concatenate(centres)


def block_sizes(n: int, block: int) -> np.ndarray:
    """Number of points behind each median :func:`block_medians` returns for ``n`` values."""
    full = n // block
    rest = n - full * block
    sizes = [block] * full + ([rest] if rest >= 3 else [])
    return np.array(sizes or [n], dtype=np.int64)


def level_se(sigma: float, points: int) -> float:
    """Standard error of a level read from ``points`` values with point noise ``sigma``.

    A median of 3 or more points costs a factor 1.2533 (sqrt(pi/2)) over a mean; the
    median of 1 or 2 points is the point or the mean of the two.
    """
    points = max(1, int(points))
    return sigma / math.sqrt(points) * (1.2533 if points >= 3 else 1.0)


def expected_min_shift(k: int) -> float:
    """How far below their common level the lowest of ``k`` noisy estimates sits on
    average, in standard errors (Blom's approximation of the expected maximum of ``k``
    standard normals; 0 for a single estimate)."""
    if k <= 1:
        return 0.0
    return NormalDist().inv_cdf((k - 0.375) / (k + 0.25))


def noise_sigma(values: np.ndarray) -> float:
    """Robust point-to-point noise: 1.4826 * MAD of first differences / sqrt(2).

    For independent noise of standard deviation s around a slowly moving level, the
    first differences have standard deviation s*sqrt(2); the MAD ignores the few large
    differences of a jump or a spike.
    """
    if values.size < 3:
        return 0.0
    d = np.diff(values)
    mad = np.median(np.abs(d - np.median(d)))
    return float(1.4826 * mad / math.sqrt(2))


def improvement(values: np.ndarray, window: int) -> tuple[float, float, float]:
    """``(first, last, relative improvement)`` of the medians of the first and last
    ``window`` points. The improvement is ``(first - last) / |first|``; 0 when first is 0
    and last is not lower."""
    first = float(np.median(values[:window]))
    last = float(np.median(values[-window:]))
    if first == 0:
        rel = 0.0 if last >= 0 else math.inf
    else:
        rel = (first - last) / abs(first)
    return first, last, rel


def runs_of(mask: np.ndarray) -> list[tuple[int, int]]:
    """``(start, length)`` of each run of True values, in order."""
    if mask.size == 0:
        return []
    m = np.concatenate(([False], mask.astype(bool), [False]))
    d = np.diff(m.astype(np.int8))
    starts = np.flatnonzero(d == 1)
    ends = np.flatnonzero(d == -1)
    return [(int(s), int(e - s)) for s, e in zip(starts, ends)]
