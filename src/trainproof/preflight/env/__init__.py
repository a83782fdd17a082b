"""``trainproof env``: can this machine start this run at all?

Before hours of queueing end in ``ModuleNotFoundError``, a segfaulting extension, a
half-written checkpoint or the OOM killer, check:

* **imports** (``--module``, repeatable): each module is imported in its own child
  interpreter (``--python``, default the one running trainproof), from ``--cwd`` (so
  editable installs and local packages resolve as they will for the run), with a
  ``--timeout``. trainproof itself never imports the module, so a segfault, an ``abort()``
  or an import that hangs is reported, not suffered. The child runs with
  ``-X faulthandler``: a crash or a hang names the Python line it happened at.
* **checkpoints** (``--checkpoint``, repeatable; a file or a directory): never unpickled,
  since loading a pickle runs arbitrary code. A torch checkpoint (``torch.save`` since 1.6)
  is a ZIP archive: its central directory is read, ``<top>/data.pkl`` must exist and every
  entry's CRC-32 is verified (the whole file is read once). The imports ``data.pkl`` would
  perform are listed from its opcodes (:mod:`._pickle`), and any outside what
  ``torch.load(weights_only=True)`` accepts is a warning naming them. A ``.safetensors`` file's
  8-byte header length and JSON header are read here (not by the ``safetensors``
  package): every tensor's bytes must lie inside the file, match its dtype and shape, and
  cover the data area exactly as the format requires. A directory is checked file by file
  (``*.safetensors``, ``*.bin``, ``*.pt``, ``*.pth``, ``*.ckpt``) and every
  ``*.index.json`` in it must name only files that exist; numbered shards
  (``model-00001-of-00004.safetensors``) must all be present.
* **memory**: RAM available now (``psutil``), or less when the process sits in a cgroup
  with a memory limit (a container, a Slurm job, a systemd slice: the limit is what the
  OOM killer enforces), against ``--required-gb``.
* **disk**: free space under ``--output-dir`` (default ``--cwd``) against
  ``--checkpoint-gb`` × ``--keep``.
* **GPUs**: when ``pynvml`` (nvidia-ml-py) is importable, each device and its free
  memory, as INFO only: trainproof does not know what the run needs per device.

**One report for the machine.** Everything goes into one :class:`Report` whose ``file`` is
the ``--cwd`` as given (default ``.``): the question is one question (can this run start
here?), and its verdict is the answer. INFO findings (memory or disk without a
requirement, GPUs, the interpreter) never make that verdict, so a run that asks only for
imports still exits 0 when they pass; with nothing required at all (no ``--module``,
``--checkpoint``, ``--required-gb`` or ``--checkpoint-gb``) the report holds only INFO
and is NOT-CHECKED (exit 2). Each finding's ``data`` names its item (``module``,
``path``), so ``--json`` consumers can group by item.

Paths given to ``--checkpoint`` and ``--output-dir`` are relative to where trainproof
runs, like every path on the command line; only the import probe runs in ``--cwd``.
Sizes are in GB of 2^30 bytes, as ``free -g``, ``df -h`` and ``nvidia-smi`` count them.

The checks live in :mod:`.probe` (the import sandbox), :mod:`.checkpoints` and
:mod:`.resources` (memory, disk, GPUs); :func:`env_report` runs them through
:func:`trainproof.preflight.run`.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace

from ...config import Config
from ...findings import Finding, Report
from ...rules.thresholds import Thresholds
from .. import Check, Outcome, finding, run
from .checkpoints import check_checkpoint, check_file
from .probe import CLEAN_ENV_KEEP, clean_environment, is_module_name, probe_import, probe_python
from .resources import GB, cgroup_memory, check_disk, check_gpus, check_memory

__all__ = [
    "CLEAN_ENV_KEEP",
    "GB",
    "cgroup_memory",
    "check_checkpoint",
    "check_disk",
    "check_file",
    "check_gpus",
    "check_memory",
    "clean_environment",
    "env_report",
    "is_module_name",
    "probe_import",
    "probe_python",
]

#: The ids each check of :func:`env_report` may report (``rules/preflight_ids/env.py``).
_CWD_IDS = ("TP-ENV-CWD-MISSING",)
_IMPORT_IDS = (
    "TP-ENV-PYTHON-INFO",
    "TP-ENV-PYTHON-UNUSABLE",
    "TP-ENV-IMPORT-OK",
    "TP-ENV-IMPORT-FAIL",
    "TP-ENV-IMPORT-CRASH",
    "TP-ENV-IMPORT-TIMEOUT",
)
_CKPT_IDS = (
    "TP-ENV-CKPT-OK",
    "TP-ENV-CKPT-UNSAFE-PICKLE",
    "TP-ENV-CKPT-MISSING",
    "TP-ENV-CKPT-EMPTY",
    "TP-ENV-CKPT-TRUNCATED",
    "TP-ENV-CKPT-CORRUPT",
    "TP-ENV-CKPT-LEGACY",
    "TP-ENV-CKPT-UNREADABLE",
    "TP-ENV-CKPT-LFS-POINTER",
    "TP-ENV-CKPT-UNKNOWN-FORMAT",
    "TP-ENV-SAFETENSORS-OK",
    "TP-ENV-SAFETENSORS-TRUNCATED",
    "TP-ENV-SAFETENSORS-CORRUPT",
    "TP-ENV-SHARD-MISSING",
)
_MEM_IDS = ("TP-ENV-MEM-OK", "TP-ENV-MEM-TIGHT", "TP-ENV-MEM-INSUFFICIENT", "TP-ENV-MEM-INFO", "TP-ENV-MEM-UNKNOWN")
_DISK_IDS = (
    "TP-ENV-DISK-OK",
    "TP-ENV-DISK-TIGHT",
    "TP-ENV-DISK-INSUFFICIENT",
    "TP-ENV-DISK-INFO",
    "TP-ENV-DISK-UNKNOWN",
)
_GPU_IDS = ("TP-ENV-GPU-INFO",)


def env_report(
    modules=(),
    python: str | None = None,
    cwd: str = ".",
    cwd_given: bool = False,
    checkpoints=(),
    required_gb: float | None = None,
    output_dir: str | None = None,
    checkpoint_gb: float | None = None,
    keep: int = 1,
    timeout: float = 120.0,
    th: Thresholds | None = None,
    clean_env: bool = False,
    mute=(),
) -> Report:
    """The one report about this machine (see the module documentation).

    With ``clean_env`` the child interpreters get a minimal environment
    (:func:`clean_environment`) instead of trainproof's own. ``mute``: ids reported as
    skipped, reason ``muted``; a check whose ids are all muted does not run.
    ``records``: the imports probed, the checkpoints, memory and disk. ``ran``: the ids
    reported, sorted.
    """
    child_env = clean_environment() if clean_env else None
    cwd_ok = os.path.isdir(cwd)
    meta: dict = {"cwd": cwd, "clean_env": clean_env}

    def cwd_check(_th: Thresholds) -> list[Finding]:
        if cwd_ok or not (cwd_given or modules):
            return []
        what = "is not a directory" if os.path.exists(cwd) else "does not exist"
        return [
            finding(
                "TP-ENV-CWD-MISSING",
                f"--cwd {cwd} {what}" + (f": {len(modules)} import(s) not probed" if modules else ""),
                data={"cwd": cwd},
            )
        ]

    def import_check(_th: Thresholds) -> Outcome:
        out = Outcome()
        if not (modules or python is not None):
            return out
        py = python or sys.executable
        info, why = probe_python(py, cwd if cwd_ok else None, timeout, child_env)
        if info is None:
            out.findings.append(
                finding(
                    "TP-ENV-PYTHON-UNUSABLE",
                    why + (f": {len(modules)} import(s) not probed" if modules else ""),
                    data={"python": py},
                )
            )
            return out
        out.meta["python"] = info
        out.findings.append(
            finding(
                "TP-ENV-PYTHON-INFO",
                f"Python {info['version']} ({info['implementation']}) at {info['executable']}",
                evidence=f"prefix {info['prefix']}; imports run from {cwd}",
                data={"python": py, **info},
            )
        )
        if cwd_ok:
            for m in modules:
                out.items += 1
                out.findings.append(probe_import(m, py, cwd, timeout, child_env))
        return out

    def checkpoint_check(_th: Thresholds) -> Outcome:
        out = Outcome(items=len(checkpoints))
        for c in checkpoints:
            out.findings.extend(check_checkpoint(c))
        return out

    def memory_check(th: Thresholds) -> Outcome:
        f, skip = check_memory(required_gb, th)
        return Outcome(
            findings=[f] if f is not None else [],
            skipped={"TP-ENV-MEM-INFO": skip} if skip is not None else {},
            items=1,
        )

    def disk_check(th: Thresholds) -> Outcome:
        f = check_disk(output_dir if output_dir is not None else cwd, checkpoint_gb, keep, th)
        return Outcome(findings=[f], items=1)

    def gpu_check(_th: Thresholds) -> Outcome:
        gpus, skip = check_gpus()
        return Outcome(findings=gpus, skipped={"TP-ENV-GPU-INFO": skip} if skip is not None else {})

    notes = []
    if not (
        modules
        or checkpoints
        or required_gb is not None
        or checkpoint_gb is not None
        or python is not None
        or cwd_given
    ):
        notes.append(
            "nothing was required: give --module, --checkpoint, --required-gb or --checkpoint-gb for a verdict"
        )
    checks = [
        Check(_CWD_IDS, cwd_check, "working directory"),
        Check(_IMPORT_IDS, import_check, "interpreter and imports"),
        Check(_CKPT_IDS, checkpoint_check, "checkpoints"),
        Check(_MEM_IDS, memory_check, "memory"),
        Check(_DISK_IDS, disk_check, "disk"),
        Check(_GPU_IDS, gpu_check, "GPUs"),
    ]
    config = Config(mute=set(mute), thresholds=th or Thresholds())
    rep = run(checks, config, file=cwd, kind="env", meta=meta, notes=notes)
    # env lists the ids it judged sorted, not in the order the checks ran.
    return replace(rep, ran=sorted(rep.ran))
