"""trainproof.live.distributed: rank and agreement, alone and across 2 gloo processes."""

from __future__ import annotations

import pytest

from trainproof.live import distributed


def test_single_process_is_rank_zero_of_one(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    assert distributed.rank() == 0
    assert distributed.world_size() == 1
    assert distributed.is_main()
    assert distributed.any_rank(True) is True
    assert distributed.any_rank(False) is False
    assert distributed.all_ranks(True) is True


def test_launcher_rank_without_a_group_is_not_main(monkeypatch):
    monkeypatch.setenv("RANK", "1")
    assert distributed.rank() == 1
    assert not distributed.is_main()
    assert distributed.world_size() == 1  # no group: nothing to agree with
    monkeypatch.setenv("RANK", "not-a-number")
    assert distributed.rank() == 0


def _agree(rank: int, world: int, port: int, out: str) -> None:
    import json

    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        got = {
            "rank": distributed.rank(),
            "world": distributed.world_size(),
            "main": distributed.is_main(),
            "any_one": distributed.any_rank(rank == 1),
            "any_none": distributed.any_rank(False),
            "all_one": distributed.all_ranks(rank == 1),
            "all_every": distributed.all_ranks(True),
            "gathered": distributed.all_gather(None if rank == 0 else f"from {rank}"),
        }
    finally:
        dist.destroy_process_group()
    with open(f"{out}.{rank}", "w") as f:
        json.dump(got, f)


@pytest.mark.slow
def test_two_gloo_processes_agree(tmp_path):
    torch = pytest.importorskip("torch")
    import json
    import socket

    import torch.multiprocessing as mp

    if not torch.distributed.is_available():
        pytest.skip("this torch is built without torch.distributed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = str(tmp_path / "agree")
    mp.spawn(_agree, args=(2, port, out), nprocs=2, join=True)
    got = [json.loads((tmp_path / f"agree.{r}").read_text()) for r in (0, 1)]
    assert [g["rank"] for g in got] == [0, 1]
    assert [g["world"] for g in got] == [2, 2]
    assert [g["main"] for g in got] == [True, False]
    for g in got:
        assert g["any_one"] is True and g["any_none"] is False
        assert g["all_one"] is False and g["all_every"] is True
        assert g["gathered"] == [None, "from 1"]


def test_all_gather_alone_is_a_list_of_one(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    assert distributed.all_gather({"x": 1}) == [{"x": 1}]


@pytest.mark.slow
def test_asking_imports_no_torch():
    import subprocess
    import sys

    code = (
        "import sys; from trainproof.live import distributed as d\n"
        "print(d.rank(), d.world_size(), d.is_main(), d.any_rank(True), d.all_ranks(False), 'torch' in sys.modules)"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["0", "1", "True", "True", "False", "False"]
