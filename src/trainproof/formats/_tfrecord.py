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

import numpy as np

_MASK_DELTA = 0xA282EAD8
_HEADER = struct.Struct("<QI")
_CRC = struct.Struct("<I")
_CHUNK = 1 << 20
#: The longest record read, in bytes. A scalar event is under 100 bytes and an image or
#: audio summary a few MB; 64 MiB is protobuf's long-standing default limit on one
#: message. A longer declared length (even with a valid checksum) is not read: it would be
#: an allocation of that size per worker, so reading stops there with a dropped-data note.
MAX_RECORD = 64 << 20


def masked_crc(data: bytes) -> int:
    """TFRecord's masked CRC-32C: rotate right by 15 bits and add a constant."""
    # google_crc32c is imported by the first checksum, so that sniffing another format
    # (which asks looks_like_tfrecord first) never loads it.
    import google_crc32c

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
    return (
        b[at].astype(np.uint64)
        | (b[at + 1].astype(np.uint64) << 8)
        | (b[at + 2].astype(np.uint64) << 16)
        | (b[at + 3].astype(np.uint64) << 24)
    )


@dataclass
class Spans:
    """The records of one chunk, without copying them: record ``i``'s payload is
    ``buf[starts[i]:starts[i] + lengths[i]]``. ``starts`` and ``lengths`` are int64
    arrays of shape ``(n,)`` (byte offsets into ``buf``)."""

    buf: bytes
    starts: np.ndarray
    lengths: np.ndarray

    def __len__(self) -> int:
        return int(self.starts.size)

    def payload(self, i: int) -> bytes:
        """Record ``i``'s payload as its own ``bytes``."""
        at = int(self.starts[i])
        return self.buf[at : at + int(self.lengths[i])]

    def payloads(self) -> list[bytes]:
        """Each record's payload as its own ``bytes`` (all at once)."""
        buf = self.buf
        return [buf[s : s + n] for s, n in zip(self.starts.tolist(), self.lengths.tolist())]


#: Longest run of records checked at once against a predicted pattern of sizes.
_WINDOW = 8192
#: Longest repeating pattern of record sizes looked for (an event file that logs k tags
#: a step repeats with period k while the step's varint keeps its width).
_MAX_PERIOD = 16
#: A predicted run shorter than this counts as a miss (numpy's per-call cost is worth
#: about this many records walked one by one).
_SHORT_RUN = 16


