"""Rules for RL and preference objectives (see :mod:`trainproof.rules.objective_kind`)."""

from __future__ import annotations

import math

import numpy as np

from ..aliases.vocabulary import words
from ..findings import Level
from ._fmt import num, pct, step
from ._stats import change_interval, level_se, median, noise_sigma, trend_z
from .loss import measured_held_out
from .objective_kind import detect_objective
from .registry import Need, rule


@rule(
    "TP-RL-OBJECTIVE",
    Level.INFO,
    "context",
    "RL or preference objective: the loss is not a progress signal",
    objectives=("rl",),
    detects="The log has reward or policy metrics (TRL GRPO/PPO/DPO and the like): the run optimises an RL or preference objective.",
    why="Such a loss may be zero by construction (GRPO's first iterations), negative, or rising while the policy improves; the loss-shape rules are skipped as `objective: rl` rather than run and misread.",
    not_mean="It is context, not a judgement; non-finite values and a policy with no gradient are still judged.",
    causes="Not applicable: this is context.",
    try_="Judge progress by the reward and the KL; compare against a known-good run with `trainproof compare`.",
)
def check_rl_objective(ctx):
    _, keys = detect_objective(ctx.run)
    rw = ctx.run.series.get("reward")
    extra = ""
    data: dict = {"keys": keys}
    if rw is not None:
        v = rw.values[np.isfinite(rw.values)]
        if v.size >= 2:
            # a tenth of the run at each end (5 points at least, a quarter at most): a noisy
            # reward's first and last 5 points say little of where it went
            w = max(1, min(v.size // 4, max(5, v.size // 10)))
            first, last = float(median(v[:w])), float(median(v[-w:]))
            extra = f"; reward ({rw.key}) {num(first)} -> {num(last)} (medians of {w} points at each end)"
            data.update(reward_first=first, reward_last=last)
    yield ctx.finding(
        "RL or preference objective: the loss-shape rules are skipped",
        f"keys {', '.join(keys[:5])}{' …' if len(keys) > 5 else ''}{extra}.",
        data,
    )


@rule(
    "TP-RL-DEAD-POLICY",
    Level.FAIL,
    "zero",
    "the policy receives no gradient: gradient norm (and KL) exactly 0 throughout",
    needs=[Need("grad_norm", "zero_min_points")],
    thresholds=["zero_min_points"],
    verdict_bearing=True,
    objectives=("rl",),
    implies=("TP-RL-NO-SIGNAL", "TP-ZERO-GRAD", "TP-PREF-NOT-LEARNING"),
    least_evidence="Every one of at least {zero_min_points} finite norms exactly 0.0, and every finite KL too when logged.",
    detects="On an RL or preference objective, every finite gradient norm (at least {zero_min_points}) is exactly 0.0, and so is every finite KL when the log has one (TRL does not log the KL when its coefficient beta is 0).",
    why="A KL of exactly 0 throughout means the policy never moved away from the reference model, and a zero gradient norm says why: the updates are empty.",
    not_mean="A KL of 0 at the first steps is normal (the policy starts as the reference); a near-zero loss is normal for GRPO. This needs both exactly zero for the whole run.",
    causes="Every reward identical within each group (zero advantage: all completions right or all wrong), frozen or detached adapters, a learning rate of 0, a reward function that always returns the same value.",
    try_="Check the reward spread within groups (reward_std, frac_reward_zero_std), that the trainable parameters are in the optimizer, and the learning rate applied.",
)
def check_rl_dead_policy(ctx):
    g = ctx.finite("grad_norm")
    kl = ctx.finite("kl") if ctx.has("kl") else None
    if not np.all(g.values == 0) or (kl is not None and len(kl) and not np.all(kl.values == 0)):
        return
    kl_text = (
        f" and all {len(kl)} finite KL values ({kl.key}) are"
        if kl is not None and len(kl)
        else " (the log has no KL) are"
    )
    yield ctx.finding(
        "the policy does not move: the gradient norm is exactly 0 at every logged step",
        f"all {len(g)} finite gradient norms (steps {step(g.steps[0])}–{step(g.steps[-1])}){kl_text} exactly 0.0.",
        {
            "grad_norm_points": len(g),
            "kl_points": len(kl) if kl is not None else 0,
            "kl_key": kl.key if kl is not None else None,
        },
        step=g.steps[0],
        line=g.lines[0],
    )


def _zero_std_share(ctx):
    """TRL GRPO's ``frac_reward_zero_std`` series (the share of prompt groups whose
    completions all got the same reward), whatever its prefix, or ``None``."""
    for s in ctx.run.series.values():
        if s.key.lower().rsplit("/", 1)[-1] == "frac_reward_zero_std":
            f = s.finite()
            return f if len(f) else None
    return None


@rule(
    "TP-RL-NO-SIGNAL",
    Level.FAIL,
    "zero",
    "no learning signal: the reward never varies",
    needs=[Need("reward", "zero_min_points")],
    thresholds=["zero_min_points", "rl_zero_std_fail", "rl_zero_reward_share", "rl_pinned_share"],
    verdict_bearing=True,
    objectives=("rl",),
    implies=("TP-PREF-NOT-LEARNING",),
    least_evidence="A reward identical at every one of at least {zero_min_points} points, or GRPO's zero-spread share at a median of {rl_zero_std_fail} with the reward 0 on {rl_zero_reward_share:.0%} of steps.",
    detects=(
        "On an RL or preference objective with at least {zero_min_points} reward points: every finite reward (or preference "
        "margin) is the same value; or it equals its last value at {rl_pinned_share:.0%} of its points or more, unbroken "
        "over the last half of them or more, below the best of the points that differ (a random first "
        "policy's few different returns, then one return at nearly every update, and not the best it ever had: a policy "
        "holding the environment's maximum holds its best); or, for GRPO, the share of groups with zero reward spread "
        "(frac_reward_zero_std) has a median of at least {rl_zero_std_fail} over the run while the reward is exactly 0 on at "
        "least {rl_zero_reward_share:.0%} of the steps. When it does not fire, the run has been judged on its reward: an RL or "
        "preference run without a gradient norm is not left unjudged."
    ),
    why=(
        "Policy-gradient and preference updates are driven by differences in reward (GRPO's advantage is the "
        "reward minus its group mean; DPO's margin is chosen minus rejected): a reward that never varies gives "
        "every update zero signal, so the run trains nothing whatever its loss shows."
    ),
    not_mean="A reward that is flat but varies from step to step is not this (the policy gets a signal, it may just not improve); a GRPO run where some groups have no spread is TP-RL-SIGNAL-FADING's at most.",
    causes="A reward function that always returns the same value (a parsing bug, a format the policy never hits), completions all truncated at the length limit, tasks far too hard or far too easy for the policy, a frozen or detached policy.",
    try_="Print a few completions with their rewards; check the reward function on hand-made right and wrong answers; raise max_completion_length or lower task difficulty so groups get mixed rewards.",
)
def check_rl_no_signal(ctx):
    th = ctx.th
    rw = ctx.finite("reward")
    v = rw.values
    if np.all(v == v[0]):
        yield ctx.finding(
            f"no learning signal: the reward ({rw.key}) is {num(v[0])} at every logged step",
            f"all {len(rw)} finite values of {rw.key} (steps {step(rw.steps[0])}–{step(rw.steps[-1])}) are exactly "
            f"{num(v[0])}: updates driven by reward differences are empty.",
            {"reward_key": rw.key, "points": len(rw), "value": float(v[0])},
            step=rw.steps[0],
            line=rw.lines[0],
        )
        return
    pinned = _pinned_tail(v, th)
    if pinned is not None:
        j, others, k = pinned
        yield ctx.finding(
            f"no learning signal: the reward ({rw.key}) is {num(v[-1])} at {pct((v.size - k) / v.size)} of logged steps",
            f"{v.size - k} of {len(rw)} finite values of {rw.key} are exactly {num(v[-1])}, every one from step "
            f"{step(rw.steps[j])} to the last ({step(rw.steps[-1])}), below the best of the {k} others ({num(others)}): "
            "the policy gets one return at nearly every update, and not the best it has had.",
            {"reward_key": rw.key, "points": len(rw), "value": float(v[-1]), "pinned_from": rw.steps[j]},
            step=rw.steps[j],
            line=rw.lines[j],
        )
        return
    z = _zero_std_share(ctx)
    if z is None:
        return
    zero_share = float(np.mean(v == 0))
    zmed = float(median(z.values))
    if zmed >= th.rl_zero_std_fail and zero_share >= th.rl_zero_reward_share:
        yield ctx.finding(
            f"no learning signal: {pct(zmed)} of reward groups have no spread and the reward is 0 on {pct(zero_share)} of steps",
            f"{z.key} has median {num(zmed)} over {len(z)} points and {rw.key} is exactly 0 on {int((v == 0).sum())} of "
            f"{len(rw)} steps: the group-relative advantage is zero almost everywhere.",
            {"zero_std_median": zmed, "reward_zero_share": zero_share, "points": len(rw)},
            step=rw.steps[0],
            line=rw.lines[0],
        )


def _pinned_tail(v: np.ndarray, th) -> tuple[int, float, int] | None:
    """``(first index of the final stretch, the best of the other values, their count)``
    where ``v`` (finite rewards, shape ``(n,)``) equals its last value at no fewer than
    ``rl_pinned_share`` of its points (and ``zero_min_points``), the final stretch of that
    value unbroken over at least half of them, and the value below the best of the points
    that differ (a policy holding the environment's maximum holds the best return it ever
    got); ``None`` otherwise (also when every value is equal). The differing points are a
    random first policy's few returns, or a rare success it never repeated; a sparse
    reward the policy keeps finding breaks the stretch or the share."""
    differ = np.flatnonzero(v != v[-1])
    if not differ.size:
        return None
    same = v.size - differ.size
    j = int(differ[-1]) + 1
    if same < max(th.zero_min_points, th.rl_pinned_share * v.size) or v.size - j < v.size / 2:
        return None
    best = float(np.max(v[differ]))
    return (j, best, int(differ.size)) if v[-1] < best else None


def reward_pinned(ctx, warn: bool = False) -> dict | None:
    """The numbers of a reward pinned to one level over the run, or ``None``: at least
    ``dead_flat_min_points`` finite rewards whose ``dead_ci_z`` interval of the change over
    the run (a least-squares line, AR(1)-widened) lies within ``rl_flat_noise_share`` of
    the reward's own point noise in both directions (the FAIL's bar; with ``warn``,
    ``rl_flat_warn_share``, the WARN's), and whose second half sits no higher than
    its first points (the first 1%, at least 5; medians) beyond ``diverge_noise_z``
    standard errors: a reward that rose and then held learned. Also the KL's second-half
    median when a KL is logged. The reward's numbers are computed once for TP-RL-NO-PROGRESS
    and TP-RL-FROZEN-POLICY (:func:`_reward_flatness`); only the bar differs."""
    st = _reward_flatness(ctx)
    if st is None:
        return None
    share = ctx.th.rl_flat_warn_share if warn else ctx.th.rl_flat_noise_share
    bar = share * st["sigma"]
    ci = st["ci"]
    # change_interval gives the fall; a reward that rises has a negative fall.
    if not (-bar < ci[0] and ci[1] < bar):
        return None
    # a reward whose interval of change lies above zero rose measurably, however slowly: no
    # policy that never moved (the FAIL), and for the warning a slow climb, said as one
    rising = bool(ci[1] < 0)
    if rising and not warn:
        return None
    return {**st, "bar": bar, "share": float(share), "rising": rising}


def _reward_flatness(ctx) -> dict | None:
    """The reward's numbers :func:`reward_pinned` weighs against its bar: ``{"r", "ci",
    "sigma", "kl"}``, or ``None`` when there are too few rewards, no interval or noise to
    read, or the reward rose from its first points and then held. Computed once per
    judgement."""

    def compute():
        th = ctx.th
        r = ctx.finite("reward")
        if len(r) < th.dead_flat_min_points:
            return None
        sigma = noise_sigma(r.values)
        ci = change_interval(r.steps, r.values, th.dead_ci_z)
        if ci is None or not sigma > 0:
            return None
        # A reward that rose from its first points and then held learned before its
        # plateau (a policy that solves its task early): a line over the whole run is flat,
        # but the start is not. Two medians, each with its level's error.
        v = r.values
        k = max(5, v.size // 100)
        head, late = float(median(v[:k])), float(median(v[v.size // 2 :]))
        se = math.hypot(level_se(sigma, k), level_se(sigma, v.size - v.size // 2))
        if late - head > th.diverge_noise_z * se:
            return None
        kl = None
        if ctx.has("kl"):
            k = ctx.finite("kl").values
            if k.size >= 2:
                kl = float(median(k[k.size // 2 :]))
        return {"r": r, "ci": ci, "sigma": sigma, "kl": kl}

    return ctx.memo("reward_flatness", compute)


_PINNED_TH = ["dead_flat_min_points", "dead_ci_z", "rl_flat_noise_share", "rl_kl_tiny", "diverge_noise_z"]
_NO_PROGRESS_TH = [*_PINNED_TH, "rl_flat_warn_share"]


def _pinned_finding(ctx, st: dict, message: str, tail: str):
    r, ci = st["r"], st["ci"]
    return ctx.finding(
        message,
        f"the reward ({r.key}) has median {num(median(r.values))} over {len(r)} points (steps {step(r.steps[0])}–"
        f"{step(r.steps[-1])}); the {ctx.th.dead_ci_z:g}-sigma interval of its change over the run is "
        f"[{num(-ci[1])}, {num(-ci[0])}], inside plus or minus {num(st['bar'])} ({num(st['share'])} of "
        f"its point-to-point noise {num(st['sigma'])}). " + tail,
        {
            "reward_median": float(median(r.values)),
            "change_interval": [-ci[1], -ci[0]],
            "noise": st["sigma"],
            "kl": st["kl"],
        },
        step=r.steps[-1],
        line=r.lines[-1],
    )


@rule(
    "TP-RL-FROZEN-POLICY",
    Level.FAIL,
    "rl",
    "the reward is pinned to one level and the policy never left its reference",
    needs=[Need("reward", "dead_flat_min_points"), Need("kl", 2)],
    thresholds=_PINNED_TH,
    objectives=("rl",),
    least_evidence="At least {dead_flat_min_points} rewards whose interval of change over the run lies within {rl_flat_noise_share} of their noise, not wholly above zero, and whose second half sits no higher than their first points beyond {diverge_noise_z:g} standard errors, and a KL whose second-half median is above 0 and below {rl_kl_tiny}.",
    detects="On an RL objective, a reward pinned to one level (TP-RL-NO-PROGRESS's evidence) while the KL to the reference policy, logged and non-zero, has a second-half median below {rl_kl_tiny}: the policy has not moved, and the reward says it learned nothing.",
    why="Two independent measures agree that nothing changed: the reward the policy earns and its distance from where it started. A policy that learns moves away from its reference, and a GRPO or PPO run whose KL stays near zero while its reward stays flat has spent its compute on nothing.",
    not_mean="A KL of exactly 0 is not this (TRL logs 0 when the KL coefficient beta is 0); nor a reward that still climbs, however slowly; nor a flat reward whose KL grows (the policy moves: TP-RL-NO-PROGRESS warns).",
    causes="A learning rate too small for the adapter or model, LoRA adapters not attached to the trained modules, rewards with no spread inside groups (zero advantage), a reference model that is the policy itself.",
    try_="Check the learning rate applied and that the adapters are trainable; log the reward spread in groups (reward_std, frac_reward_zero_std); raise num_generations or use a graded reward.",
)
def check_rl_frozen_policy(ctx):
    st = reward_pinned(ctx)
    if st is None or st["kl"] is None or not 0 < st["kl"] < ctx.th.rl_kl_tiny:
        return
    yield _pinned_finding(
        ctx,
        st,
        "the policy learned nothing: its reward is pinned and its KL to the reference stays near zero",
        f"The KL ({ctx.series('kl').key}) has a second-half median of {num(st['kl'])}, below {num(ctx.th.rl_kl_tiny)}: "
        "the policy never left its reference.",
    )


@rule(
    "TP-RL-NO-PROGRESS",
    Level.WARN,
    "rl",
    "the reward is pinned to one level over the run",
    needs=[Need("reward", "dead_flat_min_points")],
    thresholds=_NO_PROGRESS_TH,
    objectives=("rl",),
    detects="On an RL objective, at least {dead_flat_min_points} reward points whose {dead_ci_z:g}-sigma interval of change over the run (a least-squares line, its error widened for autocorrelation) lies within {rl_flat_warn_share} of the reward's point-to-point noise in both directions: the reward moved by less than its noise over the whole run, and its second half sits no higher than its first points (the first 1%, at least 5; medians) beyond {diverge_noise_z:g} standard errors (a reward that rose early and then held learned). Where the interval lies above zero the reward rose measurably but by less than that, and the message says it barely moved. With a KL near zero as well, and no measurable rise, it is TP-RL-FROZEN-POLICY, a FAIL.",
    why="An RL run is judged by its reward: a reward that holds one level for the whole run means the policy is not improving at what it is rewarded for.",
    not_mean="It does not mean the run is broken: a task at its ceiling, a sparse reward that has not yet been found, or a run meant to hold a level (a KL-regularised fine-tune) look like this.",
    causes="A learning rate too small, rewards with no spread inside groups, a reward function that does not depend on the completion, a task far too hard for the policy.",
    try_="Check that the reward varies across completions of one prompt, the learning rate applied, and the KL: a policy that does not move cannot improve.",
)
def check_rl_no_progress(ctx):
    st = reward_pinned(ctx, warn=True)
    if st is None:
        return
    frozen = reward_pinned(ctx)
    if frozen is not None and frozen["kl"] is not None and 0 < frozen["kl"] < ctx.th.rl_kl_tiny:
        return  # TP-RL-FROZEN-POLICY's FAIL
    kl = f"The KL's second-half median is {num(st['kl'])}." if st["kl"] is not None else "No KL is logged."
    message = (
        "the reward barely moved: it rose over the run, but by less than its point-to-point noise"
        if st["rising"]
        else "the reward made no progress: it holds one level over the run"
    )
    yield _pinned_finding(ctx, st, message, kl)


@rule(
    "TP-RL-SIGNAL-FADING",
    Level.WARN,
    "rl",
    "most GRPO groups have no reward spread at the end of the run",
    needs=[Need("reward", "min_value_points")],
    thresholds=["min_value_points", "rl_zero_std_warn"],
    objectives=("rl",),
    detects="TRL GRPO's frac_reward_zero_std (share of prompt groups whose completions all got the same reward) has a median of at least {rl_zero_std_warn} over the last third of the logged steps.",
    why="A group whose completions share one reward has zero advantage and contributes no gradient: when most groups are like that, most of each batch is wasted and learning stalls or regresses.",
    not_mean="It is not a dead run: the remaining groups still teach the policy; a run that has mastered its tasks (all completions right) looks like this too — read the reward level.",
    causes="Tasks that became too easy (all right) or are too hard (all wrong), a reward with few distinct values (0/1), too few generations per prompt.",
    try_="Raise num_generations, use a graded reward, filter prompts the policy always solves or never solves.",
)
def check_rl_signal_fading(ctx):
    z = _zero_std_share(ctx)
    if z is None or len(z) < ctx.th.min_value_points:
        return
    tail = z.values[-max(1, len(z) // 3) :]
    zmed = float(median(tail))
    if zmed < ctx.th.rl_zero_std_warn:
        return
    yield ctx.finding(
        f"the reward signal is fading: {pct(zmed)} of groups have no reward spread over the last third of the run",
        f"median {z.key} {num(zmed)} over its last {tail.size} points (steps {step(z.steps[-tail.size])}–"
        f"{step(z.steps[-1])}); median over the whole run {num(median(z.values))}.",
        {"zero_std_tail_median": zmed, "tail_points": int(tail.size)},
        step=z.steps[-tail.size],
        line=z.lines[-tail.size],
    )


def _return_blocks(ctx):
    """``(series, block medians, standard error of a block median, block edges)`` of the
    return (``rl_collapse_blocks`` blocks of the finite points), or ``None`` for a
    preference margin (DPO's implicit reward gap is not a return)."""
    rw = ctx.finite("reward")
    if "margin" in rw.key.lower():
        return None
    blocks = np.array_split(rw.values, ctx.th.rl_collapse_blocks)
    med = np.array([median(b) for b in blocks])
    resid = np.concatenate([b - m for b, m in zip(blocks, med)])
    sigma = 1.4826 * float(median(np.abs(resid)))
    se = level_se(sigma, min(len(b) for b in blocks))
    edges = np.cumsum([0] + [len(b) for b in blocks])
    return rw, med, se, edges


@rule(
    "TP-RL-RETURN-COLLAPSE",
    Level.FAIL,
    "diverge",
    "the policy collapsed: its return rose and then fell back to or below where it started",
    needs=[Need("reward", "rl_collapse_min_points")],
    thresholds=["rl_collapse_min_points", "rl_collapse_blocks", "rl_collapse_tail_blocks", "rl_collapse_rise_se"],
    verdict_bearing=True,
    objectives=("rl",),
    least_evidence=(
        "{rl_collapse_min_points} finite return points; a rise from the first block median to the peak of at least {rl_collapse_rise_se:g} "
        "standard errors of a block median; the last 30% of the run below the halfway point."
    ),
    detects=(
        "On an RL objective, the return (or mean reward) read as {rl_collapse_blocks} block medians: the peak block is at "
        "least {rl_collapse_rise_se:g} standard errors of a block median above the first block, lies before the last {rl_collapse_tail_blocks} blocks, "
        "every one of the last {rl_collapse_tail_blocks} blocks is below the halfway point between the first block and the peak, "
        "and the last block is at or below the first. Preference margins (DPO) are not returns and are not "
        "judged by it. A return that never rose is not this."
    ),
    why=(
        "The policy learned (the return rose well beyond its noise) and then lost all of it, durably: the "
        "weights at the end are no better than at the start, and every step since the peak was wasted. "
        "Off-policy actor-critic methods (DDPG, TD3) and value-based ones (DQN) are known to collapse like "
        "this when the critic's estimates blow up."
    ),
    not_mean=(
        "A return that dips late and is still above its start, or that falls back only part of its gain, "
        "is not this (a curriculum that makes the task harder on purpose also lowers the return: read the "
        "environment's settings)."
    ),
    causes=(
        "Critic over-estimation or divergence (Q-values growing without bound), a learning rate too high for "
        "the critic, a replay buffer too small (forgetting the good experience), no target-network "
        "smoothing, entropy or exploration noise collapsing."
    ),
    try_=(
        "Resume from the checkpoint at the peak; lower the critic learning rate, raise the target-network "
        "smoothing (smaller tau), clip gradients, enlarge the replay buffer; compare the Q-value scale with the "
        "returns."
    ),
)
def check_rl_return_collapse(ctx):
    th = ctx.th
    got = _return_blocks(ctx)
    if got is None:
        return
    rw, med, se, edges = got
    nb, nt = th.rl_collapse_blocks, th.rl_collapse_tail_blocks
    start, ipk = float(med[0]), int(np.argmax(med))
    peak, end = float(med[ipk]), float(med[-1])
    gain = peak - start
    if ipk == 0 or ipk >= nb - nt or gain <= 0 or gain < th.rl_collapse_rise_se * se:
        return
    half = start + 0.5 * gain
    if not np.all(med[-nt:] < half) or end > start:
        return
    pk_at, end_at = int(edges[ipk]), int(edges[nb - 1])
    # Onset: the first block after the peak below the halfway point (the collapse is visible there).
    onset_block = next(i for i in range(ipk + 1, nb) if med[i] < half and np.all(med[i:] < half))
    onset = int(edges[onset_block])
    lost = (peak - end) / gain
    yield ctx.finding(
        f"the policy collapsed: the return ({rw.key}) rose {num(start)} -> {num(peak)} and fell back to {num(end)}",
        f"block medians of {rw.key} over {len(rw)} points: first {num(start)} (steps {step(rw.steps[0])}–"
        f"{step(rw.steps[edges[1] - 1])}), peak {num(peak)} (from step {step(rw.steps[pk_at])}), last {num(end)} "
        f"(from step {step(rw.steps[end_at])}): {pct(lost)} of the rise lost; the rise is "
        f"{num(gain / se) if se > 0 else 'inf'} standard errors of a block median (threshold "
        f"{num(th.rl_collapse_rise_se)}), and the last {nt} blocks are all below the halfway point {num(half)}.",
        {
            "reward_key": rw.key,
            "start": start,
            "peak": peak,
            "end": end,
            "lost_share": lost,
            "block_medians": [float(x) for x in med],
            "rise_se": float(gain / se) if se > 0 else None,
            "peak_step": float(rw.steps[pk_at]),
            "onset_step": float(rw.steps[onset]),
        },
        step=rw.steps[onset],
        line=rw.lines[onset],
    )


@rule(
    "TP-RL-RETURN-FALLING",
    Level.WARN,
    "diverge",
    "the return fell from where it started and never rose: the policy got worse than its start",
    needs=[Need("reward", "rl_collapse_min_points")],
    thresholds=["rl_collapse_min_points", "rl_collapse_blocks", "rl_collapse_tail_blocks", "rl_collapse_rise_se"],
    objectives=("rl",),
    least_evidence=(
        "{rl_collapse_min_points} finite return points; the last {rl_collapse_tail_blocks} block medians each at least "
        "{rl_collapse_rise_se:g} standard errors of a block median below the first block, which no block rose above by as much."
    ),
    detects=(
        "On an RL objective, the return (or mean reward) read as {rl_collapse_blocks} block medians, as "
        "TP-RL-RETURN-COLLAPSE reads it: no block rose above the first by {rl_collapse_rise_se:g} standard errors "
        "of a block median (a rise that large and then lost is TP-RL-RETURN-COLLAPSE's), and every one of the last "
        "{rl_collapse_tail_blocks} blocks sits below the first by at least that much. Preference margins (DPO) "
        "are not returns and are not judged by it."
    ),
    why=(
        "The first block is the return of the policy the run started from; a policy gradient that works "
        "raises it, and one that lowers it beyond the noise and keeps it there learned the wrong way (a sign "
        "flipped in the loss, advantages of the wrong sign, a reward read with the wrong sign)."
    ),
    not_mean=(
        "Not a failure by itself: a curriculum or an environment that gets harder on purpose, a reward whose "
        "penalty grows as the episodes get longer, or an exploration bonus annealed out of the logged reward also "
        "lower the return while the policy improves. Read the environment's settings."
    ),
    causes=(
        "A policy-gradient loss with the wrong sign (gradient ascent on the loss), advantages computed with the "
        "wrong sign or from the wrong baseline, a reward negated by a wrapper, an entropy bonus that dominates "
        "the objective."
    ),
    try_="Check the sign of the policy loss (it is minus the advantage-weighted log-probability) and of the reward a wrapper passes on; compare with a random policy's return.",
)
def check_rl_return_falling(ctx):
    th = ctx.th
    got = _return_blocks(ctx)
    if got is None:
        return
    rw, med, se, edges = got
    nt = th.rl_collapse_tail_blocks
    start, peak = float(med[0]), float(np.max(med))
    bar = th.rl_collapse_rise_se * se
    if not se > 0 or peak - start >= bar or not np.all(med[-nt:] <= start - bar):
        return
    end = float(med[-1])
    onset_block = next(i for i in range(1, len(med)) if np.all(med[i:] <= start - bar))
    onset = int(edges[onset_block])
    yield ctx.finding(
        f"the return fell and never rose: {rw.key} went {num(start)} -> {num(end)}",
        f"block medians of {rw.key} over {len(rw)} points: first {num(start)} (steps {step(rw.steps[0])}–"
        f"{step(rw.steps[edges[1] - 1])}), last {num(end)} (from step {step(rw.steps[int(edges[-2])])}); the last "
        f"{nt} blocks are each at least {num(th.rl_collapse_rise_se)} standard errors of a block median "
        f"({num(se)}) below the first, and no block rose above it by as much: the policy ends worse than it started.",
        {
            "reward_key": rw.key,
            "start": start,
            "end": end,
            "block_medians": [float(x) for x in med],
            "fall_se": float((start - end) / se),
            "onset_step": float(rw.steps[onset]),
        },
        step=rw.steps[onset],
        line=rw.lines[onset],
    )


def _trl_series(ctx, name: str):
    """TRL's ``name`` series (``rewards/accuracies``, ``rewards/margins``; whatever its
    prefix), finite points only, or ``None``: the train series (on the run's own pairs, at
    every log) before a held-out one (``eval_rewards/accuracies``, a few evaluations), then
    the one with more points."""
    found = []
    for sr in ctx.run.series.values():
        if sr.key.lower().endswith(name):
            f = sr.finite()
            if len(f):
                found.append((measured_held_out(sr.key), -len(f), sr.key, f))
    return min(found, key=lambda x: x[:3])[3] if found else None


def _pref_loss_ends(ctx) -> tuple[float, float, int, float]:
    """``(start, end, w, z)`` of the train loss: the medians of its first and last ``w``
    points (a tenth of the run, at least 3) and its Mann-Kendall z over at most 40 block
    medians (a significant fall, z at or below ``-dead_trend_z``, is an objective that
    improves)."""
    tr = ctx.finite("loss")
    w = max(3, len(tr) // 10)
    return float(median(tr.values[:w])), float(median(tr.values[-w:])), w, trend_z(tr.values, 40)


def _margins_reversed(ctx):
    """The finding of a preference run without a logged accuracy whose mean margin
    (chosen minus rejected implicit reward) sits below 0 over the second half of the run,
    beyond ``diverge_noise_z`` standard errors of its median, while the loss has no
    significant downward trend: the policy ranks the rejected answers above the chosen ones
    on its own training pairs. ``None`` otherwise."""
    th = ctx.th
    mg = _trl_series(ctx, "rewards/margins")
    if mg is None or len(mg) < th.pref_min_points:
        return None
    half = mg.values[len(mg) // 2 :]
    level = float(median(half))
    se = level_se(noise_sigma(mg.values), half.size)
    if not level < -th.diverge_noise_z * se:
        return None
    start, end, w, loss_z = _pref_loss_ends(ctx)
    if loss_z <= -th.dead_trend_z:
        return None
    i = len(mg) // 2
    return ctx.finding(
        f"the preferences are learned backwards: {mg.key} sits at {num(level)} and the loss went "
        f"{num(start)} -> {num(end)}",
        f"median {mg.key} {num(level)} over the second half of the run ({half.size} points from step "
        f"{step(mg.steps[i])}), below 0 by more than {num(th.diverge_noise_z)} standard errors ({num(se)}): the "
        f"policy ranks the rejected answers above the chosen ones on its own training pairs; the loss has no "
        f"significant downward trend (median {num(start)} over its first {w} points, {num(end)} over its last {w}).",
        {"margins_key": mg.key, "margins_level": level, "margins_se": se, "loss_start": start, "loss_end": end},
        step=mg.steps[i],
        line=mg.lines[i],
    )


@rule(
    "TP-PREF-NOT-LEARNING",
    Level.FAIL,
    "flat",
    "the preferences are not learned: preference accuracy stays at chance and the loss does not fall",
    needs=[Need("loss", "pref_min_points")],
    thresholds=[
        "pref_min_points",
        "pref_chance_accuracy",
        "dead_trend_z",
        "dead_min_schedule_share",
        "diverge_noise_z",
    ],
    objectives=("rl",),
    min_schedule_share="dead_min_schedule_share",
    after_warmup=True,
    least_evidence="{pref_min_points} preference-accuracy points (or, without them, {pref_min_points} margin points); a loss with no significant downward trend.",
    detects=(
        "On a preference objective that logs its preference accuracy (TRL's rewards/accuracies: DPO, IPO, ORPO, "
        "CPO), with at least {pref_min_points} accuracy points: the median accuracy over the second half of the run is at most "
        "{pref_chance_accuracy}, with no significant upward trend there (Mann-Kendall z below {dead_trend_z} over at most 20 block medians), "
        "and the loss has no significant downward trend over the run (z above -{dead_trend_z} over at most 40 block "
        "medians): flat, or rising. Without a logged accuracy, its mean margin (TRL's rewards/margins, at least "
        "{pref_min_points} points) below 0 over the second half of the run by more than {diverge_noise_z:g} standard "
        "errors of its median, under the same loss: the policy ranks the rejected answers above the chosen ones."
    ),
    why=(
        "The accuracy is measured on the run's own training pairs: a policy that learns its preferences ranks the "
        "chosen answer above the rejected one on most of them within the first epoch. At 0.5-0.6 with an "
        "objective no better than at the start, the updates are not teaching the preference, whatever the "
        "margins show (a growing mean margin at chance accuracy is a log-ratio that only grows in scale)."
    ),
    not_mean=(
        "A slowly rising accuracy (a low learning rate, a large beta) is not this, nor a loss that falls; a "
        "preference set that is noisy by nature tops out near 0.6-0.7 with a falling loss."
    ),
    causes=(
        "Chosen and rejected answers swapped or near-identical, a reference model that is not the starting "
        "policy, an extra loss term (an NLL or SFT term) that dominates the preference term, a learning rate "
        "too high for the preference term (the loss jumps and stays), labels masked on the answer tokens."
    ),
    try_=(
        "Check a few pairs (chosen really better, and different from rejected); start from the SFT model that "
        "is also the reference; lower the weight of any extra loss term; check rewards/chosen and "
        "rewards/rejected move apart."
    ),
)
def check_pref_not_learning(ctx):
    th = ctx.th
    acc = _trl_series(ctx, "rewards/accuracies")
    if acc is None:
        f = _margins_reversed(ctx)
        if f is not None:
            yield f
        return
    if len(acc) < th.pref_min_points:
        return
    half = acc.values[len(acc) // 2 :]
    level = float(median(half))
    if level > th.pref_chance_accuracy:
        return
    z = trend_z(half, 20)
    if z >= th.dead_trend_z:
        return
    start, end, w, loss_z = _pref_loss_ends(ctx)
    if loss_z <= -th.dead_trend_z:  # the objective improves significantly
        return
    i = len(acc) // 2
    yield ctx.finding(
        f"the preferences are not learned: {acc.key} stays at {num(level)} and the loss went "
        f"{num(start)} -> {num(end)}",
        f"median {acc.key} {num(level)} over the second half of the run ({half.size} points from step "
        f"{step(acc.steps[i])}; threshold {num(th.pref_chance_accuracy)}), trend z {num(z)} (a rise needs "
        f"{num(th.dead_trend_z)}); loss median {num(start)} over its first {w} points and {num(end)} over its last "
        f"{w}, with no significant downward trend (Mann-Kendall z {num(loss_z)}; a fall needs "
        f"-{num(th.dead_trend_z)}): the objective does not improve.",
        {
            "accuracy_key": acc.key,
            "accuracy_level": level,
            "accuracy_trend_z": z,
            "loss_start": start,
            "loss_end": end,
            "loss_trend_z": loss_z,
            "points": len(acc),
        },
        step=acc.steps[i],
        line=acc.lines[i],
    )


def _chosen_logps(ctx):
    """The log-probabilities of the preferred answers a preference trainer logs (TRL's
    ``logps/chosen``, ``eval_logps/chosen``: any key whose words hold ``logps`` or ``logp``
    and ``chosen``), train before held-out, as a finite series of at least
    ``pref_collapse_min_points`` values; ``None`` otherwise."""
    found = []
    for name, s in sorted(ctx.run.series.items()):
        w = set(words(s.key or name))
        if not (w & {"logps", "logp", "logprobs", "logprob"} and "chosen" in w):
            continue
        f = ctx.finite(name)
        if len(f) >= ctx.th.pref_collapse_min_points:
            found.append((measured_held_out(s.key or name), name, f))
    return min(found, key=lambda x: (x[0], x[1]))[2] if found else None


@rule(
    "TP-PREF-CHOSEN-COLLAPSE",
    Level.WARN,
    "rl",
    "a preference run made its preferred answers far less likely",
    thresholds=["pref_collapse_ratio", "pref_collapse_min_points", "diverge_noise_z"],
    objectives=("rl",),
    least_evidence="A logged log-probability of the chosen answers ({pref_collapse_min_points} points or more) whose end level is {pref_collapse_ratio:g}x its start or more, beyond its noise.",
    detects=(
        "On an RL or preference objective, the logged log-probability of the chosen (preferred) answers (TRL's "
        "logps/chosen; the train series before the held-out one), negative, whose median over its last 10% of points "
        "(at least 3) is {pref_collapse_ratio:g} times its median over its first 10% or more (further from zero) and below "
        "it by more than {diverge_noise_z:g} standard errors of the two medians."
    ),
    why=(
        "DPO and its relatives raise the margin between the chosen and the rejected answers; they can do it by "
        "pushing both down, and a policy whose chosen answers' log-likelihood falls several-fold has moved far "
        "from anything it was shown (likelihood displacement, over-optimisation): the margin grows and the loss "
        "nears 0 while generations degrade. On the corpus's healthy DPO runs the chosen log-probability ends "
        "within 1% of where it started (-147 -> -146, -346 -> -344); a new user's over-optimised run went "
        "-147 -> -991 and PASSed."
    ),
    not_mean="Not that every fall of the chosen log-probability is harmful: a mild one is common. This is a fall to a multiple of the start.",
    causes="Too many epochs or too high a learning rate for the preference data, beta too small, preference pairs whose chosen answers are off the policy's distribution.",
    try_="Stop at an earlier checkpoint, lower the learning rate or raise beta, add an SFT term on the chosen answers (RPO) or use a method that keeps their likelihood, and read some generations.",
)
def check_pref_chosen_collapse(ctx):
    s = _chosen_logps(ctx)
    if s is None:
        return
    v = s.values
    w = max(3, v.size // 10)
    first, last = float(median(v[:w])), float(median(v[-w:]))
    if not first < 0 or not last < 0 or last / first < ctx.th.pref_collapse_ratio:
        return
    sigma = noise_sigma(v)
    # two levels of w points each: the standard error of their difference
    gate = ctx.th.diverge_noise_z * math.sqrt(2) * level_se(sigma, w)
    if first - last <= gate:
        return
    yield ctx.finding(
        f"the preferred answers became far less likely: {s.key} {num(first)} -> {num(last)} ({num(last / first)}x)",
        f"{s.key}: median {num(first)} over its first {w} points, {num(last)} over its last {w} (steps "
        f"{step(s.steps[-w])}–{step(s.steps[-1])}), {num(last / first)}x, at least {num(ctx.th.pref_collapse_ratio)}x "
        f"and beyond the noise gate {num(gate)}.",
        {"key": s.key, "first": first, "last": last, "ratio": last / first, "points": int(v.size)},
        step=s.steps[-w],
        line=s.lines[-w],
    )
