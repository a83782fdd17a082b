"""What the three framework callbacks share: the policy, the announcements, the stop.

Each callback is an extractor: it turns what its framework logged into ``(step, {key:
number})`` records and hands them to a :class:`LiveRun`. The LiveRun feeds a
:class:`~trainproof.live.guardian.Guardian` (the same rules as ``trainproof judge``),
decides when to judge, prints new findings, and says when the run should stop; the
callback only translates that answer into its framework's stop flag.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..findings import Finding, Level, Report
from ..live.guardian import Guardian, numbers
from ..rules._fmt import pct
from ..rules._fmt import step as step_fmt
from ..rules.thresholds import DEFAULT, Thresholds

POLICIES = ("warn", "stop_on_fail")

#: Judge no more often than once per this share of growth of the history, whatever
#: ``check_every`` says: a judgement costs O(records), so this keeps the amortised cost per
#: record constant on long runs (up to 100 records, every record can still be judged).
GROWTH_SHARE = 0.01

_EVAL_PREFIXES = ("val_", "val/", "valid_", "valid/", "validation_", "validation/", "eval_", "eval/")
_EVAL_SUFFIXES = ("_val", "/val")


def missing(module: str, extra: str, err: BaseException | None = None) -> str:
    """The message for a framework that cannot be imported."""
    why = f" ({err})" if err is not None and str(err) else ""
    return (
        f"trainproof's {extra} callback needs {module}, which could not be imported{why}; "
        f'install it with: pip install "trainproof[{extra}]"'
    )


def is_eval_key(key: str) -> bool:
    """True for a validation/evaluation metric (``val_loss``, ``eval_acc``, ``loss_val``…)."""
    k = key.lower()
    return k.startswith(_EVAL_PREFIXES) or k.endswith(_EVAL_SUFFIXES)


class LiveRun:
    """One training run judged while it trains, under a policy.

    Args:
        framework: what the messages call the trainer (``HF Trainer``, ``Lightning``, ``Keras``).
        policy: ``"warn"`` prints each new WARN or FAIL finding once and never interrupts;
            ``"stop_on_fail"`` does the same and, at the first FAIL, asks the caller to stop
            the run and prints what the stop cut off.
        check_every: judge the history every this many records (and at :meth:`finish`).
        mute: rule ids not to run.
        on_alert: called once per new WARN or FAIL finding id, with the finding.
        thresholds: rule thresholds.
    """

    def __init__(
        self,
        framework: str,
        policy: str = "warn",
        check_every: int = 1,
        mute: Iterable[str] = (),
        on_alert: Callable[[Finding], None] | None = None,
        thresholds: Thresholds = DEFAULT,
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
        self.framework = framework
        self.policy = policy
        self.check_every = max(1, int(check_every))
        self.mute = tuple(mute)
        self.on_alert = on_alert
        self.thresholds = thresholds
        self.guardian: Guardian | None = None
        self.report: Report | None = None
        self.stopped_at: float | None = None
        self.quiet = False
        #: whether the last :meth:`record` call judged the history (a distributed caller
        #: reduces the stop decision across processes exactly then)
        self.judged = False
        self._since = 0
        self._last_step: float | None = None

    # --- lifecycle ----------------------------------------------------------------------
    def start(self, max_steps: float | None = None, quiet: bool = False) -> None:
        """Begin a run (forgetting any earlier one). ``max_steps``: the scheduled end, when
        known. ``quiet``: print nothing (another process of a distributed run prints)."""
        self.guardian = Guardian("<live>", "live", self.mute, self.thresholds, self.on_alert)
        self.set_max_steps(max_steps)
        self.report = None
        self.stopped_at = None
        self.quiet = quiet
        self._since = 0
        self._last_step = None

    def set_max_steps(self, max_steps: float | None) -> None:
        g = self._guardian()
        if max_steps is not None and math.isfinite(max_steps) and max_steps > 0:
            g.meta["max_steps"] = int(max_steps) if float(max_steps).is_integer() else float(max_steps)

    def _guardian(self) -> Guardian:
        if self.guardian is None:
            self.start()
        assert self.guardian is not None
        return self.guardian

    @property
    def max_steps(self) -> float | None:
        return None if self.guardian is None else self.guardian.meta.get("max_steps")

    # --- records in ---------------------------------------------------------------------
    def record(self, step: float, values: Mapping[str, Any]) -> bool:
        """Add one logged row (non-numbers skipped) and judge when due.

        Returns:
            True when the caller should stop the run now (policy ``stop_on_fail`` and this
            judgement found the run's first FAIL).
        """
        self.judged = False
        vals = numbers(values)
        if not vals:
            return False
        g = self._guardian()
        g.add(float(step), vals)
        self._last_step = float(step)
        if self.stopped_at is not None:
            return False  # already stopping: the framework may still report a few rows
        self._since += 1
        if self._since < self.check_every or not g.due(GROWTH_SHARE) or not g.affordable():
            return False
        self._since = 0
        return self.check()

    def check(self) -> bool:
        """Judge now, announce new findings; True when the run should stop."""
        g = self._guardian()
        if not g.records:
            return False
        rep = g.judge()
        self.report = rep
        self.judged = True
        self._announce(g.new_findings)
        if (
            self.policy == "stop_on_fail"
            and self.stopped_at is None
            and any(f.level is Level.FAIL for f in rep.findings)
        ):
            self.stopped_at = self._last_step
            self._say(self.stop_message())
            return True
        return False

    def finish(self) -> Report | None:
        """Judge the whole run once more at its end and keep the final Report."""
        g = self.guardian
        if g is None or not g.records:
            return self.report
        rep = g.judge(charts=True)
        self.report = rep
        self._announce(g.new_findings)
        if self.policy == "warn" and rep.verdict is Level.FAIL and rep.summary:
            self._say(f"trainproof: the run ended with a FAIL verdict. {rep.summary}")
        return rep

    # --- messages -----------------------------------------------------------------------
    def _say(self, text: str) -> None:
        if not self.quiet:
            print(text, file=sys.stderr, flush=True)

    def _announce(self, findings: list[Finding]) -> None:
        at = step_fmt(self._last_step) if self._last_step is not None else "?"
        for f in findings:
            self._say(
                f"trainproof: {f.level.value} at step {at}: {f.id}: {f.message}"
                + (f"\n    {f.evidence}" if f.evidence else "")
            )

    def stop_message(self) -> str:
        """What a stop cut off: the step it stopped at, the scheduled steps, the share of
        them that never ran."""
        at = self.stopped_at if self.stopped_at is not None else self._last_step
        end = self.max_steps
        head = f"trainproof: stop_on_fail stopped {self.framework} training at step {step_fmt(at)}"
        if end is None or at is None:
            return head + " (the scheduled end is unknown)."
        left = max(float(end) - float(at), 0.0)
        return (
            f"{head} of {step_fmt(end)} scheduled steps: {step_fmt(left)} scheduled steps "
            f"({pct(left / float(end))}) never ran."
        )
