"""The tests mirror the package: each test module sits in the folder of the package it
tests (``tests/formats/`` for ``trainproof.formats``...), a top-level module's tests sit at
``tests/`` named for it, and ``tests/project/`` holds the tests of the repository around
the package (documentation, examples, evidence, CI). Names say what is tested, never which
issue asked for it."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO

TESTS = REPO / "tests"
PACKAGE = REPO / "src" / "trainproof"


def _test_modules() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if "fixtures" not in p.parts and "__pycache__" not in p.parts)


def test_every_test_module_sits_where_the_code_it_tests_sits():
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    modules = {p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("__")}
    misplaced = []
    for path in _test_modules():
        rel = path.relative_to(TESTS)
        if len(rel.parts) == 1:
            # tests/test_<module>[_<aspect>].py for a top-level module of the package
            if not any(rel.stem == f"test_{m}" or rel.stem.startswith(f"test_{m}_") for m in modules):
                misplaced.append(str(rel))
        elif len(rel.parts) != 2 or rel.parts[0] not in packages | {"project"}:
            misplaced.append(str(rel))
    assert not misplaced, f"test modules outside the package's layout: {misplaced}"


def test_test_module_names_are_unique_and_name_no_issue():
    # pytest imports test modules by their base name (rootdir-relative folders are not
    # packages here), so two folders may not hold the same name.
    names = [p.name for p in _test_modules()]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    by_issue = [n for n in names if re.search(r"(^|_)(pr|issue)(_|\d|\.)|\d{2,}", n)]
    assert not by_issue, by_issue


def test_the_layout_check_would_see_a_misplaced_module(tmp_path, monkeypatch):
    # The check above reads the real tree; here it reads a tree with one module in a
    # folder no package has, and one named for an issue, and fails on each.
    import pytest

    fake = tmp_path / "tests"
    (fake / "nowhere").mkdir(parents=True)
    (fake / "nowhere" / "test_x.py").write_text("")
    (fake / "test_pr_17.py").write_text("")
    monkeypatch.setattr(__import__(__name__), "TESTS", fake)
    with pytest.raises(AssertionError, match="nowhere"):
        test_every_test_module_sits_where_the_code_it_tests_sits()
    with pytest.raises(AssertionError, match="test_pr_17"):
        test_test_module_names_are_unique_and_name_no_issue()
