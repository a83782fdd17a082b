"""SARIF 2.1.0 output (render/sarif.py) on real logs judged by trainproof.

Every document produced here goes through :func:`check_sarif`: a structural check that
always runs and, when ../shared is present, validation against the official SARIF 2.1.0
JSON Schema in ../shared/schemas.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import re
from pathlib import Path
from urllib.parse import unquote

import jsonschema
import pytest
from _helpers import (  # noqa: F401
    _URI_CHARS,
    LEVELS,
    VALIDATOR,
    _validator,  # noqa: F401
    check_sarif,  # noqa: F401
)

from trainproof.api import doctor, judge
from trainproof.findings import Level, Report, is_line_format
from trainproof.render import sarif
from trainproof.rules.registry import get

from conftest import REPO, healthy_rows, write_hf, write_jsonl


def results_of(doc: dict, rule_id: str | None = None) -> list[dict]:
    res = doc["runs"][0]["results"]
    return [r for r in res if rule_id is None or r["ruleId"] == rule_id]


def only(doc: dict, rule_id: str) -> dict:
    found = results_of(doc, rule_id)
    assert len(found) == 1, [r["ruleId"] for r in results_of(doc)]
    return found[0]


def where(result: dict) -> tuple[str, int]:
    pl = result["locations"][0]["physicalLocation"]
    return pl["artifactLocation"]["uri"], pl["region"]["startLine"]


def finding(report: Report, rule_id: str):
    found = [f for f in report.findings if f.id == rule_id]
    assert len(found) == 1, report.ids()
    return found[0]


def file_line(path: Path, n: int) -> str:
    return path.read_text(encoding="utf-8").splitlines()[n - 1]


# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def nan_jsonl(tmp_path, monkeypatch) -> Path:
    """A JSONL log (relative path ``logs/nan.jsonl``) whose 30th record has a NaN loss."""
    monkeypatch.chdir(tmp_path)
    rows = healthy_rows(60)
    rows[29]["loss"] = float("nan")
    return write_jsonl(Path("logs") / "nan.jsonl", rows)


def diverging_hf(path: Path, **top) -> Path:
    rows = healthy_rows(60)
    for i, row in enumerate(rows):
        if i >= 30:
            row["loss"] = 0.9 + 0.3 * (i - 29)
    return write_hf(path, rows, max_steps=600, **top)


def zero_lr_csv(path: Path) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("step,loss,lr\n")
        for i, row in enumerate(healthy_rows(60)):  # lr 0: the loss does not move
            f.write(f"{row['step']},{2.0 + 0.01 * ((i * 7) % 5 - 2)},0.0\n")
    return path


def nan_tfevents(log_dir: Path) -> Path:
    tb = pytest.importorskip("torch.utils.tensorboard")
    w = tb.SummaryWriter(log_dir=str(log_dir))
    for i, row in enumerate(healthy_rows(60)):
        w.add_scalar("train/loss", float("nan") if i == 40 else row["loss"], row["step"])
        w.add_scalar("train/lr", row["learning_rate"], row["step"])
    w.close()
    (event,) = sorted(log_dir.glob("events.out.tfevents.*"))
    return event


# --------------------------------------------------------------------------- anchoring


def test_jsonl_nan_anchors_at_the_nan_record(nan_jsonl: Path) -> None:
    rep = judge(nan_jsonl)
    f = finding(rep, "TP-NAN")
    doc = check_sarif(sarif.to_sarif([rep]))
    res = only(doc, "TP-NAN")
    assert res["level"] == "error"
    uri, line = where(res)
    assert uri == "logs/nan.jsonl"  # relative, as invoked
    assert line == f.line == 30
    text = file_line(nan_jsonl, line)
    assert "NaN" in text and json.loads(text)["step"] == 300
    assert res["properties"]["step"] == 300 and "recordIndex" not in res["properties"]
    assert res["message"]["text"].startswith(f.message)
    assert f.evidence in res["message"]["text"] and f.hint in res["message"]["text"]


def test_hf_divergence_anchors_at_the_log_history_entry(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = diverging_hf(Path("run") / "trainer_state.json")
    rep = judge(path)
    assert rep.format == "hf"
    doc = check_sarif(sarif.to_sarif([rep]))
    text = path.read_text(encoding="utf-8")
    offsets = [0]
    for ln in text.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(ln))
    # the divergence also explains the no-progress warning: one result, it listed as implied
    assert "TP-LOSS-STALLED" in finding(rep, "TP-DIVERGE").data["implies"]
    for rule_id in ("TP-DIVERGE",):
        f = finding(rep, rule_id)
        res = only(doc, rule_id)
        assert res["level"] == "error"
        uri, line = where(res)
        assert uri == "run/trainer_state.json" and line == f.line
        # the line opens the log_history entry of the finding's step
        assert file_line(path, line).strip() == "{"
        entry, _ = json.JSONDecoder().raw_decode(text, offsets[line - 1] + file_line(path, line).index("{"))
        assert entry["step"] == res["properties"]["step"] == int(f.step)
    # two findings on one file: different fingerprints
    fps = {r["partialFingerprints"][sarif.FINGERPRINT_KEY] for r in results_of(doc)}
    assert len(fps) == len(results_of(doc))


def test_csv_zero_lr_anchors_at_a_data_row(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = zero_lr_csv(Path("metrics.csv"))
    rep = judge(path)
    f = finding(rep, "TP-ZERO-LR")
    doc = check_sarif(sarif.to_sarif([rep]))
    res = only(doc, "TP-ZERO-LR")
    uri, line = where(res)
    assert (uri, res["level"]) == ("metrics.csv", "error")
    assert line == f.line and line >= 2  # line 1 is the header
    row = next(csv.DictReader([file_line(path, 1), file_line(path, line)]))
    assert float(row["lr"]) == 0.0 and int(row["step"]) == res["properties"]["step"]


def test_tfevents_anchors_at_line_1_with_step_and_record(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    event = nan_tfevents(Path("tb"))
    rep = judge(event)
    assert rep.format == "tfevents"
    f = finding(rep, "TP-NAN")
    doc = check_sarif(sarif.to_sarif([rep]))
    res = only(doc, "TP-NAN")
    uri, line = where(res)
    assert uri == event.as_posix() and uri.startswith("tb/events.out.tfevents.")
    assert line == 1
    assert res["properties"]["step"] == 410 == int(f.step)
    assert res["properties"]["recordIndex"] == f.line
    assert f"record {f.line}" in res["message"]["text"]
    # the run folder as invoked is its own artifact, still at line 1
    folder = check_sarif(sarif.to_sarif([judge("tb")]))
    assert where(only(folder, "TP-NAN")) == ("tb", 1)


def test_mlflow_file_has_lines_but_a_run_folder_does_not(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    metrics = Path("run") / "metrics"
    metrics.mkdir(parents=True)
    lines = [
        f"{1_664_364_007_310 + i} {math.nan if s == 30 else 2.0 * math.exp(-s / 10) + 0.3} {s}\n"
        for i, s in enumerate(range(40))
    ]
    (metrics / "loss").write_text("".join(lines), encoding="utf-8")

    rep = judge(metrics / "loss")
    assert rep.format == "mlflow"
    res = only(check_sarif(sarif.to_sarif([rep])), "TP-NAN")
    uri, line = where(res)
    assert uri == "run/metrics/loss" and file_line(metrics / "loss", line).split()[1:] == ["nan", "30"]

    rep = judge("run")
    assert rep.format == "mlflow"
    res = only(check_sarif(sarif.to_sarif([rep])), "TP-NAN")
    assert where(res) == ("run", 1)  # a folder: the line belongs to one of its metric files
    assert file_line(metrics / "loss", res["properties"]["metricFileLine"]).split()[2] == "30"


# --------------------------------------------------------------------------- levels and results


def test_level_mapping() -> None:
    assert sarif.sarif_level(Level.FAIL) == "error"
    assert sarif.sarif_level(Level.WARN) == "warning"
    for lv in (Level.INFO, Level.PASS, Level.NOT_CHECKED):
        assert sarif.sarif_level(lv) == "note"


def test_warn_and_info_findings_are_warnings_and_notes(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    rows = healthy_rows(60)
    rows[40]["grad_norm"] = 80.0  # one isolated spike on a healthy run
    path = write_hf(Path("trainer_state.json"), rows, max_steps=2000)  # stopped at 600 of 2000
    rep = judge(path)
    by_level = {f.id: f.level for f in rep.findings}
    assert by_level.get("TP-GRAD-SPIKE") is Level.WARN and by_level.get("TP-RUN-INCOMPLETE") is Level.INFO
    doc = check_sarif(sarif.to_sarif([rep]))
    # the level is written even when it is "warning", which to_json drops as a default
    assert only(doc, "TP-GRAD-SPIKE")["level"] == "warning"
    assert only(doc, "TP-RUN-INCOMPLETE")["level"] == "note"
    rules = {r["id"]: r for r in doc["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["TP-GRAD-SPIKE"]["defaultConfiguration"]["level"] == "warning"
    assert rules["TP-RUN-INCOMPLETE"]["defaultConfiguration"]["level"] == "note"
    # every non-PASS finding is a result, in order
    assert [r["ruleId"] for r in results_of(doc)] == [f.id for f in rep.findings if f.level is not Level.PASS]


def test_pass_is_not_a_result_but_the_verdict_is_kept(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    rep = judge(write_jsonl(Path("healthy.jsonl"), healthy_rows(60)))
    assert rep.verdict is Level.PASS and "TP-PASS" in rep.ids()
    doc = check_sarif(sarif.to_sarif([rep]))
    assert "TP-PASS" not in [r["ruleId"] for r in results_of(doc)]
    assert "TP-PASS" not in [r["id"] for r in doc["runs"][0]["tool"]["driver"]["rules"]]
    assert doc["runs"][0]["properties"]["reports"] == [
        {"file": "healthy.jsonl", "format": "jsonl", "verdict": "PASS", "records": 60, "error": None}
    ]
    assert doc["runs"][0]["properties"]["worstVerdict"] == "PASS"


def test_not_checked_outcomes_are_notes(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    no_loss = write_jsonl(Path("acc.jsonl"), [{"step": i, "accuracy": 0.5 + i / 100} for i in range(20)])
    short = write_jsonl(Path("short.jsonl"), healthy_rows(3))
    reps = [judge(no_loss), judge(short)]
    assert "TP-NO-LOSS" in reps[0].ids() and "TP-NOT-CHECKED" in reps[1].ids()
    doc = check_sarif(sarif.to_sarif(reps))
    for rule_id, uri in (("TP-NO-LOSS", "acc.jsonl"), ("TP-NOT-CHECKED", "short.jsonl")):
        res = only(doc, rule_id)
        assert res["level"] == "note" and where(res) == (uri, 1)


def test_read_errors_are_notes_at_the_file(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("empty.jsonl").write_text("", encoding="utf-8")
    reps = [judge("empty.jsonl"), judge(Path("missing") / "trainer_state.json")]
    assert all(r.error for r in reps)
    doc = check_sarif(sarif.to_sarif(reps))
    found = results_of(doc, "TP-READ-ERROR")
    assert [where(r) for r in found] == [("empty.jsonl", 1), ("missing/trainer_state.json", 1)]
    assert all(r["level"] == "note" for r in found)
    assert reps[0].error in found[0]["message"]["text"]
    (rule,) = doc["runs"][0]["tool"]["driver"]["rules"]
    assert rule["id"] == "TP-READ-ERROR" and rule["defaultConfiguration"]["level"] == "note"
    # a report that carries only `error` still becomes a TP-READ-ERROR result
    bare = Report(file="empty.jsonl", error=reps[0].error)
    assert only(check_sarif(sarif.to_sarif([bare])), "TP-READ-ERROR")["level"] == "note"


def test_rule_metadata_comes_from_the_registry(core_examples) -> None:
    reps, _ = doctor(core_examples)
    doc = check_sarif(sarif.to_sarif(reps))
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', (REPO / "RULES.md").read_text(encoding="utf-8")))
    for d in doc["runs"][0]["tool"]["driver"]["rules"]:
        r = get(d["id"])
        assert d["shortDescription"]["text"] == r.text("summary")
        assert d["fullDescription"]["text"] == r.text("detects")
        assert d["help"]["markdown"] == r.doc_markdown()
        assert r.text("causes") in d["help"]["text"] and r.text("try_") in d["help"]["text"]
        assert d["defaultConfiguration"]["level"] == sarif.sarif_level(r.level)
        assert d["helpUri"] == f"https://github.com/trainproof/trainproof/blob/main/docs/rules/{r.id}.md"
        assert (REPO / "docs" / "rules" / f"{r.id}.md").is_file()
        assert r.id.lower() in anchors  # RULES.md keeps an anchor per id for older links
        assert d["name"] and d["name"] != d["id"]


# --------------------------------------------------------------------------- the examples gallery


def test_examples_gallery(monkeypatch, core_examples) -> None:
    monkeypatch.chdir(core_examples.parent)
    reps, _ = doctor("examples")
    doc = check_sarif(sarif.to_sarif(reps))
    expected = [(f.id, r.file) for r in reps for f in r.findings if f.level is not Level.PASS]
    assert [(res["ruleId"], where(res)[0]) for res in results_of(doc)] == expected
    assert {where(res)[0] for res in results_of(doc)} <= {r.file for r in reps}
    assert all(where(res)[0].startswith("examples/") for res in results_of(doc))
    fails = {(f.id, r.file) for r in reps for f in r.findings if f.level is Level.FAIL}
    assert (
        fails and {(res["ruleId"], where(res)[0]) for res in results_of(doc, None) if res["level"] == "error"} == fails
    )
    # a result with a step in a line format sits on the record of that step
    checked = 0
    for res in results_of(doc):
        uri, line = where(res)
        step = res["properties"].get("step")
        if step is None or line == 1:
            continue
        text = file_line(REPO / uri, line)
        if uri.endswith(".jsonl"):
            assert json.loads(text)["step"] == step, (res["ruleId"], uri, line)
        else:
            header = file_line(REPO / uri, 1)
            assert float(next(csv.DictReader([header, text]))["step"]) == step, (res["ruleId"], uri, line)
        checked += 1
    assert checked >= 5


# --------------------------------------------------------------------------- fingerprints


@pytest.mark.slow
def test_fingerprints_are_stable_across_runs_and_unique(tmp_path: Path, monkeypatch, core_examples) -> None:
    monkeypatch.chdir(core_examples.parent)
    one = check_sarif(sarif.to_sarif(doctor("examples")[0]))
    two = check_sarif(sarif.to_sarif(doctor("examples")[0]))
    fp = lambda d: [r["partialFingerprints"][sarif.FINGERPRINT_KEY] for r in results_of(d)]  # noqa: E731
    assert fp(one) == fp(two)
    assert len(set(fp(one))) == len(fp(one))
    # the same finding on another file is another alert
    by_rule_file = {(r["ruleId"], where(r)[0]): r["partialFingerprints"] for r in results_of(one)}
    assert (
        by_rule_file[("TP-THROUGHPUT", "examples/healthy/metrics.csv")]
        != by_rule_file[("TP-THROUGHPUT", "examples/healthy_seed1/metrics.csv")]
    )


def test_fingerprint_ignores_line_numbers_and_message_wording(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = Path("trainer_state.json")
    before = judge(diverging_hf(path))
    # the same run with an extra top-level key sorted before log_history: every line moves
    after = judge(diverging_hf(path, a_note={"k": list(range(5))}))
    f0, f1 = finding(before, "TP-DIVERGE"), finding(after, "TP-DIVERGE")
    assert f0.step == f1.step and f0.line != f1.line
    d0, d1 = (check_sarif(sarif.to_sarif([r])) for r in (before, after))
    r0, r1 = only(d0, "TP-DIVERGE"), only(d1, "TP-DIVERGE")
    assert where(r0)[1] != where(r1)[1]
    assert r0["partialFingerprints"] == r1["partialFingerprints"]
    # a reworded message keeps the fingerprint
    reworded = dataclasses.replace(
        before, findings=[dataclasses.replace(f, message="reworded " + f.message) for f in before.findings]
    )
    r2 = only(check_sarif(sarif.to_sarif([reworded])), "TP-DIVERGE")
    assert r2["message"]["text"] != r0["message"]["text"]
    assert r2["partialFingerprints"] == r0["partialFingerprints"]


def test_repeated_finding_gets_an_occurrence_number(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    rep = judge(write_jsonl(Path("acc.jsonl"), [{"step": i, "accuracy": 0.5} for i in range(20)]))
    twice = dataclasses.replace(rep, findings=rep.findings * 2)
    a, b = results_of(check_sarif(sarif.to_sarif([twice])))
    fa, fb = (r["partialFingerprints"][sarif.FINGERPRINT_KEY] for r in (a, b))
    assert fa != fb and fa.endswith(":1") and fb.endswith(":2") and fa[:-2] == fb[:-2]


# --------------------------------------------------------------------------- URIs


def test_absolute_paths_inside_base_become_relative(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    rows = healthy_rows(60)
    rows[29]["loss"] = float("nan")
    path = write_jsonl(tmp_path / "sub dir" / "my run#1.jsonl", rows)
    rep = judge(path)
    assert rep.file == str(path)  # absolute, as invoked

    inside = only(check_sarif(sarif.to_sarif([rep], base=tmp_path)), "TP-NAN")
    uri, line = where(inside)
    assert uri == "sub%20dir/my%20run%231.jsonl"
    assert (tmp_path / unquote(uri)) == path and "NaN" in file_line(path, line)

    outside = only(check_sarif(sarif.to_sarif([rep], base=tmp_path / "elsewhere")), "TP-NAN")
    assert where(outside)[0] == path.as_uri()
    no_base = only(check_sarif(sarif.to_sarif([rep])), "TP-NAN")
    assert where(no_base)[0] == path.as_uri()

    dotted = only(check_sarif(sarif.to_sarif([judge("./sub dir/my run#1.jsonl")])), "TP-NAN")
    assert where(dotted)[0] == uri
    # the fingerprint follows the URI, so each way of naming the file inside base agrees
    assert dotted["partialFingerprints"] == inside["partialFingerprints"]


def test_artifact_uri_rules() -> None:
    assert sarif.artifact_uri("logs/a.jsonl") == "logs/a.jsonl"
    assert sarif.artifact_uri("./logs//a.jsonl") == "logs/a.jsonl"
    assert sarif.artifact_uri("../shared/x.csv") == "../shared/x.csv"
    assert sarif.artifact_uri("runs/lr=1e-3,bs=8/metrics.csv") == "runs/lr=1e-3,bs=8/metrics.csv"
    assert sarif.artifact_uri("runs/ü 50%.jsonl") == "runs/%C3%BC%2050%25.jsonl"
    assert sarif.artifact_uri("a:b/x.jsonl") == "./a:b/x.jsonl"  # not a URI scheme
    assert sarif.artifact_uri("/x/y/z.jsonl", base=Path("/x")) == "y/z.jsonl"
    assert sarif.artifact_uri("/x/y/z.jsonl", base=Path("/q")) == "file:///x/y/z.jsonl"


# --------------------------------------------------------------------------- properties, determinism, files


def test_properties_are_strict_json(tmp_path: Path, monkeypatch, nan_jsonl: Path) -> None:
    rep = judge(nan_jsonl)
    f = finding(rep, "TP-NAN")
    odd = dataclasses.replace(
        rep,
        findings=[
            dataclasses.replace(
                f, data={**f.data, "worst": float("nan"), "peak": float("inf"), "at": (1, float("-inf"))}
            )
        ],
    )
    text = sarif.dumps([odd])

    def bare(name):
        raise AssertionError(f"bare {name} in the SARIF text")

    data = only(check_sarif(json.loads(text, parse_constant=bare)), "TP-NAN")["properties"]["data"]
    assert (data["worst"], data["peak"], data["at"]) == ("NaN", "Infinity", [1, "-Infinity"])


@pytest.mark.slow
def test_output_is_deterministic(tmp_path: Path, monkeypatch, core_examples) -> None:
    monkeypatch.chdir(core_examples.parent)
    reps = doctor("examples")[0]
    text = sarif.dumps(reps)
    assert sarif.dumps(reps) == text == sarif.dumps(doctor("examples")[0])
    assert sarif.to_sarif(reps) == json.loads(text)
    out = tmp_path / "trainproof.sarif"
    sarif.write_sarif(reps, out)
    first = out.read_bytes()
    sarif.write_sarif(doctor("examples")[0], out)
    assert out.read_bytes() == first == (text + "\n").encode("utf-8")
    check_sarif(json.loads(first))
    assert str(REPO) not in text  # no machine paths when the reports hold none


def test_empty_report_list_is_a_valid_empty_run() -> None:
    doc = check_sarif(sarif.to_sarif([]))
    assert doc["runs"][0]["results"] == [] and doc["runs"][0]["tool"]["driver"]["rules"] == []
    assert doc["runs"][0]["properties"] == {"worstVerdict": None, "reports": []}


def test_schema_validation_is_available(core_examples) -> None:
    """Make the skip visible: without ../shared every other test runs the structural check only."""
    if VALIDATOR is None:
        pytest.skip("../shared/schemas/sarif-schema-2.1.0.json is absent")
    good = sarif.to_sarif(doctor(core_examples)[0])
    VALIDATOR.validate(good)
    breakages = [
        lambda d: d["runs"][0]["results"][0].__setitem__("level", "fatal"),
        lambda d: d["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"].__setitem__("startLine", 0),
        lambda d: d["runs"][0]["tool"]["driver"].pop("name"),
        lambda d: d.pop("version"),
        lambda d: d.__setitem__("extra", 1),
    ]
    for breakage in breakages:
        bad = json.loads(json.dumps(good))
        breakage(bad)
        with pytest.raises(jsonschema.ValidationError):
            VALIDATOR.validate(bad)


# --------------------------------------------------------------------------- the shared corpus


@pytest.mark.slow
def test_corpus_sarif_is_valid(shared: Path) -> None:
    reps, _ = doctor(shared / "corpus")
    assert reps
    for base in (shared / "corpus", None):
        doc = check_sarif(sarif.to_sarif(reps, base=base))
        expected = sum(1 for r in reps for f in r.findings if f.level is not Level.PASS)
        expected += sum(1 for r in reps if r.error and "TP-READ-ERROR" not in r.ids())
        assert len(results_of(doc)) == expected
        for res in results_of(doc):
            uri, line = where(res)
            if base is None:
                assert uri.startswith("file:///")
                path = Path(unquote(uri[len("file://") :]))
            else:
                assert not uri.startswith(("file:", "/", "..")), uri
                path = base / unquote(uri)
            assert path.exists(), uri
            if path.is_file() and is_line_format(res["properties"].get("format")):
                # lines as the run declares them: CR LF, LF and a lone CR each end one
                assert doc["runs"][0]["newlineSequences"] == ["\r\n", "\n", "\r"]
                with open(path, encoding="utf-8", errors="replace", newline=None) as fh:
                    assert line <= sum(1 for _ in fh), (uri, line)
            if res["properties"].get("format") == "tfevents":
                assert line == 1


# --------------------------------------------------------------------------- serialisation


@pytest.mark.slow
def test_serialisation_writes_what_to_json_writes(monkeypatch, core_examples) -> None:
    """The module serialises sarif_om objects itself (to_json deep-copies every object once
    per level above it): the text is the same as jschema_to_python's to_json gives, key
    order and dropped defaults included, for a log with rules, results, regions,
    fingerprints, properties and a notification of dropped results."""
    from jschema_to_python.to_json import to_json

    monkeypatch.chdir(core_examples.parent)
    monkeypatch.setattr(sarif, "MAX_RESULTS", 5)
    log = sarif.sarif_log(doctor("examples")[0])
    assert log.runs[0].properties["droppedResults"]["count"] > 0
    ours = json.dumps(log, default=sarif._schema_dict, indent=2)
    assert ours == to_json(log)
