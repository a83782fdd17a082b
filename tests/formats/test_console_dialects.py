"""Trainer printouts read by the console reader's one tokenizer (trainproof.formats.console).

Each dialect is written the way its program prints it, as a list of *units* (the lines of
one logged point: a Keras epoch is its header and its progress frames), with the records the
reader must give for it. A hypothesis test puts noise lines (banners, warnings, tracebacks,
progress bars, ANSI codes) between the units and checks that the records do not change.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainproof.api import read_runlog
from trainproof.formats import NotALog, console, detect, open_log

Unit = list[str]


def records(path: Path) -> list[tuple[float | None, dict]]:
    """``(step, values)`` of every record the reader gives, and its format must be console."""
    fmt, recs, _ = open_log(path)
    assert fmt == "console"
    return [(r.step, r.values) for r in recs]


def write(tmp_path: Path, units: list[Unit], name: str = "train.log") -> Path:
    p = tmp_path / name
    p.write_text("".join("".join(u) for u in units), encoding="utf-8")
    return p


# --------------------------------------------------------------------------- the dialects


def nanogpt() -> tuple[list[Unit], list]:
    units, want = [], []
    for i in range(0, 60, 10):
        loss = round(4.0 - i / 40, 4)
        units.append([f"iter {i}: loss {loss:.4f}, time 41.23ms, mfu 5.21%\n"])
        want.append((i, {"loss": loss, "mfu": 5.21}))
    units.append(["step 60: train loss 2.4103, val loss 2.5012\n"])
    want.append((60, {"train_loss": 2.4103, "val_loss": 2.5012}))
    return units, want


def step_forms() -> tuple[list[Unit], list]:
    units, want = [], []
    for i in range(1, 4):
        units.append([f"step {i * 100}: loss {3.2 - i / 10:.2f}\n"])
        want.append((i * 100, {"loss": round(3.2 - i / 10, 2)}))
    for i in range(4, 7):
        units.append([f"step={i * 100} loss={3.2 - i / 10:.2f}\n"])
        want.append((i * 100, {"loss": round(3.2 - i / 10, 2)}))
    for i in range(7, 10):
        units.append([f"Step {i * 100}/5000 | Loss: {3.2 - i / 10:.2f}\n"])
        want.append((i * 100, {"loss": round(3.2 - i / 10, 2)}))
    return units, want


def keras2() -> tuple[list[Unit], list]:
    units, want = [], []
    for e in range(1, 5):
        frames = "".join(
            f"\r {b}/10 [{'=' * b}>{'.' * (10 - b)}] - ETA: 1s - loss: {9 - b / 10:.4f} - accuracy: 0.5000"
            for b in range(1, 10)
        )
        loss, val = round(1.0 / e, 4), round(1.1 / e, 4)
        summary = (
            f"\r10/10 [==============================] - 3s 10ms/step - loss: {loss:.4f} - accuracy: 0.9000 "
            f"- val_loss: {val:.4f} - val_accuracy: 0.8000\n"
        )
        units.append([f"Epoch {e}/4\n", frames, summary])
        want.append((e, {"loss": loss, "accuracy": 0.9, "val_loss": val, "val_accuracy": 0.8}))
    return units, want


def keras2_verbose2() -> tuple[list[Unit], list]:
    units, want = [], []
    for e in range(1, 5):
        loss = round(3.0 - e / 4, 4)
        units.append(
            [f"Epoch {e}/4\n", f"128/128 - 0s - loss: {loss:.4f} - accuracy: 0.1463 - 358ms/epoch - 3ms/step\n"]
        )
        want.append((e, {"loss": loss, "accuracy": 0.1463}))
    return units, want


def keras_checkpoint_messages() -> tuple[list[Unit], list]:
    # ModelCheckpoint's message before the epoch's line: "improved from inf to 1.1" is prose,
    # not an eval loss of inf (a healthy run once FAILed TP-NAN-EVAL on it).
    units, want, best = [], [], "inf"
    for e in range(1, 5):
        loss, val = round(1.2 - e / 10, 4), round(1.1 - e / 10, 4)
        units.append(
            [
                f"Epoch {e}/4\n",
                f"Epoch {e}: val_loss improved from {best} to {val:.5f}, saving model to best.keras\n",
                f"32/32 - 0s - 6ms/step - loss: {loss:.4f} - val_loss: {val:.4f}\n",
            ]
        )
        want.append((e, {"loss": loss, "val_loss": val}))
        best = f"{val:.5f}"
    return units, want


def fastai() -> tuple[list[Unit], list]:
    # fastai's epoch table: blank-separated columns under a header, its time column no number.
    units, want = [["epoch     train_loss  valid_loss  accuracy  time    \n"]], []
    for e in range(4):
        tl, vl, acc = round(1.0 - e / 5, 6), round(0.7 - e / 10, 6), round(0.8 + e / 50, 6)
        units.append([f"{e:<9} {tl:<11.6f} {vl:<11.6f} {acc:<9.6f} 00:01     \n"])
        want.append((e, {"train_loss": tl, "valid_loss": vl, "accuracy": acc}))
    return units, want


def keras3() -> tuple[list[Unit], list]:
    units, want = [], []
    for e in range(1, 5):
        frames = "".join(
            f"\r\x1b[1m {b}/10\x1b[0m \x1b[32m{'━' * b}\x1b[0m\x1b[37m{'━' * (10 - b)}\x1b[0m "
            f"\x1b[1m0s\x1b[0m 5ms/step - accuracy: 0.5000 - loss: {9 - b / 10:.4f}"
            for b in range(1, 11)
        )
        loss, val = round(1.0 / e, 4), round(1.2 / e, 4)
        summary = (
            f"\r\x1b[1m10/10\x1b[0m \x1b[32m━━━━━━━━━━━━━━━━━━━━\x1b[0m\x1b[37m\x1b[0m \x1b[1m3s\x1b[0m 10ms/step "
            f"- accuracy: 0.9000 - loss: {loss:.4f} - val_accuracy: 0.8000 - val_loss: {val:.4f}\n"
        )
        units.append([f"Epoch {e}/4\n", frames, summary])
        want.append((e, {"accuracy": 0.9, "loss": loss, "val_accuracy": 0.8, "val_loss": val}))
    return units, want


def lightning() -> tuple[list[Unit], list]:
    units, want = [], []
    for e in range(2):  # Lightning counts epochs from 0
        for b in range(1, 5):
            loss = round(2 - e / 10 - b / 100, 3)
            units.append(
                [
                    f"\rEpoch {e}:  {b * 25}%|{'█' * b}{' ' * (4 - b)}| {b * 25}/100 "
                    f"[00:10<00:12, 8.50it/s, loss={loss}, v_num=0]"
                ]
            )
            want.append((e * 100 + b * 25, {"loss": loss, "v_num": 0.0}))
    units[-1].append("\n")
    return units, want


def lightning_tqdm_redraws() -> tuple[list[Unit], list]:
    """Lightning's TQDMProgressBar as a capture holds it: every position drawn twice (the
    count moved on with the step before's postfix, then its own), the bar reset to 0/N at
    each epoch's end and at the next one's start, and the validation values carried in
    every later postfix until the next validation; a NaN printed as ``nan.0``."""
    units, want = [], []
    n = 4
    post = "v_num=0"
    val = None  # the last validation's loss, carried in the postfix from the second epoch on
    for e in range(3):
        for b in range(1, n + 1):
            loss = "nan.0" if (e, b) == (2, 3) else str(round(2 - e / 10 - b / 100, 3))
            frame = f"\rEpoch {e}:  {b * 25}%|{'█' * b}{' ' * (n - b)}| {b}/{n} [00:10<00:12, 8.50it/s, "
            stale = post
            post = f"v_num=0, train_loss={loss}" + (f", val_loss={val}" if e else "")
            units.append([frame + stale + "]", frame + post + "]"])
            want.append(
                (e * n + b, {"v_num": 0.0, "train_loss": float(loss.replace(".0", "") if "nan" in loss else loss)})
            )
        val = round(1.5 - e / 10, 3)
        post = f"v_num=0, train_loss={loss}, val_loss={val}"
        units.append(
            [
                "\rValidation DataLoader 0: 100%|████| 2/2 [00:00<00:00, 90.10it/s]",
                f"\rEpoch {e}: 100%|████| {n}/{n} [00:10<00:00, 8.50it/s, {post}]",
                f"\rEpoch {e}:   0%|    | 0/{n} [00:00<?, ?it/s, {post}]",
                f"\rEpoch {e + 1}:   0%|    | 0/{n} [00:00<?, ?it/s, {post}]",
            ]
        )
        want[-1][1]["val_loss"] = val
    units[-1].append("\n")
    return units, want


def tqdm_postfix_bars() -> tuple[list[Unit], list]:
    """A plain loop's tqdm bar with ``set_postfix(loss=...)`` and no epoch in its
    description, one bar per epoch (``Training: 45%|██| 9/20 [..., loss=0.5]``): the position
    is the step, counted on when the next epoch's bar starts again."""
    units, want = [], []
    n = 20
    for e in range(3):
        for b in range(2, n + 1, 6):
            loss = round(2 - e / 5 - b / 100, 4)
            units.append(
                [f"\rTraining: {100 * b // n:3d}%|{'█' * (b // 4)}| {b}/{n} [00:01<00:01, 9.50it/s, loss={loss}]"]
            )
            want.append((e * n + b, {"loss": loss}))
        units[-1].append("\n")
    return units, want


def nested_tqdm() -> tuple[list[Unit], list]:
    """An outer ``epochs`` bar carrying the last validation loss in its postfix, around one
    inner ``Epoch N`` bar per epoch with the train loss: the outer bar's position counts
    epochs, not steps, and a bar with no train loss in its postfix is not read (a
    validation bar's postfix is a running partial sum)."""
    units, want = [], []
    n = 4
    units.append(["\repochs:   0%|          | 0/3 [00:00<?, ?it/s]\n"])
    for e in range(3):
        for b in range(1, n + 1):
            loss = round(2 - e / 5 - b / 50, 3)
            units.append([f"\rEpoch {e}: {25 * b:3d}%|{'█' * b}| {b}/{n} [00:00<00:00, 90.1it/s, loss={loss}]\x1b[A"])
            want.append((e * n + b, {"loss": loss}))
        val = round(1.9 - e / 5, 3)
        units.append(
            [f"\repochs: {33 * (e + 1):3d}%|{'█' * (e + 1)}| {e + 1}/3 [00:01<00:02, 1.2it/s, val_loss={val}]\n"]
        )
    return units, want


def pytorch_examples() -> tuple[list[Unit], list]:
    units, want = [], []
    for e in (1, 2):
        for b in (200, 400):
            loss = round(6 - e / 10 - b / 10000, 2)
            units.append(
                [
                    f"| epoch {e:3d} | {b:5d}/ 2983 batches | lr 20.00 | ms/batch 45.12 | loss {loss:5.2f} | "
                    f"ppl {math.exp(loss):8.2f}\n"
                ]
            )
            want.append(
                ((e - 1) * 2983 + b, {"lr": 20.0, "ms_batch": 45.12, "loss": loss, "ppl": round(math.exp(loss), 2)})
            )
        units.append(
            [
                "-" * 89 + "\n",
                f"| end of epoch {e:3d} | time: 50.00s | valid loss  5.58 | valid ppl   265.00\n",
                "-" * 89 + "\n",
            ]
        )
        want.append(((e - 1) * 2983 + 400, {"time": 50.0, "valid_loss": 5.58, "valid_ppl": 265.0}))
    return units, want


