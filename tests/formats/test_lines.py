"""The one chunked line reader (trainproof.formats.lines), that every text format and
``watch`` read lines through, and the console reader's words taken from the alias
vocabulary."""

from __future__ import annotations

import ast
import csv as pycsv
import io
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainproof import aliases
from trainproof.formats import console
from trainproof.formats.base import ReadState
from trainproof.formats.lines import Lines, LineSplitter, LineTooLong, byte_line_chunks, line_chunks

SRC = Path(__file__).resolve().parents[2] / "src" / "trainproof"


def _split(text: str, size: int, limit: int | None) -> tuple[list[tuple[int, str]], LineSplitter]:
    sp = LineSplitter(limit)
    lines = []
    for first, body in line_chunks(io.StringIO(text, newline=""), size, sp):
        lines += [(first + i, ln) for i, ln in enumerate(body.split("\n")[:-1])]
    return lines, sp


@pytest.mark.slow
@given(
    st.lists(st.text(alphabet="ab \r{}", max_size=12), max_size=12),
    st.booleans(),
    st.integers(min_value=1, max_value=9),
)
def test_the_lines_and_their_numbers_do_not_depend_on_the_chunks(lines, ended, size):
    text = "\n".join(lines) + ("\n" if ended and lines else "")
    got, sp = _split(text, size, None)
    whole = text.split("\n")
    assert got == list(enumerate(whole[:-1], 1))
    assert sp.carry == whole[-1]
    assert sp.next_line == len(whole)


@pytest.mark.parametrize("size", [1, 2, 3, 5, 64])
def test_an_overlong_line_is_given_out_empty_with_its_number_noted(size):
    text = "ok\n" + "x" * 10 + "\nafter\n" + "y" * 4 + "\n" + "z" * 12
    got, sp = _split(text, size, 8)
    # Read through in pieces or inside one piece, it is given out as an empty line.
    assert got == [(1, "ok"), (2, ""), (3, "after"), (4, "yyyy")]
    assert sp.overlong == [2, 5]  # the unfinished last line too: it was not kept
    assert sp.carry == ""
    state = ReadState()
    sp.note(state)
    assert state.drops == ["skipped 2 line(s) longer than 8 characters (lines 2, 5): not read"]


def test_the_splitter_holds_at_most_one_line_below_the_limit():
    sp = LineSplitter(100)
    for _ in range(50):
        assert sp.feed("x" * 30) is None
        assert len(sp.carry) < 100
    assert sp.feed("\nnext\n") == (1, "\nnext\n")  # the overlong line 1, given out empty
    assert sp.overlong == [1]


def test_lines_join_a_crlf_cut_between_the_given_text_and_the_stream():
    rest = Lines(io.StringIO('\nb"\r\n2,c\n', newline=""), newline="", first='1,"a\r')
    assert list(rest) == ['1,"a\r\n', 'b"\r\n', "2,c\n"]


def _taken(lines: Lines) -> list[tuple[int, str]]:
    """The lines iterating gives, each with the number :attr:`Lines.next_line` said it has."""
    got, it = [], iter(lines)
    while True:
        n = lines.next_line
        line = next(it, None)
        if line is None:
            return got
        got.append((n, line))


@given(st.text(alphabet="ab\r\n", max_size=40), st.integers(min_value=1, max_value=9), st.data())
def test_lines_kept_as_written_are_those_of_universal_newlines_whatever_the_chunks(text, size, data):
    """With ``newline=""`` (CSV), lines end at \\r\\n, \\r or \\n as Python's own
    universal newlines cut them, wherever the chunks and the given text end."""
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    ref = list(io.StringIO(text, newline=""))
    lines = Lines(io.StringIO(text[cut:], newline=""), newline="", size=size, first=text[:cut])
    assert _taken(lines) == list(enumerate(ref, 1))
    assert lines.unterminated == (bool(ref) and not ref[-1].endswith(("\r", "\n")))
    # With a cap: a line of 4 characters or more (its end not counted) is given out as an
    # empty line that joins no line end around it, or as " " at the unterminated end.
    capped = Lines(io.StringIO(text[cut:], newline=""), 4, newline="", size=size, first=text[:cut])
    want = [ln if len(ln.rstrip("\r\n")) < 4 else "\r\n" if ln.endswith(("\r", "\n")) else " " for ln in ref]
    assert _taken(capped) == list(enumerate(want, 1))
    assert capped.overlong == [n for n, ln in enumerate(ref, 1) if len(ln.rstrip("\r\n")) >= 4]


