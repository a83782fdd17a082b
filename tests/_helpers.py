"""Helpers shared by the tests of several modules: RunLog and SARIF checks, logs built to fail."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import numpy as np

import trainproof
from trainproof.render import sarif
from trainproof.runlog import Record, build_runlog

from conftest import REPO, SHARED


def assert_repeats_differ(s) -> None:
    """Steps never decrease, and a step that repeats holds different values (an
    identical repeat is kept once; see runlog's "Repeated steps")."""
    d = np.diff(s.steps)
    assert np.all(d >= 0)
    same = (s.values[1:] == s.values[:-1]) | (np.isnan(s.values[1:]) & np.isnan(s.values[:-1]))
    assert not np.any((d == 0) & same)


def check_sarif(doc: dict) -> dict:
    """Structural checks (always) and schema validation (when ../shared is present)."""
    json.dumps(doc, allow_nan=False)  # strict JSON all the way down
    assert doc["version"] == "2.1.0"
    assert doc["$schema"].startswith("https://") and doc["$schema"].endswith("sarif-schema-2.1.0.json")
    assert len(doc["runs"]) == 1
    run = doc["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "trainproof"
    assert driver["version"] == trainproof.__version__
    assert driver["informationUri"] == "https://github.com/trainproof/trainproof"
    rules = driver["rules"]
    ids = [r["id"] for r in rules]
    assert len(ids) == len(set(ids))
    assert isinstance(run["results"], list)
    prints = []
    for res in run["results"]:
        assert res["ruleId"] and res["level"] in LEVELS
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["message"]["text"].strip()
        assert res["locations"]
        for loc in res["locations"]:
            uri = loc["physicalLocation"]["artifactLocation"]["uri"]
            assert _URI_CHARS.match(uri), uri
            assert "\\" not in uri
            assert loc["physicalLocation"]["region"]["startLine"] >= 1
        assert "uriBaseId" not in res["locations"][0]["physicalLocation"]["artifactLocation"]
        prints.append(res["partialFingerprints"][sarif.FINGERPRINT_KEY])
    # only the rules the results reference, and every result's fingerprint is its own
    assert set(ids) == {res["ruleId"] for res in run["results"]}
    assert len(prints) == len(set(prints))
    if VALIDATOR is not None:
        VALIDATOR.validate(doc)
    return doc


def failing_log(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(FAILING)
    return path


def write_rows(folder: Path, rows: list[dict], fmt: str, jsonl_name: str = "log.jsonl") -> Path:
    """Write ``rows`` (dicts of numbers, every row the first row's keys for CSV) as a JSONL
    log named ``jsonl_name`` (``fmt`` "jsonl") or a ``metrics.csv`` at 6 significant digits
    (``fmt`` "csv") in ``folder``; returns the path."""
    if fmt == "jsonl":
        p = folder / jsonl_name
        p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        keys = list(rows[0])
        p = folder / "metrics.csv"
        p.write_text(",".join(keys) + "\n" + "".join(",".join(f"{r[k]:.6g}" for k in keys) + "\n" for r in rows))
    return p


def run_of(meta=None, **cols):
    length = max(len(c) for c in cols.values())
    recs = []
    for i in range(length):
        vals = {k: float(c[i]) for k, c in cols.items() if i < len(c) and c[i] is not None}
        recs.append(Record(float(10 * (i + 1)), vals, i + 1))
    return build_runlog(recs, "x.jsonl", "jsonl", meta=meta)


LEVELS = {"error", "warning", "note"}


#: An RFC 3986 URI reference: only unreserved, reserved and well-formed %XX.
_URI_CHARS = re.compile(r"^(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?#\[\]]|%[0-9A-Fa-f]{2})*$")


FAILING = (REPO / "examples" / "diverge" / "metrics.jsonl").read_bytes()  # TP-DIVERGE: a FAIL


#: The SARIF 2.1.0 schema kept in ../shared (the checks skip validation where it is absent).
SCHEMA_PATH = SHARED / "schemas" / "sarif-schema-2.1.0.json"


def _validator():
    if not SCHEMA_PATH.exists():
        return None
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)  # the schema says draft-07
    cls.check_schema(schema)
    if "properties" not in schema and "Root" in schema.get("definitions", {}):
        # This copy keeps the log object's own constraints in definitions/Root and
        # references it nowhere: as it stands the schema accepts any JSON at all.
        schema = {**schema, "$ref": "#/definitions/Root"}
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


VALIDATOR = _validator()
