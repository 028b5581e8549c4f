"""The type checker's view of ``State`` (state.py): its state, and the methods each part of
``Assembler`` calls on the others (each part defines its own)."""

from collections import deque
from collections.abc import Callable
from typing import Any

from cuzk_diag.ingest.assemble.blocks import Block
from cuzk_diag.ingest.assemble.calls import Call
from cuzk_diag.ingest.parse.era import EraDetector
from cuzk_diag.records import Accounting, Event, RunInfo, Value

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
    clock_back: int
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

    # The methods each part calls on the others (defined by the parts).
    feed: Callable[..., list[dict[str, Any]]]
    _doubt: Callable[..., None]
    _doubt_open: Callable[[], None]
    _take_out: Callable[..., list[dict[str, Any]]]
    flush: Callable[..., list[dict[str, Any]]]
    preview: Callable[..., list[dict[str, Any]]]
    finish: Callable[..., list[dict[str, Any]]]
    _drain: Callable[..., None]
    _new_segment: Callable[..., None]
    _gpu_of: Callable[..., int | None]
    _call_without_start: Callable[..., Call | None]
    _note_unattributed: Callable[..., None]
    _commit_beam: Callable[..., None]
    _close_block: Callable[..., None]
    _release: Callable[..., None]
    _other_gpu_fits: Callable[..., bool]
    _bind_by_lock_time: Callable[..., None]
    _by_clock: Callable[..., list[Call]]
    _anonymous_call: Callable[..., Call]
    _rebind: Callable[..., None]
    _merge_anonymous: Callable[..., None]
    _t7: Callable[..., None]
    _lost_t2_calls: Callable[..., list[Call]]
    _anonymous_for_t1: Callable[..., Call]
    _reclaim: Callable[..., None]
    _put_cpu: Callable[..., None]
    _emit: Callable[..., None]
    _blockless_call: Callable[..., Call | None]
    _claim_pickup: Callable[..., None]
    _only_gpu: Callable[..., int | None]
    _emit_orphan_block: Callable[..., None]
