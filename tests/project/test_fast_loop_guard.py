"""The fast loop's guard (``tests/_fast_loop_guard.py``) fails a test outside the slow set
that spends more CPU than it may, its own or its child processes', and leaves a test
marked slow alone. Real pytest processes on a small test file."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import REPO

_TESTS = """
import subprocess, sys, time
import pytest

def _burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass

def test_cheap():
    assert True

def test_burns_cpu():
    _burn(0.6)

@pytest.mark.slow
def test_burns_cpu_marked_slow():
    _burn(0.6)

def test_burns_cpu_in_a_child():
    code = "import time\\nend = time.process_time() + 0.6\\nwhile time.process_time() < end: pass"
    subprocess.run([sys.executable, "-c", code], check=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_the_guard_fails_what_spends_too_much_and_spares_the_slow_set(tmp_path, workers):
    """Serially and in pytest-xdist's workers alike; the timing lines count every test once
    (the reports reach the controller)."""
    (tmp_path / "test_guarded.py").write_text(_TESTS, encoding="utf-8")
    env = dict(
        os.environ, PYTHONPATH=str(REPO / "tests"), TRAINPROOF_FAST_TEST_CPU_S="0.4", TRAINPROOF_FAST_TEST_GUARD="1"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "_fast_loop_guard",
            "-p",
            "no:cacheprovider",
            *workers,
            "-rA",
            "-m",
            "not slow",
            "--rootdir",
            str(tmp_path),
            "-c",
            os.devnull,
            str(tmp_path / "test_guarded.py"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    out = proc.stdout
    assert "PASSED test_guarded.py::test_cheap" in out, out[-3000:]
    assert "FAILED test_guarded.py::test_burns_cpu " in out or "FAILED test_guarded.py::test_burns_cpu\n" in out, out[
        -3000:
    ]
    assert "FAILED test_guarded.py::test_burns_cpu_in_a_child" in out, out[-3000:]
    assert "test_burns_cpu_marked_slow" not in out.split("short test summary")[-1]
    assert "mark it @pytest.mark.slow" in out
    assert "timing: the 3 tests not marked slow took" in out
    assert "timing: 3 tests in" in out
    assert proc.returncode == 1
