"""The attacks of issue 32 in one pull request's tree, and a hostile MLflow server on
127.0.0.1, for the combined run (tests/cli/test_doctor_hostile_tree_trackers.py) and the evidence it is
measured in (evidence/attacks.py).

:func:`build` adds to a repository folder (tests/_attack_tree.py's, or an empty one):
hostile tracker sources, a gzip of identical ``1,1`` rows, a WAL-mode store whose
divergence is only in its ``-wal`` file, W&B run folders with a link out of the tree and a
second ``.wandb`` file, names that try to issue workflow commands, a saved ``doctor``
report, an epoch-counted OpenMMLab log, a loss written as printed tensors, a FIFO named
``mlflow.db``, a diverging ``fail.jsonl``. A canary file outside the tree would turn a
verdict if it were read. :class:`HostileServer` answers MLflow's API with the credentials
it received echoed into run names and metric keys, one run of deeply nested JSON and one
whose metric history pages never end.
"""

from __future__ import annotations

import ast
import base64
import json
import math
import os
import sqlite3
import subprocess
import sys
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, quote_plus, urlsplit

import _fuzz_logs as F

#: The tracking server's credentials (MLFLOW_TRACKING_USERNAME / _PASSWORD): characters
#: that base64, percent-encoding and JSON each write differently.
USER = "ci-bot"
PASSWORD = "pw/3f9c+2a71 e4=do-not-print"

#: The text of the canary outside the tree (a W&B run's name): it must appear in no output.
CANARY = "canary-7d41e0b9-read-outside"

#: Deeper than any JSON parser of the interpreter follows (the issue's 100,000 levels).
DEEP = "[" * 100_000 + "]" * 100_000

#: W&B run id of the folders built here (the one _fuzz_logs' run record carries).
RID = "abc123"


def secret_forms(secret: str = PASSWORD, user: str = USER) -> list[str]:
    """Every form a server that echoes what it got could send a secret back in: as set,
    percent-encoded (three ways), base64 and URL-safe base64 of it and of ``user:secret``
    (with and without padding). Written out here, not taken from the code under test."""
    out = [secret, quote(secret, safe=""), quote(secret), quote_plus(secret), quote(secret, safe="").lower()]
    out += [base64.b64encode(secret.encode()).decode(), base64.urlsafe_b64encode(secret.encode()).decode()]
    basic = base64.b64encode(f"{user}:{secret}".encode()).decode()
    out += [basic, basic.rstrip("="), base64.urlsafe_b64encode(f"{user}:{secret}".encode()).decode()]
    return out


# --------------------------------------------------------------------------- the tree


def _loss(i: int, n: int = 200) -> float:
    return 0.8 + 1.5 * math.exp(-i / (n / 4)) + 0.01 * math.sin(i)


