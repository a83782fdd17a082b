"""Safe to run on a pull request: the configuration search stays inside the repository, a
broken or hostile configuration is exit 2 naming it, and checkpoints are judged without
being trusted (issue 17). Real files in tmp_path, real processes where the CLI is run."""

from __future__ import annotations

import json

import pytest

from conftest import run_subprocess, write_jsonl, zero_lr_rows


def _zero_lr_rows() -> list[dict]:
    return zero_lr_rows()


def _repo(tmp_path, git_file: bool = False):
    """tmp_path/repo (a repository: .git folder, or a .git file as in a worktree) holding
    sub/run.jsonl with a learning rate of zero throughout (TP-ZERO-LR FAILs it)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    if git_file:
        (repo / ".git").write_text("gitdir: /nowhere/.git/worktrees/repo\n")
    else:
        (repo / ".git").mkdir()
    log = write_jsonl(repo / "sub" / "run.jsonl", _zero_lr_rows())
    return repo, log


# The run at learning rate 0 FAILs TP-ZERO-LR and, its loss not moving, TP-DEAD-RUN.
MUTE = '[tool.trainproof]\nmute = ["TP-ZERO-LR", "TP-DEAD-RUN"]\n'


def _epoch(cwd, log):
    p = run_subprocess("epoch", str(log), "--json", cwd=cwd)
    doc = json.loads(p.stdout) if p.stdout.strip().startswith("{") else None
    return p.returncode, doc, p.stderr


def _zero_lr_outcome(doc) -> str:
    rep = doc["reports"][0]
    if "TP-ZERO-LR" in rep["checks"]["skipped"]:
        return rep["checks"]["skipped"]["TP-ZERO-LR"]["reason"]
    return next(f["level"] for f in rep["findings"] if f["id"] == "TP-ZERO-LR")


# --- item 1: where the configuration comes from ---------------------------------------------


@pytest.mark.slow
def test_config_above_the_repository_root_is_not_applied(tmp_path):
    repo, log = _repo(tmp_path)
    (tmp_path / "pyproject.toml").write_text(MUTE)  # above the repository: someone else's
    code, doc, err = _epoch(repo / "sub", log)
    assert code == 1, err
    assert _zero_lr_outcome(doc) == "FAIL"


@pytest.mark.slow
def test_config_at_the_repository_root_is_applied(tmp_path):
    repo, log = _repo(tmp_path, git_file=True)
    (tmp_path / "pyproject.toml").write_text('[tool.trainproof]\nmute = ["TP-NOT-A-RULE"]\n')  # never read
    (repo / "pyproject.toml").write_text(MUTE)
    code, doc, err = _epoch(repo / "sub", log)
    assert code == 0, err
    assert _zero_lr_outcome(doc) == "muted"


@pytest.mark.slow
def test_outside_a_repository_only_the_current_folder_is_searched(tmp_path):
    log = write_jsonl(tmp_path / "runs" / "sub" / "run.jsonl", _zero_lr_rows())
    (tmp_path / "runs" / "pyproject.toml").write_text(MUTE)  # a parent, and no .git anywhere
    code, doc, _ = _epoch(tmp_path / "runs" / "sub", log)
    assert code == 1 and _zero_lr_outcome(doc) == "FAIL"
    code, doc, _ = _epoch(tmp_path / "runs", log)  # the folder itself is searched
    assert code == 0 and _zero_lr_outcome(doc) == "muted"


@pytest.mark.slow
def test_broken_pyproject_in_the_repository_is_exit_2_naming_it(tmp_path):
    repo, log = _repo(tmp_path)
    (tmp_path / "pyproject.toml").write_text(MUTE)
    broken = repo / "pyproject.toml"
    broken.write_text('[tool.trainproof\nmute = ["TP-ZERO-LR"]\n')  # a TOML syntax error
    code, doc, err = _epoch(repo / "sub", log)
    assert code == 2
    assert str(broken) in err and "not valid TOML" in err
    assert doc["reports"] == [] and str(broken) in doc["error"]


@pytest.mark.slow
def test_pyproject_with_wrong_types_is_exit_2_naming_it(tmp_path):
    repo, log = _repo(tmp_path)
    for text, needle in [
        ('tool = "trainproof"\n', "'tool'"),
        ('[tool]\ntrainproof = ["TP-ZERO-LR"]\n', "[tool.trainproof]"),
        ('[tool.trainproof]\nmute = "TP-ZERO-LR"\n', "'mute'"),
        ('[tool.trainproof]\ndiverge_ratio = "big"\n', "diverge_ratio"),
    ]:
        (repo / "pyproject.toml").write_text(text)
        code, doc, err = _epoch(repo / "sub", log)
        assert code == 2, text
        assert str(repo / "pyproject.toml") in err and needle in err, (text, err)


@pytest.mark.slow
def test_oversized_or_fifo_config_is_refused_without_blocking(tmp_path):
    import os

    from trainproof.config import MAX_CONFIG_BYTES

    repo, log = _repo(tmp_path)
    big = repo / "pyproject.toml"
    big.write_text("# padding\n" * (MAX_CONFIG_BYTES // 10 + 1) + MUTE)
    code, _, err = _epoch(repo / "sub", log)
    assert code == 2 and str(big) in err and "larger than" in err
    fifo = tmp_path / "tp.toml"
    os.mkfifo(fifo)  # nobody writes to it: an open without O_NONBLOCK would wait forever
    p = run_subprocess("epoch", str(log), "--config", str(fifo), cwd=repo / "sub", timeout=120)
    assert p.returncode == 2 and str(fifo) in p.stderr and "not a regular file" in p.stderr


# --- item 2: every threshold has a declared range, and a config outside it is exit 2 ----------

import dataclasses  # noqa: E402
import math  # noqa: E402

from trainproof.rules import thresholds as th  # noqa: E402

from conftest import run_cli  # noqa: E402


def test_every_threshold_declares_a_range_that_holds_its_default():
    fields = dataclasses.fields(th.Thresholds)
    missing = [f.name for f in fields if f.name not in th.RANGES]
    assert not missing, f"add these thresholds to RANGES in rules/thresholds.py: {missing}"
    assert set(th.RANGES) == {f.name for f in fields}, "RANGES names a threshold that does not exist"
    for f in fields:
        r = th.RANGES[f.name]
        assert (r.kind is int) == (f.type in ("int", int)), f"{f.name}: RANGES kind differs from the field's type"
        assert r.contains(getattr(th.DEFAULT, f.name)), f"{f.name}: default outside {r.describe()}"
        if r.kind is int:  # every count is bounded: 2**62 points would run a rule for hours
            assert r.hi is not None and r.hi <= th.MAX_POINTS, f.name
    for c in th.CONSTRAINTS:
        assert c.holds(getattr(th.DEFAULT, c.a), getattr(th.DEFAULT, c.b)), (c.a, c.b)
    assert th.DEFAULT.with_overrides(th.DEFAULT.as_dict()) == th.DEFAULT  # every default is accepted


def _healthy_runs(d):
    """A folder of three healthy runs: a supervised run with every series the single-run
    rules read (loss, eval loss, warm-up then cosine lr, gradient norm, step and loader
    time, update ratio, loss scale), a DPO-style preference run and a GRPO-style RL run."""
    import numpy as np

    rng = np.random.default_rng(0)
    n = 200
    sup = []
    for i in range(n):
        lr = 1e-4 * (i + 1) / 10 if i < 10 else 1e-5 + 4.5e-5 * (1 + math.cos(math.pi * (i - 10) / (n - 10)))
        r = {
            "step": 10 * (i + 1),
            "loss": 0.8 + 1.5 * math.exp(-i / 50) + 0.03 * rng.standard_normal(),
            "learning_rate": lr,
            "grad_norm": 0.5 + 0.1 * rng.random(),
            "epoch": round((i + 1) * 3 / n, 4),
            "step_time": 0.25 + 0.02 * rng.random(),
            "data_time": 0.02 + 0.005 * rng.random(),
            "update_ratio": 1e-3 * (1 + 0.1 * rng.random()),
            "loss_scale": 32768.0 if i == 50 else 65536.0,
        }
        if i % 10 == 9:
            r["eval_loss"] = 0.85 + 1.5 * math.exp(-i / 50) + 0.01 * rng.standard_normal()
        sup.append(r)
    pref = [
        {
            "step": 10 * (i + 1),
            "loss": math.log(2) * math.exp(-i / 100) * (1 + 0.02 * rng.standard_normal()),
            "rewards/accuracies": min(1.0, 0.5 + 0.003 * i + 0.03 * rng.standard_normal()),
            "rewards/margins": i / 100 + 0.05 * rng.standard_normal(),
        }
        for i in range(100)
    ]
    grpo = [
        {
            "step": 10 * (i + 1),
            "loss": 1e-4 * (1 + 0.1 * rng.standard_normal()),
            "reward": 0.1 + 0.019 * i + 0.1 * rng.standard_normal(),
            "frac_reward_zero_std": 0.002 * i,
            "grad_norm": 0.3 + 0.02 * rng.random(),
        }
        for i in range(100)
    ]
    for name, rows in (("sup", sup), ("pref", pref), ("grpo", grpo)):
        write_jsonl(d / name / "metrics.jsonl", rows)
    return d


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    d = _healthy_runs(tmp_path_factory.mktemp("healthy"))
    code, _, err, doc = run_cli("doctor", str(d), "--json")
    assert code == 0 and len(doc["reports"]) == 3 and doc["worst_verdict"] == "PASS", (
        err,
        doc and [(r["file"], r["verdict"]) for r in doc["reports"]],
    )
    return d


HOSTILE = [("nan", "nan"), ("inf", "inf"), ("-1", "-1"), ("0", "0"), ("2**62", str(2**62)), ("share 1.5", "1.5")]


@pytest.mark.slow
@pytest.mark.parametrize("name", th.names())
def test_hostile_threshold_is_rejected_naming_it_or_judges_healthy_runs(tmp_path, runs_dir, name):
    cfg = tmp_path / "tp.toml"
    for label, text in HOSTILE:
        cfg.write_text(f"[thresholds]\n{name} = {text}\n")
        # run_cli does not catch exceptions: an internal error fails the test right here.
        code, _, err, doc = run_cli("doctor", str(runs_dir), "--json", "--config", str(cfg))
        if doc["error"] is not None:  # rejected: exit 2, the key and its range named
            assert code == 2 and doc["reports"] == [], (name, label)
            assert repr(name) in doc["error"] and str(cfg) in doc["error"], doc["error"]
            assert (
                "must be a whole number" in doc["error"]
                or th.RANGES[name].describe() in doc["error"]
                or "must be at" in doc["error"]
                or "must be below" in doc["error"]
            ), doc["error"]
        else:  # accepted: in range, and all three healthy runs were judged
            value = float(text)
            assert th.RANGES[name].contains(value) and math.isfinite(value), (name, label)
            assert code in (0, 1) and len(doc["reports"]) == 3, (name, label, err)
            assert all(r["error"] is None for r in doc["reports"]), (name, label)


@pytest.mark.slow
def test_non_finite_out_of_range_and_huge_values_are_refused(tmp_path, runs_dir):
    cfg = tmp_path / "tp.toml"
    cases = [
        ("diverge_ratio = nan", "diverge_ratio"),
        ("diverge_ratio = 0", "diverge_ratio"),
        ("zero_lr_fail_share = 0", "zero_lr_fail_share"),
        ("grad_spike_factor = inf", "grad_spike_factor"),
        ("chance_max_classes = 4611686018427387904", "chance_max_classes"),
        ("flat_rel_std = 1.5", "flat_rel_std"),
        # a TOML integer too large for a float: refused, not an OverflowError
        ("diverge_ratio = 1" + "0" * 400, "diverge_ratio"),
        ("min_trend_points = 1" + "0" * 400, "min_trend_points"),
    ]
    for text, key in cases:
        cfg.write_text(text + "\n")
        code, _, err, _ = run_cli("doctor", str(runs_dir), "--config", str(cfg))
        assert code == 2 and repr(key) in err and th.RANGES[key].describe() in err, (text, err)


def test_constraint_between_thresholds_names_both(tmp_path, runs_dir):
    cfg = tmp_path / "tp.toml"
    cfg.write_text("dead_window = 50\n")  # a window of 50 cannot be read from dead_min_points = 10
    code, _, err, _ = run_cli("doctor", str(runs_dir), "--config", str(cfg))
    assert code == 2 and "'dead_min_points'" in err and "'dead_window'" in err
    cfg.write_text("dead_window = 50\ndead_min_points = 100\n")
    code, _, err, _ = run_cli("doctor", str(runs_dir), "--config", str(cfg))
    assert code == 0, err


def test_negative_log10_thresholds_can_be_set(tmp_path, runs_dir):
    """The update-ratio bars are log10 values, negative by nature: -5 is in range."""
    cfg = tmp_path / "tp.toml"
    cfg.write_text("update_ratio_low_log10 = -5\nupdate_ratio_high_log10 = -1.5\n")
    code, _, err, _ = run_cli("doctor", str(runs_dir), "--config", str(cfg))
    assert code == 0, err


@pytest.mark.slow
def test_out_of_range_threshold_is_exit_2_from_a_real_process(tmp_path, runs_dir):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "pyproject.toml").write_text("[tool.trainproof]\nspike_factor = -1\n")
    p = run_subprocess("doctor", str(runs_dir), cwd=repo)
    assert p.returncode == 2 and "'spike_factor'" in p.stderr and "(1, inf)" in p.stderr
    assert "internal error" not in p.stderr


# --- item 3: a checkpoint's pickle is vetted, a hostile safetensors header is a finding ------

import os  # noqa: E402
import pickle  # noqa: E402
import struct  # noqa: E402
import zipfile  # noqa: E402


def _env(*args):
    code, _, err, doc = run_cli("env", "--json", *args)  # internal errors propagate here
    assert doc is not None, (code, err)
    by_id: dict = {}
    for f in doc["reports"][0]["findings"]:
        by_id.setdefault(f["id"], []).append(f)
    return code, by_id


class _Shell:
    """Unpickling this runs a shell command (never done here: the bytes are only written)."""

    def __init__(self, cmd: str):
        self.cmd = cmd

    def __reduce__(self):
        return (os.system, (self.cmd,))


def _zip_with_pickle(tmp_path, name: str, pkl: bytes):
    """A torch-shaped ZIP checkpoint (top folder, data.pkl, a storage, CRCs recorded)
    whose data.pkl is ``pkl``."""
    p = tmp_path / name
    with zipfile.ZipFile(p, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("archive/data.pkl", pkl)
        zf.writestr("archive/data/0", struct.pack("<4f", 1, 2, 3, 4))
        zf.writestr("archive/version", "3\n")
    return p


def _short_unicode(s: str) -> bytes:
    b = s.encode()
    return b"\x8c" + bytes([len(b)]) + b  # SHORT_BINUNICODE


def test_real_state_dict_checkpoint_is_ok_and_lists_only_weights_only_imports(tmp_path):
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3))
    opt = torch.optim.AdamW(model.parameters())
    model(torch.ones(2, 4)).sum().backward()
    opt.step()
    p = tmp_path / "ckpt.pt"
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 7}, p)
    code, by_id = _env("--checkpoint", str(p))
    assert code == 0 and "TP-ENV-CKPT-UNSAFE-PICKLE" not in by_id
    ok = by_id["TP-ENV-CKPT-OK"][0]
    assert "collections.OrderedDict" in ok["data"]["imports"]
    assert "torch._utils._rebuild_tensor_v2" in ok["data"]["imports"]
    torch.load(p, weights_only=True)  # and torch agrees: it loads in weights-only mode


@pytest.mark.parametrize("protocol", [2, 4])
def test_zip_whose_pickle_runs_os_system_warns_naming_it(tmp_path, protocol):
    marker = tmp_path / "PWNED"
    pkl = pickle.dumps({"w": [1.0, 2.0], "x": _Shell(f"echo pwned > {marker}")}, protocol=protocol)
    p = _zip_with_pickle(tmp_path, "evil.pt", pkl)
    code, by_id = _env("--checkpoint", str(p))
    assert code == 0 and "TP-ENV-CKPT-OK" not in by_id  # WARN: judged, and not called safe
    f = by_id["TP-ENV-CKPT-UNSAFE-PICKLE"][0]
    assert f["level"] == "WARN"
    assert f["data"]["unsafe_imports"] == [f"{os.system.__module__}.system"]
    assert f"{os.system.__module__}.system" in f["message"]
    assert not marker.exists()


def test_stack_global_hidden_behind_popped_safe_names_is_resolved(tmp_path):
    # Protocol 4: push "os" and "system" (memoized), push "collections" "OrderedDict" and pop
    # them again, then STACK_GLOBAL on memo fetches: the unpickler imports os.system. A
    # reader taking "the last two strings" would see collections.OrderedDict.
    pkl = (
        b"\x80\x04"
        + _short_unicode("os")
        + b"\x94"
        + _short_unicode("system")
        + b"\x94"
        + _short_unicode("collections")
        + _short_unicode("OrderedDict")
        + b"00"
        + b"00"
        + b"h\x00h\x01\x93"
        + _short_unicode("echo pwned")
        + b"\x85R."
    )
    assert pickletools_ok(pkl)
    p = _zip_with_pickle(tmp_path, "hidden.pt", pkl)
    code, by_id = _env("--checkpoint", str(p))
    f = by_id["TP-ENV-CKPT-UNSAFE-PICKLE"][0]
    assert f["data"]["unsafe_imports"] == ["os.system"]


def pickletools_ok(pkl: bytes) -> bool:
    import pickletools

    return [op.name for op, _, _ in pickletools.genops(pkl)][-1] == "STOP"


def test_data_pkl_that_is_not_a_pickle_is_corrupt(tmp_path):
    p = _zip_with_pickle(tmp_path, "junk.pt", b"\x80\x02this is not a pickle")
    code, by_id = _env("--checkpoint", str(p))
    assert code == 1 and "not a pickle stream" in by_id["TP-ENV-CKPT-CORRUPT"][0]["message"]


def test_safe_set_is_what_torch_weights_only_accepts():
    pytest.importorskip("torch")
    wou = pytest.importorskip("torch._weights_only_unpickler")
    if not hasattr(wou, "_get_allowed_globals"):
        pytest.skip("this torch has no _get_allowed_globals")
    from trainproof.preflight._pickle import WEIGHTS_ONLY_GLOBALS

    # Never wider than torch's own allowlist: every name we call safe, torch accepts.
    assert WEIGHTS_ONLY_GLOBALS <= set(wou._get_allowed_globals())


def _safetensors(path, header: bytes, data: bytes = b""):
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)
    return path


def test_deeply_nested_safetensors_header_is_corrupt_not_an_internal_error(tmp_path):
    deep = b'{"w": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    p = _safetensors(tmp_path / "deep.safetensors", deep)
    code, by_id = _env("--checkpoint", str(p))
    assert code == 1 and "TP-ENV-SAFETENSORS-CORRUPT" in by_id


def test_huge_declared_shape_is_corrupt_quickly(tmp_path):
    import time

    shape = [2**62] * 20_000  # an element count of 1.2 million digits if multiplied out
    header = json.dumps({"w": {"dtype": "F32", "shape": shape, "data_offsets": [0, 16]}}).encode()
    p = _safetensors(tmp_path / "huge.safetensors", header, b"\0" * 16)
    t0 = time.monotonic()
    code, by_id = _env("--checkpoint", str(p))
    assert code == 1 and "needs more bytes" in by_id["TP-ENV-SAFETENSORS-CORRUPT"][0]["message"]
    assert time.monotonic() - t0 < 60
    # a single huge dimension (the offsets cover 16 bytes, the shape asks for 2**200 floats)
    header = json.dumps({"w": {"dtype": "F32", "shape": [2**200], "data_offsets": [0, 16]}}).encode()
    code, by_id = _env("--checkpoint", str(_safetensors(tmp_path / "one.safetensors", header, b"\0" * 16)))
    assert code == 1 and "TP-ENV-SAFETENSORS-CORRUPT" in by_id


def test_deeply_nested_shard_index_is_a_finding(tmp_path):
    pytest.importorskip("safetensors")
    d = tmp_path / "shards"
    d.mkdir()
    (d / "model.safetensors.index.json").write_text('{"weight_map": ' + "[" * 200_000 + "]" * 200_000 + "}")
    code, by_id = _env("--checkpoint", str(d))
    assert code == 1 and "nests too deeply" in by_id["TP-ENV-SAFETENSORS-CORRUPT"][0]["message"]


def test_a_threshold_is_declared_once_with_its_range():
    # The default, the reason and the accepted values are one declaration: RANGES is read
    # from it, and a default outside its own range, or of another kind, is refused.
    import dataclasses

    from trainproof.rules import thresholds as th

    for f in dataclasses.fields(th.Thresholds):
        assert th.RANGES[f.name] is f.metadata["valid"]
    with pytest.raises(ValueError, match="is not a whole number"):
        th.threshold(0, "a count of none", unit="points", valid=th.count(1))
    with pytest.raises(ValueError, match="is not a whole number"):
        th.threshold(2.5, "a count that is a fraction", unit="points", valid=th.count(1))
    field = th.threshold(2, "two points", unit="points", valid=th.count(1))
    assert field.metadata["valid"] == th.count(1) and field.metadata["unit"] == "points"


def test_a_threshold_refuses_an_unknown_or_missing_unit():
    # The unit is part of the one declaration, from a fixed vocabulary: a misspelt or
    # invented unit is refused when the module is imported, as a default outside its range is.
    from trainproof.rules import thresholds as th

    with pytest.raises(ValueError, match="unknown unit 'furlongs'"):
        th.threshold(2, "two points", unit="furlongs", valid=th.count(1))
    with pytest.raises(ValueError, match="unknown unit 'point'"):
        th.threshold(2, "two points", unit="point", valid=th.count(1))
    with pytest.raises(TypeError, match="unit"):
        th.threshold(2, "two points", valid=th.count(1))


#: Units that count whole things: a threshold in one of them is a whole number, and a whole
#: number is in one of them.
_COUNT_UNITS = {"points", "evaluations", "checks", "steps", "blocks", "classes", "targets/class"}
_COUNT_UNITS |= {"items", "samples", "checkpoints", "digits", "runs", "bursts", "rows"}


def test_every_threshold_declares_a_unit_from_the_vocabulary():
    from trainproof.rules import thresholds as th

    units = {n: th.unit_of(n) for n in th.names()}
    assert set(units.values()) <= set(th.UNITS), set(units.values()) - set(th.UNITS)
    # the vocabulary stays exact: every unit is used and said in one line
    assert set(th.UNITS) == set(units.values()), set(th.UNITS) - set(units.values())
    assert _COUNT_UNITS <= set(th.UNITS)
    for u, what in th.UNITS.items():
        assert what and "\n" not in what and not what.endswith("."), u
    # the unit agrees with what the declaration already says of the value
    for name, u in units.items():
        r = th.range_of(name)
        assert (r.kind is int) == (u in _COUNT_UNITS), (name, u, r.describe())
        if u == "share":  # a fraction of a whole
            assert r.lo is not None and r.lo >= 0 and r.hi is not None and r.hi <= 1, (name, r.describe())
        assert (u == "log10") == name.endswith("_log10"), (name, u)
        if name.endswith(("_points", "_evals")) and r.kind is int:
            assert u in ("points", "evaluations"), (name, u)
        if name.endswith(("_factor", "_ratio")) and not name.startswith("update_ratio"):
            assert u == "ratio", (name, u)
        if name.endswith("_z"):
            assert u == "z", (name, u)
        if name.endswith("_s"):
            assert u == "seconds", (name, u)
    with pytest.raises(th.ThresholdError, match="unknown threshold"):
        th.unit_of("no_such_threshold")


def test_a_refused_value_names_the_unit_with_the_range():
    from trainproof.rules import thresholds as th

    with pytest.raises(th.ThresholdError) as e:
        th.DEFAULT.with_overrides({"dead_window": 0})
    assert "'dead_window' must be a whole number in [1, 1e+07] (points), got 0" in str(e.value)
    with pytest.raises(th.ThresholdError) as e:
        th.DEFAULT.with_overrides({"dead_window": 2.5})
    assert "'dead_window' must be a whole number (points), got 2.5" in str(e.value)
    with pytest.raises(th.ThresholdError) as e:
        th.DEFAULT.with_overrides({"speech_silence_db": -3})
    assert "must be a finite number in (0, 300] (dB), got -3" in str(e.value)
    with pytest.raises(th.ThresholdError, match=r"must be a number \(share\), got 'x'"):
        th.DEFAULT.with_overrides({"chance_share": "x"})


def test_the_documentation_prints_each_threshold_with_its_unit_and_range():
    from trainproof.rules import registry
    from trainproof.rules import thresholds as th
    from trainproof.rules.docs import thresholds_markdown

    table = thresholds_markdown()
    assert "| name | default | unit | accepts | why this value |" in table
    for name in th.names():
        row = f"| `{name}` | {th.shown(getattr(th.DEFAULT, name))} | {th.unit_of(name)} | {th.range_of(name).describe()} | "
        assert row in table, name
    for u, what in th.UNITS.items():
        assert f"- **{u}**: {what}." in table, u
    registry.load_all()
    page = registry.get("TP-LOSS-SPIKE").doc_markdown("#")  # the rule page, without its example
    assert "- `spike_factor` = 3.0 (ratio): " in page and "- `spike_window` = 10 (points): " in page


# --- Thresholds as a value -------------------------------------------------------------


def test_thresholds_take_field_names_only_and_compare_as_values():
    import copy
    import pickle

    from trainproof.rules.thresholds import DEFAULT, Thresholds

    t = DEFAULT.with_overrides({"diverge_ratio": 2.0})
    assert t.diverge_ratio == 2.0 and DEFAULT.diverge_ratio != 2.0
    assert Thresholds() == DEFAULT and hash(Thresholds()) == hash(DEFAULT)
    assert Thresholds(diverge_ratio=2.0) == t and t != DEFAULT
    assert pickle.loads(pickle.dumps(t)) == t and copy.deepcopy(t) == t
    assert repr(t) == "Thresholds(diverge_ratio=2.0)" and repr(DEFAULT) == "Thresholds()"
    assert t.as_dict() == {**DEFAULT.as_dict(), "diverge_ratio": 2.0}
    with pytest.raises(TypeError, match="no_such_threshold"):
        Thresholds(no_such_threshold=1)
    with pytest.raises(TypeError):
        Thresholds(2.0)
    with pytest.raises(AttributeError):
        t.diverge_ratio = 3.0  # frozen
