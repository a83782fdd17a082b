#!/usr/bin/env python3
"""Benchmark: the text readers against polars reading the same file, whole processes side
by side, and against an earlier trainproof.

For each format and size (logs from ``bench/gen_logs.py``, seed 0, 4 metrics a step and
an eval row every 100 steps), each round runs, one after the other, in fresh processes:

* **polars**: ``python -c "import polars; polars.read_ndjson(FILE)"`` (JSONL) or
  ``polars.read_csv(FILE)`` (CSV): process start and import included, polars' defaults (its
  JSONL schema is inferred from the first 100 lines, so it leaves out the eval column;
  ``--polars-full`` infers it from every line, which is what an exact read needs);
* **ours**: ``python -m trainproof epoch FILE --json``: start-up, read, judge, JSON out;
  the columnar path (``trainproof[fast]``) where polars is installed and the file is
  large enough (``JSONL_MIN_BYTES``, ``TABLE_MIN_BYTES`` in :mod:`trainproof.formats._columnar`);
* **pure**: the same with ``TRAINPROOF_COLUMNAR=0`` (the pure path, no polars);
* **base** (``--base SRC``): ``epoch`` of another trainproof's ``src`` directory (e.g. the
  commit this branch started from, ``git archive <commit> src | tar -x -C /tmp/base``);
* **0.22** (``--old CMD``): trainproof 0.22's ``epoch FILE --json``, the tool this one
  replaces, installed in a venv of its own (it has no console reader);
* **start-up**: ``epoch`` on a 10-line JSONL log (what every ``epoch`` pays before reading).

Wall time and CPU time (user + sys, from ``os.wait4``) per process; medians over
``--rounds`` rounds, and ratios **per round** (ours / polars, ours / base): this shared
machine's speed drifts, so only ratios from one run compare. Each target line says met or
not, and the fixed costs that the gap holds (start-up, and the judging that polars does
not do), so the remaining gap has its measured cause.

Usage (from the repository root)::

    .venv/bin/python bench/bench_readers.py                                  # jsonl, csv at 1e5, 1e6
    .venv/bin/python bench/bench_readers.py --formats coqui,console --sizes 1e5 --base /tmp/base/src
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
GEN = ROOT / "bench" / "gen_logs.py"
_FILES = {
    "jsonl": "metrics.jsonl",
    "csv": "metrics.csv",
    "hf": "trainer_state.json",
    "tfevents": "events.out.tfevents.bench",
    "coqui": "trainer_0_log.txt",
    "console": "train.log",
}
#: Formats trainproof 0.22 reads (``--old``): it has no console reader.
_OLD_FORMATS = ("jsonl", "csv", "hf", "tfevents", "coqui")
_POLARS = {
    "jsonl": "import polars, sys; polars.read_ndjson(sys.argv[1]{})",
    "csv": "import polars, sys; polars.read_csv(sys.argv[1]{})",
}


def run(argv: list[str], env: dict | None = None) -> tuple[float, float, int, float]:
    """``(wall s, cpu s, exit code, peak RSS MB)`` of one process (output discarded)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    return time.perf_counter() - t0, ru.ru_utime + ru.ru_stime, os.waitstatus_to_exitcode(status), ru.ru_maxrss / 1024


def _env(**extra: str) -> dict:
    env = dict(os.environ)
    env.update(extra)
    return env


def log_file(fmt: str, steps: int, data: Path) -> Path:
    """The generated log of ``fmt`` at ``steps`` steps under ``data`` (made once)."""
    path = data / f"{fmt}_{steps}" / _FILES[fmt]
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "console":
            _console_log(steps, path)
        else:
            subprocess.run([PY, str(GEN), fmt, str(steps), str(path)], check=True, stdout=subprocess.DEVNULL)
    return path


