"""Events -> one record per GPU call, attributing the C++ prover's id-less lines.

The C++ lines carry no job, partition, worker, GPU or timestamp (reference section 1.6). The
assembler rebuilds each call from the anchors the code guarantees:

* **GPU-region blocks.** Lines printed while a GPU's mutex is held (T17, T10-T16, T4-T6, T18, T19)
  never interleave with another block *of the same GPU*; a block's stages come in a fixed order.
  A line goes to the open block that can take its stage; when blocks of several GPUs are open at
  once, the arithmetic relations of reference section 1.5 and the TIMELINE clock decide.
* **Identity.** A block is bound to a call started by TIMELINE ``GPU_START``. The binding is
  confirmed (or corrected) by same-thread evidence: ``T19`` -> ``GPU_TIMING spawn_blocking
  prove_start`` (``prove_start_ms >= total_start_fn_ms``) on main, ``T7`` -> ``GPU_END``
  (``gpu_ms >= pre_destructor_ms``) in Phases 4-11. Otherwise it stays FIFO-inferred.
* **CPU-side lines** (T1, T2, T3, T8, T9) go to the open call that fits the TIMELINE clock best
  (every C++ line lies between the offsets of the timestamped lines around it), FIFO on ties.

Each record says how each group of fields was attributed (``records.Attribution``).
"""

from __future__ import annotations

import copy
import json
from collections import deque
from collections.abc import Callable
from datetime import datetime
from typing import Any

from cuzk_diag.lines import EraDetector
from cuzk_diag.records import (
    PARTITION_COLUMNS,
    Accounting,
    Attribution,
    Event,
    Family,
    RunInfo,
    Value,
)

#: Stage order of GPU-region lines inside one block (reference section 1.4 / 1.6 anchor 1).
_STAGE = {
    "mutex_wait": 0,  # T17, right after the lock
    "prestage_vram": 1,  # T10
    "prestage_setup": 2,  # T11/T12/T13
    "pool_threshold": 3,  # T14 (first call on a GPU)
    "d_a_cache": 4,  # T15
    "ntt_h": 5,  # T16 (once per circuit)
    "ntt_msm_h": 6,  # T4
    "barrier_wait": 7,  # T18
    "batch_add": 8,  # T5
    "tail_msm": 9,  # T6
    "mutex_held": 10,  # T19, right before unlock
}
_TID_FIELDS = frozenset(
    {"ntt_msm_h_ms", "barrier_wait_ms", "batch_add_ms", "tail_msm_ms", "gpu_total_ms"}
)
_TID_KINDS = frozenset({"ntt_h", "ntt_msm_h", "barrier_wait", "batch_add", "tail_msm"})
_TID_PRED = {"barrier_wait": "ntt_msm_h", "batch_add": "ntt_msm_h", "tail_msm": "batch_add"}
_JOINT_KINDS = frozenset({"prep_msm", "b_g2_msm"})
_CPU_KINDS = frozenset({"split_vectors", "prep_msm", "b_g2_msm", "async_dealloc", "host_register"})
_CPU_EVERY = frozenset({"split_vectors", "prep_msm", "b_g2_msm", "async_dealloc"})  # T1-T3, T8

#: Field renames from event keys to record columns.
_RENAME = {
    "host_register": {"err": "host_register_err"},
    "prestage_setup": {"err": "prestage_err"},
    "pool_threshold": {"gpu": "pool_threshold_gpu"},
    "d_a_cache": {"gpu": "d_a_cache_gpu"},
}
_DROP = frozenset({"gpu_tid", "_words"})
_RECORD_COLUMNS = frozenset(name for name, _ in PARTITION_COLUMNS)

_ANON_MISS = 1000.0  # cost of leaving a block with a call formed from C++ lines alone
TOL_MS = 6  # clock truncation (gettimeofday +-1 ms, each value truncated) plus print latency


def _t0(c: Call) -> float:
    """A call's TIMELINE start (callers only predict for calls that have one)."""
    return c.start if c.start is not None else 0.0


def _iv(d: dict[str, Value], k: str) -> int | None:
    v = d.get(k)
    return v if type(v) is int else None


def _int0(v: Value) -> int:
    return v if isinstance(v, int) else 0


def _call_done(c: Call) -> float:
    """Clock time at which a call's main/finalizer thread finished (before its dealloc)."""
    tl = c.tl or {}
    end = tl.get("end_ms")
    if isinstance(end, int):
        return float(end)
    pd = c.fields.get("pre_destructor_ms")
    if c.start is not None and isinstance(pd, int):
        return c.start + pd
    return c.start if c.start is not None else 0.0


def _ts_ms(ts: str) -> float | None:
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000.0
    except ValueError:
        return None


