"""What fleet rules see: the dataset's runs, partitions and findings as pandas frames."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

#: Columns of the partition table that fleet analysis reads (the rest stays on disk).
PARTITION_COLUMNS = ("host", "date", "run_id", "gpu_total_ms", "kernel_ms", "status")


#: Settings that make hosts comparable: peers share all of them.
PEER_KEYS = ("era", "n_gpus", "gw")


@dataclass(frozen=True, slots=True)
class FleetContext:
    """The fleet as rules see it: one row per run, per partition and per finding."""

    runs: pd.DataFrame
    partitions: pd.DataFrame
    findings: pd.DataFrame
    options: dict[str, Any] = field(default_factory=dict)

    def hosts(self) -> list[str]:
        return sorted(set(self.runs["host"].dropna())) if len(self.runs) else []

    def latest_runs(self) -> pd.DataFrame:
        """Each host's most recent run (by first wall-clock time, then run id)."""
        if self.runs.empty:
            return self.runs
        ordered = self.runs.sort_values(["host", "first_ts", "run_id"], na_position="first")
        return ordered.groupby("host", sort=True).tail(1).reset_index(drop=True)

    def peer_key(self, row: pd.Series) -> tuple[Any, ...]:
        return tuple(None if pd.isna(row[k]) else row[k] for k in PEER_KEYS)


def iso_week(date: str) -> str | None:
    """``2026-11-30`` -> ``2026-W49``; None for an unknown date."""
    try:
        d = pd.Timestamp(date)
    except (ValueError, TypeError):
        return None
    if pd.isna(d):
        return None
    year, week, _ = d.isocalendar()
    return f"{year}-W{week:02d}"
