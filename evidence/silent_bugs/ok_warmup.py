"""Healthy, unusual: a linear warm-up over the first 30 steps, then a constant learning
rate, the scheduler stepped once per optimizer step as meant."""

from torch import optim

from . import _common as c

BUG = None
CATCH = None


def run(**monitor_kwargs):
    c.setup()
    model = c.mlp()
    opt = optim.Adam(model.parameters(), lr=3e-3)
    sched = optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 30))
    return c.train_classifier(model, opt, scheduler=sched, **monitor_kwargs)
