"""The chunked Coqui reader (``coqui.read``) against the line-by-line one (``coqui._read_lines``).

``read`` matches runs of alike step blocks with one regular expression per chunk and hands
every other line to the same per-line state machine ``_read_lines`` uses; these tests
generate Coqui-like logs full of what must not take the fast path (evaluations, epochs,
best-model and checkpoint lines, junk, colour codes inside values, words, ``nan``,
``tensor(…)``, underscores in numbers, CRLF, a torn last line, over-long lines) and check
that both readers give exactly the same :class:`~trainproof.runlog.RunLog`, with chunks
and the line cap made small so that block and line boundaries fall everywhere.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from trainproof.api import read_runlog
from trainproof.formats import ReadError, coqui
from trainproof.runlog import Rows

BOLD, END, GREEN = "\x1b[1m", "\x1b[0m", "\x1b[92m"

VALUE_WORDS = [
    "1.5",
    "-0.25",
    "3e-08",
    "1E5",
    "+.5",
    "1.",
    "0",
    "007",
    "12345678901234567890",
    "1e400",
    "nan",
    "-nan",
    "NaN",
    "inf",
    "-inf",
    "infinity",
    "+Infinity",
    "1_0",
    "1__0",
    "abc",
    "12abc",
    "info",
    "0x10",
    "",
    "  1e5",
    "1.5\t(2.0)",
    "\x0c1.5",
    "１.５",
    "tensor(4.5262)",
    "tensor(-1.5e-3, device='cuda:0')",
    "tensor(nan)",
    "tensor(1_0)",
    "tensor(1.5e)",
    "tensor()",
    "tensor(inf)",
    "tensor(.5,)",
    "1.5)",
    "(1.5)",
    "2.0_",
    "STEP: 1/2 -- GLOBAL_STEP: 3",
    "x EVAL PERFORMANCE",
    "0.1 > EVALUATION",
    "1" * 30,
]
AVERAGES = [
    "",
    " ",
    "  (1.25)",
    "  (tensor(3.6540))",
    " \x1b[0m(+0.0)",
    f" {GREEN}(-0.1){END}",
    "\t(2)",
    "  (nan)",
    " ST\x1b[0mEP: 1/2 -- GLOBAL_STEP: 9",
]
NAMES = [
    "loss",
    "loss_1",
    "current_lr",
    "grad_norm",
    "avg_loss",
    "step_time",
    "GLOBAL_STEP",
    "EVALUATION_x",
    "a|b",
    "x(y)",
    "Num. of GPUs",
    "lr\x1b[0m",
    "loss\t",
]


value_text = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(lambda x: f"{x:.5g}"),
    st.sampled_from(VALUE_WORDS),
    st.integers(-(10**20), 10**20).map(str),
)


# The strategies the generators draw from, built once: Hypothesis builds and validates a
# strategy where it is made, and the generators below draw some 40,000 times per test.
_SEPS = st.sampled_from(["", "TIME: 2024-05-02 03:11:07 -- ", "TIME: 2024-05-02 03:11:07.5 -- "])
_BATCHES = st.sampled_from([36, 405, 999, 10**19])
_CODES = st.sampled_from([(BOLD, END)] * 3 + [("", ""), (BOLD, ""), ("\x1b[4m\x1b[1m", "\x1b[0m "), ("\x1b[1S", END)])
_INDENTS = st.sampled_from(["   ", "", "\t", " \x0c"])
_ONE_IN_20 = st.integers(0, 19)
_TENSOR_VALUES = st.floats(allow_nan=False, allow_infinity=False, width=32).map(lambda x: f"tensor({x:.4f})")
_FLOAT_VALUES = st.floats(allow_nan=False, allow_infinity=False).map(repr) | st.sampled_from(["nan", "inf", "-inf"])
_BOOLS = st.booleans()
_PREFIXES = st.sampled_from(["     ", "", " "])
_GAPS = st.sampled_from([" ", "", "  ", chr(9)])
_AVERAGES = st.sampled_from(AVERAGES)
_RUN_LENGTHS = st.integers(1, 12)
_STEP_DELTAS = st.sampled_from([1, 1, 1, 0, -1, 5])
_ONE_IN_8 = st.integers(0, 7)
_ONE_IN_10 = st.integers(0, 9)


def header(draw, gstep: int) -> str:
    """A step block's header line at ``gstep``, drawn with ``draw``."""
    sep = draw(_SEPS)
    b = draw(_BATCHES)
    g = draw(st.sampled_from([str(gstep)] * 6 + ["0" + str(gstep), "1" * 19, str(gstep) + " x"]))
    codes = draw(_CODES)
    indent = draw(_INDENTS)
    return f"{codes[0]}{indent}--> {sep}STEP: {gstep % 7}/{b} -- GLOBAL_STEP: {g}{codes[1]}"


