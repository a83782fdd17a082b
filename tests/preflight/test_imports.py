"""Every preflight check module imports without click or the CLI: checks are pure, the
commands that wrap them live in trainproof.cli. Modules are found by walking the package,
so a new one is covered without naming it here."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import trainproof.preflight as preflight

MODULES = sorted(
    {"trainproof.preflight"} | {m.name for m in pkgutil.walk_packages(preflight.__path__, "trainproof.preflight.")}
)


def test_the_walk_finds_the_check_packages():
    for name in (
        "trainproof.preflight.env.probe",
        "trainproof.preflight.env.checkpoints",
        "trainproof.preflight.targets.files",
    ):
        assert name in MODULES


@pytest.mark.slow
@pytest.mark.parametrize("module", MODULES)
def test_importing_a_preflight_module_loads_no_click(module):
    code = (
        f"import importlib, sys; importlib.import_module({module!r}); "
        "bad = sorted(m for m in sys.modules if m == 'click' or m.startswith('click.') "
        "or m == 'trainproof.cli' or m.startswith('trainproof.cli.')); print(bad)"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]", f"{module} imports {p.stdout.strip()}"
