"""Live stops (issue 34, section 3): a measured cause for every stop on a claim of no
progress, stop_on with patience, and where to resume.

The runs are small real torch loops (CPU, one thread, a second or two each) through the
documented snippet ``trainproof.watch(model, optimizer, check_every=10, policy="raise",
max_steps=...)``; the cause itself is also checked on generated histories through the
Guardian. Every check the snippet asks for is judged (``Guardian.affordable`` always true),
so a loaded machine does not move the step of a stop.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from trainproof import Level
from trainproof.live import stops
from trainproof.live.guardian import Guardian
from trainproof.rules.thresholds import DEFAULT

torch = pytest.importorskip("torch")

import trainproof  # noqa: E402
from trainproof import RunFailed  # noqa: E402


@pytest.fixture(autouse=True)
def deterministic_cadence(torch_one_thread, monkeypatch):
    """One torch thread, and a judgement at every ``check_every``-th call."""
    monkeypatch.setattr(Guardian, "affordable", lambda self, now=None: True)


# ------------------------------------------------------------------ the cause, on histories


def history(n=200, lr=1e-3, grad=None, extra=None, meta=None) -> Guardian:
    """A Guardian holding ``n`` steps of a flat loss near 3.0, repeating its value at 3
    decimals (a claim of no progress), a learning rate ``lr``, gradient norms
    ``grad(step)`` and ``extra(step)`` values."""
    g = Guardian(meta={"max_steps": n, **(meta or {})})
    rng = np.random.default_rng(0)
    for s in range(n):
        row = {
            "loss": round(3.0 + 1e-4 * rng.standard_normal(), 3),
            "lr": lr,
            "grad_norm": 1.0 if grad is None else grad(s),
        }
        row.update(extra(s) if extra else {})
        g.add(s, row)
    return g


def judged(g: Guardian):
    """The live report after ``live_confirm_checks`` judgements in a row (a FAIL from the
    shape of the curve is held until then)."""
    for _ in range(DEFAULT.live_confirm_checks):
        rep = g.judge()
    return rep


def cause(g: Guardian):
    return stops.measured_cause(g.runlog(), DEFAULT)


def test_a_run_whose_optimizer_steps_has_no_measured_cause():
    assert cause(history()) is None
    assert cause(history(extra=lambda s: {"update_ratio": 1e-3, "model/params_outside_optimizer": 0.0})) is None


@pytest.mark.parametrize(
    "kw,key",
    [
        ({"lr": 1e-7}, "lr"),
        ({"lr": 0.0}, "lr"),
        ({"grad": lambda s: 0.0}, "grad_norm"),
        ({"grad": lambda s: 1.0 if s < 20 else 1e-4}, "grad_norm"),
        ({"extra": lambda s: {"update_ratio": 1e-8}}, "update_ratio"),
        ({"extra": lambda s: {"model/layer_update_ratio_max": -7.0}}, "update_ratio"),
        (
            {"extra": lambda s: {"model/params_outside_optimizer": 2.0} if s % 10 == 9 else {}},
            "params_outside_optimizer",
        ),
        (
            {"extra": lambda s: {"model/params_not_updated": 4.0}, "meta": {"trainable_tensors": 4}},
            "params_not_updated",
        ),
        (
            {"extra": lambda s: {"model/grads_cleared_before_step": 4.0}, "meta": {"trainable_tensors": 4}},
            "grads_cleared_before_step",
        ),
    ],
)
def test_each_measured_cause_is_found(kw, key):
    got = cause(history(**kw))
    assert got is not None and got[0] == key, got


def test_some_tensors_not_updated_is_no_cause():
    # 1 of 4 trainable tensors bit-identical across the step: a frozen part, not a frozen model.
    g = history(extra=lambda s: {"model/params_not_updated": 1.0}, meta={"trainable_tensors": 4})
    assert cause(g) is None
    # and without the count of trainable tensors nothing says it covers them all
    assert cause(history(extra=lambda s: {"model/params_not_updated": 4.0})) is None
    # gradients cleared before the step on some tensors only: no cause either
    g = history(extra=lambda s: {"model/grads_cleared_before_step": 1.0}, meta={"trainable_tensors": 4})
    assert cause(g) is None


def test_one_group_at_zero_lr_is_no_cause_while_another_learns():
    g = history(lr=0.0, extra=lambda s: {"lr_group_1": 1e-3})
    assert cause(g) is None


def test_a_live_claim_without_cause_is_a_warn_and_the_final_judgement_is_unchanged():
    g = history()
    live = judged(g)
    flat = [f for f in live.findings if f.id == "TP-FLAT"]
    assert flat and flat[0].level is Level.WARN and flat[0].data["uncaused"] is True
    assert "no measured cause was found" in flat[0].message and "the run goes on" in flat[0].message
    assert live.verdict is not Level.FAIL
    final = g.judge(final=True)
    assert [(f.id, f.level) for f in final.findings if f.id == "TP-FLAT"] == [("TP-FLAT", Level.FAIL)]
    assert [f.data for f in final.findings if f.id == "TP-FLAT"][0].get("uncaused") is None


def test_a_live_claim_with_a_cause_stays_a_fail_and_cites_it():
    g = history(extra=lambda s: {"model/params_outside_optimizer": 3.0})
    rep = judged(g)
    flat = [f for f in rep.findings if f.id == "TP-FLAT"]
    assert flat and flat[0].level is Level.FAIL and flat[0].data["cause"] == "params_outside_optimizer"
    assert "Measured cause: 3 parameter tensor(s) get gradients but are in no param group" in flat[0].evidence


def test_a_claim_warned_for_want_of_a_cause_is_announced_again_as_a_fail_once_one_is_measured():
    alerts = []
    g = Guardian(meta={"max_steps": 400}, on_alert=alerts.append)
    for s in range(200):
        g.add(s, {"loss": 3.0, "lr": 1e-3, "grad_norm": 1.0})
    judged(g)
    for s in range(200, 220):
        g.add(s, {"loss": 3.0, "lr": 1e-3, "grad_norm": 1.0, "model/params_outside_optimizer": 2.0})
    g.judge()
    assert [(f.id, f.level) for f in alerts if f.id == "TP-FLAT"] == [("TP-FLAT", Level.WARN), ("TP-FLAT", Level.FAIL)]


def test_stop_on_and_patience_are_checked():
    with pytest.raises(ValueError, match="names no rule"):
        Guardian(stop_on={"TP-OVERFITT"})
    with pytest.raises(ValueError, match="patience"):
        Guardian(stop_on={"TP-OVERFIT"}, patience=0)
    assert Guardian(stop_on=["tp-overfit"]).stop_on == {"TP-OVERFIT"}


def test_resume_advice_names_the_checkpoint_in_the_remedy():
    g = Guardian()
    for s in range(40):
        g.add(s, {"loss": 1.0})
    from trainproof.findings import Finding

    f = Finding("TP-DIVERGE", Level.FAIL, "loss diverged", data={"onset_step": 31.0}, step=25.0)
    text = stops.resume_advice(f, g.runlog(), [(10.0, "out/checkpoint-10"), (30.0, "out/checkpoint-30"), (35.0, "x")])
    assert text.startswith("Last good step: 30.")
    assert "Resume from out/checkpoint-30 with a lower peak learning rate" in text
    f = Finding("TP-OVERFIT", Level.WARN, "overfitting", data={"best_step": 20.0}, step=20.0)
    text = stops.resume_advice(f, g.runlog(), [(10.0, "out/checkpoint-10"), (30.0, "out/checkpoint-30")])
    assert "Last good step: 20." in text and "Newest checkpoint at or before it: out/checkpoint-10 (step 10)" in text
    assert "First remedy (TP-OVERFIT): Keep the checkpoint at the best eval step" in text


# ------------------------------------------------------------------------- real torch runs


def regression(seed=0, d=8, n=2048):
    g = torch.Generator().manual_seed(1000 + seed)
    x = torch.randn(n, d, generator=g)
    w = torch.randn(d, 1, generator=g)
    y = 2.0 * torch.tanh(x @ w) + 2.0 + 0.1 * torch.randn(n, 1, generator=g)
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(d, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    return x, y, model


def classifier(seed=0, d=8, k=4, n=1024):
    """Four Gaussian clusters and an MLP (cross-entropy near 1.4 at the start)."""
    g = torch.Generator().manual_seed(1000 + seed)
    centers = 2.0 * torch.randn(k, d, generator=g)
    y = torch.randint(0, k, (n,), generator=g)
    x = centers[y] + torch.randn(n, d, generator=g)
    torch.manual_seed(seed)
    return x, y, torch.nn.Sequential(torch.nn.Linear(d, 32), torch.nn.ReLU(), torch.nn.Linear(32, k))


def loop(model, optimizer, x, y, steps=300, offset=0.0, batch=32, seed=7, extra=None, **kw):
    """The documented snippet around a plain regression loop. Returns ``(step stopped at or
    None, the RunFailed or None, the monitor)``."""
    g = torch.Generator().manual_seed(seed)
    mon = trainproof.watch(model, optimizer, check_every=10, policy=kw.pop("policy", "raise"), max_steps=steps, **kw)
    step = -1
    try:
        for step in range(steps):
            idx = torch.randint(0, x.shape[0], (batch,), generator=g)
            out = model(x[idx])
            lossf = torch.nn.functional.cross_entropy if y.dtype == torch.int64 else torch.nn.functional.mse_loss
            loss = lossf(out, y[idx]) + offset
            optimizer.zero_grad()
            loss.backward()
            mon.log(step, loss, **(extra() if extra else {}))
            optimizer.step()
    except RunFailed as e:
        return step, e, mon
    return None, None, mon


@pytest.mark.slow
def test_the_healthy_slow_learner_of_issue_31_is_never_stopped():
    """Adam at 1e-4 on the offset regression: its MSE falls from about 8.4 to 7.6 over 300
    steps, slower than its noise shows in the first hundred."""
    x, y, model = regression()
    stopped, err, mon = loop(model, torch.optim.Adam(model.parameters(), lr=1e-4), x, y)
    assert stopped is None, err
    loss = mon.guardian.runlog().series["loss"].values
    assert np.median(loss[-30:]) < 0.95 * np.median(loss[:30])  # it really learns


@pytest.mark.slow
def test_a_learning_loss_under_a_large_constant_term_is_not_flat(capsys, tmp_path):
    """A classifier's loss with a large constant term (a regulariser at 1000) while it learns:
    its relative variation is far under TP-FLAT's 0.1%, but every logged value differs, so
    nothing says the model is frozen. TP-FLAT once stopped this run at step 119 and failed
    its log; now neither the live checks, the ended run nor its log make a flatness claim."""
    x, y, model = classifier()
    log = tmp_path / "run.jsonl"
    stopped, err, mon = loop(model, torch.optim.Adam(model.parameters(), lr=1e-3), x, y, offset=1000.0, log_path=log)
    assert stopped is None, err
    assert "TP-FLAT" not in capsys.readouterr().err
    final = mon.report(print_it=False)
    assert "TP-FLAT" not in final.ids() and "TP-FLAT" in final.ran
    loss = mon.guardian.runlog().series["loss"].values
    assert np.std(loss) / np.mean(loss) < 1e-3  # under the bar that alone used to fail it
    mon.close()
    judged = trainproof.judge(str(log))
    assert judged.verdict is not Level.FAIL, [(f.id, f.message) for f in judged.findings]


@pytest.mark.slow
def test_weights_outside_the_optimizer_are_a_measured_cause_though_the_loss_moves_from_batch_to_batch():
    """The same loop with the bug a flat loss suspects: the optimizer holds another
    parameter, so the weights never move. The loss still varies from batch to batch, but
    the count of parameter tensors with a gradient in no optimizer group
    (``model/params_outside_optimizer``, measured here by the loop) covers every trainable
    tensor of the model: nothing is stepped, a cause that makes the flat loss a dead run,
    and the loop is stopped with it cited."""
    x, y, model = classifier()
    stray = torch.nn.Parameter(torch.zeros(()))
    opt = torch.optim.Adam([stray], lr=1e-3)

    def outside():
        held = {id(p) for group in opt.param_groups for p in group["params"]}
        n = sum(1 for p in model.parameters() if p.grad is not None and id(p) not in held)
        return {"model/params_outside_optimizer": float(n)}

    stopped, err, mon = loop(model, opt, x, y, offset=1000.0, extra=outside)
    assert stopped is not None, "never stopped"
    assert "TP-DEAD-RUN" in {f.id for f in err.findings}
    [dead] = [f for f in err.findings if f.id == "TP-DEAD-RUN"]
    assert "model/params_outside_optimizer covers all 4 trainable tensors" in dead.evidence, dead.evidence
    final = mon.report(print_it=False)
    [f] = [f for f in final.findings if f.id == "TP-PARAMS-NOT-OPTIMIZED"]
    assert f.level is Level.WARN and f.data["first_value"] == 4.0
    assert "4 parameter tensors with a gradient are in no optimizer group" in f.message
    assert final.verdict is Level.FAIL


@pytest.mark.slow
def test_a_learning_rate_about_zero_is_stopped_with_the_cause_cited():
    x, y, model = classifier()
    stopped, err, _ = loop(model, torch.optim.SGD(model.parameters(), lr=1e-7), x, y)
    assert stopped is not None, "never stopped"
    assert "TP-DEAD-RUN" in {f.id for f in err.findings}
    assert "Measured cause (TP-DEAD-RUN): the learning rate is about zero: median 1e-07" in str(err)
    assert "No good step before the onset TP-DEAD-RUN cites" in str(err)


def test_a_zero_learning_rate_is_stopped_at_the_first_check_and_says_what_to_do():
    x, y, model = regression()
    stopped, err, _ = loop(model, torch.optim.SGD(model.parameters(), lr=0.0), x, y, steps=100)
    assert stopped == 9
    assert [f.id for f in err.findings] == ["TP-ZERO-LR"]
    assert "learning rate is <= 0" in str(
        err
    ) and "First remedy (TP-ZERO-LR): Print the learning rate the optimizer applies" in str(err)


def overfit_loop(steps=200, **kw):
    """Memorising 32 noise targets with a wide MLP: the train loss falls, the eval loss
    (256 other noise targets, every 10 steps) rises from step 9 on. Returns ``(step
    stopped at or None, the RunFailed or None, [check steps where TP-OVERFIT was found])``."""
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(32, 16, generator=g), torch.randn(32, 1, generator=g)
    xe, ye = torch.randn(256, 16, generator=g), torch.randn(256, 1, generator=g)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    mon = trainproof.watch(model, opt, check_every=10, max_steps=steps, **kw)
    found, step = [], -1
    try:
        for step in range(steps):
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            ev = None
            if step % 10 == 9:
                with torch.no_grad():
                    ev = torch.nn.functional.mse_loss(model(xe), ye)
            mon.log(step, loss, eval_loss=ev)
            opt.step()
            if step % 10 == 9 and "TP-OVERFIT" in mon.guardian.report.ids():
                found.append(step)
    except RunFailed as e:
        return step, e, found
    return None, None, found


@pytest.mark.slow
def test_stop_on_overfit_waits_for_patience_checks_in_a_row():
    never, _, found = overfit_loop(policy="warn")
    assert never is None  # a WARN: warn does not stop
    first = found[0]
    assert found[:4] == [first, first + 10, first + 20, first + 30]  # present at every check from then on
    saved = []
    for patience in (1, 3):
        stopped, err, _ = overfit_loop(
            policy="warn", stop_on={"TP-OVERFIT"}, patience=patience, save_on_stop=saved.append
        )
        assert stopped == first + 10 * (patience - 1), (patience, stopped, first)
        assert [f.id for f in err.findings] == ["TP-OVERFIT"]
        text = str(err)
        assert f"TP-OVERFIT (WARN, chosen in stop_on, found {patience} check(s) in a row)" in text
        assert "Last good step: 9." in text  # the eval minimum
        assert f"save_on_stop saved at step {stopped}." in text
    # save_on_stop is called once per stop, with the step of the stop, before the raise
    assert saved == [first, first + 20]


@pytest.mark.slow
def test_stop_on_stops_a_silent_monitor_too_and_a_failing_save_does_not_hide_the_stop(capsys):
    def broken(step):
        raise OSError("disk full")

    stopped, err, _ = overfit_loop(policy="silent", stop_on={"TP-OVERFIT"}, save_on_stop=broken)
    assert stopped is not None
    assert "save_on_stop failed: OSError: disk full." in str(err)
    assert capsys.readouterr().err == ""  # silent prints nothing


# ---------------------------------------------------------- the callbacks' shared LiveRun


def overfit_records(n=200):
    """``(step, values)``: a train loss falling from 2.0 and, every 10 steps from step 9,
    an eval loss that falls to its minimum at step 49 and then climbs."""
    for s in range(n):
        yield s, {"loss": 2.0 * math.exp(-s / 60), "lr": 1e-3}
        if s % 10 == 9:
            yield s, {"eval_loss": 1.0 + 0.002 * (s - 49) ** 2 / 10}


@pytest.mark.slow
def test_liverun_stop_on_waits_for_patience_checks_in_a_row(capsys):
    from trainproof.integrations._common import LiveRun

    def first_stop(**kw):
        live = LiveRun("Test", check_every=10, **kw)
        live.start(max_steps=200)
        found = []
        for step, values in overfit_records():
            if live.record(step, values):
                return step, live, found
            if live.judged and "TP-OVERFIT" in live.report.ids():
                found.append(step)
        return None, live, found

    never, _, found = first_stop()
    assert never is None and found  # a WARN: warn does not stop
    at1, live1, _ = first_stop(stop_on=["TP-OVERFIT"])
    at3, live3, _ = first_stop(stop_on=["TP-OVERFIT"], patience=3)
    assert at1 == found[0] and at3 == found[2]  # the third check in a row that finds it
    assert [f.id for f in live3.stop_findings] == ["TP-OVERFIT"]
    err = capsys.readouterr().err
    assert f"trainproof: stop_on stopped Test training at step {at3} of 200 scheduled steps" in err
    assert "TP-OVERFIT (WARN, chosen in stop_on, found 3 check(s) in a row)" in err
    assert "Last good step: 49." in err


def _repeating(s: int) -> float:
    """A loss that repeats its logged value at 6 steps in 7: flat at the log's resolution."""
    return 1000.0 + (0.1 if s % 7 == 0 else 0.0)


