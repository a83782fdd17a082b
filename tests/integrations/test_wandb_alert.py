"""W&B alerts for new findings (``trainproof.integrations.wandb_alert.WandbAlert``).

The fast tests give the callable a stand-in run object; the slow ones run the real wandb
client offline (every folder under tmp_path, nothing sent), train a tiny model with the
in-loop monitor and read the alerts back from the run's ``.wandb`` transaction log, decoded
with wandb's own ``Record`` protobuf.
"""

from __future__ import annotations

import logging
import math
import struct
import subprocess
import sys
import time
import zlib
from datetime import timedelta
from pathlib import Path

import pytest

wandb = pytest.importorskip("wandb")

from trainproof import Level  # noqa: E402
from trainproof.findings import Finding  # noqa: E402
from trainproof.integrations.wandb_alert import WandbAlert, alert_text  # noqa: E402

LOGGER = "trainproof.integrations.wandb_alert"


def nan_finding() -> Finding:
    return Finding(
        "TP-NAN",
        Level.FAIL,
        "loss is non-finite from step 40",
        "40 of 80 logged losses (loss) are non-finite (40 NaN); the first is at step 40 (line 41).",
        step=40.0,
    )


def warn_finding() -> Finding:
    return Finding("TP-GRAD-SPIKE", Level.WARN, "gradient norm spikes to 0.7033 at step 1", "largest 0.7033", step=1.0)


class FakeRun:
    """Records the ``alert`` calls; raises ``error`` from each when given."""

    def __init__(self, error: Exception | None = None) -> None:
        self.calls: list[dict] = []
        self.error = error

    def alert(self, **kw) -> None:
        if self.error is not None:
            raise self.error
        self.calls.append(kw)


# --------------------------------------------------------------------------- fast: the callable


def test_fail_posts_error_and_warn_posts_warn_with_the_numbers():
    run = FakeRun()
    alert = WandbAlert(run=run, wait_duration=30)
    alert(nan_finding())
    alert(warn_finding())
    assert [c["title"] for c in run.calls] == ["TP-NAN", "TP-GRAD-SPIKE"]
    assert [c["level"] for c in run.calls] == [wandb.AlertLevel.ERROR, wandb.AlertLevel.WARN]
    assert all(c["wait_duration"] == 30 for c in run.calls)
    text = run.calls[0]["text"]
    assert "loss is non-finite from step 40" in text and "40 of 80" in text and "line 41" in text
    assert text.endswith("at step 40")
    assert alert.posted == ["TP-NAN", "TP-GRAD-SPIKE"] and alert.failed == []


def test_min_level_fail_skips_warnings_and_info_is_never_posted():
    run = FakeRun()
    alert = WandbAlert(run=run, min_level="fail")
    alert(warn_finding())
    alert(Finding("TP-THROUGHPUT", Level.INFO, "steps per second"))
    alert(nan_finding())
    assert [c["title"] for c in run.calls] == ["TP-NAN"]
    run2 = FakeRun()
    WandbAlert(run=run2)(Finding("TP-PASS", Level.PASS, "no problem found"))
    assert run2.calls == []


def test_alert_text_leaves_out_empty_parts():
    assert alert_text(Finding("TP-X", Level.WARN, "only a message")) == "only a message"
    assert alert_text(Finding("TP-X", Level.WARN, "m", "e", step=2.5)) == "m\ne\nat step 2.5"


@pytest.mark.parametrize(
    "error",
    [RuntimeError("service down"), wandb.errors.UsageError("run is finished"), ConnectionError("no route")],
)
def test_a_wandb_failure_is_logged_never_raised(error, caplog):
    alert = WandbAlert(run=FakeRun(error))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        alert(nan_finding())  # must not raise
    assert alert.posted == [] and alert.failed == ["TP-NAN"]
    assert "could not post TP-NAN" in caplog.text and type(error).__name__ in caplog.text


def test_no_active_run_is_a_logged_no_op(monkeypatch, caplog):
    monkeypatch.setattr(wandb, "run", None)
    alert = WandbAlert()  # creating it before wandb.init is allowed
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        alert(nan_finding())
        alert(warn_finding())
    assert alert.posted == [] and alert.failed == ["TP-NAN", "TP-GRAD-SPIKE"]
    assert caplog.text.count("no active W&B run") == 1  # warned once, not per finding


