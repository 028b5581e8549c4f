"""Replay a measured run through the daemon model.

A log gives the model two things: the run's configuration (code era, GPUs, workers per GPU,
synthesis slots, cuzk-bench ``-c``/``-j``, partitions per proof) and one sample per GPU call of
the stage durations it measured. :func:`replay` runs :mod:`cuzk_diag.model.daemon` with a
configuration, where every partition draws one whole measured call (so the correlations between
a call's stages are kept) and takes its durations; the simulated log is then read back by the
same parser and :func:`metrics` as the measured one, so measured and predicted figures share one
definition.

Library use::

    from cuzk_diag.pipeline import load_run
    from cuzk_diag.model.replay import measure, replay
    run = load_run(["daemon.log"])
    m = measure(run)                                # Measured: configuration + call samples
    runs = replay(m, m.knobs | {"gw": 1}, seeds=(1, 2, 3))   # metrics per seed
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from cuzk_diag.errors import InputError
from cuzk_diag.facts import (
    RunFacts,
    barrier_estimate,
    compute_facts,
    estimate_lock_wait,
    has,
    is_value,
    lock_held_time,
    median,
    num,
    text,
)
from cuzk_diag.model.daemon import ERA_CPP, SimConfig, synth_contention, write_log
from cuzk_diag.records import RunInfo

#: Model durations (``SimConfig.replay`` keys) taken from each log field, by code era. NTT+H on
#: pool-cache/main code is the sum of CUZK_NTT_H parts, so those parts are replayed instead.
_COMMON = {
    "synth_ms": "synth",
    "prep_msm_ms": "prep_msm",
    "b_g2_msm_ms": "b_g2",
    "batch_add_ms": "batch_add",
    "tail_msm_ms": "tail_msm",
    "epilogue_ms": "epilogue",
    "async_dealloc_ms": "async_dealloc",
}
_NTT_PARTS = {
    "ntt_kernels_ms": "ntt_kernels",
    "coset_intt_sync_ms": "coset_intt_sync",
    "msm_invoke_ms": "msm_invoke",
}
#: Code eras whose NTT+H region is made of CUZK_NTT_H parts (V9+).
NTT_H_ERAS = frozenset({"pool-cache", "main"})
#: Log fields ``--scale`` accepts (``ntt_msm_h_ms`` scales the NTT_H parts on V9+ code).
SCALABLE = (*_COMMON, "ntt_msm_h_ms", *_NTT_PARTS)

#: NTT+H of a pre-staged call when the log has none to measure it from: format reference
#: section 6.1 (Phase 9 table, gw=1 steady state: ntt_msm_h ~2430 -> ~690 ms with pre-staging).
PRESTAGED_NTT_MS = 690.0

#: Parse of a proof's C1 output before its synthesis is dispatched, in the model (ms).
_C1_PARSE_MS = 450.0

#: A slot freed by one synthesis is taken by the next before the first's SYNTH_END is printed.
_HANDOVER_MS = 1.0

#: Knobs of ``whatif``: name -> what it sets.
KNOBS = {
    "gw": "GPU workers per GPU (gpus.gpu_workers_per_device)",
    "gpus": "number of GPUs",
    "synthesis_concurrency": "partitions synthesised at once (synthesis slots)",
    "c": "cuzk-bench batch -c: proofs in the run",
    "j": "cuzk-bench batch -j: proofs in flight",
}


@dataclass
class Measured:
    """What the model takes from a log: its configuration and one sample per GPU call."""

    era: str
    cpp_version: int
    knobs: dict[str, int]  # gw, gpus, synthesis_concurrency, c, j
    partitions_per_proof: int
    gpu_threads: int | None
    srs_load_ms: float | None  # None: the model's default (12 s), no bench/TIMELINE to measure
    failed_proofs: int  # proofs that failed in the run; the replay fails as many
    streams: str  # what the log holds: all | stderr (no tracing) | cpp (C++ lines only)
    bench: bool  # the log holds the cuzk-bench summary
    samples: list[dict[str, Any]]  # SimConfig.replay records
    sources: dict[str, str] = field(default_factory=dict)  # knob -> log | inferred | default
    fields: dict[str, int] = field(default_factory=dict)  # replayed log field -> calls
    prestaged_ntt: list[float] = field(default_factory=list)  # NTT+H of pre-staged calls
    metrics: dict[str, Any] = field(default_factory=dict)  # the measured run's metrics

    def to_dict(self) -> dict[str, Any]:
        return {
            "era": self.era,
            "cpp_version": self.cpp_version,
            "knobs": dict(self.knobs),
            "knob_sources": dict(self.sources),
            "partitions_per_proof": self.partitions_per_proof,
            "gpu_threads": self.gpu_threads,
            "srs_load_ms": self.srs_load_ms,
            "failed_proofs": self.failed_proofs,
            "streams": self.streams,
            "bench_output": self.bench,
            "calls_sampled": len(self.samples),
            "fields_replayed": dict(self.fields),
        }


# -- metrics: one definition for the measured and the replayed runs -------------------------


def call_time(df: pd.DataFrame) -> tuple[pd.Series, str | None]:
    """Per-call latency: TIMELINE ``gpu_ms`` (GPU_START..GPU_END, lock wait included), else
    the C++ whole-call timer (``total_start_fn_ms`` on main, ``pre_destructor_ms`` V1-V7)."""
    for col in ("gpu_ms", "total_start_fn_ms", "pre_destructor_ms"):
        if has(df, col):
            return num(df, col), col
    return pd.Series(dtype="float64"), None


def _q(s: pd.Series, q: float) -> float | None:
    s = s.dropna()
    return float(s.quantile(q)) if len(s) else None


def metrics(df: pd.DataFrame, info: RunInfo, facts: RunFacts | None = None) -> dict[str, Any]:
    """The figures ``whatif`` compares: throughput, call latency (median, p95), mean lock wait
    per call, GPU utilisation in three views (TIMELINE intervals, lock held, kernels), and each
    stage's floor on s/proof (the largest is the bottleneck). ``facts``: the run's facts when
    already computed."""
    facts = facts if facts is not None else compute_facts(df, info)
    ok = df[is_value(df, "status", "ok")] if len(df) else df
    calls, call_field = call_time(ok)
    lock = estimate_lock_wait(ok)
    hold, _ = lock_held_time(ok)
    done = max(facts.proofs_completed, 0) or None
    floors: dict[str, float | None] = {}
    if done:
        pw = info.partition_workers or synth_slots_seen(ok) or None
        synth = num(ok, "synth_ms")
        floors["synthesis"] = (
            float(synth.sum()) / pw / done / 1000.0 if pw and synth.notna().any() else None
        )
        ngpu = max(1, facts.n_gpus)
        floors["gpu"] = float(hold.sum()) / ngpu / done / 1000.0 if hold.notna().any() else None
        workers = max(1, facts.workers)
        floors["workers"] = (
            float(calls.sum()) / workers / done / 1000.0 if calls.notna().any() else None
        )
    known = {k: v for k, v in floors.items() if v is not None}
    sp = facts.s_per_proof
    return {
        "s_per_proof": sp,
        "proofs_per_min": 60.0 / sp if sp else None,
        "call_ms_median": median(calls),
        "call_ms_p95": _q(calls, 0.95),
        "call_field": call_field,
        "lock_wait_ms": float(lock.wait.dropna().mean()) if lock.known_any else None,
        "lock_wait_method": lock.method,
        "gpu_util_timeline": facts.gpu_util,
        "gpu_util_lock": facts.held_util,
        "gpu_util_kernel": facts.kernel_util,
        "floors_s": floors,
        "bottleneck": max(known, key=lambda k: known[k]) if known else None,
        "proofs_completed": facts.proofs_completed,
    }


# -- what a log says about the run ----------------------------------------------------------


def synth_slots_seen(df: pd.DataFrame) -> int | None:
    """The most partition syntheses that ran at once (TIMELINE SYNTH_START..SYNTH_END)."""
    act = synth_active(df)
    return int(act.max()) if act.notna().any() else None


def synth_active(df: pd.DataFrame) -> pd.Series:
    """Per call: how many syntheses were running when its synthesis started (itself included).

    Syntheses started in the same millisecond are taken in partition order, as the daemon
    hands out its slots; a synthesis whose SYNTH_END is printed within 1 ms after another's
    SYNTH_START had already handed its slot over.
    """
    start, end = num(df, "synth_start_ms"), num(df, "synth_end_ms")
    ok = (start.notna() & end.notna()).to_numpy()
    out = pd.Series(np.nan, index=df.index, dtype="float64")
    if not ok.any():
        return out
    s = start.to_numpy()[ok]
    part = num(df, "partition").fillna(0).to_numpy()[ok]
    order = np.lexsort((part, s))
    rank = np.empty(len(s), dtype="int64")
    rank[order] = np.arange(len(s))
    ended = np.searchsorted(np.sort(end.to_numpy()[ok]), s + _HANDOVER_MS, "right")
    out[ok] = rank + 1 - ended
    return out


def field_keys(era: str) -> dict[str, str]:
    """Log field -> model duration it is replayed as, for a code era."""
    mapping = dict(_COMMON)
    if era in NTT_H_ERAS:
        mapping.update(_NTT_PARTS)
    else:
        mapping["ntt_msm_h_ms"] = "ntt"
    return mapping


def scaled_keys(era: str, log_field: str) -> list[str]:
    """Model durations a ``--scale`` of ``log_field`` multiplies (NTT+H is in parts on V9+)."""
    keys = field_keys(era)
    if log_field == "ntt_msm_h_ms" and era in NTT_H_ERAS:
        return list(_NTT_PARTS.values())
    return [keys[log_field]] if log_field in keys else []


def _code_version(era: str, df: pd.DataFrame) -> int:
    if era not in ERA_CPP:
        raise InputError(
            "cannot model this run: its code era is unknown (no era-specific CUZK_TIMING lines)"
        )
    if era == "phase9-11" and has(df, "total_ps_ms"):
        return 5  # the only version that prints pre-stage stage timings (T12b)
    return ERA_CPP[era][0]


def _lead_in_ms(df: pd.DataFrame, info: RunInfo) -> float | None:
    """SRS load before the first synthesis: bench start -> first SYNTH_START less the C1 parse;
    the bench start is the last GPU_END less cuzk-bench's total time (the bench's own
    submission and response take a few ms)."""
    total = info.bench.get("total_s") if info.bench else None
    first, last = num(df, "synth_start_ms").min(), num(df, "end_ms").max()
    if total is None or pd.isna(first) or pd.isna(last):
        return None
    bench_start = float(last) - float(total) * 1000.0
    return max(0.0, float(first) - bench_start - _C1_PARSE_MS)


def _prestage_outcomes(df: pd.DataFrame) -> np.ndarray:
    """Per call, its pre-staging outcome (object array; None where the call has none): the
    logged ``prestage_setup``; ``skip_vram`` after a failed host registration (no pre-staging
    was tried: the NTT inputs go up in the lock); ``silent`` when the VRAM was checked but no
    outcome line followed (the allocation failed quietly)."""
    out = np.full(len(df), None, dtype=object)
    ps = text(df, "prestage_setup")
    logged = (ps.notna() & (ps != "")).to_numpy()
    registered = is_value(df, "host_register", "fallback").to_numpy(dtype=bool)
    checked = num(df, "free_mib").notna().to_numpy()
    out[checked] = "silent"
    out[registered] = "skip_vram"
    out[logged] = ps.to_numpy(dtype=object)[logged]
    return out


def _streams(run: Any) -> str:
    """Which streams the log holds, so that the replay's log holds the same (the figures are
    then computed from the same lines: s/proof from cuzk-bench or from TIMELINE, ...)."""
    fam = run.accounting.by_family
    if fam.get("tracing", 0):
        return "all"
    return "stderr" if fam.get("timeline", 0) else "cpp"


def measure(run: Any, facts: RunFacts | None = None, max_samples: int | None = None) -> Measured:
    """The configuration and the call samples of a parsed run (``pipeline.Run``).

    ``facts``: the run's facts when already computed. ``max_samples``: keep at most this many
    call samples, evenly spaced over the run (the configuration and the measured figures still
    come from every call)."""
    df: pd.DataFrame = run.partitions
    info: RunInfo = run.info
    if not len(df):
        raise InputError("cannot model this run: the log has no GPU calls")
    if (num(df, "num_circuits") > 1).any():
        raise InputError(
            "cannot model this run: whatif models partitioned proofs, not batch-all calls "
            "(num_circuits > 1)"
        )
    facts = facts if facts is not None else compute_facts(df, info)
    era = facts.era
    cpp = _code_version(era, df)
    ok = df[is_value(df, "status", "ok")]
    if not len(ok):
        raise InputError("cannot model this run: no GPU call completed")
    seen = synth_slots_seen(ok)
    sources: dict[str, str] = {}

    def knob(name: str, *candidates: tuple[Any, str]) -> int:
        for value, source in candidates:
            if value is not None and not (isinstance(value, float) and math.isnan(value)):
                sources[name] = source
                return max(1, int(value))
        raise AssertionError("every knob has a default")

    knobs = {
        "gw": knob("gw", (facts.gw, facts.gw_source or "inferred"), (1, "default")),
        "gpus": knob("gpus", (facts.n_gpus or None, "log"), (1, "default")),
        "synthesis_concurrency": knob(
            "synthesis_concurrency",
            (info.partition_workers, "log"),
            (seen, "inferred"),
            (10, "default"),
        ),
        "c": knob("c", (facts.bench_count, "log"), (facts.proofs, "inferred"), (1, "default")),
        "j": knob(
            "j",
            (facts.bench_concurrency, "log"),
            (facts.max_proofs_in_flight, "inferred"),
            (1, "default"),
        ),
    }
    ppp = knob(
        "partitions_per_proof", (facts.partitions_per_proof, "inferred"), (len(df), "default")
    )
    pw = knobs["synthesis_concurrency"]
    mapping = field_keys(era)
    cols = {f: num(ok, f) for f in mapping}
    active = synth_active(ok)
    lock = estimate_lock_wait(ok)
    barrier, _, bmethod = barrier_estimate(ok, lock)
    gap = None
    if era != "main" and bmethod != "upper_bound":
        rest = (
            num(ok, "gpu_total_ms")
            - num(ok, "ntt_msm_h_ms")
            - num(ok, "batch_add_ms")
            - num(ok, "tail_msm_ms")
        )
        gap = (rest - barrier).clip(lower=0)
    samples: list[dict[str, Any]] = []
    used: dict[str, int] = {}
    prestaged: list[float] = []
    picked = np.arange(len(ok))
    if max_samples is not None and len(ok) > max_samples:
        picked = np.unique(np.linspace(0, len(ok) - 1, max_samples).round().astype(int))
    # plain arrays of the picked calls: a loop over whole rows costs ~0.3 ms a call
    vals = {f: cols[f].to_numpy(dtype="float64", na_value=np.nan)[picked] for f in mapping}
    act = active.to_numpy(dtype="float64", na_value=np.nan)[picked]
    gaps = None if gap is None else gap.to_numpy(dtype="float64", na_value=np.nan)[picked]
    outcomes = _prestage_outcomes(ok)[picked]
    for n in range(len(picked)):
        rec: dict[str, Any] = {}
        for f, key in mapping.items():
            v = vals[f][n]
            if np.isnan(v):
                continue
            if key == "synth":
                a = act[n]
                v = v / synth_contention(pw if np.isnan(a) else int(a), pw)
            rec[key] = float(v)
            used[f] = used.get(f, 0) + 1
        if gaps is not None and not np.isnan(gaps[n]):
            rec["post_ntt_gap"] = float(gaps[n])
        outcome = outcomes[n]
        if outcome is not None:
            rec["prestage"] = outcome
            if outcome == "ok" and "ntt" in rec:
                prestaged.append(rec["ntt"])
        samples.append(rec)
    m = Measured(
        era=era,
        cpp_version=cpp,
        knobs=knobs,
        partitions_per_proof=ppp,
        gpu_threads=info.gpu_threads,
        srs_load_ms=_lead_in_ms(df, info),
        failed_proofs=facts.proofs_failed,
        streams=_streams(run),
        bench=bool(info.bench),
        samples=samples,
        sources=sources,
        fields=used,
        prestaged_ntt=prestaged,
    )
    m.metrics = metrics(df, info, facts)
    return m


# -- the replay -----------------------------------------------------------------------------


def sim_config(
    m: Measured, knobs: Mapping[str, int], samples: Iterable[dict[str, Any]], seed: int
) -> SimConfig:
    """The daemon model's configuration for ``knobs``, replaying ``samples``."""
    durations = {} if m.srs_load_ms is None else {"srs_load": m.srs_load_ms}
    return SimConfig(
        era=m.era,
        cpp_version=m.cpp_version,
        n_gpus=int(knobs["gpus"]),
        gw=int(knobs["gw"]),
        proofs=int(knobs["c"]),
        concurrency=int(knobs["j"]),
        pw=int(knobs["synthesis_concurrency"]),
        partitions_per_proof=m.partitions_per_proof,
        gpu_threads=m.gpu_threads,
        seed=seed,
        durations=durations,
        failures=min(m.failed_proofs, int(knobs["c"])),
        streams=m.streams,
        bench_output=m.bench,
        replay=tuple(samples),
    )


def replay(
    m: Measured,
    knobs: Mapping[str, int],
    seeds: Iterable[int],
    samples: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Metrics of the model run once per seed with ``knobs``, replaying ``samples`` (default:
    the measured calls)."""
    from cuzk_diag.pipeline import load_run

    pool = m.samples if samples is None else samples
    out = []
    with tempfile.TemporaryDirectory(prefix="cuzk-diag-whatif-") as tmp:
        for seed in seeds:
            path = os.path.join(tmp, f"replay-{seed}.log")
            write_log(sim_config(m, knobs, pool, seed), path, truth=False)
            run = load_run([path])
            out.append(metrics(run.partitions, run.info))
            os.unlink(path)
    return out
