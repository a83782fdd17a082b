"""Bug: the loop evaluates the model once before training under ``model.eval()`` and never
calls ``model.train()``: dropout is off and BatchNorm normalises with its initial running
statistics (never updated) for the whole run. The network still learns."""

import torch
from torch import nn, optim

from . import _common as c

BUG = "model.eval() left on during training: dropout off, BatchNorm on frozen running statistics"
CATCH = {"by": "model", "rules": ("TP-EVAL-MODE-TRAINING",), "level": "WARN"}


def run(**monitor_kwargs):
    c.setup()
    xv, yv = c.holdout()
    model = nn.Sequential(
        nn.Linear(c.D_IN, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, c.CLASSES)
    )
    model.eval()
    with torch.no_grad():
        nn.functional.cross_entropy(model(xv), yv)  # the baseline evaluation before training
    # the bug: no model.train() here
    opt = optim.Adam(model.parameters(), lr=3e-3)
    return c.train_classifier(model, opt, after=lambda m: {"effect": not m.training}, **monitor_kwargs)
