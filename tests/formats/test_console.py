"""The console-capture reader (trainproof.formats.console), and gzip across text readers.

Captures are written the way the programs print them: HF Trainer's ``ProgressCallback``
prints ``str(logs)`` (a Python dict repr) into tqdm's progress text, which redraws with
``\\r`` and moves between bars with ``ESC[A``; hand-written loops print ``Epoch …`` lines,
sometimes through ``logging``.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainproof.api import doctor, judge, read_runlog
from trainproof.formats import NotALog, ReadError, console, detect

from conftest import run_cli

UP = "\x1b[A"


def bar(i: int, n: int) -> str:
    pct = int(100 * i / n)
    return f"\r{pct:3d}%|{'█' * (pct // 10):<10}| {i}/{n} [00:{i:02d}<00:{n - i:02d},  1.00it/s]"


def preamble() -> str:
    return (
        "nohup: ignoring input\n"
        "2026-01-17 00:35:19.060261: E external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:9261] "
        "Unable to register cuDNN factory\n"
        "INFO:__main__:Transformers version: 4.57.6\n"
        "trainable params: 20,185,088 || all params: 3,106,123,776 || trainable%: 0.6498\n"
    )


def hf_capture(train: list[dict], evals: dict[int, dict], summary: dict | None, n: int | None = None) -> str:
    """A nohup capture: tqdm redraws with ``\\r``; each log dict is printed into the bar's line."""
    n = n or len(train)
    out = io.StringIO()
    out.write(preamble())
    out.write(bar(0, n))
    for i, logs in enumerate(train, 1):
        out.write(bar(i, n))
        out.write(str(logs) + "\n")
        if i in evals:
            # The evaluation bar is drawn below and erased with cursor-up codes.
            for j in range(3):
                out.write(f"\n{bar(j, 3)}{UP}")
            out.write(f"\n                                   {UP}\n")
            out.write(bar(i, n) + str(evals[i]) + "\n")
    if summary is not None:
        out.write(str(summary) + "\n")
    out.write(bar(n, n) + "\n")
    return out.getvalue()


def physical_lines(text: str) -> list[str]:
    """Lines as the reader numbers them: split at \\n, \\r\\n and lone \\r (universal newlines)."""
    return re.split(r"\r\n|\r|\n", text)


def train_rows(n: int = 6) -> list[dict]:
    return [
        {
            "loss": round(2.5 - 0.2 * i, 4),
            "grad_norm": 0.5 + i / 100,
            "learning_rate": 2e-05 * (i + 1),
            "epoch": round((i + 1) / n, 2),
        }
        for i in range(n)
    ]


# --------------------------------------------------------------------------- HF Trainer dicts


def test_hf_trainer_capture_dicts_inside_progress_text(tmp_path: Path) -> None:
    rows = train_rows(6)
    evals = {
        3: {"eval_loss": 1.9, "eval_runtime": 12.5, "eval_samples_per_second": 8.0, "epoch": 0.5},
        6: {"eval_loss": 1.7, "eval_runtime": 12.4, "eval_samples_per_second": 8.1, "epoch": 1.0},
    }
    summary = {
        "train_runtime": 39860.6586,
        "train_samples_per_second": 1.407,
        "train_steps_per_second": 0.044,
        "train_loss": 1.3628681462714476,
        "epoch": 1.0,
    }
    text = hf_capture(rows, evals, summary)
    assert UP in text and "\r" in text
    p = tmp_path / "nohup.out"
    p.write_text(text, encoding="utf-8")
    run = read_runlog(p)
    assert run.format == "console"
    loss = run.get("loss")
    assert loss.steps.tolist() == [1, 2, 3, 4, 5, 6]  # no 'step' key: the running count of train dicts
    assert loss.values.tolist() == [r["loss"] for r in rows]
    assert run.get("lr").key == "learning_rate"
    assert run.get("lr").values.tolist() == [r["learning_rate"] for r in rows]
    assert run.get("grad_norm").values.tolist() == [r["grad_norm"] for r in rows]
    ev = run.get("eval_loss")
    assert ev.steps.tolist() == [3, 6] and ev.values.tolist() == [1.9, 1.7]  # the last train dict's step
    assert run.get("eval_runtime").values.tolist() == [12.5, 12.4]
    # The summary is meta, not a record: train_loss there is not a point of the loss curve.
    assert run.meta["summary"] == summary
    assert run.records == 8
    lines = physical_lines(text)
    for ln, r in zip(loss.lines.tolist(), rows):
        assert lines[ln - 1].endswith(str(r))
    for ln in ev.lines.tolist():
        assert "{'eval_loss'" in lines[ln - 1]


