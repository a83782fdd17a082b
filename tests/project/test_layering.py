"""Layering facts of the package, each checked in a fresh interpreter: what judging a run
loads, and what the rule registry needs to document every id."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import textwrap

import pytest
from _import_graph import _import_graph, _reaches  # noqa: F401

_FORBIDDEN = ("click", "trainproof.cli", "trainproof.preflight")


def _declarations_only(m: str, mod) -> bool:
    """The preflight modules the registry loads to document the preflight ids, none of them
    a check: the package, a family's package (its ``__init__`` imports no check) and the
    family's ``ids`` module (its declarations, beside its checks)."""
    parts = m.split(".")
    return m == "trainproof.preflight" or (
        parts[:2] == ["trainproof", "preflight"]
        and ((len(parts) == 3 and hasattr(mod, "__path__")) or (len(parts) == 4 and parts[3] == "ids"))
    )


def _fresh(code: str) -> dict:
    """Run ``code`` in a new interpreter; it prints one JSON object as its last line."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _then_loaded(code: str) -> str:
    """``code`` (which sets ``result``) followed by a report of the outer-ring modules loaded."""
    return (
        textwrap.dedent(code)
        + inspect.getsource(_declarations_only)
        + textwrap.dedent(f"""
        import json, sys
        forbidden = {_FORBIDDEN!r}
        bad = sorted(
            m for m, mod in list(sys.modules.items())
            if any(m == f or m.startswith(f + ".") for f in forbidden) and not _declarations_only(m, mod)
        )
        print(json.dumps({{"bad": bad, "result": result}}))
    """)
    )


@pytest.mark.slow
def test_judging_a_runlog_loads_no_click_no_cli_no_preflight(tmp_path):
    log = tmp_path / "train.jsonl"
    log.write_text(
        "".join(json.dumps({"step": i, "loss": float("nan") if i == 40 else 2.0 / (i + 1)}) + "\n" for i in range(60))
    )
    got = _fresh(
        _then_loaded(f"""
        from trainproof.api import judge
        result = judge({str(log)!r}).verdict
    """)
    )
    assert got["result"] == "FAIL"  # the rules ran (TP-NAN), and still nothing of the outer ring loaded
    assert got["bad"] == []


@pytest.mark.slow
def test_judging_in_the_training_loop_loads_no_click_no_cli_no_preflight():
    got = _fresh(
        _then_loaded("""
        import torch
        import trainproof
        torch.manual_seed(0)
        model = torch.nn.Linear(8, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        mon = trainproof.watch(model, opt, check_every=20, policy="raise")
        x = torch.randn(64, 8)
        y = x @ torch.randn(8, 1)
        for step in range(60):
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            mon.log(step, loss.item())
            opt.step()
        rep = mon.report(print_it=False)
        result = {"ran": rep.ran, "fail": rep.verdict == "FAIL"}
    """)
    )
    assert "TP-NAN" in got["result"]["ran"] and not got["result"]["fail"]  # judged, and healthy
    assert got["bad"] == []


@pytest.mark.slow
def test_the_registry_documents_every_preflight_id_without_importing_a_check():
    got = _fresh(
        _then_loaded("""
        from trainproof.rules.registry import all_rules
        rules = all_rules()
        result = {"preflight": [r.id for r in rules if r.source == "preflight"],
                  "first": rules[0].id, "n": len(rules)}
    """)
    )
    assert got["bad"] == []
    pre = got["result"]["preflight"]
    assert len(pre) == len(set(pre)) >= 70
    assert "TP-PRE-MALFORMED-JSONL" in pre
    # The preflight ids come first in the listings, whatever was imported first.
    assert got["result"]["first"] == pre[0]


def test_every_id_a_preflight_check_emits_is_declared():
    """The checks emit ids by name; each name in their source must be declared."""
    import re
    from pathlib import Path

    import trainproof.preflight as pkg
    from trainproof.rules.registry import get

    names = set()
    for f in Path(pkg.__file__).parent.rglob("*.py"):
        names |= set(re.findall(r'"(TP-[A-Z0-9-]+)"', f.read_text(encoding="utf-8")))
    assert names, "no ids found in the preflight checks"
    missing = sorted(n for n in names if get(n) is None)
    assert missing == []


def test_a_preflight_familys_ids_are_declared_beside_the_checks_that_emit_them():
    """Every preflight id is declared in a family package's ``ids`` module, beside the
    checks that emit it: each family's ids module declares every id its checks name, and
    the registry lists it."""
    import re
    from pathlib import Path

    import trainproof.preflight as pkg
    from trainproof.rules.registry import MODULE_OF, all_rules, preflight_id_modules

    families = sorted(p.parent for p in Path(pkg.__file__).parent.glob("*/ids.py"))
    assert {f.name for f in families} >= {"dataset", "env", "speech", "targets"}
    assert {MODULE_OF[r.id] for r in all_rules() if r.source == "preflight"} == {
        f"trainproof.preflight.{f.name}.ids" for f in families
    }
    for fam in families:
        module = f"trainproof.preflight.{fam.name}.ids"
        assert module in preflight_id_modules()
        declared = {r.id for r in all_rules() if MODULE_OF[r.id] == module}
        emitted = set()
        for f in fam.rglob("*.py"):
            if f.name != "ids.py":
                emitted |= set(re.findall(r'"(TP-[A-Z0-9-]+)"', f.read_text(encoding="utf-8")))
        assert emitted and emitted <= declared, (fam.name, sorted(emitted - declared))


@pytest.mark.slow
def test_the_cluster_engines_do_not_import_the_api():
    """engines schedules a judgement it is given; api -> engines is the only direction."""
    graph = _import_graph()
    assert "trainproof.engines" in graph["trainproof.api"]
    assert graph["trainproof.engines"] == set()


@pytest.mark.slow
def test_the_svg_chart_module_needs_no_report_layout():
    """render/svgchart draws a chart from series and markers: it reaches the data model
    (levels) and the shared markup helpers, never the HTML page's layout, the other
    renderers or a report's reading."""
    graph = _import_graph()
    assert _reaches(graph, "trainproof.render.svgchart") <= {"trainproof.findings", "trainproof.render._markup"}
    assert "trainproof.render.svgchart" in graph["trainproof.render.html"]


@pytest.mark.slow
def test_the_rule_registry_is_a_leaf():
    """The registry imports only the data model and the thresholds (rule modules register
    into it, it never imports them by statement), so no import cycle runs through it."""
    graph = _import_graph()
    assert _reaches(graph, "trainproof.rules.registry") <= {"trainproof.findings", "trainproof.rules.thresholds"}
    assert "trainproof.rules.registry" not in _reaches(graph, "trainproof.rules.registry")


@pytest.mark.slow
def test_no_import_cycle_crosses_a_package():
    """Cycles left, if any, are a package's ``__init__`` and its own modules (``formats`` has
    none: tests/formats/test_base.py); none runs between the layers (api, engines, rules,
    preflight, cli)."""
    graph = _import_graph()
    for m in graph:
        for other in _reaches(graph, m):
            if m in _reaches(graph, other):
                assert (
                    m.rpartition(".")[0] == other.rpartition(".")[0]
                    or m == other.rpartition(".")[0]
                    or other == m.rpartition(".")[0]
                ), (m, other)


def _source_files():
    from pathlib import Path

    import trainproof

    root = Path(trainproof.__file__).parent
    return root, sorted(root.rglob("*.py"))


@pytest.mark.slow
def test_only_main_exits_the_process():
    """Commands return their exit code and helpers raise; the process exits in one place,
    ``trainproof.cli.main`` (and the ``__main__`` blocks of modules run as scripts)."""
    import ast

    def script_block(node) -> bool:  # `if __name__ == "__main__":` — a module run as a script
        return (
            isinstance(node, ast.If)
            and isinstance(node.test, ast.Compare)
            and getattr(node.test.left, "id", None) == "__name__"
        )

    root, files = _source_files()
    allowed = {"cli/app.py"}
    found = []
    for f in files:
        tree = ast.parse(f.read_text(encoding="utf-8"))
        tree.body = [n for n in tree.body if not script_block(n)]
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "exit"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "sys"
            ):
                found.append(f"{f.relative_to(root).as_posix()}:{node.lineno}")
    assert [x for x in found if x.rsplit(":", 1)[0] not in allowed] == []
    assert any(x.startswith("cli/app.py") for x in found)  # main() itself, so the check sees calls


@pytest.mark.slow
def test_the_checks_import_no_click():
    """Rules, readers and the preflight checks are pure: click lives in trainproof.cli only."""
    import ast

    root, files = _source_files()
    importers = []
    for f in files:
        rel = f.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            if any(n == "click" or n.startswith("click.") for n in names):
                importers.append(rel)
    outside = sorted({r for r in importers if not r.startswith("cli/")})
    # The integrations and the in-loop presenter import click only inside functions that
    # print; the test is about module level below.
    assert not [r for r in outside if r.startswith(("preflight/", "rules/", "formats/"))], outside
