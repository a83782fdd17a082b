""":func:`env_report`: every check of ``trainproof env`` (:mod:`.probe`, :mod:`.checkpoints`,
:mod:`.resources`) run on what the command was given, as one report."""

from __future__ import annotations

import os
import sys
from dataclasses import replace

from ...config import Config
from ...findings import Finding, Report
from ...rules.thresholds import Thresholds
from .. import Check, Outcome, finding, run
from .checkpoints import check_checkpoint
from .probe import clean_environment, probe_import, probe_python
from .resources import check_disk, check_gpus, check_memory

#: The ids each check of :func:`env_report` may report (declared in :mod:`.ids`).
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