def pytorch_examples_imagenet() -> tuple[list[Unit], list]:
    # The ImageNet script's ProgressMeter: each meter's value, then its running average in
    # brackets; the epoch and the batch position in brackets; validation batches ("Test:")
    # and the epoch's " * Acc@1" summary are no train steps. The batch index is 0-based: the
    # line after batch i is step i + 1 of its epoch. The summary ends an evaluation: it joins
    # the last train step with its accuracies and the loss meter's running average at the
    # last validation line printed.
    units, want = [], []
    for e in (0, 1):
        for i in (0, 10, 20):
            loss = round(1.4 - e / 5 - i / 100, 4)
            units.append(
                [
                    f"Epoch: [{e}][{i:3d}/100]\tTime  0.012 ( 0.015)\tData  0.001 ( 0.001)\t"
                    f"Loss {loss:.4e} ({loss + 0.1:.4e})\tAcc@1  59.38 ( 33.24)\tAcc@5 100.00 (100.00)\n"
                ]
            )
            want.append((e * 100 + i + 1, {"time": 0.012, "data": 0.001, "loss": loss}))
        units.append(
            [
                "Test: [ 0/20]\tTime  0.004 ( 0.004)\tLoss 3.1000e-01 (3.1000e-01)\tAcc@1  90.62 ( 90.62)\n",
                "Test: [10/20]\tTime  0.004 ( 0.004)\tLoss 2.9000e-01 (3.0000e-01)\tAcc@1  93.75 ( 92.19)\n",
                " * Acc@1 92.500 Acc@5 100.000\n",
            ]
        )
        want[-1][1].update({"val_loss": 0.3, "val_acc@1": 92.5, "val_acc@5": 100.0})
    return units, want


def fairseq() -> tuple[list[Unit], list]:
    units, want = [], []
    for e in (1, 2):
        for k in (1, 2):
            u = (e - 1) * 281 + k * 100
            loss = round(5 - u / 200, 3)
            units.append(
                [
                    f"2025-10-14 15:46:03 | INFO | train_inner | epoch {e:03d}:    {k * 100} / 281 loss={loss}, "
                    f"ppl=24.45, wps=3487.8, ups=56.12, num_updates={u}, lr=0.001, gnorm=1.574, train_wall=2, wall=3\n"
                ]
            )
            want.append(
                (
                    u,
                    {
                        "loss": loss,
                        "ppl": 24.45,
                        "wps": 3487.8,
                        "ups": 56.12,
                        "lr": 0.001,
                        "gnorm": 1.574,
                        "train_wall": 2.0,
                        "wall": 3.0,
                    },
                )
            )
        u = e * 281
        units.append(
            [
                f"2025-10-14 15:46:12 | INFO | valid | epoch {e:03d} | valid on 'valid' subset | loss {3 - e / 10} "
                f"| nll_loss 2.9 | ppl 8.21 | num_updates {u} | best_loss {3 - e / 10}\n"
            ]
        )
        want.append((u, {"val_loss": 3 - e / 10, "val_nll_loss": 2.9, "val_ppl": 8.21}))
        # the end-of-epoch line restates the epoch's mean (Hydra-era and older forms): no
        # point of the per-interval curve above
        units.append(
            [
                "2025-10-14 15:46:12 | INFO | fairseq_cli.train | end of epoch 1 (average epoch stats below)\n",
                f"2025-10-14 15:46:12 | INFO | train | epoch {e:03d} | loss {4 - e / 10} | num_updates {u}\n"
                if e == 1
                else f"| epoch {e:03d} | loss {4 - e / 10} | nll_loss 3.9 | num_updates {u} | lr 0.001\n",
            ]
        )
    return units, want


def test_fairseq_epoch_means_are_the_curve_where_no_interval_is_logged(tmp_path):
    # a log interval longer than an epoch: fairseq prints only the end-of-epoch lines, whose
    # means are then the train loss's only points
    lines = []
    for e in range(1, 6):
        u = e * 281
        lines.append(f"2025-10-14 15:46:12 | INFO | fairseq_cli.train | end of epoch {e} (average epoch stats below)\n")
        lines.append(f"2025-10-14 15:46:12 | INFO | train | epoch {e:03d} | loss {4 - e / 10:.1f} | num_updates {u}\n")
    got = records(write(tmp_path, [lines]))
    assert [(s, v["loss"]) for s, v in got] == [(e * 281, round(4 - e / 10, 1)) for e in range(1, 6)]


def yolov5_results_txt() -> tuple[list[Unit], list]:
    # YOLOv5's header-less results.txt (before v6): epoch/last, GPU memory, 13 numbers; the
    # losses go NaN from epoch 3 as a run's do when its losses overflow
    names = (
        "train/box_loss",
        "train/obj_loss",
        "train/cls_loss",
        "train/total_loss",
        "labels",
        "img_size",
        "metrics/precision",
        "metrics/recall",
        "metrics/mAP_0.5",
        "metrics/mAP_0.5:0.95",
        "val/box_loss",
        "val/obj_loss",
        "val/cls_loss",
    )
    units, want = [], []
    for e in range(5):
        box, obj, cls = (0.12 - e / 100, 0.055, 0.038) if e < 3 else (math.nan,) * 3
        row = (box, obj, cls, box + obj + cls, 75, 640, 0.05 * e, 0.02 * e, 0.04 * e, 0.02 * e, 0.09, 0.035, 0.026)
        cells = "".join("%10.4g" % x for x in row)
        units.append(["%10s%10s" % (f"{e}/4", "3.41G" if e else "0G") + cells + "\n"])
        want.append((e, {"epoch": float(e), **{k: float("%.4g" % x) for k, x in zip(names, row)}}))
    return units, want


@pytest.mark.parametrize(
    "row",
    [
        # no G after the memory: a profiler's table
        "{e:>10}{m:>10}{a:10.4g}{b:10.4g}{c:10.4g}{t:10.4g}{n:10d}{s:10d}" + "{x:10.4g}" * 7,
        # fractions where YOLOv5 counts labels and pixels
        "{e:>10}{m:>9}G{a:10.4g}{b:10.4g}{c:10.4g}{t:10.4g}{x:10.4g}{x:10.4g}" + "{x:10.4g}" * 7,
        # a fourth column that is no sum of the three before it
        "{e:>10}{m:>9}G{a:10.4g}{b:10.4g}{c:10.4g}{x:10.4g}{n:10d}{s:10d}" + "{x:10.4g}" * 7,
    ],
)
def test_a_table_shaped_like_yolov5_results_is_not_read_as_one(tmp_path, row):
    # a benchmark's table: a k/N first column, then 14 numbers, growing down the file
    lines = []
    for i in range(40):
        a, b, c = 0.1 + i / 100, 0.05 + i / 50, 0.03
        lines.append(
            row.format(e=f"{i}/39", m=f"{1 + i / 10:.3g}", a=a, b=b, c=c, t=a + b + c, n=75 + i, s=640, x=0.5 + i)
            + "\n"
        )
    p = write(tmp_path, [lines], "bench.txt")
    with pytest.raises(NotALog):
        open_log(p)


def test_fairseq_tqdm_epoch_means_are_no_points_beside_its_bars(tmp_path):
    # --log-format tqdm: the bar's postfix holds the per-interval values; the end-of-epoch
    # line restates the epoch's mean
    lines = []
    for e in (1, 2):
        for k in (1, 2):
            u = (e - 1) * 200 + k * 100
            lines.append(
                f"epoch {e:03d}:  {k * 50}%|#####     | {k * 100}/200 [00:31<00:10, 3.2it/s, loss={5 - u / 200:.3f}, "
                f"num_updates={u}, lr=0.0005]\n"
            )
        lines.append(f"epoch {e:03d} | loss {9 - e:.3f} | nll_loss 3.9 | num_updates {e * 200} | lr 0.0005\n")
    got = records(write(tmp_path, [lines]))
    assert [v["loss"] for _, v in got if "loss" in v] == [4.5, 4.0, 3.5, 3.0]


def megatron() -> tuple[list[Unit], list]:
    # Megatron-LM's training line: its step is the iteration, not the "global batch size"
    # beside it, and "number of nan iterations" is a name, not a NaN.
    units, want = [], []
    for i in range(10, 60, 10):
        loss = round(3.0 - i / 50, 6)
        units.append(
            [
                f" [2024-05-03 14:02:28] iteration {i:>8}/     500 | consumed samples: {32 * i:>12} | elapsed time per "
                f"iteration (ms): 410.3 | throughput per GPU (TFLOP/s/GPU): 141.2 | learning rate: 6.000000E-05 | "
                f"global batch size:    32 | lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: 0.637 | number of "
                "skipped iterations:   0 | number of nan iterations:   0 |\n"
            ]
        )
        want.append(
            (
                i,
                {
                    "consumed_samples": 32.0 * i,
                    "learning_rate": 6e-05,
                    "global_batch_size": 32.0,
                    "lm_loss": loss,
                    "loss_scale": 1.0,
                    "grad_norm": 0.637,
                    "number_of_skipped_iterations": 0.0,
                },
            )
        )
    units.append(
        [
            "-" * 60 + "\n",
            " validation loss at iteration 50 | lm loss value: 3.040379E-01 | lm loss PPL: 1.355320E+00 | \n",
            "-" * 60 + "\n",
        ]
    )
    want.append((50, {"val_lm_loss": 0.3040379, "val_lm_loss_ppl": 1.35532}))
    return units, want


def fairseq_json() -> tuple[list[Unit], list]:
    # fairseq with --log-format json: a logging prefix, then a JSON dict whose numbers are
    # strings; the step is num_updates (valid_num_updates on the validation dict).
    units, want = [], []
    for u in range(10, 70, 10):
        loss = round(3.0 - u / 40, 3)
        units.append(
            [
                f'2024-05-03 14:02:28 | INFO | train_inner | {{"epoch": 1, "update": {u / 60:.3f}, "loss": '
                f'"{loss}", "nll_loss": "{loss - 0.2:.3f}", "num_updates": "{u}", "lr": "0.0005", "gnorm": "0.635"}}\n'
            ]
        )
        want.append(
            (
                u,
                {
                    "epoch": 1.0,
                    "update": round(u / 60, 3),
                    "loss": loss,
                    "nll_loss": round(loss - 0.2, 3),
                    "lr": 0.0005,
                    "gnorm": 0.635,
                },
            )
        )
    units.append(
        [
            '2024-05-03 14:03:53 | INFO | valid | {"epoch": 1, "valid_loss": "0.572", "valid_nll_loss": "0.532", '
            '"valid_num_updates": "60"}\n'
        ]
    )
    want.append((60, {"epoch": 1.0, "valid_loss": 0.572, "valid_nll_loss": 0.532}))
    return units, want


