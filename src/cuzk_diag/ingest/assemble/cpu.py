# cython: annotation_typing=True
# (Compiled, ``Block``, ``Call`` and ``State`` are the extension types of their .pxd files, and
# annotations are C types here.)
"""CPU-side lines (T1, T2, T3, T8, T9): the open call that fits the clock best."""

from __future__ import annotations

from collections.abc import Callable

from cuzk_diag.event import Event
from cuzk_diag.ingest.assemble.blocks import (
    TOL_MS,
    _copy_fields,
)
from cuzk_diag.ingest.assemble.calls import (
    _INFERRED,
    _NONE,
    KIND_BIT,
    Call,
    Clock,
    MaybeInt,
    _call_done,
    _int0,
    _t0,
)
from cuzk_diag.ingest.assemble.emit import maybe_emit, open_call
from cuzk_diag.ingest.assemble.identity import _best_fits, _clock_costs, _first_started
from cuzk_diag.ingest.assemble.state import State
from cuzk_diag.records import (
    Value,
)

#: The bits in ``Call.kinds`` of the kinds tested here (compiled, C integers of this module).
_SPLIT_VECTORS = KIND_BIT["split_vectors"]
_PREP_MSM = KIND_BIT["prep_msm"]
_B_G2_MSM = KIND_BIT["b_g2_msm"]
_ASYNC_DEALLOC = KIND_BIT["async_dealloc"]
_EPILOGUE = KIND_BIT["epilogue"]


def put_cpu(self: State, call: Call, ev: Event, kind: str) -> None:
    """A CPU-side line of ``kind`` into ``call`` (``CpuSide._put_cpu``)."""
    call.kinds |= KIND_BIT[kind]
    line = ev.line
    call.lines.append(line)
    call.klines[kind] = line
    _copy_fields(call.fields, ev, kind)
    if call.attr_cpu is _NONE:
        call.attr_cpu = _INFERRED
    if kind == "async_dealloc":
        maybe_emit(self, call)


def prep_print_ms(c: Call, kind: str, v: float, prep: MaybeInt) -> float:
    """When the prep thread's line of ``kind`` (T2 ``prep_msm`` or T3 ``b_g2_msm``) with value
    ``v`` prints, were ``c`` its call: the prep thread starts right after T1, so T2 prints at
    the call's entry + ``setup_to_split_ms`` + ``v``, and T3 at that + the T2's ``prep_msm_ms``
    (``prep``, else the call's own) instead. (The one place of this model: ``cpu_line``'s
    predictor, the joint T2/T3 search and ``_reclaim`` use it. ``v``, an int, is taken as a
    float: a C double compiled, the sum the same, since adding an int to a float converts it.)"""
    at = _t0(c) + _int0(c.fields.get("setup_to_split_ms"))
    if kind == "b_g2_msm":
        at += prep if prep is not None else _int0(c.fields.get("prep_msm_ms"))
    return at + v


def _predictor(kind: str, v: int) -> Callable[[Call], float]:
    """The print time of a CPU-side line of ``kind`` and value ``v`` were ``c`` its call (a
    function of its own: compiled, ``cpu_line`` can be a C function only without closures)."""
    if kind == "split_vectors":
        return lambda c: _t0(c) + v
    if kind == "prep_msm" or kind == "b_g2_msm":
        return lambda c: prep_print_ms(c, kind, v, None)
    return lambda c: _call_done(c) + v  # async_dealloc


def _has_end(c: Call) -> bool:
    """Has the call's GPU_END printed (its TIMELINE entry holds the end)?"""
    tl: dict[str, Value] | None = c.tl  # (compiled, a dict read as one)
    return tl is not None and isinstance(tl.get("end_ms"), int)


