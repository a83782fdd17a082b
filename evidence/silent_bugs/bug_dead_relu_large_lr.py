"""Bug: a learning rate far too large for plain SGD (3.0): within the first few dozen
steps the updates throw the second hidden layer's weights and biases so far that most of
its ReLU units never fire again (about half by step 30, over two thirds at the end)."""

from torch import optim

from . import _common as c

BUG = "dying ReLUs from a large learning rate"
CATCH = {"by": "model", "rules": ("TP-DEAD-RELU", "TP-RELU-MOSTLY-DEAD"), "level": "WARN"}


def run(**monitor_kwargs):
    c.setup()
    model = c.mlp()
    opt = optim.SGD(model.parameters(), lr=3.0)  # the bug
    xv, _ = c.holdout()

    def after(m):
        share = c.dead_share(m[3], xv, m)
        return {"dead_share": share, "effect": share > 0.5}

    return c.train_classifier(model, opt, after=after, **monitor_kwargs)
