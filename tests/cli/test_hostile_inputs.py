"""Hostile and unusual inputs, one test each: exit 0, 1 or 2 as the input deserves, one
clear line on stderr for exit 2, no traceback, bounded time and memory.

The risky ones (a FIFO, a 2 GB line, ten million lines, a symlink loop, a file changing
under the reader) run ``python -m trainproof`` as a real process with a timeout, so a hang
fails the test instead of the session; the memory-bound ones report the child's peak
resident set size.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import _fuzz_logs as F
from conftest import healthy_rows, run_cli, write_jsonl

# The child's own peak: VmHWM of its address space. (ru_maxrss would not do: Linux carries
# the parent's peak across fork and exec, so a child of a big pytest process inherits it.)
_MEASURED = (
    "import resource, sys\n"
    "from trainproof.cli import main\n"
    "def peak_kb():\n"
    "    try:\n"
    "        for ln in open('/proc/self/status'):\n"
    "            if ln.startswith('VmHWM:'):\n"
    "                return int(ln.split()[1])\n"
    "    except OSError:\n"
    "        pass\n"
    "    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
    "try:\n"
    "    main(sys.argv[1:])\n"
    "finally:\n"
    "    sys.stderr.write('\\n@maxrss_kb=%d\\n' % peak_kb())\n"
)


def run_measured(*args: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess, int, float]:
    """``trainproof ARGS`` in a child process: (result with the rss line removed from
    stderr, peak RSS in MiB, seconds)."""
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-c", _MEASURED, *args], capture_output=True, text=True, timeout=timeout)
    secs = time.monotonic() - t0
    err, _, rss = p.stderr.rpartition("\n@maxrss_kb=")
    p.stderr = err.rstrip("\n") + ("\n" if err.strip() else "")
    return p, int(rss.strip() or 0) // 1024, secs


def one_clear_line(stderr: str) -> str:
    """The contract for exit 2: exactly one line on stderr, ``trainproof: …``, no traceback."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert "Traceback" not in stderr
    assert len(lines) == 1 and lines[0].startswith("trainproof: "), stderr
    return lines[0]


def cannot_judge(path: Path, *reason: str) -> str:
    """``epoch PATH``: exit 2 with one line naming the reason, and a schema-valid --json
    document whose report is a TP-READ-ERROR."""
    code, out, err, _ = run_cli("epoch", str(path))
    assert code == 2, out
    line = one_clear_line(err)
    assert any(r in line for r in reason), line
    code, _, _, doc = run_cli("epoch", str(path), "--json")
    assert code == 2 and doc["reports"][0]["verdict"] == "NOT-CHECKED"
    assert [f["id"] for f in doc["reports"][0]["findings"]] == ["TP-READ-ERROR"]
    return line


def judged(path: Path, *args: str) -> dict:
    code, out, err, doc = run_cli("epoch", str(path), "--json", *args)
    assert "Traceback" not in err and code in (0, 1, 2)
    rep = doc["reports"][0]
    assert code == (1 if rep["verdict"] == "FAIL" else 0 if rep["verdict"] in ("PASS", "WARN") else 2)
    rep["exit"] = code
    rep["ids"] = sorted(f["id"] for f in rep["findings"])
    return rep


def jsonl_text(n: int = 60) -> str:
    return "".join(json.dumps(r) + "\n" for r in healthy_rows(n))


def csv_text(n: int = 60) -> str:
    return "step,loss,learning_rate\n" + "".join(
        f"{r['step']},{r['loss']},{r['learning_rate']}\n" for r in healthy_rows(n)
    )


# --------------------------------------------------------------------------- empty files


def test_empty_file(tmp_path):
    p = tmp_path / "metrics.jsonl"
    p.write_bytes(b"")
    cannot_judge(p, "empty file")


def test_a_single_newline(tmp_path):
    p = tmp_path / "metrics.csv"
    p.write_bytes(b"\n")
    cannot_judge(p, "empty file")


# --------------------------------------------------------------------------- size