def test_quoted_numbers_newer_transformers(tmp_path: Path) -> None:
    text = (
        "{'loss': '1.234', 'grad_norm': '0.56', 'learning_rate': '2e-05', 'epoch': '0.1'}\n"
        "{'loss': '1.1', 'grad_norm': '0.5', 'learning_rate': '1.8e-05', 'epoch': '0.2', 'note': 'warmup'}\n"
        "{'eval_loss': '1.05', 'epoch': '0.2'}\n"
    )
    p = tmp_path / "train.log"
    p.write_text(text)
    run = read_runlog(p)
    assert run.get("loss").values.tolist() == [1.234, 1.1]
    assert run.get("lr").values.tolist() == [2e-05, 1.8e-05]
    assert run.get("eval_loss").values.tolist() == [1.05]
    assert "note" not in run.series  # a string that is not a number is absent, not 0


def test_bare_nan_and_inf(tmp_path: Path) -> None:
    text = (
        "{'loss': 1.5, 'grad_norm': 2.0, 'learning_rate': 1e-05, 'epoch': 0.1}\n"
        "{'loss': nan, 'grad_norm': inf, 'learning_rate': 1e-05, 'epoch': 0.2}\n"
        "{'loss': -inf, 'grad_norm': nan, 'learning_rate': 1e-05, 'epoch': 0.3}\n"
        "{'eval_loss': nan, 'epoch': 0.3}\n"
    )
    p = tmp_path / "train.log"
    p.write_text(text)
    run = read_runlog(p)
    loss = run.get("loss").values
    assert loss[0] == 1.5 and np.isnan(loss[1]) and loss[2] == -math.inf
    gn = run.get("grad_norm").values
    assert gn[1] == math.inf and np.isnan(gn[2])
    assert np.isnan(run.get("eval_loss").values[0])


@pytest.mark.parametrize("nan", ["nan", "NaN", "inf", "-inf", "nan.0"])
def test_a_non_finite_value_followed_by_another_pair_is_read_as_the_value(tmp_path: Path, nan: str) -> None:
    # ``loss nan lr 0.01``: the NaN is loss's value, never a word of a name ``loss_nan_lr``.
    lines = [f"epoch 1 step {s} loss {2 - s / 100:.3f} lr 1.00e-02\n" for s in range(10, 110, 10)]
    lines += [f"epoch 1 step {s} loss {nan} lr 1.00e-02\n" for s in range(110, 160, 10)]
    p = tmp_path / "train.log"
    p.write_text("".join(lines))
    run = read_runlog(p)
    loss = run.get("loss").values
    assert loss.size == 15 and not np.isfinite(loss[10:]).any() and np.isfinite(loss[:10]).all()
    assert run.get("lr").values.tolist() == [0.01] * 15
    assert set(run.series) == {"loss", "lr"}  # the epoch and the step make the step axis


def test_hf_dict_captures_appended_after_a_summary_are_separate_runs(tmp_path: Path) -> None:
    # nohup.out of two HF Trainer runs: no 'step' in the dicts, the same seed (the rerun's
    # first losses repeat the first run's), each ending with its train_runtime summary. The
    # longer run is judged alone, never the two merged into one curve.
    def run(n: int, nan_from: int | None) -> str:
        rows = []
        for i in range(n):
            loss = "nan" if nan_from is not None and i >= nan_from else f"'{3.0 - i * 0.05:.3f}'"
            rows.append(f"{{'loss': {loss}, 'grad_norm': '1.0', 'learning_rate': '0.0002', 'epoch': '{i / 10:.2f}'}}\n")
        rows.append(
            "{'train_runtime': '1.5', 'train_samples_per_second': '100', 'train_loss': '2.0', 'epoch': '3.0'}\n"
        )
        return "".join(rows)

    p = tmp_path / "nohup.out"
    p.write_text(run(30, 12) + "Traceback? no: a rerun with the NaN fixed\n" + run(20, None))
    rl = read_runlog(p)
    loss = rl.get("loss").values
    assert loss.size == 30 and np.isnan(loss[12:]).all()  # the first, longer run alone
    assert any("holds 2 runs" in n for n in rl.notes)
    p.write_text(run(20, 12) + run(30, None))
    rl = read_runlog(p)
    assert rl.get("loss").values.size == 30 and np.isfinite(rl.get("loss").values).all()


