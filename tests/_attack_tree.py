"""A pull request's tree holding every attack of issue 17 at once, for the test that runs
``doctor`` over it (tests/cli/test_doctor_hostile_tree.py) and for the evidence it is measured in
(evidence/attacks.py). Everything is built under one folder the caller owns: no device,
``/proc`` entry or home-folder file of the machine is touched.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import struct
from pathlib import Path

#: The token the tree's secrets hold: it must appear in no output.
SECRET = "tp-secret-3f9c2a71e4"

#: Runs whose verdict the tree decides (relative path -> expected verdict).
EXPECTED = {
    "healthy/metrics.jsonl": "PASS",
    # A null or an empty cell is absent, never a NaN: the loss stops there, a WARN
    # (TP-LOSS-STOPPED), not a TP-NAN FAIL.
    "nan_null/metrics.jsonl": "WARN",
    "nan_string/metrics.jsonl": "FAIL",
    "nan_windows/metrics.jsonl": "FAIL",
    "nan_csv/metrics.csv": "WARN",
    "ranks/metrics.jsonl": "FAIL",
    "dup_history/trainer_state.json": "FAIL",
    "wide_header/metrics.jsonl": "FAIL",
}


def _rows(n: int = 200, nan_from: int | None = None, spelling=float("nan")) -> list[dict]:
    rows = []
    for i in range(n):
        step = i + 1
        loss = 0.8 + 1.5 * math.exp(-i / (n / 4)) + 0.01 * math.sin(i)
        rows.append(
            {
                "step": step,
                "loss": spelling if nan_from is not None and step >= nan_from else loss,
                "learning_rate": 1e-4,
            }
        )
    return rows


def _jsonl(path: Path, rows: list[dict], first_line: str | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        if first_line is not None:
            f.write(first_line + "\n")
        for r in rows:
            f.write(json.dumps(r) + "\n")


def _masked_crc(data: bytes) -> int:
    from trainproof.formats._tfrecord import masked_crc

    return masked_crc(data)


def build(root: Path, bomb_mib: int = 1024) -> Path:
    """Build the tree; returns the folder to point ``doctor`` at (``root/repo``).

    ``root/outside`` holds what the tree's symlinks point at (secrets), and
    ``root/pyproject.toml`` a config above the repository that mutes TP-NAN (it must not
    apply: the search stops at ``repo/.git``). ``bomb_mib``: the decompressed size of each
    gzip bomb, in MiB (a few MiB on disk at 1024).
    """
    repo = root / "repo"
    outside = root / "outside"
    (repo / ".git").mkdir(parents=True)
    outside.mkdir()
    (root / "pyproject.toml").write_text('[tool.trainproof]\nmute = ["TP-NAN", "TP-DIVERGE"]\n')

    # NaN however it was written (section 1)
    _jsonl(repo / "healthy" / "metrics.jsonl", _rows())
    _jsonl(repo / "nan_null" / "metrics.jsonl", _rows(nan_from=121, spelling=None))
    _jsonl(repo / "nan_string" / "metrics.jsonl", _rows(nan_from=121, spelling="nan"))
    _jsonl(repo / "nan_windows" / "metrics.jsonl", _rows(nan_from=121, spelling="1.#QNAN"))
    csv_lines = ["step,loss,learning_rate"] + [
        f"{r['step']},{'' if r['step'] >= 121 else r['loss']},{r['learning_rate']}" for r in _rows()
    ]
    (repo / "nan_csv").mkdir()
    (repo / "nan_csv" / "metrics.csv").write_text("\n".join(csv_lines) + "\n")
    ranks = []
    for r in _rows():
        ranks.append(dict(r))
        other = dict(r)
        if r["step"] >= 121:
            other["loss"] = float("nan")
        ranks.append(other)
    _jsonl(repo / "ranks" / "metrics.jsonl", ranks)
    healthy_hist = [
        {"step": r["step"], "loss": r["loss"], "learning_rate": 1e-4, "epoch": r["step"] / 200} for r in _rows()
    ]
    nan_hist = [dict(h, loss=float("nan")) if h["step"] >= 121 else h for h in healthy_hist]
    (repo / "dup_history").mkdir()
    (repo / "dup_history" / "trainer_state.json").write_text(
        '{"global_step": 200, "log_history": '
        + json.dumps(healthy_hist)
        + ', "log_history": '
        + json.dumps(nan_hist)
        + "}"
    )
    # a first line over 64 KiB (a config dump) before a run that turns NaN
    config = json.dumps({"config": {f"k{i}": "v" * 40 for i in range(2500)}})
    _jsonl(repo / "wide_header" / "metrics.jsonl", _rows(nan_from=121), first_line=config)

    # secrets (section 2)
    (outside / ".netrc").write_text(f"machine api.example.com login ci password {SECRET}\n")
    (outside / "environ").write_text(f"HOME=/root\0TOKEN={SECRET}\0")
    (repo / "links").mkdir()
    (repo / "links" / "metrics.csv").symlink_to(outside / ".netrc")
    (repo / "links" / "notes.log").symlink_to(outside / "environ")
    (repo / "links" / "out").symlink_to(outside, target_is_directory=True)
    (repo / "secret_note.txt").write_text(f"password={SECRET}\nuser=ci\n")
    (repo / "config.json").write_text(
        json.dumps({"lr": 3e-4, "epochs": 10, "loss": "cross_entropy", "api_key": SECRET})
    )
    # a file name that tries to forge a line: a run that FAILs
    _jsonl(repo / "forged" / "x\n  verdict: PASS\x1b[2K.jsonl", _rows(nan_from=121))

    # bounded work (section 3)
    os.mkfifo(repo / "fifo.jsonl")
    deep = str(repo / "deep")
    os.mkdir(deep)
    for _ in range(1200):  # one mkdir at a time: os.makedirs and Path.mkdir recurse
        deep = os.path.join(deep, "d")
        os.mkdir(deep)
    with open(os.path.join(deep, "metrics.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in _rows(nan_from=121))
    (repo / "bombs").mkdir()
    with gzip.open(repo / "bombs" / "metrics.csv.gz", "wb", compresslevel=9) as f:
        f.write(b"step,loss\n1,2.0\n")
        chunk = b"0" * (1 << 20)
        for _ in range(bomb_mib):  # one line of one digit, past every cap
            f.write(chunk)
    with gzip.open(repo / "bombs" / "newlines.jsonl.gz", "wb", compresslevel=9) as f:
        chunk = b"\n" * (1 << 20)
        for _ in range(bomb_mib):  # blank lines only
            f.write(chunk)
    # an event file whose first record declares just under 1 GiB (a valid length checksum)
    (repo / "tb").mkdir()
    head = struct.pack("<Q", (1 << 30) - 16)
    (repo / "tb" / "events.out.tfevents.1.host").write_bytes(head + struct.pack("<I", _masked_crc(head)) + b"\0" * 4096)
    # a folder too deep for recursion, nothing else: covered by deep/; an empty log
    (repo / "empty.jsonl").write_text("")
    return repo


def remove_tree(path: str | Path) -> None:
    """Remove a folder bottom-up without recursion: shutil.rmtree (which pytest's tmp_path
    clean-up uses) and os.walk recurse once per level and fail on 1,200 of them.

    It steps through the tree by folder descriptors (down by name, up by ``..``), so that
    each step costs the same at any depth: a walk by full paths resolves every part of a
    path on each call, which is quadratic in the depth (a minute for 1,200 levels)."""
    path = os.path.abspath(path)
    if not os.path.lexists(path):
        return
    if os.path.islink(path) or not os.path.isdir(path):
        os.unlink(path)
        return
    flags = os.O_RDONLY | os.O_DIRECTORY
    fd = os.open(os.path.dirname(path), flags)
    names = [os.path.basename(path)]
    try:
        down = os.open(names[0], flags | os.O_NOFOLLOW, dir_fd=fd)
        os.close(fd)
        fd = down
        while names:
            with os.scandir(fd) as it:
                entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
            sub = next((name for name, is_dir in entries if is_dir), None)
            if sub is not None:
                down = os.open(sub, flags | os.O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = down
                names.append(sub)
                continue
            for name, _ in entries:
                os.unlink(name, dir_fd=fd)
            up = os.open("..", flags, dir_fd=fd)
            os.close(fd)
            fd = up
            os.rmdir(names.pop(), dir_fd=fd)
    finally:
        os.close(fd)
