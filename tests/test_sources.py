"""The source layer (:mod:`trainproof.sources`): which source a location belongs to, what
each opens it into, and what ``doctor``'s listing of several roots gives."""

from __future__ import annotations

from pathlib import Path

from trainproof.sources import (
    LocalSource,
    MlflowServerSource,
    UrlSource,
    file_source,
    list_locations,
    source_of,
)

from conftest import healthy_rows, run_cli, write_jsonl


def test_each_kind_of_location_has_its_source(tmp_path):
    assert type(source_of(tmp_path / "run.jsonl")) is LocalSource
    assert type(source_of(str(tmp_path))) is LocalSource
    assert type(source_of("s3://bucket/runs/")) is UrlSource
    assert type(source_of("http://127.0.0.1:5000")) is MlflowServerSource
    assert type(source_of("http://127.0.0.1:5000/#/experiments/1/runs/ab12")) is MlflowServerSource
    assert type(source_of("http://127.0.0.1:8000/runs/metrics.jsonl")) is UrlSource  # a file: its name has a dot
    # A member of a search is a file or a run folder, never a server, dot or not.
    assert type(file_source("http://127.0.0.1:8000/runs/wandb/run-1")) is UrlSource
    assert type(file_source(tmp_path / "run.jsonl")) is LocalSource


def test_a_local_source_says_what_it_holds(tmp_path):
    log = write_jsonl(tmp_path / "run.jsonl", healthy_rows(60))
    found = LocalSource(log).find("auto", None)
    assert found.label == str(log) and found.skip is None and found.error is None
    assert [r.path for r in found.runs] == [str(log)] and found.runs[0].format == "jsonl"

    table = write_jsonl(tmp_path / "table.jsonl", [{"a": i, "b": 2 * i} for i in range(20)])
    found = LocalSource(table).find("auto", None)
    assert found.runs == [] and found.error is None and "data table" in found.skip

    broken = tmp_path / "trainer_state.json"
    broken.write_text("{ this is not json")  # a trainer's name: a run that could not be read
    found = LocalSource(broken).find("auto", None)
    assert found.runs == [] and found.skip is None and found.error


def test_a_url_source_reads_where_it_runs_and_names_the_run_by_its_url(tmp_path):
    log = write_jsonl(tmp_path / "run.jsonl", healthy_rows(60))
    url = "file://" + log.as_posix()
    run = UrlSource(url).open("auto", None, every_run=False)
    assert run.path == url and run.format == "jsonl"
    assert run.get("loss").values.tolist() == LocalSource(log).open(every_run=False).get("loss").values.tolist()
    missing = UrlSource("file://" + (tmp_path / "gone.jsonl").as_posix()).find("auto", None)
    assert missing.runs == [] and missing.error


def test_local_roots_are_grouped_together_and_each_path_is_listed_once(tmp_path):
    a = write_jsonl(tmp_path / "a" / "run.jsonl", healthy_rows(60))
    b = write_jsonl(tmp_path / "b" / "run.jsonl", healthy_rows(60, seed=1))
    limits: list[dict] = []
    found = list_locations([tmp_path / "a", a, str(tmp_path / "b")], limits=limits)
    assert sorted(Path(c.path) for c in found) == [a, b] and limits == []
    # The bound cuts the search and says so.
    found = list_locations([tmp_path], max_files=1, limits=limits)
    assert len(found) == 1 and any("--max-files" in lim["reason"] for lim in limits)


