"""The reader of a JSON document of metric columns (``trainproof.formats.columns``): Keras'
``History.history`` saved with ``json.dump``, and pandas' ``DataFrame.to_json()``."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from trainproof import api
from trainproof.findings import Level
from trainproof.formats import columns, detect
from trainproof.formats._io import NotALog, ReadError
from trainproof.formats.base import ReadState

from conftest import one


def history(n: int = 30, seed: int = 0) -> dict[str, list[float]]:
    """A Keras-like history of ``n`` epochs: a falling loss and val_loss, a learning rate."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    loss = 1.2 * np.exp(-t / 8) + 0.2 + 0.01 * rng.standard_normal(n)
    return {
        "loss": loss.tolist(),
        "val_loss": (loss + 0.05).tolist(),
        "learning_rate": [1e-3] * n,
    }


@pytest.mark.parametrize("indent", [None, 4])
def test_a_keras_history_dumped_with_json_is_read_one_record_per_epoch(tmp_path, indent):
    h = history()
    p = tmp_path / "history.json"
    p.write_text(json.dumps(h, indent=indent))
    assert detect(p).name == "columns"
    [run] = api.read_runlogs(str(p))
    assert run.format == "columns"
    assert list(run.series["loss"].steps) == [float(i) for i in range(1, 31)]
    assert list(run.series["loss"].values) == pytest.approx(h["loss"])
    assert list(run.series["eval_loss"].values) == pytest.approx(h["val_loss"])
    assert columns.STEPS_NOTE in run.notes
    assert api.judge(p).verdict is Level.PASS


def test_a_pandas_frame_written_with_to_json_is_read_as_its_columns(tmp_path):
    pd = pytest.importorskip("pandas")
    h = history(12)
    p = tmp_path / "history_df.json"
    pd.DataFrame(h).to_json(p)
    [run] = api.read_runlogs(str(p))
    assert run.format == "columns" and len(run.series["loss"]) == 12
    assert list(run.series["loss"].values) == pytest.approx(h["loss"])


def test_a_null_is_a_hole_and_a_nan_token_a_nan(tmp_path):
    h = history(20)
    h["val_loss"][3] = None
    p = tmp_path / "h.json"
    text = json.dumps(h)
    i = text.index("[") + 1
    j = text.index(",", i)
    p.write_text(text[:i] + "NaN" + text[j:])  # the first loss: a NaN token
    [run] = api.read_runlogs(str(p))
    assert math.isnan(run.series["loss"].values[0])
    assert 4.0 not in list(run.series["eval_loss"].steps)
    # a lone non-finite first loss with every later one finite is a running mean printed
    # before its first batch: read as absent by the judge, with a note
    report = api.judge(p)
    assert "TP-NAN" not in {f.id for f in report.findings}
    assert any("read as absent" in n for n in report.notes)
    # the same token at a later loss is a NaN of the run
    k = text.index(",", j + 1)
    p.write_text(text[: j + 1] + "NaN" + text[k:])
    assert one(api.judge(p), "TP-NAN").level is Level.FAIL


def test_a_row_reads_as_a_json_lines_record_does(tmp_path):
    # A 400-digit integer is the float it rounds to (inf), not an OverflowError; a
    # missing-value word is a hole; a string holding a number is that number.
    text = json.dumps({"loss": ["0.5", 0.4, "None", 0.3], "val_loss": [0.6, 0.5, 0.4, 0.35]})
    p = tmp_path / "h.json"
    p.write_text(text.replace("0.4,", "1" + "0" * 400 + ",", 1))
    [run] = api.read_runlogs(str(p))
    assert list(run.series["loss"].steps) == [1.0, 2.0, 4.0]
    assert run.series["loss"].values[0] == 0.5 and math.isinf(run.series["loss"].values[1])


def test_a_column_that_counts_steps_gives_the_steps(tmp_path):
    h = history(10)
    h["step"] = [100 * (i + 1) for i in range(10)]
    p = tmp_path / "h.json"
    p.write_text(json.dumps(h))
    [run] = api.read_runlogs(str(p))
    assert list(run.series["loss"].steps) == [100.0 * (i + 1) for i in range(10)]
    assert columns.STEPS_NOTE not in run.notes


@pytest.mark.parametrize(
    "doc",
    [
        {"hidden_sizes": [64, 128], "dropouts": [0.1, 0.2]},  # a model config: no loss column
        {"loss": [0.5, 0.4, 0.3], "val_loss": [0.6, 0.5]},  # columns of different lengths
        {"loss": [0.5, 0.4], "name": "run-1"},  # a value that is no column
    ],
)
def test_what_is_no_document_of_metric_columns_is_not_a_log(tmp_path, doc):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(NotALog):
        list(columns.read(p, ReadState()))