def _numbered_reference(text: str, limit: int) -> tuple[list[tuple[int, str]], list[int]]:
    """What :meth:`Lines.numbered` gives, line by line: an overlong line as a blank line
    (``" "`` when unterminated), a whitespace-only line after a blank one left out."""
    out, over, blank = [], [], False
    for n, line in enumerate(io.StringIO(text, newline="\n"), 1):
        ended = line.endswith("\n")
        if len(line) - ended >= limit:
            over.append(n)
            line = "\n" if ended else " "
        if blank and ended and not line[:-1].strip(" \t\f\v"):
            continue
        out.append((n, line))
        blank = not line.strip()
    return out, over


@given(st.text(alphabet="ab \t\n\x1c", max_size=60), st.integers(min_value=1, max_value=9))
def test_numbered_lines_skip_blank_runs_and_overlong_lines_whatever_the_chunks(text, size):
    lines = Lines(io.StringIO(text, newline="\n"), 5, size=size)
    want, over = _numbered_reference(text, 5)
    assert list(lines.numbered()) == want
    assert lines.overlong == over
    assert lines.unterminated == (bool(text) and not text.endswith("\n"))


def test_a_run_of_a_million_blank_lines_is_one_scan():
    """A gzip bomb of newlines: a million blank lines come out as one, counted."""
    lines = Lines(io.StringIO("a\n" + "\n" * 1_000_000 + "b\n"))
    assert list(lines.numbered()) == [(1, "a\n"), (2, "\n"), (1_000_002, "b\n")]


def test_lines_hold_at_most_one_line_below_the_limit():
    """A stream with no line end is read through, never held: memory stays at a chunk
    plus ``limit`` characters whatever the stream holds."""

    class Endless:
        reads = 0

        def read(self, size: int) -> str:
            self.reads += 1
            return "x" * size if self.reads <= 100 else ""

    lines = Lines(Endless(), 1000, size=64)
    assert [*lines] == [" "]  # the unterminated overlong line, as a blank
    assert lines.overlong == [1] and lines.unterminated
    assert lines.splitter.carry == ""


# --------------------------------------------------------------------------- one reader

#: The module that cuts text streams into lines: the one line reader.
_SHARED = {"formats/lines.py"}
#: Functions that read a stream in a loop without cutting it into lines, and why.
_READS_NO_LINES = {
    ("formats/_io.py", "read_head"): "the sniffing head, bytes up to the first line's end",
    ("formats/_tfrecord.py", "record_spans"): "binary records, framed by their length",
    ("formats/_tfrecord.py", "_remaining"): "binary records, framed by their length",
    ("formats/hf.py", "_Scanner.remaining_bytes"): "one JSON document, counted, not lines",
    ("formats/hf.py", "_one_history_key"): "a byte search for one key across the document, not lines",
    ("formats/coqui.py", "_deep_step_header"): "a pattern searched in the first MiBs",
}
#: Functions that split a string into lines with ``splitlines``: each a sniffing head or
#: a small file read whole (bounded), never a chunk of a log.
_SPLITLINES = {
    ("formats/__init__.py", "describe_shape"),
    ("formats/_own.py", "own_output"),
    ("formats/console.py", "sniff"),
    ("formats/csv.py", "sniff"),
    ("formats/jsonl.py", "sniff"),
    ("formats/mlflow.py", "sniff"),
    ("formats/mlflow.py", "_yaml_fields"),
}


