"""Judging runs while they train: the guardian, the in-loop monitor, the log tail.

Nothing here imports torch, lightning, keras or transformers at import time.
"""

from .guardian import Guardian, RunFailed

__all__ = ["Guardian", "RunFailed", "watch"]


def watch(*args, **kwargs):
    """Start the in-loop monitor for a raw PyTorch loop: the former name of
    :func:`trainproof.live.monitor.monitor` (``trainproof.monitor``), kept for code that
    uses it. (``trainproof.live.monitor`` is the module; ``trainproof watch`` the command
    tails a log file.)"""
    from .monitor import monitor

    return monitor(*args, **kwargs)
