# cython: annotation_typing=True
# (Compiled, ``Block``, ``Call`` and ``State`` are the extension types of their .pxd files, and
# annotations are C types here.)
"""GPU-region lines: the open block each goes to, the beam over placements when blocks of
several GPUs are open at once, and when each GPU was free."""

from __future__ import annotations

from typing import Any

from cuzk_diag.event import Event
from cuzk_diag.ingest.assemble.blocks import (
    _BIT,
    _STAGE,
    STALE_MS,
    STARTS_BLOCK,
    TOL_MS,
    Block,
    _apply_line,
    closes,
    names_gpu,
)
from cuzk_diag.ingest.assemble.calls import (
    KIND_BIT,
    Call,
    Clock,
    _int0,
)
from cuzk_diag.ingest.assemble.emit import emit, gpus_named, maybe_emit
from cuzk_diag.ingest.assemble.identity import bind_block
from cuzk_diag.ingest.assemble.lockfit import gpu_free_at, lock_miss
from cuzk_diag.ingest.assemble.state import State
from cuzk_diag.ingest.parse.era import EraDetector

#: The stages of the kinds some rules below single out (as blocks.py's, whose C variables no
#: other module reads; compiled, these are C integers of this module, compared without a lookup).
_STAGE_MUTEX_WAIT = _STAGE["mutex_wait"]
_STAGE_PRESTAGE_VRAM = _STAGE["prestage_vram"]
_STAGE_NTT_H = _STAGE["ntt_h"]
#: Some kinds' bits in ``Block.seen``, likewise.
_BIT_D_A_CACHE = _BIT["d_a_cache"]
_BIT_NTT_H = _BIT["ntt_h"]
_BIT_NTT_MSM_H = _BIT["ntt_msm_h"]

#: The bits in ``Call.kinds`` of the kinds tested here (compiled, C integers of this module).
_HOST_REGISTER = KIND_BIT["host_register"]

#: A GPU thread number and a stage. (Aliases: compiled, an ``int`` annotation is a type the C
#: functions ``extend_beam``, ``_put_line`` and ``_opens_block`` would check, where gpu.pxd
#: declares their own.)
_Tid = int
_Stage = int


#: Blocks open at once beyond which the oldest is closed (``open_block``): this many a GPU
#: (of those the log names), and this many more.
OPEN_PER_GPU = 2
OPEN_SPARE = 6


def open_block(self: State, ev: Event, kind: str, lo: Clock, hi: Clock) -> Block:
    self.block_seq += 1
    blk = Block(self.block_seq)
    self.blocks.append(blk)
    bind_block(self, blk, ev, kind, lo, hi)
    # A block whose lock came ``STALE_MS`` before this one's clock reading takes no more
    # lines (its call failed inside the region, or its GPU is not known to the rule below).
    if lo is not None and self.beam is None:
        for other in list(self.blocks):
            if other is not blk and other.lock_hi < 1e17 and lo - other.lock_hi > STALE_MS:
                close_block(self, other)  # (as at the end of the log)
                stale = other.call
                if stale is not None and stale.job_id is None and not stale.emitted:
                    # C++ lines alone: a call that starts later can never own them
                    # (``_blockless_call``), so they are settled as the end settles them.
                    emit(self, stale)
    # One mutex per GPU: an older block still open on this GPU ended without its last
    # lines (the call failed inside the GPU region).
    gpu = blk.call.gpu if blk.call is not None else None
    if gpu is not None and blk.call is not None and blk.call.block is blk:
        for other in list(self.blocks):
            if other is not blk and other.call is not None and other.call.gpu == gpu:
                other.extra["gpu_region_cut_short"] = 1
                close_block(self, other)
    # A GPU's regions never overlap, so more blocks open than a few a GPU means lines out of
    # their printed order (a sorted or shuffled log): the oldest ends there, cut short. (Each
    # line is weighed against every open block, in every hypothesis of a beam: this bounds
    # the work of a line.)
    if len(self.blocks) <= OPEN_PER_GPU + OPEN_SPARE:
        return blk  # (the fewest allowed: the cap is worked out only beyond them)
    cap = OPEN_PER_GPU * gpus_named(self) + OPEN_SPARE
    while len(self.blocks) > cap and self.beam is None:
        oldest = self.blocks[0]
        oldest.extra["gpu_region_cut_short"] = 1
        close_block(self, oldest)
    return blk


