"""What a live stop rests on and what it tells: the measured cause, the chosen rules, where to resume.

A run still training is stopped (the monitor's ``policy="raise"``, the callbacks'
``stop_on_fail``) at a FAIL. A FAIL that claims the loss made no progress
(:func:`trainproof.rules.engine.no_progress_claim`: TP-DEAD-RUN, TP-FLAT, TP-CHANCE-LEVEL…)
rests on the loss alone, and a slow but healthy learner's first few hundred noisy points can
look the same. So a live stop on such a claim needs a *measured cause* in the history
(:func:`measured_cause`): a learning rate about zero, updates about zero, gradients about
zero, parameters outside the optimizer, or no trainable tensor updated. Without one the
finding is turned into a WARN for the run still training (:func:`demote_uncaused`) and the
run goes on. A divergence whose climb gives back little of what the run learned, with
no blow-up and no learning rate that climbed before it, is held as a WARN the same way
(:func:`hold_small_divergence`): a healthy run's bump looks the same until it comes back.
The judgement of the ended run (``trainproof judge`` on its log) is not touched.

A stop names the last good step before the onset its finding cites, the newest checkpoint
at or before it when the framework keeps checkpoints, and the rule's first remedy
(:func:`resume_advice`).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Sequence

import numpy as np

from ..findings import Finding, Level
from ..rules._fmt import num
from ..rules._fmt import step as step_fmt
from ..rules._shared import CLEARED_KEY, trainable_tensors
from ..rules._shared import LAYER_UPDATE_RATIO_KEY as LAYER_RATIO_KEY
from ..rules._stats import repeats_one_value
from ..rules.registry import canonical_id, get
from ..rules.thresholds import Thresholds
from ..runlog import RunLog

#: The model-level keys the probes record at check steps (see the issue-34 design): read
#: here when present.
OUTSIDE_KEY = "model/params_outside_optimizer"
NOT_UPDATED_KEY = "model/params_not_updated"

#: The phrase a demoted finding's message ends with.
UNCAUSED_NOTE = (
    "no measured cause was found in the history (a learning rate, updates or gradients about zero, parameters "
    "outside the optimizer), so the run goes on"
)


def _late(run: RunLog, name: str) -> np.ndarray | None:
    """The finite values of the second half of series ``name`` (``None``: absent or fewer
    than 2 finite points)."""
    s = run.series.get(name)
    if s is None:
        return None
    v = s.values[np.isfinite(s.values)]
    return v[v.size // 2 :] if v.size >= 2 else None


def _latest(run: RunLog, name: str) -> float | None:
    """The last finite value of series ``name``, or ``None``."""
    s = run.series.get(name)
    if s is None:
        return None
    v = s.values[np.isfinite(s.values)]
    return float(v[-1]) if v.size else None


def measured_cause(run: RunLog, th: Thresholds) -> tuple[str, str] | None:
    """A measured reason why the weights do not move, read from a run's history, or ``None``.

    Returns ``(key, sentence)``, key one of:

    - ``lr``: the median learning rate of the second half of the points is at most
      ``tiny_lr`` (every param group's, when several are logged as ``lr_group_N``);
    - ``update_ratio``: the median ``update_ratio`` of the second half, or the latest
      ``model/layer_update_ratio_max`` (the largest per-tensor ratio, log10), is at most
      ``10 ** live_zero_update_ratio_log10``;
    - ``grad_norm``: the gradient norm of the second half is exactly 0, or its median is
      below ``vanish_ratio`` of the early median (TP-DEAD-RUN's collapse);
    - ``params_outside_optimizer``: the latest ``model/params_outside_optimizer`` is above 0;
    - ``grads_cleared_before_step``: the latest ``model/grads_cleared_before_step`` covers
      every trainable tensor (gradients from backward, none at the step);
    - ``params_not_updated``: the latest ``model/params_not_updated`` covers every
      trainable tensor (:func:`trainable_tensors`; not judged when that count is unknown).
    """
    from ..rules.engine import Context
    from ..rules.loss import grad_collapsed

    lrs = [k for k in run.series if k == "lr" or re.fullmatch(r"lr_group_\d+", k)]
    late = {k: _late(run, k) for k in lrs}
    if late and all(v is not None for v in late.values()):
        meds = {k: float(np.median(v)) for k, v in late.items()}
        if all(m <= th.tiny_lr for m in meds.values()):
            top = max(meds.values())
            return "lr", (
                f"the learning rate is about zero: median {num(top)} over the second half of the points "
                f"(at most {num(th.tiny_lr)}, tiny_lr)"
            )
    bar = 10.0**th.live_zero_update_ratio_log10
    ratio = _late(run, "update_ratio")
    if ratio is not None and float(np.median(ratio)) <= bar:
        return "update_ratio", (
            f"the updates are about zero: median update/weight ratio {num(float(np.median(ratio)))} over the second "
            f"half of the points (at most {num(bar)})"
        )
    layer = _latest(run, LAYER_RATIO_KEY)
    if layer is not None and layer <= th.live_zero_update_ratio_log10:
        return "update_ratio", (
            f"the updates are about zero: the largest per-tensor update/weight ratio at the latest check is "
            f"{num(10.0**layer)} (at most {num(bar)})"
        )
    if "grad_norm" in run.series:
        g = _late(run, "grad_norm")
        if g is not None and np.all(g == 0):
            return "grad_norm", "the gradients are zero: every gradient norm of the second half of the points is 0.0"
        rule = get("TP-DEAD-RUN")
        collapsed = grad_collapsed(Context(run, th, rule)) if rule is not None else None
        if collapsed:
            early, late_g = collapsed
            return "grad_norm", (
                f"the gradients are about zero: the gradient norm fell from {num(early)} to {num(late_g)} "
                f"(medians; under {num(th.vanish_ratio)} of the early level, vanish_ratio)"
            )
    outside = _latest(run, OUTSIDE_KEY)
    if outside is not None and outside > 0:
        return "params_outside_optimizer", (
            f"{int(outside)} parameter tensor(s) get gradients but are in no param group of the optimizer "
            f"({OUTSIDE_KEY} at the latest check)"
        )
    stuck, total = _latest(run, NOT_UPDATED_KEY), trainable_tensors(run)
    cleared = _latest(run, CLEARED_KEY)
    if cleared is not None and total is not None and cleared >= total:
        return "grads_cleared_before_step", (
            f"none of the {total} trainable tensors changed across the optimizer step: backward gives them "
            f"gradients, but they are cleared before step() ({CLEARED_KEY} {int(cleared)} at the latest check)"
        )
    if stuck is not None and total is not None and stuck >= total:
        return "params_not_updated", (
            f"none of the {total} trainable tensors changed across the optimizer step though they have a gradient "
            f"and a learning rate above 0 ({NOT_UPDATED_KEY} {int(stuck)} at the latest check)"
        )
    return None


def demote_uncaused(findings: Sequence[Finding], run: RunLog, th: Thresholds) -> list[Finding]:
    """The findings of a judgement of a run still training, each FAIL that claims the loss
    made no progress either citing the measured cause (:func:`measured_cause`: its evidence
    says it, ``data["cause"]`` names it) or, without one, turned into a WARN whose message
    says no measured cause was found and the run goes on (``data["uncaused"] = True``)."""
    from ..rules.engine import no_progress_claim

    out: list[Finding] = []
    cause: tuple[str, str] | None | bool = False  # False: not looked for yet
    for f in findings:
        r = get(f.id)
        if f.level is not Level.FAIL or r is None or not no_progress_claim(r):
            out.append(f)
            continue
        if cause is False:
            cause = measured_cause(run, th)
        if cause:
            key, text = cause
            ev = f"{f.evidence} Measured cause: {text}." if f.evidence else f"Measured cause: {text}."
            out.append(dataclasses.replace(f, evidence=ev, data={**f.data, "cause": key}))
        else:
            out.append(
                dataclasses.replace(
                    f,
                    level=Level.WARN,
                    message=f"{f.message} ({UNCAUSED_NOTE})",
                    data={**f.data, "uncaused": True},
                )
            )
    return out


#: The phrase a divergence held back for its held-out loss ends with.
HELD_OUT_NOTE = (
    "the held-out loss has not got worse since the climb began, so the run goes on until an evaluation shows it"
)


def _held_out_not_worse(run: RunLog, data: dict) -> str | None:
    """A sentence with the numbers when the run's eval loss says a divergence's climb
    (``data``: TP-DIVERGE's ``onset_step``, ``best_step``, ``best_level``,
    ``end_level``) is not the model getting worse; else ``None``.

    Evaluated both before the onset (where the climb passed the rule's bar) and after it,
    no evaluation after it is higher than the last one made at the held level before it. Or, with none yet after
    the onset, the evaluations made since the best level (while the loss climbed) are no
    higher than the best one made before that level, and the latest of them was made
    where the train loss had already risen half of its climb (from the best level to the
    end level): it measured the model mid-climb. An evaluation made before the climb got
    under way says nothing of it (a blow-up right after an evaluation stands)."""
    s = run.series.get("eval_loss")
    onset = data.get("onset_step")
    if s is None or onset is None:
        return None
    ok = np.isfinite(s.values)
    v, st = s.values[ok], s.steps[ok]
    # The reference is an evaluation made while the loss held its level, never one made
    # before it got there (an untrained model's, at step 0) or after it had climbed half
    # its rise.
    level = _train_level_at(run, st)
    bar = _half_rise(data)
    at_level = (st <= onset) & (level <= bar) if bar is not None else st <= onset
    before, after = v[at_level], v[st > onset]
    if not before.size:
        return None
    if after.size:
        # The reference is the last evaluation made at the held level: the model the climb
        # started from. An eval loss that was already rising (a model overfitting easy data
        # before a curriculum moves to hard data) is judged from where it stood, not from
        # its best long before.
        ref = float(before[-1])
        if float(after.max()) > ref or repeats_one_value(after):
            return None  # worse, or one value repeated to the bit (a stale evaluation)
        return (
            f"The eval loss ({s.key}) was {num(ref)} at its last evaluation before the climb began (step "
            f"{step_fmt(onset)}) and at most {num(float(after.max()))} at its {after.size} evaluation(s) since "
            f"({num(float(after[-1]))} at the latest): no worse."
        )
    return _held_out_during_climb(run, v, st, level, at_level, data, bar)


def _half_rise(data: dict) -> float | None:
    """Half-way up a divergence's climb (``data``: TP-DIVERGE's ``best_level`` and
    ``end_level``), or ``None`` without them."""
    best, end = data.get("best_level"), data.get("end_level")
    if not all(isinstance(x, (int, float)) for x in (best, end)) or not end > best:
        return None
    return best + 0.5 * (end - best)


def _train_level_at(run: RunLog, steps: np.ndarray) -> np.ndarray:
    """The train loss's level where each evaluation at ``steps`` was made: the median of
    its last 5 finite values at or before the step (inf where none is)."""
    loss = run.series.get("loss")
    out = np.full(steps.size, np.inf)
    if loss is None:
        return out
    ok = np.isfinite(loss.values)
    ls, lv = loss.steps[ok], loss.values[ok]
    for i, at in enumerate(steps):
        j = int(np.searchsorted(ls, at, side="right"))
        if j:
            out[i] = float(np.median(lv[max(0, j - 5) : j]))
    return out


def _held_out_during_climb(
    run: RunLog,
    v: np.ndarray,
    st: np.ndarray,
    level: np.ndarray,
    at_level: np.ndarray,
    data: dict,
    bar: float | None,
) -> str | None:
    """:func:`_held_out_not_worse`'s reading of the evaluations made between the best
    level's step and the onset (``v``, ``st``: the finite eval losses and their steps;
    ``level``: the train loss's level at each; ``at_level``: those made at the held level;
    ``bar``: :func:`_half_rise` of ``data``)."""
    best_step, best, end = data.get("best_step"), data.get("best_level"), data.get("end_level")
    if bar is None or not isinstance(best_step, (int, float)):
        return None
    before, during = v[at_level & (st <= best_step)], v[st > best_step]
    if not before.size or not during.size or bool(np.isin(during, before).all()):
        return None  # none since the best level, or values repeated to the bit (a stale evaluation)
    ref = float(before.min())
    if float(during.max()) > ref:
        return None
    at = float(st[-1])
    # the latest was made where the train loss had climbed half its rise: mid-climb
    if not level[-1] >= bar:
        return None
    return (
        f"The eval loss ({run.series['eval_loss'].key}) was at best {num(ref)} before the loss's best level (step {step_fmt(best_step)}) "
        f"and {num(float(v[-1]))} at step {step_fmt(at)}, where the train loss already stood at "
        f"{num(float(level[-1]))} on its climb from {num(best)} to {num(end)}: no worse mid-climb."
    )


def hold_unconfirmed_divergence(findings: Sequence[Finding], run: RunLog) -> list[Finding]:
    """The findings of a judgement of a run still training, a TP-DIVERGE FAIL turned into
    a WARN while the held-out loss, evaluated since the climb began, is no worse than its
    best before it (:func:`_held_out_not_worse`; ``data["held_out_not_worse"] = True``). A
    model that diverges gets worse on held-out data too; a train loss whose objective
    changes as planned (a KL weight annealed up, a longer sequence, a harder curriculum
    stage) climbs while it improves there, and the ended run's judgement reads enough
    evaluations to tell (TP-OBJECTIVE-CHANGED). Without an evaluation before the climb and
    one made after it was under way, or with one of those that is worse, the FAIL stands.
    The judgement of the ended run is not touched."""
    out: list[Finding] = []
    for f in findings:
        held = None
        if f.id == "TP-DIVERGE" and f.level is Level.FAIL:
            held = _held_out_not_worse(run, f.data)
        if held is None:
            out.append(f)
            continue
        out.append(
            dataclasses.replace(
                f,
                level=Level.WARN,
                message=f"{f.message} ({HELD_OUT_NOTE})",
                evidence=f"{f.evidence} {held}" if f.evidence else held,
                data={**f.data, "held_out_not_worse": True},
            )
        )
    return out


#: The phrase a divergence held for its small climb ends with.
SMALL_CLIMB_NOTE = "the climb gives back little of what the run learned, so the run goes on"


def hold_small_divergence(findings: Sequence[Finding], th: Thresholds) -> list[Finding]:
    """The findings of a judgement of a run still training, a TP-DIVERGE FAIL turned into
    a WARN (``data["small_climb"] = True``) while its climb gives back less than
    ``live_diverge_regain`` of what the run learned (from its first block level down to
    its best level), with no blow-up (``terminal_points``), no learning rate that climbed
    before it (``caused``) and a best level after the run's start (not ``from_start``: a
    run that climbs from its start learned nothing to give back): a healthy run's bump (SGD with momentum at a small
    batch) looks the same until it comes back. The judgement of the ended run is not
    touched."""
    out: list[Finding] = []
    for f in findings:
        d = f.data
        start, best, end = d.get("start_level"), d.get("best_level"), d.get("end_level")
        if (
            f.id != "TP-DIVERGE"
            or f.level is not Level.FAIL
            or d.get("terminal_points")
            or d.get("caused")
            or d.get("from_start")  # a climb from the run's start: it learned nothing to give back
            or not all(isinstance(x, (int, float)) and math.isfinite(x) for x in (start, best, end))
            or not start > best
        ):
            out.append(f)
            continue
        regain = (end - best) / (start - best)
        if regain >= th.live_diverge_regain:
            out.append(f)
            continue
        why = (
            f"The climb from {num(best)} to {num(end)} gives back {regain:.0%} of the run's fall from {num(start)}, "
            f"under {th.live_diverge_regain:.0%}: a healthy run's bump looks the same until it comes back."
        )
        out.append(
            dataclasses.replace(
                f,
                level=Level.WARN,
                message=f"{f.message} ({SMALL_CLIMB_NOTE})",
                evidence=f"{f.evidence} {why}" if f.evidence else why,
                data={**d, "small_climb": True, "regain": regain},
            )
        )
    return out


def stop_ids(ids: Iterable[str]) -> frozenset[str]:
    """``stop_on`` as canonical rule ids.

    Raises:
        ValueError: an id names no rule (a typo would otherwise never stop anything).
    """
    out = set()
    for i in [ids] if isinstance(ids, str) else ids:
        r = get(canonical_id(str(i)))
        if r is None:
            raise ValueError(f"stop_on names no rule: {i!r} (see RULES.md for the ids)")
        out.add(r.id)
    return frozenset(out)


def last_good_step(f: Finding, run: RunLog) -> float | None:
    """The last step of the run before the onset that finding ``f`` cites: its
    ``onset_step`` (a divergence, a collapse) or its ``best_step`` (an eval minimum, itself
    good) or, failing those, its step; ``None`` when no recorded step lies before it, and
    for a claim that the loss made no progress (it covers the run from its start)."""
    from ..rules.engine import no_progress_claim

    r = get(f.id)
    if r is not None and no_progress_claim(r):
        return None
    onset = f.data.get("onset_step")
    best = f.data.get("best_step")
    if isinstance(best, (int, float)) and not isinstance(onset, (int, float)):
        return float(best)
    at = onset if isinstance(onset, (int, float)) else f.step
    if at is None or not math.isfinite(float(at)):
        return None
    steps = [s.steps for s in run.series.values() if s.steps.size]
    if not steps:
        return None
    allsteps = np.concatenate(steps)
    before = allsteps[allsteps < float(at)]
    return float(before.max()) if before.size else None


def newest_checkpoint(checkpoints: Iterable[tuple[float, str]], at: float | None) -> tuple[float, str] | None:
    """The ``(step, name)`` with the largest step at or before ``at`` (``None``: none)."""
    if at is None:
        return None
    ok = [c for c in checkpoints if c[0] <= at]
    return max(ok, key=lambda c: c[0]) if ok else None


_RESUME = re.compile(r"^Resume from (?:the|a) (?:last )?checkpoint\b.*?(?= with |, |\.$|$)", re.IGNORECASE)


def first_remedy(rule_id: str, th: Thresholds | None = None) -> str:
    """The first sentence (or clause before a ``;``) of the rule's "what to try" text,
    thresholds filled in; ``""`` for an unknown rule."""
    r = get(rule_id)
    if r is None:
        return ""
    text = r.text("try_", th).strip()
    # the first '.' or ';' before whitespace outside brackets: a remedy's parenthesis
    # ("(PyTorch: optimizer.param_groups[0]['lr']; Keras: ...)") is part of its sentence
    depth, end = 0, len(text)
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif ch in ".;" and depth == 0 and i + 1 < len(text) and text[i + 1].isspace():
            end = i + 1
            break
    first = text[:end].rstrip(";").strip()
    return first if first.endswith(".") else first + "."


def resume_advice(
    f: Finding, run: RunLog, checkpoints: Iterable[tuple[float, str]] | None = None, th: Thresholds | None = None
) -> str:
    """What a stop on finding ``f`` tells about resuming: the last good step before its
    onset (:func:`last_good_step`), the newest of ``checkpoints`` (``(step, name)`` pairs)
    at or before it, and the rule's first remedy; a remedy that starts "Resume from the
    checkpoint …" is given with the checkpoint's name in its place ("Resume from
    checkpoint-1200 with a lower peak learning rate …")."""
    good = last_good_step(f, run)
    remedy = first_remedy(f.id, th)
    parts = []
    if good is None:
        parts.append(f"No good step before the onset {f.id} cites: the run was not learning from its start.")
    else:
        parts.append(f"Last good step: {step_fmt(good)}.")
    ckpt = newest_checkpoint(checkpoints or (), good)
    if checkpoints is not None:
        if ckpt is None:
            parts.append("No checkpoint was saved at or before it.")
        elif _RESUME.match(remedy):
            remedy = _RESUME.sub(f"Resume from {ckpt[1]}", remedy, count=1)
            ckpt = None  # named in the remedy
        else:
            parts.append(f"Newest checkpoint at or before it: {ckpt[1]} (step {step_fmt(ckpt[0])}).")
    if remedy:
        parts.append(f"First remedy ({f.id}): {remedy}")
    return " ".join(parts)


