"""The Keras 3 callback on real tiny Sequential runs (torch backend, CPU, seconds each)."""

from __future__ import annotations

import os
import subprocess
import sys

os.environ["KERAS_BACKEND"] = "torch"  # before keras is first imported

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from trainproof import Level  # noqa: E402

EPOCHS = 5
BATCH = 32
N_TRAIN = 1024  # 32 batches of 32 per epoch: every batch the same size
STEPS = EPOCHS * N_TRAIN // BATCH

# Keras' own log conversion (pythonify_logs) on the torch backend, once per batch.
pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword")


@pytest.fixture(scope="module")
def callback():
    """The callback class; skips unless torch and keras are installed."""
    pytest.importorskip("torch")
    pytest.importorskip("keras")
    from trainproof.integrations.keras import TrainproofCallback

    return TrainproofCallback


def clusters(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` samples of 16 features around 4 fixed class centres."""
    centres = np.random.default_rng(0).standard_normal((4, 16)) * 1.2
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n)
    return (centres[y] + 1.5 * rng.standard_normal((n, 16))).astype("float32"), y


def fit(cb, optimizer: str, lr: float):
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((16,)),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(4),
        ]
    )
    opt = keras.optimizers.SGD(lr) if optimizer == "sgd" else keras.optimizers.Adam(lr)
    model.compile(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = clusters(N_TRAIN, 1)
    return model.fit(
        x, y, batch_size=BATCH, epochs=EPOCHS, validation_data=clusters(256, 2), callbacks=[cb], verbose=0, shuffle=True
    )


def fails(report) -> set[str]:
    return {f.id for f in report.findings if f.level is Level.FAIL}


@pytest.mark.slow
@pytest.mark.parametrize(
    "optimizer, lr, rule",
    [
        # SGD at lr 10: the loss is 33 at batch 2, 1e27 at batch 6, NaN from batch 7.
        ("sgd", 10.0, "TP-NAN"),
        ("adam", 0.0, "TP-ZERO-LR"),
    ],
    ids=["lr_hot_nan", "lr_zero"],
)
def test_stop_on_fail_stops_a_broken_run(callback, capsys, optimizer, lr, rule):
    cb = callback(policy="stop_on_fail", check_every=10)
    history = fit(cb, optimizer, lr)
    err = capsys.readouterr().err
    assert len(history.history["loss"]) < EPOCHS
    assert cb.batches == cb.stopped_at == 10
    assert rule in fails(cb.report)
    assert cb.report.meta["max_steps"] == STEPS
    left = STEPS - 10
    assert (
        f"stopped Keras training at step 10 of {STEPS} scheduled steps: {left} scheduled steps "
        f"({100 * left / STEPS:.0f}%) never ran."
    ) in err
    assert f": {rule}: " in err


@pytest.mark.slow
def test_healthy_run_finishes_silent(callback, capsys, tmp_path):
    cb = callback(policy="stop_on_fail", history=str(tmp_path / "history.db"), experiment="cb", check_every=10)
    history = fit(cb, "adam", 3e-3)
    err = capsys.readouterr().err
    assert len(history.history["loss"]) == EPOCHS and cb.batches == STEPS
    assert cb.stopped_at is None and not fails(cb.report), cb.report.ids()
    assert "trainproof" not in err
    series = cb.live.guardian.runlog().series
    per_epoch = N_TRAIN // BATCH
    assert list(series["eval_loss"].steps) == [per_epoch * (e + 1) for e in range(EPOCHS)]
    assert series["eval_loss"].values == pytest.approx(history.history["val_loss"])
    assert series["lr"].values[0] == pytest.approx(3e-3)
    # The recorded losses are per batch, not Keras' running means: each epoch's batch
    # losses average to the loss Keras reports for that epoch.
    loss = series["loss"].values.reshape(EPOCHS, per_epoch)
    assert loss.mean(axis=1) == pytest.approx(history.history["loss"], rel=1e-4)
    assert np.all(loss.std(axis=1) > 0)

    # With a history, the ended run is recorded there once, as judged.
    from trainproof.history.recording import forget
    from trainproof.history.store import open_store

    forget(str(tmp_path / "history.db"))
    with open_store(str(tmp_path / "history.db"), create=False) as st:
        (rec,) = st.runs("cb")
    assert rec.verdict == cb.report.verdict.value and rec.source.startswith("live:")
    assert rec.summary["points"] == len(series["loss"])


@pytest.mark.slow
def test_running_means_are_turned_back_into_batch_losses(callback):
    cb = callback()
    cb.on_epoch_begin(0)
    losses = [4.0, 2.0, 3.0, 1.0, 5.0]
    got = []
    for i in range(len(losses)):
        mean = sum(losses[: i + 1]) / (i + 1)
        got.append(cb._per_batch(i, {"loss": mean, "accuracy": 0.5})["loss"])
    assert got == pytest.approx(losses)
    # steps_per_execution=2: each call covers two batches and gets their mean
    cb.on_epoch_begin(1)
    got = [cb._per_batch(i, {"loss": sum(losses[: i + 1]) / (i + 1)})["loss"] for i in (1, 3)]
    assert got == pytest.approx([3.0, 2.0])
    # a new epoch restarts the running means
    cb.on_epoch_begin(2)
    assert cb._per_batch(0, {"loss": 7.0}) == {"loss": 7.0}


@pytest.mark.slow
def test_a_missing_keras_names_the_extra():
    p = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.modules['keras'] = None\nfrom trainproof.integrations.keras import TrainproofCallback",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode != 0
    assert "ImportError: trainproof's keras callback needs keras" in p.stderr
    assert 'pip install "trainproof[keras]"' in p.stderr


@pytest.mark.slow
def test_a_process_other_than_rank_zero_stops_in_silence(callback, capsys, monkeypatch):
    # Keras 3 does not train in several processes on the torch backend; when a launcher
    # runs one Keras process per rank anyway, its RANK says which one prints and alerts.
    monkeypatch.setenv("RANK", "1")
    alerts = []
    cb = callback(policy="stop_on_fail", check_every=10, on_alert=alerts.append)
    fit(cb, "sgd", 10.0)
    assert cb.stopped_at == 10 and "TP-NAN" in fails(cb.report)
    assert "trainproof" not in capsys.readouterr().err and alerts == []


@pytest.mark.slow
def test_stop_on_stops_a_warn_run_and_save_on_stop_saves_the_model(callback, capsys, tmp_path):
    """policy "warn" alone never stops; ``stop_on={"TP-NAN"}`` stops it at the first check
    that finds the NaN, and ``save_on_stop`` writes the model there with ``model.save``."""
    path = tmp_path / "stopped.keras"
    cb = callback(policy="warn", check_every=10, stop_on={"TP-NAN"}, save_on_stop=str(path))
    history = fit(cb, "sgd", 10.0)
    err = capsys.readouterr().err
    assert len(history.history["loss"]) < EPOCHS
    assert cb.batches == cb.stopped_at == 10
    assert f"trainproof: stop_on stopped Keras training at step 10 of {STEPS} scheduled steps" in err
    assert "TP-NAN (FAIL, chosen in stop_on, found 1 check(s) in a row)" in err
    # SGD at lr 10 left the weights NaN: a checkpoint of them cannot be resumed from
    assert "save_on_stop saved nothing: the model's weights hold NaN or Inf" in err and not path.exists()


@pytest.mark.slow
def test_save_on_stop_saves_a_model_whose_weights_are_finite(callback, capsys, tmp_path):
    path = tmp_path / "stopped.keras"
    cb = callback(policy="warn", check_every=10, stop_on={"TP-ZERO-LR"}, save_on_stop=str(path))
    fit(cb, "sgd", 0.0)
    err = capsys.readouterr().err
    # lr 0: TP-ZERO-LR stops the run, its weights as finite as at the start
    assert cb.stopped_at is not None
    assert f"save_on_stop saved {path}." in err and path.is_file()


@pytest.mark.slow
def test_save_on_stop_saves_a_model_with_a_non_trainable_infinite_weight(callback, capsys, tmp_path):
    # a causal mask of -inf kept as a non-trainable weight is the model's design, not
    # weights gone bad: the stop (lr 0) saves the model
    import keras

    class Masked(keras.layers.Layer):
        def build(self, shape):
            self.mask = self.add_weight(shape=(1,), initializer=keras.initializers.Constant(-np.inf), trainable=False)

        def call(self, x):
            return x

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((16,)), Masked(), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(4)]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(0.0), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    path = tmp_path / "stopped.keras"
    cb = callback(policy="warn", check_every=10, stop_on={"TP-ZERO-LR"}, save_on_stop=str(path))
    x, y = clusters(N_TRAIN, 1)
    model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, callbacks=[cb], verbose=0)
    err = capsys.readouterr().err
    assert cb.stopped_at is not None
    assert f"save_on_stop saved {path}." in err and path.is_file()
