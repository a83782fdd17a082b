"""MLflow file store: ``mlruns/<experiment>/<run>/metrics/<name>``.

Each metric is one file (names with ``/`` become sub-folders); each line is
``<unix_ms> <value> <step>``. A run directory (the folder holding ``metrics/``) is one
run; a single metric file can also be read on its own, named after the file.

``mlflow.log_metric`` without ``step=`` writes step 0 on every line. A metric file of
several lines that all carry one step has no x axis of its own: its values are read in
the order they were logged (the file's order), at steps 0, 1, 2, … (the n-th logged
value, e.g. the n-th epoch of a per-epoch metric), with a note. Collapsing them onto
their one step would keep only the last value.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Collection, Iterable, Iterator, Sequence
from pathlib import Path

from ..runlog import Record
from ._io import ReadError, open_binary, open_text
from .base import RunDir
from .lines import Lines

name = "mlflow"
description = "MLflow file store (mlruns/<experiment>/<run>/metrics/<name>)"
#: Its logs are run folders (:func:`sniff_dir`); metric files carry the metric's name.
file_names = ()
suffixes = ()
run_suffixes = ()
#: A run folder is many files, read again whole.
tail_mode = "whole"
preference = 2
#: Whether outputs anchor a finding at its line (a finding's line is a line of a metric file).
line_anchors = True

_LINE = re.compile(r"^\s*(\d{9,16})\s+(\S+)\s+(-?\d+)\s*$")


#: What the walk leaves of an MLflow run folder: the subfolders its reader reads (its
#: ``artifacts/`` may hold more logs, so the walk still descends there).
_RUN_DIR = RunDir(parts=frozenset({"metrics", "params", "tags"}), reads=frozenset({"metrics", "params", "tags"}))
_DELETED_RUN_DIR = RunDir(
    parts=None,
    reads=frozenset(),
    skip="an MLflow run its store marks deleted (lifecycle_stage: deleted): in MLflow's bin",
)


def run_dir(path: str | Path, dirnames: Collection[str], names: Collection[str]) -> RunDir | None:
    """An MLflow run folder, by the names in it (reader protocol hook): a ``metrics/``
    folder beside the run's ``meta.yaml``, ``params/`` or ``tags/``."""
    if "metrics" in dirnames and ("meta.yaml" in names or "params" in dirnames or "tags" in dirnames):
        # A run deleted in the UI or by mlflow.delete_run stays on disk, marked deleted in
        # its meta.yaml until the store is garbage-collected: in MLflow's bin, as the SQLite
        # store and the server leave it out.
        if (
            "meta.yaml" in names
            and _yaml_fields(Path(path) / "meta.yaml", ("lifecycle_stage",)).get("lifecycle_stage") == "deleted"
        ):
            return _DELETED_RUN_DIR
        return _RUN_DIR
    return None


def run_part(name: str, above: tuple[str, ...] = ()) -> bool:
    """Whether a path part is an MLflow run folder: the second part below ``mlruns/``
    (``mlruns/<experiment id>/<run id>``), whose experiment is the folder above it
    (reader protocol hook)."""
    return len(above) >= 2 and above[-2] == "mlruns"


def sniff_dir(path: Path) -> bool:
    """A run folder: it has a ``metrics/`` folder holding at least one file."""
    m = path / "metrics"
    return m.is_dir() and any(p.is_file() for p in m.rglob("*"))


def sniff(path: Path, head: str) -> bool:
    """Every complete line of the head is ``timestamp value step``."""
    lines = [ln for ln in head.splitlines() if ln.strip()]
    if not head.endswith(("\n", "\r")) and len(lines) > 1:
        # The last line is unfinished: cut by the head, or still being written (a live run).
        lines = lines[:-1]
    return bool(lines) and all(_LINE.match(ln) for ln in lines[:50])


def _metric_files(run: Path) -> list[tuple[str, Path]]:
    base = run / "metrics"
    return sorted((p.relative_to(base).as_posix(), p) for p in base.rglob("*") if p.is_file())


def _read_metric(key: str, p: Path, state, label: str) -> Iterator[Record]:
    """The metric file's records, in order; see the module docstring for a file whose
    lines all carry one step."""
    return logged_order(_metric_lines(key, p, state, label), state, label)


def logged_order(records: Iterable[Record], state, label: str) -> Iterator[Record]:
    """One MLflow metric's records (in the order logged) as a RunLog should see them: as
    they are, unless there are several and all carry one step (``log_metric`` without
    ``step=``), when they are renumbered 0, 1, 2, … in their order, with a note in
    ``state.notes`` naming ``label``. Shared by every MLflow source (file store, tracking
    server), so the same metric reads the same wherever it is kept."""
    # Records are held back while every step equals the first one (the constant-step case
    # is only known at the end); the first other step releases them as they were.
    held: list[Record] = []
    const = True
    for rec in records:
        if const:
            if not held or rec.step == held[0].step:
                held.append(rec)
                continue
            const = False
            yield from held
            held = []
        yield rec
    if const:
        steps = steps_as_logged([rec.step for rec in held], label, state)
        if steps is not None:
            for rec, step in zip(held, steps):
                rec.step = step
    yield from held


