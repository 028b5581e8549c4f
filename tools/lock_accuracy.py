"""How far the clock estimate of the GPU-mutex wait is from the true wait.

Code before March 13 logs no ``mutex_wait_ms`` (T17); Phase 12 and pool-cache code log no
``pre_destructor_ms`` (T7) either, so cuzk-diag solves the per-GPU mutex queue from the clock
(``facts.clock_lock_wait``). This script measures that estimate where the truth is known:

- main-era logs, where T17 gives the true wait: the estimate runs with T17 hidden
  (``-T17``: ``mutex_wait_ms``, ``pre_lock_cpu_ms`` dropped; the hold still comes from T19), and
  with T17 and T19 hidden (``-T17-T19``: as Phase 12 and pool-cache code log, the hold is
  ``gpu_total_ms`` plus the set-up inside the lock);
- simulated Phase 12 and pool-cache runs, where the simulator's truth holds the wait
  (``SimConfig.lock_truth``).

Usage (from the repository root)::

    python tools/lock_accuracy.py                 # fixtures, then the sweep with 4 seeds
    python tools/lock_accuracy.py --seeds 8
    python tools/lock_accuracy.py --fixtures-only

Columns: calls compared, true median wait, estimated median with the medians of its bounds,
the error of the median relative to the true median, and the median and 95th percentile of the
per-call absolute error (ms).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from cuzk_diag.facts import estimate_lock_wait  # noqa: E402
from cuzk_diag.model.daemon import SimConfig, simulate  # noqa: E402
from cuzk_diag.pipeline import load_run  # noqa: E402

#: Columns of the lines hidden for each variant of the main-era check.
HIDE = {
    "-T17": ("mutex_wait_ms", "pre_lock_cpu_ms"),
    "-T17-T19": ("mutex_wait_ms", "pre_lock_cpu_ms", "mutex_held_ms", "total_start_fn_ms"),
}
#: Main-era fixtures with TIMELINE lines (the clock) and T17 lines (the truth).
MAIN_FIXTURES = (
    "fixtures/sim/era-main.log",
    "fixtures/sim/gw2.log",
    "fixtures/sim/gw3.log",
    "fixtures/sim/healthy-main.log",
    "fixtures/sim/concurrent-curio.log",
    "fixtures/sim/failures.log",
    "fixtures/example.log",
)
#: Simulated fixtures whose truth carries the wait of code that does not log it.
SPLIT_FIXTURES = (
    "fixtures/sim/phase12-2gpu-gw2.log",
    "fixtures/sim/pool-cache-2gpu-gw2.log",
)
#: Sweep cells: (era, GPUs, gw, proofs, proofs in flight, concurrent syntheses).
SWEEP = [
    *((era, gpus, gw, 8, 4, 20) for era in ("main",) for gpus in (1, 2) for gw in (2, 3)),
    ("main", 2, 2, 8, 4, 10),
    ("phase12", 2, 2, 8, 4, 20),
    ("phase12", 2, 2, 8, 4, 10),
    ("phase12", 1, 3, 8, 4, 20),
    ("pool-cache", 2, 2, 8, 4, 20),
    ("pool-cache", 2, 2, 8, 4, 10),
    ("pool-cache", 1, 3, 8, 4, 20),
]

#: (estimate, low, high, truth) per call.
Parts = tuple[pd.Series, pd.Series, pd.Series, pd.Series]


@dataclass
class Error:
    """Estimate against truth over a set of calls."""

    calls: int
    true_median: float
    est_median: float
    low_median: float
    high_median: float
    abs_err_median: float
    abs_err_p95: float

    @property
    def median_rel_err(self) -> float:
        """|estimated median − true median| / true median (0 when both are 0)."""
        diff = abs(self.est_median - self.true_median)
        return diff / self.true_median if self.true_median > 0 else (0.0 if diff < 1 else 1.0)

    def row(self, label: str) -> str:
        return (
            f"{label:40s} {self.calls:5d} {self.true_median:8.0f} {self.est_median:8.0f} "
            f"({self.low_median:6.0f}-{self.high_median:6.0f}) {self.median_rel_err:7.1%} "
            f"{self.abs_err_median:7.1f} {self.abs_err_p95:7.1f}"
        )


HEADER = (
    f"{'log / cell':40s} {'calls':>5s} {'true':>8s} {'estimate':>8s} {'(low-high)':>15s} "
    f"{'med err':>7s} {'|err|50':>7s} {'|err|95':>7s}"
)


def compare(df: pd.DataFrame, truth: pd.Series) -> Error | None:
    """Clock estimate on ``df`` against ``truth`` (ms per row, NaN where unknown)."""
    return _merge([_pooled(df, truth)])


def hidden(df: pd.DataFrame, variant: str) -> pd.DataFrame:
    """The frame as a log without the lines of ``variant`` would give it."""
    return df.drop(columns=[c for c in HIDE[variant] if c in df.columns])


def main_era(df: pd.DataFrame, variant: str) -> Error | None:
    """Main-era frame: the logged ``mutex_wait_ms`` is the truth; estimate with it hidden."""
    truth = pd.to_numeric(df["mutex_wait_ms"], errors="coerce").astype("float64")
    return compare(hidden(df, variant), truth)


def sim_truth(df: pd.DataFrame, truth: list[dict[str, Any]]) -> pd.Series:
    """The simulated wait per row, matched by job, partition and GPU_START."""
    by_key = {
        (t["job_id"], t.get("partition"), t.get("start_ms")): t.get("_mutex_wait_ms") for t in truth
    }
    vals = []
    for job, part, start in zip(df["job_id"], df["partition"], df["start_ms"], strict=True):
        key = (
            None if pd.isna(job) else job,
            None if pd.isna(part) else int(part),
            None if pd.isna(start) else int(start),
        )
        v = by_key.get(key)
        vals.append(np.nan if v is None else float(v))
    return pd.Series(vals, index=df.index, dtype="float64")


def fixture_errors() -> list[tuple[str, Error | None]]:
    out: list[tuple[str, Error | None]] = []
    for rel in MAIN_FIXTURES:
        df = load_run([str(ROOT / rel)]).partitions
        for variant in HIDE:
            out.append((f"{Path(rel).name} {variant}", main_era(df, variant)))
    for rel in SPLIT_FIXTURES:
        path = ROOT / rel
        truth = json.loads(path.with_suffix(".truth.json").read_text())
        df = load_run([str(path)]).partitions
        out.append((path.name, compare(df, sim_truth(df, truth))))
    return out


def _sim_frame(cfg: SimConfig) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    sim = simulate(cfg)
    assert sim.data is not None
    fd, path = tempfile.mkstemp(suffix=".log")
    os.write(fd, sim.data)
    os.close(fd)
    try:
        return load_run([path]).partitions, sim.truth
    finally:
        os.unlink(path)


def cell_errors(
    era: str, gpus: int, gw: int, proofs: int, inflight: int, pw: int, seeds: int
) -> list[tuple[str, Error | None]]:
    """One sweep cell over ``seeds`` seeds, all calls pooled (per variant on main)."""
    frames: dict[str, list[tuple[pd.DataFrame, pd.Series]]] = {}
    for seed in range(seeds):
        cfg = SimConfig(
            era=era,
            n_gpus=gpus,
            gw=gw,
            proofs=proofs,
            concurrency=inflight,
            pw=pw,
            partitions_per_proof=10,
            seed=seed,
            lock_truth=True,
        )
        df, truth = _sim_frame(cfg)
        if era == "main":
            wait = pd.to_numeric(df["mutex_wait_ms"], errors="coerce").astype("float64")
            for variant in HIDE:
                frames.setdefault(variant, []).append((hidden(df, variant), wait))
        else:
            frames.setdefault("", []).append((df, sim_truth(df, truth)))
    out = []
    for variant, parts in frames.items():
        errs = [_pooled(df, t) for df, t in parts]
        label = f"{era} gpus={gpus} gw={gw} c={proofs} j={inflight} pw={pw} {variant}".rstrip()
        out.append((label, _merge(errs)))
    return out


def _pooled(df: pd.DataFrame, truth: pd.Series) -> Parts:
    """(estimate, low, high, truth) of the calls with a clock estimate and a true value."""
    lock = estimate_lock_wait(df)
    both = lock.wait.notna() & truth.notna() & (lock.method == "clock")
    return lock.wait[both], lock.low[both], lock.high[both], truth[both]


def _merge(parts: list[Parts]) -> Error | None:
    est, low, high, truth = (pd.concat([p[k] for p in parts], ignore_index=True) for k in range(4))
    if est.empty:
        return None
    err = (est - truth).abs()
    return Error(
        calls=len(est),
        true_median=float(truth.median()),
        est_median=float(est.median()),
        low_median=float(low.median()),
        high_median=float(high.median()),
        abs_err_median=float(err.median()),
        abs_err_p95=float(err.quantile(0.95)),
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=4, help="seeds per sweep cell (default 4)")
    ap.add_argument("--fixtures-only", action="store_true", help="skip the simulated sweep")
    a = ap.parse_args(argv)
    print(HEADER)
    for label, e in fixture_errors():
        print(e.row(label) if e else f"{label:40s}     - (no clock estimate)")
    if not a.fixtures_only:
        print()
        for cell in SWEEP:
            for label, e in cell_errors(*cell, seeds=a.seeds):
                print(e.row(label) if e else f"{label:40s}     - (no clock estimate)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
