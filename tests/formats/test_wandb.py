"""The W&B reader (``trainproof.formats.wandb``): real offline runs written by the real
``wandb`` client, read by our reader and by W&B's own (``wandb-core leet inspect``), and
hand-framed logs (``tests/_fuzz_logs.py``) for the framing, the damage and the fields."""

from __future__ import annotations

import json
import math
import struct
import zlib
from pathlib import Path

import _wandb_runs as W
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainproof.api import judge_all, read_runlogs
from trainproof.cli import cli
from trainproof.findings import Level
from trainproof.formats import NoRuns, NotALog, ReadError, ReadState, detect
from trainproof.formats import wandb as tp_wandb

import _fuzz_logs as F

# --------------------------------------------------------------------------- real runs

SPECS = [
    W.Spec("healthy", steps=300, seed=1, config={"epochs": 3, "lr": 1e-3}),
    W.Spec("nan", kind="nan", steps=240, seed=2, nested=True, media_every=40),
    W.Spec(
        "diverged",
        kind="diverged",
        steps=240,
        seed=3,
        loss_key="loss",
        step_metric="train/global_step",
        step_scale=8,
        config={"max_steps": 1920, "num_train_epochs": 2},
    ),
]
EXPECTED = {"healthy": Level.PASS, "nan": Level.FAIL, "diverged": Level.FAIL}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[W.Spec, Path]]:
    """The runs of :data:`SPECS`, written once for the module (about 5 s)."""
    pytest.importorskip("wandb")
    root = tmp_path_factory.mktemp("wandb-runs")
    dirs = W.write_runs(root, SPECS)
    return {s.name: (s, d) for s, d in zip(SPECS, dirs)}


def _log_of(d: Path) -> Path:
    (f,) = d.glob("run-*.wandb")
    return f


@pytest.mark.slow
@pytest.mark.parametrize("name", [s.name for s in SPECS])
def test_every_value_matches_wandbs_own_reader(runs, name, tmp_path):
    """Every (key, step, value, record) we read is one W&B's reader reads, and none is
    missing: compared as exact float bits (NaN equals NaN)."""
    spec, d = runs[name]
    records, _ = W.inspect_records(_log_of(d), tmp_path)
    theirs = W.as_multiset(W.reference_points(records))
    ours, state = W.our_points(d)
    assert len(theirs) >= 2 * spec.steps
    assert W.as_multiset(ours) == theirs
    assert state.drops == []


@pytest.mark.slow
@pytest.mark.parametrize("name", [s.name for s in SPECS])
def test_values_are_what_the_run_logged(runs, name):
    """The loss and learning rate at each step are exactly what ``run.log`` was given;
    nested dicts read as ``a/b``, media and tables are not metrics."""
    spec, d = runs[name]
    state = ReadState()
    got: dict[tuple[str, float], float] = {}
    keys: set[str] = set()
    for rec in tp_wandb.read(d, state):
        keys |= rec.values.keys()
        for k, v in rec.values.items():
            got[k, rec.step] = v
    for i, row in enumerate(W.rows(spec)):
        step = float(W.step_of(spec, i))
        for k in (spec.loss_key, "train/learning_rate"):
            want = row[k]
            assert W.bits(got[k, step]) == W.bits(want), (k, step, got[k, step], want)
    if spec.nested:
        at3 = float(W.step_of(spec, 3))
        assert got["opt/grad/norm", at3] == pytest.approx(1.3) and got["opt/scale", 0.0] == 2.0**16
    assert not any(k.split("/")[0] in ("hist", "table") for k in keys), sorted(keys)
    assert "_step" not in keys and spec.step_metric not in keys
    if spec.kind == "nan":
        assert math.isnan(got[spec.loss_key, float(W.step_of(spec, spec.steps - 1))])


