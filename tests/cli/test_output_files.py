"""--sarif and --html on doctor, epoch and compare: the files are written, valid, and the
exit code is unchanged."""

from __future__ import annotations

import json

import pytest

from conftest import REPO, SHARED, run_cli

EX = REPO / "examples"


def _sarif_schema():
    path = SHARED / "schemas" / "sarif-schema-2.1.0.json"
    if not path.exists():
        return None
    schema = json.loads(path.read_text())
    # The shared file keeps the log's own rules under definitions.Root (see
    # tests/render/test_sarif.py): validate against that.
    if "Root" in schema.get("definitions", {}) and "required" not in schema:
        schema = {**schema, "$ref": "#/definitions/Root"}
    return schema


def _check_sarif(path):
    doc = json.loads(path.read_text())
    assert doc["version"] == "2.1.0" and doc["runs"][0]["tool"]["driver"]["name"] == "trainproof"
    schema = _sarif_schema()
    if schema is not None:
        import jsonschema

        jsonschema.validate(doc, schema)
    return doc


@pytest.mark.slow
@pytest.mark.parametrize("cmd", ["epoch", "doctor", "compare"])
def test_sarif_and_html_are_written_and_the_exit_code_is_unchanged(tmp_path, cmd, core_examples):
    sarif, html = tmp_path / "out.sarif", tmp_path / "out.html"
    if cmd == "epoch":
        args = ["epoch", str(EX / "diverge" / "metrics.jsonl")]
    elif cmd == "doctor":
        args = ["doctor", str(core_examples)]
    else:
        args = [
            "compare",
            str(EX / "healthy_seed1" / "metrics.jsonl"),
            str(EX / "healthy" / "metrics.jsonl"),
            str(EX / "diverge" / "metrics.jsonl"),
        ]
    plain = run_cli(*args)[0]
    code, _, _, _ = run_cli(*args, "--sarif", str(sarif), "--html", str(html))
    assert code == plain == 1
    doc = _check_sarif(sarif)
    results = doc["runs"][0]["results"]
    assert any(r["ruleId"] == "TP-DIVERGE" and r["level"] == "error" for r in results)
    text = html.read_text()
    assert "<svg" in text and "TP-DIVERGE" in text and "http://" not in text and "https://" not in text


def test_html_flag_without_a_path_writes_the_default_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, _, _ = run_cli("epoch", str(EX / "healthy" / "metrics.jsonl"), "--html")
    assert code == 0
    assert (tmp_path / "trainproof-report.html").read_text().count("<svg") >= 1


def test_sarif_for_an_unreadable_file_is_still_written(tmp_path):
    sarif = tmp_path / "out.sarif"
    code, _, _, _ = run_cli("epoch", str(tmp_path / "missing.jsonl"), "--sarif", str(sarif))
    assert code == 2
    doc = _check_sarif(sarif)
    assert [r["ruleId"] for r in doc["runs"][0]["results"]] == ["TP-READ-ERROR"]


@pytest.mark.slow
def test_sarif_over_the_corpus_points_at_real_lines(shared, tmp_path, monkeypatch):
    monkeypatch.chdir(shared / "corpus")
    sarif = tmp_path / "corpus.sarif"
    code, _, _, _ = run_cli("doctor", ".", "--sarif", str(sarif))
    assert code in (1, 2)
    doc = _check_sarif(sarif)
    checked = 0
    for r in doc["runs"][0]["results"]:
        loc = r["locations"][0]["physicalLocation"]
        uri = loc["artifactLocation"]["uri"]
        assert not uri.startswith(("/", "file:")), uri  # relative, as invoked
        line = loc.get("region", {}).get("startLine", 1)
        p = shared / "corpus" / uri
        if p.is_file() and uri.endswith((".jsonl", ".csv", ".json")) and line > 1:
            lines = p.read_text(errors="replace").splitlines()
            assert line <= len(lines), (uri, line)
            checked += 1
    assert checked > 10


def test_unwritable_report_path_is_exit_2(tmp_path):
    code, _, err, _ = run_cli(
        "epoch", str(EX / "healthy" / "metrics.jsonl"), "--sarif", str(tmp_path / "no" / "dir" / "x.sarif")
    )
    assert code == 2 and "cannot write" in err