def _console_log(steps: int, path: Path) -> None:
    """A HF Trainer console capture: one printed ``{'loss': …}`` dict a step, tqdm text
    between them, an eval dict every 100 steps (``bench/gen_logs.py`` writes no console
    format)."""
    with path.open("w") as f:
        for s in range(1, steps + 1):
            loss = 3.5 * 0.999995**s + 0.01 * ((s * 7919) % 101) / 101
            f.write(
                f" {100 * s // steps}%|#####     | {s}/{steps} [00:{s % 60:02d}<00:10, 9.5it/s]"
                f"{{'loss': {loss:.4f}, 'grad_norm': {1 + (s % 13) / 13:.6f}, "
                f"'learning_rate': {1e-4 * (1 - s / steps):.6e}, 'epoch': {s / steps:.4f}}}\n"
            )
            if s % 100 == 0:
                f.write(f"{{'eval_loss': {loss + 0.1:.4f}, 'eval_runtime': 1.2, 'epoch': {s / steps:.4f}}}\n")


def bench(
    fmt: str, path: Path, rounds: int, base: Path | None, tiny: Path, polars_full: bool, old: list[str] | None = None
) -> dict:
    cmds: dict[str, tuple[list[str], dict | None]] = {}
    if fmt in _POLARS:
        extra = ", infer_schema_length=None" if polars_full and fmt == "jsonl" else ""
        cmds["polars"] = ([PY, "-c", _POLARS[fmt].format(extra), str(path)], None)
    epoch = [PY, "-m", "trainproof", "epoch", str(path), "--json"]
    src = str(ROOT / "src")
    cmds["ours"] = (epoch, _env(PYTHONPATH=src))
    cmds["pure"] = (epoch, _env(PYTHONPATH=src, TRAINPROOF_COLUMNAR="0"))
    if base is not None:
        cmds["base"] = (epoch, _env(PYTHONPATH=str(base)))
    if old is not None and fmt in _OLD_FORMATS:
        cmds["0.22"] = ([*old, str(path), "--json"], _env(PYTHONPATH=""))
    cmds["start-up"] = ([PY, "-m", "trainproof", "epoch", str(tiny), "--json"], _env(PYTHONPATH=src))
    got: dict[str, list[tuple[float, float, float]]] = {k: [] for k in cmds}
    for _ in range(rounds):
        for name, (argv, env) in cmds.items():
            wall, cpu, rc, rss = run(argv, env)
            if rc not in (0, 1) and name not in ("polars", "0.22"):
                raise SystemExit(f"{name} exited {rc} on {path}")
            got[name].append((wall, cpu, rss))
    return got


def _med(xs) -> float:
    return statistics.median(xs)


def _per_round(got: dict, a: str, b: str, i: int = 0) -> list[float]:
    """``a``'s figure over ``b``'s in each round (``i``: 0 wall, 1 CPU)."""
    return [x[i] / y[i] for x, y in zip(got[a], got[b])]


def report(fmt: str, steps: int, path: Path, got: dict) -> list[str]:
    mb = path.stat().st_size / 1e6
    out = [
        f"\n## {fmt}, {steps:,} steps ({mb:.1f} MB)",
        "",
        "| command | wall s | cpu s | peak RSS MB |",
        "|---|---:|---:|---:|",
    ]
    for name, xs in got.items():
        out.append(
            f"| {name} | {_med(x[0] for x in xs):.3f} | {_med(x[1] for x in xs):.3f} | {_med(x[2] for x in xs):.0f} |"
        )
    out.append("")

    def ratios(a: str, b: str, i: int) -> list[float]:
        return _per_round(got, a, b, i)

    lines = []
    if "polars" in got:
        for i, what in ((0, "wall"), (1, "cpu")):
            r = ratios("ours", "polars", i)
            lines.append(
                f"ours / polars ({what}), per round: {', '.join(f'{x:.2f}' for x in r)}; median **{_med(r):.2f}**"
            )
    if "base" in got:
        r = ratios("ours", "base", 0)
        lines.append(
            f"ours / base (wall), per round: {', '.join(f'{x:.2f}' for x in r)}; median **{_med(r):.2f}** "
            "(base: the src directory given, the code at the issue for Coqui and console)"
        )
        r = ratios("pure", "base", 0)
        lines.append(f"pure / base (wall), per round: {', '.join(f'{x:.2f}' for x in r)}; median **{_med(r):.2f}**")
    lines += [f"target: {label}: {measured}; {status}" for label, measured, status in targets(fmt, steps, got)]
    r = ratios("ours", "pure", 0)
    lines.append(f"ours / pure (wall), per round: {', '.join(f'{x:.2f}' for x in r)}; median **{_med(r):.2f}**")
    return out + [f"- {x}" for x in lines]


