#!/usr/bin/env python3
"""Check trainproof's TensorBoard event-file reader against TensorBoard's own loader.

For every event file under ``../shared/corpus/`` (relative to the repository root; skipped
with a message when absent) and under ``examples/``, plus a few files this script generates
in a temporary directory (writer variants and damaged copies, see ``synthetic_files``),
compare the ``(tag, step, value)`` scalar triples of

* ours: ``trainproof.formats.tfevents._read_file`` (the per-file reader under ``read``;
  raw tags, before alias mapping), and
* TensorBoard: ``tensorboard.backend.event_processing.event_file_loader.EventFileLoader``
  (events after TensorBoard's read-time ``data_compat``/``dataclass_compat`` migration),
  cross-checked with ``LegacyEventFileLoader`` (the same records parsed into ``Event``
  protos with no migration).

and write ``evidence/tfevents.md``. Usage (from the repository root)::

    .venv/bin/python evidence/tfevents_vs_tensorboard.py            # writes evidence/tfevents.md
    .venv/bin/python evidence/tfevents_vs_tensorboard.py --out -    # print instead

Needs the ``dev`` extra (``tensorboard``); ``torch`` and ``tensorboardX`` are optional (the
synthetic files they would write are skipped, with a line saying so, when missing).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import logging
import math
import platform
import shutil
import struct
import subprocess
import sys
import tempfile
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = (ROOT / ".." / "shared" / "corpus").resolve()
EXAMPLES = ROOT / "examples"
OUT = ROOT / "evidence" / "tfevents.md"

try:
    import trainproof
    from trainproof.formats import ReadError, ReadState, _tfrecord
    from trainproof.formats import tfevents as tp_tfevents
except ImportError:  # running without the package installed: use the src layout
    sys.path.insert(0, str(ROOT / "src"))
    import trainproof
    from trainproof.formats import ReadError, ReadState, _tfrecord
    from trainproof.formats import tfevents as tp_tfevents

import tensorboard  # noqa: E402 (after the src-layout fallback above)
from tensorboard.backend.event_processing import event_file_loader as efl  # noqa: E402 (after the src-layout fallback above)
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2  # noqa: E402 (after the src-layout fallback above)
from tensorboard.util import tensor_util  # noqa: E402 (after the src-layout fallback above)

IGNORED = tp_tfevents.IGNORED_TAGS  # {"hp_metric"}: dropped by our reader on purpose


# --------------------------------------------------------------------------- comparison


def _key(triple):
    """Exact comparison key: NaN equals NaN (any payload), otherwise the float64 bits, so
    0.0 and -0.0 differ and nothing is compared with a tolerance."""
    tag, step, val = triple
    v = float(val)
    return (tag, int(step), "nan" if math.isnan(v) else struct.pack("<d", v))


def _fmt(triple) -> str:
    tag, step, val = triple
    return f"({tag!r}, {step}, {val!r})"


@dataclass
class Side:
    """What one reader yielded for one file and how its reading ended."""

    triples: list = field(default_factory=list)
    ignored: int = 0  # hp_metric values (TensorBoard side only)
    status: str = "clean end of file"
    problems: list = field(default_factory=list)  # values the side could not turn into a scalar
    kinds: Counter = field(default_factory=Counter)  # how the scalars are stored: simple_value / tensor


def read_ours(path: Path) -> Side:
    """``tfevents.read`` on one file: it runs ``_read_file`` and adds the file-level verdict
    (``ReadError`` when not even the first record is readable). Raw tags, no alias mapping;
    a single file keeps file order. ``Record.step`` is a float64 (exact below 2**53)."""
    side = Side()
    state = ReadState()
    records: list = []
    try:
        for rec in tp_tfevents.read(path, state):
            records.append(rec)
    except ReadError as e:
        side.status = f"ReadError: {e}"
    # The reader yields one column batch per tag (lines = the record index in the file);
    # file order is restored by record index, tag order within one event by name.
    rows = []
    for rec in records:
        if hasattr(rec, "key"):
            rows += [(int(ln), rec.key, float(st), float(v)) for st, v, ln in zip(rec.steps, rec.values, rec.lines)]
        else:
            rows += [(rec.line, tag, rec.step, val) for tag, val in rec.values.items()]
    rows.sort(key=lambda r: (r[0], r[1]))
    side.triples = [(tag, step, val) for _, tag, step, val in rows]
    if state.notes:
        side.status = "; ".join(state.notes) + (f"; {side.status}" if side.status.startswith("ReadError") else "")
    return side


class _Capture(logging.Handler):
    """Collect TensorBoard's debug log lines: its loader swallows a truncated/corrupt
    record (``DataLossError``) and says so only at DEBUG level."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if msg.startswith("Truncated record"):
            self.lines.append(msg)


