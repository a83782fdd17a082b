"""The Coqui Trainer text-log reader (trainproof.formats.coqui).

Fixtures are written by :class:`CoquiLog`, which prints with the format strings of Coqui
Trainer's ``ConsoleLogger`` (``print_epoch_start``, ``print_train_step``,
``print_eval_step``, ``print_epoch_end``, …): the same ANSI codes, indents and ``str(value)``
values, so a value may be a float, a ``tensor(…)`` repr, ``nan`` or ``inf``.
"""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainproof.api import read_runlog
from trainproof.formats import ReadError, coqui, detect

from conftest import run_cli

BOLD, UNDERLINE, END, GREEN, RED = "\x1b[1m", "\x1b[4m", "\x1b[0m", "\x1b[92m", "\x1b[91m"
INDENT = "     | > "


class CoquiLog:
    """Writes a ``trainer_0_log.txt`` the way Coqui Trainer's ConsoleLogger does."""

    def __init__(self, time_header: bool = True) -> None:
        self.time_header = time_header
        self.lines: list[str] = []
        self.old_eval: dict = {}

    def _log(self, text: str) -> None:
        self.lines.extend(text.split("\n"))

    def banner(self) -> "CoquiLog":
        self._log(
            " > Training Environment:\n | > Backend: Torch\n | > Mixed precision: True\n"
            " | > Current device: 0\n | > Num. of GPUs: 1\n | > Torch seed: 54321\n"
        )
        self._log(" > Model has 83059180 parameters")
        return self

    def epoch(self, epoch: int, max_epoch: int, out: str = "output/run-0000") -> "CoquiLog":
        self._log(f"\n{UNDERLINE}{BOLD} > EPOCH: {epoch}/{max_epoch}{END}")
        self._log(f" --> {out}")
        self._log(f"\n{BOLD} > TRAINING (2024-05-02 03:11:07) {END}")
        return self

    def step(self, step: int, batch_steps: int, global_step: int, values: dict, avgs: dict | None = None) -> int:
        """Print one step block; return the 1-based line of its header."""
        avgs = avgs or {}
        self._log("")
        header_line = len(self.lines) + 1
        when = "TIME: 2024-05-02 03:11:07 -- " if self.time_header else ""
        text = f"{BOLD}   --> {when}STEP: {step}/{batch_steps} -- GLOBAL_STEP: {global_step}{END}\n"
        for k, v in values.items():
            if f"avg_{k}" in avgs:
                text += f"{INDENT}{k}: {v!s}  ({avgs[f'avg_{k}']!s})\n"
            else:
                text += f"{INDENT}{k}: {v!s} \n"
        self._log(text)
        return header_line

    def eval(self, avgs: dict, batches: list[dict] = ()) -> int:
        """An EVALUATION block (optionally with print_eval's per-batch steps); return its line."""
        self._log(f"\n{BOLD} > EVALUATION {END}\n")
        line = len(self.lines) - 1
        for i, b in enumerate(batches):
            text = f"{BOLD}   --> STEP: {i}{END}\n"
            for k, v in b.items():
                text += f"{INDENT}{k}: {v!s}  ({avgs.get('avg_' + k, v)!s})\n"
            self._log(text)
        text = f"\n  {BOLD}--> EVAL PERFORMANCE{END}\n"
        for k, v in avgs.items():
            color, sign, diff = "", "+", 0
            if k in self.old_eval:
                diff = v - self.old_eval[k]
                if diff < 0:
                    color, sign = GREEN, ""
                elif diff > 0:
                    color, sign = RED, "+"
            text += f"{INDENT}{k}:{color} {v!s} {END}({sign}{diff!s})\n"
        self.old_eval = dict(avgs)
        self._log(text)
        return line

    def best(self, path: str) -> None:
        self._log(f" > BEST MODEL : {path}")

    def checkpoint(self, path: str) -> None:
        self._log(f"\n > CHECKPOINT : {path}")

    def raw(self, text: str) -> None:
        self._log(text)

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(self.lines) + "\n", encoding="utf-8")
        return path


