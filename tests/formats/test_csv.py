"""The delimited-table reader (trainproof.formats.csv): Lightning, Keras, W&B exports."""

from __future__ import annotations

import csv as pycsv
import gzip
import math
from pathlib import Path

import numpy as np
import pytest
from _helpers import assert_repeats_differ
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainproof.api import read_runlog
from trainproof.findings import Level
from trainproof.formats import ReadError, hf, jsonl
from trainproof.formats import csv as csv_reader
from trainproof.rules.engine import judge_runlog

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"


def write(path: Path, text: str, newline: str = "\n", bom: bool = False) -> Path:
    data = text.replace("\n", newline).encode("utf-8")
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)
    return path


# --------------------------------------------------------------------------- header and dialects


SIMPLE = "step,loss,lr\n1,2.5,0.001\n2,2.0,0.002\n3,1.5,0.003\n"


def test_header_row_names_the_columns(tmp_path: Path) -> None:
    run = read_runlog(write(tmp_path / "log.csv", SIMPLE))
    assert run.format == "csv"
    assert set(run.series) == {"loss", "lr"}
    loss = run.get("loss")
    assert loss.steps.tolist() == [1, 2, 3]
    assert loss.values.tolist() == [2.5, 2.0, 1.5]
    assert loss.lines.tolist() == [2, 3, 4]  # the header is line 1
    assert run.get("lr").values.tolist() == [0.001, 0.002, 0.003]
    assert run.records == 3 and not run.notes


@pytest.mark.parametrize("delim", [",", ";", "\t"], ids=["comma", "semicolon", "tab"])
def test_delimiters(tmp_path: Path, delim: str) -> None:
    text = SIMPLE.replace(",", delim)
    p = write(tmp_path / "log.txt", text)
    assert csv_reader.sniff(p, text)
    run = read_runlog(p)
    assert run.format == "csv"
    assert run.get("loss").values.tolist() == [2.5, 2.0, 1.5]
    assert run.get("lr").steps.tolist() == [1, 2, 3]


def test_bom_and_crlf(tmp_path: Path) -> None:
    p = write(tmp_path / "log.csv", SIMPLE, newline="\r\n", bom=True)
    raw = p.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbfstep,") and b"\r\n" in raw
    run = read_runlog(p)
    assert run.format == "csv"
    # With the BOM stripped the first column is "step", the x axis, not a metric "\ufeffstep".
    assert set(run.series) == {"loss", "lr"}
    assert run.get("loss").steps.tolist() == [1, 2, 3]
    assert run.get("loss").lines.tolist() == [2, 3, 4]


def test_blank_lines_count_in_line_numbers(tmp_path: Path) -> None:
    run = read_runlog(write(tmp_path / "log.csv", "step,loss\n1,2.0\n\n2,1.0\n"))
    assert run.get("loss").lines.tolist() == [2, 4]


def test_quoted_fields_spanning_lines_keep_line_numbers(tmp_path: Path) -> None:
    text = 'step,loss,comment\n1,2.0,"first\nline"\n2,1.0,plain\n'
    run = read_runlog(write(tmp_path / "log.csv", text), "csv")
    assert run.get("loss").lines.tolist() == [2, 4]
    assert "comment" not in run.series


def test_trailing_delimiter_is_not_a_field_mismatch(tmp_path: Path) -> None:
    run = read_runlog(write(tmp_path / "log.csv", "step,loss\n1,2.0,\n2,1.0,\n"))
    assert run.get("loss").values.tolist() == [2.0, 1.0]
    assert not run.notes


def test_first_row_of_numbers_is_not_a_header(tmp_path: Path) -> None:
    p = write(tmp_path / "log.csv", "1,2.5\n2,2.0\n3,1.5\n")
    assert not csv_reader.sniff(p, p.read_text())
    with pytest.raises(ReadError):
        read_runlog(p)
    # Even when the format is forced, numbers are never turned into column names.
    with pytest.raises(ReadError, match="no header"):
        read_runlog(p, "csv")


