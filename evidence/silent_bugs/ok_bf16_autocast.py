"""Healthy, unusual: mixed precision done right on CPU: the forward pass under
``torch.autocast("cpu", dtype=torch.bfloat16)``, float32 parameters and optimizer state,
no loss scaler (bfloat16 has float32's exponent range, so gradients do not underflow)."""

import torch
from torch import nn, optim

from . import _common as c

BUG = None
CATCH = None


def run(**monitor_kwargs):
    c.setup()
    x, y = c.task()
    model = c.mlp()
    opt = optim.Adam(model.parameters(), lr=3e-3)
    mon = c.start(model, opt, c.STEPS, **monitor_kwargs)
    losses = []
    for step, (xb, yb) in zip(range(c.STEPS), c.batches(x, y)):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        mon.log(step, loss)
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return c.finish(mon, c.STEPS, **c.loss_summary(losses))
