"""``doctor``'s walk: find every training log under a folder and group it into runs.

The walk prunes version-control folders, virtual environments, package caches and
``node_modules``; follows symlinked folders but never the same folder twice (no loops)
and never out of the folder it was given (a pull request can add a link to a secret);
and looks only at regular files whose name or extension a training log can have (plus
TensorBoard event files, MLflow and W&B run folders). What a run folder of a format is
(which folders are runs, what of them is read, a resumed run's folders, snapshots and
siblings) its reader says, through the registry's run-folder hooks
(:data:`trainproof.formats.base.OPTIONAL`): this module imports no reader. Hugging Face
output folders hold ``checkpoint-N/trainer_state.json`` snapshots that are prefixes of
the same run: only the most complete one (the top-level ``trainer_state.json`` if there
is one, else the highest ``N``) is judged, and the others are listed as folded in. Logs
whose places say they may be one run written twice (an HF output folder's event file, a
Lightning ``metrics.csv`` and its event file) become one candidate's ``siblings``, which
the worker folds when their values agree; byte-identical copies fold here.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

# The registry only: what a run folder of a format is, the readers say (their run-folder
# hooks, trainproof.formats.base.OPTIONAL); this module holds no format's knowledge.
from .formats import (
    client_entries,
    log_name_test,
    resumed_run,
    run_dir,
    run_part_test,
    shard_name_test,
    sibling_dirs,
    snapshot,
    split_dirs,
    writer_dirs,
)

#: Folder names never descended into.
PRUNE_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "node_modules",
        "__pycache__",
        ".cache",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
        ".ipynb_checkpoints",
        "site-packages",
        ".eggs",
        ".idea",
        ".vscode",
    }
)

#: Why a run folder is left out: its reader would list the folder and follow the link.
_TAINTED = "a run folder that holds a symlink that leaves the searched tree: not read"


@dataclass
class Candidate:
    """A file to judge, the checkpoint snapshots folded into it, and the other logs that
    may hold the same run.

    Attributes:
        path: the log (or run folder) to judge.
        snapshots: HF ``checkpoint-N/trainer_state.json`` prefixes of the same run.
        siblings: logs whose place says they may be this run written again in another
            form (the event file under an HF output folder's ``runs/``, the event file
            beside a Lightning ``metrics.csv``); their content decides (``api.same_run``).
        copies: byte-identical copies of ``path`` elsewhere in the tree.
    """

    path: Path
    snapshots: list[Path] = field(default_factory=list)
    siblings: list[Path] = field(default_factory=list)
    copies: list[Path] = field(default_factory=list)

    @property
    def location(self) -> Path | tuple[Path, ...]:
        """What a worker judges: the path, or the path and its siblings together."""
        return (self.path, *self.siblings) if self.siblings else self.path


def _is_venv(dirpath: str, filenames: Collection[str]) -> bool:
    return "pyvenv.cfg" in filenames


def _inside(real: str, real_root: str) -> bool:
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


#: How the walk's reasons for a folder it could not search begin (:func:`is_unsearched`).
_UNSEARCHED = (
    "a folder that cannot be listed",
    "a folder that can be listed but not entered",
    "a folder that cannot be entered",
)


def is_unsearched(reason: str) -> bool:
    """Whether ``reason`` (of an entry :func:`walk` records in ``limits``) says a folder
    could not be searched (not listed, or not entered): runs in it were not judged."""
    return reason.startswith(_UNSEARCHED)


def _why(e: OSError) -> str:
    # The reason only: an OSError's str() names the path, and a path outside the tree is
    # what must not be shown.
    return (e.strerror or type(e).__name__).lower()


def _leaves_tree(path: str, real_root: str) -> bool:
    """Whether ``path`` (a symlink) resolves to a place outside ``real_root``."""
    return not _inside(os.path.realpath(path), real_root)


def _escapes_below(folder: str, real_root: str) -> bool:
    """Whether any symlink in the tree under ``folder`` leaves ``real_root`` (iterative)."""
    stack = [folder]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = list(it)
        except OSError:
            continue
        for e in entries:
            try:
                if e.is_symlink():
                    if _leaves_tree(e.path, real_root):
                        return True
                elif e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
            except OSError:
                continue
    return False


@dataclass
class _Listing:
    """One folder's entries, sorted by name, as the walk classifies them."""

    dirs: list[str] = field(default_factory=list)  # folders to descend into
    files: list[str] = field(default_factory=list)  # files that may be logs
    names: set[str] = field(default_factory=set)  # every entry's name
    dir_names: set[str] = field(default_factory=set)  # every folder's name, followed or not
    escaping: list[str] = field(default_factory=list)  # symlinks that leave the tree


