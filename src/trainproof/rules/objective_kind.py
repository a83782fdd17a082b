"""What kind of objective a run optimises, read from the metric names it logs.

RL and preference objectives (TRL's GRPO, PPO, DPO, ORPO, KTO, …) log a loss that is not
expected to fall monotonically and may sit at or near zero by construction (GRPO's loss
is zero at its first iterations). The rules that read the loss curve's shape therefore
declare ``objectives=("supervised",)`` and are skipped on such runs with the typed reason
``objective: rl``; what can still be judged there (non-finite values, a policy that gets
no gradient) stays judged.

A run is RL when it logs a reward (``reward``, ``rewards/*``, ``*/reward*``,
``objective/scores``, an episode return (``episode/Return``, baselines' ``rollout/return``,
``*_return``), Stable-Baselines' ``ep_rew_mean``) or TRL's
policy/log-probability groups (``policy/*``, ``logps/*``).
A ``kl`` key alone is not enough: VAEs log one too.
"""

from __future__ import annotations

import re

from ..runlog import RunLog

_RL_KEY = re.compile(
    r"(^|/)(rewards?(_[a-z]+)?|objective/scores|env/reward[a-z_]*|episode[/_ ]return|ep_rew_mean)($|/)"
    r"|(^|[/_ ])(episode_|ep_)?returns?(_mean|_history)?$"
    r"|^(policy|logps|train/policy|train/logps)/",
    re.IGNORECASE,
)


def detect_objective(run: RunLog) -> tuple[str, list[str]]:
    """``("rl", [the keys that say so])`` or ``("supervised", [])``."""
    keys = sorted({s.key for s in run.series.values()})
    hits = [k for k in keys if _RL_KEY.search(k)]
    return ("rl", hits) if hits else ("supervised", [])
