"""Every rule declares exactly the thresholds it reads.

A rule's ``thresholds`` list is what RULES.md and ``trainproof rules ID`` print as the numbers
the rule depends on, so it must hold every threshold the check reads and nothing it never
reads. Two checks, from both sides:

* dynamic: each check runs with ``ctx.th`` replaced by a proxy that records every name read
  (over every log under examples/, the core examples against a baseline, and built runs that
  reach the rules' deeper branches), and what it read must be declared;
* static: every declared name must appear as ``<x>.<name>`` (or ``getattr(x, "<name>")``) in
  the check or a helper it calls, so a declaration cannot list a number the rule never touches.

The thresholds the engine reads for a rule (its ``needs`` min_points and
``min_schedule_share``) count as read by it.
"""

from __future__ import annotations

import ast
import inspect
import math
import textwrap
import types

import numpy as np
import pytest

from trainproof import api
from trainproof.rules import engine
from trainproof.rules import thresholds as T
from trainproof.rules.compare import compare_runlogs
from trainproof.rules.history import Trace, envelope_finding, judge_history
from trainproof.rules.registry import Rule, all_rules

from conftest import REPO, make_run

NAMES = frozenset(T.names())


def _checked_rules() -> list[Rule]:
    return [r for r in all_rules() if not r.is_outcome]


def _engine_reads(r: Rule) -> set[str]:
    """The thresholds the engine reads on the rule's behalf before calling its check."""
    out = {n.min_points for n in r.needs if isinstance(n.min_points, str)}
    if r.min_schedule_share:
        out.add(r.min_schedule_share)
    return out


class _Recording:
    """A stand-in for a Thresholds instance that records each threshold name read."""

    def __init__(self, th: T.Thresholds, seen: set[str]) -> None:
        self._th, self._seen = th, seen

    def __getattr__(self, name: str):
        if name in NAMES:
            self._seen.add(name)
        elif not name.startswith("_"):
            # as_dict, with_overrides: a rule reading every threshold at once would escape the test.
            raise AssertionError(f"a rule used Thresholds.{name}; read thresholds by name")
        return getattr(self._th, name)


def _recording_checks(reads: dict[str, set[str]], calls: dict[str, int]):
    """Wrap every rule's check so that it runs on a recording ``ctx.th`` and on a fresh
    per-rule cache (a value memoised by another rule would hide this rule's reads)."""
    saved = {}
    for r in _checked_rules():
        orig = r.check

        def wrapped(ctx, _orig=orig, _id=r.id):
            calls[_id] = calls.get(_id, 0) + 1
            real = ctx.th
            ctx.th = _Recording(real, reads.setdefault(_id, set()))
            if isinstance(ctx, engine.Context):
                ctx.shared = {}
            try:
                return list(_orig(ctx) or ())
            finally:
                ctx.th = real

        saved[r.id] = orig
        object.__setattr__(r, "check", wrapped)  # Rule is frozen; restored below
    return saved


def _restore(saved: dict) -> None:
    for r in _checked_rules():
        if r.id in saved:
            object.__setattr__(r, "check", saved[r.id])


# --- built runs that reach the rules' deeper branches -------------------------------------------


def _noise(n, rel, seed=0):
    return 1 + rel * np.random.default_rng(seed).standard_normal(n)


def _decay(n, floor=0.5, height=2.0, rate=4.0, rel=0.02, seed=0):
    t = np.arange(n) / n
    return (floor + height * np.exp(-rate * t)) * _noise(n, rel, seed)


