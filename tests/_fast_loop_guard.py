"""The fast loop's guard: a pytest plugin (loaded by ``tests/conftest.py``; ``-p
_fast_loop_guard`` with ``tests/`` on the path loads it alone).

`pytest -m "not slow"` is the inner loop (CONTRIBUTING.md: under a minute on 2 cores).
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

_cpu_spent: dict[str, float] = {}
_fast_wall = [0.0, 0]
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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    if not _torch_warmed[0] and "torch" in getattr(item.module, "__dict__", {}):
        _torch_warmed[0] = True
        _warm_torch()
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
        _fast_wall[0] += report.duration
        _fast_wall[1] += report.when == "call"
        spent = _cpu_spent.get(item.nodeid, 0.0)
        if report.when == "call" and report.passed and FAST_TEST_CPU_S > 0 and spent > FAST_TEST_CPU_S:
            report.outcome = "failed"
            report.longrepr = (
                f"{item.nodeid} used {spent:.2f} s of CPU (setup and call, children included), over the "
                f"{FAST_TEST_CPU_S:.1f} s a test outside the slow set may use (tests/conftest.py, "
                "FAST_TEST_CPU_S): make it cheaper or mark it @pytest.mark.slow"
            )
    return report


def pytest_terminal_summary(terminalreporter, config):
    if _guarding(config) and _fast_wall[1]:
        terminalreporter.write_line(
            f"fast loop: {_fast_wall[1]} tests not marked slow ran in {_fast_wall[0]:.1f} s "
            f"(setup and call; the budget is {FAST_LOOP_BUDGET_S:.0f} s on 2 cores for the whole run)"
        )
