"""The model-level rules (group ``model``) on generated runs.

The runs are built as the live probe records them: a JSONL log with a loss at every 10th
step and the ``model/...`` keys at every check step (every 50th), read through the normal
readers; or fed record by record into :class:`trainproof.live.guardian.Guardian`, whose
meta holds the probe's layer names (``meta["model_probe"]``). Each rule gets positive
cases over seeds, lengths and noise levels, and a negative case for each healthy look-alike
its "What it does NOT mean" names: either the rule stays silent, or (a WARN rule whose
look-alike it cannot tell apart) it only warns.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from trainproof import api
from trainproof.findings import Level, exit_code
from trainproof.live.guardian import Guardian
from trainproof.rules.registry import all_rules

from conftest import first_seed_fast, one

MODEL_IDS = [r.id for r in all_rules() if r.group == "model"]

#: (seed, checks, noise): the shapes every positive and negative case is built on.
GRID = first_seed_fast([(seed, n, noise) for seed in (0, 1, 2) for n in (6, 20) for noise in (0.0, 0.3)], seed_at=0)

EVERY = 50  # a check every 50 steps
LOG_EVERY = 10  # a loss every 10 steps


def _records(checks: dict[str, object], n: int, seed: int, extra=None, strings=None):
    """``(step, values)`` of a run of ``n`` checks: a falling noisy loss every
    ``LOG_EVERY`` steps and, at each check step, the value of each key of ``checks`` at
    that check (a sequence of ``n`` values; ``None`` or NaN leaves the key out)."""
    rng = np.random.default_rng(seed)
    out = []
    total = n * EVERY
    for s in range(LOG_EVERY, total + 1, LOG_EVERY):
        rec = {"loss": float((0.3 + 2.0 * math.exp(-3 * s / total)) * math.exp(0.02 * rng.standard_normal()))}
        if extra:
            rec.update(extra(s))
        if s % EVERY == 0:
            k = s // EVERY - 1
            for key, vals in checks.items():
                v = vals[k]
                if v is not None and not (isinstance(v, float) and math.isnan(v)):
                    rec[key] = float(v)
            rec.update(strings or {})
        out.append((s, rec))
    return out


def judge_file(tmp_path, checks, n, seed=0, extra=None, strings=None, name="run.jsonl"):
    """Write the run as a JSONL log (layer names as strings, which readers skip) and judge it."""
    path = tmp_path / name
    lines = [json.dumps({"step": s, **rec}) for s, rec in _records(checks, n, seed, extra, strings)]
    path.write_text("\n".join(lines) + "\n")
    return api.judge(path)


def judge_live(checks, n, seed=0, extra=None, probe=None, every_check=False):
    """Feed the run into a Guardian with ``probe`` as ``meta["model_probe"]``; judge it
    final (or, with ``every_check``, live after each check, returning every report)."""
    g = Guardian(meta={"model_probe": dict(probe or {})})
    reports = []
    for s, rec in _records(checks, n, seed, extra):
        g.add(s, rec)
        if every_check and s % EVERY == 0:
            reports.append(g.judge())
    return reports if every_check else g.judge(final=True)


def noisy(rng, n, level, noise, lo=None, hi=None):
    """``n`` values around ``level`` with relative noise ``noise``, clipped to [lo, hi]."""
    v = level * (1 + noise * rng.standard_normal(n)) if level else noise * np.abs(rng.standard_normal(n))
    return np.clip(v, lo, hi) if lo is not None or hi is not None else v


def ids(rep) -> set[str]:
    return {f.id for f in rep.findings}


# --- an ordinary log -------------------------------------------------------------------------


def test_an_ordinary_log_leaves_the_model_rules_out_and_a_probed_one_lists_the_absent(tmp_path):
    """A log no probe wrote: the model rules do not apply, and its report is what it was
    before they existed. A probed run without activations: the activation rules are
    skipped as ``absent``, the others run."""
    assert len(MODEL_IDS) == 18
    rep = judge_file(tmp_path, {}, 10)
    assert not set(MODEL_IDS) & (set(rep.ran) | set(rep.skipped)) and rep.verdict.value == "PASS"
    rep = judge_file(tmp_path, {"model/params_no_grad": np.zeros(10), "model/grads_not_reset": np.zeros(10)}, 10)
    assert {"TP-PARAMS-NO-GRAD", "TP-GRADS-NOT-RESET"} <= set(rep.ran)
    assert rep.skipped["TP-DEAD-RELU"].reason == "absent" and rep.skipped["TP-SATURATION"].reason == "absent"
    assert rep.skipped["TP-RELU-MOSTLY-DEAD"].reason == "absent"
    assert rep.verdict.value == "PASS"


# --- counts of parameter tensors: WARN at model_checks checks in a row -----------------------

COUNT_RULES = [
    ("TP-PARAMS-NOT-OPTIMIZED", "model/params_outside_optimizer"),
    ("TP-PARAMS-FROZEN", "model/params_frozen_in_optimizer"),
    ("TP-PARAMS-NO-GRAD", "model/params_no_grad"),
    ("TP-PARAMS-NOT-UPDATED", "model/params_not_updated"),
    ("TP-GRADS-CLEARED-BEFORE-STEP", "model/grads_cleared_before_step"),
]


@pytest.mark.parametrize("rid,key", COUNT_RULES)
@pytest.mark.parametrize("seed,n,noise", GRID)
def test_a_count_above_zero_at_every_check_warns(tmp_path, rid, key, seed, n, noise):
    rng = np.random.default_rng(seed)
    counts = 1 + np.round(noise * 10 * rng.random(n))
    rep = judge_file(tmp_path, {key: counts}, n, seed)
    f = one(rep, rid)
    assert f.level is Level.WARN and f.step == EVERY
    assert f.data["checks_in_a_row"] == n and f.data["first_value"] == counts[0]
    assert f"at {n} checks in a row, from step {EVERY}" in f.evidence


@pytest.mark.parametrize("rid,key", COUNT_RULES)
@pytest.mark.parametrize("seed,n,noise", GRID)
def test_a_count_at_zero_or_on_scattered_checks_is_silent(tmp_path, rid, key, seed, n, noise):
    """Zero at every check; and the quirk of single batches (an MoE expert no token was
    routed to, a second optimizer's step seen once): above 0 at scattered checks, never
    model_checks in a row."""
    rng = np.random.default_rng(seed)
    assert rid not in ids(judge_file(tmp_path, {key: np.zeros(n)}, n, seed))
    scattered = np.zeros(n)
    scattered[:: 2 + int(rng.integers(0, 2))] = 1 + np.round(noise * 5)
    assert rid not in ids(judge_file(tmp_path, {key: scattered}, n, seed))


@pytest.mark.parametrize("rid,key", COUNT_RULES)
def test_a_count_names_the_tensors_the_probe_listed(tmp_path, rid, key):
    """Live, the evidence names the counted tensors (the first five, then how many more);
    read from a file, where the names are not kept, it says so."""
    names = [f"blocks.{i}.weight" for i in range(7)]
    f = one(judge_live({key: np.full(6, 7.0)}, 6, probe={key.removeprefix("model/"): names}), rid)
    assert "Tensors at the latest check: blocks.0.weight, blocks.1.weight, blocks.2.weight, " in f.evidence
    assert "blocks.4.weight and 2 more." in f.evidence and f.data["layer"].endswith("and 2 more")
    f = one(judge_file(tmp_path, {key: np.full(6, 7.0)}, 6), rid)
    assert "Tensors not recorded (the probe keeps tensor names in the live run" in f.evidence


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_unchanged_tensors_whose_update_rounds_away_are_not_a_lost_update(tmp_path, seed, n, noise):
    """Biases feeding a batch norm (a gradient of rounding noise) stay bit-identical under
    SGD at every check: model/params_not_updated_step below 0 (less than one float step of
    the weights) leaves them out; one check where an unchanged tensor was owed many float
    steps is not enough, three in a row are."""
    rng = np.random.default_rng(seed)
    counts = np.full(n, 2.0)
    owed = -3.0 - 2.0 * rng.random(n) - noise
    rep = judge_file(tmp_path, {"model/params_not_updated": counts, "model/params_not_updated_step": owed}, n, seed)
    assert "TP-PARAMS-NOT-UPDATED" not in ids(rep)
    owed[1] = 4.0
    rep = judge_file(tmp_path, {"model/params_not_updated": counts, "model/params_not_updated_step": owed}, n, seed)
    assert "TP-PARAMS-NOT-UPDATED" not in ids(rep)
    owed[1:4] = 4.0 + noise
    f = one(
        judge_file(tmp_path, {"model/params_not_updated": counts, "model/params_not_updated_step": owed}, n, seed),
        "TP-PARAMS-NOT-UPDATED",
    )
    assert f.step == 2 * EVERY and f.data["checks_in_a_row"] == 3


def test_two_checks_in_a_row_are_below_the_least_evidence(tmp_path):
    rep = judge_file(tmp_path, {"model/params_outside_optimizer": [0, 2, 2, 0, 0, 0]}, 6)
    assert "TP-PARAMS-NOT-OPTIMIZED" not in ids(rep)
    rep = judge_file(tmp_path, {"model/params_outside_optimizer": [2, 2]}, 2)
    assert rep.skipped["TP-PARAMS-NOT-OPTIMIZED"].reason == "too_few_points"


def test_the_legitimate_look_alikes_of_the_count_rules_only_warn(tmp_path):
    """A backbone frozen on purpose (frozen params in the optimizer, count falling under
    gradual unfreezing), a GAN's discriminator outside the monitored optimizer, unused pooler
    weights without gradients, bf16 updates below resolution: each is at most a WARN, so
    the run is never failed."""
    checks = {
        "model/params_frozen_in_optimizer": [40, 40, 30, 20, 10, 10],
        "model/params_outside_optimizer": [8] * 6,
        "model/params_no_grad": [2] * 6,
        "model/params_not_updated": [3, 5, 4, 6, 5, 4],
    }
    rep = judge_file(tmp_path, checks, 6)
    assert {"TP-PARAMS-FROZEN", "TP-PARAMS-NOT-OPTIMIZED", "TP-PARAMS-NO-GRAD", "TP-PARAMS-NOT-UPDATED"} <= ids(rep)
    assert rep.verdict.value == "WARN" and exit_code([rep]) == 0


# --- non-finite gradients -------------------------------------------------------------------


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_nonfinite_gradients_to_the_end_fail_naming_the_first_layer(seed, n, noise):
    rng = np.random.default_rng(seed)
    onset = int(rng.integers(0, n - 3))
    counts = np.r_[np.zeros(onset), 1 + np.round(noise * 10 * rng.random(n - onset))]
    rep = judge_live(
        {"model/grad_nonfinite_params": counts},
        n,
        seed,
        probe={"model/grad_nonfinite_layer": "blocks.1.attn.k_proj.weight"},
    )
    f = one(rep, "TP-GRAD-NONFINITE-LAYER")
    assert f.level is Level.FAIL and f.step == (onset + 1) * EVERY
    assert "blocks.1.attn.k_proj.weight" in f.evidence and f.data["layer"] == "blocks.1.attn.k_proj.weight"


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_a_loss_scaler_skipping_overflowing_steps_is_not_a_nonfinite_layer(tmp_path, seed, n, noise):
    """Non-finite gradients at some checks, clean checks after them (the scaler halves
    its scale and recovers): even three in a row mid-run are not the rule's, and so is
    a single one at the very end."""
    rng = np.random.default_rng(seed)
    counts = np.zeros(n)
    at = int(rng.integers(0, n - 4))
    counts[at : at + 3] = 1 + np.round(noise * 4)
    counts[-1] = 1
    rep = judge_file(tmp_path, {"model/grad_nonfinite_params": counts}, n, seed)
    assert "TP-GRAD-NONFINITE-LAYER" not in ids(rep)


def test_read_from_a_file_the_layer_is_not_recorded(tmp_path):
    rep = judge_file(
        tmp_path,
        {"model/grad_nonfinite_params": [0, 0, 1, 1, 1, 1]},
        6,
        strings={"model/grad_nonfinite_layer": "fc1.weight"},
    )
    f = one(rep, "TP-GRAD-NONFINITE-LAYER")
    assert "Layer not recorded" in f.evidence and f.data["layer"] is None


# --- gradients not reset --------------------------------------------------------------------


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_gradients_never_reset_fail(tmp_path, seed, n, noise):
    rep = judge_file(tmp_path, {"model/grads_not_reset": np.ones(n)}, n, seed)
    f = one(rep, "TP-GRADS-NOT-RESET")
    assert f.level is Level.FAIL and f.step == EVERY and exit_code([rep]) == 1


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_gradient_accumulation_done_right_is_not_a_missing_zero_grad(tmp_path, seed, n, noise):
    """Accumulation resets at every optimizer step: 0 at every check; a measurement that
    reads 1 at a single check (a hook caught mid-accumulation) stays below the evidence."""
    rng = np.random.default_rng(seed)
    v = np.zeros(n)
    if noise:
        v[int(rng.integers(0, n))] = 1.0
    assert "TP-GRADS-NOT-RESET" not in ids(judge_file(tmp_path, {"model/grads_not_reset": v}, n, seed))


def test_a_live_run_stops_on_gradients_not_reset_once_the_checks_in_a_row_hold():
    """The live path judges after each check: the FAIL comes at the third check (its own
    least evidence), not two more judgements later (the rule's evidence is not a curve)."""
    reps = judge_live({"model/grads_not_reset": np.ones(8)}, 8, every_check=True)
    first = next(i for i, r in enumerate(reps) if "TP-GRADS-NOT-RESET" in ids(r))
    assert first == 2
    assert one(reps[first], "TP-GRADS-NOT-RESET").level is Level.FAIL


# --- eval mode ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_eval_mode_left_on_warns_from_its_onset(tmp_path, seed, n, noise):
    rng = np.random.default_rng(seed)
    onset = int(rng.integers(0, n - 3))
    share = np.r_[noisy(rng, onset, 0.05, noise, 0, 0.2), np.ones(n - onset)]
    f = one(judge_file(tmp_path, {"model/eval_mode_share": share}, n, seed), "TP-EVAL-MODE-TRAINING")
    assert f.level is Level.WARN and f.step == (onset + 1) * EVERY


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_a_periodic_validation_pass_is_not_eval_mode_training(tmp_path, seed, n, noise):
    rng = np.random.default_rng(seed)
    share = np.zeros(n)
    share[::3] = np.clip(0.3 + noise * rng.random(), 0, 0.85)  # eval calls: a minority of an interval
    assert "TP-EVAL-MODE-TRAINING" not in ids(judge_file(tmp_path, {"model/eval_mode_share": share}, n, seed))


def test_batch_norm_frozen_on_purpose_only_warns(tmp_path):
    rep = judge_file(tmp_path, {"model/eval_mode_share": np.ones(10)}, 10)
    assert one(rep, "TP-EVAL-MODE-TRAINING").level is Level.WARN and exit_code([rep]) == 0


# --- per-layer update ratio -----------------------------------------------------------------


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_a_layer_rewritten_at_every_step_warns_naming_it(seed, n, noise):
    rng = np.random.default_rng(seed)
    mx = -0.5 + noise * rng.standard_normal(n) * 0.3
    rep = judge_live(
        {"model/layer_update_ratio_max": mx, "model/layer_update_ratio_min": mx - 3},
        n,
        seed,
        probe={"model/layer_update_ratio_max_layer": "head.weight"},
    )
    f = one(rep, "TP-LAYER-UPDATE-RATIO")
    assert f.level is Level.WARN and "head.weight" in f.evidence


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_one_layer_that_barely_moves_while_others_train_warns(tmp_path, seed, n, noise):
    rng = np.random.default_rng(seed)
    mx = -3 + noise * rng.standard_normal(n) * 0.2
    mn = -7 + noise * rng.standard_normal(n) * 0.2
    f = one(
        judge_file(tmp_path, {"model/layer_update_ratio_max": mx, "model/layer_update_ratio_min": mn}, n, seed),
        "TP-LAYER-UPDATE-RATIO",
    )
    assert "while others train" in f.message


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_healthy_update_ratios_a_zero_init_head_and_a_decayed_schedule_are_silent(tmp_path, seed, n, noise):
    rng = np.random.default_rng(seed)
    # ordinary training: every layer within a decade or two of 1e-3
    mx = -2.5 + noise * rng.standard_normal(n) * 0.3
    mn = -4.0 + noise * rng.standard_normal(n) * 0.3
    # a zero-initialised layer settling: ratio ~1 at the first check, falling at each check
    # until it is ordinary (a positional embedding under SGD: 0, -0.8, -1.0, -1.1, ... at
    # checks every 25 steps)
    mx_head = mx.copy()
    k = min(n, 6)
    mx_head[:k] = np.maximum(np.linspace(0.0, -1.5, 6)[:k], mx[:k])
    mx_head[:k] = np.minimum.accumulate(mx_head[:k])
    # the end of a decaying schedule: every layer low together
    decayed_mx, decayed_mn = mx - 3.5, mn - 3.5
    assert np.sum(mx_head > -1) >= 4  # above the bar at more than model_checks checks, falling
    for hi, lo in ((mx, mn), (mx_head, mn), (decayed_mx, decayed_mn)):
        rep = judge_file(tmp_path, {"model/layer_update_ratio_max": hi, "model/layer_update_ratio_min": lo}, n, seed)
        assert "TP-LAYER-UPDATE-RATIO" not in ids(rep)


# --- per-layer gradient norms ---------------------------------------------------------------


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_one_exploding_layer_warns_naming_it(seed, n, noise):
    rng = np.random.default_rng(seed)
    onset = int(rng.integers(0, n - 3))
    mx = np.r_[1.0 + 0.3 * noise * rng.standard_normal(onset), np.linspace(3.5, 6, n - onset)]
    rep = judge_live(
        {"model/layer_grad_norm_max": mx, "model/layer_grad_norm_min": -np.ones(n)},
        n,
        seed,
        probe={"model/layer_grad_norm_max_layer": "blocks.2.mlp.fc1.weight"},
    )
    f = one(rep, "TP-LAYER-GRAD-EXPLODING")
    assert f.step == (onset + 1) * EVERY and "blocks.2.mlp.fc1.weight" in f.evidence
    assert "TP-LAYER-GRAD-VANISHING" not in ids(rep)


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_one_vanishing_layer_warns(tmp_path, seed, n, noise):
    rng = np.random.default_rng(seed)
    mn = -5.0 + noise * rng.standard_normal(n) * 0.3
    rep = judge_file(tmp_path, {"model/layer_grad_norm_max": np.ones(n), "model/layer_grad_norm_min": mn}, n, seed)
    f = one(rep, "TP-LAYER-GRAD-VANISHING")
    assert f.level is Level.WARN and "TP-LAYER-GRAD-EXPLODING" not in ids(rep)


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_the_ordinary_spread_of_layer_gradients_is_silent(tmp_path, seed, n, noise):
    """Embeddings and heads a decade or two above the median, early layers a decade or two
    below, one start-up check far out, all-zero gradients (log10 -Inf, not a finite ratio:
    TP-PARAMS-NO-GRAD's) at some checks."""
    rng = np.random.default_rng(seed)
    mx = 1.5 + noise * rng.standard_normal(n) * 0.5
    mn = -1.8 + noise * rng.standard_normal(n) * 0.5
    mx[0], mn[0] = 3.8, -4.5
    mn[1::3] = -math.inf
    rep = judge_file(tmp_path, {"model/layer_grad_norm_max": mx, "model/layer_grad_norm_min": mn}, n, seed)
    assert not {"TP-LAYER-GRAD-EXPLODING", "TP-LAYER-GRAD-VANISHING"} & ids(rep)


# --- activations ----------------------------------------------------------------------------


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_a_whole_relu_layer_dead_at_every_check_fails(seed, n, noise):
    rng = np.random.default_rng(seed)
    onset = int(rng.integers(0, n - 3))
    share = np.r_[noisy(rng, onset, 0.3, noise, 0, 0.9), np.ones(n - onset)]
    rep = judge_live({"model/dead_relu_share": share}, n, seed, probe={"model/dead_relu_layer": "features.4"})
    f = one(rep, "TP-DEAD-RELU")
    assert f.level is Level.FAIL and f.step == (onset + 1) * EVERY and "features.4" in f.evidence


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_sparse_activations_and_a_layer_dead_on_one_batch_are_not_a_dead_layer(tmp_path, seed, n, noise):
    rng = np.random.default_rng(seed)
    share = noisy(rng, n, 0.4, noise, 0, 0.95)
    share[int(rng.integers(0, n))] = 1.0
    share[(int(rng.integers(0, n)) + 3) % n] = 1.0
    # two scattered 1.0s may land side by side, never three in a row
    assert "TP-DEAD-RELU" not in ids(judge_file(tmp_path, {"model/dead_relu_share": share}, n, seed))


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_saturated_layers_warn_and_healthy_ones_do_not(tmp_path, seed, n, noise):
    rng = np.random.default_rng(seed)
    sat = noisy(rng, n, 0.97, noise * 0.05, 0.9, 1.0)
    f = one(judge_file(tmp_path, {"model/saturated_share": sat}, n, seed), "TP-SATURATION")
    assert f.level is Level.WARN
    healthy = noisy(rng, n, 0.2, noise, 0, 0.85)
    assert "TP-SATURATION" not in ids(judge_file(tmp_path, {"model/saturated_share": healthy}, n, seed))


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_most_of_a_relu_layer_dead_over_a_wide_batch_warns_from_the_third_check(seed, n, noise):
    # the gallery's biases at -2: 0.94 of the units dead over 64 rows from the first check
    rng = np.random.default_rng(seed)
    share = noisy(rng, n, 0.93, noise * 0.02, 0.86, 0.99)
    rep = judge_live({"model/dead_relu_share": share, "model/dead_relu_rows": [64.0] * n}, n, seed)
    f = one(rep, "TP-RELU-MOSTLY-DEAD")
    assert f.level is Level.WARN and f.step == EVERY and f.data["checks_in_a_row"] == n
    assert "TP-DEAD-RELU" not in ids(rep)  # not the whole layer


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_small_batches_and_a_sparse_narrow_net_are_not_mostly_dead(tmp_path, seed, n, noise):
    rng = np.random.default_rng(seed)
    # a batch of one to four examples: most units inactive by chance (the grid's 0.98 to 1.0)
    small = noisy(rng, n, 0.97, noise * 0.02, 0.9, 1.0)
    rows = rng.integers(1, 5, n).astype(float)
    rep = judge_file(tmp_path, {"model/dead_relu_share": small, "model/dead_relu_rows": rows}, n, seed)
    assert "TP-RELU-MOSTLY-DEAD" not in ids(rep)
    # the healthy grid's largest held share over a wide batch (0.69, a narrow deep net that learns)
    sparse = noisy(rng, n, 0.65, noise * 0.1, 0, 0.75)
    rep = judge_file(tmp_path, {"model/dead_relu_share": sparse, "model/dead_relu_rows": [64.0] * n}, n, seed)
    assert "TP-RELU-MOSTLY-DEAD" not in ids(rep)
    # an old log without the rows: the rule is skipped, never judged on shares alone
    rep = judge_file(tmp_path, {"model/dead_relu_share": small}, n, seed)
    assert rep.skipped["TP-RELU-MOSTLY-DEAD"].reason == "absent"


def test_a_whole_dead_layer_implies_the_mostly_dead_warning():
    n = 6
    rep = judge_live({"model/dead_relu_share": [1.0] * n, "model/dead_relu_rows": [64.0] * n}, n)
    assert one(rep, "TP-DEAD-RELU").level is Level.FAIL and "TP-RELU-MOSTLY-DEAD" not in ids(rep)


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_a_layer_saturated_from_its_init_over_a_wide_batch_warns(tmp_path, seed, n, noise):
    # the gallery's 30x init: 0.79 of a sigmoid layer's outputs saturated over 64 rows
    rng = np.random.default_rng(seed)
    sat = noisy(rng, n, 0.79, noise * 0.02, 0.7, 0.85)
    rep = judge_file(tmp_path, {"model/saturated_share": sat, "model/saturated_rows": [64.0] * n}, n, seed)
    f = one(rep, "TP-SATURATION")
    assert f.level is Level.WARN and f.step == EVERY and f.data["rows"] == 64.0
    # the same shares over a batch of two to four: small noisy batches saturate healthy nets
    rows = rng.integers(2, 5, n).astype(float)
    rep = judge_file(tmp_path, {"model/saturated_share": sat, "model/saturated_rows": rows}, n, seed)
    assert "TP-SATURATION" not in ids(rep)
    # the healthy grid's largest held share over a wide batch (0.16), and a log without the rows
    healthy = noisy(rng, n, 0.15, noise, 0, 0.3)
    rep = judge_file(tmp_path, {"model/saturated_share": healthy, "model/saturated_rows": [64.0] * n}, n, seed)
    assert "TP-SATURATION" not in ids(rep)
    assert "TP-SATURATION" not in ids(judge_file(tmp_path, {"model/saturated_share": sat}, n, seed))


def test_a_confident_sigmoid_output_only_warns(tmp_path):
    rep = judge_file(tmp_path, {"model/saturated_share": np.r_[[0.1, 0.4, 0.7], [0.95] * 7]}, 10)
    assert one(rep, "TP-SATURATION").level is Level.WARN and exit_code([rep]) == 0


# --- replicas -------------------------------------------------------------------------------


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_replicas_apart_fail_and_identical_ones_do_not(tmp_path, seed, n, noise):
    rng = np.random.default_rng(seed)
    # a replica check every few checks, as replica_every spaces them
    drift = [None] * n
    for k in range(0, n, 2):
        drift[k] = float(abs(0.02 * (1 + noise * rng.standard_normal())))
    f = one(judge_file(tmp_path, {"model/replica_drift": drift}, n, seed), "TP-REPLICA-DRIFT")
    assert f.level is Level.FAIL and f.step == EVERY
    # identical replicas: exactly 0, or a summation-order difference of mixed hardware
    same = [None if d is None else float(1e-12 * rng.random()) for d in drift]
    assert "TP-REPLICA-DRIFT" not in ids(judge_file(tmp_path, {"model/replica_drift": same}, n, seed))


def test_one_replica_measurement_apart_is_below_the_least_evidence(tmp_path):
    rep = judge_file(tmp_path, {"model/replica_drift": [0.0, 0.05, 0.0, 0.0]}, 4)
    assert "TP-REPLICA-DRIFT" not in ids(rep)


# --- scheduler ------------------------------------------------------------------------------


def _steps(n):
    return np.arange(1, n + 1) * EVERY


def test_a_scheduler_never_stepped_warns_over_an_epoch_or_many_optimizer_steps(tmp_path):
    n = 20  # 1000 steps
    rep = judge_file(
        tmp_path,
        {"model/scheduler_steps": np.zeros(n), "model/optimizer_steps": _steps(n)},
        n,
        extra=lambda s: {"epoch": s / 400, "lr": 1e-3},
    )
    f = one(rep, "TP-SCHEDULER-STUCK")
    assert f.level is Level.WARN and f.data["epochs"] == pytest.approx(2.375)
    # no epoch logged: the optimizer's steps must reach scheduler_stuck_steps
    opt = _steps(n) * 3  # gradient accumulation aside, 3000 optimizer steps
    rep = judge_file(tmp_path, {"model/scheduler_steps": np.zeros(n), "model/optimizer_steps": opt}, n)
    assert one(rep, "TP-SCHEDULER-STUCK").data["span_unit"] == "optimizer steps"


def test_a_scheduler_that_stops_stepping_mid_run_warns_from_where_it_stopped(tmp_path):
    n = 60
    sched = np.minimum(np.arange(n), 10) * EVERY
    rep = judge_file(tmp_path, {"model/scheduler_steps": sched, "model/optimizer_steps": _steps(n)}, n)
    assert one(rep, "TP-SCHEDULER-STUCK").step == 11 * EVERY


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_per_epoch_schedulers_moving_lrs_and_stepping_schedulers_are_not_stuck(tmp_path, seed, n, noise):
    rng = np.random.default_rng(seed)
    per_batch = _steps(n) + np.round(noise * rng.random(n))
    assert "TP-SCHEDULER-STUCK" not in ids(judge_file(tmp_path, {"model/scheduler_steps": per_batch}, n, seed))
    # stepped per epoch, and the log shows less than an epoch: it legitimately stands still
    within = judge_file(
        tmp_path, {"model/scheduler_steps": np.zeros(n)}, n, seed, extra=lambda s: {"epoch": s / (n * EVERY + 10)}
    )
    assert "TP-SCHEDULER-STUCK" not in ids(within)
    # no epoch logged and fewer optimizer steps than the bar
    short = judge_file(tmp_path, {"model/scheduler_steps": np.zeros(n)}, n, seed)
    assert "TP-SCHEDULER-STUCK" not in ids(short)
    # the lr moves: other code schedules it
    moved = judge_file(
        tmp_path,
        {"model/scheduler_steps": np.zeros(n), "model/optimizer_steps": _steps(n) * 100},
        n,
        seed,
        extra=lambda s: {"lr": 1e-3 * (1 - s / (n * EVERY + 1))},
    )
    assert "TP-SCHEDULER-STUCK" not in ids(moved)


def _warmup_run(sched, left, n, max_steps):
    """A Guardian fed ``n`` checks of a scheduler at ``sched`` (per check) with ``left``
    rising steps still to come, in a run that declares ``max_steps``, judged live at each
    check (a list of reports)."""
    g = Guardian(meta={"max_steps": max_steps} if max_steps else {})
    checks = {"model/scheduler_steps": sched, "model/scheduler_warmup_left": left, "model/optimizer_steps": _steps(n)}
    reports = []
    for s, rec in _records(checks, n, 0, extra=lambda s: {"lr": 1e-5}):
        g.add(s, rec)
        if s % EVERY == 0:
            reports.append(g.judge())
    return reports


@pytest.mark.parametrize("per_epoch", [None, 4])
def test_a_warm_up_that_cannot_finish_by_max_steps_warns_at_the_third_check(per_epoch):
    # a warm-up of 100 scheduler steps in a run of 30 checks (1500 steps): never stepped,
    # or stepped once every 4 checks (an epoch where a batch was meant)
    n = 30
    k = np.arange(n)
    sched = np.zeros(n) if per_epoch is None else (k // per_epoch).astype(float)
    left = [None] + [100.0 - v for v in sched[1:]]  # the probe scans only a scheduler that stood still
    reports = _warmup_run(sched, left, n, n * EVERY)
    first = next(i for i, r in enumerate(reports) if "TP-SCHEDULER-STUCK" in ids(r))
    assert first == 2  # the third check: model_checks in a row
    f = one(reports[first], "TP-SCHEDULER-STUCK")
    assert f.level is Level.WARN and "warm-up cannot finish" in f.message
    assert f.data["warmup_left"] == 100.0 and f.data["steps_room"] == 1 + (n * EVERY - 3 * EVERY) // (2 * EVERY)


def test_a_per_epoch_warm_up_with_room_in_the_run_and_undeclared_runs_are_not_stuck():
    # LinearLR over 5 epochs stepped per epoch (8 checks an epoch), in a run of 12 epochs:
    # standing still over an epoch leaves room for 12 more steps, more than the 5
    n = 96
    sched = (np.arange(n) // 8).astype(float)
    left = [None if i % 8 == 0 else max(0.0, 5.0 - v) for i, v in enumerate(sched)]
    assert not any("TP-SCHEDULER-STUCK" in ids(r) for r in _warmup_run(sched, left, n, n * EVERY))
    # never stepped, but the run declares no max_steps: only the flat reading (2000 steps) applies
    n = 30
    reports = _warmup_run(np.zeros(n), [None] + [100.0] * (n - 1), n, None)
    assert not any("TP-SCHEDULER-STUCK" in ids(r) for r in reports)
    # a warm-up that is over (0 rising steps left) is no warm-up short of room
    reports = _warmup_run(np.zeros(n), [None] + [0.0] * (n - 1), n, n * EVERY)
    assert not any("TP-SCHEDULER-STUCK" in ids(r) for r in reports)


def test_a_nonfinite_layer_explains_the_nonfinite_global_norm(tmp_path):
    """One cause, one finding: the layer-level rule keeps the finding and lists TP-NAN-GRAD
    (the same gradients, seen as a global norm) as implied."""
    n = 8
    rep = judge_file(
        tmp_path,
        {"model/grad_nonfinite_params": [0, 0, 0, 0, 2, 2, 2, 2]},
        n,
        extra=lambda s: {"grad_norm": 0.5 if s <= 200 else math.inf},
    )
    f = one(rep, "TP-GRAD-NONFINITE-LAYER")
    assert f.data["implies"] == ["TP-NAN-GRAD"] and "TP-NAN-GRAD" not in ids(rep)


def test_the_vanishing_evidence_cites_the_smallest_ratio(tmp_path):
    mn = [-4.5, -5.0, -6.5, -5.5]
    f = one(
        judge_file(tmp_path, {"model/layer_grad_norm_max": [1.0] * 4, "model/layer_grad_norm_min": mn}, 4),
        "TP-LAYER-GRAD-VANISHING",
    )
    assert "(smallest -6.5)" in f.evidence and f.data["extreme_value"] == -6.5


# --- a loss given probabilities ----------------------------------------------------------------


#: The rules whose evidence is a 0/1 flag the probe sets at a check: (id, key).
FLAG_RULES = [("TP-SOFTMAX-BEFORE-LOSS", "model/probs_as_logits"), ("TP-SAME-BATCH", "model/same_batch")]


@pytest.mark.parametrize("rid,key", FLAG_RULES)
@pytest.mark.parametrize("seed,n,noise", GRID)
def test_a_flag_rule_warns_from_the_first_check_that_shows_it(tmp_path, rid, key, seed, n, noise):
    rng = np.random.default_rng(seed)
    onset = int(rng.integers(1, n - 3))  # a loop changed mid-run (a head swapped in, a loader replaced)
    flag = np.r_[np.zeros(onset), np.ones(n - onset)]
    f = one(judge_file(tmp_path, {key: flag}, n, seed), rid)
    assert f.level is Level.WARN and f.step == (onset + 1) * EVERY


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_a_loss_given_logits_is_not_flagged(tmp_path, seed, n, noise):
    rep = judge_file(tmp_path, {"model/probs_as_logits": np.zeros(n)}, n, seed)
    assert "TP-SOFTMAX-BEFORE-LOSS" in rep.ran and "TP-SOFTMAX-BEFORE-LOSS" not in ids(rep)


def test_a_loss_given_probabilities_at_two_checks_only_is_not_yet_enough(tmp_path):
    # model_checks (3) in a row: two checks do not make the claim (one evaluation-only
    # graph seen twice is not the training loss).
    flag = np.r_[np.zeros(4), np.ones(2), np.zeros(4)]
    assert "TP-SOFTMAX-BEFORE-LOSS" not in ids(judge_file(tmp_path, {"model/probs_as_logits": flag}, 10))


# --- the same batch at every check -------------------------------------------------------------


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_a_batch_repeated_once_is_not_the_same_batch_every_step(tmp_path, seed, n, noise):
    # One repeat (a loader that yields a batch twice at an epoch boundary) among fresh ones.
    rng = np.random.default_rng(seed)
    flag = np.zeros(n)
    flag[int(rng.integers(0, n))] = 1.0
    rep = judge_file(tmp_path, {"model/same_batch": flag}, n, seed)
    assert "TP-SAME-BATCH" in rep.ran and "TP-SAME-BATCH" not in ids(rep)


@pytest.mark.parametrize("seed,n,noise", GRID)
def test_full_batch_training_shows_the_same_batch_by_design(tmp_path, seed, n, noise):
    # a graph network on its full graph: one batch is the data set, and the log's epoch
    # advances by one at every optimizer step (helper 53's full-graph GCN warned at 19 of
    # 19 checks); the same flags with a mini-batch epoch still warn
    flag = np.ones(n)
    rep = judge_file(tmp_path, {"model/same_batch": flag}, n, seed, extra=lambda s: {"epoch": float(s)})
    assert "TP-SAME-BATCH" not in ids(rep)
    rep = judge_file(
        tmp_path, {"model/same_batch": flag}, n, seed, extra=lambda s: {"epoch": s / 400}, name="mini.jsonl"
    )
    assert "TP-SAME-BATCH" in ids(rep)
