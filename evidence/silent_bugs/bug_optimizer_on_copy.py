"""Bug: the optimizer is built on the model, then the loop trains a deep copy of it (made
for an EMA or a device move after the optimizer): the optimizer steps parameters nobody
uses and the trained copy never changes. Its loss only wanders with the batches."""

import copy

from torch import optim

from . import _common as c

BUG = "optimizer built on the model, a deep copy trained: no trained parameter is in the optimizer"
CATCH = {"by": "model", "rules": ("TP-PARAMS-NOT-OPTIMIZED",), "level": "WARN"}


def run(**monitor_kwargs):
    c.setup()
    original = c.mlp()
    opt = optim.Adam(original.parameters(), lr=3e-3)
    model = copy.deepcopy(original)  # the bug: the copy is trained, the original optimized
    init = c.snapshot(model)
    return c.train_classifier(
        model, opt, after=lambda m: {"effect": c.unchanged(m, init) == sorted(init)}, **monitor_kwargs
    )
