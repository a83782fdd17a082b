"""The HF Trainer callback on real tiny GPT-2 runs (CPU, a few seconds each)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from _hf_runs import random_tokens  # noqa: F401

from trainproof import Level

MAX_STEPS = 120
FRAMEWORKS = ("torch", "transformers", "accelerate", "lightning", "pytorch_lightning", "keras", "tensorflow")


@pytest.fixture(scope="module")
def hf():
    """The callback class; skips unless torch, transformers and accelerate (which the
    Trainer needs) are installed."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    from trainproof.integrations.hf import TrainproofCallback

    return TrainproofCallback


def train(tmp_path, cb, lr: float, max_grad_norm: float = 1.0, eval_steps: int | None = None):
    import transformers
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    transformers.set_seed(0)
    model = GPT2LMHeadModel(
        GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=64, n_positions=32, bos_token_id=0, eos_token_id=0)
    )
    # logging_first_step: the divergence rules compare the run with its starting level;
    # without it the first record is already the mean of steps 1-5, after the blow-up.
    args = TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=MAX_STEPS,
        logging_steps=5,
        logging_first_step=True,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        learning_rate=lr,
        max_grad_norm=max_grad_norm,
        per_device_train_batch_size=8,
        disable_tqdm=True,
        seed=0,
        eval_strategy="steps" if eval_steps else "no",
        eval_steps=eval_steps,
    )
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=random_tokens(),
        eval_dataset=random_tokens(8, seed=1) if eval_steps else None,
        callbacks=[cb],
    )
    trainer.train()
    return trainer


def fails(report) -> set[str]:
    return {f.id for f in report.findings if f.level is Level.FAIL}


# Adam at lr 5.0 with no clipping: the loss jumps from ~3.9 at step 1 to hundreds by
# step 5 and never comes back (a real divergence, not NaN).
DIVERGE = {"lr": 5.0, "max_grad_norm": 0.0}


@pytest.mark.slow
def test_stop_on_fail_stops_a_diverging_run(hf, tmp_path, capsys, monkeypatch):
    from trainproof.live.guardian import Guardian

    # judge at every log whatever a judgement costs in wall time: on a loaded CI machine
    # the wall-time budget spaced the judgements out, and the stop came after step 60
    monkeypatch.setattr(Guardian, "affordable", lambda self, now=None: True)
    cb = hf(policy="stop_on_fail")
    trainer = train(tmp_path, cb, **DIVERGE)
    err = capsys.readouterr().err
    stopped = trainer.state.global_step
    assert stopped < MAX_STEPS / 2
    assert cb.stopped_at == stopped
    assert "TP-DIVERGE" in fails(cb.report) and cb.report.verdict is Level.FAIL
    assert cb.report.meta["max_steps"] == MAX_STEPS
    left = MAX_STEPS - stopped
    assert (
        f"stopped HF Trainer training at step {stopped} of {MAX_STEPS} scheduled steps: "
        f"{left} scheduled steps ({100 * left / MAX_STEPS:.0f}%) never ran."
    ) in err
    assert f"trainproof: FAIL at step {stopped}: TP-DIVERGE:" in err


@pytest.mark.slow
def test_warn_runs_to_the_end_and_reports_fail(hf, tmp_path, capsys):
    alerts = []
    cb = hf(policy="warn", on_alert=alerts.append)
    trainer = train(tmp_path, cb, **DIVERGE)
    err = capsys.readouterr().err
    assert trainer.state.global_step == MAX_STEPS
    assert cb.stopped_at is None and "stopped" not in err
    assert "TP-DIVERGE" in fails(cb.report)
    assert cb.report.step_range[1] == MAX_STEPS
    assert "TP-DIVERGE" in {f.id for f in alerts}
    assert err.count(": TP-DIVERGE:") == 1  # announced once, not at every judgement
    assert "the run ended with a FAIL verdict. FAIL from step" in err