def close_block(self: State, blk: Block) -> None:
    if blk.closed:
        return
    blk.closed = True
    if blk in self.blocks:
        self.blocks.remove(blk)
    era: EraDetector = self.era
    blk.gaps = blk.missing_stages("ntt_h" in era.markers)
    if blk.gaps and blk.call is not None and blk.call.status != "failed":
        # Its lost lines' neighbours may sit in the blocks open beside it.
        self._doubt(blk.gaps[0])
    if blk.has_t10 and "prestage_setup" not in blk.fields:
        blk.fields["prestage_setup"] = "silent"
    # The call the block leaves when the clock binds it to another (a swap gives it that
    # call's block, which may have closed already: its record may then be due, as below).
    left: Call | None = None
    if not blk.has_t17 and not blk.confirmed:
        left = blk.call
        self._bind_by_lock_time(blk)
        if blk.call is not None and not blk.confirmed and self._other_gpu_fits(blk):
            blk.doubt = True
        call: Call | None = blk.call  # (compiled, its attributes read as a struct's)
        if (
            call is not None
            and call.gpu is not None
            and call.start is not None
            and era.era not in ("unknown", "phase4-8", "phase9-11")
        ):
            # No T7 to confirm it later: a block whose lock came when the GPU's previous
            # region (as bound) released it, not when its call arrived, was checked
            # against that region's call; when that call is a guess, so is this one.
            # (Code with T7 confirms it later: nothing to look for there.)
            b: Block  # (the recent blocks: compiled, their fields read as a struct's)
            held: Call | None  # (a recent block's call)
            p: Block | None = None  # (the first of the latest locks, as ``max`` by lock_lo)
            for b in self.recent_blocks:
                held = b.call
                if held is not None and held.gpu == call.gpu and b.lock_hi < blk.lock_lo:
                    if p is None or b.lock_lo > p.lock_lo:
                        p = b
            ready = call.start + _int0(call.fields.get("setup_to_split_ms")) + 1
            if (
                p is not None
                and p.doubt
                and gpu_free_at(self, call.gpu, blk.lock_hi + TOL_MS, blk)[1]
                > ready - self.CONTEST_MARGIN
            ):
                blk.doubt = True
    call = blk.call
    if (
        self.pending_t9
        and not blk.has_t10
        and call is not None
        and not call.kinds & _HOST_REGISTER
        and blk.seen & _BIT_NTT_MSM_H
    ):
        self._put_cpu(call, self.pending_t9.popleft(), "host_register")
    self.closed_blocks.append(blk)
    recent = self.recent_blocks
    if len(recent) == recent.maxlen:
        self._release(recent[0])  # (a method: a test replaces it)
    recent.append(blk)
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
        maybe_emit(self, blk.call)
        if blk.call.emitted and blk in self.closed_blocks:
            # Its call was emitted before the block closed (it failed inside the region):
            # nothing more is decided by the block.
            self.closed_blocks.remove(blk)
    if left is not None and left is not blk.call:
        maybe_emit(self, left)


