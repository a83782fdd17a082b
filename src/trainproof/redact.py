"""Credentials are never printed: the one masking step every output passes through.

trainproof reads MLflow tracking servers with the credentials of MLflow's own variables
(:data:`SECRET_VARIABLES`; see :mod:`trainproof.mlflow_server`). A server answers with
text of its own choosing (run names, metric keys, error messages), and a hostile or
misconfigured one echoes what it received, in any of the forms the credentials travel in.
:func:`mask` replaces every such form with :data:`MASK`; :func:`scrub` applies it to every
string of a report (or of any nest of dicts, lists and dataclasses) before a renderer lays
it out, so that no form survives into the text report, ``--json``, SARIF, HTML, an error
line or the GitHub Action's log, and no wrapping or shortening can show part of one.

The forms masked, for each configured secret (the token, the password) and for the user
name and password together: the value itself; base64 of it and of ``user:password`` (HTTP
Basic), standard and URL-safe, with and without padding; ``Basic …`` and ``Bearer …``;
and percent-encoded (``quote``, ``quote_plus``; upper- and lower-case hex). A value
shorter than :data:`MIN_SECRET_LENGTH` characters is not masked alone (it would mask
ordinary words); its Basic form still is.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import os
import re
from collections.abc import Mapping
from functools import lru_cache
from urllib.parse import quote, quote_plus

__all__ = ["MASK", "MIN_SECRET_LENGTH", "SECRET_VARIABLES", "USER_VARIABLE", "mask", "scrub", "secret_forms"]

#: The environment variables whose values are secrets (MLflow's client reads the same).
SECRET_VARIABLES = ("MLFLOW_TRACKING_TOKEN", "MLFLOW_TRACKING_PASSWORD")
#: The user name: not a secret by itself, but part of the Basic credentials.
USER_VARIABLE = "MLFLOW_TRACKING_USERNAME"

#: What a secret is replaced with.
MASK = "***"

#: A secret shorter than this is not masked by itself: replacing every ``ab`` or ``pw``
#: would garble the output and hide nothing worth hiding (a three-character password is
#: guessed faster than it is read from a log).
MIN_SECRET_LENGTH = 4


def _b64_forms(raw: bytes) -> list[str]:
    std = base64.standard_b64encode(raw).decode("ascii")
    url = base64.urlsafe_b64encode(raw).decode("ascii")
    return list(dict.fromkeys([std, url, std.rstrip("="), url.rstrip("=")]))


def _percent_forms(value: str) -> list[str]:
    out = []
    for enc in (quote(value, safe=""), quote(value), quote_plus(value)):
        out += [enc, re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), enc)]
    return out


def secret_forms(environ: Mapping[str, str] | None = None) -> list[str]:
    """Every form of the configured secrets that output must not hold, longest first.

    Args:
        environ: the environment to read (default ``os.environ``).

    Returns:
        the strings to mask (empty when no credential is configured).
    """
    env = os.environ if environ is None else environ
    return list(_forms(tuple(env.get(n) or "" for n in (*SECRET_VARIABLES, USER_VARIABLE))))


@lru_cache(maxsize=8)
def _forms(values: tuple[str, ...]) -> tuple[str, ...]:
    *secrets, user = values
    forms: list[str] = []
    for s in secrets:
        if not s:
            continue
        derived = [*_b64_forms(s.encode()), f"Bearer {s}"]
        if user:
            basic = _b64_forms(f"{user}:{s}".encode())
            derived += [*basic, *(f"Basic {b}" for b in basic)]
        forms += [f for f in derived if len(f) >= MIN_SECRET_LENGTH]
        if len(s) >= MIN_SECRET_LENGTH:
            forms += [s, *_percent_forms(s)]
    return tuple(sorted(set(forms), key=lambda f: (-len(f), f)))


@lru_cache(maxsize=8)
def _pattern(forms: tuple[str, ...]) -> re.Pattern | None:
    return re.compile("|".join(map(re.escape, forms))) if forms else None


def mask(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with every form of a configured secret (:func:`secret_forms`) replaced by
    :data:`MASK`. Text without one comes back unchanged (the same object)."""
    env = os.environ if environ is None else environ
    pattern = _pattern(_forms(tuple(env.get(n) or "" for n in (*SECRET_VARIABLES, USER_VARIABLE))))
    if pattern is None or not text:
        return text
    return pattern.sub(MASK, text)


def scrub(obj, environ: Mapping[str, str] | None = None):
    """``obj`` with :func:`mask` applied to every string inside it: dict keys and values,
    list and tuple items, and the fields of dataclasses (a :class:`~trainproof.findings.Report`,
    its findings), rebuilt as copies; enum members, numbers and arrays are kept as they
    are. With no credential configured, ``obj`` itself comes back."""
    env = os.environ if environ is None else environ
    pattern = _pattern(_forms(tuple(env.get(n) or "" for n in (*SECRET_VARIABLES, USER_VARIABLE))))
    if pattern is None:
        return obj
    return _scrub(obj, pattern)


def _scrub(obj, pattern: re.Pattern):
    if isinstance(obj, enum.Enum):
        return obj
    if isinstance(obj, str):
        return pattern.sub(MASK, obj)
    if isinstance(obj, dict):
        return {_scrub(k, pattern): _scrub(v, pattern) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)) and type(obj) in (list, tuple):
        return type(obj)(_scrub(v, pattern) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {f.name: _scrub(getattr(obj, f.name), pattern) for f in dataclasses.fields(obj) if f.init}
        return dataclasses.replace(obj, **changes)
    return obj
