"""`trainproof compare` and `doctor --baseline`: a run against a known-good baseline."""

from __future__ import annotations

import json
import re

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
        out.append(
            {
                "step": (i + 1) * every,
                "loss": float(level * np.exp(noise * rng.standard_normal())),
                "grad_norm": float(gn * np.exp(0.1 * rng.standard_normal())),
                "learning_rate": lr,
            }
        )
    return out


def test_examples_rank_a_healthy_run_pass_and_broken_runs_fail():
    code, out, _, doc = run_cli(
        "compare",
        str(EX / "healthy_seed1" / "metrics.jsonl"),
        str(EX / "healthy" / "metrics.jsonl"),
        str(EX / "bad_labels" / "metrics.jsonl"),
        str(EX / "diverge" / "metrics.jsonl"),
        "--json",
    )
    assert code == 1
    v = {r["file"].split("examples/")[1]: r for r in doc["reports"]}
    assert v["healthy/metrics.jsonl"]["verdict"] == "PASS"
    assert "TP-CMP-PASS" in [f["id"] for f in v["healthy/metrics.jsonl"]["findings"]]
    bad = v["bad_labels/metrics.jsonl"]
    assert bad["verdict"] == "FAIL"
    ids = {f["id"] for f in bad["findings"] if f["source"] == "compare"}
    assert {"TP-FLOOR-RATIO", "TP-END-RATIO"} <= ids
    # on its own curve the shuffled-label run learns nothing a curve rule sees, except that
    # its loss sits at ln(4), chance for its 4 classes: the comparison catches it anyway
    assert {f["id"] for f in bad["findings"] if f["source"] == "single_run" and f["level"] == "FAIL"} <= {
        "TP-CHANCE-LEVEL"
    }
    assert bad["meta"]["compare"]["floor_ratio"] > 5
    assert v["diverge/metrics.jsonl"]["verdict"] == "FAIL"
    assert doc["baseline"]["verdict"] == "PASS" and doc["command"] == "compare"


def test_ranking_table_is_worst_first():
    code, out, _, _ = run_cli(
        "compare",
        str(EX / "healthy_seed1" / "metrics.csv"),
        str(EX / "healthy" / "metrics.csv"),
        str(EX / "bad_labels" / "metrics.csv"),
    )
    assert code == 1
    table = out.split("\n\n")[0]
    body = table.split("─\n")[-1]  # below the header's rule (doctor's table style)
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
    assert any(
        "Compared over steps 10–400" in f.evidence and "The run stopped early, at step 400" in f.evidence
        for f in cmp_findings
    )


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


@pytest.mark.slow
def test_compare_json_is_deterministic(tmp_path):
    base = write_jsonl(tmp_path / "base.jsonl", _rows(80, 2.0, 0.3))
    run = write_jsonl(tmp_path / "run.jsonl", _rows(80, 2.0, 0.9, seed=1))
    a = run_cli("compare", str(base), str(run), "--json")[1]
    b = run_cli("compare", str(base), str(run), "--json")[1]
    assert a == b and json.loads(a)["reports"][0]["verdict"] == "FAIL"


# ------------------------------------------------------------------ one verdict per report


def _merged(tmp_path, run_rows, base_rows=None):
    """The run's own report with the comparison merged in by ``merge_comparison``."""
    from trainproof.api import read_runlog
    from trainproof.rules.compare import compare_runlogs, merge_comparison
    from trainproof.rules.engine import judge_runlog

    base = read_runlog(write_jsonl(tmp_path / "base.jsonl", base_rows or _rows(80, 2.0, 0.3)))
    run = read_runlog(write_jsonl(tmp_path / "run.jsonl", run_rows))
    rep = judge_runlog(run)
    alone = rep.ids()
    return merge_comparison(rep, *compare_runlogs(base, run, judge_runlog(base))), alone


def test_a_compare_fail_keeps_the_run_alone_pass_as_a_note_not_a_pass_finding(tmp_path):
    # learns, but to a floor 4x the baseline's (1.2: no ln(k) chance level of a k-class task)
    rep, alone = _merged(tmp_path, _rows(80, 2.0, 1.2, seed=5))
    assert "TP-PASS" in alone  # on its own curve nothing fired
    assert rep.verdict.value == "FAIL" and "TP-FLOOR-RATIO" in rep.ids()
    assert not [f for f in rep.findings if f.level.value == "PASS"]
    [note] = [n for n in rep.notes if n.startswith("On its own curve: ")]
    assert re.fullmatch(r"On its own curve: no check fired \(\d+ ran, \d+ skipped\)\.", note)
    # the checks the single-run PASS counted still count as run
    assert "TP-DIVERGE" in rep.ran and "TP-FLOOR-RATIO" in rep.ran


def test_a_compare_pass_under_a_run_alone_fail_is_a_note(tmp_path):
    # both runs go NaN the same way at the end: the comparison sees nothing the run's own
    # TP-NAN does not, and its PASS must not print under that FAIL
    rows = _rows(80, 2.0, 0.3)
    for r in rows[-5:]:
        r["loss"] = float("nan")
    rep, alone = _merged(tmp_path, [dict(r) for r in rows], base_rows=_rows(80, 2.0, 0.3))
    assert rep.verdict.value == "FAIL" and "TP-NAN" in rep.ids()
    assert "TP-CMP-PASS" not in rep.ids() and not [f for f in rep.findings if f.level.value == "PASS"]
    assert [n for n in rep.notes if n.startswith("Against the baseline: the run compares favourably")]


