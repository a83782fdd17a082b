"""The in-loop monitor (``trainproof.watch(model, optimizer)``) on real CPU training.

A tiny MLP on a fixed regression problem, a few hundred steps at most; torch runs on one
thread (on a small machine several threads make a step of this size 30x slower).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import numpy as np  # noqa: E402

import trainproof  # noqa: E402
from trainproof import Level, Report, RunFailed  # noqa: E402
from trainproof.live.monitor import Monitor  # noqa: E402

from conftest import run_cli  # noqa: E402


@pytest.fixture(autouse=True)
def _one_thread(torch_one_thread):
    """Every test here on one torch thread (see conftest.torch_one_thread)."""


def make_problem(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(512, 8, generator=g)
    w = torch.randn(8, 1, generator=g)
    Y = torch.tanh(X @ w) + 0.05 * torch.randn(512, 1, generator=g)
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    return X, Y, model


def train(
    opt: str = "adam",
    lr: float = 1e-3,
    steps: int = 300,
    seed: int = 0,
    before_step=None,
    loss_override=None,
    **watch_kw,
):
    """Train the tiny MLP with the monitor; returns (monitor, last step reached, optimizer).

    ``before_step(step, model)`` runs after ``mon.log`` and before ``optimizer.step()``;
    ``loss_override(step, loss)`` replaces the logged loss value.
    """
    X, Y, model = make_problem(seed)
    if opt == "adam":
        optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    mon = trainproof.watch(model, optimizer, **watch_kw)
    g = torch.Generator().manual_seed(seed + 1)
    step = -1
    for step in range(steps):
        idx = torch.randint(0, X.shape[0], (32,), generator=g)
        loss = torch.nn.functional.mse_loss(model(X[idx]), Y[idx])
        optimizer.zero_grad()
        loss.backward()
        value = loss.item() if loss_override is None else loss_override(step, loss.item())
        mon.log(step, value)
        if before_step is not None:
            before_step(step, model)
        optimizer.step()
    return mon, step, optimizer


# --------------------------------------------------------------------------- lr far too high


@pytest.mark.slow
def test_lr_far_too_high_raises_run_failed_during_the_run():
    steps = 300
    reached = []
    with pytest.raises(RunFailed) as ei:
        train("sgd", lr=5.0, steps=steps, policy="raise", check_every=25, before_step=lambda s, m: reached.append(s))
    e = ei.value
    assert isinstance(e, RuntimeError)
    assert isinstance(e.report, Report)
    assert e.report.verdict is Level.FAIL
    fails = [f.id for f in e.report.findings if f.level is Level.FAIL]
    assert fails and set(fails) & {"TP-NAN", "TP-DIVERGE", "TP-NAN-GRAD"}
    # Raised at a check, well before the loop's end: the run can stop and save.
    last = reached[-1] if reached else -1
    assert last < steps - 1
    assert e.report.records == last + 2  # the failing check ran inside log() of step last+1
    assert (last + 2) % 25 == 0
    # The summary, then where to resume: the last good step and the rule's first remedy.
    assert e.report.summary and str(e).startswith(e.report.summary)
    assert "Last good step:" in str(e) and "First remedy" in str(e)
    assert e.report.step_range[1] < steps - 1


@pytest.mark.slow
def test_lr_far_too_high_with_warn_is_seen_during_the_run(capsys):
    alerts = []
    progress = {"step": -1}

    def on_alert(f):
        alerts.append((progress["step"], f))

    def before_step(s, m):
        progress["step"] = s

    mon, last, _ = train(
        "sgd", lr=5.0, steps=200, policy="warn", check_every=20, on_alert=on_alert, before_step=before_step
    )
    assert last == 199  # warn never stops the loop
    fail_alerts = [(s, f) for s, f in alerts if f.level is Level.FAIL]
    assert fail_alerts
    assert min(s for s, _ in fail_alerts) < 100  # detected long before the end
    err = capsys.readouterr().err
    assert err.count("trainproof: FAIL at step") >= 1
    ids_announced = [f.id for _, f in alerts]
    assert len(ids_announced) == len(set(ids_announced))  # once per id
    # Each FAIL id is printed once, however many checks see it again.
    for _, f in fail_alerts:
        assert err.count(f"{f.id}:") == 1, err
    rep = mon.report(print_it=False)
    assert rep.verdict is Level.FAIL


@pytest.mark.slow
def test_silent_policy_prints_nothing_and_does_not_raise(capsys):
    mon, last, _ = train("sgd", lr=5.0, steps=150, policy="silent", check_every=10)
    assert last == 149
    assert capsys.readouterr().err == ""
    assert mon.report(print_it=False).verdict is Level.FAIL
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_report_prints_the_verdict(capsys):
    mon, _, _ = train("sgd", lr=5.0, steps=100, policy="silent", check_every=1000)
    mon.report()
    err = capsys.readouterr().err
    assert "FAIL" in err


# --------------------------------------------------------------------------- lr = 0


def test_zero_lr_gives_tp_zero_lr():
    mon, _, _ = train("sgd", lr=0.0, steps=120, policy="silent")
    rep = mon.report(print_it=False)
    assert "TP-ZERO-LR" in rep.ids()
    f = next(f for f in rep.findings if f.id == "TP-ZERO-LR")
    assert f.level is Level.FAIL
    assert rep.verdict is Level.FAIL
    lr = mon.guardian.runlog().series["lr"]
    assert len(lr) == 120 and np.all(lr.values == 0.0)


def test_zero_lr_raise_policy_stops_at_the_first_check():
    with pytest.raises(RunFailed) as ei:
        train("sgd", lr=0.0, steps=200, policy="raise", check_every=50)
    assert "TP-ZERO-LR" in ei.value.report.ids()
    assert ei.value.report.records == 50


@pytest.mark.parametrize("head_lr", [1e-3, 0.0])
def test_a_backbone_group_at_lr_0_stops_nothing_while_the_head_group_trains(head_lr):
    # Group 0 (the backbone, frozen on purpose) is recorded as lr and group 1 as
    # lr_group_1: the run trains. With both at 0 nothing does, and the first check stops it.
    X, Y, model = make_problem(5)
    opt = torch.optim.Adam(
        [{"params": model[0].parameters(), "lr": 0.0}, {"params": model[2].parameters(), "lr": head_lr}]
    )
    mon = trainproof.watch(model, opt, check_every=10, policy="raise", max_steps=300)
    g = torch.Generator().manual_seed(6)
    stopped = None
    for step in range(300):
        idx = torch.randint(0, 512, (32,), generator=g)
        loss = torch.nn.functional.mse_loss(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        try:
            mon.log(step, loss)
        except RunFailed as e:
            stopped = (step, e.report.ids())
            break
        opt.step()
    if head_lr > 0:
        assert stopped is None
        assert "lr_group_1" in mon.guardian.runlog().series
    else:
        assert stopped is not None and stopped[0] == 9 and "TP-ZERO-LR" in stopped[1]


# --------------------------------------------------------------------------- healthy


@pytest.mark.slow
def test_healthy_run_no_fail_and_no_fail_alert():
    alerts = []
    mon, last, _ = train("adam", lr=1e-3, steps=300, policy="raise", check_every=25, on_alert=alerts.append)
    assert last == 299  # never raised
    rep = mon.report(print_it=False)
    assert rep.verdict in (Level.PASS, Level.WARN)
    assert not [f for f in rep.findings if f.level is Level.FAIL]
    assert all(f.level is not Level.FAIL for f in alerts)
    loss = mon.guardian.runlog().series["loss"].values
    assert np.median(loss[-30:]) < 0.5 * np.median(loss[:30])  # it did learn


def test_recorded_series():
    X, Y, model = make_problem()
    p1 = [p for p in model.parameters()][:2]
    p2 = [p for p in model.parameters()][2:]
    opt = torch.optim.SGD([{"params": p1, "lr": 0.01}, {"params": p2, "lr": 0.02}])
    mon = Monitor(model, opt, check_every=1000, policy="silent")
    for step in range(20):
        loss = torch.nn.functional.mse_loss(model(X[:32]), Y[:32])
        opt.zero_grad()
        loss.backward()
        if step == 7:
            manual = math.sqrt(sum(float((p.grad**2).sum()) for p in model.parameters()))
        mon.log(step * 5, loss.item(), eval_loss=0.5 if step % 5 == 4 else None, acc=0.9, flag=True)
        opt.step()
    run = mon.guardian.runlog()
    by_key = {s.key: s for s in run.series.values()}
    assert {"loss", "grad_norm", "lr", "lr_group_1", "step_time", "eval_loss", "acc"} == set(by_key)
    assert run.series["loss"].key == "loss" and run.series["lr"].key == "lr"
    assert list(by_key["loss"].steps) == [float(5 * i) for i in range(20)]
    assert list(by_key["eval_loss"].steps) == [20.0, 45.0, 70.0, 95.0]
    assert by_key["grad_norm"].values[7] == pytest.approx(manual, rel=1e-5)
    assert np.all(by_key["lr_group_1"].values == 0.02) and np.all(by_key["lr"].values == 0.01)
    assert np.all(by_key["acc"].values == 0.9)
    st = by_key["step_time"]
    assert len(st) == 19 and np.all(st.values > 0)  # from the second call on


def test_grad_norm_without_gradients_is_nan():
    X, Y, model = make_problem()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    mon = Monitor(model, opt, policy="silent")
    assert math.isnan(mon.grad_norm())


def test_a_loss_with_no_gradient_at_all_records_no_gradient_norm():
    # A loss computed from detached outputs: no tensor gets a gradient. That is no
    # non-finite gradient (TP-NAN-GRAD and its fp16 remedy would mislead): nothing is
    # recorded as the gradient norm. (The frozen loss is what the run shows.)
    X, Y, model = make_problem()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    mon = Monitor(model, opt, check_every=5, policy="silent")
    for step in range(20):
        out = model(X).detach().requires_grad_()
        loss = ((out - Y) ** 2).mean()
        loss.backward()
        mon.log(step, loss)
        opt.step()
        opt.zero_grad()
    mon.close()
    run = mon.guardian.runlog()
    assert "grad_norm" not in run.series and len(run.series["loss"]) == 20
    ids = mon.report().ids()
    assert "TP-NAN-GRAD" not in ids and "TP-LOSS-FROZEN" in ids


# --------------------------------------------------------------------------- update ratio


def test_update_ratio_matches_a_manual_computation():
    snapshots = {}

    def before_step(step, model):
        snapshots[step] = [p.detach().clone() for p in model.parameters()]

    mon, _, _ = train(
        "sgd", lr=0.05, steps=40, policy="silent", track_update_ratio=True, before_step=before_step, check_every=1000
    )
    ur = mon.guardian.runlog().series["update_ratio"]
    # The first call has nothing to compare with; then one value per call.
    assert list(ur.steps) == [float(s) for s in range(1, 40)]
    for k in (1, 2, 17, 39):
        before, after = snapshots[k - 1], snapshots[k]  # the weights at log(k-1) and at log(k)
        num = math.sqrt(sum(float(((a.double() - b.double()) ** 2).sum()) for a, b in zip(after, before)))
        den = math.sqrt(sum(float((a.double() ** 2).sum()) for a in after))
        i = list(ur.steps).index(float(k))
        assert ur.values[i] == pytest.approx(num / den, rel=1e-5)
    # The same value by another route: SGD moves every weight by lr * grad.
    assert np.all(ur.values > 0)


def test_update_ratio_is_not_recorded_unless_asked():
    mon, _, _ = train("sgd", lr=0.05, steps=20, policy="silent")
    assert "update_ratio" not in mon.guardian.runlog().series


@pytest.mark.slow
def test_update_ratio_low_with_a_far_too_small_lr():
    mon, _, _ = train("sgd", lr=1e-6, steps=200, policy="silent", track_update_ratio=True)
    rep = mon.report(print_it=False)
    assert "TP-UPDATE-RATIO-LOW" in rep.ids()
    f = next(f for f in rep.findings if f.id == "TP-UPDATE-RATIO-LOW")
    assert f.level is Level.WARN and f.data["median_log10"] < -4


@pytest.mark.slow
def test_update_ratio_sane_lr_is_not_low():
    mon, _, _ = train("adam", lr=1e-3, steps=200, policy="silent", track_update_ratio=True)
    rep = mon.report(print_it=False)
    assert "TP-UPDATE-RATIO-LOW" not in rep.ids()
    assert "TP-UPDATE-RATIO-HIGH" not in rep.ids()
    assert "TP-UPDATE-RATIO-LOW" in rep.ran
    med = float(np.median(np.log10(mon.guardian.runlog().series["update_ratio"].values[20:])))
    assert -4 < med < -2


# --------------------------------------------------------------------------- carried evaluations


def test_a_loop_passing_its_latest_evaluation_at_every_call_is_not_stopped(tmp_path):
    # Progress bars and loggers keep the latest validation metric and pass it with every
    # train step: one evaluation repeated is not an eval loss frozen by a stopped model.
    X, Y, model = make_problem(3)
    Xe, Ye = X[400:], Y[400:]
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    log = tmp_path / "run.jsonl"
    mon = trainproof.watch(model, optimizer, check_every=10, policy="raise", max_steps=300, log_path=log)
    g = torch.Generator().manual_seed(4)
    latest, evaluated = None, []
    for step in range(300):
        idx = torch.randint(0, 400, (32,), generator=g)
        loss = torch.nn.functional.mse_loss(model(X[idx]), Y[idx])
        optimizer.zero_grad()
        loss.backward()
        if step % 100 == 50:
            with torch.no_grad():
                latest = torch.nn.functional.mse_loss(model(Xe), Ye).item()
            evaluated.append(step)
        mon.log(step, loss, **({} if latest is None else {"eval_loss": latest, "val_acc": 0.5}))
        optimizer.step()
    mon.close()
    rep = mon.report(print_it=False)
    assert rep.verdict is not Level.FAIL, rep.ids()
    rows = [json.loads(x) for x in log.read_text().splitlines()]
    assert len(rows) == 300
    # each evaluation recorded once, at the call that first passed it
    assert [r["step"] for r in rows if "eval_loss" in r] == evaluated
    assert [r["step"] for r in rows if "val_acc" in r] == evaluated[:1]


def test_an_evaluation_repeated_over_weights_that_never_change_is_still_frozen():
    # The optimizer steps a copy of the model: the model's weights never change, so its
    # evaluation, recomputed at every call, repeats to the bit. That is the frozen-model
    # evidence, not a carried value: the monitor keeps it and stops at the first check.
    import copy

    X, Y, model = make_problem(7)
    optimizer = torch.optim.Adam(copy.deepcopy(model).parameters(), lr=1e-3)
    mon = trainproof.watch(model, optimizer, check_every=10, policy="raise", max_steps=300)
    g = torch.Generator().manual_seed(8)
    with pytest.raises(RunFailed) as ei:
        for step in range(300):
            idx = torch.randint(0, 400, (32,), generator=g)
            loss = torch.nn.functional.mse_loss(model(X[idx]), Y[idx])
            optimizer.zero_grad()
            loss.backward()
            with torch.no_grad():
                ev = torch.nn.functional.mse_loss(model(X[400:]), Y[400:]).item()
            mon.log(step, loss, eval_loss=ev)
            optimizer.step()
    assert "TP-LOSS-FROZEN" in ei.value.report.ids() and ei.value.report.records == 10


# --------------------------------------------------------------------------- log_path
# --------------------------------------------------------------------------- log_path


@pytest.mark.slow
@pytest.mark.parametrize("case", ["healthy", "diverged", "zero_lr"])
def test_log_path_jsonl_reads_back_with_the_same_verdict(tmp_path, case):
    log = tmp_path / "sub" / "run.jsonl"
    log.parent.mkdir()
    kw = {
        "healthy": dict(opt="adam", lr=1e-3),
        "diverged": dict(opt="sgd", lr=5.0),
        "zero_lr": dict(opt="sgd", lr=0.0),
    }[case]
    mon, _, _ = train(steps=200, policy="silent", log_path=log, track_update_ratio=True, **kw)
    rep = mon.report(print_it=False)
    mon.close()
    lines = log.read_text().splitlines()
    assert len(lines) == 200
    first = json.loads(lines[0])
    assert first["step"] == 0 and {"loss", "grad_norm", "lr"} <= set(first)
    code, out, err, doc = run_cli("epoch", str(log), "--json")
    ep = doc["reports"][0] if "reports" in doc else doc
    assert ep["format"] == "jsonl"
    assert ep["verdict"] == rep.verdict.value
    assert ep["records"] == rep.records == 200
    assert sorted(f["id"] for f in ep["findings"] if f["level"] in ("FAIL", "WARN")) == sorted(
        f.id for f in rep.findings if f.level in (Level.FAIL, Level.WARN)
    )
    assert code == (1 if rep.verdict is Level.FAIL else 0)


def test_log_path_appends_and_close(tmp_path):
    log = tmp_path / "run.jsonl"
    mon, _, _ = train(steps=12, policy="silent", log_path=log, check_every=5)
    # The lines of the steps up to the last check are written and flushed, before close.
    assert len(log.read_text().splitlines()) == 10
    mon.close()  # writes the 2 pending steps
    assert [json.loads(x)["step"] for x in log.read_text().splitlines()] == list(range(12))
    mon.close()  # idempotent
    assert len(log.read_text().splitlines()) == 12


# --------------------------------------------------------------------------- non-finite


@pytest.mark.slow
def test_non_finite_losses_are_recorded_never_raised_with_warn(tmp_path, capsys):
    log = tmp_path / "run.jsonl"
    bad = {30: float("nan"), 31: float("inf"), 90: float("-inf")}
    bad.update({s: float("nan") for s in range(150, 200)})

    mon, last, _ = train(
        "adam",
        lr=1e-3,
        steps=200,
        policy="warn",
        check_every=20,
        log_path=log,
        loss_override=lambda s, v: bad.get(s, v),
    )
    assert last == 199
    loss = mon.guardian.runlog().series["loss"]
    assert loss.values.size == 200
    assert math.isnan(loss.values[30]) and loss.values[31] == math.inf and loss.values[90] == -math.inf
    assert np.isnan(loss.values[150:]).all()
    rep = mon.report(print_it=False)
    assert "TP-NAN" in rep.ids() and rep.verdict is Level.FAIL
    assert "TP-NAN" in capsys.readouterr().err  # warned, once
    mon.close()
    # The JSONL log keeps them (as NaN/Infinity tokens) and epoch reads them back.
    text = log.read_text()
    assert "NaN" in text and "Infinity" in text
    code, _, _, doc = run_cli("epoch", str(log), "--json")
    assert code == 1
    ep = doc["reports"][0] if "reports" in doc else doc
    assert "TP-NAN" in [f["id"] for f in ep["findings"]]


@pytest.mark.slow
def test_non_finite_losses_silent():
    mon, last, _ = train(
        "adam",
        lr=1e-3,
        steps=60,
        policy="silent",
        check_every=5,
        loss_override=lambda s, v: float("nan") if s > 10 else v,
    )
    assert last == 59


# --------------------------------------------------------------------------- API details


def test_bad_policy_is_a_value_error():
    X, Y, model = make_problem()
    with pytest.raises(ValueError, match="policy"):
        trainproof.watch(model, torch.optim.SGD(model.parameters(), lr=0.1), policy="stop")


def test_check_every_cadence(judging_always_affordable):
    X, Y, model = make_problem()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    mon = trainproof.watch(model, opt, check_every=7, policy="silent")
    judged = []
    orig = mon.guardian.judge

    def spy():
        judged.append(mon.guardian.records)
        return orig()

    mon.guardian.judge = spy
    for step in range(30):
        loss = torch.nn.functional.mse_loss(model(X[:16]), Y[:16])
        opt.zero_grad()
        loss.backward()
        mon.log(step, loss.item())
        opt.step()
    assert judged == [7, 14, 21, 28]


@pytest.mark.slow
def test_max_steps_reaches_the_schedule_rules():
    mon, _, _ = train("adam", lr=1e-3, steps=100, policy="silent", max_steps=10_000)
    rep = mon.report(print_it=False)
    assert rep.meta.get("max_steps") == 10_000
    assert "TP-RUN-INCOMPLETE" in rep.ids()


@pytest.mark.slow
def test_import_trainproof_does_not_import_torch():
    code = "import sys, trainproof; trainproof.watch; trainproof.RunFailed; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_bug_numpy_float32_metric_is_dropped():
    X, Y, model = make_problem()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    mon = trainproof.watch(model, opt, policy="silent")
    loss = torch.nn.functional.mse_loss(model(X[:16]), Y[:16])
    loss.backward()
    mon.log(0, loss.item(), acc=np.float32(0.5))
    assert "acc" in mon.guardian.runlog().series


# --------------------------------------------------------------------------- steps of any type (issue 32)


def _loop(steps, tmp_path, policy="warn"):
    """The tiny MLP trained for ``len(steps)`` steps, ``mon.log(steps[i], loss)`` at step
    ``i``, with ``log_path`` set; returns the monitor (closed) and the log's steps."""
    X, Y, model = make_problem()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    log = tmp_path / "run.jsonl"
    mon = trainproof.watch(model, opt, policy=policy, log_path=log, check_every=5)
    for s in steps:
        loss = torch.nn.functional.mse_loss(model(X[:32]), Y[:32])
        opt.zero_grad()
        loss.backward()
        mon.log(s, loss)
        opt.step()
    mon.close()
    return mon, [json.loads(x)["step"] for x in log.read_text().splitlines()]


