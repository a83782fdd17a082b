"""`doctor --jobs N`: runs judged in N processes give the same output, in the same order."""

from __future__ import annotations

import shutil

import pytest

from trainproof.api import JudgeConfig, doctor, judge_run

from conftest import REPO, healthy_rows, run_cli, write_jsonl


def _tree(tmp_path):
    root = tmp_path / "runs"
    for i, fw in enumerate(("hf", "lightning", "torch", "coqui")):
        src = REPO / "examples" / "gallery" / fw
        for cfg in ("healthy", "lr_zero", "bad_labels"):
            shutil.copytree(src / cfg / "seed0", root / fw / cfg)
    write_jsonl(root / "table" / "data.jsonl", [{"a": i, "b": i * 2} for i in range(20)])  # not a log
    (root / "notes.json").write_text('{"hello": 1}')
    return root


@pytest.mark.slow
def test_jobs_give_identical_json_in_identical_order(tmp_path):
    root = _tree(tmp_path)
    outs = []
    for jobs in ("1", "2", "3"):
        code, out, _, doc = run_cli("doctor", str(root), "--jobs", jobs, "--json")
        outs.append((code, out))
        assert len(doc["reports"]) >= 12 and doc["ignored"]
    assert outs[0] == outs[1] == outs[2]


def test_jobs_with_a_baseline_compare_every_run(tmp_path):
    root = _tree(tmp_path)
    base = root / "torch" / "healthy" / "metrics.jsonl"
    r1, i1 = doctor(root, baseline=base, jobs=1)
    r2, i2 = doctor(root, baseline=base, jobs=2)
    assert [r.to_dict() for r in r1] == [r.to_dict() for r in r2] and i1 == i2
    bad = next(r for r in r2 if r.file.endswith("torch/bad_labels/metrics.jsonl"))
    assert "TP-FLOOR-RATIO" in bad.ids()


def test_judge_run_is_the_unit_of_work(tmp_path):
    log = write_jsonl(tmp_path / "run.jsonl", healthy_rows(60))
    rep, skip = judge_run(log, JudgeConfig())
    assert skip is None and rep.verdict.value == "PASS"
    table = write_jsonl(tmp_path / "t.jsonl", [{"a": i} for i in range(20)])
    rep, skip = judge_run(table, JudgeConfig())
    assert rep is None and "data table" in skip["reason"]
    rep, skip = judge_run(tmp_path / "missing.jsonl", JudgeConfig())
    assert rep.error is not None and skip is None


@pytest.mark.slow
def test_chart_series_only_where_the_html_report_needs_them(tmp_path):
    root = _tree(tmp_path)
    with_charts, _ = doctor(root, jobs=2)
    without, _ = doctor(root, jobs=2, charts=False)
    assert all(r.charts for r in with_charts if r.error is None)
    assert not any(r.charts for r in without)
    assert [r.to_dict() for r in with_charts] == [r.to_dict() for r in without]  # JSON, text, SARIF: the same
    html = tmp_path / "report.html"
    code, _, _, _ = run_cli("doctor", str(root), "--jobs", "2", "--html", str(html), "--json")
    assert code in (0, 1)
    assert html.read_text().count('<svg class="chart"') >= 12  # the workers still sent the series