def deepspeed_cifar() -> tuple[list[Unit], list]:
    # The PyTorch CIFAR-10 tutorial's print under DeepSpeed: the script's "[epoch, batch]
    # loss" lines are the records; DeepSpeed's own lines (its logger tag after the level,
    # its step counter, epochs from 0) neither step nor split the run, and their values at
    # the step just logged join its record.
    units, want = [], []
    ds = {"skipped": 0.0, "lr": 0.05, "running_avg_samples_per_sec": 3512.44, "curr_samples_per_sec": 3601.2}
    for e in (1, 2):
        for b in (20, 40, 60):
            loss = round(2.0 - e / 4 - b / 200, 3)
            units.append([f"[{e:2d}, {b:5d}] loss: {loss:6.3f}\n"])
            want.append(((e - 1) * 60 + b, {"loss": loss, **(ds if b == 40 else {})}))
            if b == 40:
                g = (e - 1) * 60 + b
                units.append(
                    [
                        f"[2024-05-03 14:03:36,050] [INFO] [logging.py:96:log_dist] [Rank 0] step={g}, skipped=0, "
                        "lr=[0.05], mom=[(0.9, 0.999)]\n",
                        f"[2024-05-03 14:03:36,050] [INFO] [timer.py:260:stop] epoch={e - 1}/micro_step={g}/global_step="
                        f"{g}, RunningAvgSamplesPerSec=3512.44, CurrSamplesPerSec=3601.2, MemAllocated=0.01GB\n",
                    ]
                )
    return units, want


def torchtune() -> tuple[list[Unit], list]:
    # torchtune's progress bar: "epoch|global step|Loss: value" as its description, each
    # frame redrawn with a carriage return; the second epoch's bar counts on the global step.
    units, want = [], []
    for e, steps in ((1, range(1, 4)), (2, range(4, 7))):
        units.append(["  0%|          | 0/3 [00:00<?, ?it/s]"])
        for g in steps:
            loss = round(2.2 - g / 10, 4)
            n = g - 3 * (e - 1)
            units.append([f"\r{e}|{g}|Loss: {loss}:  {33 * n}%|███       | {n}/3 [00:01<00:02,  1.02it/s]"])
            want.append((g, {"loss": loss}))
        units.append(["\n"])
    return units, want


def lightgbm() -> tuple[list[Unit], list]:
    # LightGBM's log_evaluation lines: the round in brackets, each metric after its data
    # set's name and "'s" (the default names training and valid_<i>, or the user's own).
    units = [
        ["[LightGBM] [Info] Number of positive: 4012, number of negative: 3988\n"],
        ["[LightGBM] [Info] Total Bins 2550\n"],
    ]
    want = []
    for r in range(1, 60, 10):
        tr, va = round(0.66 - r / 200, 6), round(0.67 - r / 300, 6)
        units.append([f"[{r}]\ttraining's binary_logloss: {tr}\tvalid_1's binary_logloss: {va}\n"])
        want.append((r, {"training_binary_logloss": tr, "valid_1_binary_logloss": va}))
    units.append(["[61]\ttrain's multi_logloss: 0.31\teval's multi_logloss: 0.42\n"])
    want.append((61, {"train_multi_logloss": 0.31, "eval_multi_logloss": 0.42}))
    return units, want


def tianshou() -> tuple[list[Unit], list]:
    # Tianshou's trainer: the epoch numbered with "#", its bar's postfix (no total: "10001it"),
    # then the epoch's test line; a hand-written "Step #N" after it counts on the same way.
    units, want = [], []
    for e in range(1, 4):
        loss, rew = round(0.6 - e / 20, 3), round(40.0 + 20 * e, 2)
        units.append(
            [
                f"Epoch #{e}: 10001it [00:07, 1404.52it/s, env_step={e}0000, len=44, loss={loss}, n/ep=0, "
                f"n/st=10, rew={rew}]\n",
                f"Epoch #{e}: test_reward: {rew + 0.5:.6f} ± 4.423984, best_reward: {rew + 0.5:.6f} ± 4.423984 in #{e}\n",
            ]
        )
        want.append(
            (
                e,
                {
                    "env_step": e * 10000.0,
                    "len": 44.0,
                    "loss": loss,
                    "n_ep": 0.0,
                    "n_st": 10.0,
                    "rew": rew,
                    "test_reward": round(rew + 0.5, 6),
                },
            )
        )
    return units, want


def numbered_steps() -> tuple[list[Unit], list]:
    # "Step #N" counts like "Step N"; a "#" after a word that names no counter ("run #2") is
    # left alone
    units, want = [["Starting run #2 of the sweep\n"]], []
    for i in range(1, 5):
        loss = round(2.5 - i / 10, 2)
        units.append([f"Step #{i * 100} | loss: {loss}\n"])
        want.append((i * 100, {"loss": loss}))
    return units, want


def clu() -> tuple[list[Unit], list]:
    # JAX/Flax with clu's logging writer: the step in brackets before the metrics, under a
    # glog prefix; "at step 1" in prose before it is no record.
    units = [["I0501 12:00:01.100000 140234 train.py:140] Starting training loop at step 1.\n"]]
    want = []
    for k in range(20, 120, 20):
        loss = round(1.2 - k / 200, 6)
        units.append(
            [f"I0501 12:00:01.123456 140234 logging_writer.py:48] [{k}] learning_rate=0.003, train_loss={loss}\n"]
        )
        want.append((k, {"learning_rate": 0.003, "train_loss": loss}))
    return units, want


def timm() -> tuple[list[Unit], list]:
    # timm's train.py: "Train: epoch [batch index/batches (pct%)]", the loss then its running
    # average; the run's last line names its best epoch, which is no step of the run.
    units, want = [], []
    for e in (0, 1):
        for i in (0, 50, 99):
            loss = round(2.4 - e / 2 - i / 100, 3)
            units.append(
                [
                    f"Train: {e} [{i:4d}/100 ({100 * (i + 1) // 100:3d}%)]  Loss: {loss} ({loss + 0.1:.3f})  "
                    f"Time: 0.052s,  616.78/s  (0.052s,  616.78/s)  LR: 3.000e-03  Data: 0.012 (0.015)\n"
                ]
            )
            want.append((e * 100 + i + 1, {"loss": loss, "time": 0.052, "lr": 0.003, "data": 0.012}))
    units.append(["*** Best metric: 85.3515625 (epoch 1)\n"])
    return units, want


def paddledet() -> tuple[list[Unit], list]:
    # PaddleDetection: "Epoch: [e] [ i/N]" with a 0-based batch index; each evaluation prints
    # "Eval iter: 0", the evaluation loop's batch counter, which is no train step.
    units, want = [], []
    for e in (0, 1, 2):
        for i in (0, 50):
            loss = round(2.4 - e / 2 - i / 100, 6)
            units.append(
                [
                    f"[05/01 10:00:05] ppdet.engine INFO: Epoch: [{e}] [{i:3d}/100] learning_rate: 0.000100 "
                    f"loss: {loss:.6f} loss_cls: 1.413704 eta: 0:05:00 batch_cost: 0.4981 data_cost: 0.0012 "
                    f"ips: 32.1200 images/s, max_mem_reserved: 10123 MB\n"
                ]
            )
            want.append(
                (
                    e * 100 + i + 1,
                    {
                        "learning_rate": 1e-4,
                        "loss": loss,
                        "loss_cls": 1.413704,
                        "batch_cost": 0.4981,
                        "data_cost": 0.0012,
                        "ips": 32.12,
                        "max_mem_reserved": 10123.0,
                    },
                )
            )
        units.append(
            [
                "[05/01 10:01:00] ppdet.utils.checkpoint INFO: Save checkpoint: output/ppyoloe_crn_l_300e_coco\n",
                "[05/01 10:01:01] ppdet.engine INFO: Eval iter: 0\n",
                "[05/01 10:01:02] ppdet.metrics.metrics INFO: Accumulating evaluatation results...\n",
            ]
        )
    return units, want


def _yolo(header: str, first_epoch: int, names: tuple[str, ...]) -> tuple[list[Unit], list]:
    units, want = [], []
    for e in range(first_epoch, first_epoch + 3):
        frames = []
        for b in range(1, 5):
            losses = [round(0.9 / (e + 1) + 0.1 * k - b / 1000, 4) for k in range(3)]
            cells = "".join(f"{v:>10}" for v in losses)
            frames.append(
                f"{e:>8}/9{'3.52G':>10}{cells}{232:>11}{640:>11}: {25 * b:3d}%|{'#' * b}{' ' * (4 - b)}| "
                f"{b}/4 [00:0{b}<00:00,  1.45it/s]"
            )
        units.append(
            [
                f"\n{header}\n",
                "\r".join(frames) + "\n",
                "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): "
                "100%|####| 4/4 [00:01<00:00,  3.2it/s]\n",
                "                   all        128        929      0.64      0.537      0.605      0.446\n",
            ]
        )
        want.append((e, {**dict(zip(names, losses)), names[3]: 232.0, names[4]: 640.0}))
    return units, want


def yolov8() -> tuple[list[Unit], list]:
    # Ultralytics YOLOv8: the header before each epoch, the epoch's bar redrawn with a
    # carriage return (each frame the epoch's running mean losses), then its validation.
    return _yolo(
        "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size",
        1,
        ("box_loss", "cls_loss", "dfl_loss", "instances", "size"),
    )


def yolov5_v6() -> tuple[list[Unit], list]:
    # YOLOv5 before v7 counts epochs from 0 and heads its loss columns "box obj cls".
    return _yolo(
        "     Epoch   gpu_mem       box       obj       cls    labels  img_size",
        0,
        ("box_loss", "obj_loss", "cls_loss", "labels", "img_size"),
    )


def marian() -> tuple[list[Unit], list]:
    units, want = [], []
    for k in range(1, 5):
        up = k * 100
        units.append(
            [
                f"[2019-04-16 02:35:41] Ep. 1 : Up. {up} : Sen. 35,605 : Cost {9 - k / 10:.8f} : Time 248.29s "
                f": 2131.56 words/s : L.r. 2.5000e-06\n"
            ]
        )
        want.append((up, {"sen": 35605.0, "loss": round(9 - k / 10, 8), "time": 248.29, "lr": 2.5e-06}))
    units.append(["[2019-04-16 03:22:09] [valid] Ep. 1 : Up. 400 : cross-entropy : 123.4 : new best\n"])
    want.append((400, {"val_loss": 123.4}))
    units.append(["[2019-04-16 03:22:22] [valid] Ep. 1 : Up. 400 : perplexity : 3406.18 : new best\n"])
    want.append((400, {"val_perplexity": 3406.18}))
    units.append(["[2019-04-16 03:35:41] Ep. 1 : Up. 500 : Sen. 12,345 : Cost 4.21000000 : Time 3.20s\n"])
    want.append((500, {"sen": 12345.0, "loss": 4.21, "time": 3.2}))
    return units, want


