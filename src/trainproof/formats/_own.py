"""trainproof's own output: a report it printed or wrote, which is never a training log.

A saved report names steps, losses and numbers (``loss 3.21 at step 120``), so the console
reader would take it for a capture of a run, and ``trainproof doctor . > report.txt``
followed by ``trainproof doctor .`` would judge the report as one more run. The readers'
sniffing asks :func:`own_output` first (:func:`trainproof.formats.detect`), which
recognises, from the start of the file:

* the text output: a ``trainproof doctor`` / ``trainproof compare`` table's title, or a
  report's opening (its file, then ``  format <name>, <n> records`` with a ``  verdict:``
  line after it, or ``  <VERDICT> could not read: …``);
* the ``--json`` document (``schema_version`` and ``trainproof_version``);
* the SARIF log (its ``$schema`` names SARIF and its tool is ``trainproof``);
* the HTML report (an HTML document that names trainproof);
* the in-loop monitor's alerts (``trainproof: FAIL at step …``) and ``trainproof watch``'s
  poll lines (``12:00:00 records=40 verdict=PASS``), text or ``--json``;
* ``doctor``'s closing lines alone (``--quiet`` or ``--only`` with no row to show):
  ``3 runs: 1 FAIL, 0 WARN, 2 PASS, 0 not judged``.

A report saved with colour (``FORCE_COLOR``, a terminal capture) is recognised the same:
terminal escape sequences are removed before looking.

Only the start of the file decides: a capture of a run that ends with the monitor's
printout is a training log (the console reader skips trainproof's own lines in it).
"""

from __future__ import annotations

import re

#: How many non-blank lines at the start of a file may come before a report's opening line
#: (a long file name wraps over several lines of a narrow terminal).
_OPENING_LINES = 4

_TITLE = re.compile(r"^trainproof (?:doctor|compare|watch)\b")
_ALERT = re.compile(r"^trainproof(?: \(rank \d+\))?: ")
_POLL = re.compile(r"^\d{2}:\d{2}:\d{2} records=\d+ verdict=\S+")
_FORMAT_LINE = re.compile(r"^  format [\w.-]+, [\d,]+ records(?:, steps |$)")
_VERDICT_LINE = re.compile(r"^  verdict: (?:PASS|WARN|FAIL|NOT-CHECKED)\s*$", re.M)
_UNREAD_LINE = re.compile(r"^  (?:PASS|WARN|FAIL|NOT-CHECKED) could not read: ")
_SARIF = re.compile(r'"\$schema"\s*:\s*"[^"]*sarif[^"]*"', re.I)
_SARIF_TOOL = re.compile(r'"name"\s*:\s*"trainproof"')
_TOTALS = re.compile(r"^\d+ runs?: \d+ FAIL, \d+ WARN, \d+ PASS, \d+ not judged$")
_IGNORED = re.compile(r"^\d+ file\(s\) looked at are not training logs ")
#: A terminal escape sequence (CSI such as colours, or OSC such as hyperlinks).
_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?)")
_POLL_JSON = re.compile(r'^\{"time": [^,]*, "records": \d+, "new_records": \d+, "verdict": ')

#: What each kind is called in the reason a file is not read.
KINDS = {
    "text": "a trainproof report (its text output)",
    "json": "a trainproof report (its --json output)",
    "sarif": "a trainproof SARIF report",
    "html": "a trainproof HTML report",
    "monitor": "trainproof's own printout (the in-loop monitor's alerts)",
    "watch": "trainproof's own printout (trainproof watch's polls)",
}


def own_output(text: str) -> str | None:
    """Which of trainproof's outputs ``text`` starts, or ``None`` for anything else.

    Args:
        text: the start of a file, decoded (:func:`trainproof.formats.head_text`).

    Returns:
        a key of :data:`KINDS` (``"text"``, ``"json"``, ``"sarif"``, ``"html"``,
        ``"monitor"``, ``"watch"``), or ``None``.
    """
    if "\x1b" in text:
        text = _ESCAPE.sub("", text)
    start = text.lstrip("\ufeff \t\r\n")
    if start.startswith("{"):
        window = start[:4096]
        if _POLL_JSON.match(start):
            return "watch"
        if _SARIF.search(window) and _SARIF_TOOL.search(window):
            return "sarif"
        if '"schema_version"' in start[:1024] and '"trainproof_version"' in start[:1024]:
            return "json"
        return None
    low = start[:1024].lower()
    if low.startswith(("<!doctype html", "<html")):
        return "html" if "trainproof" in low or "trainproof" in start[:16384].lower() else None
    lines = [ln for ln in start.splitlines()[:64] if ln.strip()]
    if not lines:
        return None
    first = lines[0].strip()
    if _TITLE.match(first):
        return "text"
    if _ALERT.match(first):
        return "monitor"
    if _POLL.match(first):
        return "watch"
    if _IGNORED.match(first) or (len(lines) == 1 and _TOTALS.match(first)):
        return "text"
    for i, ln in enumerate(lines[1 : _OPENING_LINES + 1], start=1):
        if _UNREAD_LINE.match(ln):
            return "text"
        if _FORMAT_LINE.match(ln):
            return "text" if _VERDICT_LINE.search("\n".join(lines[i + 1 : i + 8])) else None
    return None
