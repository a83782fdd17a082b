"""Canonical metric names and the raw keys that mean them: which raw key of a log is its
loss, its learning rate, its gradient norm, … (the report's ``mapping``).

The package holds one responsibility per module, each importing only the ones before it:

* :mod:`.runs`: the column names of a W&B panel export (the run a column belongs to,
  the ``…__MIN`` / ``…__MAX`` band columns), written once for every reader of names;
* :mod:`.table`: the canonical names, the alias table and its ranking, the step keys;
* :mod:`.vocabulary`: how a key splits into words, and the split/step/epoch words that the
  loss fallback and the console reader share;
* :mod:`.loss_fallback`: which key is the loss when no alias names it, and when
  components are summed;
* :mod:`.mapping`: :func:`resolve` (overrides, then the table, then the fallback) and the
  ``--map`` option.

Every public name is importable from ``trainproof.aliases`` itself, as before the split; a
module that needs one responsibility may import it from its home.
"""

from __future__ import annotations

from .loss_fallback import (
    EVAL_WORDS,
    LOSS_KIND_WORDS,
    LOSS_WORDS,
    MAX_SUM_PARTS,
    NOT_LOSS_WORDS,
    SEPARATE_NETWORK_WORDS,
    TOTAL_WORDS,
    TRAIN_WORDS,
    auxiliary_terms,
    loss_candidate,
)
from .mapping import MappingError, parse_map_option, resolve
from .runs import run_of, runs_in
from .table import ALIASES, CANONICAL, GROUP_SUFFIX, PREFIXED, STEP_KEYS, TRAIN_PREFIX, is_step_key, step_key
from .vocabulary import VOCABULARY, console_words, key_words, words

__all__ = [
    "ALIASES",
    "CANONICAL",
    "EVAL_WORDS",
    "GROUP_SUFFIX",
    "LOSS_KIND_WORDS",
    "LOSS_WORDS",
    "MAX_SUM_PARTS",
    "NOT_LOSS_WORDS",
    "PREFIXED",
    "SEPARATE_NETWORK_WORDS",
    "STEP_KEYS",
    "TOTAL_WORDS",
    "TRAIN_PREFIX",
    "TRAIN_WORDS",
    "VOCABULARY",
    "MappingError",
    "auxiliary_terms",
    "console_words",
    "is_step_key",
    "key_words",
    "loss_candidate",
    "parse_map_option",
    "resolve",
    "run_of",
    "runs_in",
    "step_key",
    "words",
]