def _built_runs():
    n = 120
    t = np.arange(n) / n
    lr = [1e-4] * n
    g = list(0.5 * _noise(n, 0.05, 1))
    runs = []

    def add(meta=None, **cols):
        run = make_run(**{k: list(v) for k, v in cols.items()})
        run.meta.update(meta or {})
        runs.append(run)

    add(loss=_decay(n), learning_rate=lr, grad_norm=g)  # healthy
    add(loss=np.r_[_decay(60), _decay(60)[::-1] * 8], learning_rate=lr, grad_norm=g)  # diverging
    add(loss=np.r_[_decay(5), 3.0 * _noise(n - 5, 0.3, 2)], learning_rate=lr, grad_norm=g)  # early dip then high
    add(
        loss=np.r_[_decay(50), [math.nan], _decay(50)],
        grad_norm=g[:98] + [math.nan] * 3,
        eval_loss=[1.0, math.nan, 0.9, 0.8],
    )  # NaN
    add(loss=np.r_[_decay(50), [math.inf]], grad_norm=g[:20] + [math.nan, 0.5] * 5)  # overflow skips
    add(loss=1.0 * _noise(n, 1e-5), learning_rate=lr, grad_norm=g)  # flat
    add(loss=2.0 * _noise(n, 0.05, 3), learning_rate=[1e-8] * n, grad_norm=g)  # dead, tiny lr
    add(loss=2.0 * _noise(n, 0.05, 4), learning_rate=lr, grad_norm=g)  # dead
    add(loss=np.r_[[6.0], 2.0 * _noise(n - 1, 0.01, 5)], learning_rate=lr, grad_norm=g)  # stalled
    add(
        loss=np.r_[[6.0], 2.0 * _noise(n - 1, 0.01, 5)],
        learning_rate=lr,
        grad_norm=np.r_[[1.0] * 20, [1e-5] * (n - 20)],
    )  # vanished, stalled?
    add(loss=math.log(3) * _noise(n, 0.005, 6), learning_rate=lr)  # chance level
    add(loss=np.r_[2.0 * _noise(40, 0.01, 7), 2.0 * np.exp(-3 * t[:80]) + 0.2], learning_rate=lr)  # plateau
    spiky = _decay(n, rel=0.01)
    spiky[70:73] *= 20
    spiky[73:] *= 1.6
    add(loss=spiky, learning_rate=lr, grad_norm=np.r_[g[:60], [60.0], g[61:]])  # spike, grad spike
    osc = 1.0 + 0.002 * np.arange(n) * np.where(np.arange(n) % 2, 1, -1)
    add(loss=osc * _noise(n, 0.001, 8), learning_rate=lr)  # growing oscillation
    add(loss=_decay(n), learning_rate=[0.0] * n)  # zero lr
    add(loss=_decay(n), learning_rate=[0.0] * 30 + [1e-4] * (n - 30))  # partial zero lr
    add(loss=_decay(n), learning_rate=list(np.maximum(0, 1e-4 * (1 - 2 * t))))  # schedule ended early
    add(loss=_decay(n), learning_rate=list(1e-4 * t))  # warm-up unfinished
    add(loss=_decay(n), learning_rate=list(1e-7 * 1e8**t))  # an LR range test
    add(loss=_decay(n), learning_rate=list(1e-4 * (1 - t)), meta={"max_steps": 5000})  # incomplete, early
    add(loss=_decay(n), learning_rate=list(1e-4 * (1 - t)), meta={"max_steps": 1250})  # complete
    add(loss=[0.0] * n, grad_norm=[0.0] * n)  # zero loss, zero grad
    add(loss=np.r_[_decay(60), [0.0] * 60])  # zero onset
    mixed = _decay(n)
    mixed[::5] = 0.0
    add(loss=mixed)  # zeros mixed in
    add(loss=_decay(n) - 1.0, perplexity=list(np.exp(np.abs(_decay(n) - 1.0))))  # negative loss
    add(loss=2.0 * _noise(n, 0.05, 9), learning_rate=lr, grad_norm=[0.0] * n)  # zero grad, flat loss
    add(loss=_decay(n), loss_scale=[65536.0] * 20 + [16.0] * (n - 20))  # scale collapse
    ev_over = np.r_[np.linspace(2, 1, 10), np.linspace(1, 1.6, 10)]
    add(loss=_decay(n), eval_loss=list(ev_over) + [None] * (n - 20))  # overfit
    ev_slow = np.r_[np.linspace(2, 1, 6), np.linspace(1.005, 1.08, 10)]
    add(loss=_decay(n), eval_loss=list(ev_slow) + [None] * (n - 16))  # slow overfit
    add(
        loss=np.r_[_decay(60), _decay(60)[::-1] * 1.8],
        learning_rate=lr,
        eval_loss=list(np.r_[np.linspace(2, 1, 6), [1.5, 1.6, 1.55, 1.7, 1.65, 1.8, 1.75, 1.9]]) + [None] * (n - 14),
    )  # eval diverge
    add(
        loss=_decay(n),
        step_time=[0.1] * 80 + [0.5] * 40,
        loader_time=[0.08] * n,
        gpu_util=[20.0] * n,
        throughput=list(np.linspace(100, 20, n)),
    )  # perf
    add(loss=_decay(n), update_ratio=[1e-1] * n)  # update ratio high
    add(loss=_decay(n), update_ratio=[1e-6] * n)  # update ratio low
    # the model probe's keys, every one firing (and the low side of the layer update ratio)
    probe = {
        "model/params_outside_optimizer": [2.0] * n,
        "model/params_frozen_in_optimizer": [2.0] * n,
        "model/params_no_grad": [1.0] * n,
        "model/params_not_updated": [1.0] * n,
        "model/grads_cleared_before_step": [1.0] * n,
        "model/grad_nonfinite_params": [1.0] * n,
        "model/grads_not_reset": [1.0] * n,
        "model/eval_mode_share": [1.0] * n,
        "model/probs_as_logits": [1.0] * n,
        "model/same_batch": [1.0] * n,
        "model/layer_grad_norm_max": [4.0] * n,
        "model/layer_grad_norm_min": [-5.0] * n,
        "model/dead_relu_share": [1.0] * n,
        "model/dead_relu_rows": [64.0] * n,
        "model/saturated_share": [0.99] * n,
        "model/replica_drift": [0.1] * n,
        "model/scheduler_steps": [0.0] * n,
        "model/optimizer_steps": list(100.0 * np.arange(n)),
    }
    add(loss=_decay(n), **probe, **{"model/layer_update_ratio_max": [0.0] * n})
    add(loss=_decay(n), **{"model/layer_update_ratio_max": [-3.0] * n, "model/layer_update_ratio_min": [-7.0] * n})
    # most of a layer dead, and saturated under the whole-layer bar, over wide batches
    wide = {"model/dead_relu_rows": [64.0] * n, "model/saturated_rows": [64.0] * n}
    add(loss=_decay(n), **wide, **{"model/dead_relu_share": [0.9] * n, "model/saturated_share": [0.8] * n})
    # RL and preference runs
    add(loss=_noise(n, 0.1), reward=[1.0] * n)  # constant reward
    add(loss=_noise(n, 0.1), reward=[0.0] * 100 + [1.0] * 20, frac_reward_zero_std=[0.97] * n)  # GRPO no signal
    add(
        loss=_noise(n, 0.1), reward=list(_noise(n, 0.3, 10)), frac_reward_zero_std=[0.1] * 60 + [0.7] * 60
    )  # signal fading
    ret = np.r_[np.linspace(0, 10, 60), np.linspace(10, -1, 60)] + 0.2 * np.random.default_rng(11).standard_normal(n)
    add(loss=_noise(n, 0.1), reward=list(ret))  # return collapse
    add(loss=_noise(n, 0.1), reward=list(_noise(n, 0.3, 12)), grad_norm=[0.0] * n, kl=[0.0] * n)  # dead policy
    add(
        loss=0.69 * _noise(n, 0.02, 13),
        **{"rewards/accuracies": list(0.5 + 0.02 * _noise(n, 1.0, 14)), "rewards/margins": list(_noise(n, 0.5, 15))},
    )  # pref not learning
    won = np.r_[[0.69] * 60, [0.002] * 60] * _noise(n, 0.1, 16)
    add(loss_G=list(np.r_[[1.1] * 60, [7.0] * 60] * _noise(n, 0.1, 17)), loss_D=list(won))  # GAN, D wins
    return runs