@pytest.mark.slow
def test_liverun_does_not_stop_on_a_claim_of_no_progress_without_a_cause(capsys):
    from trainproof.integrations._common import LiveRun

    live = LiveRun("Test", policy="stop_on_fail", check_every=10)
    live.start(max_steps=400)
    for s in range(300):
        assert not live.record(s, {"loss": _repeating(s), "lr": 1e-3, "grad_norm": 1.0})
    err = capsys.readouterr().err
    assert "WARN at step" in err and "TP-FLAT" in err and "no measured cause was found" in err
    # with the weights outside the optimizer measured, the same claim stops the run
    live.start(max_steps=400)
    stopped = None
    for s in range(300):
        if live.record(s, {"loss": _repeating(s), "lr": 1e-3, "grad_norm": 1.0, stops.OUTSIDE_KEY: 4}):
            stopped = s
            break
    assert stopped is not None
    assert "Measured cause (TP-FLAT): 4 parameter tensor(s)" in capsys.readouterr().err


# ------------------------------------------------------------------ a divergence the held-out loss does not confirm


def climbing(n=260, eval_after=None, every=50, climb_from=60, climb_rate=3.5 / 340, stale_from=None) -> Guardian:
    """A Guardian holding a train loss that falls 3.75 -> 1.75 by step 60 and then climbs from
    ``climb_from`` (a KL weight annealed up, unlogged) to about 3x that, its climb past
    TP-DIVERGE's bar beginning near step 160 by default, with an eval loss every ``every``
    steps that falls 10.2 -> 5.4 until step 160 and is ``eval_after(step)`` after it (from
    ``stale_from`` on, the first evaluation's 10.2 again: a dead eval worker's)."""
    g = Guardian(meta={"max_steps": 1500})
    rng = np.random.default_rng(1)
    for s in range(n):
        level = 1.75 + 2.0 * math.exp(-s / 12) + (0.0 if s < climb_from else climb_rate * (s - climb_from))
        row = {"loss": level * math.exp(0.03 * rng.standard_normal()), "lr": 1e-3}
        if (s + 1) % every == 0:
            row["eval_loss"] = 4.3 + 5.9 * math.exp(-(s - 49) / 60) if s < 160 else eval_after(s)
            if stale_from is not None and s >= stale_from:
                row["eval_loss"] = 10.2  # the last value before it, carried by a dead eval worker
        g.add(s, row)
    return g


