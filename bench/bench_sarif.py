#!/usr/bin/env python3
"""Bench: how long writing a SARIF file takes at code scanning's cap of 25,000 results.

Two reports of 12,510 findings each (warnings and notes, 25,020 in all: the cap cuts 20
notes) are serialised with :func:`trainproof.render.sarif.dumps` ``--repeat`` times; the
median, minimum and the cost per result are printed. Serialising through sarif-om's
``to_json`` (deep copies of every object) took about 30 s here; the direct path takes a
few seconds. Nothing here is a pass/fail test: it prints numbers. Usage (from the
repository root)::

    .venv/bin/python bench/bench_sarif.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from trainproof.findings import Finding, Level, Report  # noqa: E402
from trainproof.render import sarif  # noqa: E402


def report(i: int, level: Level, rule_id: str, n: int) -> Report:
    """A report of ``n`` findings of one rule and level, one a step."""
    findings = [
        Finding(id=rule_id, level=level, message=f"finding {k}", evidence="e", step=float(k), line=k + 1)
        for k in range(n)
    ]
    return Report(file=f"logs/run{i}.jsonl", format="jsonl", findings=findings, records=n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n = sarif.MAX_RESULTS // 2 + 10
    reports = [report(0, Level.WARN, "TP-LOSS-SPIKE", n), report(1, Level.INFO, "TP-THROUGHPUT", n)]
    wall, cpu = [], []
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        sarif.dumps(reports)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    med = statistics.median(wall)
    print(f"sarif.dumps, {2 * n} findings (cap {sarif.MAX_RESULTS}), {args.repeat} runs")
    print(f"  wall: median {med:.2f} s, min {min(wall):.2f} s; CPU median {statistics.median(cpu):.2f} s")
    print(f"  per result kept: {med / sarif.MAX_RESULTS * 1e6:.0f} us")


if __name__ == "__main__":
    main()
