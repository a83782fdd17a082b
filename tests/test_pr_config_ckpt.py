"""Safe to run on a pull request: the configuration search stays inside the repository, a
broken or hostile configuration is exit 2 naming it, and checkpoints are judged without
being trusted (issue 17). Real files in tmp_path, real processes where the CLI is run."""
from __future__ import annotations

import json

from conftest import healthy_rows, run_subprocess, write_jsonl


def _zero_lr_rows() -> list[dict]:
    rows = healthy_rows()
    for r in rows:
        r["learning_rate"] = 0.0
    return rows


def _repo(tmp_path, git_file: bool = False):
    """tmp_path/repo (a repository: .git folder, or a .git file as in a worktree) holding
    sub/run.jsonl with a learning rate of zero throughout (TP-ZERO-LR FAILs it)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    if git_file:
        (repo / ".git").write_text("gitdir: /nowhere/.git/worktrees/repo\n")
    else:
        (repo / ".git").mkdir()
    log = write_jsonl(repo / "sub" / "run.jsonl", _zero_lr_rows())
    return repo, log


MUTE = '[tool.trainproof]\nmute = ["TP-ZERO-LR"]\n'


def _epoch(cwd, log):
    p = run_subprocess("epoch", str(log), "--json", cwd=cwd)
    doc = json.loads(p.stdout) if p.stdout.strip().startswith("{") else None
    return p.returncode, doc, p.stderr


def _zero_lr_outcome(doc) -> str:
    rep = doc["reports"][0]
    if "TP-ZERO-LR" in rep["checks"]["skipped"]:
        return rep["checks"]["skipped"]["TP-ZERO-LR"]["reason"]
    return next(f["level"] for f in rep["findings"] if f["id"] == "TP-ZERO-LR")


# --- item 1: where the configuration comes from ---------------------------------------------

def test_config_above_the_repository_root_is_not_applied(tmp_path):
    repo, log = _repo(tmp_path)
    (tmp_path / "pyproject.toml").write_text(MUTE)  # above the repository: someone else's
    code, doc, err = _epoch(repo / "sub", log)
    assert code == 1, err
    assert _zero_lr_outcome(doc) == "FAIL"


def test_config_at_the_repository_root_is_applied(tmp_path):
    repo, log = _repo(tmp_path, git_file=True)
    (tmp_path / "pyproject.toml").write_text('[tool.trainproof]\nmute = ["TP-NOT-A-RULE"]\n')  # never read
    (repo / "pyproject.toml").write_text(MUTE)
    code, doc, err = _epoch(repo / "sub", log)
    assert code == 0, err
    assert _zero_lr_outcome(doc) == "muted"


def test_outside_a_repository_only_the_current_folder_is_searched(tmp_path):
    log = write_jsonl(tmp_path / "runs" / "sub" / "run.jsonl", _zero_lr_rows())
    (tmp_path / "runs" / "pyproject.toml").write_text(MUTE)  # a parent, and no .git anywhere
    code, doc, _ = _epoch(tmp_path / "runs" / "sub", log)
    assert code == 1 and _zero_lr_outcome(doc) == "FAIL"
    code, doc, _ = _epoch(tmp_path / "runs", log)  # the folder itself is searched
    assert code == 0 and _zero_lr_outcome(doc) == "muted"


def test_broken_pyproject_in_the_repository_is_exit_2_naming_it(tmp_path):
    repo, log = _repo(tmp_path)
    (tmp_path / "pyproject.toml").write_text(MUTE)
    broken = repo / "pyproject.toml"
    broken.write_text('[tool.trainproof\nmute = ["TP-ZERO-LR"]\n')  # a TOML syntax error
    code, doc, err = _epoch(repo / "sub", log)
    assert code == 2
    assert str(broken) in err and "not valid TOML" in err
    assert doc["reports"] == [] and str(broken) in doc["error"]


def test_pyproject_with_wrong_types_is_exit_2_naming_it(tmp_path):
    repo, log = _repo(tmp_path)
    for text, needle in [('tool = "trainproof"\n', "'tool'"),
                         ('[tool]\ntrainproof = ["TP-ZERO-LR"]\n', "[tool.trainproof]"),
                         ('[tool.trainproof]\nmute = "TP-ZERO-LR"\n', "'mute'"),
                         ('[tool.trainproof]\ndiverge_ratio = "big"\n', "diverge_ratio")]:
        (repo / "pyproject.toml").write_text(text)
        code, doc, err = _epoch(repo / "sub", log)
        assert code == 2, text
        assert str(repo / "pyproject.toml") in err and needle in err, (text, err)


def test_oversized_or_fifo_config_is_refused_without_blocking(tmp_path):
    import os

    from trainproof.config import MAX_CONFIG_BYTES

    repo, log = _repo(tmp_path)
    big = repo / "pyproject.toml"
    big.write_text("# padding\n" * (MAX_CONFIG_BYTES // 10 + 1) + MUTE)
    code, _, err = _epoch(repo / "sub", log)
    assert code == 2 and str(big) in err and "larger than" in err
    fifo = tmp_path / "tp.toml"
    os.mkfifo(fifo)  # nobody writes to it: an open without O_NONBLOCK would wait forever
    p = run_subprocess("epoch", str(log), "--config", str(fifo), cwd=repo / "sub", timeout=120)
    assert p.returncode == 2 and str(fifo) in p.stderr and "not a regular file" in p.stderr
