"""What the parts of ``Assembler`` share: its state.

Three files declare it: this one (the class the parts derive from), ``state.pyi`` (the type
checker's view, which adds the methods each part calls on the others; each part defines its
own) and ``state.pxd`` (the compiled build's: an extension type whose attributes are C struct
fields; a method that annotates ``self: State`` reads them directly).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections import deque

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
    epoch_ms: float | None
    pending: list[Event]
    out: list[dict[str, Any]]
    unattributed: list[Event]
    gpus_seen: set[int]
    _anchor: tuple[float, float] | None
    beam: list[tuple[float, int, dict[int, tuple[Any, ...]]]] | None