def mmengine() -> tuple[list[Unit], list]:
    units, want = [], []
    for e in (1, 2):
        for i in (50, 100):
            loss = round(0.9 - e / 10 - i / 1000, 3)
            units.append(
                [
                    f"2023/01/01 12:00:00 - mmengine - INFO - Epoch(train)  [{e}][{i:3d}/500]  lr: 1.0000e-04  "
                    f"eta: 0:10:00  time: 0.5000  data_time: 0.0100  memory: 1000  loss: {loss}  loss_cls: 0.3000\n"
                ]
            )
            want.append(
                (
                    (e - 1) * 500 + i,
                    {"lr": 1e-4, "time": 0.5, "data_time": 0.01, "memory": 1000.0, "loss": loss, "loss_cls": 0.3},
                )
            )
        units.append(
            [f"2023/01/01 12:00:00 - mmengine - INFO - Epoch(val) [{e}][100/100]  loss: 0.61  accuracy/top1: 76.5\n"]
        )
        want.append(((e - 1) * 500 + 100, {"val_loss": 0.61, "val_accuracy_top1": 76.5}))
    return units, want


def mmcv1_text() -> tuple[list[Unit], list]:
    """MMCV 1.x's text logger (mmdet 2.x): train lines with no mode, ``Epoch [e][i/N]`` then a
    tab and the learning rate; its evaluation ``Epoch(val) [e][N]``; a resume line before
    the first line of epoch 3 (the run resumed from epoch 2's checkpoint)."""
    pre = "2024-01-10 10:15:0{}, 321 - mmdet - INFO - "
    units: list[Unit] = [[pre.format(1).replace(", ", ",") + "resumed epoch 2, iter 200\n"]]
    want = []
    for e in (3, 4):
        for i in (50, 100):
            loss = round(1.4 - e / 10 - i / 1000, 4)
            units.append(
                [
                    pre.format(2).replace(", ", ",")
                    + f"Epoch [{e}][{i}/100]\tlr: 2.000e-02, eta: 0:00:01, time: 0.003, data_time: 0.000, "
                    f"memory: 1872, loss_cls: 0.6421, acc: 22.5000, loss: {loss:.4f}\n"
                ]
            )
            want.append(
                (
                    (e - 1) * 100 + i,
                    {
                        "lr": 0.02,
                        "time": 0.003,
                        "data_time": 0.0,
                        "memory": 1872.0,
                        "loss_cls": 0.6421,
                        "acc": 22.5,
                        "loss": loss,
                    },
                )
            )
        units.append(
            [pre.format(3).replace(", ", ",") + f"Epoch(val) [{e}][500]\tbbox_mAP: 0.0969, bbox_mAP_50: 0.2100\n"]
        )
        want.append(((e - 1) * 100 + 100, {"val_bbox_m_ap": 0.0969, "val_bbox_m_ap_50": 0.21}))
    return units, want


def mindspore() -> tuple[list[Unit], list]:
    """MindSpore's LossMonitor (``epoch: 1 step: 50, loss is 1.43``, the step counted within
    the epoch) and its TimeMonitor line after each epoch."""
    units, want = [["============== Starting Training ==============\n"]], []
    for e in (1, 2, 3):
        for i in (50, 100):
            loss = round(1.5 - e / 10 - i / 1000, 7)
            units.append([f"epoch: {e} step: {i}, loss is {loss}\n"])
            want.append(((e - 1) * 100 + i, {"loss": loss}))
        units.append(["epoch time: 124.502 ms, per step time: 1.245 ms\n"])
    return units, want


def paddle_hapi() -> tuple[list[Unit], list]:
    """PaddlePaddle's ``Model.fit`` (ProgBarLogger): a bare ``Epoch 2/3`` header, ``step
    50/100 - loss: … - acc: … - 1ms/step`` counted within the epoch, and an evaluation between
    ``Eval begin...`` and ``Eval samples: N`` whose batches are no train steps (its last line
    is the evaluation's result, joined to the epoch's last record)."""
    units: list[Unit] = [
        [
            "The loss value printed in the log is the current step, and the metric is the average value of previous steps.\n"
        ]
    ]
    want = []
    for e in (1, 2, 3):
        units.append([f"Epoch {e}/3\n"])
        for i in (50, 100):
            loss, acc = round(1.4 - e / 10 - i / 1000, 4), round(0.2 + e / 10, 4)
            units.append([f"step {i:3d}/100 - loss: {loss:.4f} - acc: {acc:.4f} - 1ms/step\n"])
            want.append(((e - 1) * 100 + i, {"loss": loss, "acc": acc}))
        ev = round(1.2 - e / 10, 4)
        units.append(
            [
                "Eval begin...\n",
                f"step  8/16 - loss: {ev + 0.1:.4f} - acc: 0.5000 - 1ms/step\n",
                f"step 16/16 - loss: {ev:.4f} - acc: 0.6000 - 1ms/step\n",
                "Eval samples: 512\n",
            ]
        )
        want[-1][1].update({"eval_loss": ev, "eval_acc": 0.6})
    return units, want


def espnet2() -> tuple[list[Unit], list]:
    """ESPnet2's train.log: ``[host] date (trainer:732) INFO: 1epoch:train:51-100batch:`` then
    ``k=v`` pairs (the batch span's end counted within the epoch), and the epoch summary
    whose ``[valid]`` part is the evaluation (its ``[train]`` part restates the epoch)."""
    pre = "[gpu-node03] 2024-01-09 10:00:02,233 ({}) INFO: "
    units: list[Unit] = [[pre.format("abs_task:1157") + "pytorch.version=2.1.0, cuda.available=True\n"]]
    want = []
    for e in (1, 2):
        for a, b in ((1, 50), (51, 100)):
            loss = round(1.5 - e / 10 - b / 1000, 3)
            units.append(
                [
                    pre.format("trainer:732")
                    + f"{e}epoch:train:{a}-{b}batch: iter_time=1.358e-04, loss_ctc=2.267, acc=0.234, "
                    f"loss={loss:.3f}, grad_norm=0.632, optim0_lr0=0.020, train_time=0.002\n"
                ]
            )
            want.append(
                (
                    (e - 1) * 100 + b,
                    {
                        "iter_time": 1.358e-4,
                        "loss_ctc": 2.267,
                        "acc": 0.234,
                        "loss": loss,
                        "grad_norm": 0.632,
                        "optim0_lr0": 0.02,
                        "train_time": 0.002,
                    },
                )
            )
        val = round(1.3 - e / 10, 3)
        units.append(
            [
                pre.format("trainer:338")
                + f"{e}epoch results: [train] iter_time=1.173e-04, loss=1.375, time=2.73 seconds, total_count=100, "
                f"[valid] loss_ctc=2.127, acc=0.371, loss={val:.3f}, time=0.21 seconds, total_count=16, "
                "[att_plot] time=0.52 seconds, total_count=0\n"
            ]
        )
        want[-1][1].update(
            {
                "valid_loss_ctc": 2.127,
                "valid_acc": 0.371,
                "valid_loss": val,
                "valid_time": 0.21,
                "valid_total_count": 16.0,
            }
        )
    return units, want


def flair() -> tuple[list[Unit], list]:
    """Flair's ModelTrainer training.log: ``epoch 1 - iter 21/63 - loss … - lr: …`` lines,
    then per epoch ``EPOCH 1 done: loss …`` (the epoch's mean, no point of the series) and
    ``DEV : loss … - f1-score (micro avg)  0.2`` (the dev evaluation, joined to the epoch's
    last step)."""
    pre = "2023-05-01 10:00:00,{:03d} "
    units: list[Unit] = [[pre.format(1) + '  - learning_rate: "0.050000"\n']]
    want = []
    for e in (1, 2, 3):
        for i in (21, 42, 63):
            loss = round(1.4 - e / 10 - i / 1000, 8)
            units.append(
                [
                    pre.format(2)
                    + f"epoch {e} - iter {i}/63 - loss {loss:.8f} - time (sec): 0.13 - samples/sec: 1523.81 - lr: 0.050000\n"
                ]
            )
            want.append(((e - 1) * 63 + i, {"loss": loss, "samples_sec": 1523.81, "lr": 0.05}))
        dev = round(1.3 - e / 10, 6)
        units.append(
            [
                pre.format(3) + "-" * 100 + "\n",
                pre.format(4) + f"EPOCH {e} done: loss {loss + 0.05:.4f} - lr 0.0500000\n",
                pre.format(5) + f"DEV : loss {dev} - f1-score (micro avg)  0.2025\n",
                pre.format(6) + "BAD EPOCHS (no improvement): 0\n",
            ]
        )
        want[-1][1]["dev_loss"] = dev
    return units, want


def held_out_line_after_a_step() -> tuple[list[Unit], list]:
    """A hand-written loop that prints its evaluation on a line of its own, with no step:
    it belongs to the training line's step before it."""
    units, want = [], []
    for e in (1, 2, 3, 4):
        loss, val = round(1.0 / e, 4), round(1.1 / e, 4)
        units.append(
            [f"Epoch {e}, Step {e * 100}, Loss: {loss:.4f}\n", f"Validation loss: {val:.4f}, accuracy: 0.81\n"]
        )
        want.append((e * 100, {"loss": loss, "validation_loss": val, "accuracy": 0.81}))
    return units, want


def ignite_progress_bar() -> tuple[list[Unit], list]:
    """PyTorch Ignite's ProgressBar: the position ``[n/total]`` before the bar, the loss in
    the postfix after it, one bar per epoch redrawn with carriage returns."""
    units, want = [], []
    for e in (1, 2):
        frames = [f"\rEpoch [{e}/2]: [0/4]   0%|           [00:00<?]"]
        for n in range(1, 5):
            loss = round(1.6 - e / 5 - n / 20, 2)
            frames.append(f"\rEpoch [{e}/2]: [{n}/4]  {25 * n:3d}%|{'█' * (n * 2):<10}, loss={loss} [00:00<00:00]")
            want.append(((e - 1) * 4 + n, {"loss": loss}))
        units.append(frames + ["\n"])
    return units, want


def deepspeed_engine() -> tuple[list[Unit], list]:
    """DeepSpeed's engine every ``steps_per_print``: its ``log_dist`` line, then ``steps: N
    loss: … iter time (s): … samples/sec: …``, whose opening ``steps`` counts the steps;
    the first line's values join the second's record."""
    units, want = [], []
    for k in range(1, 6):
        loss = round(6.0 - k / 10, 4)
        units.append(
            [
                f"[2023-06-01 10:00:{k:02d},000] [INFO] [logging.py:96:log_dist] [Rank 0] step={10 * k}, skipped=0, "
                "lr=[0.0001], mom=[(0.9, 0.999)]\n",
                f"steps: {10 * k} loss: {loss:.4f} iter time (s): 0.320 samples/sec: 400.123\n",
            ]
        )
        # the log_dist line's values (its learning rate, of the one parameter group) are
        # the step's, printed before its loss
        want.append((10 * k, {"skipped": 0.0, "lr": 0.0001, "loss": loss, "samples_sec": 400.123}))
    return units, want


