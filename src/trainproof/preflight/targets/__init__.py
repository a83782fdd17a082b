"""``trainproof targets`` (formerly ``trainproof objective``): failures of the objective itself, decidable at step 0.

Some mistakes never show on a loss curve, because what they remove from the loss is simply
not there to be seen. They can be decided from shapes and a few integers before the first
step:

* **ignore_index collisions** (:func:`check_ignore_index`): the loss's ``ignore_index`` is
  a valid class (``0 <= ignore_index < num_classes``), so every target of that class is
  dropped and the class can never be learned (an end-of-sequence id equal to the ignore
  index: the model never learns to stop).
* **targets** (:class:`TargetCoverage`, accumulated over batches): ids outside
  ``[0, num_classes)`` that are not the ignore index, and classes that never appear as a
  target although the others are broadly covered (thresholds
  ``obj_coverage_min_per_class`` and ``obj_dead_class_max_missing``).
* **label alignment for causal LMs** (:func:`check_label_shift`): labels shifted by the
  data pipeline and shifted again by the loss (Hugging Face ``*ForCausalLM`` models shift
  internally), which trains the model to predict the token two positions ahead.

Inputs may be torch tensors, numpy arrays or nested lists. torch is never imported by
this module: a tensor is recognised by its type's module, and only the small results
(per-class counts, a slice of each sequence) are moved off its device.

The command reads targets from ``.npy``, ``.npz`` or ``.safetensors`` files, never with
pickle (``np.load(..., allow_pickle=False)``; safetensors through the ``safetensors``
package's numpy API when it is installed, else with the header read by
:func:`trainproof.formats.safetensors.read_header`).

The checks live in :mod:`.checks` (ignore_index, target coverage, label shift), reading
targets files in :mod:`.files`, the reports, built by :func:`trainproof.preflight.run`,
in :mod:`.reports`, and the ids they emit, with their documentation, in :mod:`.ids`.

The names below are loaded on first use (PEP 562): importing this package imports no
check, so the rule registry reaches :mod:`.ids` through it without loading the checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import lazy_names

if TYPE_CHECKING:
    from .checks import TargetCoverage, check_ignore_index, check_label_shift, measure_label_shift
    from .files import TargetFileError, load_arrays
    from .reports import check_objective, ignore_index_report, objective_report

#: Each public name -> the module of this package that defines it.
_WHERE = {
    "TargetCoverage": "checks",
    "check_ignore_index": "checks",
    "check_label_shift": "checks",
    "measure_label_shift": "checks",
    "TargetFileError": "files",
    "load_arrays": "files",
    "check_objective": "reports",
    "ignore_index_report": "reports",
    "objective_report": "reports",
}

__all__ = [
    "TargetCoverage",
    "TargetFileError",
    "check_ignore_index",
    "check_label_shift",
    "check_objective",
    "ignore_index_report",
    "load_arrays",
    "measure_label_shift",
    "objective_report",
]

__getattr__, __dir__ = lazy_names(__name__, _WHERE)
