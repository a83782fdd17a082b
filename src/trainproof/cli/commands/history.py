"""``trainproof history [EXPERIMENT]``: the runs a run history holds."""

from __future__ import annotations

import json
import time

import click

from ..options import options
from ..output import echo_error, history_of, settings, stdout_console


@click.command("history")
@click.argument("experiment", required=False)
@options("history", "json", "config", history={"help": "The run history to read: an SQLite file or a "
         "postgresql:// URL (default: [tool.trainproof] history)."}, json={"help": "Print one JSON document."})  # fmt: skip
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    metavar="N",
    help="Show the N most recent runs of EXPERIMENT (without EXPERIMENT: the N experiments recorded into most recently).",
)
def history_cmd(experiment, history, as_json: bool, config_path, limit: int) -> int:
    """List the runs of EXPERIMENT in the run history, newest first, with their verdicts and key figures, and how
    the last run sits against the others; without EXPERIMENT, list the experiments.

    EXPERIMENT is its name as recorded (a tracker's project, or a folder's absolute path)
    or the end of one (the folder's name). Reads only: a missing history is an error
    (exit 2), never created.
    """
    from ...history.store import HistoryError, open_store

    _, cfg = settings("history", as_json, (), (), config_path)
    location = history_of(history, cfg)
    if location is None:
        return _fail("no run history given: --history PATH|URL or [tool.trainproof] history", as_json)
    try:
        with open_store(location, create=False) as st:
            if experiment is None:
                # The most recent experiments only (--limit): a history of thousands of
                # experiments is listed in as many queries as are shown, not all of them.
                recent = st.recent_experiments(limit)
                rows = [(name, st.runs(name, limit=1)[0], n) for name, n in recent]
                return _experiments(rows, as_json, len(st.experiments()))
            names = st.experiments()
            chosen = _match(experiment, names)
            if isinstance(chosen, str):
                from ...rules.thresholds import DEFAULT

                last = DEFAULT.hist_last_runs
                runs = st.runs(chosen, limit=max(limit, last + 1))
                total = st.count(chosen)
                return _runs(chosen, runs[:limit], total, as_json, _standing(runs[: last + 1]))
    except HistoryError as e:
        return _fail(str(e), as_json)
    if not chosen:
        return _fail(f"no experiment {experiment} in the history (`trainproof history` lists them)", as_json)
    return _fail(f"{experiment} names several experiments: {', '.join(chosen)}; give more of the name", as_json)


def _fail(message: str, as_json: bool) -> int:
    if as_json:
        click.echo(json.dumps({"command": "history", "error": message}))
    echo_error(message)
    return 2


def _match(name: str, names: list[str]) -> str | list[str]:
    """The experiment ``name`` means: an exact name, else the one ending in ``/name``
    (a folder's name or its last parts); a list of the candidates when none or several."""
    if name in names:
        return name
    tail = "/" + name.strip("/")
    found = [n for n in names if n.endswith(tail)]
    return found[0] if len(found) == 1 else found


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(t)) if t else "-"


def _num(v) -> str:
    if not isinstance(v, (int, float)):
        return "-"
    from ...rules._fmt import num

    return num(float(v))


def _experiments(rows, as_json: bool, total: int) -> int:
    if as_json:
        doc = {
            "command": "history",
            "total": total,
            "experiments": [
                {"experiment": name, "runs": n, "last_verdict": last.verdict, "last_recorded_at": last.recorded_at}
                for name, last, n in rows
            ],
        }
        click.echo(json.dumps(doc, indent=2))
        return 0
    from rich.table import Table

    console = stdout_console()
    if not rows:
        console.print("the history holds no runs yet")
        return 0
    shown_n = f"{len(rows)} of {total}, most recent first" if len(rows) < total else f"{total}, most recent first"
    table = Table(title=f"trainproof history — experiments ({shown_n})", box=None, header_style="bold")
    for col in ("experiment", "runs", "last run", "verdict", "recorded (UTC)"):
        table.add_column(col)
    for name, last, n in rows:
        table.add_row(name, str(n), last.run, last.verdict, _when(last.recorded_at))
    console.print(table)
    return 0


def _standing(runs) -> dict | None:
    """How the newest run's floor sits against the healthy runs before it (``runs``: newest
    first, the recent ones the history judges against): their median, the robust spread
    (1.4826 x MAD), the newest run's distance in spreads and how many it is lower than."""
    from ...history.baseline import floor_of

    if len(runs) < 2:
        return None
    last, others = runs[0], [r for r in runs[1:] if r.healthy and floor_of(r) is not None]
    x = floor_of(last)
    if x is None or not others:
        return None
    import numpy as np

    levels = np.array([floor_of(r) for r in others])
    med = float(np.median(levels))
    spread = float(1.4826 * np.median(np.abs(levels - med)))
    return {
        "run": last.run,
        "floor": x,
        "others": len(others),
        "median": med,
        "spread": spread,
        "z": (x - med) / spread if spread > 0 else None,
        "lower_than": int(np.sum(levels > x)),
    }


def _notable(ids) -> list[str]:
    """The ids of the findings worth a column: those of rules that warn or fail (an id
    no rule of this version declares is shown too)."""
    from ...findings import Level
    from ...rules.registry import all_rules

    info = {r.id for r in all_rules() if r.level not in (Level.WARN, Level.FAIL)}
    return [i for i in ids if i not in info]


def _runs(experiment: str, runs, total: int, as_json: bool, standing: dict | None) -> int:
    if as_json:
        doc = {
            "command": "history",
            "experiment": experiment,
            "total": total,
            "runs": [
                {
                    "id": r.id,
                    "run": r.run,
                    "source": r.source,
                    "verdict": r.verdict,
                    "findings": list(r.findings),
                    "summary": dict(r.summary),
                    "commit": r.commit,
                    "recorded_at": r.recorded_at,
                }
                for r in runs
            ],
            "last": standing,
        }
        click.echo(json.dumps(doc, indent=2))
        return 0
    from rich.table import Table

    console = stdout_console()
    title = f"trainproof history — {experiment} ({len(runs)} of {total} runs, newest first)"
    table = Table(title=title, box=None, header_style="bold")
    cols = ("#", "recorded (UTC)", "run", "verdict", "steps", "loss best", "loss last", "eval best", "improved")
    for col in cols:
        table.add_column(col, no_wrap=True)
    table.add_column("findings", overflow="fold")
    for r in runs:
        s = r.summary
        imp = s.get("improvement")
        table.add_row(
            str(r.id),
            _when(r.recorded_at),
            r.run,
            r.verdict,
            _num(s.get("steps")),
            _num(s.get("loss_best")),
            _num(s.get("loss_last")),
            _num(s.get("eval_loss_best")),
            f"{imp:.0%}" if isinstance(imp, (int, float)) else "-",
            ", ".join(_notable(r.findings)) or "-",
        )
    console.print(table)
    if standing is not None:
        z = standing["z"]
        where = f", {z:+.1f} spreads from their median" if z is not None else ""
        console.print(
            f"the last run, {standing['run']}: floor {_num(standing['floor'])}, lower than "
            f"{standing['lower_than']} of the {standing['others']} healthy runs before it "
            f"(their median {_num(standing['median'])}, spread {_num(standing['spread'])}{where})"
        )
    return 0
