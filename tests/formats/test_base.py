"""The reader protocol (trainproof.formats.base): every reader follows it, the rest of
trainproof asks the readers instead of keeping copies of their names, nothing outside
``formats`` reaches into a reader's private names, the package has no import cycle, and
a new format needs only its module, its test and one line in ``READERS``."""

from __future__ import annotations

import ast
import gzip
import inspect
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
from _import_graph import _import_graph, _reaches

import trainproof
from trainproof import api, discover, formats, remote
from trainproof.formats import base
from trainproof.live.guardian import Guardian
from trainproof.live.tail import LogTail
from trainproof.render import names as render_names
from trainproof.render import sarif
from trainproof.runlog import Record

SRC = Path(trainproof.__file__).parent


def _params(fn) -> tuple[str, ...]:
    return tuple(inspect.signature(fn).parameters)


def _check_reader(r) -> None:
    """Assert that the module ``r`` satisfies :class:`base.Reader` (names, types, signatures)."""
    for attr, want in base.REQUIRED.items():
        assert hasattr(r, attr), (r.__name__, attr)
        value = getattr(r, attr)
        if isinstance(want, type):
            assert isinstance(value, want), (r.__name__, attr, value)
        else:
            assert callable(value) and _params(value) == want, (r.__name__, attr)
    for attr, want in base.OPTIONAL.items():
        if hasattr(r, attr):
            assert callable(getattr(r, attr)) and _params(getattr(r, attr)) == want, (r.__name__, attr)
    assert r.name and r.description
    assert r.tail_mode in base.TAIL_MODES, r.name
    for names in (r.file_names, r.suffixes, r.run_suffixes):
        assert all(isinstance(n, str) and n == n.lower() for n in names), r.name
    assert all(s.startswith(".") for s in (*r.suffixes, *r.run_suffixes)), r.name
    if r.tail_mode == "lines":
        t = r.line_tailer()
        assert _params(t.line) == ("raw", "lineno") and _params(t.drops) == ()
        assert t.drops() == []
    if r.tail_mode == "records":
        t = r.record_tailer()
        assert _params(t.poll) == ("path", "offset") and _params(t.drops) == ()
        assert t.drops() == []


@pytest.mark.parametrize("reader", formats.READERS, ids=lambda r: r.name)
def test_every_reader_follows_the_protocol(reader):
    _check_reader(reader)


def test_the_protocol_names_what_the_readers_define():
    """:data:`base.REQUIRED` is the protocol's own list of members, so the check above
    checks the protocol."""
    declared = set(base.Reader.__annotations__) | {
        n for n in vars(base.Reader) if callable(vars(base.Reader)[n]) and not n.startswith("_")
    }
    assert declared == set(base.REQUIRED)


def test_the_lists_are_the_union_of_the_readers_declarations():
    assert formats.trainer_file_names() == {n for r in formats.READERS for n in r.file_names}
    assert formats.log_suffixes() == {s for r in formats.READERS for s in r.suffixes}
    assert set(formats.run_suffixes()) == {s for r in formats.READERS for s in r.run_suffixes}
    # What the walk, api and watch saw before the declarations moved into the readers (a
    # new reader adds its own).
    assert formats.trainer_file_names() >= {
        "trainer_state.json",
        "metrics.csv",
        "progress.csv",
        "metrics.jsonl",
        "trainer_log.jsonl",
        "training.log",
        "trainer_0_log.txt",
        "mlflow.db",
    }
    assert formats.log_suffixes() >= {
        *(".json", ".jsonl", ".ndjson", ".csv", ".tsv", ".log", ".txt", ".out"),
        *(".db", ".sqlite", ".sqlite3", ".wandb"),
    }
    assert formats.run_suffixes() == (".jsonl", ".ndjson", ".jsonl.gz")
    assert {r.name for r in formats.READERS if r.tail_mode != "whole"} == {"jsonl", "csv", "tfevents"}


