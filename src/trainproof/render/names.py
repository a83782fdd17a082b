"""How a run is named in every output: the text table, ``--json``, SARIF, HTML and the
GitHub Action (which reads the ``name`` of each report in the ``--json`` document).

A log of one run is named by its file. A tracker's store holds many runs in one file
(``trackers/mlflow.db``), and a tracker's run names need not be unique, so its runs are
named ``trackers/mlflow.db — run train [3f9a1c77]``: the file, the run's name and, where
the file does not name the run, the first 8 characters of its id. Two runs never share a
name where the text table tells them apart. Not escaped: each renderer escapes for itself.
"""

from __future__ import annotations

from ..findings import Report


def unshown_run_id(r: Report) -> str:
    """The run id of a report whose file does not name its run (a run of a tracker's
    store, one file for many runs), else ``""``: the outputs add it to tell the runs of
    one file apart."""
    rid = r.meta.get("run_id")
    return rid if isinstance(rid, str) and rid and rid not in r.file else ""


def run_words(r: Report, grouped: bool = False) -> str:
    """How a tracker's run is named after its file: ``run NAME``, with the first 8
    characters of its id when the file does not name it (a store holds many runs and a
    tracker's run names need not be unique: ``[3f9a1c77]``), and its experiment when no
    group header above it names that (``grouped``); ``""`` for a log of one unnamed run."""
    name = r.meta.get("run")
    if not name:
        return ""
    words = f"run {name}"
    rid = unshown_run_id(r)
    if rid and rid != name:
        words += f" [{rid[:8]}]"
    exp = r.meta.get("experiment")
    if not grouped and isinstance(exp, str) and exp and exp not in r.file:
        words += f" in {exp}"
    return words


def run_name(r: Report) -> str:
    """The run's name in every output: its file, then ``— run NAME [id]`` for a tracker's
    run (:func:`run_words`); what the text table's row shows outside a group."""
    words = run_words(r)
    return f"{r.file} — {words}" if words else r.file


def location_words(r: Report, line: int) -> str:
    """Where a finding is in the run's source: ``line N`` in a text log, ``record N`` in a
    database or a binary log (:func:`trainproof.findings.is_line_format`)."""
    from ..findings import is_line_format

    return f"{'line' if is_line_format(r.format) else 'record'} {line}"