def _jsonl(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _healthy_rows(n: int = 200) -> list[dict]:
    return [{"step": i + 1, "loss": _loss(i, n), "learning_rate": 1e-4} for i in range(n)]


def _diverging_rows(n: int = 200) -> list[dict]:
    return [{"step": i + 1, "loss": _loss(i, n) * (10 ** ((i - 120) / 15) if i > 120 else 1)} for i in range(n)]


def _wandb_log(kind: str, name: str = "fuzz-run") -> bytes:
    """A W&B run log framed by hand (as _fuzz_logs.wandb_log_file), with its run's name."""
    losses = F._losses(kind)
    recs = [F.wandb_run(name=name)]
    for i, v in enumerate(losses):
        items = {"train/loss": json.dumps(v), "train/learning_rate": "0.0001", "_runtime": str(i)}
        recs.append(F.wandb_history(i, items))
    return F.wandb_frame(recs)


def _wandb_folder(wandb_dir: Path, when: str, kind: str) -> Path:
    d = wandb_dir / f"run-{when}-{RID}"
    (d / "files").mkdir(parents=True)
    (d / f"run-{RID}.wandb").write_bytes(_wandb_log(kind))
    return d


def _trackio(path: Path, sql: str, args: tuple = ()) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(F.trackio_db("healthy"))
    con = sqlite3.connect(path)
    con.executescript(sql) if not args else con.execute(sql, args)
    con.commit()
    con.close()
    return path


def _balanced(leaf: str, n: int) -> str:
    """An expression adding ``leaf`` ``n`` times, nested ``log2(n)`` deep."""
    if n == 1:
        return leaf
    return f"({_balanced(leaf, n // 2)}+{_balanced(leaf, n - n // 2)})"


def _mlflow_cpu_bomb(path: Path, rows: int = 6000, leaves: int = 4096) -> Path:
    """An ``mlflow.db`` whose metric values are a generated column of ~8,000 SQLite VM
    steps a row: 48 M steps in about 200 KB (as tests/test_sources_hostile.py's)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE experiments (experiment_id INTEGER PRIMARY KEY, name TEXT, lifecycle_stage TEXT);"
        "CREATE TABLE runs (run_uuid TEXT PRIMARY KEY, name TEXT, start_time INTEGER, lifecycle_stage TEXT, "
        "experiment_id INTEGER);"
        "CREATE TABLE tags (key TEXT, value TEXT, run_uuid TEXT);"
        "CREATE TABLE metrics (key TEXT, n INTEGER, timestamp INTEGER, run_uuid TEXT, step INTEGER, is_nan INTEGER, "
        f"value REAL GENERATED ALWAYS AS ({_balanced('n', leaves)}));"
        "INSERT INTO experiments VALUES (0, 'Default', 'active');"
        "INSERT INTO runs VALUES ('r1', 'bomb', 0, 'active', 0);"
    )
    con.executemany(
        "INSERT INTO metrics (key, n, timestamp, run_uuid, step, is_nan) VALUES ('loss', 1, 0, 'r1', ?, 0)",
        ((i,) for i in range(rows)),
    )
    con.commit()
    con.close()
    return path


def _gzip_rows(path: Path, mib: int) -> Path:
    """A ``.csv.gz`` of a header and ``mib`` MiB of identical ``1,1`` rows (about 1 KiB of
    gzip per MiB of rows)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"1,1\n" * (1 << 18)  # 1 MiB
    with open(path, "wb") as f:
        f.write(comp.compress(b"step,loss\n"))
        for _ in range(mib):
            f.write(comp.compress(chunk))
        f.write(comp.flush())
    return path


_WAL_SCHEMA = (
    "CREATE TABLE experiments (experiment_id INTEGER PRIMARY KEY, name TEXT, lifecycle_stage TEXT);"
    "CREATE TABLE runs (run_uuid TEXT PRIMARY KEY, name TEXT, start_time BIGINT, experiment_id INTEGER, "
    "lifecycle_stage TEXT);"
    "CREATE TABLE tags (key TEXT, value TEXT, run_uuid TEXT);"
    "CREATE TABLE metrics (key TEXT, value FLOAT, timestamp BIGINT, run_uuid TEXT, step BIGINT, is_nan BOOLEAN);"
    "INSERT INTO experiments VALUES (0, 'Default', 'active');"
    "INSERT INTO runs VALUES ('r0', 'run-0', 1700000000000, 0, 'active');"
)

#: A writer killed after its commit: no close, so no checkpoint; the rows stay in ``-wal``.
_KILLED_WRITER = """
import json, os, sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("PRAGMA wal_autocheckpoint = 0")
con.executemany("INSERT INTO metrics VALUES (?, ?, ?, 'r0', ?, ?)", json.loads(sys.argv[2]))
con.commit()
os._exit(0)
"""


def _wal_store(folder: Path, steps: int = 120, checkpointed: int = 90) -> Path:
    """An ``mlflow.db`` in WAL mode: a healthy loss for ``checkpointed`` steps in the file,
    then NaN for the rest committed only to its ``-wal`` (no ``-shm``, as a checkout has)."""
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "mlflow.db"
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode = WAL")
    con.executescript(_WAL_SCHEMA)

    def row(i: int, nan: bool) -> tuple:
        return ("loss", 0.0 if nan else 2.0 * math.exp(-i / 40) + 0.3, 1700000000000 + i, i + 1, int(nan))

    con.executemany("INSERT INTO metrics VALUES (?, ?, ?, 'r0', ?, ?)", [row(i, False) for i in range(checkpointed)])
    con.commit()
    con.close()
    tail = json.dumps([row(i, True) for i in range(checkpointed, steps)])
    subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(db), tail], check=True, timeout=120)
    for shm in folder.glob("*-shm"):
        shm.unlink()
    assert db.with_name("mlflow.db-wal").stat().st_size > 0
    return db


