"""Tiny Lightning runs on CPU: a clustered data set, an MLP, and a fit with a callback."""

from __future__ import annotations

import logging


def clusters(n: int, seed: int):
    """``n`` samples of 16 features around 4 fixed class centres (overlapping)."""
    import torch

    centres = torch.randn(4, 16, generator=torch.Generator().manual_seed(0)) * 1.2
    gen = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 4, (n,), generator=gen)
    return torch.utils.data.TensorDataset(centres[y] + 1.5 * torch.randn(n, 16, generator=gen), y)


def mlp(optimizer: str, lr: float):
    """A LightningModule: a 16-64-64-4 MLP that logs ``train_loss`` and ``val_loss``."""
    import lightning.pytorch as pl
    import torch
    from torch import nn

    class MLP(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = nn.functional.cross_entropy(self.net(x), y)
            self.log("train_loss", loss)
            return loss

        def validation_step(self, batch, batch_idx):
            x, y = batch
            self.log("val_loss", nn.functional.cross_entropy(self.net(x), y))

        def configure_optimizers(self):
            cls = torch.optim.SGD if optimizer == "sgd" else torch.optim.Adam
            return cls(self.parameters(), lr=lr)

    return MLP()


def quiet_trainer(cb, **kw):
    """A CPU ``Trainer`` with ``cb`` as its one callback, seeded, with no logger,
    checkpoints, progress bar or summary; ``kw`` sets the schedule and validation."""
    import lightning.pytorch as pl

    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    pl.seed_everything(0, verbose=False)
    return pl.Trainer(
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[cb],
        **kw,
    )


def fit(cb, optimizer: str, lr: float, **schedule):
    import torch

    trainer = quiet_trainer(
        cb, val_check_interval=50, check_val_every_n_epoch=None, **(schedule or {"max_steps": MAX_STEPS})
    )
    train = torch.utils.data.DataLoader(clusters(2048, 1), batch_size=BATCH, shuffle=True)
    val = torch.utils.data.DataLoader(clusters(256, 2), batch_size=128)
    trainer.fit(mlp(optimizer, lr), train, val)
    return trainer


MAX_STEPS = 150


BATCH = 32
