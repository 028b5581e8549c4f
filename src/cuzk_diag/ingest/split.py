"""One log file assembled by two processes: this one from the start to a line near the middle
(the cut), a child interpreter from a little before the cut to the end.

The assembly's state runs through the log, so the child cannot know the state at the cut; it
finds it. It starts ``WARM_BYTES`` before the cut with the run facts of the first chunk
(``Seed``: the era markers, the GPUs and workers, the engine's clock) and assembles up to the
cut, throwing the records and counts of that stretch away. Calls in flight at the cut began
after its start, in practice, so it comes to the state this process will be in at the cut.
Whether it did is checked, not assumed: at the cut both take their state as a value
(``handover.state_key``) and the state of their line parsers (``Carry``: the line number, a
torn line, an open bench block). Only when they are equal are the child's records from the cut
on taken, with its counts: it read the same lines from the same state, so it did what this
process would have done. Otherwise this process reads on from the cut itself, as one process
would have, and the child's work is thrown away. Either way the records, the accounting and
the run facts are those of a single process (``tests/test_split.py``).

What the child did that the state does not hold comes back with its records: its counts
(``Accounting.add``), its cleaning counts (``SourceStats.add``), the lines with run facts
(replayed through ``runinfo.note_run_info``), the era markers it saw first, the unattributed
examples, and which TIMELINE keys it held at the cut were named again after it (an entry left
by the end of a call whose start it did not see is harmless only if no later line names it).
"""

from __future__ import annotations

import copy
import os
import pickle
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from cuzk_diag.ingest.assemble import Assembler, SegmentEnd
from cuzk_diag.ingest.assemble.handover import StateKey, Uncomparable, state_key
from cuzk_diag.ingest.assemble.runinfo import has_run_info, note_run_info, timeline_key
from cuzk_diag.ingest.parse import Carry, LineParser
from cuzk_diag.ingest.parse.era import EraDetector
from cuzk_diag.records import Accounting, Event, Family, RunInfo
from cuzk_diag.sources import CHUNK_SIZE, Source, SourceStats, iter_input, open_window

#: Bytes read at a time.
CHUNK_BYTES = CHUNK_SIZE
#: How far before the cut the child starts: the span in which it comes to the state at the cut.
WARM_BYTES = 4 << 20
#: Files smaller than this are read by one process: the halves would be short next to the
#: child's start (about 0.5 s of imports) and its warm-up.
MIN_BYTES = 8 * WARM_BYTES
#: Warm-ups the child tries (``assemble_tail``).
TRIES = 3
#: Records per pickled batch the child sends.
BATCH = 2048
_SCAN = 16 << 20
#: How the splits of this process went: "adopted" (the child's part was taken) or "read on"
#: (its state at the cut differed, or it failed: this process read the second part itself).
outcomes: Counter[str] = Counter()


def splittable(inputs: Sequence[str | Source]) -> str | None:
    """The path of the one input when it is a regular, uncompressed UTF-8 file of at least
    ``MIN_BYTES``, else None."""
    from cuzk_diag.sources import input_size

    if len(inputs) != 1:
        return None
    src = inputs[0]
    name = src.name if isinstance(src, Source) else src
    if isinstance(src, Source) and not src.regular:
        return None
    if name == "-" or (input_size(name) or 0) < max(MIN_BYTES, 1):
        return None
    with open(name, "rb") as fh:
        if fh.read(3) == b"\xef\xbb\xbf":  # (a byte-order mark: only the first window has it)
            return None
    return name


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


def count_lines(name: str, stop: int) -> int:
    """Newlines in the first ``stop`` bytes of a file."""
    n, left = 0, stop
    with open(name, "rb") as fh:
        while left > 0 and (block := fh.read(min(_SCAN, left))):
            n += block.count(b"\n")
            left -= len(block)
    return n


@dataclass(frozen=True)
class Seed:
    """What the child's assembler starts from: the run facts of the log's first chunk."""

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
            asm.info,
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


@dataclass
class Tail:
    """What the child sends back: its state at the cut and what it did from there on."""

    key: StateKey
    carry: Carry
    block_seq: int  # its block counter at the cut
    batches: list[bytes]  # pickled lists of records (and ``SegmentEnd``s), in order
    acc: Accounting  # its counts from the cut on
    stats: SourceStats  # the cleaning counts of the text from the cut on
    unattributed: list[Event]
    era_added: list[tuple[str, int]]  # era markers first seen after the cut, with their lines
    run_info: list[Event]  # lines with run facts after the cut
    touched: set[tuple[str, int | None]]  # TIMELINE keys held at the cut, named again after it


