"""Run ``doctor`` over one pull request's tree holding every attack of issue 17 at once and
write the "Attacks" section of ``evidence/robustness.md`` (between its markers; the rest
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

import _attack_tree  # noqa: E402

#: (attack, before, after, test) for each item of issue 17; the tests are in
#: tests/test_pr_*.py.
ROWS = [
    (
        'loss written as `null`, `"nan"`, `"inf"`, `1.#QNAN`, `-1.#IND`, `nan(ind)` from step 121 (JSONL, '
        "trainer_state.json)",
        "PASS, exit 0",
        "FAIL TP-NAN at step 121, exit 1",
        "test_pr_nan_spellings::test_every_spelling_of_a_nan_fails_as_the_nan_token_does",
    ),
    (
        "pandas `to_csv`: empty loss cells from step 121",
        "PASS",
        "FAIL TP-NAN at step 121",
        "test_pr_nan_spellings::test_pandas_dense_csv_with_blanks_after_step_120_fails",
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
tests/test_pr_tree.py runs the same tree with 48 MiB bombs on every test run.
{END}"""


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
    print(json.dumps(m), file=sys.stderr)
    text = OUT.read_text(encoding="utf-8")
    new = section(m)
    if START in text:
        text = text[: text.index(START)] + new + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip("\n") + "\n\n" + new + "\n"
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)
    return 0 if not m["leaked"] and not m["wrong"] and m["rc"] == 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
