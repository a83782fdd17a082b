"""The TFRecord framing walk that predicts runs of records from a repeating pattern of
sizes (``_tfrecord.record_spans``) gives exactly what a plain record-by-record walk
gives: the same payloads, the same stopping reason, record count, dropped and consumed
bytes, for periodic files with surprises, corrupt bytes anywhere and torn ends, at any
chunk size."""

from __future__ import annotations

import io
import struct

import google_crc32c
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from trainproof.formats import _tfrecord


def _masked(data: bytes) -> int:
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _frame(payload: bytes) -> bytes:
    head = struct.pack("<Q", len(payload))
    return head + struct.pack("<I", _masked(head)) + payload + struct.pack("<I", _masked(payload))


def _reference(data: bytes) -> tuple[list[bytes], tuple]:
    """One record at a time, every checksum computed: what the file holds."""
    out: list[bytes] = []
    pos = 0
    reason = None
    bad_framing = False
    while True:
        rest = len(data) - pos
        if rest == 0:
            break
        if rest < 12:
            reason = f"the file ends inside a record header ({rest} bytes)"
            break
        length, len_crc = struct.unpack_from("<QI", data, pos)
        if _masked(data[pos : pos + 8]) != len_crc:
            reason = f"record {len(out) + 1}: the length checksum does not match (corrupt or not a TFRecord file)"
            bad_framing = True
            break
        if length > _tfrecord.MAX_RECORD:
            reason = (
                f"record {len(out) + 1}: implausible length {length} (over the "
                f"{_tfrecord.MAX_RECORD:,}-byte limit on one record)"
            )
            bad_framing = True
            break
        if pos + 16 + length > len(data):
            reason = (
                f"record {len(out) + 1}: the file ends inside the record ({rest} of "
                f"{16 + length} bytes: a run killed mid-write?)"
            )
            break
        payload = data[pos + 12 : pos + 12 + length]
        if _masked(payload) != struct.unpack_from("<I", data, pos + 12 + length)[0]:
            reason = f"record {len(out) + 1}: the payload checksum does not match (corrupt bytes)"
            break
        out.append(payload)
        pos += 16 + length
    dropped = len(data) - pos if reason else 0
    return out, (reason, dropped, len(out), bad_framing, pos)


def _spans(data: bytes) -> tuple[list[bytes], tuple]:
    tail = _tfrecord.Tail()
    out: list[bytes] = []
    for spans in _tfrecord.record_spans(io.BytesIO(data), tail):
        out.extend(spans.payloads())
    # A clean end leaves ``records`` at 0 in both walkers' Tail; compare what was read.
    return out, (tail.reason, tail.dropped_bytes, len(out), tail.bad_framing, tail.consumed)


@st.composite
def event_files(draw):
    """A periodic stream of record sizes (k tags a step), with surprise records now and
    then and the pattern changing (a step varint growing a byte), then damage."""
    period = draw(st.integers(1, 6))
    pattern = draw(st.lists(st.integers(0, 60), min_size=period, max_size=period))
    steps = draw(st.integers(0, 120))
    every = draw(st.integers(2, 50))
    grow_at = draw(st.integers(0, 150))
    payloads = []
    for step in range(steps):
        widen = 1 if step >= grow_at else 0
        for j, size in enumerate(pattern):
            payloads.append(bytes([(step * 7 + j) % 256]) * (size + widen))
        if step % every == every - 1:
            payloads.append(b"E" * draw(st.integers(0, 90)))
    data = b"".join(_frame(p) for p in payloads)
    damage = draw(st.sampled_from(["none", "flip", "truncate", "zero_run"]))
    if data and damage == "flip":
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([data[at] ^ (1 << draw(st.integers(0, 7)))]) + data[at + 1 :]
    elif data and damage == "truncate":
        data = data[: draw(st.integers(0, len(data)))]
    elif data and damage == "zero_run":
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes(min(8, len(data) - at)) + data[at + 8 :]
    return data


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(data=event_files(), chunk=st.sampled_from([13, 64, 100, 257, 4096, 1 << 20]))
@example(data=b"".join(_frame(b"x" * (i % 3)) for i in range(400)), chunk=1 << 20)
def test_predicted_runs_equal_record_by_record(data, chunk):
    old = _tfrecord._CHUNK
    _tfrecord._CHUNK = chunk
    try:
        got = _spans(data)
    finally:
        _tfrecord._CHUNK = old
    want = _reference(data)
    assert got[0] == want[0]
    assert got[1] == want[1]


def _count_predictions(data: bytes) -> tuple[int, tuple]:
    calls = 0
    real = _tfrecord._predict

    def counting(*args):
        nonlocal calls
        calls += 1
        return real(*args)

    _tfrecord._predict = counting
    try:
        got = _spans(data)
    finally:
        _tfrecord._predict = real
    return calls, got


def test_a_long_periodic_file_is_read_in_few_predicted_runs():
    """The point of the prediction: a file of 4 tags a step with an eval record every 100
    steps is walked with about one prediction per eval record, and right."""
    payloads = []
    for step in range(5000):
        payloads += [b"a" * 30, b"b" * 31, b"c" * 29, b"d" * 35]
        if step % 100 == 99:
            payloads.append(b"e" * 40)
    calls, got = _count_predictions(b"".join(_frame(p) for p in payloads))
    assert got[0] == payloads
    assert got[1][0] is None
    assert calls < 200  # 50 eval records, a handful of chunk edges and window doublings


def test_a_corrupt_header_inside_a_predicted_run_stops_there():
    payloads = [bytes([i % 7]) * 20 for i in range(1000)]
    data = bytearray(b"".join(_frame(p) for p in payloads))
    at = 600 * 36 + 3  # a length byte of record 601
    data[at] ^= 0x40
    got = _spans(bytes(data))
    assert got[0] == payloads[:600]
    assert got[1][0].startswith("record 601: the length checksum does not match")
    assert got[1][3] is True


def test_patterns_that_never_pay_off_are_rarely_predicted():
    """Sizes in triples (a a a b b b c c c …): every pattern breaks after a record or two,
    so predicting costs more than walking. The walk backs off (found by a helper: this
    file was 10x slower than the record-by-record walk)."""
    payloads = []
    i = 0
    while len(payloads) < 6000:
        payloads += [bytes([i % 256]) * (i % 300)] * 3
        i += 1
    data = b"".join(_frame(p) for p in payloads)
    calls, got = _count_predictions(data)
    assert got == _reference(data)
    assert calls < 300


class _CountingReader(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.reads = 0

    def read(self, n: int = -1) -> bytes:
        self.reads += 1
        return super().read(n)


def test_a_record_longer_than_a_chunk_is_read_in_one_go():
    """Growing the buffer a chunk at a time copied it once per chunk: quadratic in the
    record's size (a 256 MiB record took 36 s, found by a helper). Once the length is
    known, the rest of the record is read at once."""
    payload = bytes(range(256)) * (8 << 12)  # 8 MiB
    data = _frame(payload) + _frame(b"after")
    f = _CountingReader(data)
    tail = _tfrecord.Tail()
    got = [p for spans in _tfrecord.record_spans(f, tail) for p in spans.payloads()]
    assert got == [payload, b"after"]
    assert tail.reason is None
    assert f.reads <= 4  # first chunk, the rest of the record, end of file
