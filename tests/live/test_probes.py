"""The model-level measurements (``trainproof.live.probes.ModelProbe``) through the monitor:
each ``model/*`` key on a tiny real PyTorch loop with one bug, and on the correct loop.

Every measurement is taken at a check step only and lands in that step's record; these
tests read the series from the monitor's history (or its JSONL log). torch runs on one
thread, on the CPU.
"""

from __future__ import annotations

import json
import math
import socket
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from trainproof.api import read_runlog  # noqa: E402
from trainproof.live.monitor import Monitor  # noqa: E402
from trainproof.live.probes import KEYS, LAYER_KEYS  # noqa: E402

from conftest import first_cases_fast, one  # noqa: E402

nn = torch.nn
CHECK = 4


@pytest.fixture(autouse=True)
def _one_thread(torch_one_thread):
    """Every test here on one torch thread (see conftest.torch_one_thread)."""


def mlp(act=None, seed: int = 0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), act or nn.Tanh(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1))


def data(seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(32, 6, generator=g)
    return x, torch.tanh(x.sum(1, keepdim=True))


def loop(
    model,
    opt,
    steps: int = 2 * CHECK,
    zero_grad=True,
    accumulate: int = 1,
    before_log=None,
    order: str = "log-step-clear",
    **kw,
):
    """Train ``steps`` optimizer steps with the monitor checking every CHECK calls; returns
    the monitor (closed) and the series of the check steps as ``{key: [values]}``.
    ``order``: after backward, ``log-step-clear`` (log, step, zero_grad),
    ``clear-first`` (zero_grad before the forward pass, log after the step) or
    ``log-clear-step`` (the bug: zero_grad between backward and step)."""
    x, y = data()
    mon = Monitor(model, opt, check_every=CHECK, policy="silent", **kw)
    for step in range(steps):
        if order == "clear-first" and zero_grad:
            opt.zero_grad()
        for k in range(accumulate):
            part = slice(k * len(x) // accumulate, (k + 1) * len(x) // accumulate)
            loss = nn.functional.mse_loss(model(x[part]), y[part]) / accumulate
            loss.backward()
        if before_log is not None:
            before_log(step)
        if order == "clear-first":
            opt.step()
            mon.log(step, loss.detach())
            continue
        mon.log(step, loss.detach())
        if order == "log-clear-step" and zero_grad:
            opt.zero_grad()
        opt.step()
        if order == "log-step-clear" and zero_grad:
            opt.zero_grad()
    mon.close()
    run = mon.guardian.runlog()
    return mon, {k: list(map(float, s.values)) for k, s in run.series.items() if k.startswith("model/")}


def last(series: dict, key: str) -> float:
    assert key in series, sorted(series)
    return series[key][-1]


# --------------------------------------------------------------------------- the correct loop


def test_correct_loop_reports_nothing_wrong_at_each_check_only():
    model = mlp()
    mon, s = loop(model, torch.optim.SGD(model.parameters(), lr=0.05))
    for key in (
        "model/params_outside_optimizer",
        "model/params_frozen_in_optimizer",
        "model/params_no_grad",
        "model/params_not_updated",
        "model/grads_cleared_before_step",
        "model/grad_nonfinite_params",
        "model/eval_mode_share",
        "model/grads_not_reset",
    ):
        assert s[key] == [0.0, 0.0], (key, s[key])
    run = mon.guardian.runlog()
    # One value per check step (steps 3 and 7), none in between.
    assert list(run.series["model/params_no_grad"].steps) == [3.0, 7.0]
    assert s["model/optimizer_steps"] == [3.0, 7.0]
    assert "model/dead_relu_share" not in s  # activations are opt-in
    assert set(s) <= set(KEYS)


def test_layers_false_leaves_out_the_per_layer_measurements():
    model = mlp()
    _, s = loop(model, torch.optim.SGD(model.parameters(), lr=0.05), layers=False)
    assert "model/layer_grad_norm_max" not in s and "model/params_outside_optimizer" not in s
    assert s["model/eval_mode_share"] == [0.0, 0.0]


# --------------------------------------------------------------------------- optimizer facts


def test_layer_added_after_the_optimizer_was_built_is_outside_it():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    model.append(nn.Linear(1, 1))  # added after the optimizer took model.parameters()
    mon, s = loop(model, opt)
    assert s["model/params_outside_optimizer"] == [2.0, 2.0]
    assert mon.guardian.meta["model_probe"]["params_outside_optimizer"] == ["5.weight", "5.bias"]


def test_frozen_parameters_in_the_optimizer_are_counted():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    model[0].requires_grad_(False)  # frozen after the optimizer was built
    _, s = loop(model, opt)
    assert s["model/params_frozen_in_optimizer"] == [2.0, 2.0]
    assert s["model/params_outside_optimizer"] == [0.0, 0.0]


def test_parameters_without_a_gradient_are_counted():
    model = mlp()
    unused = nn.Linear(3, 3)  # in the optimizer, never in the forward pass
    opt = torch.optim.SGD([*model.parameters(), *unused.parameters()], lr=0.05)
    _, s = loop(model, opt)
    assert s["model/params_no_grad"] == [2.0, 2.0]


def test_a_branch_used_every_other_step_is_not_cut_off():
    # The checks fall on steps of one parity (every CHECK calls, CHECK even); the branch
    # runs on the other steps only. It has no gradient at any check step, but it moved
    # between checks: it gets gradients. A branch never used stays counted.
    torch.manual_seed(0)
    trunk, branch, never = nn.Linear(6, 8), nn.Linear(8, 1), nn.Linear(8, 1)
    head = nn.Linear(8, 1)
    params = [*trunk.parameters(), *branch.parameters(), *head.parameters(), *never.parameters()]
    opt = torch.optim.Adam(params, lr=1e-2)
    model = nn.ModuleList([trunk, branch, head, never])
    x, y = data()
    mon = Monitor(model, opt, check_every=CHECK, policy="silent")
    for step in range(4 * CHECK):
        h = torch.tanh(trunk(x))
        out = head(h) + (branch(h) if step % 2 == 0 else 0.0)
        nn.functional.mse_loss(out, y).backward()
        mon.log(step, 1.0)
        opt.step()
        opt.zero_grad()
    mon.close()
    counts = list(mon.guardian.runlog().series["model/params_no_grad"].values)
    assert counts[0] == 4.0 and counts[1:] == [2.0] * (len(counts) - 1)  # only `never` from the second check
    assert "TP-PARAMS-NO-GRAD" in mon.report().ids()  # `never` is still cut off


def test_an_all_zero_gradient_counts_as_no_gradient():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    model[4].bias.register_hook(lambda g: g * 0)  # a detached path: the bias gets zeros
    mon, s = loop(model, opt)
    assert s["model/params_no_grad"] == [1.0, 1.0]
    assert mon.guardian.meta["model_probe"]["params_no_grad"] == ["4.bias"]


@pytest.mark.slow
def test_updates_below_float_resolution_are_not_updated_and_a_sane_lr_is():
    model = mlp()
    _, s = loop(model, torch.optim.SGD(model.parameters(), lr=1e-20))
    assert s["model/params_not_updated"] == [6.0, 6.0]
    assert max(s["model/params_not_updated_step"]) < math.log10(0.5)  # rounded away: not a lost update
    model = mlp()
    _, s = loop(model, torch.optim.SGD(model.parameters(), lr=0.05))
    assert s["model/params_not_updated"] == [0.0, 0.0]


class _LostStep(torch.optim.SGD):
    """An SGD whose step computes nothing: the update is lost, whatever the gradient."""

    @torch.no_grad()
    def step(self, closure=None):
        return None


def test_a_lost_update_owes_many_float_steps_and_warns():
    model = mlp()
    mon, s = loop(model, _LostStep(model.parameters(), lr=0.05), steps=3 * CHECK)
    assert s["model/params_not_updated"] == [6.0, 6.0, 6.0]
    assert min(s["model/params_not_updated_step"]) > 3  # lr x |grad| thousands of float steps of |W|
    assert "TP-PARAMS-NOT-UPDATED" in mon.report(print_it=False).ids()


def bn_mlp(seed: int = 0):
    """Two hidden layers, each a Linear feeding a BatchNorm1d: the Linear biases have a true
    gradient of 0 (the norm subtracts the batch mean), float rounding noise in practice."""
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(6, 16),
        nn.BatchNorm1d(16),
        nn.ReLU(),
        nn.Linear(16, 16),
        nn.BatchNorm1d(16),
        nn.ReLU(),
        nn.Linear(16, 1),
    )


@pytest.mark.parametrize(
    "opt_name, batch",
    first_cases_fast([("sgd", 8), ("adam", 8), ("sgd", 2), ("sgd", 64), ("adam", 2), ("adam", 64)]),
)
def test_biases_feeding_a_batch_norm_are_rounding_noise_not_a_lost_update(opt_name, batch):
    model = bn_mlp()
    if opt_name == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(64, 6, generator=g)
    y = torch.tanh(x.sum(1, keepdim=True))
    mon = Monitor(model, opt, check_every=CHECK, policy="silent")
    for step in range(3 * CHECK):
        part = slice((step * batch) % 64, (step * batch) % 64 + batch)
        loss = nn.functional.mse_loss(model(x[part]), y[part])
        loss.backward()
        mon.log(step, loss.detach())
        opt.step()
        opt.zero_grad()
    mon.close()
    run = mon.guardian.runlog()
    stuck = run.series["model/params_not_updated"].values
    if stuck.any():  # SGD rounds their update away: below half a float step of the weights
        owed = run.series["model/params_not_updated_step"].values
        assert (owed < math.log10(0.5)).all(), owed
        assert set(mon.guardian.meta["model_probe"]["params_not_updated"]) <= {"0.bias", "3.bias"}
    assert "TP-PARAMS-NOT-UPDATED" not in mon.report(print_it=False).ids()


@pytest.mark.slow
def test_a_group_with_lr_zero_is_not_counted_as_not_updated():
    model = mlp()
    opt = torch.optim.SGD([{"params": model[0].parameters(), "lr": 0.0}, {"params": model[2:].parameters()}], lr=0.05)
    _, s = loop(model, opt)
    assert s["model/params_not_updated"] == [0.0, 0.0]


@pytest.mark.slow
def test_a_step_the_grad_scaler_skips_is_not_counted_and_the_scale_is_recorded():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
    x, y = data()
    mon = Monitor(model, opt, check_every=CHECK, policy="silent", scaler=scaler)
    for step in range(2 * CHECK):
        loss = nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        if step == CHECK - 1:  # the step after the first check's log is skipped
            model[0].weight.grad[0, 0] = math.inf
        mon.log(step, loss.detach())
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
    mon.close()
    run = mon.guardian.runlog()
    assert list(run.series["loss_scale"].values) == [2.0**10, 2.0**9]
    assert list(run.series["model/amp_skipped_steps"].values) == [0.0, 1.0]
    assert list(run.series["model/optimizer_steps"].values) == [3.0, 6.0]
    # the first check's log saw the inf gradient
    assert list(run.series["model/grad_nonfinite_params"].values) == [1.0, 0.0]


@pytest.mark.slow
def test_scheduler_steps_follow_the_scheduler():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2)
    x, y = data()
    mon = Monitor(model, opt, check_every=CHECK, policy="silent", scheduler=sched)
    for step in range(2 * CHECK):
        nn.functional.mse_loss(model(x), y).backward()
        mon.log(step, 1.0)
        opt.step()
        opt.zero_grad()
        if step < CHECK:  # the scheduler stops being stepped after the first check
            sched.step()
    mon.close()
    assert list(mon.guardian.runlog().series["model/scheduler_steps"].values) == [3.0, 4.0]


