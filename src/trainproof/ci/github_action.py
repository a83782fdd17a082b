"""The GitHub Action's script: ``python -m trainproof.ci.github_action``.

``action.yml`` (the repository root) installs trainproof from the action's own checkout
and runs this module, ``python -I -m trainproof.ci.github_action``, with every input as an
environment variable ``INPUT_<NAME>`` (upper case, ``-`` as ``_``): the step's ``env:``
carries them, so no input is ever part of a shell script. The step runs in the checked-out
repository, which a pull request writes: isolated mode (``-I``) keeps that folder off
``sys.path``, and the doctor child runs isolated too (:func:`python_flags`), so a planted
``trainproof/`` package there is never imported. The module

1. reads and checks the inputs (:func:`read_inputs`; a bad one: one line, exit 2);
2. runs ``trainproof doctor`` once, as a child process of this interpreter, with
   ``--json`` into a temporary file and ``--sarif`` / ``--html`` to the files asked for
   (:func:`doctor_command`, :func:`run_doctor`);
3. prints the runs that did not pass and the totals, sets the step outputs in
   ``$GITHUB_OUTPUT`` (printed as ``name=value`` lines when it is not set) and appends a
   table to ``$GITHUB_STEP_SUMMARY`` when it is set;
4. exits by the ``fail-on`` policy (:func:`decide`).

Names in the logs (files, runs, metrics, trackers) are an outsider's text, and the runner
reads workflow commands in a step's output: ``::name::`` at a line's start (after blanks)
and ``##[name]`` anywhere in a line. Every line this module prints, doctor's messages
included (read from its stderr and printed again), passes :func:`log_line`, so no name
can form one; and the whole output is framed by ``::stop-commands::<random token>``, so
that nothing printed in between (a traceback too) is read as a command. Credentials are
masked in everything written (:func:`trainproof.redact.mask`).

It knows doctor only by its command line and its published ``--json`` document.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

#: The inputs this script reads and their defaults, as ``action.yml`` declares them (the
#: action's other inputs, ``python-version``, ``upload-sarif`` and ``sarif-category``, are
#: used by its own steps). tests/ci/test_github_action.py checks the two against each other.
INPUTS: dict[str, str] = {
    "path": ".",
    "baseline": "",
    "mute": "",
    "fail-on": "FAIL",
    "allow-empty": "false",
    "config": "",
    "args": "",
    "sarif-file": "trainproof.sarif",
    "html-file": "trainproof.html",
}

#: ``fail-on`` values: the verdict that fails the step (``never``: only "could not judge").
FAIL_ON = ("FAIL", "WARN", "never")

#: The step outputs this script sets, in the order it writes them.
OUTPUTS = (
    "verdict",
    "fail-count",
    "warn-count",
    "pass-count",
    "not-checked-count",
    "runs",
    "exit-code",
    "sarif",
    "html",
)

#: doctor options this script sets itself from the inputs; ``args`` may not repeat them.
_OWNED = ("--json", "--sarif", "--html", "--baseline", "--mute", "--config", "--allow-empty", "--fail-on")

_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")
_SEVERITY = {"FAIL": 3, "WARN": 2, "NOT-CHECKED": 1, "PASS": 0}
#: Runs listed in the log and in the job summary at most (the HTML report has them all).
MAX_LISTED = 50


class InputError(ValueError):
    """An input the action cannot use; its message is one line naming the input."""


@dataclass(frozen=True)
class Settings:
    """The checked inputs.

    Attributes:
        paths: the PATHs for doctor (``path``: one per line; default ``.``).
        baseline: ``--baseline`` run, or ``None``.
        mute: rule ids for ``--mute`` (``mute``: separated by commas, spaces or lines).
        fail_on: one of :data:`FAIL_ON`.
        allow_empty: pass ``--allow-empty`` (no training log found is then a pass).
        config: ``--config`` file, or ``None``.
        extra: further doctor arguments (``args``, split as a POSIX shell would).
        sarif: where ``--sarif`` writes, or ``None`` (``sarif-file`` empty).
        html: where ``--html`` writes, or ``None`` (``html-file`` empty).
    """

    paths: tuple[str, ...]
    baseline: str | None
    mute: tuple[str, ...]
    fail_on: str
    allow_empty: bool
    config: str | None
    extra: tuple[str, ...]
    sarif: str | None
    html: str | None


def env_name(name: str) -> str:
    """The environment variable that carries input ``name``: ``fail-on`` -> ``INPUT_FAIL_ON``."""
    return "INPUT_" + name.upper().replace("-", "_").replace(" ", "_")


def _get(environ: Mapping[str, str], name: str, blank_is_default: bool = False) -> str:
    """Input ``name``: its default when the variable is unset (and, with
    ``blank_is_default``, when it is blank); else its value, stripped. action.yml always
    sets every variable, to the default unless the workflow gives a value, so a blank one
    was asked for (``sarif-file: ""``: no SARIF)."""
    value = environ.get(env_name(name))
    if value is None or (blank_is_default and not value.strip()):
        value = INPUTS[name]
    return value.strip()


def _bool(environ: Mapping[str, str], name: str) -> bool:
    value = _get(environ, name, blank_is_default=True).lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise InputError(f"input {name}: {value!r} is not a boolean; use true or false")


def read_inputs(environ: Mapping[str, str]) -> Settings:
    """Read the action's inputs from ``environ`` (``INPUT_*`` variables, see :func:`env_name`).

    An unset variable takes the default in :data:`INPUTS`; a blank ``fail-on`` or
    ``allow-empty`` too, a blank ``path`` is ``.``, a blank ``sarif-file`` or ``html-file``
    writes no such file.

    Returns:
        the :class:`Settings`.

    Raises:
        InputError: ``fail-on`` not one of FAIL, WARN, never (any case); ``allow-empty``
            not a boolean; ``args`` not splittable (an unclosed quote) or repeating an
            option this script sets from an input; ``sarif-file`` and ``html-file`` the
            same file.
    """
    fail_on = _get(environ, "fail-on", blank_is_default=True)
    canon = {v.lower(): v for v in FAIL_ON}.get(fail_on.lower())
    if canon is None:
        raise InputError(f"input fail-on: {fail_on!r} is not one of {', '.join(FAIL_ON)}")
    allow_empty = _bool(environ, "allow-empty")
    paths = tuple(line.strip() for line in _get(environ, "path").splitlines() if line.strip()) or (".",)
    mute = tuple(part for part in _get(environ, "mute").replace(",", " ").split() if part)
    try:
        extra = tuple(shlex.split(_get(environ, "args")))
    except ValueError as e:
        raise InputError(f"input args: cannot split it as a shell would: {e}") from None
    for arg in extra:
        option = arg.split("=", 1)[0]
        if option in _OWNED:
            raise InputError(f"input args: {option} is set by the action; use its input ({_input_for(option)}) instead")
    sarif = _get(environ, "sarif-file") or None
    html = _get(environ, "html-file") or None
    if sarif is not None and html is not None and os.path.abspath(sarif) == os.path.abspath(html):
        raise InputError(f"inputs sarif-file and html-file name the same file: {sarif!r}")
    return Settings(
        paths=paths,
        baseline=_get(environ, "baseline") or None,
        mute=mute,
        fail_on=canon,
        allow_empty=allow_empty,
        config=_get(environ, "config") or None,
        extra=extra,
        sarif=sarif,
        html=html,
    )


def _input_for(option: str) -> str:
    return {
        "--json": "none: the action reads doctor's JSON itself",
        "--sarif": "sarif-file",
        "--html": "html-file",
        "--allow-empty": "allow-empty",
        "--fail-on": "fail-on",
    }.get(option, option[2:])


def doctor_command(settings: Settings) -> list[str]:
    """doctor's arguments for ``settings``, after ``trainproof``.

    The options come first (``--json`` the first of them), then ``args``, then ``--`` and
    the PATHs, so that a PATH that begins with ``-`` is still a path.

    Returns:
        the argument list, e.g. ``["doctor", "--json", "--sarif", "trainproof.sarif", "--", "."]``.
    """
    argv = ["doctor", "--json"]
    if settings.baseline is not None:
        argv += ["--baseline", settings.baseline]
    for rule_id in settings.mute:
        argv += ["--mute", rule_id]
    if settings.config is not None:
        argv += ["--config", settings.config]
    if settings.allow_empty:
        argv.append("--allow-empty")
    if settings.sarif is not None:
        argv += ["--sarif", settings.sarif]
    if settings.html is not None:
        argv += ["--html", settings.html]
    return [*argv, *settings.extra, "--", *settings.paths]


def python_flags() -> list[str]:
    """The interpreter options of the doctor child, which runs in the checked-out
    repository: ``-I`` when this script runs isolated (as ``action.yml`` runs it), else
    ``-P`` (Python 3.11+: the working directory is not put on ``sys.path``, while
    ``PYTHONPATH`` still counts), so that ``python -m trainproof`` never imports a
    ``trainproof/`` package planted at the repository's root."""
    if sys.flags.isolated:
        return ["-I"]
    return ["-P"] if sys.version_info >= (3, 11) else []