def test_a_folder_with_a_history_and_a_config_judges_the_history_only(tmp_path):
    (tmp_path / "history.json").write_text(json.dumps(history()))
    (tmp_path / "config.json").write_text(json.dumps({"hidden_sizes": [64, 128], "dropouts": [0.1, 0.2]}))
    (tmp_path / "tokenizer.json").write_text(json.dumps({"version": "1.0", "model": {"vocab": {"a": 0}}}))
    reports, ignored = api.doctor(tmp_path)
    assert [os.path.basename(r.file) for r in reports] == ["history.json"]
    assert reports[0].verdict is Level.PASS and reports[0].error is None
    assert {os.path.basename(x["file"]) for x in ignored} == {"config.json", "tokenizer.json"}


@pytest.mark.parametrize(
    "head",
    [
        '{"best_metric": null, "log_history": [{"loss": 1.0, "step": 1}]}',  # HF trainer_state.json
        '{"loss": 0.5, "_step": 10}',  # a W&B summary: scalars
        '{"loss": 0.5, "step": 1}\n{"loss": 0.4, "step": 2}\n',  # JSON lines
    ],
)
def test_other_json_is_not_sniffed(tmp_path, head):
    assert not columns.sniff(tmp_path / "x.json", head)


def test_a_document_over_the_cap_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.setattr(columns, "MAX_BYTES", 1000)
    p = tmp_path / "h.json"
    p.write_text(json.dumps(history(200)))
    with pytest.raises(ReadError, match="larger than"):
        list(columns.read(p, ReadState()))


@pytest.mark.slow
def test_a_real_keras_history_saved_with_json_dump_is_judged(tmp_path):
    os.environ.setdefault("KERAS_BACKEND", "torch")
    pytest.importorskip("torch")
    keras = pytest.importorskip("keras")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 8)).astype("float32")
    y = (x @ rng.standard_normal(8)).astype("float32")
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse")
    hist = model.fit(x, y, epochs=12, batch_size=32, validation_split=0.25, verbose=0)
    p = tmp_path / "history.json"
    with open(p, "w") as f:
        json.dump(hist.history, f)
    [run] = api.read_runlogs(str(p))
    assert run.format == "columns" and len(run.series["loss"]) == 12
    assert list(run.series["loss"].values) == pytest.approx(hist.history["loss"])
    assert api.judge(p).verdict is not Level.FAIL


def chainer_log(n: int = 20, nan_from: int | None = None) -> list[dict]:
    """Chainer's LogReport file: one object per report (every epoch of 32 iterations)."""
    rows = []
    for e in range(1, n + 1):
        loss = 2.0 * math.exp(-e / 6) + 0.1 + 0.01 * ((e * 7) % 3)
        if nan_from is not None and e >= nan_from:
            loss = float("nan")
        rows.append(
            {
                "main/loss": loss,
                "main/accuracy": 0.9,
                "validation/main/loss": loss + 0.05,
                "epoch": e,
                "iteration": 32 * e,
                "elapsed_time": 1.9 * e,
            }
        )
    return rows


def test_chainer_logreport_an_array_of_records_is_read_and_found_by_doctor(tmp_path):
    result = tmp_path / "result"
    result.mkdir()
    (result / "log").write_text(json.dumps(chainer_log(), indent=4))
    assert detect(result / "log").name == "columns"
    rl = api.read_runlog(result / "log")
    assert rl.series["loss"].key == "main/loss" and rl.series["eval_loss"].key == "validation/main/loss"
    assert rl.series["loss"].steps.tolist() == [32.0 * e for e in range(1, 21)]
    reports, _ = api.doctor(tmp_path)
    assert [os.path.basename(r.file) for r in reports] == ["log"] and reports[0].verdict is Level.PASS
    # json.dump writes NaN as a bare token: a run whose loss turns NaN fails
    (result / "log").write_text(json.dumps(chainer_log(nan_from=12), indent=4))
    assert "TP-NAN" in api.judge(result / "log").ids()


@pytest.mark.parametrize(
    "doc",
    [
        [{"text": "a sentence", "label": 1}, {"text": "another", "label": 0}],  # data examples: no loss key
        [{"loss": 0.5, "step": 1}, 3],  # an element that is no object
    ],
)
def test_an_array_that_holds_no_metric_records_is_not_a_log(tmp_path, doc):
    p = tmp_path / "data.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(NotALog):
        list(columns.read(p, ReadState()))