def test_nan_loss_capture_fails_through_the_cli(tmp_path: Path) -> None:
    rows = train_rows(30)
    for r in rows[-4:]:
        r["loss"] = float("nan")  # str() prints a bare nan, as HF does
    p = tmp_path / "nohup.out"
    p.write_text(hf_capture(rows, {}, None), encoding="utf-8")
    assert "'loss': nan" in p.read_text()
    code, out, err, doc = run_cli("epoch", str(p), "--json")
    assert code == 1
    rep = doc["reports"][0]
    assert rep["format"] == "console" and rep["verdict"] == "FAIL"
    assert next(f for f in rep["findings"] if f["id"] == "TP-NAN")["step"] == 27


def test_step_key_when_present(tmp_path: Path) -> None:
    text = (
        "{'loss': 2.0, 'learning_rate': 1e-4, 'step': 50}\n"
        "{'loss': 1.5, 'learning_rate': 1e-4, 'step': 100}\n"
        "{'eval_loss': 1.7, 'step': 100}\n"
        "{'loss': 1.25, 'learning_rate': 1e-4, 'step': 150}\n"
        "{'eval_loss': 1.6}\n"
    )
    p = tmp_path / "train.log"
    p.write_text(text)
    run = read_runlog(p)
    assert run.get("loss").steps.tolist() == [50, 100, 150]
    assert run.get("eval_loss").steps.tolist() == [100, 150]
    assert "step" not in run.series


