"""A W&B run resumed with its id (``wandb.init(id=…, resume="allow")``) writes a folder per
session; trainproof reads them as one run (``formats.wandb.resumed_parts``) and doctor
lists it once. Runs written by the real client, offline."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import _wandb_runs as W
import pytest

from trainproof.api import doctor, read_runlogs
from trainproof.discover import walk
from trainproof.findings import Level

pytestmark = pytest.mark.slow

#: name -> the sessions, each a list of (step or None for W&B's own counter, loss)
_CHILD = textwrap.dedent(
    """
    import json, sys
    import wandb

    for rid, sessions in json.load(open(sys.argv[1])).items():
        for points in sessions:
            run = wandb.init(project="resume", id=rid, name=rid, resume="allow")
            for step, loss in points:
                if step is None:
                    wandb.log({"loss": loss})
                else:
                    wandb.log({"loss": loss}, step=step)
            run.finish()
    """
)


def _curve(n: int, noise: float = 0.01, seed: int = 0) -> list[float]:
    import math
    import random

    r = random.Random(seed)
    return [2.5 * math.exp(-i / 20) + 0.3 + r.gauss(0, noise) for i in range(n)]


def _sessions() -> dict[str, list[list[tuple[int | None, float]]]]:
    conv = _curve(600)
    nan = _curve(400, seed=1)
    over = _curve(400, seed=2)
    restart = _curve(300, seed=3)
    return {
        # converged by step ~100, killed at 200, resumed to 600: the second session alone is flat
        "converged": [[(i, conv[i]) for i in range(200)], [(i, conv[i]) for i in range(200, 600)]],
        # resumed from a checkpoint at step 150 after dying at 199: steps 150-199 logged again
        "overlap": [[(i, over[i]) for i in range(200)], [(i, over[i] * 1.001) for i in range(150, 400)]],
        # no step=: offline, W&B's own counter starts at 0 again in the second session
        "restart": [[(None, restart[i]) for i in range(150)], [(None, restart[i]) for i in range(150, 300)]],
        # NaN from step 300, in the second session
        "nan": [
            [(i, nan[i]) for i in range(200)],
            [(i, nan[i] if i < 300 else float("nan")) for i in range(200, 400)],
        ],
    }


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    pytest.importorskip("wandb")
    root = tmp_path_factory.mktemp("resume")
    spec = root / "sessions.json"
    spec.write_text(json.dumps(_sessions()))
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(spec)],
        env=W.env_for(root, tmp_path_factory.mktemp("wandb-home")),
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root


def _folders(root, rid):
    return sorted(p for p in (root / "wandb").iterdir() if p.name.endswith(rid) or f"-{rid}-" in p.name)


def test_each_resumed_run_is_one_run_of_all_its_sessions(project):
    runs = {}
    for rid, sessions in _sessions().items():
        parts = _folders(project, rid)
        assert len(parts) == 2, parts
        for part in parts:  # either folder reads the whole run
            (run,) = read_runlogs(part)
            runs[rid] = run
            assert any("resumed in 2 folders" in n for n in run.notes)
    assert list(runs["converged"].series["loss"].steps) == [float(i) for i in range(600)]
    assert runs["converged"].series["loss"].values[:200].tolist() == pytest.approx(_curve(600)[:200])
    # the overlap: the later session's writes of steps 150-199 win
    over = runs["overlap"].series["loss"]
    assert list(over.steps) == [float(i) for i in range(400)]
    assert over.values[160] == pytest.approx(_curve(400, seed=2)[160] * 1.001)
    # the restarted counter: the second session follows the first
    assert list(runs["restart"].series["loss"].steps) == [float(i) for i in range(300)]
    assert any("restarted W&B's step counter" in n for n in runs["restart"].notes)


def test_doctor_lists_a_resumed_run_once_and_judges_it_whole(project):
    found = [p for p in walk(project) if p.parent.name == "wandb"]
    assert len(found) == 4  # one folder per run id: the newest
    from trainproof.formats.wandb import part_order

    for rid in _sessions():
        newest = max(_folders(project, rid), key=lambda p: part_order(p, rid))
        assert newest in found, (rid, found)
    reports, _ = doctor(project)
    verdicts = {r.meta["run"]: r for r in reports}
    assert set(verdicts) == set(_sessions())
    # the converged tail alone would look like a run that never improved
    assert verdicts["converged"].verdict is not Level.FAIL, verdicts["converged"].findings
    assert verdicts["converged"].step_range == (0.0, 599.0)
    assert verdicts["overlap"].verdict is not Level.FAIL
    assert verdicts["restart"].verdict is not Level.FAIL
    assert verdicts["nan"].verdict is Level.FAIL and "TP-NAN" in {f.id for f in verdicts["nan"].findings}