def sklearn_mlp_early_stopping() -> tuple[list[Unit], list]:
    """scikit-learn's MLPClassifier(verbose=True, early_stopping=True): ``Iteration n, loss =
    …`` then ``Validation score: …`` (the held-out accuracy) with no step, which joins it."""
    units, want = [], []
    for i in range(1, 6):
        loss, score = round(1.9 - i / 10, 8), round(0.2 + i / 20, 6)
        units.append([f"Iteration {i}, loss = {loss:.8f}\n", f"Validation score: {score:.6f}\n"])
        want.append((i, {"loss": loss, "validation_score": score}))
    return units, want


def sklearn_partial_fit() -> tuple[list[Unit], list]:
    """scikit-learn's SGDClassifier(verbose=1) fed by partial_fit: every call prints ``--
    Epoch 1``; a step that never moves is no x axis, so the records keep their order."""
    units, want = [], []
    for i in range(10):
        loss = round(0.57 - i / 100, 6)
        units.append(
            [
                "-- Epoch 1\n",
                f"Norm: 0.66, NNZs: 20, Bias: 0.030000, T: 1000, Avg. loss: {loss:.6f}, Objective: 0.569971\n",
                "Total training time: 0.00 seconds.\n",
            ]
        )
        want.append(
            (i + 1, {"norm": 0.66, "nnzs": 20.0, "bias": 0.03, "t": 1000.0, "avg_loss": loss, "objective": 0.569971})
        )
    return units, want


def olmo() -> tuple[list[Unit], list]:
    units, want = [], []
    for s in (100, 200, 300):
        units.append(
            [f"[step={s}/739328]\n", f"    train/CrossEntropyLoss={4 - s / 1000}\n", "    train/Perplexity=50.1\n"]
        )
        want.append((s, {"train_cross_entropy_loss": 4 - s / 1000, "train_perplexity": 50.1}))
    return units, want


def composer() -> tuple[list[Unit], list]:
    units, want = [], []
    for b in (100, 200, 300):
        units.append([f"[batch={b}/5000] train/CrossEntropyLoss={3 - b / 1000}, lr=0.0006\n"])
        want.append((b, {"train_cross_entropy_loss": 3 - b / 1000, "lr": 0.0006}))
    return units, want


def epoch_step_loss() -> tuple[list[Unit], list]:
    units, want = [], []
    for e in (1, 2, 3):
        for s in (100, 200, 300):
            loss = round(2 - e / 10 - s / 10000, 4)
            units.append([f"Epoch [{e}/5], Step [{s}/600], Loss: {loss:.4f}\n"])
            want.append(((e - 1) * 600 + s, {"loss": loss}))
    return units, want


def sb3() -> tuple[list[Unit], list]:
    units, want = [], []
    for k in range(1, 4):
        rows = [
            ("rollout/", ""),
            ("   ep_len_mean", "200"),
            ("   ep_rew_mean", "-1.2e+03"),
            ("time/", ""),
            ("   fps", "1000"),
            ("   total_timesteps", str(2048 * k)),
            ("train/", ""),
            ("   loss", f"{0.5 / k:.4g}"),
            ("   n_updates", str(10 * k)),
        ]
        table = ["-" * 35 + "\n"] + [f"| {a:<18} | {b:<10} |\n" for a, b in rows] + ["-" * 35 + "\n"]
        units.append(table)
        want.append(
            (
                2048 * k,
                {
                    "rollout/ep_len_mean": 200.0,
                    "rollout/ep_rew_mean": -1200.0,
                    "time/fps": 1000.0,
                    "train/loss": float(f"{0.5 / k:.4g}"),
                    "train/n_updates": 10.0 * k,
                },
            )
        )
    return units, want


def hand_rolled() -> tuple[list[Unit], list]:
    units, want = [], []
    for e in range(1, 5):
        units.append(
            [
                f"2025-04-24 21:17:53,828 - INFO - Epoch {e} ... TrainLoss={1 - e / 10:.2f} | Val Loss: "
                f"{1.1 - e / 10:.2f} | ValAcc={60 + e:.2f}%\n"
            ]
        )
        want.append((e, {"train_loss": round(1 - e / 10, 2), "val_loss": round(1.1 - e / 10, 2), "val_acc": 60.0 + e}))
    units.append(["2025-04-24 22:00:00,000 - INFO - Epoch 4 completed. Average Training Loss: 0.5500\n"])
    want.append((4, {"average_training_loss": 0.55}))
    return units, want


def split_names() -> tuple[list[Unit], list]:
    units, want = [], []
    for e in range(1, 5):
        units.append(
            [f"INFO:Trainer:Epoch [{e}/30] Train: {0.08 - e / 100:.4f} | Val: {0.09 - e / 200:.4f} | 373.6s\n"]
        )
        want.append((e, {"train_loss": round(0.08 - e / 100, 4), "val_loss": round(0.09 - e / 200, 4)}))
        units.append([f"INFO:Trainer:--> New Best Model Saved! (Loss: {0.09 - e / 200:.4f})\n"])
    return units, want


def hf_dicts_in_logging() -> tuple[list[Unit], list]:
    units, want = [], []
    for i in range(1, 5):
        d = {"loss": round(1.5 - i / 10, 4), "learning_rate": 1e-4, "epoch": i / 4}
        units.append([f"2024-01-01 10:00:00,000 - INFO - __main__ - {d}\n"])
        want.append((float(i), dict(d)))
    return units, want


def accelerate_examples() -> tuple[list[Unit], list]:
    # Accelerate's complete_nlp_example: "epoch N:" and a dict of numbers whose first key
    # is no HF key; with no 'step' in it, its steps are log rows.
    units, want = [], []
    for e in range(4):
        d = {"accuracy": round(0.5 + e / 10, 4), "f1": 0.61, "train_loss": round(1.9 - e / 5, 4), "epoch": e}
        units.append([f"epoch {e}: {d}\n"])
        want.append((float(e + 1), {k: float(v) for k, v in d.items()}))
    return units, want


def caffe() -> tuple[list[Unit], list]:
    # Caffe's solver: the loss on the iteration's line, its learning rate on a line of its
    # own at the same iteration (joined to that step's record), the train net's outputs in
    # between, and a test pass opened by "Iteration N, Testing net" (its outputs, prose
    # around their values, are not read).
    g = "I0412 10:00:00.334865 12345 "
    units, want = [], []
    for it in (0, 20, 40, 60):
        loss = round(2.4 - it / 100, 5)
        units.append(
            [
                f"{g}solver.cpp:218] Iteration {it} (2.98627 iter/s, 1.73s/20 iters), loss = {loss}\n",
                f"{g}solver.cpp:237]     Train net output #0: loss = {loss} (* 1 = {loss} loss)\n",
                f"{g}sgd_solver.cpp:105] Iteration {it}, lr = 0.01\n",
            ]
        )
        want.append((it, {"loss": loss, "lr": 0.01}))
    units.append(
        [
            f"{g}solver.cpp:330] Iteration 80, Testing net (#0)\n",
            f"{g}solver.cpp:397]     Test net output #0: accuracy = 0.8\n",
            f"{g}solver.cpp:397]     Test net output #1: loss = 1.6 (* 1 = 1.6 loss)\n",
            f"{g}solver.cpp:218] Iteration 80 (2.98627 iter/s, 1.73s/20 iters), loss = 1.5\n",
            f"{g}sgd_solver.cpp:105] Iteration 80, lr = 0.01\n",
        ]
    )
    want.append((80, {"loss": 1.5, "lr": 0.01}))
    return units, want


def tf_estimator() -> tuple[list[Unit], list]:
    # TF1 Estimator: "loss = …, step = …" while training; its evaluation's results line
    # ("Saving dict for global step N: …") holds the eval loss, not a train loss.
    units, want = [], []
    for st_ in range(0, 400, 100):
        loss = round(2.3 - st_ / 200, 6)
        tail = "" if st_ == 0 else " (0.340 sec)"
        units.append(
            [f"INFO:tensorflow:loss = {loss}, step = {st_}{tail}\n", "INFO:tensorflow:global_step/sec: 314.5\n"]
        )
        want.append((st_, {"loss": loss}))
    units.append(
        [
            "INFO:tensorflow:Starting evaluation at 2024-05-01T10:00:15Z\n",
            "INFO:tensorflow:Saving dict for global step 400: accuracy = 0.8476562, global_step = 400, "
            "loss = 0.3879616\n",
        ]
    )
    want.append((400, {"val_accuracy": 0.8476562, "val_loss": 0.3879616}))
    return units, want


def mxnet_module() -> tuple[list[Unit], list]:
    # MXNet Module.fit's Speedometer: "Batch [a-b]" counts the batches done up to b in the
    # epoch; its metric is "cross-entropy" (a loss by name); the epoch's train and
    # validation means follow on lines of their own.
    units, want = [], []
    for e in (0, 1):
        for b in (10, 20, 30):
            ce = round(2.3 - e / 2 - b / 100, 6)
            units.append(
                [f"INFO:root:Epoch[{e}] Batch [{b - 10}-{b}]\tSpeed: 27792.87 samples/sec\tcross-entropy={ce:f}\n"]
            )
            want.append((e * 30 + b, {"speed": 27792.87, "cross_entropy": ce}))
        units.append([f"INFO:root:Epoch[{e}] Validation-cross-entropy=1.809781\n"])
        want.append((e * 30 + 30, {"validation_cross_entropy": 1.809781}))
    return units, want


def hf_dicts_numpy_scalars() -> tuple[list[Unit], list]:
    # sentence-transformers v3 (HF Trainer) prints its evaluator's scores as numpy 2 reprs
    # inside the eval dict: each is its number, and the row is read whole.
    units, want = [], []
    for i in range(1, 4):
        units.append([f"{{'loss': {1.5 - i / 10:.4f}, 'grad_norm': 2.5, 'learning_rate': 2e-05, 'epoch': {i / 2}}}\n"])
        want.append(
            (float(i), {"loss": round(1.5 - i / 10, 4), "grad_norm": 2.5, "learning_rate": 2e-05, "epoch": i / 2})
        )
        units.append(
            [
                f"{{'eval_loss': 0.05{i}, 'eval_sts-dev_pearson_cosine': np.float32(0.68{i}), "
                f"'eval_sts-dev_spearman_cosine': np.float64(0.75{i}), 'epoch': {i / 2}}}\n"
            ]
        )
        want.append(
            (
                float(i),
                {
                    "eval_loss": float(f"0.05{i}"),
                    "eval_sts-dev_pearson_cosine": float(f"0.68{i}"),
                    "eval_sts-dev_spearman_cosine": float(f"0.75{i}"),
                    "epoch": i / 2,
                },
            )
        )
    return units, want


def pytorch_examples_mnist() -> tuple[list[Unit], list]:
    # pytorch/examples' MNIST: "Train Epoch: e [samples done/epoch's samples (pct%)]", the
    # samples done counted on across epochs (the first line of an epoch at 0 included).
    # After every epoch "Test set: Average loss: …, Accuracy: c/N (p%)", with no step: the
    # test set is the run's evaluation, joined to the train step before it (the last one
    # too, as earlier ones were), its accuracy the share correct.
    units, want = [], []
    for e in (1, 2):
        for n in (0, 640, 1280):
            loss = round(2.3 - e / 2 - n / 2000, 6)
            units.append([f"Train Epoch: {e} [{n}/12800 ({100 * n // 12800}%)]\tLoss: {loss:.6f}\n"])
            want.append(((e - 1) * 12800 + n, {"loss": loss}))
        test, correct = round(0.2 / e, 4), 1900 + 15 * e
        units.append([f"\nTest set: Average loss: {test:.4f}, Accuracy: {correct}/2000 ({correct // 20}%)\n\n"])
        want[-1][1].update({"test_average_loss": test, "test_accuracy": correct / 2000})
    return units, want


