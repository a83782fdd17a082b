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
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import google_crc32c

_MASK_DELTA = 0xA282EAD8
_HEADER = struct.Struct("<QI")
_CRC = struct.Struct("<I")
_CHUNK = 1 << 22
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


def records(f: BinaryIO, tail: Tail, verify: bool = True) -> Iterator[bytes]:
    """Yield each record's payload; fill ``tail`` with how the stream ended."""
    buf = b""
    pos = 0
    eof = False
    n = 0
    while True:
        if len(buf) - pos < _HEADER.size + 4 and not eof:
            more = f.read(_CHUNK)
            if not more:
                eof = True
            buf = buf[pos:] + more
            pos = 0
            continue
        avail = len(buf) - pos
        if avail == 0 and eof:
            tail.records = n
            return
        if avail < _HEADER.size:
            tail.reason = f"the file ends inside a record header ({avail} bytes)"
            tail.dropped_bytes = avail
            tail.records = n
            return
        length, len_crc = _HEADER.unpack_from(buf, pos)
        if verify and masked_crc(buf[pos:pos + 8]) != len_crc:
            tail.reason = f"record {n + 1}: the length checksum does not match (corrupt or not a TFRecord file)"
            tail.bad_framing = True
            tail.dropped_bytes = avail + _remaining(f)
            tail.records = n
            return
        if length > MAX_RECORD:
            tail.reason = f"record {n + 1}: implausible length {length}"
            tail.bad_framing = True
            tail.dropped_bytes = avail + _remaining(f)
            tail.records = n
            return
        need = _HEADER.size + length + 4
        while avail < need and not eof:
            more = f.read(max(_CHUNK, need - avail))
            if not more:
                eof = True
                break
            buf = buf[pos:] + more
            pos = 0
            avail = len(buf)
        if avail < need:
            tail.reason = f"record {n + 1}: the file ends inside the record ({avail} of {need} bytes: a run killed mid-write?)"
            tail.dropped_bytes = avail
            tail.records = n
            return
        start = pos + _HEADER.size
        payload = buf[start:start + length]
        if verify:
            (data_crc,) = _CRC.unpack_from(buf, start + length)
            if masked_crc(payload) != data_crc:
                tail.reason = f"record {n + 1}: the payload checksum does not match (corrupt bytes)"
                tail.dropped_bytes = avail + _remaining(f)
                tail.records = n
                return
        pos += need
        n += 1
        yield payload


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
