"""Rules: the registry, the thresholds, the engine, and one module per group of rules.

Importing :func:`load_all` registers every rule; the registry order (module order below,
then declaration order) is the order checks run and findings are listed.
"""
from __future__ import annotations

_MODULES = ("loss", "grad", "lr", "evals", "perf", "updates", "signatures", "rl", "intent", "reading", "compare", "outcomes")
#: Preflight check modules: they declare their ids here too, so RULES.md and
#: `trainproof rules` document every id trainproof can emit.
_PREFLIGHT = ("dataset", "env", "objective", "speech")
_loaded = False


def load_all() -> None:
    """Import every rule module once, registering its rules."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib

    for m in _MODULES:
        importlib.import_module(f"{__name__}.{m}")
    for m in _PREFLIGHT:
        importlib.import_module(f"trainproof.preflight.{m}")
