"""The in-loop monitor in a real 2-process run (torch.distributed, gloo, CPU): DDP and
FSDP2 record the global gradient norm of a single-process run on the same global batch,
only rank 0 prints and writes, and ``policy="raise"`` stops every rank at the same step
even when one rank would judge and the other would not.

Each scenario runs in processes started by ``torch.multiprocessing.spawn``; they write
their results to files that the tests read. A scenario that hangs fails at a deadline.
"""

from __future__ import annotations

import json
import math
import socket
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.slow

STEPS = 12
DEADLINE_S = 240.0  # generous: 2 processes importing torch on a busy 2-core machine


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(fn, out: Path) -> list[dict]:
    """Run ``fn(rank, 2, port, out)`` in 2 processes; returns each rank's result file.
    Fails (and kills them) when they are not done by :data:`DEADLINE_S`.

    A process group that dies by a signal before either rank wrote its result is started
    once more on a fresh port: the port picked free here can be taken by another test's
    server (the suite runs on 2 workers) before rank 0 binds it, and gloo then aborts the
    other rank (a CI run saw SIGABRT in rank 1 with nothing on stderr but "terminate called
    without an active exception"). A rank's Python error is raised at once (torch's
    ProcessRaisedException), and a second death by a signal fails."""
    import torch.multiprocessing as mp

    if not torch.distributed.is_available():
        pytest.skip("this torch is built without torch.distributed")
    for attempt in (1, 2):
        ctx = mp.spawn(fn, args=(2, _free_port(), str(out)), nprocs=2, join=False)
        deadline = time.monotonic() + DEADLINE_S
        try:
            while not ctx.join(timeout=1.0):
                if time.monotonic() > deadline:
                    for p in ctx.processes:
                        if p.is_alive():
                            p.kill()
                    pytest.fail(
                        f"the 2 processes were not done after {DEADLINE_S:.0f} s (a rank waits in a collective)"
                    )
        except mp.ProcessExitedException:
            started = any((out / f"result.{r}.json").exists() for r in (0, 1))
            if attempt == 2 or started:
                raise
            continue
        break
    return [json.loads((out / f"result.{r}.json").read_text()) for r in (0, 1)]


# --------------------------------------------------------------------------- the problem


def _problem():
    """The model (seeded), the data, and the global batch indices of each step."""
    g = torch.Generator().manual_seed(0)
    X = torch.randn(256, 8, generator=g)
    Y = torch.tanh(X @ torch.randn(8, 1, generator=g))
    batches = [torch.randint(0, 256, (32,), generator=g) for _ in range(STEPS)]
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    return model, X, Y, batches


def _reference() -> dict:
    """One process on the whole global batch: the series the distributed runs must match."""
    from trainproof.live.monitor import Monitor

    torch.set_num_threads(1)
    model, X, Y, batches = _problem()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    mon = Monitor(model, opt, check_every=5, policy="silent", track_update_ratio=True)
    for step, idx in enumerate(batches):
        loss = torch.nn.functional.mse_loss(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        mon.log(step, loss)
        opt.step()
    run = mon.guardian.runlog()
    return {k: list(map(float, run.series[k].values)) for k in ("grad_norm", "update_ratio")}


def _init(rank: int, world: int, port: int) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)


def _train(mon, model, opt, rank: int, loss_at=None) -> int | None:
    """Train on this rank's half of each global batch; ``loss_at(step, loss)`` gives the
    loss to log. Returns the step at which RunFailed was raised, or None."""
    from trainproof import RunFailed

    _, X, Y, batches = _problem()
    for step, idx in enumerate(batches):
        mine = idx[16 * rank : 16 * (rank + 1)]
        loss = torch.nn.functional.mse_loss(model(X[mine]), Y[mine])
        opt.zero_grad()
        loss.backward()
        try:
            mon.log(step, loss if loss_at is None else loss_at(step, loss))
        except RunFailed:
            return step
        opt.step()
    return None


def _series(mon, key: str) -> list[float]:
    s = mon.guardian.runlog().series.get(key)
    return [] if s is None else list(map(float, s.values))


def _in_lockstep() -> bool:
    """True when both ranks reach this collective together (after a raise, say)."""
    import torch.distributed as dist

    t = torch.ones(1)
    dist.all_reduce(t)
    return float(t) == 2.0


# --------------------------------------------------------------------------- DDP


