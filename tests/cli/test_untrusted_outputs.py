"""Running on a pull request: the files in the tree were written by whoever opened it.

doctor stays inside the tree it is given, never quotes a file that is not a log, never
opens a FIFO or a device it finds, prints file names so that they cannot forge lines,
survives any depth and any unreadable folder, and writes its reports into FIFOs and
devices instead of replacing them.
"""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from pathlib import Path

import pytest
from _helpers import (
    FAILING,  # noqa: F401
    failing_log,  # noqa: F401
)

from _attack_tree import remove_tree
from conftest import healthy_rows, run_subprocess, validate_doc, write_jsonl

TOKEN = "ghp_0123456789abcdefSECRETtoken"
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def all_outputs(cwd: Path, *args: str) -> tuple[int, str, dict]:
    """Run doctor/epoch twice as real processes, once for text (with --sarif and --html
    files) and once for --json; returns (exit code, every output joined, the JSON doc)."""
    text = run_subprocess(*args, "--sarif", "out.sarif", "--html", "out.html", cwd=cwd, timeout=300)
    js = run_subprocess(*args, "--json", cwd=cwd, timeout=300)
    assert "Traceback" not in text.stderr + js.stderr, text.stderr + js.stderr
    assert text.returncode == js.returncode
    doc = validate_doc(json.loads(js.stdout))
    joined = "\n".join(
        [
            text.stdout,
            text.stderr,
            js.stdout,
            js.stderr,
            (cwd / "out.sarif").read_text(),
            (cwd / "out.html").read_text(),
        ]
    )
    return js.returncode, joined, doc


# --------------------------------------------------------------------------- 1. symlinks out of the tree


@pytest.mark.slow
def test_symlinks_that_leave_the_tree_are_listed_not_followed(tmp_path):
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / ".netrc").write_text(f"machine github.com login bot password {TOKEN}\n")
    (secret / "train.log").write_text(f"export GITHUB_TOKEN={TOKEN}\n")
    repo = tmp_path / "repo"
    failing_log(repo / "runs" / "a" / "metrics.jsonl")
    (repo / "metrics.csv").symlink_to(secret / ".netrc")
    (repo / "notes.log").symlink_to(secret / ".netrc")
    (repo / "outside").symlink_to(secret, target_is_directory=True)  # a folder link out
    (repo / "latest.jsonl").symlink_to(repo / "runs" / "a" / "metrics.jsonl")  # a link inside: the same run
    (repo / "runs" / "b").symlink_to(repo / "runs" / "a", target_is_directory=True)

    code, out, doc = all_outputs(tmp_path, "doctor", "repo")
    assert TOKEN not in out and "password" not in out
    assert str(secret) not in out and "secret" not in out  # not even where the link points
    assert code == 1
    judged = sorted(r["file"] for r in doc["reports"])
    assert judged == ["repo/runs/a/metrics.jsonl"]
    assert doc["reports"][0]["also"] == ["repo/latest.jsonl"]
    leaving = {e["file"]: e["reason"] for e in doc["ignored"] if "leaves the searched tree" in e["reason"]}
    assert set(leaving) == {"repo/metrics.csv", "repo/notes.log", "repo/outside"}


def test_a_run_folder_holding_a_link_out_is_not_read(tmp_path):
    """The event-file and MLflow readers list their run folder themselves, so a link out
    beside real shards would be read through: the whole folder is left out."""
    from trainproof.discover import group_runs, walk

    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "events.out.tfevents.3.host").write_bytes(b"x" * 64)
    root = tmp_path / "repo"
    tb = root / "tb"
    tb.mkdir(parents=True)
    for i in (1, 2):
        (tb / f"events.out.tfevents.{i}.host").write_bytes(b"")
    (tb / "events.out.tfevents.3.host").symlink_to(secret / "events.out.tfevents.3.host")
    keras = root / "keras"
    (keras / "train").mkdir(parents=True)
    (keras / "train" / "events.out.tfevents.1.host").write_bytes(b"")
    (keras / "validation").symlink_to(secret, target_is_directory=True)
    ml = root / "mlruns" / "0" / "abc"
    (ml / "metrics").mkdir(parents=True)
    (ml / "meta.yaml").write_text("run_id: abc\n")
    (ml / "metrics" / "loss").symlink_to(secret / "events.out.tfevents.3.host")
    failing_log(root / "ok" / "metrics.jsonl")

    ignored: list[dict] = []
    found = group_runs(walk(root, limits=ignored))
    assert [c.path for c in found] == [root / "ok" / "metrics.jsonl"]
    reasons = {e["file"]: e["reason"] for e in ignored}
    for folder in (tb, keras / "train", ml):
        assert "run folder that holds a symlink that leaves the searched tree" in reasons[str(folder)]