def test_the_probe_on_its_own_reads_its_measurements():
    from trainproof.live.probes import ModelProbe

    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    probe = ModelProbe(model, opt)
    x, y = data()
    got = {}
    for step in range(3):
        nn.functional.mse_loss(model(x), y).backward()
        probe.on_log()
        if step == 1:
            probe.arm()
        if step == 2:
            got = probe.read(probe.collect())
        opt.step()
        opt.zero_grad()
    probe.close()
    assert got["model/optimizer_steps"] == 2.0 and got["model/params_not_updated"] == 0.0
    assert got["model/grads_not_reset"] == 0.0 and -6 < got["model/layer_update_ratio_max"] < 0
    assert isinstance(got["model/layer_grad_norm_max_layer"], str)
    assert len(opt._optimizer_step_post_hooks) == 0


def test_an_optimizer_step_with_a_closure_is_measured():
    """The pre-step hook runs before the closure's backward (as under Lightning): the
    gradients are looked at after the step."""
    from trainproof.live.probes import ModelProbe

    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    probe = ModelProbe(model, opt)
    x, y = data()

    def closure():
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss

    probe.arm()
    opt.step(closure)
    got = probe.read(probe.collect())
    probe.close()
    assert got["model/params_not_updated"] == 0.0 and -6 < got["model/layer_update_ratio_max"] < 0
    # The closure's backward runs inside the step: its gradients are there at the step's end.
    assert got["model/grads_cleared_before_step"] == 0.0


class PlainSGD:
    """An optimizer that is no ``torch.optim.Optimizer`` (no step hooks): SGD by hand."""

    def __init__(self, params, lr: float) -> None:
        self.param_groups = [{"params": list(params), "lr": lr}]

    @torch.no_grad()
    def step(self) -> None:
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    p.sub_(g["lr"] * p.grad)

    def zero_grad(self) -> None:
        for g in self.param_groups:
            for p in g["params"]:
                p.grad = None


