#!/usr/bin/env python3
"""Measure the healthy runs of the shared corpus: the numbers the zoo's healthy generators
(``tests/_zoo.py``) are calibrated on.

Every file of ``../shared/corpus/MANIFEST.tsv`` labelled ``healthy`` is read with
trainproof's own reader (:func:`trainproof.api.read_runlog`); its train loss is measured by
:func:`measure` (noise, autocorrelation, spikes, fall, shape, length, cadence) and the
distribution of each measure over the corpus (min, quartiles, max) is printed.

Usage (from the repository root)::

    PYTHONPATH=src:tests python bench/zoo_calibrate.py            # the table
    PYTHONPATH=src:tests python bench/zoo_calibrate.py --per-file # and one line per file
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]

from _zoo import MEASURES, measure  # noqa: E402  (tests/ is on the path from here on)


def healthy_files() -> list[dict]:
    """The MANIFEST rows labelled ``healthy``."""
    with open(CORPUS / "MANIFEST.tsv", encoding="utf-8") as f:
        return [row for row in csv.DictReader(f, delimiter="\t") if row["label"] == "healthy"]


def measure_corpus(verbose: bool = False) -> tuple[list[dict], list[tuple[str, str]]]:
    """Every healthy file measured: (one dict per file with ``id`` and ``format``, the files
    that could not be measured with the reason)."""
    from trainproof.api import read_runlog

    rows, skipped = [], []
    for row in healthy_files():
        try:
            run = read_runlog(CORPUS / row["file"])
        except Exception as e:  # a reader's refusal is a line of the report, not a stop
            skipped.append((row["id"], f"unreadable: {e}"))
            continue
        s = run.get("loss")
        if s is None:
            skipped.append((row["id"], "no train loss"))
            continue
        m = np.isfinite(s.values)
        ev = run.get("eval_loss")
        got = measure(s.steps[m], s.values[m], None if ev is None else ev.steps[np.isfinite(ev.values)])
        got.update(id=row["id"], format=row["format"])
        rows.append(got)
        if verbose:
            shown = " ".join(f"{k}={got[k]:.4g}" for k in MEASURES)
            print(f"{row['id']:<44} {shown}")
    return rows, skipped


def distribution(rows: list[dict]) -> dict[str, tuple[int, list[float]]]:
    """measure -> (files measured, [min, p10, p25, p50, p75, p90, max])."""
    out = {}
    for k in MEASURES:
        v = np.array([r[k] for r in rows], dtype=float)
        v = v[np.isfinite(v)]
        qs = np.percentile(v, [0, 10, 25, 50, 75, 90, 100]).tolist() if v.size else [float("nan")] * 7
        out[k] = (int(v.size), qs)
    return out


def table(rows: list[dict]) -> list[str]:
    """The distribution as Markdown table lines."""
    lines = [
        "| measure | what | files | min | p10 | p25 | median | p75 | p90 | max |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for k, (n, qs) in distribution(rows).items():
        lines.append(f"| {k} | {MEASURES[k]} | {n} | " + " | ".join(f"{q:.3g}" for q in qs) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-file", action="store_true", help="print each file's measures too")
    args = ap.parse_args(argv)
    if not (CORPUS / "MANIFEST.tsv").exists():
        print(f"no corpus at {CORPUS}", file=sys.stderr)
        return 2
    rows, skipped = measure_corpus(args.per_file)
    print(f"{len(rows)} healthy corpus files measured; {len(skipped)} without a measurable train loss")
    for i, why in skipped:
        print(f"  skipped {i}: {why}")
    print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
