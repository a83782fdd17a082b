"""The commands' and the monitor's names, and the former names kept as aliases
(CHANGELOG.md lists them): each old spelling runs the same command, and its output is the
output it gave before (the JSON document's ``command`` is the name typed)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from trainproof import cli as cli_mod

from conftest import REPO, run_cli

_LOG = str(REPO / "examples" / "lr_zero" / "metrics.jsonl")


@pytest.fixture
def dataset(tmp_path):
    p = tmp_path / "sft.jsonl"
    p.write_text('{"text": "a b c"}\n{"text": ""}\n{"text": "a b c"}\n')
    return str(p)


@pytest.fixture
def targets(tmp_path):
    p = tmp_path / "targets.npy"
    np.save(p, np.array([0, 1] * 300))
    return str(p)


def _cases(dataset, targets):
    return [
        ("judge", "epoch", [_LOG]),
        ("dataset", "preflight", [dataset]),
        ("targets", "objective", ["--num-classes", "3", "--targets", targets]),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("which", [0, 1, 2])
def test_old_names_run_the_same_command(dataset, targets, which):
    new, old, args = _cases(dataset, targets)[which]
    a = run_cli(new, *args, "--json")
    b = run_cli(old, *args, "--json")
    assert a[0] == b[0]  # the same exit code
    doc_a, doc_b = json.loads(a[1]), json.loads(b[1])
    assert doc_a["command"] == new and doc_b["command"] == old
    doc_a.pop("command"), doc_b.pop("command")
    assert doc_a == doc_b
    assert run_cli(new, *args)[1] == run_cli(old, *args)[1]  # and the same screen


def test_help_lists_the_new_names_and_names_the_old():
    code, out, _, _ = run_cli("--help")
    assert code == 0
    listed = [
        line.split()[0]
        for line in out.split("Commands:", 1)[1].splitlines()
        if line.startswith("  ") and not line.startswith("   ")
    ]
    for new, old in (("judge", "epoch"), ("dataset", "preflight"), ("targets", "objective")):
        assert new in listed and old not in listed
        assert f"{old} ({new})" in " ".join(out.split())
    assert set(cli_mod.ALIASES.values()) <= set(cli_mod.cli.list_commands(None))


def test_alias_help_is_the_commands_help():
    assert run_cli("epoch", "--help")[1].replace("epoch", "judge") == run_cli("judge", "--help")[1]


def test_the_monitor_is_trainproof_monitor_and_watch_is_its_old_name():
    import trainproof
    import trainproof.live.monitor  # the module: importing it must not shadow the function
    from trainproof.live.monitor import Monitor, monitor

    assert trainproof.monitor is trainproof.watch is monitor
    assert callable(trainproof.live.watch) and isinstance(trainproof.live.monitor, type(trainproof))
    assert Monitor.__name__ == "Monitor"
    assert "monitor" in trainproof.__all__ and "watch" in trainproof.__all__
