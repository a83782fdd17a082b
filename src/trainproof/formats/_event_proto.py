"""The few protobuf fields of a TensorBoard ``Event`` that carry scalars.

This layer knows the protobuf wire format and the field numbers of ``Event``,
``Summary``, ``Summary.Value``, ``SummaryMetadata`` and ``TensorProto`` (from
TensorFlow's ``event.proto``, ``summary.proto`` and ``tensor.proto``); it does not import
protobuf, tensorboard or tensorflow. It does not know files or runs.

A scalar is either ``Summary.Value.simple_value`` (TF1, tensorboardX, and
``torch.utils.tensorboard`` by default) or a one-element numeric ``tensor`` whose tag's
``metadata.plugin_data.plugin_name`` is ``"scalars"`` (TF2 ``tf.summary.scalar`` and
``add_scalar(new_style=True)``). Writers store the metadata only with the first value of a
tag, so the caller keeps the plugin name per tag (``plugins``). Everything else
(histograms, images, audio, text, graphs, hparams, ``file_version``) is skipped.
"""

from __future__ import annotations

import functools
import struct

import numpy as np

from .._arrays import unique
from ._protowire import ProtoError, fields, varint  # noqa: F401 (ProtoError: raised from here to tfevents)

_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
_E16 = struct.Struct("<e")

# TensorFlow DataType enum values (types.proto) that can hold a scalar metric.
DT_FLOAT, DT_DOUBLE, DT_INT32, DT_UINT8, DT_INT16, DT_INT8 = 1, 2, 3, 4, 5, 6
DT_INT64, DT_BOOL, DT_BFLOAT16, DT_UINT16, DT_HALF, DT_UINT32, DT_UINT64 = 9, 10, 14, 17, 19, 22, 23
_CONTENT = {
    DT_FLOAT: "<f",
    DT_DOUBLE: "<d",
    DT_INT32: "<i",
    DT_UINT8: "<B",
    DT_INT16: "<h",
    DT_INT8: "<b",
    DT_INT64: "<q",
    DT_UINT16: "<H",
    DT_HALF: "<e",
    DT_UINT32: "<I",
    DT_UINT64: "<Q",
}


# The wire format is shared with the W&B reader; the short names are this module's own.
_varint = varint
_fields = fields


def _signed64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _plugin_name(meta: bytes) -> str | None:
    for f, wt, v in _fields(meta):
        if f == 1 and wt == 2:  # plugin_data
            for f2, wt2, v2 in _fields(v):
                if f2 == 1 and wt2 == 2:
                    return v2.decode("utf-8", "replace")
    return None


def _packed(v, wt: int, fmt: str, size: int) -> list:
    if wt == 2:
        if size:
            return [x[0] for x in struct.iter_unpack(fmt, v)] if len(v) % size == 0 else []
        out, i = [], 0
        while i < len(v):
            x, i = _varint(v, i)
            out.append(x)
        return out
    if wt == 0:
        return [v]
    return [struct.unpack(fmt, v)[0]]


def tensor_scalar(t: bytes) -> float | None:
    """The value of a one-element numeric ``TensorProto``, else ``None``."""
    dtype = 0
    elements = 1
    content = None
    vals: list = []
    for f, wt, v in _fields(t):
        if f == 1 and wt == 0:
            dtype = v
        elif f == 2 and wt == 2:  # tensor_shape
            for f2, wt2, v2 in _fields(v):
                if f2 == 2 and wt2 == 2:  # dim
                    size = 0  # proto3 omits a zero size: an empty Dim is a zero-length axis
                    for f3, wt3, v3 in _fields(v2):
                        if f3 == 1 and wt3 == 0:
                            size = _signed64(v3)
                    elements *= size
                elif f2 == 3 and wt2 == 0 and v2:  # unknown_rank
                    return None
        elif f == 4 and wt == 2:
            content = v
        elif f == 5:
            vals = _packed(v, wt, "<f", 4)
        elif f == 6:
            vals = _packed(v, wt, "<d", 8)
        elif f in (7, 10, 16, 17, 11):  # int_val, int64_val, uint32_val, uint64_val, bool_val
            raw = _packed(v, wt, "", 0)
            if f == 10:
                raw = [_signed64(x) for x in raw]
            elif f == 7:
                raw = [x - (1 << 64) if x >= 1 << 63 else x for x in raw]
            vals = raw
        elif f == 13:  # half_val: the 16 bits of a half (or bfloat16) in an int32
            bits = _packed(v, wt, "", 0)
            if dtype == DT_BFLOAT16:
                vals = [_F32.unpack(struct.pack("<I", (x & 0xFFFF) << 16))[0] for x in bits]
            else:
                vals = [_E16.unpack(struct.pack("<H", x & 0xFFFF))[0] for x in bits]
    if elements != 1 or dtype in (0, 7, 8, 18, 20, 21):  # invalid, string, complex, resource, variant
        return None
    if content is not None and dtype in _CONTENT:
        fmt = _CONTENT[dtype]
        if len(content) != struct.calcsize(fmt):
            return None
        return float(struct.unpack(fmt, content)[0])
    if content is not None and dtype == DT_BFLOAT16 and len(content) == 2:
        return _F32.unpack(b"\x00\x00" + content)[0]
    if dtype == DT_BOOL:
        return None  # a boolean is not a metric
    if len(vals) == 1:
        return float(vals[0])
    return None