def test_a_divergence_whose_held_out_loss_keeps_improving_is_held_as_a_warning():
    # The in-loop judgement stopped a helper's VAE with KL annealing (eval 10.2 -> 3.9)
    # while only one or two evaluations had been made since the climb began: while every
    # one of them is no worse than before it, the run goes on; a worse one stops it.
    # (From objective_eval_after evaluations on, TP-OBJECTIVE-CHANGED reads them.)
    rep = judged(climbing(eval_after=lambda s: 5.0 - 0.001 * s))
    f = next(f for f in rep.findings if f.id == "TP-DIVERGE")
    assert f.level is Level.WARN and f.data["held_out_not_worse"] and stops.HELD_OUT_NOTE in f.message
    rep = judged(climbing(eval_after=lambda s: 5.6 + 0.01 * (s - 160)))
    f = next(f for f in rep.findings if f.id == "TP-DIVERGE")
    assert f.level is Level.FAIL and "held_out_not_worse" not in f.data


def test_an_eval_loss_rising_before_the_climb_is_judged_from_where_it_stood():
    # A curriculum: the model overfit the easy data (its eval loss on hard data rose from
    # its best 5.4 to 6.2) before the data turned hard and the train loss jumped. Since the
    # climb the evaluations are below the last one before it (a helper's run was stopped
    # with eval 1.12 -> 1.04, 0.86): held while they stay so; a worse one stops it.
    before = {49: 6.0, 99: 5.4, 149: 6.2}
    for after, level in (([5.9, 5.7], Level.WARN), ([5.9, 6.5], Level.FAIL)):
        g = Guardian(meta={"max_steps": 1500})
        src = climbing(eval_after=lambda s: 4.0).runlog()
        it = iter(after)
        for s_, v in zip(src.series["loss"].steps, src.series["loss"].values, strict=True):
            row = {"loss": float(v), "lr": 1e-3}
            if int(s_) in before:
                row["eval_loss"] = before[int(s_)]
            elif int(s_) in (199, 249):
                row["eval_loss"] = next(it)
            g.add(int(s_), row)
        f = next(f for f in judged(g).findings if f.id == "TP-DIVERGE")
        assert f.level is level, after
        if level is Level.WARN:
            assert "6.2 at its last evaluation before the climb began" in f.evidence