def extend_beam(
    self: State,
    ev: Event,
    kind: str,
    st: _Stage,
    tid: _Tid,
    lo: Clock,
    hi: Clock,
    ntt_era: bool,
) -> bool:
    """Place a line (of stage ``st``) in every hypothesis; False when it opens a block (beam
    committed).

    A hypothesis in which no block can take the line strictly may take it after a gap (a
    lost line), at ``GAP_COST`` per stage skipped; one that cannot take it at all ends.
    """
    b: Block  # (the blocks of the loops and comprehensions below)
    snaps: dict[int, tuple[Any, ...]]  # (each hypothesis' block states)
    assert self.beam is not None
    may_skip = not (kind in STARTS_BLOCK and not tid)
    new: list[tuple[float, int, dict[int, tuple[Any, ...]]]] = []
    closing: dict[int, int] = {}
    order = 0
    for cost, _, snaps in self.beam:
        mine: list[Block] = []  # the open blocks of the hypothesis, showing its states
        for b in self.blocks:
            snap = snaps.get(b.seq)
            if snap is not None:
                b.view(snap)
                mine.append(b)
        cands = [b for b in mine if b._takes(kind, st, tid, ntt_era, False)]
        lenient = not cands and may_skip
        if lenient:
            cands = [b for b in mine if b._takes(kind, st, tid, ntt_era, True)]
            self._doubt(kind)
        for b in cands:
            c: float = self.GAP_COST * b.skipped(kind, tid, ntt_era) if lenient else 0.0
            # (b shows the hypothesis' state: viewed above, and no other placement of this
            # hypothesis changes b.) A copy of it to place the line in:
            b.own_to_place(st, tid)
            if not tid:
                lc, b.lock_lo, b.lock_hi = b.lock_cost(st, ev, lo, hi)
                c += lc
            _apply_line(b, ev, kind, st, tid)
            c += b.relation_cost(kind, st)
            order += 1
            snaps2 = dict(snaps)
            snaps2[b.seq] = b.take()
            new.append((cost + c, order, snaps2))
            if closes(st) and b.closes_with(kind, tid):
                closing[order] = b.seq
            # (b now shows the new hypothesis' state: no other placement of this one reads
            # it, and the next hypothesis shows its own state of b before reading it.)
    # Each block shows the last hypothesis state it showed (a view: the next change to it
    # is a placement here, which restores first, or the commit): the last hypothesis' state,
    # as every hypothesis holds the same blocks (those open when the beam began).
    for b in mine:
        b.view(snaps[b.seq])
    if not new:
        # No hypothesis can take the line: settle on the best and let it open a block
        # (a line that cannot start one was lost from its block: unattributed).
        self._commit_beam()
        if may_skip:
            self._doubt(kind)
            self._note_unattributed(ev)
            return True
        return False
    new.sort()  # (by cost, then order: no two hypotheses have the same order)
    self.beam = new[: self.BEAM_WIDTH]
    best = self.beam[0]
    if best[1] in closing or len(self.beam) == 1:
        closing_seq = closing.get(best[1])
        self._commit_beam()
        if closing_seq is not None:
            for b in list(self.blocks):
                if b.seq == closing_seq:
                    close_block(self, b)
    return True