@pytest.mark.parametrize(
    "kind",
    ["np.int64", "np.int32", "np.float64", "torch-int64", "torch-float32", "torch-1-element"],
)
def test_numpy_and_torch_steps_are_steps(tmp_path, kind):
    make = {
        "np.int64": np.int64,
        "np.int32": np.int32,
        "np.float64": np.float64,
        "torch-int64": lambda i: torch.tensor(i, dtype=torch.int64),
        "torch-float32": lambda i: torch.tensor(float(i)),
        "torch-1-element": lambda i: torch.tensor([i]),
    }[kind]
    mon, logged = _loop([make(i) for i in range(12)], tmp_path)
    assert logged == list(range(12)) and all(type(s) is int for s in logged)
    assert mon.guardian.runlog().get("loss").steps.tolist() == [float(i) for i in range(12)]


@pytest.mark.parametrize("bad", [None, "ten", 10**400, float("nan"), float("inf"), True, torch.tensor([1, 2])])
@pytest.mark.parametrize("policy", ["warn", "raise"])
def test_a_step_it_cannot_use_never_stops_the_loop(tmp_path, capsys, bad, policy):
    steps = [0, 1, 2, bad, bad, 5, bad, 7, 8, 9, 10, 11]
    mon, logged = _loop(steps, tmp_path, policy)
    # The monitor's own count stands in: one more than the last step recorded.
    assert logged == list(range(12))
    assert mon.guardian.runlog().get("loss").steps.tolist() == [float(i) for i in range(12)]
    err = capsys.readouterr().err
    assert err.count("a step it cannot use") == 1, err


