"""The refs the documentation tells users to pin (``uses: trainproof/trainproof@REF``,
pre-commit's ``rev: REF``) work as pasted: the default branch, a full commit SHA, or a tag
that exists in this repository."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from conftest import REPO

#: The repository's default branch (the documentation's links point into it: ``blob/main``).
DEFAULT_BRANCH = "main"

_USES = re.compile(r"trainproof/trainproof@([^\s`'\"]+)")
_REV = re.compile(r"repo:\s*https://github\.com/trainproof/trainproof\s*\n\s*rev:\s*([^\s#]+)")


def documented_refs() -> list[tuple[str, str]]:
    """``(file, ref)`` for every ref of this repository the Markdown files show."""
    out = []
    for path in sorted([REPO / "README.md", REPO / "CONTRIBUTING.md", *(REPO / "docs").rglob("*.md")]):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(REPO).as_posix()
        # a placeholder (`@<ref>`, `@<40-hex SHA>`) names no ref
        out += [(rel, m.group(1)) for m in _USES.finditer(text) if not m.group(1).startswith("<")]
        out += [(rel, m.group(1)) for m in _REV.finditer(text)]
    return out


def _tags() -> set[str] | None:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        return None
    p = subprocess.run(["git", "tag", "--list"], cwd=REPO, capture_output=True, text=True, timeout=60)
    return set(p.stdout.split()) if p.returncode == 0 else None


def test_every_documented_ref_exists():
    refs = documented_refs()
    assert any(f == "docs/ci.md" for f, _ in refs), "the CI page shows no ref: the pattern is stale"
    assert len([r for f, r in refs if f == "docs/ci.md"]) >= 2  # the action and the pre-commit hook
    tags = None
    for where, ref in refs:
        if ref == DEFAULT_BRANCH or re.fullmatch(r"[0-9a-f]{40}", ref):
            continue
        if tags is None:
            tags = _tags()
            if tags is None:
                pytest.skip(f"{where} shows {ref!r}, a tag, and there is no git here to list the tags")
        assert ref in tags, f"{where} pins {ref!r}: no such tag (tags: {sorted(tags)}); show {DEFAULT_BRANCH} or a SHA"


def test_the_documented_workflow_uses_only_what_the_action_declares():
    """The workflow on the CI page parses, and names only inputs and outputs action.yml has."""
    yaml = pytest.importorskip("yaml")
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    text = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", text, re.S)]
    (workflow,) = [b for b in blocks if isinstance(b, dict) and "jobs" in b]
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    (ours,) = [s for s in steps if str(s.get("uses", "")).startswith("trainproof/trainproof@")]
    assert set(ours.get("with", {})) <= set(action["inputs"])
    used = set(re.findall(r"steps\.%s\.outputs\.([\w-]+)" % re.escape(ours["id"]), text))
    assert used and used <= set(action["outputs"])
    for step in steps:  # no expression inside a script: outputs go through env
        assert "${{" not in step.get("run", ""), step