def metric(draw, name: str, regular: bool, tensor: bool = False) -> str:
    """A metric line of ``name``, drawn with ``draw``: mostly well formed when ``regular``."""
    if regular and draw(_ONE_IN_20):
        v = draw(_TENSOR_VALUES if tensor else _FLOAT_VALUES)
        return f"     | > {name}: {v}  (1.0)"
    v = draw(value_text)
    if draw(_BOOLS):
        v = f"tensor({v})" if not v.startswith("tensor") else v
    return f"{draw(_PREFIXES)}| > {name}:{draw(_GAPS)}{v}{draw(_AVERAGES)}"


@st.composite
def coqui_log(draw) -> str:
    """A log: runs of step blocks sharing one shape, with every other kind of line between."""
    # A clean log's runs are all alike blocks (the fast path); a messy one's are not.
    clean = draw(st.booleans())
    pool = st.sampled_from(NAMES[:6]) if clean else st.sampled_from(NAMES[:6]) | st.sampled_from(NAMES)
    names = draw(st.lists(pool, min_size=1, max_size=5, unique=clean))
    tensors = draw(st.lists(st.booleans(), min_size=len(names), max_size=len(names)))
    blanks = draw(st.integers(0, 3))
    lines: list[str] = []
    gstep = draw(st.integers(0, 50))
    for _ in range(draw(st.integers(1, 10))):
        kind = draw(
            st.sampled_from(["run"] * (12 if clean else 6) + ["eval", "epoch", "best", "ckpt", "junk", "block", "perf"])
        )
        if kind == "run":
            for _ in range(draw(_RUN_LENGTHS)):
                gstep += draw(_STEP_DELTAS)
                regular = clean or draw(_ONE_IN_8) > 0
                lines.append(
                    header(draw, gstep)
                    if not clean and (not regular or not draw(_ONE_IN_10))
                    else f"{BOLD}   --> STEP: {gstep % 7}/36 -- GLOBAL_STEP: {gstep}{END}"
                )
                lines += [metric(draw, n, regular, t) for n, t in zip(names, tensors)]
                lines += [""] * blanks
                if not regular:
                    lines += draw(
                        st.lists(st.sampled_from(["", " \t", "\x0c", f"     | > {names[0]}: 9.5", "junk"]), max_size=2)
                    )
        elif kind == "block":
            lines.append(header(draw, gstep))
            lines += [metric(draw, n, False) for n in draw(st.lists(st.sampled_from(NAMES), max_size=4))]
        elif kind == "eval":
            lines += ["", f"{BOLD} > EVALUATION {END}", ""]
            for i in range(draw(st.integers(0, 2))):
                lines.append(f"{BOLD}   --> STEP: {i}{END}")
                lines += [metric(draw, n, True) for n in names]
            lines += ["", f"  {BOLD}--> EVAL PERFORMANCE{END}"]
            lines += [f"     | > avg_{n}: {draw(value_text)} {END}(+0.0)" for n in names]
        elif kind == "epoch":
            lines += [
                "",
                f"\x1b[4m{BOLD} > EPOCH: {draw(st.integers(0, 9))}/{draw(st.sampled_from([9, 10**20]))}{END}",
                " --> output/run-0000",
                "",
                f"{BOLD} > TRAINING (2024-05-02 03:11:07) {END}",
                "",
            ]
        elif kind == "best":
            lines.append(f" > BEST MODEL : output/run/best_model_{draw(st.sampled_from(['', '12', '3']))}.pth")
        elif kind == "ckpt":
            lines += ["", f" > CHECKPOINT : output/run/checkpoint_{gstep}.pth"]
        elif kind == "perf":
            lines += [
                draw(st.sampled_from(["  --> TRAIN PERFORMACE", f"  {BOLD}--> EVAL PERFORMANCE{END}"])),
                f"     | > avg_loss: {draw(value_text)}",
            ]
        else:
            lines.append(
                draw(
                    st.sampled_from(
                        [
                            "junk",
                            " > Model has 1 parameters",
                            "| > Num. of GPUs: 1",
                            "\x1b\x1b[0m[1m",
                            "   ",
                            "\t",
                            "\u2028",
                            "| >",
                            "| > x",
                            "1" * 120,
                            "--> /runs/x",
                        ]
                    )
                )
            )
    eol = draw(st.sampled_from(["\n"] * 4 + ["\r\n", "\r"]))
    text = eol.join(lines)
    ending = draw(st.sampled_from(["eol", "eol", "none", "torn"]))
    if ending == "eol":
        text += eol
    elif ending == "torn":
        text += eol + draw(st.sampled_from(["     | > loss: 0.", f"{BOLD}   --> STEP: 1/2", "  ", "\x1b[0m"]))
    return text


