"""The per-unit task of a fleet build: read one rotation group, diagnose each run in it.

``process_unit`` runs in a worker process (local pool or a Dask worker) and returns plain Arrow
tables, so the driver alone writes the dataset. It never raises for bad input: an unreadable
unit comes back with its error message, to be reported and retried on the next build.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from cuzk_diag.analysis import Analysis, analyze_run
from cuzk_diag.config import Config
from cuzk_diag.errors import CuzkDiagError, InputError
from cuzk_diag.facts import kernel_time
from cuzk_diag.fleet.discover import Unit, is_url, no_regular_file, open_binary, safe_host
from cuzk_diag.fleet.runs import materialised, split_runs
from cuzk_diag.fleet.schema import FINDING_SCHEMA, RUN_SCHEMA, partition_schema
from cuzk_diag.frame import table_to_frame
from cuzk_diag.pipeline import Run, load_run


@dataclass(slots=True)
class UnitResult:
    """What one unit produced: rows for the three tables, or the reason it produced none."""

    unit_id: str
    host: str
    partitions: pa.Table | None = None  # PARTITION_SCHEMA + run_id + date
    runs: pa.Table | None = None
    findings: pa.Table | None = None
    error: str | None = None
    bytes_read: int = 0
    notes: list[str] = field(default_factory=list)


def process_unit(unit: Unit, host_source: str, config: Config | None = None) -> UnitResult:
    """Read, assemble and diagnose the unit's files, run by run; never raises for bad input."""
    cfg = config or Config()
    result = UnitResult(unit.unit_id, safe_host(unit.host_hint), bytes_read=unit.size)
    parts, runs, finds = [], [], []
    try:
        for path in unit.paths:
            if no_regular_file(path):
                raise InputError(
                    f"{path}: not a regular file (a broken link, FIFO, socket or device)"
                )
        with local_copies(unit.paths) as local, tempfile.TemporaryDirectory() as tmp:
            original = dict(zip(local, unit.paths, strict=True))
            for index, pieces in enumerate(split_runs(local)):
                with materialised(pieces, tmp) as (names, offsets):
                    run = load_run(names)
                if index == 0 and host_source != "regex":
                    result.host = safe_host(journald_host(run) or unit.host_hint)
                files = [original[p.path] for p in pieces]
                run_id = f"{unit.unit_id}-{index}"
                shift_lines(run, offsets)
                analysis = analyze_run(run, cfg, inputs=files)
                reason = analysis.unusable()
                if reason is not None:  # nothing to diagnose (an empty or damaged piece)
                    result.notes.append(reason)
                    continue
                parts.append(partition_rows(run, run_id))
                runs.append(run_row(analysis, run_id, result.host, files))
                finds += finding_rows(analysis, run_id, result.host, offsets[0])
    except (CuzkDiagError, OSError, EOFError) as exc:
        result.error = str(exc) or type(exc).__name__
        return result
    if not runs:
        result.error = "; ".join(result.notes) or f"{', '.join(unit.paths)}: no run found"
        return result
    result.partitions = pa.concat_tables(parts) if parts else None
    result.runs = pa.Table.from_pylist(runs, RUN_SCHEMA)
    result.findings = pa.Table.from_pylist(finds, FINDING_SCHEMA)
    return result


def shift_lines(run: Run, offsets: Sequence[int]) -> None:
    """Line numbers of records read from pieces of files, as in the original files."""
    if not any(offsets) or run.table is None or not run.table.num_rows:
        return
    table = run.table
    shift = pc.take(pa.array(offsets, pa.int64()), table.column("source"))
    for name in ("first_line", "last_line"):
        idx = table.schema.get_field_index(name)
        table = table.set_column(idx, name, pc.add(table.column(name), shift))
    run.table = table
    run.partitions = table_to_frame(table)


