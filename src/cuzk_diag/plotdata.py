"""The numbers behind the HTML report's plots: every GPU call on its worker's lane split into its
phases, synthesis and proof spans, GPU utilisation and s/proof over time, and the reduction of a
large run to a drawable number of bars.

Only pandas and numpy; the report (``report/html.py``) turns these frames into charts. Times are
TIMELINE offsets (ms since engine start), so a bar can be found in the log by its clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from cuzk_diag.facts import (
    LockWait,
    RunFacts,
    _job_status,
    barrier_estimate,
    estimate_lock_wait,
    gpu_of_rows,
    kernel_time,
    lock_held_time,
    num,
    text,
)
from cuzk_diag.records import RunInfo

#: completed | failed | incomplete per job id, as the run facts count proofs.
job_status = _job_status

#: Utilisation views over time: (name, what it counts).
UTIL_VIEWS: tuple[tuple[str, str], ...] = (
    ("scheduler", "GPU_START..GPU_END of any call (merged)"),
    ("lock held", "the GPU mutex held: mutex_held_ms, else gpu_total_ms, from the acquisition"),
    ("kernels", "GPU kernels: the measured kernel stages (ntt_msm_h + batch_add + tail_msm)"),
)
#: Bins of the utilisation series: about this many over the run, none shorter than the minimum.
UTIL_BINS = 150
UTIL_MIN_BIN_MS = 250.0
#: Window of the rolling s/proof: a fifth of the completions, between 2 and this many.
THROUGHPUT_WINDOW = 20


@dataclass(frozen=True, slots=True)
class Calls:
    """GPU calls on their worker lanes (``call_spans``) and how many had no clock."""

    frame: pd.DataFrame
    skipped: int = 0  # calls without both GPU_START and GPU_END


# -- GPU calls ------------------------------------------------------------------------------


def call_spans(
    df: pd.DataFrame, info: RunInfo, facts: RunFacts, lock: LockWait | None = None
) -> Calls:
    """One row per GPU call with a TIMELINE GPU_START and GPU_END, split into its phases.

    Columns: ``gpu``, ``worker``, ``lane`` (``GPU g · worker w``), ``job_id``, ``partition``,
    ``status``, ``start_ms``/``end_ms`` (the call), ``wait_start_ms``/``wait_ms`` (the mutex
    wait, measured or estimated as in the facts), ``kernel_start_ms``/``kernel_ms``
    (``gpu_total_ms`` less the GPU thread's wait for CPU prep), ``prep_start_ms``/``prep_ms`` (that
    wait: ``barrier_wait_ms`` or its estimate), ``held_ms`` (``mutex_held_ms``, else
    ``gpu_total_ms``), ``first_line``/``last_line``. Each phase is clipped to the call. The rest
    of the call (set-up, epilogue, Rust) is CPU work outside the lock. ``lock``: the frame's
    ``estimate_lock_wait``, when the caller has it (``Analysis.lock``; else made here).
    """
    start, end = num(df, "start_ms"), num(df, "end_ms")
    ok = start.notna() & end.notna() & (end >= start)
    if lock is None:
        lock = estimate_lock_wait(df)
    barrier, _, _ = barrier_estimate(df, lock)
    setup = num(df, "pre_lock_cpu_ms").fillna(num(df, "setup_to_split_ms")).fillna(0.0)
    wait = lock.wait.fillna(0.0).clip(lower=0)
    total = num(df, "gpu_total_ms")
    prep = barrier.fillna(0.0).clip(lower=0)
    prep = np.minimum(prep, total.fillna(0.0))
    kernel = kernel_time(df)[0].clip(lower=0)
    held = lock_held_time(df)[0]
    gpu = gpu_of_rows(df, info, facts.gw)
    worker = num(df, "worker")

    def clip(a: pd.Series, b: pd.Series) -> tuple[pd.Series, pd.Series]:
        s = np.minimum(a, end)
        return s, (np.minimum(a + b, end) - s).clip(lower=0)

    wait_start, wait_ms = clip(start + setup, wait)
    kernel_start, kernel_ms = clip(wait_start + wait_ms, kernel.fillna(0.0))
    prep_start, prep_ms = clip(kernel_start + kernel_ms, prep)
    frame = pd.DataFrame(
        {
            "gpu": gpu,
            "worker": worker,
            "job_id": text(df, "job_id"),
            "partition": num(df, "partition"),
            "status": text(df, "status"),
            "start_ms": start,
            "end_ms": end,
            "wait_start_ms": wait_start,
            "wait_ms": wait_ms,
            "wait_measured": lock.method == "measured",
            "kernel_start_ms": kernel_start,
            "kernel_ms": kernel_ms.where(total.notna(), 0.0),
            "prep_start_ms": prep_start,
            "prep_ms": prep_ms,
            "held_ms": held,
            "first_line": num(df, "first_line"),
            "last_line": num(df, "last_line"),
        }
    )[ok]
    frame["lane"] = [_lane(g, w) for g, w in zip(frame["gpu"], frame["worker"], strict=True)]
    frame = frame.sort_values(["gpu", "worker", "start_ms"], kind="stable").reset_index(drop=True)
    return Calls(frame, skipped=int((~ok).sum()))


def overlapping(calls: Calls) -> int:
    """Calls that start before the previous call of their worker ended (on main code a call's
    GPU_END follows its finalizer, while the worker already runs its next call)."""
    f = calls.frame
    prev_end = f.groupby("lane", sort=False)["end_ms"].shift()
    return int((f["start_ms"] < prev_end).sum())


def _lane(gpu: int, worker: float) -> str:
    w = "?" if pd.isna(worker) else str(int(worker))
    return f"GPU {int(gpu)} · worker {w}"


#: Phases of a call in ``lane_phases``, bottom to top, with the columns that place them.
PHASES: tuple[tuple[str, str, str], ...] = (
    ("kernels", "kernel_start_ms", "kernel_ms"),
    ("CPU prep wait", "prep_start_ms", "prep_ms"),
    ("lock wait", "wait_start_ms", "wait_ms"),
)
#: The rest of a call: CPU work outside the lock.
OTHER_PHASE = "CPU / other"


def lane_phases(calls: Calls, edges: np.ndarray) -> pd.DataFrame:
    """For a run too long to draw call by call: per worker lane and time bin, the share of the
    bin spent in each phase (``PHASES``, then ``OTHER_PHASE`` for the rest of the calls).

    Columns ``lane``, ``gpu``, ``worker``, ``t0_ms``, ``t1_ms``, ``phase``, ``share`` (0..1),
    ``calls`` (calls that started in the bin); bins where a lane was idle are left out.
    """
    parts = []
    for lane, sub in calls.frame.groupby("lane", sort=False):
        s, e = sub["start_ms"].to_numpy(), sub["end_ms"].to_numpy()
        total = mean_active(s, e, edges)
        started = np.histogram(s, bins=edges)[0]
        used = np.zeros_like(total)
        shares = {}
        for phase, start_col, ms_col in PHASES:
            ps = sub[start_col].to_numpy()
            share = mean_active(ps, ps + sub[ms_col].to_numpy(), edges)
            shares[phase] = share
            used += share
        shares[OTHER_PHASE] = np.clip(total - used, 0.0, None)
        for phase, share in shares.items():
            keep = share > 0
            parts.append(
                pd.DataFrame(
                    {
                        "lane": lane,
                        "gpu": int(sub["gpu"].iloc[0]),
                        "worker": sub["worker"].iloc[0],
                        "t0_ms": edges[:-1][keep],
                        "t1_ms": edges[1:][keep],
                        "phase": phase,
                        "share": share[keep],
                        "calls": started[keep],
                    }
                )
            )
    cols = ["lane", "gpu", "worker", "t0_ms", "t1_ms", "phase", "share", "calls"]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)


def mean_active(starts: np.ndarray, ends: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per bin ``[edges[i], edges[i+1])``: the mean number of the intervals active in it (the
    summed overlap over the bin's width; for intervals that never overlap, the covered share)."""
    widths = np.diff(edges)
    if len(starts) == 0:
        return np.zeros(len(widths))
    s = np.sort(np.asarray(starts, dtype=float))
    e = np.sort(np.asarray(ends, dtype=float))
    # active time up to t = Σ clip(t − s_i, 0, len_i) = Σ_{s_i<t} (t − s_i) − Σ_{e_i<t} (t − e_i)
    cs, ce = np.r_[0.0, np.cumsum(s)], np.r_[0.0, np.cumsum(e)]
    ns = np.searchsorted(s, edges, side="left")
    ne = np.searchsorted(e, edges, side="left")
    upto = (ns * edges - cs[ns]) - (ne * edges - ce[ne])
    out: np.ndarray = np.clip(np.diff(upto) / np.where(widths > 0, widths, 1.0), 0.0, None)
    return out