def _list(dirpath: str, real_root: str, ignored: list[dict], is_log: Callable[[str], bool]) -> _Listing | None:
    """Classify the entries of ``dirpath``; ``None`` when it cannot be listed or entered
    (said in ``ignored``). Only the entries' types are read here, never their content;
    ``is_log`` says which names may be logs (:func:`trainproof.formats.log_name_test`)."""
    try:
        with os.scandir(dirpath) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as e:
        ignored.append({"file": dirpath, "reason": f"a folder that cannot be listed ({_why(e)}): not searched"})
        return None
    out = _Listing(names={e.name for e in entries})
    if _is_venv(dirpath, out.names):  # a virtual environment: nothing of a run's own lives there
        return out
    for e in entries:
        name, path = e.name, e.path
        wanted = is_log(name)
        try:
            lst = os.lstat(path)
        except FileNotFoundError:
            continue  # removed since the listing
        except OSError as err:
            # Listed but not entered (a folder without search permission): nothing in it
            # can be examined, so the folder is one ignored entry, not one per file.
            ignored.append(
                {"file": dirpath, "reason": f"a folder that can be listed but not entered ({_why(err)}): not searched"}
            )
            return None
        mode = lst.st_mode
        if stat.S_ISLNK(mode):
            if _leaves_tree(path, real_root):
                out.escaping.append(name)
                if wanted or os.path.isdir(path):
                    ignored.append({"file": path, "reason": "a symlink that leaves the searched tree: not followed"})
                continue
            try:
                mode = os.stat(path).st_mode
            except OSError:
                if wanted:  # a dangling or looping link inside the tree: judging names the cause
                    out.files.append(name)
                continue
        if stat.S_ISDIR(mode):
            out.dir_names.add(name)
            out.dirs.append(name)
        elif not wanted:
            continue
        elif stat.S_ISREG(mode):
            out.files.append(name)
        else:
            ignored.append(
                {"file": str(Path(path)), "reason": "not a regular file (a FIFO, socket or device): not opened"}
            )
    return out


def walk(
    root: Path, max_depth: int | None = None, max_files: int | None = None, limits: list[dict] | None = None
) -> list[Path]:
    """Every log-like path under ``root`` (sorted), pruning and avoiding symlink loops.

    Files are returned by name (:func:`trainproof.formats.is_log_name`: a reader's suffix
    or trainer file name, or ``tfevents`` in the name); an MLflow run folder
    (``metrics/`` beside ``meta.yaml``) and a W&B run folder (``wandb/run-…-<id>/``) are
    returned as the folder itself, and a W&B folder's ``latest-run`` link is not followed
    (it names a run folder beside it).

    The walk is iterative (a tree of any depth), opens no file, and stays inside
    ``root``: a symlink (to a file or a folder) whose resolved target lies outside
    ``root`` is not followed, and a run folder holding one is not returned, since the
    reader of a run folder lists the folder itself. FIFOs, sockets and devices are never
    returned. Each place left out for one of these reasons, or because it cannot be
    listed or entered, is recorded in ``limits`` by its own path and a reason; the rest of
    the tree is searched.

    Args:
        max_depth: search at most this many folder levels below ``root`` (0: ``root``'s
            own files only); ``None`` for no limit.
        max_files: stop after this many log-like paths; ``None`` for no limit.
        limits: where each place left out or limit that cut the search is recorded, as
            ``{"file", "reason"}`` (what ``doctor`` lists as ignored).
    """
    if os.path.isfile(root):
        return [Path(root)]
    ignored: list[dict] = limits if limits is not None else []
    real_root = os.path.realpath(root)
    # The readers' names and suffixes, read once for the whole tree.
    is_log = log_name_test()
    is_shard = shard_name_test()
    splits = split_dirs()
    out: list[Path] = []
    seen: set[tuple[int, int]] = set()
    tainted: set[str] = set()  # folders that directly hold a symlink leaving the tree
    # Depth-first, children pushed in reverse name order: the same pre-order as a
    # recursive walk, so a --max-files cut always keeps the same files.
    stack: list[tuple[str, int]] = [(str(root), 0)]
    while stack:
        dirpath, depth = stack.pop()
        try:
            st = os.stat(dirpath)
        except OSError as e:
            ignored.append({"file": dirpath, "reason": f"a folder that cannot be entered ({_why(e)}): not searched"})
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen:
            continue
        seen.add(key)
        listing = _list(dirpath, real_root, ignored, is_log)
        if listing is None or _is_venv(dirpath, listing.names):
            continue
        if listing.escaping:
            tainted.add(dirpath)
        skip = set(PRUNE_DIRS)
        # A run folder is read whole by its reader: the walk returns the folder and does not
        # descend into the run's own subfolders (what its reader says, base.RunDir).
        run = run_dir(dirpath, listing.dir_names, listing.names)
        if run is not None:
            skip |= listing.dir_names if run.parts is None else run.parts
            if run.skip is not None:
                ignored.append({"file": dirpath, "reason": run.skip})
            elif dirpath in tainted or any(
                _escapes_below(os.path.join(dirpath, d), real_root) for d in run.reads if d in listing.dir_names
            ):
                ignored.append({"file": dirpath, "reason": _TAINTED})
            else:
                out.append(Path(dirpath))
        # A tracker client's own entries (W&B's latest-run link and debug logs): no run.
        client_own = client_entries(dirpath, listing.names)
        skip |= client_own
        dirnames = [d for d in listing.dirs if d not in skip and not d.endswith(".egg-info")]
        if max_depth is not None and depth >= max_depth and dirnames:
            ignored.append(
                {
                    "file": dirpath,
                    "reason": f"{len(dirnames)} folder(s) below it not searched: deeper than --max-depth {max_depth}",
                }
            )
            dirnames = []
        # The reader of sharded logs (event files) lists a run folder (and a Keras log
        # folder's train/ and validation/) itself, so shards beside a symlink that leaves
        # the tree are not returned: the folder would be read through the link.
        parent = os.path.dirname(dirpath)
        shards_tainted = dirpath in tainted or (os.path.basename(dirpath) in splits and parent in tainted)
        withheld = False
        # A run folder's own files (a W&B run's .wandb log) are read through the folder.
        for f in [] if run is not None and run.owns_files else listing.files:
            if f in client_own:
                continue
            if is_shard(f) and shards_tainted:
                withheld = True
                continue
            if max_files is not None and len(out) >= max_files:
                ignored.append(
                    {
                        "file": str(root),
                        "reason": f"search stopped at --max-files {max_files}: later logs were not judged",
                    }
                )
                return _one_folder_per_resumed_run(out)
            out.append(Path(dirpath) / f)
        if withheld:
            ignored.append({"file": dirpath, "reason": _TAINTED})
        stack.extend((os.path.join(dirpath, d), depth + 1) for d in reversed(dirnames))
    return _one_folder_per_resumed_run(out)


