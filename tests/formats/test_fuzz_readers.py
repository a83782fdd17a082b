"""Every reader, fuzzed: a log trainproof cannot read is exit 2 with a reason, never a FAIL
about the run, never a traceback, never a verdict silently built on part of the log.

Inputs start from valid logs of each format as their writers produce them
(``tests/_fuzz_logs.py``) and are mutated structure-aware (truncation at every class of
offset, byte flips, duplicated / dropped / reordered records, NaN, Infinity, strings,
nulls, huge and tiny numbers, negative zero, re-encodings, CRLF and bare CR, NUL bytes,
very long lines, another format's bytes spliced in, TFRecord-aware record edits with
valid checksums), then optionally gzip-compressed (or compressed and then damaged); raw
bytes are tried too. Every input goes through ``trainproof epoch PATH --json`` in-process
and must keep the contract (:func:`_fuzz_logs.run_epoch`); one in eight (chosen by its
bytes) runs through the click runner twice and must give byte-identical JSON, the rest
through the same pipeline called as the API (``read_runlog`` + ``judge_runlog`` + the JSON
renderer), which costs a third less.

Budget (profile ``ci``, ``tests/_hypothesis_profiles.py``): 5,010 inputs, measured on
the 2-core machine shared with other jobs at 87 s wall, 64 s CPU; the ``long`` profile
runs 22 times as many. The session
summary prints the figures of each run ("trainproof fuzz (ci profile): N inputs …");
``TRAINPROOF_FUZZ_STATS=path`` also writes them as JSON (``evidence/robustness.py``).
"""

from __future__ import annotations

import gzip
import random
import shutil

import pytest
from hypothesis import given
from hypothesis import strategies as st

import _fuzz_logs as F
from _hypothesis_profiles import active_name, fuzz_settings

pytestmark = pytest.mark.fuzz

TEXT = [
    "hf",
    "jsonl",
    "csv",
    "csv_lightning",
    "csv_keras",
    "csv_wandb",
    "coqui",
    "console",
    "console_epoch",
    "notebook",
    "mlflow_file",
]
BINARY = ["tfevents", "tfevents_hand", "wandb"]


class _Summary:
    """Prints what the fuzz module generated at the end of the session."""

    def pytest_terminal_summary(self, terminalreporter):
        s = F.STATS
        if not s.total():
            return
        per = ", ".join(f"{k} {v}" for k, v in sorted(s.inputs.items()))
        terminalreporter.write_line(
            f"trainproof fuzz ({active_name()} profile): {s.total()} inputs through `epoch --json` in "
            f"{s.seconds():.0f} s; crashes {sum(s.crashes.values())}, tracebacks "
            f"{sum(s.tracebacks.values())}, wrong exit codes {sum(s.wrong_exit.values())} [{per}]"
        )
        F.dump_stats()


@pytest.fixture(scope="module", autouse=True)
def _report(request):
    plugin = _Summary()
    if request.config.pluginmanager.get_plugin("trainproof-fuzz-summary") is None:
        request.config.pluginmanager.register(plugin, name="trainproof-fuzz-summary")
    yield
    F.dump_stats()


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


# --------------------------------------------------------------------------- mutated logs


@pytest.mark.slow
@pytest.mark.parametrize("reader", TEXT + BINARY)
@fuzz_settings(1.0)
@given(kind=st.sampled_from(F.KINDS), plan=st.data())
def test_mutated_log(work, reader, kind, plan):
    lines = F.READERS[reader].lines
    blob = F.apply_plan(F.valid(reader, kind), plan.draw(F.plans(lines), label="plan"), lines)
    F.check_input(F.write_input(work / reader, reader, blob), reader, blob)


_FOLDER_OPS = ("none", "drop_file", "empty_file", "nested", "odd_name", "dir_named_metric")
_ODD_NAMES = ("l o s s", "ĺöss", "loss.gz", ".hidden", "-", "x" * 200)


