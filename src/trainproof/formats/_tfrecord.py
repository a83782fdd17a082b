"""TFRecord framing: the container format of TensorBoard event files.

Each record is::

    uint64 length (little endian)
    uint32 masked CRC-32C of the 8 length bytes
    byte   payload[length]
    uint32 masked CRC-32C of the payload

This layer knows framing and checksums only; it does not look inside payloads. CRC-32C
comes from the maintained ``google-crc32c`` package (C implementation). A record whose
checksum fails or whose bytes end early stops the reading at the last good record; the
caller learns how many bytes were dropped and why.
"""
from __future__ import annotations

import struct
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import google_crc32c
import numpy as np

_MASK_DELTA = 0xA282EAD8
_HEADER = struct.Struct("<QI")
_CRC = struct.Struct("<I")
_CHUNK = 1 << 20
#: A length larger than this is not a real event (TensorBoard events are small); it is
#: treated as corruption rather than an allocation request.
MAX_RECORD = 1 << 30


def masked_crc(data: bytes) -> int:
    """TFRecord's masked CRC-32C: rotate right by 15 bits and add a constant."""
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


@dataclass
class Tail:
    """How reading ended: ``reason`` is ``None`` for a clean end of file.

    ``bad_framing`` is true when a record header itself is not TFRecord framing (its
    length checksum fails, or the length is implausible): at the first record that means
    the file is not TFRecord at all, unlike a torn or corrupt record of a real one.
    """

    reason: str | None = None
    dropped_bytes: int = 0
    records: int = 0
    bad_framing: bool = False
    #: Bytes of complete, valid records read (where a live reader resumes).
    consumed: int = 0


def _masked(crcs: np.ndarray) -> np.ndarray:
    c = crcs.astype(np.uint64)
    return (((c >> 15) | (c << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def _stored_crcs(buf: bytes, ends: np.ndarray) -> np.ndarray:
    """The little-endian uint32 that ends at each offset of ``ends``."""
    b = np.frombuffer(buf, dtype=np.uint8)
    at = ends - 4
    return (b[at].astype(np.uint64) | (b[at + 1].astype(np.uint64) << 8)
            | (b[at + 2].astype(np.uint64) << 16) | (b[at + 3].astype(np.uint64) << 24))


def record_batches(f: BinaryIO, tail: Tail, verify: bool = True) -> Iterator[list[bytes]]:
    """Yield the payloads of the records, a list per chunk read; fill ``tail`` with how
    the stream ended.

    The length checksum is checked record by record (a wrong length must not send the
    reader looking for a record that is not there); the payload checksums of a chunk are
    computed record by record and compared in one vectorised step before the chunk is
    yielded, so a corrupt record still ends the batch right before it.
    """
    crc32c = google_crc32c.value
    header = _HEADER.unpack_from
    mask = _MASK_DELTA
    buf = b""
    eof = False
    n = 0
    # Event records of one file have few distinct lengths, and a length's checksum is
    # always the same: headers already verified are remembered, not checked again.
    good_headers: set[bytes] = set()
    while True:
        if not eof:
            more = f.read(_CHUNK)
            if more:
                buf += more
            else:
                eof = True
        pos = 0
        size = len(buf)
        batch: list[bytes] = []
        crcs = array("I")
        ends = array("q")
        stop = None
        while size - pos >= 12:
            length, len_crc = header(buf, pos)
            if verify:
                head = buf[pos:pos + 12]
                if head not in good_headers:
                    c = crc32c(head[:8])
                    if (((c >> 15) | (c << 17)) + mask) & 0xFFFFFFFF != len_crc:
                        stop = (f"record {n + 1}: the length checksum does not match (corrupt or not a TFRecord file)", True)
                        break
                    if len(good_headers) < 4096:
                        good_headers.add(head)
            if length > MAX_RECORD:
                stop = (f"record {n + 1}: implausible length {length}", True)
                break
            end = pos + 16 + length
            if end > size:
                break  # the rest of this record is in the next chunk
            payload = buf[pos + 12:end - 4]
            if verify:
                crcs.append(crc32c(payload))
                ends.append(end)
            batch.append(payload)
            pos = end
            n += 1
        if verify and batch:
            e = np.frombuffer(ends, dtype=np.int64)
            bad = np.flatnonzero(_masked(np.frombuffer(crcs, dtype=np.uint32)) != _stored_crcs(buf, e))
            if bad.size:
                k = int(bad[0])
                n -= len(batch) - k
                pos = int(e[k - 1]) if k else int(e[0]) - 16 - len(batch[0])
                del batch[k:]
                stop = (f"record {n + 1}: the payload checksum does not match (corrupt bytes)", False)
        tail.consumed += pos
        if batch:
            yield batch
        if stop is not None:
            tail.reason, tail.bad_framing = stop
            tail.dropped_bytes = size - pos + _remaining(f)
            tail.records = n
            return
        buf = buf[pos:]
        if eof:
            avail = len(buf)
            if avail == 0:
                pass
            elif avail < _HEADER.size:
                tail.reason = f"the file ends inside a record header ({avail} bytes)"
                tail.dropped_bytes = avail
            else:
                length, len_crc = header(buf, 0)
                c = crc32c(buf[:8])
                if verify and (((c >> 15) | (c << 17)) + mask) & 0xFFFFFFFF != len_crc:
                    tail.reason = f"record {n + 1}: the length checksum does not match (corrupt or not a TFRecord file)"
                    tail.bad_framing = True
                else:
                    tail.reason = (f"record {n + 1}: the file ends inside the record ({avail} of "
                                   f"{16 + length} bytes: a run killed mid-write?)")
                tail.dropped_bytes = avail
            tail.records = n
            return


def records(f: BinaryIO, tail: Tail, verify: bool = True) -> Iterator[bytes]:
    """Yield each record's payload; fill ``tail`` with how the stream ended."""
    for batch in record_batches(f, tail, verify):
        yield from batch


def _remaining(f: BinaryIO) -> int:
    total = 0
    while True:
        b = f.read(_CHUNK)
        if not b:
            return total
        total += len(b)


def looks_like_tfrecord(head: bytes) -> bool:
    """True when the first record header of ``head`` has a valid length checksum."""
    if len(head) < _HEADER.size:
        return False
    length, len_crc = _HEADER.unpack_from(head, 0)
    return masked_crc(head[:8]) == len_crc and length <= MAX_RECORD