def _openmmlab(path: Path, epochs: int = 12, iters: int = 400, every: int = 20) -> Path:
    """An mmdet-2.x-style ``*.log.json`` of a healthy run: ``iter`` counts within the epoch,
    the loss flat over the last epochs (the last epoch alone looks dead)."""
    rows: list[dict] = [{"env_info": "sys.platform: linux", "config": "model = dict()", "seed": 0}]
    total, t = epochs * iters, 0
    for e in range(1, epochs + 1):
        for it in range(every, iters + 1, every):
            t += every
            loss = 2.0 * math.exp(-t / (total / 8)) + 0.3 + 0.01 * math.sin(t)
            rows.append({"mode": "train", "epoch": e, "iter": it, "lr": 0.02, "loss": loss, "time": 0.4})
        rows.append({"mode": "val", "epoch": e, "iter": 125, "lr": 0.02, "bbox_mAP": 0.1 + 0.02 * e})
    return _jsonl(path, rows)


#: Runs whose verdict the tree decides (path relative to the repository -> verdict, or a
#: set of verdicts where reading as far as it goes may WARN).
EXPECTED: dict[str, str | frozenset] = {
    "i32/fail/fail.jsonl": "FAIL",
    "i32/ok/metrics.jsonl": "PASS",
    # hostile sources: read as far as they go (the summary, the bad row left out)
    "i32/hostile/wandb/run-20240101_000000-abc123": frozenset({"PASS", "WARN"}),
    "i32/hostile/trackio_nested/proj.db": frozenset({"PASS", "WARN"}),
    "i32/hostile/trackio_text_id/proj.db": frozenset({"PASS", "WARN"}),
    "i32/hostile/mlflow_rowid/mlflow.db": frozenset({"PASS", "WARN"}),
    # the divergence only in the -wal file
    "i32/wal/mlflow.db": "FAIL",
    # a resumed run: healthy; the canary it links to diverges
    "i32/resumed/wandb/run-20240102_000000-abc123": "PASS",
    # its own log diverges; the second .wandb file beside it is healthy
    "i32/second_wandb/wandb/run-20240101_000000-abc123": "FAIL",
    "i32/##[add-mask]x/metrics.jsonl": "PASS",
    "i32/::stop-commands::tok/metrics.jsonl": "PASS",
    "i32/names/##[set-output name=verdict]PASS.jsonl": "FAIL",
    "i32/saved/metrics.jsonl": "FAIL",
    "i32/openmmlab/20240101_000000.log.json": "PASS",
    "i32/tensor_strings/metrics.jsonl": "FAIL",
}

#: Runs that are not judged, with a word their reason holds.
NOT_CHECKED = {
    "i32/hostile/cpu_bomb/mlflow.db": "work budget",
    # identical rows fold into one point: too few to judge (the 1 GiB variant is also cut at
    # the record cap, TP-DATA-DROPPED)
    "i32/gzip/metrics.csv.gz": "finite points",
}

#: Files that must never be a run (our own saved report, a FIFO named like a store).
NOT_RUNS = ("i32/saved/report.txt", "i32/fifo/mlflow.db")