def steps_as_logged(steps: Sequence[float], label: str, state) -> list[float] | None:
    """MLflow's x axis for a metric logged without ``step=`` (see the module docstring),
    shared by the file store and the SQLite store readers.

    Args:
        steps: the steps of one metric's values, in the order they were logged.
        label: how the note names the metric (``metrics/loss``).
        state: the :class:`~trainproof.formats.base.ReadState` the note goes to.

    Returns:
        ``[0.0, 1.0, …, n - 1]`` when the ``n > 1`` values all carry one step (and a note
        in ``state.notes`` says so), else ``None``: the steps stand as logged.
    """
    n = len(steps)
    if n < 2 or any(s != steps[0] for s in steps):
        return None
    state.notes.append(
        f"{label}: all {n} values are logged at step {float(steps[0]):g} (no step= "
        f"given): read in the order logged, as steps 0..{n - 1}"
    )
    return [float(i) for i in range(n)]


def _metric_lines(key: str, p: Path, state, label: str) -> Iterator[Record]:
    bad = 0
    with open_text(p) as f:
        lines = Lines(f)
        for lineno, raw in enumerate(lines, 1):
            m = _LINE.match(raw)
            if not m:
                if raw.strip():
                    bad += 1
                continue
            if not raw.endswith("\n"):
                # MLflow ends every line; an unfinished last line is cut mid-write, and a cut
                # step ("120" torn to "12") would put the value at the wrong step.
                state.drop(
                    f"{label}: the last line ({lineno}) has no line end: cut mid-write "
                    "(a run killed or still writing?), so it was not read"
                )
                continue
            try:
                val = float(m.group(2))
            except ValueError:
                bad += 1
                continue
            yield Record(float(m.group(3)), {key: val}, lineno)
        lines.note(state, f"{label}: ")
    if bad:
        state.drop(f"{label}: skipped {bad} line(s) that are not 'timestamp value step'")


def _small_text(path: Path, limit: int) -> str | None:
    """The first ``limit`` bytes of the small file MLflow writes at ``path`` as text, or
    ``None`` when it is absent, unreadable, not a regular file, or a symlink: MLflow
    writes none of these files as a link, and one (``mlruns/0/meta.yaml`` beside the run
    folders) may lead out of the searched tree. Opened without blocking (a FIFO in its
    place is not waited on). Never raises."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        with open_binary(path) as f:
            return f.read(limit).decode("utf-8", "replace")
    except (OSError, ReadError):
        return None


def _yaml_fields(path: Path, keys: tuple[str, ...]) -> dict[str, str]:
    """The top-level ``key: value`` lines of a small YAML file MLflow writes (``meta.yaml``),
    for ``keys``, quotes removed; ``{}`` when it cannot be read. Never raises."""
    out: dict[str, str] = {}
    text = _small_text(path, 1 << 16)
    if text is None:
        return out
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key in keys and not line.startswith((" ", "\t")):
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            if value:
                out[key] = value
    return out


def _run_meta(run: Path) -> dict:
    """What a file-store run folder says of its run, as the SQLite store's reader names
    it: ``run`` (``meta.yaml``'s ``run_name``, else the ``mlflow.runName`` tag), ``run_id``,
    ``experiment`` (the name in the experiment folder's ``meta.yaml``) and ``started``."""
    meta: dict = {}
    fields = _yaml_fields(run / "meta.yaml", ("run_name", "run_id", "run_uuid", "start_time"))
    name = fields.get("run_name")
    if not name:
        name = _small_text(run / "tags" / "mlflow.runName", 4096)
        name = name.strip()[:500] if name is not None else None
    if name:
        meta["run"] = name
    rid = fields.get("run_id") or fields.get("run_uuid")
    if rid:
        meta["run_id"] = rid
    exp = _yaml_fields(run.parent / "meta.yaml", ("name",)).get("name")
    if exp:
        meta["experiment"] = exp
    start = fields.get("start_time", "")
    if start.isdigit():
        from datetime import datetime, timezone

        try:
            meta["started"] = datetime.fromtimestamp(int(start) / 1000, timezone.utc).isoformat(timespec="seconds")
        except (ValueError, OverflowError, OSError):
            pass
    return meta


def read(path: Path, state) -> Iterator[Record]:
    """Yield one record per metric line. A run folder also fills ``state.meta`` with the
    run's name, id, experiment and start time (:func:`_run_meta`)."""
    if path.is_dir():
        files = _metric_files(path)
        if not files:
            raise ReadError("no metric files under metrics/")
        state.meta["metric_files"] = [k for k, _ in files]
        for k, v in _run_meta(path).items():
            state.meta.setdefault(k, v)
    else:
        files = [(path.name, path)]
    for key, p in files:
        # The note names the file as the user knows it: metrics/<name> inside a run folder.
        yield from _read_metric(key, p, state, f"metrics/{key}" if path.is_dir() else p.name)