def test_a_divergence_held_out_by_evaluations_made_mid_climb():
    # No evaluation since the onset (step 160) yet, but those at steps 99 and 149 were made
    # while the loss climbed (a helper's VAE was stopped so at step 539, its eval ELBO
    # 15.2 -> 5.3 over the climb): they measured the model mid-climb and it was better.
    rep = judged(climbing(n=190, eval_after=lambda s: 4.0))
    f = next(f for f in rep.findings if f.id == "TP-DIVERGE")
    assert f.level is Level.WARN and "no worse mid-climb" in f.evidence
    # an eval worker that died before the climb, its last value forward-filled: no evidence
    rep = judged(climbing(n=190, eval_after=lambda s: 4.0, every=50, stale_from=60))
    f = next(f for f in rep.findings if f.id == "TP-DIVERGE")
    assert f.level is Level.FAIL


def test_an_untrained_models_evaluation_is_no_reference_for_the_hold():
    # The only evaluation before the climb is an untrained model's (step 0, 10.2): any
    # later one beats it. It says nothing of the level the run held: the FAIL stands.
    g = Guardian(meta={"max_steps": 1500})
    src = climbing(n=190, eval_after=lambda s: 4.0).runlog()
    for s_, v in zip(src.series["loss"].steps, src.series["loss"].values, strict=True):
        row = {"loss": float(v), "lr": 1e-3}
        if s_ == 0:
            row["eval_loss"] = 10.2
        elif s_ == 149:
            row["eval_loss"] = 6.5  # made mid-climb, worse than the held level's 5.4
        g.add(int(s_), row)
    f = next(f for f in judged(g).findings if f.id == "TP-DIVERGE")
    assert f.level is Level.FAIL


