# cython: annotation_typing=True
# (Compiled, ``Block``, ``Call`` and ``State`` are the extension types of their .pxd files, and
# annotations are C types here.)
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
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cuzk_diag.event import Event
from cuzk_diag.ingest.assemble.blocks import (
    _CPU_KINDS,
    _JOINT_KINDS,
    _STAGE,
    TOL_MS,
    Block,
)
from cuzk_diag.ingest.assemble.calls import (
    KIND_BIT,
    Call,
    Clock,
    _ts_ms,
)
from cuzk_diag.ingest.assemble.cpu import CpuSide, cpu_line
from cuzk_diag.ingest.assemble.emit import Emission
from cuzk_diag.ingest.assemble.gpu import GpuRegion, gpu_line
from cuzk_diag.ingest.assemble.identity import Identity
from cuzk_diag.ingest.assemble.prep import solve_prep_lines
from cuzk_diag.ingest.assemble.runinfo import note_run_info
from cuzk_diag.ingest.assemble.state import State
from cuzk_diag.ingest.assemble.timeline import EngineEvents, timeline_line, tracing_line
from cuzk_diag.ingest.parse.era import EraDetector
from cuzk_diag.records import (
    Accounting,
    Family,
    RunInfo,
    Value,
)

__all__ = ["Assembler", "Block", "Call", "SegmentEnd", "TOL_MS"]

_TIMING, _NTT_H, _TIMELINE, _TRACING, _BENCH = (  # (see records.Family)
    Family.TIMING,
    Family.NTT_H,
    Family.TIMELINE,
    Family.TRACING,
    Family.BENCH,
)


#: Lines placed after the prep lines before them (``_drain``; a set: a chain of string
#: comparisons cost ~100 instructions each).
_AFTER_PREP = frozenset({"epilogue", "async_dealloc", "split_vectors"})
#: A clock reading this far (ms) behind the clock sets it back: within a segment the engine's
#: clock never goes back by more than the order its lines are printed in, seconds at most.
CLOCK_BACK_MS = 60_000.0


def drain(self: State, hi: Clock) -> None:
    """Place the C++ lines read since the last clock reading; ``hi`` is the new reading."""
    if not self.pending:
        return
    pending, self.pending = self.pending, []
    lo = self.clock
    ev: Event  # (compiled, a C type: its fields read as struct members)
    # Prep-thread lines wait for a joint placement; GPU lines placed meanwhile whose block
    # has a known lock time are clock readings of their own (anchors) for them.
    joint: list[tuple[int, Event]] = []
    anchors: list[tuple[int, float, float]] = []
    for idx, ev in enumerate(pending):
        kind = ev.kind  # ("ntt_h" for the NTT_H family)
        if kind in _JOINT_KINDS:
            joint.append((idx, ev))
            continue
        if joint and kind in _AFTER_PREP:
            # These depend on the prep lines before them (T7 after T3, T8 after T7).
            solve_prep_lines(self, joint, anchors, lo, hi)
            joint = []
        if kind in _STAGE:
            self._anchor = None
            gpu_line(self, ev, kind, lo, hi)
            anchor = self._anchor
            if anchor is not None:
                # (Not ``(idx, *anchor)``: compiled, that builds the tuple through a list.)
                anchors.append((idx, anchor[0], anchor[1]))
        elif kind in _CPU_KINDS:
            cpu_line(self, ev, kind, lo, hi)
        elif kind == "epilogue":
            self._t7(ev, lo, hi)
        else:
            self._note_unattributed(ev)
    if joint:
        solve_prep_lines(self, joint, anchors, lo, hi)


def _after_clock_back(self: State, t: float) -> float | None:
    """A timestamp's reading ``t`` after a TIMELINE reading set the clock back
    (``State.clock_back``): the clock, or None when it does not agree with it.

    A timestamp that agrees (within ``CLOCK_BACK_MS``) says the TIMELINE went back with the
    wall clock: lines out of place had set it ahead. Timestamps far ahead of it, twice with a
    TIMELINE reading between that stayed back, say the TIMELINE went back and the wall clock
    did not: the engine restarted without its start line, and the timestamps are read no more
    until the next start line (the wall clock of its offsets is not known). (One timestamp
    far ahead, or a TIMELINE reading that follows it ahead, is a line out of place.)"""
    clock = self.clock
    if clock is None or t <= clock + CLOCK_BACK_MS:
        self.clock_back = 0
        return t
    if self.clock_back == 3:
        self.clock_back = 0
        self.epoch_ms = None
    elif self.clock_back == 1:
        self.clock_back = 2
    return None


@dataclass(frozen=True)
class SegmentEnd:
    """In a record list: the records of a clock segment are out (the engine restarted)."""

    segment: int


