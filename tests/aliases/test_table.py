"""The alias table (trainproof.aliases.table) as resolve() applies it: which raw key stands
for each canonical metric, the step keys, the prefixed spellings."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from trainproof import aliases
from trainproof.aliases import ALIASES, CANONICAL, STEP_KEYS, resolve
from trainproof.api import read_runlog


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
