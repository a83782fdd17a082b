"""What kind of objective a run optimises, read from the metric names it logs.

RL and preference objectives (TRL's GRPO, PPO, DPO, ORPO, KTO, …) log a loss that is not
expected to fall monotonically and may sit at or near zero by construction (GRPO's loss
is zero at its first iterations). The rules that read the loss curve's shape therefore
declare ``objectives=("supervised",)`` and are skipped on such runs with the typed reason
``objective: rl``; what can still be judged there (non-finite values, a policy that gets
no gradient) stays judged.

A run is RL when it logs a reward (``reward``, ``rewards/*``, ``*/reward*``,
``objective/scores``, ``objective/rlhf_reward``, an episode return (``episode/Return``,
DreamerV3's ``episode/score``, baselines' ``rollout/return``,
``*_return``), Stable-Baselines' ``ep_rew_mean`` and EvalCallback's ``eval/mean_reward``,
RLlib's ``episode_reward_mean``/``episode_return_mean``, CleanRL's ``episodic_return``,
Dopamine's ``AverageReturns``, Tianshou's ``rew``) or TRL's
policy/log-probability groups (``policy/*``, ``logps/*``), or when the log has no loss
and a series read (or mapped with ``--map reward=KEY``) as its reward.
A ``kl`` key alone is not enough: VAEs log one too. Every name the alias table reads as the
reward says RL here too (a test holds the two lists together) except ``mean_reward``,
``avg_reward`` and ``average_reward``: custom REINFORCE and verifier loops log them beside
a loss they minimise and judge.

A run is adversarial (a GAN) when it logs a discriminator or critic loss (``d_loss``,
``Loss_D``, ``disc_loss``, ``errD``, ``critic/loss``, …) or the discriminator's outputs
(``D(x)``, ``D_G_z``, ``d_real``, …) and the loss judged is the
generator's or the discriminator's: a key of either side (``g_loss``, ``loss_G``,
``gen_loss``, ``errG``, ``generator/loss``, … or the discriminator's own), or a plain
``loss`` beside which the log holds no loss but the two sides' (or but a generator loss
named as one, ``loss_G``, ``generator_loss``, ``errG``: the discriminator's loss logged
without its name). The two play a minimax
game, so neither is expected to fall (a generator loss climbs while the discriminator
improves, a discriminator's falls and climbs back as the generator catches up). A
composite generator loss beside reconstruction terms (VITS's ``loss_1`` beside
``loss_mel``, ``loss_kl``, ``loss_duration``) is dominated by those terms and falls: such
a run stays supervised. A lowercase ``g_loss`` or a ``gen_loss`` beside a plain loss is
not enough (a gradient-matching, global or sequence-generation term), nor a ``d_loss``
beside other losses (a distillation term).
"""

from __future__ import annotations

import re

import numpy as np

from ..runlog import RunLog, Series

_RL_KEY = re.compile(
    r"(^|/)(rewards?(_[a-z]+)?|objective/(scores|rlhf_reward)|env/reward[a-z_]*|episode[/_ ](return|score)|ep_rew_mean)($|/)"
    r"|(^|[/_ ])(episode_|ep_)?returns?(_mean|_history)?$"
    # RLlib's episode_reward_mean / episode_return_mean, a DQN loop's episode_reward,
    # CleanRL's episodic_return,
    # Dopamine's AverageReturns, Tianshou's rew, SB3 EvalCallback's mean_reward under eval/
    r"|(^|/)(episode_(reward|return)(_(mean|min|max))?|ep_reward|episodic_return|averagereturns|rew|test_reward)$"
    # RLlib's evaluation results under a prefix (eval_episode_reward_mean)
    r"|^eval_episode_(reward|return)(_mean)?$"
    r"|(^|/)eval/mean_reward$"
    r"|^(policy|logps|train/policy|train/logps)/",
    re.IGNORECASE,
)