@pytest.fixture(scope="module")
def reads():
    """``(reads, calls)``: the thresholds each rule's check read, and how often it ran."""
    got: dict[str, set[str]] = {}
    calls: dict[str, int] = {}
    saved = _recording_checks(got, calls)
    try:
        api.doctor(REPO / "examples", jobs=1, charts=False)
        core = [REPO / "examples" / name for name in ("bad_labels", "lr_hot", "lr_zero", "diverge", "healthy_seed1")]
        api.doctor(core, baseline=REPO / "examples" / "healthy" / "metrics.csv", jobs=1, charts=False)
        built = _built_runs()
        for run in built:
            compare_runlogs(built[0], run)
            engine.judge_runlog(run)
            # A loose configuration reaches branches the defaults stop before.
            engine.judge_runlog(run, T.DEFAULT.with_overrides({"dead_min_schedule_share": 0.0}))
        # The history rules: a run behind its siblings, finished and still training.
        steps = np.arange(1.0, 121.0)
        sibs = [Trace(f"s{i}", steps, _decay(120, floor=0.3, seed=i), 120.0) for i in range(4)]
        behind = Trace("run", steps, _decay(120, floor=1.8, seed=9), 120.0)
        judge_history(behind, sibs)
        envelope_finding(Trace("run", steps[:60], behind.values[:60], 120.0), sibs)
    finally:
        _restore(saved)
    return got, calls


