"""The imports a pickle would perform when loaded, read without unpickling it.

Unpickling runs code: every ``GLOBAL``, ``INST`` and ``STACK_GLOBAL`` opcode imports a
module and looks a name up in it, and ``REDUCE`` then calls what was found (a pickle
that imports ``os.system`` runs a shell command). :func:`pickle_imports` walks the opcode
stream with :func:`pickletools.genops`, which only parses, and follows the stack and the
memo symbolically, so that a ``STACK_GLOBAL`` whose module and name strings were pushed
earlier, fetched from the memo or shuffled with ``POP`` is resolved as the unpickler
would resolve it. A name the walk cannot resolve (not built from two string pushes) is
reported as unresolved, never as safe.

:data:`WEIGHTS_ONLY_GLOBALS` is the set ``torch.load(weights_only=True)`` accepts by
default; a checkpoint whose pickle imports nothing else loads there without running code
of its own.
"""

from __future__ import annotations

import _compat_pickle
import pickletools

#: Every global that torch's weights-only unpickler accepts without ``add_safe_globals``:
#: the keys of ``torch._weights_only_unpickler._get_allowed_globals()`` in torch 2.x
#: (read from torch 2.13): containers, dtypes, tensor, storage and layout types, the
#: quantization schemes and the tensor rebuild functions. Python 2 names
#: (``__builtin__.set``, which ``torch.save``'s protocol 2 writes) are mapped first, as
#: the unpickler maps them.
WEIGHTS_ONLY_GLOBALS: frozenset[str] = frozenset(
    [
        "_codecs.encode",
        "builtins.bytearray",
        "builtins.complex",
        "builtins.set",
        "collections.Counter",
        "collections.OrderedDict",
        "torch.Size",
        "torch.Tensor",
        "torch.device",
        "torch.nn.parameter.Parameter",
        "torch.serialization._get_layout",
        "torch.storage.TypedStorage",
        "torch.storage.UntypedStorage",
        "torch._tensor._rebuild_from_type_v2",
    ]
    + [
        f"torch._utils.{f}"
        for f in (
            "_rebuild_device_tensor_from_cpu_tensor",
            "_rebuild_device_tensor_from_numpy",
            "_rebuild_meta_tensor_no_storage",
            "_rebuild_nested_tensor",
            "_rebuild_parameter",
            "_rebuild_parameter_with_state",
            "_rebuild_qtensor",
            "_rebuild_sparse_tensor",
            "_rebuild_tensor",
            "_rebuild_tensor_v2",
            "_rebuild_tensor_v3",
            "_rebuild_wrapper_subclass",
        )
    ]
    + [
        f"torch.{t}"
        for t in (
            "bfloat16",
            "bits16",
            "bits1x8",
            "bits2x4",
            "bits4x2",
            "bits8",
            "bool",
            "complex128",
            "complex32",
            "complex64",
            "float16",
            "float32",
            "float4_e2m1fn_x2",
            "float64",
            "float8_e4m3fn",
            "float8_e4m3fnuz",
            "float8_e5m2",
            "float8_e5m2fnuz",
            "float8_e8m0fnu",
            "qint32",
            "qint8",
            "quint2x4",
            "quint4x2",
            "quint8",
            "per_channel_affine",
            "per_channel_affine_float_qparams",
            "per_channel_symmetric",
            "per_tensor_affine",
            "per_tensor_symmetric",
            *(f"int{i}" for i in range(1, 8)),
            "int16",
            "int32",
            "int64",
            "int8",
            *(f"uint{i}" for i in range(1, 8)),
            "uint16",
            "uint32",
            "uint64",
            "uint8",
        )
    ]
    # Legacy typed storages (torch.save writes torch.FloatStorage & co. for every tensor).
    + [
        f"torch.{t}Storage"
        for t in (
            "BFloat16",
            "Bool",
            "Byte",
            "Char",
            "ComplexDouble",
            "ComplexFloat",
            "Double",
            "Float",
            "Half",
            "Int",
            "Long",
            "QInt32",
            "QInt8",
            "QUInt2x4",
            "QUInt4x2",
            "QUInt8",
            "Short",
        )
    ]
    + [
        f"torch.cuda.{t}Storage"
        for t in (
            "BFloat16",
            "Bool",
            "Byte",
            "Char",
            "ComplexDouble",
            "ComplexFloat",
            "Double",
            "Float",
            "Half",
            "Int",
            "Long",
            "Short",
        )
    ]
    # Legacy tensor types.
    + [
        f"{m}.{t}Tensor"
        for m in ("torch", "torch.cuda")
        for t in ("BFloat16", "Bool", "Byte", "Char", "Double", "Float", "Half", "Int", "Long", "Short")
    ]
    + [
        f"{m}.{t}Tensor"
        for m in ("torch.sparse", "torch.cuda.sparse")
        for t in ("BFloat16", "Byte", "Char", "Double", "Float", "Half", "Int", "Long", "Short")
    ]
)

