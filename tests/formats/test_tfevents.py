"""The TensorBoard event-file reader (trainproof.formats.tfevents, _tfrecord, _event_proto).

Event files are written by the real writers: ``torch.utils.tensorboard.SummaryWriter``,
TensorBoard's own ``EventFileWriter`` with ``Event`` protos built from
``tensorboard.compat.proto`` (for the tensor dtypes no high-level writer emits), and
tensorboardX when it is installed. TensorBoard's own loader
(``plugin_event_accumulator``) is the reference the values are checked against.
"""

from __future__ import annotations

import json
import math
import struct
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tensorboard.backend.event_processing import plugin_event_accumulator as pea
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util import tensor_util
from torch.utils.tensorboard import SummaryWriter

from trainproof.api import doctor, judge, read_runlog
from trainproof.formats import NotALog, ReadError, detect, tfevents
from trainproof.formats._tfrecord import masked_crc

from conftest import run_cli

f32 = lambda v: float(np.float32(v))  # noqa: E731 - what a simple_value stores


def event_files(logdir: Path) -> list[Path]:
    return sorted(p for p in logdir.iterdir() if p.is_file() and p.name.startswith("events.out.tfevents"))


def one_event_file(logdir: Path) -> Path:
    (p,) = event_files(logdir)
    return p


def write_torch(logdir: Path, scalars: list[tuple[str, float, int]], **add_kw) -> Path:
    """Write ``(tag, value, step)`` scalars with torch's SummaryWriter; return the event file."""
    with SummaryWriter(str(logdir)) as w:
        for tag, value, step in scalars:
            w.add_scalar(tag, value, step, **add_kw)
    return one_event_file(logdir)


def record_spans(data: bytes) -> list[tuple[int, int]]:
    """``(start, end)`` of every TFRecord in ``data``, walked from the length fields alone."""
    spans, pos = [], 0
    while pos < len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        spans.append((pos, pos + 12 + n + 4))
        pos += 12 + n + 4
    assert pos == len(data)
    return spans


def frame(payload: bytes) -> bytes:
    """One TFRecord around ``payload`` with correct checksums."""
    header = struct.pack("<Q", len(payload))
    return header + struct.pack("<I", masked_crc(header)) + payload + struct.pack("<I", masked_crc(payload))


def series_by_key(run) -> dict:
    return {s.key: s for s in run.series.values()}


def tensorboard_scalars(path: Path) -> dict[str, list[tuple[int, float]]]:
    """What TensorBoard's own loader reads as scalars: tag -> [(step, value)] in file order."""
    acc = pea.EventAccumulator(str(path), size_guidance={pea.TENSORS: 0}, purge_orphaned_data=False)
    acc.Reload()
    out = {}
    for tag in acc.Tags()["tensors"]:
        if acc.SummaryMetadata(tag).plugin_data.plugin_name != "scalars":
            continue
        out[tag] = [(e.step, float(tensor_util.make_ndarray(e.tensor_proto).item())) for e in acc.Tensors(tag)]
    return out


def kept_per_step(pairs: list[tuple[int, float]]) -> tuple[list[float], list[float]]:
    """The points a series keeps of ``(step, value)`` pairs in file order (runlog's
    "Repeated steps"): where the step goes back a resume begins, a step written in several
    segments keeps the latest segment's writes, and identical writes of a step are kept
    once (the last); sorted by step, stream order within a step."""
    segs, seg = [], 0
    for i, (s, _) in enumerate(pairs):
        seg += i > 0 and s < pairs[i - 1][0]
        segs.append(seg)
    latest = {s: g for (s, _), g in zip(pairs, segs)}
    kept: dict[int, list[float]] = {}
    for (s, v), g in zip(pairs, segs):
        if g == latest[s]:
            vals = kept.setdefault(s, [])
            vals[:] = [x for x in vals if not (x == v or (math.isnan(x) and math.isnan(v)))] + [v]
    steps = sorted(kept)
    return [float(s) for s in steps for _ in kept[s]], [v for s in steps for v in kept[s]]


def same_values(a, b) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


# --------------------------------------------------------------------------- real writers: torch


def test_torch_add_scalar_simple_value(tmp_path: Path) -> None:
    values = [2.5, 1.1, 0.7, 0.30000001, 1e-7, 0.0, -3.25]
    p = write_torch(tmp_path, [("train/loss", v, 10 * i) for i, v in enumerate(values)])
    run = read_runlog(p)
    assert run.format == "tfevents"
    loss = run.get("loss")
    assert loss.key == "train/loss"
    assert loss.steps.tolist() == [10.0 * i for i in range(len(values))]
    # simple_value is a float32: 1.1 comes back as float32(1.1), not 1.1.
    assert loss.values.tolist() == [f32(v) for v in values]
    assert loss.values[1] != 1.1
    # Line = record index; record 1 is the file_version header.
    assert loss.lines.tolist() == list(range(2, 2 + len(values)))
    assert run.records == len(values)
    assert run.meta["event_files"] == [p.name]
    assert not run.notes


@pytest.mark.parametrize("stop,every", [(50, 1), (350, 10)])
def test_a_loss_that_stops_while_other_tags_go_on_is_told(tmp_path: Path, stop: int, every: int) -> None:
    # Each tag of an event file is its own column with its own steps: the loss stopping at
    # step 50 while the learning rate went on to 100 PASSed on the first half, silently
    # (the same data as JSONL WARNed TP-LOSS-STOPPED).
    end = 2 * stop
    scalars = [("train/learning_rate", 1e-3, s) for s in range(every, end + 1, every)]
    scalars += [("train/loss", 2.0 * 0.98 ** (s / every), s) for s in range(every, stop + 1, every)]
    rep = judge(write_torch(tmp_path / "stops", scalars))
    f = next(f for f in rep.findings if f.id == "TP-LOSS-STOPPED")
    assert f.data["step"] == stop and f.data["last_step"] == end
    # The positive control: both tags to the end, or the other tag one step further (a
    # final summary at the last step), is no stop.
    full = [(t, v, s) for t, v, s in scalars if t != "train/loss"]
    full += [("train/loss", 2.0 * 0.98 ** (s / every), s) for s in range(every, end + 1, every)]
    assert "TP-LOSS-STOPPED" not in judge(write_torch(tmp_path / "full", full)).ids()
    summary = [(t, v, s) for t, v, s in full if t == "train/loss" or s <= end - every] + [("train/runtime", 12.0, end)]
    assert "TP-LOSS-STOPPED" not in judge(write_torch(tmp_path / "summary", summary)).ids()


