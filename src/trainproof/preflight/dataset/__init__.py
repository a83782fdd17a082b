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
:mod:`.checks` judges the scan; :func:`check_dataset` runs them.
"""

from __future__ import annotations

from pathlib import Path

from ...findings import Report
from .. import Check, Outcome, apply_mute, report, run
from . import checks
from .checks import ALL_IDS, KEYS_SHOWN
from .scan import scan_dataset
from .shapes import SHAPES
from .sources import SHOW, DatasetError, open_dataset
from .tokenizer import BOS_NAMES, EOS_NAMES, HF_EXTRA, PAD_NAMES, PROBE, Special, Tok, TokenizerError, load_tokenizer

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


def check_dataset(
    path: Path, text_field: str | None = None, tokenizer: str | None = None, max_len: int | None = None, mute=()
) -> tuple[Report, str | None]:
    """Judge a dataset file (the module doc says how it is read and tokenised).

    ``text_field``: a key or dotted path holding the text, instead of the detected shape;
    ``tokenizer``: a local tokenizer directory, tokenizer.json or cached hub name;
    ``max_len``: the run's sequence length in tokens (needs ``tokenizer``); ``mute``: ids
    reported skipped, reason ``muted``.

    Returns ``(report, error)``: ``error`` is the command-level reason exit 2 applies even
    when the dataset itself was judged (the tokenizer could not be loaded), else ``None``.
    A dataset that cannot be read is a report with ``error`` set (its NOT-CHECKED reason);
    nothing is raised for it.
    """
    mute = set(mute)
    tok, tok_error = None, None
    if tokenizer is not None:
        try:
            tok = load_tokenizer(tokenizer)
        except TokenizerError as e:
            tok_error = str(e)
    try:
        src = open_dataset(path)
        bad, scan = scan_dataset(src, text_field, tok)
    except DatasetError as e:
        return report(str(path), "dataset", [], error=str(e)), tok_error

    meta: dict = {
        "container": src.label,
        "shape": None,
        "text_fields": None,
        "records": scan.records,
        "malformed": bad.count,
    }
    notes = list(src.notes)
    if src.blank:
        notes.append(f"{src.blank} blank line(s) skipped")
    shape = scan.shape if scan.first_match is not None else None
    found = [Check(("TP-PRE-MALFORMED-JSONL",), lambda th: checks.malformed(bad, scan), "malformed records")]
    if scan.records == 0 and not bad.count:
        # Nothing to judge: NOT-CHECKED, and like any dataset that cannot be read it lists no muted ids.
        found.append(Check((), lambda th: Outcome(error=f"{path}: no records"), "records"))
        return run(found, file=str(path), kind="dataset", meta=meta, notes=notes), tok_error
    if scan.records and shape is None:
        found.append(Check(("TP-PRE-NO-TEXT-FIELD",), lambda th: checks.no_text_field(scan, text_field), "text field"))
    elif shape is not None:
        found.append(Check(checks.DATA_IDS, lambda th: checks.texts(scan, shape), "empty and duplicate texts"))
        if tok is not None:
            found.append(
                Check(
                    (*checks.TOK_IDS, "TP-PRE-CONTEXT-CHECK-SKIPPED"),
                    lambda th: checks.tokenizer(scan, tok, max_len),
                    "tokenizer",
                )
            )
        else:
            found.append(Check(checks.TOK_IDS, lambda th: checks.no_tokenizer(max_len, tok_error), "no tokenizer"))
    # Mute is applied after the run, as apply_mute does it, rather than by run's config:
    # TP-PRE-OK summarises the other checks' findings left after mute (a check sees only the
    # thresholds), and a check that run would leave out for its ids being muted still
    # places its absent skips where the report has always listed them.
    rep = run(found, file=str(path), kind="dataset", meta=meta, notes=notes)
    rep = checks.with_ok(rep, mute, scan, shape, tok, max_len)
    return apply_mute(rep, mute), tok_error
