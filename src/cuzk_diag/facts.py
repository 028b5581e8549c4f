"""Run facts: shape of the run, throughput, GPU utilisation, idle gaps, stage statistics and a
waterfall model of a typical partition (format reference sections 1.5, 5.2 and 7).

Everything here is computed from the partition frame (``records.PARTITION_SCHEMA``) and
``RunInfo``; the rules read these facts instead of recomputing them.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, cast

import numpy as np
import pandas as pd

from cuzk_diag.heap import hand_back
from cuzk_diag.records import EXACT_INT, OFFSET_COLUMNS, PARTITION_COLUMNS, RunInfo

#: Idle-gap buckets of proposal-8 (ms): < 50, 50-500, > 500 (the last are cross-sector gaps).
GAP_BUCKETS = (50.0, 500.0)
#: In V3-V7 ``gpu_ms - pre_destructor_ms`` is Rust pointer setup, a few ms; more than this is
#: time outside the C++ timer, i.e. the V1-V2 static-mutex wait.
WRAPPER_TOL_MS = 50.0
#: Unmodelled terms of the pre_destructor gap (thread spawn/join, msm_t dtors, cleanup) are a
#: few tens of ms; a remainder above the CPU excess by less than this is not called lock wait.
CPU_TOL_MS = 50.0
#: Where the waterfall's lock-wait segment comes from, by ``LockWait.method``.
_WAIT_SOURCE = {
    "measured": "mutex_wait_ms",
    "pre_destructor": "estimated from pre_destructor_ms",
    "clock": "estimated from the per-GPU queue of GPU_START..GPU_END and holds",
}

_COLUMN_ORDER = {name: i for i, (name, _) in enumerate(PARTITION_COLUMNS)}


# -- column access --------------------------------------------------------------------------


def num(df: pd.DataFrame, col: str) -> pd.Series:
    """A column as float64 with NaN for nulls (all-NaN when the column is absent)."""
    if col not in df.columns:
        return pd.Series(num_array(df, col), index=df.index, copy=False)
    # (The floats of an integer column are a new array, the Series' own: not copied again, as
    # pandas does by default. Those of a float column may be the frame's own.)
    own = not pd.api.types.is_integer_dtype(df[col].dtype)
    return pd.Series(num_array(df, col), index=df.index, name=col, copy=own)


def num_array(df: pd.DataFrame, col: str) -> np.ndarray:
    """``num`` as a numpy array (without the cost of a Series)."""
    if col not in df.columns:
        return np.full(len(df), np.nan)
    s = df[col]
    if pd.api.types.is_integer_dtype(s.dtype) or pd.api.types.is_float_dtype(s.dtype):
        # (The frame's numeric columns: the same values as ``to_numeric``, a third of the cost.)
        out: np.ndarray = s.to_numpy(dtype="float64", na_value=np.nan)
        return out
    out = pd.to_numeric(s, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    return out


def text(df: pd.DataFrame, col: str) -> pd.Series:
    """A string column as object dtype with None for nulls."""
    if col not in df.columns:
        return pd.Series([None] * len(df), index=df.index, dtype="object")
    s = df[col].astype("object")
    return s.where(s.notna(), None)


def is_value(df: pd.DataFrame, col: str, value: str) -> pd.Series:
    """Per row: whether ``col`` holds ``value`` (False where it is null or the column absent).
    The comparison of the column as it is: ``text(df, col) == value`` makes an object per row."""
    if col not in df.columns:
        return pd.Series(False, index=df.index)
    return (df[col] == value).fillna(False).astype(bool)


def is_one_of(df: pd.DataFrame, col: str, values: Iterable[str]) -> pd.Series:
    """``is_value`` for any of ``values``."""
    if col not in df.columns:
        return pd.Series(False, index=df.index)
    return df[col].isin(list(values)).fillna(False).astype(bool)


#: The ``prestage_setup`` values of a call that did not get a pre-staged d_a (reference
#: T11-T13).
PRESTAGE_FALLBACKS = ("skip_vram", "fallback", "silent")


def present(df: pd.DataFrame, col: str) -> pd.Series:
    """Per row: whether ``col`` holds a value (False where the column is absent)."""
    if col not in df.columns:
        return pd.Series(False, index=df.index)
    return df[col].notna()


def has(df: pd.DataFrame, col: str) -> bool:
    return col in df.columns and bool(df[col].notna().any())


def median(s: pd.Series) -> float | None:
    """The median of the values present (None when there are none)."""
    if pd.api.types.is_integer_dtype(s.dtype) or pd.api.types.is_float_dtype(s.dtype):
        # (What ``Series.median`` computes: numpy's median of the values as float64.)
        v = s.to_numpy(dtype="float64", na_value=np.nan)
        v = v[~np.isnan(v)]
        return median_of_sorted(sorted_values(v)) if len(v) else None
    s = s.dropna()
    return float(s.median()) if len(s) else None


#: Values of a column whose range is at most this many times their count (plus
#: ``_COUNTED_SLACK``) are sorted by their counts (``sorted_values``).
_COUNTED_SPAN = 4
_COUNTED_SLACK = 4096
#: Below this many values a sort costs less than the counting's passes.
_COUNTED_MIN = 64


def sorted_values(v: np.ndarray) -> np.ndarray:
    """``np.sort(v)`` of float64 values without NaN, the same doubles: where they are whole
    numbers (as durations in ms are) within a range no wider than ``_COUNTED_SPAN`` times their
    count, the sorted array is made from their counts (``np.bincount``, then ``np.repeat`` of
    each value as often as it occurs) in a few passes over the values and their range, where
    numpy's sort of doubles here took 1.9 ms a column of 87,210 calls (the 250 MB log's some
    forty sorts for the stage table and the medians, half of ``analyze_run``), the counts
    0.5 ms. A whole number has one double, so the values are the sort's; a ``-0.0`` (which the
    sort may place before or after a ``0.0``) or a value beyond ``2**53`` keeps the sort."""
    n = len(v)
    if n < _COUNTED_MIN:
        return np.sort(v)
    lo, hi = float(v.min()), float(v.max())
    if not (-EXACT_INT < lo and hi < EXACT_INT) or hi - lo > _COUNTED_SPAN * n + _COUNTED_SLACK:
        return np.sort(v)
    whole = v.astype(np.int64)
    if not np.array_equal(whole, v) or (lo <= 0.0 <= hi and bool(np.signbit(v[v == 0]).any())):
        return np.sort(v)
    base = int(lo)
    counts = np.bincount(whole - base)
    return np.repeat(np.arange(base, base + len(counts), dtype=np.float64), counts)


def median_of_sorted(s: np.ndarray) -> float:
    """``np.median`` of ``s``, sorted and without NaN, from its middle values as ``np.median``
    takes them (the mean of the middle one or two). np.median partitions the values instead,
    which here took three times as long as a sort: 1.0 ms against 0.3 a column on average,
    the 250 MB log's 27 stage columns of 87,210 calls."""
    h = len(s) // 2
    return float(np.mean(s[h - 1 : h + 1] if len(s) % 2 == 0 else s[h : h + 1]))


def p95_of_sorted(s: np.ndarray) -> float:
    """``np.percentile(s, 95)`` (pandas' ``quantile(0.95)``) of ``s``, sorted and without NaN:
    numpy's linear method on the two values around rank ``(n - 1) × 0.95``, by its steps
    (``_get_indexes``, ``_lerp``), so the same double."""
    n = len(s)
    at = (n - 1) * _Q95
    lo = math.floor(at)
    hi = lo + 1
    if at >= n - 1:  # (one value: numpy takes the last twice)
        lo = hi = -1
    t = at - lo
    a, b = float(s[lo]), float(s[hi])
    diff = b - a
    return b - diff * (1 - t) if t >= 0.5 else a + diff * t


class ColumnMedians:
    """``median(num(df, col))`` of a frame's columns, each worked out once: the stage table's
    figure where it has the column (``stage_table`` takes the same median of the same values).
    The facts' waterfall and the rules take some twenty medians of columns, nearly all of them
    of columns the stage table has (made first: ``analysis.analyze_run``)."""

    __slots__ = ("_df", "_known")

    def __init__(self, df: pd.DataFrame, stages: pd.DataFrame | None = None) -> None:
        self._df = df
        self._known: dict[str, float | None] = {}
        if stages is not None:
            fields, medians = stages["field"].tolist(), stages["median"].tolist()
            self._known.update(zip(fields, medians, strict=True))

    def __call__(self, col: str) -> float | None:
        if col not in self._known:
            self._known[col] = median(num(self._df, col))
        return self._known[col]


def _int(x: Any) -> int | None:
    try:
        return None if x is None or pd.isna(x) else int(x)
    except (TypeError, ValueError):
        return None


