"""A Jupyter notebook (``.ipynb``, nbformat 4, and 3's worksheets) whose cells trained a
model: the text its cells printed is read as a console capture (:mod:`.console`).

What a notebook keeps of a training run is its cells' outputs, in order:

- ``stream`` outputs: what the code printed (a plain loop's ``step 20 loss 1.14``, HF
  Trainer's log dicts, Keras' epoch lines);
- ``display_data`` and ``execute_result`` outputs: the table transformers'
  ``NotebookProgressCallback`` draws (and Unsloth's notebooks show) is HTML; each HTML
  table is read as lines of tab-separated cells, which the console reader reads as that
  table's text copied from the page; other outputs are read as their ``text/plain``;
- ``error`` outputs: the traceback, so that a run that crashed, or stopped on a NaN loss,
  says so.

Markdown and code cells are not read (a cell's source that sets ``lr = 0`` is no log), nor
images. A notebook is one JSON document, parsed whole: one larger than :data:`MAX_BYTES`
(a notebook is that large only with many images embedded) is not read. Line numbers in
findings count the lines of the outputs, in order, not the lines of the ``.ipynb`` file.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

from ..runlog import Record
from ._io import NotALog, read_json_document
from .console import read_text

name = "notebook"
description = "Jupyter notebook (.ipynb): the text its cells printed, read as a console capture"
#: Names only its writer uses: none (people name their notebooks).
file_names = ()
#: Suffixes its logs have.
suffixes = (".ipynb",)
run_suffixes = ()
#: How ``watch`` follows it: a document rewritten whole at each save.
tail_mode = "whole"
#: Where it stands among one run's logs in several formats: after the trainers' own logs.
preference = 5
#: A finding's line is a line of the outputs, not of the file.
line_anchors = False

#: The largest notebook read (bytes); the document is parsed whole, so the cap bounds the
#: memory it takes. A notebook of text outputs is kilobytes to a few megabytes.
MAX_BYTES = 64 << 20

#: The start of a notebook as Jupyter, Colab and nbformat write it (keys sorted, so
#: ``cells`` first), under a name that is not ``.ipynb``.
_START = re.compile(r'\A\s*\{\s*"cells"\s*:\s*\[')

LINES_NOTE = "a notebook: its cells' outputs read as a console capture; line numbers count the outputs' lines"


def sniff(path: Path, head: str) -> bool:
    """The head opens a notebook: ``{"cells": …`` (any name), or a JSON object in a file
    named ``.ipynb``."""
    if path.suffix.lower() == ".ipynb":
        return head.lstrip().startswith("{")
    return bool(_START.match(head)) and '"cell_type"' in head


class _Tables(HTMLParser):
    """The rows of the HTML tables in a display output, each as its cells' text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th") and self.rows:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _text(value) -> str:
    """An nbformat multi-line string (a string, or a list of its lines) as one string."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return ""


def _output_text(out: dict) -> str:
    kind = out.get("output_type")
    if kind == "stream":
        return _text(out.get("text"))
    if kind == "error":
        # IPython's traceback heads with ``NameError   Traceback (most recent call last)``:
        # written in Python's own shape, the console reader knows it for a crash.
        frames = [t for t in out.get("traceback") or () if isinstance(t, str)][1:]
        body = "".join("  " + t.replace("\n", "\n  ") + "\n" for t in frames)
        return f"Traceback (most recent call last):\n{body}{out.get('ename', 'Error')}: {out.get('evalue', '')}\n"
    if kind in ("display_data", "execute_result", "pyout"):
        data = out.get("data") if isinstance(out.get("data"), dict) else out
        html = _text(data.get("text/html") or data.get("html"))
        if "<table" in html:
            parser = _Tables()
            parser.feed(html)
            # the progress line above HF's table (``[60/60 00:45, Epoch 0/1]``) stays a line
            return "".join("\t".join(r) + "\n" for r in parser.rows if r)
        return _text(data.get("text/plain") or data.get("text"))
    return ""


def _outputs(doc: dict) -> Iterator[str]:
    cells = doc.get("cells")
    if cells is None and isinstance(doc.get("worksheets"), list):  # nbformat 3
        cells = [c for w in doc["worksheets"] if isinstance(w, dict) for c in w.get("cells") or ()]
    if not isinstance(cells, list):
        raise NotALog("a JSON object with no notebook cells")
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        for out in cell.get("outputs") or ():
            if isinstance(out, dict):
                text = _output_text(out)
                if text:
                    yield text if text.endswith("\n") else text + "\n"


def read(path: Path, state) -> Iterator[Record]:
    """The records of the notebook's outputs, read as :func:`.console.read` reads a capture.

    Raises:
        ReadError: the file cannot be opened or is larger than :data:`MAX_BYTES`.
        NotALog: the file is no JSON notebook, or its outputs hold no training line.
    """
    doc = read_json_document(path, MAX_BYTES, "a notebook")
    if not isinstance(doc, dict):
        raise NotALog("not a notebook: no JSON object")
    text = "".join(_outputs(doc))
    del doc
    records = list(read_text(io.StringIO(text, newline=None), state))
    if not records:
        raise NotALog("a notebook whose outputs hold no training line")
    state.notes.append(LINES_NOTE)
    yield from records