def test_a_divergence_with_no_evaluation_since_the_climb_got_under_way_stands():
    # A blow-up right after the last evaluation: it was made at the best level and says
    # nothing of the climb.
    rep = judged(climbing(n=190, eval_after=lambda s: 4.0, climb_from=150, climb_rate=0.2))
    f = next(f for f in rep.findings if f.id == "TP-DIVERGE")
    assert f.level is Level.FAIL
    # ... nor where the evaluations made mid-climb got worse
    g = Guardian(meta={"max_steps": 1500})
    src = climbing(n=190, eval_after=lambda s: 4.0).runlog()
    ev = src.series["eval_loss"]
    for s_, v in zip(src.series["loss"].steps, src.series["loss"].values, strict=True):
        row = {"loss": float(v), "lr": 1e-3}
        if s_ in ev.steps:
            row["eval_loss"] = float(ev.values[list(ev.steps).index(s_)]) * (1.0 if s_ < 60 else 3.0)
        g.add(int(s_), row)
    f = next(f for f in judged(g).findings if f.id == "TP-DIVERGE")
    assert f.level is Level.FAIL
    # ... nor with no eval loss at all
    g = Guardian(meta={"max_steps": 1500})
    for s_, v in zip(src.series["loss"].steps, src.series["loss"].values, strict=True):
        g.add(int(s_), {"loss": float(v), "lr": 1e-3})
    f = next(f for f in judged(g).findings if f.id == "TP-DIVERGE")
    assert f.level is Level.FAIL
    # ... nor with no eval loss at all
    g = Guardian(meta={"max_steps": 1500})
    src = climbing(eval_after=lambda s: 4.0).runlog()
    for s, v in zip(src.series["loss"].steps, src.series["loss"].values, strict=True):
        g.add(int(s), {"loss": float(v), "lr": 1e-3})
    f = next(f for f in judged(g).findings if f.id == "TP-DIVERGE")
    assert f.level is Level.FAIL


