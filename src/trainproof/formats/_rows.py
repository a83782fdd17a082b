"""Decoding JSON records a chunk at a time into :class:`~trainproof.runlog.Rows`.

A log of a million steps is a million small JSON objects. Parsing them one Python call
at a time, flattening each into a dict of floats and adding it to the columns costs
several microseconds a record; here a chunk of objects is parsed by ``orjson`` (C), the
objects are grouped by their key tuple (C-level ``map``), and each group's numbers become
one float64 block with a single ``numpy`` conversion. Objects that are not plain
``{key: number}`` (nested objects, booleans, strings, nulls, integers too large for a
float) take the exact per-record path (:func:`~trainproof.formats._values.flatten_numeric`),
so the result is always the one the per-record reader gives, ``null`` values included (they
become the batch's holes, :attr:`~trainproof.runlog.Rows.holes`).

``orjson`` refuses some inputs Python's ``json`` accepts (``NaN``/``Infinity`` tokens,
integers beyond 64 bits, lone surrogate escapes); a chunk it refuses is decoded with the
reader's own per-record path instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain, count
from operator import itemgetter

import numpy as np

from .._arrays import unique
from ..runlog import Rows
from ._values import flatten_numeric

try:  # a declared dependency; without it every chunk takes the per-record path
    import orjson

    loads: Callable | None = orjson.loads
    DecodeError: type[Exception] = orjson.JSONDecodeError
except ImportError:  # pragma: no cover - orjson is installed with trainproof
    loads = None
    DecodeError = ValueError

_NUMBER_TYPES = {int, float}


def _group_ids(keys: list) -> tuple[np.ndarray, dict]:
    """``(ids, first)``: ``first`` maps each distinct key tuple to the index where it
    first occurs, ``ids[i]`` is that index for record ``i``."""
    first: dict = {}
    ids = np.fromiter(map(first.setdefault, keys, count()), dtype=np.int64, count=len(keys))
    return ids, first


def _block(objs: Sequence[dict], keys: tuple, no_bools: bool) -> np.ndarray | None:
    """The ``(len(objs), len(keys))`` float64 block of objects that all have ``keys``,
    or ``None`` when a value is not a plain ``int``/``float`` (or an integer too large
    for a float). Raises ``KeyError`` when an object lacks one of ``keys``.

    ``no_bools``: the caller knows no value is a boolean (its text has no ``true`` or
    ``false``), so numpy's own type inference can tell numbers from the rest.
    """
    k = len(keys)
    if k == 0:
        return np.empty((len(objs), 0))
    get = itemgetter(*keys)
    flat = list(chain.from_iterable(map(get, objs))) if k > 1 else list(map(get, objs))
    try:
        if no_bools:
            arr = np.array(flat)
            if arr.dtype.kind not in "fiu" or arr.shape != (len(flat),):
                return None
            if arr.dtype.kind != "f":
                arr = np.array(flat, dtype=np.float64)
        else:
            if not set(map(type, flat)) <= _NUMBER_TYPES:
                return None
            arr = np.array(flat, dtype=np.float64)
    except (OverflowError, ValueError, TypeError):
        return None
    return arr.reshape(len(objs), k)


def rows_from_dicts(
    objs: Sequence[dict], lines: np.ndarray, step_of: Callable[[tuple], str | None], no_bools: bool = False
) -> Rows:
    """Records from parsed JSON objects, as :class:`Rows`.

    Args:
        objs: ``n`` dicts, in record order.
        lines: int64 array ``(n,)``, each object's source line.
        step_of: given a record's (flattened) key tuple, the key holding its step, or
            ``None``; that key's value becomes the record's step (NaN unless finite) and
            is not a metric.
        no_bools: no value anywhere in ``objs`` is a boolean (see :func:`_block`).

    Each record's metrics are ``flatten_numeric(obj)`` minus the step key, and its holes
    the keys that are ``null`` (the step key's excepted), exactly as the per-record
    readers compute them.
    """
    n = len(objs)
    steps = np.full(n, np.nan)
    groups: list = []
    holes: dict[str, list[int]] = {}
    if not n:
        return Rows(steps, np.asarray(lines, dtype=np.int64), groups)
    # Objects of one length that all hold the first one's keys hold exactly those keys
    # (in whatever order): one group, found without building a key tuple per object.
    lens = np.fromiter(map(len, objs), dtype=np.int64, count=n)
    slow: list[np.ndarray] = []
    for length in unique(lens).tolist():
        if length == lens[0] and (lens == length).all():
            pos, sub = np.arange(n), objs
        else:
            pos = np.flatnonzero(lens == length)
            sub = list(map(objs.__getitem__, pos.tolist()))
        keys = tuple(sub[0])
        try:
            vals = _block(sub, keys, no_bools)
        except KeyError:  # several key sets of this length
            ids, first = _group_ids(list(map(tuple, sub)))
            for keys2, gid in first.items():
                sel = np.flatnonzero(ids == gid)
                sub2 = list(map(sub.__getitem__, sel.tolist()))
                vals2 = _block(sub2, keys2, no_bools)
                if vals2 is None:
                    slow.append(pos[sel])
                else:
                    add_group(groups, steps, keys2, pos[sel], vals2, step_of)
            continue
        if vals is None:
            slow.append(pos)
        else:
            add_group(groups, steps, keys, pos, vals, step_of)
    if slow:
        pos_all = np.sort(np.concatenate(slow))
        flat = []
        for i in pos_all.tolist():
            nulls: list = []
            flat.append(flatten_numeric(objs[i], holes=nulls))
            if nulls:
                sk = step_of(tuple(flat[-1]))
                for k in nulls:
                    if k != sk:
                        holes.setdefault(k, []).append(i)
        ids2, first2 = _group_ids(list(map(tuple, flat)))
        for keys, gid in first2.items():
            sel = np.flatnonzero(ids2 == gid)
            sub = list(map(flat.__getitem__, sel.tolist()))
            vals = _block(sub, keys, True)  # flattened values are all floats
            assert vals is not None
            add_group(groups, steps, keys, pos_all[sel], vals, step_of)
    return Rows(
        steps, np.asarray(lines, dtype=np.int64), groups, [(k, np.array(p, dtype=np.int64)) for k, p in holes.items()]
    )


def add_group(
    groups: list,
    steps: np.ndarray,
    keys: tuple,
    pos: np.ndarray,
    vals: np.ndarray,
    step_of: Callable[[tuple], str | None],
) -> None:
    """Append the group of records ``pos`` (int64 ``(m,)``) holding exactly ``keys`` with
    ``vals`` (float64 ``(m, len(keys))``) to ``groups``; the key ``step_of(keys)`` names,
    if any, becomes those records' ``steps`` (NaN unless finite) and leaves the group."""
    sk = step_of(keys)
    if sk is not None:
        j = keys.index(sk)
        col = vals[:, j]
        steps[pos] = np.where(np.isfinite(col), col, np.nan)
        keys = keys[:j] + keys[j + 1 :]
        vals = np.delete(vals, j, axis=1)
    groups.append((keys, pos, vals))
