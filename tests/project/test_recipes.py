"""CONTRIBUTING.md's recipes, followed in a scratch copy of the repository with the code
blocks the recipe shows, then the suite's checks run there: a recipe that leaves out a step
(an example log, a regeneration) fails here rather than in a contributor's hands."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)


def _section(title: str) -> str:
    """The text of CONTRIBUTING.md's ``## title`` section."""
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def _block(section: str, lang: str, marker: str) -> str:
    """The one code block of ``section`` in language ``lang`` that contains ``marker``."""
    found = [body for lg, body in _FENCE.findall(section) if lg == lang and marker in body]
    assert len(found) == 1, f"the recipe has {len(found)} {lang} block(s) holding {marker!r}"
    return found[0]


def _named(section: str, pattern: str) -> str:
    """The path the recipe's prose names where ``pattern`` (one group) matches."""
    m = re.search(pattern, section)
    assert m, f"the recipe no longer says {pattern!r}"
    return m.group(1)


def _scratch(tmp_path: Path) -> Path:
    """A copy of the repository holding what the recipes touch and the checks they run
    (not ``examples/`` or ``evidence/``: no check run here reads them)."""
    root = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    for folder in ("src", "tools", "docs", ".ci", "tests"):
        shutil.copytree(REPO / folder, root / folder, ignore=ignore)
    for name in ("RULES.md", "README.md", "CONTRACTS.md", "CHANGELOG.md", "CONTRIBUTING.md", "pyproject.toml"):
        shutil.copy2(REPO / name, root / name)
    return root


def _append(path: Path, code: str) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n\n" + code)


def _split_elided(block: str, opening: str) -> tuple[str, list[str]]:
    """A block written as ``code``, a line ``...``, then ``opening`` and its new entries
    between ``...`` lines: the code, and the entries."""
    code, _, rest = block.partition("\n...\n")
    entries = [ln for ln in rest.splitlines() if ln.strip() not in ("", "...") and opening.strip() not in ln]
    return code, entries


def _pytest(root: Path, *args: str) -> subprocess.CompletedProcess:
    return _run(root, "-m", "pytest", "-v", "-p", "no:cacheprovider", *args)


def _run(root: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        cwd=root,
        env={"PYTHONPATH": str(root / "src"), "PATH": "/usr/bin:/bin", "NO_COLOR": "1", "HOME": str(root)},
        timeout=timeout,
    )


def _insert_field(source: str, field: str) -> str:
    """``source`` (rules/thresholds.py) with ``field`` added after the last field of
    ``Thresholds`` (before its first method)."""
    cls = source.index("\nclass Thresholds")
    at = source.index("\n    def ", cls)
    at = source.rindex("\n\n", cls, at)  # before the blank line that precedes the method
    return source[:at] + "\n" + field.rstrip("\n") + source[at:]


@pytest.mark.slow
def test_the_new_rule_recipe_gives_a_rule_every_check_passes(tmp_path):
    recipe = _section("Adding a rule")
    rule_file = "src/trainproof/" + _named(recipe, r"The rule, in `(rules/\w+\.py)`")
    example_file = _named(recipe, r"Its example, `(src/trainproof/rules/examples/[^`]+)`")
    test_file = _named(recipe, r"Its own tests, beside the others of its group \(`(tests/rules/test_\w+\.py)`")
    rule_code = _block(recipe, "python", "@rule(")
    threshold_code = _block(recipe, "python", "valid=")
    example = _block(recipe, "json", '"step"')
    test_code = _block(recipe, "python", "def test_")
    regen = _block(recipe, "bash", "tools/regen.py").strip()
    assert regen == "python tools/regen.py", regen
    rule_id = re.search(r'@rule\(\s*"(TP-[A-Z0-9-]+)"', rule_code).group(1)

    root = _scratch(tmp_path)

    # The rule and its test, each appended to its group's module.
    _append(root / rule_file, rule_code)
    _append(root / test_file, test_code)
    # Its threshold: one field, with its default, reason, unit (unit=) and range (valid=).
    assert "unit=" in threshold_code, threshold_code
    th = root / "src" / "trainproof" / "rules" / "thresholds.py"
    th.write_text(_insert_field(th.read_text(encoding="utf-8"), threshold_code), encoding="utf-8")
    (root / example_file).write_text(example, encoding="utf-8")
    # The recipe's command, with the targets this copy holds (the gallery, samples and HTML
    # targets read examples/, the accuracy one ../shared; the checks below read none of them).
    proc = _run(root, *regen.split()[1:], "rules", "pages")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert (root / "docs" / "rules" / f"{rule_id}.md").exists()
    assert f"[{rule_id}](docs/rules/{rule_id}.md)" in (root / "RULES.md").read_text(encoding="utf-8")

    test_name = re.search(r"^def (test_\w+)", test_code, re.M).group(1)
    proc = _pytest(
        root,
        "tests/project/test_docs.py",
        "tests/rules/test_rule_examples.py",
        "tests/project/test_registration.py",
        "tests/rules/test_rule_text.py",
        "tests/rules/test_thresholds.py::test_every_declared_threshold_is_read_by_the_rule",
        "tests/rules/test_thresholds.py::test_declared_thresholds_exist",
        "tests/test_config_untrusted.py::test_every_threshold_declares_a_range_that_holds_its_default",
        "tests/test_config_untrusted.py::test_every_threshold_declares_a_unit_from_the_vocabulary",
        f"{test_file}::{test_name}",
    )
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    assert f"test_the_example_triggers_its_rule[{rule_id}] PASSED" in proc.stdout, proc.stdout[-3000:]
    assert f"{test_name} PASSED" in proc.stdout, proc.stdout[-3000:]


