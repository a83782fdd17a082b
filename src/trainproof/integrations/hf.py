"""trainproof for the Hugging Face ``Trainer``.

    from trainproof.integrations.hf import TrainproofCallback

    cb = TrainproofCallback(policy="stop_on_fail")
    trainer = Trainer(model=model, args=args, train_dataset=ds, callbacks=[cb])
    trainer.train()
    cb.report.verdict

Every dict the Trainer logs (``loss``, ``grad_norm``, ``learning_rate``, ``epoch``,
``eval_loss`` and the other ``eval_*`` metrics) becomes one record at
``state.global_step``; ``state.max_steps`` is the run's scheduled end. The divergence
rules compare the run with its starting level, so ``logging_first_step=True`` puts that
level on record (otherwise the first record is already the mean of the first
``logging_steps`` steps).

Under DDP, DeepSpeed or FSDP every process runs the callback and gets the same logs (the
Trainer gathers the loss; its ``grad_norm`` is the norm of the whole gradient, reduced
across processes by the Trainer or the engine). Only the world-process-zero prints and
calls ``on_alert``; the processes agree at each check point whether to judge and whether
to stop, so a ``stop_on_fail`` stop ends every process at the same ``global_step``. A
finding about the gradient norm says it is the norm as the HF Trainer reported it.

Importing this module imports transformers; ``import trainproof`` does not.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable

from ..findings import Finding, Report
from ..rules._fmt import step as step_fmt
from ..rules.thresholds import DEFAULT, Thresholds
from ._common import LiveRun, missing

try:
    from transformers import TrainerCallback
except ImportError as _e:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(missing("transformers", "hf", _e)) from _e

__all__ = ["TrainproofCallback", "checkpoints"]

_CHECKPOINT = re.compile(r"checkpoint-(\d+)")


def checkpoints(output_dir: str | os.PathLike) -> list[tuple[float, str]]:
    """The Trainer's checkpoints in ``output_dir``: ``(global step, path)`` of each
    ``checkpoint-N`` folder (the Trainer's own naming), in no particular order; empty when
    the folder does not exist."""
    try:
        names = os.listdir(output_dir)
    except OSError:
        return []
    out = []
    for name in names:
        m = _CHECKPOINT.fullmatch(name)
        path = os.path.join(output_dir, name)
        if m and os.path.isdir(path):
            out.append((float(m.group(1)), path))
    return out


class TrainproofCallback(TrainerCallback):
    """Judges a ``transformers.Trainer`` run from its logs while it trains.

    Args:
        policy: ``"warn"`` (default) prints each new WARN or FAIL finding once and never
            interrupts; ``"stop_on_fail"`` also sets ``control.should_training_stop`` at
            the first FAIL and prints the step it stopped at and the share of the
            scheduled steps that never ran.
        check_every: judge every this many logs (and at the end of training).
        mute: rule ids not to run.
        on_alert: called once per new WARN or FAIL finding id, with the finding.
        thresholds: rule thresholds.
        stop_on: rule ids on which to stop training whatever the policy (a WARN you care
            about, such as ``{"TP-OVERFIT"}``, as ``EarlyStoppingCallback`` stops), once the
            finding has been present ``patience`` checks in a row.
        patience: checks in a row a ``stop_on`` finding must be present (at least 1).
        history: a run history (an SQLite file or a ``postgresql://`` URL, see
            :mod:`trainproof.history`): at the end of training the run is judged against
            its experiment's recent healthy runs there and recorded; ``None`` (default):
            nothing is read or written.
        experiment: the experiment the run is recorded under (default: the current folder).
        save_on_stop: at a stop, also set ``control.should_save``: the Trainer saves
            ``checkpoint-<global_step>`` in ``args.output_dir`` right after the log that
            stopped it.

    A claim that the loss made no progress (TP-DEAD-RUN, TP-FLAT, TP-CHANCE-LEVEL…) stops
    the run only with a measured cause in the history (a learning rate, updates or
    gradients about zero, parameters outside the optimizer); without one it is printed as
    a WARN that says so and training goes on. A stop's message names the findings, the
    last good step before their onset, the newest ``checkpoint-N`` folder of
    ``args.output_dir`` at or before it, and the rule's first remedy ("Resume from
    .../checkpoint-1200 with a lower peak learning rate…").
        layers: measure the model and its optimizer at each step the Trainer logs
            (``logging_steps``, and step 1 with ``logging_first_step``): the ``model/*``
            keys of :class:`trainproof.live.monitor.Monitor` (``layers``), added to that
            log's record; the latest layer names are in ``live.guardian.meta["model_probe"]``.
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
        check_every: int = 1,
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
        self.live = LiveRun(
            "HF Trainer",
            policy,
            check_every,
            mute,
            on_alert,
            thresholds,
            grad_norm_source="the HF Trainer",
            stop_on=stop_on,
            patience=patience,
            history=history,
            experiment=experiment,
        )
        self.layers = layers
        self.activations = activations
        self._probe = None
        self._measured: dict | None = None  # the probe's keys for the next training log
        self.save_on_stop = bool(save_on_stop)

    def _wire(self, args, model=None) -> None:
        """Tell the LiveRun where this Trainer's checkpoints are and how it saves one."""
        out = getattr(args, "output_dir", None)
        self.live.checkpoints = (lambda: checkpoints(out)) if out else None
        if self.save_on_stop:
            self.live.save = lambda step: (
                f"save_on_stop: the Trainer saves checkpoint-{step_fmt(step)} in {out} at this step."
            )
        if model is not None:
            self.live.set_model(model)

    @property
    def report(self) -> Report | None:
        return self.live.report

    @property
    def stopped_at(self) -> float | None:
        return self.live.stopped_at

    def on_train_begin(self, args, state, control, **kwargs):
        # Every process of a distributed run logs the same (gathered) values; the LiveRun
        # agrees at each check point whether to judge and whether to stop, and only the
        # main process prints and alerts.
        self.live.start(max_steps=state.max_steps or None, quiet=not state.is_world_process_zero)
        self._wire(args, kwargs.get("model"))
        if self._probe is not None:
            self._probe.close()
        self._probe, self._measured = None, None
        model, optimizer = kwargs.get("model"), kwargs.get("optimizer")
        if model is not None and optimizer is not None and (self.layers or self.activations):
            from ..live.probes import ModelProbe

            self._probe = ModelProbe(
                model, optimizer, self.layers, self.activations, scheduler=kwargs.get("lr_scheduler")
            )

    @staticmethod
    def _logs_at(args, state, step: int) -> bool:
        """Whether the Trainer logs the training metrics after optimizer step ``step``
        (as its ``DefaultFlowCallback`` decides)."""
        if step == 1 and args.logging_first_step:
            return True
        every = getattr(state, "logging_steps", None) or args.logging_steps
        strategy = str(getattr(args.logging_strategy, "value", args.logging_strategy))
        return strategy == "steps" and isinstance(every, int) and every > 0 and step % every == 0

    def on_optimizer_step(self, args, state, control, **kwargs):
        # After optimizer.step(), before zero_grad: this step's gradients are still there.
        # As in the monitor, the update measured is the step before the logged one: armed
        # two steps ahead, so the logged step's backward also shows whether that step's
        # gradients were cleared.
        probe = self._probe
        if probe is None:
            return
        step = state.global_step + 1  # the Trainer counts this step right after
        meta = self.live.guardian.meta if self.live.guardian is not None else None
        logged = self._logs_at(args, state, step)
        measured = probe.after_step(step, logged, self._logs_at(args, state, step + 2), meta)
        if logged:
            self._measured = measured

    def on_log(self, args, state, control, logs=None, **kwargs):
        # The end-of-training summary (train_runtime, train_loss averaged over the run) is
        # not a point of the run.
        if not logs or "train_runtime" in logs:
            return
        if self.live.guardian is None:
            self.live.start(quiet=not state.is_world_process_zero)
            self._wire(args, kwargs.get("model"))
        if state.max_steps and self.live.max_steps is None:
            self.live.set_max_steps(state.max_steps)
        if self._measured is not None and "loss" in logs:
            logs = {**logs, **self._measured}
            self._measured = None
        if self.live.record(state.global_step, logs):
            control.should_training_stop = True
            if self.save_on_stop:
                control.should_save = True

    def on_train_end(self, args, state, control, **kwargs):
        if self._probe is not None:
            self._probe.close()
        self.live.finish()