def _one_folder_per_resumed_run(paths: list[Path]) -> list[Path]:
    """``paths`` sorted, with one folder per resumed run: a W&B run resumed with its id
    writes a folder each time, and the reader reads them all through the last one
    (:func:`trainproof.formats.resumed_run`)."""
    newest: dict[tuple[Path, str, str], Path] = {}
    keys: dict[Path, tuple[Path, str, str]] = {}
    places: dict[Path, tuple] = {}
    for p in paths:
        found = resumed_run(p)
        if found is None:
            continue
        fmt, rid, places[p] = found
        key = keys[p] = (p.parent, fmt, rid)
        if key not in newest or places[p] > places[newest[key]]:
            newest[key] = p
    return sorted(p for p in paths if p not in keys or newest[keys[p]] == p)


def group_runs(paths: list[Path]) -> list[Candidate]:
    """One candidate per run.

    * Snapshots of one run (HF's ``checkpoint-N/trainer_state.json``, as a reader's
      ``snapshot`` hook says) fold into the most complete one: the run's final state, else
      the last snapshot.
    * Shards in one folder (event files: a resumed run writes a new file) are one run: the
      folder is the candidate; a lone shard is its own candidate.
    """
    is_shard = shard_name_test()
    splits = split_dirs()
    groups: dict[Path, list[tuple[int, Path]]] = {}
    top: dict[Path, Path] = {}
    events: dict[Path, list[Path]] = {}
    rest: list[Candidate] = []
    for p in paths:
        snap = snapshot(p)
        if snap is not None:
            out_dir, place = snap
            if place is not None:
                groups.setdefault(out_dir, []).append((place, p))
                continue
            top[out_dir] = p
        elif is_shard(p.name) and p.is_file():
            events.setdefault(p.parent, []).append(p)
            continue
        rest.append(Candidate(p))
    keras: dict[Path, list[Path]] = {}
    event_runs: set[Path] = set()
    for folder in list(events):
        # Keras' TensorBoard callback: <log_dir>/train/ and <log_dir>/validation/ are one run.
        if folder.name in splits:
            keras.setdefault(folder.parent, []).append(folder)
    for log_dir, found in keras.items():
        if any(f.name == splits[0] for f in found) and log_dir not in events:
            for f in found:
                del events[f]
            rest.append(Candidate(log_dir))
            event_runs.add(log_dir)
    # A leaf folder of event files inside a folder of event files is a writer of the
    # parent's run (SummaryWriter.add_scalars' <log_dir>/<tag>_<key>/, an eval writer's
    # <log_dir>/eval/): the parent's reader reads it (its writer_dirs hook).
    parents = {f.parent for f in events if f.parent in events}
    owned = {d for p in parents for d in writer_dirs(p)}  # each parent listed once
    writers = [f for f in events if f in owned]
    for folder in writers:
        del events[folder]
    with_writers = {f.parent for f in writers}
    for folder, shards in events.items():
        rest.append(Candidate(shards[0] if len(shards) == 1 and folder not in with_writers else folder))
        event_runs.add(rest[-1].path)
    by_path = {c.path: c for c in rest}
    hf_runs: dict[Path, Candidate] = {}  # HF output folder -> its trainer_state candidate
    for out_dir, snaps in groups.items():
        snaps.sort()
        if out_dir in top:
            by_path[top[out_dir]].snapshots = [p for _, p in snaps]
        else:
            chosen = snaps[-1][1]
            c = Candidate(chosen, [p for _, p in snaps[:-1]])
            by_path[chosen] = c
    for out_dir, state in top.items():
        hf_runs[out_dir] = by_path[state]
    for out_dir, snaps in groups.items():
        if out_dir not in top:
            hf_runs[out_dir] = by_path[snaps[-1][1]]
    _attach_siblings(by_path, hf_runs, event_runs, is_shard)
    return sorted(by_path.values(), key=lambda c: str(c.path))


