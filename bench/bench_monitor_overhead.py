#!/usr/bin/env python3
"""Benchmark: what the in-loop monitor adds to a real-sized training step, on CPU.

``trainproof.monitor(model, optimizer, check_every=50, policy="silent")`` on a model of a
few hundred parameter tensors (``--blocks`` residual blocks of Linear + LayerNorm, 4
tensors each, plus a head), AdamW, a batch chosen so that one step (forward, backward,
optimizer step) takes at least ``--min-step-ms`` (20 ms) on ``--threads`` torch threads.
``mon.log(step, loss.detach())`` is called after ``loss.backward()`` and before
``optimizer.step()``: the loss goes in as a tensor, never through ``.item()`` in the loop.
With ``--clip`` both arms call ``clip_grad_norm_`` (as most training loops do) and the
monitor is given the norm it returns (``grad_norm=``), so it computes none of its own.

It measures:

* **rounds**: ``--steps`` training steps split into ``--rounds`` alternated rounds
  (without the monitor, with, without, with …), each from the same seed on the same
  batches; the mean step time per round, the ratio with/without of each adjacent pair and
  their median (this shared machine's speed drifts, so only paired ratios count);
* **log()**: the time of each ``Monitor.log`` call, split into the calls between checks
  and the calls at a check (every ``check_every``-th call, or any call that judged), and
  the time of ``Guardian.judge`` inside them (wrapped to time it); the share of a step
  between checks is each monitored round's mean log() time over the mean step of the
  round before it, median over the pairs;
* **syncs**: the calls that would make the host wait for the device on a GPU
  (``Tensor.item``, ``.cpu()``, ``.tolist()``, ``.numpy()``, ``float(t)``, ``int(t)``,
  ``bool(t)`` …; see :class:`SyncCounter`) made from inside ``Monitor.log``, per step
  between checks and per check, in a separate untimed pass (the counting wrappers cost
  time of their own). On CPU they are not real synchronisations; the count is what would
  synchronise on a GPU;
* **judge cost**: one ``Guardian.judge`` on a history of ``--sizes`` records like
  ``Monitor.log``'s (``loss``, ``grad_norm``, ``lr``, ``step_time``), median of
  ``--repeat``, and what it costs per step at ``check_every`` under the ration of
  ``Guardian.affordable`` (at most 1/``JUDGE_COST_RATIO`` of the wall time).

* **model probes** (issue 34): the rounds cycle through four arms, each cycle from the same
  seed on the same batches: no monitor; the monitor with ``layers=False`` (``plain``: the
  loop's metrics only); the default monitor (``layers``: per-layer gradient norms, update
  ratios and the optimizer facts at each check); and ``activations=True`` as well
  (``activations``: forward hooks on the activation modules at each check step). The
  added share of a step of ``layers`` over ``plain`` and of ``activations`` over
  ``layers``, median over the cycles; and, directly, the host seconds spent inside the
  probe (its methods, its optimizer hooks, its forward hooks) per step, which on the CPU
  is the probe's whole cost and is free of the machine's drift.

Targets (issue 21): the added time between checks is at most 1% of a step of 20 ms or
more; judging at a check stays within the ≤10% wall-time ration. Issue 34: ``layers=True``
at the default check interval adds at most 1% of such a step over ``layers=False``; the
cost of ``activations=True`` is reported, with no target.

On a CUDA device (``--device cuda``) the model and the batches live on the GPU, every timed
step ends with ``torch.cuda.synchronize()`` (so a step's time is its device time; both
arms pay it alike), and the sync count still counts the calls that would wait. Widen the
model there (``--width 1024``) so a step takes at least ``--min-step-ms``.

Usage (from the repository root)::

    .venv/bin/python bench/bench_monitor_overhead.py                    # ~5 min on 2 cores
    .venv/bin/python bench/bench_monitor_overhead.py --quick --json /tmp/o.json   # a smoke run
    python bench/bench_monitor_overhead.py --device cuda --width 1024 --json /tmp/gpu.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

#: Added time per step between checks, as a share of a step of at least MIN_STEP_MS.
TARGET_BETWEEN_SHARE = 0.01
MIN_STEP_MS = 20.0
#: Added time per step of ``layers=True`` over ``layers=False`` at the default check
#: interval, as a share of a step of at least MIN_STEP_MS (issue 34).
TARGET_LAYERS_SHARE = 0.01

#: The monitored arms: the keyword arguments of ``trainproof.monitor`` each adds.
ARMS = {"plain": {"layers": False}, "layers": {}, "activations": {"activations": True}}


# --- the time spent inside the model probe ----------------------------------------------
class ProbeTimer:
    """Sums the host seconds spent inside :class:`trainproof.live.probes.ModelProbe`: its
    methods (those the monitor calls, its optimizer step hooks, the finishing of a check's
    numbers) and the forward hooks it installs. A context manager; restores on exit.

    Attributes:
        seconds: host seconds summed so far (float).
    """

    METHODS = ("on_log", "arm", "collect", "_pre_step", "_post_step")

    def __init__(self) -> None:
        self.seconds = 0.0
        self._undo: list = []
        self._depth = 0

    def _timed(self, fn):
        timer = self

        def timed(*a, **k):
            if timer._depth:
                return fn(*a, **k)
            timer._depth += 1
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                timer.seconds += time.perf_counter() - t0
                timer._depth -= 1

        return timed

    def __enter__(self) -> ProbeTimer:
        import torch

        from trainproof.live.probes import Deferred, ModelProbe

        timer = self
        for name in self.METHODS:
            orig = vars(ModelProbe)[name]
            wrapped = self._timed(orig)
            if name == "collect":

                def wrapped(probe, _orig=orig):  # the finishing runs later, at the monitor's read
                    with timer._scope():
                        d = _orig(probe)
                    return Deferred(d.tensors, timer._timed(d.finish))

            setattr(ModelProbe, name, wrapped)
            self._undo.append(lambda n=name, o=orig: setattr(ModelProbe, n, o))
        orig_arm = vars(ModelProbe)["_arm_activations"]

        def arm_activations(probe):
            reg = torch.nn.Module.register_forward_hook

            def reg_timed(mod, hook, *a, **k):
                return reg(mod, timer._timed(hook), *a, **k)

            torch.nn.Module.register_forward_hook = reg_timed
            try:
                return orig_arm(probe)
            finally:
                torch.nn.Module.register_forward_hook = reg

        ModelProbe._arm_activations = self._timed(arm_activations)
        self._undo.append(lambda: setattr(ModelProbe, "_arm_activations", orig_arm))
        return self

    @contextlib.contextmanager
    def _scope(self):
        self._depth += 1
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self._depth -= 1
            if not self._depth:
                self.seconds += time.perf_counter() - t0

    def __exit__(self, *exc) -> None:
        while self._undo:
            self._undo.pop()()


# --- counting host-device synchronisations ----------------------------------------------
class SyncCounter:
    """Counts the calls that would synchronise host and device, made inside a scope.

    Used as a context manager: on entry it wraps the ``torch.Tensor`` methods in
    :attr:`METHODS` and the ``torch`` functions in :attr:`FUNCTIONS` with counters; on exit
    it restores them. A call is counted only while inside a scope: a method made one by
    :meth:`scope` (e.g. ``Monitor.log``) is running, or a ``with counter.inside():`` block
    is open; so the training loop's own calls are not counted. A call made from inside
    another counted call (``Tensor.__format__`` calling ``item``) counts once.
    ``Tensor.to`` counts only when its target names the host as the string ``"cpu"``
    (a ``torch.device`` may be the model's own device, which on a CPU-only machine is
    the host too).

    Attributes:
        count: counted calls so far (int).
        by_name: counted calls per method or function name (``collections.Counter``).

    Raises:
        RuntimeError: from :meth:`scope`, when called outside the ``with`` block.
    """

    METHODS = (
        "item",
        "cpu",
        "tolist",
        "numpy",
        "__float__",
        "__int__",
        "__bool__",
        "__index__",
        "__complex__",
        "__array__",
        "__format__",
        "nonzero",
        "equal",
        "allclose",
        "to",
    )
    FUNCTIONS = ("equal", "allclose", "nonzero")

    def __init__(self) -> None:
        self.count = 0
        self.by_name: Counter = Counter()
        self._depth = 0
        self._busy = False
        self._undo: list = []
        self._active = False

    def __enter__(self) -> SyncCounter:
        import torch

        self._active = True
        for name in self.METHODS:
            self._patch(torch.Tensor, name, f"Tensor.{name}")
        for name in self.FUNCTIONS:
            self._patch(torch, name, f"torch.{name}")
        if hasattr(torch, "cuda") and hasattr(torch.cuda, "synchronize"):
            self._patch(torch.cuda, "synchronize", "torch.cuda.synchronize")
        return self

    def __exit__(self, *exc) -> None:
        while self._undo:
            self._undo.pop()()
        self._active = False

    def _patch(self, owner, name: str, label: str) -> None:
        if not hasattr(owner, name):
            return
        raw = vars(owner).get(name)
        orig = getattr(owner, name)
        counter = self

        def counted(*args, **kwargs):
            if counter._depth and not counter._busy and (name != "to" or _to_host(args[1:], kwargs)):
                counter.count += 1
                counter.by_name[label] += 1
                counter._busy = True
                try:
                    return orig(*args, **kwargs)
                finally:
                    counter._busy = False
            return orig(*args, **kwargs)

        counted.__name__ = getattr(orig, "__name__", name)
        setattr(owner, name, counted)
        self._undo.append((lambda: setattr(owner, name, raw)) if raw is not None else (lambda: delattr(owner, name)))

    @contextlib.contextmanager
    def inside(self):
        """A block whose calls are counted."""
        self._depth += 1
        try:
            yield self
        finally:
            self._depth -= 1

    def scope(self, cls: type, name: str) -> None:
        """Count the calls made while ``cls.name`` runs (restored on exit)."""
        if not self._active:
            raise RuntimeError("SyncCounter.scope is only valid inside its with block")
        raw = vars(cls).get(name)
        orig = getattr(cls, name)
        counter = self

        def scoped(*args, **kwargs):
            with counter.inside():
                return orig(*args, **kwargs)

        scoped.__name__ = name
        setattr(cls, name, scoped)
        self._undo.append((lambda: setattr(cls, name, raw)) if raw is not None else (lambda: delattr(cls, name)))


def _to_host(args: tuple, kwargs: dict) -> bool:
    """Whether ``Tensor.to(*args, **kwargs)`` names the host as the string ``"cpu"``."""
    targets = [a for a in args if isinstance(a, str)]
    dev = kwargs.get("device")
    if isinstance(dev, str):
        targets.append(dev)
    return any(t.split(":")[0] == "cpu" for t in targets)


# --- the training problem ----------------------------------------------------------------
def build(torch, blocks: int, width: int, seed: int = 0, device: str = "cpu"):
    """The model (``blocks`` residual Linear + LayerNorm blocks (the nonlinearity an
    ``nn.Tanh`` module, so ``activations=True`` has modules to hook) and a Linear head:
    4 * blocks + 2 parameter tensors) on ``device``, and its AdamW optimizer, from ``seed``."""
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(width, width)
            self.norm = nn.LayerNorm(width)
            self.act = nn.Tanh()

        def forward(self, x):
            return x + self.act(self.norm(self.lin(x)))

    torch.manual_seed(seed)
    model = nn.Sequential(*[Block() for _ in range(blocks)], nn.Linear(width, 1)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    return model, opt


def batches(torch, width: int, batch: int, n: int = 8, seed: int = 1, device: str = "cpu"):
    """``n`` fixed (input ``(batch, width)``, target ``(batch, 1)``) pairs on ``device``."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(width, 1, generator=g) / math.sqrt(width)
    out = []
    for _ in range(n):
        x = torch.randn(batch, width, generator=g)
        out.append((x.to(device), torch.tanh(x @ w).to(device)))
    return out


