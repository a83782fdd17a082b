"""Small real training problems and the documented monitor loop, for tests/live/test_monitor_grid.py.

Every run is the snippet of docs/live.md::

    mon = trainproof.watch(model, optimizer, check_every=10, policy="raise", max_steps=STEPS)

around a plain loop on one of three problems built here from fixed seeds (nothing is
downloaded): ``clf``, a 4-class classifier (an MLP on four Gaussian clusters,
cross-entropy, loss near 1.4 at the start); ``reg``, an MLP fitting ``tanh(x·w)`` (MSE
near 0.8); ``offset``, the regression of issue 31 whose targets sit near 2 with a spread
of 2, so the MSE starts near 8 and Adam at 1e-4 takes hundreds of steps to move it.
"""

from __future__ import annotations

import dataclasses
import math

import torch

import trainproof
from trainproof import Level, RunFailed

PROBLEMS = ("clf", "reg", "offset")


@dataclasses.dataclass(frozen=True)
class Config:
    """One training run: problem, optimizer and its learning rate, schedule, seed, batch,
    length, and the fault it carries (``None`` for a healthy run)."""

    problem: str = "offset"
    opt: str = "adam"  # adam, adamw, sgd, sgd_momentum
    lr: float = 1e-4
    seed: int = 0
    batch: int = 32
    steps: int = 300
    warmup: int = 0  # linear warm-up steps, then cosine decay to 0 at ``steps``
    fault: str | None = None  # lr_high, lr_zero, requires_grad_off, not_in_optimizer, nan_at
    fault_step: int = 0  # for nan_at: the first step whose logged loss is NaN
    check_every: int = 10
    max_steps: bool = True  # declare ``max_steps=steps`` to the monitor

    @property
    def name(self) -> str:
        bits = [self.problem, f"{self.opt}{self.lr:g}", f"s{self.seed}", f"b{self.batch}", f"n{self.steps}"]
        if self.warmup:
            bits.append(f"warm{self.warmup}cos")
        if self.fault:
            bits.append(self.fault + (str(self.fault_step) if self.fault == "nan_at" else ""))
        if not self.max_steps:
            bits.append("unscheduled")
        return "-".join(bits)


@dataclasses.dataclass
class Outcome:
    """What a run did: ``stopped_at`` (the step whose ``mon.log`` raised, else ``None``),
    the :class:`RunFailed`, the logged losses and the monitor."""

    config: Config
    stopped_at: int | None
    error: RunFailed | None
    losses: list[float]
    monitor: object

    @property
    def fail_ids(self) -> set[str]:
        return set() if self.error is None else {f.id for f in self.error.report.findings if f.level is Level.FAIL}

    def describe(self) -> str:
        """The FAIL findings behind a stop, one per line, with their numbers."""
        if self.error is None:
            return f"{self.config.name}: not stopped"
        return f"{self.config.name}: stopped at step {self.stopped_at}\n" + "\n".join(
            f"  {f.id}: {f.message} | {f.evidence} | {f.data}"
            for f in self.error.report.findings
            if f.level is Level.FAIL
        )


def make_problem(problem: str, seed: int, samples: int = 2048):
    """(inputs, targets, model, loss function) of a small problem, fixed by ``seed``:
    ``clf`` (4 Gaussian clusters, 1,024 points, cross-entropy), ``reg`` (a tanh regression
    of ``samples`` points, MSE) or ``offset`` (the same scaled by 2 around 2)."""
    g = torch.Generator().manual_seed(1000 + seed)
    d = 8
    if problem == "clf":
        k = 4
        centers = 2.0 * torch.randn(k, d, generator=g)
        y = torch.randint(0, k, (1024,), generator=g)
        x = centers[y] + torch.randn(1024, d, generator=g)
        torch.manual_seed(seed)
        model = torch.nn.Sequential(torch.nn.Linear(d, 32), torch.nn.ReLU(), torch.nn.Linear(32, k))
        return x, y, model, torch.nn.functional.cross_entropy
    x = torch.randn(samples, d, generator=g)
    w = torch.randn(d, 1, generator=g)
    if problem == "reg":
        y = torch.tanh(x @ w) + 0.05 * torch.randn(samples, 1, generator=g)
    elif problem == "offset":
        y = 2.0 * torch.tanh(x @ w) + 2.0 + 0.1 * torch.randn(samples, 1, generator=g)
    else:
        raise ValueError(problem)
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(d, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    return x, y, model, torch.nn.functional.mse_loss


def make_optimizer(params, opt: str, lr: float):
    if opt == "adam":
        return torch.optim.Adam(params, lr=lr)
    if opt == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    if opt == "sgd_momentum":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    if opt == "sgd":
        return torch.optim.SGD(params, lr=lr)
    raise ValueError(opt)


def warmup_cosine(warmup: int, steps: int):
    """The LambdaLR factor: linear from 1/warmup to 1 over ``warmup`` steps, then a cosine
    down to 0 at ``steps``."""

    def factor(s: int) -> float:
        if s < warmup:
            return (s + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * min(1.0, (s - warmup) / max(1, steps - warmup))))

    return factor


def train(c: Config, policy: str = "raise") -> Outcome:
    """Run the documented monitor loop on ``c``; see :class:`Outcome`."""
    x, y, model, loss_fn = make_problem(c.problem, c.seed)
    params = list(model.parameters())
    if c.fault == "requires_grad_off":
        # Every weight frozen; a zero-weighted anchor keeps backward() legal, so every
        # gradient the monitor sees is exactly 0.
        for p in params:
            p.requires_grad_(False)
        model.register_parameter("anchor", torch.nn.Parameter(torch.zeros(())))
        params = [model.anchor]
    elif c.fault == "not_in_optimizer":
        # The weights get gradients, but the optimizer holds another parameter.
        params = [torch.nn.Parameter(torch.zeros(()))]
    lr = {"lr_high": 10.0 if c.opt.startswith("sgd") else 1.0, "lr_zero": 0.0}.get(c.fault, c.lr)
    optimizer = make_optimizer(params, c.opt, lr)
    sched = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(c.warmup, c.steps)) if c.warmup else None
    g = torch.Generator().manual_seed(c.seed + 7)
    losses: list[float] = []
    mon = trainproof.watch(
        model, optimizer, check_every=c.check_every, policy=policy, max_steps=c.steps if c.max_steps else None
    )
    step = -1
    try:
        for step in range(c.steps):
            idx = torch.randint(0, x.shape[0], (c.batch,), generator=g)
            loss = loss_fn(model(x[idx]), y[idx])
            if c.fault == "requires_grad_off":
                loss = loss.detach() + 0 * model.anchor
            optimizer.zero_grad()
            loss.backward()
            value = loss.item()
            if c.fault == "nan_at" and step >= c.fault_step:
                value = float("nan")
            losses.append(value)
            mon.log(step, value)
            optimizer.step()
            if sched is not None:
                sched.step()
    except RunFailed as e:
        return Outcome(c, step, e, losses, mon)
    return Outcome(c, None, None, losses, mon)
