"""`trainproof objective` and `trainproof.objective`: real arrays, real tensors, real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from trainproof.findings import Level
from trainproof.objective import (
    TargetCoverage,
    TargetFileError,
    check_ignore_index,
    check_label_shift,
    check_objective,
    load_arrays,
    measure_label_shift,
    objective_report,
)
from trainproof.rules.thresholds import Thresholds

from conftest import REPO, run_cli

torch = pytest.importorskip("torch")


def ids(findings) -> list[str]:
    return [f.id for f in findings]


def the(findings, rule_id):
    found = [f for f in findings if f.id == rule_id]
    assert len(found) == 1, (rule_id, ids(findings))
    return found[0]


def obj(*args: str):
    """Run `trainproof objective --json ARGS`: (exit code, report dict, {id: finding})."""
    code, out, err, doc = run_cli("objective", "--json", *args)
    assert doc is not None, (code, out, err)
    assert doc["command"] == "objective" and len(doc["reports"]) == 1
    rep = doc["reports"][0]
    assert rep["format"] == "objective"
    by_id = {}
    for f in rep["findings"]:
        assert f["source"] == "preflight" and f["id"] not in by_id
        by_id[f["id"]] = f
    return code, rep, by_id, doc


# --- ignore_index ------------------------------------------------------------------------


def test_ignore_index_collision_one_past_the_end_and_minus_100():
    f = the(check_ignore_index(32000, 2), "TP-OBJ-IGNORE-INDEX-COLLISION")
    assert f.level is Level.FAIL and f.data == {"num_classes": 32000, "ignore_index": 2}
    assert "ignore_index 2" in f.message and f.hint.startswith("Likely:")
    assert ids(check_ignore_index(10, 0)) == ["TP-OBJ-IGNORE-INDEX-COLLISION"]
    assert ids(check_ignore_index(10, 9)) == ["TP-OBJ-IGNORE-INDEX-COLLISION"]
    ok = the(check_ignore_index(10, 10), "TP-OBJ-IGNORE-INDEX-OK")
    assert ok.level is Level.INFO and "one past the last class (9)" in ok.message
    assert check_ignore_index(10, -100) == []
    assert check_ignore_index(10, 255) == [] and check_ignore_index(10, -1) == []
    assert check_ignore_index(np.int64(5), np.int32(5))[0].id == "TP-OBJ-IGNORE-INDEX-OK"
    with pytest.raises(ValueError):
        check_ignore_index(0, -100)
    with pytest.raises(TypeError):
        check_ignore_index(10, 3.0)
    with pytest.raises(TypeError):
        check_ignore_index(True, -100)


def test_collision_report_verdicts():
    assert check_objective(10, 3).verdict is Level.FAIL
    # nothing to judge: -100 and no data is NOT-CHECKED, never PASS
    rep = check_objective(10, -100)
    assert rep.findings == [] and rep.verdict is Level.NOT_CHECKED
    assert set(rep.skipped) == {"TP-OBJ-TARGET-OUT-OF-RANGE", "TP-OBJ-DEAD-CLASS", "TP-OBJ-LABEL-SHIFT-DOUBLE"}


def test_collided_class_is_also_a_dead_class_in_the_targets():
    # ignore_index == EOS id 1: every EOS target is dropped, so class 1 is never a class target
    rng = np.random.default_rng(0)
    t = rng.integers(0, 8, size=(64, 16))
    t[:, -1] = 1
    rep = check_objective(8, 1, targets=t)
    assert rep.verdict is Level.FAIL
    assert {"TP-OBJ-IGNORE-INDEX-COLLISION", "TP-OBJ-DEAD-CLASS", "TP-OBJ-TARGET-RANGE-OK"} <= set(rep.ids())
    assert the(rep.findings, "TP-OBJ-DEAD-CLASS").data["missing"] == [1]
    rep_t = check_objective(8, 1, targets=torch.from_numpy(t))
    assert [f.to_dict() for f in rep_t.findings] == [f.to_dict() for f in rep.findings]


# --- out-of-range targets ----------------------------------------------------------------


@pytest.mark.slow
def test_out_of_range_targets_numpy_torch_and_lists():
    cov = TargetCoverage(5, ignore_index=-100)
    cov.update(np.array([0, 1, 2, 3, 4, -100, -100]))
    cov.update(torch.tensor([[0, 1], [2, 3]]))
    cov.update([[4, 7], [-1, -100]])  # batch 2: 7 and -1 are out of range
    cov.update(torch.tensor([5, 5, 5]))
    f = the(cov.findings(), "TP-OBJ-TARGET-OUT-OF-RANGE")
    assert f.level is Level.FAIL
    assert f.data["out_of_range"] == 5 and f.data["min"] == -1 and f.data["max"] == 7
    assert f.data["values"] == [-1, 5, 7] and f.data["first_batch"] == 2
    assert cov.total == 7 + 4 + 4 + 3 and cov.ignored == 3 and cov.valid == 10
    assert "TP-OBJ-TARGET-RANGE-OK" not in ids(cov.findings())


def test_one_based_labels_give_out_of_range_and_a_dead_class_zero():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 10, size=2000) + 1  # 1..10 for a 10-class head
    rep = check_objective(10, -100, targets=labels)
    assert rep.verdict is Level.FAIL
    oor = the(rep.findings, "TP-OBJ-TARGET-OUT-OF-RANGE")
    assert oor.data["values"] == [10]
    assert the(rep.findings, "TP-OBJ-DEAD-CLASS").data["missing"] == [0]
    assert rep.records == 2000


def test_in_range_targets_pass_and_the_ignore_index_is_not_out_of_range():
    cov = TargetCoverage(3, ignore_index=255)
    cov.update(np.array([[0, 1, 2, 255, 255]], dtype=np.uint8))
    f = the(cov.findings(), "TP-OBJ-TARGET-RANGE-OK")
    assert f.level is Level.PASS and f.data["ignored"] == 2


def test_dtypes_floats_bools_and_bad_inputs():
    cov = TargetCoverage(2)
    cov.update(np.array([0.0, 1.0, 1.0]))
    cov.update(torch.tensor([0.0, 1.0], dtype=torch.bfloat16))
    cov.update(np.array([True, False]))
    assert cov.counts.tolist() == [3, 4]
    with pytest.raises(ValueError, match="whole numbers"):
        cov.update(np.array([0.5, 1.0]))
    with pytest.raises(ValueError, match="whole numbers"):
        cov.update(torch.tensor([0.25]))
    with pytest.raises(ValueError, match="finite"):
        cov.update(torch.tensor([float("nan")]))
    with pytest.raises(TypeError):
        cov.update(np.array(["a", "b"]))
    with pytest.raises(ValueError, match="rectangular"):
        cov.update([[0, 1], [1]])
    assert cov.batches == 3  # failed updates count nothing
    assert TargetCoverage(4).findings() == []


# --- dead classes --------------------------------------------------------------------------


def _batches(num_classes: int, n_batches: int, size: int, missing=(), seed=0):
    rng = np.random.default_rng(seed)
    keep = np.array([c for c in range(num_classes) if c not in set(missing)])
    out = []
    for _ in range(n_batches):
        b = rng.choice(keep, size=size)
        b[::7] = -100  # padding
        out.append(b)
    return out


def test_dead_class_appears_only_once_coverage_accumulates_over_batches():
    th = Thresholds()
    need = th.obj_coverage_min_per_class * 10  # valid targets needed for 10 classes
    cov = TargetCoverage(10, -100)
    batches = _batches(10, 12, 70, missing=(6,))  # 60 valid targets per batch
    levels = []
    for b in batches:
        cov.update(torch.from_numpy(b) if len(levels) % 2 else b)
        levels.append(ids(cov.findings())[-1])
    first_fail = levels.index("TP-OBJ-DEAD-CLASS")
    assert set(levels[:first_fail]) == {"TP-OBJ-COVERAGE-INSUFFICIENT"}
    assert set(levels[first_fail:]) == {"TP-OBJ-DEAD-CLASS"}
    assert cov.valid >= need and first_fail == need // 60  # the 9th batch crosses 500 targets
    f = the(cov.findings(), "TP-OBJ-DEAD-CLASS")
    assert f.level is Level.FAIL and f.data["missing"] == [6] and f.data["batches"] == 12
    assert "class 6 never appears" in f.message


def test_too_little_coverage_is_info_not_fail():
    cov = TargetCoverage(10)
    for b in _batches(10, 2, 70, missing=(6,)):
        cov.update(b)
    f = the(cov.findings(), "TP-OBJ-COVERAGE-INSUFFICIENT")
    assert f.level is Level.INFO and f.data["reason"] == "too_few_targets" and f.data["missing"] == [6]
    rep = cov.report("batches")
    assert rep.verdict is Level.PASS  # the range check passed; the dead-class check did not decide
    assert "TP-OBJ-DEAD-CLASS" not in rep.ids()


def test_full_coverage_passes_over_batches_of_torch_tensors():
    cov = TargetCoverage(10)
    for b in _batches(10, 10, 70, seed=3):
        cov.update(torch.from_numpy(b).view(7, 10))
    f = the(cov.findings(), "TP-OBJ-DEAD-CLASS-OK")
    assert f.level is Level.PASS and f.data["missing_count"] == 0
    assert cov.report().verdict is Level.PASS


def test_many_missing_classes_are_a_sparse_label_space_not_dead_classes():
    # an LM-like vocabulary where 40 reserved ids never occur, with broad coverage of the rest
    cov = TargetCoverage(100)
    for b in _batches(100, 20, 400, missing=range(60, 100)):
        cov.update(b)
    f = the(cov.findings(), "TP-OBJ-COVERAGE-INSUFFICIENT")
    assert f.data["reason"] == "too_many_missing" and f.data["missing_count"] == 40


def test_few_missing_is_the_threshold_and_thresholds_override():
    th = Thresholds()
    k = th.obj_dead_class_max_missing
    cov = TargetCoverage(50)
    for b in _batches(50, 20, 400, missing=range(k)):
        cov.update(b)
    assert the(cov.findings(), "TP-OBJ-DEAD-CLASS").data["missing"] == list(range(k))
    cov = TargetCoverage(50, th=th.with_overrides({"obj_dead_class_max_missing": k - 1}))
    for b in _batches(50, 20, 400, missing=range(k)):
        cov.update(b)
    assert ids(cov.findings())[-1] == "TP-OBJ-COVERAGE-INSUFFICIENT"
    # a binary task with every label 0 is a dead class once 2 x coverage targets are seen
    cov = TargetCoverage(2)
    cov.update(np.zeros(2 * th.obj_coverage_min_per_class, dtype=np.int64))
    assert the(cov.findings(), "TP-OBJ-DEAD-CLASS").data["missing"] == [1]


# --- label shift ---------------------------------------------------------------------------


def _lm_batch(b=6, length=40, vocab=5000, seed=0, pad=0, pad_from=None):
    """input_ids with distinct neighbours, padded (pad id) from pad_from[i] on."""
    rng = np.random.default_rng(seed)
    x = rng.integers(10, vocab, size=(b, length))
    if pad_from is not None:
        for i, p in enumerate(pad_from):
            x[i, p:] = pad
    return x


def _aligned(x, pad=0):
    y = x.copy()
    y[x == pad] = -100
    return y


def _shifted(x, pad=0):
    y = np.full_like(x, -100)
    y[:, :-1] = x[:, 1:]
    y[:, :-1][x[:, 1:] == pad] = -100
    return y


def test_label_shift_double_single_and_not_stated():
    x = _lm_batch()
    double = check_label_shift(x, _shifted(x), loss_shifts_labels=True)
    f = the(double, "TP-OBJ-LABEL-SHIFT-DOUBLE")
    assert f.level is Level.FAIL and f.data["shifted"] == 6 and f.data["observed"] == "shifted"
    ok = the(check_label_shift(x, _aligned(x), True), "TP-OBJ-LABEL-SHIFT-OK")
    assert ok.level is Level.PASS and ok.data["aligned"] == 6
    # a loss that does not shift wants pre-shifted labels
    assert ids(check_label_shift(x, _shifted(x), False)) == ["TP-OBJ-LABEL-SHIFT-OK"]
    # without the statement: what was observed, never a FAIL
    for labels, seen in ((_shifted(x), "shifted"), (_aligned(x), "aligned")):
        f = the(check_label_shift(x, labels, None), "TP-OBJ-LABEL-SHIFT-OBSERVED")
        assert f.level is Level.INFO and f.data["observed"] == seen and f.data["loss_shifts_labels"] is None
    f = the(check_label_shift(x, _aligned(x), False), "TP-OBJ-LABEL-SHIFT-OBSERVED")
    assert "stated not to shift" in f.message
    with pytest.raises(TypeError):
        check_label_shift(x, _aligned(x), "yes")


def test_label_shift_torch_tensors_and_lists():
    x = torch.from_numpy(_lm_batch(seed=4))
    y = torch.full_like(x, -100)
    y[:, :-1] = x[:, 1:]
    assert ids(check_label_shift(x, y, True)) == ["TP-OBJ-LABEL-SHIFT-DOUBLE"]
    assert ids(check_label_shift(x, x.clone(), True)) == ["TP-OBJ-LABEL-SHIFT-OK"]
    assert ids(check_label_shift(x.tolist(), y.tolist(), True)) == ["TP-OBJ-LABEL-SHIFT-DOUBLE"]
    # one sequence as [seq]
    assert ids(check_label_shift(x[0], y[0], True)) == ["TP-OBJ-LABEL-SHIFT-DOUBLE"]
    with pytest.raises(ValueError, match="same shape"):
        check_label_shift(x, y[:, 1:], True)
    with pytest.raises(ValueError, match="batch, seq"):
        check_label_shift(x[None], y[None], True)


def test_label_shift_votes_per_sequence_not_per_position():
    # one long aligned sequence outweighs three short shifted ones position by position;
    # per sequence, three of four are shifted.
    x = _lm_batch(b=4, length=200, seed=2, pad_from=[200, 20, 20, 20])
    y = _shifted(x)
    y[0] = _aligned(x)[0]
    r = measure_label_shift(x, y)
    assert r["aligned"] == 1 and r["shifted"] == 3 and r["observed"] == "shifted"
    aligned_positions = 199
    assert r["positions"] == aligned_positions + 3 * 19
    assert ids(check_label_shift(x, y, True)) == ["TP-OBJ-LABEL-SHIFT-DOUBLE"]
    # a tie of sequences is no majority
    y2 = _shifted(x)
    y2[:2] = _aligned(x)[:2]
    assert ids(check_label_shift(x, y2, True)) == ["TP-OBJ-LABEL-SHIFT-NOT-MEASURED"]


def test_padding_and_ignored_positions_are_not_compared():
    # right padding whose labels were NOT masked: pad runs match both alignments and are skipped
    x = _lm_batch(b=3, length=64, seed=5, pad_from=[10, 12, 64])
    y = x.copy()
    r = measure_label_shift(x, y)
    # (the last real token before the padding still counts: its neighbour, a pad, differs)
    assert r["aligned"] == 3 and r["positions"] == 10 + 12 + 63
    # a masked prompt: only completion positions vote
    y = _shifted(x)
    y[:, :8] = -100
    r = measure_label_shift(x, y)
    assert r["shifted"] == 3 and r["positions"] == (9 - 8) + (11 - 8) + (63 - 8)
    # every label ignored, or one token per sequence: nothing to measure
    f = the(check_label_shift(x, np.full_like(x, -100), True), "TP-OBJ-LABEL-SHIFT-NOT-MEASURED")
    assert f.data["unmeasured"] == 3 and "no position to compare" in f.message
    assert ids(check_label_shift(x[:, :1], x[:, :1], True)) == ["TP-OBJ-LABEL-SHIFT-NOT-MEASURED"]
    # labels that are not token ids (token classification tags) match neither alignment
    tags = np.random.default_rng(9).integers(0, 5, size=x.shape)
    f = the(check_label_shift(x, tags, True), "TP-OBJ-LABEL-SHIFT-NOT-MEASURED")
    assert f.data["neither"] == 3


def test_max_positions_slices_before_comparing():
    # a 2000-token masked prompt hides the completion from the first 1024 positions
    x = torch.from_numpy(_lm_batch(b=2, length=2100, seed=6))
    y = torch.full_like(x, -100)
    y[:, 2000:-1] = x[:, 2001:]
    assert ids(check_label_shift(x, y, True)) == ["TP-OBJ-LABEL-SHIFT-NOT-MEASURED"]
    assert ids(check_label_shift(x, y, True, max_positions=None)) == ["TP-OBJ-LABEL-SHIFT-DOUBLE"]
    r = measure_label_shift(x, y, max_positions=2050)
    assert r["positions"] == 2 * 49 and r["max_positions"] == 2050


@pytest.mark.slow
def test_module_import_does_not_import_torch():
    code = (
        "import sys, numpy as np, trainproof.objective as o\n"
        "assert 'torch' not in sys.modules\n"
        "c = o.TargetCoverage(3); c.update(np.array([0, 1, 2])); c.update([[0, 1]])\n"
        "assert 'torch' not in sys.modules\n"
        "print(','.join(f.id for f in c.findings()))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "TP-OBJ-TARGET-RANGE-OK,TP-OBJ-DEAD-CLASS-OK"


# --- files and the command -----------------------------------------------------------------


@pytest.fixture
def dead_targets():
    """1,000 targets of a 10-class task where class 4 never occurs."""
    return np.concatenate(_batches(10, 10, 100, missing=(4,), seed=7))


def test_cli_npy(tmp_path, dead_targets):
    p = tmp_path / "targets.npy"
    np.save(p, dead_targets)
    code, rep, by_id, doc = obj("--num-classes", "10", "--targets", str(p))
    assert code == 1 and rep["verdict"] == "FAIL" and doc["worst_verdict"] == "FAIL"
    assert set(by_id) == {"TP-OBJ-TARGET-RANGE-OK", "TP-OBJ-DEAD-CLASS"}
    assert by_id["TP-OBJ-DEAD-CLASS"]["data"]["missing"] == [4]
    assert rep["records"] == 1000 and rep["meta"]["key"] == "targets"
    assert rep["checks"]["skipped"]["TP-OBJ-LABEL-SHIFT-DOUBLE"]["reason"] == "absent"
    # the same targets with a generous threshold from --config: too few to tell, exit 0
    cfg = tmp_path / "tp.toml"
    cfg.write_text("obj_coverage_min_per_class = 500\n")
    code, rep, by_id, _ = obj("--num-classes", "10", "--targets", str(p), "--config", str(cfg))
    assert code == 0 and "TP-OBJ-COVERAGE-INSUFFICIENT" in by_id and rep["verdict"] == "PASS"


@pytest.mark.slow
def test_cli_npz_with_input_ids_checks_the_label_shift(tmp_path):
    x = _lm_batch(b=8, length=32, vocab=300, seed=8, pad_from=[32, 30, 28, 26, 24, 22, 20, 18])
    p = tmp_path / "batch.npz"
    np.savez(p, input_ids=x, labels=_shifted(x), attention_mask=(x != 0).astype(np.int8))
    code, rep, by_id, _ = obj("--num-classes", "300", "--targets", str(p), "--loss-shifts-labels")
    assert code == 1 and "TP-OBJ-LABEL-SHIFT-DOUBLE" in by_id and rep["meta"]["key"] == "labels"
    assert by_id["TP-OBJ-LABEL-SHIFT-DOUBLE"]["data"]["shifted"] == 8
    code, rep, by_id, _ = obj("--num-classes", "300", "--targets", str(p), "--loss-does-not-shift-labels")
    assert code == 0 and "TP-OBJ-LABEL-SHIFT-OK" in by_id
    code, rep, by_id, _ = obj("--num-classes", "300", "--targets", str(p))
    assert code == 0 and by_id["TP-OBJ-LABEL-SHIFT-OBSERVED"]["data"]["observed"] == "shifted"
    # the targets must be named when no array is called labels/targets
    q = tmp_path / "two.npz"
    np.savez(q, a=x, b=x)
    code, rep, _, doc = obj("--num-classes", "300", "--targets", str(q))
    assert code == 2 and "--key" in doc["error"] and rep["verdict"] == "NOT-CHECKED"
    code, rep, _, _ = obj("--num-classes", "300", "--targets", str(q), "--key", "b")
    assert code == 0 and rep["meta"]["key"] == "b"


def test_cli_safetensors_with_the_package_and_without_it(tmp_path, monkeypatch, dead_targets):
    st = pytest.importorskip("safetensors.numpy")
    p = tmp_path / "targets.safetensors"
    st.save_file({"labels": dead_targets.astype(np.int64), "weights": np.ones(3, dtype=np.float32)}, str(p))
    code, rep, by_id, _ = obj("--num-classes", "10", "--ignore-index", "-100", "--targets", str(p))
    assert code == 1 and by_id["TP-OBJ-DEAD-CLASS"]["data"]["missing"] == [4]
    with_pkg = rep
    # without the package the header is read here, with the same result
    monkeypatch.setitem(sys.modules, "safetensors.numpy", None)
    arrays = load_arrays(p)
    assert arrays["labels"].dtype == np.int64 and np.array_equal(arrays["labels"], dead_targets)
    code, rep, by_id, _ = obj("--num-classes", "10", "--ignore-index", "-100", "--targets", str(p))
    assert code == 1 and rep["findings"] == with_pkg["findings"]
    # a truncated file is refused with a reason, not read past its end
    p.write_bytes(p.read_bytes()[:-16])
    with pytest.raises(TargetFileError, match="outside the file"):
        load_arrays(p)


class _Trap:
    """Unpickling this object creates a directory: the test asserts that never happens."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