def _line_cutting(source: str, rel: str) -> list[str]:
    """What in ``source`` (the module ``rel``) cuts a stream into lines on its own: a
    ``readline``; a ``rfind("\\n")`` (the cut before a chunk's unfinished last line); a
    ``.read(`` in a loop (a read loop of its own, even one that hands its text to a
    :class:`~trainproof.formats.lines.LineSplitter`, or through a name bound to a
    stream's ``read``) outside :data:`_READS_NO_LINES`; ``splitlines`` outside
    :data:`_SPLITLINES`."""
    found = []

    def read_names(func: ast.AST) -> dict[str, str]:
        """The names bound to a stream's ``read`` or ``readline`` in ``func`` (``read =
        f.read``, ``readline, n = f.readline, 9``), each with the method it is."""
        names = {}
        for a in ast.walk(func):
            if isinstance(a, ast.Assign):
                for t in a.targets:
                    pairs = (
                        zip(t.elts, a.value.elts)
                        if isinstance(t, ast.Tuple) and isinstance(a.value, ast.Tuple)
                        else [(t, a.value)]
                    )
                    for name, value in pairs:
                        if (
                            isinstance(name, ast.Name)
                            and isinstance(value, ast.Attribute)
                            and value.attr in ("read", "readline", "readlines")
                        ):
                            names[name.id] = value.attr
        return names

    def visit(node, func: str, loop: bool, reads: dict[str, str]) -> None:
        for ch in ast.iter_child_nodes(node):
            fn, lp, rd = func, loop, reads
            if isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef)):
                fn = f"{func}.{ch.name}" if func else ch.name
                lp = False
                rd = read_names(ch)
            elif isinstance(ch, ast.ClassDef):
                fn = ch.name
            if isinstance(ch, (ast.While, ast.For, ast.comprehension)):
                lp = True
            if isinstance(ch, ast.Call) and isinstance(ch.func, ast.Attribute):
                a = ch.func.attr
                where = f"{rel}:{ch.lineno} {fn}"
                if a in ("readline", "readlines"):
                    found.append(f"{where}: .{a}()")
                elif a == "rfind" and ch.args and isinstance(ch.args[0], ast.Constant) and ch.args[0].value == "\n":
                    found.append(f"{where}: .rfind('\\n')")
                elif a == "read" and lp and (rel, fn) not in _READS_NO_LINES:
                    found.append(f"{where}: .read() in a loop")
                elif a == "splitlines" and (rel, fn) not in _SPLITLINES:
                    found.append(f"{where}: .splitlines()")
            elif isinstance(ch, ast.Call) and isinstance(ch.func, ast.Name) and ch.func.id in rd:
                a = rd[ch.func.id]
                if a != "read":
                    found.append(f"{rel}:{ch.lineno} {fn}: .{a}()")
                elif lp and (rel, fn) not in _READS_NO_LINES:
                    found.append(f"{rel}:{ch.lineno} {fn}: .read() in a loop")
            visit(ch, fn, lp, rd)

    visit(ast.parse(source), "", False, {})
    return found


def test_the_line_cutting_check_sees_each_way_of_cutting_lines():
    """What jsonl, coqui, csv and watch did before the shared reader: each is found."""
    source = (
        "def read(f):\n"
        "    while True:\n"
        "        chunk = f.read(1 << 22)\n"
        "        cut = chunk.rfind('\\n')\n"
        "class _Chain:\n"
        "    def readline(self):\n"
        "        return self.first.readline()\n"
        "def read_all(f):\n"
        "    return f.read().splitlines()\n"
    )
    assert _line_cutting(source, "formats/x.py") == [
        "formats/x.py:3 read: .read() in a loop",
        "formats/x.py:4 read: .rfind('\\n')",
        "formats/x.py:7 _Chain.readline: .readline()",
        "formats/x.py:9 read_all: .splitlines()",
    ]
    # A read loop of its own that feeds a splitter (watch's, before it used line_chunks),
    # and a line-by-line reader with its own chunk loop (_io.Lines, before lines.Lines).
    tail = (
        "class LogTail:\n"
        "    def _poll_lines(self, handle):\n"
        "        while True:\n"
        "            data = f.read(1 << 20)\n"
        "            got = self._lines.feed(self._decoder.decode(data))\n"
    )
    assert _line_cutting(tail, "live/tail.py") == ["live/tail.py:4 LogTail._poll_lines: .read() in a loop"]
    io_lines = (
        "class Lines:\n"
        "    def __iter__(self):\n"
        "        readline, limit = self.f.readline, self.limit\n"
        "        while True:\n"
        "            line = readline(limit)\n"
        "    def numbered(self):\n"
        "        read, limit = self.f.read, self.limit\n"
        "        while True:\n"
        "            more = read(1 << 20)\n"
    )
    assert _line_cutting(io_lines, "formats/_io.py") == [
        "formats/_io.py:5 Lines.__iter__: .readline()",
        "formats/_io.py:9 Lines.numbered: .read() in a loop",
    ]