def test_literal_eval_never_executes_code(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    text = (
        "{'loss': 2.0, 'epoch': 0.1}\n"
        f"{{'loss': __import__('pathlib').Path({str(marker)!r}).touch(), 'epoch': 0.2}}\n"
        "{'loss': float('nan'), 'epoch': 0.3}\n"
        "{'loss': 1.0, 'epoch': 0.4}\n"
    )
    p = tmp_path / "train.log"
    p.write_text(text)
    run = read_runlog(p)
    assert not marker.exists()
    # The dicts holding calls are not data; the count of train dicts skips them.
    assert run.get("loss").values.tolist() == [2.0, 1.0]
    assert run.get("loss").lines.tolist() == [1, 4]
    assert run.get("epoch").values.tolist() == [0.1, 0.4]


def test_integer_too_large_for_a_float_reads_as_infinity(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_text(
        "{'loss': 1" + "0" * 400 + ", 'epoch': 0.1}\n{'loss': 1.0, 'epoch': 0.2}\n"
        "{'loss': -1" + "0" * 400 + ", 'epoch': 0.3}\n"
    )
    run = read_runlog(p)
    assert run.get("loss").values.tolist() == [math.inf, 1.0, -math.inf]


def test_two_dicts_on_one_line(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_text(
        f"{bar(1, 2)}{{'loss': 2.0, 'epoch': 0.5}}{bar(2, 2)}{{'loss': 1.0, 'epoch': 1.0}}\n".replace("\r", " ")
    )
    run = read_runlog(p)
    assert run.get("loss").values.tolist() == [2.0, 1.0]
    assert run.get("loss").lines.tolist() == [1, 1]


# --------------------------------------------------------------------------- hand-written epoch lines


def test_epoch_slash_total_pipe_loss_lines(tmp_path: Path) -> None:
    lines = ["Using device: cuda", "Loading data..."]
    lines += [f"Epoch {e}/200 | Loss: {0.6924 - e / 1000:.4f}" for e in range(1, 11)]
    lines += ["", "Test Accuracy: 0.81", "Test Loss: 0.45"]
    p = tmp_path / "training.log"
    p.write_text("\n".join(lines) + "\n")
    run = read_runlog(p)
    assert run.format == "console"
    loss = run.get("loss")
    assert loss.steps.tolist() == list(range(1, 11))
    assert loss.values.tolist() == [round(0.6924 - e / 1000, 4) for e in range(1, 11)]
    assert loss.lines.tolist() == list(range(3, 13))
    assert set(run.series) == {"loss"}  # the test block after training is not an epoch line


def test_logging_epoch_lines_with_train_and_val_metrics(tmp_path: Path) -> None:
    lines = ["2025-04-24 21:17:40,001 - INFO - Class distribution: {0: 120, 1: 98}"]
    for e in range(1, 6):
        lines.append(
            f"2025-04-24 21:17:{50 + e},828 - INFO - Epoch [{e}/50], Train Loss: {2.0 - e / 10:.4f}, "
            f"Train Acc: {20 + e:.2f}%, Val Loss: {1.9 - e / 20:.4f}, Val Acc: {17 + e:.2f}%"
        )
    p = tmp_path / "train.log"
    p.write_text("\n".join(lines) + "\n")
    run = read_runlog(p)
    assert run.get("loss").key == "train_loss"
    assert run.get("loss").steps.tolist() == [1, 2, 3, 4, 5]
    assert run.get("loss").values.tolist() == [1.9, 1.8, 1.7, 1.6, 1.5]
    assert run.get("eval_loss").key == "val_loss"
    assert run.get("eval_loss").values.tolist() == [1.85, 1.8, 1.75, 1.7, 1.65]
    assert run.get("train_acc").values.tolist() == [21.0, 22.0, 23.0, 24.0, 25.0]  # the % sign is dropped
    assert run.get("val_acc").values.tolist() == [18.0, 19.0, 20.0, 21.0, 22.0]


def test_restarted_runs_in_one_capture(tmp_path: Path) -> None:
    lines = [f"Epoch [{e}/3], Train Loss: {1.0 + e:.1f}, Val Loss: 2.0" for e in (1, 2, 3)]
    lines += ["Class distribution: {0: 10}"]
    lines += [f"Epoch [{e}/3], Train Loss: {e / 10:.1f}, Val Loss: 1.0" for e in (1, 2)]
    p = tmp_path / "train.log"
    p.write_text("\n".join(lines) + "\n")
    run = read_runlog(p)
    # Two runs are never merged into one curve: the longest (the first, 3 epochs) is judged
    # whole, and a note names both.
    assert run.get("loss").steps.tolist() == [1, 2, 3]
    assert run.get("loss").values.tolist() == [2.0, 3.0, 4.0]
    assert run.get("eval_loss").values.tolist() == [2.0, 2.0, 2.0]
    (note,) = [n for n in run.notes if "runs" in n]
    assert "holds 2 runs" in note and "only run 1, the longest" in note
    assert not any("logged more than once" in n for n in run.notes)


@pytest.mark.parametrize("last", [20, 40, 100])
@pytest.mark.parametrize("first", [40, 80])
@pytest.mark.parametrize("reset", ["step 0", "step 1"])
def test_the_last_run_with_a_curve_is_judged(tmp_path: Path, last: int, first: int, reset: str) -> None:
    # A script run again into one capture (after a fix, a preemption that restarts the
    # counter): the latest attempt is what the capture is about, however much shorter.
    base = 0 if reset == "step 0" else 1
    lines = [f"step {s} loss {3.0 - s / first:.4f}" for s in range(base, base + first)]
    lines += ["Restarting training"]
    lines += [f"step {s} loss {2.0 + 0.1 * s:.4f}" for s in range(base, base + last)]
    p = tmp_path / "train.log"
    p.write_text("\n".join(lines) + "\n")
    run = read_runlog(p)
    assert run.get("loss").values.size == last and run.get("loss").values[0] == pytest.approx(2.0 + 0.1 * base)
    (note,) = [n for n in run.notes if "runs" in n]
    assert "holds 2 runs" in note and "only run 2, the last with a curve to judge" in note


@pytest.mark.parametrize("tail", [7, 12, 20])
def test_a_short_last_attempt_leaves_the_longest_run_judged_and_log_dicts_keep_the_longest(
    tmp_path: Path, tail: int
) -> None:
    # 7 points: no curve; 12 or 20 after 100: a test loop or a one-batch sanity check
    lines = [f"step {s} loss {3.0 - s / 100:.4f}" for s in range(1, 101)]
    lines += ["Running test set"] + [f"step {s} loss {2.0 + s / 100:.4f}" for s in range(1, tail + 1)]
    p = tmp_path / "train.log"
    p.write_text("\n".join(lines) + "\n")
    assert read_runlog(p).get("loss").values.size == 100
    # HF's log dicts carry no step (numbered by row): the end-of-training summary tells
    # their runs apart, and the longest is judged
    d = [f"{{'loss': {3.0 - i / 50:.4f}, 'learning_rate': 1e-05, 'epoch': {i / 10:.2f}}}" for i in range(1, 41)]
    d += ["{'train_runtime': 10.0, 'train_samples_per_second': 1.0, 'train_loss': 2.5, 'epoch': 4.0}"]
    d += [f"{{'loss': {2.0 + i / 50:.4f}, 'learning_rate': 1e-05, 'epoch': {i / 10:.2f}}}" for i in range(1, 11)]
    p.write_text("\n".join(d) + "\n")
    run = read_runlog(p)
    assert run.get("loss").values.size == 40
    assert any("the longest" in n for n in run.notes if "runs" in n)


@pytest.mark.parametrize(
    ("line", "want"),
    [
        ("Epoch 1 Step 200 Loss: 0.5", {"loss": 0.5}),
        ("Epoch 2 | lr 0.001 Loss: 0.4", {"lr": 0.001, "loss": 0.4}),  # a blank is a separator too
        ("epoch 3: loss=0.25 acc=0.9", {"loss": 0.25, "acc": 0.9}),
        ("Epoch 4 - loss: 0.5 - val_loss: 0.4", {"loss": 0.5, "val_loss": 0.4}),
        ("Epoch 5, lr: 1e-4, train/loss: 0.3", {"lr": 1e-4, "train_loss": 0.3}),
    ],
)
def test_epoch_line_pairs(tmp_path: Path, line: str, want: dict) -> None:
    p = tmp_path / "train.log"
    p.write_text(line + "\n")
    run = read_runlog(p, "console")
    got = {s.key: s.values.tolist()[0] for s in run.series.values()}
    assert got == want


def test_epoch_line_without_a_loss_is_not_a_record(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_text("Epoch 1/3 | Loss: 0.9\nEpoch 2/3 starting, lr: 0.01\nEpoch 2/3 | Loss: 0.8\n")
    run = read_runlog(p)
    assert run.records == 2
    # its lr is the next record's: the same epoch, printed before that epoch's loss
    assert run.get("lr").steps.tolist() == run.get("loss").steps.tolist()[1:]
    assert run.get("lr").values.tolist() == [0.01]


def test_values_printed_before_their_step_join_only_that_step(tmp_path: Path) -> None:
    # DeepSpeed prints the step's learning rates (one per parameter group) on a line of
    # their own before the line with its loss
    lines = []
    for s in (10, 20, 30):
        lines.append(f"[Rank 0] step={s}, skipped=0, lr=[{s * 1e-6:.1e}, {s * 1e-6:.1e}], mom=[(0.9, 0.999)]")
        lines.append(f"steps: {s} loss: {10 / s:.4f} iter time (s): 0.5")
    lines.insert(4, "[Rank 0] step=25, skipped=0, lr=[9.9e-05, 9.9e-05], mom=[(0.9, 0.999)]")  # no loss at 25
    p = tmp_path / "ds.log"
    p.write_text("\n".join(lines) + "\n")
    run = read_runlog(p)
    assert run.get("loss").steps.tolist() == [10, 20, 30]
    assert run.get("lr").steps.tolist() == [10, 20, 30]
    assert run.get("lr").values.tolist() == pytest.approx([1e-5, 2e-5, 3e-5])


# --------------------------------------------------------------------------- not a training log


def test_capture_without_training_lines_is_exit_2(tmp_path: Path) -> None:
    text = (
        "INFO 10-06 08:52:33 [__init__.py:241] Automatically detected platform cuda.\n"
        "\x1b[1;36m(EngineCore pid=1)\x1b[0m INFO Loading weights took 2.1 s\n"
        "| Task | Version | Metric | Value |\n|------|---------|--------|-------|\n"
        "| gsm8k | 3 | exact_match | 0.41 |\n"
        "Traceback (most recent call last):\nBrokenPipeError: [Errno 32] Broken pipe\n"
    )
    p = tmp_path / "eval-3489209.out"
    p.write_text(text)
    with pytest.raises(NotALog, match="not a training log"):
        read_runlog(p)
    rep = judge(p)
    assert rep.verdict.value == "NOT-CHECKED" and "not a training log" in rep.error
    code, out, err, _ = run_cli("epoch", str(p))
    assert code == 2
    (line,) = err.strip().splitlines()
    assert "not a training log trainproof can read" in line and "no reader recognises it (text, " in line
    assert "INFO" not in line  # described by its shape, never quoted


def test_console_format_forced_on_a_capture_without_records(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_text("starting\nepoch 1 done\nbye\n")
    run = read_runlog(p, "console")
    assert run.records == 0
    code, _, _, doc = run_cli("epoch", str(p), "--format", "console", "--json")
    assert code == 2 and doc["reports"][0]["findings"][0]["id"] == "TP-NO-RECORDS"


def test_sniff(tmp_path: Path) -> None:
    assert console.sniff(tmp_path / "x", "noise\n 10%|█ | 1/10 {'loss': 1.0, 'epoch': 0.1}\n")
    assert console.sniff(tmp_path / "x", "Epoch 1/5 | Loss: 0.5\n")
    assert not console.sniff(tmp_path / "x", "Epoch 1/5 finished\n{'lr': 0.1}\n")
    assert not console.sniff(tmp_path / "x", "")


# --------------------------------------------------------------------------- fuzz


_piece = st.one_of(
    st.text(max_size=20),
    st.sampled_from(
        [
            "{'loss': ",
            "nan",
            "inf",
            "-inf",
            "'1.5'",
            "}",
            "{",
            ", 'epoch': ",
            "Epoch ",
            "/",
            " | Loss: ",
            "\r",
            "\n",
            UP,
            "1e999",
            "10" * 30,
            "(",
            ")",
            "'step': ",
            "{'eval_loss': ",
            "{'train_runtime': ",
        ]
    ),
    st.floats(allow_nan=True).map(repr),
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(_piece, max_size=40))
def test_arbitrary_console_text_reads_or_raises_read_error(tmp_path: Path, parts: list[str]) -> None:
    p = tmp_path / "train.log"
    p.write_text("".join(parts), encoding="utf-8", errors="surrogatepass")
    for fmt in ("auto", "console"):
        try:
            run = read_runlog(p, fmt)
        except ReadError:
            continue
        for s in run.series.values():
            assert np.all(np.diff(s.steps) > 0)


# --------------------------------------------------------------------------- gzip across text readers


def test_gzip_console_capture(tmp_path: Path) -> None:
    p = tmp_path / "nohup.out.gz"
    p.write_bytes(gzip.compress(hf_capture(train_rows(4), {}, None).encode()))
    assert detect(p) is console
    assert read_runlog(p).get("loss").values.tolist() == [r["loss"] for r in train_rows(4)]


def test_doctor_reads_gzip_logs_of_every_text_format(tmp_path: Path) -> None:
    rows = [{"step": s, "loss": 2.0 - s / 100} for s in range(1, 41)]
    (tmp_path / "a").mkdir()
    jsonl_text = "".join(json.dumps(r) + "\n" for r in rows)
    (tmp_path / "a" / "metrics.jsonl.gz").write_bytes(gzip.compress(jsonl_text.encode()))
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["step", "train_loss"])
    w.writerows([[r["step"], r["loss"]] for r in rows])
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "metrics.csv.gz").write_bytes(gzip.compress(buf.getvalue().encode()))
    coqui_text = "".join(
        f"   --> STEP: {s}/40 -- GLOBAL_STEP: {s}\n     | > loss: {2.0 - s / 100}  (1.0)\n\n" for s in range(1, 41)
    )
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "trainer_0_log.txt.gz").write_bytes(gzip.compress(coqui_text.encode()))
    reports, ignored = doctor(tmp_path)
    got = {Path(r.file).relative_to(tmp_path).as_posix(): r for r in reports}
    assert set(got) == {"a/metrics.jsonl.gz", "b/metrics.csv.gz", "c/trainer_0_log.txt.gz"}
    assert {k: r.format for k, r in got.items()} == {
        "a/metrics.jsonl.gz": "jsonl",
        "b/metrics.csv.gz": "csv",
        "c/trainer_0_log.txt.gz": "coqui",
    }
    for r in got.values():
        assert r.records == 40 and r.error is None and r.judged
    assert not ignored


# --------------------------------------------------------------------------- corpus (skips without ../shared)


@pytest.mark.slow
def test_corpus_hf_nohup_matches_a_direct_parse(shared: Path) -> None:
    import ast

    p = shared / "corpus" / "console" / "console-hf-qwen3-qlora-nohup" / "training.log"
    text = p.read_text(encoding="utf-8")
    want = [ast.literal_eval(m) for m in re.findall(r"\{'loss':[^{}]*\}", text)]
    want_eval = [ast.literal_eval(m) for m in re.findall(r"\{'eval_loss':[^{}]*\}", text)]
    run = read_runlog(p)
    assert run.get("loss").values.tolist() == [float(d["loss"]) for d in want]
    assert run.get("eval_loss").values.tolist() == [float(d["eval_loss"]) for d in want_eval]
    assert run.meta["summary"]["train_runtime"] == 39860.6586


def test_corpus_epoch_lines(shared: Path) -> None:
    p = shared / "corpus" / "console" / "console-epoch-loss-lines" / "training.log"
    want = [float(m) for m in re.findall(r"Epoch \d+/\d+ \| Loss: ([0-9.]+)", p.read_text())]
    run = read_runlog(p)
    assert len(want) == 200
    assert run.get("loss").values.tolist() == want


def test_corpus_eval_only_slurm_output_is_not_a_log(shared: Path) -> None:
    (p,) = (shared / "corpus" / "console" / "console-slurm-vllm-eval-no-train").iterdir()
    code, out, err, doc = run_cli("epoch", str(p), "--json")
    assert code == 2
    assert "not a training log" in doc["error"]


def test_corpus_marian_cost_lines_match_a_direct_parse(shared: Path) -> None:
    """Marian's ``Cost`` at ``Up.`` is the loss; each ``[valid] … cross-entropy`` the eval loss."""
    p = shared / "corpus" / "console" / "console-marian-docgate-diverged" / "train_trans_dual_doc_gate.log"
    text = p.read_text(encoding="utf-8")
    cost = [(float(u), float(c)) for u, c in re.findall(r"\] Ep\. \d+ : Up\. (\d+) : .*?: Cost ([0-9.]+)", text)]
    ce = [float(v) for v in re.findall(r"\[valid\] Ep\. \d+ : Up\. \d+ : cross-entropy : ([0-9.]+)", text)]
    run = read_runlog(p)
    assert list(zip(run.get("loss").steps.tolist(), run.get("loss").values.tolist())) == cost
    assert run.get("eval_loss").values.tolist() == ce


@pytest.mark.slow
def test_corpus_concatenated_keras_runs_are_not_merged(shared: Path) -> None:
    p = shared / "corpus" / "console" / "console-keras-v2-lstm-5runs-concat" / "ReadMe.txt"
    run = read_runlog(p)
    loss = run.get("loss")
    # one 500-epoch run, the longest: the last (100 epochs) logged under a quarter of its curve
    assert loss.steps.tolist() == list(range(1, 501))
    assert bool(np.all(np.diff(loss.values) < 0.5))  # no jump back to a restart's first loss
    assert any(
        "holds 5 runs" in n and "only run 4, the last with a curve to judge (the 1 run(s) after it" in n
        for n in run.notes
    )


# --- HF dict prints: the flat fast path reads what literal_eval reads ------------------------


def _by_literal_eval(text, monkeypatch):
    from trainproof.formats import console

    with monkeypatch.context() as m:
        m.setattr(console, "_flat_dict_values", lambda t: None)
        return console._dict_values(text)


def _same_values(a, b) -> bool:
    import struct

    if a is None or b is None:
        return a is b
    return list(a) == list(b) and all(
        struct.pack("d", a[k]) == struct.pack("d", b[k]) or (math.isnan(a[k]) and math.isnan(b[k])) for k in a
    )


EDGE_DICTS = [
    "{'loss': 3.5040, 'grad_norm': 1.076923, 'learning_rate': 9.999900e-05, 'epoch': 0.0000}",
    "{}",
    "{ }",
    "{'a': -0}",  # the int 0 to literal_eval: +0.0, not -0.0
    "{'a': -0.0}",
    "{'a': +5}",
    "{'a': 007}",  # a SyntaxError in Python: the whole dict is skipped
    "{'a': 00}",
    "{'a': 00.5}",
    "{'a': 00e5}",
    "{'a': 1,}",
    "{'a': 1 'b': 2}",
    "{,'a':1}",
    "{'a':1,,'b':2}",
    "{\"a\": 1.5, 'b': 2}",
    "{'a': 1e999}",
    "{'a': -1e999}",
    "{'a': " + "9" * 400 + "}",  # an int too large for a float: inf
    "{'a': -" + "9" * 400 + "}",
    "{'a': 1_000}",
    "{'a': 0x10}",
    "{'a': True}",
    "{'a': nan}",
    "{'a': 1, 'a': 2}",
    "{'': 3}",
    "{'a':.5}",
    "{'a': 5.}",
    "{'a': 1.5.3}",
    "{'a': 12abc}",
    "{'a' : 1}",
    "{'a':\t1}",
    "{'a': - 1}",
    "{'a\\'b': 1}",
    "{'a': '1.5'}",
    "{'a': 1e5, 'b': 1E-5, 'c': 1e+5}",
    "{'loss': tensor(0.5)}",
]


@pytest.mark.parametrize("text", EDGE_DICTS)
def test_a_flat_dict_reads_as_literal_eval_reads_it(text, monkeypatch):
    from trainproof.formats import console

    assert _same_values(console._dict_values(text), _by_literal_eval(text, monkeypatch))


def test_generated_dicts_read_as_literal_eval_reads_them(monkeypatch):
    import random

    from trainproof.formats import console

    rng = random.Random(0)
    alphabet = "{}'\":,. -+0123456789eEab_\t"
    numbers = ["0", "00", "7", "12", "3.", ".5", "1e3", "1.5e-3", "0.0", "01", "9" * 330]
    for _ in range(3000):
        texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30)))]
        pairs = [
            f"'{rng.choice(['a', 'loss', 'b c', ''])}': {rng.choice(['', '-', '+'])}{rng.choice(numbers)}"
            for _ in range(rng.randint(0, 4))
        ]
        texts.append("{" + ", ".join(pairs) + rng.choice(["}", ",}", " }"]))
        for t in texts:
            assert _same_values(console._dict_values(t), _by_literal_eval(t, monkeypatch)), t


