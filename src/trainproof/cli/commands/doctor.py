"""``trainproof doctor [PATH]...``: find every training log under the paths and judge each run."""

from __future__ import annotations

import sys
import time

import click

from ..options import OPTIONS, experiment_name, location, log_options
from ..output import echo_error, emit_reports, history_of, settings


class _LazyProgress:
    """A progress bar on stderr that appears only on a terminal and after a moment."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.bar = None
        self.task = None
        self.enabled = sys.stderr.isatty()

    def advance(self, done: int, total: int, label: str) -> None:
        if not self.enabled or total < 2:
            return
        self.total = total
        if self.bar is None and time.monotonic() - self.t0 > 0.5:
            from rich.console import Console
            from rich.progress import Progress

            self.bar = Progress(console=Console(stderr=True), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("judging", total=self.total)
        if self.bar is not None:
            self.bar.update(self.task, completed=done, description=label[-40:])

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _levels(value: str | None):
    """``--only``'s comma-separated verdicts as levels (``None``: every verdict); an unknown
    name is a usage error (exit 2)."""
    if value is None:
        return None
    from ...findings import Level

    names = {lvl.value: lvl for lvl in (Level.FAIL, Level.WARN, Level.PASS, Level.NOT_CHECKED)}
    names["NOT-JUDGED"] = Level.NOT_CHECKED
    out = set()
    for part in value.replace(" ", ",").split(","):
        if not part:
            continue
        lvl = names.get(part.strip().upper().replace("_", "-"))
        if lvl is None:
            raise click.BadParameter(f"{part!r} is not a verdict; use FAIL, WARN, PASS or NOT-CHECKED")
        out.add(lvl)
    return out


def _is_server(root) -> bool:
    from ...mlflow_server import is_tracking_server

    return is_tracking_server(root)


@click.command("doctor")
# readable=False: an unreadable file or folder is listed and decides the exit code (2),
# in the JSON document with --json, not a usage error printed by click without one.
@click.argument("paths", nargs=-1, type=click.Path(path_type=str, readable=False))
@log_options
@click.option(
    "--baseline",
    type=click.Path(path_type=str, readable=False),
    help="Also compare every run with this known-good run of the same task.",
)
@click.option(
    "--max-depth",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Search at most N folder levels below PATH (for huge or untrusted trees).",
)
@click.option(
    "--max-files",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Judge at most N log files; the cut is listed among the ignored files.",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Judge runs in N processes (default and most: one per usable core, more would only add memory); "
    "the output is the same and in the same order for any N. With --engine dask/ray and no "
    "--address: the local cluster's workers.",
)
@click.option(
    "--engine",
    type=click.Choice(["local", "dask", "ray"]),
    default="local",
    show_default=True,
    help="Where runs are judged: local processes, or a Dask or Ray cluster (extras [dask], [ray]); "
    "the output is the same.",
)
@click.option(
    "--address",
    metavar="ADDR",
    default=None,
    help="The cluster for --engine: a Dask scheduler (tcp://host:8786) or a Ray address (auto, "
    "ray://host:10001). Default: start a local one for this run.",
)
@click.option(*OPTIONS["history"][0], **OPTIONS["history"][1])
@click.option(
    "--experiment",
    "experiments",
    multiple=True,
    metavar="NAME",
    help="With an MLflow tracking server as PATH: only the runs of this experiment (repeatable). With "
    "--history and another PATH: the experiment every run is recorded under and judged within (default: "
    "the tracker's project or experiment, else the folder of the run family, else the log's folder).",
)
@click.option(
    "--run",
    "run_ids",
    multiple=True,
    metavar="ID",
    help="With an MLflow tracking server as PATH: only this run (repeatable).",
)
@click.option(
    "--allow-empty",
    is_flag=True,
    help="Exit 0 when no training log is found (a pre-commit hook on files that hold none).",
)
@click.option(
    "--quiet",
    "-q",
    "view",
    flag_value="quiet",
    help="Print only the table of runs that did not pass, and the totals (for CI logs).",
)
@click.option(
    "--verbose",
    "-v",
    "view",
    flag_value="verbose",
    help="Print every run's full report (default: only FAIL and WARN runs').",
)
@click.option(
    "--only",
    "only",
    callback=lambda ctx, param, value: _levels(value),
    metavar="LEVELS",
    help="Show only runs of these verdicts, e.g. --only FAIL,WARN (FAIL, WARN, PASS, NOT-CHECKED); "
    "the totals line and --json still count every run.",
)
@click.option(
    "--fail-on",
    "fail_on",
    type=click.Choice(["FAIL", "WARN", "never"], case_sensitive=False),
    default="FAIL",
    show_default=True,
    help="Which verdict exits 1: FAIL (a run FAILs), WARN (a run FAILs or WARNs) or never. A log that "
    "cannot be judged exits 2 whatever this is.",
)
def doctor_cmd(
    paths: tuple[str, ...],
    fmt: str,
    maps,
    as_json: bool,
    mute,
    config_path,
    outputs,
    baseline,
    max_depth,
    max_files,
    jobs,
    engine,
    address,
    history,
    experiments,
    run_ids,
    allow_empty,
    view,
    only,
    fail_on,
) -> int:
    """Find every training log under each PATH (default: .) and judge each run.

    A PATH may be a folder, a file (a pre-commit hook passes the changed files) or an
    fsspec URL (s3://bucket/runs/; the [remote] extra): objects are listed once and each
    run is fetched, in chunks, by whoever judges it. A PATH http://host:5000 is an MLflow
    tracking server: its live runs are read over its API (credentials from
    MLFLOW_TRACKING_TOKEN, or MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD).
    """
    from ...api import doctor as api_doctor
    from ...discover import is_unsearched
    from ...engines import EngineError
    from ...formats import ReadError
    from ...remote import is_url
    from ...render import needs_charts, without_runs

    overrides, cfg = settings("doctor", as_json, maps, mute, config_path)
    if address is not None and engine == "local":
        return emit_reports([], "doctor", as_json, summary=True, error="--address needs --engine dask or --engine ray")
    roots = [location(p, "doctor", as_json) for p in (paths or (".",))]
    history = history_of(history, cfg)
    server = any(_is_server(p) for p in roots)
    if (run_ids or (experiments and history is None)) and not server:
        return emit_reports(
            [],
            "doctor",
            as_json,
            summary=True,
            error="--experiment and --run narrow an MLflow tracking server: give its URL (http://host:5000)",
        )
    if history is not None and not server and len(experiments) > 1:
        return emit_reports(
            [], "doctor", as_json, summary=True, error="--history records the runs under one --experiment, not several"
        )
    # A tracking server's runs are recorded under their own experiment, which --experiment names.
    record_under = experiments[0] if history is not None and experiments and not server else None
    if record_under is not None:
        try:
            record_under = experiment_name(record_under)
        except click.BadParameter as e:
            return emit_reports([], "doctor", as_json, summary=True, error=f"--experiment {e.format_message()}")
    for path in roots:
        if not is_url(path) and not path.exists():
            return emit_reports(
                [],
                "doctor",
                as_json,
                summary=True,
                error=f"no such file or directory: {path}",
                outputs=without_runs(outputs),
            )
    label = " ".join(str(p) for p in roots)
    progress = _LazyProgress()
    try:
        reports, ignored = api_doctor(
            roots,
            fmt,
            overrides,
            cfg.mute,
            cfg.thresholds,
            progress=progress.advance,
            baseline=location(baseline, "doctor", as_json),
            max_depth=max_depth,
            max_files=max_files,
            jobs=jobs,
            engine=engine,
            address=address,
            charts=needs_charts(outputs),
            experiments=experiments if server else (),
            runs=run_ids,
            history=history,
            experiment=record_under,
        )
    except (ReadError, EngineError) as e:
        progress.close()
        return emit_reports(
            [],
            "doctor",
            as_json,
            summary=True,
            error=f"{label}: {e}" if isinstance(e, ReadError) else str(e),
            outputs=without_runs(outputs),
        )
    for cut in ignored:
        if "--max-depth" in cut["reason"] or "--max-files" in cut["reason"]:
            echo_error(f"{cut['file']}: {cut['reason']}")
    progress.close()
    # A folder that could not be searched may hold runs that were not judged: the search
    # is incomplete, so the exit code says "could not judge" (2) unless a run FAILed.
    unsearched = [cut["file"] for cut in ignored if is_unsearched(cut["reason"])]
    unsearched_error = (
        f"{len(unsearched)} folder(s) could not be searched (listed as ignored), so their runs are not judged: "
        + ", ".join(str(f) for f in unsearched[:5])
        + (", …" if len(unsearched) > 5 else "")
        if unsearched
        else None
    )
    if not reports and allow_empty and unsearched_error is None:
        if as_json:
            from ...render import json as render_json

            click.echo(render_json.dumps(render_json.document([], "doctor", extra={"ignored": ignored})))
        else:
            click.echo(f"no training logs found under {label}: nothing to judge")
        return 0
    error = unsearched_error if reports else f"no training logs found under {label}"
    if not reports and unsearched_error is not None:
        error = f"{error}; {unsearched_error}"
    return emit_reports(
        reports,
        "doctor",
        as_json,
        summary=True,
        extra={"ignored": ignored},
        error=error,
        outputs=outputs,
        view=view or "default",
        only=only,
        fail_on=fail_on,
    )
