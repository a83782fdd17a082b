"""The optional columnar path (polars, :mod:`trainproof.formats._columnar`) gives exactly
the RunLog of the pure path on every input: the shared corpus, the examples, the fuzz
corpus's seeds and mutations, and hand-made edge cases; and it is really taken on the
plain logs it is for. Skipped where polars is not installed."""

from __future__ import annotations

import csv as _csv_mod
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainproof.api import read_runlog
from trainproof.formats import ReadError, _columnar, csv, jsonl

import _fuzz_logs as F
from conftest import REPO

pytest.importorskip("polars")

#: Importing polars alone costs about 0.3 s of CPU: every test here is in the slow set.
pytestmark = pytest.mark.slow


def _read(path: Path, mode: str, monkeypatch):
    """``read_runlog(path)`` with the columnar path off (``"0"``) or taken at any size
    (``"1"``): the RunLog, or the ReadError's type and text."""
    monkeypatch.setenv(_columnar.ENV, mode)
    try:
        return read_runlog(path)
    except ReadError as e:
        return (type(e).__name__, str(e))


def _same(a, b) -> None:
    if isinstance(a, tuple) or isinstance(b, tuple):
        assert a == b
        return
    assert (a.format, a.records, a.notes, a.meta, a.step_range, a.explicit_steps, a.mapping) == (
        b.format,
        b.records,
        b.notes,
        b.meta,
        b.step_range,
        b.explicit_steps,
        b.mapping,
    )
    assert list(a.series) == list(b.series)
    for name, s in a.series.items():
        t = b.series[name]
        assert s.key == t.key
        assert s.steps.tobytes() == t.steps.tobytes(), name
        assert s.lines.tobytes() == t.lines.tobytes(), name
        assert s.values.tobytes() == t.values.tobytes(), name  # NaN and -0.0 included


def _both(path: Path, monkeypatch) -> None:
    _same(_read(path, "0", monkeypatch), _read(path, "1", monkeypatch))


def _taken(path: Path) -> bool:
    return _columnar.jsonl_batches(path, jsonl._step_key) is not None


def _corpus_files(fmt: str) -> list[Path]:
    shared = REPO.parent / "shared" / "corpus"
    manifest = shared / "MANIFEST.tsv"
    if not manifest.exists():
        return []
    with manifest.open(newline="") as f:
        return [shared / r["file"] for r in _csv_mod.DictReader(f, delimiter="\t") if r["format"] == fmt]


def test_a_plain_log_takes_the_columnar_path(tmp_path, monkeypatch):
    p = tmp_path / "metrics.jsonl"
    rows = [{"step": i, "loss": 1 / (i + 1), "lr": 1e-3, "grad_norm": -0.0 if i == 3 else 2.0**-i} for i in range(500)]
    rows[250:250] = [{"step": 250, "eval_loss": 0.25}, {}, {"step": 251}]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert _taken(p)
    _both(p, monkeypatch)


@pytest.mark.parametrize(
    "text",
    [
        '{"step": 1, "loss": null}\n',  # a hole
        '{"step": 1, "loss": NaN}\n',  # a non-finite token
        '{"step": 1, "loss": 1e400}\n',  # beyond a float
        '{"step": 1, "loss": "0.5"}\n',  # a string number
        '{"step": 1, "loss": 0.5, "ok": true}\n',  # a boolean
        '{"step": 1, "m": {"loss": 0.5}}\n',  # nested
        '{"step": 1, "loss": 1, "loss": 2}\n',  # a repeated key
        '{"step": 1, "a:b": 1}\n',  # a colon in a key
        '{"step": 1, "loss": 1}\n\n{"step": 2, "loss": 2}\n',  # a blank line
        '{"step": 1, "loss": 1}\r\n{"step": 2, "loss": 2}\r\n',  # CRLF
        '{"step": 1, "loss": 1}\nbanner\n',  # not an object
        '{"step": 1, "loss": 1}\n{"step": 2, "loss": 0.',  # a torn last line
        '{"st\\u0065p": 1, "loss": 1}\n',  # an escape
        '{"step": 1, "lo\u00df": 1}\n',  # not ASCII
        "\ufeff" + '{"step": 1, "loss": 1}\n',  # a byte-order mark
    ],
)
def test_what_the_columnar_path_refuses_goes_to_the_pure_path(tmp_path, monkeypatch, text):
    p = tmp_path / "metrics.jsonl"
    p.write_bytes(("".join(json.dumps({"step": i, "loss": 1.0}) + "\n" for i in range(5)) + text).encode())
    assert not _taken(p)
    _both(p, monkeypatch)


