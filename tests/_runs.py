"""Runs for the rule, facts and report tests.

The named runs (``incident_run``, ``healthy_run``, ...) are daemon runs of the package's model,
:mod:`cuzk_diag.model.daemon` (the simulator that writes the test fixtures and that
``cuzk-diag whatif`` replays): ``sim_run(**SimConfig fields)`` simulates the run, writes its
log and reads it back with ``pipeline.load_run``, so each run's rows went through the same
parser as a real log. ``make_run(rows, info=...)`` turns hand-written dicts into a
``Run``-like object whose frame has exactly the ``PARTITION_SCHEMA`` columns (nullable dtypes),
for tests that need one precise call shape.
"""

from __future__ import annotations

import atexit
import copy
import json
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from cuzk_diag.model.daemon import SimConfig, simulate
from cuzk_diag.pipeline import Run, load_run
from cuzk_diag.records import PARTITION_SCHEMA, Accounting, RunInfo

NAMES = PARTITION_SCHEMA.names
_TYPES = {
    pa.int64(): pd.Int64Dtype(),
    pa.string(): pd.StringDtype(),
    pa.float64(): pd.Float64Dtype(),
}


@dataclass
class FakeRun:
    """Stands in for ``pipeline.Run``: partitions, info, accounting."""

    partitions: pd.DataFrame
    info: RunInfo
    accounting: Accounting


def frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """A DataFrame with exactly the PARTITION_SCHEMA columns, nullable dtypes."""
    unknown = {k for r in rows for k in r} - set(NAMES)
    assert not unknown, f"not partition columns: {sorted(unknown)}"
    table = pa.Table.from_pylist(
        [{k: r.get(k) for k in NAMES} for r in rows], schema=PARTITION_SCHEMA
    )
    return table.to_pandas(types_mapper=_TYPES.get)


def accounting_for(rows: list[dict[str, Any]], **overrides: Any) -> Accounting:
    """Plausible line accounting for a constructed run (about 11 C++ and 6 TIMELINE lines/call)."""
    n = len(rows)
    acc = Accounting(
        lines_total=n * 20,
        by_family=Counter({"timing": n * 11, "ntt_h": 0, "timeline": n * 6, "tracing": n * 3}),
        sources=["constructed.log"],
    )
    for k, v in overrides.items():
        setattr(acc, k, v)
    return acc


def make_run(
    rows: list[dict[str, Any]],
    info: RunInfo | None = None,
    accounting: Accounting | None = None,
) -> FakeRun:
    return FakeRun(frame(rows), info or RunInfo(), accounting or accounting_for(rows))


# -- runs of the daemon model ------------------------------------------------------------------

_LOGS = Path(tempfile.mkdtemp(prefix="cuzk-diag-runs-"))
atexit.register(shutil.rmtree, _LOGS, True)


def sim_run(**cfg: Any) -> Run:
    """Simulate a daemon run (``SimConfig`` fields) and read its log back as a ``Run``.

    The result is cached per configuration; each call returns a fresh copy (without the Arrow
    table), since tests edit the frame, the run info and the accounting."""
    run = _sim_run(json.dumps(cfg, sort_keys=True))
    return Run(run.partitions.copy(), copy.deepcopy(run.info), copy.deepcopy(run.accounting))


@cache
def _sim_run(key: str) -> Run:
    res = simulate(SimConfig(**json.loads(key)))
    assert res.data is not None
    path = _LOGS / f"run-{len(list(_LOGS.iterdir()))}.log"
    path.write_bytes(res.data)
    return load_run([str(path)])


#: main code, synthesis quick enough (10 s a partition) to keep the GPU busy
_MAIN_FAST = {"synth": 10000.0}
#: Phase 9 code with a short CPU prep, so pre-staged calls keep the GPU busy
_PHASE9_SHORT_PREP = {"synth": 18000.0, "prep_msm": 700.0}


def incident_run() -> Run:
    """The Phase 10 test: phase9-11 code, gw=3, one GPU, a single proof (c=1 j=1), every
    partition ``skip_vram``; pre_destructor ≈ 11 s against gpu_total ≈ 3.8 s."""
    return sim_run(
        era="phase9-11", gw=3, proofs=1, concurrency=1, pw=10, force_skip_vram=True, seed=1
    )


def healthy_run() -> Run:
    """Main code, gw=2, one GPU, 15 proofs with 10 in flight, GPU kept busy."""
    return sim_run(era="main", gw=2, proofs=15, concurrency=10, pw=12, durations=_MAIN_FAST, seed=2)


def prestaged_run() -> Run:
    """Phase 9 code, gw=1, 15 proofs with 15 in flight, every call pre-staged."""
    return sim_run(
        era="phase9-11",
        gw=1,
        proofs=15,
        concurrency=15,
        pw=10,
        durations=_PHASE9_SHORT_PREP,
        seed=3,
    )


def mixed_prestage_run() -> Run:
    """Phase 9 code on two 24 GB GPUs, gw=1, concurrent proofs: before the ``gpu_index``
    routing every engine call runs on GPU 0, so a call whose pre-stage check overlaps the
    other mutex's pre-staged buffers falls back (``skip_vram``); about a third do."""
    return sim_run(
        era="phase9-11",
        n_gpus=2,
        gw=1,
        proofs=6,
        concurrency=6,
        pw=20,
        vram_mib=24564,
        durations=_PHASE9_SHORT_PREP,
        seed=4,
    )


def interlock_phase9_run() -> Run:
    """Phase 9 code, gw=2, concurrent proofs, pre-staged: each call waits about one hold."""
    return sim_run(
        era="phase9-11",
        gw=2,
        proofs=6,
        concurrency=6,
        pw=10,
        durations={"synth": 12000.0, "prep_msm": 700.0},
        seed=30,
    )


