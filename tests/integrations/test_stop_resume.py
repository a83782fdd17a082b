"""Where to resume after a stop, and save_on_stop, in the HF Trainer and Lightning callbacks
(issue 34, section 3): real tiny runs on CPU that diverge after saving a few checkpoints."""

from __future__ import annotations

import logging
import os
import re

import pytest

# Lightning's own use of torch's pytree API.
pytestmark = pytest.mark.filterwarnings("ignore:`isinstance\\(treespec, LeafSpec\\)` is deprecated")


@pytest.fixture(autouse=True)
def every_check_judged(monkeypatch, torch_one_thread):
    """A judgement at every check point, and torch on one thread: the wall-time ration
    (``Guardian.affordable``) would otherwise skip checks on a loaded machine, and the
    thread count left by earlier tests in the process would change the float sums of these
    runs at lr 5 and 10; either moves the onset, the last good step and the checkpoint
    named."""
    from trainproof.live.guardian import Guardian

    monkeypatch.setattr(Guardian, "affordable", lambda self, now=None: True)


def last_good(err: str) -> int:
    m = re.search(r"Last good step: (\d+)\.", err)
    assert m, err
    return int(m.group(1))


@pytest.mark.slow
def test_hf_stop_names_the_checkpoint_to_resume_from_and_save_on_stop_saves(tmp_path, capsys):
    """Adam warming up to lr 1.0 over 40 steps with no clipping, on one torch thread: the
    loss diverges after step 35 and the run is stopped at a logging step (every 5) a few
    logs later. Checkpoints every 13 steps, a cadence the logging steps meet only at 65
    (where the stop lands varies with the installed transformers and torch: 45-60 seen), so
    the checkpoint at the stop is save_on_stop's own."""
    pytest.importorskip("torch")
    pytest.importorskip("accelerate")
    transformers = pytest.importorskip("transformers")
    from _hf_runs import random_tokens
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    from trainproof.integrations.hf import TrainproofCallback

    transformers.set_seed(0)
    model = GPT2LMHeadModel(
        GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=64, n_positions=32, bos_token_id=0, eos_token_id=0)
    )
    cb = TrainproofCallback(policy="stop_on_fail", save_on_stop=True)
    args = TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=120,
        logging_steps=5,
        logging_first_step=True,
        report_to=[],
        use_cpu=True,
        save_strategy="steps",
        save_steps=13,
        learning_rate=1.0,
        warmup_steps=40,
        lr_scheduler_type="constant_with_warmup",
        max_grad_norm=0.0,
        per_device_train_batch_size=8,
        disable_tqdm=True,
        seed=0,
    )
    trainer = Trainer(model=model, args=args, train_dataset=random_tokens(), callbacks=[cb])
    trainer.train()
    err = capsys.readouterr().err
    stopped = int(cb.stopped_at)
    assert trainer.state.global_step == stopped < 120
    good = last_good(err)
    assert good < stopped
    saved = sorted(int(n.split("-")[1]) for n in os.listdir(tmp_path) if n.startswith("checkpoint-"))
    newest = max(n for n in saved if n <= good)
    # the rule's first remedy, with the checkpoint's name in its place
    assert (
        f"Resume from {os.path.join(str(tmp_path), f'checkpoint-{newest}')} with a lower peak learning rate" in err
    ), err
    # save_on_stop: the Trainer saved at the stop too (not a multiple of save_steps here)
    assert stopped % 13 != 0 and stopped in saved, (stopped, saved)
    assert f"save_on_stop: the Trainer saves checkpoint-{stopped}" in err


@pytest.mark.slow
def test_lightning_stop_names_the_modelcheckpoint_file_and_save_on_stop_saves(tmp_path, capsys):
    """SGD at lr 10 with no clipping: NaN from step 7. ModelCheckpoint every 5 steps."""
    torch = pytest.importorskip("torch")
    pl = pytest.importorskip("lightning.pytorch")
    from _lightning_runs import clusters, mlp
    from lightning.pytorch.callbacks import ModelCheckpoint

    from trainproof.integrations.lightning import TrainproofCallback

    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    pl.seed_everything(0, verbose=False)
    cb = TrainproofCallback(policy="stop_on_fail", check_every=5, save_on_stop=True)
    ck = ModelCheckpoint(dirpath=tmp_path, every_n_train_steps=5, save_top_k=-1)
    trainer = pl.Trainer(
        accelerator="cpu",
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[cb, ck],
        max_steps=150,
        val_check_interval=50,
        check_val_every_n_epoch=None,
    )
    train = torch.utils.data.DataLoader(clusters(2048, 1), batch_size=32, shuffle=True)
    val = torch.utils.data.DataLoader(clusters(256, 2), batch_size=128)
    trainer.fit(mlp("sgd", 10.0), train, val)
    err = capsys.readouterr().err
    stopped = int(cb.stopped_at)
    assert stopped < 150
    good = last_good(err)
    steps = {int(m.group(1)): n for n in os.listdir(tmp_path) if (m := re.search(r"-step=(\d+)\.ckpt$", n))}
    newest = max(s for s in steps if s <= good)
    assert f"Newest checkpoint at or before it: {tmp_path / steps[newest]} (step {newest})." in err, err
    # the weights are NaN at the stop: a checkpoint of them could not be resumed from
    assert cb.saved_path is None and not (tmp_path / f"trainproof-stop-step={stopped}.ckpt").exists()
    assert "save_on_stop saved nothing: the model's weights hold NaN or Inf" in err


def test_lightning_save_on_stop_saves_a_checkpoint_of_finite_weights(tmp_path, capsys):
    """SGD at lr 0: TP-ZERO-LR stops the run with its weights as finite as at the start,
    and save_on_stop writes a checkpoint at the stop."""
    torch = pytest.importorskip("torch")
    pl = pytest.importorskip("lightning.pytorch")
    from _lightning_runs import clusters, mlp

    from trainproof.integrations.lightning import TrainproofCallback

    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    pl.seed_everything(0, verbose=False)
    cb = TrainproofCallback(policy="stop_on_fail", check_every=5, save_on_stop=True)
    trainer = pl.Trainer(
        accelerator="cpu",
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[cb],
        max_steps=150,
        default_root_dir=tmp_path,
    )
    train = torch.utils.data.DataLoader(clusters(2048, 1), batch_size=32, shuffle=True)
    trainer.fit(mlp("sgd", 0.0), train)
    err = capsys.readouterr().err
    stopped = int(cb.stopped_at)
    assert stopped < 150 and cb.saved_path is not None, err
    assert os.path.exists(cb.saved_path) and f"save_on_stop saved {cb.saved_path}." in err
    assert torch.load(cb.saved_path, map_location="cpu", weights_only=False)["global_step"] == stopped
