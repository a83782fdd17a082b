"""`trainproof env`: real child interpreters, real checkpoints, real safetensors; no mocks."""

from __future__ import annotations

import json
import os
import struct
import sys
import time
import zipfile
from pathlib import Path

import pytest

from conftest import run_cli, run_subprocess

torch = pytest.importorskip("torch")
safetensors_torch = pytest.importorskip("safetensors.torch")

GB = 1024**3


def env(*args: str):
    """Run `trainproof env --json ARGS`; returns (exit code, report dict, findings by id)."""
    code, out, err, doc = run_cli("env", "--json", *args)
    assert doc is not None, (code, out, err)
    assert doc["command"] == "env" and len(doc["reports"]) == 1
    rep = doc["reports"][0]
    by_id: dict[str, list[dict]] = {}
    for f in rep["findings"]:
        assert f["source"] == "preflight"
        by_id.setdefault(f["id"], []).append(f)
    return code, rep, by_id


def the(by_id: dict, rule_id: str) -> dict:
    assert len(by_id.get(rule_id, [])) == 1, (rule_id, sorted(by_id))
    return by_id[rule_id][0]


def ckpt_ids(by_id: dict) -> set[str]:
    return {k for k in by_id if k.startswith(("TP-ENV-CKPT", "TP-ENV-SAFETENSORS", "TP-ENV-SHARD"))}


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    """A project directory holding modules that import fine, raise, crash and hang."""
    d = tmp_path / "proj"
    d.mkdir()
    (d / "goodmod.py").write_text("__version__ = '1.2.3'\nVALUE = 42\n")
    (d / "badmod.py").write_text("import os\n\nraise ImportError('libfoo.so.3: cannot open shared object file')\n")
    pkg = d / "chainpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from . import inner\n")
    (pkg / "inner.py").write_text("X = 1\nimport definitely_not_installed_dep_xyz\n")
    (d / "segvmod.py").write_text("import ctypes\nctypes.string_at(0)\n")
    (d / "slowmod.py").write_text("import time\ntime.sleep(60)\n")
    (d / "threadslow.py").write_text(
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
        "def wait():\n    time.sleep(60)\n\nwait()\n"
    )
    (d / "exitmod.py").write_text("import os\nos._exit(3)\n")
    (d / "sysexitmod.py").write_text("import sys\nsys.exit('refusing to import')\n")
    (d / "syntaxmod.py").write_text("x = 1\ndef f(:\n    pass\n")
    return d


# --- imports -------------------------------------------------------------------------------


@pytest.mark.slow
def test_module_that_imports_passes_exit_0(proj):
    code, rep, by_id = env("--cwd", str(proj), "--module", "goodmod")
    assert code == 0 and rep["verdict"] == "PASS"
    ok = the(by_id, "TP-ENV-IMPORT-OK")
    assert ok["data"]["version"] == "1.2.3"
    assert Path(ok["data"]["file"]).resolve() == (proj / "goodmod.py").resolve()
    info = the(by_id, "TP-ENV-PYTHON-INFO")
    assert info["level"] == "INFO" and info["data"]["major"] == 3


def test_import_error_names_type_message_and_file_line(proj):
    code, rep, by_id = env("--cwd", str(proj), "--module", "badmod")
    assert code == 1 and rep["verdict"] == "FAIL"
    f = the(by_id, "TP-ENV-IMPORT-FAIL")
    assert f["data"]["exception"] == "ImportError"
    assert f["data"]["message"] == "libfoo.so.3: cannot open shared object file"
    assert Path(f["data"]["file"]).resolve() == (proj / "badmod.py").resolve() and f["data"]["line"] == 3
    assert "ImportError: libfoo.so.3" in f["message"] and "badmod.py:3" in f["message"]


@pytest.mark.slow
def test_missing_dependency_is_located_where_it_is_imported(proj):
    code, _, by_id = env("--cwd", str(proj), "--module", "chainpkg")
    assert code == 1
    f = the(by_id, "TP-ENV-IMPORT-FAIL")
    assert f["data"]["exception"] == "ModuleNotFoundError"
    assert "definitely_not_installed_dep_xyz" in f["data"]["message"]
    assert Path(f["data"]["file"]).resolve() == (proj / "chainpkg" / "inner.py").resolve()
    assert f["data"]["line"] == 2
    # the chain runs through the package's __init__ first
    assert any("chainpkg/__init__.py:1" in fr for fr in f["data"]["frames"])


