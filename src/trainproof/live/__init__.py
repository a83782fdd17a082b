"""Judging runs while they train: the guardian, the in-loop monitor, the log tail.

Nothing here imports torch, lightning, keras or transformers at import time.
"""
from .guardian import Guardian, RunFailed

__all__ = ["Guardian", "RunFailed", "monitor", "watch"]


def monitor(*args, **kwargs):
    """Start the in-loop monitor for a raw PyTorch loop (see :class:`.monitor.Monitor`)."""
    from .monitor import monitor as _monitor

    return _monitor(*args, **kwargs)


#: The monitor's former name, kept for code that uses it (``trainproof watch`` the command
#: tails a log file; the in-loop monitor is :func:`monitor`).
watch = monitor