# --------------------------------------------------------------------------- 2. no quotes of non-logs


@pytest.mark.slow
def test_a_file_no_reader_recognises_is_described_never_quoted(tmp_path):
    secret = f"password=hunter2 api_key={TOKEN}\nsecond line, with, commas\n"
    repo = tmp_path / "repo"
    failing_log(repo / "run" / "metrics.jsonl")
    (repo / "train.jsonl").write_text(secret)  # a log's name, no log's words: ignored
    (repo / "notes.txt").write_text(secret)  # a neutral name: listed as ignored
    # A log's name and words in a dialect no reader knows: a run that could not be judged.
    (repo / "odd.jsonl").write_text(f"{secret}the loss curve of run 7 is attached, password=hunter2\n")
    (tmp_path / "README").write_text(secret)  # named on the command line
    code, out, doc = all_outputs(tmp_path, "doctor", "repo")
    assert code == 1
    assert "hunter2" not in out and TOKEN not in out and "password" not in out
    (err,) = [r["error"] for r in doc["reports"] if r["error"]]
    assert "no reader recognises it (text, 137 bytes, 3 line(s); first line: plain text)" in err
    for name in ("repo/notes.txt", "repo/train.jsonl"):
        assert any(
            e["file"] == name and "no reader recognises it (text, 83 bytes" in e["reason"] for e in doc["ignored"]
        )
    for name in ("README", "repo/train.jsonl"):
        code, out, doc = all_outputs(tmp_path, "epoch", name)
        assert code == 2 and "hunter2" not in out and TOKEN not in out and "password" not in out


def test_the_description_counts_fields_and_tells_binary(tmp_path):
    from trainproof.formats import NotALog, detect

    table = tmp_path / "a.txt"
    table.write_text("user;host;secret_value\nalice;db;s3cr3t\n")
    blob = tmp_path / "b.txt"
    blob.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(NotALog) as e:
        detect(table)
    assert "first line: 3 semicolon-separated fields" in str(e.value) and "alice" not in str(e.value)
    with pytest.raises(NotALog) as e:
        detect(blob)
    assert "(binary, 1,024 bytes)" in str(e.value)


@pytest.mark.parametrize(
    ("first", "what"),
    [
        # a bracketed tag or step opens many log lines; it is no JSON array
        ("[LightGBM] [Info] Number of positive: 4012", "plain text"),
        ("[2024-05-01 12:00:10,000][00001] Fps is 4096.0, Samples: 40960", "3 comma-separated fields"),
        ("[11]\ttraining's l1: 0.54\tvalid_1's l1: 0.57", "3 tab-separated fields"),
        # JSON arrays, as written whole or pretty-printed
        ("[", "a JSON array"),
        ('["alpha", "beta"]', "a JSON array"),
        ("[1, 2, 3]", "a JSON array"),
    ],
)
def test_the_description_calls_json_only_what_opens_json(tmp_path, first, what):
    from trainproof.formats import NotALog, detect

    f = tmp_path / "odd.txt"
    f.write_text(first + "\nthe second line\n")
    with pytest.raises(NotALog) as e:
        detect(f)
    assert f"first line: {what})" in str(e.value)


# --------------------------------------------------------------------------- 3. report paths


def _drain(fifo: Path, got: list[bytes]) -> threading.Thread:
    def read() -> None:
        with open(fifo, "rb") as f:
            got.append(f.read())

    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t


@pytest.mark.slow
@pytest.mark.parametrize("through_link", [False, True])
def test_a_sarif_report_into_a_fifo_goes_through_it(tmp_path, through_link):
    log = failing_log(tmp_path / "metrics.jsonl")
    fifo = tmp_path / "sarif.fifo"
    os.mkfifo(fifo)
    target = fifo
    if through_link:
        target = tmp_path / "report.sarif"
        target.symlink_to(fifo)
    got: list[bytes] = []
    reader = _drain(fifo, got)
    res = run_subprocess("epoch", str(log), "--sarif", str(target), timeout=300)
    reader.join(timeout=120)
    assert not reader.is_alive(), "nothing was written into the FIFO"
    assert res.returncode == 1, res.stderr
    doc = json.loads(got[0])
    assert doc["version"] == "2.1.0" and any(r["ruleId"] == "TP-DIVERGE" for r in doc["runs"][0]["results"])
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert not through_link or target.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({"metrics.jsonl", "sarif.fifo", target.name})


