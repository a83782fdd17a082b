"""The dataset checks: pure functions of a finished scan (and the tokenizer) returning
:class:`~trainproof.preflight.Outcome`."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ...findings import Finding, Level, Report, Skip
from .. import Outcome, finding
from .sources import SHOW

if TYPE_CHECKING:
    from .scan import Scan
    from .shapes import FieldShape, Shape
    from .sources import Malformed
    from .tokenizer import Tok

#: How many distinct keys TP-PRE-NO-TEXT-FIELD lists (presentation only).
KEYS_SHOWN = 30

ALL_IDS = (
    "TP-PRE-MALFORMED-JSONL",
    "TP-PRE-EMPTY-TEXT",
    "TP-PRE-DUPLICATE-TEXT",
    "TP-PRE-NO-TEXT-FIELD",
    "TP-PRE-MISSING-EOS-TOKEN",
    "TP-PRE-MISSING-PAD-TOKEN",
    "TP-PRE-PAD-EQUALS-EOS",
    "TP-PRE-NO-EOS-APPEND",
    "TP-PRE-BOS-TOKEN-INFO",
    "TP-PRE-CONTEXT-OVERFLOW",
    "TP-PRE-CONTEXT-CHECK-SKIPPED",
    "TP-PRE-OK",
)
DATA_IDS = ("TP-PRE-EMPTY-TEXT", "TP-PRE-DUPLICATE-TEXT")
TOK_IDS = (
    "TP-PRE-MISSING-EOS-TOKEN",
    "TP-PRE-MISSING-PAD-TOKEN",
    "TP-PRE-PAD-EQUALS-EOS",
    "TP-PRE-NO-EOS-APPEND",
    "TP-PRE-BOS-TOKEN-INFO",
    "TP-PRE-CONTEXT-OVERFLOW",
)


def _where(index: int, line: int | None) -> str:
    return f"record {index}" + (f", line {line}" if line is not None else "")


def _list(xs: list, total: int, unit: str = "") -> str:
    """``record 3`` / ``records 3, 7, 9 (and 12 more)``."""
    s = ", ".join(str(x) for x in xs)
    s += f" (and {total - len(xs)} more)" if total > len(xs) else ""
    return f"{unit}{'s' if total > 1 else ''} {s}" if unit else s


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%" if x >= 0.001 or x == 0 else f"{100 * x:.2g}%"


def _percentile(sorted_vals: list[int], q: float) -> int:
    if not sorted_vals:
        return 0
    k = min(len(sorted_vals) - 1, max(0, int(round(q * (len(sorted_vals) - 1)))))
    return int(sorted_vals[k])


def malformed(bad: Malformed, scan: Scan) -> Outcome:
    """TP-PRE-MALFORMED-JSONL: the lines (or array elements) that are not JSON objects.

    Its ``items`` are the records read (the report's ``records``)."""
    out = Outcome(ran=["TP-PRE-MALFORMED-JSONL"], items=scan.records)
    if bad.count:
        unit = bad.unit
        first = "; ".join(f"{unit} {w}: {r}" for w, r in zip(bad.where[:3], bad.reasons[:3]))
        out.findings.append(
            finding(
                "TP-PRE-MALFORMED-JSONL",
                f"{bad.count} {unit}(s) are not valid JSON objects ({_list(bad.where, bad.count, unit)})",
                evidence=f"First: {first}. {scan.records} valid record(s) were read.",
                data={"count": bad.count, unit + "s": bad.where, "reasons": bad.reasons, "records": scan.records},
                line=bad.where[0] if unit == "line" else None,
            )
        )
    return out


def no_text_field(scan: Scan, text_field: str | None) -> Outcome:
    """TP-PRE-NO-TEXT-FIELD: no record has a known shape (or the ``--text-field`` path); the
    checks that need the text are skipped, reason ``absent``."""
    shown = scan.keys.most_common(KEYS_SHOWN)
    keys_txt = ", ".join(f"{k} ({n})" for k, n in shown) or "none"
    what = (
        f"no record has the --text-field path `{text_field}`"
        if text_field
        else "no record has a known text shape (text, prompt/completion, instruction/output, messages, conversations)"
    )
    evidence = f"Keys seen in {scan.records} record(s), with counts: {keys_txt}"
    if len(scan.keys) > KEYS_SHOWN:
        evidence += f" (and {len(scan.keys) - KEYS_SHOWN} more)"
    evidence += "."
    data = {"keys": dict(shown), "distinct_keys": len(scan.keys), "records": scan.records, "text_field": text_field}
    if scan.nested:
        nested = scan.nested.most_common(KEYS_SHOWN)
        evidence += f" Keys under `{scan.nested_prefix}`: " + ", ".join(f"{k} ({n})" for k, n in nested) + "."
        data["nested_keys"] = {"path": scan.nested_prefix, "keys": dict(nested)}
    return Outcome(
        findings=[finding("TP-PRE-NO-TEXT-FIELD", what + "; pass --text-field", evidence=evidence, data=data)],
        ran=["TP-PRE-NO-TEXT-FIELD"],
        notes=["text shape: none detected"],
        skipped={rid: Skip("absent", "no text field") for rid in (*DATA_IDS, *TOK_IDS, "TP-PRE-CONTEXT-CHECK-SKIPPED")},
    )


def texts(scan: Scan, shape: Shape | FieldShape) -> Outcome:
    """TP-PRE-EMPTY-TEXT and TP-PRE-DUPLICATE-TEXT for a dataset of a known ``shape``."""
    return Outcome(
        findings=_data_findings(scan, shape),
        ran=list(DATA_IDS),
        notes=[f"text shape: {shape.name} ({shape.fields})"],
        meta={"shape": shape.name, "text_fields": shape.fields},
    )


def tokenizer(scan: Scan, tok: Tok, max_len: int | None) -> Outcome:
    """The tokenizer's EOS, pad and BOS, EOS at the end of each encoded record, and with
    ``max_len`` (tokens) the records truncation would cut; ``meta`` gets the tokenizer and
    the token-length statistics."""
    notes = [f"tokenizer: {tok.describe()}"]
    if tok.inferred:
        notes.append(
            "tokenizer.json names no " + "/".join(tok.inferred) + " token: found from the "
            "post-processor or by name; a script loading it with PreTrainedTokenizerFast must "
            "set it"
        )
    f, r, s, m = _tokenizer_findings(scan, tok, max_len)
    return Outcome(findings=f, ran=r, skipped=s, notes=notes, meta={"tokenizer": tok.meta(), "tokens": m})


def no_tokenizer(max_len: int | None, tok_error: str | None) -> Outcome:
    """The tokenizer checks skipped, reason ``absent``: no ``--tokenizer``, or it could not
    be loaded (``tok_error``)."""
    skipped = {rid: Skip("absent", tok_error or "no --tokenizer") for rid in TOK_IDS}
    if max_len is not None and tok_error is None:
        skipped["TP-PRE-CONTEXT-OVERFLOW"] = Skip("absent", "--max-len needs --tokenizer to count tokens")
    return Outcome(skipped=skipped)


def with_ok(
    rep: Report, mute: set[str], scan: Scan, shape: Shape | FieldShape | None, tok: Tok | None, max_len: int | None
) -> Report:
    """``rep`` with TP-PRE-OK added when the dataset's ``shape`` is known and no finding that
    is not muted is FAIL, WARN or NOT-CHECKED (and TP-PRE-OK itself is not muted); a new report."""
    shown = [f for f in rep.findings if f.id not in mute]
    if (
        shape is None
        or any(f.level in (Level.FAIL, Level.WARN, Level.NOT_CHECKED) for f in shown)
        or "TP-PRE-OK" in mute
    ):
        return rep
    parts = ["no malformed lines, empty texts or exact duplicates"]
    if tok is not None:
        parts.append("EOS and pad set and distinct, samples end with EOS")
        if max_len is not None:
            parts.append(f"none longer than {max_len} tokens")
    ok = finding(
        "TP-PRE-OK",
        f"{scan.records} record(s), shape {shape.name}: " + "; ".join(parts),
        data={"records": scan.records, "shape": shape.name},
    )
    return replace(rep, findings=[*rep.findings, ok], ran=[*rep.ran, "TP-PRE-OK"])


def _data_findings(scan: Scan, shape) -> list[Finding]:
    out = []
    if scan.empty.count:
        kinds = dict(scan.empty_kinds)
        idx = [i for i, _, _ in scan.empty.items]
        first = "; ".join(f"{_where(i, ln)}: {k}" for i, ln, k in scan.empty.items[:3])
        trained = {
            "chat": "assistant messages",
            "sharegpt": "assistant messages",
            "prompt/completion": "completion",
            "alpaca": "output",
            "dolly": "response",
        }.get(shape.name, shape.fields)
        out.append(
            finding(
                "TP-PRE-EMPTY-TEXT",
                f"{scan.empty.count} of {scan.records} record(s) have no text to train on in `{trained}` "
                f"({_list(idx, scan.empty.count, 'record')})",
                evidence="By kind: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) + f". First: {first}.",
                data={
                    "count": scan.empty.count,
                    "records": scan.records,
                    "indices": idx,
                    "lines": [ln for _, ln, _ in scan.empty.items],
                    "kinds": kinds,
                    "field": trained,
                },
                line=scan.empty.items[0][1],
            )
        )
    if scan.dups.count:
        pairs = [list(p) for p in scan.dups.items]
        out.append(
            finding(
                "TP-PRE-DUPLICATE-TEXT",
                f"{scan.dups.count} record(s) repeat an earlier record's text exactly "
                f"({len(scan.repeated)} distinct text(s) repeated, {_pct(scan.dups.count / scan.records)} of records)",
                evidence="First pairs (earlier, later record): " + ", ".join(f"({a}, {b})" for a, b in pairs[:5]) + ".",
                data={
                    "count": scan.dups.count,
                    "distinct": len(scan.repeated),
                    "records": scan.records,
                    "pairs": pairs,
                    "share": scan.dups.count / scan.records,
                },
            )
        )
    return out


def _tokenizer_findings(scan: Scan, tok: Tok, max_len: int | None):
    out: list[Finding] = []
    ran: list[str] = []
    skipped: dict[str, Skip] = {}
    n = len(scan.lengths)
    ran.append("TP-PRE-MISSING-EOS-TOKEN")
    if not tok.eos.ok:
        msg = (
            "the tokenizer has no EOS token"
            if tok.eos.token is None
            else f"the EOS token `{tok.eos.token}` ({tok.eos.source}) is not in the vocabulary"
        )
        out.append(
            finding(
                "TP-PRE-MISSING-EOS-TOKEN",
                msg,
                evidence=f"Tokenizer {tok.name} ({tok.backend}): eos {tok.eos.describe()}.",
                data={"eos": tok.eos.to_dict()},
            )
        )
    ran.append("TP-PRE-MISSING-PAD-TOKEN")
    if not tok.pad.ok:
        msg = (
            "the tokenizer has no pad token"
            if tok.pad.token is None
            else f"the pad token `{tok.pad.token}` ({tok.pad.source}) is not in the vocabulary"
        )
        out.append(
            finding(
                "TP-PRE-MISSING-PAD-TOKEN",
                msg + ": padded batching will fail until one is set",
                evidence=f"Tokenizer {tok.name} ({tok.backend}): pad {tok.pad.describe()}.",
                data={"pad": tok.pad.to_dict()},
            )
        )
    if tok.eos.ok and tok.pad.ok:
        ran.append("TP-PRE-PAD-EQUALS-EOS")
        if tok.eos.id == tok.pad.id:
            out.append(
                finding(
                    "TP-PRE-PAD-EQUALS-EOS",
                    f"pad is the EOS token `{tok.eos.token}` (id {tok.eos.id}): the usual LM collator masks EOS labels "
                    "with the padding, so the model does not learn to stop",
                    evidence=f"pad {tok.pad.describe()}, eos {tok.eos.describe()}.",
                    data={"id": tok.eos.id, "token": tok.eos.token},
                )
            )
    else:
        skipped["TP-PRE-PAD-EQUALS-EOS"] = Skip("absent", "no EOS or no pad token")
    pre, post = tok.added_around()
    appends = tok.eos.ok and bool(post) and post[-1] == tok.eos.id
    prepends = tok.bos.ok and bool(pre) and pre[0] == tok.bos.id
    if tok.eos.ok and n:
        ran.append("TP-PRE-NO-EOS-APPEND")
        if scan.no_eos.count:
            idx = [i for i, _ in scan.no_eos.items]
            added = ("appends " + ", ".join(f"`{tok.decode([t])}`" for t in post)) if post else "appends nothing"
            out.append(
                finding(
                    "TP-PRE-NO-EOS-APPEND",
                    f"{scan.no_eos.count} of {n} encoded record(s) do not end with EOS `{tok.eos.token}` "
                    f"({_list(idx, scan.no_eos.count, 'record')})",
                    evidence=f"Encoding with special tokens {added} after the text; the text does not end with "
                    f"`{tok.eos.token}` either.",
                    data={
                        "count": scan.no_eos.count,
                        "encoded": n,
                        "indices": idx,
                        "lines": [ln for _, ln in scan.no_eos.items],
                        "tokenizer_appends_eos": appends,
                    },
                    line=scan.no_eos.items[0][1],
                )
            )
    else:
        skipped["TP-PRE-NO-EOS-APPEND"] = Skip("absent", "no EOS token" if not tok.eos.ok else "no record to encode")
    ran.append("TP-PRE-BOS-TOKEN-INFO")
    if tok.bos.ok:
        msg = f"BOS `{tok.bos.token}` (id {tok.bos.id}, {tok.bos.source}); encoding " + (
            "prepends it" if prepends else "does not prepend it"
        )
        if scan.double_bos.count:
            msg += f"; {scan.double_bos.count} record(s) start with BOS twice"
    else:
        msg = "no BOS token; encoded samples start directly with the text"
    out.append(
        finding(
            "TP-PRE-BOS-TOKEN-INFO",
            msg,
            evidence=f"{scan.bos_first} of {n} encoded record(s) start with BOS." if tok.bos.ok else "",
            data={
                "bos": tok.bos.to_dict(),
                "prepends": prepends,
                "starts_with_bos": scan.bos_first,
                "double_bos": scan.double_bos.count,
                "double_bos_indices": [i for i, _ in scan.double_bos.items],
            },
        )
    )

    lengths = sorted(scan.lengths)
    total = int(sum(lengths))
    meta = {
        "encoded": n,
        "total": total,
        "max": lengths[-1] if n else 0,
        "mean": round(total / n, 2) if n else 0,
        "p50": _percentile(lengths, 0.5),
        "p95": _percentile(lengths, 0.95),
        "length_basis": _basis(scan, tok),
        "max_len": max_len,
    }
    if scan.template_failed:
        meta["chat_template_failed"] = scan.template_failed
    if n:
        k = max(range(n), key=lambda j: (scan.lengths[j], -j))
        li, ll = int(scan.len_index[k]), (int(scan.len_line[k]) if scan.len_line[k] >= 0 else None)
        meta["longest"] = {"tokens": int(scan.lengths[k]), "index": li, "line": ll}
    if max_len is None:
        ran.append("TP-PRE-CONTEXT-CHECK-SKIPPED")
        skipped["TP-PRE-CONTEXT-OVERFLOW"] = Skip("absent", "no --max-len")
        msg = "no --max-len: truncation not checked"
        ev = ""
        if n:
            ev = (
                f"Longest: {meta['longest']['tokens']} tokens ({_where(li, ll)}); median {meta['p50']}, "
                f"95th percentile {meta['p95']} tokens over {n} record(s)."
            )
        if tok.model_max_length:
            ev += f" The tokenizer's model_max_length is {tok.model_max_length}."
        out.append(
            finding(
                "TP-PRE-CONTEXT-CHECK-SKIPPED",
                msg,
                evidence=ev.strip(),
                data={k2: meta[k2] for k2 in ("encoded", "max", "p50", "p95")}
                | {"model_max_length": tok.model_max_length},
            )
        )
    elif n:
        ran.append("TP-PRE-CONTEXT-OVERFLOW")
        over = [
            (int(scan.len_index[j]), int(scan.lengths[j]), int(scan.len_line[j]))
            for j in range(n)
            if scan.lengths[j] > max_len
        ]
        cut = sum(ln - max_len for _, ln, _ in over)
        meta.update({"over": len(over), "truncated_tokens": cut})
        if over:
            share_r, share_t = len(over) / n, cut / total if total else 0.0
            idx = [i for i, _, _ in over[:SHOW]]
            out.append(
                finding(
                    "TP-PRE-CONTEXT-OVERFLOW",
                    f"{len(over)} of {n} record(s) ({_pct(share_r)}) exceed --max-len {max_len} tokens; "
                    f"the longest is {meta['longest']['tokens']} tokens ({_where(li, ll)})",
                    evidence=f"Truncation would cut {cut} of {total} tokens ({_pct(share_t)}). Over the limit: "
                    f"{_list(idx, len(over), 'record')}. Median length {meta['p50']}, "
                    f"95th percentile {meta['p95']}.",
                    data={
                        "max_len": max_len,
                        "over": len(over),
                        "encoded": n,
                        "share_records": share_r,
                        "truncated_tokens": cut,
                        "total_tokens": total,
                        "share_tokens": share_t,
                        "longest": meta["longest"],
                        "indices": idx,
                    },
                    line=over[0][2] if over[0][2] >= 0 else None,
                )
            )
    else:
        skipped["TP-PRE-CONTEXT-OVERFLOW"] = Skip("absent", "no record to encode")
    return out, ran, skipped, meta


def _basis(scan: Scan, tok: Tok) -> str:
    name = scan.shape.name if scan.shape is not None else ""
    if name in ("chat", "sharegpt") or scan.template_used or scan.template_failed:
        if scan.template_used and not scan.template_failed:
            return "chat template, add_special_tokens=False"
        if scan.template_used:
            return "chat template (contents joined by newlines where it failed)"
        return "message contents joined by newlines, add_special_tokens=True (no chat template)"
    if name == "prompt/completion":
        return "prompt + completion, add_special_tokens=True"
    if name in ("alpaca", "dolly"):
        return "fields joined by blank lines (no prompt template), add_special_tokens=True"
    return "text, add_special_tokens=True"
