"""SARIF 2.1.0 output, for GitHub code scanning and any other SARIF consumer.

The log is built from :mod:`sarif_om` objects and serialised with
:func:`jschema_to_python.to_json.to_json`, then parsed back and written once more with the
project's JSON settings (see *Serialisation* below). Everything comes from the
:class:`~trainproof.findings.Report` objects and the rule registry; nothing is recomputed.

**Which findings become results.** Every finding whose level is FAIL (``error``), WARN
(``warning``), INFO or NOT-CHECKED (``note``) is a result, including the outcome findings
``TP-NOT-CHECKED``, ``TP-NO-LOSS``, ``TP-NO-RECORDS`` and ``TP-READ-ERROR`` (a report
whose ``error`` is set always yields a ``TP-READ-ERROR`` note at its file, even when the
report does not carry that finding). PASS findings (``TP-PASS``, ``TP-CMP-PASS``) are
*not* results: code scanning turns every result into an alert that stays open until a
later analysis stops reporting it, so a PASS result would be an alert on every healthy
log, to be dismissed by hand, that "closes" exactly when the run breaks. In SARIF a clean
file is one with no results. The verdict of every report, PASS included, is kept in the
run's ``properties.reports`` so no outcome is lost. ``tool.driver.rules`` lists only the
rules the results reference, in registry (RULES.md) order.

**Locations.** The artifact URI is the report's ``file`` as invoked: a relative path stays
relative to where the command ran (no ``uriBaseId``: code scanning resolves relative URIs
against the checkout, where the command runs in CI, and ``originalUriBaseIds`` would put a
machine's absolute path into the output). Separators become ``/``, dot segments are
removed (``./logs/a.jsonl`` is ``logs/a.jsonl``), and only characters a URI cannot hold
are percent-encoded (space, ``%``, ``#``, ``?``, non-ASCII, ...). An absolute path inside
``base`` becomes relative to ``base``; any other absolute path becomes a ``file://`` URI.
The region's ``startLine`` is the finding's ``line`` for formats with text lines (see
:data:`LINE_FORMATS`). For ``tfevents`` (binary; ``line`` is a record index), for an
MLflow run folder (``line`` is a line of one of several metric files, and the finding does
not say which) and for findings without a line, ``startLine`` is 1 and the index or line
goes into the result's ``properties`` (``recordIndex`` / ``metricFileLine``) next to
``step`` and the finding's ``data``.

**Fingerprints.** ``partialFingerprints["trainproofFinding/v1"]`` is
``sha256(rule id, artifact URI, step)`` (first 32 hex digits) followed by ``:N``, the
occurrence number of that triple within the log, the way code scanning numbers its own
``primaryLocationLineHash``. It never depends on message wording or on line numbers, so
rewording a message or prepending lines to a log keeps an alert the same alert; two
findings on one file always differ (another rule, another step, or another occurrence).

**Serialisation.** ``to_json`` drops every property equal to its schema default. Two of
those defaults matter: a result's ``level`` and a rule's ``defaultConfiguration.level``
are both dropped when they are ``"warning"`` (which SARIF readers then infer), so they
are written back explicitly. ``to_json`` also writes NaN as a bare ``NaN`` (not JSON), so
``properties`` hold only :func:`~trainproof.findings.jsonable` values (non-finite floats
as strings) and the final dump uses ``allow_nan=False``. ``to_json`` moves every renamed
key (``$schema``, ``ruleId``, ...) to the end of its object; the main keys are put back in
reading order (``$schema`` first). The same reports give the same
bytes: no timestamps, no machine paths unless the report holds one.
"""
from __future__ import annotations

import hashlib
import json
import os
import posixpath
from collections.abc import Iterable
from pathlib import Path, PurePath
from urllib.parse import quote

import sarif_om as om
from jschema_to_python.to_json import to_json

