"""The tracker sources, fuzzed beside other runs: a W&B run folder of an older client
(``files/wandb-history.jsonl`` and ``files/wandb-summary.json``), the SQLite stores of
MLflow (``mlflow.db``) and Trackio, and the answers of an MLflow tracking server's REST
API. Each input sits in a tree beside a diverging ``fail.jsonl`` and a healthy log, and
``doctor`` over the tree must raise nothing, judge the other two runs (FAIL and PASS, exit
code 1) and give the fuzzed source a verdict or a read error with a reason.

Values are drawn from what a hostile writer puts where a number belongs (JSON nested past
the recursion limit, integers of hundreds and thousands of digits, NaN spellings, text,
blobs, nulls, out-of-range times); SQLite edits also change the schema (a column named
``rowid``, a type-less id column, a missing table). Bounded like the reader fuzzing
(``tests/_hypothesis_profiles.py``); ``evidence/atheris_fuzz.py`` has coverage-guided
targets of the same sources.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from _mlflow_server import RUN, T0, Fake
from hypothesis import given
from hypothesis import strategies as st

from trainproof.api import doctor

import _fuzz_logs as F
from _hypothesis_profiles import fuzz_settings

pytestmark = [pytest.mark.fuzz, pytest.mark.slow]

#: JSON text a hostile writer puts where a value belongs.
JSON_TOKENS = (
    "1.5",
    "0",
    "-0.0",
    "NaN",
    "Infinity",
    "-Infinity",
    '"NaN"',
    '"nan"',
    '"1.5"',
    '"tensor(0.53)"',
    "null",
    "true",
    "[]",
    "{}",
    '{"value": 1.0}',
    '{"_type": "histogram", "bins": [1, 2]}',
    "1e999",
    "1" + "0" * 400,
    "-" + "9" * 5000,
    '"' + "9" * 5000 + '"',
    "[" * 5000 + "]" * 5000,
    '{"a": ' * 3000 + "1" + "}" * 3000,
    '"\\u0000"',
    '"\\ud800"',
)

#: SQLite values a hostile writer stores in a cell.
SQL_VALUES = (
    0,
    1,
    -1,
    2**63 - 1,
    -(2**63),
    1.5,
    float("inf"),
    float("-inf"),
    1e308,
    "abc",
    "",
    "1.5",
    "NaN",
    "[" * 5000 + "]" * 5000,
    '{"train/loss": ' + "[" * 3000 + "]" * 3000 + "}",
    '{"train/loss": ' + "9" * 5000 + "}",
    b"\xff\x00\xfe",
    None,
)


def _tree(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, kind in (("fail", "diverge"), ("ok", "healthy")):
        (root / name).mkdir(exist_ok=True)
        (root / name / ("fail.jsonl" if name == "fail" else "metrics.jsonl")).write_bytes(F.jsonl_log(kind))
    return root


def _check(root: Path, *more: str) -> list:
    """``doctor`` over ``root`` (and ``more`` locations): nothing raised, the two plain
    runs judged as they are, every report a verdict or a read error with its reason."""
    reports, _ignored = doctor([root, *more])
    by = {Path(r.file).name: r for r in reports}
    assert by["fail.jsonl"].verdict.value == "FAIL"
    assert by["metrics.jsonl"].verdict.value == "PASS"
    for r in reports:
        assert r.verdict.value != "NOT-CHECKED" or r.error or r.findings
    return reports


# --------------------------------------------------------------------------- W&B


@fuzz_settings(0.05)
@given(
    history=st.lists(
        st.dictionaries(
            st.sampled_from(("_step", "loss", "train/loss", "lr", "_runtime", "nested")),
            st.sampled_from(JSON_TOKENS),
            max_size=4,
        ),
        max_size=12,
    ),
    summary=st.sampled_from(JSON_TOKENS),
    torn=st.booleans(),
)
def test_wandb_history_and_summary(tmp_path_factory, history, summary, torn):
    root = _tree(tmp_path_factory.mktemp("wandb"))
    files = root / "wandb" / "run-20240101_000000-fuzz01" / "files"
    files.mkdir(parents=True)
    good = [{"_step": i, "loss": 2.0 / (1 + i / 30)} for i in range(40)]
    lines = [json.dumps(r) for r in good]
    lines += ["{" + ", ".join(f'"{k}": {v}' for k, v in row.items()) + "}" for row in history]
    text = "\n".join(lines) + ("" if torn else "\n")
    (files / "wandb-history.jsonl").write_text(text)
    (files / "wandb-summary.json").write_text('{"loss": ' + summary + "}")
    _check(root)


# --------------------------------------------------------------------------- SQLite stores

_STORES = {
    "trackio": ("proj.db", F.trackio_db, ("metrics", "configs"), ("id", "run_id", "run_name", "step", "metrics")),
    "mlflow_db": (
        "mlflow.db",
        F.mlflow_db_log,
        ("metrics", "runs", "experiments", "tags"),
        ("key", "value", "step", "run_uuid", "is_nan", "start_time", "name", "lifecycle_stage", "experiment_id"),
    ),
}

_SCHEMA_EDITS = (
    "none",
    "rowid_column",
    "oid_column",
    "untyped_copy",
    "drop_runs",
    "index_on_run",
    "duplicate_rows",
)


def _schema_edit(con: sqlite3.Connection, table: str, edit: str) -> None:
    if edit in ("rowid_column", "oid_column"):
        col = edit.split("_")[0]
        con.execute(f"ALTER TABLE {table} ADD COLUMN {col} TEXT DEFAULT 'x'")
    elif edit == "untyped_copy":
        cols = ", ".join(r[1] for r in con.execute(f"PRAGMA table_info({table})"))
        con.executescript(
            f"CREATE TABLE t2 AS SELECT * FROM {table}; DROP TABLE {table}; CREATE TABLE {table} ({cols}); "
            f"INSERT INTO {table} SELECT * FROM t2; DROP TABLE t2;"
        )
    elif edit == "drop_runs":
        con.execute("DROP TABLE IF EXISTS runs")
    elif edit == "index_on_run":
        col = "run_uuid" if table == "metrics" and "run_uuid" in _columns(con, table) else "run_name"
        if col in _columns(con, table):
            con.execute(f"CREATE INDEX fuzz_ix ON {table} ({col})")
    elif edit == "duplicate_rows":
        cols = [c for c in _columns(con, table) if c != "id"]
        if cols:
            con.execute(f"INSERT INTO {table} ({', '.join(cols)}) SELECT {', '.join(cols)} FROM {table} LIMIT 5")


def _columns(con: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in con.execute(f"PRAGMA table_info({table})")]


@fuzz_settings(0.1)
@given(
    store=st.sampled_from(sorted(_STORES)),
    edit=st.sampled_from(_SCHEMA_EDITS),
    cells=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 8), st.integers(1, 80), st.sampled_from(SQL_VALUES)), max_size=6
    ),
)
def test_sqlite_store(tmp_path_factory, store, edit, cells):
    name, build, tables, columns = _STORES[store]
    root = _tree(tmp_path_factory.mktemp(store))
    p = root / "store" / name
    p.parent.mkdir()
    p.write_bytes(build("healthy"))
    con = sqlite3.connect(p)
    try:
        # The schema edit first: cells then go into the columns as they now are (an
        # untyped copy takes text in an integer column as text).
        _schema_edit(con, tables[0], edit)
        for t, c, row, value in cells:
            table = tables[t % len(tables)]
            cols = _columns(con, table)
            col = columns[c % len(columns)]
            if col in cols:
                try:
                    con.execute(f"UPDATE {table} SET {col} = ? WHERE rowid = ?", (value, row))
                except sqlite3.IntegrityError:
                    pass  # a NOT NULL or unique column refuses it: the writer could not store it
        con.commit()
    finally:
        con.close()
    _check(root)


# --------------------------------------------------------------------------- MLflow REST


def _points(n: int = 40) -> list[dict]:
    return [{"key": "loss", "value": 2.0 / (s + 1) + 0.3, "timestamp": T0 + s, "step": s} for s in range(n)]


#: Where a drawn token goes in the bad run's answers: (endpoint, JSON path).
_PLACES = (
    ("runs/get", ("run", "info", "start_time")),
    ("runs/get", ("run", "info", "run_id")),
    ("runs/get", ("run", "info", "run_name")),
    ("runs/get", ("run", "data", "metrics")),
    ("runs/get", ("run",)),
    ("metrics/get-history", ("metrics", 5, "step")),
    ("metrics/get-history", ("metrics", 5, "value")),
    ("metrics/get-history", ("metrics", 5)),
    ("metrics/get-history", ("metrics",)),
    ("metrics/get-history", ("next_page_token",)),
    ("experiments/get", ("experiment", "name")),
)

_MARK = "__FUZZ_TOKEN__"


def _with_token(doc: dict, path: tuple, token: str) -> bytes:
    """``doc`` as JSON text with the value at ``path`` replaced by the raw JSON ``token``."""
    doc = json.loads(json.dumps(doc))
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = _MARK
    return json.dumps(doc).replace(json.dumps(_MARK), token).encode()


@fuzz_settings(0.05)
@given(place=st.sampled_from(_PLACES), token=st.sampled_from(JSON_TOKENS))
def test_mlflow_rest_answers(clean_env, tmp_path_factory, place, token):  # noqa: F811
    root = _tree(tmp_path_factory.mktemp("rest"))
    endpoint, path = place
    good = json.loads(json.dumps(RUN))
    good["info"].update(run_id="good1", run_name="good")
    bad = json.loads(json.dumps(RUN))
    bad["info"].update(run_id="bad1", run_name="bad")

    def api(fake, url_path, query, body):
        run_id = (query.get("run_id") or [None])[0]
        doc: dict
        if url_path.endswith("/experiments/search"):
            doc = {"experiments": [{"experiment_id": "7", "name": "fuzz-exp"}]}
        elif url_path.endswith("/runs/search"):
            doc = {"runs": [good, bad]}
        elif url_path.endswith("/runs/get"):
            doc = {"run": good if run_id == "good1" else bad}
        elif url_path.endswith("/experiments/get"):
            doc = {"experiment": {"experiment_id": "7", "name": "fuzz-exp"}}
        elif url_path.endswith("/metrics/get-history"):
            doc = {"metrics": _points()}
        else:
            return 404, "application/json", b"{}"
        if url_path.endswith(endpoint) and (run_id == "bad1" or endpoint == "experiments/get"):
            return 200, "application/json", _with_token(doc, path, token)
        return 200, "application/json", json.dumps(doc).encode()

    with Fake(api) as fake:
        reports = _check(root, fake.url)
    assert any(r.meta.get("run") == "good" and r.verdict.value == "PASS" for r in reports) or endpoint == (
        "experiments/get"
    )
