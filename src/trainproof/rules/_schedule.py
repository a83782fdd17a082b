"""The run's declared schedule, read from the log's meta (HF max_steps, Coqui epochs)."""
from __future__ import annotations

from ..runlog import RunLog


def scheduled_end(run: RunLog) -> tuple[float | None, str]:
    """The step the run was scheduled to end at, and where the log says so.

    HF's ``max_steps``; else Coqui's epochs x steps-per-epoch counted from the first
    logged step (a fine-tune's global step starts at the pretrained checkpoint's).
    """
    ms = run.meta.get("max_steps")
    if isinstance(ms, (int, float)) and not isinstance(ms, bool) and ms > 0:
        return float(ms), "max_steps"
    ep, spe = run.meta.get("num_train_epochs"), run.meta.get("steps_per_epoch")
    if run.format == "coqui" and isinstance(ep, int) and isinstance(spe, int) and ep > 0 and spe > 0 \
            and run.step_range is not None and "last_epoch" in run.meta:
        done_epochs = int(run.meta["last_epoch"]) + 1
        logged = run.step_range[1] - run.step_range[0]
        per_epoch = logged / max(done_epochs, 1) if done_epochs > 1 else spe
        return run.step_range[0] + per_epoch * ep, "epochs"
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
