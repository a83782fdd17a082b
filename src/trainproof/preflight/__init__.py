"""Preflight: judge what a run will start from — its data, tokenizer, objective and machine —
before it starts. Each check module emits ``TP-*`` ids declared, with their documentation, in
its family's ``ids`` module beside it (``preflight/targets/ids.py``; documented in RULES.md
like every rule) and builds an ordinary :class:`~trainproof.findings.Report`, so preflight
results go through the same renderers (text, ``--json``, ``--sarif``) and the same
exit-code policy as the run checks.

A family is a package whose ``__init__`` imports no check (its public names are loaded on
first use, :func:`lazy_names`): the rule registry imports each family's ``ids`` module
through it (:func:`trainproof.rules.registry.preflight_id_modules`), so documenting the ids
or judging a run loads no check.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..findings import MUTED, Finding, Report, Skip
from ..rules.registry import MODULE_OF, all_rules, canonical_id, get

if TYPE_CHECKING:
    from ..config import Config
    from ..rules.thresholds import Thresholds


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


def apply_mute(rep: Report, mute: Iterable[str], also: Iterable[str] = ()) -> Report:
    """Mute ``mute`` in a preflight report the way the rule engine does: a muted id is
    neither a finding nor in ``ran``, and is in ``skipped`` with reason ``muted``
    (:data:`~trainproof.findings.MUTED`). The ids muted are those of the check that made
    the report (the preflight family its ids were declared in), whether or not they would
    have fired; an id of another family is not this report's to list. ``also``: further ids
    the report's checks could have reported (their families count as the report's).
    Idempotent; returns a new report (``rep`` itself when nothing is muted). Ids in any
    case (``tp-env-torch``)."""
    mute = {canonical_id(m) if isinstance(m, str) else m for m in mute}
    if not mute:
        return rep
    own = {*rep.ran, *rep.skipped, *(f.id for f in rep.findings), *also}
    families = {MODULE_OF[i] for i in own if i in MODULE_OF}
    if not families:
        all_rules()  # the declarations, loaded once
        families = {MODULE_OF[i] for i in own if i in MODULE_OF}
    ids = [r.id for r in all_rules() if MODULE_OF.get(r.id) in families and r.id in mute]
    return replace(
        rep,
        findings=[f for f in rep.findings if f.id not in mute],
        ran=[i for i in rep.ran if i not in mute],
        skipped={**rep.skipped, **dict.fromkeys(ids, MUTED)},
    )


@dataclass
class Outcome:
    """What one preflight check found.

    Attributes:
        findings: its findings, in order.
        ran: the ids it judged; ``None`` means the ids of ``findings``.
        skipped: id -> :class:`~trainproof.findings.Skip` for ids it could not judge.
        notes: lines for the report's notes.
        meta: facts for the report's ``meta`` (merged, later checks win).
        items: how many things it looked at (the report's ``records``).
        error: a one-line reason when the subject could not be read at all; the report is
            then NOT-CHECKED whatever else it holds.
    """

    findings: list[Finding] = field(default_factory=list)
    ran: list[str] | None = None
    skipped: dict[str, Skip] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    items: int = 0
    error: str | None = None


@dataclass(frozen=True)
class Check:
    """One pure preflight check: no click, no printing, no exit.

    Attributes:
        ids: the declared ids it may report (the family's ``ids`` module); when every one
            of them is muted the check does not run and they are skipped, reason ``muted``.
        fn: called with the thresholds in force; returns an :class:`Outcome`, or an
            iterable of findings (then it judged the ids it reported).
        name: what it checks, for messages and tests.
    """

    ids: tuple[str, ...]
    fn: Callable[[Thresholds], Outcome | Iterable[Finding]]
    name: str = ""


def run(
    checks: Iterable[Check],
    config: Config | None = None,
    *,
    file: str,
    kind: str,
    meta: dict | None = None,
    notes: Iterable[str] = (),
) -> Report:
    """Run preflight ``checks`` in order and build their one :class:`~trainproof.findings.Report`.

    ``config`` (default: the defaults, nothing muted) gives the thresholds each check is
    called with and the ids muted: a check whose ids are all muted is not run; every muted
    id of the family is reported skipped with reason ``muted`` (see :func:`apply_mute`),
    as the rule engine does. ``file`` and ``kind`` are the report's subject and ``format``;
    ``meta`` and ``notes`` start the report's. The first check error becomes the report's
    ``error``; later checks still run.

    Raises:
        whatever a check raises (a check reports what it cannot read as an Outcome error).
    """
    from ..rules.thresholds import DEFAULT

    th = config.thresholds if config is not None else DEFAULT
    mute = set(config.mute) if config is not None else set()
    findings: list[Finding] = []
    ran: list[str] = []
    skipped: dict[str, Skip] = {}
    all_notes = list(notes)
    all_meta = dict(meta or {})
    items = 0
    error: str | None = None
    declared: set[str] = set()
    for check in checks:
        declared.update(check.ids)
        if check.ids and set(check.ids) <= mute:
            continue
        out = check.fn(th)
        if not isinstance(out, Outcome):
            out = Outcome(findings=list(out))
        findings.extend(out.findings)
        for rid in out.ran if out.ran is not None else (f.id for f in out.findings):
            if rid not in ran:
                ran.append(rid)
        skipped.update(out.skipped)
        all_notes.extend(out.notes)
        all_meta.update(out.meta)
        items += out.items
        if error is None:
            error = out.error
    rep = Report(
        file=file,
        format=kind,
        records=items,
        findings=findings,
        ran=ran,
        skipped=skipped,
        meta=all_meta,
        notes=all_notes,
        error=error,
    )
    # The muted ids of checks that did not run are this report's too.
    return apply_mute(rep, mute, also=declared)


def lazy_names(package: str, where: dict[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` (PEP 562) of a family package whose
    ``__init__`` imports no check: ``where`` maps each public name to the module of the
    package that defines it, imported on first use; a submodule's name (``speech.audio``)
    imports that submodule. So the rule registry can import the family's ``ids`` module
    through the package without loading a check.

    The ``__getattr__`` raises AttributeError for a name that is neither.
    """
    import importlib

    def __getattr__(name: str):
        if name in where:
            value = getattr(importlib.import_module(f"{package}.{where[name]}"), name)
        else:
            try:
                value = importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as e:
                if e.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return __getattr__, __dir__
