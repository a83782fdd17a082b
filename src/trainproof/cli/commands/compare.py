"""``trainproof compare BASELINE RUN...``: each run alone and against a known-good run
(``--against best|last:N|RUN``: a baseline taken from the run history)."""

from __future__ import annotations

import click

from ..options import location, log_options, options
from ..output import emit_reports, history_errors, history_of, settings, stdout_console, write_outputs


@click.command("compare")
@click.argument("logs", nargs=-1, required=True, metavar="[BASELINE] RUN...")
@log_options
@options("history", "experiment")
@click.option(
    "--against",
    metavar="best|last:N|RUN",
    default=None,
    help="Take the baseline from the run history (--history) instead of a BASELINE argument: best (the "
    "experiment's healthy run with the lowest loss floor), last:N (the median of its N most recent healthy "
    "runs) or a recorded run's name.",
)
def compare_cmd(logs, fmt: str, maps, as_json: bool, mute, config_path, outputs, history, experiment, against) -> int:
    """Judge each RUN on its own and against BASELINE, a known-good run of the same task.

    A run on shuffled labels lowers its own loss and looks healthy alone; against a
    baseline its loss floor sits far above. Prints a ranking table, worst first. With
    --against, every argument is a RUN and the baseline comes from the run history.
    """
    from ...aliases.mapping import MappingError
    from ...api import compare as api_compare
    from ...formats import ReadError
    from ...render import needs_charts

    overrides, cfg = settings("compare", as_json, maps, mute, config_path)
    history = history_of(history, cfg)
    if against is not None:
        return _against(logs, against, history, experiment, fmt, overrides, cfg, as_json, outputs)
    if len(logs) < 2:
        raise click.UsageError("compare needs a BASELINE and at least one RUN (or --against best|last:N|RUN)")
    # A URL (a bucket's log, a tracking server's run) stays a string: a Path collapses "//".
    baseline = location(logs[0], "compare", as_json)
    runs = [location(r, "compare", as_json) for r in logs[1:]]
    try:
        base_report, reports = api_compare(
            baseline,
            runs,
            fmt,
            overrides,
            cfg.mute,
            cfg.thresholds,
            charts=needs_charts(outputs),
            history=history,
            experiment=experiment,
        )
    except (ReadError, MappingError) as e:
        return emit_reports([], "compare", as_json, error=f"baseline {baseline}: {e}")
    return _emit([base_report], reports, as_json, outputs)


def _against(logs, against, history, experiment, fmt, overrides, cfg, as_json, outputs) -> int:
    """``compare --against``: each run against a baseline the run history gives."""
    from ...api import compare_against
    from ...history.store import HistoryError
    from ...render import needs_charts

    if history is None:
        return emit_reports(
            [], "compare", as_json, error="--against takes the baseline from a run history: give --history PATH|URL"
        )
    runs = [location(r, "compare", as_json) for r in logs]
    try:
        bases, reports = compare_against(
            runs,
            against,
            history,
            fmt,
            overrides,
            cfg.mute,
            cfg.thresholds,
            charts=needs_charts(outputs),
            experiment=experiment,
        )
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    except HistoryError as e:
        return emit_reports([], "compare", as_json, error=str(e))
    return _emit(bases, reports, as_json, outputs)


def _emit(bases, reports, as_json: bool, outputs) -> int:
    """Print the runs against their baselines (one ranking table a baseline) and return
    the exit code."""
    from ...findings import exit_code
    from ...render import text as render_text
    from ..output import echo_error

    write_outputs(reports, outputs, baseline=bases[0] if bases else None)
    if as_json:
        from ...render.json import report_dict

        extra = {"baseline": report_dict(bases[0])} if bases else {}
        if len(bases) > 1:
            extra["baselines"] = [report_dict(b) for b in bases]
        return emit_reports(reports, "compare", as_json, extra=extra)
    error = history_errors(reports, None)
    if len(bases) <= 1:
        if bases:
            render_text.render_compare(stdout_console(), bases[0], reports)
        else:
            render_text.render(stdout_console(), reports, summary=False)
    else:
        for b in bases:
            mine = [r for r in reports if r.meta.get("compare", {}).get("baseline") == b.file]
            render_text.render_compare(stdout_console(), b, mine)
        rest = [r for r in reports if "baseline" not in r.meta.get("compare", {})]
        if rest:
            render_text.render(stdout_console(), rest, summary=False)
    if error:
        echo_error(error)
    return exit_code(reports, error)