from .._files import write_atomic
from ..findings import Finding, Level, Report, jsonable, worst_verdict
from ..rules.registry import DOC_SECTIONS, Rule, all_rules, get

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://github.com/trainproof/trainproof"
RULES_URI = INFORMATION_URI + "/blob/main/RULES.md"
FINGERPRINT_KEY = "trainproofFinding/v1"
READ_ERROR_ID = "TP-READ-ERROR"

#: Formats whose ``Finding.line`` is a 1-based line of the log file itself.
LINE_FORMATS = frozenset({"jsonl", "csv", "hf", "coqui", "console", "mlflow", "dataset", "speech-data"})

_LEVEL = {Level.FAIL: "error", Level.WARN: "warning"}

#: Characters kept as they are in a URI path: RFC 3986 unreserved, sub-delims, ``:``,
#: ``@`` and ``/``. Everything else is percent-encoded (UTF-8).
_SAFE = "/!$&'()*+,;=:@-._~"


def sarif_level(level: Level) -> str:
    """FAIL -> ``error``, WARN -> ``warning``, anything else -> ``note``."""
    return _LEVEL.get(level, "note")


def rule_help_uri(rule_id: str) -> str:
    return f"{RULES_URI}#{rule_id.lower()}"


# --- locations ---------------------------------------------------------------------------

def _posix(path: str) -> str:
    for sep in (os.sep, os.altsep):
        if sep and sep != "/":
            path = path.replace(sep, "/")
    return path


def _inside(path: str, base: Path) -> str | None:
    """``path`` relative to ``base`` (POSIX form) when it lies inside it, else ``None``.

    Compared lexically first, then with symlinks resolved (``/tmp`` vs ``/private/tmp``).
    """
    b = os.path.abspath(os.fspath(base))
    for p, root in ((os.path.normpath(path), b), (os.path.realpath(path), os.path.realpath(b))):
        try:
            rel = PurePath(p).relative_to(root)
        except ValueError:
            continue
        if str(rel) not in ("", "."):
            return rel.as_posix()
    return None


def artifact_uri(file: str, base: Path | None = None) -> str:
    """The URI of a report's ``file`` for ``artifactLocation.uri`` (see the module doc)."""
    if os.path.isabs(file):
        rel = _inside(file, base) if base is not None else None
        if rel is None:
            p = _posix(os.path.normpath(file))
            return "file://" + ("" if p.startswith("/") else "/") + quote(p, safe=_SAFE)
        file = rel
    p = posixpath.normpath(_posix(file)) if file else file
    uri = quote(p, safe=_SAFE)
    if ":" in uri.split("/", 1)[0]:
        uri = "./" + uri  # a colon in the first segment would read as a URI scheme
    return uri


def _step_json(step: float | None):
    if step is None:
        return None
    s = float(step)
    return jsonable(int(s) if s.is_integer() else s)


def _line_is_in_file(report: Report) -> bool:
    """True when ``Finding.line`` is a line of the very file the report names."""
    if report.format not in LINE_FORMATS:
        return False
    # An MLflow run folder holds one file per metric; a line number cannot say which.
    return not (report.format == "mlflow" and report.meta.get("metric_files"))


# --- rules -------------------------------------------------------------------------------

def _rule_name(rule_id: str) -> str:
    """``TP-ZERO-LOSS-ONSET`` -> ``ZeroLossOnset`` (SARIF's friendly rule name)."""
    parts = rule_id.split("-")
    if parts and parts[0] == "TP":
        parts = parts[1:]
    return "".join(p.capitalize() for p in parts) or rule_id


def _help_text(rule: Rule) -> str:
    parts = [f"{title}. {rule.text(attr)}" for attr, title in DOC_SECTIONS]
    parts.append(f"Documentation: {rule_help_uri(rule.id)}")
    return "\n\n".join(parts)


