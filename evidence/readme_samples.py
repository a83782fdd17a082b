"""Regenerate the sample outputs of README.md and the guides (docs/*.md) from the commands they show.

A sample is a ```console block whose first line is ``$ trainproof …``: the rest of the
block is that command's standard output, run from the repository root with
``COLUMNS=80`` and ``NO_COLOR=1`` (a CI log's view). ``python evidence/readme_samples.py``
rewrites every page of :func:`pages` in place; ``tests/project/test_readme_samples.py`` fails when
a sample and its command's output differ, so neither the README nor a guide can drift
from the tool.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
_BLOCK = re.compile(r"```console\n\$ (trainproof [^\n]*)\n(.*?)```", re.S)


def run_sample(command: str) -> str:
    """The standard output of one sample's command (``trainproof …``), as the README shows it.

    Raises:
        RuntimeError: the command did not judge (an exit code but 0 and 1, or no output:
            trainproof not importable exits 1 too), with its stderr, rather than a wrong sample.
    """
    env = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1", "TERM": "dumb"}
    env.pop("FORCE_COLOR", None)
    args = shlex.split(command)
    proc = subprocess.run(
        [sys.executable, "-m", "trainproof", *args[1:]], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        raise RuntimeError(f"`{command}` exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return proc.stdout


def pages() -> list[Path]:
    """The pages whose samples are checked: README.md, then each guide ``docs/*.md`` by name
    (the generated rule pages under ``docs/rules/`` hold none)."""
    return [README, *sorted(DOCS.glob("*.md"))]


def samples(text: str) -> list[tuple[str, str]]:
    """Each sample's ``(command, output as written)``."""
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(text)]


def regenerate(text: str) -> str:
    """``text`` with each sample's output replaced by its command's output."""

    def sub(m: re.Match) -> str:
        out = run_sample(m.group(1))
        return f"```console\n$ {m.group(1)}\n{out.rstrip()}\n```"

    return _BLOCK.sub(sub, text)


if __name__ == "__main__":
    for page in pages():
        text = page.read_text(encoding="utf-8")
        n = len(samples(text))
        if n:
            page.write_text(regenerate(text), encoding="utf-8")
            print(f"regenerated {n} sample(s) in {page.relative_to(ROOT)}")