def test_an_optimizer_without_step_hooks_is_noted_and_the_rest_measured():
    model = mlp()
    mon, s = loop(model, PlainSGD(model.parameters(), lr=0.05))
    assert s["model/params_outside_optimizer"] == [0.0, 0.0] and s["model/params_no_grad"] == [0.0, 0.0]
    assert "model/layer_update_ratio_max" not in s and "model/optimizer_steps" not in s
    assert any("step hooks unavailable" in n for n in mon.guardian.meta["model_probe"]["notes"])


# --------------------------------------------------------------------------- gradients


def test_non_finite_gradient_names_the_first_layer_in_model_order():
    model = mlp()

    def poison(step):
        if step == CHECK - 1:
            model[4].weight.grad[0, 0] = math.nan
            model[2].weight.grad[1, 1] = math.inf

    mon, s = loop(model, torch.optim.SGD(model.parameters(), lr=0.05), before_log=poison, steps=CHECK)
    assert s["model/grad_nonfinite_params"] == [2.0]
    assert mon.guardian.meta["model_probe"]["grad_nonfinite_layer"] == "2.weight"


def test_a_finite_loop_has_no_non_finite_gradient():
    model = mlp()
    _, s = loop(model, torch.optim.SGD(model.parameters(), lr=0.05))
    assert s["model/grad_nonfinite_params"] == [0.0, 0.0]


@pytest.mark.slow
def test_one_exploding_layer_stands_out_in_the_layer_gradient_norms(tmp_path):
    model = mlp()
    model[2].weight.register_hook(lambda g: g * 1e5)
    log = tmp_path / "run.jsonl"
    mon, s = loop(model, torch.optim.SGD(model.parameters(), lr=1e-9), log_path=log)
    assert last(s, "model/layer_grad_norm_max") > 3.0
    assert mon.guardian.meta["model_probe"]["layer_grad_norm_max_layer"] == "2.weight"
    line = json.loads(log.read_text().splitlines()[CHECK - 1])
    assert line["model/layer_grad_norm_max_layer"] == "2.weight" and line["model/layer_grad_norm_max"] > 3.0
    # a reader takes the numbers back and skips the layer names
    run = read_runlog(log)
    assert list(run.series["model/layer_grad_norm_max"].values) == pytest.approx(s["model/layer_grad_norm_max"])
    assert not any(k.endswith("_layer") for k in run.series)


def test_healthy_layers_have_gradient_norms_near_the_median():
    model = mlp()
    _, s = loop(model, torch.optim.SGD(model.parameters(), lr=0.05))
    assert abs(last(s, "model/layer_grad_norm_max")) < 2 and abs(last(s, "model/layer_grad_norm_min")) < 2


def test_layer_update_ratio_matches_a_manual_computation_of_the_measured_step():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = data()
    mon = Monitor(model, opt, check_every=CHECK, policy="silent")
    manual = None
    for step in range(CHECK):
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        mon.log(step, loss.detach())
        before = {n: p.detach().clone() for n, p in model.named_parameters() if p.dim() >= 2}
        opt.step()
        if step == CHECK - 2:  # the step after the log() before the check is measured
            after = {n: model.get_parameter(n).detach() for n in before}
            manual = {n: float((after[n] - before[n]).norm() / after[n].norm()) for n in before}
        opt.zero_grad()
    mon.close()
    run = mon.guardian.runlog()
    hi = max(manual, key=manual.get)
    assert run.series["model/layer_update_ratio_max"].values[-1] == pytest.approx(math.log10(manual[hi]), abs=1e-5)
    assert mon.guardian.meta["model_probe"]["layer_update_ratio_max_layer"] == hi


# --------------------------------------------------------------------------- loop bugs


def test_eval_mode_during_training_is_the_share_of_calls():
    model = mlp()
    model.eval()
    _, s = loop(model, torch.optim.SGD(model.parameters(), lr=0.05))
    assert s["model/eval_mode_share"] == [1.0, 1.0]


def test_eval_mode_half_the_calls():
    model = mlp()

    def flip(step):
        model.train(step % 2 == 0)

    _, s = loop(model, torch.optim.SGD(model.parameters(), lr=0.05), before_log=flip)
    assert s["model/eval_mode_share"] == [0.5, 0.5]


def test_zero_grad_missing_is_grads_not_reset():
    model = mlp()
    _, s = loop(model, torch.optim.SGD(model.parameters(), lr=0.01), zero_grad=False)
    assert s["model/grads_not_reset"] == [1.0, 1.0]


@pytest.mark.slow
def test_gradient_accumulation_done_right_resets_the_gradients():
    model = mlp()
    _, s = loop(model, torch.optim.SGD(model.parameters(), lr=0.05), accumulate=4)
    assert s["model/grads_not_reset"] == [0.0, 0.0]
    assert s["model/grads_cleared_before_step"] == [0.0, 0.0]


@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
def test_gradients_cleared_between_backward_and_step_are_counted(opt_name):
    # zero_grad() between backward() and step(): backward gives every tensor a gradient,
    # the step finds none and changes nothing.
    model = mlp()
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}[opt_name]
    before = [p.detach().clone() for p in model.parameters()]
    mon, s = loop(model, cls(model.parameters(), lr=0.01), order="log-clear-step")
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))  # the bug is real
    assert s["model/grads_cleared_before_step"] == [6.0, 6.0]
    assert s["model/params_not_updated"] == [0.0, 0.0]  # no gradient at the step: not this one
    assert mon.probe.details["grads_cleared_before_step"][0] == "0.weight"


@pytest.mark.parametrize("order", ["log-step-clear", "clear-first"])
def test_gradients_cleared_in_the_usual_places_are_not_counted(order):
    model = mlp()
    _, s = loop(model, torch.optim.Adam(model.parameters(), lr=0.01), order=order)
    assert s["model/grads_cleared_before_step"] == [0.0, 0.0]


class Conditional(nn.Module):
    """A shared trunk and four branches, of which ``route(step)`` picks the ones a step
    uses: the set of tensors with a gradient changes from step to step. With ``cut``, the
    last branch's output is detached by mistake: it never gets a gradient."""

    def __init__(self, kind: str, cut: bool = False) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.kind = kind
        self.cut = cut
        self.trunk = nn.Linear(6, 8)
        self.branches = nn.ModuleList(nn.Linear(8, 8 if kind == "layerdrop" else 1) for _ in range(4))
        self.out = nn.Linear(8, 1)
        self.gen = torch.Generator().manual_seed(3)

    def route(self, step: int) -> list[int]:
        if self.kind == "alternating":  # task A's head on even steps, task B's on odd ones
            return [step % 2]
        if self.kind == "layerdrop":  # each block kept with probability 0.7, at least one
            kept = [i for i in range(4) if torch.rand((), generator=self.gen) < 0.7]
            return kept or [0]
        return [int(torch.randint(0, 4, (), generator=self.gen))]  # top-1 mixture of experts

    def forward(self, x, step: int):
        h = torch.tanh(self.trunk(x))
        if self.kind == "layerdrop":
            for i in self.route(step):
                b = torch.tanh(self.branches[i](h))
                h = h + (b.detach() if self.cut and i == 3 else b)
            return self.out(h)
        return sum(self.branches[i](h) for i in self.route(step))