def _descriptor(rule_id: str, rule: Rule | None, level: Level) -> om.ReportingDescriptor:
    if rule is None:  # an id the registry does not know: describe it with what we have
        return om.ReportingDescriptor(
            id=rule_id, name=_rule_name(rule_id),
            short_description=om.MultiformatMessageString(text=rule_id),
            default_configuration=om.ReportingConfiguration(level=sarif_level(level)),
        )
    return om.ReportingDescriptor(
        id=rule.id,
        name=_rule_name(rule.id),
        short_description=om.MultiformatMessageString(text=rule.text("summary")),
        full_description=om.MultiformatMessageString(text=rule.text("detects")),
        help=om.MultiformatMessageString(text=_help_text(rule), markdown=rule.doc_markdown()),
        help_uri=rule_help_uri(rule.id),
        default_configuration=om.ReportingConfiguration(level=sarif_level(rule.level)),
        properties={"tags": ["trainproof", rule.group], "group": rule.group, "trainproofLevel": rule.level.value},
    )


# --- results -----------------------------------------------------------------------------

def _reported(report: Report) -> list[Finding]:
    """The findings of ``report`` that become results (every level but PASS)."""
    out = [f for f in report.findings if f.level is not Level.PASS]
    if report.error is not None and not any(f.id == READ_ERROR_ID for f in out):
        r = get(READ_ERROR_ID)
        out.insert(0, Finding(id=READ_ERROR_ID, level=Level.NOT_CHECKED, message="the log could not be read",
                              evidence=report.error, source="reader", hint=r.hint if r else ""))
    return out


def _message(f: Finding, rule: Rule | None, record_index: int | None) -> str:
    head = " ".join(f.message.split()) or (rule.text("summary") if rule else f.id)
    where = []
    if f.step is not None:
        s = _step_json(f.step)
        where.append(f"step {s}")
    if record_index is not None:
        where.append(f"record {record_index}")
    if where:
        head += f" ({', '.join(where)})"
    lines = [head]
    if f.evidence:
        lines.append(f.evidence)
    if f.hint:
        lines.append(f.hint)
    return "\n".join(lines)


def fingerprint(rule_id: str, uri: str, step: float | None, occurrence: int = 1) -> str:
    """The ``partialFingerprints`` value: hash of rule id, artifact URI and step, plus the
    occurrence number of that triple within the log."""
    s = _step_json(step)
    key = "\x1f".join((rule_id, uri, "" if s is None else json.dumps(s)))
    return f"{hashlib.sha256(key.encode('utf-8')).hexdigest()[:32]}:{occurrence}"


def _result(f: Finding, report: Report, uri: str, rule_index: int, rule: Rule | None,
            occurrence: int) -> om.Result:
    props: dict = {"trainproofLevel": f.level.value, "source": f.source}
    if report.format is not None:
        props["format"] = report.format
    step = _step_json(f.step)
    if step is not None:
        props["step"] = step
    start_line = 1
    record_index = None
    if f.line is not None:
        if _line_is_in_file(report):
            start_line = max(1, int(f.line))
        elif report.format == "mlflow":
            props["metricFileLine"] = int(f.line)
        else:
            record_index = int(f.line)
            props["recordIndex"] = record_index
    props["data"] = jsonable(f.data)
    location = om.Location(physical_location=om.PhysicalLocation(
        artifact_location=om.ArtifactLocation(uri=uri),
        region=om.Region(start_line=start_line),
    ))
    return om.Result(
        rule_id=f.id,
        rule_index=rule_index,
        level=sarif_level(f.level),
        message=om.Message(text=_message(f, rule, record_index)),
        locations=[location],
        partial_fingerprints={FINGERPRINT_KEY: fingerprint(f.id, uri, f.step, occurrence)},
        properties=props,
    )


# --- the log -----------------------------------------------------------------------------

