"""Bug: a linear warm-up scheduler is built and never stepped: the learning rate stays at
the warm-up's first value (1 % of the peak) for the whole run, which learns, slowly."""

from torch import nn, optim

from . import _common as c

BUG = "scheduler never stepped: the learning rate stays at the warm-up's first value"
CATCH = {"by": "model", "rules": ("TP-SCHEDULER-STUCK",), "level": "WARN"}


def run(**monitor_kwargs):
    c.setup()
    x, y = c.task()
    model = c.mlp()
    opt = optim.Adam(model.parameters(), lr=3e-3)
    sched = optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 100))
    mon = c.start(model, opt, c.STEPS, scheduler=sched, **monitor_kwargs)
    losses = []
    for step, (xb, yb) in zip(range(c.STEPS), c.batches(x, y)):
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        mon.log(step, loss)
        opt.step()
        opt.zero_grad()  # the bug: no sched.step()
        losses.append(loss.item())
    effect = opt.param_groups[0]["lr"] == 3e-3 / 100  # still the warm-up's first value
    return c.finish(mon, c.STEPS, effect=effect, **c.loss_summary(losses))
