"""The documentation of the preflight ids of the families whose declarations are not yet
beside their checks, one module per preflight check (the objective, dataset and env families'
are in their packages' ``ids`` modules, such as :mod:`trainproof.preflight.targets.ids`; see :func:`trainproof.rules.registry.preflight_id_modules`).

Declarations only, no check code: the registry loads them (through
:func:`trainproof.rules.registry.load_all`) without importing the checks, their file parsers or
click, so ``trainproof rules`` and RULES.md document every id while judging a run loads
none of the preflight family. The checks in :mod:`trainproof.preflight` emit these ids by
name (:func:`trainproof.preflight.finding`).
"""