def torchtitan() -> tuple[list[Unit], list]:
    # torchtitan: colour codes between the fields, and a "validate step: N" line after the
    # train line of the same step, whose loss is the eval loss.
    head = "[rank0]:[titan] 2025-03-04 10:15:09,400 - root - INFO - "
    units, want = [], []
    for st_ in (50, 100):
        loss = round(3.0 - st_ / 100, 4)
        units.append(
            [
                f"{head}\x1b[31mstep: {st_}  \x1b[32mloss:  {loss:.4f}  \x1b[33mgrad_norm:  0.9980  "
                "\x1b[33mmemory:  1.39GiB(1.75%)  \x1b[35mmfu: 0.45%\x1b[39m\n"
            ]
        )
        want.append((st_, {"loss": loss, "grad_norm": 0.998, "mfu": 0.45}))
    units.append(
        [f"{head}\x1b[33mvalidate step: 100  \x1b[32mloss:  1.8082  \x1b[33mmemory:  1.41GiB(1.78%)\x1b[39m\n"]
    )
    want.append((100, {"val_loss": 1.8082}))
    return units, want


def chainer_print_report() -> tuple[list[Unit], list]:
    # Chainer's PrintReport: a blank-separated table whose names hold a "/".
    units = [
        ["epoch       main/loss   validation/main/loss  main/accuracy  validation/main/accuracy  elapsed_time  \n"]
    ]
    want = []
    for e in (1, 2, 3):
        loss, val = round(2.0 / e, 5), round(2.1 / e, 5)
        units.append([f"{e:<12d}{loss:<12g}{val:<22g}0.85           0.82                      {1.9 * e:g}\n"])
        want.append(
            (
                float(e),
                {
                    "main_loss": loss,
                    "validation_main_loss": val,
                    "main_accuracy": 0.85,
                    "validation_main_accuracy": 0.82,
                    "elapsed_time": round(1.9 * e, 6),
                },
            )
        )
    return units, want


def darknet() -> tuple[list[Unit], list]:
    # darknet: per-layer lines, then "i: loss, running mean avg[ loss], rate rate, …"
    # (pjreddie's "avg", AlexeyAB's "avg loss"; a NaN printed as -nan). The rate is no
    # learning rate here (its burn-in prints 0.000000).
    units, want = [], []
    for i in range(1, 7):
        loss = round(23.0 - i, 6)
        avg = "avg loss" if i > 3 else "avg"
        units.append(
            [
                "Region 82 Avg IOU: 0.028125, Class: 0.046875, Obj: 0.512341, No Obj: 0.004123, .5R: 0.5, count: 8\n",
                f" {i}: {loss:f}, {loss + 0.5:f} {avg}, 0.000000 rate, 4.115663 seconds, {64 * i} images\n",
                "Loaded: 0.000025 seconds\n",
            ]
        )
        want.append((float(i), {"loss": loss, "avg_loss": loss + 0.5, "rate": 0.0}))
    units.append([" 7: -nan, -nan avg loss, 0.001000 rate, 4.1 seconds, 448 images, 6.8 hours left\n"])
    want.append((7.0, {"loss": math.nan, "avg_loss": math.nan, "rate": 0.001}))
    return units, want


def nemo_bar_with_global_step() -> tuple[list[Unit], list]:
    """NeMo's (Lightning's) bar whose postfix prints the global step: each frame is read at
    that step, and the validation loss it carries on from frame to frame is one evaluation,
    read once."""
    units, want = [], []
    val = None
    for g in range(8):
        loss = round(2.0 - g / 10, 3)
        post = f"v_num=0, reduced_train_loss={loss}, global_step={g}.0" + (f", val_loss={val}" if val else "")
        units.append([f"\rEpoch 0:  {g * 10}%|{'█' * g}| {g + 1}/10 [00:02<00:04, 61.54it/s, {post}]"])
        want.append((float(g), {"v_num": 0.0, "reduced_train_loss": loss, **({"val_loss": val} if g == 4 else {})}))
        if g == 3:
            val = 1.76  # a validation ran after step 3: the next frames carry its loss
    units[-1].append("\n")
    return units, want


def hf_notebook_table() -> tuple[list[Unit], list]:
    """transformers' NotebookProgressCallback table copied from a notebook cell (Unsloth's
    banner above it): a tab between the cells, one row per logged training loss."""
    units: list[Unit] = [
        ["==((====))==  Unsloth - 2x faster free finetuning | Num GPUs used = 1\n"],
        ["   \\\\   /|    Num examples = 4,000 | Num Epochs = 2 | Total steps = 60\n"],
        [" [60/60 00:45, Epoch 0/1]\n"],
    ]
    rows, want = ["Step\tTraining Loss\n"], []
    for i in range(1, 61):
        loss = round(2.5 - i / 40 + (0.03 if i % 3 else -0.02), 6)
        rows.append(f"{i}\t{loss:.6f}\n")
        want.append((i, {"training_loss": loss}))
    units.append(rows)
    return units, want


def hf_notebook_eval_table() -> tuple[list[Unit], list]:
    """The same callback's table where the run evaluates each epoch: each row repeats the
    newest training loss logged before the evaluation (``No log`` before the first), so a
    training loss equal to the row before's is no new point; metric columns are the
    evaluation's."""
    rows = ["Epoch  Training Loss  Validation Loss  Accuracy  F1 Macro\n"]
    train = ["No log", "0.912300", "0.912300", "0.605100", "0.431800", "0.431800", "0.298800", "0.241000"]
    want = []
    for e, t in enumerate(train, 1):
        val, acc = round(1.0 - e / 20, 6), round(0.5 + e / 30, 6)
        rows.append(f"{e}  {t}  {val:.6f}  {acc:.6f}  {acc - 0.1:.6f}\n")
        values = {"validation_loss": val, "eval_accuracy": acc, "eval_f1_macro": round(acc - 0.1, 6)}
        if t != "No log" and (e == 1 or t != train[e - 2]):
            values["training_loss"] = float(t)
        want.append((e, values))
    return [[" [1600/1600 12:31, Epoch 8/8]\n"], rows], want


DIALECTS = {
    f.__name__: f
    for f in (
        yolov5_results_txt,
        clu,
        lightgbm,
        tianshou,
        numbered_steps,
        nanogpt,
        step_forms,
        fastai,
        keras2,
        keras2_verbose2,
        keras3,
        keras_checkpoint_messages,
        lightning,
        lightning_tqdm_redraws,
        tqdm_postfix_bars,
        nested_tqdm,
        pytorch_examples,
        pytorch_examples_imagenet,
        deepspeed_cifar,
        fairseq,
        fairseq_json,
        marian,
        megatron,
        paddledet,
        yolov8,
        yolov5_v6,
        timm,
        torchtune,
        mmengine,
        mmcv1_text,
        mindspore,
        paddle_hapi,
        espnet2,
        flair,
        ignite_progress_bar,
        sklearn_partial_fit,
        held_out_line_after_a_step,
        sklearn_mlp_early_stopping,
        deepspeed_engine,
        olmo,
        composer,
        epoch_step_loss,
        sb3,
        hand_rolled,
        split_names,
        hf_dicts_in_logging,
        accelerate_examples,
        caffe,
        tf_estimator,
        mxnet_module,
        hf_dicts_numpy_scalars,
        pytorch_examples_mnist,
        torchtitan,
        chainer_print_report,
        darknet,
        nemo_bar_with_global_step,
        hf_notebook_table,
        hf_notebook_eval_table,
    )
}


def _eq(a: float, b: float) -> bool:
    """Equal values: close, or both NaN (a NaN loss is read as NaN)."""
    return math.isclose(a, b, rel_tol=1e-9) or (math.isnan(a) and math.isnan(b))


def _same(got: list, want: list) -> bool:
    if len(got) != len(want):
        return False
    for (gs, gv), (ws, wv) in zip(got, want):
        if gs != ws or set(gv) != set(wv) or any(not _eq(gv[k], wv[k]) for k in wv):
            return False
    return True


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_dialect_is_read(tmp_path: Path, dialect: str) -> None:
    units, want = DIALECTS[dialect]()
    p = write(tmp_path, units)
    assert detect(p).name == "console"
    got = records(p)
    assert _same(got, want), (got, want)


# --------------------------------------------------------------------------- noise around the lines

NOISE = [
    "nohup: ignoring input\n",
    "2024-01-01 10:00:00.123456: W tensorflow/core/util/port.cc:113] oneDNN custom operations are on.\n",
    "/usr/lib/python3/site-packages/torch/nn/modules/transformer.py:392: UserWarning: enable_nested_tensor is True\n",
    "  warnings.warn(\n",
    "Traceback (most recent call last):\n",
    '  File "/x/train.py", line 414, in <module>\n',
    "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity)\n",
    "Loading checkpoint shards: 100%|██████████| 2/2 [00:03<00:00,  1.52s/it]\n",
    "\rMap:  45%|████▌     | 4500/10000 [00:01<00:01, 4410.12 examples/s]",
    "\x1b[1;36m(EngineCore pid=1)\x1b[0m INFO Loading weights took 2.1 seconds\n",
    "==================================================\n",
    'Model: "sequential"\n',
    "wandb: Tracking run with wandb version 0.16.0\n",
    "\x1b[A\x1b[A\x1b[2K\n",
    "\n",
    "GPU available: True (cuda), used: True\n",
    "  | Name  | Type   | Params\n",
    "Downloading data: 100%|██████████| 1.2G/1.2G [00:10<00:00, 120MB/s]\n",
]


@pytest.mark.slow
@pytest.mark.parametrize("dialect", sorted(DIALECTS))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_noise_lines_around_a_dialect_change_nothing(tmp_path: Path, dialect: str, data) -> None:
    units, want = DIALECTS[dialect]()
    noisy: list[Unit] = []
    for u in units:
        for _ in range(data.draw(st.integers(0, 2))):
            line = data.draw(st.sampled_from(NOISE))
            if not noisy or "".join(noisy[-1]).endswith(("\n", "\r")) or line.startswith("\r"):
                noisy.append([line])
            else:
                noisy.append(["\n", line])  # a line left open by a \r frame ends before the noise
        if dialect in ("sb3", "lightgbm") and noisy and not "".join(noisy[-1]).endswith("\n"):
            # a table's ruler, and LightGBM's round (it draws no bars), start a line of their own
            noisy.append(["\n"])
        colour = data.draw(st.booleans())
        noisy.append([f"\x1b[32m{ln}" if colour and ln.strip() else ln for ln in u])
    p = write(tmp_path, noisy, f"{dialect}.log")
    got = records(p)
    assert _same(got, want), (got, want)


# --------------------------------------------------------------------------- restarts and resumes


