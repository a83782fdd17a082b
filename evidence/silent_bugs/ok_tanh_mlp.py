"""Healthy: a tanh MLP with the default initialisation (its units work in tanh's linear
range, not at the asymptotes)."""

from torch import nn, optim

from . import _common as c

BUG = None
CATCH = None


def run(**monitor_kwargs):
    c.setup()
    model = c.mlp(act=nn.Tanh)
    opt = optim.Adam(model.parameters(), lr=3e-3)
    return c.train_classifier(model, opt, **monitor_kwargs)
