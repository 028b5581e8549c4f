"""`cuzk-diag rules` and `cuzk-diag explain`: the rule catalogue and one rule's documentation."""

from __future__ import annotations

import json

import click

from cuzk_diag.cli import UsageError, cli


@cli.command("rules")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: one line per rule; json: codes, slugs, options and evidence keys.",
)
def rules_cmd(fmt: str) -> None:
    """List every rule: code, slug, default severity, area and title."""
    from cuzk_diag.rules import all_rules

    rules = all_rules()
    if fmt == "json":
        click.echo(json.dumps([r.summary() for r in rules], indent=2, ensure_ascii=False))
        return
    slug_w = max(len(r.name) for r in rules)
    area_w = max(len(r.area) for r in rules)
    for r in rules:
        click.echo(
            f"{r.code}  {r.name:<{slug_w}}  {str(r.severity):<7}  {r.area:<{area_w}}  {r.title}"
        )


@cli.command("explain")
@click.argument("rule", metavar="CODE|SLUG")
def explain_cmd(rule: str) -> None:
    """Print a rule's documentation: what it flags, why it matters, example log lines, what to
    do, known false positives, its thresholds and its evidence keys."""
    from cuzk_diag.rules import get_rule, render_rule_markdown

    try:
        found = get_rule(rule)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    click.echo(render_rule_markdown(found, level=1), nl=False)
