"""A real Lightning fit logged by its CSVLogger with ``on_step=True, on_epoch=True`` at the
default ``log_every_n_steps`` (50): 20 epochs of 16 batches log the step loss 6 times and
the epoch loss 20 times, and the run is judged on the epoch loss."""

from __future__ import annotations

import logging

import pytest

from trainproof.api import judge, read_runlog
from trainproof.findings import Level

pytestmark = pytest.mark.slow


def _fit(tmp_path, hot_from_epoch: int | None):
    pl = pytest.importorskip("lightning.pytorch")
    import torch
    from _lightning_runs import clusters
    from lightning.pytorch.loggers import CSVLogger
    from torch import nn

    torch.set_num_threads(1)

    class Net(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = nn.functional.cross_entropy(self.net(x), y)
            self.log("train_loss", loss, on_step=True, on_epoch=True)
            return loss

        def validation_step(self, batch, batch_idx):
            x, y = batch
            self.log("val_loss", nn.functional.cross_entropy(self.net(x), y))

        def on_train_epoch_start(self) -> None:
            if hot_from_epoch is not None and self.current_epoch == hot_from_epoch:
                for g in self.optimizers().param_groups:
                    g["lr"] *= 300  # the bug: a learning rate far too high from here on

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=3e-3)

    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    pl.seed_everything(0, verbose=False)
    trainer = pl.Trainer(
        accelerator="cpu",
        max_epochs=20,
        logger=CSVLogger(tmp_path, name="run"),
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    train = torch.utils.data.DataLoader(clusters(512, 1), batch_size=32, shuffle=True)
    val = torch.utils.data.DataLoader(clusters(256, 2), batch_size=128)
    trainer.fit(Net(), train, val)
    return next(tmp_path.glob("run/version_*/metrics.csv"))


def test_a_lightning_run_with_few_step_losses_is_judged_on_its_epoch_loss(tmp_path):
    path = _fit(tmp_path / "healthy", hot_from_epoch=None)
    run = read_runlog(path)
    assert run.mapping["loss"]["source"] == "train_loss_epoch"
    assert run.get("loss").values.size == 20
    rep = judge(path)
    assert rep.verdict in (Level.PASS, Level.WARN) and "TP-LOSS-STOPPED" not in rep.ids()
    # The same fit with the learning rate 300x from epoch 14 diverges, and the log says so.
    rep = judge(_fit(tmp_path / "hot", hot_from_epoch=14))
    assert "TP-DIVERGE" in rep.ids()
