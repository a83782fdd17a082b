"""The registration claims of CONTRIBUTING.md, each shown end to end: a rule in a new
module, a new preflight family and command, a new format (tests/test_reader_protocol.py) and
a new renderer each need their module, their test and at most one registration line.

Each runs in a fresh interpreter, so that what it registers does not leak into the other
tests' registry.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import REPO

_TOY_RULES = """
from trainproof.findings import Level
from trainproof.rules.registry import Need, rule


@rule(
    "TP-TOY-LOSS-ABOVE-TEN",
    Level.WARN,
    "loss",
    "the loss is above ten at the end",
    needs=[Need("loss", "dead_min_points")],
    thresholds=["dead_min_points"],
    detects="The last loss is above 10 (at least {dead_min_points} points).",
    why="A made-up rule, to show registration.",
    not_mean="Nothing.",
    causes="A test.",
    try_="Nothing.",
)
def check_toy(ctx):
    s = ctx.finite("loss")
    if s.values[-1] > 10:
        yield ctx.finding(f"last loss {s.values[-1]:g}", f"over {len(s)} points", {"last": float(s.values[-1])})
"""


def _python(tmp_path: Path, code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": f"{tmp_path}:{REPO / 'src'}", "PATH": "/usr/bin:/bin", "NO_COLOR": "1"},
        timeout=120,
    )


def test_a_rule_in_a_new_module_is_one_line_in_rule_modules(tmp_path):
    (tmp_path / "toy_rules.py").write_text(_TOY_RULES)
    log = tmp_path / "metrics.jsonl"
    log.write_text("".join(json.dumps({"step": i, "loss": 20.0 - 0.01 * i}) + "\n" for i in range(1, 60)))
    proc = _python(
        tmp_path,
        f"""
        from trainproof.rules import registry
        registry.RULE_MODULES += ("toy_rules",)  # the one registration line
        from trainproof import api
        from trainproof.cli import main
        rep = api.judge({str(log)!r})
        print("FOUND", [f.id for f in rep.findings if f.id.startswith("TP-TOY")], "TP-TOY-LOSS-ABOVE-TEN" in rep.ran)
        main(["rules", "TP-TOY-LOSS-ABOVE-TEN"])
        """,
    )
    assert "FOUND ['TP-TOY-LOSS-ABOVE-TEN'] True" in proc.stdout, proc.stderr
    assert "The last loss is above 10 (at least 10 points)." in proc.stdout  # its page, the threshold in force
    assert proc.returncode == 0, proc.stderr


def test_without_the_line_the_rule_is_unknown(tmp_path):
    (tmp_path / "toy_rules.py").write_text(_TOY_RULES)
    proc = _python(tmp_path, "from trainproof.rules import registry; print(registry.get('TP-TOY-LOSS-ABOVE-TEN'))")
    assert proc.stdout.strip() == "None", proc.stderr
