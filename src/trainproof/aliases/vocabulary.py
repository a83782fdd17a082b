"""The words of metric names: how a raw key splits into words (:func:`words`), and the one
table of the words that say which split a number is from or which axis it counts
(:data:`VOCABULARY`).

Two readers of names share it: the loss fallback reads a key's words
(:mod:`.loss_fallback`), the console reader reads the words of a printed line
(:mod:`trainproof.formats.console`). It is a module of its own so that the console reader
takes the vocabulary without the loss fallback's judgement of what a loss is, and so that a
word added here reaches both readers.
"""

from __future__ import annotations

import re

from .runs import split_run

#: The words that say which split a number is from or what axis it counts, one table for
#: every reader of names: word -> ``(meaning, in a key, in a console line)``. The meaning
#: is ``"eval"`` (a validation split), ``"test"``, ``"train"``, ``"step"`` (a counter of
#: steps or batches), ``"epoch"`` or ``"global"`` (a global step or update count). *In a
#: key*: the loss fallback reads the word among a metric key's words
#: (:func:`~trainproof.aliases.loss_fallback.loss_candidate`); a test split is an eval split there. *In a console line*: the console reader reads it
#: as the last word of a printed name (``Epoch``, ``Global Batch``: step and epoch
#: words), the whole printed name (global words) or a word before the metrics
#: (``Validating:``: eval and test words). Printed text is read more strictly than keys:
#: ``Total steps: 1000`` prints a count, not a counter, and ``dev`` in a line is as likely
#: a device as a split.
VOCABULARY: dict[str, tuple[str, bool, bool]] = {
    "val": ("eval", True, True),
    "valid": ("eval", True, True),
    "validation": ("eval", True, True),
    "validating": ("eval", False, True),
    "validate": ("eval", False, True),  # torchtitan's "validate step: 100  loss: 1.81"
    "eval": ("eval", True, True),
    "evaluation": ("eval", True, True),
    "evaluating": ("eval", False, True),
    "dev": ("eval", True, False),
    "holdout": ("eval", True, False),
    "heldout": ("eval", True, False),
    "test": ("test", True, True),
    "testing": ("test", True, True),
    "train": ("train", True, False),
    "training": ("train", True, False),
    "trn": ("train", True, False),
    "step": ("step", True, True),
    "steps": ("step", True, False),
    "batch": ("step", True, True),
    "batches": ("step", True, False),
    "iteration": ("step", True, True),
    "iterations": ("step", True, False),
    "iter": ("step", False, True),  # in a key a running reading (TOTAL_WORDS), not an axis
    "it": ("step", True, True),
    "epoch": ("epoch", True, True),
    "epochs": ("epoch", True, False),
    "ep": ("epoch", True, True),
    "global_step": ("global", False, True),
    "globalstep": ("global", False, True),
    "global_batch": ("global", False, True),
    "global_iter": ("global", False, True),
    "num_updates": ("global", False, True),
    "n_updates": ("global", False, True),
    "updates": ("global", False, True),
    "update": ("global", False, True),
    "up": ("global", False, True),
    "total_timesteps": ("global", False, True),
    "timesteps": ("global", False, True),
}


def key_words(*meanings: str) -> frozenset[str]:
    """The words of :data:`VOCABULARY` read in a metric key with one of ``meanings``."""
    return frozenset(w for w, (m, in_key, _) in VOCABULARY.items() if in_key and m in meanings)


def console_words(*meanings: str) -> frozenset[str]:
    """The words of :data:`VOCABULARY` read in a console line with one of ``meanings``."""
    return frozenset(w for w, (m, _, in_console) in VOCABULARY.items() if in_console and m in meanings)


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def words(raw: str) -> list[str]:
    """The lower-case words of a raw key, split at every non-alphanumeric character and at
    every lower-to-upper case change (``train/CrossEntropyLoss`` -> ``["train", "cross",
    "entropy", "loss"]``); for a W&B chart column (``"<run> - train/loss"``) only the metric
    part after the last ``" - "``."""
    _, name = split_run(raw)
    return [w for w in _NON_ALNUM.split(_CAMEL.sub(" ", name).lower()) if w]


#: How the framework callbacks and the monitor name an evaluation metric's key: a split
#: word as its first or last part, as Lightning, Keras and HF write them.
_EVAL_PREFIXES = ("val_", "val/", "valid_", "valid/", "validation_", "validation/", "eval_", "eval/")
_EVAL_SUFFIXES = ("_val", "/val")


def is_eval_key(key: str) -> bool:
    """True for a validation/evaluation metric's key as a training loop passes it
    (``val_loss``, ``eval_acc``, ``loss_val``…): a split word leads or ends the key."""
    k = key.lower()
    return k.startswith(_EVAL_PREFIXES) or k.endswith(_EVAL_SUFFIXES)
