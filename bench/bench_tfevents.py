#!/usr/bin/env python3
"""Benchmark: trainproof's event-file reader vs TensorBoard's EventAccumulator.

Generates a TensorBoard event file with ``--scalars`` scalars (default 1,000,000: 250,000
steps x 4 tags ``train/loss``, ``train/lr``, ``train/grad_norm``, ``eval/loss``), byte for
byte in the format ``torch.utils.tensorboard.SummaryWriter.add_scalar`` writes (checked at
start-up against a small file SummaryWriter really wrote, when torch is installed), then
measures, each run in a fresh subprocess:

* A, ours: ``trainproof.api.read_runlog(path)``;
* B, TensorBoard: ``EventAccumulator(path, size_guidance={"scalars": 0}).Reload()``;

wall time of the read, scalars/s, and peak RSS (``ru_maxrss`` of the child after the read
minus ``ru_maxrss`` after the child's imports: trainproof + numpy for A, the
EventAccumulator module + numpy for B). Runs alternate A B A B ... (``--repeat`` pairs) so
a drifting machine speed hits both alike; medians and per-pair ratios are printed.

Usage (from the repository root)::

    .venv/bin/python bench/bench_tfevents.py                      # 1M scalars, 3 pairs
    .venv/bin/python bench/bench_tfevents.py --scalars 200000 --repeat 1
    .venv/bin/python bench/bench_tfevents.py --out /tmp/tfbench  # keep the event file there
    .venv/bin/python bench/bench_tfevents.py --profile --scalars 200000 --repeat 0
                                                                  # cProfile + phase split of ours

The file is read from the page cache (it was just written): this measures CPU, not disk.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TAGS = ("train/loss", "train/lr", "train/grad_norm", "eval/loss")
WRITER = "tensorboard.summary.writer.event_file_writer"  # what SummaryWriter records as source
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z: fixed, so the file is reproducible


# --------------------------------------------------------------------------- generation

_MASK_DELTA = 0xA282EAD8


def _masked_crc(data: bytes) -> int:
    import google_crc32c

    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def frame(payload: bytes) -> bytes:
    """One TFRecord: length, masked CRC-32C of the length, payload, masked CRC-32C of it."""
    head = struct.pack("<Q", len(payload))
    return b"".join((head, struct.pack("<I", _masked_crc(head)), payload, struct.pack("<I", _masked_crc(payload))))


class Encoder:
    """Events as ``SummaryWriter`` builds them, with TensorBoard's own proto classes.

    ``add_scalar(tag, v, step)`` -> ``Event(wall_time, step, summary=Summary(value=[
    Summary.Value(tag, simple_value=v)]))``; the file starts with ``Event(wall_time,
    file_version="brain.Event:2", source_metadata={writer: ...})``. One Event object is
    reused (field assignment is much cheaper than construction); serialization is
    protobuf's own, so the bytes are the ones SummaryWriter's writer thread would write.
    """

    def __init__(self) -> None:
        from tensorboard.compat.proto import event_pb2

        self._event_pb2 = event_pb2
        self.ev = event_pb2.Event()
        self.val = self.ev.summary.value.add()

    def header(self, wall: float) -> bytes:
        ev = self._event_pb2.Event(wall_time=wall, file_version="brain.Event:2")
        ev.source_metadata.writer = WRITER
        return ev.SerializeToString()

    def scalar(self, wall: float, step: int, tag: str, value: float) -> bytes:
        ev, val = self.ev, self.val
        ev.wall_time = wall
        ev.step = step
        val.tag = tag
        val.simple_value = value
        return ev.SerializeToString()


def _series(steps: int):
    """Realistic float32 curves (fixed seed): noisy decaying loss, warmup+cosine lr,
    log-normal grad norm with a few spikes, a smoother eval loss."""
    import numpy as np

    rng = np.random.default_rng(0)
    t = np.arange(steps, dtype=np.float64)
    frac = t / max(steps - 1, 1)
    loss = 0.9 + 2.6 * np.exp(-frac * 6.0) + rng.normal(0, 0.08, steps)
    warm = max(steps // 100, 1)
    lr = np.where(t < warm, 3e-4 * (t + 1) / warm, 3e-4 * 0.5 * (1 + np.cos(np.pi * frac)))
    gn = rng.lognormal(mean=0.0, sigma=0.35, size=steps) * (1.0 + 2.0 * np.exp(-frac * 20))
    gn[rng.integers(0, steps, size=max(steps // 5000, 1))] *= 25.0
    ev = 1.0 + 2.5 * np.exp(-frac * 5.5) + rng.normal(0, 0.01, steps)
    return [a.astype(np.float32).tolist() for a in (loss, lr, gn, ev)]


def generate(path: Path, n_scalars: int) -> tuple[int, float]:
    """Write ``n_scalars`` scalars (4 per step, the last step possibly partial)."""
    steps = -(-n_scalars // len(TAGS))
    cols = _series(steps)
    enc = Encoder()
    t0 = time.perf_counter()
    written = 0
    with open(path, "wb") as f:
        f.write(frame(enc.header(T0)))
        chunk: list[bytes] = []
        for s in range(steps):
            wall = T0 + 1.0 + s * 0.25  # ~4 steps/s
            for j, tag in enumerate(TAGS):
                if written == n_scalars:
                    break
                chunk.append(frame(enc.scalar(wall + j * 1e-4, s, tag, cols[j][s])))
                written += 1
            if len(chunk) >= 65536:
                f.write(b"".join(chunk))
                chunk.clear()
        f.write(b"".join(chunk))
    return written, time.perf_counter() - t0


def verify_format(tmp: Path) -> str:
    """Byte-compare our records with what SummaryWriter writes for the same events."""
    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        return "format check skipped: torch is not installed"
    from tensorboard.compat.proto import event_pb2

    d = tmp / "summarywriter"
    w = SummaryWriter(str(d))
    vals = _series(50)
    for s in range(50):
        for j, tag in enumerate(TAGS):
            w.add_scalar(tag, vals[j][s], s)
    w.close()
    (f,) = list(d.iterdir())
    data = f.read_bytes()
    enc = Encoder()
    pos, n = 0, 0
    while pos < len(data):
        (length,) = struct.unpack_from("<Q", data, pos)
        rec = data[pos : pos + 16 + length]
        ev = event_pb2.Event.FromString(rec[12 : 12 + length])
        if ev.HasField("summary"):
            (v,) = ev.summary.value
            ours = enc.scalar(ev.wall_time, ev.step, v.tag, v.simple_value)
        else:
            if ev.source_metadata.writer != WRITER:
                return f"format check FAILED: SummaryWriter's header names writer {ev.source_metadata.writer!r}"
            ours = enc.header(ev.wall_time)
        if frame(ours) != rec:
            return f"format check FAILED at record {n + 1}: our bytes differ from SummaryWriter's"
        pos += 16 + length
        n += 1
    return f"format check: all {n} records of a SummaryWriter file (torch) re-encode byte-identically"


# --------------------------------------------------------------------------- children


def _hwm() -> int:
    """VmHWM of this process (bytes): the kernel's per-address-space peak, a cross-check
    of ru_maxrss that cannot inherit a parent's peak."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _child(kind: str, path: str) -> None:
    import resource

    import numpy  # noqa: F401 - part of the baseline on both sides

    if kind == "ours":
        from trainproof.api import read_runlog
    else:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    base_hwm = _hwm()
    t0 = time.perf_counter()
    if kind == "ours":
        run = read_runlog(path)
        n = sum(len(s) for s in run.series.values())
    else:
        ea = EventAccumulator(path, size_guidance={"scalars": 0})
        ea.Reload()
        n = sum(len(ea.Scalars(t)) for t in ea.Tags()["scalars"])
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(
        json.dumps(
            {"kind": kind, "wall": wall, "base": base, "peak": peak, "scalars": n, "hwm_delta": _hwm() - base_hwm}
        )
    )


