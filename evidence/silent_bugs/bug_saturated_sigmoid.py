"""Bug: a sigmoid MLP initialised with weights 30 times too large (a gain meant for
another activation): its units sit at 0 or 1, their gradients vanish, and the network
learns only slowly."""

import torch
from torch import nn, optim

from . import _common as c

BUG = "saturated sigmoid units from a 30x too large init"
CATCH = {"by": "model", "rules": ("TP-SATURATION",), "level": "WARN"}


def run(**monitor_kwargs):
    c.setup()
    model = c.mlp(act=nn.Sigmoid)
    with torch.no_grad():
        for m in list(model)[:-1]:
            if isinstance(m, nn.Linear):
                m.weight.mul_(30.0)  # the bug
    opt = optim.Adam(model.parameters(), lr=1e-3)
    xv, _ = c.holdout()

    def after(m):
        out = []
        h = m[1].register_forward_hook(lambda mod, i, o: out.append(o.detach()))
        with torch.no_grad():
            m(xv)
        h.remove()
        share = float(((out[0] < 0.01) | (out[0] > 0.99)).float().mean())
        return {"saturated_share": share, "effect": share > 0.5}

    return c.train_classifier(model, opt, after=after, **monitor_kwargs)
