"""TP-LOSS-BLOWUPS: a loss that blows up far above its start again and again, however often
it comes back in between (a data-parallel run at SGD lr 20: half its late batches at 1.1,
half at 1e15, an ordinary median). Generated variants of 40 to 2,000 points, blow-up shares
of 25-60% and magnitudes of 30x to 1e15x; the negatives are the healthy shapes nearest it
(isolated spikes of up to 30x, a warm-up bump above the start, one burst in the first half
that the run comes back from, a floor far below the start with spikes tenfold its level)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import judge_cols


def _healthy(n, rng, noise=0.05):
    t = np.arange(n) / n
    return (0.3 + 1.2 * np.exp(-6 * t)) * np.exp(noise * rng.standard_normal(n))


@pytest.mark.parametrize("seed", range(12))
def test_a_loss_that_blows_up_on_a_large_share_of_its_late_points_fails(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([40, 150, 600, 2000]))
    v = _healthy(n, rng)
    late = np.arange(n // 2, n)
    hit = late[rng.random(late.size) < rng.uniform(0.25, 0.6)]
    v[hit] = 1.5 * 10 ** rng.uniform(1.5, 15, hit.size)
    rep = judge_cols(loss=v.tolist())
    assert rep.verdict.value == "FAIL", (n, hit.size, rep.ids())
    # named by itself, or listed under TP-DIVERGE where the late half held a level
    found = [f for f in rep.findings if f.id == "TP-LOSS-BLOWUPS"] or [
        f for f in rep.findings if f.id == "TP-DIVERGE" and "TP-LOSS-BLOWUPS" in f.data.get("implies", [])
    ]
    assert found, (n, hit.size, rep.ids())
    if found[0].id == "TP-LOSS-BLOWUPS":
        # the evidence's counts are the data's: bursts are maximal runs of points over the bar
        d = found[0].data
        up = np.r_[False, v[n // 2 :] > d["bar"], False]
        assert d["bursts"] == int(np.sum(up[1:] & ~up[:-1])) >= 3
        assert f"in {d['bursts']} separate bursts" in found[0].evidence


@pytest.mark.parametrize("case", ["isolated_spikes", "warmup_bump", "early_burst", "floor_spikes"])
@pytest.mark.parametrize("seed", range(5))
def test_the_spiky_healthy_shapes_nearest_it_do_not_fail(case, seed):
    rng = np.random.default_rng(100 + seed)
    n = 1000
    v = _healthy(n, rng, noise=0.15)
    if case == "isolated_spikes":  # 3% of points, up to 30x their local level
        hit = rng.random(n) < 0.03
        v[hit] *= rng.uniform(1.5, 30, int(hit.sum()))
    elif case == "warmup_bump":  # the first 10% climbs to 20x the start, then falls
        v[:100] *= np.r_[np.linspace(1, 20, 50), np.linspace(20, 1, 50)]
    elif case == "early_burst":  # a hundredfold burst in the first half that the run comes back from
        v[200:260] *= 100
    else:  # a floor 100x below the start whose spikes reach 30x that floor: still under the start
        v = 1.5 * np.r_[np.ones(20), np.full(n - 20, 0.01)] * np.exp(0.2 * rng.standard_normal(n))
        hit = np.flatnonzero(rng.random(n) < 0.3)
        v[hit[hit > 20]] *= 30
    assert "TP-LOSS-BLOWUPS" not in judge_cols(loss=v.tolist()).ids()