def test_gzip_csv(tmp_path: Path) -> None:
    p = tmp_path / "metrics.csv.gz"
    p.write_bytes(gzip.compress(SIMPLE.encode()))
    run = read_runlog(p)
    assert run.format == "csv"
    assert run.get("loss").values.tolist() == [2.5, 2.0, 1.5]


# --------------------------------------------------------------------------- values


def test_float32_looking_numbers(tmp_path: Path) -> None:
    text = "epoch,loss,lr\n0,0.5,0.00020000001\n1,0.4,4.0000003e-05\n2,0.3,8.000001e-06\n"
    run = read_runlog(write(tmp_path / "training.log", text))
    assert run.get("lr").values.tolist() == [0.00020000001, 4.0000003e-05, 8.000001e-06]


def test_nan_and_inf_cells_are_values(tmp_path: Path) -> None:
    text = "step,loss,gn\n1,nan,1.0\n2,inf,NaN\n3,-inf,Infinity\n4,0.5,-0.0\n"
    run = read_runlog(write(tmp_path / "log.csv", text))
    loss = run.get("loss")
    assert loss.steps.tolist() == [1, 2, 3, 4]
    v = loss.values
    assert np.isnan(v[0]) and v[1] == np.inf and v[2] == -np.inf and v[3] == 0.5
    g = run.get("gn").values
    assert np.isnan(g[1]) and g[2] == np.inf and g[3] == 0.0


def test_bool_and_text_cells_are_absent(tmp_path: Path) -> None:
    text = "step,loss,flag\n1,2.0,True\n2,False,False\n3,n/a,true\n4,1.0,\n"
    run = read_runlog(write(tmp_path / "log.csv", text))
    loss = run.get("loss")
    assert loss.steps.tolist() == [1, 4]
    assert loss.values.tolist() == [2.0, 1.0]
    assert "flag" not in run.series  # never 1.0 / 0.0


def test_non_finite_step_cell_is_not_a_step(tmp_path: Path) -> None:
    run = read_runlog(write(tmp_path / "log.csv", "step,loss\n1,3.0\nnan,2.0\n3,1.0\n"))
    assert 1.0 in run.get("loss").steps.tolist()
    assert not any(math.isnan(s) for s in run.get("loss").steps.tolist())


# --------------------------------------------------------------------------- Lightning CSVLogger


LIGHTNING = """epoch,lr-AdamW,step,train_loss_epoch,train_loss_step,val_acc,val_loss
,0.001,0,,,,
0,,9,,2.5,,
0,,19,,2.0,,
0,,19,,,0.5,1.9
0,,19,2.2,,,
,0.0005,20,,,,
1,,29,,1.5,,
1,,39,,1.25,,
1,,39,,,0.6,1.7
1,,39,1.4,,,
"""


def test_lightning_sparse_rows(tmp_path: Path) -> None:
    run = read_runlog(write(tmp_path / "metrics.csv", LIGHTNING))
    assert run.format == "csv"
    loss = run.get("loss")
    assert loss.key == "train_loss_step"
    assert loss.steps.tolist() == [9, 19, 29, 39]
    assert loss.values.tolist() == [2.5, 2.0, 1.5, 1.25]
    assert loss.lines.tolist() == [3, 4, 8, 9]
    # The per-epoch aggregate is its own series and never mixed into the loss.
    tle = run.get("train_loss_epoch")
    assert tle.steps.tolist() == [19, 39] and tle.values.tolist() == [2.2, 1.4]
    assert 2.2 not in loss.values.tolist() and 1.4 not in loss.values.tolist()
    assert run.mapping["loss"]["ignored"] == ["train_loss_epoch"]
    # val_loss is the eval loss.
    ev = run.get("eval_loss")
    assert ev.key == "val_loss"
    assert ev.steps.tolist() == [19, 39] and ev.values.tolist() == [1.9, 1.7]
    # lr-AdamW (LearningRateMonitor) rows.
    lr = run.get("lr")
    assert lr.key == "lr-AdamW"
    assert lr.steps.tolist() == [0, 20] and lr.values.tolist() == [0.001, 0.0005]
    # Empty cells are absent: never 0 and never NaN.
    for s in run.series.values():
        assert np.all(np.isfinite(s.values)), s.name
    assert run.get("val_acc").values.tolist() == [0.5, 0.6]
    epoch = run.get("epoch")
    assert epoch.steps.tolist() == [9, 19, 29, 39]
    assert epoch.values.tolist() == [0, 0, 1, 1]
    # Several rows share a step with the same epoch: nothing is reported as rewritten.
    assert not any("more than once" in n for n in run.notes)
    assert run.records == 10


