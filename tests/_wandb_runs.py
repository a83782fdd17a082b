"""Real W&B runs for the tests and ``evidence/wandb_table.py``: written offline by the real
``wandb`` client in a child process (its home, cache, config and data folders all under
the given root, so nothing reaches the real home or the network), and read back by W&B's
own reader, ``wandb-core leet inspect --json`` (the Go ``transactionlog`` reader wandb 0.31
ships; the Python client has no reader of its own any more).

A run is described by a :class:`Spec`; :func:`rows` gives the rows it logs, so a test
knows every value without reading the file.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

#: W&B's spellings of the non-finite numbers in ``value_json`` (and in ``inspect``'s JSON).
NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


@dataclass
class Spec:
    """One run to write.

    ``kind``: ``healthy`` (loss decreasing from about 2.3 with mild noise), ``nan`` (the
    loss turns NaN half-way) or ``diverged`` (it grows by orders of magnitude from two
    thirds on). ``step_metric``: a global-step key defined with ``define_metric(...,
    step_metric=...)`` for every metric (as the HF and Lightning integrations do), logged
    as ``step_scale`` times the row number; empty: W&B's ``_step`` is the x axis.
    """

    name: str
    kind: str = "healthy"
    steps: int = 300
    seed: int = 0
    loss_key: str = "train/loss"
    nested: bool = False
    media_every: int = 0
    step_metric: str = ""
    step_scale: int = 1
    config: dict = field(default_factory=dict)
    extra_keys: int = 0


def curve(spec: Spec) -> list[float]:
    """The run's loss values, one per row."""
    out = []
    x = spec.seed * 7919 + 17
    n = spec.steps
    for i in range(n):
        x = (x * 1103515245 + 12345) % (1 << 31)
        v = 0.3 + 2.0 * math.exp(-i / (n / 4)) + (x / (1 << 31) - 0.5) * 0.04
        if spec.kind == "nan" and i >= n // 2:
            v = math.nan
        elif spec.kind == "diverged" and i >= 2 * n // 3:
            v *= 3.0 ** (i - 2 * n // 3 + 1)
        out.append(v)
    return out


def rows(spec: Spec) -> list[dict]:
    """The dicts the run logs, one ``run.log`` call each (media rows are extra)."""
    out = []
    for i, v in enumerate(curve(spec)):
        row: dict = {spec.loss_key: v, "train/learning_rate": 1e-3 * (1 - i / spec.steps)}
        if spec.nested:
            row["opt"] = {"grad": {"norm": 1.0 + (i % 7) / 10}, "scale": 2.0**16}
        for k in range(spec.extra_keys):
            row[f"extra/k{k}"] = float(i * (k + 1))
        if spec.step_metric:
            row[spec.step_metric] = i * spec.step_scale
        out.append(row)
    return out


def step_of(spec: Spec, i: int) -> int:
    """The step row ``i`` is read at: its step metric, else its ``_step`` (which counts
    the media rows logged after rows ``0, media_every, 2 * media_every, …`` too)."""
    if spec.step_metric:
        return i * spec.step_scale
    return i + ((i + spec.media_every - 1) // spec.media_every if spec.media_every else 0)


_CHILD = r"""
import json, sys
import wandb

root, specs = sys.argv[1], json.loads(sys.stdin.read())
dirs = []
for spec in specs:
    run = wandb.init(project="trainproof-tests", name=spec["name"], config=spec["config"], dir=root)
    if spec["step_metric"]:
        run.define_metric(spec["step_metric"])
        run.define_metric("*", step_metric=spec["step_metric"], step_sync=True)
    for i, row in enumerate(spec["rows"]):
        run.log(row)
        if spec["media_every"] and i % spec["media_every"] == 0:
            run.log({"hist": wandb.Histogram([i, i + 1, i + 2]), "table": wandb.Table(columns=["a"], data=[[i]])})
    run.summary["best_loss"] = min((r[spec["loss_key"]] for r in spec["rows"]), default=0.0)
    dirs.append(run.dir)
    run.finish()
print(json.dumps(dirs))
"""


def env_for(root: Path, home: Path | None = None) -> dict[str, str]:
    """The environment the child runs in: offline, silent, run folders under ``root``;
    the client's home, cache, config and data under ``home`` (as for a user: outside the
    project, so a run's ``logs/debug-core.log`` links out of it), else under ``root``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    base = root if home is None else home
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(home),
        WANDB_MODE="offline",
        WANDB_SILENT="true",
        WANDB_DIR=str(root),
        WANDB_CACHE_DIR=str(base / "cache"),
        WANDB_CONFIG_DIR=str(base / "config"),
        WANDB_DATA_DIR=str(base / "data"),
        WANDB_DISABLE_GIT="true",
        WANDB_DISABLE_CODE="true",
        WANDB__DISABLE_STATS="true",
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
    )
    return env


def write_runs(root: Path, specs: list[Spec], timeout: float = 300, home: Path | None = None) -> list[Path]:
    """Write ``specs`` as offline runs under ``root/wandb/``; their run folders, in order.
    ``home``: where the client keeps its own files (see :func:`env_for`)."""
    payload = [{**asdict(s), "rows": rows(s)} for s in specs]
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(root)],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env_for(root, home),
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"wandb child failed ({proc.returncode}): {proc.stderr[-3000:]}")
    # run.dir is <run folder>/files
    return [Path(d).parent for d in json.loads(proc.stdout.strip().splitlines()[-1])]


def core_path() -> str:
    """The ``wandb-core`` binary of the installed wandb."""
    from wandb.util import get_core_path

    return get_core_path()


def inspect_records(wandb_file: Path, root: Path, timeout: float = 120) -> tuple[list[dict], str]:
    """W&B's own reading of ``wandb_file``: ``wandb-core leet inspect --json``, one dict
    per record (``num`` is its 1-based index), and what it printed on stderr."""
    proc = subprocess.run(
        [core_path(), "leet", "inspect", "--no-observability", "--json", "--run-file", str(wandb_file)],
        capture_output=True,
        text=True,
        env=env_for(root),
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"wandb-core leet inspect failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()], proc.stderr


def _number(v: object) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str) and v in NONFINITE:
        return NONFINITE[v]
    return None


def reference_points(records: list[dict]) -> list[tuple[str, float, float, int]]:
    """``(key, step, value, record number)`` of every number in the history rows of W&B's
    reading, as the module docstring of ``trainproof.formats.wandb`` says they are read:
    nested keys joined (``inspect`` joins them with ``.``, kept here as such), objects with
    a ``_type`` left out, ``_step`` or the defined step metric as the step (a row without
    it at its last value), rows of W&B's clock alone left out. Keys are compared with
    ``/`` and ``.`` made one (:func:`same_key`)."""
    step_metrics = [
        r["metric"].get("step_metric") for r in records if r.get("type") == "metric" and r["metric"].get("step_metric")
    ]
    hist = [(r["num"], r["history"].get("item", {})) for r in records if r.get("type") == "history"]
    x = "_step"
    for sm in step_metrics:
        if any(_number(items.get(sm)) is not None for _, items in hist):
            x = sm
            break
    out = []
    last = 0.0
    for num, items in hist:
        media = {k[: -len("._type")] for k in items if k.endswith("._type")}
        nums = {}
        for k, v in items.items():
            if any(k.startswith(m + ".") for m in media) or k in media:
                continue
            n = _number(v)
            if n is not None:
                nums[k] = n
        step = nums.pop(x, None)
        own = nums.pop("_step", None)
        if step is None and x == "_step":
            step = own
        if set(nums) <= {"_timestamp", "_runtime"}:
            continue
        if step is None:
            step = last
        last = step
        out += [(same_key(k), step, v, num) for k, v in nums.items()]
    return out


def same_key(k: str) -> str:
    """A key with ``/`` and ``.`` as one separator (ours joins nested keys with ``/``,
    ``inspect`` with ``.``)."""
    return k.replace("/", ".")


def our_points(path: Path) -> tuple[list[tuple[str, float, float, int]], object]:
    """``(key, step, value, line)`` of every value our reader yields for ``path``, and
    its ReadState."""
    from trainproof.formats import ReadState
    from trainproof.formats import wandb as tp_wandb

    state = ReadState()
    out = []
    for rec in tp_wandb.read(path, state):
        out += [(same_key(k), rec.step, v, rec.line) for k, v in rec.values.items()]
    return out, state


def bits(v: float) -> object:
    """A float compared exactly: NaN equals NaN, ``0.0`` differs from ``-0.0``."""
    return "nan" if v != v else float(v).hex()


def as_multiset(points) -> list[tuple]:
    """Points sorted, with floats made exact keys (:func:`bits`)."""
    return sorted((k, bits(s), bits(v), n) for k, s, v, n in points)
