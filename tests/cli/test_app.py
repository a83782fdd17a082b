"""The CLI end to end: exit codes for every path, text and --json output, options."""

from __future__ import annotations

import json
import math

import pytest

from trainproof import __version__

from conftest import healthy_rows, run_cli, run_subprocess, write_hf, write_jsonl, zero_lr_rows


def test_version_matches_package_metadata():
    from importlib.metadata import version

    code, out, _, _ = run_cli("--version")
    assert code == 0
    assert __version__ in out
    assert version("trainproof") == __version__


@pytest.mark.slow
def test_python_dash_m_and_console_script_agree(tmp_path):
    p = write_jsonl(tmp_path / "m.jsonl", healthy_rows())
    proc = run_subprocess("epoch", str(p), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["reports"][0]["verdict"] == "PASS"
    assert proc.stderr == ""


def test_healthy_exit_0_and_text(tmp_path):
    p = write_hf(tmp_path / "trainer_state.json", healthy_rows())
    code, out, err, _ = run_cli("epoch", str(p))
    assert code == 0
    assert "verdict: PASS" in out
    assert "format hf, 60 records, steps 10–600" in out
    assert "compare against a" in out.lower()  # the closing note on what a PASS cannot tell


def test_nan_exit_1_json_cites_step_and_line(tmp_path):
    rows = healthy_rows()
    rows[30]["loss"] = math.nan
    p = write_jsonl(tmp_path / "m.jsonl", rows)
    code, _, _, doc = run_cli("epoch", str(p), "--json")
    assert code == 1
    rep = doc["reports"][0]
    assert rep["verdict"] == "FAIL"
    nan = [f for f in rep["findings"] if f["id"] == "TP-NAN"][0]
    assert nan["step"] == 310 and nan["line"] == 31
    assert nan["data"]["count"] == 1
    assert doc["worst_verdict"] == "FAIL" and doc["error"] is None


@pytest.mark.slow
@pytest.mark.parametrize(
    "content,reason",
    [
        (None, "no such file"),
        ("", "empty file"),
        ("hello world\nthis is not a log\n", "not a training log"),
        ("version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 12965\n", "LFS pointer"),
    ],
)
def test_unreadable_inputs_exit_2_with_one_line(tmp_path, content, reason):
    p = tmp_path / "trainer_state.json"
    if content is not None:
        p.write_text(content)
    proc = run_subprocess("epoch", str(p))
    assert proc.returncode == 2
    assert reason in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr
    code, _, _, doc = run_cli("epoch", str(p), "--json")
    assert code == 2
    assert doc["reports"][0]["verdict"] == "NOT-CHECKED"
    assert doc["reports"][0]["findings"][0]["id"] == "TP-READ-ERROR"
    assert reason in doc["error"]


def test_directory_given_to_epoch_is_exit_2(tmp_path):
    code, _, err, _ = run_cli("epoch", str(tmp_path))
    assert code == 2 and "directory" in err


def test_no_loss_is_exit_2_and_lists_metrics(tmp_path):
    p = write_jsonl(tmp_path / "m.jsonl", [{"step": i, "accuracy": 0.5 + i / 100} for i in range(20)])
    code, _, _, doc = run_cli("epoch", str(p), "--json")
    assert code == 2
    f = doc["reports"][0]["findings"][0]
    assert f["id"] == "TP-NO-LOSS" and "accuracy" in f["data"]["metrics"]


def test_map_option_reads_custom_loss_column(tmp_path):
    # "objective_value" names no loss word: only --map makes it the loss
    rows = [{"step": r["step"], "objective_value": r["loss"]} for r in healthy_rows()]
    p = write_jsonl(tmp_path / "m.jsonl", rows)
    assert run_cli("epoch", str(p))[0] == 2  # no loss without --map
    code, _, _, doc = run_cli("epoch", str(p), "--map", "loss=objective_value", "--json")
    assert code == 0
    assert doc["reports"][0]["mapping"]["loss"] == {"source": "objective_value", "ignored": [], "how": "map"}


@pytest.mark.parametrize(
    "bad,msg",
    [
        ("loss", "CANON=COLUMN"),
        ("lossy=train_mse", "unknown canonical name"),
        ("loss=", "CANON=COLUMN"),
    ],
)
def test_bad_map_is_exit_2(tmp_path, bad, msg):
    p = write_jsonl(tmp_path / "m.jsonl", healthy_rows())
    code, _, err, _ = run_cli("epoch", str(p), "--map", bad)
    assert code == 2 and msg in err


def test_map_to_missing_column_is_exit_2(tmp_path):
    p = write_jsonl(tmp_path / "m.jsonl", healthy_rows())
    code, _, err, _ = run_cli("epoch", str(p), "--map", "loss=nope")
    assert code == 2 and "nope" in err


@pytest.mark.slow
def test_unknown_format_is_usage_error_exit_2(tmp_path):
    p = write_jsonl(tmp_path / "m.jsonl", healthy_rows())
    proc = run_subprocess("epoch", str(p), "--format", "parquet")
    assert proc.returncode == 2
    assert "parquet" in proc.stderr and "Traceback" not in proc.stderr


def test_forced_format_that_does_not_fit_is_exit_2(tmp_path):
    p = write_jsonl(tmp_path / "m.jsonl", healthy_rows())
    code, _, err, _ = run_cli("epoch", str(p), "--format", "hf")
    assert code == 2


@pytest.mark.slow
def test_mute_skips_rule_and_changes_exit(tmp_path):
    rows = zero_lr_rows()
    p = write_jsonl(tmp_path / "m.jsonl", rows)
    code, _, _, doc = run_cli("epoch", str(p), "--json")
    assert code == 1 and "TP-ZERO-LR" in [f["id"] for f in doc["reports"][0]["findings"]]
    # its loss not moving, the run at lr 0 is TP-DEAD-RUN's too
    code, _, _, doc = run_cli("epoch", str(p), "--json", "--mute", "TP-ZERO-LR", "--mute", "TP-DEAD-RUN")
    assert code == 0
    assert doc["reports"][0]["checks"]["skipped"]["TP-ZERO-LR"]["reason"] == "muted"
    assert "TP-ZERO-LR" not in doc["reports"][0]["checks"]["ran"]


def test_unknown_mute_id_is_exit_2(tmp_path):
    p = write_jsonl(tmp_path / "m.jsonl", healthy_rows())
    code, _, err, _ = run_cli("epoch", str(p), "--mute", "TP-NOPE")
    assert code == 2 and "TP-NOPE" in err


@pytest.mark.slow
def test_json_output_is_byte_identical_twice(tmp_path):
    rows = healthy_rows()
    rows[5]["grad_norm"] = math.inf
    p = write_hf(tmp_path / "trainer_state.json", rows)
    a = run_subprocess("epoch", str(p), "--json").stdout
    b = run_subprocess("epoch", str(p), "--json").stdout
    assert a == b and a


@pytest.mark.slow
def test_rules_lists_every_registered_rule_and_documents_one(monkeypatch):
    from trainproof.rules.registry import all_rules

    # Wide enough that no id is cut, whatever rich would take the screen's width to be.
    monkeypatch.setenv("COLUMNS", "250")

    code, out, _, _ = run_cli("rules")
    assert code == 0
    for r in all_rules():
        assert r.id in out
    code, out, _, _ = run_cli("rules", "TP-DIVERGE")
    assert code == 0
    for section in ("What it detects", "Why it matters", "What it does NOT mean", "Likely causes", "What to try"):
        assert section in out
    code, _, err, _ = run_cli("rules", "TP-NOPE")
    assert code == 2 and "TP-NOPE" in err


def test_rules_json_lists_ids():
    code, out, _, _ = run_cli("rules", "--json")
    assert code == 0
    ids = [r["id"] for r in json.loads(out)]
    assert "TP-NAN" in ids and len(ids) == len(set(ids))


@pytest.mark.slow
def test_internal_error_is_one_line_exit_2(tmp_path, monkeypatch):
    # A real internal failure: a rule module raising. The top-level handler must turn it
    # into one line on stderr and exit 2, and --debug must show the traceback.
    p = write_jsonl(tmp_path / "m.jsonl", healthy_rows())
    code = f"""
import sys, trainproof.rules.engine as e
def boom(*a, **k): raise RuntimeError("boom")
e.judge_runlog = boom
import trainproof.cli as c
c.judge_runlog = boom
sys.argv = ["trainproof", "epoch", {str(p)!r}]
c.main()
"""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("trainproof: internal error: RuntimeError: boom")
    assert "Traceback" not in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-c", code.replace('"epoch"', '"--debug", "epoch"')], capture_output=True, text=True
    )
    assert "Traceback" in proc.stderr


