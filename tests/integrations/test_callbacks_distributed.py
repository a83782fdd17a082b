"""The framework callbacks under data parallelism: one process prints and alerts, every
process judges at the same records and stops at the same step.

The LiveRun they share is tested alone and across 2 gloo processes; the HF Trainer and
Lightning callbacks are tested in real 2-process CPU runs launched with torchrun
(tests/_distributed_runs.py), each process writing what it saw for the parent to compare.
"""

from __future__ import annotations

import io
import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trainproof.integrations._common import LiveRun
from trainproof.live import distributed
from trainproof.live.guardian import Guardian

HERE = Path(__file__).resolve().parents[1]
NAN = math.nan


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def always_affordable(monkeypatch) -> None:
    """Judge at the cadence asked for, whatever the first judgement cost in wall time."""
    monkeypatch.setattr(Guardian, "affordable", lambda self, now=None: True)


def nan_run(n: int = 30, nan_from: int = 12):
    """``(step, values)`` rows: a falling loss that is NaN from ``nan_from`` on."""
    return [(i, {"loss": NAN if i >= nan_from else 3.0 - 0.02 * i, "lr": 1e-3}) for i in range(1, n + 1)]


# --- one process --------------------------------------------------------------------------


@pytest.mark.parametrize("quiet", [False, True], ids=["main", "other_rank"])
def test_only_the_main_process_prints_and_alerts(monkeypatch, capsys, quiet):
    always_affordable(monkeypatch)
    alerts = []
    live = LiveRun("Test", "stop_on_fail", check_every=1, on_alert=alerts.append)
    live.start(max_steps=30, quiet=quiet)
    stops = [step for step, vals in nan_run() if live.record(step, vals)]
    live.finish()
    err = capsys.readouterr().err
    assert stops == [12] and live.stopped_at == 12  # every process stops, quiet or not
    if quiet:
        assert err == "" and alerts == []
    else:
        assert "TP-NAN" in {f.id for f in alerts}
        assert "trainproof: FAIL at step 12: TP-NAN:" in err and "stopped Test training at step 12" in err


@pytest.mark.slow
def test_tensors_are_read_at_check_points_not_at_every_record(monkeypatch):
    torch = pytest.importorskip("torch")
    always_affordable(monkeypatch)
    as_floats = LiveRun("Test", "stop_on_fail", check_every=5)
    as_tensors = LiveRun("Test", "stop_on_fail", check_every=5)
    for live in (as_floats, as_tensors):
        live.start(max_steps=30, quiet=True)
    w = torch.ones(1, requires_grad=True)
    seen = []
    for step, vals in nan_run():
        a = as_floats.record(step, vals)
        # a loss that is still part of an autograd graph, as a training step has it
        b = as_tensors.record(step, {"loss": torch.tensor(vals["loss"]) * w, "lr": vals["lr"]})
        assert a == b
        seen.append(as_tensors.guardian.records)
        if as_tensors._pending:  # kept without its graph
            assert not as_tensors._pending[-1][1]["loss"].requires_grad
    # nothing read (no wait for the device) between check points: the rows arrive in fives
    assert seen[:10] == [0, 0, 0, 0, 5, 5, 5, 5, 5, 10]
    assert as_floats.stopped_at == as_tensors.stopped_at == 15  # the first check point after the NaN
    as_floats.finish(), as_tensors.finish()
    assert as_tensors.guardian.records == as_floats.guardian.records == 30
    a, b = as_floats.guardian.runlog().series, as_tensors.guardian.runlog().series
    assert list(a["loss"].steps) == list(b["loss"].steps)
    assert a["loss"].values.tolist() == pytest.approx(b["loss"].values.tolist(), nan_ok=True, rel=1e-6)
    assert as_floats.report.ids() == as_tensors.report.ids()


def test_pending_tensors_are_bounded(monkeypatch):
    torch = pytest.importorskip("torch")
    from trainproof.integrations import _common

    monkeypatch.setattr(_common, "PENDING_MAX", 8)
    live = LiveRun("Test", check_every=10**9)
    live.start(quiet=True)
    for i in range(1, 21):
        live.record(i, {"loss": torch.tensor(1.0 / i)})
    assert live.guardian.records == 16 and len(live._pending) == 4
    assert live.finish() is not None and live.guardian.records == 20