def parse_event(payload: bytes, plugins: dict[str, str]) -> tuple[float, int, list[tuple[str, float]]]:
    """Decode one Event.

    Args:
        payload: the serialized Event.
        plugins: tag -> plugin name, updated from the metadata seen (writers store it
            only with a tag's first value).

    Returns:
        ``(wall_time, step, [(tag, value), ...])`` with the scalar values of the event.

    Raises:
        ProtoError: the payload is not a well-formed message.
    """
    wall = 0.0
    step = 0
    out: list[tuple[str, float]] = []
    summary = None
    for f, wt, v in _fields(payload):
        if f == 1 and wt == 1:
            wall = _F64.unpack(v)[0]
        elif f == 2 and wt == 0:
            step = _signed64(v)
        elif f == 5 and wt == 2:
            summary = v
    if summary is not None:
        for f, wt, v in _fields(summary):
            if f != 1 or wt != 2:
                continue
            tag = ""
            simple = None
            tensor = None
            meta = None
            for f2, wt2, v2 in _fields(v):
                if f2 == 1 and wt2 == 2:
                    tag = v2.decode("utf-8", "replace")
                elif f2 == 2 and wt2 == 5:
                    simple = _F32.unpack(v2)[0]
                elif f2 == 8 and wt2 == 2:
                    tensor = v2
                elif f2 == 9 and wt2 == 2:
                    meta = v2
            if meta is not None and tag not in plugins:
                name = _plugin_name(meta)
                if name is not None:
                    plugins[tag] = name
            if simple is not None:
                out.append((tag, simple))
            elif tensor is not None and plugins.get(tag) == "scalars":
                val = tensor_scalar(tensor)
                if val is not None:
                    out.append((tag, val))
    return wall, step, out


# The event torch.utils.tensorboard / tensorboardX write for add_scalar: wall_time (1),
# step (2, omitted when 0), summary (5) holding one value (tag 1, simple_value 2), every
# length under 128. Checking that layout byte by byte skips the general decoder for the
# common case; any other layout returns None and falls back to parse_event.
_WALL = struct.Struct("<d").unpack_from
_VALUE = _F32.unpack_from


def parse_simple(p: bytes) -> tuple[float, int, bytes, float] | None:
    """``(wall_time, step, tag_bytes, value)`` for a one-``simple_value`` event in the
    standard layout, else ``None`` (the caller then uses :func:`parse_event`)."""
    n = len(p)
    if n < 20 or p[0] != 0x09:
        return None
    i = 9
    step = 0
    if p[9] == 0x10:
        b = p[10]
        i = 11
        if b < 0x80:
            step = b
        else:
            step = b & 0x7F
            shift = 7
            while True:
                if i >= n:
                    return None
                b = p[i]
                i += 1
                step |= (b & 0x7F) << shift
                if b < 0x80:
                    break
                shift += 7
                if shift > 63:
                    return None
            if step >= 1 << 63:
                step -= 1 << 64
    if n - i < 11:
        return None
    lt = n - i - 11
    if (
        p[i] != 0x2A
        or p[i + 1] != lt + 9
        or p[i + 2] != 0x0A
        or p[i + 3] != lt + 7
        or p[i + 4] != 0x0A
        or p[i + 5] != lt
        or p[n - 5] != 0x15
    ):
        return None
    return _WALL(p, 1)[0], step, p[i + 6 : n - 5], _VALUE(p, n - 4)[0]


def parse_simple_batch(
    payloads: list[bytes],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[bytes]]:
    """:func:`parse_simple` of many payloads at once, vectorised with numpy.

    Returns ``(ok, walls, steps, values, tag_ids, tags)``: ``ok`` a bool array ``(n,)``,
    true where :func:`parse_simple` returns a result; for those records ``walls``
    (float64), ``steps`` (int64), ``values`` (float64, the float32 widened) and
    ``tag_ids`` (int64 index into ``tags``, the distinct tag byte strings) hold exactly
    what it returns. Records where ``ok`` is false (another layout, or a 10-byte step
    varint whose last byte is above 1, where Python's integers and int64 part ways) must
    go through :func:`parse_simple` / :func:`parse_event` one at a time.
    """
    n = len(payloads)
    lengths = np.fromiter(map(len, payloads), dtype=np.int64, count=n)
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    return parse_simple_spans(b"".join(payloads), starts, lengths)


