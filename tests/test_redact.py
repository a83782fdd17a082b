"""Credentials never reach an output (trainproof.redact), and never travel past a redirect.

A tracking server on 127.0.0.1 plays MLflow's API and echoes what it received: the
``Authorization`` header, raw, decoded and URL-encoded, in run names, experiment names,
metric keys, error bodies and HTTP reason phrases. No form of a secret may appear in the
text report, ``--json``, SARIF, HTML, stderr, or the GitHub Action's log, summary and
outputs. A second server stands behind a redirect: it must receive nothing.
"""

from __future__ import annotations

import base64
import json
import math
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, quote_plus, urlsplit

import pytest

from trainproof import redact
from trainproof.findings import Finding, Level, Report

from conftest import run_cli

USER = "ana"
# Characters that base64, percent-encoding and JSON each write differently.
PASSWORD = "pw/8d2e+5b10 do-not-print"
TOKEN = "tok-3f9a1c77+do/not=print"


def forms(secret: str, user: str | None = None) -> list[str]:
    """The ways a secret can come back from a server that echoes what it got, written out
    here (not taken from the code under test)."""
    out = [secret, quote(secret, safe=""), quote(secret), quote_plus(secret), quote(secret, safe="").lower()]
    out += [base64.b64encode(secret.encode()).decode(), base64.urlsafe_b64encode(secret.encode()).decode()]
    if user is not None:
        basic = base64.b64encode(f"{user}:{secret}".encode()).decode()
        out += [basic, basic.rstrip("="), base64.urlsafe_b64encode(f"{user}:{secret}".encode()).decode()]
    return out


ALL_FORMS = forms(PASSWORD, USER) + forms(TOKEN)


def assert_no_secret(where: str, text: str) -> None:
    for f in ALL_FORMS:
        assert f not in text, f"{where} holds {f!r}"


# --------------------------------------------------------------------------- servers


class Server:
    """An HTTP server on 127.0.0.1 in a thread; ``answer(handler, path, query)`` returns
    ``(status, reason, headers, body)``; every request is recorded (path, headers)."""

    def __init__(self, answer):
        self.requests: list[tuple[str, dict]] = []
        srv = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                srv.requests.append((self.path, dict(self.headers)))
                u = urlsplit(self.path)
                status, reason, headers, data = answer(self, u.path, parse_qs(u.query), body)
                self.send_response(status, reason)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _serve

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        # a short poll: shutdown() waits for the loop's next look at its flag
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def _received(handler) -> tuple[str, str]:
    """The Authorization header the server got, and the secret inside it (decoded)."""
    auth = handler.headers.get("Authorization") or ""
    kind, _, value = auth.partition(" ")
    if kind == "Basic":
        value = base64.b64decode(value).decode().partition(":")[2]
    return auth, value


def echoing_api(handler, path, query, body):
    """MLflow's API, answering with names built from the credentials it received: run and
    experiment names, metric keys; the second run's history fails with an error that
    echoes them in its body and its reason phrase."""
    auth, secret = _received(handler)
    enc = quote(secret, safe="")
    keys = ["loss", f"acc {secret}", f"k_{auth}", f"q_{enc}"]

    def run(rid, name):
        return {
            "info": {"run_id": rid, "run_name": name, "experiment_id": "7", "start_time": 1_700_000_000_000},
            "data": {
                "metrics": [{"key": k, "value": 0.1, "step": 1} for k in keys],
                "tags": [{"key": "note", "value": auth}],
            },
        }

    runs = {"r1": run("r1", f"run {auth} {secret}"), "r2": run("r2", f"broken {enc}")}

    def ok(doc):
        return 200, "OK", {"Content-Type": "application/json"}, json.dumps(doc).encode()

    if path.endswith("/experiments/search"):
        return ok({"experiments": [{"experiment_id": "7", "name": f"exp {auth}"}]})
    if path.endswith("/experiments/get"):
        return ok({"experiment": {"experiment_id": "7", "name": f"exp {secret} {auth}"}})
    if path.endswith("/runs/search"):
        return ok({"runs": list(runs.values())})
    if path.endswith("/runs/get"):
        return ok({"run": runs[query["run_id"][0]]})
    if path.endswith("/metrics/get-history"):
        rid, key = query["run_id"][0], query["metric_key"][0]
        if rid == "r2":
            err = {"error_code": "INTERNAL_ERROR", "message": f"cannot serve {key} for {auth} ({secret}, {enc})"}
            return 500, f"no {auth}", {"Content-Type": "application/json"}, json.dumps(err).encode()
        # a loss that goes NaN: a FAIL, so the run's findings are printed in full
        pts = [{"key": key, "value": "NaN" if s >= 40 else 2.0 / (s + 1), "timestamp": s, "step": s} for s in range(60)]
        return ok({"metrics": pts})
    return 404, "Not Found", {"Content-Type": "application/json"}, b'{"error_code": "ENDPOINT_NOT_FOUND"}'


