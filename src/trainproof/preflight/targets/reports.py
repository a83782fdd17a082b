"""The reports of ``trainproof targets``: the checks of :mod:`.checks` on one batch, on a
coverage accumulated over batches, or on a targets file, run by
:func:`trainproof.preflight.run` (kind ``objective``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...config import Config
from ...findings import Finding, Report, Skip
from ...rules.thresholds import DEFAULT, Thresholds
from .. import Check, Outcome, run
from .checks import (
    _DEAD_CHECK,
    _IGNORE_CHECK,
    _RANGE_CHECK,
    _SHIFT_CHECK,
    TargetCoverage,
    check_ignore_index,
    check_label_shift,
)
from .files import TargetFileError, _pick, load_arrays

#: The ids each check may report (declared in :mod:`.ids`).
_IGNORE_IDS = ("TP-OBJ-IGNORE-INDEX-COLLISION", "TP-OBJ-IGNORE-INDEX-OK")
_COVERAGE_IDS = (
    "TP-OBJ-TARGET-OUT-OF-RANGE",
    "TP-OBJ-TARGET-RANGE-OK",
    "TP-OBJ-DEAD-CLASS",
    "TP-OBJ-COVERAGE-INSUFFICIENT",
    "TP-OBJ-DEAD-CLASS-OK",
)
_SHIFT_IDS = (
    "TP-OBJ-LABEL-SHIFT-DOUBLE",
    "TP-OBJ-LABEL-SHIFT-OK",
    "TP-OBJ-LABEL-SHIFT-OBSERVED",
    "TP-OBJ-LABEL-SHIFT-NOT-MEASURED",
)


def build(
    findings: list[Finding],
    cov: TargetCoverage | None,
    shift: list[Finding] | None,
    file: str,
    meta: dict,
    mute=(),
    shift_skip: Skip | None = None,
    notes: list[str] | None = None,
    error: str | None = None,
    th: Thresholds | None = None,
) -> Report:
    """The ``objective`` Report of checks already computed: ``findings`` of
    :func:`check_ignore_index`, the coverage ``cov`` (``None`` or no batch: skipped, no
    targets), the label-shift findings ``shift`` (``None``: skipped, ``shift_skip`` or no
    input_ids and labels). ``error``: why the targets could not be read (NOT-CHECKED).
    ``records``: the targets counted. ``mute``: ids reported as skipped, reason ``muted``."""

    def read(_th: Thresholds) -> Outcome:
        return Outcome(error=error)

    def ignore_index(_th: Thresholds) -> Outcome:
        return Outcome(findings=list(findings), ran=[_IGNORE_CHECK])

    def coverage(_th: Thresholds) -> Outcome:
        if cov is not None and cov.batches:
            return Outcome(findings=cov.findings(), ran=[_RANGE_CHECK, _DEAD_CHECK], items=cov.total)
        no_targets = Skip("absent", "no targets")
        return Outcome(
            ran=[], skipped={_RANGE_CHECK: no_targets, _DEAD_CHECK: no_targets}, items=cov.total if cov else 0
        )

    def label_shift(_th: Thresholds) -> Outcome:
        if shift is not None:
            return Outcome(findings=list(shift), ran=[_SHIFT_CHECK])
        return Outcome(ran=[], skipped={_SHIFT_CHECK: shift_skip or Skip("absent", "no input_ids and labels")})

    checks = [
        # Reading the targets is no id of its own: it always runs, and its error makes the
        # report NOT-CHECKED whatever is muted.
        Check((), read, "targets"),
        Check(_IGNORE_IDS, ignore_index, "ignore_index"),
        Check(_COVERAGE_IDS, coverage, "target coverage"),
        Check(_SHIFT_IDS, label_shift, "label shift"),
    ]
    config = Config(mute=set(mute), thresholds=th or DEFAULT)
    return run(checks, config, file=file, kind="objective", meta=meta, notes=notes or ())


def check_objective(
    num_classes: int,
    ignore_index: int = -100,
    targets: Any = None,
    input_ids: Any = None,
    labels: Any = None,
    loss_shifts_labels: bool | None = None,
    *,
    file: str = "objective",
    th: Thresholds | None = None,
    max_positions: int | None = 1024,
    mute=(),
) -> Report:
    """Every objective check on one batch, as a Report (kind ``objective``).

    Args:
        num_classes: number of classes the model predicts (>= 1).
        ignore_index: target value the loss skips.
        targets: class ids of any shape, or ``None`` to skip the target checks; for several
            batches use :class:`TargetCoverage` and :meth:`TargetCoverage.report`.
        input_ids, labels: ``[batch, seq]`` causal-LM batch for :func:`check_label_shift`
            (both or neither).
        loss_shifts_labels: see :func:`check_label_shift`.
        file: the Report's ``file`` (a name for what was checked).
        th: thresholds; default :class:`~trainproof.rules.thresholds.Thresholds`.
        max_positions: see :func:`measure_label_shift`.
        mute: ids to drop (their checks are reported as skipped ``muted``).

    Raises:
        TypeError, ValueError: as the individual checks; ValueError also when only one of
        ``input_ids`` and ``labels`` is given.
    """
    found = check_ignore_index(num_classes, ignore_index)
    cov = None
    if targets is not None:
        cov = TargetCoverage(num_classes, ignore_index, th)
        cov.update(targets)
    if (input_ids is None) != (labels is None):
        raise ValueError("give both input_ids and labels, or neither")
    shift = None
    if input_ids is not None:
        shift = check_label_shift(input_ids, labels, loss_shifts_labels, ignore_index, max_positions)
    meta = {"num_classes": num_classes, "ignore_index": ignore_index, "loss_shifts_labels": loss_shifts_labels}
    return build(found, cov, shift, file, meta, mute, th=th)


def ignore_index_report(num_classes: int, ignore_index: int = -100, mute=()) -> Report:
    """The report of the one check that needs no targets: is ``ignore_index`` a real class
    of ``num_classes``? (``trainproof targets`` without ``--targets``.)"""
    return build(
        check_ignore_index(num_classes, ignore_index),
        None,
        None,
        "objective",
        {"num_classes": num_classes, "ignore_index": ignore_index},
        mute,
    )


def objective_report(
    path: str | Path,
    num_classes: int,
    ignore_index: int = -100,
    key: str | None = None,
    loss_shifts_labels: bool | None = None,
    th: Thresholds | None = None,
    max_positions: int | None = 1024,
    mute=(),
) -> Report:
    """The checks of ``trainproof targets`` on a targets file.

    The targets are the array named ``key``, else the file's only array, else one named
    ``labels`` or ``targets``. When the file also holds an ``input_ids`` array of the same
    shape, the label alignment is checked too (:func:`check_label_shift`).

    Returns:
        A Report (kind ``objective``, ``records`` = number of targets). A file that cannot be
        read gives a Report with ``error`` set (NOT-CHECKED) holding only the
        ignore_index finding.

    Raises:
        TypeError, ValueError: bad ``num_classes`` / ``ignore_index``.
    """
    p = Path(path)
    meta: dict = {"num_classes": num_classes, "ignore_index": ignore_index, "loss_shifts_labels": loss_shifts_labels}
    found = check_ignore_index(num_classes, ignore_index)
    try:
        arrays = load_arrays(p)
        k = _pick(arrays, key, p)
        cov = TargetCoverage(num_classes, ignore_index, th)
        cov.update(arrays[k])
    except (TargetFileError, TypeError, ValueError) as e:
        msg = str(e) if str(e).startswith(str(p)) else f"{p}: {e}"
        return build(found, None, None, str(path), meta, mute, error=msg, th=th)
    meta.update(key=k, arrays={n: list(a.shape) for n, a in sorted(arrays.items())})
    shift_skip: Skip | None = None
    notes: list[str] = []
    shift = None
    ids = arrays.get("input_ids")
    if ids is None or k == "input_ids":
        shift_skip = Skip("absent", "no input_ids array next to the labels")
    elif ids.shape != arrays[k].shape:
        shift_skip = Skip("degenerate", f"input_ids {list(ids.shape)} and {k} {list(arrays[k].shape)} differ in shape")
    elif arrays[k].ndim not in (1, 2):
        shift_skip = Skip("degenerate", f"{k} has {arrays[k].ndim} dimensions, not [batch, seq]")
    else:
        try:
            shift = check_label_shift(ids, arrays[k], loss_shifts_labels, ignore_index, max_positions)
        except (TypeError, ValueError) as e:
            shift_skip = Skip("degenerate", str(e))
    if loss_shifts_labels is not None and shift is None:
        notes.append(
            "--loss-shifts-labels/--loss-does-not-shift-labels was given but the label alignment was not "
            f"checked: {shift_skip.detail}"
        )
    return build(found, cov, shift, str(path), meta, mute, shift_skip, notes, th=th)