#: Most other logs in one folder an event file is checked against: a folder of many runs'
#: logs is many runs, not one run written many ways.
_MAX_SIBLINGS = 3


def _event_folder(p: Path, is_shard: Callable[[str], bool]) -> Path:
    """The folder of a sharded run's candidate (event files): the shard's, or the run
    folder itself."""
    return p.parent if is_shard(p.name) else p


def _owner_first(logs: list[Candidate]) -> list[Candidate]:
    """Logs of one place, the one that leads a group first (``metrics.csv``, then by path)."""
    return sorted(logs, key=lambda c: (c.path.name != "metrics.csv", str(c.path)))


def _attach_siblings(
    by_path: dict[Path, Candidate],
    hf_runs: dict[Path, Candidate],
    event_runs: set[Path],
    is_shard: Callable[[str], bool],
) -> None:
    """Give each log the other logs that may hold the same run, by the places the writers
    put them: an HF output folder's ``runs/<date>_<host>/`` (the Trainer's default logging
    folder), the folder of a Lightning ``version_N/`` (CSVLogger's ``metrics.csv`` beside
    TensorBoardLogger's event file, or ``csv/version_N`` and ``tb/version_N`` side by
    side), and a few logs in one folder. Each log goes to one group at most; a folder of
    more than ``_MAX_SIBLINGS`` logs is many runs and is not grouped. The worker compares
    their values before folding anything. ``hf_runs``: the output folder of each run of
    snapshots, and its candidate; the places beside it are its reader's
    (:func:`trainproof.formats.sibling_dirs`)."""
    events = {p: by_path[p] for p in event_runs}
    names_a_run = run_part_test()
    taken: set[Path] = set()
    for out_dir, run in sorted(hf_runs.items()):
        places = sibling_dirs(out_dir)
        for p in sorted(events):
            folder = _event_folder(p, is_shard)
            if p not in taken and (folder == out_dir or any(d == folder or d in folder.parents for d in places)):
                run.siblings.append(p)
                taken.add(p)
    states = {c.path for c in hf_runs.values()}
    by_folder: dict[Path, list[Candidate]] = {}
    for c in by_path.values():
        if c.path not in event_runs and c.path not in states and c.path not in taken:
            by_folder.setdefault(c.path.parent, []).append(c)
    for p in sorted(events):
        if p in taken:
            continue
        folder = _event_folder(p, is_shard)
        logs = by_folder.get(folder, [])
        if not logs and names_a_run(folder.name, ()):
            # Two loggers of one run, each in its own folder under one save folder, each
            # naming the run alike (Lightning's <save_dir>/csv/version_N and
            # <save_dir>/tb/version_N): their values decide, as for logs side by side.
            logs = [
                c
                for f, cs in by_folder.items()
                if f.name == folder.name and f.parent != folder.parent and f.parent.parent == folder.parent.parent
                for c in cs
            ]
        logs = [c for c in logs if c.path not in taken]
        if 0 < len(logs) <= _MAX_SIBLINGS:
            logs = _owner_first(logs)
            owner = logs[0]
            for c in logs[1:]:
                owner.siblings.append(c.path)
                taken.add(c.path)
            owner.siblings.append(p)
            taken.add(p)
    # A few logs side by side without an event file (metrics.csv beside metrics.jsonl,
    # written by two loggers of one run): their values decide too.
    for folder, logs in sorted(by_folder.items()):
        logs = [c for c in logs if c.path not in taken and not c.siblings]
        if 2 <= len(logs) <= _MAX_SIBLINGS + 1:
            logs = _owner_first(logs)
            for c in logs[1:]:
                logs[0].siblings.append(c.path)
                taken.add(c.path)
    for p in taken:
        by_path.pop(p, None)


