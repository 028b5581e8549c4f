# cython: annotation_typing=True
# (Compiled, annotations are C types here: a ``dict`` annotation is read as one.)
"""What tracing and cuzk-bench lines tell about the run as a whole (``RunInfo``).

A function of the line alone: no placement reads what it writes but the GPUs, the workers per
GPU and each worker's GPU, and it reads nothing the placements write. So the run facts of a
stretch of log assembled elsewhere can be had by passing its lines with run facts
(``has_run_info``) through ``note_run_info`` here, in order.
"""

from __future__ import annotations

from cuzk_diag.event import Event
from cuzk_diag.factrows import FactRows
from cuzk_diag.ingest.assemble.calls import _ts_ms
from cuzk_diag.records import Family, RunInfo, Value, ascii_int

_BENCH, _TRACING = Family.BENCH, Family.TRACING  # (see records.Family)

#: Startup lines whose integer fields are run settings: tracing kind -> (field, RunInfo name).
_INT_SETTINGS: dict[str, tuple[tuple[str, str], ...]] = {
    "gpu_workers_init": (
        ("num_gpus", "n_gpus"),
        ("gpu_workers_per_device", "gw"),
        ("total_workers", "total_workers"),
    ),
    "interlock": (("gpu_workers_per_device", "gw"),),
    "gpu_threads": (("gpu_threads", "gpu_threads"),),
    "rayon_threads": (("rayon_threads", "rayon_threads"),),
}
#: Failures the engine reports by a line of their own.
FAILURE_KINDS = frozenset(
    {"partition_gpu_failed", "gpu_prove_start_failed", "self_check_failed", "skip_failed_job"}
)
#: Tracing kinds ``note_run_info`` takes something from.
_KINDS = frozenset(
    {
        "tracing",
        *_INT_SETTINGS,
        "engine_start",
        "gpu_workers_init",
        "gpu_worker_started",
        "pipeline_start",
        "dispatch",
        "proof_assembled",
        "pinned_fallback",
        *FAILURE_KINDS,
    }
)


def timeline_key(ev: Event) -> tuple[str, int | None]:
    """The (job, partition) a TIMELINE line's fields name (the key of its call's entry)."""
    job = ev.get("job_id")
    part = ev.get("partition")
    if part is None:
        part = ev.get("snap_partition")
    return (job if isinstance(job, str) else "", part if isinstance(part, int) else None)


def has_run_info(ev: Event) -> bool:
    """Does ``note_run_info`` take anything from this event?"""
    return ev.family is _BENCH or (ev.family is _TRACING and ev.kind in _KINDS)


def note_run_info(info: RunInfo, ev: Event) -> None:
    """Add what a tracing or cuzk-bench line says about the run to ``info``."""
    if ev.family is _BENCH:
        _bench(info, ev)
        return
    kind = ev.kind
    if kind not in _KINDS:
        return  # (most tracing lines: one set lookup, not the string comparisons below)
    f: dict[str, Value] = ev.field_dict()
    if kind == "tracing":
        level = f.get("level")
        if level in ("ERROR", "WARN"):
            _problem(info, ev, str(level))
        return
    for key, attr in _INT_SETTINGS.get(kind, ()):
        v = f.get(key)
        if isinstance(v, int):
            setattr(info, attr, v)
    if kind == "engine_start":
        ts = f.get("ts")
        if isinstance(ts, str) and info.engine_start_ts is None:
            info.engine_start_ts = ts
        if isinstance(ts, str) and _ts_ms(ts) is not None:
            info.clocks.append({"source": ev.source, "line": ev.line, "ts": ts})
    elif kind == "gpu_workers_init":
        gpus = f.get("gpus")
        if isinstance(gpus, str):
            ordinals = gpus.strip("[]").replace(",", " ").split()
            # (the entries int reads, of at most 18 digits: an int64 holds them)
            info.gpus = [n for x in ordinals if len(x) <= 18 and (n := ascii_int(x)) is not None]
        elif isinstance(gpus, int):
            info.gpus = [gpus]
    elif kind == "gpu_worker_started":
        w, g = f.get("worker_id"), f.get("gpu")
        if isinstance(w, int) and isinstance(g, int):
            info.worker_gpu[w] = g
    elif kind == "pipeline_start":
        pw = f.get("synth_worker_count")  # budget era: the synthesis workers (§4.2)
        if isinstance(pw, int) and info.partition_workers is None:
            info.partition_workers = pw
    elif kind == "dispatch":
        job = f.get("job_id")
        if isinstance(job, str):
            info.jobs.merge(
                job, {"num_partitions": f.get("num_partitions"), "dispatch_line": ev.line}
            )
        pw = f.get("partition_workers")
        if isinstance(pw, int):
            info.partition_workers = pw
    elif kind == "proof_assembled":
        job = f.get("job_id")
        if isinstance(job, str):
            j: dict[str, Value] = {
                k: f[k] for k in ("total_ms", "synth_ms", "gpu_ms", "proof_len") if k in f
            }
            j["assembled_line"] = ev.line
            info.jobs.merge(job, j)
    elif kind in FAILURE_KINDS:
        _problem(info, ev, str(f.get("level", "ERROR")))
    elif kind == "pinned_fallback":
        info.warnings["pinned_fallback"] += 1
        info.warning_lines.setdefault("pinned_fallback", [])
        if len(info.warning_lines["pinned_fallback"]) < 20:
            info.warning_lines["pinned_fallback"].append(ev.line)


def _problem(info: RunInfo, ev: Event, level: str) -> None:
    f: dict[str, Value] = ev.field_dict()
    msg = str(f.get("message", ""))
    text = " ".join(f"{k}={v}" for k, v in f.items() if k not in ("ts", "level", "spans"))
    low = text.lower()
    kind = ev.kind
    if kind == "tracing":
        if "out of memory" in low or "cudaerrormemoryallocation" in low or "oom" in low.split():
            kind = "out_of_memory"
        elif "cuda" in low and ("error" in low or "fail" in low):
            kind = "cuda_error"
        elif level == "WARN":
            info.warnings["warn"] += 1
            return
        else:
            kind = "error"
    if len(info.failures) < 1000:
        info.failures.append(
            {
                "line": ev.line,
                "kind": kind,
                "level": level,
                "message": msg,
                "job_id": f.get("job_id"),
                "partition": f.get("partition"),
                "error": f.get("error"),
            }
        )


def _bench(info: RunInfo, ev: Event) -> None:
    b = info.bench
    k = ev.kind
    f: dict[str, Value] = ev.field_dict()
    if k == "bench_proof":
        proofs = b.get("proofs")
        if not isinstance(proofs, FactRows):  # (the first, or a bench line's own "proofs")
            proofs = b["proofs"] = FactRows()
        proofs.append(f)
    elif k == "bench_param":
        b.update(f)
    elif k in ("bench_total", "bench_completed", "bench_failed", "bench_throughput"):
        b.update(f)
    elif k in ("bench_wall", "bench_prove"):
        name = k.split("_", 1)[1]
        b[name] = dict(f)
