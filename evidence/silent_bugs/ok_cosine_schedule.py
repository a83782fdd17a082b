"""Healthy: a cosine learning-rate decay over the whole run, stepped once per batch."""

from torch import optim

from . import _common as c

BUG = None
CATCH = None


def run(**monitor_kwargs):
    c.setup()
    model = c.mlp()
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=c.STEPS)
    return c.train_classifier(model, opt, scheduler=sched, **monitor_kwargs)
