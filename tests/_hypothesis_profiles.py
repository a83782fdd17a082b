"""Hypothesis profiles of the reader fuzz tests (``tests/formats/test_fuzz_readers.py``).

* ``ci`` (the default): the short budget every test run pays, CI's included: the fuzz
  modules generate about 5,000 inputs across the readers and the command line in about a
  minute on two cores; derandomized, so CI sees the same inputs on every run and a failure
  is reproducible.
* ``long``: the budget on demand, about 100,000 inputs with random seeds, for ``pytest -m
  fuzz --hypothesis-profile long`` and ``evidence/robustness.py``.

The profiles only set what the fuzz tests read from them (:func:`fuzz_settings`); loading
this module does not change the settings of any other test.

Hypothesis' pytest plugin loads ``--hypothesis-profile NAME`` at configure time, before
test modules are imported, and fails on a profile not registered by then. So the long run
is one of::

    PYTHONPATH=tests pytest -p _hypothesis_profiles -m fuzz --hypothesis-profile long
    TRAINPROOF_FUZZ_PROFILE=long pytest -m fuzz

and plain ``pytest -m fuzz --hypothesis-profile long`` works once ``tests/conftest.py``
imports this module. ``TRAINPROOF_FUZZ_EXAMPLES=N`` sets the examples per test (at
weight 1) of whichever profile is active.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

#: Examples per fuzz test at weight 1 in each profile (the tests weigh 0.05 to 1: about
#: 23 x this many inputs in all). ``TRAINPROOF_FUZZ_EXAMPLES`` overrides the active
#: profile's number.
CI_EXAMPLES = 200
LONG_EXAMPLES = 4500

_COMMON = dict(
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
    print_blob=True,
)

settings.register_profile("ci", max_examples=CI_EXAMPLES, derandomize=True, database=None, **_COMMON)
settings.register_profile("long", max_examples=LONG_EXAMPLES, **_COMMON)


def active_name() -> str:
    """``long`` when chosen (environment variable or ``--hypothesis-profile``), else ``ci``."""
    env = os.environ.get("TRAINPROOF_FUZZ_PROFILE")
    if env:
        return env
    try:
        current = settings.get_current_profile_name()
    except Exception:  # noqa: BLE001 - an older Hypothesis without the accessor
        current = "default"
    return current if current in ("ci", "long") else "ci"


def fuzz_settings(weight: float = 1.0) -> settings:
    """The active profile with ``weight`` times its examples (a slow reader weighs less)."""
    base = settings.get_profile(active_name())
    n = int(os.environ.get("TRAINPROOF_FUZZ_EXAMPLES") or base.max_examples)
    return settings(base, max_examples=max(1, round(n * weight)))