def test_tags_of_another_cadence_are_no_log_going_on_without_the_loss(tmp_path: Path) -> None:
    # Keras's TensorBoard callback with update_freq="batch": epoch_loss at epochs 0..19 and
    # batch_loss / batch_accuracy at batches 0..1999 of the same file; the loss read is the
    # epoch's, and the batch tags count on another axis.
    scalars = []
    for e in range(20):
        scalars += [("batch_loss", 2.0 * 0.999 ** (100 * e + b) + 0.3, 100 * e + b) for b in range(0, 100, 10)]
        scalars += [("batch_accuracy", 0.5, 100 * e + b) for b in range(0, 100, 10)]
        scalars += [("epoch_loss", 2.0 * 0.999 ** (100 * e + 50) + 0.3, e), ("epoch_learning_rate", 1e-3, e)]
    rep = judge(write_torch(tmp_path / "keras", scalars))
    assert rep.mapping["loss"]["source"] == "epoch_loss"
    assert "TP-LOSS-STOPPED" not in rep.ids()


def test_torch_new_style_tensor_scalars(tmp_path: Path) -> None:
    p = write_torch(tmp_path, [("loss", 1.1, 1), ("loss", 0.9, 2), ("loss", 0.123456789, 3)], new_style=True)
    run = read_runlog(p)
    assert run.get("loss").values.tolist() == [f32(1.1), f32(0.9), f32(0.123456789)]
    assert run.get("loss").steps.tolist() == [1.0, 2.0, 3.0]


def test_torch_new_style_double_precision_is_exact(tmp_path: Path) -> None:
    p = write_torch(tmp_path, [("loss", 0.1, 1), ("loss", 1 / 3, 2)], new_style=True, double_precision=True)
    run = read_runlog(p)
    assert run.get("loss").values.tolist() == [0.1, 1 / 3]  # DT_DOUBLE double_val: no float32 rounding


