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
:mod:`.resources` (memory, disk, GPUs); :func:`env_report` (:mod:`.judge`) runs them
through :func:`trainproof.preflight.run`; the ids they emit are declared, with their
documentation, in :mod:`.ids`. The names below are loaded on first use (PEP 562):
importing this package imports no check, so the rule registry reaches :mod:`.ids` through
it without loading the checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import lazy_names

if TYPE_CHECKING:
    from .checkpoints import check_checkpoint, check_file
    from .judge import env_report
    from .probe import CLEAN_ENV_KEEP, clean_environment, is_module_name, probe_import, probe_python
    from .resources import GB, cgroup_memory, check_disk, check_gpus, check_memory

#: Each public name -> the module of this package that defines it.
_WHERE = {
    "CLEAN_ENV_KEEP": "probe",
    "GB": "resources",
    "cgroup_memory": "resources",
    "check_checkpoint": "checkpoints",
    "check_disk": "resources",
    "check_file": "checkpoints",
    "check_gpus": "resources",
    "check_memory": "resources",
    "clean_environment": "probe",
    "env_report": "judge",
    "is_module_name": "probe",
    "probe_import": "probe",
    "probe_python": "probe",
}

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

__getattr__, __dir__ = lazy_names(__name__, _WHERE)
