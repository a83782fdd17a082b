"""A restarting schedule whose every cycle decays to exactly 0 (HF's linear schedule reset
each epoch, a cosine with warm restarts to 0): each zero is the one step of its cycle at
rate 0, however few log rows the cycle has. Counted at the logging cadence an epoch of 5
rows read as a fifth of the run at lr 0 (a new user's healthy sawtooth WARNed
TP-ZERO-LR-PARTIAL at 12-19%). A zero phase of two logs or more, and zeros a constant
rate drops to without decaying, stay counted. Generated over cycle lengths, run lengths
and two readers."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from conftest import run_cli


def _run(cycles: int, rows: int, *, zero_rows: int = 1, decay: bool = True, seed: int = 0) -> list[dict]:
    """``cycles`` cycles of ``rows`` log rows: the rate decays linearly from a peak that
    shrinks each cycle to its last ``zero_rows`` rows at exactly 0 (``decay`` False: held at
    the peak, then 0); the loss falls with noise."""
    rng = np.random.default_rng(seed)
    out, step = [], 0
    for c in range(cycles):
        peak = 4e-5 * (1 - 0.5 * c / cycles)
        for r in range(rows):
            step += 100
            if r >= rows - zero_rows:
                lr = 0.0
            else:
                lr = peak * (1 - r / (rows - zero_rows)) if decay else peak
            loss = (0.3 + 0.4 * math.exp(-step / 3000)) * (1 + 0.05 * rng.standard_normal())
            out.append({"step": step, "loss": loss, "learning_rate": lr})
    return out


def _ids(tmp_path, rows: list[dict], fmt: str) -> set[str]:
    if fmt == "jsonl":
        p = tmp_path / "metrics.jsonl"
        p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        p = tmp_path / "trainer_state.json"
        p.write_text(json.dumps({"global_step": rows[-1]["step"], "log_history": rows}))
    _, _, _, doc = run_cli("judge", str(p), "--json")
    return {f["id"] for f in doc["reports"][0]["findings"] if f["level"] in ("WARN", "FAIL")}


@pytest.mark.parametrize("fmt", ["jsonl", "hf"])
@pytest.mark.parametrize("cycles,rows", [(10, 5), (20, 8), (4, 6), (30, 12)])
def test_a_schedule_that_decays_to_zero_each_cycle_is_not_a_zero_rate(tmp_path, fmt, cycles, rows):
    ids = _ids(tmp_path, _run(cycles, rows), fmt)
    assert not ids & {"TP-ZERO-LR", "TP-ZERO-LR-PARTIAL"}, ids


@pytest.mark.parametrize("cycles,rows", [(10, 5), (20, 8)])
def test_a_zero_phase_each_cycle_stays_counted(tmp_path, cycles, rows):
    # two logs at 0 each cycle: a stretch of the run without updates
    ids = _ids(tmp_path, _run(cycles, rows, zero_rows=2), "jsonl")
    assert ids & {"TP-ZERO-LR", "TP-ZERO-LR-PARTIAL"}, ids


@pytest.mark.parametrize("cycles,rows", [(10, 5), (20, 8)])
def test_a_rate_that_drops_to_zero_without_decaying_stays_counted(tmp_path, cycles, rows):
    ids = _ids(tmp_path, _run(cycles, rows, decay=False), "jsonl")
    assert ids & {"TP-ZERO-LR", "TP-ZERO-LR-PARTIAL"}, ids


@pytest.mark.parametrize("rows", [3, 4])
def test_a_short_cycle_cannot_show_its_zero_is_one_step(tmp_path, rows):
    # 3-4 logs a cycle: a LinearLR re-created every 3 epochs, one of them at 0, logs the
    # same values as a decay that touches 0 for one step (a breaker's case PASSed)
    ids = _ids(tmp_path, _run(40, rows), "jsonl")
    assert ids & {"TP-ZERO-LR", "TP-ZERO-LR-PARTIAL"}, ids


def test_a_rate_that_climbs_out_of_zero_gradually_stays_counted(tmp_path):
    # a cosine stepped per epoch (T_max of a few epochs): it decays to 0 and climbs back
    # through small rates, no restart; its zero log is a zero phase of the schedule
    rows = _run(12, 6)
    for i in range(len(rows)):
        r = i % 6
        rows[i]["learning_rate"] = 4e-5 * (1 + math.cos(math.pi * r / 3)) / 2 if r != 3 else 0.0
    ids = _ids(tmp_path, rows, "jsonl")
    assert ids & {"TP-ZERO-LR", "TP-ZERO-LR-PARTIAL"}, ids
