"""The JSON Lines reader (trainproof.formats.jsonl)."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest
from _helpers import assert_repeats_differ
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainproof import aliases
from trainproof.api import read_runlog
from trainproof.formats import ReadError, hf, jsonl

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"


def write_lines(path: Path, lines: list[str], newline: str = "\n", bom: bool = False) -> Path:
    data = "".join(ln + newline for ln in lines).encode("utf-8")
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)
    return path


def dumps(rows: list[dict]) -> list[str]:
    return [json.dumps(r) for r in rows]


# --------------------------------------------------------------------------- basic rows


def test_flat_rows_values_steps_and_lines(tmp_path: Path) -> None:
    rows = [{"step": s, "loss": 3.0 - s * 0.25, "lr": 1e-3, "grad_norm": 1.0 + s} for s in (10, 20, 30)]
    p = write_lines(tmp_path / "metrics.jsonl", dumps(rows))
    run = read_runlog(p)
    assert run.format == "jsonl"
    loss = run.get("loss")
    assert loss.steps.tolist() == [10, 20, 30]
    assert loss.values.tolist() == [0.5, -2.0, -4.5]
    assert loss.lines.tolist() == [1, 2, 3]
    assert run.get("lr").values.tolist() == [1e-3] * 3
    assert run.get("grad_norm").values.tolist() == [11.0, 21.0, 31.0]
    assert "step" not in run.series
    assert run.records == 3 and not run.notes


def test_nested_dicts_flatten_to_slash_keys(tmp_path: Path) -> None:
    rows = [
        {"train": {"loss": 2.0, "lr": 1e-4, "global_step": 5}, "eval": {"loss": None}},
        {"train": {"loss": 1.5, "lr": 1e-4, "global_step": 10}, "eval": {"loss": 1.75}},
    ]
    run = read_runlog(write_lines(tmp_path / "m.jsonl", dumps(rows)))
    loss = run.get("loss")
    assert loss.key == "train/loss"
    assert loss.values.tolist() == [2.0, 1.5]
    # "train/global_step" is a step key, nested or not.
    assert loss.steps.tolist() == [5, 10]
    assert "train/global_step" not in run.series
    assert run.get("lr").key == "train/lr"
    assert run.get("eval_loss").key == "eval/loss"
    assert run.get("eval_loss").steps.tolist() == [10]


def test_blank_lines_count_in_line_numbers(tmp_path: Path) -> None:
    p = write_lines(tmp_path / "m.jsonl", ['{"step": 1, "loss": 1.0}', "", "   ", '{"step": 2, "loss": 0.5}'])
    run = read_runlog(p)
    assert run.get("loss").lines.tolist() == [1, 4]
    assert not run.notes  # blank lines are not "skipped" lines


# --------------------------------------------------------------------------- skipped lines


def test_banner_lines_and_torn_last_line_are_skipped_and_noted(tmp_path: Path) -> None:
    lines = [
        "starting training run 42",
        '{"step": 1, "loss": 2.0}',
        "=== epoch 1 ===",
        '{"step": 2, "loss": 1.5}',
        '{"step": 3, "loss": 1.25}',
        '{"step": 4, "lo',  # killed mid-write
    ]
    run = read_runlog(write_lines(tmp_path / "m.jsonl", lines))
    assert run.format == "jsonl"
    loss = run.get("loss")
    assert loss.values.tolist() == [2.0, 1.5, 1.25]
    assert loss.lines.tolist() == [2, 4, 5]
    assert run.records == 3
    (note,) = [n for n in run.notes if "skipped" in n]
    assert "skipped 3 line(s)" in note
    assert "first at line 1" in note
    assert "last line (6)" in note


def test_banner_only_in_the_middle_does_not_claim_a_torn_tail(tmp_path: Path) -> None:
    lines = ['{"step": 1, "loss": 2.0}', "checkpoint saved", '{"step": 2, "loss": 1.5}']
    run = read_runlog(write_lines(tmp_path / "m.jsonl", lines))
    (note,) = run.notes
    assert "skipped 1 line(s)" in note and "line 2" in note
    assert "last line" not in note


@pytest.mark.parametrize("line", ["[1, 2, 3]", '"just a string"', "42", "null", "{not json}"])
def test_lines_that_are_not_objects_are_skipped(tmp_path: Path, line: str) -> None:
    lines = ['{"step": 1, "loss": 2.0}', line, '{"step": 2, "loss": 1.0}']
    run = read_runlog(write_lines(tmp_path / "m.jsonl", lines), "jsonl")
    assert run.get("loss").values.tolist() == [2.0, 1.0]
    assert any("skipped 1 line(s)" in n for n in run.notes)


# --------------------------------------------------------------------------- values


@pytest.mark.parametrize(
    "bad", [None, "None", "#N/A", "<NA>", "", "loss", True, False, [0.5, 0.4], [True], ["0.5"], [], {}], ids=repr
)
def test_non_numbers_are_absent(tmp_path: Path, bad) -> None:
    rows = [{"step": 1, "loss": 2.0}, {"step": 2, "loss": bad, "lr": 0.1}, {"step": 3, "loss": 1.0}]
    run = read_runlog(write_lines(tmp_path / "m.jsonl", dumps(rows)))
    loss = run.get("loss")
    assert loss.steps.tolist() == [1, 3]
    assert loss.values.tolist() == [2.0, 1.0]
    assert run.get("lr").steps.tolist() == [2]


def test_a_list_of_one_number_is_that_number(tmp_path: Path) -> None:
    rows = [{"step": s, "loss": [1.0 / s], "lr": [1e-3]} for s in (1, 2, 3)]
    run = read_runlog(write_lines(tmp_path / "m.jsonl", dumps(rows)))
    assert run.get("loss").values.tolist() == [1.0, 0.5, 1.0 / 3]
    assert run.get("lr").values.tolist() == [1e-3] * 3


def test_a_list_of_learning_rates_is_one_rate_per_parameter_group(tmp_path: Path) -> None:
    # scheduler.get_last_lr() of an optimiser with a backbone and a head group
    rows = [{"step": s, "loss": 1.0 / s, "learning_rate": [1e-5 * s, 1e-4 * s]} for s in (1, 2, 3)]
    run = read_runlog(write_lines(tmp_path / "m.jsonl", dumps(rows)))
    assert run.get("lr").key == "learning_rate/group0"
    assert run.get("lr").values.tolist() == pytest.approx([1e-5, 2e-5, 3e-5])
    assert run.get("learning_rate/group1").values.tolist() == pytest.approx([1e-4, 2e-4, 3e-4])


def test_a_list_of_several_numbers_under_another_name_is_absent(tmp_path: Path) -> None:
    # per-environment returns: positions that name nothing the reader knows
    rows = [{"step": s, "loss": 1.0 / s, "episode_rewards": [1.0, 2.0, 3.0]} for s in (1, 2)]
    run = read_runlog(write_lines(tmp_path / "m.jsonl", dumps(rows)))
    assert not any(k.startswith("episode_rewards") for k in run.series)


def test_nan_and_infinity_are_values(tmp_path: Path) -> None:
    lines = [
        '{"step": 1, "loss": NaN}',
        '{"step": 2, "loss": Infinity}',
        '{"step": 3, "loss": -Infinity}',
        '{"step": 4, "loss": -0.0}',
    ]
    run = read_runlog(write_lines(tmp_path / "m.jsonl", lines))
    v = run.get("loss").values
    assert np.isnan(v[0]) and v[1] == np.inf and v[2] == -np.inf and v[3] == 0.0
    assert not run.notes


def test_huge_integer_reads_as_infinity(tmp_path: Path) -> None:
    lines = ['{"step": 1, "loss": 1.0}', '{"step": 2, "loss": ' + "7" * 5000 + "}"]
    run = read_runlog(write_lines(tmp_path / "m.jsonl", lines))
    assert run.get("loss").values.tolist() == [1.0, math.inf]
    assert not run.notes


def test_string_step_is_not_a_step(tmp_path: Path) -> None:
    rows = [{"step": 1, "loss": 2.0}, {"step": "two", "loss": 1.5}, {"step": 3, "loss": 1.0}]
    run = read_runlog(write_lines(tmp_path / "m.jsonl", dumps(rows)))
    loss = run.get("loss")
    # The row without a numeric step takes the last step seen: step 1, logged a second time
    # without the step going back, so both writes are kept.
    assert loss.steps.tolist() == [1, 1, 3]
    assert loss.values.tolist() == [2.0, 1.5, 1.0]
    assert loss.lines.tolist() == [1, 2, 3]


def test_numeric_string_step_is_the_step(tmp_path: Path) -> None:
    rows = [{"step": 1, "loss": 2.0}, {"step": "2", "loss": "1.5"}, {"step": 3, "loss": 1.0}]
    loss = read_runlog(write_lines(tmp_path / "m.jsonl", dumps(rows))).get("loss")
    assert loss.steps.tolist() == [1, 2, 3]
    assert loss.values.tolist() == [2.0, 1.5, 1.0]


# --------------------------------------------------------------------------- LLaMA-Factory


def llamafactory_rows() -> list[dict]:
    rows = []
    for s in (10, 20, 30, 40):
        rows.append(
            {
                "current_steps": s,
                "total_steps": 40,
                "loss": 2.5 - s / 40,
                "lr": {10: 1e-5, 20: 2e-5, 30: 3e-5, 40: 4e-5}[s],
                "epoch": s / 40,
                "percentage": s * 2.5,
                "elapsed_time": f"0:00:{s:02d}",
                "remaining_time": "4 days, 5:06:09",
            }
        )
        if s in (20, 40):
            rows.append(
                {
                    "current_steps": s,
                    "total_steps": 40,
                    "eval_loss": 2.0 - s / 100,
                    "epoch": s / 40,
                    "percentage": s * 2.5,
                    "elapsed_time": "0:01:00",
                    "remaining_time": "0:00:00",
                }
            )
    rows.append(
        {
            "current_steps": 40,
            "total_steps": 40,
            "epoch": 1.0,
            "percentage": 100.0,
            "elapsed_time": "0:02:00",
            "remaining_time": "0:00:00",
        }
    )
    return rows


def test_llamafactory_current_steps_and_string_times(tmp_path: Path) -> None:
    p = write_lines(tmp_path / "trainer_log.jsonl", dumps(llamafactory_rows()))
    run = read_runlog(p)
    assert run.format == "jsonl"
    # its total_steps on every record is the run's declared end, as HF's max_steps
    assert run.meta["max_steps"] == 40
    loss = run.get("loss")
    assert loss.steps.tolist() == [10, 20, 30, 40]
    assert loss.values.tolist() == [2.25, 2.0, 1.75, 1.5]
    assert run.get("lr").key == "lr"
    assert run.get("lr").values.tolist() == [1e-5, 2e-5, 3e-5, 4e-5]
    ev = run.get("eval_loss")
    assert ev.steps.tolist() == [20, 40] and ev.values.tolist() == [1.8, 1.6]
    assert "current_steps" not in run.series
    # String times are absent, never parsed as numbers or zero.
    for key in ("elapsed_time", "remaining_time", "time"):
        assert key not in run.series
    assert run.get("total_steps").values.tolist() == [40.0] * 4
    # Eval rows repeat a train step with the same epoch: nothing is reported as rewritten.
    assert not any("more than once" in n for n in run.notes)


@pytest.mark.parametrize("totals", [[40, 40, 80, 80], [None, None, None, None], [0, 0, 0, 0], [40.5] * 4])
def test_a_total_steps_that_changes_or_is_no_count_declares_no_end(tmp_path: Path, totals) -> None:
    # a resume that rescheduled, a column absent, a zero or a fraction: no declared end
    rows = [
        {"current_steps": 10 * (i + 1), "loss": 2.0 - i / 10, **({} if t is None else {"total_steps": t})}
        for i, t in enumerate(totals)
    ]
    run = read_runlog(write_lines(tmp_path / "trainer_log.jsonl", dumps(rows)))
    assert "max_steps" not in run.meta


def test_llamafactory_newer_learning_rate_key(tmp_path: Path) -> None:
    rows = [{"current_steps": s, "loss": 1.0, "learning_rate": 2e-5, "throughput": 512.5} for s in (5, 10)]
    run = read_runlog(write_lines(tmp_path / "trainer_log.jsonl", dumps(rows)))
    assert run.get("lr").key == "learning_rate"
    assert run.get("throughput").values.tolist() == [512.5, 512.5]


# --------------------------------------------------------------------------- step order


def test_interleaved_writers_keep_the_later_write(tmp_path: Path) -> None:
    rows = [{"current_steps": s, "loss": 1.0 - s / 10000} for s in (990, 1000, 1010)]
    # A second writer resumes from 1000 and the two interleave: 1020, 1010, 1030, 1020, ...
    rows += [
        {"current_steps": 1020, "loss": 0.5602},
        {"current_steps": 1010, "loss": 0.5701},  # differs from the first writer's 1010
        {"current_steps": 1030, "loss": 0.5500},
        {"current_steps": 1020, "loss": 0.5601},  # differs in the 4th decimal
        {"current_steps": 1030, "loss": 0.5500},  # identical duplicate
    ]
    run = read_runlog(write_lines(tmp_path / "trainer_log.jsonl", dumps(rows)))
    loss = run.get("loss")
    assert loss.steps.tolist() == [990, 1000, 1010, 1020, 1030]
    assert loss.values.tolist() == [0.901, 0.9, 0.5701, 0.5601, 0.55]
    assert loss.lines.tolist() == [1, 2, 5, 7, 8]
    (note,) = [n for n in run.notes if "more than once" in n]
    assert "later write was kept" in note and "loss" in note


def test_identical_duplicates_are_not_reported(tmp_path: Path) -> None:
    rows = [{"step": 1, "loss": 1.0}, {"step": 2, "loss": 0.5}, {"step": 2, "loss": 0.5}]
    run = read_runlog(write_lines(tmp_path / "m.jsonl", dumps(rows)))
    assert run.get("loss").steps.tolist() == [1, 2]
    assert run.get("loss").lines.tolist() == [1, 3]
    assert not any("more than once" in n for n in run.notes)


def test_duplicate_nan_is_the_same_value(tmp_path: Path) -> None:
    lines = ['{"step": 1, "loss": NaN}', '{"step": 1, "loss": NaN}']
    run = read_runlog(write_lines(tmp_path / "m.jsonl", lines))
    assert len(run.get("loss")) == 1 and np.isnan(run.get("loss").values[0])
    assert not any("more than once" in n for n in run.notes)


def test_steps_going_backwards_are_sorted(tmp_path: Path) -> None:
    rows = [{"step": s, "loss": float(s)} for s in (5, 3, 9, 1, 7)]
    run = read_runlog(write_lines(tmp_path / "m.jsonl", dumps(rows)))
    loss = run.get("loss")
    assert loss.steps.tolist() == [1, 3, 5, 7, 9]
    assert loss.values.tolist() == [1.0, 3.0, 5.0, 7.0, 9.0]
    assert loss.lines.tolist() == [4, 2, 1, 5, 3]
    assert run.step_range == (1.0, 9.0)
    assert np.all(np.diff(loss.steps) > 0)


def test_no_step_key_uses_record_index(tmp_path: Path) -> None:
    rows = [{"loss": 2.0}, {"loss": 1.0, "note": "x"}, {"loss": 0.5}]
    run = read_runlog(write_lines(tmp_path / "m.jsonl", dumps(rows)))
    assert run.get("loss").steps.tolist() == [0, 1, 2]


def test_no_step_key_uses_epoch_when_every_row_has_one(tmp_path: Path) -> None:
    rows = [{"epoch": e, "loss": 2.0 - e} for e in (1, 2, 3)]
    run = read_runlog(write_lines(tmp_path / "m.jsonl", dumps(rows)))
    assert run.get("loss").steps.tolist() == [1, 2, 3]
    assert any("epoch is the x axis" in n for n in run.notes)


# --------------------------------------------------------------------------- encodings


def test_crlf_and_bom(tmp_path: Path) -> None:
    rows = [{"step": s, "loss": 1.0 / s} for s in (1, 2, 3)]
    p = write_lines(tmp_path / "m.jsonl", dumps(rows), newline="\r\n", bom=True)
    assert p.read_bytes().startswith(b"\xef\xbb\xbf{")
    run = read_runlog(p)
    assert run.format == "jsonl"
    assert run.get("loss").values.tolist() == [1.0, 0.5, 1.0 / 3]
    assert run.get("loss").lines.tolist() == [1, 2, 3]
    assert not run.notes  # the BOM does not make the first line unreadable


def test_gzip_jsonl(tmp_path: Path) -> None:
    rows = [{"step": s, "loss": 1.0 / s} for s in (1, 2, 3)]
    p = tmp_path / "m.jsonl.gz"
    p.write_bytes(gzip.compress("".join(r + "\n" for r in dumps(rows)).encode()))
    run = read_runlog(p)
    assert run.format == "jsonl"
    assert run.get("loss").lines.tolist() == [1, 2, 3]


# --------------------------------------------------------------------------- sniffing


def test_sniff_claims_jsonl_and_hf_does_not(tmp_path: Path) -> None:
    p = write_lines(tmp_path / "trainer_log.jsonl", dumps(llamafactory_rows()))
    head = p.read_text()
    assert jsonl.sniff(p, head)
    assert not hf.sniff(p, head)


def test_sniff_with_banner_first(tmp_path: Path) -> None:
    head = "run started\n" + '{"step": 1, "loss": 1.0}\n{"step": 2, "loss": 0.5}\n'
    assert jsonl.sniff(tmp_path / "x", head)


def test_sniff_rejects_mostly_broken_object_lines(tmp_path: Path) -> None:
    head = '{"step": 1, "loss": 1.0}\n{broken\n{also broken\n{nope\n'
    assert not jsonl.sniff(tmp_path / "x", head)
    assert not jsonl.sniff(tmp_path / "x", "step,loss\n1,2.0\n")


def test_sniff_ignores_a_line_cut_by_the_head(tmp_path: Path) -> None:
    line = json.dumps({"step": 1, "loss": 1.0, "pad": "x" * 200})
    head = "\n".join([line] * 400)
    head = head[:65536]
    assert jsonl.sniff(tmp_path / "x", head)


def test_empty_and_blank_files_are_read_errors(tmp_path: Path) -> None:
    p = tmp_path / "m.jsonl"
    p.write_text("")
    with pytest.raises(ReadError):
        read_runlog(p)
    p.write_text("\n\n  \n")
    with pytest.raises(ReadError):
        read_runlog(p)


# --------------------------------------------------------------------------- fuzz


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=600))
def test_arbitrary_bytes_read_or_raise_read_error(tmp_path: Path, data: bytes) -> None:
    p = tmp_path / "metrics.jsonl"
    p.write_bytes(data)
    for fmt in ("auto", "jsonl"):
        try:
            read_runlog(p, fmt)
        except ReadError:
            pass


_line = st.one_of(
    st.text(max_size=30),
    st.dictionaries(
        st.sampled_from(["step", "current_steps", "loss", "lr", "epoch", "train"]),
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(),
            st.floats(),
            st.text(max_size=4),
            st.dictionaries(st.sampled_from(["loss", "lr"]), st.floats(), max_size=2),
        ),
        max_size=5,
    ).map(json.dumps),
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_line, max_size=12))
def test_structured_lines_read_or_raise_read_error(tmp_path: Path, lines: list[str]) -> None:
    p = tmp_path / "metrics.jsonl"
    p.write_text("\n".join(lines), encoding="utf-8", errors="surrogatepass")
    try:
        run = read_runlog(p, "jsonl")
    except ReadError:
        return
    for s in run.series.values():
        assert s.steps.dtype == np.float64 and s.values.dtype == np.float64
        assert_repeats_differ(s)
        assert len(s.steps) == len(s.values) == len(s.lines)


# --------------------------------------------------------------------------- corpus (skips without ../shared)


def _corpus_files():
    return sorted(CORPUS.glob("jsonl/*/*.jsonl")) if CORPUS.is_dir() else []


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is absent")
@pytest.mark.parametrize("path", _corpus_files(), ids=lambda p: p.parent.name)
def test_corpus_jsonl_matches_json_module(path: Path) -> None:
    objs = []
    for ln in path.read_text(encoding="utf-8-sig").splitlines():
        try:
            o = json.loads(ln)
        except ValueError:
            continue
        if isinstance(o, dict):
            objs.append(o)
    run = read_runlog(path)
    assert run.format == "jsonl"
    split = any("runs appended to one log" in n for n in run.notes)
    assert run.records == len(objs) or (split and run.records < len(objs))
    loss = run.get("loss")
    if loss is None:
        assert not any(isinstance(o.get(k), (int, float)) and k == "loss" for o in objs for k in o)
        return
    key = loss.key
    if key not in {k for o in objs for k in o}:
        return  # a nested key or a synthesized sum: test_aliases_runlog covers those
    # The same points as the json module gives: the later write of a step wins, and the
    # run kept when restarts are split (a note names it) is the lines the series holds.
    keep = set(loss.lines.tolist())
    want = {}
    n = 0
    for ln_no, ln in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), 1):
        try:
            o = json.loads(ln)
        except ValueError:
            continue
        if not isinstance(o, dict):
            continue
        n += 1
        sk = aliases.step_key(o.keys())
        if isinstance(o.get(key), (int, float)) and not isinstance(o.get(key), bool) and ln_no in keep:
            st = float(o[sk]) if sk is not None else None
            want[st] = float(o[key])
    if None in want:
        return  # no step key: the x axis is the record index or the epoch
    got = dict(zip(loss.steps.tolist(), loss.values.tolist()))
    assert sorted(got) == sorted(want)
    assert all(got[k] == want[k] or (math.isnan(got[k]) and math.isnan(want[k])) for k in got)


# --------------------------------------------------------------------------- restarted runs


def _curve(n: int, start: float = 7.0, end: float = 1.0) -> list[float]:
    return [start * (end / start) ** (i / (n - 1)) for i in range(n)]


def _write_runs(path: Path, runs: list[tuple[int, list[float]]], key: str = "loss") -> Path:
    """Each run: (first step, losses); steps every 10 from its first."""
    with path.open("w") as f:
        for first, losses in runs:
            for i, v in enumerate(losses):
                f.write(json.dumps({"step": first + 10 * i, key: v, "lr": 1e-3}) + "\n")
    return path


def test_restarts_from_scratch_keep_the_longest_run(tmp_path: Path) -> None:
    p = _write_runs(tmp_path / "m.jsonl", [(0, _curve(20)), (0, _curve(40, 7.2, 0.8)), (0, _curve(3, 7.1, 5.0))])
    run = read_runlog(p)
    loss = run.get("loss")
    assert loss.values.tolist() == _curve(40, 7.2, 0.8)  # one run, never one curve that jumps back
    assert loss.lines.tolist() == list(range(21, 61))
    assert run.records == 40
    note = next(n for n in run.notes if "3 runs appended" in n)
    assert "run 1: lines 1-20" in note and "Judged run 2" in note


def test_a_resume_that_continues_the_curve_stays_one_run(tmp_path: Path) -> None:
    # Rewound from step 190 to 150 with the loss where it was: a resume.
    first = _curve(20)
    p = _write_runs(tmp_path / "m.jsonl", [(0, first), (150, [v * 0.99 for v in first[15:]] + _curve(10, 1.0, 0.5))])
    run = read_runlog(p)
    assert not [n for n in run.notes if "runs appended" in n]
    assert run.get("loss").steps.tolist() == [10.0 * i for i in range(30)]
    assert any("later write was kept" in n for n in run.notes)


@pytest.mark.parametrize("overlap", [2, 5])
def test_a_resume_whose_loss_blows_up_at_once_stays_one_run(tmp_path: Path, overlap: int) -> None:
    # Resumed from a checkpoint near its end (overlapping a few logged steps) with a far
    # larger learning rate: the loss is back at its first level from the first resumed
    # log. The step went back to the checkpoint, not to the beginning: one run, which
    # diverged, not two runs appended.
    from trainproof.api import judge

    first = _curve(80)
    start = 10 * (80 - overlap)
    p = _write_runs(tmp_path / "m.jsonl", [(0, first), (start, [7.5] * 40)])
    run = read_runlog(p)
    assert not [n for n in run.notes if "runs appended" in n]
    assert run.get("loss").steps.tolist()[-1] == start + 390
    assert "TP-DIVERGE" in judge(p).ids()
    # a restart from scratch (its steps start again at the beginning) is still two runs
    q = _write_runs(tmp_path / "r.jsonl", [(0, first), (0, _curve(40, 7.5, 2.0))])
    assert any("2 runs appended" in n for n in read_runlog(q).notes)


def test_a_run_not_judged_that_ends_in_nan_is_named_and_its_nans_are_points(tmp_path: Path) -> None:
    # A later restart that ends in NaN: its NaN losses count as its points (written
    # values; a null is none), and the note names them when another run is judged.
    nan_tail = _curve(30, 7.2, 2.0) + [float("nan")] * 20
    p = _write_runs(tmp_path / "m.jsonl", [(0, _curve(40)), (0, nan_tail)])
    run = read_runlog(p)
    assert len(run.get("loss")) == 50 and any("Judged run 2" in n for n in run.notes)  # 50 points beat 40
    q = _write_runs(tmp_path / "q.jsonl", [(0, _curve(80)), (0, nan_tail)])
    note = next(n for n in read_runlog(q).notes if "runs appended" in n)
    assert "50 loss points (20 of them NaN or Inf)" in note and "Judged run 1" in note


def test_a_flat_run_that_goes_back_cannot_be_told_and_stays_one(tmp_path: Path) -> None:
    p = _write_runs(tmp_path / "m.jsonl", [(0, [2.0] * 10), (0, [2.1] * 12)])
    run = read_runlog(p)
    assert not [n for n in run.notes if "runs appended" in n]
    assert run.records == 22


def test_restarts_without_a_step_key_use_the_progress_counter(tmp_path: Path) -> None:
    p = tmp_path / "training_metrics.jsonl"
    with p.open("w") as f:
        for n in (25, 30, 2):
            for i, v in enumerate(_curve(n, 7.0, 1.8)[:n]):
                f.write(json.dumps({"epoch": 1, "progress_percent": 4.0 * (i + 1), "current_loss": v}) + "\n")
    run = read_runlog(p)
    assert run.get("loss").key == "current_loss"
    assert len(run.get("loss")) == 30
    assert any("Judged run 2" in n for n in run.notes)


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(min_value=3, max_value=30), min_size=1, max_size=4))
def test_the_kept_run_is_always_one_increasing_run(tmp_path: Path, sizes: list[int]) -> None:
    p = _write_runs(tmp_path / "m.jsonl", [(0, _curve(k, 7.0, 1.0)) for k in sizes])
    run = read_runlog(p)
    loss = run.get("loss")
    best = max(range(len(sizes)), key=lambda i: (sizes[i], i))
    assert loss.values.tolist() == _curve(sizes[best], 7.0, 1.0)
    assert np.all(np.diff(loss.lines) == 1)


def test_validation_rows_stepped_by_epoch_are_no_restart(tmp_path) -> None:
    # OpenMMLab's vis_data/scalars.json: train rows carry the iteration as their step,
    # validation rows the epoch; a run whose loss climbs back (a divergence) is still one run.
    rows = []
    for e in range(4):
        for i in range(10):
            it = 100 * e + 10 * (i + 1)
            loss = 0.05 + 2.0 * math.exp(-it / 30) if e < 2 else 0.5 + (it - 200) / 50
            rows.append({"lr": 0.02, "loss": loss, "time": 0.35, "epoch": e + 1, "iter": it, "step": it})
        rows.append({"coco/bbox_mAP": 0.1 * e, "time": 0.07, "step": e + 1})
    p = tmp_path / "scalars.json"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = read_runlog(p)
    assert len(run.series["loss"]) == 40 and run.series["loss"].steps[0] == 10
    assert not any("runs appended" in n for n in run.notes), run.notes
    # each evaluation is placed after the last step of its epoch, the last one (ending the
    # file, no loss after it) too; its own time is the evaluation's, not a train step's
    assert run.series["coco/bbox_mAP"].steps.tolist() == [100.0, 200.0, 300.0, 400.0]
    assert run.step_range == (10.0, 400.0)
    assert run.series["val/time"].values.tolist() == [0.07] * 4
    assert set(run.series["time"].values.tolist()) == {0.35}
    assert not any("more than once" in n for n in run.notes), run.notes