def gan_values(loss0: float, loss1: float, mel: float, lr: float = 2e-4) -> dict:
    return {
        "loss_disc": loss0,
        "loss_0": loss0,
        "grad_norm_0": 12.5,
        "loss_gen": 2.1,
        "loss_mel": mel,
        "loss_1": loss1,
        "grad_norm_1": 250.0,
        "current_lr_0": lr,
        "current_lr_1": lr,
        "step_time": 0.65,
        "loader_time": 0.05,
    }


# --------------------------------------------------------------------------- step headers


@pytest.mark.parametrize("time_header", [True, False], ids=["time-header", "plain-header"])
def test_step_blocks_both_header_variants(tmp_path: Path, time_header: bool) -> None:
    log = CoquiLog(time_header).banner()
    log.epoch(0, 1000)
    h1 = log.step(24, 36, 1000025, {"loss": 1.5, "current_lr": 1e-4}, {"avg_loss": 1.6})
    h2 = log.step(36, 36, 1000037, {"loss": 1.25, "current_lr": 1e-4}, {"avg_loss": 1.5})
    log.epoch(1, 1000)
    h3 = log.step(12, 36, 1000050, {"loss": 1.0, "current_lr": 1e-4}, {"avg_loss": 1.0})
    p = log.write(tmp_path / "trainer_0_log.txt")
    run = read_runlog(p)
    assert run.format == "coqui"
    loss = run.get("loss")
    assert loss.key == "loss"
    assert loss.steps.tolist() == [1000025, 1000037, 1000050]  # GLOBAL_STEP, not STEP i/n
    assert loss.values.tolist() == [1.5, 1.25, 1.0]  # the current value, not the running average
    assert loss.lines.tolist() == [h1, h2, h3]
    assert run.get("lr").key == "current_lr" and run.get("lr").values.tolist() == [1e-4] * 3
    assert run.meta["steps_per_epoch"] == 36
    assert run.meta["num_train_epochs"] == 1000 and run.meta["last_epoch"] == 1
    # The banner's "| > Num. of GPUs: 1" lines are not metrics.
    assert set(run.series) == {"loss", "lr"}
    assert not run.notes


def test_sniff_needs_the_step_header_or_banner(tmp_path: Path) -> None:
    log = CoquiLog()
    log.step(1, 10, 5, {"loss": 1.0})
    text = "\n".join(log.lines)
    assert coqui.sniff(tmp_path / "x", text)
    assert not coqui.sniff(tmp_path / "x", "step,loss\n1,2.0\n")
    assert not coqui.sniff(tmp_path / "x", "     | > loss: 1.0\n")  # a metric line alone is not enough


@pytest.mark.parametrize("compress", [False, True])
def test_step_headers_after_a_preamble_longer_than_the_sniffing_head(tmp_path: Path, compress: bool) -> None:
    """A notebook's console copy: the cell's source, a file listing and a config dump (here
    300 KB, several times the 64 KiB sniffing head, in a multi-byte script) before the
    trainer's first step header. It is found past the head, and the whole log is read."""
    from trainproof.formats._io import HEAD_BYTES

    listing = "".join(f"/kaggle/input/data/wavs/অডিও{i}.wav\n" for i in range(9000))
    log = CoquiLog()
    log.raw("# Fine-tuning Training Log\n\n```\nimport numpy as np\n" + listing)
    log.banner().epoch(0, 2)
    for k in range(1, 11):
        log.step(k, 10, 877_000 + k, {"loss": 20.0 - k / 10, "current_lr": 2e-4}, {"avg_loss": 20.0})
    log.raw("```")
    path = log.write(tmp_path / "finetune long 3.md")
    text = path.read_text(encoding="utf-8")
    assert text.index("GLOBAL_STEP") > 4 * HEAD_BYTES
    if compress:
        path = tmp_path / "finetune.md.gz"
        path.write_bytes(gzip.compress(text.encode("utf-8")))
    assert detect(path).name == "coqui"
    run = read_runlog(path)
    assert run.get("loss").steps.tolist() == [877_000 + k for k in range(1, 11)]


