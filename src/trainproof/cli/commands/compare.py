"""``trainproof compare BASELINE RUN...``: each run alone and against a known-good run."""

from __future__ import annotations

import click

from ..options import location, log_options
from ..output import emit_reports, settings, stdout_console, write_outputs


@click.command("compare")
@click.argument("baseline")
@click.argument("runs", nargs=-1, required=True)
@log_options
def compare_cmd(baseline: str, runs, fmt: str, maps, as_json: bool, mute, config_path, outputs) -> int:
    """Judge each RUN on its own and against BASELINE, a known-good run of the same task.

    A run on shuffled labels lowers its own loss and looks healthy alone; against a
    baseline its loss floor sits far above. Prints a ranking table, worst first.
    """
    from ...aliases.mapping import MappingError
    from ...api import compare as api_compare
    from ...findings import exit_code
    from ...formats import ReadError
    from ...render import needs_charts
    from ...render import text as render_text

    overrides, cfg = settings("compare", as_json, maps, mute, config_path)
    # A URL (a bucket's log, a tracking server's run) stays a string: a Path collapses "//".
    baseline = location(baseline, "compare", as_json)
    runs = [location(r, "compare", as_json) for r in runs]
    try:
        base_report, reports = api_compare(
            baseline, runs, fmt, overrides, cfg.mute, cfg.thresholds, charts=needs_charts(outputs)
        )
    except (ReadError, MappingError) as e:
        return emit_reports([], "compare", as_json, error=f"baseline {baseline}: {e}")
    write_outputs(reports, outputs, baseline=base_report)
    if as_json:
        from ...render.json import report_dict

        return emit_reports(reports, "compare", as_json, extra={"baseline": report_dict(base_report)})
    render_text.render_compare(stdout_console(), base_report, reports)
    return exit_code(reports)
