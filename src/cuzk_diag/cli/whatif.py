"""`cuzk-diag whatif`: predict s/proof and latency under another configuration, from a log."""

from __future__ import annotations

import click

from cuzk_diag.cli import UsageError, cli
from cuzk_diag.cli.check import INPUT
from cuzk_diag.cli.options import color_option, stdout
from cuzk_diag.errors import CuzkDiagError


@cli.command("whatif")
@click.argument("inputs", metavar="LOG...", nargs=-1, required=True, type=INPUT)
@click.option(
    "--set",
    "sets",
    metavar="KNOB=VALUE",
    multiple=True,
    help="Change a knob: gw, gpus, synthesis_concurrency, c, j (cuzk-bench -c/-j), or "
    "prestage=ok. Repeatable.",
)
@click.option(
    "--scale",
    "scales",
    metavar="FIELD=FACTOR",
    multiple=True,
    help="Multiply a measured stage, e.g. prep_msm_ms=0.7 (30% faster). Repeatable.",
)
@click.option(
    "--sweep",
    metavar="KNOB=V1,V2,...",
    help="One scenario per value of one knob (on top of --set/--scale), e.g. gw=1,2,3.",
)
@click.option(
    "--seeds",
    type=click.IntRange(1, 50),
    default=5,
    show_default=True,
    help="Model runs per prediction (the interval is their lowest and highest).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["console", "json", "markdown"]),
    default="console",
    show_default=True,
    help="Report on stdout.",
)
@color_option
def whatif_cmd(
    inputs: tuple[str, ...],
    sets: tuple[str, ...],
    scales: tuple[str, ...],
    sweep: str | None,
    seeds: int,
    fmt: str,
    color: str,
) -> None:
    """Predict s/proof, call latency, lock wait and GPU utilisation of this build under another
    configuration, from the log of one run.

    The daemon model replays the calls measured in LOG (whole calls resampled, so a call's
    stages stay together): first under the measured configuration, to check the model against
    the measured figures (a model error above 10% flags the predictions as unreliable), then
    under each scenario. See docs/whatif.md.

    \b
    Examples:
      cuzk-diag whatif daemon.log --set gw=2 --set c=15 --set j=10
      cuzk-diag whatif daemon.log --set prestage=ok
      cuzk-diag whatif daemon.log --scale prep_msm_ms=0.7
      cuzk-diag whatif daemon.log --sweep gw=1,2,3 --set c=15 --set j=10
    """
    from cuzk_diag.model.whatif import parse_assignments, whatif
    from cuzk_diag.pipeline import load_run
    from cuzk_diag.report.whatif import render

    if list(inputs).count("-") > 1:
        raise UsageError("stdin (-) can be read only once")
    try:
        set_map = parse_assignments(sets, "--set")
        scale_map = parse_assignments(scales, "--scale")
        run = load_run(list(inputs), keep_table=False)
        result = whatif(run, set_map, scale_map, sweep=sweep, seeds=seeds)
    except CuzkDiagError as exc:
        raise UsageError(str(exc)) from None
    out = stdout()
    render(result.to_dict(), out, fmt, color)
    out.flush()