def test_a_gradient_norm_finding_names_who_computed_the_norm(monkeypatch, capsys):
    always_affordable(monkeypatch)
    alerts = []
    live = LiveRun("HF Trainer", "warn", on_alert=alerts.append, grad_norm_source="the HF Trainer")
    live.start(max_steps=100)
    for i in range(1, 41):
        live.record(i, {"loss": 3.0 - 0.01 * i, "grad_norm": NAN if i > 20 else 1.0})
    rep = live.finish()
    err = capsys.readouterr().err
    note = "(gradient norm as reported by the HF Trainer)"
    grad = next(f for f in alerts if f.id == "TP-NAN-GRAD")
    assert grad.evidence.endswith(" " + note)
    assert "TP-NAN-GRAD: gradient norm is non-finite from step 21" in err
    assert err.count(note) == len(alerts)  # every alert here is about the norm
    # The report keeps the rule's own words; only what is announced says where the norm came from.
    assert note not in next(f for f in rep.findings if f.id == "TP-NAN-GRAD").evidence


def test_a_finding_without_the_gradient_norm_has_no_note(monkeypatch):
    always_affordable(monkeypatch)
    alerts = []
    live = LiveRun("HF Trainer", "warn", on_alert=alerts.append, grad_norm_source="the HF Trainer")
    live.start(max_steps=30, quiet=False)
    for step, vals in nan_run():
        live.record(step, vals)
    assert "TP-NAN" in {f.id for f in alerts}
    assert not any("gradient norm as reported" in f.evidence for f in alerts)


# --- two processes, LiveRun alone -----------------------------------------------------------


def _two_liveruns(rank: int, port: int, out: str) -> None:
    import torch.distributed as dist

    from trainproof.integrations import _common

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    real_any = distributed.any_rank
    got = {}
    for policy in ("stop_on_fail", "warn"):
        calls = {"collectives": 0, "asked": 0}

        def counted(flag: bool, calls=calls) -> bool:
            calls["collectives"] += 1
            return real_any(flag)

        def uneven(self, now=None, calls=calls) -> bool:
            # rank 0 can always afford a judgement, rank 1 every other time it is asked
            calls["asked"] += 1
            return rank == 0 or calls["asked"] % 2 == 0

        distributed.any_rank = counted  # all_ranks goes through it too
        Guardian.affordable = uneven
        err = io.StringIO()
        sys.stderr = err
        alerts = []
        judged = []
        live = _common.LiveRun("Test", policy, check_every=3, on_alert=lambda f: alerts.append(f.id))
        check = live.check
        live.check = lambda: judged.append(live._last_step) or check()
        live.start(max_steps=60, quiet=rank != 0)
        # Only rank 1 sees the NaN (its shard of the data); rank 0's loss stays finite.
        stopped = None
        for step, vals in nan_run(60, nan_from=20 if rank == 1 else 10**9):
            if live.record(step, vals):
                stopped = step
                break
        live.finish()
        sys.stderr = sys.__stderr__
        got[policy] = {"stopped": stopped, "judged": judged, "alerts": alerts, "err": err.getvalue(), **calls}
    dist.barrier()
    dist.destroy_process_group()
    Path(f"{out}.{rank}").write_text(json.dumps(got))