def read_tensorboard(path: Path, migrate: bool) -> Side:
    """TensorBoard's view of the scalars of one file.

    ``migrate=True``: ``EventFileLoader``, whose ``data_compat`` turns every old-style
    ``simple_value`` into a float32 ``tensor`` with ``plugin_name: "scalars"`` metadata.
    ``migrate=False``: ``LegacyEventFileLoader``, the raw ``Event`` protos.
    Either way a value counts as a scalar when it has a ``simple_value`` (used as is), or a
    ``tensor`` while the tag's first metadata (first value of the tag in the file) names the
    ``scalars`` plugin (``make_ndarray(value.tensor).item()``).
    """
    side = Side()
    loader_cls = efl.EventFileLoader if migrate else efl.LegacyEventFileLoader
    logger = logging.getLogger("tensorboard")
    cap = _Capture()
    old_level = logger.level
    logger.addHandler(cap)
    logger.setLevel(logging.DEBUG)
    first_plugin: dict[str, str] = {}
    events = 0
    try:
        loader = loader_cls(str(path))
        for ev in loader.Load():
            events += 1
            if not ev.HasField("summary"):
                continue
            for v in ev.summary.value:
                if v.tag not in first_plugin:
                    first_plugin[v.tag] = v.metadata.plugin_data.plugin_name
                kind = v.WhichOneof("value")
                if kind == "simple_value":
                    val = float(v.simple_value)
                elif kind == "tensor" and first_plugin[v.tag] == "scalars":
                    try:
                        item = tensor_util.make_ndarray(v.tensor).item()
                    except Exception as e:  # noqa: BLE001 - record, not hide
                        side.problems.append(f"{v.tag}@{ev.step}: make_ndarray(...).item() raised {type(e).__name__}")
                        continue
                    if isinstance(item, (bool, bytes, str)) or not isinstance(item, (int, float)):
                        side.problems.append(f"{v.tag}@{ev.step}: non-numeric scalar {item!r}")
                        continue
                    val = float(item)
                    if isinstance(item, int) and val != item:
                        side.problems.append(f"{v.tag}@{ev.step}: {item!r} is not exact as a float")
                else:
                    continue
                if v.tag in IGNORED:
                    side.ignored += 1
                    continue
                side.kinds[kind] += 1
                side.triples.append((v.tag, int(ev.step), val))
    except Exception as e:  # noqa: BLE001 - the point is to record what TensorBoard does
        side.status = f"raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''} after {events} events"
    finally:
        logger.removeHandler(cap)
        logger.setLevel(old_level)
    if cap.lines and side.status == "clean end of file":
        why = cap.lines[0].split("(", 1)[-1].rstrip(")")
        for p in (repr(str(path).encode()), repr(str(path)), str(path)):
            why = why.replace(p, path.name)
        side.status = f"stopped silently after {events} events (debug log: {why})"
    elif side.status == "clean end of file":
        side.status = f"clean end of file after {events} events"
    return side


@dataclass
class Row:
    label: str
    ours: Side
    tb: Side
    raw: Side
    mismatches: int
    note: str


