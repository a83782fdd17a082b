""":func:`check_dataset`: opens a dataset file (:mod:`.sources`), reads every record once
(:mod:`.scan`), judges the scan (:mod:`.checks`) and builds the one report."""

from __future__ import annotations

from pathlib import Path

from ...findings import Report
from .. import Check, Outcome, apply_mute, report, run
from . import checks
from .scan import scan_dataset
from .sources import DatasetError, open_dataset
from .tokenizer import TokenizerError, load_tokenizer


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
