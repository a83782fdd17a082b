"""Preflight: judge what a run will start from — its data, tokenizer, objective and machine —
before it starts. Each check module emits ``TP-*`` ids declared, with their documentation, in
:mod:`trainproof.rules.preflight_ids` (documented in RULES.md like every rule) and builds an ordinary
:class:`~trainproof.findings.Report`, so preflight results go through the same renderers
(text, ``--json``, ``--sarif``) and the same exit-code policy as the run checks.
"""
from __future__ import annotations

from ..findings import Finding, Report, Skip
from ..rules.registry import get


def finding(rule_id: str, message: str, evidence: str = "", data: dict | None = None,
            step: float | None = None, line: int | None = None) -> Finding:
    """A finding of a declared preflight id, with its level and hint from the registry."""
    r = get(rule_id)
    if r is None:
        raise KeyError(f"undeclared preflight id {rule_id}")
    return Finding(id=r.id, level=r.level, message=message, evidence=evidence, data=dict(data or {}),
                   step=step, line=line, source="preflight", hint=r.hint)


def report(file: str, kind: str, findings: list[Finding], ran: list[str] | None = None,
           skipped: dict[str, Skip] | None = None, records: int = 0, meta: dict | None = None,
           notes: list[str] | None = None, error: str | None = None) -> Report:
    """A preflight Report: ``kind`` is what was checked (``dataset``, ``env``, ...)."""
    return Report(file=file, format=kind, records=records, findings=list(findings), ran=list(ran or []),
                  skipped=dict(skipped or {}), meta=dict(meta or {}), notes=list(notes or []), error=error)
