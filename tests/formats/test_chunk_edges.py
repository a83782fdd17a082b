"""Chunk-boundary edge cases of the chunked readers (JSONL, trainer_state.json, CSV, event
files), checked against references computed independently of the readers' fast paths:
``json.loads`` per line, the whole-file row-by-row CSV loop, one ``json.loads`` of a whole
trainer_state.json, and ``parse_event`` per event record.

Some tests are defects these checks found and that were fixed (ragged CSV rows in one
chunk, a CRLF split at a chunk end, trainer_state.json line numbers with separators in
strings, decoders that disagreed on deep nesting).
"""

from __future__ import annotations

import csv as pycsv
import gzip
import json
import math
import struct
from pathlib import Path

import numpy as np
import pytest

from trainproof import aliases
from trainproof.api import read_runlog
from trainproof.formats import ReadError, ReadState, hf, jsonl
from trainproof.formats import csv as csv_reader
from trainproof.formats._event_proto import parse_event
from trainproof.formats._io import open_text
from trainproof.formats.lines import Lines
from trainproof.runlog import Record, build_runlog

from conftest import run_cli

# --------------------------------------------------------------------------- helpers


def _series(run) -> dict:
    """name -> (steps, values as bytes (NaN and -0.0 exact), lines)."""
    return {n: (s.steps.tolist(), s.values.tobytes(), s.lines.tolist()) for n, s in run.series.items()}


def _assert_same(ref, got) -> None:
    assert got.records == ref.records
    assert got.notes == ref.notes
    assert got.step_range == ref.step_range
    assert _series(got) == _series(ref)


def _flatten(obj: dict, prefix: str = "", out: dict | None = None, depth: int = 0, holes: list | None = None) -> dict:
    """Independent flattening: nested dicts to a/b keys, numbers only (no bools; a numeric
    string and a {"value": x} wrapper are numbers); the keys
    of nulls go to ``holes`` when given."""
    out = {} if out is None else out
    if depth > 32:
        return out
    for k, v in obj.items():
        key = prefix + k
        if v is None and holes is not None:
            holes.append(key)
        if isinstance(v, bool) or v is None:
            continue
        if isinstance(v, (int, float)):
            try:
                out[key] = float(v)
            except OverflowError:
                out[key] = math.inf if v > 0 else -math.inf
        elif isinstance(v, str) and v.strip() and set(v.strip()) <= set("0123456789.+-eE"):
            try:  # a number written as a string (issue 32)
                out[key] = float(v)
            except ValueError:
                pass
        elif isinstance(v, dict) and list(v) == ["value"] and not isinstance(v["value"], dict):
            _flatten({k: v["value"]}, prefix, out, depth + 1, holes)  # a wrapped scalar
        elif isinstance(v, dict):
            _flatten(v, key + "/", out, depth + 1, holes)
    return out


def _jsonl_reference(raw: bytes, path: str):
    """What a careful reader of the file gets: universal newlines, json.loads per line."""
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    text = raw.decode("utf-8-sig" if raw.startswith(b"\xef\xbb\xbf") else "utf-8", errors="replace")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    recs, bad, last_bad, last_line = [], [], False, 0
    for i, ln in enumerate(lines, 1):
        s = ln.strip()
        if not s:
            continue
        last_line = i
        try:
            obj = json.loads(s)
        except ValueError:
            obj = None
        if not isinstance(obj, dict):
            bad.append(i)
            last_bad = True
            continue
        last_bad = False
        holes: list = []
        vals = _flatten(obj, holes=holes)
        sk = aliases.step_key(vals.keys())
        step = None
        if sk is not None:
            v = vals.pop(sk)
            step = v if math.isfinite(v) else None
        recs.append(Record(step, vals, i, tuple(h for h in holes if h != sk)))
    notes = []
    if bad:
        msg = f"skipped {len(bad)} line(s) that are not JSON objects (first at line {bad[0]})"
        if last_bad:
            msg += f"; the last line ({last_line}) is incomplete or not JSON (a run killed mid-write?)"
        notes.append(msg)
    return build_runlog(recs, path, "jsonl", notes=notes)


