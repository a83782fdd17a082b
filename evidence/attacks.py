"""Run ``doctor`` over one pull request's tree holding every attack of issue 17 at once, then
over that tree with issue 32's attacks added and a hostile MLflow server beside it, and
write the "Attacks" sections of ``evidence/robustness.md`` (between its markers; the rest
of the file is evidence/robustness.py's).

The tree is tests/_attack_tree.py's, with 1 GiB gzip bombs. ``doctor`` runs as a child of
a small wrapper process, so the peak resident memory measured (``RUSAGE_CHILDREN``) is the
command's and its workers', not this script's. Usage, from the repository root::

    .venv/bin/python evidence/attacks.py
"""

from __future__ import annotations

import ast
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "evidence" / "robustness.md"
START, END = "<!-- attacks:start -->", "<!-- attacks:end -->"
sys.path.insert(0, str(ROOT / "tests"))

import _attack_tree32  # noqa: E402

import _attack_tree  # noqa: E402

#: (attack, before, after, test) for each item of issue 17; the tests are in
#: tests/test_pr_*.py.
ROWS = [
    (
        'loss written as `null`, `"nan"`, `"inf"`, `1.#QNAN`, `-1.#IND`, `nan(ind)` from step 121 (JSONL, '
        "trainer_state.json)",
        "PASS, exit 0",
        "FAIL TP-NAN at step 121, exit 1 (`null`: absent, WARN TP-LOSS-STOPPED)",
        "test_pr_nan_spellings::test_every_spelling_of_a_nan_fails_as_the_nan_token_does",
    ),
    (
        "pandas `to_csv`: empty loss cells from step 121",
        "PASS",
        "WARN TP-LOSS-STOPPED at step 121 (a blank is absent, never a NaN)",
        "test_pr_nan_spellings::test_pandas_dense_csv_with_blanks_after_step_120_warns_where_the_loss_stops",
    ),
    (
        "Lightning/W&B sparse CSV (val_loss once an epoch)",
        "judged on its values",
        "unchanged (blanks stay absent)",
        "test_pr_nan_spellings::test_lightning_sparse_csv_blanks_stay_absent",
    ),
    (
        "a loss key that stops after step 120 while 80 records follow",
        "no note",
        "a note naming the last loss step",
        "test_pr_nan_spellings::test_a_loss_that_stops_while_records_go_on_is_noted",
    ),
    (
        "two ranks writing one file, one rank's loss NaN",
        "PASS (later write of a step won)",
        "FAIL TP-NAN",
        "test_pr_nan_spellings::test_two_ranks_writing_one_file_are_both_judged",
    ),
    (
        "two `log_history` keys in trainer_state.json",
        "both arrays read",
        "the last one (as json.load, HF)",
        "test_pr_nan_spellings::test_the_last_of_two_log_history_keys_is_read",
    ),
    (
        "`metrics.csv -> ~/.netrc`, `notes.log -> /proc/self/environ`, a folder link out of the tree",
        "target read, its first 60 characters in text, --json, SARIF, HTML",
        "not followed; listed as ignored, no path or content",
        "test_pr_outputs::test_symlinks_that_leave_the_tree_are_listed_not_followed",
    ),
    (
        "a non-log file holding `password=…`",
        "first 60 characters quoted",
        "described by its shape, never quoted",
        "test_pr_outputs::test_a_file_no_reader_recognises_is_described_never_quoted",
    ),
    (
        "`--sarif /dev/null`, `--html /dev/stdout`, a FIFO as report path (as root)",
        "device node / FIFO replaced by a regular file",
        "written into; the node stays a node",
        "test_pr_outputs::test_a_sarif_report_into_a_fifo_goes_through_it",
    ),
    (
        "a symlink planted at the report path",
        "replaced by the report",
        "replaced by the report (its target is never written)",
        "test_pr_outputs::test_a_report_through_a_symlink_to_a_file_replaces_the_link_never_its_target",
    ),
    (
        "a file named `x\\n  verdict: PASS\\x1b[2K.jsonl` that FAILs",
        "forged a `verdict: PASS` line",
        "printed escaped in text and HTML",
        "test_pr_outputs::test_a_file_name_cannot_forge_a_verdict_line",
    ),
    (
        "`pyproject.toml` muting rules in a folder above the repository",
        "applied",
        "not read: the search stops at the folder holding `.git`",
        "test_pr_config_ckpt::test_config_above_the_repository_root_is_not_applied",
    ),
    (
        "a broken `pyproject.toml` in the repository",
        "silently skipped",
        "exit 2 naming the file",
        "test_pr_config_ckpt::test_broken_pyproject_in_the_repository_is_exit_2_naming_it",
    ),
    (
        "1 MiB `.csv.gz` (about 0.7 GB of rows)",
        "about 20 GB peak memory",
        "cut at 1 GiB decompressed (`TRAINPROOF_MAX_DECOMPRESSED`), TP-DATA-DROPPED",
        "test_pr_bounds::test_gzip_past_the_cap_is_cut_with_a_dropped_note",
    ),
    (
        "`.jsonl.gz` of 1 GiB of newlines",
        "200 s (10 MB of gzip: over 30 min)",
        "about 16 s, under 400 MB",
        "test_pr_bounds::test_jsonl_gz_of_newlines_is_read_in_seconds_and_little_memory",
    ),
    (
        "a log replaced by a FIFO between stat and open; a symlink to a character device",
        "open() blocks forever",
        "read error 'not a regular file'",
        "test_pr_bounds::test_a_fifo_in_a_logs_place_is_a_read_error_not_a_hang",
    ),
    (
        "1,200 nested folders",
        "RecursionError, exit 2, no report",
        "walked; the FAIL at the bottom reported",
        "test_pr_outputs::test_twelve_hundred_nested_folders_are_walked",
    ),
    (
        "a folder that can be listed but not entered, beside a FAIL",
        "PermissionError, the FAIL lost",
        "listed as ignored, the FAIL reported",
        "test_pr_outputs::test_a_folder_that_cannot_be_read_is_listed_and_the_rest_is_judged",
    ),
    (
        "`watch` on a UTF-16 log",
        "39 of 200 records, PASS",
        "200 records, as epoch",
        "test_pr_bounds::test_watch_reads_a_utf16_log_as_epoch_does",
    ),
    (
        "`watch` on a 1 GiB zero-filled tail",
        "1 GiB of memory per poll",
        "one capped line held",
        "test_pr_bounds::test_watch_holds_at_most_one_line_of_a_zero_filled_tail",
    ),
    (
        "an event record declared just under 1 GiB",
        "2.15 GB per worker",
        "records over 64 MiB not read, TP-DATA-DROPPED",
        "test_pr_bounds::test_an_event_record_declared_huge_is_not_allocated",
    ),
    (
        "`--jobs 200` on 2 cores",
        "200 workers",
        "capped at the usable CPUs",
        "test_pr_bounds::test_jobs_are_capped_at_the_usable_cpus",
    ),
    (
        "SIGTERM to `doctor --jobs N`",
        "workers orphaned holding the output pipe",
        "workers terminated, exit 2",
        "test_pr_bounds::test_sigterm_to_doctor_ends_its_workers",
    ),
    (
        "hostile thresholds in a config (nan, inf, 0, 2**62, shares above 1)",
        "accepted: internal errors, hangs, healthy runs FAIL",
        "exit 2 naming the key and its range",
        "test_pr_config_ckpt::test_hostile_threshold_is_rejected_naming_it_or_judges_healthy_runs",
    ),
    (
        "a first line over 64 KiB (a config dump)",
        "not a training log",
        "judged",
        "test_pr_bounds::test_a_first_line_longer_than_the_sniffing_head_is_sniffed_past",
    ),
    (
        "a torch ZIP whose pickle would run `os.system`",
        "TP-ENV-CKPT-OK ('safe to load')",
        "TP-ENV-CKPT-UNSAFE-PICKLE naming the import",
        "test_pr_config_ckpt::test_zip_whose_pickle_runs_os_system_warns_naming_it",
    ),
    (
        "a deeply nested safetensors header, a huge declared shape",
        "internal error",
        "the corrupt-file finding",
        "test_pr_config_ckpt::test_deeply_nested_safetensors_header_is_corrupt_not_an_internal_error",
    ),
]