@pytest.mark.slow
def test_healthy_run_is_silent_and_records_every_logged_key(hf, tmp_path, capsys):
    cb = hf(policy="stop_on_fail", history=str(tmp_path / "history.db"), experiment="cb")
    trainer = train(tmp_path, cb, lr=1e-3, eval_steps=40)
    err = capsys.readouterr().err
    assert trainer.state.global_step == MAX_STEPS
    assert cb.stopped_at is None
    assert not fails(cb.report), cb.report.ids()
    assert "trainproof" not in err
    series = cb.live.guardian.runlog().series
    assert {"loss", "lr", "grad_norm", "epoch", "eval_loss"} <= set(series)
    assert list(series["eval_loss"].steps) == [40, 80, 120]
    assert "eval_runtime" in series  # every numeric key is kept under its own name
    # The end-of-training summary is not a point of the run.
    assert "train_runtime" not in series and "train_loss" not in series
    assert series["loss"].steps[0] == 1 and series["loss"].steps[-1] == MAX_STEPS

    # With a history, the ended run is recorded there once, as judged.
    from trainproof.history.recording import forget
    from trainproof.history.store import open_store

    forget(str(tmp_path / "history.db"))
    with open_store(str(tmp_path / "history.db"), create=False) as st:
        (rec,) = st.runs("cb")
    assert rec.verdict == cb.report.verdict.value and rec.source.startswith("live:")
    assert rec.summary["points"] == len(series["loss"])


@pytest.mark.slow
def test_policy_is_checked(hf):
    with pytest.raises(ValueError, match="policy"):
        hf(policy="raise")


def python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_importing_trainproof_and_its_integrations_imports_no_framework():
    p = python(
        "import sys, trainproof, trainproof.integrations, trainproof.integrations._common\n"
        f"print(sorted(m for m in {FRAMEWORKS!r} if m in sys.modules))"
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


@pytest.mark.slow
def test_a_missing_transformers_names_the_extra():
    p = python(
        "import sys; sys.modules['transformers'] = None\nfrom trainproof.integrations.hf import TrainproofCallback"
    )
    assert p.returncode != 0
    assert "ImportError: trainproof's hf callback needs transformers" in p.stderr
    assert 'pip install "trainproof[hf]"' in p.stderr


def logged_nan_grad(cb, world_zero: bool) -> None:
    """Feed ``cb`` what the Trainer logs for a run whose gradient norm turns NaN at step 21
    (the loss still falling), as process zero or as another process."""
    from transformers import TrainerControl, TrainerState

    state = TrainerState(max_steps=40, is_world_process_zero=world_zero)
    control = TrainerControl()
    cb.on_train_begin(None, state, control)
    for i in range(1, 41):
        state.global_step = i
        cb.on_log(None, state, control, logs={"loss": 3.0 - 0.01 * i, "grad_norm": float("nan") if i > 20 else 1.0})
        if control.should_training_stop:
            break
    cb.on_train_end(None, state, control)


@pytest.mark.slow
@pytest.mark.parametrize("world_zero", [True, False], ids=["process_zero", "other_process"])
def test_a_gradient_norm_finding_says_the_trainer_reported_the_norm(hf, capsys, monkeypatch, world_zero):
    from trainproof.live.guardian import Guardian

    # judge at every log, whatever the first judgement cost in wall time
    monkeypatch.setattr(Guardian, "affordable", lambda self, now=None: True)
    alerts = []
    cb = hf(policy="stop_on_fail", on_alert=alerts.append)
    logged_nan_grad(cb, world_zero)
    err = capsys.readouterr().err
    assert cb.stopped_at == 23 and "TP-NAN-GRAD" in fails(cb.report)
    if not world_zero:  # another process stops as well, in silence
        assert err == "" and alerts == []
        return
    note = "(gradient norm as reported by the HF Trainer)"
    grad = next(f for f in alerts if f.id == "TP-NAN-GRAD")
    assert grad.evidence.endswith(" " + note)
    assert f"lasts 3 points, every later entry is non-finite. {note}" in err


@pytest.mark.slow
def test_the_model_is_measured_at_each_logged_step(hf, tmp_path):
    cb = hf()
    trainer = train(tmp_path, cb, lr=5e-4)
    series = cb.live.guardian.runlog().series
    logged = [1, *range(5, MAX_STEPS + 1, 5)]
    for key in ("model/params_outside_optimizer", "model/params_frozen_in_optimizer", "model/grad_nonfinite_params"):
        assert list(series[key].steps) == logged, key
        assert set(series[key].values) == {0.0}, key
    # the update and the gradient reset need the steps before: from the second log on
    assert list(series["model/grads_not_reset"].steps) == logged[1:]
    assert set(series["model/grads_not_reset"].values) == {0.0}
    assert all(-8 < v < 0 for v in series["model/layer_update_ratio_max"].values)
    assert list(series["model/scheduler_steps"].values)[-1] == MAX_STEPS - 1
    assert cb.live.guardian.meta["model_probe"]["step"] == MAX_STEPS
    assert not any(m._forward_hooks for m in trainer.model.modules())
