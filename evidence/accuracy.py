#!/usr/bin/env python3
"""Write evidence/accuracy.md: trainproof against the labelled corpus of real runs.

It runs the shared scorecard (``../shared/tools/scorecard.py``, which calls
``python -m trainproof epoch FILE --json`` once per file of ``../shared/corpus``) and turns
its per-file results into a page: files per label, our verdicts per label, the scorecard's
own SUMMARY line (the same numbers it prints), and every disagreement with its reason.

The reasons for known disagreements are written by hand below (``WHY``), after reading
the log; a disagreement without one says so, so a new miss cannot hide.

Usage (from the repository root; needs ../shared)::

    python evidence/accuracy.py            # rewrites evidence/accuracy.md
    python evidence/accuracy.py --check    # exit 1 if the page is out of date
    python evidence/accuracy.py --in-process --check   # the same, every file judged in this process
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
OUT = REPO / "evidence" / "accuracy.md"

#: Why the tool and a label disagree, for the disagreements known when this was written.
WHY = {
    "tfevents-lightning-naf-dqn-rl": (
        "An RL (NAF/DQN) run whose only loss tag is 'episode/MSE Loss', a Q-learning TD error that the "
        "alias table does not read as a training loss (it is not expected to fall like one). With no loss "
        "the run is not judged (TP-NO-LOSS, exit 2): not a FAIL, and not a PASS built on nothing."
    ),
    "hf-falcon-imdb-short": (
        "Labelled too_short, but it is a complete 125-step run logged 12 times: enough points for the "
        "trend rules, which find nothing wrong. A PASS on a short but finished run is defensible."
    ),
    "hf-bert2bert-sum-zero-loss": (
        "Label disagreement (zero_loss). Its cross-entropy falls 9.25 -> 4e-4 with one exact 0.0 in 4,800 "
        "points, logged at 4 decimals among values 3-5 rounding steps up: too far above 0 for rounding to "
        "explain it, and too lone to be a zero-loss failure (TP-ZERO-LOSS-MIXED needs 10% of the points): the "
        "stray zero is left out with a note and the rest of the run is judged, and nothing in it is wrong. That "
        "a summarisation loss cannot honestly get that low is knowledge of the task, not of the log."
    ),
    "console-dp-softprompt-4runs-rising": (
        "A capture of many runs: 4 runs of 'Epoch | Step | Train loss' printouts and 54 HF dicts with "
        "10 end-of-training summaries. Each stream's longest run is judged: printout run 2 (156 records, "
        "at ln 3 without a named cause: TP-LOSS-STALLED) and the longest dict run. Run 1's climb "
        "(0.755 -> 1.853) is in a shorter run, and the final 'Evaluation results' dicts with loss nan now "
        "belong to the runs they follow; the FAIL (TP-NAN) came from all 54 dicts read as one run, "
        "the evaluations' NaN as a train loss."
    ),
    "hf-hatespeech-cls-zero-loss": (
        "Label disagreement (zero_loss). The loss falls 0.85 -> 0.0098 by step 40 and holds 0.0001 for the ten "
        "logs before step 970, where HF's 4-decimal rounding starts writing 0.0 (54 of 150 rows); the gradient "
        "norm goes on smoothly across it (0.00094 -> 0.00073), where a NaN hidden as 0 shows NaN. The zeros are "
        "rounding, not an exact zero, so TP-ZERO-LOSS-ONSET no longer fires (it did, for that wrong reason). That a "
        "hate-speech task cannot honestly reach 1e-4 in 40 steps (leaked or trivially separable labels) is "
        "knowledge of the task, not of the log."
    ),
    "csv-lightning-lstm-exact-zero-loss": (
        "Label disagreement (zero_loss). A 37-class LSTM's cross-entropy falls 0.685 -> 0.030 by step 109, "
        "4.0e-5 over the first fifth and 2.6e-8 over the second, then is exactly 0.0 for 3,389 of 4,907 rows: "
        "a float32 cross-entropy underflowing once every margin passes about 17 nats, not a zero from a level "
        "the run held (no gradient norm is logged). Helpers' healthy easy tasks reach exactly 0.0 the same way, "
        "so the log cannot tell a leaked or trivial target from an easy one: TP-ZERO-LOSS-FITTED, a WARN that "
        "names the leak, instead of TP-ZERO-LOSS-ONSET's 'a NaN hidden by the logger'."
    ),
    "hf-wav2vec2-ctc-sum-spike-recovers": (
        "The spike (883 -> 2397, 2.7x its level) is under TP-LOSS-SPIKE's 3x bar, and the run recovers to "
        "1.2x its minimum, under TP-DIVERGE's 1.5x: a WARN would need a lower spike bar, which healthy noisy "
        "runs would cross."
    ),
    "hf-scibert-8-logs": (
        "8 train-loss points over 4,000 steps falling 0.927 -> 0.561 and 4 evaluations falling: at the 8-point "
        "minimum of the trend rules, and nothing is wrong with it. A PASS is defensible."
    ),
    "csv-baselines-ddpg-learning": (
        "The healthy sibling: judged on its 100-episode return, which rises -1278 -> 5084: PASS."
    ),
    "csv-wandb-history-marl-eval-frozen": (
        "A MAPPO history with only component losses (loss_objective, loss_critic) and a frozen eval reward of "
        "two agent groups: no training loss is mapped, and a frozen eval reward among moving ones has no rule."
    ),
    "jsonl-llamafactory-const-lr-late-drift": (
        "The loss creeps from ~0.037 to ~0.065 after falling from 2.09: 1.4% of its fall regained, which is the "
        "noise floor by TP-DIVERGE's 5% rule; no WARN rule reads a creep at that level."
    ),
    "mlflow-fasterrcnn-da-negative-total-loss": (
        "Its losses are named tr_ls / val_ls; 'ls' is not read as loss (it could be label smoothing), so the "
        "run is not judged (TP-NO-LOSS): not a FAIL."
    ),
    "tfevents-sb3-ppo-breakout-lr5e-3-kl": (
        "PPO with approx_kl far beyond its trust region while ep_rew_mean still climbs: no rule reads a PPO KL "
        "against its target, and the reward rises, so it passes."
    ),
    "hf-kevin-flat-1k": (
        "Label disagreement (flat_or_dead; judged WARN TP-LOSS-STALLED). A LoRA at lr 2e-4 whose loss holds "
        "2.17 -> 2.12 inside +-5% noise for 100 logs while the gradient norm stays near 1: the 99% interval of "
        "its change over the run is [-0.028, 0.062] nats, which reaches a slow learner's 0.051, and the "
        "optimizer is stepping. By its numbers it is the shape of hf-qwen-lora-plateau (labelled healthy) "
        "without the first-log drop; the log cannot show that nothing moves, so a WARN, not a FAIL."
    ),
    "csv-lightning-slm-unigram-stuck": (
        "Label disagreement (flat_or_dead; judged WARN TP-LOSS-STALLED). The train loss holds 7.50 -> 7.39 "
        "over 45 logs (99% interval of its fall [-0.001, 0.020] nats, inside a slow learner's 0.051): pinned, and "
        "the WARN says so. The log has no learning rate, no gradient norm and no accuracy, so it names no cause; "
        "a run at its floor before its first log holds one level the same way (generated healthy runs of the "
        "floor shape did, 4 in 20,000 on unseen seeds). That 7.4 is a unigram model's entropy is knowledge of "
        "the data, not of the log."
    ),
    "csv-lightning-probe-flat-noisy": (
        "Label disagreement (flat_or_dead; judged WARN TP-LOSS-STALLED). 28 logs of a loss between 2.31 and "
        "3.81 (first-5 median 3.18, last-5 3.10): too few and too noisy to exclude a slow learner; the "
        "knowledge that sibling versions reach 0.05 is outside this log."
    ),
    "console-amharic-hnet-char-lm-ln190-stuck": (
        "Label disagreement (flat_or_dead; judged WARN TP-LOSS-STALLED). 21 epoch averages 5.78 -> 5.66 at "
        "+-3%: too few to exclude a slow learner. That 5.25 = ln(190) is the uniform guess over this model's "
        "vocabulary is knowledge of the tokenizer, not of the log (chance levels are named for k <= 10)."
    ),
    "console-marian-ctx6l-stuck": (
        "Label disagreement (flat_or_dead; judged WARN TP-LOSS-STALLED). The cost fell 9.37 -> 8.2 over its "
        "first five logs, then held 7.9-8.3 for 20,000 updates while the learning rate warmed and decayed: a "
        "fall then a plateau, the shape of a fine-tune at its floor. That siblings reach 2.6 and BLEU is 0 is "
        "outside the train log; a plateau after a fall is no progress, not a dead run."
    ),
    "csv-lightning-lstm-odd-cols": (
        "Label disagreement (flat_or_dead; judged PASS). The loss falls 1.75 -> 0.250005 smoothly and holds "
        "there, still moving in its sixth digit. That 0.25 is the squared error of predicting 0.5 for 0/1 "
        "targets is knowledge of the targets; the loss fell 86% and nothing in the log says it should go lower."
    ),
    "jsonl-rl-reward-only": (
        "Labelled not_judgeable; judged PASS on its reward (TP-RL-OBJECTIVE), the RL rules' evidence: a log "
        "of returns is judged on its return, as the issue asks for model-based RL logs with no loss."
    ),
}


class InProcess:
    """Stands in for :mod:`subprocess` inside the scorecard: ``run(cmd, ...)`` runs the
    ``trainproof`` command line that ``cmd`` names (what follows ``trainproof`` in it) in
    this process, with its own output streams and exit status, and returns them as a
    :class:`subprocess.CompletedProcess`. Judging the corpus so takes seconds, not the
    minutes of starting Python once per file; the scorecard's parsing, counting and
    SUMMARY line are its own. ``outputs``: file judged -> its standard output."""

    TimeoutExpired = subprocess.TimeoutExpired

    def __init__(self) -> None:
        self.outputs: dict[str, str] = {}

    def run(self, cmd: list[str], **_ignored) -> subprocess.CompletedProcess:
        from click.testing import CliRunner

        from trainproof.cli.app import main

        args = cmd[cmd.index("trainproof") + 1 :]
        with CliRunner().isolation() as (out, err, _):
            try:
                main(args)
                rc = 0
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
        self.outputs[args[1]] = stdout
        return subprocess.CompletedProcess(cmd, rc, stdout, stderr)


def run_scorecard(runner: InProcess | None = None) -> tuple[list[dict], str]:
    """The shared scorecard's per-file results and its SUMMARY line. ``runner``: ``None``
    runs the scorecard as its own process (Python started once per file); an
    :class:`InProcess` runs the scorecard's code here with each file judged in this
    process (the same results, in seconds)."""
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "results.json"
        args = [
            "--cmd",
            f"{sys.executable} -m trainproof",
            "--corpus",
            str(SHARED / "corpus"),
            "--json-out",
            str(out),
        ]
        if runner is None:
            p = subprocess.run(
                [sys.executable, str(SHARED / "tools" / "scorecard.py"), *args],
                capture_output=True,
                text=True,
                check=True,
            )
            printed = p.stdout
        else:
            spec = importlib.util.spec_from_file_location("_scorecard", SHARED / "tools" / "scorecard.py")
            scorecard = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(scorecard)
            scorecard.subprocess = runner  # this copy of the module only
            buf = io.StringIO()
            argv = sys.argv
            sys.argv = ["scorecard.py", *args]
            try:
                with contextlib.redirect_stdout(buf):
                    scorecard.main()
            finally:
                sys.argv = argv
            printed = buf.getvalue()
        results = json.loads(out.read_text())
    summary = next(line for line in printed.splitlines() if line.startswith("SUMMARY"))
    return results, summary


def render(results: list[dict], summary: str) -> str:
    lines = [
        "# Accuracy on the labelled corpus",
        "",
        "Generated by `python evidence/accuracy.py` from `../shared/corpus/MANIFEST.tsv` (real logs from "
        "other people's runs, each with a label) and the shared scorecard "
        "(`../shared/tools/scorecard.py`), which runs `trainproof epoch FILE --json` once per file. "
        "Do not edit by hand.",
        "",
        "The scorecard's summary (false FAILs on healthy runs, FAIL recall on broken runs, "
        "WARN-or-FAIL recall on runs labelled as flag-worthy, crashes):",
        "",
        "```text",
        summary,
        "```",
        "",
        "## Files per label and our verdicts",
        "",
    ]
    labels = sorted({r["label"] for r in results})
    verdicts = ["PASS", "WARN", "FAIL", "NOT-CHECKED"]
    other = sorted({r["verdict"] for r in results} - set(verdicts))
    cols = verdicts + other
    lines.append("| label | expects | files | " + " | ".join(cols) + " |")
    lines.append("|---|---|---|" + "---|" * len(cols))
    for lab in labels:
        rows = [r for r in results if r["label"] == lab]
        c = Counter(r["verdict"] for r in rows)
        lines.append(
            f"| {lab} | {rows[0]['expect']} | {len(rows)} | " + " | ".join(str(c.get(v, 0) or "") for v in cols) + " |"
        )
    lines += [
        "",
        "## Every file",
        "",
        "| file | format | label | verdict | outcome | findings |",
        "|---|---|---|---|---|---|",
    ]
    for r in sorted(results, key=lambda r: (r["format"], r["id"])):
        ids = ", ".join(i for i in r["ids"] if i not in ("TP-PASS",)) or "—"
        lines.append(f"| {r['id']} | {r['format']} | {r['label']} | {r['verdict']} | {r['outcome']} | {ids} |")
    bad = [r for r in results if r["outcome"] not in ("ok", "n/a")]
    lines += ["", "## Disagreements", ""]
    if not bad:
        lines.append("None.")
    for r in bad:
        why = WHY.get(r["id"], "NOT YET EXPLAINED: read the log and add the reason to evidence/accuracy.py.")
        lines.append(
            f"- **{r['id']}** ({r['format']}, label `{r['label']}`, expects {r['expect']}): "
            f"trainproof says {r['verdict']} (exit {r['rc']}; {', '.join(r['ids']) or 'no findings'}), "
            f"outcome `{r['outcome']}`. {why}"
        )
    unscored = [r for r in results if r["outcome"] == "n/a"]
    if unscored:
        lines += [
            "",
            "Not scored (label `unclear` or unknown): "
            + ", ".join(f"{r['id']} ({r['verdict']})" for r in unscored)
            + ".",
        ]
    lines += zoo_tables()
    return "\n".join(lines) + "\n"


def zoo_tables() -> list[str]:
    """The false-FAIL and recall tables of ``evidence/zoo.md`` (``bench/zoo.py``: generated
    healthy and broken runs), copied under a heading of their own; none when that page is
    absent."""
    page = REPO / "evidence" / "zoo.md"
    if not page.exists():
        return []
    out = ["", "## The zoo: generated runs (from evidence/zoo.md)", ""]
    keep = False
    for ln in page.read_text(encoding="utf-8").splitlines():
        if ln.startswith("## "):
            keep = ln.startswith("## False FAILs") or ln.startswith("## Recall")
            if keep:
                out += ["", "#" + ln]
            continue
        if keep and (ln.startswith("|") or ln.startswith("Healthy runs with any FAIL")):
            out.append(ln)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when evidence/accuracy.md is out of date")
    ap.add_argument(
        "--in-process",
        action="store_true",
        help="judge every file in this process (seconds) instead of one Python per file (minutes); same page",
    )
    a = ap.parse_args()
    if not (SHARED / "corpus" / "MANIFEST.tsv").exists():
        print(f"no corpus at {SHARED / 'corpus'}", file=sys.stderr)
        return 2
    text = render(*run_scorecard(InProcess() if a.in_process else None))
    if a.check:
        same = OUT.exists() and OUT.read_text(encoding="utf-8") == text
        print("evidence/accuracy.md is up to date" if same else "evidence/accuracy.md is out of date")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
