"""Running a program as two ``gloo`` processes on CPU (a data-parallel run in miniature):
rank 0's ``(report, meta)`` comes back to the caller through a temporary file."""

from __future__ import annotations

import os
import pickle
import socket
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

WORLD = 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _entry(rank: int, target, port: int, out: str, kwargs: dict) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    try:
        result = target(rank, **kwargs)
        if rank == 0:
            with open(out, "wb") as f:
                pickle.dump(result, f)
    finally:
        dist.destroy_process_group()


def spawn(target, **kwargs) -> tuple:
    """Run ``target(rank, **kwargs)`` in :data:`WORLD` processes joined in a ``gloo``
    process group on 127.0.0.1 and return what rank 0's call returned. ``target`` must be
    a module-level function (the processes are started with ``spawn``).

    Raises:
        torch.multiprocessing.ProcessRaisedException: when a process raised.
    """
    fd, out = tempfile.mkstemp(prefix="trainproof-ddp-", suffix=".pkl")
    os.close(fd)
    try:
        mp.spawn(_entry, args=(target, _free_port(), out, kwargs), nprocs=WORLD, join=True)
        with open(out, "rb") as f:
            return pickle.load(f)
    finally:
        os.unlink(out)
