"""One streaming pass over a dataset's records: the shape, empty texts, exact duplicates and,
with a tokenizer, the token length and the first and last tokens of every record."""

from __future__ import annotations

import gzip
import hashlib
from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .shapes import MISSING, SHAPES, FieldShape, resolve
from .sources import SHOW, DatasetError, Malformed

if TYPE_CHECKING:
    from .sources import Source
    from .tokenizer import Tok

#: Distinct keys counted at most (memory bound for records with data-like keys).
_KEYS_TRACKED = 10_000
#: Records encoded per tokenizer call.
_BATCH = 512


@dataclass
class _Examples:
    count: int = 0
    items: list = field(default_factory=list)

    def add(self, item) -> None:
        self.count += 1
        if len(self.items) < SHOW:
            self.items.append(item)


class Scan:
    """One streaming pass over the records: text, emptiness, duplicates and token lengths.

    Token lengths are counts of token ids, kept in arrays (three 8-byte integers a record) so a dataset of
    millions of records stays within memory."""

    def __init__(self, text_field: str | None, tok: Tok | None) -> None:
        self.shape = FieldShape(text_field) if text_field else None
        self.fixed = text_field is not None
        self.tok = tok
        self.records = 0
        self.keys: Counter = Counter()
        self.nested: Counter = Counter()
        self.nested_depth = -1
        self.nested_prefix = ""
        self.unmatched = _Examples()  # before a shape is known
        self.empty = _Examples()
        self.empty_kinds: Counter = Counter()
        self.first_seen: dict[bytes, int] = {}
        self.repeated: set[bytes] = set()
        self.dups = _Examples()
        self.pending: list[tuple[int, int | None, str, bool]] = []
        self.lengths = array("q")
        self.len_index = array("q")
        self.len_line = array("q")  # -1: no line (a .json array)
        self.no_eos = _Examples()
        self.double_bos = _Examples()
        self.bos_first = 0
        self.template_failed = 0
        self.template_used = 0
        self.first_match: int | None = None

    def _track_keys(self, obj: dict) -> None:
        for k in obj:
            if k in self.keys or len(self.keys) < _KEYS_TRACKED:
                self.keys[k] += 1
        if self.fixed and "." in self.shape.path:
            v, depth, container = resolve(obj, self.shape.path)
            if v is MISSING and isinstance(container, dict) and depth > 0:
                if depth > self.nested_depth:
                    self.nested_depth, self.nested = depth, Counter()
                    self.nested_prefix = ".".join(self.shape.path.split(".")[:depth])
                if depth == self.nested_depth:
                    for k in container:
                        if k in self.nested or len(self.nested) < _KEYS_TRACKED:
                            self.nested[k] += 1

    def add(self, index: int, line: int | None, obj: dict) -> None:
        self.records += 1
        self._track_keys(obj)
        if self.shape is None:
            self.shape = next((s for s in SHAPES if s.matches(obj)), None)
            if self.shape is None:
                self.unmatched.add((index, line))
                return
        if not self.shape.matches(obj):
            if self.first_match is None:  # --text-field not seen yet
                self.unmatched.add((index, line))
            else:
                self._empty(index, line, "missing")
            return
        if self.first_match is None:
            self.first_match = index
        s = self.shape.extract(obj)
        if isinstance(s, str):
            self._empty(index, line, s)
            return
        if not s.target.strip():
            self._empty(index, line, "empty")
            return
        digest = hashlib.blake2b(s.key.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        first = self.first_seen.get(digest)
        if first is None:
            self.first_seen[digest] = index
        else:
            self.repeated.add(digest)
            self.dups.add((first, index))
        if self.tok is not None:
            text, special = s.full, True
            if s.messages is not None and self.tok.chat_template:
                rendered = self.tok.render_chat(s.messages)
                if rendered is None:
                    self.template_failed += 1
                else:
                    text, special = rendered, False
                    self.template_used += 1
            self.pending.append((index, line, text, special))
            if len(self.pending) >= _BATCH:
                self.flush()

    def _empty(self, index: int, line: int | None, kind: str) -> None:
        self.empty.add((index, line, kind))
        self.empty_kinds[kind] += 1

    def finish(self) -> None:
        """Records seen before a fixed --text-field first matched count as missing it."""
        self.flush()
        if self.first_match is not None and self.unmatched.count:
            pre = self.unmatched
            merged = _Examples(
                pre.count + self.empty.count, ([(i, ln, "missing") for i, ln in pre.items] + self.empty.items)[:SHOW]
            )
            self.empty_kinds["missing"] += pre.count
            self.empty = merged
            self.unmatched = _Examples()

    def flush(self) -> None:
        if not self.pending or self.tok is None:
            self.pending = []
            return
        tok = self.tok
        batch, self.pending = self.pending, []
        ids: dict[int, list[int]] = {}
        for special in (True, False):
            part = [(k, b) for k, b in enumerate(batch) if b[3] is special]
            for (k, _), enc in zip(part, tok.encode([b[2] for _, b in part], special=special)):
                ids[k] = enc
        eos, bos = tok.eos.id if tok.eos.ok else None, tok.bos.id if tok.bos.ok else None
        for k, (index, line, _text, _sp) in enumerate(batch):
            seq = ids[k]
            self.lengths.append(len(seq))
            self.len_index.append(index)
            self.len_line.append(-1 if line is None else line)
            if eos is not None and not self._ends_with_eos(seq, eos):
                self.no_eos.add((index, line))
            if bos is not None and seq and seq[0] == bos:
                self.bos_first += 1
                if len(seq) > 1 and seq[1] == bos:
                    self.double_bos.add((index, line))

    def _ends_with_eos(self, seq: list[int], eos: int) -> bool:
        if not seq:
            return False
        if seq[-1] == eos:
            return True
        tail = seq[-8:]
        if eos not in tail:
            return False
        last = len(tail) - 1 - tail[::-1].index(eos)
        return not self.tok.decode(tail[last + 1 :]).strip()


def scan_dataset(src: Source, text_field: str | None, tok: Tok | None) -> tuple[Malformed, Scan]:
    """Read every record of ``src`` once: ``(the malformed lines, the finished scan)``.

    Raises:
        DatasetError: the file cannot be read to its end (an I/O error, a truncated gzip).
    """
    bad = Malformed()
    scan = Scan(text_field, tok)
    try:
        for index, line, obj in src.rows(bad):
            scan.add(index, line, obj)
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise DatasetError(f"cannot read {src.path}: {e}") from None
    scan.finish()
    return bad, scan
