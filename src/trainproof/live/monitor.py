"""The in-loop monitor for a raw PyTorch training loop.

    mon = trainproof.monitor(model, optimizer, check_every=50, policy="warn")
    for step, batch in enumerate(loader):
        loss = model(batch).loss
        loss.backward()
        mon.log(step, loss.item())          # after backward, before optimizer.step()
        optimizer.step(); optimizer.zero_grad()
    report = mon.report()

torch is imported only when a monitor is created, never by ``import trainproof``.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from ..findings import Finding, Level, Report
from ..rules.thresholds import DEFAULT, Thresholds
from .guardian import Guardian, RunFailed, numbers

POLICIES = ("warn", "raise", "silent")


def _require(module: str, extra: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(f'{module} is needed for this; install it with: pip install "trainproof[{extra}]"') from e


class Monitor:
    """Records a training loop and judges it every ``check_every`` steps.

    Args:
        model: the ``torch.nn.Module`` being trained (its parameters' gradients give the
            gradient norm; with ``track_update_ratio`` their values give the update ratio).
        optimizer: the ``torch.optim.Optimizer`` (its param groups give the learning rate).
        check_every: judge the history every this many :meth:`log` calls (a long history
            may be judged less often: see :meth:`Guardian.affordable`).
        policy: ``"warn"`` prints a new FAIL once; ``"raise"`` raises :class:`RunFailed`
            (carrying the Report) at the first FAIL so the loop can stop and save;
            ``"silent"`` only records.
        mute: rule ids not to run.
        on_alert: called once per new WARN or FAIL finding id (e.g. post a W&B alert).
        log_path: also write every record as a JSONL line (``trainproof judge`` reads it).
        track_update_ratio: record ``update_ratio`` = ||W_after - W_before|| / ||W_after||
            across each optimizer step. Holds one copy of every trainable parameter (the
            model's size again in memory).
        max_steps: the run's scheduled number of steps, when known (for the schedule rules
            and the share of the run a stop saves).
        thresholds: rule thresholds.
    """

    def __init__(
        self,
        model,
        optimizer,
        check_every: int = 50,
        policy: str = "warn",
        mute: Iterable[str] = (),
        on_alert: Callable[[Finding], None] | None = None,
        log_path: str | Path | None = None,
        track_update_ratio: bool = False,
        max_steps: int | None = None,
        thresholds: Thresholds = DEFAULT,
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
        self.torch = _require("torch", "torch")
        self.model = model
        self.optimizer = optimizer
        self.check_every = max(1, int(check_every))
        self.policy = policy
        meta = {"max_steps": max_steps} if max_steps else {}
        self.guardian = Guardian("<live>", "live", mute, thresholds, on_alert, meta)
        self.log_path = Path(log_path) if log_path else None
        self._log_file = open(self.log_path, "a", encoding="utf-8") if self.log_path else None
        self.track_update_ratio = track_update_ratio
        self._prev_params = None
        self._last_time: float | None = None
        self._calls = 0
        self._announced: set[str] = set()

    # --- measurements -------------------------------------------------------------------
    def _params(self):
        return [p for p in self.model.parameters() if p.requires_grad]

    def grad_norm(self) -> float:
        """Total L2 norm of the gradients of the parameters that have one (NaN/Inf kept)."""
        torch = self.torch
        grads = [p.grad.detach() for p in self.model.parameters() if p.grad is not None]
        if not grads:
            return float("nan")
        norms = torch.stack([torch.linalg.vector_norm(g.float()) for g in grads])
        return float(torch.linalg.vector_norm(norms).item())

    def _update_ratio(self) -> float | None:
        torch = self.torch
        with torch.no_grad():
            now = [p.detach().clone() for p in self._params()]
            ratio = None
            if self._prev_params is not None and len(self._prev_params) == len(now):
                num = math.sqrt(
                    sum(float(torch.sum((a.float() - b.float()) ** 2)) for a, b in zip(now, self._prev_params))
                )
                den = math.sqrt(sum(float(torch.sum(a.float() ** 2)) for a in now))
                ratio = num / den if den > 0 else float("nan")
            self._prev_params = now
        return ratio

    # --- the loop -----------------------------------------------------------------------
    def log(self, step: int, loss: float, eval_loss: float | None = None, **metrics: float) -> None:
        """Record one step: call after ``loss.backward()`` and before ``optimizer.step()``.

        Records ``loss``, the gradient norm, the learning rate of each param group
        (``lr``, then ``lr_group_1``…), the wall time in seconds since the previous call
        returned (``step_time``; judging time excluded), ``eval_loss`` when given, and any
        other ``metrics`` that are numbers (Python or numpy numbers, one-element tensors).
        With ``track_update_ratio``, ``update_ratio`` compares the parameters now with
        those at the previous call, so it measures the optimizer step taken after the
        previous call. Non-finite values are recorded, never raised on.

        Raises:
            RunFailed: with ``policy="raise"``, when a judgement finds a FAIL.
        """
        values: dict[str, object] = {"loss": loss, "grad_norm": self.grad_norm()}
        for i, group in enumerate(self.optimizer.param_groups):
            values["lr" if i == 0 else f"lr_group_{i}"] = group.get("lr", float("nan"))
        if self._last_time is not None:
            values["step_time"] = time.perf_counter() - self._last_time
        if eval_loss is not None:
            values["eval_loss"] = eval_loss
        values.update(metrics)
        nums = numbers(values)
        if self.track_update_ratio:
            r = self._update_ratio()
            if r is not None:
                nums["update_ratio"] = r
        self.guardian.add(float(step), nums)
        self._write({"step": step, **nums})
        self._calls += 1
        if self._calls % self.check_every == 0 and self.guardian.affordable():
            self.check()
        # Measured from here, so the time spent judging is not charged to the next step.
        self._last_time = time.perf_counter()

    def _write(self, row: dict) -> None:
        if self._log_file is not None:
            self._log_file.write(json.dumps(row) + "\n")
            self._log_file.flush()

    def check(self) -> Report:
        """Judge the history now; announce new findings and apply the policy."""
        rep = self.guardian.judge()
        new_fail = [f for f in rep.findings if f.level is Level.FAIL and f.id not in self._announced]
        for f in new_fail:
            self._announced.add(f.id)
        if new_fail and self.policy != "silent":
            print(
                f"trainproof: FAIL at step {int(self.guardian.records and rep.step_range[1])}: "
                + "; ".join(f"{f.id}: {f.message}" for f in new_fail),
                file=sys.stderr,
            )
        if new_fail and self.policy == "raise":
            raise RunFailed(rep)
        return rep

    def report(self, print_it: bool = True) -> Report:
        """Judge the whole history, print the verdict (unless ``print_it`` is False) and
        return the Report."""
        rep = self.guardian.judge(charts=True)
        if self._log_file is not None:
            self._log_file.flush()
        if print_it:
            from rich.console import Console

            from ..render.text import render

            render(Console(stderr=True, highlight=False), [rep])
        return rep

    def close(self) -> None:
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None


def monitor(
    model,
    optimizer,
    check_every: int = 50,
    policy: str = "warn",
    mute: Iterable[str] = (),
    on_alert: Callable[[Finding], None] | None = None,
    log_path: str | Path | None = None,
    track_update_ratio: bool = False,
    max_steps: int | None = None,
    thresholds: Thresholds = DEFAULT,
) -> Monitor:
    """Start monitoring a raw PyTorch loop; see :class:`Monitor` for the arguments."""
    return Monitor(
        model, optimizer, check_every, policy, mute, on_alert, log_path, track_update_ratio, max_steps, thresholds
    )


#: The former name of :func:`monitor`.
watch = monitor
