"""The "one cause, one finding" relation: a rule's ``implies`` and the other side of the same
link, ``implied_by``, declared beside the rule it concerns and resolved by the registry."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from trainproof.findings import Finding, Level
from trainproof.rules.engine import merge_implied
from trainproof.rules.registry import all_rules, get

from conftest import REPO

#: The relation as it stood when every link was declared with ``implies`` (explaining rule ->
#: the ids it explains, in order): moving a link to the other side must not change it.
#: What a loss frozen to the bit explains, whether or not the run learned first.
FROZEN_EXPLAINS = ("TP-DEAD-RUN", "TP-FLAT", "TP-LOSS-STALLED", "TP-PLATEAU", "TP-NEAR-CHANCE", "TP-VANISHING-GRAD")

IMPLIES = {
    "TP-NAN": ("TP-NAN-GRAD",),
    "TP-GRADS-CLEARED-BEFORE-STEP": ("TP-PARAMS-NOT-UPDATED",),
    "TP-FLAT": ("TP-DEAD-RUN", "TP-LOSS-STALLED", "TP-NEAR-CHANCE"),
    "TP-LOSS-FROZEN": FROZEN_EXPLAINS,
    "TP-LOSS-BLOWUPS": ("TP-LOSS-SPIKE", "TP-BLOWUP-ENDS-HIGH"),
    "TP-BLOWUP-NO-GAIN": ("TP-LOSS-SPIKE", "TP-LOSS-STALLED", "TP-LOSS-CLIMB", "TP-NEAR-CHANCE"),
    "TP-BLOWUP-ENDS-HIGH": (
        "TP-BLOWUP-NO-GAIN",
        "TP-LOSS-SPIKE",
        "TP-LOSS-STALLED",
        "TP-LOSS-CLIMB",
        "TP-NEAR-CHANCE",
    ),
    "TP-FROZEN-AFTER-LEARNING": FROZEN_EXPLAINS,
    "TP-CHANCE-LEVEL": ("TP-DEAD-RUN", "TP-FLAT", "TP-LOSS-STALLED", "TP-LOSS-FROZEN"),
    "TP-DIVERGE": (
        "TP-DEAD-RUN",
        "TP-LOSS-STALLED",
        "TP-BLOWUP-NO-GAIN",
        "TP-BLOWUP-ENDS-HIGH",
        "TP-LOSS-BLOWUPS",
        "TP-EVAL-DIVERGE",
        "TP-EVAL-DEGRADE",
    ),
    "TP-LOSS-RESCALED": ("TP-DEAD-RUN", "TP-LOSS-STALLED"),
    "TP-ZERO-LR-ONSET": (
        "TP-LR-SCHEDULE-ENDED-EARLY",
        "TP-DEAD-RUN",
        "TP-FLAT",
        "TP-LOSS-STALLED",
        "TP-PLATEAU",
        "TP-NEAR-CHANCE",
        "TP-LOSS-FROZEN",
        "TP-FROZEN-AFTER-LEARNING",
    ),
    "TP-DIVERGE-SIGNED": ("TP-NO-PROGRESS-SIGNED",),
    "TP-ZERO-LOSS": ("TP-NO-PROGRESS-SIGNED",),
    "TP-ZERO-LOSS-ONSET": ("TP-NO-PROGRESS-SIGNED",),
    "TP-ZERO-LOSS-FITTED": ("TP-NO-PROGRESS-SIGNED",),
    "TP-ZERO-LOSS-MIXED": ("TP-NO-PROGRESS-SIGNED",),
    "TP-LOSS-CLIMB": ("TP-LOSS-STALLED",),
    "TP-PRIOR-COLLAPSE": ("TP-DEAD-RUN", "TP-LOSS-STALLED", "TP-NEAR-CHANCE", "TP-CHANCE-LEVEL"),
    "TP-DEAD-RUN": ("TP-NEAR-CHANCE",),
    "TP-DEAD-RELU": ("TP-RELU-MOSTLY-DEAD",),
    "TP-FROZEN-PREDICTIONS": ("TP-DEAD-RUN", "TP-LOSS-STALLED", "TP-NEAR-CHANCE", "TP-CHANCE-LEVEL"),
    "TP-ZERO-GRAD": (
        "TP-DEAD-RUN",
        "TP-FLAT",
        "TP-LOSS-STALLED",
        "TP-CHANCE-LEVEL",
        "TP-NEAR-CHANCE",
        "TP-VANISHING-GRAD",
        "TP-LOSS-FROZEN",
        "TP-NO-PROGRESS-SIGNED",
    ),
    "TP-ZERO-GRAD-ONSET": (
        "TP-DEAD-RUN",
        "TP-FLAT",
        "TP-LOSS-STALLED",
        "TP-NEAR-CHANCE",
        "TP-VANISHING-GRAD",
        "TP-PLATEAU",
        "TP-LOSS-FROZEN",
        "TP-NO-PROGRESS-SIGNED",
    ),
    "TP-ZERO-LR": (
        "TP-DEAD-RUN",
        "TP-FLAT",
        "TP-LOSS-STALLED",
        "TP-CHANCE-LEVEL",
        "TP-NEAR-CHANCE",
        "TP-ZERO-LR-PARTIAL",
        "TP-LOSS-FROZEN",
        "TP-NO-PROGRESS-SIGNED",
    ),
    "TP-EVAL-DIVERGE": ("TP-DEAD-RUN", "TP-FLAT", "TP-LOSS-STALLED", "TP-EVAL-DEGRADE"),
    "TP-EVAL-DEGRADE": ("TP-OVERFIT",),
    "TP-RL-DEAD-POLICY": ("TP-RL-NO-SIGNAL", "TP-ZERO-GRAD", "TP-PREF-NOT-LEARNING"),
    "TP-RL-NO-SIGNAL": ("TP-PREF-NOT-LEARNING",),
    "TP-GRAD-NONFINITE-LAYER": ("TP-NAN-GRAD",),
}


def test_the_implies_map_is_the_relation_as_declared_before():
    assert {r.id: r.implies for r in all_rules() if r.implies} == IMPLIES


def test_the_eval_divergence_link_sits_beside_the_eval_rule():
    assert get("TP-EVAL-DIVERGE").implied_by == ("TP-DIVERGE",)
    assert "TP-EVAL-DIVERGE" not in (REPO / "src" / "trainproof" / "rules" / "loss.py").read_text(encoding="utf-8")


def test_the_engine_drops_an_eval_divergence_a_divergence_explains():
    kept = merge_implied(
        [
            Finding("TP-DIVERGE", Level.FAIL, "the loss diverged"),
            Finding("TP-EVAL-DIVERGE", Level.FAIL, "the eval loss diverged"),
        ]
    )
    assert [f.id for f in kept] == ["TP-DIVERGE"] and kept[0].data["implies"] == ["TP-EVAL-DIVERGE"]


_TOY = """
from trainproof.findings import Level
from trainproof.rules.registry import rule


