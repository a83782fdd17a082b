"""Adoption in CI: the GitHub Action (action.yml + trainproof.ci.github_action) and the
pre-commit hooks (.pre-commit-hooks.yaml).

What can be checked here is: action.yml against the GitHub Actions schema that
check-jsonschema vendors (no network), the inputs and outputs of action.yml against what
the script reads and writes, the script run as the action runs it (INPUT_* variables,
GITHUB_OUTPUT, GITHUB_STEP_SUMMARY) over small trees of real logs, and the hooks run by
the real pre-commit in throwaway git repositories (``slow``: pre-commit builds the hook's
environment with pip).
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, run_subprocess, write_jsonl

yaml = pytest.importorskip("yaml")

from trainproof.ci import github_action as ga  # noqa: E402

ACTION = REPO / "action.yml"
HOOKS = REPO / ".pre-commit-hooks.yaml"
#: The inputs used by action.yml's own steps, not by the script.
STEP_INPUTS = {"python-version", "upload-sarif", "sarif-category"}


@pytest.fixture(scope="module")
def action() -> dict:
    return yaml.safe_load(ACTION.read_text(encoding="utf-8"))


def _step(action: dict, step_id: str) -> dict:
    (step,) = [s for s in action["runs"]["steps"] if s.get("id") == step_id]
    return step


# --- action.yml: schema, inputs, outputs ------------------------------------------------------


def _check_schema(path: Path) -> subprocess.CompletedProcess:
    pytest.importorskip("check_jsonschema")
    # The vendored schema needs no network: a proxy that refuses every connection proves it.
    env = {
        **os.environ,
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "http_proxy": "http://127.0.0.1:9",
        "https_proxy": "http://127.0.0.1:9",
    }
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-actions", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.mark.slow
def test_action_metadata_validates_against_the_github_actions_schema(tmp_path, action):
    res = _check_schema(ACTION)
    assert res.returncode == 0, res.stdout + res.stderr
    # ... and the check can fail: a composite `run` step without `shell` is refused
    broken = copy.deepcopy(action)
    del _step(broken, "doctor")["shell"]
    (tmp_path / "action.yml").write_text(yaml.safe_dump(broken), encoding="utf-8")
    res = _check_schema(tmp_path / "action.yml")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "shell" in res.stdout or "composite" in res.stdout


def test_every_input_the_script_reads_is_declared_with_its_default_and_passed_as_env(action):
    declared = action["inputs"]
    assert set(ga.INPUTS) | STEP_INPUTS == set(declared)
    assert not set(ga.INPUTS) & STEP_INPUTS
    for name, default in ga.INPUTS.items():
        assert str(declared[name].get("default", "")) == default, name
    env = _step(action, "doctor")["env"]
    expected = {ga.env_name(n): "${{ inputs.%s }}" % n for n in ga.INPUTS}
    assert {k: v for k, v in env.items() if k.startswith("INPUT_")} == expected
    assert ga.env_name("fail-on") == "INPUT_FAIL_ON"
    # every `inputs.X` anywhere in the file is declared; the step-only ones are used
    text = ACTION.read_text(encoding="utf-8")
    used = set(re.findall(r"inputs\.([A-Za-z0-9_-]+)", text))
    assert used <= set(declared)
    assert STEP_INPUTS <= used


def test_no_input_is_ever_interpolated_into_a_shell_script(action):
    for step in action["runs"]["steps"]:
        if "run" in step:
            assert "${{" not in step["run"], step["name"]
            assert step["shell"] == "bash"


def test_outputs_are_the_scripts_and_come_from_the_doctor_step(action):
    outs = action["outputs"]
    assert tuple(outs) == ga.OUTPUTS
    for name, spec in outs.items():
        assert spec["value"] == "${{ steps.doctor.outputs.%s }}" % name


def test_install_is_from_the_actions_checkout_never_by_name(action):
    setup = _step(action, "python")
    assert setup["uses"].startswith("actions/setup-python@v5")
    assert setup["with"]["update-environment"] is False
    run = _step(action, "install")["run"]
    installs = [line for line in run.splitlines() if "pip install" in line]
    assert len(installs) == 1 and installs[0].rstrip().endswith('"$GITHUB_ACTION_PATH"')
    assert "$RUNNER_TEMP" in run
    assert "trainproof.ci.github_action" in _step(action, "doctor")["run"]


def test_the_sarif_upload_runs_after_a_fail_and_cannot_fail_the_job(action):
    (upload,) = [s for s in action["runs"]["steps"] if "upload-sarif" in s.get("uses", "")]
    assert upload["uses"] == "github/codeql-action/upload-sarif@v3"
    assert upload["if"].startswith("always() && inputs.upload-sarif == 'true'")
    assert upload["continue-on-error"] is True
    assert upload["with"]["sarif_file"] == "${{ steps.doctor.outputs.sarif }}"
    assert upload["with"]["category"] == "${{ inputs.sarif-category }}"


# --- the script, run as the action runs it ----------------------------------------------------


def parse_github_output(text: str) -> dict[str, str]:
    """``$GITHUB_OUTPUT`` as the runner reads it: ``name=value`` or ``name<<DELIM`` ... ``DELIM``."""
    out, lines, i = {}, text.split("\n"), 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            end = lines.index(delim, i + 1)
            out[name] = "\n".join(lines[i + 1 : end])
            i = end + 1
        elif "=" in line:
            name, value = line.split("=", 1)
            out[name] = value
            i += 1
        else:
            assert line == "", line
            i += 1
    return out


def run_action(cwd: Path, **inputs: str):
    """Run the script in ``cwd`` with ``INPUT_*`` from ``inputs`` (``fail_on`` -> ``fail-on``);
    returns (exit code, stdout, stderr, outputs, summary)."""
    gh_out, summary = cwd / ".gh-output", cwd / ".gh-summary"
    for f in (gh_out, summary):
        f.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("INPUT_")}
    env.update({ga.env_name(k.replace("_", "-")): v for k, v in inputs.items()})
    env.update(GITHUB_OUTPUT=str(gh_out), GITHUB_STEP_SUMMARY=str(summary), RUNNER_TEMP=str(cwd))
    p = subprocess.run(
        [sys.executable, "-m", "trainproof.ci.github_action"],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )
    return p.returncode, p.stdout, p.stderr, parse_github_output(gh_out.read_text()), summary.read_text()


def _tree(root: Path, *runs: str) -> Path:
    """``root`` holding copies of example runs: name -> examples/<path>."""
    picks = {"healthy": "healthy", "nan": "lr_hot", "warn": "gallery/hf/overfit/seed0"}
    for name in runs:
        shutil.copytree(REPO / "examples" / picks[name], root / "runs" / name)
    return root


@pytest.fixture
def mixed(tmp_path) -> Path:
    """A PASS, a FAIL (NaN loss) and a WARN (overfitting) run."""
    return _tree(tmp_path, "healthy", "nan", "warn")


@pytest.mark.slow
def test_outputs_match_doctor_json_and_reports_are_written(mixed):
    code, out, err, outs, summary = run_action(mixed, path="runs")
    doc = json.loads(run_subprocess("doctor", "runs", "--json", cwd=mixed).stdout)
    by = {v: sum(r["verdict"] == v for r in doc["reports"]) for v in ("FAIL", "WARN", "PASS", "NOT-CHECKED")}
    assert by == {"FAIL": 1, "WARN": 1, "PASS": 1, "NOT-CHECKED": 0}
    assert set(outs) == set(ga.OUTPUTS)
    assert outs == {
        "verdict": "FAIL",
        "fail-count": "1",
        "warn-count": "1",
        "pass-count": "1",
        "not-checked-count": "0",
        "runs": "3",
        "exit-code": "1",
        "sarif": "trainproof.sarif",
        "html": "trainproof.html",
    }
    assert code == 1, out + err
    sarif = json.loads((mixed / "trainproof.sarif").read_text())
    assert sarif["version"] == "2.1.0"
    assert "TP-NAN" in {r["ruleId"] for r in sarif["runs"][0]["results"]}
    assert (mixed / "trainproof.html").read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")
    # the log: the runs that did not pass, worst first, and the totals
    assert out.index("FAIL ") < out.index("WARN ") and "TP-NAN" in out and "TP-OVERFIT" in out
    assert "3 runs: 1 FAIL, 1 WARN, 1 PASS, 0 not judged" in out
    assert "### :x: trainproof doctor: FAIL" in summary and "| FAIL |" in summary and "TP-NAN" in summary
    assert not list(mixed.glob("trainproof-*.json")), "the temporary JSON is removed"


@pytest.mark.slow
@pytest.mark.parametrize(
    "fail_on, mixed_code, warn_only_code",
    [("FAIL", 1, 0), ("WARN", 1, 1), ("never", 0, 0), ("warn", 1, 1), ("Never", 0, 0)],
)
def test_fail_on_policy(tmp_path, fail_on, mixed_code, warn_only_code):
    mixed = _tree(tmp_path / "mixed", "healthy", "nan", "warn")
    warn_only = _tree(tmp_path / "warn_only", "healthy", "warn")
    code, out, err, outs, _ = run_action(mixed, path="runs", fail_on=fail_on, sarif_file="", html_file="")
    assert code == mixed_code, out + err
    assert outs["exit-code"] == "1" and outs["sarif"] == "" and outs["html"] == ""
    assert not (mixed / "trainproof.sarif").exists()
    code, out, err, outs, _ = run_action(warn_only, path="runs", fail_on=fail_on)
    assert code == warn_only_code, out + err
    assert outs["verdict"] == "WARN" and outs["exit-code"] == "0"


@pytest.mark.slow
def test_a_log_that_cannot_be_judged_exits_2_even_with_fail_on_never(tmp_path):
    root = _tree(tmp_path, "healthy")
    write_jsonl(root / "runs" / "short" / "metrics.jsonl", [{"step": s, "loss": 1.0 - s / 10} for s in (1, 2)])
    for fail_on in ("FAIL", "WARN", "never"):
        code, out, err, outs, _ = run_action(root, path="runs", fail_on=fail_on)
        assert code == 2, (fail_on, out + err)
        assert outs["not-checked-count"] == "1" and outs["pass-count"] == "1" and outs["exit-code"] == "2"
        assert outs["verdict"] == "NOT-CHECKED"


@pytest.mark.slow
def test_allow_empty_on_a_folder_without_logs(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.md").write_text("no logs here\n")
    code, out, err, outs, summary = run_action(tmp_path, path="empty", allow_empty="true")
    assert code == 0, out + err
    assert outs["verdict"] == "none" and outs["runs"] == "0" and outs["exit-code"] == "0"
    code, out, err, outs, _ = run_action(tmp_path, path="empty", allow_empty="false")
    assert code == 2 and outs["verdict"] == "none" and outs["exit-code"] == "2"
    assert "no training logs found" in out


@pytest.mark.slow
def test_several_paths_baseline_mute_config_and_args_reach_doctor(mixed):
    (mixed / "tp.toml").write_text("[tool.trainproof]\n")
    settings = ga.read_inputs(
        {
            "INPUT_PATH": "runs/nan\n\n  runs/healthy  \n",
            "INPUT_MUTE": "TP-NAN, TP-NAN-EVAL\nTP-X",
            "INPUT_BASELINE": "runs/healthy",
            "INPUT_CONFIG": "tp.toml",
            "INPUT_ARGS": "--max-depth 4 --jobs '1'",
            "INPUT_ALLOW_EMPTY": "True",
        }
    )
    assert ga.doctor_command(settings) == [
        "doctor",
        "--json",
        "--baseline",
        "runs/healthy",
        "--mute",
        "TP-NAN",
        "--mute",
        "TP-NAN-EVAL",
        "--mute",
        "TP-X",
        "--config",
        "tp.toml",
        "--allow-empty",
        "--sarif",
        "trainproof.sarif",
        "--html",
        "trainproof.html",
        "--max-depth",
        "4",
        "--jobs",
        "1",
        "--",
        "runs/nan",
        "runs/healthy",
    ]
    # for real: the NaN run's NaN findings muted; what remains of it and the baseline compare
    code, out, err, outs, _ = run_action(
        mixed,
        path="runs/nan\nruns/healthy",
        mute="TP-NAN,TP-NAN-EVAL",
        baseline="runs/healthy",
        config="tp.toml",
        args="--jobs 1",
    )
    doc = json.loads(
        run_subprocess(
            "doctor",
            "--json",
            "--baseline",
            "runs/healthy",
            "--mute",
            "TP-NAN",
            "--mute",
            "TP-NAN-EVAL",
            "--config",
            "tp.toml",
            "runs/nan",
            "runs/healthy",
            cwd=mixed,
        ).stdout
    )
    assert outs["runs"] == str(len(doc["reports"])) and outs["verdict"] == (doc["worst_verdict"] or "none")
    assert "TP-NAN:" not in out
    assert "--mute TP-NAN --mute TP-NAN-EVAL" in out.splitlines()[0]


@pytest.mark.slow
@pytest.mark.parametrize(
    "inputs, says",
    [
        ({"fail_on": "error"}, "input fail-on: 'error' is not one of FAIL, WARN, never"),
        ({"allow_empty": "maybe"}, "input allow-empty: 'maybe' is not a boolean"),
        ({"args": "--max-depth '3"}, "input args: cannot split it"),
        ({"args": "--sarif other.sarif"}, "input args: --sarif is set by the action; use its input (sarif-file)"),
        ({"args": "--json"}, "input args: --json is set by the action"),
        ({"sarif_file": "out", "html_file": "./out"}, "inputs sarif-file and html-file name the same file"),
    ],
)
def test_a_bad_input_is_one_line_and_exit_2(tmp_path, inputs, says):
    code, out, err, outs, _ = run_action(tmp_path, **inputs)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("trainproof: ") and says in err, err
    assert outs["verdict"] == "none" and outs["exit-code"] == "2"


@pytest.mark.slow
def test_without_github_output_the_outputs_are_printed(mixed):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INPUT_", "GITHUB_"))}
    env["INPUT_PATH"] = "runs/healthy"
    p = subprocess.run(
        [sys.executable, "-m", "trainproof.ci.github_action"],
        capture_output=True,
        text=True,
        cwd=mixed,
        env=env,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "verdict=PASS" in p.stdout.splitlines() and "pass-count=1" in p.stdout.splitlines()


def test_output_values_cannot_end_early_or_forge_lines():
    values = {"verdict": "PASS", "sarif": "a\nb<<x\nx\nverdict=FAIL"}
    text = ga.format_outputs(values)
    assert parse_github_output(text) == values
    assert ga.decide("FAIL", 1, None) == 2 and ga.decide("never", 0, {"reports": [], "error": "x"}) == 2
    # a file name cannot break the summary table or start a workflow command in the log
    doc = {
        "reports": [
            {
                "file": "x|y\n::error::z <b>",
                "verdict": "FAIL",
                "findings": [{"id": "TP-NAN", "level": "FAIL", "message": "m\r\n::warning::w"}],
            }
        ],
        "worst_verdict": "FAIL",
        "error": None,
    }
    for line in ga.log_lines(doc, 1, "FAIL"):
        assert "\n" not in line and "\r" not in line and not line.startswith("::")
    md = ga.summary_markdown(doc, 1, "FAIL", ga.outputs(doc, 1, None))
    (row,) = [line for line in md.splitlines() if line.startswith("| FAIL")]
    assert row.count(" | ") == 2 and "<b>" not in row


# --- pre-commit hooks -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hooks() -> dict:
    return {h["id"]: h for h in yaml.safe_load(HOOKS.read_text(encoding="utf-8"))}


@pytest.mark.slow
def test_hook_manifest_is_valid_for_pre_commit(hooks):
    pytest.importorskip("pre_commit")
    res = subprocess.run(
        [sys.executable, "-m", "pre_commit", "validate-manifest", str(HOOKS)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert set(hooks) == {"trainproof-doctor", "trainproof-preflight"}
    assert hooks["trainproof-doctor"]["entry"] == "trainproof doctor --allow-empty --quiet"
    assert hooks["trainproof-preflight"]["entry"] == "trainproof dataset"
    for h in hooks.values():
        assert h["language"] == "python" and h["require_serial"] is True and h.get("pass_filenames", True)


@pytest.mark.parametrize(
    "name, doctor, preflight",
    [
        ("out/trainer_state.json", True, False),
        ("trainer_state.json", True, False),
        ("runs/Jan01/events.out.tfevents.1700000000.host.1.0", True, False),
        ("logs/metrics.jsonl", True, True),
        ("logs/metrics.jsonl.gz", True, True),
        ("data/train.ndjson", True, True),
        ("lightning_logs/version_0/metrics.csv", True, False),
        ("results.tsv", True, False),
        ("train.log", True, False),
        ("config.json", False, False),
        ("requirements.txt", False, False),
        ("src/model.py", False, False),
        ("docs/tfevents.md", False, False),
        ("my_trainer_state.json", False, False),
    ],
)
def test_hook_file_patterns(hooks, name, doctor, preflight):
    assert bool(re.search(hooks["trainproof-doctor"]["files"], name)) is doctor
    assert bool(re.search(hooks["trainproof-preflight"]["files"], name)) is preflight


def _git_env(home: Path) -> dict:
    """The environment for git and pre-commit: no global or system git configuration, the
    pre-commit cache in ``home``, and no PYTHONPATH (the hook must run the package its own
    environment installed, not this checkout's source)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GIT_DIR", "GIT_WORK_TREE")}
    (home / "gitconfig").write_text("")
    env.update(
        PRE_COMMIT_HOME=str(home / "pre-commit"),
        GIT_CONFIG_GLOBAL=str(home / "gitconfig"),
        GIT_CONFIG_NOSYSTEM="1",
        PRE_COMMIT_COLOR="never",
        NO_COLOR="1",
    )
    constraints = REPO / ".ci" / "constraints.txt"
    if constraints.is_file() and "PIP_CONSTRAINT" not in env:
        # the pins CI installs with (torch only: trainproof's hook environment needs none of them)
        env["PIP_CONSTRAINT"] = str(constraints)
    return env


def _git(cwd: Path, env: dict, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def precommit_project(tmp_path_factory):
    """A git repository using both hooks from a copy of this checkout committed as a repository
    of its own (pre-commit clones it at that commit and pip-installs it, as it would
    https://github.com/trainproof/trainproof at a tag)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: pre-commit needs it")
    pytest.importorskip("pre_commit")
    base = tmp_path_factory.mktemp("precommit")
    env = _git_env(base)
    hook_repo = base / "trainproof"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    shutil.copytree(REPO / "src", hook_repo / "src", ignore=ignore)
    for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        shutil.copy2(REPO / name, hook_repo / name)
    _git(hook_repo, env, "init", "-q")
    _git(hook_repo, env, "config", "user.name", "trainproof tests")
    _git(hook_repo, env, "config", "user.email", "tests@trainproof.invalid")
    _git(hook_repo, env, "add", "-A")
    _git(hook_repo, env, "commit", "-q", "-m", "hook repository")
    sha = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=hook_repo, env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    project = base / "project"
    project.mkdir()
    _git(project, env, "init", "-q")
    _git(project, env, "config", "user.name", "trainproof tests")
    _git(project, env, "config", "user.email", "tests@trainproof.invalid")
    (project / ".pre-commit-config.yaml").write_text(
        "repos:\n"
        f"  - repo: {hook_repo.as_posix()}\n"
        f"    rev: {sha}\n"
        "    hooks:\n"
        "      - id: trainproof-doctor\n"
        "      - id: trainproof-preflight\n"
        "        files: ^data/\n"
    )
    shutil.copytree(REPO / "examples" / "healthy", project / "runs" / "healthy")
    shutil.copytree(REPO / "examples" / "lr_hot", project / "runs" / "nan")
    write_jsonl(project / "data" / "good.jsonl", [{"text": f"sample number {i} of a clean set"} for i in range(12)])
    bad = project / "data" / "bad.jsonl"
    bad.write_text('{"text": "one"}\n{"text": ""}\nnot json\n', encoding="utf-8")
    _git(project, env, "add", "-A")
    return project, env


def pre_commit(project: tuple[Path, dict], hook: str, *files: str) -> subprocess.CompletedProcess:
    cwd, env = project
    # the first call builds the hook's environment (pip install of the hook repository)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", hook, "--files", *files],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.slow
def test_doctor_hook_passes_a_healthy_log_and_fails_a_nan_one(precommit_project):
    res = pre_commit(precommit_project, "trainproof-doctor", "runs/healthy/metrics.jsonl", "runs/healthy/metrics.csv")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "trainproof doctor (training logs)" in res.stdout and "Passed" in res.stdout
    res = pre_commit(precommit_project, "trainproof-doctor", "runs/healthy/metrics.jsonl", "runs/nan/metrics.jsonl")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "Failed" in res.stdout and "TP-NAN" in res.stdout
    # a commit that changes no training log: the hook does not even run
    res = pre_commit(precommit_project, "trainproof-doctor", ".pre-commit-config.yaml")
    assert res.returncode == 0 and "Skipped" in res.stdout, res.stdout + res.stderr


@pytest.mark.slow
def test_preflight_hook_fails_a_bad_dataset_and_passes_a_good_one(precommit_project):
    res = pre_commit(precommit_project, "trainproof-preflight", "data/good.jsonl")
    assert res.returncode == 0, res.stdout + res.stderr
    res = pre_commit(precommit_project, "trainproof-preflight", "data/good.jsonl", "data/bad.jsonl")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "TP-PRE-MALFORMED-JSONL" in res.stdout and "TP-PRE-EMPTY-TEXT" in res.stdout
    # the training logs are outside the hook's `files: ^data/`
    res = pre_commit(precommit_project, "trainproof-preflight", "runs/nan/metrics.jsonl")
    assert res.returncode == 0 and "Skipped" in res.stdout, res.stdout + res.stderr


@pytest.mark.slow
def test_the_action_script_runs_from_a_plain_pip_install_of_the_checkout(precommit_project):
    """The hook's environment is what the action's install step makes (pip install of the
    repository at a commit, not editable): the script is in it and runs without this
    checkout on the path."""
    cwd, env = precommit_project
    assert pre_commit(precommit_project, "trainproof-doctor", "runs/healthy/metrics.jsonl").returncode == 0
    pythons = sorted(Path(env["PRE_COMMIT_HOME"]).glob("repo*/py_env-*/bin/python"))
    if not pythons:
        pythons = sorted(Path(env["PRE_COMMIT_HOME"]).glob("repo*/py_env-*/Scripts/python.exe"))
    assert len(pythons) == 1, pythons
    run_env = {k: v for k, v in env.items() if not k.startswith(("INPUT_", "GITHUB_"))}
    run_env.update(INPUT_PATH="runs/healthy", INPUT_SARIF_FILE="", INPUT_HTML_FILE="")
    p = subprocess.run(
        [str(pythons[0]), "-m", "trainproof.ci.github_action"],
        cwd=cwd,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "verdict=PASS" in p.stdout.splitlines()
    where = subprocess.run(
        [str(pythons[0]), "-c", "import trainproof.ci; print(trainproof.ci.__file__)"],
        cwd=cwd,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert "site-packages" in where and str(REPO) not in where