def compare(label: str, path: Path, extra_note: str = "") -> Row:
    ours = read_ours(path)
    tb = read_tensorboard(path, migrate=True)
    raw = read_tensorboard(path, migrate=False)
    notes: list[str] = []
    if extra_note:
        notes.append(extra_note)

    ka = [_key(t) for t in ours.triples]
    kb = [_key(t) for t in tb.triples]
    mismatches = 0
    if ka != kb:
        ca, cb = Counter(ka), Counter(kb)
        only_ours = ca - cb
        only_tb = cb - ca
        mismatches = sum(only_ours.values()) + sum(only_tb.values())
        if mismatches == 0:
            # Several scalars in one event: their order inside the event is not kept by the
            # column batches. What must match is the order of each tag's own values.
            def per_tag(keys):
                d: dict = {}
                for k in keys:
                    d.setdefault(k[0], []).append(k)
                return d

            if per_tag(ka) == per_tag(kb):
                notes.append("same triples in the same order per tag (events holding several scalars list them by tag)")
            else:
                mismatches = sum(1 for x, y in zip(ka, kb) if x != y)
                notes.append(f"same triples, different order at {mismatches} positions")
        else:
            ex_a = [t for t in ours.triples if _key(t) in only_ours][:3]
            ex_b = [t for t in tb.triples if _key(t) in only_tb][:3]
            notes.append(
                f"only ours: {sum(only_ours.values())} (e.g. {', '.join(map(_fmt, ex_a)) or '-'}); "
                f"only TensorBoard: {sum(only_tb.values())} (e.g. {', '.join(map(_fmt, ex_b)) or '-'})"
            )
    if [_key(t) for t in raw.triples] != kb or raw.ignored != tb.ignored:
        notes.append(
            f"**without data_compat (LegacyEventFileLoader) TensorBoard gives {len(raw.triples)} scalars, "
            f"not {len(tb.triples)}**"
        )
    if raw.kinds:
        notes.append("stored as " + ", ".join(f"{n} {k}" for k, n in sorted(raw.kinds.items())))
    if tb.ignored:
        notes.append(f"+{tb.ignored} `hp_metric` ignored by design (ours drops it; not counted as mismatches)")
    for p in (tb.problems + raw.problems)[:3]:
        notes.append(f"TensorBoard: {p}")
    if not ours.status.startswith("clean") or not tb.status.startswith("clean end of file after"):
        notes.append(f"ours: {ours.status}")
        notes.append(f"TensorBoard: {tb.status}")
    if ours.status.startswith("ReadError") or not ours.triples:
        # What the public API says about the same file (it sniffs before reading).
        try:
            from trainproof.api import read_runlog

            run = read_runlog(path)
            notes.append(f"read_runlog: {run.records} records")
        except Exception as e:  # noqa: BLE001
            notes.append(f"read_runlog: {type(e).__name__}: {e}")
    return Row(label, ours, tb, raw, mismatches, "; ".join(notes))


# --------------------------------------------------------------------------- inputs


def find_event_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and tp_tfevents.is_event_file(p))