def _generate_child(path: str, n: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="tp_bench_fmt_"))
    try:
        check = verify_format(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    written, secs = generate(Path(path), n)
    print(json.dumps({"check": check, "written": written, "secs": secs}))


def _measure(kind: str, path: Path) -> dict:
    r = subprocess.run([sys.executable, __file__, "--child", kind, str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{kind} child failed:\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _profile_child(path: str, top: int) -> None:
    """Phase split and cProfile of ours, in this (fresh) process."""
    import cProfile
    import pstats

    from trainproof.api import read_runlog
    from trainproof.formats import ReadState, _tfrecord, tfevents
    from trainproof.formats._event_proto import parse_event
    from trainproof.runlog import build_runlog

    def timed(fn, *args):
        t = time.perf_counter()
        out = fn(*args)
        return out, time.perf_counter() - t

    def frames():
        tail = _tfrecord.Tail()
        with open(path, "rb") as f:
            return list(_tfrecord.records(f, tail))

    def decode(payloads):
        plugins: dict = {}
        return [parse_event(p, plugins) for p in payloads]

    payloads, t_frame = timed(frames)
    _, t_parse = timed(decode, payloads)
    payloads = None
    recs, t_read = timed(lambda: list(tfevents.read(Path(path), ReadState())))
    _, t_build = timed(build_runlog, recs, path, "tfevents")
    recs = None
    _, t_total = timed(read_runlog, path)
    print("phases (separate passes, seconds):")
    print(f"  framing + CRC-32C (_tfrecord.records, payloads kept)  {t_frame:7.2f}")
    print(f"  protobuf decode (parse_event on every payload)        {t_parse:7.2f}")
    print(f"  tfevents.read -> list of Records (the two above + tuple list + Records) {t_read:7.2f}")
    print(f"  build_runlog (Records -> numpy columns)               {t_build:7.2f}")
    print(f"  read_runlog end to end                                {t_total:7.2f}")
    pr = cProfile.Profile()
    pr.enable()
    read_runlog(path)
    pr.disable()
    for key in ("tottime", "cumulative"):
        print(f"\ncProfile of read_runlog, top {top} by {key}:")
        pstats.Stats(pr, stream=sys.stdout).strip_dirs().sort_stats(key).print_stats(top)


# --------------------------------------------------------------------------- driver


def _mb(b: float) -> str:
    return f"{b / 2**20:7.1f} MiB"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scalars", type=int, default=1_000_000, help="scalars in the file (default %(default)s)")
    ap.add_argument("--repeat", type=int, default=3, help="A/B pairs to run (default %(default)s)")
    ap.add_argument("--out", help="directory to write (and keep) the event file in; default: a temp dir")
    ap.add_argument("--profile", action="store_true", help="also cProfile ours and split it into phases")
    ap.add_argument("--top", type=int, default=25, help="functions to list with --profile")
    ap.add_argument("--child", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    ap.add_argument("--profile-child", metavar="PATH", help=argparse.SUPPRESS)
    ap.add_argument("--generate-child", nargs=2, metavar=("PATH", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(*args.child)
        return 0
    if args.profile_child:
        _profile_child(args.profile_child, args.top)
        return 0
    if args.generate_child:
        _generate_child(args.generate_child[0], int(args.generate_child[1]))
        return 0
    if args.scalars < 1:
        ap.error("--scalars must be positive")

    # This driver stays small (no numpy/tensorboard/torch imports, generation in a child):
    # on Linux a child's ru_maxrss starts from its parent's peak at fork/exec time.
    from importlib import metadata

    vers = []
    for dist in ("trainproof", "tensorboard", "protobuf", "numpy", "google-crc32c"):
        try:
            vers.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            vers.append(f"{dist} missing")
    print(f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; {', '.join(vers)}")
    tmp = Path(tempfile.mkdtemp(prefix="tp_bench_tfevents_"))
    try:
        out_dir = Path(args.out) if args.out else tmp
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / f"events.out.tfevents.{int(T0)}.bench.{args.scalars}.0"
        g = subprocess.run(
            [sys.executable, __file__, "--generate-child", str(path), str(args.scalars)], capture_output=True, text=True
        )
        if g.returncode != 0:
            sys.exit(f"generation failed:\n{g.stderr}")
        gen = json.loads(g.stdout.strip().splitlines()[-1])
        print(gen["check"])
        n, t_gen = gen["written"], gen["secs"]
        size = path.stat().st_size
        print(
            f"generated {n:,} scalars ({-(-n // len(TAGS)):,} steps x {len(TAGS)} tags) in {t_gen:.1f}s: "
            f"{path} ({size / 2**20:.1f} MiB, {size / n:.1f} bytes/scalar)"
        )

        results: dict[str, list[dict]] = {"ours": [], "ea": []}
        for i in range(args.repeat):
            for kind in ("ours", "ea"):
                r = _measure(kind, path)
                if r["scalars"] != n:
                    print(f"  WARNING: {kind} returned {r['scalars']:,} scalars, expected {n:,}")
                r["rate"] = r["scalars"] / r["wall"]
                r["delta"] = r["peak"] - r["base"]
                results[kind].append(r)
                name = "ours (read_runlog)         " if kind == "ours" else "TensorBoard EventAccumulator"
                print(
                    f"  pair {i + 1} {'A' if kind == 'ours' else 'B'} {name}: {r['wall']:7.2f}s  "
                    f"{r['rate']:>11,.0f} scalars/s  peak RSS +{_mb(r['delta'])} "
                    f"({r['delta'] / n:6.1f} B/scalar; baseline {_mb(r['base']).strip()}; "
                    f"VmHWM +{_mb(r['hwm_delta']).strip()})",
                    flush=True,
                )

        if args.repeat:
            ours, ea = results["ours"], results["ea"]
            ratios = [a["rate"] / b["rate"] for a, b in zip(ours, ea)]
            med = statistics.median
            print(f"\nSummary ({n:,} scalars, {size / 2**20:.1f} MiB, {args.repeat} alternating pairs, medians):")
            print(
                f"  ours  read_runlog:       {med(r['wall'] for r in ours):7.2f}s  "
                f"{med(r['rate'] for r in ours):>11,.0f} scalars/s  "
                f"peak RSS +{_mb(med(r['delta'] for r in ours))}  "
                f"= {med(r['delta'] for r in ours) / n:.1f} bytes/scalar"
            )
            print(
                f"  TB    EventAccumulator:  {med(r['wall'] for r in ea):7.2f}s  "
                f"{med(r['rate'] for r in ea):>11,.0f} scalars/s  "
                f"peak RSS +{_mb(med(r['delta'] for r in ea))}  "
                f"= {med(r['delta'] for r in ea) / n:.1f} bytes/scalar"
            )
            print(
                f"  speed ratio ours/EA per pair: {', '.join(f'{x:.2f}x' for x in ratios)}; median {med(ratios):.2f}x"
            )
            print(
                f"  our peak memory: {med(r['delta'] for r in ours) / n:.1f} bytes per scalar "
                f"(EA: {med(r['delta'] for r in ea) / n:.1f})"
            )

        if args.profile:
            print(f"\nProfiling ours on {n:,} scalars (fresh process):", flush=True)
            subprocess.run([sys.executable, __file__, "--profile-child", str(path), "--top", str(args.top)], check=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
