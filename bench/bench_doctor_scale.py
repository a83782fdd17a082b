#!/usr/bin/env python3
"""Bench: ``trainproof doctor`` over many small runs, by engine and worker count.

Writes a tree of ``--runs`` run folders (default 10,000), each one log of ``--steps``
steps (default 2,000; four metrics a step, an eval every 100 steps), JSONL and CSV
alternately, one run in ten diverging, and times one whole ``python -m trainproof doctor
TREE --json`` process per engine and worker count: the local pool, and a local Dask or
Ray cluster where the package is installed (``--engine dask|ray --jobs N``, started and
stopped by the command, so its start-up is in the figure). Each line gives runs/s, the
speed-up over one worker of the same engine, and the CPU seconds of the command and its
children.

It also measures what judging alone costs (read + judge of every run, one process, no
walk, no output: ``--floor``) and prints doctor's time per run above it with one worker:
the per-run cost doctor adds (the walk, grouping, the report).

The tree is cached under ``--dir`` (default ``$TMPDIR/trainproof-doctor-scale/RUNSxSTEPS``)
and written once. At the defaults it is ~2 GB; ``--runs 1000`` is ~200 MB and runs in a
few minutes on 2 cores. The machine's load moves absolute rates: compare the speed-ups and
the ratios printed in one run.

Usage (from the repository root)::

    python bench/bench_doctor_scale.py --runs 1000 --workers 1,2
    python bench/bench_doctor_scale.py --engines local,dask,ray --workers 1,2,4
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ENGINES = ("local", "dask", "ray")
#: The package each engine needs.
PACKAGE = {"local": None, "dask": "distributed", "ray": "ray"}


def write_tree(root: Path, runs: int, steps: int) -> int:
    """``runs`` run folders under ``root`` (``run00000/metrics.jsonl`` or ``.csv``); returns
    the bytes written. Idempotent: a complete tree (its ``.done`` marker) is kept."""
    done = root / ".done"
    if done.exists() and done.read_text() == f"{runs} {steps}":
        return sum(p.stat().st_size for p in root.rglob("metrics.*"))
    root.mkdir(parents=True, exist_ok=True)
    total = 0
    x = np.arange(1, steps + 1)
    for i in range(runs):
        rng = np.random.default_rng(i)
        loss = 2.5 * np.exp(-x / (0.3 * steps)) + 0.5 + rng.normal(0, 0.02, steps)
        if i % 10 == 9:  # a divergence in the last third
            loss[2 * steps // 3 :] *= np.exp(np.linspace(0, 4, steps - 2 * steps // 3))
        grad = np.exp(rng.normal(0, 0.3, steps))
        lr = 1e-3 * np.minimum(1, x / (0.01 * steps))
        d = root / f"run{i:05d}"
        d.mkdir(exist_ok=True)
        if i % 2 == 0:
            lines = [
                f'{{"step": {s}, "epoch": {s / steps:.4f}, "loss": {v!r}, "grad_norm": {g!r}, "learning_rate": {r!r}}}'
                for s, v, g, r in zip(x.tolist(), loss.tolist(), grad.tolist(), lr.tolist())
            ]
            lines += [f'{{"step": {s}, "eval_loss": {loss[s - 1] + 0.05!r}}}' for s in range(100, steps + 1, 100)]
            text = "\n".join(lines) + "\n"
            name = "metrics.jsonl"
        else:
            rows = ["step,epoch,loss,grad_norm,learning_rate,eval_loss"]
            rows += [
                f"{s},{s / steps:.4f},{v!r},{g!r},{r!r},{(repr(v + 0.05) if s % 100 == 0 else '')}"
                for s, v, g, r in zip(x.tolist(), loss.tolist(), grad.tolist(), lr.tolist())
            ]
            text = "\n".join(rows) + "\n"
            name = "metrics.csv"
        (d / name).write_text(text)
        total += len(text)
    done.write_text(f"{runs} {steps}")
    return total


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), env.get("PYTHONPATH", "")) if p)
    return env


def run_doctor(tree: Path, engine: str, workers: int) -> tuple[float, float, int]:
    """``(wall s, CPU s of the process and its children, reports)`` of one doctor process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "trainproof", "doctor", str(tree), "--json", "--engine", engine, "--jobs", str(workers)],
        capture_output=True,
        text=True,
        env=_env(),
    )
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if p.returncode not in (0, 1):
        raise SystemExit(f"doctor --engine {engine} --jobs {workers} exited {p.returncode}: {p.stderr[-2000:]}")
    return wall, cpu, len(json.loads(p.stdout)["reports"])


