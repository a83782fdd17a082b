"""The alias table: the canonical metric names, the raw keys that mean each of them, and the
raw keys that name the training step.

Readers keep every raw key; :func:`~trainproof.aliases.mapping.resolve` decides which raw
key stands for each canonical metric, and this module says how well a raw key matches one:
its rank (:func:`alias_rank`). When several raw keys of one log match the same canonical
name, the one whose alias comes first in :data:`ALIASES` wins (ties between raw keys
matching the same alias, e.g. two ``lr-*`` columns, go to the alphabetically first raw
key); the report's ``mapping`` lists the winner and the candidates it beat.

Matching ignores case, and for W&B chart exports (``"<run name> - train/loss"``) it also
tries the part after the last ``" - "`` (:func:`~trainproof.aliases.runs.split_run`). The
learning rate and the gradient norm also match behind a train-side namespace and, for the
learning rate, with a parameter-group suffix (``train_lr``, ``optim/learning_rate_group0``,
``optim/total_grad_norm``; see :data:`PREFIXED`), after every alias that matches as
written. W&B's ``…__MIN`` / ``…__MAX`` companion columns match nothing and stay raw series.

The table is data and matching only, apart from the judgement of the loss fallback
(:mod:`.loss_fallback`) and from how the two are combined (:mod:`.mapping`): it imports
nothing of the package but the W&B column names (:mod:`.runs`). :func:`compile_table`
builds the matchers of any table shaped like :data:`ALIASES` (the tests build wrongly
ordered ones to show that their checks of the order fail on them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from .runs import is_band, split_run

#: Canonical metric names (see DESIGN.md, "Data model").
CANONICAL = (
    "loss",
    "eval_loss",
    "lr",
    "grad_norm",
    "epoch",
    "time",
    "step_time",
    "loader_time",
    "gpu_util",
    "update_ratio",
    "throughput",
    "kl",
    "reward",
    "loss_scale",
)

#: canonical name -> ordered aliases. Earlier aliases win over later ones; the precedences
#: the comments below give are checked by ``PROMISED`` in tests/aliases/test_table.py.
#: Plain strings match a raw key exactly (ignoring case); ``re:`` entries are regular
#: expressions matched against the whole key.
#: The loss of one held-out set of an HF evaluation of several (``eval_<name>_loss``,
#: ``trainer.evaluate`` given a dict of data sets), a regular expression for the whole key:
#: the first such key is read as the eval loss, and TP-OVERFIT reads the others too.
EVAL_SET_LOSS = r"eval_(.+)_loss"

ALIASES: dict[str, tuple[str, ...]] = {
    # Per-step train loss first; Lightning's per-epoch aggregate only when nothing else.
    "loss": (
        "loss",
        "train/loss",
        "train_loss",
        "training_loss",
        "train_loss_step",
        "loss_step",
        "Loss/train",
        "train/loss_step",
        # kohya sd-scripts and its forks: the step's loss (its loss/average is a running
        # mean over the epoch that hides a step's spike, loss/epoch the epoch's mean)
        "loss/current",
        "epoch_loss",  # Keras TensorBoard callback
        "TrainIterStats/loss",  # Coqui's event files
        # Coqui GAN models (VITS, HiFi-GAN) log no single loss: loss_0 is the
        # discriminator's total, loss_1 the generator's (the model being trained).
        "loss_1",
        "TrainIterStats/loss_1",
        # Epoch aggregates, only when nothing per step exists.
        "train_loss_epoch",
        "TrainEpochStats/avg_loss",
        "TrainEpochStats/avg_loss_1",
    ),
    # Multi-dataset HF evaluation (``eval_<name>_loss``) only when no plain eval loss.
    "eval_loss": (
        "eval_loss",
        "val_loss",
        "validation_loss",
        "valid_loss",
        "dev_loss",  # Flair's DEV line; NLP's dev split
        "val/loss",
        "eval/loss",
        "Loss/val",
        "val_loss_epoch",
        "validation/loss",
        "validation/epoch_loss",  # Keras TensorBoard callback (validation/ folder)
        "eval/avg_loss",  # Coqui's EVALUATION block
        "EvalStats/avg_loss",
        "EvalStats/loss",
        "eval/avg_loss_1",
        "EvalStats/avg_loss_1",
        "re:" + EVAL_SET_LOSS,
    ),
    "lr": (
        "lr",
        "learning_rate",
        "train/learning_rate",
        "train/lr",
        "current_lr",  # Coqui
        "current_lr_1",  # Coqui GAN: the generator's optimizer
        "TrainIterStats/current_lr",
        "TrainIterStats/current_lr_1",
        "re:lr-.+",  # Lightning LearningRateMonitor: lr-<OptimizerName>
        "charts/learning_rate",  # CleanRL
        "optim0_lr0",  # ESPnet2: its first optimizer's first parameter group
        "x/lr0",  # YOLOv5 and YOLOv8.0 results.csv: x/lr0..x/lr2, one per parameter group
        # Keras' TensorBoard callback: the rate its logs hold (from a LearningRateScheduler or
        # ReduceLROnPlateau), with its epoch_ prefix as epoch_loss has: Keras 3 and TF 2.x
        # name it learning_rate, older Keras lr
        "epoch_learning_rate",
        "epoch_lr",
        "lr_model",  # SpeechBrain recipes: lr_<module> per optimizer; "model" is the main one
        # RLlib's learner statistics, nested under the policy's name: the old API's
        # cur_lr, the new API's rate of its default optimizer.
        "re:.+/learner_stats/cur_lr",
        "re:.+/default_optimizer_learning_rate",
    ),
    "grad_norm": (
        "grad_norm",
        "train/grad_norm",
        "gradient_norm",
        "total_norm",
        "total_grad_norm",  # DeepSpeed, OLMo's optim/total_grad_norm
        "gnorm",
        "grad_norm_1",
        "TrainIterStats/grad_norm",
        "TrainIterStats/grad_norm_1",
    ),
    "epoch": ("epoch", "train/epoch"),
    "time": ("time", "wall_time", "_timestamp", "timestamp"),
    "step_time": (
        "step_time",
        "train/step_time",
        "iter_time",
        "batch_time",
        "time/step",
        "TrainIterStats/step_time",
    ),  # Coqui's event file
    "loader_time": ("loader_time", "data_time", "train/data_time", "time/data", "TrainIterStats/loader_time"),
    "gpu_util": ("gpu_util", "gpu_utilization", "system/gpu.0.gpu"),
    "update_ratio": ("update_ratio", "update_to_weight_ratio"),
    # The mixed-precision loss scale (torch GradScaler, DeepSpeed, Coqui's amp_scaler).
    "loss_scale": ("loss_scale", "amp_scaler", "train/loss_scale", "scaler/scale", "grad_scale"),
    # RL and preference objectives (TRL GRPO/PPO/DPO): the policy's KL to the reference
    # model and the mean reward.
    # RLlib's PPO kl (learner_stats/kl, mean_kl_loss) is none of them: it is the KL between
    # consecutive policies, near 0 in any converged run, not the distance from the start.
    "kl": ("kl", "objective/kl", "train/kl", "policy/kl", "ppo/policy/kl"),
    "reward": (
        "reward",
        "train/reward",
        # TRL's PPO/RLOO: the reward model's score first; the KL-penalised objective/rlhf_reward
        # falls by design where the KL coefficient is ramped up (a breaker's healthy runs
        # FAILed TP-RL-RETURN-COLLAPSE on it) and rises where a negative-KL exploit inflates it
        "objective/scores",
        "objective/rlhf_reward",
        "rewards/mean",
        "env/reward_mean",
        "reward_mean",
        "train/reward_mean",
        "rollout/ep_rew_mean",
        "ep_rew_mean",
        "episode_reward_mean",
        # RLlib: the old API's mean episode reward (also under sampler_results/), the new
        # API's mean return under env_runners/; CleanRL's charts/episodic_return. Another
        # namespace (one agent's of several) is no run's reward to guess.
        "episode_return_mean",
        "sampler_results/episode_reward_mean",
        "env_runners/episode_return_mean",
        "charts/episodic_return",
        "episodic_return",
        "mean_reward",
        # hand-written DQN and policy-gradient loops: the return of the last episode(s)
        "episode_reward",
        "avg_reward",
        "average_reward",
        "ep_reward",
        "rew",  # Tianshou's progress bar: the mean return of the episodes collected
        # OpenAI baselines: return_history is the mean of the last 100 episodes,
        # return the mean of every episode since the start (it lags), so the first.
        "rollout/return_history",
        "rollout/return",
        "episode_return",
        "episode/return",
        "episode/score",  # DreamerV3: the training episodes' return
        # Model-based and off-policy RL loops (Dreamer, MBPO) log only returns: the
        # training episodes' first, else the evaluation episodes' (their return is still the
        # objective; a log with no loss is judged on it rather than not at all).
        "return",
        "train/return",
        "train_return",
        "mean_return",
        "average_return",
        "avg_return",
        "train/averagereturns",  # Dopamine's summaries: the mean return per iteration
        "eval_return",
        "eval/return",
        "evaluation/return",
        "eval/averagereturns",
        "eval/mean_reward",  # Stable-Baselines3's EvalCallback
        "eval/episode_reward",
        "eval_episode_reward_mean",
        "evaluation/episode_reward_mean",  # RLlib's evaluation results
        "test_reward",
        "train/rewards/margins",
        "rewards/margins",
    ),
    "throughput": (
        "throughput",
        "samples_per_second",
        "train/samples_per_second",
        "tokens_per_second",
        "train/tokens_per_second",
    ),
}

#: Raw keys that name the x axis (training step), in order of preference.
STEP_KEYS = (
    "step",
    "global_step",
    "_step",
    "trainer/global_step",
    "train/global_step",
    "current_steps",
    "iteration",
    "iter",
    # RL loggers count environment steps: OpenAI baselines' ``total/steps``,
    # Stable-Baselines3's ``time/total_timesteps`` and hand-written equivalents.
    "time/total_timesteps",
    "total_timesteps",
    "total timesteps",
    "total/steps",
    # Ray Tune and RLlib results: RLlib's environment steps, else Tune's report count (a
    # trial's rows; its CSV and JSON carry both beside wall-clock columns).
    "timesteps_total",
    "training_iteration",
    # A progress counter in percent rises with training like a step (a log with no
    # step counter at all, e.g. a hand-written JSONL logger's ``progress_percent``).
    "progress_percent",
)

_STEP_KEYS_LOWER = {k.lower(): i for i, k in enumerate(STEP_KEYS)}


def compile_table(aliases: Mapping[str, tuple[str, ...]]) -> dict[str, list[tuple[int, object]]]:
    """canonical name -> ``[(rank, matcher), ...]`` for a table shaped like :data:`ALIASES`:
    a plain alias becomes its lower-case string, a ``re:`` alias a case-insensitive pattern
    (matched against the whole key); the rank is the alias's index in its tuple."""
    table: dict[str, list[tuple[int, object]]] = {}
    for canon, names in aliases.items():
        entries: list[tuple[int, object]] = []
        for rank, alias in enumerate(names):
            if alias.startswith("re:"):
                entries.append((rank, re.compile(alias[3:], re.IGNORECASE)))
            else:
                entries.append((rank, alias.lower()))
        table[canon] = entries
    return table


