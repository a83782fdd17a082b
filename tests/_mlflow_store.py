"""Small MLflow file stores written in a test's temporary folder, the way MLflow lays them out."""

from __future__ import annotations

import math
from pathlib import Path

RUN_ID = "cb0096518b0e4c66a94428555f05420b"


def make_store(root: Path, metrics: dict[str, list[tuple[float, int]]], exp: str = "0", run_id: str = RUN_ID) -> Path:
    """An mlruns/ tree with one run; returns the run folder."""
    exp_dir = root / "mlruns" / exp
    exp_dir.mkdir(parents=True, exist_ok=True)
    (exp_dir / "meta.yaml").write_text(
        f"artifact_location: file:///x/mlruns/{exp}\nexperiment_id: '{exp}'\nlifecycle_stage: active\nname: Default\n"
    )
    run = exp_dir / run_id
    for sub in ("metrics", "params", "tags", "artifacts"):
        (run / sub).mkdir(parents=True, exist_ok=True)
    (run / "meta.yaml").write_text(f"run_id: {run_id}\nexperiment_id: '{exp}'\nstatus: 3\nlifecycle_stage: active\n")
    (run / "params" / "lr").write_text("0.001")
    (run / "tags" / "mlflow.runName").write_text("bright-fox-42")
    for name, points in metrics.items():
        f = run / "metrics" / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("".join(metric_line(i, v, s) for i, (v, s) in enumerate(points)))
    return run


def healthy_points(n: int = 40) -> list[tuple[float, int]]:
    return [(2.0 * math.exp(-s / 10) + 0.3, s) for s in range(n)]


def metric_line(i: int, value: float, step: int) -> str:
    return f"{T0 + 1000 * i} {value} {step}\n"  # MLflow writes str(float): nan, inf, 1e-05


T0 = 1_664_364_007_310
