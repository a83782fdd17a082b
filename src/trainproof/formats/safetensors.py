"""The header of a ``.safetensors`` file, read and checked without the ``safetensors`` package.

A safetensors file is an 8-byte little-endian header length ``N``, ``N`` bytes of UTF-8
JSON, then the data area. The JSON is one object: an optional ``__metadata__`` map of
strings, and one entry per tensor, ``{"dtype": ..., "shape": [...], "data_offsets":
[begin, end]}``, with offsets relative to the start of the data area. The format requires
``N <= 100,000,000``, every tensor's byte range to match its dtype and shape, and the
ranges, sorted, to cover the data area exactly (no gap, no overlap, nothing after the
last tensor). :func:`read_header` enforces all of that and raises
:class:`SafetensorsError` with a one-line reason otherwise; it reads the header only,
never the tensor bytes.

This is a helper of the preflight checks and the targets loader, not a log reader: it is
not in :data:`trainproof.formats.READER_MODULES`.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass
from typing import IO, Any

__all__ = ["DTYPE_BITS", "MAX_HEADER_BYTES", "Header", "SafetensorsError", "TensorEntry", "read_header"]

#: The format's own limit on the header length ``N``, in bytes.
MAX_HEADER_BYTES = 100_000_000

#: Bits per element of every safetensors dtype.
DTYPE_BITS = {
    "BOOL": 8,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "I64": 64,
    "U64": 64,
    "F64": 64,
    "C64": 64,
}


class SafetensorsError(ValueError):
    """A file that is not a valid safetensors file; ``str(e)`` is the one-line reason.

    The reason reads after the file's name: ``"ends early: ..."`` when the file is cut
    short (``truncated`` is true), otherwise what is wrong (``"the header is not a JSON
    object"``).

    Attributes:
        code: what went wrong, for callers that word it their own way: ``short`` (under 8
            bytes), ``header-too-long`` (``N`` over :data:`MAX_HEADER_BYTES`),
            ``header-truncated``, ``json``, ``not-object``, ``metadata``,
            ``entry-not-object``, ``entry-fields`` (a dtype, shape or two offsets missing),
            ``entry-values`` (not non-negative integers), ``offsets-reversed``, ``dtype``
            (unknown), ``size-mismatch`` (the byte range does not match dtype and shape),
            ``gap``, ``overlap``, ``data-truncated``, ``trailing``.
        truncated: the file ends before what its header describes.
        evidence: a further line of explanation, or ``""``.
        header_bytes: ``N`` once read, else ``None``.
        tensors: the number of tensor entries once the header parsed, else ``None``.
        data_bytes: the size of the data area once known, else ``None``.
        tensor: the name of the tensor at fault (for ``data-truncated`` the first in header
            order that reaches past the end), or ``None``.
        entry: the raw JSON value of that tensor's entry, or ``None``.
        cause: the text of the underlying decoding error (``json``), else ``""``.
        cut: for ``data-truncated``, the tensors that reach past the end, in offset order.
    """

    def __init__(
        self,
        reason: str,
        code: str,
        *,
        truncated: bool = False,
        evidence: str = "",
        header_bytes: int | None = None,
        tensors: int | None = None,
        data_bytes: int | None = None,
        tensor: str | None = None,
        entry: Any = None,
        cause: str = "",
        cut: list[str] | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code
        self.truncated = truncated
        self.evidence = evidence
        self.header_bytes = header_bytes
        self.tensors = tensors
        self.data_bytes = data_bytes
        self.tensor = tensor
        self.entry = entry
        self.cause = cause
        self.cut = list(cut or [])


@dataclass(frozen=True)
class TensorEntry:
    """One tensor of the header.

    Attributes:
        name: its key in the header.
        dtype: a key of :data:`DTYPE_BITS` (``"F32"``, ``"BF16"``, ...).
        shape: its dimensions (``()`` for a scalar).
        data_offsets: ``(begin, end)`` in bytes, relative to the start of the data area.
    """

    name: str
    dtype: str
    shape: tuple[int, ...]
    data_offsets: tuple[int, int]

    @property
    def nbytes(self) -> int:
        """The length of its byte range."""
        return self.data_offsets[1] - self.data_offsets[0]


@dataclass(frozen=True)
class Header:
    """A checked safetensors header.

    Attributes:
        header_bytes: ``N``, the length of the JSON header in bytes.
        file_bytes: the size of the file.
        raw: the JSON header as parsed, ``__metadata__`` left out.
        metadata: the ``__metadata__`` map, or ``None`` when absent.
        tensors: name -> :class:`TensorEntry`, in header order.
    """

    header_bytes: int
    file_bytes: int
    raw: dict
    metadata: dict[str, str] | None
    tensors: dict[str, TensorEntry]

    @property
    def data_start(self) -> int:
        """The file offset of the data area (``8 + N``)."""
        return 8 + self.header_bytes

    @property
    def data_bytes(self) -> int:
        """The size of the data area."""
        return self.file_bytes - 8 - self.header_bytes


def _short(text: str, width: int = 120) -> str:
    """``text`` cut to ``width`` characters: a tensor name can be megabytes long, and a
    reason must stay one readable line."""
    return text if len(text) <= width else text[: width - 3] + "..."


def _json_excerpt(obj: object, width: int = 200) -> str:
    """The start of ``obj`` as JSON, or its type when it cannot be written back."""
    try:
        return json.dumps(obj)[:width]
    except (ValueError, TypeError, RecursionError):
        return type(obj).__name__


def _numel(shape: list, cap: int) -> int | None:
    """The element count of ``shape``, or ``None`` once it exceeds ``cap``: a declared
    shape such as [2**62, 2**62, ...] would otherwise build an integer of millions of
    digits before being compared with a byte range of a few bytes."""
    if any(d == 0 for d in shape):
        return 0
    n = 1
    for d in shape:
        n *= d
        if n > cap:
            return None
    return n


def _bytes_text(bits: int) -> str:
    """``bits / 8`` as a short number; a count past what a float holds (a planted shape)
    is named as such instead of raising OverflowError."""
    try:
        return f"{bits / 8:g}"
    except OverflowError:
        return "over 1e308"


def _is_count(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def read_header(source: str | os.PathLike | IO[bytes]) -> Header:
    """Read and check the header of the safetensors file ``source`` (a path, or a binary
    file open for reading and seekable; it is read from its start and left where the
    header ends).

    Returns:
        the :class:`Header`: every tensor's byte range lies inside the file, matches its
        dtype and shape, and the ranges cover the data area exactly.

    Raises:
        SafetensorsError: the file is not a valid safetensors file (the reason says why).
        OSError: the file cannot be opened or read.
    """
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as f:
            return _read(f, os.fstat(f.fileno()).st_size)
    source.seek(0, os.SEEK_END)
    size = source.tell()
    source.seek(0)
    return _read(source, size)


def _read(f: IO[bytes], size: int) -> Header:
    if size < 8:
        raise SafetensorsError(
            f"ends early: {size} bytes, shorter than its 8-byte header length", "short", truncated=True
        )
    (n,) = struct.unpack("<Q", f.read(8))
    if n > MAX_HEADER_BYTES:
        raise SafetensorsError(
            f"header length {n} is over the format's 100 MB limit",
            "header-too-long",
            evidence="the first 8 bytes are not a safetensors header length",
            header_bytes=n,
        )
    if 8 + n > size:
        raise SafetensorsError(
            "ends early: inside its header",
            "header-truncated",
            truncated=True,
            evidence=f"the header needs bytes 8-{8 + n}, the file has {size}",
            header_bytes=n,
        )
    raw = f.read(n)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise SafetensorsError(
            f"the header is not valid JSON ({_short(str(e))})", "json", header_bytes=n, cause=str(e)
        ) from None
    except RecursionError:
        raise SafetensorsError(
            "the header nests deeper than a JSON parser can follow",
            "json",
            evidence="a safetensors header is one flat object of tensor entries",
            header_bytes=n,
            cause="nested too deeply",
        ) from None
    if not isinstance(header, dict):
        raise SafetensorsError("the header is not a JSON object", "not-object", header_bytes=n)
    meta = header.pop("__metadata__", None)
    if meta is not None and not (isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())):
        raise SafetensorsError(
            "__metadata__ is not a map of strings", "metadata", header_bytes=n, tensor="__metadata__", entry=meta
        )
    data_len = size - 8 - n
    facts = {"header_bytes": n, "tensors": len(header), "data_bytes": data_len}
    tensors: dict[str, TensorEntry] = {}
    spans = []
    for name, t in header.items():
        tname = repr(_short(name))
        at = {**facts, "tensor": name, "entry": t}
        if not isinstance(t, dict):
            raise SafetensorsError(f"tensor {tname} is not an object", "entry-not-object", **at)
        dtype, shape, offs = t.get("dtype"), t.get("shape"), t.get("data_offsets")
        if not isinstance(dtype, str) or not isinstance(shape, list) or not isinstance(offs, list) or len(offs) != 2:
            raise SafetensorsError(
                f"tensor {tname} lacks a dtype, a shape or two data_offsets",
                "entry-fields",
                evidence=_json_excerpt(t),
                **at,
            )
        if not all(_is_count(d) for d in shape) or not all(_is_count(o) for o in offs):
            raise SafetensorsError(
                f"tensor {tname} has a shape or offsets that are not non-negative integers",
                "entry-values",
                evidence=_json_excerpt(t),
                **at,
            )
        b, e = offs
        if e < b:
            raise SafetensorsError(
                f"tensor {tname} ends (byte {_short(str(e))}) before it begins (byte {_short(str(b))})",
                "offsets-reversed",
                **at,
            )
        bits = DTYPE_BITS.get(dtype)
        if bits is None:
            raise SafetensorsError(f"tensor {tname} has unknown dtype {_short(dtype)!r}", "dtype", **at)
        shape_text = _short(str(shape), 80)
        # A consistent entry has no more elements than its byte range has bits.
        numel = _numel(shape, cap=8 * (e - b))
        if numel is None:
            raise SafetensorsError(
                f"tensor {tname} ({dtype} {shape_text}) needs more bytes than its offsets give ({_short(str(e - b))})",
                "size-mismatch",
                evidence=f"data area {data_len} bytes",
                **at,
            )
        if (numel * bits) % 8 or e - b != numel * bits // 8:
            raise SafetensorsError(
                f"tensor {tname} ({dtype} {shape_text}) needs {_bytes_text(numel * bits)} bytes, "
                f"its offsets give {_short(str(e - b))}",
                "size-mismatch",
                evidence=f"data_offsets [{_short(str(b))}, {_short(str(e))}], data area {data_len} bytes",
                **at,
            )
        tensors[name] = TensorEntry(name, dtype, tuple(shape), (b, e))
        spans.append((b, e, name))
    spans.sort()
    pos = 0
    for b, e, name in spans:
        if b != pos:
            what = "overlaps the tensor before it" if b < pos else f"leaves a gap of {b - pos} bytes before it"
            raise SafetensorsError(
                f"tensor {name!r} {what} (starts at {b}, previous end {pos})",
                "overlap" if b < pos else "gap",
                **facts,
                tensor=name,
                entry=header[name],
            )
        pos = e
    if pos > data_len:
        cut = [name for b, e, name in spans if e > data_len]
        raise SafetensorsError(
            f"ends early: {pos - data_len} bytes of tensor data missing",
            "data-truncated",
            truncated=True,
            evidence=f"the header describes {pos} bytes of data, the file holds {data_len}; tensors cut: "
            + ", ".join(cut[:5])
            + (f" and {len(cut) - 5} more" if len(cut) > 5 else ""),
            **facts,
            tensor=next(name for name, t in tensors.items() if t.data_offsets[1] > data_len),
            cut=cut,
        )
    if pos < data_len:
        raise SafetensorsError(
            f"{data_len - pos} bytes follow the last tensor",
            "trailing",
            evidence="safetensors refuses a file its header does not cover exactly",
            **facts,
        )
    return Header(header_bytes=n, file_bytes=size, raw=header, metadata=meta, tensors=tensors)
