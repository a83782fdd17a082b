"""evidence/accuracy.md is generated from the labelled corpus; it must match the code."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO, SHARED


@pytest.mark.slow
@pytest.mark.skipif(
    not (SHARED / "corpus" / "MANIFEST.tsv").exists() or not (SHARED / "tools" / "scorecard.py").exists(),
    reason="../shared/corpus or its scorecard is absent",
)
def test_accuracy_page_is_up_to_date():
    p = subprocess.run(
        [sys.executable, str(REPO / "evidence" / "accuracy.py"), "--check"], capture_output=True, text=True, timeout=900
    )
    assert p.returncode == 0, p.stdout + p.stderr[-2000:]
    text = (REPO / "evidence" / "accuracy.md").read_text(encoding="utf-8")
    assert "NOT YET EXPLAINED" not in text, "a disagreement with the corpus labels has no written reason"