@pytest.mark.slow
def test_the_new_format_recipe_gives_a_reader_every_check_passes(tmp_path):
    recipe = _section("Adding a format")
    module_file = _named(recipe, r"`(src/trainproof/formats/\w+\.py)`:")
    test_file = _named(recipe, r"Its tests: `(tests/formats/test_\w+\.py)`")
    module_code = _block(recipe, "python", "def sniff(")
    line = _block(recipe, "python", "READER_MODULES = (").strip()
    test_code = _block(recipe, "python", "def test_")
    fuzz_code = _block(recipe, "python", "READERS = {")
    name = re.search(r'^name = "(\w+)"', module_code, re.M).group(1)
    assert Path(module_file).stem == name

    root = _scratch(tmp_path)
    init = root / "src" / "trainproof" / "formats" / "__init__.py"
    text = init.read_text(encoding="utf-8")
    current = re.search(r"^READER_MODULES = \(.*?\)$", text, re.M | re.S).group(0)
    today, shown = (ast.literal_eval(t.partition("=")[2].strip()) for t in (current, line))
    assert shown == (*today, name), f"the recipe's READER_MODULES is not today's plus {name!r}: {shown}"

    (root / module_file).write_text(module_code, encoding="utf-8")
    init.write_text(text.replace(current, line), encoding="utf-8")  # the one registration line
    (root / test_file).write_text(test_code, encoding="utf-8")
    # The fuzz table's builder and entry, and the key in the fuzz tests' list of text readers.
    opening = "READERS = {\n"
    builder, entries = _split_elided(fuzz_code, opening)
    fuzz = root / "tests" / "_fuzz_logs.py"
    source = fuzz.read_text(encoding="utf-8")
    assert source.count(opening) == 1
    source = source.replace(opening, builder.rstrip() + "\n\n\n" + opening + "\n".join(entries) + "\n")
    fuzz.write_text(source, encoding="utf-8")
    fuzz_tests = root / "tests" / "formats" / "test_fuzz_readers.py"
    source = fuzz_tests.read_text(encoding="utf-8")
    assert source.count("TEXT = [\n") == 1
    fuzz_tests.write_text(source.replace("TEXT = [\n", f'TEXT = [\n    "{name}",\n'), encoding="utf-8")

    test_name = re.search(r"^def (test_\w+)", test_code, re.M).group(1)
    # Leaves out the test that registers a made-up reader of the same name to show this recipe.
    chosen = f"(test_base or {test_name} or {name}) and not test_a_new_reader_is_found"
    proc = _pytest(root, "tests/formats/test_base.py", test_file, "tests/formats/test_fuzz_readers.py", "-k", chosen)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    assert f"test_every_reader_follows_the_protocol[{name}] PASSED" in proc.stdout, proc.stdout[-3000:]
    assert "test_every_reader_is_fuzzed PASSED" in proc.stdout, proc.stdout[-3000:]
    assert f"{test_name} PASSED" in proc.stdout, proc.stdout[-3000:]
    assert f"[{name}] PASSED" in proc.stdout.split("tests/formats/test_fuzz_readers.py", 1)[-1], proc.stdout[-3000:]
