"""Any bytes written to a .json, .jsonl or .csv file: exit 0, 1 or 2, never a traceback."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from _hypothesis_profiles import fuzz_settings
from conftest import healthy_rows, run_cli

_VALID_JSONL = "".join(json.dumps(r) + "\n" for r in healthy_rows(20)).encode()
_VALID_CSV = (
    "step,loss,learning_rate\n" + "".join(f"{r['step']},{r['loss']},{r['learning_rate']}\n" for r in healthy_rows(20))
).encode()
_VALID_HF = json.dumps({"log_history": healthy_rows(20), "global_step": 200}, indent=2).encode()


def _mutations(valid: bytes):
    raw = st.binary(max_size=2048)
    cut = st.integers(0, len(valid)).map(lambda i: valid[:i])
    flipped = st.tuples(st.integers(0, len(valid) - 1), st.binary(min_size=1, max_size=8)).map(
        lambda t: valid[: t[0]] + t[1] + valid[t[0] + len(t[1]) :]
    )
    spliced = st.tuples(
        st.integers(0, len(valid)),
        st.sampled_from(
            [b"NaN", b"\x00", b"\xff\xfe", b"Infinity", b"-0.0", b"null", b'"x"', b"1e400", b"\r", b"{", b"]"]
        ),
    ).map(lambda t: valid[: t[0]] + t[1] + valid[t[0] :])
    return st.one_of(raw, cut, flipped, spliced)


def _check(tmp_path_factory, data: bytes, suffix: str):
    p = tmp_path_factory.mktemp("fz") / f"log{suffix}"
    p.write_bytes(data)
    code, out, err, doc = run_cli("epoch", str(p), "--json")
    assert code in (0, 1, 2)
    assert "Traceback" not in err
    assert doc is not None  # always a schema-valid document
    assert doc["reports"][0]["verdict"] in ("PASS", "WARN", "FAIL", "NOT-CHECKED")
    if doc["reports"][0]["error"] is not None:
        assert code == 2


# Each input is a real process: a third of the weight of an in-process reader's input.
_S = fuzz_settings(0.33)


@pytest.mark.slow
@_S
@given(data=_mutations(_VALID_JSONL))
def test_any_jsonl_bytes(tmp_path_factory, data):
    _check(tmp_path_factory, data, ".jsonl")


@pytest.mark.slow
@_S
@given(data=_mutations(_VALID_CSV))
def test_any_csv_bytes(tmp_path_factory, data):
    _check(tmp_path_factory, data, ".csv")


@pytest.mark.slow
@_S
@given(data=_mutations(_VALID_HF))
def test_any_json_bytes(tmp_path_factory, data):
    _check(tmp_path_factory, data, ".json")
