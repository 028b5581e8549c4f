# cython: annotation_typing=True
# (Compiled, ``Block``, ``Call`` and ``State`` are the extension types of their .pxd files, and
# annotations are C types here.)
"""TIMELINE and tracing events: calls start and end, their identity and the clock."""

from __future__ import annotations

from cuzk_diag.event import Event
from cuzk_diag.ingest.assemble.blocks import STALE_MS, presized
from cuzk_diag.ingest.assemble.calls import (
    KIND_BIT,
    Call,
    Clock,
    MaybeInt,
    _ts_ms,
)
from cuzk_diag.ingest.assemble.emit import emit, maybe_emit, open_call
from cuzk_diag.ingest.assemble.identity import confirm_by_prove_start, confirm_by_t7
from cuzk_diag.ingest.assemble.runinfo import note_run_info, timeline_key
from cuzk_diag.ingest.assemble.state import State
from cuzk_diag.records import (
    Value,
)

#: Room a call's TIMELINE entry is made with (``presized``): it holds up to 9 keys.
TL_SLOTS = 10
#: The bits in ``Call.kinds`` of the kinds tested here (compiled, C integers of this module).
_PREP_MSM = KIND_BIT["prep_msm"]
_B_G2_MSM = KIND_BIT["b_g2_msm"]
#: TIMELINE kinds that change a call's entry, as numbers (one lookup, where a chain of string
#: comparisons cost ~100 instructions each).
_SYNTH_START, _SYNTH_END, _QUEUE, _PICKUP, _START, _END = range(1, 7)
_TL_KINDS = {
    "SYNTH_START": _SYNTH_START,
    "SYNTH_END": _SYNTH_END,
    "CHAN_SEND": _QUEUE,
    "GPU_QUEUE": _QUEUE,
    "GPU_PICKUP": _PICKUP,
    "GPU_START": _START,
    "GPU_END": _END,
}


def timeline_line(self: State, ev: Event, kind: str) -> None:
    """A TIMELINE line (``kind`` as ``feed_many`` read it; its fields read one by one,
    ``Event.get``)."""
    key = timeline_key(ev)
    job, part = key
    tl: dict[str, Value] | None = self.tl.get(key)
    if tl is None:
        tl = self.tl[key] = presized(TL_SLOTS)
    off = ev.get("offset_ms")
    code = _TL_KINDS.get(kind, 0)
    if code == _SYNTH_START:
        tl["synth_start_ms"] = off
        proof_kind = ev.get("kind")
        if isinstance(proof_kind, str):
            tl["proof_kind"] = proof_kind
    elif code == _SYNTH_END:
        tl["synth_end_ms"] = off
        tl["synth_ms"] = ev.get("synth_ms")
    elif code == _QUEUE:
        tl["queue_ms"] = off
    elif code == _PICKUP:
        tl["pickup_ms"] = off
        worker = ev.get("worker")
        if isinstance(worker, int):
            self.pickups[key] = worker
    elif code == _START:
        tl["start_ms"] = off
        self.pickups.pop(key, None)
        worker = ev.get("worker")
        worker = worker if isinstance(worker, int) else None
        start_call(self, job, part, worker, float(off) if isinstance(off, int) else None, ev)
        # the new call shares its TIMELINE dict
        self.calls[-1].tl = tl
    elif code == _END:
        tl["end_ms"] = off
        tl["gpu_ms"] = ev.get("gpu_ms")
        end_call(self, job, part, ev)


def start_call(
    self: State, job: str, part: MaybeInt, worker: MaybeInt, start: Clock, ev: Event
) -> None:
    if worker is not None:
        overtake(self, worker)
    self.seq += 1
    self.timeline_calls += 1
    call = Call(self.seq, job, part, worker, start, self.segment, ev.source)
    call.lines.append(ev.line)
    if worker is not None:
        call.gpu = self._gpu_of(worker)
    open_call(self, call)


def overtake(self: State, worker: MaybeInt) -> None:
    """``worker`` starts a call: its open calls are overtaken once more (``Call.overtaken``).

    A worker proves one call at a time, so an open call of it that two later calls have
    overtaken has printed its lines, but for those lost. Without its GPU_END (the line is
    lost, or its start was a window of the log repeated), it is over once the clock is
    ``STALE_MS`` from its start (past it, or before it when the start was repeated from
    later): as at the end of the input (``emit``: incomplete). Not sooner: lines printed out
    of their order (a shuffled window) may bring its GPU_END yet, and its region, which given
    to the next call instead would move every region after it by one. Ended, it waits for its
    late lines (``maybe_emit``: the deallocation thread may print its T8 calls later) until
    the clock is ``STALE_MS`` past its GPU_END. Not while a beam weighs blocks or its own
    block is open."""
    c: Call
    clock = self.clock
    over: list[Call] | None = None
    for c in self.calls:
        if c.worker != worker:
            continue
        c.overtaken += 1
        if c.overtaken < 2 or clock is None:
            continue
        if c.ended:
            # Waiting for its late lines (``maybe_emit``) a minute after its GPU_END: lost.
            end = c.tl.get("end_ms") if c.tl is not None else None
            done = isinstance(end, int) and clock - end > STALE_MS
            done = done and c.block is not None and c.block.closed
        else:
            done = c.start is not None and abs(clock - c.start) > STALE_MS
            done = done and (c.block is None or c.block.closed)
        if done:
            if over is None:
                over = []
            over.append(c)
    if over is not None and self.beam is None:
        for c in over:
            emit(self, c)