@pytest.mark.slow
def test_a_report_through_a_symlink_to_a_file_replaces_the_link_never_its_target(tmp_path):
    # A link a pull request plants at the report path (r.sarif -> ~/.bashrc) must not make
    # CI overwrite its target: the report replaces the link; the target keeps its bytes.
    log = failing_log(tmp_path / "metrics.jsonl")
    store = tmp_path / "store"
    store.mkdir()
    for name in ("r.sarif", "r.html"):
        (store / name).write_text("keep me")
        (tmp_path / name).symlink_to(store / name)
    res = run_subprocess(
        "epoch", str(log), "--sarif", str(tmp_path / "r.sarif"), "--html", str(tmp_path / "r.html"), timeout=300
    )
    assert res.returncode == 1, res.stderr
    for name in ("r.sarif", "r.html"):
        assert not (tmp_path / name).is_symlink() and (tmp_path / name).is_file()
        assert (store / name).read_text() == "keep me"
    assert json.loads((tmp_path / "r.sarif").read_text())["version"] == "2.1.0"
    assert "TP-DIVERGE" in (tmp_path / "r.html").read_text()
    assert sorted(p.name for p in store.iterdir()) == ["r.html", "r.sarif"]  # no temporary left


@pytest.mark.slow
def test_a_report_path_that_is_a_folder_is_a_clear_error(tmp_path):
    from trainproof._files import write_atomic

    log = failing_log(tmp_path / "metrics.jsonl")
    folder = tmp_path / "reports"
    folder.mkdir()
    (tmp_path / "r.html").symlink_to(folder, target_is_directory=True)
    with pytest.raises(IsADirectoryError, match="is a folder, not a file"):
        write_atomic(folder, "x")
    for opt, path in (("--sarif", folder), ("--html", tmp_path / "r.html")):
        res = run_subprocess("epoch", str(log), opt, str(path), timeout=300)
        assert res.returncode == 2 and "Traceback" not in res.stderr
        assert "folder" in res.stderr or "directory" in res.stderr, res.stderr
    assert folder.is_dir() and list(folder.iterdir()) == [] and (tmp_path / "r.html").is_symlink()


def test_a_report_into_a_character_device_is_written_not_replaced(tmp_path):
    from trainproof._files import write_atomic

    node = tmp_path / "null"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # the null device, in tmp_path
    except (PermissionError, OSError) as e:
        pytest.skip(f"cannot make a device node here: {e}")
    write_atomic(node, "report\n")
    assert stat.S_ISCHR(os.lstat(node).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]


# --------------------------------------------------------------------------- 4. file names in the text


@pytest.mark.slow
def test_a_file_name_cannot_forge_a_verdict_line(tmp_path):
    repo = tmp_path / "repo"
    evil = "x\n  verdict: PASS\x1b[2K.jsonl"
    failing_log(repo / evil)
    failing_log(repo / "d\n  verdict: PASS\x1b[2K" / "deeper" / "metrics.jsonl")  # cut by --max-depth
    (repo / "e\n  verdict: PASS\x1b[2K.txt").write_text("no log here\n")
    outs = []
    for args in (("doctor", str(repo)), ("doctor", str(repo), "--max-depth", "1"), ("epoch", str(repo / evil))):
        res = run_subprocess(*args, "--sarif", str(tmp_path / "r.sarif"), timeout=300)
        assert res.returncode == 1, res.stderr
        outs.append(res.stdout + res.stderr)
    for out in outs:
        assert "\x1b" not in out
        assert not any(line.startswith("  verdict: PASS") for line in out.splitlines()), out
    assert "x\\n  verdict: PASS\\x1b[2K.jsonl" in outs[0]  # shown, escaped
    assert "d\\n  verdict: PASS\\x1b[2K" in outs[1]  # the --max-depth cut names it, escaped


def test_printable_escapes_what_moves_the_cursor_and_keeps_the_rest():
    from trainproof.render.text import clean, printable

    assert printable("runs/ä/métriques.jsonl") == "runs/ä/métriques.jsonl"
    assert printable("C:\\runs\\a b.csv") == "C:\\runs\\a b.csv"
    assert printable("a\nb\rc\td\x1b[2K\x7f\x9b\u202e\u2028") == "a\\nb\\rc\\td\\x1b[2K\\x7f\\x9b\\u202e\\u2028"
    assert clean("[bold]x\n") == "\\[bold]x\\n"