def test_a_key_first_seen_in_a_later_chunk_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(_columnar, "CHUNK", 64)
    p = tmp_path / "metrics.jsonl"
    rows = [{"step": i, "loss": 1.0 / (i + 1)} for i in range(40)] + [{"step": 40, "eval_loss": 7}]
    rows += [{"step": 41 + i, "loss": 0.1, "eval_loss": 2**60 + i} for i in range(5)]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert _taken(p)
    _both(p, monkeypatch)


def test_the_size_threshold_and_the_switch(tmp_path, monkeypatch):
    p = tmp_path / "metrics.jsonl"
    p.write_text('{"step": 1, "loss": 1}\n')
    monkeypatch.delenv(_columnar.ENV, raising=False)
    assert not _columnar.wanted(p, _columnar.JSONL_MIN_BYTES)  # small: the pure path, no polars import
    assert not _columnar.wanted(p, _columnar.TABLE_MIN_BYTES)
    assert _columnar.wanted(p, 1)
    monkeypatch.setenv(_columnar.ENV, "0")
    assert not _columnar.wanted(p, 1)
    monkeypatch.setenv(_columnar.ENV, "1")
    assert _columnar.wanted(p, 1 << 40)


@pytest.mark.parametrize("path", _corpus_files("jsonl"), ids=lambda p: p.parent.name)
def test_corpus_jsonl_logs_read_the_same(path, monkeypatch):
    _both(path, monkeypatch)


@pytest.mark.parametrize("path", sorted((REPO / "examples").rglob("*.jsonl")), ids=lambda p: str(p.relative_to(REPO)))
def test_example_jsonl_logs_read_the_same(path, monkeypatch):
    _both(path, monkeypatch)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(F.KINDS), plan=F.plans(), data=st.data())
def test_fuzz_jsonl_inputs_read_the_same(tmp_path, monkeypatch, kind, plan, data):
    blob = F.apply_plan(F.valid("jsonl", kind), plan)
    p = tmp_path / "metrics.jsonl"
    p.write_bytes(blob)
    _both(p, monkeypatch)


_number = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(min_value=-1e-300, max_value=1e-300),
    st.floats(allow_nan=True, allow_infinity=True),
)
_key = st.sampled_from(["step", "loss", "lr", "grad_norm", "eval_loss", "Step", "global_step", "epoch", "x"])
_value = st.one_of(_number, _number, _number, _number, st.booleans(), st.none(), st.text(max_size=3))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(st.dictionaries(_key, _value, max_size=5), max_size=60),
    chunk=st.sampled_from([16, 64, 1 << 20]),
    final_newline=st.booleans(),
)
def test_generated_jsonl_logs_read_the_same(tmp_path, monkeypatch, rows, chunk, final_newline):
    monkeypatch.setattr(_columnar, "CHUNK", chunk)
    p = tmp_path / "metrics.jsonl"
    text = "\n".join(json.dumps(r) for r in rows) + ("\n" if final_newline else "")
    p.write_text(text)
    _both(p, monkeypatch)


