"""A console capture whose program stops at the first non-finite loss without printing it
(detectron2, the torchvision references, Keras' TerminateOnNaN): the program's own line is
TP-NAN's evidence; lines that only look like it are not."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainproof.api import judge


def _capture(tmp_path: Path, tail: list[str], points: int = 25, head: list[str] = ()) -> Path:
    lines = list(head)
    for i in range(points):
        it = 19 + 20 * i
        loss = 1.2 * 0.93**i + 0.15 + 0.01 * ((i * 7) % 3)
        lines.append(
            f"[04/12 10:01:43 d2.utils.events]:  eta: 0:05:03  iter: {it}  total_loss: {loss:.4f}  "
            f"loss_cls: {loss / 2:.4f}  time: 0.4100  data_time: 0.0112  lr: 0.003  max_mem: 2634M\n"
        )
    p = tmp_path / "log.txt"
    p.write_text("".join(lines + tail))
    return p


STOPS = {
    "detectron2": [
        "ERROR [04/12 10:03:21 d2.engine.train_loop]: Exception during training:\n",
        "Traceback (most recent call last):\n",
        '  File "detectron2/engine/train_loop.py", line 149, in train\n',
        "FloatingPointError: Loss became infinite or NaN at iteration=519!\n",
        "loss_dict = {'loss_cls': nan, 'loss_box_reg': nan}\n",
        "[04/12 10:03:21 d2.utils.events]:  eta: 0:03:12  iter: 519  total_loss: 0.1617  lr: 0.003\n",
    ],
    "torchvision_references": ["Loss is nan, stopping training\n", "{'loss_ce': nan}\n"],
    "keras_terminate_on_nan": ["Batch 3: Invalid loss, terminating training\n"],
    "exception": ["Traceback (most recent call last):\n", "ValueError: Loss is NaN at step 520\n"],
    # SpeechBrain skips a non-finite batch until its patience runs out, then raises
    "speechbrain": [
        "speechbrain.core - Patience not yet exhausted, ignoring this batch.\n",
        "Traceback (most recent call last):\n",
        '  File "speechbrain/core.py", line 1201, in check_loss_isfinite\n',
        "ValueError: Loss is not finite and patience is exhausted. To debug, wrap `fit()` with autograd's "
        "`detect_anomaly()`, e.g.\n",
    ],
    # MindSpore 2.x's LossMonitor
    "mindspore": ["ValueError: epoch: 3 step: 20. Invalid loss, terminating training.\n"],
}


@pytest.mark.parametrize("name", sorted(STOPS))
def test_the_programs_own_stop_line_fails_tp_nan(tmp_path: Path, name: str) -> None:
    rep = judge(_capture(tmp_path, STOPS[name]))
    f = [x for x in rep.findings if x.id == "TP-NAN"]
    assert rep.verdict.value == "FAIL" and f, rep.ids()
    assert f[0].data["stop_line"] == 26 + STOPS[name].index(
        next(ln for ln in STOPS[name] if "oss" in ln and "Traceback" not in ln and "File" not in ln)
    )
    assert "total_loss" in f[0].evidence


@pytest.mark.parametrize(
    "tail",
    [
        [],
        # a loss scaler's overflow and its give-up are not a NaN loss
        ["FloatingPointError: Minimum loss scale reached (0.0001). Your loss is probably exploding.\n"],
        ["Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0\n"],
        ["UserWarning: loss_scale is inf, reset to 65536\n"],
        # prose about NaN guards in a banner
        ["Config: stop training when the loss is nan: False\n"],
        # SpeechBrain skipped one non-finite batch and trained on (its patience not spent)
        ["speechbrain.core - Loss is nan.\n", "speechbrain.core - Patience not yet exhausted, ignoring this batch.\n"],
        ["UserWarning: grad norm is not finite, skipping this update\n"],
    ],
)
def test_a_healthy_capture_and_lookalike_lines_pass(tmp_path: Path, tail: list[str]) -> None:
    rep = judge(_capture(tmp_path, tail))
    assert rep.verdict.value == "PASS", rep.ids()


def test_a_stop_line_of_an_earlier_shorter_run_is_not_the_judged_runs(tmp_path: Path) -> None:
    # A first attempt that stopped on NaN after 5 points, then a full restart: the longest
    # run is judged, and the stop belongs to the other one.
    head = [
        f"[04/12 09:00:00 d2.utils.events]:  eta: 0:05:03  iter: {19 + 20 * i}  total_loss: {1.3 - i / 50:.4f}  "
        "lr: 0.003\n"
        for i in range(5)
    ] + ["FloatingPointError: Loss became infinite or NaN at iteration=99!\n"]
    rep = judge(_capture(tmp_path, [], head=head))
    assert "TP-NAN" not in rep.ids(), rep.ids()
