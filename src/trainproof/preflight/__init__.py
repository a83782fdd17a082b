"""Preflight: judge what a run will start from — its data, tokenizer, objective and machine —
before it starts. Each check module emits ``TP-*`` ids declared, with their documentation, in
:mod:`trainproof.rules.preflight_ids` (documented in RULES.md like every rule) and builds an ordinary
:class:`~trainproof.findings.Report`, so preflight results go through the same renderers
(text, ``--json``, ``--sarif``) and the same exit-code policy as the run checks.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..findings import MUTED, Finding, Report, Skip
from ..rules.registry import MODULE_OF, all_rules, get


def finding(
    rule_id: str,
    message: str,
    evidence: str = "",
    data: dict | None = None,
    step: float | None = None,
    line: int | None = None,
) -> Finding:
    """A finding of a declared preflight id, with its level and hint from the registry."""
    r = get(rule_id)
    if r is None:
        raise KeyError(f"undeclared preflight id {rule_id}")
    return Finding(
        id=r.id,
        level=r.level,
        message=message,
        evidence=evidence,
        data=dict(data or {}),
        step=step,
        line=line,
        source="preflight",
        hint=r.hint,
    )


def report(
    file: str,
    kind: str,
    findings: list[Finding],
    ran: list[str] | None = None,
    skipped: dict[str, Skip] | None = None,
    records: int = 0,
    meta: dict | None = None,
    notes: list[str] | None = None,
    error: str | None = None,
    mute: Iterable[str] = (),
) -> Report:
    """A preflight Report: ``kind`` is what was checked (``dataset``, ``env``, ...); the ids
    in ``mute`` are muted by :func:`apply_mute`."""
    rep = Report(
        file=file,
        format=kind,
        records=records,
        findings=list(findings),
        ran=list(ran or []),
        skipped=dict(skipped or {}),
        meta=dict(meta or {}),
        notes=list(notes or []),
        error=error,
    )
    return apply_mute(rep, mute)


def apply_mute(rep: Report, mute: Iterable[str]) -> Report:
    """Mute ``mute`` in a preflight report the way the rule engine does: a muted id is
    neither a finding nor in ``ran``, and is in ``skipped`` with reason ``muted``
    (:data:`~trainproof.findings.MUTED`). The ids muted are those of the check that made
    the report (the preflight family its ids were declared in), whether or not they would
    have fired; an id of another family is not this report's to list. Idempotent; returns
    ``rep``, changed in place."""
    mute = set(mute)
    if not mute:
        return rep
    own = {*rep.ran, *rep.skipped, *(f.id for f in rep.findings)}
    families = {MODULE_OF[i] for i in own if i in MODULE_OF}
    if not families:
        all_rules()  # the declarations, loaded once
        families = {MODULE_OF[i] for i in own if i in MODULE_OF}
    ids = [r.id for r in all_rules() if MODULE_OF.get(r.id) in families and r.id in mute]
    rep.findings = [f for f in rep.findings if f.id not in mute]
    rep.ran = [i for i in rep.ran if i not in mute]
    for rid in ids:
        rep.skipped[rid] = MUTED
    return rep