def conditional_run(kind: str, order: str, steps: int = 4 * CHECK, cut: bool = False) -> Monitor:
    """Train a :class:`Conditional` model of ``kind`` (``cut``: see there) with the clearing
    in ``order`` (as in :func:`loop`, plus ``clear-step-log``: zero_grad between backward
    and step, the log after the step); returns the closed monitor."""
    model = Conditional(kind, cut)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    x, y = data()
    mon = Monitor(model, opt, check_every=CHECK, policy="silent")
    for step in range(steps):
        if order == "clear-first":
            opt.zero_grad()
        loss = nn.functional.mse_loss(model(x, step), y)
        loss.backward()
        if order in ("clear-first", "clear-step-log"):
            if order == "clear-step-log":
                opt.zero_grad()
            opt.step()
            mon.log(step, loss.detach())
            continue
        mon.log(step, loss.detach())
        if order == "log-clear-step":
            opt.zero_grad()
        opt.step()
        if order == "log-step-clear":
            opt.zero_grad()
    mon.close()
    return mon


@pytest.mark.parametrize("order", ["log-step-clear", "clear-first"])
@pytest.mark.parametrize("kind", ["alternating", "layerdrop", "moe"])
def test_tensors_no_backward_of_the_step_reached_are_not_cleared_gradients(kind, order):
    # The set of tensors with a gradient changes from step to step, and nothing clears a
    # gradient before the step: a branch that the measured step does not use has no
    # gradient to lose.
    mon = conditional_run(kind, order)
    counts = list(mon.guardian.runlog().series["model/grads_cleared_before_step"].values)
    assert counts == [0.0] * 4, counts
    assert "TP-GRADS-CLEARED-BEFORE-STEP" not in mon.guardian.judge(final=True).ids()


@pytest.mark.parametrize("order", ["log-clear-step", "clear-step-log"])
@pytest.mark.parametrize("kind", ["alternating", "layerdrop", "moe"])
def test_gradients_cleared_before_the_step_are_counted_on_a_conditional_model(kind, order):
    # The bug on the same models, with the log before or after the step: the trunk (and
    # whatever branch the step used) had its gradient cleared before the step.
    mon = conditional_run(kind, order)
    counts = list(mon.guardian.runlog().series["model/grads_cleared_before_step"].values)
    assert all(c >= 2 for c in counts), counts
    assert "trunk.weight" in mon.probe.details["grads_cleared_before_step"]
    assert "TP-GRADS-CLEARED-BEFORE-STEP" in mon.guardian.judge(final=True).ids()


@pytest.mark.parametrize("order", ["log-step-clear", pytest.param("clear-first", marks=pytest.mark.slow)])
def test_a_layerdrop_block_trained_between_checks_is_not_cut_off(order):
    # Each block sits out about 30% of the steps: one without a gradient at a check step
    # had one at some step since the previous check, whatever it held at that check, and
    # moved. A block whose output is detached never moves and stays counted.
    mon = conditional_run("layerdrop", order, steps=8 * CHECK)
    counts = list(mon.guardian.runlog().series["model/params_no_grad"].values)
    assert counts == [0.0] * 8, counts
    assert "TP-PARAMS-NO-GRAD" not in mon.guardian.judge(final=True).ids()
    mon = conditional_run("layerdrop", order, steps=8 * CHECK, cut=True)
    counts = list(mon.guardian.runlog().series["model/params_no_grad"].values)
    assert counts == [2.0] * 8, counts
    assert mon.probe.details["params_no_grad"] == ["branches.3.weight", "branches.3.bias"]
    assert "TP-PARAMS-NO-GRAD" in mon.guardian.judge(final=True).ids()