# -- synthesis and proofs -------------------------------------------------------------------


def pack_lanes(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Greedy interval partitioning: a row index per interval such that no two intervals of a row
    overlap, using as few rows as the largest overlap needs."""
    order = np.argsort(starts, kind="stable")
    row_end: list[float] = []
    out = np.zeros(len(starts), dtype=np.int64)
    for i in order:
        s, e = float(starts[i]), float(ends[i])
        for r, last in enumerate(row_end):
            if last <= s:
                row_end[r] = e
                out[i] = r
                break
        else:
            row_end.append(e)
            out[i] = len(row_end) - 1
    return out


def synth_spans(df: pd.DataFrame) -> pd.DataFrame:
    """One row per partition with SYNTH_START and SYNTH_END: job_id, partition, start/end, row."""
    start, end = num(df, "synth_start_ms"), num(df, "synth_end_ms")
    ok = start.notna() & end.notna() & (end >= start)
    out = pd.DataFrame(
        {
            "job_id": text(df, "job_id"),
            "partition": num(df, "partition"),
            "start_ms": start,
            "end_ms": end,
        }
    )[ok].reset_index(drop=True)
    out["row"] = pack_lanes(out["start_ms"].to_numpy(), out["end_ms"].to_numpy())
    return out


def proof_spans(
    df: pd.DataFrame, info: RunInfo, status: dict[str, str] | None = None
) -> pd.DataFrame:
    """One row per proof (job): its first TIMELINE event to its last GPU_END, status, row.

    ``status`` is ``job_status(df, info)`` when the caller has it already."""
    first = pd.concat(
        [num(df, c) for c in ("synth_start_ms", "queue_ms", "pickup_ms", "start_ms")], axis=1
    ).min(axis=1)
    last = pd.concat([num(df, c) for c in ("end_ms", "start_ms", "synth_end_ms")], axis=1).max(
        axis=1
    )
    frame = pd.DataFrame({"job_id": text(df, "job_id"), "first": first, "last": last}).dropna()
    cols = ["job_id", "start_ms", "end_ms", "partitions", "status", "row"]
    if frame.empty:
        return pd.DataFrame(columns=cols)
    spans = frame.groupby("job_id", sort=False).agg(
        start_ms=("first", "min"), end_ms=("last", "max"), partitions=("first", "size")
    )
    status = job_status(df, info) if status is None else status
    spans["status"] = [status.get(j, "incomplete") for j in spans.index]
    spans = spans.reset_index().sort_values("start_ms", kind="stable").reset_index(drop=True)
    spans["row"] = pack_lanes(spans["start_ms"].to_numpy(), spans["end_ms"].to_numpy())
    return spans[cols]


def aggregate_rows(frame: pd.DataFrame, max_bars: int) -> tuple[pd.DataFrame, int]:
    """Spans with a ``row`` reduced to about ``max_bars`` bars: up to k consecutive spans of a
    row become one bar (``items`` counts them). Returns (frame, k)."""
    if len(frame) <= max_bars or frame.empty:
        return frame.assign(items=1), 1
    k = math.ceil(len(frame) / max_bars)
    f = frame.sort_values(["row", "start_ms"], kind="stable")
    f = f.assign(block=f.groupby("row", sort=False).cumcount() // k)
    has_status = "status" in f.columns
    if has_status:  # a bar is as bad as its worst proof
        f = f.assign(rank=f["status"].map(STATUS_RANK).fillna(1))
    out = (
        f.groupby(["row", "block"], sort=False)
        .agg(
            job_id=("job_id", "first"),
            start_ms=("start_ms", "min"),
            end_ms=("end_ms", "max"),
            items=("start_ms", "size"),
            **({"rank": ("rank", "max")} if has_status else {}),
        )
        .reset_index()
        .drop(columns=["block"])
    )
    if has_status:
        names = {v: k_ for k_, v in STATUS_RANK.items()}
        out["status"] = out.pop("rank").map(names)
    return out, k


#: Proof statuses from best to worst.
STATUS_RANK = {"completed": 0, "incomplete": 1, "failed": 2}


# -- utilisation and throughput over time ---------------------------------------------------


def covered(starts: np.ndarray, ends: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Share of each bin ``[edges[i], edges[i+1])`` covered by the union of the intervals."""
    widths = np.diff(edges)
    if len(starts) == 0:
        return np.zeros(len(widths))
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], np.maximum.accumulate(ends[order])
    # merge: a new run starts where an interval begins after every earlier one ended
    new = np.r_[True, s[1:] > e[:-1]]
    run_start = s[new]
    run_end = np.r_[e[np.flatnonzero(new)[1:] - 1], e[-1]]
    # covered time up to t: piecewise linear through the merged runs
    xs = np.ravel(np.column_stack([run_start, run_end]))
    lengths = run_end - run_start
    cum = np.ravel(np.column_stack([np.r_[0.0, np.cumsum(lengths)[:-1]], np.cumsum(lengths)]))
    at = np.interp(edges, xs, cum, left=0.0, right=float(cum[-1]))
    out: np.ndarray = np.clip(np.diff(at) / np.where(widths > 0, widths, 1.0), 0.0, 1.0)
    return out