class Assembler(EngineEvents, GpuRegion, Identity, CpuSide, Emission):
    """Incremental: ``feed(event)`` returns the records it completed; ``finish()`` the rest."""

    # (The module function above: compiled, a C function that feed_many calls directly; the
    # joint placement of T2/T3 lines is prep.py's ``solve_prep_lines``, a C function ``drain``
    # calls directly.)
    _drain = drain

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
        # The clock went back at a TIMELINE reading: 1; then a timestamp far ahead of it: 2;
        # then a TIMELINE reading that stayed back: 3 (``_after_clock_back``); else 0.
        self.clock_back = 0
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
        """The records one event completed."""
        return [r for r in self.feed_many((ev,)) if type(r) is not SegmentEnd]

    def feed_many(self: State, events: Iterable[Event]) -> list[Any]:
        """Take events in order; returns the records they completed, with a ``SegmentEnd``
        after the last record of each clock segment that ended (the engine restarted)."""
        out: list[Any] = []
        kinds_seen = self._kinds_seen
        era: EraDetector = self.era
        ev: Event  # (compiled, a C type: its fields read as struct members, not by name)
        # (``timeline_line``, ``tracing_line`` and ``drain``: compiled, C functions called
        # directly.)
        for ev in events:
            fam = ev.family
            if fam is _TIMING or fam is _NTT_H:
                kind = ev.kind
                if ev.malformed:
                    # Counted (with its line number) as malformed by the parser. Its values
                    # cannot be trusted, so it neither opens a block, nor moves the stage order
                    # of the block it falls into, nor marks the era, nor becomes a record. If it
                    # was a real line, the lines of its kind that follow may go to the wrong
                    # open call.
                    self._doubt(kind if fam is _TIMING else "ntt_h")
                    continue
                if kind not in kinds_seen:
                    # Era markers are first occurrences of line kinds.
                    kinds_seen.add(kind)
                    era.observe(ev)
                if kind == "timing_unknown":
                    self._note_unattributed(ev)
                    continue
                pending = self.pending  # (_drain replaces the list)
                pending.append(ev)
                if len(pending) > 256:
                    drain(self, None)
            elif fam is _TIMELINE or fam is _TRACING:
                # A timestamped line: first a clock reading (at ``t`` on the TIMELINE clock),
                # which places the C++ lines waiting for it and moves the clock on (back only
                # from far ahead, ``CLOCK_BACK_MS``).
                # (Their fields read one by one, ``Event.get``: the events of the lines read as
                # columns are made without a dict.)
                t: float | None = None
                kind = ev.kind
                if fam is _TIMELINE:
                    era.observe_timeline(kind, ev)
                    if kind == "torn":
                        continue
                    off = ev.get("offset_ms")
                    if isinstance(off, int):
                        t = float(off)
                else:
                    epoch = self.epoch_ms
                    if epoch is not None:
                        ts = ev.get("ts")
                        ms = _ts_ms(ts) if isinstance(ts, str) else None
                        if ms is not None:
                            t = ms - epoch
                            if self.clock_back:
                                t = _after_clock_back(self, t)
                if t is not None:
                    clock = self.clock or 0.0
                    if t < clock and t < clock - CLOCK_BACK_MS:  # (the first test: no float made)
                        # Far behind: lines out of place (a window of the log repeated or
                        # moved) set the clock ahead, or the engine restarted without its start
                        # line. The clock goes back; the lines waiting get no lower bound.
                        self.clock = None
                        clock = t
                        self.clock_back = 1 if fam is _TIMELINE else 0
                        # Whatever is open may hold lines of both stretches.
                        self._doubt_open()
                    elif self.clock_back and fam is _TIMELINE:
                        if t > clock + CLOCK_BACK_MS:
                            self.clock_back = 0  # (it went on: the reading back was astray)
                        elif self.clock_back == 2:
                            self.clock_back = 3  # (it stayed back, and a timestamp did not)
                    if self.pending:
                        drain(self, t)
                    self.clock = t if t > clock else clock  # (max(clock, t), without the call)
                if fam is _TIMELINE:
                    timeline_line(self, ev, kind)
                elif kind != "clock":
                    # (The one kind of line that ends a clock segment: the engine's start.)
                    segment = self.segment
                    tracing_line(self, ev, kind)
                    if self.segment != segment:
                        out.extend(self._take_out())
                        out.append(SegmentEnd(self.segment))
            elif fam is _BENCH:
                note_run_info(self.info, ev)
            elif ev.malformed and ev.kind == "damaged":
                # A line damaged beyond reading (NUL bytes): whatever it was.
                self._doubt_open()
        out.extend(self._take_out())
        return out

    def _doubt(self: State, kind: str) -> None:
        """A line of ``kind`` is lost: placements it could have changed are ambiguous."""
        if kind in _STAGE:
            for b in self.blocks:
                b.doubt = True
        elif kind in _CPU_KINDS or kind == "epilogue":
            bit = KIND_BIT[kind]
            for c in self.calls:
                if not c.kinds & bit:
                    c.cpu_weak = True

    def _doubt_open(self: State) -> None:
        """The placements of whatever is open could be wrong (a line damaged beyond reading,
        or the clock back from lines out of place): its blocks and CPU-side lines are
        ambiguous."""
        c: Call
        self._doubt("ntt_h")
        for c in self.calls:
            c.cpu_weak = True

    def _take_out(self: State) -> list[dict[str, Any]]:
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
        # Calls formed from C++ lines alone first: a GPU region among them goes to a TIMELINE
        # call still without one (``_emit``) before that call is emitted regionless.
        for call in sorted(self.calls, key=lambda c: c.job_id is not None):
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

    def _new_segment(self) -> None:
        """The engine restarted (or a new input began): TIMELINE offsets start again at 0.

        Reached from ``tracing_line`` only (the engine's start line): ``feed_many`` looks for the
        end of a segment after tracing lines alone."""
        flushed = self.flush()  # (flush replaces self.out: take its result first)
        self.out.extend(flushed)
        self.tl.clear()
        self.pickups.clear()
        self.clock = None
        self.clock_back = 0
        self.timeline_calls = 0
        self.segment += 1

    # -- TIMELINE -------------------------------------------------------------------------------