def test_api_and_the_walks_use_every_readers_names(tmp_path):
    """Each reader's file names and suffixes reach doctor's walk (local and over a URL's
    listing) and api's judgement of what is a run."""
    names = sorted(formats.trainer_file_names())
    names += [f"x{s}" for s in sorted(formats.log_suffixes())] + [f"y{s}.gz" for s in sorted(formats.log_suffixes())]
    names += ["events.out.tfevents.1.host", "run.tfevents.v2"]
    for n in names:
        (tmp_path / n).write_text("1\n")
    (tmp_path / "notes.md").write_text("1\n")
    (tmp_path / "model.bin").write_text("1\n")
    assert sorted(p.name for p in discover.walk(tmp_path)) == sorted(names)
    assert sorted(str(k) for k in remote._walk_listing(names + ["notes.md", "model.bin"], None, None, [])) == sorted(
        names
    )
    for n in formats.trainer_file_names():
        assert api._trainer_name(Path(n)) and api._trainer_name(Path(n.upper()))
    assert api._trainer_name(Path("events.out.tfevents.1.host"))
    assert not api._trainer_name(Path("train.jsonl")) and api._looks_like_log_name(Path("train.jsonl"))
    for s in formats.run_suffixes():
        assert api._looks_like_log_name(Path(f"run{s}"))
    assert not api._looks_like_log_name(Path("config.json"))


# --- what outside formats may import of it ----------------------------------------------

#: ``(module, formats name)`` imports of a private formats name outside the package that
#: are justified. None are.
_PRIVATE_IMPORT_EXCEPTIONS: set[tuple[str, str]] = set()


def _module_name(f: Path) -> str:
    parts = list(f.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    package = module if is_package else module.rpartition(".")[0]
    if not node.level:
        return node.module or ""
    base_parts = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join(base_parts + ([node.module] if node.module else []))


def _private(dotted: str) -> bool:
    return any(p.startswith("_") and not p.startswith("__") for p in dotted.split("."))


def _private_uses(source: str, module: str, is_package: bool = False) -> list[str]:
    """Every private formats name the ``source`` of ``module`` imports or reads: a private
    module (``formats._io``), a private name imported from a formats module, or an
    attribute ``_x`` of a formats module bound by an import (``csv_fmt._delimiter``)."""
    tree = ast.parse(source)
    found, aliases = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _resolve(module, is_package, node)
            if not (target == "trainproof.formats" or target.startswith("trainproof.formats.")):
                continue
            for a in node.names:
                full = f"{target}.{a.name}"
                if _private(full.removeprefix("trainproof.")):
                    found.append(full)
                aliases.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("trainproof.formats"):
                    if _private(a.name.removeprefix("trainproof.")):
                        found.append(a.name)
                    if a.asname:
                        aliases.add(a.asname)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and _private(node.attr)
        ):
            found.append(f"{node.value.id}.{node.attr}")
    return found


def test_the_private_name_check_sees_each_kind_of_private_use():
    """What live/tail.py did before the protocol: each of these is found."""
    source = (
        "from ..formats._io import MAX_LINE\nfrom ..formats import csv as csv_fmt\n"
        "csv_fmt._delimiter('a')\nfrom ..formats.tfevents import _read_file\n"
        "import trainproof.formats._io as io\n"
    )
    assert _private_uses(source, "trainproof.live.tail") == [
        "trainproof.formats._io.MAX_LINE",
        "trainproof.formats.tfevents._read_file",
        "trainproof.formats._io",
        "csv_fmt._delimiter",
    ]
    assert _private_uses("from .formats import ReadError, read_head\n", "trainproof.api") == []


@pytest.mark.slow
def test_no_module_outside_formats_uses_a_private_formats_name():
    bad = []
    for f in sorted(SRC.rglob("*.py")):
        if (SRC / "formats") in f.parents:
            continue
        m = _module_name(f)
        bad += [
            (m, n)
            for n in _private_uses(f.read_text(encoding="utf-8"), m, f.name == "__init__.py")
            if (m, n) not in _PRIVATE_IMPORT_EXCEPTIONS
        ]
    assert bad == []


