"""The ``--map`` option and the overrides resolve() applies (trainproof.aliases.mapping)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainproof.aliases import MappingError, parse_map_option, resolve
from trainproof.api import read_runlog


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


@pytest.mark.parametrize(
    "keys,expected",
    [
        (["Loss/train", "Learning Rate"], {"lr": "Learning Rate"}),
        (
            ["train/loss", "train/learning rate", "train/grad norm"],
            {"lr": "train/learning rate", "grad_norm": "train/grad norm"},
        ),
        (["loss", "grad  norm", "learning\trate"], {"grad_norm": "grad  norm", "lr": "learning\trate"}),
    ],
)
def test_a_name_spelled_with_spaces_is_the_name_with_underscores(keys, expected) -> None:
    # TensorBoard's "Learning Rate" and an MLflow "train/grad norm" went unread, so the
    # learning-rate and gradient rules were silently "absent" (helper 70: an lr cut to 0 PASSed)
    m = resolve(keys)
    for canon, key in expected.items():
        assert m[canon]["source"] == key and m[canon]["how"] == "alias", m


def test_a_spaced_learning_rate_of_0_is_judged_through_an_event_file(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    from conftest import run_cli

    w = SummaryWriter(str(tmp_path / "run"))
    for i in range(200):
        step = 10 * i
        w.add_scalar("Loss/train", 0.6 + 1.7 * 2.718 ** (-i / 20) if i < 100 else 0.62, step)
        w.add_scalar("Learning Rate", 3e-4 if i < 100 else 0.0, step)
    w.close()
    code, _, _, doc = run_cli("judge", str(tmp_path / "run"), "--json")
    rep = doc["reports"][0]
    assert rep["mapping"]["lr"]["source"] == "Learning Rate"
    assert any(f["id"].startswith("TP-ZERO-LR") for f in rep["findings"]), rep["findings"]
