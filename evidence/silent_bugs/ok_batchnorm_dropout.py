"""Healthy: an MLP with BatchNorm and dropout, evaluated on held-out data every 50 steps
under ``model.eval()`` and put back with ``model.train()`` before the next step."""

import torch
from torch import nn, optim

from . import _common as c

BUG = None
CATCH = None


def run(**monitor_kwargs):
    c.setup()
    x, y = c.task()
    xv, yv = c.holdout()
    model = nn.Sequential(
        nn.Linear(c.D_IN, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, c.CLASSES)
    )
    opt = optim.Adam(model.parameters(), lr=3e-3)
    mon = c.start(model, opt, c.STEPS, **monitor_kwargs)
    losses = []
    for step, (xb, yb) in zip(range(c.STEPS), c.batches(x, y)):
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        eval_loss = None
        if step % 50 == 49:
            model.eval()
            with torch.no_grad():
                eval_loss = nn.functional.cross_entropy(model(xv), yv).item()
            model.train()
        mon.log(step, loss, eval_loss=eval_loss)
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return c.finish(mon, c.STEPS, **c.loss_summary(losses))