@pytest.mark.slow
def test_syntax_error_and_sys_exit_are_import_failures(proj):
    code, _, by_id = env("--cwd", str(proj), "--module", "syntaxmod", "--module", "sysexitmod")
    assert code == 1
    fails = {f["data"]["exception"]: f for f in by_id["TP-ENV-IMPORT-FAIL"]}
    assert fails["SyntaxError"]["data"]["line"] == 2
    assert fails["SyntaxError"]["data"]["file"].endswith("syntaxmod.py")
    assert fails["SystemExit"]["data"]["message"] == "refusing to import"


@pytest.mark.slow
def test_segfault_on_import_is_a_crash_naming_sigsegv_and_trainproof_survives(proj):
    code, rep, by_id = env("--cwd", str(proj), "--module", "segvmod", "--module", "goodmod")
    # we are still here (the import ran in a child), and the next module was still probed
    assert code == 1 and rep["verdict"] == "FAIL"
    f = the(by_id, "TP-ENV-IMPORT-CRASH")
    assert f["data"]["signal"] == "SIGSEGV" and "SIGSEGV" in f["message"]
    # faulthandler in the child names the line that crashed
    assert "segvmod.py:2" in f["message"] and f["data"]["module_line"].endswith("segvmod.py:2")
    the(by_id, "TP-ENV-IMPORT-OK")


@pytest.mark.slow
def test_segfault_as_a_real_process_exits_1_with_text(proj):
    p = run_subprocess("env", "--cwd", str(proj), "--module", "segvmod")
    assert p.returncode == 1, p.stderr
    assert "TP-ENV-IMPORT-CRASH" in p.stdout and "SIGSEGV" in p.stdout


@pytest.mark.slow
def test_exit_without_exception_is_a_crash(proj):
    code, _, by_id = env("--cwd", str(proj), "--module", "exitmod")
    assert code == 1
    f = the(by_id, "TP-ENV-IMPORT-CRASH")
    assert f["data"]["returncode"] == 3 and "no Python exception" in f["message"]


@pytest.mark.slow
def test_import_that_hangs_past_timeout(proj):
    t0 = time.monotonic()
    code, _, by_id = env("--cwd", str(proj), "--module", "slowmod", "--timeout", "1")
    assert time.monotonic() - t0 < 20
    assert code == 1
    f = the(by_id, "TP-ENV-IMPORT-TIMEOUT")
    assert "within 1 s" in f["message"] and "slowmod.py:2" in f["evidence"]


@pytest.mark.slow
def test_timeout_cites_the_importing_thread_not_a_background_one(proj):
    code, _, by_id = env("--cwd", str(proj), "--module", "threadslow", "--timeout", "1")
    f = the(by_id, "TP-ENV-IMPORT-TIMEOUT")
    assert code == 1 and "threadslow.py:4" in f["evidence"] and f["data"]["module_line"].endswith("threadslow.py:6")