def test_numbers_parse_as_python_parses_them(tmp_path, monkeypatch):
    xs = [0.1, 1 / 3, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 9007199254740993, -(2**63), 2**63 - 1]
    xs += [2**64, 2**64 + 1, -(2**70) - 1, 10**30]  # beyond 64 bits: the float it rounds to, as float() gives
    xs += [math.pi * 10.0**e for e in range(-300, 300, 7)]
    p = tmp_path / "metrics.jsonl"
    p.write_text("".join(json.dumps({"step": i, "loss": x}) + "\n" for i, x in enumerate(xs)))
    assert _taken(p)
    monkeypatch.setenv(_columnar.ENV, "1")
    got = read_runlog(p).series["loss"].values
    assert got.tobytes() == np.array([float(x) for x in xs]).tobytes()


_plain = st.one_of(st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False, allow_infinity=False))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(st.dictionaries(_key, _plain, max_size=5), min_size=1, max_size=60),
    chunk=st.sampled_from([16, 1 << 20]),
)
def test_generated_plain_logs_take_the_columnar_path(tmp_path, monkeypatch, rows, chunk):
    monkeypatch.setattr(_columnar, "CHUNK", chunk)
    p = tmp_path / "metrics.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert _taken(p)
    _both(p, monkeypatch)


# CSV and TSV tables


def _table_read(path: Path) -> tuple[_columnar.TableRead, int]:
    """The columnar read of a table, run through, and the rows it gave out."""
    tr = _columnar.TableRead(path, lambda line: csv._plain_header(line, []))
    return tr, sum(len(v) for v, _, _ in tr)


def _table_taken(path: Path) -> bool:
    tr, _ = _table_read(path)
    return tr.started and tr.rest is None


def test_a_plain_table_takes_the_columnar_path(tmp_path, monkeypatch):
    p = tmp_path / "metrics.csv"
    lines = ["step,epoch,loss,grad_norm,lr,eval_loss"]
    lines += [f"{i},{i / 100},{1 / (i + 1)!r},{2.0**-i},-0,{'' if i % 10 else 0.5}" for i in range(300)]
    lines += [",,,,,", "301,,,,,", "302,3.02,1e999,-1e999,1e-400,.5", "303,00012,5.,+1,1E5,1e+05"]
    p.write_text("\n".join(lines) + "\n")
    assert _table_taken(p)
    _both(p, monkeypatch)


@pytest.mark.parametrize(
    "rows",
    [
        ["1,0.5,", "2,nan,"],  # a non-finite spelling
        ["1, 0.5,", "2,0.4,"],  # a blank in a cell
        ["1,0.5,", "", "2,0.4,"],  # a blank line
        ["1,0.5,", "2,0.4"],  # a row of another field count
        ["1,0.5,,", "2,0.4,"],  # a longer row
        ["1,0.5,,", "2,0.4"],  # a long and a short row
        ['1,"0.5",', "2,0.4,"],  # a quote
        ["1,0.5,", "step,loss,x", "2,0.4,"],  # a header again
        ["1,0.5,", "e,e,e", "2,0.4,"],  # letters the allowed bytes hold
        ["1,e5,", "2,1.2.3,", "3,--1,", "4,-,", "5,.,"],  # what float() refuses
        ["1,0.5,", "2,0.4,"],  # no line end at the end (below)
        ["1,0.5,\r", "2,0.4,\r"],  # CR
    ],
)
def test_what_the_table_path_refuses_goes_to_the_pure_path(tmp_path, monkeypatch, rows):
    p = tmp_path / "metrics.csv"
    text = "step,loss,x\n" + "\n".join(rows)
    p.write_text(text + ("" if rows == ["1,0.5,", "2,0.4,"] else "\n"))
    assert not _table_taken(p)
    _both(p, monkeypatch)


