"""The alias table (trainproof.aliases) and the record stream -> RunLog builder (trainproof.runlog)."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from _helpers import assert_repeats_differ  # noqa: F401

from trainproof import aliases
from trainproof.aliases import ALIASES, CANONICAL, STEP_KEYS, MappingError, parse_map_option, resolve
from trainproof.api import read_runlog
from trainproof.runlog import Record, RunLog, Series, build_runlog


def sample(alias: str) -> str:
    """A raw key that an alias entry matches (regex entries get a concrete instance)."""
    if alias.startswith("re:"):
        return alias[3:].replace("(.+)", "squad").replace(".+", "AdamW")
    return alias


ALL_ALIASES = [(canon, alias) for canon, al in ALIASES.items() for alias in al]


# --------------------------------------------------------------------------- the table


def test_every_alias_is_for_a_canonical_name() -> None:
    assert set(ALIASES) <= set(CANONICAL)
    for canon in (
        "loss",
        "eval_loss",
        "lr",
        "grad_norm",
        "epoch",
        "time",
        "step_time",
        "loader_time",
        "gpu_util",
        "update_ratio",
    ):
        assert canon in CANONICAL  # the names DESIGN.md promises


@pytest.mark.parametrize("canon,alias", ALL_ALIASES, ids=[f"{c}<-{a}" for c, a in ALL_ALIASES])
def test_every_alias_resolves_to_its_canonical_name(canon: str, alias: str) -> None:
    raw = sample(alias)
    m = resolve([raw])
    assert m == {canon: {"source": raw, "ignored": [], "how": "alias"}}


@pytest.mark.parametrize("canon,alias", ALL_ALIASES, ids=[f"{c}<-{a}" for c, a in ALL_ALIASES])
def test_aliases_ignore_case_and_wandb_run_prefix(canon: str, alias: str) -> None:
    raw = sample(alias)
    assert resolve([raw.upper()])[canon]["source"] == raw.upper()
    wb = f"my-run 3 - {raw}"
    assert resolve([wb])[canon]["source"] == wb


@pytest.mark.parametrize("canon,alias", ALL_ALIASES, ids=[f"{c}<-{a}" for c, a in ALL_ALIASES])
def test_wandb_band_columns_match_nothing(canon: str, alias: str) -> None:
    raw = f"run - {sample(alias)}"
    assert resolve([raw + "__MIN", raw + "__MAX"]) == {}


def test_step_keys_are_never_metrics() -> None:
    assert resolve(list(STEP_KEYS)) == {}
    for k in STEP_KEYS:
        assert aliases.is_step_key(k) and aliases.is_step_key(k.upper())
    assert not aliases.is_step_key("loss")


def test_step_key_preference_order() -> None:
    assert aliases.step_key(["iter", "current_steps", "loss"]) == "current_steps"
    assert aliases.step_key(["_step", "global_step", "step"]) == "step"
    assert aliases.step_key(["Step", "x"]) == "Step"
    assert aliases.step_key(["loss", "epoch"]) is None
    # Permutations of the same keys give the same answer.
    keys = ["iteration", "trainer/global_step", "_step"]
    assert {aliases.step_key(p) for p in itertools.permutations(keys)} == {"_step"}


def test_unknown_keys_stay_unmapped() -> None:
    # An error metric that is not a loss word (RMSE, MAE, WER) is no fallback loss.
    assert resolve(["accuracy", "val_acc", "eval_wer", "train_rmse", "train_mae"]) == {}


# --------------------------------------------------------------------------- priority


def _pairs():
    for canon, al in ALIASES.items():
        for i, j in itertools.combinations(range(len(al)), 2):
            if sample(al[i]).lower() != sample(al[j]).lower():
                yield canon, al[i], al[j]


PAIRS = list(_pairs())


@pytest.mark.parametrize("canon,first,later", PAIRS, ids=[f"{c}:{a}>{b}" for c, a, b in PAIRS])
def test_earlier_alias_wins(canon: str, first: str, later: str) -> None:
    a, b = sample(first), sample(later)
    for keys in ([a, b], [b, a]):
        m = resolve(keys)[canon]
        assert m["source"] == a
        assert m["ignored"] == [b]


def test_ignored_candidates_are_listed_in_priority_order() -> None:
    keys = ["train_loss_epoch", "Loss/train", "train_loss", "loss", "train/loss"]
    for perm in itertools.permutations(keys):
        m = resolve(perm)["loss"]
        assert m["source"] == "loss"
        assert m["ignored"] == ["train/loss", "train_loss", "Loss/train", "train_loss_epoch"]


def test_ties_on_one_alias_go_to_the_alphabetically_first_key() -> None:
    # Two LearningRateMonitor columns match the same ``lr-.+`` entry.
    for perm in itertools.permutations(["lr-SGD", "lr-AdamW", "lr-Adam/pg2"]):
        m = resolve(perm)["lr"]
        assert m["source"] == "lr-Adam/pg2"
        assert m["ignored"] == ["lr-AdamW", "lr-SGD"]
    # Multi-dataset HF eval: eval_<name>_loss only when there is no plain eval loss.
    m = resolve(["eval_g1_loss", "eval_g0_loss"])["eval_loss"]
    assert m["source"] == "eval_g0_loss" and m["ignored"] == ["eval_g1_loss"]
    m = resolve(["eval_g1_loss", "eval_loss", "eval_g0_loss"])["eval_loss"]
    assert m["source"] == "eval_loss" and m["ignored"] == ["eval_g0_loss", "eval_g1_loss"]


def test_lightning_step_loss_beats_epoch_aggregate() -> None:
    m = resolve(["train_loss_epoch", "train_loss_step", "val_loss_epoch", "val_loss"])
    assert m["loss"] == {"source": "train_loss_step", "ignored": ["train_loss_epoch"], "how": "alias"}
    assert m["eval_loss"] == {"source": "val_loss", "ignored": ["val_loss_epoch"], "how": "alias"}


def test_a_raw_key_feeds_one_canonical_at_most() -> None:
    m = resolve(["loss", "eval_loss", "lr", "learning_rate", "epoch"])
    sources = [v["source"] for v in m.values()]
    assert len(sources) == len(set(sources))
    assert m["lr"]["source"] == "lr" and m["lr"]["ignored"] == ["learning_rate"]


# --------------------------------------------------------------------------- --map


def test_parse_map_option() -> None:
    assert parse_map_option([]) == {}
    assert parse_map_option(["loss=my_loss", " eval_loss = val/ce "]) == {"loss": "my_loss", "eval_loss": "val/ce"}
    # Only the first '=' splits: column names may contain '='.
    assert parse_map_option(["loss=a=b"]) == {"loss": "a=b"}


@pytest.mark.parametrize(
    "item,match",
    [
        ("loss", "CANON=COLUMN"),
        ("loss:my_loss", "CANON=COLUMN"),
        ("=my_loss", "CANON=COLUMN"),
        ("loss=", "CANON=COLUMN"),
        ("  =  ", "CANON=COLUMN"),
        ("accuracy=acc", "unknown canonical name 'accuracy'"),
        ("Loss=acc", "unknown canonical name 'Loss'"),
    ],
)
def test_parse_map_option_errors(item: str, match: str) -> None:
    with pytest.raises(MappingError, match=match):
        parse_map_option([item])


def test_map_override_beats_the_alias_table() -> None:
    keys = ["loss", "my_loss", "eval_loss"]
    m = resolve(keys, {"loss": "my_loss"})
    assert m["loss"] == {"source": "my_loss", "ignored": [], "how": "map"}
    assert m["eval_loss"]["source"] == "eval_loss"
    # The alias winner that the override displaced is not silently reused elsewhere.
    assert "loss" not in [v["source"] for v in m.values()]


def test_map_override_takes_a_column_from_another_canonical() -> None:
    m = resolve(["loss", "train_loss"], {"eval_loss": "loss"})
    assert m["eval_loss"]["source"] == "loss" and m["eval_loss"]["how"] == "map"
    assert m["loss"]["source"] == "train_loss"


def test_map_override_column_must_exist() -> None:
    with pytest.raises(MappingError, match="no column 'nope'") as ei:
        resolve(["loss", "acc"], {"loss": "nope"})
    assert "acc" in str(ei.value) and "loss" in str(ei.value)  # lists what the log has


def test_map_override_column_must_match_exactly() -> None:
    with pytest.raises(MappingError):
        resolve(["Train/Loss"], {"loss": "train/loss"})


def test_two_overrides_for_one_column_are_an_error() -> None:
    with pytest.raises(MappingError, match="already mapped to loss"):
        resolve(["x", "y"], {"loss": "x", "eval_loss": "x"})


@pytest.mark.slow
def test_map_through_read_runlog(tmp_path: Path) -> None:
    p = tmp_path / "m.jsonl"
    p.write_text("".join(json.dumps({"step": s, "loss": 9.0, "ce": 1.0 / s}) + "\n" for s in (1, 2)))
    run = read_runlog(p, mapping={"loss": "ce"})
    assert run.get("loss").key == "ce"
    assert run.get("loss").values.tolist() == [1.0, 0.5]
    # The unmapped "loss" column keeps its values but cannot shadow the canonical name.
    assert run.get("raw:loss").values.tolist() == [9.0, 9.0]
    assert run.mapping["loss"]["how"] == "map"
    with pytest.raises(MappingError):
        read_runlog(p, mapping={"loss": "cross_entropy"})


# --------------------------------------------------------------------------- build_runlog


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


# --------------------------------------------------------------------------- prefixed spellings


@pytest.mark.parametrize(
    ("raw", "canon"),
    [
        ("train_lr", "lr"),
        ("train/lr", "lr"),
        ("training/learning_rate", "lr"),
        ("Train-LR", "lr"),
        ("optim/learning_rate_group0", "lr"),
        ("optim_learning_rate_group0", "lr"),  # the console reader writes "/" as "_"
        ("optimizer/lr_group_1", "lr"),
        ("lr/pg0", "lr"),
        ("trainer.learning_rate", "lr"),
        ("train_grad_norm", "grad_norm"),
        ("train/grad_norm", "grad_norm"),
        ("optim/total_grad_norm", "grad_norm"),
        ("optim_total_grad_norm", "grad_norm"),
        ("training/gradient_norm", "grad_norm"),
    ],
)
def test_train_side_prefixed_names_map_to_the_canonical_name(raw: str, canon: str) -> None:
    m = resolve([raw, "loss"])
    assert m[canon]["source"] == raw
    assert m[canon]["how"] == "alias"


@pytest.mark.parametrize(
    "raw",
    [
        "lr_scale",
        "train_lr_scale",
        "lr_scheduler_step",
        "grad_norm_clip",
        "train/grad_norm_clip",
        "optim/grad_norm_clipped",
        "eval/grad_norm",
        "eval_lr",
        "val/learning_rate",
        "test_grad_norm",
        "train_norm",  # "norm" alone is no gradient norm outside llm.c's log
        "group0",
        "train_",
        "optim/learning_rate_groupx",
    ],
)
def test_a_canonical_name_does_not_take_a_column_that_means_something_else(raw: str) -> None:
    m = resolve([raw, "loss"])
    assert "lr" not in m and "grad_norm" not in m, m


def test_a_name_as_written_beats_its_prefixed_spelling() -> None:
    m = resolve(["train_lr", "lr", "optim/total_grad_norm", "grad_norm", "loss"])
    assert m["lr"]["source"] == "lr" and m["lr"]["ignored"] == ["train_lr"]
    assert m["grad_norm"]["source"] == "grad_norm" and m["grad_norm"]["ignored"] == ["optim/total_grad_norm"]


def test_parameter_groups_go_to_the_first_group() -> None:
    m = resolve(["optim/learning_rate_group1", "optim/learning_rate_group0", "loss"])
    assert m["lr"]["source"] == "optim/learning_rate_group0"
    assert m["lr"]["ignored"] == ["optim/learning_rate_group1"]


def test_a_prefixed_lr_is_judged_not_absent(tmp_path: Path) -> None:
    from trainproof.api import judge

    rows = [{"step": i, "train_loss": 3 - i * 0.01, "train_lr": 0.0} for i in range(40)]
    p = tmp_path / "metrics.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = read_runlog(p)
    assert run.series["lr"].key == "train_lr"
    assert np.all(run.series["lr"].values == 0.0)
    rep = judge(p)
    assert "TP-ZERO-LR" in rep.ids() and "TP-ZERO-LR" not in rep.skipped
