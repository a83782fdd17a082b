#!/usr/bin/env python3
"""Generated healthy small models through the model probe: how far the activation shares
and the per-layer update-ratio spread go without a bug (the measurement behind
``activation_min_rows``, ``dead_relu_most_share`` and ``saturation_rows_share``, and behind
the note that no spread bar tells ``bug_exploding_layer`` apart).

Run ``i`` (``--first`` to ``--first + --n - 1``) draws its configuration from
``random.Random(i)``: an MLP on the silent-bug gallery's task (``evidence/silent_bugs/_common.py``)
of width 8, 16, 64 or 256 and depth 1, 2, 3, 4 or 6, with or without batch norm after each
hidden layer, ReLU, tanh or sigmoid, a batch of 1, 2, 4, 8, 16, 32 or 64 (2 at least with
batch norm), Adam at lr 1e-4 to 1e-2 or SGD with or without momentum at 1e-3 to 1e-1
(log-uniform); 300 steps through ``trainproof.monitor(check_every=10, activations=True)``.
Per check it keeps ``model/dead_relu_share`` and ``model/saturated_share`` with their rows,
and the spread: log10 of the fastest weight matrix's update ratio ||dW|| / ||W|| over the
median of the other weight matrices' (three weight matrices or more), measured here around
the optimizer step of each check step. It prints, per model-level rule, how many runs it
warned or failed on (with batch norm, at which batches); per batch band, the largest share
held at 3 checks in a row (the rules' ``model_checks``), the largest at one check; and the
spread held over the first 3 checks. A run's row keeps the ids it was flagged with and the
probe's ``model/params_not_updated`` and ``model/params_not_updated_step`` per check (the
measurement behind ``params_not_updated_step_log10``).

The thresholds' reasons cite runs 0-119 and 1000-1119 (two processes, one core each); the
spread there was read from the probe's own update ratios (the step after the ``log()`` before
a check), here around the check step's own optimizer step: the same statistic a step apart.

Usage (from the repository root; about 5 s a run on one core)::

    PYTHONPATH=src python bench/model_probe_healthy.py --first 0 --n 120 --jsonl a.jsonl
    PYTHONPATH=src python bench/model_probe_healthy.py --first 1000 --n 120 --jsonl b.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "evidence"))

import torch  # noqa: E402
from silent_bugs import _common as c  # noqa: E402
from torch import nn, optim  # noqa: E402

from trainproof.rules import model as model_rules  # noqa: E402
from trainproof.rules.registry import REGISTRY  # noqa: E402

KEYS = (
    "model/dead_relu_share",
    "model/dead_relu_rows",
    "model/saturated_share",
    "model/saturated_rows",
    "model/params_not_updated",
    "model/params_not_updated_step",
)
STEPS = 300
HELD = 3  # the rules' model_checks
BANDS = ((1, 1), (2, 4), (8, 16), (32, 64))
MODEL_IDS = frozenset(k for k, r in REGISTRY.items() if r.group == model_rules.GROUP)


def config(i: int) -> dict:
    """The configuration of run ``i`` (see the module docstring)."""
    r = random.Random(i)
    opt = r.choice(["adam", "sgd_mom", "sgd"])
    lo, hi = (1e-4, 1e-2) if opt == "adam" else (1e-3, 1e-1)
    return {
        "seed": i,
        "width": r.choice([8, 16, 64, 256]),
        "depth": r.choice([1, 2, 3, 4, 6]),
        "batch": r.choice([1, 2, 4, 8, 16, 32, 64]),
        "opt": opt,
        "lr": math.exp(r.uniform(math.log(lo), math.log(hi))),
        "act": r.choice(["relu", "tanh", "sigmoid"]),
        "bn": r.choice([0, 1]),
    }


def _model(cfg: dict) -> nn.Sequential:
    act = {"relu": nn.ReLU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid}[cfg["act"]]
    layers: list[nn.Module] = []
    width = c.D_IN
    for _ in range(cfg["depth"]):
        layers.append(nn.Linear(width, cfg["width"]))
        if cfg["bn"]:
            layers.append(nn.BatchNorm1d(cfg["width"]))
        layers.append(act())
        width = cfg["width"]
    layers.append(nn.Linear(width, c.CLASSES))
    return nn.Sequential(*layers)


def _spread(before: list, weights: list) -> float | None:
    ratios = sorted(
        float((w.detach() - b).norm() / w.detach().norm()) for b, w in zip(before, weights) if w.detach().norm() > 0
    )
    if len(ratios) < 3 or ratios[-1] <= 0:
        return None
    others = ratios[:-1]
    mid = len(others) // 2
    med = others[mid] if len(others) % 2 else 0.5 * (others[mid - 1] + others[mid])
    return math.log10(ratios[-1] / med) if med > 0 else None


def run(cfg: dict) -> dict:
    """Train run ``cfg``; its losses and, per check, the probe's shares and the spread."""
    c.setup(cfg["seed"])
    model = _model(cfg)
    if cfg["opt"] == "adam":
        opt = optim.Adam(model.parameters(), lr=cfg["lr"])
    else:
        opt = optim.SGD(model.parameters(), lr=cfg["lr"], momentum=0.9 if cfg["opt"] == "sgd_mom" else 0.0)
    weights = [m.weight for m in model if isinstance(m, nn.Linear)]
    batch = max(cfg["batch"], 2) if cfg["bn"] else cfg["batch"]
    x, y = c.task()
    mon = c.start(model, opt, STEPS)
    losses, spread = [], []
    for step, (xb, yb) in zip(range(STEPS), c.batches(x, y, batch=batch, seed=cfg["seed"])):
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        mon.log(step, loss)
        check = (step + 1) % c.CHECK_EVERY == 0
        before = [w.detach().clone() for w in weights] if check else None
        opt.step()
        opt.zero_grad()
        if before is not None:
            with torch.no_grad():
                spread.append(_spread(before, weights))
        losses.append(loss.item())
    rep, meta = c.finish(mon, STEPS)
    series = {k: [v[k] for _, v in meta["records"] if k in v] for k in KEYS}
    ids = sorted({f.id for f in rep.findings if f.level.name in ("WARN", "FAIL")})
    return {"cfg": {**cfg, "batch": batch}, **c.loss_summary(losses), "series": series, "spread": spread, "ids": ids}