def _formats_imports(source: str, module: str) -> list[str]:
    """Every ``trainproof.formats`` module the ``source`` of ``module`` imports."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            target = _resolve(module, False, node)
            if target == "trainproof.formats" or target.startswith("trainproof.formats."):
                found.append(target)
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("trainproof.formats")]
    return found


def test_the_import_check_sees_a_reader_module():
    """What discover.py imported before the run-folder hooks: each one is found."""
    source = "from .formats import log_name_test\nfrom .formats.wandb import RUN_DIR\nimport trainproof.formats.hf\n"
    assert _formats_imports(source, "trainproof.discover") == [
        "trainproof.formats",
        "trainproof.formats.wandb",
        "trainproof.formats.hf",
    ]


def test_the_walk_imports_the_registry_and_no_reader():
    """``doctor``'s walk asks the registry what a run folder is (the readers' hooks), never
    a reader module: a format's folders are known in its reader alone."""
    f = SRC / "discover.py"
    assert set(_formats_imports(f.read_text(encoding="utf-8"), "trainproof.discover")) == {"trainproof.formats"}


@pytest.mark.slow
def test_readers_share_helpers_by_their_public_names():
    """Inside ``formats`` too, a module imports another's public names only (a private
    module's, like ``_protowire.fields``): the W&B layers do not borrow ``_event_proto``'s
    private walker."""
    bad = []
    for f in sorted((SRC / "formats").glob("*.py")):
        m = _module_name(f)
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                bad += [(m, node.module, a.name) for a in node.names if a.name.startswith("_")]
    assert bad == []


def test_a_new_readers_run_folders_are_found_by_its_hooks(tmp_path, monkeypatch):
    """A reader that declares its run folders (``run_dir``, ``run_part``) has them walked,
    kept whole and named as runs of an experiment, with nothing added to discover.py."""
    toy = _toy_reader()

    def run_dir(path, dirnames, names):
        if "toy.meta" in names:
            return base.RunDir(parts=frozenset({"steps"}), reads=frozenset({"steps"}), owns_files=True)
        return None

    def run_part(name, above):
        return name.startswith("toyrun-")

    toy.run_dir, toy.run_part = run_dir, run_part
    _check_reader(toy)
    run = tmp_path / "exp" / "toyrun-7"
    (run / "steps").mkdir(parents=True)
    (run / "toy.meta").write_text("x\n")
    (run / "own.toy").write_text(_toy_text())  # the run's own file: read through the folder
    (run / "steps" / "metrics.jsonl").write_text("{}\n")  # a part of the run: not searched
    (run / "artifacts").mkdir()
    (run / "artifacts" / "metrics.jsonl").write_text("{}\n")  # not a part: searched
    assert discover.experiment_of("exp/toyrun-7/") is None

    monkeypatch.setitem(sys.modules, "trainproof.formats.toy", toy)
    monkeypatch.setattr(formats, "READER_MODULES", ("toy", *formats.READER_MODULES))
    monkeypatch.delattr(formats, "READERS")
    assert [p.relative_to(tmp_path).as_posix() for p in discover.walk(tmp_path)] == [
        "exp/toyrun-7",
        "exp/toyrun-7/artifacts/metrics.jsonl",
    ]
    assert discover.experiment_of("exp/toyrun-7/") == "exp"


@pytest.mark.slow
def test_the_formats_package_has_no_import_cycle():
    """The readers and their helpers import their contract from ``formats.base`` and their
    I/O from ``formats._io``, never the package ``__init__`` (which imports the readers)."""
    graph = _import_graph()
    members = [m for m in graph if m.startswith("trainproof.formats.")]
    assert {f"trainproof.formats.{r.__name__.rpartition('.')[2]}" for r in formats.READERS} <= set(members)
    for m in members:
        assert "trainproof.formats" not in graph[m], m
        assert m not in _reaches(graph, m), m
    assert "trainproof.formats" not in _reaches(graph, "trainproof.formats")


def test_the_package_reexports_what_it_always_did():
    from trainproof.formats import NotALog, NotOpened, ReadError, ReadState  # noqa: F401

    assert formats.ReadState is base.ReadState and formats.ReadError is base.ReadError
    assert set(formats.__all__) <= set(dir(formats))