def test_a_folder_that_holds_one_run_is_read_as_that_run(tmp_path):
    # `judge lightning_logs/version_0` (or its parent) means the metrics.csv inside it
    version = tmp_path / "lightning_logs" / "version_0"
    version.mkdir(parents=True)
    rows = healthy_rows(60)
    (version / "metrics.csv").write_text(
        "step,train_loss\n" + "".join(f"{r['step']},{r['loss']}\n" for r in rows), encoding="utf-8"
    )
    (version / "hparams.yaml").write_text("lr: 0.001\nbatch_size: 32\n", encoding="utf-8")
    for where in (version, version.parent):
        code, out, _, doc = run_cli("judge", str(where), "--json")
        rep = doc["reports"][0]
        assert code == 0 and rep["verdict"] == "PASS" and rep["file"] == str(version / "metrics.csv"), (where, out)
        assert any("holds one run's log" in n for n in rep["notes"])
    # two runs: which one was meant is not for judge to guess
    other = tmp_path / "lightning_logs" / "version_1"
    other.mkdir()
    (other / "metrics.csv").write_text(
        "step,train_loss\n" + "".join(f"{r['step']},{r['loss']}\n" for r in healthy_rows(60, seed=1)), encoding="utf-8"
    )
    code, _, err, _ = run_cli("judge", str(version.parent))
    assert code == 2 and "several runs" in err and "doctor" in err
    # two seeds side by side (siblings by place, different numbers), and a config beside one log
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for seed in (0, 1):
        write_jsonl(seeds / f"seed{seed}.jsonl", healthy_rows(60, seed=seed))
    code, _, err, _ = run_cli("judge", str(seeds))
    assert code == 2 and "several runs" in err
    one = tmp_path / "one"
    one.mkdir()
    write_jsonl(one / "train_log.jsonl", healthy_rows(60))
    (one / "config.json").write_text('{"lr": 0.001, "batch_size": 32, "epochs": 3}', encoding="utf-8")
    code, _, _, doc = run_cli("judge", str(one), "--json")
    assert code == 0 and doc["reports"][0]["file"] == str(one / "train_log.jsonl")


def test_a_table_of_runs_is_no_run_but_a_log_that_logs_its_seed_is(tmp_path):
    # A sweep's results beside its runs (helper 87: run,lr,seed,final_loss,val_loss,accuracy,
    # one row a run that went NaN) FAILed TP-NAN as a 4-step run and made doctor exit 1.
    summary = tmp_path / "sweep_summary.csv"
    summary.write_text(
        "run,lr,seed,final_loss,val_loss,accuracy\n"
        "a,0.003,0,0.21,0.28,0.91\nb,0.01,0,0.18,0.31,0.9\nc,30,1,nan,nan,0.25\nd,0.0,0,1.39,1.39,0.26\n"
    )
    found = LocalSource(summary).find("auto", None)
    assert found.runs == [] and found.error is None and "table of runs" in found.skip and "seed" in found.skip
    # one seed per row of the same sweep, a final_ loss and no seed: the same table
    finals = tmp_path / "results.csv"
    finals.write_text("name,lr,final_loss\n" + "".join(f"r{i},{10.0**-i},{0.5 + i / 10}\n" for i in range(6)))
    assert "table of runs" in LocalSource(finals).find("auto", None).skip
    # a training log that logs its (one) seed on every row, or has a step column, is a run
    one_seed = write_jsonl(tmp_path / "run.jsonl", [{**r, "seed": 42} for r in healthy_rows(60)])
    assert LocalSource(one_seed).find("auto", None).runs
    stepped = write_jsonl(tmp_path / "seeds.jsonl", [{**r, "seed": i % 3} for i, r in enumerate(healthy_rows(60))])
    assert LocalSource(stepped).find("auto", None).runs
    # helper 90: logs with no step column but a counter (episode, epoch, num_updates), a
    # seed of 42 + epoch, or more rows than a sweep lists, are logs
    rows = [{k: v for k, v in r.items() if k != "step"} for r in healthy_rows(60)]
    for counter in ("episode", "epoch", "num_updates", "timesteps"):
        log = write_jsonl(
            tmp_path / f"{counter}.jsonl", [{**r, counter: i + 1, "seed": i % 7} for i, r in enumerate(rows)]
        )
        assert LocalSource(log).find("auto", None).runs, counter
    reseeded = write_jsonl(tmp_path / "reseeded.jsonl", [{**r, "seed": 42 + i} for i, r in enumerate(rows)])
    assert LocalSource(reseeded).find("auto", None).runs
    episodes = [{"loss": 2.0 - i / 300, "env_seed": (7 * i) % 13} for i in range(300)]
    long_log = write_jsonl(tmp_path / "episodes.jsonl", episodes)
    assert LocalSource(long_log).find("auto", None).runs