@pytest.fixture
def clean_env(monkeypatch):
    for k in (*redact.SECRET_VARIABLES, redact.USER_VARIABLE, "MLFLOW_HTTP_REQUEST_TIMEOUT"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    return monkeypatch


def _credentials(env, kind: str) -> str:
    """Configure Basic (user and password) or Bearer (token); returns the header sent."""
    if kind == "basic":
        env.setenv("MLFLOW_TRACKING_USERNAME", USER)
        env.setenv("MLFLOW_TRACKING_PASSWORD", PASSWORD)
        return "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    env.setenv("MLFLOW_TRACKING_TOKEN", TOKEN)
    return f"Bearer {TOKEN}"


# --------------------------------------------------------------------------- the tests


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["basic", "bearer"])
def test_an_echoing_server_gets_no_secret_into_any_output(clean_env, tmp_path, kind):
    sent = _credentials(clean_env, kind)
    sarif, html = tmp_path / "out.sarif", tmp_path / "out.html"
    with Server(echoing_api) as srv:
        code, out, err, doc = run_cli("doctor", srv.url, "--json", "--sarif", str(sarif), "--html", str(html))
        runs = [run_cli("doctor", srv.url, *view) for view in ((), ("-v",), ("-q",))]
        judged = run_cli("judge", f"{srv.url}/#/experiments/7/runs/r1")
    # the server did get the credentials, and echoed them back in what it served
    assert srv.requests and all(h.get("Authorization") == sent for _, h in srv.requests)
    assert code == 1, err
    by_id = {r["file"].rsplit("/", 1)[1]: r for r in doc["reports"]}
    assert by_id["r1"]["verdict"] == "FAIL" and by_id["r2"]["verdict"] == "NOT-CHECKED"
    # the echoed names are there, masked: the run is still judged and named
    assert by_id["r1"]["meta"]["run"].startswith("run ***") and "HTTP 500 no ***" in by_id["r2"]["error"]
    assert sum("***" in k for k in by_id["r1"]["meta"]["metric_files"]) == 3
    assert_no_secret("--json", out)
    assert_no_secret("stderr", err)
    assert_no_secret("SARIF", sarif.read_text(encoding="utf-8"))
    assert_no_secret("HTML", html.read_text(encoding="utf-8"))
    for c, o, e, _ in [*runs, judged]:
        assert c == 1, e
        assert_no_secret("text report", o)
        assert_no_secret("stderr", e)
    assert "***" in runs[1][1]  # the full reports print the masked run name


def test_an_error_line_that_echoes_basic_auth_is_masked(clean_env):
    sent = _credentials(clean_env, "basic")

    def refuse(handler, path, query, body):
        auth, secret = _received(handler)
        msg = {"error_code": "INVALID_PARAMETER_VALUE", "message": f"got {auth} for {secret}"}
        return 400, f"bad {auth}", {"Content-Type": "application/json"}, json.dumps(msg).encode()

    with Server(refuse) as srv:
        code, out, err, _ = run_cli("doctor", srv.url)
        code2, out2, err2, doc = run_cli("doctor", srv.url, "--json")
    assert srv.requests and srv.requests[0][1].get("Authorization") == sent
    assert code == code2 == 2
    (line,) = err.strip().splitlines()
    assert "HTTP 400" in line and "INVALID_PARAMETER_VALUE" in line and "***" in line
    assert doc["error"] and "***" in doc["error"]
    for where, text in (("stdout", out + out2), ("stderr", err + err2)):
        assert_no_secret(where, text)


