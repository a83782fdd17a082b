"""Configuration: ``[tool.trainproof]`` in the nearest pyproject.toml, or ``--config PATH``.

The search for a pyproject.toml starts at the current directory and climbs no higher than
the repository root (the nearest folder holding ``.git``, a folder or a file as in a
worktree); outside a repository only the current directory is searched. A folder above the
repository (a shared ``/tmp``, a home directory) belongs to someone else, and its settings
must not mute rules on the run being judged. A pyproject.toml on the way that cannot be
read or parsed is an error naming it, never skipped: it may be the one that holds the
settings.

Accepted keys::

    [tool.trainproof]
    mute = ["TP-GRAD-SPIKE"]          # rule ids never run
    history = "runs/history.db"       # record every judged run (a path or a postgresql:// URL)
    diverge_ratio = 2.0               # any threshold, by name ...
    [tool.trainproof.thresholds]      # ... or grouped under a table
    grad_spike_factor = 20

An unknown key, threshold name or rule id is an error naming it (exit 2), never ignored.
A ``--config`` file may be a pyproject.toml (its ``[tool.trainproof]`` table is used) or
a plain TOML file whose top level holds the same keys.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .rules import thresholds as _th
from .rules.registry import all_rules, canonical_id


class ConfigError(ValueError):
    """The configuration cannot be used; the message names the offending key or file."""


@dataclass
class Config:
    """Resolved configuration: muted rule ids, thresholds, and where they came from."""

    mute: set[str] = field(default_factory=set)
    thresholds: _th.Thresholds = _th.DEFAULT
    source: str | None = None
    #: The run history every judged run is recorded into (``history = ...``): a
    #: ``postgresql://`` URL, or an SQLite file's path made absolute from the folder of the
    #: file that names it; ``None``: none.
    history: str | None = None


#: The largest configuration file read, in bytes. Real pyproject.toml files are a few
#: kilobytes; 1 MiB leaves room for long comment blocks while a file planted to exhaust
#: memory (a pull request can add any file) is refused before it is read.
MAX_CONFIG_BYTES = 1 << 20


def search_dirs(start: Path) -> list[Path]:
    """The folders searched for a pyproject.toml, nearest first: ``start`` and its parents
    up to and including the repository root (the nearest one holding ``.git``), or only
    ``start`` when no parent holds ``.git``."""
    start = start.resolve()
    chain = [start, *start.parents]
    for i, d in enumerate(chain):
        if os.path.lexists(d / ".git"):
            return chain[: i + 1]
    return [start]


def _read_toml(p: Path, what: str) -> dict:
    """Parse one TOML file of at most :data:`MAX_CONFIG_BYTES`.

    Raises:
        ConfigError: the file cannot be read, is too large, or is not valid UTF-8 TOML;
            the message names the file.
    """
    try:
        # O_NONBLOCK: a FIFO planted under the config's name must not block the open.
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise ConfigError(f"{what} {p} is not a regular file")
            raw = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"cannot read {what} {p}: {e.strerror or e}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{what} {p} is larger than {MAX_CONFIG_BYTES} bytes: not read")
    # Imported here: a run judged where no configuration file is found never parses TOML.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise ConfigError(f"{what} {p} is not valid TOML: {e}") from None


def _trainproof_table(data: dict, p: Path) -> dict | None:
    tool = data.get("tool")
    if tool is None:
        return None
    if not isinstance(tool, dict):
        raise ConfigError(f"{p}: 'tool' must be a table")
    if "trainproof" not in tool:
        return None
    if not isinstance(tool["trainproof"], dict):
        raise ConfigError(f"{p}: [tool.trainproof] must be a table")
    return tool["trainproof"]


def find_pyproject(start: Path) -> tuple[Path, dict] | None:
    """The nearest pyproject.toml in :func:`search_dirs` that has a [tool.trainproof]
    table, with that table; ``None`` when there is none.

    Raises:
        ConfigError: a pyproject.toml on the way is unreadable, too large, not valid TOML,
            or has a ``tool`` or ``tool.trainproof`` that is not a table.
    """
    for d in search_dirs(start):
        p = d / "pyproject.toml"
        if p.is_file():
            table = _trainproof_table(_read_toml(p, "pyproject.toml"), p)
            if table is not None:
                return p, table
    return None


def _check_ids(ids: Iterable[str], where: str) -> set[str]:
    """The rule ids ``ids`` in the registry's spelling (``tp-nan`` is ``TP-NAN``: the case
    a user types never matters).

    Raises:
        ConfigError: an id no rule has, or one that is not a string.
    """
    known = {r.id for r in all_rules()}
    out = set()
    for i in ids:
        rid = canonical_id(i) if isinstance(i, str) else None
        if rid not in known:
            raise ConfigError(f"{where}: unknown rule id {i!r} (see `trainproof rules`)")
        out.add(rid)
    return out


def load_config(config_path: Path | None = None, start: Path | None = None, extra_mute: Iterable[str] = ()) -> Config:
    """Load the configuration and merge ``--mute`` ids into it.

    Without ``config_path`` the nearest pyproject.toml of :func:`search_dirs` (from
    ``start``, default the current directory) is used.

    Raises:
        ConfigError: unreadable, oversized or invalid TOML file (the file given or a
            pyproject.toml on the search path), unknown key, threshold or rule id, or a
            threshold value of the wrong type or outside its range.
    """
    table: dict = {}
    source = None
    if config_path is not None:
        data = _read_toml(Path(config_path), "config")
        tool = data.get("tool")
        if isinstance(tool, dict) and isinstance(tool.get("trainproof"), dict):
            table = tool["trainproof"]
        else:
            table = data
        source = str(config_path)
    else:
        found = find_pyproject(start or Path.cwd())
        if found is not None:
            p, table = found
            source = str(p)
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: [tool.trainproof] must be a table")
    where = source or "configuration"
    names = set(_th.names())
    overrides: dict = {}
    mute: set[str] = set()
    history = None
    for key, val in table.items():
        if key == "mute":
            if not isinstance(val, list):
                raise ConfigError(f"{where}: 'mute' must be a list of rule ids")
            mute |= _check_ids(val, where)
        elif key == "thresholds":
            if not isinstance(val, dict):
                raise ConfigError(f"{where}: 'thresholds' must be a table")
            for k, v in val.items():
                if k not in names:
                    raise ConfigError(f"{where}: unknown threshold {k!r} in [thresholds]")
                overrides[k] = v
        elif key == "history":
            history = _history(val, where, Path(source).parent if source else Path.cwd())
        elif key in names:
            overrides[key] = val
        else:
            raise ConfigError(f"{where}: unknown key {key!r} (known: mute, thresholds, history, or a threshold name)")
    try:
        th = _th.DEFAULT.with_overrides(overrides)
    except _th.ThresholdError as e:
        raise ConfigError(f"{where}: {e}") from None
    mute |= _check_ids(extra_mute, "--mute")
    return Config(mute=mute, thresholds=th, source=source, history=history)


def _history(value, where: str, base: Path) -> str:
    """The ``history`` setting: a ``postgresql://`` URL as given, a path made absolute from
    ``base`` (the configuration file's folder), so that a command run from a subfolder
    records into the same file.

    Raises:
        ConfigError: not a non-empty string.
    """
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: 'history' must be a file path or a postgresql:// URL")
    if "://" in value:
        return value
    return str((base / value).absolute())