@rule("TP-TOY-IMPLIED", Level.WARN, "loss", "a toy", {link}, detects="x", why="x", not_mean="x", causes="x", try_="x")
def check_toy(ctx):
    yield from ()
"""


def _register_toy(tmp_path, link: str) -> subprocess.CompletedProcess:
    """Register a toy rule declaring ``link`` in a fresh interpreter (the registry of this one
    stays as it is) and print TP-DIVERGE's ``implies``."""
    (tmp_path / "toy_rules.py").write_text(_TOY.format(link=link), encoding="utf-8")
    code = """
        from trainproof.rules import registry
        registry.RULE_MODULES += ("toy_rules",)
        print(registry.get("TP-DIVERGE").implies)
        """
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": f"{tmp_path}:{REPO / 'src'}", "PATH": "/usr/bin:/bin"},
        timeout=120,
    )


@pytest.mark.slow
def test_implied_by_in_a_new_module_joins_the_explaining_rules_implies(tmp_path):
    proc = _register_toy(tmp_path, 'implied_by=("TP-DIVERGE",)')
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str((*IMPLIES["TP-DIVERGE"], "TP-TOY-IMPLIED"))


@pytest.mark.slow
def test_a_dangling_id_is_an_error_at_registration(tmp_path):
    for link in ('implied_by=("TP-NO-SUCH-RULE",)', 'implies=("TP-NO-SUCH-RULE",)'):
        proc = _register_toy(tmp_path, link)
        assert proc.returncode != 0, link
        assert "ValueError: TP-TOY-IMPLIED names TP-NO-SUCH-RULE" in proc.stderr, proc.stderr
