"""Remote paths: `epoch URL` and `doctor URL` against a real S3-compatible server (moto in
server mode on loopback), giving the same verdicts as the same files on disk.

The S3 tests skip when s3fs, moto or boto3 is absent; the tests of a missing extra and of
local paths (which must never import fsspec) run everywhere.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from _s3_server import (  # noqa: F401
    BUCKET,
    _free_port,  # noqa: F401
    s3_server,
)

from conftest import REPO, healthy_rows, run_cli, write_jsonl

GALLERY = REPO / "examples" / "gallery"


def build_tree(root: Path) -> Path:
    """A small tree of runs in every shape doctor has to find: single logs, HF output
    folders with checkpoint snapshots, TensorBoard folders (one shard, two shards, Keras'
    train/validation split), an MLflow run, a gzip log, and files that are not logs."""

    def cp(src: str, dst: str) -> None:
        (root / dst).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(GALLERY / src, root / dst)

    hf_state = "hf/healthy/seed0/trainer_state.json"
    events = next((GALLERY / "hf/healthy/seed0/runs").glob("*/events.out.tfevents.*"))
    cp(hf_state, "hf/healthy/trainer_state.json")
    cp(str(events.relative_to(GALLERY)), f"hf/healthy/runs/Nov30/{events.name}")
    cp("hf/lr_zero/seed0/trainer_state.json", "hf/lr_zero/trainer_state.json")
    for n in (100, 200):  # snapshots folded into the top-level state
        cp("hf/lr_zero/seed0/trainer_state.json", f"hf/lr_zero/checkpoint-{n}/trainer_state.json")
    cp("torch/healthy/seed0/metrics.jsonl", "torch/healthy/metrics.jsonl")
    cp("torch/lr_zero/seed0/metrics.jsonl", "torch/lr_zero/metrics.jsonl")
    cp("lightning/bad_labels/seed0/csv/version_0/metrics.csv", "lightning/bad_labels/csv/version_0/metrics.csv")
    cp("keras/lr_hot/seed0/training.log", "keras/lr_hot/training.log")
    cp("coqui/healthy/seed0/trainer_0_log.txt", "coqui/healthy/trainer_0_log.txt")
    # A resumed TensorBoard run: two shards in one folder, judged as one run.
    cp(str(events.relative_to(GALLERY)), "tb_resumed/events.out.tfevents.1796045537.vm.1.0")
    cp(str(events.relative_to(GALLERY)), "tb_resumed/events.out.tfevents.1796045999.vm.1.1")
    # Keras' TensorBoard callback: <log_dir>/train/ + <log_dir>/validation/ are one run.
    lt = next((GALLERY / "lightning/healthy/seed0/tb/version_0").glob("events.out.tfevents.*"))
    cp(str(events.relative_to(GALLERY)), f"keras_tb/train/{events.name}")
    cp(str(lt.relative_to(GALLERY)), f"keras_tb/validation/{lt.name}")
    # An MLflow file-store run (metric files without suffix, nested metric names).
    run = root / "mlruns" / "0" / "cb0096518b0e4c66a94428555f05420b"
    (run / "metrics" / "train").mkdir(parents=True)
    (run / "params").mkdir()
    (run / "meta.yaml").write_text("run_id: cb0096518b0e4c66a94428555f05420b\nstatus: 3\n")
    (run / "params" / "lr").write_text("0.001")
    rows = healthy_rows(60)
    (run / "metrics" / "loss").write_text(
        "".join(f"{1_664_364_007_310 + i} {r['loss']} {r['step']}\n" for i, r in enumerate(rows))
    )
    (run / "metrics" / "train" / "lr").write_text(
        "".join(f"{1_664_364_007_310 + i} 0.001 {r['step']}\n" for i, r in enumerate(rows))
    )
    (root / "gz").mkdir()
    with gzip.open(root / "gz" / "metrics.jsonl.gz", "wb") as f:
        f.write((GALLERY / "torch/lr_hot/seed0/metrics.jsonl").read_bytes())
    write_jsonl(root / "table" / "data.jsonl", [{"a": i, "b": i * 2} for i in range(20)])  # not a log
    (root / "notes.json").write_text('{"hello": 1}')
    write_jsonl(root / ".venv" / "lib" / "metrics.jsonl", healthy_rows(20))  # pruned by name
    (root / "env1").mkdir()
    (root / "env1" / "pyvenv.cfg").write_text("home = /usr/bin\n")  # a virtual environment
    write_jsonl(root / "env1" / "lib" / "metrics.jsonl", healthy_rows(20))
    write_jsonl(root / "pkg.egg-info" / "metrics.jsonl", healthy_rows(20))
    write_jsonl(root / "node_modules" / "x" / "metrics.jsonl", healthy_rows(20))
    return root


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    return build_tree(tmp_path_factory.mktemp("remote") / "tree")


@pytest.fixture(scope="module")
def s3(tree):
    with s3_server(tree) as (client, env):
        yield client, env


URL = f"s3://{BUCKET}/tree"


def _as_url(out: str, tree: Path) -> str:
    return out.replace(str(tree), URL)


# ------------------------------------------------------------------------- S3 (moto)


@pytest.mark.slow
@pytest.mark.parametrize(
    "rel",
    [
        "torch/lr_zero/metrics.jsonl",
        "hf/lr_zero/trainer_state.json",
        "tb_resumed",
        "keras_tb",
        "mlruns/0/cb0096518b0e4c66a94428555f05420b",
        "gz/metrics.jsonl.gz",
        "coqui/healthy/trainer_0_log.txt",
    ],
)
def test_epoch_url_gives_the_local_report(s3, tree, rel):
    lcode, lout, _, _ = run_cli("epoch", str(tree / rel), "--json")
    rcode, rout, rerr, doc = run_cli("epoch", f"{URL}/{rel}", "--json")
    assert rcode == lcode, rerr
    assert rout == _as_url(lout, tree)
    assert doc["reports"][0]["file"] == f"{URL}/{rel}"
    assert os.path.join(tempfile.gettempdir(), "trainproof-") not in rout  # never the temporary copy


@pytest.mark.slow
def test_epoch_url_text_names_the_url(s3):
    code, out, _, _ = run_cli("epoch", f"{URL}/torch/lr_zero/metrics.jsonl")
    assert code == 1 and out.startswith(f"{URL}/torch/lr_zero/metrics.jsonl\n") and "TP-ZERO-LR" in out


@pytest.mark.slow
def test_doctor_bucket_gives_the_local_output(s3, tree):
    lcode, lout, _, ldoc = run_cli("doctor", str(tree), "--json", "--jobs", "1")
    rcode, rout, rerr, rdoc = run_cli("doctor", URL + "/", "--json", "--jobs", "1")
    assert rcode == lcode == 1, rerr
    assert rout == _as_url(lout, tree)
    files = [r["file"] for r in rdoc["reports"]]
    assert f"{URL}/tb_resumed" in files and f"{URL}/keras_tb" in files  # folders, one run each
    assert f"{URL}/mlruns/0/cb0096518b0e4c66a94428555f05420b" in files
    hf = next(r for r in rdoc["reports"] if r["file"] == f"{URL}/hf/lr_zero/trainer_state.json")
    assert len(hf["snapshots"]) == 2 and hf["snapshots"][0].startswith(URL)
    assert not any(d in f for f in files for d in (".venv", "env1", "egg-info", "node_modules"))
    assert {i["file"] for i in rdoc["ignored"]} >= {f"{URL}/table/data.jsonl", f"{URL}/notes.json"}
    verdicts = {r["file"].split("/tree/")[1]: r["verdict"] for r in rdoc["reports"]}
    assert verdicts["torch/healthy/metrics.jsonl"] == "PASS" and verdicts["torch/lr_zero/metrics.jsonl"] == "FAIL"


@pytest.mark.slow
def test_doctor_bucket_in_processes_and_bounded(s3, tree):
    # Runs fetched by pool workers forked after the listing; output order unchanged.
    _, lout, _, _ = run_cli("doctor", str(tree), "--json", "--jobs", "1")
    code, out, err, _ = run_cli("doctor", URL, "--json", "--jobs", "2")
    assert out == _as_url(lout, tree), err
    _, lout, _, _ = run_cli("doctor", str(tree), "--json", "--max-depth", "1", "--max-files", "4")
    _, out, _, doc = run_cli("doctor", URL, "--json", "--max-depth", "1", "--max-files", "4")
    assert out == _as_url(lout, tree) and any("--max-files" in i["reason"] for i in doc["ignored"])


@pytest.mark.slow
def test_a_large_file_that_is_no_log_is_fetched_only_to_its_head(s3):
    from trainproof.remote import FIRST_BYTES, staged

    client, _ = s3
    vocab = {f"tok{i}": i for i in range(200_000)}  # a tokenizer.json-like 3 MB object
    client.put_object(Bucket=BUCKET, Key="out/tokenizer.json", Body=json.dumps({"model": {"vocab": vocab}}))
    client.put_object(Bucket=BUCKET, Key="out/empty.jsonl", Body=b"")
    log = "".join(json.dumps({**r, "pad": "x" * 400}) + "\n" for r in healthy_rows(3000, every=1))
    client.put_object(Bucket=BUCKET, Key="out/long/metrics.jsonl", Body=log.encode())
    with staged(f"s3://{BUCKET}/out/tokenizer.json") as p:
        assert p.stat().st_size == FIRST_BYTES + 1
    with staged(f"s3://{BUCKET}/out/long/metrics.jsonl") as p:  # a log larger than the first request
        assert p.stat().st_size == len(log) > FIRST_BYTES
    code, out, err, doc = run_cli("doctor", f"s3://{BUCKET}/out", "--json")
    # an empty file is no run, whatever its name
    assert [i["file"] for i in doc["ignored"]] == [
        f"s3://{BUCKET}/out/empty.jsonl",
        f"s3://{BUCKET}/out/tokenizer.json",
    ]
    assert [(r["file"], r["error"]) for r in doc["reports"]] == [(f"s3://{BUCKET}/out/long/metrics.jsonl", None)]
    assert doc["reports"][0]["records"] == 3000


@pytest.mark.slow
def test_missing_object_and_bucket_are_exit_2(s3):
    code, out, err, doc = run_cli("epoch", f"{URL}/nope.jsonl", "--json")
    assert code == 2 and "no such file" in doc["reports"][0]["error"]
    code, out, err, doc = run_cli("doctor", "s3://no-such-bucket-here/", "--json")
    assert code == 2 and "no such file" in doc["error"]
    code, out, err, doc = run_cli("doctor", f"s3://{BUCKET}/empty/", "--json")
    assert code == 2 and doc["error"]


@pytest.mark.slow
def test_staging_streams_a_large_object(s3, tmp_path):
    """The copy never holds the object in memory: a 25 MB log staged with a small peak."""
    client, env = s3
    big = tmp_path / "big.jsonl"
    line = b'{"step": %d, "loss": 0.5, "lr": 0.001, "pad": "' + b"x" * 200 + b'"}\n'
    with open(big, "wb") as f:
        for i in range(100_000):
            f.write(line % i)
    client.upload_file(str(big), BUCKET, "big/run.jsonl")
    code = (
        "import tracemalloc, sys\n"
        "from trainproof.remote import staged\n"
        "tracemalloc.start()\n"
        # A first, small object: the client, its credentials and botocore's service model
        # are set up once per process, whatever the size of what is read.
        f"with staged('s3://{BUCKET}/tree/notes.json') as p:\n"
        "    pass\n"
        "tracemalloc.reset_peak()\n"
        "before = tracemalloc.get_traced_memory()[0]\n"
        f"with staged('s3://{BUCKET}/big/run.jsonl') as p:\n"
        "    size = p.stat().st_size\n"
        "print(size, tracemalloc.get_traced_memory()[1] - before)\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env={**os.environ, **env}
    )
    assert p.returncode == 0, p.stderr
    size, peak = map(int, p.stdout.split())
    assert size == big.stat().st_size > 20_000_000
    # A few read chunks in flight (the client's response body, the chunk, the file's write
    # buffer), never the object: 5 chunks of 1 MiB are a fifth of it.
    from trainproof.remote import _CHUNK

    assert peak < 5 * _CHUNK < size / 4, peak


# ------------------------------------------------------------------ other protocols


@pytest.mark.slow
def test_memory_and_file_urls(tree):
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    for p in sorted(tree.rglob("*")):
        if p.is_file():
            fs.pipe(f"/tp-tree/{p.relative_to(tree).as_posix()}", p.read_bytes())
    try:
        _, lout, _, _ = run_cli("doctor", str(tree), "--json", "--jobs", "1")
        code, out, err, _ = run_cli("doctor", "memory://tp-tree", "--json", "--jobs", "1")
        assert out == lout.replace(str(tree), "memory://tp-tree"), err
        _, lout, _, _ = run_cli("epoch", str(tree / "tb_resumed"), "--json")
        _, out, _, _ = run_cli("epoch", "memory://tp-tree/tb_resumed", "--json")
        assert out == lout.replace(str(tree), "memory://tp-tree")
    finally:
        fs.rm("/tp-tree", recursive=True)
    furl = "file://" + tree.as_posix()
    _, lout, _, _ = run_cli("doctor", str(tree), "--json", "--jobs", "1")
    _, out, _, _ = run_cli("doctor", furl, "--json", "--jobs", "1")
    assert out == lout.replace(str(tree), furl)
    code, out, _, doc = run_cli("epoch", f"{furl}/torch/lr_zero/metrics.jsonl", "--json")
    assert code == 1 and doc["reports"][0]["file"] == f"{furl}/torch/lr_zero/metrics.jsonl"


# ------------------------------------------------------- missing extra, local paths


def test_without_fsspec_a_url_is_exit_2_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "fsspec", None)  # `import fsspec` raises ImportError
    code, out, err, doc = run_cli("epoch", "s3://bucket/run.jsonl", "--json")
    assert code == 2 and "trainproof[remote]" in doc["reports"][0]["error"]
    code, out, err, doc = run_cli("doctor", "s3://bucket/", "--json")
    assert code == 2 and "trainproof[remote]" in doc["error"]
    code, out, err, _ = run_cli("doctor", "gs://bucket/")
    assert code == 2 and "trainproof[remote]" in err


def test_without_s3fs_an_s3_url_is_exit_2_naming_the_extra(monkeypatch):
    pytest.importorskip("fsspec")
    registry = sys.modules["fsspec.registry"]  # a module; `fsspec.registry` is its mapping
    # fsspec keeps the classes it imported: forget S3's, as in a fresh process.
    monkeypatch.delitem(registry._registry, "s3", raising=False)
    monkeypatch.setitem(sys.modules, "s3fs", None)
    code, out, err, doc = run_cli("epoch", "s3://bucket/run.jsonl", "--json")
    assert code == 2 and "s3fs" in doc["reports"][0]["error"] and "trainproof[remote]" in doc["reports"][0]["error"]


def test_an_unknown_protocol_is_exit_2(monkeypatch):
    pytest.importorskip("fsspec")
    code, out, err, doc = run_cli("epoch", "nosuchproto://x/run.jsonl", "--json")
    assert code == 2 and doc["reports"][0]["error"]


@pytest.mark.slow
def test_a_local_path_never_imports_fsspec_or_opens_a_socket(tmp_path):
    write_jsonl(tmp_path / "runs" / "a" / "metrics.jsonl", healthy_rows(60))
    code = (
        "import socket, sys\n"
        "def refuse(*a, **k):\n"
        "    raise SystemExit('network touched')\n"
        "socket.socket.connect = socket.socket.connect_ex = refuse\n"
        "socket.create_connection = socket.getaddrinfo = refuse\n"
        "from trainproof.cli import main\n"
        "for args in (['epoch', sys.argv[1] + '/runs/a/metrics.jsonl'], ['doctor', sys.argv[1], '--jobs', '1']):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit as e:\n"
        "        assert e.code == 0, e.code\n"
        "heavy = [m for m in ('fsspec', 's3fs', 'botocore', 'dask', 'distributed', 'ray') if m in sys.modules]\n"
        "print('IMPORTED', heavy, file=sys.stderr)\n"
        "assert not heavy, heavy\n"
    )
    p = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "IMPORTED []" in p.stderr


@pytest.mark.parametrize("depth, files", [(None, None), (0, None), (1, None), (2, 5), (None, 1), (3, 9)])
def test_a_listing_is_walked_like_the_disk(tree, depth, files):
    """The walk of an object listing (remote doctor) finds, prunes, groups and cuts what
    discover.walk does on the same tree on disk."""
    from trainproof.discover import group_runs, walk
    from trainproof.remote import _to_urls, _walk_listing

    keys = [p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file()]
    lcuts, rcuts = [], []
    local = _to_urls(group_runs(walk(tree, depth, files, lcuts)), tree, "u:/", None, [])
    remote = _to_urls(group_runs(_walk_listing(sorted(keys, reverse=True), depth, files, rcuts)), None, "u:/", None, [])
    assert [(c.path, c.snapshots) for c in remote] == [(c.path, c.snapshots) for c in local]
    lim_l, lim_r = [], []
    _to_urls([], tree, "u:/", lim_l, lcuts)
    _to_urls([], None, "u:/", lim_r, rcuts)
    assert lim_r == lim_l


@pytest.mark.slow
def test_is_url():
    from trainproof.remote import is_url

    assert is_url("s3://b/k") and is_url("gs://b") and is_url("file:///x") and is_url("memory://x")
    assert not is_url("runs/a.jsonl") and not is_url(Path("s3://b/k")) and not is_url("C://x")
    assert not is_url("/abs/path") and not is_url("a:b")


# --------------------------------------------------------------------------- passwords


@pytest.mark.parametrize(
    "url",
    [
        "http://alice:s3cret@127.0.0.1:9",  # an MLflow server
        "http://alice:s3cret@127.0.0.1:9/#/experiments/1/runs/abc",
        "s3://key:s3cret@bucket/run/log.jsonl",
        "ftp://alice:s3c@ret@host/runs/",  # a password holding '@'
    ],
)
@pytest.mark.parametrize("command", ["doctor", "epoch"])
def test_a_url_holding_a_password_is_refused_and_the_password_never_printed(url, command):
    for as_json in (False, True):
        code, out, err, _ = run_cli(command, url, *(["--json"] if as_json else []))
        assert code == 2
        assert "s3cret" not in out + err and "s3c@ret" not in out + err
        assert "***" in err and "holds a password is not read" in err
        if as_json:
            doc = json.loads(out)
            assert doc["reports"] == [] and "***" in doc["error"]


@pytest.mark.slow
def test_the_api_refuses_a_password_url_without_repeating_it():
    from trainproof import api
    from trainproof.formats import ReadError
    from trainproof.remote import shown

    url = "http://alice:s3cret@127.0.0.1:9"
    assert shown(url) == "http://alice:***@127.0.0.1:9"
    assert shown("http://alice@127.0.0.1:9") == "http://alice@127.0.0.1:9"  # no password: as given
    with pytest.raises(ReadError, match=r"alice:\*\*\*@") as e:
        api.read_runlogs(url)
    assert "s3cret" not in str(e.value)
    (rep,) = api.judge_all(url)
    assert rep.file == "http://alice:***@127.0.0.1:9" and "s3cret" not in json.dumps(rep.to_dict())
    reports, skip = api.judge_runs(url)
    assert skip is None and "s3cret" not in json.dumps([r.to_dict() for r in reports])


@pytest.mark.parametrize(
    "url,secret",
    [
        ("postgresql:///tp?host=127.0.0.1&port=1&user=postgres&password=s3cr3tpw", "s3cr3tpw"),
        ("postgresql://u@h/db?sslpassword=k3y&application_name=a", "k3y"),
        ("https://bucket.example/x.jsonl?X-Amz-Signature=5ig&X-Amz-Credential=cr3d", "5ig"),
        ("https://host.example/log.jsonl?token=t0ken", "t0ken"),
    ],
)
def test_a_secret_in_a_query_parameter_is_shown_masked(url, secret):
    from trainproof.remote import shown

    out = shown(url)
    assert secret not in out and "***" in out
    assert out.split("?")[0] == url.split("?")[0]  # the rest of the location is kept


@pytest.mark.slow
def test_a_history_url_with_a_password_parameter_never_prints_it():
    # A PostgreSQL history that cannot be reached: the error line and the --json error
    # name the location with its password masked.
    from conftest import REPO, run_cli

    log = REPO / "examples" / "gallery" / "torch" / "healthy" / "seed0" / "metrics.jsonl"
    url = "postgresql:///tp?host=127.0.0.1&port=1&user=postgres&password=s3cr3tpw&connect_timeout=2"
    code, out, err, doc = run_cli("judge", str(log), "--history", url, "--json")
    assert code == 2 and "s3cr3tpw" not in out + err and "password=***" in out + err