def test_values_equal_tensorboards_own_loader(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        for s in range(20):
            w.add_scalar("train/loss", 3.0 / (s + 1), s)
            w.add_scalar("train/lr", 1e-4 * (s % 5), s, new_style=True)
            if s % 5 == 4:
                w.add_scalar("val/loss", 2.0 - s / 50, s, new_style=True, double_precision=True)
    p = one_event_file(tmp_path)
    want = tensorboard_scalars(p)
    assert set(want) == {"train/loss", "train/lr", "val/loss"}
    got = series_by_key(read_runlog(p))
    assert set(got) == set(want)
    for tag, pairs in want.items():
        steps, vals = kept_per_step(pairs)
        assert got[tag].steps.tolist() == steps, tag
        assert got[tag].values.tolist() == vals, tag


def test_nan_and_inf_survive_both_encodings(tmp_path: Path) -> None:
    bad = [float("nan"), float("inf"), float("-inf"), 1.0]
    with SummaryWriter(str(tmp_path)) as w:
        for i, v in enumerate(bad):
            w.add_scalar("loss", v, i)
            w.add_scalar("val_loss", v, i, new_style=True)
            w.add_scalar("grad_norm", v, i, new_style=True, double_precision=True)
    run = read_runlog(one_event_file(tmp_path))
    for name in ("loss", "eval_loss", "grad_norm"):
        v = run.get(name).values
        assert np.isnan(v[0]) and v[1] == math.inf and v[2] == -math.inf and v[3] == 1.0, name
    assert not run.notes  # a non-finite value is data, not a parse problem


def test_non_finite_loss_fails_the_run_through_the_cli(tmp_path: Path) -> None:
    vals = [2.0 - i * 0.05 for i in range(30)] + [float("nan")] * 3
    p = write_torch(tmp_path, [("train/loss", v, i) for i, v in enumerate(vals)])
    code, _, _, doc = run_cli("epoch", str(p), "--json")
    assert code == 1
    rep = doc["reports"][0]
    assert rep["format"] == "tfevents" and rep["verdict"] == "FAIL"
    nan = [f for f in rep["findings"] if f["id"] == "TP-NAN"]
    assert nan and nan[0]["step"] == 30


def test_add_scalars_writes_one_sub_run_per_series(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        for s in range(3):
            w.add_scalar("train/loss", 1.0 - s / 10, s)
            w.add_scalars("loss", {"train": 1.0 + s, "val": 2.0 + s}, s)
    # TensorBoard shows add_scalars as runs "<logdir>/loss_train" and "<logdir>/loss_val",
    # each in its own folder with the main tag; each file alone reads as its own series.
    sub_train = one_event_file(tmp_path / "loss_train")
    sub_val = one_event_file(tmp_path / "loss_val")
    assert series_by_key(read_runlog(sub_train))["loss"].values.tolist() == [1.0, 2.0, 3.0]
    assert series_by_key(read_runlog(sub_val))["loss"].values.tolist() == [2.0, 3.0, 4.0]
    # The log dir reads them as writers of its run, their tags under the folder's name;
    # its own train/loss stays the loss.
    run = read_runlog(tmp_path)
    assert run.meta["event_files"] == [
        one_event_file(tmp_path).name,
        f"loss_train/{sub_train.name}",
        f"loss_val/{sub_val.name}",
    ]
    assert series_by_key(run).keys() == {"train/loss", "loss_train/loss", "loss_val/loss"}
    assert run.get("loss").values.tolist() == [1.0, f32(0.9), f32(0.8)]


def test_histograms_images_text_and_hparams_are_skipped(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    with SummaryWriter(str(tmp_path)) as w:
        for s in range(4):
            w.add_histogram("weights", rng.standard_normal(100), s)
            w.add_scalar("train/loss", 4.0 - s, s)
            w.add_image("sample", rng.random((3, 8, 8)), s)
            w.add_text("notes", f"step {s}: 1.5", s)
        w.add_hparams({"lr": 0.01, "bs": 8}, {"hparam/acc": 0.75})
    main = one_event_file(tmp_path)
    run = read_runlog(main)
    assert series_by_key(run).keys() == {"train/loss"}
    assert run.records == 4
    assert run.get("loss").values.tolist() == [4.0, 3.0, 2.0, 1.0]
    assert not any("not valid Event" in n for n in run.notes)
    # add_hparams writes its own sub-run: hparams plugin summaries plus the metric scalar,
    # in a folder named by the time (a run of its own, not a writer of the log dir's run).
    (hp_dir,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    hp = read_runlog(one_event_file(hp_dir))
    assert {k: s.values.tolist() for k, s in series_by_key(hp).items()} == {"hparam/acc": [0.75]}
    assert series_by_key(read_runlog(tmp_path)).keys() == {"train/loss"}


def test_lightning_hp_metric_placeholder_is_ignored(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        w.add_scalar("hp_metric", -1, 0)
        for s in range(49, 300, 50):
            w.add_scalar("train_loss", 1.0 / s, s)
            w.add_scalar("lr-AdamW", 1e-3, s)
            w.add_scalar("epoch", s // 100, s)
    run = read_runlog(one_event_file(tmp_path))
    assert "hp_metric" not in series_by_key(run)
    assert run.get("loss").key == "train_loss"
    assert run.get("lr").key == "lr-AdamW"
    assert run.get("epoch").values.tolist() == [0.0, 0.0, 1.0, 1.0, 2.0, 2.0]
    assert run.step_range == (49.0, 299.0)  # the hp_metric record at step 0 is not a record


def test_hparams_only_file_is_no_records(tmp_path: Path) -> None:
    p = write_torch(tmp_path, [("hp_metric", -1, 0)])
    run = read_runlog(p)
    assert run.records == 0
    assert run.notes == [f"{p.name}: 2 event records, no scalars but hp_metric (a placeholder)"]
    code, _, _, doc = run_cli("epoch", str(p), "--json")
    assert code == 2
    assert doc["reports"][0]["findings"][0]["id"] == "TP-NO-RECORDS"


@pytest.mark.parametrize(
    ("tag", "canonical"),
    [
        ("train/loss", "loss"),
        ("Loss/train", "loss"),
        ("train_loss", "loss"),
        ("val/loss", "eval_loss"),
        ("Loss/val", "eval_loss"),
        ("lr-AdamW", "lr"),
        ("train/learning_rate", "lr"),
        ("train/grad_norm", "grad_norm"),
        ("epoch_loss", "loss"),
    ],
)
def test_tags_map_to_canonical_names(tmp_path: Path, tag: str, canonical: str) -> None:
    p = write_torch(tmp_path, [(tag, 0.5, 1), (tag, 0.25, 2)])
    run = read_runlog(p)
    s = run.get(canonical)
    assert s is not None and s.key == tag
    assert s.values.tolist() == [0.5, 0.25]
    assert run.mapping[canonical]["source"] == tag


def test_event_file_recognised_by_content_whatever_its_name(tmp_path: Path) -> None:
    p = write_torch(tmp_path / "w", [("loss", 1.0, 1)])
    renamed = tmp_path / "run.bin"
    renamed.write_bytes(p.read_bytes())
    assert detect(renamed) is tfevents
    assert read_runlog(renamed).get("loss").values.tolist() == [1.0]


@pytest.mark.slow
def test_records_spanning_the_read_chunk_are_read(tmp_path: Path) -> None:
    # Text summaries of 1.5 MB between scalars push records across the reader's 4 MB chunks.
    big = "x" * 1_500_000
    with SummaryWriter(str(tmp_path)) as w:
        for s in range(8):
            w.add_scalar("loss", 1.0 / (s + 1), s)
            w.add_text("blob", big, s)
    p = one_event_file(tmp_path)
    assert p.stat().st_size > 2 * (1 << 22)
    run = read_runlog(p)
    assert run.get("loss").values.tolist() == [f32(1.0 / (s + 1)) for s in range(8)]
    assert not run.notes


# --------------------------------------------------------------------------- real writer: tensorboardX


def test_tensorboardx_writer(tmp_path: Path) -> None:
    tbx = pytest.importorskip("tensorboardX")
    with tbx.SummaryWriter(str(tmp_path)) as w:
        for s in range(5):
            w.add_scalar("train/loss", 2.0 / (s + 1), s)
            w.add_scalar("train/lr", 3e-4, s)
            w.add_histogram("w", np.arange(10.0), s)
        w.add_scalar("train/loss", float("nan"), 5)
        # With a display name tensorboardX stores metadata next to the simple_value.
        w.add_scalar("val/loss", 0.75, 5, display_name="validation loss")
    p = one_event_file(tmp_path)
    run = read_runlog(p)
    assert run.format == "tfevents"
    loss = run.get("loss")
    assert loss.steps.tolist() == [0, 1, 2, 3, 4, 5]
    assert same_values(loss.values, [f32(2.0 / (s + 1)) for s in range(5)] + [math.nan])
    assert run.get("lr").values.tolist() == [f32(3e-4)] * 5
    assert run.get("eval_loss").values.tolist() == [0.75]
    want = tensorboard_scalars(p)
    for tag, pairs in want.items():
        steps, vals = kept_per_step(pairs)
        assert same_values(series_by_key(run)[tag].values, vals), tag


# --------------------------------------------------------------------------- hand-built Events: dtypes


def _shape(*dims: int) -> tensor_shape_pb2.TensorShapeProto:
    return tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in dims])


SCALARS_META = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))


def write_events(logdir: Path, events: list[event_pb2.Event], suffix: str = "") -> Path:
    w = EventFileWriter(str(logdir), filename_suffix=suffix)
    for e in events:
        w.add_event(e)
    w.close()
    return one_event_file(logdir) if not suffix else next(p for p in event_files(logdir) if p.name.endswith(suffix))


def tensor_event(tag: str, step: int, tensor: tensor_pb2.TensorProto, meta=SCALARS_META) -> event_pb2.Event:
    value = summary_pb2.Summary.Value(tag=tag, tensor=tensor)
    if meta is not None:
        value.metadata.CopyFrom(meta)
    return event_pb2.Event(wall_time=time.time(), step=step, summary=summary_pb2.Summary(value=[value]))


def _half_bits(v: float) -> int:
    return int(np.array(v, dtype=np.float16).view(np.uint16))


def _bf16_bits(v: float) -> int:
    return int(np.array(v, dtype=np.float32).view(np.uint32)) >> 16


T = tensor_pb2.TensorProto
DTYPE_CASES = [
    ("float_val", T(dtype=types_pb2.DT_FLOAT, float_val=[1.1]), f32(1.1)),
    ("float_content", T(dtype=types_pb2.DT_FLOAT, tensor_content=np.float32(2.5).tobytes()), 2.5),
    ("double_val", T(dtype=types_pb2.DT_DOUBLE, double_val=[0.1]), 0.1),
    (
        "double_content",
        T(dtype=types_pb2.DT_DOUBLE, tensor_content=np.float64(1 / 3).tobytes(), tensor_shape=_shape(1)),
        1 / 3,
    ),
    ("half_val", T(dtype=types_pb2.DT_HALF, half_val=[_half_bits(0.333)]), float(np.float16(0.333))),
    ("half_content", T(dtype=types_pb2.DT_HALF, tensor_content=np.float16(-1.5).tobytes()), -1.5),
    ("half_inf", T(dtype=types_pb2.DT_HALF, half_val=[_half_bits(math.inf)]), math.inf),
    ("bfloat16_val", T(dtype=types_pb2.DT_BFLOAT16, half_val=[_bf16_bits(1.5)]), 1.5),
    ("bfloat16_content", T(dtype=types_pb2.DT_BFLOAT16, tensor_content=struct.pack("<H", _bf16_bits(-0.75))), -0.75),
    ("int64_val", T(dtype=types_pb2.DT_INT64, int64_val=[-7]), -7.0),
    ("int64_big", T(dtype=types_pb2.DT_INT64, int64_val=[2**40 + 1]), float(2**40 + 1)),
    ("int64_content", T(dtype=types_pb2.DT_INT64, tensor_content=np.int64(-123456789).tobytes()), -123456789.0),
    ("int32_negative", T(dtype=types_pb2.DT_INT32, int_val=[-5]), -5.0),
    ("uint8_content", T(dtype=types_pb2.DT_UINT8, tensor_content=bytes([200])), 200.0),
    ("uint64_val", T(dtype=types_pb2.DT_UINT64, uint64_val=[2**63 + 2]), float(2**63 + 2)),
    ("shape_1x1", T(dtype=types_pb2.DT_FLOAT, float_val=[4.0], tensor_shape=_shape(1, 1)), 4.0),
]


@pytest.mark.parametrize(("name", "tensor", "want"), DTYPE_CASES, ids=[c[0] for c in DTYPE_CASES])
def test_scalar_tensor_dtypes(tmp_path: Path, name: str, tensor, want: float) -> None:
    p = write_events(tmp_path, [tensor_event("loss", 3, tensor)])
    run = read_runlog(p)
    assert run.get("loss").steps.tolist() == [3.0]
    got = run.get("loss").values[0]
    assert got == want, (name, got, want)
    # The reference: TensorBoard reads the same number (its TF-free tensor_util cannot
    # decode bfloat16 or uint64, so those two are checked against numpy above only).
    if not name.startswith(("bfloat16", "uint64")):
        assert tensorboard_scalars(p)["loss"] == [(3, want)]


NOT_SCALARS = [
    ("string", T(dtype=types_pb2.DT_STRING, string_val=[b"1.5"])),
    ("bool", T(dtype=types_pb2.DT_BOOL, bool_val=[True])),
    ("two_elements", T(dtype=types_pb2.DT_FLOAT, float_val=[1.0, 2.0], tensor_shape=_shape(2))),
    ("zero_elements", T(dtype=types_pb2.DT_FLOAT, float_val=[1.0], tensor_shape=_shape(0))),
    ("content_wrong_size", T(dtype=types_pb2.DT_FLOAT, tensor_content=b"\x00\x00\x80\x3f\x00")),
    (
        "unknown_rank",
        T(dtype=types_pb2.DT_FLOAT, float_val=[1.0], tensor_shape=tensor_shape_pb2.TensorShapeProto(unknown_rank=True)),
    ),
    ("complex", T(dtype=types_pb2.DT_COMPLEX64, scomplex_val=[1.0, 0.0])),
]


@pytest.mark.parametrize(("name", "tensor"), NOT_SCALARS, ids=[c[0] for c in NOT_SCALARS])
def test_tensors_that_are_not_one_number_are_skipped(tmp_path: Path, name: str, tensor) -> None:
    good = tensor_event("loss", 1, T(dtype=types_pb2.DT_FLOAT, float_val=[0.5]))
    p = write_events(tmp_path, [good, tensor_event("weird", 2, tensor)])
    run = read_runlog(p)
    assert set(series_by_key(run)) == {"loss"}, name
    assert not any("not valid Event" in n for n in run.notes)


def test_plugin_metadata_only_on_a_tags_first_value(tmp_path: Path) -> None:
    # TF2 writes the "scalars" metadata with the first value of a tag only.
    events = [tensor_event("loss", 1, T(dtype=types_pb2.DT_FLOAT, float_val=[3.0]))]
    events += [tensor_event("loss", s, T(dtype=types_pb2.DT_FLOAT, float_val=[3.0 - s / 2]), meta=None) for s in (2, 3)]
    p = write_events(tmp_path, events)
    assert read_runlog(p).get("loss").values.tolist() == [3.0, 2.0, 1.5]


def test_tensor_of_another_plugin_is_not_a_scalar(tmp_path: Path) -> None:
    text_meta = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="text"))
    events = [
        tensor_event("loss", 1, T(dtype=types_pb2.DT_FLOAT, float_val=[1.0])),
        tensor_event("count", 1, T(dtype=types_pb2.DT_FLOAT, float_val=[9.0]), meta=text_meta),
        tensor_event("nometa", 1, T(dtype=types_pb2.DT_FLOAT, float_val=[9.0]), meta=None),
    ]
    run = read_runlog(write_events(tmp_path, events))
    assert set(series_by_key(run)) == {"loss"}


