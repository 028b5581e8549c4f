"""`cuzk-diag export`: partition records (default) or the classified line table."""

from __future__ import annotations

import json

import click

from cuzk_diag.cli import UsageError, cli, own_process
from cuzk_diag.cli.options import input_progress, jobs_option
from cuzk_diag.exit_codes import ExitCode
from cuzk_diag.records import Accounting
from cuzk_diag.sanitize import neutralise_value


@cli.command("export")
@click.argument("logs", nargs=-1, required=True, metavar="LOG...")
@click.option(
    "-o",
    "--output",
    required=True,
    metavar="FILE",
    help="Output file (- for stdout; csv/jsonl only).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["parquet", "csv", "jsonl"]),
    default=None,
    help="Output format (default: from the suffix of FILE).",
)
@click.option(
    "--lines",
    "line_table",
    is_flag=True,
    help="Export one row per input line instead of one per GPU call.",
)
@click.option(
    "--unattributed",
    is_flag=True,
    help="Also list timing lines that could not be attributed (stderr).",
)
@click.option(
    "-q", "--quiet", is_flag=True, help="No progress bar and no accounting summary on stderr."
)
@jobs_option
def export_cmd(
    logs: tuple[str, ...],
    output: str,
    fmt: str | None,
    line_table: bool,
    unattributed: bool,
    quiet: bool,
    jobs: int | None,
) -> int:
    """Write one row per GPU call (or with --lines, per log line) as Parquet, CSV or JSON Lines.

    LOG may be a path, a .gz or .zst file, or - for stdin; a Parquet export given alone is
    written again in the chosen format. Columns use the log's own key names
    (gpu_total_ms, pre_destructor_ms, ...); the schema is fixed (see docs/export.md). The
    accounting of every input line goes to stderr. With --jobs 2 (the default for a large
    file on two CPUs) a log file is assembled in two parts by two processes (several files:
    a second process parses ahead of the assembly; --lines: it parses every other chunk,
    and to Parquet the default leaves a CPU to the writer: one process on two CPUs); the
    output is the same as with --jobs 1.
    """
    from cuzk_diag.pipeline import open_sources, parquet_source
    from cuzk_diag.writers import TableWriter, format_for

    fmt = format_for(output, fmt)
    sources = open_sources(logs)
    export = parquet_source(sources)
    if export is not None and line_table:
        export.close()
        raise UsageError(
            f"{export.display} is a Parquet export of partition records; --lines needs the log"
        )
    if export is None and own_process():
        # The ingest and its writer need no pandas; pyarrow would import it (a fifth of a
        # second, ~40 MiB) at its first array made of a list or numpy array, only to learn
        # that the array is no pandas object.
        from cuzk_diag.ingest.parallel import without_pandas

        without_pandas()
    if export is not None:
        # A partition export read back and written again (e.g. Parquet -> CSV).
        from cuzk_diag.pipeline import read_export, run_metadata_of
        from cuzk_diag.records import PARTITION_SCHEMA

        run = read_export(export)
        acc = run.accounting
        with TableWriter(output, fmt, PARTITION_SCHEMA) as w:
            if run.table is not None and run.table.num_rows:
                w.write(run.table)
            w.add_metadata(run_metadata_of(run.info, acc))
        rows = w.rows
    elif line_table:
        from cuzk_diag.ingest.parallel import auto_jobs
        from cuzk_diag.ingest.stream import PacedCollector
        from cuzk_diag.linetable import LINE_DICTIONARY, LINE_SCHEMA, iter_line_tables

        acc = Accounting()
        with (
            TableWriter(output, fmt, LINE_SCHEMA, dictionary=LINE_DICTIONARY) as w,
            input_progress(logs, quiet) as progress,
            PacedCollector() as collector,
        ):
            # (A CPU is left to the writer's thread: with Parquet on two CPUs, one process
            # wrote the 250 MB log's table as fast as two, in a fifth less CPU time.)
            n = auto_jobs(sources, spare=w.threads) if jobs is None else jobs
            for table in iter_line_tables(sources, acc, progress=progress, jobs=n):
                w.write(table)
                del table
                collector.chunk()
        rows = w.rows
    else:
        from cuzk_diag.pipeline import stream_records
        from cuzk_diag.records import RunInfo
        from cuzk_diag.writers import PartitionSink

        # Streamed: one batch of records in memory at a time, so memory stays flat however
        # long the log. Rows come in completion order; the `record` column gives lock order.
        acc = Accounting()
        info = RunInfo()
        # (A stream that does not end, logs of different runs among them, leaves no file:
        # ``PartitionSink.close``.)
        sink = PartitionSink(output, fmt, info)
        with input_progress(logs, quiet) as progress:
            stream_records(
                sources,
                sink,
                acc=acc,
                info=info,
                progress=progress,
                jobs=jobs,
            )
        rows = sink.rows
        if unattributed and acc.unattributed:
            click.echo(
                f"unattributed timing lines (first {len(acc.unattributed_examples)}): "
                + ", ".join(map(str, acc.unattributed_examples)),
                err=True,
            )
    if not quiet:
        click.echo(
            accounting_summary(acc, rows, "lines" if line_table else "records", output), err=True
        )
    return ExitCode.OK


def accounting_summary(acc: Accounting, rows: int, what: str, output: str) -> str:
    d = acc.to_dict()
    fam = ", ".join(f"{k} {v}" for k, v in d["by_family"].items() if v)
    parts = [f"{rows} {what} -> {output}", f"{d['lines_total']} lines read ({fam or 'none'})"]
    issues = []
    for key, label in (
        ("malformed", "malformed"),
        ("torn_repaired", "torn TIMELINE repaired"),
        ("torn_unrepaired", "torn TIMELINE unrepaired"),
        ("unknown_timing_lines", "unknown timing lines"),
        ("unattributed", "unattributed"),
        ("invalid_values", "values their column cannot hold (in extra as invalid_<column>)"),
        ("decode_errors", "with invalid UTF-8"),
        ("oversized_lines", "oversized"),
        ("stray_cr_lines", "with a stray CR"),
        ("ansi_lines", "with ANSI colour"),
        ("journald_lines", "with journald prefix"),
    ):
        if d[key]:
            issues.append(f"{d[key]} {label}")
    if d["unknown_keys"]:
        issues.append("unknown keys: " + json.dumps(neutralise_value(d["unknown_keys"])))
    for name, why in d["truncated_inputs"].items():
        issues.append(f"{name} ends early: {why}")
    if issues:
        parts.append("; ".join(issues))
    return "cuzk-diag: " + "\n  ".join(parts)
