"""A URL is fetched within a size cap and an overall deadline (``TRAINPROOF_MAX_FETCH``,
``TRAINPROOF_FETCH_TIMEOUT``): a server on 127.0.0.1 that streams forever, or trickles a
byte at a time, ends the command with exit 2 and one line, not a full disk or a hang."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import healthy_rows, run_subprocess

pytest.importorskip("fsspec")
pytest.importorskip("aiohttp")  # fsspec's HTTP filesystem

HEALTHY = "".join(json.dumps(r) + "\n" for r in healthy_rows()).encode()
ROW = json.dumps({"step": 1, "loss": 0.5, "pad": "x" * 200}).encode() + b"\n"


class _Handler(BaseHTTPRequestHandler):
    stop: threading.Event

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.end_headers()

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path == "/healthy.jsonl":
            self.send_response(200)
            self.send_header("Content-Length", str(len(HEALTHY)))
            self.end_headers()
            self.wfile.write(HEALTHY)
            return
        self.send_response(200)
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            if path == "/forever.jsonl":
                block = ROW * 4096
                while not self.stop.is_set():
                    self.wfile.write(block)
            elif path == "/trickle.jsonl":
                for b in (ROW * 10_000)[:1_000_000]:
                    if self.stop.wait(0.02):
                        break
                    self.wfile.write(bytes([b]))
                    self.wfile.flush()
        except OSError:
            pass  # the client went away


@pytest.fixture
def server():
    stop = threading.Event()
    handler = type("Handler", (_Handler,), {"stop": stop})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        stop.set()
        srv.shutdown()
        srv.server_close()


def _judge(url: str, **env: str):
    t0 = time.monotonic()
    proc = run_subprocess("judge", url, "--json", env=env, timeout=120)
    return proc, time.monotonic() - t0


@pytest.mark.slow
def test_a_log_under_the_caps_is_fetched_and_judged(server):
    proc, _ = _judge(f"{server}/healthy.jsonl", TRAINPROOF_MAX_FETCH="1M", TRAINPROOF_FETCH_TIMEOUT="60")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["reports"][0]["verdict"] == "PASS"


@pytest.mark.slow
def test_a_server_that_streams_forever_stops_at_the_size_cap(server, tmp_path):
    proc, took = _judge(
        f"{server}/forever.jsonl", TRAINPROOF_MAX_FETCH="4M", TRAINPROOF_FETCH_TIMEOUT="100", TMPDIR=str(tmp_path)
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert "more than 4 MiB to fetch (TRAINPROOF_MAX_FETCH)" in doc["error"], doc["error"]
    assert "Traceback" not in proc.stderr
    assert took < 60
    assert not any(tmp_path.iterdir())  # the staging folder is gone


@pytest.mark.slow
def test_a_server_that_trickles_stops_at_the_deadline(server, tmp_path):
    proc, took = _judge(
        f"{server}/trickle.jsonl", TRAINPROOF_MAX_FETCH="1G", TRAINPROOF_FETCH_TIMEOUT="3", TMPDIR=str(tmp_path)
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert "not fetched within 3 s (TRAINPROOF_FETCH_TIMEOUT)" in doc["error"], doc["error"]
    assert "Traceback" not in proc.stderr
    # The deadline holds, with room for the interpreter's start on a loaded machine.
    assert took < 45


def test_bad_settings_are_one_line(monkeypatch):
    from trainproof.remote import RemoteError, fetch_timeout, max_fetch

    monkeypatch.setenv("TRAINPROOF_MAX_FETCH", "lots")
    with pytest.raises(RemoteError, match="TRAINPROOF_MAX_FETCH"):
        max_fetch()
    monkeypatch.setenv("TRAINPROOF_MAX_FETCH", "2M")
    assert max_fetch() == 2 << 20
    for bad in ("0", "-1", "nan", "inf", "soon"):
        monkeypatch.setenv("TRAINPROOF_FETCH_TIMEOUT", bad)
        with pytest.raises(RemoteError, match="TRAINPROOF_FETCH_TIMEOUT"):
            fetch_timeout()
    monkeypatch.setenv("TRAINPROOF_FETCH_TIMEOUT", "2.5")
    assert fetch_timeout() == 2.5
