"""Bug: the model ends in ``nn.Softmax`` and its probabilities go into
``nn.CrossEntropyLoss``, which applies log-softmax again: the loss can only move between
ln(10) ~ 2.30 and ~1.46, its gradients are squashed, and it crawls near chance."""

from torch import nn, optim

from . import _common as c

BUG = "softmax applied before CrossEntropyLoss (which applies log-softmax itself)"
#: The loss's autograd graph shows log-softmax taking a softmax's output
#: (TP-SOFTMAX-BEFORE-LOSS); the loss curve shows a run near chance.
CATCH = {
    "by": "model",
    "rules": ("TP-SOFTMAX-BEFORE-LOSS", "TP-CHANCE-LEVEL", "TP-NEAR-CHANCE", "TP-LOSS-STALLED", "TP-DEAD-RUN"),
    "level": "WARN",
}


def run(**monitor_kwargs):
    c.setup()
    model = c.mlp()
    model.append(nn.Softmax(dim=1))  # the bug
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return c.train_classifier(model, opt, **monitor_kwargs)