@pytest.mark.slow
def test_run_meta_and_intent(runs):
    spec, d = runs["diverged"]
    state = ReadState()
    list(tp_wandb.read(d, state))
    meta = state.meta
    assert meta["run"] == "diverged" and meta["experiment"] == "trainproof-tests"
    assert d.name.endswith("-" + meta["run_id"])
    assert meta["started"].endswith("Z") and meta["started"][:4].isdigit()
    assert meta["max_steps"] == 1920 and meta["num_train_epochs"] == 2
    assert meta["summary"]["best_loss"] == pytest.approx(min(W.curve(spec)))
    assert any("x axis is 'train/global_step'" in n for n in state.notes)
    (run,) = read_runlogs(d)
    assert run.format == "wandb" and run.step_range == (0.0, float((spec.steps - 1) * 8))
    _, healthy = runs["healthy"]
    st2 = ReadState()
    list(tp_wandb.read(healthy, st2))
    assert st2.meta["num_train_epochs"] == 3 and "max_steps" not in st2.meta


@pytest.mark.slow
@pytest.mark.parametrize("name", [s.name for s in SPECS])
def test_verdict_equals_the_same_metrics_as_jsonl(runs, name, tmp_path):
    spec, d = runs[name]
    jl = tmp_path / f"{name}.jsonl"
    with jl.open("w") as f:
        for i, row in enumerate(W.rows(spec)):
            f.write(
                json.dumps({"step": W.step_of(spec, i), "loss": row[spec.loss_key], "lr": row["train/learning_rate"]})
            )
            f.write("\n")
    (ours,) = judge_all(d)
    (theirs,) = judge_all(jl)
    assert ours.verdict == theirs.verdict == EXPECTED[name]
    assert {f.id for f in ours.findings} == {f.id for f in theirs.findings}
    assert ours.format == "wandb"
    (by_file,) = judge_all(_log_of(d))
    assert by_file.verdict == ours.verdict


@pytest.mark.slow
def test_cli_judges_a_run_folder_and_its_log(runs):
    runner = CliRunner()
    for name, code in (("healthy", 0), ("nan", 1)):
        _, d = runs[name]
        for target in (d, _log_of(d)):
            res = runner.invoke(cli, ["judge", str(target), "--json"], catch_exceptions=False)
            assert res.exit_code == code, res.output[-2000:]
            doc = json.loads(res.stdout)
            (rep,) = doc["reports"]
            assert rep["format"] == "wandb" and rep["verdict"] == EXPECTED[name].value


# --------------------------------------------------------------------------- hand-framed logs


def _read(path: Path) -> tuple[list, ReadState]:
    state = ReadState()
    return list(tp_wandb.read(path, state)), state


def _write(tmp_path: Path, data: bytes, name: str = "run-abc123.wandb") -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_framing_across_block_boundaries(tmp_path):
    data = F.wandb_log_file("healthy")
    assert len(data) > 32 * 1024  # the config record crosses the first block's end
    kinds = set()
    pos = len(F.WANDB_HEADER)
    while pos + 7 <= len(data):
        left = 32 * 1024 - pos % (32 * 1024)
        if left < 7:
            pos += left
            continue
        _, n, k = struct.unpack_from("<IHB", data, pos)
        kinds.add(k)
        pos += 7 + n
    assert {1, 2, 4} <= kinds
    recs, state = _read(_write(tmp_path, data))
    assert [r.step for r in recs] == [float(i) for i in range(F.N)]
    assert [r.values["train/loss"] for r in recs] == F._losses("healthy")
    assert state.meta["run"] == "fuzz-run" and state.meta["run_id"] == "abc123" and state.meta["experiment"] == "fuzz"
    assert state.meta["started"] == "2026-11-30T00:53:20Z"
    assert state.drops == []
    assert detect(tmp_path / "run-abc123.wandb").name == "wandb"


