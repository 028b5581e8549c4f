# cython: annotation_typing=True
# (Compiled, ``Block``, ``Call`` and ``State`` are the extension types of their .pxd files, and
# annotations are C types here.)
"""Records out: a call becomes a record once its lines are in (or the input ends)."""

from __future__ import annotations

import json
from typing import Any

from cuzk_diag.ingest.assemble.blocks import (
    _RECORD_COLUMNS,
    TOL_MS,
    Block,
    presized,
)
from cuzk_diag.ingest.assemble.calls import (
    _NONE,
    KIND_BIT,
    Call,
    _span,
)
from cuzk_diag.ingest.assemble.state import State
from cuzk_diag.records import (
    Attribution,
    Value,
)

# The labels as records hold them (text) (see records.Family).
_EXACT_TEXT, _INFERRED_TEXT, _AMBIGUOUS_TEXT, _NONE_TEXT = (
    str(a)
    for a in (Attribution.EXACT, Attribution.INFERRED, Attribution.AMBIGUOUS, Attribution.NONE)
)

#: The bits in ``Call.kinds`` of the kinds tested here (compiled, C integers of this module).
_ASYNC_DEALLOC = KIND_BIT["async_dealloc"]
#: The CPU-side lines every version prints (T1-T3, T8), as bits of ``Call.kinds``.
_CPU_EVERY = sum(KIND_BIT[k] for k in ("split_vectors", "prep_msm", "b_g2_msm", "async_dealloc"))

#: The TIMELINE entry of a call without one (read, never written to).
_NO_FIELDS: dict[str, Value] = {}


#: Room a record is made with (``presized``): every column.
RECORD_SLOTS = len(_RECORD_COLUMNS)


def _into_record(src: dict[str, Value], rec: dict[str, Any], extra: dict[str, Value]) -> None:
    """A call's or a block's fields into its record: the record's columns as they are (most of
    the values), the rest, but for the assembly's own ``_`` keys, into ``extra``. (No column
    name starts with ``_``.)"""
    for k, v in src.items():
        if k in _RECORD_COLUMNS:
            rec[k] = v
        elif not k.startswith("_"):
            extra[k] = v


#: Calls open at once beyond which the oldest ends (``open_call``): this many a worker (of
#: those the log names, ``FEWEST_WORKERS`` at least), and this many more.
OPEN_CALLS_PER_WORKER = 4
OPEN_CALLS_SPARE = 32
FEWEST_WORKERS = 8


def gpus_named(self: State) -> int:
    """The GPUs the log names so far (its startup line's count, or those its one-time lines
    named), one at least: what the bounds on open blocks and calls count by."""
    return max(self.info.n_gpus or 0, len(self.gpus_seen), 1)


def open_call(self: State, call: Call) -> None:
    """``call`` is open (among ``State.calls``, the latest).

    A call is open from its first line to its last: a few a worker at most. More open than
    that means lines out of their printed order (a sorted or shuffled log): the oldest end
    here, as at the end of the input. (Each TIMELINE and C++ line is weighed against the open
    calls: this bounds the work of a line.)"""
    calls = self.calls
    calls.append(call)
    if len(calls) <= OPEN_CALLS_PER_WORKER * FEWEST_WORKERS + OPEN_CALLS_SPARE:
        return  # (the fewest allowed: the cap is worked out only beyond them)
    info = self.info
    workers = max(len(info.worker_gpu), (info.gw or 1) * gpus_named(self), FEWEST_WORKERS)
    cap = OPEN_CALLS_PER_WORKER * workers + OPEN_CALLS_SPARE
    if len(calls) > cap:
        for old in calls[: len(calls) - cap]:
            emit(self, old)


