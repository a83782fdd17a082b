"""Healthy: a two-hidden-layer ReLU MLP trained with Adam."""

from torch import optim

from . import _common as c

BUG = None
CATCH = None


def run(**monitor_kwargs):
    c.setup()
    model = c.mlp()
    opt = optim.Adam(model.parameters(), lr=3e-3)
    return c.train_classifier(model, opt, **monitor_kwargs)
