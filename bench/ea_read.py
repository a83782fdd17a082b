#!/usr/bin/env python3
"""TensorBoard's own reader as a whole-process command, for ``bench/run_bench.py --vs``.

``python bench/ea_read.py EVENT_FILE_OR_DIR`` loads every scalar with
``EventAccumulator(path, size_guidance={"scalars": 0}).Reload()`` (no sampling: all
scalars kept, as ``trainproof`` keeps them) and prints ``{"records": <scalars>}``, the
same key ``run_bench.py`` reads from ``trainproof --json``. TensorBoard checks the
CRC-32Cs too (its ``tf_record`` reader verifies both on every record).
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    ea = EventAccumulator(sys.argv[1], size_guidance={"scalars": 0})
    ea.Reload()
    n = sum(len(ea.Scalars(t)) for t in ea.Tags()["scalars"])
    print(json.dumps({"records": n}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
