"""The rule registry: every ``TP-*`` id is declared once, with its documentation.

A rule is a function decorated with :func:`rule`. The decorator records the id (stable
forever), the default level, the check group, the series the rule needs and how many
points, a one-line summary and the documentation sections (what it detects, why it
matters, what it does NOT mean, likely causes, what to try). The engine
(:mod:`trainproof.rules.engine`) decides from ``needs`` whether the rule runs; the
function only sees data it can judge and yields :class:`~trainproof.findings.Finding`
objects through ``ctx.finding``.

The section "What it does NOT mean" (``not_mean``) of a FAIL rule names the healthy run
shapes that look most like its signature; each has a negative test (see the thresholds
module on what a FAIL may rest on).

Outcome ids (``TP-PASS``, ``TP-NOT-CHECKED``, ``TP-NO-LOSS``, …) are declared with
:func:`outcome`: they have documentation but no check function.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

from ..findings import Level

if TYPE_CHECKING:
    from .thresholds import Thresholds

#: The attributes of a :class:`Rule` written in prose, which may name thresholds as
#: ``{name}`` or ``{name:spec}`` placeholders (:meth:`Rule.text` fills them in).
PROSE = ("summary", "detects", "why", "not_mean", "causes", "try_", "least_evidence")

#: The prose sections of a rule's page, in page order (:meth:`Rule.doc_markdown` puts the
#: Example and Thresholds in force sections between the first two and the rest).
DOC_SECTIONS = (
    ("detects", "What it detects"),
    ("why", "Why it matters"),
    ("causes", "Likely causes"),
    ("try_", "What to try"),
    ("not_mean", "What it does NOT mean"),
)


@dataclass(frozen=True)
class Need:
    """A series a rule needs.

    Attributes:
        series: canonical name, or a tuple of names of which any one will do.
        min_points: minimum number of finite points; an int, or the name of a threshold.
        positive: the rule is a ratio of loss levels: every finite value must be > 0,
            else the rule is skipped as ``degenerate``.
        varying: skipped as ``degenerate`` when every finite value is the same.
        finite: count only finite points toward ``min_points`` (rules about NaN/Inf
            themselves set this to False: an all-NaN series is exactly what they judge).
        all_finite: skipped as ``degenerate`` when any value is NaN or ±Inf: the shape of
            a curve with holes is not judged (the NaN rules judge the holes).
        signed: the rule judges a loss on its own additive scale, for a loss that goes
            below 0: skipped as ``not_applicable`` when no finite value is < 0 (the ratio
            rules, ``positive``, judge a positive loss, and the zero-loss rules a loss at 0).
    """

    series: str | tuple[str, ...]
    min_points: int | str = 1
    positive: bool = False
    varying: bool = False
    finite: bool = True
    all_finite: bool = False
    signed: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        return (self.series,) if isinstance(self.series, str) else tuple(self.series)


#: The kinds of training objective (see :mod:`trainproof.rules.objective_kind`); a rule
#: judges all of them unless it names fewer.
OBJECTIVES = ("supervised", "rl", "adversarial", "lr_range_test")


@dataclass(frozen=True)
class Rule:
    """One ``TP-*`` id and everything about it."""

    id: str
    level: Level
    group: str
    summary: str
    detects: str
    why: str
    not_mean: str
    causes: str
    try_: str
    needs: tuple[Need, ...] = ()
    thresholds: tuple[str, ...] = ()
    verdict_bearing: bool = False
    source: str = "single_run"
    objectives: tuple[str, ...] = OBJECTIVES
    min_schedule_share: str | None = None
    after_warmup: bool = False
    implies: tuple[str, ...] = ()
    implied_by: tuple[str, ...] = ()
    least_evidence: str = ""
    check: Callable | None = field(default=None, compare=False)

    @property
    def is_outcome(self) -> bool:
        return self.check is None

    def text(self, attr: str, th: Thresholds | None = None) -> str:
        """The prose attribute ``attr`` (one of :data:`PROSE`) with its threshold
        placeholders filled in from ``th`` (default: the default thresholds).

        A placeholder is ``{name}`` (the value as RULES.md's table writes it: ``5``,
        ``1.5``, ``1e-6``) or ``{name:spec}`` with a format spec (``{flat_rel_std:.1%}``
        gives ``0.1%``); ``{{`` and ``}}`` are literal braces.

        Raises:
            KeyError: a placeholder names no threshold.
            ValueError: ``attr`` is not a prose attribute, or a placeholder is malformed.
        """
        if attr not in PROSE:
            raise ValueError(f"{attr!r} is not a prose attribute of a rule ({', '.join(PROSE)})")
        raw = getattr(self, attr)
        if "{" not in raw and "}" not in raw:
            return raw
        from .thresholds import DEFAULT

        return raw.format_map(_Values(DEFAULT if th is None else th))

    @cached_property
    def hint(self) -> str:
        """Short remediation hint with the default thresholds (see :meth:`hint_for`)."""
        return self._hint(None)

    def hint_for(self, th: Thresholds | None) -> str:
        """Short remediation hint: likely causes, then what to try (first sentences), with
        the numbers of ``th`` (``None`` or the defaults: :attr:`hint`, computed once)."""
        from .thresholds import DEFAULT

        return self.hint if th is None or th is DEFAULT or th == DEFAULT else self._hint(th)

    def _hint(self, th: Thresholds | None) -> str:
        return f"Likely: {_first_sentence(self.text('causes', th))} Try: {_first_sentence(self.text('try_', th))}"

    def doc_markdown(self, heading: str = "#", th: Thresholds | None = None, example: str = "") -> str:
        """The rule's documentation in Markdown, in the one shape every rule page has (what
        ``docs/rules/<ID>.md`` holds and ``trainproof rules ID`` prints): the title, a line
        with the level, group and the series it needs (and its least evidence, for a rule
        that may fail a run), then the sections What it detects, Why it matters, Example
        (``example``, already rendered Markdown, see :func:`trainproof.rules.docs.example_markdown`;
        left out when empty), Thresholds in force (each with its value and the reason for its
        default), Likely causes, What to try and What it does NOT mean.

        Args:
            heading: the title's heading marker; the sections are one level below it.
            th: the thresholds whose numbers the text states (default: the defaults); a value
                other than the default is marked with the default.
            example: the Example section's body.
        """
        from .thresholds import DEFAULT, reason, shown, unit_of

        sub = heading + "#"
        parts = [f"{heading} {self.id} — {self.text('summary', th)}", ""]
        line = f"Level **{self.level.value}** · group `{self.group}`" + (
            " · needs " + ", ".join(_need_text(n, th) for n in self.needs) if self.needs else ""
        )
        if self.implies:
            line += (
                " · when it fires it explains "
                + ", ".join(f"`{i}`" for i in self.implies)
                + " (listed as implied, not reported again)"
            )
        if set(self.objectives) != set(OBJECTIVES) and not self.is_outcome:
            line += (
                " · objectives "
                + ", ".join(f"`{o}`" for o in self.objectives)
                + " (skipped as `objective: …` on the others)"
            )
        parts += [line, ""]
        least = self.least_evidence_text(th)
        if least:
            parts += [f"**Least evidence.** {least}", ""]

        def section(title: str, body: str) -> None:
            parts.extend([f"{sub} {title}", "", body.rstrip(), ""])

        for attr, title in DOC_SECTIONS[:2]:
            section(title, self.text(attr, th))
        if example:
            section("Example", example)
        if self.thresholds:
            values = DEFAULT if th is None else th
            rows, said = [], set()
            for name in self.thresholds:
                value, default = getattr(values, name), getattr(DEFAULT, name)
                note = f"; default {shown(default)}" if value != default else ""
                see = type(values).__dataclass_fields__[name].metadata.get("see")
                why = f"read with `{see}`, above." if see in said else reason(name)
                said.add(name)
                rows.append(f"- `{name}` = {shown(value)} ({unit_of(name)}{note}): {why}")
            section("Thresholds in force", "\n".join(rows))
        for attr, title in DOC_SECTIONS[2:]:
            section(title, self.text(attr, th))
        return "\n".join(parts).rstrip() + "\n"

    def least_evidence_text(self, th: Thresholds | None = None) -> str:
        """What a FAIL rule needs before it may fail a run, in one paragraph: the points of
        each series it needs, the share of the scheduled run and the end of warm-up the engine
        waits for, and the rule's own ``least_evidence``. For a rule of another level, only the
        schedule share and warm-up it waits for; empty when it has neither, and for outcomes.
        The numbers are those of ``th`` (default: the default thresholds)."""
        gated = bool(self.min_schedule_share or self.after_warmup)
        if self.is_outcome or (self.level is not Level.FAIL and not gated):
            return ""
        from .thresholds import DEFAULT

        th = DEFAULT if th is None else th
        bits = []
        for n in self.needs if self.level is Level.FAIL else ():
            mp = n.min_points
            k = getattr(th, mp) if isinstance(mp, str) else mp
            names = " or ".join(f"`{x}`" for x in n.names)
            bits.append(f"{k} {'finite ' if n.finite else ''}point{'s' if k != 1 else ''} of {names}")
        if self.min_schedule_share:
            bits.append(
                f"{getattr(th, self.min_schedule_share):.0%} of the scheduled run where the log "
                "declares its schedule (skipped as `too_little_of_schedule` below it)"
            )
        if self.after_warmup:
            bits.append("a learning rate no longer warming up (skipped as `warmup` while it rises)")
        text = "Needs " + "; ".join(bits) + "." if bits else ""
        if self.least_evidence:
            text = (text + " " if text else "") + self.text("least_evidence", th)
        return text


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    for i, ch in enumerate(text):
        if ch == "." and (i + 1 == len(text) or text[i + 1] == " "):
            return text[: i + 1]
    return text


class _Values:
    """Threshold values by name for :meth:`str.format_map`, each formatted as RULES.md's
    table writes it unless the placeholder gives a format spec."""

    def __init__(self, th: Thresholds) -> None:
        self.th = th

    def __getitem__(self, name: str) -> _Shown:
        from .thresholds import is_threshold

        if not is_threshold(name):
            raise KeyError(f"rule text names no threshold {name!r}")
        return _Shown(getattr(self.th, name))


class _Shown:
    """One threshold value in rule text: ``{name}`` is :func:`thresholds.shown` (``1e-6``,
    not Python's ``1e-06``), ``{name:spec}`` is ``format(value, spec)``."""

    def __init__(self, value: int | float) -> None:
        self.value = value

    def __format__(self, spec: str) -> str:
        from .thresholds import shown

        return format(self.value, spec) if spec else shown(self.value)


def _need_text(n: Need, th: Thresholds | None = None) -> str:
    from .thresholds import DEFAULT

    names = " or ".join(f"`{s}`" for s in n.names)
    mp = n.min_points
    if isinstance(mp, str):
        return f"{names} (≥ {getattr(DEFAULT if th is None else th, mp)} points, `{mp}`)"
    return f"{names} (≥ {mp} points)" if mp != 1 else names


REGISTRY: dict[str, Rule] = {}


#: The module that declared each id (for :func:`canonical_order`).
MODULE_OF: dict[str, str] = {}


def _register(r: Rule, module: str) -> Rule:
    if not r.id.startswith("TP-"):
        raise ValueError(f"rule id must start with TP-: {r.id}")
    if r.id in REGISTRY:
        raise ValueError(f"duplicate rule id {r.id}")
    REGISTRY[r.id] = r
    MODULE_OF[r.id] = module
    return r


def canonical_order(modules: list[str]) -> None:
    """Reorder :data:`REGISTRY` by the declaring module's place in ``modules`` (then by
    declaration order), whatever order the modules happened to be imported in."""
    rank = {m: i for i, m in enumerate(modules)}
    ids = sorted(
        REGISTRY,
        key=lambda i, pos={k: n for n, k in enumerate(REGISTRY)}: (rank.get(MODULE_OF.get(i, ""), len(rank)), pos[i]),
    )
    rules = {i: REGISTRY[i] for i in ids}
    REGISTRY.clear()
    REGISTRY.update(rules)


class CannotJudge(Exception):
    """Raised by a rule's check, before it yields a finding, when the run lacks what the
    check needs and its declared :class:`Need` cannot say so (a series the rule finds by
    its raw key, a sign it cannot judge): the engine records the rule as skipped with
    ``reason`` (``absent``, ``too_few_points``, ``not_applicable``, ``degenerate``) and
    ``detail``, never as a check that ran and found nothing."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def rule(
    id: str,
    level: Level,
    group: str,
    summary: str,
    *,
    detects: str,
    why: str,
    not_mean: str,
    causes: str,
    try_: str,
    needs: Iterable[Need] = (),
    thresholds: Iterable[str] = (),
    verdict_bearing: bool = False,
    source: str = "single_run",
    objectives: Iterable[str] = OBJECTIVES,
    min_schedule_share: str | None = None,
    after_warmup: bool = False,
    implies: Iterable[str] = (),
    implied_by: Iterable[str] = (),
    least_evidence: str = "",
):
    """Register the decorated ``check(ctx)`` generator as rule ``id``.

    ``objectives`` lists the kinds of training objective the rule can judge (see
    :mod:`trainproof.rules.objective_kind`); on any other the engine skips it with the typed
    reason ``objective: <kind>``.

    ``min_schedule_share`` names the threshold giving the least share of the scheduled run
    the log must cover, where the log declares its schedule, before the rule may judge (a
    rule that claims nothing happened cannot say so 5% into a run); below it the engine
    skips the rule as ``too_little_of_schedule``. ``after_warmup``: the engine skips the
    rule as ``warmup`` while the logged learning rate is still rising at the last point.

    ``implies``: ids of less specific rules that this one explains when both fire on a
    run (a divergence also "did not improve"); the engine keeps this rule's finding,
    drops theirs and lists them as implied in its ``data["implies"]``. ``implied_by``: the
    same relation declared from the other side, ids of more specific rules that explain this
    one; :func:`load_all` adds this id to each of their ``implies``, so that a link sits
    beside the rule it concerns, whichever module declares the other.

    ``least_evidence``: for a FAIL rule, what beyond its declared points it needs before it
    may fail a run (the noise measured, a share of the points); RULES.md prints it with
    the points, schedule share and warm-up the engine enforces.
    """

    def deco(fn: Callable) -> Callable:
        _register(
            Rule(
                id=id,
                level=level,
                group=group,
                summary=summary,
                detects=detects,
                why=why,
                not_mean=not_mean,
                causes=causes,
                try_=try_,
                needs=tuple(needs),
                thresholds=tuple(thresholds),
                verdict_bearing=verdict_bearing,
                source=source,
                objectives=tuple(objectives),
                min_schedule_share=min_schedule_share,
                after_warmup=after_warmup,
                implies=tuple(implies),
                implied_by=tuple(implied_by),
                least_evidence=least_evidence,
                check=fn,
            ),
            fn.__module__,
        )
        return fn

    return deco


def outcome(id: str, level: Level, group: str, summary: str, module: str | None = None, **docs: str) -> Rule:
    """Register an outcome id (documentation only, emitted by the engine or the CLI).

    ``module``: the declaring module, for the registry order (default: the caller's).
    """
    return _register(
        Rule(id=id, level=level, group=group, summary=summary, **docs),
        module or sys._getframe(1).f_globals.get("__name__", ""),
    )


def declare(rule_id: str, level: Level, group: str, summary: str, **docs: str) -> Rule:
    """Register a preflight id with its documentation (source ``preflight``; declared in the
    family's ``ids`` module beside the checks of :mod:`trainproof.preflight` that emit it;
    see :func:`preflight_id_modules`).

    Raises:
        ValueError: the id does not start with ``TP-`` or is already declared.
    """
    return outcome(
        rule_id, level, group, summary, module=sys._getframe(1).f_globals.get("__name__"), source="preflight", **docs
    )


#: The rule modules, in the order their rules run and are listed. The registry imports them
#: by name, so it imports none of them at module level. A rule in a new module is one line
#: here.
RULE_MODULES = tuple(
    f"trainproof.rules.{m}"
    for m in (
        "loss",
        "grad",
        "lr",
        "evals",
        "perf",
        "updates",
        "model",
        "signatures",
        "rl",
        "adversarial",
        "intent",
        "reading",
        "compare",
        "history",
        "outcomes",
    )
)


#: The name of the module of a preflight family's package (``trainproof.preflight.<family>``)
#: that declares the ids its checks emit, with their documentation, beside those checks.
PREFLIGHT_IDS_MODULE = "ids"


def preflight_id_modules() -> list[str]:
    """The modules that declare preflight ids: each family package's ``ids`` module
    (``trainproof.preflight.<family>.ids``, :data:`PREFLIGHT_IDS_MODULE`, beside the checks
    that emit them), in the order of their ``ORDER`` (then name). They are found by listing
    the family folders, so a new family's declarations need no registration line; a family
    package imports no check on import (``lazy_names``), so neither does this.

    Raises:
        ImportError: a declaration module that does not import.
    """
    import importlib
    import os
    import pkgutil

    # By name, as the rule modules: the registry imports no declaring module by statement.
    preflight = importlib.import_module(f"{__package__.rpartition('.')[0]}.preflight")
    names = []
    for fam in pkgutil.iter_modules(preflight.__path__):
        # The family's folder is listed, not imported: only a family with an ids module is.
        if fam.ispkg and not fam.name.startswith("_"):
            inside = pkgutil.iter_modules([os.path.join(fam.module_finder.path, fam.name)])
            if any(m.name == PREFLIGHT_IDS_MODULE for m in inside):
                names.append(f"{preflight.__name__}.{fam.name}.{PREFLIGHT_IDS_MODULE}")
    found = [importlib.import_module(n) for n in names]
    return [m.__name__ for m in sorted(found, key=lambda m: (getattr(m, "ORDER", len(found)), m.__name__))]


def id_modules() -> list[str]:
    """Every module that declares ids, in listing order: the preflight checks' id
    declarations (:func:`preflight_id_modules`), then :data:`RULE_MODULES`."""
    return [*preflight_id_modules(), *RULE_MODULES]


_loaded = False


def load_all() -> None:
    """Import every module of :func:`id_modules` once, registering its ids, and put the
    registry in their order."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib

    modules = id_modules()
    for m in modules:
        importlib.import_module(m)
    canonical_order(modules)
    resolve_implied()


def resolve_implied() -> None:
    """Fold every rule's ``implied_by`` into the ``implies`` of the rules it names, in
    registry order (each id after the explaining rule's own ``implies``), and check that
    every id either side names is declared.

    Raises:
        ValueError: an ``implies`` or ``implied_by`` id that no module declares, or a rule
            that names itself.
    """
    for r in list(REGISTRY.values()):
        for other in (*r.implies, *r.implied_by):
            if other == r.id:
                raise ValueError(f"{r.id} names itself in implies/implied_by")
            if other not in REGISTRY:
                raise ValueError(f"{r.id} names {other} in implies/implied_by, and no module declares {other}")
        for other in r.implied_by:
            explaining = REGISTRY[other]
            if r.id not in explaining.implies:
                REGISTRY[other] = replace(explaining, implies=(*explaining.implies, r.id))


def all_rules() -> list[Rule]:
    """Every declared id, in :func:`id_modules` order (preflight ids, rules and outcomes)."""
    load_all()
    return list(REGISTRY.values())


def canonical_id(text: str) -> str:
    """A rule id as a user may type it (``tp-nan``, `` Tp-Nan ``) in the registry's spelling
    (``TP-NAN``): ids are upper case, so the case a user types never matters."""
    return text.strip().upper()


def get(rule_id: str) -> Rule | None:
    """The declaration of ``rule_id`` in any case (:func:`canonical_id`), or ``None`` when
    no module declares it."""
    load_all()
    found = REGISTRY.get(rule_id)
    if found is None and isinstance(rule_id, str):
        found = REGISTRY.get(canonical_id(rule_id))
    return found


#: Where the example logs live: ``src/trainproof/rules/examples/<ID>.<ext>`` (package data).
#: A compare rule has a pair instead, ``<ID>.run.jsonl`` and ``<ID>.baseline.jsonl``.
EXAMPLES_DIR = "examples"


def _example_files() -> dict[str, str]:
    """File name -> text of every example log shipped with the package."""
    from importlib.resources import files

    folder = files(__package__).joinpath(EXAMPLES_DIR)
    if not folder.is_dir():
        return {}
    return {f.name: f.read_text(encoding="utf-8") for f in folder.iterdir() if f.is_file()}


def example_of(rule_id: str) -> tuple[str, str] | None:
    """The example log that triggers ``rule_id``: ``(file name, text)``, or ``None`` when
    the id has none (outcomes and preflight ids, judged on no log). For a compare rule it is
    the run judged against the baseline :func:`baseline_of` gives; for a history rule, the run
    judged against the runs :func:`history_of` gives.

    The example is a literal file (``src/trainproof/rules/examples/``): what a user reads on
    the rule's page is the log ``tests/rules/test_rule_examples.py`` judges with the engine.
    """
    found = _example_files()
    for name in sorted(found):
        stem, _, rest = name.partition(".")
        if stem == rule_id and rest.split(".")[0] not in ("baseline", "history"):
            return name, found[name]
    return None


def baseline_of(rule_id: str) -> tuple[str, str] | None:
    """The known-good baseline a compare rule's example run is compared with: ``(file name,
    text)``, or ``None`` for a rule whose example is judged on its own (or that has none)."""
    found = _example_files()
    name = next((n for n in sorted(found) if n.startswith(rule_id + ".baseline.")), None)
    return (name, found[name]) if name else None


def history_of(rule_id: str) -> list[tuple[str, str]]:
    """The recent healthy runs a history rule's example run is judged against: ``(file name,
    text)`` of each ``<ID>.history.<n>.<ext>``, in name order; empty for any other rule."""
    found = _example_files()
    return [(n, found[n]) for n in sorted(found) if n.startswith(rule_id + ".history.")]
