"""Bug: a hand-written data-parallel loop (two ``gloo`` processes averaging their gradients
with ``all_reduce``) in which each rank seeds itself with its rank and nothing broadcasts
rank 0's initial weights: the replicas start different and stay different, though every
step applies the same averaged update to each."""

import torch
import torch.distributed as dist
from torch import nn, optim

from . import _common as c
from . import _ddp

BUG = "data-parallel ranks initialised from different seeds, never synchronised: the replicas drift apart"
CATCH = {"by": "model", "rules": ("TP-REPLICA-DRIFT",), "level": "FAIL"}


def _worker(rank: int, **monitor_kwargs):
    c.setup(seed=rank)  # the bug: rank r starts from seed r, and nothing broadcasts rank 0's weights
    x, y = c.task()
    model = c.mlp()
    opt = optim.Adam(model.parameters(), lr=3e-3)
    mon = c.start(model, opt, c.STEPS, **monitor_kwargs)
    losses = []
    for step, (xb, yb) in zip(range(c.STEPS), c.batches(x, y, seed=rank)):
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        grads = [p.grad for p in model.parameters()]
        flat = torch.cat([g.flatten() for g in grads])  # one all-reduce per step, as DDP's bucket does
        dist.all_reduce(flat)
        flat /= dist.get_world_size()
        torch._foreach_copy_(grads, [f.view_as(g) for f, g in zip(flat.split([g.numel() for g in grads]), grads)])
        mon.log(step, loss)
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    checksum = torch.stack([sum(p.double().sum() for p in model.parameters())])
    sums = [torch.zeros_like(checksum) for _ in range(dist.get_world_size())]
    dist.all_gather(sums, checksum)
    effect = bool(sums[0] != sums[1])  # the replicas still differ at the end
    return c.finish(mon, c.STEPS, effect=effect, **c.loss_summary(losses))


def run(**monitor_kwargs):
    return _ddp.spawn(_worker, **monitor_kwargs)
