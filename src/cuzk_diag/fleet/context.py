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


def iso_weeks(dates: pd.Series) -> pd.Series:
    """``2026-11-30`` -> ``2026-W49`` for a column of dates, vectorised; null where a date is
    unknown (``unknown`` or unparseable)."""
    when = pd.to_datetime(dates.astype(str), format="%Y-%m-%d", errors="coerce")
    cal = when.dt.isocalendar()
    text = cal["year"].astype(str) + "-W" + cal["week"].astype(str).str.zfill(2)
    return text.where(when.notna())
