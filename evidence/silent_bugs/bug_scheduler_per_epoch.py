"""Bug: a warm-up-then-cosine schedule written in optimizer steps (warm-up 60 of 300 steps)
is stepped once per epoch (every 64 batches), as the tutorial it was copied from did: at
the end of the run the learning rate is still in its warm-up, at a fraction of its peak."""

import math

from torch import nn, optim

from . import _common as c

BUG = "scheduler stepped per epoch where per batch was meant: the warm-up never finishes"
CATCH = {"by": "loss", "rules": ("TP-WARMUP-UNFINISHED", "TP-SCHEDULER-STUCK"), "level": "WARN"}
WARMUP = 60


def _factor(s: int) -> float:
    if s < WARMUP:
        return (s + 1) / WARMUP
    return 0.5 * (1 + math.cos(math.pi * (s - WARMUP) / (c.STEPS - WARMUP)))


def run(**monitor_kwargs):
    c.setup()
    x, y = c.task()
    model = c.mlp()
    opt = optim.Adam(model.parameters(), lr=3e-3)
    sched = optim.lr_scheduler.LambdaLR(opt, _factor)
    mon = c.start(model, opt, c.STEPS, scheduler=sched, **monitor_kwargs)
    per_epoch = c.N // c.BATCH
    losses = []
    for step, (xb, yb) in zip(range(c.STEPS), c.batches(x, y)):
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        mon.log(step, loss)
        opt.step()
        opt.zero_grad()
        if (step + 1) % per_epoch == 0:  # the bug: per epoch, but the schedule counts batches
            sched.step()
        losses.append(loss.item())
    effect = opt.param_groups[0]["lr"] < 0.2 * 3e-3  # still warming up at the end
    return c.finish(mon, c.STEPS, effect=effect, **c.loss_summary(losses))
