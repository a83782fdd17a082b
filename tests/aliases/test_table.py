"""The alias table (trainproof.aliases.table) as resolve() applies it: which raw key stands
for each canonical metric, the step keys, the prefixed spellings.

The order of the table is checked against precedences written here apart from it
(:data:`PROMISED`), never against the table itself, and tests that build a table in the
wrong order (reversed, or one alias moved) show that the check then fails."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from trainproof import aliases
from trainproof.aliases import ALIASES, CANONICAL, STEP_KEYS, resolve
from trainproof.aliases.table import alias_rank
from trainproof.api import read_runlog
from trainproof.runlog import Record, build_runlog


def sample(alias: str) -> str:
    """A raw key that an alias entry matches (regex entries get a concrete instance)."""
    if alias.startswith("re:"):
        return alias[3:].replace("(.+)", "squad").replace(".+", "AdamW")
    return alias


# --------------------------------------------------------------------------- the table


def test_every_canonical_name_has_aliases_and_no_alias_is_for_another_name() -> None:
    assert set(ALIASES) == set(CANONICAL)
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


#: Precedences the table's comments and the documentation promise, stated here apart from
#: the table, so that a table in the wrong order contradicts them: ``(canonical name, the
#: key that must win, the keys it must beat, why)``. Each canonical metric's own name
#: beating every other spelling of it is promised too (:func:`promises`).
PROMISED = [
    (
        "loss",
        winner,
        ["train_loss_epoch", "TrainEpochStats/avg_loss", "TrainEpochStats/avg_loss_1"],
        "a per-step train loss before the per-epoch aggregates (Lightning, Coqui)",
    )
    for winner in (
        "train/loss",
        "train_loss",
        "training_loss",
        "train_loss_step",
        "loss_step",
        "Loss/train",
        "train/loss_step",
        "loss/current",
        "TrainIterStats/loss",
        "loss_1",
        "TrainIterStats/loss_1",
    )
] + [
    ("loss", "TrainIterStats/loss", ["TrainIterStats/loss_1"], "a model's one loss before a GAN generator's"),
    ("loss", "TrainEpochStats/avg_loss", ["TrainEpochStats/avg_loss_1"], "a model's one loss before a GAN generator's"),
    *[
        ("eval_loss", winner, ["eval_squad_loss"], "a plain eval loss before one dataset's of several (HF)")
        for winner in ("val_loss", "validation_loss", "valid_loss", "val/loss", "eval/loss", "EvalStats/loss")
    ],
    ("eval_loss", "val_loss", ["val_loss_epoch"], "Lightning's per-step validation loss before its epoch aggregate"),
    ("eval_loss", "eval/avg_loss", ["eval/avg_loss_1"], "a model's one eval loss before a GAN generator's"),
    ("eval_loss", "EvalStats/avg_loss", ["EvalStats/avg_loss_1"], "a model's one eval loss before a GAN generator's"),
    (
        "reward",
        "rollout/return_history",
        ["rollout/return"],
        "the last 100 episodes' mean before the lagging all-time mean",
    ),
    *[
        (
            "reward",
            winner,
            ["eval_return", "eval/return", "evaluation/return"],
            "training episodes' returns before eval",
        )
        for winner in ("return", "train/return", "train_return", "mean_return", "average_return")
    ],
]


def promises() -> list[tuple[str, str, list[str], str]]:
    """:data:`PROMISED`, and for each canonical name: its own name beats every other alias."""
    own = [
        (canon, canon, [sample(a) for a in ALIASES[canon] if sample(a) != canon], "its own name first")
        for canon in CANONICAL
    ]
    return own + PROMISED


def broken_promises(only: str | None = None) -> list[str]:
    """Every promise :func:`resolve` breaks (of the canonical name ``only``, or of all): the
    loser wins a record holding the two keys (in either order), or ranks before the winner
    in a record holding every alias of the name."""
    broken = []
    for canon, winner, losers, why in promises():
        if only not in (None, canon):
            continue
        everything = resolve([sample(a) for a in ALIASES[canon]])[canon]
        ranked = [everything["source"], *everything["ignored"]]
        for loser in losers:
            for keys in ([winner, loser], [loser, winner]):
                m = resolve(keys).get(canon)
                if m != {"source": winner, "ignored": [loser], "how": "alias"}:
                    broken.append(f"{canon}: {keys} -> {m} ({why})")
            if loser not in ranked or winner not in ranked or ranked.index(loser) < ranked.index(winner):
                broken.append(f"{canon}: {loser!r} does not rank after {winner!r} among every alias ({why})")
    return broken


def test_the_table_keeps_its_promised_order() -> None:
    assert broken_promises() == []


def _with_table(monkeypatch, canon: str, order: list[str]) -> None:
    """Let resolve() read a table whose aliases of ``canon`` are ``order``."""
    from trainproof.aliases import table

    wrong = {**ALIASES, canon: tuple(order)}
    assert sorted(wrong[canon]) == sorted(ALIASES[canon])  # the same aliases, another order
    monkeypatch.setattr(table, "_TABLE", table.compile_table(wrong))


@pytest.mark.parametrize("canon", CANONICAL)
def test_a_reversed_table_breaks_a_promise(monkeypatch, canon: str) -> None:
    _with_table(monkeypatch, canon, list(reversed(ALIASES[canon])))
    assert broken_promises(canon)


def _moved(canon: str, alias: str, before: str) -> list[str]:
    order = [a for a in ALIASES[canon] if a != alias]
    order.insert(order.index(before), alias)
    return order


@pytest.mark.parametrize(
    ("canon", "alias", "before"),
    [
        ("loss", "train_loss_epoch", "train_loss_step"),  # an epoch aggregate moved up by one group
        ("loss", "TrainIterStats/loss_1", "TrainIterStats/loss"),  # two adjacent aliases swapped
        ("eval_loss", "re:eval_(.+)_loss", "EvalStats/loss"),
        ("reward", "rollout/return", "rollout/return_history"),
        ("reward", "eval_return", "average_return"),
    ],
)
def test_one_alias_out_of_place_breaks_a_promise(monkeypatch, canon: str, alias: str, before: str) -> None:
    _with_table(monkeypatch, canon, _moved(canon, alias, before))
    assert broken_promises(canon)


def test_a_record_of_every_alias_ranks_them_in_table_order() -> None:
    """One record per canonical metric holding all its aliases at once: the first alias is
    read, and the others are listed in table order (an alias that an earlier one, or a
    pattern, already matches would rank out of place). Case and a W&B run prefix change
    nothing, and two neighbours of the table rank the same in either column order."""
    for canon, names in ALIASES.items():
        keys = [sample(a) for a in names]
        for spelled in (keys, [k.upper() for k in keys], [f"my-run 3 - {k}" for k in keys]):
            run = build_runlog([Record(1.0, {k: float(i) for i, k in enumerate(spelled)}, 1)], "p", "jsonl")
            assert set(run.mapping) == {canon}, (canon, run.mapping)
            assert run.mapping[canon] == {"source": spelled[0], "ignored": spelled[1:], "how": "alias"}
            assert run.get(canon).key == spelled[0] and run.get(canon).values.tolist() == [0.0]
        for first, then in itertools.pairwise(keys):
            for pair in ([first, then], [then, first]):
                assert resolve(pair) == {canon: {"source": first, "ignored": [then], "how": "alias"}}


def test_no_alias_belongs_to_two_canonical_names() -> None:
    # resolve() gives a key to the first canonical name that claims it: an alias listed
    # under a second name would never be read there.
    claims = {
        (canon, sample(a)): [c for c in CANONICAL if alias_rank(c, sample(a)) is not None]
        for canon, names in ALIASES.items()
        for a in names
    }
    assert {k: v for k, v in claims.items() if v != [k[0]]} == {}


def test_wandb_band_columns_match_nothing() -> None:
    keys = [f"run - {sample(a)}{band}" for names in ALIASES.values() for a in names for band in ("__MIN", "__max")]
    assert resolve(keys) == {}


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


def test_kohya_step_loss_beats_its_running_mean() -> None:
    # kohya sd-scripts writes the step's loss beside its running mean over the epoch and the
    # epoch's mean: a spike shows only in the first
    m = resolve(["loss/average", "loss/epoch", "loss/current", "lr/unet"])
    assert m["loss"]["source"] == "loss/current"


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
        ("Learning Rate (group 0)", "lr"),  # a console print of each group's rate
        ("lr (group 1)", "lr"),
        ("train/lr (pg 0)", "lr"),
        ("trainer.learning_rate", "lr"),
        ("train_grad_norm", "grad_norm"),
        ("train/grad_norm", "grad_norm"),
        ("optim/total_grad_norm", "grad_norm"),
        ("optim_total_grad_norm", "grad_norm"),
        ("training/gradient_norm", "grad_norm"),
        ("train/episode_return", "reward"),  # an RL loop's SummaryWriter tag
        ("train/episodic_return", "reward"),
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
        "eval/episode_return",
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

    rows = [{"step": i, "train_loss": 3 + 0.01 * ((i * 7) % 5 - 2), "train_lr": 0.0} for i in range(40)]
    p = tmp_path / "metrics.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = read_runlog(p)
    assert run.series["lr"].key == "train_lr"
    assert np.all(run.series["lr"].values == 0.0)
    rep = judge(p)
    assert "TP-ZERO-LR" in rep.ids() and "TP-ZERO-LR" not in rep.skipped
