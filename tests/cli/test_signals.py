"""SIGTERM is Ctrl-C, for every command: the last verdict (``watch``) or exit 2, and a
report file is absent or whole, never partial; SIGINT stops a ``watch`` started as a
script's background job (SIGINT inherited as ignored).

Real processes and real signals; each test waits for what it needs (a line, the
process's handlers, its exit) with a generous deadline.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _watch_procs import DEADLINE, WatchProc, text_poll, wait_catches

from trainproof import _files
from trainproof import cli as cli_mod

from conftest import healthy_rows, write_jsonl

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def nan_rows(n: int = 60) -> list[dict]:
    """A loss that turns NaN at record 30: FAIL (TP-NAN)."""
    return [
        {"step": 10 * i, "loss": 2.0 * 0.99**i if i < 30 else math.nan, "learning_rate": 1e-4} for i in range(1, n + 1)
    ]


def assert_whole_or_absent(sarif: Path | None = None, html: Path | None = None, js: str | None = None) -> None:
    if sarif is not None and sarif.exists():
        assert "runs" in json.loads(sarif.read_text(encoding="utf-8"))
    if html is not None and html.exists():
        assert html.read_text(encoding="utf-8").rstrip().endswith("</html>")
    for p in (sarif, html):
        if p is not None:
            assert not [q.name for q in p.parent.iterdir() if q.name.endswith(".tmp")], "a temporary file was left"
    if js:
        json.loads(js)


# --------------------------------------------------------------------------- watch


@pytest.mark.slow
@pytest.mark.parametrize("rows, code, verdict", [(nan_rows(), 1, "FAIL"), (healthy_rows(60), 0, "PASS")])
def test_sigterm_to_watch_exits_with_the_last_verdict(tmp_path, procs, rows, code, verdict):  # noqa: F811
    log = write_jsonl(tmp_path / "run.jsonl", rows)
    w = WatchProc(str(log), "--interval", "0.2", cwd=tmp_path)
    procs.append(w)
    w.wait_for(lambda s: (p := text_poll(s)) is not None and p["verdict"] == verdict)
    w.p.send_signal(signal.SIGTERM)
    assert w.wait() == code, w.stderr
    assert f"stopped watching; last verdict {verdict} (exit {code})" in w.stderr
    assert "Traceback" not in w.stderr


def test_sigterm_to_watch_before_its_first_verdict_exits_2(tmp_path, procs):  # noqa: F811
    w = WatchProc(str(tmp_path / "not-yet.jsonl"), "--interval", "0.2", cwd=tmp_path)
    procs.append(w)
    w.wait_started()  # main() runs: whatever watch is doing (imports, waiting), it is stopped
    w.p.send_signal(signal.SIGTERM)
    assert w.wait() == 2, w.stderr
    assert "stopped watching; last verdict - (exit 2)" in w.stderr
    assert "Traceback" not in w.stderr and w.lines == []


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.slow
@pytest.mark.parametrize("rows, code, verdict", [(nan_rows(), 1, "FAIL"), (healthy_rows(60), 0, "PASS")])
def test_sigint_stops_a_watch_that_inherited_it_ignored(tmp_path, rows, code, verdict):
    log = write_jsonl(tmp_path / "run.jsonl", rows)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    p = subprocess.Popen(
        [sys.executable, "-m", "trainproof", "watch", str(log), "--interval", "0.2"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ignore_sigint,
    )
    try:
        for line in p.stdout:  # the first verdict line
            if (poll := text_poll(line)) is not None and poll["verdict"] == verdict:
                break
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=DEADLINE)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == code, err
    assert f"last verdict {verdict} (exit {code})" in err


@pytest.mark.slow
def test_sigint_stops_a_watch_started_with_ampersand_by_a_script(tmp_path):
    log = write_jsonl(tmp_path / "run.jsonl", nan_rows())
    pidfile = tmp_path / "pid"
    # A non-interactive shell starts `cmd &` with SIGINT ignored.
    script = (
        f'"{sys.executable}" -m trainproof watch "{log}" --interval 0.2 > out.txt 2> err.txt & '
        f'echo $! > "{pidfile}"; wait $!; echo "rc=$?"'
    )
    sh = subprocess.Popen(
        ["bash", "-c", script],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    try:
        deadline = time.monotonic() + DEADLINE
        while not (tmp_path / "out.txt").exists() or "verdict=FAIL" not in (tmp_path / "out.txt").read_text():
            assert time.monotonic() < deadline and sh.poll() is None, "watch printed no FAIL verdict"
            time.sleep(0.05)
        pid = int(pidfile.read_text())
        with open(f"/proc/{pid}/status") as f:
            ignored = next(int(x.split()[1], 16) for x in f if x.startswith("SigIgn:"))
        os.kill(pid, signal.SIGINT)
        out, _ = sh.communicate(timeout=DEADLINE)
    finally:
        if sh.poll() is None:
            sh.kill()
            sh.wait()
    assert out.strip() == "rc=1", (tmp_path / "err.txt").read_text()
    assert "last verdict FAIL (exit 1)" in (tmp_path / "err.txt").read_text()
    assert not ignored >> (signal.SIGINT - 1) & 1, "trainproof handles SIGINT although it inherited it ignored"


# --------------------------------------------------------------------------- doctor, epoch


def _big_log(path: Path, n: int, last: float = 0.01) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"step": s, "loss": 2.0 * 0.9999**s, "lr": 1e-3}) + "\n" for s in range(1, n))
        f.write(json.dumps({"step": n, "loss": last}) + "\n")  # distinct runs: never folded as copies
    return path


def _stop_mid_run(args: list[str], cwd: Path) -> tuple[int, str, str]:
    p = subprocess.Popen(
        [sys.executable, "-m", "trainproof", *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_catches(p.pid, signal.SIGTERM)
        time.sleep(0.3)  # into the reading and judging, which takes seconds for these inputs
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=DEADLINE)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, out, err


@pytest.mark.slow
def test_sigterm_to_doctor_mid_run_exits_2_and_leaves_no_partial_report(tmp_path):
    seed = _big_log(tmp_path / "seed.jsonl", 200_000)
    body = seed.read_bytes()
    for i in range(8):
        d = tmp_path / "runs" / f"r{i}"
        d.mkdir(parents=True)
        (d / "metrics.jsonl").write_bytes(body + json.dumps({"step": 300_000, "loss": 0.01 * i}).encode() + b"\n")
    seed.unlink()
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    sarif, html = out_dir / "r.sarif", out_dir / "r.html"
    rc, out, err = _stop_mid_run(
        ["doctor", "runs", "--jobs", "1", "--json", "--sarif", str(sarif), "--html", str(html)], tmp_path
    )
    assert rc == 2, err
    assert "Traceback" not in err
    assert_whole_or_absent(sarif, html)


@pytest.mark.slow
def test_sigterm_to_epoch_mid_run_exits_2_and_leaves_no_partial_report(tmp_path):
    log = _big_log(tmp_path / "run.jsonl", 1_500_000)
    sarif, html = tmp_path / "r.sarif", tmp_path / "r.html"
    rc, out, err = _stop_mid_run(["epoch", str(log), "--sarif", str(sarif), "--html", str(html)], tmp_path)
    assert rc == 2, err
    assert "Traceback" not in err
    assert_whole_or_absent(sarif, html)


# --------------------------------------------------------------------------- in-process, deterministic


@pytest.fixture
def cli_handlers(request):
    """The CLI's SIGTERM/SIGINT handlers for the test, put back after; the test function is
    what catches the ``KeyboardInterrupt``, as ``main()`` is for the CLI."""
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    previous = cli_mod.signals.interrupt_handlers(catcher=request.function.__code__)
    yield
    for s, h in previous.items():
        signal.signal(s, h)
    assert {s: signal.getsignal(s) for s in before} == before


@pytest.mark.parametrize("where", ["fsync", "replace"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_mid_write_is_handled_after_the_rename(tmp_path, monkeypatch, cli_handlers, where, sig):
    target = tmp_path / "r.sarif"
    target.write_text("old report")
    real = getattr(os, where)
    seen = []

    def signalled(*a):
        os.kill(os.getpid(), sig)  # delivered now, held until the file is in place
        seen.append(sorted(q.name for q in tmp_path.iterdir()))
        return real(*a)

    monkeypatch.setattr(_files.os, where, signalled)
    with pytest.raises(KeyboardInterrupt):
        _files.write_atomic(target, "new " * 100_000)
    assert len(seen[0]) == 2 and any(n.endswith(".tmp") for n in seen[0])  # it came mid-write
    assert target.read_text() == "new " * 100_000
    assert sorted(q.name for q in tmp_path.iterdir()) == ["r.sarif"]


def test_a_signal_then_a_failed_rename_keeps_the_old_report_and_no_debris(tmp_path, monkeypatch, cli_handlers):
    target = tmp_path / "r.html"
    target.write_text("old report")

    def fails(*a):
        os.kill(os.getpid(), signal.SIGTERM)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_files.os, "replace", fails)
    with pytest.raises(KeyboardInterrupt):
        _files.write_atomic(target, "x" * 100_000)
    assert target.read_text() == "old report"
    assert sorted(q.name for q in tmp_path.iterdir()) == ["r.html"]


def test_main_stopped_while_writing_sarif_exits_2_with_a_whole_file(tmp_path, monkeypatch):
    log = write_jsonl(tmp_path / "run.jsonl", nan_rows())
    sarif, html = tmp_path / "r.sarif", tmp_path / "r.html"
    real = os.replace

    def signalled(*a):
        os.kill(os.getpid(), signal.SIGTERM)
        return real(*a)

    monkeypatch.setattr(_files.os, "replace", signalled)
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as e:
        cli_mod.main(["epoch", str(log), "--sarif", str(sarif), "--html", str(html)])
    assert e.value.code == 2
    assert signal.getsignal(signal.SIGTERM) == before
    assert "runs" in json.loads(sarif.read_text())  # written whole; stopped before the HTML
    assert not html.exists()
    assert sorted(q.name for q in tmp_path.iterdir()) == ["r.sarif", "run.jsonl"]


def test_a_sigterm_the_moment_its_handler_is_set_is_a_stop_not_a_traceback(monkeypatch, capsys):
    """The signal lands while main() is still setting its handlers (a CI job cancelled at
    start-up): the KeyboardInterrupt it raises there ends the command as a stop, exit 2."""
    from trainproof.cli import signals as signals_mod

    real = signals_mod.interrupt_handlers
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)

    def set_then_signalled(catcher=None):
        real(catcher)
        os.kill(os.getpid(), signal.SIGTERM)
        # the handler runs at the next bytecode, here, before the handlers are returned
        for _ in range(1000):
            time.sleep(0.001)
        raise AssertionError("the SIGTERM handler did not run")

    monkeypatch.setattr(signals_mod, "interrupt_handlers", set_then_signalled)
    try:
        with pytest.raises(SystemExit) as e:
            cli_mod.main(["rules"])
        assert e.value.code == 2
        assert "trainproof: aborted" in capsys.readouterr().err
    finally:
        signal.signal(signal.SIGTERM, before[0])
        signal.signal(signal.SIGINT, before[1])


def test_main_handles_an_ignored_sigint_and_puts_it_back(monkeypatch):
    seen = {}

    def fake_main(**kw):
        seen["int"] = signal.getsignal(signal.SIGINT)
        seen["term"] = signal.getsignal(signal.SIGTERM)
        return 0

    monkeypatch.setattr(cli_mod.cli, "main", fake_main)
    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    old_term = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit):
            cli_mod.main(["rules"])
        assert callable(seen["int"]) and seen["int"] is seen["term"]
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) == old_term
    finally:
        signal.signal(signal.SIGINT, old_int)


def test_signals_are_not_held_outside_the_main_thread(tmp_path):
    import threading

    errors = []

    def write():
        try:
            _files.write_atomic(tmp_path / "r.sarif", "{}")
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    t = threading.Thread(target=write)
    t.start()
    t.join(DEADLINE)
    assert errors == [] and (tmp_path / "r.sarif").read_text() == "{}"


def test_a_signal_in_exec_string_code_is_sent_again_once_that_code_has_run(cli_handlers):
    """A stop that lands in code compiled from a string (what ``dataclasses`` runs while a
    module is imported) is not raised there, where CPython would end the process by SIGINT
    once it exits, but sent again and raised in the caller's own code."""
    ran = []
    with pytest.raises(KeyboardInterrupt):
        exec("import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\nran.append(1)", {"ran": ran})
        assert ran == [1]  # the exec'd code ran to its end
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:  # the signal comes again from a timer thread
            time.sleep(0.01)
    assert ran == [1]


