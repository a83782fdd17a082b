"""What ``doctor`` and ``compare`` show on a CI screen: the rows that decide the exit code
are always there, with their reasons; paths stay distinct and rule ids whole at any width.

Each test runs the command line on logs written here, at the widths a CI log or a terminal
gives (``COLUMNS``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from trainproof.cli import cli
from trainproof.render.text import shorten_paths

from conftest import healthy_rows, write_hf, write_jsonl


def doctor(*args: str, columns: int | None = None) -> tuple[int, str]:
    env = {"COLUMNS": str(columns)} if columns else {}
    res = CliRunner().invoke(cli, ["doctor", *args], env=env, catch_exceptions=False)
    return res.exit_code, res.stdout


def overfit_log(path: Path, seed: int = 0) -> None:
    """Train loss falls, eval loss rises after epoch 10: a WARN (TP-OVERFIT); ``seed``
    shifts the values (two runs with the same values are one run written twice)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(
            f"epoch {e} train_loss {2 * 0.9**e + 0.1 + 0.001 * seed:.4f} val_loss {1.0 + 0.02 * (e - 10) ** 2:.4f}\n"
            for e in range(1, 31)
        )
    )


def nan_log(path: Path) -> None:
    """A loss that turns NaN: a FAIL (TP-NAN)."""
    write_jsonl(path, [{"step": i, "loss": float("nan") if i > 40 else 2.0 / (i + 1)} for i in range(60)])


def no_loss_log(path: Path) -> None:
    """Accuracy only: not judged (TP-NO-LOSS), exit 2 when nothing FAILs."""
    write_jsonl(path, [{"step": i, "accuracy": 0.5 + i / 100} for i in range(30)])


def rows_of(out: str) -> list[list[str]]:
    """The table rows of doctor's screen, each split into its cells (2+ spaces apart)."""
    verdicts = ("FAIL", "WARN", "PASS", "NOT-CHECKED")
    return [re.split(r"\s{2,}", line.strip()) for line in out.splitlines() if line.startswith(verdicts)]


@pytest.fixture(scope="module")
def crowd(tmp_path_factory) -> Path:
    """30 WARN runs, one not judged, one FAIL: the not-judged row sorts after every WARN."""
    root = tmp_path_factory.mktemp("crowd")
    for i in range(30):
        overfit_log(root / f"warn{i:02d}" / "train.log", i)
    no_loss_log(root / "zz_no_loss" / "metrics.jsonl")
    nan_log(root / "zz_nan" / "metrics.jsonl")
    return root


@pytest.mark.slow
@pytest.mark.parametrize(
    "args", [["--quiet"], ["--only", "WARN"], ["--only", "FAIL,WARN"], ["--quiet", "--only", "WARN"]]
)
def test_the_rows_that_decide_the_exit_code_are_always_shown(crowd: Path, args: list[str]) -> None:
    code, out = doctor(str(crowd), *args, columns=100)
    assert code == 1, out
    rows = rows_of(out)
    shown = {r[1]: r[0] for r in rows}
    assert shown.get("zz_nan/metrics.jsonl") == "FAIL", out  # decides exit 1
    assert shown.get("zz_no_loss/metrics.jsonl") == "NOT-CHECKED", out  # decides exit 2 once the FAIL is fixed
    assert "TP-NO-LOSS: no loss series found" in out  # why, not cut
    if "--quiet" in args:
        assert sum(r[0] == "WARN" for r in rows) <= 20 and "more: --only FAIL,WARN" in out
        assert "--map loss=COLUMN" in out  # what to do about it


@pytest.mark.slow
def test_with_no_fail_the_not_judged_row_that_makes_exit_2_is_shown(crowd: Path, tmp_path: Path) -> None:
    for i in range(30):
        overfit_log(tmp_path / f"warn{i:02d}" / "train.log", i)
    no_loss_log(tmp_path / "zz_no_loss" / "metrics.jsonl")
    for args in (["--quiet"], ["--only", "FAIL,WARN"]):
        code, out = doctor(str(tmp_path), *args, columns=80)
        assert code == 2
        assert ["NOT-CHECKED", "zz_no_loss/metrics.jsonl"] == rows_of(out)[-1][:2], out
        assert "TP-NO-LOSS" in out


# --- widths -----------------------------------------------------------------------------


def long_ids_run(seed: int) -> list[dict]:
    """A run whose learning rate drops to 0 half-way: a WARN with a long id (TP-ZERO-LR-PARTIAL)."""
    return [
        {"step": 10 * (i + 1), "loss": 2.0 * 0.98**i + 0.01 * seed, "learning_rate": 0.0 if i > 30 else 1e-3}
        for i in range(60)
    ]


@pytest.fixture(scope="module")
def hf_tree(tmp_path_factory) -> Path:
    """HF runs whose paths differ only in one folder in the middle."""
    root = tmp_path_factory.mktemp("paths")
    for seed, name in enumerate(("lr_zero", "lr_hot", "lr_warm_restarts", "lr_zero_warmup")):
        write_hf(root / "hf_runs" / name / "checkpoint-300" / "trainer_state.json", long_ids_run(seed), max_steps=600)
    write_hf(root / "hf_runs" / "baseline_long_descriptive_name" / "trainer_state.json", healthy_rows())
    write_jsonl(root / "other" / "a" / "deeply" / "nested" / "folder" / "metrics.jsonl", healthy_rows())
    return root