#: What an import the walk cannot name is reported as.
UNRESOLVED = "<a name computed while loading>"


class PickleScanError(ValueError):
    """The bytes are not a pickle stream (an unknown opcode, a truncated argument, no STOP)."""


class _Unknown:
    """A stack value the walk does not track (anything but a string)."""


_UNKNOWN = _Unknown()
_MARK = object()
_STRING_OPS = {"STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8"}
_PUT_OPS = {"PUT", "BINPUT", "LONG_BINPUT"}
_GET_OPS = {"GET", "BINGET", "LONG_BINGET"}


class _Confused(Exception):
    """The stream's stack effects do not add up (the unpickler would fail too)."""


def _pop(stack: list) -> object:
    if not stack:
        raise _Confused
    return stack.pop()


def _pop_to_mark(stack: list) -> None:
    while True:
        if _pop(stack) is _MARK:
            return


def _full_name(module: str, name: str, proto: int) -> str:
    # The unpickler maps Python 2 names only for protocols 0-2 (fix_imports).
    if proto < 3:
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
    return f"{module}.{name}"


def pickle_imports(data: bytes) -> list[str]:
    """The globals loading ``data`` would import, as ``module.name``, in stream order
    without repeats; :data:`UNRESOLVED` stands for one the walk cannot name.

    Reads only the first pickle in ``data`` (up to its STOP), as ``pickle.load`` does.
    Time and memory are linear in ``len(data)``: the caller bounds the size.

    Raises:
        PickleScanError: ``data`` is not a pickle stream.
    """
    found: dict[str, None] = {}
    stack: list = []
    memo: dict = {}
    proto = 0
    confused = False
    try:
        for op, arg, _pos in pickletools.genops(data):
            name = op.name
            if confused:
                # The stack is lost: GLOBAL and INST still name themselves, a STACK_GLOBAL
                # cannot be resolved. Parsing goes on, so that a broken stream is an error.
                if name in ("GLOBAL", "INST"):
                    module, _, attr = str(arg).partition(" ")
                    found[_full_name(module, attr, proto)] = None
                elif name == "STACK_GLOBAL":
                    found[UNRESOLVED] = None
                continue
            try:
                if name == "PROTO":
                    proto = int(arg)
                elif name == "FRAME":
                    pass
                elif name in ("GLOBAL", "INST"):
                    module, _, attr = str(arg).partition(" ")
                    found[_full_name(module, attr, proto)] = None
                    if name == "INST":
                        _pop_to_mark(stack)
                    stack.append(_UNKNOWN)
                elif name == "STACK_GLOBAL":
                    attr, module = _pop(stack), _pop(stack)
                    if isinstance(module, str) and isinstance(attr, str):
                        found[_full_name(module, attr, proto)] = None
                    else:
                        found[UNRESOLVED] = None
                    stack.append(_UNKNOWN)
                elif name in _STRING_OPS:
                    stack.append(str(arg))
                elif name in _PUT_OPS:
                    if not stack:
                        raise _Confused
                    memo[arg] = stack[-1]
                elif name == "MEMOIZE":
                    if not stack:
                        raise _Confused
                    memo[len(memo)] = stack[-1]
                elif name in _GET_OPS:
                    stack.append(memo.get(arg, _UNKNOWN))
                elif name == "DUP":
                    if not stack:
                        raise _Confused
                    stack.append(stack[-1])
                elif name == "MARK":
                    stack.append(_MARK)
                elif name == "POP_MARK":
                    _pop_to_mark(stack)
                else:
                    before = op.stack_before
                    if pickletools.markobject in before:
                        _pop_to_mark(stack)
                        for _ in range(before.index(pickletools.markobject)):
                            _pop(stack)
                    else:
                        for _ in before:
                            _pop(stack)
                    stack.extend(_UNKNOWN for _ in op.stack_after)
            except _Confused:
                # The stack effects do not add up, so from here on the walk cannot say what
                # a STACK_GLOBAL's strings are.
                confused = True
                found[UNRESOLVED] = None
    except ValueError as e:  # genops: an unknown opcode, a truncated argument, no STOP
        raise PickleScanError(str(e)) from None
    return list(found)


def unsafe_imports(imports: list[str]) -> list[str]:
    """The imports outside :data:`WEIGHTS_ONLY_GLOBALS`, in the order given."""
    return [i for i in imports if i not in WEIGHTS_ONLY_GLOBALS]
