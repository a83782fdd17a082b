"""evidence/accuracy.md is generated from the labelled corpus; it must match the code."""

from __future__ import annotations

import _corpus
import pytest

from conftest import SHARED


@pytest.mark.slow
@pytest.mark.skipif(
    not (SHARED / "corpus" / "MANIFEST.tsv").exists() or not (SHARED / "tools" / "scorecard.py").exists(),
    reason="../shared/corpus or its scorecard is absent",
)
def test_accuracy_page_is_up_to_date():
    results, summary, _ = _corpus.scorecard()
    a = _corpus.accuracy()
    text = a.render(results, summary)
    assert a.OUT.read_text(encoding="utf-8") == text, (
        "evidence/accuracy.md is out of date: python tools/regen.py accuracy"
    )
    assert "NOT YET EXPLAINED" not in text, "a disagreement with the corpus labels has no written reason"
