"""The placement state of an ``Assembler`` as a plain value, to tell whether two assemblers
that read the log from different places are in the same state at the same line.

Two assemblers with equal ``state_key`` values at a line boundary place every later line
alike and complete the same records from there on, but for numbering: calls and blocks are
numbered by counters that started elsewhere, so the key holds each number relative to its
counter (``Assembler.seq``, ``Assembler.block_seq``), and a record's ``record`` column (a block
number) moves by the difference of the two ``block_seq`` counters.

What the key leaves out is written, never read, by the placements: the accounting, the
unattributed examples, the run facts of the startup lines beyond those placements read (the
GPUs, the workers per GPU and each worker's GPU), the line numbers of the era markers (the
markers themselves are in), and the line kinds already passed to the era detector (a kind
is passed on its first occurrence; the marker it sets is in the key).
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cuzk_diag.ingest.assemble.blocks import Block
from cuzk_diag.ingest.assemble.calls import Call
from cuzk_diag.records import Event

#: ``Assembler`` attributes whose values the key holds as they are (after canonical form).
_PLAIN = (
    "calls",
    "blocks",
    "closed_blocks",
    "awaiting_t7",
    "pending_t9",
    "deferred",
    "recent_blocks",
    "segment",
    "pickups",
    "clock",
    "clock_back",
    "epoch_ms",
    "pending",
    "gpus_seen",
    "out",
)


#: The other attributes: taken apart by ``state_key`` (the TIMELINE entries, the beam, whether
#: a GPU_START was seen, the era markers and the run facts placements read), relative (the
#: counters) or, as the module text says, left out.
OTHER_ATTRIBUTES = frozenset(
    {
        "tl",
        "beam",
        "timeline_calls",
        "era",
        "info",
        "seq",
        "block_seq",
        "acc",
        "unattributed",
        "_kinds_seen",
        "_anchor",  # (the clock bracket of the line being placed, read right after)
    }
)


class Uncomparable(TypeError):
    """The state holds a value the key has no canonical form for."""


class _Canon:
    """Canonical form of an object graph: containers and objects by first visit (so that two
    graphs with the same sharing compare equal), sets sorted, numbering made relative."""

    def __init__(self, call_base: int, block_base: int) -> None:
        self.call_base, self.block_base = call_base, block_base
        self.seen: dict[int, int] = {}
        self.keep: list[Any] = []  # (the objects visited stay alive: their ids stay unique)

    def ref(self, obj: Any) -> int | None:
        n = self.seen.get(id(obj))
        if n is None:
            self.seen[id(obj)] = len(self.seen)
            self.keep.append(obj)
        return n

    def __call__(self, obj: Any) -> Any:
        if obj is None or type(obj) in (bool, int, float, str):
            return obj
        if isinstance(obj, enum.Enum):
            return ("enum", type(obj).__name__, obj.name)
        if type(obj) is Event:
            return ("event", obj.line, obj.source, obj.family.name, obj.kind,
                    self(obj.fields), obj.malformed)  # fmt: skip
        if type(obj) is tuple:
            return ("tuple", *map(self, obj))
        n = self.ref(obj)
        if n is not None:
            return ("ref", n)
        if type(obj) is Call:
            return ("call", obj.seq - self.call_base,
                    *(self(getattr(obj, s)) for s in Call.__slots__ if s != "seq"))  # fmt: skip
        if type(obj) is Block:
            return ("block", obj.seq - self.block_base,
                    *(self(getattr(obj, s)) for s in Block.__slots__ if s != "seq"))  # fmt: skip
        if isinstance(obj, dict):
            return ("dict", *((self(k), self(v)) for k, v in obj.items()))
        if type(obj) is list:
            return ("list", *map(self, obj))
        if type(obj) is deque:
            return ("deque", obj.maxlen, *map(self, obj))
        if type(obj) in (set, frozenset):
            return ("set", *sorted((self(x) for x in obj), key=repr))
        raise Uncomparable(f"no canonical form for {type(obj).__name__}")

    def beam(self, beam: list[tuple[float, int, dict[int, tuple[Any, ...]]]] | None) -> Any:
        """The hypotheses, keyed by block numbers (relative like the blocks')."""
        if beam is None:
            return None
        return tuple(
            (cost, order, tuple((seq - self.block_base, self(snap)) for seq, snap in snaps.items()))
            for cost, order, snaps in beam
        )


@dataclass(frozen=True)
class StateKey:
    """``state_key``'s value: the state but the TIMELINE entries, and those entries by their
    (job, partition) key."""

    main: tuple[Any, ...]
    timeline: dict[tuple[str, int | None], Any]

    def matches(self, later: StateKey, touched: Callable[[set[Any]], bool]) -> bool:
        """Is ``later``, the state of an assembler that began reading after this one, the same
        state? It may hold TIMELINE entries this one does not: lines of calls it saw only the
        end of (a ``GPU_END`` without its ``GPU_START``) leave an entry nothing else takes. Such
        entries make no difference as long as no later TIMELINE line has their key, which
        ``touched(keys)`` tells (the key set in question being known only here)."""
        if self.main != later.main:
            return False
        mine, theirs = self.timeline, later.timeline
        if any(k not in theirs or theirs[k] != v for k, v in mine.items()):
            return False
        extra = set(theirs) - set(mine)
        return not extra or not touched(extra)


def state_key(asm: Any) -> StateKey:
    """The placement state of ``asm`` (an ``Assembler``) as a comparable value; raises
    ``Uncomparable`` for a state holding a value of a type it does not know."""
    canon = _Canon(asm.seq, asm.block_seq)
    info = asm.info
    main = (
        tuple(canon(getattr(asm, name)) for name in _PLAIN),
        canon.beam(asm.beam),
        bool(asm.timeline_calls),
        tuple(sorted(asm.era.markers)),
        (tuple(info.gpus), info.gw, info.n_gpus, tuple(info.worker_gpu.items())),
    )
    # Last, so that an entry a call shares is a reference to the call's (nothing iterates
    # over the entries: their order is not state). An entry holds plain values only.
    timeline = {}
    for key, entry in asm.tl.items():
        n = canon.seen.get(id(entry))
        timeline[key] = ("ref", n) if n is not None else tuple(entry.items())
    return StateKey(main, timeline)
