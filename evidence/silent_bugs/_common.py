"""What the silent-bug programs share: the synthetic task, the tiny models, and starting
and finishing the monitor the same way in every program.

Every program trains on CPU, in one thread (the results are the same on every run), on
data generated here from a fixed seed: nothing is downloaded. The task is a 10-class
classification of 20-dimensional Gaussian inputs labelled by a fixed random teacher
network, so a healthy learner's loss falls from ln(10) ~ 2.30 well below it within a few
hundred steps.
"""

from __future__ import annotations

import inspect
import json
import os
import tempfile
from collections.abc import Iterator

import torch
from torch import nn

import trainproof

#: The length of every run in optimizer steps (``mon.log`` calls), the monitor's check
#: interval, and so the first 10 % of a run (the gallery's target for an early catch) is
#: its first 3 checks.
STEPS = 300
CHECK_EVERY = 10
#: The task: input width, classes, samples, batch size.
D_IN, CLASSES, N, BATCH = 20, 10, 4096, 64


def setup(seed: int = 0) -> None:
    """Fix the seed and use one thread, so a program gives the same numbers on every run
    (and takes one core of a shared machine)."""
    torch.manual_seed(seed)
    torch.set_num_threads(1)


#: Held-out samples of the same task (see :func:`holdout`).
HOLDOUT = 512


def _labelled(seed: int = 1234) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    w1 = torch.randn(D_IN, 64, generator=g) / D_IN**0.5
    w2 = torch.randn(64, CLASSES, generator=g) / 8.0
    x = torch.randn(N + HOLDOUT, D_IN, generator=g)
    y = (torch.tanh(x @ w1) @ w2).argmax(dim=1)
    return x, y


def task() -> tuple[torch.Tensor, torch.Tensor]:
    """``(x, y)``: the :data:`N` training inputs of shape ``(N, D_IN)`` (float32) and
    their labels ``(N,)`` (int64, in ``0..CLASSES-1``), the argmax of a fixed random
    teacher MLP."""
    x, y = _labelled()
    return x[:N], y[:N]


def holdout() -> tuple[torch.Tensor, torch.Tensor]:
    """``(x, y)``: :data:`HOLDOUT` more samples of the same task, never trained on."""
    x, y = _labelled()
    return x[N:], y[N:]


def batches(x: torch.Tensor, y: torch.Tensor, batch: int = BATCH, seed: int = 0) -> Iterator[tuple]:
    """Shuffled mini-batches ``(xb, yb)`` over the data, epoch after epoch, forever."""
    g = torch.Generator().manual_seed(seed)
    while True:
        order = torch.randperm(len(x), generator=g)
        for i in range(0, len(x) - batch + 1, batch):
            idx = order[i : i + batch]
            yield x[idx], y[idx]


def mlp(hidden: int = 64, depth: int = 2, act: type[nn.Module] = nn.ReLU) -> nn.Sequential:
    """A ``depth``-hidden-layer MLP ``D_IN -> hidden -> ... -> CLASSES`` (logits)."""
    layers: list[nn.Module] = []
    width = D_IN
    for _ in range(depth):
        layers += [nn.Linear(width, hidden), act()]
        width = hidden
    layers.append(nn.Linear(width, CLASSES))
    return nn.Sequential(*layers)


def muted() -> tuple[str, ...]:
    """The rule ids every program mutes: the speed rules (group ``speed``: TP-STEP-CLIFF,
    TP-LOADER-BOUND), which judge the wall-clock step time. These programs' steps take
    under a millisecond on a machine shared with other work, so their step times say how
    busy the machine was, not how the training went, and differ from run to run."""
    from trainproof.rules import registry

    return tuple(sorted(r.id for r in registry.all_rules() if r.group == "speed"))


def supported(**wanted) -> dict:
    """The keyword arguments of ``wanted`` that :func:`trainproof.monitor` accepts: the
    model-level options (``layers``, ``activations``, ``scheduler``, ``scaler``) exist only
    once the model probe is in, and the programs run before and after it."""
    params = inspect.signature(trainproof.monitor).parameters
    return {k: v for k, v in wanted.items() if k in params}


