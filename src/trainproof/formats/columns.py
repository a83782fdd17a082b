"""A JSON document of metric columns: Keras' ``History.history`` saved with ``json.dump``
(``{"loss": [0.69, 0.52, …], "val_loss": […], "learning_rate": […]}``), and a pandas
``DataFrame.to_json()`` of such a history in its default layout
(``{"loss": {"0": 0.69, "1": 0.52, …}, …}``).

The n-th value of every column is one record. Keras writes one value per epoch and no
step, so a record's step is its position (1, 2, …) and a note says that the steps are the
positions of the lists, epochs of a Keras history. Each row's values are read as a JSON
lines record's are (:func:`~trainproof.formats._values.flatten_numeric`): a ``null`` is a
hole, a value that is no number is absent.

TensorBoard's download of one scalar chart as JSON (``[[wall time, step, value], …]``, the
metric named by the file, ``run-<run>-tag-<tag>.json``) is read here too, and so is a JSON
array of record objects, one record per object in order: Chainer's
``LogReport`` file (``result/log``: ``[{"main/loss": 2.3, "epoch": 1, "iteration": 100,
…}, …]``), pandas' ``to_json(orient="records")``, a hand-rolled ``json.dump`` of a list of
dicts. Its step is the step key the objects hold (``iteration``), else the position.

What the format is not, so that a folder's other JSON files are not taken for a log: a
document whose columns differ in length, one with no column that names a loss (a model
config with list-valued fields, a tokenizer's vocabulary), and one larger than
:data:`MAX_BYTES` (a history of epochs is kilobytes; the document must be read whole).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from .. import aliases
from ..runlog import Record
from ._io import NotALog, read_json_document
from ._values import as_step, flatten_numeric

name = "columns"
description = (
    "JSON object of metric columns (Keras History.history via json.dump, pandas DataFrame.to_json), "
    "or a JSON array of record objects (Chainer's LogReport), or TensorBoard's JSON download of one chart"
)
#: Names only its writer uses: none (people name the file themselves).
file_names = ()
#: Suffixes its logs have.
suffixes = (".json",)
run_suffixes = ()
#: How ``watch`` follows it: a document rewritten whole.
tail_mode = "whole"
#: Where it stands among one run's logs in several formats: after the trainers' own logs.
preference = 5
#: A finding's line is a record's position, not a line of the file.
line_anchors = False


def log_name(name: str) -> bool:
    """``doctor``'s walk also looks at a file named ``log`` with no extension: the name
    Chainer's ``LogReport`` gives its JSON array of records (``result/log``)."""
    return name == "log"


#: The largest document read (bytes): a Keras history of 100,000 epochs and ten metrics is
#: about 20 MB; the document is parsed whole, so the cap bounds the memory it takes.
MAX_BYTES = 64 << 20

#: The start of such a document: an object whose first value is a list, or a pandas
#: column (an object keyed by the row index, ``"0"`` first).
_START = re.compile(
    r'\A\s*(?:\{\s*"(?:[^"\\]|\\.)*"\s*:\s*(?:\[|\{\s*"0"\s*:)|\[\s*\{\s*"[^"\n]{1,200}"\s*:'
    r"|\[\s*\[\s*\d[\d.eE+-]*\s*,\s*\d+(?:\.0)?\s*,)"
)

STEPS_NOTE = "steps are the positions in the lists (epochs of a Keras history), not training steps"
RECORDS_NOTE = "steps are the positions of the records in the array (no step key), not training steps"


def sniff(path: Path, head: str) -> bool:
    """The head opens an object whose first value is a list or a pandas column, and is no
    Jupyter notebook (whose ``cells`` list is the notebook reader's)."""
    if path.suffix.lower() == ".ipynb" or '"cell_type"' in head:
        return False
    return bool(_START.match(head))


