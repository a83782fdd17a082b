"""Turning parsed JSON values into the record model's numbers.

A non-finite number has many spellings besides the JSON tokens ``NaN``/``Infinity``:
strict serializers (orjson, ``JSON.stringify``, ``pandas.to_json``) write ``null``,
loggers that keep their JSON strict write the string ``"nan"`` or ``"inf"``, and the
Windows C runtime prints ``1.#QNAN``, ``-1.#IND``, ``1.#INF`` or ``-nan(ind)``.
:func:`nonfinite` reads the strings; a ``null`` is reported as a *hole* (see
:func:`flatten_numeric`), whose meaning the column's history decides
(:class:`trainproof.runlog.RunLogBuilder`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping


def _int_or_float(s: str) -> int | float:
    # Python refuses to parse integers of more than 4300 digits (a ValueError that is not
    # a JSONDecodeError); such a number reads as the float it rounds to (±inf), the same
    # value :func:`flatten_numeric` gives an integer too large for a float.
    try:
        return int(s)
    except ValueError:
        return float(s)


class _Decoder(json.JSONDecoder):
    """The standard decoder, with a document nested deeper than the interpreter's
    recursion limit (``[[[[…``) raised as :class:`json.JSONDecodeError`, a ValueError like
    every other document that is not JSON, instead of :class:`RecursionError`."""

    def decode(self, s, *args, **kwargs):
        try:
            return super().decode(s, *args, **kwargs)
        except RecursionError:
            raise json.JSONDecodeError("nested too deeply to decode", s[:64], 0) from None


#: The JSON decoder every reader uses: ``NaN``/``Infinity`` tokens allowed, huge integers
#: read as floats instead of raising, too deep a nesting a ValueError (:class:`_Decoder`).
JSON = _Decoder(parse_int=_int_or_float)


#: Objects nested deeper than this inside a record are not metrics (a W&B export nests
#: two or three levels); they are left out instead of recursing without bound.
MAX_DEPTH = 32

#: A list of more numbers than this is no set of parameter-group learning rates (a
#: model has a handful of groups; a list of thousands is data, not a metric).
MAX_GROUPS = 64


def _numbers(v: list) -> list[float] | None:
    """The list's values as floats when every one is a plain number (no boolean, string
    or null) and there are 1 to :data:`MAX_GROUPS` of them, else ``None``."""
    if not v or len(v) > MAX_GROUPS:
        return None
    if any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in v):
        return None
    return [_float(x) for x in v]


def _float(x: int | float) -> float:
    """A JSON number as a float; an integer too large for one is ±inf."""
    try:
        return float(x)
    except OverflowError:
        return float("inf") if x > 0 else float("-inf")


def _list_values(key: str, v: list, out: dict) -> None:
    """A list of numbers under ``key``: one number is that value (a scalar a logger
    wrapped, ``scheduler.get_last_lr()`` of one group); several under a learning-rate
    name are the rates of the optimiser's parameter groups, ``key/group0``,
    ``key/group1``, … (the names a group's rate has when logged one per key). Any
    other list is absent: its positions have no meaning the reader can name."""
    xs = _numbers(v)
    if xs is None:
        return
    if len(xs) == 1:
        out[key] = xs[0]
        return
    from ..aliases.table import alias_rank

    if alias_rank("lr", key) is not None:
        for i, x in enumerate(xs):
            out[f"{key}/group{i}"] = x


#: The Windows C runtime's spellings of NaN and infinity (``printf`` before Visual Studio
#: 2015 writes ``1.#QNAN0``, ``-1.#IND00``, ``1.#INF00``; the current one ``-nan(ind)``),
#: and C99's ``nan(chars)``. Python's own spellings (``nan``, ``inf``, ``infinity``, any
#: case, signed) are what ``float()`` accepts.
_C_RUNTIME = re.compile(r"([+-]?)(?:1\.#(QNAN|SNAN|IND|INF)0*|nan\([0-9a-z_]*\))", re.IGNORECASE)
_PYTHON = frozenset(("nan", "inf", "infinity"))
#: Longer strings are never a spelling of NaN or infinity (``-infinity`` is 9 characters,
#: ``-1.#QNAN00000`` 13); the bound keeps a long string from being examined at all.
_LONGEST = 24


def nonfinite(s: str) -> float | None:
    """The non-finite float that ``s`` spells (NaN, ``inf`` or ``-inf``), or ``None``.

    Accepts what ``float()`` reads as non-finite (``nan``, ``NaN``, ``-inf``,
    ``Infinity``, …, surrounding blanks allowed) and the Windows C runtime and C99
    spellings (``1.#QNAN``, ``-1.#IND``, ``1.#INF``, ``-1.#INF``, ``nan(ind)``,
    ``-nan(ind)``). A finite number written as a string is not accepted: it stays a
    string, as every other string does.
    """
    if len(s) > _LONGEST:
        return None
    t = s.strip()
    if t.lstrip("+-").lower() in _PYTHON and len(t) - len(t.lstrip("+-")) <= 1:
        return float(t)
    m = _C_RUNTIME.fullmatch(t)
    if m is None:
        return None
    if (m.group(2) or "").upper() == "INF":
        return -math.inf if m.group(1) == "-" else math.inf
    return math.nan


#: Strings that say a value is missing, compared lower-cased and stripped: Python's
#: ``None`` (``str(None)``), JSON's and SQL's ``null``, R's and pandas' ``NA``/``<NA>``/
#: ``NaT``, spreadsheets' ``#N/A``, ``n/a``, an empty string. A missing value is absent
#: (a hole), never NaN: only a spelled non-finite number is NaN (:func:`nonfinite`).
ABSENT = frozenset(("", "none", "null", "nil", "na", "n/a", "#n/a", "<na>", "nat", "undefined", "missing"))

#: A decimal number written as a string (``"0.53"``, ``"-1e-3"``); the exponent has at
#: most three digits, so a hexadecimal id such as ``"7e123456"`` stays a string.
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d{1,3})?")

#: A scalar printed by its framework: ``str(tensor)`` (``tensor(0.53)``, ``tensor(0.53,
#: device='cuda:0', grad_fn=<NllLossBackward0>)``), numpy 2's ``repr`` (``np.float32(0.53)``)
#: and TensorFlow's ``tf.Tensor(0.53, shape=(), dtype=float32)``: the first argument is the
#: value.
_WRAPPED = re.compile(
    r"(?:tensor|tf\.Tensor|(?:np|numpy)\.(?:float|int|uint)(?:16|32|64|8)?)\(\s*([^\s,()\[\]]{1,40})\s*(?:,[^\n]*)?\)"
)

#: Longer strings are not read as numbers (a printed tensor with its device and gradient
#: function is under 100 characters).
_LONGEST_NUMBER = 200


def is_absent(s: str) -> bool:
    """True when the string ``s`` says the value is missing (:data:`ABSENT`)."""
    return len(s) <= 16 and s.strip().lower() in ABSENT


def string_number(s: str) -> float | None:
    """The number a string holds, or ``None`` when it holds none.

    Read: a non-finite spelling (:func:`nonfinite`), a decimal number (``"0.53"``, what
    a logger that writes every value as a string gives) and a framework's printed scalar
    (``tensor(0.53, device='cuda:0', grad_fn=…)``, ``np.float32(0.53)``,
    ``tf.Tensor(0.53, shape=(), dtype=float32)``; ``tensor(nan)`` is NaN). Anything else,
    a missing-value word (:func:`is_absent`) included, is ``None``.
    """
    if len(s) > _LONGEST_NUMBER:
        return None
    t = s.strip()
    if _DECIMAL.fullmatch(t):
        return float(t)
    m = _WRAPPED.fullmatch(t)
    if m is not None:
        inner = m.group(1)
        if _DECIMAL.fullmatch(inner):
            return float(inner)
        return nonfinite(inner)
    return nonfinite(t)


def flatten_numeric(
    obj: Mapping, prefix: str = "", out: dict | None = None, depth: int = 0, holes: list | None = None
) -> dict[str, float]:
    """Flatten nested dicts to ``a/b`` keys, keeping only numbers.

    ``int`` and ``float`` become ``float`` (NaN and ±Inf kept), and so does a string that
    holds a number (:func:`string_number`: ``"0.53"``, ``"nan"``, ``"tensor(0.53)"``). An
    object ``{"value": x}`` (a logger's wrapped scalar) is read as ``x`` under its own key.
    A list of numbers is read by :func:`_list_values` (one number: its value; several under
    a learning-rate name: one rate per parameter group). Booleans, other strings, other
    lists and nulls are absent: a non-number is never read as 0 or 1. Objects nested more
    than :data:`MAX_DEPTH` levels down are absent too.

    Args:
        holes: when given, the keys whose value is ``null`` or a missing-value word
            (:func:`is_absent`: ``"None"``, ``"#N/A"``, ``"<NA>"``, ``""``) are appended to
            it (a key not logged in this row).
    """
    if out is None:
        out = {}
    if depth > MAX_DEPTH:
        return out
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if v is None:
            if holes is not None:
                holes.append(key)
            continue
        if isinstance(v, bool):
            continue
        if isinstance(v, str):
            x = string_number(v)
            if x is not None:
                out[key] = x
            elif holes is not None and is_absent(v):
                holes.append(key)
        elif isinstance(v, (int, float)):
            out[key] = _float(v)
        elif isinstance(v, list):
            _list_values(key, v, out)
        elif isinstance(v, Mapping):
            if len(v) == 1 and "value" in v and not isinstance(v["value"], Mapping):
                flatten_numeric({k: v["value"]}, prefix, out, depth + 1, holes)
            else:
                flatten_numeric(v, key + "/", out, depth + 1, holes)
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