def test_a_trainer_dict_print_takes_the_flat_path():
    from trainproof.formats import console

    assert console._flat_dict_values(EDGE_DICTS[0]) == {
        "loss": 3.504,
        "grad_norm": 1.076923,
        "learning_rate": 9.9999e-05,
        "epoch": 0.0,
    }
    assert console._flat_dict_values("{'a': 007}") is None  # left to literal_eval


def _capture(tmp_path: Path, tail: str, head: str = "") -> Path:
    lines = [f"Step {s}/400 | loss {2 - s / 300:.4f} | lr 1.0e-03\n" for s in range(10, 250, 10)]
    p = tmp_path / "train.log"
    p.write_text(head + "".join(lines) + tail)
    return p


_OOM = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 56, in <module>\n'
    "    loss.backward()\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
)


@pytest.mark.parametrize(
    "tail",
    [
        _OOM,
        "[rank0]: " + _OOM.replace("\n", "\n[rank0]: ", 3),
        _OOM.rsplit("\n", 2)[0] + "\nKeyboardInterrupt\n",
        "Killed\n",
        # killed mid-epoch: the traceback starts on the progress bar's line (tqdm ends a
        # line only when the bar closes), and the bar redraws once more after it
        " 27%|##6       | 160/600 [00:03<00:11, 38.34it/s] 28%|##7       | 165/600 [00:03<00:10, 40.56it/s]"
        + _OOM
        + " 28%|##8       | 169/600 [00:04<00:11, 38.96it/s]\n",
    ],
)
def test_a_capture_that_ends_in_a_traceback_or_a_kill_says_the_run_crashed(tmp_path: Path, tail: str) -> None:
    from trainproof.api import judge

    rep = judge(_capture(tmp_path, tail))
    f = [f for f in rep.findings if f.id == "TP-RUN-CRASHED"]
    assert len(f) == 1 and f[0].level.value == "WARN" and f[0].data["last_step"] == 240