def build(repo: Path, gzip_mib: int = 1024) -> tuple[Path, Path]:
    """Add the issue 32 attacks under ``repo/i32``; the canary goes in ``repo/../outside32``.

    ``gzip_mib``: MiB of ``1,1`` rows in ``i32/gzip/metrics.csv.gz`` (1024 is the issue's
    1 GiB, about 1 MiB of gzip). Returns ``(repo / "i32", canary path)``. Runs ``doctor``
    once, as a child process, to save its report in ``i32/saved/``.
    """
    base = repo / "i32"
    outside = repo.parent / "outside32"
    outside.mkdir(parents=True, exist_ok=True)
    # the diverging run and a healthy one (section 2's pair)
    # (each log's length differs: byte-identical logs would be one run listed with its copies)
    _jsonl(base / "fail" / "fail.jsonl", _diverging_rows())
    _jsonl(base / "ok" / "metrics.jsonl", _healthy_rows(190))

    # hostile sources (section 2)
    h = base / "hostile"
    run = h / "wandb" / f"run-20240101_000000-{RID}"
    (run / "files").mkdir(parents=True)
    _jsonl(run / "files" / "wandb-history.jsonl", ({"_step": i, "loss": 2.0 / (1 + i / 30)} for i in range(100)))
    (run / "files" / "wandb-summary.json").write_text('{"loss": ' + DEEP + "}")
    _trackio(
        h / "trackio_nested" / "proj.db", "UPDATE metrics SET metrics = ? WHERE id = 3", ('{"loss": ' + DEEP + "}",)
    )
    # a column without a type takes what it is given: text in the id column
    _trackio(
        h / "trackio_text_id" / "proj.db",
        "CREATE TABLE m2 AS SELECT * FROM metrics; DROP TABLE metrics; "
        "CREATE TABLE metrics (id, run_id, timestamp, run_name, step, metrics, log_id, space_id); "
        "INSERT INTO metrics SELECT * FROM m2; DROP TABLE m2; UPDATE metrics SET id = 'abc' WHERE rowid = 5;",
    )
    (h / "mlflow_rowid").mkdir(parents=True)
    (h / "mlflow_rowid" / "mlflow.db").write_bytes(F.mlflow_db_log("healthy"))
    con = sqlite3.connect(h / "mlflow_rowid" / "mlflow.db")
    con.executescript("ALTER TABLE metrics ADD COLUMN rowid TEXT; UPDATE metrics SET rowid = 'x';")
    con.commit()
    con.close()
    _mlflow_cpu_bomb(h / "cpu_bomb" / "mlflow.db")

    # bounded work (section 3): 1 GiB of identical rows in about 1 MiB
    _gzip_rows(base / "gzip" / "metrics.csv.gz", gzip_mib)

    # read-only and complete (section 4)
    _wal_store(base / "wal")
    (outside / f"run-{RID}.wandb").write_bytes(_wandb_log("diverge", name=CANARY))
    canary = outside / f"run-{RID}.wandb"
    first = _wandb_folder(base / "resumed" / "wandb", "20240101_000000", "healthy")
    _wandb_folder(base / "resumed" / "wandb", "20240102_000000", "healthy")
    os.symlink(canary, first / "run-zzzzzz.wandb")  # sorts after the run's own log
    second = _wandb_folder(base / "second_wandb" / "wandb", "20240101_000000", "diverge")
    (second / "run-zzzzzz.wandb").write_bytes(_wandb_log("healthy"))
    (base / "fifo").mkdir()
    os.mkfifo(base / "fifo" / "mlflow.db")

    # names that try to issue workflow commands (section 1)
    _jsonl(base / "##[add-mask]x" / "metrics.jsonl", _healthy_rows(210))
    _jsonl(base / "::stop-commands::tok" / "metrics.jsonl", _healthy_rows(220))
    _jsonl(base / "names" / "##[set-output name=verdict]PASS.jsonl", _diverging_rows(210))

    # our own saved report (section 5): doctor . > report.txt, then doctor . again
    saved = base / "saved"
    _jsonl(saved / "metrics.jsonl", _diverging_rows(220))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_TRACKING_", "FORCE_COLOR"))}
    p = subprocess.run(
        [sys.executable, "-m", "trainproof", "doctor", "."], cwd=saved, capture_output=True, env=env, timeout=300
    )
    assert p.returncode == 1 and b"FAIL" in p.stdout, p.stderr[-2000:]
    (saved / "report.txt").write_bytes(p.stdout)

    # also reproduced (section 6)
    _openmmlab(base / "openmmlab" / "20240101_000000.log.json")
    rows = _diverging_rows(230)
    for r in rows[120:]:
        r["loss"] = f"tensor({r['loss']:.4f}, device='cuda:0', grad_fn=<NllLossBackward0>)"
    _jsonl(base / "tensor_strings" / "metrics.jsonl", rows)
    return base, canary


