"""runlog.downsample against a per-bucket reference: same points, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainproof.runlog import downsample


def _reference(steps, values, max_points=2000):
    """One bucket at a time: its first minimum and first maximum finite point, every non-finite point."""
    n = values.size
    if n <= max_points:
        return steps, values
    edges = np.linspace(0, n, max(1, max_points // 2) + 1).astype(np.int64)
    finite = np.isfinite(values)
    keep = ~finite
    lo = np.where(finite, values, np.inf)
    hi = np.where(finite, values, -np.inf)
    for a, b in zip(edges[:-1], edges[1:]):
        if b > a and finite[a:b].any():
            keep[a + int(np.argmin(lo[a:b]))] = True
            keep[a + int(np.argmax(hi[a:b]))] = True
    keep[0] = keep[-1] = True
    return steps[keep], values[keep]


_VALUE = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1.0, np.nan]))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(values=st.lists(_VALUE, max_size=400), max_points=st.sampled_from([1, 2, 3, 7, 50, 199, 2000]))
def test_downsample_equals_the_per_bucket_reference(values, max_points):
    v = np.array(values, dtype=float)
    s = np.arange(v.size, dtype=float) * 10
    got, want = downsample(s, v, max_points), _reference(s, v, max_points)
    assert got[0].tobytes() == want[0].tobytes()
    assert got[1].tobytes() == want[1].tobytes()


def test_downsample_keeps_spikes_and_every_nan_of_a_long_series():
    rng = np.random.default_rng(3)
    v = rng.normal(size=100_000)
    v[12_345] = 1e6
    v[[7, 50_000, 99_998]] = np.nan
    s = np.arange(v.size, dtype=float)
    ds, dv = downsample(s, v)
    assert dv.size <= 2_000 + 3 + 2
    assert 12_345.0 in ds and np.nanmax(dv) == 1e6
    assert set(ds[np.isnan(dv)]) == {7.0, 50_000.0, 99_998.0}
    assert ds[0] == 0 and ds[-1] == 99_999
    assert np.all(np.diff(ds) > 0)