@pytest.mark.slow
def test_no_text_reader_cuts_lines_outside_the_shared_reader():
    """Every format module, the stream opener (_io) and ``watch`` read lines through
    trainproof.formats.lines, so that a line and its number are the same for all of them."""
    files = sorted((SRC / "formats").glob("*.py")) + [SRC / "live" / "tail.py"]
    found = []
    for f in files:
        rel = f.relative_to(SRC).as_posix()
        if rel not in _SHARED:
            found += _line_cutting(f.read_text(encoding="utf-8"), rel)
    assert found == []


# --------------------------------------------------------------------------- console words


def test_the_console_reads_its_split_and_step_words_from_the_alias_vocabulary():
    assert console._EPOCH_WORDS == aliases.console_words("epoch") == {"epoch", "ep"}
    assert console._COUNTER_WORDS == aliases.console_words("step") == {"step", "iter", "iteration", "batch", "it"}
    assert console._GLOBAL_WORDS == aliases.console_words("global")
    for w in aliases.console_words("eval"):
        assert console._EVAL_MARK.fullmatch(w.upper()) and not console._TEST_MARK.fullmatch(w)
    for w in aliases.console_words("test"):
        assert console._TEST_MARK.fullmatch(w.title()) and not console._EVAL_MARK.fullmatch(w)
    assert not console._EVAL_MARK.search("dev") and not console._EVAL_MARK.search("Total steps")
    # Keys are read with the same table: a test split is an eval split there.
    assert aliases.EVAL_WORDS == aliases.key_words("eval", "test")
    assert {"steps", "epochs"} <= aliases.key_words("step", "epoch")


def test_the_console_module_spells_no_word_list_of_its_own():
    """No set or tuple of split or axis words is written in console.py: they are read
    from :data:`trainproof.aliases.VOCABULARY`."""
    tree = ast.parse((SRC / "formats" / "console.py").read_text(encoding="utf-8"))
    vocab = set(aliases.VOCABULARY)
    # Which global count wins on a line is a rule of the console reader, not a word list.
    allowed = {
        id(n.value) for n in tree.body if isinstance(n, ast.Assign) and [t.id for t in n.targets] == ["_GLOBAL_FIRST"]
    }
    own = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Set, ast.Tuple, ast.List)) and id(node) not in allowed:
            words = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            if len(words & vocab) >= 2:
                own.append((node.lineno, sorted(words & vocab)))
    assert own == []


# --------------------------------------------------------------------------- watch


def test_watch_skips_an_overlong_line_that_ends_within_one_read(tmp_path, monkeypatch):
    """A line over the cap is skipped by ``watch`` as by ``epoch``, also when it ends in
    the read that began it (the tail once handed such a line on whole)."""
    import json

    from trainproof.live import tail
    from trainproof.live.guardian import Guardian

    monkeypatch.setattr(tail, "MAX_LINE", 100)
    p = tmp_path / "run.jsonl"
    long = json.dumps({"step": 2, "loss": 0.5, "pad": "x" * 120})
    p.write_text(
        json.dumps({"step": 1, "loss": 1.0}) + "\n" + long + "\n" + json.dumps({"step": 3, "loss": 0.25}) + "\n"
    )
    g = Guardian()
    t = tail.LogTail(p, g)
    t.poll()
    assert g.records == 2
    assert list(g.runlog().series["loss"].steps) == [1.0, 3.0]
    assert g.meta["dropped"] == ["skipped 1 line(s) longer than 100 characters (lines 2): not read"]


