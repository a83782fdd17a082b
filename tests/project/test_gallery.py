"""The fault-injection gallery (examples/gallery/): locked verdicts, an up-to-date
EVIDENCE_MATRIX.md, no FAIL on a healthy or negative run, and one rig that still runs."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from conftest import REPO

_spec = importlib.util.spec_from_file_location("gallery_evidence", REPO / "evidence" / "gallery.py")
gallery = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gallery)


# Judging every run of the gallery takes seconds: the tests that read it are in the slow set.
@pytest.fixture(scope="module")
def rows():
    return gallery.collect()


def test_the_gallery_covers_four_frameworks_four_formats_three_seeds():
    runs = gallery.runs()
    frameworks = {r["framework"] for r in runs}
    kinds = {k for r in runs for k in r["logs_by_kind"]}
    assert len(frameworks) >= 4, frameworks
    assert len(kinds) >= 4, kinds
    seeds = {}
    for r in runs:
        seeds.setdefault((r["framework"], r["config"]), set()).add(r["seed"])
    assert all(s == {0, 1, 2} for s in seeds.values()), {k: v for k, v in seeds.items() if v != {0, 1, 2}}
    for r in runs:
        assert r["logs_by_kind"], r["dir"]
        assert all(p.exists() for p in r["logs_by_kind"].values()), r["dir"]
        assert r["kind"] in ("healthy", "broken", "negative")
        assert (r["broken"] is None) == (r["kind"] != "broken"), r["dir"]


@pytest.mark.slow
def test_verdicts_match_the_golden_snapshot(rows):
    want = json.loads(gallery.GOLDEN.read_text(encoding="utf-8"))
    got = gallery.golden(rows)
    changed = {k: (want.get(k), got.get(k)) for k in set(want) | set(got) if want.get(k) != got.get(k)}
    assert not changed, "gallery verdicts changed (rerun `python evidence/gallery.py` if intended):\n" + "\n".join(
        f"{k}: {a} -> {b}" for k, (a, b) in sorted(changed.items())[:20]
    )


@pytest.mark.slow
def test_evidence_matrix_is_up_to_date(rows):
    assert gallery.MATRIX.read_text(encoding="utf-8") == gallery.render(rows), (
        "EVIDENCE_MATRIX.md is stale: run `python evidence/gallery.py`"
    )


@pytest.mark.slow
def test_no_healthy_or_negative_run_gets_a_fail(rows):
    bad = [(r["file"], r["key"]) for r in rows if r["kind"] in ("healthy", "negative") and r["verdict"] == "FAIL"]
    assert not bad
    bad_cmp = [
        (r["file"], r["compare_key"])
        for r in rows
        if r["kind"] in ("healthy", "negative") and r["compare_verdict"] == "FAIL"
    ]
    assert not bad_cmp


@pytest.mark.slow
def test_healthy_seeds_compare_as_pass(rows):
    healthy = [r for r in rows if r["config"] == "healthy" and r["seed"] != 0]
    assert healthy
    assert all(r["compare_verdict"] == "PASS" for r in healthy), [(r["file"], r["compare_key"]) for r in healthy]


@pytest.mark.slow
def test_a_rig_still_runs_and_its_log_is_judged_as_its_meta_expects(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "g"
    p = subprocess.run(
        [
            sys.executable,
            str(REPO / "examples" / "rigs" / "torch_rig.py"),
            "--config",
            "lr_zero",
            "--seed",
            "0",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    metas = list(out.rglob("run_meta.json"))
    assert len(metas) == 1
    meta = json.loads(metas[0].read_text())
    assert meta["config"] == "lr_zero" and meta["seed"] == 0
    from trainproof.api import judge

    for rel in meta["logs"]:
        rep = judge(metas[0].parent / rel)
        assert rep.verdict.value == meta["expected_verdict"]
        # A rule explained by a more specific one is listed as implied, not reported again.
        seen = {f.id for f in rep.findings} | {i for f in rep.findings for i in f.data.get("implies", [])}
        assert set(meta["expected_rules"]) <= seen


@pytest.mark.slow
def test_docs_gallery_table_is_up_to_date(rows):
    page = (REPO / "docs" / "gallery.md").read_text(encoding="utf-8")
    assert gallery.README_START in page and gallery.README_END in page
    assert gallery.readme_with_table(page, rows) == page, (
        "the gallery table in docs/gallery.md is stale: run `python evidence/gallery.py`"
    )