@pytest.mark.slow
@fuzz_settings(0.5)
@given(
    kind=st.sampled_from(F.KINDS),
    target=st.sampled_from(F.MLFLOW_METRICS),
    plan=F.plans(),
    op=st.sampled_from(_FOLDER_OPS),
    odd=st.sampled_from(_ODD_NAMES),
)
def test_mutated_mlflow_run_folder(work, kind, target, plan, op, odd):
    """An MLflow run folder with one metric file mutated, or a file dropped, emptied, nested,
    oddly named, or a folder where a metric file belongs."""
    files = {m: F.mlflow_metric(kind, m) for m in F.MLFLOW_METRICS}
    files[target] = F.apply_plan(files[target], plan)
    if op == "drop_file":
        del files[target]
    elif op == "empty_file":
        files["empty"] = b""
    elif op == "nested":
        files["train/" + target] = files.pop(target)
    elif op == "odd_name":
        files[odd] = files.pop(target)
    d = work / "mlflow"
    shutil.rmtree(d, ignore_errors=True)
    run = F.write_mlflow_run(d, files)
    if op == "dir_named_metric":
        (run / "metrics" / "dir_only").mkdir()
    F.check_input(run, "mlflow_dir", repr(sorted(files.items())).encode())


@pytest.mark.slow
@fuzz_settings(0.5)
@given(kind=st.sampled_from(F.KINDS), which=st.integers(0, 1), plan=F.plans(lines=False))
def test_tfevents_run_folder_with_a_damaged_shard(work, kind, which, plan):
    """A resumed run: two event files in one folder (tensorboardX's and a hand-framed
    one), one of them damaged."""
    shards = [F.tensorboardx_log("healthy"), F.events_log(kind)]
    shards[which] = F.apply_plan(shards[which], plan, lines=False)
    d = work / "tfrun"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    (d / "events.out.tfevents.1700000000.host.1.0").write_bytes(shards[0])
    (d / "events.out.tfevents.1700000100.host.1.0").write_bytes(shards[1])
    F.check_input(d, "tfevents_dir", shards[0] + shards[1])


# --------------------------------------------------------------------------- raw bytes


@pytest.mark.slow
@pytest.mark.parametrize("reader", TEXT + BINARY)
@fuzz_settings(0.25)
@given(blob=st.data(), gz=st.sampled_from(F.GZ_MODES), seed=st.integers(0, 2**32 - 1))
def test_raw_bytes(work, reader, blob, gz, seed):
    """Random bytes, alone or after the start of a valid log, under the log's name."""
    data = F.gzipped(blob.draw(F.raw_bytes(F.valid(reader)), label="bytes"), gz, random.Random(seed))
    F.check_input(F.write_input(work / ("raw_" + reader), reader, data), reader, data)


# --------------------------------------------------------------------------- truncation

_CLEAN: dict[tuple[str, bytes], F.Outcome] = {}


def _judge_clean(work, reader: str, blob: bytes) -> F.Outcome:
    """The reference judgement of a log of complete records (cached: few distinct ones)."""
    if (reader, blob) not in _CLEAN:
        _CLEAN[reader, blob] = F.run_epoch(
            F.write_input(work / ("clean_" + reader), reader, blob), reader, cli_run=False, new_input=False
        )
    return _CLEAN[reader, blob]


def _keeps_unterminated_tail(reader: str, tail: bytes) -> bool:
    """Readers whose records close themselves read a complete one without a line end."""
    if reader == "jsonl":
        from trainproof.formats.jsonl import parse_line

        return parse_line(tail.decode("utf-8", "replace").strip(), 1) is not None
    if reader == "console":
        from trainproof.formats.console import _DICT

        return bool(_DICT.search(tail.decode("utf-8", "replace")))
    if reader == "notebook":
        # one JSON document, complete at its closing brace with or without the line end
        return tail.strip() == b"}"
    return False


