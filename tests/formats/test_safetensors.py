"""trainproof.formats.safetensors: the one safetensors header reader (env's checkpoint check
and the targets loader use it). Valid files come from the real ``safetensors`` package;
damaged ones give SafetensorsError with a one-line reason, and nothing else is ever raised."""

from __future__ import annotations

import io
import json
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainproof import formats
from trainproof.formats.safetensors import MAX_HEADER_BYTES, Header, SafetensorsError, read_header

st_numpy = pytest.importorskip("safetensors.numpy")


def _file(header: dict, body: bytes = b"") -> bytes:
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + body


@pytest.fixture
def valid(tmp_path):
    p = tmp_path / "w.safetensors"
    st_numpy.save_file(
        {
            "a": np.zeros((3, 4), dtype=np.float32),
            "b": np.arange(5, dtype=np.int64),
            "c": np.ones((), dtype=np.float16),
            "empty": np.zeros((0, 7), dtype=np.uint8),
        },
        str(p),
        metadata={"format": "np", "step": "10"},
    )
    return p


def test_a_file_written_by_the_package_reads_back(valid):
    h = read_header(valid)
    assert isinstance(h, Header)
    raw = valid.read_bytes()
    assert h.header_bytes == struct.unpack("<Q", raw[:8])[0]
    assert h.file_bytes == len(raw) and h.data_start == 8 + h.header_bytes
    assert h.metadata == {"format": "np", "step": "10"}
    assert set(h.tensors) == {"a", "b", "c", "empty"} and "__metadata__" not in h.raw
    a, b, c, e = (h.tensors[k] for k in ("a", "b", "c", "empty"))
    assert (a.dtype, a.shape, a.nbytes) == ("F32", (3, 4), 48)
    assert (b.dtype, b.shape, b.nbytes) == ("I64", (5,), 40)
    assert (c.dtype, c.shape, c.nbytes) == ("F16", (), 2)
    assert (e.dtype, e.shape, e.nbytes) == ("U8", (0, 7), 0)
    assert sum(t.nbytes for t in h.tensors.values()) == h.data_bytes
    # The bytes the header points at are the tensor's.
    start, end = b.data_offsets
    body = raw[h.data_start :]
    assert np.frombuffer(body[start:end], dtype="<i8").tolist() == [0, 1, 2, 3, 4]


def test_an_open_file_reads_the_same_as_its_path(valid):
    with open(valid, "rb") as f:
        assert read_header(f) == read_header(valid)
    assert read_header(io.BytesIO(valid.read_bytes())) == read_header(valid)


def test_safetensors_is_a_helper_not_a_reader():
    assert "safetensors" not in formats.READER_MODULES
    assert all(r.__name__ != "trainproof.formats.safetensors" for r in formats.READERS)


def _err(data: bytes) -> SafetensorsError:
    with pytest.raises(SafetensorsError) as ei:
        read_header(io.BytesIO(data))
    e = ei.value
    assert isinstance(e, ValueError) and str(e) == e.reason
    assert e.reason and "\n" not in e.reason
    return e


def test_truncated_files_say_they_end_early(valid):
    raw = valid.read_bytes()
    e = _err(raw[:5])
    assert e.code == "short" and e.truncated and str(e).startswith("ends early: 5 bytes")
    e = _err(raw[:20])
    assert e.code == "header-truncated" and e.truncated and "inside its header" in str(e)
    assert e.header_bytes == struct.unpack("<Q", raw[:8])[0]
    e = _err(raw[:-10])
    assert e.code == "data-truncated" and e.truncated and str(e) == "ends early: 10 bytes of tensor data missing"
    assert e.cut and e.data_bytes == len(raw) - 10 - 8 - e.header_bytes


def test_a_header_length_over_the_limit_is_refused_before_it_is_read():
    e = _err(struct.pack("<Q", MAX_HEADER_BYTES + 1) + b"{}")
    assert e.code == "header-too-long" and not e.truncated and "100 MB limit" in str(e)
    # exactly at the limit it is the file that is too short
    assert _err(struct.pack("<Q", MAX_HEADER_BYTES) + b"{}").code == "header-truncated"


@pytest.mark.parametrize(
    ("data", "code", "words"),
    [
        (struct.pack("<Q", 5) + b"{abc}", "json", "not valid JSON"),
        (struct.pack("<Q", 2) + b"\xff\xfe", "json", "not valid JSON"),
        (struct.pack("<Q", 20000) + b"[" * 10000 + b"]" * 10000, "json", "nests deeper"),
        (_file([1, 2]), "not-object", "not a JSON object"),
        (_file({"__metadata__": {"a": 1}}), "metadata", "map of strings"),
        (_file({"t": 5}), "entry-not-object", "is not an object"),
        (_file({"t": {"dtype": "F32"}}), "entry-fields", "lacks a dtype"),
        (
            _file({"t": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4),
            "entry-values",
            "non-negative",
        ),
        (
            _file({"t": {"dtype": "F32", "shape": [True], "data_offsets": [0, 4]}}, b"\0" * 4),
            "entry-values",
            "non-negative",
        ),
        (
            _file({"t": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}, b"\0" * 4),
            "offsets-reversed",
            "before it begins",
        ),
        (_file({"t": {"dtype": "Q7", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4), "dtype", "unknown dtype 'Q7'"),
        (
            _file({"t": {"dtype": "F32", "shape": [2**40] * 40, "data_offsets": [0, 4]}}, b"\0" * 4),
            "size-mismatch",
            "needs more bytes",
        ),
        (
            _file({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, b"\0" * 4),
            "size-mismatch",
            "needs 8 bytes",
        ),
        (
            _file({"t": {"dtype": "F32", "shape": [10**400], "data_offsets": [0, 10**401]}}),
            "size-mismatch",
            "over 1e308",
        ),
        (_file({"t": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8), "gap", "gap of 4 bytes"),
        (
            _file(
                {
                    "t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                    "u": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]},
                },
                b"\0" * 8,
            ),
            "overlap",
            "overlaps",
        ),
        (_file({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 6), "trailing", "2 bytes follow"),
    ],
)
def test_garbage_gives_a_reason(data, code, words):
    e = _err(data)
    assert e.code == code and not e.truncated
    assert words in str(e)


def test_a_long_tensor_name_is_cut_in_the_reason():
    e = _err(_file({"x" * 10_000: 5}))
    assert e.tensor == "x" * 10_000 and len(str(e)) < 200


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=512))
def test_arbitrary_bytes_raise_only_safetensors_error(data):
    try:
        read_header(io.BytesIO(data))
    except SafetensorsError as e:
        assert str(e) and "\n" not in str(e)


_prefix = _file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})
_json_tails = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c, max_size=4),
    max_leaves=12,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=256), st.integers(0, len(_prefix)))
def test_bytes_after_a_valid_prefix_raise_only_safetensors_error(tail, cut):
    try:
        read_header(io.BytesIO(_prefix[:cut] + tail))
    except SafetensorsError as e:
        assert str(e) and "\n" not in str(e)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.text(max_size=6), _json_tails, max_size=4), st.binary(max_size=64))
def test_arbitrary_json_headers_raise_only_safetensors_error(header, body):
    try:
        h = read_header(io.BytesIO(_file(header, body)))
    except SafetensorsError as e:
        assert str(e) and "\n" not in str(e)
    else:
        assert sum(t.nbytes for t in h.tensors.values()) == h.data_bytes == len(body)