def _ddp_worker(rank: int, world: int, port: int, out: str) -> None:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from trainproof.live.guardian import Guardian
    from trainproof.live.monitor import Monitor

    _init(rank, world, port)
    res: dict = {}
    out_dir = Path(out)
    # A cold first judgement on a busy machine could make the next check unaffordable;
    # these scenarios judge at every check (the third one rations on purpose).
    affordable = Guardian.affordable
    Guardian.affordable = lambda self, now=None: True
    try:
        # warn: a NaN loss logged at step 6 (the gradients stay finite).
        sys.stderr = open(out_dir / f"warn.err.{rank}", "w")
        model, *_ = _problem()
        ddp = DDP(model)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
        alerts: list[str] = []
        mon = Monitor(
            ddp,
            opt,
            check_every=5,
            policy="warn",
            on_alert=lambda f: alerts.append(f.id),
            log_path=out_dir / f"run.{rank}.jsonl",
            track_update_ratio=True,
        )
        _train(mon, ddp, opt, rank, lambda s, loss: loss * math.nan if s == 6 else loss)
        mon.report(print_it=True)
        mon.close()
        sys.stderr.close()
        res["warn"] = {
            "grad_norm": _series(mon, "grad_norm"),
            "update_ratio": _series(mon, "update_ratio"),
            "alerts": alerts,
            "main": mon.main,
        }

        # raise: only rank 1 logs NaN losses, from step 5 on; checks every 4 calls.
        sys.stderr = open(out_dir / f"raise.err.{rank}", "w")
        model, *_ = _problem()
        ddp = DDP(model)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
        mon = Monitor(ddp, opt, check_every=4, policy="raise")
        raised = _train(mon, ddp, opt, rank, lambda s, loss: loss * math.nan if rank == 1 and s >= 5 else loss)
        res["raise"] = {"raised_at": raised, "lockstep": _in_lockstep()}
        sys.stderr.close()

        Guardian.affordable = affordable
        # affordable differs: rank 1 can afford every second check only, rank 0 every one.
        sys.stderr = open(out_dir / f"afford.err.{rank}", "w")
        model, *_ = _problem()
        ddp = DDP(model)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
        mon = Monitor(ddp, opt, check_every=2, policy="raise")
        asked = {"n": 0}

        def affordable(now=None):
            asked["n"] += 1
            return rank == 0 or asked["n"] % 2 == 0

        judged: list[int] = []
        judge = mon._guardian.judge
        mon._guardian.affordable = affordable
        mon._guardian.judge = lambda *a, **kw: (judged.append(mon._guardian.records), judge(*a, **kw))[1]
        raised = _train(mon, ddp, opt, rank, lambda s, loss: loss * math.nan if s >= 2 else loss)
        res["afford"] = {"raised_at": raised, "judged": judged, "lockstep": _in_lockstep()}
        sys.stderr.close()
        sys.stderr = sys.__stderr__
        dist.barrier()
    finally:
        dist.destroy_process_group()
    (out_dir / f"result.{rank}.json").write_text(json.dumps(res))


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("ddp")
    return out, _spawn(_ddp_worker, out), _reference()


def test_ddp_every_rank_records_the_single_process_norms(ddp_run):
    _, got, ref = ddp_run
    for g in got:
        assert g["warn"]["grad_norm"] == pytest.approx(ref["grad_norm"], rel=1e-5)
        assert g["warn"]["update_ratio"] == pytest.approx(ref["update_ratio"], rel=1e-5)