@pytest.mark.slow
def test_cwd_decides_what_imports(proj, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert env("--cwd", str(proj), "--module", "goodmod")[0] == 0
    code, _, by_id = env("--cwd", str(elsewhere), "--module", "goodmod")
    assert code == 1 and the(by_id, "TP-ENV-IMPORT-FAIL")["data"]["exception"] == "ModuleNotFoundError"


def test_missing_cwd_is_not_checked_exit_2(tmp_path):
    code, rep, by_id = env("--cwd", str(tmp_path / "nope"), "--module", "json")
    assert code == 2 and rep["verdict"] == "NOT-CHECKED"
    assert the(by_id, "TP-ENV-CWD-MISSING")["level"] == "NOT-CHECKED"
    assert "TP-ENV-IMPORT-OK" not in by_id


def test_unusable_python_is_not_checked_exit_2(tmp_path):
    code, rep, by_id = env("--python", str(tmp_path / "no-python"), "--module", "json")
    assert code == 2 and rep["verdict"] == "NOT-CHECKED"
    assert the(by_id, "TP-ENV-PYTHON-UNUSABLE")["level"] == "NOT-CHECKED"
    # an executable that is not Python
    fake = tmp_path / "fakepython"
    fake.write_text("#!/bin/sh\necho hello\n")
    fake.chmod(0o755)
    code, _, by_id = env("--python", str(fake), "--module", "json")
    assert code == 2
    assert "did not run as Python" in the(by_id, "TP-ENV-PYTHON-UNUSABLE")["message"]


@pytest.mark.slow
def test_explicit_python_is_used(proj):
    code, _, by_id = env("--python", sys.executable, "--cwd", str(proj), "--module", "goodmod")
    assert code == 0 and the(by_id, "TP-ENV-PYTHON-INFO")["data"]["python"] == sys.executable


def test_bad_module_name_is_a_usage_error():
    code, out, err, doc = run_cli("env", "--json", "--module", "os; import this")
    assert code == 2 and doc["error"] and "dotted module name" in doc["error"]


# --- torch checkpoints -----------------------------------------------------------------------


def _state() -> dict:
    return {"w": torch.arange(4096, dtype=torch.float32), "b": torch.ones(17), "step": 1200}


def _entry_data_offset(path: Path, name: str) -> tuple[int, int]:
    """(offset, size) of an entry's stored bytes, read from its local header."""
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(name)
    raw = path.read_bytes()
    n, x = struct.unpack_from("<HH", raw, info.header_offset + 26)
    return info.header_offset + 30 + n + x, info.file_size


@pytest.fixture
def ckpt(tmp_path: Path) -> Path:
    p = tmp_path / "model.pt"
    torch.save(_state(), p)
    return p


def test_torch_checkpoint_ok(ckpt):
    code, rep, by_id = env("--checkpoint", str(ckpt))
    assert code == 0 and rep["verdict"] == "PASS"
    f = the(by_id, "TP-ENV-CKPT-OK")
    assert f["data"]["crc_verified"] is True and f["data"]["storages"] == 2
    assert "not unpickled" in f["evidence"]


def test_torch_checkpoint_truncated(ckpt):
    raw = ckpt.read_bytes()
    ckpt.write_bytes(raw[: len(raw) // 2])
    code, _, by_id = env("--checkpoint", str(ckpt))
    assert code == 1 and ckpt_ids(by_id) == {"TP-ENV-CKPT-TRUNCATED"}
    f = the(by_id, "TP-ENV-CKPT-TRUNCATED")
    assert f["data"]["entries_started"] >= 2 and f["data"]["last_entry"].startswith("model/data/")
    assert f["data"]["last_entry"] in f["evidence"]


def test_torch_checkpoint_byte_flip_fails_crc(ckpt):
    with zipfile.ZipFile(ckpt) as zf:
        storage = next(i.filename for i in zf.infolist() if "/data/" in i.filename and i.file_size > 1000)
    off, size = _entry_data_offset(ckpt, storage)
    raw = bytearray(ckpt.read_bytes())
    raw[off + size // 2] ^= 0xFF
    ckpt.write_bytes(bytes(raw))
    # the flip is invisible to the archive structure ...
    with zipfile.ZipFile(ckpt) as zf:
        assert storage in zf.namelist()
    code, _, by_id = env("--checkpoint", str(ckpt))
    assert code == 1
    f = the(by_id, "TP-ENV-CKPT-CORRUPT")
    assert f["data"]["entry"] == storage and "CRC" in f["message"]


def test_empty_and_missing_checkpoints(tmp_path):
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    code, _, by_id = env("--checkpoint", str(empty), "--checkpoint", str(tmp_path / "gone.pt"))
    assert code == 1
    assert the(by_id, "TP-ENV-CKPT-EMPTY")["data"]["bytes"] == 0
    assert the(by_id, "TP-ENV-CKPT-MISSING")["level"] == "FAIL"


class _Evil:
    """Unpickling this creates the marker file (open(marker, 'w'))."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_legacy_pickle_is_not_checked_and_never_unpickled(tmp_path):
    marker = tmp_path / "UNPICKLED"
    legacy = tmp_path / "legacy.pt"
    torch.save({"w": torch.ones(3), "payload": _Evil(str(marker))}, legacy, _use_new_zipfile_serialization=False)
    # the payload is live: a twin file, unpickled, does create its marker
    twin_marker = tmp_path / "TWIN_UNPICKLED"
    twin = tmp_path / "twin.pt"
    torch.save({"payload": _Evil(str(twin_marker))}, twin, _use_new_zipfile_serialization=False)
    torch.load(twin, weights_only=False)
    assert twin_marker.exists()

    code, rep, by_id = env("--checkpoint", str(legacy))
    assert code == 2 and rep["verdict"] == "NOT-CHECKED"
    f = the(by_id, "TP-ENV-CKPT-LEGACY")
    assert f["data"]["format"] == "torch-legacy"
    assert not marker.exists()


def test_zip_checkpoint_with_a_payload_is_checked_without_unpickling(tmp_path):
    marker = tmp_path / "UNPICKLED"
    p = tmp_path / "evil.pt"
    torch.save({"w": torch.ones(3), "payload": _Evil(str(marker))}, p)
    code, _, by_id = env("--checkpoint", str(p))
    # intact archive, but its pickle imports open (pickled as io.open): a warning naming it, not OK
    assert code == 0 and "TP-ENV-CKPT-OK" not in by_id
    assert the(by_id, "TP-ENV-CKPT-UNSAFE-PICKLE")["data"]["unsafe_imports"] == ["io.open"]
    assert not marker.exists()


def test_checkpoint_saved_without_crc_passes_but_says_so(tmp_path):
    p = tmp_path / "nocrc.pt"
    torch.serialization.set_crc32_options(False)
    try:
        torch.save(_state(), p)
    finally:
        torch.serialization.set_crc32_options(True)
    code, _, by_id = env("--checkpoint", str(p))
    f = the(by_id, "TP-ENV-CKPT-OK")
    assert code == 0 and f["data"]["crc_verified"] is False and "not verified" in f["evidence"]


def test_lfs_pointer_zip_without_pickle_fifo_and_unknown(tmp_path):
    lfs = tmp_path / "lfs.bin"
    lfs.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 123\n")
    plainzip = tmp_path / "notckpt.pt"
    with zipfile.ZipFile(plainzip, "w") as zf:
        zf.writestr("readme.txt", "hello")
    other = tmp_path / "model.gguf"
    other.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 100)
    args = ["--checkpoint", str(lfs), "--checkpoint", str(plainzip), "--checkpoint", str(other)]
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "pipe.pt"
        os.mkfifo(fifo)
        args += ["--checkpoint", str(fifo)]
    code, _, by_id = env(*args)
    assert code == 1
    assert the(by_id, "TP-ENV-CKPT-LFS-POINTER")["level"] == "FAIL"
    assert "without" in the(by_id, "TP-ENV-CKPT-CORRUPT")["message"]
    assert the(by_id, "TP-ENV-CKPT-UNKNOWN-FORMAT")["level"] == "NOT-CHECKED"
    if hasattr(os, "mkfifo"):
        assert "not a regular file" in the(by_id, "TP-ENV-CKPT-UNREADABLE")["message"]


# --- safetensors -------------------------------------------------------------------------------


def _st_tensors() -> dict:
    return {
        "embed.weight": torch.randn(64, 32),
        "head.bias": torch.zeros(10, dtype=torch.bfloat16),
        "count": torch.tensor([7], dtype=torch.int64),
    }


def _st_parts(path: Path) -> tuple[dict, bytes]:
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + n]), raw[8 + n :]


def _st_write(path: Path, header: dict, body: bytes) -> None:
    h = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(h)) + h + body)


@pytest.fixture
def st(tmp_path: Path) -> Path:
    p = tmp_path / "model.safetensors"
    safetensors_torch.save_file(_st_tensors(), str(p), metadata={"format": "pt"})
    return p


def test_safetensors_ok(st):
    code, _, by_id = env("--checkpoint", str(st))
    f = the(by_id, "TP-ENV-SAFETENSORS-OK")
    assert code == 0 and f["data"]["tensors"] == 3


def test_safetensors_truncated_names_the_cut_tensor(st):
    header, body = _st_parts(st)
    last = max((k for k in header if k != "__metadata__"), key=lambda k: header[k]["data_offsets"][1])
    raw = st.read_bytes()
    st.write_bytes(raw[:-5])
    code, _, by_id = env("--checkpoint", str(st))
    assert code == 1 and ckpt_ids(by_id) == {"TP-ENV-SAFETENSORS-TRUNCATED"}
    f = the(by_id, "TP-ENV-SAFETENSORS-TRUNCATED")
    assert f["data"]["tensors_cut"] == [last] and "5 bytes" in f["message"]
    # cut inside the header, and under 8 bytes
    st.write_bytes(raw[:40])
    assert "TP-ENV-SAFETENSORS-TRUNCATED" in env("--checkpoint", str(st))[2]
    st.write_bytes(raw[:5])
    assert "TP-ENV-SAFETENSORS-TRUNCATED" in env("--checkpoint", str(st))[2]


def test_safetensors_header_pointing_past_the_end_is_corrupt(st):
    header, body = _st_parts(st)
    header["count"]["data_offsets"][1] += 4096
    _st_write(st, header, body)
    code, _, by_id = env("--checkpoint", str(st))
    assert code == 1
    f = the(by_id, "TP-ENV-SAFETENSORS-CORRUPT")
    assert f["data"]["tensor"] == "count" and "needs 8 bytes" in f["message"]


def test_safetensors_dtype_shape_inconsistent_is_corrupt(st):
    header, body = _st_parts(st)
    header["embed.weight"]["dtype"] = "F16"  # half the bytes its range holds
    _st_write(st, header, body)
    code, _, by_id = env("--checkpoint", str(st))
    assert code == 1 and "embed.weight" in the(by_id, "TP-ENV-SAFETENSORS-CORRUPT")["message"]


def test_safetensors_trailing_bytes_overlap_and_absurd_header_are_corrupt(st, tmp_path):
    header, body = _st_parts(st)
    trailing = tmp_path / "trailing.safetensors"
    _st_write(trailing, header, body + b"junk")
    overlap = tmp_path / "overlap.safetensors"
    h2 = json.loads(json.dumps(header))
    b0, e0 = h2["head.bias"]["data_offsets"]
    h2["head.bias"]["data_offsets"] = [b0 - 4, e0 - 4]
    _st_write(overlap, h2, body)
    absurd = tmp_path / "absurd.safetensors"
    absurd.write_bytes(struct.pack("<Q", 1 << 40) + b"{" + b" " * 100)
    for p in (trailing, overlap, absurd):
        code, _, by_id = env("--checkpoint", str(p))
        assert code == 1 and ckpt_ids(by_id) == {"TP-ENV-SAFETENSORS-CORRUPT"}, (p, by_id)


def _sharded(d: Path, n: int = 3) -> dict:
    d.mkdir()
    wmap = {}
    for i in range(1, n + 1):
        name = f"model-{i:05d}-of-{n:05d}.safetensors"
        tensors = {f"layer{i}.weight": torch.randn(16, 8), f"layer{i}.bias": torch.zeros(16)}
        safetensors_torch.save_file(tensors, str(d / name))
        wmap.update({k: name for k in tensors})
    index = {"metadata": {"total_size": 0}, "weight_map": wmap}
    (d / "model.safetensors.index.json").write_text(json.dumps(index))
    (d / "config.json").write_text("{}")
    return index


def test_sharded_directory_ok(tmp_path):
    d = tmp_path / "shards"
    _sharded(d)
    code, _, by_id = env("--checkpoint", str(d))
    assert code == 0
    f = the(by_id, "TP-ENV-SAFETENSORS-OK")
    assert len(f["data"]["files"]) == 3 and "6 tensors" in f["evidence"]
    assert f["data"]["bytes"] == sum(p.stat().st_size for p in d.glob("*.safetensors"))


def test_sharded_directory_index_names_a_missing_shard(tmp_path):
    d = tmp_path / "shards"
    _sharded(d, 4)
    (d / "model-00003-of-00004.safetensors").unlink()
    code, rep, by_id = env("--checkpoint", str(d))
    assert code == 1 and rep["verdict"] == "FAIL"
    f = the(by_id, "TP-ENV-SHARD-MISSING")
    assert f["data"]["missing"] == ["model-00003-of-00004.safetensors"]
    assert "3 safetensors file(s) complete" in the(by_id, "TP-ENV-SAFETENSORS-OK")["message"]


def test_sharded_directory_damaged_shard_and_wrong_index(tmp_path):
    d = tmp_path / "shards"
    index = _sharded(d)
    shard2 = d / "model-00002-of-00003.safetensors"
    shard2.write_bytes(shard2.read_bytes()[:-10])
    code, _, by_id = env("--checkpoint", str(d))
    assert code == 1 and the(by_id, "TP-ENV-SAFETENSORS-TRUNCATED")["data"]["path"].endswith(shard2.name)
    # an index that assigns a tensor to a shard that does not hold it
    e = tmp_path / "shards2"
    index = _sharded(e)
    index["weight_map"]["layer1.weight"] = "model-00002-of-00003.safetensors"
    (e / "model.safetensors.index.json").write_text(json.dumps(index))
    code, _, by_id = env("--checkpoint", str(e))
    assert code == 1 and "layer1.weight" in the(by_id, "TP-ENV-SAFETENSORS-CORRUPT")["message"]


def test_numbered_shards_without_index_must_all_be_there(tmp_path):
    d = tmp_path / "shards"
    _sharded(d)
    (d / "model.safetensors.index.json").unlink()
    (d / "model-00001-of-00003.safetensors").unlink()
    code, _, by_id = env("--checkpoint", str(d))
    assert code == 1 and the(by_id, "TP-ENV-SHARD-MISSING")["data"]["missing"] == ["model-00001-of-00003.safetensors"]


def test_trainer_checkpoint_directory_checks_every_file(tmp_path, ckpt):
    d = tmp_path / "checkpoint-500"
    d.mkdir()
    safetensors_torch.save_file(_st_tensors(), str(d / "model.safetensors"))
    torch.save(_state(), d / "optimizer.pt")
    (d / "scheduler.pt").write_bytes(b"")
    (d / "trainer_state.json").write_text("{}")
    code, _, by_id = env("--checkpoint", str(d))
    assert code == 1
    assert the(by_id, "TP-ENV-CKPT-EMPTY")["data"]["path"].endswith("scheduler.pt")
    assert {"TP-ENV-CKPT-OK", "TP-ENV-SAFETENSORS-OK"} <= set(by_id)
    empty_dir = tmp_path / "nothing-here"
    empty_dir.mkdir()
    (empty_dir / "trainer_state.json").write_text("{}")
    assert the(env("--checkpoint", str(empty_dir))[2], "TP-ENV-CKPT-MISSING")["level"] == "FAIL"


# --- memory and disk ---------------------------------------------------------------------------


def _usable_ram() -> int:
    _, _, by_id = env()
    return the(by_id, "TP-ENV-MEM-INFO")["data"]["usable_bytes"]


def test_memory_small_requirement_ok_huge_insufficient():
    code, rep, by_id = env("--required-gb", "0.01")
    assert code == 0 and rep["verdict"] == "PASS" and the(by_id, "TP-ENV-MEM-OK")
    code, rep, by_id = env("--required-gb", "1000000")
    assert code == 1 and rep["verdict"] == "FAIL"
    f = the(by_id, "TP-ENV-MEM-INSUFFICIENT")
    assert f["data"]["required_gb"] == 1000000


def test_memory_tight_within_headroom():
    usable = _usable_ram()
    code, rep, by_id = env("--required-gb", f"{usable / 1.1 / GB:.4f}")  # 10% margin < 20% headroom
    assert code == 0 and rep["verdict"] == "WARN" and the(by_id, "TP-ENV-MEM-TIGHT")


def test_headroom_comes_from_the_config(tmp_path):
    usable = _usable_ram()
    cfg = tmp_path / "tp.toml"
    cfg.write_text("env_mem_headroom = 5.0\n")
    code, _, by_id = env("--config", str(cfg), "--required-gb", f"{usable / 2 / GB:.4f}")
    assert code == 0 and the(by_id, "TP-ENV-MEM-TIGHT")["data"]["headroom"] == 5.0


def test_disk_small_ok_huge_insufficient(tmp_path):
    out = tmp_path / "runs" / "new"  # does not exist yet: its nearest parent is measured
    code, _, by_id = env("--output-dir", str(out), "--checkpoint-gb", "0.001", "--keep", "3")
    f = the(by_id, "TP-ENV-DISK-OK")
    assert code == 0 and f["data"]["measured_at"] == str(tmp_path) and "not there yet" in f["message"]
    code, rep, by_id = env("--output-dir", str(tmp_path), "--checkpoint-gb", "1000000")
    assert code == 1 and rep["verdict"] == "FAIL" and the(by_id, "TP-ENV-DISK-INSUFFICIENT")


def test_disk_tight_holds_keep_but_not_one_more(tmp_path):
    free = the(env("--output-dir", str(tmp_path))[2], "TP-ENV-DISK-INFO")["data"]["free_bytes"]
    code, rep, by_id = env("--output-dir", str(tmp_path), "--keep", "3", "--checkpoint-gb", f"{free / 3.5 / GB:.6f}")
    assert code == 0 and rep["verdict"] == "WARN" and the(by_id, "TP-ENV-DISK-TIGHT")


def test_disk_output_dir_that_is_a_file(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    code, _, by_id = env("--output-dir", str(f), "--checkpoint-gb", "1")
    assert code == 2 and the(by_id, "TP-ENV-DISK-UNKNOWN")["level"] == "NOT-CHECKED"


@pytest.mark.slow
def test_info_alone_is_not_a_verdict():
    code, rep, by_id = env()
    assert code == 2 and rep["verdict"] == "NOT-CHECKED"
    assert {f["level"] for fs in by_id.values() for f in fs} == {"INFO"}
    assert any("nothing was required" in n for n in rep["notes"])
    # INFO next to a PASS leaves the PASS alone
    code, rep, _ = env("--module", "json")
    assert code == 0 and rep["verdict"] == "PASS"


def test_gpu_is_info_or_a_typed_skip():
    _, rep, by_id = env("--required-gb", "0.01")
    if "TP-ENV-GPU-INFO" in by_id:
        assert {f["level"] for f in by_id["TP-ENV-GPU-INFO"]} == {"INFO"}
    else:
        assert rep["checks"]["skipped"]["TP-ENV-GPU-INFO"]["reason"] == "absent"


# --- CLI outputs -------------------------------------------------------------------------------


@pytest.mark.slow
def test_text_output_and_mute(proj, ckpt):
    code, out, err, _ = run_cli(
        "env", "--cwd", str(proj), "--module", "goodmod", "--checkpoint", str(ckpt), "--required-gb", "0.01"
    )
    assert code == 0
    for s in ("verdict: PASS", "TP-ENV-IMPORT-OK", "TP-ENV-CKPT-OK", "TP-ENV-MEM-OK"):
        assert s in out
    code, _, by_id = env("--module", "definitely_not_installed_xyz", "--mute", "TP-ENV-IMPORT-FAIL")
    assert "TP-ENV-IMPORT-FAIL" not in by_id and code == 2


@pytest.mark.slow
def test_sarif_written_to_a_file(proj, ckpt, tmp_path):
    sarif = tmp_path / "env.sarif"
    raw = ckpt.read_bytes()
    ckpt.write_bytes(raw[:100])
    code, out, err, _ = run_cli(
        "env",
        "--cwd",
        str(proj),
        "--module",
        "badmod",
        "--module",
        "goodmod",
        "--checkpoint",
        str(ckpt),
        "--sarif",
        str(sarif),
    )
    assert code == 1
    doc = json.loads(sarif.read_text())
    assert doc["version"] == "2.1.0"
    results = doc["runs"][0]["results"]
    ids = {r["ruleId"] for r in results}
    assert {"TP-ENV-IMPORT-FAIL", "TP-ENV-CKPT-TRUNCATED"} <= ids
    assert "TP-ENV-IMPORT-OK" not in ids  # PASS findings are not results
    levels = {r["ruleId"]: r["level"] for r in results}
    assert levels["TP-ENV-IMPORT-FAIL"] == "error"
    rules = {r["id"] for r in doc["runs"][0]["tool"]["driver"]["rules"]}
    assert ids <= rules


def test_every_env_id_is_documented():
    from trainproof.rules.registry import all_rules

    env_rules = [r for r in all_rules() if r.id.startswith("TP-ENV-")]
    assert len(env_rules) >= 30
    assert all(r.source == "preflight" and r.group == "env" for r in env_rules)
    code, out, _, _ = run_cli("rules", "TP-ENV-IMPORT-CRASH")
    assert code == 0 and "What it does NOT mean" in out


def test_cgroup_memory_reads_without_error():
    from trainproof.preflight.env import cgroup_memory

    cg = cgroup_memory()
    assert cg is None or (cg[0] > 0 and 0 <= cg[1] <= cg[0])