# ------------------------------------------------------------------ a climb that gives back little


def bump(regain: float, n: int = 300, lr=None, blow_up: bool = False) -> Guardian:
    """A Guardian holding a train loss that falls 1.37 -> 0.21 by step 100 and, from step
    200 to the end, climbs to give back ``regain`` of that fall (a CNN at batch 8 under SGD
    with momentum); ``lr(step)`` logged when given; with ``blow_up``, its last 4 points
    climb 10x a step."""
    g = Guardian(meta={"max_steps": 1000})
    rng = np.random.default_rng(3)
    for s in range(n):
        level = 0.21 + 1.16 * math.exp(-s / 20)
        if s >= 200:
            level += regain * 1.16 * min(1.0, (s - 200) / 20)
        v = level * math.exp(0.03 * rng.standard_normal())
        if blow_up and s >= n - 4:
            v = level * 10.0 ** (s - n + 5)
        row = {"loss": v}
        if lr is not None:
            row["lr"] = lr(s)
        g.add(s, row)
    return g


def _diverge(rep):
    return next(f for f in rep.findings if f.id == "TP-DIVERGE")


def test_a_climb_that_gives_back_little_is_held_while_the_run_trains():
    # A healthy run's bump (0.21 -> 0.55, 29% of its fall from 1.37) is a WARN while it
    # trains; the ended run's judgement is unchanged.
    g = bump(0.29)
    f = _diverge(judged(g))
    assert f.level is Level.WARN and f.data["small_climb"] and stops.SMALL_CLIMB_NOTE in f.message
    assert 0.2 < f.data["regain"] < DEFAULT.live_diverge_regain
    assert _diverge(g.judge(final=True)).level is Level.FAIL