@pytest.mark.slow
def test_cli_refuses_pickled_arrays(tmp_path):
    sentinel = tmp_path / "unpickled"
    p = tmp_path / "targets.npy"
    np.save(p, np.array([_Trap(str(sentinel)), 1], dtype=object), allow_pickle=True)
    code, rep, by_id, doc = obj("--num-classes", "10", "--targets", str(p))
    assert code == 2 and rep["verdict"] == "NOT-CHECKED"
    assert "pickled" in doc["error"] and "pickled" in rep["error"]
    assert not sentinel.exists()
    q = tmp_path / "targets.npz"
    np.savez(q, labels=np.array([_Trap(str(sentinel))], dtype=object))
    code, _, _, doc = obj("--num-classes", "10", "--targets", str(q))
    assert code == 2 and "pickled" in doc["error"] and not sentinel.exists()
    # a collision is still reported when the file cannot be read; the FAIL decides the exit
    code, rep, by_id, _ = obj("--num-classes", "10", "--ignore-index", "3", "--targets", str(p))
    assert code == 1 and set(by_id) == {"TP-OBJ-IGNORE-INDEX-COLLISION"} and rep["error"]
    # the trap is real: loading with pickle would have run it
    np.load(p, allow_pickle=True)
    assert sentinel.is_dir()


