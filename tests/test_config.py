"""[tool.trainproof] configuration: mute, threshold overrides, unknown keys are errors."""

from __future__ import annotations

import pytest

from trainproof.config import ConfigError, load_config

from conftest import healthy_rows, run_cli, write_jsonl, zero_lr_rows


def _zero_lr_log(tmp_path):
    return write_jsonl(tmp_path / "logs" / "m.jsonl", zero_lr_rows())


def test_pyproject_mute_and_threshold_are_applied(tmp_path, monkeypatch):
    log = _zero_lr_log(tmp_path)
    # the run at lr 0 FAILs TP-ZERO-LR and, its loss not moving, TP-DEAD-RUN
    (tmp_path / "pyproject.toml").write_text('[tool.trainproof]\nmute = ["TP-ZERO-LR", "TP-DEAD-RUN"]\n')
    (tmp_path / ".git").mkdir()  # the search climbs to the repository root, no further
    monkeypatch.chdir(tmp_path / "logs")  # nearest pyproject.toml is one level up
    code, _, _, doc = run_cli("epoch", str(log), "--json")
    assert code == 0
    assert doc["reports"][0]["checks"]["skipped"]["TP-ZERO-LR"]["reason"] == "muted"


@pytest.mark.slow
def test_threshold_override_changes_the_outcome(tmp_path):
    rows = healthy_rows(60)
    rows[20]["grad_norm"] = 4.0  # ~7x the median of ~0.55: below 10x, above 5x
    log = write_jsonl(tmp_path / "m.jsonl", rows)
    code, _, _, doc = run_cli("epoch", str(log), "--json")
    assert "TP-GRAD-SPIKE" not in [f["id"] for f in doc["reports"][0]["findings"]]
    cfg = tmp_path / "tp.toml"
    cfg.write_text("[thresholds]\ngrad_spike_factor = 5\n")
    code, _, _, doc = run_cli("epoch", str(log), "--json", "--config", str(cfg))
    assert "TP-GRAD-SPIKE" in [f["id"] for f in doc["reports"][0]["findings"]]
    cfg.write_text("grad_spike_factor = 5\n")  # directly at the top level works too
    code, _, _, doc = run_cli("epoch", str(log), "--json", "--config", str(cfg))
    assert "TP-GRAD-SPIKE" in [f["id"] for f in doc["reports"][0]["findings"]]


@pytest.mark.parametrize(
    "toml,needle",
    [
        ("colour = true\n", "'colour'"),
        ("[thresholds]\ndiverge_ration = 2\n", "'diverge_ration'"),
        ('mute = ["TP-NOT-A-RULE"]\n', "TP-NOT-A-RULE"),
        ('mute = "TP-NAN"\n', "mute"),
        ('diverge_ratio = "big"\n', "diverge_ratio"),
        ("diverge_ratio = -1\n", "diverge_ratio"),
        ("min_trend_points = 2.5\n", "min_trend_points"),
        ("this is not toml [\n", "not valid TOML"),
    ],
)
def test_bad_config_is_exit_2_naming_the_key(tmp_path, toml, needle):
    log = write_jsonl(tmp_path / "m.jsonl", healthy_rows())
    cfg = tmp_path / "tp.toml"
    cfg.write_text(toml)
    code, out, err, _ = run_cli("epoch", str(log), "--config", str(cfg))
    assert code == 2
    assert needle in err
    # --json still gives a schema-valid document that carries the error
    code, out, err, doc = run_cli("epoch", str(log), "--config", str(cfg), "--json")
    assert code == 2 and doc["error"] and needle in doc["error"] and doc["reports"] == []


def test_bad_key_in_nearest_pyproject_is_an_error(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[tool.trainproof]\nthreshold = 3\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="'threshold'"):
        load_config()


def test_pyproject_without_table_is_ignored(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    monkeypatch.chdir(tmp_path)
    cfg = load_config()
    assert cfg.source is None and cfg.mute == set()


def test_config_file_as_pyproject(tmp_path):
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text("[tool.trainproof]\nmute = ['TP-GRAD-SPIKE']\n[tool.trainproof.thresholds]\ndiverge_ratio = 2\n")
    c = load_config(cfg)
    assert c.mute == {"TP-GRAD-SPIKE"} and c.thresholds.diverge_ratio == 2.0


def test_missing_config_file_is_exit_2(tmp_path):
    log = write_jsonl(tmp_path / "m.jsonl", healthy_rows())
    code, _, err, _ = run_cli("epoch", str(log), "--config", str(tmp_path / "nope.toml"))
    assert code == 2
