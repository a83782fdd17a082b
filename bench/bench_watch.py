#!/usr/bin/env python3
"""Benchmark: the CPU cost of one ``trainproof watch`` poll as the log grows to 1,000,000 records.

A writer process appends JSONL records (``step``, a decaying noisy ``loss``, a warm-up +
cosine ``learning_rate``, a noisy ``grad_norm``, ``epoch``) while
``python -m trainproof watch LOG --interval 1 --json`` follows the file as a real
subprocess. After each JSON poll line the watcher's CPU time is read from
``/proc/<pid>/schedstat`` of each of its threads (nanoseconds; ``utime+stime`` from
``/proc/<pid>/stat``, 10 ms ticks, is also kept as a cross-check); the difference between
two poll lines is the CPU of one poll (reading, parsing, and judging when due; the sleep
between polls costs nothing).

The requirement: the cost of a poll must not grow with the log length.

Two modes:

* ``steady`` (default): the writer appends ``--rate`` records/s without a break from 0 to
  ``--records``. Polls are binned by the number of records they saw, one bin per decade
  around each mark (1e3 = [316, 3162), 1e4 = [3162, 31623), ...). At a high rate the 1e3
  bin holds few polls or none: the log passes it in well under a second.
* ``windows``: the writer fills the log in bulk up to each mark (1e3, 1e4, 1e5, 1e6),
  waits until the watcher has read it, then appends at ``--rate`` records/s for
  ``--window`` seconds. Each mark is measured with the same work per poll, at any rate
  (e.g. a realistic 100 records/s), in minutes rather than days. The poll that reads the
  bulk fill is not counted.

``--profile`` runs no subprocess: it builds logs of each size in-process and splits one
poll into reading (``LogTail.poll``) and judging (``Guardian.judge``), then times each
phase of a judgement (copying the columns, building the RunLog, each rule, the chart
series) at the largest size.

Usage (from the repository root)::

    .venv/bin/python bench/bench_watch.py                                  # steady, 1M records at 5000/s (~3.5 min)
    .venv/bin/python bench/bench_watch.py --records 100000 --rate 2000     # scaled down
    .venv/bin/python bench/bench_watch.py --mode windows --rate 1000 --window 40
    .venv/bin/python bench/bench_watch.py --profile                        # where a poll's time goes

Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKS = (1_000, 10_000, 100_000, 1_000_000)
BATCH_SECONDS = 0.05  # the steady writer appends every 50 ms


# --------------------------------------------------------------------------- the log


def lines(start: int, n: int, total: int) -> str:
    """Records ``start .. start+n-1`` (0-based) as JSONL text; deterministic per record."""
    import numpy as np

    i = np.arange(start, start + n, dtype=np.float64)
    rng = np.random.default_rng(start)
    loss = 0.8 + 2.5 / np.sqrt(1.0 + i / 500.0) * (1.0 + 0.03 * rng.standard_normal(n))
    warm = 2000.0
    frac = np.clip((i - warm) / max(total - warm, 1.0), 0.0, 1.0)
    lr = np.where(i < warm, 3e-4 * (i + 1) / warm, 3e-4 * (0.05 + 0.95 * 0.5 * (1 + np.cos(np.pi * frac))))
    gn = np.abs(0.9 + 0.15 * rng.standard_normal(n)) + 2.0 * np.exp(-i / 300.0)
    out = []
    for k in range(n):
        s = start + k
        out.append(
            f'{{"step": {s + 1}, "loss": {loss[k]:.6f}, "learning_rate": {lr[k]:.6e}, '
            f'"grad_norm": {gn[k]:.5f}, "epoch": {(s + 1) / total * 3:.6f}}}\n'
        )
    return "".join(out)


def writer_main(args) -> None:
    """The writer process. steady: append --rate records/s up to --records. windows: obey
    commands on stdin (``fill M`` / ``steady SECONDS``), answer ``ok N`` on stdout."""
    path = Path(args.log)
    total = args.records
    n = 0
    with open(path, "a", encoding="utf-8") as f:

        def append(k: int) -> None:
            nonlocal n
            k = min(k, total - n)
            if k <= 0:
                return
            for a in range(0, k, 50_000):
                b = min(k, a + 50_000)
                f.write(lines(n + a, b - a, total))
            f.flush()
            n += k

        def steady(seconds: float | None) -> None:
            t0 = time.monotonic()
            done = 0
            while n < total:
                now = time.monotonic()
                if seconds is not None and now - t0 >= seconds:
                    return
                due = int((now - t0) * args.rate) - done
                if due > 0:
                    before = n
                    append(due)
                    done += n - before
                time.sleep(BATCH_SECONDS)

        if args.mode == "steady":
            steady(None)
            return
        for cmd in sys.stdin:
            word, _, val = cmd.strip().partition(" ")
            if word == "fill":
                append(int(val) - n)
            elif word == "steady":
                steady(float(val))
            elif word == "quit":
                return
            print(f"ok {n}", flush=True)


# --------------------------------------------------------------------------- CPU of a process

_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> tuple[float, float]:
    """(schedstat CPU of every thread, in s; utime+stime from /proc/<pid>/stat, in s)."""
    sched = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                sched += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    ticks = int(rest[11]) + int(rest[12])
    return sched / 1e9, ticks / _TICK


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for ln in f:
            if ln.startswith("VmRSS:"):
                return int(ln.split()[1]) / 1024
    return float("nan")


# --------------------------------------------------------------------------- the run


def judged_flags(polls: list[dict], share: float = 0.01, every: float = 30.0) -> None:
    """Mark the polls that judged (the Watcher's rule: >= share of the history new since
    the last judgement, or anything new and ``every`` seconds since it)."""
    judged_at = 0
    last = -1e300
    for p in polls:
        new = p["records"] - judged_at
        due = new > 0 and new >= max(1, share * judged_at)
        p["judged"] = bool(p["records"]) and (due or (p["new_records"] > 0 and p["time"] - last >= every))
        if p["records"] < judged_at:  # rotation: not expected here
            judged_at = 0
        if p["judged"]:
            judged_at = p["records"]
            last = p["time"]


def run(args) -> list[dict]:
    tmp = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="tp-bench-watch-"))
    tmp.mkdir(parents=True, exist_ok=True)
    log = tmp / "run.jsonl"
    if log.exists():
        log.unlink()
    log.touch()
    # The file exists (empty) before the watcher starts; the first records follow.
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    # windows mode: room after the last mark for its window
    total = args.records if args.mode == "steady" else args.records + int(args.rate * (args.window + 5))
    writer = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--_writer",
            "--log",
            str(log),
            "--mode",
            args.mode,
            "--records",
            str(total),
            "--rate",
            str(args.rate),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    watch = subprocess.Popen(
        [sys.executable, "-m", "trainproof", "watch", str(log), "--interval", str(args.interval), "--json"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp,
    )
    polls: list[dict] = []
    marks = [m for m in MARKS if m <= args.records]
    t_start = time.monotonic()
    prev_cpu = None
    state = {"mark": 0, "phase": "fill", "window_from": None}

    def cmd(s: str) -> None:
        writer.stdin.write(s + "\n")
        writer.stdin.flush()

    if args.mode == "windows":
        cmd(f"fill {marks[0]}")
    try:
        for line in watch.stdout:
            if not line.startswith("{"):
                continue
            arrived = time.monotonic()
            sched, ticks = cpu_seconds(watch.pid)
            d = json.loads(line)
            d["arrived"] = arrived - t_start
            d["cpu"] = None if prev_cpu is None else sched - prev_cpu[0]
            d["cpu_ticks"] = None if prev_cpu is None else ticks - prev_cpu[1]
            d["rss_mb"] = rss_mb(watch.pid)
            d["window"] = None
            prev_cpu = (sched, ticks)
            polls.append(d)
            if args.verbose:
                print(
                    f"  poll records={d['records']:>8} new={d['new_records']:>7} cpu={d['cpu'] or 0:.4f}s "
                    f"verdict={d['verdict']} new={d['new']}",
                    file=sys.stderr,
                )
            if args.mode == "steady":
                if d["records"] >= args.records and d["new_records"] == 0:
                    break
                if time.monotonic() - t_start > args.timeout:
                    print("timeout", file=sys.stderr)
                    break
                continue
            # windows: fill -> (watcher caught up) -> steady window -> next fill
            m = marks[state["mark"]]
            if state["phase"] == "fill" and d["records"] >= m:
                writer.stdout.readline()  # "ok n" of the fill
                cmd(f"steady {args.window}")
                state["phase"] = "steady"
                state["window_from"] = len(polls)  # polls after this one are the window
            elif state["phase"] == "steady":
                if d["records"] > m:
                    d["window"] = m
                if state.get("ended"):
                    # The writer finished the window; this poll read its last records.
                    state["mark"] += 1
                    state["ended"] = False
                    if state["mark"] == len(marks):
                        break
                    cmd(f"fill {marks[state['mark']]}")
                    state["phase"] = "fill"
                else:
                    import select

                    r, _, _ = select.select([writer.stdout], [], [], 0)
                    if r:
                        writer.stdout.readline()
                        state["ended"] = True
    finally:
        if watch.poll() is None:
            watch.send_signal(signal.SIGINT)
            try:
                watch.wait(30)
            except subprocess.TimeoutExpired:
                watch.kill()
        if writer.poll() is None:
            try:
                cmd("quit")
            except (BrokenPipeError, OSError):
                pass
            try:
                writer.wait(10)
            except subprocess.TimeoutExpired:
                writer.kill()
        if not args.out:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    judged_flags(polls)
    return polls


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def table(polls: list[dict], args) -> None:
    marks = [m for m in MARKS if m <= args.records]
    print()
    print(f"mode={args.mode} rate={args.rate} records/s interval={args.interval} s records={args.records}")
    hdr = (
        f"{'records':>9} {'window':>19} {'polls':>5} {'judged':>6} {'new/poll':>8} {'CPU s/poll mean':>15} "
        f"{'median':>8} {'p90':>8} {'max':>8} {'judged med':>10} {'other med':>9} {'gap s':>6} {'RSS MB':>7}"
    )
    print(hdr)
    print("-" * len(hdr))
    for m in marks:
        if args.mode == "steady":
            lo, hi = m / math.sqrt(10), m * math.sqrt(10)
            sel = [p for p in polls[1:] if p["cpu"] is not None and lo <= p["records"] < hi]
            win = f"[{int(lo)}, {int(min(hi, args.records + 1))})"
        else:
            sel = [p for p in polls if p["window"] == m and p["cpu"] is not None]
            win = f"({m}, {m + int(args.rate * args.window)}]" if sel else "-"
        if not sel:
            print(f"{m:>9} {win:>19} {0:>5}")
            continue
        cpu = [p["cpu"] for p in sel]
        jud = [p["cpu"] for p in sel if p["judged"]]
        oth = [p["cpu"] for p in sel if not p["judged"]]
        idx = [polls.index(p) for p in sel]
        gaps = [polls[i]["time"] - polls[i - 1]["time"] for i in idx if i > 0]
        print(
            f"{m:>9} {win:>19} {len(sel):>5} {len(jud):>6} {statistics.mean(p['new_records'] for p in sel):>8.0f} "
            f"{statistics.mean(cpu):>15.4f} {statistics.median(cpu):>8.4f} {pct(cpu, 0.9):>8.4f} {max(cpu):>8.4f} "
            f"{(statistics.median(jud) if jud else float('nan')):>10.4f} "
            f"{(statistics.median(oth) if oth else float('nan')):>9.4f} "
            f"{(statistics.mean(gaps) if gaps else float('nan')):>6.2f} {max(p['rss_mb'] for p in sel):>7.0f}"
        )
    tot_s = sum(p["cpu"] for p in polls if p["cpu"] is not None)
    tot_t = sum(p["cpu_ticks"] for p in polls if p["cpu_ticks"] is not None)
    print(
        f"\npolls: {len(polls)}; watcher CPU over the polls: {tot_s:.2f} s (schedstat) / {tot_t:.2f} s "
        f"(utime+stime); final records {polls[-1]['records'] if polls else 0}, verdict "
        f"{polls[-1]['verdict'] if polls else '-'}"
    )
    print(
        "judged = polls that ran the rules (Watcher: >= 1% of the history new, or 30 s); "
        "'judged med'/'other med' = median CPU of those polls and of the others; "
        "gap = seconds between poll starts (the interval plus the poll itself)."
    )


# --------------------------------------------------------------------------- --profile


def profile(args) -> None:
    """Split a poll into reading and judging at each size; time a judgement's phases."""
    import cProfile
    import pstats

    sys.path.insert(0, str(ROOT / "src"))
    from trainproof.live.watcher import Watcher
    from trainproof.rules import engine
    from trainproof.rules.registry import all_rules

    per_poll = int(args.rate * args.interval)
    tmp = Path(tempfile.mkdtemp(prefix="tp-bench-watch-prof-"))
    marks = [m for m in MARKS if m <= args.records]
    print(
        f"one poll = {per_poll} new records (rate {args.rate}/s x interval {args.interval} s); "
        "best of 3 for the judgement"
    )
    print(f"{'records':>9} {'read+parse new (s)':>18} {'judge (s)':>10} {'judge / record (us)':>19}")
    last_w = None
    for m in marks:
        log = tmp / f"run{m}.jsonl"
        with open(log, "w") as f:
            for a in range(0, m, 50_000):
                f.write(lines(a, min(50_000, m - a), args.records))
        w = Watcher(log)
        w.poll()
        with open(log, "a") as f:
            f.write(lines(m, per_poll, args.records))
        t0 = time.process_time()
        w.tail.poll()
        t_read = time.process_time() - t0
        best = math.inf
        for _ in range(3):
            t0 = time.process_time()
            w.guardian.judge()
            best = min(best, time.process_time() - t0)
        print(f"{m:>9} {t_read:>18.4f} {best:>10.4f} {best / (m + per_poll) * 1e6:>19.2f}")
        last_w = w
    # Phases of one judgement at the largest size.
    g = last_w.guardian
    print(f"\nphases of one judgement at {g.records} records (process CPU, s):")
    t0 = time.process_time()
    run = g.runlog()
    print(f"  {'Guardian.runlog (copy columns + build_runlog)':<52} {time.process_time() - t0:8.4f}")
    timings = []
    objective, _ = engine.detect_objective(run)
    for rule in all_rules():
        if rule.is_outcome or rule.source not in ("single_run", "reader") or objective not in rule.objectives:
            continue
        t0 = time.process_time()
        skip = engine._skip_reason(rule, run, g.thresholds)
        if skip is None:
            list(rule.check(engine.Context(run, g.thresholds, rule)) or ())
        timings.append((time.process_time() - t0, rule.id + ("" if skip is None else f" (skipped: {skip.reason})")))
    t0 = time.process_time()
    engine.chart_series(run)
    timings.append((time.process_time() - t0, "chart_series (downsample for reports)"))
    for t, name in sorted(timings, reverse=True)[:12]:
        print(f"  {name:<52} {t:8.4f}")
    print(f"  {'(all rules + charts)':<52} {sum(t for t, _ in timings):8.4f}")
    pr = cProfile.Profile()
    pr.enable()
    g.judge()
    pr.disable()
    print(f"\ncProfile of one Guardian.judge() at {g.records} records (top 15 by own time):")
    pstats.Stats(pr).sort_stats("tottime").print_stats(15)
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000, help="log length to reach (default 1,000,000)")
    ap.add_argument("--rate", type=float, default=5000.0, help="records/s the writer appends (default 5000)")
    ap.add_argument("--interval", type=float, default=1.0, help="watch --interval (default 1)")
    ap.add_argument("--mode", choices=["steady", "windows"], default="steady")
    ap.add_argument("--window", type=float, default=40.0, help="windows mode: seconds at --rate per mark (default 40)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="steady mode: give up after this many seconds")
    ap.add_argument("--out", help="keep the log in this folder")
    ap.add_argument("--profile", action="store_true", help="in-process phase split instead of the subprocess run")
    ap.add_argument("--json", dest="json_out", help="also write every poll as JSON to this file")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every poll to stderr")
    ap.add_argument("--_writer", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--log", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._writer:
        writer_main(args)
        return
    if not Path("/proc/self/stat").exists():
        sys.exit("bench_watch.py needs Linux /proc")
    if args.profile:
        profile(args)
        return
    polls = run(args)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(polls))
    table(polls, args)


if __name__ == "__main__":
    main()