def test_lightning_crlf(tmp_path: Path) -> None:
    a = read_runlog(write(tmp_path / "a.csv", LIGHTNING))
    b = read_runlog(write(tmp_path / "b.csv", LIGHTNING, newline="\r\n"))
    for k in a.series:
        assert a.series[k].values.tolist() == b.series[k].values.tolist()
        assert a.series[k].lines.tolist() == b.series[k].lines.tolist()


def test_lightning_train_loss_epoch_only_is_the_fallback_loss(tmp_path: Path) -> None:
    text = "epoch,step,train_loss_epoch,val_loss\n0,9,2.0,\n0,9,,1.9\n1,19,1.5,\n1,19,,1.7\n"
    run = read_runlog(write(tmp_path / "metrics.csv", text))
    assert run.get("loss").key == "train_loss_epoch"
    assert run.get("loss").values.tolist() == [2.0, 1.5]


# --------------------------------------------------------------------------- Keras CSVLogger


KERAS = """epoch,accuracy,loss,lr,val_loss
0,0.5,1.2,0.001,1.3
1,0.6,1.0,4.0000003e-05,1.1
2,0.7,0.8,8.000001e-06,1.0
"""


def test_keras_epoch_is_the_x_axis(tmp_path: Path) -> None:
    p = write(tmp_path / "training.log", KERAS)
    run = read_runlog(p)
    assert run.format == "csv"
    loss = run.get("loss")
    assert loss.steps.tolist() == [0, 1, 2]
    assert loss.values.tolist() == [1.2, 1.0, 0.8]
    assert run.get("eval_loss").values.tolist() == [1.3, 1.1, 1.0]
    assert run.get("lr").values.tolist() == [0.001, 4.0000003e-05, 8.000001e-06]
    assert any("epoch is the x axis" in n for n in run.notes)


def test_keras_repeated_header_with_changed_columns(tmp_path: Path) -> None:
    # A resumed run (append=True) whose metric set changed: lr is gone, val_accuracy is new,
    # and the columns are in a different order. A positional mapping would read 0.7 as loss.
    text = KERAS + "epoch,val_accuracy,accuracy,val_loss,loss\n3,0.7,0.75,0.95,0.65\n4,0.72,0.8,0.9,0.6\n"
    run = read_runlog(write(tmp_path / "training.log", text))
    loss = run.get("loss")
    assert loss.steps.tolist() == [0, 1, 2, 3, 4]
    assert loss.values.tolist() == [1.2, 1.0, 0.8, 0.65, 0.6]
    assert loss.lines.tolist() == [2, 3, 4, 6, 7]
    assert run.get("eval_loss").values.tolist() == [1.3, 1.1, 1.0, 0.95, 0.9]
    assert run.get("accuracy").values.tolist() == [0.5, 0.6, 0.7, 0.75, 0.8]
    assert run.get("val_accuracy").steps.tolist() == [3, 4]
    assert run.get("lr").steps.tolist() == [0, 1, 2]
    assert run.records == 5  # the repeated header is not a record
    (note,) = [n for n in run.notes if "header repeated" in n]
    assert "line 5" in note and "+val_accuracy" in note and "-lr" in note


def test_repeated_identical_header_is_noted(tmp_path: Path) -> None:
    text = KERAS + KERAS.splitlines()[0] + "\n3,0.75,0.7,0.0001,0.95\n"
    run = read_runlog(write(tmp_path / "training.log", text))
    assert run.get("loss").values.tolist() == [1.2, 1.0, 0.8, 0.7]
    (note,) = [n for n in run.notes if "header repeated" in n]
    assert "line 5" in note and "column set changed" not in note


