"""Bug: training in float16 without a loss scaler. A regression of small targets (of the
order of 1e-3, as a model of small residuals has): in float16 the gradients fall below the
smallest subnormal (6e-8) and flush to zero, so most weights get an all-zero gradient and
never move. On CPU the model's parameters and inputs are real float16 tensors (CPU float16
matmul works in torch 2.x; CPU autocast would use bfloat16, whose range does not underflow
here)."""

import torch
from torch import nn, optim

from . import _common as c

BUG = "float16 without a loss scaler: small gradients underflow to zero"
CATCH = {
    "by": "model",
    "rules": ("TP-PARAMS-NO-GRAD", "TP-PARAMS-NOT-UPDATED", "TP-LAYER-GRAD-VANISHING"),
    "level": "WARN",
}
TARGET_SCALE = 1e-3


def run(**monitor_kwargs):
    c.setup()
    x, _ = c.task()
    g = torch.Generator().manual_seed(7)
    w = torch.randn(c.D_IN, 1, generator=g)
    t = TARGET_SCALE * torch.tanh(x @ w / c.D_IN**0.5)
    model = nn.Sequential(nn.Linear(c.D_IN, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    with torch.no_grad():
        model[-1].weight.mul_(1e-2)  # start near the small targets
        model[-1].bias.zero_()
    model.half()  # the bug: float16 weights and gradients, no GradScaler
    opt = optim.SGD(model.parameters(), lr=0.1)
    init = c.snapshot(model[0])
    mon = c.start(model, opt, c.STEPS, **monitor_kwargs)
    losses = []
    for step, (xb, tb) in zip(range(c.STEPS), c.batches(x, t)):
        loss = nn.functional.mse_loss(model(xb.half()), tb.half())
        loss.backward()
        mon.log(step, loss)
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    effect = c.unchanged(model[0], init) == sorted(init)  # the first layer never moved
    return c.finish(mon, c.STEPS, effect=effect, **c.loss_summary(losses))
