"""The alias package's modules (trainproof.aliases): one responsibility each, importing one
way, and every public name still importable from ``trainproof.aliases``."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from trainproof import aliases

#: Each module's public names, as the package's docstring assigns them.
HOMES = {
    "runs": {"run_of", "runs_in"},
    "table": {
        "ALIASES",
        "CANONICAL",
        "STEP_KEYS",
        "PREFIXED",
        "TRAIN_PREFIX",
        "GROUP_SUFFIX",
        "is_step_key",
        "step_key",
    },
    "vocabulary": {"VOCABULARY", "key_words", "console_words", "words"},
    "loss_fallback": {
        "LOSS_WORDS",
        "NOT_LOSS_WORDS",
        "EVAL_WORDS",
        "TRAIN_WORDS",
        "TOTAL_WORDS",
        "LOSS_KIND_WORDS",
        "SEPARATE_NETWORK_WORDS",
        "MAX_SUM_PARTS",
        "loss_candidate",
        "auxiliary_terms",
    },
    "mapping": {"MappingError", "parse_map_option", "resolve"},
}

#: What each module may import of trainproof: the modules before it, nothing outside.
DEPENDS_ON = {
    "runs": set(),
    "table": {"runs"},
    "vocabulary": {"runs"},
    "loss_fallback": {"runs", "vocabulary"},
    "mapping": {"table", "loss_fallback"},
}


def test_every_public_name_is_the_same_object_in_the_package_and_in_its_home() -> None:
    for module, names in HOMES.items():
        home = importlib.import_module(f"trainproof.aliases.{module}")
        for name in names:
            assert getattr(aliases, name) is getattr(home, name), (module, name)
    assert set(aliases.__all__) == set().union(*HOMES.values())


def _trainproof_imports(path: Path) -> set[str]:
    """The trainproof modules a file of the package imports (``.table`` -> ``table``;
    anything of trainproof outside the package by its dotted name), read from its source."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                found |= {node.module} if node.module else {a.name for a in node.names}
            elif node.level > 1 or (node.module or "").startswith("trainproof"):
                found.add("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("trainproof")}
    return found


def test_the_modules_import_one_way_and_nothing_outside_the_package() -> None:
    folder = Path(aliases.__file__).parent
    assert {p.stem for p in folder.glob("*.py")} == {"__init__", *DEPENDS_ON}
    for module, allowed in DEPENDS_ON.items():
        assert _trainproof_imports(folder / f"{module}.py") == allowed, module
    assert _trainproof_imports(folder / "__init__.py") == set(HOMES)