def test_a_log_line_glued_after_a_bar_keeps_an_evaluation_repeated_to_the_bit(tmp_path: Path) -> None:
    """accelerate's run_clm_no_trainer logs ``epoch N: perplexity: … eval_loss: …`` right
    after its evaluation bar's last frame, with no line end between: the values are the log
    line's, not a bar postfix carrying an old evaluation on, so a frozen model's eval loss,
    repeated to the bit, is every epoch's point (it was kept at the first epoch only)."""
    bar = "".join(f"\r{100 * n // 456:3d}%|{'█' * (n // 46):<10}| {n}/456 [00:01<00:06, 61.03it/s]" for n in (0, 76))
    head = "12/06/2026 11:38:20 - INFO - __main__ - "
    lines = [f"{bar}{head}epoch {e}: perplexity: 39.66137220797588 eval_loss: 3.680377721786499\n" for e in range(6)]
    got = records(write(tmp_path, [lines]))
    assert [(s, v.get("eval_loss")) for s, v in got] == [(float(e), 3.680377721786499) for e in range(6)]


def test_a_test_set_evaluated_once_after_training_is_no_eval_point(tmp_path: Path) -> None:
    """A test line printed once, after the last train line, is the final test, not a point
    of the run's evaluation series; printed after each epoch (the positive control) it is."""
    train = [
        f"Train Epoch: {e} [{n}/1920 ({100 * n // 1920}%)]\tLoss: {2.0 / (e + n / 1000):.6f}\n"
        for e in (1, 2)
        for n in (0, 640, 1280)
    ]
    test = "Test set: Average loss: 0.4000, Accuracy: 9100/10000 (91%)\n"
    once = records(write(tmp_path, [train + [test]], "once.log"))
    assert len(once) == 6 and not any("test_average_loss" in v for _, v in once)
    each = records(write(tmp_path, [train[:3] + [test] + train[3:] + [test]], "each.log"))
    assert [s for s, v in each if "test_average_loss" in v] == [1280.0, 3200.0]


def test_a_stepless_line_of_held_out_metrics_without_a_loss_joins_the_step(tmp_path: Path) -> None:
    """``Validation accuracy: 0.81`` after a train line is that step's evaluation; a line of
    a train metric and a held-out one with no loss (``accuracy: 0.9, val_accuracy: 0.8``) and
    prose are not."""
    lines = [
        "Epoch 1, Step 100, Loss: 0.9000\n",
        "Validation accuracy: 0.81\n",
        "accuracy: 0.9, val_accuracy: 0.8\n",
        "Epoch 2, Step 200, Loss: 0.8000\n",
        "The validation accuracy was 0.5 today\n",
    ]
    got = records(write(tmp_path, [lines]))
    assert [v for _, v in got] == [{"loss": 0.9, "validation_accuracy": 0.81}, {"loss": 0.8}]


def test_a_labelled_line_of_prose_with_a_held_out_number_is_not_pure(tmp_path: Path) -> None:
    """Only a split word may label the pairs of a stepless held-out line; other leading
    prose (``We reached a validation loss of``) keeps the line out."""
    lines = [
        "Epoch 1, Step 100, Loss: 0.9000\n",
        "Best model so far, validation loss: 0.5\n",
        "Epoch 2, Step 200, Loss: 0.8000\n",
    ]
    got = records(write(tmp_path, [lines]))
    assert [v for _, v in got] == [{"loss": 0.9}, {"loss": 0.8}]


def test_concatenated_runs_are_split_and_the_longest_judged(tmp_path: Path) -> None:
    """Keras runs pasted one after another: the epoch counter starting again starts a new
    run; the longest is judged, never the runs merged into one curve."""
    units: list[Unit] = []
    for n, start in ((3, 3.0), (6, 5.0), (2, 5.9)):
        for e in range(1, n + 1):
            units.append([f"Epoch {e}/{n}\n", f"128/128 - 0s - loss: {start - e / 10:.4f} - accuracy: 0.5\n"])
    p = write(tmp_path, units)
    run = read_runlog(p)
    loss = run.get("loss")
    assert loss.steps.tolist() == [1, 2, 3, 4, 5, 6]
    assert loss.values.tolist() == [round(5.0 - e / 10, 4) for e in range(1, 7)]
    (note,) = [n for n in run.notes if "runs" in n]
    assert "holds 3 runs" in note and "only run 2, the longest" in note


def test_resume_from_a_checkpoint_replaces_the_records_from_there(tmp_path: Path) -> None:
    """A crash after epoch 5 and a resume from the epoch-3 checkpoint: epochs 4-5 of the
    first attempt give way to the resumed run's; the best epoch re-printed when its
    checkpoint is loaded is no step back."""
    lines = [f"Epoch [{e:03d}/8] TrainLoss={1 - e / 10:.2f} | ValLoss={1.2 - e / 20:.3f}\n" for e in range(1, 6)]
    lines.append("[Checkpoint] Loaded <- best_model.pth  (epoch=3, ValLoss=1.050)\n")
    lines += [f"Epoch [{e:03d}/8] TrainLoss={0.5 - e / 100:.2f} | ValLoss={1.3 + e / 100:.3f}\n" for e in range(4, 9)]
    lines.append("[Checkpoint] Loaded <- best_model.pth  (epoch=3, ValLoss=1.050)\n")  # the test phase
    p = tmp_path / "training.log"
    p.write_text("".join(lines))
    run = read_runlog(p)
    assert run.get("loss").steps.tolist() == list(range(1, 9))
    assert run.get("loss").values.tolist() == [0.9, 0.8, 0.7] + [round(0.5 - e / 100, 2) for e in range(4, 9)]
    assert run.get("eval_loss").values.tolist()[:3] == [1.15, 1.1, 1.05]
    assert [n for n in run.notes if n.startswith("resumed at step 4")]


@pytest.mark.parametrize("lag", [1, 2, 5])
def test_an_evaluation_reported_behind_the_train_lines_is_no_resume(tmp_path: Path, lag: int) -> None:
    """An evaluator that runs behind prints step 50's eval loss after the train lines of
    later steps: every train record stays (it was read as a resume from step 50 that
    replaced them), and the eval loss lands at its own step. A train line going back is
    still a resume."""
    lines = []
    for i in range(1, 11):
        lines.append(f"Epoch 1/1 | Step {i * 10} | Loss: {2.0 - i / 10:.4f} | LR: 1.0e-03\n")
        if i > lag:
            lines.append(f"Epoch 1/1 | Step {(i - lag) * 10} | Val Loss: {2.2 - (i - lag) / 10:.4f}\n")
    p = tmp_path / "train.log"
    p.write_text("".join(lines))
    run = read_runlog(p)
    assert run.get("loss").steps.tolist() == [i * 10 for i in range(1, 11)]
    assert run.get("eval_loss").steps.tolist() == [i * 10 for i in range(1, 11 - lag)]
    assert not [n for n in run.notes if "resumed" in n]
    q = tmp_path / "resumed.log"
    q.write_text("".join(lines) + "Epoch 1/1 | Step 60 | Loss: 0.7000 | LR: 1.0e-03\n")
    resumed = read_runlog(q)
    assert resumed.get("loss").steps.tolist() == [10, 20, 30, 40, 50, 60]
    assert [n for n in resumed.notes if n.startswith("resumed at step 60")]


def test_in_epoch_counter_without_total_is_offset_by_the_epoch_end(tmp_path: Path) -> None:
    """``Epoch: 2 | Step: 5000``: a counter that starts again with each epoch (no total
    printed) continues from where the previous epoch ended; one that keeps counting is the
    step itself."""
    within = "".join(f"Epoch: {e} | Step: {s} | Train loss: 0.5\n" for e in (1, 2) for s in (5000, 10000))
    p = tmp_path / "a.log"
    p.write_text(within)
    assert [s for s, _ in records(p)] == [5000, 10000, 15000, 20000]
    running = "".join(f"Epoch {e} | step {s} | loss 0.5\n" for e, s in ((1, 100), (1, 200), (2, 300), (2, 400)))
    q = tmp_path / "b.log"
    q.write_text(running)
    assert [s for s, _ in records(q)] == [100, 200, 300, 400]


# --------------------------------------------------------------------------- what is no record