def sarif_log(reports: Iterable[Report], base: Path | None = None) -> om.SarifLog:
    """The SARIF log of ``reports`` as :mod:`sarif_om` objects (one run)."""
    from .. import __version__

    reports = list(reports)
    order = {r.id: i for i, r in enumerate(all_rules())}
    pending: list[tuple[Finding, Report, str]] = []
    levels: dict[str, Level] = {}
    for rep in reports:
        uri = artifact_uri(rep.file, base)
        for f in _reported(rep):
            pending.append((f, rep, uri))
            levels.setdefault(f.id, f.level)
    ids = sorted(levels, key=lambda i: (i not in order, order.get(i, 0), i))
    index = {rid: n for n, rid in enumerate(ids)}
    rules = {rid: get(rid) for rid in ids}

    seen: dict[tuple, int] = {}
    results = []
    for f, rep, uri in pending:
        key = (f.id, uri, json.dumps(_step_json(f.step)))
        seen[key] = seen.get(key, 0) + 1
        results.append(_result(f, rep, uri, index[f.id], rules[f.id], seen[key]))

    worst = worst_verdict(reports)
    driver = om.ToolComponent(
        name="trainproof",
        version=__version__,
        semantic_version=__version__,
        information_uri=INFORMATION_URI,
        rules=[_descriptor(rid, rules[rid], levels[rid]) for rid in ids],
    )
    run = om.Run(
        tool=om.Tool(driver=driver),
        results=results,
        # The text readers number lines as Python's universal newlines do: a lone CR (a
        # progress bar's carriage return) ends a line too. SARIF's default is CR LF and LF
        # only (2.1.0, run.newlineSequences), so the run says which sequences its line
        # numbers count.
        newline_sequences=list(NEWLINE_SEQUENCES),
        properties={
            "worstVerdict": worst.value if worst is not None else None,
            "reports": [
                {"file": artifact_uri(r.file, base), "format": r.format, "verdict": r.verdict.value,
                 "records": r.records, "error": r.error}
                for r in reports
            ],
        },
    )
    return om.SarifLog(version=SARIF_VERSION, schema_uri=SARIF_SCHEMA_URI, runs=[run])


#: The newline sequences the line numbers of every result count (``run.newlineSequences``).
NEWLINE_SEQUENCES = ("\r\n", "\n", "\r")


def _first(d: dict, keys: Iterable[str]) -> dict:
    out = {k: d[k] for k in keys if k in d}
    out.update((k, v) for k, v in d.items() if k not in out)
    return out


_RULE_KEYS = ("id", "name", "shortDescription", "fullDescription", "defaultConfiguration", "helpUri", "help")


def _document(log: om.SarifLog) -> dict:
    """Serialise with ``to_json`` and restore what it drops (see the module doc)."""
    doc = json.loads(to_json(log))
    for n, (run_obj, run) in enumerate(zip(log.runs, doc["runs"])):
        driver = run["tool"]["driver"]
        for desc_obj, desc in zip(run_obj.tool.driver.rules, driver.get("rules", [])):
            if desc_obj.default_configuration is not None:
                desc.setdefault("defaultConfiguration", {})["level"] = desc_obj.default_configuration.level
        driver["rules"] = [_first(d, _RULE_KEYS) for d in driver.get("rules", [])]
        run["tool"]["driver"] = _first(driver, ("name", "version", "semanticVersion", "informationUri"))
        results = []
        for res_obj, res in zip(run_obj.results, run["results"]):
            res["level"] = res_obj.level
            for loc in res.get("locations", []):
                loc["physicalLocation"] = _first(loc["physicalLocation"], ("artifactLocation", "region"))
            results.append(_first(res, ("ruleId", "ruleIndex", "level", "message", "locations")))
        run["results"] = results
        doc["runs"][n] = _first(run, ("tool", "results"))
    return _first(doc, ("$schema", "version", "runs"))


def dumps(reports: Iterable[Report], base: Path | None = None) -> str:
    """The SARIF document of ``reports`` as text (deterministic, strict JSON)."""
    return json.dumps(_document(sarif_log(reports, base)), indent=2, ensure_ascii=False, allow_nan=False)


def to_sarif(reports: Iterable[Report], base: Path | None = None) -> dict:
    """The SARIF document of ``reports``, parsed."""
    return json.loads(dumps(reports, base))


def write_sarif(reports: Iterable[Report], path: Path, base: Path | None = None) -> None:
    """Write the SARIF document of ``reports`` to ``path`` (UTF-8, trailing newline)."""
    write_atomic(path, dumps(reports, base) + "\n")
