"""W&B's ``wandb_internal.Record`` messages: the few fields judging needs.

**Records** are ``wandb_internal.Record`` protobuf messages; this module decodes the few
fields judging needs, by number (``wandb/proto/wandb_internal.proto``), with the shared
wire-format walker of :mod:`._protowire`: history rows, summary and config updates, the run
record (run id, display name, project, start time) and metric definitions. Every other
record type (console output, system stats, telemetry, files, artifacts) is skipped.

**History values** are JSON (``value_json``): numbers, ``NaN`` and ``±Infinity`` as W&B
writes them, kept as values. A dict logged as a value is stored as one item per leaf with
its path in ``nested_key`` and read as ``a/b``; media, histograms and tables are objects
with a ``_type`` and are skipped, whole. Strings, booleans and lists are not metrics.

This layer knows the messages' field numbers, not files or runs: the framing is
:mod:`._wandb_log`'s, the run folder the reader's (:mod:`.wandb`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

from ._protowire import fields
from ._values import JSON, MAX_DEPTH, flatten_numeric

# Field numbers of wandb_internal.proto (wandb/proto/wandb_internal_pb2.py).
_REC_HISTORY, _REC_SUMMARY, _REC_CONFIG, _REC_METRIC, _REC_RUN = 2, 3, 5, 12, 17
_RUN_ID, _RUN_PROJECT, _RUN_CONFIG, _RUN_SUMMARY, _RUN_NAME, _RUN_START = 1, 3, 4, 5, 8, 17
_HIST_ITEM, _HIST_STEP = 1, 2
_ITEM_KEY, _ITEM_NESTED, _ITEM_JSON = 1, 2, 16  # HistoryItem, SummaryItem and ConfigItem alike
_UPDATE, _REMOVE = 1, 2  # SummaryRecord and ConfigRecord
_METRIC_NAME, _METRIC_GLOB, _METRIC_STEP = 1, 2, 4


def _text(v: bytes) -> str:
    return v.decode("utf-8", "replace")


def _item(b: bytes) -> tuple[tuple[str, ...], str | None]:
    """``(path, value_json)`` of a HistoryItem, SummaryItem or ConfigItem: ``nested_key``
    when set, else ``(key,)``."""
    key = ""
    nested: list[str] = []
    value = None
    for f, wt, v in fields(b):
        if wt != 2:
            continue
        if f == _ITEM_KEY:
            key = _text(v)
        elif f == _ITEM_NESTED:
            nested.append(_text(v))
        elif f == _ITEM_JSON:
            value = _text(v)
    return (tuple(nested) if nested else (key,)), value


def json_value(s: str | None) -> object:
    """A ``value_json`` decoded (NaN and ±Infinity allowed), or ``None`` if it is not JSON."""
    if s is None:
        return None
    try:
        return JSON.decode(s)
    except (ValueError, RecursionError):
        return None


def _is_media(v: object) -> bool:
    return isinstance(v, Mapping) and "_type" in v


def _strip_media(v: object, depth: int = 0) -> object:
    """``v`` with every object holding a ``_type`` (media, histogram, table) left out."""
    if not isinstance(v, Mapping) or depth > MAX_DEPTH:
        return v
    return {k: _strip_media(x, depth + 1) for k, x in v.items() if not _is_media(x)}


def items_to_values(items: list[tuple[tuple[str, ...], object]]) -> tuple[dict[str, float], list[str]]:
    """The numbers of one row (``a/b`` keys) and its ``null`` keys (holes), media left out.

    ``items`` are ``(path, decoded value)``; a path whose last part is ``_type`` marks the
    object at the rest of the path as media, and every item under it is skipped.
    """
    media = {p[:-1] for p, _ in items if len(p) > 1 and p[-1] == "_type"}
    flat: dict[str, object] = {}
    for path, value in items:
        if media and any(path[:k] in media for k in range(1, len(path))):
            continue
        if _is_media(value):
            continue
        flat["/".join(path)] = _strip_media(value)
    holes: list[str] = []
    return flatten_numeric(flat, holes=holes), holes


def _history(b: bytes) -> tuple[dict[str, float], list[str], float | None]:
    """``(values, holes, step)`` of a HistoryRecord; ``step`` from its ``step.num``."""
    items = []
    step = None
    for f, wt, v in fields(b):
        if f == _HIST_ITEM and wt == 2:
            path, raw = _item(v)
            items.append((path, json_value(raw)))
        elif f == _HIST_STEP and wt == 2:
            step = 0.0  # proto3 leaves out a zero num
            for f2, wt2, v2 in fields(v):
                if f2 == 1 and wt2 == 0:
                    step = float(v2 - (1 << 64) if v2 >= 1 << 63 else v2)
    values, holes = items_to_values(items)
    return values, holes, step


def _updates(b: bytes, into: dict[tuple[str, ...], object]) -> None:
    """Apply a SummaryRecord or ConfigRecord (its updates and removes) to ``into``."""
    for f, wt, v in fields(b):
        if wt != 2:
            continue
        if f == _UPDATE:
            path, raw = _item(v)
            into[path] = json_value(raw)
        elif f == _REMOVE:
            path, _ = _item(v)
            for k in [k for k in into if k[: len(path)] == path]:
                del into[k]


def _timestamp_iso(b: bytes) -> str | None:
    seconds, nanos = 0, 0
    for f, wt, v in fields(b):
        if f == 1 and wt == 0:
            seconds = v - (1 << 64) if v >= 1 << 63 else v
        elif f == 2 and wt == 0:
            nanos = v
    if seconds <= 0:
        return None
    try:
        t = datetime.fromtimestamp(seconds + nanos / 1e9, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    return t.isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass
class Run:
    """What a log says about its run besides its rows."""

    meta: dict
    config: dict
    summary: dict
    step_metrics: list[tuple[str, str]]  # (name or glob, step metric)


def _run_record(b: bytes, run: Run) -> None:
    for f, wt, v in fields(b):
        if wt != 2:
            continue
        if f == _RUN_ID:
            run.meta["run_id"] = _text(v)
        elif f == _RUN_NAME:
            run.meta["run"] = _text(v)
        elif f == _RUN_PROJECT:
            run.meta["experiment"] = _text(v)
        elif f == _RUN_START:
            iso = _timestamp_iso(v)
            if iso is not None:
                run.meta["started"] = iso
        elif f == _RUN_CONFIG:
            _updates(v, run.config)
        elif f == _RUN_SUMMARY:
            _updates(v, run.summary)


def _metric_record(b: bytes, run: Run) -> None:
    metric = step = ""
    for f, wt, v in fields(b):
        if wt != 2:
            continue
        if f in (_METRIC_NAME, _METRIC_GLOB):
            metric = _text(v)
        elif f == _METRIC_STEP:
            step = _text(v)
    if step:
        run.step_metrics.append((metric, step))


@dataclass
class Row:
    """One history row: its numbers (``a/b`` keys), its ``null`` keys (holes), W&B's
    ``_step`` where the record holds one, and the record's place in the log."""

    values: dict[str, float]
    holes: list[str]
    step: float | None
    line: int


def read_record(payload: bytes, index: int, rows: list[Row], run: Run) -> None:
    """Decode one ``Record`` payload: a history row (numbered ``index``, the record's place
    in the log) is added to ``rows``; a summary, config, run or metric record updates
    ``run``; any other record type is skipped.

    Raises:
        ProtoError: the payload is not a well-formed message.
        UnicodeDecodeError, OverflowError: a field's value is not what the schema says.
    """
    for f, wt, v in fields(payload):
        if wt != 2:
            continue
        if f == _REC_HISTORY:
            values, holes, step = _history(v)
            rows.append(Row(values, holes, step, index))
        elif f == _REC_SUMMARY:
            _updates(v, run.summary)
        elif f == _REC_CONFIG:
            _updates(v, run.config)
        elif f == _REC_RUN:
            _run_record(v, run)
        elif f == _REC_METRIC:
            _metric_record(v, run)