def test_new_header_sharing_no_name_is_not_mapped_by_position(tmp_path: Path) -> None:
    text = "epoch,loss,val_loss\n0,1.0,1.1\n1,0.9,1.0\nfold,acc,f1\n5,0.5,0.6\n"
    run = read_runlog(write(tmp_path / "log.csv", text))
    # Under the new header, 5 is the fold and 0.5 is "acc": not an epoch and not a loss.
    assert run.get("loss").values.tolist() == [1.0, 0.9]
    assert run.get("eval_loss").values.tolist() == [1.1, 1.0]
    assert run.get("epoch").values.tolist() == [0.0, 1.0]
    assert run.get("acc").values.tolist() == [0.5]
    assert run.get("f1").values.tolist() == [0.6]
    assert run.get("fold").values.tolist() == [5.0]
    assert any("header repeated at line 4" in n for n in run.notes)


def test_placeholder_row_is_not_a_header(tmp_path: Path) -> None:
    text = "step,loss,lr\n1,2.0,0.1\n-,-,-\n3,1.0,0.1\n"
    run = read_runlog(write(tmp_path / "log.csv", text))
    assert run.get("loss").steps.tolist() == [1, 3]
    assert not any("header" in n for n in run.notes)


def test_rows_with_a_different_field_count_are_skipped_and_named(tmp_path: Path) -> None:
    text = "step,loss,lr\n1,2.5,0.1\n2,2.0\n3,1.5,0.1,9,9\n4,1.0,0.1\n"
    run = read_runlog(write(tmp_path / "log.csv", text))
    loss = run.get("loss")
    assert loss.steps.tolist() == [1, 4]
    assert loss.values.tolist() == [2.5, 1.0]
    (note,) = run.notes
    assert "skipped 2 row(s)" in note
    assert "2 fields under a 3-field header" in note
    assert "lines 3, 4" in note


def test_many_mismatched_rows_are_summarised(tmp_path: Path) -> None:
    text = "step,loss\n0,2.0\n" + "".join(f"{i},1.0,extra\n" for i in range(1, 9)) + "9,0.5\n"
    run = read_runlog(write(tmp_path / "log.csv", text))
    assert run.get("loss").steps.tolist() == [0, 9]
    (note,) = run.notes
    assert "skipped 8 row(s)" in note and "lines 3, 4, 5, 6, 7 …" in note
    assert "3 fields under a 2-field header" in note


# --------------------------------------------------------------------------- W&B export


WANDB = (
    '"Step","myrun - train/loss","myrun - train/loss__MIN","myrun - train/loss__MAX",'
    '"myrun - lr-AdamW__MIN","myrun - lr-AdamW","myrun - lr-AdamW__MAX"\n'
    "1,2.0,1.9,2.1,0.01,0.2,0.3\n"
    "2,1.5,1.4,1.6,0.01,0.2,0.3\n"
    "3,,,,,0.1,\n"
)


def test_wandb_export_reads_loss_from_the_metric_column(tmp_path: Path) -> None:
    run = read_runlog(write(tmp_path / "wandb_export.csv", WANDB))
    assert run.format == "csv"
    loss = run.get("loss")
    assert loss.key == "myrun - train/loss"
    assert loss.steps.tolist() == [1, 2]
    assert loss.values.tolist() == [2.0, 1.5]
    assert run.get("lr").key == "myrun - lr-AdamW"
    assert run.get("lr").values.tolist() == [0.2, 0.2, 0.1]
    # The band columns are raw series and never candidates for a canonical metric.
    for m in run.mapping.values():
        assert not m["source"].endswith(("__MIN", "__MAX"))
        assert not any(k.endswith(("__MIN", "__MAX")) for k in m["ignored"])
    assert run.get("myrun - train/loss__MIN").values.tolist() == [1.9, 1.4]
    assert run.get("myrun - train/loss__MAX").values.tolist() == [2.1, 1.6]
    assert not run.notes


