"""RunLogBuilder.build's named steps (trainproof.runlog): each step's output, and the
exact text and order of the notes build writes, so that a restructuring of build that
changes a note or its place fails here."""

from __future__ import annotations

import numpy as np
import pytest

from trainproof import runlog
from trainproof.runlog import Record, RunLogBuilder, build_runlog

# Nine columns the alias table reads as the loss: one is read, eight are named as not read.
LOSS_SPELLINGS = [
    "loss",
    "Loss",
    "train_loss",
    "train/loss",
    "Train/Loss",
    "TRAIN_LOSS",
    "training_loss",
    "train_loss_step",
    "loss_step",
    "train/loss_step",
]


@pytest.mark.parametrize(
    ("items", "shown", "text"),
    [
        ([], 3, ""),
        (["a"], 3, "a"),
        (["a", "b", "c"], 3, "a, b, c"),
        (["a", "b", "c", "d"], 3, "a, b, c and 1 more"),
        ([f"k{i}" for i in range(12)], 10, "k0, k1, k2, k3, k4, k5, k6, k7, k8, k9 and 2 more"),
    ],
)
def test_and_more_names_the_first_items_and_counts_the_rest(items, shown, text) -> None:
    assert runlog._and_more(items, shown) == text


def _keys(n: int) -> list[str]:
    return [f"m{i:02d}" for i in range(n)]


def test_a_resume_of_twelve_columns_names_ten_and_counts_two() -> None:
    keys = _keys(12)
    recs = [Record(s, {k: float(s) for k in keys}, s + 1) for s in range(5)]
    # The step goes back to 2: a resume that writes steps 2..4 again with other values.
    recs += [Record(s, {k: float(s) + 0.5 for k in keys}, s + 10) for s in range(2, 5)]
    log = build_runlog(recs, "x", "jsonl")
    assert log.notes == [
        "steps logged more than once with different values (a resumed run: the step went back); "
        "the later write was kept for: m00, m01, m02, m03, m04, m05, m06, m07, m08, m09 and 2 more"
    ]
    assert log.get("m00").values.tolist() == [0.0, 1.0, 2.5, 3.5, 4.5]


def test_two_writers_of_twelve_columns_are_named_ten_and_two_more() -> None:
    keys = _keys(12)
    recs = []
    for s in range(4):
        recs.append(Record(s, {k: 1.0 for k in keys}, 2 * s + 1))
        recs.append(Record(s, {k: 2.0 for k in keys}, 2 * s + 2))
    log = build_runlog(recs, "x", "jsonl")
    assert log.notes == [
        "steps logged more than once with different values without the step going back (several "
        "writers of one file, or several rows a step); every write is kept and judged for: "
        "m00, m01, m02, m03, m04, m05, m06, m07, m08, m09 and 2 more"
    ]
    assert log.get("m00").values.tolist() == [1.0, 2.0] * 4


def test_a_loss_spelled_ten_ways_names_five_of_the_others_and_counts_the_rest() -> None:
    recs = [Record(s, {k: 1.0 for k in LOSS_SPELLINGS}, s + 1) for s in range(3)]
    log = build_runlog(recs, "x", "jsonl")
    (note,) = [n for n in log.notes if n.startswith("loss:")]
    ignored = log.mapping["loss"]["ignored"]
    assert len(ignored) == 9
    assert note == (
        f"loss: read from {log.mapping['loss']['source']!r}; also present: "
        + ", ".join(repr(k) for k in ignored[:5])
        + " and 4 more"
    )


def test_an_export_of_nine_runs_names_seven_not_read_and_counts_the_rest() -> None:
    runs = [f"r{i}" for i in range(9)]
    recs = [Record(s, {f"{r} - train/loss": 1.0 for r in runs[: 9 - s % 2]}, s + 1) for s in range(4)]
    log = build_runlog(recs, "x", "csv")
    # r0..r7 have 4 loss points, r8 two: r0 (alphabetically first of the most) is judged.
    assert log.notes[0] == (
        "9 runs in one log (W&B export): judged 'r0', the run whose loss has the most points (4); "
        "not read: 'r1' (4 loss points), 'r2' (4 loss points), 'r3' (4 loss points), "
        "'r4' (4 loss points), 'r5' (4 loss points), 'r6' (4 loss points), 'r7' (4 loss points) "
        "and 1 more (judge each run from its own export to see them)"
    )


