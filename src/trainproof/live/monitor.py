"""The in-loop monitor for a raw PyTorch training loop.

    mon = trainproof.monitor(model, optimizer, check_every=50, policy="warn")
    for step, batch in enumerate(loader):
        loss = model(batch).loss
        loss.backward()
        mon.log(step, loss)                 # after backward, before optimizer.step()
        optimizer.step(); optimizer.zero_grad()
    report = mon.report()

Nothing in :meth:`Monitor.log` waits for the device: the gradient norm, the update ratio
and any tensor the caller passes stay on the device as 0-d tensors until the next check,
which copies them to the host in one transfer per device and then judges. In a
distributed run every process records; only the main process (rank 0) prints, writes the
log and calls ``on_alert``, and decisions that change the control flow are agreed by all
processes at the same check (see :mod:`trainproof.live.distributed`).

torch is imported only when a monitor is created, never by ``import trainproof``.
"""

from __future__ import annotations

import inspect
import json
import math
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from ..aliases.vocabulary import is_eval_key
from ..findings import Finding, Level, Report
from ..rules._fmt import step as step_fmt
from ..rules.thresholds import DEFAULT, Thresholds
from . import distributed, stops
from .guardian import Guardian, RunFailed, number
from .probes import ModelProbe

POLICIES = ("warn", "raise", "silent")

#: Recorded steps held on the device at most: with a ``check_every`` above it, the
#: pending steps are copied to the host (and written to the log) every this many steps,
#: which bounds the memory the small per-step tensors take.
MAX_PENDING = 1000


