"""What the run history keeps of one judged run: a :class:`RunRecord`.

A record holds the run's identity (experiment, run name, source, git commit), its verdict
and finding ids, a few summary figures and a downsampled :class:`Curve` per metric. It
never holds raw log content (no lines, no text the log carried beyond metric names and the
run's name), so a store can be shared wider than the logs themselves.
"""

from __future__ import annotations

import itertools
import math
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._arrays import unique
from ..findings import Report
from ..runlog import RunLog, Series, downsample

#: Most points a stored curve keeps. A few hundred points draw a curve on a screen at full
#: resolution and place a run's floor, end level and noise as well as the full series does
#: for the cross-run comparison; at 8 bytes a value (steps and values) a metric costs under
#: 5 KiB a run.
CURVE_POINTS = 300

#: Most metrics a record keeps curves of: the canonical ones first (loss, eval_loss, lr,
#: grad_norm, ...), then the others by name. A log of hundreds of per-layer metrics keeps
#: the ones a comparison reads without making each record hundreds of kilobytes.
MAX_CURVES = 32

#: Canonical metrics first, in this order, when choosing the curves a record keeps.
_FIRST = (
    "loss",
    "eval_loss",
    "lr",
    "grad_norm",
    "epoch",
    "time",
    "step_time",
    "update_ratio",
    "loader_time",
    "gpu_util",
)

#: Summary keys every record has (a value may be ``None`` where the log has no such figure).
SUMMARY_KEYS = (
    "steps",
    "points",
    "duration_s",
    "max_steps",
    "loss_first",
    "loss_best",
    "loss_last",
    "eval_loss_first",
    "eval_loss_best",
    "eval_loss_last",
    "improvement",
    "noise",
    "lr_shape",
)


