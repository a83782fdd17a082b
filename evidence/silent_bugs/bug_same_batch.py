"""Bug: the loop draws one batch before the loop and trains on it at every step (the
``next(iter(loader))`` of a debugging session left in): the training loss falls to near
zero fast and smoothly, the look of a run learning well. The program evaluates on held-out
data every 10 steps, as most loops do, and that loss rises."""

import torch
from torch import nn, optim

from . import _common as c

BUG = "the same batch every step: the model memorises one batch"
#: The input of each check step is the batch of the check before (TP-SAME-BATCH, with
#: activations=True); in the loss curves, a held-out loss that rises.
CATCH = {"by": "model", "rules": ("TP-SAME-BATCH", "TP-OVERFIT", "TP-EVAL-DIVERGE"), "level": "WARN"}


def run(**monitor_kwargs):
    c.setup()
    x, y = c.task()
    xv, yv = c.holdout()
    model = c.mlp()
    opt = optim.Adam(model.parameters(), lr=3e-3)
    mon = c.start(model, opt, c.STEPS, **monitor_kwargs)
    xb, yb = next(c.batches(x, y))  # the bug: drawn once, used every step
    losses = []
    for step in range(c.STEPS):
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        eval_loss = None
        if step % 10 == 9:
            with torch.no_grad():
                eval_loss = nn.functional.cross_entropy(model(xv), yv).item()
        mon.log(step, loss, eval_loss=eval_loss)
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    summary = c.loss_summary(losses)
    return c.finish(mon, c.STEPS, effect=summary["last_loss"] < 0.05, **summary)
