"""Rules on the model itself: measurements the live probe takes at check steps.

The monitor and the framework callbacks (``layers=True``, ``activations=True``) measure the
model and its optimizer at each check through :class:`trainproof.live.probes.ModelProbe`
and record the results as ordinary metric keys of the record at that step, all named
``model/...`` (see the design of issue 34): one point per check, absent when it could not
be measured. These rules read those series by name, so they judge a run live and its
log (``trainproof judge run.jsonl``) alike. On an ordinary log, which holds none of the keys,
the engine leaves these rules out of the report (:func:`trainproof.rules.engine.probe_only`);
a probed run without one rule's key (``activations=False``) lists that rule skipped as
``absent``.

A check measures one step and one batch. Every rule here needs its evidence at
``model_checks`` checks in a row (``replica_drift_checks`` replica checks for the replica
rule), so the quirk of one batch never fires. Layer names are strings, which readers do
not keep: the probe leaves the latest check's names in ``run.meta["model_probe"]``; judged
from a file, the evidence says the layer was not recorded.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._arrays import isin
from ..findings import Finding, Level
from ..runlog import Series
from ._fmt import num, pct, step
from ._schedule import declared_max_steps
from ._stats import runs_of
from .registry import Need, rule

GROUP = "model"


def layer_name(ctx, key: str) -> str | None:
    """The layer the probe named under ``key`` (``model/..._layer``) at its latest check,
    from ``run.meta["model_probe"]`` (the key with or without its ``model/`` prefix), or
    ``None`` when the run does not record it (a log read from a file: readers keep numbers
    only)."""
    probe = ctx.run.meta.get("model_probe")
    if not isinstance(probe, dict):
        return None
    for k in (key, key.removeprefix("model/")):
        v = probe.get(k)
        if isinstance(v, str) and v:
            return v
        names = [n for n in v if isinstance(n, str) and n] if isinstance(v, list) else []
        if names:  # a count's tensors, as the probe lists them (at most 20)
            shown = ", ".join(names[:_NAMES_SHOWN])
            return shown + (f" and {len(names) - _NAMES_SHOWN} more" if len(names) > _NAMES_SHOWN else "")
    return None


#: How many of a count's tensor names the evidence shows (the probe keeps up to 20).
_NAMES_SHOWN = 5


def _layer_text(ctx, key: str | None) -> tuple[str, str | None]:
    """``(sentence, name)``: where the probe places the finding, for the evidence."""
    if key is None:
        return "", None
    name = layer_name(ctx, key)
    # A ``..._layer`` key names one layer; a count's key lists the tensors it counted.
    what = ("Layer", "layer names") if key.endswith("_layer") else ("Tensors", "tensor names")
    if name is None:
        return f" {what[0]} not recorded (the probe keeps {what[1]} in the live run, not in the log).", None
    return f" {what[0]} at the latest check: {name}.", name


def _streak(s: Series, hit: np.ndarray, k: int) -> tuple[int, int] | None:
    """``(start, length)`` of the first run of at least ``k`` consecutive checks of ``s``
    where ``hit`` holds, or ``None``."""
    for start, length in runs_of(hit):
        if length >= k:
            return start, length
    return None


def _aligned(ctx, key: str, other_key: str) -> tuple[Series, np.ndarray] | None:
    """``key``'s finite checks that ``other_key`` also logged, and ``other_key``'s values at
    them (shape ``(n,)`` each): two measurements of one check read together. ``None`` when
    they share no check."""
    a, b = ctx.finite(key), ctx.finite(other_key)
    common, i_a, i_b = np.intersect1d(a.steps, b.steps, return_indices=True)
    if common.size == 0:
        return None
    return Series(a.name, a.key, a.steps[i_a], a.values[i_a], a.lines[i_a]), b.values[i_b]


def _persistent(
    ctx,
    key: str,
    hit: Callable[[np.ndarray], np.ndarray],
    message: Callable[[float], str],
    what: str,
    layer_key: str | None = None,
    need: int | None = None,
    to_end: bool = False,
    low: bool = False,
    accept: Callable[[np.ndarray], bool] | None = None,
) -> Finding | None:
    """The finding of a rule whose evidence is ``hit(values)`` at ``need`` (default
    ``model_checks``) checks of ``key`` in a row; with ``to_end``, the run of checks must
    reach the last check (nothing after it recovered).

    ``message(v)`` is the finding's message for the value ``v`` at the first check of the
    run; ``what`` names the condition in the evidence ("a count above 0"). The evidence
    cites the most extreme value of the run of checks: the largest, or with ``low`` (a bar
    from above) the smallest. ``accept(values)``, when given, must also hold for the values
    of the run of checks (a rule that tells a healthy shape apart inside the run).
    """
    s = ctx.finite(key)
    need = ctx.th.model_checks if need is None else need
    mask = hit(s.values)
    found = None
    for start, length in runs_of(mask):
        if (
            length >= need
            and (not to_end or start + length == len(s))
            and (accept is None or accept(s.values[start : start + length]))
        ):
            found = (start, length)
            break
    if found is None:
        return None
    start, length = found
    end = start + length - 1
    inside = s.values[start : end + 1]
    v0, extreme = float(s.values[start]), float(np.min(inside) if low else np.max(inside))
    text, name = _layer_text(ctx, layer_key)
    evidence = (
        f"{key} was {what} at {length} checks in a row, from step {step(s.steps[start])} (line "
        f"{int(s.lines[start])}, value {num(v0)}) to step {step(s.steps[end])} ({'smallest' if low else 'largest'} {num(extreme)}); "
        f"{int(mask.sum())} of {len(s)} checks in all; needed {need} in a row.{text}"
    )
    data = {
        "key": key,
        "first_step": float(s.steps[start]),
        "last_step": float(s.steps[end]),
        "checks_in_a_row": length,
        "checks_hit": int(mask.sum()),
        "checks": len(s),
        "first_value": v0,
        "extreme_value": extreme,
        "layer": name,
    }
    return ctx.finding(message(v0), evidence, data, step=s.steps[start], line=s.lines[start])


def _count(v: float) -> str:
    n = int(round(v))
    return f"{n} parameter tensor{'s' if n != 1 else ''}"


def _positive(v: np.ndarray) -> np.ndarray:
    return v > 0


# --- optimizer and gradient facts -------------------------------------------------------


@rule(
    "TP-PARAMS-NOT-OPTIMIZED",
    Level.WARN,
    GROUP,
    "parameters receive gradients but belong to no group of the optimizer",
    needs=[Need("model/params_outside_optimizer", "model_checks")],
    thresholds=["model_checks"],
    detects="`model/params_outside_optimizer` above 0 at {model_checks} checks in a row: parameter tensors that "
    "require grad and receive a gradient, yet are in no param group of the monitored optimizer, so no step ever "
    "changes them.",
    why="The loss still falls through the layers that are optimized, so the curve looks healthy while part of "
    "the model stays at its initialisation; the bug shows only in the final quality, if at all.",
    not_mean="A second optimizer that owns those parameters is healthy: a GAN's discriminator, an actor and a "
    "critic, a separate optimizer for embeddings. The monitor watches one optimizer, so their parameters look "
    "unoptimized from it; mute the rule there or monitor each optimizer.",
    causes="The optimizer built before a layer was added or replaced (a new head, a resized embedding), a param "
    "group list that misses a submodule, filter(...) over named_parameters that drops a name.",
    try_="Build the optimizer after the model is complete, from model.parameters(); compare "
    "{{id(p) for g in opt.param_groups for p in g['params']}} with the model's trainable parameters.",
)
def check_params_not_optimized(ctx):
    f = _persistent(
        ctx,
        "model/params_outside_optimizer",
        _positive,
        lambda v: f"{_count(v)} with a gradient are in no optimizer group: they are never updated",
        "above 0",
        layer_key="model/params_outside_optimizer",
    )
    if f is not None:
        yield f


@rule(
    "TP-PARAMS-FROZEN",
    Level.WARN,
    GROUP,
    "the optimizer holds parameters that do not require grad",
    needs=[Need("model/params_frozen_in_optimizer", "model_checks")],
    thresholds=["model_checks"],
    detects="`model/params_frozen_in_optimizer` above 0 at {model_checks} checks in a row: parameter tensors in "
    "the optimizer's param groups with requires_grad=False, which therefore never change.",
    why="Handing a parameter to the optimizer says it is meant to train; requires_grad=False on it is how a layer "
    "gets frozen by accident (a copied freezing loop, a loaded checkpoint that sets the flag), and the loss "
    "curve of the rest of the model hides it.",
    not_mean="A backbone frozen on purpose after the optimizer was built over model.parameters() is healthy and "
    "looks the same (PyTorch skips parameters without a gradient); so does gradual unfreezing, whose count "
    "falls over the run. If the freeze is meant, build the optimizer from the trainable parameters only, or "
    "mute the rule.",
    causes="requires_grad=False set on the wrong module (a loop over named_parameters with a too-broad match), "
    "a checkpoint or a library helper that freezes layers, torch.no_grad() used where requires_grad_(False) was "
    "not meant.",
    try_="List [n for n, p in model.named_parameters() if not p.requires_grad] and compare it with the layers "
    "meant to be frozen; build the optimizer from the trainable parameters only.",
)
def check_params_frozen(ctx):
    f = _persistent(
        ctx,
        "model/params_frozen_in_optimizer",
        _positive,
        lambda v: f"{_count(v)} in the optimizer do not require grad: they are frozen",
        "above 0",
        layer_key="model/params_frozen_in_optimizer",
    )
    if f is not None:
        yield f


@rule(
    "TP-PARAMS-NO-GRAD",
    Level.WARN,
    GROUP,
    "parameters in the optimizer get no gradient",
    needs=[Need("model/params_no_grad", "model_checks")],
    thresholds=["model_checks"],
    detects="`model/params_no_grad` above 0 at {model_checks} checks in a row: parameter tensors that require "
    "grad and are in the optimizer have no gradient (None) or an all-zero one at each of those steps; a tensor "
    "without a gradient that moved since the previous check (the sum of its values changed over the whole "
    "interval) got one at a step between and is not counted (a branch used every other step, checked at the steps "
    "it sits out; a block that LayerDrop skips at the check step).",
    why="A parameter without a gradient is cut off from the loss: a .detach() or .item() in the loss path, a "
    "branch never used in forward, a tensor rebuilt outside autograd. The rest of the model still learns, so "
    "the loss curve looks healthy.",
    not_mean="Weights that the task does not use are healthy without gradients: BERT's pooler under a "
    "token-level loss, an auxiliary head whose loss is switched off, a discriminator on its generator's steps. "
    "An expert of a mixture-of-experts layer that one batch routes no token to has none for that batch only, "
    "which the checks in a row leave out. Nor are gradients that are all zero because the loss at that step is "
    "exactly 0 (a hinge or triplet loss met by every example of the batch).",
    causes="A .detach(), .item(), .numpy() or torch.no_grad() in the path from these parameters to the loss; a "
    "module defined but never called in forward; an output overwritten before the loss.",
    try_="After loss.backward(), list [n for n, p in model.named_parameters() if p.requires_grad and "
    "(p.grad is None or not p.grad.any())] and follow the first one to the loss; remove the detach, or drop "
    "the unused module from the optimizer.",
)
def check_params_no_grad(ctx):
    # At a step whose loss is exactly 0 (a margin loss met by every example, a loss fitted
    # to float precision) every gradient is 0: nothing is cut off, there is nothing to learn.
    s = ctx.finite("model/params_no_grad")
    zero_loss = np.zeros(len(s), dtype=bool)
    if ctx.has("loss"):
        loss = ctx.finite("loss")
        zero_loss = isin(s.steps, loss.steps[loss.values == 0])
    f = _persistent(
        ctx,
        "model/params_no_grad",
        lambda v: _positive(v) & ~zero_loss,
        lambda v: f"{_count(v)} in the optimizer get no gradient: they are cut off from the loss",
        "above 0",
        layer_key="model/params_no_grad",
    )
    if f is not None:
        yield f


@rule(
    "TP-PARAMS-NOT-UPDATED",
    Level.WARN,
    GROUP,
    "parameters with a gradient and a learning rate do not change across the optimizer step",
    needs=[Need("model/params_not_updated", "model_checks")],
    thresholds=["model_checks", "params_not_updated_step_log10"],
    detects="`model/params_not_updated` above 0 at {model_checks} checks in a row: parameter tensors in the "
    "optimizer, with a finite non-zero gradient and a group learning rate above 0, that are bit-identical before "
    "and after optimizer.step() (steps the loss scaler skipped are not counted), where the update plain SGD "
    "makes of one of them, lr x RMS(gradient), is at least 10^{params_not_updated_step_log10:g} float "
    "resolutions of its weights (machine epsilon x RMS(weights), for a float32 or float64 tensor; a "
    "half-precision tensor always counts: `model/params_not_updated_step`, log10; a log without it is judged "
    "on the count alone).",
    why="The optimizer was handed the gradient and a learning rate and still left the weights alone: the update "
    "is lost somewhere (a copy of the parameters in the optimizer, a step on the wrong optimizer, weights "
    "overwritten after the step).",
    not_mean="A float32 update below the weight's resolution rounds away, and such tensors are not counted: "
    "the bias of a Linear or convolution that feeds a batch norm has a true gradient of 0 (the norm subtracts "
    "the batch mean), so its gradient is float rounding noise and its update is lost; so is a weight's update "
    "below about 6e-8 of its value under a tiny learning rate. Both are healthy precision limits. A bf16 or "
    "float16 weight left unchanged is counted whatever its update: float32 master weights would have "
    "accumulated the small updates it rounds away (bf16 loses one below about 0.4% of the value). The reading "
    "assumes an update of about lr x gradient (SGD): Adam's steps are about lr whatever the gradient's scale, so "
    "under Adam a tensor with a gradient below float resolution is left out too, though Adam would have moved "
    "it.",
    causes="An optimizer built on copies of the parameters (model.to(device) after the optimizer, deepcopy), "
    "weights reloaded or re-assigned after each step, a second model instance stepped instead of the trained "
    "one, bf16 weights without float32 master copies.",
    try_="Build the optimizer after moving the model to its device; check that "
    "opt.param_groups[0]['params'][0] is next(model.parameters()); keep float32 master weights under bf16.",
)
def check_params_not_updated(ctx):
    # A check where every unchanged tensor's update rounds away (a bias feeding a batch norm,
    # whose gradient is rounding noise) has nothing the optimizer failed to apply.
    s = ctx.finite("model/params_not_updated")
    noise = np.zeros(len(s), dtype=bool)
    if ctx.has("model/params_not_updated_step"):
        g = ctx.finite("model/params_not_updated_step")
        noise = isin(s.steps, g.steps[g.values < ctx.th.params_not_updated_step_log10])
    f = _persistent(
        ctx,
        "model/params_not_updated",
        lambda v: _positive(v) & ~noise,
        lambda v: f"{_count(v)} with a gradient and lr > 0 did not change across the optimizer step",
        "above 0",
        layer_key="model/params_not_updated",
    )
    if f is not None:
        yield f


@rule(
    "TP-GRADS-CLEARED-BEFORE-STEP",
    Level.WARN,
    GROUP,
    "the gradients are cleared between backward() and optimizer.step(): no step changes a weight",
    needs=[Need("model/grads_cleared_before_step", "model_checks")],
    thresholds=["model_checks"],
    implies=("TP-PARAMS-NOT-UPDATED",),
    detects="`model/grads_cleared_before_step` above 0 at {model_checks} checks in a row: parameter tensors in the "
    "optimizer, with a group learning rate above 0, that a backward of the measured step gives a gradient but that "
    "hold none (None) at the end of that step's optimizer.step() and are bit-identical before and after it.",
    why="The optimizer steps on gradients that are no longer there: zero_grad() (or set_to_none) runs after "
    "backward() and before step(), so every step is a no-op. The loss wanders with the batches around its "
    "starting level; a loss curve shows it only once the run is long enough to call it stalled.",
    not_mean="Healthy loops that look like it are not counted: an optimizer given a closure (L-BFGS, Lightning) "
    "runs its backward inside step() and holds the gradients at its end; a loop that clears its gradients after "
    "step() (the usual place, and HF Trainer's) has them at the step; a step the loss scaler skipped holds its "
    "non-finite gradients; accumulation steps without an optimizer step are not measured. A tensor that no "
    "backward of the step reaches has no gradient to lose and is not counted: the head of the task a step does not "
    "train, a layer LayerDrop skips, an expert no token is routed to. Gradients cleared with "
    "zeros (set_to_none=False) are not told apart from unused parameters and are not counted.",
    causes="optimizer.zero_grad() moved between loss.backward() and optimizer.step() (a refactoring, a callback "
    "that clears gradients after logging them), model.zero_grad() inside a logging hook, a gradient-clipping helper "
    "that replaces the gradients with None.",
    try_="Call optimizer.zero_grad() at the start of each optimizer step (before the forward pass) or right after "
    "optimizer.step(), never between backward() and step().",
)
def check_grads_cleared_before_step(ctx):
    f = _persistent(
        ctx,
        "model/grads_cleared_before_step",
        _positive,
        lambda v: f"{_count(v)} get a gradient from backward but none at optimizer.step(): nothing is updated",
        "above 0",
        layer_key="model/grads_cleared_before_step",
    )
    if f is not None:
        yield f


@rule(
    "TP-GRAD-NONFINITE-LAYER",
    Level.FAIL,
    GROUP,
    "gradients hold NaN or Inf before the optimizer step, at every check to the end",
    needs=[Need("model/grad_nonfinite_params", "model_checks")],
    thresholds=["model_checks"],
    implies=("TP-NAN-GRAD",),
    least_evidence="Non-finite gradients at the last {model_checks} checks or more, with no clean check after "
    "them: a loss scaler that skips an overflowing step recovers within a few steps.",
    detects="`model/grad_nonfinite_params` above 0 at the last {model_checks} or more checks in a row, none "
    "clean after them: parameter tensors whose gradient holds NaN or Inf before the step; the evidence names the "
    "first such layer in model.named_parameters() order, where the fault entered.",
    why="Without a loss scaler a non-finite gradient turns the weights NaN at the next step; with one, a scaler "
    "that sees overflow at every check has collapsed its scale and skips every step. Either way training has "
    "stopped, and the first layer named is where to look.",
    not_mean="Non-finite gradients at a check followed by clean checks are a mixed-precision loss scaler at "
    "work (it skips the step, halves the scale and recovers): healthy, and not this rule. A NaN loss with "
    "finite gradients is TP-NAN.",
    causes="A log, sqrt, division or exp in the loss or a custom layer that overflows on some input (the first "
    "layer named is where it enters), fp16 without a loss scaler, a learning rate so high the weights overflowed, "
    "NaN in the input data.",
    try_="Resume from the last checkpoint before the first non-finite check with a lower learning rate and "
    "gradient clipping; with torch.autograd.set_detect_anomaly(True) find the operation that produced it in the "
    "layer named; use bf16 or a GradScaler.",
)
def check_grad_nonfinite_layer(ctx):
    f = _persistent(
        ctx,
        "model/grad_nonfinite_params",
        _positive,
        lambda v: f"gradients of {_count(v)} are NaN/Inf before the step, at every check to the end",
        "above 0",
        layer_key="model/grad_nonfinite_layer",
        to_end=True,
    )
    if f is not None:
        yield f


@rule(
    "TP-GRADS-NOT-RESET",
    Level.FAIL,
    GROUP,
    "gradients are never reset between optimizer steps (zero_grad missing)",
    needs=[Need("model/grads_not_reset", "model_checks")],
    thresholds=["model_checks"],
    least_evidence="The points are consecutive checks, each a measurement of its own optimizer step: at every "
    "one the gradient after backward still held the gradient of before the previous step.",
    detects="`model/grads_not_reset` is 1 at {model_checks} checks in a row: the gradient present after a "
    "step's backward still holds what it held before the previous optimizer step, so every step adds its "
    "gradient to all the earlier ones.",
    why="Without zero_grad each update is the sum of every gradient so far: the effective step grows with "
    "the step count and follows stale directions. The loss may still fall for a while, then stalls or "
    "diverges.",
    not_mean="Gradient accumulation done right (zero_grad once per optimizer step, backward several times "
    "between) resets at every optimizer step and reads 0 here; the measurement compares the gradient with what "
    "the backward passes since the last optimizer step delivered, so no accumulation schedule looks like it.",
    causes="optimizer.zero_grad() missing, called on another optimizer or model, or placed after backward and "
    "before step (it then clears the fresh gradient, TP-PARAMS-NO-GRAD's case) in a hand-written loop.",
    try_="Call optimizer.zero_grad(set_to_none=True) once per optimizer step, before the backward passes of the "
    "next step; restart from an early checkpoint.",
)
def check_grads_not_reset(ctx):
    f = _persistent(
        ctx,
        "model/grads_not_reset",
        lambda v: v >= 0.5,
        lambda v: "gradients are not reset between optimizer steps: each step adds up every earlier gradient",
        "1 (not reset)",
    )
    if f is not None:
        yield f


@rule(
    "TP-EVAL-MODE-TRAINING",
    Level.WARN,
    GROUP,
    "the model is in evaluation mode while it trains",
    needs=[Need("model/eval_mode_share", "model_checks")],
    thresholds=["model_checks", "eval_mode_share"],
    detects="`model/eval_mode_share` at or above {eval_mode_share:.0%} at {model_checks} checks in a row: "
    "model.training was False at that share of the log() calls of each interval between checks.",
    why="In eval mode dropout is off and batch normalization uses its running statistics instead of the batch's "
    "and stops updating them: the model trains without its regularization and with stale normalization, and the "
    "loss looks better than it will generalize.",
    not_mean="Batch normalization frozen on purpose (fine-tuning a detector with small batches, which calls "
    "model.eval() and trains on) is a deliberate choice, and so is a model without dropout or normalization, "
    "where the mode changes nothing. A periodic validation pass that logs inside the training loop is in eval "
    "mode for a minority of the calls, under the bar.",
    causes="model.eval() before a validation pass without model.train() after it; a training loop that starts "
    "after an evaluation; a framework callback that switches the mode.",
    try_="Call model.train() at the start of every training epoch (after each validation pass); to freeze "
    "batch normalization only, put just those modules in eval mode.",
)
def check_eval_mode(ctx):
    bar = ctx.th.eval_mode_share
    f = _persistent(
        ctx,
        "model/eval_mode_share",
        lambda v: v >= bar,
        lambda v: f"the model is in eval mode at {pct(v)} of the log() calls between two checks",
        f"at or above {pct(bar)}",
    )
    if f is not None:
        yield f


@rule(
    "TP-SOFTMAX-BEFORE-LOSS",
    Level.WARN,
    GROUP,
    "a loss that applies softmax (or sigmoid) itself is given probabilities",
    needs=[Need("model/probs_as_logits", "model_checks")],
    thresholds=["model_checks"],
    least_evidence="The points are consecutive checks, each a look at the autograd graph of that step's loss: "
    "the graph itself is the evidence, not a curve.",
    detects="`model/probs_as_logits` is 1 at {model_checks} checks in a row: in the autograd graph of the "
    "loss given to the monitor, the log-softmax of a cross-entropy takes the output of a softmax, or a "
    "binary cross-entropy with logits takes the output of a sigmoid (through reshapes, casts and selections "
    "only). Measured by `trainproof.monitor` from the loss tensor passed to `log()` (a float carries no graph).",
    why="CrossEntropyLoss applies log-softmax to its input and BCEWithLogitsLoss a sigmoid: given probabilities, "
    "the loss can only move inside a narrow band (for 10 classes between about 1.46 and ln 10) and its "
    "gradients are squashed twice, so the model crawls near chance or learns far slower than it should. A loss "
    "curve shows a slow learner; the graph shows the cause.",
    not_mean="A model that outputs probabilities for inference and takes torch.log of them into NLLLoss, or "
    "gives them to BCELoss (a loss that expects probabilities), is correct and not flagged; so is a softmax "
    "elsewhere in the graph (attention, a distillation target).",
    causes="nn.Softmax (or a sigmoid) left as the model's last layer from inference code, a model copied from a "
    "Keras example whose loss expects probabilities, a head that returns probs where the loss wants logits.",
    try_="Return logits from the model and let the loss apply the softmax (CrossEntropyLoss) or sigmoid "
    "(BCEWithLogitsLoss); apply softmax only at inference. Restart training: the run so far learned with "
    "squashed gradients.",
)
def check_softmax_before_loss(ctx):
    f = _persistent(
        ctx,
        "model/probs_as_logits",
        lambda v: v >= 0.5,
        lambda v: (
            "the loss is given probabilities: it applies its own softmax (or sigmoid) to an output that already had one"
        ),
        "1 (a squashing function applied twice)",
        layer_key="model/probs_as_logits_layer",
    )
    if f is not None:
        yield f


#: Epochs per optimizer step at or above which every step sees the whole data set (float
#: rounding of a logged fractional epoch left aside): a step is an epoch.
FULL_BATCH_EPOCHS_PER_STEP = 0.999


def full_batch(ctx) -> bool:
    """Whether the log shows full-batch training: an epoch logged at two steps or more
    (the monitor's ``epoch=``, the HF callback's fractional epoch, the Lightning
    callback's where its scheduler steps once an epoch) that
    advanced by at least one epoch per optimizer step over the run, as it does where the
    data set is one batch (a graph network on its full graph, a PINN, L-BFGS)."""
    if not ctx.has("epoch"):
        return False
    e = ctx.finite("epoch")
    if len(e) < 2 or not e.steps[-1] > e.steps[0]:
        return False
    return (float(e.values[-1]) - float(e.values[0])) / (
        float(e.steps[-1]) - float(e.steps[0])
    ) >= FULL_BATCH_EPOCHS_PER_STEP


@rule(
    "TP-SAME-BATCH",
    Level.WARN,
    GROUP,
    "the model trains on the same input batch at every check",
    needs=[Need("model/same_batch", "same_batch_checks")],
    thresholds=["same_batch_checks"],
    least_evidence="The points are consecutive checks, each comparing the input trained on with the one of "
    "the check before: a fingerprint, not a curve.",
    detects="`model/same_batch` is 1 at {same_batch_checks} checks in a row: the first training forward pass "
    "of each check step (gradients on, training mode; with `activations=True`) took an input with the same "
    "shape, float64 sum and sum of squares as at the check before it.",
    why="A model shown one batch over and over memorises it: the training loss falls fast and smoothly, the "
    "look of a run learning well, while nothing is learned about the data set; only a held-out loss shows it, "
    "and only later.",
    not_mean="Full-batch training (the whole data set at every step: a small regression, a PINN, L-BFGS) "
    "shows the same input at every check by design; so does a data set no larger than one batch. Where the log "
    "has an epoch that advances by a whole epoch at every optimizer step (the monitor's `epoch=`, the HF "
    "callback's epoch, the Lightning callback's with a per-epoch scheduler), that is what it is and the rule does not fire; without one, mute it. Evaluation "
    "passes are not compared (they run without gradients or in eval mode).",
    causes="`next(iter(loader))` inside the loop (a fresh iterator each step, without shuffling: its first "
    "batch), one batch drawn before the loop from a debugging session, a sampler or data set that returns one "
    "item, an index that never advances.",
    try_="Iterate the loader (`for x, y in loader:`) or keep one iterator across steps; check that two "
    "consecutive batches differ.",
)
def check_same_batch(ctx):
    if full_batch(ctx):
        return
    f = _persistent(
        ctx,
        "model/same_batch",
        lambda v: v >= 0.5,
        lambda v: "the model trains on the same input batch at every check",
        "1 (the batch of the check before)",
        need=int(ctx.th.same_batch_checks),
    )
    if f is not None:
        yield f


# --- per-layer gradients and updates ------------------------------------------------------


@rule(
    "TP-LAYER-UPDATE-RATIO",
    Level.WARN,
    GROUP,
    "one layer's weights change far too much, or far too little, per step",
    needs=[Need("model/layer_update_ratio_max", "model_checks")],
    thresholds=[
        "model_checks",
        "layer_update_ratio_high_log10",
        "layer_update_ratio_low_log10",
        "update_ratio_low_log10",
    ],
    detects="At {model_checks} checks in a row, the largest per-layer update ratio ||W_after - W_before|| / "
    "||W_after|| across an optimizer step (weight matrices, log10 in `model/layer_update_ratio_max`) is above "
    "{layer_update_ratio_high_log10:g}; or the smallest (`model/layer_update_ratio_min`) is below "
    "{layer_update_ratio_low_log10:g} while the largest is at least {update_ratio_low_log10:g}.",
    why="The update ratio is the step size each layer actually takes (~1e-3 is the rule of thumb). One layer far "
    "above it is rewritten at every step and destabilizes the rest; one far below it, while others move, "
    "barely learns: a global learning rate or update ratio hides both.",
    not_mean="A zero-initialised layer (a LoRA B matrix, a positional embedding, a fresh head) starts with "
    "ratios near 1 that fall at every check while it settles: a run of checks above the bar whose ratio falls at "
    "each one is left out. Layer-wise learning-rate decay in fine-tuning gives the "
    "bottom layers small ratios on purpose; the end of a decaying schedule lowers every layer, which is not "
    "this rule (the largest must still move).",
    causes="Too high: a learning rate too high for that layer, no warm-up, weights with a tiny norm (weight decay "
    "too strong). Too low: a param group with a tiny learning rate, a layer whose gradients vanish, bf16 weights "
    "rounding the update away.",
    try_="Give the layer named its own param group with a learning rate that brings its ratio near 1e-3; check "
    "weight decay and initialization of that layer.",
)
def check_layer_update_ratio(ctx):
    high = _persistent(
        ctx,
        "model/layer_update_ratio_max",
        lambda v: v > ctx.th.layer_update_ratio_high_log10,
        lambda v: f"a layer's weights change by 10^{v:.1f} of their norm per step (rule of thumb ~1e-3)",
        f"above {num(ctx.th.layer_update_ratio_high_log10)} (log10)",
        layer_key="model/layer_update_ratio_max_layer",
        # A fresh layer settling (zero-initialised: its ratio starts near 1 and falls at every
        # check) is not a layer rewritten at every step.
        accept=lambda v: bool(np.any(np.diff(v) >= 0)),
    )
    if high is not None:
        yield high
        return
    if not ctx.has("model/layer_update_ratio_min"):
        return
    pair = _aligned(ctx, "model/layer_update_ratio_min", "model/layer_update_ratio_max")
    if pair is None:
        return
    both, hi_values = pair
    moving = hi_values >= ctx.th.update_ratio_low_log10
    hit = (both.values < ctx.th.layer_update_ratio_low_log10) & moving
    streak = _streak(both, hit, ctx.th.model_checks)
    if streak is None:
        return
    start, length = streak
    end = start + length - 1
    text, name = _layer_text(ctx, "model/layer_update_ratio_min_layer")
    v0 = float(both.values[start])
    yield ctx.finding(
        f"a layer's weights change by only 10^{v0:.1f} of their norm per step while others train",
        f"model/layer_update_ratio_min was below {num(ctx.th.layer_update_ratio_low_log10)} (log10) while "
        f"model/layer_update_ratio_max was at least {num(ctx.th.update_ratio_low_log10)} at {length} checks in a "
        f"row, from step {step(both.steps[start])} (line {int(both.lines[start])}, smallest {v0:.2f}, largest "
        f"{float(hi_values[start]):.2f}) to step {step(both.steps[end])}; needed {ctx.th.model_checks} in a "
        f"row.{text}",
        {
            "key": "model/layer_update_ratio_min",
            "first_step": float(both.steps[start]),
            "checks_in_a_row": length,
            "first_value": v0,
            "layer": name,
        },
        step=both.steps[start],
        line=both.lines[start],
    )


@rule(
    "TP-LAYER-GRAD-EXPLODING",
    Level.WARN,
    GROUP,
    "one layer's gradient is orders of magnitude above the rest of the model's",
    needs=[Need("model/layer_grad_norm_max", "model_checks")],
    thresholds=["model_checks", "layer_grad_exploding_log10"],
    detects="`model/layer_grad_norm_max` (log10 of the largest weight matrix's gradient norm over the median "
    "weight matrix's) above {layer_grad_exploding_log10:g} at {model_checks} checks in a row.",
    why="A layer whose gradient dwarfs the others' takes most of every update and, under global gradient "
    "clipping, shrinks everyone else's to nothing; it is the usual first sign of a divergence that the loss "
    "shows only later.",
    not_mean="Embedding tables and output heads legitimately carry the largest gradients (within a decade or "
    "two of the median); a single check at the start of training, before the scales settle, is left out by "
    "the checks in a row.",
    causes="A layer initialized with a far too large scale, a missing normalization before it, an input feature "
    "on a huge scale, a learning rate too high for that layer; batch normalization over a batch of 2, which maps "
    "each unit to about +/-1 whatever its input and passes a gradient near 0 or amplified up to 1/(2 sqrt(eps)) "
    "(158 at PyTorch's eps), compounding over the layers.",
    try_="Inspect the layer named: its initialization, the scale of its input, a normalization before it; clip "
    "gradients per layer or give it a lower learning rate. Under batch norm at a batch of a few examples, use a "
    "batch of 8 or more, or GroupNorm or LayerNorm.",
)
def check_layer_grad_exploding(ctx):
    bar = ctx.th.layer_grad_exploding_log10
    f = _persistent(
        ctx,
        "model/layer_grad_norm_max",
        lambda v: v > bar,
        lambda v: f"a layer's gradient norm is 10^{v:.1f} times the median layer's",
        f"above {num(bar)} (log10 of the ratio to the median layer)",
        layer_key="model/layer_grad_norm_max_layer",
    )
    if f is not None:
        yield f


@rule(
    "TP-LAYER-GRAD-VANISHING",
    Level.WARN,
    GROUP,
    "one layer's gradient is orders of magnitude below the rest of the model's",
    needs=[Need("model/layer_grad_norm_min", "model_checks")],
    thresholds=["model_checks", "layer_grad_vanishing_log10"],
    detects="`model/layer_grad_norm_min` (log10 of the smallest weight matrix's gradient norm over the median "
    "weight matrix's) below {layer_grad_vanishing_log10:g} at {model_checks} checks in a row.",
    why="A layer whose gradient is ten thousand times smaller than the typical one's learns that much slower: "
    "in a deep stack without residual connections or normalization the first layers stop learning while the "
    "loss still falls through the last ones.",
    not_mean="A layer frozen on purpose has no gradient and is not counted (all-zero gradients are "
    "TP-PARAMS-NO-GRAD's); layers that a task uses rarely (rows of a huge embedding table) carry small "
    "gradients by design.",
    causes="Saturating activations (sigmoid, tanh) in a deep stack, a very deep network without residual "
    "connections or normalization, a gate that closes the layer off, a bad initialization scale; batch "
    "normalization over a batch of 2 (each unit normalized to about +/-1 whatever its input: the layers before "
    "it get a gradient near 0).",
    try_="Inspect the layer named and the activations between it and the loss; add residual connections or "
    "normalization; use ReLU-family activations and a fan-in initialization (He, Glorot). Under batch norm at a "
    "batch of a few examples, use a batch of 8 or more, or GroupNorm or LayerNorm.",
)
def check_layer_grad_vanishing(ctx):
    bar = ctx.th.layer_grad_vanishing_log10
    f = _persistent(
        ctx,
        "model/layer_grad_norm_min",
        lambda v: v < bar,
        lambda v: f"a layer's gradient norm is 10^{v:.1f} of the median layer's",
        f"below {num(bar)} (log10 of the ratio to the median layer)",
        layer_key="model/layer_grad_norm_min_layer",
        low=True,
    )
    if f is not None:
        yield f


# --- activations (activations=True) -------------------------------------------------------


@rule(
    "TP-DEAD-RELU",
    Level.FAIL,
    GROUP,
    "a whole ReLU layer outputs nothing positive, at every check",
    needs=[Need("model/dead_relu_share", "model_checks")],
    thresholds=["model_checks", "dead_relu_share"],
    least_evidence="The points are consecutive checks, each on a batch of its own: a layer dead on one batch is "
    "not enough.",
    detects="`model/dead_relu_share` at or above {dead_relu_share:.0%} at {model_checks} checks in a row: that "
    "share of a ReLU module's output units was never positive over the whole batch of each check.",
    why="A ReLU unit that is never positive passes no gradient, so it can never recover; a whole layer dead "
    "cuts every path through it, and everything before it stops learning while the loss sits at what the rest "
    "can do.",
    not_mean="Sparse activations are healthy: a share of the units inactive on a given batch (a trained network "
    "often has 10-50%) is not a dead layer, and a single check on one batch is left out by the checks in a row.",
    causes="A learning rate so high that one large update pushed every bias far negative, a bad initialization "
    "(negative biases, a huge weight scale), inputs that are not normalized.",
    try_="Restart from an early checkpoint with a lower learning rate and warm-up; use He initialization with "
    "zero biases; consider LeakyReLU or GELU for the layer named.",
)
def check_dead_relu(ctx):
    bar = ctx.th.dead_relu_share
    f = _persistent(
        ctx,
        "model/dead_relu_share",
        lambda v: v >= bar,
        lambda v: f"{pct(v)} of a ReLU layer's units are never positive: the layer is dead",
        f"at or above {pct(bar)}",
        layer_key="model/dead_relu_layer",
    )
    if f is not None:
        yield f


@rule(
    "TP-RELU-MOSTLY-DEAD",
    Level.WARN,
    GROUP,
    "most of a ReLU layer's units output nothing positive over a batch, at every check",
    needs=[Need("model/dead_relu_share", "model_checks"), Need("model/dead_relu_rows", "model_checks")],
    thresholds=["model_checks", "dead_relu_most_share", "activation_min_rows"],
    implied_by=("TP-DEAD-RELU",),
    detects="`model/dead_relu_share` at or above {dead_relu_most_share:.0%} at {model_checks} checks in a row, "
    "each over at least {activation_min_rows} rows (`model/dead_relu_rows`: the examples of the check's batch, "
    "times the positions of a sequence or an image): that share of a ReLU module's units was never positive on "
    "any of them.",
    why="A unit that is never positive passes no gradient and cannot recover: a layer that lost most of its "
    "units trains through the few left, and the loss curve shows only a slow learner.",
    not_mean="Sparse activations are healthy: measured on generated healthy MLPs, up to 0.69 of a narrow deep "
    "net's units sat dead at three checks in a row and the net still learned. On a batch of a few examples most "
    "units are inactive by chance, which is why a check over fewer than {activation_min_rows} rows is not read. "
    "A layer with every unit dead is TP-DEAD-RELU's (a FAIL).",
    causes="Negative biases or a far too large weight scale at initialization, a learning rate whose early "
    "updates pushed the pre-activations negative, inputs that are not normalized.",
    try_="Initialize the layer named with He initialization and zero biases; lower the learning rate or add "
    "warm-up; consider LeakyReLU or GELU for it.",
)
def check_relu_mostly_dead(ctx):
    f = _wide_share(
        ctx,
        "model/dead_relu_share",
        "model/dead_relu_rows",
        ctx.th.dead_relu_most_share,
        lambda v: f"{pct(v)} of a ReLU layer's units are never positive over the check's batch",
        "model/dead_relu_layer",
    )
    if f is not None:
        yield f


@rule(
    "TP-SATURATION",
    Level.WARN,
    GROUP,
    "a tanh or sigmoid layer is saturated",
    needs=[Need("model/saturated_share", "model_checks")],
    thresholds=["model_checks", "saturation_share", "saturation_rows_share", "activation_min_rows"],
    detects="`model/saturated_share` at or above {saturation_share:.0%} at {model_checks} checks in a row, or at "
    "or above {saturation_rows_share:.0%} at {model_checks} checks in a row each over at least "
    "{activation_min_rows} rows (`model/saturated_rows`: the examples of the check's batch, times the positions "
    "of a sequence or an image): that "
    "share of a hidden tanh or sigmoid module's outputs within 1% of an asymptote (|tanh| > 0.99, sigmoid < 0.01 "
    "or > 0.99), where the derivative is below 0.02. A call whose output is the model's output (itself, or after "
    "operations of one tensor and no parameter: a view, a squeeze, 2 * x - 1) is the output layer and is not "
    "measured; the probe lists it as `saturation_output_layers`.",
    why="A saturated unit passes almost no gradient: the layers before it stop learning, and the layer itself "
    "can only leave saturation slowly.",
    not_mean="Measured on generated healthy MLPs, hidden tanh and sigmoid layers trained at batches of 1 to 4 "
    "reach 0.98 (small noisy steps drive the weights up), which only the higher bar reads; from "
    "{activation_min_rows} rows on they stayed at 0.16 or less. "
    "A sigmoid or tanh on the output of a well-trained model saturates because it is confident (a "
    "binary classifier trained with BCE near 0 and 1, a tanh fitting targets of +/-1): healthy, and not measured. "
    "An output squashed by a function call (torch.sigmoid) rather than a module is not hooked at all. Gates that "
    "are meant to be open or closed (squeeze-and-excitation, attention gates) are hidden layers and may saturate "
    "by design.",
    causes="Inputs not normalized, weights initialized on too large a scale, a learning rate that blew the "
    "pre-activations up.",
    try_="Normalize the inputs of the layer named, use Glorot initialization, add a normalization layer "
    "before it, or lower the learning rate.",
)
def check_saturation(ctx):
    bar = ctx.th.saturation_share
    f = _persistent(
        ctx,
        "model/saturated_share",
        lambda v: v >= bar,
        lambda v: f"{pct(v)} of a tanh/sigmoid layer's outputs are saturated",
        f"at or above {pct(bar)}",
        layer_key="model/saturated_layer",
    )
    if f is None and ctx.has("model/saturated_rows"):
        f = _wide_share(
            ctx,
            "model/saturated_share",
            "model/saturated_rows",
            ctx.th.saturation_rows_share,
            lambda v: f"{pct(v)} of a tanh/sigmoid layer's outputs are saturated over the check's batch",
            "model/saturated_layer",
        )
    if f is not None:
        yield f


# --- distributed and schedule -------------------------------------------------------------


@rule(
    "TP-REPLICA-DRIFT",
    Level.FAIL,
    GROUP,
    "data-parallel replicas hold different parameters",
    needs=[Need("model/replica_drift", "replica_drift_checks")],
    thresholds=["replica_drift_checks", "replica_drift_tol"],
    least_evidence="The points are consecutive replica checks (the first two checks, then every replica_every "
    "checks): one measurement "
    "apart could be a rank caught mid-update.",
    detects="`model/replica_drift` (the largest relative difference, over ranks, of a checksum of every "
    "parameter from rank 0's) above {replica_drift_tol} at {replica_drift_checks} replica checks in a row.",
    why="Data-parallel replicas must be identical: each rank computes its gradient on its own model, so ranks "
    "that differ average gradients of different models, and the run trains none of them; the checkpoint saved "
    "by rank 0 is not the model the others trained.",
    not_mean="Sharded training (FSDP, ZeRO-3, tensor, pipeline or expert parallelism) holds different "
    "parameters on each rank by design, and periodic averaging (local SGD, DiLoCo) lets replicas drift between "
    "averagings: neither is a set of replicas, so the replica check does not apply there (replica_every=0, or "
    "mute the rule). Within data parallelism, a difference of summation order on mixed hardware stays far below "
    "the tolerance.",
    causes="A rank that built its model from another seed and was never synchronized (a hand-written data "
    "parallel loop, parameters changed after DDP wrapped the model), a rank that skipped an optimizer step or "
    "loaded another checkpoint, buffers or parameters modified on one rank only.",
    try_="Seed every rank identically before building the model, wrap it in DistributedDataParallel (which "
    "broadcasts rank 0's parameters) after every change to it, and restart from a checkpoint saved before the "
    "drift.",
)
def check_replica_drift(ctx):
    tol = ctx.th.replica_drift_tol
    f = _persistent(
        ctx,
        "model/replica_drift",
        lambda v: v > tol,
        lambda v: f"data-parallel replicas differ: their parameter checksums are {num(v)} apart (relative)",
        f"above {num(tol)}",
        need=ctx.th.replica_drift_checks,
    )
    if f is not None:
        yield f


@rule(
    "TP-SCHEDULER-STUCK",
    Level.WARN,
    GROUP,
    "the learning-rate scheduler does not step",
    needs=[Need("model/scheduler_steps", "model_checks")],
    thresholds=["model_checks", "scheduler_stuck_steps"],
    detects="`model/scheduler_steps` (the scheduler's step count) unchanged from some check to the last, over "
    "at least {model_checks} checks, and the logged learning rate did not move either, while either the optimizer "
    "took {scheduler_stuck_steps} steps or more (or, where the log records `epoch`, a whole epoch passed), or the "
    "scheduler stands in a warm-up that cannot finish within the run: its learning rate still rises for "
    "`model/scheduler_warmup_left` more scheduler steps (read from the schedule's closed form: LambdaLR, "
    "LinearLR), and a scheduler that stood still over S logged steps takes at most 1 + R/S more steps in the R "
    "steps left to the declared max_steps, fewer than the warm-up needs.",
    why="A scheduler built and never stepped leaves the learning rate at its first value: no warm-up, no "
    "decay. The run trains, usually worse than planned, and nothing in the loss says why. A warm-up's first "
    "value is a small fraction of the rate the run was tuned for, so a warm-up that cannot finish trains the "
    "whole run at that fraction.",
    not_mean="A scheduler stepped once per epoch stands still within an epoch: a flat schedule waits for "
    "{scheduler_stuck_steps} optimizer steps, or a whole epoch where `epoch` is logged (the Lightning callback "
    "records it where the scheduler is configured with interval='epoch'; pass epoch= to the monitor). A warm-up "
    "stepped per epoch is judged against the declared max_steps: a run of E epochs leaves it E steps, so a "
    "warm-up of a few epochs in a run of more is never flagged. A scheduler stepped at irregular moments (on an "
    "event, not a cadence), or held back on purpose before it starts stepping per batch (a burn-in outside the "
    "schedule), is outside the warm-up reading's assumption and is flagged while it waits; a max_steps shorter than the run "
    "really is (a run meant to resume) makes every warm-up look short of room. A constant schedule needs no "
    "scheduler, and a learning rate moved by other code (the logged lr changes) is not stuck.",
    causes="scheduler.step() missing, called in a branch never taken, or on another scheduler; a scheduler "
    "stepped per epoch where per batch was meant (a warm-up written in optimizer steps, stepped per epoch).",
    try_="Call scheduler.step() after optimizer.step() at the cadence the scheduler was built for (per batch "
    "for warm-up and OneCycle, per epoch for StepLR); log the lr to see it move.",
)
def check_scheduler_stuck(ctx):
    s = ctx.finite("model/scheduler_steps")
    v = s.values
    changed = np.flatnonzero(v[1:] != v[:-1])
    start = int(changed[-1]) + 1 if changed.size else 0
    if len(s) - start < ctx.th.model_checks:
        return
    a, b = float(s.steps[start]), float(s.steps[-1])
    opt = ctx.finite("model/optimizer_steps") if ctx.has("model/optimizer_steps") else None
    span, unit = b - a, "logged steps"
    if opt is not None and len(opt):
        inside = opt.values[(opt.steps >= a) & (opt.steps <= b)]
        if inside.size >= 2:
            span, unit = float(inside[-1] - inside[0]), "optimizer steps"
    epochs = None
    if ctx.has("epoch"):
        ep = ctx.finite("epoch")
        inside = ep.values[(ep.steps >= a) & (ep.steps <= b)]
        if inside.size >= 2:
            epochs = float(inside[-1] - inside[0])
    warm = _warmup_short(ctx, s, start)
    short = epochs < 1 if epochs is not None else span < ctx.th.scheduler_stuck_steps
    if warm is None and short:
        return
    if ctx.has("lr"):
        lr = ctx.finite("lr")
        inside = lr.values[(lr.steps >= a) & (lr.steps <= b)]
        if inside.size >= 2 and np.ptp(inside) > 0:
            return
    over = f"{num(epochs)} epochs" if epochs is not None else f"{step(span)} {unit}"
    data = {
        "key": "model/scheduler_steps",
        "scheduler_steps": float(v[start]),
        "first_step": a,
        "last_step": b,
        "checks": len(s) - start,
        "span": span,
        "span_unit": unit,
        "epochs": epochs,
    }
    if warm is not None:
        left, room, max_steps = warm
        yield ctx.finding(
            f"the learning-rate warm-up cannot finish: the scheduler stood still over {step(b - a)} steps",
            f"model/scheduler_steps stayed at {num(v[start])} at {len(s) - start} checks in a row, from step "
            f"{step(a)} (line {int(s.lines[start])}) to the last check at step {step(b)} ({over}), and the logged "
            f"learning rate did not move. Its schedule still rises for {int(left)} more scheduler steps "
            f"(model/scheduler_warmup_left); at one step per more than {step(b - a)} logged steps, the "
            f"{step(max(0.0, max_steps - b))} steps left to max_steps {step(max_steps)} hold at most {int(room)}.",
            {**data, "warmup_left": float(left), "steps_room": float(room), "max_steps": max_steps},
            step=a,
            line=s.lines[start],
        )
        return
    yield ctx.finding(
        f"the learning-rate scheduler did not step over {over}",
        f"model/scheduler_steps stayed at {num(v[start])} at {len(s) - start} checks in a row, from step "
        f"{step(a)} (line {int(s.lines[start])}) to the last check at step {step(b)}, over {over} (needed "
        f"{ctx.th.scheduler_stuck_steps} optimizer steps, or a whole epoch where the epoch is logged), and the "
        f"logged learning rate did not move.",
        data,
        step=a,
        line=s.lines[start],
    )


def _warmup_short(ctx, s: Series, start: int) -> tuple[float, float, float] | None:
    """``(left, room, max_steps)`` when the scheduler, unchanged in ``s`` from check
    ``start`` to the last, stands in a warm-up that cannot finish by the declared max_steps
    at the cadence seen: ``left`` (``model/scheduler_warmup_left`` at the last check) rising
    scheduler steps still to come, more than ``room`` = 1 + R // S, the most steps a
    scheduler that stood still over S logged steps takes in the R logged steps left. ``None``
    otherwise, or when the run declares no max_steps or has no warm-up measured."""
    max_steps = declared_max_steps(ctx.run)
    if max_steps is None or not ctx.has("model/scheduler_warmup_left"):
        return None
    w = ctx.finite("model/scheduler_warmup_left")
    a, b = float(s.steps[start]), float(s.steps[-1])
    at_end = w.values[w.steps == b]
    held = b - a
    if at_end.size == 0 or held <= 0:
        return None
    left = float(at_end[-1])
    room = 1.0 + float(np.floor(max(0.0, max_steps - b) / held))
    return (left, room, max_steps) if left > room else None


def _wide_share(ctx, key: str, rows_key: str, bar: float, message: Callable[[float], str], layer_key: str):
    """The finding of a share ``key`` at or above ``bar`` at ``model_checks`` checks in a
    row, each measured over at least ``activation_min_rows`` rows (``rows_key`` at the same
    check), or ``None``."""
    pair = _aligned(ctx, key, rows_key)
    if pair is None:
        return None
    both, rows = pair
    wide = rows >= ctx.th.activation_min_rows
    streak = _streak(both, (both.values >= bar) & wide, ctx.th.model_checks)
    if streak is None:
        return None
    start, length = streak
    end = start + length - 1
    inside = both.values[start : end + 1]
    v0 = float(both.values[start])
    text, name = _layer_text(ctx, layer_key)
    return ctx.finding(
        message(v0),
        f"{key} was at or above {pct(bar)} over at least {ctx.th.activation_min_rows} rows ({rows_key}) at "
        f"{length} checks in a row, from step {step(both.steps[start])} (line {int(both.lines[start])}, value "
        f"{num(v0)}, {int(rows[start])} rows) to step {step(both.steps[end])} (largest "
        f"{num(float(np.max(inside)))}); needed {ctx.th.model_checks} in a row.{text}",
        {
            "key": key,
            "first_step": float(both.steps[start]),
            "last_step": float(both.steps[end]),
            "checks_in_a_row": length,
            "first_value": v0,
            "extreme_value": float(np.max(inside)),
            "rows": float(rows[start]),
            "layer": name,
        },
        step=both.steps[start],
        line=both.lines[start],
    )
