#!/usr/bin/env python3
"""Regenerate the whole gallery (examples/gallery/) with one command, then its evidence.

Runs every rig in this folder in turn (each trains every configuration at seeds 0, 1, 2
on CPU), then ``evidence/gallery.py`` (EVIDENCE_MATRIX.md, the golden verdicts, the README
table). The Coqui rig needs the ``coqui-tts-trainer`` package, which pins dependencies of
its own; give it a separate interpreter with ``--coqui-python`` (e.g. a venv made with
``python -m venv /tmp/coqui && /tmp/coqui/bin/pip install torch==2.13.0
coqui-tts-trainer``); without one it is skipped, with a message.

Usage (from the repository root)::

    python examples/rigs/run_all.py
    python examples/rigs/run_all.py --coqui-python /tmp/coqui/bin/python --only torch hf
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
RIGS = ("hf", "lightning", "keras", "torch", "coqui")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--coqui-python", help="interpreter with coqui-tts-trainer installed")
    ap.add_argument("--only", nargs="+", choices=RIGS, help="run only these rigs")
    a = ap.parse_args()
    failed = []
    for name in a.only or RIGS:
        python = sys.executable
        if name == "coqui":
            if not a.coqui_python:
                print("coqui: skipped (no --coqui-python; the committed Coqui logs stay as they are)")
                continue
            python = a.coqui_python
        t0 = time.perf_counter()
        print(f"{name}: running examples/rigs/{name}_rig.py", flush=True)
        p = subprocess.run([python, str(HERE / f"{name}_rig.py")], cwd=REPO)
        print(f"{name}: exit {p.returncode} after {time.perf_counter() - t0:.0f} s", flush=True)
        if p.returncode:
            failed.append(name)
    if failed:
        print("failed: " + ", ".join(failed), file=sys.stderr)
        return 1
    return subprocess.run([sys.executable, str(REPO / "evidence" / "gallery.py")], cwd=REPO).returncode


if __name__ == "__main__":
    sys.exit(main())