def train(torch, args, batch: int, steps: int, monitored, judged=None, on_log=None):
    """Train a fresh model ``steps`` steps; returns per-step seconds (list) and, when
    ``monitored``, per-call ``(seconds inside log, judged)`` (list).

    ``monitored``: False (no monitor), True (the default monitor) or an arm of
    :data:`ARMS`. ``judged``: the list :func:`timed_judge` yields (a call judged when it
    grew); ``on_log(k)``, when given, is called after the k-th (1-based) log call. On CUDA
    each step ends with a device synchronisation.
    """
    import trainproof

    device = getattr(args, "device", "cpu")
    cuda = device.startswith("cuda")
    model, opt = build(torch, args.blocks, args.width, device=device)
    data = batches(torch, args.width, batch, device=device)
    kw = ARMS.get(monitored, {}) if isinstance(monitored, str) else {}
    mon = trainproof.monitor(model, opt, check_every=args.check_every, policy="silent", **kw) if monitored else None
    mse = torch.nn.functional.mse_loss
    step_s, calls = [], []
    seen = len(judged) if judged is not None else 0
    for s in range(steps):
        x, y = data[s % len(data)]
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = mse(model(x), y)
        loss.backward()
        extra = {}
        if args.clip:
            # Both arms clip; the monitored one passes the norm clipping returns (a tensor
            # on the device) instead of computing it again.
            extra["grad_norm"] = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if mon is not None:
            a = time.perf_counter()
            mon.log(s, loss.detach(), **extra)
            b = time.perf_counter()
            now = len(judged) if judged is not None else 0
            calls.append((b - a, now != seen))
            seen = now
            if on_log is not None:
                on_log(s + 1)
        opt.step()
        if cuda:
            torch.cuda.synchronize()
        step_s.append(time.perf_counter() - t0)
    if mon is not None:
        mon.close()
    return step_s, calls


