"""Constructed runs for the rule, facts and report tests.

``make_run(rows, info=...)`` turns dicts into a ``Run``-like object whose frame has exactly the
``PARTITION_SCHEMA`` columns (nullable dtypes). ``simulate(...)`` produces the rows with a small
queueing model of the daemon (synthesis slots, GPU workers, one C++ mutex per GPU, the
prep/b_g2 thread) so that the fields obey the arithmetic relations of the format reference
(section 1.5). The named runs below (``incident_run``, ``healthy_run``, ...) are the shapes the
tests use; golden tests on real log fixtures can reuse their names.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd
import pyarrow as pa

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


# -- the simulator ----------------------------------------------------------------------------


@dataclass
class Timings:
    """Per-call phase durations (ms) before jitter."""

    setup: float = 4  # setup_to_split / pre_lock_cpu
    split: float = 3
    prep: float = 1909
    b_g2: float = 484
    ntt: float = 690  # pre-staged (or main) NTT+H
    ntt_fallback: float = 2430  # NTT+H when pre-staging fell back (Phase 8-like)
    batch: float = 650
    tail: float = 83
    gpu_extra: float = 0  # unexplained GPU-region time (Phase 8 averages: about 550 ms)
    held_extra: float = 7  # under the lock after the kernels (spawn/join, msm_t dtors)
    epilogue: float = 5
    dealloc: float = 402
    ntt_kernels: float = 2  # CUZK_NTT_H ntt_kernels (main); pageable copies make it seconds
    prestage_ps: float | None = None  # total_ps_ms (599522de only)


def _jit(rng: random.Random, x: float, j: float) -> int:
    return max(0, int(round(x * (1 + rng.gauss(0, j)))))


def simulate(
    *,
    era: str,
    n_jobs: int,
    gw: int,
    n_gpus: int = 1,
    concurrency: int = 1,
    pw: int = 10,
    synth_ms: float = 35000,
    timings: Timings | None = None,
    prestage: str = "none",  # none | ok | skip_vram | mixed (every 3rd call skips)
    unpinned_every: int = 0,  # main: every n-th call copies from pageable memory
    jitter: float = 0.03,
    seed: int = 1,
    bench: bool = True,
) -> FakeRun:
    """Simulate a run and return its partition rows, RunInfo and Accounting."""
    t = timings or Timings()
    rng = random.Random(seed)
    split_api = era in ("phase12", "pool-cache", "main")
    n_workers = n_gpus * gw
    worker_free = [0.0] * n_workers
    lock_free = [0.0] * n_gpus
    slots = [0.0] * pw
    job_end: list[float] = []
    rows: list[dict[str, Any]] = []
    line = 100
    call_no = 0
    for k in range(n_jobs):
        job = f"{k:08x}-7d0f-4b8e-9d51-3f6a2c9e8a41"
        submit = 0.0 if k < concurrency else job_end[k - concurrency] + 50
        ready = []
        for p in range(10):
            i = min(range(pw), key=lambda s: slots[s])
            s0 = max(slots[i], submit)
            s1 = s0 + _jit(rng, synth_ms, jitter)
            slots[i] = s1
            ready.append((s1 + 1, p, s0, s1))
        ends = []
        for q, p, s0, s1 in sorted(ready):
            w = min(range(n_workers), key=lambda x: (worker_free[x], x))
            gpu = w // gw
            pickup = max(worker_free[w], q)
            start = pickup + 1
            entry = start + 1
            setup = _jit(rng, t.setup, 0.2)
            request = entry + setup
            acquire = max(request, lock_free[gpu])
            wait = acquire - request
            prep = _jit(rng, t.prep, jitter)
            b_g2 = _jit(rng, t.b_g2, jitter)
            prep_end = request + prep
            row: dict[str, Any] = {}
            ps = 0
            ntt_base = t.ntt
            if era in ("phase9-11", "phase12"):
                skip = prestage == "skip_vram" or (prestage == "mixed" and call_no % 3 == 0)
                if prestage != "none":
                    if skip:
                        free = rng.randint(3100, 9900)
                        row.update(prestage_setup="skip_vram")
                        ntt_base = t.ntt_fallback
                    else:
                        free = rng.randint(13000, 15300)
                        row.update(prestage_setup="ok", domain=134217728, lot_of_memory=1)
                        if t.prestage_ps is not None:
                            ps = _jit(rng, t.prestage_ps, 0.1)
                            row["total_ps_ms"] = ps
                    row.update(
                        free_mib=free,
                        usable_mib=max(0, free - 512),
                        need_da_mib=4096,
                        need_dbc_mib=8192,
                        total_mib=12288,
                    )
                else:
                    ntt_base = t.ntt_fallback
            ntt_kernels = _jit(rng, t.ntt_kernels, 0.3)
            if era == "main" and unpinned_every and call_no % unpinned_every == 0:
                ntt_kernels = _jit(rng, 2300, jitter)
            if era == "main":
                ntt_h_total = ntt_kernels + 301 + 148 + 1
                ntt = ntt_h_total + 1
                row.update(
                    d_b_alloc_ms=0,
                    ntt_kernels_ms=ntt_kernels,
                    coset_intt_sync_ms=301,
                    msm_init_ms=0,
                    msm_invoke_ms=148,
                    msm_dtor_ms=1,
                    ntt_h_total_ms=ntt_h_total,
                )
            else:
                ntt = _jit(rng, ntt_base, jitter)
            g0 = acquire + ps
            barrier = max(0.0, prep_end - (g0 + ntt))
            batch = _jit(rng, t.batch, jitter)
            tail = _jit(rng, t.tail, jitter)
            extra = _jit(rng, t.gpu_extra, 0.1)
            gpu_total = int(ntt + barrier + batch + tail + extra)
            unlock = g0 + gpu_total + _jit(rng, t.held_extra, 0.2)
            lock_free[gpu] = unlock
            bg2_end = prep_end + b_g2
            epi = _jit(rng, t.epilogue, 0.2)
            if split_api:
                worker_free[w] = unlock + 2
                end = max(unlock, bg2_end) + epi + 5
                row.update(finish_ms=int(max(unlock, bg2_end) + epi - unlock))
            else:
                call_end = max(unlock, bg2_end) + epi
                end = call_end + 2
                worker_free[w] = end + 1
                row.update(epilogue_ms=epi, pre_destructor_ms=int(call_end - entry))
            row.update(
                record=call_no,
                source=0,
                job_id=job,
                partition=p,
                worker=w,
                gpu=gpu,
                proof_kind="porep-c2",
                era=era,
                num_circuits=1,
                status="ok",
                synth_start_ms=int(s0),
                synth_end_ms=int(s1),
                queue_ms=int(q),
                pickup_ms=int(pickup),
                start_ms=int(start),
                end_ms=int(end),
                synth_ms=int(s1 - s0),
                gpu_ms=int(end - start),
                split_vectors_ms=_jit(rng, t.split, 0.2),
                setup_to_split_ms=setup,
                prep_msm_ms=prep,
                b_g2_msm_ms=b_g2,
                ntt_msm_h_ms=int(ntt),
                batch_add_ms=batch,
                tail_msm_ms=tail,
                gpu_total_ms=gpu_total,
                async_dealloc_ms=_jit(rng, t.dealloc, jitter),
                gpu_threads=1,
                attr_ids="exact",
                attr_gpu="exact",
                attr_cpu="inferred",
                first_line=line,
                last_line=line + 16,
            )
            if era == "main":
                row.update(
                    pre_lock_cpu_ms=setup + 1,
                    mutex_wait_ms=int(wait),
                    barrier_wait_ms=int(barrier),
                    mutex_held_ms=int(unlock - acquire),
                    total_start_fn_ms=int(unlock - entry),
                    prove_start_ms=int(unlock - entry) + 3,
                    spawn_to_enter_ms=0,
                )
            rows.append(row)
            ends.append(end)
            line += 20
            call_no += 1
        job_end.append(max(ends))
    info = RunInfo(
        era=era,
        timeline_era="T4" if era == "main" else "T1-T3",
        n_gpus=n_gpus,
        gpus=list(range(n_gpus)),
        gw=gw,
        total_workers=n_workers,
        worker_gpu={w: w // gw for w in range(n_workers)},
        partition_workers=pw,
        jobs={r["job_id"]: {"status": "completed", "partitions": 10} for r in rows},
    )
    if bench:
        total_s = round(max(job_end) / 1000 + 0.3, 1)
        info.bench = {
            "proof_type": "porep",
            "count": n_jobs,
            "concurrency": concurrency,
            "total_s": total_s,
            "completed": n_jobs,
            "failed": 0,
            "s_per_proof": round(total_s / n_jobs, 1),
            "proofs_per_min": round(n_jobs / total_s * 60, 3),
        }
    return make_run(rows, info)


# -- named runs ---------------------------------------------------------------------------------

PHASE8_LIKE = Timings(prep=2100, b_g2=480, ntt_fallback=2430, batch=640, tail=125, gpu_extra=550)
MAIN = Timings(setup=4, prep=1187, b_g2=1705, batch=402, tail=79, held_extra=7, dealloc=211)


def incident_run() -> FakeRun:
    """The Phase 10 test: phase9-11 code, gw=3, one GPU, a single proof (c=1 j=1), every
    partition ``skip_vram``; pre_destructor ≈ 11-12 s against gpu_total ≈ 3.8 s."""
    return simulate(
        era="phase9-11",
        n_jobs=1,
        gw=3,
        concurrency=1,
        pw=10,
        synth_ms=35000,
        timings=PHASE8_LIKE,
        prestage="skip_vram",
        seed=10,
    )


def healthy_run() -> FakeRun:
    """Main code, gw=2, one GPU, 15 proofs with 10 in flight, GPU kept busy."""
    return simulate(
        era="main",
        n_jobs=15,
        gw=2,
        concurrency=10,
        pw=12,
        synth_ms=10000,
        timings=MAIN,
        seed=2,
    )


def prestaged_run() -> FakeRun:
    """Phase 9 code, gw=1, 15 proofs with 15 in flight, every call pre-staged."""
    return simulate(
        era="phase9-11",
        n_jobs=15,
        gw=1,
        concurrency=15,
        pw=10,
        synth_ms=18000,
        timings=Timings(prep=700, b_g2=484),
        prestage="ok",
        seed=3,
    )


def mixed_prestage_run() -> FakeRun:
    """Phase 9 code, gw=1, concurrent proofs, every third call skip_vram."""
    return simulate(
        era="phase9-11",
        n_jobs=6,
        gw=1,
        concurrency=6,
        pw=10,
        synth_ms=18000,
        timings=Timings(prep=700),
        prestage="mixed",
        seed=4,
    )


def interlock_phase9_run() -> FakeRun:
    """Phase 9 code, gw=2, concurrent proofs, pre-staged: each call waits about one hold."""
    return simulate(
        era="phase9-11",
        n_jobs=6,
        gw=2,
        concurrency=6,
        pw=10,
        synth_ms=12000,
        timings=Timings(prep=700),
        prestage="ok",
        seed=30,
    )


def cpu_bound_run() -> FakeRun:
    """Main code, gw=2, prep_msm far longer than the lock wait + NTT: barrier waits."""
    return simulate(
        era="main",
        n_jobs=6,
        gw=2,
        concurrency=6,
        pw=12,
        synth_ms=10000,
        timings=replace(MAIN, prep=3200),
        seed=5,
    )


def phase9_cpu_path_run() -> FakeRun:
    """Phase 9 code, gw=1, pre-staged, prep_msm 1.9 s against 0.7 s NTT: CPU-bound."""
    return simulate(
        era="phase9-11",
        n_jobs=5,
        gw=1,
        concurrency=5,
        pw=10,
        synth_ms=18000,
        timings=Timings(),
        prestage="ok",
        seed=6,
    )


def held_overhead_run() -> FakeRun:
    """Main code, gw=2, 600 ms of non-GPU work under the lock after the kernels."""
    return simulate(
        era="main",
        n_jobs=6,
        gw=2,
        concurrency=6,
        pw=12,
        synth_ms=10000,
        timings=replace(MAIN, held_extra=600),
        seed=7,
    )


def queueing_main_run() -> FakeRun:
    """Main code, gw=4 on one GPU, proofs in flight: measured waits of about 3 × hold."""
    return simulate(
        era="main",
        n_jobs=6,
        gw=4,
        concurrency=6,
        pw=20,
        synth_ms=6000,
        timings=MAIN,
        seed=8,
    )


def unpinned_run() -> FakeRun:
    """Main code where every other call copies from pageable memory; pinned fallbacks logged."""
    run = simulate(
        era="main",
        n_jobs=4,
        gw=2,
        concurrency=4,
        pw=12,
        synth_ms=10000,
        timings=MAIN,
        unpinned_every=2,
        seed=9,
    )
    run.info.warnings["pinned_fallback"] = 20
    run.info.warning_lines["pinned_fallback"] = [1201, 1388]
    return run


def dealloc_backlog_run() -> FakeRun:
    """Main code, GPU-saturated, async dealloc 3 s per call (a new call every ~1 s)."""
    return simulate(
        era="main",
        n_jobs=6,
        gw=2,
        concurrency=6,
        pw=12,
        synth_ms=9000,
        timings=replace(MAIN, dealloc=3000),
        seed=11,
    )


def idle_gpu_run() -> FakeRun:
    """Main code, two synthesis slots: the GPU waits for partitions most of the time."""
    return simulate(
        era="main",
        n_jobs=3,
        gw=2,
        concurrency=3,
        pw=2,
        synth_ms=10000,
        timings=MAIN,
        seed=12,
    )


def sequential_run() -> FakeRun:
    """Main code, gw=2, five proofs one after the other (c=5 j=1)."""
    return simulate(
        era="main",
        n_jobs=5,
        gw=2,
        concurrency=1,
        pw=10,
        synth_ms=10000,
        timings=MAIN,
        seed=13,
    )


def phase12_run() -> FakeRun:
    """Phase 12 code (split API, pre-staging, no pre_destructor), gw=3, single proof."""
    return simulate(
        era="phase12",
        n_jobs=1,
        gw=3,
        concurrency=1,
        pw=10,
        synth_ms=35000,
        timings=PHASE8_LIKE,
        prestage="skip_vram",
        seed=14,
    )


def two_gpu_run() -> FakeRun:
    """Main code, two GPUs with gw=2 each (workers 0,1 on GPU 0 and 2,3 on GPU 1)."""
    return simulate(
        era="main",
        n_jobs=8,
        gw=2,
        n_gpus=2,
        concurrency=8,
        pw=24,
        synth_ms=10000,
        timings=MAIN,
        seed=15,
    )


def failed_run() -> FakeRun:
    """A healthy-shaped run in which one proof hit a CUDA out-of-memory error."""
    run = simulate(
        era="main",
        n_jobs=4,
        gw=2,
        concurrency=4,
        pw=12,
        synth_ms=10000,
        timings=MAIN,
        seed=16,
    )
    df = run.partitions
    job = df["job_id"].iloc[25]
    df.loc[25, ["status", "end_ms", "gpu_ms", "finish_ms"]] = ["failed", None, None, None]
    run.info.jobs[job] = {"status": "failed", "partitions": 10}
    run.info.failures.append(
        {
            "line": 4242,
            "kind": "partition_gpu_failed",
            "level": "ERROR",
            "job_id": job,
            "message": "partition GPU proving failed error=CUDA error: out of memory",
        }
    )
    run.info.bench.update(completed=3, failed=1)
    return run


def coverage_run() -> FakeRun:
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


def rows_of(run: FakeRun) -> list[dict[str, Any]]:
    return run.partitions.astype(object).where(run.partitions.notna(), None).to_dict("records")


ALL_RUNS = {
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

__all__ = ["ALL_RUNS", "FakeRun", "Timings", "make_run", "simulate"]