class Block:
    """The GPU-region lines of one call (what happens between lock and unlock)."""

    __slots__ = (
        "fields",
        "stage",
        "closed",
        "call",
        "lines",
        "tids",
        "has_t17",
        "has_t10",
        "seq",
        "confirmed",
        "extra",
        "seen",
        "tid_seen",
        "multi_circuit",
        "lock_lo",
        "lock_hi",
        "per_tid",
        "gaps",
        "doubt",
    )

    def __init__(self, seq: int, line: int) -> None:
        self.gaps: list[str] = []  # stages found missing when the block closed
        self.doubt = False  # took a line after a gap, or a line it may have needed was lost
        self.seen: set[str] = set()
        self.tid_seen: set[tuple[str, int]] = set()
        self.multi_circuit = False
        self.per_tid: dict[int, dict[str, Value]] = {}
        # Feasible interval of the lock-acquisition time on the TIMELINE clock (ms).
        self.lock_lo = -1e18
        self.lock_hi = 1e18
        self.fields: dict[str, Value] = {}
        self.stage = -1
        self.closed = False
        self.call: Call | None = None
        self.lines: list[int] = [line]
        self.tids: set[int] = set()
        self.has_t17 = False
        self.has_t10 = False
        self.seq = seq
        self.confirmed = False
        self.extra: dict[str, Value] = {}

    def accepts(self, kind: str, tid: int, ntt_era: bool, lenient: bool = False) -> bool:
        """Can this block take a line of ``kind`` next? (per-thread order of reference 1.4)

        ``lenient``: the line may follow a gap (a stage whose line is missing from the log), as
        long as the stage order holds; used only when no block can take the line strictly.
        """
        if self.closed:
            return False
        seen = self.seen
        if lenient:
            if tid:
                return kind in _TID_KINDS and (kind, tid) not in self.tid_seen
            if kind == "ntt_h":
                return self.stage < _STAGE["ntt_h"]
            return kind not in seen and _STAGE[kind] > self.stage
        if tid:
            # Further GPU threads of a multi-GPU call print T16/T4-T6 with gpu_tid > 0.
            return (
                kind in _TID_KINDS
                and (kind, tid) not in self.tid_seen
                and (kind in ("ntt_h", "ntt_msm_h") or (_TID_PRED[kind], tid) in self.tid_seen)
            )
        if kind in seen and kind != "ntt_h":
            return False
        if _STAGE[kind] <= self.stage and kind != "ntt_h":
            return False
        if kind == "ntt_h":
            if self.stage > _STAGE["ntt_h"]:
                return False
            # One NTT_H per circuit: a second one belongs here only for a batch call.
            return "ntt_h" not in seen or self.multi_circuit
        if kind == "ntt_msm_h":
            return "ntt_h" in seen or not ntt_era
        if kind == "prestage_setup":
            return "prestage_vram" in seen
        if kind in ("pool_threshold", "d_a_cache"):
            return True
        if kind == "barrier_wait":
            return "ntt_msm_h" in seen
        if kind == "batch_add":
            return "ntt_msm_h" in seen and ("barrier_wait" in seen or not self.has_t17)
        if kind == "tail_msm":
            return "batch_add" in seen
        if kind == "mutex_held":
            return "tail_msm" in seen and self.has_t17
        return True

    def lock_offset(self, kind: str, f: dict[str, Value]) -> tuple[float, float] | None:
        """How long after the lock a line of ``kind`` prints, from its values and the block's."""
        b = self.fields
        iv = _iv
        if kind == "mutex_wait":
            return (0.0, 2.0)
        if kind == "pool_threshold":
            return (0.0, 30.0)  # printed as the GPU thread starts, before the d_a allocation
        if kind in ("prestage_vram", "prestage_setup"):
            return (0.0, 300.0)  # after a device-wide synchronize and pool trim
        if kind == "d_a_cache":
            return (0.0, 5000.0)
        if kind == "ntt_h":
            total = iv(f, "ntt_h_total_ms")
            if total is None:
                return None
            slack = 5000.0 if "d_a_cache" in self.seen else 60.0
            return (float(total), total + slack)
        ntt = iv(b, "ntt_msm_h_ms")
        if kind == "ntt_msm_h":
            v = iv(f, "ntt_msm_h_ms")
            return None if v is None else (float(v), v + 2.0)
        if kind == "barrier_wait":
            v = iv(f, "barrier_wait_ms")
            return None if v is None or ntt is None else (float(ntt + v), ntt + v + 3.0)
        if kind == "batch_add":
            v = iv(f, "batch_add_ms")
            if v is None or ntt is None:
                return None
            bw = iv(b, "barrier_wait_ms")
            if bw is not None:
                return (float(ntt + bw + v), ntt + bw + v + 4.0)
            return (float(ntt + v), 1e12)
        if kind == "tail_msm":
            v = iv(f, "gpu_total_ms")
            return None if v is None else (float(v), v + 2.0)
        if kind == "mutex_held":
            v = iv(f, "mutex_held_ms")
            return None if v is None else (float(v), v + 2.0)
        return None

    def lock_cost(
        self, kind: str, f: dict[str, Value], lo: float | None, hi: float | None
    ) -> tuple[float, float, float]:
        """(cost, new_lo, new_hi): how far the line's clock bracket misses the lock interval."""
        return self.lock_cost_at(self.lock_offset(kind, f), lo, hi)

    def lock_cost_at(
        self, off: tuple[float, float] | None, lo: float | None, hi: float | None
    ) -> tuple[float, float, float]:
        """``lock_cost`` for an offset already computed."""
        if off is None or (lo is None and hi is None):
            return 0.0, self.lock_lo, self.lock_hi
        new_lo = self.lock_lo if lo is None else max(self.lock_lo, lo - off[1] - TOL_MS)
        new_hi = self.lock_hi if hi is None else min(self.lock_hi, hi - off[0] + TOL_MS)
        cost = max(0.0, new_lo - new_hi)
        return cost, new_lo, new_hi

    def snapshot(self) -> tuple[Any, ...]:
        return (
            dict(self.fields),
            self.stage,
            list(self.lines),
            set(self.tids),
            self.has_t17,
            self.has_t10,
            set(self.seen),
            set(self.tid_seen),
            self.lock_lo,
            self.lock_hi,
            dict(self.extra),
            {k: dict(v) for k, v in self.per_tid.items()},
        )

    def restore(self, snap: tuple[Any, ...]) -> None:
        (
            fields,
            self.stage,
            lines,
            tids,
            self.has_t17,
            self.has_t10,
            seen,
            tid_seen,
            self.lock_lo,
            self.lock_hi,
            extra,
            per_tid,
        ) = snap
        self.per_tid = {k: dict(v) for k, v in per_tid.items()}
        self.fields = dict(fields)
        self.lines = list(lines)
        self.tids = set(tids)
        self.seen = set(seen)
        self.tid_seen = set(tid_seen)
        self.extra = dict(extra)

    def missing_stages(self, ntt_era: bool) -> list[str]:
        """Stages every complete GPU region of this code prints but this block lacks."""
        need = ["ntt_msm_h", "batch_add", "tail_msm"]
        if ntt_era:
            need.insert(0, "ntt_h")
        if self.has_t17 or "mutex_held" in self.seen or "barrier_wait" in self.seen:
            need += ["mutex_wait", "barrier_wait", "mutex_held"]  # main code (V11)
        return [k for k in need if k not in self.seen]

    def skipped(self, kind: str, tid: int, ntt_era: bool) -> int:
        """How many stages this block would take as lost if it took ``kind`` next."""
        if tid:
            pred = _TID_PRED.get(kind)
            return 0 if pred is None or (pred, tid) in self.tid_seen else 1
        st = _STAGE[kind]
        return max(1, sum(1 for k in self.missing_stages(ntt_era) if self.stage < _STAGE[k] < st))

    def closes_with(self, kind: str, tid: int) -> bool:
        """Would this line (already applied) end the block? T19 on main, else the last T6."""
        if kind == "mutex_held":
            return True
        if kind == "tail_msm" and not self.has_t17:
            started = {t for k, t in self.tid_seen if k == "ntt_msm_h"}
            ended = {t for k, t in self.tid_seen if k == "tail_msm"}
            return started <= ended
        return False

    def relation_cost(self, kind: str) -> float:
        """How far the block's values miss the arithmetic relations of reference 1.5 (ms)."""
        f = self.fields

        def iv(k: str) -> int | None:
            v = f.get(k)
            return v if isinstance(v, int) else None

        cost = 0.0
        if kind in ("pool_threshold", "d_a_cache"):
            g = f.get("d_a_cache_gpu" if kind == "d_a_cache" else "pool_threshold_gpu")
            call = self.call
            if isinstance(g, int) and call is not None and call.gpu is not None and call.gpu != g:
                cost += 1000.0
        if kind == "ntt_h" and "d_a_cache" in self.seen:
            d_b = iv("d_b_alloc_ms")
            if d_b is not None and d_b < 50:
                cost += 500.0
        if kind == "ntt_msm_h":
            ntt, total = iv("ntt_msm_h_ms"), iv("ntt_h_total_ms")
            if ntt is not None and total is not None and "ntt_h" in self.seen:
                # T4 spans the NTT_H block plus the d_a lookup (large only on a GPU's first call).
                slack = 10000.0 if "d_a_cache" in self.seen else 30.0
                d = ntt - total
                cost += max(0.0, -2 - d) + max(0.0, d - slack)
        elif kind == "tail_msm":
            total = iv("gpu_total_ms")
            parts = [iv("ntt_msm_h_ms"), iv("batch_add_ms"), iv("tail_msm_ms")]
            if total is not None and all(p is not None for p in parts):
                rest = total - sum(parts)  # type: ignore[arg-type]
                bw = iv("barrier_wait_ms")
                if bw is not None:
                    cost += max(0.0, abs(rest - bw) - 4)
                else:
                    cost += max(0.0, -rest - 3)
        elif kind == "mutex_held":
            held, tot = iv("mutex_held_ms"), iv("total_start_fn_ms")
            gt, pre, wait = iv("gpu_total_ms"), iv("pre_lock_cpu_ms"), iv("mutex_wait_ms")
            if held is not None and gt is not None:
                cost += max(0.0, gt - held - 1)
            if None not in (held, tot, pre, wait):
                cost += max(0.0, abs(tot - pre - wait - held) - 3)  # type: ignore[operator]
        return cost


def _apply_gpu(blk: Block, ev: Event, kind: str, tid: int) -> None:
    """Add a GPU-region line to a block's state (no side effects beyond the block)."""
    blk.lines.append(ev.line)
    f = ev.fields
    ren = _RENAME.get(kind, {})
    if kind == "ntt_h":
        for k, v in f.items():
            if isinstance(v, int):
                old = blk.fields.get(k)
                blk.fields[k] = v + old if isinstance(old, int) else v
    elif tid == 0 and not blk.per_tid:
        # The usual single-GPU-thread call: thread 0's values are the block's.
        fields = blk.fields
        for k, v in f.items():
            if k not in _DROP:
                fields[ren.get(k, k)] = v
    else:
        # Per GPU thread; a multi-GPU call reports each stage's longest thread.
        if not blk.per_tid:
            blk.per_tid[0] = {k: v for k, v in blk.fields.items() if k in _TID_FIELDS}
        per = blk.per_tid.setdefault(tid, {})
        for k, v in f.items():
            if k in _DROP:
                continue
            per[ren.get(k, k)] = v
        for k, v in per.items():
            if len(blk.per_tid) == 1 or not isinstance(v, int):
                blk.fields[k] = v
            else:
                vals = [d[k] for d in blk.per_tid.values() if isinstance(d.get(k), int)]
                blk.fields[k] = max(vals)  # type: ignore[type-var]
    if kind in ("ntt_msm_h", "batch_add", "tail_msm", "barrier_wait"):
        blk.tids.add(tid)
    if not tid:
        blk.seen.add(kind)
        blk.stage = max(blk.stage, _STAGE[kind])
    blk.tid_seen.add((kind, tid))
    if kind == "mutex_wait":
        blk.has_t17 = True
    elif kind == "prestage_vram":
        blk.has_t10 = True
    if ev.malformed:
        blk.extra["malformed_line"] = ev.line


class Call:
    """One C++ proving call: TIMELINE identity, CPU-side lines and (bound later) its block."""

    __slots__ = (
        "job_id",
        "partition",
        "worker",
        "gpu",
        "start",
        "seq",
        "fields",
        "kinds",
        "block",
        "ended",
        "closed_out",
        "status",
        "lines",
        "attr_ids",
        "attr_cpu",
        "cpu_weak",
        "tl",
        "extra",
        "segment",
        "source",
        "emitted",
        "klines",
    )

    def __init__(
        self,
        seq: int,
        job_id: str | None,
        partition: int | None,
        worker: int | None,
        start: float | None,
        segment: int,
        source: int,
    ) -> None:
        self.job_id = job_id
        self.partition = partition
        self.worker = worker
        self.gpu: int | None = None
        self.start = start
        self.seq = seq
        self.fields: dict[str, Value] = {}
        self.kinds: set[str] = set()
        self.block: Block | None = None
        self.ended = False  # nothing but late lines (T3, T8) can follow
        self.closed_out = False  # its thread printed its last main-path line (GPU_END, failure)
        self.status = "incomplete"
        self.lines: list[int] = []
        self.attr_ids = Attribution.EXACT if job_id is not None else Attribution.NONE
        self.attr_cpu = Attribution.NONE
        self.cpu_weak = False
        self.tl: dict[str, Value] | None = None
        self.extra: dict[str, Value] = {}
        self.segment = segment
        self.source = source
        self.emitted = False
        self.klines: dict[str, int] = {}  # CPU-side kind -> its line number


