"""`cuzk-diag analyze`: diagnose one run and print the report."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import IO, Any

import click

from cuzk_diag.cli import UsageError, cli
from cuzk_diag.errors import CuzkDiagError
from cuzk_diag.exit_codes import ExitCode
from cuzk_diag.report import names as report_names

#: Inputs at least this large get a progress bar (when stderr is a terminal).
PROGRESS_MIN_BYTES = 64 << 20


@cli.command("analyze")
@click.argument(
    "logs",
    nargs=-1,
    required=True,
    metavar="LOG...",
    type=click.Path(exists=True, dir_okay=False, allow_dash=True),
)
@click.option("-o", "--output", metavar="FILE", help="Write the report to FILE instead of stdout.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(report_names()),
    default="console",
    show_default=True,
    help="Report format.",
)
@click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour the console report (auto: only on a terminal and without NO_COLOR).",
)
@click.option(
    "--select",
    multiple=True,
    metavar="RULES",
    help="Run only these rules: codes, code prefixes or slugs, comma-separated or repeated.",
)
@click.option("--ignore", multiple=True, metavar="RULES", help="Skip these rules (as --select).")
@click.option(
    "--config",
    "config_path",
    metavar="FILE",
    help="TOML config (a pyproject.toml or a plain file); default: the nearest pyproject.toml "
    "with a [tool.cuzk-diag] table.",
)
@click.option(
    "--fail-on",
    type=click.Choice(["info", "warning", "error"], case_sensitive=False),
    default=None,
    help="Exit 1 when a finding is at least this severe (default: never, or fail-on from the "
    "config).",
)
@click.pass_context
def analyze_cmd(
    ctx: click.Context,
    logs: tuple[str, ...],
    output: str | None,
    fmt: str,
    color: str,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    config_path: str | None,
    fail_on: str | None,
) -> None:
    """Diagnose a cuzk daemon log: run facts, findings with their numbers and advice, stage
    statistics and a waterfall of a typical partition.

    LOG is a path (.gz and .zst are read too) or - for stdin; several LOGs are one run. Only
    the report goes to stdout; progress and warnings go to stderr.
    """
    from cuzk_diag.analysis import analyze
    from cuzk_diag.config import load_config
    from cuzk_diag.records import Severity
    from cuzk_diag.report import get_reporter
    from cuzk_diag.report.common import counts_text

    if list(logs).count("-") > 1:
        raise UsageError("stdin (-) can be read only once")
    try:
        config = load_config(config_path).with_cli(select, ignore, fail_on)
        with _progress(logs) as progress:
            result = analyze(list(logs), config, progress=progress)
    except CuzkDiagError as exc:
        raise UsageError(str(exc)) from None
    if result.facts.partitions == 0:
        click.echo("cuzk-diag: warning: no GPU call found in the input", err=True)
    render = get_reporter(fmt)
    if output and output != "-":
        try:
            with open(output, "w", encoding="utf-8") as fh:
                render(result, fh, color=color)
        except OSError as exc:
            raise UsageError(f"{output}: cannot write: {exc.strerror or exc}") from None
        click.echo(
            f"cuzk-diag: wrote {fmt} report to {output} ({counts_text(result.counts())})",
            err=True,
        )
    else:
        out: IO[str] = click.get_text_stream("stdout")
        render(result, out, color=color)
        out.flush()
    threshold = config.fail_on
    if threshold is not None and result.at_or_above(Severity(threshold)):
        ctx.exit(ExitCode.FINDINGS)


@contextmanager
def _progress(logs: tuple[str, ...]) -> Iterator[Any]:
    """A progress callback on stderr for large inputs read from a terminal session, else None."""
    from cuzk_diag.sources import input_size

    sizes = [input_size(p) for p in logs]
    total = sum(s for s in sizes if s) if all(s is not None for s in sizes) else None
    stderr = sys.stderr
    if total is None or total < PROGRESS_MIN_BYTES or not stderr.isatty():
        with nullcontext(None) as none:
            yield none
        return
    from cuzk_diag.report.console import progress_bar

    with progress_bar(stderr, total) as advance:
        yield advance
