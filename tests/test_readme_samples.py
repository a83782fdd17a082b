"""README.md's sample outputs are what their commands print (evidence/readme_samples.py
regenerates them: `python evidence/readme_samples.py`)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "evidence"))
import readme_samples  # noqa: E402

SAMPLES = readme_samples.samples(readme_samples.README.read_text(encoding="utf-8"))


def test_the_readme_shows_samples_of_the_main_commands():
    commands = [c.split()[1] for c, _ in SAMPLES]
    assert "epoch" in commands and "doctor" in commands


@pytest.mark.parametrize("command, written", SAMPLES, ids=[c for c, _ in SAMPLES])
def test_each_sample_is_its_commands_output(command, written):
    got = readme_samples.run_sample(command).rstrip()
    assert written.rstrip() == got, f"README sample of `{command}` is stale: run python evidence/readme_samples.py"
