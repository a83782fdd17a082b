"""Bug: a learning rate far too large for plain SGD: the first steps throw the first
layer's weights and biases so far that most of its ReLU units never fire again."""

from torch import optim

from . import _common as c

BUG = "dying ReLUs from a large learning rate"
CATCH = {"by": "model", "rules": ("TP-DEAD-RELU",), "level": "WARN"}


def run(**monitor_kwargs):
    c.setup()
    model = c.mlp()
    opt = optim.SGD(model.parameters(), lr=3.0)  # the bug
    xv, _ = c.holdout()

    def after(m):
        share = c.dead_share(m[1], xv, m)
        return {"dead_share": share, "effect": share > 0.5}

    return c.train_classifier(model, opt, after=after, **monitor_kwargs)