def test_event_without_step_and_negative_step(tmp_path: Path) -> None:
    e0 = event_pb2.Event(
        wall_time=time.time(),
        summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="loss", simple_value=2.0)]),
    )
    e1 = event_pb2.Event(
        wall_time=time.time(),
        step=-3,
        summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="loss", simple_value=4.0)]),
    )
    e2 = event_pb2.Event(wall_time=time.time(), step=5)  # neither summary nor value
    run = read_runlog(write_events(tmp_path, [e0, e1, e2]))
    assert run.get("loss").steps.tolist() == [-3.0, 0.0]
    assert run.get("loss").values.tolist() == [4.0, 2.0]


def test_several_values_in_one_event(tmp_path: Path) -> None:
    e = event_pb2.Event(
        wall_time=time.time(),
        step=7,
        summary=summary_pb2.Summary(
            value=[
                summary_pb2.Summary.Value(tag="train/loss", simple_value=1.5),
                summary_pb2.Summary.Value(tag="train/lr", simple_value=0.5),
            ]
        ),
    )
    run = read_runlog(write_events(tmp_path, [e]))
    assert run.get("loss").values.tolist() == [1.5] and run.get("lr").values.tolist() == [0.5]
    assert run.get("loss").steps.tolist() == run.get("lr").steps.tolist() == [7.0]


