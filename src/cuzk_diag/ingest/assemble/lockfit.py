# cython: annotation_typing=True
# (Compiled, ``Block``, ``Call`` and ``State`` are the extension types of their .pxd files, and
# annotations are C types here.)
"""When a GPU's mutex was last free, and how far a call misses a block's lock: the clock's test
of which call a GPU region belongs to, on code without identity lines (closing a block,
``gpu.close_block``; the re-binding by lock time, ``identity.Identity._bind_by_lock_time``;
whether a call of another GPU fits as well, ``gpu.GpuRegion._other_gpu_fits``). A module of its
own so that both call these as C functions, compiled (each calls them once per open call when
a block closes)."""

from __future__ import annotations

from typing import Any

from cuzk_diag.ingest.assemble.blocks import _ANON_MISS, TOL_MS, Block
from cuzk_diag.ingest.assemble.calls import Call, _int0
from cuzk_diag.ingest.assemble.state import State


def gpu_free_at(self: State, gpu: Any, before: float, exclude: Block) -> tuple[float, float]:
    """Interval in which the GPU's mutex was last released before ``before``."""
    b: Block  # (compiled, its fields and its call's read as a struct's)
    c: Call | None
    if gpu is None:
        return (-1e18, -1e18)
    end = (-1e18, -1e18)
    # Only the last few blocks can be the GPU's previous holder (read in place, oldest first:
    # a copy of the deque per call was most of this function's cost).
    recent = self.recent_blocks
    n = len(recent)
    for k in range(n - 8 if n > 8 else 0, n):
        b = recent[k]
        c = b.call
        if b is exclude or c is None or c.gpu != gpu or b.lock_hi >= 1e17:
            continue
        total = b.fields.get("mutex_held_ms", b.fields.get("gpu_total_ms"))
        if not isinstance(total, int):
            continue
        if b.lock_hi < before and b.lock_lo + total > end[0]:
            end = (b.lock_lo + total, b.lock_hi + total)
    return end


def lock_miss(self: State, blk: Block, c: Call) -> float:
    """How far call ``c`` could not have taken ``blk``'s lock when the block says it did."""
    if c.start is None:
        return _ANON_MISS
    if c.start > blk.lock_hi + TOL_MS:
        return 1e9  # the block's lock came before the call began
    named = blk.fields.get("d_a_cache_gpu", blk.fields.get("pool_threshold_gpu"))
    if isinstance(named, int) and c.gpu is not None and named != c.gpu and len(self.gpus_seen) > 1:
        # One-time lines name the GPU (calls are routed per GPU once several GPUs show up).
        return 1e9
    lock = (blk.lock_lo + blk.lock_hi) / 2
    ready = c.start + _int0(c.fields.get("setup_to_split_ms")) + 1
    free_lo, free_hi = gpu_free_at(self, c.gpu, lock, blk)
    e_lo, e_hi = max(ready, free_lo), max(ready, free_hi)
    return max(0.0, blk.lock_lo - TOL_MS - e_hi, e_lo - blk.lock_hi - TOL_MS)