def digest(run) -> dict:
    """Everything read_runlog gives, with each series' arrays as bytes."""
    d = {
        "format": run.format,
        "records": run.records,
        "notes": run.notes,
        "meta": repr(run.meta),
        "step_range": repr(run.step_range),
        "explicit": run.explicit_steps,
        "mapping": repr(run.mapping),
    }
    for name, s in run.series.items():
        h = hashlib.sha1()
        for a in (s.steps, s.values, s.lines):
            h.update(np.ascontiguousarray(a).tobytes())
            h.update(str(a.dtype).encode())
        d["s:" + name] = (s.key, len(s), h.hexdigest())
    return d


def _read_digest(path: Path) -> dict:
    """:func:`digest` of the log, or the error when it cannot be read (a generated log of
    whitespace lines only is an empty file to both readers)."""
    try:
        return digest(read_runlog(path, "coqui"))
    except ReadError as e:
        return {"error": str(e)}


def both(path: Path, monkeypatch) -> tuple[dict, dict]:
    fast = _read_digest(path)
    with monkeypatch.context() as m:
        m.setattr(coqui, "read", coqui._read_lines)
        slow = _read_digest(path)
    return fast, slow


@pytest.mark.slow
@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    text=coqui_log(),
    chunk=st.sampled_from([16, 97, 400, 4096, 1 << 20]),
    max_line=st.sampled_from([1 << 24, 1 << 24, 60, 150]),
)
@example(
    text="   --> STEP: 1/2 -- GLOBAL_STEP: 1\n | > loss: 1.5\n\n   --> STEP: 1/2 -- GLOBAL_STEP: 2\n"
    " | > loss: 1_0\n\n   --> STEP: 1/2 -- GLOBAL_STEP: 3\n | > loss: 2.5\n\n",
    chunk=1 << 20,
    max_line=1 << 24,
)
def test_chunked_reader_equals_line_reader(tmp_path_factory, monkeypatch, text, chunk, max_line):
    p = tmp_path_factory.mktemp("coqui") / "trainer_0_log.txt"
    p.write_bytes(text.encode("utf-8"))
    with monkeypatch.context() as m:
        m.setattr(coqui, "_CHUNK", chunk)
        m.setattr(coqui, "_MAX_LINE", max_line)
        fast, slow = both(p, m)
    assert fast == slow


def regular_log(n: int, ansi: bool = True) -> str:
    b, e = (BOLD, END) if ansi else ("", "")
    out = []
    for s in range(n):
        out.append(
            f"{b}   --> TIME: 2026-01-01 00:00:00 -- STEP: {s % 100}/100 -- GLOBAL_STEP: {s}{e}\n"
            f"     | > loss: {3.5 - s / 1e4}  (3.5)\n     | > grad_norm: tensor({s / 7:.4f})  (tensor(1.0))\n"
            f"     | > lr: 3e-0{s % 9 + 1}  (1e-05)\n\n\n"
        )
        if s % 250 == 249:
            out.append(
                f"{b} > EVALUATION {e}\n\n  {b}--> EVAL PERFORMANCE{e}\n"
                f"     | > avg_loss: {s / 1e3} {e}(+0.0)\n\n"
                f" > BEST MODEL : /runs/x/best_model_{s}.pth\n\n{b} > EPOCH: {s // 250}/9{e}\n"
            )
    return "".join(out)


@pytest.mark.parametrize("ansi", [True, False])
def test_regular_blocks_take_the_fast_path(tmp_path, monkeypatch, ansi):
    """A run of alike blocks comes out as Rows batches, and reads as the line reader reads it."""
    p = tmp_path / "trainer_0_log.txt"
    p.write_text(regular_log(1000, ansi))

    class State:
        def __init__(self):
            self.meta = {}

        def drop(self, note):
            raise AssertionError(note)

    batches = [r for r in coqui.read(p, State()) if isinstance(r, Rows)]
    assert sum(len(b) for b in batches) > 900
    fast, slow = both(p, monkeypatch)
    assert fast == slow
    assert fast["records"] == 1004


@pytest.mark.slow
def test_chunk_boundaries_anywhere(tmp_path, monkeypatch):
    """Every chunk size from 1 to 300 characters cuts the log at another place."""
    p = tmp_path / "trainer_0_log.txt"
    p.write_text(regular_log(30)[:-1])
    _, want = both(p, monkeypatch)
    for chunk in range(1, 300, 7):
        monkeypatch.setattr(coqui, "_CHUNK", chunk)
        assert digest(read_runlog(p, "coqui")) == want, chunk