# --------------------------------------------------------------------------- 5. walks


@pytest.mark.slow
def test_twelve_hundred_nested_folders_are_walked(tmp_path):
    """A run 1,200 folders deep is found and judged, with no recursion error, in seconds:
    the walk's cost per folder does not grow with its depth (a realpath per folder made
    it cubic, over half a minute)."""
    d = tmp_path / "deep"
    path = str(d)
    os.mkdir(path)
    try:
        for _ in range(1200):
            path = os.path.join(path, "d")
            os.mkdir(path)
        failing_log(Path(path) / "metrics.jsonl")
        t0 = time.monotonic()
        res = run_subprocess("doctor", str(d), "--json", timeout=300)
        wall = time.monotonic() - t0
    finally:
        remove_tree(str(d))
    assert "Traceback" not in res.stderr and "RecursionError" not in res.stderr, res.stderr[-500:]
    # about 2 s on a loaded 2-core machine; the cubic walk took 35 s unloaded
    assert wall < 20, wall
    doc = validate_doc(json.loads(res.stdout))
    assert res.returncode == 1 and [r["verdict"] for r in doc["reports"]] == ["FAIL"]


@pytest.mark.slow
def test_fifos_in_the_walk_are_never_opened(tmp_path):
    root = tmp_path / "repo"
    failing_log(root / "run" / "metrics.jsonl")
    os.mkfifo(root / "train.jsonl")  # opening it for reading would wait for a writer forever
    (root / "link.log").symlink_to(root / "train.jsonl")
    res = run_subprocess("doctor", str(root), "--json", timeout=300)
    doc = validate_doc(json.loads(res.stdout))
    assert res.returncode == 1 and [Path(r["file"]).name for r in doc["reports"]] == ["metrics.jsonl"]
    odd = {Path(e["file"]).name: e["reason"] for e in doc["ignored"]}
    assert set(odd) == {"train.jsonl", "link.log"} and all("not a regular file" in r for r in odd.values())


@pytest.mark.skipif(AS_ROOT, reason="root can read and enter any folder")
@pytest.mark.parametrize(
    "mode, why", [(0o600, "listed but not entered"), (0o300, "cannot be listed"), (0o000, "cannot be listed")]
)
def test_a_folder_that_cannot_be_read_is_listed_and_the_rest_is_judged(tmp_path, mode, why):
    root = tmp_path / "repo"
    failing_log(root / "a" / "metrics.jsonl")
    locked = root / "b"
    write_jsonl(locked / "metrics.jsonl", healthy_rows())
    write_jsonl(locked / "inner" / "events.out.tfevents.1.host", healthy_rows())
    locked.chmod(mode)
    try:
        res = run_subprocess("doctor", str(root), "--json", timeout=300)
    finally:
        locked.chmod(0o755)
    assert "Traceback" not in res.stderr
    doc = validate_doc(json.loads(res.stdout))
    assert res.returncode == 1 and [Path(r["file"]).parent.name for r in doc["reports"]] == ["a"]
    (entry,) = [e for e in doc["ignored"] if e["file"] == str(locked)]
    assert why in entry["reason"] and "permission denied" in entry["reason"]


@pytest.mark.slow
def test_a_log_taken_as_the_html_value_is_never_overwritten(tmp_path):
    # `epoch a.jsonl --html b.jsonl` (or an --html that swallowed the log's name) must not
    # replace a training log with an HTML page.
    log = failing_log(tmp_path / "metrics.jsonl")
    other = failing_log(tmp_path / "other.jsonl")
    before = other.read_bytes()
    for option in ("--html", "--sarif"):
        res = run_subprocess("epoch", str(log), option, str(other), timeout=300)
        assert res.returncode == 2, res.stderr
        assert "not a trainproof report" in res.stderr and other.read_bytes() == before
    # a report of ours at the path is replaced, and stderr says where the page went
    page = tmp_path / "r.html"
    for _ in range(2):
        res = run_subprocess("epoch", str(log), "--html", str(page), timeout=300)
        assert res.returncode == 1 and f"wrote the HTML report to {page}" in res.stderr
    assert page.read_text().startswith("<!DOCTYPE html")