# --------------------------------------------------------------------------- broken files


@pytest.fixture
def ten_steps(tmp_path: Path) -> tuple[bytes, list[tuple[int, int]]]:
    p = write_torch(tmp_path / "src", [("train/loss", 1.0 + s / 4, s) for s in range(10)])
    data = p.read_bytes()
    spans = record_spans(data)
    assert len(spans) == 11  # file_version + 10 scalars
    return data, spans


def _write(tmp_path: Path, data: bytes, name: str = "events.out.tfevents.1700000000.host.1.0") -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


@pytest.mark.parametrize(
    ("where", "cut", "reason"),
    [
        ("mid-header", lambda s, e: s + 5, "ends inside a record header"),
        ("after-header", lambda s, e: s + 12, "ends inside the record"),
        ("mid-payload", lambda s, e: s + 12 + (e - s - 16) // 2, "ends inside the record"),
        ("mid-crc", lambda s, e: e - 2, "ends inside the record"),
    ],
)
def test_truncated_last_record_keeps_the_records_before(tmp_path: Path, ten_steps, where, cut, reason) -> None:
    data, spans = ten_steps
    start, end = spans[-1]
    n = cut(start, end)
    p = _write(tmp_path, data[:n])
    run = read_runlog(p)
    loss = run.get("loss")
    assert loss.steps.tolist() == list(range(9)), where
    assert loss.values.tolist() == [1.0 + s / 4 for s in range(9)]
    (note,) = run.notes
    assert "reading stopped after 10 records" in note
    assert reason in note
    assert f"{n - start} bytes dropped" in note
    # A torn tail is not a reason to refuse judging: the CLI judges the good records.
    code, _, _, doc = run_cli("epoch", str(p), "--json")
    assert code in (0, 1)
    assert doc["reports"][0]["error"] is None
    assert any("bytes dropped" in x for x in doc["reports"][0]["notes"])


def test_flipped_payload_byte_stops_reading_there(tmp_path: Path, ten_steps) -> None:
    data, spans = ten_steps
    start, end = spans[6]  # the record of step 5
    b = bytearray(data)
    b[start + 14] ^= 0x01
    run = read_runlog(_write(tmp_path, bytes(b)))
    assert run.get("loss").steps.tolist() == [0, 1, 2, 3, 4]
    (note,) = run.notes
    assert "reading stopped after 6 records" in note
    assert "record 7: the payload checksum does not match" in note
    assert f"{len(data) - start} bytes dropped" in note


def test_flipped_length_byte_stops_reading_there(tmp_path: Path, ten_steps) -> None:
    data, spans = ten_steps
    start, _ = spans[3]
    b = bytearray(data)
    b[start] ^= 0x40
    run = read_runlog(_write(tmp_path, bytes(b)))
    assert run.get("loss").steps.tolist() == [0, 1]
    assert "record 4: the length checksum does not match" in run.notes[0]


def test_damaged_first_record_is_a_read_error(tmp_path: Path, ten_steps) -> None:
    data, spans = ten_steps
    b = bytearray(data)
    b[14] ^= 0xFF
    p = _write(tmp_path, bytes(b))
    with pytest.raises(ReadError, match="no complete event record: record 1: the payload checksum"):
        read_runlog(p)
    with pytest.raises(ReadError, match="no complete event record: the file ends inside a record header"):
        read_runlog(_write(tmp_path, data[:5], "events.out.tfevents.1700000000.host.1.5"))


def test_empty_event_file(tmp_path: Path) -> None:
    p = _write(tmp_path, b"")
    with pytest.raises(ReadError, match="empty file"):
        read_runlog(p)
    rep = judge(p)
    assert rep.error == "empty file" and rep.verdict.value == "NOT-CHECKED"
    code, _, err, _ = run_cli("epoch", str(p))
    assert code == 2 and "empty file" in err


@pytest.mark.parametrize(
    ("content", "name"),
    [
        (b"\x00" * 4096, "events.out.tfevents.1700000000.host.1.0"),
        (b"hello, this is not a TFRecord\n" * 20, "events.out.tfevents.1700000000.host.1.0"),
        (bytes(range(256)) * 8, "events.out.tfevents.1700000000.host.1.0"),
    ],
    ids=["zeros", "text", "binary"],
)
def test_not_tfrecord_is_a_one_line_read_error(tmp_path: Path, content: bytes, name: str) -> None:
    p = _write(tmp_path, content, name)
    with pytest.raises(ReadError) as ei:
        read_runlog(p)
    assert str(ei.value).startswith("not a TensorBoard event file: record 1: the length checksum does not match")
    rep = judge(p)
    assert rep.error and rep.ids()[0] == "TP-READ-ERROR" and rep.verdict.value == "NOT-CHECKED"
    code, out, err, doc = run_cli("epoch", str(p), "--json")
    assert code == 2
    assert doc["error"] and "not a TensorBoard event file" in doc["error"]
    code, out, err, _ = run_cli("epoch", str(p))
    assert code == 2
    (line,) = err.strip().splitlines()
    assert "not a TensorBoard event file" in line


def test_zeros_under_another_name_are_not_a_log(tmp_path: Path) -> None:
    p = _write(tmp_path, b"\x00" * 64, "blob.bin")
    with pytest.raises(NotALog):
        read_runlog(p)


def test_event_file_without_scalars_is_no_records(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        w.add_text("config", "lr=0.1", 0)
        w.add_histogram("w", np.arange(5.0), 0)
    p = one_event_file(tmp_path)
    run = read_runlog(p)
    assert run.records == 0
    assert run.notes == [f"{p.name}: 3 event records, none holds a scalar (hparams, text, images or graphs only)"]
    code, out, err, doc = run_cli("epoch", str(p), "--json")
    assert code == 2
    rep = doc["reports"][0]
    assert rep["verdict"] == "NOT-CHECKED" and rep["error"] is None
    assert [f["id"] for f in rep["findings"]] == ["TP-NO-RECORDS"]


def test_header_only_event_file_says_so(tmp_path: Path) -> None:
    p = write_events(tmp_path, [])
    assert len(record_spans(p.read_bytes())) == 1
    run = read_runlog(p)
    assert run.records == 0
    assert run.notes == [f"{p.name}: only the file header, no scalars"]
    code, _, _, doc = run_cli("epoch", str(p), "--json")
    assert code == 2 and doc["reports"][0]["findings"][0]["id"] == "TP-NO-RECORDS"


# --------------------------------------------------------------------------- run directories


def test_resumed_run_two_writers_one_runlog(tmp_path: Path) -> None:
    logdir = tmp_path / "version_0"
    with SummaryWriter(str(logdir), filename_suffix=".first") as w:
        for s in range(10):
            w.add_scalar("train/loss", 2.0 - s / 10, s)
            w.add_scalar("train/lr", 1e-3, s)
    time.sleep(0.01)
    # Resumed from the checkpoint at step 5: steps 5..9 are logged again with other values.
    with SummaryWriter(str(logdir), filename_suffix=".resumed") as w:
        for s in range(5, 15):
            w.add_scalar("train/loss", 1.0 - s / 100, s)
            w.add_scalar("train/lr", 1e-3, s)
    assert len(event_files(logdir)) == 2
    run = read_runlog(logdir)
    assert run.format == "tfevents"
    loss = run.get("loss")
    assert loss.steps.tolist() == list(range(15))
    want = [f32(2.0 - s / 10) for s in range(5)] + [f32(1.0 - s / 100) for s in range(5, 15)]
    assert loss.values.tolist() == want  # the later write wins for steps 5..9
    assert any("merged 2 event files" in n for n in run.notes)
    rewritten = [n for n in run.notes if "logged more than once" in n]
    assert rewritten and "train/loss" in rewritten[0] and "train/lr" not in rewritten[0]  # lr was identical

    code, out, err, doc = run_cli("epoch", str(logdir), "--json")
    assert code in (0, 1)
    (rep,) = doc["reports"]
    assert rep["format"] == "tfevents" and rep["records"] == 40
    assert any("merged 2 event files" in n for n in rep["notes"])
    assert any("logged more than once" in n for n in rep["notes"])


def test_shards_merge_by_wall_time_not_file_name(tmp_path: Path) -> None:
    t0 = 1_700_000_000.0
    first = [
        event_pb2.Event(
            wall_time=t0 + s,
            step=s,
            summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="loss", simple_value=10.0 + s)]),
        )
        for s in range(4)
    ]
    second = [
        event_pb2.Event(
            wall_time=t0 + 100 + s,
            step=s,
            summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="loss", simple_value=20.0 + s)]),
        )
        for s in range(2, 6)
    ]
    a = write_events(tmp_path / "a", first)
    b = write_events(tmp_path / "b", second)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    # The resumed shard's name sorts first; its events are later in wall time, so they win.
    a.rename(run_dir / "events.out.tfevents.1700000999.host.1.0")
    b.rename(run_dir / "events.out.tfevents.1700000000.host.1.0")
    run = read_runlog(run_dir)
    assert run.meta["event_files"] == [
        "events.out.tfevents.1700000000.host.1.0",
        "events.out.tfevents.1700000999.host.1.0",
    ]
    assert run.get("loss").steps.tolist() == [0, 1, 2, 3, 4, 5]
    assert run.get("loss").values.tolist() == [10.0, 11.0, 22.0, 23.0, 24.0, 25.0]


