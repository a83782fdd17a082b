"""A step counter that restarts every epoch (issue 32): OpenMMLab's ``*.log.json``, whose
``iter`` counts within the epoch, and loops that log ``{"epoch": e, "step": batch_idx}``.
The (epoch, step in the epoch) pair is one x axis: the whole run is judged, not its last
epoch as a resume, and a true resume inside such a log is still a resume."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from trainproof.api import judge, read_runlog
from trainproof.findings import Level

EPOCHS = 12


def _loss(t: int, total: int, diverge: bool, rng: np.random.Generator) -> float:
    # A healthy fall to a floor, flat for the last epochs (the last epoch alone looks dead).
    x = 2.0 * math.exp(-t / (total / 8)) + 0.3 + float(rng.normal(0, 0.01))
    if diverge and t > total / 2:
        x *= math.exp((t - total / 2) / (total / 12))
    return x


def _openmmlab(path: Path, diverge: bool = False, iters: int = 400, every: int = 20, val_iter: int = 125) -> int:
    """An mmdet-2.x-style log: a header object, train rows (``iter`` within the epoch)
    and one validation row per epoch (``iter``: the validation batches in mmcv 1.3 and
    later, the epoch's train iterations before). Returns the number of train rows."""
    rng = np.random.default_rng(1)
    total = EPOCHS * iters
    rows = [{"env_info": "sys.platform: linux", "config": "model = dict()", "seed": 0, "exp_name": "cfg.py"}]
    t = n = 0
    for e in range(1, EPOCHS + 1):
        for it in range(every, iters + 1, every):
            t += every
            loss = _loss(t, total, diverge, rng)
            rows.append(
                {
                    "mode": "train",
                    "epoch": e,
                    "iter": it,
                    "lr": 0.02,
                    "memory": 3000,
                    "data_time": 0.01,
                    "loss_cls": 0.6 * loss,
                    "loss_bbox": 0.4 * loss,
                    "loss": loss,
                    "time": 0.4,
                }
            )
            n += 1
        rows.append({"mode": "val", "epoch": e, "iter": val_iter, "lr": 0.02, "bbox_mAP": 0.1 + 0.02 * e})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return n


def _epoch_step(diverge: bool = False, batches: int = 100, every: int = 5) -> list[dict]:
    """``{"epoch": e, "step": batch_idx, "loss": x}`` rows, epochs from 0, batch index from 0."""
    rng = np.random.default_rng(2)
    total = EPOCHS * batches
    out = []
    t = 0
    for e in range(EPOCHS):
        for b in range(0, batches, every):
            t += every
            out.append({"epoch": e, "step": b, "loss": _loss(t, total, diverge, rng)})
    return out


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _csv(path: Path, rows: list[dict]) -> Path:
    path.write_text("epoch,step,loss\n" + "".join(f"{r['epoch']},{r['step']},{r['loss']!r}\n" for r in rows))
    return path


def _within_note(notes: list[str]) -> bool:
    return any("the step counts within each epoch" in n for n in notes)


@pytest.mark.parametrize("val_iter", [125, 400])
def test_openmmlab_log_json_is_judged_whole(tmp_path: Path, val_iter: int) -> None:
    p = tmp_path / "20240101_000000.log.json"
    n = _openmmlab(p, val_iter=val_iter)
    run = read_runlog(p)
    loss = run.get("loss")
    assert len(loss) == n  # every epoch's rows, not the last epoch's
    assert np.all(np.diff(loss.steps) > 0)
    assert _within_note(run.notes)
    assert not any("resumed run" in x or "runs appended" in x for x in run.notes)
    # Epoch 2's first row comes after epoch 1's last.
    assert loss.steps[0] == 20 and loss.steps[n // EPOCHS] > loss.steps[n // EPOCHS - 1]
    assert judge(p).verdict != Level.FAIL


@pytest.mark.parametrize("val_iter", [125, 400])
def test_openmmlab_log_json_diverging_fails(tmp_path: Path, val_iter: int) -> None:
    p = tmp_path / "run.log.json"
    n = _openmmlab(p, diverge=True, val_iter=val_iter)
    rep = judge(p)
    assert rep.verdict == Level.FAIL
    assert "TP-DIVERGE" in {f.id for f in rep.findings}
    assert len(read_runlog(p).get("loss")) == n


def test_epoch_and_batch_index_jsonl(tmp_path: Path) -> None:
    rows = _epoch_step()
    p = _jsonl(tmp_path / "metrics.jsonl", rows)
    run = read_runlog(p)
    loss = run.get("loss")
    assert len(loss) == len(rows)
    # 0-based batch index, 100 batches an epoch: the global step is epoch * 100 + index.
    assert loss.steps.tolist() == [r["epoch"] * 100 + r["step"] for r in rows]
    assert _within_note(run.notes)
    assert judge(p).verdict != Level.FAIL
    bad = _jsonl(tmp_path / "bad.jsonl", _epoch_step(diverge=True))
    rep = judge(bad)
    assert rep.verdict == Level.FAIL and "TP-DIVERGE" in {f.id for f in rep.findings}
    assert len(read_runlog(bad).get("loss")) == len(rows)


def test_epoch_and_batch_index_csv(tmp_path: Path) -> None:
    rows = _epoch_step()
    p = _csv(tmp_path / "log.csv", rows)
    run = read_runlog(p)
    assert len(run.get("loss")) == len(rows)
    assert _within_note(run.notes)
    assert judge(p).verdict != Level.FAIL
    bad = _csv(tmp_path / "bad.csv", _epoch_step(diverge=True))
    assert judge(bad).verdict == Level.FAIL
    assert len(read_runlog(bad).get("loss")) == len(rows)


def test_true_resume_is_still_a_resume(tmp_path: Path) -> None:
    # A global step with an epoch column: resumed from step 150 after step 250, the
    # epoch does not rise where the step goes back.
    rows = [{"epoch": s // 100, "step": s, "loss": 2.0 - s / 1000} for s in range(0, 260, 10)]
    rows += [{"epoch": s // 100, "step": s, "loss": 1.5 - s / 1000} for s in range(150, 400, 10)]
    run = read_runlog(_jsonl(tmp_path / "resumed.jsonl", rows))
    loss = run.get("loss")
    assert loss.steps.tolist() == [float(s) for s in range(0, 400, 10)]
    assert loss.values[loss.steps.tolist().index(200.0)] == 1.5 - 0.2  # the later write wins
    assert any("a resumed run" in x for x in run.notes)
    assert not _within_note(run.notes)


def test_resume_inside_an_epoch_counted_log(tmp_path: Path) -> None:
    # Step within the epoch; killed in epoch 3 at batch 80, resumed at epoch 3's start.
    rows = [{"epoch": e, "step": b, "loss": 2.0 - e / 10 - b / 1000} for e in range(3) for b in range(0, 100, 10)]
    rows += [{"epoch": 3, "step": b, "loss": 9.0} for b in range(0, 90, 10)]
    rows += [{"epoch": e, "step": b, "loss": 1.6 - (e - 3) / 10 - b / 1000} for e in (3, 4) for b in range(0, 100, 10)]
    run = read_runlog(_jsonl(tmp_path / "resumed.jsonl", rows))
    loss = run.get("loss")
    assert _within_note(run.notes)
    assert any("a resumed run" in x for x in run.notes)
    assert len(loss) == 50 and np.all(np.diff(loss.steps) > 0)
    assert not np.any(loss.values == 9.0)  # the resumed epoch replaced the killed one


def test_resume_to_an_earlier_epoch_stays_a_resume(tmp_path: Path) -> None:
    # Killed in epoch 4, resumed from the checkpoint of epoch 2: the epoch goes back.
    rows = [{"epoch": e, "step": b, "loss": 5.0} for e in range(5) for b in range(0, 100, 10)]
    rows += [{"epoch": e, "step": b, "loss": 1.0} for e in range(2, 6) for b in range(0, 100, 10)]
    loss = read_runlog(_jsonl(tmp_path / "r.jsonl", rows)).get("loss")
    assert len(loss) == 60
    assert loss.values.tolist() == [5.0] * 20 + [1.0] * 40


def test_global_step_reset_once_is_not_within_epoch(tmp_path: Path) -> None:
    # One row per epoch, a global step that a resume reset once while epochs went on
    # (the corpus's NMT distillation log): not a counter within the epoch.
    rows = [{"epoch": e, "step": 7142 * e, "loss": 4.0 - e / 100} for e in range(1, 9)]
    rows += [{"epoch": e, "step": 7142 * (e - 8), "loss": 4.0 - e / 100} for e in range(9, 21)]
    run = read_runlog(_jsonl(tmp_path / "d.jsonl", rows))
    assert not _within_note(run.notes)


def test_steps_near_the_float_range_are_not_read_as_epochs_of_that_many_steps(tmp_path):
    # Found by the JSONL reader's property test: epochs of ~1e308 steps overflow the global
    # step to inf and NaN; the steps stay as logged, finite and never decreasing.
    import numpy as np

    from trainproof.api import read_runlogs

    p = tmp_path / "x.jsonl"
    p.write_text(
        '{"epoch":-1,"STEP":0}\n{"step": null, "current_steps": -1, "loss": null, "epoch": 0}\n'
        '{"step": 8.98846567431158e+307}\n'
    )
    for run in read_runlogs(p):
        for s in run.series.values():
            assert np.all(np.isfinite(s.steps)) and np.all(np.diff(s.steps) >= 0), (s.name, s.steps)
