"""Bug: ``requires_grad_(False)`` meant for the first layer's bias was applied to the whole
second layer, which the optimizer still holds: that layer stays at its random
initialisation (the rest of the network learns around it, so the loss falls)."""

from torch import optim

from . import _common as c

BUG = "requires_grad=False on a hidden layer by accident: it stays at its initialisation"
CATCH = {"by": "model", "rules": ("TP-PARAMS-FROZEN",), "level": "WARN"}


def run(**monitor_kwargs):
    c.setup()
    model = c.mlp()
    model[2].requires_grad_(False)  # the bug: a whole layer instead of one tensor
    opt = optim.Adam(model.parameters(), lr=3e-3)
    init = c.snapshot(model[2])
    return c.train_classifier(
        model, opt, after=lambda m: {"effect": c.unchanged(m[2], init) == sorted(init)}, **monitor_kwargs
    )
