"""SARIF 2.1.0 output, for GitHub code scanning and any other SARIF consumer.

The log is built from :mod:`sarif_om` objects, turned into plain JSON values as
:func:`jschema_to_python.to_json.to_json` would write them (:func:`_plain`, without its
deep copies), then written once with the project's JSON settings (see *Serialisation* below). Everything comes from the
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
rules the results reference, in registry (RULES.md) order. A run holds at most
:data:`MAX_RESULTS` results (code scanning's limit): past it the lowest severity is left
out first, and the run says so in a tool notification and in ``properties.droppedResults``
(counts by level and by rule).

**Locations.** The artifact URI is the report's ``file`` as invoked (for a W&B run folder,
the ``.wandb`` log inside it, ``meta["log_file"]``): a relative path stays
relative to where the command ran (no ``uriBaseId``: code scanning resolves relative URIs
against the checkout, where the command runs in CI, and ``originalUriBaseIds`` would put a
machine's absolute path into the output). Separators become ``/``, dot segments are
removed (``./logs/a.jsonl`` is ``logs/a.jsonl``), and only characters a URI cannot hold
are percent-encoded (space, ``%``, ``#``, ``?``, non-ASCII, ...). An absolute path inside
``base`` becomes relative to ``base``; any other absolute path becomes a ``file://`` URI.
The region's ``startLine`` is the finding's ``line`` for formats with text lines (see
:func:`~trainproof.findings.is_line_format`). For ``tfevents`` (binary; ``line`` is a record index), for an
MLflow run folder (``line`` is a line of one of several metric files, and the finding does
not say which) and for findings without a line, ``startLine`` is 1 and the index or line
goes into the result's ``properties`` (``recordIndex`` / ``metricFileLine``) next to
``step`` and the finding's ``data``.

**Fingerprints.** ``partialFingerprints["trainproofFinding/v1"]`` is
``sha256(rule id, artifact URI, step)`` (with the run id too for a run of a file that holds
many runs, a tracker's store, whose results also name the run in their message and
properties) (first 32 hex digits) followed by ``:N``, the
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
import re
from collections.abc import Iterable
from pathlib import Path, PurePath
from urllib.parse import quote

import attr
import sarif_om as om

from .._files import write_atomic
from ..findings import Finding, Level, Report, is_line_format, jsonable, worst_verdict
from ..redact import scrub
from ..rules.registry import DOC_SECTIONS, Rule, all_rules, get
from .names import run_words, unshown_run_id

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://github.com/trainproof/trainproof"
RULES_URI = INFORMATION_URI + "/blob/main/RULES.md"
#: Where each id's page is (docs/rules/<ID>.md, generated by trainproof.rules.docs).
RULE_PAGES_URI = INFORMATION_URI + "/blob/main/docs/rules"
FINGERPRINT_KEY = "trainproofFinding/v1"
READ_ERROR_ID = "TP-READ-ERROR"


_LEVEL = {Level.FAIL: "error", Level.WARN: "warning"}

#: Characters kept as they are in a URI path: RFC 3986 unreserved, sub-delims, ``:``,
#: ``@`` and ``/``. Everything else is percent-encoded (UTF-8).
_SAFE = "/!$&'()*+,;=:@-._~"
#: ``scheme://``: a report's ``file`` that is a URL (a remote log, a tracking server's run).
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]+://")


def sarif_level(level: Level) -> str:
    """FAIL -> ``error``, WARN -> ``warning``, anything else -> ``note``."""
    return _LEVEL.get(level, "note")


def rule_help_uri(rule_id: str) -> str:
    """The page documenting ``rule_id`` (docs/rules/<ID>.md)."""
    return f"{RULE_PAGES_URI}/{rule_id}.md"


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
    """The URI of a report's ``file`` for ``artifactLocation.uri`` (see the module doc);
    a URL (``s3://…``, a tracking server's run page) is a URI already and stays one."""
    if _URL.match(file):
        return quote(file, safe=_SAFE + "#%")
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


def _run_file(report: Report) -> str:
    """The file a report's results point at: its ``file``, or for a run read from a folder
    whose records come from one file in it (``meta["log_file"]``, a W&B run folder's
    ``.wandb`` log), that file; code scanning annotates files, not folders."""
    inner = report.meta.get("log_file")
    if not isinstance(inner, str) or not inner or report.file.endswith(inner):
        return report.file
    sep = "\\" if "\\" in report.file and "/" not in report.file else "/"
    return report.file.rstrip("/\\") + sep + inner


def _step_json(step: float | None):
    if step is None:
        return None
    s = float(step)
    return jsonable(int(s) if s.is_integer() else s)


def _line_is_in_file(report: Report) -> bool:
    """True when ``Finding.line`` is a line of the very file the report names."""
    if not is_line_format(report.format):
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
            id=rule_id,
            name=_rule_name(rule_id),
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
        out.insert(
            0,
            Finding(
                id=READ_ERROR_ID,
                level=Level.NOT_CHECKED,
                message="the log could not be read",
                evidence=report.error,
                source="reader",
                hint=r.hint if r else "",
            ),
        )
    return out


def _message(f: Finding, rule: Rule | None, record_index: int | None, report: Report | None = None) -> str:
    head = " ".join(f.message.split()) or (rule.text("summary") if rule else f.id)
    if report is not None and unshown_run_id(report):
        head = f"{run_words(report)}: {head}"  # the file holds many runs: say which
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


def fingerprint(rule_id: str, uri: str, step: float | None, occurrence: int = 1, run: str = "") -> str:
    """The ``partialFingerprints`` value: hash of rule id, artifact URI and step (and
    ``run``, the run's id, for a file that holds many runs), plus the occurrence number
    of that key within the log."""
    s = _step_json(step)
    key = "\x1f".join((rule_id, uri, "" if s is None else json.dumps(s), *((run,) if run else ())))
    return f"{hashlib.sha256(key.encode('utf-8')).hexdigest()[:32]}:{occurrence}"


def _result(f: Finding, report: Report, uri: str, rule_index: int, rule: Rule | None, occurrence: int) -> om.Result:
    props: dict = {"trainproofLevel": f.level.value, "source": f.source}
    if report.format is not None:
        props["format"] = report.format
    for key, meta_key in (("run", "run"), ("runId", "run_id"), ("experiment", "experiment")):
        if isinstance(report.meta.get(meta_key), str):
            props[key] = report.meta[meta_key]
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
    location = om.Location(
        physical_location=om.PhysicalLocation(
            artifact_location=om.ArtifactLocation(uri=uri),
            region=om.Region(start_line=start_line),
        )
    )
    return om.Result(
        rule_id=f.id,
        rule_index=rule_index,
        level=sarif_level(f.level),
        message=om.Message(text=_message(f, rule, record_index, report)),
        locations=[location],
        partial_fingerprints={FINGERPRINT_KEY: fingerprint(f.id, uri, f.step, occurrence, unshown_run_id(report))},
        properties=props,
    )


# --- the log -----------------------------------------------------------------------------

#: The most results one SARIF run holds: GitHub code scanning rejects a file with more than
#: 25,000 results in a run ("SARIF support for code scanning", upload limits).
MAX_RESULTS = 25_000

#: Which results are dropped first when there are more than :data:`MAX_RESULTS`.
#: Context (INFO) before a run that could not be judged (NOT-CHECKED, which decides exit 2).
_DROP_ORDER = {Level.INFO: 0, Level.NOT_CHECKED: 1, Level.WARN: 2, Level.FAIL: 3}


def _capped(numbered: list[tuple], cap: int) -> tuple[list[tuple], dict | None]:
    """``numbered`` (``(finding, report, uri, occurrence)`` in output order) cut to ``cap``
    results, lowest severity first (notes, INFO before NOT-CHECKED, then warnings, then
    errors; within a level, the last in output order), the kept ones in their order; and what was dropped
    (``None`` when nothing): counts by SARIF level and by rule, and a sentence saying so."""
    if len(numbered) <= cap:
        return numbered, None
    ranked = sorted(range(len(numbered)), key=lambda i: (-_DROP_ORDER.get(numbered[i][0].level, 0), i))
    keep = set(ranked[:cap])
    by_level: dict[str, int] = {}
    by_rule: dict[str, int] = {}
    for i in ranked[cap:]:
        f = numbered[i][0]
        lv = sarif_level(f.level)
        by_level[lv] = by_level.get(lv, 0) + 1
        by_rule[f.id] = by_rule.get(f.id, 0) + 1
    n = len(numbered) - cap
    levels = ", ".join(f"{by_level[lv]} {lv}" for lv in ("note", "warning", "error") if lv in by_level)
    message = (
        f"{n} of {len(numbered)} results were left out ({levels}): code scanning takes at most {cap} results "
        "per run; the lowest severity was dropped first. The text or JSON report lists every finding."
    )
    dropped = {"count": n, "byLevel": by_level, "byRule": dict(sorted(by_rule.items())), "message": message}
    return [x for i, x in enumerate(numbered) if i in keep], dropped


def sarif_log(reports: Iterable[Report], base: Path | None = None) -> om.SarifLog:
    """The SARIF log of ``reports`` as :mod:`sarif_om` objects (one run)."""
    from .. import __version__

    reports = scrub(list(reports))
    order = {r.id: i for i, r in enumerate(all_rules())}
    pending: list[tuple[Finding, Report, str]] = []
    levels: dict[str, Level] = {}
    for rep in reports:
        uri = artifact_uri(_run_file(rep), base)
        for f in _reported(rep):
            pending.append((f, rep, uri))
            levels.setdefault(f.id, f.level)
    ids = sorted(levels, key=lambda i: (i not in order, order.get(i, 0), i))
    index = {rid: n for n, rid in enumerate(ids)}
    rules = {rid: get(rid) for rid in ids}

    # Occurrence numbers count every finding, kept or not, so a kept result's fingerprint
    # does not depend on the cap.
    seen: dict[tuple, int] = {}
    numbered = []
    for f, rep, uri in pending:
        key = (f.id, uri, json.dumps(_step_json(f.step)), unshown_run_id(rep))
        seen[key] = seen.get(key, 0) + 1
        numbered.append((f, rep, uri, seen[key]))
    numbered, dropped = _capped(numbered, MAX_RESULTS)
    if dropped:
        levels = {}
        for f, _, _, _ in numbered:
            levels.setdefault(f.id, f.level)
        ids = sorted(levels, key=lambda i: (i not in order, order.get(i, 0), i))
        index = {rid: n for n, rid in enumerate(ids)}
        rules = {rid: rules[rid] for rid in ids}
    results = [_result(f, rep, uri, index[f.id], rules[f.id], n) for f, rep, uri, n in numbered]

    worst = worst_verdict(reports)
    driver = om.ToolComponent(
        name="trainproof",
        version=__version__,
        semantic_version=__version__,
        information_uri=INFORMATION_URI,
        rules=[_descriptor(rid, rules[rid], levels[rid]) for rid in ids],
    )
    properties = {
        "worstVerdict": worst.value if worst is not None else None,
        "reports": [
            {
                "file": artifact_uri(_run_file(r), base),
                "format": r.format,
                "verdict": r.verdict.value,
                "records": r.records,
                "error": r.error,
            }
            for r in reports
        ],
    }
    invocations = None
    if dropped:
        properties["droppedResults"] = dropped
        invocations = [
            om.Invocation(
                execution_successful=True,
                tool_execution_notifications=[
                    om.Notification(message=om.Message(text=dropped["message"]), level="warning")
                ],
            )
        ]
    run = om.Run(
        tool=om.Tool(driver=driver),
        invocations=invocations,
        results=results,
        # The text readers number lines as Python's universal newlines do: a lone CR (a
        # progress bar's carriage return) ends a line too. SARIF's default is CR LF and LF
        # only (2.1.0, run.newlineSequences), so the run says which sequences its line
        # numbers count.
        newline_sequences=list(NEWLINE_SEQUENCES),
        properties=properties,
    )
    return om.SarifLog(version=SARIF_VERSION, schema_uri=SARIF_SCHEMA_URI, runs=[run])


#: The newline sequences the line numbers of every result count (``run.newlineSequences``).
NEWLINE_SEQUENCES = ("\r\n", "\n", "\r")


def _first(d: dict, keys: Iterable[str]) -> dict:
    out = {k: d[k] for k in keys if k in d}
    out.update((k, v) for k, v in d.items() if k not in out)
    return out


_RULE_KEYS = ("id", "name", "shortDescription", "fullDescription", "defaultConfiguration", "helpUri", "help")


def _schema_dict(obj: object) -> object:
    """``json.dumps``'s ``default`` for :mod:`sarif_om` objects, as
    :func:`jschema_to_python.to_json.to_json` writes them: the object's attributes less
    those equal to their default, renamed to their schema names (moved to the end, in field
    order); anything else as ``str``. ``to_json`` deep-copies each object's attributes
    (every nested object again at each level) and indents with the pure-Python encoder:
    seconds per thousand results. A shallow copy and the C encoder give the same document."""
    if not hasattr(obj, "__dict__"):
        return str(obj)
    d = dict(obj.__dict__)
    fields = attr.fields(type(obj))
    for f in fields:
        default = f.default.factory() if isinstance(f.default, attr.Factory) else f.default
        if f.name in d and d[f.name] == default:
            del d[f.name]
    for f in fields:
        name = f.metadata.get("schema_property_name")
        if name and name != f.name and f.name in d:
            d[name] = d.pop(f.name)
    return d


def _plain(obj: object) -> object:
    """``obj`` as the JSON values ``json.loads(json.dumps(obj, default=_schema_dict))``
    gives, built directly: no text written and parsed again."""
    if obj is None or isinstance(obj, (str, bool, int, float)):
        return obj
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    d = _schema_dict(obj)
    return d if isinstance(d, str) else {k: _plain(v) for k, v in d.items()}


def _document(log: om.SarifLog) -> dict:
    """Serialise as ``to_json`` does (:func:`_schema_dict`) and restore what it drops (see
    the module doc)."""
    doc = _plain(log)
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


def write(reports: Iterable[Report], path: Path, *, baseline: Report | None = None) -> None:
    """The ``--sarif`` file (:data:`trainproof.render.RENDERERS`): :func:`write_sarif` of
    ``reports`` with URIs relative to the current directory. A ``compare`` baseline is a
    reference, not a finding's subject: it is not in the file."""
    write_sarif(list(reports), path, base=Path.cwd())