def test_notes_come_in_builds_order_after_the_readers() -> None:
    """The reader's notes, then the x axis, repeats, resumes, aliases not read, the cap."""
    recs = []
    line = 0
    for epoch in (1, 2, 3):
        for s in range(6):
            line += 1
            values = {"epoch": float(epoch), "m": float(s)}
            values.update({k: 1.0 for k in LOSS_SPELLINGS})
            recs.append(Record(None, values, line))
    b = RunLogBuilder(max_records=len(recs) - 2, max_values=10**6)
    for r in recs:
        b.add(r.step, r.values, r.line, r.holes)
    # The step column is absent: the epoch is the x axis, so every epoch's six records
    # repeat one step with different values of "m".
    log = b.build("x", "csv", notes=["from the reader"])
    assert [n.split(":")[0].split(" (")[0] for n in log.notes] == [
        "from the reader",
        "no step column",
        "steps logged more than once with different values without the step going back",
        "loss",
        "the run's records from line 17 on were left out",
    ]
    assert log.meta["dropped"] == [log.notes[-1]]


def test_record_steps_use_the_epoch_when_no_record_has_a_step() -> None:
    b = RunLogBuilder()
    for i, ep in enumerate((1.0, 2.0, 3.0)):
        b.add(None, {"epoch": ep, "loss": 1.0}, i + 1)
    notes: list[str] = []
    steps, explicit = b._record_steps({"epoch": {"source": "epoch"}}, notes)
    assert (steps.tolist(), explicit, notes) == ([1.0, 2.0, 3.0], False, ["no step column: the epoch is the x axis"])


def test_record_steps_fill_the_records_before_the_first_step() -> None:
    b = RunLogBuilder()
    b.add(None, {"loss": 1.0}, 1)
    b.add(None, {"loss": 1.0}, 2)
    b.add(7, {"loss": 1.0}, 3)
    b.add(None, {"loss": 1.0}, 4)
    notes: list[str] = []
    steps, explicit = b._record_steps({}, notes)
    assert (steps.tolist(), explicit, notes) == ([7.0, 7.0, 7.0, 7.0], True, [])
    # The builder's own buffer is not written through.
    assert np.isnan(np.frombuffer(b._rec_steps, dtype=np.float64)[0])


def test_record_steps_make_the_global_step_of_a_step_within_the_epoch() -> None:
    b = RunLogBuilder()
    line = 0
    for epoch in range(3):
        for s in (10, 20, 30):
            line += 1
            b.add(s, {"epoch": float(epoch), "loss": 1.0}, line)
    notes: list[str] = []
    steps, _ = b._record_steps({"epoch": {"source": "epoch"}}, notes)
    assert steps.tolist() == [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0]
    assert len(notes) == 1 and notes[0].startswith("the step counts within each epoch")


def test_segments_start_where_the_step_goes_back() -> None:
    assert runlog._segments(np.array([0.0, 1, 2, 1, 2, 0, 5])).tolist() == [0, 0, 0, 1, 1, 2, 2]
    assert runlog._segments(np.array([3.0])).tolist() == [0]
    assert runlog._segments(np.empty(0)).dtype == np.int64


def test_resolve_steps_keeps_the_latest_segments_write() -> None:
    st, vals, ln, replaced, repeated = runlog._resolve_steps(
        np.array([0.0, 1, 2, 1, 2]), np.array([0.0, 1, 2, 9, 8]), np.arange(5), np.array([0, 0, 0, 1, 1])
    )
    assert (st.tolist(), vals.tolist(), ln.tolist(), replaced, repeated) == (
        [0.0, 1.0, 2.0],
        [0.0, 9.0, 8.0],
        [0, 3, 4],
        True,
        False,
    )


def test_step_range_of_one_run_of_several_is_its_own() -> None:
    recs = [Record(s, {"a - train/loss": 1.0}, s + 1) for s in range(3)]
    recs += [Record(s, {"b - train/loss": 1.0}, s + 10) for s in range(3, 10)]
    a, b = runlog.build_runlogs(recs, "x", "csv")
    assert (a.meta["run"], a.step_range, b.meta["run"], b.step_range) == ("a", (0.0, 2.0), "b", (3.0, 9.0))
    assert build_runlog(recs[:3], "x", "csv").step_range == (0.0, 2.0)


@pytest.mark.parametrize(
    "idx",
    [
        np.empty(0, dtype=np.int64),
        np.array([5], dtype=np.int64),
        np.array([3, 1, 2, 1, 3, 0], dtype=np.int64),
        np.concatenate([np.arange(0, 50, 2), np.arange(0, 50, 3), np.arange(7, 9)]).astype(np.int64),
    ],
)
def test_unique_indices_is_np_unique(idx) -> None:
    got = runlog._unique_indices(idx)
    assert got.dtype == np.int64
    assert got.tolist() == np.unique(idx).tolist()