def _onset(f: Finding) -> float:
    for k in ("onset_step", "best_step"):
        v = f.data.get(k)
        if isinstance(v, (int, float)):
            return float(v)
    return float(f.step) if f.step is not None else math.inf


def advice(
    findings: Sequence[Finding],
    run: RunLog,
    checkpoints: Iterable[tuple[float, str]] | None = None,
    th: Thresholds | None = None,
) -> str:
    """What a stop on ``findings`` adds to their messages: the measured cause of each claim
    that the loss made no progress, then :func:`resume_advice` for the finding whose onset
    comes first (``""`` without findings)."""
    if not findings:
        return ""
    bits = []
    for f in findings:
        if "cause" in f.data and "Measured cause: " in f.evidence:
            bits.append(f"Measured cause ({f.id}): " + f.evidence.rsplit("Measured cause: ", 1)[1].rstrip(".") + ".")
    bits.append(resume_advice(min(findings, key=_onset), run, checkpoints, th))
    return " ".join(bits)


def stop_text(
    head: str,
    findings: Sequence[Finding],
    run: RunLog,
    checkpoints: Iterable[tuple[float, str]] | None = None,
    th: Thresholds | None = None,
    chosen: Iterable[str] = (),
    patience: int = 1,
) -> str:
    """The message of a stop: ``head`` (who stopped what, at which step), then each finding
    it rests on (a ``chosen`` id says it was chosen with ``stop_on`` and for how many checks
    it held), then :func:`advice`."""
    chosen = set(chosen)
    bits = []
    for f in findings:
        why = f", chosen in stop_on, found {patience} check(s) in a row" if f.id in chosen else ""
        bits.append(f"{f.id} ({f.level.value}{why}): {f.message}")
    return f"{head} on " + "; ".join(bits) + ". " + advice(findings, run, checkpoints, th)
