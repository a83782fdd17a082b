"""The registration claims of CONTRIBUTING.md, each shown end to end: a rule in a new
module, a new preflight family and command, a new format (tests/formats/test_base.py) and
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

import pytest

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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


_TOY_IDS = '''
"""The ids of the toy file check (declarations only)."""

from trainproof.findings import Level
from trainproof.rules.registry import declare

GROUP = "toyfile"
ORDER = 9

declare(
    "TP-TOY-FILE-EMPTY",
    Level.FAIL,
    GROUP,
    "The file is empty",
    detects="The file given holds no bytes.",
    why="A made-up check, to show registration.",
    not_mean="Nothing.",
    causes="A test.",
    try_="Nothing.",
)
declare(
    "TP-TOY-FILE-OK",
    Level.PASS,
    GROUP,
    "The file holds bytes",
    detects="The file given holds at least one byte.",
    why="A made-up check, to show registration.",
    not_mean="Nothing.",
    causes="A test.",
    try_="Nothing.",
)
'''

_TOY_COMMAND = '''
"""``trainproof toyfile FILE``: is FILE empty?"""

from pathlib import Path

import click

from trainproof.cli.options import output_options
from trainproof.cli.output import emit_reports, settings


@click.command("toyfile")
@click.argument("path", type=click.Path(path_type=Path))
@output_options
def toyfile_cmd(path, as_json, mute, config_path, outputs):
    """Check that FILE holds at least one byte."""
    from trainproof import preflight

    _, cfg = settings("toyfile", as_json, (), mute, config_path)

    def empty(th):
        size = path.stat().st_size
        if size == 0:
            return [preflight.finding("TP-TOY-FILE-EMPTY", f"{path} holds no bytes")]
        return [preflight.finding("TP-TOY-FILE-OK", f"{path} holds {size} bytes")]

    checks = [preflight.Check(("TP-TOY-FILE-EMPTY", "TP-TOY-FILE-OK"), empty, "empty file")]
    rep = preflight.run(checks, cfg, file=str(path), kind="toyfile")
    return emit_reports([rep], "toyfile", as_json, outputs=outputs)
'''


@pytest.mark.slow
def test_a_command_and_its_preflight_family_are_one_line_in_commands(tmp_path):
    families, cmd_dir = tmp_path / "families", tmp_path / "cmds"
    (families / "toyfile").mkdir(parents=True)
    cmd_dir.mkdir()
    # The new family package with its ids module, and the command module, as if in
    # preflight/ and cli/commands/ (the packages' search paths extended, so the checkout
    # stays as it is).
    (families / "toyfile" / "__init__.py").write_text('"""The toy file check."""\n')
    (families / "toyfile" / "ids.py").write_text(_TOY_IDS)
    (cmd_dir / "toyfile.py").write_text(_TOY_COMMAND)
    empty, full = tmp_path / "empty.txt", tmp_path / "full.txt"
    empty.write_bytes(b"")
    full.write_bytes(b"abc")
    sarif = tmp_path / "toy.sarif"
    proc = _python(
        tmp_path,
        f"""
        import json
        import trainproof.cli.commands, trainproof.preflight
        trainproof.preflight.__path__.append({str(families)!r})
        trainproof.cli.commands.__path__.append({str(cmd_dir)!r})
        from trainproof.cli import app
        app.COMMANDS["toyfile"] = ("toyfile", "toyfile_cmd", "Check that FILE holds at least one byte.")  # the line
        for argv in (
            ["toyfile", {str(empty)!r}, "--sarif", {str(sarif)!r}],
            ["toyfile", {str(full)!r}, "--json"],
            ["toyfile", {str(empty)!r}, "--json", "--mute", "TP-TOY-FILE-EMPTY", "--mute", "TP-TOY-FILE-OK"],
            ["rules", "TP-TOY-FILE-EMPTY"],
            ["--help"],
        ):
            try:
                app.main(argv)
            except SystemExit as e:
                print("EXIT", e.code)
        """,
    )
    out = proc.stdout
    exits = [line for line in out.splitlines() if line.startswith("EXIT")]
    assert exits == ["EXIT 1", "EXIT 0", "EXIT 2", "EXIT 0", "EXIT 0"], proc.stderr
    assert "TP-TOY-FILE-EMPTY" in out and "holds no bytes" in out  # the text report
    assert json.loads(sarif.read_text())["runs"][0]["results"][0]["ruleId"] == "TP-TOY-FILE-EMPTY"
    docs = [json.loads(chunk) for chunk in _json_documents(out)]
    assert docs[0]["command"] == "toyfile" and docs[0]["reports"][0]["verdict"] == "PASS"
    muted = docs[1]["reports"][0]
    assert muted["findings"] == [] and muted["checks"]["ran"] == []
    assert {k: v["reason"] for k, v in muted["checks"]["skipped"].items()} == {
        "TP-TOY-FILE-EMPTY": "muted",
        "TP-TOY-FILE-OK": "muted",
    }
    assert "The file given holds no bytes." in out  # its page, from the declarations
    assert "toyfile" in out.split("Commands:")[-1] and "Check that FILE holds at least one byte." in out


def _json_documents(text: str) -> list[str]:
    """The JSON documents printed in ``text`` (each starts with a line ``{`` and ends with ``}``)."""
    docs, cur = [], None
    for line in text.splitlines():
        if line == "{":
            cur = [line]
        elif cur is not None:
            cur.append(line)
            if line == "}":
                docs.append("\n".join(cur))
                cur = None
    return docs
