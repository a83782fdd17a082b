"""TensorBoard's download of one scalar chart (its CSV and JSON links): ``Wall time,Step,
Value`` rows, the metric named only by the file (``run-<run>-tag-<tag>.csv``). The exports
are made here by TensorBoard's own scalars plugin from event files a real SummaryWriter
wrote, then read on the pure and the columnar CSV paths."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from trainproof.api import read_runlog
from trainproof.formats import NotALog, detect
from trainproof.formats.csv import tensorboard_export_metric

from conftest import run_cli

pytest.importorskip("tensorboard")
torch_tb = pytest.importorskip("torch.utils.tensorboard")


def _exports(tmp_path: Path, run: str, tag: str, values: list[float]) -> tuple[str, list]:
    """The CSV text and the JSON rows TensorBoard serves for ``tag`` of ``run``."""
    from tensorboard import context as tb_context
    from tensorboard.backend.event_processing import data_provider, plugin_event_multiplexer
    from tensorboard.plugins import base_plugin
    from tensorboard.plugins.scalar.scalars_plugin import OutputFormat, ScalarsPlugin

    logdir = tmp_path / "logs"
    w = torch_tb.SummaryWriter(str(logdir / run))
    for i, v in enumerate(values):
        w.add_scalar(tag, v, 10 * (i + 1))
    w.close()
    mux = plugin_event_multiplexer.EventMultiplexer()
    mux.AddRunsFromDirectory(str(logdir))
    mux.Reload()
    provider = data_provider.MultiplexerDataProvider(mux, str(logdir))
    plugin = ScalarsPlugin(base_plugin.TBContext(data_provider=provider, sampling_hints={"scalars": 100_000}))
    ctx = tb_context.RequestContext()
    body, _ = plugin.scalars_impl(ctx, tag, run, experiment="", output_format=OutputFormat.CSV)
    rows, _ = plugin.scalars_impl(ctx, tag, run, experiment="", output_format=OutputFormat.JSON)
    return body, [list(r) for r in rows]


def _falling(n: int) -> list[float]:
    return [2.0 * math.exp(-i / (n / 4)) + 0.2 for i in range(n)]


@pytest.mark.parametrize("columnar", ["0", "1"])
@pytest.mark.parametrize(
    ("run", "tag", "name", "canonical"),
    [
        ("version_0", "train/loss", "run-version_0-tag-train_loss", "loss"),
        ("validation", "epoch_loss", "run-validation-tag-epoch_loss", "eval_loss"),
        ("train", "epoch_loss", "run-train-tag-epoch_loss", "loss"),
        ("version_0", "val/loss", "val_loss", "eval_loss"),
        # a run named with a word of another metric: the split names the value, not the run
        ("exp2_lr_hot_val", "loss", "run-exp2_lr_hot_val-tag-loss", "eval_loss"),
        ("lr_3e-4_grad_clip", "loss", "run-lr_3e-4_grad_clip-tag-loss", "loss"),
        # a tag that names its own split wins over a run named test (helper 90)
        ("test_run", "Loss/train", "run-test_run-tag-Loss_train", "loss"),
    ],
)
def test_a_tensorboard_export_is_read_with_its_value_named_by_the_file(
    tmp_path, monkeypatch, columnar, run, tag, name, canonical
):
    monkeypatch.setenv("TRAINPROOF_COLUMNAR", columnar)
    values = _falling(120)
    body, rows = _exports(tmp_path, run, tag, values)
    csv_path = tmp_path / f"{name}.csv"
    csv_path.write_bytes(body.encode())  # as served: csv.writer's CRLF line ends
    json_path = tmp_path / f"{name}.json"
    json_path.write_text(json.dumps(rows))
    for path, fmt in ((csv_path, "csv"), (json_path, "columns")):
        assert detect(path).name == fmt
        run_log = read_runlog(path)
        s = run_log.series[canonical]
        assert s.key == tensorboard_export_metric(path)
        assert list(s.steps) == [10.0 * (i + 1) for i in range(len(values))]
        assert np.allclose(s.values, np.float32(values))
        assert "time" in run_log.series


@pytest.mark.parametrize("columnar", ["0", "1"])
def test_the_export_of_a_chart_that_is_no_loss_is_no_run(tmp_path, monkeypatch, columnar):
    # as JSON and as CSV alike (helper 87: the CSV download of a run's lr chart was judged
    # NOT-CHECKED, TP-NO-LOSS, and made doctor exit 2 on a folder of healthy runs)
    monkeypatch.setenv("TRAINPROOF_COLUMNAR", columnar)
    body, rows = _exports(tmp_path / "lr", "version_0", "lr-AdamW", [1e-3] * 20)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    path = downloads / "run-version_0-tag-lr-AdamW.json"
    path.write_text(json.dumps(rows))
    csv_path = downloads / "run-version_0-tag-lr-AdamW.csv"
    csv_path.write_bytes(body.encode())
    for p in (path, csv_path):
        with pytest.raises(NotALog, match="names no loss"):
            read_runlog(p)
    loss = downloads / "run-version_0-tag-train_loss.csv"
    loss.write_bytes(_exports(tmp_path / "loss", "version_0", "train/loss", _falling(40))[0].encode())
    code, out, _, doc = run_cli("doctor", str(downloads), "--json")
    assert code == 0, out[-2000:]
    assert [Path(r["file"]).name for r in doc["reports"]] == [loss.name]
    assert {Path(i["file"]).name for i in doc["ignored"]} >= {path.name, csv_path.name}


@pytest.mark.parametrize(
    ("file", "metric"),
    [
        ("run-.-tag-Loss_train.csv", "Loss_train"),
        ("run-lightning_logs_version_3-tag-val_loss.csv", "val_loss"),
        ("run-validation-tag-epoch_loss.csv", "validation/epoch_loss"),
        ("run-eval-tag-loss.csv.gz", "eval/loss"),
        ("loss_curve.csv", "loss_curve"),
    ],
)
def test_the_metric_name_comes_from_the_file_name(file, metric):
    assert tensorboard_export_metric(Path(file)) == metric


def test_a_table_of_other_columns_keeps_its_own_names(tmp_path):
    p = tmp_path / "run-version_0-tag-train_loss.csv"
    p.write_text("Wall time,Step,Value,extra\n1.0,10,0.5,1\n2.0,20,0.4,1\n")
    assert "Value" in read_runlog(p).series