@pytest.mark.slow
@pytest.mark.parametrize("columns", [60, 80, 120])
@pytest.mark.parametrize("view", [[], ["--quiet"]])
def test_paths_stay_distinct_and_rule_ids_whole_at_any_width(hf_tree: Path, columns: int, view: list[str]) -> None:
    doc = json.loads(CliRunner().invoke(cli, ["doctor", str(hf_tree), "--json"]).stdout)
    ids = {f["id"] for r in doc["reports"] for f in r["findings"] if f["level"] in ("FAIL", "WARN")}
    assert any(len(i) > 16 for i in ids), ids  # long enough to wrap in a narrow column
    _, out = doctor(str(hf_tree), *view, columns=columns)
    lines = out.splitlines()
    assert all(len(line) <= columns for line in lines), out
    table = out.split("\n\n")[0]
    labels = [r[1] for r in rows_of(table)]
    assert len(labels) == (4 if view else 6) and len(set(labels)) == len(labels), table
    assert any("lr_zero" in lab for lab in labels) and any("lr_hot" in lab for lab in labels), table
    for line in table.splitlines()[2:]:
        for token in re.findall(r"TP-[A-Z0-9-]*", line):
            assert token.rstrip("-") in ids and not token.endswith("-"), (token, table)
    shown = set(re.findall(r"TP-[A-Z0-9-]+", table))
    assert shown == ids or view, (shown, ids)  # --quiet's cut ids end in an ellipsis, never split


@pytest.mark.slow
@pytest.mark.parametrize("columns", [60, 80, 120])
def test_compares_table_is_doctors_table(hf_tree: Path, columns: int) -> None:
    runs = sorted(str(p) for p in hf_tree.glob("hf_runs/lr_*/checkpoint-300/trainer_state.json"))
    base = str(next(hf_tree.glob("hf_runs/baseline*/trainer_state.json")))
    res = CliRunner().invoke(cli, ["compare", base, *runs], env={"COLUMNS": str(columns)})
    table = res.stdout.split("\n\n")[0]
    head = table.splitlines()
    at = next(i for i, line in enumerate(head) if line.startswith("verdict"))
    assert head[0].strip().startswith("trainproof compare") and head[at].startswith("verdict       run")
    assert set(head[at + 1]) == {"─"}  # doctor's box: a rule under the header, no frame
    assert all(len(line) <= columns for line in table.splitlines())
    labels = [r[1] for r in rows_of(table)]
    assert len(labels) == 4 and len(set(labels)) == 4, table
    assert not re.search(r"TP-[A-Z0-9-]*-\s*$", table, re.M), table  # no id split at a line's end


def test_shortened_paths_keep_the_part_that_tells_them_apart() -> None:
    labels = [f"hf_runs/{n}/checkpoint-300/trainer_state.json" for n in ("lr_zero", "lr_hot")]
    for width in (24, 30, 40):
        short = shorten_paths(labels, width)
        assert len(set(short)) == 2 and all(len(s) <= width for s in short), short
        assert "lr_zero" in short[0] or width < 30, short
    assert shorten_paths(labels, 40) == ["…/lr_zero/…/trainer_state.json", "…/lr_hot/…/trainer_state.json"]
    assert shorten_paths(["a/b.log", "c.log"], 40) == ["a/b.log", "c.log"]  # what fits is untouched
    # store runs: one file, the run's name and id at the end tell them apart
    store = [f"trackers/mlflow.db — run {n} [{h}]" for n, h in (("train", "3f9a1c77"), ("train", "8e2b0d11"))]
    assert len(set(shorten_paths(store, 24))) == 2


# --- a store's runs are named alike everywhere; a database cites records, not lines -------


def two_runs_store(path: Path) -> Path:
    """An MLflow SQLite store holding two runs both named ``train`` in one experiment: one
    whose loss turns NaN (FAIL), one that only WARNs at most."""
    import sqlite3

    from _fuzz_logs import MLFLOW_DB_SCHEMA

    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    for ddl in MLFLOW_DB_SCHEMA:
        con.execute(ddl)
    t0 = 1_700_000_000_000
    con.execute("INSERT INTO experiments VALUES (0, 'Default', 'mlruns/0', 'active', ?, ?)", (t0, t0))
    for run_id, nan_from in (("aaaa1111bbbb2222cccc3333dddd4444", 40), ("eeee5555ffff6666aaaa7777bbbb8888", None)):
        con.execute("INSERT INTO runs VALUES (?, 'train', 'FINISHED', ?, ?, 'active', 0)", (run_id, t0, t0 + 60_000))
        con.execute("INSERT INTO tags VALUES ('mlflow.runName', 'train', ?)", (run_id,))
        rows = []
        for i, r in enumerate(healthy_rows(60, seed=len(run_id) + (nan_from or 0))):
            nan = nan_from is not None and i >= nan_from
            rows.append(("loss", 0.0 if nan else r["loss"], t0 + 1000 * i, run_id, r["step"], int(nan)))
            rows.append(("learning_rate", 1e-4, t0 + 1000 * i, run_id, r["step"], 0))
        con.executemany("INSERT INTO metrics VALUES (?, ?, ?, ?, ?, ?)", rows)
    con.commit()
    con.close()
    return path


