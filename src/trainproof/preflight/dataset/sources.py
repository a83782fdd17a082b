"""Reading a dataset file: JSON Lines or a JSON array, either gzip-compressed, streamed record by
record (a ``.jsonl`` is never read as one string); records that are not JSON objects are counted
with their line (or element) and reason."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: How many line numbers, record indices or pairs a finding lists (presentation only).
SHOW = 10


class DatasetError(Exception):
    """The dataset cannot be read at all (missing, not JSON, empty): exit 2."""


@dataclass
class Malformed:
    """Malformed lines / elements: count and the first few."""

    count: int = 0
    where: list[int] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    unit: str = "line"

    def add(self, where: int, reason: str) -> None:
        self.count += 1
        if len(self.where) < SHOW:
            self.where.append(where)
            self.reasons.append(reason)


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def _open(path: Path, gz: bool):
    return gzip.open(path, "rb") if gz else open(path, "rb")


def _first_byte(path: Path, gz: bool) -> bytes:
    """The first byte that is not whitespace (after a UTF-8 BOM), or b'' for an empty file."""
    with _open(path, gz) as f:
        start = True
        while True:
            chunk = f.read(65536)
            if not chunk:
                return b""
            if start and chunk.startswith(b"\xef\xbb\xbf"):
                chunk = chunk[3:]
            start = False
            s = chunk.lstrip()
            if s:
                return s[:1]


def _json_reason(e: json.JSONDecodeError) -> str:
    return f"invalid JSON: {e.msg} (column {e.colno})"


def _kind(v: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(v), "a number")


@dataclass
class Source:
    """How a dataset file is read: its container and where its records come from."""

    path: Path
    gz: bool
    container: str  # jsonl | json
    notes: list[str] = field(default_factory=list)
    blank: int = 0

    @property
    def label(self) -> str:
        return self.container + (".gz" if self.gz else "")

    def rows(self, bad: Malformed) -> Iterator[tuple[int, int | None, dict]]:
        """Yield ``(index, line, record)`` for every record that is a JSON object."""
        if self.container == "json":
            yield from self._array(bad)
            return
        idx = 0
        with _open(self.path, self.gz) as f:
            for lineno, raw in enumerate(f, 1):
                if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]
                if not raw.strip():
                    self.blank += 1
                    continue
                try:
                    obj = json.loads(raw.decode("utf-8"))
                except UnicodeDecodeError:
                    bad.add(lineno, "not UTF-8")
                    continue
                except json.JSONDecodeError as e:
                    bad.add(lineno, _json_reason(e))
                    continue
                if not isinstance(obj, dict):
                    bad.add(lineno, f"not an object ({_kind(obj)})")
                    continue
                yield idx, lineno, obj
                idx += 1

    def _array(self, bad: Malformed) -> Iterator[tuple[int, int | None, dict]]:
        with _open(self.path, self.gz) as f:
            raw = f.read()
        try:
            doc = json.loads(raw.decode("utf-8-sig"))
        except UnicodeDecodeError:
            bad.add(1, "not UTF-8")
            return
        except json.JSONDecodeError as e:
            bad.add(e.lineno, _json_reason(e))
            return
        items = doc
        if isinstance(doc, dict):
            lists = [k for k, v in doc.items() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)]
            if len(lists) == 1:
                items = doc[lists[0]]
                self.notes.append(f"records read from the document's `{lists[0]}` array")
            else:
                items = [doc]
        if not isinstance(items, list):
            bad.add(1, f"the document is {_kind(items)}, not an array of objects")
            return
        bad.unit = "element"
        idx = 0
        for i, obj in enumerate(items):
            if not isinstance(obj, dict):
                bad.add(i, f"not an object ({_kind(obj)})")
                continue
            yield idx, None, obj
            idx += 1


def open_dataset(path: Path) -> Source:
    """Decide how to read ``path``; raises :class:`DatasetError` when it cannot be read."""
    if not path.exists():
        raise DatasetError(f"no such file: {path}")
    if path.is_dir():
        raise DatasetError(f"{path} is a directory; give a .jsonl, .json or .jsonl.gz file")
    try:
        gz = _is_gzip(path)
        first = _first_byte(path, gz)
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise DatasetError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from None
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    if not first:
        raise DatasetError(f"{path} is empty")
    if name.endswith((".jsonl", ".ndjson")):
        return Source(path, gz, "jsonl")
    if first == b"[":
        return Source(path, gz, "json")
    if first == b"{":
        # JSON Lines under a .json name, unless the first line is not a whole object (a
        # pretty-printed document): then the file is parsed as one document.
        with _open(path, gz) as f:
            for raw in f:
                if raw.strip():
                    try:
                        json.loads(raw.decode("utf-8-sig"))
                        return Source(path, gz, "jsonl")
                    except (UnicodeDecodeError, json.JSONDecodeError):
                        return Source(path, gz, "json")
    if name.endswith(".json"):
        return Source(path, gz, "json")  # reported as malformed by the parser
    raise DatasetError(f"{path} is not JSON Lines or a JSON array (it starts with {first!r})")
