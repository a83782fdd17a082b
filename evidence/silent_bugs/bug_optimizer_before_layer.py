"""Bug: the optimizer is built, then the classifier head is replaced by a new layer (for a
new number of classes, say): the new head's parameters are in no param group, receive
gradients every step and never change. The body still learns, so the loss falls."""

from torch import nn, optim

from . import _common as c

BUG = "optimizer built before the head was replaced: the new layer's parameters are never optimized"
CATCH = {"by": "model", "rules": ("TP-PARAMS-NOT-OPTIMIZED",), "level": "WARN"}


def run(**monitor_kwargs):
    c.setup()
    model = c.mlp()
    opt = optim.Adam(model.parameters(), lr=3e-3)
    model[-1] = nn.Linear(64, c.CLASSES)  # the bug: added after the optimizer took its parameter list
    head = c.snapshot(model[-1])
    return c.train_classifier(
        model, opt, after=lambda m: {"effect": c.unchanged(m[-1], head) == sorted(head)}, **monitor_kwargs
    )
