"""Rule prose states the numbers in force: ``{threshold}`` placeholders, rendered by Rule.text."""

from __future__ import annotations

import re
import string

import pytest

from trainproof.rules.registry import PROSE, all_rules, get
from trainproof.rules.thresholds import DEFAULT, names

#: A placeholder left in rendered text: ``{name}`` or ``{name:spec}``.
LEFTOVER = re.compile(r"\{[A-Za-z_]\w*(![rsa])?(:[^{}]*)?\}")


def _placeholders(text: str) -> list[tuple[str, str]]:
    return [(field, spec or "") for _, field, spec, _ in string.Formatter().parse(text) if field is not None]


def test_every_placeholder_names_a_threshold_and_renders():
    known = set(names())
    for r in all_rules():
        for attr in PROSE:
            raw = getattr(r, attr)
            for field, _ in _placeholders(raw):
                assert field in known, (r.id, attr, field)
            text = r.text(attr)
            assert not LEFTOVER.search(text), (r.id, attr, text)
            assert text == r.text(attr, DEFAULT)
        md = r.doc_markdown("###")
        assert not LEFTOVER.search(md), r.id


def test_a_placeholder_in_a_rule_declares_its_threshold():
    """Prose that states a threshold's value belongs to a rule that declares (or, through
    the engine, uses) that threshold, so ``trainproof rules ID`` lists it in force."""
    for r in all_rules():
        if r.is_outcome:
            continue
        used = {f for attr in PROSE for f, _ in _placeholders(getattr(r, attr))}
        engine = {n.min_points for n in r.needs if isinstance(n.min_points, str)} | {r.min_schedule_share}
        assert used <= set(r.thresholds) | engine, (r.id, sorted(used - set(r.thresholds) - engine))


def test_default_text_states_the_default_numbers():
    r = get("TP-DEAD-RUN")
    assert "{dead_window}" in r.detects  # the number is the threshold, not typed in
    assert (
        "The median of the last 5 losses is less than 5% below the median of the first 5 (at least 10 points)"
    ) in r.text("detects")
    assert "Mann-Kendall z above -2.326, one-sided 1%, over at most 40 block medians" in r.text("detects")
    assert "A learning rate at most 1e-7 over the whole run" in r.text("detects")
    assert "below 0.1%" in get("TP-FLAT").text("detects")
    assert "more than 1.5x the best level" in get("TP-DIVERGE").text("detects")
    assert "(t > -2.5, one-sided)" in get("TP-PLATEAU").text("detects")


def test_an_override_is_what_the_text_states():
    th = DEFAULT.with_overrides({"dead_window": 9, "dead_min_points": 12, "tiny_lr": 1e-8, "flat_rel_std": 0.004})
    r = get("TP-DEAD-RUN")
    text = r.text("detects", th)
    assert "the last 9 losses" in text and "the first 9 (at least 12 points)" in text
    assert "at most 1e-8 over" in text
    md = r.doc_markdown("#", th)
    assert "`loss` (≥ 12 points, `dead_min_points`)" in md and "Needs 12 finite points of `loss`" in md
    assert "the 9-point ends" in md
    assert "below 0.4%" in get("TP-FLAT").text("detects", th)
    # The default text is untouched by the override.
    assert "the last 5 losses" in r.text("detects")


def test_hint_follows_the_thresholds_given():
    for r in all_rules():
        assert r.hint_for(DEFAULT) == r.hint == r.hint_for(None)
        assert r.hint.startswith("Likely:") and " Try: " in r.hint


def test_bad_attribute_and_unknown_placeholder_are_errors():
    r = get("TP-DEAD-RUN")
    with pytest.raises(ValueError):
        r.text("id")
    import dataclasses

    broken = dataclasses.replace(r, why="more than {no_such_threshold} points")
    with pytest.raises(KeyError, match="no_such_threshold"):
        broken.text("why")


def test_the_other_families_state_their_thresholds_too():
    """Gradient, learning-rate, eval, perf, update, signature, RL and compare rules: the
    numbers in their text are their thresholds, so an override changes them."""
    th = DEFAULT.with_overrides(
        {
            "grad_spike_factor": 20.0,
            "zero_lr_fail_share": 0.95,
            "eval_diverge_rise": 1.3,
            "step_cliff_factor": 4.0,
            "update_ratio_high_log10": -1.5,
            "osc_min_alternation": 0.85,
            "rl_zero_std_warn": 0.6,
            "cmp_gradnorm_ratio": 8.0,
            "nan_grad_sustained_points": 4,
            "pref_chance_accuracy": 0.55,
        }
    )
    cases = {
        "TP-GRAD-SPIKE": ("above 10x the level around", "above 20x the level around"),
        "TP-ZERO-LR": ("at least 99% of the logged", "at least 95% of the logged"),
        "TP-EVAL-DIVERGE": ("half of ln 1.2,", "half of ln 1.3,"),
        "TP-STEP-CLIFF": ("more than 3x that of the first half", "more than 4x that of the first half"),
        "TP-UPDATE-RATIO-HIGH": ("is above -2:", "is above -1.5:"),
        "TP-OSCILLATION": ("at least 80% of the time", "at least 85% of the time"),
        "TP-RL-SIGNAL-FADING": ("median of at least 0.5 over", "median of at least 0.6 over"),
        "TP-GRADNORM-RATIO": ("more than 5x the baseline's", "more than 8x the baseline's"),
        "TP-NAN-GRAD": ("on the last 3 or more", "on the last 4 or more"),
        "TP-PREF-NOT-LEARNING": ("is at most 0.6, with", "is at most 0.55, with"),
    }
    for rule_id, (default, overridden) in cases.items():
        r = get(rule_id)
        assert default in r.text("detects"), rule_id
        assert overridden in r.text("detects", th) and default not in r.text("detects", th), rule_id
