"""``doctor``'s walk: find every training log under a folder and group it into runs.

The walk prunes version-control folders, virtual environments, package caches and
``node_modules``; follows symlinked folders but never the same folder twice (no loops);
and looks only at files whose name or extension a training log can have (plus
TensorBoard event files and MLflow run folders). Hugging Face
output folders hold ``checkpoint-N/trainer_state.json`` snapshots that are prefixes of
the same run: only the most complete one (the top-level ``trainer_state.json`` if there
is one, else the highest ``N``) is judged, and the others are listed as folded in.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

#: Folder names never descended into.
PRUNE_DIRS = frozenset({
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "node_modules", "__pycache__",
    ".cache", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis", ".ipynb_checkpoints",
    "site-packages", ".eggs", ".idea", ".vscode",
})
#: File suffixes that can hold a training log (also with a trailing ``.gz``).
LOG_SUFFIXES = frozenset({".json", ".jsonl", ".ndjson", ".csv", ".tsv", ".log", ".txt", ".out"})

_CKPT = re.compile(r"checkpoint-(\d+)$")


@dataclass
class Candidate:
    """A file to judge, and the checkpoint snapshots folded into it."""

    path: Path
    snapshots: list[Path] = field(default_factory=list)


def _is_venv(dirpath: str, filenames: list[str]) -> bool:
    return "pyvenv.cfg" in filenames


def _log_like(name: str) -> bool:
    low = name.lower()
    if low.endswith(".gz"):
        low = low[:-3]
    return os.path.splitext(low)[1] in LOG_SUFFIXES


def _is_mlflow_run(dirpath: str, dirnames: list[str], filenames: list[str]) -> bool:
    return "metrics" in dirnames and ("meta.yaml" in filenames or "params" in dirnames or "tags" in dirnames)


def walk(root: Path, max_depth: int | None = None, max_files: int | None = None,
         limits: list[dict] | None = None) -> list[Path]:
    """Every log-like path under ``root`` (sorted), pruning and avoiding symlink loops.

    Files are returned by name (a log suffix, or ``tfevents`` in the name); an MLflow run
    folder (``metrics/`` beside ``meta.yaml``) is returned as the folder itself.

    Args:
        max_depth: search at most this many folder levels below ``root`` (0: ``root``'s
            own files only); ``None`` for no limit.
        max_files: stop after this many log-like paths; ``None`` for no limit.
        limits: where each limit that cut the search is recorded, as
            ``{"file", "reason"}`` (what ``doctor`` lists as ignored).
    """
    if root.is_file():
        return [root]
    out: list[Path] = []
    seen: set[tuple[int, int]] = set()
    base = len(Path(root).parts)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        try:
            st = os.stat(dirpath)
        except OSError:
            dirnames[:] = []
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen or _is_venv(dirpath, filenames):
            dirnames[:] = []
            continue
        seen.add(key)
        skip = set(PRUNE_DIRS)
        if _is_mlflow_run(dirpath, dirnames, filenames):
            out.append(Path(dirpath))
            skip |= {"metrics", "params", "tags"}  # read as the run; artifacts/ may hold more logs
        dirnames[:] = sorted(d for d in dirnames if d not in skip and not d.endswith(".egg-info"))
        if max_depth is not None and len(Path(dirpath).parts) - base >= max_depth and dirnames:
            if limits is not None:
                limits.append({"file": dirpath, "reason": f"{len(dirnames)} folder(s) below it not searched: "
                                                          f"deeper than --max-depth {max_depth}"})
            dirnames[:] = []
        for f in sorted(filenames):
            if _log_like(f) or "tfevents" in f:
                if max_files is not None and len(out) >= max_files:
                    if limits is not None:
                        limits.append({"file": str(root), "reason": f"search stopped at --max-files {max_files}: "
                                                                    "later logs were not judged"})
                    return sorted(out)
                out.append(Path(dirpath) / f)
    return sorted(out)


def group_runs(paths: list[Path]) -> list[Candidate]:
    """One candidate per run.

    * ``checkpoint-N/trainer_state.json`` snapshots fold into the most complete one.
    * Event files in one folder are the shards of one run (a resumed run writes a new
      file): the folder is the candidate; a lone event file is its own candidate.
    """
    groups: dict[Path, list[tuple[int, Path]]] = {}
    top: dict[Path, Path] = {}
    events: dict[Path, list[Path]] = {}
    rest: list[Candidate] = []
    for p in paths:
        if p.name == "trainer_state.json":
            m = _CKPT.match(p.parent.name)
            if m:
                groups.setdefault(p.parent.parent, []).append((int(m.group(1)), p))
                continue
            top[p.parent] = p
        elif "tfevents" in p.name and p.is_file():
            events.setdefault(p.parent, []).append(p)
            continue
        rest.append(Candidate(p))
    keras: dict[Path, list[Path]] = {}
    for folder in list(events):
        # Keras' TensorBoard callback: <log_dir>/train/ and <log_dir>/validation/ are one run.
        if folder.name in ("train", "validation"):
            keras.setdefault(folder.parent, []).append(folder)
    for log_dir, splits in keras.items():
        if any(f.name == "train" for f in splits) and log_dir not in events:
            for f in splits:
                del events[f]
            rest.append(Candidate(log_dir))
    for folder, shards in events.items():
        rest.append(Candidate(shards[0] if len(shards) == 1 else folder))
    by_path = {c.path: c for c in rest}
    for out_dir, snaps in groups.items():
        snaps.sort()
        if out_dir in top:
            by_path[top[out_dir]].snapshots = [p for _, p in snaps]
        else:
            chosen = snaps[-1][1]
            c = Candidate(chosen, [p for _, p in snaps[:-1]])
            by_path[chosen] = c
    return sorted(by_path.values(), key=lambda c: str(c.path))