@dataclass(frozen=True)
class Curve:
    """One metric of a run, downsampled for the store.

    Attributes:
        steps: float64 array, shape (n,), non-decreasing.
        values: float64 array, shape (n,); NaN and ±Inf are kept as markers.

    ``n`` is at most :data:`CURVE_POINTS` for a curve built by :meth:`of`. Raises
    ``ValueError`` when the arrays are not one-dimensional or differ in length.
    """

    steps: np.ndarray
    values: np.ndarray

    def __post_init__(self) -> None:
        steps = np.ascontiguousarray(self.steps, dtype=np.float64)
        values = np.ascontiguousarray(self.values, dtype=np.float64)
        if steps.ndim != 1 or values.ndim != 1 or steps.shape != values.shape:
            raise ValueError(f"a curve needs two 1-D arrays of one length, got {steps.shape} and {values.shape}")
        steps.flags.writeable = False
        values.flags.writeable = False
        object.__setattr__(self, "steps", steps)
        object.__setattr__(self, "values", values)

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Curve):
            return NotImplemented
        return np.array_equal(self.steps, other.steps) and np.array_equal(self.values, other.values, equal_nan=True)

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def of(cls, steps: np.ndarray, values: np.ndarray, max_points: int = CURVE_POINTS) -> Curve:
        """A curve of at most ``max_points`` points of a series (``steps``, ``values``:
        equal-length arrays): each bucket's lowest and highest finite point, every
        non-finite point, the first and the last (:func:`trainproof.runlog.downsample`).
        Where the non-finite points alone are more than ``max_points``, the kept points are
        thinned evenly, first and last kept, so the bound always holds."""
        steps, values = np.asarray(steps, np.float64), np.asarray(values, np.float64)
        # room for the non-finite points and the two ends beside the buckets' extremes
        reserve = min(int(np.count_nonzero(~np.isfinite(values))), max_points // 2) + 2
        s, v = downsample(steps, values, max(2, max_points - reserve))
        if v.size > max_points:
            idx = unique(np.linspace(0, v.size - 1, max_points).round().astype(np.int64))
            s, v = s[idx], v[idx]
        return cls(s, v)

    def to_dict(self) -> dict:
        """``{"steps": [...], "values": [...]}``, non-finite values as the strings
        ``"nan"``, ``"inf"``, ``"-inf"`` (JSON has no such numbers)."""
        return {"steps": [_num(x) for x in self.steps], "values": [_num(x) for x in self.values]}

    @classmethod
    def from_dict(cls, d: Mapping) -> Curve:
        """The curve :meth:`to_dict` wrote."""
        return cls(np.array([float(x) for x in d["steps"]]), np.array([float(x) for x in d["values"]]))


def _num(x: float) -> float | str:
    x = float(x)
    if math.isfinite(x):
        return int(x) if x.is_integer() and abs(x) < 2**53 else x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


@dataclass(frozen=True)
class RunRecord:
    """One judged run as the history keeps it.

    Attributes:
        experiment: the group the run is compared within (:func:`experiment_of`).
        run: the run's name (the tracker's run name, else its path below the experiment's
            folder, else its file name).
        source: where the run was read from: an absolute path or a URL.
        verdict: ``PASS``, ``WARN``, ``FAIL`` or ``NOT-CHECKED``.
        findings: the ids of the report's findings, in report order, each once.
        summary: :data:`SUMMARY_KEYS` -> a float, a string (``lr_shape``) or ``None``.
        curves: metric name -> :class:`Curve`.
        commit: the git commit of the repository holding the run's folder, if any.
        recorded_at: seconds since the epoch (UTC) when the run was recorded.
        id: the store's id of the record, ``None`` before it is stored.
    """

    experiment: str
    run: str
    source: str
    verdict: str
    findings: tuple[str, ...]
    summary: Mapping[str, float | str | None]
    curves: Mapping[str, Curve]
    commit: str | None = None
    recorded_at: float = 0.0
    id: int | None = None

    def __post_init__(self) -> None:
        # Copies, so that the caller's mappings changing later does not change the record;
        # plain dicts, so that a record pickles (it may travel to a worker process).
        object.__setattr__(self, "findings", tuple(self.findings))
        object.__setattr__(self, "summary", dict(self.summary))
        object.__setattr__(self, "curves", dict(self.curves))

    @property
    def healthy(self) -> bool:
        """A run the history may take as a reference: judged, without a FAIL."""
        return self.verdict in ("PASS", "WARN")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunRecord):
            return NotImplemented
        return (
            self.experiment,
            self.run,
            self.source,
            self.verdict,
            self.findings,
            dict(self.summary),
            dict(self.curves),
            self.commit,
            self.recorded_at,
            self.id,
        ) == (
            other.experiment,
            other.run,
            other.source,
            other.verdict,
            other.findings,
            dict(other.summary),
            dict(other.curves),
            other.commit,
            other.recorded_at,
            other.id,
        )

    __hash__ = None  # type: ignore[assignment]


def summarize(
    runlog: RunLog,
    report: Report,
    *,
    experiment: str,
    run: str | None = None,
    source: str | None = None,
    commit: str | None = None,
    now: float | None = None,
) -> RunRecord:
    """The record of ``runlog`` judged as ``report``.

    ``run`` defaults to :func:`run_name_of`, ``source`` to the log's absolute path (a URL
    as given), ``commit`` to the git commit of the repository holding the log's folder
    (:func:`commit_of`; ``None`` outside one), ``now`` to the current time. The summary's
    levels are robust: the first and last loss are medians of the run's first and last 10%
    (at least 3 points), the best loss the lowest median of blocks of 5% of the run (a
    one-point dip is not a floor); a series of under 30 points (an eval loss) gives its
    first, lowest and last point; the noise the point-to-point noise of the loss
    (:func:`trainproof.rules._stats.noise_sigma`).
    """
    src = source if source is not None else source_of(runlog.path)
    return RunRecord(
        experiment=experiment,
        run=run if run is not None else run_name_of(runlog, experiment),
        source=src,
        verdict=report.verdict.value,
        findings=tuple(dict.fromkeys(report.ids())),
        summary=summary_of(runlog),
        curves=curves_of(runlog),
        commit=commit if commit is not None else commit_of(src),
        recorded_at=float(now if now is not None else time.time()),
    )


