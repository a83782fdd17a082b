"""doctor: the walk, pruning, symlink loops, checkpoint snapshots, unreadable files, exit codes."""

from __future__ import annotations

import os

from trainproof.discover import group_runs, walk

from conftest import healthy_rows, run_cli, write_hf, write_jsonl, zero_lr_rows


def _tree(tmp_path):
    root = tmp_path / "runs"
    write_jsonl(root / "a" / "metrics.jsonl", healthy_rows(seed=1))
    write_jsonl(root / "b" / "metrics.jsonl", zero_lr_rows(seed=2))
    return root


def test_doctor_judges_every_run_worst_first(tmp_path):
    root = _tree(tmp_path)
    code, out, _, doc = run_cli("doctor", str(root), "--json")
    assert code == 1
    files = {os.path.relpath(r["file"], root): r["verdict"] for r in doc["reports"]}
    assert files == {"a/metrics.jsonl": "PASS", "b/metrics.jsonl": "FAIL"}
    code, out, _, _ = run_cli("doctor", str(root))
    assert out.index("b/metrics.jsonl") < out.index("a/metrics.jsonl")  # worst first in the table


def test_doctor_default_path_is_cwd(tmp_path, monkeypatch):
    root = _tree(tmp_path)
    monkeypatch.chdir(root)
    code, _, _, doc = run_cli("doctor", "--json")
    assert code == 1 and len(doc["reports"]) == 2


def test_doctor_prunes_venvs_git_node_modules(tmp_path):
    root = _tree(tmp_path)
    for d in (".git", "node_modules", "__pycache__", ".venv", "myenv"):
        write_jsonl(root / d / "metrics.jsonl", healthy_rows())
    (root / "myenv" / "pyvenv.cfg").write_text("home = /usr\n")
    found = {os.path.relpath(p, root) for p in walk(root)}
    assert found == {"a/metrics.jsonl", "b/metrics.jsonl"}


def test_doctor_survives_symlink_loops(tmp_path):
    root = _tree(tmp_path)
    os.symlink(root, root / "a" / "loop")
    os.symlink(root / "a", root / "b" / "again")
    found = walk(root)
    assert len(found) == 2  # each real folder visited once
    code, _, _, doc = run_cli("doctor", str(root), "--json")
    assert code == 1 and len(doc["reports"]) == 2


def test_checkpoint_snapshots_fold_into_the_most_complete(tmp_path):
    out = tmp_path / "out"
    rows = healthy_rows(60)
    write_hf(out / "checkpoint-200" / "trainer_state.json", rows[:20])
    write_hf(out / "checkpoint-400" / "trainer_state.json", rows[:40])
    write_hf(out / "checkpoint-600" / "trainer_state.json", rows)
    cands = group_runs(walk(out))
    assert len(cands) == 1
    assert cands[0].path.parent.name == "checkpoint-600"
    assert [p.parent.name for p in cands[0].snapshots] == ["checkpoint-200", "checkpoint-400"]
    code, _, _, doc = run_cli("doctor", str(out), "--json")
    rep = doc["reports"][0]
    assert len(doc["reports"]) == 1 and rep["records"] == 60 and len(rep["snapshots"]) == 2
    # A top-level trainer_state.json is the final state: it wins over every checkpoint.
    write_hf(out / "trainer_state.json", rows)
    cands = group_runs(walk(out))
    assert len(cands) == 1 and cands[0].path == out / "trainer_state.json" and len(cands[0].snapshots) == 3


