"""The resource checks of ``trainproof env``: memory (cgroup-aware), disk and GPUs.

* **memory**: RAM available now (``psutil``), or less when the process sits in a cgroup
  with a memory limit (a container, a Slurm job, a systemd slice: the limit is what the
  OOM killer enforces), against the run's requirement.
* **disk**: free space under the output directory against ``checkpoint_gb`` x ``keep``.
* **GPUs**: when ``pynvml`` (nvidia-ml-py) is importable, each device and its free
  memory, as INFO only: trainproof does not know what the run needs per device.

Sizes are in GB of 2^30 bytes, as ``free -g``, ``df -h`` and ``nvidia-smi`` count them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ...findings import Finding, Skip
from ...rules.thresholds import Thresholds
from .. import finding

GB = 1024**3


def _gb(n: float) -> str:
    return f"{n / GB:.1f} GB"


def _read_int(p: Path) -> int | None:
    try:
        s = p.read_text().strip()
    except OSError:
        return None
    return int(s) if s.isdigit() else None


def _stat_value(p: Path, key: str) -> int:
    try:
        for line in p.read_text().splitlines():
            k, _, v = line.partition(" ")
            if k == key and v.strip().isdigit():
                return int(v)
    except OSError:
        pass
    return 0


def cgroup_memory() -> tuple[int, int] | None:
    """``(limit, available under it)`` of the tightest cgroup memory limit on this process
    (v2 ``memory.max``, v1 ``memory.limit_in_bytes``), or ``None`` when none applies.

    Available is the limit minus the working set (usage minus inactive file cache, which
    the kernel reclaims before it OOM-kills), as container runtimes count it.
    """
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    root = Path("/sys/fs/cgroup")
    cands: list[tuple[Path, str, str, str]] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, ctrls, rel = parts
        rel = rel.lstrip("/")
        if ctrls == "":
            for base in (root, root / "unified"):
                cands.append((base / rel, "memory.max", "memory.current", "inactive_file"))
        elif "memory" in ctrls.split(","):
            cands.append((root / ctrls / rel, "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"))
    best = None
    for leaf, lim_f, use_f, inactive in cands:
        # Limits of every ancestor apply too; inside a container the mount shows only
        # its own part, so walk up to the mount root.
        d = leaf
        while True:
            lim = _read_int(d / lim_f)
            if lim is not None and lim < (1 << 60):
                use = _read_int(d / use_f) or 0
                ws = max(0, use - _stat_value(d / "memory.stat", inactive))
                avail = max(0, lim - ws)
                if best is None or avail < best[1]:
                    best = (lim, avail)
            if d == root or d.parent == d or root not in d.parents:
                break
            d = d.parent
    return best


def check_memory(required_gb: float | None, th: Thresholds) -> tuple[Finding | None, Skip | None]:
    try:
        import psutil

        vm = psutil.virtual_memory()
        avail, total = int(vm.available), int(vm.total)
    except Exception as e:  # noqa: BLE001 - ImportError, or psutil failing on this platform
        why = "psutil is not installed" if isinstance(e, ImportError) else f"psutil failed: {e}"
        if required_gb is None:
            return None, Skip("absent", why)
        return finding(
            "TP-ENV-MEM-UNKNOWN", f"available RAM could not be measured: {why}", data={"required_gb": required_gb}
        ), None
    data = {"available_bytes": avail, "total_bytes": total}
    src = f"{_gb(avail)} of {_gb(total)} available"
    cg = cgroup_memory()
    if cg is not None:
        data.update(cgroup_limit_bytes=cg[0], cgroup_available_bytes=cg[1])
        if cg[1] < avail:
            avail = cg[1]
            src = f"{_gb(avail)} available under this process's cgroup limit of {_gb(cg[0])} (machine: {src})"
        else:
            src += f" (cgroup limit {_gb(cg[0])})"
    data["usable_bytes"] = avail
    if required_gb is None:
        return finding("TP-ENV-MEM-INFO", f"RAM: {src}", data=data), None
    need = required_gb * GB
    want = need * (1 + th.env_mem_headroom)
    data.update(required_gb=required_gb, headroom=th.env_mem_headroom)
    if avail < need:
        return finding(
            "TP-ENV-MEM-INSUFFICIENT",
            f"RAM: {_gb(avail)} available, the run needs {required_gb:g} GB",
            evidence=f"{src}; short by {_gb(need - avail)}",
            data=data,
        ), None
    if avail < want:
        return finding(
            "TP-ENV-MEM-TIGHT",
            f"RAM: {_gb(avail)} available for {required_gb:g} GB required, less "
            f"than the {th.env_mem_headroom:.0%} headroom",
            evidence=f"{src}; wanted {_gb(want)}",
            data=data,
        ), None
    return finding(
        "TP-ENV-MEM-OK",
        f"RAM: {_gb(avail)} available for {required_gb:g} GB required",
        evidence=f"{src}; at least {_gb(want)} wanted ({th.env_mem_headroom:.0%} headroom)",
        data=data,
    ), None


def check_disk(output_dir: str, checkpoint_gb: float | None, keep: int, th: Thresholds) -> Finding:
    data: dict = {"path": output_dir}
    p = Path(output_dir)
    if p.exists() and not p.is_dir():
        return finding("TP-ENV-DISK-UNKNOWN", f"output directory {output_dir} is a file, not a directory", data=data)
    q = p.absolute()
    while not q.exists() and q.parent != q:
        q = q.parent
    where = output_dir if q == p.absolute() else f"{output_dir} (not there yet; measured at {q})"
    data["measured_at"] = str(q)
    try:
        du = shutil.disk_usage(q)
    except OSError as e:
        return finding(
            "TP-ENV-DISK-UNKNOWN", f"free space under {output_dir} could not be measured: {e.strerror or e}", data=data
        )
    data.update(free_bytes=du.free, total_bytes=du.total)
    if checkpoint_gb is None:
        return finding("TP-ENV-DISK-INFO", f"disk: {_gb(du.free)} free of {_gb(du.total)} under {where}", data=data)
    need = checkpoint_gb * keep * GB
    want = checkpoint_gb * (keep + th.env_disk_headroom_checkpoints) * GB
    data.update(checkpoint_gb=checkpoint_gb, keep=keep, headroom_checkpoints=th.env_disk_headroom_checkpoints)
    plan = f"{keep} x {checkpoint_gb:g} GB checkpoints"
    if du.free < need:
        return finding(
            "TP-ENV-DISK-INSUFFICIENT",
            f"disk: {_gb(du.free)} free under {where}, {plan} need {_gb(need)}",
            evidence=f"short by {_gb(need - du.free)}",
            data=data,
        )
    if du.free < want:
        return finding(
            "TP-ENV-DISK-TIGHT",
            f"disk: {_gb(du.free)} free under {where} holds {plan} but not "
            f"{th.env_disk_headroom_checkpoints} more while a save rotates",
            evidence=f"wanted {_gb(want)}",
            data=data,
        )
    return finding(
        "TP-ENV-DISK-OK",
        f"disk: {_gb(du.free)} free under {where} for {plan}",
        evidence=f"at least {_gb(want)} wanted ({th.env_disk_headroom_checkpoints} checkpoint(s) of "
        "headroom for rotation)",
        data=data,
    )


def check_gpus() -> tuple[list[Finding], Skip | None]:
    try:
        import pynvml
    except Exception:  # noqa: BLE001 - ImportError or a broken install
        return [], Skip("absent", "pynvml (nvidia-ml-py) is not installed: GPUs were not probed")
    try:
        pynvml.nvmlInit()
    except Exception as e:  # noqa: BLE001 - pynvml.NVMLError and friends
        return [finding("TP-ENV-GPU-INFO", f"GPUs: NVML could not be initialised ({e})", data={"error": str(e)})], None
    out = []
    try:
        drv = pynvml.nvmlSystemGetDriverVersion()
        drv = drv.decode() if isinstance(drv, bytes) else str(drv)
        n = pynvml.nvmlDeviceGetCount()
        if n == 0:
            out.append(finding("TP-ENV-GPU-INFO", f"GPUs: none (driver {drv})", data={"count": 0, "driver": drv}))
        for i in range(n):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(h)
            name = name.decode() if isinstance(name, bytes) else str(name)
            mem = pynvml.nvmlDeviceGetMemoryInfo(h)
            out.append(
                finding(
                    "TP-ENV-GPU-INFO",
                    f"GPU {i}: {name}, {_gb(mem.free)} free of {_gb(mem.total)}",
                    evidence=f"driver {drv}; {_gb(mem.used)} used by other processes",
                    data={
                        "index": i,
                        "name": name,
                        "free_bytes": int(mem.free),
                        "total_bytes": int(mem.total),
                        "driver": drv,
                    },
                )
            )
    except Exception as e:  # noqa: BLE001
        out.append(finding("TP-ENV-GPU-INFO", f"GPUs: NVML query failed ({e})", data={"error": str(e)}))
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass
    return out, None