def parse_simple_spans(
    data: bytes, starts: np.ndarray, lengths: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[bytes]]:
    """:func:`parse_simple_batch` of payloads that lie in one buffer: payload ``i`` is
    ``data[starts[i]:starts[i] + lengths[i]]`` (int64 arrays of shape ``(n,)``); same
    return value."""
    n = int(starts.size)
    buf = np.frombuffer(data + bytes(32), dtype=np.uint8)  # padding: gathers stay in bounds
    ok = (lengths >= 20) & (buf[starts] == 0x09)
    has_step = ok & (buf[starts + 9] == 0x10)
    # The step varint: up to 10 bytes from offset 10 (rows of a strided view: the
    # padding keeps starts + 20 inside the buffer).
    vb = _windows(buf, 10)[starts + 10]
    ends_here = vb < 0x80
    first_end = np.where(ends_here.any(axis=1), ends_here.argmax(axis=1), 10)
    vlen = first_end + 1  # bytes in the varint
    good_varint = (first_end < 10) & (10 + vlen <= lengths)
    last = vb[np.arange(n), np.minimum(first_end, 9)]
    good_varint &= ~((vlen == 10) & (last > 1))
    ok &= ~has_step | good_varint
    # Seven bits a byte, one column at a time up to the longest varint (steps under
    # 2,097,152 take at most three).
    steps = np.zeros(n, dtype=np.uint64)
    widest = int(vlen[has_step].max()) if has_step.any() else 0
    for j in range(min(widest, 10)):
        part = (vb[:, j] & 0x7F).astype(np.uint64) << np.uint64(7 * j)
        steps |= np.where(has_step & (j < vlen), part, np.uint64(0))
    steps = steps.view(np.int64)
    i = np.where(has_step, 10 + vlen, 9)
    ok &= lengths - i >= 11
    lt = lengths - i - 11
    at = (starts + i).clip(max=len(buf) - 6)
    end5 = (starts + lengths - 5).clip(min=0)
    ok &= (
        (buf[at] == 0x2A)
        & (buf[at + 1] == lt + 9)
        & (buf[at + 2] == 0x0A)
        & (buf[at + 3] == lt + 7)
        & (buf[at + 4] == 0x0A)
        & (buf[at + 5] == lt)
        & (buf[end5] == 0x15)
    )
    idx = np.flatnonzero(ok)
    walls = np.zeros(n)
    values = np.zeros(n)
    tag_ids = np.full(n, -1, dtype=np.int64)
    tags: list[bytes] = []
    if idx.size:
        walls[idx] = _windows(buf, 8)[starts[idx] + 1].view("<f8").ravel()
        values[idx] = _windows(buf, 4)[starts[idx] + lengths[idx] - 4].view("<f4").ravel().astype(np.float64)
        tag_start = starts[idx] + i[idx] + 6
        lt_ok = lt[idx]
        for length in unique(lt_ok).tolist():
            same_length = lt_ok == length
            sel = idx[same_length]
            rows = _windows(buf, length)[tag_start[same_length]] if length else np.zeros((sel.size, 0), dtype=np.uint8)
            if (rows == rows[0]).all():
                uniq, inv = rows[:1], np.zeros(sel.size, dtype=np.int64)  # one tag of this length
            else:
                uniq, inv = _unique_rows(rows)
            base = len(tags)
            tags.extend(bytes(r) for r in uniq)
            tag_ids[sel] = base + inv.reshape(-1)
    return ok, walls, steps, values, tag_ids, tags


def _windows(buf: np.ndarray, width: int) -> np.ndarray:
    """Every ``width``-byte window of ``buf`` as a row (a strided view, nothing copied):
    indexing it with offsets copies out one contiguous row per offset."""
    return np.lib.stride_tricks.sliding_window_view(buf, width)


@functools.cache
def _row_weights() -> np.ndarray:
    """4,096 odd uint64 weights (fixed seed) for hashing rows of up to 4,096 bytes; made on
    first use, so that a process that reads no event file never imports ``numpy.random``."""
    return np.random.default_rng(0x7F).integers(1, 2**63, size=4096, dtype=np.uint64) | np.uint64(1)


def _unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0, return_inverse=True)`` for a uint8 matrix, by a hash of
    each row (sorting a few integers instead of byte rows), checked exactly: every row
    is compared with its group's first row, and any collision falls back to numpy's."""
    m, width = rows.shape
    weights = _row_weights()
    if m == 0 or width == 0 or width > weights.size:
        uniq, inv = np.unique(rows, axis=0, return_inverse=True)
        return uniq, inv.reshape(-1)
    with np.errstate(over="ignore"):
        h = (rows.astype(np.uint64) * weights[:width]).sum(axis=1, dtype=np.uint64)
    keys, first, inv = np.unique(h, return_index=True, return_inverse=True)
    uniq = rows[first]
    if not (rows == uniq[inv.reshape(-1)]).all():
        uniq, inv = np.unique(rows, axis=0, return_inverse=True)
    return uniq, inv.reshape(-1)
