"""Bug: with a loss scaler, the gradient norm is clipped to 1 before ``scaler.unscale_``:
the clip acts on gradients 65536 times too large, so after unscaling every step's gradient
has a norm of about 1/65536, and SGD barely moves the weights. (CPU: a bfloat16 autocast
forward and ``torch.amp.GradScaler("cpu")``.) The monitor logs after ``unscale_``, as for
any scaler."""

import torch
from torch import nn, optim

from . import _common as c

BUG = "gradient clipping before scaler.unscale_(): every update shrunk by the loss scale"
#: The gradient norm the optimizer gets times the loss scale is the clipping bar at every
#: check (TP-CLIP-BEFORE-UNSCALE); per layer, every update ratio is tiny.
CATCH = {"by": "model", "rules": ("TP-CLIP-BEFORE-UNSCALE", "TP-LAYER-UPDATE-RATIO"), "level": "WARN"}


def run(**monitor_kwargs):
    c.setup()
    x, y = c.task()
    model = c.mlp()
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
    mon = c.start(model, opt, c.STEPS, scaler=scaler, **monitor_kwargs)
    losses, norms = [], []
    for step, (xb, yb) in zip(range(c.STEPS), c.batches(x, y)):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(xb), yb)
        scaler.scale(loss).backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # the bug: before unscale_
        scaler.unscale_(opt)
        mon.log(step, loss)
        norms.append(float(sum(p.grad.float().square().sum() for p in model.parameters()) ** 0.5))
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        losses.append(loss.item())
    # the gradients the optimizer gets have the norm 1 / scale, not about 1
    return c.finish(mon, c.STEPS, effect=max(norms) < 1e-3, **c.loss_summary(losses))
