"""Healthy, unusual: a backbone frozen on purpose. A pretrained-like body (trained here
for 100 steps first) is frozen with ``requires_grad_(False)`` and only a new head is
trained; the optimizer holds only the head's parameters, as it should."""

from torch import nn, optim

from . import _common as c

BUG = None
CATCH = None


def run(**monitor_kwargs):
    c.setup()
    x, y = c.task()
    body = nn.Sequential(nn.Linear(c.D_IN, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
    pre_head = nn.Linear(64, c.CLASSES)
    pre = optim.Adam([*body.parameters(), *pre_head.parameters()], lr=3e-3)
    for _, (xb, yb) in zip(range(100), c.batches(x, y, seed=1)):  # the "pretraining"
        nn.functional.cross_entropy(pre_head(body(xb)), yb).backward()
        pre.step()
        pre.zero_grad()
    body.requires_grad_(False)
    model = nn.Sequential(body, nn.Linear(64, c.CLASSES))
    opt = optim.Adam([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    return c.train_classifier(model, opt, **monitor_kwargs)