@pytest.mark.slow
def test_cli_unreadable_inputs(tmp_path):
    code, _, _, doc = obj("--num-classes", "10", "--targets", str(tmp_path / "nope.npy"))
    assert code == 2 and "no such file" in doc["error"]
    bad = tmp_path / "t.csv"
    bad.write_text("1,2,3\n")
    code, _, _, doc = obj("--num-classes", "10", "--targets", str(bad))
    assert code == 2 and "expected .npy, .npz or .safetensors" in doc["error"]
    f = tmp_path / "f.npy"
    np.save(f, np.array([0.5, 1.5]))
    code, _, _, doc = obj("--num-classes", "10", "--targets", str(f))
    assert code == 2 and "whole numbers" in doc["error"]
    code, out, err, _ = run_cli("objective", "--num-classes", "0")
    assert code == 2


@pytest.mark.slow
def test_cli_ignore_index_only(tmp_path):
    code, rep, by_id, _ = obj("--num-classes", "32000", "--ignore-index", "2")
    assert code == 1 and set(by_id) == {"TP-OBJ-IGNORE-INDEX-COLLISION"}
    code, rep, by_id, _ = obj("--num-classes", "32000", "--ignore-index", "32000")
    assert code == 2 and set(by_id) == {"TP-OBJ-IGNORE-INDEX-OK"}  # INFO alone is no verdict
    code, rep, by_id, _ = obj("--num-classes", "32000")
    assert code == 2 and by_id == {} and rep["meta"]["ignore_index"] == -100