@pytest.mark.parametrize("clear_d", [True, False])
def test_a_gan_generator_backward_through_the_discriminator_is_no_missing_reset(clear_d):
    # The DCGAN order: D.zero_grad(); lossD.backward(); D's step; G.zero_grad();
    # lossG.backward() (through D, after D's step); G's step. The generator's backward finds
    # D's applied gradient, which D's own zero_grad clears before D's next backward: not a
    # missing reset. Without D.zero_grad() it is one.
    torch.manual_seed(0)
    gen = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 6))
    disc = nn.Sequential(nn.Linear(6, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
    opt_g = torch.optim.Adam(gen.parameters(), lr=1e-3)
    opt_d = torch.optim.Adam(disc.parameters(), lr=1e-3)
    mon_d = Monitor(disc, opt_d, check_every=CHECK, policy="silent")
    mon_g = Monitor(gen, opt_g, check_every=CHECK, policy="silent")
    bce = nn.BCEWithLogitsLoss()
    g = torch.Generator().manual_seed(2)
    for step in range(3 * CHECK):
        real = torch.randn(16, 6, generator=g) + 2.0
        fake = gen(torch.randn(16, 4, generator=g))
        if clear_d:
            opt_d.zero_grad()
        loss_d = bce(disc(real), torch.ones(16, 1)) + bce(disc(fake.detach()), torch.zeros(16, 1))
        loss_d.backward()
        mon_d.log(step, loss_d)
        opt_d.step()
        opt_g.zero_grad()
        loss_g = bce(disc(fake), torch.ones(16, 1))
        loss_g.backward()
        mon_g.log(step, loss_g, d_loss=loss_d.detach())  # the other side's loss: an adversarial run
        opt_g.step()
    mon_d.close()
    mon_g.close()
    flags = list(mon_d.guardian.runlog().series["model/grads_not_reset"].values)
    assert flags == ([0.0] * len(flags) if clear_d else [1.0] * len(flags)) and len(flags) >= 2
    assert set(mon_g.guardian.runlog().series["model/grads_not_reset"].values) == {0.0}
    # The generator's loss beside the discriminator's is a minimax game's: the rules that
    # expect a loss to fall (TP-DIVERGE) stand aside.
    assert "adversarial" in mon_g.guardian.judge(final=True).skipped["TP-DIVERGE"].reason


@pytest.mark.slow
def test_zero_grad_to_zeros_not_none_is_a_reset():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = data()
    mon = Monitor(model, opt, check_every=CHECK, policy="silent")
    for step in range(2 * CHECK):
        opt.zero_grad(set_to_none=False)  # before the forward pass, as many loops do
        nn.functional.mse_loss(model(x), y).backward()
        mon.log(step, 1.0)
        opt.step()
    mon.close()
    assert list(mon.guardian.runlog().series["model/grads_not_reset"].values) == [0.0, 0.0]


# --------------------------------------------------------------------------- activations


@pytest.mark.slow
def test_dead_relu_from_a_huge_negative_bias():
    model = mlp()
    with torch.no_grad():
        model[2].bias.fill_(-1e3)
    mon, s = loop(model, torch.optim.SGD(model.parameters(), lr=0.01), activations=True)
    assert s["model/dead_relu_share"] == [1.0, 1.0]
    assert s["model/dead_relu_rows"] == [32.0, 32.0]  # every example of the batch, once
    assert mon.guardian.meta["model_probe"]["dead_relu_layer"] == "3"


def test_healthy_relu_is_mostly_alive():
    model = mlp()
    _, s = loop(model, torch.optim.SGD(model.parameters(), lr=0.05), activations=True)
    assert last(s, "model/dead_relu_share") < 0.5


@pytest.mark.slow
def test_saturated_tanh_and_the_activation_scale():
    model = mlp()
    with torch.no_grad():
        model[0].weight.mul_(1e3)
    _, s = loop(model, torch.optim.SGD(model.parameters(), lr=1e-6), activations=True)
    assert last(s, "model/saturated_share") > 0.9
    assert s["model/saturated_rows"] == [32.0, 32.0]
    model = mlp()
    _, s = loop(model, torch.optim.SGD(model.parameters(), lr=0.05), activations=True)
    assert last(s, "model/saturated_share") < 0.1
    assert -3 < last(s, "model/activation_scale_max") < 1


class Squeezed(nn.Module):
    """A classifier whose sigmoid output is squeezed to shape (batch,) before it returns."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
        self.act = nn.Sigmoid()

    def forward(self, x):
        return self.act(self.fc(x)).squeeze(1)


def confident(kind: str, hidden_scale: float = 1.0) -> tuple[Monitor, dict]:
    """A model whose output layer (a sigmoid or tanh module) is already confident: its last
    linear layer scaled 500x, its targets its own outputs, rounded to the asymptotes (a
    converged classifier, an autoencoder of +/-1 patterns). ``kind``: ``sigmoid``, ``tanh``,
    ``squeezed`` (:class:`Squeezed`) or ``rescaled`` (``2 * sigmoid - 1`` fitting +/-1). With
    ``hidden_scale`` the hidden tanh layer's weights are scaled too (the real bug)."""
    torch.manual_seed(0)
    x, _ = data()
    if kind == "squeezed":
        model, last = Squeezed(), None
        last = model.fc[2]
    else:
        out = nn.Tanh() if kind == "tanh" else nn.Sigmoid()
        model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 4), out)
        last = model[2]
    with torch.no_grad():
        last.weight.mul_(500.0)
        if kind != "squeezed":
            model[0].weight.mul_(hidden_scale)
        target = model(x).detach()
        target = torch.sign(target) if kind == "tanh" else (target > 0.5).float()

    def fwd(inp):
        o = model(inp)
        return 2 * o - 1 if kind == "rescaled" else o

    if kind == "rescaled":
        target = 2 * target - 1
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    mon = Monitor(model, opt, check_every=CHECK, policy="silent", activations=True)
    for step in range(3 * CHECK):
        o = fwd(x)
        if kind in ("sigmoid", "squeezed"):
            loss = nn.functional.binary_cross_entropy(o, target)
        else:
            loss = nn.functional.mse_loss(o, target)
        loss.backward()
        mon.log(step, loss.detach())
        opt.step()
        opt.zero_grad()
    mon.close()
    run = mon.guardian.runlog()
    return mon, {k: list(map(float, s.values)) for k, s in run.series.items() if k.startswith("model/")}


@pytest.mark.parametrize("kind", ["sigmoid", "tanh", "squeezed", "rescaled"])
def test_a_confident_output_layer_is_not_saturation(kind):
    # The output of a converged sigmoid or tanh sits at its asymptotes by design: only the
    # hidden tanh (unsaturated) is measured, and the output module is named as left out.
    mon, s = confident(kind)
    if kind == "squeezed":  # no hidden tanh or sigmoid at all: nothing to measure
        assert "model/saturated_share" not in s
    else:
        assert max(s["model/saturated_share"]) < 0.5, s["model/saturated_share"]
        assert mon.probe.details["saturated_layer"] == "1"
    assert mon.probe.details["saturation_output_layers"] == (["act"] if kind == "squeezed" else ["3"])
    assert "TP-SATURATION" not in mon.guardian.judge(final=True).ids()


class TwoHeads(nn.Module):
    """A multi-label classifier: two sigmoid heads on a shared ReLU layer, joined with
    ``torch.cat`` (or ``torch.stack``) into the output."""

    def __init__(self, join: str) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 16), nn.ReLU())
        self.h1, self.h2 = nn.Linear(16, 2), nn.Linear(16, 2)
        self.s1, self.s2 = nn.Sigmoid(), nn.Sigmoid()
        self.join = join

    def forward(self, x):
        z = self.body(x)
        a, b = self.s1(self.h1(z)), self.s2(self.h2(z))
        return torch.cat([a, b], dim=1) if self.join == "cat" else torch.stack([a, b], dim=1)


@pytest.mark.parametrize("join", ["cat", "stack"])
def test_confident_heads_joined_into_the_output_are_not_saturation(join):
    # a breaker's multi-label model (two nn.Sigmoid heads, torch.cat, BCE to 5e-5) warned
    # "97% saturated": the join had two inputs, which ended the walk back from the output
    torch.manual_seed(0)
    x, _ = data()
    model = TwoHeads(join)
    with torch.no_grad():
        model.h1.weight.mul_(500.0), model.h2.weight.mul_(500.0)
        target = (model(x) > 0.5).float()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    mon = Monitor(model, opt, check_every=CHECK, policy="silent", activations=True)
    for step in range(3 * CHECK):
        loss = nn.functional.binary_cross_entropy(model(x), target)
        loss.backward()
        mon.log(step, loss.detach())
        opt.step()
        opt.zero_grad()
    mon.close()
    assert sorted(mon.probe.details["saturation_output_layers"]) == ["s1", "s2"]
    assert "TP-SATURATION" not in mon.guardian.judge(final=True).ids()


def test_a_saturated_hidden_layer_before_a_confident_output_is_still_found():
    mon, s = confident("sigmoid", hidden_scale=1e3)
    assert min(s["model/saturated_share"]) > 0.9
    assert mon.probe.details["saturated_layer"] == "1"
    assert "TP-SATURATION" in mon.guardian.judge(final=True).ids()


