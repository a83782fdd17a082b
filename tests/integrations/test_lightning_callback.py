"""The Lightning callback on real tiny MLP runs (CPU, a few seconds each)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from _lightning_runs import BATCH, MAX_STEPS, clusters, fit, mlp, quiet_trainer  # noqa: F401

from trainproof import Level

from conftest import one

# Lightning's own use of torch's pytree API.
pytestmark = pytest.mark.filterwarnings("ignore:`isinstance\\(treespec, LeafSpec\\)` is deprecated")


@pytest.fixture(scope="module")
def callback():
    """The callback class; skips unless torch and lightning are installed."""
    pytest.importorskip("torch")
    pytest.importorskip("lightning.pytorch")
    from trainproof.integrations.lightning import TrainproofCallback

    return TrainproofCallback


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


@pytest.mark.slow
def test_healthy_run_finishes_silent(callback, capsys, tmp_path):
    cb = callback(policy="stop_on_fail", history=str(tmp_path / "history.db"), experiment="cb", check_every=10)
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

    # With a history, the ended run is recorded there once, as judged.
    from trainproof.history.recording import forget
    from trainproof.history.store import open_store

    forget(str(tmp_path / "history.db"))
    with open_store(str(tmp_path / "history.db"), create=False) as st:
        (rec,) = st.runs("cb")
    assert rec.verdict == cb.report.verdict.value and rec.source.startswith("live:")
    assert rec.summary["points"] == len(series["loss"])


@pytest.mark.slow
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


@pytest.mark.slow
def test_the_model_is_measured_every_check_every_optimizer_steps(callback):
    cb = callback(check_every=10, activations=True)
    trainer = fit(cb, "adam", 3e-3, max_steps=40)
    series = cb.live.guardian.runlog().series
    for key in ("model/params_outside_optimizer", "model/params_not_updated", "model/grads_not_reset"):
        assert list(series[key].steps) == [10, 20, 30, 40], key
        assert set(series[key].values) == {0.0}, key
    assert list(series["model/optimizer_steps"].values) == [10.0, 20.0, 30.0, 40.0]
    assert all(-6 < v < 0 for v in series["model/layer_update_ratio_max"].values)
    assert all(0 <= v < 0.5 for v in series["model/dead_relu_share"].values)
    assert cb.live.guardian.meta["model_probe"]["step"] == 40
    # every hook is gone after training
    module = trainer.lightning_module
    assert not any(m._forward_hooks for m in module.modules())
    assert not trainer.optimizers[0]._optimizer_step_post_hooks


@pytest.mark.slow
def test_with_a_history_a_run_far_behind_its_siblings_is_warned_while_it_trains(callback, capsys, tmp_path):
    history = str(tmp_path / "history.db")
    for _ in range(3):  # the experiment's healthy runs, recorded by the callback itself
        cb = callback(check_every=10, history=history, experiment="mlp")
        fit(cb, "adam", 3e-3)
        assert cb.report.verdict is not Level.FAIL and "TP-BEHIND-ENVELOPE" not in cb.report.ids()
    capsys.readouterr()
    cb = callback(check_every=10, history=history, experiment="mlp")
    fit(cb, "adam", 3e-3)  # one more healthy run: silent against the three
    assert "TP-BEHIND-ENVELOPE" not in capsys.readouterr().err and "TP-HISTORY-PASS" in cb.report.ids()
    cb = callback(check_every=10, history=history, experiment="mlp")
    trainer = fit(cb, "sgd", 1e-4)  # a learning rate far below the usual: it barely learns
    err = capsys.readouterr().err
    assert trainer.global_step == MAX_STEPS and cb.stopped_at is None  # a WARN never stops it
    assert "TP-BEHIND-ENVELOPE" in err and "margin" in err
    assert one(cb.report, "TP-BEHIND-HISTORY").level is Level.WARN  # a WARN: the past may hold deliberate changes


def _two_optimizer_module(nan_from: int | None):
    """Manual optimization with two optimizers (the body's and the head's), each stepped at
    every batch; the loss is NaN from batch ``nan_from`` on."""
    import lightning.pytorch as pl
    import torch
    from torch import nn

    class TwoOptimizers(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.automatic_optimization = False
            self.body = nn.Sequential(nn.Linear(16, 64), nn.ReLU())
            self.head = nn.Linear(64, 4)
            self.batches = 0

        def training_step(self, batch, batch_idx):
            x, y = batch
            body, head = self.optimizers()
            loss = nn.functional.cross_entropy(self.head(self.body(x)), y)
            if nan_from is not None and self.batches >= nan_from:
                loss = loss * float("nan")
            self.batches += 1
            body.zero_grad()
            head.zero_grad()
            self.manual_backward(loss)
            body.step()
            head.step()
            self.log("train_loss", loss)

        def configure_optimizers(self):
            return [torch.optim.Adam(self.body.parameters(), 1e-3), torch.optim.Adam(self.head.parameters(), 1e-3)]

    return TwoOptimizers()


@pytest.mark.slow
@pytest.mark.parametrize("nan_from", [None, 100])
def test_two_optimizers_under_manual_optimization_count_batches_and_both_param_sets(
    callback, capsys, nan_from, judging_always_affordable
):
    # Lightning's global_step counts both optimizers' steps (two a batch); its loggers write
    # the batch count, and the head's parameters are in the second optimizer, not outside.
    import torch

    cb = callback(policy="stop_on_fail", check_every=10)
    trainer = quiet_trainer(cb, max_epochs=3)
    trainer.fit(_two_optimizer_module(nan_from), torch.utils.data.DataLoader(clusters(2048, 1), batch_size=32))
    err = capsys.readouterr().err
    assert "TP-PARAMS-NOT-OPTIMIZED" not in err and "TP-PARAMS-NOT-OPTIMIZED" not in cb.report.ids()
    if nan_from is None:
        assert cb.report.verdict is Level.PASS and cb.report.step_range[1] == 3 * 2048 // 32
        return
    f = one(cb.report, "TP-NAN")
    assert f.step == nan_from + 1 and cb.stopped_at <= nan_from + 11
    assert f"of {3 * 2048 // 32} scheduled steps" in err


def scheduled_mlp(manual: bool):
    """A LightningModule (:func:`_lightning_runs.mlp`'s MLP, Adam) with a StepLR configured
    ``interval="epoch"`` (Lightning's default). With ``manual``, under manual optimization
    that never calls the scheduler's ``step()`` (the bug); else Lightning steps it at the
    end of each epoch."""
    import lightning.pytorch as pl
    import torch
    from torch import nn

    class Scheduled(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.automatic_optimization = not manual
            self.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = nn.functional.cross_entropy(self.net(x), y)
            self.log("train_loss", loss)
            if manual:
                opt = self.optimizers()
                opt.zero_grad()
                self.manual_backward(loss)
                opt.step()
                return None
            return loss

        def configure_optimizers(self):
            opt = torch.optim.Adam(self.parameters(), lr=3e-3)
            sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "epoch"}}

    return Scheduled()


@pytest.mark.slow
@pytest.mark.parametrize("manual", [False, True], ids=["stepped_per_epoch", "never_stepped"])
def test_an_epoch_scheduler_is_stuck_only_after_a_whole_epoch_without_its_step(callback, manual):
    # Epochs of 64 batches, longer than the steps the rule waits for here (20): the
    # scheduler that Lightning steps once an epoch is not stuck inside an epoch, live or in
    # the final report; one never stepped is, once a whole epoch has passed.
    import dataclasses

    import torch

    from trainproof.rules.thresholds import DEFAULT

    alerts = []
    th = dataclasses.replace(DEFAULT, scheduler_stuck_steps=20)
    cb = callback(check_every=10, thresholds=th, on_alert=lambda f: alerts.append((f.id, f.data.get("last_step"))))
    trainer = quiet_trainer(cb, max_epochs=3)
    train = torch.utils.data.DataLoader(clusters(2048, 1), batch_size=BATCH, shuffle=True)
    trainer.fit(scheduled_mlp(manual), train)
    series = cb.live.guardian.runlog().series
    stuck = [step for rid, step in alerts if rid == "TP-SCHEDULER-STUCK"]
    if manual:
        assert set(series["model/scheduler_steps"].values) == {0.0}
        # the window opens at the first check (step 10): a whole epoch later is step 74
        assert stuck and stuck[0] >= 74 and "TP-SCHEDULER-STUCK" in cb.report.ids()
        assert one(cb.report, "TP-SCHEDULER-STUCK").data["epochs"] >= 1
    else:
        assert list(series["model/scheduler_steps"].values)[-1] == 2.0
        assert not stuck and "TP-SCHEDULER-STUCK" not in cb.report.ids()
    assert series["epoch"].values[-1] == pytest.approx(3.0) and series["epoch"].values[0] == pytest.approx(1 / 64)