_TABLE = compile_table(ALIASES)


#: Canonical names whose aliases also match behind a train-side namespace
#: (:data:`TRAIN_PREFIX`) and, for the learning rate, with a parameter-group suffix
#: (:data:`GROUP_SUFFIX`): ``train_lr``, ``train/learning_rate``,
#: ``optim/learning_rate_group0``, ``optim/total_grad_norm``, ``train/episode_return``
#: (a TensorBoard tag of an RL loop's return). Only whole names match after the prefix is
#: taken off, so ``lr_scale`` or ``grad_norm_clip`` stay raw, and an eval-side name
#: (``eval/grad_norm``, ``eval/episode_return``) never becomes a train metric.
PREFIXED = ("lr", "grad_norm", "reward")

#: A namespace that says a metric belongs to the optimiser's training step, written with
#: ``/``, ``_``, ``.`` or ``-`` after it (the console reader writes ``/`` as ``_``).
TRAIN_PREFIX = re.compile(r"^(?:train|training|trainer|optim|optimizer|opt)[/_.-](?P<rest>.+)$", re.IGNORECASE)

#: A parameter group's index after a learning rate (``learning_rate_group0``,
#: ``lr/group_1``, ``lr_pg0``, ``Learning Rate (group 0)`` as the space-to-underscore
#: reading ``learning_rate_(group_0)``): the rate of one group of the optimiser.
GROUP_SUFFIX = re.compile(
    r"^(?P<rest>.+?)[/_.-](?:\((?:group|param_group|pg)[_-]?\d+\)|(?:group|param_group|pg)[_-]?\d+)$", re.IGNORECASE
)


