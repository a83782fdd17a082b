#!/usr/bin/env python3
"""Check trainproof's W&B reader against W&B's own reader of ``.wandb`` run logs.

Writes a set of varied real runs with the real ``wandb`` client, offline, into a temporary
directory (its home, cache and config folders there too: nothing reaches the real home or
the network): different lengths, key sets, NaN, divergence, nested dicts, media and tables,
``define_metric`` step metrics, a record longer than a 32 KiB block; then damaged copies of
one (cut at several places, one flipped byte). For each ``.wandb`` file it compares the
``(key, step, value, record)`` points of

* ours: ``trainproof.formats.wandb.read`` (raw keys, before alias mapping), and
* W&B: ``wandb-core leet inspect --json --run-file FILE``, the Go transaction-log reader
  the installed wandb ships (wandb 0.31's Python client has no ``.wandb`` reader of its
  own), its history rows read by the rules of ``tests/_wandb_runs.reference_points``,

and writes ``evidence/wandb-table.md``. Usage (from the repository root)::

    .venv/bin/python evidence/wandb_table.py            # writes evidence/wandb-table.md
    .venv/bin/python evidence/wandb_table.py --out -    # print instead

Needs the ``dev`` extra (``wandb``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import platform
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "evidence" / "wandb-table.md"
sys.path.insert(0, str(ROOT / "tests"))

try:
    import trainproof
    from trainproof.formats import ReadError
except ImportError:  # running without the package installed: use the src layout
    sys.path.insert(0, str(ROOT / "src"))
    import trainproof
    from trainproof.formats import ReadError

import _wandb_runs as W  # noqa: E402 (after the path set-up above)

SPECS = [
    W.Spec("short", steps=12, seed=1),
    W.Spec("healthy-300", steps=300, seed=2),
    W.Spec("healthy-3000-wide", steps=3000, seed=3, extra_keys=12),
    W.Spec("nan", kind="nan", steps=400, seed=4),
    W.Spec("diverged", kind="diverged", steps=400, seed=5, loss_key="loss"),
    W.Spec("nested-media", steps=500, seed=6, nested=True, media_every=25),
    W.Spec("hf-style-global-step", steps=600, seed=7, step_metric="train/global_step", step_scale=4),
    W.Spec(
        "lightning-style-nan",
        kind="nan",
        steps=300,
        seed=8,
        loss_key="train_loss",
        step_metric="trainer/global_step",
        nested=True,
    ),
    W.Spec("big-config-record", steps=200, seed=9, config={"notes": "x" * 100_000, "max_steps": 200}),
]


@dataclass
class Row:
    label: str
    size: int
    ours: list
    theirs: list
    mismatches: int
    note: str


def compare(label: str, path: Path, root: Path, why: str = "") -> Row:
    notes = [why] if why else []
    try:
        ours, state = W.our_points(path)
        notes += [f"ours: {d}" for d in state.drops]
    except ReadError as e:
        ours = []
        notes.append(f"ours: ReadError: {e}")
    records, err = W.inspect_records(path, root)
    theirs = W.reference_points(records)
    if err.strip():
        notes.append(f"W&B: {err.strip().splitlines()[-1]}")
    a, b = Counter(W.as_multiset(ours)), Counter(W.as_multiset(theirs))
    mism = sum(((a - b) + (b - a)).values())
    if mism:
        only_theirs = sorted({n for _, _, _, n in (b - a)})
        notes.append(
            f"{sum((b - a).values())} points only W&B reads (records {only_theirs[0]}–{only_theirs[-1]})"
            if only_theirs
            else f"{sum((a - b).values())} points only ours reads"
        )
    return Row(label, path.stat().st_size, ours, theirs, mism, "; ".join(notes))


def damaged(src: Path, tmp: Path) -> list[tuple[str, Path, str]]:
    """Copies of ``src`` cut at five places and with one byte flipped in its second block."""
    data = src.read_bytes()
    out = []
    for frac in (0.0005, 0.25, 0.5, 0.75, 0.9999):
        k = max(8, int(len(data) * frac))
        p = tmp / f"cut-{k}.wandb"
        p.write_bytes(data[:k])
        out.append((f"`{src.name}` cut at byte {k:,}", p, "a run killed mid-write"))
    flip = bytearray(data)
    at = 32 * 1024 + 500
    flip[at] ^= 0x40
    p = tmp / "flipped.wandb"
    p.write_bytes(bytes(flip))
    out.append(
        (
            f"`{src.name}`, byte {at:,} flipped",
            p,
            "damage inside the file: both readers give up the rest of the damaged 32 KiB block and read "
            "on from the first record of the next one; ours says where and how much (TP-DATA-DROPPED)",
        )
    )
    return out


def _versions() -> str:
    from importlib import metadata

    parts = [f"Python {platform.python_version()}", f"trainproof {getattr(trainproof, '__version__', '?')}"]
    for dist in ("wandb", "protobuf"):
        try:
            parts.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            pass
    try:
        rev = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "src"], capture_output=True, text=True
        ).stdout.strip()
        parts.append(f"commit {rev}{' (src/ modified)' if dirty else ''}")
    except (OSError, subprocess.CalledProcessError):
        pass
    return ", ".join(parts)


def _cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def render(sections: list[tuple[str, list[Row], str]]) -> str:
    rows = [r for _, rs, _ in sections for r in rs]
    expected = sum(r.mismatches for r in rows if "expected difference" in r.note)
    lines = [
        "# W&B run logs: trainproof's reader vs W&B's own",
        "",
        "<!-- Generated file: do not edit. Regenerate from the repository root with",
        "     .venv/bin/python evidence/wandb_table.py -->",
        "",
        f"Generated {_dt.date.today().isoformat()} by `evidence/wandb_table.py` "
        "(regenerate: `.venv/bin/python evidence/wandb_table.py` from the repository root).",
        "",
        f"Versions: {_versions()}.",
        "",
        f"**Summary: {len(rows)} `.wandb` files, {sum(len(r.ours) for r in rows)} values read by ours, "
        f"{sum(len(r.theirs) for r in rows)} by W&B's reader, {sum(r.mismatches for r in rows)} mismatches"
        + (f" ({expected} of them an explained difference below)" if expected else "")
        + ".**",
        "",
        "## What is compared",
        "",
        "* **Runs**: written by this script with the real `wandb` client (`WANDB_MODE=offline`, every W&B "
        "folder and `HOME` in a temporary directory), one `run.log` per row: a loss (decreasing from about "
        "2.3 with mild noise, or turning NaN half-way, or growing by orders of magnitude), a learning rate, "
        "and per run extra keys, nested dicts (`{'opt': {'grad': {'norm': …}}}`), histograms and tables "
        "every few rows, `define_metric('*', step_metric=…)` as the Hugging Face and Lightning "
        "integrations make it, or a config record longer than a 32 KiB block. Not committed.",
        "* **Ours**: `trainproof.formats.wandb.read(path, ReadState())` on the run's `.wandb` file: raw keys "
        "before alias mapping, one `(key, step, value, record number)` per number.",
        "* **W&B**: `wandb-core leet inspect --json --run-file FILE` (the transaction-log reader in the "
        "`wandb-core` binary the wandb package installs), one JSON object per record with its 1-based "
        "number. Its history rows are read by the reader's documented rules "
        "(`tests/_wandb_runs.reference_points`): numbers and `NaN`/`Infinity` kept, objects with a `_type` "
        "(media, histograms, tables) left out, `_step` or the defined step metric as the step (a row "
        "without it at its last value), rows holding nothing but `_timestamp`/`_runtime` left out. "
        "`inspect` joins nested keys with `.` and ours with `/`: keys are compared with the two made one.",
        "* **Exactness**: values by their float64 bits (NaN equals NaN, no tolerance), steps likewise, and "
        "the record number must agree too.",
        "* **Mismatches** = size of the multiset symmetric difference of the two point lists.",
        "",
    ]
    for title, rs, intro in sections:
        lines += [f"## {title}", ""]
        if intro:
            lines += [intro, ""]
        lines += [
            "| run log | bytes | values (ours) | values (W&B) | mismatches | note |",
            "|---|---:|---:|---:|---:|---|",
        ]
        for r in rs:
            lines.append(
                f"| {_cell(r.label)} | {r.size:,} | {len(r.ours)} | {len(r.theirs)} | {r.mismatches} "
                f"| {_cell(r.note) or 'identical'} |"
            )
        lines.append("")
    lines += [
        "## Not covered here",
        "",
        "* Resumed runs: an offline resume writes a second run folder with its own `.wandb` file; each "
        "file is read on its own here (merging a run's folders is `doctor`'s grouping, not the reader's).",
        "* Older clients' `files/wandb-history.jsonl` folders (no `.wandb` file): tested in "
        "`tests/formats/test_wandb.py` with hand-written files; the installed client no longer writes them.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(OUT), help="markdown output path, or - for stdout (default: %(default)s)")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="tp_wandb_evidence_"))
    try:
        dirs = W.write_runs(tmp, SPECS, timeout=900)
        logs = [next(d.glob("run-*.wandb")) for d in dirs]
        real = [compare(f"`{s.name}` ({s.steps} rows)", p, tmp) for s, p in zip(SPECS, logs)]
        print(f"real runs: {len(real)}", file=sys.stderr)
        big = max(logs, key=lambda p: p.stat().st_size)
        dmg = [compare(label, p, tmp, why) for label, p, why in damaged(big, tmp)]
        sections = [
            ("Real offline runs", real, f"{len(real)} runs, one `.wandb` file each."),
            (
                "Damaged copies",
                dmg,
                f"Copies of the largest log (`{big.parent.name}/{big.name}`, {big.stat().st_size:,} bytes).",
            ),
        ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    text = render(sections) + "\n"
    if args.out == "-":
        sys.stdout.write(text)
    else:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    print(f"mismatches: {sum(r.mismatches for _, rs, _ in sections for r in rs)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
