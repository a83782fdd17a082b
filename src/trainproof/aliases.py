"""Canonical metric names and the table of raw keys that mean them.

Readers keep every raw key; this module decides which raw key stands for each canonical
metric. When several raw keys of one log match the same canonical name, the one whose
alias comes first in :data:`ALIASES` wins (ties between raw keys matching the same alias,
e.g. two ``lr-*`` columns, go to the alphabetically first raw key); the report's
``mapping`` lists the winner and the candidates it beat.

Matching ignores case, and for W&B chart exports (``"<run name> - train/loss"``) it also
tries the part after the last ``" - "``. The learning rate and the gradient norm also match
behind a train-side namespace and, for the learning rate, with a parameter-group suffix
(``train_lr``, ``optim/learning_rate_group0``, ``optim/total_grad_norm``; see
:data:`PREFIXED`), after every alias that matches as written. W&B's ``…__MIN`` / ``…__MAX`` companion columns
match nothing and stay raw series.

**Loss fallback.** When no alias names the train loss (or the eval loss), the loss is
chosen among the keys whose *words* name a loss (:func:`loss_candidate`). A key is split
into lower-case words at every non-alphanumeric character and at every lower-to-upper
case change (``train/CrossEntropyLoss`` -> ``train cross entropy loss``). A key is a
candidate when one word is a loss word (:data:`LOSS_WORDS`: ``loss``, ``losses``,
``cost``, ``nll``, ``elbo``, ``mse``, or any word ending in ``loss`` such as
``logloss``), and never when one word says it is something else (:data:`NOT_LOSS_WORDS`:
an accuracy, a learning rate, a count, a time, a scale, a gradient norm, a weight, a
best-so-far, a min/max band…). Each candidate has a split (a word from
:data:`EVAL_WORDS` makes it an eval loss, one from :data:`TRAIN_WORDS` a train loss, else
unmarked: read as train), a kind (a *total* when its other words are only total words,
:data:`TOTAL_WORDS`, or none; a *component* otherwise: ``loss_cls``, ``train/box_loss``)
and a granularity (per step: ``step``/``batch``/``iter`` words; per epoch: ``epoch``;
else unmarked, between the two). The train loss is the first train or unmarked candidate
in the order

1. a total before a component (``total_loss`` beats ``loss_cls``);
2. train before unmarked (``train_loss_batch`` beats ``mean_loss``);
3. per step, then unmarked, then per epoch (``loss_step`` beats ``loss_epoch``);
4. fewer words, then the alphabetically first key (so column order never matters).

The eval loss is the first eval candidate in the same order: a log whose only loss is a
validation or test loss gets it as ``eval_loss``, never ignored. When the best train (or
eval) candidate is a component, there is no total to read:

* components of one objective (YOLO's ``train/box_loss``, ``train/obj_loss``,
  ``train/cls_loss``; detectron2's ``loss_*`` without ``total_loss``; a VAE's
  ``recon_loss`` and ``kld_loss``) are summed into the total the optimiser minimises,
  reported as ``how: "fallback"`` with ``sum_of`` listing them, over the steps where every
  one of them is logged (:class:`~trainproof.runlog.RunLogBuilder` builds the sum; a
  component that is exactly zero by construction, such as a one-class detector's class
  loss, then cannot pass for a collapsed loss);
* components of separate networks (RL ``loss_actor``/``loss_critic``,
  ``policy_gradient_loss``/``value_loss``, a GAN's generator and discriminator:
  :data:`SEPARATE_NETWORK_WORDS`) have no meaningful sum, and none of them is a loss that
  must fall in a healthy run (an actor's ``-Q`` falls or rises with the returns, a
  critic's TD error grows with them): no loss is mapped, and the run is not judged on a
  loss (``TP-NO-LOSS``) rather than judged on the wrong curve. A total beside them
  (``total_loss`` with ``value_loss`` and ``policy_gradient_loss``) is read as usual.

The report's ``mapping`` says ``how: "fallback"`` and lists the other candidates under
``ignored`` (the first of them is the runner-up).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

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

#: canonical name -> ordered aliases. Earlier aliases win over later ones.
#: Plain strings match a raw key exactly (ignoring case); ``re:`` entries are regular
#: expressions matched against the whole key.
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
        "re:eval_(.+)_loss",
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
    "kl": ("kl", "objective/kl", "train/kl", "policy/kl", "ppo/policy/kl"),
    "reward": (
        "reward",
        "train/reward",
        "objective/scores",
        "rewards/mean",
        "env/reward_mean",
        "rollout/ep_rew_mean",
        "ep_rew_mean",
        "episode_reward_mean",
        "mean_reward",
        # OpenAI baselines: return_history is the mean of the last 100 episodes,
        # return the mean of every episode since the start (it lags), so the first.
        "rollout/return_history",
        "rollout/return",
        "episode_return",
        "episode/return",
        # Model-based and off-policy RL loops (Dreamer, MBPO) log only returns: the
        # training episodes' first, else the evaluation episodes' (their return is still the
        # objective; a log with no loss is judged on it rather than not at all).
        "return",
        "train/return",
        "train_return",
        "mean_return",
        "average_return",
        "eval_return",
        "eval/return",
        "evaluation/return",
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
    # A progress counter in percent rises with training like a step (a log with no
    # step counter at all, e.g. a hand-written JSONL logger's ``progress_percent``).
    "progress_percent",
)

_STEP_KEYS_LOWER = {k.lower(): i for i, k in enumerate(STEP_KEYS)}


def _compile() -> dict[str, list[tuple[int, object]]]:
    table: dict[str, list[tuple[int, object]]] = {}
    for canon, aliases in ALIASES.items():
        entries: list[tuple[int, object]] = []
        for rank, alias in enumerate(aliases):
            if alias.startswith("re:"):
                entries.append((rank, re.compile(alias[3:], re.IGNORECASE)))
            else:
                entries.append((rank, alias.lower()))
        table[canon] = entries
    return table


_TABLE = _compile()


#: W&B export companion columns: the band around a smoothed chart, never the metric.
_WANDB_BAND = ("__min", "__max")


#: Canonical names whose aliases also match behind a train-side namespace
#: (:data:`TRAIN_PREFIX`) and, for the learning rate, with a parameter-group suffix
#: (:data:`GROUP_SUFFIX`): ``train_lr``, ``train/learning_rate``,
#: ``optim/learning_rate_group0``, ``optim/total_grad_norm``. Only whole names match
#: after the prefix is taken off, so ``lr_scale`` or ``grad_norm_clip`` stay raw, and an
#: eval-side name (``eval/grad_norm``) never becomes a train metric.
PREFIXED = ("lr", "grad_norm")

#: A namespace that says a metric belongs to the optimiser's training step, written with
#: ``/``, ``_``, ``.`` or ``-`` after it (the console reader writes ``/`` as ``_``).
TRAIN_PREFIX = re.compile(r"^(?:train|training|trainer|optim|optimizer|opt)[/_.-](?P<rest>.+)$", re.IGNORECASE)

#: A parameter group's index after a learning rate (``learning_rate_group0``,
#: ``lr/group_1``, ``lr_pg0``): the rate of one group of the optimiser.
GROUP_SUFFIX = re.compile(r"^(?P<rest>.+?)[/_.-](?:group|param_group|pg)[_-]?\d+$", re.IGNORECASE)


def _alias_rank(canon: str, raw: str) -> int | None:
    """Rank of the first alias of ``canon`` matching ``raw``, or ``None``.

    A name that matches only after a train-side prefix or a parameter-group suffix is
    taken off (:data:`PREFIXED`) ranks after every alias that matches it as written, so a
    log's plain ``lr`` column beats its ``train_lr``.
    """
    if raw.lower().endswith(_WANDB_BAND):
        # Checked before matching: a regex alias such as ``lr-.+`` would match
        # "run - lr-AdamW__MIN" and could win the tie-break over the real column.
        return None
    names = [raw.lower()]
    if " - " in raw:  # W&B chart export: "<run> - train/loss"
        names.append(raw.rsplit(" - ", 1)[1].strip().lower())
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


class MappingError(ValueError):
    """A ``--map`` override that cannot be applied (unknown canonical name or column)."""


def parse_map_option(items: Iterable[str]) -> dict[str, str]:
    """Parse ``CANON=COLUMN`` strings from ``--map``.

    Raises:
        MappingError: when an item has no ``=``, an empty side, or an unknown canonical name.
    """
    out: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise MappingError(f"--map expects CANON=COLUMN, got {item!r}")
        canon, col = (s.strip() for s in item.split("=", 1))
        if not canon or not col:
            raise MappingError(f"--map expects CANON=COLUMN, got {item!r}")
        if canon not in CANONICAL:
            raise MappingError(f"--map: unknown canonical name {canon!r}; known: {', '.join(CANONICAL)}")
        if canon in out and out[canon] != col:
            raise MappingError(f"--map {canon} given twice ({out[canon]!r} and {col!r})")
        out[canon] = col
    return out


def resolve(raw_keys: Iterable[str], overrides: Mapping[str, str] | None = None) -> dict[str, dict]:
    """Choose one raw key per canonical metric.

    Args:
        raw_keys: every raw metric key seen in the log.
        overrides: canonical -> raw key from ``--map``; each must name an existing key.

    Returns:
        canonical -> ``{"source": raw_key, "ignored": [other candidates], "how": "alias"|"map"|"fallback"}``;
        a loss found by the fallback order (see the module docstring) also carries
        ``"why"`` (a short sentence) and, when it is a synthesized sum of components,
        ``"sum_of"`` (the component keys; ``source`` is then their names joined by ``+``).

    Raises:
        MappingError: when an override names a column the log does not have, or a column
            another override already took.
    """
    keys = sorted(set(raw_keys))
    overrides = dict(overrides or {})
    out: dict[str, dict] = {}
    taken: set[str] = set()
    for canon, col in overrides.items():
        if col not in keys:
            near = ", ".join(keys[:30]) or "(none)"
            raise MappingError(f"--map {canon}={col}: the log has no column {col!r}; columns: {near}")
        if col in taken:
            # One column feeds one series: a second name for it would leave the first
            # canonical metric mapped in ``mapping`` but missing from the RunLog's series.
            other = next(c for c, m in out.items() if m["source"] == col)
            raise MappingError(f"--map {canon}={col}: column {col!r} is already mapped to {other}")
        out[canon] = {"source": col, "ignored": [], "how": "map"}
        taken.add(col)
    for canon in CANONICAL:
        if canon in out:
            continue
        if canon in ("loss", "eval_loss") and not any(
            _alias_rank(canon, k) is not None for k in keys if k not in taken and not is_step_key(k)
        ):
            # A key another canonical metric's alias names is that metric, never a fallback loss.
            free = [
                k
                for k in keys
                if k not in taken and not is_step_key(k) and not any(_alias_rank(c, k) is not None for c in CANONICAL)
            ]
            m = _fallback(canon, free)
            if m is not None:
                out[canon] = m
                taken.update(m.get("sum_of") or [m["source"]])
            continue
        cands = []
        for k in keys:
            if k in taken or is_step_key(k):
                continue
            r = _alias_rank(canon, k)
            if r is not None:
                cands.append((r, k))
        if not cands:
            continue
        cands.sort()
        chosen = cands[0][1]
        out[canon] = {"source": chosen, "ignored": [k for _, k in cands[1:]], "how": "alias"}
        taken.add(chosen)
    return out


# --------------------------------------------------------------------------- loss fallback

#: Words that name a loss. A word ending in ``loss`` (``logloss``, ``bceloss``) is one too.
LOSS_WORDS = frozenset({"loss", "losses", "cost", "nll", "elbo", "mse"})

#: Words that make a key something other than a loss even when it has a loss word: an
#: accuracy, a learning rate, a count, a time, the mixed-precision scale, a gradient norm,
#: a loss weight or coefficient, a best-so-far or a band, a ratio or share.
NOT_LOSS_WORDS = frozenset(
    {
        "acc",
        "accuracy",
        "lr",
        "learning",
        "rate",
        "count",
        "counts",
        "num",
        "number",
        "n",
        "time",
        "timestamp",
        "duration",
        "sec",
        "secs",
        "seconds",
        "ms",
        "scale",
        "scaler",
        "grad",
        "grads",
        "gradients",
        "norm",
        "weight",
        "weights",
        "coef",
        "coeff",
        "coefficient",
        "lambda",
        "alpha",
        "beta",
        "best",
        "min",
        "max",
        "ratio",
        "std",
        "var",
        "variance",
        "percent",
        "pct",
        "frac",
        "fraction",
        "improvement",
        "delta",
        "diff",
        "threshold",
        "patience",
        "clip",
        "clipped",
        "skipped",
        "nan",
        "inf",
        "is",
        "has",
    }
)

#: The words that say which split a number is from or what axis it counts, one table for
#: every reader of names: word -> ``(meaning, in a key, in a console line)``. The meaning
#: is ``"eval"`` (a validation split), ``"test"``, ``"train"``, ``"step"`` (a counter of
#: steps or batches), ``"epoch"`` or ``"global"`` (a global step or update count). *In a
#: key*: the loss fallback reads the word among a metric key's words (:func:`loss_candidate`);
#: a test split is an eval split there. *In a console line*: the console reader reads it
#: as the last word of a printed name (``Epoch``, ``Global Batch``: step and epoch
#: words), the whole printed name (global words) or a word before the metrics
#: (``Validating:``: eval and test words). Printed text is read more strictly than keys:
#: ``Total steps: 1000`` prints a count, not a counter, and ``dev`` in a line is as likely
#: a device as a split.
VOCABULARY: dict[str, tuple[str, bool, bool]] = {
    "val": ("eval", True, True),
    "valid": ("eval", True, True),
    "validation": ("eval", True, True),
    "validating": ("eval", False, True),
    "eval": ("eval", True, True),
    "evaluation": ("eval", True, True),
    "evaluating": ("eval", False, True),
    "dev": ("eval", True, False),
    "holdout": ("eval", True, False),
    "heldout": ("eval", True, False),
    "test": ("test", True, True),
    "testing": ("test", True, True),
    "train": ("train", True, False),
    "training": ("train", True, False),
    "trn": ("train", True, False),
    "step": ("step", True, True),
    "steps": ("step", True, False),
    "batch": ("step", True, True),
    "batches": ("step", True, False),
    "iteration": ("step", True, True),
    "iterations": ("step", True, False),
    "iter": ("step", False, True),  # in a key a running reading (TOTAL_WORDS), not an axis
    "it": ("step", True, True),
    "epoch": ("epoch", True, True),
    "epochs": ("epoch", True, False),
    "ep": ("epoch", True, True),
    "global_step": ("global", False, True),
    "globalstep": ("global", False, True),
    "global_batch": ("global", False, True),
    "global_iter": ("global", False, True),
    "num_updates": ("global", False, True),
    "n_updates": ("global", False, True),
    "updates": ("global", False, True),
    "update": ("global", False, True),
    "up": ("global", False, True),
    "total_timesteps": ("global", False, True),
    "timesteps": ("global", False, True),
}


def key_words(*meanings: str) -> frozenset[str]:
    """The words of :data:`VOCABULARY` read in a metric key with one of ``meanings``."""
    return frozenset(w for w, (m, in_key, _) in VOCABULARY.items() if in_key and m in meanings)


def console_words(*meanings: str) -> frozenset[str]:
    """The words of :data:`VOCABULARY` read in a console line with one of ``meanings``."""
    return frozenset(w for w, (m, _, in_console) in VOCABULARY.items() if in_console and m in meanings)


#: Words that mark an evaluation split (validation, test, dev, held-out).
EVAL_WORDS = key_words("eval", "test")

#: Words that mark the training split.
TRAIN_WORDS = key_words("train")

#: Words that leave a loss a total: an aggregate, or a running/smoothed reading of it.
TOTAL_WORDS = frozenset(
    {
        "total",
        "overall",
        "combined",
        "full",
        "sum",
        "all",
        "mean",
        "avg",
        "average",
        "current",
        "running",
        "smoothed",
        "smooth",
        "ema",
        "reduced",
        "global",
        "stats",
        "iter",
        "logs",
        "metrics",
    }
)

#: Words that name what kind of loss it is (cross-entropy, NLL, a regression error), not a
#: part of it: ``train/CrossEntropyLoss`` and ``val/rmse_loss`` are totals.
LOSS_KIND_WORDS = frozenset(
    {"ce", "bce", "xent", "crossentropy", "nll", "mse", "rmse", "mae", "l1", "l2", "huber", "ctc", "lm", "mlm", "clm"}
)

_STEP_WORDS = key_words("step")
_EPOCH_WORDS = key_words("epoch")

#: Component words of separate networks or objectives whose sum means nothing (RL
#: actor-critic and policy/value terms, GAN generator and discriminator, entropy bonuses).
SEPARATE_NETWORK_WORDS = frozenset(
    {
        "actor",
        "critic",
        "policy",
        "pg",
        "value",
        "vf",
        "qf",
        "q",
        "entropy",
        "generator",
        "discriminator",
        "gen",
        "disc",
        "objective",
    }
)

#: At most this many components are summed into a synthesized total; more than that are
#: several groups (a multi-agent log), not one objective.
MAX_SUM_PARTS = 8

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def words(raw: str) -> list[str]:
    """The lower-case words of a raw key (see the module docstring); for a W&B chart
    column (``"<run> - train/loss"``) only the metric part after the last ``" - "``."""
    name = raw.rsplit(" - ", 1)[1] if " - " in raw else raw
    return [w for w in _NON_ALNUM.split(_CAMEL.sub(" ", name).lower()) if w]


def _is_loss_word(w: str) -> bool:
    return w in LOSS_WORDS or (w.endswith("loss") and len(w) > 4)


def loss_candidate(raw: str) -> dict | None:
    """How the fallback order sees one raw key, or ``None`` when it is no loss.

    Returns:
        ``{"split": "train"|"eval"|"unmarked", "total": bool, "granularity":
        "step"|"unmarked"|"epoch", "parts": [the words that make it a component],
        "words": [...]}``.
    """
    if raw.lower().endswith(_WANDB_BAND):
        return None
    ws = words(raw)
    if not any(_is_loss_word(w) for w in ws) or any(w in NOT_LOSS_WORDS for w in ws):
        return None
    wset = set(ws)
    split = "eval" if wset & EVAL_WORDS else "train" if wset & TRAIN_WORDS else "unmarked"
    gran = "step" if wset & _STEP_WORDS else "epoch" if wset & _EPOCH_WORDS else "unmarked"
    # "cross entropy" is a kind of loss; a bare "entropy" loss is an RL entropy bonus.
    kinds = ws if "cross" not in wset else [w for w in ws if w not in ("cross", "entropy")]
    parts = [
        w
        for w in kinds
        if not (
            _is_loss_word(w)
            or w in EVAL_WORDS
            or w in TRAIN_WORDS
            or w in TOTAL_WORDS
            or w in LOSS_KIND_WORDS
            or w in _STEP_WORDS
            or w in _EPOCH_WORDS
        )
    ]
    total = not parts or bool(wset & {"total", "overall", "combined", "full", "sum"})
    return {"split": split, "total": total, "granularity": gran, "parts": parts, "words": ws}


_SPLIT_RANK = {"train": 0, "unmarked": 1, "eval": 0}
_GRAN_RANK = {"step": 0, "unmarked": 1, "epoch": 2}


def _order(key: str, c: dict) -> tuple:
    return (not c["total"], _SPLIT_RANK[c["split"]], _GRAN_RANK[c["granularity"]], len(c["words"]), key)


def _fallback(canon: str, keys: Iterable[str]) -> dict | None:
    """The mapping entry the loss fallback order gives ``canon`` (``loss`` or
    ``eval_loss``) among ``keys``, or ``None`` when no key is a candidate for it."""
    want_eval = canon == "eval_loss"
    cands = []
    for k in keys:
        c = loss_candidate(k)
        if c is not None and (c["split"] == "eval") == want_eval:
            cands.append((_order(k, c), k, c))
    if not cands:
        return None
    cands.sort()
    _, best, bc = cands[0]
    ranked = [k for _, k, _ in cands]
    split = {"train": "train", "eval": "evaluation", "unmarked": "unmarked (read as train)"}[bc["split"]]
    if bc["total"]:
        gran = {"step": ", logged per step", "epoch": ", logged per epoch", "unmarked": ""}[bc["granularity"]]
        why = f"no alias names it: the first {split} total loss by the fallback order{gran}"
        return {"source": best, "ignored": ranked[1:], "how": "fallback", "why": why}
    # No total: the components of the best (split, granularity) class.
    same = [
        (o, k, c)
        for o, k, c in cands
        if not c["total"] and c["split"] == bc["split"] and c["granularity"] == bc["granularity"]
    ]
    separate = any(set(c["parts"]) & SEPARATE_NETWORK_WORDS for _, _, c in same)
    if separate:
        # An actor's loss (-Q), a policy-gradient term or a GAN's losses need not fall in a
        # healthy run, and a critic's TD loss grows with the returns it predicts: none of
        # them can be judged as "the" training loss, so none is mapped (TP-NO-LOSS says so).
        return None
    if len(same) < 2 or len(same) > MAX_SUM_PARTS:
        chosen = best
        why = (
            f"no total loss; {len(same)} components, too many to be one objective: the first "
            "by the fallback order is read"
            if len(same) > MAX_SUM_PARTS
            else "no total loss; its only component is read"
        )
        return {"source": chosen, "ignored": [k for k in ranked if k != chosen], "how": "fallback", "why": why}
    parts = sorted(k for _, k, _ in same)
    why = f"no total loss: the sum of its {len(parts)} {split} components, over the steps where every one is logged"
    return {
        "source": "+".join(parts),
        "ignored": [k for k in ranked if k not in parts],
        "how": "fallback",
        "why": why,
        "sum_of": parts,
    }


# --------------------------------------------------------------------------- several runs


def run_of(raw: str) -> str | None:
    """The run a W&B panel-export column belongs to (``"<run> - train/loss"`` -> ``"<run>"``),
    or ``None`` for a column of no run (``Step``)."""
    return raw.rsplit(" - ", 1)[0].strip() if " - " in raw else None


def runs_in(keys: Iterable[str]) -> dict[str, list[str]]:
    """Run name -> its columns (sorted), when ``keys`` hold the columns of two or more runs
    (a W&B panel export of several runs); ``{}`` for a log of one run."""
    runs: dict[str, list[str]] = {}
    for k in sorted(set(keys)):
        r = run_of(k)
        if r is not None:
            runs.setdefault(r, []).append(k)
    return runs if len(runs) >= 2 else {}
