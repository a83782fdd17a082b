"""Which process of a distributed run this is, and how the processes agree.

The in-loop monitor and the framework callbacks run in every process of a data- or
model-parallel run. Only the main process (rank 0) prints, writes the log and calls
``on_alert``; a decision that changes the control flow (stop, raise) is agreed by every
process at the same call, so no process is left waiting in a collective the others have
left.

Everything here works without ``torch.distributed``: a single process is rank 0 of 1,
and agreeing is the identity. Nothing here imports torch: a process group can only exist
in a process that already imported ``torch.distributed``.
"""

from __future__ import annotations

import os
import sys


def _group_ready():
    """``torch.distributed`` when a default process group is initialised, else ``None``.

    A process group exists only after ``torch.distributed`` was imported, so a process that
    has not imported it gets ``None`` without importing torch (a Keras run on the JAX
    backend, a log judged on a laptop).
    """
    dist = sys.modules.get("torch.distributed")
    if dist is None:
        return None
    if not dist.is_available() or not dist.is_initialized():
        return None
    return dist


def rank() -> int:
    """This process's global rank: from the default process group when one is initialised,
    else from the launcher's ``RANK`` variable (torchrun, accelerate), else 0."""
    dist = _group_ready()
    if dist is not None:
        return int(dist.get_rank())
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


def world_size() -> int:
    """The number of processes: from the default process group when one is initialised,
    else 1 (a launcher's ``WORLD_SIZE`` alone does not make agreeing possible)."""
    dist = _group_ready()
    return int(dist.get_world_size()) if dist is not None else 1


def is_main() -> bool:
    """True in the process that prints and writes (rank 0)."""
    return rank() == 0


def _reduce_device(dist):
    """Where a collective's tensor must live for the default group's backend: the current
    CUDA device for NCCL, the CPU for gloo, MPI and the rest."""
    import torch

    backend = str(dist.get_backend()).lower()
    if "nccl" in backend and torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def any_rank(flag: bool) -> bool:
    """True when ``flag`` is true in any process (an all-reduce of one number, MAX).

    A collective: every process of the default group must call it at the same point, or
    the callers wait for the others. Without a process group it returns ``flag``.
    """
    dist = _group_ready()
    if dist is None or dist.get_world_size() == 1:
        return bool(flag)
    import torch

    t = torch.tensor([1.0 if flag else 0.0], device=_reduce_device(dist))
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item() > 0)


def all_ranks(flag: bool) -> bool:
    """True when ``flag`` is true in every process (an all-reduce of one number, MIN).

    A collective, like :func:`any_rank`. Without a process group it returns ``flag``.
    """
    return not any_rank(not flag)


def all_gather(obj) -> list:
    """Every process's ``obj`` (anything picklable), in rank order: a list of
    :func:`world_size` items (``torch.distributed.all_gather_object``).

    A collective, like :func:`any_rank`. Without a process group it returns ``[obj]``.
    """
    dist = _group_ready()
    if dist is None or dist.get_world_size() == 1:
        return [obj]
    out: list = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out
