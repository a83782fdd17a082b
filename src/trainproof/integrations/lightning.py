"""trainproof for PyTorch Lightning (``lightning.pytorch``).

    from trainproof.integrations.lightning import TrainproofCallback

    cb = TrainproofCallback(policy="stop_on_fail")
    trainer = lightning.pytorch.Trainer(max_steps=10_000, callbacks=[cb])
    trainer.fit(model, train_loader, val_loader)
    cb.report.verdict

After each optimizer step the callback records what the module logged for that step
(``trainer.callback_metrics``: values logged with ``on_step=True``, the default in
``training_step``; epoch aggregates ``*_epoch`` and validation metrics are left out) and
the first optimizer's learning rate as ``lr``, at ``trainer.global_step`` (with several
optimizers, under manual optimization, at the batch count the trainer's loggers write:
``global_step`` then counts every optimizer's step). Where the first LR scheduler steps
once an epoch (``interval="epoch"``, Lightning's default), it records the epoch too, as a
fraction (``current_epoch`` plus the share of ``num_training_batches`` done), so that the
scheduler is judged stuck only after a whole epoch without its step. After each
validation run (not the sanity check) it records the validation metrics (``val_*``,
``*_val``, …) under their own names; ``val_loss`` is read as the eval loss. The scheduled
end is ``max_steps``, or the trainer's estimate from ``max_epochs``.

Under DDP (and the other multi-process strategies) every process runs the callback; only
the global-zero process prints and calls ``on_alert``. The processes agree at each check
point (every ``check_every`` records) whether to judge and whether any found a FAIL, so a
``stop_on_fail`` stop ends every process at the same step. Each process judges its own
logged values (the same across processes when logged with ``sync_dist=True``).

The logged values stay tensors until a check point reads them together: the callback
itself waits for the device once per check point, not at every step. What remains per
step is Lightning's: reading ``trainer.callback_metrics`` makes Lightning build its step
metrics, which reads the values logged with ``prog_bar=True`` as numbers (Lightning builds
them again after every batch anyway, so this adds no wait the run did not have); values
logged with ``sync_dist=True`` are all-reduced at every step; loggers get numbers every
``log_every_n_steps``.

Importing this module imports lightning; ``import trainproof`` does not.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable

from ..aliases.vocabulary import is_eval_key
from ..findings import Finding, Report
from ..rules.thresholds import DEFAULT, Thresholds
from ._common import NONFINITE_NOT_SAVED, LiveRun, missing

try:
    from lightning.pytorch import Callback
except ImportError as _e:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(missing("lightning", "lightning", _e)) from _e

__all__ = ["TrainproofCallback", "checkpoints"]

_STEP = re.compile(r"(?:^|[-_])step=(\d+)")


def _batch_step(trainer) -> int:
    """The step the trainer's loggers write: the batches that stepped an optimizer,
    counting the current one (``trainer.global_step`` with a single optimizer; under manual
    optimization with several, ``global_step`` counts every optimizer's step, two or more a
    batch, and would double the step and the scheduled end's share)."""
    loop = getattr(getattr(trainer, "fit_loop", None), "epoch_loop", None)
    done = getattr(loop, "_batches_that_stepped", None)
    return int(done) + 1 if isinstance(done, int) and len(trainer.optimizers) > 1 else int(trainer.global_step)


def _epoch_batches(trainer) -> float | None:
    """The training batches of the current epoch (``trainer.num_training_batches``, after
    ``limit_train_batches``), or ``None`` where the epoch's length is not known (an
    iterable data set without a length: ``inf``)."""
    n = getattr(trainer, "num_training_batches", None)
    if not isinstance(n, (int, float)) or not math.isfinite(n) or n <= 0:
        return None
    return float(n)


def checkpoints(trainer) -> list[tuple[float, str]]:
    """The checkpoints the trainer's ``ModelCheckpoint`` callbacks hold (their top-k, best
    and last paths) that exist on disk, as ``(global step, path)``; the step is read from
    the file name's ``step=N`` (the default file name ``epoch={epoch}-step={step}``
    writes it), and a file whose name holds none is left out."""
    out = {}
    for cb in getattr(trainer, "checkpoint_callbacks", None) or []:
        paths = [
            *(getattr(cb, "best_k_models", None) or {}),
            getattr(cb, "best_model_path", ""),
            getattr(cb, "last_model_path", ""),
        ]
        for path in paths:
            m = _STEP.search(os.path.splitext(os.path.basename(str(path)))[0]) if path else None
            if m and os.path.exists(path):
                out[str(path)] = float(m.group(1))
    return [(step, path) for path, step in out.items()]


class TrainproofCallback(Callback):
    """Judges a Lightning run from its logged metrics while it trains.

    Args:
        policy: ``"warn"`` (default) prints each new WARN or FAIL finding once and never
            interrupts; ``"stop_on_fail"`` also sets ``trainer.should_stop`` at the first
            FAIL and prints the step it stopped at and the share of the scheduled steps
            that never ran.
        check_every: judge every this many records (one per optimizer step, one per
            validation run), and at the end of training.
        mute: rule ids not to run.
        on_alert: called once per new WARN or FAIL finding id, with the finding.
        thresholds: rule thresholds.
        stop_on: rule ids on which to stop training whatever the policy (a WARN you care
            about, such as ``{"TP-OVERFIT"}``, as ``EarlyStopping`` stops), once the finding
            has been present ``patience`` checks in a row.
        patience: checks in a row a ``stop_on`` finding must be present (at least 1).
        history: a run history (an SQLite file or a ``postgresql://`` URL, see
            :mod:`trainproof.history`): at the end of training the run is judged against
            its experiment's recent healthy runs there and recorded; ``None`` (default):
            nothing is read or written.
        experiment: the experiment the run is recorded under (default: the current folder).
        save_on_stop: at a stop, also save a checkpoint with ``trainer.save_checkpoint``
            (in every process, as Lightning asks) to ``trainproof-stop-step=<N>.ckpt`` in
            the first ``ModelCheckpoint``'s ``dirpath``, else in
            ``trainer.default_root_dir``.

    A claim that the loss made no progress (TP-DEAD-RUN, TP-FLAT, TP-CHANCE-LEVEL…) stops
    the run only with a measured cause in the history (a learning rate, updates or
    gradients about zero, parameters outside the optimizer); without one it is printed as
    a WARN that says so and training goes on. A stop's message names the findings, the
    last good step before their onset, the newest checkpoint the ``ModelCheckpoint``
    callbacks hold at or before it (its step read from the file name's ``step=N``, as
    the default file name writes it), and the rule's first remedy.
        layers: measure the model and its first optimizer (the others' parameters count
            as held by an optimizer) every ``check_every`` optimizer steps (the ``model/*`` keys of :class:`trainproof.live.monitor.Monitor`,
            ``layers``), recorded in that step's record; the layer names of the latest
            measurement are in ``live.guardian.meta["model_probe"]``.
        activations: also hook the activation modules for those steps' forward passes
            (see the monitor's ``activations``).

    Attributes:
        report: the latest :class:`~trainproof.findings.Report` (the final one after
            training ends), or ``None`` before the first judgement.
        stopped_at: the global step a ``stop_on_fail`` stop happened at, else ``None``.
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
        save_on_stop: bool = False,
        layers: bool = True,
        activations: bool = False,
        history: str | None = None,
        experiment: str | None = None,
    ) -> None:
        super().__init__()
        self.live = LiveRun(
            "Lightning",
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
        self.save_on_stop = bool(save_on_stop)
        self._last_step: int | None = None
        #: the path ``save_on_stop`` saved to, else ``None``
        self.saved_path: str | None = None
        self.layers = layers
        self.activations = activations
        self._probe = None
        self._steps = 0  # optimizer steps recorded
        self._per_epoch = False  # the scheduler measured steps once an epoch

    @property
    def report(self) -> Report | None:
        return self.live.report

    @property
    def stopped_at(self) -> float | None:
        return self.live.stopped_at

    def on_train_start(self, trainer, pl_module) -> None:
        end = trainer.max_steps if trainer.max_steps and trainer.max_steps > 0 else None
        if end is None:
            try:
                est = float(trainer.estimated_stepping_batches)
            except Exception:  # noqa: BLE001 - an estimate is optional context
                est = math.inf
            end = est if math.isfinite(est) and est > 0 else None
        self.live.start(max_steps=end, quiet=not trainer.is_global_zero)
        self.live.set_model(pl_module)
        self.live.checkpoints = lambda: checkpoints(trainer)
        self.live.save = (lambda step: self._save(trainer, step)) if self.save_on_stop else None
        self._last_step = None
        self._steps = 0
        self._per_epoch = False
        if self._probe is not None:
            self._probe.close()
        self._probe = None
        if trainer.optimizers and (self.layers or self.activations):
            from ..live.probes import ModelProbe

            configs = getattr(trainer, "lr_scheduler_configs", None) or []
            self._per_epoch = bool(configs) and getattr(configs[0], "interval", None) == "epoch"
            self._probe = ModelProbe(
                pl_module,
                trainer.optimizers[0],
                self.layers,
                self.activations,
                scheduler=configs[0].scheduler if configs else None,
                scaler=getattr(getattr(trainer, "precision_plugin", None), "scaler", None),
                also=trainer.optimizers[1:],
            )
        self.saved_path = None

    def _save(self, trainer, step) -> str:
        """Save a checkpoint at the stop, unless a parameter holds NaN or Inf; returns what
        the stop's message says of it."""
        import torch

        module = getattr(trainer, "lightning_module", None)
        if module is not None and not all(bool(torch.isfinite(p).all()) for p in module.parameters()):
            return NONFINITE_NOT_SAVED
        dirpath = next((cb.dirpath for cb in trainer.checkpoint_callbacks if getattr(cb, "dirpath", None)), None)
        path = os.path.join(dirpath or trainer.default_root_dir, f"trainproof-stop-step={int(step or 0)}.ckpt")
        trainer.save_checkpoint(path)
        self.saved_path = path
        return f"save_on_stop saved {path}."

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        global_step = int(trainer.global_step)
        if global_step == self._last_step:  # accumulating gradients: no optimizer step yet
            return
        self._last_step = global_step
        step = _batch_step(trainer)
        values = {k: v for k, v in trainer.callback_metrics.items() if not is_eval_key(k) and not k.endswith("_epoch")}
        if trainer.optimizers and "lr" not in values:
            values["lr"] = trainer.optimizers[0].param_groups[0].get("lr")
        batches = _epoch_batches(trainer) if self._per_epoch else None
        if batches is not None:
            # The scheduler measured steps once an epoch (``interval="epoch"``, Lightning's
            # default): the epoch, as the monitor takes it (``epoch=``), lets
            # TP-SCHEDULER-STUCK wait for a whole epoch without a step.
            values["epoch"] = trainer.current_epoch + (batch_idx + 1) / batches
        probe = self._probe
        if probe is not None:
            # The gradients of this step are still there (Lightning clears them in the next
            # step's closure). As in the monitor, the update measured is the step before the
            # check's own: armed two records ahead, so that the check step's backward also
            # shows whether that step's gradients were cleared.
            self._steps += 1
            every = self.live.check_every
            meta = self.live.guardian.meta if self.live.guardian is not None else None
            values.update(probe.after_step(step, self._steps % every == 0, (self._steps + 2) % every == 0, meta))
        self._record(trainer, step, values)

    def on_validation_end(self, trainer, pl_module) -> None:
        if trainer.sanity_checking or self.live.guardian is None:
            return
        values = {k: v for k, v in trainer.callback_metrics.items() if is_eval_key(k) and not k.endswith("_step")}
        self._record(trainer, _batch_step(trainer), values)

    def _record(self, trainer, step: int, values: dict) -> None:
        # In a distributed run every process gets the same answer at the same record (the
        # LiveRun agrees it at its check points).
        if self.live.record(step, values):
            trainer.should_stop = True

    def on_train_end(self, trainer, pl_module) -> None:
        if self._probe is not None:
            self._probe.close()
        self.live.finish()