def test_checksum_is_crc32_of_type_and_payload(tmp_path):
    data = F.wandb_log_file("healthy")
    crc, n, kind = struct.unpack_from("<IHB", data, 7)
    assert crc == zlib.crc32(data[13 : 14 + n])
    small = bytearray(_SMALL)  # one block: nothing after the damage to read on from
    small[14 + 2] ^= 0x01  # inside the first record's payload
    with pytest.raises(ReadError, match="checksum"):
        _read(_write(tmp_path, bytes(small)))
    bad = bytearray(data)
    bad[14 + 2] ^= 0x01
    recs, state = _read(_write(tmp_path, bytes(bad)))  # the first block lost, the rest read
    full, _ = _read(_write(tmp_path, data, "run-full.wandb"))
    assert recs and [(r.step, r.values) for r in recs] == [(r.step, r.values) for r in full[-len(recs) :]]
    assert len(state.drops) == 1 and "checksum of the chunk at byte 7" in state.drops[0]


def test_not_a_wandb_log(tmp_path):
    p = _write(tmp_path, b"step,loss\n1,2\n", "run-x.wandb")
    with pytest.raises(NotALog):
        _read(p)
    assert tp_wandb.sniff(p, "") is True  # by name: the reason is about the .wandb log
    q = _write(tmp_path, b"\x00\x01binary junk" * 10, "blob.bin")
    assert tp_wandb.sniff(q, "") is False
    with pytest.raises(NotALog):
        _read(q)
    # the header alone: what the client writes first, a run that has logged nothing yet
    with pytest.raises(NoRuns, match="holds only its file header"):
        _read(_write(tmp_path, F.WANDB_HEADER, "run-y.wandb"))


def test_a_corrupt_record_loses_the_rest_of_its_block_and_reading_goes_on(tmp_path):
    """One damaged chunk inside the log loses the rest of its 32 KiB block only: the
    records from the next block on are read (the broken run's blow-up after the damage is
    still seen), and the hole is said."""
    data = F.wandb_log_file("broken")
    ends = F.wandb_record_ends(data)
    # The config record starts in the first block and ends in the second; every history
    # row lies after it.
    assert ends[0] < F.WANDB_BLOCK < ends[1]
    bad = bytearray(data)
    bad[ends[0] + 9] ^= 0xFF  # inside the config record's first chunk
    recs, state = _read(_write(tmp_path, bytes(bad)))
    full, _ = _read(_write(tmp_path, data, "run-full.wandb"))
    assert [(r.step, r.values) for r in recs] == [(r.step, r.values) for r in full]
    assert len(state.drops) == 1 and "checksum" in state.drops[0] and "read on from the next" in state.drops[0]
    # damage in the last block: the rest of the file is lost, the records before it kept
    late = bytearray(data)
    late[ends[10] + 9] ^= 0xFF
    recs, state = _read(_write(tmp_path, bytes(late)))
    assert [(r.step, r.values) for r in recs] == [(r.step, r.values) for r in full[:9]]
    assert len(state.drops) == 1 and "checksum" in state.drops[0]


@pytest.mark.slow
def test_a_corrupt_wandb_log_is_exit_2_with_one_line(tmp_path):
    """A ``.wandb`` log with no readable record (a checksum that fails at the first
    record, a header alone) is exit 2 with one clear line, for the file, its run folder and
    doctor on the project; never a traceback."""
    from conftest import run_subprocess

    data = bytearray(_SMALL)  # one 32 KiB block: no record after the damage
    data[16] ^= 0x01  # inside the first record's payload
    run = tmp_path / "wandb" / "run-20261203_000000-abc123"
    (run / "files").mkdir(parents=True)
    log = run / "run-abc123.wandb"
    log.write_bytes(bytes(data))
    header_only = tmp_path / "run-def456.wandb"
    header_only.write_bytes(F.WANDB_HEADER)
    for target, why in ((log, "checksum"), (run, "checksum"), (header_only, "holds only its file header")):
        p = run_subprocess("epoch", str(target))
        assert p.returncode == 2, p.stderr
        lines = p.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"trainproof: {target}: ") and why in lines[0], lines
        doc = json.loads(run_subprocess("epoch", str(target), "--json").stdout)
        assert doc["reports"][0]["verdict"] == "NOT-CHECKED" and why in doc["error"]
    p = run_subprocess("doctor", str(tmp_path))
    assert p.returncode == 2 and "Traceback" not in p.stderr + p.stdout
    # the corrupt run could not be judged; the header alone is a run not begun, not a run
    assert "1 not judged" in p.stdout and "checksum" in p.stdout


