"""Kinds of logs read by the text readers (issue 31, "Readers"): llm.c's ``main.log``, loss
lines with no step, HF dicts with no step, OLMo's console, Python ``logging`` captures,
configuration dumps, Keras logs with negative losses. Every log is built here, in the
test, with varied lengths, spacing and noise; each kind has a test that it reads and one
that what only looks like it does not.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest

from trainproof.api import judge, read_runlog
from trainproof.formats import NotALog, detect, open_log
from trainproof.rules.engine import judge_runlog


def write(tmp_path: Path, text: str, name: str = "train.log") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def records(path: Path, fmt: str = "console") -> list[tuple[float | None, dict]]:
    got, recs, _ = open_log(path)
    assert got == fmt
    return [(r.step, r.values) for r in recs]


# --------------------------------------------------------------------------- llm.c main.log


def llmc_log(n: int, val_every: int, hellaswag: bool = False, sep: str = " ") -> tuple[str, list, list]:
    """llm.c's main.log as its logger writes it (``s:%d trl:%.4f lr:%.6f norm:%.2f``,
    ``s:%d tel:%.4f``, ``s:%d eval:%.4f``): the text, the train losses and the val losses."""
    lines, train, val = [], [], []
    for s in range(n):
        if s % val_every == 0 or s == n - 1:
            v = round(4.2 - 0.01 * s, 4)
            val.append((s, v))
            lines.append(f"s:{s}{sep}tel:{v:.4f}\n")
            if hellaswag:
                lines.append(f"s:{s}{sep}eval:{0.25 + 0.001 * s:.4f}\n")
        loss = round(4.0 - 0.012 * s + 0.02 * math.sin(s), 4)
        train.append((s, loss))
        lines.append(
            f"s:{s}{sep}trl:{loss:.4f}{sep}lr:{6e-4 * min(1, (s + 1) / 10):.6f}{sep}norm:{0.3 + 0.01 * (s % 7):.2f}\n"
        )
    return "".join(lines), train, val


@pytest.mark.parametrize(("n", "val_every", "sep"), [(40, 10, " "), (123, 25, " "), (60, 20, "\t")])
def test_llmc_main_log_reads_train_and_val_loss_lr_and_grad_norm(tmp_path: Path, n, val_every, sep) -> None:
    text, train, val = llmc_log(n, val_every, sep=sep)
    run = read_runlog(write(tmp_path, text, "main.log"))
    assert run.format == "console"
    assert run.series["loss"].key == "loss"
    assert list(zip(run.series["loss"].steps.tolist(), run.series["loss"].values.tolist())) == train
    assert list(zip(run.series["eval_loss"].steps.tolist(), run.series["eval_loss"].values.tolist())) == val
    assert run.series["lr"].values[0] == pytest.approx(6e-5)
    assert run.series["grad_norm"].values[:3].tolist() == [0.30, 0.31, 0.32]


def test_llmc_hellaswag_accuracy_is_no_eval_loss(tmp_path: Path) -> None:
    text, _, val = llmc_log(50, 10, hellaswag=True)
    run = read_runlog(write(tmp_path, text, "main.log"))
    assert run.series["eval_loss"].values.tolist() == [v for _, v in val]
    acc = run.series["eval_accuracy"]
    assert acc.values[0] == pytest.approx(0.25) and len(acc) == len(val)


def test_llmc_nan_loss_is_a_value(tmp_path: Path) -> None:
    text = "".join(f"s:{s} trl:{4 - 0.01 * s:.4f} lr:0.000600 norm:0.30\n" for s in range(20))
    text += "s:20 trl:nan lr:0.000600 norm:-nan\n"
    run = read_runlog(write(tmp_path, text, "main.log"))
    assert math.isnan(run.series["loss"].values[-1]) and math.isnan(run.series["grad_norm"].values[-1])


@pytest.mark.parametrize(
    "line",
    [
        "s:10 norm:0.31\n",  # a norm with no loss
        "s:10 trl:3.2 foo:1\n",  # a name llm.c does not write
        "xs:10 trl:3.2\n",
        "s:ten trl:3.2\n",
    ],
)
def test_lines_that_only_look_like_llmc_give_no_llmc_record(tmp_path: Path, line: str) -> None:
    with pytest.raises(NotALog):
        detect(write(tmp_path, line * 30, "main.log"))


def test_norm_is_no_gradient_norm_outside_llmc(tmp_path: Path) -> None:
    text = "".join(f"step {s} loss {3 - 0.01 * s:.3f} norm {0.5 + s:.2f}\n" for s in range(30))
    run = read_runlog(write(tmp_path, text))
    assert "grad_norm" not in run.series and "norm" in run.series


# --------------------------------------------------------------------------- loss lines with no step


@pytest.mark.parametrize(("n", "spacing"), [(3, ":"), (25, ": "), (200, " : ")])
def test_loss_lines_without_a_step_take_the_line_order(tmp_path: Path, n: int, spacing: str) -> None:
    rng = random.Random(n)
    losses = [round(4.0 - 0.01 * i + 0.05 * rng.random(), 4) for i in range(n)]
    lines = []
    for i, v in enumerate(losses):
        if i % 7 == 3:
            lines.append("Saving checkpoint to out/ckpt.pt\n")  # noise between the lines
        lines.append(f"batch loss{spacing}{v}\n")
    run = read_runlog(write(tmp_path, "Loading data...\n" + "".join(lines)))
    s = run.series["loss"]
    assert s.values.tolist() == losses
    assert s.steps.tolist() == [float(i + 1) for i in range(n)]
    assert any("no step in the log: the x axis is the line order" in note for note in run.notes)


def test_stepless_eval_lines_take_the_train_line_before_them(tmp_path: Path) -> None:
    text = ""
    for i in range(12):
        text += f"train loss: {3 - 0.1 * i:.2f}\n"
        if i % 4 == 3:
            text += f"val loss: {3.1 - 0.1 * i:.2f}\n"
    run = read_runlog(write(tmp_path, text))
    assert run.series["loss"].steps.tolist() == [float(i) for i in range(1, 13)]
    assert run.series["eval_loss"].steps.tolist() == [4.0, 8.0, 12.0]


def test_two_stepless_loss_lines_or_prose_are_no_log(tmp_path: Path) -> None:
    with pytest.raises(NotALog):
        detect(write(tmp_path, "batch loss:4.02\nbatch loss:3.98\n", "notes.txt"))
    prose = "We trained it twice.\nThe final loss: 0.35 was fine.\nThen the test loss: 0.41 was worse.\n"
    with pytest.raises(NotALog):
        detect(write(tmp_path, prose * 2, "notes.txt"))


def test_a_log_with_steps_keeps_its_steps_and_gives_no_line_order_note(tmp_path: Path) -> None:
    # Stepless loss lines before the first step line are a warm-up printout, not the axis.
    text = "".join(f"warmup loss: {5 - i * 0.1:.2f}\n" for i in range(5))
    text += "".join(f"step {s} loss {3 - 0.01 * s:.3f}\n" for s in range(0, 300, 10))
    run = read_runlog(write(tmp_path, text))
    assert run.series["loss"].steps.tolist() == [float(s) for s in range(0, 300, 10)]
    assert not any("line order" in n for n in run.notes)


# --------------------------------------------------------------------------- HF dicts without 'step'


def hf_dicts(n: int, with_step: bool) -> str:
    out = []
    for i in range(n):
        d = {"loss": round(2.1 - 0.01 * i, 4), "grad_norm": 0.4, "learning_rate": 2e-5, "epoch": round(i / n, 2)}
        if with_step:
            d["step"] = 10 * (i + 1)
        out.append(f"{i}/{n} [00:0{i % 10}<00:10, 1.2it/s]{d}\n")
    return "".join(out)


@pytest.mark.parametrize("n", [5, 48])
def test_hf_dicts_without_step_are_log_rows_and_say_so(tmp_path: Path, n: int) -> None:
    run = read_runlog(write(tmp_path, hf_dicts(n, with_step=False)))
    assert run.series["loss"].steps.tolist() == [float(i) for i in range(1, n + 1)]
    notes = [x for x in run.notes if "log rows" in x]
    assert len(notes) == 1 and "not training steps" in notes[0]


def test_hf_dicts_with_step_have_training_steps_and_no_rows_note(tmp_path: Path) -> None:
    run = read_runlog(write(tmp_path, hf_dicts(20, with_step=True)))
    assert run.series["loss"].steps.tolist() == [10.0 * (i + 1) for i in range(20)]
    assert not any("log rows" in x for x in run.notes)


# --------------------------------------------------------------------------- OLMo and logging prefixes


#: OLMo's two logging prefixes: the plain handler's tab-separated fields, and its rich
#: handler's bracketed time, padded level and ``[module:line, rank=N]``.
OLMO_PREFIXES = {
    "plain": "2025-12-26 19:17:38.772\tnode-a-01:0\tolmo.train:990\tINFO\t",
    "rich": "[2025-12-26 19:17:38] INFO     [olmo.train:990, rank=0] ",
}


def olmo_log(
    steps: list[int],
    total: int,
    lr_line: bool = True,
    config: bool = True,
    zloss: bool = False,
    tau: float = 300,
    prefix: str = "plain",
) -> str:
    """OLMo's trainer console: a logging prefix (:data:`OLMO_PREFIXES`),
    ``[step=N/T,epoch=0]``, then indented metric lines; a config dump and wandb noise
    around it. ``zloss`` adds ``train/ZLoss``, falling 1e-2 -> 1e-4 over the first fifth
    and then growing tenfold (the logits' log-partition drifting up as the model
    sharpens)."""
    pre = OLMO_PREFIXES[prefix]
    out = ["W1226 19:16:08.325000 138614 torch/distributed/run.py:803] *****\n"]
    if config:
        out.append(
            "2025-12-26 19:16:24.833\tnode-a-01:0\ttrain:98\tINFO\tTrainConfig(run_name='x', seed=6198, "
            "epoch=None, model=ModelConfig(d_model=2048, activation_type='swiglu'), global_train_batch_size=512, "
            "softmax_auxiliary_loss=False, auxiliary_loss_multiplier=0.0001, max_grad_norm=1.0)\n"
        )
    for s in steps:
        loss = 9.0 * math.exp(-s / tau) + 3.5
        out.append(f"{pre}[step={s}/{total},epoch=0]\n")
        out.append(f"    optim/total_grad_norm={0.3 + 5 / s:.4g}\n")
        out.append(f"    train/CrossEntropyLoss={loss:.4g}\n")
        out.append(f"    train/Perplexity={math.exp(loss):,.0f}\n")
        if zloss:
            u = s / total
            z = 1e-2 * math.exp(-u / 0.04) + 1e-4 + (1e-3 * (u - 0.2) / 0.8 if u > 0.2 else 0.0)
            out.append(f"    train/ZLoss={z:.4g}\n")
        if lr_line:
            out.append(f"    optim/learning_rate_group0={4e-4 * min(1, s / 100):.1E}\n")
        out.append("    throughput/device/tokens_per_second=56,434\n")
        out.append("    System/Peak GPU Memory (MB)=114,390\n")
    out.append(f"{pre}Training complete\nwandb: Run summary:\n")
    return "".join(out)


@pytest.mark.parametrize("prefix", sorted(OLMO_PREFIXES))
@pytest.mark.parametrize(("steps", "total"), [(list(range(10, 1001, 10)), 1000), (list(range(100, 2100, 100)), 739328)])
def test_olmo_console_reads_its_steps_loss_lr_and_grad_norm(tmp_path: Path, steps, total, prefix) -> None:
    run = read_runlog(write(tmp_path, olmo_log(steps, total, prefix=prefix)))
    assert run.format == "console"
    assert run.series["loss"].key == "train_cross_entropy_loss"
    assert run.series["loss"].steps.tolist() == [float(s) for s in steps]
    assert run.series["loss"].values[0] == pytest.approx(9.0 * math.exp(-steps[0] / 300) + 3.5, rel=1e-3)
    assert run.series["grad_norm"].key == "optim_total_grad_norm"
    assert run.series["lr"].key == "optim_learning_rate_group0"
    assert run.series["lr"].values[-1] == pytest.approx(4e-4)
    # the logging prefix (host:rank, logger:line) and the config dump give no series
    assert not any(k.startswith(("node", "olmo", "rank")) or "auxiliary" in k for k in run.series)
    assert judge(write(tmp_path, olmo_log(steps, total, prefix=prefix), "again.log")).verdict.value == "PASS"


def test_a_bracketed_step_after_the_level_is_the_message_s_not_a_logger_location(tmp_path: Path) -> None:
    # the logger's location is a dotted module (or a .py file) and its line; ``[step:N]``
    # right after the level is the message's own counter
    text = "".join(
        f"[2025-01-01 10:00:00] INFO     [step:{s}] loss={2 + 3 * math.exp(-s / 100):.4f}\n" for s in range(10, 510, 10)
    )
    run = read_runlog(write(tmp_path, text))
    assert run.series["loss"].steps.tolist()[:3] == [10.0, 20.0, 30.0]
    assert list(run.series) == ["loss"]


@pytest.mark.parametrize("total", [1000, 5000, 30000])
def test_olmo_console_with_a_z_loss_is_judged_on_its_cross_entropy(tmp_path: Path, total: int) -> None:
    # train/ZLoss (one word, zloss, once split) is the router/logit z-loss beside the
    # objective: read as the loss, its late tenfold rise FAILed TP-DIVERGE on a healthy run
    steps = list(range(total // 200, total + 1, total // 200))
    text = olmo_log(steps, total, zloss=True, tau=total / 4)
    run = read_runlog(write(tmp_path, text))
    assert run.series["loss"].key == "train_cross_entropy_loss"
    assert "train_zloss" in run.mapping["loss"]["ignored"]
    assert judge(write(tmp_path, text, "again.log")).verdict.value == "PASS"


def test_a_config_dump_alone_is_no_training_log(tmp_path: Path) -> None:
    text = (
        "Namespace(model='gpt2', lr=0.0003, global_step=0, init_loss_scale=65536, epochs=3, "
        "resume=None, fp16=True, label_smoothing_loss=0.1)\n"
    ) * 5
    with pytest.raises(NotALog):
        detect(write(tmp_path, text))


def test_a_metric_line_with_two_text_settings_is_still_read(tmp_path: Path) -> None:
    text = "".join(f"step={s} loss={3 - 0.01 * s:.3f} mode='train' split='a'\n" for s in range(30))
    run = read_runlog(write(tmp_path, text))
    assert len(run.series["loss"]) == 30


@pytest.mark.parametrize(
    "prefix",
    [
        "2025-04-24 21:17:53,828 - INFO - ",
        "2025-04-24 21:17:53,828 - train - INFO - ",
        "[2025-04-24 21:17:53] INFO: ",
        "2025-04-24T21:17:53.828Z host-7:3 trainer.py:120 INFO ",
    ],
)
def test_python_logging_captures_are_console_logs_not_tables(tmp_path: Path, prefix: str) -> None:
    # Python logging's time stamp holds a comma: every line looks like a row of a table.
    text = ""
    for e in range(1, 13):
        text += f"{prefix}Class distribution: Counter({{3: 7215, 4: 4965, 5: 4830}})\n"
        text += f"{prefix}Class weights: [1.02, 9.40, 1.00]\n"
        text += f"{prefix}Epoch [{e}/50], Train Loss: {2 - 0.05 * e:.4f}, Train Acc: {20 + e}.5%, Val Loss: {2.1 - 0.05 * e:.4f}\n"
    run = read_runlog(write(tmp_path, text, "training.log"))
    assert run.format == "console"
    assert run.series["loss"].values.tolist() == pytest.approx([2 - 0.05 * e for e in range(1, 13)])
    assert run.series["eval_loss"].steps.tolist() == [float(e) for e in range(1, 13)]


def test_a_csv_with_a_time_stamp_column_is_still_a_table(tmp_path: Path) -> None:
    text = "time,step,loss\n" + "".join(f"2025-04-24 21:{i:02d}:00,{i},{3 - 0.1 * i:.2f}\n" for i in range(20))
    run = read_runlog(write(tmp_path, text, "metrics.csv"))
    assert run.format == "csv" and len(run.series["loss"]) == 20


# --------------------------------------------------------------------------- Keras with negative losses


def test_keras_csvlogger_reads_negative_losses_with_their_sign(tmp_path: Path) -> None:
    losses = [-0.5 - 0.1 * i for i in range(15)]
    text = "epoch,loss,val_loss\n" + "".join(f"{i},{v:.4f},{v + 0.05:.4e}\n" for i, v in enumerate(losses))
    run = read_runlog(write(tmp_path, text, "training.log"))
    assert run.format == "csv"
    assert run.series["loss"].values.tolist() == pytest.approx(losses)
    assert np.all(run.series["eval_loss"].values < 0)


@pytest.mark.parametrize(
    "frame",
    [
        "{n}/{n} - 1s - loss: {l:.4f} - val_loss: {v:.4f} - 1s/epoch - 31ms/step\n",  # TF 2 Keras
        "{n}/{n} - 1s - 31ms/step - loss: {l:.4f} - val_loss: {v:.4f}\n",  # Keras 3
        " - 1s - loss: {l:.4e} - val_loss: {v:.4e}\n",  # Keras 2.2
    ],
)
def test_keras_verbose_2_reads_negative_losses_with_their_sign(tmp_path: Path, frame: str) -> None:
    losses = [-1.0 - 0.2 * i for i in range(12)]
    text = "".join(f"Epoch {i + 1}/12\n" + frame.format(n=32, l=v, v=v + 0.1) for i, v in enumerate(losses))
    run = read_runlog(write(tmp_path, text, "keras.txt"))
    assert run.series["loss"].values.tolist() == pytest.approx(losses, rel=1e-3)
    assert run.series["eval_loss"].values.tolist() == pytest.approx([v + 0.1 for v in losses], rel=1e-3)
    assert run.series["loss"].steps.tolist() == [float(i) for i in range(1, 13)]


def test_an_llmc_line_without_a_loss_or_an_eval_gives_no_record(tmp_path: Path) -> None:
    text, train, _ = llmc_log(30, 10)
    text += "s:30 norm:0.31\n"
    run = read_runlog(write(tmp_path, text, "main.log"))
    assert run.series["grad_norm"].steps[-1] == train[-1][0]


@pytest.mark.parametrize("spelling", ["nan", "NaN", "inf", "-Infinity"])
def test_a_stepless_line_whose_other_values_went_non_finite_keeps_its_losses(tmp_path: Path, spelling: str) -> None:
    # PyTorch's DCGAN example prints D(x) and D(G(z)) beside its losses, under keys no pair
    # reads: a line where they went NaN is still a line of values, not prose (helper 85's
    # GAN run that went NaN PASSed: its 81 NaN lines were dropped).
    lines = []
    for i in range(40):
        v = f"{1.2 - 0.005 * i:.4f}" if i < 25 else spelling
        lines.append(f"[{i // 5}/40][{i % 5 * 10 + 9}/50]\tLoss_D: {v}\tLoss_G: {v}\tD(x): {v}\tD(G(z)): {v} / {v}\n")
    run = read_runlog(write(tmp_path, "".join(lines)))
    d = run.series["loss_d"]
    assert d.values.size == 40
    assert np.isfinite(d.values[:25]).all() and not np.isfinite(d.values[25:]).any()
    assert "TP-NAN" in judge_runlog(run).ids()
    # prose around a non-finite word is still prose: no line of it is read
    prose = "".join(f"The loss went {spelling} after we trained it, loss: {3 - 0.1 * i:.2f} then\n" for i in range(12))
    with pytest.raises(NotALog):
        detect(write(tmp_path, prose, "notes.txt"))
