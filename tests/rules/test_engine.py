"""The engine: ran vs skipped (typed reasons), muting, the outcome ids (TP-PASS,
TP-NOT-CHECKED, TP-NO-LOSS, TP-NO-RECORDS), verdicts, JSON-safe findings, threshold
overrides and determinism."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from trainproof.findings import Finding, Level, Report, exit_code
from trainproof.rules.engine import judge_runlog, probe_only
from trainproof.rules.registry import all_rules, get
from trainproof.rules.thresholds import DEFAULT, ThresholdError, Thresholds
from trainproof.runlog import Record, build_runlog

SINGLE_RUN = [r.id for r in all_rules() if not r.is_outcome and r.source in ("single_run", "reader")]
TREND = {r.id for r in all_rules() if r.verdict_bearing}


def make_run(**cols):
    length = max((len(c) for c in cols.values()), default=0)
    recs = []
    for i in range(length):
        vals = {k: float(c[i]) for k, c in cols.items() if i < len(c) and c[i] is not None}
        recs.append(Record(float(10 * (i + 1)), vals, i + 1))
    return build_runlog(recs, "x.jsonl", "jsonl")


def one(rep, rule_id):
    found = [f for f in rep.findings if f.id == rule_id]
    assert len(found) == 1, (rule_id, rep.ids())
    return found[0]


def healthy(n=60, seed=0):
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n)
    return (0.5 + 2.5 * np.exp(-5 * t)) * np.exp(0.02 * rng.standard_normal(n))


def blow_up(n=60, seed=0):
    rng = np.random.default_rng(seed)
    v = 7.5 * np.exp(0.05 * rng.standard_normal(n))
    v[0] = 1.4
    return v


def test_the_trend_checks_are_flat_diverge_and_dead_run():
    assert TREND == {
        "TP-FLAT",
        "TP-CHANCE-LEVEL",
        "TP-DIVERGE",
        "TP-DEAD-RUN",
        "TP-LOSS-STALLED",
        "TP-RL-DEAD-POLICY",
        "TP-RL-NO-SIGNAL",
        "TP-RL-RETURN-COLLAPSE",
        "TP-DIVERGE-SIGNED",
        "TP-NO-PROGRESS-SIGNED",
        "TP-GAN-DISCRIMINATOR-WINS",
    }


# --- TP-PASS and the ran / skipped lists ----------------------------------------------


def test_pass_lists_what_ran_and_what_was_skipped_with_typed_reasons():
    rep = judge_runlog(make_run(loss=healthy()))
    assert rep.ids() == ["TP-PASS"] and rep.verdict is Level.PASS
    f = rep.findings[0]
    assert f.level is Level.PASS
    # every rule that needs only the loss, or nothing (context and reader rules), ran
    needs_loss_or_nothing = [
        r.id
        for r in all_rules()
        if not r.is_outcome
        and r.id in SINGLE_RUN
        and all(n.names[0] == "loss" and not n.signed for n in r.needs)
        and "supervised" in r.objectives
    ]
    assert rep.ran == needs_loss_or_nothing
    assert {"TP-NAN", "TP-FLAT", "TP-DIVERGE", "TP-DEAD-RUN", "TP-DATA-DROPPED"} <= set(rep.ran)
    assert f.data["ran"] == rep.ran
    assert f.data["skipped"] == sorted(rep.skipped)
    # loss only: every rule on another series is skipped because that series is absent
    # (and the RL-only rules because this is a supervised objective); the rules on the live
    # model probe's keys do not apply to a run no probe measured and are not listed
    # (and the rules of a loss below 0 because this one never is)
    assert {k: v.reason for k, v in rep.skipped.items()} == {
        k: (
            "objective: supervised"
            if "supervised" not in get(k).objectives
            else "not_applicable"
            if any(n.signed for n in get(k).needs)
            else "absent"
        )
        for k in SINGLE_RUN
        if k not in rep.ran and not probe_only(get(k))
    }
    assert any(probe_only(get(k)) for k in SINGLE_RUN)
    assert rep.skipped["TP-GRAD-SPIKE"].detail == "no grad_norm series in the log"
    assert "ran: TP-NAN, TP-ZERO-LOSS" in f.evidence and "TP-GRAD-SPIKE (absent)" in f.evidence
    assert exit_code([rep]) == 0


def test_every_single_run_rule_either_ran_or_was_skipped_never_both():
    runs = [
        make_run(loss=healthy()),
        make_run(
            loss=healthy(),
            grad_norm=[0.5] * 60,
            lr=[1e-4] * 60,
            step_time=[0.1] * 60,
            loader_time=[0.01] * 60,
            gpu_util=[90.0] * 60,
        ),
        make_run(loss=[2.0, 2.1, 1.9]),
        make_run(loss=[-1.0 + 0.01 * i for i in range(30)]),
        make_run(eval_loss=[1.0, 0.9, 0.8, 0.85, 0.9]),
        make_run(loss=healthy(), **{"model/params_no_grad": [0.0] * 60}),  # a run the model probe measured
    ]
    for run in runs:
        rep = judge_runlog(run)
        assert not set(rep.ran) & set(rep.skipped)
        # the model probe's rules do not apply to a run no probe measured, and are not listed
        probed = any(k.startswith("model/") for k in run.series)
        expected = {k for k in SINGLE_RUN if probed or not probe_only(get(k))}
        assert set(rep.ran) | set(rep.skipped) == expected
        assert all(
            v.reason in ("absent", "too_few_points", "degenerate", "not_applicable", "muted", "objective: supervised")
            for v in rep.skipped.values()
        )


def test_too_few_points_is_a_typed_skip_with_the_counts():
    rep = judge_runlog(make_run(loss=[2.0, 1.9, 1.8, 1.7, 1.6, 1.5, 1.4]))
    s = rep.skipped["TP-DIVERGE"]
    assert s.reason == "too_few_points" and s.detail == "loss has 7 finite points; needs 8"
    assert rep.skipped["TP-DEAD-RUN"].reason == "too_few_points"
    assert "TP-DIVERGE" not in rep.ran


def test_non_finite_points_make_the_shape_rules_degenerate_and_do_not_count():
    loss = list(healthy(9))
    loss[4] = math.nan
    rep = judge_runlog(make_run(loss=loss))
    # 8 finite points would be enough, but a curve with a hole is not judged for shape
    assert rep.skipped["TP-FLAT"].reason == "degenerate"
    assert rep.skipped["TP-FLAT"].detail == "loss has 1 non-finite value(s); the NaN/Inf rules judge them"
    loss[5] = math.inf
    rep = judge_runlog(make_run(loss=loss))
    assert rep.skipped["TP-FLAT"].reason == "too_few_points"
    assert rep.skipped["TP-FLAT"].detail == "loss has 7 finite points; needs 8"
    assert "TP-NAN" in rep.ids()


def test_degenerate_skip_for_a_non_positive_loss():
    loss = [-2.0 + 0.02 * i for i in range(40)]  # e.g. a negative log-likelihood objective
    rep = judge_runlog(make_run(loss=loss))
    for rid in ("TP-FLAT", "TP-DIVERGE", "TP-DEAD-RUN"):
        assert rep.skipped[rid].reason == "degenerate"
        assert rid not in rep.ran
    # The rules of a loss below 0 judge it in its own units: it rose, it made no progress.
    assert {"TP-DIVERGE-SIGNED", "TP-NO-PROGRESS-SIGNED"} <= set(rep.ran)
    assert rep.verdict is Level.WARN and "TP-NO-PROGRESS-SIGNED" in rep.ids()
    # A loss never below 0 with an exact 0 among its values (a margin loss's batches that
    # all meet the margin) is judged by the rules in its own units, never left unjudged.
    rep = judge_runlog(make_run(loss=[2.0 - 0.04 * i for i in range(39)] + [0.0]))
    assert rep.skipped["TP-FLAT"].reason == "degenerate"
    assert {"TP-DIVERGE-SIGNED", "TP-NO-PROGRESS-SIGNED"} <= set(rep.ran)
    assert rep.verdict is not Level.NOT_CHECKED
    # A loss always above 0 is the ratio rules' alone.
    rep = judge_runlog(make_run(loss=[2.0 - 0.04 * i for i in range(40)]))
    assert rep.skipped["TP-DIVERGE-SIGNED"].reason == "not_applicable"


# --- TP-NOT-CHECKED / TP-NO-LOSS / TP-NO-RECORDS --------------------------------------


def test_one_point_is_not_checked():
    rep = judge_runlog(make_run(loss=[2.3]))
    assert rep.verdict is Level.NOT_CHECKED
    nc = one(rep, "TP-NOT-CHECKED")
    assert nc.level is Level.NOT_CHECKED
    assert "TP-PASS" not in rep.ids()
    assert not TREND & set(rep.ran)
    assert nc.data["ran"] == rep.ran and "TP-NAN" in nc.data["ran"]
    assert "loss has 1 finite points; needs 8" in nc.evidence
    assert exit_code([rep]) == 2


def test_eval_rows_only_are_not_checked():
    rep = judge_runlog(make_run(eval_loss=[1.2, 1.0, 0.9, 0.95, 1.1, 1.3]))
    assert rep.verdict is Level.NOT_CHECKED
    assert rep.ids() == ["TP-NOT-CHECKED"]
    assert rep.skipped["TP-DIVERGE"].reason == "absent"
    assert rep.skipped["TP-OVERFIT"].reason == "absent"  # it also needs the train loss


def test_no_loss_series_names_the_metrics_seen():
    rep = judge_runlog(make_run(accuracy=[0.5, 0.6, 0.7], lr=[1e-4] * 3))
    assert rep.ids() == ["TP-NO-LOSS"] and rep.verdict is Level.NOT_CHECKED
    f = rep.findings[0]
    assert f.data["metrics"] == ["accuracy", "lr"]
    assert "--map loss=COLUMN" in f.evidence
    assert rep.ran == [] and rep.skipped == {}
    assert exit_code([rep]) == 2


def test_no_records():
    rep = judge_runlog(build_runlog([], "empty.jsonl", "jsonl"))
    assert rep.ids() == ["TP-NO-RECORDS"] and rep.verdict is Level.NOT_CHECKED
    assert rep.records == 0 and rep.ran == []
    assert exit_code([rep]) == 2


def test_a_fail_needs_no_trend_check_to_be_a_verdict():
    # an all-zero loss: every trend check is degenerate, but TP-ZERO-LOSS is a verdict
    rep = judge_runlog(make_run(loss=[0.0] * 20))
    assert rep.verdict is Level.FAIL
    assert "TP-NOT-CHECKED" not in rep.ids() and "TP-PASS" not in rep.ids()
    assert exit_code([rep]) == 1


# --- verdicts -------------------------------------------------------------------------


def test_verdict_is_the_worst_finding():
    g = [0.5] * 60
    g[30] = 50.0
    warn = judge_runlog(make_run(loss=healthy(), grad_norm=g))
    assert warn.ids() == ["TP-GRAD-SPIKE"] and warn.verdict is Level.WARN
    assert exit_code([warn]) == 0
    both = judge_runlog(make_run(loss=blow_up(), grad_norm=g))
    assert {"TP-DIVERGE", "TP-GRAD-SPIKE"} <= set(both.ids())
    assert both.verdict is Level.FAIL
    assert "TP-PASS" not in both.ids()


# --- muting ---------------------------------------------------------------------------


def test_a_muted_rule_is_skipped_as_muted_and_never_fires():
    loss = list(healthy())
    loss[20] = math.nan
    run = make_run(loss=loss)
    assert "TP-NAN" in judge_runlog(run).ids()
    rep = judge_runlog(run, mute=["TP-NAN"])
    assert "TP-NAN" not in rep.ids()
    assert "TP-NAN" not in rep.ran
    assert rep.skipped["TP-NAN"].reason == "muted"
    # the shape rules do not judge a curve with holes, so nothing judges this run now
    assert rep.verdict is Level.NOT_CHECKED
    assert rep.skipped["TP-DIVERGE"].reason == "degenerate"
    assert "TP-NAN" in one(rep, "TP-NOT-CHECKED").data["skipped"]


def test_muting_a_rule_whose_series_is_absent_still_says_muted():
    rep = judge_runlog(make_run(loss=healthy()), mute={"TP-GRAD-SPIKE"})
    assert rep.skipped["TP-GRAD-SPIKE"].reason == "muted"


def test_muting_every_trend_check_leaves_the_run_not_checked():
    rep = judge_runlog(make_run(loss=blow_up()), mute=sorted(TREND))
    assert rep.verdict is Level.NOT_CHECKED
    assert "TP-DIVERGE" not in rep.ids()
    assert {rep.skipped[r].reason for r in TREND} == {"muted"}


# --- findings as JSON -----------------------------------------------------------------


def test_finding_to_dict_turns_non_finite_numbers_into_strings():
    f = Finding(
        "TP-NAN",
        Level.FAIL,
        "m",
        "e",
        data={
            "a": math.nan,
            "b": math.inf,
            "c": -math.inf,
            "d": np.float64(1.5),
            "e": [np.float32("nan"), 2],
            "f": np.int64(3),
        },
        step=np.float64(20.0),
        line=3,
    )
    d = f.to_dict()
    assert d["data"] == {"a": "NaN", "b": "Infinity", "c": "-Infinity", "d": 1.5, "e": ["NaN", 2], "f": 3}
    assert d["step"] == 20 and isinstance(d["step"], int)
    assert d["level"] == "FAIL"
    json.dumps(d, allow_nan=False)


def test_a_report_with_non_finite_values_is_strict_json():
    loss = list(blow_up(40))
    loss[10] = math.nan
    loss[11] = math.inf
    g = [0.5] * 40
    g[36:] = [math.nan] * 4  # never finite again: TP-NAN-GRAD
    rep = judge_runlog(make_run(loss=loss, grad_norm=g))
    # TP-NAN explains the non-finite gradient norms: listed as implied in its data
    assert "TP-NAN" in rep.ids() and "TP-NAN-GRAD" in one(rep, "TP-NAN").data["implies"]
    assert rep.skipped["TP-DIVERGE"].reason == "degenerate"  # a curve with holes
    text = json.dumps(rep.to_dict(), allow_nan=False)
    back = json.loads(text)
    assert back["verdict"] == "FAIL"
    nan = next(f for f in back["findings"] if f["id"] == "TP-NAN")
    assert nan["data"]["count"] == 2 and nan["step"] == 110 and nan["line"] == 11


# --- thresholds -----------------------------------------------------------------------


def test_threshold_overrides_change_outcomes():
    run = make_run(loss=blow_up())
    assert "TP-DIVERGE" in judge_runlog(run).ids()
    assert "TP-DIVERGE" not in judge_runlog(run, DEFAULT.with_overrides({"diverge_ratio": 10})).ids()
    calm = make_run(loss=healthy())
    assert "TP-FLAT" not in judge_runlog(calm).ids()
    assert (
        "TP-FLAT" in judge_runlog(calm, DEFAULT.with_overrides({"flat_rel_std": 0.9, "flat_float_rel_std": 0.9})).ids()
    )
    g = [0.5] * 60
    g[30] = 3.0  # 6x the median
    spiky = make_run(loss=healthy(), grad_norm=g)
    assert "TP-GRAD-SPIKE" not in judge_runlog(spiky).ids()
    f = one(judge_runlog(spiky, DEFAULT.with_overrides({"grad_spike_factor": 5})), "TP-GRAD-SPIKE")
    assert f.data["factor"] == 5.0


def test_min_points_threshold_override_changes_ran_vs_skipped():
    run = make_run(loss=healthy(6))
    assert judge_runlog(run).skipped["TP-DIVERGE"].reason == "too_few_points"
    rep = judge_runlog(run, DEFAULT.with_overrides({"min_trend_points": 6}))
    assert "TP-DIVERGE" in rep.ran and "TP-FLAT" in rep.ran
    assert rep.skipped["TP-DEAD-RUN"].reason == "too_few_points"  # its own minimum, 10


def test_with_overrides_returns_a_copy_and_converts_types():
    th = DEFAULT.with_overrides({"diverge_ratio": 2, "dead_window": 7.0})
    assert th.diverge_ratio == 2.0 and isinstance(th.diverge_ratio, float)
    assert th.dead_window == 7 and isinstance(th.dead_window, int)
    assert DEFAULT.diverge_ratio == 1.5 and DEFAULT.dead_window == 5
    assert Thresholds() == DEFAULT


@pytest.mark.parametrize(
    "overrides,word",
    [
        ({"diverge_ration": 2.0}, "unknown threshold 'diverge_ration'"),
        ({"diverge_ratio": "big"}, "must be a number"),
        ({"diverge_ratio": True}, "must be a number"),
        ({"dead_window": 2.5}, "whole number"),
        ({"diverge_ratio": -1}, r"must be a finite number in \(1, inf\)"),
    ],
)
def test_with_overrides_rejects_bad_names_and_values(overrides, word):
    with pytest.raises(ThresholdError, match=word):
        DEFAULT.with_overrides(overrides)


# --- determinism ----------------------------------------------------------------------


def _busy_run(seed):
    rng = np.random.default_rng(seed)
    n = 300
    loss = list(blow_up(n, seed))
    loss[50] = math.nan
    g = list(0.5 * np.exp(0.3 * rng.standard_normal(n)))
    g[100] = math.inf
    g[200] = 40.0
    lr = [0.0] * 60 + [1e-4] * (n - 60)
    return make_run(
        loss=loss, grad_norm=g, lr=lr, step_time=list(0.1 * np.exp(0.1 * rng.standard_normal(n))), gpu_util=[90.0] * n
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_judging_the_same_runlog_twice_gives_identical_reports(seed):
    run = _busy_run(seed)
    a = judge_runlog(run).to_dict()
    b = judge_runlog(run).to_dict()
    assert a == b
    assert json.dumps(a, sort_keys=True) == json.dumps(judge_runlog(_busy_run(seed)).to_dict(), sort_keys=True)
    ids = [f["id"] for f in a["findings"]]
    assert {"TP-NAN", "TP-GRAD-SPIKE", "TP-GRAD-OVERFLOW-SKIPPED", "TP-ZERO-LR-PARTIAL"} <= set(ids)


def test_findings_follow_registry_order():
    rep = judge_runlog(_busy_run(0))
    order = [r.id for r in all_rules()]
    positions = [order.index(i) for i in rep.ids()]
    assert positions == sorted(positions)
    assert get("TP-NAN") is not None and get("TP-NOPE") is None


def test_report_verdict_of_an_empty_report_is_not_checked():
    assert Report(file="x").verdict is Level.NOT_CHECKED
