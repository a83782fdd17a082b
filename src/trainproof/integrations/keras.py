"""trainproof for Keras 3 (``model.fit``).

    from trainproof.integrations.keras import TrainproofCallback

    cb = TrainproofCallback(policy="stop_on_fail")
    model.fit(x, y, epochs=20, validation_split=0.1, callbacks=[cb])
    cb.report.verdict

After each batch the callback records Keras' batch ``logs`` and the optimizer's learning
rate as ``lr``, at a running batch count (1, 2, … across epochs). Keras logs running means
over the epoch so far, which restart at every epoch: read as a curve, that saw-tooth looks
like a loss that jumps at each epoch boundary. So the losses (``loss``, ``*_loss``) are
turned back into the mean over the batches since the previous call, ``(n·m_n − k·m_k) /
(n − k)`` for the running means after ``k`` and ``n`` batches (exact for batches of equal
size; the last, smaller batch of an epoch is read with the others' weight). The other
metrics are kept as Keras logs them (not every metric is a mean). At the end of each epoch
the validation metrics (``val_*``) are recorded; ``val_loss`` is read as the eval loss. The
scheduled end is ``epochs`` times the steps per epoch, when Keras knows them.

Importing this module imports keras (the ``[keras]`` extra runs it on the torch backend:
set ``KERAS_BACKEND=torch`` before keras is first imported); ``import trainproof`` does not.

Keras 3 trains in one process on the torch backend (its distribution API is for JAX), so
there is no Keras rank to ask. When a launcher runs one Keras process per rank anyway, the
callback reads the rank from :func:`trainproof.live.distributed.rank` (the default torch
process group, else the ``RANK`` variable): only rank 0 prints and calls ``on_alert``.
If a torch process group of more than one process is initialised, the processes agree at
each check point as the other callbacks' do, which needs every process to run the same
number of batches.

Keras hands this callback its batch logs as Python numbers. A callback with its own
``on_train_batch_end`` makes Keras convert them on the training thread after every batch
(without one, the torch and JAX backends convert them in a worker thread), which on a GPU
is a wait for the device per batch; the per-batch losses this callback judges need it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..aliases.vocabulary import is_eval_key
from ..findings import Finding, Report
from ..live import distributed
from ..live.guardian import number
from ..rules.thresholds import DEFAULT, Thresholds
from ._common import NONFINITE_NOT_SAVED, LiveRun, missing

try:
    import keras
except ImportError as _e:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        missing("keras", "keras", _e) + " (with the torch backend, set KERAS_BACKEND=torch before importing keras)"
    ) from _e

__all__ = ["TrainproofCallback"]


class TrainproofCallback(keras.callbacks.Callback):
    """Judges a Keras ``fit`` from its logs while it trains.

    Args:
        policy: ``"warn"`` (default) prints each new WARN or FAIL finding once and never
            interrupts; ``"stop_on_fail"`` also sets ``model.stop_training`` at the first
            FAIL and prints the step it stopped at and the share of the scheduled steps
            that never ran.
        check_every: judge every this many records (one per batch, one per epoch with
            validation), and at the end of training.
        mute: rule ids not to run.
        on_alert: called once per new WARN or FAIL finding id, with the finding.
        thresholds: rule thresholds.
        stop_on: rule ids on which to stop training whatever the policy (a WARN you care
            about, such as ``{"TP-OVERFIT"}``, as ``keras.callbacks.EarlyStopping`` stops),
            once the finding has been present ``patience`` checks in a row.
        patience: checks in a row a ``stop_on`` finding must be present (at least 1).
        history: a run history (an SQLite file or a ``postgresql://`` URL, see
            :mod:`trainproof.history`): at the end of training the run is judged against
            its experiment's recent healthy runs there and recorded; ``None`` (default):
            nothing is read or written.
        experiment: the experiment the run is recorded under (default: the current folder).
        save_on_stop: a file path (``.keras``): at a stop, ``model.save`` writes the model
            there; ``None`` saves nothing.

    A claim that the loss made no progress (TP-DEAD-RUN, TP-FLAT, TP-CHANCE-LEVEL…) stops
    the run only with a measured cause in the history (a learning rate about zero, a
    collapsed gradient norm when one is logged); without one it is printed as a WARN that
    says so and training goes on. A stop's message names the findings, the last good
    batch count before their onset and the rule's first remedy.

    Attributes:
        report: the latest :class:`~trainproof.findings.Report` (the final one after
            training ends), or ``None`` before the first judgement.
        stopped_at: the batch count a ``stop_on_fail`` stop happened at, else ``None``.
    """

    def __init__(
        self,
        policy: str = "warn",
        check_every: int = 50,
        mute: Iterable[str] = (),
        on_alert: Callable[[Finding], None] | None = None,
        thresholds: Thresholds = DEFAULT,
        stop_on: Iterable[str] = (),
        patience: int = 1,
        save_on_stop: str | None = None,
        history: str | None = None,
        experiment: str | None = None,
    ) -> None:
        super().__init__()
        self.live = LiveRun(
            "Keras",
            policy,
            check_every,
            mute,
            on_alert,
            thresholds,
            stop_on=stop_on,
            patience=patience,
            history=history,
            experiment=experiment,
        )
        self.save_on_stop = None if save_on_stop is None else str(save_on_stop)
        self.batches = 0
        self._means: dict[str, tuple[int, float]] = {}

    @property
    def report(self) -> Report | None:
        return self.live.report

    @property
    def stopped_at(self) -> float | None:
        return self.live.stopped_at

    def on_train_begin(self, logs=None) -> None:
        params = self.params or {}
        epochs, steps = params.get("epochs"), params.get("steps")
        end = epochs * steps if isinstance(epochs, int) and isinstance(steps, int) else None
        self.live.start(max_steps=end, quiet=not distributed.is_main())
        self.live.save = self._save if self.save_on_stop else None
        self.batches = 0
        self._means: dict[str, tuple[int, float]] = {}

    def _save(self, step) -> str:
        """Save the model at the stop, unless a trainable weight is NaN or Inf (a file to
        resume from that cannot be resumed from; a non-trainable one, a causal mask of
        -inf, is the model's design); returns what the stop's message says of it."""
        import keras
        import numpy as np

        if not all(np.all(np.isfinite(keras.ops.convert_to_numpy(w))) for w in self.model.trainable_weights):
            return NONFINITE_NOT_SAVED
        self.model.save(self.save_on_stop)
        return f"save_on_stop saved {self.save_on_stop}."

    def on_epoch_begin(self, epoch, logs=None) -> None:
        self._means = {}  # Keras restarts its running means here

    def _lr(self) -> float | None:
        opt = getattr(self.model, "optimizer", None)
        try:
            lr = opt.learning_rate  # a keras Variable, or a tensor from a schedule
            return number(getattr(lr, "value", lr))
        except Exception:  # noqa: BLE001 - the learning rate is optional context
            return None

    def _per_batch(self, batch: int, values: dict) -> dict:
        """The losses of the batches since the previous call, from Keras' running means.
        ``batch`` is the index of the last batch of this call within the epoch (more than
        one batch per call with ``steps_per_execution``)."""
        out = dict(values)
        n = int(batch) + 1
        for k, v in values.items():
            if k != "loss" and not k.endswith("_loss"):
                continue
            m = number(v)
            if m is None:
                continue
            k0, m0 = self._means.get(k, (0, 0.0))
            self._means[k] = (n, m)
            if n > k0:
                out[k] = (n * m - k0 * m0) / (n - k0) if k0 else m
        return out

    def on_train_batch_end(self, batch, logs=None) -> None:
        self.batches += 1
        values = self._per_batch(batch, {k: v for k, v in (logs or {}).items() if not is_eval_key(k)})
        lr = self._lr()
        if lr is not None and "lr" not in values and "learning_rate" not in values:
            values["lr"] = lr
        self._record(values)

    def on_epoch_end(self, epoch, logs=None) -> None:
        self._record({k: v for k, v in (logs or {}).items() if is_eval_key(k)})

    def _record(self, values: dict) -> None:
        if self.live.record(self.batches, values):
            self.model.stop_training = True

    def on_train_end(self, logs=None) -> None:
        self.live.finish()