def _csv_reference(path: Path):
    """The whole-file row-by-row loop the chunked CSV reader replaced (one csv.reader over
    the whole file, csv_reader.RowParser for the row semantics)."""
    state = ReadState()
    recs = []
    with open_text(path, newline="") as f:
        first = ""
        for first in Lines(f, newline=""):
            if first.strip():
                break
        delim = csv_reader.delimiter_of(first) or ","
        f.seek(0)
        lines = Lines(f, newline="")
        reader = pycsv.reader(lines, delimiter=delim)
        parser = csv_reader.RowParser(delim)
        prev_end = 0
        while True:
            try:
                row = next(reader)
            except StopIteration:
                break
            start = prev_end + 1
            prev_end = reader.line_num
            rec = parser.row(row, start)
            if rec is not None:
                if lines.unterminated:
                    state.drop(
                        f"the last row (line {start}) has no line end: a row cut mid-write "
                        "(a run killed or still writing?), so it was not read"
                    )
                    continue
                recs.append(rec)
    parser.finish(state)
    return build_runlog(recs, str(path), "csv", notes=state.notes)


# --------------------------------------------------------------------------- JSONL

_JSONL_LINES = [
    '{"step": 1, "loss": 2.5, "lr": 0.001}',
    '{"lr": 0.001, "loss": 2.25, "step": 2}',  # same keys, another order
    '{"step": 3, "loss": 2, "lr": 1e-3, "note": "\u00e9\u20ac\U0001f600"}',  # multi-byte text
    '{"step": 4, "loss": NaN, "grad_norm": Infinity}',  # tokens orjson refuses
    '{"step": 5, "loss": -0.0, "grad_norm": -Infinity}',
    '{"step": 6, "loss": 18446744073709551616, "x": 1e400}',  # > 2**64, float overflow
    '{"step": 7, "loss": true, "lr": null, "x": "1.5"}',  # non-numbers are absent
    '{"step": 8, "loss": 1, "loss": 0.5}',  # duplicate key: last wins
    '{"step": "9", "global_step": 90, "loss": 0.25}',  # string step: global_step
    '{"step": 10.0, "m": {"a": 1, "b": {"c": 2}}, "m/a": 3}',  # nested + flattened clash
    '{"step": 11, "loss": [1, 2], "d": {}}',
    '{"step": 12, "loss": 0.125, "s": "\\ud800"}',  # lone surrogate escape
    "",
    "   ",
    "banner: epoch 1",
    "[1, 2, 3]",
    '  {"step": 13, "loss": 0.1}  ',  # padded
    '{"step": 14, "loss": 0.05, "flag": false}',
    '{"step": 15, "loss": 9007199254740993}',  # 2**53 + 1
    '{"step": 16, "loss": -9223372036854775809, "lr": 18446744073709551615}',
]


