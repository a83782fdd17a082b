"""Turning parsed JSON values into the record model's numbers."""
from __future__ import annotations

import json
from collections.abc import Mapping


def _int_or_float(s: str) -> int | float:
    # Python refuses to parse integers of more than 4300 digits (a ValueError that is not
    # a JSONDecodeError); such a number reads as the float it rounds to (±inf), the same
    # value :func:`flatten_numeric` gives an integer too large for a float.
    try:
        return int(s)
    except ValueError:
        return float(s)


#: The JSON decoder every reader uses: ``NaN``/``Infinity`` tokens allowed, huge integers
#: read as floats instead of raising.
JSON = json.JSONDecoder(parse_int=_int_or_float)


#: Objects nested deeper than this inside a record are not metrics (a W&B export nests
#: two or three levels); they are left out instead of recursing without bound.
MAX_DEPTH = 32


def flatten_numeric(obj: Mapping, prefix: str = "", out: dict | None = None, depth: int = 0) -> dict[str, float]:
    """Flatten nested dicts to ``a/b`` keys, keeping only numbers.

    ``int`` and ``float`` become ``float`` (NaN and ±Inf kept). Booleans, strings, lists
    and nulls are absent: a non-number is never read as 0 or 1. Objects nested more than
    :data:`MAX_DEPTH` levels down are absent too.
    """
    if out is None:
        out = {}
    if depth > MAX_DEPTH:
        return out
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if isinstance(v, bool) or v is None:
            continue
        if isinstance(v, (int, float)):
            try:
                out[key] = float(v)
            except OverflowError:  # an integer too large for a float
                out[key] = float("inf") if v > 0 else float("-inf")
        elif isinstance(v, Mapping):
            flatten_numeric(v, key + "/", out, depth + 1)
    return out


def as_step(v: object) -> float | None:
    """A JSON value as a step number, or ``None`` when it is not a finite number."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if f == f and f not in (float("inf"), float("-inf")) else None
