"""The in-loop monitor never waits for the device between checks, and its fused gradient
norm and update ratio agree with a plain computation on every kind of parameter set.

The host syncs are counted, not timed: every Tensor method that copies a value to the
host (``item``, ``cpu``, ``tolist``, ``numpy``, ``__float__``, ``__int__``, ``__bool__``,
``__index__``) is wrapped while ``Monitor.log`` runs.
"""

from __future__ import annotations

import json
import math

import pytest

torch = pytest.importorskip("torch")

from trainproof.live.monitor import Monitor  # noqa: E402

SYNCS = ("item", "cpu", "tolist", "numpy", "__float__", "__int__", "__bool__", "__index__")


@pytest.fixture(autouse=True)
def _one_thread(torch_one_thread):
    """Every test here on one torch thread (see conftest.torch_one_thread)."""


@pytest.fixture
def syncs(monkeypatch):
    """A list that gets one name per host sync made inside ``Monitor.log``."""
    seen: list[str] = []
    inside = {"log": 0}

    for name in SYNCS:
        orig = getattr(torch.Tensor, name)

        def wrapped(self, *a, __orig=orig, __name=name, **kw):
            if inside["log"]:
                seen.append(__name)
            return __orig(self, *a, **kw)

        monkeypatch.setattr(torch.Tensor, name, wrapped)

    log = Monitor.log

    def counted(self, *a, **kw):
        inside["log"] += 1
        try:
            return log(self, *a, **kw)
        finally:
            inside["log"] -= 1

    monkeypatch.setattr(Monitor, "log", counted)
    return seen


def deep_model(layers: int):
    torch.manual_seed(0)
    mods = []
    for _ in range(layers):
        mods += [torch.nn.Linear(4, 4), torch.nn.Tanh()]
    return torch.nn.Sequential(*mods)


def manual_norm(tensors) -> float:
    return math.sqrt(sum(float((t.double() ** 2).sum()) for t in tensors))