#: (attack, before, after, test) for each item of issue 32.
ROWS32 = [
    (
        "a pull request that adds `trainproof/ci/github_action.py` (or `trainproof/__init__.py`) at its root",
        "its code ran in the Action's job (`python -m` puts the checkout first on `sys.path`)",
        "every Python the Action starts runs isolated (`python -I`): the planted package never runs",
        "test_action_security::test_a_planted_trainproof_package_in_the_checkout_never_runs",
    ),
    (
        "files, runs, metrics named `##[add-mask]…`, `##[set-output …]`, `::stop-commands::…`",
        "workflow commands issued in the step log, summary and `GITHUB_OUTPUT`",
        "escaped, the output framed by `::stop-commands::` with a random token; a parser with the runner's "
        "rules finds no command",
        "test_action_security::test_names_in_the_logs_issue_no_workflow_command",
    ),
    (
        "a tracking server that echoes the credentials (Basic's base64, raw, URL-encoded) in errors, run "
        "names, metric keys",
        "printed unmasked in an error line, text, --json, SARIF, HTML",
        "`***` in every output and the Action's log and summary",
        "test_secrets_masked::test_an_echoing_server_gets_no_secret_into_any_output",
    ),
    (
        "a redirect to another origin",
        "nothing sent (kept so)",
        "no credential follows it",
        "test_secrets_masked::test_no_credential_follows_a_redirect_to_another_origin",
    ),
    (
        "`wandb-summary.json` or a Trackio metrics row nesting 100,000 arrays; text in a Trackio id column; "
        "an `mlflow.db` metrics column named `rowid`; beside a diverging `fail.jsonl`",
        "internal error, exit 2, no report: the FAIL lost",
        "read as far as it goes (TP-DATA-DROPPED), the others judged, exit 1",
        "test_hostile_sources::test_a_hostile_file_never_hides_the_other_runs",
    ),
    (
        "an MLflow server answering deeply nested JSON, a step or value too large for a float, 5,000-digit "
        "integers, a start time out of range",
        "internal error (RecursionError, OverflowError, ValueError), exit 2, no report",
        "NOT-CHECKED for that run (or judged on the infinity), others judged, exit 1",
        "test_hostile_sources::test_a_hostile_server_answer_never_hides_the_other_runs",
    ),
    (
        "a 1 MiB `.csv.gz` holding 1 GiB of `1,1` rows",
        "3.7 GB, `internal error: MemoryError` after 156 s under a 4 GB limit",
        "identical records folded, at most 5,000,000 records a run (TP-DATA-DROPPED), under 1.2 GB",
        "test_hostile_sources::test_the_issue_gzip_bomb_stays_under_the_memory_ceiling",
    ),
    (
        "an MLflow server whose metric-history paging never ends",
        "grew to 8 GB before it was killed",
        "1,000 pages and 5,000,000 points a metric, 20,000,000 a run, 16 GiB a server: NOT-CHECKED for that run",
        "test_hostile_sources::test_history_paging_that_never_ends_is_an_error_for_that_run",
    ),
    (
        "an `mlflow.db` with 1e6 metric rows and no index on the run id",
        "151 s (one query per run)",
        "one ordered pass",
        "test_hostile_sources::test_mlflow_db_metrics_are_read_in_one_ordered_pass",
    ),
    (
        "a 110 KB `mlflow.db` / 143 KB Trackio database of generated columns (SQLite CPU bombs)",
        "204 s / 416 s",
        "stopped at the work budget (VM steps and seconds by the file's size): NOT-CHECKED for that store",
        "test_hostile_sources::test_a_sqlite_cpu_bomb_stops_at_the_work_budget",
    ),
    (
        'a WAL-mode Trackio or MLflow store read "read-only"',
        "`-wal`/`-shm` created beside it (root-owned in CI)",
        "nothing beside a store created, changed or locked",
        "test_sqlite_readonly::test_a_wal_mode_store_is_read_without_a_file_made_or_changed_beside_it",
    ),
    (
        "a divergence held only in a killed writer's `-wal` file",
        "not seen: PASS",
        "the write-ahead log read as SQLite reads it: FAIL, noted",
        "test_sqlite_readonly::test_a_divergence_held_only_in_the_write_ahead_log_fails",
    ),
    (
        "a resumed W&B run whose earlier folder holds a `.wandb` symlink to a file outside the tree",
        "the link's target read as the run's log",
        "never read through a link",
        "test_wandb_run_files::test_a_resumed_runs_sibling_folder_never_reads_a_link_out_of_the_tree",
    ),
    (
        "a second `.wandb` file (sorting last) in a diverging run's folder",
        "only the last by name read: PASS",
        "the folder's own `run-<id>.wandb` read: FAIL, the other named as not read",
        "test_wandb_run_files::test_a_second_wandb_file_does_not_hide_the_folders_own_log",
    ),
    (
        "a FIFO named `mlflow.db`",
        "the SQLite sniffer's blocking open hangs",
        "opened without blocking, only regular files: listed as ignored",
        "test_sqlite_readonly::test_doctor_over_fifos_named_like_stores_ends",
    ),
    (
        "our own saved report (`doctor . > report.txt`), a monitor printout",
        "judged as a log: NOT-CHECKED, exit 2",
        "recognised as trainproof's output and skipped: exit as before",
        "test_own_output::test_doctor_after_saving_its_own_report_exits_as_before",
    ),
    (
        "`--quiet` with over 20 rows, `--only FAIL,WARN`",
        "the NOT-CHECKED row that makes exit 2 hidden",
        "every row that decides the exit code shown",
        "test_screen::test_the_rows_that_decide_the_exit_code_are_always_shown",
    ),
    (
        "80 columns: `hf_runs/lr_zero/…` and `hf_runs/lr_hot/…`",
        "both `hf_runs/lr_…t-300/trainer_state.json`; rule ids split",
        "paths kept distinct, ids whole",
        "test_screen::test_paths_stay_distinct_and_rule_ids_whole_at_any_width",
    ),
    (
        "a store's runs in HTML and the Action's log and summary",
        "`trackers/mlflow.db` twice for two runs",
        "named as the text table names them",
        "test_screen::test_a_stores_runs_are_named_as_the_text_table_names_them_everywhere",
    ),
    (
        "`doctor --fail-on warn`; `rules tp-nan`",
        "no such option; unknown rule",
        "accepted (any case)",
        "test_doctor_fail_on::test_fail_on_decides_which_verdict_exits_1",
    ),
    (
        "`watch` on a run that has finished",
        "polled forever, a line every interval",
        "ends at the end-of-training summary or the stall timeout; a line only on a change",
        "test_live_watch::test_watch_ends_when_the_run_logs_its_end_of_training_summary",
    ),
    (
        "the docs' workflow snippet pinning `v0.1.0` (no such tag)",
        "fails as pasted",
        "pins refs that exist, kept so by a test",
        "test_docs_refs::test_every_documented_ref_exists",
    ),
    (
        "an OpenMMLab `*.log.json` whose `iter` counts within the epoch",
        "read as a resume each epoch: healthy run FAILs TP-DEAD-RUN",
        "(epoch, step) one x axis: PASS",
        "test_epoch_steps::test_openmmlab_log_json_is_judged_whole",
    ),
    (
        'a loss that turns into `tensor(0.53, …)`, numeric strings, `{"value": x}`',
        "dropped: PASS with at most a note",
        "read as the number: the divergence FAILs",
        "test_value_forms::test_a_number_in_another_form_is_the_number",
    ),
    (
        'a loss that turns into `"None"`, `#N/A`, `<NA>`',
        "PASS, no note",
        "absent; TP-LOSS-STOPPED warns",
        "test_value_forms::test_a_missing_value_word_is_absent_and_the_stop_warned",
    ),
    (
        "`mon.log()` with an `np.int64`/tensor step, or `None`, a string, `10**400`",
        "raised inside the training loop",
        "never raises: the monitor counts the steps, one warning",
        "test_live_monitor::test_a_step_it_cannot_use_never_stops_the_loop",
    ),
    (
        "`judge https://…` of a server that streams forever or trickles",
        "3 GiB staged in 9 s; blocked past 150 s",
        "`TRAINPROOF_MAX_FETCH` (1 GiB) and `TRAINPROOF_FETCH_TIMEOUT` (300 s): exit 2, one line",
        "test_remote_bounds::test_a_server_that_streams_forever_stops_at_the_size_cap",
    ),
    (
        "SIGTERM to `doctor --jobs`",
        "hung at exit (7 of 80) or a traceback (7 of 73)",
        "exit 2 promptly, `trainproof: aborted`",
        "test_doctor_jobs::test_sigterm_to_doctor_jobs_exits_promptly_with_2_and_no_traceback",
    ),
    (
        "`judge --json` on an unreadable file; a folder that cannot be listed",
        "click's error, no JSON; exit 0",
        "the JSON document with the error, exit 2; exit 2 naming the folder",
        "test_cli_unreadable::test_doctor_over_a_folder_it_cannot_search_exits_2_and_says_so",
    ),
    (
        "25,900 SARIF results",
        "all written (code scanning takes 25,000)",
        "at most 25,000, the lowest severity left out first, counted",
        "test_cli_unreadable::test_sarif_holds_at_most_25000_results",
    ),
]