def _column(value) -> list | None:
    """A column's values in row order (``None`` where null), or ``None`` when ``value`` is
    no column: a list, or a dict keyed by the row indices ``"0"``, ``"1"``, … in order."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict) and value:
        keys = list(value)
        if keys != [str(i) for i in range(len(keys))]:
            return None
        return list(value.values())
    return None


def read(path: Path, state) -> Iterator[Record]:
    """The records of the document, one per position of its columns.

    Raises:
        ReadError: the file cannot be opened or is larger than :data:`MAX_BYTES`.
        NotALog: the document is no JSON object of equal-length columns, or no column
            names a loss (a config with list-valued fields): not a log, as for a file no
            reader sniffs.
    """
    doc = read_json_document(path, MAX_BYTES, "a JSON document of columns")
    if isinstance(doc, list):
        if _is_tensorboard_export(doc):
            yield from _tensorboard_export(doc, path)
        else:
            yield from _records(doc, state)
        return
    if not isinstance(doc, dict) or not doc:
        raise NotALog("not a JSON object of metric columns")
    columns: dict[str, list] = {}
    for key, value in doc.items():
        col = _column(value)
        if col is None:
            raise NotALog(f"not a JSON object of metric columns: {key!r} is no list")
        columns[str(key)] = col
    lengths = {len(c) for c in columns.values()}
    if len(lengths) != 1:
        raise NotALog("not a JSON object of metric columns: the columns differ in length")
    if not any(aliases.loss_candidate(k) is not None for k in columns):
        raise NotALog("not a JSON object of metric columns: no column names a loss")
    n = lengths.pop()
    yield from _stepped(
        (_row({key: col[i] for key, col in columns.items()}) for i in range(n)),
        aliases.step_key(columns.keys()),
        STEPS_NOTE,
        state,
    )


def _row(row: dict) -> tuple[dict, list[str]]:
    """One row read as a JSON-lines record is (numbers, numeric strings and huge integers
    as floats; null and missing-value words as holes): ``(values, holes)``."""
    holes: list[str] = []
    return flatten_numeric(row, holes=holes), holes


def _stepped(rows, step_key: str | None, note: str, state) -> Iterator[Record]:
    """The records of ``rows`` (``(values, holes)`` in order): stepped by ``step_key``'s
    value, else by position (1, 2, …) with ``note`` written."""
    if step_key is None:
        state.notes.append(note)
    for i, (values, holes) in enumerate(rows):
        step = as_step(values.pop(step_key, None)) if step_key is not None else float(i + 1)
        yield Record(step, values, i + 1, tuple(h for h in holes if h != step_key))


def _tensorboard_export(doc: list, path: Path) -> Iterator[Record]:
    """The records of TensorBoard's download of one scalar chart as JSON, ``[[wall time,
    step, value], …]``: the value named by the file as its CSV download is
    (:func:`~trainproof.formats.csv.tensorboard_export_metric`), the wall time as
    ``Wall time``.

    Raises:
        NotALog: the file's name names no loss (the chart of a learning rate or an
            accuracy alone is no run to judge, as a JSON document of columns is not).
    """
    from .csv import TB_EXPORT_COLUMNS, tensorboard_export_loss

    metric = tensorboard_export_loss(path)
    for i, (wall, st, value) in enumerate(doc):
        values, holes = _row({TB_EXPORT_COLUMNS[0]: wall, metric: value})
        yield Record(as_step(st), values, i + 1, tuple(holes))


def _is_tensorboard_export(doc: list) -> bool:
    return bool(doc) and all(
        isinstance(r, list) and len(r) == 3 and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in r)
        for r in doc
    )


def _records(doc: list, state) -> Iterator[Record]:
    """The records of a JSON array of objects (see the module doc).

    Raises:
        NotALog: an element is no object, or no key of any object names a loss (a list of
            data examples or of settings).
    """
    rows: list[tuple[dict, list[str]]] = []
    keys: dict[str, None] = {}
    for row in doc:
        if not isinstance(row, dict):
            raise NotALog("not a JSON array of record objects: an element is no object")
        rows.append(_row(row))
        keys.update(dict.fromkeys(rows[-1][0]))
    if not any(aliases.loss_candidate(k) is not None for k in keys):
        raise NotALog("not a JSON array of metric records: no key names a loss")
    yield from _stepped(rows, aliases.step_key(keys), RECORDS_NOTE, state)
