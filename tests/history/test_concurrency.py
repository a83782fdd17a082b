"""Many writers into one run history: eight ``doctor`` processes and two live monitors
record at once into one store (SQLite and PostgreSQL), and every record arrives whole,
once, with nothing corrupt."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from trainproof.history.store import open_store

from conftest import REPO, healthy_rows, write_jsonl

pytestmark = pytest.mark.slow

DOCTORS = 8
RUNS_EACH = 5
MONITORS = 2

#: A small raw PyTorch loop under the in-loop monitor, recording into the history given
#: as its first argument; prints the store's error, or "recorded".
MONITOR = textwrap.dedent("""
    import sys
    import torch
    import trainproof

    torch.manual_seed(int(sys.argv[2]))
    torch.set_num_threads(1)
    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    mon = trainproof.watch(model, opt, check_every=20, layers=False, history=sys.argv[1], experiment="live")
    x = torch.randn(64, 8)
    y = x @ torch.randn(8, 1)
    for step in range(1, 61):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        mon.log(step, loss)
    rep = mon.report(print_it=False)
    mon.close()
    print(rep.history_error or "recorded")
""")


def test_eight_doctors_and_two_monitors_lose_no_record_and_corrupt_nothing(tmp_path, store_location):
    pytest.importorskip("torch")
    expected = set()
    for d in range(DOCTORS):
        for j in range(RUNS_EACH):
            log = write_jsonl(tmp_path / f"tree{d}" / f"seed{j}" / "train.jsonl", healthy_rows(60, seed=10 * d + j))
            expected.add(log.as_posix())
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    cmd = [sys.executable, "-m", "trainproof"]
    procs = [
        subprocess.Popen(
            [*cmd, "doctor", str(tmp_path / f"tree{d}"), "--history", store_location, "--experiment", "sweep", "-q"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )  # fmt: skip
        for d in range(DOCTORS)
    ]
    procs += [
        subprocess.Popen(
            [sys.executable, "-c", MONITOR, store_location, str(m)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )  # fmt: skip
        for m in range(MONITORS)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, (out, err)
    assert [out.strip() for _, (out, _) in zip(range(MONITORS), outs[DOCTORS:])] == ["recorded"] * MONITORS

    with open_store(store_location, create=False) as st:
        assert st.count() == DOCTORS * RUNS_EACH + MONITORS
        sweep = st.runs("sweep")
        live = st.runs("live")
    assert sorted(r.source for r in sweep) == sorted(expected)  # each once
    assert all(len(r.curves["loss"]) == 60 and r.summary["points"] == 60 for r in sweep)
    assert len({r.source for r in live}) == MONITORS and all(len(r.curves["loss"]) == 60 for r in live)
    assert len({r.id for r in sweep + live}) == DOCTORS * RUNS_EACH + MONITORS
    if not store_location.startswith("postgresql://"):
        con = sqlite3.connect(store_location)
        assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert con.execute("SELECT COUNT(*) FROM trainproof_curves").fetchone()[0] == sum(
            len(r.curves) for r in sweep + live
        )
