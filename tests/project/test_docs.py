"""RULES.md and docs/rules/ are the registry, both ways; README gives the commands CI runs."""

from __future__ import annotations

import re

import pytest

from trainproof.rules.docs import FAMILIES, families, pages, rule_page, rules_markdown, write_pages
from trainproof.rules.registry import DOC_SECTIONS, all_rules, example_of
from trainproof.rules.thresholds import names as threshold_names

from conftest import REPO


def test_rules_md_is_generated_from_the_registry():
    assert (REPO / "RULES.md").read_text(encoding="utf-8") == rules_markdown(), (
        "RULES.md is stale: run `trainproof rules --markdown > RULES.md`"
    )


def test_every_documented_id_exists_and_every_rule_is_documented():
    text = (REPO / "RULES.md").read_text(encoding="utf-8")
    documented = re.findall(r"^\| \[(TP-[A-Z0-9-]+)\]\(docs/rules/\1\.md\)", text, flags=re.M)
    registered = {r.id for r in all_rules()}
    assert sorted(documented) == sorted(registered)
    for name in threshold_names():
        assert f"`{name}`" in text


@pytest.mark.slow
def test_the_rule_pages_are_generated_and_none_is_stale():
    folder = REPO / "docs" / "rules"
    want = pages()
    assert set(want) == {"index.md", "thresholds.md"} | {f"{r.id}.md" for r in all_rules()}
    on_disk = {p.name for p in folder.iterdir()}
    assert on_disk == set(want), (
        "stale or missing pages: run `python -m trainproof.rules.docs docs/rules`",
        sorted(on_disk ^ set(want)),
    )
    for name, text in want.items():
        assert (folder / name).read_text(encoding="utf-8") == text, (
            f"docs/rules/{name} is stale: run `python -m trainproof.rules.docs docs/rules`"
        )


@pytest.mark.slow
def test_write_pages_removes_stale_pages(tmp_path):
    (tmp_path / "TP-GONE.md").write_text("old", encoding="utf-8")
    (tmp_path / "keep.txt").write_text("not a page", encoding="utf-8")
    assert write_pages(tmp_path) == ["TP-GONE.md"]
    assert (tmp_path / "keep.txt").exists() and (tmp_path / "index.md").exists()
    assert write_pages(tmp_path) == []


@pytest.mark.slow
def test_every_page_has_the_fixed_shape():
    """Sections in one order: detects, why, example, thresholds, causes, what to try, does
    NOT mean (example and thresholds where the id has them)."""
    order = [
        "What it detects",
        "Why it matters",
        "Example",
        "Thresholds in force",
        "Likely causes",
        "What to try",
        "What it does NOT mean",
    ]
    for r in all_rules():
        page = rule_page(r)
        assert page.startswith(f"# {r.id} — "), r.id
        got = re.findall(r"^## (.+)$", page, flags=re.M)
        want = [
            t for t in order if (t != "Example" or example_of(r.id)) and (t != "Thresholds in force" or r.thresholds)
        ]
        assert got == want, (r.id, got)
        if example_of(r.id):
            ex = page.split("## Example", 1)[1].split("\n## ", 1)[0]
            assert f"```text\n{r.level.value} " in ex and r.id in ex.split("```text", 1)[1], r.id
        for name in r.thresholds:
            assert f"- `{name}` = " in page, (r.id, name)


def test_the_index_groups_every_id_by_family_and_links_its_page():
    index = (REPO / "docs" / "rules" / "index.md").read_text(encoding="utf-8")
    linked = re.findall(r"^\| \[(TP-[A-Z0-9-]+)\]\(\1\.md\)", index, flags=re.M)
    assert sorted(linked) == sorted(r.id for r in all_rules())
    titles = re.findall(r"^## (.+)$", index, flags=re.M)
    assert titles == [t for _, t, _ in families()]
    assert {r.group for r in all_rules()} <= set(FAMILIES), "give a new group a family title in docs.FAMILIES"


def test_every_rule_has_every_doc_section_and_a_hint():
    for r in all_rules():
        for attr, _ in DOC_SECTIONS:
            assert len(getattr(r, attr).strip()) > 10, (r.id, attr)
        assert r.hint.startswith("Likely:")


def test_readme_states_install_run_and_test_commands():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert re.search(r'pip install (-c \.ci/constraints\.txt )?-e "\.\[dev\]"', readme)
    assert "trainproof doctor examples" in readme
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    test_cmd = re.search(r"^TEST_COMMAND='(.+)'$", ci, flags=re.M).group(1)
    assert test_cmd in readme, "README must give exactly the test command .ci/run runs"


def test_contracts_and_changelog_exist():
    contracts = (REPO / "CONTRACTS.md").read_text(encoding="utf-8")
    for word in ("Exit codes", "schema_version", "stable"):
        assert word in contracts
    assert (REPO / "CHANGELOG.md").read_text(encoding="utf-8").startswith("# Changelog")


@pytest.mark.slow
def test_registry_order_does_not_depend_on_import_order():
    """The registry (and so RULES.md and `trainproof rules`) lists preflight ids, then the
    rule modules, whatever module a process happened to import first."""
    import subprocess
    import sys

    script = (
        "import importlib, sys\n"
        "for m in sys.argv[1:]: importlib.import_module(m)\n"
        "from trainproof.rules.registry import all_rules\n"
        "print(' '.join(r.id for r in all_rules()))\n"
    )
    expected = [r.id for r in all_rules()]  # the canonical order (load_all sorts by RULE_MODULES)
    for first in ([], ["trainproof.preflight.speech"], ["trainproof.rules.compare", "trainproof.preflight.env"]):
        out = subprocess.run([sys.executable, "-c", script, *first], capture_output=True, text=True, check=True)
        assert out.stdout.split() == expected, first


def test_every_threshold_declares_its_reason_as_data():
    """Each Thresholds field carries why= (its own reason) or see= (an earlier field whose
    reason covers it), its unit and its range; RULES.md's table prints that text, not parsed
    source comments."""
    import dataclasses

    from trainproof.rules import thresholds as th

    seen: list[str] = []
    for f in dataclasses.fields(th.Thresholds):
        meta = dict(f.metadata)
        assert set(meta) in ({"why", "unit", "valid"}, {"see", "unit", "valid"}), f.name
        assert isinstance(meta["valid"], th.Range) and meta["unit"] in th.UNITS, f.name
        if "see" in meta:
            assert meta["see"] in seen and "why" in th.Thresholds.__dataclass_fields__[meta["see"]].metadata, f.name
        assert len(th.reason(f.name)) > 20, f.name
        seen.append(f.name)
    assert th.shown(1e-6) == "1e-6" and th.shown(0.1) == "0.1" and th.shown(8) == "8"