def test_damaged_shard_does_not_hide_the_others(tmp_path: Path) -> None:
    write_torch(tmp_path, [("loss", 1.0, 1), ("loss", 0.5, 2)])
    bad = tmp_path / "events.out.tfevents.0000000001.host.1.0"  # sorts first
    bad.write_bytes(b"\x00" * 100)
    run = read_runlog(tmp_path)
    assert run.get("loss").values.tolist() == [1.0, 0.5]
    assert any(n.startswith(bad.name + ": skipped, not a TensorBoard event file") for n in run.notes)


def test_run_directory_with_only_damaged_shards_is_a_read_error(tmp_path: Path) -> None:
    (tmp_path / "events.out.tfevents.1.host.1.0").write_bytes(b"\x00" * 100)
    (tmp_path / "events.out.tfevents.2.host.1.0").write_bytes(b"junk" * 10)
    with pytest.raises(ReadError, match="events.out.tfevents.1.host.1.0: not a TensorBoard event file"):
        read_runlog(tmp_path)
    code, _, err, _ = run_cli("epoch", str(tmp_path))
    assert code == 2 and "not a TensorBoard event file" in err


def test_doctor_judges_a_run_folder_of_shards_once(tmp_path: Path) -> None:
    run_dir = tmp_path / "lightning_logs" / "version_0"
    for suffix in (".a", ".b"):
        with SummaryWriter(str(run_dir), filename_suffix=suffix) as w:
            for s in range(30):
                w.add_scalar("train_loss", 2.0 * math.exp(-s / 10) + 0.1, s)
    reports, ignored = doctor(tmp_path)
    assert [r.file for r in reports] == [str(run_dir)]
    assert reports[0].format == "tfevents" and reports[0].records == 60
    assert not ignored


