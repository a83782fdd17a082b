"""RULES.md is the registry, both ways; README gives the commands CI runs."""
from __future__ import annotations

import re

from trainproof.rules.docs import rules_markdown
from trainproof.rules.registry import DOC_SECTIONS, all_rules
from trainproof.rules.thresholds import names as threshold_names

from conftest import REPO


def test_rules_md_is_generated_from_the_registry():
    assert (REPO / "RULES.md").read_text(encoding="utf-8") == rules_markdown(), (
        "RULES.md is stale: run `trainproof rules --markdown > RULES.md`")


def test_every_documented_id_exists_and_every_rule_is_documented():
    text = (REPO / "RULES.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^### (TP-[A-Z0-9-]+) ", text, flags=re.M))
    registered = {r.id for r in all_rules()}
    assert documented == registered
    for name in threshold_names():
        assert f"`{name}`" in text


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


def test_registry_order_does_not_depend_on_import_order():
    """The registry (and so RULES.md and `trainproof rules`) lists preflight ids, then the
    rule modules, whatever module a process happened to import first."""
    import re
    import subprocess
    import sys

    script = ("import importlib, sys\n"
              "for m in sys.argv[1:]: importlib.import_module(m)\n"
              "from trainproof.rules.registry import all_rules\n"
              "print(' '.join(r.id for r in all_rules()))\n")
    expected = re.findall(r"^\| \[(TP-[A-Z0-9-]+)\]", (REPO / "RULES.md").read_text(), re.M)
    for first in ([], ["trainproof.preflight.speech"], ["trainproof.rules.compare", "trainproof.preflight.env"]):
        out = subprocess.run([sys.executable, "-c", script, *first], capture_output=True, text=True, check=True)
        assert out.stdout.split() == expected, first


def test_every_threshold_declares_its_reason_as_data():
    """Each Thresholds field carries why= (its own reason) or see= (an earlier field whose
    reason covers it); RULES.md's table prints that text, not parsed source comments."""
    import dataclasses

    from trainproof.rules import thresholds as th

    seen: list[str] = []
    for f in dataclasses.fields(th.Thresholds):
        meta = dict(f.metadata)
        assert set(meta) in ({"why"}, {"see"}), f.name
        if "see" in meta:
            assert meta["see"] in seen and "why" in th.Thresholds.__dataclass_fields__[meta["see"]].metadata, f.name
        assert len(th.reason(f.name)) > 20, f.name
        seen.append(f.name)
    assert th.shown(1e-6) == "1e-6" and th.shown(0.1) == "0.1" and th.shown(8) == "8"