def _require(module: str, extra: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(f'{module} is needed for this; install it with: pip install "trainproof[{extra}]"') from e


def _dtensor_class():
    """``torch.distributed.tensor.DTensor`` once something has imported it (no DTensor
    exists before that, and importing it costs a plain run time), else ``None``."""
    mod = sys.modules.get("torch.distributed.tensor")
    return getattr(mod, "DTensor", None)


def _fsdp1_shard_groups(model) -> dict[int, object]:
    """``id(parameter) -> process group`` for the parameters that FSDP1
    (``FullyShardedDataParallel``) shards in ``model``: its flat parameters and, with
    ``use_orig_params=True``, the original parameters (views into this process's shard).
    Each holds this process's part of the gradient, so their sums of squares add across
    the group (the padding is zeros). Empty when FSDP1 is not in use."""
    mod = sys.modules.get("torch.distributed.fsdp")
    fsdp = getattr(mod, "FullyShardedDataParallel", None)
    out: dict[int, object] = {}
    if fsdp is None:
        return out
    for m in model.modules():
        handle = getattr(m, "_handle", None) if isinstance(m, fsdp) else None
        if handle is None or not getattr(handle, "uses_sharded_strategy", False):
            continue
        group = m.process_group
        flat = handle.flat_param
        for p in [flat, *(getattr(flat, "_params", None) or [])]:
            out[id(p)] = group
    return out


class Monitor:
    """Records a training loop and judges it every ``check_every`` steps.

    Args:
        model: the ``torch.nn.Module`` being trained (its parameters' gradients give the
            gradient norm; with ``track_update_ratio`` their values give the update ratio).
            A ``torch.compile``\\ d module, a DDP-wrapped one and one sharded with FSDP2
            ``fully_shard`` or FSDP1 ``FullyShardedDataParallel`` work as they are.
        optimizer: the ``torch.optim.Optimizer`` (its param groups give the learning rate).
        check_every: copy the recorded steps to the host and judge the history every this
            many :meth:`log` calls (a long history may be judged less often: see
            :meth:`Guardian.affordable`).
        policy: ``"warn"`` prints a new FAIL once; ``"raise"`` raises :class:`RunFailed`
            (carrying the Report) at the first FAIL so the loop can stop and save;
            ``"silent"`` only records.
        mute: rule ids not to run.
        on_alert: called once per new WARN or FAIL finding id (e.g. post a W&B alert);
            only in the main process.
        log_path: also write every record as a JSONL line (``trainproof judge`` reads it).
            The lines of the steps since the last check are written at the next check
            (or :meth:`report`, :meth:`check`, :meth:`close`), since their values reach
            the host only then. Only the main process opens and writes it; the other
            processes of a distributed run ignore it.
        track_update_ratio: record ``update_ratio`` = ||W_after - W_before|| / ||W_after||
            across each optimizer step. Holds one copy of every trainable parameter (the
            model's size again in memory; under FSDP2, this process's shards).
        max_steps: the run's scheduled number of steps, when known (for the schedule rules
            and the share of the run a stop saves).
        thresholds: rule thresholds.
        stop_on: rule ids on which to stop the run whatever the policy (a WARN such as
            TP-OVERFIT, as Lightning's EarlyStopping stops): :meth:`log` raises
            :class:`RunFailed` at the check where the finding has been present ``patience``
            checks in a row (in ``"silent"`` too, without printing).
        patience: checks in a row a ``stop_on`` finding must be present before the stop
            (at least 1; the checks that judged: on a long run judging is rationed, see
            :meth:`Guardian.affordable`).
        save_on_stop: a callable ``save(step)``, called with the step of the stop just
            before :class:`RunFailed` is raised (save a checkpoint there); an exception it
            raises is reported in the stop's message, and the stop goes on.

    A stop's message (``str(RunFailed)``) names the findings it rests on, the measured
    cause of a claim that the loss made no progress, the last good step before the
    finding's onset and the rule's first remedy. Such a claim (TP-DEAD-RUN, TP-FLAT,
    TP-CHANCE-LEVEL…) stops a run still training only with a measured cause (a learning
    rate, update ratio or gradient norm about zero, parameters outside the optimizer or
    none updated); without one it is a WARN saying so and the loop goes on (see
    :mod:`trainproof.live.stops`).
        layers: measure the model at each check step (default on): per-tensor gradient
            norms and update ratios (the change across the optimizer step after the
            ``log()`` before the check), parameters outside the optimizer, frozen in it,
            without a gradient, not updated, non-finite gradients by layer, gradients
            never reset (``zero_grad`` missing). Recorded as ``model/*`` keys of the check
            step (see :mod:`trainproof.live.probes`); costs one copy of the parameters
            during one optimizer step per check, and nothing between checks.
        activations: also hook the activation modules (``nn.ReLU``, ``nn.Tanh``,
            ``nn.Sigmoid``, ``nn.GELU`` ...) for the forward passes of each check step:
            ``model/dead_relu_share``, ``model/saturated_share``,
            ``model/activation_scale_max``. Off by default (it reduces each hooked
            output once per check step); skipped, with a note, on a ``torch.compile``\\ d
            model (adding a hook recompiles it).
        scheduler: the LR scheduler, for ``model/scheduler_steps`` (its ``last_epoch``) and
            the warm-up steps it has left while it stands still (``model/scheduler_warmup_left``).
        scaler: the AMP ``GradScaler``, for ``loss_scale`` and ``model/amp_skipped_steps``.
        replica_every: in a distributed run, compare the replicas' parameter checksums
            at the first two checks and then every this many checks
            (``model/replica_drift``; 0: never).
        history: a run history (an SQLite file or a ``postgresql://`` URL, see
            :mod:`trainproof.history`): :meth:`report` (or :meth:`close`, where no report
            was asked for) judges the ended run against its experiment's recent healthy
            runs there and records it, in the main process; ``None``: nothing is written.
        experiment: the experiment the run is recorded under (default: the folder of
            ``log_path``'s run family, else the current folder).

    Attributes:
        main: whether this process prints, writes ``log_path`` and calls ``on_alert``
            (:func:`trainproof.live.distributed.is_main` when the monitor is created).
        probe: the :class:`~trainproof.live.probes.ModelProbe`; the latest check's layer
            names and notes are also in ``guardian.meta["model_probe"]``.

    Raises:
        ValueError: for an unknown ``policy``.
        ImportError: when torch is not installed.

    The gradient norm is the L2 norm over every gradient: one fused
    ``torch._foreach_norm`` per (device, dtype) group gives float32 per-tensor norms
    (half-precision groups accumulate in float32), whose squares are summed in float64
    (float32 on MPS) on their device and combined on the host at the check. It equals
    ``torch.nn.utils.clip_grad_norm_``'s total norm within float32 rounding; NaN and Inf
    propagate. The update ratio is computed the same way from the kept parameter copy.

    In a distributed run (a ``torch.distributed`` default process group), every process
    records and judges its own history: under DDP the gradients, hence the norms, are the
    same in every process, the losses are each process's own. The main process (rank 0
    when the monitor is created) prints, writes ``log_path`` and calls ``on_alert``; with
    ``policy="raise"`` every process raises at the check where any finds a new FAIL, and
    the main process prints what each found. Sharded gradients (FSDP2 DTensor ``Shard``
    placements, FSDP1 sharded flat parameters) give the global norm: this process's sums
    of squares are kept per step and all-reduced (SUM) over the shard group once per
    check, never per step; replicated and plain gradients are counted once. :meth:`log`,
    :meth:`check`, :meth:`report`, :meth:`close` and reading :attr:`guardian` must be
    called by every process at the same steps: a check runs collectives (whether to
    judge, whether any process found a new FAIL, the sums of sharded gradients).
    """

    def __init__(
        self,
        model,
        optimizer,
        check_every: int = 50,
        policy: str = "warn",
        mute: Iterable[str] = (),
        on_alert: Callable[[Finding], None] | None = None,
        log_path: str | Path | None = None,
        track_update_ratio: bool = False,
        max_steps: int | None = None,
        thresholds: Thresholds = DEFAULT,
        stop_on: Iterable[str] = (),
        patience: int = 1,
        save_on_stop: Callable[[int | float], object] | None = None,
        layers: bool = True,
        activations: bool = False,
        scheduler=None,
        scaler=None,
        replica_every: int = 10,
        history: str | None = None,
        experiment: str | None = None,
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
        self.torch = _require("torch", "torch")
        self.model = model
        self.optimizer = optimizer
        self.check_every = max(1, int(check_every))
        self.policy = policy
        self.main = distributed.is_main()
        meta = {"max_steps": max_steps} if max_steps else {}
        self._guardian = Guardian(
            "<live>",
            "live",
            mute,
            thresholds,
            on_alert if self.main else None,
            meta,
            stop_on=stop_on,
            patience=patience,
            history=history if self.main else None,
            experiment=experiment,
            source=str(log_path) if log_path else None,
        )
        # The denominator of "no trainable tensor was updated" (a measured cause of a stop).
        self._guardian.meta["trainable_tensors"] = sum(1 for p in model.parameters() if p.requires_grad)
        self.save_on_stop = save_on_stop
        self._stopped_on: set[str] = set()
        self.log_path = Path(log_path) if log_path else None
        self._log_file = open(self.log_path, "a", encoding="utf-8") if self.log_path and self.main else None
        self.track_update_ratio = track_update_ratio
        self._dtensor = None
        self._fsdp1: dict[int, object] | None = None  # built at the first log()
        self._prev_params = None  # the preallocated copy of the trainable parameters
        self._prev_key: tuple | None = None
        self._param_list: list | None = None  # see _model_params
        self._grad_plan: tuple | None = None  # see _grad_partials
        self._last_time: float | None = None
        self._calls = 0
        self._warned_vector_loss = False
        self._last_step: int | float | None = None  # the last step recorded (see _step_of)
        self._step_warned = False
        self._announced: set[str] = set()
        # The steps not yet on the host: (step, [(key, spec)]) per step, where a spec is
        # ("v", float) for a host number, ("t", i) for column i, ("sqrt", idxs) for the
        # square root of the sum of columns idxs, ("ratio", num_idxs, den_idxs).
        self._pending: list[tuple[object, list[tuple[str, tuple]]]] = []
        # the evaluation metrics (and the weights' norm) at the previous call, to record a
        # carried evaluation once
        self._last_eval: dict[str, float] = {}
        self._cols: list = []  # 0-d tensors on their devices, float64 (float32 on MPS)
        self._shard_cols: dict[tuple, list[int]] = {}  # shard-group key -> columns to sum
        self._shard_groups: dict[tuple, list] = {}  # shard-group key -> process groups
        #: The model-level measurements at the check steps (see :mod:`trainproof.live.probes`).
        self.probe = ModelProbe(model, optimizer, layers, activations, scheduler, scaler, replica_every)

    @property
    def guardian(self) -> Guardian:
        """The :class:`Guardian` holding the history, with every logged step in it: reading
        it copies the pending steps to the host first (in a distributed run with sharded
        gradients that is a collective, so read it in every process)."""
        self._flush()
        return self._guardian

    @guardian.setter
    def guardian(self, value: Guardian) -> None:
        self._guardian = value

    # --- measurements -------------------------------------------------------------------
    def _params(self, params=None):
        """The trainable parameters (of ``params``, default the model's)."""
        return [p for p in (self.model.parameters() if params is None else params) if p.requires_grad]

    def _acc_dtype(self, device):
        """The dtype the sums of squares accumulate in: float64, or float32 on a device
        without float64 (MPS)."""
        torch = self.torch
        return torch.float32 if device.type == "mps" else torch.float64

    def _local(self, t, owner=None):
        """``(tensor, shard_key)``: the tensor to square and sum in this process, and the
        key of the process groups its sum is added over (``None``: counted once).

        A DTensor contributes its local part; the sums of its ``Shard`` mesh dimensions
        are added across those dimensions' groups, its ``Replicate`` ones counted once.
        A tensor of a parameter ``owner`` that FSDP1 shards is added across the FSDP
        process group. A sparse COO gradient contributes its coalesced values (a row that
        appears twice in the batch is one row of the gradient)."""
        torch = self.torch
        key = None
        if self._dtensor is not None and isinstance(t, self._dtensor):
            dims = tuple(i for i, p in enumerate(t.placements) if p.is_shard())
            if dims:
                mesh = t.device_mesh
                key = (id(mesh), dims)
                if key not in self._shard_groups:
                    self._shard_groups[key] = [mesh.get_group(d) for d in dims]
            t = t.to_local()
        elif owner is not None and self._fsdp1 and id(owner) in self._fsdp1:
            group = self._fsdp1[id(owner)]
            key = ("fsdp1", id(group))
            self._shard_groups.setdefault(key, [group])
        if t.layout == torch.sparse_coo:
            t = t.coalesce().values()
        elif t.layout != torch.strided:
            t = t.values()
        return t, key

    def _sumsq(self, pairs) -> list[tuple[object, tuple | None]]:
        """The sum of squares of the tensors of ``(parameter, tensor)`` pairs (see
        :meth:`_local` and :meth:`_sumsq_local`)."""
        return self._sumsq_local([self._local(t, p) for p, t in pairs])

    def _sumsq_local(self, pairs) -> list[tuple[object, tuple | None]]:
        """The sum of squares of ``(local tensor, shard_key)`` pairs, as ``(0-d tensor,
        shard_key)`` partials: one per device and shard key. Each (device, dtype) group
        takes one fused ``torch._foreach_norm``; half-precision groups accumulate in
        float32, the sums in float64. Nothing here waits for the device."""
        torch = self.torch
        groups: dict[tuple, list] = {}
        for local, key in pairs:
            groups.setdefault((key, local.device, local.dtype), []).append(local)
        per_dev: dict[tuple, list] = {}
        for (key, device, dtype), ts in groups.items():
            per_dev.setdefault((key, device), []).append(self._group_sumsq(ts, device, dtype))
        return [(parts[0] if len(parts) == 1 else torch.stack(parts).sum(), key) for (key, _), parts in per_dev.items()]

    def _group_sumsq(self, ts: list, device, dtype):
        """The sum of squares of tensors ``ts`` of one device and dtype, a 0-d tensor on
        that device: one fused ``torch._foreach_norm`` (half precision accumulating in
        float32), the squares summed in :meth:`_acc_dtype`."""
        torch = self.torch
        wide = torch.float32 if dtype.is_floating_point and dtype.itemsize < 4 else None
        try:
            norms = torch._foreach_norm(ts, 2.0, dtype=wide)
        except (RuntimeError, NotImplementedError, TypeError):  # a dtype or device foreach lacks
            norms = [torch.linalg.vector_norm(t, 2.0, dtype=wide) for t in ts]
        return torch.stack(list(norms)).to(self._acc_dtype(device)).square().sum()

    def _grad_partials(self, params: list) -> list[tuple[object, tuple | None]]:
        """The gradient norm's partial sums of squares this step (as :meth:`_sumsq` gives
        them), through a plan of (device, dtype) groups kept until the next check: the
        grouping, not the norm, is most of the Python time on a model of a few hundred
        tensors. The plan is made again whenever the set of parameters with a gradient
        differs from the one it was made for; sharded (DTensor, FSDP1) and sparse
        gradients always take :meth:`_sumsq`."""
        grads = [p.grad for p in params]
        present = [i for i, g in enumerate(grads) if g is not None]
        plan = self._grad_plan
        if plan is None or plan[0] != present:
            plan = self._grad_plan = (present, self._plan_groups(params, grads, present))
        groups = plan[1]
        if groups is None:
            return self._sumsq([(params[i], grads[i]) for i in present])
        torch = self.torch
        per_dev: dict = {}
        for device, dtype, idxs in groups:
            per_dev.setdefault(device, []).append(self._group_sumsq([grads[i] for i in idxs], device, dtype))
        return [(parts[0] if len(parts) == 1 else torch.stack(parts).sum(), None) for parts in per_dev.values()]

    def _plan_groups(self, params: list, grads: list, present: list[int]) -> list[tuple] | None:
        """``(device, dtype, indices)`` of the gradients ``present``, grouped; ``None``
        when one of them is sharded or not a dense tensor (see :meth:`_local`)."""
        self._discover()
        torch = self.torch
        groups: dict[tuple, list[int]] = {}
        for i in present:
            g = grads[i]
            sharded = (self._dtensor is not None and isinstance(g, self._dtensor)) or (
                self._fsdp1 and id(params[i]) in self._fsdp1
            )
            if sharded or g.layout != torch.strided:
                return None
            groups.setdefault((g.device, g.dtype), []).append(i)
        return [(device, dtype, idxs) for (device, dtype), idxs in groups.items()]

    def _push_any(self, t) -> int:
        """Append a tensor of any shape to the device buffer (detached, in the dtype of the
        sums); returns its column index. It is read with the other columns of its device."""
        t = t.detach()
        self._cols.append(t.to(self._acc_dtype(t.device)))
        return len(self._cols) - 1

    def _push(self, partials) -> list[int]:
        """Append partial sums to the device buffer; returns their column indices."""
        idxs = []
        for t, key in partials:
            idxs.append(len(self._cols))
            self._cols.append(t)
            if key is not None:
                self._shard_cols.setdefault(key, []).append(idxs[-1])
        return idxs

    def _discover(self) -> None:
        """Find which parameters are sharded: DTensors (FSDP2) once their module is
        imported, FSDP1's flat parameters at the first call."""
        if self._dtensor is None:
            self._dtensor = _dtensor_class()
        if self._fsdp1 is None:
            self._fsdp1 = _fsdp1_shard_groups(self.model)

    def _grads(self, params=None):
        """``(parameter, gradient)`` for the parameters (of ``params``, default the
        model's) that have a gradient. The sums are taken under ``torch.no_grad``, so a
        gradient with a graph (``create_graph=True``) grows no graph."""
        self._discover()
        return [(p, p.grad) for p in (self.model.parameters() if params is None else params) if p.grad is not None]

    def grad_norm(self) -> float:
        """Total L2 norm of the gradients of the parameters that have one (NaN/Inf kept;
        NaN when none has a gradient), in the gradients' units.

        Waits for the device (it returns a Python float; :meth:`log` does not). Under
        FSDP2 it sums the sharded parts across processes: a collective, so call it in
        every process.
        """
        grads = self._grads()
        if not grads:
            return float("nan")
        total = 0.0
        with self.torch.no_grad():
            partials = self._sumsq(grads)
        for t, key in partials:
            if key is not None:
                t = t.clone()
                for group in self._shard_groups[key]:
                    self.torch.distributed.all_reduce(t, group=group)
            total += float(t.item())
        return math.sqrt(total)

    def _update_ratio_spec(self, params=None) -> tuple | None:
        """``("ratio", num_idxs, den_idxs)`` comparing the trainable parameters now with the
        copy kept at the previous call, then refreshing that copy in place; ``None`` at the
        first call or when the parameters changed (their number, shapes, dtypes or
        devices). Fused ``torch._foreach_*`` ops, no allocation per step beyond the norms."""
        torch = self.torch
        self._discover()
        with torch.no_grad():
            params = self._params(params)
            key = tuple((id(p), p.shape, p.dtype, p.device) for p in params)
            pairs = [self._local(p, p) for p in params]
            now = [t for t, _ in pairs]
            if self._prev_params is None or key != self._prev_key:
                self._prev_params = [t.clone() for t in now]
                self._prev_key = key
                return None
            if now:
                torch._foreach_sub_(self._prev_params, now)  # prev := W_before - W_after
            num = self._sumsq_local([(d, k) for d, (_, k) in zip(self._prev_params, pairs)])
            den = self._sumsq_local(pairs)
            if now:
                torch._foreach_copy_(self._prev_params, now)
        return ("ratio", self._push(num), self._push(den))

    # --- the loop -----------------------------------------------------------------------
    def _scalar_loss(self, loss):
        """``loss`` as one value: a tensor of several elements (a per-sample loss, as
        ``reduction="none"`` gives) is recorded as its mean, with one warning on stderr;
        anything else as given (:meth:`_spec` keeps numbers and one-element tensors)."""
        torch = self.torch
        if isinstance(loss, torch.Tensor) and loss.numel() > 1 and loss.is_floating_point():
            if not self._warned_vector_loss:
                self._warned_vector_loss = True
                print(
                    f"trainproof: the loss given to log() has {loss.numel()} elements; their mean is recorded "
                    "(pass the reduced loss to record what backward() was called on)",
                    file=sys.stderr,
                )
            return loss.detach().float().mean()
        return loss

    def _spec(self, value) -> tuple | None:
        """How a logged value is kept until the next flush: a host number as ``("v", x)``,
        a one-element real or integer tensor as a device column (detached, no copy to the
        host), anything else ``None`` (dropped, as :func:`numbers` drops it)."""
        torch = self.torch
        if isinstance(value, torch.Tensor):
            if value.numel() != 1 or value.dtype == torch.bool or value.dtype.is_complex:
                return None
            if value.device.type == "meta":
                return None
            t = value.detach().reshape(()).to(self._acc_dtype(value.device))
            self._cols.append(t)
            return ("t", len(self._cols) - 1)
        x = number(value)
        return None if x is None else ("v", x)

    def _step_of(self, step) -> int | float:
        """The step to record for what the loop passed as ``step``.

        A Python, numpy or one-element torch number (a tensor on an accelerator is read
        now: the step orders the record) that is finite is the step, an integer-valued one
        as an ``int``. Anything else (``None``, a string, a number too large for a float, a
        NaN) is not used: the monitor's own count stands in for it (one more than the last
        step recorded, or the number of calls so far), and the first time a line on stderr
        says so. Never raises: this runs inside the training loop.
        """
        x = number(step)
        if x is not None and math.isfinite(x):
            v: int | float = int(x) if x.is_integer() and abs(x) <= 2**53 else x
        else:
            v = self._calls if self._last_step is None else self._last_step + 1
            if not self._step_warned:
                self._step_warned = True
                if self.policy != "silent" and self.main:
                    shown = repr(step)
                    shown = shown if len(shown) <= 60 else shown[:57] + "..."
                    print(
                        f"trainproof: mon.log() got a step it cannot use ({type(step).__name__} {shown}): the "
                        f"monitor counts the steps itself from step {v:g} (said once)",
                        file=sys.stderr,
                    )
        self._last_step = v
        return v

    def log(self, step: int, loss, eval_loss=None, **metrics) -> None:
        """Record one step: call after ``loss.backward()`` and before ``optimizer.step()``.

        Records ``loss``, the gradient norm, the learning rate of each param group
        (``lr``, then ``lr_group_1``…), the wall time in seconds since the previous call
        returned (``step_time``; judging time excluded), ``eval_loss`` when given, and any
        other ``metrics`` that are numbers (Python or numpy numbers, one-element tensors).
        With ``track_update_ratio``, ``update_ratio`` compares the parameters now with
        those at the previous call, so it measures the optimizer step taken after the
        previous call. At a check step the record also holds the ``model/*``
        measurements (see ``layers``). Non-finite values are recorded, never raised on.
        An evaluation metric (``eval_loss``, ``val_*``, ``*_val``…) passed at consecutive
        calls with one value to the bit, while the model's weights changed between them (their
        norm, measured at calls that pass one), is recorded at the first of them: a loop that
        passes its latest evaluation at every call passes one measurement many times, and
        the copies would read as an eval loss frozen by a model that stopped changing. Over
        weights that did not change the repeat is recorded: it is that evidence. An
        evaluation passed only at the steps that compute it is recorded every time.

        ``loss`` and the metrics may be tensors (a 0-d loss as it comes out of the model):
        they are detached and kept on their device with the gradient norm until the next
        check, so between checks this call never waits for the device. At every
        ``check_every``-th call the pending steps go to the host in one transfer per
        device, are written to ``log_path`` and added to the history, which is then judged.

        ``step`` may be a Python, numpy or torch number; a step that is no finite number
        is replaced by the monitor's own count, with one warning on stderr (see
        :meth:`_step_of`): a bad step never stops the training loop.

        Raises:
            RunFailed: with ``policy="raise"``, when a judgement finds a FAIL (in a
                distributed run: in every process, at the same call, when any process
                finds one).
        """
        step = self._step_of(step)
        values: dict[str, object] = {"loss": self._scalar_loss(loss), "grad_norm": _GRAD}
        for i, group in enumerate(self.optimizer.param_groups):
            values["lr" if i == 0 else f"lr_group_{i}"] = group.get("lr", float("nan"))
        if self._last_time is not None:
            values["step_time"] = time.perf_counter() - self._last_time
        if eval_loss is not None:
            values["eval_loss"] = eval_loss
        values.update(metrics)
        entries: dict[str, tuple] = {}
        probe = self.probe
        probe.on_log()
        params = self._model_params()
        for k, v in values.items():
            if v is _GRAD:
                with self.torch.no_grad():
                    partials = self._grad_partials(params)
                # No tensor with a gradient (a loss computed from detached outputs): no
                # gradient norm to record, which is not a non-finite one (TP-NAN-GRAD).
                spec = ("sqrt", self._push(partials)) if partials else None
            else:
                spec = self._spec(v)
            if spec is not None:
                entries[str(k)] = spec
        if any(is_eval_key(k) for k in entries):
            # This process's own part of the weights (no collective: a loop may pass its
            # evaluation on one rank only); it changes whenever the weights do.
            self._discover()
            with self.torch.no_grad():
                local = [(self._local(p.detach(), p)[0], None) for p in params]
                entries[_WEIGHTS] = ("sqrt", self._push(self._sumsq_local(local)))
        if self.track_update_ratio:
            r = self._update_ratio_spec(params)
            if r is not None:
                entries["update_ratio"] = r
        if (self._calls + 1) % self.check_every == 0:
            probe.on_loss(loss)
            deferred = probe.collect()
            entries[_PROBE] = ("probe", [self._push_any(t) for t in deferred.tensors], deferred.finish)
        if (self._calls + 2) % self.check_every == 0:
            probe.arm()  # the optimizer step and forward passes before the next check
        self._pending.append((step, list(entries.items())))
        self._calls += 1
        if self._calls % self.check_every == 0:
            self._flush()
            # Every process takes the same branch, so all run the same collectives.
            if distributed.all_ranks(self._guardian.affordable()):
                self._judge()
        elif len(self._pending) >= MAX_PENDING:
            self._flush()
        # Measured from here, so the time spent judging is not charged to the next step.
        self._last_time = time.perf_counter()

    def _model_params(self) -> list:
        """The model's parameters, listed again after each check: walking the modules costs
        about as much as the fused norm itself on a model of a few hundred tensors, so it
        is not done on every step. A parameter added to the model between two checks is
        measured from the next check on."""
        if self._param_list is None:
            self._param_list = list(self.model.parameters())
        return self._param_list

    def _flush(self) -> None:
        """Copy the pending steps to the host (sharded sums first reduced across their
        process groups; then one stack and transfer per device), add them to the history
        and write their log lines."""
        self._param_list = self._grad_plan = None
        if not self._pending:
            return
        torch = self.torch
        cols = self._cols
        for key, idxs in self._shard_cols.items():
            t = torch.stack([cols[i] for i in idxs])
            for group in self._shard_groups[key]:
                torch.distributed.all_reduce(t, group=group)
            for j, i in enumerate(idxs):
                cols[i] = t[j]
        host: list = [math.nan] * len(cols)
        by_dev: dict[object, list[int]] = {}
        for i, t in enumerate(cols):
            by_dev.setdefault(t.device, []).append(i)
        for idxs in by_dev.values():
            # One transfer per device: the 0-d columns and the probe's vectors, flattened.
            flat = torch.cat([cols[i].reshape(-1) for i in idxs]).tolist()
            at = 0
            for i in idxs:
                n = cols[i].numel()
                host[i] = flat[at] if cols[i].dim() == 0 else flat[at : at + n]
                at += n
        pending = self._pending
        self._pending, self._cols, self._shard_cols = [], [], {}

        def value(spec: tuple) -> float:
            kind = spec[0]
            if kind == "v":
                return spec[1]
            if kind == "t":
                return host[spec[1]]
            if kind == "sqrt":
                return math.sqrt(sum(host[i] for i in spec[1]))
            num = math.sqrt(sum(host[i] for i in spec[1]))
            den = math.sqrt(sum(host[i] for i in spec[2]))
            return num / den if den > 0 else float("nan")

        for step, entries in pending:
            nums: dict = {}
            passed: dict[str, float] = {}
            weights = next((value(s) for k, s in entries if k == _WEIGHTS), None)
            moved = weights is not None and weights != self._last_eval.get(_WEIGHTS)
            for k, s in entries:
                if k == _WEIGHTS:
                    passed[k] = value(s)
                elif s[0] == "probe":
                    nums.update(s[2]([host[i] for i in s[1]]))
                    self._guardian.meta["model_probe"] = {"step": step, **self.probe.details}
                else:
                    x = value(s)
                    if is_eval_key(k):
                        passed[k] = x
                        if moved and x == self._last_eval.get(k):
                            continue  # the previous call's evaluation passed again over new weights
                    nums[k] = x
            self._last_eval = passed
            self._guardian.add(float(step), nums)
            if self._log_file is not None:
                self._log_file.write(json.dumps({"step": step, **nums}) + "\n")
        if self._log_file is not None:
            self._log_file.flush()

    def _judge(self) -> Report:
        g = self._guardian
        rep = g.judge()
        new_fail = [f for f in rep.findings if f.level is Level.FAIL and f.id not in self._announced]
        for f in new_fail:
            self._announced.add(f.id)
        at = self._last_step if self._last_step is not None else int(g.records and rep.step_range[1])
        said = None
        if new_fail:
            said = f"FAIL at step {int(g.records and rep.step_range[1])}: " + "; ".join(
                f"{f.id}: {f.message}" for f in new_fail
            )
        chosen = [f for f in g.chosen_stops(rep) if f.id not in self._stopped_on]
        basis = new_fail if self.policy == "raise" and new_fail else chosen
        # Every process stops at the same call when any found a new FAIL (or a chosen
        # finding), so none is left waiting in a collective the others have left; the main
        # process tells what each found (another rank's loss may fail where its own does not).
        stop = (self.policy == "raise" or bool(g.stop_on)) and distributed.any_rank(bool(basis))
        message = None
        if basis:
            run = g.runlog()
            if basis is new_fail:
                extra = stops.advice(basis, run, None, g.thresholds)
                said = f"{said}. {extra}"
                message = f"{rep.summary or said} {extra}"
            else:
                text = stops.stop_text(
                    f"stopping the run at step {step_fmt(at)}", basis, run, None, g.thresholds, g.stop_on, g.patience
                )
                said = f"{said}; {text}" if said else text
                message = text
        lines = [said]
        if stop:
            lines = distributed.all_gather(said)
        if self.policy != "silent" and self.main:
            for f in g.new_findings:
                # A claim that would have stopped the run before (say why it does not), and a
                # run fallen behind its siblings (a WARN the loop should hear of at once).
                if f.data.get("uncaused") or f.id == "TP-BEHIND-ENVELOPE":
                    print(f"trainproof: WARN at step {step_fmt(at)}: {f.id}: {f.message}", file=sys.stderr)
            for r, line in enumerate(lines):
                if line is not None:
                    print(f"trainproof: {line}" if r == 0 else f"trainproof (rank {r}): {line}", file=sys.stderr)
        if stop:
            self._stopped_on.update(f.id for f in chosen)
            message = message or "trainproof stopped the run: a finding that stops it was found in another process."
            if self.save_on_stop is not None:
                try:
                    self.save_on_stop(at)
                    message += f" save_on_stop saved at step {step_fmt(at)}."
                except Exception as e:  # noqa: BLE001 - the stop goes on; the message says why nothing was saved
                    message += f" save_on_stop failed: {type(e).__name__}: {e}."
            raise RunFailed(rep, message, basis)
        return rep

    def check(self) -> Report:
        """Copy the pending steps to the host, judge the history now, announce new findings
        and apply the policy.

        Raises:
            RunFailed: with ``policy="raise"``, at a new FAIL (in any process).
        """
        self._flush()
        return self._judge()

    def report(self, print_it: bool = True) -> Report:
        """Judge the whole history (pending steps included) as a run that has ended, print
        the verdict (unless ``print_it`` is False, or this is not the main process) and
        return the Report. Call it after the loop: the checks during the loop hold the
        claims of no progress to more evidence (see :meth:`Guardian.judge`)."""
        self._flush()
        rep = self._guardian.record(self._guardian.judge(charts=True, final=True))
        if print_it and self.main:
            from rich.console import Console

            from ..render.text import render

            render(Console(stderr=True, highlight=False), [rep])
        if rep.history_error is not None and self.main:
            print(f"trainproof: the run was not recorded: {rep.history_error}", file=sys.stderr)
        return rep

    def close(self) -> None:
        """Write the pending steps to the history and the log, then close the log
        (idempotent). With a history and no :meth:`report` since the last step, the ended
        run is judged and recorded here."""
        self._flush()
        g = self._guardian
        if g.unrecorded:
            # only the main process has a history: nothing here may wait for the others
            rep = g.record(g.judge(final=True))
            if rep.history_error is not None:
                print(f"trainproof: the run was not recorded: {rep.history_error}", file=sys.stderr)
        self.probe.close()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None


#: The placeholder of the gradient norm while a step's values are gathered.
_GRAD = object()
#: The entry of a check step that holds the probe's measurements (several keys).
_PROBE = "\x00model_probe"
#: The entry of a record that holds the weights' norm at a call that passed an evaluation
#: metric (read, not recorded): an evaluation repeated to the bit is a carried one only if
#: the weights changed since the call before.
_WEIGHTS = "\x00weights_norm"


def monitor(model, optimizer, *args, **kwargs) -> Monitor:
    """Start monitoring a raw PyTorch loop: ``Monitor(model, optimizer, ...)``, with the
    same arguments in the same order (see :class:`Monitor`; its signature is this
    function's, for ``help()`` and ``inspect.signature``)."""
    return Monitor(model, optimizer, *args, **kwargs)


monitor.__signature__ = inspect.signature(Monitor).replace(return_annotation=Monitor)  # type: ignore[attr-defined]


#: The former name of :func:`monitor`.
watch = monitor