def test_hooks_are_removed_after_each_check_and_the_step_counter_at_close():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = data()
    mon = Monitor(model, opt, check_every=CHECK, policy="silent", activations=True)

    def hooks():
        mods = [(m._forward_hooks, m._forward_pre_hooks) for m in model.modules()]
        # tensor hooks, and the hooks that see a backward deliver a gradient
        params = [h for p in model.parameters() for h in (p._backward_hooks, p._post_accumulate_grad_hooks)]
        return (
            sum(len(a) + len(b) for a, b in mods),
            sum(len(h or {}) for h in params),
            len(opt._optimizer_step_pre_hooks),
        )

    during = []
    for step in range(2 * CHECK):
        nn.functional.mse_loss(model(x), y).backward()
        mon.log(step, 1.0)
        during.append(hooks())
        opt.step()
        opt.zero_grad()
    # armed at the call before each check (steps 2 and 6), gone after the check
    # tanh, relu, the input batch's pre-hook and the output's hook
    assert during[2][0] == 4 and during[2][2] == 1
    assert during[2][1] == 6  # one delivery hook per trainable tensor
    assert during[3] == (0, 0, 0) and during[7] == (0, 0, 0)
    assert len(opt._optimizer_step_post_hooks) == 1  # the step counter
    mon.close()
    assert hooks() == (0, 0, 0) and len(opt._optimizer_step_post_hooks) == 0


@pytest.mark.slow
def test_a_compiled_model_skips_activation_hooks_with_a_note_and_keeps_the_rest():
    model = mlp()
    fwd = torch.compile(model, backend="eager")
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    mon, s = loop(fwd, opt, activations=True)
    assert "model/dead_relu_share" not in s
    assert s["model/params_outside_optimizer"] == [0.0, 0.0] and s["model/grads_not_reset"] == [0.0, 0.0]
    assert any("torch.compile" in n for n in mon.guardian.meta["model_probe"]["notes"])
    assert all(not m._forward_hooks for m in model.modules())


def test_every_key_written_is_declared(tmp_path):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    sched = torch.optim.lr_scheduler.StepLR(opt, 2)
    log = tmp_path / "run.jsonl"
    loop(model, opt, activations=True, scheduler=sched, log_path=log)
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    check = {k for k in lines[CHECK - 1] if k.startswith("model/")}
    assert check and check <= set(KEYS) | set(LAYER_KEYS)
    assert {k for k in check if isinstance(lines[CHECK - 1][k], str)} <= set(LAYER_KEYS)
    assert not any(k.startswith("model/") for k in lines[0])  # nothing between checks


# --------------------------------------------------------------------------- two replicas


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _replica_worker(rank: int, world: int, port: int, out: str) -> None:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    res = {}
    try:
        for case in ("same", "perturbed"):
            model = mlp()
            ddp = DDP(model)
            if case == "perturbed" and rank == 1:
                with torch.no_grad():  # after DDP's broadcast: this replica starts elsewhere
                    model[0].weight.add_(0.01)
            opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
            mon = Monitor(ddp, opt, check_every=2, policy="silent", replica_every=3)
            x, y = data(seed=rank)
            for step in range(8):
                nn.functional.mse_loss(ddp(x), y).backward()
                mon.log(step, 1.0)
                opt.step()
                opt.zero_grad()
            mon.close()
            s = mon.guardian.runlog().series["model/replica_drift"]
            res[case] = {"steps": list(map(float, s.steps)), "values": list(map(float, s.values))}
    finally:
        Path(out, f"replica.{rank}.json").write_text(json.dumps(res))
        dist.destroy_process_group()


@pytest.mark.slow
def test_replica_drift_two_gloo_processes(tmp_path):
    import torch.multiprocessing as mp

    if not torch.distributed.is_available():
        pytest.skip("this torch is built without torch.distributed")
    ctx = mp.spawn(_replica_worker, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=False)
    deadline = time.monotonic() + 240.0  # 2 processes importing torch on a busy 2-core machine
    while not ctx.join(timeout=1.0):
        if time.monotonic() > deadline:
            for p in ctx.processes:
                if p.is_alive():
                    p.kill()
            pytest.fail("the 2 processes were not done after 240 s")
    res = [json.loads((tmp_path / f"replica.{r}.json").read_text()) for r in (0, 1)]
    for r in res:
        # the first two checks (steps 1 and 3), then every replica_every=3 checks (step 7)
        assert r["same"]["steps"] == [1.0, 3.0, 7.0] and r["same"]["values"] == [0.0, 0.0, 0.0]
        assert r["perturbed"]["steps"] == [1.0, 3.0, 7.0]
        assert all(v > 1e-4 for v in r["perturbed"]["values"])


# --------------------------------------------------------------------------- the loss's graph