@pytest.mark.slow
@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("bom", [False, True])
@pytest.mark.parametrize("torn", ["", '{"step": 17, "loss": 0.0', '{"step": 17, "loss": 0.01}'])
def test_jsonl_every_chunk_size_matches_json_loads_per_line(tmp_path, monkeypatch, newline, bom, torn):
    text = newline.join(_JSONL_LINES) + newline + torn
    raw = (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8", "surrogatepass")
    p = tmp_path / "m.jsonl"
    p.write_bytes(raw)
    ref = _jsonl_reference(raw, str(p))
    assert ref.records == 16 + (torn.endswith("}"))
    # every boundary position up to a few lines in, then a few larger chunk sizes
    for chunk in [*range(1, 90), 127, 500, 1 << 22]:
        monkeypatch.setattr(jsonl, "_CHUNK", chunk)
        _assert_same(ref, read_runlog(p, fmt="jsonl"))


@pytest.mark.slow
def test_jsonl_gzip_and_utf8_split_at_every_boundary(tmp_path, monkeypatch):
    lines = [
        json.dumps({"step": i, "loss": 1 / (i + 1), "t\u00e9\u00df": "\U0001f600" * (i % 3)}, ensure_ascii=False)
        for i in range(40)
    ]
    raw = ("\r\n".join(lines) + "\r\n").encode()
    p = tmp_path / "m.jsonl.gz"
    p.write_bytes(gzip.compress(raw))
    ref = _jsonl_reference(raw, str(p))
    assert ref.records == 40 and not ref.notes
    for chunk in range(1, 60):
        monkeypatch.setattr(jsonl, "_CHUNK", chunk)
        _assert_same(ref, read_runlog(p, fmt="jsonl"))


def test_jsonl_int_float_bool_null_string_for_one_key_within_and_across_chunks(tmp_path, monkeypatch):
    kinds = ["1", "1.5", "true", "null", '"2"', '{"a": 3}', "NaN", "-0", "false", "2", "1e309"]
    lines = [f'{{"step": {i}, "v": {kinds[i % len(kinds)]}, "w": {i}}}' for i in range(60)]
    raw = ("\n".join(lines) + "\n").encode()
    p = tmp_path / "m.jsonl"
    p.write_bytes(raw)
    ref = _jsonl_reference(raw, str(p))
    for chunk in (1, 13, 29, 64, 200, 1 << 22):
        monkeypatch.setattr(jsonl, "_CHUNK", chunk)
        got = read_runlog(p, fmt="jsonl")
        _assert_same(ref, got)
    # independently: v is present exactly where its value is a number, a numeric string
    # included (bools/null absent)
    v = ref.series["v"]
    want = [i for i in range(60) if kinds[i % len(kinds)] in ("1", "1.5", '"2"', "NaN", "-0", "2", "1e309")]
    assert v.steps.tolist() == [float(i) for i in want]
    assert "v/a" in ref.series


@pytest.mark.parametrize("limit", [16, 37, 64])
def test_jsonl_overlong_lines_at_chunk_boundaries(tmp_path, monkeypatch, limit):
    lines = []
    for i in range(30):
        if i % 4 == 3:
            lines.append('{"step": %d, "junk": "%s"}' % (i, "x" * (limit + i)))  # overlong
        else:
            lines.append('{"loss": %d}' % i)
    raw = ("\n".join(lines) + "\n").encode()
    p = tmp_path / "m.jsonl"
    p.write_bytes(raw)
    monkeypatch.setattr(jsonl, "MAX_LINE", limit)
    want_overlong = [i + 1 for i, ln in enumerate(lines) if len(ln) >= limit]
    for chunk in (1, 7, 19, 41, 100, 1000):
        monkeypatch.setattr(jsonl, "_CHUNK", chunk)
        run = read_runlog(p, fmt="jsonl")
        assert run.series["loss"].lines.tolist() == [
            i + 1 for i, ln in enumerate(lines) if len(ln) < limit and "loss" in ln
        ]
        shown = ", ".join(map(str, want_overlong[:5])) + (" …" if len(want_overlong) > 5 else "")
        assert run.notes == [
            f"skipped {len(want_overlong)} line(s) longer than {limit:,} characters (lines {shown}): not read"
        ]


def test_jsonl_deep_line_same_in_read_and_parse_line(tmp_path):
    deep = '{"step": 2, "loss": 0.5, "n": ' + '{"a": ' * 1010 + "1" + "}" * 1010 + "}"
    p = tmp_path / "m.jsonl"
    p.write_text('{"step": 1, "loss": 1.0}\n' + deep + "\n")
    run = read_runlog(p, fmt="jsonl")
    per_record = jsonl.parse_line(deep, 2)
    assert (per_record is None) == (run.records == 1)


# --------------------------------------------------------------------------- trainer_state.json


def _hf_entries(n: int) -> list:
    out = []
    for i in range(1, n + 1):
        e = {"epoch": i / 10, "grad_norm": 1.0 + i % 5, "learning_rate": 1e-4, "loss": 2.0 - i / 100, "step": i}
        if i % 9 == 0:
            e = {"epoch": i / 10, "eval_loss": 1.5, "eval_runtime": 2.0, "step": i}
        if i % 11 == 0:
            e["note"] = '}, {"step": 999, "loss": 0},\n    {'  # separator-like text in a string
        if i % 13 == 0:
            e["per_class"] = {"a": 0.5, "b": {"c": 0.25}}
        if i % 17 == 0:
            e["flag"] = True
            e["nothing"] = None
        out.append(e)
    out.append({"epoch": 9.9, "step": n, "total_flos": 1e9, "train_loss": 1.0, "train_runtime": 3.5})
    return out


def _hf_expected(doc: dict) -> dict:
    """Independent: metric -> {step: value} from json.loads of the whole document."""
    exp: dict = {}
    for e in doc["log_history"]:
        if not isinstance(e, dict) or "train_runtime" in e or "total_flos" in e:
            continue
        vals = _flatten(e)
        step = vals.pop("step")
        for k, v in vals.items():
            exp.setdefault(k, {})[step] = v
    return exp


@pytest.mark.parametrize("layout", [{"indent": 2}, {"indent": 4}, {}, {"separators": (",", ":")}])
def test_trainer_state_chunks_match_whole_document(tmp_path, monkeypatch, layout):
    doc = {"best_metric": None, "global_step": 120, "log_history": _hf_entries(120), "max_steps": 500}
    text = json.dumps(doc, **layout)
    p = tmp_path / "trainer_state.json"
    p.write_text(text)
    exp = _hf_expected(json.loads(text))
    monkeypatch.setattr(hf, "_MIN_BATCH", 16)
    runs = []
    for chunk in (7, 64, 333, 1 << 20):
        monkeypatch.setattr(hf, "_CHUNK", chunk)
        runs.append(read_runlog(p, fmt="hf"))
    monkeypatch.setattr(hf, "_batch", lambda sc, summary: None)
    per_entry = read_runlog(p, fmt="hf")
    for run in runs:
        _assert_same(per_entry, run)
        assert run.meta["summary"] == {
            "epoch": 9.9,
            "step": 120.0,
            "total_flos": 1e9,
            "train_loss": 1.0,
            "train_runtime": 3.5,
        }
        assert run.meta["max_steps"] == 500 and run.meta["global_step"] == 120
        got = {s.key: dict(zip(s.steps.tolist(), s.values.tolist())) for s in run.series.values()}
        assert got == exp


def test_trainer_state_indent2_lines_exact_with_separators_in_strings(tmp_path):
    entries = [{"loss": 1.0 / i, "note": "a}, {b},{c", "step": i} for i in range(1, 400)]
    p = tmp_path / "trainer_state.json"
    p.write_text(json.dumps({"log_history": entries}, indent=2))
    run = read_runlog(p)
    # line 1 "{", line 2 '"log_history": [', then 5 lines an entry
    assert run.series["loss"].lines.tolist() == (3 + 5 * np.arange(399)).tolist()


def test_trainer_state_lines_with_separator_in_string_and_mixed_boundaries(tmp_path):
    pad = "x" * 5000  # past _MIN_BATCH so the batch path runs
    text = (
        '{"log_history": [{"step": 1, "loss": 1.0, "note": "a}, {b"},\n'
        '{"step": 2, "loss": 2.0}, {"step": 3, "loss": 3.0, "pad": "%s"}, {"step": 4, "loss": 4.0}]}\n' % pad
    )
    p = tmp_path / "trainer_state.json"
    p.write_text(text)
    run = read_runlog(p)
    # entry 1 starts on line 1, entries 2-4 on line 2
    assert run.series["loss"].lines.tolist() == [1, 2, 2, 2]


def test_trainer_state_deep_entry_same_batched_or_not(tmp_path, monkeypatch):
    deep = '{"step": 2, "loss": 2.0, "n": ' + '{"a": ' * 1010 + "1" + "}" * 1010 + "}"
    text = '{"log_history": [{"step": 1, "loss": 1.0}, ' + deep + ', {"step": 3, "loss": 3.0}], "max_steps": 10}'
    p = tmp_path / "trainer_state.json"
    p.write_text(text)
    batched = read_runlog(p)
    monkeypatch.setattr(hf, "_batch", lambda sc, summary: None)
    one_by_one = read_runlog(p)
    assert (batched.records, batched.notes) == (one_by_one.records, one_by_one.notes)


# --------------------------------------------------------------------------- CSV


def _csv_chunk_sizes(text: str):
    return [*range(1, 40), 97, len(text), 1 << 22]


@pytest.mark.parametrize("newline", ["\n", "\r"])
def test_csv_dialects_every_chunk_size_match_whole_file(tmp_path, monkeypatch, newline):
    rows = [
        "epoch,loss,val_loss",
        "0,1.5,1.6",
        "1,1.25,",
        "2,nan,1.4",
        "3,inf,-inf",
        "4, 0.5 ,0.25",
        "epoch,loss,val_loss",  # Keras append=True: header repeated
        "5,0.75,0.5",
        "epoch,loss,val_loss,lr",  # resumed with another column set
        "6,0.5,0.5,1e-3",
        ",,,",
        "7,1e400,-0,-0.0",
        '8,"0.125",0.25,1e-4',  # a quoted field in one chunk only
        "9,0.1,0.2,1_0",
        "10,abc,0.1,0.2",
        "-,-,-,-",
        "",
        "11,2.0,3.0,0.0001",
    ]
    text = newline.join(rows) + newline
    p = tmp_path / "training.log"
    p.write_bytes(text.encode())
    ref = _csv_reference(p)
    assert ref.records == 13
    for chunk in _csv_chunk_sizes(text):
        monkeypatch.setattr(csv_reader, "_CHUNK", chunk)
        _assert_same(ref, read_runlog(p, fmt="csv"))


@pytest.mark.slow
def test_csv_lightning_sparse_rows_gzip_bom_every_chunk_size(tmp_path, monkeypatch):
    lines = ["epoch,step,train_loss,val_loss,lr-Adam"]
    for s in range(40):
        lines.append(f"0,{s},{1 / (s + 1)},,")
        if s % 5 == 4:
            lines.append(f"0,{s},,{0.5 + s / 100},")
        if s % 10 == 0:
            lines.append(f",{s},,,{1e-3 / (s + 1)}")
    text = "\n".join(lines) + "\n"
    p = tmp_path / "metrics.csv.gz"
    p.write_bytes(gzip.compress(b"\xef\xbb\xbf" + text.encode()))
    ref = _csv_reference(p)
    assert ref.records == len(lines) - 1
    assert len(next(s for s in ref.series.values() if s.key == "val_loss")) == 8
    for chunk in (*range(1, 30), 333, 1 << 22):
        monkeypatch.setattr(csv_reader, "_CHUNK", chunk)
        _assert_same(ref, read_runlog(p, fmt="csv"))


@pytest.mark.slow
def test_csv_thousands_of_columns_and_torn_last_row(tmp_path, monkeypatch):
    k = 2000
    header = ["step"] + [f"m{j}" for j in range(k)]
    rows = [",".join(header)] + [",".join([str(i)] + [str((i * j) % 7 / 8) for j in range(k)]) for i in range(12)]
    text = "\n".join(rows) + "\n" + ",".join(["12"] + ["0.5"] * k)  # torn: no line end
    p = tmp_path / "wide.csv"
    p.write_text(text)
    ref = _csv_reference(p)
    assert ref.records == 12 and ref.notes[0].startswith("the last row (line 14) has no line end")
    for chunk in (50, 4000, 9999, 1 << 22):
        monkeypatch.setattr(csv_reader, "_CHUNK", chunk)
        _assert_same(ref, read_runlog(p, fmt="csv"))


def test_csv_number_words_and_exponents_same_as_float(tmp_path, monkeypatch):
    cells = [
        "1e5",
        "1E+05",
        "-0",
        "-0.0",
        "0.1000000000000000055511151231257827",
        "4.9e-324",
        "18446744073709553665",
        "9007199254740993",
        "1e400",
        "-1e400",
        "1e-400",
        "nan",
        "NaN",
        "inf",
        "-Infinity",
        ".5",
        "5.",
        "+2",
        "01",
        "1_0",
    ]
    text = "step,v\n" + "".join(f"{i},{c}\n" for i, c in enumerate(cells))
    p = tmp_path / "m.csv"
    p.write_text(text)
    for chunk in (3, 8, 17, 1 << 22):
        monkeypatch.setattr(csv_reader, "_CHUNK", chunk)
        run = read_runlog(p, fmt="csv")
        v = run.series["v"]
        assert v.steps.tolist() == [float(i) for i in range(len(cells))]
        assert v.values.tobytes() == np.array([float(c) for c in cells]).tobytes()


def test_csv_rows_of_other_field_counts_in_one_chunk(tmp_path):
    p = tmp_path / "metrics.csv"
    p.write_text("step,a,b\n0,1,1\n1,2,3,4\n5,6\n7,8,9\n")
    run = read_runlog(p)
    # independently: lines 3 and 4 do not have 3 fields; only lines 2 and 5 are records
    assert run.records == 2
    assert run.series["a"].steps.tolist() == [0.0, 7.0]
    assert run.series["a"].values.tolist() == [1.0, 8.0]
    assert any("skipped 2 row(s) whose field count does not match the header" in n for n in run.notes)
    _assert_same(_csv_reference(p), run)


def test_csv_ragged_rows_cli_verdict(tmp_path):
    good = lambda r: "".join(f"{i},{2 - i / 100},{2 - i / 90}\n" for i in r)  # noqa: E731
    p = tmp_path / "metrics.csv"
    p.write_text("step,loss,eval_loss\n" + good(range(50)) + "50,1.5,1.4,150\nnan,1.49\n" + good(range(52, 100)))
    code, _, _, doc = run_cli("epoch", str(p), "--json")
    rules = [f.get("rule_id") or f.get("id") for f in doc["reports"][0]["findings"]]
    assert (code, doc["worst_verdict"]) == (0, "PASS")
    assert "TP-DATA-DROPPED" in rules and "TP-NAN" not in rules


def test_csv_trailing_delimiter_row_and_short_row_in_one_chunk(tmp_path):
    p = tmp_path / "metrics.csv"
    p.write_text("step,a,b\n0,1,1\n1,2,3,\n5,6\n7,8,9\n")
    _assert_same(_csv_reference(p), read_runlog(p))


def test_csv_crlf_split_at_chunk_end_with_quotes(tmp_path, monkeypatch):
    text = 'step,loss\r\n1,0.5\r\n2,"0.25"\r\n3,0.125\r\n4,0.0625\r\n'
    p = tmp_path / "metrics.csv"
    p.write_bytes(text.encode())
    monkeypatch.setattr(csv_reader, "_CHUNK", len('1,0.5\r\n2,"0.25"\r'))  # ends on the CR
    run = read_runlog(p)
    assert run.series["loss"].lines.tolist() == [2, 3, 4, 5]


@pytest.mark.slow
def test_csv_crlf_split_at_default_chunk(tmp_path):
    header = "step,loss\r\n"
    tail = "0" * 100 + "\r\n"  # long rows: fewer rows to read
    body = ['"0",0.5' + tail] + [f"{i},0.5{tail}" for i in range(1, 60000)]
    # the first chunk after the header is 1 << 22 characters: make it end on the CR of a row
    cum, m = 0, 0
    while cum + len(body[m]) <= (1 << 22) + 1 - 200:
        cum += len(body[m])
        m += 1
    extra = (1 << 22) + 1 - cum - len(body[m])
    body[m] = body[m].replace("0.5", "0.5" + "0" * extra, 1)
    text = "".join(body)
    assert text[(1 << 22) - 1] == "\r" and text[1 << 22] == "\n"
    p = tmp_path / "metrics.csv"
    p.write_bytes((header + text).encode())
    run = read_runlog(p)
    assert run.records == len(body)
    assert run.series["loss"].lines[-1] == len(body) + 1


# --------------------------------------------------------------------------- event files


def _varint(x: int) -> bytes:
    x &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = x & 0x7F
        x >>= 7
        out.append(b | (0x80 if x else 0))
        if not x:
            return bytes(out)


def _scalar_event(wall: float, step: int, tag: bytes, value: float) -> bytes:
    val = b"\x0a" + _varint(len(tag)) + tag + b"\x15" + struct.pack("<f", value)
    summ = b"\x0a" + _varint(len(val)) + val
    return (
        b"\x09"
        + struct.pack("<d", wall)
        + (b"\x10" + _varint(step) if step else b"")
        + b"\x2a"
        + _varint(len(summ))
        + summ
    )


def _two_value_event(wall: float, step: int, a: bytes, b: bytes) -> bytes:
    vals = b""
    for tag, v in ((a, 1.5), (b, 2.5)):
        val = b"\x0a" + _varint(len(tag)) + tag + b"\x15" + struct.pack("<f", v)
        vals += b"\x0a" + _varint(len(val)) + val
    return b"\x09" + struct.pack("<d", wall) + b"\x10" + _varint(step) + b"\x2a" + _varint(len(vals)) + vals


def _masked_crc(data: bytes) -> int:
    # crc32c, masked as TFRecord does
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _record(payload: bytes) -> bytes:
    n = struct.pack("<Q", len(payload))
    return n + struct.pack("<I", _masked_crc(n)) + payload + struct.pack("<I", _masked_crc(payload))


@pytest.mark.slow
@pytest.mark.parametrize("chunk", [1, 5, 13, 64, 1000, 1 << 20])
@pytest.mark.parametrize("corrupt", [None, 0, 200])
def test_event_batches_match_parse_event_per_record(tmp_path, monkeypatch, chunk, corrupt):
    from trainproof.formats import _tfrecord

    monkeypatch.setattr(_tfrecord, "_CHUNK", chunk)
    payloads = [b"\x09" + struct.pack("<d", 1.0) + b"\x1a\x0dbrain.Event:2"]  # file_version
    long_tag = b"t" * 130  # lengths past one varint byte: not the batch layout
    for i in range(300):
        if i % 37 == 5:
            payloads.append(_two_value_event(100.0 + i, i, b"loss", b"lr"))
        elif i % 41 == 7:
            payloads.append(_scalar_event(100.0 + i, i, long_tag, i / 3))
        elif i % 43 == 9:
            payloads.append(_scalar_event(100.0 + i, -i, b"loss", -0.0))  # negative step
        elif i % 47 == 11:
            payloads.append(_scalar_event(100.0 + i, 0, b"hp_metric", -1.0))
        else:
            payloads.append(
                _scalar_event(100.0 + i, i, b"loss" if i % 3 else b"eval/\xc3\xa9", float("nan") if i == 50 else i / 7)
            )
    payloads.append(_scalar_event(1.0, (1 << 63) + 5, b"loss", 1.0))  # step above int64: wraps negative
    recs = [_record(pl) for pl in payloads]
    note = []
    if corrupt is not None:  # a flipped payload byte: reading stops right before it
        bad = bytearray(recs[corrupt])
        bad[14] ^= 0x40
        recs[corrupt] = bytes(bad)
        dropped = sum(map(len, recs[corrupt:]))
        note = [
            f"events.out.tfevents.1.host: reading stopped after {corrupt} records: record {corrupt + 1}: "
            f"the payload checksum does not match (corrupt bytes); {dropped} bytes dropped"
        ]
        payloads = payloads[:corrupt]
    p = tmp_path / "events.out.tfevents.1.host"
    p.write_bytes(b"".join(recs))
    if corrupt == 0:
        with pytest.raises(ReadError, match="payload checksum"):
            read_runlog(p)
        return
    # independent reference: the general decoder on each record
    exp: dict = {}
    plugins: dict = {}
    for k, pl in enumerate(payloads):
        _, step, values = parse_event(pl, plugins)
        for tag, v in values:
            if tag == "hp_metric":
                continue
            exp.setdefault(tag, []).append((float(step), v, k + 1))
    run = read_runlog(p)
    assert run.records == sum(map(len, exp.values()))
    assert [n for n in run.notes if "reading stopped" in n] == note
    for tag, pts in exp.items():
        pts = sorted(pts, key=lambda t: t[0])  # stable: later write of a step kept last
        dedup: dict = {}
        for st, v, ln in pts:
            dedup[st] = (v, ln)
        s = next(s for s in run.series.values() if s.key == tag)
        assert s.steps.tolist() == sorted(dedup)
        got = list(zip(s.values.tolist(), s.lines.tolist()))
        want = [dedup[st] for st in sorted(dedup)]
        assert [ln for _, ln in got] == [ln for _, ln in want]
        assert np.array([v for v, _ in got]).tobytes() == np.array([v for v, _ in want]).tobytes()
