"""Measurements from the model and the optimizer, taken at the monitor's check steps only.

:class:`ModelProbe` looks at what the in-loop monitor (and the framework callbacks) hold:
the model, its optimizer, optionally the LR scheduler and the AMP ``GradScaler``. At a
check it returns the ``model/*`` metric keys of one record (see :data:`KEYS`), measured on
the device and read with the monitor's own transfer at that check; between checks it costs
a Python bool per :meth:`ModelProbe.on_log` and an integer increment per optimizer step.

The work around one check step:

* at the ``log()`` call before a check (:meth:`ModelProbe.arm`): an optimizer pre-step
  hook, which keeps a copy of the trainable parameters in the optimizer, a hook on each of
  them that sees a backward deliver its gradient until that step ends, and, with
  ``activations=True``, forward hooks on the activation modules;
* in the optimizer step that follows: the per-tensor change ``||W_after - W_before||``,
  ``||W_after||`` and the norm of the gradient applied (fused ``torch._foreach_norm``); the
  copy is dropped at once; then a gradient hook on one small parameter, which looks at the
  gradient the next backward finds already there (``zero_grad`` clears it; nothing else
  does);
* at the check's ``log()``, the loss it is given (:meth:`ModelProbe.on_loss`): a walk of
  at most 256 nodes of its autograd graph, on the host, for a cross-entropy given
  probabilities (:func:`squashed_twice`);
* at the check's ``log()`` (:meth:`ModelProbe.collect`): the per-tensor gradient norms and
  the counts of the optimizer facts; every hook armed for this check is removed. The
  device tensors go back to the caller, which reads them with its other values and hands
  the numbers to :meth:`Deferred.finish`.

Nothing here waits for the device: every count that needs a tensor's value is a tensor
until the caller's read. Layer names never go into a series: the latest details (names,
notes) are in :attr:`ModelProbe.details`, which the monitor puts in
``guardian.meta["model_probe"]``; the record gets them as strings under keys ending in
``_layer`` (readers skip strings).

What is skipped, with a note in the details rather than an error:

* forward hooks on a ``torch.compile``\\ d model (adding a hook recompiles the graph);
* per-layer norms and update ratios of sharded parameters (FSDP2 DTensors, FSDP1 flat
  parameters: one process holds a shard of each, so a per-tensor norm would be a shard's);
  the replica checksum, for the same reason;
* any measurement whose torch call fails on this model or optimizer: it is turned off for
  the rest of the run and the failure noted once.

torch is imported only when a probe is created.
"""

from __future__ import annotations

import math
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

#: Every key a probe may put in a check step's record (numbers; the ``*_layer`` keys of
#: :data:`LAYER_KEYS` are strings). ``loss_scale`` is the existing canonical metric.
KEYS = (
    "model/params_outside_optimizer",
    "model/params_frozen_in_optimizer",
    "model/params_no_grad",
    "model/params_not_updated",
    "model/params_not_updated_step",
    "model/grads_cleared_before_step",
    "model/grad_nonfinite_params",
    "model/eval_mode_share",
    "model/probs_as_logits",
    "model/margin_graph",
    "model/grads_not_reset",
    "model/applied_grad_norm",
    "model/layer_update_ratio_max",
    "model/layer_update_ratio_min",
    "model/layer_grad_norm_max",
    "model/layer_grad_norm_min",
    "model/dead_relu_share",
    "model/dead_relu_rows",
    "model/saturated_share",
    "model/saturated_rows",
    "model/activation_scale_max",
    "model/same_batch",
    "model/replica_drift",
    "model/scheduler_steps",
    "model/scheduler_warmup_left",
    "model/optimizer_steps",
    "model/amp_skipped_steps",
    "loss_scale",
)

#: The string keys: the layer (parameter or module name) a number of :data:`KEYS` is about.
LAYER_KEYS = (
    "model/grad_nonfinite_layer",
    "model/probs_as_logits_layer",
    "model/layer_update_ratio_max_layer",
    "model/layer_update_ratio_min_layer",
    "model/layer_grad_norm_max_layer",
    "model/layer_grad_norm_min_layer",
    "model/dead_relu_layer",
    "model/saturated_layer",
    "model/activation_scale_max_layer",
)

#: A per-layer ratio (gradient norm over the median, update over weight) below this is
#: recorded as this, so that an exactly zero norm gives log10 = -12, not -inf (a value the
#: JSONL log and the rules can carry). An engineering floor: float32 resolves relative
#: changes down to about 1e-7.
RATIO_FLOOR = 1e-12

#: At most this many parameter names are kept per list in the details (parameters
#: outside the optimizer, not updated, without a gradient, ...): enough to name the
#: culprit, bounded for a model of thousands of tensors.
MAX_NAMES = 20

#: The first checks that compare the replicas whatever ``replica_every`` says: a rank
#: built from another seed is apart from the first check, and TP-REPLICA-DRIFT needs two
#: replica checks in a row (``replica_drift_checks``), so it is told at the second check
#: rather than ``replica_every`` checks later. A later drift (a rank that skipped a step)
#: grows from where it starts and waits for the periodic checks.
REPLICA_FIRST_CHECKS = 2

#: Saturation: |tanh| above this, or a sigmoid output within ``1 - SATURATION`` of 0 or 1,
#: counts as saturated (within 1% of the asymptote).
SATURATION = 0.99

#: :func:`warmup_left` looks at most this many scheduler steps ahead: a warm-up still rising
#: there is reported as this long (longer than any run it judges needs to tell).
WARMUP_SCAN = 100_000

_RELU = ("ReLU", "ReLU6")
_SATURATING = ("Tanh", "Sigmoid")
#: Modules whose output scale is recorded too (with ``activations=True``).
_SCALE_ONLY = ("GELU", "SiLU", "LeakyReLU", "ELU", "Softplus", "Mish", "Hardswish", "Hardtanh")
_WRAPPERS = ("DistributedDataParallel", "DataParallel", "FullyShardedDataParallel")


@dataclass
class Deferred:
    """The device part of one check's measurements and what turns it into the record's keys.

    Attributes:
        tensors: tensors on their devices (any shape, any real dtype), read by the caller
            in its own transfer at the check.
        finish: called with the host values of ``tensors`` in order (a float for a
            one-element tensor, a flat list of floats otherwise); returns the record's
            ``model/*`` keys (numbers, and strings under ``*_layer`` keys).
    """

    tensors: list
    finish: Callable[[list], dict]


@dataclass
class _Update:
    """What the armed optimizer step left on the device: per-tensor norms."""

    ids: list[int]  # id() of each parameter, named at the check
    ndims: list[int]
    eps: list[float]  # the float resolution (machine epsilon) of each parameter's dtype
    lrs: list  # float, or a 0-d tensor (a tensor lr is read with the rest)
    diff: object  # 1-d: ||W_after - W_before|| per tensor
    weight: object  # 1-d: ||W_after||
    gnorm: object  # 1-d: ||grad|| applied by the step, of the parameters at gidx
    gidx: list[int]  # the parameters that had a gradient
    sharded: bool = False
    # id() of each parameter a backward gave a gradient in the measured step (None: not known)
    delivered: frozenset[int] | None = None