_SEP = r"[/_ .-]"
_G_KEY = re.compile(
    rf"(^|{_SEP})(g|gen|generator|netg){_SEP}?loss|loss{_SEP}?(g|gen|generator)($|{_SEP})|(^|/)errg$|(^|/)generator/",
    re.IGNORECASE,
)
_D_KEY = re.compile(
    rf"(^|{_SEP})(d|disc|discriminator|critic|netd){_SEP}?loss|loss{_SEP}?(d|disc|discriminator|critic)($|{_SEP})"
    r"|(^|/)errd$|(^|/)(discriminator|critic)/",
    re.IGNORECASE,
)


#: A discriminator's outputs as GAN loops log them (the PyTorch DCGAN tutorial's ``D(x)``
#: and ``D(G(z))``, ``D_x``, ``D_G_z1``, ``d_real``, ``fake_score``): the discriminator's
#: side of the game where its loss is logged as a plain ``loss``.
_D_OUT = re.compile(
    r"(^|[/_ .-])(d_x|d_g_z\d?|d\(x\)|d\(g\(z\)\)\d?|d_(real|fake)|(real|fake)_scores?)($|[/_ .-])",
    re.IGNORECASE,
)


#: A generator loss named so that it cannot be another term's: ``generator``, ``netG``,
#: ``errG`` or a capital ``G`` (``loss_G``, ``G_loss``); a lowercase ``g_loss`` is as
#: often a gradient-matching or a global term of a supervised loss, and ``gen_loss`` a
#: sequence model's generation loss.
_G_STRONG = re.compile(
    rf"(^|{_SEP})((?i:generator|netg)|G){_SEP}?(?i:loss)|(?i:loss){_SEP}?((?i:generator)|G)($|{_SEP})"
    r"|(^|/)errG$|(^|/)(?i:generator)/"
)


#: A key that names a loss term (``loss_mel``, ``val_loss``, ``errG``).
_LOSS_WORD = re.compile(r"loss|(^|/)err", re.IGNORECASE)


def adversarial_pair(keys) -> tuple[str, str] | None:
    """``(generator key, discriminator key)`` when ``keys`` (logged metric names) hold
    both sides of a GAN's game, a generator loss (:data:`_G_KEY`) and a discriminator or
    critic loss (:data:`_D_KEY`); ``None`` otherwise. Neither is "the" training loss (the
    loss mapping leaves such a pair unmapped), so a log of them alone is named for what it
    is instead of as a log with no loss."""
    keys = sorted(keys)
    g = [k for k in keys if _G_KEY.search(k) and not _D_KEY.search(k)]
    d = [k for k in keys if _D_KEY.search(k) and not _G_KEY.search(k)]
    return (g[0], d[0]) if g and d else None


def gan_sides(run: RunLog) -> tuple[Series, Series] | None:
    """``(generator loss, discriminator loss)`` series of an adversarial run (see
    :func:`detect_objective`), each its finite points, or ``None`` when the run is not
    adversarial or one side's loss is not logged (a discriminator known only by its
    outputs, ``D(x)``). The judged loss is the side its key names; a plain ``loss`` is the
    side the other keys leave open (beside a discriminator loss, the generator's; beside a
    generator loss named as one, the discriminator's). Of several keys of one side the
    judged loss, else the shortest name (``loss_D`` before ``loss_D_real``), is taken."""
    if detect_objective(run)[0] != "adversarial":
        return None
    series = sorted(run.series.values(), key=lambda s: (len(s.key), s.key))
    g = [s for s in series if _G_KEY.search(s.key) and not _D_KEY.search(s.key)]
    d = [s for s in series if _D_KEY.search(s.key) and not _G_KEY.search(s.key)]
    judged = run.series.get("loss") or run.series.get("eval_loss")
    if judged is not None and not any(s is judged for s in g + d):
        if d and not g:
            g = [judged]
        elif g and not d:
            d = [judged]
    if not g or not d:
        return None
    pick = [next((s for s in side if s is judged), side[0]) for side in (g, d)]
    return pick[0].finite(), pick[1].finite()