def test_a_long_text_without_step_headers_is_no_coqui_log(tmp_path: Path) -> None:
    """The deep look stops at what it finds: a large text with Coqui-like metric lines but no
    step header is not read as Coqui (nor is a file that ends within the head)."""
    p = tmp_path / "notes.txt"
    p.write_text("     | > loss: 1.0\n" * 20_000)
    assert not coqui.sniff(p, p.read_text()[:1000])
    small = tmp_path / "small.txt"
    small.write_text("hello\n")
    assert not coqui.sniff(small, "hello\n")


# --------------------------------------------------------------------------- values


def test_ansi_codes_inside_value_fields(tmp_path: Path) -> None:
    log = CoquiLog().banner()
    log.epoch(0, 10)
    log.step(1, 2, 10, {"loss": f"{GREEN}0.9{END}", "current_lr": f"{BOLD}0.001{END}"})
    log.raw(f"     | > step_time:{RED} 1.25 {END}(+0.1)")
    p = log.write(tmp_path / "trainer_0_log.txt")
    assert "\x1b[92m0.9\x1b[0m" in p.read_text()
    run = read_runlog(p)
    assert run.get("loss").values.tolist() == [0.9]
    assert run.get("lr").values.tolist() == [0.001]
    assert run.get("step_time").values.tolist() == [1.25]


def test_tensor_reprs_nan_and_inf(tmp_path: Path) -> None:
    log = CoquiLog()
    log.epoch(0, 10)
    log.step(
        1,
        4,
        1,
        {
            "loss": "tensor(1.2300, device='cuda:0')",
            "grad_norm": "tensor(0.5000, device='cuda:0', dtype=torch.float64)",
        },
    )
    log.step(2, 4, 2, {"loss": "tensor(nan, device='cuda:0')", "grad_norm": "tensor(inf, device='cuda:0')"})
    log.step(3, 4, 3, {"loss": "nan", "grad_norm": "inf"}, {"avg_loss": "nan"})
    log.step(4, 4, 4, {"loss": "-inf", "grad_norm": "1e-05"})
    run = read_runlog(log.write(tmp_path / "trainer_0_log.txt"))
    loss, gn = run.get("loss").values, run.get("grad_norm").values
    assert loss[0] == 1.23 and np.isnan(loss[1]) and np.isnan(loss[2]) and loss[3] == -math.inf
    assert gn.tolist() == [0.5, math.inf, math.inf, 1e-05]
    assert not run.notes


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("1.5  (1.7)", 1.5),
        ("19.08429  (23.57030)", 19.08429),
        ("0.00020 ", 0.0002),
        ("1e-05", 1e-05),
        ("-3", -3.0),
        (".5", 0.5),
        ("tensor(2.5, device='cuda:0')", 2.5),
        ("nan  (nan)", math.nan),
        ("inf", math.inf),
        ("-inf", -math.inf),
        ("Infinity", math.inf),
        ("NaN", math.nan),
        ("info", None),
        ("nano", None),
        ("12abc", None),
        ("Torch", None),
        ("True", None),
        ("", None),
        ("tensor([1.0, 2.0])", None),
    ],
)
def test_parse_value(text: str, want) -> None:
    got = coqui.parse_value(text)
    if want is None:
        assert got is None
    elif math.isnan(want):
        assert got is not None and math.isnan(got)
    else:
        assert got == want


# --------------------------------------------------------------------------- GAN vs plain models


