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


_TOY_RENDERER = """
from trainproof.render.text import printable


def write(reports, path, *, baseline=None):
    lines = ["# trainproof", "", "| run | verdict |", "|---|---|"]
    lines += [f"| {printable(r.file)} | {r.verdict.value} |" for r in reports]
    path.write_text("\\n".join(lines) + "\\n", encoding="utf-8")
"""

_REGISTER_RENDERER = """
from trainproof import render
render.RENDERERS += (  # the one registration line
    render.Renderer("markdown", "toy_markdown", (b"# trainproof", b"trainproof"), "Also write a Markdown table."),
)
"""


def test_a_renderer_is_one_line_in_renderers(tmp_path):
    (tmp_path / "toy_markdown.py").write_text(_TOY_RENDERER)
    log = tmp_path / "metrics.jsonl"
    log.write_text("".join(json.dumps({"step": i, "loss": 2.0 / i}) + "\n" for i in range(1, 80)))
    out = tmp_path / "report.md"
    proc = _python(
        tmp_path,
        _REGISTER_RENDERER
        + f"""
import sys
from trainproof.cli import main
try:
    main(["epoch", {str(log)!r}, "--markdown", {str(out)!r}])
except SystemExit as e:
    print("EXIT", e.code)
try:
    main(["epoch", "--help"])
except SystemExit:
    pass
""",
    )
    assert "EXIT 0" in proc.stdout, proc.stderr
    assert "--markdown" in proc.stdout and "Also write a Markdown table." in proc.stdout  # the option, from the table
    assert out.read_text().splitlines()[-1] == f"| {log} | PASS |"


def test_a_registered_renderer_does_not_overwrite_a_log_or_reach_the_preflight_family(tmp_path):
    (tmp_path / "toy_markdown.py").write_text(_TOY_RENDERER)
    log = tmp_path / "metrics.jsonl"
    text = "".join(json.dumps({"step": i, "loss": 2.0 / i}) + "\n" for i in range(1, 80))
    log.write_text(text)
    proc = _python(
        tmp_path,
        _REGISTER_RENDERER
        + f"""
from trainproof.cli import main
for argv in (["epoch", {str(log)!r}, "--markdown", {str(log)!r}], ["env", "--markdown", "x.md"]):
    try:
        main(argv)
    except SystemExit as e:
        print("EXIT", e.code)
""",
    )
    # the log given as the report's path is refused, by the renderer's declared start
    assert proc.stdout.split() == ["EXIT", "2", "EXIT", "2"], proc.stderr
    assert "--markdown" in proc.stderr and "is not a trainproof report" in proc.stderr
    assert log.read_text() == text
    # a renderer that is not declared `everywhere` is an option of the log commands only
    assert "No such option '--markdown'" in proc.stderr
    assert not (tmp_path / "x.md").exists()
