"""Judging runs while they train: the guardian, the in-loop monitor, the log tail.

Nothing here imports torch, lightning, keras or transformers at import time.
"""
from .guardian import Guardian, RunFailed

__all__ = ["Guardian", "RunFailed", "watch"]


def watch(*args, **kwargs):
    """Start the in-loop monitor for a raw PyTorch loop (see :class:`.monitor.Monitor`)."""
    from .monitor import watch as _watch

    return _watch(*args, **kwargs)
