"""trainproof: a deterministic linter for ML training runs.

Point it at a run's logs and it answers PASS, WARN or FAIL with stable ``TP-*`` findings
that cite the numbers behind them.

    >>> import trainproof
    >>> report = trainproof.judge("trainer_state.json")
    >>> report.verdict, [f.id for f in report.findings]
"""
from .api import compare, doctor, judge, read_runlog
from .live import Guardian, RunFailed, watch
from .findings import Finding, Level, Report, exit_code
from .runlog import Record, RunLog, Series

__version__ = "0.1.0"

__all__ = ["Finding", "Guardian", "Level", "Record", "Report", "RunFailed", "RunLog", "Series", "__version__",
           "compare", "doctor", "exit_code", "judge", "read_runlog", "watch"]