@contextmanager
def local_copies(paths: list[str]) -> Iterator[list[str]]:
    """Local paths of the unit's files: URLs (s3://, gs://, ...) are copied to a temporary
    directory of this worker for the time of the task; local paths are used as they are."""
    if not any(is_url(p) for p in paths):
        yield paths
        return
    with tempfile.TemporaryDirectory(prefix="cuzk-diag-fleet.") as tmp:
        local = []
        for i, p in enumerate(paths):
            if not is_url(p):
                local.append(p)
                continue
            dest = os.path.join(tmp, f"{i}-{p.rsplit('/', 1)[-1]}")
            try:
                with open_binary(p) as src, open(dest, "wb") as dst:
                    shutil.copyfileobj(src, dst, 4 << 20)
            except OSError as exc:
                raise InputError(f"{p}: cannot read ({exc})") from None
            local.append(dest)
        yield local


def journald_host(run: Run) -> str | None:
    """The host named by the journald/syslog prefixes of most lines, if any."""
    sources = run.accounting.journald_sources
    if not sources:
        return None
    top, _ = max(sources.items(), key=lambda kv: (kv[1], kv[0]))
    return top.split(" ", 1)[0] or None


def partition_rows(run: Run, run_id: str) -> pa.Table:
    """The run's partition records with their kernel time, the run id and the UTC date of
    each call (from ``start_ts``; ``unknown`` where the log has no wall clock)."""
    table = run.table
    assert table is not None
    n = table.num_rows
    days = pc.strftime(table.column("start_ts"), format="%Y-%m-%d")
    dates = pc.fill_null(days, "unknown") if n else pa.array([], pa.string())
    kernel = kernel_time(run.partitions)[0] if n else pd.Series([], dtype="float64")
    table = table.append_column("kernel_ms", pa.array(kernel, pa.float64(), from_pandas=True))
    table = table.append_column("run_id", pa.array([run_id] * n, pa.string()))
    table = table.append_column("date", dates)
    return table.cast(partition_schema())


def run_row(analysis: Analysis, run_id: str, host: str, files: Sequence[str]) -> dict[str, Any]:
    """One row of ``runs/``: the run's configuration, performance and finding counts."""
    f = analysis.facts
    df = analysis.partitions
    first = _ts(df, "start_ts", "min")
    last = _ts(df, "end_ts", "max")
    counts = analysis.counts()
    return {
        "run_id": run_id,
        "host": host,
        "files": json.dumps(list(files)),
        "era": f.era,
        "n_gpus": f.n_gpus or None,
        "gw": f.gw,
        "gpu_threads": f.gpu_threads,
        "proofs": f.proofs,
        "proofs_completed": f.proofs_completed,
        "proofs_failed": f.proofs_failed,
        "partitions": f.partitions,
        "s_per_proof": f.s_per_proof,
        "gpu_util": f.gpu_util,
        "held_util": f.held_util,
        "kernel_util": f.kernel_util,
        "gpu_total_ms_p50": _median(df, "gpu_total_ms"),
        "kernel_ms_p50": _median(df.assign(kernel_ms=kernel_time(df)[0]), "kernel_ms"),
        "first_ts": first,
        "last_ts": last,
        "errors": counts.get("error", 0),
        "warnings": counts.get("warning", 0),
        "infos": counts.get("info", 0),
    }


def _ts(df: pd.DataFrame, col: str, pick: str) -> datetime | None:
    if col not in df.columns:
        return None
    vals = pd.to_datetime(df[col], utc=True).dropna()
    if vals.empty:
        return None
    value: datetime = (vals.min() if pick == "min" else vals.max()).to_pydatetime()
    return value


def _median(df: Any, col: str) -> float | None:
    if col not in df.columns:
        return None
    vals = df[col].dropna()
    return float(vals.median()) if len(vals) else None


def finding_rows(
    analysis: Analysis, run_id: str, host: str, offset: int = 0
) -> list[dict[str, Any]]:
    """One row per finding; line numbers as in the run's first file."""
    return [
        {
            "run_id": run_id,
            "host": host,
            "code": f.code,
            "name": f.name,
            "severity": str(f.severity),
            "message": f.message,
            "evidence": json.dumps(f.evidence, sort_keys=True),
            "lines": json.dumps([n + offset for n in f.lines]),
        }
        for f in analysis.findings
    ]
