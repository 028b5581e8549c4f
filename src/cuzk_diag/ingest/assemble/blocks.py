# (Compiled, ``Block`` is the extension type of blocks.pxd, and its methods and the functions
# below are C functions there: blocks.pxd declares their types, not the annotations here.)
"""GPU-region blocks: the lines printed while a GPU's mutex is held, in their stage order."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cuzk_diag.event import Event
from cuzk_diag.records import (
    PARTITION_COLUMNS,
    Value,
)

if TYPE_CHECKING:
    from cuzk_diag.ingest.assemble.calls import Call

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
#: The stages of the kinds some rules below single out. (Compiled, a kind's stage, one table
#: lookup, tells these kinds apart as C integers: each comparison of two different strings
#: costs ~100 instructions.)
_STAGE_MUTEX_WAIT = _STAGE["mutex_wait"]
_STAGE_PRESTAGE_VRAM = _STAGE["prestage_vram"]
_STAGE_POOL_THRESHOLD = _STAGE["pool_threshold"]
_STAGE_D_A_CACHE = _STAGE["d_a_cache"]
_STAGE_NTT_H = _STAGE["ntt_h"]
_STAGE_NTT_MSM_H = _STAGE["ntt_msm_h"]
_STAGE_BARRIER_WAIT = _STAGE["barrier_wait"]
_STAGE_BATCH_ADD = _STAGE["batch_add"]
_STAGE_TAIL_MSM = _STAGE["tail_msm"]
_STAGE_MUTEX_HELD = _STAGE["mutex_held"]
#: A kind's bit in ``Block.seen`` (the stages a block holds a line of, from GPU thread 0): one
#: C integer, tested and set by its bit and copied as a value, where a set of kinds hashed the
#: kind for each test and was copied for each placement a beam hypothesis made.
_BIT = {k: 1 << st for k, st in _STAGE.items()}
_BIT_D_A_CACHE = _BIT["d_a_cache"]
_BIT_NTT_H = _BIT["ntt_h"]
_BIT_NTT_MSM_H = _BIT["ntt_msm_h"]
_BIT_BARRIER_WAIT = _BIT["barrier_wait"]
_BIT_MUTEX_HELD = _BIT["mutex_held"]
_TID_FIELDS = frozenset(
    {"ntt_msm_h_ms", "barrier_wait_ms", "batch_add_ms", "tail_msm_ms", "gpu_total_ms"}
)
_TID_KINDS = frozenset({"ntt_h", "ntt_msm_h", "barrier_wait", "batch_add", "tail_msm"})
_TID_PRED = {"barrier_wait": "ntt_msm_h", "batch_add": "ntt_msm_h", "tail_msm": "batch_add"}
#: The line a block must hold before it takes a line of each of these kinds (stage order aside):
#: a GPU thread's order (``_TID_PRED``), and T11-T13 after T10, T19 after T6.
_AFTER = {**_TID_PRED, "prestage_setup": "prestage_vram", "mutex_held": "tail_msm"}
#: The stages every complete GPU region prints (``Block.missing_stages``, in this order): those
#: of all code, with NTT_H first where the code prints it, and then those of main code (V11).
_NEED = ("ntt_msm_h", "batch_add", "tail_msm")
_NEED_NTT = ("ntt_h", *_NEED)
_NEED_MAIN = ("mutex_wait", "barrier_wait", "mutex_held")
#: Kinds of line whose GPU thread ``Block.tids`` counts: every thread's lines but NTT_H.
_THREAD_LINES = _TID_KINDS - {"ntt_h"}
_JOINT_KINDS = frozenset({"prep_msm", "b_g2_msm"})
_CPU_KINDS = frozenset({"split_vectors", "prep_msm", "b_g2_msm", "async_dealloc", "host_register"})

#: Kinds of line that can be the first of a block.
STARTS_BLOCK = frozenset(
    {"mutex_wait", "prestage_vram", "pool_threshold", "d_a_cache", "ntt_h", "ntt_msm_h"}
)
#: Field renames from event keys to record columns.
_RENAME = {
    "host_register": {"err": "host_register_err"},
    "prestage_setup": {"err": "prestage_err"},
    "pool_threshold": {"gpu": "pool_threshold_gpu"},
    "d_a_cache": {"gpu": "d_a_cache_gpu"},
}
_DROP = frozenset({"gpu_tid", "_words"})
_RECORD_COLUMNS = frozenset(name for name, _ in PARTITION_COLUMNS)

#: This module runs compiled (its file is an extension module, not this source).
COMPILED = not __file__.endswith(".py")
#: Room the fields of a block are made with (``presized``): one of main code holds 16-19.
BLOCK_SLOTS = 20


def presized(n: int) -> dict[str, Any]:
    """An empty dict with room for ``n`` keys (compiled, see ``blocks.pxd``; else a plain one).
    A dict filled key by key from empty grows on the way, each time putting every key in again:
    a record's 49 keys three times, a block's 16 twice."""
    if COMPILED:
        return cuzk_dict_presized(n)  # type: ignore[name-defined,no-any-return]  # noqa: F821
    return {}


#: ``Block._offset`` of the lines printed a fixed time after the lock.
_FIXED_OFFSET = {
    "mutex_wait": (0.0, 2.0),
    "pool_threshold": (0.0, 30.0),  # printed as the GPU thread starts, before the d_a allocation
    "prestage_vram": (0.0, 300.0),  # after a device-wide synchronize and pool trim
    "prestage_setup": (0.0, 300.0),
    "d_a_cache": (0.0, 5000.0),
}
#: ``Block._offset`` of the lines printed their own value after the lock: (its key, the
#: print latency).
_OWN_OFFSET = {
    "ntt_msm_h": ("ntt_msm_h_ms", 2.0),
    "tail_msm": ("gpu_total_ms", 2.0),
    "mutex_held": ("mutex_held_ms", 2.0),
}
#: The two tables by stage (None for a kind that has no entry): compiled, ``Block._offset``
#: indexes a tuple with a C integer where a lookup by kind hashes and compares the kind.
_BY_STAGE = sorted(_STAGE, key=_STAGE.__getitem__)
_FIXED_AT = tuple(_FIXED_OFFSET.get(k) for k in _BY_STAGE)
_OWN_AT = tuple(_OWN_OFFSET.get(k) for k in _BY_STAGE)
#: ``_AFTER`` (the bit of the kind each stage's line must follow, 0 for none) and ``_RENAME`` by
#: stage, likewise (``Block._takes``, ``_apply_line``).
_AFTER_BIT_AT = tuple(_BIT[_AFTER[k]] if k in _AFTER else 0 for k in _BY_STAGE)
_RENAME_AT = tuple(_RENAME.get(k) for k in _BY_STAGE)
#: The stages ``Block.missing_stages`` asks for, as bits of ``Block.seen``.
_NEED_MASK = sum(_BIT[k] for k in _NEED)
_NEED_NTT_MASK = sum(_BIT[k] for k in _NEED_NTT)
_NEED_MAIN_MASK = sum(_BIT[k] for k in _NEED_MAIN)

_ANON_MISS = 1000.0  # cost of leaving a block with a call formed from C++ lines alone
#: A block whose lock came this long (ms of the engine's clock) before a new block's clock
#: reading takes no more lines: a GPU region lasts seconds (``gpu.open_block``; the block of a
#: call that failed inside its region, or of C++ lines no call took, is otherwise open to the
#: end of the log). The same span from the clock makes a call or a block stale elsewhere.
STALE_MS = 60_000.0
TOL_MS = 6  # clock truncation (gettimeofday +-1 ms, each value truncated) plus print latency
_TOL_MS_F = float(TOL_MS)  # (as a float: compiled, a C double; Python adds an int as this)


def _iv(d: dict[str, Value], k: str) -> int | None:
    v = d.get(k)
    return v if type(v) is int else None


def _ive(ev: Event, k: str) -> int | None:
    """``_iv`` of a line's field (``Event.get``)."""
    v = ev.get(k)
    return v if type(v) is int else None


