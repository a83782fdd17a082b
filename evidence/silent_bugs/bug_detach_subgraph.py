"""Bug: the encoder's output is ``.detach()``\\ ed on its way to the head (left from code
that logged the features): no gradient reaches the encoder, which stays random, while the
head learns on random features and the loss falls."""

from torch import nn, optim

from . import _common as c

BUG = "a detached sub-graph: .detach() in the loss path cuts the encoder off from the gradient"
CATCH = {"by": "model", "rules": ("TP-PARAMS-NO-GRAD",), "level": "WARN"}


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(c.D_IN, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Linear(64, c.CLASSES)

    def forward(self, x):
        features = self.encoder(x).detach()  # the bug
        return self.head(features)


def run(**monitor_kwargs):
    c.setup()
    model = Net()
    opt = optim.Adam(model.parameters(), lr=3e-3)
    init = c.snapshot(model.encoder)
    return c.train_classifier(
        model, opt, after=lambda m: {"effect": c.unchanged(m.encoder, init) == sorted(init)}, **monitor_kwargs
    )
