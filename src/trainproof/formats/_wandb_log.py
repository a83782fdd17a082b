"""W&B's ``.wandb`` transaction log framing: the record payloads of a whole file.

**Framing** (W&B's variant of the LevelDB log format, as ``wandb-core`` writes it in its
``transactionlog`` and ``leveldb`` packages): a 7-byte file header, ``:W&B``, the magic
``0xBEE1`` (uint16, little endian) and the version ``0``; then 32 KiB blocks, counted from
the start of the file (the header lies in the first block). A block holds chunks, each a
7-byte header (uint32 checksum, uint16 payload length, uint8 type: 1 full, 2 first,
3 middle, 4 last; little endian) and its payload; a chunk never crosses a block boundary,
and fewer than 7 bytes left at the end of a block are zero padding. A record is one full
chunk, or a first chunk, any middle chunks and a last chunk. The checksum is the CRC-32
(IEEE, as :func:`zlib.crc32`, not masked) of the type byte followed by the payload.

This layer knows bytes and framing only, as :mod:`._tfrecord` does for event files: the
payloads are ``wandb_internal.Record`` messages, which :mod:`._wandb_records` decodes.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from ._io import NotALog
from ._tfrecord import MAX_RECORD

#: ``:W&B``, magic ``0xBEE1`` and version ``0``.
HEADER = b":W&B" + struct.pack("<HB", 0xBEE1, 0)
BLOCK = 32 * 1024
_CHUNK = struct.Struct("<IHB")
CHUNK_HEADER = _CHUNK.size
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


@dataclass
class Tail:
    """How the framing ended: ``reason`` is ``None`` for a clean end of file."""

    reason: str | None = None
    records: int = 0
    #: ``(byte, length, why)`` of each damaged region given up (the rest of its block).
    skipped: list = field(default_factory=list)
    #: Bytes up to the end of the last complete record.
    consumed: int = 0
    size: int = 0


def is_wandb_header(head: bytes) -> bool:
    """Whether ``head`` starts with W&B's file header (identifier, magic and version)."""
    return head[: len(HEADER)] == HEADER


def records(data: bytes, tail: Tail) -> Iterator[bytes]:
    """The record payloads of a whole ``.wandb`` file, in order.

    A damaged chunk (a bad checksum, an unknown type, a length past its block, a broken
    first/middle/last order, a record over :data:`MAX_RECORD`) loses the rest of its
    32 KiB block: reading goes on at the next block, from the first record that starts
    there (the LevelDB log format's recovery, which W&B's own reader applies too), and
    ``tail.skipped`` lists each region given up, with why. A file that ends inside a
    record stops the reading: ``tail.reason`` says so, and ``tail.consumed`` is where the
    last complete record ends.

    Raises:
        NotALog: the file does not start with W&B's header.
    """
    tail.size = len(data)
    if not is_wandb_header(data):
        if len(data) < len(HEADER) and HEADER.startswith(data):
            tail.reason = f"the file ends inside its {len(HEADER)}-byte header"
            return
        raise NotALog("not a W&B run log: the file does not start with the ':W&B' header")
    pos = tail.consumed = len(HEADER)
    parts: list[bytes] = []
    size = 0
    n = len(data)
    # Set after damage: chunks continuing a record that began before it are not records.
    resync = False
    while pos < n:
        left = BLOCK - pos % BLOCK
        if left < CHUNK_HEADER:
            pos += left  # the block's zero padding
            continue
        if pos + CHUNK_HEADER > n:
            tail.reason = "the file ends inside a chunk header"
            return
        crc, length, kind = _CHUNK.unpack_from(data, pos)
        if crc == 0 and length == 0 and kind == 0 and not parts:
            pos += left  # a zeroed rest of a block: W&B's reader skips it too
            continue
        end = pos + CHUNK_HEADER + length
        damage = None
        if CHUNK_HEADER + length > left:
            damage = f"a chunk at byte {pos} is longer than its 32 KiB block (corrupt)"
        elif end > n:
            tail.reason = "the file ends inside a record"
            return
        elif zlib.crc32(data[pos + CHUNK_HEADER - 1 : end]) != crc:
            damage = f"the checksum of the chunk at byte {pos} does not match (corrupt)"
        elif kind not in (FULL, FIRST, MIDDLE, LAST):
            damage = f"the chunk at byte {pos} has an unknown type {kind} (corrupt)"
        elif resync and kind in (MIDDLE, LAST):
            pos = end  # the rest of a record whose start was lost
            continue
        elif (kind in (FULL, FIRST)) == bool(parts):
            damage = f"the chunk at byte {pos} is out of order (type {kind}; corrupt)"
        elif size + length > MAX_RECORD:
            damage = f"a record longer than {MAX_RECORD >> 20} MiB at byte {pos} (corrupt, or not a metrics record)"
        if damage is not None:
            start = tail.consumed if parts else pos
            nxt = pos - pos % BLOCK + BLOCK
            tail.skipped.append((start, min(nxt, n) - start, damage))
            parts, size, resync, pos = [], 0, True, nxt
            continue
        resync = False
        parts.append(data[pos + CHUNK_HEADER : end])
        size += length
        pos = end
        if kind in (FULL, LAST):
            payload = parts[0] if len(parts) == 1 else b"".join(parts)
            parts, size = [], 0
            tail.records += 1
            tail.consumed = pos
            yield payload
    if parts:
        tail.reason = "the file ends inside a record"
