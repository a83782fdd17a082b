"""Post trainproof's new findings as W&B alerts (``pip install "trainproof[wandb]"``).

    import trainproof, wandb
    from trainproof.integrations.wandb_alert import WandbAlert

    wandb.init(project="my-project")
    mon = trainproof.watch(model, optimizer, on_alert=WandbAlert())

:class:`WandbAlert` instances are the ``on_alert`` callable that the in-loop monitor
(:func:`trainproof.watch`), :class:`~trainproof.live.guardian.Guardian` and the framework
callbacks (:mod:`trainproof.integrations.hf`, ``lightning``, ``keras``) call once per new
WARN or FAIL finding id. Each call posts one ``run.alert(...)``: W&B turns it into an email
or Slack message as the user's W&B settings say.

wandb is imported when a :class:`WandbAlert` is created, never by ``import trainproof``.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from ..findings import SEVERITY, Finding, Level

__all__ = ["WandbAlert"]

log = logging.getLogger(__name__)

#: The W&B alert level of each finding level that is posted.
WANDB_LEVELS = {Level.WARN: "WARN", Level.FAIL: "ERROR"}

#: W&B asks for alert titles under 64 characters; trainproof's ids are far shorter, so
#: the cut only guards against a caller's own long ids.
MAX_TITLE = 63


def _import_wandb():
    try:
        import wandb
    except ImportError as e:
        raise ImportError('wandb is needed for W&B alerts; install it with: pip install "trainproof[wandb]"') from e
    return wandb


def alert_text(finding: Finding) -> str:
    """The body of the alert for ``finding``: its message, the evidence sentence with the
    numbers, and the step where it happened, one per line (empty parts left out)."""
    parts = [finding.message, finding.evidence]
    if finding.step is not None:
        step = finding.step
        parts.append(f"at step {int(step) if float(step).is_integer() else step}")
    return "\n".join(p for p in parts if p)


class WandbAlert:
    """An ``on_alert`` callable that posts each finding it is given as a W&B alert.

    Calling an instance with a :class:`~trainproof.findings.Finding` posts
    ``run.alert(title=finding.id, text=<message, evidence, step>, level=...)`` with level
    ``WARN`` for a WARN finding and ``ERROR`` for a FAIL. Findings below ``min_level``
    (and INFO, PASS or NOT-CHECKED ones) are not posted. The callers announce each finding
    id once per run, so each id is posted once; this class adds no deduplication of its own.

    Args:
        run: the ``wandb`` run to post on. ``None`` (the default) posts on the run active at
            the time of each call (``wandb.run``), so the instance may be created before
            ``wandb.init`` (for instance before a Hugging Face ``Trainer`` with
            ``report_to="wandb"`` starts its run).
        min_level: ``"WARN"`` (the default) posts WARN and FAIL findings; ``"FAIL"``
            posts FAIL findings only. A :class:`~trainproof.findings.Level` is accepted too.
        wait_duration: passed to ``run.alert``: W&B sends no second alert with the same
            title within this time. Seconds (int or float) or a ``timedelta``; ``None``
            keeps W&B's default (one minute), and so does 0 (W&B reads 0 as unset).

    Raises:
        ImportError: wandb is not installed (the message names ``pip install
            "trainproof[wandb]"``).
        ValueError: ``min_level`` is not WARN or FAIL, or ``wait_duration`` is negative.
        TypeError: ``wait_duration`` is not a number, a ``timedelta`` or ``None``.

    A call never raises because of W&B: with no active run (``run`` not given and
    ``wandb.run`` is ``None``) it posts nothing and logs one warning on the
    ``trainproof.integrations.wandb_alert`` logger, and an error from ``run.alert``
    (a finished run, a network or service failure) is logged as a warning. A training
    loop is never stopped by its alerting.

    Attributes:
        posted: the ids of the findings posted, in order.
        failed: the ids of the findings that were not posted (no run, or an error).
    """

    def __init__(
        self,
        run: Any = None,
        min_level: str | Level = "WARN",
        wait_duration: int | float | timedelta | None = None,
    ) -> None:
        self.wandb = _import_wandb()
        try:
            level = Level(min_level.upper() if isinstance(min_level, str) else min_level)
        except ValueError:
            level = None
        if level not in WANDB_LEVELS:
            raise ValueError(f"min_level must be 'WARN' or 'FAIL', got {min_level!r}")
        if wait_duration is not None:
            if isinstance(wait_duration, bool) or not isinstance(wait_duration, (int, float, timedelta)):
                raise TypeError(f"wait_duration must be seconds or a timedelta, got {type(wait_duration).__name__}")
            seconds = wait_duration.total_seconds() if isinstance(wait_duration, timedelta) else wait_duration
            if not seconds >= 0:
                raise ValueError(f"wait_duration must be >= 0 seconds, got {wait_duration!r}")
        self.run = run
        self.min_level = level
        self.wait_duration = wait_duration
        self.posted: list[str] = []
        self.failed: list[str] = []
        self._warned_no_run = False

    def __call__(self, finding: Finding) -> None:
        """Post ``finding`` as an alert (see the class); returns nothing, never raises for
        a W&B-side failure."""
        name = WANDB_LEVELS.get(finding.level)
        if name is None or SEVERITY[finding.level] < SEVERITY[self.min_level]:
            return
        run = self.run if self.run is not None else getattr(self.wandb, "run", None)
        if run is None:
            self.failed.append(finding.id)
            if not self._warned_no_run:
                self._warned_no_run = True
                log.warning("trainproof: no active W&B run (call wandb.init first); %s not posted", finding.id)
            return
        try:
            run.alert(
                title=finding.id[:MAX_TITLE],
                text=alert_text(finding),
                level=getattr(self.wandb.AlertLevel, name),
                wait_duration=self.wait_duration,
            )
        except Exception as e:  # noqa: BLE001 - any W&B failure must stay out of the training loop
            self.failed.append(finding.id)
            log.warning("trainproof: could not post %s as a W&B alert: %s: %s", finding.id, type(e).__name__, e)
            return
        self.posted.append(finding.id)