def test_lines_without_a_step_or_a_loss_are_no_records(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_text(
        "Epoch 1/3 | Loss: 0.9\n"
        "Test Loss: 0.45\n"  # no step: no record of its own (training goes on: it joins epoch 1)
        "Epoch 2/3 | lr: 0.01 | accuracy: 0.8\n"  # no loss
        "- train: 0.8\n- val: 0.1\n"  # a config dump, no step
        "Epoch 2/3 | Train: 95.1 | Val: 94.0 | acc\n"  # bare split names beside an accuracy
        "Epoch 3/3 | Loss: 0.7\n"
    )
    assert records(p) == [(1, {"loss": 0.9, "test_loss": 0.45}), (3, {"loss": 0.7})]


def test_a_printed_dict_of_settings_is_no_record(tmp_path: Path) -> None:
    # Numbers alone under loss-like names, but no epoch or step head before the dict, or a
    # value that is no number: a configuration, not a logged point.
    p = tmp_path / "train.log"
    p.write_text(
        "{'lambda_loss': 0.5, 'lr': 0.001, 'loss_weight': 1.0}\n"
        "epoch 0: {'loss_type': 'ce', 'lr': 0.1}\n"
        "epoch 0: {'accuracy': 0.5, 'train_loss': 1.9}\n"
        "epoch 1: {'accuracy': 0.6, 'train_loss': 1.7}\n"
    )
    assert records(p) == [(1.0, {"accuracy": 0.5, "train_loss": 1.9}), (2.0, {"accuracy": 0.6, "train_loss": 1.7})]


def test_a_capture_with_no_training_line_is_not_a_log(tmp_path: Path) -> None:
    p = tmp_path / "eval.out"
    p.write_text("".join(NOISE) + "| Task | Version | Metric | Value |\n| gsm8k | 3 | exact_match | 0.41 |\n")
    with pytest.raises(NotALog):
        detect(p)


@pytest.mark.slow
def test_training_lines_past_the_sniffing_head_are_found(tmp_path: Path) -> None:
    """A capture that opens with a long install log: its first training line lies past the
    64 KiB head and is still found."""
    p = tmp_path / "nohup.out"
    pre = "".join(f"Collecting package-{i}==1.0 (from -r requirements.txt (line {i}))\n" for i in range(3000))
    p.write_text(pre + "".join(f"iter {i}: loss {3 - i / 100:.2f}, time 40ms\n" for i in range(10)))
    assert len(pre) > 2 * 65536
    assert detect(p).name == "console"
    assert len(records(p)) == 10


def test_a_torn_last_training_line_is_dropped_with_a_note(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_text("step 1 | loss 2.5\nstep 2 | loss 2.4\nstep 3 | loss 2.")
    run = read_runlog(p)
    assert run.get("loss").values.tolist() == [2.5, 2.4]
    assert any("no line end" in n for n in run.notes)


def test_a_number_is_read_whole_or_not_at_all() -> None:
    p = console._parse("step 10 | time 41.23ms | loss 2.5e-1 | acc 97.5% | eta 0:10:00 | dt 3.5s\n")
    assert p is not None and p.counter == 10
    assert p.values == {"loss": 0.25, "acc": 97.5, "dt": 3.5}


def test_a_hyphenated_adjective_in_prose_is_no_value(tmp_path):
    """``5-step`` and ``3-layer`` in a sentence are words, not a metric: a JSON file of prose
    about a run (a run_meta.json) is not a console capture."""
    import json

    from trainproof.formats import NotALog, detect

    p = tmp_path / "run_meta.json"
    p.write_text(
        json.dumps(
            {
                "config": "healthy",
                "how": "3-layer MLP (16-64-64-4), batch 32, 300 steps, loss "
                "averaged over each 5-step logging window, eval every 50 steps",
                "expected_verdict": "PASS",
            },
            indent=2,
        )
        + "\n"
    )
    with pytest.raises(NotALog):
        detect(p)


def test_an_sb3_capture_is_judged_on_its_reward(tmp_path: Path) -> None:
    # The table's sections are namespaces, as SB3 writes the same keys to TensorBoard: the
    # mean episode reward is the reward and the run an RL objective, not a supervised loss.
    from trainproof.api import judge

    units, _ = sb3()
    rep = judge(write(tmp_path, units, "sb3.log"))
    assert rep.mapping["reward"]["source"] == "rollout/ep_rew_mean", rep.mapping
    assert rep.mapping["loss"]["source"] == "train/loss"
    assert "TP-RL-OBJECTIVE" in {f.id for f in rep.findings}


@pytest.mark.parametrize(
    "line,pairs",
    [
        # a number after a function word is no value of the phrase before it
        ("Epoch 1: val_loss improved from inf to 0.96310, saving model to best.keras", [("epoch", 1.0)]),
        ("Epoch 2: val_loss did not improve from 0.80000", [("epoch", 2.0)]),
        (
            "number of skipped iterations:   0 | number of nan iterations:   0 |",
            [("number_of_skipped_iterations", 0.0)],
        ),
        # ... but a pair after it is its own
        ("Batch 5 of 100 loss 0.3", [("batch", 5.0), ("loss", 0.3)]),
        # a decimal comma (a locale's): read as one, never cut to its integer part (a
        # healthy run once FAILed TP-ZERO-LR and TP-ZERO-LOSS-ONSET on 0,0030 read as 0)
        ("step: 10 loss: 2,2214 lr: 0,0030", [("step", 10.0), ("loss", 2.2214), ("lr", 0.003)]),
        ("loss: 1,234 lr: 0,001", [("loss", 1.234), ("lr", 0.001)]),
        ("samples 12,345 loss 0.5", [("samples", 12345.0), ("loss", 0.5)]),
        ("step 5 vals 1,2,3 loss 0.2", [("step", 5.0), ("loss", 0.2)]),
    ],
)
def test_prose_around_numbers_gives_no_values(line: str, pairs: list) -> None:
    assert [(p.key, p.value) for p in console._pairs(line)] == pairs


@pytest.mark.parametrize("lr, verdict", [(2e-2, "PASS"), (0.0, "FAIL")])
def test_speechbrain_lr_of_its_model_optimizer_is_the_lr(tmp_path: Path, lr: float, verdict: str) -> None:
    """SpeechBrain recipes name one learning rate per optimizer, ``lr_<module>``; the
    model's (``lr_model``) is the run's lr, so a run whose model optimizer is at 0 while
    the fine-tuned encoder's is not is caught (TP-ZERO-LR)."""
    lines = []
    for e in range(1, 31):
        loss, val = (1.42, 1.39) if lr == 0 else (1.42 - e * 0.03, 1.39 - e * 0.025)
        lines.append(
            f"epoch: {e}, lr_model: {lr:.2e}, lr_wav2vec: 1.00e-04 - train loss: {loss:.2f} - "
            f"valid loss: {val:.2f}, valid CER: 30.78, valid WER: 76.95\n"
        )
    from trainproof.api import judge

    path = tmp_path / "train_log.txt"
    path.write_text("".join(lines))
    rep = judge(path)
    assert rep.mapping["lr"]["source"] == "lr_model", rep.mapping
    assert rep.verdict.name == verdict
    assert ("TP-ZERO-LR" in {f.id for f in rep.findings}) == (lr == 0)


@pytest.mark.parametrize("fmt", ["[rank{r}]: ", "[default{r}]:", "[1,{r}]<stdout>: "])
@pytest.mark.parametrize("ranks", [2, 4])
def test_rank_prefixed_copies_of_the_loop_are_read_once(tmp_path: Path, fmt: str, ranks: int) -> None:
    # torchrun --tee and mpirun --tag-output put each rank's copy of the loop's lines in one
    # capture: rank 0's are read, never the ranks' shards merged into one curve
    units: list[Unit] = [["W0301 12:00:00.000000 140 torch/distributed/run.py:792] Setting OMP_NUM_THREADS\n"]]
    for s in range(10, 210, 10):
        for r in range(ranks):
            units.append([fmt.format(r=r) + f"step {s} | train loss {2.0 - s / 400 + 0.3 * r:.4f} | lr 3.00e-04\n"])
    run = read_runlog(write(tmp_path, units))
    loss = run.get("loss")
    assert loss.steps.tolist() == list(range(10, 210, 10))
    assert loss.values.tolist() == [round(2.0 - s / 400, 4) for s in range(10, 210, 10)]
    assert any("lowest rank that printed it" in n for n in run.notes)


def test_a_capture_of_one_prefixed_rank_is_read_whole(tmp_path: Path) -> None:
    units: list[Unit] = [[f"[rank1]: step {s} loss {3.0 - s / 100:.4f}\n"] for s in range(1, 21)]
    run = read_runlog(write(tmp_path, units))
    assert run.get("loss").values.size == 20
    assert not any("ranks" in n for n in run.notes)


@pytest.mark.parametrize("metrics_rank", [1, 3])
def test_a_rank_that_alone_prints_the_loss_is_read(tmp_path: Path, metrics_rank: int) -> None:
    # Megatron's pipeline parallelism prints the loss on its last stage; rank 0 prints
    # banners first: the rank that prints the curve is read, whichever prints first
    units: list[Unit] = [["[default0]:> building GPT model ...\n", "[default0]:> initializing torch distributed ...\n"]]
    units += [
        [f"[default{metrics_rank}]: iteration {s:8d}/ 400 | lm loss: {4.0 - s / 200:.6E} |\n"]
        for s in range(10, 410, 10)
    ]
    loss = read_runlog(write(tmp_path, units)).get("loss")
    assert loss.values.size == 40 and loss.values[0] == pytest.approx(3.95)


def test_ranks_printing_different_names_are_all_read_and_a_nan_on_any_rank_is_kept(tmp_path: Path) -> None:
    units: list[Unit] = []
    for s in range(10, 310, 10):
        units.append([f"[rank0]: step {s} loss {2.0 - s / 400:.4f}\n"])
        lost = "nan" if s >= 200 else f"{2.1 - s / 400:.4f}"
        units.append([f"[rank1]: step {s} loss {lost}\n"])
        if s % 100 == 0:
            units.append([f"[rank1]: step {s} val_loss {1.0 + s / 300:.4f}\n"])
    run = read_runlog(write(tmp_path, units))
    loss, ev = run.get("loss"), run.get("eval_loss")
    assert ev.values.tolist() == [round(1.0 + s / 300, 4) for s in (100, 200, 300)]
    assert np.isnan(loss.values[loss.steps >= 200]).all() and np.isfinite(loss.values[loss.steps < 200]).all()
    assert loss.values[0] == pytest.approx(1.975)  # rank 0's, the lowest rank that printed it


@pytest.mark.parametrize(
    "first",
    [
        "'eps': {i}, 'objective/kl': {kl}",  # TRL's PPOTrainer
        "'clip_ratio/high_max': 0.0, 'completions/mean_length': 120.5",  # TRL's GRPO metrics first
        "'nll': {nll}",  # a likelihood model's loss named as such
    ],
)
def test_a_trainer_dict_with_its_epoch_anywhere_is_a_record(tmp_path: Path, first: str) -> None:
    # HF's Trainer.log adds 'epoch' to every dict it prints; a dict that starts with another
    # key was no record (TRL PPO and sorted GRPO captures were not training logs)
    p = tmp_path / "stdout.txt"
    lines = ["***** Running training *****\n"]
    for i in range(1, 6):
        head = first.format(i=i, kl=0.1 * i, nll=3.0 - 0.2 * i)
        lines.append(f" {i}/5 [00:0{i}<00:10, 1.2it/s]{{{head}, 'loss': {2.0 - 0.1 * i:.2f}, 'epoch': {i / 10}}}\n")
    p.write_text("".join(lines))
    recs = records(p)
    assert len(recs) == 5 and all(r[1]["epoch"] == pytest.approx((k + 1) / 10) for k, r in enumerate(recs))
    assert recs[-1][1]["loss"] == pytest.approx(1.5)


def test_a_printed_dict_with_an_epoch_and_a_setting_that_is_no_number_is_no_record(tmp_path: Path) -> None:
    # a configuration printed with its epoch count (a value that is no number), and a
    # results table's rows that hold an epoch among other keys (helper 99: read as records,
    # they drew TP-BLOWUP-NO-GAIN): no trainer's dicts, which end with the epoch
    p = tmp_path / "train.log"
    p.write_text(
        "{'optimizer': 'adamw', 'epoch': 3, 'lr': 0.001}\n"
        "{'trial': 1, 'lr': 0.01, 'epoch': 30, 'loss': 2.4, 'acc': 0.5}\n"
        + "".join(f"{{'loss': {2.0 - 0.1 * i:.2f}, 'epoch': {i / 10}}}\n" for i in range(1, 4))
    )
    assert [r[1]["loss"] for r in records(p)] == pytest.approx([1.9, 1.8, 1.7])


@pytest.mark.parametrize("key", ["mse", "train_mse", "nelbo", "bpb"])
def test_a_line_naming_its_loss_by_a_loss_word_is_a_record(tmp_path: Path, key: str) -> None:
    # a plain PyTorch loop printing `step 10 | mse 5.7` (helper 100: NOT-CHECKED, exit 2,
    # while the same key in JSONL is read as the loss): the alias vocabulary's loss words
    p = tmp_path / "train.log"
    p.write_text(
        "Starting training...\n" + "".join(f"step {10 * i} | {key} {5.7 - 0.1 * i:.2f}\n" for i in range(1, 7))
    )
    recs = records(p)
    assert [s for s, _ in recs] == [10 * i for i in range(1, 7)]
    assert [v[key] for _, v in recs] == pytest.approx([5.7 - 0.1 * i for i in range(1, 7)])
    run = read_runlog(p)
    assert run.series["loss"].key == key


def test_a_metric_line_with_no_loss_word_is_still_no_log(tmp_path: Path) -> None:
    p = tmp_path / "notes.txt"
    p.write_text("".join(f"step {i} | r2 {0.5 + i / 100:.2f}\n" for i in range(1, 7)))
    with pytest.raises(NotALog):
        records(p)