def test_ddp_only_rank_zero_prints_writes_and_alerts(ddp_run):
    out, got, _ = ddp_run
    assert [g["warn"]["main"] for g in got] == [True, False]
    err0, err1 = ((out / f"warn.err.{r}").read_text() for r in (0, 1))
    assert "trainproof: FAIL at step" in err0 and "TP-NAN" in err0
    assert "FAIL" in err0.split("trainproof: FAIL at step", 1)[1]  # and the final verdict
    assert err1 == ""
    assert "TP-NAN" in got[0]["warn"]["alerts"] and got[1]["warn"]["alerts"] == []
    rows = [json.loads(x) for x in (out / "run.0.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == list(range(STEPS))
    assert [r["grad_norm"] for r in rows] == pytest.approx(got[0]["warn"]["grad_norm"])
    assert not (out / "run.1.jsonl").exists()


def test_ddp_raise_stops_every_rank_at_the_same_step(ddp_run):
    out, got, _ = ddp_run
    # Rank 1's NaN from step 5 is judged at the check of the 8th call (step 7).
    assert [g["raise"]["raised_at"] for g in got] == [7, 7]
    assert all(g["raise"]["lockstep"] for g in got)
    # Rank 0 tells what rank 1 found (its own losses are finite).
    assert "trainproof (rank 1): FAIL at step 7: TP-NAN" in (out / "raise.err.0").read_text()
    assert (out / "raise.err.1").read_text() == ""


def test_ddp_ranks_agree_whether_to_judge_when_affordable_differs(ddp_run):
    _, got, _ = ddp_run
    # Checks at steps 1, 3, 5...; rank 1 can afford the 2nd, so both judge first there.
    assert [g["afford"]["judged"] for g in got] == [[4], [4]]
    assert [g["afford"]["raised_at"] for g in got] == [3, 3]
    assert all(g["afford"]["lockstep"] for g in got)


# --------------------------------------------------------------------------- FSDP2


def _fsdp_worker(rank: int, world: int, port: int, out: str) -> None:
    import torch.distributed as dist

    from trainproof.live.monitor import Monitor

    _init(rank, world, port)
    res: dict = {}
    out_dir = Path(out)
    try:
        try:
            from torch.distributed.device_mesh import init_device_mesh
            from torch.distributed.fsdp import fully_shard
            from torch.distributed.tensor import Replicate, Shard, distribute_tensor

            mesh = init_device_mesh("cpu", (world,))
        except Exception as e:  # this torch cannot shard on CPU: the test skips with why
            res["skip"] = f"FSDP2 on CPU/gloo is unavailable here: {type(e).__name__}: {e}"
        else:
            # fully_shard training: parameters and gradients are Shard(0) DTensors.
            model, *_ = _problem()
            fully_shard(model[0], mesh=mesh)
            fully_shard(model, mesh=mesh)
            opt = torch.optim.SGD(model.parameters(), lr=0.05)
            mon = Monitor(model, opt, check_every=5, policy="silent", track_update_ratio=True)
            _train(mon, model, opt, rank)
            res["fsdp"] = {
                "grad_norm": _series(mon, "grad_norm"),
                "update_ratio": _series(mon, "update_ratio"),
                "placements": sorted({str(p.grad.placements) for p in model.parameters()}),
                "local_shapes": [list(p.grad.to_local().shape) for p in model.parameters()],
                "grad_norm_now": mon.grad_norm(),
            }

            # FSDP1 (FullyShardedDataParallel): flat parameters, or the original ones as
            # views into this rank's shard.
            from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

            for orig in (False, True):
                model, *_ = _problem()
                wrapped = FSDP(model, use_orig_params=orig, device_id=torch.device("cpu"))
                opt = torch.optim.SGD(wrapped.parameters(), lr=0.05)
                mon = Monitor(wrapped, opt, check_every=5, policy="silent", track_update_ratio=True)
                _train(mon, wrapped, opt, rank)
                res[f"fsdp1_orig_{orig}"] = {
                    "grad_norm": _series(mon, "grad_norm"),
                    "update_ratio": _series(mon, "update_ratio"),
                }

            # A mix: a sharded DTensor (uneven: 5 rows on 2 ranks), a replicated one, a
            # plain tensor (the same on every rank).
            g = torch.Generator().manual_seed(3)
            full = {"a": torch.randn(5, 3, generator=g), "b": torch.randn(4, generator=g)}
            full["c"] = torch.randn(3, 3, generator=g)
            grads = {k: torch.randn(v.shape, generator=g) for k, v in full.items()}
            step = {k: 0.01 * torch.randn(v.shape, generator=g) for k, v in full.items()}
            place = {"a": [Shard(0)], "b": [Replicate()]}

            def dt(k, t):
                return distribute_tensor(t, mesh, place[k]) if k in place else t.clone()

            mix = torch.nn.ParameterDict({k: torch.nn.Parameter(dt(k, v)) for k, v in full.items()})
            opt = torch.optim.SGD(mix.parameters(), lr=0.0)
            mon = Monitor(mix, opt, check_every=1000, policy="silent", track_update_ratio=True)
            for k, p in mix.items():
                p.grad = dt(k, grads[k])
            before = {k: p.detach().to_local().clone() if k in place else p.detach().clone() for k, p in mix.items()}
            mon.log(0, 1.0)
            with torch.no_grad():
                for k, p in mix.items():
                    p.add_(dt(k, step[k]))
            mon.log(1, 1.0)

            def sq(k, t) -> float:
                """The whole tensor's sum of squares from this rank's part of it."""
                s = torch.tensor(float((t.double() ** 2).sum()), dtype=torch.float64)
                if k == "a":
                    dist.all_reduce(s)
                return float(s)

            now = {k: p.detach().to_local() if k in place else p.detach() for k, p in mix.items()}
            num = sum(sq(k, now[k] - before[k]) for k in full)
            den = sum(sq(k, now[k]) for k in full)

            def norm(ts):
                return math.sqrt(sum(float((t.double() ** 2).sum()) for t in ts))

            res["mix"] = {
                "grad_norm": _series(mon, "grad_norm"),
                "update_ratio": _series(mon, "update_ratio"),
                "expected_grad_norm": norm(grads.values()),
                "expected_update_ratio": math.sqrt(num / den),
                "local_a": list(mix["a"].to_local().shape),
            }

            # HSDP-style 2-D meshes (replicate, shard): only the shard dimension sums.
            for shape in ((2, 1), (1, 2)):
                mesh2 = init_device_mesh("cpu", shape, mesh_dim_names=("rep", "shard"))
                w = torch.nn.Parameter(distribute_tensor(full["a"], mesh2, [Replicate(), Shard(0)]))
                w.grad = distribute_tensor(grads["a"], mesh2, [Replicate(), Shard(0)])
                mon = Monitor(torch.nn.ParameterList([w]), torch.optim.SGD([w], lr=0.0), policy="silent")
                mon.log(0, 1.0)
                res[f"mesh_{shape[0]}x{shape[1]}"] = {
                    "grad_norm": _series(mon, "grad_norm"),
                    "expected": norm([grads["a"]]),
                    "local": list(w.grad.to_local().shape),
                }
        dist.barrier()
    finally:
        dist.destroy_process_group()
    (out_dir / f"result.{rank}.json").write_text(json.dumps(res))


@pytest.fixture(scope="module")
def fsdp_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("fsdp")
    got = _spawn(_fsdp_worker, out)
    if "skip" in got[0]:
        pytest.skip(got[0]["skip"])
    return got, _reference()


def test_fsdp2_records_the_global_norm_not_a_shard(fsdp_run):
    got, ref = fsdp_run
    assert got[0]["fsdp"]["placements"] == ["(Shard(dim=0),)"]
    assert got[0]["fsdp"]["local_shapes"] != got[1]["fsdp"]["local_shapes"]  # really sharded
    for g in got:
        assert g["fsdp"]["grad_norm"] == pytest.approx(ref["grad_norm"], rel=1e-5)
        assert g["fsdp"]["update_ratio"] == pytest.approx(ref["update_ratio"], rel=1e-5)
        assert g["fsdp"]["grad_norm_now"] == pytest.approx(ref["grad_norm"][-1], rel=1e-5)


@pytest.mark.parametrize("orig", [False, True])
def test_fsdp1_records_the_global_norm(fsdp_run, orig):
    got, ref = fsdp_run
    for g in got:
        assert g[f"fsdp1_orig_{orig}"]["grad_norm"] == pytest.approx(ref["grad_norm"], rel=1e-5)
        assert g[f"fsdp1_orig_{orig}"]["update_ratio"] == pytest.approx(ref["update_ratio"], rel=1e-5)


@pytest.mark.parametrize("shape", ["2x1", "1x2"])
def test_a_2d_mesh_sums_over_its_shard_dimension_only(fsdp_run, shape):
    got, _ = fsdp_run
    r = [g[f"mesh_{shape}"] for g in got]
    assert [x["local"] for x in r] == ([[5, 3], [5, 3]] if shape == "2x1" else [[3, 3], [2, 3]])
    for x in r:
        assert x["grad_norm"] == pytest.approx([x["expected"]], rel=1e-6)


def test_sharded_replicated_and_plain_gradients_each_counted_once(fsdp_run):
    got, _ = fsdp_run
    assert [g["mix"]["local_a"] for g in got] == [[3, 3], [2, 3]]
    for g in got:
        assert g["mix"]["grad_norm"][0] == pytest.approx(g["mix"]["expected_grad_norm"], rel=1e-6)
        assert g["mix"]["update_ratio"] == pytest.approx([g["mix"]["expected_update_ratio"]], rel=1e-5)