def closes(st: int) -> bool:
    """Can a line of stage ``st`` end a block (``Block.closes_with``)? T6 and T19 can. (By
    stage: compiled, two comparisons of C integers where a set of kinds hashes and compares the
    kind.)"""
    return st == _STAGE_TAIL_MSM or st == _STAGE_MUTEX_HELD


def names_gpu(st: int) -> bool:
    """Does a line of stage ``st`` name its GPU? T14 and T15 do (printed once per GPU). (By
    stage, as ``closes``.)"""
    return st == _STAGE_POOL_THRESHOLD or st == _STAGE_D_A_CACHE


def _ivf(d: dict[str, Value], k: str) -> int | None:
    """``_iv`` that takes a bool too (``relation_cost``'s reading of a value)."""
    v = d.get(k)
    return v if isinstance(v, int) else None


#: Kinds of line whose placement ``Block.relation_cost`` weighs (it is 0 for the others).
_RELATED = frozenset(
    {"pool_threshold", "d_a_cache", "ntt_h", "ntt_msm_h", "tail_msm", "mutex_held"}
)


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

    def __init__(self, seq: int) -> None:
        self.gaps: list[str] = []  # stages found missing when the block closed
        self.doubt = False  # took a line after a gap, or a line it may have needed was lost
        self.seen = 0  # the stages of its thread-0 lines, a bit each (``_BIT``)
        # (kind, GPU thread) of the other threads' lines
        self.tid_seen: set[tuple[str, int]] = set()
        self.multi_circuit = False
        self.per_tid: dict[int, dict[str, Value]] = {}
        # Feasible interval of the lock-acquisition time on the TIMELINE clock (ms).
        self.lock_lo = -1e18
        self.lock_hi = 1e18
        self.fields: dict[str, Value] = presized(BLOCK_SLOTS)
        self.stage = -1
        self.closed = False
        self.call: Call | None = None
        # (the numbers of the lines placed in it, its opening line too: ``_apply_line``)
        self.lines: list[int] = []
        self.tids: set[int] = set()
        self.has_t17 = False
        self.has_t10 = False
        self.seq = seq
        self.confirmed = False
        self.extra: dict[str, Value] = {}

    def accepts(self, kind: str, tid: int, ntt_era: bool, lenient: bool = False) -> bool:
        """Can this block take a line of ``kind`` (a GPU-region kind) next? (per-thread order of
        reference 1.4)

        ``lenient``: the line may follow a gap (a stage whose line is missing from the log), as
        long as the stage order holds; used only when no block can take the line strictly.
        """
        return self._takes(kind, _STAGE[kind], tid, ntt_era, lenient)

    def _takes(self, kind: str, st: int, tid: int, ntt_era: bool, lenient: bool) -> bool:
        """``accepts`` for a kind whose stage (``st``) the caller has looked up already (the
        assembly looks it up once a line, not once for each block it asks)."""
        if self.closed:
            return False
        seen = self.seen
        if lenient:
            if tid:
                return kind in _TID_KINDS and (kind, tid) not in self.tid_seen
            if st == _STAGE_NTT_H:
                return self.stage < st
            return not (seen >> st) & 1 and st > self.stage
        if tid:
            # Further GPU threads of a multi-GPU call print T16/T4-T6 with gpu_tid > 0.
            return (
                kind in _TID_KINDS
                and (kind, tid) not in self.tid_seen
                and (kind not in _TID_PRED or (_TID_PRED[kind], tid) in self.tid_seen)
            )
        if st == _STAGE_NTT_H:
            if self.stage > st:
                return False
            # One NTT_H per circuit: a second one belongs here only for a batch call.
            return not seen & _BIT_NTT_H or self.multi_circuit
        if st <= self.stage or (seen >> st) & 1:
            return False
        after: int = _AFTER_BIT_AT[st]
        if after and not seen & after:
            return False
        if st == _STAGE_NTT_MSM_H:
            return bool(seen & _BIT_NTT_H) or not ntt_era
        if st == _STAGE_BATCH_ADD:
            return bool(seen & _BIT_BARRIER_WAIT) or not self.has_t17
        if st == _STAGE_MUTEX_HELD:
            return self.has_t17
        return True

    def _offset(self, st: int, ev: Event) -> tuple[bool, float, float]:
        """How long after the lock a line (``ev``) of stage ``st`` prints, from its values and
        the block's: (found, early, late). (Compiled, a C struct: ``lock_cost`` makes no tuple and
        no float objects of it.)"""
        fixed = _FIXED_AT[st]
        if fixed is not None:
            return True, fixed[0], fixed[1]
        # (Each bound is a sum of the log's ints plus a float: the ints' sum as a float, ``at``,
        # plus the float, as Python adds an int and a float; compiled, ``at`` is a C double.)
        own = _OWN_AT[st]
        if own is not None:  # the line's own value (and a print latency)
            key, latency = own
            v = ev.get(key)
            if type(v) is not int:
                return False, 0.0, 0.0
            at = float(v)
            return True, at, at + latency
        if st == _STAGE_NTT_H:
            total = _ive(ev, "ntt_h_total_ms")
            if total is None:
                return False, 0.0, 0.0
            at = float(total)
            return True, at, at + (5000.0 if self.seen & _BIT_D_A_CACHE else 60.0)
        b = self.fields
        ntt = _iv(b, "ntt_msm_h_ms")
        if st == _STAGE_BARRIER_WAIT:
            v = _ive(ev, "barrier_wait_ms")
            if v is None or ntt is None:
                return False, 0.0, 0.0
            at = float(ntt + v)
            return True, at, at + 3.0
        if st == _STAGE_BATCH_ADD:
            v = _ive(ev, "batch_add_ms")
            if v is None or ntt is None:
                return False, 0.0, 0.0
            bw = _iv(b, "barrier_wait_ms")
            if bw is not None:
                at = float(ntt + bw + v)
                return True, at, at + 4.0
            return True, float(ntt + v), 1e12
        return False, 0.0, 0.0

    def lock_cost(
        self, st: int, ev: Event, lo: float | None, hi: float | None
    ) -> tuple[float, float, float]:
        """(cost, new_lo, new_hi): how far the clock bracket of a line (``ev``, of stage
        ``st``) misses the lock interval."""
        found, early, late = self._offset(st, ev)
        return self._cost_at(found, early, late, lo, hi)

    def _cost_at(
        self, found: bool, early: float, late: float, lo: float | None, hi: float | None
    ) -> tuple[float, float, float]:
        """``lock_cost`` for the offset (``found``) ``early``-``late``. (The bracket's arithmetic
        as Python does it on floats: a bound that is an int is converted to a float first.)"""
        old_lo, old_hi = self.lock_lo, self.lock_hi
        if not found or (lo is None and hi is None):
            return 0.0, old_lo, old_hi
        # (max and min of two, written out: the first of equal values, as the builtins)
        new_lo = old_lo
        if lo is not None:
            bound: float = lo
            t = bound - late - _TOL_MS_F
            if t > old_lo:
                new_lo = t
        new_hi = old_hi
        if hi is not None:
            bound = hi
            t = bound - early + _TOL_MS_F
            if t < old_hi:
                new_hi = t
        miss = new_lo - new_hi
        return (miss if miss > 0.0 else 0.0), new_lo, new_hi

    def snapshot(self) -> tuple[Any, ...]:
        """The block's placement state, copied (``take``'s order: ``fields``, ``stage``,
        ``lines``, ``tids``, ``has_t17``, ``has_t10``, ``seen``, ``tid_seen``, ``lock_lo``,
        ``lock_hi``, ``extra``, ``per_tid``)."""
        held = self.take()
        self.restore(held)
        copy = self.take()
        self.view(held)
        return copy

    def restore(self, snap: tuple[Any, ...]) -> None:
        """Take a copy of the state of ``snap``, to change it: each container copied, in place
        (no tuple of the copies to unpack)."""
        self.view(snap)
        self.extra = dict(self.extra)
        self.tids = set(self.tids)
        self.tid_seen = set(self.tid_seen)
        self._own(True)

    def own_to_place(self, stage: int, tid: int) -> None:
        """``restore`` of the state the block shows (a beam hypothesis' state, by ``view``), to
        place one line (of ``stage``, GPU thread ``tid``) in a copy of it: the containers that
        placing it leaves alone stay the hypothesis', shared, for nothing changes them but a
        placement, which copies them first (``extra``, which no placement changes; ``tids`` but
        for a thread's line, T4-T6 and T18; ``tid_seen`` and an empty ``per_tid`` for a line
        of thread 0)."""
        if _STAGE_NTT_MSM_H <= stage <= _STAGE_TAIL_MSM:  # (as ``_apply_line``)
            self.tids = set(self.tids)
        if tid:
            self.tid_seen = set(self.tid_seen)
        self._own(bool(tid) and stage != _STAGE_NTT_H)

    def _own(self, per_thread: bool) -> None:
        """Copy the containers every placement changes (``fields``, ``lines``), and
        ``per_tid`` when it holds threads or ``per_thread`` (a placement that starts it)."""
        self.fields = dict(self.fields)
        self.lines = list(self.lines)
        per_tid = self.per_tid
        if per_tid or per_thread:
            self.per_tid = {k: dict(v) for k, v in per_tid.items()}

    def view(self, snap: tuple[Any, ...]) -> None:
        """Take the state of ``snap`` without copying it, to read it only: whatever changes the
        block next must ``restore`` (or ``own_to_place``) first (the beam reads each
        hypothesis this way)."""
        (
            self.fields,
            self.stage,
            self.lines,
            self.tids,
            self.has_t17,
            self.has_t10,
            self.seen,
            self.tid_seen,
            self.lock_lo,
            self.lock_hi,
            self.extra,
            self.per_tid,
        ) = snap

    def take(self) -> tuple[Any, ...]:
        """``snapshot`` without copying: for a state that nothing else holds, which the block
        leaves at once (``view`` or ``restore``)."""
        return (
            self.fields,
            self.stage,
            self.lines,
            self.tids,
            self.has_t17,
            self.has_t10,
            self.seen,
            self.tid_seen,
            self.lock_lo,
            self.lock_hi,
            self.extra,
            self.per_tid,
        )

    def missing_stages(self, ntt_era: bool) -> list[str]:
        """Stages every complete GPU region of this code prints but this block lacks."""
        seen = self.seen
        need = _NEED_NTT_MASK if ntt_era else _NEED_MASK
        if self.has_t17 or seen & (_BIT_MUTEX_HELD | _BIT_BARRIER_WAIT):
            need |= _NEED_MAIN_MASK  # main code (V11)
        if seen & need == need:
            return []  # (as nearly always: no list made of the kinds)
        missing = [k for k in (_NEED_NTT if ntt_era else _NEED) if not seen & _BIT[k]]
        if need & _NEED_MAIN_MASK:
            missing += [k for k in _NEED_MAIN if not seen & _BIT[k]]
        return missing

    def skipped(self, kind: str, tid: int, ntt_era: bool) -> int:
        """How many stages this block would take as lost if it took ``kind`` next."""
        if tid:
            pred = _TID_PRED.get(kind)
            return 0 if pred is None or (pred, tid) in self.tid_seen else 1
        st = _STAGE[kind]
        return max(1, sum(1 for k in self.missing_stages(ntt_era) if self.stage < _STAGE[k] < st))

    def closes_with(self, kind: str, tid: int) -> bool:
        """Would this line (already applied) end the block? T19 on main, else the last T6.
        (Only these two kinds can: callers test the kind first.)"""
        if kind == "mutex_held":
            return True
        if kind == "tail_msm" and not self.has_t17:
            # (Thread 0's lines in ``seen``, the others' in ``tid_seen``.)
            started = {t for k, t in self.tid_seen if k == "ntt_msm_h"}
            ended = {t for k, t in self.tid_seen if k == "tail_msm"}
            if self.seen & _BIT_NTT_MSM_H:
                started.add(0)
            if (self.seen >> _STAGE_TAIL_MSM) & 1:
                ended.add(0)
            return started <= ended
        return False

    def relation_cost(self, kind: str, st: int) -> float:
        """How far the block's values miss the arithmetic relations of reference 1.5 (ms), once
        it took a line of ``kind`` (of stage ``st``)."""
        f = self.fields
        cost = 0.0
        if kind not in _RELATED:
            return cost
        if names_gpu(st):
            g = f.get("d_a_cache_gpu" if kind == "d_a_cache" else "pool_threshold_gpu")
            call = self.call
            if isinstance(g, int) and call is not None and call.gpu is not None and call.gpu != g:
                cost += 1000.0
        if st == _STAGE_NTT_H and self.seen & _BIT_D_A_CACHE:
            d_b = _ivf(f, "d_b_alloc_ms")
            if d_b is not None and d_b < 50:
                cost += 500.0
        if st == _STAGE_NTT_MSM_H:
            ntt, total = _ivf(f, "ntt_msm_h_ms"), _ivf(f, "ntt_h_total_ms")
            if ntt is not None and total is not None and self.seen & _BIT_NTT_H:
                # T4 spans the NTT_H block plus the d_a lookup (large only on a GPU's first call).
                slack = 10000.0 if self.seen & _BIT_D_A_CACHE else 30.0
                d = ntt - total
                cost += max(0.0, -2 - d) + max(0.0, d - slack)
        elif st == _STAGE_TAIL_MSM:
            total = _ivf(f, "gpu_total_ms")
            ntt, add, tail = (
                _ivf(f, "ntt_msm_h_ms"),
                _ivf(f, "batch_add_ms"),
                _ivf(f, "tail_msm_ms"),
            )
            if total is not None and ntt is not None and add is not None and tail is not None:
                rest = total - (ntt + add + tail)
                bw = _ivf(f, "barrier_wait_ms")
                if bw is not None:
                    cost += max(0.0, abs(rest - bw) - 4)
                else:
                    cost += max(0.0, -rest - 3)
        elif st == _STAGE_MUTEX_HELD:
            held, tot = _ivf(f, "mutex_held_ms"), _ivf(f, "total_start_fn_ms")
            gt, pre, wait = (
                _ivf(f, "gpu_total_ms"),
                _ivf(f, "pre_lock_cpu_ms"),
                _ivf(f, "mutex_wait_ms"),
            )
            if held is not None and gt is not None:
                cost += max(0.0, gt - held - 1)
            if held is not None and tot is not None and pre is not None and wait is not None:
                cost += max(0.0, abs(tot - pre - wait - held) - 3)
        return cost