class Assembler:
    """Incremental: ``feed(event)`` returns the records it completed; ``finish()`` the rest."""

    def __init__(self, accounting: Accounting | None = None, info: RunInfo | None = None) -> None:
        self.acc = accounting if accounting is not None else Accounting()
        self.info = info if info is not None else RunInfo()
        self.era = EraDetector()
        self.calls: list[Call] = []  # open (not yet emitted) calls, start order
        self.blocks: list[Block] = []  # open blocks (GPU region in progress)
        self.closed_blocks: deque[Block] = deque()  # closed, identity not yet confirmed
        self.awaiting_t7: deque[Block] = deque(maxlen=64)
        self.pending_t9: deque[Event] = deque()  # host_register lines awaiting their block
        self._kinds_seen: set[str] = set()
        self.deferred: list[Call] = []  # calls to emit once the beam has decided
        self.recent_blocks: deque[Block] = deque(
            maxlen=64
        )  # for when each GPU was released  # closed blocks (Phases 4-11: T7 due)
        self.tl: dict[tuple[str, int | None], dict[str, Value]] = {}
        self.seq = 0
        self.block_seq = 0
        self.segment = 0
        self.timeline_calls = 0  # GPU_START lines seen in this segment
        # GPU_PICKUPs not (yet) followed by their GPU_START: (job, partition) -> worker
        self.pickups: dict[tuple[str, int | None], int] = {}
        self.clock: float | None = None  # latest TIMELINE-clock reading (ms)
        self.epoch_ms: float | None = None  # wall clock of offset 0 (engine start line)
        self.pending: list[Event] = []  # C++ events waiting for the next clock reading
        self.out: list[dict[str, Any]] = []
        self.unattributed: list[Event] = []
        self.gpus_seen: set[int] = set()  # GPU ids named by one-time lines (T14, T15)
        self._anchor: tuple[float, float] | None = None  # clock bracket of the last GPU line
        # Hypotheses (cost, order, {block seq: state}) while a GPU line fits several blocks.
        self.beam: list[tuple[float, int, dict[int, tuple[Any, ...]]]] | None = None

    # -- driving --------------------------------------------------------------------------------

    def feed(self, ev: Event) -> list[dict[str, Any]]:
        fam = ev.family
        if fam is Family.TIMING or fam is Family.NTT_H:
            if ev.malformed:
                # Counted (with its line number) as malformed by the parser. Its values cannot
                # be trusted, so it neither opens a block, nor moves the stage order of the
                # block it falls into, nor marks the era, nor becomes a record. If it was a
                # real line, the lines of its kind that follow may go to the wrong open call.
                self._doubt(ev.kind if fam is Family.TIMING else "ntt_h")
                return self._take_out()
            if ev.kind not in self._kinds_seen:
                # Era markers are first occurrences of line kinds.
                self._kinds_seen.add(ev.kind)
                self.era.observe(ev)
            if ev.kind in ("timing_unknown",):
                self._note_unattributed(ev)
            else:
                self.pending.append(ev)
                if len(self.pending) > 256:
                    self._drain(None)
        elif fam is Family.TIMELINE:
            self.era.observe(ev)
            if ev.kind != "torn":
                off = ev.fields.get("offset_ms")
                if isinstance(off, int):
                    self._drain(float(off))
                    self.clock = max(self.clock or 0.0, float(off))
                self._timeline(ev)
        elif fam is Family.TRACING:
            if self.epoch_ms is not None:
                ts = ev.fields.get("ts")
                t = _ts_ms(ts) if isinstance(ts, str) else None
                if t is not None:
                    off = t - self.epoch_ms
                    self._drain(off)
                    self.clock = max(self.clock or 0.0, off)
            if ev.kind != "clock":
                self._tracing(ev)
        elif fam is Family.BENCH:
            self._bench(ev)
        elif ev.malformed and ev.kind == "damaged":
            # A line damaged beyond reading (NUL bytes): whatever it was, the placements it
            # could have changed are ambiguous.
            self._doubt("ntt_h")
            for c in self.calls:
                c.cpu_weak = True
        return self._take_out()

    def _doubt(self, kind: str) -> None:
        """A line of ``kind`` is lost: placements it could have changed are ambiguous."""
        if kind in _STAGE:
            for b in self.blocks:
                b.doubt = True
        elif kind in _CPU_KINDS or kind == "epilogue":
            for c in self.calls:
                if kind not in c.kinds:
                    c.cpu_weak = True

    def _take_out(self) -> list[dict[str, Any]]:
        if self.out:
            out, self.out = self.out, []
            return out
        return []

    def flush(self) -> list[dict[str, Any]]:
        """Emit everything open now (end of input, or the engine restarted)."""
        self._drain(None)
        self._commit_beam()
        for blk in list(self.blocks):
            self._close_block(blk)
        while self.pending_t9:
            self._note_unattributed(self.pending_t9.popleft())
        for call in list(self.calls):
            self._emit(call)
        for blk in list(self.closed_blocks):
            if blk.call is None:
                self._emit_orphan_block(blk)
        self.closed_blocks.clear()
        out, self.out = self.out, []
        return out

    def preview(self) -> list[dict[str, Any]]:
        """Records the lines read so far would complete if no clock reading followed.

        Works on a copy: this assembler is unchanged, so a caller that previews while input
        pauses (live mode) gets the same final result as one that never does.
        """
        if not self.pending:
            return []
        # Shared, not copied: what placing lines only reads (run info, the era detector, the
        # events); the copy gets a scratch accounting and unattributed list.
        memo: dict[int, Any] = {
            id(self.acc): Accounting(),
            id(self.info): self.info,
            id(self.era): self.era,
            id(self.unattributed): [],
        }
        for ev in self.pending:
            memo[id(ev)] = ev
        twin = copy.deepcopy(self, memo)
        twin._drain(None)
        twin._commit_beam()
        return twin.out

    def finish(self) -> list[dict[str, Any]]:
        self.out = self.flush()
        self.era.apply(self.info)
        for rec in self.out:
            rec["era"] = self.info.era
        out, self.out = self.out, []
        return out

    def _drain(self, hi: float | None) -> None:
        """Place the C++ lines read since the last clock reading; ``hi`` is the new reading."""
        if not self.pending:
            return
        pending, self.pending = self.pending, []
        lo = self.clock
        # Prep-thread lines wait for a joint placement; GPU lines placed meanwhile whose block
        # has a known lock time are clock readings of their own (anchors) for them.
        joint: list[tuple[int, Event]] = []
        anchors: list[tuple[int, float, float]] = []
        for idx, ev in enumerate(pending):
            if ev.kind in _JOINT_KINDS and ev.family is Family.TIMING:
                joint.append((idx, ev))
                continue
            if joint and ev.kind in ("epilogue", "async_dealloc", "split_vectors"):
                # These depend on the prep lines before them (T7 after T3, T8 after T7).
                self._solve_prep_lines(joint, anchors, lo, hi)
                joint = []
            self._anchor = None
            self._cpp(ev, lo, hi)
            if self._anchor is not None:
                anchors.append((idx, *self._anchor))
        if joint:
            self._solve_prep_lines(joint, anchors, lo, hi)

    def _solve_prep_lines(
        self,
        indexed: list[tuple[int, Event]],
        anchors: list[tuple[int, float, float]],
        lo: float | None,
        hi: float | None,
    ) -> None:
        """Place the prep thread's T2/T3 lines of one clock bracket jointly.

        Each line's print time is predicted from its call's TIMELINE start and the call's own
        values (T2 at start + setup_to_split + prep_msm, T3 that plus b_g2_msm). An assignment
        must keep the predicted times in file order (lines print in time order) and inside the
        bracket; of the assignments that do best, the first-in-first-out one is taken.
        """
        lines = [ev for _, ev in indexed]
        n = len(lines)
        los: list[float | None] = []
        his: list[float | None] = []
        for idx, _ in indexed:
            a_lo = [t for i, t, _ in anchors if i < idx]
            a_hi = [t for i, _, t in anchors if i > idx]
            los.append(
                max(([lo] if lo is not None else []) + a_lo) if (lo is not None or a_lo) else None
            )
            his.append(
                min(([hi] if hi is not None else []) + a_hi) if (hi is not None or a_hi) else None
            )
        best: list[Any] = [None, None, 0]  # cost, choice, ties
        temp: dict[int, dict[str, int]] = {}  # call seq -> fields assigned in this search
        choice: list[Call | None] = []
        budget = [20000]

        def cands(ev: Event) -> list[Call]:
            k = ev.kind
            out = []
            for c in self.calls:
                t = temp.get(c.seq, {})
                if c.closed_out or k in c.kinds or k in t:
                    continue
                if k == "prep_msm":
                    if "split_vectors" not in c.kinds:
                        continue
                elif "prep_msm" not in c.kinds and "prep_msm" not in t or "epilogue" in c.kinds:
                    continue
                out.append(c)
            if not out and k == "b_g2_msm":
                # No call waits for its T3 after a T2: a T2 line was lost or damaged.
                out = [c for c in self._lost_t2_calls() if not temp.get(c.seq)]
            return out

        def predict(ev: Event, c: Call) -> float | None:
            if c.start is None:
                return None
            t = temp.get(c.seq, {})
            setup = _int0(c.fields.get("setup_to_split_ms"))
            if ev.kind == "prep_msm":
                return c.start + setup + _int0(ev.fields.get("prep_msm_ms"))
            prep = t.get("prep_msm", _int0(c.fields.get("prep_msm_ms")))
            return c.start + setup + prep + _int0(ev.fields.get("b_g2_msm_ms"))

        def dfs(i: int, cost: float, last: float) -> None:
            if budget[0] <= 0:
                return
            budget[0] -= 1
            if best[0] is not None and cost > best[0] + self.CPU_MARGIN:
                return
            if i == n:
                key = tuple(c.seq if c is not None else 1 << 60 for c in choice)
                ends.append((cost, key))
                if best[0] is not None and cost > best[0] + 1e-9:
                    return
                if best[0] is None or cost < best[0] - 1e-9:
                    best[0], best[1], best[2] = cost, (key, list(choice)), 1
                elif key < best[1][0]:
                    best[1] = (key, list(choice))
                    best[2] += 1
                else:
                    best[2] += 1
                return
            ev = lines[i]
            cs = cands(ev)
            if not cs:
                choice.append(None)
                dfs(i + 1, cost, last)
                choice.pop()
                return
            for c in cs:
                p = predict(ev, c)
                extra = 0.0
                nxt = last
                if p is not None:
                    lo_i, hi_i = los[i], his[i]
                    if lo_i is not None and p < lo_i - TOL_MS:
                        extra += lo_i - TOL_MS - p
                    if hi_i is not None and p > hi_i + TOL_MS:
                        extra += p - hi_i - TOL_MS
                    if p < last - TOL_MS:
                        extra += last - TOL_MS - p
                    nxt = max(last, p)
                temp.setdefault(c.seq, {})[ev.kind] = _int0(
                    ev.fields.get("prep_msm_ms" if ev.kind == "prep_msm" else "b_g2_msm_ms")
                )
                choice.append(c)
                dfs(i + 1, cost + extra, nxt)
                choice.pop()
                del temp[c.seq][ev.kind]

        ends: list[tuple[float, tuple[int, ...]]] = []  # every complete assignment's cost
        dfs(0, 0.0, -1e18)
        if best[0] is None:
            for ev in lines:
                self._cpu_line(ev, ev.kind, lo, hi)
            return
        # Another assignment fitting the clock nearly as well leaves the choice a guess.
        ambiguous = best[2] > 1 or any(
            c <= best[0] + self.CPU_MARGIN and k != best[1][0] for c, k in ends
        )
        for ev, call in zip(lines, best[1][1], strict=True):
            if call is None:
                self._note_unattributed(ev)
                continue
            self._put_cpu(call, ev, ev.kind)
            if ambiguous:
                call.cpu_weak = True

    def _new_segment(self) -> None:
        """The engine restarted (or a new input began): TIMELINE offsets start again at 0."""
        flushed = self.flush()  # (flush replaces self.out: take its result first)
        self.out.extend(flushed)
        self.tl.clear()
        self.pickups.clear()
        self.clock = None
        self.timeline_calls = 0
        self.segment += 1

    # -- TIMELINE -------------------------------------------------------------------------------

    def _timeline(self, ev: Event) -> None:
        f = ev.fields
        job = f.get("job_id")
        job = job if isinstance(job, str) else ""
        part = f.get("partition")
        if part is None:
            part = f.get("snap_partition")
        part = part if isinstance(part, int) else None
        key = (job, part)
        tl = self.tl.get(key)
        if tl is None:
            tl = self.tl[key] = {}
        off = f.get("offset_ms")
        kind = ev.kind
        if kind == "SYNTH_START":
            tl["synth_start_ms"] = off
            if isinstance(f.get("kind"), str):
                tl["proof_kind"] = f["kind"]
        elif kind == "SYNTH_END":
            tl["synth_end_ms"] = off
            tl["synth_ms"] = f.get("synth_ms")
        elif kind in ("CHAN_SEND", "GPU_QUEUE"):
            tl["queue_ms"] = off
        elif kind == "GPU_PICKUP":
            tl["pickup_ms"] = off
            worker = f.get("worker")
            if isinstance(worker, int):
                self.pickups[key] = worker
        elif kind == "GPU_START":
            tl["start_ms"] = off
            self.pickups.pop(key, None)
            worker = f.get("worker")
            worker = worker if isinstance(worker, int) else None
            self._start_call(job, part, worker, float(off) if isinstance(off, int) else None, ev)
            # the new call shares its TIMELINE dict
            self.calls[-1].tl = tl
        elif kind == "GPU_END":
            tl["end_ms"] = off
            tl["gpu_ms"] = f.get("gpu_ms")
            self._end_call(job, part, f, ev)

    def _start_call(
        self, job: str, part: int | None, worker: int | None, start: float | None, ev: Event
    ) -> None:
        self.seq += 1
        self.timeline_calls += 1
        call = Call(self.seq, job, part, worker, start, self.segment, ev.source)
        call.lines.append(ev.line)
        if worker is not None:
            call.gpu = self._gpu_of(worker)
        self.calls.append(call)

    def _gpu_of(self, worker: int) -> int | None:
        info = self.info
        if worker in info.worker_gpu:
            return info.worker_gpu[worker]
        if info.gw and info.gpus:
            idx = worker // info.gw
            if idx < len(info.gpus):
                return info.gpus[idx]
        if info.gw and info.n_gpus:
            return worker // info.gw
        return None

    def _end_call(self, job: str, part: int | None, f: dict[str, Value], ev: Event) -> None:
        worker = f.get("worker")
        gpu_ms = f.get("gpu_ms")
        call = self._find_call(job, part, worker if isinstance(worker, int) else None)
        if call is None:
            call = self._call_without_start(job, part, f, ev)
            if call is None:
                return
        self._drain(None)
        if "b_g2_msm" not in call.kinds and "prep_msm" in call.kinds:
            # Its T3 always precedes GPU_END: if a tie gave it to another open call, take it back.
            self._reclaim(call, "b_g2_msm", ("b_g2_msm_ms", "num_circuits"))
        call.ended = True
        call.closed_out = True
        call.status = "ok"
        call.lines.append(ev.line)
        # Phases 4-11: T7 of this call printed just before on the same thread; confirm its block.
        if isinstance(gpu_ms, int):
            self._confirm_by_t7(call, gpu_ms)
        self._maybe_emit(call)

    def _call_without_start(
        self, job: str, part: int | None, f: dict[str, Value], ev: Event
    ) -> Call | None:
        """A GPU_END whose GPU_START line is lost (damaged): the call still happened.

        It takes the oldest GPU region that no TIMELINE call took (its lines would otherwise be
        a fragment). Its start is not known (``start_ms`` stays empty).
        """
        worker = f.get("worker")
        if not isinstance(worker, int) or self.pickups.pop((job, part), None) is None:
            return None  # (no pickup either, or a GPU region already took it)
        tl = self.tl[(job, part)]
        self._drain(None)
        self.seq += 1
        self.timeline_calls += 1
        call = Call(self.seq, job, part, worker, None, self.segment, ev.source)
        call.gpu = self._gpu_of(worker)
        call.tl = tl
        self.calls.append(call)
        for c in self.calls:
            if c.job_id is None and c.block is not None:
                self._rebind(c.block, call)
                call.block.confirmed = False  # type: ignore[union-attr]
                break
        return call

    def _find_call(self, job: str, part: int | None, worker: int | None) -> Call | None:
        for call in reversed(self.calls):
            if (
                call.job_id == job
                and call.partition == part
                and (worker is None or call.worker is None or call.worker == worker)
            ):
                return call
        return None

    # -- tracing ----------------------------------------------------------------------------------

    def _tracing(self, ev: Event) -> None:
        kind = ev.kind
        f = ev.fields
        if kind == "tracing":
            level = f.get("level")
            if level in ("ERROR", "WARN"):
                self._problem(ev, str(level))
            return
        info = self.info
        if kind == "engine_start":
            if self.clock is not None or self.calls:
                self._new_segment()
            ts = f.get("ts")
            self.epoch_ms = _ts_ms(ts) if isinstance(ts, str) else None
            if isinstance(ts, str) and info.engine_start_ts is None:
                info.engine_start_ts = ts
            if self.epoch_ms is not None:
                info.clocks.append({"source": ev.source, "line": ev.line, "ts": ts})
        elif kind == "gpu_workers_init":
            n = f.get("num_gpus")
            if isinstance(n, int):
                info.n_gpus = n
            gw = f.get("gpu_workers_per_device")
            if isinstance(gw, int):
                info.gw = gw
            tw = f.get("total_workers")
            if isinstance(tw, int):
                info.total_workers = tw
            gpus = f.get("gpus")
            if isinstance(gpus, str):
                info.gpus = [
                    int(x) for x in gpus.strip("[]").replace(",", " ").split() if x.isdigit()
                ]
            elif isinstance(gpus, int):
                info.gpus = [gpus]
        elif kind == "interlock":
            gw = f.get("gpu_workers_per_device")
            if isinstance(gw, int):
                info.gw = gw
        elif kind == "gpu_worker_started":
            w, g = f.get("worker_id"), f.get("gpu")
            if isinstance(w, int) and isinstance(g, int):
                info.worker_gpu[w] = g
        elif kind == "gpu_threads":
            v = f.get("gpu_threads")
            if isinstance(v, int):
                info.gpu_threads = v
        elif kind == "rayon_threads":
            v = f.get("rayon_threads")
            if isinstance(v, int):
                info.rayon_threads = v
        elif kind == "pipeline_start":
            pw = f.get("synth_worker_count")  # budget era: the synthesis workers (§4.2)
            if isinstance(pw, int) and info.partition_workers is None:
                info.partition_workers = pw
        elif kind == "dispatch":
            job = f.get("job_id")
            if isinstance(job, str):
                j = info.jobs.setdefault(job, {})
                j["num_partitions"] = f.get("num_partitions")
                j["dispatch_line"] = ev.line
            pw = f.get("partition_workers")
            if isinstance(pw, int):
                info.partition_workers = pw
        elif kind == "proof_assembled":
            job = f.get("job_id")
            if isinstance(job, str):
                j = info.jobs.setdefault(job, {})
                for k in ("total_ms", "synth_ms", "gpu_ms", "proof_len"):
                    if k in f:
                        j[k] = f[k]
                j["assembled_line"] = ev.line
        elif kind == "gpu_timing_prove_start":
            self._confirm_by_prove_start(ev)
        elif kind == "gpu_prove_time":
            ms = f.get("gpu_prove_time_ms")
            part = f.get("partition")
            if isinstance(ms, float):
                for call in reversed(self.calls):
                    if call.block is not None and (part is None or call.partition == part):
                        if "gpu_prove_time_ms" not in call.fields:
                            call.fields["gpu_prove_time_ms"] = ms
                        break
        elif kind == "fin_timing_finalizer":
            w, p = f.get("worker_id"), f.get("partition")
            for call in reversed(self.calls):
                if call.worker == w and call.partition == p:
                    call.fields["finish_ms"] = f.get("finish_ms")
                    break
        elif kind in (
            "partition_gpu_failed",
            "gpu_prove_start_failed",
            "self_check_failed",
            "skip_failed_job",
        ):
            self._problem(ev, str(f.get("level", "ERROR")))
            if kind in ("partition_gpu_failed", "skip_failed_job"):
                job, part = f.get("job_id"), f.get("partition")
                for call in reversed(self.calls):
                    if call.job_id == job and call.partition == part:
                        call.status = "failed"
                        call.ended = True
                        call.closed_out = True
                        self._maybe_emit(call)
                        break
        elif kind == "pinned_fallback":
            info.warnings["pinned_fallback"] += 1
            info.warning_lines.setdefault("pinned_fallback", [])
            if len(info.warning_lines["pinned_fallback"]) < 20:
                info.warning_lines["pinned_fallback"].append(ev.line)

    def _problem(self, ev: Event, level: str) -> None:
        f = ev.fields
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
                self.info.warnings["warn"] += 1
                return
            else:
                kind = "error"
        if len(self.info.failures) < 1000:
            self.info.failures.append(
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

    def _bench(self, ev: Event) -> None:
        b = self.info.bench
        k = ev.kind
        f = ev.fields
        if k == "bench_proof":
            proofs = b.setdefault("proofs", [])
            proofs.append(dict(f))
        elif k == "bench_param":
            b.update(f)
        elif k in ("bench_total", "bench_completed", "bench_failed", "bench_throughput"):
            b.update(f)
        elif k in ("bench_wall", "bench_prove"):
            name = k.split("_", 1)[1]
            b[name] = dict(f)

    # -- C++ lines ---------------------------------------------------------------------------------

    def _cpp(self, ev: Event, lo: float | None, hi: float | None) -> None:
        kind = ev.kind if ev.family is Family.TIMING else "ntt_h"
        if kind in _STAGE:
            self._gpu_line(ev, kind, lo, hi)
        elif kind in _CPU_KINDS:
            self._cpu_line(ev, kind, lo, hi)
        elif kind == "epilogue":
            self._t7(ev, lo, hi)
        else:
            self._note_unattributed(ev)

    def _note_unattributed(self, ev: Event) -> None:
        self.acc.note_unattributed(ev.line)
        self.unattributed.append(ev) if len(self.unattributed) < 1000 else None

    def _gpu_line(self, ev: Event, kind: str, lo: float | None, hi: float | None) -> None:
        tid = ev.fields.get("gpu_tid")
        tid = tid if isinstance(tid, int) else 0
        ntt_era = "ntt_h" in self.era.markers
        if self.beam is not None:
            if self._extend_beam(ev, kind, tid, lo, hi, ntt_era):
                return
        cands = [b for b in self.blocks if b.accepts(kind, tid, ntt_era)]
        if not cands and not (self._starts_block(kind) and not tid):
            # A line of the block's own kinds was lost (or the log starts mid-call): the line
            # goes to a block that can take it after a gap, never into a block of its own.
            cands = [b for b in self.blocks if b.accepts(kind, tid, ntt_era, lenient=True)]
            self._doubt(kind)
            if not cands:
                self._note_unattributed(ev)
                return
            if len(cands) > 1:
                self.beam = [(0.0, 0, {b.seq: b.snapshot() for b in self.blocks})]
                self._extend_beam(ev, kind, tid, lo, hi, ntt_era)
                return
        blk: Block | None
        if not cands:
            blk = self._open_block(ev, kind, lo, hi)
        elif len(cands) == 1:
            blk = cands[0]
            # A line that starts a block (T17, T10, T14, or T4 in old code) while another block
            # is open could also open a new block on another GPU.
            if self._starts_block(kind) and self._could_open(kind, blk, ev):
                blk = self._open_block(ev, kind, lo, hi)
        else:
            # Blocks of several GPUs are open and more than one can take this line. When the
            # clock alone rules all but one out, take it; otherwise keep every placement as a
            # hypothesis until a closing line's arithmetic decides (beam search).
            costs = sorted((b.lock_cost(kind, ev.fields, lo, hi)[0], b.seq, b) for b in cands)
            if costs[0][0] == 0.0 and costs[1][0] >= 50.0:
                blk = costs[0][2]
            else:
                self.beam = [(0.0, 0, {b.seq: b.snapshot() for b in self.blocks})]
                self._extend_beam(ev, kind, tid, lo, hi, ntt_era)
                return
        off = None
        if not tid:
            off = blk.lock_offset(kind, ev.fields)
            _, blk.lock_lo, blk.lock_hi = blk.lock_cost_at(off, lo, hi)
        self._put_gpu(blk, ev, kind, tid, off)

    BEAM_WIDTH = 8
    GAP_COST = 1000.0  # per stage a hypothesis must take as lost (lines are rarely lost)
    CONTEST_MARGIN = 50.0  # a hypothesis this close to the best leaves its blocks ambiguous
    CPU_MARGIN = 30.0  # a CPU-side line whose runner-up call fits this close is ambiguous

    def _extend_beam(
        self, ev: Event, kind: str, tid: int, lo: float | None, hi: float | None, ntt_era: bool
    ) -> bool:
        """Place a line in every hypothesis; False when it opens a block (beam committed).

        A hypothesis in which no block can take the line strictly may take it after a gap (a
        lost line), at ``GAP_COST`` per stage skipped; one that cannot take it at all ends.
        """
        assert self.beam is not None
        may_skip = not (self._starts_block(kind) and not tid)
        open_blocks = {b.seq: b for b in self.blocks}
        new: list[tuple[float, int, dict[int, tuple[Any, ...]]]] = []
        closing: dict[int, int] = {}
        order = 0
        for cost, _, snaps in self.beam:
            for seq, snap in snaps.items():
                if seq in open_blocks:
                    open_blocks[seq].restore(snap)
            mine = [b for b in self.blocks if b.seq in snaps]
            cands = [b for b in mine if b.accepts(kind, tid, ntt_era)]
            lenient = not cands and may_skip
            if lenient:
                cands = [b for b in mine if b.accepts(kind, tid, ntt_era, lenient=True)]
                self._doubt(kind)
            for b in cands:
                keep = b.snapshot()
                c = self.GAP_COST * b.skipped(kind, tid, ntt_era) if lenient else 0.0
                if not tid:
                    lc, b.lock_lo, b.lock_hi = b.lock_cost(kind, ev.fields, lo, hi)
                    c += lc
                _apply_gpu(b, ev, kind, tid)
                c += b.relation_cost(kind)
                order += 1
                snaps2 = dict(snaps)
                snaps2[b.seq] = b.snapshot()
                new.append((cost + c, order, snaps2))
                if b.closes_with(kind, tid):
                    closing[order] = b.seq
                b.restore(keep)
        if not new:
            # No hypothesis can take the line: settle on the best and let it open a block
            # (a line that cannot start one was lost from its block: unattributed).
            self._commit_beam()
            if may_skip:
                self._doubt(kind)
                self._note_unattributed(ev)
                return True
            return False
        new.sort(key=lambda t: (t[0], t[1]))
        self.beam = new[: self.BEAM_WIDTH]
        best = self.beam[0]
        if best[1] in closing or len(self.beam) == 1:
            closing_seq = closing.get(best[1])
            self._commit_beam()
            if closing_seq is not None:
                for b in list(self.blocks):
                    if b.seq == closing_seq:
                        self._close_block(b)
        return True

    def _commit_beam(self) -> None:
        """Adopt the best hypothesis as the state of the open blocks."""
        if self.beam is None:
            return
        best_cost, _, snaps = self.beam[0]
        # Blocks whose lines another hypothesis placed differently at nearly the same cost:
        # the arithmetic and the clock did not decide between them.
        contested: set[int] = set()
        for cost, _, alt in self.beam[1:]:
            if cost - best_cost >= self.CONTEST_MARGIN:
                continue
            for seq, snap in alt.items():
                if seq in snaps and snap[2] != snaps[seq][2]:
                    contested.add(seq)
        for b in self.blocks:
            if b.seq in snaps:
                b.restore(snaps[b.seq])
                if b.seq in contested:
                    b.doubt = True
        self.beam = None
        deferred, self.deferred = self.deferred, []
        for call in deferred:
            self._maybe_emit(call)

    def _starts_block(self, kind: str) -> bool:
        return kind in (
            "mutex_wait",
            "prestage_vram",
            "pool_threshold",
            "d_a_cache",
            "ntt_h",
            "ntt_msm_h",
        )

    def _could_open(self, kind: str, blk: Block, ev: Event | None = None) -> bool:
        """Is a new block more plausible than continuing ``blk``?"""
        st = _STAGE[kind]
        if kind == "mutex_wait":
            return True  # T17 always starts a block
        if (
            kind == "ntt_h"
            and ev is not None
            and "d_a_cache" in blk.seen
            and "ntt_h" not in blk.seen
        ):
            # A GPU's first call allocates the pool-cached d_b (hundreds of ms); an NTT_H line
            # without that allocation belongs to a later call on another GPU.
            d_b = ev.fields.get("d_b_alloc_ms")
            if isinstance(d_b, int) and d_b < 50:
                return True
        if blk.has_t17 or blk.has_t10:
            return False
        if kind == "prestage_vram":
            return True
        # Old code (no T17/T10): a T4 or NTT_H line when blk already has a later stage
        return blk.stage >= st and not (kind == "ntt_h" and blk.stage == st)

    def _open_block(self, ev: Event, kind: str, lo: float | None, hi: float | None) -> Block:
        self.block_seq += 1
        blk = Block(self.block_seq, ev.line)
        self.blocks.append(blk)
        self._bind_block(blk, ev, kind, lo, hi)
        # One mutex per GPU: an older block still open on this GPU ended without its last
        # lines (the call failed inside the GPU region).
        gpu = blk.call.gpu if blk.call is not None else None
        if gpu is not None and blk.call is not None and blk.call.block is blk:
            for other in list(self.blocks):
                if other is not blk and other.call is not None and other.call.gpu == gpu:
                    other.extra["gpu_region_cut_short"] = 1
                    self._close_block(other)
        return blk

    def _put_gpu(
        self,
        blk: Block,
        ev: Event,
        kind: str,
        tid: int,
        off: tuple[float, float] | None = None,
    ) -> None:
        _apply_gpu(blk, ev, kind, tid)
        if not tid and kind != "ntt_h" and blk.lock_lo > -1e17 and blk.lock_hi < 1e17:
            if off is None:
                off = blk.lock_offset(kind, ev.fields)
            if off is not None and off[1] < 1e11 and blk.lock_hi - blk.lock_lo < 50:
                self._anchor = (blk.lock_lo + off[0], blk.lock_hi + off[1])
        if kind in ("pool_threshold", "d_a_cache"):
            g = ev.fields.get("gpu")
            if isinstance(g, int):
                self.gpus_seen.add(g)
        if blk.closes_with(kind, tid):
            self._close_block(blk)

    def _close_block(self, blk: Block) -> None:
        if blk.closed:
            return
        blk.closed = True
        if blk in self.blocks:
            self.blocks.remove(blk)
        blk.gaps = blk.missing_stages("ntt_h" in self.era.markers)
        if blk.gaps and blk.call is not None and blk.call.status != "failed":
            # Its lost lines' neighbours may sit in the blocks open beside it.
            self._doubt(blk.gaps[0])
        if blk.has_t10 and "prestage_setup" not in blk.fields:
            blk.fields["prestage_setup"] = "silent"
        if not blk.has_t17 and not blk.confirmed:
            self._bind_by_lock_time(blk)
            if blk.call is not None and not blk.confirmed and self._other_gpu_fits(blk):
                blk.doubt = True
        call = blk.call
        if (
            self.pending_t9
            and not blk.has_t10
            and call is not None
            and "host_register" not in call.kinds
            and "ntt_msm_h" in blk.seen
        ):
            self._put_cpu(call, self.pending_t9.popleft(), "host_register")
        self.closed_blocks.append(blk)
        self.recent_blocks.append(blk)
        if self.era.era in ("unknown", "phase4-8", "phase9-11"):
            self.awaiting_t7.append(blk)
        call = blk.call
        if call is not None and call.job_id is None:
            # No TIMELINE for this call: its GPU region closing is the best end marker there is.
            call.ended = True
            call.status = "ok"
        while len(self.closed_blocks) > 64:
            old = self.closed_blocks.popleft()
            if old.call is None:
                self._emit_orphan_block(old)
        if blk.call is not None:
            self._maybe_emit(blk.call)

    # -- binding blocks to calls ------------------------------------------------------------------

    def _gpu_free_at(self, gpu: int | None, before: float, exclude: Block) -> tuple[float, float]:
        """Interval in which the GPU's mutex was last released before ``before``."""
        if gpu is None:
            return (-1e18, -1e18)
        end = (-1e18, -1e18)
        # Only the last few blocks can be the GPU's previous holder.
        for b in list(self.recent_blocks)[-8:]:
            c = b.call
            if b is exclude or c is None or c.gpu != gpu or b.lock_hi >= 1e17:
                continue
            total = b.fields.get("mutex_held_ms", b.fields.get("gpu_total_ms"))
            if not isinstance(total, int):
                continue
            if b.lock_hi < before and b.lock_lo + total > end[0]:
                end = (b.lock_lo + total, b.lock_hi + total)
        return end

    def _lock_miss(self, blk: Block, c: Call) -> float:
        """How far call ``c`` could not have taken ``blk``'s lock when the block says it did."""
        if c.start is None:
            return _ANON_MISS
        if c.start > blk.lock_hi + TOL_MS:
            return 1e9  # the block's lock came before the call began
        named = blk.fields.get("d_a_cache_gpu", blk.fields.get("pool_threshold_gpu"))
        if (
            isinstance(named, int)
            and c.gpu is not None
            and named != c.gpu
            and len(self.gpus_seen) > 1
        ):
            # One-time lines name the GPU (calls are routed per GPU once several GPUs show up).
            return 1e9
        lock = (blk.lock_lo + blk.lock_hi) / 2
        ready = c.start + _int0(c.fields.get("setup_to_split_ms")) + 1
        free_lo, free_hi = self._gpu_free_at(c.gpu, lock, blk)
        e_lo, e_hi = max(ready, free_lo), max(ready, free_hi)
        return max(0.0, blk.lock_lo - TOL_MS - e_hi, e_lo - blk.lock_hi - TOL_MS)

    def _other_gpu_fits(self, blk: Block) -> bool:
        """Could a call of another GPU have held this block's lock as well as its own call?

        (Calls of one GPU queue on its mutex first in, first out; between GPUs only the clock
        tells, and when it does not the block's call is a guess.)
        """
        cur = blk.call
        if cur is None or cur.gpu is None:
            return False
        if blk.lock_lo <= -1e17 or blk.lock_hi >= 1e17:
            return False
        mine = self._lock_miss(blk, cur)
        for c in self.calls:
            if c is cur or c.gpu is None or c.start is None or c.closed_out:
                continue
            if c.gpu == cur.gpu and len(self.gpus_seen) < 2:
                continue  # one GPU: its calls take the lock first in, first out
            if c.block is not None and (c.block.confirmed or c.block is blk):
                continue
            if self._lock_miss(blk, c) - mine < self.CONTEST_MARGIN:
                if c.block is not None:
                    c.block.doubt = True  # the two could be swapped either way
                return True
        return False

    def _bind_by_lock_time(self, blk: Block) -> None:
        """Code without identity lines: re-bind a closed block to the call whose start (or its
        GPU's previous release) matches the block's lock time, found from its own values.

        A call already holding another unconfirmed block may swap with this one when that fits
        both blocks better.
        """
        if blk.lock_lo <= -1e17 or blk.lock_hi >= 1e17 or blk.lock_hi - blk.lock_lo > 3000:
            return
        cur = blk.call
        cur_miss = self._lock_miss(blk, cur) if cur is not None else _ANON_MISS
        best: tuple[float, int, Call] | None = None
        for c in self.calls:
            if c is cur or c.start is None or c.closed_out:
                continue
            other = c.block
            if other is not None and other.confirmed:
                continue
            gain = cur_miss - self._lock_miss(blk, c)
            if other is not None and other.closed and other.lock_hi < 1e17:
                # Swap: the other block would move to this block's call.
                back = self._lock_miss(other, cur) if cur is not None else _ANON_MISS
                gain += self._lock_miss(other, c) - back
            elif other is not None:
                continue  # its block is still open: it cannot also hold this lock
            if gain > 50 and (best is None or gain > best[0]):
                best = (gain, c.seq, c)
        if best is not None:
            other = best[2].block
            self._rebind(blk, best[2])
            blk.confirmed = False
            blk.doubt = True  # FIFO said otherwise: the clock alone moved it
            if other is not None:
                other.doubt = True  # (and the block it swapped with)

    def _bind_block(
        self, blk: Block, ev: Event, kind: str, lo: float | None, hi: float | None
    ) -> None:
        """Tentatively bind a new block to the call that most plausibly holds the lock."""
        busy_gpus = {b.call.gpu for b in self.blocks if b is not blk and b.call is not None}
        cands = [
            c
            for c in self.calls
            if c.block is None and not c.ended and (c.gpu is None or c.gpu not in busy_gpus)
        ]
        if not cands:
            # No TIMELINE call to bind to (stderr without TIMELINE, or a log that starts mid-run):
            # the call is formed from the C++ structure alone.
            call = self._anonymous_call(ev)
            blk.call = call
            call.block = blk
            return
        f = ev.fields
        g = f.get("gpu")
        if kind in ("pool_threshold", "d_a_cache") and isinstance(g, int):
            # One-time lines name their GPU: the block is a call of a worker on that GPU.
            on_gpu = [c for c in cands if c.gpu == g]
            if on_gpu:
                cands = on_gpu
        if kind == "mutex_wait" and (lo is not None or hi is not None):
            pre, wait = f.get("pre_lock_cpu_ms"), f.get("mutex_wait_ms")
            if isinstance(pre, int) and isinstance(wait, int):
                cands = self._by_clock(cands, lambda c: c.start + pre + wait, lo, hi)[:1]  # type: ignore[operator]
                c0 = cands[0]
                if c0.start is not None:
                    # main prints when the lock was taken: entry + pre-lock CPU + wait.
                    t = c0.start + pre + wait
                    blk.lock_lo = max(blk.lock_lo, t - TOL_MS)
                    blk.lock_hi = min(blk.lock_hi, t + TOL_MS)
        # FIFO: the call that entered the C++ function first (T1 seen first), then start order.
        best = min(cands, key=lambda c: (0 if "split_vectors" in c.kinds else 1, c.seq))
        blk.call = best
        best.block = blk
        if best.gpu is None and len({c.gpu for c in cands}) <= 1:
            pass

    def _by_clock(
        self,
        cands: list[Call],
        predict: Callable[[Call], float],
        lo: float | None,
        hi: float | None,
        slack: float = 1e-9,
    ) -> list[Call]:
        """The calls whose predicted print time fits the line's clock bracket best (within
        ``slack`` ms of the best).

        Ordered by predicted time: lines print in time order, so of several calls that fit,
        the one due first is the one printing now.
        """
        scored = []
        for c in cands:
            if c.start is None:
                scored.append((0.0, 0.0, c))
                continue
            p = predict(c)
            cost = 0.0
            if lo is not None and p < lo - TOL_MS:
                cost += lo - TOL_MS - p
            if hi is not None and p > hi + TOL_MS:
                cost += p - hi - TOL_MS
            scored.append((cost, p, c))
        best = min(s for s, _, _ in scored)
        fit = [(p, c.seq, c) for s, p, c in scored if s <= best + slack]
        fit.sort(key=lambda t: (t[0], t[1]))
        return [c for _, _, c in fit]

    def _anonymous_call(self, ev: Event) -> Call:
        # Reuse the oldest anonymous call that entered (T1) but has no block yet.
        for c in self.calls:
            if c.job_id is None and c.block is None:
                return c
        self.seq += 1
        call = Call(self.seq, None, None, None, None, self.segment, ev.source)
        self.calls.append(call)
        return call

    def _rebind(self, blk: Block, call: Call) -> None:
        """Evidence says ``blk`` belongs to ``call``: swap with whatever was bound before."""
        if blk.call is call:
            blk.confirmed = True
            return
        old_call = blk.call
        other = call.block
        blk.call = call
        call.block = blk
        if old_call is not None:
            old_call.block = other
            if other is not None:
                other.call = old_call
        elif other is not None:
            other.call = None
        blk.confirmed = True
        if old_call is not None and old_call.job_id is None and old_call.block is None:
            # An anonymous placeholder: its CPU lines move with the block.
            self._merge_anonymous(old_call, call)

    def _merge_anonymous(self, anon: Call, into: Call) -> None:
        for k, v in anon.fields.items():
            into.fields.setdefault(k, v)
        into.kinds |= anon.kinds
        into.lines.extend(anon.lines)
        if anon in self.calls:
            self.calls.remove(anon)

    def _confirm_by_prove_start(self, ev: Event) -> None:
        """main: T19 is followed on the same thread by `GPU_TIMING spawn_blocking prove_start`."""
        f = ev.fields
        p_ms = f.get("prove_start_ms")
        worker, part = f.get("worker_id"), f.get("partition")
        if not isinstance(p_ms, int):
            return
        self._drain(None)
        best: Block | None = None
        best_gap = None
        for blk in self.closed_blocks:
            if blk.confirmed:
                continue
            t = blk.fields.get("total_start_fn_ms")
            if not isinstance(t, int) or t > p_ms + 1:
                continue
            gap = p_ms - t
            if best_gap is None or gap < best_gap:
                best, best_gap = blk, gap
        if best is None:
            return
        call = None
        for c in reversed(self.calls):
            if c.worker == worker and (part is None or c.partition == part):
                call = c
                break
        if call is None:
            return
        self._rebind(best, call)
        call.fields["prove_start_ms"] = p_ms
        if isinstance(f.get("spawn_to_enter_ms"), int):
            call.fields["spawn_to_enter_ms"] = f["spawn_to_enter_ms"]
        self._maybe_emit(call)

    def _t7(self, ev: Event, lo: float | None, hi: float | None) -> None:
        """T7 (Phases 4-11): the main thread's last line, after its block closed and b_g2 joined.

        Its block is the oldest closed block still without a T7 (whose kernels fit inside
        ``pre_destructor_ms``); its call is the one whose TIMELINE start plus
        ``pre_destructor_ms`` matches the clock when T7 printed. Together they bind block to call.
        """
        pd = ev.fields.get("pre_destructor_ms")
        blocks = [b for b in self.awaiting_t7 if b.call is None or "epilogue" not in b.call.kinds]
        if isinstance(pd, int):
            fit = [
                b
                for b in blocks
                if not isinstance(b.fields.get("gpu_total_ms"), int)
                or b.fields["gpu_total_ms"] <= pd + TOL_MS  # type: ignore[operator]
            ]
            blocks = fit or blocks
        blk = blocks[0] if blocks else None
        calls = [
            c
            for c in self.calls
            if "epilogue" not in c.kinds and (c.block is None or c.block.closed)
        ]
        call: Call | None = None
        if isinstance(pd, int) and lo is not None:
            timed = [c for c in calls if c.start is not None]
            if timed:
                best = self._by_clock(timed, lambda c: c.start + pd, lo, hi)  # type: ignore[operator]
                call = best[0]
        if call is None and blk is not None:
            call = blk.call
        if call is None:
            anon = [c for c in calls if c.job_id is None]
            call = anon[0] if anon else None
        if call is None:
            self._note_unattributed(ev)
            return
        if blk is not None:
            self.awaiting_t7.remove(blk)
            if blk.call is not call:
                self._rebind(blk, call)
        if "b_g2_msm" not in call.kinds and "prep_msm" in call.kinds:
            # T3 precedes T7 on the same call (the prep thread is joined first).
            self._reclaim(call, "b_g2_msm", ("b_g2_msm_ms", "num_circuits"))
        self._put_cpu(call, ev, "epilogue")

    def _confirm_by_t7(self, call: Call, gpu_ms: int) -> None:
        """GPU_END follows T7 on the same thread: the T7 with gpu_ms >= pre_destructor_ms."""
        self._drain(None)
        best = None
        best_gap = None
        for c in self.calls:
            pd = c.fields.get("pre_destructor_ms")
            if not isinstance(pd, int) or c.block is None or c.fields.get("_t7_confirmed"):
                continue
            gap = gpu_ms - pd
            if gap < -1:
                continue
            if best_gap is None or gap < best_gap:
                best, best_gap = c, gap
        if best is None or best_gap is None or best_gap > 1000:
            return
        best.fields["_t7_confirmed"] = 1
        if best is call:
            if call.block is not None:
                call.block.confirmed = True
            return
        # Move the T7 fields and block of `best` (the C++ call) to `call` (the TIMELINE call).
        blk = best.block
        t7: dict[str, Value] = {
            k: best.fields.pop(k) for k in ("epilogue_ms", "pre_destructor_ms", "_t7_confirmed")
        }
        best.kinds.discard("epilogue")
        other_t7: dict[str, Value] = {}
        if "epilogue" in call.kinds:
            other_t7 = {
                k: call.fields.pop(k)
                for k in ("epilogue_ms", "pre_destructor_ms")
                if k in call.fields
            }
            call.kinds.discard("epilogue")
        call.fields.update(t7)
        call.kinds.add("epilogue")
        if other_t7:
            best.fields.update(other_t7)
            best.kinds.add("epilogue")
        if blk is not None:
            self._rebind(blk, call)

    # -- CPU-side lines ---------------------------------------------------------------------------

    def _cpu_line(self, ev: Event, kind: str, lo: float | None, hi: float | None) -> None:
        f = ev.fields
        if kind == "split_vectors":
            cands = [
                c
                for c in self.calls
                if "split_vectors" not in c.kinds and c.job_id is not None and not c.ended
            ]
            pred: Callable[[Call], float] | None = None
            s = f.get("setup_to_split_ms")
            if isinstance(s, int):
                pred = lambda c, s=s: _t0(c) + s  # noqa: E731
            if not cands:
                call = self._anonymous_for_t1(ev)
                self._put_cpu(call, ev, kind)
                return
        elif kind == "host_register":
            # T9 replaces T10 (no pre-staging after a failed host registration): it belongs to
            # the next call whose GPU region closes without a prestage_vram line.
            self.pending_t9.append(ev)
            return
        elif kind == "prep_msm":
            cands = [
                c
                for c in self.calls
                if "split_vectors" in c.kinds and kind not in c.kinds and not c.closed_out
            ]
            v = f.get("prep_msm_ms")
            pred = None
            if isinstance(v, int):
                # The prep thread starts right after T1: T2 prints at entry + split + prep.
                pred = lambda c, v=v: _t0(c) + _int0(c.fields.get("setup_to_split_ms")) + v  # noqa: E731
        elif kind == "b_g2_msm":
            # T3 comes after the call's T2 and always before its GPU_END (and T7).
            cands = [
                c
                for c in self.calls
                if "prep_msm" in c.kinds
                and kind not in c.kinds
                and not c.closed_out
                and "epilogue" not in c.kinds
            ]
            if not cands:
                cands = self._lost_t2_calls()  # a T2 line was lost or damaged
            v = f.get("b_g2_msm_ms")
            pred = None
            if isinstance(v, int):
                pred = lambda c, v=v: (  # noqa: E731
                    _t0(c)
                    + _int0(c.fields.get("setup_to_split_ms"))
                    + _int0(c.fields.get("prep_msm_ms"))
                    + v
                )
        else:  # async_dealloc: after the call's epilogue/finalize
            cands = [
                c
                for c in self.calls
                if kind not in c.kinds
                and c.block is not None
                and c.block.closed
                and ("epilogue" in c.kinds or "pre_destructor_ms" not in c.fields)
            ]
            v = f.get("async_dealloc_ms")
            pred = None
            if isinstance(v, int):
                pred = lambda c: _call_done(c) + v  # noqa: E731
            # In Phases 4-11 the dealloc thread is spawned after T7.
            with_t7 = [c for c in cands if "epilogue" in c.kinds]
            if self.era.era in ("phase4-8", "phase9-11") and with_t7:
                cands = with_t7
        if not cands:
            self._note_unattributed(ev)
            return
        strong = len(cands) == 1
        unsure = kind == "async_dealloc" and (
            # A call without its GPU_END yet has no reliable finish time to predict from, and a
            # call that ended but whose region is not (yet) its own could be the owner too.
            any(not isinstance((c.tl or {}).get("end_ms"), int) for c in cands)
            or any(c.closed_out and kind not in c.kinds and c not in cands for c in self.calls)
        )
        if not strong and pred is not None and (lo is not None or hi is not None):
            timed = [c for c in cands if c.start is not None]
            if timed:
                fit = self._by_clock(timed, pred, lo, hi)
                # One call fits clearly better than any other (not just by a few ms).
                strong = len(self._by_clock(timed, pred, lo, hi, self.CPU_MARGIN)) == 1
                cands = fit[:1]
        call = min(cands, key=lambda c: c.seq)
        self._put_cpu(call, ev, kind)
        if not strong or unsure:
            call.cpu_weak = True

    def _lost_t2_calls(self) -> list[Call]:
        """The call that most likely awaits a T3 although its T2 never came: the oldest that
        entered (T1) without a T2 (its T2 was due first). Attributed as ambiguous."""
        for c in self.calls:
            if (
                "split_vectors" in c.kinds
                and "prep_msm" not in c.kinds
                and "b_g2_msm" not in c.kinds
                and "epilogue" not in c.kinds
                and not c.closed_out
            ):
                c.cpu_weak = True
                return [c]
        return []

    def _anonymous_for_t1(self, ev: Event) -> Call:
        # stderr-only / C++-only logs: every call starts with T1.
        self.seq += 1
        call = Call(self.seq, None, None, None, None, self.segment, ev.source)
        self.calls.append(call)
        return call

    def _reclaim(self, call: Call, kind: str, keys: tuple[str, ...]) -> None:
        """Move a line of ``kind`` that a tie placed on another open call to ``call``.

        Only lines placed without a clear winner (``cpu_weak``) move, and only when the line's
        value puts its print time before this call's end on the TIMELINE clock.
        """
        end = self.clock
        for other in self.calls:
            if other is call or other.closed_out or not other.cpu_weak or kind not in other.kinds:
                continue
            v = other.fields.get(keys[0])
            if not isinstance(v, int) or call.start is None:
                continue
            pred = (
                call.start
                + _int0(call.fields.get("setup_to_split_ms"))
                + _int0(call.fields.get("prep_msm_ms"))
                + v
            )
            if end is not None and pred > end + TOL_MS:
                continue
            for k in keys:
                if k in other.fields:
                    call.fields[k] = other.fields.pop(k)
            other.kinds.discard(kind)
            line = other.klines.pop(kind, None)
            if line is not None:
                if line in other.lines:
                    other.lines.remove(line)
                call.lines.append(line)
                call.klines[kind] = line
            call.kinds.add(kind)
            call.cpu_weak = True
            return

    def _put_cpu(self, call: Call, ev: Event, kind: str) -> None:
        call.kinds.add(kind)
        call.lines.append(ev.line)
        call.klines[kind] = ev.line
        ren = _RENAME.get(kind, {})
        for k, v in ev.fields.items():
            if k in _DROP:
                continue
            call.fields[ren.get(k, k)] = v
        if call.attr_cpu is Attribution.NONE:
            call.attr_cpu = Attribution.INFERRED
        if kind == "async_dealloc":
            self._maybe_emit(call)

    # -- emission ---------------------------------------------------------------------------------

    def _maybe_emit(self, call: Call) -> None:
        """Emit a call once nothing more can arrive for it."""
        if call.emitted or not call.ended:
            return
        blk = call.block
        if (
            self.beam is not None
            and blk is not None
            and not blk.closed
            and blk.seq in self.beam[0][2]
        ):
            # Its block's lines are still being weighed between hypotheses: wait for the verdict.
            self.deferred.append(call)
            return
        if blk is None or not blk.closed:
            if call.status != "failed":
                return
        if "async_dealloc" not in call.kinds and call.status != "failed":
            # T8 (and, from Phase 12 on, T3) come after GPU_END; wait for them unless the worker
            # has moved on twice since (then they are not coming for this call).
            later = sum(1 for c in self.calls if c.worker == call.worker and c.seq > call.seq)
            if later < 2:
                return
        self._emit(call)

    def _emit(self, call: Call) -> None:
        if call.emitted:
            return
        call.emitted = True
        if call in self.calls:
            self.calls.remove(call)
        blk = call.block
        rec: dict[str, Any] = {}
        tl = call.tl or {}
        rec["record"] = blk.seq if blk is not None else None
        rec["source"] = call.source
        rec["job_id"] = call.job_id
        rec["partition"] = call.partition
        rec["worker"] = call.worker
        rec["gpu"] = call.gpu if call.gpu is not None else self._only_gpu()
        rec["proof_kind"] = tl.get("proof_kind")
        rec["era"] = self.era.era
        for k in (
            "synth_start_ms",
            "synth_end_ms",
            "queue_ms",
            "pickup_ms",
            "start_ms",
            "end_ms",
            "synth_ms",
            "gpu_ms",
        ):
            rec[k] = tl.get(k)
        extra: dict[str, Value] = {}
        for src in (call.fields, blk.fields if blk is not None else {}):
            for k, v in src.items():
                if k.startswith("_"):
                    continue
                if k in _RECORD_COLUMNS:
                    rec[k] = v
                else:
                    extra[k] = v
        if blk is not None:
            extra.update(blk.extra)
            if blk.tids:
                rec["gpu_threads"] = len(blk.tids)
            if rec.get("gpu") is None and isinstance(blk.fields.get("d_a_cache_gpu"), int):
                rec["gpu"] = blk.fields["d_a_cache_gpu"]
        nc = call.fields.get("num_circuits")
        if nc is None and call.partition is not None:
            nc = 1  # the partition path proves one circuit per call (T3 may be missing)
        rec["num_circuits"] = nc
        if call.status == "ok" and (blk is None or not blk.closed or blk.gaps):
            # Lines of the call are missing from the log (or it never ended).
            rec["status"] = "incomplete"
        else:
            rec["status"] = call.status if call.ended else "incomplete"
        rec["attr_ids"] = str(call.attr_ids)
        if blk is None:
            rec["attr_gpu"] = str(Attribution.NONE)
        elif blk.doubt or blk.gaps:
            rec["attr_gpu"] = str(Attribution.AMBIGUOUS)
        elif blk.confirmed or call.job_id is None:
            rec["attr_gpu"] = str(Attribution.EXACT)
        else:
            rec["attr_gpu"] = str(Attribution.INFERRED)
        if call.attr_cpu is Attribution.NONE:
            rec["attr_cpu"] = str(Attribution.NONE)
        else:
            # A call that ended well without one of the CPU-side lines every version prints:
            # another call took it, so its placements around there are a guess.
            short = call.status == "ok" and not _CPU_EVERY <= call.kinds
            weak = call.cpu_weak or short
            rec["attr_cpu"] = str(Attribution.AMBIGUOUS if weak else Attribution.INFERRED)
        lines = call.lines + (blk.lines if blk is not None else [])
        rec["first_line"] = min(lines) if lines else None
        rec["last_line"] = max(lines) if lines else None
        rec["extra"] = json.dumps(extra, sort_keys=True) if extra else None
        if call.job_id is None and blk is None and not call.fields:
            return
        if call.job_id is None and self.timeline_calls and blk is not None:
            owner = self._blockless_call(blk)
            if owner is not None:
                # A GPU region no call took while a call that started before it has none:
                # most likely that call's (its binding was lost to damage or a swap).
                self._rebind(blk, owner)
                blk.confirmed = False
                blk.doubt = True
                self._maybe_emit(owner)
                return
        if call.job_id is None and self.timeline_calls and blk is not None and self.pickups:
            # A GPU region no call took, and a call picked up whose GPU_START line is lost.
            self._claim_pickup(call, rec)
        if call.job_id is None and self.timeline_calls:
            # The TIMELINE shows this run's calls and none of them took these C++ lines: they
            # are a fragment of a call whose other lines are lost, not a call of their own.
            for line in sorted(lines):
                self.acc.note_unattributed(line)
            if blk is not None and blk in self.closed_blocks:
                self.closed_blocks.remove(blk)
            return
        self.out.append(rec)
        # The TIMELINE entry of an emitted call is done with (keeps memory flat on long logs).
        if call.job_id is not None:
            key = (call.job_id, call.partition)
            if call.tl is not None and self.tl.get(key) is call.tl:
                del self.tl[key]
        if blk is not None and blk in self.closed_blocks:
            self.closed_blocks.remove(blk)

    def _blockless_call(self, blk: Block) -> Call | None:
        """The oldest TIMELINE call without a GPU region that started before ``blk``'s lock."""
        named = blk.fields.get("d_a_cache_gpu", blk.fields.get("pool_threshold_gpu"))
        fits = [
            c
            for c in self.calls
            if c.job_id is not None
            and c.block is None
            and not c.emitted
            and c.status != "failed"
            and c.start is not None
            and c.start <= blk.lock_hi + TOL_MS
            and (not isinstance(named, int) or c.gpu in (None, named))
        ]
        return min(fits, key=lambda c: c.seq) if fits else None

    def _claim_pickup(self, call: Call, rec: dict[str, Any]) -> None:
        """Give a GPU region without a call the identity of the oldest picked-up call whose
        GPU_START is lost (on its GPU when the region names one). The ids are the pickup's;
        that the region is this call's is a guess (``attr_gpu`` ambiguous)."""
        gpu = rec.get("gpu")
        keys = list(self.pickups)
        on_gpu = [k for k in keys if gpu is None or self._gpu_of(self.pickups[k]) in (gpu, None)]
        key = (on_gpu or keys)[0]
        worker = self.pickups.pop(key)
        tl = self.tl.get(key, {})
        call.tl = self.tl.get(key)
        call.job_id, call.partition, call.worker = key[0], key[1], worker
        rec.update(job_id=key[0], partition=key[1], worker=worker)
        if rec.get("gpu") is None:
            rec["gpu"] = self._gpu_of(worker)
        for k in ("synth_start_ms", "synth_end_ms", "queue_ms", "pickup_ms", "synth_ms"):
            rec[k] = tl.get(k)
        rec["proof_kind"] = tl.get("proof_kind")
        rec["attr_ids"] = str(Attribution.EXACT)
        rec["attr_gpu"] = str(Attribution.AMBIGUOUS)
        rec["status"] = "incomplete"

    def _only_gpu(self) -> int | None:
        """Without worker ids, the GPU is known only when the log shows a single one."""
        info = self.info
        if info.n_gpus is None and len(self.gpus_seen) == 1:
            return next(iter(self.gpus_seen))
        if info.n_gpus == 1 and info.gpus:
            return info.gpus[0]
        return None

    def _emit_orphan_block(self, blk: Block) -> None:
        """A GPU region with no call to bind to: still a record, identity unknown."""
        self.seq += 1
        call = Call(self.seq, None, None, None, None, self.segment, 0)
        call.block = blk
        blk.call = call
        call.ended = True
        call.status = "incomplete"
        self._emit(call)