@dataclass
class _Acts:
    """Forward-hook state of one check step."""

    handles: list = field(default_factory=list)
    alive: dict = field(default_factory=dict)  # module name -> bool tensor of units seen > 0
    rows: dict = field(default_factory=dict)  # module name -> observations of each unit in ``alive``
    saturated: dict = field(default_factory=dict)  # name -> [count tensor, numel, rows]
    sumsq: dict = field(default_factory=dict)  # name -> [float tensor, numel]
    batch: tuple | None = None  # (shape, sum, sum of squares) of the first training input
    # tanh/sigmoid calls of the forward pass under way: (name, output, count tensor, numel, rows),
    # counted once the model's output shows whether the call produced it
    pending: list = field(default_factory=list)
    outputs: set = field(default_factory=set)  # names of modules whose call produced the model's output


def unwrap(model):
    """The module inside the DDP / DataParallel / FSDP1 wrappers and ``torch.compile``'s
    ``OptimizedModule`` (whose own ``training`` flag may not follow the inner model's)."""
    for _ in range(8):
        inner = getattr(model, "_orig_mod", None)
        if inner is None and type(model).__name__ in _WRAPPERS:
            inner = getattr(model, "module", None)
        if inner is None:
            return model
        model = inner
    return model


def unwrap_optimizer(optimizer):
    """The ``torch.optim.Optimizer`` inside a wrapper that holds one as ``.optimizer``
    (accelerate's ``AcceleratedOptimizer``, Lightning's ``LightningOptimizer``): the step
    hooks are the inner optimizer's, since the wrapper's ``step`` calls the inner one's."""
    import torch

    for _ in range(4):
        inner = getattr(optimizer, "optimizer", None)
        if not isinstance(inner, torch.optim.Optimizer):
            return optimizer
        optimizer = inner
    return optimizer


def _strip(name: str) -> str:
    """A parameter or module name without the wrappers' prefixes."""
    for prefix in ("_orig_mod.", "module.", "_fsdp_wrapped_module."):
        name = name.replace(prefix, "")
    return name


def is_compiled(model) -> bool:
    """True when ``model`` or one of its submodules is compiled by ``torch.compile``."""
    if getattr(model, "_orig_mod", None) is not None:
        return True
    try:
        return any(getattr(m, "_compiled_call_impl", None) is not None for m in model.modules())
    except Exception:  # noqa: BLE001 - a model that cannot list its modules is not compiled by us
        return False


#: A loss that applies its own squashing function, and the node of that function in the
#: autograd graph: ``nn.CrossEntropyLoss`` / ``F.cross_entropy`` is log-softmax then NLL,
#: ``BCEWithLogitsLoss`` applies a sigmoid. Each maps to the squashing node that, found
#: as its input, means the input was already a probability.
_SQUASHED_TWICE = {
    "LogSoftmaxBackward0": ("SoftmaxBackward0", "log_softmax(softmax(...)): softmax applied before CrossEntropyLoss"),
    "BinaryCrossEntropyWithLogitsBackward0": (
        "SigmoidBackward0",
        "binary_cross_entropy_with_logits(sigmoid(...)): sigmoid applied before BCEWithLogitsLoss",
    ),
}
#: Nodes that only move, cast or select values (a sequence model's logits reshaped to
#: (tokens, vocabulary) before the loss): the walk from the loss's log-softmax to its input
#: passes through them.
_SHAPE_ONLY = frozenset(
    {
        "ViewBackward0",
        "ReshapeAliasBackward0",
        "UnsafeViewBackward0",
        "PermuteBackward0",
        "TransposeBackward0",
        "TBackward0",
        "SqueezeBackward0",
        "SqueezeBackward1",
        "UnsqueezeBackward0",
        "SliceBackward0",
        "SelectBackward0",
        "CloneBackward0",
        "ToCopyBackward0",
        "ExpandBackward0",
        "IndexBackward0",
    }
)
#: Nodes of the loss's autograd graph the walk visits at most: the loss function sits
#: within a few nodes of the loss (a weighted sum of terms at most adds a few more), and
#: the bound keeps a check's cost independent of the model's size.
LOSS_GRAPH_NODES = 256


def squashed_twice(loss) -> str | None:
    """What the loss's autograd graph shows when a loss that squashes its input itself
    (cross-entropy's log-softmax, BCE-with-logits' sigmoid) is given an input that was
    already squashed the same way: a description, or ``None``.

    ``loss``: the loss tensor as the training loop computed it (its ``grad_fn`` graph is
    still there after ``backward()``; a float or a detached tensor gives ``None``). The walk
    is breadth-first from the loss over at most :data:`LOSS_GRAPH_NODES` nodes, and from a
    loss's squashing node through at most 8 shape-only nodes (:data:`_SHAPE_ONLY`) to its
    input. ``torch.log(softmax(x))`` with ``NLLLoss`` (a correct spelling) is not flagged:
    its log node is not log-softmax's.
    """
    fn = getattr(loss, "grad_fn", None)
    if fn is None:
        return None
    seen = {id(fn)}
    queue = [fn]
    i = 0
    while i < len(queue) and i < LOSS_GRAPH_NODES:
        node = queue[i]
        i += 1
        name = type(node).__name__
        pair = _SQUASHED_TWICE.get(name)
        if pair is not None:
            # The input is the node's first edge (a loss's target is another, and may be
            # a sigmoid's output on purpose: soft labels); an input without a graph has
            # None there.
            inner = node
            for _ in range(8):
                edges = getattr(inner, "next_functions", ())
                inner = edges[0][0] if edges else None
                if inner is None:
                    break
                if type(inner).__name__ == pair[0]:
                    return pair[1]
                if type(inner).__name__ not in _SHAPE_ONLY:
                    break
        for f, _ in getattr(node, "next_functions", ()):
            if f is not None and id(f) not in seen:
                seen.add(id(f))
                queue.append(f)
    return None


#: Autograd nodes of a batch reduction or a scaling that pass a margin loss through: a mean
#: or sum over the batch, a division by its size, a weight.
_REDUCTIONS = frozenset(
    {
        "MeanBackward0",
        "MeanBackward1",
        "SumBackward0",
        "SumBackward1",
        "DivBackward0",
        "DivBackward1",
        "MulBackward0",
        "MulBackward1",
    }
)
#: Autograd nodes whose output is exactly 0 on every example that meets its margin: a clamp
#: at 0 (``torch.clamp(1 - y * f, min=0)``, triplet and margin-ranking losses), a ReLU or
#: ``max(0, ...)``, and torch's multi-class margin losses.
_MARGIN_NODES = frozenset(
    {
        "ClampBackward1",
        "ClampMinBackward0",
        "ReluBackward0",
        "ThresholdBackward0",
        "MaximumBackward0",
        "MultiMarginLossBackward0",
        "MultilabelMarginLossBackward0",
    }
)


def margin_loss(loss) -> bool:
    """Whether the loss tensor is a margin loss (a hinge): under at most 4 batch
    reductions or scalings (:data:`_REDUCTIONS`) its graph starts at a node that is
    exactly 0 for an example that meets its margin (:data:`_MARGIN_NODES`). Such a loss is
    exactly 0.0, with no gradient, once every example in the batch meets it: a solved
    task, not a hidden NaN. A float or a detached tensor gives ``False``."""
    fn = getattr(loss, "grad_fn", None)
    for _ in range(5):
        if fn is None:
            return False
        name = type(fn).__name__
        if name in _MARGIN_NODES:
            return True
        if name not in _REDUCTIONS:
            return False
        edges = getattr(fn, "next_functions", ())
        fn = edges[0][0] if edges else None
    return False