def assemble_tail(
    name: str,
    floor: int,
    cut: int,
    seed: Seed,
    warm: int = WARM_BYTES,
    chunk_size: int = CHUNK_SIZE,
    progress: Callable[[int], None] | None = None,
) -> Tail:
    """In the child: assemble ``name`` from a line ``warm`` bytes (but not ``floor`` bytes)
    before ``cut`` to the end, keeping what follows the cut (``progress`` counts those bytes).

    A start in the middle of a call can leave open a call or block the whole log would not
    have (``_stale``); then the warm-up starts again half a warm-up earlier, up to ``TRIES``
    times. (This only spares a state the check would turn down.)"""
    from cuzk_diag.ingest.stream import PacedCollector, settle_heap

    settle_heap()
    with PacedCollector() as collector:
        start = None
        for k in range(TRIES):
            begin = max(floor, line_start(name, cut - warm - k * (warm // 2)))
            if begin == start or begin >= cut:
                break
            start = begin
            asm = seed.assembler()
            parser = LineParser(0, asm.acc, full=False, first_line=count_lines(name, start) + 1)
            mid = line_start(name, (start + cut) // 2)
            half = (asm.seq, asm.block_seq)
            for lo, hi in ((start, mid), (mid, cut)):
                if lo == mid:
                    half = (asm.seq, asm.block_seq)
                for _stats, chunk in iter_input(open_window(name, lo, hi), chunk_size):
                    asm.feed_many(parser.feed_parts(chunk).events())
                    collector.chunk(len(chunk))
            if not _stale(asm, *half):
                break
        key, carry, block_seq = state_key(asm), parser.carry(), asm.block_seq
        held = set(asm.tl)
        markers = set(asm.era.markers)
        acc = asm.acc = Accounting()
        asm.unattributed = []
        parser = LineParser(0, acc, full=False)
        parser.resume(carry)
        tail = Tail(key, carry, block_seq, [], acc, SourceStats(name), [], [], [], set())
        pending: list[Any] = []

        def take(events: list[Event]) -> None:
            for ev in events:
                if ev.family is Family.TIMELINE:
                    if held and (k := timeline_key(ev.fields)) in held:
                        tail.touched.add(k)
                elif has_run_info(ev):
                    tail.run_info.append(ev)
            pending.extend(asm.feed_many(events))
            if len(pending) >= BATCH:
                tail.batches.append(pickle.dumps(pending, pickle.HIGHEST_PROTOCOL))
                pending.clear()

        done = 0
        for stats, chunk in iter_input(open_window(name, cut), chunk_size):
            tail.stats = stats
            take(parser.feed_parts(chunk).events())
            collector.chunk(len(chunk))
            if progress is not None:
                progress(stats.bytes_read - done)
                done = stats.bytes_read
        take(parser.close())
        pending.extend(asm.finish())
    tail.batches.append(pickle.dumps(pending, pickle.HIGHEST_PROTOCOL))
    tail.unattributed = asm.unattributed
    tail.era_added = [(k, n) for k, n in asm.era.markers.items() if k not in markers]
    return tail


def _stale(asm: Assembler, seq: int, block_seq: int) -> bool:
    """Is a call or block the warm-up began before its counters read ``seq``, ``block_seq``
    still open? (Begun in the middle of a call, a warm-up may make a call or block of the
    lines of a call whose start it did not see, which then waits for lines that never come.)
    """
    return any(c.seq <= seq for c in asm.calls) or any(
        b.seq <= block_seq for b in (*asm.blocks, *asm.closed_blocks)
    )


def _same_state(asm: Assembler, parser: LineParser, tail: Tail) -> bool:
    """Is the child's state at the cut this process's?"""
    if parser.carry() != tail.carry:
        return False
    try:
        mine = state_key(asm)
    except Uncomparable:
        return False
    return mine.matches(tail.key, lambda extra: bool(extra & tail.touched))


def stream_split(
    name: str,
    ingest: Any,
    *,
    deliver: Callable[[list[Any]], Iterator[dict[str, Any]]],
    progress: Callable[[int], None] | None = None,
    cut: int | None = None,
    warm: int | None = None,
    chunk_size: int | None = None,
) -> Iterator[dict[str, Any]]:
    """The records of ``name`` through ``ingest`` (an ``stream.Ingest`` of that one input),
    the second part assembled in a child when its state at ``cut`` (by default the line
    that balances the two processes' work) proves to be this process's. ``deliver`` turns a
    list of records and ``SegmentEnd``s into the records (calling back on segment ends).
    ``warm`` and ``chunk_size`` default to ``WARM_BYTES`` and ``CHUNK_BYTES``."""
    from cuzk_diag.ingest import parallel
    from cuzk_diag.ingest.stream import PacedCollector

    warm = WARM_BYTES if warm is None else warm
    chunk_size = CHUNK_BYTES if chunk_size is None else chunk_size
    size = os.path.getsize(name)
    # The child starts later (its imports) and reads ``warm`` bytes more; this process takes
    # in the child's records at the end: the balance is about two warm-ups past the middle.
    cut = line_start(name, size // 2 + 2 * warm if cut is None else cut)
    child: parallel.ChildCall | None = None
    shown = [0]  # bytes after the cut the child's progress counted

    def child_progress(n: int) -> None:
        shown[0] += n
        if progress is not None:
            progress(n)

    def read(src: Source, stats: SourceStats) -> Iterator[dict[str, Any]]:
        """Assemble a window of the file here (its cleaning counts added to ``stats``)."""
        nonlocal child
        done = 0
        for now, chunk in iter_input(src, chunk_size):
            with collector:
                out = ingest.feed(chunk)
                collector.chunk(len(chunk))
            if child is None and now.bytes_read < cut < size:
                # The first chunk is in: its run facts start the child.
                child = parallel.call_in_child(
                    assemble_tail,
                    name,
                    now.bytes_read,
                    cut,
                    Seed.of(ingest.asm),
                    warm,
                    chunk_size,
                    progress=child_progress,
                )
            n, done = now.bytes_read - done, now.bytes_read
            if src.raw is not first.raw:
                n, shown[0] = max(0, n - shown[0]), max(0, shown[0] - n)
            if progress is not None and n:
                progress(n)
            yield from deliver(out)
        stats.add(now)

    ingest.begin(0)
    collector = PacedCollector()
    stats = SourceStats(name)
    first = open_window(name, 0, cut)
    try:
        yield from read(first, stats)
        tail = None
        if child is not None:
            try:
                tail = child.result()
            except Exception:
                tail = None  # (an error of the input is met again below, and raised there)
        if tail is not None and _same_state(ingest.asm, ingest.parser, tail):
            outcomes["adopted"] += 1
            yield from _adopt(ingest, tail, stats, deliver)
            return
        outcomes["read on"] += 1
        yield from read(open_window(name, cut), stats)  # (this process reads on from the cut)
        yield from deliver(ingest.end(stats))
        yield from deliver(ingest.finish())
    finally:
        if child is not None:
            child.close()


def _adopt(
    ingest: Any,
    tail: Tail,
    stats: SourceStats,
    deliver: Callable[[list[Any]], Iterator[dict[str, Any]]],
) -> Iterator[dict[str, Any]]:
    """Take the child's records and counts as this process's from the cut on."""
    from cuzk_diag.ingest.stream import input_read

    asm = ingest.asm
    shift = asm.block_seq - tail.block_seq  # (the child's blocks were numbered from elsewhere)
    for blob in tail.batches:
        out = pickle.loads(blob)
        if shift:
            for rec in out:
                if type(rec) is not SegmentEnd and rec.get("record") is not None:
                    rec["record"] += shift
        yield from deliver(out)
    acc = ingest.acc
    acc.add(tail.acc)
    stats.add(tail.stats)
    input_read(acc, stats)
    room = max(0, 1000 - len(asm.unattributed))
    asm.unattributed.extend(tail.unattributed[:room])
    for ev in tail.run_info:
        note_run_info(ingest.info, ev)
    for k, line in tail.era_added:
        asm.era.markers.setdefault(k, line)
    if ingest.guard is not None:
        ingest.guard.finish()
    asm.era.apply(ingest.info)


__all__ = ["MIN_BYTES", "WARM_BYTES", "Seed", "Tail", "splittable", "stream_split"]
