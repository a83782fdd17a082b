"""What the three framework callbacks share: the policy, the announcements, the stop.

Each callback is an extractor: it turns what its framework logged into ``(step, {key:
number})`` records and hands them to a :class:`LiveRun`. The LiveRun feeds a
:class:`~trainproof.live.guardian.Guardian` (the same rules as ``trainproof judge``),
decides when to judge, prints new findings, and says when the run should stop; the
callback only translates that answer into its framework's stop flag.

Under data parallelism every process runs the callback. Only the main process prints and
calls ``on_alert`` (the callback says which process that is, with ``quiet``). When a
``torch.distributed`` process group of more than one process is initialised, every
process must call :meth:`LiveRun.record` with the same sequence of records (the same
keys at the same steps; the values may differ): the cadence (``check_every``,
:meth:`~trainproof.live.guardian.Guardian.due`) then falls on the same record
everywhere, and at each such check point the processes agree, with one-number
all-reduces, whether judging is affordable now (in every process) and, when they judged,
whether any process found a FAIL. So every process judges at the same records and a
``stop_on_fail`` stop happens at the same step in all of them; between check points, and
in :meth:`LiveRun.finish`, nothing is exchanged. On NCCL each agreement reads one number
back from the device: one wait per check point, none per record.

Tensor values (Lightning's ``callback_metrics``) are kept as tensors until a check point
needs their numbers, and then read together, so recording a step does not wait for the
device.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..findings import Finding, Level, Report
from ..live import distributed, stops
from ..live.guardian import Guardian, number
from ..rules._fmt import pct
from ..rules._fmt import step as step_fmt
from ..rules.thresholds import DEFAULT, Thresholds

POLICIES = ("warn", "stop_on_fail")

#: Judge no more often than once per this share of growth of the history, whatever
#: ``check_every`` says: a judgement costs O(records), so this keeps the amortised cost per
#: record constant on long runs (up to 100 records, every record can still be judged).
GROWTH_SHARE = 0.01

#: Tensor values waiting to be read are read at the latest after this many records, which
#: bounds the device memory they hold when ``check_every`` is large.
PENDING_MAX = 256


#: What a stop's message says where ``save_on_stop`` found the weights non-finite: a
#: checkpoint of NaN weights cannot be resumed from, so none is written.
NONFINITE_NOT_SAVED = (
    "save_on_stop saved nothing: the model's weights hold NaN or Inf, and a checkpoint of them cannot be resumed "
    "from; resume from the last one saved before the onset."
)


def missing(module: str, extra: str, err: BaseException | None = None) -> str:
    """The message for a framework that cannot be imported."""
    why = f" ({err})" if err is not None and str(err) else ""
    return (
        f"trainproof's {extra} callback needs {module}, which could not be imported{why}; "
        f'install it with: pip install "trainproof[{extra}]"'
    )


def _lazy(value: Any) -> Any:
    """``value`` detached, when it is a one-element real torch tensor whose number can be
    read later (reading it now would wait for the device), else ``None``."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(value, torch.Tensor):
        return None
    if value.numel() != 1 or value.dtype is torch.bool or value.is_complex():
        return None
    return value.detach()


def _read(tensors: list) -> list[float | None]:
    """The numbers of one-element tensors, read with one transfer per (device, dtype)."""
    import torch

    out: list[float | None] = [None] * len(tensors)
    groups: dict[tuple, list[int]] = {}
    for i, t in enumerate(tensors):
        groups.setdefault((t.device, t.dtype), []).append(i)
    for idx in groups.values():
        try:
            vals = torch.stack([tensors[i].reshape(()) for i in idx]).tolist()
        except (TypeError, ValueError, RuntimeError):
            vals = [number(tensors[i]) for i in idx]
        for i, v in zip(idx, vals):
            out[i] = number(v)
    return out


def cites_grad_norm(f: Finding) -> bool:
    """True when finding ``f`` is about the gradient norm: its rule needs the
    ``grad_norm`` series, or its numbers include gradient-norm counts."""
    from ..rules.registry import get

    r = get(f.id)
    if r is not None and any("grad_norm" in n.names for n in r.needs):
        return True
    return any(str(k).startswith("grad_norm") for k in f.data)