def _float(x: Any) -> float | None:
    try:
        return None if x is None or pd.isna(x) else float(x)
    except (TypeError, ValueError):
        return None


# -- stage table ----------------------------------------------------------------------------


def duration_columns(df: pd.DataFrame) -> list[str]:
    """Timing and TIMELINE duration columns (``*_ms``) that hold at least one value."""
    return [name for name, _ in _durations(df)]


def _durations(df: pd.DataFrame) -> Iterator[tuple[str, np.ndarray]]:
    """(column, ``num_array``) of each ``duration_columns`` column, in its order, one at a
    time (all thirty at once peaked at 18 MiB on the 250 MB benchmark log's 87,210 rows)."""
    names = [c for c in df.columns if c.endswith("_ms") and c not in OFFSET_COLUMNS]
    for c in sorted(names, key=lambda c: _COLUMN_ORDER.get(c, len(_COLUMN_ORDER))):
        v = num_array(df, c)
        if not np.isnan(v).all():
            yield c, v


def stage_values(partitions: pd.DataFrame) -> Iterator[tuple[str, np.ndarray]]:
    """(field, ms per row as float64 with NaN) for every stage of the stage table, in its order.

    Besides the log's own fields it has ``gpu_queue_wait_ms`` = GPU_PICKUP − CHAN_SEND/GPU_QUEUE
    (a partition's wait for a free GPU worker) when those TIMELINE events are present.
    """
    yield from _durations(partitions)
    qwait = num_array(partitions, "pickup_ms") - num_array(partitions, "queue_ms")
    if not np.isnan(qwait).all():
        yield "gpu_queue_wait_ms", qwait


def stage_series(partitions: pd.DataFrame) -> Iterator[tuple[str, pd.Series]]:
    """``stage_values`` as Series of the frame's index, one at a time."""
    for name, v in stage_values(partitions):
        yield name, pd.Series(v, index=partitions.index, name=name)


def stage_table(partitions: pd.DataFrame) -> pd.DataFrame:
    """One row per ``stage_series`` field: field, n, median, p95, mean, min, max (ms).

    Each figure by the numpy call pandas' ``Series.median``/``quantile``/``mean`` makes on the
    values (a tenth of the cost: a frame of any length pays pandas' per-call overhead for each
    of the seven figures of some thirty fields, which dominated the rules' run on live mode's
    window)."""
    rows = []
    for name, v in stage_values(partitions):
        v = v[~np.isnan(v)]
        if not len(v):
            continue
        s = sorted_values(v)  # (one sort for the median and the p95: numpy partitioned for each)
        rows.append(
            {
                "field": name,
                "n": len(v),
                "median": median_of_sorted(s),
                "p95": p95_of_sorted(s),
                "mean": float(v.mean()),  # (of ``v``: the sum depends on the order)
                "min": float(v.min()),
                "max": float(v.max()),
            }
        )
    return pd.DataFrame(rows, columns=["field", "n", "median", "p95", "mean", "min", "max"])


#: The quantile numpy's ``percentile`` takes for pandas' ``quantile(0.95)``: pandas asks for
#: ``0.95 * 100.0``, numpy divides it by 100.
_Q95 = float(np.true_divide(np.array([0.95]) * 100.0, 100)[0])


# -- lock wait (measured or inferred, reference section 1.5) --------------------------------

#: Lock hold beyond ``gpu_total_ms`` (sections 1.2 T6/T19 and 1.5): GPU-thread spawn and join
#: and the ``msm_t`` destructors, which run after T6 but before the unlock. Main code logs both
#: (``mutex_held_ms − gpu_total_ms``): a few ms.
HOLD_OVERHEAD_MS = 7.0
#: V4-V8 pre-staging inside the lock when T12 carries no timing (V5 logs ``total_ps_ms``): the
#: set-up averaged 18 ms (599522de) plus about 2 ms of cleanup before the unlock; a pre-stage
#: attempt that did not pre-stage still synchronises, trims the pool and reads the free VRAM.
PRESTAGE_OK_MS = 20.0
PRESTAGE_CHECK_MS = 3.0
#: GPU_START to the C++ entry: spawn_blocking and the Rust pointer set-up (about 1 ms), and
#: V4-V8 ``cudaHostRegister`` of a/b/c before the lock request (about 5 ms).
ENTRY_MS = 1.0
HOST_REGISTER_MS = 5.0
#: ``mutex_held_ms`` is a ``duration_cast`` floor: the hold is on average half a ms longer.
#: The clock estimate chains holds through a busy queue, where the truncation adds up (60
#: queued calls at gw=4 would drift 30 ms early without it).
HELD_TRUNCATION_MS = 0.5


@dataclass(frozen=True, slots=True)
class LockWait:
    """Per-partition GPU-mutex wait: measured (V11) or inferred (earlier code), with bounds."""

    method: str  # measured | pre_destructor | clock | none
    wait: pd.Series  # ms per row, NaN where unknown
    gap: pd.Series  # total − gpu_total_ms (NaN when not solved from a gap)
    known: pd.Series  # setup_to_split + epilogue + pre-stage setup: the logged part of the gap
    cpu_residual: pd.Series  # max(0, prep + b_g2 − (wait + gpu_total)) as solved
    total_field: str | None  # pre_destructor_ms | None
    low: pd.Series  # lower bound of the wait per row (= wait when measured)
    high: pd.Series  # upper bound of the wait per row (= wait when measured)

    @property
    def known_any(self) -> bool:
        return self.method != "none" and bool(self.wait.notna().any())

    def summary(self) -> dict[str, float | None]:
        """Median wait and the medians of its per-call bounds (ms)."""
        if not self.known_any:
            return {"median": None, "low": None, "high": None}
        wait = median(self.wait)
        # (A measured wait is its own bounds: one median, not three.)
        low = wait if self.low is self.wait else median(self.low)
        high = wait if self.high is self.wait else median(self.high)
        return {"median": wait, "low": low, "high": high}


def estimate_lock_wait(df: pd.DataFrame) -> LockWait:
    """Lock wait per partition.

    V11 logs ``mutex_wait_ms``. Phases 4-11 (``pre_destructor_ms``) solve it from the gap
    decomposition of section 1.5: ``total − gpu_total ≈ known + W + max(0, C − (W + G))`` where
    ``known`` = setup_to_split + epilogue + pre-stage setup, ``C`` = prep_msm + b_g2_msm, ``G`` =
    gpu_total. With ``R`` = gap − known this is ``R = max(W, C − G)``: when ``R`` exceeds the
    CPU excess ``max(0, C − G)`` (by ``CPU_TOL_MS``) the wait is ``R`` and the CPU residual 0;
    otherwise the gap is the CPU path and the wait cannot be told apart (taken as 0). V1-V2
    exclude the static-mutex wait from ``pre_destructor_ms``; it shows as
    ``gpu_ms − pre_destructor_ms`` and is added.

    Code that logs neither (Phase 12 and pool-cache) gets the ``clock`` estimate of
    :func:`clock_lock_wait`: the per-GPU mutex queue solved call by call from GPU_START,
    GPU_END and each call's hold.
    """
    nan = pd.Series(np.nan, index=df.index, dtype="float64")
    if has(df, "mutex_wait_ms"):
        w = num(df, "mutex_wait_ms")
        return LockWait("measured", w, nan, nan, nan, None, w, w)
    g = num(df, "gpu_total_ms")
    if not has(df, "pre_destructor_ms") or not g.notna().any():
        wait, low, high = clock_lock_wait(df)
        if wait.notna().any():
            return LockWait("clock", wait, nan, nan, nan, None, low, high)
        return LockWait("none", nan, nan, nan, nan, None, nan, nan)
    total = num(df, "pre_destructor_ms")
    beyond = num(df, "gpu_ms") - total
    outside = beyond.where(beyond > WRAPPER_TOL_MS, 0.0).fillna(0)
    known = (
        num(df, "setup_to_split_ms").fillna(0)
        + num(df, "epilogue_ms").fillna(0)
        + num(df, "total_ps_ms").fillna(0)
    )
    gap = total - g
    rest = gap - known
    cpu = num(df, "prep_msm_ms") + num(df, "b_g2_msm_ms")
    if cpu.notna().any():  # CPU lines that could not be attributed: use the run's median
        cpu = cpu.fillna(cpu.median())
    cpu_excess = (cpu - g).clip(lower=0).fillna(0)
    lock = rest.where(rest > cpu_excess + CPU_TOL_MS, 0.0).clip(lower=0)
    lock = lock.where(rest.notna())
    cpu_residual = (rest - lock).clip(lower=0)
    wait = lock + outside
    return LockWait(
        "pre_destructor", wait, gap, known, cpu_residual, "pre_destructor_ms", wait, wait
    )