def test_gan_log_uses_loss_1_as_the_loss(tmp_path: Path) -> None:
    log = CoquiLog().banner()
    log.epoch(0, 1000)
    for i, g in enumerate(range(25, 201, 25)):
        log.step(i, 8, g, gan_values(3.0 - i * 0.01, 35.0 - i, 23.0 - i * 0.5))
    run = read_runlog(log.write(tmp_path / "trainer_0_log.txt"))
    assert run.get("loss").key == "loss_1"
    assert run.get("loss").values.tolist() == [35.0 - i for i in range(8)]
    assert run.get("lr").key == "current_lr_1"
    assert run.get("grad_norm").key == "grad_norm_1"
    assert run.get("step_time").key == "step_time" and run.get("loader_time").key == "loader_time"
    assert "loss_0" in run.series and "loss_mel" in run.series  # other losses stay raw series


def test_plain_model_uses_loss(tmp_path: Path) -> None:
    log = CoquiLog()
    log.epoch(0, 100)
    for i in range(5):
        log.step(i, 5, i + 1, {"decoder_loss": 0.5, "loss": 2.0 - i / 10, "align_error": 0.9, "current_lr": 1e-3})
    run = read_runlog(log.write(tmp_path / "trainer_0_log.txt"))
    assert run.get("loss").key == "loss"
    assert run.get("loss").values.tolist() == [2.0, 1.9, 1.8, 1.7, 1.6]


# --------------------------------------------------------------------------- evaluation blocks


def test_evaluation_block_feeds_eval_loss_with_colours(tmp_path: Path) -> None:
    log = CoquiLog()
    log.epoch(0, 10)
    log.step(10, 10, 10, {"loss": 2.0})
    e1 = log.eval({"avg_loader_time": 0.25, "avg_loss": 1.75})
    log.epoch(1, 10)
    log.step(10, 10, 20, {"loss": 1.5})
    e2 = log.eval({"avg_loader_time": 0.2, "avg_loss": 1.5})  # green: improved
    log.epoch(2, 10)
    log.step(10, 10, 30, {"loss": 1.4})
    log.eval({"avg_loader_time": 0.3, "avg_loss": 1.625})  # red: worse
    p = log.write(tmp_path / "trainer_0_log.txt")
    text = p.read_text()
    assert f"avg_loss:{GREEN} 1.5 {END}(-0.25)" in text and f"avg_loss:{RED} 1.625 {END}(+0.125)" in text
    run = read_runlog(p)
    ev = run.get("eval_loss")
    assert ev.key == "eval/avg_loss"
    assert ev.steps.tolist() == [10, 20, 30]  # at the last global step seen
    assert ev.values.tolist() == [1.75, 1.5, 1.625]
    assert ev.lines.tolist()[:2] == [e1, e2]
    assert run.get("eval/avg_loader_time").values.tolist() == [0.25, 0.2, 0.3]
    assert run.get("loss").values.tolist() == [2.0, 1.5, 1.4]


def test_gan_evaluation_uses_avg_loss_1(tmp_path: Path) -> None:
    log = CoquiLog()
    log.epoch(0, 10)
    log.step(5, 5, 5, gan_values(3.0, 30.0, 20.0))
    log.eval({"avg_loss_0": 2.9, "avg_loss_mel": 19.0, "avg_loss_1": 28.0})
    run = read_runlog(log.write(tmp_path / "trainer_0_log.txt"))
    assert run.get("eval_loss").key == "eval/avg_loss_1"
    assert run.get("eval_loss").values.tolist() == [28.0]


def test_per_batch_eval_steps_are_not_the_eval_loss(tmp_path: Path) -> None:
    # With print_eval=True the trainer prints each eval batch as "--> STEP: k" with the
    # batch's own loss; "eval/loss" would outrank "eval/avg_loss" if those were read.
    log = CoquiLog()
    log.epoch(0, 10)
    log.step(5, 5, 5, {"loss": 2.0})
    log.eval({"avg_loss": 1.5}, batches=[{"loss": 9.0}, {"loss": 0.1}])
    p = log.write(tmp_path / "trainer_0_log.txt")
    assert "   --> STEP: 1" in p.read_text()
    run = read_runlog(p)
    assert run.get("eval_loss").key == "eval/avg_loss"
    assert run.get("eval_loss").values.tolist() == [1.5]
    assert "eval/loss" not in {s.key for s in run.series.values()}


