"""``trainproof watch --history``'s watcher: a shuffled-label log growing line by line is
warned once it trails the envelope of the experiment's healthy seeds; a cosine-restart log
is not; the ended run is judged whole against them and recorded."""

from __future__ import annotations

import pytest

from trainproof.api import read_runlog
from trainproof.history.record import summarize
from trainproof.history.store import open_store
from trainproof.live.watcher import Watcher
from trainproof.rules.engine import judge_runlog

from conftest import REPO

TORCH = REPO / "examples" / "gallery" / "torch"


@pytest.mark.slow
def test_a_watched_log_is_warned_when_it_trails_its_siblings(tmp_path, monkeypatch):
    # Every poll judges: the judging budget runs on the real clock, and on a loaded machine
    # a slow judgement would defer the next ones past this test's simulated minutes.
    from trainproof.live import guardian

    monkeypatch.setattr(guardian, "JUDGE_FREE_SECONDS", float("inf"))
    location = str(tmp_path / "history.db")
    with open_store(location) as store:
        for seed in range(3):
            path = TORCH / "healthy" / f"seed{seed}" / "metrics.jsonl"
            run = read_runlog(path)
            store.add(summarize(run, judge_runlog(run), experiment="torch", run=f"seed{seed}", source=str(path)))
    for config, behind in (("bad_labels", True), ("cosine_restarts", False)):
        lines = (TORCH / config / "seed0" / "metrics.jsonl").read_text().splitlines(keepends=True)
        log = tmp_path / config / "metrics.jsonl"
        log.parent.mkdir()
        log.write_text("")
        clock = [0.0]
        w = Watcher(log, history=location, experiment="torch", clock=lambda: clock[0])
        found = []
        for i in range(0, len(lines), 15):
            with open(log, "a") as f:
                f.writelines(lines[i : i + 15])
            clock[0] += 60.0
            w.poll()
            found += [f for f in (w.report.findings if w.report else []) if f.id == "TP-BEHIND-ENVELOPE"]
        assert bool(found) is behind, config
        final = w.record()
        assert ("TP-BEHIND-HISTORY" in final.ids()) is behind and final.history_error is None
