"""The checkpoint checks of ``trainproof env``: a file or a directory, never unpickled.

A torch checkpoint (``torch.save`` since 1.6) is a ZIP archive: its central directory is
read, ``<top>/data.pkl`` must exist and every entry's CRC-32 is verified (the whole file is
read once). The imports ``data.pkl`` would perform are listed from its opcodes
(:mod:`trainproof.preflight._pickle`), and any outside what ``torch.load(weights_only=True)``
accepts is a warning naming them. A ``.safetensors`` file's header is read and checked by
:func:`trainproof.formats.safetensors.read_header` (not by the ``safetensors`` package). A
directory is checked file by file (``*.safetensors``, ``*.bin``, ``*.pt``, ``*.pth``,
``*.ckpt``) and every ``*.index.json`` in it must name only files that exist; numbered
shards (``model-00001-of-00004.safetensors``) must all be present.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import stat
import struct
import zipfile
import zlib
from pathlib import Path

from ...findings import Finding
from ...formats.safetensors import MAX_HEADER_BYTES, SafetensorsError, read_header
from .. import finding
from .._pickle import UNRESOLVED, PickleScanError, pickle_imports, unsafe_imports

_CKPT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt")
_SHARD = re.compile(r"^(?P<stem>.+)-(?P<i>\d+)-of-(?P<n>\d+)(?P<ext>\.[A-Za-z0-9]+)$")
_LFS = b"version https://git-lfs"
#: The largest data.pkl whose imports are listed. A state dict pickles in ~100-200 bytes a
#: tensor (a 7B-parameter model's is tens of kilobytes, its Adam state a few hundred), and
#: the opcode walk reads about 2 MB a second in pure Python, so 16 MiB is far above real
#: checkpoints while a planted pickle costs seconds, not minutes.
_MAX_PICKLE_BYTES = 16 << 20


def _size(n: float) -> str:
    """Bytes as B, KB, MB or GB (powers of 1024)."""
    for unit, div in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if abs(n) >= div:
            return f"{n / div:.1f} {unit}"
    return f"{int(n)} B"


def _n(k: int, word: str) -> str:
    return f"{k} {word}" + ("" if k == 1 else "s")


def _short(text: str, width: int = 120) -> str:
    """``text`` cut to ``width`` characters: names read from a file (a tensor name, a
    pickled global) can be megabytes long, and a message must stay one readable line."""
    return text if len(text) <= width else text[: width - 3] + "..."


def check_checkpoint(path: str) -> list[Finding]:
    """Findings about one ``--checkpoint`` (a file: one finding; a directory: one per
    problem, plus one OK per format that passed)."""
    p = Path(path)
    if os.path.isdir(p):
        return _check_dir(path)
    return [check_file(path)]


def check_file(path: str) -> Finding:
    """One finding about one checkpoint file; never unpickles anything."""
    data: dict = {"path": path}
    try:
        st = os.stat(path)
    except FileNotFoundError:
        why = "a symlink to a missing file" if os.path.islink(path) else "no such file"
        return finding("TP-ENV-CKPT-MISSING", f"checkpoint {path} does not exist ({why})", data=data)
    except OSError as e:
        return finding("TP-ENV-CKPT-UNREADABLE", f"checkpoint {path} cannot be read: {e.strerror or e}", data=data)
    if not stat.S_ISREG(st.st_mode):
        return finding("TP-ENV-CKPT-UNREADABLE", f"checkpoint {path} is not a regular file", data=data)
    data["bytes"] = st.st_size
    if st.st_size == 0:
        return finding("TP-ENV-CKPT-EMPTY", f"checkpoint {path} is empty (0 bytes)", data=data)
    try:
        with open(path, "rb") as f:
            head = f.read(512)
    except OSError as e:
        return finding("TP-ENV-CKPT-UNREADABLE", f"checkpoint {path} cannot be read: {e.strerror or e}", data=data)
    try:
        if head.startswith(_LFS):
            return finding(
                "TP-ENV-CKPT-LFS-POINTER",
                f"checkpoint {path} is a Git LFS pointer ({st.st_size} bytes), not the weights",
                evidence=head.decode("ascii", "replace").strip().replace("\n", " | ")[:200],
                data=data,
            )
        if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
            return _check_torch_zip(path, st.st_size, data)
        if path.endswith(".safetensors") or (len(head) >= 9 and head[8:9] == b"{"):
            return _check_safetensors(path, st.st_size, data)
        if head[:1] == b"\x80" and len(head) > 1 and 2 <= head[1] <= 5:
            legacy = head[2:4] == b"\x8a\x0a"  # torch's legacy magic number, pickled as a long
            data["format"] = "torch-legacy" if legacy else "pickle"
            what = "a legacy (pre-1.6) torch checkpoint" if legacy else "a bare pickle"
            return finding(
                "TP-ENV-CKPT-LEGACY",
                f"checkpoint {path} is {what}: not opened (unpickling runs code)",
                evidence=f"pickle protocol {head[1]}, {_size(st.st_size)}; re-save it with a current "
                "torch.save or as safetensors to have it checked",
                data=data,
            )
        if len(head) > 262 and head[257:262] == b"ustar":
            data["format"] = "torch-tar"
            return finding(
                "TP-ENV-CKPT-LEGACY",
                f"checkpoint {path} is a tar archive (torch < 0.4 format): not opened",
                evidence="its entries are pickles; re-save it with a current torch.save",
                data=data,
            )
    except OSError as e:
        return finding("TP-ENV-CKPT-UNREADABLE", f"checkpoint {path} cannot be read: {e.strerror or e}", data=data)
    return finding(
        "TP-ENV-CKPT-UNKNOWN-FORMAT",
        f"checkpoint {path} is in no format trainproof checks",
        evidence=f"{_size(st.st_size)}, starts with {head[:16]!r}",
        data=data,
    )


def _started_entries(path: str, size: int) -> list[str]:
    """Names of the ZIP local headers found in a file without a central directory."""
    names: list[str] = []
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        pos = m.find(b"PK\x03\x04", 0)
        while pos != -1 and pos + 30 <= size:
            n, x = struct.unpack_from("<HH", m, pos + 26)
            raw = m[pos + 30 : pos + 30 + n]
            try:
                name = raw.decode("utf-8")
            except UnicodeDecodeError:
                name = ""
            # A signature inside tensor bytes is noise: a real entry is named under the
            # archive's top folder (the first entry's).
            if name and name.isprintable() and (not names or name.split("/")[0] == names[0].split("/")[0]):
                names.append(name)
                pos = m.find(b"PK\x03\x04", pos + 30 + n + x)
            else:
                pos = m.find(b"PK\x03\x04", pos + 4)
    return names


def _check_torch_zip(path: str, size: int, data: dict) -> Finding:
    data["format"] = "torch-zip"
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile as e:
        names = _started_entries(path, size)
        data.update(entries_started=len(names), last_entry=names[-1] if names else None, zip_error=str(e))
        return finding(
            "TP-ENV-CKPT-TRUNCATED",
            f"checkpoint {path} ends early: no ZIP central directory (the save did not finish)",
            evidence=f"the file stops at {_size(size)}; {_n(len(names), 'entry')} started".replace("entrys", "entries")
            + (f", the last one {names[-1]}" if names else ""),
            data=data,
        )
    with zf:
        infos = zf.infolist()
        data["entries"] = len(infos)
        if not infos:
            return finding("TP-ENV-CKPT-CORRUPT", f"checkpoint {path} is an empty ZIP archive", data=data)
        top = infos[0].filename.split("/")[0]
        names = {i.filename for i in infos}
        if "/" not in infos[0].filename or f"{top}/data.pkl" not in names:
            return finding(
                "TP-ENV-CKPT-CORRUPT",
                f"checkpoint {path} is a ZIP archive without {top}/data.pkl: not a torch checkpoint",
                evidence=f"{len(infos)} entries, the first {infos[0].filename}",
                data=data,
            )
        storages = [i for i in infos if i.filename.startswith(f"{top}/data/")]
        data["storages"] = len(storages)
        data["storage_bytes"] = sum(i.file_size for i in storages)
        crc_recorded = any(i.CRC != 0 for i in infos if i.file_size > 0)
        try:
            with open(path, "rb") as raw:
                for info in infos:
                    # Where the local header says the bytes are, and that they are all there.
                    raw.seek(info.header_offset)
                    local = raw.read(30)
                    if len(local) < 30 or local[:4] != b"PK\x03\x04":
                        raise zipfile.BadZipFile(f"no local header at byte {info.header_offset}")
                    n, x = struct.unpack_from("<HH", local, 26)
                    end = info.header_offset + 30 + n + x + info.compress_size
                    if end > size:
                        raise zipfile.BadZipFile(f"its bytes end at {end}, past the end of the file ({size})")
                    if not crc_recorded:
                        continue
                    with zf.open(info) as f:  # zipfile compares the CRC-32 at the end of the entry
                        while f.read(8 << 20):
                            pass
        except (zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError) as e:
            msg = str(e)
            data["entry"] = info.filename
            if "CRC" in msg:
                return finding(
                    "TP-ENV-CKPT-CORRUPT",
                    f"checkpoint {path}: entry {info.filename} fails its CRC-32 (its bytes changed)",
                    evidence=f"stored CRC {info.CRC:08x}, {_size(info.file_size)} entry; {msg}",
                    data=data,
                )
            return finding(
                "TP-ENV-CKPT-CORRUPT", f"checkpoint {path}: entry {info.filename} cannot be read: {msg}", data=data
            )
        except OSError as e:
            return finding("TP-ENV-CKPT-UNREADABLE", f"checkpoint {path} cannot be read: {e.strerror or e}", data=data)
        data["crc_verified"] = crc_recorded
        crc_text = (
            "every CRC-32 matches" if crc_recorded else "no CRC recorded (saved with crc32 off): contents not verified"
        )
        try:
            pinfo = zf.getinfo(f"{top}/data.pkl")
            if pinfo.compress_type == zipfile.ZIP_STORED:
                # Read where its local header puts it (checked above): zipfile.open would
                # compare a CRC that an archive saved with crc32 off does not record.
                with open(path, "rb") as raw:
                    raw.seek(pinfo.header_offset)
                    n, x = struct.unpack_from("<HH", raw.read(30), 26)
                    raw.seek(pinfo.header_offset + 30 + n + x)
                    pkl = raw.read(min(pinfo.file_size, _MAX_PICKLE_BYTES + 1))
            else:
                with zf.open(pinfo) as f:
                    pkl = f.read(_MAX_PICKLE_BYTES + 1)
        except (zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError) as e:
            return finding("TP-ENV-CKPT-CORRUPT", f"checkpoint {path}: {top}/data.pkl cannot be read: {e}", data=data)
        except OSError as e:
            return finding("TP-ENV-CKPT-UNREADABLE", f"checkpoint {path} cannot be read: {e.strerror or e}", data=data)
    if len(pkl) > _MAX_PICKLE_BYTES:
        data["imports"] = [UNRESOLVED]
        return finding(
            "TP-ENV-CKPT-UNSAFE-PICKLE",
            f"checkpoint {path}: {top}/data.pkl is over {_size(_MAX_PICKLE_BYTES)}: its imports were not listed",
            evidence=f"the archive is intact ({crc_text}); load it only with torch.load(weights_only=True)",
            data=data,
        )
    try:
        imports = pickle_imports(pkl)
    except PickleScanError as e:
        return finding(
            "TP-ENV-CKPT-CORRUPT",
            f"checkpoint {path}: {top}/data.pkl is not a pickle stream ({e})",
            evidence="torch.load fails on it",
            data=data,
        )
    unsafe = unsafe_imports(imports)
    data["imports"] = imports
    if unsafe:
        data["unsafe_imports"] = unsafe
        shown = ", ".join(_short(u) for u in unsafe[:8]) + (f" and {len(unsafe) - 8} more" if len(unsafe) > 8 else "")
        return finding(
            "TP-ENV-CKPT-UNSAFE-PICKLE",
            f"checkpoint {path}: loading it imports {shown}, beyond what weights_only=True accepts",
            evidence=f"{_n(len(unsafe), 'global')} of {len(imports)} imported by {top}/data.pkl lie "
            "outside torch's weights-only allowlist; torch.load(weights_only=False) imports "
            f"and can call them. The archive is intact ({crc_text}); not unpickled",
            data=data,
        )
    return finding(
        "TP-ENV-CKPT-OK",
        f"checkpoint {path} is a complete torch archive",
        evidence=f"{_size(size)}, {len(infos)} entries ({_n(len(storages), 'storage')}, "
        f"{_size(data['storage_bytes'])}), {crc_text}; its pickle imports only what "
        "weights_only=True accepts; not unpickled",
        data=data,
    )


def _check_safetensors(path: str, size: int, data: dict, expect: set[str] | None = None) -> Finding:
    """One finding about the safetensors file ``path`` of ``size`` bytes; ``data`` (the
    finding's, filled here) already names it. ``expect``: tensors an index assigns to it."""
    data["format"] = "safetensors"
    try:
        header = read_header(path)
    except SafetensorsError as e:
        for key in ("header_bytes", "tensors", "data_bytes"):
            if getattr(e, key) is not None:
                data[key] = getattr(e, key)
        if e.code == "size-mismatch":
            data["tensor"] = _short(e.tensor)
        elif e.code in ("gap", "overlap"):
            data["tensor"] = e.tensor
        elif e.code == "data-truncated":
            data["tensors_cut"] = e.cut
        if e.truncated:
            return finding("TP-ENV-SAFETENSORS-TRUNCATED", f"safetensors {path} {e}", evidence=e.evidence, data=data)
        return finding("TP-ENV-SAFETENSORS-CORRUPT", f"safetensors {path}: {e}", evidence=e.evidence, data=data)
    data["header_bytes"] = header.header_bytes
    data["tensors"] = len(header.tensors)
    data["data_bytes"] = header.data_bytes
    if expect:
        absent = sorted(expect - set(header.tensors))
        if absent:
            data["absent"] = absent
            return finding(
                "TP-ENV-SAFETENSORS-CORRUPT",
                f"safetensors {path}: lacks {len(absent)} tensors its index assigns to it: {', '.join(absent[:5])}",
                data=data,
            )
    return finding(
        "TP-ENV-SAFETENSORS-OK",
        f"safetensors {path} is complete",
        evidence=f"{_size(size)}, {len(header.tensors)} tensors, every byte range inside the file and "
        "consistent with its dtype and shape",
        data=data,
    )


def _ok_id(f: Finding) -> bool:
    return f.id in ("TP-ENV-CKPT-OK", "TP-ENV-SAFETENSORS-OK")


def _check_dir(path: str) -> list[Finding]:
    d = Path(path)
    try:
        entries = sorted(os.listdir(d))
    except OSError as e:
        return [
            finding(
                "TP-ENV-CKPT-UNREADABLE",
                f"checkpoint directory {path} cannot be listed: {e.strerror or e}",
                data={"path": path},
            )
        ]
    problems: list[Finding] = []
    files: dict[str, set[str] | None] = {}  # file name -> tensors an index assigns to it
    for idx in (e for e in entries if e.endswith(".index.json")):
        ipath = os.path.join(path, idx)
        bad = "TP-ENV-SAFETENSORS-CORRUPT" if idx.endswith(".safetensors.index.json") else "TP-ENV-CKPT-CORRUPT"
        try:
            if os.path.getsize(ipath) > MAX_HEADER_BYTES:  # an index lists names: kilobytes, not gigabytes
                raise ValueError(f"over {_size(MAX_HEADER_BYTES)}")
            doc = json.loads(Path(ipath).read_text(encoding="utf-8"))
            wmap = doc["weight_map"]
            if not isinstance(wmap, dict) or not all(isinstance(v, str) for v in wmap.values()):
                raise ValueError("weight_map is not a map of file names")
        except OSError as e:
            problems.append(
                finding(
                    "TP-ENV-CKPT-UNREADABLE",
                    f"shard index {ipath} cannot be read: {e.strerror or e}",
                    data={"path": ipath},
                )
            )
            continue
        except (ValueError, KeyError, TypeError, UnicodeDecodeError, RecursionError) as e:
            why = "it nests too deeply" if isinstance(e, RecursionError) else _short(str(e))
            problems.append(finding(bad, f"shard index {ipath} is not a valid index: {why}", data={"path": ipath}))
            continue
        missing = sorted({v for v in wmap.values() if not os.path.isfile(os.path.join(path, v))})
        if missing:
            problems.append(
                finding(
                    "TP-ENV-SHARD-MISSING",
                    f"shard index {ipath} names {len(missing)} missing file(s): "
                    + ", ".join(missing[:5])
                    + (" ..." if len(missing) > 5 else ""),
                    evidence=f"{len(set(wmap.values()))} files named, {len(wmap)} tensors",
                    data={"path": ipath, "missing": missing},
                )
            )
        for tensor, fname in wmap.items():
            if fname not in missing:
                s = files.setdefault(fname, set())
                if s is not None:
                    s.add(tensor)
    for e in entries:
        if e.endswith(_CKPT_SUFFIXES) and os.path.isfile(os.path.join(path, e)):
            files.setdefault(e, None)
    # Numbered shards without an index (or beyond it) must all be there.
    groups: dict[tuple[str, str, str], set[int]] = {}
    for e in entries:
        m = _SHARD.match(e)
        if m and e.endswith(_CKPT_SUFFIXES):
            groups.setdefault((m["stem"], m["n"], m["ext"]), set()).add(int(m["i"]))
    for (stem, n, ext), have in sorted(groups.items()):
        width = len(n)
        absent = [f"{stem}-{i:0{width}d}-of-{n}{ext}" for i in range(1, int(n) + 1) if i not in have]
        already = {x for f in problems if f.id == "TP-ENV-SHARD-MISSING" for x in f.data.get("missing", ())}
        absent = [a for a in absent if a not in already]
        if absent:
            problems.append(
                finding(
                    "TP-ENV-SHARD-MISSING",
                    f"checkpoint {path}: {len(absent)} of {int(n)} shards missing: "
                    + ", ".join(absent[:5])
                    + (" ..." if len(absent) > 5 else ""),
                    data={"path": path, "missing": absent},
                )
            )
    if not files:
        if problems:
            return problems
        return [
            finding(
                "TP-ENV-CKPT-MISSING",
                f"checkpoint directory {path} holds no checkpoint file",
                evidence="looked for *.index.json, " + ", ".join(f"*{s}" for s in _CKPT_SUFFIXES),
                data={"path": path},
            )
        ]
    oks: dict[str, list[Finding]] = {}
    for fname, expect in sorted(files.items()):
        fpath = os.path.join(path, fname)
        f = check_file(fpath)
        if f.id == "TP-ENV-SAFETENSORS-OK" and expect:
            try:
                size = os.path.getsize(fpath)
                f = _check_safetensors(fpath, size, {"path": fpath, "bytes": size}, expect)
            except OSError as e:
                f = finding(
                    "TP-ENV-CKPT-UNREADABLE",
                    f"checkpoint {fpath} cannot be read: {e.strerror or e}",
                    data={"path": fpath},
                )
        (oks.setdefault(f.id, []) if _ok_id(f) else problems).append(f)
    out = list(problems)
    for rid, fs in oks.items():
        total = sum(f.data.get("bytes", 0) for f in fs)
        kind = "safetensors" if rid == "TP-ENV-SAFETENSORS-OK" else "torch"
        names = [Path(f.data["path"]).name for f in fs]
        extra = ""
        if rid == "TP-ENV-SAFETENSORS-OK":
            extra = f", {sum(f.data.get('tensors', 0) for f in fs)} tensors"
        out.append(
            finding(
                rid,
                f"checkpoint {path}: {len(fs)} {kind} file(s) complete",
                evidence=f"{_size(total)}{extra}: "
                + ", ".join(names[:6])
                + (f" and {len(names) - 6} more" if len(names) > 6 else ""),
                data={"path": path, "files": names, "bytes": total},
            )
        )
    return out
