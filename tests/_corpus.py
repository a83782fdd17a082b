"""The shared scorecard over ``../shared/corpus``, run once per test session: every file
judged by ``trainproof epoch FILE --json`` in this process (``evidence/accuracy.py``'s
:class:`InProcess`), for the accuracy page's test and the corpus tests alike."""

from __future__ import annotations

import functools
import importlib.util
from types import ModuleType

from conftest import REPO


@functools.cache
def accuracy() -> ModuleType:
    """``evidence/accuracy.py`` as a module (the evidence scripts are no package)."""
    spec = importlib.util.spec_from_file_location("evidence_accuracy", REPO / "evidence" / "accuracy.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@functools.cache
def scorecard() -> tuple[list[dict], str, dict[str, str]]:
    """``(results, SUMMARY line, file -> its --json output)``: the scorecard's per-file
    results (``id``, ``format``, ``label``, ``verdict``, ``outcome``, ...) and summary, as
    ``evidence/accuracy.py`` renders them."""
    a = accuracy()
    runner = a.InProcess()
    results, summary = a.run_scorecard(runner)
    return results, summary, runner.outputs
