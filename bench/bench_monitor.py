#!/usr/bin/env python3
"""Benchmark: what the in-loop monitor costs a training loop as its history grows.

For a history of 1e3, 1e4 and 1e5 records (the ones ``Monitor.log`` records: ``loss``,
``grad_norm``, ``lr``, ``step_time``), it measures:

* ``judge``: the time of one ``Guardian.judge()`` on that history (median of ``--repeat``);
* ``log() amortised``: the mean time of a ``Monitor.log()`` call over ``--steps`` real
  training steps of a tiny MLP with ``check_every=50`` (the default), the monitor's
  history pre-filled to the size; split into recording (the same loop with no check) and
  judging (the rest);
* ``step``: one training step of the same MLP without the monitor (forward, backward,
  optimizer step), for scale;
* ``step_time at checks``: the ``step_time`` the monitor records for the call after a
  check, against the median: the judging shows up in the run's own step times.

torch runs on one thread (``--threads``): on a small machine the default thread pool makes
a step of this size many times slower and noisier.

Usage (from the repository root)::

    .venv/bin/python bench/bench_monitor.py
    .venv/bin/python bench/bench_monitor.py --sizes 1000,10000 --steps 200
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))


def prefill(guardian, n: int, seed: int = 0) -> None:
    """``n`` records like Monitor.log's: a decaying noisy loss, grad norm, lr, step time."""
    import numpy as np

    rng = np.random.default_rng(seed)
    i = np.arange(n, dtype=np.float64)
    loss = 0.3 + 1.5 / np.sqrt(1 + i / 200) * (1 + 0.05 * rng.standard_normal(n))
    gn = np.abs(1 + 0.2 * rng.standard_normal(n))
    st = 0.001 * (1 + 0.05 * rng.random(n))
    for k in range(n):
        guardian.add(
            float(k), {"loss": float(loss[k]), "grad_norm": float(gn[k]), "lr": 1e-3, "step_time": float(st[k])}
        )


def make(torch, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(512, 8, generator=g)
    Y = torch.tanh(X @ torch.randn(8, 1, generator=g))
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    return X, Y, model, opt


def train_steps(torch, steps: int, mon=None, base_step: int = 0):
    """Run ``steps`` steps; returns (mean seconds per step, mean seconds inside mon.log)."""
    X, Y, model, opt = make(torch)
    if mon is not None:
        mon.model, mon.optimizer = model, opt
    g = torch.Generator().manual_seed(1)
    in_log = 0.0
    t0 = time.perf_counter()
    for s in range(steps):
        idx = torch.randint(0, 512, (32,), generator=g)
        loss = torch.nn.functional.mse_loss(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        if mon is not None:
            a = time.perf_counter()
            mon.log(base_step + s, loss.item())
            in_log += time.perf_counter() - a
        opt.step()
    total = time.perf_counter() - t0
    return total / steps, in_log / steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000", help="history sizes (records)")
    ap.add_argument("--steps", type=int, default=500, help="training steps measured per size (default 500)")
    ap.add_argument("--check-every", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=5, help="judge() timings per size (median)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = ap.parse_args()

    import torch

    import trainproof
    from trainproof.live import Guardian

    torch.set_num_threads(args.threads)
    sizes = [int(float(s)) for s in args.sizes.split(",")]

    # Warm-up (imports, first-call costs).
    m = trainproof.watch(*make(torch)[2:], policy="silent")
    prefill(m.guardian, 200)
    m.guardian.judge()
    train_steps(torch, 50)

    step_alone, _ = train_steps(torch, args.steps)
    print(f"torch {torch.__version__}, {args.threads} thread(s); tiny MLP 8-32-1, batch 32, Adam")
    print(f"one training step without the monitor: {step_alone * 1e6:.0f} us (mean of {args.steps})")
    print()
    hdr = (
        f"{'records':>8} {'judge() ms':>10} {'judge us/rec':>12} {'log() us, no check':>18} "
        f"{'log() us, every ' + str(args.check_every):>20} {'of which judging':>16} {'overhead vs step':>16} "
        f"{'step_time at check / median':>28}"
    )
    print(hdr)
    print("-" * len(hdr))
    for n in sizes:
        g = Guardian()
        prefill(g, n)
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            g.judge()
            times.append(time.perf_counter() - t0)
        judge = statistics.median(times)

        # Recording only: check_every larger than the run.
        mon = trainproof.watch(*make(torch)[2:], check_every=10**9, policy="silent")
        prefill(mon.guardian, n)
        _, log_plain = train_steps(torch, args.steps, mon, base_step=n)

        mon = trainproof.watch(*make(torch)[2:], check_every=args.check_every, policy="silent")
        prefill(mon.guardian, n)
        # Start on a check boundary so the run holds exactly steps / check_every checks.
        mon._calls = 0
        _, log_checked = train_steps(torch, args.steps, mon, base_step=n)
        st = mon.guardian.runlog().series["step_time"]
        recorded = st.values[st.steps >= n]  # this run's step times (from its 2nd call)
        # The call after each check records the check's time in its step_time.
        after_check = recorded[args.check_every - 1 :: args.check_every]
        ratio = float(statistics.median(after_check)) / float(statistics.median(recorded))
        judging = log_checked - log_plain
        print(
            f"{n:>8} {judge * 1e3:>10.1f} {judge / n * 1e6:>12.2f} {log_plain * 1e6:>18.0f} "
            f"{log_checked * 1e6:>20.0f} {judging * 1e6:>16.0f} {log_checked / step_alone:>15.1f}x "
            f"{ratio:>27.1f}x"
        )
    print()
    print(
        "log() us = mean time inside Monitor.log per call; 'of which judging' = the difference between "
        f"check_every={args.check_every} and no check (about judge() / {args.check_every}); overhead vs step = "
        "log() time / one training step. Monitor.log judges every check_every calls unless the previous "
        "judgement was expensive: Guardian.affordable() keeps judging under ~1/10 of the wall time, so on a "
        "long history the judging overhead per call is bounded by about a tenth of the step time."
    )


if __name__ == "__main__":
    main()
