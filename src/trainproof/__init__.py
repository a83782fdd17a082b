"""trainproof: a deterministic linter for ML training runs.

Point it at a run's logs and it answers PASS, WARN or FAIL with stable ``TP-*`` findings
that cite the numbers behind them.

    >>> import trainproof
    >>> report = trainproof.judge("trainer_state.json")
    >>> report.verdict, [f.id for f in report.findings]
"""

__version__ = "0.1.0"

# The public names are imported on first use (PEP 562), so that `import trainproof` and
# `trainproof --version` do not pay for numpy and the readers until something needs them.
_LAZY = {
    "compare": "api",
    "doctor": "api",
    "judge": "api",
    "read_runlog": "api",
    "Guardian": "live",
    "RunFailed": "live",
    "monitor": "live.monitor",
    "watch": "live.monitor",
    "Finding": "findings",
    "Level": "findings",
    "Report": "findings",
    "exit_code": "findings",
    "Record": "runlog",
    "RunLog": "runlog",
    "Series": "runlog",
}


def __getattr__(name: str):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'trainproof' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Finding",
    "Guardian",
    "Level",
    "Record",
    "Report",
    "RunFailed",
    "RunLog",
    "Series",
    "__version__",
    "compare",
    "doctor",
    "exit_code",
    "judge",
    "monitor",
    "read_runlog",
    "watch",
]