def test_cli_text_sarif_and_mute(tmp_path, dead_targets):
    p = tmp_path / "targets.npy"
    t = dead_targets.copy()
    t[5] = 12
    np.save(p, t)
    code, out, err, _ = run_cli("objective", "--num-classes", "10", "--targets", str(p))
    assert code == 1
    for s in ("verdict: FAIL", "TP-OBJ-TARGET-OUT-OF-RANGE", "TP-OBJ-DEAD-CLASS", "Likely:"):
        assert s in out
    sarif = tmp_path / "out.sarif"
    code, out, _, _ = run_cli(
        "objective", "--num-classes", "10", "--ignore-index", "10", "--targets", str(p), "--sarif", str(sarif)
    )
    assert code == 1
    log = json.loads(sarif.read_text())
    assert log["version"] == "2.1.0"
    results = log["runs"][0]["results"]
    assert {r["ruleId"] for r in results} >= {"TP-OBJ-TARGET-OUT-OF-RANGE", "TP-OBJ-DEAD-CLASS"}
    assert {r["ruleId"]: r["level"] for r in results}["TP-OBJ-DEAD-CLASS"] == "error"
    rules = {r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]}
    assert {r["ruleId"] for r in results} <= rules
    code, rep, by_id, _ = obj(
        "--num-classes",
        "10",
        "--targets",
        str(p),
        "--mute",
        "TP-OBJ-DEAD-CLASS",
        "--mute",
        "TP-OBJ-TARGET-OUT-OF-RANGE",
    )
    assert code == 2 and by_id == {}  # nothing judged is left
    assert rep["checks"]["skipped"]["TP-OBJ-DEAD-CLASS"]["reason"] == "muted"


