"""The dataset and speech preflight packages: every module is a pure check module (importing
it loads neither click nor the CLI), the names callers import are still the package's, and
every id their modules name is declared."""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import first_cases_fast

PACKAGES = ("trainproof.preflight.dataset", "trainproof.preflight.speech")

#: What the commands, the tests and the docs import from each package.
ENTRY_POINTS = {
    "trainproof.preflight.dataset": (
        "check_dataset",
        "open_dataset",
        "load_tokenizer",
        "DatasetError",
        "TokenizerError",
        "Special",
        "Tok",
        "SHAPES",
        "ALL_IDS",
    ),
    "trainproof.preflight.speech": (
        "check_data",
        "check_tokenizer",
        "load_corpus",
        "analyse_audio",
        "number_splits",
        "script_of",
        "scripts_in",
        "spoken_chars",
        "ExtraMissing",
        "InputError",
        "Item",
        "Corpus",
        "Audio",
        "DATA_IDS",
        "TOK_IDS",
        "BLOCK_S",
        "_clip_runs",
        "import_soundfile",
        "import_sentencepiece",
    ),
}


def _modules() -> list[str]:
    """Every module of the packages, found by listing them (a new module is covered)."""
    out = []
    for name in PACKAGES:
        pkg = importlib.import_module(name)
        out.append(name)
        out += [m.name for m in pkgutil.walk_packages(pkg.__path__, name + ".")]
    return out


MODULES = _modules()


def test_the_packages_are_split():
    for name in PACKAGES:
        assert sum(m.startswith(name + ".") for m in MODULES) >= 4, name


@pytest.mark.parametrize("module", first_cases_fast(MODULES, 3))
def test_importing_a_module_loads_no_click_and_no_cli(module):
    script = (
        "import importlib, sys\n"
        f"importlib.import_module({module!r})\n"
        "print(sorted(m for m in ('click', 'trainproof.cli') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", module


@pytest.mark.parametrize("module", MODULES)
def test_a_check_module_does_not_print_exit_or_use_click(module):
    """Checks return findings; printing and the exit code are the commands'."""
    tree = ast.parse(Path(importlib.import_module(module).__file__).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in ("print", "exit", "quit"), (module, node.lineno)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            assert (node.value.id, node.attr) != ("sys", "exit"), (module, node.lineno)
        if isinstance(node, ast.Import):
            assert not any(a.name.split(".")[0] == "click" for a in node.names), (module, node.lineno)
        if isinstance(node, ast.ImportFrom):
            assert (node.module or "").split(".")[0] != "click", (module, node.lineno)
            assert "cli" not in (node.module or "").split("."), (module, node.lineno)


@pytest.mark.slow
@pytest.mark.parametrize("package", PACKAGES)
def test_the_entry_points_are_the_packages(package):
    pkg = importlib.import_module(package)
    missing = [n for n in ENTRY_POINTS[package] if not hasattr(pkg, n)]
    assert missing == []
    assert [n for n in pkg.__all__ if not hasattr(pkg, n)] == []
    script = f"from {package} import " + ", ".join(ENTRY_POINTS[package])
    subprocess.run([sys.executable, "-c", script], check=True)


@pytest.mark.parametrize("module", MODULES)
def test_every_id_a_module_names_is_declared(module):
    from trainproof.rules.registry import get

    text = Path(importlib.import_module(module).__file__).read_text(encoding="utf-8")
    names = set(re.findall(r'"(TP-[A-Z0-9-]+)"', text))
    assert sorted(n for n in names if get(n) is None) == []


@pytest.mark.slow
@pytest.mark.parametrize(
    "package",
    [
        "trainproof.preflight.dataset",
        "trainproof.preflight.env",
        "trainproof.preflight.speech",
        "trainproof.preflight.targets",
    ],
)
def test_a_family_package_loads_its_checks_on_first_use(package):
    """Importing a family package (as the registry does, to reach its ids) loads no check;
    a public name loads its module, a submodule's name the submodule, and any other name
    is an AttributeError."""
    script = f"""
import importlib, json, sys
pkg = importlib.import_module({package!r})
before = sorted(m for m in sys.modules if m.startswith({package!r} + "."))
name = pkg.__all__[0]
getattr(pkg, name)
loaded = sys.modules[{package!r} + "." + pkg._WHERE[name]] is not None
sub = sorted(set(pkg._WHERE.values()))[0]
is_module = getattr(pkg, sub) is sys.modules[{package!r} + "." + sub]
try:
    pkg.no_such_name
    missing = "no error"
except AttributeError:
    missing = "AttributeError"
print(json.dumps([before, loaded, is_module, missing, sorted(pkg.__all__) == sorted(pkg._WHERE)]))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    before, loaded, is_module, missing, complete = json.loads(out.stdout.strip().splitlines()[-1])
    assert before == [] and loaded and is_module and complete
    assert missing == "AttributeError"
