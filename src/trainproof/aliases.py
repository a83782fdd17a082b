"""Canonical metric names and the table of raw keys that mean them.

Readers keep every raw key; this module decides which raw key stands for each canonical
metric. When several raw keys of one log match the same canonical name, the one whose
alias comes first in :data:`ALIASES` wins (ties between raw keys matching the same alias,
e.g. two ``lr-*`` columns, go to the alphabetically first raw key); the report's
``mapping`` lists the winner and the candidates it beat.

Matching ignores case, and for W&B chart exports (``"<run name> - train/loss"``) it also
tries the part after the last ``" - "``. W&B's ``…__MIN`` / ``…__MAX`` companion columns
match nothing and stay raw series.
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
    "grad_norm": ("grad_norm", "train/grad_norm", "gradient_norm", "total_norm", "gnorm",
                  "grad_norm_1", "TrainIterStats/grad_norm", "TrainIterStats/grad_norm_1"),
    "epoch": ("epoch", "train/epoch"),
    "time": ("time", "wall_time", "_timestamp", "timestamp"),
    "step_time": ("step_time", "train/step_time", "iter_time", "batch_time", "time/step",
                  "TrainIterStats/step_time"),  # Coqui's event file
    "loader_time": ("loader_time", "data_time", "train/data_time", "time/data",
                    "TrainIterStats/loader_time"),
    "gpu_util": ("gpu_util", "gpu_utilization", "system/gpu.0.gpu"),
    "update_ratio": ("update_ratio", "update_to_weight_ratio"),
    # The mixed-precision loss scale (torch GradScaler, DeepSpeed, Coqui's amp_scaler).
    "loss_scale": ("loss_scale", "amp_scaler", "train/loss_scale", "scaler/scale", "grad_scale"),
    # RL and preference objectives (TRL GRPO/PPO/DPO): the policy's KL to the reference
    # model and the mean reward.
    "kl": ("kl", "objective/kl", "train/kl", "policy/kl", "ppo/policy/kl"),
    "reward": ("reward", "train/reward", "objective/scores", "rewards/mean", "env/reward_mean",
               "rollout/ep_rew_mean", "train/rewards/margins", "rewards/margins"),
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


def _alias_rank(canon: str, raw: str) -> int | None:
    """Rank of the first alias of ``canon`` matching ``raw``, or ``None``."""
    if raw.lower().endswith(_WANDB_BAND):
        # Checked before matching: a regex alias such as ``lr-.+`` would match
        # "run - lr-AdamW__MIN" and could win the tie-break over the real column.
        return None
    names = [raw.lower()]
    if " - " in raw:  # W&B chart export: "<run> - train/loss"
        names.append(raw.rsplit(" - ", 1)[1].strip().lower())
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
            raise MappingError(
                f"--map: unknown canonical name {canon!r}; known: {', '.join(CANONICAL)}"
            )
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
        canonical -> ``{"source": raw_key, "ignored": [other candidates], "how": "alias"|"map"}``.

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