def gpu_line(self: State, ev: Event, kind: str, lo: Clock, hi: Clock) -> None:
    """Place a GPU-region line (``kind``: its event kind; ``lo``..``hi``: the clock bracket of
    the lines read since the last reading) into the block it belongs to, opening one or
    starting a beam search where several can take it. (A module function: compiled, a C
    function that ``drain`` calls directly, not a method found by name on each line.)"""
    b: Block  # (the blocks of the loops below: compiled, their methods are C calls)
    era: EraDetector = self.era  # (compiled, its markers read as a struct field)
    tid = ev.get("gpu_tid")
    tid = tid if isinstance(tid, int) else 0
    st: int = _STAGE[kind]  # (looked up once: the blocks are asked by stage)
    ntt_era = "ntt_h" in era.markers
    if self.beam is not None:
        if extend_beam(self, ev, kind, st, tid, lo, hi, ntt_era):
            return
    # The first block that can take the line, and whether others can (their list only when
    # they can: a line mostly fits one block).
    blk: Block | None = None
    several: bool = False
    for b in self.blocks:
        if b._takes(kind, st, tid, ntt_era, False):
            if blk is None:
                blk = b
            else:
                several = True
    if blk is None and not (kind in STARTS_BLOCK and not tid):
        # A line of the block's own kinds was lost (or the log starts mid-call): the line
        # goes to a block that can take it after a gap, never into a block of its own.
        cands = [b for b in self.blocks if b._takes(kind, st, tid, ntt_era, True)]
        self._doubt(kind)
        if not cands:
            self._note_unattributed(ev)
            return
        if len(cands) > 1:
            self.beam = [(0.0, 0, {b.seq: b.snapshot() for b in self.blocks})]
            extend_beam(self, ev, kind, st, tid, lo, hi, ntt_era)
            return
        blk = cands[0]
    if blk is None:
        blk = open_block(self, ev, kind, lo, hi)
    elif not several:
        # A line that starts a block (T17, T10, T14, or T4 in old code) while another block
        # is open could also open a new block on another GPU.
        if kind in STARTS_BLOCK and _opens_block(st, blk, ev):
            blk = open_block(self, ev, kind, lo, hi)
    else:
        # Blocks of several GPUs are open and more than one can take this line. When the
        # clock alone rules all but one out, take it; otherwise keep every placement as a
        # hypothesis until a closing line's arithmetic decides (beam search).
        # (A list, not a generator: compiled, a generator here would make every call of
        # this function keep its variables in a closure object.)
        costs = sorted(
            [
                (b.lock_cost(st, ev, lo, hi)[0], b.seq, b)
                for b in self.blocks
                if b._takes(kind, st, tid, ntt_era, False)
            ]
        )
        if costs[0][0] == 0.0 and costs[1][0] >= 50.0:
            blk = costs[0][2]
        else:
            self.beam = [(0.0, 0, {b.seq: b.snapshot() for b in self.blocks})]
            extend_beam(self, ev, kind, st, tid, lo, hi, ntt_era)
            return
    # The line's offset from the lock (``Block._offset``) as C values: no tuple, and no
    # float objects but those the block keeps.
    found: bool = False
    early: float = 0.0
    late: float = 0.0
    if not tid:
        found, early, late = blk._offset(st, ev)
        _, blk.lock_lo, blk.lock_hi = blk._cost_at(found, early, late, lo, hi)
    _put_line(self, blk, ev, kind, st, tid, found, early, late)