def test_a_table_hands_over_to_the_pure_path_where_a_chunk_is_not_plain(tmp_path, monkeypatch):
    monkeypatch.setattr(_columnar, "CHUNK", 256)
    p = tmp_path / "metrics.csv"
    lines = ["step,loss,eval_loss"] + [f"{i},{1 / (i + 1)!r},{'' if i % 7 else i}" for i in range(200)]
    lines[150] = "150,nan,"  # a spelling only the pure path reads
    lines[170] = "step,loss,eval_loss"  # the header again: a note
    lines[180] = "180,0.5"  # a short row: a note
    p.write_text("\n".join(lines) + "\n201,0.5,")  # and a last row without a line end
    tr, given = _table_read(p)
    assert tr.started and tr.rest is not None and 0 < given < 150
    _both(p, monkeypatch)
    monkeypatch.setenv(_columnar.ENV, "1")
    run = read_runlog(p)
    assert any("header repeated at line 171" in n for n in run.notes)
    assert any("no line end" in n for n in run.notes)


@pytest.mark.parametrize(
    "header",
    ["1,2,3", "step,step,loss", "Run,Run ID,metric,step,timestamp,value", "", ",".join(f"m{i}" for i in range(63))],
)
def test_headers_the_table_path_leaves_to_the_pure_path(tmp_path, monkeypatch, header):
    p = tmp_path / "metrics.csv"
    k = max(header.count(",") + 1, 1)
    p.write_text(header + "\n" + "".join(",".join(str(i + j) for j in range(k)) + "\n" for i in range(5)))
    assert not _table_taken(p)
    _both(p, monkeypatch)


@pytest.mark.parametrize("path", _corpus_files("csv"), ids=lambda p: p.parent.name)
def test_corpus_csv_logs_read_the_same(path, monkeypatch):
    _both(path, monkeypatch)


@pytest.mark.parametrize(
    "path",
    sorted(p for ext in ("*.csv", "*.tsv") for p in (REPO / "examples").rglob(ext)),
    ids=lambda p: str(p.relative_to(REPO)),
)
def test_example_csv_logs_read_the_same(path, monkeypatch):
    _both(path, monkeypatch)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    reader=st.sampled_from(["csv", "csv_lightning", "csv_keras", "csv_wandb"]),
    kind=st.sampled_from(F.KINDS),
    plan=F.plans(),
)
def test_fuzz_csv_inputs_read_the_same(tmp_path, monkeypatch, reader, kind, plan):
    p = tmp_path / ("training.log" if reader == "csv_keras" else "metrics.csv")
    p.write_bytes(F.apply_plan(F.valid(reader, kind), plan))
    _both(p, monkeypatch)


_cell = st.one_of(
    st.floats(allow_nan=False).map(repr),
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: f"{x:e}"),
    st.just(""),
    st.sampled_from(["-0", ".5", "5.", "+1", "1e999", "1E-5", "e5", "1.2.3", "-", "nan", "inf", " 1", "0x1"]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    width=st.integers(1, 6),
    data=st.data(),
    delim=st.sampled_from([",", "\t", ";"]),
    chunk=st.sampled_from([16, 64, 1 << 20]),
)
def test_generated_tables_read_the_same(tmp_path, monkeypatch, width, data, delim, chunk):
    monkeypatch.setattr(_columnar, "CHUNK", chunk)
    names = ["step", "loss", "lr", "grad_norm", "eval_loss", "epoch"][:width]
    rows = data.draw(st.lists(st.lists(_cell, min_size=width, max_size=width), max_size=40))
    p = tmp_path / "metrics.csv"
    p.write_text("\n".join([delim.join(names)] + [delim.join(r) for r in rows]) + "\n")
    _both(p, monkeypatch)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(
        st.lists(
            st.one_of(st.floats(allow_nan=False, allow_infinity=False).map(repr), st.just("")), min_size=4, max_size=4
        ),
        min_size=1,
        max_size=40,
    ),
    chunk=st.sampled_from([16, 1 << 20]),
)
def test_generated_plain_tables_take_the_columnar_path(tmp_path, monkeypatch, rows, chunk):
    monkeypatch.setattr(_columnar, "CHUNK", chunk)
    p = tmp_path / "metrics.csv"
    p.write_text("step,loss,lr,eval_loss\n" + "".join(",".join(r) + "\n" for r in rows))
    assert _table_taken(p)
    _both(p, monkeypatch)