def test_wandb_band_column_never_becomes_the_loss(tmp_path: Path) -> None:
    # Only band columns for one run, and a metric column for another run that sorts later.
    text = (
        'Step,"a-run - train/loss__MIN","a-run - lr-AdamW__MAX","b-run - train/loss","b-run - lr-AdamW"\n'
        "1,0.1,9.0,2.0,0.5\n2,0.2,9.0,1.0,0.5\n"
    )
    run = read_runlog(write(tmp_path / "wandb.csv", text))
    assert run.get("loss").key == "b-run - train/loss"
    assert run.get("lr").key == "b-run - lr-AdamW"
    assert run.get("lr").values.tolist() == [0.5, 0.5]


# --------------------------------------------------------------------------- sniffing


def test_sniff(tmp_path: Path) -> None:
    p = tmp_path / "x"
    assert csv_reader.sniff(p, SIMPLE)
    assert csv_reader.sniff(p, LIGHTNING)
    assert csv_reader.sniff(p, KERAS)
    assert csv_reader.sniff(p, WANDB)
    assert not csv_reader.sniff(p, '{"step": 1, "loss": 2.0}\n{"step": 2, "loss": 1.0}\n')
    assert not csv_reader.sniff(p, "step,loss\n")  # a header alone
    assert not csv_reader.sniff(p, "just some text\nwith lines\n")
    assert not hf.sniff(p, LIGHTNING) and not jsonl.sniff(p, LIGHTNING)


# --------------------------------------------------------------------------- fuzz


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=600))
def test_arbitrary_bytes_read_or_raise_read_error(tmp_path: Path, data: bytes) -> None:
    p = tmp_path / "metrics.csv"
    p.write_bytes(data)
    for fmt in ("auto", "csv"):
        try:
            read_runlog(p, fmt)
        except ReadError:
            pass


_cell = st.one_of(
    st.just(""),
    st.sampled_from(["nan", "inf", "-inf", "True", "step", "loss", "epoch", '"', "1e400"]),
    st.floats().map(repr),
    st.integers(-5, 10**6).map(str),
    st.text(max_size=4),
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.lists(_cell, min_size=1, max_size=5), max_size=8), delim=st.sampled_from([",", ";", "\t"]))
def test_structured_tables_read_or_raise_read_error(tmp_path: Path, rows, delim) -> None:
    p = tmp_path / "metrics.csv"
    header = delim.join(["step", "loss", "val_loss", "epoch", "lr"])
    p.write_text(
        header + "\n" + "\n".join(delim.join(r) for r in rows) + "\n", encoding="utf-8", errors="surrogatepass"
    )
    try:
        run = read_runlog(p, "csv")
    except ReadError:
        return
    for s in run.series.values():
        assert_repeats_differ(s)
        assert len(s.steps) == len(s.values) == len(s.lines)


# --------------------------------------------------------------------------- corpus (skips without ../shared)


def _corpus_files():
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.glob("csv/*/*") if p.is_file())


@pytest.mark.slow
@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is absent")
@pytest.mark.parametrize("path", _corpus_files(), ids=lambda p: p.parent.name)
def test_corpus_tables_match_csv_module(path: Path) -> None:
    from trainproof import aliases

    with open(path, newline="", encoding="utf-8-sig") as f:
        first = f.readline()
        f.seek(0)
        rows = [
            r for r in pycsv.reader(f, delimiter=csv_reader.delimiter_of(first) or ",") if any(c.strip() for c in r)
        ]
    header, data = [c.strip() for c in rows[0]], rows[1:]
    run = read_runlog(path)
    assert run.format == "csv"
    if not csv_reader._looks_like_header(rows[0]):
        return  # header-less: see test_headerless_*
    if "metric" in header and "value" in header:
        return  # long format: one row per value, see test_long_format_*
    loss = run.get("loss")
    if loss is None:
        # No loss is mapped only when no column is a total loss of this run.
        assert not [
            h
            for h in header
            if (c := aliases.loss_candidate(h)) and c["total"] and c["split"] != "eval" and not aliases.runs_in(header)
        ], header
        return
    torn = any("no line end" in n for n in run.notes)  # a last row cut mid-write is not read
    assert run.records == len(data) - torn
    parts = run.mapping["loss"].get("sum_of") or [loss.key]
    for key in parts:
        col = header.index(key)
        n_cells = sum(1 for r in data if r[col].strip())
        # Every non-empty loss cell is a point unless two rows share a step.
        assert len(loss) <= n_cells
    assert np.all(np.isfinite(loss.values)) or "nan" in path.name or "nan" in path.parent.name
    if not run.explicit_steps and "epoch" in header:
        # The epoch is the x axis (a resumed Keras log repeats epochs: the later row wins).
        assert loss.steps.tolist() == sorted({float(r[header.index("epoch")]) for r in data})


