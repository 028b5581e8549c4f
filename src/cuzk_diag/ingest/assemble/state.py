"""What the parts of ``Assembler`` share: its state, and (for the type checker) the methods
each part calls on the others."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from cuzk_diag.ingest.parse.era import EraDetector
from cuzk_diag.records import Accounting, Event, RunInfo, Value

if TYPE_CHECKING:
    from collections.abc import Callable

    from cuzk_diag.ingest.assemble.blocks import Block
    from cuzk_diag.ingest.assemble.calls import Call


class State:
    """The state the parts of ``Assembler`` share (set in ``Assembler.__init__``)."""

    acc: Accounting
    info: RunInfo
    era: EraDetector
    calls: list[Call]
    blocks: list[Block]
    closed_blocks: deque[Block]
    awaiting_t7: deque[Block]
    pending_t9: deque[Event]
    _kinds_seen: set[str]
    deferred: list[Call]
    recent_blocks: deque[Block]
    tl: dict[tuple[str, int | None], dict[str, Value]]
    seq: int
    block_seq: int
    segment: int
    timeline_calls: int
    pickups: dict[tuple[str, int | None], int]
    clock: float | None
    epoch_ms: float | None
    pending: list[Event]
    out: list[dict[str, Any]]
    unattributed: list[Event]
    gpus_seen: set[int]
    _anchor: tuple[float, float] | None
    beam: list[tuple[float, int, dict[int, tuple[Any, ...]]]] | None
    BEAM_WIDTH: int
    GAP_COST: float
    CONTEST_MARGIN: float
    CPU_MARGIN: float

    if TYPE_CHECKING:

        def feed(self, ev: Event) -> list[dict[str, Any]]: ...

        def _doubt(self, kind: str) -> None: ...

        def _take_out(self) -> list[dict[str, Any]]: ...

        def flush(self) -> list[dict[str, Any]]: ...

        def preview(self) -> list[dict[str, Any]]: ...

        def finish(self) -> list[dict[str, Any]]: ...

        def _drain(self, hi: float | None) -> None: ...

        def _solve_prep_lines(
            self,
            indexed: list[tuple[int, Event]],
            anchors: list[tuple[int, float, float]],
            lo: float | None,
            hi: float | None,
        ) -> None: ...

        def _new_segment(self) -> None: ...

        def _timeline(self, ev: Event) -> None: ...

        def _start_call(
            self, job: str, part: int | None, worker: int | None, start: float | None, ev: Event
        ) -> None: ...

        def _gpu_of(self, worker: int) -> int | None: ...

        def _end_call(self, job: str, part: int | None, f: dict[str, Value], ev: Event) -> None: ...

        def _call_without_start(
            self, job: str, part: int | None, f: dict[str, Value], ev: Event
        ) -> Call | None: ...

        def _find_call(self, job: str, part: int | None, worker: int | None) -> Call | None: ...

        def _tracing(self, ev: Event) -> None: ...

        def _problem(self, ev: Event, level: str) -> None: ...

        def _bench(self, ev: Event) -> None: ...

        def _cpp(self, ev: Event, lo: float | None, hi: float | None) -> None: ...

        def _note_unattributed(self, ev: Event) -> None: ...

        def _gpu_line(self, ev: Event, kind: str, lo: float | None, hi: float | None) -> None: ...

        def _extend_beam(
            self, ev: Event, kind: str, tid: int, lo: float | None, hi: float | None, ntt_era: bool
        ) -> bool: ...

        def _commit_beam(self) -> None: ...

        def _starts_block(self, kind: str) -> bool: ...

        def _could_open(self, kind: str, blk: Block, ev: Event | None = None) -> bool: ...

        def _open_block(
            self, ev: Event, kind: str, lo: float | None, hi: float | None
        ) -> Block: ...

        def _put_gpu(
            self,
            blk: Block,
            ev: Event,
            kind: str,
            tid: int,
            off: tuple[float, float] | None = None,
        ) -> None: ...

        def _close_block(self, blk: Block) -> None: ...

        def _gpu_free_at(
            self, gpu: int | None, before: float, exclude: Block
        ) -> tuple[float, float]: ...

        def _lock_miss(self, blk: Block, c: Call) -> float: ...

        def _other_gpu_fits(self, blk: Block) -> bool: ...

        def _bind_by_lock_time(self, blk: Block) -> None: ...

        def _bind_block(
            self, blk: Block, ev: Event, kind: str, lo: float | None, hi: float | None
        ) -> None: ...

        def _by_clock(
            self,
            cands: list[Call],
            predict: Callable[[Call], float],
            lo: float | None,
            hi: float | None,
            slack: float = 1e-9,
        ) -> list[Call]: ...

        def _anonymous_call(self, ev: Event) -> Call: ...

        def _rebind(self, blk: Block, call: Call) -> None: ...

        def _merge_anonymous(self, anon: Call, into: Call) -> None: ...

        def _confirm_by_prove_start(self, ev: Event) -> None: ...

        def _t7(self, ev: Event, lo: float | None, hi: float | None) -> None: ...

        def _confirm_by_t7(self, call: Call, gpu_ms: int) -> None: ...

        def _cpu_line(self, ev: Event, kind: str, lo: float | None, hi: float | None) -> None: ...

        def _lost_t2_calls(self) -> list[Call]: ...

        def _anonymous_for_t1(self, ev: Event) -> Call: ...

        def _reclaim(self, call: Call, kind: str, keys: tuple[str, ...]) -> None: ...

        def _put_cpu(self, call: Call, ev: Event, kind: str) -> None: ...

        def _maybe_emit(self, call: Call) -> None: ...

        def _emit(self, call: Call) -> None: ...

        def _blockless_call(self, blk: Block) -> Call | None: ...

        def _claim_pickup(self, call: Call, rec: dict[str, Any]) -> None: ...

        def _only_gpu(self) -> int | None: ...

        def _emit_orphan_block(self, blk: Block) -> None: ...
