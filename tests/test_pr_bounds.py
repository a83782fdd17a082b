"""Bounds that make trainproof safe to run on a pull request's files (issue 17).

Each hostile input is built in ``tmp_path`` and the command runs in a child process with
a deadline, so a hang fails the test instead of hanging the suite. Peak memory is the
child's own ``ru_maxrss``, measured by a small wrapper process so that earlier children
of the test process do not count.
"""
from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")
#: Generous: the machine running the tests may be loaded.
DEADLINE = 120

_MEASURE = """
import resource, subprocess, sys
p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
sys.stderr.buffer.write(p.stderr)
sys.stdout.buffer.write(p.stdout)
print("\\nMAXRSS_KB", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
sys.exit(p.returncode)
"""


def _env(**extra: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def run_cli(args, cwd=None, timeout=DEADLINE, **env):
    """``(returncode, stdout, stderr, peak MB)`` of ``python -m trainproof ARGS``."""
    p = subprocess.run([sys.executable, "-c", _MEASURE, sys.executable, "-m", "trainproof", *map(str, args)],
                       capture_output=True, text=True, timeout=timeout, cwd=cwd, env=_env(**env))
    err, _, rss = p.stderr.rpartition("MAXRSS_KB")
    return p.returncode, p.stdout, err, int(rss.strip() or 0) / 1024


def _gzip(path: Path, head: bytes, filler: bytes, mib: int) -> Path:
    with gzip.open(path, "wb", compresslevel=9) as f:
        f.write(head)
        block = filler * ((1 << 20) // len(filler))
        for _ in range(mib):
            f.write(block)
    return path


# --- 1. decompression --------------------------------------------------------------------

def test_jsonl_gz_of_newlines_is_read_in_seconds_and_little_memory(tmp_path):
    # 1 GiB of newlines in about 1 MB on disk; the old reader spent minutes per GiB.
    p = _gzip(tmp_path / "run.jsonl.gz", b'{"step": 1, "loss": 0.5}\n{"step": 2, "loss": 0.4}\n', b"\n", 1024)
    assert p.stat().st_size < 2 << 20
    t0 = time.monotonic()
    code, out, err, mb = run_cli(["epoch", p, "--json"])
    assert time.monotonic() - t0 < DEADLINE
    doc = json.loads(out)
    assert doc["reports"][0]["format"] == "jsonl", err
    assert mb < 400


def test_console_gz_of_blank_lines_is_read_fast(tmp_path):
    p = tmp_path / "train.log.gz"
    with gzip.open(p, "wb", compresslevel=9) as f:
        f.write(b"step 1 loss 0.9\n")
        f.write(b" \n" * (128 << 20))  # 256 MiB of blank lines
        f.write(b"step 2 loss 0.8\n")
    code, out, err, mb = run_cli(["epoch", p, "--json"])
    rep = json.loads(out)["reports"][0]
    assert rep["format"] == "console", err
    assert mb < 400


def test_gzip_past_the_cap_is_cut_with_a_dropped_note(tmp_path):
    # ~100 MiB of one-digit rows: without a cap over a GB of memory for the rows.
    p = _gzip(tmp_path / "metrics.csv.gz", b"step,loss\n", b"1,0.5\n", 100)
    code, out, err, mb = run_cli(["epoch", p, "--json"], TRAINPROOF_MAX_DECOMPRESSED="8M")
    doc = json.loads(out)
    rep = doc["reports"][0]
    assert rep["format"] == "csv", err
    dropped = [f for f in rep["findings"] if f["id"] == "TP-DATA-DROPPED"]
    assert dropped and "8,388,608 bytes" in json.dumps(dropped[0]), rep["findings"]
    assert mb < 400


def test_a_bad_decompression_cap_is_a_clean_error(tmp_path):
    p = _gzip(tmp_path / "metrics.csv.gz", b"step,loss\n", b"1,0.5\n", 1)
    code, out, err, _ = run_cli(["epoch", p], TRAINPROOF_MAX_DECOMPRESSED="lots")
    assert code == 2
    assert "TRAINPROOF_MAX_DECOMPRESSED" in out + err
    assert "Traceback" not in err