#: Autograd nodes the walk from the model's output back to a tanh or sigmoid call passes
#: at most: a shape change or a fixed rescaling (``2 * sigmoid(x) - 1``, a squeeze) is a
#: few nodes, and a longer chain is no output layer's.
OUTPUT_CHAIN_NODES = 8


#: Autograd nodes that join tensors side by side into the output (concatenation,
#: stacking): every tensor joined is part of the output, a head's activation among them.
_JOIN_NODES = frozenset({"CatBackward0", "StackBackward0"})


def _tensors_of(output, depth: int = 2) -> list:
    """The tensors of a model's output: the tensor itself, or those of a tuple, list or
    dict (an HF ``ModelOutput``) down to ``depth`` levels, at most 16."""
    if hasattr(output, "grad_fn") and hasattr(output, "untyped_storage"):
        return [output]
    if depth == 0:
        return []
    items = output.values() if isinstance(output, dict) else output if isinstance(output, (tuple, list)) else ()
    found: list = []
    for x in items:
        found += _tensors_of(x, depth - 1)
        if len(found) >= 16:
            break
    return found[:16]


def _produces(final, act) -> bool:
    """Whether the model's output tensor ``final`` is the activation's output ``act`` up to
    a chain of operations that each take one tensor and no parameter (a view, a squeeze,
    ``2 * x - 1``), followed back through the autograd graph over at most
    :data:`OUTPUT_CHAIN_NODES` nodes. Without a graph (a forward pass under no_grad) only
    the same storage counts. A concatenation or stack (:data:`_JOIN_NODES`) is followed
    into each tensor it joins (heads joined into the output); any other node with a second
    tensor input (a residual sum, a product with another branch) or a parameter ends the
    chain: the activation is a hidden layer."""
    target = getattr(act, "grad_fn", None)
    if target is None or getattr(final, "grad_fn", None) is None:
        try:
            return final.untyped_storage().data_ptr() == act.untyped_storage().data_ptr()
        except (RuntimeError, AttributeError):
            return False
    frontier = [final.grad_fn]
    for _ in range(OUTPUT_CHAIN_NODES):
        if any(node is target for node in frontier):
            return True
        nxt = []
        for node in frontier:
            inputs = [f for f, _ in getattr(node, "next_functions", ()) if f is not None]
            if type(node).__name__ in _JOIN_NODES:
                # heads joined into the output (torch.cat of two sigmoid heads): each is
                # an output layer
                nxt += [f for f in inputs if type(f).__name__ != "AccumulateGrad"]
            elif len(inputs) == 1 and type(inputs[0]).__name__ != "AccumulateGrad":
                nxt.append(inputs[0])
        if not nxt:
            return False
        frontier = nxt[:16]
    return False


def _settle_saturation(acts: _Acts, output) -> None:
    """Count the pending tanh/sigmoid calls of ``acts`` (see :class:`_Acts`) now that the
    forward pass's ``output`` is known (``None``: no model output to compare with). A call
    that produced the model's output is its output layer, which a confident model drives
    to its asymptotes by design (a sigmoid trained with BCE, a tanh fitting targets of
    +/-1): it is left out of ``model/saturated_share``, and its module named in
    :attr:`_Acts.outputs`. The other calls are hidden layers, counted."""
    pending, acts.pending = acts.pending, []
    finals = _tensors_of(output) if output is not None else []
    for name, out, c, n, rows in pending:
        if any(_produces(f, out) for f in finals):
            acts.outputs.add(name)
            continue
        prev = acts.saturated.get(name)
        acts.saturated[name] = [c, n, rows] if prev is None else [prev[0] + c, prev[1] + n, prev[2] + rows]


