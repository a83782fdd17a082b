"""`trainproof rules ID` states the thresholds in force: the defaults, a --config file's, or
the pyproject.toml of the current folder, loaded as `epoch` loads them."""

from __future__ import annotations

import pytest

from conftest import run_cli


def test_rules_id_states_the_default_thresholds(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no pyproject.toml here
    code, out, err, _ = run_cli("rules", "TP-DEAD-RUN")
    assert code == 0 and not err
    assert "The median of the last 5 losses is less than 5% below the median of the first 5" in out
    assert (
        "## Thresholds in force\n\n- `dead_min_points` = 10 (points): " in out
        and "\n- `dead_window` = 5 (points): " in out
    )
    assert "\n- `tiny_lr` = 1e-7 (learning rate): " in out and "(default" not in out
    assert "FAIL TP-DEAD-RUN: loss did not move" in out  # the example, judged


def test_rules_id_with_a_config_states_and_marks_the_override(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = tmp_path / "tp.toml"
    cfg.write_text("dead_window = 9\n[thresholds]\ntiny_lr = 1e-8\n", encoding="utf-8")
    code, out, err, _ = run_cli("rules", "TP-DEAD-RUN", "--config", str(cfg))
    assert code == 0 and not err
    assert "the last 9 losses" in out and "the first 9 (at least 10 points)" in out
    assert "A learning rate at most 1e-8 over" in out
    assert "\n- `dead_window` = 9 (points; default 5): " in out
    assert "\n- `tiny_lr` = 1e-8 (learning rate; default 1e-7): " in out
    assert "\n- `dead_min_improvement` = 0.05 (ratio): " in out
    assert f"(dead_window, tiny_lr) are from {cfg}." in out


def test_rules_id_reads_the_pyproject_of_the_current_folder(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[tool.trainproof]\nflat_rel_std = 0.004\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, out, _, _ = run_cli("rules", "TP-FLAT")
    assert code == 0
    assert "is below 0.4% and that does not move" in out
    assert "\n- `flat_rel_std` = 0.004 (ratio; default 0.001): " in out
    assert "(flat_rel_std) are from " in out and "pyproject.toml." in out


def test_rules_id_with_a_bad_config_exits_2_with_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for body in ("nope = 1\n", "dead_window = 0\n", "dead_window = [\n"):
        cfg = tmp_path / "bad.toml"
        cfg.write_text(body, encoding="utf-8")
        code, out, err, _ = run_cli("rules", "TP-DEAD-RUN", "--config", str(cfg))
        assert code == 2 and out == "", body
        assert err.startswith("trainproof: ") and err.count("\n") == 1, err


@pytest.mark.slow
def test_rules_markdown_and_the_list_ignore_the_configuration(tmp_path, monkeypatch):
    """RULES.md states the defaults wherever it is generated."""
    (tmp_path / "pyproject.toml").write_text("[tool.trainproof]\ndead_window = 9\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, out, _, _ = run_cli("rules", "--markdown")
    assert code == 0 and "| `dead_window` | 5 |" in out
    code, out, err, _ = run_cli("rules", "--pages", str(tmp_path / "pages"))
    assert code == 0 and out == "" and err == ""
    page = (tmp_path / "pages" / "TP-DEAD-RUN.md").read_text(encoding="utf-8")
    assert "the last 5 losses" in page and "the last 9 losses" not in page and "(default" not in page