def test_report_api_and_rules_are_documented():
    rep = objective_report(REPO / "nope.npz", 10, 3)
    assert rep.error and rep.verdict is Level.FAIL
    from trainproof.rules.registry import all_rules

    rules = [r for r in all_rules() if r.id.startswith("TP-OBJ-")]
    assert {r.id for r in rules} >= {
        "TP-OBJ-IGNORE-INDEX-COLLISION",
        "TP-OBJ-IGNORE-INDEX-OK",
        "TP-OBJ-TARGET-OUT-OF-RANGE",
        "TP-OBJ-DEAD-CLASS",
        "TP-OBJ-COVERAGE-INSUFFICIENT",
        "TP-OBJ-DEAD-CLASS-OK",
        "TP-OBJ-LABEL-SHIFT-DOUBLE",
        "TP-OBJ-LABEL-SHIFT-NOT-MEASURED",
        "TP-OBJ-LABEL-SHIFT-OK",
    }
    assert all(r.source == "preflight" and r.group == "objective" for r in rules)
    dead = next(r for r in rules if r.id == "TP-OBJ-DEAD-CLASS")
    assert set(dead.thresholds) == {"obj_coverage_min_per_class", "obj_dead_class_max_missing"}
    code, out, _, _ = run_cli("rules", "TP-OBJ-LABEL-SHIFT-DOUBLE")
    assert code == 0 and "What it does NOT mean" in out
