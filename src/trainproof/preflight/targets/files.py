"""Reading targets for ``trainproof targets`` from ``.npy``, ``.npz`` or ``.safetensors``
files, never with pickle (``np.load(..., allow_pickle=False)``; safetensors through the
``safetensors`` package's numpy API when it is installed, else with the header read by
:func:`trainproof.formats.safetensors.read_header`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...formats.safetensors import SafetensorsError, read_header


class TargetFileError(ValueError):
    """A targets file that cannot be read without pickle, or holds no usable array."""


_ST_DTYPES = {
    "BOOL": np.bool_,
    "U8": np.uint8,
    "I8": np.int8,
    "U16": np.uint16,
    "I16": np.int16,
    "U32": np.uint32,
    "I32": np.int32,
    "U64": np.uint64,
    "I64": np.int64,
    "F16": np.float16,
    "F32": np.float32,
    "F64": np.float64,
}


def _read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Read a .safetensors file: the ``safetensors`` package's numpy API when installed,
    else the header checked by :func:`~trainproof.formats.safetensors.read_header` and the
    tensors of class-id dtypes read from the data area.

    Raises:
        TargetFileError: a file either way refuses, or a tensor of a dtype that cannot hold
            class ids (bfloat16, float8, complex).
        OSError: the file cannot be read.
    """
    try:
        from safetensors.numpy import load_file
    except ImportError:
        load_file = None
    if load_file is not None:
        try:
            return dict(load_file(str(path)))
        except Exception as e:  # noqa: BLE001 - the package raises its own error types
            raise TargetFileError(f"{path}: not a readable safetensors file: {e}") from None
    try:
        header = read_header(path)
    except SafetensorsError as e:
        raise TargetFileError(f"{path}: {_reason(e)}") from None
    for name, t in header.tensors.items():
        if t.dtype not in _ST_DTYPES:
            raise TargetFileError(f"{path}: tensor {name!r} has dtype {t.dtype}, which cannot hold class ids")
    with open(path, "rb") as f:
        f.seek(header.data_start)
        body = f.read(header.data_bytes)
    if len(body) != header.data_bytes:
        raise TargetFileError(f"{path}: not a safetensors file (it changed while it was read)")
    out: dict[str, np.ndarray] = {}
    for name, t in header.tensors.items():
        start, end = t.data_offsets
        dt = np.dtype(_ST_DTYPES[t.dtype]).newbyteorder("<")
        out[name] = np.frombuffer(memoryview(body)[start:end], dtype=dt).reshape(t.shape)
    return out


def _reason(e: SafetensorsError) -> str:
    """The words of ``trainproof targets`` for a file :func:`read_header` refuses."""
    if e.code == "short":
        return "not a safetensors file (shorter than its 8-byte header length)"
    if e.code in ("header-too-long", "header-truncated"):
        return f"not a safetensors file (header length {e.header_bytes} exceeds the file)"
    if e.code == "json":
        return f"not a safetensors file (header is not JSON: {e.cause})"
    if e.code == "not-object":
        return "not a safetensors file (header is not a JSON object)"
    name = repr(e.tensor)
    if e.code == "dtype":
        return f"tensor {name} has dtype {e.entry['dtype']}, which cannot hold class ids"
    if e.code == "entry-fields":
        missing = next((k for k in ("dtype", "shape", "data_offsets") if k not in e.entry), None)
        if missing is not None:
            return f"tensor {name} has a malformed header entry (missing {missing!r})"
    if e.code == "entry-values" and all(
        isinstance(v, int) for v in (*e.entry.get("shape", ()), *e.entry.get("data_offsets", ()))
    ):
        return f"tensor {name} lies outside the file or does not match its dtype and shape"
    if e.code == "trailing":
        return f"not a safetensors file ({e})"
    if e.code in ("metadata", "entry-not-object", "entry-fields", "entry-values"):
        return f"tensor {name} has a malformed header entry"
    return f"tensor {name} lies outside the file or does not match its dtype and shape"


def load_arrays(path: str | Path) -> dict[str, np.ndarray]:
    """Every array in a ``.npy``, ``.npz`` or ``.safetensors`` file, never unpickling.

    A ``.npy`` file gives one array named ``"targets"``.

    Raises:
        TargetFileError: missing or unreadable file, pickled (object) arrays, an unknown
            suffix, or a malformed safetensors header.
    """
    p = Path(path)
    if not p.is_file():
        raise TargetFileError(f"{p}: no such file")
    suffix = p.suffix.lower()
    try:
        if suffix == ".safetensors":
            return _read_safetensors(p)
        if suffix == ".npy":
            return {"targets": np.load(p, allow_pickle=False)}
        if suffix == ".npz":
            with np.load(p, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
    except TargetFileError:
        raise
    except ValueError as e:
        msg = str(e)
        if "pickle" in msg.lower():
            raise TargetFileError(
                f"{p}: holds pickled data, which is never loaded (it can run arbitrary code); "
                "save integer arrays instead"
            ) from None
        raise TargetFileError(f"{p}: not a readable {suffix} file: {msg}") from None
    except (OSError, EOFError) as e:
        raise TargetFileError(f"{p}: cannot read: {e}") from None
    raise TargetFileError(f"{p}: unknown suffix {p.suffix or '(none)'!r}; expected .npy, .npz or .safetensors")


def _pick(arrays: dict[str, np.ndarray], key: str | None, path: Path) -> str:
    names = sorted(arrays)
    if key is not None:
        if key not in arrays:
            raise TargetFileError(f"{path}: no array {key!r}; it holds {', '.join(names) or 'none'}")
        return key
    if len(arrays) == 1:
        return names[0]
    for k in ("labels", "targets", "target", "label", "y"):
        if k in arrays:
            return k
    raise TargetFileError(
        f"{path}: holds {len(arrays)} arrays ({', '.join(names) or 'none'}); name the targets with --key"
    )
