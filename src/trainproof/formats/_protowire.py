"""The protobuf wire format, without protobuf: a message's fields by number and wire type.

The low-level layer the binary readers share: TensorBoard's ``Event`` messages
(:mod:`._event_proto`) and W&B's ``Record`` messages (:mod:`._wandb_records`) are walked
with it; each of those knows its own field numbers, this module none.
"""

from __future__ import annotations

from collections.abc import Iterator


class ProtoError(ValueError):
    """The payload is not a well-formed protobuf message."""


def varint(b: bytes, i: int) -> tuple[int, int]:
    """The varint at byte ``i`` of ``b`` and the index after it.

    Raises:
        ProtoError: the bytes end inside it, or it is longer than 10 bytes.
    """
    result = 0
    shift = 0
    while True:
        if i >= len(b):
            raise ProtoError("truncated varint")
        x = b[i]
        i += 1
        result |= (x & 0x7F) << shift
        if x < 0x80:
            return result, i
        shift += 7
        if shift > 70:
            raise ProtoError("varint too long")


def fields(b: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """Yield ``(field_number, wire_type, value)`` of the message ``b``: int for varints,
    bytes for length-delimited fields, raw 4/8 bytes for fixed32/fixed64.

    Raises:
        ProtoError: a field runs past the message, or a wire type is not one of these
            (groups, deprecated since proto2, are not read).
    """
    i, n = 0, len(b)
    while i < n:
        key, i = varint(b, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            ln, i = varint(b, i)
            if i + ln > n:
                raise ProtoError("length-delimited field runs past the message")
            v = b[i : i + ln]
            i += ln
        elif wt == 5:
            if i + 4 > n:
                raise ProtoError("truncated fixed32")
            v = b[i : i + 4]
            i += 4
        elif wt == 1:
            if i + 8 > n:
                raise ProtoError("truncated fixed64")
            v = b[i : i + 8]
            i += 8
        else:
            raise ProtoError(f"unsupported wire type {wt}")
        yield field, wt, v