def test_a_signal_in_importlibs_own_code_is_sent_again_once_that_code_has_run(cli_handlers):
    """A stop that lands in importlib's bootstrap (a module lock's weakref callback, where
    CPython prints an exception and drops it) is not raised there but sent again and raised
    in the caller's own code: a CI run once lost a SIGTERM so and wrote its reports."""
    ran = []
    code = compile(
        "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\nran.append(1)",
        "<frozen importlib._bootstrap>",
        "exec",
    )
    with pytest.raises(KeyboardInterrupt):
        exec(code, {"ran": ran})
        assert ran == [1]  # importlib's code ran to its end
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:  # the signal comes again from a timer thread
            time.sleep(0.01)
    assert ran == [1]


def test_a_signal_is_raised_where_it_lands_when_exec_string_code_is_only_below_its_catcher():
    """Code run from a string below the function that catches the stop (pytest-xdist's
    workers, ``python -c``) does not defer a stop that lands above that function."""
    reached, caught = [], []

    def interrupted():
        os.kill(os.getpid(), signal.SIGTERM)  # os.kill runs the handler before it returns
        reached.append(1)  # a deferred stop would come back later, from a timer thread
        time.sleep(DEADLINE)

    def catch():
        try:
            interrupted()
        except KeyboardInterrupt:
            caught.append(1)

    previous = cli_mod.signals.interrupt_handlers(catcher=catch.__code__)
    try:
        exec("catch()", {"catch": catch})
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    assert caught == [1] and reached == []