def end_call(self: State, job: str, part: MaybeInt, ev: Event) -> None:
    worker = ev.get("worker")
    gpu_ms = ev.get("gpu_ms")
    call = find_call(self, job, part, worker if isinstance(worker, int) else None)
    if call is None:
        call = self._call_without_start(job, part, ev.field_dict(), ev)
        if call is None:
            return
    if self.pending:  # (a method call only when lines wait)
        self._drain(None)
    if not call.kinds & _B_G2_MSM and call.kinds & _PREP_MSM:
        # Its T3 always precedes GPU_END: if a tie gave it to another open call, take it back.
        self._reclaim(call, "b_g2_msm", ("b_g2_msm_ms", "num_circuits"))
    call.ended = True
    call.closed_out = True
    call.status = "ok"
    call.lines.append(ev.line)
    # Phases 4-11: T7 of this call printed just before on the same thread; confirm its block.
    if isinstance(gpu_ms, int):
        confirm_by_t7(self, call, gpu_ms)
    maybe_emit(self, call)
    if call.block is None and self.timeline_calls:
        # Ended without a region of its own: a closed region no call took may be its now.
        c: Call
        for c in list(self.calls):
            if c.job_id is None and c.block is not None and c.block.closed:
                maybe_emit(self, c)


#: Tracing kinds that tell about calls, as numbers (as ``_TL_KINDS``).
_ENGINE_START, _PROVE_START, _PROVE_TIME, _FINALIZER, _FAILED = range(1, 6)
_TRACING_KINDS = {
    "engine_start": _ENGINE_START,
    "gpu_timing_prove_start": _PROVE_START,
    "gpu_prove_time": _PROVE_TIME,
    "fin_timing_finalizer": _FINALIZER,
    "partition_gpu_failed": _FAILED,
    "skip_failed_job": _FAILED,
}


def find_call(self: State, job: str, part: MaybeInt, worker: MaybeInt) -> Call | None:
    """The latest open call of ``job`` and ``part`` (on ``worker`` when both name one)."""
    call: Call
    for call in reversed(self.calls):
        if (
            call.job_id == job
            and call.partition == part
            and (worker is None or call.worker is None or call.worker == worker)
        ):
            return call
    return None


def tracing_line(self: State, ev: Event, kind: str) -> None:
    """A tracing line: its run facts (``runinfo``), then what it tells about calls (``kind``
    as ``feed_many`` read it; its fields read one by one, ``Event.get``)."""
    call: Call  # (the calls of the loops below)
    note_run_info(self.info, ev)
    code = _TRACING_KINDS.get(kind, 0)
    if code == _ENGINE_START:
        if self.clock is not None or self.calls:
            self._new_segment()
        ts = ev.get("ts")
        self.epoch_ms = _ts_ms(ts) if isinstance(ts, str) else None
    elif code == _PROVE_START:
        confirm_by_prove_start(self, ev)
    elif code == _PROVE_TIME:
        ms = ev.get("gpu_prove_time_ms")
        part = ev.get("partition")
        if isinstance(ms, float):
            for call in reversed(self.calls):
                if call.block is not None and (part is None or call.partition == part):
                    if "gpu_prove_time_ms" not in call.fields:
                        call.fields["gpu_prove_time_ms"] = ms
                    break
    elif code == _FINALIZER:
        w, p = ev.get("worker_id"), ev.get("partition")
        for call in reversed(self.calls):
            if call.worker == w and call.partition == p:
                call.fields["finish_ms"] = ev.get("finish_ms")
                break
    elif code == _FAILED:
        job, part = ev.get("job_id"), ev.get("partition")
        for call in reversed(self.calls):
            if call.job_id == job and call.partition == part:
                call.status = "failed"
                call.ended = True
                call.closed_out = True
                maybe_emit(self, call)
                break
        if kind == "skip_failed_job" and isinstance(job, str):
            # Picked up, then skipped: no GPU_START is coming for it, no GPU region may take
            # its identity (``_claim_pickup``), and its TIMELINE entry is done with.
            key = (job, part if isinstance(part, int) else None)
            self.pickups.pop(key, None)
            self.tl.pop(key, None)


class EngineEvents(State):
    """Part of ``Assembler`` (see the package text)."""

    # (The TIMELINE and tracing lines are the module functions above: compiled, ``timeline_line``
    # and ``tracing_line`` are C functions that ``feed_many`` calls directly, where a method is
    # found by name, and ``start_call``, ``end_call`` and ``find_call`` C functions they call.)

    def _gpu_of(self: State, worker: int) -> int | None:
        info = self.info
        if worker in info.worker_gpu:
            return info.worker_gpu[worker]
        if info.gw and info.gpus:
            idx = worker // info.gw
            if 0 <= idx < len(info.gpus):  # (a negative worker id is no index of the list)
                return info.gpus[idx]
        if info.gw and info.n_gpus:
            return worker // info.gw
        return None

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
        open_call(self, call)
        for c in self.calls:
            if c.job_id is None and c.block is not None:
                self._rebind(c.block, call)
                call.block.confirmed = False  # type: ignore[union-attr]
                break
        return call

    # -- C++ lines ---------------------------------------------------------------------------------
