"""The run's declared schedule, read from the log's meta (HF max_steps, Coqui epochs)."""

from __future__ import annotations

import numpy as np

from ..runlog import RunLog


def declared_max_steps(run: RunLog) -> float | None:
    """HF's ``max_steps`` from the log's meta when it is a positive number, else ``None``."""
    ms = run.meta.get("max_steps")
    return float(ms) if isinstance(ms, (int, float)) and not isinstance(ms, bool) and ms > 0 else None


def scheduled_end(run: RunLog) -> tuple[float | None, str]:
    """The step the run was scheduled to end at, and where the log says so.

    HF's ``max_steps``; else, for Coqui, the last logged step plus the epochs still to
    run (``EPOCH: e/E``) at its steps per epoch (``STEP: i/n``).
    """
    ms = declared_max_steps(run)
    if ms is not None:
        return ms, "max_steps"
    ep, spe = run.meta.get("num_train_epochs"), run.meta.get("steps_per_epoch")
    last_epoch = run.meta.get("last_epoch")
    if (
        run.format == "coqui"
        and isinstance(ep, int)
        and isinstance(spe, int)
        and ep > 0
        and spe > 0
        and isinstance(last_epoch, int)
        and run.step_range is not None
    ):
        # The global step counts optimizer steps (one per batch); the epochs still to run
        # after the last logged one, at the log's steps per epoch. A resumed or fine-tuned
        # run starts its log at a later epoch and a large global step: both are read as
        # logged, not assumed to start at 0.
        remaining = max(ep - last_epoch - 1, 0) * spe
        return float(int(run.step_range[1] + remaining)), "epochs"
    return None, ""


def fraction_ran(run: RunLog) -> tuple[float | None, float | None, str]:
    """``(fraction of the scheduled run the log covers, scheduled end, source)``."""
    end, source = scheduled_end(run)
    if end is None or run.step_range is None:
        return None, end, source
    if source == "epochs":
        done = (int(run.meta["last_epoch"]) + 1) / int(run.meta["num_train_epochs"])
        return done, end, source
    return run.step_range[1] / end, end, source


def reached_declared_end(run: RunLog) -> float | None:
    """HF's ``max_steps`` when the log reaches it (its last step within 2% of it, at least
    one step: HF logs every ``logging_steps``, so the last log may sit short of the end);
    ``None`` when the log declares no end or stops before it."""
    end = declared_max_steps(run)
    if end is None or run.step_range is None:
        return None
    return end if run.step_range[1] >= end - max(1.0, 0.02 * end) else None


def still_warming_up(lr: np.ndarray, rising_points: int) -> bool:
    """True when the run is still in its warm-up: the last ``rising_points`` finite
    learning rates strictly increase, the learning rate never fell, it began rising
    within the first 10% of the logged points (at the latest the second), and it never
    held one value for more than 10% of them since.

    Schedules are deterministic, so two increases in a row are warm-up, not noise; a run
    judged then has not yet trained at its intended learning rate. A warm-up starts the
    run: a learning rate that held or decayed and then climbs (a schedule that restarts
    high, a rate multiplied up by a plateau-based scheduler gone wrong) is not a warm-up,
    and the rules that wait for the warm-up judge it.
    """
    tail = lr[-rising_points:]
    if not (tail.size >= max(2, rising_points) and np.all(np.diff(tail) > 0)):
        return False
    d = np.diff(lr)
    if np.any(d < 0):
        return False
    first_rise = int(np.argmax(d > 0))
    if first_rise > max(1, lr.size // 10):
        return False
    # ... and it kept rising: a rate that reached a level, held it for a tenth of the run
    # and climbs again (a scheduler's sign bug, a plateau scheduler multiplying it up) has
    # ended its warm-up, however it began.
    held = np.flatnonzero(d[first_rise:] > 0)
    return not held.size or int(np.max(np.diff(held, prepend=held[0]))) <= max(1, lr.size // 10)