@pytest.mark.slow
def test_two_gigabyte_line_is_skipped_in_bounded_memory(tmp_path):
    """One 2 GiB line between two halves of a log: skipped with a note (held at most 16 Mi
    characters at a time), the rest judged. The line is a sparse hole of NUL bytes, so the
    test costs no disk space; reading it takes about 7 s."""
    p = tmp_path / "metrics.jsonl"
    rows = jsonl_text(30).encode()
    with open(p, "wb") as f:
        f.write(rows)
        f.truncate(len(rows) + (2 << 30))
        f.seek(0, 2)
        f.write(b"\n" + "".join(json.dumps({**r, "step": r["step"] + 300}) + "\n" for r in healthy_rows(30)).encode())
    res, rss, secs = run_measured("epoch", str(p), "--json", timeout=300)  # a hang guard, not a benchmark
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)["reports"][0]
    assert rep["records"] == 60
    drop = next(f for f in rep["findings"] if f["id"] == "TP-DATA-DROPPED")
    assert "longer than 16,777,216 characters (lines 31)" in drop["evidence"]
    assert rss < 400, f"peak RSS {rss} MiB for a 2 GiB line"


@pytest.mark.slow
@pytest.mark.parametrize("reader", ["jsonl", "csv", "csv_keras", "coqui", "console", "mlflow_file"])
def test_line_longer_than_the_cap_in_every_line_reader(tmp_path, reader):
    """A 17 Mi-character line inside each line-based format: skipped and said."""
    lines = F.valid(reader).splitlines(keepends=True)
    blob = b"".join(lines[:8]) + b"7" * ((16 << 20) + 5) + b"\n" + b"".join(lines[8:])
    rep = judged(F.write_input(tmp_path, reader, blob))
    assert rep["exit"] == 0 and "TP-DATA-DROPPED" in rep["ids"]
    assert any("longer than 16,777,216" in f["evidence"] for f in rep["findings"])


@pytest.mark.slow
def test_huge_json_value_in_trainer_state_is_bounded(tmp_path):
    """A 70 Mi-character string in a log_history entry: the entries before it are judged,
    the rest is noted; memory stays near the 64 Mi-character cap, not the file's size."""
    rows = healthy_rows(30)
    p = tmp_path / "trainer_state.json"
    p.write_bytes(
        b'{"log_history": ['
        + json.dumps(rows)[1:-1].encode()
        + b', {"step": 305, "note": "'
        + b"x" * (70 << 20)
        + b'"}]}\n'
    )
    res, rss, _ = run_measured("epoch", str(p), "--json", timeout=120)
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)["reports"][0]
    assert rep["records"] == 30
    assert any("longer than 67,108,864 characters" in f["evidence"] for f in rep["findings"])
    assert rss < 700, rss


@pytest.mark.slow
def test_ten_million_line_console_capture(tmp_path):
    """10,000,000 lines (a week of tqdm output: 99 progress lines per logged dict), streamed
    with flat memory: about 25 s in all, half of it writing the file. Ten million *records*
    would take minutes in any text format (each is a Python object); 100,000 are read here."""
    p = tmp_path / "nohup.out"
    block_lines = []
    for j in range(1, 101):
        block_lines.append(f"\r {j}%|#####     | {j}/100 [00:01<00:19,  9.81it/s]\n")
    with open(p, "w") as f:
        for k in range(100_000):
            loss = 0.8 + 1.5 * math.exp(-k / 25_000)
            block_lines[-1] = f"{{'loss': {loss:.5f}, 'learning_rate': 0.0001, 'epoch': {k / 100_000:.5f}}}\n"
            f.write("".join(block_lines))
    res, rss, secs = run_measured("epoch", str(p), "--json", timeout=300)  # a hang guard, not a benchmark
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)["reports"][0]
    assert rep["records"] == 100_000 and rep["verdict"] == "PASS"
    assert rss < 400, rss


