# cython: annotation_typing=True
# (Compiled, ``Block``, ``Call`` and ``State`` are the extension types of their .pxd files, and
# annotations are C types here.)
"""Which call a block belongs to: by lock time, by the clock, and same-thread confirmation
(T19 -> prove_start on main, T7 -> GPU_END in Phases 4-11)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cuzk_diag.event import Event
from cuzk_diag.ingest.assemble.blocks import (
    _ANON_MISS,
    STALE_MS,
    TOL_MS,
    Block,
)
from cuzk_diag.ingest.assemble.calls import (
    KIND_BIT,
    Call,
    Clock,
)
from cuzk_diag.ingest.assemble.emit import maybe_emit, open_call
from cuzk_diag.ingest.assemble.lockfit import lock_miss
from cuzk_diag.ingest.assemble.state import State
from cuzk_diag.records import (
    Value,
)


def bind_block(self: State, blk: Block, ev: Event, kind: str, lo: Clock, hi: Clock) -> None:
    """Tentatively bind a new block to the call that most plausibly holds the lock."""
    b: Block  # (the blocks and calls of the comprehensions below)
    c: Call
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
    g = ev.get("gpu")
    if kind in ("pool_threshold", "d_a_cache") and isinstance(g, int):
        # One-time lines name their GPU: the block is a call of a worker on that GPU.
        on_gpu = [c for c in cands if c.gpu == g]
        if on_gpu:
            cands = on_gpu
    if kind == "mutex_wait" and (lo is not None or hi is not None):
        pre, wait = ev.get("pre_lock_cpu_ms"), ev.get("mutex_wait_ms")
        if isinstance(pre, int) and isinstance(wait, int):
            c0 = _lock_fit(cands, pre, wait, lo, hi)
            cands = [c0]
            if c0.start is not None:
                # main prints when the lock was taken: entry + pre-lock CPU + wait.
                t = c0.start + pre + wait
                blk.lock_lo = max(blk.lock_lo, t - TOL_MS)
                blk.lock_hi = min(blk.lock_hi, t + TOL_MS)
    # FIFO: the call that entered the C++ function first (T1 seen first), then start order.
    entered = [c for c in cands if c.kinds & _SPLIT_VECTORS]
    best = _first_started(entered or cands)
    blk.call = best
    best.block = blk


#: The bits in ``Call.kinds`` of the kinds tested here (compiled, C integers of this module).
_SPLIT_VECTORS = KIND_BIT["split_vectors"]
_PREP_MSM = KIND_BIT["prep_msm"]
_B_G2_MSM = KIND_BIT["b_g2_msm"]
_EPILOGUE = KIND_BIT["epilogue"]
#: A value of the log in ms, or a time on the TIMELINE clock. (An alias: compiled, an ``int`` or
#: ``float`` annotation is a type the C functions here would check or convert, where identity.pxd
#: declares their own.)
_Ms = float


def confirm_by_prove_start(self: State, ev: Event) -> None:
    """main: T19 is followed on the same thread by `GPU_TIMING spawn_blocking prove_start`."""
    blk: Block
    c: Call
    p_ms = ev.get("prove_start_ms")
    worker, part = ev.get("worker_id"), ev.get("partition")
    if not isinstance(p_ms, int):
        return
    if self.pending:  # (a method call only when lines wait)
        self._drain(None)
    best: Block | None = None
    best_gap = None
    clock = self.clock
    for blk in self.closed_blocks:
        if blk.confirmed:
            continue
        if clock is not None and abs(clock - blk.lock_hi) > STALE_MS and blk.lock_hi < 1e17:
            # Its lock a minute from the clock (lines out of place): not the region whose
            # last line T19 printed just now.
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
    spawn = ev.get("spawn_to_enter_ms")
    if isinstance(spawn, int):
        call.fields["spawn_to_enter_ms"] = spawn
    maybe_emit(self, call)


def confirm_by_t7(self: State, call: Call, gpu_ms: _Ms) -> None:
    """GPU_END follows T7 on the same thread: the T7 with gpu_ms >= pre_destructor_ms."""
    if self.pending:  # (a method call only when lines wait)
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
    best.kinds &= ~_EPILOGUE
    other_t7: dict[str, Value] = {}
    if call.kinds & _EPILOGUE:
        other_t7 = {
            k: call.fields.pop(k) for k in ("epilogue_ms", "pre_destructor_ms") if k in call.fields
        }
        call.kinds &= ~_EPILOGUE
    call.fields.update(t7)
    call.kinds |= _EPILOGUE
    if other_t7:
        best.fields.update(other_t7)
        best.kinds |= _EPILOGUE
    if blk is not None:
        self._rebind(blk, call)


class Identity(State):
    """Part of ``Assembler`` (see the package text). (The same-thread confirmations are the
    module functions above: compiled, C functions that timeline.py calls directly.)"""

    def _bind_by_lock_time(self: State, blk: Block) -> None:
        """Code without identity lines: re-bind a closed block to the call whose start (or its
        GPU's previous release) matches the block's lock time, found from its own values.

        A call already holding another unconfirmed block may swap with this one when that fits
        both blocks better.
        """
        c: Call  # (the open calls: compiled, their fields read as a struct's)
        if blk.lock_lo <= -1e17 or blk.lock_hi >= 1e17 or blk.lock_hi - blk.lock_lo > 3000:
            return
        cur = blk.call
        cur_miss = lock_miss(self, blk, cur) if cur is not None else _ANON_MISS
        best: tuple[float, int, Call] | None = None
        for c in self.calls:
            if c is cur or c.start is None or c.closed_out:
                continue
            other = c.block
            if other is not None and other.confirmed:
                continue
            gain = cur_miss - lock_miss(self, blk, c)
            if (
                other is not None
                and other.lock_hi < 1e17
                and (other.closed or other.lock_lo > -1e17)
            ):
                # Swap: the other block would move to this block's call (an open block too,
                # once its lines have placed its lock on the clock).
                back = lock_miss(self, other, cur) if cur is not None else _ANON_MISS
                gain += lock_miss(self, other, c) - back
            elif other is not None:
                continue  # its open block has no lock time yet: it cannot also hold this lock
            if gain > 50 and (best is None or gain > best[0]):
                best = (gain, c.seq, c)
        if best is not None:
            other = best[2].block
            self._rebind(blk, best[2])
            blk.confirmed = False
            blk.doubt = True  # FIFO said otherwise: the clock alone moved it
            if other is not None:
                other.doubt = True  # (and the block it swapped with)

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
        return _best_fits(_clock_costs(cands, predict, lo, hi), slack)

    def _anonymous_call(self, ev: Event) -> Call:
        # Reuse the oldest anonymous call that entered (T1) but has no block yet.
        for c in self.calls:
            if c.job_id is None and c.block is None:
                return c
        self.seq += 1
        call = Call(self.seq, None, None, None, None, self.segment, ev.source)
        open_call(self, call)
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

    def _t7(self, ev: Event, lo: float | None, hi: float | None) -> None:
        """T7 (Phases 4-11): the main thread's last line, after its block closed and b_g2 joined.

        Its block is the oldest closed block still without a T7 (whose kernels fit inside
        ``pre_destructor_ms``); its call is the one whose TIMELINE start plus
        ``pre_destructor_ms`` matches the clock when T7 printed. Together they bind block to call.
        """
        pd = ev.get("pre_destructor_ms")
        blocks = [b for b in self.awaiting_t7 if b.call is None or not b.call.kinds & _EPILOGUE]
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
            c for c in self.calls if not c.kinds & _EPILOGUE and (c.block is None or c.block.closed)
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
        if not call.kinds & _B_G2_MSM and call.kinds & _PREP_MSM:
            # T3 precedes T7 on the same call (the prep thread is joined first).
            self._reclaim(call, "b_g2_msm", ("b_g2_msm_ms", "num_circuits"))
        self._put_cpu(call, ev, "epilogue")

    # -- CPU-side lines ---------------------------------------------------------------------------


def _bracket_miss(p: _Ms, lo: Clock, hi: Clock) -> _Ms:
    """How far a predicted print time ``p`` misses the clock bracket ``lo``-``hi`` (ms), each
    side within ``TOL_MS``: the clock's cost of a placement (``_clock_costs``, ``_lock_fit``, and
    the joint placement of prep lines, ``prep._miss``)."""
    cost = 0.0
    if lo is not None and p < lo - TOL_MS:
        cost += lo - TOL_MS - p
    if hi is not None and p > hi + TOL_MS:
        cost += p - hi - TOL_MS
    return cost


def _clock_costs(
    cands: list[Call], predict: Callable[[Call], float], lo: float | None, hi: float | None
) -> list[tuple[float, float, Call]]:
    """``_by_clock``'s scores: each call with how far its predicted print time misses the clock
    bracket, and that time. (A caller that picks twice from the same calls scores them once.)"""
    scored = []
    for c in cands:
        if c.start is None:
            scored.append((0.0, 0.0, c))
            continue
        p = predict(c)
        scored.append((_bracket_miss(p, lo, hi), p, c))
    return scored


def _best_fits(scored: list[tuple[float, float, Call]], slack: float = 1e-9) -> list[Call]:
    """The calls ``_clock_costs`` scored within ``slack`` ms of the best, by predicted time."""
    best = min(s for s, _, _ in scored)
    fit = [(p, c.seq, c) for s, p, c in scored if s <= best + slack]
    fit.sort()  # (by time, then start order: a call's seq is its own, so calls are never compared)
    return [c for _, _, c in fit]


def _lock_fit(cands: list[Call], pre: int, wait: int, lo: float | None, hi: float | None) -> Call:
    """``_by_clock(cands, lambda c: c.start + pre + wait, lo, hi)[0]``: the call whose lock
    time fits a T17 line's clock bracket best, first by that time and then by start order.
    (Its scores in one pass and the pick in another: no call of a predict function per call,
    no scored tuples and no sorted list of the calls that fit.)"""
    c: Call
    if len(cands) == 1:
        return cands[0]
    misses: list[float] = []
    best = 0.0
    for c in cands:
        cost = 0.0 if c.start is None else _bracket_miss(c.start + pre + wait, lo, hi)
        if not misses or cost < best:  # (``min``: the first of equal values)
            best = cost
        misses.append(cost)
    limit = best + 1e-9  # (``_by_clock``'s slack)
    found = cands[0]
    found_p = None
    for i in range(len(cands)):
        if misses[i] <= limit:
            c = cands[i]
            p = c.start + pre + wait if c.start is not None else 0.0
            if found_p is None or p < found_p or (p == found_p and c.seq < found.seq):
                found, found_p = c, p
    return found


def _first_started(cands: Sequence[Call]) -> Call:
    """Of ``cands`` (calls), the one that started first: ``min`` by ``seq`` without a call of a
    key function per call."""
    first = cands[0]
    for c in cands:
        if c.seq < first.seq:
            first = c
    return first
