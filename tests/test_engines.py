"""`doctor --engine dask|ray`: real local engines (a Dask LocalCluster, a local Ray) judge
the runs and the output is byte for byte the local one's, also for runs read from a
loopback S3 server. Each engine's tests skip when its package is absent."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys

import pytest

from trainproof.api import JudgeConfig, judge_runs
from trainproof.engines import EngineError, map_judge

from conftest import REPO, run_cli, run_subprocess, write_jsonl


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """Thirteen runs in five formats (each Coqui run written twice: its text log and its
    event file, one run) plus two files that are not logs."""
    root = tmp_path_factory.mktemp("engines") / "runs"
    for fw in ("hf", "lightning", "torch", "coqui"):
        for cfg in ("healthy", "lr_zero", "bad_labels"):
            shutil.copytree(REPO / "examples" / "gallery" / fw / cfg / "seed0", root / fw / cfg)
    shutil.copytree(REPO / "examples" / "gallery" / "keras" / "lr_hot" / "seed0", root / "keras" / "lr_hot")
    write_jsonl(root / "table" / "data.jsonl", [{"a": i, "b": i * 2} for i in range(20)])  # not a log
    (root / "notes.json").write_text('{"hello": 1}')
    return root


@pytest.fixture(scope="module")
def local_out(tree):
    """``doctor`` on the local process pool: text and JSON, the reference outputs."""
    return {fmt: run_cli("doctor", str(tree), *extra) for fmt, extra in (("json", ("--json",)), ("text", ()))}


def _same_as_local(local_out, tree, *engine_args):
    for fmt, extra in (("json", ("--json",)), ("text", ())):
        code, out, err, doc = run_cli("doctor", str(tree), *extra, *engine_args)
        lcode, lout, _, ldoc = local_out[fmt]
        assert (code, out) == (lcode, lout), err
        if doc is not None:
            assert len(doc["reports"]) == 13 and doc["ignored"]
            assert sum(1 for r in doc["reports"] if r.get("also")) >= 3  # the Coqui runs


# ------------------------------------------------------------------------------ Dask


@pytest.fixture(scope="module")
def s3(tree):
    """The same tree on a loopback S3 server, ``(url, local output of doctor --json)``;
    ``None`` when moto, boto3 or s3fs is absent."""
    from _s3_server import BUCKET, s3_server

    try:
        server = s3_server(tree)
        server.__enter__()
    except pytest.skip.Exception:
        yield None
        return
    url = f"s3://{BUCKET}/tree"
    try:
        yield url
    finally:
        server.__exit__(None, None, None)


def _same_as_local_s3(s3, tree, local_out, *engine_args):
    if s3 is None:
        pytest.skip("moto, boto3 or s3fs is absent")
    code, out, err, _ = run_cli("doctor", s3, "--json", *engine_args)
    assert (code, out) == (local_out["json"][0], local_out["json"][1].replace(str(tree), s3)), err


# ------------------------------------------------------------------------------ Dask


@pytest.fixture(scope="module")
def dask_cluster():
    pytest.importorskip("distributed")
    from dask.distributed import LocalCluster

    # Threads in this process, reached over TCP on loopback as a remote scheduler would be.
    cluster = LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=False,
        protocol="tcp",
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
    )
    yield cluster
    cluster.close()


@pytest.mark.slow
def test_dask_on_an_existing_cluster_gives_the_local_output(dask_cluster, tree, local_out):
    _same_as_local(local_out, tree, "--engine", "dask", "--address", dask_cluster.scheduler_address)


@pytest.mark.slow
def test_dask_starts_a_local_cluster_without_address(tree, local_out):
    pytest.importorskip("distributed")
    code, out, err, _ = run_cli("doctor", str(tree), "--json", "--engine", "dask", "--jobs", "1")
    assert (code, out) == local_out["json"][:2], err


@pytest.mark.slow
def test_dask_unreachable_scheduler_is_exit_2(dask_cluster):
    import dask

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        code, out, err, doc = run_cli(
            "doctor",
            str(REPO / "examples" / "lr_zero"),
            "--json",
            "--engine",
            "dask",
            "--address",
            f"tcp://127.0.0.1:{port}",
        )
    assert code == 2 and "Dask scheduler" in doc["error"]


@pytest.mark.slow
def test_dask_reads_runs_from_s3(dask_cluster, s3, tree, local_out):
    _same_as_local_s3(s3, tree, local_out, "--engine", "dask", "--address", dask_cluster.scheduler_address)


@pytest.mark.slow
def test_results_come_back_in_input_order(dask_cluster, tmp_path):
    # Sixty one-run tasks on two workers finish out of order; the output does not.
    paths = []
    for i in range(60):
        rows = [{"step": s, "loss": 1.0 / (s + 1) + i * 1e-3} for s in range(40)]
        paths.append(write_jsonl(tmp_path / f"r{i:02d}.jsonl", rows))
    results = list(map_judge("dask", paths, JudgeConfig(), judge=judge_runs, address=dask_cluster.scheduler_address))
    assert [reps[0].file for reps, _ in results] == [str(p) for p in paths]
    assert list(map_judge("dask", [], JudgeConfig(), judge=judge_runs, address=dask_cluster.scheduler_address)) == []


# ------------------------------------------------------------------------------- Ray
# Ray runs in processes of its own: a Ray that aborts (its C++ core exits the process on
# a failed internal check) fails a test here instead of ending the whole test session.

_RAY_HEAD = """
import logging, sys, ray
ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING,
         _node_ip_address="127.0.0.1")
