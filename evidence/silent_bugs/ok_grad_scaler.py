"""Healthy, unusual: a loss scaler used right: ``torch.amp.GradScaler("cpu")`` with a
bfloat16 autocast forward, ``unscale_`` before clipping the gradient norm to 1, then
``scaler.step`` and ``scaler.update``; the monitor logs after ``unscale_`` (true
gradients)."""

import torch
from torch import nn, optim

from . import _common as c

BUG = None
CATCH = None


def run(**monitor_kwargs):
    c.setup()
    x, y = c.task()
    model = c.mlp()
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
    mon = c.start(model, opt, c.STEPS, scaler=scaler, **monitor_kwargs)
    losses = []
    for step, (xb, yb) in zip(range(c.STEPS), c.batches(x, y)):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(xb), yb)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        mon.log(step, loss)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        losses.append(loss.item())
    return c.finish(mon, c.STEPS, **c.loss_summary(losses))