@pytest.mark.slow
def test_every_rule_ran(reads):
    _, calls = reads
    missing = [r.id for r in _checked_rules() if not calls.get(r.id)]
    assert not missing, f"no run reached these checks: {missing}"


@pytest.mark.slow
def test_every_threshold_a_rule_reads_is_declared(reads):
    got, _ = reads
    wrong = {}
    for r in _checked_rules():
        undeclared = got.get(r.id, set()) - set(r.thresholds) - _engine_reads(r)
        if undeclared:
            wrong[r.id] = sorted(undeclared)
    assert not wrong, f"rules read thresholds they do not declare: {wrong}"


def _readable(fn: types.FunctionType) -> set[str]:
    """Threshold names written as ``x.<name>`` or ``getattr(x, "<name>")`` in ``fn`` and
    in every function of trainproof.rules it names, transitively."""
    seen: set = set()
    out: set[str] = set()
    stack = [fn]
    while stack:
        f = stack.pop()
        if f in seen:
            continue
        seen.add(f)
        g = f.__globals__
        for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(f)))):
            if isinstance(node, ast.Attribute) and node.attr in NAMES:
                out.add(node.attr)
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "getattr"
                and len(node.args) > 1
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in NAMES
            ):
                out.add(node.args[1].value)
            target = None
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                target = g.get(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                mod = g.get(node.value.id)
                if isinstance(mod, types.ModuleType):
                    target = getattr(mod, node.attr, None)
            if isinstance(target, types.FunctionType) and target.__module__.startswith("trainproof.rules"):
                stack.append(target)
    return out


@pytest.mark.slow
def test_every_declared_threshold_is_read_by_the_rule():
    wrong = {}
    for r in _checked_rules():
        unread = set(r.thresholds) - _readable(r.check) - _engine_reads(r)
        if unread:
            wrong[r.id] = sorted(unread)
    assert not wrong, f"rules declare thresholds their check never reads: {wrong}"


def test_declared_thresholds_exist():
    for r in _checked_rules():
        assert set(r.thresholds) <= NAMES, r.id
        assert _engine_reads(r) <= NAMES, r.id


@pytest.mark.slow
def test_the_static_reading_also_covers_every_dynamic_read(reads):
    """The static side is not blind: what a rule was seen to read, its source names."""
    got, _ = reads
    for r in _checked_rules():
        assert got.get(r.id, set()) <= _readable(r.check) | _engine_reads(r), r.id
