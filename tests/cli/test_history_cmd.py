"""The run history from the command line: ``--history`` on doctor, judge, compare and
watch, ``[tool.trainproof] history``, ``compare --against`` and ``trainproof history``."""

from __future__ import annotations

import json
import shutil

import pytest
from _postgres import new_database
from click.testing import CliRunner

from trainproof.cli import cli
from trainproof.history.recording import forget
from trainproof.history.store import open_store

from conftest import REPO, run_cli, run_subprocess

pytestmark = pytest.mark.slow

TORCH = REPO / "examples" / "gallery" / "torch"
HEALTHY = TORCH / "healthy"
BAD = TORCH / "bad_labels"


@pytest.fixture(autouse=True)
def wide_screen(monkeypatch):
    """A wide screen: the tables below are read by their text, which a narrow one folds
    (under pytest-xdist no terminal gives the width)."""
    monkeypatch.setenv("COLUMNS", "250")


def runs_in(where, experiment):
    forget(str(where))  # the in-process commands keep it open; read it afresh
    with open_store(str(where), create=False) as st:
        return st.runs(experiment)


@pytest.fixture
def seeded(tmp_path):
    """A history whose experiment ``torch`` holds the gallery's three healthy seeds."""
    where = tmp_path / "history.db"
    code, out, err, _ = run_cli("doctor", str(HEALTHY), "--history", str(where), "--experiment", "torch", "-q")
    assert code == 0, err
    return where


def test_doctor_records_every_judged_run_and_nothing_without_history(tmp_path, seeded):
    assert sorted(r.run for r in runs_in(seeded, "torch")) == [f"seed{i}/metrics.jsonl" for i in range(3)]
    code, _, _, _ = run_cli("doctor", str(HEALTHY), "-q")
    assert code == 0 and sorted(p.name for p in tmp_path.iterdir()) == ["history.db"]


def test_doctor_records_under_the_run_family_by_default_and_from_worker_processes(tmp_path):
    where = tmp_path / "h.db"
    p = run_subprocess("doctor", str(HEALTHY), "--history", str(where), "--jobs", "2", "-q")
    assert p.returncode == 0, p.stderr
    assert len(runs_in(where, HEALTHY.as_posix())) == 3


def test_a_store_that_cannot_be_used_is_exit_2_with_the_verdicts_printed(tmp_path):
    where = tmp_path / "no" / "h.db"
    code, out, err, doc = run_cli("doctor", str(HEALTHY), "--history", str(where), "--json")
    assert code == 2
    assert [r["verdict"] for r in doc["reports"]] == ["PASS"] * 3
    assert doc["error"] == f"history {where}: the folder {where.parent} does not exist"
    code, out, err, _ = run_cli("doctor", str(HEALTHY), "--history", str(where))
    assert code == 2 and "3 PASS" in out
    assert err.count("does not exist") == 1  # one line, not one a run
    code, out, err, _ = run_cli("judge", str(BAD / "seed0" / "metrics.jsonl"), "--history", str(where))
    assert code == 2 and "verdict: WARN" in out and "does not exist" in err


def test_the_history_setting_of_the_configuration_is_a_path_from_its_folder(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.trainproof]\nhistory = "runs/history.db"\n')
    (tmp_path / "runs").mkdir()
    (tmp_path / "sub").mkdir()
    (tmp_path / ".git").mkdir()  # the configuration search stops at the repository root
    monkeypatch.chdir(tmp_path / "sub")
    log = HEALTHY / "seed0" / "metrics.jsonl"
    code, _, err, _ = run_cli("judge", str(log), "--experiment", "cfg")
    assert code == 0, err
    assert [r.run for r in runs_in(tmp_path / "runs" / "history.db", "cfg")] == ["seed0/metrics.jsonl"]
    # an empty --history turns the configured one off for the command
    code, _, err, _ = run_cli("judge", str(log), "--experiment", "cfg", "--history", "")
    assert code == 0, err
    assert len(runs_in(tmp_path / "runs" / "history.db", "cfg")) == 1


@pytest.mark.parametrize("command", ["judge", "doctor"])
@pytest.mark.parametrize("name", ["", "   ", "a\nb"])
def test_a_blank_experiment_name_or_one_with_a_control_character_is_refused(tmp_path, command, name):
    where = tmp_path / "h.db"
    code, out, err, _ = run_cli(
        command, str(HEALTHY / "seed0" / "metrics.jsonl"), "--history", str(where), "--experiment", name
    )
    assert code == 2 and "printable, non-blank name" in out + err, (out, err)


def test_spaces_around_an_experiment_name_are_dropped(tmp_path):
    where = tmp_path / "h.db"
    code, _, err, _ = run_cli(
        "judge", str(HEALTHY / "seed0" / "metrics.jsonl"), "--history", str(where), "--experiment", " mnist "
    )
    assert code == 0, err
    assert len(runs_in(where, "mnist")) == 1


