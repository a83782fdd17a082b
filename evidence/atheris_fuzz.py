#!/usr/bin/env python3
"""Coverage-guided fuzzing of the readers with atheris (libFuzzer for Python).

Targets, each run for a fixed time budget in its own process:

* ``tfrecord``: the TFRecord framing and the Event protobuf decoding
  (``trainproof.formats._tfrecord.record_batches`` + ``_event_proto.parse_simple`` /
  ``parse_event``, as ``tfevents._read_file`` calls them), on the bytes as given;
* ``tfevents``: ``read_runlog`` of the bytes written as an event file;
* ``json``: ``read_runlog`` of the bytes as ``trainer_state.json`` and as
  ``metrics.jsonl`` (format sniffed, so every reader's sniffing is in the path);
* ``csv``: ``read_runlog(..., fmt="csv")`` of the bytes as ``metrics.csv``, and the
  CSV row parser (``RowParser``) on the rows the ``csv`` module makes of them;
* ``wandb``: ``read_runlogs`` of an older W&B client's run folder whose
  ``files/wandb-history.jsonl`` and ``files/wandb-summary.json`` are the bytes;
* ``sqlite``: ``read_runlogs`` of the bytes as an ``mlflow.db`` and as a Trackio
  ``<project>.db`` (seeds: valid stores of both);
* ``mlflow_rest``: the bytes as the answers of an MLflow tracking server's REST API
  (``runs/get`` and ``metrics/get-history`` of one run), through the parsing
  ``mlflow_server`` applies to them, without a network.

The only exceptions a reader may raise are ``ReadError`` / ``MappingError`` (and, inside
the event decoding, the ones ``_read_file`` turns into a skipped record); anything else is a
crash: libFuzzer stops, writes the input to ``evidence/atheris-crashes/<target>/``, and the
input becomes a regression test. Seeds are the valid logs of ``tests/_fuzz_logs.py``.

Usage (from the repository root)::

    .venv/bin/python evidence/atheris_fuzz.py                     # every target, 60 s each
    .venv/bin/python evidence/atheris_fuzz.py --seconds 30 csv    # one target
    .venv/bin/python evidence/atheris_fuzz.py --json out.json     # results as JSON too

atheris is not a dependency: ``pip install atheris -c .ci/constraints.txt`` (a binary
wheel for CPython 3.8-3.11 on x86-64 Linux; other platforms build it with clang).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ("tfrecord", "tfevents", "json", "csv", "wandb", "sqlite", "mlflow_rest")
CRASHES = ROOT / "evidence" / "atheris-crashes"


def _seeds(target: str) -> list[bytes]:
    sys.path.insert(0, str(ROOT / "tests"))
    import _fuzz_logs as F

    if target in ("tfrecord", "tfevents"):
        return [F.valid("tfevents", k) for k in F.KINDS] + [F.valid("tfevents_hand", k) for k in F.KINDS]
    if target == "json":
        return [F.valid(r, k) for r in ("hf", "jsonl") for k in F.KINDS]
    if target == "wandb":
        return [F.valid("jsonl", k) for k in F.KINDS]
    if target == "sqlite":
        return [F.valid(r, k) for r in ("mlflow_db", "trackio") for k in F.KINDS]
    if target == "mlflow_rest":
        pts = [{"key": "loss", "value": 2.0 / (s + 1), "timestamp": s, "step": s} for s in range(20)]
        run = {"info": {"run_id": "abc", "run_name": "r", "experiment_id": "7", "start_time": 1}, "data": {}}
        return [json.dumps({"metrics": pts}).encode(), json.dumps({"run": run}).encode()]
    return [F.valid(r, k) for r in ("csv", "csv_lightning", "csv_keras", "csv_wandb") for k in F.KINDS]


def _child(target: str, seconds: int, corpus: Path, crash_dir: Path) -> None:
    """Runs inside the fuzzing process."""
    import atheris

    with atheris.instrument_imports():
        import csv

        from trainproof import mlflow_server
        from trainproof.aliases import MappingError
        from trainproof.api import read_runlog, read_runlogs
        from trainproof.formats import ReadError, _event_proto, _tfrecord
        from trainproof.formats import csv as csv_fmt

    work = Path(tempfile.mkdtemp(prefix="atheris-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))

    def read(name: str, data: bytes, fmt: str = "auto") -> None:
        p = work / name
        p.write_bytes(data)
        try:
            read_runlog(p, fmt)
        except (ReadError, MappingError):
            pass

    def tfrecord(data: bytes) -> None:
        tail = _tfrecord.Tail()
        plugins: dict = {}
        for batch in _tfrecord.record_batches(io.BytesIO(data), tail):
            for payload in batch:
                if _event_proto.parse_simple(payload) is None:
                    try:
                        _event_proto.parse_event(payload, plugins)
                    except (_event_proto.ProtoError, ValueError, OverflowError):
                        pass  # the struct.error/ValueError/OverflowError _read_file skips
        assert tail.records >= 0 and tail.dropped_bytes >= 0

    def wandb(data: bytes) -> None:
        files = work / "run-20240101_000000-fuzz01" / "files"
        files.mkdir(parents=True, exist_ok=True)
        (files / "wandb-history.jsonl").write_bytes(data)
        (files / "wandb-summary.json").write_bytes(data)
        try:
            read_runlogs(files.parent)
        except (ReadError, MappingError):
            pass

    def sqlite(data: bytes) -> None:
        for name in ("mlflow.db", "proj.db"):
            p = work / name
            p.write_bytes(data)
            try:
                read_runlogs(p)
            except (ReadError, MappingError):
                pass

    def mlflow_rest(data: bytes) -> None:
        # What _call returns for an answer, then what _read_run and _history do with it.
        try:
            doc = mlflow_server._json_object("fuzz", data)
            run = doc.get("run")
            if isinstance(run, dict):
                mlflow_server._run_of(run, "runs/get")
            for m in mlflow_server._field(doc, "metrics", list, "fuzz", []):
                if isinstance(m, dict):
                    mlflow_server._step(m)
                    mlflow_server._value(m.get("value", 0.0))
        except ReadError:
            pass

    def one(data: bytes) -> None:
        if target == "wandb":
            wandb(data)
        elif target == "sqlite":
            sqlite(data)
        elif target == "mlflow_rest":
            mlflow_rest(data)
        elif target == "tfrecord":
            tfrecord(data)
        elif target == "tfevents":
            read("events.out.tfevents.1.host.1.0", data)
        elif target == "json":
            read("trainer_state.json", data)
            read("metrics.jsonl", data)
        else:
            read("metrics.csv", data, "csv")
            text = data.decode("utf-8", "replace")
            parser = csv_fmt.RowParser(csv_fmt._delimiter(text.split("\n", 1)[0]) or ",")
            try:
                for i, row in enumerate(csv.reader(io.StringIO(text, newline=""), delimiter=parser.delimiter)):
                    parser.row(row, i + 1)
            except (ReadError, csv.Error):
                pass

    atheris.Setup(
        [
            sys.argv[0],
            str(corpus),
            f"-max_total_time={seconds}",
            "-print_final_stats=1",
            "-rss_limit_mb=2048",
            "-timeout=20",
            "-max_len=65536",
            f"-artifact_prefix={crash_dir}/",
        ],
        one,
    )
    atheris.Fuzz()


def run_target(target: str, seconds: int) -> dict:
    """Fuzz one target in a child process; returns its figures."""
    crash_dir = CRASHES / target
    crash_dir.mkdir(parents=True, exist_ok=True)
    corpus = Path(tempfile.mkdtemp(prefix=f"atheris-corpus-{target}-"))
    for i, s in enumerate(_seeds(target)):
        (corpus / f"seed{i}").write_bytes(s)
    before = set(crash_dir.iterdir())
    t0 = time.monotonic()
    p = subprocess.run(
        [sys.executable, __file__, "--child", target, "--seconds", str(seconds), "--corpus", str(corpus)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=seconds * 3 + 120,
    )
    secs = time.monotonic() - t0
    err = p.stderr
    stat = dict(re.findall(r"stat::(\w+):\s+(\d+)", err))
    cov = re.findall(r"cov: (\d+) ft: (\d+)", err)
    crashes = sorted(str(c.relative_to(ROOT)) for c in set(crash_dir.iterdir()) - before)
    if not crashes and not any(crash_dir.iterdir()):
        crash_dir.rmdir()
    summary = [ln for ln in err.splitlines() if "ERROR" in ln or "Uncaught" in ln or "Traceback" in ln][:5]
    return {
        "target": target,
        "seconds": round(secs, 1),
        "budget_s": seconds,
        "exit": p.returncode,
        "executions": int(stat.get("number_of_executed_units", 0)),
        "coverage": int(cov[-1][0]) if cov else None,
        "features": int(cov[-1][1]) if cov else None,
        "corpus_inputs": len(list(corpus.iterdir())),
        "crashes": crashes,
        "errors": summary,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("targets", nargs="*", help=f"some of {', '.join(TARGETS)} (default: all)")
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--child", choices=TARGETS)
    ap.add_argument("--corpus", type=Path)
    a = ap.parse_args(argv)
    a.targets = a.targets or list(TARGETS)
    for t in a.targets:
        if t not in TARGETS:
            ap.error(f"unknown target {t!r}; known: {', '.join(TARGETS)}")
    if a.child:
        sys.argv = [sys.argv[0]]
        _child(a.child, a.seconds, a.corpus, CRASHES / a.child)
        return 0
    try:
        import atheris  # noqa: F401 - only whether it is installed
    except ImportError as e:
        res = {"error": f"atheris is not installed: {e}"}
        print(res["error"])
        if a.json:
            a.json.write_text(json.dumps(res, indent=2))
        return 2
    results = []
    for t in a.targets:
        r = run_target(t, a.seconds)
        results.append(r)
        print(
            f"{t}: {r['executions']} executions in {r['seconds']} s, coverage {r['coverage']}, "
            f"crashes {len(r['crashes'])}, exit {r['exit']}",
            flush=True,
        )
    if a.json:
        a.json.write_text(json.dumps(results, indent=2))
    if CRASHES.is_dir() and not any(CRASHES.iterdir()):
        CRASHES.rmdir()
    return 1 if any(r["crashes"] or r["exit"] not in (0,) for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