print(ray.get_runtime_context().gcs_address, flush=True)
sys.stdin.read()  # until the test closes stdin
ray.shutdown()
"""

# Ray 2.x turns token authentication on for a cluster that ray.init() starts; every
# process of the test's clusters and clients shares this token (from the environment,
# so nothing is written to ~/.ray).
_RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}


@pytest.fixture(scope="module")
def ray_head(s3):
    """A local Ray cluster in a child process, as a user's existing cluster; its address.
    Started after the S3 server so that its workers inherit the server's endpoint."""
    pytest.importorskip("ray")
    env = dict(os.environ, **_RAY_ENV)
    head = subprocess.Popen(
        [sys.executable, "-c", _RAY_HEAD],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    address = head.stdout.readline().strip()
    if not address:
        head.kill()
        pytest.fail(f"Ray did not start: {head.stderr.read()[-2000:]}")
    try:
        yield address
    finally:
        head.stdin.close()
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            head.kill()


def _cli(*args: str):
    p = run_subprocess(*args, env=_RAY_ENV, timeout=300)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.slow
def test_ray_on_an_existing_cluster_gives_the_local_output(ray_head, tree, local_out):
    for fmt, extra in (("json", ("--json",)), ("text", ())):
        code, out, err = _cli("doctor", str(tree), *extra, "--engine", "ray", "--address", ray_head)
        assert (code, out) == local_out[fmt][:2], err


@pytest.mark.slow
def test_ray_starts_a_local_cluster_without_address(tree, local_out):
    pytest.importorskip("ray")
    code, out, err = _cli("doctor", str(tree), "--json", "--engine", "ray", "--jobs", "1")
    assert (code, out) == local_out["json"][:2], err


@pytest.mark.slow
def test_ray_reads_runs_from_s3(ray_head, s3, tree, local_out):
    if s3 is None:
        pytest.skip("moto, boto3 or s3fs is absent")
    code, out, err = _cli("doctor", s3, "--json", "--engine", "ray", "--address", ray_head)
    assert (code, out) == (local_out["json"][0], local_out["json"][1].replace(str(tree), s3)), err


_RAY_CONSUMERS = """
import itertools, sys
from trainproof.api import JudgeConfig, judge_runs
from trainproof.engines import map_judge
address, paths = sys.argv[1], sys.argv[2:]
for i in range(12):
    if i % 3 == 0:  # stops after the first result, with batches still in flight
        got = list(itertools.islice(map_judge("ray", paths, JudgeConfig(), judge=judge_runs, address=address), 1))
        assert len(got) == 1
    else:  # zip as doctor does: the generator is left suspended after the last result
        got = [r for _, r in zip(paths, map_judge("ray", paths, JudgeConfig(), judge=judge_runs, address=address))]
        assert [reps[0].file for reps, _ in got] == paths, got
print("ok")
"""


@pytest.mark.slow
def test_ray_consumers_that_stop_early_or_exactly_at_the_end(ray_head, tmp_path):
    # Regression: the last batch of a fully consumed run was ray.cancel-ed while it
    # completed, which aborted the driver ("Tried to complete task that was not pending").
    paths = []
    for i in range(24):
        rows = [{"step": s, "loss": 1.0 / (s + 1) + i * 1e-3} for s in range(30)]
        paths.append(str(write_jsonl(tmp_path / f"r{i:02d}.jsonl", rows)))
    p = subprocess.run(
        [sys.executable, "-c", _RAY_CONSUMERS, ray_head, *paths],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, **_RAY_ENV),
    )
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-3000:]


