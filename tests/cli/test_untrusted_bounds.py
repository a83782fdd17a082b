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
import zlib
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")
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
    # No empty entry: it would mean the current directory, which one test removes.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, env.get("PYTHONPATH", "")) if p)
    env.update(extra)
    return env


def run_cli(args, cwd=None, timeout=DEADLINE, **env):
    """``(returncode, stdout, stderr, peak MB)`` of ``python -m trainproof ARGS``."""
    p = subprocess.run(
        [sys.executable, "-c", _MEASURE, sys.executable, "-m", "trainproof", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=_env(**env),
    )
    err, _, rss = p.stderr.rpartition("MAXRSS_KB")
    return p.returncode, p.stdout, err, int(rss.strip() or 0) / 1024


def _gzip(path: Path, head: bytes, filler: bytes, mib: int) -> Path:
    """A gzip file of ``head`` then ``mib`` MiB of ``filler`` repeated, at level 9. A
    filler of one byte repeated is deflated run-length (``Z_RLE``): as small as level 9's
    search makes it (about 1 KB per MiB) in less than half its time."""
    rle = len(set(filler)) == 1
    comp = zlib.compressobj(9, zlib.DEFLATED, 31, 9, zlib.Z_RLE if rle else zlib.Z_DEFAULT_STRATEGY)
    block = filler * ((1 << 20) // len(filler))
    with open(path, "wb") as f:
        f.write(comp.compress(head))
        for _ in range(mib):
            f.write(comp.compress(block))
        f.write(comp.flush())
    return path


# --- 1. decompression --------------------------------------------------------------------


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_bad_decompression_cap_is_a_clean_error(tmp_path):
    p = _gzip(tmp_path / "metrics.csv.gz", b"step,loss\n", b"1,0.5\n", 1)
    code, out, err, _ = run_cli(["epoch", p], TRAINPROOF_MAX_DECOMPRESSED="lots")
    assert code == 2
    assert "TRAINPROOF_MAX_DECOMPRESSED" in out + err
    assert "Traceback" not in err


# --- 2. FIFOs and devices ------------------------------------------------------------------


def test_a_fifo_in_a_logs_place_is_a_read_error_not_a_hang(tmp_path):
    from trainproof.formats._io import ReadError, open_binary, read_head

    fifo = tmp_path / "run.jsonl"
    os.mkfifo(fifo)  # no writer: a blocking open() would never return
    with pytest.raises(ReadError, match="not a regular file"):
        open_binary(fifo)
    with pytest.raises(ReadError, match="not a regular file"):
        read_head(fifo)


@pytest.mark.slow
def test_doctor_over_an_mlflow_metric_that_is_a_fifo_does_not_hang(tmp_path):
    run = tmp_path / "mlruns" / "0" / "abc"
    (run / "metrics").mkdir(parents=True)
    (run / "meta.yaml").write_text("run_id: abc\n")
    (run / "metrics" / "loss").write_text("".join(f"{1000 + s} {2.0 * 0.99**s} {s}\n" for s in range(100)))
    os.mkfifo(run / "metrics" / "lr")
    code, out, err, _ = run_cli(["doctor", tmp_path, "--json"], timeout=DEADLINE)
    assert code in (0, 1, 2)
    assert "Traceback" not in err


@pytest.mark.slow
def test_watch_on_a_fifo_or_a_directory_is_a_usage_error(tmp_path):
    fifo = tmp_path / "run.jsonl"
    os.mkfifo(fifo)
    for target in (fifo, tmp_path):
        code, out, err, _ = run_cli(["watch", target, "--interval", "0.1"], timeout=DEADLINE)
        assert code == 2
        assert "watch follows one log file" in err


# --- 3. watch ------------------------------------------------------------------------------


def _rows(n):
    return [{"step": s, "loss": 2.0 * 0.99**s} for s in range(1, n + 1)]


def test_watch_reads_a_utf16_log_as_epoch_does(tmp_path):
    from trainproof.live.guardian import Guardian
    from trainproof.live.tail import LogTail

    p = tmp_path / "run.jsonl"
    # PowerShell's `>` writes UTF-16 LE with a BOM; U+010A holds a 0x0A byte.
    text = "".join(json.dumps({**r, "note": "\u010a"}) + "\r\n" for r in _rows(200))
    data = text.encode("utf-16")
    p.write_bytes(b"")
    g = Guardian()
    t = LogTail(p, g)
    for at in range(0, len(data), 997):  # appended in odd-sized pieces, a poll after each
        with open(p, "ab") as f:
            f.write(data[at : at + 997])
        t.poll()
    assert g.records == 200
    assert list(g.runlog().series["loss"].values) == [r["loss"] for r in _rows(200)]


@pytest.mark.slow
def test_watch_holds_at_most_one_line_of_a_zero_filled_tail(tmp_path):
    from trainproof.formats.lines import MAX_LINE
    from trainproof.live.guardian import Guardian
    from trainproof.live.tail import LogTail

    p = tmp_path / "run.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in _rows(20)))
    with open(p, "ab") as f:
        f.truncate(p.stat().st_size + 3 * MAX_LINE)  # a sparse run of NUL bytes, no newline
    g = Guardian()
    t = LogTail(p, g)
    t.poll()
    assert g.records == 20
    assert len(t._carry) < MAX_LINE
    assert any("longer than" in d for d in g.meta.get("dropped", []))


def test_watch_reads_a_gzip_log(tmp_path):
    from trainproof.live.guardian import Guardian
    from trainproof.live.tail import LogTail

    p = tmp_path / "run.jsonl.gz"
    with gzip.open(p, "wt") as f:
        f.write("".join(json.dumps(r) + "\n" for r in _rows(50)))
    g = Guardian()
    t = LogTail(p, g)
    t.poll()
    assert g.records == 50


@pytest.mark.slow
@pytest.mark.parametrize(
    "opt",
    [
        ["--interval", "-1"],
        ["--interval", "nan"],
        ["--interval", "inf"],
        ["--stall-timeout", "nan"],
        ["--stall-timeout", "-5"],
    ],
)
def test_watch_rejects_bad_durations(tmp_path, opt):
    p = tmp_path / "run.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in _rows(5)))
    code, out, err, _ = run_cli(["watch", p, *opt], timeout=DEADLINE)
    assert code == 2
    assert "Invalid value" in err and "internal error" not in err


# --- 4. limits -----------------------------------------------------------------------------


def _framed(payload_len: int) -> bytes:
    import struct

    from trainproof.formats._tfrecord import masked_crc

    length = struct.pack("<Q", payload_len)
    return length + struct.pack("<I", masked_crc(length))


@pytest.mark.slow
def test_an_event_record_declared_huge_is_not_allocated(tmp_path):
    import struct

    from trainproof.formats._tfrecord import MAX_RECORD, masked_crc

    assert MAX_RECORD <= 64 << 20
    p = tmp_path / "events.out.tfevents.1.host"
    first = b"\x09" + struct.pack("<d", 1.0) + b"\x1a\x0dbrain.Event:2"  # wall_time, file_version
    with open(p, "wb") as f:
        f.write(_framed(len(first)) + first + struct.pack("<I", masked_crc(first)))
        f.write(_framed(200 << 20))  # a checksummed length of 200 MiB
        f.truncate(f.tell() + (200 << 20) + 4)  # and that many (sparse) bytes
    code, out, err, mb = run_cli(["epoch", p, "--json"])
    assert "implausible length" in out
    assert mb < 400


@pytest.mark.slow
def test_jobs_are_capped_at_the_usable_cpus(tmp_path):
    from trainproof.api import usable_cpus

    for i in range(10):
        d = tmp_path / f"r{i}"
        d.mkdir()
        # distinct logs: identical ones would be one run, too few for a pool
        (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows(50 + i)))
    script = (
        "import multiprocessing, sys\n"
        "from concurrent.futures import ProcessPoolExecutor as P\n"
        "seen = []\n"
        "orig = P.__init__\n"
        "def init(self, max_workers=None, **kw):\n"
        "    seen.append(max_workers); orig(self, max_workers=max_workers, **kw)\n"
        "P.__init__ = init\n"
        "from trainproof.api import doctor\n"
        f"doctor({str(tmp_path)!r}, jobs=200)\n"
        "print(seen)\n"
    )
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=DEADLINE, env=_env())
    assert p.stdout.strip() == f"[{min(200, usable_cpus())}]", p.stderr


