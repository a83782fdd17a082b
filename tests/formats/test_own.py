"""trainproof's own output is not a training log (trainproof.formats._own).

Each report here is what the command line really printed or wrote, in the test: a saved
``judge``/``doctor`` report (text, ``--json``, SARIF, HTML), the in-loop monitor's printout
and ``watch``'s polls. ``doctor`` lists such a file as skipped with the reason, never as a
run; ``judge`` on one says it is a trainproof report and exits 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainproof.api import doctor, read_runlog
from trainproof.formats import NotALog, OwnOutput, detect
from trainproof.formats._own import own_output

from conftest import run_cli


def failing_log(path: Path, n: int = 60) -> Path:
    """An HF console capture whose loss turns NaN: its report is full of steps and numbers."""
    rows = []
    for i in range(n):
        loss = 3 + 0.2 * i if i < n - 10 else float("nan")
        rows.append(str({"loss": loss, "grad_norm": 0.5 + i, "learning_rate": 2e-5, "epoch": i / n, "step": 10 * i}))
    path.write_text("\n".join(rows) + "\n")
    return path


def healthy_log(path: Path, n: int = 80) -> Path:
    path.write_text("".join(f"step {10 * i} loss {4 * 0.97**i + 1:.4f} lr 0.0003\n" for i in range(n)))
    return path


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    d = tmp_path / "runs"
    d.mkdir()
    failing_log(d / "bad.log")
    healthy_log(d / "good.log")
    return d


def saved_outputs(d: Path) -> dict[str, str]:
    """Every output the CLI gives for the logs of ``d``, saved in ``d`` as a user would;
    name -> the kind :func:`own_output` must see."""
    saved = {}
    for cmd, args in (
        ("judge", [str(d / "bad.log")]),
        ("judge", [str(d / "good.log")]),
        ("judge", ["--mute", "TP-NAN", str(d / "bad.log")]),
        ("doctor", [str(d)]),
    ):
        for as_json in (False, True):
            code, out, _, _ = run_cli(cmd, *args, *(["--json"] if as_json else []))
            assert code in (0, 1, 2) and out.strip(), out  # the muted judge is NOT-CHECKED: 2
            name = f"{cmd}-{len(saved)}.{'json' if as_json else 'txt'}"
            (d / name).write_text(out)
            saved[name] = "json" if as_json else "text"
    code, _, _, _ = run_cli("judge", str(d / "bad.log"), "--sarif", str(d / "bad.sarif"), "--html", str(d / "b.html"))
    assert code == 1
    saved["bad.sarif"], saved["b.html"] = "sarif", "html"
    return saved


@pytest.mark.slow
def test_every_saved_report_is_recognised_as_trainproof_output(run_dir: Path) -> None:
    for name, kind in saved_outputs(run_dir).items():
        p = run_dir / name
        assert own_output(p.read_text()) == kind, name
        with pytest.raises(OwnOutput):
            detect(p)
        with pytest.raises(OwnOutput):
            detect(p, "console")  # whatever --format says


@pytest.mark.slow
def test_doctor_skips_saved_reports_and_judges_only_the_runs(run_dir: Path) -> None:
    saved = saved_outputs(run_dir)
    reports, ignored = doctor(run_dir)
    assert sorted(Path(r.file).name for r in reports) == ["bad.log", "good.log"]
    reasons = {Path(i["file"]).name: i["reason"] for i in ignored}
    looked_at = [n for n in saved if n.endswith((".txt", ".json"))]  # doctor's walk skips .sarif/.html
    for name in looked_at:
        assert "a trainproof report" in reasons[name], (name, reasons.get(name))


def overfit_log(path: Path) -> Path:
    """Train loss falls, eval loss rises after epoch 10: its report's TP-OVERFIT evidence
    ("eval loss reached its minimum 1 at step 10 (line 10) …") reads like a training line."""
    path.write_text(
        "".join(
            f"epoch {e} train_loss {2 * 0.9**e + 0.1:.4f} val_loss {1.0 + 0.02 * (e - 10) ** 2:.4f}\n"
            for e in range(1, 31)
        )
    )
    return path


def test_doctor_after_saving_its_own_report_exits_as_before(tmp_path: Path) -> None:
    overfit_log(tmp_path / "overfit.log")
    code, out, _, _ = run_cli("doctor", str(tmp_path))
    assert code == 0 and "TP-OVERFIT" in out
    (tmp_path / "out.txt").write_text(out)
    code2, out2, _, doc = run_cli("doctor", str(tmp_path), "--json")
    assert code2 == 0, out2
    assert [Path(r["file"]).name for r in doc["reports"]] == ["overfit.log"]
    assert any(Path(i["file"]).name == "out.txt" and "trainproof report" in i["reason"] for i in doc["ignored"])


@pytest.mark.parametrize("as_json", [False, True])
def test_judge_on_a_report_says_it_is_one_and_exits_2(run_dir: Path, as_json: bool) -> None:
    _, out, _, _ = run_cli("judge", str(run_dir / "bad.log"), *(["--json"] if as_json else []))
    saved = run_dir / ("r.json" if as_json else "r.txt")
    saved.write_text(out)
    code, text, err, _ = run_cli("judge", str(saved))
    assert code == 2
    assert "a trainproof report" in text + err and "not a training log" in text + err


def test_watch_polls_are_trainproof_output(run_dir: Path) -> None:
    lines = "12:00:01 records=10 verdict=PASS\n12:00:11 records=20 verdict=FAIL new=TP-NAN\n  FAIL TP-NAN: loss\n"
    assert own_output(lines) == "watch"
    poll = {"time": 1.5, "records": 10, "new_records": 10, "verdict": "PASS", "new": [], "stalled": False}
    assert own_output(json.dumps(poll) + "\n") == "watch"


@pytest.mark.parametrize(
    "text",
    [
        "step 10 loss 3.2\nstep 20 loss 3.1\n",
        '{"schema_version": 2, "step": 1, "loss": 3.2}\n',  # a log that has a schema_version key
        '{"step": 1, "loss": 3.2, "trainproof_version": "x"}\n',
        "<!DOCTYPE html><html><body>loss curve</body></html>",
        "train.log\n  format of the data: 3 columns\n",
        "trainproofing the model\nstep 10 loss 3.2\n",
        "run.log\n  format console, 12 records\nstep 10 loss 3.2\n",  # no verdict line after it
    ],
)
def test_what_only_looks_like_trainproof_output_is_not_taken_for_it(text: str) -> None:
    assert own_output(text) is None


def test_a_capture_that_ends_with_trainproof_lines_is_still_a_log_and_they_are_skipped(tmp_path: Path) -> None:
    # A run's stdout with the in-loop monitor's alert and final report printed into it.
    train = "".join(f"step {s} loss {3 - 0.01 * s:.3f}\n" for s in range(0, 200, 10))
    own = (
        "trainproof: FAIL at step 190: TP-DIVERGE: loss rose 3.2 at step 500\n"
        "trainproof (rank 1): FAIL at step 190: TP-NAN: loss 9.9 at step 900\n"
        "  FAIL  TP-DIVERGE: loss rose to 9.9 at step 900 (step 900, line 51)\n"
    )
    p = tmp_path / "nohup.out"
    p.write_text(train + own)
    run = read_runlog(p)
    assert run.format == "console"
    assert run.series["loss"].steps.tolist() == [float(s) for s in range(0, 200, 10)]


def test_an_empty_or_unrelated_file_is_still_not_a_log_for_its_own_reasons(tmp_path: Path) -> None:
    p = tmp_path / "notes.txt"
    p.write_text("shopping list\n- milk\n")
    with pytest.raises(NotALog) as e:
        detect(p)
    assert not isinstance(e.value, OwnOutput)


@pytest.mark.slow
def test_the_in_loop_monitors_printout_is_trainproof_output(tmp_path: Path, capsys, torch_one_thread) -> None:
    torch = pytest.importorskip("torch")
    from trainproof.live.monitor import Monitor

    torch.manual_seed(0)
    x, y = torch.randn(256, 4), torch.randn(256, 1)
    model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=50.0)
    mon = Monitor(model, opt, check_every=10, policy="warn")
    for step in range(120):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        mon.log(step, loss)
        opt.step()
    mon.report()
    err = capsys.readouterr().err
    assert "trainproof: FAIL at step" in err
    d = tmp_path / "run"
    d.mkdir()
    (d / "monitor.txt").write_text(err)
    healthy_log(d / "good.log")
    assert own_output(err) == "monitor"
    reports, ignored = doctor(d)
    assert [Path(r.file).name for r in reports] == ["good.log"]
    assert any(Path(i["file"]).name == "monitor.txt" and "monitor" in i["reason"] for i in ignored)


# --- every output form, written into the tree, leaves doctor's verdict as it was -------------


def _cli(*args: str, env: dict | None = None) -> tuple[int, str]:
    """Run the CLI in-process with ``env`` set (``COLUMNS``, ``FORCE_COLOR``); (exit, stdout)."""
    from click.testing import CliRunner

    from trainproof.cli import cli

    res = CliRunner().invoke(cli, list(args), env=env or {}, catch_exceptions=False)
    return res.exit_code, res.stdout


def _doctor_as_before(tree: Path, saved: str) -> None:
    """``doctor`` on ``tree`` with the output ``saved`` in it exits as without it: 0, one run."""
    code, out, _, doc = run_cli("doctor", str(tree), "--json")
    assert code == 0, (saved, out[:2000])
    assert [Path(r["file"]).name for r in doc["reports"]] == ["overfit.log"], saved
    assert any(Path(i["file"]).name == saved and "trainproof" in i["reason"] for i in doc["ignored"]), doc["ignored"]


#: (saved file name, command line with {log} and {tree}, environment). Each is one form a
#: user saves: the doctor table at the default, 80, 60 and 40 columns and in colour, its
#: quiet and verbose views, the closing lines alone, judge/epoch, compare, every --json,
#: watch's output.
FORMS = [
    ("doctor.txt", ["doctor", "{tree}"], {}),
    ("doctor80.txt", ["doctor", "{tree}"], {"COLUMNS": "80"}),
    ("doctor60.txt", ["doctor", "{tree}"], {"COLUMNS": "60"}),
    ("doctor40.txt", ["doctor", "{tree}"], {"COLUMNS": "40"}),
    ("colour.txt", ["doctor", "{tree}"], {"FORCE_COLOR": "1"}),
    ("verbose-colour.txt", ["doctor", "{tree}", "-v"], {"FORCE_COLOR": "1", "COLUMNS": "100"}),
    ("quiet.txt", ["doctor", "{tree}", "--quiet"], {}),
    ("quiet60.txt", ["doctor", "{tree}", "--quiet"], {"COLUMNS": "60"}),
    ("only.txt", ["doctor", "{tree}", "--only", "PASS"], {}),
    ("judge.txt", ["judge", "{log}"], {}),
    ("epoch60.txt", ["epoch", "{log}"], {"COLUMNS": "60"}),
    ("judge-colour.txt", ["judge", "{log}"], {"FORCE_COLOR": "1"}),
    ("compare.txt", ["compare", "{log}", "{log}"], {}),
    ("compare60.txt", ["compare", "{log}", "{log}"], {"COLUMNS": "60"}),
    ("doctor.json", ["doctor", "{tree}", "--json"], {}),
    ("judge.json", ["judge", "{log}", "--json"], {}),
    ("compare.json", ["compare", "{log}", "{log}", "--json"], {}),
    # watch's polls and final report, in a pipe: it ends at the stall timeout
    ("watch.txt", ["watch", "{log}", "--interval", "0.05", "--stall-timeout", "0.3"], {}),
    ("watch.json", ["watch", "{log}", "--interval", "0.05", "--stall-timeout", "0.3", "--json"], {}),
]


@pytest.mark.slow
@pytest.mark.parametrize("name,args,env", FORMS, ids=[f[0] for f in FORMS])
def test_each_saved_output_form_leaves_doctors_exit_code_as_it_was(tmp_path: Path, name, args, env) -> None:
    log = overfit_log(tmp_path / "overfit.log")
    code, out = _cli(*(a.format(log=log, tree=tmp_path) for a in args), env=env)
    assert code == 0 and out.strip(), out
    (tmp_path / name).write_text(out)
    _doctor_as_before(tmp_path, name)


@pytest.mark.slow
@pytest.mark.parametrize("name,option", [("report.sarif.json", "--sarif"), ("report.txt", "--html")])
def test_a_sarif_or_html_report_under_any_name_is_not_a_run(tmp_path: Path, name: str, option: str) -> None:
    log = overfit_log(tmp_path / "overfit.log")
    out = tmp_path / "out" / name
    out.parent.mkdir()
    assert _cli("judge", str(log), option, str(out))[0] == 0
    _doctor_as_before(tmp_path, name)


@pytest.mark.parametrize("preamble", [1, 8])
def test_the_callbacks_printout_is_not_a_run(tmp_path: Path, capsys, preamble: int) -> None:
    # What the framework callbacks print (HF, Lightning, Keras share it): each new finding
    # with its evidence, the stop, the closing FAIL line.
    from trainproof.integrations._common import LiveRun

    live = LiveRun("HF Trainer", policy="stop_on_fail", check_every=10)
    live.start(max_steps=400)
    for i in range(200):
        live.record(10 * i, {"loss": 2.0 * 0.99**i + (0 if i < 120 else float("nan")), "learning_rate": 1e-3})
    live.finish()
    err = capsys.readouterr().err
    assert "trainproof: FAIL at step" in err and "stop_on_fail stopped" in err
    overfit_log(tmp_path / "overfit.log")
    # A capture of the job's stderr: the library's own warnings first, then the printout.
    warnings = "".join(f"UserWarning: Some weights of layer {i} were not initialized\n" for i in range(preamble))
    (tmp_path / "train-stderr.txt").write_text(warnings + err)
    _doctor_as_before(tmp_path, "train-stderr.txt")


def test_a_coloured_report_and_the_totals_line_alone_are_recognised() -> None:
    coloured = "\x1b[3mtrainproof doctor\x1b[0m\n\x1b[1mverdict\x1b[0m  run\nWARN  a.log  30  TP-OVERFIT\n"
    assert own_output(coloured) == "text"
    assert own_output("3 runs: 1 FAIL, 0 WARN, 2 PASS, 0 not judged\n") == "text"
    assert own_output("1 run: 0 FAIL, 0 WARN, 1 PASS, 0 not judged\n") == "text"
    assert own_output("2 file(s) looked at are not training logs (--json lists them and why).\n") == "text"
    assert own_output("3 runs: 1 FAIL\nstep 1 loss 2\n") is None