def test_watch_counts_a_crlf_split_between_reads_as_one_line_end(tmp_path, monkeypatch):
    """An overlong line whose CR ends one poll and whose LF starts the next is one line:
    the lines after it keep their numbers (the tail once counted an extra line)."""
    from trainproof.live import tail
    from trainproof.live.guardian import Guardian

    monkeypatch.setattr(tail, "MAX_LINE", 28)
    p = tmp_path / "run.jsonl"
    p.write_bytes(b'{"step": 1, "loss": 1.0}\r\n{"step": 2, "loss": 0.5}\r\n' + b"#" * 40)
    g = Guardian()
    t = tail.LogTail(p, g)
    t.poll()  # the overlong line is being skipped
    assert g.records == 2
    for more in (b"#" * 10 + b"\r", b'\n{"step": 4, "loss": 0.25}\r\n{"step":5, "loss": 0.2}\r\n'):
        with open(p, "ab") as f:
            f.write(more)
        t.poll()
    assert g.records == 4
    assert g.meta["dropped"] == ["skipped 1 line(s) longer than 28 characters (lines 3): not read"]
    assert g.runlog().series["loss"].lines.tolist() == [1, 2, 4, 5]


# --------------------------------------------------------------------------- CSV through Lines


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_csv_skips_an_overlong_row_at_its_line_whatever_the_chunk_size(tmp_path, monkeypatch, newline):
    """CSV reads its header line by line and its rows a chunk at a time from one
    :class:`Lines`: an overlong row is skipped with its own number, the rows after it keep
    theirs, wherever the chunks end (also right after the header, and quoted rows)."""
    from trainproof.api import read_runlog
    from trainproof.formats import csv as csv_reader

    rows = ["step,loss", "1,0.5", "2," + "9" * 30, "3,0.25", '4,"0.125"', "5," + "8" * 20, "6,0.0625"]
    p = tmp_path / "metrics.csv"
    p.write_bytes((newline.join(rows) + newline).encode())
    monkeypatch.setattr(csv_reader, "MAX_LINE", 16)
    field_limit = pycsv.field_size_limit()  # the reader sets the process-wide csv limit
    try:
        for chunk in [*range(1, 30), 1 << 22]:
            monkeypatch.setattr(csv_reader, "_CHUNK", chunk)
            run = read_runlog(p, fmt="csv")
            assert run.series["loss"].lines.tolist() == [2, 4, 5, 7], chunk
            assert run.series["loss"].steps.tolist() == [1.0, 3.0, 4.0, 6.0], chunk
            assert "skipped 2 line(s) longer than 16 characters (lines 3, 6): not read" in run.notes, chunk
    finally:
        pycsv.field_size_limit(field_limit)


# --------------------------------------------------------------------------- bytes


@pytest.mark.parametrize("size", [1, 3, 7, 64])
def test_byte_line_chunks_give_whole_lines_and_the_rest(size):
    data = b"a,1\nbb,22\n\nccc,333\ntail"
    pieces = list(byte_line_chunks(io.BytesIO(data), size))
    assert all(body.endswith(b"\n") for body, final in pieces if not final and body)
    assert [final for _, final in pieces] == [False] * (len(pieces) - 1) + [True]
    assert b"".join(bytes(body) for body, _ in pieces) == data
    assert pieces[-1][0] == b"tail"


def test_byte_line_chunks_refuse_a_line_over_the_limit():
    with pytest.raises(LineTooLong):
        list(byte_line_chunks(io.BytesIO(b"ok\n" + b"x" * 100 + b"\nok\n"), 16, limit=50))
    with pytest.raises(LineTooLong):
        list(byte_line_chunks(io.BytesIO(b"x" * 100), 16, limit=50))  # no line end at all
    assert list(byte_line_chunks(io.BytesIO(b"x" * 40 + b"\n"), 16, limit=50)) == [
        (b"x" * 40 + b"\n", False),
        (b"", True),
    ]
