"""A loss that stops being a JSON number part-way (issue 32): each form is read as the
number it holds (a numeric string, ``str(tensor)``, ``{"value": x}``) or as absent (``"None"``,
``#N/A``, ``<NA>``, an empty string), never as NaN; where the loss turns absent while the
records go on, TP-LOSS-STOPPED warns, in a log of step and loss alone too."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from trainproof.api import judge, read_runlog
from trainproof.findings import Level
from trainproof.formats._values import is_absent, string_number

STEPS = 60
SWITCH = 30  # the record from which the loss is written in the form under test


def _loss(i: int) -> float:
    return 2.0 * math.exp(-i / 20) + 0.5


NUMBER_FORMS = {
    "numeric-string": lambda v: f"{v:.6f}",
    "tensor": lambda v: f"tensor({v:.6f})",
    "tensor-cuda-grad": lambda v: f"tensor({v:.6f}, device='cuda:0', grad_fn=<NllLossBackward0>)",
    "numpy-repr": lambda v: f"np.float32({v:.6f})",
}
ABSENT_FORMS = {"None": "None", "#N/A": "#N/A", "<NA>": "<NA>", "NA": "NA", "empty": ""}


def _jsonl(path: Path, form) -> Path:
    rows = [{"step": 10 * i, "loss": _loss(i) if i < SWITCH else form(_loss(i))} for i in range(STEPS)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _csv(path: Path, form) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["step", "loss"])
        for i in range(STEPS):
            w.writerow([10 * i, repr(_loss(i)) if i < SWITCH else form(_loss(i))])
    return path


def _stopped(rep) -> dict | None:
    f = next((f for f in rep.findings if f.id == "TP-LOSS-STOPPED"), None)
    return None if f is None else f.data


@pytest.mark.parametrize("form", list(NUMBER_FORMS), ids=list(NUMBER_FORMS))
@pytest.mark.parametrize("writer", [_jsonl, _csv], ids=["jsonl", "csv"])
def test_a_number_in_another_form_is_the_number(tmp_path: Path, form: str, writer) -> None:
    p = writer(tmp_path / ("log.jsonl" if writer is _jsonl else "log.csv"), NUMBER_FORMS[form])
    loss = read_runlog(p).get("loss")
    assert len(loss) == STEPS
    assert loss.values.tolist() == pytest.approx([_loss(i) for i in range(STEPS)], rel=1e-5)
    rep = judge(p)
    assert _stopped(rep) is None and rep.verdict == Level.PASS


@pytest.mark.parametrize("form", list(ABSENT_FORMS), ids=list(ABSENT_FORMS))
@pytest.mark.parametrize("writer", [_jsonl, _csv], ids=["jsonl", "csv"])
def test_a_missing_value_word_is_absent_and_the_stop_warned(tmp_path: Path, form: str, writer) -> None:
    # A log of step and loss alone: nothing but the held-empty records shows that it went on.
    p = writer(tmp_path / ("log.jsonl" if writer is _jsonl else "log.csv"), lambda v: ABSENT_FORMS[form])
    loss = read_runlog(p).get("loss")
    assert len(loss) == SWITCH  # absent, not NaN
    rep = judge(p)
    data = _stopped(rep)
    assert data is not None, [f.id for f in rep.findings]
    assert data["step"] == 10 * (SWITCH - 1) and data["last_step"] == 10 * (STEPS - 1)
    assert data["held_empty"] == STEPS - SWITCH
    assert "TP-NAN" not in {f.id for f in rep.findings}
    assert rep.verdict == Level.WARN


def test_wrapped_value_object_is_its_value(tmp_path: Path) -> None:
    p = _jsonl(tmp_path / "log.jsonl", lambda v: {"value": v})
    run = read_runlog(p)
    loss = run.get("loss")
    assert len(loss) == STEPS and loss.key == "loss"
    assert loss.values.tolist() == pytest.approx([_loss(i) for i in range(STEPS)])
    assert "loss/value" not in run.series
    assert judge(p).verdict == Level.PASS


def test_wrapped_null_is_absent(tmp_path: Path) -> None:
    p = _jsonl(tmp_path / "log.jsonl", lambda v: {"value": None})
    rep = judge(p)
    assert _stopped(rep) is not None and rep.verdict == Level.WARN


def test_console_prints_of_tensors_are_read(tmp_path: Path) -> None:
    lines = [
        f"step {10 * i} loss: tensor({_loss(i):.4f}, device='cuda:0', grad_fn=<NllLossBackward0>)" for i in range(STEPS)
    ]
    p = tmp_path / "train.log"
    p.write_text("\n".join(lines) + "\n")
    loss = read_runlog(p).get("loss")
    assert loss.steps.tolist() == [10.0 * i for i in range(STEPS)]
    assert loss.values.tolist() == pytest.approx([_loss(i) for i in range(STEPS)], abs=1e-4)


def test_console_dicts_with_tensors_are_read(tmp_path: Path) -> None:
    lines = [
        f"{{'loss': tensor({_loss(i):.4f}, device='cuda:0'), 'learning_rate': 2e-05, 'epoch': {i / 10}, "
        f"'step': {10 * i}}}"
        for i in range(STEPS)
    ]
    p = tmp_path / "nohup.out"
    p.write_text("\n".join(lines) + "\n")
    loss = read_runlog(p).get("loss")
    assert len(loss) == STEPS
    assert loss.values.tolist() == pytest.approx([_loss(i) for i in range(STEPS)], abs=1e-4)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("0.53", 0.53),
        (" -1e-3 ", -1e-3),
        ("tensor(0.53)", 0.53),
        ("tensor(0.5300, device='cuda:0', grad_fn=<AddBackward0>)", 0.53),
        ("tf.Tensor(0.53, shape=(), dtype=float32)", 0.53),
        ("np.float64(0.53)", 0.53),
        ("tensor(nan)", "nan"),
        ("nan", "nan"),
        ("7e123456", None),  # a hexadecimal id, not 7 x 10^123456
        ("None", None),
        ("loss", None),
        ("tensor([0.5, 0.6])", None),
    ],
)
def test_string_number(text: str, want) -> None:
    got = string_number(text)
    if want == "nan":
        assert got is not None and math.isnan(got)
    else:
        assert got == want


def test_absent_words() -> None:
    for s in ("None", "none", "null", "NA", "<NA>", "#N/A", "n/a", "", "  "):
        assert is_absent(s), s
    for s in ("nan", "0", "loss", "NaN"):
        assert not is_absent(s), s


@pytest.mark.parametrize("word", ["None", "null", "N/A"])
@pytest.mark.parametrize("extra", ["", " lr: 0.001"], ids=["step-and-loss", "with-lr"])
def test_console_loss_printed_as_none_is_a_stop(tmp_path: Path, word: str, extra: str) -> None:
    lines = [f"step {10 * i} loss: {_loss(i) if i < SWITCH else word}{extra}" for i in range(STEPS)]
    p = tmp_path / "train.log"
    p.write_text("\n".join(lines) + "\n")
    assert len(read_runlog(p).get("loss")) == SWITCH
    rep = judge(p)
    data = _stopped(rep)
    assert data is not None and data["held_empty"] == STEPS - SWITCH
    assert rep.verdict == Level.WARN
