"""``trainproof rules [ID]``: every rule, or one rule's documentation with the thresholds in force."""

from __future__ import annotations

from pathlib import Path

import click

from ..output import fail, stdout_console


@click.command("rules")
@click.argument("rule_id", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the rule list as JSON.")
@click.option(
    "--markdown", is_flag=True, help="Print RULES.md (the ids by family, linking their pages, and every threshold)."
)
@click.option(
    "--pages",
    "pages_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write one page per id and an index by family into this folder (docs/rules), removing stale pages.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="With RULE_ID: state the thresholds of this TOML file's [tool.trainproof] settings "
    "(default: nearest pyproject.toml).",
)
def rules_cmd(
    rule_id: str | None, as_json: bool, markdown: bool, pages_dir: Path | None, config_path: Path | None
) -> int:
    """List every rule, or print the page of RULE_ID (its example judged, the thresholds in force)."""
    import json

    from ...rules.registry import all_rules, get

    if markdown:
        from ...rules.docs import rules_markdown

        click.echo(rules_markdown(), nl=False)
        return 0
    if pages_dir is not None:
        from ...rules.docs import write_pages

        for name in write_pages(pages_dir):
            click.echo(f"removed stale page {name}", err=True)
        return 0

    if rule_id:
        r = get(rule_id)
        if r is None:
            fail(f"unknown rule id {rule_id!r} (see `trainproof rules`)")
        if as_json:
            click.echo(json.dumps(_rule_dict(r), indent=2))
            return 0
        # The configuration a run would be judged with (the same loader as epoch and
        # doctor), so the text states the numbers that would be compared against.
        from ...config import ConfigError, load_config
        from ...rules.thresholds import DEFAULT

        try:
            cfg = load_config(config_path)
        except ConfigError as e:
            fail(str(e))
        from ...rules.docs import rule_page

        th = cfg.thresholds
        text = rule_page(r, th)
        changed = [n for n in r.thresholds if getattr(th, n) != getattr(DEFAULT, n)]
        if changed:
            text += f"\nThresholds other than the defaults ({', '.join(changed)}) are from {cfg.source}.\n"
        click.echo(text)
        return 0
    rules = all_rules()
    if as_json:
        click.echo(json.dumps([_rule_dict(r) for r in rules], indent=2))
        return 0
    from rich.markup import escape
    from rich.table import Table

    t = Table(title="trainproof rules")
    for col in ("id", "level", "group", "summary"):
        t.add_column(col)
    for r in rules:
        t.add_row(r.id, r.level.value, r.group, escape(r.text("summary")))
    stdout_console().print(t)
    return 0


def _rule_dict(r) -> dict:
    return {
        "id": r.id,
        "level": r.level.value,
        "group": r.group,
        "summary": r.text("summary"),
        "detects": r.text("detects"),
        "why": r.text("why"),
        "not_mean": r.text("not_mean"),
        "causes": r.text("causes"),
        "try": r.text("try_"),
        "hint": r.hint,
        "needs": [{"series": list(n.names), "min_points": n.min_points} for n in r.needs],
        "thresholds": list(r.thresholds),
        "source": r.source,
    }
