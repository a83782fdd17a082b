"""The objective checks of ``trainproof targets``, pure functions of shapes and integers:
an ``ignore_index`` that is a real class (:func:`check_ignore_index`), targets out of range
and classes never seen (:class:`TargetCoverage`), causal-LM labels shifted twice
(:func:`check_label_shift`).

Inputs may be torch tensors, numpy arrays or nested lists. torch is never imported by
this module: a tensor is recognised by its type's module, and only the small results
(per-class counts, a slice of each sequence) are moved off its device.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...findings import Finding, Report
from ...rules.thresholds import Thresholds
from .. import finding

#: The ids of the checks (for ``Report.ran`` / ``skipped``).
_IGNORE_CHECK = "TP-OBJ-IGNORE-INDEX-COLLISION"
_RANGE_CHECK = "TP-OBJ-TARGET-OUT-OF-RANGE"
_DEAD_CHECK = "TP-OBJ-DEAD-CLASS"
_SHIFT_CHECK = "TP-OBJ-LABEL-SHIFT-DOUBLE"

_I64_MAX = np.iinfo(np.int64).max


# --- inputs ------------------------------------------------------------------------------


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def _check_int(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {v!r}")
    return int(v)


def _as_numpy(x: Any, name: str, k: int | None = None) -> np.ndarray:
    """``x`` as an int64 numpy array; a torch tensor is sliced to ``[..., :k]`` on its device
    before it is copied to the CPU.

    Raises:
        TypeError: not numeric (strings, objects, complex).
        ValueError: a ragged nested list, or non-integral or non-finite float values.
    """
    if _is_torch(x):
        t = x.detach()
        if k is not None and t.dim() > 0:
            t = t[..., :k]
        t = t.cpu()
        if t.is_floating_point() and t.element_size() < 4:  # bfloat16 has no numpy dtype
            t = t.float()
        a = t.numpy()
    else:
        try:
            a = np.asarray(x)
        except ValueError as e:  # ragged nested lists
            raise ValueError(f"{name}: not a rectangular array ({e})") from None
        if k is not None and a.ndim > 0:
            a = a[..., :k]
    return _int64(a, name)


def _int64(a: np.ndarray, name: str) -> np.ndarray:
    kind = a.dtype.kind
    if kind in "iub":
        if kind == "u" and a.dtype.itemsize == 8 and a.size and int(a.max()) > _I64_MAX:
            a = np.minimum(a, _I64_MAX)
        return a.astype(np.int64, copy=False)
    if kind == "f":
        if a.size and not np.isfinite(a).all():
            raise ValueError(f"{name}: class ids must be finite, found NaN or infinity")
        if a.size and not (a == np.round(a)).all():
            raise ValueError(
                f"{name}: class ids must be whole numbers, found fractional values "
                "(soft or one-hot targets are not class ids)"
            )
        return np.clip(a, -(2.0**62), 2.0**62).astype(np.int64)
    raise TypeError(f"{name}: expected integer class ids, got dtype {a.dtype}")


def _n(k: int) -> str:
    return f"{int(k):,}"


def _ids(values, limit: int = 10) -> str:
    vals = [int(v) for v in values]
    text = ", ".join(str(v) for v in vals[:limit])
    return text + (f", … ({len(vals) - limit} more)" if len(vals) > limit else "")


# --- ignore_index -----------------------------------------------------------------------


def check_ignore_index(num_classes: int, ignore_index: int = -100) -> list[Finding]:
    """Whether the loss's ``ignore_index`` collides with a real class.

    Args:
        num_classes: number of classes the model predicts (the size of its output layer;
            for a language model, the vocabulary size of the LM head), >= 1.
        ignore_index: the target value the loss skips (PyTorch and Hugging Face: -100).

    Returns:
        ``[TP-OBJ-IGNORE-INDEX-COLLISION]`` (FAIL) when ``0 <= ignore_index < num_classes``;
        ``[TP-OBJ-IGNORE-INDEX-OK]`` (INFO) when ``ignore_index == num_classes``; ``[]``
        otherwise (the usual -100 needs no comment).

    Raises:
        TypeError: a non-integer argument. ValueError: ``num_classes < 1``.
    """
    c = _check_int("num_classes", num_classes)
    i = _check_int("ignore_index", ignore_index)
    if c < 1:
        raise ValueError(f"num_classes must be at least 1, got {c}")
    data = {"num_classes": c, "ignore_index": i}
    if 0 <= i < c:
        return [
            finding(
                "TP-OBJ-IGNORE-INDEX-COLLISION",
                f"ignore_index {i} is class {i} of 0..{c - 1}: every target {i} is dropped from the loss",
                evidence=f"The loss skips targets equal to ignore_index, and {i} is a valid class id in "
                f"[0, {c}): that class is never a target, so the model is never trained to "
                f"predict it (if it is the end-of-sequence id, the model never learns to stop).",
                data=data,
            )
        ]
    if i == c:
        return [
            finding(
                "TP-OBJ-IGNORE-INDEX-OK",
                f"ignore_index {i} sits one past the last class ({c - 1}): no class is ignored",
                evidence=f"Right while num_classes ({c}) is the size of the output layer; a head resized "
                f"to {c + 1} outputs would make {i} a class.",
                data=data,
            )
        ]
    return []


# --- targets -----------------------------------------------------------------------------


class TargetCoverage:
    """Counts class targets over batches: out-of-range ids and classes never seen.

    Call :meth:`update` with each batch's targets, then :meth:`findings` (or
    :meth:`report`) once at the end::

        cov = TargetCoverage(num_classes=10, ignore_index=-100)
        for batch in loader:
            cov.update(batch["labels"])
        for f in cov.findings():
            print(f.level, f.id, f.message)

    Memory is one int64 counter per class (8 bytes x num_classes) plus a few scalars.

    Args:
        num_classes: number of classes the model predicts (>= 1).
        ignore_index: target value the loss skips; not counted as a class or as out of range.
        th: thresholds (``obj_coverage_min_per_class``, ``obj_dead_class_max_missing``);
            default :class:`~trainproof.rules.thresholds.Thresholds`.

    Raises:
        TypeError: a non-integer ``num_classes`` or ``ignore_index``.
        ValueError: ``num_classes < 1``.
    """

    def __init__(self, num_classes: int, ignore_index: int = -100, th: Thresholds | None = None) -> None:
        self.num_classes = _check_int("num_classes", num_classes)
        self.ignore_index = _check_int("ignore_index", ignore_index)
        if self.num_classes < 1:
            raise ValueError(f"num_classes must be at least 1, got {self.num_classes}")
        self.th = th or Thresholds()
        #: Targets seen per class id (length ``num_classes``).
        self.counts = np.zeros(self.num_classes, dtype=np.int64)
        #: Batches given to :meth:`update`.
        self.batches = 0
        #: Every target seen, ignored and out-of-range ones included.
        self.total = 0
        #: Targets equal to ``ignore_index``.
        self.ignored = 0
        #: Targets outside ``[0, num_classes)`` that are not ``ignore_index``.
        self.out_of_range = 0
        self._oor_min: int | None = None
        self._oor_max: int | None = None
        self._oor_values: set[int] = set()
        self._oor_first_batch: int | None = None

    @property
    def valid(self) -> int:
        """Targets that are class ids (in ``[0, num_classes)``)."""
        return int(self.counts.sum())

    def update(self, targets: Any) -> None:
        """Count one batch of targets.

        Args:
            targets: class ids of any shape (``[batch]``, ``[batch, seq]``, ``[batch, H, W]``,
                ...; flattened): a torch tensor (counted on its device; only the per-class
                counts and at most a few offending values are copied to the CPU), a numpy
                array, or a nested list. Integer or boolean dtype, or float holding whole
                numbers.

        Raises:
            TypeError: a dtype that cannot hold class ids (strings, objects, complex).
            ValueError: non-finite or fractional float values; a ragged nested list.
        """
        batch = self.batches
        if _is_torch(targets):
            n, ign, counts, n_oor, lo, hi, sample = self._count_torch(targets)
        else:
            n, ign, counts, n_oor, lo, hi, sample = self._count_numpy(_as_numpy(targets, "targets"))
        self.batches += 1
        self.total += n
        self.ignored += ign
        self.counts += counts
        if n_oor:
            self.out_of_range += n_oor
            self._oor_min = lo if self._oor_min is None else min(self._oor_min, lo)
            self._oor_max = hi if self._oor_max is None else max(self._oor_max, hi)
            if self._oor_first_batch is None:
                self._oor_first_batch = batch
            for v in sample:
                if len(self._oor_values) >= 10:
                    break
                self._oor_values.add(int(v))

    def _count_numpy(self, a: np.ndarray):
        a = a.reshape(-1)
        ign = a == self.ignore_index
        inr = (a >= 0) & (a < self.num_classes) & ~ign
        counts = np.bincount(a[inr], minlength=self.num_classes)
        bad = a[~inr & ~ign]
        if bad.size:
            uq = np.unique(bad)
            return (
                a.size,
                int(ign.sum()),
                counts,
                int(bad.size),
                int(uq[0]),
                int(uq[-1]),
                [*uq[:5].tolist(), *uq[-5:].tolist()],
            )
        return a.size, int(ign.sum()), counts, 0, None, None, []

    def _count_torch(self, x):
        t = x.detach().reshape(-1)
        if t.is_complex() or not (
            t.is_floating_point()
            or t.dtype.is_signed
            or str(t.dtype) in ("torch.bool", "torch.uint8", "torch.uint16", "torch.uint32", "torch.uint64")
        ):
            raise TypeError(f"targets: expected integer class ids, got dtype {t.dtype}")
        if t.is_floating_point():
            if t.numel() and not bool(t.isfinite().all()):
                raise ValueError("targets: class ids must be finite, found NaN or infinity")
            if t.numel() and not bool((t == t.round()).all()):
                raise ValueError(
                    "targets: class ids must be whole numbers, found fractional values "
                    "(soft or one-hot targets are not class ids)"
                )
            t = t.clamp(-(2.0**62), 2.0**62)
        t = t.long()
        ign = t == self.ignore_index
        inr = (t >= 0) & (t < self.num_classes) & ~ign
        counts = t[inr].bincount(minlength=self.num_classes).cpu().numpy().astype(np.int64)
        bad = t[~inr & ~ign]
        n_ign = int(ign.sum().item())
        if bad.numel():
            uq = bad.unique()  # sorted
            lo, hi = int(uq[0].item()), int(uq[-1].item())
            sample = [*uq[:5].cpu().tolist(), *uq[-5:].cpu().tolist()]
            return int(t.numel()), n_ign, counts, int(bad.numel()), lo, hi, sample
        return int(t.numel()), n_ign, counts, 0, None, None, []

    def findings(self) -> list[Finding]:
        """What the targets seen so far say.

        Returns:
            ``TP-OBJ-TARGET-OUT-OF-RANGE`` (FAIL) or ``TP-OBJ-TARGET-RANGE-OK`` (PASS), then
            one of ``TP-OBJ-DEAD-CLASS`` (FAIL), ``TP-OBJ-DEAD-CLASS-OK`` (PASS) or
            ``TP-OBJ-COVERAGE-INSUFFICIENT`` (INFO). Empty when no batch was given.
        """
        if self.batches == 0:
            return []
        c, i = self.num_classes, self.ignore_index
        out: list[Finding] = []
        base = {
            "num_classes": c,
            "ignore_index": i,
            "targets": self.total,
            "ignored": self.ignored,
            "batches": self.batches,
        }
        if self.out_of_range:
            lo, hi = self._oor_min, self._oor_max
            share = self.out_of_range / self.total
            vals = sorted(self._oor_values)
            out.append(
                finding(
                    _RANGE_CHECK,
                    f"{_n(self.out_of_range)} target(s) outside [0, {c}) ({share:.2%} of {_n(self.total)}): "
                    + (f"value {lo}" if lo == hi else f"from {lo} to {hi}"),
                    evidence=f"Values include {_ids(vals)}; ignore_index is {i}."
                    + (
                        f" First seen in batch {self._oor_first_batch} (0-based) of {self.batches}."
                        if self.batches > 1
                        else ""
                    ),
                    data={
                        **base,
                        "out_of_range": self.out_of_range,
                        "min": lo,
                        "max": hi,
                        "values": vals,
                        "first_batch": self._oor_first_batch,
                    },
                )
            )
        else:
            out.append(
                finding(
                    "TP-OBJ-TARGET-RANGE-OK",
                    f"all {_n(self.total)} targets are class ids in [0, {c}) or the ignore_index {i}",
                    evidence=f"{_n(self.valid)} class ids and {_n(self.ignored)} ignored, over {self.batches} batch(es).",
                    data={**base, "out_of_range": 0},
                )
            )
        out.append(self._dead_class(base))
        return out

    def _dead_class(self, base: dict) -> Finding:
        c = self.num_classes
        valid = self.valid
        missing = np.flatnonzero(self.counts == 0)
        seen = c - missing.size
        per_class = valid / c
        need_pc = self.th.obj_coverage_min_per_class
        max_missing = self.th.obj_dead_class_max_missing
        data = {
            **base,
            "valid": valid,
            "targets_per_class": per_class,
            "classes_seen": int(seen),
            "missing": [int(m) for m in missing[:1000]],
            "missing_count": int(missing.size),
            "min_per_class": need_pc,
            "max_missing": max_missing,
        }
        if missing.size == 0:
            return finding(
                "TP-OBJ-DEAD-CLASS-OK",
                f"every one of the {_n(c)} classes appears as a target",
                evidence=f"{_n(valid)} class targets; the rarest class appears {_n(self.counts.min())} "
                f"time(s), the commonest {_n(self.counts.max())}.",
                data=data,
            )
        if per_class < need_pc:
            return finding(
                "TP-OBJ-COVERAGE-INSUFFICIENT",
                f"{_n(seen)} of {_n(c)} classes seen in {_n(valid)} class targets ({per_class:.3g} per "
                f"class): too few to tell a dead class from a rare one",
                evidence=f"Dead classes are named from {need_pc} targets per class "
                f"(obj_coverage_min_per_class), i.e. {_n(need_pc * c)} class targets; "
                f"{_n(missing.size)} class(es) not seen yet" + (f": {_ids(missing)}." if missing.size <= 20 else "."),
                data={**data, "reason": "too_few_targets"},
            )
        if missing.size > max_missing:
            return finding(
                "TP-OBJ-COVERAGE-INSUFFICIENT",
                f"{_n(missing.size)} of {_n(c)} classes never appear in {_n(valid)} class targets: too "
                f"many to name dead classes",
                evidence=f"More than {max_missing} (obj_dead_class_max_missing) missing ids points to a "
                f"label space sparse by design (reserved or never-used ids) or a num_classes "
                f"larger than the label set; missing: {_ids(missing)}.",
                data={**data, "reason": "too_many_missing"},
            )
        seen_counts = self.counts[self.counts > 0]
        return finding(
            "TP-OBJ-DEAD-CLASS",
            f"{'classes' if missing.size > 1 else 'class'} {_ids(missing)} never "
            f"{'appear' if missing.size > 1 else 'appears'} as a target in {_n(valid)} class targets "
            f"({per_class:.3g} per class)",
            evidence=f"{_n(seen)} of {_n(c)} classes seen over {self.batches} batch(es); the rarest seen "
            f"class appears {_n(seen_counts.min())} time(s). The model is never trained to "
            f"predict the missing class{'es' if missing.size > 1 else ''}.",
            data=data,
        )

    def report(self, file: str = "targets", mute=()) -> Report:
        """A Report of :func:`check_ignore_index` and :meth:`findings` (kind ``objective``)."""
        from .reports import build  # the reports are built on these checks

        return build(
            [*check_ignore_index(self.num_classes, self.ignore_index)],
            self,
            None,
            file,
            {"num_classes": self.num_classes, "ignore_index": self.ignore_index},
            mute,
        )


# --- label shift -------------------------------------------------------------------------


def measure_label_shift(
    input_ids: Any, labels: Any, ignore_index: int = -100, max_positions: int | None = 1024
) -> dict:
    """Count, per sequence, whether labels align with ``input_ids`` or sit one ahead.

    Compared positions are t in [0, L-1) (within the first ``max_positions``) whose label
    is not ``ignore_index`` and where ``input_ids[t] != input_ids[t+1]`` (such a position
    matches both alignments). A sequence votes ``aligned`` when labels[t] == input_ids[t]
    at more than half of its compared positions, ``shifted`` when labels[t] ==
    input_ids[t+1] there, ``neither`` otherwise; a sequence with no compared position does
    not vote.

    Args:
        input_ids: token ids, ``[batch, seq]`` or ``[seq]`` (tensor, array or nested list).
        labels: same shape as ``input_ids``.
        ignore_index: label value the loss skips.
        max_positions: only the first ``max_positions`` positions of each sequence are
            compared (a torch tensor is sliced on its device before the copy); ``None``
            compares all.

    Returns:
        ``{"sequences", "aligned", "shifted", "neither", "unmeasured", "positions",
        "observed"}`` where ``observed`` is ``"aligned"``, ``"shifted"`` (a strict majority
        of the voting sequences) or ``None``.

    Raises:
        ValueError: different shapes, more than 2 dimensions, ragged lists, fractional ids.
        TypeError: non-numeric ids.
    """
    ign = _check_int("ignore_index", ignore_index)
    if max_positions is not None and (_check_int("max_positions", max_positions) < 2):
        raise ValueError(f"max_positions must be at least 2, got {max_positions}")
    if not _is_torch(input_ids) and not isinstance(input_ids, np.ndarray):
        input_ids = _as_numpy(input_ids, "input_ids")
    if not _is_torch(labels) and not isinstance(labels, np.ndarray):
        labels = _as_numpy(labels, "labels")
    sx, sy = tuple(input_ids.shape), tuple(labels.shape)
    if sx != sy:
        raise ValueError(f"input_ids {list(sx)} and labels {list(sy)} must have the same shape")
    if len(sx) not in (1, 2):
        raise ValueError(f"expected [batch, seq] or [seq] ids, got shape {list(sx)}")
    x = _as_numpy(input_ids, "input_ids", max_positions)
    y = _as_numpy(labels, "labels", max_positions)
    if x.ndim == 1:
        x, y = x[None, :], y[None, :]
    cur, nxt, lab = x[:, :-1], x[:, 1:], y[:, :-1]
    comp = (lab != ign) & (cur != nxt)
    m = comp.sum(axis=1)
    a = ((lab == cur) & comp).sum(axis=1)
    s = ((lab == nxt) & comp).sum(axis=1)
    measured = m > 0
    aligned = measured & (2 * a > m)
    shifted = measured & (2 * s > m)
    res = {
        "sequences": int(x.shape[0]),
        "aligned": int(aligned.sum()),
        "shifted": int(shifted.sum()),
        "neither": int((measured & ~aligned & ~shifted).sum()),
        "unmeasured": int((~measured).sum()),
        "positions": int(m.sum()),
        "max_positions": max_positions,
    }
    voting = int(measured.sum())
    observed = None
    if voting:
        if 2 * res["shifted"] > voting:
            observed = "shifted"
        elif 2 * res["aligned"] > voting:
            observed = "aligned"
    res["observed"] = observed
    return res


def check_label_shift(
    input_ids: Any,
    labels: Any,
    loss_shifts_labels: bool | None,
    ignore_index: int = -100,
    max_positions: int | None = 1024,
) -> list[Finding]:
    """Whether causal-LM labels are shifted twice (by the data and again by the loss).

    Args:
        input_ids: token ids, ``[batch, seq]`` or ``[seq]`` (torch tensor, numpy array or
            nested list).
        labels: the labels given to the model, same shape; ``ignore_index`` marks skipped
            positions (padding, masked prompts).
        loss_shifts_labels: ``True`` when the loss compares logits[:, :-1] with
            labels[:, 1:] itself (every Hugging Face ``*ForCausalLM``); ``False`` when it
            uses the labels as given; ``None`` when unknown: then the alignment is reported
            (INFO) and never judged.
        ignore_index: label value the loss skips.
        max_positions: positions per sequence compared (see :func:`measure_label_shift`).

    Returns:
        One finding: ``TP-OBJ-LABEL-SHIFT-DOUBLE`` (FAIL, only with
        ``loss_shifts_labels=True`` and shifted labels), ``TP-OBJ-LABEL-SHIFT-OK`` (PASS),
        ``TP-OBJ-LABEL-SHIFT-OBSERVED`` (INFO) or ``TP-OBJ-LABEL-SHIFT-NOT-MEASURED`` (INFO).

    Raises:
        ValueError, TypeError: as :func:`measure_label_shift`; TypeError also for a
        ``loss_shifts_labels`` that is not a bool or None.
    """
    if loss_shifts_labels is not None and not isinstance(loss_shifts_labels, (bool, np.bool_)):
        raise TypeError(f"loss_shifts_labels must be True, False or None, got {loss_shifts_labels!r}")
    r = measure_label_shift(input_ids, labels, ignore_index, max_positions)
    data = {
        **r,
        "loss_shifts_labels": None if loss_shifts_labels is None else bool(loss_shifts_labels),
        "ignore_index": ignore_index,
    }
    voting = r["sequences"] - r["unmeasured"]
    tally = (
        f"of {voting} sequence(s) with a position to compare, {r['aligned']} have labels[t] == input_ids[t], "
        f"{r['shifted']} labels[t] == input_ids[t+1], {r['neither']} neither ({_n(r['positions'])} positions"
        + (f" in the first {max_positions} of each sequence" if max_positions is not None else "")
        + ")"
    )
    if r["unmeasured"]:
        tally += f"; {r['unmeasured']} sequence(s) had none"
    obs = r["observed"]
    if obs is None:
        why = (
            (
                "no position to compare: every label is the ignore_index or every sequence is one token or one "
                "repeated token"
            )
            if voting == 0
            else "no alignment holds in a strict majority of sequences"
        )
        return [
            finding(
                "TP-OBJ-LABEL-SHIFT-NOT-MEASURED",
                f"label alignment not measured: {why}",
                evidence=tally[0].upper() + tally[1:] + ".",
                data=data,
            )
        ]
    what = (
        "labels equal input_ids at the same position (unshifted)"
        if obs == "aligned"
        else "labels equal input_ids one position ahead (already shifted)"
    )
    if loss_shifts_labels is None:
        return [
            finding(
                "TP-OBJ-LABEL-SHIFT-OBSERVED",
                f"{what}; not judged: whether the loss shifts them is not stated",
                evidence=tally[0].upper() + tally[1:] + ".",
                data=data,
            )
        ]
    if loss_shifts_labels:
        if obs == "shifted":
            return [
                finding(
                    "TP-OBJ-LABEL-SHIFT-DOUBLE",
                    "labels are already shifted and the loss shifts them again: the model learns the token "
                    "two positions ahead",
                    evidence=tally[0].upper() + tally[1:] + "; the loss compares logits[:, :-1] with labels[:, 1:].",
                    data=data,
                )
            ]
        return [
            finding(
                "TP-OBJ-LABEL-SHIFT-OK",
                f"{what}, as a loss that shifts them expects",
                evidence=tally[0].upper() + tally[1:] + ".",
                data=data,
            )
        ]
    if obs == "shifted":
        return [
            finding(
                "TP-OBJ-LABEL-SHIFT-OK",
                f"{what}, as a loss that does not shift them expects",
                evidence=tally[0].upper() + tally[1:] + ".",
                data=data,
            )
        ]
    return [
        finding(
            "TP-OBJ-LABEL-SHIFT-OBSERVED",
            f"{what} while the loss is stated not to shift them: each position is trained on its own input token",
            evidence=tally[0].upper() + tally[1:] + "; right only for objectives that reconstruct the input.",
            data=data,
        )
    ]
