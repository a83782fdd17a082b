"""The documentation of every preflight id, one module per preflight check.

Declarations only, no check code: the registry loads them (through
:func:`trainproof.rules.registry.load_all`) without importing the checks, their file parsers or
click, so ``trainproof rules`` and RULES.md document every id while judging a run loads
none of the preflight family. The checks in :mod:`trainproof.preflight` emit these ids by
name (:func:`trainproof.preflight.finding`).
"""
