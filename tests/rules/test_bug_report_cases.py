"""The bug-report cases of ../shared/cases, made executable, and fixed as kinds of fault.

Each case folder holds one small input modelled on a public bug report and a ``case.md``
with the expected verdict, the exit code and what must NOT be said. For every case there
are two tests:

* ``test_caseNN_shared_*`` judges the shared file itself through the CLI (``--json``, so
  the document is also validated against the published schema). It skips cleanly where
  ../shared is absent.
* ``test_caseNN_kind_*`` builds several inputs of the same shape in ``tmp_path`` (other
  lengths, numbers, onset positions and, where it applies, another format) without
  reading ../shared, and asserts the same outcome: the tool must recognise the kind of
  fault, not the one file.

Randomness is seeded numpy; nothing is mocked.
"""

from __future__ import annotations

import csv
import io
import math
import re
import struct
from pathlib import Path

import numpy as np
import pytest

from trainproof.api import read_runlog

from conftest import first_cases_fast, run_cli, write_hf, write_jsonl

CASES = "cases"

#: Exit code that goes with each verdict (findings.exit_code for one report).
EXIT_FOR = {"FAIL": 1, "WARN": 0, "PASS": 0, "NOT-CHECKED": 2}

#: Findings that judge the loss itself (values, exact zeros, shape, evaluation, signatures).
LOSS_IDS = (
    "TP-NAN",
    "TP-ZERO-LOSS",
    "TP-ZERO-LOSS-ONSET",
    "TP-FLAT",
    "TP-DIVERGE",
    "TP-DEAD-RUN",
    "TP-OVERFIT",
    "TP-NAN-EVAL",
    "TP-OSCILLATION",
    "TP-PLATEAU",
    "TP-LOSS-SPIKE",
)
GRAD_IDS = ("TP-NAN-GRAD", "TP-GRAD-OVERFLOW-SKIPPED", "TP-ZERO-GRAD", "TP-GRAD-SPIKE", "TP-VANISHING-GRAD")
LR_IDS = ("TP-ZERO-LR", "TP-ZERO-LR-PARTIAL", "TP-LR-SCHEDULE-ENDED-EARLY", "TP-WARMUP-UNFINISHED")
ZERO_LOSS_IDS = ("TP-ZERO-LOSS", "TP-ZERO-LOSS-ONSET")

#: "converged", "stable", "perfect fit" as claims (a negated use, "not convergence", is fine).
CONVERGED = re.compile(r"(?<!not )(?<!no )\b(converged|perfect(ly)? fit|fits the data perfectly)\b", re.I)
STABLE = re.compile(r"(?<!not )\b(stable|converged)\b", re.I)


# --------------------------------------------------------------------------- helpers


def case_path(shared: Path, rel: str) -> Path:
    p = shared / CASES / rel
    if not p.exists():
        pytest.skip(f"{rel} is absent from ../shared/cases")
    return p


def judge_cli(path: Path) -> tuple[int, dict]:
    """Run ``trainproof epoch PATH --json``; return (exit code, the one report)."""
    code, out, err, doc = run_cli("epoch", str(path), "--json")
    assert doc is not None, (code, out, err)
    assert len(doc["reports"]) == 1
    rep = doc["reports"][0]
    # The exit code follows the verdict, and the document's worst verdict is this report's.
    assert code == EXIT_FOR[rep["verdict"]], (code, rep["verdict"], ids(rep))
    assert doc["worst_verdict"] == rep["verdict"]
    return code, rep


def ids(rep: dict) -> list[str]:
    return [f["id"] for f in rep["findings"]]


def finding(rep: dict, rid: str) -> dict:
    found = [f for f in rep["findings"] if f["id"] == rid]
    assert len(found) == 1, (rid, ids(rep))
    return found[0]


def absent(rep: dict, *rids: str) -> None:
    said = [i for i in ids(rep) if i in rids]
    assert not said, (said, [(f["id"], f["message"]) for f in rep["findings"]])


RULE_ID = re.compile(r"\bTP-[A-Z0-9-]+")


def text(rep: dict, levels: tuple[str, ...] | None = None, hint: bool = False) -> str:
    """Message and evidence (and hint) of the findings at ``levels`` (all when None), with
    rule ids left out (a PASS lists the checks it ran by id: TP-DEAD-RUN is no claim)."""
    out = []
    for f in rep["findings"]:
        if levels is None or f["level"] in levels:
            out += [f["message"], f["evidence"]] + ([f["hint"]] if hint else [])
    return RULE_ID.sub("<id>", "\n".join(out))


def levels(rep: dict) -> set[str]:
    return {f["level"] for f in rep["findings"]}


def cosine_lr(n: int, peak: float, warmup: int = 0) -> list[float]:
    """A warm-up + cosine schedule sampled at n logged points, exactly 0 at the last one."""
    out = []
    for i in range(n):
        if i < warmup:
            out.append(peak * (i + 1) / warmup)
        else:
            t = (i - warmup) / max(n - 1 - warmup, 1)
            out.append(peak * 0.5 * (1 + math.cos(math.pi * t)))
    out[-1] = 0.0
    return out


def hf_summary(step: int, train_loss: float) -> dict:
    return {
        "epoch": 1.0,
        "step": step,
        "total_flos": 1.2e16,
        "train_loss": train_loss,
        "train_runtime": 1000.0,
        "train_samples_per_second": 1.0,
        "train_steps_per_second": 0.1,
    }


def write_csv(path: Path, header: list[str], rows: list[list]) -> Path:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for r in rows:
        w.writerow(["" if v is None else v for v in r])
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def write_rows(tmp_path: Path, fmt: str, rows: list[dict], summary: dict | None = None, **top) -> Path:
    """Write train rows as an HF trainer_state.json (with the summary entry) or as JSONL."""
    if fmt == "hf":
        return write_hf(tmp_path / "trainer_state.json", rows + ([summary] if summary else []), **top)
    assert fmt == "jsonl"
    return write_jsonl(tmp_path / "metrics.jsonl", rows)


# =========================================================================== 01
# HF logging_nan_inf_filter: a NaN loss logged as exactly 0.0 while grad_norm is NaN.