def test_a_pass_on_both_halves_stays_two_pass_findings(tmp_path):
    rep, _ = _merged(tmp_path, _rows(80, 2.0, 0.3, seed=1))
    assert rep.verdict.value == "PASS"
    assert {"TP-PASS", "TP-CMP-PASS"} <= set(rep.ids())
    assert not [n for n in rep.notes if n.startswith(("On its own curve", "Against the baseline"))]


def test_compare_output_never_prints_pass_under_a_fail(tmp_path):
    base = write_jsonl(tmp_path / "base.jsonl", _rows(80, 2.0, 0.3))
    run = write_jsonl(tmp_path / "run.jsonl", _rows(80, 2.0, 1.2, seed=5))
    code, out, _, _ = run_cli("compare", str(base), str(run))
    assert code == 1 and "TP-FLOOR-RATIO" in out
    assert "PASS  TP-PASS" not in out
    assert "On its own curve: no check fired" in out
    code, _, _, doc = run_cli("compare", str(base), str(run), "--json")
    [rep] = doc["reports"]
    assert rep["verdict"] == "FAIL" and not [f for f in rep["findings"] if f["level"] == "PASS"]
    assert any(n.startswith("On its own curve: no check fired") for n in rep["notes"])


def test_huge_ratios_and_improvements_read_short(tmp_path):
    # a run whose loss climbs nine decades: its compare findings stay readable
    rows = [{"step": (i + 1) * 10, "loss": 1.0 * 10 ** (9 * i / 79), "grad_norm": 0.5} for i in range(80)]
    rep, _ = _merged(tmp_path, rows)
    text = " ".join(f.message + " " + f.evidence for f in rep.findings if f.source == "compare")
    assert "TP-END-RATIO" in rep.ids() and "TP-IMPROVE-DEFICIT" in rep.ids()
    assert re.search(r"is ×\d\.\de\d+ the baseline's", text), text
    assert re.search(r"the run improved -×\d\.\de\d+ where", text), text
    assert not re.search(r"\d{5,}", text.replace("0.3", "")), text


def _with_evals(rows, eval_floor, rise=0.0, every=5, start=None, seed=0):
    """``rows`` with an eval loss every ``every`` rows: falling to ``eval_floor``, then
    climbing by ``rise`` (a share of its floor) over the run; noise 1%."""
    rng = np.random.default_rng(seed)
    n = len(rows)
    start = start or rows[0]["loss"] * 1.05
    for i in range(every - 1, n, every):
        level = eval_floor + (start - eval_floor) * np.exp(-i / (n / 5)) + rise * eval_floor * i / n
        rows[i]["eval_loss"] = float(level * np.exp(0.01 * rng.standard_normal()))
    return rows


def _eval_worse(tmp_path, base_rows, run_rows):
    b = write_jsonl(tmp_path / "base.jsonl", base_rows)
    r = write_jsonl(tmp_path / "run.jsonl", run_rows)
    _, (rep,) = compare(b, [r])
    return [f for f in rep.findings if f.id == "TP-CMP-EVAL-WORSE"]


@pytest.mark.parametrize("n,seed", [(40, 0), (200, 1), (1000, 2)])
def test_an_eval_loss_far_worse_than_the_baselines_warns_whatever_the_train_loss_says(tmp_path, n, seed):
    # A train loss that counts unmasked padding falls lower than the baseline's while the
    # held-out loss ends a third worse: the train-loss rules call the run favourable.
    base = _with_evals(_rows(n, 6.0, 2.0, seed=seed), 2.2, seed=seed)
    run = _with_evals(_rows(n, 6.0, 0.6, seed=seed + 10), 2.2, rise=0.35, seed=seed + 10)
    (f,) = _eval_worse(tmp_path, base, run)
    assert f.level.value == "WARN" and 1.2 < f.data["ratio"] < 1.6
    assert "no higher than the baseline's" in f.evidence


@pytest.mark.parametrize(
    "case",
    ["same_eval", "seed_noise", "immaterial_gap", "different_eval_steps", "baseline_has_no_eval"],
)
def test_an_eval_loss_near_the_baselines_or_not_comparable_does_not_warn(tmp_path, case):
    n = 200
    base = _with_evals(_rows(n, 6.0, 2.0), 2.2)
    if case == "same_eval":
        run = _with_evals(_rows(n, 6.0, 2.0, seed=5), 2.2, seed=5)
    elif case == "seed_noise":  # 12% worse: a seed's or a config's difference, not a defect
        run = _with_evals(_rows(n, 6.0, 2.0, seed=5), 2.2 * 1.12, seed=5)
    elif case == "immaterial_gap":
        # a tiny task near 0: 1.5x of 0.02 is under 10% of the 5.9 the baseline learned
        base = _with_evals(_rows(n, 6.0, 0.01), 0.02)
        run = _with_evals(_rows(n, 6.0, 0.01, seed=5), 0.03, seed=5)
    elif case == "different_eval_steps":
        # the run evaluated only in its first half: where each got, not how well
        run = _with_evals(_rows(n, 6.0, 2.0, seed=5), 3.0, seed=5)
        for row in run[n // 2 :]:
            row.pop("eval_loss", None)
    else:
        base = _rows(n, 6.0, 2.0)
        run = _with_evals(_rows(n, 6.0, 2.0, seed=5), 4.0, seed=5)
    assert _eval_worse(tmp_path, base, run) == []