def test_bad_steps_from_the_first_call_count_calls(tmp_path, capsys):
    mon, logged = _loop([None] * 7, tmp_path, "silent")
    assert logged == list(range(7))
    assert capsys.readouterr().err == ""


def test_huge_metric_is_infinite_not_an_error(tmp_path):
    X, Y, model = make_problem()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    mon = trainproof.watch(model, opt, policy="silent")
    loss = torch.nn.functional.mse_loss(model(X[:16]), Y[:16])
    loss.backward()
    mon.log(0, loss, tokens=10**400)
    assert mon.guardian.runlog().get("tokens").values.tolist() == [math.inf]


# --------------------------------------------------------------------------- run history


@pytest.mark.slow
def test_a_monitor_with_a_history_records_its_run_once_at_close_and_none_without(tmp_path):
    from trainproof.history.recording import forget
    from trainproof.history.store import open_store

    where = str(tmp_path / "history.db")
    log = tmp_path / "seed3" / "train.jsonl"
    log.parent.mkdir()
    mon, _, _ = train(steps=120, check_every=40, log_path=log, history=where, layers=False)
    mon.close()  # no report() asked for: the close judges and records the ended run
    mon.close()
    forget(where)
    with open_store(where, create=False) as st:
        (rec,) = st.runs(tmp_path.as_posix())  # the folder of the log's run family
    assert (rec.run, rec.source) == ("seed3/train.jsonl", log.as_posix()) and rec.summary["points"] == 120
    mon, _, _ = train(steps=60, check_every=40, layers=False)
    mon.report(print_it=False)
    mon.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history.db", "seed3"]