@pytest.mark.parametrize("status", [302, 307, 308])
@pytest.mark.parametrize("kind", ["basic", "bearer"])
def test_no_credential_follows_a_redirect_to_another_origin(clean_env, status, kind):
    _credentials(clean_env, kind)
    with Server(echoing_api) as target:

        def redirect(handler, path, query, body):
            return status, "Moved", {"Location": target.url + handler.path}, b""

        with Server(redirect) as first:
            code, out, err, _ = run_cli("doctor", first.url)
    assert first.requests, "the first server was never asked"
    assert code == 2 and "a redirect (not followed)" in err, err
    # nothing at all reached the redirect's target, so no credential did
    assert target.requests == []


def test_mask_is_one_function_for_every_form():
    env = {"MLFLOW_TRACKING_USERNAME": USER, "MLFLOW_TRACKING_PASSWORD": PASSWORD, "MLFLOW_TRACKING_TOKEN": TOKEN}
    text = " | ".join(ALL_FORMS + [f"Basic {base64.b64encode(f'{USER}:{PASSWORD}'.encode()).decode()}"])
    masked = redact.mask(text, env)
    for f in ALL_FORMS:
        assert f not in masked, f
    assert redact.mask("nothing to hide", env) == "nothing to hide"
    assert redact.mask(f"x {TOKEN} y", {}) == f"x {TOKEN} y"  # no credential configured
    # a short password is not masked alone (it would mask words), its Basic form is
    short = {"MLFLOW_TRACKING_USERNAME": USER, "MLFLOW_TRACKING_PASSWORD": "pw"}
    assert redact.mask("pw", short) == "pw"
    assert redact.mask(base64.b64encode(b"ana:pw").decode(), short) == redact.MASK


def test_scrub_masks_every_string_of_a_report_and_keeps_the_rest():
    env = {"MLFLOW_TRACKING_TOKEN": TOKEN}
    rep = Report(
        file=f"http://h/#/experiments/7/runs/{TOKEN}",
        format="mlflow",
        records=3,
        step_range=(0.0, 2.0),
        mapping={"loss": f"loss_{TOKEN}"},
        findings=[Finding("TP-NAN", Level.FAIL, f"m {TOKEN}", data={TOKEN: [1.0, math.nan]})],
        notes=[f"note {TOKEN}"],
        meta={"run": TOKEN, "n": 3},
    )
    out = redact.scrub([rep], env)[0]
    assert TOKEN not in repr(out)
    assert out.findings[0].level is Level.FAIL and out.verdict is Level.FAIL
    assert out.step_range == (0.0, 2.0) and out.meta["n"] == 3 and out.records == 3
    assert redact.scrub(rep, {}) is rep


@pytest.mark.slow
def test_the_action_masks_what_an_echoing_server_sends(clean_env, tmp_path):
    """The GitHub Action's log, job summary and outputs, over the same echoing server."""
    _credentials(clean_env, "basic")
    out_file, summary = tmp_path / "out", tmp_path / "summary"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INPUT_", "GITHUB_"))}
    with Server(echoing_api) as srv:
        env.update(
            INPUT_PATH=srv.url,
            INPUT_HTML_FILE="r.html",
            INPUT_SARIF_FILE="r.sarif",
            GITHUB_OUTPUT=str(out_file),
            GITHUB_STEP_SUMMARY=str(summary),
            RUNNER_TEMP=str(tmp_path),
        )
        p = subprocess.run(
            [sys.executable, "-m", "trainproof.ci.github_action"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert p.returncode == 1, p.stdout + p.stderr
    assert p.stdout.count("\nFAIL ") == 1 and "TP-NAN" in p.stdout
    for where, text in (
        ("step log", p.stdout),
        ("step stderr", p.stderr),
        ("summary", summary.read_text()),
        ("outputs", out_file.read_text()),
        ("SARIF", (tmp_path / "r.sarif").read_text()),
        ("HTML", (tmp_path / "r.html").read_text()),
    ):
        assert_no_secret(where, text)
