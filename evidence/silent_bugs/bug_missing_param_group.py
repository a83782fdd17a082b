"""Bug: per-part learning rates, and the head's param group was left out of the list given
to the optimizer: the head keeps its random initialisation while the body learns around
it."""

from torch import nn, optim

from . import _common as c

BUG = "a param group left out of the optimizer: the head is never optimized"
CATCH = {"by": "model", "rules": ("TP-PARAMS-NOT-OPTIMIZED",), "level": "WARN"}


def run(**monitor_kwargs):
    c.setup()
    body = nn.Sequential(nn.Linear(c.D_IN, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
    head = nn.Linear(64, c.CLASSES)
    model = nn.Sequential(body, head)
    opt = optim.Adam([{"params": body.parameters(), "lr": 3e-3}])  # the bug: no {"params": head.parameters()}
    init = c.snapshot(head)
    return c.train_classifier(
        model, opt, after=lambda m: {"effect": c.unchanged(head, init) == sorted(init)}, **monitor_kwargs
    )
