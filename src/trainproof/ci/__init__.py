"""Adoption in CI: the script behind the GitHub Action (``action.yml`` at the repository root).

:mod:`trainproof.ci.github_action` is run as ``python -m trainproof.ci.github_action`` by the
action; it only calls ``trainproof doctor`` and reads its ``--json`` document, so it knows
no rule, reader or renderer.
"""