@pytest.mark.slow
def test_a_stores_runs_are_named_as_the_text_table_names_them_everywhere(tmp_path: Path, monkeypatch) -> None:
    # Wide enough that no temporary path wraps (they are longer under pytest-xdist).
    monkeypatch.setenv("COLUMNS", "250")
    from trainproof.ci import github_action as ga

    two_runs_store(tmp_path / "trackers" / "mlflow.db")
    html, sarif = tmp_path / "r.html", tmp_path / "r.sarif"
    res = CliRunner().invoke(cli, ["doctor", str(tmp_path / "trackers"), "--json", "--html", str(html)])
    doc = json.loads(res.stdout)
    names = sorted(r["name"] for r in doc["reports"])
    assert len(names) == 2 and names[0] != names[1], names
    assert all(n.startswith(f"{tmp_path}/trackers/mlflow.db — run train [") for n in names), names
    # The text table shows the same names (as rows of the store's group) ...
    _, text = doctor(str(tmp_path / "trackers"), columns=120)
    for n in names:
        assert n.split("— ", 1)[1].split(" in ")[0] in text  # the group's header names the experiment
    # ... the HTML report, the Action's step log and its job summary too.
    page = html.read_text()
    assert all(n in page for n in names)
    for lines in (ga.log_lines(doc, 1, "fail"), ga.summary_markdown(doc, 1, "fail", ga.outputs(doc, 1, None))):
        shown = "\n".join(lines) if isinstance(lines, list) else lines
        assert "run train \\[aaaa1111\\]" in shown or "run train [aaaa1111]" in shown, shown
    # A database has records, not lines: every output cites the record.
    at = next(f["line"] for r in doc["reports"] for f in r["findings"] if f["id"] == "TP-NAN")
    res = CliRunner().invoke(cli, ["doctor", str(tmp_path / "trackers"), "--sarif", str(sarif)])
    assert f"(step 410, record {at})" in res.stdout, res.stdout
    assert f"the first is at step 410 (record {at})" in res.stdout  # the evidence too
    assert not re.search(r"\bline \d", res.stdout), res.stdout
    assert f"record {at}" in page and not re.search(r"\bline \d", page)
    results = json.loads(sarif.read_text())["runs"][0]["results"]
    nan = next(r for r in results if r["ruleId"] == "TP-NAN")
    assert f"record {at}" in nan["message"]["text"] and not re.search(r"\bline \d", nan["message"]["text"])
    assert nan["properties"]["recordIndex"] == at


# --- rule ids in any case --------------------------------------------------------------------


@pytest.mark.parametrize("typed", ["tp-nan", "Tp-Nan", " TP-nan "])
def test_rules_takes_an_id_in_any_case(typed: str) -> None:
    res = CliRunner().invoke(cli, ["rules", typed, "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["id"] == "TP-NAN"


@pytest.mark.slow
def test_mute_and_the_configuration_take_ids_in_any_case(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    nan_log(log)
    res = CliRunner().invoke(cli, ["judge", str(log), "--json", "--mute", "tp-nan", "--mute", "Tp-Nan-Grad"])
    skipped = json.loads(res.stdout)["reports"][0]["checks"]["skipped"]
    assert skipped["TP-NAN"]["reason"] == "muted", skipped
    cfg = tmp_path / "trainproof.toml"
    cfg.write_text('[tool.trainproof]\nmute = ["tp-nan"]\n')
    res = CliRunner().invoke(cli, ["judge", str(log), "--json", "--config", str(cfg)])
    assert json.loads(res.stdout)["reports"][0]["checks"]["skipped"]["TP-NAN"]["reason"] == "muted"
    # the Python API too
    from trainproof.api import judge

    assert "TP-NAN" in judge(log, mute=["tp-nan"]).skipped
    # an id no rule has is still an error, in any case
    res = CliRunner().invoke(cli, ["judge", str(log), "--mute", "tp-no-such-rule"])
    assert res.exit_code == 2 and "unknown rule id 'tp-no-such-rule'" in res.output


@pytest.mark.slow
def test_compares_json_names_the_baseline_and_each_run(hf_tree: Path) -> None:
    runs = sorted(str(p) for p in hf_tree.glob("hf_runs/lr_*/checkpoint-300/trainer_state.json"))[:2]
    base = str(next(hf_tree.glob("hf_runs/baseline*/trainer_state.json")))
    doc = json.loads(CliRunner().invoke(cli, ["compare", base, *runs, "--json"]).stdout)
    assert doc["baseline"]["name"] == base
    assert sorted(r["name"] for r in doc["reports"]) == runs
