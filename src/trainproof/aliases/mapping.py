"""The mapping: one raw key per canonical metric, and the ``--map`` overrides that choose it
by hand.

:func:`resolve` is where the parts meet: the ``--map`` overrides first, then the alias
table's ranking (:mod:`.table`), then, for the train and eval loss when no alias names
them, the loss fallback (:mod:`.loss_fallback`). Its result is the report's ``mapping``.
``--map`` parsing lives here beside it: both check a user's mapping and raise the one error
it can cause (:class:`MappingError`, exit 2 on the command line).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .loss_fallback import fallback_entry
from .table import CANONICAL, alias_rank, is_step_key


class MappingError(ValueError):
    """A ``--map`` override that cannot be applied (unknown canonical name or column)."""


def parse_map_option(items: Iterable[str]) -> dict[str, str]:
    """Parse ``CANON=COLUMN`` strings from ``--map``.

    Raises:
        MappingError: when an item has no ``=``, an empty side, or an unknown canonical name.
    """
    out: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise MappingError(f"--map expects CANON=COLUMN, got {item!r}")
        canon, col = (s.strip() for s in item.split("=", 1))
        if not canon or not col:
            raise MappingError(f"--map expects CANON=COLUMN, got {item!r}")
        if canon not in CANONICAL:
            raise MappingError(f"--map: unknown canonical name {canon!r}; known: {', '.join(CANONICAL)}")
        if canon in out and out[canon] != col:
            raise MappingError(f"--map {canon} given twice ({out[canon]!r} and {col!r})")
        out[canon] = col
    return out


def resolve(raw_keys: Iterable[str], overrides: Mapping[str, str] | None = None) -> dict[str, dict]:
    """Choose one raw key per canonical metric.

    Args:
        raw_keys: every raw metric key seen in the log.
        overrides: canonical -> raw key from ``--map``; each must name an existing key.

    Returns:
        canonical -> ``{"source": raw_key, "ignored": [other candidates], "how": "alias"|"map"|"fallback"}``;
        a loss found by the fallback order (:mod:`.loss_fallback`) also carries
        ``"why"`` (a short sentence) and, when it is a synthesized sum of components,
        ``"sum_of"`` (the component keys; ``source`` is then their names joined by ``+``).

    Raises:
        MappingError: when an override names a column the log does not have, or a column
            another override already took.
    """
    keys = sorted(set(raw_keys))
    overrides = dict(overrides or {})
    out: dict[str, dict] = {}
    taken: set[str] = set()
    for canon, col in overrides.items():
        if col not in keys:
            near = ", ".join(keys[:30]) or "(none)"
            raise MappingError(f"--map {canon}={col}: the log has no column {col!r}; columns: {near}")
        if col in taken:
            # One column feeds one series: a second name for it would leave the first
            # canonical metric mapped in ``mapping`` but missing from the RunLog's series.
            other = next(c for c, m in out.items() if m["source"] == col)
            raise MappingError(f"--map {canon}={col}: column {col!r} is already mapped to {other}")
        out[canon] = {"source": col, "ignored": [], "how": "map"}
        taken.add(col)
    for canon in CANONICAL:
        if canon in out:
            continue
        if canon in ("loss", "eval_loss") and not any(
            alias_rank(canon, k) is not None for k in keys if k not in taken and not is_step_key(k)
        ):
            # A key another canonical metric's alias names is that metric, never a fallback loss.
            free = [
                k
                for k in keys
                if k not in taken and not is_step_key(k) and not any(alias_rank(c, k) is not None for c in CANONICAL)
            ]
            m = fallback_entry(canon, free)
            if m is not None:
                out[canon] = m
                taken.update(m.get("sum_of") or [m["source"]])
            continue
        cands = []
        for k in keys:
            if k in taken or is_step_key(k):
                continue
            r = alias_rank(canon, k)
            if r is not None:
                cands.append((r, k))
        if not cands:
            continue
        cands.sort()
        chosen = cands[0][1]
        out[canon] = {"source": chosen, "ignored": [k for _, k in cands[1:]], "how": "alias"}
        taken.add(chosen)
    return out