def bin_edges(t0: float, t1: float, bins: int = UTIL_BINS) -> np.ndarray:
    """Edges of about ``bins`` equal bins over ``[t0, t1]``, none shorter than
    ``UTIL_MIN_BIN_MS``."""
    width = max(UTIL_MIN_BIN_MS, (t1 - t0) / bins)
    n = max(1, math.ceil((t1 - t0) / width))
    return t0 + width * np.arange(n + 1)


def utilisation_series(calls: Calls) -> pd.DataFrame:
    """Per GPU and bin: the share of the bin each view counts as busy.

    Columns ``gpu``, ``t0_ms``, ``t1_ms``, ``view`` (``UTIL_VIEWS`` names), ``util`` (0..1).
    """
    f = calls.frame
    if f.empty:
        return pd.DataFrame(columns=["gpu", "t0_ms", "t1_ms", "view", "util"])
    parts = []
    for gpu, sub in f.groupby("gpu", sort=True):
        edges = bin_edges(float(sub["start_ms"].min()), float(sub["end_ms"].max()))
        acquire = (sub["wait_start_ms"] + sub["wait_ms"]).to_numpy()
        views = {
            "scheduler": (sub["start_ms"].to_numpy(), sub["end_ms"].to_numpy()),
            "lock held": (acquire, acquire + sub["held_ms"].fillna(0.0).to_numpy()),
            "kernels": (
                sub["kernel_start_ms"].to_numpy(),
                (sub["kernel_start_ms"] + sub["kernel_ms"]).to_numpy(),
            ),
        }
        for view, (s, e) in views.items():
            keep = e > s
            if view != "scheduler" and not keep.any():
                continue
            parts.append(
                pd.DataFrame(
                    {
                        "gpu": int(gpu),
                        "t0_ms": edges[:-1],
                        "t1_ms": edges[1:],
                        "view": view,
                        "util": covered(s[keep], e[keep], edges),
                    }
                )
            )
    return pd.concat(parts, ignore_index=True)


