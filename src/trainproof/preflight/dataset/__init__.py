"""``trainproof dataset DATASET...`` (formerly ``trainproof preflight``): is this training data usable, before the run starts?

The dataset is a file of JSON records: JSON Lines (``.jsonl``, streamed line by line, never
read as one string), a ``.json`` array (parsed whole), either of them gzip-compressed
(recognised by its magic bytes, e.g. ``.jsonl.gz``). A ``.json`` file whose first line is a
complete object is read as JSON Lines (``datasets.Dataset.to_json`` writes that). Record
indices are 0-based, as ``dataset[i]`` addresses them; line numbers are 1-based lines of the
(decompressed) file.

**Where the text is.** The first record that has one of these shapes decides the shape of
the dataset (in this order; ``--text-field`` overrides them):

=================  =============================================  =========================
shape              fields                                         trained part (emptiness)
=================  =============================================  =========================
chat               ``messages: [{role, content}]``                assistant messages
sharegpt           ``conversations: [{from, value}]``             ``gpt`` messages
prompt/completion  ``prompt``, ``completion``                     ``completion``
alpaca             ``instruction``, ``input`` (optional), ``output``  ``output``
dolly              ``instruction``, ``context`` (optional), ``response``  ``response``
text               ``text``                                       ``text``
text-field         ``--text-field`` (dotted path: ``data.body``)  the value
=================  =============================================  =========================

A chat record with no assistant message is judged on all its messages. Records of another
shape count as missing their text (TP-PRE-EMPTY-TEXT). The shape is in the report's
``meta.shape`` and in a note of the text output.

**Token lengths** (``--tokenizer``) are those of the text encoded with
``add_special_tokens=True``, as a trainer's tokenising map does: prompt and completion are
concatenated, Alpaca/Dolly fields are joined by blank lines, chat records are rendered with
the tokenizer's chat template when it has one (then encoded with
``add_special_tokens=False``, the template writes its own markers), else their contents
are joined by newlines. A prompt template of your own adds tokens, so lengths are lower
bounds (``meta.tokens.length_basis``).

**How EOS, pad and BOS are determined.**

* A directory, with ``transformers`` installed: ``AutoTokenizer.from_pretrained(dir,
  local_files_only=True)``; its ``eos_token`` / ``pad_token`` / ``bos_token`` are what the
  training script will see (from tokenizer_config.json and special_tokens_map.json).
  A name that is not a local path is looked up the same way in the local Hugging Face
  cache only; nothing is ever downloaded.
* A ``tokenizer.json`` (or a directory when ``transformers`` is not installed):
  ``tokenizers.Tokenizer.from_file``. A tokenizer.json does not say which token plays
  which role, so each role comes from the first of these that names one (the source is
  reported in ``meta.tokenizer.special``):

  1. ``special_tokens_map.json``, then ``tokenizer_config.json``, next to the file
     (``eos_token`` / ``pad_token`` / ``bos_token``, a string or an AddedToken dict; the
     first file wins, as in transformers' loader);
  2. pad only: the padding the tokenizer.json itself enables (``padding.pad_token``);
  3. the post-processor: encoding a probe text with and without special tokens, the last
     token it appends is the EOS and the first one it prepends is the BOS;
  4. a well-known name present in the vocabulary (:data:`EOS_NAMES`, :data:`PAD_NAMES`,
     :data:`BOS_NAMES`).

  A role named by a config file but absent from the vocabulary counts as missing. Roles
  found only by 3 or 4 are unknown to a script that loads the file with
  ``PreTrainedTokenizerFast(tokenizer_file=...)`` unless it passes them; the note says so.

The package: :mod:`.sources` opens the file, :mod:`.shapes` finds the text of a record,
:mod:`.tokenizer` loads the tokenizer, :mod:`.scan` reads every record once and
:mod:`.checks` judges the scan; :func:`check_dataset` (:mod:`.judge`) runs them; the ids
they emit are declared, with their documentation, in :mod:`.ids`.

The names below are loaded on first use (PEP 562): importing this package imports no
check, so the rule registry reaches :mod:`.ids` through it without loading the checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import lazy_names

if TYPE_CHECKING:
    from .checks import ALL_IDS, KEYS_SHOWN
    from .judge import check_dataset
    from .shapes import SHAPES
    from .sources import SHOW, DatasetError, open_dataset
    from .tokenizer import (
        BOS_NAMES,
        EOS_NAMES,
        HF_EXTRA,
        PAD_NAMES,
        PROBE,
        Special,
        Tok,
        TokenizerError,
        load_tokenizer,
    )

#: Each public name -> the module of this package that defines it.
_WHERE = {
    "ALL_IDS": "checks",
    "KEYS_SHOWN": "checks",
    "SHAPES": "shapes",
    "SHOW": "sources",
    "DatasetError": "sources",
    "open_dataset": "sources",
    "BOS_NAMES": "tokenizer",
    "EOS_NAMES": "tokenizer",
    "HF_EXTRA": "tokenizer",
    "PAD_NAMES": "tokenizer",
    "PROBE": "tokenizer",
    "Special": "tokenizer",
    "Tok": "tokenizer",
    "TokenizerError": "tokenizer",
    "load_tokenizer": "tokenizer",
    "check_dataset": "judge",
}

__all__ = [
    "ALL_IDS",
    "BOS_NAMES",
    "EOS_NAMES",
    "HF_EXTRA",
    "KEYS_SHOWN",
    "PAD_NAMES",
    "PROBE",
    "SHAPES",
    "SHOW",
    "DatasetError",
    "Special",
    "Tok",
    "TokenizerError",
    "check_dataset",
    "load_tokenizer",
    "open_dataset",
]

__getattr__, __dir__ = lazy_names(__name__, _WHERE)
