"""``preflight.run``: pure checks in, one Report out, mute applied the engine's way and the
configured thresholds handed to each check."""

from __future__ import annotations

import dataclasses

from trainproof.config import Config
from trainproof.findings import MUTED, Level, Skip
from trainproof.preflight import Check, Outcome, finding, run
from trainproof.rules.thresholds import DEFAULT


def _disk(th):
    return [finding("TP-ENV-DISK-INFO", f"free: threshold {th.env_disk_headroom_checkpoints}")]


def _gpu(th):
    return Outcome(skipped={"TP-ENV-GPU-INFO": Skip("no-gpu", "no GPU here")}, items=1, notes=["gpu probed"])


def _broken(th):
    return Outcome(error="cannot read x", items=0)


CHECKS = [Check(("TP-ENV-DISK-INFO",), _disk, "disk"), Check(("TP-ENV-GPU-INFO",), _gpu, "gpu")]


def test_run_merges_outcomes_in_order():
    rep = run(CHECKS, file="here", kind="env", meta={"cwd": "."}, notes=["first"])
    assert [f.id for f in rep.findings] == ["TP-ENV-DISK-INFO"]
    assert rep.ran == ["TP-ENV-DISK-INFO"]
    assert rep.skipped["TP-ENV-GPU-INFO"].reason == "no-gpu"
    assert rep.notes == ["first", "gpu probed"]
    assert rep.records == 1 and rep.format == "env" and rep.file == "here" and rep.meta == {"cwd": "."}
    assert rep.error is None


def test_run_hands_the_configured_thresholds_to_each_check():
    th = dataclasses.replace(DEFAULT, env_disk_headroom_checkpoints=DEFAULT.env_disk_headroom_checkpoints + 3)
    rep = run(CHECKS, Config(thresholds=th), file="here", kind="env")
    assert str(th.env_disk_headroom_checkpoints) in rep.findings[0].message
    assert str(th.env_disk_headroom_checkpoints) not in run(CHECKS, file="here", kind="env").findings[0].message


def test_a_check_whose_ids_are_all_muted_does_not_run_and_is_a_muted_skip():
    called = []

    def spy(th):
        called.append(th)
        return []

    rep = run([Check(("TP-ENV-GPU-INFO",), spy), CHECKS[0]], Config(mute={"TP-ENV-GPU-INFO"}), file=".", kind="env")
    assert called == []
    assert rep.skipped["TP-ENV-GPU-INFO"] == MUTED
    assert "TP-ENV-GPU-INFO" not in rep.ran


def test_a_muted_finding_is_dropped_and_its_family_listed_muted():
    rep = run(CHECKS, Config(mute={"TP-ENV-DISK-INFO", "TP-ENV-MEM-INFO"}), file=".", kind="env")
    assert rep.findings == [] and rep.ran == []
    # TP-ENV-MEM-INFO is of the env family though no check here could report it
    assert rep.skipped["TP-ENV-DISK-INFO"] == MUTED and rep.skipped["TP-ENV-MEM-INFO"] == MUTED
    # an id of another family is not this report's
    other = run(CHECKS, Config(mute={"TP-PRE-EMPTY-TEXT"}), file=".", kind="env")
    assert "TP-PRE-EMPTY-TEXT" not in other.skipped


def test_the_first_error_is_the_reports_and_later_checks_still_run():
    rep = run([Check((), _broken), *CHECKS], file="x", kind="env")
    assert rep.error == "cannot read x"
    assert rep.verdict is Level.NOT_CHECKED
    assert [f.id for f in rep.findings] == ["TP-ENV-DISK-INFO"]
