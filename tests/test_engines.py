"""`doctor --engine dask|ray`: real local engines (a Dask LocalCluster, a local Ray) judge
the runs and the output is byte for byte the local one's, also for runs read from a
loopback S3 server. Each engine's tests skip when its package is absent."""
from __future__ import annotations

import shutil
import socket
import sys

import pytest
from conftest import REPO, run_cli, write_jsonl

from trainproof.api import JudgeConfig
from trainproof.engines import EngineError, map_judge


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """Fourteen runs in five formats plus two files that are not logs."""
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
    return {fmt: run_cli("doctor", str(tree), *extra) for fmt, extra in
            (("json", ("--json",)), ("text", ()))}


def _same_as_local(local_out, tree, *engine_args):
    for fmt, extra in (("json", ("--json",)), ("text", ())):
        code, out, err, doc = run_cli("doctor", str(tree), *extra, *engine_args)
        lcode, lout, _, ldoc = local_out[fmt]
        assert (code, out) == (lcode, lout), err
        if doc is not None:
            assert len(doc["reports"]) >= 14 and doc["ignored"]


# ------------------------------------------------------------------------------ Dask


@pytest.fixture(scope="module")
def s3(tree):
    """The same tree on a loopback S3 server, ``(url, local output of doctor --json)``;
    ``None`` when moto, boto3 or s3fs is absent."""
    from test_remote import BUCKET, s3_server

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
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                           dashboard_address="127.0.0.1:0")
    yield cluster
    cluster.close()


def test_dask_on_an_existing_cluster_gives_the_local_output(dask_cluster, tree, local_out):
    _same_as_local(local_out, tree, "--engine", "dask", "--address", dask_cluster.scheduler_address)


def test_dask_starts_a_local_cluster_without_address(tree, local_out):
    pytest.importorskip("distributed")
    code, out, err, _ = run_cli("doctor", str(tree), "--json", "--engine", "dask", "--jobs", "1")
    assert (code, out) == local_out["json"][:2], err


def test_dask_unreachable_scheduler_is_exit_2(dask_cluster):
    import dask

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        code, out, err, doc = run_cli("doctor", str(REPO / "examples" / "lr_zero"), "--json", "--engine", "dask",
                                      "--address", f"tcp://127.0.0.1:{port}")
    assert code == 2 and "Dask scheduler" in doc["error"]


def test_dask_reads_runs_from_s3(dask_cluster, s3, tree, local_out):
    _same_as_local_s3(s3, tree, local_out, "--engine", "dask", "--address", dask_cluster.scheduler_address)


def test_results_come_back_in_input_order(dask_cluster, tmp_path):
    # Sixty one-run tasks on two workers finish out of order; the output does not.
    paths = []
    for i in range(60):
        rows = [{"step": s, "loss": 1.0 / (s + 1) + i * 1e-3} for s in range(40)]
        paths.append(write_jsonl(tmp_path / f"r{i:02d}.jsonl", rows))
    results = list(map_judge("dask", paths, JudgeConfig(), address=dask_cluster.scheduler_address))
    assert [r.file for r, _ in results] == [str(p) for p in paths]
    assert list(map_judge("dask", [], JudgeConfig(), address=dask_cluster.scheduler_address)) == []


# ------------------------------------------------------------------------------- Ray


@pytest.fixture(scope="module")
def ray_local(s3):
    """One local Ray for the module (it takes seconds to start), started after the S3
    server so that its worker processes inherit the server's endpoint."""
    ray = pytest.importorskip("ray")
    import logging

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAY_USAGE_STATS_ENABLED", "0")
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
        try:
            yield ray
        finally:
            ray.shutdown()


def test_ray_gives_the_local_output(ray_local, tree, local_out):
    _same_as_local(local_out, tree, "--engine", "ray")


def test_ray_reads_runs_from_s3(ray_local, s3, tree, local_out):
    _same_as_local_s3(s3, tree, local_out, "--engine", "ray")


# ---------------------------------------------------------------------------- errors


@pytest.mark.parametrize("engine, module, extra", [("dask", "dask.distributed", "trainproof[dask]"),
                                                   ("ray", "ray", "trainproof[ray]")])
def test_a_missing_engine_is_exit_2_naming_the_extra(monkeypatch, engine, module, extra):
    monkeypatch.setitem(sys.modules, module, None)  # `import` raises ImportError
    code, out, err, doc = run_cli("doctor", str(REPO / "examples" / "lr_zero"), "--json", "--engine", engine)
    assert code == 2 and extra in doc["error"] and not doc["reports"]
    code, out, err, _ = run_cli("doctor", str(REPO / "examples" / "lr_zero"), "--engine", engine)
    assert code == 2 and extra in err


def test_address_needs_an_engine():
    code, out, err, doc = run_cli("doctor", str(REPO / "examples" / "lr_zero"), "--json", "--address", "auto")
    assert code == 2 and "--engine" in doc["error"]


def test_unknown_engine():
    with pytest.raises(EngineError, match="unknown engine"):
        map_judge("spark", [], JudgeConfig())
