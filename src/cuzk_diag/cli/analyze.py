"""`cuzk-diag analyze`: diagnose one run and print the report."""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

import click
from click.core import ParameterSource

from cuzk_diag.cli import UsageError, cli
from cuzk_diag.cli.options import (
    color_option,
    config_option,
    input_progress,
    jobs_option,
    output_option,
    output_stream,
    quiet_progress_option,
    silence_stdout,
    stdout,
    to_file,
)
from cuzk_diag.errors import CuzkDiagError
from cuzk_diag.exit_codes import ExitCode
from cuzk_diag.heap import hand_back
from cuzk_diag.report import names as report_names

if TYPE_CHECKING:
    from cuzk_diag.analysis import Analysis
    from cuzk_diag.config import Config


@cli.command("analyze")
@click.argument(
    "logs",
    nargs=-1,
    required=False,
    metavar="[LOG]...",
    type=click.Path(exists=True, dir_okay=False, allow_dash=True),
)
@output_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(report_names()),
    default="console",
    show_default=True,
    help="Report format.",
)
@color_option
@click.option(
    "--select",
    multiple=True,
    metavar="RULES",
    help="Run only these rules: codes, code prefixes or slugs, comma-separated or repeated.",
)
@click.option("--ignore", multiple=True, metavar="RULES", help="Skip these rules (as --select).")
@config_option
@click.option(
    "--fail-on",
    type=click.Choice(["info", "warning", "error"], case_sensitive=False),
    default=None,
    help="Exit 1 when a finding is at least this severe (default: never, or fail-on from the "
    "config).",
)
@click.option(
    "--follow",
    "follow",
    metavar="PATH",
    type=click.Path(dir_okay=False),
    help="Follow the log file PATH as it grows, like tail -F (survives rotation and truncation, "
    "waits for the file to appear); implies live mode.",
)
@click.option(
    "--live/--no-live",
    "live",
    default=None,
    help="Live mode: on by default when reading - or --follow. --no-live waits for the end of "
    "input (or Ctrl-C) and prints only the report.",
)
@click.option(
    "--window",
    type=click.IntRange(min=10),
    default=500,
    show_default=True,
    metavar="N",
    help="Live mode: the recent partitions the live figures and rules look at.",
)
@click.option(
    "--max-records",
    type=click.IntRange(min=1000),
    default=100_000,
    show_default=True,
    metavar="N",
    help="Live mode: partition records kept for the final report (under 1 KB each); "
    "beyond N the final report covers the last N.",
)
@jobs_option
@quiet_progress_option
@click.option(
    "--estimates/--no-estimates",
    default=True,
    show_default=True,
    help="Findings whose advice is a configuration change (workers per GPU, pre-staging, "
    "concurrent proofs) carry what the daemon model predicts for it, as `cuzk-diag whatif` "
    "would (a few seconds whatever the log's size; not in live mode). See docs/whatif.md.",
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
    follow: str | None,
    live: bool | None,
    window: int,
    max_records: int,
    jobs: int | None,
    quiet: bool,
    estimates: bool,
) -> None:
    """Diagnose a cuzk daemon log: run facts, findings with their numbers and advice, stage
    statistics and a waterfall of a typical partition.

    LOG is a path (.gz and .zst are read too) or - for stdin; several LOGs are one run. Only
    the report goes to stdout; progress and warnings go to stderr.

    \b
    Live mode (reading -, or --follow PATH) analyses the log as it is written:
      tail -f daemon.log | cuzk-diag analyze -
      cuzk-diag analyze --follow daemon.log
    On a terminal a dashboard shows proofs done, partitions in flight, s/proof, GPU
    utilisation, stage medians and the current findings. With stdout piped and no
    --format, JSON Lines events are written as they happen (type: partition, finding,
    finding_cleared, summary). End of input prints the final report (in JSON Lines mode: a
    final summary event holding it); so do Ctrl-C, SIGTERM and SIGHUP, which then exit 130,
    143 and 129. Reading - with --no-live ends the same way.

    \b
    Windowed figures (the last --window partitions): GPU and kernel utilisation, the
    stage table's n/median/p95, and the findings, which the rules recompute at most
    twice a second (every 5 s while input waits to be read). s/proof is taken over
    the last 20 completed proofs. Whole-run figures: proofs done, partitions, lines
    read, malformed, unattributed and the "run" stage columns (a streaming sketch,
    within 1%). The final report equals analyze on the same input up to --max-records
    partitions, and covers the last --max-records beyond. See docs/live.md.
    """
    from cuzk_diag.config import load_config

    if list(logs).count("-") > 1:
        raise UsageError("stdin (-) can be read only once")
    if follow is not None and logs:
        raise UsageError("give either LOG arguments or --follow PATH, not both")
    if follow is None and not logs:
        raise UsageError("Missing argument 'LOG...' (a path, or - for stdin) or --follow PATH")
    try:
        config = load_config(config_path).with_cli(select, ignore, fail_on)
    except CuzkDiagError as exc:
        raise UsageError(str(exc)) from None
    inputs = [follow] if follow is not None else list(logs)
    is_live = live if live is not None else (follow is not None or "-" in logs)
    signum: int | None = None
    if is_live or follow is not None or "-" in logs:
        # stdin and --follow are read by the live engine even with --no-live: it ends on
        # Ctrl-C, SIGTERM or SIGHUP with the report of what was read.
        fmt_given = ctx.get_parameter_source("fmt") is not ParameterSource.DEFAULT
        result, signum = _run_live(
            inputs,
            config,
            follow=follow is not None,
            show=is_live,
            fmt=fmt,
            fmt_given=fmt_given,
            color=color,
            output=output,
            window=window,
            max_records=max_records,
            jobs=jobs,
        )
    else:
        result = _run_batch(
            inputs, config, fmt, color, output, jobs=jobs, quiet=quiet, estimates=estimates
        )
    _exit_code(ctx, config, result, signum)


