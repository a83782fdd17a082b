"""Configuration: ``[tool.trainproof]`` in the nearest pyproject.toml, or ``--config PATH``.

Accepted keys::

    [tool.trainproof]
    mute = ["TP-GRAD-SPIKE"]          # rule ids never run
    diverge_ratio = 2.0               # any threshold, by name ...
    [tool.trainproof.thresholds]      # ... or grouped under a table
    grad_spike_factor = 20

An unknown key, threshold name or rule id is an error naming it (exit 2), never ignored.
A ``--config`` file may be a pyproject.toml (its ``[tool.trainproof]`` table is used) or
a plain TOML file whose top level holds the same keys.
"""
from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from .rules import thresholds as _th
from .rules.registry import all_rules


class ConfigError(ValueError):
    """The configuration cannot be used; the message names the offending key or file."""


@dataclass
class Config:
    """Resolved configuration: muted rule ids, thresholds, and where they came from."""

    mute: set[str] = field(default_factory=set)
    thresholds: _th.Thresholds = _th.DEFAULT
    source: str | None = None


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` that has a [tool.trainproof] table."""
    start = start.resolve()
    for d in (start, *start.parents):
        p = d / "pyproject.toml"
        if p.is_file():
            try:
                data = tomllib.loads(p.read_text(encoding="utf-8"))
            except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
                continue
            if isinstance(data.get("tool"), dict) and "trainproof" in data["tool"]:
                return p
    return None


def _check_ids(ids: Iterable[str], where: str) -> set[str]:
    known = {r.id for r in all_rules()}
    out = set()
    for i in ids:
        if not isinstance(i, str) or i not in known:
            raise ConfigError(f"{where}: unknown rule id {i!r} (see `trainproof rules`)")
        out.add(i)
    return out


def load_config(config_path: Path | None = None, start: Path | None = None,
                extra_mute: Iterable[str] = ()) -> Config:
    """Load the configuration and merge ``--mute`` ids into it.

    Raises:
        ConfigError: unreadable file, invalid TOML, unknown key, threshold or rule id.
    """
    table: dict = {}
    source = None
    if config_path is not None:
        try:
            data = tomllib.loads(Path(config_path).read_text(encoding="utf-8"))
        except OSError as e:
            raise ConfigError(f"cannot read config {config_path}: {e.strerror or e}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise ConfigError(f"config {config_path} is not valid TOML: {e}") from None
        tool = data.get("tool")
        if isinstance(tool, dict) and isinstance(tool.get("trainproof"), dict):
            table = tool["trainproof"]
        else:
            table = data
        source = str(config_path)
    else:
        p = find_pyproject(start or Path.cwd())
        if p is not None:
            table = tomllib.loads(p.read_text(encoding="utf-8"))["tool"]["trainproof"]
            source = str(p)
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: [tool.trainproof] must be a table")
    where = source or "configuration"
    names = set(_th.names())
    overrides: dict = {}
    mute: set[str] = set()
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
        elif key in names:
            overrides[key] = val
        else:
            raise ConfigError(f"{where}: unknown key {key!r} (known: mute, thresholds, or a threshold name)")
    try:
        th = _th.DEFAULT.with_overrides(overrides)
    except _th.ThresholdError as e:
        raise ConfigError(f"{where}: {e}") from None
    mute |= _check_ids(extra_mute, "--mute")
    return Config(mute=mute, thresholds=th, source=source)
