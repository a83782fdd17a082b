"""Bug: ``zero_grad()`` between ``backward()`` and ``step()`` (a refactoring moved it up):
every step sees no gradient, so the optimizer never changes a weight; the loss only
wanders with the batches around its starting level."""

from torch import nn, optim

from . import _common as c

BUG = "zero_grad() called between backward() and step(): no step ever changes a weight"
CATCH = {
    "by": "model",
    "rules": (
        "TP-GRADS-CLEARED-BEFORE-STEP",
        "TP-DEAD-RUN",
        "TP-LOSS-STALLED",
        "TP-FLAT",
        "TP-CHANCE-LEVEL",
        "TP-NEAR-CHANCE",
    ),
    "level": "WARN",
}


def run(**monitor_kwargs):
    c.setup()
    x, y = c.task()
    model = c.mlp()
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    init = c.snapshot(model)
    mon = c.start(model, opt, c.STEPS, **monitor_kwargs)
    losses = []
    for step, (xb, yb) in zip(range(c.STEPS), c.batches(x, y)):
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        mon.log(step, loss)
        opt.zero_grad()  # the bug: before step()
        opt.step()
        losses.append(loss.item())
    effect = c.unchanged(model, init) == sorted(init)
    return c.finish(mon, c.STEPS, effect=effect, **c.loss_summary(losses))
