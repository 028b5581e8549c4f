"""A simulated fleet of provers: one directory per host, each with logs of its runs.

Used by the fleet tests and the fleet benchmark. Hosts share a configuration except where a
``HostSpec`` says otherwise, so the hosts a fleet report should name are known.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from cuzk_diag.model.daemon import _BASE, _CPP_OVERRIDES, SimConfig, write_log

#: Duration keys of the GPU kernels (NTT+H, batch addition, tail MSM).
KERNEL_KEYS = (
    "ntt",
    "ntt_prestaged",
    "ntt_kernels",
    "ntt_kernels_pinned",
    "coset_intt_sync",
    "msm_invoke",
    "batch_add",
    "tail_msm",
)


@dataclass(frozen=True, slots=True)
class HostSpec:
    """One simulated host: its configuration and how it differs from the fleet."""

    name: str
    config: dict[str, Any] = field(default_factory=dict)  # SimConfig fields
    kernel_scale: float = 1.0  # GPU kernels this much slower (a slower GPU)
    slow_from_run: int = 0  # apply kernel_scale from this run on (a host that degrades)


def kernel_durations(cfg: SimConfig, scale: float) -> dict[str, float]:
    """Duration overrides that make the GPU kernels of ``cfg``'s code version ``scale``× slower."""
    if scale == 1.0:
        return {}
    cpp = cfg.resolved().cpp_version
    means = {**_BASE, **(_CPP_OVERRIDES.get(cpp, {}) if cpp is not None else {}), **cfg.durations}
    return {k: means[k] * scale for k in KERNEL_KEYS}


def write_fleet(
    root: str | Path,
    hosts: list[HostSpec],
    *,
    runs: int = 2,
    first_day: date = date(2026, 11, 2),
    days_between: int = 7,
    base: dict[str, Any] | None = None,
    journald: bool = False,
) -> list[Path]:
    """Write ``runs`` logs per host, ``days_between`` days apart: ``root/HOST/run-N.log``."""
    out: list[Path] = []
    for h_index, host in enumerate(hosts):
        for r in range(runs):
            scale = host.kernel_scale if r >= host.slow_from_run else 1.0
            fields = {**(base or {}), **host.config}
            cfg = replace(
                SimConfig(**fields),
                seed=1000 * h_index + r,
                host=host.name,
                journald=journald,
                start_date=(first_day + timedelta(days=days_between * r)).isoformat(),
            )
            cfg = replace(cfg, durations={**cfg.durations, **kernel_durations(cfg, scale)})
            path = Path(root) / host.name / f"run-{r}.log"
            path.parent.mkdir(parents=True, exist_ok=True)
            write_log(cfg, str(path), truth=False)
            out.append(path)
    return out
