"""`cuzk-diag check`: CI gates on a run, optionally against a baseline run."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any

import click

from cuzk_diag.cli import UsageError, cli
from cuzk_diag.cli.options import (
    allow_different_config_option,
    alpha_option,
    color_option,
    config_option,
    input_progress,
    jobs_option,
    quiet_progress_option,
    report_output,
)
from cuzk_diag.errors import CuzkDiagError
from cuzk_diag.exit_codes import ExitCode
from cuzk_diag.report import Kind
from cuzk_diag.report import names as format_names

INPUT = click.Path(exists=True, dir_okay=False, allow_dash=True)


def input_label(inputs: Sequence[str]) -> str:
    return ", ".join("<stdin>" if p == "-" else p for p in inputs)


def load_analysis(
    inputs: Sequence[str],
    config: Any,
    *,
    jobs: int | None = 1,
    quiet: bool = False,
    progress: Callable[[int], None] | None = None,
) -> tuple[Any, Any]:
    """(Analysis, Run) of logs, or of one Parquet export (detected by its PAR1 magic), with a
    progress bar on a terminal (not with ``quiet``; ``progress``: counts bytes read for a bar
    of the caller's instead) and ``--jobs`` processes."""
    from cuzk_diag.analysis import analyze_run
    from cuzk_diag.pipeline import load_run

    counting = nullcontext(progress) if progress is not None else input_progress(inputs, quiet)
    with counting as bar:
        run = load_run(list(inputs), bar, jobs=jobs, keep_table=False)
    return analyze_run(run, config, inputs=list(inputs)), run


def run_metrics(
    inputs: Sequence[str],
    config: Any,
    *,
    jobs: int | None = 1,
    quiet: bool = False,
    progress: Callable[[int], None] | None = None,
) -> Any:
    """RunMetrics of the inputs (``progress`` as for ``load_analysis``)."""
    from cuzk_diag.gate import NoDataError, metrics_from_analysis

    analysis, _ = load_analysis(inputs, config, jobs=jobs, quiet=quiet, progress=progress)
    reason = analysis.unusable()
    if reason is not None:
        raise NoDataError(reason)
    return metrics_from_analysis(analysis, input_label(inputs))


def two_run_metrics(
    first: Sequence[str],
    second: Sequence[str] | None,
    config: Any,
    *,
    jobs: int | None = 1,
    quiet: bool = False,
) -> tuple[Any, Any]:
    """RunMetrics of two runs (``second`` may be None), in the order given: side by side, the
    second in a child interpreter, when both are regular files and ``jobs`` (``auto``: two
    usable CPUs and 32 MiB or more in all) allows two processes; else one after the other. The
    metrics are the same either way; the first run's error is raised before the second's.
    Side by side, one progress bar counts the bytes both have read."""
    from cuzk_diag.ingest.parallel import auto_jobs, call_in_child, can_parallel

    if second is None:
        return run_metrics(first, config, jobs=jobs, quiet=quiet), None
    both = [*first, *second]
    n = auto_jobs(both) if jobs is None else jobs
    if n < 2 or not can_parallel(both):
        a = run_metrics(first, config, jobs=jobs, quiet=quiet)
        return a, run_metrics(second, config, jobs=jobs, quiet=quiet)
    each = max(1, n // 2)
    with input_progress(both, quiet) as bar:
        child = call_in_child(
            run_metrics, list(second), config, jobs=each, quiet=True, progress=bar
        )
        try:
            a = run_metrics(first, config, jobs=each, quiet=True, progress=bar)
        except BaseException:
            child.close()
            raise
        return a, child.result()


def _check_stdin(*groups: Sequence[str]) -> None:
    if sum(list(g).count("-") for g in groups) > 1:
        raise UsageError("stdin (-) can be read only once")


@cli.command("check")
@click.argument("logs", nargs=-1, required=True, metavar="LOG...", type=INPUT)
@click.option(
    "--baseline",
    metavar="BASE",
    type=INPUT,
    help="Reference run: a log (path, .gz/.zst, -) or a Parquet export of one (cuzk-diag export).",
)
@config_option
@click.option(
    "--gate",
    "gates",
    multiple=True,
    metavar="'METRIC OP N'",
    help="A bound, e.g. 's_per_proof <= 40' or 'prestage_fallback.rate == 0'. Repeatable; "
    "replaces configured bounds on the same metric.",
)
@click.option(
    "--regression",
    "regressions",
    multiple=True,
    metavar="'METRIC: LIMIT'",
    help="A regression limit against --baseline, e.g. 'gpu_total_ms.p50: +5%', "
    "'util_kernel: -3%' or 's_per_proof: off'. Repeatable.",
)
@click.option(
    "--fail-on",
    "--max-severity",
    "fail_on",
    type=click.Choice(["info", "warning", "error", "never"], case_sensitive=False),
    default=None,
    help="Fail on findings at or above this severity (default: error).",
)
@alpha_option
@click.option(
    "--no-default-regressions",
    is_flag=True,
    help="Drop the built-in +5% limits on s_per_proof and the median GPU kernel time.",
)
@allow_different_config_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(format_names(Kind.CHECK)),
    default="console",
    show_default=True,
    help="Report on stdout.",
)
@click.option(
    "--junit", "junit_path", metavar="FILE", help="Also write JUnit XML (one testcase per gate)."
)
@color_option
@jobs_option
@quiet_progress_option
@click.pass_context
def check_cmd(
    ctx: click.Context,
    logs: tuple[str, ...],
    baseline: str | None,
    config_path: str | None,
    gates: tuple[str, ...],
    regressions: tuple[str, ...],
    fail_on: str | None,
    alpha: float | None,
    no_default_regressions: bool,
    allow_different_config: bool,
    fmt: str,
    junit_path: str | None,
    color: str,
    jobs: int | None,
    quiet: bool,
) -> None:
    """Evaluate CI gates on LOG and exit 0 (pass), 1 (a gate failed) or 2 (unusable input).

    \b
    Built-in gates, so that `cuzk-diag check LOG` is useful with no configuration:
      - no finding at error level;
      - with --baseline: s_per_proof and the median gpu_total_ms (or the kernel-time sum
        where gpu_total_ms is absent) at most 5% worse.

    Against a baseline, a timing regression fails only when it exceeds its limit AND is
    statistically significant (one-sided Mann-Whitney U over the per-partition values at
    --alpha). Metrics without per-partition samples, such as s_per_proof, are judged by the
    limit alone. Runs of different shape (era, GPUs, gw, proof kind, cuzk-bench -c/-j) are
    refused unless --allow-different-config.

    Gates come from [tool.cuzk-diag.gates] (see docs/ci.md); --gate, --regression and
    --fail-on override them. A summary is appended to $GITHUB_STEP_SUMMARY when it is set.
    """
    from cuzk_diag import gate
    from cuzk_diag.config import load_config

    _check_stdin(logs, [baseline] if baseline else [])
    try:
        config = load_config(config_path)
        spec = build_spec(config, gates, regressions, fail_on, alpha, no_default_regressions)
    except CuzkDiagError as exc:
        raise UsageError(str(exc)) from None
    try:
        cand, base = two_run_metrics(
            logs, [baseline] if baseline else None, config, jobs=jobs, quiet=quiet
        )
        result = gate.check(spec, cand, base, allow_different_config=allow_different_config)
    except CuzkDiagError as exc:
        _report_input_error(str(exc), logs, baseline, fmt, junit_path)
        raise UsageError(str(exc)) from None

    emit(result, fmt, color)
    if junit_path:
        from cuzk_diag.report.junit import write_junit

        _write_or_fail(lambda: write_junit(result, junit_path), junit_path)
    from cuzk_diag.report.github import append_step_summary, markdown_summary

    _write_or_fail(lambda: append_step_summary(markdown_summary(result)), "$GITHUB_STEP_SUMMARY")
    code = result.exit_code
    if code is not ExitCode.OK:
        ctx.exit(int(code))


def build_spec(
    config: Any,
    gates: Sequence[str],
    regressions: Sequence[str],
    fail_on: str | None,
    alpha: float | None,
    no_default_regressions: bool,
) -> Any:
    """The configured gates with the command-line values on top."""
    from cuzk_diag import gate

    table = dict((getattr(config, "raw", None) or {}).get("gates", {}) or {})
    spec = gate.spec_from_config(table, where=getattr(config, "path", None) or "<config>")
    if not any(k in table for k in ("fail_on", "fail-on")) and getattr(config, "fail_on", None):
        # the top-level fail-on of [tool.cuzk-diag] applies when the gates table has none
        spec = spec.override(fail_on=config.fail_on)
    return spec.override(
        fail_on=gate.parse_fail_on(fail_on) if fail_on is not None else "keep",
        alpha=alpha,
        bounds=[gate.parse_bound(g, gate.Origin.CLI) for g in gates],
        regressions=[gate.parse_regression(r, gate.Origin.CLI) for r in regressions],
        default_regressions=False if no_default_regressions else None,
    )


def emit(result: Any, fmt: str, color: str) -> None:
    """The report on stdout in the chosen format (a closed stdout ends it quietly)."""
    from cuzk_diag.report import render

    with report_output() as out:
        render(fmt, result, out, color=color, kind=Kind.CHECK)


def _write_or_fail(write: Any, path: str) -> None:
    try:
        write()
    except OSError as exc:
        from cuzk_diag.writers import cannot_write

        raise cannot_write(path, exc) from None


def _report_input_error(
    message: str, logs: Sequence[str], baseline: str | None, fmt: str, junit_path: str | None
) -> None:
    """Leave a trace of an input error where CI looks: the JUnit file, annotations, summary."""
    from cuzk_diag.report.github import append_step_summary, command

    if junit_path:
        from cuzk_diag.report.junit import render_junit_error

        try:
            with open(junit_path, "w", encoding="utf-8") as fh:
                fh.write(render_junit_error(message, input_label(logs)))
        except OSError:
            pass
    if fmt == "github":
        with report_output() as out:
            out.write(command("error", message, title="cuzk-diag check: unusable input") + "\n")
    try:
        append_step_summary(
            f"## cuzk-diag check ⛔ could not be evaluated\n\nRun: `{input_label(logs)}`"
            + (f" against baseline `{baseline}`" if baseline else "")
            + f"\n\n> {message}\n"
        )
    except OSError:
        pass
