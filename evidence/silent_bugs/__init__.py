"""The silent-bug gallery: small real PyTorch programs, each with one classic training bug
(or none), trained through :func:`trainproof.monitor` (``evidence/silent_bugs.py`` runs
them all and writes ``evidence/silent-bugs.md``).

Each program is a module with:

* ``BUG``: a one-line description of its bug, or ``None`` for a healthy program;
* ``CATCH``: for a buggy program, what should flag it, decided from the bug's mechanism
  before looking at the result: ``{"by": "model" | "loss", "rules": (ids...), "level":
  "WARN" | "FAIL"}`` (``by`` names the rules that can see it: the model-level rules of
  group ``model`` or the loss-curve rules; any of ``rules`` at ``level`` or worse counts),
  or ``None`` with ``MISS`` saying why nothing can flag it;
* ``run(**monitor_kwargs) -> (Report, meta)``: trains a few hundred CPU steps through
  ``trainproof.monitor(..., policy="silent")`` and returns the monitor's final report and
  a dict with at least ``steps`` and the logged ``records`` (see :mod:`._common`).
"""

from __future__ import annotations

import importlib
import pkgutil


def names() -> list[str]:
    """Every program's module name: the buggy ones (``bug_*``) then the healthy ones
    (``ok_*``), each sorted."""
    found = [m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")]
    return sorted(n for n in found if n.startswith("bug_")) + sorted(n for n in found if n.startswith("ok_"))


def load(name: str):
    """The program module ``name``."""
    return importlib.import_module(f"{__name__}.{name}")