#: Why a reader misses its issue-36 target, measured by profiling one ``epoch`` process
#: (``bench/run_bench.py --profile FILE``) on this machine; shown where a target is missed.
GAP_CAUSES = {
    "polars": "polars only parses; ours also starts up and judges (the start-up row: trainproof's imports and the "
    "judging of a 10-line log), proves each chunk plain before polars may take it (~0.24 s at 1e6 CSV), builds "
    "the RunLog (~0.3-0.4 s) and judges it (~0.15 s)",
    "0.22": "at 1e5 steps most of ours' time is its start-up (the start-up row) and the judging of every point by "
    "every rule, where 0.22 imports little and computes a few statistics; at 1e6 it is the read itself (where "
    "a read's time goes: the rows above and the causes of the records/s targets): ours takes 0.15-0.42 of 0.22's "
    "time there, not 0.10",
    "base": "the reader was not changed: one regular expression per chunk already matches whole blocks (Coqui) "
    "or lines (console); what is left is that regular expression, the checks that a chunk holds only such "
    "blocks and float() of each value word, in Python",
}


def targets(fmt: str, steps: int, got: dict) -> list[tuple[str, str, str]]:
    """The issue-36 target rows ``(target, measured, status)`` for one format and size;
    the status names the measured cause where a target is missed."""
    out = []
    fixed = _med(x[0] for x in got["start-up"])
    ours = _med(x[0] for x in got["ours"])
    for other, need, label in (
        ("polars", 1.5, f"{fmt} at {steps:,} steps within 1.5x of polars reading the same file (wall)"),
        ("0.22", 0.10, f"{fmt} at {steps:,} steps in at most 0.10 of trainproof 0.22's time (wall)"),
        ("base", 0.5, f"{fmt} at {steps:,} steps at least 2x as fast as at the issue (ours / base <= 0.5)"),
    ):
        # the 2x target is the Coqui and console readers' (a base of another format is a plain comparison)
        if other not in got or (other == "base" and fmt not in ("coqui", "console")):
            continue
        r = _per_round(got, "ours", other)
        m = _med(r)
        ok = m <= need
        theirs = _med(x[0] for x in got[other])
        out.append(
            (
                label,
                f"{m:.3g}x (per round {', '.join(f'{x:.3g}' for x in r)}; ours {ours:.2f} s of which start-up "
                f"{fixed:.2f} s, {other} {theirs:.2f} s)",
                "**met**" if ok else f"**not met**; cause: {GAP_CAUSES[other]}",
            )
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--formats", default="jsonl,csv", help="comma-separated: jsonl, csv, hf, tfevents, coqui, console")
    ap.add_argument("--sizes", default="1e5,1e6", help="steps, comma-separated")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "trainproof-bench-readers"))
    ap.add_argument("--base", help="another trainproof's src directory, measured as 'base'")
    ap.add_argument("--polars-full", action="store_true", help="polars infers the JSONL schema from every line")
    ap.add_argument(
        "--old",
        help="the command of trainproof 0.22's epoch, FILE and --json appended (e.g. '/tmp/tp022/bin/trainproof "
        "epoch'; install it in a venv of its own: python -m venv /tmp/tp022 && /tmp/tp022/bin/pip install "
        "trainproof==0.22.0)",
    )
    args = ap.parse_args(argv)
    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    tiny = data / "tiny.jsonl"
    tiny.write_text("".join(f'{{"step": {i}, "loss": {1 / i}}}\n' for i in range(1, 11)))
    base = Path(args.base).resolve() if args.base else None
    print(f"# Readers vs polars ({PY}; {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.2f})")
    for fmt in args.formats.split(","):
        for size in args.sizes.split(","):
            steps = int(float(size))
            path = log_file(fmt, steps, data)
            got = bench(
                fmt, path, args.rounds, base, tiny, args.polars_full, shlex.split(args.old) if args.old else None
            )
            print("\n".join(report(fmt, steps, path, got)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
