"""The fleet report: per host its latest run, findings across hosts, settings, fleet findings."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from cuzk_diag import __version__
from cuzk_diag.config import Config
from cuzk_diag.fleet.context import PARTITION_COLUMNS, FleetContext
from cuzk_diag.fleet.dataset import read_table
from cuzk_diag.fleet.schema import FLEET_SCHEMA_VERSION
from cuzk_diag.records import Finding, Severity
from cuzk_diag.rules import run_rules
from cuzk_diag.rules.base import clean_value

HOST_COLUMNS = (
    "host",
    "runs",
    "era",
    "n_gpus",
    "gw",
    "gpu_threads",
    "s_per_proof",
    "gpu_util",
    "kernel_util",
    "gpu_total_ms_p50",
    "kernel_ms_p50",
    "first_ts",
    "last_ts",
    "findings",
)
SETTINGS = ("era", "n_gpus", "gw", "gpu_threads")


@dataclass(slots=True)
class FleetReport:
    """Everything ``fleet-report`` shows, in plain Python values."""

    dataset: str
    hosts: list[dict[str, Any]]  # one row per host: its latest run and its finding codes
    by_code: list[dict[str, Any]]  # code -> hosts whose latest run has the finding
    settings: list[dict[str, Any]]  # distinct (era, GPUs, gw, gpu_threads) with their hosts
    findings: list[Finding]  # fleet rules (outliers, trends, drift), most severe first
    runs: int = 0
    partitions: int = 0
    # hosts whose latest run has an error finding, or that a fleet rule names
    attention: list[str] = field(default_factory=list)
    # per host, the kernel time of each call of its latest run (for plots; not in the JSON)
    kernel_samples: dict[str, list[float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": FLEET_SCHEMA_VERSION,
            "tool": {"name": "cuzk-diag", "version": __version__},
            "dataset": self.dataset,
            "runs": self.runs,
            "partitions": self.partitions,
            "hosts": clean_value(self.hosts),
            "findings_by_code": clean_value(self.by_code),
            "settings": clean_value(self.settings),
            "findings": [clean_value(f.to_dict()) for f in self.findings],
            "attention": list(self.attention),
        }


def load_context(root: str | Path, config: Config | None = None) -> FleetContext:
    """The dataset's three tables as frames (only the partition columns fleet rules read)."""
    runs = _frame(read_table(root, "runs"))
    findings = _frame(read_table(root, "findings"))
    parts = _frame(read_table(root, "partitions").select(list(PARTITION_COLUMNS)))
    return FleetContext(runs, parts, findings)


def _frame(table: pa.Table) -> pd.DataFrame:
    """Integers stay integers (nullable), whatever nulls they hold."""
    return table.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)


def fleet_report(root: str | Path, config: Config | None = None) -> FleetReport:
    """Read a fleet dataset and diagnose the fleet."""
    cfg = config or Config()
    ctx = load_context(root, cfg)
    fleet_findings = run_rules(ctx, cfg, scope="fleet")
    latest = ctx.latest_runs()
    run_findings = ctx.findings[ctx.findings["run_id"].isin(set(latest["run_id"]))]
    hosts = _host_rows(ctx, latest, run_findings)
    by_code = _by_code(run_findings, len(hosts))
    attention = set(run_findings.loc[run_findings["severity"] == str(Severity.ERROR), "host"])
    attention |= {str(f.evidence["host"]) for f in fleet_findings if "host" in f.evidence}
    latest_parts = ctx.partitions[ctx.partitions["run_id"].isin(set(latest["run_id"]))]
    samples = {
        str(host): [float(v) for v in g["kernel_ms"].dropna()]
        for host, g in latest_parts.groupby("host", sort=True)
    }
    return FleetReport(
        kernel_samples=samples,
        dataset=str(root),
        hosts=hosts,
        by_code=by_code,
        settings=_settings(latest),
        findings=fleet_findings,
        runs=len(ctx.runs),
        partitions=len(ctx.partitions),
        attention=sorted(attention),
    )


def _host_rows(
    ctx: FleetContext, latest: pd.DataFrame, findings: pd.DataFrame
) -> list[dict[str, Any]]:
    counts = ctx.runs.groupby("host").size().to_dict() if len(ctx.runs) else {}
    codes = findings.groupby("host")["code"].apply(lambda s: sorted(set(s))).to_dict()
    rows = []
    for _, r in latest.iterrows():
        row = {c: r.get(c) for c in HOST_COLUMNS if c in latest.columns}
        row["runs"] = int(counts.get(r["host"], 0))
        row["findings"] = codes.get(r["host"], [])
        for c in ("first_ts", "last_ts"):
            row[c] = None if pd.isna(row.get(c)) else pd.Timestamp(row[c]).isoformat()
        rows.append({c: row.get(c) for c in HOST_COLUMNS})
    return rows


def _by_code(findings: pd.DataFrame, n_hosts: int) -> list[dict[str, Any]]:
    out = []
    for code, g in findings.groupby("code"):
        hosts = sorted(set(g["host"]))
        worst = max(Severity.parse(s) for s in g["severity"])
        out.append(
            {
                "code": code,
                "name": g["name"].iloc[0],
                "severity": str(worst),
                "hosts": hosts,
                "n_hosts": len(hosts),
                "of_hosts": n_hosts,
            }
        )
    out.sort(key=lambda d: (-int(Severity.parse(d["severity"])), -d["n_hosts"], d["code"]))
    return out


def _settings(latest: pd.DataFrame) -> list[dict[str, Any]]:
    """Each combination of settings in use, with its hosts, the most common first."""
    if latest.empty:
        return []
    keyed = latest.assign(**{c: latest[c].astype(object) for c in SETTINGS})
    out: list[dict[str, Any]] = []
    for key, g in keyed.groupby(list(SETTINGS), dropna=False):
        out.append(
            {
                **{c: (None if pd.isna(v) else v) for c, v in zip(SETTINGS, key, strict=True)},
                "hosts": sorted(g["host"]),
                "n_hosts": len(g),
            }
        )
    out.sort(key=lambda d: (-d["n_hosts"], json.dumps(d, default=str)))
    return out
