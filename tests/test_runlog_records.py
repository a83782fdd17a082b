"""The record stream -> RunLog builder (trainproof.runlog.build_runlog): columns, steps,
rewrites, non-finite values, and the notes on what the mapping left out."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _helpers import assert_repeats_differ

from trainproof.aliases import MappingError
from trainproof.runlog import Record, RunLog, Series, build_runlog


def recs(*rows) -> list[Record]:
    return [Record(step, dict(values), line) for step, values, line in rows]


def test_build_runlog_basic_columns() -> None:
    run = build_runlog(
        recs(
            (10, {"loss": 2.0, "learning_rate": 0.1, "acc": 0.5}, 3),
            (20, {"loss": 1.0, "learning_rate": 0.2}, 7),
            (30, {"eval_loss": 1.5}, 9),
        ),
        "x.log",
        "jsonl",
        meta={"max_steps": 30},
        notes=["a note"],
    )
    assert isinstance(run, RunLog)
    assert run.path == "x.log" and run.format == "jsonl"
    assert run.records == 3
    assert run.step_range == (10.0, 30.0)
    assert set(run.series) == {"loss", "lr", "acc", "eval_loss"}
    loss = run.get("loss")
    assert isinstance(loss, Series) and loss.name == "loss" and loss.key == "loss"
    assert loss.steps.dtype == np.float64 and loss.values.dtype == np.float64 and loss.lines.dtype == np.int64
    assert loss.steps.tolist() == [10, 20] and loss.lines.tolist() == [3, 7] and len(loss) == 2
    lr = run.get("lr")
    assert lr.name == "lr" and lr.key == "learning_rate" and lr.values.tolist() == [0.1, 0.2]
    assert run.get("acc").steps.tolist() == [10]
    assert run.meta == {"max_steps": 30}
    assert run.notes == ["a note"]
    assert run.get("nope") is None


def test_build_runlog_copies_meta_and_notes() -> None:
    meta, notes = {"max_steps": 3}, ["n"]
    run = build_runlog(recs((1, {"loss": 1.0}, 1)), "p", "f", meta=meta, notes=notes)
    run.meta["x"] = 1
    run.notes.append("more")
    assert meta == {"max_steps": 3} and notes == ["n"]


def test_empty_stream() -> None:
    run = build_runlog([], "p", "hf")
    assert run.records == 0 and run.series == {} and run.step_range is None and run.mapping == {}


def test_records_without_step_take_the_last_step_seen() -> None:
    run = build_runlog(
        recs(
            (None, {"a": 0.0}, 1),  # before the first step: takes the first step
            (5, {"loss": 2.0}, 2),
            (None, {"eval_loss": 1.9}, 3),
            (10, {"loss": 1.0}, 4),
            (math.nan, {"eval_loss": 1.7}, 5),  # a non-finite step is no step
            (math.inf, {"b": 1.0}, 6),
        ),
        "p",
        "jsonl",
    )
    assert run.get("a").steps.tolist() == [5]
    assert run.get("eval_loss").steps.tolist() == [5, 10]
    assert run.get("b").steps.tolist() == [10]
    assert run.step_range == (5.0, 10.0)


def test_no_steps_anywhere_uses_record_index() -> None:
    run = build_runlog(recs((None, {"loss": 3.0}, 1), (None, {"loss": 2.0}, 2), (None, {"x": 1.0}, 3)), "p", "csv")
    assert run.get("loss").steps.tolist() == [0, 1]
    assert run.get("x").steps.tolist() == [2]
    assert run.step_range == (0.0, 2.0)
    assert not any("epoch" in n for n in run.notes)


def test_no_steps_uses_epoch_column_when_every_record_has_one() -> None:
    run = build_runlog(
        recs(
            (None, {"epoch": 0.0, "loss": 3.0}, 2),
            (None, {"epoch": 1.0, "loss": 2.0}, 3),
            (None, {"epoch": 2.0, "val_loss": 2.5}, 4),
        ),
        "p",
        "csv",
    )
    assert run.get("loss").steps.tolist() == [0, 1]
    assert run.get("eval_loss").steps.tolist() == [2]
    assert "no step column: the epoch is the x axis" in run.notes


@pytest.mark.parametrize(
    "rows",
    [
        [(None, {"epoch": 0.0, "loss": 3.0}, 1), (None, {"loss": 2.0}, 2)],  # one record lacks the epoch
        [(None, {"epoch": 0.0, "loss": 3.0}, 1), (None, {"epoch": math.nan, "loss": 2.0}, 2)],  # non-finite
    ],
)
def test_epoch_axis_needs_a_finite_epoch_in_every_record(rows) -> None:
    run = build_runlog(recs(*rows), "p", "csv")
    assert run.get("loss").steps.tolist() == [0, 1]
    assert not any("epoch is the x axis" in n for n in run.notes)


def test_unsorted_steps_are_sorted_stably_and_the_later_write_wins() -> None:
    run = build_runlog(
        recs(
            (3, {"loss": 3.0}, 1),
            (1, {"loss": 1.0}, 2),
            (2, {"loss": 2.0}, 3),
            (1, {"loss": 1.5}, 4),
            (3, {"loss": 3.0}, 5),
        ),
        "p",
        "jsonl",
    )
    loss = run.get("loss")
    assert loss.steps.tolist() == [1, 2, 3]
    assert loss.values.tolist() == [1.5, 2.0, 3.0]
    assert loss.lines.tolist() == [4, 3, 5]
    (note,) = [n for n in run.notes if "more than once" in n]
    assert note.endswith("the later write was kept for: loss")


def test_identical_rewrites_are_not_reported() -> None:
    run = build_runlog(recs((1, {"loss": math.nan, "x": 1.0}, 1), (1, {"loss": math.nan, "x": 1.0}, 2)), "p", "f")
    assert len(run.get("loss")) == 1 and run.get("loss").lines.tolist() == [2]
    assert not run.notes


def test_rewritten_note_lists_at_most_ten_keys() -> None:
    keys = [f"m{i:02d}" for i in range(12)]
    # Step 1 is written again after the step went back to it (a resume): the later write wins.
    run = build_runlog(
        recs((1, {k: 1.0 for k in keys}, 1), (2, {k: 1.5 for k in keys}, 2), (1, {k: 2.0 for k in keys}, 3)), "p", "f"
    )
    (note,) = run.notes
    assert "m00" in note and "m09" in note and "m10" not in note and note.endswith("and 2 more")
    assert all(run.get(k).values.tolist() == [2.0, 1.5] for k in keys)


def test_non_finite_values_are_kept() -> None:
    run = build_runlog(recs((1, {"loss": math.nan}, 1), (2, {"loss": math.inf}, 2), (3, {"loss": 1.0}, 3)), "p", "f")
    loss = run.get("loss")
    assert np.isnan(loss.values[0]) and loss.values[1] == np.inf
    fin = loss.finite()
    assert fin.steps.tolist() == [3] and fin.values.tolist() == [1.0] and fin.lines.tolist() == [3]
    assert loss.finite_mask.tolist() == [False, False, True]


def test_ignored_candidates_are_noted() -> None:
    run = build_runlog(recs((1, {"loss": 1.0, "train_loss": 2.0, "train/loss": 3.0}, 1)), "p", "f")
    assert run.get("loss").key == "loss"
    assert run.get("train_loss").values.tolist() == [2.0]  # still reachable under its raw name
    assert "loss: read from 'loss'; also present: 'train/loss', 'train_loss'" in run.notes
    assert run.mapping["loss"]["ignored"] == ["train/loss", "train_loss"]


def test_ignored_note_is_capped_at_five() -> None:
    keys = [f"lr-opt{i}" for i in range(8)]
    run = build_runlog(recs((1, {k: 0.1 for k in keys}, 1)), "p", "f")
    (note,) = run.notes
    assert note.startswith("lr: read from 'lr-opt0'") and note.endswith("and 2 more")


def test_unmapped_key_never_shadows_a_canonical_name() -> None:
    # "Loss" and "loss" both match the alias "loss"; the winner is the canonical series.
    run = build_runlog(recs((1, {"Loss": 1.0, "loss": 2.0}, 1)), "p", "f")
    assert run.get("loss").key == "Loss" and run.get("loss").values.tolist() == [1.0]
    assert run.get("raw:loss").key == "loss" and run.get("raw:loss").values.tolist() == [2.0]


def test_overrides_reach_build_runlog_and_missing_columns_raise() -> None:
    rows = recs((1, {"loss": 5.0, "nll": 1.0}, 1))
    run = build_runlog(rows, "p", "f", overrides={"loss": "nll"})
    assert run.get("loss").key == "nll" and run.get("raw:loss").values.tolist() == [5.0]
    with pytest.raises(MappingError):
        build_runlog(recs((1, {"loss": 5.0}, 1)), "p", "f", overrides={"loss": "nll"})


def test_series_steps_are_sorted_and_repeat_only_with_different_values_for_random_streams() -> None:
    rng = np.random.default_rng(7)
    rows = []
    for i in range(300):
        step = None if rng.random() < 0.1 else float(rng.integers(0, 40))
        vals = {k: float(rng.normal()) for k in ("loss", "lr", "acc") if rng.random() < 0.6}
        rows.append(Record(step, vals, i + 1))
    run = build_runlog(rows, "p", "f")
    for s in run.series.values():
        assert_repeats_differ(s)
        assert len(s.steps) == len(s.values) == len(s.lines)
    # Deterministic: the same stream gives the same RunLog.
    again = build_runlog(rows, "p", "f")
    for k, s in run.series.items():
        assert np.array_equal(s.values, again.series[k].values)
        assert np.array_equal(s.lines, again.series[k].lines)
    assert run.notes == again.notes
