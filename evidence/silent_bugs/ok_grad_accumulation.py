"""Healthy, unusual: gradient accumulation done right. Four micro-batches of 16 per
optimizer step, each loss divided by 4, ``zero_grad`` after the step; the monitor logs
once per optimizer step, after the last micro-batch's backward."""

from torch import nn, optim

from . import _common as c

BUG = None
CATCH = None
ACCUMULATE = 4


def run(**monitor_kwargs):
    c.setup()
    x, y = c.task()
    model = c.mlp()
    opt = optim.Adam(model.parameters(), lr=3e-3)
    mon = c.start(model, opt, c.STEPS, **monitor_kwargs)
    data = c.batches(x, y, batch=c.BATCH // ACCUMULATE)
    losses = []
    for step in range(c.STEPS):
        total = 0.0
        for _ in range(ACCUMULATE):
            xb, yb = next(data)
            loss = nn.functional.cross_entropy(model(xb), yb) / ACCUMULATE
            loss.backward()
            total += loss.item()
        mon.log(step, total)
        opt.step()
        opt.zero_grad()
        losses.append(total)
    return c.finish(mon, c.STEPS, **c.loss_summary(losses))