def snapshot(top: Path) -> dict[str, tuple[int, int, int]]:
    """Every entry under ``top`` (links not followed, no recursion: the tree may be 1,200
    folders deep): relative path -> (mode, size, mtime in ns)."""
    out, stack = {}, [str(top)]
    while stack:
        d = stack.pop()
        with os.scandir(d) as it:
            for e in it:
                st = e.stat(follow_symlinks=False)
                out[os.path.relpath(e.path, top)] = (st.st_mode, st.st_size, st.st_mtime_ns)
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
    return out


def atime_is_kept(folder: Path) -> bool:
    """Whether reading a file in ``folder`` updates its access time (relatime updates an
    access time older than the file's modification)."""
    probe = folder / "atime-probe"
    probe.write_text("x")
    os.utime(probe, (1_000_000_000, probe.stat().st_mtime))
    probe.read_bytes()
    kept = probe.stat().st_atime_ns != 1_000_000_000 * 10**9
    probe.unlink()
    return kept


def age_atime(path: Path) -> int:
    """Set ``path``'s access time before its modification time (so that a read under
    relatime updates it); returns the access time set, in ns."""
    st = path.stat()
    os.utime(path, ns=(1_000_000_000 * 10**9, st.st_mtime_ns))
    return path.stat().st_atime_ns


# --------------------------------------------------------------------------- the server

#: Hostile runs of the server: run id -> a word their NOT-CHECKED reason holds.
SERVER_NOT_CHECKED = {"nested1": "", "endless1": "pages"}
#: Runs of the server that are judged: run id -> verdict.
SERVER_JUDGED = {"good1": "PASS", "echo1": "PASS"}