@pytest.mark.slow
def test_no_color_when_piped(tmp_path):
    p = write_jsonl(tmp_path / "m.jsonl", healthy_rows())
    proc = run_subprocess("epoch", str(p))
    assert "\x1b[" not in proc.stdout


@pytest.mark.slow
def test_examples_doctor_through_console_script(core_examples):
    proc = run_subprocess("doctor", str(core_examples), "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1
    verdicts = {r["file"].split("examples/")[1]: r["verdict"] for r in doc["reports"]}
    expected = {
        "healthy": "PASS",
        "healthy_seed1": "PASS",
        "bad_labels": "FAIL",
        "lr_hot": "FAIL",
        "lr_zero": "FAIL",
        "diverge": "FAIL",
    }
    # each example folder holds one run written twice: one row, the JSONL as its other file
    assert verdicts == {f"{run}/metrics.csv": v for run, v in expected.items()}
    also = {r["file"].split("examples/")[1]: [a.split("examples/")[1] for a in r["also"]] for r in doc["reports"]}
    assert also == {f"{run}/metrics.csv": [f"{run}/metrics.jsonl"] for run in expected}


@pytest.mark.slow
def test_colour_on_a_tty_and_none_with_no_color(tmp_path):
    import re
    import shutil
    import subprocess
    import sys

    if shutil.which("script") is None:
        pytest.skip("util-linux `script` is needed to give the CLI a terminal")
    rows = zero_lr_rows()
    p = write_jsonl(tmp_path / "m.jsonl", rows)
    cmd = f"{sys.executable} -m trainproof epoch {p}"
    colour = re.compile(r"\x1b\[[0-9;]*3[0-7](;[0-9]+)*m|\x1b\[[0-9;]*;3[0-7]m|\x1b\[3[0-7]m")
    tty = subprocess.run(["script", "-qc", cmd, "/dev/null"], capture_output=True, text=True)
    assert colour.search(tty.stdout), "a terminal gets colour"
    env = {**__import__("os").environ, "NO_COLOR": "1"}
    plain = subprocess.run(["script", "-qc", cmd, "/dev/null"], capture_output=True, text=True, env=env)
    assert "FAIL" in plain.stdout and not colour.search(plain.stdout)
