"""The progress table transformers' ``NotebookProgressCallback`` draws in a notebook (and
Unsloth's notebooks print), copied from the cell output as text with lines above it: it
is read as the run's loss (and evaluations), and judged like any other log of it."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from trainproof.api import judge, read_runlog

BANNER = [
    "==((====))==  Unsloth - 2x faster free finetuning | Num GPUs used = 1\n",
    "   \\\\   /|    Num examples = 4,000 | Num Epochs = 2 | Total steps = 300\n",
    "O^O/ \\_/ \\    Batch size per device = 16 | Gradient accumulation steps = 1\n",
    "Unsloth: Will smartly offload gradients to save VRAM!\n",
    "\n",
]


def _table(losses: list[float], sep: str = "\t", banner: bool = True) -> str:
    rows = [f"Step{sep}Training Loss\n"] + [f"{i}{sep}{v:.6f}\n" for i, v in enumerate(losses, 1)]
    head = BANNER + [f" [{len(losses)}/{len(losses)} 04:10, Epoch 1/2]\n"] if banner else []
    return "".join(head + rows)


def _healthy(n: int, seed: int, noise: float) -> list[float]:
    rnd = random.Random(seed)
    return [(2.2 * math.exp(-i / (n / 4)) + 0.9) * (1 + rnd.gauss(0, noise)) for i in range(n)]


def _verdict(p: Path) -> tuple[str, list[str], int]:
    r = judge(p)
    return r.verdict, [f.id for f in r.findings], r.records


@pytest.mark.parametrize("n", [60, 300])
@pytest.mark.parametrize("sep", ["\t", "   "])
@pytest.mark.parametrize("seed,noise", [(0, 0.02), (1, 0.08)])
def test_a_healthy_table_under_a_banner_is_read_and_passes(tmp_path: Path, n, sep, seed, noise) -> None:
    p = tmp_path / "notebook_output.txt"
    p.write_text(_table(_healthy(n, seed, noise), sep))
    verdict, ids, records = _verdict(p)
    assert records == n
    assert verdict == "PASS", ids


def test_a_nan_row_fails_tp_nan(tmp_path: Path) -> None:
    losses = _healthy(120, 3, 0.03)
    losses[70:] = [float("nan")] * 50
    p = tmp_path / "notebook_output.txt"
    p.write_text(_table(losses))
    verdict, ids, _ = _verdict(p)
    assert verdict == "FAIL" and "TP-NAN" in ids


def test_a_diverging_table_fails(tmp_path: Path) -> None:
    losses = _healthy(200, 4, 0.03)[:80] + [1.5 * 1.04**i for i in range(120)]
    p = tmp_path / "notebook_output.txt"
    p.write_text(_table(losses))
    verdict, ids, _ = _verdict(p)
    assert verdict == "FAIL" and "TP-DIVERGE" in ids


def test_an_eval_table_reads_each_training_log_once(tmp_path: Path) -> None:
    """Evaluating more often than it logs, a run's table repeats one training loss over
    several rows; read as points, that repeat would be a bit-identical (frozen) loss."""
    rows = ["Step\tTraining Loss\tValidation Loss\tAccuracy\n"]
    train = None
    for k in range(1, 41):
        if k % 4 == 1:
            train = 2.0 * math.exp(-k / 20) + 0.5 + 0.01 * (k % 3)
        cell = "No log" if k < 4 else f"{train:.6f}"
        rows.append(f"{25 * k}\t{cell}\t{1.9 * math.exp(-k / 20) + 0.6:.6f}\t{0.5 + k / 100:.6f}\n")
    p = tmp_path / "out.txt"
    p.write_text("".join(BANNER + rows))
    run = read_runlog(p)
    loss, ev = run.get("loss"), run.get("eval_loss")
    assert len(ev.values) == 40
    assert len(loss.values) == len(set(loss.values.tolist())) == 10
    verdict, ids, _ = _verdict(p)
    assert "TP-LOSS-FROZEN" not in ids and verdict != "FAIL", ids


def test_a_header_alone_or_in_prose_is_no_log(tmp_path: Path) -> None:
    p = tmp_path / "notes.txt"
    p.write_text("Step\tTraining Loss\n\nWe plot the Step and Training Loss columns below.\nsee figure 3\n")
    assert judge(p).verdict == "NOT-CHECKED"
