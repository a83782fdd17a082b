"""Robust statistics shared by the rules (medians over windows, noise, levels)."""

from __future__ import annotations

import math

import numpy as np

from .._arrays import median, unique

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


def row_medians(rows: np.ndarray) -> np.ndarray:
    """``np.median(rows, axis=1)`` of a 2-D array: the same values, bit for bit (as
    :func:`median`, row by row in one call); a row holding a NaN has the median NaN, as
    there (without ``np.median``, whose NaN check imports ``numpy.ma``)."""
    r = np.asarray(rows)
    if r.ndim != 2 or r.shape[0] == 0 or r.shape[1] == 0 or r.dtype != np.float64:
        return np.median(r, axis=1)
    nan_rows = np.isnan(r).any(axis=1)
    if nan_rows.any():
        r = np.where(nan_rows[:, None], 0.0, r)
    w = r.shape[1]
    h = w // 2
    part = np.partition(r, h, axis=1)
    if w % 2:
        out = np.mean(part[:, h : h + 1], axis=1)
    else:
        part[:, h - 1] = part[:, :h].max(axis=1)
        out = np.mean(part[:, h - 1 : h + 1], axis=1)
    out[nan_rows] = np.nan
    return out


def block_medians(values: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """Medians of consecutive non-overlapping blocks, and each block's centre index.

    A trailing partial block is kept when it has at least 3 points.
    """
    n = values.size
    full = n // block
    meds = []
    centres = []
    if full:
        m = row_medians(values[: full * block].reshape(full, block))
        meds.append(m)
        centres.append(np.arange(full) * block + block // 2)
    rest = n - full * block
    if rest >= 3:
        meds.append(np.array([median(values[full * block :])]))
        centres.append(np.array([full * block + rest // 2]))
    if not meds:
        return np.array([median(values)]), np.array([n // 2])
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
    # statistics (with fractions and decimal) is imported here, by the one rule that asks.
    from statistics import NormalDist

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
    mad = median(np.abs(d - median(d)))
    return float(1.4826 * mad / math.sqrt(2))


def curvature_noise_sigma(values: np.ndarray) -> float:
    """Point-to-point noise read from second differences: median |second difference| /
    1.652 (for independent noise of standard deviation s the second differences have
    standard deviation s*sqrt(6), and 0.6745 * sqrt(6) = 1.652). A steady climb or fall
    has no second differences, so unlike :func:`noise_sigma` a trend does not count as
    noise. 0.0 for fewer than 3 values."""
    if values.size < 3:
        return 0.0
    return float(median(np.abs(np.diff(values, 2)))) / 1.652


def common_steps(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray | slice, np.ndarray | slice]:
    """The indices into ``a`` and ``b`` of the values they share, in increasing order: those
    of ``np.intersect1d(a, b, return_indices=True)`` (``slice(None)`` for both when ``a``
    and ``b`` hold the same values: every index). A series' steps are strictly increasing,
    so the same steps on both sides (the usual case) or a binary search give them without
    intersect1d's sort; any other input goes to intersect1d."""
    if a.size and b.size and np.all(a[1:] > a[:-1]) and np.all(b[1:] > b[:-1]):
        if a.size == b.size and np.array_equal(a, b):
            return slice(None), slice(None)
        pos = np.searchsorted(b, a)
        hit = np.zeros(a.size, dtype=bool)
        inside = pos < b.size
        hit[inside] = b[pos[inside]] == a[inside]
        return np.flatnonzero(hit), pos[hit]
    _, ia, ib = np.intersect1d(a, b, return_indices=True)
    return ia, ib


def improvement(values: np.ndarray, window: int) -> tuple[float, float, float]:
    """``(first, last, relative improvement)`` of the medians of the first and last
    ``window`` points. The improvement is ``(first - last) / |first|``; 0 when first is 0
    and last is not lower."""
    first = float(median(values[:window]))
    last = float(median(values[-window:]))
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


def repeat_cadence(values: np.ndarray) -> float:
    """The median length of the stretches of one value repeated to the bit over
    consecutive points of ``values`` (shape ``(n,)``; 1.0 when ``n`` is 0): how many logged
    points one measurement is carried over. A loss measured at every log changes at every
    point (1.0); a progress bar or a logger that copies the latest evaluation onto every
    train row repeats each one until the next (50.0 for an evaluation every 50 rows)."""
    if values.size == 0:
        return 1.0
    changes = np.flatnonzero(values[1:] != values[:-1]) + 1
    lengths = np.diff(np.concatenate(([0], changes, [values.size])))
    return float(median(lengths))


def neighbour_median(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(indices, level)``: for each point with two neighbours on each side, the median
    of those four neighbours (``i-2, i-1, i+1, i+2``), the point itself left out.

    The level a point is compared with must not contain the point, and an even number of
    neighbours keeps a loss that alternates between two values every logged point (up,
    down, up, …) from being its own level: the median of two highs and two lows is their
    midpoint, where the median of a centred 5-point window would be the point itself.
    """
    n = values.size
    if n < 5:
        return np.array([], dtype=np.int64), np.array([], dtype=float)
    idx = np.arange(2, n - 2)
    a, b, c, d = values[:-4], values[1:-3], values[3:-1], values[4:]
    # The median of four is the mean of the middle two: the larger of the two pairwise
    # minima and the smaller of the two pairwise maxima (as np.median, ~6x faster).
    lo = np.maximum(np.minimum(a, b), np.minimum(c, d))
    hi = np.minimum(np.maximum(a, b), np.maximum(c, d))
    return idx, (lo + hi) / 2


#: Largest window :func:`window_medians` computes with a comparator network.
NETWORK_MAX_WINDOW = 16


def _batcher_pairs(n: int) -> list[tuple[int, int]]:
    """Comparators ``(i, j)``, ``i < j``, of Batcher's odd-even merge sort of ``n`` wires:
    a sorting network for any ``n`` (checked exhaustively with the 0-1 principle for every
    ``n`` up to :data:`NETWORK_MAX_WINDOW`)."""
    pairs = []
    p = 1
    while p < n:
        k = p
        while k >= 1:
            for j in range(k % p, n - k, 2 * k):
                for i in range(min(k, n - j - k)):
                    if (i + j) // (2 * p) == (i + j + k) // (2 * p):
                        pairs.append((i + j, i + j + k))
            k //= 2
        p *= 2
    return pairs


_NETWORKS: dict[int, list[tuple[int, int, bool, bool]]] = {}


def _median_network(window: int) -> list[tuple[int, int, bool, bool]]:
    """The comparators of a sorting network of ``window`` wires that the middle wire(s)
    depend on, each with whether its min (wire ``i``) and its max (wire ``j``) are used."""
    net = _NETWORKS.get(window)
    if net is None:
        k = window // 2
        need = {k} if window % 2 else {k - 1, k}
        kept = []
        for i, j in reversed(_batcher_pairs(window)):
            if i in need or j in need:
                kept.append((i, j, i in need, j in need))
                need |= {i, j}
        net = _NETWORKS[window] = kept[::-1]
    return net


def window_medians(values: np.ndarray, window: int) -> np.ndarray:
    """The median of every run of ``window`` consecutive values (``values.size - window +
    1`` of them; empty when the series is shorter than the window): the middle value of
    each sorted window, or the mean ``(a + b) / 2`` of the middle two.

    Windows of up to :data:`NETWORK_MAX_WINDOW` values go through a comparator network
    run on the shifted columns, O(n) array operations instead of a sort per window (min
    and max select values, never compute them, so the order statistics are exactly the
    sorted ones). Larger windows, and an input with a NaN or a negative zero (whose place
    among equal values would be the sort's choice), sort every window."""
    if window < 1 or values.size < window:
        return np.empty(0)
    k = window // 2
    if (
        window <= NETWORK_MAX_WINDOW
        and values.dtype == np.float64
        and not np.isnan(values).any()
        and not np.any((values == 0) & np.signbit(values))
    ):
        m = values.size - window + 1
        wires = [values[j : j + m] for j in range(window)]
        for i, j, lo, hi in _median_network(window):
            a, b = wires[i], wires[j]
            if lo:
                wires[i] = np.minimum(a, b)
            if hi:
                wires[j] = np.maximum(a, b)
        if window % 2:
            return np.array(wires[k], copy=True)
        return (wires[k - 1] + wires[k]) / 2
    s = np.sort(np.lib.stride_tricks.sliding_window_view(values, window), axis=1)
    return s[:, k] if window % 2 else (s[:, k - 1] + s[:, k]) / 2


def window_medians_at(values: np.ndarray, window: int, starts: np.ndarray) -> np.ndarray:
    """``window_medians(values, window)[starts]``, computed for those windows only (each
    window sorted, as :func:`window_medians` defines the result)."""
    starts = np.asarray(starts, dtype=np.int64)
    if starts.size == 0:
        return np.empty(0)
    rows = np.lib.stride_tricks.sliding_window_view(values, window)[starts]
    s = np.sort(rows, axis=1)
    k = window // 2
    return s[:, k] if window % 2 else (s[:, k - 1] + s[:, k]) / 2


def window_mins(values: np.ndarray, window: int) -> np.ndarray:
    """The minimum of every run of ``window`` consecutive values (``values.size - window +
    1`` of them), by doubling: ``O(n log window)``. NaN propagates (``np.minimum``)."""
    if window < 1 or values.size < window:
        return np.empty(0)
    cur, span = values, 1
    while 2 * span <= window:
        cur = np.minimum(cur[:-span], cur[span:])
        span *= 2
    m = values.size - window + 1
    if span == window:
        return np.array(cur[:m], copy=True)
    return np.minimum(cur[:m], cur[window - span : window - span + m])


def sign_change_share(residuals: np.ndarray) -> float:
    """Share of consecutive non-zero residuals whose signs differ (0 when fewer than two).

    Independent noise around a level gives about 0.5 (0.62 for the residuals of
    :func:`neighbour_median`, which are slightly anti-correlated); a loss that alternates
    above and below its level at every logged point gives 1.
    """
    s = np.sign(residuals)
    s = s[s != 0]
    if s.size < 2:
        return 0.0
    return float(np.mean(s[1:] != s[:-1]))


def ols_slope(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """``(slope, standard error, t)`` of the least-squares line of ``y`` on ``x``.

    The standard error is the usual one (residual variance over ``n - 2`` degrees of
    freedom). ``t`` is ``slope / se``: ``+inf``/``-inf`` for an exact non-zero slope and 0
    for an exactly constant ``y``; ``(0, inf, 0)`` when fewer than 3 points or ``x`` does
    not vary.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    n = x.size
    if n < 3:
        return 0.0, math.inf, 0.0
    xc = x - x.mean()
    sxx = float(np.dot(xc, xc))
    if sxx <= 0:
        return 0.0, math.inf, 0.0
    slope = float(np.dot(xc, y - y.mean())) / sxx
    resid = y - y.mean() - slope * xc
    s2 = float(np.dot(resid, resid)) / (n - 2)
    se = math.sqrt(s2 / sxx)
    if se == 0:
        return slope, 0.0, (0.0 if slope == 0 else math.copysign(math.inf, slope))
    return slope, se, slope / se


#: Values :func:`mann_kendall_z` holds at once while comparing pairs (4 M floats, 32 MB).
MK_CHUNK_VALUES = 1 << 22


def mann_kendall_z(values: np.ndarray) -> float:
    """Mann–Kendall trend statistic of a short sequence, as a normal score.

    ``S`` counts the pairs ``i < j`` with ``values[j] > values[i]`` minus those with
    ``values[j] < values[i]`` (ties count for neither); ``Z = (S - sign(S)) / sqrt(var S)``
    with ``var S = k(k-1)(2k+5)/18`` (no tie correction: ties only make it conservative).
    Rank-based, so one extreme window does not make a trend, and zeros need no special
    case. Positive for a rising sequence; 0 when fewer than 3 values.
    """
    v = np.asarray(values, dtype=float)
    k = v.size
    if k < 3:
        return 0.0
    # The pairs are compared a band of rows at a time, so that memory stays bounded (about
    # MK_CHUNK_VALUES floats) however long the sequence: a log with 80,000 evaluations
    # would otherwise ask for a k x k matrix of 50 GB.
    s = 0.0
    rows = max(1, MK_CHUNK_VALUES // k)
    for i0 in range(0, k - 1, rows):
        i1 = min(k - 1, i0 + rows)
        # rows i0..i1-1 against the columns after i0; row i counts the columns j > i only
        band = np.sign(v[None, i0 + 1 :] - v[i0:i1, None])
        h = i1 - i0
        band[:, :h][np.tril_indices(h, -1)] = 0.0
        s += float(band.sum())
    var = k * (k - 1) * (2 * k + 5) / 18.0
    if s == 0:
        return 0.0
    return (s - math.copysign(1.0, s)) / math.sqrt(var)


def trend_z(values: np.ndarray, max_blocks: int) -> float:
    """:func:`mann_kendall_z` of ``values`` read as at most ``max_blocks`` consecutive block
    medians (so a long series costs a short sequence and one extreme point is not a
    trend); 0.0 when that leaves fewer than 3 medians."""
    meds, _ = block_medians(values, max(1, -(-values.size // max_blocks)))
    return mann_kendall_z(meds) if meds.size >= 3 else 0.0


def ar1_inflation(residuals: np.ndarray, cap: float = 0.9) -> tuple[float, float]:
    """``(rho, factor)``: the lag-1 autocorrelation of ``residuals`` (clipped to
    ``[0, cap]``) and the factor ``sqrt((1 + rho) / (1 - rho))`` by which it widens a
    least-squares standard error.

    Least squares assumes independent noise; a logged loss that is a running average (an
    EMA in a progress bar, a per-epoch mean of overlapping windows) is positively
    autocorrelated, which makes a slope look far more certain than it is. Under AR(1)
    noise the effective number of points shrinks by ``(1 - rho) / (1 + rho)``. Negative
    autocorrelation is not credited (the factor never narrows an error).
    """
    r = np.asarray(residuals, dtype=float)
    if r.size < 3:
        return 0.0, 1.0
    den = float(np.dot(r, r))
    if den <= 0:
        return 0.0, 1.0
    rho = min(max(float(np.dot(r[1:], r[:-1])) / den, 0.0), cap)
    return rho, math.sqrt((1 + rho) / (1 - rho))


def ar1_level_widening(y: np.ndarray, block: int) -> float:
    """The factor by which :func:`noise_sigma` of ``y`` (``(n,)``, n >= 3) is widened to
    give the noise of a level of many points, when ``y``'s noise is AR(1).

    Under AR(1) noise of coefficient rho, first differences see sigma * sqrt(1 - rho), and
    a median of k points moves like sigma * sqrt((1 + rho) / ((1 - rho) k)), so the factor
    is sqrt(1 + rho) / (1 - rho). rho is read from the lag-1 autocorrelation r of the first
    differences (r = -(1 - rho) / 2 for AR(1) noise), each difference taken from the median
    of its block of ``block`` (a smooth fall or climb shifts the differences, not their
    correlation), clipped to [0, 0.95]: 1 for independent noise, 2.4 at rho 0.5, 28 at 0.95
    (a running average with a long window, a loss that follows the data's order)."""
    d = np.diff(y)
    meds, centres = block_medians(d, block)
    d = d - np.interp(np.arange(d.size), centres, meds)
    den = float(np.dot(d, d))
    if d.size < 3 or den <= 0:
        return 1.0
    r = float(np.dot(d[1:], d[:-1])) / den
    rho = min(max(1 + 2 * r, 0.0), 0.95)
    return math.sqrt(1 + rho) / (1 - rho)


def repeats_one_value(values: np.ndarray) -> bool:
    """Whether ``values`` (shape ``(n,)``, n >= 2) are one value repeated to the bit: a
    measurement that stopped being taken (a stale evaluation forward-filled, a frozen
    norm), not one that happens to agree."""
    return values.size >= 2 and unique(values).size == 1


def t_quantile(z: float, df: int) -> float:
    """The Student-t quantile with ``df`` degrees of freedom at the normal quantile ``z``
    (2.576 for 99% two-sided), by the Cornish-Fisher expansion to 1/df^2 (within 5% of the
    exact value from df = 4 on: 4.36 against 4.60 at df 4, 3.50 at df 7): a spread read
    from few values is itself uncertain."""
    df = max(1, int(df))
    z3, z5 = z**3, z**5
    return z + (z3 + z) / (4 * df) + (5 * z5 + 16 * z3 + 3 * z) / (96 * df * df)


def change_interval(steps: np.ndarray, values: np.ndarray, z: float) -> tuple[float, float] | None:
    """The confidence interval ``(low, high)`` of the fall of ``values`` over the run: the
    first minus the last value of their least-squares line against ``steps`` (so a falling
    curve has a positive fall), ``z`` standard errors either side, the error widened for
    the residuals' lag-1 autocorrelation (:func:`ar1_inflation`).

    Args:
        steps, values: shape ``(n,)``, finite, in step order; the units of the interval are
            those of ``values`` (nats for a log-loss).
        z: the normal quantile of the interval (2.576 for 99%).

    Returns:
        ``None`` when fewer than 3 points or the steps do not vary.
    """
    x = np.asarray(steps, dtype=float)
    y = np.asarray(values, dtype=float)
    if y.size < 3:
        return None
    span = float(x[-1] - x[0])
    if not span > 0:
        return None
    x = (x - x[0]) / span
    xm = x - x.mean()
    sxx = float(np.dot(xm, xm))
    if not sxx > 0:
        return None
    slope = float(np.dot(xm, y - y.mean())) / sxx
    resid = y - y.mean() - slope * xm
    _, factor = ar1_inflation(resid)
    se = math.sqrt(float(np.dot(resid, resid)) / (y.size - 2) / sxx) * factor
    fall = -slope
    return fall - z * se, fall + z * se


def rounding_step(values: np.ndarray, max_decimals: int = 8) -> float | None:
    """The decimal step ``10**-d`` (d from 0 to ``max_decimals``, the coarsest that fits)
    of which every finite value is a whole multiple: the precision a logger printed at
    (HF Trainer before 4.46 logs ``round(loss, 4)``). ``None`` for fewer than 3 finite
    values or when no step fits (full-precision floats).

    Args:
        values: any shape; non-finite values are ignored.
    """
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    if v.size < 3:
        return None
    # A log stored in float32 (a TensorBoard event file: HF's callback writes its rounded
    # 0.0001 as 9.99999974e-05) holds each rounded decimal as its nearest float32: a value
    # that is exactly a float32 is a multiple when the decimal's float32 is that value.
    v32 = v.astype(np.float32)
    single = bool(np.all(v32.astype(float) == v))
    for d in range(max_decimals + 1):
        x = v * 10.0**d
        r = np.round(x)
        # A decimal parsed into binary and scaled back is off by a few ulps of x.
        if np.all(np.abs(x - r) <= 1e-9 + 1e-14 * np.abs(x)):
            return 10.0**-d
        if single and np.all((r / 10.0**d).astype(np.float32) == v32):
            return 10.0**-d
    return None