def summary_of(runlog: RunLog) -> dict[str, float | str | None]:
    """The summary figures of :data:`SUMMARY_KEYS` (see :func:`summarize`)."""
    from ..rules._schedule import scheduled_end

    out: dict[str, float | str | None] = dict.fromkeys(SUMMARY_KEYS)
    if runlog.step_range is not None:
        out["steps"] = float(runlog.step_range[1])
    loss = runlog.get("loss")
    out["points"] = float(len(loss)) if loss is not None else 0.0
    end, _ = scheduled_end(runlog)
    out["max_steps"] = end
    out["duration_s"] = _duration(runlog)
    for name in ("loss", "eval_loss"):
        first, best, last = _levels(runlog.get(name))
        out[f"{name}_first"], out[f"{name}_best"], out[f"{name}_last"] = first, best, last
    first, last = out["loss_first"], out["loss_last"]
    if isinstance(first, float) and isinstance(last, float) and first != 0:
        out["improvement"] = (first - last) / abs(first)
    if loss is not None:
        from ..rules._stats import noise_sigma

        fin = loss.values[np.isfinite(loss.values)]
        out["noise"] = float(noise_sigma(fin)) if fin.size >= 3 else None
    out["lr_shape"] = lr_shape(runlog.get("lr"))
    return out


#: Below this many points (an eval loss logged a few times) a level is the point itself: a
#: median of the first three of five evaluations is not the first evaluation.
_FEW = 30


def _levels(s: Series | None) -> tuple[float | None, float | None, float | None]:
    """``(first, best, last)`` robust levels of a series' finite values (see :func:`summarize`)."""
    from ..rules._stats import block_medians, end_window, median, smoothing_block

    if s is None:
        return None, None, None
    v = s.values[np.isfinite(s.values)]
    if v.size == 0:
        return None, None, None
    if v.size < _FEW:
        return float(v[0]), float(np.min(v)), float(v[-1])
    w = end_window(v.size)
    meds, _ = block_medians(v, smoothing_block(v.size))
    return float(median(v[:w])), float(np.min(meds)), float(median(v[-w:]))


def _duration(runlog: RunLog) -> float | None:
    """Seconds the log spans: its ``time`` series' range where it logs one (a wall clock
    or elapsed seconds), else the sum of its ``step_time`` series, else ``None``."""
    t = runlog.get("time")
    if t is not None:
        v = t.values[np.isfinite(t.values)]
        if v.size >= 2:
            return float(v.max() - v.min())
    st = runlog.get("step_time")
    if st is not None:
        v = st.values[np.isfinite(st.values) & (st.values >= 0)]
        if v.size:
            return float(v.sum())
    return None


def lr_shape(s: Series | None) -> str | None:
    """The learning-rate schedule's shape, one word: ``constant``, ``warmup`` (rises
    only), ``decay`` (falls only), ``warmup-decay``, ``cyclic`` (falls and rises again more
    than once) or ``None`` without a learning rate. Changes under 1% of the peak are flat
    (float rounding of a logged rate)."""
    if s is None:
        return None
    v = s.values[np.isfinite(s.values)]
    if v.size == 0:
        return None
    peak = float(np.max(np.abs(v)))
    if peak == 0 or float(v.max() - v.min()) <= 0.01 * peak:
        return "constant"
    d = np.diff(v)
    tol = 0.01 * peak
    signs = np.sign(np.where(np.abs(d) <= tol * 1e-3, 0.0, d))
    signs = signs[signs != 0]
    # direction changes between falling and rising stretches
    turns = int(np.count_nonzero(signs[1:] != signs[:-1])) if signs.size else 0
    rises, falls = bool((signs > 0).any()), bool((signs < 0).any())
    if turns >= 2:
        return "cyclic"
    if rises and falls:
        return "warmup-decay" if signs[0] > 0 else "cyclic"
    return "warmup" if rises else "decay"