def test_compare_against_best_flags_the_shuffled_labels_and_passes_a_healthy_seed(tmp_path, seeded):
    bad, good = BAD / "seed1" / "metrics.jsonl", HEALTHY / "seed2" / "metrics.jsonl"
    code, out, err, doc = run_cli(
        "compare", "--against", "best", "--history", str(seeded), "--experiment", "torch", str(bad), str(good), "--json"
    )
    assert code == 1, err
    by_file = {r["file"]: r for r in doc["reports"]}
    assert "TP-FLOOR-RATIO" in [f["id"] for f in by_file[str(bad)]["findings"]]
    assert by_file[str(good)]["verdict"] == "PASS"
    # best = the seed with the lowest eval floor, never the run itself
    assert doc["baseline"]["file"].startswith("seed0/metrics.jsonl (history #")
    assert len(runs_in(seeded, "torch")) == 5  # both runs recorded


def test_compare_against_last_n_and_a_named_run(seeded):
    bad = str(BAD / "seed0" / "metrics.jsonl")
    for against in ("last:3", "seed1/metrics.jsonl", "#2"):
        code, out, err, _ = run_cli(
            "compare", "--against", against, "--history", str(seeded), "--experiment", "torch", bad
        )
        assert code == 1 and "TP-FLOOR-RATIO" in out, (against, err)
    code, out, err, _ = run_cli(
        "compare", "--against", "last:3", "--history", str(seeded), "--experiment", "torch", bad
    )
    # eval floors 0.106 (seed0), 0.131 (seed1), 0.117 (seed2): the median is seed2's
    assert "baseline seed2/metrics.jsonl (history #3)" in out


def test_compare_against_needs_a_history_a_known_run_and_a_valid_spec(tmp_path, seeded):
    bad = str(BAD / "seed0" / "metrics.jsonl")
    code, _, err, _ = run_cli("compare", "--against", "best", bad)
    assert code == 2 and "--against takes the baseline from a run history" in err
    code, _, err, _ = run_cli("compare", "--against", "last:0", "--history", str(seeded), bad)
    assert code == 2 and "last:N needs a whole number" in err
    code, out, err, _ = run_cli("compare", "--against", "nosuch", "--history", str(seeded), bad)
    assert code == 2 and "no recorded run nosuch" in err and "verdict: WARN" in out
    code, _, err, _ = run_cli("compare", "--against", "best", "--history", str(seeded), "--experiment", "empty", bad)
    assert code == 2 and "no healthy run with a loss recorded in experiment empty" in err
    code, _, err, _ = run_cli("compare", bad)
    assert code == 2 and "compare needs a BASELINE and at least one RUN" in err
    # a history that does not exist yet holds no baseline, and is not created by looking
    new = tmp_path / "new" / "history.db"
    new.parent.mkdir()
    code, out, err, _ = run_cli("compare", "--against", "best", "--history", str(new), bad)
    assert code == 2 and "no such file (nothing recorded there yet" in err and "verdict: WARN" in out
    assert not new.exists() and list(new.parent.iterdir()) == []


def test_history_lists_experiments_and_an_experiments_runs(seeded):
    run_cli("judge", str(BAD / "seed0" / "metrics.jsonl"), "--history", str(seeded), "--experiment", "torch")
    code, out, _, _ = run_cli("history", "--history", str(seeded))
    assert code == 0 and "torch" in out and "4" in out
    code, out, _, _ = run_cli("history", "torch", "--history", str(seeded))
    assert code == 0
    assert out.index("seed0/metrics.jsonl") < out.index("seed2/metrics.jsonl") < out.index("seed1/metrics.jsonl")
    assert "TP-NEAR-CHANCE" in out and "lower than 0 of the 3 healthy runs before it" in out
    res = CliRunner().invoke(cli, ["history", "torch", "--history", str(seeded), "--json", "--limit", "2"])
    doc = json.loads(res.stdout)
    assert [r["id"] for r in doc["runs"]] == [4, 3] and doc["total"] == 4 and doc["last"]["z"] > 10


def test_history_finds_an_experiment_by_its_folders_name_and_never_creates_a_store(tmp_path):
    where = tmp_path / "h.db"
    run_cli("doctor", str(HEALTHY), "--history", str(where), "-q")
    code, out, _, _ = run_cli("history", "healthy", "--history", str(where))
    assert code == 0 and "seed1/metrics.jsonl" in out
    code, _, err, _ = run_cli("history", "nope", "--history", str(where))
    assert code == 2 and "no experiment nope" in err
    code, _, err, _ = run_cli("history", "--history", str(tmp_path / "none.db"))
    assert code == 2 and "no such file" in err and not (tmp_path / "none.db").exists()
    code, _, err, _ = run_cli("history")
    assert code == 2 and "no run history given" in err