def _run_batch(
    logs: list[str],
    config: Config,
    fmt: str,
    color: str,
    output: str | None,
    *,
    jobs: int | None = 1,
    quiet: bool = False,
    estimates: bool = False,
) -> Analysis:
    from cuzk_diag.pipeline import load_run

    try:
        with input_progress(logs, quiet) as progress:
            run = load_run(list(logs), progress, jobs=jobs, keep_table=False)
        # (The analysis imports pandas: after the ingest, whose children start sooner so.)
        from cuzk_diag.analysis import analyze_run

        hand_back()
        result = analyze_run(run, config, inputs=list(logs), estimates=estimates)
    except CuzkDiagError as exc:
        raise UsageError(str(exc)) from None
    hand_back()
    _write_report(result, fmt, color, output)
    return result


def _write_report(result: Analysis, fmt: str, color: str, output: str | None) -> None:
    """The report to stdout or ``--output``, as ``analyze`` prints it."""
    from cuzk_diag.report import get_reporter
    from cuzk_diag.report.common import counts_text

    render = get_reporter(fmt)
    with output_stream(output) as out:
        render(result, out, color=color)
    if to_file(output):
        click.echo(
            f"cuzk-diag: wrote {fmt} report to {output} ({counts_text(result.counts())})",
            err=True,
        )


def _exit_code(
    ctx: click.Context, config: Config, result: Analysis, signum: int | None = None
) -> None:
    """The verdict once the report is out: a signal's code, 2 for input with nothing to
    diagnose, 1 for a finding at or above --fail-on, else 0."""
    import signal

    from cuzk_diag.records import Severity

    if signum is not None:
        click.echo(
            f"cuzk-diag: stopped by {signal.Signals(signum).name}; the report covers the input "
            "read until then",
            err=True,
        )
        ctx.exit(ExitCode.of_signal(signum))
    reason = result.unusable()
    if reason is not None:
        raise UsageError(reason)
    threshold = config.fail_on
    if threshold is not None and result.at_or_above(Severity(threshold)):
        ctx.exit(ExitCode.FINDINGS)


def _run_live(
    inputs: list[str],
    config: Config,
    *,
    follow: bool,
    show: bool,
    fmt: str,
    fmt_given: bool,
    color: str,
    output: str | None,
    window: int,
    max_records: int,
    jobs: int | None,
) -> tuple[Analysis, int | None]:
    """Live mode: a dashboard on a terminal, JSON Lines into a pipe, then the final report.

    Returns the final analysis and the signal that ended the run, if one did."""
    from cuzk_diag.live import LiveOptions, run_live
    from cuzk_diag.report import Kind, lookup
    from cuzk_diag.sinks import ReportOnly, Sink

    out: IO[str] = stdout()
    to_stdout = not output or output == "-"
    sink: Sink
    jsonl = False
    if not show or (fmt_given and fmt != "console"):
        sink = ReportOnly()
    elif out.isatty() and fmt == "console":
        sink = lookup(Kind.STREAM, "dashboard")(out, color=color)
    elif not fmt_given:
        sink = lookup(Kind.STREAM, "jsonl")(out)
        jsonl = True
    else:
        sink = ReportOnly()
    # (Rules in a second process unless one process is asked for: ``rules_in_child`` looks
    # for the second CPU.)
    options = LiveOptions(window=window, max_records=max_records, rules_child=jobs != 1)
    try:
        live = run_live(inputs, config, sink, options, follow=follow)
    except CuzkDiagError as exc:
        raise UsageError(str(exc)) from None
    if live.output_closed:
        # The reader downstream went away (`| head`): the output ends quietly; the verdict on
        # what was read stays the exit code.
        silence_stdout()
        return live.analysis, live.signal
    if live.records_dropped:
        kept = live.partitions - live.records_dropped
        click.echo(
            f"cuzk-diag: warning: the final report covers the last {kept:,} of "
            f"{live.partitions:,} partitions (--max-records {max_records:,})",
            err=True,
        )
    if not (jsonl and to_stdout):
        # (In JSON Lines mode the final summary event holds the JSON report.)
        _write_report(live.analysis, fmt, color, output)
    return live.analysis, live.signal
