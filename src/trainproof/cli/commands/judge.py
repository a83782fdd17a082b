"""``trainproof judge LOG`` (formerly ``epoch``): judge one training log."""

from __future__ import annotations

import click

from ..options import location, log_options, options
from ..output import emit_reports, history_of, invoked, settings


@click.command("judge")
# readable=False: an unreadable log is the reader's to report (exit 2, in the JSON document
# with --json), not a usage error printed by click without one.
@click.argument("logfile", type=click.Path(path_type=str, readable=False))
@log_options
@options("history", "experiment")
def judge_cmd(logfile: str, fmt: str, maps, as_json: bool, mute, config_path, outputs, history, experiment) -> int:
    """Judge one training log: a file (HF trainer_state.json, TensorBoard event file, JSONL,
    CSV, Coqui log, console capture, MLflow metric) or a TensorBoard/MLflow run folder.
    LOGFILE may be an fsspec URL (s3://bucket/run.jsonl; the [remote] extra). A log that
    holds several runs (a W&B export) gives one report per run, worst first."""
    from ...aliases.mapping import MappingError
    from ...api import read_runlogs
    from ...findings import worst_first
    from ...formats import ReadError
    from ...render import needs_charts
    from ...render.charts import with_charts
    from ...rules.engine import error_report, judge_runlog

    command = invoked("judge")
    overrides, cfg = settings(command, as_json, maps, mute, config_path)
    logfile = location(logfile, command, as_json)
    try:
        runs = read_runlogs(logfile, fmt, overrides)
    except (ReadError, MappingError) as e:
        rep = error_report(str(logfile), str(e), None if fmt == "auto" else fmt)
        return emit_reports([rep], command, as_json, error=f"{logfile}: {e}", outputs=outputs)
    # One report per run the log holds (a W&B export of several runs), worst first; chart
    # series only for the HTML report (the only output that draws them).
    reports = [judge_runlog(run, cfg.thresholds, cfg.mute) for run in runs]
    history = history_of(history, cfg)
    if history is not None:
        from ...history.recording import record

        reports = [
            record(
                run,
                rep,
                history,
                experiment=experiment,
                thresholds=cfg.thresholds,
                mute=cfg.mute,
                chart=needs_charts(outputs),
            )
            for run, rep in zip(runs, reports)
        ]
    if needs_charts(outputs):
        reports = [with_charts(rep, run) for rep, run in zip(reports, runs)]
    reports = worst_first(reports)
    return emit_reports(reports, command, as_json, outputs=outputs)