def _held(values: list[float]) -> float | None:
    return max((min(values[i : i + HELD]) for i in range(len(values) - HELD + 1)), default=None)


def report(rows: list[dict]) -> None:
    """Print the bands and the model rules that warned (see the module docstring)."""
    fired: dict[str, list[dict]] = {}
    for r in rows:
        for rid in r.get("ids", ()):
            fired.setdefault(rid, []).append(r["cfg"])
    print(f"model-level rules that warned or failed, of {len(rows)} runs:")
    for rid in sorted(fired):
        if rid in MODEL_IDS:
            cfgs = fired[rid]
            bn = sum(x["bn"] for x in cfgs)
            batches = sorted({x["batch"] for x in cfgs})
            print(f"  {rid}: {len(cfgs)} runs ({bn} with batch norm; batches {batches})")
    for key, rows_key in (("model/dead_relu_share", "model/dead_relu_rows"), ("model/saturated_share", None)):
        print(f"{key}: largest held at {HELD} checks in a row / largest single check")
        for lo, hi in BANDS:
            sub = [r for r in rows if lo <= r["cfg"]["batch"] <= hi and r["series"][key]]
            if not sub:
                continue
            held = max(_held(r["series"][key]) or 0.0 for r in sub)
            top = max(max(r["series"][key]) for r in sub)
            checks = sum(len(r["series"][key]) for r in sub)
            print(f"  batch {lo}-{hi}: {len(sub)} runs, {checks} checks: {held:.2f} / {top:.2f}")
    first = [(min(s[:HELD]), r) for r in rows if len(s := [v for v in r["spread"] if v is not None]) >= HELD]
    first.sort(key=lambda t: -t[0])
    print(f"update-ratio spread (log10) held over the first {HELD} checks, {len(first)} runs:")
    print(f"  at least 1.40 (bug_exploding_layer's): {sum(v >= 1.40 for v, _ in first)}; largest {first[0][0]:.2f}")
    for v, r in first[:5]:
        print(f"    {v:.2f} {r['cfg']} loss {r['first_loss']:.2f} -> {r['last_loss']:.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--first", type=int, default=0, help="the first run's index")
    ap.add_argument("--n", type=int, default=240, help="how many runs")
    ap.add_argument("--jsonl", type=Path, help="also write each run's row here")
    args = ap.parse_args()
    rows = []
    for i in range(args.first, args.first + args.n):
        rows.append(run(config(i)))
        if args.jsonl:
            with args.jsonl.open("a", encoding="utf-8") as f:
                f.write(json.dumps(rows[-1]) + "\n")
    report(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
