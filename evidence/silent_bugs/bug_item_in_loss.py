"""Bug: a multi-task model whose auxiliary loss is added to the total as
``aux_loss.item()`` (a Python number, kept for logging and reused): the auxiliary head gets
no gradient at all and stays at its initialisation; the logged total still falls with the
main task."""

from torch import nn, optim

from . import _common as c

BUG = "an .item() in the loss path: the auxiliary head gets no gradient"
CATCH = {"by": "model", "rules": ("TP-PARAMS-NO-GRAD",), "level": "WARN"}


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(c.D_IN, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Linear(64, c.CLASSES)
        self.aux_head = nn.Linear(64, 2)  # the auxiliary task: the label's parity

    def forward(self, x):
        h = self.body(x)
        return self.head(h), self.aux_head(h)


def run(**monitor_kwargs):
    c.setup()
    x, y = c.task()
    model = Net()
    opt = optim.Adam(model.parameters(), lr=3e-3)
    init = c.snapshot(model.aux_head)
    mon = c.start(model, opt, c.STEPS, **monitor_kwargs)
    losses = []
    for step, (xb, yb) in zip(range(c.STEPS), c.batches(x, y)):
        logits, aux = model(xb)
        aux_loss = nn.functional.cross_entropy(aux, yb % 2)
        loss = nn.functional.cross_entropy(logits, yb) + 0.5 * aux_loss.item()  # the bug
        loss.backward()
        mon.log(step, loss)
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    effect = c.unchanged(model.aux_head, init) == sorted(init)
    return c.finish(mon, c.STEPS, effect=effect, **c.loss_summary(losses))
