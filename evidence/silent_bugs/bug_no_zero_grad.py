"""Bug: ``optimizer.zero_grad()`` is never called, so every backward adds to the gradients
of all the steps before it; Adam normalises the growing sum away, so the loss still falls
and the curve looks like a run with heavy momentum."""

from torch import nn, optim

from . import _common as c

BUG = "optimizer.zero_grad() never called: gradients accumulate across steps"
CATCH = {"by": "model", "rules": ("TP-GRADS-NOT-RESET",), "level": "FAIL"}


def run(**monitor_kwargs):
    c.setup()
    x, y = c.task()
    model = c.mlp()
    opt = optim.Adam(model.parameters(), lr=3e-3)
    mon = c.start(model, opt, c.STEPS, **monitor_kwargs)
    losses, norms = [], []
    for step, (xb, yb) in zip(range(c.STEPS), c.batches(x, y)):
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        mon.log(step, loss)
        norms.append(float(sum(p.grad.square().sum() for p in model.parameters()) ** 0.5))
        opt.step()  # the bug: no opt.zero_grad()
        losses.append(loss.item())
    growth = sum(norms[-20:]) / sum(norms[:20])  # an accumulated sum grows with the step count
    return c.finish(mon, c.STEPS, grad_growth=growth, effect=growth > 5, **c.loss_summary(losses))
