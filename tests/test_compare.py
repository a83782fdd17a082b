"""`trainproof compare` and `doctor --baseline`: a run against a known-good baseline."""
from __future__ import annotations

import json

import numpy as np
import pytest

from trainproof.api import compare

from conftest import REPO, run_cli, write_hf, write_jsonl

EX = REPO / "examples"


def _rows(n, start, floor, seed=0, every=10, gn=0.5, noise=0.03, lr=1e-4):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        level = floor + (start - floor) * np.exp(-i / (n / 5))
        out.append({"step": (i + 1) * every, "loss": float(level * np.exp(noise * rng.standard_normal())),
                    "grad_norm": float(gn * np.exp(0.1 * rng.standard_normal())), "learning_rate": lr})
    return out


def test_examples_rank_a_healthy_run_pass_and_broken_runs_fail():
    code, out, _, doc = run_cli("compare", str(EX / "healthy_seed1" / "metrics.jsonl"),
                                str(EX / "healthy" / "metrics.jsonl"), str(EX / "bad_labels" / "metrics.jsonl"),
                                str(EX / "diverge" / "metrics.jsonl"), "--json")
    assert code == 1
    v = {r["file"].split("examples/")[1]: r for r in doc["reports"]}
    assert v["healthy/metrics.jsonl"]["verdict"] == "PASS"
    assert "TP-CMP-PASS" in [f["id"] for f in v["healthy/metrics.jsonl"]["findings"]]
    bad = v["bad_labels/metrics.jsonl"]
    assert bad["verdict"] == "FAIL"
    ids = {f["id"] for f in bad["findings"] if f["source"] == "compare"}
    assert {"TP-FLOOR-RATIO", "TP-END-RATIO"} <= ids
    # on its own curve the shuffled-label run passes: only the comparison catches it
    assert not [f for f in bad["findings"] if f["source"] == "single_run" and f["level"] == "FAIL"]
    assert bad["meta"]["compare"]["floor_ratio"] > 5
    assert v["diverge/metrics.jsonl"]["verdict"] == "FAIL"
    assert doc["baseline"]["verdict"] == "PASS" and doc["command"] == "compare"


def test_ranking_table_is_worst_first():
    code, out, _, _ = run_cli("compare", str(EX / "healthy_seed1" / "metrics.csv"), str(EX / "healthy" / "metrics.csv"),
                              str(EX / "bad_labels" / "metrics.csv"))
    assert code == 1
    table = out.split("\n\n")[0]
    body = table.split("┡")[1]
    assert body.index("FAIL") < body.index("PASS")  # the shuffled-label run ranks first
    assert "floor ratio" in table and "20." in body


@pytest.mark.parametrize("floor_mult,expect", [(1.2, "TP-CMP-PASS"), (3.0, "TP-FLOOR-RATIO"), (8.0, "TP-FLOOR-RATIO")])
def test_floor_ratio_variants(tmp_path, floor_mult, expect):
    base = write_jsonl(tmp_path / "base.jsonl", _rows(80, 2.0, 0.3))
    run = write_jsonl(tmp_path / "run.jsonl", _rows(80, 2.0, 0.3 * floor_mult, seed=1))
    _, reps = compare(base, [run])
    assert expect in reps[0].ids()


def test_mixed_formats_different_intervals_and_an_early_stop(tmp_path):
    base = write_hf(tmp_path / "trainer_state.json", _rows(100, 2.0, 0.3, every=10))
    rows = _rows(120, 2.0, 0.32, seed=2, every=5)[:80]  # logs every 5 steps, stopped at step 400
    run = tmp_path / "run.csv"
    run.write_text("step,loss,grad_norm\n" + "".join(f"{r['step']},{r['loss']},{r['grad_norm']}\n" for r in rows))
    _, reps = compare(base, [run])
    rep = reps[0]
    assert rep.meta["compare"]["steps"] == [10.0, 400.0]
    cmp_findings = [f for f in rep.findings if f.source == "compare"]
    assert any("Compared over steps 10–400" in f.evidence and "The run stopped early, at step 400" in f.evidence
               for f in cmp_findings)


def test_negative_improvement_and_deficit(tmp_path):
    base = write_jsonl(tmp_path / "base.jsonl", _rows(80, 2.0, 0.3))
    up = [{"step": (i + 1) * 10, "loss": 1.0 + 0.01 * i, "grad_norm": 0.5} for i in range(80)]
    run = write_jsonl(tmp_path / "run.jsonl", up)
    _, reps = compare(base, [run])
    assert {"TP-NEG-IMPROVE", "TP-IMPROVE-DEFICIT"} <= set(reps[0].ids())