_SPACES = re.compile(r"\s+")


def alias_rank(canon: str, raw: str) -> int | None:
    """Rank of the first alias of ``canon`` matching ``raw``, or ``None``.

    A name that matches only after a train-side prefix or a parameter-group suffix is
    taken off (:data:`PREFIXED`) ranks after every alias that matches it as written, so a
    log's plain ``lr`` column beats its ``train_lr``.
    """
    if is_band(raw):
        # Checked before matching: a regex alias such as ``lr-.+`` would match
        # "run - lr-AdamW__MIN" and could win the tie-break over the real column.
        return None
    names = [raw.lower()]
    run, metric = split_run(raw)
    if run is not None:  # W&B chart export: "<run> - train/loss"
        names.append(metric.strip().lower())
    # A name written with spaces for its separators (TensorBoard's "Learning Rate", an
    # MLflow "train/grad norm") is the name with underscores.
    names += [spaced for n in names if _SPACES.search(n) and (spaced := _SPACES.sub("_", n.strip())) not in names]
    r = _rank_of(canon, names)
    if r is not None or canon not in PREFIXED:
        return r
    stripped = []
    for name in names:
        m = TRAIN_PREFIX.match(name)
        core = m.group("rest") if m else name
        g = GROUP_SUFFIX.match(core) if canon == "lr" else None
        stripped += [c for c in (core, g.group("rest") if g else None) if c is not None and c != name]
    r = _rank_of(canon, stripped)
    return None if r is None else len(_TABLE[canon]) + r


def _rank_of(canon: str, names: list[str]) -> int | None:
    for rank, alias in _TABLE[canon]:
        for name in names:
            if isinstance(alias, str):
                if name == alias:
                    return rank
            elif alias.fullmatch(name):  # type: ignore[union-attr]
                return rank
    return None


def is_step_key(raw: str) -> bool:
    """True when ``raw`` names the training step (see :data:`STEP_KEYS`)."""
    return raw.lower() in _STEP_KEYS_LOWER


def step_key(keys: Iterable[str]) -> str | None:
    """The preferred step key among ``keys`` (by :data:`STEP_KEYS` order), or ``None``."""
    best: tuple[int, str] | None = None
    for k in keys:
        r = _STEP_KEYS_LOWER.get(k.lower())
        if r is not None and (best is None or (r, k) < best):
            best = (r, k)
    return best[1] if best else None