def _clean_prefix(reader: str, kind: str, data: bytes, k: int) -> tuple[bytes, bool, bytes | None]:
    """``(complete records of data[:k], whether a record was cut, the cut record completed)``."""
    prefix = data[:k]
    if reader == "hf":
        entries = F.hf_entries(kind) + [F._HF_SUMMARY]
        _, ends = F.hf_parts(entries)
        j = sum(1 for e in ends if e <= k)
        torn = k < len(data.rstrip())
        return F.hf_parts(entries[:j], tail=False)[0], torn, None
    if not F.READERS[reader].lines:
        ends = F.record_ends(reader, data)
        done = max([e for e in ends if e <= k], default=0)
        return data[:done], k != done, None
    nl = max(prefix.rfind(b"\n"), prefix.rfind(b"\r")) + 1  # "\r" ends a line too (Keras' "\r\n" cut)
    clean, tail = prefix[:nl], prefix[nl:]
    if not tail.strip():
        return prefix, False, None
    if _keeps_unterminated_tail(reader, tail):
        return prefix + b"\n", False, None
    return clean, True, clean + tail + b"\n"


@pytest.mark.slow
@pytest.mark.parametrize("reader", TEXT + BINARY)
@fuzz_settings(0.5)
@given(
    kind=st.sampled_from(F.KINDS),
    cls=st.sampled_from(F.OFFSET_CLASSES),
    seed=st.integers(0, 2**32 - 1),
    gz=st.booleans(),
)
def test_truncated_prefix_is_judged_on_what_it_holds(work, reader, kind, cls, seed, gz):
    """A log cut anywhere is judged on its complete records, and says what it left out, or
    is exit 2; the cut never causes a FAIL that its complete records do not."""
    full = F.valid(reader, kind)
    ends = None
    if reader == "hf":
        ends = F.hf_parts(F.hf_entries(kind) + [F._HF_SUMMARY])[1]
    elif not F.READERS[reader].lines:
        ends = F.record_ends(reader, full)
    k = F.offset(full, cls, random.Random(seed), ends)
    prefix = full[:k]
    blob = gzip.compress(prefix, mtime=0) if gz else prefix
    got = F.check_input(F.write_input(work / ("cut_" + reader), reader, blob), reader, blob)
    if got.code == 2:
        return
    clean, torn, completed = _clean_prefix(reader, kind, full, k)
    want = _judge_clean(work, reader, clean)
    assert got.report["records"] == want.report["records"], (got.report["records"], want.report["records"])
    assert got.ids("FAIL") <= want.ids("FAIL"), (got.ids("FAIL"), want.ids("FAIL"))
    if torn:
        record_cut = completed is None or (
            _judge_clean(work, reader, completed).report["records"] > want.report["records"]
        )
        if record_cut:
            assert "TP-DATA-DROPPED" in got.ids(), (prefix[-80:], got.ids())


@pytest.mark.slow
@pytest.mark.parametrize("reader", TEXT + BINARY)
@fuzz_settings(0.1)
@given(kind=st.sampled_from(F.KINDS), frac=st.floats(0, 1, exclude_max=True))
def test_torn_gzip_stream(work, reader, kind, frac):
    """A .gz cut mid-stream (a copy interrupted, a rotation killed): exit 2, or what was
    read is judged with the loss said, and never a FAIL the whole log does not have."""
    full = F.valid(reader, kind)
    z = gzip.compress(full, mtime=0)
    blob = z[: int(frac * len(z))]
    got = F.check_input(F.write_input(work / ("gzcut_" + reader), reader, blob), reader, blob)
    if got.code != 2:
        assert "TP-DATA-DROPPED" in got.ids()
        assert got.ids("FAIL") <= _judge_clean(work, reader, full).ids("FAIL")


# --------------------------------------------------------------------------- fixed cases


def test_profiles_are_registered():
    from hypothesis import settings

    # The short budget every run pays, and a long one on demand.
    assert 0 < settings.get_profile("ci").max_examples < settings.get_profile("long").max_examples
    assert active_name() in ("ci", "long")


@pytest.mark.slow
def test_every_valid_base_log_is_judged_as_written(work):
    """The starting points are what they claim: healthy logs PASS, broken ones FAIL."""
    for reader in TEXT + BINARY:
        for kind, code in (("healthy", 0), ("broken", 1)):
            p = F.write_input(work / ("base_" + reader), reader, F.valid(reader, kind))
            out = F.run_epoch(p, reader, new_input=False)
            assert out.code == code, (reader, kind, out.ids())
            assert "TP-DATA-DROPPED" not in out.ids(), reader
