"""A real ``mlflow server`` for tests: SQLite backend in a temporary folder, loopback
only, on a free port; started by :func:`running_server` and always stopped by it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

#: Environment a test's MLflow server and clients run with: no telemetry, no proxy for
#: loopback, the file store allowed (MLflow 3 keeps it behind this switch), and no job
#: execution (MLflow 3's server otherwise starts a job runner and seven huey consumers,
#: each a Python importing MLflow: half a minute of CPU on 2 cores, for GenAI jobs that
#: reading runs never asks for).
SERVER_ENV = {
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
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


T0 = 1_700_000_000_000


class Fake:
    """A tiny HTTP server on 127.0.0.1: ``answer(handler, path, query, body)`` returns
    ``(status, content type, bytes)`` (or a list of byte chunks, sent 0.3 s apart until the
    test leaves the server); every request's headers are kept."""

    def __init__(self, answer):
        self.answer = answer
        self.headers: list[dict] = []
        self.release = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self):
                u = urlsplit(self.path)
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n)) if n else None
                fake.headers.append(dict(self.headers))
                status, ctype, data = fake.answer(fake, u.path, parse_qs(u.query), body)
                chunks = data if isinstance(data, list) else [data]
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(sum(len(c) for c in chunks)))
                self.end_headers()
                try:
                    for i, chunk in enumerate(chunks):
                        if i and fake.release.wait(0.3):
                            return
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except OSError:
                    pass

            do_GET = do_POST = _serve

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


RUN = {
    "info": {"run_id": "abc123", "run_name": "fake-run", "experiment_id": "7", "start_time": T0},
    "data": {"metrics": [{"key": "loss", "value": 0.2, "timestamp": T0, "step": 59}]},
}


def mlflow_api(fake, path, query, body):
    """Answers like the API, the history of ``loss`` in pages of 10 points."""
    ok = lambda doc: (200, "application/json", json.dumps(doc).encode())  # noqa: E731
    if path.endswith("/experiments/search"):
        return ok({"experiments": [{"experiment_id": "7", "name": "fake-exp"}]})
    if path.endswith("/runs/search"):
        return ok({"runs": [RUN]})
    if path.endswith("/runs/get"):
        return ok({"run": RUN})
    if path.endswith("/experiments/get"):
        return ok({"experiment": {"experiment_id": "7", "name": "fake-exp"}})
    if path.endswith("/metrics/get-history"):
        start = int(query.get("page_token", ["0"])[0])
        pts = [
            {"key": "loss", "value": "NaN" if s >= 40 else 2.0 / (s + 1), "timestamp": T0 + s, "step": s}
            for s in range(start, min(start + 10, 60))
        ]
        return ok({"metrics": pts, **({"next_page_token": str(start + 10)} if start + 10 < 60 else {})})
    return 404, "application/json", b'{"error_code": "ENDPOINT_NOT_FOUND", "message": "no"}'


@pytest.fixture
def clean_env(monkeypatch):
    for k in ("MLFLOW_TRACKING_TOKEN", "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_TIMEOUT", raising=False)
    return monkeypatch