def curves_of(runlog: RunLog, max_points: int = CURVE_POINTS, max_curves: int = MAX_CURVES) -> dict[str, Curve]:
    """A :class:`Curve` per metric of the log (at most ``max_curves``: the canonical ones
    first, then the others by name), each of at most ``max_points`` points."""
    names = [n for n in _FIRST if n in runlog.series]
    names += sorted(n for n in runlog.series if n not in _FIRST)
    out = {}
    for name in names[:max_curves]:
        s = runlog.series[name]
        if len(s):
            out[name] = Curve.of(s.steps, s.values, max_points)
    return out


def runlog_of(record: RunRecord) -> RunLog:
    """A :class:`~trainproof.runlog.RunLog` of a record's curves, for the rules that read a
    baseline (``compare --against``): each curve a series, its lines the points' indices
    (a stored curve has no source lines), ``meta`` its ``max_steps`` and run name."""
    series = {}
    lo, hi = math.inf, -math.inf
    for name, c in record.curves.items():
        series[name] = Series(name, name, c.steps.copy(), c.values.copy(), np.arange(1, len(c) + 1, dtype=np.int64))
        if len(c):
            lo, hi = min(lo, float(c.steps[0])), max(hi, float(c.steps[-1]))
    meta: dict = {"run": record.run}
    ms = record.summary.get("max_steps")
    if isinstance(ms, (int, float)) and ms:
        meta["max_steps"] = int(ms) if float(ms).is_integer() else float(ms)
    return RunLog(
        path=f"{record.run} (history #{record.id})" if record.id is not None else record.run,
        format="history",
        series=series,
        meta=meta,
        records=max((len(c) for c in record.curves.values()), default=0),
        step_range=(lo, hi) if lo <= hi else None,
        explicit_steps=True,
    )


def experiment_of(
    runlog: RunLog | None = None,
    report: Report | None = None,
    *,
    explicit: str | None = None,
    path: str | None = None,
) -> str:
    """The experiment a run is recorded under, the first that applies:

    1. ``explicit`` (``--experiment``, ``experiment=``);
    2. the tracker's project or experiment the reader found (``meta["experiment"]``: a W&B
       project, an MLflow experiment, a trackio project), by its name alone, so runs of
       one project read from two copies of a store are one experiment;
    3. the folder of a run family (:func:`trainproof.discover.experiment_of`: the folder
       above ``seed_1/``, ``version_3/``, ``run-<id>/``), as an absolute path;
    4. the folder holding the log, as an absolute path (for a live run without a log,
       the current folder).

    The path is ``path``, else the run log's or the report's. A URL without a tracker's
    experiment is its own experiment.
    """
    if explicit:
        return explicit
    meta = (runlog.meta if runlog is not None else None) or (report.meta if report is not None else {}) or {}
    exp = meta.get("experiment")
    if isinstance(exp, str) and exp:
        return exp
    where = path or (runlog.path if runlog is not None else None) or (report.file if report is not None else None)
    if where is None:
        raise ValueError("experiment_of needs a run log, a report, a path or an explicit experiment")
    if _is_url(where):
        return where.split("#", 1)[0].rstrip("/")
    if where.startswith(LIVE) or where == "<live>":
        return _absolute(".")
    fam = _family(_absolute(str(where)))
    if fam is not None:
        return fam
    p = Path(where)
    return _absolute(str(p if p.is_dir() else p.parent))


def run_name_of(runlog: RunLog, experiment: str, path: str | None = None) -> str:
    """A run's name in its experiment: the tracker's run name, else its path (``path``,
    default the run log's) below the experiment's folder, else below its run family's
    folder (``seed0/train.jsonl``), else its file name; a live run without a log is its
    :data:`LIVE` source."""
    name = runlog.meta.get("run")
    if isinstance(name, str) and name:
        return name
    where = path if path is not None else runlog.path
    if _is_url(where) or where.startswith(LIVE):
        return where
    p = Path(_absolute(where))
    from ..discover import experiment_of as family_of

    family = family_of(p.as_posix())
    for folder in (experiment, family):
        if folder is None:
            continue
        try:
            rel = p.relative_to(folder)
        except ValueError:
            continue
        if rel.parts:
            return rel.as_posix()
    return p.name