def test_each_registered_module_is_the_reader_of_its_name():
    assert [r.__name__ for r in formats.READERS] == [f"trainproof.formats.{m}" for m in formats.READER_MODULES]
    assert formats.format_names() == list(formats.READER_MODULES)


def test_importing_the_package_imports_no_reader():
    code = "import sys, trainproof.formats as f; print(sorted(m for m in sys.modules if m.startswith(('trainproof', 'numpy'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # The stream opener and the line reader (MAX_LINE): neither is a reader nor needs numpy.
    assert eval(out) == ["trainproof", "trainproof.formats", "trainproof.formats._io", "trainproof.formats.lines"]


def test_line_numbered_formats_are_the_readers_declarations():
    """A finding's ``line`` is a text line in the formats whose readers say so (SARIF anchors
    it there), a record's index in the others, and in a format no reader has."""
    from trainproof.findings import is_line_format

    assert all(is_line_format(r.name) == r.line_anchors for r in formats.READERS)
    # Today's readers, as they declare it (a new reader adds its own declaration).
    lines = {r.name for r in formats.READERS if is_line_format(r.name)}
    assert {"jsonl", "csv", "hf", "coqui", "console", "mlflow"} <= lines
    assert not lines & {"tfevents", "wandb", "trackio", "mlflow_db"}
    assert is_line_format("dataset") and is_line_format("speech-data")
    assert not is_line_format("live") and not is_line_format(None)


def test_preference_is_the_readers_declaration():
    assert sorted(formats.READER_MODULES, key=formats.preference)[:2] == ["hf", "tfevents"]
    assert formats.preference("no-such-format") == len(formats.READERS)


# --- a new format: its module and one line in READER_MODULES ----------------------------


def _toy_reader() -> types.ModuleType:
    """A reader module of a made-up format, as a new format's module would be: lines
    ``TOY <step> <loss>`` under a ``TOYLOG`` first line."""
    toy = types.ModuleType("toy")
    toy.name = "toy"
    toy.description = "a made-up format: TOYLOG, then one 'TOY step loss' line per step"
    toy.file_names = ("toyrun.state",)
    toy.suffixes = (".toy",)
    toy.run_suffixes = ()
    toy.tail_mode = "whole"
    toy.preference = 7
    toy.line_anchors = True

    def sniff(path, head):
        return head.startswith("TOYLOG")

    def read(path, state):
        text = path.read_text()
        if not text.startswith("TOYLOG"):
            raise formats.ReadError("not a toy log")
        for i, line in enumerate(text.splitlines()[1:], start=2):
            _, step, loss = line.split()
            yield Record(float(step), {"loss": float(loss)}, i)

    toy.sniff, toy.read = sniff, read
    return toy


def _toy_text(n: int = 60, nan_at: int | None = None) -> str:
    return "TOYLOG\n" + "".join(f"TOY {10 * i} {'nan' if i == nan_at else 2.0 / (i + 1)}\n" for i in range(n))


