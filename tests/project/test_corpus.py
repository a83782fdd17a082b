"""Real logs from other people's runs (../shared/corpus): no crash, every file judged or
explained, no FAIL on a file labelled healthy. Skips where ../shared is absent."""

from __future__ import annotations

import csv
import json
import os

import _corpus
import pytest

from conftest import run_cli, validate_doc

FAIL_LABELS = {"diverged", "nan_or_inf", "zero_loss", "flat_or_dead", "zero_lr"}
READ_NOW = {"hf", "jsonl", "csv"}


def _manifest(shared):
    with open(shared / "corpus" / "MANIFEST.tsv", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter="\t"))


@pytest.mark.slow
def test_doctor_over_the_corpus(shared):
    code, out, err, doc = run_cli("doctor", str(shared / "corpus"), "--json")
    assert code in (0, 1, 2)
    by_file = {os.path.relpath(r["file"], shared / "corpus"): r for r in doc["reports"]}
    ignored = {os.path.relpath(i["file"], shared / "corpus"): i["reason"] for i in doc.get("ignored", [])}
    rows = _manifest(shared)
    for row in rows:
        if row["format"] not in READ_NOW:
            continue
        rep = by_file.get(row["file"])
        if rep is None and ignored.get(row["file"]):
            # listed with its reason (a table with no step column and no known metric)
            assert row["label"] != "healthy" or "no known metric" in ignored[row["file"]], row["id"]
            continue
        assert rep is not None, f"{row['id']}: not judged and not listed as unreadable"
        assert rep["verdict"] in ("PASS", "WARN", "FAIL", "NOT-CHECKED")
        if rep["verdict"] == "NOT-CHECKED":  # explained: an error or an outcome finding says why
            assert rep["error"] or {f["id"] for f in rep["findings"]} & {
                "TP-NOT-CHECKED",
                "TP-NO-LOSS",
                "TP-NO-RECORDS",
            }
        if row["label"] == "healthy":
            assert rep["verdict"] != "FAIL", (row["id"], [f["id"] for f in rep["findings"]])


@pytest.mark.slow
@pytest.mark.parametrize("fmt", sorted(READ_NOW))
def test_labelled_broken_runs_fail(shared, fmt):
    # Each file judged by ``epoch FILE --json`` (the scorecard's run, in the manifest's
    # order, shared with the accuracy page's test).
    results, _, outputs = _corpus.scorecard()
    missed = []
    for row, r in zip(_manifest(shared), results, strict=True):
        assert r["id"] == row["id"]
        if row["format"] != fmt or not (set(row["label"].split("+")) & FAIL_LABELS):
            continue
        doc = validate_doc(json.loads(outputs[str(shared / "corpus" / row["file"])]))
        if doc["reports"][0]["verdict"] != "FAIL":
            missed.append(row["id"])
    # Each miss kept, with why the tool cannot know (see the closing note of issue 16):
    known = {
        # a summarisation cross-entropy falling to 4e-4: that it cannot be that low is
        # knowledge of the task, not of the log.
        "hf-bert2bert-sum-zero-loss",
        # Falls 0.85 -> 0.0098 by step 40 and holds 0.0001 until HF's 4-decimal rounding
        # writes 0.0, the gradient norm going on smoothly across it: rounding, not an exact
        # zero. That a hate-speech task cannot honestly reach 1e-4 is knowledge of the task.
        "hf-hatespeech-cls-zero-loss",
        # A 37-class cross-entropy at 2.6e-8 that underflows to exactly 0.0 for 70% of the
        # run: what an easy task solved to float precision does too (TP-ZERO-LOSS-FITTED,
        # a WARN naming the leak). That this task cannot honestly be that easy is knowledge
        # of the task.
        "csv-lightning-lstm-exact-zero-loss",
        # Labelled flat, judged no progress (TP-LOSS-STALLED, a WARN): the log cannot tell
        # them from a fine-tune at its floor (evidence/accuracy.md has the numbers). A LoRA
        # at lr 2e-4 with a live gradient norm, 2.17 -> 2.12 inside +-5% noise: the 99%
        # interval of its change, [-0.04, 0.06] nats, reaches a slow learner's 5%.
        "hf-kevin-flat-1k",
        # 28 noisy points (2.3-3.8): too few to exclude a slow learner.
        "csv-lightning-probe-flat-noisy",
        # Pinned at 7.5 -> 7.4 (interval [-0.001, 0.020] nats), but the log has no learning
        # rate, gradient norm or accuracy: it names no cause, and a run at its floor before
        # its first log holds one level the same way (a WARN that says it is pinned).
        "csv-lightning-slm-unigram-stuck",
        # Falls 1.75 -> 0.25000 and holds: that 0.25 is the squared error of predicting 0.5
        # for 0/1 targets is knowledge of the targets, not of the log.
        "csv-lightning-lstm-odd-cols",
    }
    assert set(missed) <= known, missed