def maybe_emit(self: State, call: Call) -> None:
    """Emit a call once nothing more can arrive for it."""
    c: Call  # (the calls counted below)
    if call.emitted or not call.ended:
        return
    blk = call.block
    if self.beam is not None and blk is not None and not blk.closed and blk.seq in self.beam[0][2]:
        # Its block's lines are still being weighed between hypotheses: wait for the verdict.
        self.deferred.append(call)
        return
    if blk is None or not blk.closed:
        if call.status != "failed":
            return
    if (
        call.job_id is None
        and self.timeline_calls
        and blk is not None
        and _owner_settled(self, call)
    ):
        # A region no TIMELINE call took, closed, and the call it goes to is settled: as at
        # the end of the log (``emit``), now (a pair left open to the end holds memory, keeps
        # its record from live mode, and stops ``--jobs`` from cutting the log).
        emit(self, call)
        return
    if not call.kinds & _ASYNC_DEALLOC and call.status != "failed":
        # T8 (and, from Phase 12 on, T3) come after GPU_END; wait for them unless the worker
        # has moved on twice since (then they are not coming for this call).
        later = 0  # (a loop: ``sum`` over a generator made a generator object per call)
        for c in self.calls:
            if c.worker == call.worker and c.seq > call.seq:
                later += 1
        if later < 2:
            return
    emit(self, call)


def _owner_settled(self: State, call: Call) -> bool:
    """Would ``emit`` give the closed region of ``call`` (a call formed from C++ lines alone in
    a log with TIMELINE calls) to the same TIMELINE call now as at the end of the log? It gives
    it to the oldest call still without a region that started before its lock
    (``_blockless_call``); that call is settled once its GPU_END printed (its region can no
    longer come), and the choice is the end's when no older such region waits (the end gives
    them theirs oldest first)."""
    c: Call
    for c in self.calls:
        if c is call:
            break
        if c.job_id is None and c.block is not None and not c.emitted:
            return False  # an older region without a call chooses first
    blk = call.block
    owner = self._blockless_call(blk) if blk is not None else None
    return owner is not None and owner.ended


def emit(self: State, call: Call) -> None:
    if call.emitted:
        return
    call.emitted = True
    if call in self.calls:
        self.calls.remove(call)
    blk: Block | None = call.block
    tl: dict[str, Value] = call.tl if call.tl is not None else _NO_FIELDS
    rec = presized(RECORD_SLOTS)
    rec["record"] = blk.seq if blk is not None else None
    rec["source"] = call.source
    rec["job_id"] = call.job_id
    rec["partition"] = call.partition
    rec["worker"] = call.worker
    rec["gpu"] = call.gpu if call.gpu is not None else self._only_gpu()
    rec["proof_kind"] = tl.get("proof_kind")
    rec["era"] = self.era.era
    rec["synth_start_ms"] = tl.get("synth_start_ms")
    rec["synth_end_ms"] = tl.get("synth_end_ms")
    rec["queue_ms"] = tl.get("queue_ms")
    rec["pickup_ms"] = tl.get("pickup_ms")
    rec["start_ms"] = tl.get("start_ms")
    rec["end_ms"] = tl.get("end_ms")
    rec["synth_ms"] = tl.get("synth_ms")
    rec["gpu_ms"] = tl.get("gpu_ms")
    extra: dict[str, Value] = {}
    _into_record(call.fields, rec, extra)
    if blk is not None:
        _into_record(blk.fields, rec, extra)
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
        rec["attr_gpu"] = _NONE_TEXT
    elif blk.doubt or blk.gaps:
        rec["attr_gpu"] = _AMBIGUOUS_TEXT
    elif blk.confirmed or call.job_id is None:
        rec["attr_gpu"] = _EXACT_TEXT
    else:
        rec["attr_gpu"] = _INFERRED_TEXT
    if call.attr_cpu is _NONE:
        rec["attr_cpu"] = _NONE_TEXT
    else:
        # A call that ended well without one of the CPU-side lines every version prints:
        # another call took it, so its placements around there are a guess.
        short = call.status == "ok" and call.kinds & _CPU_EVERY != _CPU_EVERY
        weak = call.cpu_weak or short
        rec["attr_cpu"] = _AMBIGUOUS_TEXT if weak else _INFERRED_TEXT
    lines = call.lines + (blk.lines if blk is not None else [])
    rec["first_line"], rec["last_line"] = _span(lines)
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
            maybe_emit(self, owner)
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


class Emission(State):
    """Part of ``Assembler`` (see the package text)."""

    # (The module functions above: compiled, they are C functions that the parts cimporting
    # them call directly, where a method is found by name; ``_emit`` is for the end of the
    # input, ``Assembler.flush``, and live mode.)
    _emit = emit

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
        rec["attr_ids"] = _EXACT_TEXT
        rec["attr_gpu"] = _AMBIGUOUS_TEXT
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