def cpu_bound_run() -> Run:
    """Main code, gw=2, prep_msm far longer than the lock wait + NTT: barrier waits."""
    return sim_run(
        era="main",
        gw=2,
        proofs=6,
        concurrency=6,
        pw=12,
        durations={**_MAIN_FAST, "prep_msm": 3200.0},
        seed=5,
    )


def phase9_cpu_path_run() -> Run:
    """Phase 9 code, gw=1, pre-staged, prep_msm 1.9 s against 0.7 s NTT: CPU-bound."""
    return sim_run(
        era="phase9-11",
        gw=1,
        proofs=5,
        concurrency=5,
        pw=10,
        durations={"synth": 18000.0},
        seed=6,
    )


def held_overhead_run() -> Run:
    """Main code, gw=2, 600 ms of non-GPU work under the lock after the kernels."""
    return sim_run(
        era="main",
        gw=2,
        proofs=6,
        concurrency=6,
        pw=12,
        durations={**_MAIN_FAST, "msm_dtors": 600.0},
        seed=7,
    )


def queueing_main_run() -> Run:
    """Main code, gw=4 on one GPU, proofs in flight: measured waits of about 3 × hold."""
    return sim_run(
        era="main", gw=4, proofs=6, concurrency=6, pw=20, durations={"synth": 6000.0}, seed=8
    )


def unpinned_run() -> Run:
    """Main code where about every other call misses the pinned pool and copies from pageable
    memory (``pinned_fallback`` warnings, slow ``ntt_kernels_ms``)."""
    return sim_run(
        era="main",
        gw=2,
        proofs=4,
        concurrency=4,
        pw=12,
        durations=_MAIN_FAST,
        pinned_fail_rate=0.5,
        seed=9,
    )


def dealloc_backlog_run() -> Run:
    """Main code, GPU-saturated, async dealloc 3 s per call (a new call every ~1 s)."""
    return sim_run(
        era="main",
        gw=2,
        proofs=6,
        concurrency=6,
        pw=12,
        durations={"synth": 9000.0, "async_dealloc": 3000.0},
        seed=11,
    )


def idle_gpu_run() -> Run:
    """Main code, two synthesis slots: the GPU waits for partitions most of the time."""
    return sim_run(era="main", gw=2, proofs=3, concurrency=3, pw=2, durations=_MAIN_FAST, seed=12)


def sequential_run() -> Run:
    """Main code, gw=2, five proofs one after the other (c=5 j=1)."""
    return sim_run(era="main", gw=2, proofs=5, concurrency=1, pw=10, durations=_MAIN_FAST, seed=13)


def phase12_run() -> Run:
    """Phase 12 code (split API, pre-staging, no pre_destructor), gw=3, single proof."""
    return sim_run(
        era="phase12", gw=3, proofs=1, concurrency=1, pw=10, force_skip_vram=True, seed=14
    )


def two_gpu_run() -> Run:
    """Main code, two GPUs with gw=2 each (workers 0,1 on GPU 0 and 2,3 on GPU 1)."""
    return sim_run(
        era="main", n_gpus=2, gw=2, proofs=8, concurrency=8, pw=24, durations=_MAIN_FAST, seed=15
    )


def failed_run() -> Run:
    """A healthy-shaped run in which one proof hit a CUDA out-of-memory error."""
    return sim_run(
        era="main",
        gw=2,
        proofs=4,
        concurrency=4,
        pw=12,
        durations=_MAIN_FAST,
        failures=1,
        failure_error="CUDA error: out of memory",
        seed=16,
    )


def coverage_run() -> Run:
    """A healthy-shaped run whose log lost lines: unattributed timing lines, calls without
    GPU-region lines, malformed and torn lines, an unknown key."""
    run = healthy_run()
    df = run.partitions
    gpu_cols = [
        "ntt_msm_h_ms",
        "batch_add_ms",
        "tail_msm_ms",
        "gpu_total_ms",
        "barrier_wait_ms",
        "mutex_held_ms",
        "total_start_fn_ms",
        "mutex_wait_ms",
        "pre_lock_cpu_ms",
    ]
    df.loc[df.index[:30], gpu_cols] = None
    acc = run.accounting
    acc.unattributed = 260
    acc.unattributed_examples = [5003, 5004, 7120]
    acc.malformed = 4
    acc.malformed_examples = [812, 1770, 2011, 2400]
    acc.torn_repaired = 2
    acc.unknown_keys = Counter({"compute_mtx_wait_ms": 12})
    acc.unknown_timing_lines = 12
    return run


def empty_run() -> FakeRun:
    """A log with lines but no GPU call."""
    return make_run([], RunInfo(), Accounting(lines_total=42, by_family=Counter({"other": 42})))


def rows_of(run: Run | FakeRun) -> list[dict[str, Any]]:
    return run.partitions.astype(object).where(run.partitions.notna(), None).to_dict("records")


ALL_RUNS: dict[str, Any] = {
    "incident": incident_run,
    "healthy": healthy_run,
    "prestaged": prestaged_run,
    "mixed_prestage": mixed_prestage_run,
    "interlock_phase9": interlock_phase9_run,
    "cpu_bound": cpu_bound_run,
    "phase9_cpu_path": phase9_cpu_path_run,
    "held_overhead": held_overhead_run,
    "queueing_main": queueing_main_run,
    "unpinned": unpinned_run,
    "dealloc_backlog": dealloc_backlog_run,
    "idle_gpu": idle_gpu_run,
    "sequential": sequential_run,
    "phase12": phase12_run,
    "two_gpu": two_gpu_run,
    "failed": failed_run,
    "coverage": coverage_run,
    "empty": empty_run,
}

__all__ = ["ALL_RUNS", "FakeRun", "make_run", "sim_run"]