@pytest.mark.slow
def test_two_processes_agree_where_to_judge_and_where_to_stop(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.distributed.is_available():
        pytest.skip("this torch is built without torch.distributed")
    import torch.multiprocessing as mp

    out = str(tmp_path / "live")
    procs = mp.spawn(_two_liveruns, args=(free_port(), out), nprocs=2, join=False)
    deadline = time.monotonic() + 180
    while not procs.join(timeout=1):  # raises when a process failed
        if time.monotonic() > deadline:  # a process waiting for the other: fail, don't block
            for p in procs.processes:
                p.kill()
            pytest.fail("the 2 LiveRun processes did not finish in 180 s")
    r0, r1 = (json.loads(Path(f"{out}.{r}").read_text())["stop_on_fail"] for r in (0, 1))
    # the same records judged everywhere, though rank 1 could afford only every other one
    assert r0["judged"] == r1["judged"] and r0["judged"][:2] == [6, 12]
    assert r0["stopped"] == r1["stopped"] and r0["stopped"] >= 20
    assert r0["stopped"] == r0["judged"][-1]
    # rank 1 found the FAIL, rank 0 (the one that prints) says the run stopped for it
    assert r1["err"] == "" and r1["alerts"] == []
    assert r0["alerts"] == []
    assert r0["err"].startswith(f"trainproof: stop_on_fail stopped Test training at step {r0['stopped']} of 60")
    assert r0["err"].rstrip().endswith("A FAIL was found in another process of this distributed run.")
    # collectives only at check points (one per 3 records): one to agree affordability,
    # one more to agree the stop where they judged
    points = r0["stopped"] // 3
    assert r0["collectives"] == r1["collectives"] == points + len(r0["judged"])
    # warn: no stop to agree, so one collective per check point; rank 1 alone saw the
    # NaN and keeps quiet, rank 0 has nothing to say
    w0, w1 = (json.loads(Path(f"{out}.{r}").read_text())["warn"] for r in (0, 1))
    assert w0["stopped"] is w1["stopped"] is None
    assert w0["judged"] == w1["judged"] == list(range(6, 61, 6))
    assert w0["collectives"] == w1["collectives"] == 60 // 3
    assert w0["err"] == w1["err"] == "" and w0["alerts"] == w1["alerts"] == []


# --- two processes, real trainers -------------------------------------------------------------


def launch(framework: str, out: Path, timeout: float = 240) -> dict[str, list[dict]]:
    """Run tests/_distributed_runs.py in 2 torchrun processes; ``{run: [rank 0, rank 1]}``.
    A hang fails the test at ``timeout`` seconds instead of blocking it."""
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS="1", KERAS_BACKEND="torch", TOKENIZERS_PARALLELISM="false")
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node=2",
        "--master_addr=127.0.0.1",
        f"--master_port={free_port()}",
        str(HERE / "_distributed_runs.py"),
        framework,
        str(out),
    ]
    # Output to a file, not a pipe: a hung worker then cannot block reading it. The
    # workers run in sessions of their own and write their pids, so a hang kills them too.
    with open(out / "launcher.log", "w", encoding="utf-8") as log:
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            for f in out.glob("pid.*"):
                try:
                    os.kill(int(f.read_text()), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
            p.kill()
            p.wait()
            pytest.fail(
                f"the 2-process {framework} run did not finish in {timeout:.0f} s (a process waiting for the other?)"
            )
    errs = "".join((out / f"err.{r}").read_text() for r in (0, 1) if (out / f"err.{r}").exists())
    assert p.returncode == 0, ((out / "launcher.log").read_text()[-3000:], errs[-3000:])
    runs: dict[str, list[dict]] = {}
    for f in sorted(out.glob("*.json")):
        run, rank, _ = f.name.split(".")
        runs.setdefault(run, [None, None])[int(rank)] = json.loads(f.read_text())
    return runs


def assert_stopped_together(runs, run: str, framework: str, max_steps: int) -> None:
    r0, r1 = runs[run]
    assert r0["ended"] == r1["ended"] == r0["stopped_at"] == r1["stopped_at"] < max_steps
    assert r0["judged"] == r1["judged"]
    stopped = r0["ended"]
    assert any(
        line.startswith(f"trainproof: stop_on_fail stopped {framework} training at step {stopped} of {max_steps}")
        for line in r0["printed"]
    ), r0["printed"]
    assert r0["fails"] and set(r0["fails"]) <= set(r0["alerts"])
    assert r1["printed"] == [] and r1["alerts"] == []  # rank 1 judged (and stopped) in silence


def assert_healthy(runs, run: str, max_steps: int) -> None:
    for r in runs[run]:
        assert r["ended"] == max_steps and r["stopped_at"] is None
        assert r["printed"] == [] and r["alerts"] == [] and r["fails"] == []
    assert runs[run][0]["judged"] == runs[run][1]["judged"]


@pytest.mark.slow
def test_hf_trainer_ddp_stops_every_process_at_the_same_step(tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    torch = pytest.importorskip("torch")
    if not torch.distributed.is_available():
        pytest.skip("this torch is built without torch.distributed")
    runs = launch("hf", tmp_path / "hf")
    assert_stopped_together(runs, "broken", "HF Trainer", 40)
    assert "TP-DIVERGE" in runs["broken"][0]["fails"] and "TP-DIVERGE" in runs["broken"][1]["fails"]
    assert_healthy(runs, "healthy", 40)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:`isinstance\\(treespec, LeafSpec\\)` is deprecated")
def test_lightning_ddp_stops_every_process_at_the_same_step(tmp_path):
    pytest.importorskip("lightning.pytorch")
    torch = pytest.importorskip("torch")
    if not torch.distributed.is_available():
        pytest.skip("this torch is built without torch.distributed")
    runs = launch("lightning", tmp_path / "lightning")
    assert_stopped_together(runs, "broken", "Lightning", 40)
    assert "TP-NAN" in runs["broken"][0]["fails"]
    assert_healthy(runs, "healthy", 40)
    # Guardian.affordable differing per process (rank 1 every other time): the processes
    # still judge at the same records, stop at the same step, and none waits forever.
    assert_stopped_together(runs, "uneven", "Lightning", 40)