def throughput_series(
    df: pd.DataFrame,
    info: RunInfo,
    window: int | None = None,
    status: dict[str, str] | None = None,
) -> pd.DataFrame:
    """s/proof at each proof completion (a completed job's last GPU_END).

    ``rolling``: the time the last ``w`` completions took, over ``w`` (near the start, fewer,
    counted from the run's first SYNTH_START); ``w`` is ``window`` or a fifth of the
    completions, between 2 and ``THROUGHPUT_WINDOW``. ``cumulative``: time since the run's
    first SYNTH_START over the completions so far. Columns ``t_ms``, ``n``, ``job_id``,
    ``rolling_s``, ``cumulative_s``, ``window``.
    """
    cols = ["t_ms", "n", "job_id", "rolling_s", "cumulative_s", "window"]
    status = job_status(df, info) if status is None else status
    done = [j for j, s in status.items() if s == "completed"]
    jobs = text(df, "job_id")
    end = num(df, "end_ms")
    frame = pd.DataFrame({"job_id": jobs, "end": end})[jobs.isin(done)].dropna()
    if frame.empty:
        return pd.DataFrame(columns=cols)
    t_start = num(df, "synth_start_ms").min()
    if pd.isna(t_start):
        t_start = pd.concat([num(df, c) for c in ("queue_ms", "pickup_ms", "start_ms")]).min()
    comp = frame.groupby("job_id", sort=False)["end"].max().sort_values(kind="stable")
    t = comp.to_numpy(dtype=float)
    n = np.arange(1, len(t) + 1)
    if window is None:
        window = max(2, min(THROUGHPUT_WINDOW, len(t) // 5))
    w = max(1, min(window, len(t)))
    prev = np.r_[np.full(w, float(t_start)), t][: len(t)]  # t_{k-w}, the run start before that
    span = np.minimum(n, w)
    return pd.DataFrame(
        {
            "t_ms": t,
            "n": n,
            "job_id": comp.index.to_numpy(),
            "rolling_s": (t - prev) / span / 1000.0,
            "cumulative_s": (t - float(t_start)) / n / 1000.0,
            "window": span,
        }
    )