def count_per_call(layers: int, syncs: list[str], check_every: int = 10, steps: int = 30):
    """Train a ``layers``-deep MLP with a tensor loss, a tensor metric, a tensor lr and the
    update ratio; returns (syncs made by each log() call, monitor)."""
    model = deep_model(layers)
    opt = torch.optim.SGD(model.parameters(), lr=torch.tensor(0.01))
    mon = Monitor(model, opt, check_every=check_every, policy="silent", track_update_ratio=True)
    x = torch.randn(16, 4)
    per_call = []
    for step in range(steps):
        loss = (model(x) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        before = len(syncs)
        mon.log(step, loss, acc=loss.detach() * 0 + 0.5, batch=torch.tensor(16))
        per_call.append(len(syncs) - before)
        opt.step()
    return per_call, mon


@pytest.mark.slow
@pytest.mark.parametrize("layers", [1, 100])
def test_log_makes_no_host_sync_between_checks_and_a_constant_few_at_a_check(syncs, layers):
    per_call, mon = count_per_call(layers, syncs)
    assert len(list(mon.model.parameters())) == 2 * layers  # 200 parameter tensors at 100
    checks = [i for i in range(len(per_call)) if (i + 1) % 10 == 0]
    assert all(per_call[i] == 0 for i in range(len(per_call)) if i not in checks), per_call
    # One transfer per device (all here are on the CPU), however many parameters.
    assert [per_call[i] for i in checks] == [1, 1, 1], (per_call, syncs)
    run = mon.guardian.runlog()
    assert len(run.series["loss"]) == 30 and len(run.series["update_ratio"]) == 29
    assert list(run.series["batch"].values) == [16.0] * 30 and set(run.series["acc"].values) == {0.5}


def test_the_sync_counter_sees_a_sync(syncs):
    """The counter works: a logged value that reads a tensor on the host is one sync."""
    model = deep_model(1)
    mon = Monitor(model, torch.optim.SGD(model.parameters(), lr=0.1), check_every=100, policy="silent")
    model(torch.randn(2, 4)).sum().backward()
    mon.log(0, 1.0)
    assert syncs == []
    mon.log(1, 1.0, probe=_Syncing())
    assert syncs == ["__float__"]


class _Syncing:
    """A logged value that the monitor reads with ``float(tensor)`` on the host."""

    def item(self):
        return float(torch.tensor(2.0))

    def numel(self):
        return 1


def test_tensor_loss_is_recorded_like_its_item(tmp_path):
    log = tmp_path / "run.jsonl"
    model = deep_model(2)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    mon = Monitor(model, opt, check_every=4, policy="silent", log_path=log)
    x = torch.randn(16, 4)
    items = []
    for step in range(10):
        loss = (model(x) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        items.append(loss.item())
        mon.log(step, loss if step != 6 else loss * float("nan"))
        opt.step()
    assert len(log.read_text().splitlines()) == 8  # two checks so far
    mon.close()
    rows = [json.loads(x) for x in log.read_text().splitlines()]
    assert [r["step"] for r in rows] == list(range(10))
    got = [r["loss"] for r in rows]
    assert math.isnan(got[6])
    assert [g for i, g in enumerate(got) if i != 6] == [v for i, v in enumerate(items) if i != 6]


def test_sparse_embedding_gradient_norm_counts_repeated_rows_once():
    torch.manual_seed(0)
    emb = torch.nn.Embedding(50, 6, sparse=True)
    head = torch.nn.Linear(6, 1)
    model = torch.nn.ModuleDict({"emb": emb, "head": head})
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    mon = Monitor(model, opt, check_every=1000, policy="silent", track_update_ratio=True)
    idx = torch.tensor([3, 3, 7, 3, 9, 7])  # repeated rows: the sparse grad is uncoalesced
    expected = []
    for step in range(5):
        loss = head(emb(idx + step)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        assert emb.weight.grad.is_sparse and not emb.weight.grad.is_coalesced()
        expected.append(manual_norm([emb.weight.grad.to_dense(), head.weight.grad, head.bias.grad]))
        mon.log(step, loss)
        opt.step()
    gn = mon.guardian.runlog().series["grad_norm"].values
    assert list(gn) == pytest.approx(expected, rel=1e-6)
    assert len(mon.guardian.runlog().series["update_ratio"]) == 4


def test_frozen_and_unused_parameters():
    torch.manual_seed(0)
    frozen, used, unused = torch.nn.Linear(4, 4), torch.nn.Linear(4, 1), torch.nn.Linear(4, 1)
    frozen.requires_grad_(False)
    model = torch.nn.ModuleList([frozen, used, unused])
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    mon = Monitor(model, opt, check_every=1000, policy="silent", track_update_ratio=True)
    x = torch.randn(8, 4)
    snaps, expected = [], []
    for step in range(4):
        loss = used(frozen(x)).pow(2).mean()  # ``unused`` gets no gradient
        opt.zero_grad()
        loss.backward()
        assert unused.weight.grad is None and frozen.weight.grad is None
        expected.append(manual_norm([used.weight.grad, used.bias.grad]))
        snaps.append([p.detach().clone() for p in model.parameters() if p.requires_grad])
        mon.log(step, loss)
        opt.step()
    run = mon.guardian.runlog()
    assert list(run.series["grad_norm"].values) == pytest.approx(expected, rel=1e-6)
    a, b = snaps[2], snaps[3]
    ratio = manual_norm([x - y for x, y in zip(b, a)]) / manual_norm(b)
    assert run.series["update_ratio"].values[-1] == pytest.approx(ratio, rel=1e-5)


def test_a_gradient_that_comes_and_goes_between_checks_is_counted_each_step():
    """The grouping of the gradients is kept between checks; a parameter that gets a
    gradient only on some steps (a branch taken now and then, set_to_none zeroing) is in
    the norm exactly on those steps. A parameter added to the model between checks is
    measured from the next check on (the parameters are listed again at each check)."""
    torch.manual_seed(0)
    a, b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 1)
    model = torch.nn.ModuleDict({"a": a, "b": b})
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    mon = Monitor(model, opt, check_every=1000, policy="silent")
    x = torch.randn(8, 4)
    expected = []

    def step(i: int, listed) -> None:
        opt.zero_grad(set_to_none=True)
        out = a(x)
        if "c" in model:
            out = model["c"](out)
        if i % 3 == 1:
            out = b(out)  # ``b`` has a gradient on steps 1, 4, 7 only
        loss = out.pow(2).mean()
        loss.backward()
        expected.append(manual_norm([p.grad for p in listed if p.grad is not None]))
        mon.log(i, loss)

    before = list(model.parameters())
    for i in range(5):
        step(i, before)
    model["c"] = torch.nn.Linear(4, 4)
    for i in range(5, 8):
        step(i, before)  # not listed yet
    mon.check()
    for i in range(8, 11):
        step(i, list(model.parameters()))
    got = list(mon.guardian.runlog().series["grad_norm"].values)
    assert got == pytest.approx(expected, rel=1e-6)


def test_a_grad_norm_passed_in_replaces_the_monitors_own(monkeypatch):
    """The norm ``clip_grad_norm_`` returns, passed as ``grad_norm=``, is recorded as it is
    and the monitor makes no pass of its own over the gradients."""
    model = deep_model(5)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    mon = Monitor(model, opt, check_every=1000, policy="silent")
    calls = []
    real = torch._foreach_norm
    monkeypatch.setattr(torch, "_foreach_norm", lambda *a, **k: calls.append(1) or real(*a, **k))
    x = torch.randn(8, 4)
    clipped = []
    for step in range(3):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1e-3)
        clipped.append(float(norm))
        n_before = len(calls)
        mon.log(step, loss, grad_norm=norm)
        assert len(calls) == n_before  # clipping's own call only
        opt.step()
    assert list(mon.guardian.runlog().series["grad_norm"].values) == pytest.approx(clipped, rel=1e-6)


def test_mixed_dtypes():
    torch.manual_seed(0)
    model = torch.nn.ParameterList(
        [
            torch.nn.Parameter(torch.randn(5, 3)),
            torch.nn.Parameter(torch.randn(7, dtype=torch.float64)),
            torch.nn.Parameter(torch.randn(4, 4).to(torch.bfloat16)),
        ]
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    mon = Monitor(model, opt, check_every=3, policy="silent", track_update_ratio=True)
    expected, snaps = [], []
    for step in range(6):
        loss = sum((p.float() - 1.0).pow(2).sum() for p in model)
        opt.zero_grad()
        loss.backward()
        assert [p.grad.dtype for p in model] == [torch.float32, torch.float64, torch.bfloat16]
        expected.append(manual_norm([p.grad for p in model]))
        snaps.append([p.detach().clone() for p in model])
        mon.log(step, loss)
        opt.step()
    run = mon.guardian.runlog()
    assert list(run.series["grad_norm"].values) == pytest.approx(expected, rel=1e-5)
    a, b = snaps[4], snaps[5]
    ratio = manual_norm([x.double() - y.double() for x, y in zip(b, a)]) / manual_norm(b)
    assert run.series["update_ratio"].values[-1] == pytest.approx(ratio, rel=1e-3)


def test_non_finite_gradients_are_recorded():
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    mon = Monitor(model, opt, check_every=1000, policy="silent")
    for step, bad in enumerate([float("inf"), float("nan"), 1.0]):
        model.zero_grad()
        model(torch.ones(1, 3)).sum().backward()
        model.weight.grad[0, 0] = bad
        mon.log(step, 1.0)
    gn = mon.guardian.runlog().series["grad_norm"].values
    assert gn[0] == math.inf and math.isnan(gn[1]) and math.isfinite(gn[2])


def test_cap_on_pending_steps(monkeypatch):
    import trainproof.live.monitor as m

    monkeypatch.setattr(m, "MAX_PENDING", 4)
    model = torch.nn.Linear(3, 1)
    mon = Monitor(model, torch.optim.SGD(model.parameters(), lr=0.1), check_every=1000, policy="silent")
    for step in range(9):
        model(torch.ones(1, 3)).sum().backward()
        mon.log(step, 1.0)
    assert mon._guardian.records == 8 and len(mon._pending) == 1
    assert mon.guardian.records == 9  # reading the guardian brings the rest


@pytest.mark.slow
def test_torch_compiled_model_records_the_same_norms():
    def run(compiled: bool):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        fwd = torch.compile(model, backend="eager") if compiled else model
        mon = Monitor(fwd, opt, check_every=5, policy="silent", track_update_ratio=True)
        x = torch.randn(32, 8, generator=torch.Generator().manual_seed(1))
        for step in range(10):
            loss = fwd(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            mon.log(step, loss)
            opt.step()
        return mon.guardian.runlog()

    plain, compiled = run(False), run(True)
    for key in ("loss", "grad_norm", "update_ratio"):
        assert list(compiled.series[key].values) == pytest.approx(list(plain.series[key].values), rel=1e-5)


def test_grad_norm_is_the_norm_clip_grad_norm_clips_by():
    model = deep_model(30)
    mon = Monitor(model, torch.optim.SGD(model.parameters(), lr=0.1), check_every=1000, policy="silent")
    (model(torch.randn(4, 4)) ** 2).sum().backward()
    mon.log(0, 1.0)
    total = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=float("inf"))
    assert mon.guardian.runlog().series["grad_norm"].values[0] == pytest.approx(float(total), rel=1e-6)
    assert mon.grad_norm() == pytest.approx(float(total), rel=1e-6)