def test_evaluation_interrupted_by_a_foreign_line_is_still_read(tmp_path: Path) -> None:
    # In a stdout capture the model's own prints (test sentences) land between the
    # EVALUATION header and the averages.
    log = CoquiLog()
    log.epoch(0, 10)
    log.step(5, 5, 5, {"loss": 2.0})
    log.raw(f"\n{BOLD} > EVALUATION {END}\n")
    log.raw(" > Decoder stopped with `max_decoder_steps` 500\n/usr/lib/python3/x.py:12: UserWarning: hop")
    log.raw(f"\n  {BOLD}--> EVAL PERFORMANCE{END}\n{INDENT}avg_loss:{GREEN} 1.5 {END}(-0.1)\n")
    log.step(1, 5, 6, {"loss": 1.9})
    run = read_runlog(log.write(tmp_path / "train.out"), "coqui")
    assert run.get("eval_loss").values.tolist() == [1.5]
    assert run.get("eval_loss").steps.tolist() == [5]
    assert run.get("loss").values.tolist() == [2.0, 1.9]


def test_eval_performance_without_evaluation_lists_train_averages(tmp_path: Path) -> None:
    # With run_eval=False the trainer prints the train averages under "EVAL PERFORMANCE".
    log = CoquiLog()
    log.epoch(0, 10)
    log.step(5, 5, 5, {"loss": 2.0})
    log.raw(f"\n  {BOLD}--> EVAL PERFORMANCE{END}\n{INDENT}avg_loss: 2.25 (+0)\n{INDENT}avg_step_time: 0.5 (+0)\n")
    run = read_runlog(log.write(tmp_path / "trainer_0_log.txt"))
    assert set(run.series) == {"loss"}
    assert run.get("loss").values.tolist() == [2.0]


def test_train_performance_epoch_averages_do_not_join_the_last_step(tmp_path: Path) -> None:
    log = CoquiLog()
    log.epoch(0, 10)
    log.step(5, 5, 5, {"loss": 2.0, "current_lr": 1e-3})
    log.raw(
        f"\n{BOLD}   --> TRAIN PERFORMACE -- EPOCH TIME: 12.34 sec -- GLOBAL_STEP: 5{END}\n"
        f"{INDENT}epoch_time: 12.34\n{INDENT}avg_loss: 2.5\n"
    )
    run = read_runlog(log.write(tmp_path / "trainer_0_log.txt"))
    assert set(run.series) == {"loss", "lr"}
    assert run.get("loss").values.tolist() == [2.0]


# --------------------------------------------------------------------------- meta


def test_best_model_and_checkpoint_lines_are_meta(tmp_path: Path) -> None:
    out = "/content/drive/My Drive/vits-run-0000"  # Colab paths have spaces
    log = CoquiLog()
    log.epoch(0, 10)
    log.step(5, 5, 1000037, {"loss": 2.0})
    log.eval({"avg_loss": 1.7})
    log.best(f"{out}/best_model_1000037.pth")
    log.epoch(1, 10)
    log.step(5, 5, 1000074, {"loss": 1.8})
    log.checkpoint(f"{out}/checkpoint_1000074.pth")
    log.eval({"avg_loss": 1.6})
    log.best(f"{out}/best_model.pth")  # no step in the name: the current global step
    p = log.write(tmp_path / "trainer_0_log.txt")
    lines = p.read_text().splitlines()
    run = read_runlog(p)
    best = run.meta["best_models"]
    assert [b["path"] for b in best] == [f"{out}/best_model_1000037.pth", f"{out}/best_model.pth"]
    assert [b["step"] for b in best] == [1000037, 1000074]
    assert [lines[b["line"] - 1] for b in best] == [f" > BEST MODEL : {b['path']}" for b in best]
    assert run.meta["best_model_checkpoint"] == f"{out}/best_model.pth"
    assert run.meta["best_global_step"] == 1000074
    assert run.meta["last_checkpoint"] == {"path": f"{out}/checkpoint_1000074.pth", "step": 1000074}
    assert run.get("eval_loss").values.tolist() == [1.7, 1.6]