def _classifier_loop(head, loss_of, steps: int = 2 * CHECK, detach: bool = False):
    """A 4-class classifier ``Linear -> ReLU -> Linear -> head`` trained ``steps`` steps,
    the loss ``loss_of(output, labels)`` given to the monitor as a tensor (its graph kept,
    or with ``detach`` none); returns the check steps' ``model/*`` series and the probe's
    latest details."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4), *([head] if head is not None else []))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(32, 6, generator=g)
    y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
    mon = Monitor(model, opt, check_every=CHECK, policy="silent")
    for step in range(steps):
        loss = loss_of(model(x), y)
        loss.backward()
        mon.log(step, loss.detach() if detach else loss)
        opt.step()
        opt.zero_grad()
    mon.close()
    run = mon.guardian.runlog()
    series = {k: list(map(float, s.values)) for k, s in run.series.items() if k.startswith("model/")}
    return series, mon.probe.details


F = torch.nn.functional


@pytest.mark.parametrize(
    "head,loss_of,what",
    [
        (nn.Softmax(dim=1), lambda out, y: F.cross_entropy(out, y), "softmax applied before CrossEntropyLoss"),
        # a sequence model's shape: (batch, tokens, classes) flattened before the loss
        (
            nn.Softmax(dim=1),
            lambda out, y: nn.CrossEntropyLoss()(out.unsqueeze(1).view(-1, 4), y.view(-1)),
            "softmax applied before CrossEntropyLoss",
        ),
        # the cross-entropy is one term of a weighted sum
        (
            nn.Softmax(dim=1),
            lambda out, y: 0.7 * F.cross_entropy(out, y) + 0.01 * out.pow(2).mean(),
            "softmax applied before CrossEntropyLoss",
        ),
        (
            nn.Sigmoid(),
            lambda out, y: F.binary_cross_entropy_with_logits(out, F.one_hot(y, 4).float()),
            "sigmoid applied before BCEWithLogitsLoss",
        ),
    ],
)
def test_a_loss_given_probabilities_is_seen_in_its_graph(head, loss_of, what):
    s, details = _classifier_loop(head, loss_of)
    assert s["model/probs_as_logits"] == [1.0, 1.0]
    assert what in details["probs_as_logits_layer"]


@pytest.mark.parametrize(
    "head,loss_of",
    [
        (None, lambda out, y: F.cross_entropy(out, y)),  # logits into cross-entropy: correct
        (nn.Softmax(dim=1), lambda out, y: F.nll_loss(torch.log(out), y)),  # log of probabilities into NLL
        (nn.LogSoftmax(dim=1), lambda out, y: F.nll_loss(out, y)),
        (nn.Sigmoid(), lambda out, y: F.binary_cross_entropy(out, F.one_hot(y, 4).float())),  # BCE wants probs
        # a softmax elsewhere in the graph (a distillation target), cross-entropy on logits
        (
            None,
            lambda out, y: F.cross_entropy(out, y) + F.kl_div(F.log_softmax(out, 1), F.softmax(out.detach() * 2, 1)),
        ),
    ],
)
def test_a_loss_given_what_it_expects_is_not_flagged(head, loss_of):
    s, details = _classifier_loop(head, loss_of)
    assert s["model/probs_as_logits"] == [0.0, 0.0]
    assert "probs_as_logits_layer" not in details


def test_a_loss_without_its_graph_records_nothing():
    # A detached loss (or a float) carries no graph: the key is absent and the rule is
    # skipped as absent, not told "no".
    s, _ = _classifier_loop(nn.Softmax(dim=1), lambda out, y: F.cross_entropy(out, y), detach=True)
    assert "model/probs_as_logits" not in s


def test_no_probe_key_is_ever_read_as_the_loss():
    # The loss fallback takes a key that names a loss when no alias does: a probe key
    # that named one would become "the loss" of a run whose loss was not recorded.
    from trainproof.aliases.loss_fallback import loss_candidate

    assert [k for k in (*KEYS, *LAYER_KEYS) if loss_candidate(k) is not None] == []


def test_a_per_sample_loss_is_recorded_as_its_mean_with_one_warning(capsys):
    # reduction="none" hands log() a vector: its mean is recorded (once warned), not
    # dropped (a run without its loss, judged on what else it logged).
    torch.manual_seed(0)
    model = nn.Linear(6, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    mon = Monitor(model, opt, check_every=CHECK, policy="silent")
    x, y = torch.randn(16, 6), torch.randint(0, 3, (16,))
    means = []
    for step in range(2 * CHECK):
        per = F.cross_entropy(model(x), y, reduction="none")
        per.mean().backward()
        mon.log(step, per)
        means.append(float(per.mean()))
        opt.step()
        opt.zero_grad()
    mon.close()
    run = mon.guardian.runlog()
    assert run.series["loss"].key == "loss"
    assert list(run.series["loss"].values) == pytest.approx(means, rel=1e-6)
    err = capsys.readouterr().err
    assert err.count("the loss given to log() has 16 elements; their mean is recorded") == 1


def test_a_sigmoid_target_of_a_loss_whose_input_has_no_graph_is_not_flagged():
    # A label-update phase (PENCIL-style): the network is frozen, so the logits carry no
    # graph, and the soft labels are sigmoid(learnable label logits) as BCE's target. The
    # loss node's input edge is empty; its target edge holds the sigmoid.
    torch.manual_seed(0)
    model = nn.Linear(6, 4).requires_grad_(False)
    labels = nn.Parameter(torch.zeros(16, 4))
    opt = torch.optim.SGD([labels], lr=0.1)
    mon = Monitor(model, opt, check_every=CHECK, policy="silent")
    x = torch.randn(16, 6)
    for step in range(2 * CHECK):
        loss = F.binary_cross_entropy_with_logits(model(x), torch.sigmoid(labels))
        loss.backward()
        mon.log(step, loss)
        opt.step()
        opt.zero_grad()
    mon.close()
    s = mon.guardian.runlog().series
    assert list(s["model/probs_as_logits"].values) == [0.0, 0.0]


# --------------------------------------------------------------------------- clipping and the scaler


def _amp_loop(order: str, steps: int = 3 * CHECK):
    """A classifier trained with a bf16 autocast and a CPU GradScaler (scale 2^16), the
    gradients clipped to 1.0 in the given ``order``: ``"right"`` (unscale_, clip, log,
    step), ``"no-unscale"`` (clip the scaled gradients, log, step: the bug). Returns the
    monitor's report and the norms of the gradients the optimizer applied at each step."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
    mon = Monitor(model, opt, check_every=CHECK, policy="silent", scaler=scaler)
    g = torch.Generator().manual_seed(1)
    applied = []
    for step in range(steps):
        x = torch.randn(32, 6, generator=g)
        y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        if order == "right":
            scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        mon.log(step, loss)
        norm = float(torch.stack([p.grad.norm() for p in model.parameters()]).norm())
        # in the bug's order scaler.step unscales what the clip left
        applied.append(norm if order == "right" else norm / scaler.get_scale())
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
    mon.close()
    return mon.report(print_it=False), mon.guardian.runlog(), applied


def test_the_applied_gradient_norm_is_the_norm_the_measured_step_applied():
    _, run, applied = _amp_loop("right")
    s = run.series["model/applied_grad_norm"]
    # measured over the optimizer step after the call before each check
    expected = [applied[int(st) - 1] for st in s.steps]
    assert list(s.values) == pytest.approx(expected, rel=1e-5)


def test_clipping_the_scaled_gradients_is_flagged_and_the_right_order_is_not():
    rep, _, applied = _amp_loop("no-unscale")
    f = one(rep, "TP-CLIP-BEFORE-UNSCALE")
    assert f.data["clip_bar"] == 1.0 and f.data["loss_scale"] == 2.0**16
    assert max(applied) < 2e-5  # what the bug did: every gradient 1 / 65,536
    rep, _, _ = _amp_loop("right")
    assert "TP-CLIP-BEFORE-UNSCALE" not in {x.id for x in rep.findings}


# --------------------------------------------------------------------------- the input batch


