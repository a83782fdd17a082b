"""The ``--json`` document (schema: ``trainproof/schema/report.schema.json``).

The document is deterministic: the same reports give the same bytes. Non-finite numbers
are written as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (strict JSON).
"""

from __future__ import annotations

import json

from ..findings import Report, worst_verdict
from ..redact import scrub
from .names import run_name

#: Version of the JSON document's schema. Adding optional fields is a minor change;
#: removing or renaming a field, or changing its meaning, is a major one (CONTRACTS.md).
SCHEMA_VERSION = "1.3"


def document(reports: list[Report], command: str, error: str | None = None, extra: dict | None = None) -> dict:
    from .. import __version__

    worst = worst_verdict(reports)
    doc = {
        "schema_version": SCHEMA_VERSION,
        "trainproof_version": __version__,
        "command": command,
        "reports": [report_dict(r) for r in reports],
        "worst_verdict": worst.value if worst is not None else None,
        "error": error,
    }
    if extra:
        doc.update(extra)
    # The one place the document is built: every string in it passes the credential mask.
    return scrub(doc)


def report_dict(r: Report) -> dict:
    """``r.to_dict()`` with the run's ``name`` after its ``file`` (:func:`trainproof.render.names.run_name`)."""
    d = r.to_dict()
    return {"file": d.pop("file"), "name": run_name(r), **d}


def dumps(doc: dict) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False)
