"""Rules: the registry, the thresholds, the engine, and one module per group of rules.

Importing :func:`load_all` registers every rule; the registry order (the preflight modules,
then the rule modules below, each in declaration order, whatever order they were imported
in) is the order checks run and findings and ``trainproof rules`` are listed.
"""
from __future__ import annotations

_MODULES = ("loss", "grad", "lr", "evals", "perf", "updates", "signatures", "rl", "intent", "reading", "compare", "outcomes")
#: The preflight checks' id declarations (:mod:`trainproof.rules.preflight_ids`), so RULES.md
#: and `trainproof rules` document every id trainproof can emit without importing a check.
_PREFLIGHT = ("dataset", "env", "objective", "speech")
_loaded = False


def load_all() -> None:
    """Import every rule module once, registering its rules."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib

    from .registry import canonical_order

    modules = [f"{__name__}.preflight_ids.{m}" for m in _PREFLIGHT] + [f"{__name__}.{m}" for m in _MODULES]
    for m in modules:
        importlib.import_module(m)
    canonical_order(modules)