@contextlib.contextmanager
def timed_judge():
    """Wrap ``Guardian.judge`` so each call's seconds land in the yielded list (restored on exit)."""
    from trainproof.live.guardian import Guardian

    orig = Guardian.judge
    seconds: list[float] = []

    def judge(self, *a, **k):
        t0 = time.perf_counter()
        try:
            return orig(self, *a, **k)
        finally:
            seconds.append(time.perf_counter() - t0)

    Guardian.judge = judge
    try:
        yield seconds
    finally:
        Guardian.judge = orig


def calibrate(torch, args) -> tuple[int, float]:
    """The batch size (``--batch``, or the smallest power of two from 32 whose step takes
    ``--min-step-ms``) and its mean step seconds."""
    batch = args.batch or 32
    while True:
        st, _ = train(torch, args, batch, args.warmup + 10, monitored=False)
        mean = statistics.fmean(st[args.warmup :])
        if args.batch or mean * 1e3 >= args.min_step_ms or batch >= 65536:
            return batch, mean
        batch *= 2


# --- judge cost on a long history ---------------------------------------------------------
def series(n: int, seed: int = 0):
    """The columns of ``n`` records like Monitor.log's: a decaying noisy loss, grad norm,
    lr, step time (float64 arrays of shape ``(n,)``)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    i = np.arange(n, dtype=np.float64)
    return {
        "loss": 0.3 + 1.5 / np.sqrt(1 + i / 200) * (1 + 0.05 * rng.standard_normal(n)),
        "grad_norm": np.abs(1 + 0.2 * rng.standard_normal(n)),
        "lr": np.full(n, 1e-3),
        "step_time": 0.02 * (1 + 0.05 * rng.random(n)),
    }


def prefill_columns(guardian, n: int, seed: int = 0) -> None:
    """Give ``guardian`` a history of ``n`` records (one per step 0..n-1) as column batches."""
    import numpy as np

    from trainproof.runlog import Columns, RunLogBuilder

    steps = np.arange(n, dtype=np.float64)
    lines = np.arange(1, n + 1, dtype=np.int64)
    b = RunLogBuilder()
    for key, vals in series(n, seed).items():
        b.add_columns(Columns(key, steps, vals, lines))
    b.set_records(n)
    guardian.load(b.build("<live>", "live", copy=False))


def prefill_rows(guardian, n: int, seed: int = 0) -> None:
    """The same history as :func:`prefill_columns`, one ``Guardian.add`` per record."""
    cols = series(n, seed)
    keys = list(cols)
    for k in range(n):
        guardian.add(float(k), {key: float(cols[key][k]) for key in keys})


def judge_cost(sizes: list[int], repeat: int) -> list[dict]:
    """Median seconds of ``Guardian.judge`` per history size."""
    from trainproof.live.guardian import Guardian

    out = []
    for n in sizes:
        g = Guardian()
        prefill_columns(g, n)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            rep = g.judge()
            times.append(time.perf_counter() - t0)
        row = {"records": n, "judge_s": statistics.median(times), "repeats": repeat}
        if n <= 10_000:  # the column prefill judges as the row-by-row one would
            r = Guardian()
            prefill_rows(r, n)
            ids = lambda report: sorted((f.id, f.level.name) for f in report.findings)  # noqa: E731
            row["same_verdict_as_rows"] = ids(r.judge()) == ids(rep)
        out.append(row)
    return out


def rationed(judge_s: float, step_s: float, check_every: int) -> dict:
    """What one judgement of ``judge_s`` seconds costs per step of ``step_s`` seconds when
    the monitor tries every ``check_every`` steps under ``Guardian.affordable``'s ration:
    above ``JUDGE_FREE_SECONDS`` the next judgement waits ``JUDGE_COST_RATIO * judge_s``
    wall seconds, so it happens at the first ``check_every`` boundary after that."""
    from trainproof.live.guardian import JUDGE_COST_RATIO, JUDGE_FREE_SECONDS

    every = check_every
    if judge_s > JUDGE_FREE_SECONDS:
        every = check_every * max(1, math.ceil(JUDGE_COST_RATIO * judge_s / (check_every * step_s)))
    added = judge_s / every
    return {
        "judged_every_steps": every,
        "added_s_per_step": added,
        "share_of_wall": judge_s / (judge_s + every * step_s),
        "unrationed_share_of_step": judge_s / (check_every * step_s),
    }


# --- the run ------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=2000, help="timed training steps in all (default 2000)")
    ap.add_argument("--rounds", type=int, default=20, help="alternated rounds without/with (even; default 20)")
    ap.add_argument("--check-every", type=int, default=50)
    ap.add_argument("--blocks", type=int, default=100, help="Linear+LayerNorm blocks (4 tensors each)")
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--batch", type=int, default=0, help="batch size (default: calibrated to --min-step-ms)")
    ap.add_argument("--min-step-ms", type=float, default=MIN_STEP_MS)
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps at the start of each round")
    ap.add_argument("--sizes", default="1e3,1e5,1e6", help="history sizes judged (records)")
    ap.add_argument("--repeat", type=int, default=3, help="judge() timings per size (median)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    ap.add_argument(
        "--device",
        default="cpu",
        help="where the model trains: cpu (default), cuda, cuda:N; auto picks cuda when present",
    )
    ap.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")
    ap.add_argument(
        "--clip",
        action="store_true",
        help="both arms call clip_grad_norm_ and the monitor is given its norm (grad_norm=): the loop most runs have",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: 200 steps, 2 rounds, 10 blocks, batch 8, sizes 1e3,1e4, 1 repeat (not a measurement)",
    )
    args = ap.parse_args(argv)
    if args.quick:
        args.steps, args.rounds, args.sizes, args.repeat = 200, 2, "1e3,1e4", 1
        args.batch = args.batch or 8
        args.blocks = min(args.blocks, 10)
    args.rounds = max(2, args.rounds + args.rounds % 2)

    import torch

    from trainproof.live.guardian import JUDGE_COST_RATIO

    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        ap.error(f"--device {args.device}: torch sees no CUDA device")
    torch.set_num_threads(args.threads)
    ce = args.check_every
    sizes = [int(float(s)) for s in args.sizes.split(",")]

    model, _ = build(torch, args.blocks, args.width)
    n_tensors = sum(1 for p in model.parameters() if p.requires_grad)
    n_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    batch, calib_s = calibrate(torch, args)
    where = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else "CPU"
    print(f"torch {torch.__version__}, {args.threads} thread(s), {where}")
    print(
        f"model: {args.blocks} blocks of Linear({args.width}) + LayerNorm, {n_tensors} parameter tensors, "
        f"{n_params:,} parameters; AdamW; batch {batch}"
    )
    print(f"one training step (forward, backward, AdamW step), calibration: {calib_s * 1e3:.1f} ms")
    if args.clip:
        print("both arms clip (clip_grad_norm_); the monitor gets grad_norm= from it and computes no norm")
    if calib_s * 1e3 < args.min_step_ms:
        print(f"  note: below the {args.min_step_ms:g} ms of the target (--batch or --quick)")

    # --- timed rounds: cycles of [off, plain, layers, activations], same seed and batches
    per_round = max(ce, args.steps // args.rounds)
    cycles = max(1, args.rounds // 2)
    arms = [False, *ARMS]
    rounds = []
    with timed_judge() as judge_s:
        train(torch, args, batch, args.warmup + ce, monitored="activations", judged=judge_s)  # first-call costs
        judge_s.clear()
        between, at_check, judge_at_check, n_judged = [], [], [], 0
        for _ in range(cycles):
            for arm in arms:
                j0 = len(judge_s)
                with ProbeTimer() as pt:
                    st, calls = train(torch, args, batch, args.warmup + per_round, monitored=arm, judged=judge_s)
                timed = st[args.warmup :]
                rounds.append(
                    {
                        "monitor": arm,
                        "steps": per_round,
                        "mean_step_s": statistics.fmean(timed),
                        # the probe's host time over the timed steps (its share of the warm-up
                        # steps is left out by scaling; the first check falls after them)
                        "probe_s_per_step": pt.seconds / len(st),
                    }
                )
                if arm != "layers":
                    continue
                js = iter(judge_s[j0:])
                mine = []
                for k, (sec, judged) in enumerate(calls, start=1):
                    if judged:
                        n_judged += 1
                        judge_at_check.append(next(js))
                    (at_check if judged or k % ce == 0 else mine).append(sec)
                rounds[-1]["mean_log_between_checks_s"] = statistics.fmean(mine)
                between += mine

    def by_arm(arm) -> list[dict]:
        return [r for r in rounds if r["monitor"] == arm]

    off = [r["mean_step_s"] for r in by_arm(False)]
    on_ = [r["mean_step_s"] for r in by_arm("layers")]
    plain = [r["mean_step_s"] for r in by_arm("plain")]
    acts = [r["mean_step_s"] for r in by_arm("activations")]
    ratios = [b / a for a, b in zip(off, on_)]
    diffs = [b - a for a, b in zip(off, on_)]
    step_s = statistics.median(off)
    # Each arm against the unmonitored round of its own cycle: the machine's speed drifts.
    between_shares = [r["mean_log_between_checks_s"] / a for a, r in zip(off, by_arm("layers"))]
    layers_shares = [(b - p) / a for a, p, b in zip(off, plain, on_)]
    acts_shares = [(c - b) / a for a, b, c in zip(off, on_, acts)]
    probe_layers = [r["probe_s_per_step"] / a for a, r in zip(off, by_arm("layers"))]
    probe_acts = [
        (r["probe_s_per_step"] - q["probe_s_per_step"]) / a
        for a, q, r in zip(off, by_arm("layers"), by_arm("activations"))
    ]
    log_between = statistics.fmean(between) if between else 0.0
    log_check = statistics.fmean(at_check) if at_check else 0.0
    judge_mean = statistics.fmean(judge_at_check) if judge_at_check else 0.0
    mon_wall = sum(r["mean_step_s"] * r["steps"] for r in by_arm("layers"))
    judging_share = sum(judge_at_check) / mon_wall if mon_wall else 0.0

    # --- syncs, untimed
    syncs_between, syncs_check = [], []
    names_between, names_check = Counter(), Counter()
    import trainproof

    tiny = trainproof.monitor(*build(torch, 1, 4), policy="silent")
    mon_cls = type(tiny)
    tiny.close()
    with SyncCounter() as sc:
        sc.scope(mon_cls, "log")
        last = {"count": 0, "names": Counter()}

        def on_log(k: int) -> None:
            n = sc.count - last["count"]
            names = sc.by_name - last["names"]
            last["count"], last["names"] = sc.count, Counter(sc.by_name)
            if k % ce == 0:
                syncs_check.append(n)
                names_check.update(names)
            else:
                syncs_between.append(n)
                names_between.update(names)

        train(torch, args, batch, 2 * ce, monitored=True, on_log=on_log)

    # --- judge cost at long histories
    costs = judge_cost(sizes, args.repeat)
    for c in costs:
        c.update(rationed(c["judge_s"], step_s, ce))

    # --- report
    between_share = statistics.median(between_shares)
    print()
    print(
        f"{'round':>5} {'monitor':>11} {'steps':>5} {'mean step ms':>12} {'log() ms between checks':>23} "
        f"{'probe ms/step':>13}"
    )
    for i, r in enumerate(rounds):
        lb = f"{r['mean_log_between_checks_s'] * 1e3:.3f}" if "mean_log_between_checks_s" in r else ""
        pr = f"{r['probe_s_per_step'] * 1e3:.4f}" if r["monitor"] else ""
        print(f"{i:>5} {r['monitor'] or 'off':>11} {r['steps']:>5} {r['mean_step_s'] * 1e3:>12.2f} {lb:>23} {pr:>13}")
    print(
        "default monitor (layers=True) with/without per cycle: "
        + ", ".join(f"{x:.4f}" for x in ratios)
        + f"; median {statistics.median(ratios):.4f} (added {statistics.median(diffs) * 1e3:+.3f} ms/step)"
    )
    print()
    layers_share = statistics.median(layers_shares)
    probe_share = statistics.median(probe_layers)
    acts_share = statistics.median(acts_shares)
    probe_acts_share = statistics.median(probe_acts)
    # On the CPU the probe's host time is its whole cost, free of the drift between rounds;
    # on a GPU its kernels run on the device, so only the rounds (each step synchronised) see them.
    judged_share = layers_share if args.device.startswith("cuda") else probe_share
    layers_met = judged_share <= TARGET_LAYERS_SHARE
    rows = [
        ("step without the monitor (median of rounds)", f"{step_s * 1e3:.2f} ms", ""),
        (
            f"layers=True over layers=False, every {ce} steps",
            f"{layers_share:+.2%}",
            f"of a step (median per cycle; rounds, drift included); target <= {TARGET_LAYERS_SHARE:.0%}"
            + (": " + ("met" if layers_met else "NOT met") if args.device.startswith("cuda") else ""),
        ),
        (
            "  the probe's own host time (layers=True)",
            f"{probe_share:.3%}",
            "of a step (median per cycle)"
            + ("" if args.device.startswith("cuda") else ": " + ("met" if layers_met else "NOT met")),
        ),
        (
            "activations=True over layers=True",
            f"{acts_share:+.2%}",
            "of a step (median per cycle; rounds, drift included); no target",
        ),
        ("  the forward hooks' and probe's host time", f"{probe_acts_share:.3%}", "of a step (median per cycle)"),
        (
            "log() between checks (mean)",
            f"{log_between * 1e3:.3f} ms",
            f"{between_share:.2%} of a step (median per pair); target <= {TARGET_BETWEEN_SHARE:.0%}: "
            + ("met" if between_share <= TARGET_BETWEEN_SHARE else "NOT met"),
        ),
        (
            f"log() at a check (every {ce}; mean)",
            f"{log_check * 1e3:.3f} ms",
            f"of which judge() {judge_mean * 1e3:.3f} ms; {n_judged} judgements",
        ),
        (
            "judging share of the monitored wall time",
            f"{judging_share:.2%}",
            f"ration <= {1 / JUDGE_COST_RATIO:.0%}: " + ("within" if judging_share <= 1 / JUDGE_COST_RATIO else "OVER"),
        ),
        (
            "syncs per step between checks (max)",
            str(max(syncs_between, default=0)),
            ", ".join(f"{k} {v / max(1, len(syncs_between)):g}" for k, v in sorted(names_between.items())),
        ),
        (
            "syncs per check (max)",
            str(max(syncs_check, default=0)),
            ", ".join(f"{k} {v / max(1, len(syncs_check)):g}" for k, v in sorted(names_check.items())),
        ),
    ]
    w = max(len(r[0]) for r in rows)
    for name, val, note in rows:
        print(f"{name:<{w}}  {val:>10}  {note}")
    print()
    hdr = (
        f"{'records':>9} {'judge() ms':>10} {'judged every':>12} {'added ms/step':>13} "
        f"{'share of wall':>13} {'unrationed share':>16}"
    )
    print(f"one check on a long history, at check_every={ce} and a {step_s * 1e3:.1f} ms step:")
    print(hdr)
    print("-" * len(hdr))
    for c in costs:
        print(
            f"{c['records']:>9} {c['judge_s'] * 1e3:>10.1f} {c['judged_every_steps']:>12} "
            f"{c['added_s_per_step'] * 1e3:>13.3f} {c['share_of_wall']:>13.2%} {c['unrationed_share_of_step']:>16.2%}"
        )
    print()
    print(
        f"Targets: log() between checks adds <= {TARGET_BETWEEN_SHARE:.0%} of a step of >= {MIN_STEP_MS:g} ms; "
        f"judging at a check stays within the ration of Guardian.affordable (<= 1/JUDGE_COST_RATIO = "
        f"{1 / JUDGE_COST_RATIO:.0%} of the wall time). Syncs are calls from inside Monitor.log that would make "
        "the host wait for a GPU (Tensor.item, .cpu, .tolist, float(t) ...); on CPU they are counted, not felt."
    )

    result = {
        "torch": torch.__version__,
        "threads": args.threads,
        "device": args.device,
        "quick": args.quick,
        "clip": args.clip,
        "check_every": ce,
        "model": {
            "blocks": args.blocks,
            "width": args.width,
            "batch": batch,
            "param_tensors": n_tensors,
            "params": n_params,
        },
        "calibration_step_s": calib_s,
        "step_s": step_s,
        "rounds": rounds,
        "ratios": ratios,
        "ratio_median": statistics.median(ratios),
        "added_s_per_step_rounds": statistics.median(diffs),
        "log_s_between_checks": log_between,
        "log_s_at_checks": log_check,
        "judge_s_at_checks": judge_mean,
        "log_calls_between_checks": len(between),
        "log_calls_at_checks": len(at_check),
        "judgements": n_judged,
        "judging_share": judging_share,
        "syncs": {
            "per_step_between_checks": max(syncs_between, default=0),
            "mean_between_checks": statistics.fmean(syncs_between) if syncs_between else 0.0,
            "per_check": max(syncs_check, default=0),
            "calls_between_checks": len(syncs_between),
            "calls_at_checks": len(syncs_check),
            "by_name_between_checks": dict(names_between),
            "by_name_at_checks": dict(names_check),
        },
        "judge_cost": costs,
        "probes": {
            "layers_share_per_cycle": layers_shares,
            "layers_share": layers_share,
            "layers_probe_host_share_per_cycle": probe_layers,
            "layers_probe_host_share": probe_share,
            "activations_share_per_cycle": acts_shares,
            "activations_share": acts_share,
            "activations_probe_host_share": probe_acts_share,
            "plain_mean_step_s": plain,
            "activations_mean_step_s": acts,
        },
        "targets": {
            "layers_max_share": TARGET_LAYERS_SHARE,
            "layers_share": judged_share,
            "layers_met": layers_met,
            "between_checks_max_share": TARGET_BETWEEN_SHARE,
            "min_step_s": MIN_STEP_MS / 1e3,
            "judging_max_share": 1 / JUDGE_COST_RATIO,
            "between_checks_share": between_share,
            "between_checks_share_per_pair": between_shares,
            "between_checks_met": between_share <= TARGET_BETWEEN_SHARE,
            "judging_within_ration": judging_share <= 1 / JUDGE_COST_RATIO,
        },
    }
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