_WRAPPER = """
import resource, subprocess, sys, time
t0 = time.monotonic()
p = subprocess.run(sys.argv[2:], cwd=sys.argv[1], capture_output=True)
wall = time.monotonic() - t0
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
sys.stdout.buffer.write(repr((p.returncode, wall, peak)).encode() + b"\\n" + p.stdout)
sys.stderr.buffer.write(p.stderr)
"""


def measure(repo: Path, out: Path) -> dict:
    """Run ``doctor`` over ``repo`` writing every output; the numbers and the checks."""
    sarif, page = out / "r.sarif", out / "r.html"
    cmd = [
        sys.executable,
        "-m",
        "trainproof",
        "doctor",
        str(repo),
        "--json",
        "--jobs",
        "2",
        "--sarif",
        str(sarif),
        "--html",
        str(page),
    ]
    p = subprocess.run([sys.executable, "-c", _WRAPPER, str(repo), *cmd], capture_output=True, timeout=3600)
    head, _, body = p.stdout.partition(b"\n")
    rc, wall, peak_kib = ast.literal_eval(head.decode())
    doc = json.loads(body)
    text = subprocess.run(
        [sys.executable, "-m", "trainproof", "doctor", str(repo), "--jobs", "2"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    outputs = {
        "json": body.decode(),
        "text": text.stdout + text.stderr,
        "stderr": p.stderr.decode(),
        "sarif": sarif.read_text(),
        "html": page.read_text(),
    }
    leaked = sorted(k for k, v in outputs.items() if _attack_tree.SECRET in v)
    verdicts: dict[str, int] = {}
    for r in doc["reports"]:
        verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
    wrong = [
        rel
        for rel, want in _attack_tree.EXPECTED.items()
        if not any(os.path.relpath(r["file"], repo) == rel and r["verdict"] == want for r in doc["reports"])
    ]
    return {
        "rc": rc,
        "wall": wall,
        "peak_mib": peak_kib / 1024,
        "reports": len(doc["reports"]),
        "ignored": len(doc.get("ignored", [])),
        "verdicts": verdicts,
        "leaked": leaked,
        "wrong": wrong,
        "text_rc": text.returncode,
    }


def section(m: dict) -> str:
    rows = "\n".join(f"| {a} | {b} | {c} | `tests/{t.split('::')[0]}.py::{t.split('::')[1]}` |" for a, b, c, t in ROWS)
    verdicts = ", ".join(f"{v} {n}" for v, n in sorted(m["verdicts"].items()))
    return f"""{START}
## Attacks from a pull request (issue 17)

Each row is one test that fails on the code before the fix and passes after.

| attack (input) | before | after | test |
|---|---|---|---|
{rows}

**All of them in one tree.** `evidence/attacks.py` builds tests/_attack_tree.py's tree (every attack above
that lives in files: NaN spellings, ranks, two `log_history` keys, links out to secrets, a secret non-log, a
forged file name, a FIFO, 1,200 nested folders, two 1 GiB gzip bombs, an event record declared just under
1 GiB, a muting config above the repository) and runs `doctor TREE --json --jobs 2 --sarif … --html …` on it
({platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs): exit {m["rc"]}
(text output: exit {m["text_rc"]}), {m["wall"]:.0f} s, peak resident memory {m["peak_mib"]:.0f} MiB
(the command and its workers), {m["reports"]} reports ({verdicts}), {m["ignored"]} ignored entries; runs
judged other than expected: {len(m["wrong"])}; outputs holding the secret: {len(m["leaked"])}
{("(" + ", ".join(m["leaked"]) + ")") if m["leaked"] else "(text, --json, stderr, SARIF, HTML checked)"}.
tests/cli/test_doctor_hostile_tree.py runs the same tree with 48 MiB bombs on every test run.
{END}"""


def section32(m: dict) -> str:
    """The issue 32 table and the combined run's figures (``m`` from
    tests/_attack_tree32.py's ``combined_run``)."""
    rows = "\n".join(
        f"| {a} | {b} | {c} | `tests/{t.split('::')[0]}.py::{t.split('::')[1]}` |" for a, b, c, t in ROWS32
    )
    verdicts = ", ".join(f"{v} {n}" for v, n in sorted(m["verdicts"].items()))
    atime = (
        ("its access time unchanged" if not m["canary_atime_changed"] else "its access time CHANGED")
        if m["canary_atime_checked"]
        else "this filesystem keeps no access times"
    )
    problems = m["wrong"] + m["missing"] + m["not_runs"]
    return f"""## Attacks from a pull request, round two (issue 32)

Each row is one test that fails on the code before the fix and passes after.

| attack (input) | before | after | test |
|---|---|---|---|
{rows}

**All of them at once, with a hostile MLflow server.** `evidence/attacks.py` builds tests/_attack_tree.py's
tree (1 GiB gzip bombs) with tests/_attack_tree32.py's attacks added under `i32/`: a `wandb-summary.json`
nesting 100,000 arrays, Trackio databases with a text id and with nested metrics JSON, an `mlflow.db` with a
`rowid` column, an `mlflow.db` CPU bomb (48 M SQLite steps in 200 KB), a 1 MiB gzip of 1 GiB of `1,1` rows,
a WAL-mode `mlflow.db` whose NaNs are only in its `-wal`, a resumed W&B run whose earlier folder links to a
diverging log outside the tree (the canary), a diverging W&B run with a second, healthy `.wandb` file,
folders and files named `##[add-mask]…`, `::stop-commands::…`, `##[set-output …]`, a saved `doctor .`
report, an epoch-counted OpenMMLab log, a loss turning into `tensor(…)` strings, a FIFO named `mlflow.db`,
a diverging `fail.jsonl`. A server on 127.0.0.1 answers MLflow's API with four runs: one healthy, one named
and keyed after the credentials it received (raw, decoded, URL-encoded), one whose `runs/get` nests 100,000
arrays, one whose metric history pages never end. `doctor TREE URL --json --jobs 2 --sarif … --html …` runs
with `MLFLOW_TRACKING_USERNAME`/`PASSWORD` set ({platform.python_implementation()} {platform.python_version()},
{os.cpu_count()} CPUs), then `doctor TREE URL` for the text output:

- exit {m["rc"]} (text output: exit {m["text_rc"]}), {m["wall"]:.0f} s, peak resident memory {m["peak_mib"]:.0f} MiB
  (the largest process, the command or a worker; the documented ceiling for one run is 1.2 GB, docs/safety.md);
- {m["reports"]} reports ({verdicts}), {m["server_runs"]} of them the server's, {m["ignored"]} ignored entries
  (the FIFO, the link out, our saved report among them); runs judged other than expected, missing, or
  hostile runs not NOT-CHECKED with their reason: {len(problems)}{(" (" + "; ".join(problems) + ")") if problems else ""};
  the endless history was cut after {m["history_pages"]:,} pages over the two invocations;
- secrets found: {len(m["leaked"])} ({m["forms_checked"]} forms: the password raw, percent-encoded, base64, base64 of
  `user:password` with and without padding, URL-safe; and issue 17's secret; in {", ".join(m["outputs_checked"])});
  the server received the credentials ({"yes" if m["credentials_sent"] else "NO"}) and echoed them: the run is
  named `{m["echo_name"]}`;
- canary read: {"no" if not m["canary"] and not m["canary_atime_changed"] else "YES"} (its text in
  {len(m["canary"])} outputs; the resumed run it would turn to FAIL PASSes; {atime});
- files changed in the tree: {len(m["changed"])} of {m["entries"]:,} entries (listing, sizes, mtimes before and after,
  every store's folder included); internal errors or tracebacks: {len(m["internal_error"])}.

tests/cli/test_doctor_hostile_tree_trackers.py runs the same with 1 MiB bombs and 4 MiB of rows and asserts each of these."""


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "pr"
        root.mkdir()
        out = Path(tmp) / "out"
        out.mkdir()
        t0 = time.monotonic()
        repo = _attack_tree.build(root)
        print(f"built the tree in {time.monotonic() - t0:.0f} s", file=sys.stderr)
        try:
            m = measure(repo, out)
        finally:
            _attack_tree.remove_tree(root)
        root32, out32 = Path(tmp) / "pr32", Path(tmp) / "out32"
        root32.mkdir()
        out32.mkdir()
        t0 = time.monotonic()
        try:
            m32 = _attack_tree32.combined_run(root32, out32, bomb_mib=1024, gzip_mib=1024)
        finally:
            _attack_tree.remove_tree(root32)
        print(f"combined run in {time.monotonic() - t0:.0f} s", file=sys.stderr)
    print(json.dumps(m), file=sys.stderr)
    print(json.dumps(m32), file=sys.stderr)
    text = OUT.read_text(encoding="utf-8")
    new = section(m).replace(END, section32(m32) + "\n" + END)
    if START in text:
        text = text[: text.index(START)] + new + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip("\n") + "\n\n" + new + "\n"
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)
    ok32 = (
        m32["rc"] == 1
        and not (m32["wrong"] or m32["missing"] or m32["not_runs"] or m32["leaked"] or m32["canary"] or m32["changed"])
        and not m32["canary_atime_changed"]
        and m32["peak_bytes"] < _attack_tree32.MEMORY_CEILING
    )
    return 0 if not m["leaked"] and not m["wrong"] and m["rc"] == 1 and ok32 else 1


if __name__ == "__main__":
    raise SystemExit(main())