def fold_copies(candidates: list[Candidate]) -> list[Candidate]:
    """Fold byte-identical log files into one candidate (a file before a symlink to it,
    then the shallowest path, then the first by name); the others become its ``copies``.
    Links to one file (hard or symbolic) are found by inode; only files of equal size are
    hashed, so a tree of distinct logs costs one ``stat`` each. A log that carries
    siblings or snapshots is never folded into another (they are its to judge), so it is
    the one kept where it has a copy. The candidates keep their order."""
    import hashlib

    def carries(c: Candidate) -> bool:
        return bool(c.siblings or c.snapshots)

    # In the order of preference, so the first of each inode or content is the one kept.
    order = sorted(candidates, key=lambda c: (not carries(c), os.path.islink(c.path), len(c.path.parts), str(c.path)))
    keeper: dict[tuple, Candidate] = {}
    by_size: dict[int, list[Candidate]] = {}
    dropped: set[int] = set()

    def fold(key: tuple, c: Candidate) -> None:
        kept = keeper.setdefault(key, c)
        if kept is not c and not carries(c):
            kept.copies.extend([c.path, *c.copies])
            dropped.add(id(c))

    for c in order:
        try:
            st = os.stat(c.path)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_size > 0:
            fold(("inode", st.st_dev, st.st_ino), c)
            if id(c) not in dropped:
                by_size.setdefault(st.st_size, []).append(c)
    for same_size in by_size.values():
        for c in same_size if len(same_size) > 1 else ():
            h = hashlib.sha256()
            try:
                with open(c.path, "rb") as f:
                    for block in iter(lambda: f.read(1 << 20), b""):
                        h.update(block)
            except OSError:
                continue
            fold(("sha256", h.digest()), c)
    for c in candidates:
        c.copies.sort()
    return [c for c in candidates if id(c) not in dropped]


#: Path parts that name one run of an experiment whatever wrote it: a seed, a trial, a
#: repeat or a fold; the part before them names the experiment. A writer's own run folders
#: (Lightning's ``version_N``, W&B's ``run-<time>-<id>``, an MLflow run under ``mlruns/``)
#: are named by their readers' ``run_part`` hooks.
_RUN_PART = re.compile(r"(?i)^(?:(?:seed|run|trial|rep|fold)[-_]?\d+)$")
_RUN_SUFFIX = re.compile(r"(?i)^(.+?)[-_.](?:seed|trial|rep)[-_]?\d+$")


def experiment_of(path: str) -> str | None:
    """The experiment a run's path belongs to, or ``None``: the folder above the part that
    names one run of it (``lightning_logs`` for ``lightning_logs/version_3/metrics.csv``,
    ``sweep`` for ``sweep/seed_1/train.jsonl``, ``sweep/bert`` for
    ``sweep/bert-seed42/train.jsonl``, ``wandb`` for ``wandb/run-20240101_000000-ab12/``,
    ``mlruns/0`` for an MLflow run folder ``mlruns/0/<run id>``); the outermost such part
    counts (``sweep/seed_1/csv/version_0/`` is a seed of ``sweep``)."""
    raw = re.split(r"[/\\]", path)
    # a leading empty part keeps an absolute path absolute when the parts are joined again
    parts = raw[:1] if raw[:1] == [""] else []
    parts += [p for p in raw if p not in ("", ".")]
    names_a_run = run_part_test()
    # The outermost part that names a run: sweep/seed_1/csv/version_0/ is a seed of sweep.
    for i in range(len(parts)):
        if _RUN_PART.match(parts[i]) or names_a_run(parts[i], tuple(parts[:i])):
            return "/".join(parts[:i]) or ("/" if parts[:1] == [""] else ".")
        m = _RUN_SUFFIX.match(parts[i])
        if m and i < len(parts) - 1:
            return "/".join([*parts[:i], m.group(1)])
    return None
