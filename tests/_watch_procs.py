"""``trainproof watch`` as a real child process, and waiting for what it prints."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

#: How long a live test waits for what it needs (a line, an exit): generous, for a loaded
#: 2-core machine running the suite in the background. Tests wait for events, never for
#: a fixed time, and assert no upper bound on elapsed time below this.
DEADLINE = 90.0


class WatchProc:
    """``python -m trainproof watch ARGS`` as a real process; stdout read line by line in a
    background thread."""

    def __init__(self, *args: str, cwd: Path) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.pop("TRAINPROOF_DEBUG", None)
        self.t0 = time.monotonic()
        self.p = subprocess.Popen(
            [sys.executable, "-m", "trainproof", "watch", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._q: queue.Queue = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.stderr = ""

    def _read(self) -> None:
        for line in self.p.stdout:
            self._q.put(line.rstrip("\n"))
        self._q.put(None)

    def _drain(self, timeout: float) -> bool:
        """Move queued lines to ``self.lines``; False once stdout is closed and drained."""
        try:
            item = self._q.get(timeout=timeout)
        except queue.Empty:
            return True
        while True:
            if item is None:
                self._q.put(None)
                return False
            self.lines.append(item)
            try:
                item = self._q.get_nowait()
            except queue.Empty:
                return True

    def wait_for(self, pred, timeout: float = DEADLINE, start: int = 0):
        """The first stdout line (from index ``start``) for which ``pred(line)`` is true."""
        deadline = time.monotonic() + timeout
        seen = start
        while True:
            for i in range(seen, len(self.lines)):
                if pred(self.lines[i]):
                    return self.lines[i]
            seen = max(seen, len(self.lines))
            left = deadline - time.monotonic()
            if left <= 0:
                break
            if not self._drain(min(left, 0.2)) and seen == len(self.lines):
                break
        self.kill()
        raise AssertionError(
            f"no matching line in {timeout:g} s; rc={self.p.returncode}; "
            f"stdout tail={self.lines[-5:]}; stderr={self.stderr[-2000:]}"
        )

    def wait_json(self, pred, timeout: float = DEADLINE) -> dict:
        line = self.wait_for(lambda s: s.startswith("{") and pred(json.loads(s)), timeout)
        return json.loads(line)

    def json_lines(self) -> list[dict]:
        return [json.loads(s) for s in self.lines if s.startswith("{")]

    def next_line(self, start: int, timeout: float = DEADLINE) -> str | None:
        """The stdout line at index ``start`` once printed; ``None`` if watch exits first."""
        deadline = time.monotonic() + timeout
        while len(self.lines) <= start:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise AssertionError(f"no line {start} in {timeout:g} s; stdout tail={self.lines[-5:]}")
            if not self._drain(min(left, 0.2)) and len(self.lines) <= start:
                return None
        return self.lines[start]

    def wait_until(self, pred, timeout: float = DEADLINE) -> dict | None:
        """The next JSON poll line (after those seen) for which ``pred`` holds; ``None`` if
        watch exits first."""
        i = len(self.lines)
        while (line := self.next_line(i, timeout)) is not None:
            if line.startswith("{") and pred(json.loads(line)):
                return json.loads(line)
            i += 1
        return None

    def wait_started(self, timeout: float = DEADLINE) -> None:
        """Wait until the process handles SIGTERM: ``main()`` has started (Linux /proc)."""
        wait_catches(self.p.pid, signal.SIGTERM, timeout)

    def sigint(self) -> None:
        self.p.send_signal(signal.SIGINT)

    def wait(self, timeout: float = DEADLINE) -> int:
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"watch did not exit in {timeout:g} s; stdout tail={self.lines[-5:]}")
        self._reader.join(10)
        while self._drain(0.01):
            pass
        self.stderr = self.p.stderr.read()
        return rc

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
        try:
            self.p.wait(10)
            self.stderr = self.p.stderr.read()
        except Exception:  # noqa: BLE001 - best effort in a failing test
            pass


@pytest.fixture
def procs():
    """Watch processes and writer threads started by a test; stopped whatever happens."""
    started: list = []
    yield started
    for x in started:
        if isinstance(x, WatchProc):
            x.kill()
        else:
            x.stop()


def wait_catches(pid: int, signum: int, timeout: float = DEADLINE) -> None:
    """Wait until process ``pid`` has a handler for ``signum`` (``SigCgt`` in
    /proc/PID/status): trainproof's ``main()`` has installed its handlers. Elsewhere, a
    second's grace."""
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        time.sleep(1.0)
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            caught = next(
                int(line.split()[1], 16) for line in status.read_text().splitlines() if line.startswith("SigCgt:")
            )
        except (OSError, StopIteration):
            return  # gone: the caller's wait says why
        if caught >> (signum - 1) & 1:
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} did not handle signal {signum} within {timeout:g} s")


def text_poll(line: str) -> dict | None:
    """Parse a text-mode poll line ``HH:MM:SS records=N verdict=V [new=..] [STALLED]``."""
    parts = line.split()
    if len(parts) < 3 or not parts[1].startswith("records="):
        return None
    return {"records": int(parts[1].split("=", 1)[1]), "verdict": parts[2].split("=", 1)[1]}
