"""bench/bench_monitor_overhead.py runs, writes the numbers it promises, and counts syncs.

The script is run with ``--quick`` (a smoke run, not a measurement): only the shape and
sanity of its JSON are checked, never a timing.
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "bench_monitor_overhead.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_monitor_overhead", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_quick_run_writes_sane_json(tmp_path):
    out = tmp_path / "o.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "syncs per step between checks" in proc.stdout
    res = json.loads(out.read_text())
    for key in (
        "model",
        "step_s",
        "rounds",
        "ratios",
        "ratio_median",
        "log_s_between_checks",
        "log_s_at_checks",
        "judge_s_at_checks",
        "judgements",
        "syncs",
        "judge_cost",
        "targets",
    ):
        assert key in res, key
    assert res["model"]["param_tensors"] == 4 * res["model"]["blocks"] + 2
    # one cycle: no monitor, layers=False, the default monitor (layers=True), activations=True
    assert [r["monitor"] for r in res["rounds"]] == [False, "plain", "layers", "activations"]
    probes = res["probes"]
    assert len(probes["layers_share_per_cycle"]) == len(probes["activations_share_per_cycle"]) == 1
    assert 0 < probes["layers_probe_host_share"] < 1 and math.isfinite(probes["activations_share"])
    assert res["rounds"][2]["probe_s_per_step"] > 0 and res["device"] == "cpu"
    assert res["ratios"] and all(r > 0 for r in res["ratios"])
    assert res["ratio_median"] > 0 and res["step_s"] > 0
    assert res["log_s_between_checks"] > 0 and res["judgements"] >= 1
    syncs = res["syncs"]
    for key in ("per_step_between_checks", "per_check", "calls_between_checks", "calls_at_checks"):
        assert isinstance(syncs[key], int) and syncs[key] >= 0, key
    assert syncs["calls_at_checks"] >= 1
    assert [c["records"] for c in res["judge_cost"]] == [1000, 10000]
    for c in res["judge_cost"]:
        assert c["judge_s"] > 0 and c["judged_every_steps"] >= res["check_every"]
        assert c["same_verdict_as_rows"] is True
    assert set(res["targets"]) >= {"between_checks_met", "judging_within_ration", "layers_met"}


def test_sync_counter_counts_only_inside_its_scope_and_restores():
    bench = load_bench()
    before = {name: vars(torch.Tensor).get(name) for name in bench.SyncCounter.METHODS}

    class Probe:
        def run(self, t):
            t.item()
            float(t)
            bool(t)
            t.tolist()
            t.cpu()
            t.to("cpu")
            t.to(torch.float64)  # no device named: not a host copy
            f"{t:.3f}"  # __format__ calls item: one sync, counted once
            return t + 1  # stays on the device

    t = torch.tensor(1.5)
    with bench.SyncCounter() as sc:
        sc.scope(Probe, "run")
        t.item()  # outside the scope
        Probe().run(t)
        assert sc.count == 7
        assert sc.by_name["Tensor.item"] == 1 and sc.by_name["Tensor.__format__"] == 1
        assert sc.by_name["Tensor.to"] == 1
        with sc.inside():
            int(t)
        assert sc.count == 8
    assert "run" in vars(Probe) and Probe.run.__name__ == "run"
    assert {name: vars(torch.Tensor).get(name) for name in bench.SyncCounter.METHODS} == before
    assert float(t) == 1.5
