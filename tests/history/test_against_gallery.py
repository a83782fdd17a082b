"""The run history's promise, end to end on the gallery, in an SQLite file and in a real
PostgreSQL server: an experiment's history built from the healthy seeds by
``doctor --history``; then ``compare --against best``, ``doctor --history`` and the live
monitor flag the shuffled-label runs, and leave the healthy seeds, the cosine-restart runs and the longer (converged) runs
of the same task silent."""

from __future__ import annotations

import pytest
from _postgres import STORE_KINDS, location_of

from trainproof.api import read_runlog
from trainproof.findings import Level

from conftest import REPO, one, run_cli

GALLERY = REPO / "examples" / "gallery"
FRAMEWORKS = ["torch", "hf"]
#: The log of a seed's folder that ``compare`` is given, by framework.
LOG = {"torch": "metrics.jsonl", "hf": "trainer_state.json"}


def doctor(location: str, framework: str, config: str):
    code, out, err, doc = run_cli(
        "doctor", str(GALLERY / framework / config), "--history", location, "--experiment", framework, "--json"
    )
    return code, doc["reports"]


def history_findings(report: dict) -> list[dict]:
    return [f for f in report["findings"] if f["source"] == "history"]


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_doctor_with_a_history_flags_shuffled_labels_and_leaves_healthy_runs_silent(store_location, framework):
    code, reports = doctor(store_location, framework, "healthy")
    assert code == 0 and len(reports) == 3
    for r in reports:  # the first two have too short a history; none is flagged
        assert "TP-BEHIND-HISTORY" not in [f["id"] for f in r["findings"]]
    code, reports = doctor(store_location, framework, "bad_labels")
    assert code == 0 and len(reports) == 3  # a WARN: the past cannot tell a broken run from a new configuration
    for r in reports:
        [f] = [f for f in history_findings(r) if f["id"] == "TP-BEHIND-HISTORY"]
        assert r["verdict"] == "WARN" and f["level"] == "WARN" and len(f["data"]["runs"]) == 3
    # --fail-on warn makes it decide the exit code (flagged runs are not references for later ones)
    code, out, err, doc = run_cli(
        "doctor",
        str(GALLERY / framework / "bad_labels"),
        "--history",
        store_location,
        "--experiment",
        framework,
        "--fail-on",
        "warn",
        "--json",
    )
    assert code == 1, [r["verdict"] for r in doc["reports"]]
    for config in ("cosine_restarts", "converged", "healthy"):
        code, reports = doctor(store_location, framework, config)
        assert code == 0, config
        for r in reports:
            assert [f["id"] for f in history_findings(r)] == ["TP-HISTORY-PASS"], (config, r["file"])


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_compare_against_the_best_recorded_run_flags_shuffled_labels_only(store_location, framework):
    assert doctor(store_location, framework, "healthy")[0] == 0
    for config, flagged in (("bad_labels", True), ("cosine_restarts", False), ("converged", False)):
        for seed in range(3):
            log = str(GALLERY / framework / config / f"seed{seed}" / LOG[framework])
            code, out, err, doc = run_cli(
                "compare", "--against", "best", "--history", store_location, "--experiment", framework, log, "--json"
            )
            [r] = [r for r in doc["reports"] if config in r["file"]]
            ids = [f["id"] for f in r["findings"]]
            if flagged:
                assert code == 1 and "TP-FLOOR-RATIO" in ids and "TP-BEHIND-HISTORY" in ids, (config, seed, ids)
            else:
                assert code == 0 and "TP-CMP-PASS" in ids and "TP-HISTORY-PASS" in ids, (config, seed, ids)


@pytest.mark.slow
@pytest.mark.parametrize("kind", STORE_KINDS)
def test_the_monitor_with_a_history_warns_while_a_shuffled_label_run_trains(kind, tmp_path, request, capsys):
    torch = pytest.importorskip("torch")
    from trainproof.live.monitor import Monitor

    location = location_of(kind, tmp_path, request)
    assert doctor(location, "torch", "healthy")[0] == 0
    capsys.readouterr()
    model = torch.nn.Linear(4, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for config, behind in (("bad_labels", True), ("cosine_restarts", False)):
        loss = read_runlog(GALLERY / "torch" / config / "seed0" / "metrics.jsonl").series["loss"]
        alerts = []
        mon = Monitor(model, opt, check_every=30, history=location, experiment="torch", on_alert=alerts.append)
        for s, v in zip(loss.steps, loss.values):
            mon.log(int(s), float(v))
        rep = mon.report(print_it=False)
        mon.close()
        found = [f for f in alerts if f.id == "TP-BEHIND-ENVELOPE"]
        assert bool(found) is behind, (config, [f.message for f in found])
        if behind:
            f = found[0]
            assert f.level is Level.WARN and f.step < 150 and f.data["margin"] > 0
            assert f"WARN at step {int(f.step)}: TP-BEHIND-ENVELOPE" in capsys.readouterr().err
            # the ended run, judged whole
            assert one(rep, "TP-BEHIND-HISTORY").level is Level.WARN
        else:
            assert "TP-BEHIND-HISTORY" not in rep.ids()