# --------------------------------------------------------------------------- fuzz


@pytest.fixture(scope="module")
def valid_prefix(tmp_path_factory) -> tuple[bytes, list[float]]:
    d = tmp_path_factory.mktemp("prefix")
    vals = [3.0, 2.5, float("nan"), 1.0]
    with SummaryWriter(str(d)) as w:
        for s, v in enumerate(vals):
            w.add_scalar("train/loss", v, s)
    return one_event_file(d).read_bytes(), vals


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(garbage=st.binary(max_size=400))
def test_bytes_after_a_valid_prefix(tmp_path: Path, valid_prefix, garbage: bytes) -> None:
    prefix, vals = valid_prefix
    p = tmp_path / "events.out.tfevents.1700000000.host.1.0"
    p.write_bytes(prefix + garbage)
    try:
        run = read_runlog(p)
    except ReadError:
        pytest.fail("a valid prefix must be read")  # only garbage after it: never an error
    loss = run.get("loss")
    assert loss.steps.tolist() == [0, 1, 2, 3]
    assert same_values(loss.values, vals)
    if garbage:
        (note,) = run.notes
        assert f"{len(garbage)} bytes dropped" in note
    else:
        assert not run.notes


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300))
def test_arbitrary_bytes_in_an_event_file_raise_only_read_error(tmp_path: Path, data: bytes) -> None:
    p = tmp_path / "events.out.tfevents.1700000000.host.1.0"
    p.write_bytes(data)
    try:
        read_runlog(p, "tfevents")
    except ReadError:
        pass


def _ld(field: int, payload: bytes) -> bytes:
    """A protobuf length-delimited field (test-side encoder, independent of the reader)."""

    def varint(n: int) -> bytes:
        out = b""
        while True:
            b, n = n & 0x7F, n >> 7
            out += bytes([b | (0x80 if n else 0)])
            if not n:
                return out

    return varint(field << 3 | 2) + varint(len(payload)) + payload


_SCALARS_META_BYTES = SCALARS_META.SerializeToString()


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    payloads=st.lists(
        st.one_of(
            st.binary(max_size=60),  # an arbitrary Event payload
            # a Summary.Value whose tensor bytes are arbitrary, behind the scalars plugin
            st.binary(max_size=60).map(
                lambda t: _ld(5, _ld(1, _ld(1, b"loss") + _ld(9, _SCALARS_META_BYTES) + _ld(8, t)))
            ),
            # a Summary whose value bytes are arbitrary
            st.binary(max_size=60).map(lambda v: _ld(5, _ld(1, v))),
        ),
        max_size=6,
    )
)
def test_well_framed_garbage_events_never_crash(tmp_path: Path, payloads: list[bytes]) -> None:
    good = event_pb2.Event(
        wall_time=1.0,
        step=1,
        summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="anchor", simple_value=1.0)]),
    ).SerializeToString()
    p = tmp_path / "events.out.tfevents.1700000000.host.1.0"
    p.write_bytes(frame(good) + b"".join(frame(x) for x in payloads))
    run = read_runlog(p)  # framing is valid: reading must succeed
    assert series_by_key(run)["anchor"].values.tolist() == [1.0]
    for s in run.series.values():
        assert s.values.dtype == np.float64 and len(s.steps) == len(s.values)


# --------------------------------------------------------------------------- shared cases and corpus


def test_case_10_truncated_final_record(shared: Path) -> None:
    (p,) = (shared / "cases").glob("10-*/events.out.tfevents.*")
    code, out, err, doc = run_cli("epoch", str(p), "--json")
    assert code == 0
    rep = doc["reports"][0]
    assert rep["verdict"] == "PASS" and rep["error"] is None
    run = read_runlog(p)
    loss = run.get("loss")
    assert len(loss) == 20 and loss.steps.tolist() == [float(s) for s in range(0, 200, 10)]
    assert 200.0 not in loss.steps  # no value invented for the torn record
    assert any("reading stopped after 21 records" in n and "bytes dropped" in n for n in run.notes)


def test_case_11_event_file_without_scalars(shared: Path) -> None:
    (p,) = (shared / "cases").glob("11-*/events.out.tfevents.*")
    code, out, err, doc = run_cli("epoch", str(p), "--json")
    assert code == 2
    rep = doc["reports"][0]
    assert rep["verdict"] == "NOT-CHECKED" and rep["findings"][0]["id"] == "TP-NO-RECORDS"
    assert any("only the file header" in n for n in rep["notes"])


def _corpus_event_files(shared: Path) -> list[Path]:
    return sorted((shared / "corpus" / "tfevents").glob("*/events.out.tfevents.*"))


@pytest.mark.slow
def test_corpus_event_files_match_tensorboard(shared: Path) -> None:
    checked = 0
    for p in _corpus_event_files(shared):
        if p.read_bytes().startswith(b"version https://git-lfs"):
            with pytest.raises(ReadError, match="LFS pointer"):
                read_runlog(p)
            continue
        want = {t: v for t, v in tensorboard_scalars(p).items() if t not in tfevents.IGNORED_TAGS}
        try:
            run = read_runlog(p)
        except ReadError:
            assert not want, p
            continue
        # a loss summed from its logged components (YOLO box+obj+cls) is no tag of the file
        summed = {m["source"] for m in run.mapping.values() if m.get("sum_of")}
        got = {k: v for k, v in series_by_key(run).items() if k not in summed}
        assert set(got) == set(want), p.parent.name
        for tag, pairs in want.items():
            steps, vals = kept_per_step(pairs)
            assert got[tag].steps.tolist() == steps, (p.parent.name, tag)
            assert same_values(got[tag].values, vals), (p.parent.name, tag)
        checked += 1
    assert checked >= 5


@pytest.mark.slow
def test_corpus_json_output_validates(shared: Path) -> None:
    for p in _corpus_event_files(shared):
        code, out, err, doc = run_cli("epoch", str(p), "--json")
        assert code in (0, 1, 2)
        json.dumps(doc)  # validated against the schema by run_cli