class HostileServer:
    """MLflow's tracking API on 127.0.0.1, in a thread: four runs of one experiment.
    ``good1`` is healthy; ``echo1`` is healthy and named after the ``Authorization`` header
    it received (raw, its decoded password, percent-encoded), its metric keys and a tag
    too; ``nested1``'s ``runs/get`` answer nests 100,000 arrays; ``endless1``'s metric
    history always has a next page. ``pages`` counts the history pages served."""

    def __init__(self) -> None:
        self.requests = 0
        self.pages = 0
        self.auth_seen: set[str] = set()
        srv = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                if n:
                    self.rfile.read(n)
                srv.requests += 1
                srv.auth_seen.add(self.headers.get("Authorization") or "")
                u = urlsplit(self.path)
                status, data = srv.answer(self.headers.get("Authorization") or "", u.path, parse_qs(u.query))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except OSError:
                    pass

            do_GET = do_POST = _serve

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def answer(self, auth: str, path: str, query: dict) -> tuple[int, bytes]:
        kind, _, value = auth.partition(" ")
        secret = base64.b64decode(value).decode().partition(":")[2] if kind == "Basic" and value else value
        enc = quote(secret, safe="")

        def run(rid: str, name: str) -> dict:
            keys = ["loss"] + ([f"acc {secret}", f"k_{auth}", f"q_{enc}"] if rid == "echo1" else [])
            return {
                "info": {"run_id": rid, "run_name": name, "experiment_id": "7", "start_time": 1_700_000_000_000},
                "data": {
                    "metrics": [{"key": k, "value": 0.5, "step": 59} for k in keys],
                    "tags": [{"key": "note", "value": auth}],
                },
            }

        runs = {
            "good1": run("good1", "good"),
            "echo1": run("echo1", f"run {auth} {secret} {enc}"),
            "nested1": run("nested1", "nested"),
            "endless1": run("endless1", "endless"),
        }
        ok = lambda doc: (200, json.dumps(doc).encode())  # noqa: E731
        if path.endswith("/experiments/search"):
            return ok({"experiments": [{"experiment_id": "7", "name": f"exp {auth}"}]})
        if path.endswith("/experiments/get"):
            return ok({"experiment": {"experiment_id": "7", "name": f"exp {secret}"}})
        if path.endswith("/runs/search"):
            return ok({"runs": list(runs.values())})
        rid = (query.get("run_id") or query.get("run_uuid") or [""])[0]
        if path.endswith("/runs/get"):
            if rid == "nested1":
                return 200, ('{"run": ' + DEEP + "}").encode()
            return ok({"run": runs.get(rid, runs["good1"])})
        if path.endswith("/metrics/get-history"):
            key = query.get("metric_key", ["loss"])[0]
            if rid == "endless1":
                self.pages += 1
                return ok(
                    {"metrics": [{"key": key, "value": 1.0, "step": self.pages}], "next_page_token": f"t{self.pages}"}
                )
            pts = [
                {"key": key, "value": 2.0 * math.exp(-s / 20) + 0.3 + 0.01 * math.sin(s), "timestamp": s, "step": s}
                for s in range(60)
            ]
            return ok({"metrics": pts})
        return 404, b'{"error_code": "ENDPOINT_NOT_FOUND"}'

    def __enter__(self) -> HostileServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def server_env() -> dict[str, str]:
    """The environment ``doctor`` runs with: the credentials set, no proxy for loopback."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_TRACKING_")}
    env.update(
        MLFLOW_TRACKING_USERNAME=USER,
        MLFLOW_TRACKING_PASSWORD=PASSWORD,
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
        OPENBLAS_NUM_THREADS="1",
        OMP_NUM_THREADS="1",
    )
    env.pop("FORCE_COLOR", None)
    return env


# --------------------------------------------------------------------------- the combined run

#: The documented ceiling of one run's reading and judging (docs/safety.md: "reading and
#: judging one run peaks under 1.2 GB"), in bytes. ``RUSAGE_CHILDREN``'s peak is the
#: largest single process's, the command's or one worker's.
MEMORY_CEILING = 1_200_000_000

_WRAPPER = """
import resource, subprocess, sys, time
t0 = time.monotonic()
p = subprocess.run(sys.argv[2:], cwd=sys.argv[1], capture_output=True)
wall = time.monotonic() - t0
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
sys.stdout.buffer.write(repr((p.returncode, wall, peak)).encode() + b"\\n" + p.stdout)
sys.stderr.buffer.write(p.stderr)
"""


def _rel(name: str, repo: Path) -> str:
    return os.path.relpath(name, repo) if name.startswith("/") else name


def _reason(r: dict) -> str:
    return (r.get("error") or "") + " ".join(f.get("evidence") or "" for f in r.get("findings", []))


def combined_run(root: Path, out: Path, bomb_mib: int, gzip_mib: int, jobs: int = 2) -> dict:
    """Build tests/_attack_tree.py's tree (gzip bombs of ``bomb_mib`` MiB) with this
    module's attacks added (``gzip_mib`` MiB of ``1,1`` rows) under ``root``, start
    :class:`HostileServer`, and run ``doctor REPO URL --json --sarif --html`` (under a
    wrapper that measures its peak memory) and ``doctor REPO URL`` (text) with the
    credentials set. Returns the figures and, as lists that are empty when all is well,
    what went wrong: ``wrong`` (runs judged other than expected), ``missing`` (expected
    runs absent), ``leaked`` (output -> secret forms found), ``changed`` (entries of the
    tree created, removed or changed), ``canary`` (where its text appeared).
    """
    import _attack_tree as T17

    repo = T17.build(root, bomb_mib=bomb_mib)
    base, canary = build(repo, gzip_mib=gzip_mib)
    atime_checked = atime_is_kept(canary.parent)
    canary_atime = age_atime(canary)
    before = snapshot(root)
    sarif, page = out / "r.sarif", out / "r.html"
    env = server_env()
    with HostileServer() as srv:
        cmd = [sys.executable, "-m", "trainproof", "doctor", str(repo), srv.url, "--json", "--jobs", str(jobs)]
        cmd += ["--sarif", str(sarif), "--html", str(page)]
        p = subprocess.run(
            [sys.executable, "-c", _WRAPPER, str(repo), *cmd], capture_output=True, env=env, timeout=3600
        )
        head, _, body = p.stdout.partition(b"\n")
        rc, wall, peak_kib = ast.literal_eval(head.decode())
        text = subprocess.run(
            [sys.executable, "-m", "trainproof", "doctor", str(repo), srv.url, "--jobs", str(jobs)],
            cwd=repo,
            capture_output=True,
            env=env,
            timeout=3600,
        )
        url, pages, auth_seen = srv.url, srv.pages, set(srv.auth_seen)
    after = snapshot(root)
    doc = json.loads(body)
    outputs = {
        "json": body.decode(),
        "stderr": p.stderr.decode(),
        "text": text.stdout.decode(),
        "text stderr": text.stderr.decode(),
        "sarif": sarif.read_text(encoding="utf-8"),
        "html": page.read_text(encoding="utf-8"),
    }
    forms = secret_forms() + [T17.SECRET]
    leaked = [f"{k}: {f!r}" for k, v in outputs.items() for f in forms if f in v]
    by = {}
    for r in doc["reports"]:
        by[_rel(r["file"], repo)] = r
    wrong, missing = [], []
    expected = {**T17.EXPECTED, **EXPECTED}
    for rel, want in expected.items():
        r = by.get(rel)
        if r is None:
            missing.append(rel)
        elif r["verdict"] not in ({want} if isinstance(want, str) else want):
            wrong.append(f"{rel}: {r['verdict']} {(r.get('error') or '')[:200]}")
    for rel, word in NOT_CHECKED.items():
        r = by.get(rel)
        if r is None:
            missing.append(rel)
        elif r["verdict"] != "NOT-CHECKED" or word not in _reason(r):
            wrong.append(f"{rel}: {r['verdict']} {_reason(r)[:200]}")
    server = {rel.rsplit("/", 1)[1]: r for rel, r in by.items() if rel.startswith(url)}
    for rid, want in SERVER_JUDGED.items():
        if rid not in server:
            missing.append(rid)
        elif server[rid]["verdict"] != want:
            wrong.append(f"{rid}: {server[rid]['verdict']} {server[rid].get('error')}")
    for rid, word in SERVER_NOT_CHECKED.items():
        if rid not in server:
            missing.append(rid)
        elif (
            server[rid]["verdict"] != "NOT-CHECKED" or not server[rid].get("error") or word not in server[rid]["error"]
        ):
            wrong.append(f"{rid}: {server[rid]['verdict']} {server[rid].get('error')}")
    not_runs = [
        rel
        for rel in NOT_RUNS
        if rel in by or any(rel in map(lambda a: _rel(a, repo), r.get("also") or ()) for r in by.values())
    ]
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    verdicts: dict[str, int] = {}
    for r in doc["reports"]:
        verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
    return {
        "rc": rc,
        "text_rc": text.returncode,
        "wall": wall,
        "peak_mib": peak_kib / 1024,
        "peak_bytes": peak_kib * 1024,
        "reports": len(doc["reports"]),
        "ignored": len(doc.get("ignored", [])),
        "verdicts": verdicts,
        "server_runs": len(server),
        "history_pages": pages,
        "credentials_sent": any(a.startswith("Basic ") for a in auth_seen),
        # the echoed credentials reached the report, masked
        "echo_name": (server.get("echo1") or {}).get("meta", {}).get("run", ""),
        "wrong": wrong,
        "missing": missing,
        "not_runs": not_runs,
        "leaked": leaked,
        "forms_checked": len(forms),
        "outputs_checked": sorted(outputs),
        "canary": sorted(k for k, v in outputs.items() if CANARY in v),
        "canary_atime_checked": atime_checked,
        "canary_atime_changed": atime_checked and canary.stat().st_atime_ns != canary_atime,
        "entries": len(before),
        "changed": changed,
        "internal_error": [k for k, v in outputs.items() if "internal error" in v or "Traceback" in v],
    }
