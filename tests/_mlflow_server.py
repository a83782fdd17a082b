"""A real ``mlflow server`` for tests: SQLite backend in a temporary folder, loopback
only, on a free port; started by :func:`running_server` and always stopped by it."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

#: Environment a test's MLflow server and clients run with: no telemetry, no proxy for
#: loopback, the file store allowed (MLflow 3 keeps it behind this switch).
SERVER_ENV = {
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DO_NOT_TRACK": "true",
    "MLFLOW_ALLOW_FILE_STORE": "true",
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}

#: Seconds a server may take to answer /health on a loaded 2-core machine.
START_DEADLINE_S = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _health(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


@contextlib.contextmanager
def running_server(folder: Path, env: dict | None = None, prefix: str = "") -> Iterator[str]:
    """Run ``mlflow server`` with its store in ``folder`` and yield its URL
    (``http://127.0.0.1:<port>``, then ``prefix`` when it serves under a path prefix, the
    ``--static-prefix`` option) once it answers /health; stop its process group on exit.

    Raises:
        AssertionError: the server exited or did not answer within START_DEADLINE_S
            (with the end of its log).
    """
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}{prefix}"
    exe = Path(sys.executable).with_name("mlflow")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "mlflow"]
    run_env = {**os.environ, **SERVER_ENV, **(env or {})}
    run_env.pop("MLFLOW_TRACKING_URI", None)
    log_path = folder / "server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [
                *cmd,
                "server",
                "--backend-store-uri",
                f"sqlite:///{folder}/m.db",
                "--default-artifact-root",
                str(folder / "art"),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--workers",
                "1",
                *(["--static-prefix", prefix] if prefix else []),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=folder,
            env=run_env,
        )
        try:
            deadline = time.monotonic() + START_DEADLINE_S
            while not _health(url):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"mlflow server did not start: {log_path.read_text()[-2000:]}")
                time.sleep(0.25)  # polling /health: the server offers no event to wait on
            yield url
        finally:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)
