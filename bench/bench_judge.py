#!/usr/bin/env python3
"""Bench: how long judging a RunLog takes, per rule and in total, against reading it.

For the JSONL bench log at each size (``<data>/jsonl_<steps>/metrics.jsonl``, made by
``bench/gen_logs.py``; generated here when missing), the log is read once, then judged
``--repeat`` times (median reported):

* each rule's check (the registry's check functions, timed where the engine calls them;
  values several rules share, such as the log of the loss and its noise, are computed once
  per judgement and charged to the first rule that needs them);
* ``engine``: the rest of :func:`~trainproof.rules.engine.judge_runlog` (which checks can
  run, the verdict, the FAIL summary);
* ``judge_runlog(charts=False)`` (what the live guardian runs), ``chart_series`` (the
  downsampled chart series, :func:`trainproof.runlog.downsample`) and
  ``judge_runlog(charts=True)`` (what ``epoch``, ``doctor`` and ``compare`` run);
* the read time, and judge/read (the issue-9 target: judging a 1e6-step log takes < 10%
  of reading it).

Nothing here is a pass/fail test: it prints numbers. Usage (from the repository root)::

    .venv/bin/python bench/bench_judge.py                       # 1e4, 1e5, 1e6 steps
    .venv/bin/python bench/bench_judge.py --sizes 1e6 --repeat 5 --top 10
    .venv/bin/python bench/bench_judge.py --file /tmp/x/metrics.jsonl   # any log
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from trainproof.api import read_runlog  # noqa: E402
from trainproof.rules import load_all  # noqa: E402
from trainproof.rules.engine import chart_series, judge_runlog  # noqa: E402
from trainproof.rules.registry import all_rules  # noqa: E402


def _log_for(data: Path, steps: int) -> Path:
    path = data / f"jsonl_{steps}" / "metrics.jsonl"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, str(ROOT / "bench" / "gen_logs.py"), "jsonl", str(steps), str(path)], check=True
        )
    return path


class _Timed:
    """Wraps every rule's check for the duration of a ``with`` block, collecting its time
    per judgement (the wrapper drains the check's generator, as the engine does)."""

    def __init__(self) -> None:
        self.times: dict[str, list[float]] = {}
        self._orig: dict[str, object] = {}

    def __enter__(self) -> "_Timed":
        for r in all_rules():
            if r.is_outcome or r.check is None:
                continue
            check = r.check

            def timed(ctx, check=check, rid=r.id):
                t = time.perf_counter()
                out = list(check(ctx) or ())
                self.times.setdefault(rid, []).append(time.perf_counter() - t)
                return out

            self._orig[r.id] = check
            object.__setattr__(r, "check", timed)
        return self

    def __exit__(self, *exc) -> None:
        for r in all_rules():
            if r.id in self._orig:
                object.__setattr__(r, "check", self._orig[r.id])


def _median_time(fn, repeat: int) -> float:
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def bench(path: Path, repeat: int, top: int) -> None:
    t = time.perf_counter()
    run = read_runlog(path)
    read_s = time.perf_counter() - t
    n = len(run.series["loss"]) if "loss" in run.series else 0
    judge_runlog(run)  # warm-up: imports, first-call overheads
    with _Timed() as timed:
        bare = []
        for _ in range(repeat):
            t = time.perf_counter()
            judge_runlog(run, charts=False)
            bare.append(time.perf_counter() - t)
    per_rule = {k: statistics.median(v) for k, v in timed.times.items()}
    judge_bare = statistics.median(bare)
    judge_plain = _median_time(lambda: judge_runlog(run, charts=False), repeat)
    charts = _median_time(lambda: chart_series(run), repeat)
    judge_full = _median_time(lambda: judge_runlog(run, charts=True), repeat)
    rules_sum = sum(per_rule.values())

    print(f"{path}  ({run.records:,} records, {n:,} loss points; read {read_s:.2f} s once; median of {repeat})")
    ranked = sorted(per_rule.items(), key=lambda kv: -kv[1])
    shown = ranked if top <= 0 else ranked[:top]
    for rid, s in shown:
        print(f"  {rid:32s} {1e3 * s:9.2f} ms")
    if len(shown) < len(ranked):
        rest = sum(s for _, s in ranked[len(shown) :])
        print(f"  {f'{len(ranked) - len(shown)} other rules':32s} {1e3 * rest:9.2f} ms")
    print(f"  {'sum of rules':32s} {1e3 * rules_sum:9.2f} ms")
    print(f"  {'engine (the rest)':32s} {1e3 * max(judge_bare - rules_sum, 0.0):9.2f} ms")
    print(f"  {'judge_runlog(charts=False)':32s} {1e3 * judge_plain:9.2f} ms")
    print(f"  {'chart_series':32s} {1e3 * charts:9.2f} ms")
    print(f"  {'judge_runlog(charts=True)':32s} {1e3 * judge_full:9.2f} ms")
    print(
        f"  {'judge/read':32s} {100 * judge_full / read_s:8.1f} %  (read {read_s:.2f} s with this checkout's readers)"
    )
    print()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="/tmp/bench9/data", help="folder of generated logs (default %(default)s)")
    ap.add_argument("--sizes", nargs="+", default=["1e4", "1e5", "1e6"], help="steps (default %(default)s)")
    ap.add_argument("--file", action="append", default=[], help="judge this log instead (repeatable)")
    ap.add_argument(
        "--repeat", type=int, default=3, help="judgements per log; the median is shown (default %(default)s)"
    )
    ap.add_argument("--top", type=int, default=0, help="show only the N slowest rules (default: all that ran)")
    args = ap.parse_args(argv)
    load_all()
    paths = [Path(f) for f in args.file] or [_log_for(Path(args.data), int(float(s))) for s in args.sizes]
    for p in paths:
        bench(p, max(1, args.repeat), args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
