"""The GitHub Action on a pull request's files: it runs only trainproof's own code, and no
name in the logs can issue a workflow command or forge a step output.

The first test runs the doctor step's command line exactly as ``action.yml`` writes it
(read from the file), with a virtual environment's Python, in a "checkout" that plants
``trainproof/`` at its root. The others read the step's output by the runner's rules
(:func:`runner_commands`, after GitHub's "Workflow commands for GitHub Actions" and
actions/runner's ``ActionCommand``): ``::name::`` at a line's start after leading blanks,
``##[name]`` anywhere in a line, ``::stop-commands::TOKEN`` until ``::TOKEN::``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import REPO

yaml = pytest.importorskip("yaml")

from trainproof.ci import github_action as ga  # noqa: E402

ACTION = REPO / "action.yml"

#: The workflow commands a runner knows (GitHub's docs list them); the strict reading
#: below takes any name as a command, so this list only names what the job would lose.
KNOWN = {
    "add-mask",
    "add-matcher",
    "add-path",
    "debug",
    "echo",
    "endgroup",
    "error",
    "group",
    "notice",
    "remove-matcher",
    "save-state",
    "set-env",
    "set-output",
    "stop-commands",
    "warning",
}


# --------------------------------------------------------------------------- the runner's rules


def runner_lines(text: str) -> list[str]:
    """Lines as the runner reads a process's output (.NET ``ReadLine``: ``\\r\\n``, ``\\r``
    or ``\\n`` ends a line)."""
    return re.split(r"\r\n|\r|\n", text.removesuffix("\n"))


def parse_command(line: str, names: set[str] | None = None) -> tuple[str, str] | None:
    """``(name, data)`` when the runner reads ``line`` as a workflow command, else ``None``.

    ``::name props::data`` after leading white space, or ``##[name props]data`` anywhere in
    the line; ``names``: the command names the runner knows (case-insensitive), ``None``
    for any non-empty name (the strict reading)."""

    def known(name: str) -> bool:
        return bool(name) and (names is None or name.lower() in {n.lower() for n in names})

    body = line.lstrip()
    if body.startswith("::"):
        end = body.find("::", 2)
        if end >= 0:
            name = body[2:end].split(" ", 1)[0]
            if known(name):
                return name, body[end + 2 :]
    start = line.find("##[")
    if start >= 0:
        end = line.find("]", start)
        if end >= 0:
            name = line[start + 3 : end].split(" ", 1)[0]
            if known(name):
                return name, line[end + 1 :]
    return None


def runner_commands(text: str) -> list[tuple[str, str]]:
    """The commands a runner would carry out on ``text``, stop-commands honoured: after
    ``::stop-commands::TOKEN`` only ``::TOKEN::`` (which resumes) is read."""
    done, stop = [], None
    for line in runner_lines(text):
        cmd = parse_command(line, KNOWN | ({stop} if stop else set()))
        if cmd is None:
            continue
        if stop is not None:
            if cmd[0].lower() == stop.lower():
                done.append(cmd)
                stop = None
            continue
        done.append(cmd)
        if cmd[0].lower() == "stop-commands":
            stop = cmd[1]
    return done


def parse_github_output(text: str) -> dict[str, str]:
    """``$GITHUB_OUTPUT`` as the runner reads it (``FileCommandManager``): lines end at
    ``\\n``; ``name=value``, or ``name<<DELIM`` then the value's lines up to a line that is
    exactly ``DELIM``."""
    out, lines, i = {}, text.split("\n"), 0
    while i < len(lines):
        line = lines[i]
        eq, heredoc = line.find("="), line.find("<<")
        if not line:
            i += 1
        elif eq >= 0 and (heredoc < 0 or eq < heredoc):
            name, value = line.split("=", 1)
            out[name] = value
            i += 1
        elif heredoc >= 0:
            name, delim = line.split("<<", 1)
            assert name and delim, line
            end = lines.index(delim, i + 1)  # ValueError: no closing delimiter, as the runner fails
            out[name] = "\n".join(lines[i + 1 : end])
            i = end + 1
        else:
            raise AssertionError(f"not an output line: {line!r}")
    return out


def test_the_parser_reads_commands_as_the_runner_does():
    assert parse_command("::error file=a::boom") == ("error", "boom")
    assert parse_command("   ::add-mask::s3cret") == ("add-mask", "s3cret")
    assert parse_command("text ##[set-output name=x]y") == ("set-output", "y")
    assert parse_command("x ::error::y") is None and parse_command("##[nope") is None
    assert parse_command("::unknown::x", KNOWN) is None and parse_command("::unknown::x") == ("unknown", "x")
    assert runner_commands("::stop-commands::tok\n::error::x\n##[add-mask]y\n::tok::\n::error::z\n") == [
        ("stop-commands", "tok"),
        ("tok", ""),
        ("error", "z"),
    ]
    assert runner_lines("a\rb\r\nc\n") == ["a", "b", "c"]


# --------------------------------------------------------------------------- a planted package


def _doctor_step() -> dict:
    action = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    (step,) = [s for s in action["runs"]["steps"] if s.get("id") == "doctor"]
    return action, step


def _venv_with_this_checkout(where: Path) -> Path:
    """A virtual environment whose Python imports trainproof from this repository's
    ``src`` and its dependencies from the running interpreter's site-packages (a ``.pth``
    file, as an editable install does): what action.yml's install step makes, without a
    download."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=300)
    py = where / "bin" / "python"
    if not py.exists():
        py = where / "Scripts" / "python.exe"
    site = subprocess.run(
        [str(py), "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.strip()
    paths = dict.fromkeys([str(REPO / "src"), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    Path(site, "trainproof_checkout.pth").write_text("\n".join(paths) + "\n", encoding="utf-8")
    return py


def _plant(checkout: Path, marker: Path) -> None:
    """The pull request's files: ``trainproof/`` at the root, every module of which writes
    ``marker`` when imported or run."""
    code = f"import pathlib; pathlib.Path({str(marker)!r}).write_text(__name__)\n"
    for rel in ("__init__.py", "__main__.py", "ci/__init__.py", "ci/github_action.py", "cli/__init__.py"):
        path = checkout / "trainproof" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code, encoding="utf-8")


def _step_env(action: dict, step: dict, python: Path, tmp: Path) -> dict:
    """The doctor step's environment as the runner gives it: its ``env:`` with each
    ``${{ inputs.X }}`` at the input's default, and the runner's own variables."""
    defaults = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INPUT_", "GITHUB_", "PYTHON"))}
    for key, value in step["env"].items():
        m = re.fullmatch(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", value)
        env[key] = str(defaults[m.group(1)]) if m else value
    env["TRAINPROOF_PYTHON"] = str(python)
    env.update(
        GITHUB_ACTIONS="true",
        GITHUB_OUTPUT=str(tmp / "github_output"),
        GITHUB_STEP_SUMMARY=str(tmp / "step_summary"),
        RUNNER_TEMP=str(tmp),
    )
    for name in ("github_output", "step_summary"):
        (tmp / name).write_text("")
    return env


@pytest.mark.slow
def test_a_planted_trainproof_package_in_the_checkout_never_runs(tmp_path):
    action, step = _doctor_step()
    python = _venv_with_this_checkout(tmp_path / "venv")
    checkout, marker = tmp_path / "checkout", tmp_path / "PLANTED-CODE-RAN"
    _plant(checkout, marker)
    shutil.copytree(REPO / "examples" / "lr_hot", checkout / "runs" / "nan")
    runner = tmp_path / "runner"
    runner.mkdir()
    env = _step_env(action, step, python, runner)
    # shell: bash, as the runner runs a step's script
    assert step["shell"] == "bash"
    script = runner / "step.sh"
    script.write_text(step["run"], encoding="utf-8")
    p = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert not marker.exists(), f"the checkout's {marker.read_text()} ran: {p.stdout + p.stderr}"
    # the real action ran the real doctor: the NaN run FAILs, the reports are written
    assert p.returncode == 1, p.stdout + p.stderr
    outs = parse_github_output((runner / "github_output").read_text())
    assert outs["verdict"] == "FAIL" and outs["fail-count"] == "1" and outs["runs"] == "1"
    assert "TP-NAN" in p.stdout and "runs/nan/metrics." in p.stdout
    assert json.loads((checkout / "trainproof.sarif").read_text())["version"] == "2.1.0"
    assert (checkout / "trainproof.html").read_text().startswith("<!DOCTYPE html>")


@pytest.mark.slow
def test_every_python_the_action_starts_runs_isolated():
    """Every interpreter in every step's script is started with -I (the steps run in the
    checkout), and the doctor child inherits it."""
    action, _ = _doctor_step()
    calls = 0
    for step in action["runs"]["steps"]:
        for line in step.get("run", "").splitlines():
            for m in re.finditer(r'"\$(TRAINPROOF_PYTHON|py)"(\s+\S+)?', line):
                calls += 1
                assert (m.group(2) or "").strip() == "-I", line
    assert calls == 3
    src = str(REPO / "src")
    code = f"import sys; sys.path.insert(0, {src!r}); from trainproof.ci.github_action import python_flags; print(python_flags())"
    flags = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=120)
    assert flags.stdout.strip() == "['-I']", flags.stderr
    assert ga.python_flags() == (["-P"] if sys.version_info >= (3, 11) else [])


# --------------------------------------------------------------------------- forged commands

HOSTILE = [
    "##[add-mask]secret",
    "##[set-output name=verdict]PASS",
    "::stop-commands::abc",
    "::error::forged",
    "  ::warning::indented",
    "x ##[error]mid-line",
    "nl\n::error file=a::newline",
    "cr\r##[set-env name=X]cr",
    "::abc::",
]


def _hostile_tree(root: Path) -> Path:
    nan = (REPO / "examples" / "lr_hot" / "metrics.jsonl").read_bytes()
    for i, name in enumerate(HOSTILE):
        folder = root / "runs" / name
        folder.mkdir(parents=True)
        (folder / "metrics.jsonl").write_bytes(nan)
        # a log that cannot be judged: its error line names it
        (folder / f"{name}.jsonl").write_text('{"step": 1, "loss": 1.0}\n', encoding="utf-8")
    return root


def _run_action(cwd: Path, **inputs: str) -> tuple[subprocess.CompletedProcess, str, str]:
    out, summary = cwd / ".gh-output", cwd / ".gh-summary"
    for f in (out, summary):
        f.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INPUT_", "GITHUB_"))}
    env.update({ga.env_name(k.replace("_", "-")): v for k, v in inputs.items()})
    env.update(GITHUB_ACTIONS="true", GITHUB_OUTPUT=str(out), GITHUB_STEP_SUMMARY=str(summary), RUNNER_TEMP=str(cwd))
    p = subprocess.run(
        [sys.executable, "-m", "trainproof.ci.github_action"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return p, out.read_text(encoding="utf-8"), summary.read_text(encoding="utf-8")


@pytest.mark.slow
def test_names_in_the_logs_issue_no_workflow_command(tmp_path):
    root = _hostile_tree(tmp_path)
    # a report file name that tries to end its output early and set another
    sarif = "r\nverdict<<EOF\nPASS\nEOF\nx.sarif"
    p, gh_output, summary = _run_action(root, path="runs", sarif_file=sarif, html_file="")
    assert p.returncode == 1, p.stdout + p.stderr
    lines = runner_lines(p.stdout)
    token = lines[0].removeprefix("::stop-commands::")
    assert re.fullmatch(r"[0-9a-f]{32}", token) and lines[-1] == f"::{token}::"
    # read strictly, no line but the frame is a command of any name...
    for stream in (p.stdout, p.stderr, summary):
        forged = [
            (line, cmd)
            for line in runner_lines(stream)
            if (cmd := parse_command(line)) is not None and line not in (lines[0], lines[-1])
        ]
        assert forged == [], forged
    # ...and the runner, stop-commands honoured, carries out only the frame
    assert runner_commands(p.stdout) == [("stop-commands", token), (token, "")]
    assert runner_commands(p.stderr) == []
    # every hostile run is listed, escaped, in the log and in the summary
    assert sum(line.startswith("FAIL ") for line in lines) == len(HOSTILE)
    assert "#\\x23[add-mask]secret" in p.stdout and "nl\\n::error file=a::newline" in p.stdout
    assert summary.count("| FAIL |") == len(HOSTILE)
    # the outputs are exactly the action's, the file name kept whole inside its value
    outs = parse_github_output(gh_output)
    assert list(outs) == list(ga.OUTPUTS)
    assert outs["verdict"] == "FAIL" and outs["fail-count"] == str(len(HOSTILE)) and outs["sarif"] == sarif
    assert (root / sarif).is_file()


def test_log_line_and_printable_leave_no_command():
    for name in HOSTILE + ["::", "##[", "###[x]y", " \t::a::b", "::\n::x::"]:
        doc = {
            "reports": [
                {
                    "file": name,
                    "verdict": "NOT-CHECKED",
                    "error": name,
                    "findings": [{"id": name, "level": "FAIL", "message": name}],
                }
            ],
            "worst_verdict": "FAIL",
            "error": name,
        }
        for line in ga.log_lines(doc, 1, "FAIL"):
            assert parse_command(line) is None, line
            assert "\n" not in line and "\r" not in line
        assert parse_command(ga.log_line(ga._printable(name))) is None, name
        md = ga.summary_markdown(doc, 1, "FAIL", ga.outputs(doc, 1, None))
        assert all(parse_command(line) is None for line in runner_lines(md)), md


def test_an_output_value_cannot_close_its_delimiter_early():
    value = "a\nghadelimiter_x\nverdict=PASS\nb<<c\nc"
    for _ in range(20):
        text = ga.format_outputs({"sarif": value, "verdict": "FAIL"})
        assert parse_github_output(text) == {"sarif": value, "verdict": "FAIL"}


def test_an_internal_error_is_exit_2_and_its_traceback_inside_the_frame(tmp_path, capsys):
    # $GITHUB_OUTPUT is a folder with a hostile name: writing the outputs raises, naming it
    folder = tmp_path / "##[add-mask]x"
    folder.mkdir()
    env = {"GITHUB_ACTIONS": "true", "INPUT_FAIL_ON": "bogus", "GITHUB_OUTPUT": str(folder)}
    assert ga.main(env) == 2
    out, err = capsys.readouterr()
    frame = runner_lines(out)
    token = frame[0].removeprefix("::stop-commands::")
    assert frame[-1] == f"::{token}::"
    assert "IsADirectoryError" in err and "#\\x23[add-mask]x" in err
    assert [line for line in runner_lines(err) if parse_command(line)] == []
    assert runner_commands(out) == [("stop-commands", token), (token, "")]
