"""The alias table's reward names and the RL objective's names are two lists; every
reward alias says RL except the documented exceptions (``mean_reward`` and its spellings), so a run whose
reward is read is judged as RL (a PPO value loss that grows with the return is no
divergence)."""

from __future__ import annotations

import pytest

from trainproof.aliases import ALIASES
from trainproof.rules.objective_kind import _RL_KEY

#: Reward aliases that do not make a run RL, with the reason in objective_kind's docstring.
NOT_RL = {"mean_reward", "avg_reward", "average_reward"}


def _instance(alias: str) -> str:
    return alias[3:].replace(".+", "agent") if alias.startswith("re:") else alias


@pytest.mark.parametrize("alias", ALIASES["reward"])
def test_every_reward_alias_but_the_documented_one_says_rl(alias: str) -> None:
    assert bool(_RL_KEY.search(_instance(alias))) is (alias not in NOT_RL)
