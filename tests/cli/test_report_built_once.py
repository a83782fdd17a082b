"""A report is built once: every step that adds to one (a comparison with a baseline,
doctor's folding and grouping, chart data, a live stall, a preflight mute) makes a new
report, and nothing changes a built report's fields, lists or mappings.

Shown two ways: :class:`~trainproof.findings.Report` is a frozen dataclass, and the main
paths (judge, doctor with a baseline and charts, compare, the commands with every report
file, the watcher through a stall, the preflight commands) run with every report's lists
and mappings made read-only as it is built, and print what they print without.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from trainproof import api
from trainproof.findings import Finding, Level, Report
from trainproof.live.watcher import Watcher

from conftest import REPO, healthy_rows, run_cli, write_jsonl

EX = REPO / "examples"


class _Mutated(AssertionError):
    pass


def _refuse(*_a, **_k):
    raise _Mutated("a report was changed after it was built")


class _ReadOnlyList(list):
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse


class _ReadOnlyDict(dict):
    update = pop = popitem = clear = setdefault = _refuse
    __setitem__ = __delitem__ = __ior__ = _refuse


def _read_only_from_now(monkeypatch) -> None:
    """Make every Report built from now on (until ``monkeypatch`` undoes it) hold read-only
    lists and mappings: a change after it is built raises :class:`_Mutated`."""
    built = Report.__init__

    def init(self, *args, **kwargs):
        built(self, *args, **kwargs)
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if type(v) is list:
                object.__setattr__(self, f.name, _ReadOnlyList(v))
            elif type(v) is dict:
                object.__setattr__(self, f.name, _ReadOnlyDict(v))

    monkeypatch.setattr(Report, "__init__", init)


@pytest.fixture
def read_only_reports(monkeypatch):
    """Every Report built in the test has read-only lists and mappings."""
    _read_only_from_now(monkeypatch)


def test_a_report_is_frozen():
    rep = Report(file="run.jsonl")
    with pytest.raises(dataclasses.FrozenInstanceError):
        rep.error = "changed"
    with pytest.raises(dataclasses.FrozenInstanceError):
        rep.findings = []


def test_the_read_only_fixture_catches_a_change(read_only_reports):
    rep = Report(file="run.jsonl", findings=[Finding("TP-X", Level.WARN, "x")])
    with pytest.raises(_Mutated):
        rep.findings.append(Finding("TP-Y", Level.WARN, "y"))
    with pytest.raises(_Mutated):
        rep.meta["k"] = 1
    # replace builds a new report, itself read-only
    new = dataclasses.replace(rep, notes=["a note"])
    assert new.notes == ["a note"] and rep.notes == []
    with pytest.raises(_Mutated):
        new.notes.append("another")


def _api_outputs(tmp_path) -> list:
    base = EX / "healthy" / "metrics.jsonl"
    out = [api.judge(EX / "diverge" / "metrics.jsonl").to_dict()]
    reports, ignored = api.doctor(EX, baseline=base, jobs=1, charts=True)
    out += [r.to_dict() for r in reports] + [ignored]
    assert all(r.charts for r in reports if r.error is None)
    base_report, compared = api.compare(base, [EX / "diverge" / "metrics.jsonl", EX / "lr_zero" / "metrics.jsonl"])
    out += [base_report.to_dict(), *(r.to_dict() for r in compared)]
    return out


def _cli_outputs(tmp_path) -> list:
    sarif, html = tmp_path / "r.sarif", tmp_path / "r.html"
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"text": f"sample {i % 7} of the set"}) + "\n" for i in range(30)) + "{bad\n")
    out = []
    for args in (
        ("dataset", str(data), "--json", "--mute", "TP-PRE-EMPTY-TEXT"),
        ("doctor", str(EX), "--jobs", "1", "--json", "--sarif", str(sarif), "--html", str(html)),
        ("compare", str(EX / "healthy" / "metrics.jsonl"), str(EX / "diverge" / "metrics.jsonl"), "--html", str(html)),
        ("epoch", str(EX / "lr_hot" / "metrics.jsonl"), "--json", "--mute", "TP-DIVERGE", "--sarif", str(sarif)),
        ("env", "--json", "--mute", "TP-ENV-DISK-INFO", "--checkpoint-gb", "0.001"),
        ("targets", "--num-classes", "10", "--ignore-index", "3", "--json"),
    ):
        sarif.unlink(missing_ok=True)
        code, stdout, _, _ = run_cli(*args)
        doc = json.loads(stdout) if stdout.startswith("{") else stdout
        if isinstance(doc, dict):  # what differs from run to run: the machine's free memory and disk
            for r in doc.get("reports", ()):
                for f in r["findings"]:
                    f["message"] = f["evidence"] = f["data"] = None
                r["meta"] = None
        out.append((code, doc, sarif.read_text() if sarif.exists() else None))
    return out


def _watch_outputs(tmp_path) -> list:
    log = write_jsonl(tmp_path / "run.jsonl", healthy_rows(60))
    now = [0.0]
    w = Watcher(log, stall_timeout=5.0, clock=lambda: now[0])
    out = [w.poll().verdict]
    now[0] = 10.0
    stalled = w.poll()
    out.append((stalled.stalled, stalled.report.ids()))
    with open(log, "a") as f:
        f.write(json.dumps({"step": 610, "loss": 0.5, "learning_rate": 1e-3}) + "\n")
    grown = w.poll()
    out.append((grown.stalled, grown.report.ids()))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("paths", [_api_outputs, _cli_outputs, _watch_outputs], ids=["api", "cli", "watch"])
def test_the_main_paths_never_change_a_built_report(tmp_path, monkeypatch, paths):
    monkeypatch.chdir(tmp_path)
    plain = paths(tmp_path)
    with monkeypatch.context() as m:
        _read_only_from_now(m)
        guarded = paths(tmp_path)
    assert guarded == plain