def test_a_new_reader_is_found_judged_and_watched_with_one_registration_line(tmp_path, monkeypatch):
    toy = _toy_reader()
    _check_reader(toy)
    root = tmp_path / "tree"
    (root / "good").mkdir(parents=True)
    (root / "bad").mkdir()
    (root / "broken").mkdir()
    (root / "stray").mkdir()
    (root / "good" / "run.toy").write_text(_toy_text())
    (root / "bad" / "toyrun.state").write_text(_toy_text(nan_at=40))  # by its trainer's name alone
    (root / "broken" / "toyrun.state").write_text("garbage\n")  # a trainer's name: a run not judged
    (root / "stray" / "other.toy").write_text("garbage\n")  # a suffix alone: not a run
    (root / "stray" / "gz.toy.gz").write_bytes(gzip.compress(b"x"))
    (root / "good" / "metrics.jsonl").write_text(
        "".join(json.dumps({"step": 10 * i, "loss": 1.0 / (i + 1)}) + "\n" for i in range(60))
    )

    before = sorted(p.relative_to(root).as_posix() for p in discover.walk(root))
    assert before == ["good/metrics.jsonl"]  # the toy format is not known yet

    # The module stands where `src/trainproof/formats/toy.py` would be imported from.
    monkeypatch.setitem(sys.modules, "trainproof.formats.toy", toy)
    monkeypatch.setattr(formats, "READER_MODULES", ("toy", *formats.READER_MODULES))  # the one registration line
    monkeypatch.delattr(formats, "READERS")  # loaded again from READER_MODULES on first use

    assert sorted(p.relative_to(root).as_posix() for p in discover.walk(root)) == [
        "bad/toyrun.state",
        "broken/toyrun.state",
        "good/metrics.jsonl",
        "good/run.toy",
        "stray/gz.toy.gz",
        "stray/other.toy",
    ]
    reports, ignored = api.doctor(root, jobs=1)
    by_file = {Path(r.file).relative_to(root).as_posix(): r for r in reports}
    assert by_file["good/run.toy"].format == "toy" and by_file["good/run.toy"].verdict == "PASS"
    assert by_file["bad/toyrun.state"].format == "toy" and by_file["bad/toyrun.state"].verdict == "FAIL"
    assert "TP-NAN" in {f.id for f in by_file["bad/toyrun.state"].findings}
    assert by_file["broken/toyrun.state"].error  # a trainer's file that cannot be read is reported
    skipped = {Path(i["file"]).relative_to(root).as_posix() for i in ignored}
    assert {"stray/other.toy", "stray/gz.toy.gz"} <= skipped
    assert "good/run.toy" not in skipped and "stray/other.toy" not in by_file
    assert formats.format_names()[0] == "toy" and formats.get_reader("toy") is toy

    # its findings are anchored at their lines, as it declares (line_anchors)
    nan = next(f for f in by_file["bad/toyrun.state"].findings if f.id == "TP-NAN")
    result = next(
        r for r in sarif.to_sarif([by_file["bad/toyrun.state"]])["runs"][0]["results"] if r["ruleId"] == "TP-NAN"
    )
    assert nan.line == 42 and result["locations"][0]["physicalLocation"]["region"]["startLine"] == 42
    assert "line 42" in render_names.location_words(by_file["bad/toyrun.state"], nan.line)

    # watch follows it as its tail_mode says (read again whole when it changes)
    log = tmp_path / "live.toy"
    log.write_text(_toy_text(20))
    g = Guardian()
    tail = LogTail(log, g)
    assert tail.poll() == 20
    log.write_text(_toy_text(30))
    tail.poll()
    assert g.records == 30


def test_every_reader_is_fuzzed():
    """A new format is not done until the fuzz tests build its logs: each reader has an
    entry (``<name>`` or ``<name>_<dialect>``) in the table of ``tests/_fuzz_logs.py``."""
    import _fuzz_logs

    fuzzed = {key.split("_")[0] for key in _fuzz_logs.READERS} | set(_fuzz_logs.READERS)
    assert set(formats.READER_MODULES) <= fuzzed, sorted(set(formats.READER_MODULES) - fuzzed)


def test_reading_one_log_imports_only_the_readers_it_tries(tmp_path):
    # Detection tries the readers in sniffing order and imports each when it is reached: a
    # JSONL log never loads the text readers after it (the console reader's patterns cost
    # start-up), and asking for one format by name loads that reader alone.
    log = tmp_path / "run.jsonl"
    log.write_text("".join(json.dumps({"step": i, "loss": 2.0 - 0.1 * i}) + "\n" for i in range(10)))
    code = (
        "import sys; from pathlib import Path; from trainproof import formats as F; "
        f"r = F.detect(Path({str(log)!r})); "
        "loaded = sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('trainproof.formats.')); "
        "c = F.get_reader('coqui'); "
        "print(r.name, 'console' in loaded, 'coqui' in loaded, 'csv' in loaded, c.name, "
        "'trainproof.formats.console' in sys.modules, F.format_names() == list(F.READER_MODULES), "
        "F.line_anchors('console'), 'trainproof.formats.console' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["jsonl", "False", "False", "False", "coqui", "False", "True", "True", "True"]