def start(model, optimizer, steps: int = STEPS, scheduler=None, scaler=None, **monitor_kwargs):
    """The monitor every program uses: ``policy="silent"``, a check every
    :data:`CHECK_EVERY` steps, ``max_steps=steps``, the :func:`muted` rules off, the model-level measurements on where
    the monitor has them, and a JSONL log in a temporary file (read back by
    :func:`finish`). ``monitor_kwargs`` override or add to these."""
    fd, path = tempfile.mkstemp(prefix="trainproof-silent-", suffix=".jsonl")
    os.close(fd)
    kwargs = {
        "check_every": CHECK_EVERY,
        "policy": "silent",
        "max_steps": steps,
        "log_path": path,
        "mute": muted(),
        **supported(layers=True, activations=True),
    }
    if scheduler is not None:
        kwargs.update(supported(scheduler=scheduler))
    if scaler is not None:
        kwargs.update(supported(scaler=scaler))
    kwargs.update(monitor_kwargs)
    mon = trainproof.monitor(model, optimizer, **kwargs)
    mon._silent_bugs_log = path  # where finish() reads the history back
    return mon


def finish(mon, steps: int, **extra) -> tuple:
    """``(report, meta)``: the monitor's final report and what the runner needs to replay
    the run's checks: ``steps`` (the ``mon.log`` calls made), ``check_every``,
    ``max_steps``, ``mute`` (the rule ids muted), ``records`` (``[step, {key: number}]`` per logged step, as written to
    the JSONL log; the strings naming layers left out) and the monitor's run meta
    (``model_probe`` where the probe keeps it), plus ``extra`` (what a program measured
    of its own mechanism, e.g. the final loss)."""
    report = mon.report(print_it=False)
    mon.close()
    path = mon._silent_bugs_log
    records = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            step = row.pop("step")
            records.append([step, {k: v for k, v in row.items() if isinstance(v, (int, float))}])
    os.unlink(path)
    meta = {
        "steps": steps,
        "check_every": mon.check_every,
        "max_steps": mon.guardian.meta.get("max_steps", steps),
        "mute": sorted(mon.guardian.mute),
        "records": records,
        "run_meta": _jsonable(mon.guardian.meta),
        **extra,
    }
    return report, meta


def _jsonable(meta: dict) -> dict:
    out = {}
    for k, v in meta.items():
        try:
            json.dumps(v)
        except (TypeError, ValueError):
            continue
        out[k] = v
    return out


def train_classifier(
    model,
    optimizer,
    steps: int = STEPS,
    scheduler=None,
    loss_fn=None,
    data_seed: int = 0,
    after=None,
    **monitor_kwargs,
) -> tuple:
    """The ordinary loop most programs share: forward, cross-entropy, backward,
    ``mon.log``, ``optimizer.step()``, ``zero_grad``, ``scheduler.step()`` per step when
    given. Returns :func:`finish`'s ``(report, meta)`` with ``first_loss`` and
    ``last_loss`` (the mean of the first and last 20 steps' losses) and, when ``after``
    is given, the dict ``after(model)`` returns (what the bug did to the model)."""
    x, y = task()
    loss_fn = loss_fn or nn.CrossEntropyLoss()
    mon = start(model, optimizer, steps, scheduler=scheduler, **monitor_kwargs)
    losses = []
    for step, (xb, yb) in zip(range(steps), batches(x, y, seed=data_seed)):
        loss = loss_fn(model(xb), yb)
        loss.backward()
        mon.log(step, loss)
        optimizer.step()
        optimizer.zero_grad()
        if scheduler is not None:
            scheduler.step()
        losses.append(loss.item())
    return finish(mon, steps, **loss_summary(losses), **(after(model) if after else {}))


def snapshot(model) -> dict[str, torch.Tensor]:
    """A copy of every parameter of ``model``, by name."""
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def unchanged(model, before: dict[str, torch.Tensor]) -> list[str]:
    """The names of ``model``'s parameters bit-identical to their copy in ``before``."""
    return sorted(n for n, p in model.named_parameters() if n in before and torch.equal(p.detach(), before[n]))


def dead_share(layer: nn.Module, inputs: torch.Tensor, model: nn.Module) -> float:
    """The share of ``layer``'s output units (a ReLU) never above 0 over ``inputs``."""
    out = []
    h = layer.register_forward_hook(lambda m, i, o: out.append(o.detach()))
    try:
        with torch.no_grad():
            model(inputs)
    finally:
        h.remove()
    return float((out[0] <= 0).all(dim=0).float().mean())


def loss_summary(losses: list[float]) -> dict:
    """``first_loss`` and ``last_loss``: the mean loss of the first and of the last 20
    steps."""
    k = min(20, len(losses))
    return {"first_loss": sum(losses[:k]) / k, "last_loss": sum(losses[-k:]) / k}