class ModelProbe:
    """Measures a model and its optimizer at the monitor's check steps.

    Args:
        model: the ``torch.nn.Module`` trained (DDP-, FSDP- or ``torch.compile``-wrapped
            is fine).
        optimizer: its ``torch.optim.Optimizer``; the step hooks need torch's
            ``register_step_pre_hook`` / ``register_step_post_hook`` (torch >= 2.0).
        layers: per-tensor gradient norms, update ratios and the optimizer facts.
        activations: forward hooks on the activation modules (``nn.ReLU``, ``nn.ReLU6``,
            ``nn.Tanh``, ``nn.Sigmoid``, and for the output scale GELU, SiLU and other
            activation modules) for the check step's forward passes; a tanh or sigmoid
            whose call produces the model's output is its output layer and is left out of
            ``model/saturated_share`` (see :func:`_settle_saturation`).
        scheduler: an LR scheduler, for ``model/scheduler_steps`` (its ``last_epoch``) and,
            while it stands still from one check to the next, ``model/scheduler_warmup_left``
            (:func:`warmup_left`).
        scaler: a ``torch.amp.GradScaler``, for ``loss_scale`` and
            ``model/amp_skipped_steps``.
        replica_every: in a distributed run, compare the replicas' parameter checksums
            at the first :data:`REPLICA_FIRST_CHECKS` checks and then every this many
            checks (0 turns it off). A collective: every process must reach the same checks.
        also: the trainer's other optimizers (Lightning's second under manual
            optimization): their parameters are not counted as outside every optimizer.

    Attributes:
        details: the latest check's names and notes (JSON-able): the ``*_layer`` names,
            lists of parameter names per count (at most :data:`MAX_NAMES` each), and
            ``notes`` (measurements skipped and why).
        optimizer_steps: optimizer steps taken since the probe was created.

    Call :meth:`on_log` at every ``log()``, :meth:`arm` at the call before a check,
    :meth:`collect` at the check, :meth:`close` at the end (removes the step counter).
    """

    def __init__(
        self,
        model,
        optimizer,
        layers: bool = True,
        activations: bool = False,
        scheduler=None,
        scaler=None,
        replica_every: int = 10,
        also=(),
    ) -> None:
        import torch

        self.torch = torch
        self.model = model
        self.inner = unwrap(model)
        self.optimizer = unwrap_optimizer(optimizer)
        # The trainer's other optimizers (a GAN's, manual optimization's second): their
        # parameters are in an optimizer, only not in the one measured.
        self.also = [unwrap_optimizer(o) for o in also]
        self.layers = bool(layers)
        self.activations = bool(activations)
        self.scheduler = scheduler
        self.scaler = scaler
        self.replica_every = max(0, int(replica_every or 0))
        self.details: dict = {}
        self.notes: list[str] = []
        self.optimizer_steps = 0
        self._checks = 0
        self._calls = 0
        self._eval_calls = 0
        self._loss_graph: str | None | bool = False  # False: no loss seen since the last check
        self._margin: bool | None = None  # None: no loss graph seen since the last check
        self._skipped = 0
        self._steps_at_last_log: int | None = None
        self._pre_handle = None
        self._armed = False
        self._snap: tuple | None = None  # (params, ids, ndims, eps, lrs, copies, sharded)
        self._update: _Update | None = None
        self._reset_param = None
        self._reset_handle = None
        self._reset_flag = None  # 0-d tensor: 1 when the gradient was not reset
        self._reset_pending = False
        self._grad_hooks: list = []  # the armed step's hooks that see a gradient arrive
        self._delivered: set[int] | None = None  # id() of the tensors given a gradient since arm()
        self._grads_at_arm: frozenset[int] = frozenset()  # id() of the tensors holding one at arm()
        self._param_sums: dict[int, float] = {}  # id -> sum of a trainable tensor's values at the last check
        self._acts: _Acts | None = None
        self._sched_last: float | None = None  # the scheduler's last_epoch at the last check
        self._warmup_at: tuple | None = None  # (last_epoch, warmup_left) of the last scan
        self._last_batch: tuple | None = None  # the previous check's input fingerprint
        self._fsdp1: bool | None = None
        self._updates_off = False  # the step hooks failed once on this model or optimizer
        self._name_map: dict[int, str] = {}  # id(parameter) -> name, as of the last check
        self._post_handle = None
        ref = weakref.ref(self)

        def post(opt, args, kwargs):  # the step counter, and the armed step's second half
            me = ref()
            if me is not None:
                me._post_step()

        try:
            self._post_handle = self.optimizer.register_step_post_hook(post)
        except (AttributeError, RuntimeError, TypeError) as e:
            self._note(f"optimizer step hooks unavailable ({type(e).__name__}): no optimizer_steps, update ratios")

    # --- bookkeeping --------------------------------------------------------------------
    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def _off(self, what: str, err: BaseException) -> None:
        """Note once that ``what`` was skipped, and why (the caller turns it off)."""
        self._note(f"{what} skipped: {type(err).__name__}: {str(err)[:120]}")
        if what == "update ratios":
            self._updates_off = True

    def _dtensor(self):
        mod = sys.modules.get("torch.distributed.tensor")
        return getattr(mod, "DTensor", None)

    def _sharded(self, params) -> bool:
        """Whether any of ``params`` is sharded across processes (FSDP2 DTensor, FSDP1)."""
        from .monitor import _fsdp1_shard_groups

        dt = self._dtensor()
        if dt is not None and any(isinstance(p, dt) for p in params):
            return True
        if self._fsdp1 is None:  # a model is wrapped by FSDP1 before its monitor is made
            self._fsdp1 = bool(_fsdp1_shard_groups(self.model))
        return self._fsdp1

    def _local(self, t):
        dt = self._dtensor()
        return t.to_local() if dt is not None and isinstance(t, dt) else t

    def _locals(self, ts: list) -> list:
        """:meth:`_local` of each of ``ts`` (the list itself when no DTensor exists)."""
        dt = self._dtensor()
        if dt is None:
            return ts
        return [t.to_local() if isinstance(t, dt) else t for t in ts]

    def _norms(self, ts: list, ord: float, home):
        """Per-tensor ``ord``-norms of ``ts`` as one float32 vector on ``home`` (fused
        ``torch._foreach_norm`` per device and dtype; nothing read to the host)."""
        torch = self.torch
        groups: dict[tuple, list[int]] = {}
        for i, t in enumerate(ts):
            groups.setdefault((t.device, t.dtype), []).append(i)
        if not ts:
            return torch.zeros(0, device=home)
        parts, order = [], []
        for (_, dtype), idxs in groups.items():
            sub = [ts[i] for i in idxs]
            wide = torch.float32 if dtype.is_floating_point and dtype.itemsize < 4 else None
            try:
                norms = torch._foreach_norm(sub, ord, dtype=wide)
            except (RuntimeError, NotImplementedError, TypeError):
                norms = [torch.linalg.vector_norm(t, ord, dtype=wide) for t in sub]
            # one stack per group, then one move: not a .to() per tensor
            parts.append(torch.stack(list(norms)).to(device=home, dtype=torch.float32))
            order += idxs
        vec = parts[0] if len(parts) == 1 else torch.cat(parts)
        if order == sorted(order):
            return vec
        inv = [0] * len(order)
        for pos, i in enumerate(order):
            inv[i] = pos
        return vec[torch.tensor(inv, device=home)]

    def _opt_params(self) -> list:
        return [p for g in self.optimizer.param_groups for p in g["params"]]

    # --- every log() --------------------------------------------------------------------
    def on_log(self) -> None:
        """Count this ``log()`` call: whether the model was in training mode, and (with a
        scaler) whether an optimizer step ran since the previous call. Host work only."""
        self._calls += 1
        if not getattr(self.inner, "training", True):
            self._eval_calls += 1
        if self.scaler is not None and self._post_handle is not None:
            if self._steps_at_last_log is not None and self.optimizer_steps == self._steps_at_last_log:
                self._skipped += 1
            self._steps_at_last_log = self.optimizer_steps

    def on_loss(self, loss) -> None:
        """Look at the autograd graph of this check step's ``loss`` (host work: a walk of at
        most :data:`LOSS_GRAPH_NODES` nodes, no device read); the check records
        ``model/probs_as_logits``. A loss without a graph (a float) records nothing."""
        if getattr(loss, "grad_fn", None) is None:
            return
        try:
            self._loss_graph = squashed_twice(loss)
            self._margin = margin_loss(loss)
        except Exception as e:  # noqa: BLE001 - an unusual graph must not stop training
            self._off("the loss graph", e)

    # --- the step before a check ----------------------------------------------------------
    def arm(self) -> None:
        """Arm the measurements of the next optimizer step and forward passes (called at
        the ``log()`` before a check)."""
        if self.layers and self._post_handle is not None and self._pre_handle is None and not self._updates_off:
            ref = weakref.ref(self)

            def pre(opt, args, kwargs):
                me = ref()
                if me is not None:
                    me._pre_step()

            try:
                self._pre_handle = self.optimizer.register_step_pre_hook(pre)
                self._armed = True
            except (AttributeError, RuntimeError, TypeError) as e:
                self._off("update ratios", e)
            else:
                self._arm_delivery()
        if self.activations and self._acts is None:
            self._arm_activations()

    def _arm_delivery(self) -> None:
        """Note which trainable tensors of the optimizer hold a gradient now, and hook each
        one so that every gradient a backward delivers into it until the measured step
        ends is seen (``register_post_accumulate_grad_hook``; a tensor hook before torch
        2.1).

        Which of the two tells what the measured step's backward delivered depends on where
        the loop calls ``log()``: between backward and step (the gradients are there at
        :meth:`arm`, and no backward runs before the step), or after the step (a backward
        runs in between, and the gradients held at :meth:`arm` are the previous step's,
        cleared by the loop's zero_grad). :meth:`_post_step` takes the hooks' set when any
        backward ran, else the set held at :meth:`arm`. Sharded parameters are left out:
        their gradients arrive outside autograd, and the count is not reported for them."""
        torch = self.torch
        params = [p for p in self._opt_params() if p.requires_grad]
        self._grads_at_arm = frozenset(id(p) for p in params if p.grad is not None)
        self._delivered = None
        if not params or self._sharded(params):
            return
        seen: set[int] = set()
        post = hasattr(torch.Tensor, "register_post_accumulate_grad_hook")
        try:
            for p in params:
                if post:
                    h = p.register_post_accumulate_grad_hook(lambda _p, k=id(p): seen.add(k))
                else:
                    h = p.register_hook(lambda _g, k=id(p): seen.add(k))
                self._grad_hooks.append(h)
        except (RuntimeError, AttributeError) as e:
            self._drop_grad_hooks()
            self._off("grads_cleared_before_step", e)
            return
        self._delivered = seen

    def _drop_grad_hooks(self) -> None:
        for h in self._grad_hooks:
            h.remove()
        self._grad_hooks = []

    def _pre_step(self) -> None:
        if not self._armed or self._snap is not None or self._update is not None:
            return
        torch = self.torch
        try:
            with torch.no_grad():
                # Every trainable parameter, with or without a gradient yet: an optimizer
                # given a closure (Lightning) runs this hook before the closure's backward.
                # The gradients are looked at after the step, where they are the ones applied.
                params, lrs = [], []
                for g in self.optimizer.param_groups:
                    for p in g["params"]:
                        if p.requires_grad:
                            params.append(p)
                            lrs.append(g.get("lr", float("nan")))
                if not params:
                    return
                sharded = self._sharded(params)
                # Under no_grad the parameters are read as they are (no detach per tensor).
                copies = self._snapshot(self._locals(params))
                eps = [_eps(torch, p) for p in params]
                self._snap = (params, [id(p) for p in params], [p.dim() for p in params], eps, lrs, copies, sharded)
        except Exception as e:  # noqa: BLE001 - a probe never stops the training loop
            self._snap = None
            self._armed = False
            self._off("update ratios", e)

    def _snapshot(self, ts: list) -> list:
        """Copies of ``ts``, as views into one buffer per (device, dtype): one allocation
        and one fused copy per group rather than one of each per tensor."""
        torch = self.torch
        groups: dict[tuple, list[int]] = {}
        for i, t in enumerate(ts):
            groups.setdefault((t.device, t.dtype), []).append(i)
        out: list = [None] * len(ts)
        for (device, dtype), idxs in groups.items():
            sizes = [ts[i].numel() for i in idxs]
            buf = torch.empty(sum(sizes), dtype=dtype, device=device)
            views = [v.view(ts[i].shape) for v, i in zip(buf.split(sizes), idxs)]
            torch._foreach_copy_(views, [ts[i] for i in idxs])
            for v, i in zip(views, idxs):
                out[i] = v
        return out

    def _post_step(self) -> None:
        self.optimizer_steps += 1
        if self._reset_handle is not None and self._reset_flag is not None:
            self._reset_pending = False  # the next step ends the interval the check reads
        if self._snap is not None:
            torch = self.torch
            params, ids, ndims, eps, lrs, copies, sharded = self._snap
            self._snap = None
            self._armed = False
            try:
                with torch.no_grad():
                    after = self._locals(params)
                    home = after[0].device
                    torch._foreach_sub_(copies, after)  # copies := W_before - W_after
                    diff = self._norms(copies, 2.0, home)
                    weight = self._norms(after, 2.0, home)
                    gidx = [i for i, p in enumerate(params) if p.grad is not None]
                    gnorm = self._norms(self._locals([params[i].grad for i in gidx]), 2.0, home)
                del copies
                seen, self._delivered = self._delivered, None
                self._drop_grad_hooks()
                delivered = None if seen is None else frozenset(seen or self._grads_at_arm)
                self._update = _Update(ids, ndims, eps, lrs, diff, weight, gnorm, gidx, sharded, delivered)
                self._arm_reset_check(params)
            except Exception as e:  # noqa: BLE001
                self._off("update ratios", e)

    def _arm_reset_check(self, params: list) -> None:
        """Hook the smallest trainable parameter's gradient: every backward until the next
        optimizer step looks at the gradient it finds there, and the gradient was never
        cleared when each of them found one (not ``None``, not all zero). One backward
        that finds it cleared settles it: a GAN's generator backward runs through the
        discriminator after the discriminator's step and finds its gradient, which the
        discriminator's own zero_grad clears before its next backward."""
        if self._reset_handle is not None or not params:
            return
        p = min(params, key=lambda q: q.numel())
        ref = weakref.ref(self)

        def hook(grad):
            me = ref()
            if me is None or not me._reset_pending:
                return None
            old = p.grad
            if old is None:
                me._reset_flag = 0.0
                me._reset_pending = False
            else:
                with me.torch.no_grad():
                    found = (me._local(old) != 0).any().to(me.torch.float32)
                me._reset_flag = found if me._reset_flag is None else me._reset_flag * found
            return None

        try:
            self._reset_handle = p.register_hook(hook)
            self._reset_param = p
            self._reset_pending = True
            self._reset_flag = None
        except (RuntimeError, AttributeError) as e:
            self._off("grads_not_reset", e)

    def _arm_activations(self) -> None:
        if is_compiled(self.model):
            self._note("activations skipped: forward hooks on a torch.compile'd model would recompile it")
            return
        torch = self.torch
        acts = _Acts()
        nn = torch.nn
        kinds = {
            **{k: "relu" for k in _RELU},
            **{k: "sat_" + k.lower() for k in _SATURATING},
            **{k: "scale" for k in _SCALE_ONLY},
        }
        ref = weakref.ref(acts)

        def make(name: str, kind: str):
            def hook(mod, inp, out):
                a = ref()
                if a is None or not isinstance(out, torch.Tensor) or not out.is_floating_point() or out.numel() == 0:
                    return None
                with torch.no_grad():
                    o = out.detach()
                    n = o.numel()
                    sq = o.float().square().sum()
                    prev = a.sumsq.get(name)
                    a.sumsq[name] = [sq, n] if prev is None else [prev[0] + sq, prev[1] + n]
                    if kind == "relu" and o.dim() >= 1:
                        pos = o > 0
                        if o.dim() == 1:
                            alive, rows = pos, 1
                        elif o.dim() <= 3:
                            alive, rows = pos.reshape(-1, o.shape[-1]).any(0), n // o.shape[-1]
                        else:
                            alive, rows = pos.transpose(0, 1).reshape(o.shape[1], -1).any(1), n // o.shape[1]
                        was = a.alive.get(name)
                        if was is None or was.shape != alive.shape:
                            a.alive[name], a.rows[name] = alive, rows
                        else:
                            a.alive[name], a.rows[name] = was | alive, a.rows[name] + rows
                    elif kind.startswith("sat_"):
                        if kind == "sat_tanh":
                            c = (o.abs() > SATURATION).sum()
                        else:
                            c = ((o < 1 - SATURATION) | (o > SATURATION)).sum()
                        rows = 1 if o.dim() <= 1 else n // (o.shape[-1] if o.dim() <= 3 else o.shape[1])
                        a.pending.append((name, out, c, n, rows))
                return None

            return hook

        def batch_hook(mod, args, kwargs):
            a = ref()
            # The first forward with gradients on, in training mode: an evaluation pass on
            # a fixed held-out set in the same window is not the batch trained on.
            if a is None or a.batch is not None or not torch.is_grad_enabled() or not mod.training:
                return None
            t = next((x for x in (*args, *kwargs.values()) if isinstance(x, torch.Tensor) and x.numel()), None)
            if t is None or t.is_complex():
                return None
            with torch.no_grad():
                d = t.detach().to(torch.float64)
                a.batch = (tuple(t.shape), d.sum(), d.square().sum())
            return None

        def output_hook(mod, args, output):
            a = ref()
            if a is not None:
                _settle_saturation(a, output)
            return None

        try:
            acts.handles.append(self.inner.register_forward_pre_hook(batch_hook, with_kwargs=True))
            acts.handles.append(self.inner.register_forward_hook(output_hook))
            for name, m in self.inner.named_modules():
                kind = kinds.get(type(m).__name__)
                if kind is None or not isinstance(m, nn.Module):
                    continue
                acts.handles.append(m.register_forward_hook(make(_strip(name) or type(m).__name__, kind)))
        except Exception as e:  # noqa: BLE001
            for h in acts.handles:
                h.remove()
            self.activations = False
            self._off("activations", e)
            return
        if not acts.handles:
            self._note("activations: no activation modules (nn.ReLU, nn.Tanh, ...) to hook")
        self._acts = acts

    # --- the check ----------------------------------------------------------------------
    def disarm(self) -> None:
        """Remove every hook armed for a check (the step counter stays until :meth:`close`)."""
        if self._pre_handle is not None:
            self._pre_handle.remove()
            self._pre_handle = None
        self._armed = False
        self._snap = None
        self._drop_grad_hooks()
        self._delivered = None
        if self._reset_handle is not None:
            self._reset_handle.remove()
            self._reset_handle = None
        self._reset_param = None
        self._reset_pending = False
        if self._acts is not None:
            for h in self._acts.handles:
                h.remove()
            self._acts.handles = []

    def collect(self) -> Deferred:
        """This check's measurements: device tensors and their finishing step. Removes
        every hook armed for this check. Never raises for a model or optimizer it cannot
        measure: that measurement is skipped and noted."""
        torch = self.torch
        self._checks += 1
        check_no = self._checks - 1
        tensors: list = []
        host: dict[str, float] = {}
        jobs: list[Callable[[list, dict, dict], None]] = []  # (values, out, details)

        def take(t) -> int:
            tensors.append(t)
            return len(tensors) - 1

        if self._calls:
            host["model/eval_mode_share"] = self._eval_calls / self._calls
        graph, self._loss_graph = self._loss_graph, False
        if self._margin is not None:
            host["model/margin_graph"] = float(self._margin)
            self._margin = None
        if graph is not False:
            host["model/probs_as_logits"] = float(graph is not None)
            if graph is not None:

                def named(v, out, d, g=graph):
                    out["model/probs_as_logits_layer"] = d["probs_as_logits_layer"] = g

                jobs.append(named)
        self._calls = self._eval_calls = 0
        if self._post_handle is not None:
            host["model/optimizer_steps"] = float(self.optimizer_steps)
        if self.scheduler is not None:
            last = getattr(self.scheduler, "last_epoch", None)
            if isinstance(last, (int, float)):
                host["model/scheduler_steps"] = float(last)
                # Scanned only for a scheduler that stood still since the last check: one that
                # moves at every check is not the question, and the scan costs a call a step.
                if last == self._sched_last:
                    if self._warmup_at is None or self._warmup_at[0] != last:
                        self._warmup_at = (last, warmup_left(self.scheduler))
                    left = self._warmup_at[1]
                    if left is not None:
                        host["model/scheduler_warmup_left"] = float(left)
                self._sched_last = last
        if self.scaler is not None:
            self._scaler_values(host, jobs, take)
        update, self._update = self._update, None
        reset_flag, self._reset_flag = self._reset_flag, None
        acts = self._acts
        self.disarm()
        self._acts = None
        if self.layers:
            try:
                with torch.no_grad():
                    self._grad_facts(host, jobs, take)
            except Exception as e:  # noqa: BLE001
                self.layers = False
                self._off("per-layer gradients", e)
            if update is not None:
                self._update_job(update, jobs, take)
            if reset_flag is not None:
                if isinstance(reset_flag, float):
                    host["model/grads_not_reset"] = reset_flag
                else:
                    i = take(reset_flag)
                    jobs.append(lambda v, out, d, i=i: out.__setitem__("model/grads_not_reset", float(v[i] > 0)))
        if acts is not None:
            self._acts_job(acts, jobs, take)
        if self.replica_every and (check_no < REPLICA_FIRST_CHECKS or check_no % self.replica_every == 0):
            self._replica_job(jobs, take)
        notes = list(self.notes)

        def finish(values: list) -> dict:
            out: dict = dict(host)
            details: dict = {}
            for job in jobs:
                try:
                    job(values, out, details)
                except (ValueError, TypeError, ZeroDivisionError, IndexError) as e:
                    self._off("a model measurement", e)
            details["notes"] = list(self.notes) or notes
            self.details = details
            return out

        return Deferred(tensors, finish)

    def read(self, deferred: Deferred) -> dict:
        """Read ``deferred``'s tensors now and finish it: for a caller without a transfer of
        its own at the check (a framework callback). Waits for the device once per tensor
        group (one per device)."""
        torch = self.torch
        ts = [t.detach() for t in deferred.tensors]
        values: list = [None] * len(ts)
        by_dev: dict = {}
        for i, t in enumerate(ts):
            by_dev.setdefault(t.device, []).append(i)
        for idxs in by_dev.values():
            flat = torch.cat([ts[i].reshape(-1).to(torch.float64) for i in idxs]).tolist()
            at = 0
            for i in idxs:
                n = ts[i].numel()
                values[i] = flat[at] if ts[i].dim() == 0 else flat[at : at + n]
                at += n
        return deferred.finish(values)

    def after_step(self, step, measure: bool, arm_next: bool, meta: dict | None = None) -> dict:
        """What a framework callback does after each optimizer step, in one place: count
        the step (:meth:`on_log`); when ``measure``, read this check's measurements now
        (:meth:`read`) and put the latest details in ``meta["model_probe"]``; when
        ``arm_next``, arm the probe for the step after next (the update measured is the
        step before a check's own, and that check's backward shows whether its gradients
        were cleared). Returns the ``model/*`` values measured, or ``{}``."""
        self.on_log()
        out = {}
        if measure:
            out = self.read(self.collect())
            if meta is not None:
                meta["model_probe"] = {"step": step, **self.details}
        if arm_next:
            self.arm()
        return out

    def _scaler_values(self, host: dict, jobs: list, take) -> None:
        scaler = self.scaler
        enabled = getattr(scaler, "is_enabled", lambda: True)()
        if not enabled:
            return
        scale = getattr(scaler, "_scale", None)
        if isinstance(scale, self.torch.Tensor):
            i = take(scale.detach().reshape(()).float().clone())
            jobs.append(lambda v, out, d, i=i: out.__setitem__("loss_scale", float(v[i])))
        if self._post_handle is not None:
            host["model/amp_skipped_steps"] = float(self._skipped)
        self._skipped = 0

    def _grad_facts(self, host: dict, jobs: list, take) -> None:
        """Counts of the optimizer facts and the per-tensor gradient norms at this step."""
        inner_named = [(_strip(n), p) for n, p in self.inner.named_parameters()]
        self._name_map = {id(p): n for n, p in inner_named}
        opt = self._opt_params()
        opt_ids = {id(p) for p in opt}
        held = opt_ids | {id(p) for o in self.also for g in o.param_groups for p in g["params"]}
        model_ids = {id(p) for _, p in inner_named}
        outside = [n for n, p in inner_named if p.requires_grad and p.grad is not None and id(p) not in held]
        frozen_names = {id(p): n for n, p in inner_named}
        frozen = [frozen_names.get(id(p), "?") for p in opt if not p.requires_grad]
        host["model/params_outside_optimizer"] = float(len(outside))
        host["model/params_frozen_in_optimizer"] = float(len(frozen))
        names = [n for n, p in inner_named if p.grad is not None]
        params = [p for _, p in inner_named if p.grad is not None]
        extra = [p for p in opt if id(p) not in model_ids and p.grad is not None]
        names += [f"optimizer.param_{i}" for i in range(len(extra))]
        params += extra
        trainable = [p for p in opt if p.requires_grad]
        none_ids = [id(p) for p in trainable if p.grad is None]
        none_all = [frozen_names.get(k, "?") for k in none_ids]
        # A tensor without a gradient at this step that moved since the previous check got
        # one at some step of the interval between (a branch used every other step and
        # checked at the steps it sits out, a block LayerDrop skipped at the check step
        # only): the sum of its values at each check tells, one number a tensor. Every
        # trainable tensor's is kept, since any of them may lack a gradient at the next
        # check whatever it held at this one.
        i_fp = None
        if trainable:
            locs = self._locals(trainable)
            at = locs[0].device
            f64 = self.torch.float64
            i_fp = take(self.torch.stack([t.detach().sum(dtype=f64).to(at) for t in locs]))
        all_ids = [id(p) for p in trainable]

        def unmoved(v) -> list[str]:
            cur = dict(zip(all_ids, _flat(v[i_fp]))) if i_fp is not None else {}
            prev, self._param_sums = self._param_sums, cur
            return [n for n, k in zip(none_all, none_ids) if not (k in prev and prev[k] != cur[k])]

        in_opt = [id(p) in opt_ids and p.requires_grad for p in params]
        ndims = [p.dim() for p in params]
        sharded = self._sharded(params) if params else False

        def base(v, out, d):
            d["params_outside_optimizer"] = outside[:MAX_NAMES]
            d["params_frozen_in_optimizer"] = frozen[:MAX_NAMES]

        jobs.append(base)
        if not params:

            def job_none(v, out, d):
                none_names = unmoved(v)
                out["model/params_no_grad"] = float(len(none_names))
                d["params_no_grad"] = none_names[:MAX_NAMES]

            jobs.append(job_none)
            return
        grads = self._locals([p.grad for p in params])
        home = grads[0].device
        # One L2 norm per tensor serves every count: 0 exactly when the gradient is all
        # zero, not finite when it holds a NaN or an Inf (or overflows float32, ~1e19 per
        # element: an explosion by any measure). On the CPU it costs a third of a max-norm.
        i_l2 = take(self._norms(grads, 2.0, home))
        if sharded:
            self._note("per-layer gradient norms skipped: the parameters are sharded across processes")

        def job(v, out, d):
            l2 = _flat(v[i_l2])
            none_names = unmoved(v)
            zero = [n for n, g, o in zip(names, l2, in_opt) if o and g == 0.0]
            bad = [n for n, g in zip(names, l2) if not math.isfinite(g)]
            out["model/params_no_grad"] = float(len(none_names) + len(zero))
            d["params_no_grad"] = (none_names + zero)[:MAX_NAMES]
            out["model/grad_nonfinite_params"] = float(len(bad))
            if bad:
                out["model/grad_nonfinite_layer"] = bad[0]
                d["grad_nonfinite_layer"] = bad[0]
            if sharded:
                return
            rows = [(n, x) for n, x, nd in zip(names, l2, ndims) if nd >= 2 and math.isfinite(x)]
            if not rows:
                return
            med = _median([x for _, x in rows])
            if not med > 0:
                return
            hi = max(rows, key=lambda r: r[1])
            lo = min(rows, key=lambda r: r[1])
            out["model/layer_grad_norm_max"] = math.log10(max(hi[1] / med, RATIO_FLOOR))
            out["model/layer_grad_norm_min"] = math.log10(max(lo[1] / med, RATIO_FLOOR))
            out["model/layer_grad_norm_max_layer"] = d["layer_grad_norm_max_layer"] = hi[0]
            out["model/layer_grad_norm_min_layer"] = d["layer_grad_norm_min_layer"] = lo[0]

        jobs.append(job)

    def _update_job(self, u: _Update, jobs: list, take) -> None:
        i_diff, i_w, i_g = take(u.diff), take(u.weight), take(u.gnorm)
        lr_idx = {k: take(lr.detach().reshape(()).float()) for k, lr in enumerate(u.lrs) if hasattr(lr, "detach")}
        if u.sharded:
            self._note("per-layer update ratios skipped: the parameters are sharded across processes")

        def job(v, out, d):
            diff, w = _flat(v[i_diff]), _flat(v[i_w])
            g = [0.0] * len(diff)  # no gradient: nothing to apply
            for i, x in zip(u.gidx, _flat(v[i_g])):
                g[i] = x
            named = self._name_map
            names = [named.get(i, "?") for i in u.ids]
            lrs = [float(v[lr_idx[k]]) if k in lr_idx else float(lr) for k, lr in enumerate(u.lrs)]
            stuck = [
                (_sgd_steps(lr, gm, wn, ep), n)
                for n, dn, gm, wn, ep, lr in zip(names, diff, g, w, u.eps, lrs)
                if dn == 0.0 and math.isfinite(gm) and gm > 0 and lr > 0
            ]
            # The largest update owed first: the tensor most plainly left alone is named first.
            stuck.sort(key=lambda t: -t[0])
            # A gradient delivered by a backward of the measured step, none (None) at the
            # end of that step, the tensor unchanged by it and a learning rate above 0: the
            # gradient was cleared between backward() and step(). A tensor that no backward
            # of the step reached (a head of the other task, a dropped layer, an expert no
            # token was routed to) is not counted. An optimizer given a closure runs its
            # backward inside the step, so its gradients are there at the step's end.
            had = set(u.gidx)
            delivered = u.delivered or frozenset()
            cleared = [
                n
                for k, (n, pid, dn, lr) in enumerate(zip(names, u.ids, diff, lrs))
                if k not in had and pid in delivered and dn == 0.0 and lr > 0
            ]
            if not u.sharded:
                applied = [x * x for x in g if math.isfinite(x) and x > 0]
                if applied:
                    # the norm of the gradient the optimizer step applied (after the
                    # scaler's unscale_, wherever the training loop logs its own norm)
                    out["model/applied_grad_norm"] = math.sqrt(math.fsum(applied))
                out["model/params_not_updated"] = float(len(stuck))
                d["params_not_updated"] = [n for _, n in stuck[:MAX_NAMES]]
                if stuck:
                    out["model/params_not_updated_step"] = stuck[0][0]
                if u.delivered is not None:
                    out["model/grads_cleared_before_step"] = float(len(cleared))
                    d["grads_cleared_before_step"] = cleared[:MAX_NAMES]
            rows = [
                (n, dn / wn)
                for n, dn, wn, nd in zip(names, diff, w, u.ndims)
                if nd >= 2 and dn > 0 and wn > 0 and math.isfinite(dn / wn)
            ]
            if u.sharded or not rows:
                return
            hi = max(rows, key=lambda r: r[1])
            lo = min(rows, key=lambda r: r[1])
            out["model/layer_update_ratio_max"] = math.log10(max(hi[1], RATIO_FLOOR))
            out["model/layer_update_ratio_min"] = math.log10(max(lo[1], RATIO_FLOOR))
            out["model/layer_update_ratio_max_layer"] = d["layer_update_ratio_max_layer"] = hi[0]
            out["model/layer_update_ratio_min_layer"] = d["layer_update_ratio_min_layer"] = lo[0]

        jobs.append(job)

    def _acts_job(self, acts: _Acts, jobs: list, take) -> None:
        _settle_saturation(acts, None)  # calls outside the model's forward are hidden layers
        batch = None
        if acts.batch is not None:
            shape, total, squares = acts.batch
            batch = (shape, take(total), take(squares))

        def same_batch(v, out, d):
            # The input's fingerprint against the previous check's: identical shape, sum
            # and sum of squares (float64) is the same batch, 10 steps (a check) later.
            if batch is None:
                return
            fp = (batch[0], float(v[batch[1]]), float(v[batch[2]]))
            if self._last_batch is not None:
                out["model/same_batch"] = float(fp == self._last_batch)
            self._last_batch = fp

        jobs.append(same_batch)
        dead = {n: take(1.0 - a.float().mean()) for n, a in acts.alive.items()}
        sat = {n: (take(c.float()), k, rows) for n, (c, k, rows) in acts.saturated.items()}
        outputs = sorted(acts.outputs)[:MAX_NAMES]
        rms = {n: (take(s.float()), k) for n, (s, k) in acts.sumsq.items()}

        def job(v, out, d):
            if dead:
                name, share = max(((n, float(v[i])) for n, i in dead.items()), key=lambda r: r[1])
                out["model/dead_relu_share"] = share
                out["model/dead_relu_rows"] = float(acts.rows.get(name, 0))
                out["model/dead_relu_layer"] = d["dead_relu_layer"] = name
            if sat:
                name, share = max(((n, float(v[i]) / k) for n, (i, k, _) in sat.items()), key=lambda r: r[1])
                out["model/saturated_share"] = share
                out["model/saturated_rows"] = float(sat[name][2])
                out["model/saturated_layer"] = d["saturated_layer"] = name
            if outputs:
                d["saturation_output_layers"] = outputs
            if rms:
                name, r = max(((n, math.sqrt(float(v[i]) / k)) for n, (i, k) in rms.items()), key=lambda r: r[1])
                out["model/activation_scale_max"] = math.log10(r) if r > 0 else math.log10(RATIO_FLOOR)
                out["model/activation_scale_max_layer"] = d["activation_scale_max_layer"] = name

        jobs.append(job)

    def _replica_job(self, jobs: list, take) -> None:
        """Gather every process's parameter checksum (sum and sum of squares) and record
        how far the farthest one is from rank 0's (relative). A collective."""
        from . import distributed

        dist = distributed._group_ready()
        if dist is None or dist.get_world_size() < 2:
            return
        torch = self.torch
        params = [p for p in self.model.parameters()]
        if not params:
            return
        if self._sharded(params):
            self._note("replica_drift skipped: the parameters are sharded across processes")
            return
        dev = distributed._reduce_device(dist)
        acc = torch.float32 if params[0].device.type == "mps" else torch.float64
        with torch.no_grad():
            s = torch.stack([p.detach().sum(dtype=acc).to(dev) for p in params]).sum()
            q = self._norms([p.detach() for p in params], 2.0, params[0].device).to(acc).square().sum().to(dev)
            mine = torch.stack([s, q]).to(torch.float64 if dev.type != "mps" else torch.float32)
            every = [torch.zeros_like(mine) for _ in range(dist.get_world_size())]
            dist.all_gather(every, mine)
            g = torch.stack(every)
            ref = g[0].abs().clamp_min(torch.finfo(g.dtype).tiny)
            drift = ((g - g[0]).abs() / ref).amax()
        i = take(drift)
        jobs.append(lambda v, out, d, i=i: out.__setitem__("model/replica_drift", float(v[i])))

    def close(self) -> None:
        """Remove every hook, the step counter included (idempotent)."""
        self.disarm()
        self._acts = None
        if self._post_handle is not None:
            self._post_handle.remove()
            self._post_handle = None


