"""The Lightning callback on real tiny MLP runs (CPU, a few seconds each)."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from trainproof import Level

MAX_STEPS = 150
BATCH = 32

# Lightning's own use of torch's pytree API.
pytestmark = pytest.mark.filterwarnings("ignore:`isinstance\\(treespec, LeafSpec\\)` is deprecated")


@pytest.fixture(scope="module")
def callback():
    """The callback class; skips unless torch and lightning are installed."""
    pytest.importorskip("torch")
    pytest.importorskip("lightning.pytorch")
    from trainproof.integrations.lightning import TrainproofCallback

    return TrainproofCallback


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


def fit(cb, optimizer: str, lr: float, **schedule):
    import lightning.pytorch as pl
    import torch

    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    pl.seed_everything(0, verbose=False)
    trainer = pl.Trainer(
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[cb],
        val_check_interval=50,
        check_val_every_n_epoch=None,
        **(schedule or {"max_steps": MAX_STEPS}),
    )
    train = torch.utils.data.DataLoader(clusters(2048, 1), batch_size=BATCH, shuffle=True)
    val = torch.utils.data.DataLoader(clusters(256, 2), batch_size=128)
    trainer.fit(mlp(optimizer, lr), train, val)
    return trainer


def fails(report) -> set[str]:
    return {f.id for f in report.findings if f.level is Level.FAIL}


@pytest.mark.slow
@pytest.mark.parametrize(
    "optimizer, lr, schedule, scheduled, rule",
    [
        # SGD at lr 10 with no clipping: the loss is 31 at step 2, 1e26 at step 6, NaN from step 7.
        ("sgd", 10.0, {"max_steps": MAX_STEPS}, MAX_STEPS, "TP-NAN"),
        # Adam at lr 0: nothing moves. No max_steps: the schedule is 2 epochs of 64 batches.
        ("adam", 0.0, {"max_epochs": 2}, 2 * 2048 // BATCH, "TP-ZERO-LR"),
    ],
    ids=["lr_hot_nan", "lr_zero"],
)
def test_stop_on_fail_stops_a_broken_run(callback, capsys, optimizer, lr, schedule, scheduled, rule):
    cb = callback(policy="stop_on_fail", check_every=10)
    trainer = fit(cb, optimizer, lr, **schedule)
    err = capsys.readouterr().err
    stopped = trainer.global_step
    assert stopped <= 20 and cb.stopped_at == stopped
    assert rule in fails(cb.report)
    assert cb.report.meta["max_steps"] == scheduled
    left = scheduled - stopped
    assert (
        f"stopped Lightning training at step {stopped} of {scheduled} scheduled steps: "
        f"{left} scheduled steps ({100 * left / scheduled:.0f}%) never ran."
    ) in err
    assert f": {rule}: " in err


def test_healthy_run_finishes_silent(callback, capsys):
    cb = callback(policy="stop_on_fail", check_every=10)
    trainer = fit(cb, "adam", 3e-3)
    err = capsys.readouterr().err
    assert trainer.global_step == MAX_STEPS and cb.stopped_at is None
    assert not fails(cb.report), cb.report.ids()
    assert "trainproof" not in err
    assert cb.report.mapping["loss"]["source"] == "train_loss"
    assert cb.report.mapping["eval_loss"]["source"] == "val_loss"
    series = cb.live.guardian.runlog().series
    # One record per optimizer step; the validation loss only where validation ran (not
    # repeated from callback_metrics at every step, not the sanity check).
    assert list(series["loss"].steps) == list(range(1, MAX_STEPS + 1))
    assert list(series["eval_loss"].steps) == [50, 100, 150]
    assert series["lr"].values[0] == 3e-3


def test_a_missing_lightning_names_the_extra():
    p = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.modules['lightning'] = None\n"
            "from trainproof.integrations.lightning import TrainproofCallback",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode != 0
    assert "ImportError: trainproof's lightning callback needs lightning" in p.stderr
    assert 'pip install "trainproof[lightning]"' in p.stderr