def cpu_line(self: State, ev: Event, kind: str, lo: Clock, hi: Clock) -> None:
    """A CPU-side line (``drain`` places it): the open call that fits the clock best."""
    c: Call  # (the calls of the comprehensions below)
    v: Value = None  # the line's value, when its print time can be predicted from it
    if kind == "split_vectors":
        cands = [
            c
            for c in self.calls
            if not c.kinds & _SPLIT_VECTORS and c.job_id is not None and not c.ended
        ]
        v = ev.get("setup_to_split_ms")
        if not cands:
            call = self._anonymous_for_t1(ev)
            put_cpu(self, call, ev, kind)
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
            if c.kinds & _SPLIT_VECTORS and not c.kinds & _PREP_MSM and not c.closed_out
        ]
        v = ev.get("prep_msm_ms")
    elif kind == "b_g2_msm":
        # T3 comes after the call's T2 and always before its GPU_END (and T7).
        cands = [
            c
            for c in self.calls
            if c.kinds & _PREP_MSM
            and not c.kinds & _B_G2_MSM
            and not c.closed_out
            and not c.kinds & _EPILOGUE
        ]
        if not cands:
            cands = self._lost_t2_calls()  # a T2 line was lost or damaged
        v = ev.get("b_g2_msm_ms")
    else:  # async_dealloc: after the call's epilogue/finalize
        # A call whose GPU_END printed has finished its region, whichever block the GPU
        # lines were bound to (with two GPUs a block can sit on the other GPU's call).
        cands = [
            c
            for c in self.calls
            if not c.kinds & _ASYNC_DEALLOC
            and ((c.block is not None and c.block.closed) or _has_end(c))
            and (c.kinds & _EPILOGUE or "pre_destructor_ms" not in c.fields)
        ]
        v = ev.get("async_dealloc_ms")
        if isinstance(v, int) and hi is not None and v > TOL_MS + self.CPU_MARGIN:
            # The dealloc thread is spawned just before the call returns and its GPU_END
            # prints, and T8 prints v ms after that spawn at the earliest: a call whose GPU_END
            # is still to come (at or after ``hi``) cannot own a T8 this long.
            cands = [c for c in cands if c.job_id is None or _has_end(c)]
        # In Phases 4-11 the dealloc thread is spawned after T7.
        with_t7 = [c for c in cands if c.kinds & _EPILOGUE]
        if self.era.era in ("phase4-8", "phase9-11") and with_t7:
            cands = with_t7
    if not cands:
        self._note_unattributed(ev)
        return
    strong = len(cands) == 1
    unsure = False
    if kind == "async_dealloc":
        # A call without its GPU_END yet has no reliable finish time to predict from, and a
        # call that ended but whose region is not (yet) its own could be the owner too. (Loops:
        # compiled, a function with a generator expression could be no C function.)
        for c in cands:
            if not _has_end(c):
                unsure = True
                break
        else:
            for c in self.calls:
                if c.closed_out and not c.kinds & _ASYNC_DEALLOC and c not in cands:
                    unsure = True
                    break
    if not strong and isinstance(v, int) and (lo is not None or hi is not None):
        timed = [c for c in cands if c.start is not None]
        if timed:
            # (as ``_by_clock``, scored once)
            scored = _clock_costs(timed, _predictor(kind, v), lo, hi)
            fit = _best_fits(scored)
            # One call fits clearly better than any other (not just by a few ms).
            strong = len(_best_fits(scored, self.CPU_MARGIN)) == 1
            cands = fit[:1]
    call = _first_started(cands)
    put_cpu(self, call, ev, kind)
    if not strong or unsure:
        call.cpu_weak = True


class CpuSide(State):
    """Part of ``Assembler`` (see the package text)."""

    def _lost_t2_calls(self) -> list[Call]:
        """The call that most likely awaits a T3 although its T2 never came: the oldest that
        entered (T1) without a T2 (its T2 was due first). Attributed as ambiguous."""
        for c in self.calls:
            if (
                c.kinds & _SPLIT_VECTORS
                and not c.kinds & (_PREP_MSM | _B_G2_MSM | _EPILOGUE)
                and not c.closed_out
            ):
                c.cpu_weak = True
                return [c]
        return []

    def _anonymous_for_t1(self, ev: Event) -> Call:
        # stderr-only / C++-only logs: every call starts with T1.
        self.seq += 1
        call = Call(self.seq, None, None, None, None, self.segment, ev.source)
        open_call(self, call)
        return call

    def _reclaim(self, call: Call, kind: str, keys: tuple[str, ...]) -> None:
        """Move a line of ``kind`` that a tie placed on another open call to ``call``.

        Only lines placed without a clear winner (``cpu_weak``) move, and only when the line's
        value puts its print time before this call's end on the TIMELINE clock.
        """
        end = self.clock
        bit = KIND_BIT[kind]
        for other in self.calls:
            if other is call or other.closed_out or not other.cpu_weak or not other.kinds & bit:
                continue
            v = other.fields.get(keys[0])
            if not isinstance(v, int) or call.start is None:
                continue
            pred = prep_print_ms(call, kind, v, None)
            if end is not None and pred > end + TOL_MS:
                continue
            for k in keys:
                if k in other.fields:
                    call.fields[k] = other.fields.pop(k)
            other.kinds &= ~bit
            line = other.klines.pop(kind, None)
            if line is not None:
                if line in other.lines:
                    other.lines.remove(line)
                call.lines.append(line)
                call.klines[kind] = line
            call.kinds |= bit
            call.cpu_weak = True
            return

    # (The module functions above: compiled, C functions that the parts cimporting them call
    # directly, where a method is found by name.)
    _put_cpu = put_cpu