def test_unreadable_logs_are_listed_and_exit_2(tmp_path):
    root = _tree(tmp_path)
    for r in root.glob("*/metrics.jsonl"):  # make both runs healthy so only the read failures count
        write_jsonl(r, healthy_rows())
    (root / "c").mkdir()
    (root / "c" / "trainer_state.json").write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 10\n"
    )
    (root / "d").mkdir()
    (root / "d" / "trainer_state.json").write_text("")
    (root / "notes.txt").write_text("just some notes, not a log\n")
    code, out, _, doc = run_cli("doctor", str(root), "--json")
    assert code == 2
    errs = {os.path.relpath(r["file"], root): r["error"] for r in doc["reports"] if r["error"]}
    # An LFS pointer under a name only runs write is a run not fetched; an empty file is
    # no run at all, whatever its name.
    assert set(errs) == {"c/trainer_state.json"}
    assert "LFS pointer" in errs["c/trainer_state.json"]
    ignored = {os.path.relpath(i["file"], root): i["reason"] for i in doc["ignored"]}
    assert "empty file" in ignored["d/trainer_state.json"]
    code, out, _, _ = run_cli("doctor", str(root))
    assert "could not be read" in out and "notes.txt" not in out
    (root / "c" / "trainer_state.json").unlink()
    assert run_cli("doctor", str(root))[0] == 0


def test_data_files_are_not_mistaken_for_logs(tmp_path):
    root = _tree(tmp_path)
    write_jsonl(root / "data" / "train.jsonl", [{"text": f"sample {i}", "label": i % 2} for i in range(50)])
    code, _, _, doc = run_cli("doctor", str(root), "--json")
    assert all("data/train.jsonl" not in r["file"] for r in doc["reports"])
    assert [os.path.relpath(i["file"], root) for i in doc["ignored"]] == ["data/train.jsonl"]
    assert "data table" in doc["ignored"][0]["reason"]


def test_empty_directory_is_exit_2(tmp_path):
    code, _, err, doc = run_cli("doctor", str(tmp_path), "--json")
    assert code == 2 and "no training logs found" in doc["error"]


def test_missing_path_is_exit_2(tmp_path):
    code, _, err, _ = run_cli("doctor", str(tmp_path / "nope"))
    assert code == 2 and "no such file" in err


def test_unreadable_permission_file(tmp_path):
    if os.geteuid() == 0:
        import pytest

        pytest.skip("root can read any file")
    root = _tree(tmp_path)
    p = root / "a" / "metrics.jsonl"
    p.chmod(0)
    code, _, _, doc = run_cli("doctor", str(root), "--json")
    assert any(r["error"] and "permission" in r["error"] for r in doc["reports"])


def test_several_paths_are_judged_together_and_snapshots_still_fold(tmp_path) -> None:
    """Files given one by one (as a pre-commit hook passes them) are one search: a path
    given twice is one run, and a checkpoint snapshot named beside its run folds into it."""
    rows = healthy_rows()
    a = write_jsonl(tmp_path / "a" / "train.jsonl", healthy_rows(seed=1))
    write_hf(tmp_path / "out" / "checkpoint-50" / "trainer_state.json", rows[:50])
    top = write_hf(tmp_path / "out" / "trainer_state.json", rows)
    code, _, _, doc = run_cli(
        "doctor", str(a), str(a), str(top), str(tmp_path / "out" / "checkpoint-50" / "trainer_state.json"), "--json"
    )
    assert code == 0
    assert sorted(r["file"] for r in doc["reports"]) == sorted([str(a), str(top)])
    (hf,) = [r for r in doc["reports"] if r["format"] == "hf"]
    assert hf["snapshots"] == [str(tmp_path / "out" / "checkpoint-50" / "trainer_state.json")]


def test_allow_empty_is_exit_0_only_when_no_log_is_found(tmp_path) -> None:
    table = tmp_path / "data.csv"
    table.write_text("id,text,label\n1,hello,0\n2,world,1\n")
    assert run_cli("doctor", str(table))[0] == 2
    code, out, _, _ = run_cli("doctor", str(table), "--allow-empty")
    assert code == 0 and "no training logs found" in out
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"step": i, "loss": float("nan")} for i in range(40)])
    assert run_cli("doctor", str(table), str(bad), "--allow-empty")[0] == 1
