"""TP-DIVERGE and TP-OVERFIT name the best checkpoint the log records, and only that."""

from __future__ import annotations

import numpy as np

from trainproof import judge

from conftest import write_hf


def _overfit_rows():
    rows = []
    for i in range(1, 61):
        rows.append({"step": i * 10, "loss": float(2.0 * np.exp(-i / 20) + 0.1), "learning_rate": 1e-4})
        if i % 10 == 0:
            ev = [1.3, 1.1, 1.2, 1.35, 1.5, 1.6][i // 10 - 1]
            rows.append({"step": i * 10, "eval_loss": ev})
    return rows


def test_overfit_names_hf_best_checkpoint_and_distance_to_the_end(tmp_path):
    p = write_hf(
        tmp_path / "trainer_state.json",
        _overfit_rows(),
        best_model_checkpoint="out/checkpoint-200",
        best_global_step=200,
    )
    f = [f for f in judge(p).findings if f.id == "TP-OVERFIT"][0]
    assert f.step == 200
    assert "out/checkpoint-200 (step 200, 400 steps before the end of the log)" in f.evidence
    assert f.data["best_checkpoint_step"] == 200 and f.data["steps_before_end"] == 400


def test_step_is_read_from_the_checkpoint_name_when_not_declared(tmp_path):
    p = write_hf(tmp_path / "trainer_state.json", _overfit_rows(), best_model_checkpoint="out/checkpoint-200")
    f = [f for f in judge(p).findings if f.id == "TP-OVERFIT"][0]
    assert f.data["best_checkpoint_step"] == 200


def test_no_checkpoint_sentence_when_the_log_records_none(tmp_path):
    p = write_hf(tmp_path / "trainer_state.json", _overfit_rows())
    f = [f for f in judge(p).findings if f.id == "TP-OVERFIT"][0]
    assert "checkpoint is" not in f.evidence and "best_checkpoint" not in f.data


def test_divergence_names_coqui_best_model(tmp_path):
    lines = []
    for i in range(40):
        loss = 1.0 if i < 10 else 4.0
        lines += [
            f"   --> STEP: {i}/100 -- GLOBAL_STEP: {1000 + 25 * i}",
            f"     | > loss: {loss + 0.01 * (i % 3)}  (1.0)",
            "",
        ]
        if i == 8:
            lines += [" > BEST MODEL : run/best_model_1200.pth", ""]
    p = tmp_path / "trainer_0_log.txt"
    p.write_text("\n".join(lines) + "\n")
    rep = judge(p)
    f = [f for f in rep.findings if f.id == "TP-DIVERGE"][0]
    assert "run/best_model_1200.pth (step 1200, 775 steps before the end of the log)" in f.evidence
