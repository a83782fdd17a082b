"""README's "Inside the model" snippet runs as shown and prints what the README says.

The snippet is taken from README.md itself (the first ``python`` block of that section)
and run as a program, in a fresh process, with this checkout's sources; its output must
hold every line of the ``text`` block after it. A line the README does not show may only
be a finding of the speed group: step times on a shared machine are the machine's, not
the run's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from trainproof.rules.registry import get  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def section(text: str, heading: str) -> str:
    """The body of the README section under ``heading`` (to the next heading of any level)."""
    start = text.index(heading + "\n") + len(heading) + 1
    nxt = re.search(r"^#{1,6} ", text[start:], flags=re.M)
    return text[start : start + nxt.start()] if nxt else text[start:]


@pytest.mark.slow
def test_the_inside_the_model_snippet_prints_what_the_readme_shows(tmp_path):
    body = section((REPO / "README.md").read_text(encoding="utf-8"), "### Inside the model")
    code = re.search(r"```python\n(.*?)```", body, flags=re.S).group(1)
    shown = re.search(r"```python\n.*?```\s*```text\n(.*?)```", body, flags=re.S).group(1).splitlines()
    assert shown and any("TP-PARAMS-NOT-OPTIMIZED" in line for line in shown)
    script = tmp_path / "snippet.py"
    script.write_text(code, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    missing = [line for line in shown if line not in out]
    assert not missing, (missing, proc.stdout)
    heads = [line for line in out if not line.startswith("  ") and line not in shown]
    for line in heads:
        rule = get(line.split(" ")[1].rstrip(":"))
        assert rule is not None and rule.group == "speed", (line, proc.stdout)
