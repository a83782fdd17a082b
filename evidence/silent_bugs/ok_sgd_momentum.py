"""Healthy: a two-hidden-layer ReLU MLP trained with SGD and momentum."""

from torch import optim

from . import _common as c

BUG = None
CATCH = None


def run(**monitor_kwargs):
    c.setup()
    model = c.mlp()
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return c.train_classifier(model, opt, **monitor_kwargs)