def _children(pid: int) -> set[int]:
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            out |= {int(c) for c in task.read_text().split()}
        except OSError:
            pass
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc/<pid>/task/*/children")
def test_sigterm_to_doctor_ends_its_workers(tmp_path):
    big = tmp_path / "seed.jsonl"
    big.write_text(
        "".join(json.dumps({"step": s, "loss": 2.0 * 0.9999**s, "lr": 1e-3}) + "\n" for s in range(1, 300_001))
    )
    body = big.read_bytes()
    for i in range(16):
        d = tmp_path / "runs" / f"r{i:02d}"
        d.mkdir(parents=True)
        # distinct runs (a copy would be folded into one): the last line tells them apart
        (d / "metrics.jsonl").write_bytes(body + json.dumps({"step": 300_001, "loss": 0.01 * i}).encode() + b"\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainproof", "doctor", str(tmp_path / "runs"), "--jobs", "2", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    deadline = time.monotonic() + DEADLINE
    kids: set[int] = set()
    while time.monotonic() < deadline and proc.poll() is None:
        kids = _children(proc.pid)
        if kids:
            break
        time.sleep(0.05)
    assert kids, "doctor started no workers"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=DEADLINE)
    assert proc.returncode == 2, err
    assert "Traceback" not in err.decode()
    assert not [k for k in kids if _alive(k)]


# --- 5. small ones -------------------------------------------------------------------------


@pytest.mark.slow
def test_a_first_line_longer_than_the_sniffing_head_is_sniffed_past(tmp_path):
    p = tmp_path / "run.jsonl"
    config = {"config": {f"key_{i}": "x" * 20 for i in range(4000)}}
    assert len(json.dumps(config)) > 100 << 10
    p.write_text(json.dumps(config) + "\n" + "".join(json.dumps(r) + "\n" for r in _rows(200)))
    code, out, err, _ = run_cli(["epoch", p, "--json"])
    rep = json.loads(out)["reports"][0]
    assert rep["format"] == "jsonl", err
    assert rep["verdict"] != "NOT-CHECKED"


@pytest.mark.slow
def test_a_removed_working_directory_is_a_clean_error(tmp_path):
    log = tmp_path / "run.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in _rows(50)))
    gone = tmp_path / "gone"
    gone.mkdir()
    script = (
        "import os, subprocess, sys\n"
        f"os.chdir({str(gone)!r}); os.rmdir({str(gone)!r})\n"
        f"p = subprocess.run([sys.executable, '-m', 'trainproof', 'epoch', 'run.jsonl'])\n"
        "sys.exit(p.returncode)\n"
    )
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=DEADLINE, env=_env())
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert "current directory" in p.stderr


@pytest.mark.slow
def test_csv_blank_line_runs_stay_on_the_chunked_path_with_the_same_records(tmp_path, monkeypatch):
    # A run of empty lines used to send every chunk row by row (a Python step per line: a
    # gzip bomb of newlines after the header took minutes); empty lines are no records, so
    # the chunked path drops them and numbers the rest as row by row does.
    from trainproof.api import read_runlog
    from trainproof.formats import csv as csv_fmt

    p = tmp_path / "metrics.csv"
    rows = "".join(f"{i},{1 / (i + 1)!r}\n" for i in range(50))
    more = "".join(f"{i},{1 / (i + 1)!r}\n" for i in range(50, 100))
    p.write_text("step,loss\n" + rows + "\n" * 300_000 + more + "\n\n" + "100,0.5\n")
    calls = []
    fast = csv_fmt._fast_rows

    def counting(*a, **k):
        out = fast(*a, **k)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(csv_fmt, "_fast_rows", counting)
    got = read_runlog(p)
    assert calls and all(calls)  # every chunk decoded in one go
    monkeypatch.setattr(csv_fmt, "_fast_rows", lambda *a, **k: None)
    ref = read_runlog(p)  # row by row
    for name in ("loss",):
        assert list(got.series[name].steps) == list(ref.series[name].steps)
        assert list(got.series[name].lines) == list(ref.series[name].lines)
        assert list(got.series[name].values) == list(ref.series[name].values)
    assert got.records == ref.records == 101
    assert got.series["loss"].lines[-1] == 1 + 50 + 300_000 + 50 + 2 + 1