def _holds(df: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """(estimate, low bound) of each call's lock hold in ms, NaN where the call logged none.

    ``mutex_held_ms`` where logged (+``HELD_TRUNCATION_MS``, −1 ms of truncation for the
    bound); otherwise
    ``gpu_total_ms`` plus the work inside the lock around the GPU threads: their spawn and join
    and the ``msm_t`` destructors (``HOLD_OVERHEAD_MS``) and, on V4-V8, the pre-staging
    (``total_ps_ms`` where logged, else ``PRESTAGE_OK_MS`` after ``prestage_setup=ok`` and
    ``PRESTAGE_CHECK_MS`` after another outcome). ``CUZK_NTT_H`` and the first call's T14/T15
    set-up print inside ``ntt_msm_h_ms``, so ``gpu_total_ms`` holds them already. The low bound
    is the logged part alone.
    """
    g = num(df, "gpu_total_ms")
    ps_logged = num(df, "total_ps_ms")
    checked = present(df, "prestage_setup")
    ps_model = pd.Series(
        np.where(
            is_value(df, "prestage_setup", "ok"),
            PRESTAGE_OK_MS,
            np.where(checked, PRESTAGE_CHECK_MS, 0),
        ),
        index=df.index,
        dtype="float64",
    )
    est = g + HOLD_OVERHEAD_MS + ps_logged.fillna(ps_model)
    low = g + ps_logged.fillna(0)
    held = num(df, "mutex_held_ms")
    return (held + HELD_TRUNCATION_MS).fillna(est), (held - 1).fillna(low)


def clock_lock_wait(df: pd.DataFrame) -> tuple[pd.Series, pd.Series, pd.Series]:
    """(wait, low, high) per call from the clock, for code that does not log the wait.

    Calls of one GPU whose GPU_START..GPU_END intervals overlap serialise on its mutex. A call
    requests the lock ``ENTRY_MS`` + ``setup_to_split_ms`` (+ ``HOST_REGISTER_MS`` on V4-V8)
    after its GPU_START and holds it for its hold (:func:`_holds`). Per GPU, in order of
    request, the queue is solved call by call: a call acquires the lock when it asks for it or
    when the call ahead of it releases it, whichever is later. The clock caps it: a call
    releases the lock before its GPU_END and before its worker's next GPU_START (the start
    function returns after the unlock), so a call that would release later acquired earlier.

    ``low`` is the wait behind the call that held the lock at the request alone, with the
    shortest holds (the mutex is not fair: with three or more workers a later waiter may go
    first); ``high`` is the latest acquisition the clock allows with the shortest hold of the
    call itself. When no call names its GPU (a capture without the tracing lines that map
    workers to GPUs) the workers are grouped per mutex by :func:`_by_worker_groups`. Calls
    without GPU_START, GPU_END or a GPU get NaN.
    """
    nan = pd.Series(np.nan, index=df.index, dtype="float64")
    start, end = num(df, "start_ms"), num(df, "end_ms")
    gpu, worker = num(df, "gpu"), num(df, "worker")
    timed = start.notna() & end.notna() & (end >= start)
    est, hold_lo = _holds(df)
    if not timed.any() or not est[timed].notna().any():
        return nan, nan, nan
    # a call that logged no hold (failed, lines lost): the run's median hold, shortest 0
    est = est.fillna(float(est[timed].median()))
    hold_lo = hold_lo.fillna(0.0)
    setup = num(df, "setup_to_split_ms")
    setup = setup.fillna(setup.median() if setup.notna().any() else 0.0)
    registered = present(df, "prestage_setup") | present(df, "host_register")
    request = start + ENTRY_MS + setup + np.where(registered, HOST_REGISTER_MS, 0.0)
    # the latest release the clock allows: GPU_END, and the worker's next GPU_START
    cap = end.copy()
    by_worker = pd.DataFrame({"w": worker, "s": start})[timed & worker.notna()]
    by_worker = by_worker.sort_values(["w", "s"], kind="stable")
    nxt = by_worker.groupby("w")["s"].shift(-1)
    cap.loc[nxt.index] = np.fmin(cap.loc[nxt.index], nxt)
    queue = _Queue(*(x.to_numpy(dtype="float64") for x in (request, est, hold_lo, cap)))
    if gpu[timed].isna().all() and worker[timed].notna().any():
        wait, low, high = _by_worker_groups(queue, worker.where(timed))
    else:
        wait, low, high, _ = queue.solve((timed & gpu.notna()).to_numpy(), gpu.to_numpy())
    w, lo, hi = (pd.Series(x, index=df.index, dtype="float64") for x in (wait, low, high))
    return w, lo, hi


#: A call the clock makes acquire the lock this much earlier than its queue position allows
#: (ms) does not fit the queue: too many of them (``MISFIT_SHARE``) and those workers do not
#: share one mutex (used only where no call names its GPU).
MISFIT_MS = 100.0
MISFIT_SHARE = 0.2


@dataclass(frozen=True, slots=True)
class _Queue:
    """Per-call arrays of the clock estimate: request, hold, shortest hold, latest release."""

    request: np.ndarray
    hold: np.ndarray
    short: np.ndarray
    cap: np.ndarray

    def solve(
        self, ok: np.ndarray, mutex: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """(wait, low, high, misfits) with the calls of each ``mutex`` value in one queue."""
        req, hold, short, cap = self.request, self.hold, self.short, self.cap
        n = len(req)
        wait, low, high = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
        misfits = 0
        for m in np.unique(mutex[ok]):
            idx = np.flatnonzero(ok & (mutex == m))
            idx = idx[np.argsort(req[idx], kind="stable")]
            free = best = -math.inf  # release of the call ahead; latest release among holders
            pending: list[tuple[float, float]] = []  # heap: (acquisition, short release)
            # (The queue's values as Python floats, the results gathered in lists and stored
            # once: a numpy array read or written one element at a time makes an object per
            # access, three times the cost of the arithmetic; the same doubles either way.)
            waits: list[float] = []
            lows: list[float] = []
            highs: list[float] = []
            for r, h, s, c in zip(
                req[idx].tolist(),
                hold[idx].tolist(),
                short[idx].tolist(),
                cap[idx].tolist(),
                strict=True,
            ):
                # (Each ``y if y > x else x`` is ``max(x, y)`` to the letter, and ``y if y < x
                # else x`` is ``min(x, y)``, without a call: the loop runs once per call.)
                queued = free if free > r else r  # max(r, free)
                latest = c - h
                latest = latest if latest > r else r  # max(r, c - h)
                # released after its GPU_END: it went earlier (min(queued, latest))
                acq = latest if latest < queued else queued
                misfits += queued - acq > MISFIT_MS
                free = acq + h
                w = acq - r
                while pending and pending[0][0] <= r:  # calls that held the lock by now
                    done = heapq.heappop(pending)[1]
                    best = done if done > best else best  # max(best, done)
                behind = best - r
                behind = behind if behind > 0.0 else 0.0  # max(0.0, best - r)
                waits.append(w)
                lows.append(behind if behind < w else w)  # min(w, behind)
                last = c - s - r
                highs.append(last if last > w else w)  # max(w, c - s - r)
                heapq.heappush(pending, (acq, acq + s))
            wait[idx], low[idx], high[idx] = waits, lows, highs
        return wait, low, high, misfits


def _by_worker_groups(
    queue: _Queue, worker: pd.Series
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The queues when no call names its GPU (a capture without the tracing lines that map
    workers to GPUs). Workers are GPU-major (``gpus[worker / gw]``), so every divisor of the
    number of workers is a possible gw; one fits the clock when at most ``MISFIT_SHARE`` of the
    calls would have to release the lock after their GPU_END or their worker's next GPU_START.
    The estimate takes the largest gw that fits; the bounds span every gw that fits."""
    ok = worker.notna().to_numpy()
    w = worker.to_numpy()
    n_workers = int(np.nanmax(w)) + 1
    fits = []
    for gw in (g for g in range(n_workers, 0, -1) if n_workers % g == 0):
        wait, low, high, misfits = queue.solve(ok, np.floor_divide(w, gw))
        if misfits <= MISFIT_SHARE * ok.sum() or gw == 1:  # gw=1: no queue, always fits
            fits.append((wait, low, high))
    wait = fits[0][0]
    low = np.fmin.reduce([f[1] for f in fits])
    high = np.fmax.reduce([f[2] for f in fits])
    return wait, low, high


def barrier_estimate(df: pd.DataFrame, lock: LockWait) -> tuple[pd.Series, pd.Series, str]:
    """GPU-thread wait for CPU pre-processing: (barrier, unaccounted, method) per row.

    V11 logs ``barrier_wait_ms``. Before, the GPU-region time not in NTT+H, batch add and tail
    MSM (``gpu_total − ntt − batch − tail``) holds the barrier wait plus unmeasured gaps; it is
    attributed to the barrier only up to ``max(0, prep_msm − lock wait − ntt_msm_h)`` (prep
    starts at the lock request, the GPU thread at the acquisition), the rest is ``unaccounted``.
    Without a lock-wait estimate the whole remainder is an upper bound.
    """
    if has(df, "barrier_wait_ms"):
        b = num(df, "barrier_wait_ms")
        return b, pd.Series(0.0, index=df.index), "measured"
    # (numpy arrays, each step in place where it can be: the same values as the Series
    # steps, with three arrays of a value per call at a time instead of eight.)
    ntt = num_array(df, "ntt_msm_h_ms")
    rest = num_array(df, "gpu_total_ms") - ntt
    rest -= num_array(df, "batch_add_ms")
    rest -= num_array(df, "tail_msm_ms")
    rest[rest < 0] = 0.0  # (``clip(lower=0)``: NaN stays)
    if lock.known_any:
        bound = num_array(df, "prep_msm_ms") - lock.wait.fillna(0).to_numpy(dtype=np.float64)
        bound -= ntt
        del ntt
        bound[bound < 0] = 0.0
        np.copyto(bound, rest, where=np.isnan(bound))
        barrier = np.minimum(rest, bound, out=bound)  # (NaN where ``rest`` is)
        return (
            pd.Series(barrier, index=df.index),
            pd.Series(rest - barrier, index=df.index),
            "estimated",
        )
    zero = np.where(np.isnan(rest), np.nan, 0.0)
    return pd.Series(rest, index=df.index), pd.Series(zero, index=df.index), "upper_bound"


# -- GPU utilisation and idle gaps (reference section 7) ------------------------------------

#: Measured GPU kernel stages of a call (T4, T5, T6): its kernel time when no CUZK_NTT_H line.
KERNEL_STAGES: tuple[str, ...] = ("ntt_msm_h_ms", "batch_add_ms", "tail_msm_ms")
#: CUZK_NTT_H parts that are GPU work (T16): the copies and NTTs, the coset iNTT and its sync,
#: the H-MSM. ``d_b_alloc``, ``msm_init`` and ``msm_dtor`` are allocation and object set-up.
NTT_H_KERNEL_PARTS: tuple[str, ...] = ("ntt_kernels_ms", "coset_intt_sync_ms", "msm_invoke_ms")


def lock_held_time(df: pd.DataFrame) -> tuple[pd.Series, str | None]:
    """Per call, the time the GPU mutex was held: ``mutex_held_ms`` (V11), else ``gpu_total_ms``.

    ``gpu_total_ms`` is the GPU thread's region under the lock; it includes the barrier wait for
    the CPU's pre-processing (reference T6). Returns (ms per row, the field(s) used).
    """
    held = num(df, "mutex_held_ms")
    total = num(df, "gpu_total_ms")
    if held.notna().any():  # calls that printed no T19 (failed calls) count gpu_total_ms
        return held.fillna(total), "mutex_held_ms"
    return total, "gpu_total_ms" if total.notna().any() else None


def kernel_time(df: pd.DataFrame) -> tuple[pd.Series, str | None]:
    """Per call, the sum of its measured kernel stages (no barrier wait, no unlogged gaps).

    ``ntt_msm_h_ms + batch_add_ms + tail_msm_ms``; where a one-thread call printed its
    ``CUZK_NTT_H`` line, its kernel parts (``ntt_kernels + coset_intt_sync + msm_invoke``)
    replace ``ntt_msm_h_ms``, which also holds the ``d_a``/``d_b`` allocations. Calls fanned out
    over several GPU threads keep ``ntt_msm_h_ms`` (their NTT_H lines are summed over threads).
    Returns (ms per row, NaN where no stage was logged; a description of the fields used).
    """
    # (In place, with one array of a value per call at a time beside the result: on a 1 GB log
    # the frames of pandas' version took 29 MiB. ``num_array`` may hand over a frame's own float
    # column, read-only: the first sum makes the array written to.)
    a, b, c = NTT_H_KERNEL_PARTS
    ntt_h = num_array(df, a) + num_array(df, b)
    ntt_h += num_array(df, c)
    threads = num_array(df, "gpu_threads")
    ntt_h[threads > 1] = np.nan  # (no thread count: one thread)
    del threads
    missing = np.isnan(ntt_h)
    one_thread_h = not missing.all()
    ntt_h[missing] = num_array(df, "ntt_msm_h_ms")[missing]  # the stage: ntt_h, else ntt_msm_h
    # The sum of the stages with a value, as ``DataFrame.sum(axis=1, min_count=1)`` adds them
    # (a missing one as 0.0, in this order), NaN where none has one.
    logged = ~np.isnan(ntt_h)
    kernel = np.where(logged, ntt_h, 0.0)
    del ntt_h
    for col in ("batch_add_ms", "tail_msm_ms"):
        stage = num_array(df, col)
        has = ~np.isnan(stage)
        logged |= has
        kernel += np.where(has, stage, 0.0)
    kernel[~logged] = np.nan
    out = pd.Series(kernel, index=df.index)
    if not logged.any():
        return out, None
    if one_thread_h:
        return out, "CUZK_NTT_H ntt_kernels + coset_intt_sync + msm_invoke, batch_add + tail_msm"
    return out, "ntt_msm_h_ms + batch_add_ms + tail_msm_ms"


@dataclass(frozen=True, slots=True)
class IdleGap:
    """A hole in one GPU's merged GPU_START..GPU_END union."""

    gpu: int
    start_ms: float
    end_ms: float
    duration_ms: float
    before_job: str | None
    after_job: str | None

    @property
    def between_proofs(self) -> bool:
        return self.before_job != self.after_job

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "between_proofs": self.between_proofs}


@dataclass(frozen=True, slots=True)
class IdleGaps:
    """Idle gaps as columns, in the order found (GPU by GPU, each in time order).

    A long log has about one gap a call: as ``IdleGap`` objects they took 72,000 objects and
    16 MiB on a 250 MB log. ``IdleGap`` is the view of one (``gaps[i]``, iteration, ``largest``).
    """

    gpu: np.ndarray  # int64
    start_ms: np.ndarray  # float64: the GPU_END before the gap
    end_ms: np.ndarray  # float64: the GPU_START after it
    before: np.ndarray  # int64: the job before the gap, an index into ``names``
    after: np.ndarray  # int64: the job after it
    names: Sequence[str | None]  # job ids (``job_codes``); the last entry None, index -1

    @classmethod
    def empty(cls) -> IdleGaps:
        f, i = np.empty(0, dtype=np.float64), np.empty(0, dtype=np.int64)
        return cls(i, f, f, i, i, [None])

    @classmethod
    def concat(cls, parts: list[IdleGaps]) -> IdleGaps:
        """The gaps of several GPUs of one frame (their ``names`` are the same list), taken
        out of ``parts``, which is left empty: each column of the parts is let go once it is
        joined, where the whole parts were held beside the whole result (a 1 GB log's gaps are
        14 MiB: the analysis's largest step, 20 MiB above what it held). The parts' arrays are
        let go if ``parts`` held the only references to them."""
        if not parts:
            return cls.empty()
        names = parts[0].names
        fields = ("gpu", "start_ms", "end_ms", "before", "after")
        columns = [{k: getattr(p, k) for k in fields} for p in parts]
        parts.clear()
        joined = {k: np.concatenate([c.pop(k) for c in columns]) for k in fields}
        return cls(**joined, names=names)

    def split(self, sizes: Sequence[int]) -> list[IdleGaps]:
        """Consecutive runs of ``sizes`` gaps (``concat``'s parts back), as views of these
        arrays: no copy."""
        out, lo = [], 0
        for n in sizes:
            at = slice(lo, lo + n)
            out.append(
                IdleGaps(
                    self.gpu[at],
                    self.start_ms[at],
                    self.end_ms[at],
                    self.before[at],
                    self.after[at],
                    self.names,
                )
            )
            lo += n
        return out

    def __len__(self) -> int:
        return len(self.gpu)

    def __getitem__(self, i: int) -> IdleGap:
        names = self.names
        return IdleGap(
            int(self.gpu[i]),
            float(self.start_ms[i]),
            float(self.end_ms[i]),
            float(self.end_ms[i] - self.start_ms[i]),
            names[int(self.before[i])],
            names[int(self.after[i])],
        )

    def __iter__(self) -> Iterator[IdleGap]:
        return (self[i] for i in range(len(self)))

    @property
    def duration_ms(self) -> np.ndarray:
        d: np.ndarray = self.end_ms - self.start_ms
        return d

    @property
    def between_proofs(self) -> np.ndarray:
        """Per gap: do the calls on either side belong to different proofs?"""
        differ: np.ndarray = self.before != self.after
        return differ

    def total_ms(self) -> float:
        """Σ durations, added in order (0 without gaps)."""
        return sum_in_order(self.duration_ms)

    def largest(self, n: int) -> list[IdleGap]:
        """The ``n`` longest, longest first (in the order found among equals)."""
        d = self.duration_ms
        at = np.arange(len(d))
        if 0 < n < len(d):
            # Only the gaps as long as the n-th longest are ordered: a stable sort of all of
            # them took 12 ms of the 250 MB log's 72,036 gaps, a partition finds these in 0.2.
            # (A NaN, which a gap's ends never are, would go last in the partition too.)
            cut = np.partition(d, len(d) - n)[len(d) - n]
            if not np.isnan(cut):
                at = np.flatnonzero(d >= cut)
        order = at[np.argsort(-d[at], kind="stable")][:n]
        return [self[int(i)] for i in order]


#: How far a lock-held or kernel view's sum may pass its span. A GPU's calls hold its lock one
#: at a time, inside the span, and run their kernels under it: only the rounding of their whole
#: milliseconds (one a call) and the two clocks' disagreement (a part in fifty) can take the sum
#: past the span. Beyond that, a duration in it cannot be true (a damaged line's digits), and
#: the view is not shown (``RunFacts.over_span``) rather than a share of thousands of per cent.
OVER_SPAN = 1.02


def over_span(total_ms: float, span_ms: float, calls: int) -> bool:
    """Whether ``total_ms`` of the ``calls`` of a span of ``span_ms`` passes it by more than
    rounding and the clocks explain (``OVER_SPAN``)."""
    return total_ms > span_ms * OVER_SPAN + calls


def share_of_span(total_ms: float, span_ms: float, calls: int) -> float | None:
    """``total_ms`` as a share of ``span_ms``: None without either, or ``over_span``."""
    if span_ms <= 0 or total_ms <= 0 or over_span(total_ms, span_ms, calls):
        return None
    return total_ms / span_ms


@dataclass(frozen=True, slots=True)
class GpuUsage:
    """Utilisation of one GPU over its first-start..last-end span, in three views.

    Scheduler view: the union of the calls' ``[GPU_START, GPU_END]`` (a call counts from the
    worker's pick-up, lock wait and CPU work included). Lock-held view: Σ ``mutex_held_ms``
    (else ``gpu_total_ms``), which includes the GPU thread's barrier wait for the CPU. Kernel
    view: Σ of the measured kernel stages (``kernel_time``).
    """

    gpu: int
    calls: int
    workers: int
    span_ms: float
    busy_ms: float  # |union of [GPU_START, GPU_END]|
    held_ms: float  # Σ mutex_held_ms (else gpu_total_ms) of the calls in the span
    kernel_ms: float  # Σ kernel stages of the calls in the span
    barrier_ms: float  # Σ barrier wait (measured or estimated) of the calls in the span
    gaps: IdleGaps

    @property
    def util(self) -> float | None:
        return self.busy_ms / self.span_ms if self.span_ms > 0 else None

    @property
    def held_util(self) -> float | None:
        return share_of_span(self.held_ms, self.span_ms, self.calls)

    @property
    def kernel_util(self) -> float | None:
        return share_of_span(self.kernel_ms, self.span_ms, self.calls)

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu,
            "calls": self.calls,
            "workers": self.workers,
            "span_ms": self.span_ms,
            "busy_ms": self.busy_ms,
            "held_ms": self.held_ms,
            "kernel_ms": self.kernel_ms,
            "barrier_ms": self.barrier_ms,
            "util": self.util,
            "held_util": self.held_util,
            "kernel_util": self.kernel_util,
            "idle_gaps": len(self.gaps),
            "idle_ms": self.gaps.total_ms(),
        }


def gpu_of_rows(df: pd.DataFrame, info: RunInfo, gw: int | None) -> pd.Series:
    """GPU ordinal per row: the ``gpu`` column, else ``gpus[worker // gw]`` (section 3.1), or 0."""
    # (Only the rows without a ``gpu`` are worked out, with arrays of their size: on a 1 GB
    # log whose every call names its GPU, the Series steps of every row took 25 MiB.)
    gpu = num_array(df, "gpu")
    missing = np.flatnonzero(np.isnan(gpu))
    if len(missing):  # (``num_array`` may hand over an array of the frame's, read-only)
        gpu = gpu.copy()
        gpu[missing] = _gpu_of_workers(num_array(df, "worker")[missing], info, gw)
    out = np.where(np.isnan(gpu), 0.0, gpu).astype(np.int64)
    return pd.Series(out, index=df.index, name="gpu" if "gpu" in df.columns else None)


def _gpu_of_workers(worker: np.ndarray, info: RunInfo, gw: int | None) -> np.ndarray:
    """The GPU of each worker number (float, NaN for none): its ``worker_gpu`` entry, else
    ``gpus[worker // gw]`` (the ordinal ``worker // gw`` where ``gpus`` has none), else NaN."""
    gpu = np.full(len(worker), np.nan)
    by_worker = {float(w): g for w, g in info.worker_gpu.items() if isinstance(w, int)}
    if by_worker:
        keys = np.fromiter(by_worker, dtype=np.float64, count=len(by_worker))
        values = pd.to_numeric(pd.Series(list(by_worker.values())), errors="coerce")
        order = np.argsort(keys)
        keys, values = keys[order], values.to_numpy("float64")[order]
        at = np.minimum(np.searchsorted(keys, worker), len(keys) - 1)
        gpu = np.where(keys[at] == worker, values[at], gpu)  # (NaN equals no key)
    if gw:
        idx = np.floor_divide(worker, gw)
        if info.gpus:
            ordinals = pd.to_numeric(pd.Series(info.gpus), errors="coerce").to_numpy("float64")
            listed = ~np.isnan(idx) & (idx >= 0) & (idx < len(ordinals))
            at = ordinals[np.where(listed, idx, 0).astype(np.int64)]
            idx = np.where(listed, at, idx)
        gpu = np.where(np.isnan(gpu), idx, gpu)
    return gpu


#: ``job_codes`` of a frame: worked out once per analysis and handed to the steps that use it.
JobCodes = tuple[np.ndarray, list[str | None]]


def job_codes(df: pd.DataFrame) -> JobCodes:
    """Each row's job id as an index into a list of the ids, whose last entry (index -1) is None
    for a row without one: one string object per job, where ``text`` makes one per row (a long
    log has about one idle gap per call, and each gap keeps two)."""
    if "job_id" not in df.columns:
        return np.full(len(df), -1, dtype=np.intp), [None]
    codes, uniques = pd.factorize(df["job_id"])
    # (``tolist`` first: the ids as Python texts in one call, where iterating an Index of
    # Arrow texts makes a step of pandas' per id, 17 ms on the 250 MB log's 8,721 jobs.)
    return codes, [*(str(u) for u in uniques.tolist()), None]


#: The values ``sum_in_order`` makes Python floats of at a time.
_SUM_CHUNK = 1 << 14


def sum_in_order(values: np.ndarray) -> float:
    """``sum(values.tolist())``: Python's ``sum`` over the same floats in the same order (so
    the same result, whatever the interpreter's way of adding them), made a chunk at a time:
    the idle gaps of a 1 GB log as one list were 8.6 MiB of Python floats in its report."""
    total: float = sum(
        itertools.chain.from_iterable(
            values[i : i + _SUM_CHUNK].tolist() for i in range(0, len(values), _SUM_CHUNK)
        )
    )
    return total


def busy_and_gaps(
    starts: np.ndarray, ends: np.ndarray, jobs: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The union of one GPU's calls ``starts[i]..ends[i]`` (float ms, sorted by start, no end
    before its start), walked in start order: (busy ms, and per idle gap its start, its end,
    the job of the call the GPU was busy with before it and the job of the call after it).

    The call "before" a gap is the latest-ending one so far (a tie goes to the later call).
    Computed with running maxima, no step per call; the busy time is the sum of the merged
    intervals taken left to right (``np.add.accumulate``), as a loop over them adds it.
    """
    n = len(starts)
    reach = np.maximum.accumulate(ends)  # the latest end so far
    at = np.flatnonzero(starts[1:] > reach[:-1])  # calls that start after an idle gap ...
    at += 1  # (... by their numbers)
    # The call the GPU is busy with last at each call: the latest one that reached as far as
    # the calls before it (each call's number, 0 for one that did not, as a running maximum;
    # one array, filled in place: on a 1 GB log each is 1.4 MiB a GPU).
    last = np.arange(n)
    last[1:][ends[1:] < reach[:-1]] = 0
    np.maximum.accumulate(last, out=last)
    # Each merged interval from its first call to the call before the next one; the arrays
    # let go as soon as used (a GPU's walk held 11 MiB at once on a 1 GB log, now 7).
    spans = reach[np.concatenate((at - 1, [n - 1]))]
    spans -= starts[np.concatenate(([0], at))]
    busy = float(np.add.accumulate(spans, out=spans)[-1])
    del spans
    prev = at - 1
    gap_start = reach[prev]
    del reach
    before = jobs[last[prev]]
    del last, prev
    return busy, gap_start, starts[at], before, jobs[at]


def gpu_usage(
    df: pd.DataFrame,
    gpu: pd.Series,
    barrier: pd.Series | None = None,
    jobs: JobCodes | None = None,
) -> list[GpuUsage]:
    """Utilisation per GPU from TIMELINE GPU_START/GPU_END (calls lacking either are skipped).

    ``barrier`` is the per-call barrier wait (``barrier_estimate``); without it 0 is summed.
    ``jobs``: ``job_codes(df)``, if known.
    """
    # (numpy arrays of a value per call, not Series, each let go once read, and the sums per
    # GPU taken before the intervals are walked: on a 1 GB log this step held the analysis's
    # heap peak, 38.7 of its 56.8 MB, in arrays of a value per call. The sums skip NaN as
    # ``Series.sum`` does, by the same steps: NaN as 0.0, then ``sum`` over the GPU's calls in
    # row order.)
    start, end = num_array(df, "start_ms"), num_array(df, "end_ms")
    ok = ~np.isnan(start)
    ok &= ~np.isnan(end)
    ok &= end >= start  # (a comparison with NaN is false, without a warning)
    del start, end  # (read again for the walk, after the sums)
    if not ok.any():
        return []
    gpus = gpu.to_numpy()
    # (Each GPU's rows, then one array of a value per call at a time for the sums over them.)
    rows = {int(g): np.flatnonzero(ok & (gpus == g)) for g in np.unique(gpus[ok])}
    del ok

    def sums(values: np.ndarray | None) -> list[float]:
        """Each GPU's ``nansum`` of ``values`` over its rows (0.0 without values)."""
        return [float(np.nansum(values[r])) if values is not None else 0.0 for r in rows.values()]

    worker = num_array(df, "worker")
    n_workers = [len(np.unique(w[~np.isnan(w)])) for w in (worker[r] for r in rows.values())]
    del worker
    held_sums = sums(lock_held_time(df)[0].to_numpy())
    kernel_sums = sums(kernel_time(df)[0].to_numpy())
    barrier_sums = sums(
        barrier.to_numpy(dtype="float64", na_value=np.nan) if barrier is not None else None
    )
    codes, names = jobs or job_codes(df)
    # (The sums' arrays handed back before the walk, and each GPU's walk's after it: the
    # arrays it keeps, its gaps, are of other sizes than those it freed, and the heap grew
    # past its holes; on the 1 GB log this step's peak fell by 9 MiB.)
    hand_back()
    start, end = num_array(df, "start_ms"), num_array(df, "end_ms")
    out = []
    for g, workers_n, held_ms, kernel_ms, barrier_ms in zip(
        list(rows), n_workers, held_sums, kernel_sums, barrier_sums, strict=True
    ):
        sel = rows.pop(g)  # (let go once walked)
        calls = len(sel)
        starts = start[sel]
        order = np.argsort(starts, kind="stable")
        starts = starts[order]
        ends = end[sel][order]
        job_ids = codes[sel][order].astype(np.int64, copy=False)
        del sel, order
        busy, gap_s, gap_e, gap_before, gap_after = busy_and_gaps(starts, ends, job_ids)
        del job_ids
        hand_back()
        gaps = IdleGaps(
            np.full(len(gap_s), g, dtype=np.int64), gap_s, gap_e, gap_before, gap_after, names
        )
        out.append(
            GpuUsage(
                gpu=g,
                calls=calls,
                workers=workers_n,
                span_ms=float(ends.max() - starts[0]),
                busy_ms=busy,
                held_ms=held_ms,
                kernel_ms=kernel_ms,
                barrier_ms=barrier_ms,
                gaps=gaps,
            )
        )
    return out


# -- waterfall of a typical partition -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Segment:
    """One bar of the waterfall: a phase of a typical call, at its median duration."""

    name: str
    lane: str  # cpu | lock | gpu
    start_ms: float
    duration_ms: float
    source: str  # the field(s) it comes from
    measured: bool  # False for estimates (drawn differently)

    @property
    def end_ms(self) -> float:
        return self.start_ms + self.duration_ms


@dataclass(frozen=True, slots=True)
class Waterfall:
    """Median phases of one call laid out on a common time axis (ms from the call's entry)."""

    segments: tuple[Segment, ...]
    total_ms: float
    reference: dict[str, float | None]  # measured whole-call figures to compare with

    def to_dict(self) -> dict[str, Any]:
        return {
            "total_ms": self.total_ms,
            "segments": [{**asdict(s), "end_ms": s.end_ms} for s in self.segments],
            "reference": dict(self.reference),
        }


def waterfall(
    df: pd.DataFrame,
    lock: LockWait,
    barrier: tuple[pd.Series, str] | None = None,
    medians: ColumnMedians | None = None,
) -> Waterfall | None:
    """Median waiting, CPU prep, NTT+H, barrier, batch add, tail MSM and epilogue/finalize.

    Each phase is its median over the calls that logged it, placed by the code's order
    (section 1.4): setup, then the lock wait with prep_msm (and b_g2_msm after it) running
    alongside on the prep thread; after the acquisition pre-stage setup, NTT+H, barrier wait,
    batch add, tail MSM; after unlock the epilogue (V1-V7) or finalize (V11 ``finish_ms``).

    ``barrier``: the barrier wait per row and its method (``barrier_estimate``), if known;
    ``medians``: the frame's ``ColumnMedians``, if known.
    """
    column_median = medians or ColumnMedians(df)
    g = column_median("gpu_total_ms")
    if g is None:
        return None

    def med(col: str) -> float:
        return column_median(col) or 0.0

    segs: list[Segment] = []

    def add(name: str, lane: str, start: float, dur: float | None, src: str, meas: bool) -> float:
        if dur is not None and dur > 0:
            segs.append(Segment(name, lane, start, float(dur), src, meas))
            return start + float(dur)
        return start

    if has(df, "pre_lock_cpu_ms"):
        setup_end = add("setup", "cpu", 0.0, med("pre_lock_cpu_ms"), "pre_lock_cpu_ms", True)
    else:
        setup_end = add("setup", "cpu", 0.0, med("setup_to_split_ms"), "setup_to_split_ms", True)
    bounds = lock.summary()
    source = _WAIT_SOURCE.get(lock.method, lock.method)
    if lock.method == "clock":
        source += f"; per-call bounds, medians: {bounds['low']:.0f}-{bounds['high']:.0f} ms"
    acquired = add(
        "lock wait", "lock", setup_end, bounds["median"], source, lock.method == "measured"
    )
    prep_end = add("CPU prep (prep_msm)", "cpu", setup_end, med("prep_msm_ms"), "prep_msm_ms", True)
    bg2_end = add("b_g2_msm", "cpu", prep_end, med("b_g2_msm_ms"), "b_g2_msm_ms", True)
    t = add("pre-stage setup", "gpu", acquired, med("total_ps_ms"), "total_ps_ms", True)
    region_start = t
    t = add("NTT+H", "gpu", t, med("ntt_msm_h_ms"), "ntt_msm_h_ms", True)
    if barrier is None:
        wait, _, method = barrier_estimate(df, lock)
        barrier = wait, method
    t = add(
        "barrier wait",
        "gpu",
        t,
        median(barrier[0]),
        "barrier_wait_ms" if barrier[1] == "measured" else "gpu_total − ntt − batch − tail",
        barrier[1] == "measured",
    )
    t = add("batch add", "gpu", t, med("batch_add_ms"), "batch_add_ms", True)
    t = add("tail MSM", "gpu", t, med("tail_msm_ms"), "tail_msm_ms", True)
    region_end = max(t, region_start + g)
    add(
        "unaccounted",
        "gpu",
        t,
        region_end - t if region_end - t >= 1 else None,
        "gpu_total − phases",
        False,
    )
    unlock = region_end
    if has(df, "mutex_held_ms"):
        unlock = region_start + max(med("mutex_held_ms"), g)
        add("held, not GPU", "gpu", region_end, unlock - region_end, "mutex_held − gpu_total", True)
    if has(df, "epilogue_ms"):
        end = add("epilogue", "cpu", max(unlock, bg2_end), med("epilogue_ms"), "epilogue_ms", True)
    elif has(df, "finish_ms"):
        end = add("finalize", "cpu", unlock, med("finish_ms"), "finish_ms", True)
    else:
        end = max(unlock, bg2_end)
    total = max([end, *(s.end_ms for s in segs)])
    reference = {
        c: column_median(c)
        for c in ("pre_destructor_ms", "total_start_fn_ms", "gpu_ms")
        if has(df, c)
    }
    return Waterfall(tuple(segs), total, reference)


# -- run facts ------------------------------------------------------------------------------


@dataclass(slots=True)
class RunFacts:
    """What kind of run this was and how it performed."""

    era: str = "unknown"
    timeline_era: str = "none"
    gpus: list[int] = field(default_factory=list)
    gw: int | None = None  # GPU workers per device
    gw_source: str | None = None  # log | inferred
    workers: int = 0  # distinct GPU workers seen
    gpu_threads: int | None = None
    proofs: int | None = None  # jobs
    proofs_completed: int = 0
    proofs_failed: int = 0
    partitions: int = 0  # GPU calls (rows)
    partitions_ok: int = 0
    partitions_failed: int = 0
    partitions_incomplete: int = 0
    partitions_per_proof: float | None = None
    max_proofs_in_flight: int | None = None
    bench_count: int | None = None  # cuzk-bench -c
    bench_concurrency: int | None = None  # cuzk-bench -j
    total_secs: float | None = None
    s_per_proof: float | None = None
    s_per_proof_source: str | None = None  # bench | timeline
    span_ms: float | None = None  # Σ over GPUs of first GPU_START .. last GPU_END
    gpu_util: float | None = None  # scheduler view: merged GPU_START..GPU_END / span
    held_util: float | None = None  # lock-held view: Σ mutex_held_ms (else gpu_total_ms) / span
    kernel_util: float | None = None  # kernel view: Σ measured kernel stages / span
    held_source: str | None = None  # the field(s) of the lock-held view
    kernel_source: str | None = None  # the field(s) of the kernel view
    over_span: list[str] = field(default_factory=list)  # views not shown: Σ past the span
    barrier_share: float | None = None  # Σ barrier wait / Σ lock held (calls in the span)
    barrier_method: str | None = None  # measured | estimated | upper_bound
    per_gpu: list[GpuUsage] = field(default_factory=list)
    idle_gaps: IdleGaps = field(default_factory=IdleGaps.empty)
    lock_wait_method: str = "none"
    lock_wait_ms: float | None = None  # median lock wait, measured or inferred
    lock_wait_ms_low: float | None = None  # medians of the per-call bounds (= median unless
    lock_wait_ms_high: float | None = None  # the method is an estimate with bounds: clock)
    waterfall: Waterfall | None = None
    wall_clock_start: str | None = None  # UTC of the first GPU_START (ISO 8601), if known
    wall_clock_end: str | None = None  # UTC of the last GPU_END
    wall_clock_calls: int = 0  # calls with a wall-clock start_ts

    @property
    def n_gpus(self) -> int:
        return len(self.gpus)

    def gap_summary(self) -> dict[str, Any]:
        gaps = self.idle_gaps
        lo, hi = GAP_BUCKETS
        d = gaps.duration_ms
        between = d[gaps.between_proofs]
        return {
            "count": len(gaps),
            "total_ms": gaps.total_ms(),
            "largest_ms": float(d.max()) if len(d) else None,
            "between_proofs": len(between),
            "between_proofs_ms": sum_in_order(between),
            "buckets": {
                f"lt_{lo:.0f}": int(np.count_nonzero(d < lo)),
                f"{lo:.0f}_{hi:.0f}": int(np.count_nonzero((lo <= d) & (d <= hi))),
                f"gt_{hi:.0f}": int(np.count_nonzero(d > hi)),
            },
            "largest": [g.to_dict() for g in gaps.largest(5)],
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "era": self.era,
            "timeline_era": self.timeline_era,
            "gpus": list(self.gpus),
            "gw": self.gw,
            "gw_source": self.gw_source,
            "workers": self.workers,
            "gpu_threads": self.gpu_threads,
            "proofs": self.proofs,
            "proofs_completed": self.proofs_completed,
            "proofs_failed": self.proofs_failed,
            "partitions": self.partitions,
            "partitions_ok": self.partitions_ok,
            "partitions_failed": self.partitions_failed,
            "partitions_incomplete": self.partitions_incomplete,
            "partitions_per_proof": self.partitions_per_proof,
            "max_proofs_in_flight": self.max_proofs_in_flight,
            "bench_count": self.bench_count,
            "bench_concurrency": self.bench_concurrency,
            "total_secs": self.total_secs,
            "s_per_proof": self.s_per_proof,
            "s_per_proof_source": self.s_per_proof_source,
            "span_ms": self.span_ms,
            "gpu_util": self.gpu_util,
            "held_util": self.held_util,
            "kernel_util": self.kernel_util,
            "held_source": self.held_source,
            "kernel_source": self.kernel_source,
            "over_span": list(self.over_span),
            "barrier_share": self.barrier_share,
            "barrier_method": self.barrier_method,
            "per_gpu": [u.to_dict() for u in self.per_gpu],
            "idle_gaps": self.gap_summary(),
            "lock_wait_method": self.lock_wait_method,
            "lock_wait_ms": self.lock_wait_ms,
            "lock_wait_ms_low": self.lock_wait_ms_low,
            "lock_wait_ms_high": self.lock_wait_ms_high,
            "waterfall": self.waterfall.to_dict() if self.waterfall else None,
            "wall_clock_start": self.wall_clock_start,
            "wall_clock_end": self.wall_clock_end,
            "wall_clock_calls": self.wall_clock_calls,
        }


def _bench_value(bench: dict[str, Any], *keys: str) -> Any:
    for k in keys:
        if bench.get(k) is not None:
            return bench[k]
    return None


def _job_status(df: pd.DataFrame, info: RunInfo, jobs: JobCodes | None = None) -> dict[str, str]:
    """completed | failed | incomplete per job id (partition statuses, then RunInfo.jobs);
    ``jobs``: ``job_codes(df)``, if known."""
    codes, names = jobs or job_codes(df)

    def status_is(value: str) -> np.ndarray:
        return np.asarray(is_value(df, "status", value), dtype=bool)

    # A call that ended (GPU_END) but lost some of its C++ lines is incomplete, yet done.
    ended = num_array(df, "end_ms")
    done = status_is("ok") | (status_is("incomplete") & ~np.isnan(ended))
    del ended
    # Per job (by code: ``job_codes`` numbers the ids 0.. in their order in the frame): any
    # call failed, every call done. (Marked by the codes of the calls, where a groupby and a
    # dict of its results took 15 ms on the 250 MB log's 8,721 jobs.)
    failed = np.zeros(len(names) - 1, dtype=bool)
    failed[codes[(codes >= 0) & status_is("failed")]] = True
    all_done = np.ones(len(names) - 1, dtype=bool)
    all_done[codes[(codes >= 0) & ~done]] = False
    del done
    # The frame's jobs in its order, then those only ``RunInfo`` names; a job's own status
    # line, and a failure naming it, over what its calls say.
    kind = np.where(failed, 2, all_done.astype(np.int64)).tolist()
    ids = cast(list[str], names[:-1])  # (``job_codes``' ids: texts, all but the last, None)
    status = dict(zip(ids, map(_JOB_STATUS.__getitem__, kind), strict=True))
    for job in info.jobs:
        status.setdefault(job, "incomplete")
    for job, said in info.jobs.values_of("status").items():
        declared = str(said or "").lower()
        if declared == "failed":
            status[job] = "failed"
        elif declared in ("completed", "ok") and status[job] == "incomplete":
            status[job] = "completed"
    for f in info.failures:
        if f.get("job_id") and str(f["job_id"]) in status:
            status[str(f["job_id"])] = "failed"
    return status


#: A job's status by ``_job_status``'s code: 0 no call failed but not all are done, 1 every
#: call done, 2 a call failed.
_JOB_STATUS = ("incomplete", "completed", "failed")


def _max_in_flight(df: pd.DataFrame, jobs: np.ndarray) -> int | None:
    """The most jobs between their first and last line at once (``jobs``: each row's job code)."""
    if not (jobs >= 0).any():
        return None
    # (Running minima and maxima over the columns, NaN where a row has none: ``np.fmin`` and
    # ``np.fmax`` skip a NaN as ``min(axis=1)`` does; two arrays of a value per call at a time.
    # ``num_array`` may hand over a frame's own column, read-only: ``out`` is a new array.)
    first = np.fmin(num_array(df, "synth_start_ms"), num_array(df, "queue_ms"))
    for col in ("pickup_ms", "start_ms"):
        np.fmin(first, num_array(df, col), out=first)
    last = np.fmax(num_array(df, "end_ms"), num_array(df, "start_ms"))
    np.fmax(last, num_array(df, "pickup_ms"), out=last)
    keep = (jobs >= 0) & ~np.isnan(first) & ~np.isnan(last)
    if not keep.any():
        return None
    # Each job's first and last ms (its rows' least ``first`` and greatest ``last``), by its
    # code (``job_codes``: 0 to the number of jobs less one).
    job = jobs[keep]
    n = int(job.max()) + 1
    starts = np.full(n, np.inf)
    np.minimum.at(starts, job, first[keep])
    ends = np.full(n, -np.inf)
    np.maximum.at(ends, job, last[keep])
    seen = np.bincount(job, minlength=n) > 0
    at = np.concatenate((starts[seen], ends[seen]))
    step = np.repeat(np.array([1, -1]), int(seen.sum()))
    order = np.lexsort((step, at))  # an end and a start at the same ms do not overlap
    return max(0, int(np.cumsum(step[order]).max()))


def _s_per_proof(
    df: pd.DataFrame, info: RunInfo, status: dict[str, str], jobs: JobCodes
) -> tuple[float | None, float | None, str | None]:
    """(total_secs, s/proof, source): cuzk-bench's ``total_secs / completed`` (section 5.2)."""
    bench = info.bench or {}
    total = _float(_bench_value(bench, "total_s", "total_secs", "total_time_s"))
    done = _int(_bench_value(bench, "completed"))
    if total is not None and done:
        return total, total / done, "bench"
    sp = _float(_bench_value(bench, "s_per_proof"))
    if sp is not None:
        return total, sp, "bench"
    completed = [j for j, s in status.items() if s == "completed"]
    if not completed:
        return None, None, None
    codes, names = jobs
    finished = set(completed)
    done_codes = [i for i, name in enumerate(names[:-1]) if name in finished]
    rows = np.isin(codes, done_codes)  # (the columns it reads, not a copy of the frame's rows)
    first = num(df, "synth_start_ms")[rows].min()
    if pd.isna(first):
        first = pd.concat([num(df, c)[rows] for c in OFFSET_COLUMNS], axis=1).min(axis=1).min()
    last = num(df, "end_ms")[rows].max()
    if pd.isna(first) or pd.isna(last) or last <= first:
        return None, None, None
    secs = float(last - first) / 1000.0
    return secs, secs / len(completed), "timeline"


def compute_facts(
    partitions: pd.DataFrame,
    info: RunInfo,
    lock: LockWait | None = None,
    medians: ColumnMedians | None = None,
) -> RunFacts:
    """Build ``RunFacts`` from the partition frame and ``RunInfo``; ``lock``: the frame's
    ``estimate_lock_wait``, when the caller has it (else made here); ``medians``: its
    ``ColumnMedians``, when the caller has them (the stage table's medians: the waterfall's)."""
    df = partitions
    f = RunFacts(era=info.era, timeline_era=info.timeline_era, gpu_threads=info.gpu_threads)
    f.partitions = len(df)
    f.partitions_ok = int(is_value(df, "status", "ok").sum())
    f.partitions_failed = int(is_value(df, "status", "failed").sum())
    f.partitions_incomplete = int(is_value(df, "status", "incomplete").sum())

    worker = num(df, "worker")
    f.workers = int(worker.nunique())
    if info.gw:
        f.gw, f.gw_source = int(info.gw), "log"
    else:
        # (Worked out only here: the frame of two columns and its groups took 16 MiB of the
        # 1 GB log's analysis, whose log states its gw.)
        raw_gpu = num(df, "gpu")
        per_gpu_workers = (
            pd.DataFrame({"g": raw_gpu.fillna(0), "w": worker}).dropna().groupby("g")["w"].nunique()
        )
        if len(per_gpu_workers) and raw_gpu.notna().any():
            f.gw, f.gw_source = int(per_gpu_workers.max()), "inferred"
        elif f.workers:
            n = len(info.gpus) or 1
            f.gw, f.gw_source = max(1, -(-f.workers // n)), "inferred"
        del raw_gpu, per_gpu_workers
    # (A float per call each, not held through the steps below: 5.4 MiB on a 1 GB log.)
    del worker
    gpu = gpu_of_rows(df, info, f.gw)
    f.gpus = sorted(info.gpus) if info.gpus else sorted(int(g) for g in set(gpu)) if len(df) else []

    jobs = job_codes(df)
    hand_back()  # (the Arrow hash of the ids; between the steps below too: ``heap.hand_back``)
    status = _job_status(df, info, jobs)
    hand_back()
    bench = info.bench or {}
    f.bench_count = _int(_bench_value(bench, "count"))
    f.bench_concurrency = _int(_bench_value(bench, "concurrency"))
    if status:
        f.proofs = len(status)
    elif f.bench_count is not None:
        f.proofs = f.bench_count
    f.proofs_completed = sum(s == "completed" for s in status.values())
    f.proofs_failed = sum(s == "failed" for s in status.values())
    if not status and bench:
        f.proofs_completed = _int(bench.get("completed")) or 0
        f.proofs_failed = _int(bench.get("failed")) or 0
    codes = jobs[0]
    if (codes >= 0).any():
        f.partitions_per_proof = float(np.median(np.bincount(codes[codes >= 0])))
    f.max_proofs_in_flight = _max_in_flight(df, codes)
    f.total_secs, f.s_per_proof, f.s_per_proof_source = _s_per_proof(df, info, status, jobs)

    if lock is None:
        lock = estimate_lock_wait(df)
    f.lock_wait_method = lock.method
    bounds = lock.summary()
    f.lock_wait_ms, f.lock_wait_ms_low, f.lock_wait_ms_high = (
        bounds["median"],
        bounds["low"],
        bounds["high"],
    )
    barrier, _, barrier_method = barrier_estimate(df, lock)
    hand_back()
    f.per_gpu = gpu_usage(df, gpu, barrier, jobs)
    hand_back()
    if f.per_gpu:
        span = sum(u.span_ms for u in f.per_gpu)
        f.span_ms = span
        if span > 0:
            f.gpu_util = sum(u.busy_ms for u in f.per_gpu) / span
            held = sum(u.held_ms for u in f.per_gpu)
            kernel = sum(u.kernel_ms for u in f.per_gpu)
            calls = sum(u.calls for u in f.per_gpu)
            # (A view one GPU's durations cannot be true in is left out for the run too.)
            f.over_span = [
                view
                for view, total in (("held", held), ("kernel", kernel))
                if over_span(total, span, calls)
                or any(over_span(getattr(u, f"{view}_ms"), u.span_ms, u.calls) for u in f.per_gpu)
            ]
            f.held_util = None if "held" in f.over_span else share_of_span(held, span, calls)
            f.kernel_util = None if "kernel" in f.over_span else share_of_span(kernel, span, calls)
            if f.held_util is not None and barrier.notna().any():
                f.barrier_share = sum(u.barrier_ms for u in f.per_gpu) / held
                f.barrier_method = barrier_method
        f.held_source = lock_held_time(df)[1] if f.held_util is not None else None
        f.kernel_source = kernel_time(df)[1] if f.kernel_util is not None else None
        hand_back()
        # (Each GPU's gaps as views of the run's: one copy of them is held, not two; 11 MiB
        # on a 1 GB log.)
        parts = [u.gaps for u in f.per_gpu]
        sizes = [len(g) for g in parts]
        empty = IdleGaps.empty()
        f.per_gpu = [replace(u, gaps=empty) for u in f.per_gpu]  # (``parts`` the only holder)
        f.idle_gaps = IdleGaps.concat(parts)
        views = f.idle_gaps.split(sizes)
        f.per_gpu = [replace(u, gaps=g) for u, g in zip(f.per_gpu, views, strict=True)]
    hand_back()
    f.waterfall = waterfall(df, lock, (barrier, barrier_method), medians)
    hand_back()
    f.wall_clock_start, f.wall_clock_end, f.wall_clock_calls = _wall_clock(df)
    return f


def _iso(ts: Any) -> str | None:
    if ts is None or pd.isna(ts):
        return None
    text: str = pd.Timestamp(ts).tz_convert("UTC").strftime("%Y-%m-%dT%H:%M:%S.%f")
    return text[:-3] + "Z"


def _wall_clock(df: pd.DataFrame) -> tuple[str | None, str | None, int]:
    """(first start_ts, last end_ts, calls with a start_ts) of the partition frame."""
    if "start_ts" not in df.columns:
        return None, None, 0
    start = pd.to_datetime(df["start_ts"], utc=True)
    end = pd.to_datetime(df["end_ts"], utc=True) if "end_ts" in df.columns else start
    n = int(start.notna().sum())
    if not n:
        return None, None, 0
    return _iso(start.min()), _iso(end.max() if end.notna().any() else start.max()), n
