"""`cuzk-diag compare`: two runs side by side, stage by stage."""

from __future__ import annotations

import click

from cuzk_diag.cli import UsageError, cli
from cuzk_diag.cli.check import INPUT
from cuzk_diag.cli.options import (
    allow_different_config_option,
    alpha_option,
    color_option,
    config_option,
    jobs_option,
    output_option,
    output_stream,
    quiet_progress_option,
    to_file,
)
from cuzk_diag.errors import CuzkDiagError
from cuzk_diag.report import Kind
from cuzk_diag.report import names as format_names


@cli.command("compare")
@click.argument("base", metavar="BASE", type=INPUT)
@click.argument("candidate", metavar="CANDIDATE", type=INPUT)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(format_names(Kind.COMPARISON)),
    default="console",
    show_default=True,
    help="Report format (html: one self-contained file with the runs' distributions).",
)
@output_option
@alpha_option
@allow_different_config_option
@config_option
@color_option
@jobs_option
@quiet_progress_option
def compare_cmd(
    base: str,
    candidate: str,
    fmt: str,
    output: str | None,
    alpha: float | None,
    allow_different_config: bool,
    config_path: str | None,
    color: str,
    jobs: int | None,
    quiet: bool,
) -> None:
    """Compare CANDIDATE with BASE: every stage's median and p95, the change, and whether it is
    statistically real; run-level numbers; findings present in only one run.

    Each of BASE and CANDIDATE is a log (path, .gz/.zst, -) or a Parquet export of one.
    Significance: two-sided Mann-Whitney U over the per-partition values, Holm-adjusted over the
    stages. Runs of different shape are refused unless --allow-different-config.
    """
    from cuzk_diag import compare, gate
    from cuzk_diag.cli.check import two_run_metrics
    from cuzk_diag.config import load_config

    if base == "-" and candidate == "-":
        raise UsageError("stdin (-) can be read only once")
    try:
        config = load_config(config_path)
        if alpha is None:
            table = dict((getattr(config, "raw", None) or {}).get("gates", {}) or {})
            alpha = gate.spec_from_config(
                {k: v for k, v in table.items() if k == "alpha"},
                where=getattr(config, "path", None) or "<config>",
            ).alpha
    except CuzkDiagError as exc:
        raise UsageError(str(exc)) from None
    try:
        base_m, cand_m = two_run_metrics([base], [candidate], config, jobs=jobs, quiet=quiet)
        cmp = compare.compare_metrics(
            base_m, cand_m, alpha=alpha, allow_different_config=allow_different_config
        )
    except CuzkDiagError as exc:
        raise UsageError(str(exc)) from None
    from cuzk_diag.report import render

    with output_stream(output) as out:
        render(fmt, cmp, out, color=color, kind=Kind.COMPARISON)
    if to_file(output):
        click.echo(f"cuzk-diag: wrote {fmt} comparison to {output}", err=True)
