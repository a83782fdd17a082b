"""Healthy, unusual: a slow learner. Plain SGD with a small learning rate: the loss falls
steadily but slowly, far from converged at the end of the run (the shape that a stop on
the noisy loss alone once cut short)."""

from torch import optim

from . import _common as c

BUG = None
CATCH = None


def run(**monitor_kwargs):
    c.setup()
    model = c.mlp()
    opt = optim.SGD(model.parameters(), lr=0.02)
    return c.train_classifier(model, opt, **monitor_kwargs)