#: The start of the source of a live run that writes no log (the in-loop monitor, a
#: framework callback): ``live:<host>:<process id>:<UTC start time>``.
LIVE = "live:"


_LIVE_RUNS = itertools.count(1)


def live_source() -> str:
    """A source for a live run that writes no log, unique to this process and moment."""
    import socket
    from datetime import datetime, timezone

    # Microseconds and a count: runs trained one after another in one process (a sweep in
    # a notebook) within one second are still distinct runs of the history.
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"{LIVE}{socket.gethostname()}:{os.getpid()}:{now}:{next(_LIVE_RUNS)}"


def source_of(path: str) -> str:
    """Where a run was read from, as the history keeps it: a URL or a :data:`LIVE` source
    as given, a path made absolute (so runs recorded from two working folders agree)."""
    return path if _is_url(path) or str(path).startswith(LIVE) else _absolute(path)


def commit_of(source: str) -> str | None:
    """The commit checked out in the git repository that holds ``source``'s folder, read
    from the repository's files (``HEAD``, the ref it names, ``packed-refs``; a worktree's
    ``.git`` file followed), or ``None`` outside a repository or for a URL. Reads no
    object and runs no ``git`` process."""
    if _is_url(source):
        return None
    p = Path(source)
    here = p if p.is_dir() else p.parent
    try:
        here = here.resolve()
    except OSError:
        return None
    for d in (here, *here.parents):
        dot = d / ".git"
        try:
            if dot.is_file():
                text = dot.read_text(encoding="utf-8", errors="replace").strip()
                if not text.startswith("gitdir:"):
                    return None
                gitdir = (d / text[len("gitdir:") :].strip()).resolve()
            elif dot.is_dir():
                gitdir = dot
            else:
                continue
            return _head_commit(gitdir)
        except OSError:
            return None
    return None


def _head_commit(gitdir: Path) -> str | None:
    head = (gitdir / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
    if not head.startswith("ref:"):
        return head if _is_sha(head) else None
    ref = head[4:].strip()
    # a linked worktree keeps its HEAD but shares refs with the main repository
    common = gitdir
    cfile = gitdir / "commondir"
    if cfile.is_file():
        common = (gitdir / cfile.read_text(encoding="utf-8").strip()).resolve()
    for base in (gitdir, common):
        f = base / ref
        if f.is_file():
            sha = f.read_text(encoding="utf-8", errors="replace").strip()
            return sha if _is_sha(sha) else None
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text(encoding="utf-8", errors="replace").splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1] == ref and _is_sha(parts[0]):
                return parts[0]
    return None


def _is_sha(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


def _is_url(text: str) -> bool:
    return "://" in str(text)


#: Path parts, counted back from the log, in which a run family's run folder is looked
#: for: the log, the writer's own nesting of up to two folders (``csv/version_0/``) and the
#: run folder (``seed_1/``), so that a folder far above the project whose name looks like a run's
#: (``/data/run1/project/...``) never names the experiment.
FAMILY_DEPTH = 4


def _family(absolute: str) -> str | None:
    """The run family's folder of the log at ``absolute`` (an absolute POSIX path), or
    ``None``: :func:`trainproof.discover.experiment_of` on the last :data:`FAMILY_DEPTH`
    parts, the same whatever the current folder is."""
    from ..discover import experiment_of as family_of

    parts = absolute.split("/")
    head, tail = parts[:-FAMILY_DEPTH], parts[-FAMILY_DEPTH:]
    fam = family_of("/".join(tail))
    if fam is None:
        return None
    return "/".join([*head, *([] if fam == "." else [fam])]) or "/"


def _absolute(path: str) -> str:
    return Path(os.path.abspath(path or ".")).as_posix()


__all__ = [
    "CURVE_POINTS",
    "MAX_CURVES",
    "SUMMARY_KEYS",
    "Curve",
    "RunRecord",
    "commit_of",
    "curves_of",
    "experiment_of",
    "LIVE",
    "live_source",
    "lr_shape",
    "run_name_of",
    "runlog_of",
    "source_of",
    "summarize",
    "summary_of",
]
