"""Bug: the labels are off by one sample (``torch.roll(y, 1)``, as an off-by-one in a
data pipeline that reads inputs and labels from two files does): every input gets its
neighbour's label, the pairs carry no signal, and the loss stays near chance."""

import torch
from torch import optim

from . import _common as c

BUG = "labels shifted by one sample: each input paired with its neighbour's label"
CATCH = {
    "by": "loss",
    "rules": ("TP-CHANCE-LEVEL", "TP-NEAR-CHANCE", "TP-LOSS-STALLED", "TP-DEAD-RUN"),
    "level": "WARN",
}


def run(**monitor_kwargs):
    c.setup()
    x, y = c.task()
    y = torch.roll(y, 1)  # the bug
    model = c.mlp()
    opt = optim.Adam(model.parameters(), lr=3e-3)
    mon = c.start(model, opt, c.STEPS, **monitor_kwargs)
    losses = []
    for step, (xb, yb) in zip(range(c.STEPS), c.batches(x, y)):
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        mon.log(step, loss)
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    summary = c.loss_summary(losses)
    return c.finish(mon, c.STEPS, effect=summary["last_loss"] > 1.5, **summary)