def warmup_left(scheduler) -> int | None:
    """How many more scheduler steps the learning rate of ``scheduler`` keeps rising from
    where it stands (its ``last_epoch``): 0 when its next step does not raise it, at most
    :data:`WARMUP_SCAN`. Read from the schedule's closed form without stepping it, for
    ``LambdaLR`` (its ``lr_lambdas``, every group: the longest rise) and ``LinearLR`` (a
    rising ``start_factor`` to ``end_factor`` over ``total_iters``); ``None`` for any other
    scheduler, or when a schedule function raises."""
    last = getattr(scheduler, "last_epoch", None)
    if not isinstance(last, int) or last < 0:
        return None
    kind = type(scheduler).__name__
    if kind == "LinearLR":
        start, end, total = (getattr(scheduler, k, None) for k in ("start_factor", "end_factor", "total_iters"))
        if not all(isinstance(v, (int, float)) for v in (start, end, total)):
            return None
        return max(0, int(total) - last) if end > start else 0
    lambdas = getattr(scheduler, "lr_lambdas", None) if kind == "LambdaLR" else None
    if not isinstance(lambdas, list) or not lambdas or not all(callable(f) for f in lambdas):
        return None
    longest = 0
    try:
        for f in lambdas:
            prev, k = float(f(last)), last
            while k - last < WARMUP_SCAN:
                nxt = float(f(k + 1))
                if not nxt > prev:
                    break
                prev, k = nxt, k + 1
            longest = max(longest, k - last)
    except Exception:  # noqa: BLE001  (a user's schedule function: any failure is "not known")
        return None
    return longest