class LiveRun:
    """One training run judged while it trains, under a policy.

    Args:
        framework: what the messages call the trainer (``HF Trainer``, ``Lightning``, ``Keras``).
        policy: ``"warn"`` prints each new WARN or FAIL finding once and never interrupts;
            ``"stop_on_fail"`` does the same and, at the first FAIL, asks the caller to stop
            the run and prints what the stop cut off.
        check_every: judge the history every this many records (and at :meth:`finish`).
        mute: rule ids not to run.
        on_alert: called once per new WARN or FAIL finding id, with the finding (in the
            main process only: not while ``quiet``).
        thresholds: rule thresholds.
        grad_norm_source: who computed a logged gradient norm (``"the HF Trainer"``): a
            finding about the gradient norm then says, in its announcement and in the
            evidence ``on_alert`` receives, that the norm is as that source reported it.
        stop_on: rule ids on which to stop the run whatever the policy (a WARN such as
            TP-OVERFIT), once found ``patience`` checks in a row.
        patience: checks in a row a ``stop_on`` finding must be present (at least 1).
        history: the run history :meth:`finish` records the run into (see
            :meth:`trainproof.live.guardian.Guardian.record`); only the main process
            (not ``quiet``) reads and writes it.
        experiment: the experiment the run is recorded under.

    Attributes:
        checkpoints: set by the callback: a function giving the run's saved checkpoints as
            ``(step, name)`` pairs, read at a stop to name the newest one at or before the
            last good step (``None``: the framework keeps none the callback can see).
        save: set by the callback: a function ``save(step)`` called at a stop (before its
            message is printed) that saves a checkpoint, or has the framework save one,
            and returns what it saved, for the message.
        stop_findings: the findings the stop rests on (empty before a stop, and when
            another process of a distributed run found them).

    A claim that the loss made no progress stops the run only with a measured cause in the
    history (see :mod:`trainproof.live.stops`); without one it is announced as a WARN that
    says so and training goes on.

    Raises:
        ValueError: for a policy not in :data:`POLICIES`, a ``stop_on`` id that names no
            rule, or a ``patience`` below 1.
    """

    def __init__(
        self,
        framework: str,
        policy: str = "warn",
        check_every: int = 1,
        mute: Iterable[str] = (),
        on_alert: Callable[[Finding], None] | None = None,
        thresholds: Thresholds = DEFAULT,
        grad_norm_source: str | None = None,
        stop_on: Iterable[str] = (),
        patience: int = 1,
        history: str | None = None,
        experiment: str | None = None,
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
        if int(patience) < 1:
            raise ValueError(f"patience must be at least 1 (checks in a row), got {patience!r}")
        self.stop_on = stops.stop_ids(stop_on)
        self.patience = int(patience)
        self.checkpoints: Callable[[], list[tuple[float, str]]] | None = None
        self.save: Callable[[float | None], str | None] | None = None
        self.stop_findings: list[Finding] = []
        self.framework = framework
        self.policy = policy
        self.check_every = max(1, int(check_every))
        self.mute = tuple(mute)
        self.on_alert = on_alert
        self.thresholds = thresholds
        self.grad_norm_source = grad_norm_source
        self.history = history
        self.experiment = experiment
        self.guardian: Guardian | None = None
        self.report: Report | None = None
        self.stopped_at: float | None = None
        self.quiet = False
        #: whether the last :meth:`record` call judged the history (in a distributed run,
        #: true in every process at the same record)
        self.judged = False
        self._since = 0
        self._last_step: float | None = None
        #: records holding tensors not read yet: ``(step, values)``, in order
        self._pending: list[tuple[float, dict[str, Any]]] = []

    # --- lifecycle ----------------------------------------------------------------------
    def start(self, max_steps: float | None = None, quiet: bool = False) -> None:
        """Begin a run (forgetting any earlier one). ``max_steps``: the scheduled end, when
        known. ``quiet``: print nothing and call no ``on_alert`` (another process of a
        distributed run does)."""
        self.guardian = Guardian(
            "<live>",
            "live",
            self.mute,
            self.thresholds,
            self._alert,
            stop_on=self.stop_on,
            patience=self.patience,
            # one process of a distributed run records it: the one that speaks
            history=None if quiet else self.history,
            experiment=self.experiment,
        )
        self.set_max_steps(max_steps)
        self.report = None
        self.stopped_at = None
        self.stop_findings = []
        self.quiet = quiet
        self._since = 0
        self._last_step = None
        self._pending = []

    def set_max_steps(self, max_steps: float | None) -> None:
        """Declare the scheduled end (steps); ignored unless a finite number above 0."""
        g = self._guardian()
        if max_steps is not None and math.isfinite(max_steps) and max_steps > 0:
            g.meta["max_steps"] = int(max_steps) if float(max_steps).is_integer() else float(max_steps)

    def _guardian(self) -> Guardian:
        if self.guardian is None:
            self.start()
        assert self.guardian is not None
        return self.guardian

    def set_model(self, model) -> None:
        """Note the number of trainable parameter tensors of ``model`` (a torch module; the
        denominator of "no trainable tensor updated", a measured cause of a stop). Anything
        without ``parameters()`` is ignored."""
        try:
            n = sum(1 for p in model.parameters() if getattr(p, "requires_grad", True))
        except Exception:  # noqa: BLE001 - a model the callback cannot count is no cause
            return
        if n:
            self._guardian().meta["trainable_tensors"] = n

    @property
    def max_steps(self) -> float | None:
        return None if self.guardian is None else self.guardian.meta.get("max_steps")

    # --- records in ---------------------------------------------------------------------
    def record(self, step: float, values: Mapping[str, Any]) -> bool:
        """Add one logged row (non-numbers skipped) and judge when due.

        Args:
            step: the training step of the row.
            values: metric key -> value; Python and numpy numbers and one-element tensors
                are numbers (NaN and ±Inf kept), anything else is skipped. Tensors are
                read at the next check point, not now.

        Returns:
            True when the caller should stop the run now (policy ``stop_on_fail`` and this
            judgement found the run's first FAIL, in this process or, in a distributed
            run, in any process). In a distributed run every process gets the same answer
            at the same record.
        """
        self.judged = False
        vals: dict[str, Any] = {}
        lazy = False
        for k, v in values.items():
            t = _lazy(v)
            if t is not None:
                vals[str(k)] = t
                lazy = True
                continue
            x = number(v)
            if x is not None:
                vals[str(k)] = x
        if not vals:
            return False
        g = self._guardian()
        if lazy or self._pending:
            self._pending.append((float(step), vals))
            if len(self._pending) >= PENDING_MAX:
                self._flush()
        else:
            g.add(float(step), vals)
        self._last_step = float(step)
        if self.stopped_at is not None:
            return False  # already stopping: the framework may still report a few rows
        self._since += 1
        if self._since < self.check_every:
            return False
        self._flush()
        if not g.due(GROWTH_SHARE):
            return False
        if distributed.world_size() > 1:
            return self._agreed_check(g)
        if not g.affordable():
            return False
        self._since = 0
        return self.check()

    def _agreed_check(self, g: Guardian) -> bool:
        """A check point of a distributed run, reached at the same record in every process:
        judge if every process can afford it, stop if any process found a FAIL. Collectives:
        one, plus one more when they judged under ``stop_on_fail``."""
        # The next check point is check_every records on, in every process, whether or not
        # this one judges: retrying at each record would be a collective per record.
        self._since = 0
        if not distributed.all_ranks(g.affordable()):
            return False
        mine = self.check()
        if not (self.policy == "stop_on_fail" or self.stop_on) or not distributed.any_rank(mine):
            return False  # the policy and stop_on are the same in every process: warn alone never stops
        if not mine and self.stopped_at is None:
            what = "A FAIL or a stop_on finding" if self.stop_on else "A FAIL"
            self._stop([], f" {what} was found in another process of this distributed run.")
        return True

    def _flush(self) -> None:
        """Read the pending tensors and add their records, in order."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        tensors = [v for _, vals in pending for v in vals.values() if not isinstance(v, float)]
        read = iter(_read(tensors))
        g = self._guardian()
        for step, vals in pending:
            row = {}
            for k, v in vals.items():
                x = v if isinstance(v, float) else next(read)
                if x is not None:
                    row[k] = x
            g.add(step, row)

    def check(self) -> bool:
        """Judge now, announce new findings; True when the run should stop (this process's
        judgement only: :meth:`record` is where distributed processes agree)."""
        self._flush()
        g = self._guardian()
        if not g.records:
            return False
        rep = g.judge()
        self.report = rep
        self.judged = True
        self._announce(g.new_findings)
        if self.stopped_at is not None:
            return False
        basis = [f for f in rep.findings if f.level is Level.FAIL] if self.policy == "stop_on_fail" else []
        basis = basis or g.chosen_stops(rep)
        if basis:
            self._stop(basis)
            return True
        return False

    def _stop(self, findings: list[Finding], note: str = "") -> None:
        """Stop here: keep the step and the findings, have the callback save (``save``),
        print the stop's message."""
        self.stopped_at = self._last_step
        self.stop_findings = list(findings)
        saved = None
        if self.save is not None:
            try:
                saved = self.save(self.stopped_at)
            except Exception as e:  # noqa: BLE001 - the stop goes on; the message says why nothing was saved
                saved = f"save_on_stop failed: {type(e).__name__}: {e}."
        self._say(self.stop_message() + note + (f" {saved}" if saved else ""))

    def finish(self) -> Report | None:
        """Judge the whole run once more at its end and keep the final Report (``None`` when
        nothing was recorded). No process waits for another here."""
        g = self.guardian
        self._flush()
        if g is None or not g.records:
            return self.report
        rep = g.record(g.judge(charts=True, final=True))
        self.report = rep
        self._announce(g.new_findings)
        if rep.history_error is not None:
            self._say(f"trainproof: the run was not recorded: {rep.history_error}")
        if self.policy == "warn" and rep.verdict is Level.FAIL and rep.summary:
            self._say(f"trainproof: the run ended with a FAIL verdict. {rep.summary}")
        return rep

    # --- messages -----------------------------------------------------------------------
    def _say(self, text: str) -> None:
        if not self.quiet:
            print(text, file=sys.stderr, flush=True)

    def _sourced(self, f: Finding) -> Finding:
        """``f``, its evidence saying who computed the gradient norm it is about."""
        if not self.grad_norm_source or not cites_grad_norm(f):
            return f
        note = f"(gradient norm as reported by {self.grad_norm_source})"
        return dataclasses.replace(f, evidence=f"{f.evidence} {note}" if f.evidence else note)

    def _alert(self, f: Finding) -> None:
        if self.on_alert is not None and not self.quiet:
            self.on_alert(self._sourced(f))

    def _announce(self, findings: list[Finding]) -> None:
        at = step_fmt(self._last_step) if self._last_step is not None else "?"
        for f in findings:
            f = self._sourced(f)
            self._say(
                f"trainproof: {f.level.value} at step {at}: {f.id}: {f.message}"
                + (f"\n    {f.evidence}" if f.evidence else "")
            )

    def stop_message(self) -> str:
        """What a stop cut off: the step it stopped at, the scheduled steps, the share of
        them that never ran; then the findings it rests on, the measured cause of a claim
        of no progress, the last good step before their onset, the newest checkpoint at or
        before it (when :attr:`checkpoints` is set) and the rule's first remedy."""
        at = self.stopped_at if self.stopped_at is not None else self._last_step
        end = self.max_steps
        # stop_on_fail stops on FAILs; any other stop is one that stop_on chose.
        chosen = self.policy != "stop_on_fail" or any(f.level is not Level.FAIL for f in self.stop_findings)
        head = f"trainproof: {'stop_on' if chosen else 'stop_on_fail'} stopped {self.framework} training at step {step_fmt(at)}"
        if end is None or at is None:
            text = head + " (the scheduled end is unknown)."
        else:
            left = max(float(end) - float(at), 0.0)
            text = (
                f"{head} of {step_fmt(end)} scheduled steps: {step_fmt(left)} scheduled steps "
                f"({pct(left / float(end))}) never ran."
            )
        g = self.guardian
        if self.stop_findings and g is not None:
            found = None
            if self.checkpoints is not None:
                try:
                    found = list(self.checkpoints())
                except OSError:
                    found = None
            text += " " + stops.stop_text(
                "It stopped", self.stop_findings, g.runlog(), found, self.thresholds, self.stop_on, self.patience
            )
        return text
