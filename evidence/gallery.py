#!/usr/bin/env python3
"""The fault-injection gallery's evidence: EVIDENCE_MATRIX.md and the golden snapshots.

``examples/gallery/<framework>/<config>/seed<K>/`` holds the logs of small real runs made
by the rigs in ``examples/rigs/`` (one knob broken, or none) with a ``run_meta.json``
saying what was broken and what a correct linter should say, decided from the mechanism
before trainproof looked at the run. This script judges every log with the current code:

* single run: ``trainproof epoch`` (verdict and the ids it emits);
* compare: every run of a configuration against the same-seed ``healthy`` run of the same
  framework and log format, and each healthy seed against healthy seed 0.

It writes ``EVIDENCE_MATRIX.md`` (run × format × seed → verdicts and key evidence),
``tests/golden/gallery.json`` (verdicts and id sets only, no evidence numbers) and the
gallery table in docs/gallery.md, which the tests compare with a fresh run; ``--check`` exits 1
when any of them is out of date.

Usage (from the repository root)::

    python evidence/gallery.py           # rewrite both files
    python evidence/gallery.py --check   # exit 1 if they are out of date
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GALLERY = REPO / "examples" / "gallery"
MATRIX = REPO / "EVIDENCE_MATRIX.md"
GOLDEN = REPO / "tests" / "golden" / "gallery.json"
#: The page that shows the gallery table (between README_START and README_END).
README = REPO / "docs" / "gallery.md"

sys.path.insert(0, str(REPO / "src"))

from trainproof.api import compare, judge  # noqa: E402
from trainproof.findings import Level  # noqa: E402

#: Why a broken configuration escapes, where it does (read from the logs, not guessed).
WHY_MISSED = {
    ("keras", "fp16_overflow"): (
        "the mechanism is real (a LossScaleOptimizer forced to grow its scale every step skips about half "
        "of the optimizer steps) but leaves no trace in what Keras logs: CSVLogger writes one row per epoch "
        "with the epoch's mean loss, Keras logs no gradient norm, and the loss scale the rig adds to each row "
        "never collapses. The run only learns a little more slowly. No log-based rule can see it; the run's "
        "meta expects PASS for that reason, and catching it would need a per-step gradient norm or a count "
        "of skipped steps in the log."
    ),
}
#: Why a broken configuration is caught by ``compare`` but not on its own, where it is.
WHY_COMPARE_ONLY = {
    "lr_hot": (
        "these runs explode within their first logged points and then sit dead at the label-frequency "
        "loss, which is below the loss they started from: there is no divergence from a best level to "
        "report (the best level is the dead one), TP-DEAD-RUN's first window holds the explosion so the "
        "run looks improved, and no NaN appears. Only a known-good run shows that the floor is 4x too high. "
        "A single-run rule would need the task's chance level (e.g. the label entropy), which the log does "
        "not carry."
    ),
}
#: Levels worth naming as the key evidence of a verdict, worst first.
_KEY_LEVELS = (Level.FAIL, Level.WARN)
#: Frameworks in the order the matrix shows them.
_FRAMEWORK_ORDER = ("hf", "lightning", "keras", "torch", "coqui")


def log_kind(rel: str) -> str:
    """What a log file is, independent of its run: event files share one kind (their
    names carry a time stamp and a host), other files are named by their file name."""
    name = Path(rel).name
    return "tfevents" if name.startswith("events.out.tfevents") or "tfevents" in rel else name


def runs() -> list[dict]:
    """Every gallery run: its metadata plus ``dir`` and a ``{kind: path}`` of its logs."""
    out = []
    for meta_path in sorted(GALLERY.glob("*/*/seed*/run_meta.json")):
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        d = meta_path.parent
        logs = {}
        for rel in meta.get("logs", []):
            logs.setdefault(log_kind(rel), d / rel)
        out.append({**meta, "dir": d, "logs_by_kind": logs})
    return out


def _ids(rep) -> list[str]:
    return sorted({f.id for f in rep.findings})


def _key(rep, source: str | None = None) -> str:
    for lv in _KEY_LEVELS:
        for f in rep.findings:
            if f.level is lv and (source is None or f.source == source):
                return f"{f.id}: {f.message}"
    return ""


def collect() -> list[dict]:
    """Judge every log of every gallery run; one row per run × log kind."""
    all_runs = runs()
    healthy = {(r["framework"], r["seed"]): r for r in all_runs if r["config"] == "healthy"}
    rows = []
    for r in all_runs:
        for kind, path in sorted(r["logs_by_kind"].items()):
            rep = judge(path)
            row = {
                "framework": r["framework"],
                "config": r["config"],
                "seed": r["seed"],
                "kind": r["kind"],
                "log": kind,
                "file": str(path.relative_to(REPO)),
                "broken": r.get("broken"),
                "expected_verdict": r.get("expected_verdict"),
                "expected_rules": sorted(r.get("expected_rules") or []),
                "expected_compare": r.get("expected_compare"),
                "verdict": rep.verdict.value,
                "ids": _ids(rep),
                "key": _key(rep),
                "compare_with": None,
                "compare_verdict": None,
                "compare_ids": [],
                "compare_key": "",
            }
            if r["config"] == "healthy":
                base_run = healthy.get((r["framework"], 0)) if r["seed"] != 0 else None
            else:
                base_run = healthy.get((r["framework"], r["seed"]))
            base = base_run["logs_by_kind"].get(kind) if base_run else None
            if base is not None:
                _, (crep,) = compare(base, [path])
                cmp_findings = [f for f in crep.findings if f.source == "compare"]
                worst = max((f.level for f in cmp_findings), key=_rank, default=None)
                row.update(
                    compare_with=str(base.relative_to(REPO)),
                    compare_verdict=worst.value if worst is not None else None,
                    compare_ids=sorted({f.id for f in cmp_findings}),
                    compare_key=_key(crep, "compare"),
                )
            rows.append(row)
    return rows


def _rank(level: Level) -> int:
    return {Level.INFO: 0, Level.PASS: 1, Level.NOT_CHECKED: 2, Level.WARN: 3, Level.FAIL: 4}.get(level, 0)


def caught(row: dict) -> bool | None:
    """For a broken run: did ``epoch`` give the expected level (or worse) with one of the
    expected rules, or did ``compare`` FAIL where a FAIL was expected? ``None`` for
    healthy and negative runs."""
    if row["kind"] != "broken":
        return None
    single = caught_single(row)
    by_compare = row["expected_compare"] == "FAIL" and row["compare_verdict"] == "FAIL"
    return single or by_compare


def caught_single(row: dict) -> bool:
    """``epoch`` alone gave the expected level (or worse) with one of the expected rules."""
    need = row["expected_verdict"]
    return (row["verdict"] == "FAIL" if need == "FAIL" else row["verdict"] in ("WARN", "FAIL")) and (
        not row["expected_rules"] or bool(set(row["expected_rules"]) & set(row["ids"]))
    )


def golden(rows: list[dict]) -> dict:
    """The locked part: verdicts and id sets, no evidence numbers."""
    out = {}
    for r in rows:
        out[f"{r['framework']}/{r['config']}/seed{r['seed']}/{r['log']}"] = {
            "verdict": r["verdict"],
            "ids": r["ids"],
            "compare_verdict": r["compare_verdict"],
            "compare_ids": r["compare_ids"],
        }
    return out


def _cell(text: str, limit: int = 140) -> str:
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _by_configuration(rows: list[dict]) -> list[tuple[str, str, list[dict], str, str, str]]:
    """Per (configuration, kind), healthy first: its rows, the epoch and compare verdict
    counts as text, and how many broken logs were caught (``-`` when not broken)."""
    by_cfg = defaultdict(list)
    for r in rows:
        by_cfg[(r["config"], r["kind"])].append(r)
    kind_rank = {"healthy": 0, "broken": 1, "negative": 2}
    out = []
    for (cfg, kind), rs in sorted(by_cfg.items(), key=lambda kv: (kind_rank.get(kv[0][1], 3), kv[0][0])):
        ev, cv = defaultdict(int), defaultdict(int)
        for r in rs:
            ev[r["verdict"]] += 1
            cv[r["compare_verdict"] or "-"] += 1
        got = [caught(r) for r in rs]
        c = "-" if kind != "broken" else f"{sum(bool(g) for g in got)}/{len(got)}"
        out.append(
            (
                cfg,
                kind,
                rs,
                ", ".join(f"{k} {v}" for k, v in sorted(ev.items())),
                ", ".join(f"{k} {v}" for k, v in sorted(cv.items())),
                c,
            )
        )
    return out


def render(rows: list[dict]) -> str:
    """EVIDENCE_MATRIX.md."""
    fw_rank = {f: i for i, f in enumerate(_FRAMEWORK_ORDER)}
    rows = sorted(
        rows,
        key=lambda r: (
            fw_rank.get(r["framework"], 99),
            r["kind"] != "healthy",
            r["kind"],
            r["config"],
            r["log"],
            r["seed"],
        ),
    )
    broken = [r for r in rows if r["kind"] == "broken"]
    missed = [r for r in broken if not caught(r)]
    false_fail = [r for r in rows if r["kind"] in ("healthy", "negative") and r["verdict"] == "FAIL"]
    false_cmp = [r for r in rows if r["kind"] in ("healthy", "negative") and r["compare_verdict"] == "FAIL"]
    frameworks = sorted({r["framework"] for r in rows}, key=lambda f: fw_rank.get(f, 99))
    formats = sorted({r["log"] for r in rows})
    lines = [
        "# Evidence matrix: the fault-injection gallery",
        "",
        "Generated by `python evidence/gallery.py` from the logs in `examples/gallery/` and the current code; "
        "`tests/project/test_gallery.py` fails when this page or `tests/golden/gallery.json` is out of date. "
        "Do not edit by hand.",
        "",
        "Each run is a small real training run made by a rig in `examples/rigs/` with one knob broken "
        "(`broken`), none (`healthy`), or an unusual but sound setup that must stay silent (`negative`); "
        "its `run_meta.json` says what was broken and what a correct linter should say, decided from the "
        "mechanism before trainproof judged it. `epoch` is the single-run verdict; `compare` is the "
        "comparison part of `trainproof compare` against the same-seed healthy run of the same framework "
        "and log format (healthy seeds 1 and 2 against seed 0).",
        "",
        f"Frameworks: {', '.join(frameworks)}. Log formats: {', '.join(formats)}. "
        f"{len({(r['framework'], r['config'], r['seed']) for r in rows})} runs, {len(rows)} logs.",
        "",
        "## Summary",
        "",
        f"- Broken logs caught by `epoch` (expected level and rule) or by `compare` (FAIL): "
        f"{len(broken) - len(missed)} of {len(broken)}.",
        f"- Healthy and negative logs with a FAIL from `epoch`: {len(false_fail)}; "
        f"with a FAIL from `compare`: {len(false_cmp)}.",
    ]
    only_cmp = [r for r in broken if caught(r) and r["expected_verdict"] in ("WARN", "FAIL") and not caught_single(r)]
    if only_cmp:
        lines.append(
            f"- Of those, caught by `compare` only although the single run was expected to be caught "
            f"on its own (shuffled labels, expected to need `compare`, are not counted here): "
            f"{len(only_cmp)}: "
            + ", ".join(f"{r['framework']}/{r['config']}/seed{r['seed']} ({r['log']})" for r in only_cmp)
            + "."
        )
        for cfg in sorted({r["config"] for r in only_cmp}):
            lines.append(f"  - Why ({cfg}): {WHY_COMPARE_ONLY.get(cfg, 'NOT YET EXPLAINED.')}")
    if missed:
        lines += ["", "Not caught (each one below, with what trainproof said and why):", ""]
        for r in missed:
            why = WHY_MISSED.get((r["framework"], r["config"]), "NOT YET EXPLAINED.")
            lines.append(
                f"- {r['framework']}/{r['config']}/seed{r['seed']} ({r['log']}): expected "
                f"{r['expected_verdict']} {', '.join(r['expected_rules']) or ''} / compare "
                f"{r['expected_compare']}; got {r['verdict']} ({', '.join(r['ids'])}), compare "
                f"{r['compare_verdict']} ({', '.join(r['compare_ids']) or '-'}). Why: {why}"
            )
    for r in false_fail + false_cmp:
        lines.append(
            f"- FALSE FAIL: {r['framework']}/{r['config']}/seed{r['seed']} ({r['log']}): {r['key'] or r['compare_key']}"
        )

    lines += [
        "",
        "## By configuration",
        "",
        "| configuration | kind | what was broken (one example) | logs | epoch verdicts | compare verdicts | caught |",
        "|---|---|---|---|---|---|---|",
    ]
    for cfg, kind, rs, ev, cv, c in _by_configuration(rows):
        broken_txt = next((r["broken"] for r in rs if r["broken"]), "") or ""
        lines.append(f"| {cfg} | {kind} | {_cell(broken_txt, 110)} | {len(rs)} | {ev} | {cv} | {c} |")

    lines += [
        "",
        "## Every log",
        "",
        "| framework | configuration | log | seed | expected | epoch | compare | caught | key evidence |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        exp = f"{r['expected_verdict']}" + (
            f" {','.join(x.removeprefix('TP-') for x in r['expected_rules'])}" if r["expected_rules"] else ""
        )
        ep = r["verdict"] + (
            f" ({', '.join(i.removeprefix('TP-') for i in r['ids'] if i not in ('TP-PASS', 'TP-THROUGHPUT'))})"
            if any(i not in ("TP-PASS", "TP-THROUGHPUT") for i in r["ids"])
            else ""
        )
        cp = (r["compare_verdict"] or "-") + (
            f" ({', '.join(i.removeprefix('TP-') for i in r['compare_ids'])})" if r["compare_ids"] else ""
        )
        c = caught(r)
        key = r["key"] or r["compare_key"]
        lines.append(
            f"| {r['framework']} | {r['config']} | {r['log']} | {r['seed']} | {_cell(exp, 60)} | {_cell(ep, 80)} | "
            f"{_cell(cp, 60)} | {'-' if c is None else ('yes' if c else '**no**')} | {_cell(key)} |"
        )
    return "\n".join(lines) + "\n"


README_START = "<!-- gallery table: generated by evidence/gallery.py -->"
README_END = "<!-- end of gallery table -->"


def render_readme(rows: list[dict]) -> str:
    """The gallery table of docs/gallery.md: one row per configuration, over every framework,
    format and seed (between README_START and README_END)."""
    out = [
        README_START,
        "",
        "| run | sabotage | `judge` verdicts | `compare` vs healthy | caught | key evidence (one log) |",
        "|---|---|---|---|---|---|",
    ]
    for cfg, kind, rs, ev, cv, c in _by_configuration(rows):
        sabotage = next((r["broken"] for r in rs if r["broken"]), None) or (
            "none" if kind == "healthy" else f"none ({kind})"
        )
        example = next((r for r in rs if r["key"] or r["compare_key"]), None)
        key = f"{example['framework']}: {example['key'] or example['compare_key']}" if example else ""
        out.append(f"| {cfg} | {_cell(sabotage, 90)} | {ev} | {cv} | {c} | {_cell(key, 120)} |")
    out += ["", README_END]
    return "\n".join(out)


def readme_with_table(readme: str, rows: list[dict]) -> str:
    """The gallery page's text with the table replaced (unchanged when the markers are absent)."""
    a, b = readme.find(README_START), readme.find(README_END)
    if a < 0 or b < 0:
        return readme
    return readme[:a] + render_readme(rows) + readme[b + len(README_END) :]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when EVIDENCE_MATRIX.md or the golden file is stale")
    a = ap.parse_args()
    rows = collect()
    text = render(rows)
    gold = json.dumps(golden(rows), indent=1, sort_keys=True) + "\n"
    readme = readme_with_table(README.read_text(encoding="utf-8"), rows)
    if a.check:
        stale = [
            p.name
            for p, want in ((MATRIX, text), (GOLDEN, gold), (README, readme))
            if not p.exists() or p.read_text(encoding="utf-8") != want
        ]
        print("out of date: " + ", ".join(stale) if stale else "up to date")
        return 1 if stale else 0
    MATRIX.write_text(text, encoding="utf-8")
    README.write_text(readme, encoding="utf-8")
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(gold, encoding="utf-8")
    print(
        f"wrote {MATRIX.relative_to(REPO)}, {GOLDEN.relative_to(REPO)} and the table in {README.relative_to(REPO)} ({len(rows)} logs)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