#: An LR range test's sweep (see :func:`lr_range_test`): at least this many logged rates,
#: ...
LR_SWEEP_MIN_POINTS = 10
#: ... starting at or below this rate (fastai's ``lr_find`` starts at 1e-7, Lightning's
#: tuner at 1e-8, torch-lr-finder wherever it is told, usually 1e-7 to 1e-5; a training
#: schedule starts at its warm-up or its rate, and an ExponentialLR given a gamma above 1
#: by mistake climbs from the rate the run meant, 1e-5 or more) ...
LR_SWEEP_MAX_START = 1e-5
#: ... over at least this many decades ...
LR_SWEEP_MIN_DECADES = 4.0
#: ... as a straight line in log(lr) against the step (R^2; a linear warm-up from near 0
#: is concave there, about 0.8 over 100 logs).
LR_SWEEP_MIN_R2 = 0.98


def lr_range_test(run: RunLog) -> str | None:
    """The learning rate's key when the log is an LR range test (fastai's ``lr_find``,
    Lightning's tuner, torch-lr-finder): from its first logged rate to its last the
    learning rate climbs geometrically, never falling, from at most
    :data:`LR_SWEEP_MAX_START` over at least :data:`LR_SWEEP_MIN_DECADES` decades, its log
    a straight line in the step (:data:`LR_SWEEP_MIN_R2`), at least
    :data:`LR_SWEEP_MIN_POINTS` rates. Such a run raises the rate until the loss blows up,
    on purpose: it picks a rate, it does not train a model. ``None`` otherwise."""
    lr = run.series.get("lr")
    if lr is None:
        return None
    ok = np.isfinite(lr.values)
    v, st = lr.values[ok], lr.steps[ok]
    if v.size < LR_SWEEP_MIN_POINTS or not np.all(v > 0) or not v[0] <= LR_SWEEP_MAX_START:
        return None
    if not np.all(np.diff(v) >= 0) or np.log10(v[-1] / v[0]) < LR_SWEEP_MIN_DECADES:
        return None
    y = np.log(v)
    x = st if np.all(np.isfinite(st)) and np.ptp(st) > 0 else np.arange(v.size, dtype=float)
    r = np.corrcoef(x, y)[0, 1]
    return lr.key if r * r >= LR_SWEEP_MIN_R2 else None


def detect_objective(run: RunLog) -> tuple[str, list[str]]:
    """``("rl", [the keys that say so])``, ``("adversarial", [the judged loss's key, a
    discriminator key])``, ``("lr_range_test", [the learning rate's key])``
    (:func:`lr_range_test`) or ``("supervised", [])``."""
    keys = sorted({s.key for s in run.series.values()})
    hits = [k for k in keys if _RL_KEY.search(k)]
    if hits:
        return "rl", hits
    # a reward (a return) and no loss: whatever its name, or a name the user mapped, the
    # run is judged by it (a model-based RL log, DreamerV3's, logs returns only)
    if "reward" in run.series and "loss" not in run.series and "eval_loss" not in run.series:
        return "rl", [run.series["reward"].key]
    sweep = lr_range_test(run)
    if sweep is not None:
        return "lr_range_test", [sweep]
    judged = run.series.get("loss") or run.series.get("eval_loss")
    d = [k for k in keys if (_D_KEY.search(k) or _D_OUT.search(k)) and not _G_KEY.search(k)]
    if judged is None:
        return "supervised", []
    if not d:
        # A plain train loss beside nothing but a generator loss named as one: the
        # discriminator's side of the game, logged without its name.
        g = [k for k in keys if _G_STRONG.search(k)]
        jk = judged.key
        if not g or run.series.get("loss") is not judged or _G_KEY.search(jk) or _D_KEY.search(jk):
            return "supervised", []
        if any(_LOSS_WORD.search(k) and k != jk and not _G_KEY.search(k) for k in keys):
            return "supervised", []
        return "adversarial", [jk, g[0]]
    jk = judged.key
    if _G_KEY.search(jk) or _D_KEY.search(jk):
        # the judged loss, then the other side's key
        side = _G_KEY if jk in d else _D_KEY
        other = [k for k in keys if k != jk and side.search(k)]
        return "adversarial", [jk] + other[:1]
    others = [k for k in keys if _LOSS_WORD.search(k) and k != jk and not (_G_KEY.search(k) or _D_KEY.search(k))]
    if not others:
        return "adversarial", [jk, d[0]]
    return "supervised", []