def _copy_fields(into: dict[str, Value], ev: Event, kind: str) -> None:
    """A line's fields into a block's, a GPU thread's or a call's, renamed (``_RENAME``) and
    without the parser's own keys (``_DROP``, which none of them holds)."""
    ev.copy_fields(into, _DROP, _RENAME.get(kind))


def _apply_gpu(blk: Block, ev: Event, kind: str, tid: int) -> None:
    """Add a GPU-region line to a block's state (no side effects beyond the block). (A
    malformed line never comes here: ``Assembler.feed_many`` counts it and leaves it out.)"""
    _apply_line(blk, ev, kind, _STAGE[kind], tid)


def _apply_line(blk: Block, ev: Event, kind: str, stage: int, tid: int) -> None:
    """``_apply_gpu`` for a line's stage (``_STAGE[kind]``) that the caller has read already:
    compiled, a lookup of a kind's stage is a lookup. Its fields are read by
    ``Event.copy_fields`` (an event made from columns makes no dict of them)."""
    blk.lines.append(ev.line)
    if stage == _STAGE_NTT_H:
        for k, v in ev.field_dict().items():
            if isinstance(v, int):
                old = blk.fields.get(k)
                blk.fields[k] = v + old if isinstance(old, int) else v
    elif tid == 0 and not blk.per_tid:
        # The usual single-GPU-thread call: thread 0's values are the block's.
        ev.copy_fields(blk.fields, _DROP, _RENAME_AT[stage])
    else:
        # Per GPU thread; a multi-GPU call reports each stage's longest thread.
        if not blk.per_tid:
            blk.per_tid[0] = {k: v for k, v in blk.fields.items() if k in _TID_FIELDS}
        per = blk.per_tid.setdefault(tid, {})
        ev.copy_fields(per, _DROP, _RENAME_AT[stage])
        for k, v in per.items():
            if len(blk.per_tid) == 1 or not isinstance(v, int):
                blk.fields[k] = v
            else:
                vals = [d[k] for d in blk.per_tid.values() if isinstance(d.get(k), int)]
                blk.fields[k] = max(vals)  # type: ignore[type-var]
    if _STAGE_NTT_MSM_H <= stage <= _STAGE_TAIL_MSM:  # kind in _THREAD_LINES (no set lookup)
        blk.tids.add(tid)
    if not tid:
        blk.seen |= 1 << stage
        if stage > blk.stage:
            blk.stage = stage
    else:
        blk.tid_seen.add((kind, tid))
    if stage == _STAGE_MUTEX_WAIT:
        blk.has_t17 = True
    elif stage == _STAGE_PRESTAGE_VRAM:
        blk.has_t10 = True
