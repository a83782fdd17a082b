"""Bug: the first layer's biases initialised to -2 (a constant meant for another layer):
its pre-activations are negative for nearly every input, so nearly all of its ReLU units
never fire, pass no gradient, and the network learns from almost nothing."""

from torch import nn, optim

from . import _common as c

BUG = "dying ReLUs from a bad init: first-layer biases at -2 leave nearly every unit dead"
CATCH = {"by": "model", "rules": ("TP-DEAD-RELU", "TP-RELU-MOSTLY-DEAD"), "level": "WARN"}


def run(**monitor_kwargs):
    c.setup()
    model = c.mlp()
    nn.init.constant_(model[0].bias, -2.0)  # the bug
    opt = optim.Adam(model.parameters(), lr=3e-3)
    xv, _ = c.holdout()

    def after(m):
        share = c.dead_share(m[1], xv, m)
        return {"dead_share": share, "effect": share > 0.5}

    return c.train_classifier(model, opt, after=after, **monitor_kwargs)