def test_keras_train_validation_folders_are_one_run(tmp_path):
    # Keras' TensorBoard callback layout: <log_dir>/train and <log_dir>/validation, both
    # logging `epoch_loss` (written here with a real SummaryWriter, one per folder).
    from torch.utils.tensorboard import SummaryWriter

    from trainproof.api import doctor, read_runlog

    log_dir = tmp_path / "logs"
    for sub, losses in (
        ("train", [1.2, 0.9, 0.7, 0.6, 0.5, 0.45, 0.4, 0.38]),
        ("validation", [1.1, 0.95, 0.8, 0.75, 0.72, 0.7, 0.69, 0.69]),
    ):
        w = SummaryWriter(str(log_dir / sub))
        for epoch, v in enumerate(losses):
            w.add_scalar("epoch_loss", v, epoch)
        w.close()
    run = read_runlog(log_dir)
    assert run.format == "tfevents"
    assert run.mapping["loss"]["source"] == "epoch_loss"
    assert run.mapping["eval_loss"]["source"] == "validation/epoch_loss"
    assert run.series["eval_loss"].values[-1] == pytest.approx(0.69, rel=1e-6)
    reports, _ = doctor(tmp_path)
    assert [r.file for r in reports] == [str(log_dir)]
    assert reports[0].verdict.value == "PASS"


@pytest.mark.parametrize("split", ["val", "valid", "eval"])
def test_one_summary_writer_per_split_is_one_run(tmp_path, split):
    # A loop with a writer per split: runs/<run>/train/ and runs/<run>/val/, each logging
    # `loss` (helper 87: judged as two runs, the val loss never read as the eval loss).
    from torch.utils.tensorboard import SummaryWriter

    from trainproof.api import doctor, read_runlog

    runs = tmp_path / "runs"
    for name in ("exp1", "exp2"):
        for sub, losses in (("train", np.linspace(1.4, 0.4, 40)), (split, np.linspace(1.3, 0.6, 8))):
            w = SummaryWriter(str(runs / name / sub))
            every = 40 // losses.size
            for i, v in enumerate(losses):
                w.add_scalar("loss", float(v), (i + 1) * every * 10)
            w.close()
    run = read_runlog(runs / "exp1")
    assert run.mapping["loss"]["source"] == "loss"
    assert run.mapping["eval_loss"]["source"] == f"{split}/loss"
    assert run.series["eval_loss"].values.size == 8
    reports, _ = doctor(tmp_path)
    assert sorted(r.file for r in reports) == [str(runs / "exp1"), str(runs / "exp2")]


@pytest.mark.parametrize("tag", ["epoch_learning_rate", "epoch_lr"])
@pytest.mark.parametrize("epochs", [12, 60])
def test_keras_logged_learning_rate_is_the_lr(tmp_path, tag, epochs):
    # Keras' TensorBoard callback writes the rate its logs hold as epoch_learning_rate
    # (epoch_lr in older Keras): read as lr, a rate of 0.0 for the whole run is TP-ZERO-LR,
    # not "lr absent" and a near-chance WARN
    from torch.utils.tensorboard import SummaryWriter

    from trainproof.api import judge, read_runlog

    log_dir = tmp_path / "logs"
    rng = np.random.default_rng(epochs)
    w = SummaryWriter(str(log_dir / "train"))
    for e in range(epochs):
        w.add_scalar("epoch_loss", 2.3 * float(np.exp(0.01 * rng.standard_normal())), e)
        w.add_scalar(tag, 0.0, e)
    w.close()
    run = read_runlog(log_dir)
    assert run.mapping["lr"]["source"] == tag
    assert "TP-ZERO-LR" in {f.id for f in judge(log_dir).findings}


@pytest.mark.parametrize("n", [50, 2000])
def test_add_scalars_writers_are_part_of_their_run(tmp_path, n):
    # SummaryWriter.add_scalars("loss", {"train": .., "val": ..}) writes <log_dir>/loss_train/
    # and <log_dir>/loss_val/, each with the tag "loss": doctor listed each as a run of its
    # own, the validation loss judged as a train loss (a diverging run FAILed three times)
    from torch.utils.tensorboard import SummaryWriter

    from trainproof.api import doctor, read_runlog

    rng = np.random.default_rng(n)
    log_dir = tmp_path / "runs" / "exp"
    w = SummaryWriter(str(log_dir))
    for s in range(n):
        tr = 2.0 * math.exp(-3 * s / n) + 0.3
        w.add_scalar("lr", 1e-3, s)
        w.add_scalars("loss", {"train": tr * math.exp(0.03 * rng.standard_normal()), "val": tr + 0.2 * s / n}, s)
    w.close()
    run = read_runlog(log_dir)
    assert run.mapping["loss"]["source"] == "loss_train/loss"
    assert run.mapping["eval_loss"]["source"] == "loss_val/loss"
    reports, _ = doctor(tmp_path)
    assert [r.file for r in reports] == [str(log_dir)]


def test_an_eval_writer_in_its_own_folder_joins_the_run_and_a_nested_run_does_not(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    from trainproof.api import doctor, read_runlog

    log_dir = tmp_path / "logs"
    train, ev = SummaryWriter(str(log_dir)), SummaryWriter(str(log_dir / "eval"))
    for s in range(200):
        train.add_scalar("loss", 2.0 * math.exp(-s / 60) + 0.3, s)
        if s % 20 == 19:
            ev.add_scalar("loss", 2.0 * math.exp(-s / 60) + 0.4, s)
    train.close(), ev.close()
    # a folder with a folder of its own is another run, not a writer of this one
    other = SummaryWriter(str(log_dir / "sweep" / "trial_0"))
    for s in range(100):
        other.add_scalar("loss", 1.0 + s / 100, s)
    other.close()
    (log_dir / "sweep" / "trial_0" / "ckpt").mkdir()
    run = read_runlog(log_dir)
    assert run.mapping["eval_loss"]["source"] == "eval/loss"
    assert not any(k.startswith("sweep") for k in run.series)
    reports, _ = doctor(tmp_path)
    files = sorted(r.file for r in reports)
    assert files[0] == str(log_dir) and len(files) == 2
    assert files[1].startswith(str(log_dir / "sweep" / "trial_0"))