# ---------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "engine, module, extra", [("dask", "dask.distributed", "trainproof[dask]"), ("ray", "ray", "trainproof[ray]")]
)
def test_a_missing_engine_is_exit_2_naming_the_extra(monkeypatch, engine, module, extra):
    monkeypatch.setitem(sys.modules, module, None)  # `import` raises ImportError
    code, out, err, doc = run_cli("doctor", str(REPO / "examples" / "lr_zero"), "--json", "--engine", engine)
    assert code == 2 and extra in doc["error"] and not doc["reports"]
    code, out, err, _ = run_cli("doctor", str(REPO / "examples" / "lr_zero"), "--engine", engine)
    assert code == 2 and extra in err


def test_address_needs_an_engine():
    code, out, err, doc = run_cli("doctor", str(REPO / "examples" / "lr_zero"), "--json", "--address", "auto")
    assert code == 2 and "--engine" in doc["error"]


@pytest.mark.slow
def test_unknown_engine():
    with pytest.raises(EngineError, match="unknown engine"):
        map_judge("spark", [], JudgeConfig(), judge=judge_runs)


# ----------------------------------------------------------------------------- local


def _paths(tmp_path, n: int) -> list[str]:
    out = []
    for i in range(n):
        rows = [{"step": s, "loss": 1.0 / (s + 1) + i * 1e-3} for s in range(30)]
        out.append(str(write_jsonl(tmp_path / f"r{i:02d}.jsonl", rows)))
    return out


@pytest.mark.slow
def test_the_local_engine_judges_in_a_pool_in_input_order(tmp_path):
    paths = _paths(tmp_path, 9)  # at least the pool's minimum of 8 runs
    serial = map_judge("local", paths, JudgeConfig(charts=False), judge=judge_runs, workers=1)
    pooled = map_judge("local", paths, JudgeConfig(charts=False), judge=judge_runs, workers=2)
    try:
        assert type(pooled).__name__ == "_Pool"  # the process pool, not the in-process loop
        got = [(tuple(r.to_dict() for r in reps), skip) for reps, skip in pooled]
    finally:
        pooled.close()
    want = [(tuple(r.to_dict() for r in reps), skip) for reps, skip in serial]
    assert got == want and [reps[0]["file"] for reps, _ in got] == paths


def test_aborting_the_local_pool_ends_its_workers(tmp_path):

    paths = _paths(tmp_path, 16)
    # The pool's own worker processes: children of earlier tests (a Dask cluster's
    # processes winding down, or starting again) are not this pool's.
    results = map_judge("local", paths, JudgeConfig(charts=False), judge=judge_runs, workers=2)
    next(results)  # the workers are at work
    workers = list(results._pool._processes.values())
    assert workers and all(p.is_alive() for p in workers)
    results.abort()
    results.close()

    # Asked of the OS: a worker the executor's own thread reaped first keeps exitcode None
    # and is_alive() True in this process's Process object, though it is gone.
    def gone(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    assert all(gone(p.pid) for p in workers), [(p.pid, p.exitcode) for p in workers]