def test_gradnorm_ratio_is_a_warning(tmp_path):
    base = write_jsonl(tmp_path / "base.jsonl", _rows(80, 2.0, 0.3, gn=0.5))
    run = write_jsonl(tmp_path / "run.jsonl", _rows(80, 2.0, 0.3, seed=3, gn=5.0))
    _, reps = compare(base, [run])
    f = [f for f in reps[0].findings if f.id == "TP-GRADNORM-RATIO"][0]
    assert f.level.value == "WARN" and f.data["ratio"] > 5


def test_a_failing_baseline_is_flagged(tmp_path):
    bad = [{"step": (i + 1) * 10, "loss": 1.4 + 0.01 * np.sin(i), "learning_rate": 0.0} for i in range(60)]
    base = write_jsonl(tmp_path / "base.jsonl", bad)
    run = write_jsonl(tmp_path / "run.jsonl", _rows(60, 2.0, 0.3))
    base_rep, reps = compare(base, [run])
    assert base_rep.verdict.value == "FAIL"
    f = [f for f in reps[0].findings if f.id == "TP-BAD-BASELINE"][0]
    assert "TP-ZERO-LR" in f.data["baseline_fails"]


def test_uncomparable_is_exit_2_without_another_fail(tmp_path):
    base = write_jsonl(tmp_path / "base.jsonl", _rows(80, 2.0, 0.3))
    short = write_jsonl(tmp_path / "short.jsonl", _rows(6, 2.0, 0.3))
    code, _, _, doc = run_cli("compare", str(base), str(short), "--json")
    rep = doc["reports"][0]
    assert code == 2
    f = [f for f in rep["findings"] if f["id"] == "TP-CMP-UNCOMPARABLE"][0]
    assert "6 finite loss points" in f["evidence"] and f["level"] == "NOT-CHECKED"
    assert rep["checks"]["skipped"]["TP-FLOOR-RATIO"]["reason"] == "degenerate"


def test_unreadable_baseline_is_exit_2(tmp_path):
    run = write_jsonl(tmp_path / "run.jsonl", _rows(60, 2.0, 0.3))
    code, _, err, doc = run_cli("compare", str(tmp_path / "missing.jsonl"), str(run), "--json")
    assert code == 2 and "baseline" in doc["error"] and doc["reports"] == []


def test_doctor_with_a_baseline_compares_every_run(tmp_path):
    root = tmp_path / "runs"
    write_jsonl(root / "good" / "metrics.jsonl", _rows(80, 2.0, 0.3, seed=4))
    write_jsonl(root / "shuffled" / "metrics.jsonl", _rows(80, 2.0, 1.6, seed=5))
    base = write_jsonl(tmp_path / "base" / "metrics.jsonl", _rows(80, 2.0, 0.3))
    code, _, _, doc = run_cli("doctor", str(root), "--baseline", str(base), "--json")
    v = {r["file"].split("runs/")[1]: r for r in doc["reports"]}
    assert code == 1
    assert "TP-CMP-PASS" in [f["id"] for f in v["good/metrics.jsonl"]["findings"]]
    assert "TP-FLOOR-RATIO" in [f["id"] for f in v["shuffled/metrics.jsonl"]["findings"]]


def test_doctor_with_an_unreadable_baseline_says_so(tmp_path):
    root = tmp_path / "runs"
    write_jsonl(root / "good" / "metrics.jsonl", _rows(80, 2.0, 0.3, seed=4))
    code, _, _, doc = run_cli("doctor", str(root), "--baseline", str(tmp_path / "nope.jsonl"), "--json")
    f = [f for f in doc["reports"][0]["findings"] if f["id"] == "TP-CMP-ERROR"][0]
    assert f["level"] == "WARN" and "could not be read" in f["evidence"]
    assert code == 0


def test_compare_json_is_deterministic(tmp_path):
    base = write_jsonl(tmp_path / "base.jsonl", _rows(80, 2.0, 0.3))
    run = write_jsonl(tmp_path / "run.jsonl", _rows(80, 2.0, 0.9, seed=1))
    a = run_cli("compare", str(base), str(run), "--json")[1]
    b = run_cli("compare", str(base), str(run), "--json")[1]
    assert a == b and json.loads(a)["reports"][0]["verdict"] == "FAIL"