def hidden_nan_rows(n: int, onset: int, every: int, partial: bool, bad: str, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    badv = {"nan": math.nan, "inf": math.inf, "mixed": None}[bad]
    lrs = cosine_lr(n, 2e-4, warmup=2)
    rows = []
    for i in range(n):
        step = (i + 1) * every
        if i < onset:
            loss = 1.5 + 1.0 * math.exp(-3 * i / onset) + 0.02 * rng.standard_normal()
            g = float(0.8 + 0.7 * rng.random())
        else:
            loss = round(0.8 * rows[-1]["loss"], 4) if (i == onset and partial) else 0.0
            g = badv if badv is not None else (math.nan if i % 2 else math.inf)
        rows.append(
            {
                "epoch": round(step / (n * every), 4),
                "grad_norm": g,
                "learning_rate": lrs[i],
                "loss": round(float(loss), 4),
                "step": step,
            }
        )
    return rows


def check_hidden_nan(rep: dict, code: int, onset_step: int, nonfinite: int, points: int) -> None:
    assert rep["verdict"] == "FAIL" and code == 1, ids(rep)
    absent(rep, "TP-PASS")
    g = finding(rep, "TP-NAN-GRAD")
    assert g["level"] == "FAIL"
    # The first non-finite norm is the onset, even where the loss there is still finite.
    assert g["step"] == onset_step
    assert g["data"]["nonfinite"] == nonfinite and g["data"]["points"] == points
    assert g["data"]["to_end"] is True
    # An exact-zero-loss finding may appear, but it must tie the zero to the NaN norm.
    for rid in ZERO_LOSS_IDS:
        for f in rep["findings"]:
            if f["id"] == rid:
                assert "NaN" in f["evidence"], f
                assert f["data"]["grad_norm_nonfinite"] == f["data"]["grad_norm_points"] > 0, f
    assert not CONVERGED.search(text(rep)), text(rep)


def test_case01_shared_nan_filter_masks_nan_as_zero_loss(shared):
    p = case_path(shared, "01-hf-nan-filter-masks-nan-as-zero-loss/trainer_state.json")
    code, rep = judge_cli(p)
    assert rep["format"] == "hf" and rep["error"] is None  # NaN tokens are not a read error
    check_hidden_nan(rep, code, onset_step=180, nonfinite=23, points=40)
    onset = [f for f in rep["findings"] if f["id"] in ZERO_LOSS_IDS]
    assert all(f["step"] == 190 for f in onset)
    # The final summary entry (train_loss 0.89) is not a step of the loss series.
    run = read_runlog(p)
    loss = run.series["loss"]
    assert len(loss) == 40 and rep["records"] == 40
    assert not np.any(np.isclose(loss.values, 0.8905625))


HIDDEN_NAN_VARIANTS = [
    # fmt, logged points, onset index, logging_steps, partial window at onset, non-finite kind
    ("hf", 40, 17, 10, True, "nan"),
    ("hf", 60, 30, 5, True, "nan"),
    ("hf", 25, 8, 1, False, "nan"),
    ("hf", 100, 80, 20, True, "inf"),
    ("hf", 30, 24, 10, True, "nan"),  # 5 zero losses after the partial window
    ("hf", 30, 27, 10, False, "mixed"),  # only 3 non-finite norms, all at the end
    ("jsonl", 40, 17, 10, True, "nan"),
    ("jsonl", 80, 50, 2, False, "nan"),
    ("jsonl", 50, 44, 4, True, "inf"),
]


@pytest.mark.parametrize("fmt,n,onset,every,partial,bad", first_cases_fast(HIDDEN_NAN_VARIANTS))
def test_case01_kind_hidden_nan_zero_loss(tmp_path, fmt, n, onset, every, partial, bad):
    rows = hidden_nan_rows(n, onset, every, partial, bad, seed=n + onset)
    p = write_rows(tmp_path, fmt, rows, summary=hf_summary(n * every, 0.89), max_steps=n * every, logging_steps=every)
    code, rep = judge_cli(p)
    assert rep["error"] is None
    check_hidden_nan(rep, code, onset_step=(onset + 1) * every, nonfinite=n - onset, points=n)
    run = read_runlog(p)
    assert len(run.series["loss"]) == n  # the summary's train_loss is not a step


# =========================================================================== 02
# GRPO: a loss of 0.0 / -0.0 is expected (beta * KL), the policy still learns.


GRPO_KEYS = {
    "old": ("reward", "reward_std", "rewards/correctness_reward_func", "rewards/format_reward_func"),
    "new": ("reward", "reward_std", "rewards/accuracy_reward/mean", "rewards/accuracy_reward/std"),
    "bare": ("rewards/format_reward_func",),
}


def grpo_rows(n: int, every: int, beta: float, keys: str, kl: bool, seed: int) -> tuple[list[dict], int]:
    """Rows of a healthy GRPO run; also the number of logged losses that are 0.0 or -0.0."""
    rng = np.random.default_rng(seed)
    lrs = cosine_lr(n, 5e-6, warmup=max(1, n // 10))
    rows, zeros = [], 0
    for i in range(n):
        step = (i + 1) * every
        k = 0.0 if i == 0 else float(max(0.0, 0.1 * i / n + 0.005 * rng.standard_normal()))
        loss = round(beta * k, 4)
        if loss == 0.0:
            zeros += 1
            loss = -0.0 if rng.random() < 0.5 else 0.0
        r = -0.26 + 1.2 * (1 - math.exp(-3 * i / n)) + 0.12 * rng.standard_normal()
        row = {
            "clip_ratio": 0.0,
            "completion_length": float(200 + 150 * rng.random()),
            "epoch": round(step / (n * every), 4),
            "grad_norm": float(0.2 + 0.45 * rng.random()),
            "learning_rate": lrs[i],
            "loss": loss,
            "step": step,
        }
        for key in GRPO_KEYS[keys]:
            row[key] = round(float(r if not key.endswith("std") else 0.4 + 0.4 * rng.random()), 4)
        if kl:
            row["kl"] = round(k, 6)
        rows.append(row)
    return rows, zeros


def check_grpo(rep: dict, code: int) -> None:
    assert rep["verdict"] == "PASS" and code == 0, [(f["id"], f["message"]) for f in rep["findings"]]
    absent(
        rep,
        *ZERO_LOSS_IDS,
        "TP-FLAT",
        "TP-DEAD-RUN",
        "TP-DIVERGE",
        "TP-PLATEAU",
        "TP-RL-DEAD-POLICY",
        "TP-ZERO-GRAD",
        "TP-NAN",
        *LR_IDS,
    )
    assert levels(rep) <= {"PASS", "INFO"}
    # -0.0 is a zero, not a sign error; the rise of the loss with the KL is not divergence.
    assert not re.search(r"negative|sign error|diverg|no learning|dead", text(rep), re.I), text(rep)


def test_case02_shared_grpo_zero_loss_is_expected(shared):
    p = case_path(shared, "02-grpo-zero-loss-is-expected/trainer_state.json")
    code, rep = judge_cli(p)
    check_grpo(rep, code)
    loss = read_runlog(p).series["loss"].values
    assert len(loss) == 60
    assert not np.any(loss < 0)  # -0.0 read as zero
    assert loss[0] == 0.0 and loss[1] == 0.0 and loss[-1] == pytest.approx(0.0043)


GRPO_VARIANTS = [
    # fmt, logged points, logging_steps, beta, reward keys, kl logged
    ("hf", 60, 1, 0.04, "old", True),
    ("hf", 200, 1, 0.04, "new", True),
    ("hf", 40, 5, 0.04, "old", True),
    ("hf", 30, 1, 0.0, "new", False),  # beta = 0: every logged loss is exactly 0.0
    ("hf", 100, 2, 0.0, "bare", True),
    ("jsonl", 60, 1, 0.04, "old", True),
    ("jsonl", 120, 1, 0.0, "new", False),
]


@pytest.mark.parametrize("fmt,n,every,beta,keys,kl", first_cases_fast(GRPO_VARIANTS))
def test_case02_kind_grpo_zero_loss(tmp_path, fmt, n, every, beta, keys, kl):
    rows, zeros = grpo_rows(n, every, beta, keys, kl, seed=n + every)
    assert zeros >= 2  # the shape: exact zeros (some of them -0.0) in the logged loss
    p = write_rows(tmp_path, fmt, rows, summary=hf_summary(n * every, 0.0009), max_steps=n * every, logging_steps=every)
    code, rep = judge_cli(p)
    check_grpo(rep, code)
    loss = read_runlog(p).series["loss"].values
    assert len(loss) == n and not np.any(loss < 0)
    assert int(np.sum(loss == 0)) == zeros


# =========================================================================== 04
# DeepSpeed: the learning rate is 0.0 for the whole run; no grad_norm key at all.


def zero_lr_rows(n: int, every: int, level: float, noise: float, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [
        {
            "epoch": round(3 * (i + 1) / n, 4),
            "learning_rate": 0.0,
            "loss": round(float(level + noise * rng.uniform(-1, 1)), 4),
            "step": (i + 1) * every,
        }
        for i in range(n)
    ]


def check_zero_lr(rep: dict, code: int, n: int, first_step: int) -> None:
    assert rep["verdict"] == "FAIL" and code == 1, ids(rep)
    absent(rep, "TP-PASS", "TP-DIVERGE", *GRAD_IDS)
    f = finding(rep, "TP-ZERO-LR")
    assert f["level"] == "FAIL" and f["step"] == first_step
    assert f"{n} of {n}" in f["evidence"], f["evidence"]
    # A missing grad_norm key is "not logged": no complaint beyond an INFO.
    assert "grad" not in text(rep, ("FAIL", "WARN")).lower(), text(rep, ("FAIL", "WARN"))
    assert not STABLE.search(text(rep)), text(rep)


def test_case04_shared_deepspeed_lr_stuck_at_zero(shared):
    p = case_path(shared, "04-deepspeed-lr-stuck-at-zero/trainer_state.json")
    code, rep = judge_cli(p)
    check_zero_lr(rep, code, n=60, first_step=4)
    assert "grad_norm" not in rep["mapping"]


ZERO_LR_VARIANTS = [
    # fmt, logged points, logging_steps, loss level, noise
    ("hf", 60, 4, 1.62, 0.09),
    ("hf", 20, 10, 2.3, 0.05),
    ("hf", 150, 2, 0.9, 0.04),
    ("jsonl", 60, 4, 1.62, 0.09),
    ("jsonl", 12, 25, 3.1, 0.2),
    ("csv", 40, 5, 1.1, 0.06),
]


@pytest.mark.parametrize("fmt,n,every,level,noise", first_cases_fast(ZERO_LR_VARIANTS))
def test_case04_kind_lr_zero_whole_run(tmp_path, fmt, n, every, level, noise):
    rows = zero_lr_rows(n, every, level, noise, seed=n * every)
    if fmt == "csv":
        p = write_csv(
            tmp_path / "metrics.csv",
            ["step", "loss", "learning_rate"],
            [[r["step"], r["loss"], r["learning_rate"]] for r in rows],
        )
    else:
        p = write_rows(
            tmp_path, fmt, rows, summary=hf_summary(n * every, level), max_steps=n * every, logging_steps=every
        )
    code, rep = judge_cli(p)
    check_zero_lr(rep, code, n=n, first_step=every)
    assert "grad_norm" not in rep["mapping"]


# =========================================================================== 06
# Every label masked: loss 0.0 and grad_norm 0.0 from the first logged step.


def zero_from_start_rows(n: int, every: int, sched: str) -> list[dict]:
    if sched == "cosine":
        lrs = cosine_lr(n, 2e-5, warmup=3)
    elif sched == "linear":
        lrs = [2e-5 * (1 - i / (n - 1)) for i in range(n)]
    else:
        lrs = [1e-4] * n
    return [
        {
            "epoch": round((i + 1) / n, 4),
            "grad_norm": 0.0,
            "learning_rate": lrs[i],
            "loss": 0.0,
            "step": (i + 1) * every,
        }
        for i in range(n)
    ]


def check_zero_from_start(rep: dict, code: int, first_step: int) -> None:
    assert rep["verdict"] == "FAIL" and code == 1, ids(rep)
    absent(rep, "TP-PASS", "TP-NAN-GRAD", "TP-GRAD-OVERFLOW-SKIPPED", *LR_IDS)
    z = finding(rep, "TP-ZERO-LOSS")
    assert z["level"] == "FAIL" and z["step"] == first_step
    g = finding(rep, "TP-ZERO-GRAD")
    assert g["level"] == "FAIL" and g["step"] == first_step
    # A setup problem, not convergence; and nothing points at the learning rate.
    assert not CONVERGED.search(text(rep)), text(rep)
    said = text(rep, ("FAIL", "WARN"), hint=True).lower()
    assert "learning rate" not in said and not re.search(r"\blr\b", said), said


def test_case06_shared_zero_loss_zero_grad_from_step_1(shared):
    p = case_path(shared, "06-zero-loss-zero-grad-from-step-1/trainer_state.json")
    code, rep = judge_cli(p)
    check_zero_from_start(rep, code, first_step=1)
    assert finding(rep, "TP-ZERO-LOSS")["data"]["points"] == 50


ZERO_START_VARIANTS = [
    # fmt, logged points, logging_steps, lr schedule
    ("hf", 50, 1, "cosine"),
    ("hf", 10, 1, "cosine"),
    ("hf", 200, 5, "linear"),
    ("hf", 8, 10, "constant"),
    ("jsonl", 50, 1, "cosine"),
    ("jsonl", 30, 2, "constant"),
]


@pytest.mark.parametrize("fmt,n,every,sched", first_cases_fast(ZERO_START_VARIANTS))
def test_case06_kind_zero_loss_zero_grad_from_start(tmp_path, fmt, n, every, sched):
    rows = zero_from_start_rows(n, every, sched)
    p = write_rows(tmp_path, fmt, rows, summary=hf_summary(n * every, 0.0), max_steps=n * every, logging_steps=every)
    code, rep = judge_cli(p)
    check_zero_from_start(rep, code, first_step=every)
    assert finding(rep, "TP-ZERO-LOSS")["data"]["points"] == n


# =========================================================================== 07
# Keras CSVLogger resumed with append=True: a header repeated mid-file, new column set.


def keras_values(total: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for e in range(total):
        t = e / max(total - 1, 1)
        loss = 0.55 + 0.88 * math.exp(-2.2 * t) * (1 + 0.02 * rng.standard_normal())
        acc = 0.48 + 0.38 * t + 0.01 * rng.standard_normal()
        out.append(
            {
                "loss": loss,
                "val_loss": loss * 1.08 + 0.02,
                "accuracy": acc,
                "val_accuracy": acc - 0.03,
                "mae": loss / 3,
                "val_mae": loss / 2.9,
                "learning_rate": 0.001 if t < 0.7 else 0.0005,
                "lr": 0.001 if t < 0.7 else 0.0005,
            }
        )
    return out


def keras_log(path: Path, segments: list[tuple[list[str], int]], second_header: bool, seed: int):
    """Write a Keras CSVLogger file, one segment per (resumed) process; return the
    values written per epoch."""
    total = sum(n for _, n in segments)
    vals = keras_values(total, seed)
    lines, e = [], 0
    for si, (cols, n) in enumerate(segments):
        if si == 0 or second_header:
            lines.append(",".join(["epoch", *cols]))
        for _ in range(n):
            lines.append(",".join([str(e)] + [repr(float(vals[e][c])) for c in cols]))
            e += 1
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return vals


K5 = ["accuracy", "loss", "val_accuracy", "val_loss"]
K6 = ["accuracy", "learning_rate", "loss", "val_accuracy", "val_loss"]


def check_keras_repeated_header(rep: dict, code: int, p: Path, vals: list[dict]) -> None:
    assert rep["verdict"] == "PASS" and code == 0, [(f["id"], f["message"]) for f in rep["findings"]]
    absent(rep, *ZERO_LOSS_IDS, "TP-DIVERGE", "TP-NAN", "TP-FLAT", "TP-DATA-DROPPED", "TP-LOSS-SPIKE")
    assert not re.search(r"non-numeric|not a number", text(rep), re.I)
    run = read_runlog(p)
    loss, ev = run.series["loss"], run.series["eval_loss"]
    # Read by name after every header, never by position.
    np.testing.assert_allclose(loss.values, [v["loss"] for v in vals], rtol=0, atol=1e-12)
    np.testing.assert_allclose(ev.values, [v["val_loss"] for v in vals], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(loss.steps, np.arange(len(vals)))


def test_case07_shared_keras_repeated_header(shared):
    p = case_path(shared, "07-keras-csvlogger-repeated-header-new-column/training.log")
    code, rep = judge_cli(p)
    assert rep["verdict"] == "PASS" and code == 0, ids(rep)
    absent(rep, *ZERO_LOSS_IDS, "TP-DIVERGE", "TP-NAN", "TP-FLAT", "TP-DATA-DROPPED")
    assert not re.search(r"non-numeric|not a number", text(rep), re.I)
    loss = read_runlog(p).series["loss"].values
    np.testing.assert_allclose(loss, [1.43, 1.19, 0.88, 0.81, 0.75, 0.69, 0.62, 0.55], atol=0.006)


@pytest.mark.slow
def test_case07_shared_keras_no_second_header(shared):
    p = case_path(shared, "07-keras-csvlogger-repeated-header-new-column/training_variant_no_second_header.log")
    code, rep = judge_cli(p)
    # Deterministic and stated: the same document twice.
    assert run_cli("epoch", str(p), "--json")[1] == run_cli("epoch", str(p), "--json")[1]
    assert rep["verdict"] in ("PASS", "NOT-CHECKED") and code in (0, 2), ids(rep)
    absent(rep, *ZERO_LOSS_IDS, "TP-DIVERGE", "TP-NAN", "TP-FLAT")
    assert "FAIL" not in levels(rep)
    dropped = finding(rep, "TP-DATA-DROPPED")
    assert dropped["source"] == "reader"
    assert re.search(r"\b6 fields\b", dropped["evidence"]) and re.search(r"\b5-field header\b", dropped["evidence"])
    loss = read_runlog(p).series["loss"].values
    np.testing.assert_allclose(loss, [1.43, 1.19, 0.88], atol=0.006)  # rows 5-9 skipped, not guessed


KERAS_HEADER_VARIANTS = [
    # column segments (each a resumed process), all with a header line
    [(K5, 3), (K6, 5)],
    [(["loss", "val_loss"], 4), (["loss", "lr", "val_loss"], 8)],
    [(["loss", "mae", "val_loss", "val_mae"], 6), (["learning_rate", "loss", "mae", "val_loss", "val_mae"], 6)],
    [(K6, 5), (K5, 5)],  # a column removed
    [
        (["loss", "val_loss"], 3),
        (["accuracy", "loss", "val_accuracy", "val_loss"], 3),
        (["accuracy", "learning_rate", "loss", "val_accuracy", "val_loss"], 4),
    ],  # resumed twice
    [(K5, 4), (K5, 6)],  # the same header repeated
]


@pytest.mark.parametrize("segments", KERAS_HEADER_VARIANTS, ids=lambda s: "+".join(str(len(c)) for c, _ in s))
def test_case07_kind_keras_repeated_header(tmp_path, segments):
    p = tmp_path / "training.log"
    vals = keras_log(p, segments, second_header=True, seed=len(segments) * 7 + len(segments[0][0]))
    code, rep = judge_cli(p)
    check_keras_repeated_header(rep, code, p, vals)


KERAS_NO_HEADER_VARIANTS = [
    [(K5, 3), (K6, 5)],
    [(["loss", "val_loss"], 10), (["loss", "lr", "val_loss"], 4)],
    [(["accuracy", "loss", "val_loss"], 9), (["accuracy", "learning_rate", "loss", "val_accuracy", "val_loss"], 6)],
    [(K6, 8), (K5, 3)],
]


@pytest.mark.slow
@pytest.mark.parametrize("segments", KERAS_NO_HEADER_VARIANTS, ids=lambda s: "+".join(str(len(c)) for c, _ in s))
def test_case07_kind_keras_changed_columns_without_header(tmp_path, segments):
    p = tmp_path / "training.log"
    vals = keras_log(p, segments, second_header=False, seed=3 + len(segments[0][0]))
    (c1, n1), (c2, n2) = segments
    code, rep = judge_cli(p)
    assert run_cli("epoch", str(p), "--json")[1] == run_cli("epoch", str(p), "--json")[1]
    assert rep["verdict"] in ("PASS", "NOT-CHECKED"), ids(rep)
    assert "FAIL" not in levels(rep)
    absent(rep, *ZERO_LOSS_IDS, "TP-DIVERGE", "TP-NAN", "TP-FLAT", "TP-LOSS-SPIKE")
    dropped = finding(rep, "TP-DATA-DROPPED")
    assert re.search(rf"\b{len(c2) + 1} fields\b", dropped["evidence"]), dropped["evidence"]
    assert re.search(rf"\b{len(c1) + 1}-field header\b", dropped["evidence"]), dropped["evidence"]
    loss = read_runlog(p).series["loss"]
    np.testing.assert_allclose(loss.values, [v["loss"] for v in vals[:n1]], rtol=0, atol=1e-12)
    if n1 >= 10:  # enough rows before the change to judge the run on them
        assert rep["verdict"] == "PASS" and code == 0


# =========================================================================== 08
# Lightning CSVLogger: sparse rows, several rows sharing one step, an epoch aggregate.


def lightning_csv(
    path: Path,
    epochs: int,
    per_epoch: int,
    every: int,
    opt: str,
    lr_monitor: bool,
    val_first: bool,
    sort_cols: bool,
    seed: int,
) -> tuple[list[float], list[float]]:
    rng = np.random.default_rng(seed)
    lr_col = f"lr-{opt}"
    cols = ["epoch", "step", "train_loss_step", "val_loss", "val_acc", "train_loss_epoch"]
    if lr_monitor:
        cols.insert(1, lr_col)
    if sort_cols:
        cols = sorted(cols)
    rows, train, val = [], [], []
    total = epochs * per_epoch

    def row(**kw):
        rows.append([kw.get(c) for c in cols])

    for e in range(epochs):
        ep = []
        for j in range(per_epoch):
            k = e * per_epoch + j
            step = (k + 1) * every - 1
            loss = round(0.65 + 1.45 * math.exp(-2.5 * k / total) + 0.02 * rng.standard_normal(), 6)
            ep.append(loss)
            train.append(loss)
            if lr_monitor:
                row(**{lr_col: 0.001 / 2 ** (e // 2), "step": step})
            row(epoch=e, step=step, train_loss_step=loss)
        v = round(0.55 + 1.5 * math.exp(-0.55 * (e + 1)), 6)
        val.append(v)
        val_row = dict(epoch=e, step=step, val_acc=round(0.5 + 0.07 * e, 6), val_loss=v)
        epoch_row = dict(epoch=e, step=step, train_loss_epoch=round(float(np.mean(ep)), 6))
        for r in (val_row, epoch_row) if val_first else (epoch_row, val_row):
            row(**r)
    write_csv(path, cols, rows)
    return train, val


def check_lightning(rep: dict, code: int, p: Path, train: list[float] | None, val: list[float] | None) -> None:
    assert rep["verdict"] == "PASS" and code == 0, [(f["id"], f["message"]) for f in rep["findings"]]
    assert rep["mapping"]["loss"]["source"] == "train_loss_step"
    assert rep["mapping"]["eval_loss"]["source"] == "val_loss"
    absent(
        rep,
        *ZERO_LOSS_IDS,
        *LR_IDS,
        "TP-NAN",
        "TP-NAN-EVAL",
        "TP-NAN-GRAD",
        "TP-GRAD-SPIKE",
        "TP-LOSS-SPIKE",
        "TP-DIVERGE",
        "TP-OSCILLATION",
    )
    assert "TP-OVERFIT" in rep["checks"]["ran"]
    said = text(rep) + "\n".join(rep["notes"])
    assert not re.search(r"duplicate|backwards|more than once|out of order", said, re.I), said
    run = read_runlog(p)
    loss, ev = run.series["loss"], run.series["eval_loss"]
    assert np.all(np.isfinite(loss.values)) and np.all(loss.values > 0)  # empty cells are neither 0 nor NaN
    assert np.all(np.diff(loss.steps) > 0)
    assert len(ev) >= 4 and np.all(np.diff(ev.values) < 0)
    if train is not None:
        np.testing.assert_allclose(loss.values, train)  # no train_loss_epoch interleaved
        np.testing.assert_allclose(ev.values, val)


def test_case08_shared_lightning_sparse_rows(shared):
    p = case_path(shared, "08-lightning-csv-sparse-rows-shared-steps/metrics.csv")
    code, rep = judge_cli(p)
    check_lightning(rep, code, p, None, None)
    run = read_runlog(p)
    assert len(run.series["loss"]) == 30 and len(run.series["eval_loss"]) == 6
    assert run.series["loss"].values[0] == pytest.approx(2.092863)
    assert run.series["loss"].values[-1] == pytest.approx(0.686389)


LIGHTNING_VARIANTS = [
    # epochs, logged steps per epoch, log_every_n_steps, optimizer, LR monitor, val row first, sorted columns
    (6, 5, 50, "AdamW", True, True, True),
    (4, 3, 50, "AdamW", True, True, True),
    (10, 4, 20, "SGD", True, False, True),
    (5, 8, 10, "Adam", False, True, True),
    (12, 2, 100, "AdamW", True, True, False),
    (8, 6, 25, "AdamW", True, False, False),
]


@pytest.mark.parametrize(
    "epochs,per_epoch,every,opt,lr_monitor,val_first,sort_cols", first_cases_fast(LIGHTNING_VARIANTS)
)
def test_case08_kind_lightning_sparse_rows(tmp_path, epochs, per_epoch, every, opt, lr_monitor, val_first, sort_cols):
    p = tmp_path / "metrics.csv"
    train, val = lightning_csv(
        p, epochs, per_epoch, every, opt, lr_monitor, val_first, sort_cols, seed=epochs * per_epoch
    )
    code, rep = judge_cli(p)
    check_lightning(rep, code, p, train, val)
    if lr_monitor:
        lr = read_runlog(p).series["lr"]
        assert len(lr) == epochs * per_epoch and np.all(lr.values > 0)


# =========================================================================== 10
# A TensorBoard event file whose last record is torn (killed mid-write, or still written).


def record_spans(data: bytes) -> list[tuple[int, int]]:
    spans, pos = [], 0
    while pos + 12 <= len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        spans.append((pos, pos + 12 + n + 4))
        pos += 12 + n + 4
    assert pos == len(data)
    return spans


def write_torch_run(logdir: Path, n: int, every: int, seed: int) -> tuple[Path, list[float]]:
    """Write loss and lr per step with torch's SummaryWriter (one record each, in that order)."""
    from torch.utils.tensorboard import SummaryWriter

    rng = np.random.default_rng(seed)
    losses = [0.9 + 1.7 * math.exp(-3 * i / n) + 0.03 * rng.standard_normal() for i in range(n)]
    with SummaryWriter(str(logdir)) as w:
        for i, v in enumerate(losses):
            w.add_scalar("train/loss", v, i * every)
            w.add_scalar("train/lr", 1e-3 * (1 - 0.5 * i / n), i * every)
    (p,) = [q for q in logdir.iterdir() if q.name.startswith("events.out.tfevents")]
    return p, losses


def cut_offset(span: tuple[int, int], where: str) -> int:
    start, end = span
    return {
        "length": start + 5,
        "length_crc": start + 10,
        "payload": (start + 12 + end - 4) // 2,
        "9_short": end - 9,
        "last_crc": end - 1,
    }[where]


def test_case10_shared_truncated_final_record(shared):
    p = case_path(shared, "10-tb-truncated-final-record/events.out.tfevents.1718000000.node0.777.0")
    code, rep = judge_cli(p)
    assert rep["verdict"] == "PASS" and code == 0, ids(rep)
    assert not levels(rep) & {"FAIL", "WARN"}
    dropped = finding(rep, "TP-DATA-DROPPED")
    assert dropped["level"] in ("INFO", "WARN") and "byte" in dropped["evidence"]
    assert rep["step_range"] == [0, 190]
    loss = read_runlog(p).series["loss"]
    np.testing.assert_array_equal(loss.steps, np.arange(0, 200, 10))  # no invented step 200
    assert loss.values[0] == pytest.approx(2.61, abs=0.01) and loss.values[-1] == pytest.approx(0.93, abs=0.01)


TRUNCATED_VARIANTS = [
    # steps written, step spacing, which record is torn (index from the end, or a share of the file), where
    (20, 10, -1, "9_short"),
    (30, 5, -1, "payload"),
    (40, 1, -2, "length"),
    (25, 4, -1, "last_crc"),
    (50, 10, 0.6, "payload"),
    (60, 2, 0.4, "length_crc"),
]


@pytest.mark.parametrize("n,every,torn,where", first_cases_fast(TRUNCATED_VARIANTS))
def test_case10_kind_truncated_event_file(tmp_path, n, every, torn, where):
    src, losses = write_torch_run(tmp_path / "run", n, every, seed=n + every)
    data = src.read_bytes()
    spans = record_spans(data)
    assert len(spans) == 1 + 2 * n  # file_version, then loss and lr per step
    r = len(spans) + torn if isinstance(torn, int) else int(torn * len(spans))
    cut = cut_offset(spans[r], where)
    out = tmp_path / "cut" / src.name
    out.parent.mkdir()
    out.write_bytes(data[:cut])
    # Complete records 1..r-1: record 2i+1 is the loss of step i, 2i+2 its lr.
    loss_steps = [i * every for i in range(n) if 2 * i + 1 < r]
    last_step = max(((k - 1) // 2) * every for k in range(1, r))
    assert len(loss_steps) >= 12
    code, rep = judge_cli(out)
    assert rep["verdict"] == "PASS" and code == 0, [(f["id"], f["message"]) for f in rep["findings"]]
    assert not levels(rep) & {"FAIL", "WARN"}
    dropped = finding(rep, "TP-DATA-DROPPED")
    assert dropped["level"] in ("INFO", "WARN")
    assert rep["step_range"] == [0, last_step]
    loss = read_runlog(out).series["loss"]
    np.testing.assert_array_equal(loss.steps, loss_steps)  # nothing invented for the torn record
    np.testing.assert_allclose(loss.values, np.float32(losses[: len(loss_steps)]), rtol=1e-6)


# =========================================================================== 11
# A TensorBoard event file with no scalar summary (header only, text, histograms).


def check_no_scalars(rep: dict, code: int) -> None:
    assert rep["verdict"] == "NOT-CHECKED" and code == 2, ids(rep)
    absent(rep, "TP-PASS")
    assert not levels(rep) & {"FAIL", "WARN", "PASS"}
    assert "NOT-CHECKED" in levels(rep)
    said = text(rep) + "\n" + "\n".join(rep["notes"]) + "\n" + (rep["error"] or "")
    assert "scalar" in said.lower(), said


def test_case11_shared_event_file_without_scalars(shared):
    p = case_path(shared, "11-tb-event-file-without-scalars/events.out.tfevents.1719000000.node0.888.0")
    code, rep = judge_cli(p)
    check_no_scalars(rep, code)
    said = text(rep) + "\n" + "\n".join(rep["notes"])
    assert "only the file header" in said, said


@pytest.mark.parametrize("content", ["header_only", "text", "histogram", "text+histogram", "many_texts"])
def test_case11_kind_event_file_without_scalars(tmp_path, content):
    from torch.utils.tensorboard import SummaryWriter

    rng = np.random.default_rng(len(content))
    d = tmp_path / "run"
    with SummaryWriter(str(d)) as w:
        if "text" in content:
            for s in range(20 if content == "many_texts" else 1):
                w.add_text("config", f"lr: 0.001, epoch {s}", s)
        if "histogram" in content:
            for s in range(3):
                w.add_histogram("weights/fc1", rng.normal(size=200), s)
    (p,) = [q for q in d.iterdir() if q.name.startswith("events.out.tfevents")]
    code, rep = judge_cli(p)
    check_no_scalars(rep, code)
    if content == "header_only":
        assert "only the file header" in "\n".join(rep["notes"]) + text(rep)


# =========================================================================== 12
# Coqui VITS under fp16: the GradScaler collapses to 0, every loss is NaN but loss_mel.


COQUI_KEYS = [
    "loss_disc",
    "loss_disc_real_0",
    "loss_disc_real_1",
    "loss_disc_real_2",
    "loss_disc_real_3",
    "loss_disc_real_4",
    "loss_disc_real_5",
    "amp_scaler",
    "loss_0",
    "grad_norm_0",
    "loss_gen",
    "loss_kl",
    "loss_feat",
    "loss_mel",
    "loss_duration",
    "loss_1",
    "grad_norm_1",
    "current_lr_0",
    "current_lr_1",
    "step_time",
    "loader_time",
]
NAN_KEYS = {
    "loss_disc",
    "loss_disc_real_0",
    "loss_disc_real_1",
    "loss_disc_real_2",
    "loss_disc_real_3",
    "loss_disc_real_4",
    "loss_disc_real_5",
    "loss_0",
    "loss_gen",
    "loss_kl",
    "loss_feat",
    "loss_duration",
    "loss_1",
}
B, U, E, G = "\x1b[1m", "\x1b[4m", "\x1b[0m", "\x1b[92m"


def coqui_log(
    path: Path,
    n_finite: int,
    n_nan: int,
    interval: int,
    first: int,
    collapse: int,
    ansi: str,
    style: str,
    digits: int,
    seed: int,
) -> int:
    """Write a Coqui trainer_0_log.txt; return the GLOBAL_STEP of the first NaN block."""
    rng = np.random.default_rng(seed)
    h = (lambda s: f"{B}{s}{E}") if ansi != "none" else (lambda s: s)

    def fmt(v: float) -> str:
        s = "nan" if math.isnan(v) else (f"{v:.{digits}f}" if digits else repr(float(v)))
        return f"{G}{s}{E}" if ansi == "values" else s

    lines = [
        " > Training Environment:",
        " | > Backend: Torch",
        " | > Mixed precision: True",
        " | > Precision: fp16",
        " | > Num. of GPUs: 1",
        "",
        " > Model has 83059180 parameters",
        "",
        (f"{U}{B}" if ansi != "none" else "") + " > EPOCH: 606/1000" + (E if ansi != "none" else ""),
        " --> output/vits_run-0000",
        "",
        h(" > TRAINING (2024-05-02 03:11:07) "),
        "",
    ]
    sums: dict[str, float] = {}
    for b in range(n_finite + n_nan):
        gs = first + b * interval
        local = 1 + (30 + b * interval) % 405
        head = (
            f"   --> STEP: {local}/405 -- GLOBAL_STEP: {gs}"
            if style == "old"
            else f"   --> TIME: 2024-05-02 03:{11 + b % 40:02d}:07 -- STEP: {local}/405 -- GLOBAL_STEP: {gs}"
        )
        lines.append(h(head))
        nan_block = b >= n_finite
        k = b - (n_finite - collapse)
        scaler = 0.0 if nan_block else (64.0 if k < 0 else 64.0 / 2 ** round(17 * (k + 1) / collapse))
        v = {
            "loss_disc": 2.4 + 0.1 * rng.standard_normal(),
            "loss_gen": 2.25 + 0.1 * rng.standard_normal(),
            "loss_kl": 1.6 + 0.08 * rng.standard_normal(),
            "loss_feat": 6.3 + 0.3 * rng.standard_normal(),
            "loss_mel": 21.2 + 0.3 * rng.standard_normal(),
            "loss_duration": 2.46 + 0.03 * rng.standard_normal(),
            "grad_norm_0": 40 + 10 * rng.random(),
            "grad_norm_1": 550 + 120 * rng.random(),
            "step_time": 0.6 + 0.05 * rng.random(),
            "loader_time": 0.05 + 0.01 * rng.random(),
            "amp_scaler": scaler,
        }
        for r in range(6):
            v[f"loss_disc_real_{r}"] = 0.21 + 0.03 * rng.standard_normal()
        v["loss_0"] = v["loss_disc"]
        v["loss_1"] = v["loss_gen"] + v["loss_kl"] + v["loss_feat"] + v["loss_mel"] + v["loss_duration"]
        if nan_block:
            for key in NAN_KEYS:
                v[key] = math.nan
            v["grad_norm_0"] = v["grad_norm_1"] = 0.0
        for key in COQUI_KEYS:
            if key.startswith("current_lr"):
                lines.append(f"     | > {key}: 0.00019 ")
                continue
            sums[key] = sums.get(key, 0.0) + v[key]
            lines.append(f"     | > {key}: {fmt(v[key])}  ({fmt(sums[key] / (b + 1))})")
        lines += ["", ""]
    lines.append(" ! Run is kept in output/vits_run-0000")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return first + n_finite * interval


def check_coqui_nan(rep: dict, code: int, nan_step: int) -> None:
    assert rep["verdict"] == "FAIL" and code == 1, ids(rep)
    assert rep["format"] == "coqui" and rep["error"] is None  # escape codes are no read error
    assert rep["mapping"]["loss"]["source"] in ("loss_0", "loss_1", "loss")  # never loss_mel
    f = finding(rep, "TP-NAN")
    assert f["level"] == "FAIL" and f["step"] == nan_step
    # A 0.0 grad norm next to NaN losses is the scaler collapse, not a dead run.
    absent(
        rep,
        "TP-PASS",
        "TP-DEAD-RUN",
        "TP-ZERO-GRAD",
        "TP-VANISHING-GRAD",
        "TP-FLAT",
        *ZERO_LOSS_IDS,
        "TP-RL-DEAD-POLICY",
    )


SCALER = re.compile(r"amp_scaler|loss scale|grad ?scaler", re.I)


def check_scaler_cited(rep: dict) -> None:
    said = text(rep)  # message and evidence, not the generic hint
    assert SCALER.search(said), (
        "the amp_scaler collapse is not cited",
        [(f["id"], f["evidence"]) for f in rep["findings"]],
    )


def test_case12_shared_coqui_nan_with_finite_mel_loss(shared):
    p = case_path(shared, "12-coqui-vits-nan-with-finite-mel-loss/trainer_0_log.txt")
    code, rep = judge_cli(p)
    check_coqui_nan(rep, code, nan_step=246000)


def test_case12_shared_coqui_scaler_collapse_is_cited(shared):
    """case.md: corroborating WARN/evidence, amp_scaler collapsed from 64 to 0."""
    p = case_path(shared, "12-coqui-vits-nan-with-finite-mel-loss/trainer_0_log.txt")
    code, rep = judge_cli(p)
    assert code == 1
    check_scaler_cited(rep)


COQUI_VARIANTS = [
    # finite blocks, NaN blocks, interval, first GLOBAL_STEP, blocks of scaler collapse, ANSI, header style, digits
    (14, 1, 25, 245650, 11, "header", "old", 5),
    (5, 1, 50, 1000, 3, "none", "old", 5),
    (20, 3, 25, 80025, 8, "values", "new", 5),
    (30, 2, 10, 500, 12, "header", "new", 0),
    (8, 1, 100, 246000, 5, "none", "old", 0),
]


@pytest.mark.parametrize("n_finite,n_nan,interval,first,collapse,ansi,style,digits", first_cases_fast(COQUI_VARIANTS))
def test_case12_kind_coqui_gan_nan_with_finite_mel(
    tmp_path, n_finite, n_nan, interval, first, collapse, ansi, style, digits
):
    p = tmp_path / "trainer_0_log.txt"
    nan_step = coqui_log(p, n_finite, n_nan, interval, first, collapse, ansi, style, digits, seed=n_finite)
    code, rep = judge_cli(p)
    check_coqui_nan(rep, code, nan_step)
    assert finding(rep, "TP-NAN")["data"]["count"] == n_nan


@pytest.mark.parametrize("variant", [COQUI_VARIANTS[1], COQUI_VARIANTS[2]], ids=["short-plain", "long-coloured"])
def test_case12_kind_coqui_scaler_collapse_is_cited(tmp_path, variant):
    p = tmp_path / "trainer_0_log.txt"
    coqui_log(p, *variant, seed=variant[0])
    code, rep = judge_cli(p)
    assert code == 1
    check_scaler_cited(rep)


# =========================================================================== 14
# One huge pre-clip grad_norm (outlier batch) while the loss stays healthy.


def spike_rows(n: int, spikes: dict[int, float], first: float | None, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        step = i + 1
        g = float(5 + 10 * rng.random())
        if i in spikes:
            g = spikes[i] * 10.0
        if i == 0 and first is not None:
            g = first
        lr = 1e-4 * min(1.0, (i + 1) / 20)
        rows.append(
            {
                "epoch": round(step / (10 * n), 4),
                "grad_norm": g,
                "learning_rate": lr,
                "loss": round(1.45 - 0.25 * i / n + 0.08 * rng.standard_normal(), 4),
                "step": step,
            }
        )
    return rows


def check_spike(rep: dict, code: int, spike_step: int, value: float) -> None:
    assert rep["verdict"] == "WARN" and code == 0, [(f["id"], f["message"]) for f in rep["findings"]]
    assert "FAIL" not in levels(rep)
    absent(rep, "TP-NAN-GRAD", "TP-GRAD-OVERFLOW-SKIPPED", "TP-NAN", "TP-DIVERGE", *LR_IDS)
    f = finding(rep, "TP-GRAD-SPIKE")
    assert f["level"] == "WARN" and f["step"] == spike_step
    assert f["data"]["max"] == pytest.approx(value) and f["data"]["max_step"] == spike_step
    # The evidence gives the step, the value, the baseline and the ratio; never NaN/Inf.
    said = f["message"] + " " + f["evidence"]
    assert f"step {spike_step}" in said and "median" in said and re.search(r"\d+x", said), said
    assert not re.search(r"\bnan\b|\binf\b|non-finite", said, re.I), said


def test_case14_shared_isolated_grad_spike(shared):
    p = case_path(shared, "14-isolated-grad-norm-spike-healthy-loss/trainer_state.json")
    code, rep = judge_cli(p)
    check_spike(rep, code, spike_step=9, value=11140.0)
    assert 5 <= finding(rep, "TP-GRAD-SPIKE")["data"]["median"] <= 12


SPIKE_VARIANTS = [
    # fmt, logged steps, {index: spike as a multiple of ~10}, a large first norm
    ("hf", 40, {3: 9.2, 8: 1114.0}, None),
    ("hf", 100, {50: 15.0}, None),
    ("hf", 25, {1: 200.0}, None),  # right after the first logged norm
    ("hf", 200, {199: 50.0}, None),  # at the last logged step
    ("hf", 30, {15: 100.0}, 500.0),  # a big first norm is not the finding
    ("jsonl", 60, {20: 1000.0}, None),
    ("jsonl", 80, {10: 30.0, 60: 300.0}, None),
]


@pytest.mark.parametrize("fmt,n,spikes,first", first_cases_fast(SPIKE_VARIANTS))
def test_case14_kind_isolated_grad_spike(tmp_path, fmt, n, spikes, first):
    rows = spike_rows(n, spikes, first, seed=n + len(spikes))
    big = max(spikes, key=spikes.get)
    p = write_rows(tmp_path, fmt, rows, max_steps=10 * n, logging_steps=1)
    code, rep = judge_cli(p)
    check_spike(rep, code, spike_step=big + 1, value=spikes[big] * 10.0)


# =========================================================================== 16
# Overfitting: eval loss bottoms out, then rises at every later evaluation.


def overfit_hf_rows(
    n_evals: int, best: int, eval_every: int, log_every: int, end_ratio: float, seed: int
) -> tuple[list[dict], list[float]]:
    rng = np.random.default_rng(seed)
    total = n_evals * eval_every
    n_logs = total // log_every
    lrs = cosine_lr(n_logs, 1e-4, warmup=max(1, n_logs // 20))
    evals = [1.12 + 0.2 * (best - k) / max(best, 1) for k in range(best + 1)]
    after = n_evals - 1 - best
    evals += [1.12 * end_ratio ** ((k + 1) / after) for k in range(after)]
    rows = []
    for i in range(n_logs):
        step = (i + 1) * log_every
        rows.append(
            {
                "epoch": round(3 * step / total, 4),
                "grad_norm": float(0.6 + 0.6 * rng.random()),
                "learning_rate": lrs[i],
                "loss": round(0.65 + 1.35 * math.exp(-2 * step / total) + 0.02 * rng.standard_normal(), 4),
                "step": step,
            }
        )
        if step % eval_every == 0:
            rows.append(
                {
                    "epoch": round(3 * step / total, 4),
                    "eval_loss": round(evals[step // eval_every - 1], 4),
                    "eval_runtime": 12.4,
                    "step": step,
                }
            )
    return rows, evals


def check_overfit(rep: dict, code: int, best_step: int, ckpt: str | None) -> None:
    assert rep["verdict"] == "WARN" and code == 0, [(f["id"], f["message"]) for f in rep["findings"]]
    assert "FAIL" not in levels(rep)
    absent(rep, "TP-DIVERGE", *LR_IDS)
    f = finding(rep, "TP-OVERFIT")
    assert f["level"] == "WARN" and f["step"] == best_step
    assert not re.search(r"diverg", text(rep), re.I)
    if ckpt:
        assert ckpt in f["evidence"], f["evidence"]


def test_case16_shared_eval_loss_rises_after_step_200(shared):
    p = case_path(shared, "16-eval-loss-rises-after-step-200/trainer_state.json")
    code, rep = judge_cli(p)
    check_overfit(rep, code, best_step=200, ckpt="checkpoint-200")
    f = finding(rep, "TP-OVERFIT")
    assert f["data"]["eval_min"] == pytest.approx(1.1204)
    assert f["data"]["evals_after_min"] == 4


OVERFIT_VARIANTS = [
    # fmt, evaluations, index of the best one, eval_steps, logging_steps, last eval / best, best checkpoint
    ("hf", 6, 1, 100, 20, 1.25, True),
    ("hf", 10, 3, 50, 10, 1.5, True),
    ("hf", 8, 4, 250, 50, 1.3, False),
    ("hf", 15, 5, 200, 25, 2.0, True),
    ("jsonl", 7, 2, 100, 10, 1.4, False),
    ("keras", 14, 4, 1, 1, 1.6, False),
    ("keras", 20, 9, 1, 1, 1.35, False),
]


@pytest.mark.parametrize("fmt,n_evals,best,eval_every,log_every,end_ratio,ckpt", first_cases_fast(OVERFIT_VARIANTS))
def test_case16_kind_eval_loss_rises_after_minimum(
    tmp_path, fmt, n_evals, best, eval_every, log_every, end_ratio, ckpt
):
    seed = n_evals * 10 + best
    if fmt == "keras":
        rng = np.random.default_rng(seed)
        vals = keras_values(n_evals, seed)
        ev = [1.12 + 0.3 * (best - k) / best for k in range(best + 1)]
        ev += [1.12 * end_ratio ** ((k + 1) / (n_evals - 1 - best)) for k in range(n_evals - 1 - best)]
        p = write_csv(
            tmp_path / "training.log",
            ["epoch", "accuracy", "loss", "val_accuracy", "val_loss"],
            [
                [
                    e,
                    round(vals[e]["accuracy"], 6),
                    round(vals[e]["loss"], 6),
                    round(0.6 + 0.01 * rng.random(), 6),
                    round(ev[e], 6),
                ]
                for e in range(n_evals)
            ],
        )
        best_step, name = best, None
    else:
        rows, _ = overfit_hf_rows(n_evals, best, eval_every, log_every, end_ratio, seed)
        best_step = (best + 1) * eval_every
        name = f"output/checkpoint-{best_step}" if ckpt else None
        top = {"max_steps": n_evals * eval_every, "eval_steps": eval_every, "logging_steps": log_every}
        if ckpt:
            top.update(best_metric=1.12, best_model_checkpoint=name)
        p = write_rows(tmp_path, fmt, rows, summary=hf_summary(n_evals * eval_every, 0.9), **top)
    code, rep = judge_cli(p)
    check_overfit(rep, code, best_step=best_step, ckpt=name)
    f = finding(rep, "TP-OVERFIT")
    assert f["data"]["evals_after_min"] == n_evals - 1 - best
    assert f["data"]["eval_min"] == pytest.approx(1.12, abs=1e-4)


# =========================================================================== 17
# A step-time cliff driven by the data loader; the loss is fine.


def cliff_rows(n: int, cliff: int, every: int, factor: float, key: str, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        data = 0.013 + 0.002 * rng.random()
        if i >= cliff:
            data += 0.207 * (factor - 1) * (1 + 0.05 * rng.standard_normal())
        st = 0.194 + 0.01 * rng.random() + data
        rows.append(
            {
                "step": (i + 1) * every,
                "loss": round(6.9 - 4.0 * i / n + 0.01 * rng.standard_normal(), 4),
                "step_time": round(st, 4),
                key: round(data, 4),
            }
        )
    return rows


def check_cliff(rep: dict, code: int, cliff_step: int) -> None:
    assert rep["verdict"] == "WARN" and code == 0, [(f["id"], f["message"]) for f in rep["findings"]]
    assert "FAIL" not in levels(rep)
    absent(rep, *LOSS_IDS)  # a performance finding, not a loss finding
    f = finding(rep, "TP-STEP-CLIFF")
    assert f["level"] == "WARN" and f["step"] == cliff_step
    lb = finding(rep, "TP-LOADER-BOUND")
    assert lb["level"] == "WARN"
    # The slowdown is attributed to data loading, not to the model or the optimizer.
    assert re.search(r"data load|loader", f["evidence"], re.I), f["evidence"]
    assert f["data"]["loader_share_of_increase"] > 0.5
    assert not re.search(r"optimi[sz]er|model", f["message"] + f["evidence"], re.I)


def test_case17_shared_step_time_cliff_dataloader_bound(shared):
    p = case_path(shared, "17-step-time-cliff-dataloader-bound/metrics.jsonl")
    code, rep = judge_cli(p)
    check_cliff(rep, code, cliff_step=401)
    assert finding(rep, "TP-STEP-CLIFF")["data"]["ratio"] == pytest.approx(4.2, abs=0.1)


CLIFF_VARIANTS = [
    # fmt, logged steps, index of the first slow step, step spacing, slowdown, loader key
    ("jsonl", 600, 400, 1, 4.2, "data_time"),
    ("jsonl", 120, 60, 1, 3.6, "loader_time"),
    ("jsonl", 1000, 750, 1, 6.0, "data_time"),
    ("jsonl", 200, 90, 10, 5.0, "data_time"),
    ("csv", 300, 180, 1, 4.5, "data_time"),
    ("csv", 50, 30, 20, 8.0, "loader_time"),
]


@pytest.mark.parametrize("fmt,n,cliff,every,factor,key", first_cases_fast(CLIFF_VARIANTS))
def test_case17_kind_step_time_cliff_loader_driven(tmp_path, fmt, n, cliff, every, factor, key):
    rows = cliff_rows(n, cliff, every, factor, key, seed=n + cliff)
    if fmt == "csv":
        cols = ["step", "loss", "step_time", key]
        p = write_csv(tmp_path / "metrics.csv", cols, [[r[c] for c in cols] for r in rows])
    else:
        p = write_jsonl(tmp_path / "metrics.jsonl", rows)
    code, rep = judge_cli(p)
    check_cliff(rep, code, cliff_step=(cliff + 1) * every)
