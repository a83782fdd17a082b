"""Values several rules read off the same run, computed once per judgement.

Each goes through :meth:`~trainproof.rules.engine.Context.memo`, so the first rule that
needs it computes it and the others reuse it; every rule still sees exactly the value it
would have computed itself.
"""

from __future__ import annotations

import numpy as np

from ._stats import noise_sigma


def log_loss(ctx) -> np.ndarray:
    """``np.log`` of the finite train losses (read-only)."""

    def compute():
        y = np.log(ctx.finite("loss").values)
        y.flags.writeable = False
        return y

    return ctx.memo("log(loss)", compute)


def log_loss_noise(ctx) -> float:
    """:func:`~trainproof.rules._stats.noise_sigma` of :func:`log_loss`."""
    return ctx.memo("noise_sigma(log(loss))", lambda: noise_sigma(log_loss(ctx)))
