"""`cuzk-diag fleet` and `cuzk-diag fleet-report`: many provers' logs into one dataset."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from cuzk_diag.cli import UsageError, cli
from cuzk_diag.cli.options import (
    color_option,
    config_option,
    output_option,
    output_stream,
    to_file,
)
from cuzk_diag.errors import CuzkDiagError
from cuzk_diag.exit_codes import ExitCode
from cuzk_diag.report import Kind
from cuzk_diag.report import names as format_names


@cli.command("fleet")
@click.argument("logs", nargs=-1, required=True, metavar="LOGS...")
@click.option(
    "-o", "--output", "out", required=True, metavar="DATASET", help="Dataset directory to write."
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes (default: the number of cores).",
)
@click.option(
    "--engine",
    type=click.Choice(["local", "dask"]),
    default="local",
    show_default=True,
    help="Where the per-file work runs: this machine's process pool, or a Dask cluster.",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    help="Dask scheduler address (tcp://host:8786); without it --engine dask starts a local "
    "cluster.",
)
@click.option(
    "--host-from",
    metavar="REGEX",
    help="Name each file's host by this regular expression on its path (group 'host', else "
    "group 1, else the match).",
)
@click.option("--rebuild", is_flag=True, help="Read every file again, not only changed ones.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no summary on stderr.")
@config_option
@click.pass_context
def fleet_cmd(
    ctx: click.Context,
    logs: Sequence[str],
    out: str,
    jobs: int | None,
    engine: str,
    scheduler: str | None,
    host_from: str | None,
    rebuild: bool,
    quiet: bool,
    config_path: str | None,
) -> None:
    """Read the logs of many provers into one Parquet dataset (DATASET).

    LOGS are files, directories (walked for *.log, *.log.N, .gz and .zst) or globs. Each file is
    given a host (--host-from, else the journald prefix in the log, else the directory
    HOST/...); rotated files of one host (daemon.log.2.gz, daemon.log.1, daemon.log) are read
    together, oldest first, so a run stays one run. Re-running over the same tree reads only
    new or changed files. Layout and queries: docs/fleet.md.

    Exit code 0 when every file was read, 2 when some could not be (the rest is written).
    """
    from cuzk_diag.config import load_config
    from cuzk_diag.fleet import build_fleet
    from cuzk_diag.fleet.engines import default_jobs

    if scheduler and engine != "dask":
        raise UsageError("--scheduler needs --engine dask")
    try:
        config = load_config(config_path)
    except CuzkDiagError as exc:
        raise UsageError(str(exc)) from None
    show = not quiet and sys.stderr.isatty()
    from cuzk_diag.report.fleet_progress import FleetProgress

    with FleetProgress(sys.stderr, enabled=show) as progress:
        try:
            summary = build_fleet(
                logs,
                out,
                jobs=jobs or default_jobs(),
                engine=engine,
                scheduler=scheduler,
                host_from=host_from,
                rebuild=rebuild,
                config=config,
                on_unit=progress.unit_done,
                on_discovered=progress.start,
            )
        except CuzkDiagError as exc:
            raise UsageError(str(exc)) from None
    err = sys.stderr
    if not quiet:
        err.write(
            f"cuzk-diag: fleet: {len(summary.built)} file group(s) read, "
            f"{len(summary.unchanged)} unchanged, {len(summary.failed)} failed; "
            f"{summary.rows:,} GPU calls written to {out}\n"
        )
    for _group, message in sorted(summary.failed.items()):
        err.write(f"cuzk-diag: error: {message}\n")
    if summary.failed:
        ctx.exit(ExitCode.USAGE)


@cli.command("fleet-report")
@click.argument("dataset", metavar="DATASET")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(format_names(Kind.FLEET)),
    default="console",
    show_default=True,
    help="Report format.",
)
@output_option
@click.option(
    "--fail-on",
    type=click.Choice(["info", "warning", "error", "never"]),
    default="never",
    show_default=True,
    help="Exit 1 when a fleet finding reaches this severity.",
)
@config_option
@color_option
@click.pass_context
def fleet_report_cmd(
    ctx: click.Context,
    dataset: str,
    fmt: str,
    output: str | None,
    fail_on: str,
    config_path: str | None,
    color: str,
) -> None:
    """Report on a fleet DATASET built by `cuzk-diag fleet`: per host its latest run, findings
    across hosts, configurations, hosts slower than their peers (host-outlier), hosts that got
    slower (host-trend) and hosts configured differently (config-drift)."""
    from cuzk_diag.config import load_config
    from cuzk_diag.fleet import fleet_report
    from cuzk_diag.records import Severity
    from cuzk_diag.report import render

    try:
        report = fleet_report(dataset, load_config(config_path))
    except CuzkDiagError as exc:
        raise UsageError(str(exc)) from None
    with output_stream(output) as out:
        render(fmt, report, out, color=color, kind=Kind.FLEET)
    if to_file(output):
        click.echo(f"cuzk-diag: wrote {fmt} fleet report to {output}", err=True)
    if fail_on != "never":
        level = Severity.parse(fail_on)
        if any(f.severity >= level for f in report.findings):
            ctx.exit(ExitCode.FINDINGS)
