"""The loss fallback order (trainproof.aliases.loss_fallback): which key is the loss
when no alias names it, and the logs that make the choice (files the tests write)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainproof import aliases
from trainproof.aliases import loss_candidate, resolve, words
from trainproof.api import judge, read_runlog
from trainproof.runlog import Record, build_runlog


def src(keys, canon="loss"):
    m = resolve(keys).get(canon)
    return None if m is None else m["source"]


# --------------------------------------------------------------------------- words


def test_words_split_at_separators_and_case_changes() -> None:
    assert words("train/CrossEntropyLoss") == ["train", "cross", "entropy", "loss"]
    assert words("Train Loss") == ["train", "loss"]
    assert words("Logloss") == ["logloss"]
    assert words("run-7 - val/box_loss") == ["val", "box", "loss"]


@pytest.mark.parametrize(
    "key",
    [
        "mean_loss",
        "total_loss",
        "loss_epoch",
        "train/CrossEntropyLoss",
        "Train Loss",
        "train_loss_batch",
        "train_elbo_loss",
        "train/nll_loss",
        "Logloss",
        "train_mse",
        "Cost",
        "current_loss",
        "nll",
        "xent",
        "cross-entropy",
        "Train-cross-entropy",
        "categorical_crossentropy",
    ],
)
def test_loss_names_are_candidates(key: str) -> None:
    c = loss_candidate(key)
    assert c is not None and c["total"], key


@pytest.mark.parametrize(
    "key", ["neg_elbo", "nelbo", "negative_log_likelihood", "neg_log_likelihood", "bpd", "elbo_loss"]
)
def test_a_maximised_objective_negated_or_named_a_loss_is_a_loss(key: str) -> None:
    c = loss_candidate(key)
    assert c is not None and c["total"], key


@pytest.mark.parametrize(
    "key,split", [("train/bpb", "train"), ("val_bpb", "eval"), ("bpc", "unmarked"), ("test/bpd", "eval")]
)
def test_a_cross_entropy_in_bits_is_a_loss(key: str, split: str) -> None:
    # bits per byte (enwik8, byte-level language models), per character (text8), per
    # dimension (image density models): a new user's enwik8 log of train/bpb alone had no loss
    c = loss_candidate(key)
    assert c is not None and c["total"] and c["split"] == split, (key, c)


@pytest.mark.parametrize("key", ["elbo", "train/elbo", "ELBO", "log_likelihood", "val_elbo"])
def test_a_maximised_objective_named_alone_is_no_loss(key: str) -> None:
    # A VAE logs its ELBO rising, Pyro's SVI its negative falling: a key that names only the
    # objective does not say which, and read as a loss a rising ELBO FAILed TP-DIVERGE.
    assert loss_candidate(key) is None


@pytest.mark.parametrize(
    "key",
    [
        "loss_scale",
        "train/loss_scale",
        "val_accuracy",
        "loss_acc",
        "lr",
        "loss_count",
        "num_loss_tokens",
        "loss_time",
        "train/loss__MIN",
        "run - train/loss__MAX",
        "grad_norm_loss_critic",
        "best_val_loss",
        "loss_weight",
        "loss_min",
        "accuracy",
        "train_rmse",
        "eval_wer",
        "timestamp",
        "entropy",
        "policy_entropy",
        "cross_entropy_weight",
        "val_lm_loss_ppl",
        "train/loss_perplexity",
    ],
)
def test_never_a_loss(key: str) -> None:
    assert loss_candidate(key) is None, key


@pytest.mark.parametrize(
    "key,part",
    [
        ("loss_cls", True),
        ("train/box_loss", True),
        ("loss_rpn_loc", True),
        ("train_recon_loss", True),
        ("total_loss", False),
        ("train/CrossEntropyLoss", False),
        ("val/rmse_loss", False),
        ("mean_loss", False),
        # one-word loss names: a prefix is a part unless it names the kind, split or aggregate
        ("train/ZLoss", True),
        ("auxloss", True),
        ("Logloss", False),
        ("BCELoss", False),
        ("valloss", False),
        ("meanloss", False),
    ],
)
def test_total_or_component(key: str, part: bool) -> None:
    assert loss_candidate(key)["total"] is not part


# --------------------------------------------------------------------------- the order


@pytest.mark.parametrize(
    "keys,want",
    [
        (["loss_cls", "total_loss", "loss_box_reg"], "total_loss"),  # a total beats a component
        (["mean_loss", "train_loss_batch"], "train_loss_batch"),  # train beats unmarked
        (["loss_epoch", "loss_batch"], "loss_batch"),  # per step beats per epoch
        (["train_cost_epoch", "train_cost"], "train_cost"),  # unmarked beats per epoch
        (["train_elbo_loss", "train_recon_loss", "val_elbo_loss"], "train_elbo_loss"),
        (["train/nll_loss", "val/rmse_loss", "lr-Adam"], "train/nll_loss"),
        (["iter_Logloss_x", "Logloss"], "Logloss"),  # fewer words
        (["total_loss", "policy_gradient_loss", "value_loss", "entropy_loss"], "total_loss"),
    ],
)
def test_fallback_order(keys: list[str], want: str) -> None:
    for perm in itertools.permutations(keys):
        m = resolve(perm)["loss"]
        assert m["source"] == want and m["how"] == "fallback"
        assert want not in m["ignored"]


def test_the_runner_up_is_listed_first() -> None:
    m = resolve(["loss_cls", "total_loss", "loss_epoch"])["loss"]
    assert m["source"] == "total_loss"
    assert m["ignored"][0] == "loss_epoch"  # a total (per epoch) before a component
    assert m["ignored"] == ["loss_epoch", "loss_cls"]
    assert "why" in m


def test_train_and_val_losses_map_both() -> None:
    m = resolve(["epoch", "train_mse", "val_mse", "train_r2"])
    assert m["loss"]["source"] == "train_mse" and m["eval_loss"]["source"] == "val_mse"
    assert m["loss"]["how"] == m["eval_loss"]["how"] == "fallback"


@pytest.mark.parametrize("key", ["val/nll_loss", "test_loss", "Validation Cost", "dev_ce_loss"])
def test_an_eval_only_loss_is_the_eval_loss_never_the_train_loss(key: str) -> None:
    m = resolve([key, "step", "accuracy"])
    assert "loss" not in m
    assert m["eval_loss"]["source"] == key


def test_the_alias_table_comes_first() -> None:
    m = resolve(["train_loss", "total_loss", "val_loss", "val_total_loss"])
    assert m["loss"] == {"source": "train_loss", "ignored": [], "how": "alias"}
    assert m["eval_loss"]["how"] == "alias" and m["eval_loss"]["source"] == "val_loss"


def test_an_alias_of_another_metric_is_no_fallback_loss() -> None:
    # EvalStats/avg_loss is Coqui's eval loss by the alias table, whatever its case.
    m = resolve(["EVALSTATS/AVG_LOSS"])
    assert "loss" not in m and m["eval_loss"]["source"] == "EVALSTATS/AVG_LOSS"


def test_components_of_one_objective_are_summed() -> None:
    keys = [
        "epoch",
        "train/box_loss",
        "train/obj_loss",
        "train/cls_loss",
        "val/box_loss",
        "val/obj_loss",
        "val/cls_loss",
        "metrics/precision",
        "x/lr0",
    ]
    m = resolve(keys)
    assert m["loss"]["sum_of"] == ["train/box_loss", "train/cls_loss", "train/obj_loss"]
    assert m["loss"]["source"] == "train/box_loss+train/cls_loss+train/obj_loss"
    assert m["eval_loss"]["sum_of"] == ["val/box_loss", "val/cls_loss", "val/obj_loss"]


def test_a_loss_named_by_its_kind_beside_components_is_one_of_them() -> None:
    # RT-DETR's results.csv: its L1 box term is a component, not the total (read alone, a
    # diverging class loss was never seen)
    keys = [
        "epoch",
        "train/giou_loss",
        "train/cls_loss",
        "train/l1_loss",
        "val/giou_loss",
        "val/cls_loss",
        "val/l1_loss",
    ]
    m = resolve(keys)
    assert m["loss"]["sum_of"] == ["train/cls_loss", "train/giou_loss", "train/l1_loss"]
    assert m["eval_loss"]["sum_of"] == ["val/cls_loss", "val/giou_loss", "val/l1_loss"]
    # a VAE's reconstruction by its kind and its KL term
    assert resolve(["mse_loss", "kld_loss"])["loss"]["sum_of"] == ["kld_loss", "mse_loss"]
    # alone, or beside a real total, or beside an eval component only, a kind is the total
    assert resolve(["train/l1_loss"])["loss"]["source"] == "train/l1_loss"
    assert resolve(["train/l1_loss", "train/total_loss", "train/cls_loss"])["loss"]["source"] == "train/total_loss"
    assert resolve(["train/mse_loss", "val/aux_loss"])["loss"]["source"] == "train/mse_loss"
    # a mean of a kind is a total by its own words
    assert resolve(["mean_mse_loss", "train/aux_loss"])["loss"]["source"] == "mean_mse_loss"


@pytest.mark.parametrize(
    "keys,want,aux",
    [
        # a mixture-of-experts log with no total: the LM loss, never its sum with the
        # router's load-balancing loss and z-loss (weighted ~1e-2 and ~1e-3 in the run)
        (["lm_loss", "aux_loss", "z_loss", "lr"], "lm_loss", ["aux_loss", "z_loss"]),
        (["train/lm_loss", "train/router_z_loss", "train/load_balancing_loss"], "train/lm_loss", None),
        (["loss_ce", "loss_aux", "moe_loss"], "loss_ce", None),
        # OLMo's console: train/ZLoss (read as one word, zloss) is the z-loss, not a total
        (["train/CrossEntropyLoss", "train/ZLoss", "train/Perplexity"], "train/CrossEntropyLoss", ["train/ZLoss"]),
        (["train_cross_entropy_loss", "train_zloss"], "train_cross_entropy_loss", ["train_zloss"]),
    ],
)
def test_an_auxiliary_loss_is_never_the_loss_nor_summed_into_it(keys: list[str], want: str, aux) -> None:
    for perm in itertools.permutations(keys):
        m = resolve(perm)["loss"]
        assert m["source"] == want and "sum_of" not in m
        if aux is not None:
            assert m["ignored"][-len(aux) :] == aux


def test_a_one_word_loss_name_marks_its_split() -> None:
    # valloss beside trainloss was an unmarked loss, ignored: the overfit rule never ran
    m = resolve(["epoch", "trainloss", "valloss"])
    assert m["loss"]["source"] == "trainloss" and m["eval_loss"]["source"] == "valloss"
    assert resolve(["testloss", "batchloss"])["eval_loss"]["source"] == "testloss"
    assert loss_candidate("epochloss")["granularity"] == "epoch"


def test_auxiliary_losses_alone_and_coordinates() -> None:
    # alone, an auxiliary loss is what the log has
    assert src(["aux_loss"]) == "aux_loss"
    assert resolve(["aux_loss", "z_loss"])["loss"]["sum_of"] == ["aux_loss", "z_loss"]
    # beside x and y, z is the third coordinate's loss: summed with them
    assert resolve(["x_loss", "y_loss", "z_loss"])["loss"]["sum_of"] == ["x_loss", "y_loss", "z_loss"]
    # detectron2's box regression term is a component, not an auxiliary one
    assert resolve(["loss_cls", "loss_box_reg"])["loss"]["sum_of"] == ["loss_box_reg", "loss_cls"]
    # Megatron's validation line: the loss and its perplexity, never their sum
    assert resolve(["lm_loss", "val_lm_loss", "val_lm_loss_ppl"])["eval_loss"]["source"] == "val_lm_loss"


@pytest.mark.parametrize(
    "keys",
    [
        ["train/loss_critic", "train/loss_actor"],
        ["policy_gradient_loss", "value_loss", "entropy_loss"],
        ["loss_generator", "loss_discriminator"],
        ["d_loss", "g_loss"],
        ["loss_D", "loss_G"],
        ["lossD", "lossG"],
        ["train/d_loss", "train/g_loss"],
    ],
)
def test_components_of_separate_networks_map_no_loss(keys: list[str]) -> None:
    assert "loss" not in resolve(keys)


def test_one_d_component_alone_is_not_a_gan() -> None:
    # A depth loss and a colour loss (loss_d, loss_rgb) are one objective's terms: summed.
    assert resolve(["loss_d", "loss_rgb"])["loss"]["sum_of"] == ["loss_d", "loss_rgb"]


def test_too_many_components_are_not_one_objective() -> None:
    keys = [f"train/agent{i}_loss" for i in range(aliases.MAX_SUM_PARTS + 1)]
    m = resolve(keys)["loss"]
    assert "sum_of" not in m and m["source"] == sorted(keys)[0]


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    st.permutations(
        [
            "epoch",
            "train/box_loss",
            "train/obj_loss",
            "val/box_loss",
            "loss_scale",
            "lr",
            "val_accuracy",
            "total_loss",
            "loss_epoch",
            "mean_loss",
            "train_loss_batch",
            "val/nll",
        ]
    )
)
def test_column_order_changes_nothing(keys: list[str]) -> None:
    assert resolve(keys) == resolve(sorted(keys))


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "loss_scale",
                "val_accuracy",
                "lr",
                "learning_rate",
                "num_tokens",
                "timestamp",
                "train/loss__MIN",
                "grad_norm",
                "epoch",
                "accuracy",
                "loss_count",
            ]
        ),
        unique=True,
    )
)
def test_non_losses_are_never_chosen(keys: list[str]) -> None:
    m = resolve(keys)
    assert "loss" not in m and "eval_loss" not in m


# --------------------------------------------------------------------------- RunLogs


def test_a_summed_loss_is_the_sum_at_shared_steps() -> None:
    recs = [
        Record(float(s), {"train/box_loss": 1.0 / (s + 1), "train/cls_loss": 0.0, "train/obj_loss": 0.5}, s + 2)
        for s in range(10)
    ]
    recs.append(Record(10.0, {"train/box_loss": 0.05}, 12))  # a step with one part only
    run = build_runlog(recs, "r.csv", "csv")
    loss = run.get("loss")
    assert loss.steps.tolist() == list(map(float, range(10)))
    assert np.allclose(loss.values, [1.0 / (s + 1) + 0.5 for s in range(10)])
    assert run.get("train/box_loss") is not None  # the parts stay readable
    assert any("sum of" in n for n in run.notes)


def test_parts_logged_at_different_steps_read_the_first_part() -> None:
    recs = [Record(float(s), {"a_loss" if s % 2 else "b_loss": 1.0}, s) for s in range(20)]
    run = build_runlog(recs, "r.jsonl", "jsonl")
    assert run.get("loss").key == "a_loss"
    assert run.mapping["loss"]["source"] == "a_loss" and "sum_of" not in run.mapping["loss"]


def _write_csv(path: Path, header: list[str], rows: list[list[float]]) -> Path:
    path.write_text(",".join(header) + "\n" + "".join(",".join(repr(v) for v in r) + "\n" for r in rows))
    return path


def test_yolo_results_with_padded_header(tmp_path: Path) -> None:
    names = [
        "epoch",
        "train/box_loss",
        "train/obj_loss",
        "train/cls_loss",
        "metrics/mAP_0.5",
        "val/box_loss",
        "val/obj_loss",
        "val/cls_loss",
        "x/lr0",
    ]
    lines = [",".join(f"{n:>20}" for n in names)]
    for e in range(30):
        vals = [e, 0.1 / (1 + e), 0.05 / (1 + e), 0.0, 0.5 + e / 100, 0.09 / (1 + e), 0.04 / (1 + e), 0.0, 0.01]
        lines.append(",".join(f"{v:>20.6g}" for v in vals))
    p = tmp_path / "results.csv"
    p.write_text("\n".join(lines) + "\n")
    run = read_runlog(p)
    loss = run.get("loss")
    assert run.mapping["loss"]["sum_of"] == ["train/box_loss", "train/cls_loss", "train/obj_loss"]
    assert np.allclose(loss.values, [float(f"{0.1 / (1 + e):.6g}") + float(f"{0.05 / (1 + e):.6g}") for e in range(30)])
    assert run.get("eval_loss") is not None
    # A class loss that is zero by construction does not make the total a zero loss.
    rep = judge(p)
    assert rep.verdict.value != "FAIL"


def test_detectron2_metrics_json_reads_total_loss(tmp_path: Path) -> None:
    p = tmp_path / "metrics.json"
    with p.open("w") as f:
        for i in range(19, 2000, 20):
            f.write(
                json.dumps(
                    {
                        "iteration": i,
                        "total_loss": 2.0 / (1 + i / 200),
                        "loss_cls": 1.0 / (1 + i / 200),
                        "loss_box_reg": 0.3,
                        "lr": 2.5e-4,
                        "fast_rcnn/cls_accuracy": 0.9,
                        "rpn/num_pos_anchors": 20.0,
                        "time": 0.3,
                    }
                )
                + "\n"
            )
    run = read_runlog(p)
    assert run.mapping["loss"]["source"] == "total_loss" and run.mapping["loss"]["how"] == "fallback"
    assert set(run.mapping["loss"]["ignored"]) == {"loss_cls", "loss_box_reg"}
    assert run.get("loss").steps[0] == 19
    assert run.get("lr") is not None


def test_validation_only_csv_is_judged_as_eval_loss(tmp_path: Path) -> None:
    p = _write_csv(
        tmp_path / "history.csv",
        ["epoch", "val_mse", "val_r2"],
        [[e, 1.0 / (1 + e), 0.5] for e in range(20)] + [[20, float("nan"), 0.5]],
    )
    run = read_runlog(p)
    assert run.get("loss") is None and run.get("eval_loss").key == "val_mse"
    rep = judge(p)
    assert "TP-NO-LOSS" not in {f.id for f in rep.findings}


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(st.permutations(list(range(9))))
def test_shuffled_csv_columns_read_the_same_loss(tmp_path_factory, order: list[int]) -> None:
    names = [
        "epoch",
        "train/box_loss",
        "train/obj_loss",
        "train/cls_loss",
        "metrics/mAP_0.5",
        "val/box_loss",
        "val/obj_loss",
        "lr0",
        "loss_scale",
    ]
    rows = [[e, 0.1 / (1 + e), 0.05 / (1 + e), 0.01, 0.5, 0.09 / (1 + e), 0.04, 0.01, 65536.0] for e in range(12)]
    p = tmp_path_factory.mktemp("shuffled") / "results.csv"
    _write_csv(p, [names[j] for j in order], [[r[j] for j in order] for r in rows])
    run = read_runlog(p)
    assert run.mapping["loss"]["sum_of"] == ["train/box_loss", "train/cls_loss", "train/obj_loss"]
    assert run.mapping["eval_loss"]["sum_of"] == ["val/box_loss", "val/obj_loss"]
    assert run.mapping["loss_scale"]["source"] == "loss_scale"
    assert np.allclose(run.get("loss").values, [r[1] + r[2] + r[3] for r in rows])