def test_no_best_model_no_meta(tmp_path: Path) -> None:
    log = CoquiLog()
    log.epoch(0, 10)
    log.step(1, 1, 1, {"loss": 1.0})
    run = read_runlog(log.write(tmp_path / "trainer_0_log.txt"))
    assert "best_models" not in run.meta and "last_checkpoint" not in run.meta


# --------------------------------------------------------------------------- resumed and damaged logs


def test_resumed_run_appending_to_the_same_log(tmp_path: Path) -> None:
    log = CoquiLog().banner()
    log.epoch(5, 100)
    log.step(10, 40, 210, {"loss": 1.5, "current_lr": 1e-4})
    # Killed mid-epoch; the resumed trainer appends its banner to the same file.
    log.banner()
    log.raw(" > Restoring from checkpoint_200.pth ...\n | > Model restored from step 200")
    log.epoch(5, 100)
    log.step(1, 40, 201, {"loss": 1.6, "current_lr": 1e-4})
    log.step(10, 40, 210, {"loss": 1.45, "current_lr": 1e-4})
    run = read_runlog(log.write(tmp_path / "trainer_0_log.txt"))
    assert set(run.series) == {"loss", "lr"}  # no "Num. of GPUs" or "Torch seed" series
    loss = run.get("loss")
    assert loss.steps.tolist() == [201, 210]
    assert loss.values.tolist() == [1.6, 1.45]  # the later write of step 210 wins
    assert any("logged more than once" in n for n in run.notes)


def test_torn_last_block(tmp_path: Path) -> None:
    log = CoquiLog()
    log.epoch(0, 10)
    log.step(1, 3, 1, {"loss": 1.0, "loss_mel": 5.0})
    log.step(2, 3, 2, {"loss": 0.9, "loss_mel": 4.0})
    p = tmp_path / "trainer_0_log.txt"
    text = "\n".join(log.lines) + f"\n{BOLD}   --> STEP: 3/3 -- GLOBAL_STEP: 3{END}\n"
    text += f"{INDENT}loss: 0.8\n{INDENT}loss_mel: 3."  # killed mid-write: no newline
    p.write_text(text)
    run = read_runlog(p)
    assert run.get("loss").values.tolist() == [1.0, 0.9, 0.8]
    # the cut last line ("3." of "3.25"?) is not read, and that is said
    assert run.get("loss_mel").values.tolist() == [5.0, 4.0]
    assert any("has no line end" in d for d in run.meta["dropped"])


def test_gzip_coqui_log(tmp_path: Path) -> None:
    log = CoquiLog().banner()
    log.epoch(0, 10)
    for i in range(3):
        log.step(i, 3, i + 1, {"loss": 1.0 - i / 4})
    p = tmp_path / "trainer_0_log.txt.gz"
    p.write_bytes(gzip.compress(("\n".join(log.lines) + "\n").encode()))
    assert detect(p) is coqui
    run = read_runlog(p)
    assert run.format == "coqui"
    assert run.get("loss").values.tolist() == [1.0, 0.75, 0.5]


def test_nan_loss_fails_through_the_cli(tmp_path: Path) -> None:
    log = CoquiLog().banner()
    log.epoch(0, 10)
    for i in range(20):
        log.step(i, 25, 25 * (i + 1), gan_values(2.5, 34.0 - i * 0.2, 21.0))
    log.step(20, 25, 525, {**gan_values(math.nan, math.nan, 21.5), "amp_scaler": 0.0, "grad_norm_1": 0.0})
    p = log.write(tmp_path / "trainer_0_log.txt")
    code, out, err, doc = run_cli("epoch", str(p), "--json")
    assert code == 1
    rep = doc["reports"][0]
    assert rep["format"] == "coqui" and rep["verdict"] == "FAIL"
    nan = next(f for f in rep["findings"] if f["id"] == "TP-NAN")
    assert nan["step"] == 525