_BLANKS = " \t" * 250_000
#: Lines that made a reader's regex backtrack: quadratic or cubic in a long run of blanks
#: (found by the fuzzing; minutes to hours each before the fix).
_BACKTRACKING = {
    "coqui_metric_without_colon": ("trainer_0_log.txt", "     | > x" + _BLANKS + "0.1667}"),
    "coqui_best_model_path": ("trainer_0_log.txt", " > BEST MODEL : a" + _BLANKS + "b"),
    "coqui_checkpoint_path": ("trainer_0_log.txt", " > CHECKPOINT : a" + _BLANKS + "b"),
    "coqui_long_digit_run": ("trainer_0_log.txt", "     | > loss: " + "1" * 200_000 + "x"),
    "console_epoch_then_blanks": ("train.log", "Epoch" + _BLANKS + "x"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(_BACKTRACKING))
def test_long_runs_do_not_make_a_regex_backtrack(tmp_path, case):
    name, line = _BACKTRACKING[case]
    base = F.valid("coqui" if name.startswith("trainer") else "console_epoch").decode()
    p = tmp_path / name
    p.write_text(base + line + "\n" + base)
    # Before the fix each of these took hours; linear, they take about a second.
    res, _, secs = run_measured("epoch", str(p), "--json", timeout=120)
    assert res.returncode in (0, 1, 2) and "Traceback" not in res.stderr


# --------------------------------------------------------------------------- not a log file


def test_git_lfs_pointer_under_a_log_name(tmp_path):
    p = tmp_path / "out" / "trainer_state.json"
    p.parent.mkdir()
    p.write_text(
        "version https://git-lfs.github.com/spec/v1\n"
        "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n"
    )
    cannot_judge(p, "Git LFS pointer")
    code, out, err, doc = run_cli("doctor", str(tmp_path), "--json")
    assert code == 2 and "Git LFS pointer" in doc["reports"][0]["error"]


def test_directory_named_like_a_log(tmp_path):
    d = tmp_path / "x.jsonl"
    d.mkdir()
    cannot_judge(d, "is a directory")
    write_jsonl(d / "metrics.jsonl", healthy_rows())  # doctor descends into it and judges the file
    code, _, err, doc = run_cli("doctor", str(tmp_path), "--json")
    assert code == 0 and "Traceback" not in err
    assert [Path(r["file"]).name for r in doc["reports"]] == ["metrics.jsonl"]


@pytest.mark.slow
def test_fifo_does_not_hang(tmp_path):
    fifo = tmp_path / "metrics.jsonl"
    os.mkfifo(fifo)
    res = subprocess.run(
        [sys.executable, "-m", "trainproof", "epoch", str(fifo)], capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 2
    assert "not a regular file" in one_clear_line(res.stderr)
    res = subprocess.run(
        [sys.executable, "-m", "trainproof", "doctor", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2 and "Traceback" not in res.stderr
    doc = json.loads(res.stdout)  # the walk never opens it: listed as ignored, not judged
    assert doc["reports"] == [] and "not a regular file" in doc["ignored"][0]["reason"]


@pytest.mark.slow
def test_device_file_under_a_log_name_does_not_hang(tmp_path):
    """A symlink to /dev/zero named like a log (endless bytes) is not read at all."""
    p = tmp_path / "metrics.csv"
    p.symlink_to("/dev/zero")
    res = subprocess.run(
        [sys.executable, "-m", "trainproof", "epoch", str(p)], capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 2 and "not a regular file" in one_clear_line(res.stderr)


@pytest.mark.slow
def test_symlink_loops_in_a_doctor_tree(tmp_path):
    """A folder that links to its parent and two files that link to each other: the walk
    ends, the healthy run is judged once, and the looping file is named with its reason."""
    run = tmp_path / "runs" / "a"
    write_jsonl(run / "metrics.jsonl", healthy_rows())
    (run / "loop").symlink_to(tmp_path / "runs", target_is_directory=True)
    (run / "self").symlink_to(run, target_is_directory=True)
    (tmp_path / "runs" / "x.jsonl").symlink_to(tmp_path / "runs" / "y.jsonl")
    (tmp_path / "runs" / "y.jsonl").symlink_to(tmp_path / "runs" / "x.jsonl")
    res = subprocess.run(
        [sys.executable, "-m", "trainproof", "doctor", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Traceback" not in res.stderr
    doc = json.loads(res.stdout)
    judged_files = [r["file"] for r in doc["reports"] if r["error"] is None]
    assert len(judged_files) == 1 and judged_files[0].endswith("a/metrics.jsonl")
    errors = {Path(r["file"]).name: r["error"] for r in doc["reports"] if r["error"] is not None}
    assert set(errors) == {"x.jsonl", "y.jsonl"} and all("symbolic links" in e for e in errors.values()), errors
    assert res.returncode == 2


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root can read any file")
def test_file_without_read_permission(tmp_path):
    p = write_jsonl(tmp_path / "metrics.jsonl", healthy_rows())
    p.chmod(0)
    try:
        cannot_judge(p, "permission denied")
    finally:
        p.chmod(0o644)


# --------------------------------------------------------------------------- changing files


@pytest.mark.slow
@pytest.mark.parametrize("reader", ["jsonl", "csv", "hf", "tfevents_hand", "coqui"])
def test_file_that_grows_or_shrinks_while_being_read(tmp_path, reader):
    """Another process appends to, truncates and rewrites the log while it is judged, 25
    times: every judgement keeps the contract (a valid document, exit 0/1/2, no
    traceback), whatever state of the file it caught."""
    full = F.valid(reader) * 4 if reader != "hf" else F.valid(reader)
    p = F.write_input(tmp_path, reader, full)
    stop = threading.Event()

    def churn():
        i = 0
        while not stop.is_set():
            i += 1
            with open(p, "r+b") as f:
                if i % 3 == 0:
                    f.truncate(len(full) * (i % 7) // 7)  # a rotation or a restarted run
                elif i % 3 == 1:
                    f.seek(0, 2)
                    f.write(full[: 1 + (i * 131) % len(full)])  # appended, maybe mid-record
                else:
                    f.seek(0)
                    f.write(full)  # rewritten whole (HF saves trainer_state.json this way)
                    f.truncate()
            time.sleep(0.0005)

    t = threading.Thread(target=churn, daemon=True)
    t.start()
    try:
        codes = set()
        for _ in range(25):
            codes.add(F.run_epoch(p, reader, stats=F.Stats()).code)
    finally:
        stop.set()
        t.join(5)
    assert codes <= {0, 1, 2}


# --------------------------------------------------------------------------- encodings, line ends


@pytest.mark.slow
@pytest.mark.parametrize("reader", ["jsonl", "csv", "console", "coqui"])
def test_utf16_with_bom(tmp_path, reader):
    """A log saved as UTF-16 (PowerShell's ``>`` redirection): read as the UTF-8 one is."""
    text = F.valid(reader).decode()
    want = judged(F.write_input(tmp_path / "a", reader, text.encode()))
    for enc in ("utf-16", "utf-16-be"):
        data = text.encode(enc) if enc == "utf-16" else b"\xfe\xff" + text.encode("utf-16-be")
        got = judged(F.write_input(tmp_path / enc, reader, data))
        assert (got["records"], got["ids"]) == (want["records"], want["ids"])


def test_latin1_bytes_in_a_csv_header(tmp_path):
    """``précision`` written in Latin-1 (0xE9 is not UTF-8): the header still names the
    columns, the undecodable byte is replaced, the run is judged."""
    p = tmp_path / "metrics.csv"
    p.write_bytes(
        (
            "step,loss,précision,learning_rate\n"
            + "".join(f"{r['step']},{r['loss']},0.5,{r['learning_rate']}\n" for r in healthy_rows())
        ).encode("latin-1")
    )
    rep = judged(p)
    assert rep["exit"] == 0 and rep["records"] == 60
    assert rep["mapping"]["loss"]["source"] == "loss"


@pytest.mark.parametrize("reader", ["hf", "jsonl", "csv", "coqui", "console", "console_epoch", "mlflow_file"])
def test_crlf_reads_like_lf(tmp_path, reader):
    lf = F.valid(reader).replace(b"\r\n", b"\n")
    want = judged(F.write_input(tmp_path / "lf", reader, lf))
    got = judged(F.write_input(tmp_path / "crlf", reader, lf.replace(b"\n", b"\r\n")))
    assert (
        (got["records"], got["ids"], got["exit"])
        == (want["records"], want["ids"], want["exit"])
        == (want["records"], ["TP-PASS"] + (["TP-THROUGHPUT"] if reader == "coqui" else []), 0)
    )


def test_mixed_carriage_return_progress_output(tmp_path):
    """tqdm redraws with bare ``\\r``; log dicts share physical lines with bars, some
    after a ``\\r``, some before a ``\\n``; ANSI cursor moves between bars."""
    parts = []
    for i, r in enumerate(healthy_rows(40)):
        bar = "".join(f"\r{k:3d}%|{'#' * (k // 10):10s}| {k}/100 [00:01<00:09]" for k in range(0, 101, 25))
        d = f"{{'loss': {r['loss']}, 'learning_rate': 0.0001, 'epoch': {r['epoch']}}}"
        parts.append(bar + ("\r" + d + "\n" if i % 3 == 0 else d + "\x1b[A\r\n" if i % 3 == 1 else "\n" + d + "\r"))
    p = tmp_path / "nohup.out"
    p.write_text("".join(parts) + "\n")
    rep = judged(p)
    assert rep["format"] == "console" and rep["records"] == 40 and rep["exit"] == 0


# --------------------------------------------------------------------------- JSON edge cases


@pytest.mark.slow
@pytest.mark.parametrize("depth", [900, 990, 1_000, 100_000])
def test_deeply_nested_json(tmp_path, depth):
    """Nesting near and far past the recursion limit: a line or entry that cannot be
    decoded is skipped with a note; nothing recurses out of the reader."""
    nested = '{"a": ' * depth + "1" + "}" * depth
    rows = healthy_rows(30)
    p = tmp_path / "metrics.jsonl"
    p.write_text(jsonl_text(30) + '{"step": 305, "x": ' + nested + "}\n")
    assert judged(p)["exit"] == 0
    h = tmp_path / "trainer_state.json"
    h.write_text('{"log_history": [' + json.dumps(rows)[1:-1] + ', {"step": 305, "x": ' + nested + "}]}\n")
    assert judged(h)["exit"] == 0
    c = tmp_path / "nohup.out"
    c.write_text(
        "".join(f"{{'loss': {r['loss']}, 'epoch': {r['epoch']}}}\n" for r in rows)
        + "{'loss': "
        + "[" * depth
        + "]" * depth
        + ", 'epoch': 1.0}\n"
    )
    assert judged(c)["exit"] == 0


@pytest.mark.parametrize("reader", ["jsonl", "hf", "console", "csv"])
def test_number_with_ten_thousand_digits(tmp_path, reader):
    """A 10,000-digit loss is larger than any float: read as +Infinity (a non-finite loss
    is a FAIL), in every reader alike, never a parse crash or a silently skipped record."""
    huge = "1" + "0" * 9_999
    rows = healthy_rows(30)
    if reader == "jsonl":
        text = jsonl_text(30) + f'{{"step": 310, "loss": {huge}}}\n'
    elif reader == "hf":
        text = '{"log_history": [' + json.dumps(rows)[1:-1] + f', {{"step": 310, "loss": {huge}}}]}}\n'
    elif reader == "console":
        text = (
            "".join(f"{{'loss': {r['loss']}, 'epoch': {r['epoch']}}}\n" for r in rows)
            + f"{{'loss': {huge}, 'epoch': 1.0}}\n"
        )
    else:
        text = csv_text(30) + f"310,{huge},0.0001\n"
    rep = judged(F.write_input(tmp_path, reader, text.encode()))
    assert rep["records"] == 31 and rep["exit"] == 1 and "TP-NAN" in rep["ids"], rep["ids"]


_HUGE = "1" + "0" * 9_999
#: A 10,000-digit number where the text formats print a count (a step, an epoch, a
#: checkpoint's step in its file name): found by the fuzzing (``int()`` refuses more than
#: 4,300 digits), now a count that is absent.
_HUGE_COUNTS = {
    "coqui_global_step": ("coqui", b"GLOBAL_STEP: 1\x1b", b"GLOBAL_STEP: " + _HUGE.encode() + b"\x1b"),
    "coqui_steps_per_epoch": ("coqui", b"STEP: 0/10", b"STEP: 0/" + _HUGE.encode()),
    "coqui_epoch": ("coqui", b"EPOCH: 0/3", b"EPOCH: 0/" + _HUGE.encode()),
    "coqui_best_model": ("coqui", b"best_model_10.pth", b"best_model_" + _HUGE.encode() + b".pth"),
    "mlflow_step": ("mlflow_file", b" 10\n", b" " + _HUGE.encode() + b"\n"),
    "console_epoch": ("console_epoch", b"Epoch 1/30", b"Epoch " + _HUGE.encode() + b"/30"),
}


@pytest.mark.parametrize("case", sorted(_HUGE_COUNTS))
def test_ten_thousand_digit_counts_in_text_logs(tmp_path, case):
    reader, old, new = _HUGE_COUNTS[case]
    data = F.valid(reader)
    assert old in data
    rep = judged(F.write_input(tmp_path, reader, data.replace(old, new, 1)))
    assert rep["exit"] in (0, 1, 2)


def test_ten_thousand_digit_step_is_no_step(tmp_path):
    """As a step, a 10,000-digit number has no finite position: the record is kept at its
    place in the file, never a crash."""
    p = tmp_path / "metrics.jsonl"
    p.write_text(jsonl_text(30) + '{"step": 1' + "0" * 9_999 + ', "loss": 0.9}\n')
    rep = judged(p)
    assert rep["exit"] == 0 and rep["records"] == 31


def test_duplicate_keys(tmp_path):
    """JSON's last value wins for a repeated key, in JSONL and in trainer_state.json alike."""
    rows = healthy_rows(40)
    dup = "".join(
        '{"step": %d, "loss": 99.0, "learning_rate": 1e-4, "loss": %r}\n' % (r["step"], r["loss"]) for r in rows
    )
    p = tmp_path / "metrics.jsonl"
    p.write_text(dup)
    rep = judged(p)
    assert rep["exit"] == 0 and rep["records"] == 40
    from trainproof.api import read_runlog

    assert read_runlog(p).get("loss").values.tolist() == [r["loss"] for r in rows]
    h = tmp_path / "trainer_state.json"
    h.write_text(
        '{"log_history": [' + ", ".join(ln.strip() for ln in dup.splitlines()) + '], "log_history": "overwritten?"}\n'
    )
    # a second log_history key: the streamed first one is judged, the second is said
    rep = judged(h)
    assert (rep["exit"], rep["records"]) == (0, 40) and "TP-DATA-DROPPED" in rep["ids"]


@pytest.mark.parametrize("value", ['{"a": 1}', "null", '"[]"', "3", "true", '{"0": {"loss": 1.0}}'])
def test_log_history_that_is_not_a_list(tmp_path, value):
    p = tmp_path / "trainer_state.json"
    p.write_text('{"global_step": 10, "log_history": ' + value + ', "max_steps": 10}\n')
    cannot_judge(p, "log_history at line 1 is")


def test_gzip_of_nothing_and_gzip_of_garbage(tmp_path):
    p = tmp_path / "metrics.jsonl.gz"
    p.write_bytes(gzip.compress(b""))
    cannot_judge(p, "empty file")
    p.write_bytes(b"\x1f\x8b" + os.urandom(64))
    cannot_judge(p, "gzip", "cannot read")


@pytest.mark.slow
def test_huge_finite_loss_prints_nothing_on_stderr(tmp_path):
    rows = healthy_rows(30)
    rows[1]["loss"] = 1e308
    p = write_jsonl(tmp_path / "metrics.jsonl", rows)
    res = subprocess.run(
        [sys.executable, "-m", "trainproof", "epoch", str(p)], capture_output=True, text=True, timeout=60
    )
    assert res.returncode in (0, 1) and res.stderr == ""