def test_sniff_survives_a_quote_that_swallows_the_line_breaks(tmp_path):
    # Found by Hypothesis: csv.reader joins the quoted lines into one row.
    from trainproof.formats import csv as csv_reader

    assert csv_reader.sniff(tmp_path / "x.csv", '\t"\n\x00') is False
    p = tmp_path / "x.csv"
    p.write_bytes(b'\t"\n\x00')
    from trainproof.api import judge

    assert judge(p).error is not None


# --------------------------------------------------------------------------- header-less tables


def _numbers(rows) -> str:
    return "".join(",".join(repr(v) for v in r) + "\n" for r in rows)


def test_headerless_loss_file_with_total_and_parts(tmp_path: Path) -> None:
    rows = [[a + b, a, b] for a, b in ((1.0 / (i + 1), 0.01 / (i + 1)) for i in range(300))]
    p = write(tmp_path / "loss.csv", _numbers(rows))
    assert csv_reader.sniff(p, p.read_text())
    run = read_runlog(p)
    assert run.format == "csv" and run.records == 300
    assert run.get("loss").values.tolist() == [r[0] for r in rows]
    assert run.get("loss").lines.tolist() == list(range(1, 301))  # line 1 is data
    assert set(run.series) == {"loss", "column 2", "column 3"}
    assert any("sum of columns 2, 3" in n for n in run.notes)


def test_headerless_loss_file_with_a_step_column(tmp_path: Path) -> None:
    rows = [[10 * i, 2.0 - i / 100] for i in range(50)]
    run = read_runlog(write(tmp_path / "train_loss.txt", _numbers(rows)))
    loss = run.get("loss")
    assert loss.steps.tolist() == [10.0 * i for i in range(50)]
    assert loss.values.tolist() == [r[1] for r in rows]


def test_headerless_parts_in_any_column_order(tmp_path: Path) -> None:
    rows = [[a, a + b, b] for a, b in ((1.0 / (i + 1), 0.5) for i in range(40))]
    run = read_runlog(write(tmp_path / "cost.csv", _numbers(rows)))
    assert run.get("loss").values.tolist() == [r[1] for r in rows]
    assert set(run.series) == {"loss", "column 1", "column 3"}


def test_headerless_validation_file_is_an_eval_loss(tmp_path: Path) -> None:
    run = read_runlog(write(tmp_path / "val_loss.csv", _numbers([[i, 1.0 / (i + 1)] for i in range(20)])))
    assert run.get("loss") is None and run.get("eval_loss") is not None


@pytest.mark.parametrize(
    "name,rows,match",
    [
        # A name that says nothing: the columns cannot be named.
        ("data.csv", [[i, 1.0 / (i + 1)] for i in range(20)], "no header"),
        # Three value columns, none the sum of the others: which is the loss is unknown.
        ("loss.csv", [[1.0 / (i + 1), 0.3, 0.9 - i / 100] for i in range(20)], "none is the sum"),
    ],
)
def test_headerless_tables_that_cannot_be_named_are_not_read(tmp_path: Path, name, rows, match) -> None:
    p = write(tmp_path / name, _numbers(rows))
    with pytest.raises(ReadError, match=match):
        read_runlog(p, "csv")