# --------------------------------------------------------------------------- fuzz


_coqui_line = st.sampled_from(
    [
        f"{BOLD}   --> STEP: 1/10 -- GLOBAL_STEP: 100{END}",
        "   --> TIME: 2024-01-01 10:00:00 -- STEP: 2/10 -- GLOBAL_STEP: 101",
        f"{BOLD} > EVALUATION {END}",
        "  --> EVAL PERFORMANCE",
        "   --> STEP: 0",
        " > EPOCH: 1/10",
        " > BEST MODEL : /x/best_model_7.pth",
        " > CHECKPOINT : /x/checkpoint_9.pth",
        "     | > loss: 1.5  (1.7)",
        "     | > loss_1: nan  (nan)",
        f"     | > avg_loss:{GREEN} 1.2 {END}(-0.1)",
        "     | > current_lr: tensor(0.001, device='cuda:0')",
        "     | > junk: ",
        " ! Run is kept in /x",
        "",
    ]
) | st.text(max_size=40)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_coqui_line, max_size=30))
def test_shuffled_coqui_lines_read_or_raise_read_error(tmp_path: Path, lines: list[str]) -> None:
    p = tmp_path / "trainer_0_log.txt"
    p.write_text("\n".join(lines), encoding="utf-8", errors="surrogatepass")
    try:
        run = read_runlog(p, "coqui")
    except ReadError:
        return
    for s in run.series.values():
        assert np.all(np.diff(s.steps) > 0)
        assert len(s.steps) == len(s.values) == len(s.lines)


# --------------------------------------------------------------------------- shared case and corpus


def test_case_12_vits_nan_with_finite_mel_loss(shared: Path) -> None:
    (p,) = (shared / "cases").glob("12-*/trainer_0_log.txt")
    code, out, err, doc = run_cli("epoch", str(p), "--json")
    assert code == 1
    rep = doc["reports"][0]
    assert rep["format"] == "coqui" and rep["verdict"] == "FAIL"
    ids = [f["id"] for f in rep["findings"]]
    assert "TP-NAN" in ids
    nan = next(f for f in rep["findings"] if f["id"] == "TP-NAN")
    assert nan["step"] == 246000
    assert rep["mapping"]["loss"]["source"] == "loss_1"  # not the finite loss_mel
    run = read_runlog(p)
    assert np.isfinite(run.get("loss_mel").values).all()
    assert run.get("loss_scale").key == "amp_scaler" and run.get("loss_scale").values[-1] == 0.0


def test_corpus_vits_finetune(shared: Path) -> None:
    p = shared / "corpus" / "coqui" / "coqui-vits-finetune" / "trainer_0_log.txt"
    text = p.read_text(encoding="utf-8")
    run = read_runlog(p)
    assert run.format == "coqui"
    n_steps = text.count("GLOBAL_STEP:")
    n_evals = text.count("> EVALUATION")
    assert run.records == n_steps + n_evals
    loss = run.get("loss")
    assert loss.key == "loss_1" and len(loss) == n_steps
    assert loss.steps[0] == 1000025  # resumed from a pretrained checkpoint
    assert run.get("eval_loss").key == "eval/avg_loss_1" and len(run.get("eval_loss")) == n_evals
    assert len(run.meta["best_models"]) == text.count("> BEST MODEL")
    assert run.meta["best_global_step"] == int(run.meta["best_models"][-1]["path"].rsplit("_", 1)[1].split(".")[0])
    assert run.meta["num_train_epochs"] == 1000
    # No banner line ("| > Layer missing in the checkpoint: …") became a metric.
    assert not [k for k in run.series if " " in k]