def test_watch_records_the_run_when_it_ends(tmp_path):
    where = tmp_path / "h.db"
    log = tmp_path / "seed0" / "metrics.jsonl"
    log.parent.mkdir()
    shutil.copy(HEALTHY / "seed0" / "metrics.jsonl", log)
    p = run_subprocess(
        "watch", str(log), "--interval", "0.1", "--stall-timeout", "0.5", "--history", str(where), "--json"
    )
    assert p.returncode == 0, p.stderr
    (got,) = runs_in(where, tmp_path.as_posix())
    assert got.source == log.as_posix() and "TP-STALL" in got.findings


def test_the_same_commands_on_a_postgresql_history(pg):
    where = new_database(pg)
    code, _, err, _ = run_cli("doctor", str(HEALTHY), "--history", where, "--experiment", "torch", "-q")
    assert code == 0, err
    bad = str(BAD / "seed2" / "metrics.jsonl")
    code, out, err, _ = run_cli("compare", "--against", "best", "--history", where, "--experiment", "torch", bad)
    assert code == 1 and "TP-FLOOR-RATIO" in out and "baseline seed0/metrics.jsonl (history #1)" in out, err
    code, out, _, _ = run_cli("history", "torch", "--history", where)
    assert code == 0 and "(4 of 4 runs, newest first)" in out and "lower than 0 of the 3 healthy runs" in out
    code, out, _, _ = run_cli("history", "--history", where)  # the experiments, in one query
    assert code == 0 and "torch" in out and "experiments (1, most recent first)" in out


def test_doctor_with_a_history_judges_the_same_for_any_number_of_jobs(tmp_path):
    """The runs of one `doctor` are judged against the history as it was when the command
    started, never against each other: the reports are the same for --jobs 1 and 2 (a
    history holding the healthy seeds, then every configuration of the framework)."""
    got = {}
    for jobs in ("1", "2"):
        where = tmp_path / f"h{jobs}.db"
        code, _, err, _ = run_cli("doctor", str(HEALTHY), "--history", str(where), "--experiment", "t", "-q")
        assert code == 0, err
        code, out, err, doc = run_cli(
            "doctor", str(TORCH), "--history", str(where), "--experiment", "t", "--jobs", jobs, "--json"
        )
        got[jobs] = sorted((r["file"], tuple((f["id"], f["level"]) for f in r["findings"])) for r in doc["reports"])
        # nothing recorded by this command was a reference for its other runs
        assert all(
            len(f["data"].get("runs", [])) <= 3
            for r in doc["reports"]
            for f in r["findings"]
            if f["id"] == "TP-BEHIND-HISTORY"
        )
    assert got["1"] == got["2"]


def test_compare_against_a_named_run_looks_in_the_experiment_and_takes_no_failed_run(tmp_path, seeded):
    """A name shared across experiments names the run of the compared run's experiment; a
    path given relative to the current folder finds its run; a run judged FAIL is no
    known-good baseline."""
    bad = str(BAD / "seed0" / "metrics.jsonl")
    # the same names under another experiment, one of them a FAIL run
    code, _, err, _ = run_cli("doctor", str(TORCH / "lr_hot"), "--history", str(seeded), "--experiment", "other", "-q")
    code, out, err, doc = run_cli(
        "compare", "--against", "seed1/metrics.jsonl", "--history", str(seeded), "--experiment", "torch", bad, "--json"
    )
    assert code == 1 and doc["baseline"]["file"].startswith("seed1/metrics.jsonl (history #2)"), doc["baseline"]["file"]
    rel = str((HEALTHY / "seed1" / "metrics.jsonl").relative_to(REPO))
    code, out, err, _ = (
        run_subprocess(
            "compare", "--against", rel, "--history", str(seeded), "--experiment", "torch", bad, cwd=REPO
        ).returncode,
        None,
        None,
        None,
    )
    assert code == 1
    with open_store(str(seeded), create=False) as st:
        failed = [r for r in st.runs("other") if r.verdict == "FAIL"]
    assert failed, "the lr_hot runs FAIL"
    code, out, err, _ = run_cli("compare", "--against", f"#{failed[0].id}", "--history", str(seeded), bad)
    assert code == 2 and "was judged FAIL, not a known-good baseline" in err


def test_history_lists_the_most_recent_experiments_up_to_the_limit(tmp_path):
    where = tmp_path / "h.db"
    with open_store(str(where)) as st:
        import numpy as np

        from trainproof.history.record import Curve, RunRecord

        for i in range(30):
            steps = np.arange(1.0, 11.0)
            st.add(
                RunRecord(
                    f"exp{i:02d}", "r", f"/x/{i}", "PASS", (), {}, {"loss": Curve(steps, 1 / steps)}, None, float(i)
                )
            )
    res = CliRunner().invoke(cli, ["history", "--history", str(where), "--limit", "5", "--json"])
    doc = json.loads(res.stdout)
    assert res.exit_code == 0
    assert doc["total"] == 30 and [e["experiment"] for e in doc["experiments"]] == [
        f"exp{i}" for i in (29, 28, 27, 26, 25)
    ]
    code, out, _, _ = run_cli("history", "--history", str(where), "--limit", "3")
    assert "experiments (3 of 30, most recent" in out and "exp29" in out and "exp10" not in out