def _eps(torch, p) -> float:
    """The resolution an update of ``p`` is measured against: its dtype's machine epsilon
    for float32 and float64; 0 for a half-precision (float16, bfloat16) tensor, whose lost
    updates are the loss of float32 master weights (they would have accumulated the small
    updates) rather than float noise; ``nan`` for a dtype without one."""
    try:
        info = torch.finfo(p.dtype)
    except TypeError:
        return float("nan")
    return float(info.eps) if info.bits >= 32 else 0.0


def _sgd_steps(lr: float, grad_norm: float, weight_norm: float, eps: float) -> float:
    """log10 of the update plain SGD makes of a tensor, ``lr * RMS(grad)``, over the float
    resolution of its weights, ``eps * RMS(W)`` (``eps`` from :func:`_eps`; from the L2
    norms of the gradient and the weights, whose element counts cancel). Below about
    log10(0.5) every element's update rounds away (an update under half a unit in the last
    place is lost), which is how a healthy float32 tensor stays bit-identical; a tensor of
    zeros, a half-precision tensor or a dtype without an epsilon is ``-log10(RATIO_FLOOR)``
    (12): no float noise excuses it."""
    resolution = eps * weight_norm
    if not math.isfinite(resolution) or resolution <= 0:
        return -math.log10(RATIO_FLOOR)
    return math.log10(max(lr * grad_norm / resolution, RATIO_FLOOR))


def _flat(x) -> list[float]:
    return x if isinstance(x, list) else [x]


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