def _history_only(rows: list[dict[str, str]], step_metric: str = "") -> bytes:
    recs = [F.wandb_run()]
    if step_metric:
        recs.append(F._ld(12, F._ld(2, b"*") + F._ld(4, step_metric.encode())))
    recs += [F.wandb_history(i, r) for i, r in enumerate(rows)]
    return F.wandb_frame(recs)


def test_values_nan_infinity_nested_and_media(tmp_path):
    row = {
        "loss": "NaN",
        "up": "Infinity",
        "down": "-Infinity",
        "d": json.dumps({"a": 1, "b": {"c": 2.5}, "img": {"_type": "image-file", "size": 3}}),
        "media": json.dumps({"_type": "histogram", "values": [1, 2]}),
        "flag": "true",
        "text": '"hello"',
        "none": "null",
        "nested/tbl/_type": '"table-file"',
        "nested/tbl/nrows": "4",
        "nested/x": "7",
    }
    (rec,), _ = _read(_write(tmp_path, _history_only([row])))
    assert math.isnan(rec.values["loss"])
    assert rec.values["up"] == math.inf and rec.values["down"] == -math.inf
    assert rec.values["d/a"] == 1.0 and rec.values["d/b/c"] == 2.5
    assert rec.values["nested/x"] == 7.0
    assert not any(k.startswith(("media", "d/img", "nested/tbl")) for k in rec.values), rec.values
    assert "flag" not in rec.values and "text" not in rec.values
    assert rec.holes == ("none",)


def test_define_metric_step_is_the_x_axis(tmp_path):
    rows = [{"loss": str(2.0 - i / 10), "train/global_step": str(4 * i)} for i in range(5)]
    rows.insert(2, {"loss": "1.85"})  # a row without the step metric: its last value
    recs, state = _read(_write(tmp_path, _history_only(rows, "train/global_step")))
    assert [r.step for r in recs] == [0.0, 4.0, 4.0, 8.0, 12.0, 16.0]
    assert all("train/global_step" not in r.values for r in recs)
    assert any("1 row(s) do not hold" in n for n in state.notes)
    # Defined but never logged: W&B's _step stays the axis.
    recs, _ = _read(_write(tmp_path, _history_only([{"loss": "1"}, {"loss": "2"}], "trainer/global_step")))
    assert [r.step for r in recs] == [0.0, 1.0]


def test_run_folder_detection_and_older_clients(tmp_path):
    run = tmp_path / "wandb" / "run-20240101_120000-abcd1234"
    (run / "files").mkdir(parents=True)
    assert not tp_wandb.sniff_dir(run)
    lines = [
        json.dumps({"_step": i, "_runtime": i, "loss": 2.0 - i / 50, "m": {"_type": "image-file"}}) for i in range(40)
    ]
    (run / "files" / "wandb-history.jsonl").write_text("\n".join(lines) + "\n")
    (run / "files" / "config.yaml").write_text(
        "wandb_version: 1\n\n_wandb:\n  desc: null\n  value:\n    cli_version: 0.15.0\n"
        "max_steps:\n  desc: null\n  value: 40\nepochs:\n  desc: null\n  value: 2\n"
    )
    (run / "files" / "wandb-summary.json").write_text('{"loss": 1.22}')
    assert tp_wandb.sniff_dir(run) and detect(run).name == "wandb"
    recs, state = _read(run)
    assert [r.step for r in recs] == [float(i) for i in range(40)]
    assert all(set(r.values) == {"_runtime", "loss"} for r in recs)
    assert state.meta["max_steps"] == 40 and state.meta["num_train_epochs"] == 2
    assert state.meta["run_id"] == "abcd1234"
    assert state.meta["summary"] == {"loss": 1.22}  # files/wandb-summary.json
    (run / "files" / "wandb-history.jsonl").write_text("\n".join(lines) + '\n{"_step": 40, "lo')
    recs, state = _read(run)
    assert len(recs) == 40 and len(state.drops) == 1
    # A folder holding a .wandb log is a run folder whatever its name.
    other = tmp_path / "latest-run"
    other.mkdir()
    (other / "run-abc123.wandb").write_bytes(F.wandb_log_file())
    assert tp_wandb.sniff_dir(other) and len(_read(other)[0]) == F.N
    assert not tp_wandb.sniff_dir(tmp_path)


