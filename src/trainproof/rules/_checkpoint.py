"""What the log says about its best checkpoint, for the evidence of FAIL/WARN findings."""

from __future__ import annotations

import re

from ..runlog import RunLog
from ._fmt import step as fmt_step

_STEP_IN_PATH = re.compile(r"(?:checkpoint-|best_model_|checkpoint_)(\d+)")


def best_checkpoint(run: RunLog) -> tuple[str, dict]:
    """A sentence naming the best checkpoint the log records, and the same as data.

    Uses HF's ``best_model_checkpoint`` / ``best_global_step`` or Coqui's last ``BEST
    MODEL`` line (both kept in ``meta`` by the readers). Returns ``("", {})`` when the log
    records none. Says only what the log shows: how many steps before the last logged
    step the checkpoint was written.
    """
    ckpt = run.meta.get("best_model_checkpoint")
    bstep = run.meta.get("best_global_step")
    if not isinstance(ckpt, str) or not ckpt:
        return "", {}
    if not isinstance(bstep, (int, float)) or isinstance(bstep, bool):
        m = _STEP_IN_PATH.search(ckpt)
        bstep = float(m.group(1)) if m else None
    data: dict = {"best_checkpoint": ckpt}
    text = f" The log's best checkpoint is {ckpt}"
    if bstep is not None:
        data["best_checkpoint_step"] = float(bstep)
        text += f" (step {fmt_step(bstep)}"
        if run.step_range is not None and run.step_range[1] >= bstep:
            before = run.step_range[1] - float(bstep)
            data["steps_before_end"] = before
            text += f", {fmt_step(before)} steps before the end of the log"
        text += ")"
    return text + ".", data