def _batch_loop(kind: str, steps: int = 3 * CHECK):
    """A classifier trained with activations=True on batches drawn as ``kind`` says:
    ``"same"`` (one batch drawn before the loop), ``"shuffled"`` (a new random batch each
    step), ``"first-of-fresh-iterator"`` (``next(iter(loader))`` in the loop, no shuffle),
    ``"eval-first"`` (shuffled, with an evaluation pass on a fixed set before the training
    forward of every step). Returns the check steps' ``model/same_batch`` values."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    mon = Monitor(model, opt, check_every=CHECK, policy="silent", activations=True)
    g = torch.Generator().manual_seed(1)
    data = torch.utils.data.TensorDataset(torch.randn(256, 6, generator=g), torch.randint(0, 4, (256,), generator=g))
    loader = torch.utils.data.DataLoader(data, batch_size=32, shuffle=False)
    fixed = data[:32]
    held_out = torch.randn(64, 6, generator=g)
    for step in range(steps):
        if kind == "same":
            x, y = fixed
        elif kind == "first-of-fresh-iterator":
            x, y = next(iter(loader))
        else:
            idx = torch.randint(0, 256, (32,), generator=g)
            x, y = data[idx]
        if kind == "eval-first":
            model.eval()
            with torch.no_grad():
                model(held_out)
            model.train()
        F.cross_entropy(model(x), y).backward()
        mon.log(step, 1.0)
        opt.step()
        opt.zero_grad()
    mon.close()
    s = mon.guardian.runlog().series
    return list(s["model/same_batch"].values) if "model/same_batch" in s else None


@pytest.mark.parametrize("kind", ["same", "first-of-fresh-iterator"])
def test_the_same_input_batch_at_every_check_is_seen(kind):
    assert _batch_loop(kind) == [1.0, 1.0]  # compared from the second check on


@pytest.mark.parametrize("kind", ["shuffled", "eval-first"])
def test_fresh_batches_are_not_the_same_batch(kind):
    # An evaluation pass on a fixed held-out set (no gradients, eval mode) is not the
    # batch trained on.
    assert _batch_loop(kind) == [0.0, 0.0]


def test_margin_loss_reads_a_hinge_in_the_loss_graph():
    from trainproof.live.probes import margin_loss

    x = torch.randn(8, 4, requires_grad=True)
    s = torch.sign(torch.randn(8))
    y = torch.randint(0, 4, (8,))
    F = nn.functional
    hinges = [
        torch.clamp(1 - s * x[:, 0], min=0).mean(),
        F.relu(1 - s * x[:, 0]).sum() / 8,
        F.triplet_margin_loss(x[:4], x[4:], x[:4].flip(0)),
        F.margin_ranking_loss(x[:, 0], x[:, 1], s),
        F.multi_margin_loss(x, y),
        0.5 * torch.clamp(1 - s * x[:, 0], min=0).mean(),
    ]
    others = [
        F.cross_entropy(x, y),
        F.mse_loss(x, torch.zeros(8, 4)),
        F.soft_margin_loss(x[:, 0], s),  # a softplus: never exactly 0
        torch.clamp(1 - s * x[:, 0], min=0).mean() + 0.01 * x.pow(2).sum(),  # plus a penalty
        torch.clamp(1 - s * x[:, 0], min=0).mean().detach(),
        1.5,
    ]
    assert [margin_loss(v) for v in hinges] == [True] * len(hinges)
    assert [margin_loss(v) for v in others] == [False] * len(others)


@pytest.mark.parametrize("bug", ["clear-before-step", "clip-1e-8"])
def test_a_loop_whose_steps_move_nothing_is_stopped_with_the_measured_cause(bug, monkeypatch):
    # The lr (0.05) and the gradient norm logged look alive; what the monitor measures
    # across the step says no weight moves: a dead run with a cause, stopped once the run
    # is far enough into its schedule for a no-progress claim (30% of max_steps).
    from trainproof.live import RunFailed
    from trainproof.live.guardian import Guardian

    # judge at every check whatever a judgement costs in wall time: on a loaded machine
    # the wall-time budget spaces the judgements out, and the stop came at step 169-199
    monkeypatch.setattr(Guardian, "affordable", lambda self, now=None: True)

    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    mon = Monitor(model, opt, check_every=10, policy="raise", max_steps=300, track_update_ratio=True)
    stopped = None
    try:
        for step in range(300):
            # a new large batch each step: the loss wanders a little around its start
            x = torch.randn(512, 6, generator=torch.Generator().manual_seed(step))
            y = torch.tanh(x.sum(1, keepdim=True))
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            if bug == "clip-1e-8":
                gn = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1e-8)
                mon.log(step, loss.detach(), grad_norm=gn)
            else:
                mon.log(step, loss.detach())
                opt.zero_grad()  # the bug: between backward() and step()
            opt.step()
            opt.zero_grad()
    except RunFailed as e:
        stopped = (step, str(e))
    assert stopped is not None, "never stopped"
    assert 89 <= stopped[0] <= 150 and "TP-DEAD-RUN" in stopped[1] and "updates of about zero" in stopped[1]


def test_warmup_left_reads_the_schedules_closed_form_without_stepping_it():
    from trainproof.live.probes import warmup_left

    def opt():
        return torch.optim.SGD(mlp().parameters(), lr=0.1)

    sched = torch.optim.lr_scheduler.LambdaLR(opt(), lambda s: min(1.0, (s + 1) / 100))
    assert warmup_left(sched) == 99 and sched.last_epoch == 0  # read, not stepped
    assert warmup_left(torch.optim.lr_scheduler.LinearLR(opt(), 0.1, 1.0, total_iters=5)) == 5
    assert warmup_left(torch.optim.lr_scheduler.LinearLR(opt(), 1.0, 0.1, total_iters=5)) == 0  # a decay
    assert warmup_left(torch.optim.lr_scheduler.LambdaLR(opt(), lambda s: 0.9**s)) == 0
    assert warmup_left(torch.optim.lr_scheduler.CosineAnnealingLR(opt(), 10)) is None  # no closed form read

    def broken(s):
        if s > 3:
            raise IndexError(s)
        return s + 1.0

    assert warmup_left(torch.optim.lr_scheduler.LambdaLR(opt(), broken)) is None


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Detected call of")  # the moving scheduler is stepped before the optimizer
def test_the_warm_up_left_is_recorded_only_for_a_scheduler_that_stood_still():
    model = mlp()
    o = torch.optim.SGD(model.parameters(), lr=0.05)
    sched = torch.optim.lr_scheduler.LambdaLR(o, lambda s: min(1.0, (s + 1) / 100))
    _, held = loop(model, o, steps=3 * CHECK, scheduler=sched)  # never stepped
    assert held["model/scheduler_steps"] == [0.0, 0.0, 0.0]
    assert held["model/scheduler_warmup_left"] == [99.0, 99.0]  # from the second check on
    model = mlp()
    o = torch.optim.SGD(model.parameters(), lr=0.05)
    sched = torch.optim.lr_scheduler.LambdaLR(o, lambda s: min(1.0, (s + 1) / 100))
    _, moving = loop(model, o, steps=3 * CHECK, scheduler=sched, before_log=lambda step: sched.step())
    assert "model/scheduler_warmup_left" not in moving


def test_the_rows_of_a_sequence_and_of_an_image_count_every_position():
    from trainproof.live.probes import ModelProbe

    seq = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4), nn.Sigmoid(), nn.Linear(4, 1))
    opt = torch.optim.SGD(seq.parameters(), lr=0.0)
    probe = ModelProbe(seq, opt, activations=True)
    probe.arm()
    seq(torch.randn(3, 5, 6)).sum().backward()  # batch 3, 5 positions: 15 rows per unit
    out = probe.read(probe.collect())
    assert out["model/dead_relu_rows"] == 15.0 and out["model/saturated_rows"] == 15.0
    conv = nn.Sequential(nn.Conv2d(2, 4, 3), nn.ReLU(), nn.Conv2d(4, 1, 1), nn.Flatten())
    probe = ModelProbe(conv, torch.optim.SGD(conv.parameters(), lr=0.0), activations=True)
    probe.arm()
    conv(torch.randn(2, 2, 5, 5)).sum().backward()  # batch 2, a 3x3 map: 18 rows per channel
    assert probe.read(probe.collect())["model/dead_relu_rows"] == 18.0
    probe.close()