def test_headerless_table_with_a_word_in_it_is_not_read(tmp_path: Path) -> None:
    p = write(tmp_path / "loss.csv", "1.0,0.5\n0.9,abc\n0.8,0.4\n")
    with pytest.raises(ReadError, match="no header"):
        read_runlog(p, "csv")


# --------------------------------------------------------------------------- TSV and padding


def test_catboost_learn_error_tsv(tmp_path: Path) -> None:
    text = "iter\tLogloss\n" + "".join(f"{i}\t{0.69 * 0.99**i:.10f}\n" for i in range(100))
    run = read_runlog(write(tmp_path / "learn_error.tsv", text))
    loss = run.get("loss")
    assert loss.key == "Logloss" and run.mapping["loss"]["how"] == "fallback"
    assert loss.steps.tolist() == list(map(float, range(100)))


def test_space_padded_cells(tmp_path: Path) -> None:
    text = "      epoch,  train_loss_batch,   val_loss\n" + "".join(
        f"{i:>11},{1.0 / (i + 1):>18.6f},{1.1 / (i + 1):>11.6f}\n" for i in range(10)
    )
    run = read_runlog(write(tmp_path / "results.csv", text))
    assert run.get("loss").key == "train_loss_batch"
    assert run.get("eval_loss").values[0] == 1.1


# --------------------------------------------------------------------------- MLflow long format


LONG_HEAD = '"Run","Run ID","metric","step","timestamp","value"\n'


def _long_rows(run: str, rid: str, metric: str, n: int, f) -> str:
    return "".join(f'"{run}","{rid}","{metric}","{10 * (i + 1)}","{1761884192934 + i}","{f(i)}"\n' for i in range(n))


def test_long_format_is_pivoted_into_records(tmp_path: Path) -> None:
    text = (
        LONG_HEAD
        + _long_rows("snake", "f8bb", "loss", 30, lambda i: 2.0 / (i + 1))
        + _long_rows("snake", "f8bb", "eval_loss", 5, lambda i: 2.5 / (i + 1))
    )
    run = read_runlog(write(tmp_path / "loss.csv", text))
    loss = run.get("loss")
    assert loss.steps.tolist() == [10.0 * (i + 1) for i in range(30)]
    assert loss.values.tolist() == [2.0 / (i + 1) for i in range(30)]
    assert run.get("eval_loss").steps.tolist() == [10.0 * (i + 1) for i in range(5)]
    assert "timestamp" not in run.series and "value" not in run.series


def test_long_format_with_several_runs_keeps_one(tmp_path: Path) -> None:
    text = (
        LONG_HEAD
        + _long_rows("a", "id-a", "loss", 10, lambda i: 1.0)
        + _long_rows("b", "id-b", "loss", 25, lambda i: 2.0 / (i + 1))
        + _long_rows("a", "id-a", "loss", 5, lambda i: 9.0)
    )
    run = read_runlog(write(tmp_path / "export.csv", text))
    loss = run.get("loss")
    assert loss.values.tolist() == [2.0 / (i + 1) for i in range(25)]  # run b only, never mixed
    assert any("judged 'id-b'" in n and "'id-a' (15 rows)" in n for n in run.notes)


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.permutations(list(range(6))))
def test_long_format_column_order_changes_nothing(tmp_path: Path, order) -> None:
    cols = ["Run", "Run ID", "metric", "step", "timestamp", "value"]
    rows = [["r", "x", "loss", str(10 * i), str(1000 + i), repr(1.0 / (i + 1))] for i in range(12)]
    text = ",".join(cols[j] for j in order) + "\n" + "".join(",".join(r[j] for j in order) + "\n" for r in rows)
    run = read_runlog(write(tmp_path / "long.csv", text))
    assert run.get("loss").values.tolist() == [1.0 / (i + 1) for i in range(12)]
    assert run.get("loss").steps.tolist() == [10.0 * i for i in range(12)]


