"""Many logs of many provers into one dataset, and a report over the fleet.

    from cuzk_diag.fleet import build_fleet, fleet_report
    build_fleet(["/var/log/provers"], "fleet-ds", jobs=4)
    report = fleet_report("fleet-ds")
    print(report.attention)

``build_fleet`` walks the inputs, groups rotated files per host, reads each group in a worker
(a local process pool or a Dask cluster) and writes a Hive-partitioned Parquet dataset; files
that did not change since the last build are not read again. ``fleet_report`` runs the fleet
rules over the dataset. Layout and queries: docs/fleet.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cuzk_diag.config import Config

if TYPE_CHECKING:
    from cuzk_diag.fleet.dataset import BuildSummary
    from cuzk_diag.fleet.discover import Unit
    from cuzk_diag.fleet.report import FleetReport
    from cuzk_diag.fleet.task import UnitResult


def build_fleet(
    inputs: Sequence[str],
    out: str | Path,
    *,
    jobs: int = 1,
    engine: str = "local",
    scheduler: str | None = None,
    host_from: str | None = None,
    rebuild: bool = False,
    config: Config | None = None,
    on_unit: Callable[[Unit, UnitResult | None], None] | None = None,
    on_discovered: Callable[[Sequence[Unit]], None] | None = None,
) -> BuildSummary:
    """Build or update the fleet dataset at ``out`` from log files, directories and globs."""
    from cuzk_diag.errors import InputError
    from cuzk_diag.fleet.dataset import build, clear
    from cuzk_diag.fleet.discover import discover
    from cuzk_diag.fleet.engines import dask_runner, local_runner

    found = discover(inputs, host_from)
    if on_discovered:
        on_discovered(found.units)
    host_source = "regex" if host_from else "directory"
    if engine == "local":
        runner = local_runner(jobs, host_source, config)
    elif engine == "dask":
        runner = dask_runner(scheduler, host_source, config)
    else:
        raise InputError(f"unknown engine {engine!r} (expected local or dask)")
    if rebuild:
        clear(out)
    return build(found.units, out, runner, on_unit=on_unit)


def fleet_report(root: str | Path, config: Config | None = None) -> FleetReport:
    """Diagnose the fleet dataset at ``root`` (see ``cuzk_diag.fleet.report``)."""
    from cuzk_diag.fleet.report import fleet_report as _report

    return _report(root, config)


__all__ = ["build_fleet", "fleet_report"]
