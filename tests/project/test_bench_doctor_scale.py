"""bench/bench_doctor_scale.py runs and prints what it promises: a smoke run on a tiny tree
(never a timing), and the tree it writes is one run a folder, JSONL and CSV alternately,
that doctor judges run by run (one report each, a divergence FAILs)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "bench_doctor_scale.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_doctor_scale", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_the_tree_is_one_judged_run_a_folder(tmp_path):
    bench = _bench()
    size = bench.write_tree(tmp_path / "t", 10, 400)
    assert size > 0
    assert bench.write_tree(tmp_path / "t", 10, 400) == size  # kept, not rewritten
    names = [p.name for p in sorted((tmp_path / "t").glob("run*/metrics.*"))]
    assert names == ["metrics.jsonl", "metrics.csv"] * 5
    wall, cpu, reports = bench.run_doctor(tmp_path / "t", "local", 1)
    assert reports == 10 and wall > 0 and cpu > 0
    out = subprocess.run(
        [sys.executable, "-m", "trainproof", "doctor", str(tmp_path / "t"), "--json"],
        capture_output=True,
        text=True,
        env=bench._env(),
        timeout=300,
    )
    verdicts = {Path(r["file"]).parent.name: r["verdict"] for r in json.loads(out.stdout)["reports"]}
    assert verdicts["run00009"] == "FAIL"  # the one diverging run of ten


@pytest.mark.slow
def test_a_smoke_run_prints_the_table_and_the_cost_above_judging(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--runs", "4", "--steps", "300", "--engines", "local", "--workers", "1,2"]
        + ["--dir", str(tmp_path / "tree")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    rows = re.findall(r"^\| local \| (\d) \| [\d.]+ \| [\d,]+ \| [\d.]+x \| [\d.]+ \| 4 \|$", proc.stdout, re.M)
    assert rows == ["1", "2"], proc.stdout
    assert re.search(r"judging alone .* ms CPU a run; doctor, local, 1 worker: .* ms a run above judging", proc.stdout)