def _period(sizes: list[int]) -> int:
    """The shortest ``p`` with ``sizes[-p:] == sizes[-2p:-p]``, else 0."""
    n = len(sizes)
    for p in range(1, min(_MAX_PERIOD, n // 2) + 1):
        if sizes[n - p :] == sizes[n - 2 * p : n - p]:
            return p
    return 0


def _predict(
    win12: np.ndarray, pos: int, size: int, pattern: list[int], window: int, head_of_size: dict[int, bytes], cache: dict
) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Check the records predicted at ``pos`` by repeating ``pattern`` (record sizes):
    ``(header offsets, sizes, k, count)`` of the ``k`` leading predicted records whose
    12 header bytes equal the verified header of their size, out of ``count`` tried
    (at most ``window``, and only whole records before ``size``); ``win12`` holds every
    12-byte window of the chunk (``sliding_window_view(chunk, 12)``)."""
    key = tuple(pattern)
    known = cache.get(key)
    p = len(pattern)
    if known is None or known[0].size < min(window, _WINDOW):
        # Tiled as far as the window reaches (a new pattern starts small and is tiled
        # again only as its runs grow).
        if len(cache) > 256:
            cache.clear()
        reps = min(window, _WINDOW) // p + 1
        sizes = np.tile(np.array(pattern, dtype=np.int64), reps)
        heads = np.frombuffer(b"".join(head_of_size[s] for s in pattern), dtype=np.uint8).reshape(p, 12)
        # Predicted offsets relative to ``pos`` and the header each should carry.
        known = cache[key] = (sizes, np.cumsum(sizes), np.tile(heads, (reps, 1)).view("V12").ravel())
    sizes, ends, expected = known
    count = min(int(np.searchsorted(ends, size - pos, side="right")), window)
    if not count:
        return ends[:0], sizes[:0], 0, 0
    heads = ends[:count] - sizes[:count] + pos
    got = win12[heads].view("V12").ravel()
    same = got == expected[:count]
    k = count if same.all() else int(same.argmin())
    return heads[:k], sizes[:k], k, count


def record_spans(f: BinaryIO, tail: Tail, verify: bool = True) -> Iterator[Spans]:
    """Yield the records a chunk at a time as :class:`Spans`; fill ``tail`` with how the
    stream ended.

    Framing is walked without a Python step per record where the file allows it: event
    files repeat a short pattern of record sizes (one record per tag per step), so once
    the sizes of the last records repeat, the next few thousand record headers are
    predicted from that pattern and checked in one vectorised comparison against header
    bytes already verified; the walk accepts the matching prefix and goes on record by
    record from the first surprise. Every header is thereby either checksummed or
    byte-identical to one that was. The payload checksums of a chunk are computed record
    by record (``google-crc32c`` has no batch call) and compared in one vectorised step,
    so a corrupt record still ends the chunk right before it.
    """
    import google_crc32c

    crc32c = google_crc32c.value
    header = _HEADER.unpack_from
    buf = b""
    eof = False
    n = 0
    # Event records of one file have few distinct lengths, and a length's checksum is
    # always the same: headers already verified are remembered, not checked again.
    good_headers: set[bytes] = set()
    # Verified header bytes by record size (16 + length), for predicted runs.
    head_of_size: dict[int, bytes] = {}
    cache: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    recent: list[int] = []  # sizes of the last records, while they have known headers
    skip = fails = 0
    window = 64
    resume = pending = None  # the pattern to try again right after one surprise record
    lacking = 0  # bytes the record at the end of the buffer still lacks
    while True:
        if not eof:
            # A record longer than a chunk is read in one go once its length is known
            # (growing the buffer a chunk at a time would copy it over and over), up to
            # 64 MiB a read: a checksummed but hostile length allocates no more.
            more = f.read(max(_CHUNK, min(lacking, 1 << 26)))
            lacking = 0
            if more:
                buf += more
            else:
                eof = True
        pos = 0
        size = len(buf)
        win12 = np.lib.stride_tricks.sliding_window_view(np.frombuffer(buf, dtype=np.uint8), 12) if size >= 12 else None
        # Header offsets and record sizes in file order: predicted runs as arrays, and
        # the records walked one by one since the last run, flushed before the next.
        runs: list[np.ndarray] = []
        run_sizes: list[np.ndarray] = []
        one: list[int] = []
        one_size: list[int] = []
        stop = None
        while size - pos >= 12:
            pattern = None
            if resume is not None:
                pattern, resume = resume, None
            elif skip:
                skip -= 1
            elif len(recent) >= 2 and (p := _period(recent)):
                pattern = recent[-p:]
            if pattern is not None:
                heads, sizes, k, count = _predict(win12, pos, size, pattern, window, head_of_size, cache)
                if not count:
                    pattern = None  # no whole record left in this chunk: nothing was tried
            if pattern is not None:
                # The window grows while predictions hold and shrinks to twice the last run
                # when they break, so a surprise costs about as much as the run before it.
                if k == count:
                    window = min(_WINDOW, 2 * window)
                elif k:
                    window = min(_WINDOW, max(64, 2 * k))
                if k:
                    if one:
                        _flush(one, one_size, runs, run_sizes)
                    runs.append(heads)
                    run_sizes.append(sizes)
                    n += k
                    pos = int(heads[-1] + sizes[-1])
                    r = k % len(pattern)
                    recent = (pattern[r:] + pattern[:r]) * 2
                if k < _SHORT_RUN:
                    # A miss, or a run this short (it cost more to predict than to walk):
                    # back off.
                    fails += 1
                    skip = min(1 << fails, 4096)
                else:
                    fails = 0
                    if k < count:
                        # A surprise (an eval record between steps, say): walk it alone,
                        # then expect the same pattern again from where it broke.
                        pending = recent[: len(pattern)]
                        skip = 1
                if k:
                    continue
            length, len_crc = header(buf, pos)
            head = buf[pos : pos + 12]
            if verify and head not in good_headers:
                if masked_crc(head[:8]) != len_crc:
                    stop = (
                        f"record {n + 1}: the length checksum does not match (corrupt or not a TFRecord file)",
                        True,
                    )
                    break
                if len(good_headers) < 4096:
                    good_headers.add(head)
            if length > MAX_RECORD:
                stop = (
                    f"record {n + 1}: implausible length {length} (over the {MAX_RECORD:,}-byte limit on one record)",
                    True,
                )
                break
            end = pos + 16 + length
            if end > size:
                lacking = end - size
                break  # the rest of this record is in the next chunk
            one.append(pos)
            one_size.append(16 + length)
            if len(head_of_size) < 4096 or 16 + length in head_of_size:
                head_of_size[16 + length] = head
                recent.append(16 + length)
                if len(recent) > 2 * _MAX_PERIOD:
                    del recent[: -2 * _MAX_PERIOD]
            else:
                recent.clear()
            if pending is not None:
                resume, pending = pending, None
            pos = end
            n += 1
        if one or not runs:
            _flush(one, one_size, runs, run_sizes)
        heads, sizes = (runs[0], run_sizes[0]) if len(runs) == 1 else (np.concatenate(runs), np.concatenate(run_sizes))
        count = int(heads.size)
        if verify and count:
            starts, stops = (heads + 12).tolist(), (heads + sizes - 4).tolist()
            crcs = np.array([crc32c(buf[a:b]) for a, b in zip(starts, stops)], dtype=np.uint32)
            bad = np.flatnonzero(_masked(crcs) != _stored_crcs(buf, heads + sizes))
            if bad.size:
                k = int(bad[0])
                n -= count - k
                pos = int(heads[k])
                heads, sizes = heads[:k], sizes[:k]
                stop = (f"record {n + 1}: the payload checksum does not match (corrupt bytes)", False)
        tail.consumed += pos
        if heads.size:
            yield Spans(buf, heads + 12, sizes - 16)
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
                if verify and masked_crc(buf[:8]) != len_crc:
                    tail.reason = f"record {n + 1}: the length checksum does not match (corrupt or not a TFRecord file)"
                    tail.bad_framing = True
                else:
                    tail.reason = (
                        f"record {n + 1}: the file ends inside the record ({avail} of "
                        f"{16 + length} bytes: a run killed mid-write?)"
                    )
                tail.dropped_bytes = avail
            tail.records = n
            return


def _flush(one: list[int], one_size: list[int], runs: list[np.ndarray], run_sizes: list[np.ndarray]) -> None:
    """Move the records walked one by one into ``runs`` as arrays, and empty the lists."""
    runs.append(np.array(one, dtype=np.int64))
    run_sizes.append(np.array(one_size, dtype=np.int64))
    one.clear()
    one_size.clear()


def record_batches(f: BinaryIO, tail: Tail, verify: bool = True) -> Iterator[list[bytes]]:
    """Yield the payloads of the records, a list per chunk read; fill ``tail`` with how
    the stream ended (see :func:`record_spans`)."""
    for spans in record_spans(f, tail, verify):
        yield spans.payloads()


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
    # The length first: a text file's first eight bytes read as a length far past the cap,
    # and the answer is the same without a checksum.
    return length <= MAX_RECORD and masked_crc(head[:8]) == len_crc