#: The longest piece of doctor's stderr read as one line (a longer line is printed in pieces).
_MAX_LINE = 1 << 16


def run_doctor(argv: list[str], json_path: Path) -> int:
    """Run ``python -m trainproof`` with ``argv`` (:func:`doctor_command`) and the options of
    :func:`python_flags`, its standard output into ``json_path``; its standard error (where
    it says which files it wrote and why a log could not be judged) is read line by line
    and printed on this script's standard error through :func:`log_line`.

    Returns:
        doctor's exit code.

    Raises:
        OSError: ``json_path`` cannot be written.
    """
    # -X utf8: the child writes its document and messages in UTF-8, as they are read here,
    # whatever the runner's locale (a Windows runner's would be a legacy code page).
    with open(json_path, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, *python_flags(), "-X", "utf8", "-m", "trainproof", *argv],
            stdout=out,
            stderr=subprocess.PIPE,
        )
        with proc:
            for raw in iter(lambda: proc.stderr.readline(_MAX_LINE), b""):
                text = raw.decode("utf-8", errors="backslashreplace").rstrip("\r\n")
                print(log_line(_printable(text)), file=sys.stderr, flush=True)
        return proc.returncode


def load_document(json_path: Path) -> dict | None:
    """doctor's ``--json`` document from ``json_path``, or ``None`` when there is none to
    read (doctor ended before writing it, or wrote something else)."""
    try:
        doc = json.loads(Path(json_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("reports"), list) else None


def count_verdicts(doc: dict | None) -> dict[str, int]:
    """Runs per verdict in doctor's document (``None``: all zero).

    Returns:
        ``{"FAIL": n, "WARN": n, "PASS": n, "NOT-CHECKED": n}``; a report of a verdict the
        schema does not list (a later minor version) counts as NOT-CHECKED.
    """
    counts = dict.fromkeys(("FAIL", "WARN", "PASS", "NOT-CHECKED"), 0)
    for rep in (doc or {}).get("reports", ()):
        verdict = rep.get("verdict") if isinstance(rep, dict) else None
        counts[verdict if verdict in counts else "NOT-CHECKED"] += 1
    return counts


def decide(fail_on: str, doctor_code: int, doc: dict | None) -> int:
    """The step's exit code.

    Args:
        fail_on: one of :data:`FAIL_ON`.
        doctor_code: doctor's exit code.
        doc: doctor's ``--json`` document, or ``None`` when it wrote none.

    Returns:
        ``FAIL``: 1 when a run FAILs; ``WARN``: 1 when a run FAILs or WARNs; else (and
        always for ``never``) 2 when doctor could not judge (no document, an error, a
        run not judged, doctor's exit code 2), else 0.
    """
    if doc is None:
        return 2
    counts = count_verdicts(doc)
    if fail_on == "FAIL" and counts["FAIL"]:
        return 1
    if fail_on == "WARN" and (counts["FAIL"] or counts["WARN"]):
        return 1
    if doctor_code not in (0, 1) or counts["NOT-CHECKED"] or doc.get("error"):
        return 2
    return 0


def outputs(doc: dict | None, doctor_code: int, settings: Settings | None) -> dict[str, str]:
    """The step outputs (:data:`OUTPUTS`), all strings.

    ``verdict`` is the document's ``worst_verdict`` (FAIL, WARN, NOT-CHECKED or PASS), or
    ``none`` when no run was judged or there is no document; ``exit-code`` is doctor's
    (2 when it did not run); ``sarif`` and ``html`` are the files written, or empty.
    """
    counts = count_verdicts(doc)
    worst = (doc or {}).get("worst_verdict")

    def written(path: str | None) -> str:
        return path if path is not None and os.path.isfile(path) else ""

    return {
        "verdict": worst if isinstance(worst, str) and worst else "none",
        "fail-count": str(counts["FAIL"]),
        "warn-count": str(counts["WARN"]),
        "pass-count": str(counts["PASS"]),
        "not-checked-count": str(counts["NOT-CHECKED"]),
        "runs": str(sum(counts.values())),
        "exit-code": str(doctor_code),
        "sarif": written(settings.sarif if settings else None),
        "html": written(settings.html if settings else None),
    }


def format_outputs(values: Mapping[str, str]) -> str:
    """``values`` in ``$GITHUB_OUTPUT``'s multi-line form: ``name<<DELIM``, the value,
    ``DELIM``, with a random delimiter that the value does not contain (a value cannot end
    early and set another output)."""
    out = []
    for name, value in values.items():
        delim = "ghadelimiter_" + secrets.token_hex(16)
        while delim in value:
            delim = "ghadelimiter_" + secrets.token_hex(16)
        out.append(f"{name}<<{delim}\n{value}\n{delim}\n")
    return "".join(out)


def _printable(text) -> str:
    """``text`` as one line of the step's log or summary: credentials masked, control
    characters escaped, and no ``##[`` (the runner reads it as a command anywhere in a line:
    written ``#\\x23[``)."""
    from ..redact import mask
    from ..render.text import printable

    return printable(mask(str(text))).replace("##[", "#\\x23[")


def log_line(line: str) -> str:
    """``line`` (built from :func:`_printable` pieces) as the runner must see it: one that
    would start with ``::`` after its leading blanks (a command) has that first ``:``
    written ``\\x3a``."""
    body = line.lstrip()
    if body.startswith("::"):
        at = len(line) - len(body)
        line = line[:at] + "\\x3a" + line[at + 1 :]
    return line


def _not_passed(doc: dict | None) -> list[dict]:
    reports = [r for r in (doc or {}).get("reports", ()) if isinstance(r, dict) and r.get("verdict") != "PASS"]
    return sorted(reports, key=lambda r: -_SEVERITY.get(r.get("verdict"), 1))


def _run_name(rep: dict) -> str:
    """A report's run as every output names it (its ``name``: a store's runs differ), or its file."""
    name = rep.get("name")
    return name if isinstance(name, str) and name else str(rep.get("file", "?"))


def _reasons(rep: dict) -> list[tuple[str, str]]:
    """(id, message) of the findings that make a report's verdict, or its error."""
    found = [
        (f.get("id", ""), f.get("message", ""))
        for f in rep.get("findings", ())
        if isinstance(f, dict) and f.get("level") in ("FAIL", "WARN", "NOT-CHECKED")
    ]
    if not found and rep.get("error"):
        found = [("", rep["error"])]
    return found


def totals(counts: Mapping[str, int]) -> str:
    """``"3 runs: 1 FAIL, 1 WARN, 1 PASS, 0 not judged"`` (doctor's totals line)."""
    n = sum(counts.values())
    return (
        f"{n} run{'' if n == 1 else 's'}: {counts['FAIL']} FAIL, {counts['WARN']} WARN, "
        f"{counts['PASS']} PASS, {counts['NOT-CHECKED']} not judged"
    )


def log_lines(doc: dict | None, code: int, fail_on: str) -> list[str]:
    """What the step prints: each run that did not pass (worst first, at most
    :data:`MAX_LISTED`) with the ids and messages of its findings, then the totals and the
    exit code. Values from the logs pass :func:`_printable` and each line
    :func:`log_line`, so a file name cannot start a new line or form a workflow command
    (``::name::`` at the start, ``##[name]`` anywhere)."""
    if doc is None:
        return [f"trainproof: doctor wrote no report (exit {code}); see its messages above"]
    lines = []
    listed = _not_passed(doc)
    for rep in listed[:MAX_LISTED]:
        lines.append(f"{rep.get('verdict', '?'):<11} {_printable(_run_name(rep))}")
        for rid, message in _reasons(rep):
            lines.append(f"{'':<11}   {_printable(rid) + ': ' if rid else ''}{_printable(message)}")
    if len(listed) > MAX_LISTED:
        lines.append(f"... and {len(listed) - MAX_LISTED} more runs that did not pass (see the HTML report)")
    if doc.get("error"):
        lines.append(f"trainproof: {_printable(doc['error'])}")
    lines.append(
        f"trainproof: {totals(count_verdicts(doc))}; worst verdict {doc.get('worst_verdict') or 'none'}; "
        f"fail-on {fail_on}: exit {code}"
    )
    return [log_line(line) for line in lines]


def _md(text) -> str:
    """``text`` safe in one Markdown table cell: printable, no HTML, no cell breaks."""
    text = _printable(text)
    for ch, rep in (
        ("&", "&amp;"),
        ("<", "&lt;"),
        (">", "&gt;"),
        ("|", "\\|"),
        ("`", "&#96;"),
        ("[", "\\["),
        ("]", "\\]"),
        ("*", "\\*"),
        ("_", "\\_"),
    ):
        text = text.replace(ch, rep)
    return text


def summary_markdown(doc: dict | None, code: int, fail_on: str, values: Mapping[str, str]) -> str:
    """The job summary: the totals, a table of the runs that did not pass (at most
    :data:`MAX_LISTED`), and the report files written."""
    icon = {"FAIL": ":x:", "WARN": ":warning:", "PASS": ":white_check_mark:"}.get(values["verdict"], ":grey_question:")
    out = [f"### {icon} trainproof doctor: {values['verdict']}", ""]
    if doc is None:
        out += [f"doctor wrote no report (exit {values['exit-code']}); see the step's log.", ""]
    else:
        out += [f"{_md(totals(count_verdicts(doc)))}. Step exit code {code} (fail-on {fail_on}).", ""]
        if doc.get("error"):
            out += [f"> {_md(doc['error'])}", ""]
        listed = _not_passed(doc)
        if listed:
            out += ["| verdict | run | findings |", "|---|---|---|"]
            for rep in listed[:MAX_LISTED]:
                why = "; ".join(f"{_md(rid)}: {_md(msg)}" if rid else _md(msg) for rid, msg in _reasons(rep))
                out.append(f"| {_md(rep.get('verdict', '?'))} | {_md(_run_name(rep))} | {why} |")
            if len(listed) > MAX_LISTED:
                out.append(f"\n... and {len(listed) - MAX_LISTED} more.")
            out.append("")
    files = [
        f"{what}: {_md(values[key])}" for key, what in (("sarif", "SARIF"), ("html", "HTML report")) if values[key]
    ]
    if files:
        out += ["Written: " + ", ".join(files) + ".", ""]
    return "\n".join(out) + "\n"


def _append(path: str, text: str) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(text)


def main(environ: Mapping[str, str] | None = None) -> int:
    """Run the action's step: read the inputs, run doctor, print, set outputs, summarise.

    On a GitHub runner (``GITHUB_ACTIONS=true``) the output is framed by
    ``::stop-commands::<token>`` and ``::<token>::`` with a random token: the runner reads
    no workflow command in between, whatever a name in the logs holds.

    Args:
        environ: the environment to read (default ``os.environ``): ``INPUT_*``,
            ``GITHUB_OUTPUT``, ``GITHUB_STEP_SUMMARY``, ``RUNNER_TEMP``, ``GITHUB_ACTIONS``.

    Returns:
        the step's exit code (:func:`decide`; 2 for a bad input, with one line on stderr;
        on a runner, 2 for an internal error, its traceback printed inside the frame).
    """
    environ = os.environ if environ is None else environ
    if environ.get("GITHUB_ACTIONS") != "true":
        return _step(environ)
    token = secrets.token_hex(16)
    print(f"::stop-commands::{token}", flush=True)
    try:
        return _step(environ)
    except Exception:  # noqa: BLE001 - an internal error is exit 2, its traceback inside the frame
        import traceback

        for line in traceback.format_exc().splitlines():
            print(log_line(_printable(line)), file=sys.stderr)
        return 2
    finally:
        sys.stderr.flush()
        print(f"::{token}::", flush=True)


def _step(environ: Mapping[str, str]) -> int:
    """:func:`main`'s work, inside the frame."""
    output_file = environ.get("GITHUB_OUTPUT") or None
    summary_file = environ.get("GITHUB_STEP_SUMMARY") or None
    try:
        settings = read_inputs(environ)
    except InputError as e:
        print(log_line(f"trainproof: {_printable(e)}"), file=sys.stderr)
        values = outputs(None, 2, None)
        if output_file:
            _append(output_file, format_outputs(values))
        return 2
    argv = doctor_command(settings)
    print(log_line("$ trainproof " + _printable(shlex.join(argv))), flush=True)
    tmp = environ.get("RUNNER_TEMP") or None
    fd, name = tempfile.mkstemp(prefix="trainproof-", suffix=".json", dir=tmp)
    os.close(fd)
    try:
        doctor_code = run_doctor(argv, Path(name))
        doc = load_document(Path(name))
    finally:
        os.unlink(name)
    code = decide(settings.fail_on, doctor_code, doc)
    values = outputs(doc, doctor_code, settings)
    for line in log_lines(doc, code, settings.fail_on):
        print(line)
    if output_file:
        _append(output_file, format_outputs(values))
    else:
        for key, value in values.items():
            print(log_line(f"{key}={_printable(value)}"))
    if summary_file:
        _append(summary_file, summary_markdown(doc, code, settings.fail_on, values))
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
