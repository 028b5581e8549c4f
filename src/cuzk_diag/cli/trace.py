"""`cuzk-diag trace`: the run as a Chrome / Perfetto timeline."""

from __future__ import annotations

from typing import IO

import click

from cuzk_diag.cli import UsageError, cli
from cuzk_diag.cli.options import (
    config_option,
    input_progress,
    jobs_option,
    quiet_progress_option,
    stdout,
)
from cuzk_diag.errors import CuzkDiagError
from cuzk_diag.exit_codes import ExitCode


@cli.command("trace")
@click.argument(
    "logs",
    nargs=-1,
    required=True,
    metavar="LOG...",
    type=click.Path(exists=True, dir_okay=False, allow_dash=True),
)
@click.option(
    "-o", "--output", required=True, metavar="FILE", help="Trace file to write (- for stdout)."
)
@click.option(
    "--findings/--no-findings",
    default=True,
    show_default=True,
    help="Run the rules on the records as they are read and tag the calls each finding "
    "applies to (the trace waits in a temporary file beside FILE until the run is read); "
    "--no-findings writes the trace straight to FILE with flat memory.",
)
@config_option
@jobs_option
@quiet_progress_option
def trace_cmd(
    logs: tuple[str, ...],
    output: str,
    findings: bool,
    config_path: str | None,
    jobs: int | None,
    quiet: bool,
) -> int:
    """Write the run as a timeline in the Chrome Trace Event JSON format.

    Open the file in https://ui.perfetto.dev or chrome://tracing: one process per GPU with a
    GPU-thread and a CPU-prep track per worker (each call with its lock wait, NTT+H, batch
    add, tail MSM and epilogue nested inside), synthesis slots, proof bands and counters.
    See docs/trace.md.
    """
    import os

    from cuzk_diag.trace import write_trace, write_trace_with_findings

    if list(logs).count("-") > 1:
        raise UsageError("stdin (-) can be read only once")
    config = None
    if findings:
        from cuzk_diag.config import load_config

        try:
            config = load_config(config_path)
        except CuzkDiagError as exc:
            raise UsageError(str(exc)) from None
    fh: IO[str]
    if output == "-":
        fh = stdout()
    else:
        try:
            fh = open(output, "w", encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"{output}: cannot write: {exc.strerror or exc}") from None
    try:
        with input_progress(logs, quiet) as progress:
            if findings:
                spool = None if output == "-" else os.path.dirname(os.path.abspath(output))
                writer, end, _ = write_trace_with_findings(
                    list(logs), fh, config, jobs=jobs, spool_dir=spool, progress=progress
                )
            else:
                writer, end = write_trace(list(logs), fh, jobs=jobs, progress=progress)
    except CuzkDiagError as exc:
        raise UsageError(str(exc)) from None
    finally:
        if output != "-":
            fh.close()
    if writer.calls == 0:
        click.echo("cuzk-diag: warning: no GPU call found in the input", err=True)
    unclocked = (
        f" ({writer.unclocked} without a TIMELINE clock, laid end to end)"
        if writer.unclocked
        else ""
    )
    click.echo(
        f"cuzk-diag: {writer.calls} GPU calls, {writer.events} trace events -> {output}"
        f"{unclocked}; {end.accounting.lines_total} lines read",
        err=True,
    )
    return ExitCode.OK
