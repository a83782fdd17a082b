"""Safety of what trainproof opens and writes: nothing it reads is executed, reports are
written atomically and never through a symlink, the HTML page carries a strict CSP, env
probes can run in a clean environment, and doctor can be bounded on a hostile tree."""

from __future__ import annotations

import ast
import base64
import hashlib
import html.parser
import json
import pickle
import zipfile

import pytest

from conftest import REPO, healthy_rows, run_cli, write_jsonl

SRC = REPO / "src" / "trainproof"


# --------------------------------------------------------------------------- nothing executed

_FORBIDDEN = {
    ("pickle", "load"),
    ("pickle", "loads"),
    ("pickle", "Unpickler"),
    ("marshal", "loads"),
    ("marshal", "load"),
    ("yaml", "load"),
    ("yaml", "unsafe_load"),
    ("torch", "load"),
    ("dill", "load"),
    ("dill", "loads"),
    ("shelve", "open"),
    ("numpy", "load"),
    ("np", "load"),
}


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name):
                yield f.id, None, node
            elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                yield f.value.id, f.attr, node


@pytest.mark.slow
def test_no_source_file_evaluates_or_unpickles_what_it_reads():
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for name, attr, node in _calls(tree):
            where = f"{path.relative_to(REPO)}:{node.lineno}"
            if attr is None and name in ("eval", "exec", "compile", "__import__"):
                offenders.append(f"{where} {name}()")
            elif (name, attr) in _FORBIDDEN:
                # numpy's loader is allowed only with allow_pickle=False spelled out.
                if name in ("np", "numpy") and any(
                    k.arg == "allow_pickle" and isinstance(k.value, ast.Constant) and k.value.value is False
                    for k in node.keywords
                ):
                    continue
                offenders.append(f"{where} {name}.{attr}()")
            elif (name, attr) == ("ast", "literal_eval"):
                # Allowed only where the input is bounded first (formats/console.py caps a
                # logged dict at MAX_DICT_CHARS); any other use must be reviewed and listed.
                text = path.read_text(encoding="utf-8")
                if path.name != "console.py" or "if len(text) > MAX_DICT_CHARS" not in text:
                    offenders.append(f"{where} ast.literal_eval() on input not known to be bounded")
            elif (name, attr) in (
                ("subprocess", "run"),
                ("subprocess", "Popen"),
                ("subprocess", "call"),
                ("subprocess", "check_output"),
            ):
                if any(
                    k.arg == "shell" and not (isinstance(k.value, ast.Constant) and k.value.value is False)
                    for k in node.keywords
                ):
                    offenders.append(f"{where} subprocess with shell")
            elif (name, attr) in (("os", "system"), ("os", "popen")):
                offenders.append(f"{where} {name}.{attr}()")
    assert not offenders, offenders


class _Trap:
    """Unpickling this creates the file named ``path``: proof that a pickle was run."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def _torch_zip(path, payload: bytes) -> None:
    """A torch-style checkpoint archive (``archive/data.pkl`` + ``archive/version``)."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", payload)
        z.writestr("archive/version", "3\n")
        z.writestr("archive/byteorder", "little")


@pytest.mark.parametrize("kind", ["zip", "legacy"])
def test_a_checkpoint_whose_pickle_would_create_a_file_is_never_unpickled(tmp_path, kind):
    trap = tmp_path / "PWNED"
    payload = pickle.dumps(_Trap(str(trap)))
    ckpt = tmp_path / "model.pt"
    if kind == "zip":
        _torch_zip(ckpt, payload)
    else:
        ckpt.write_bytes(payload)
    # Sanity: the payload really does create the file when unpickled.
    probe = tmp_path / "probe"
    pickle.loads(pickle.dumps(_Trap(str(probe))))
    assert probe.exists()
    code, out, err, doc = run_cli("env", "--checkpoint", str(ckpt), "--json")
    assert not trap.exists()
    assert code in (0, 1, 2) and "Traceback" not in err
    ids = {f["id"] for f in doc["reports"][0]["findings"]}
    # the ZIP's pickle imports the trap's callable: named in a warning, never called safe
    assert ids & {"TP-ENV-CKPT-UNSAFE-PICKLE", "TP-ENV-CKPT-LEGACY"} and "TP-ENV-CKPT-OK" not in ids, ids


def test_objective_targets_in_a_pickled_npy_are_refused_not_loaded(tmp_path):
    np = pytest.importorskip("numpy")
    trap = tmp_path / "PWNED"
    arr = np.empty(1, dtype=object)
    arr[0] = _Trap(str(trap))
    f = tmp_path / "targets.npy"
    np.save(f, arr, allow_pickle=True)
    code, _, err, _ = run_cli(
        "objective", "--num-classes", "4", "--ignore-index", "-100", "--targets", str(f), "--json"
    )
    assert not trap.exists()
    assert code == 2 and "Traceback" not in err


# --------------------------------------------------------------------------- HTML


