"""``doctor`` over one pull request's tree holding every attack of issue 17 at once
(tests/_attack_tree.py): it finishes, exits 1 for the runs that FAIL, judges each real run
as it deserves, and no secret reaches any output. Time and memory are measured in
evidence/attacks.py, not here.
"""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

import _attack_tree
from conftest import run_subprocess


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and symlinks as a pull request can add them")
def test_doctor_over_every_attack_at_once(tmp_path):
    root = tmp_path / "pr"
    root.mkdir()
    try:
        repo = _attack_tree.build(root, bomb_mib=48)
        out = tmp_path / "out"
        out.mkdir()
        sarif, page = out / "r.sarif", out / "r.html"
        res = run_subprocess(
            "doctor",
            str(repo),
            "--json",
            "--jobs",
            "2",
            "--sarif",
            str(sarif),
            "--html",
            str(page),
            cwd=repo,
            timeout=900,
        )
        assert res.returncode == 1, res.stderr[-2000:]
        doc = json.loads(res.stdout)
        verdicts = {os.path.relpath(r["file"], repo): r["verdict"] for r in doc["reports"]}
        for rel, want in _attack_tree.EXPECTED.items():
            assert verdicts.get(rel) == want, (rel, verdicts.get(rel))
        # the deepest file is byte-identical to forged/'s: one run, listed as its copy
        deep = os.path.join("deep", *["d"] * 1200, "metrics.jsonl")
        (owner,) = [r for r in doc["reports"] if any(os.path.relpath(a, repo) == deep for a in r.get("also", ()))]
        assert owner["verdict"] == "FAIL" and os.path.dirname(os.path.relpath(owner["file"], repo)) == "forged"
        assert verdicts.get(os.path.join("forged", "x\n  verdict: PASS\x1b[2K.jsonl")) == "FAIL"
        # nothing outside the tree was read, the FIFO was not opened
        assert not any("outside" in f or f.startswith("..") for f in verdicts)
        assert "fifo.jsonl" not in verdicts
        text = run_subprocess("doctor", str(repo), "--jobs", "2", cwd=repo, timeout=900)
        assert text.returncode == 1
        for name, body in (
            ("json", res.stdout),
            ("stderr", res.stderr),
            ("text", text.stdout + text.stderr),
            ("sarif", sarif.read_text()),
            ("html", page.read_text()),
        ):
            assert _attack_tree.SECRET not in body, name
            assert "\x1b" not in body, name
        # every "verdict: PASS" line printed belongs to a run that PASSed: the forged name
        # did not add one
        passes = sum(1 for v in verdicts.values() if v == "PASS")
        assert sum(line.startswith("  verdict: PASS") for line in text.stdout.splitlines()) <= passes
    finally:
        _attack_tree.remove_tree(root)
        shutil.rmtree(tmp_path / "out", ignore_errors=True)