@pytest.mark.slow
def test_a_monitor_whose_history_cannot_be_used_keeps_training_and_says_why(tmp_path, capsys):
    where = str(tmp_path / "missing" / "history.db")
    mon, step, _ = train(steps=60, check_every=40, history=where, layers=False)
    rep = mon.report(print_it=False)
    assert step == 59 and rep.judged and rep.history_error.endswith("does not exist")
    assert f"the run was not recorded: history {where}" in capsys.readouterr().err


# --------------------------------------------------------------------------- a loss solved to exactly 0


def _separable(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1024, 20, generator=g)
    w = torch.randn(20, generator=g)
    y = (x @ w > 0).long()
    x = x + 4.0 * (2 * y.float() - 1).unsqueeze(1) * w / w.norm()  # a wide margin
    return x, y


@pytest.mark.parametrize("loss_kind", ["hinge", "cross-entropy"])
def test_a_task_solved_to_exactly_zero_is_not_stopped(loss_kind):
    # A hinge loss is exactly 0 once every example meets its margin (the monitor reads the
    # clamp in the loss's graph); a float32 cross-entropy on well-separated classes
    # underflows to exactly 0. Both were stopped with TP-ZERO-LOSS-ONSET ("a hidden NaN").
    x, y = _separable()
    torch.manual_seed(0)
    out = 1 if loss_kind == "hinge" else 2
    model = torch.nn.Linear(20, out)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2 if loss_kind == "hinge" else 5e-2)
    mon = trainproof.watch(model, opt, check_every=10, policy="raise", max_steps=400)
    g = torch.Generator().manual_seed(1)
    zeros = 0
    for step in range(400):
        i = torch.randint(0, 1024, (32,), generator=g)
        if loss_kind == "hinge":
            loss = torch.clamp(1 - (2 * y[i].float() - 1) * model(x[i]).squeeze(1), min=0).mean()
        else:
            loss = torch.nn.functional.cross_entropy(model(x[i]) * 10, y[i])
        opt.zero_grad()
        loss.backward()
        mon.log(step, loss)  # raises RunFailed on a FAIL
        opt.step()
        zeros += loss.item() == 0.0
    rep = mon.report(print_it=False)
    mon.close()
    assert zeros > 100  # the mechanism: the loss sat at exactly 0
    assert rep.verdict is not Level.FAIL and "TP-ZERO-LOSS-FITTED" in rep.ids(), rep.ids()
    # gradients that are all zero because the loss is exactly 0 are not cut off from it
    assert "TP-PARAMS-NO-GRAD" not in rep.ids()