class _Tags(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.style = ""
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"

    def handle_endtag(self, tag):
        self._in_style = False

    def handle_data(self, data):
        if self._in_style:
            self.style += data


def _page(tmp_path, rows, name="run.jsonl"):
    log = write_jsonl(tmp_path / name, rows)
    out = tmp_path / "r.html"
    run_cli("epoch", str(log), "--html", str(out))
    return out.read_text(encoding="utf-8")


def test_html_carries_a_csp_that_allows_only_its_own_stylesheet(tmp_path):
    page = _page(tmp_path, healthy_rows(60))
    p = _Tags()
    p.feed(page)
    metas = [a for t, a in p.tags if t == "meta" and a.get("http-equiv", "").lower() == "content-security-policy"]
    assert len(metas) == 1
    csp = dict(part.strip().split(" ", 1) for part in metas[0]["content"].split(";") if part.strip())
    assert csp["default-src"] == "'none'" and csp["script-src"] == "'none'" and csp["img-src"] == "'none'"
    digest = base64.b64encode(hashlib.sha256(p.style.encode("utf-8")).digest()).decode()
    assert csp["style-src"] == f"'sha256-{digest}'"  # the page's own <style>, and nothing else
    assert sum(1 for t, _ in p.tags if t == "style") == 1
    assert not any(t == "script" for t, _ in p.tags)
    # The CSP must come before anything it governs.
    assert page.index("Content-Security-Policy") < page.index("<style>")


def test_script_injection_from_a_log_and_its_path_stays_text(tmp_path):
    evil = '"><script>alert(1)</script><img src=x onerror=alert(2)>'
    rows = [{**r, evil: r["loss"], "note": evil} for r in healthy_rows(60)]
    d = tmp_path / 'x"><svg onload=alert(3)>'
    d.mkdir()
    page = _page(d, rows, name="run<script>.jsonl")
    p = _Tags()
    p.feed(page)
    assert not any(t in ("script", "img", "iframe", "object", "embed") for t, _ in p.tags)
    assert not any(k.startswith("on") for _, a in p.tags for k in a)
    assert "&lt;script&gt;" in page  # shown, escaped


# --------------------------------------------------------------------------- report files


def test_report_files_replace_a_symlink_instead_of_writing_through_it(tmp_path):
    log = write_jsonl(tmp_path / "run.jsonl", healthy_rows(60))
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "important.txt"
    victim.write_text("keep me")
    reports = tmp_path / "reports"
    reports.mkdir()
    for name in ("r.sarif", "r.html"):
        (reports / name).symlink_to(victim)
    run_cli("epoch", str(log), "--sarif", str(reports / "r.sarif"), "--html", str(reports / "r.html"))
    assert victim.read_text() == "keep me"
    for name in ("r.sarif", "r.html"):
        assert not (reports / name).is_symlink() and (reports / name).stat().st_size > 100
    json.loads((reports / "r.sarif").read_text())


def test_a_write_that_fails_midway_leaves_the_old_report_and_no_debris(tmp_path, monkeypatch):
    from trainproof import _files

    target = tmp_path / "r.sarif"
    target.write_text("old report")

    def boom(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_files.os, "fsync", boom)
    with pytest.raises(OSError):
        _files.write_atomic(target, "x" * 100_000)
    assert target.read_text() == "old report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.sarif"]


@pytest.mark.slow
def test_a_killed_writer_never_leaves_half_a_report(tmp_path):
    """A child writes a 50 MB report again and again and is SIGKILLed at a random moment;
    the file is always either absent or one complete report."""
    import signal
    import subprocess
    import sys
    import time

    target = tmp_path / "r.html"
    code = (
        f"import sys; sys.path.insert(0, {str(REPO / 'src')!r})\n"
        "from trainproof._files import write_atomic\n"
        "i = 0\n"
        "while True:\n"
        "    i += 1\n"
        f"    write_atomic({str(target)!r}, ('<p>' + str(i % 10) * (50 << 20)) + '</p>\\n')\n"
    )
    for delay in (0.3, 0.7, 1.1):
        p = subprocess.Popen([sys.executable, "-c", code])
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
        if target.exists():
            data = target.read_bytes()
            assert data.startswith(b"<p>") and data.endswith(b"</p>\n") and len(data) == (50 << 20) + 8


# --------------------------------------------------------------------------- env probes


@pytest.mark.slow
def test_env_clean_env_drops_pythonpath_from_the_probe(tmp_path, monkeypatch):
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "only_on_pythonpath.py").write_text("X = 1\n")
    monkeypatch.setenv("PYTHONPATH", str(extra))
    code, _, _, doc = run_cli("env", "--module", "only_on_pythonpath", "--cwd", str(tmp_path), "--json")
    assert "TP-ENV-IMPORT-OK" in {f["id"] for f in doc["reports"][0]["findings"]}
    code, _, _, doc = run_cli("env", "--module", "only_on_pythonpath", "--cwd", str(tmp_path), "--clean-env", "--json")
    assert code == 1
    assert "TP-ENV-IMPORT-FAIL" in {f["id"] for f in doc["reports"][0]["findings"]}


# --------------------------------------------------------------------------- doctor bounds


def _tree(root, depth: int, per_level: int = 2):
    d = root
    for level in range(depth):
        for i in range(per_level):
            write_jsonl(d / f"run{level}_{i}.jsonl", healthy_rows(30, seed=level * 10 + i))
        d = d / f"level{level + 1}"
    return root


@pytest.mark.slow
def test_doctor_max_depth_and_max_files_bound_the_search(tmp_path):
    root = _tree(tmp_path / "t", depth=5)
    code, _, _, doc = run_cli("doctor", str(root), "--json")
    assert len(doc["reports"]) == 10
    code, _, err, doc = run_cli("doctor", str(root), "--max-depth", "1", "--json")
    assert len(doc["reports"]) == 4  # root and level1
    assert any("--max-depth 1" in i["reason"] for i in doc["ignored"])
    code, _, err, doc = run_cli("doctor", str(root), "--max-files", "3", "--json")
    assert len(doc["reports"]) == 3
    assert any("--max-files 3" in i["reason"] for i in doc["ignored"])
    code, out, err, _ = run_cli("doctor", str(root), "--max-files", "3")
    assert "--max-files 3" in err


def test_doctor_attempts_no_network_for_local_paths(tmp_path, monkeypatch):
    import socket

    def refuse(*a, **k):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    root = _tree(tmp_path / "t", depth=2)
    code, _, _, doc = run_cli("doctor", str(root), "--json")
    assert code == 0 and len(doc["reports"]) == 4
