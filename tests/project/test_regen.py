"""``tools/regen.py``: the one command that regenerates every generated file, and its
``--check`` (nothing written, exit 1 listing the stale files)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO


def _regen(root: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    # No PYTHONPATH of ours: the script puts its own checkout's src/ first.
    return subprocess.run(
        [sys.executable, str(root / "tools" / "regen.py"), *args],
        capture_output=True,
        text=True,
        cwd=root,
        env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1"},
        timeout=timeout,
    )


def _scratch(tmp_path: Path) -> Path:
    """A copy of what the ``rules`` and ``pages`` targets read and write."""
    root = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "src", root / "src", ignore=ignore)
    shutil.copytree(REPO / "tools", root / "tools", ignore=ignore)
    shutil.copytree(REPO / "docs", root / "docs")
    shutil.copy2(REPO / "RULES.md", root / "RULES.md")
    return root


@pytest.mark.slow
def test_every_generated_file_of_the_checkout_is_current():
    """The accuracy page has its own test (it runs the scorecard over the shared corpus)."""
    proc = _regen(REPO, "--check", "--skip", "accuracy")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "every generated file is current" in proc.stdout


@pytest.mark.slow
def test_check_lists_the_stale_files_and_writes_nothing_then_regen_fixes_them(tmp_path):
    root = _scratch(tmp_path)
    rules_md = (root / "RULES.md").read_text(encoding="utf-8")
    nan_page = (root / "docs" / "rules" / "TP-NAN.md").read_text(encoding="utf-8")
    (root / "RULES.md").write_text(rules_md + "an edit by hand\n", encoding="utf-8")
    (root / "docs" / "rules" / "TP-NAN.md").write_text("old text\n", encoding="utf-8")
    (root / "docs" / "rules" / "TP-GONE.md").write_text("the page of a removed id\n", encoding="utf-8")

    proc = _regen(root, "--check", "rules", "pages")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    stale = sorted(ln.removeprefix("stale: ") for ln in proc.stdout.splitlines() if ln.startswith("stale: "))
    assert stale == ["RULES.md", "docs/rules/TP-GONE.md", "docs/rules/TP-NAN.md"], proc.stdout
    assert (root / "RULES.md").read_text(encoding="utf-8") == rules_md + "an edit by hand\n"
    assert (root / "docs" / "rules" / "TP-GONE.md").exists()

    proc = _regen(root, "rules", "pages")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (root / "RULES.md").read_text(encoding="utf-8") == rules_md
    assert (root / "docs" / "rules" / "TP-NAN.md").read_text(encoding="utf-8") == nan_page
    assert not (root / "docs" / "rules" / "TP-GONE.md").exists()
    assert "removed docs/rules/TP-GONE.md" in proc.stdout

    proc = _regen(root, "--check", "rules", "pages")
    assert proc.returncode == 0 and "every generated file is current" in proc.stdout, proc.stdout + proc.stderr


def test_an_unknown_target_is_exit_2_naming_the_targets():
    proc = _regen(REPO, "--check", "rulez", timeout=60)
    assert proc.returncode == 2
    assert "unknown target rulez" in proc.stderr and "samples" in proc.stderr