class GpuRegion(State):
    """Part of ``Assembler`` (see the package text)."""

    def _note_unattributed(self: State, ev: Event) -> None:
        self.acc.note_unattributed(ev.line)
        if len(self.unattributed) < 1000:
            # (Kept to the end of the run: with its dict made, an event made from columns no
            # longer holds its chunk's columns.)
            ev.field_dict()
            self.unattributed.append(ev)

    BEAM_WIDTH = 8
    GAP_COST = 1000.0  # per stage a hypothesis must take as lost (lines are rarely lost)
    CONTEST_MARGIN = 50.0  # a hypothesis this close to the best leaves its blocks ambiguous
    CPU_MARGIN = 30.0  # a CPU-side line whose runner-up call fits this close is ambiguous

    def _commit_beam(self: State) -> None:
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
        # The hypotheses are dropped here: the best one's states become the blocks' own, with
        # no copy (nothing else holds them once the beam is gone).
        for b in self.blocks:
            if b.seq in snaps:
                b.view(snaps[b.seq])
                if b.seq in contested:
                    b.doubt = True
        self.beam = None
        deferred, self.deferred = self.deferred, []
        for call in deferred:
            maybe_emit(self, call)

    # (The module function above: compiled, a C function that the methods here call directly;
    # the method is for ``Assembler.flush``.)
    _close_block = close_block

    def _release(self: State, old: Block) -> None:
        """``old`` leaves the recent blocks. Once its call is emitted and no other list holds
        it, nothing reads the block or its call again: their references to each other (a
        cycle, which only the garbage collector frees) go, and refcounting frees both at once.
        (Otherwise each collection after a chunk walked every call and block emitted in it: on
        a 50 MB log 0.7 s of collections in all, 0.15 s with the pairs released. The freeing
        itself costs the same either way.)"""
        call = old.call
        if (
            call is not None
            and call.emitted
            and call.block is old
            and old not in self.awaiting_t7
            and old not in self.closed_blocks
        ):
            call.block = None
            old.call = None

    # -- binding blocks to calls ------------------------------------------------------------------

    def _other_gpu_fits(self: State, blk: Block) -> bool:
        """Could a call of another GPU have held this block's lock as well as its own call?

        (Calls of one GPU queue on its mutex first in, first out; between GPUs only the clock
        tells, and when it does not the block's call is a guess.)
        """
        c: Call  # (the open calls: compiled, their fields read as a struct's)
        cur = blk.call
        if cur is None or cur.gpu is None:
            return False
        if blk.lock_lo <= -1e17 or blk.lock_hi >= 1e17:
            return False
        mine = lock_miss(self, blk, cur)
        for c in self.calls:
            if c is cur or c.gpu is None or c.start is None or c.closed_out:
                continue
            if c.gpu == cur.gpu and len(self.gpus_seen) < 2:
                continue  # one GPU: its calls take the lock first in, first out
            if c.block is not None and (c.block.confirmed or c.block is blk):
                continue
            if lock_miss(self, blk, c) - mine < self.CONTEST_MARGIN:
                if c.block is not None:
                    c.block.doubt = True  # the two could be swapped either way
                return True
        return False


def _put_line(
    self: State,
    blk: Block,
    ev: Event,
    kind: str,
    st: _Stage,
    tid: _Tid,
    found: bool,
    early: float,
    late: float,
) -> None:
    """A GPU-region line (``st``: its stage) into its block, whose offset
    from the lock ``gpu_line`` found (``found``: ``early``-``late``), or not. (A module
    function: compiled, a C function that ``gpu_line`` calls directly, not a method found by
    name.)"""
    _apply_line(blk, ev, kind, st, tid)
    if not tid and st != _STAGE_NTT_H and blk.lock_lo > -1e17 and blk.lock_hi < 1e17:
        if not found:
            found, early, late = blk._offset(st, ev)
        if found and late < 1e11 and blk.lock_hi - blk.lock_lo < 50:
            self._anchor = (blk.lock_lo + early, blk.lock_hi + late)
    if names_gpu(st):
        g = ev.get("gpu")
        if isinstance(g, int):
            self.gpus_seen.add(g)
    elif closes(st) and blk.closes_with(kind, tid):
        close_block(self, blk)


def _opens_block(st: _Stage, blk: Block, ev: Event | None) -> bool:
    """Is a new block more plausible than continuing ``blk`` for a line of stage ``st`` that
    can start one? (A module function: compiled, a C function that ``gpu_line`` calls
    directly, not a method found by name.)"""
    if st == _STAGE_MUTEX_WAIT:
        return True  # T17 always starts a block
    seen = blk.seen
    if st == _STAGE_NTT_H and ev is not None and seen & _BIT_D_A_CACHE and not seen & _BIT_NTT_H:
        # A GPU's first call allocates the pool-cached d_b (hundreds of ms); an NTT_H line
        # without that allocation belongs to a later call on another GPU.
        d_b = ev.get("d_b_alloc_ms")
        if isinstance(d_b, int) and d_b < 50:
            return True
    if blk.has_t17 or blk.has_t10:
        return False
    if st == _STAGE_PRESTAGE_VRAM:
        return True
    # Old code (no T17/T10): a T4 or NTT_H line when blk already has a later stage
    return blk.stage >= st and not (st == _STAGE_NTT_H and blk.stage == st)