@pytest.mark.parametrize("where", ["before_training", "caught_then_training_went_on", "a_warning_not_an_exception"])
def test_a_traceback_the_run_went_on_after_is_no_crash(tmp_path: Path, where: str) -> None:
    from trainproof.api import judge

    if where == "before_training":  # a failed import retried, then the run
        p = _capture(tmp_path, "", head=_OOM)
    elif where == "caught_then_training_went_on":
        p = _capture(tmp_path, _OOM + "".join(f"Step {s}/400 | loss 1.2 | lr 1.0e-03\n" for s in range(250, 300, 10)))
    else:
        p = _capture(tmp_path, "  warnings.warn(\nUserWarning: the Killed flag is deprecated\n")
    assert "TP-RUN-CRASHED" not in judge(p).ids()


def test_an_epochs_summary_lines_after_its_bracketed_batches_do_not_split_the_run(tmp_path: Path) -> None:
    # deepspeech.pytorch's train.py: "Epoch: [e][i/N]" batch lines, then per epoch a
    # "Training Summary Epoch: [e]" and a "Validation Summary Epoch: [e]" line. The
    # bracket after "Epoch:" is the epoch, not a step counter that went back (the capture
    # read as one run per epoch, and only the last epoch was judged).
    lines = []
    for e in range(1, 5):
        for i in range(1, 101, 20):
            loss = 1800.0 / (e * 5 + i / 20)
            lines.append(
                f"Epoch: [{e}][{i}/100]\tTime 0.312 (0.320)\tData 0.004 (0.005)\tLoss {loss:.4f} ({loss:.4f})\t"
            )
        lines.append(f"Training Summary Epoch: [{e}]\tTime taken (s): 160\tAverage Loss {1800.0 / (e * 5):.3f}\t")
        lines.append(f"Validation Summary Epoch: [{e}]\tAverage WER {80.0 / e:.3f}\tAverage CER {40.0 / e:.3f}\t")
    p = tmp_path / "train.log"
    p.write_text("\n".join(lines) + "\n")
    run = read_runlog(p)
    loss = run.get("loss")
    assert len(loss) == 20 and not any("runs" in n for n in run.notes)
    assert loss.values[0] == pytest.approx(1800.0 / 5.05, rel=1e-4)
    assert np.all(np.diff(loss.steps) > 0)
    # each epoch's validation line is a record of that epoch, after its train steps
    wer = run.get("val_average_wer")
    assert wer is not None and wer.values.tolist() == pytest.approx([80.0, 40.0, 80.0 / 3, 20.0], rel=1e-3)
    assert np.all(np.searchsorted(loss.steps, wer.steps, side="right") == [5, 10, 15, 20])