_SMALL = _history_only([{"loss": str(1.0 + i / 8), "lr": "0.001"} for i in range(12)])
_SMALL_ENDS = F.wandb_record_ends(_SMALL)


@pytest.mark.slow
def test_truncation_at_every_offset_keeps_every_complete_record(tmp_path):
    """A log cut at any byte: a ReadError, or its complete records and, when it was cut
    inside a record, a drop note; cut cleanly before its first history row, a run that
    logged nothing yet (NoRuns)."""
    full, _ = _read(_write(tmp_path, _SMALL))
    for k in range(len(_SMALL) + 1):
        p = _write(tmp_path, _SMALL[:k])
        complete = sum(1 for e in _SMALL_ENDS if e <= k)
        rows = max(complete - 1, 0)  # the first record is the run record
        try:
            recs, state = _read(p)
        except NoRuns:
            assert rows == 0 and (k in _SMALL_ENDS or k <= len(F.WANDB_HEADER)), k
            continue
        except ReadError:
            assert complete == 0, k
            continue
        assert [(r.step, r.values) for r in recs] == [(r.step, r.values) for r in full[:rows]], k
        cut = k not in _SMALL_ENDS and k > len(F.WANDB_HEADER)
        assert bool(state.drops) == cut, (k, state.drops)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(1, len(_SMALL_ENDS) - 1), junk=st.binary(max_size=600))
def test_bytes_appended_after_a_valid_prefix(tmp_path, cut, junk):
    """Whatever follows a valid prefix holding a history row, the reader raises nothing
    (its first record is complete, so not even ReadError) and keeps every complete record
    of the prefix. (A prefix of the run record alone is a run that logged nothing yet.)"""
    prefix = _SMALL[: _SMALL_ENDS[cut]]
    full, _ = _read(_write(tmp_path, _SMALL))
    recs, _ = _read(_write(tmp_path, prefix + junk))  # the run record is complete: no ReadError
    assert [(r.step, r.values) for r in recs[:cut]] == [(r.step, r.values) for r in full[:cut]]


@pytest.mark.slow
def test_sarif_results_point_at_the_run_file_of_a_run_folder(runs, tmp_path):
    """Code scanning annotates files: a W&B run folder's results point at its .wandb log."""
    _, d = runs["nan"]
    out = tmp_path / "out.sarif"
    res = CliRunner().invoke(cli, ["doctor", str(d), "--sarif", str(out)], catch_exceptions=False)
    assert res.exit_code == 1, res.output[-2000:]
    doc = json.loads(out.read_text())
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in doc["runs"][0]["results"]}
    assert uris and all(u.endswith(f"{d.name}/{_log_of(d).name}") for u in uris), uris
    assert "TP-NAN" in {r["ruleId"] for r in doc["runs"][0]["results"]}


def test_a_run_that_logged_no_numbers_is_not_a_run(tmp_path):
    """Media, tables or a summary only: doctor lists it as not a run, so a healthy project
    is not 'could not judge' because of it."""
    from trainproof.api import doctor

    media = json.dumps({"_type": "image-file", "path": "media/a.png"})
    d = tmp_path / "wandb" / "run-20261203_000000-media1"
    d.mkdir(parents=True)
    (d / "run-media1.wandb").write_bytes(_history_only([{"sample": media}, {"sample": media}]))
    with pytest.raises(NoRuns, match="holds no numbers"):
        read_runlogs(d)
    reports, ignored = doctor(tmp_path)
    assert reports == [] and [i["file"] for i in ignored] == [str(d)]