@pytest.mark.parametrize(
    "kw",
    [
        {"regain": 0.7},  # gives back most of what it learned
        {"regain": 0.29, "lr": lambda s: 1e-3 if s < 190 else 3e-2},  # after the rate was raised
        {"regain": 0.1, "blow_up": True},  # a blow-up
    ],
)
def test_a_climb_that_gives_back_much_or_has_a_cause_still_stops(kw):
    f = _diverge(judged(bump(**kw)))
    assert f.level is Level.FAIL and "small_climb" not in f.data


def test_a_climb_from_the_runs_start_is_never_held_as_small():
    # A run that blows up from its first logs has no fall to give back: its block levels
    # say little of that, and the FAIL stands while it trains.
    g = Guardian(meta={"max_steps": 1000})
    rng = np.random.default_rng(5)
    for s in range(120):
        g.add(s, {"loss": 2.0 * math.exp(0.05 * s) * math.exp(0.03 * rng.standard_normal())})
    f = _diverge(judged(g))
    assert f.level is Level.FAIL and f.data["from_start"] and "small_climb" not in f.data


def test_a_remedy_is_cut_at_its_first_sentence_never_inside_brackets():
    from trainproof.live.stops import first_remedy
    from trainproof.rules.registry import all_rules

    # TP-ZERO-LR's remedy holds "(PyTorch: optimizer.param_groups[0]['lr']; Keras: ...)":
    # a stop message cut it at the ';' inside the parenthesis
    text = first_remedy("TP-ZERO-LR")
    assert text.count("(") == text.count(")") and "Keras" in text and text.endswith(".")
    for r in all_rules():
        t = first_remedy(r.id)
        assert t.count("(") == t.count(")") and t.count("[") == t.count("]"), (r.id, t)