_FLOOR = """
import sys, time
from pathlib import Path
from trainproof.api import read_runlog
from trainproof.rules.engine import judge_runlog
from trainproof.rules.thresholds import DEFAULT
files = sorted(p for p in Path(sys.argv[1]).rglob("metrics.*"))
t = time.process_time()
for f in files:
    judge_runlog(read_runlog(f), DEFAULT, ())
print(len(files), time.process_time() - t)
"""


def judging_floor(tree: Path) -> tuple[int, float]:
    """``(runs, CPU s)`` of reading and judging every run in one process (no walk, no output)."""
    out = subprocess.run(
        [sys.executable, "-c", _FLOOR, str(tree)], capture_output=True, text=True, env=_env(), check=True
    )
    n, s = out.stdout.split()
    return int(n), float(s)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--steps", type=int, default=2_000)
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts (default 1,2)")
    ap.add_argument("--engines", default="local,dask,ray", help="those not installed are skipped")
    ap.add_argument("--rounds", type=int, default=1, help="rounds of every engine x workers, alternated")
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--no-floor", dest="floor", action="store_false", help="skip the judging-alone measurement")
    a = ap.parse_args(argv)

    tree = a.dir or Path(tempfile.gettempdir()) / "trainproof-doctor-scale" / f"{a.runs}x{a.steps}"
    t = time.perf_counter()
    size = write_tree(tree, a.runs, a.steps)
    print(
        f"tree: {tree} ({a.runs:,} runs x {a.steps:,} steps, {size / 1e6:.0f} MB; ready in {time.perf_counter() - t:.1f} s)"
    )
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")

    engines = []
    for e in a.engines.split(","):
        pkg = PACKAGE[e]
        if pkg is not None and importlib.util.find_spec(pkg) is None:
            print(f"{e}: not installed ({pkg}), skipped")
            continue
        engines.append(e)
    workers = [int(w) for w in a.workers.split(",")]

    results: dict[tuple[str, int], list[tuple[float, float, int]]] = {}
    for _ in range(a.rounds):
        for e in engines:
            for w in workers:
                results.setdefault((e, w), []).append(run_doctor(tree, e, w))

    print()
    print("| engine | workers | wall s | runs/s | speed-up vs 1 worker | CPU s | reports |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for e in engines:
        base = np.median([r[0] for r in results.get((e, workers[0]), [(np.nan, 0, 0)])])
        for w in workers:
            rs = results[(e, w)]
            wall = float(np.median([r[0] for r in rs]))
            cpu = float(np.median([r[1] for r in rs]))
            print(
                f"| {e} | {w} | {wall:.1f} | {rs[0][2] / wall:,.0f} | {base / wall:.2f}x | {cpu:.1f} | {rs[0][2]:,} |"
            )

    if a.floor and ("local", 1) in results:
        n, floor_cpu = judging_floor(tree)
        one = results[("local", 1)]
        per_run = float(np.median([r[1] for r in one])) / n
        print()
        print(
            f"judging alone (read + judge, one process): {floor_cpu / n * 1000:.2f} ms CPU a run; "
            f"doctor, local, 1 worker: {per_run * 1000:.2f} ms CPU a run, "
            f"{(per_run - floor_cpu / n) * 1000:+.2f} ms a run above judging (walk, grouping, report, start-up)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
