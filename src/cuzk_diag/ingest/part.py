"""A part of a log file assembled in a child interpreter (``split``): warmed up to the state
the log is in where the part begins, then assembled, its start state told as soon as it is
known and, but for the last part of the last input, its end state handed over.

A part's child starts ``warm`` bytes before its part with the run facts of the log's first
chunk (``Seed``) and assembles up to the part, throwing that warm-up's records and counts away
(``_warm_up``). What it sends back (``Part``) is what ``split`` needs to take the part as its
own, or to read it itself when the state it started from proves wrong.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from cuzk_diag.factrows import KeyedFactRows
from cuzk_diag.ingest.assemble import Assembler, SegmentEnd
from cuzk_diag.ingest.assemble.handover import StateKey, state_key
from cuzk_diag.ingest.assemble.runinfo import has_run_info, timeline_key
from cuzk_diag.ingest.parse import Carry, LineParser
from cuzk_diag.ingest.parse.era import EraDetector
from cuzk_diag.records import Accounting, Event, Family, RunInfo
from cuzk_diag.sources import CHUNK_SIZE, SourceStats, iter_input, newlines, open_window

T = TypeVar("T")

#: Warm-ups a child tries (``_warm_up``).
TRIES = 3
#: Records per pickled batch a child sends.
BATCH = 2048
_SCAN = 16 << 20


def line_start(name: str, offset: int) -> int:
    """The first start of a line at or after ``offset`` (the file's size if none)."""
    if offset <= 0:
        return 0
    with open(name, "rb") as fh:
        fh.seek(offset - 1)
        pos = offset - 1
        while block := fh.read(1 << 16):
            i = block.find(b"\n")
            if i >= 0:
                return pos + i + 1
            pos += len(block)
        return pos


def count_lines(name: str, stop: int, start: int = 0) -> int:
    """Newlines in bytes ``[start, stop)`` of a file."""
    n, left = 0, stop - start
    with open(name, "rb") as fh:
        fh.seek(start)
        while left > 0 and (block := fh.read(min(_SCAN, left))):
            n += newlines(block)
            left -= len(block)
    return n


@dataclass(frozen=True)
class Seed:
    """What the child's assembler starts from: the run facts of the log's first chunk (or, for
    a later file of several, of the files before it), without the tables that only grow with
    the log (``_run_facts``)."""

    info: RunInfo
    era: EraDetector
    kinds_seen: frozenset[str]
    gpus_seen: frozenset[int]
    epoch_ms: float | None
    segment: int
    timeline_calls: int

    @classmethod
    def of(cls, asm: Assembler) -> Seed:
        return cls(
            _run_facts(asm.info),
            asm.era,
            frozenset(asm._kinds_seen),
            frozenset(asm.gpus_seen),
            asm.epoch_ms,
            asm.segment,
            asm.timeline_calls,
        )

    def assembler(self) -> Assembler:
        """A new assembler in this state (its own copy of it)."""
        asm = Assembler(Accounting(), copy.deepcopy(self.info))
        asm.era = copy.deepcopy(self.era)
        asm._kinds_seen = set(self.kinds_seen)
        asm.gpus_seen = set(self.gpus_seen)
        asm.epoch_ms, asm.segment, asm.timeline_calls = (
            self.epoch_ms,
            self.segment,
            self.timeline_calls,
        )
        return asm


def _run_facts(info: RunInfo) -> RunInfo:
    """``info`` without its jobs, cuzk-bench output, failures and warnings: the assembly reads
    none of them (only the GPUs, the workers and the clocks), and what a child adds to them is
    thrown away (its lines with run facts are replayed where its part is taken). Sent whole,
    they grew with every file of several a child was started for (thousands of jobs)."""
    return dataclasses.replace(
        info, jobs=KeyedFactRows(), bench={}, failures=[], warnings=Counter(), warning_lines={}
    )


@dataclass(frozen=True)
class Handover:
    """An assembly's state at a cut: its key, its parser's ``Carry``, its block counter, and
    the assembler itself, pickled (for reading on from there when the next part is not taken).
    """

    key: StateKey
    carry: Carry
    block_seq: int
    blob: bytes = b""


@dataclass(frozen=True)
class Batch:
    """Records of a part (and ``SegmentEnd``s) in order, pickled; a child sends each as a
    message of its own (``progress``), so that its parent never holds two copies of them all
    (as it would unpickling one message of them all)."""

    blob: bytes


@dataclass
class Part:
    """What a child sends back: its state at the start of its part, what it did in the part,
    and (but for the last part) its state at the end."""

    start: Handover
    batches: list[Batch]  # its records, when they did not go through ``progress``
    acc: Accounting  # its counts in the part
    stats: SourceStats  # the cleaning counts of the part's text
    unattributed: list[Event]
    era_added: list[tuple[str, int]]  # era markers first seen in the part, with their lines
    # Lines with run facts in the part, pickled a run of ``BATCH`` at a time (``run_facts``):
    # the parent replays them a run at a time, never holding them all as objects (a 1 GB log's
    # part had 69,000: 36 MiB, which left the parent's small-object heap fragmented).
    run_info: list[bytes]
    touched: set[tuple[str, int | None]]  # TIMELINE keys held at the start, named in the part
    end: Handover | None = None
    sent: int = 0  # batches sent through ``progress``
    # The lines of the part that tell whether its input is of the run (``RunGuard.feed``),
    # with several inputs.
    guard: list[Event] = field(default_factory=list)
    # The cleaning counts of each later input the part read on into (``assemble_part(then=)``),
    # in order.
    more: list[SourceStats] = field(default_factory=list)


def _warm_up(
    name: str,
    floor: int,
    lo: int,
    seed: Seed,
    warm: int,
    chunk_size: int,
    collector: Any,
    source: int = 0,
) -> tuple[Assembler, LineParser]:
    """An assembler and parser brought to the state at line start ``lo`` by reading from a
    line ``warm`` bytes (but not ``floor`` bytes) before it.

    A start in the middle of a call can leave open a call or block the whole log would not
    have (``open_since``); then the warm-up starts again half a warm-up earlier, up to ``TRIES``
    times. (This only spares a state the check would turn down.)"""
    start: int | None = None
    first = 1  # the number of the warm-up's first line
    for k in range(TRIES):
        begin = max(floor, line_start(name, lo - warm - k * (warm // 2)))
        if begin == start:
            break
        # Counted once; a retry starts earlier by the lines between.
        if start is None:
            first += count_lines(name, begin)
        else:
            first -= count_lines(name, stop=start, start=begin)
        start = begin
        asm = seed.assembler()
        parser = LineParser(source, asm.acc, full=False, first_line=first)
        mid = line_start(name, (start + lo) // 2)
        half = (asm.seq, asm.block_seq)
        for a, b in ((start, mid), (mid, lo)):
            if a == mid:
                half = (asm.seq, asm.block_seq)
            for _stats, chunk in iter_input(open_window(name, a, b), chunk_size):
                asm.feed_many(parser.feed_parts(chunk).events())
                collector.chunk(len(chunk))
        if not open_since(asm, *half):
            break
    return asm, parser


def _handover(asm: Assembler, parser: LineParser, blob: bool) -> Handover:
    data = b""
    if blob:
        # What the next part's reader replaces with its own (``_resume``) is left out.
        kept = asm.acc, asm.info, asm.unattributed
        asm.acc, asm.info, asm.unattributed = Accounting(), RunInfo(), []
        data = pickle.dumps(asm, pickle.HIGHEST_PROTOCOL)
        asm.acc, asm.info, asm.unattributed = kept
    return Handover(state_key(asm), parser.carry(), asm.block_seq, data)


def assemble_part(
    name: str,
    floor: int,
    lo: int,
    hi: int | None,
    seed: Seed,
    warm: int,
    chunk_size: int = CHUNK_SIZE,
    progress: Callable[[Any], None] | None = None,
    tables: bool = False,
    *,
    source: int = 0,
    last: bool = True,
    guard: bool = False,
    then: Sequence[tuple[str, int]] = (),
) -> Part:
    """In a child: assemble the part of ``name`` (input ``source`` of the run) from line start
    ``lo`` to ``hi`` (the end when None, where the assembly finishes if the input is the run's
    ``last``, else hands its state over) after a warm-up (``_warm_up``); ``progress`` is
    given the state at ``lo`` (a ``Handover``) once warmed up, then counts the part's bytes
    and at the end takes its records, a ``Batch`` at a time (without it they are in
    ``Part.batches``).
    With ``tables``, the records go back as Arrow tables (``frame.records_to_table``), made
    here beside the assembly rather than by the process that takes them in. With ``guard``,
    ``Part.guard`` holds the lines ``pipeline.RunGuard`` reads (``pipeline.GuardLines``).
    ``then``: the later inputs (path, index) the part reads on into, whole, after ``name``'s
    end (``hi`` None), each ended as ``stream.Ingest.end`` ends an input (its cleaning counts in
    ``Part.more``); ``last`` is then of the last of them (``split``: a cut across rotated
    files)."""
    from cuzk_diag.ingest.stream import PacedCollector, settle_heap

    assert not then or hi is None, "a part reads on into later inputs from its input's end"
    settle_heap()
    lines = None
    if guard:
        from cuzk_diag.pipeline import GuardLines

        lines = GuardLines()
    with PacedCollector() as collector:
        asm, parser = _warm_up(name, floor, lo, seed, warm, chunk_size, collector, source)
        start = _handover(asm, parser, False)
        if progress is not None:
            progress(start)  # (told early: a state this process turns down stops the child)
        held = set(asm.tl)
        markers = set(asm.era.markers)
        acc = asm.acc = Accounting()
        asm.unattributed = []
        parser = LineParser(source, acc, full=False)
        parser.resume(start.carry)
        part = Part(start, [], acc, SourceStats(name), [], [], [], set())
        pending: list[Any] = []
        facts: list[Event] = []

        def send(items: list[Any]) -> None:
            part.batches.append(Batch(_pickled(items, tables)))

        def keep_facts() -> None:
            part.run_info.append(pickle.dumps(facts, pickle.HIGHEST_PROTOCOL))
            facts.clear()

        def take(events: list[Event]) -> None:
            for ev in events:
                if ev.family is Family.TIMELINE:
                    if held and (k := timeline_key(ev)) in held:
                        part.touched.add(k)
                elif has_run_info(ev):
                    facts.append(ev)
            if len(facts) >= BATCH:
                keep_facts()
            if lines is not None:
                lines.take(events)
            pending.extend(asm.feed_many(events))
            if len(pending) >= BATCH:
                send(pending)
                pending.clear()

        def read(parser: LineParser, chunks: Iterator[tuple[SourceStats, Any]]) -> SourceStats:
            """Assemble the chunks of one input through ``parser``; its cleaning counts (the
            last chunk's: ``iter_input`` yields at least once)."""
            done = 0
            for stats, chunk in chunks:
                take(parser.feed_parts(chunk).events())
                collector.chunk(len(chunk))
                if progress is not None:
                    progress(stats.bytes_read - done)
                    done = stats.bytes_read
            return stats

        part.stats = read(parser, iter_input(open_window(name, lo, hi), chunk_size))
        for later, index in then:
            take(parser.close())  # (the input before ends: its torn last line)
            parser = LineParser(index, acc, full=False)
            part.more.append(read(parser, iter_input(later, chunk_size)))
        if hi is None and last:
            take(parser.close())
            pending.extend(asm.finish())
        else:  # (at the end of an input but the last, its parser's end is the next reader's)
            part.end = _handover(asm, parser, True)
    send(pending)
    if facts:
        keep_facts()
    if lines is not None:
        part.guard = lines.lines()
    if progress is not None:
        # Sent at the end, when the parent waits for them: a parent busy with its own part
        # reads a pipe slowly (its reading thread waits for the interpreter lock at every
        # read), which would hold this process up at each batch.
        part.batches.reverse()
        while part.batches:
            progress(part.batches.pop())
            part.sent += 1
    part.unattributed = asm.unattributed
    part.era_added = [(k, n) for k, n in asm.era.markers.items() if k not in markers]
    return part


def _pickled(items: list[Any], tables: bool) -> bytes:
    """Records and ``SegmentEnd``s, pickled; with ``tables``, each run of records between
    ``SegmentEnd``s as one Arrow table (a ``frame.PackedTable``: ``unpickled`` unpacks it)."""
    if tables:
        from cuzk_diag.frame import PackedTable, records_to_table

        out: list[Any] = []
        run: list[dict[str, Any]] = []
        for item in items:
            if type(item) is SegmentEnd:
                if run:
                    out.append(PackedTable.of(records_to_table(run)))
                    run = []
                out.append(item)
            else:
                run.append(item)
        if run:
            out.append(PackedTable.of(records_to_table(run)))
        items = out
    return pickle.dumps(items, pickle.HIGHEST_PROTOCOL)


def taken(items: list[T]) -> Iterator[T]:
    """The items of a list in order, each let go by the list as it is given (the list is
    emptied): a part's pickled batches are freed one by one as they are taken in."""
    items.reverse()
    while items:
        yield items.pop()


def run_facts(part: Part) -> Iterator[Event]:
    """The lines with run facts of a part, in order, a run at a time (``taken``)."""
    for blob in taken(part.run_info):
        yield from pickle.loads(blob)


def unpickled(blob: bytes) -> list[Any]:
    """The records and ``SegmentEnd``s of a ``_pickled`` blob; tables unpacked."""
    from cuzk_diag.frame import PackedTable

    items: list[Any] = pickle.loads(blob)
    return [it.unpack() if type(it) is PackedTable else it for it in items]


def open_since(asm: Assembler, seq: int, block_seq: int) -> bool:
    """Is a call or block the assembler made before its counters read ``seq``, ``block_seq``
    still open? Begun in the middle of a call, a warm-up may make a call or block of the lines
    of a call whose start it did not see, which then waits for lines that never come; and a
    call that failed inside its GPU region leaves its block open to the end of the log."""
    return any(c.seq <= seq for c in asm.calls) or any(
        b.seq <= block_seq for b in (*asm.blocks, *asm.closed_blocks)
    )
