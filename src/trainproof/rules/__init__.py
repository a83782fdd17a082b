"""Rules: the registry, the thresholds, the engine, and one module per group of rules.

:func:`load_all` (the registry's catalogue, :data:`~trainproof.rules.registry.RULE_MODULES`)
registers every rule; the registry order (the preflight id declarations, then the rule
modules, each in declaration order, whatever order they were imported in) is the order
checks run and findings and ``trainproof rules`` are listed.
"""

from __future__ import annotations

from .registry import load_all

__all__ = ["load_all"]