def _lightning_epochs(epochs: int, step_every: int, per_epoch: int = 16) -> str:
    """A Lightning CSVLogger file of ``self.log("train_loss", on_step=True,
    on_epoch=True)``: a ``train_loss_step`` row every ``step_every`` optimizer steps and a
    ``train_loss_epoch`` row (and ``val_loss``) at every epoch's end, the loss falling."""
    rows = ["epoch,step,train_loss_epoch,train_loss_step,val_loss"]
    for step in range(epochs * per_epoch):
        epoch = step // per_epoch
        if (step + 1) % step_every == 0:
            rows.append(f"{epoch},{step},,{2.3 * 0.9 ** (step / per_epoch):.4f},")
        if (step + 1) % per_epoch == 0:
            rows.append(f"{epoch},{step},,,{2.4 * 0.9**epoch:.4f}")
            rows.append(f"{epoch},{step},{2.3 * 0.9**epoch:.4f},,")
    return "\n".join(rows) + "\n"


@pytest.mark.parametrize(
    "epochs,step_every,want",
    [
        (20, 50, "train_loss_epoch"),
        (20, 200, "train_loss_epoch"),
        (20, 30, "train_loss_step"),
        (4, 50, "train_loss_step"),
    ],
)
def test_lightning_a_per_step_loss_too_short_to_judge_gives_way_to_the_epoch_loss(
    tmp_path: Path, epochs, step_every, want
) -> None:
    # Lightning's default log_every_n_steps=50 over 20 epochs of 16 batches logs the step
    # loss 6 times and the epoch loss 20 times: the step series left the run unjudged.
    # The step series stays the loss when it has 8 points or more, or when the epoch
    # series is no longer (4 epochs).
    run = read_runlog(write(tmp_path / "metrics.csv", _lightning_epochs(epochs, step_every)))
    assert run.mapping["loss"]["source"] == want
    swapped = [n for n in run.notes if "too few for the trend rules" in n]
    assert bool(swapped) == (want == "train_loss_epoch")
    if want == "train_loss_epoch":
        assert run.get("loss").values.size == epochs
        assert "train_loss_step" in run.mapping["loss"]["ignored"]
        rep = judge_runlog(run)
        assert rep.verdict is not Level.NOT_CHECKED and "TP-LOSS-STOPPED" not in rep.ids()


def test_lightning_a_mapped_step_loss_is_kept_however_short(tmp_path: Path) -> None:
    path = write(tmp_path / "metrics.csv", _lightning_epochs(20, 50))
    run = read_runlog(path, mapping={"loss": "train_loss_step"})
    assert run.mapping["loss"]["source"] == "train_loss_step" and run.get("loss").values.size == 6


def test_lightning_a_short_step_loss_with_a_nan_stays_the_loss(tmp_path: Path) -> None:
    # A non-finite step loss is evidence of its own (TP-NAN): it is not traded for the
    # longer epoch series.
    lines = _lightning_epochs(20, 50).splitlines()
    at = next(i for i, ln in enumerate(lines) if i and ln.split(",")[3])
    parts = lines[at].split(",")
    parts[3] = "nan"
    lines[at] = ",".join(parts)
    run = read_runlog(write(tmp_path / "metrics.csv", "\n".join(lines) + "\n"))
    assert run.mapping["loss"]["source"] == "train_loss_step"
    assert "TP-NAN" in judge_runlog(run).ids()


def test_a_short_loss_is_not_traded_for_another_alias_that_may_be_a_component(tmp_path: Path) -> None:
    # An epoch total `loss` (7 points) beside per-step task losses loss_0 / loss_1: loss_1
    # is an alias only as Coqui's generator loss; elsewhere it is one term of the total,
    # and judging it instead gave a false FAIL (a helper's log). Only the same key at the
    # epoch cadence replaces a short step loss.
    rows = ["step,loss,loss_0,loss_1"]
    for i in range(70):
        rows.append(f"{i},,{1.0 - 0.005 * i:.4f},{0.59 + 0.0075 * i:.4f}")
        if i % 10 == 9:
            rows.append(f"{i},{2.0 - 0.05 * i / 10:.4f},,")
    run = read_runlog(write(tmp_path / "metrics.csv", "\n".join(rows) + "\n"))
    assert run.mapping["loss"]["source"] == "loss"
    assert not [n for n in run.notes if "too few for the trend rules" in n]