def test_the_active_run_is_looked_up_at_each_call(monkeypatch):
    alert = WandbAlert()
    run = FakeRun()
    monkeypatch.setattr(wandb, "run", run)
    alert(nan_finding())
    assert [c["title"] for c in run.calls] == ["TP-NAN"]


@pytest.mark.parametrize(
    "kw,error",
    [
        ({"min_level": "INFO"}, ValueError),
        ({"min_level": "loud"}, ValueError),
        ({"wait_duration": -1}, ValueError),
        ({"wait_duration": timedelta(seconds=-5)}, ValueError),
        ({"wait_duration": math.nan}, ValueError),
        ({"wait_duration": "1m"}, TypeError),
        ({"wait_duration": True}, TypeError),
    ],
)
def test_bad_arguments_raise_at_construction(kw, error):
    with pytest.raises(error):
        WandbAlert(run=FakeRun(), **kw)


def test_missing_wandb_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # makes `import wandb` raise ImportError
    with pytest.raises(ImportError, match=r'pip install "trainproof\[wandb\]"'):
        WandbAlert()


@pytest.mark.slow
def test_importing_the_module_imports_no_wandb():
    code = (
        "import sys, trainproof, trainproof.integrations, trainproof.integrations.wandb_alert as w;"
        "assert 'wandb' not in sys.modules, 'imported';"
        "assert callable(w.WandbAlert)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# --------------------------------------------------------------------------- slow: real wandb, offline


def read_records(path: Path):
    """The ``Record`` protobufs of a ``.wandb`` transaction log.

    The file is a LevelDB-style log: a 7-byte header (``:W&B``, magic 0xBEE1, version 0),
    then 32 KiB blocks of chunks, each ``crc32 (4) | length (2, LE) | type (1) | data``
    with type FULL=1, FIRST=2, MIDDLE=3, LAST=4; a block tail shorter than a chunk header
    is zero padding. The CRC covers the type byte and the data.
    """
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    assert data[:4] == b":W&B" and struct.unpack("<H", data[4:6])[0] == 0xBEE1 and data[6] == 0
    pos, block, out, parts = 7, 32768, [], []
    while pos + 7 <= len(data):
        if block - pos % block < 7:
            pos += block - pos % block
            continue
        crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if kind == 0 and length == 0:  # zero padding at the end of the file
            break
        if pos + 7 + length > len(data):  # a chunk still being written
            break
        chunk = data[pos + 7 : pos + 7 + length]
        assert zlib.crc32(chunk, zlib.crc32(bytes([kind]))) == crc
        pos += 7 + length
        parts.append(chunk)
        if kind in (1, 4):
            rec = pb.Record()
            rec.ParseFromString(b"".join(parts))
            out.append(rec)
            parts = []
    return out


@pytest.fixture
def offline_wandb(tmp_path, monkeypatch):
    """wandb in offline mode with every folder it writes under tmp_path."""
    for var, sub in [("HOME", "home"), ("WANDB_DIR", "wb"), ("WANDB_CACHE_DIR", "cache"), ("WANDB_CONFIG_DIR", "cfg")]:
        (tmp_path / sub).mkdir()
        monkeypatch.setenv(var, str(tmp_path / sub))
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DISABLE_GIT", "true")
    yield tmp_path
    if wandb.run is not None:
        wandb.finish()
    wandb.teardown()  # the next test's wandb.init reads its own environment


def train(on_alert, nan_from: int | None, steps: int):
    """A tiny MLP under ``trainproof.watch``; the logged loss is NaN from ``nan_from``."""
    import torch

    import trainproof

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        g = torch.Generator().manual_seed(0)
        X = torch.randn(512, 8, generator=g)
        Y = torch.tanh(X @ torch.randn(8, 1, generator=g)) + 0.05 * torch.randn(512, 1, generator=g)
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        mon = trainproof.watch(model, opt, check_every=25, policy="silent", on_alert=on_alert)
        batches = torch.Generator().manual_seed(1)
        for step in range(steps):
            idx = torch.randint(0, 512, (32,), generator=batches)
            loss = torch.nn.functional.mse_loss(model(X[idx]), Y[idx])
            opt.zero_grad()
            loss.backward()
            mon.log(step, math.nan if nan_from is not None and step >= nan_from else loss.item())
            opt.step()
        return mon.report(print_it=False)
    finally:
        torch.set_num_threads(threads)


def run_and_read(on_alert_of, nan_from, steps):
    """Train inside an offline wandb run; returns (report, announced findings, the
    callable, the records of the run's ``.wandb`` file)."""
    pytest.importorskip("torch")
    run = wandb.init(project="trainproof-test")
    sync_file = Path(run.settings.sync_file)
    alert = on_alert_of()
    announced: list[Finding] = []

    def on_alert(f: Finding) -> None:
        announced.append(f)
        alert(f)

    rep = train(on_alert, nan_from, steps)
    run.log({"done": 1})
    wandb.finish()
    return rep, announced, alert, closed_log(sync_file)


def closed_log(path: Path, deadline_s: float = 60.0):
    """The records of a finished run's ``.wandb`` file once it holds the run's ``exit``
    record. ``wandb.finish`` can return before wandb-core has flushed the file;
    ``wandb.teardown`` stops the service, after which the file is whole."""
    wandb.teardown()
    end = time.monotonic() + deadline_s
    while True:
        records = read_records(path)
        if any(r.WhichOneof("record_type") == "exit" for r in records) or time.monotonic() > end:
            break
        time.sleep(0.05)
    assert any(r.WhichOneof("record_type") == "exit" for r in records), f"{path} never got its exit record"
    return records


@pytest.mark.slow
def test_a_nan_run_posts_one_alert_per_finding_id(offline_wandb):
    rep, announced, alert, records = run_and_read(WandbAlert, nan_from=60, steps=150)
    assert rep.verdict is Level.FAIL
    alerts = [r.alert for r in records if r.WhichOneof("record_type") == "alert"]
    titles = [a.title for a in alerts]
    assert "TP-NAN" in titles
    assert len(titles) == len(set(titles))  # once per finding id, though checked every 25 steps
    assert titles == [f.id for f in announced] == alert.posted
    by_id = {f.id: f for f in announced}
    for a in alerts:
        f = by_id[a.title]
        assert a.level == ("ERROR" if f.level is Level.FAIL else "WARN")
        assert f.message in a.text and f.evidence in a.text
    nan = next(a for a in alerts if a.title == "TP-NAN")
    assert nan.level == "ERROR"
    assert "from step 60" in nan.text and "NaN" in nan.text
    assert nan.wait_duration == 60_000  # W&B's default, in milliseconds


@pytest.mark.slow
def test_a_healthy_run_posts_no_alert(offline_wandb):
    rep, announced, alert, records = run_and_read(WandbAlert, nan_from=None, steps=150)
    assert rep.verdict is Level.PASS and announced == []
    kinds = [r.WhichOneof("record_type") for r in records]
    assert "history" in kinds and "run" in kinds  # the reader sees the run's records
    assert "alert" not in kinds and alert.posted == []


@pytest.mark.slow
def test_a_finished_run_is_warned_about_not_raised(offline_wandb, caplog):
    run = wandb.init(project="trainproof-test")
    alert = WandbAlert(run=run, wait_duration=timedelta(minutes=5))
    wandb.finish()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        alert(nan_finding())  # wandb raises UsageError on a finished run; it stays here
    assert alert.failed == ["TP-NAN"] and "UsageError" in caplog.text


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:`isinstance\\(treespec, LeafSpec\\)` is deprecated")
def test_the_lightning_callback_posts_the_fail_before_it_stops(offline_wandb):
    pytest.importorskip("torch")
    pytest.importorskip("lightning.pytorch")
    from _lightning_runs import fit

    from trainproof.integrations.lightning import TrainproofCallback

    run = wandb.init(project="trainproof-test")
    sync_file = Path(run.settings.sync_file)
    alert = WandbAlert()  # the active run, looked up when a finding comes
    cb = TrainproofCallback(policy="stop_on_fail", check_every=10, on_alert=alert)
    trainer = fit(cb, "sgd", 10.0)  # SGD at lr 10: NaN within a few steps
    wandb.finish()
    alerts = [r.alert for r in closed_log(sync_file) if r.WhichOneof("record_type") == "alert"]
    assert cb.stopped_at == trainer.global_step and trainer.global_step <= 20
    fail_ids = {f.id for f in cb.report.findings if f.level is Level.FAIL}
    assert "TP-NAN" in fail_ids
    titles = [a.title for a in alerts]
    assert len(titles) == len(set(titles)) and titles == alert.posted
    assert fail_ids <= set(titles)
    assert all(a.level == "ERROR" for a in alerts if a.title in fail_ids)