def _record_spans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) byte offsets of each TFRecord in ``data`` (framing only)."""
    spans, pos = [], 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack_from("<Q", data, pos)
        end = pos + 12 + length + 4
        if end > len(data):
            break
        spans.append((pos, end))
        pos = end
    return spans


def _frame(payload: bytes) -> bytes:
    head = struct.pack("<Q", len(payload))
    return (
        head
        + struct.pack("<I", _tfrecord.masked_crc(head))
        + payload
        + struct.pack("<I", _tfrecord.masked_crc(payload))
    )


def _write_events(path: Path, events: list) -> None:
    first = event_pb2.Event(wall_time=1.0e9, file_version="brain.Event:2")
    with open(path, "wb") as f:
        f.write(_frame(first.SerializeToString()))
        for ev in events:
            f.write(_frame(ev.SerializeToString()))


_EDGE_VALUES = [
    1.5,
    float("nan"),
    float("inf"),
    float("-inf"),
    -0.0,
    0.0,
    1e-45,
    3.4028234663852886e38,
    -2.5,
    1e-8,
    123456.789,
]


def synthetic_files(tmp: Path, corpus_files: list[Path]) -> list[tuple[str, Path, str]]:
    """Writer variants and damaged copies; each ``(label, path, note)``. None is committed."""
    out: list[tuple[str, Path, str]] = []
    skipped: list[str] = []

    # 1-2. torch.utils.tensorboard.SummaryWriter: old-style simple_value and new-style
    # tensors (float32 and double_precision), edge values, a Lightning-style hp_metric.
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from torch.utils.tensorboard import SummaryWriter
        import numpy

        for style in ("simple_value", "new_style", "new_style_double"):
            d = tmp / f"torch_{style}"
            w = SummaryWriter(str(d))
            kw = {} if style == "simple_value" else {"new_style": True, "double_precision": style.endswith("double")}
            w.add_scalar("hp_metric", -1, 0, **kw)
            for s in range(40):
                w.add_scalar("train/loss", 2.0 / (s + 1) + 0.1, s, **kw)
                w.add_scalar("train/lr", 1e-4 * min(1.0, (s + 1) / 10), s, **kw)
                w.add_scalar("edge/values", _EDGE_VALUES[s % len(_EDGE_VALUES)], s, **kw)
            w.add_scalar("train/loss", 0.05, 2**40, **kw)  # a large step
            w.add_scalar("train/loss", 0.07, -3, **kw)  # a negative step
            w.add_text("notes", "text is not a scalar", 0)
            w.add_histogram("weights", numpy.array([0.1, 0.2, 0.3]), 0)
            w.close()
            (f,) = find_event_files(d)
            out.append(
                (
                    f"synthetic: torch SummaryWriter, {style.replace('_', ' ')}",
                    f,
                    "torch.utils.tensorboard; NaN/±Inf/-0.0/denormal/float32-max values, steps 2^40 and -3, text + histogram",
                )
            )
    except ImportError:
        skipped.append("torch SummaryWriter (torch not installed)")

    # 3. tensorboardX writes simple_value too, through its own proto copy and CRC code.
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from tensorboardX import SummaryWriter as XWriter
        logging.getLogger("tensorboardX.x2num").setLevel(logging.ERROR)  # "NaN or Inf found": on purpose here
        d = tmp / "tbx"
        w = XWriter(str(d))
        for s in range(40):
            w.add_scalar("loss", _EDGE_VALUES[s % len(_EDGE_VALUES)], s)
            w.add_scalar("lr", 3e-4, s)
        w.close()
        (f,) = find_event_files(d)
        out.append(("synthetic: tensorboardX SummaryWriter", f, "tensorboardX add_scalar; edge values"))
    except ImportError:
        skipped.append("tensorboardX (not installed)")

    # 4. Hand-built Event protos: several values per event (TF1 merged summaries), tensor
    # scalars of several dtypes in both encodings, metadata on the first value of a tag only.
    sm = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))
    scalar_shape = tensor_shape_pb2.TensorShapeProto()

    def tensor(**kw):
        return tensor_pb2.TensorProto(tensor_shape=scalar_shape, **kw)

    def dtyped(step: int):
        x = 0.5 + step
        return [
            ("t/float_val", tensor(dtype=1, float_val=[x])),
            ("t/float_content", tensor(dtype=1, tensor_content=struct.pack("<f", x))),
            ("t/double_val", tensor(dtype=2, double_val=[x / 3])),
            ("t/double_content", tensor(dtype=2, tensor_content=struct.pack("<d", x / 3))),
            ("t/int32_val", tensor(dtype=3, int_val=[-step])),
            ("t/int64_val", tensor(dtype=9, int64_val=[step * 1_000_003])),
            ("t/int64_content", tensor(dtype=9, tensor_content=struct.pack("<q", -step * 7))),
            ("t/half_val", tensor(dtype=19, half_val=[struct.unpack("<H", struct.pack("<e", x))[0]])),
            ("t/half_content", tensor(dtype=19, tensor_content=struct.pack("<e", x))),
        ]

    events = []
    for step in range(12):
        vals = []
        for tag, t in dtyped(step):
            v = summary_pb2.Summary.Value(tag=tag, tensor=t)
            if step == 0:
                v.metadata.CopyFrom(sm)
            vals.append(v)
        vals.append(summary_pb2.Summary.Value(tag="simple/a", simple_value=step * 0.25))
        vals.append(summary_pb2.Summary.Value(tag="simple/b", simple_value=-step * 0.5))
        # a text tensor (not a scalar) in the same event
        txt = summary_pb2.Summary.Value(tag="text/x", tensor=tensor_pb2.TensorProto(dtype=7, string_val=[b"hi"]))
        if step == 0:
            txt.metadata.plugin_data.plugin_name = "text"
        vals.append(txt)
        events.append(event_pb2.Event(wall_time=1.0e9 + step, step=step, summary=summary_pb2.Summary(value=vals)))
    f = tmp / "handmade" / "events.out.tfevents.1000000000.synthetic.1.0"
    f.parent.mkdir()
    _write_events(f, events)
    out.append(
        (
            "synthetic: hand-built protos, multi-value events, tensor dtypes",
            f,
            "float/double/int32/int64/half in *_val and tensor_content; metadata on step 0 only; text tensor alongside",
        )
    )

    # 5-8. Damaged copies of the largest corpus file (else of the torch file).
    bases = sorted(corpus_files, key=lambda p: p.stat().st_size, reverse=True)
    base = next((p for p in bases if _record_spans(p.read_bytes())), None)
    if base is None and out:
        base = out[0][1]
    if base is not None:
        data = base.read_bytes()
        spans = _record_spans(data)
        mid_start, mid_end = spans[len(spans) // 2]
        last_start, last_end = spans[-1]
        name = base.parent.name if base.is_relative_to(CORPUS) else base.name
        variants = [
            (
                "cut mid-record (half way)",
                data[: mid_start + 12 + (mid_end - mid_start - 16) // 2],
                f"cut inside the payload of record {len(spans) // 2 + 1} of {len(spans)}",
            ),
            (
                "cut inside the last header",
                data[: last_start + 5],
                f"5 bytes of record {len(spans)}'s 12-byte header left",
            ),
            (
                "cut before the last payload CRC",
                data[: last_end - 2],
                f"record {len(spans)} lacks 2 bytes of its payload CRC",
            ),
            ("cut to 0 bytes", b"", "an event file created and never flushed"),
            (
                "cut inside the first record",
                data[: spans[0][0] + 20],
                f"20 of the first record's {spans[0][1] - spans[0][0]} bytes left",
            ),
            (
                "one payload byte flipped (half way)",
                data[: mid_start + 14] + bytes([data[mid_start + 14] ^ 0x01]) + data[mid_start + 15 :],
                f"payload CRC of record {len(spans) // 2 + 1} fails; the rest of the file is intact",
            ),
        ]
        for i, (what, blob, note) in enumerate(variants):
            f = tmp / f"damaged_{i}" / base.name
            f.parent.mkdir()
            f.write_bytes(blob)
            out.append((f"synthetic: `{name}` {what}", f, note))
    for s in skipped:
        print(f"skipped synthetic file: {s}", file=sys.stderr)
    return out


# --------------------------------------------------------------------------- report


def _versions() -> str:
    import google.protobuf
    import numpy

    parts = [
        f"Python {platform.python_version()}",
        f"trainproof {getattr(trainproof, '__version__', '?')}",
        f"tensorboard {tensorboard.__version__}",
        f"protobuf {google.protobuf.__version__}",
        f"numpy {numpy.__version__}",
    ]
    from importlib import metadata

    for dist in ("torch", "tensorboardX", "google-crc32c"):
        try:
            parts.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            pass
    from tensorboard.compat import tf

    parts.append(
        "TensorFlow: none (TensorBoard's stub record reader)"
        if tf.__version__ == "stub"
        else f"TensorFlow {tf.__version__}"
    )
    try:
        rev = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "src"], capture_output=True, text=True
        ).stdout.strip()
        parts.append(f"commit {rev}{' (src/ modified)' if dirty else ''}")
    except (OSError, subprocess.CalledProcessError):
        pass
    return ", ".join(parts)


def _cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def render(sections: list[tuple[str, list[Row], str]]) -> str:
    rows = [r for _, rs, _ in sections for r in rs]
    total_ours = sum(len(r.ours.triples) for r in rows)
    total_tb = sum(len(r.tb.triples) for r in rows)
    total_ign = sum(r.tb.ignored for r in rows)
    total_mis = sum(r.mismatches for r in rows)
    lines = [
        "# TensorBoard event files: trainproof's reader vs TensorBoard's loader",
        "",
        "<!-- Generated file: do not edit. Regenerate from the repository root with",
        "     .venv/bin/python evidence/tfevents_vs_tensorboard.py -->",
        "",
        f"Generated {_dt.date.today().isoformat()} by `evidence/tfevents_vs_tensorboard.py` "
        "(regenerate: `.venv/bin/python evidence/tfevents_vs_tensorboard.py` from the repository root).",
        "",
        f"Versions: {_versions()}.",
        "",
        f"**Summary: {len(rows)} files, {total_ours} scalars read by ours, {total_tb} by TensorBoard "
        f"(+{total_ign} `hp_metric` ignored by design), {total_mis} mismatches.**",
        "",
        "## What is compared",
        "",
        "* **Ours**: `trainproof.formats.tfevents.read(path, ReadState())` on each single file (it runs "
        "`_read_file` and adds the file-level verdict): raw tags before alias mapping (so before "
        "`build_runlog`'s per-step de-duplication), in file order, one `(tag, step, value)` per scalar.",
        "* **TensorBoard**: `EventFileLoader(path).Load()`. A value is a scalar when it has a `simple_value` "
        "(taken as is), or a `tensor` while the tag's first metadata in the file (its first value) has "
        '`plugin_name == "scalars"`: `tensor_util.make_ndarray(value.tensor).item()`. Everything else '
        "(text, histograms, graphs, hparams, `file_version`) is not a scalar on either side.",
        "* **Like with like (data_compat)**: `EventFileLoader` runs `data_compat.migrate_event`, which "
        "rewrites every old-style `simple_value` into a float32 `tensor` with fresh `scalars` metadata, "
        "then `dataclass_compat`. So on the TensorBoard side a `simple_value` arrives as a tensor and goes "
        "through the tensor rule. Because that migration could in principle hide a difference (e.g. a "
        "`simple_value` under a tag whose first value carried other metadata), every file is also read with "
        "`LegacyEventFileLoader` (the same records parsed into `Event` protos, no migration) with the same "
        "rule; a note says so wherever the two TensorBoard readings differ (none below unless noted).",
        "* **Exactness**: values are compared as Python floats by their float64 bits (float32 values widen "
        "exactly), so `0.0` and `-0.0` differ and there is no tolerance; any NaN equals any NaN. Steps are "
        "compared as integers, tags as strings, and each tag's values must come in the same order (a "
        "same-multiset reordering within a tag would be "
        "counted and noted).",
        "* **`hp_metric`**: our reader drops Lightning's `hp_metric` placeholder on purpose "
        "(`tfevents.IGNORED_TAGS`); TensorBoard's `hp_metric` values are counted in the note, not as "
        "mismatches. The TensorBoard column excludes them.",
        "* **Damaged files**: TensorBoard's loader swallows a `DataLossError` (bad CRC, short record) and "
        "stops at the last good record, logging it only at DEBUG level; the script captures that log line. "
        "Our reader stops at the same place and adds a note (or raises `ReadError` when not even the first "
        "record is good). Both sides' endings are quoted in the note column whenever a file did not end "
        "cleanly.",
        "* **Mismatches** = size of the multiset symmetric difference of the two triple lists (or the "
        "number of out-of-order positions when the multisets are equal).",
        "",
    ]
    for title, rs, intro in sections:
        lines += [f"## {title}", ""]
        if intro:
            lines += [intro, ""]
        if not rs:
            continue
        lines += ["| file | scalars (ours) | scalars (TensorBoard) | mismatches | note |", "|---|---:|---:|---:|---|"]
        for r in rs:
            lines.append(
                f"| {_cell(r.label)} | {len(r.ours.triples)} | {len(r.tb.triples)} | {r.mismatches} "
                f"| {_cell(r.note) or 'identical'} |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(OUT), help="markdown output path, or - for stdout (default: %(default)s)")
    ap.add_argument("--no-synthetic", action="store_true", help="only the corpus and examples/ files")
    args = ap.parse_args(argv)

    sections: list[tuple[str, list[Row], str]] = []
    corpus_files: list[Path] = []
    if CORPUS.is_dir():
        corpus_files = find_event_files(CORPUS)
        print(f"corpus: {len(corpus_files)} event files under {CORPUS}", file=sys.stderr)
        rows = [compare(f"`{p.relative_to(CORPUS)}`", p) for p in corpus_files]
        sections.append(("Corpus (`../shared/corpus`)", rows, f"{len(rows)} event files found."))
    else:
        print(f"corpus: {CORPUS} is absent; skipping it", file=sys.stderr)
        sections.append(("Corpus (`../shared/corpus`)", [], "Skipped: `../shared/corpus` is absent on this machine."))

    ex_files = find_event_files(EXAMPLES) if EXAMPLES.is_dir() else []
    print(f"examples: {len(ex_files)} event files under {EXAMPLES}", file=sys.stderr)
    sections.append(
        (
            "Repository examples (`examples/`)",
            [compare(f"`{p.relative_to(ROOT)}`", p) for p in ex_files],
            f"{len(ex_files)} event files found." if ex_files else "No event files under `examples/` yet.",
        )
    )

    if not args.no_synthetic:
        tmp = Path(tempfile.mkdtemp(prefix="tp_tfevents_evidence_"))
        try:
            syn = synthetic_files(tmp, corpus_files)
            print(f"synthetic: {len(syn)} files", file=sys.stderr)
            sections.append(
                (
                    "Synthetic (written by this script into a temporary directory; not committed)",
                    [compare(label, p, note) for label, p, note in syn],
                    "Writer variants the corpus lacks (new-style tensor scalars, tensorboardX, several values per "
                    "event, non-float dtypes) and damaged copies of the largest corpus file (truncated at five "
                    "places, one flipped byte).",
                )
            )
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    text = render(sections) + "\n"
    if args.out == "-":
        sys.stdout.write(text)
    else:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    total = sum(r.mismatches for _, rs, _ in sections for r in rs)
    print(f"mismatches: {total}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
