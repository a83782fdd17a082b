"""Healthy, unusual: a DistributedDataParallel run in two ``gloo`` processes on CPU, each
rank on its own shard of the batches (DDP broadcasts rank 0's parameters at the start and
averages the gradients, so the replicas stay identical)."""

from torch import nn, optim
from torch.nn.parallel import DistributedDataParallel as DDP

from . import _common as c
from . import _ddp

BUG = None
CATCH = None


def _worker(rank: int, **monitor_kwargs):
    c.setup(seed=rank)  # DDP's broadcast makes the replicas equal whatever the seed
    model = DDP(c.mlp())
    opt = optim.Adam(model.parameters(), lr=3e-3)
    return c.train_classifier(model, opt, data_seed=rank, loss_fn=nn.CrossEntropyLoss(), **monitor_kwargs)


def run(**monitor_kwargs):
    return _ddp.spawn(_worker, **monitor_kwargs)
