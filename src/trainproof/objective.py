"""Objective checks at step 0, importable as ``trainproof.objective``.

A re-export of :mod:`trainproof.preflight.targets` (the ``trainproof targets``
command): :func:`check_ignore_index`, :class:`TargetCoverage`, :func:`check_label_shift`,
:func:`measure_label_shift`, :func:`check_objective`, :func:`objective_report` and
:func:`load_arrays`. torch is never imported here; tensors are accepted as they come.

    >>> from trainproof.objective import TargetCoverage, check_label_shift
    >>> cov = TargetCoverage(num_classes=10, ignore_index=-100)
    >>> for batch in loader:                      # doctest: +SKIP
    ...     cov.update(batch["labels"])
    >>> [f.id for f in cov.findings()]            # doctest: +SKIP
"""

from __future__ import annotations

from .preflight.targets import (
    TargetCoverage,
    TargetFileError,
    check_ignore_index,
    check_label_shift,
    check_objective,
    load_arrays,
    measure_label_shift,
    objective_report,
)

__all__ = [
    "TargetCoverage",
    "TargetFileError",
    "check_ignore_index",
    "check_label_shift",
    "check_objective",
    "load_arrays",
    "measure_label_shift",
    "objective_report",
]
