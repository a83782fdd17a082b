"""Bug: per-layer learning rates where the third layer's was typed 100 times too large
(0.5 instead of 0.005): that one layer's weights grow about fivefold over the run while
the other layers' barely change, and the network still learns."""

from torch import nn, optim

from . import _common as c

BUG = "one exploding layer: a per-layer learning rate 100x too large"
CATCH = {"by": "model", "rules": ("TP-LAYER-GRAD-EXPLODING", "TP-LAYER-UPDATE-RATIO"), "level": "WARN"}


def run(**monitor_kwargs):
    c.setup()
    model = c.mlp(depth=3)
    linears = [m for m in model if isinstance(m, nn.Linear)]
    lrs = [0.005, 0.005, 0.5, 0.005]  # the bug: the third layer's 0.5
    opt = optim.SGD([{"params": m.parameters(), "lr": lr} for m, lr in zip(linears, lrs)], lr=0.005, momentum=0.9)
    norms = [m.weight.norm().item() for m in linears]

    def after(m):
        growth = [w.weight.norm().item() / n for w, n in zip(linears, norms)]
        return {"weight_growth": growth, "effect": growth[2] > 3 * max(growth[:2] + growth[3:])}

    return c.train_classifier(model, opt, after=after, **monitor_kwargs)
