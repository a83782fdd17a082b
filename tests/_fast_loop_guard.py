"""The fast loop's guard: a pytest plugin (loaded by ``tests/conftest.py``; ``-p
_fast_loop_guard`` with ``tests/`` on the path loads it alone).

`pytest -m "not slow" -n auto` is the inner loop (CONTRIBUTING.md: under a minute on 2
cores; the guard works the same in pytest-xdist's workers).
A test not marked slow may use at most FAST_TEST_CPU_S seconds of CPU, counted as this
process's CPU time plus that of the child processes it waited for, over its setup and
call (fixtures shared by a module or the session are paid once and charged to no test).
CPU time rather than wall time: it does not grow when the machine is loaded, so the
guard fails a test for what the test costs, never for what else the machine runs. A test
over the limit fails with its figure and is fixed or marked `@pytest.mark.slow`.
`TRAINPROOF_FAST_TEST_CPU_S=0` turns the guard off (a profiler, a debugger). It holds the
whole inner loop only: a run of chosen files is left alone (see :func:`_guarding`).
"""

from __future__ import annotations

import os
import time

import pytest

#: CPU seconds a test not marked slow may use: 10x the 0.1 s above which a test is marked
#: slow, so that the order tests run in (which decides who pays a first import) never
#: decides a failure.
FAST_TEST_CPU_S = float(os.environ.get("TRAINPROOF_FAST_TEST_CPU_S", "1.0"))
#: Wall seconds of the fast loop on 2 cores that CONTRIBUTING.md promises.
FAST_LOOP_BUDGET_S = 60.0
#: Wall seconds of the whole suite on CI's 2 cores that CONTRIBUTING.md promises.
SUITE_BUDGET_S = 15 * 60.0

_cpu_spent: dict[str, float] = {}
#: CPU seconds spent setting up fixtures shared by many tests (module, class, package or
#: session scope): paid once wherever the first test that asks for them runs, so charged
#: to no test.
_shared_setup = [0.0]
_torch_warmed = [False]


def _cpu_now() -> float:
    import resource

    own = time.process_time()
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own + kids.ru_utime + kids.ru_stime


def _warm_torch() -> None:
    """One tiny training step, so that torch's first-use cost (about 1.5 s of CPU: its
    optimizers' and autograd's lazy set-up) is paid once for the session rather than by
    whichever test of a torch module happens to run first."""
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    for opt in (torch.optim.Adam(model.parameters()), torch.optim.SGD(model.parameters(), lr=0.1)):
        model(torch.zeros(2, 4)).sum().backward()
        opt.step()
        opt.zero_grad()


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
    if fixturedef.scope == "function":
        return (yield)
    t0 = _cpu_now()
    try:
        return (yield)
    finally:
        _shared_setup[0] += _cpu_now() - t0


def pytest_collection_finish(session):
    # Collection imports every test module, torch among them wherever one does: its
    # first-use cost is paid here, in each process (pytest-xdist's workers collect too), so
    # that it is charged to no test whatever order the tests run in.
    import sys

    if "torch" in sys.modules and not _torch_warmed[0]:
        _torch_warmed[0] = True
        _warm_torch()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    t0, shared0 = _cpu_now(), _shared_setup[0]
    try:
        return (yield)
    finally:
        _cpu_spent[item.nodeid] = _cpu_now() - t0 - (_shared_setup[0] - shared0)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    t0 = _cpu_now()
    try:
        return (yield)
    finally:
        _cpu_spent[item.nodeid] = _cpu_spent.get(item.nodeid, 0.0) + _cpu_now() - t0


def _guarding(config) -> bool:
    """Whether this run is the inner loop the guard holds to its budget: ``pytest -m "not
    slow"`` over the test paths (``TRAINPROOF_FAST_TEST_GUARD=1`` forces it on). A run of
    chosen files is left alone: which of its tests pays the first import of a heavy library
    (tensorboard, torch) depends on what was chosen."""
    if os.environ.get("TRAINPROOF_FAST_TEST_GUARD") == "1":
        return True
    if config.getoption("markexpr", "") != "not slow":
        return False
    paths = {str(config.rootpath / p) for p in config.getini("testpaths")}
    return all(str(config.rootpath / a) in paths for a in config.args)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if not _guarding(item.config):
        return report
    if item.get_closest_marker("slow") is None and report.when in ("setup", "call"):
        spent = _cpu_spent.get(item.nodeid, 0.0)
        if report.when == "call" and report.passed and FAST_TEST_CPU_S > 0 and spent > FAST_TEST_CPU_S:
            report.outcome = "failed"
            report.longrepr = (
                f"{item.nodeid} used {spent:.2f} s of CPU (setup and call, children included), over the "
                f"{FAST_TEST_CPU_S:.1f} s a test outside the slow set may use (tests/conftest.py, "
                "FAST_TEST_CPU_S): make it cheaper or mark it @pytest.mark.slow"
            )
    return report


#: Seconds of setup and call per test, split by marker, summed where the reports arrive
#: (the controller under pytest-xdist): ``[slow seconds, slow tests, other seconds, other
#: tests]``. Printed after every run that ran tests, so that CI's log of the whole suite
#: shows what the fast loop's tests cost beside the suite's wall time.
_spent_by_kind = [0.0, 0, 0.0, 0]
_session_t0 = [time.monotonic()]


def pytest_sessionstart(session):
    _session_t0[0] = time.monotonic()


def pytest_runtest_logreport(report):
    if report.when not in ("setup", "call"):
        return
    slow = "slow" in report.keywords
    _spent_by_kind[0 if slow else 2] += report.duration
    if report.when == "call":
        _spent_by_kind[1 if slow else 3] += 1


def _timing_lines(config) -> list[str]:
    """The run's timing against the two budgets: wall time since the session started (what
    pytest's last line says too) and the test time of the tests outside the slow set (the
    fast loop's tests; run alone they add only start-up and collection)."""
    wall = time.monotonic() - _session_t0[0]
    slow_s, slow_n, fast_s, fast_n = _spent_by_kind
    workers = getattr(config.option, "numprocesses", None) or 1
    lines = [
        f"timing: {slow_n + fast_n} tests in {wall:.0f} s wall on {workers} worker(s), "
        f"{slow_s + fast_s:.0f} s in tests (setup and call); the whole suite's budget is "
        f"{SUITE_BUDGET_S / 60:.0f} min on CI's 2 cores",
        f"timing: the {fast_n} tests not marked slow took {fast_s:.1f} s (setup and call); "
        f"the fast loop's budget is {FAST_LOOP_BUDGET_S:.0f} s wall on 2 cores, start-up included",
    ]
    return lines


def pytest_terminal_summary(terminalreporter, config):
    if _spent_by_kind[1] + _spent_by_kind[3]:
        for line in _timing_lines(config):
            terminalreporter.write_line(line)
