"""One log file assembled in parts by several processes: this one from the start to the
first cut, a child interpreter per further part, each from a little before its start.

The assembly's state runs through the log, so a child cannot know the state at the start of
its part; it finds it. It starts ``WARM_BYTES`` earlier with the run facts of the first chunk
(``Seed``: the era markers, the GPUs and workers, the engine's clock) and assembles up to its
start, throwing the records and counts of that stretch away. Calls in flight at the start
began after the warm-up's, in practice, so it comes to the state the log is in there. Whether
it did is checked, not assumed: the state is taken as a value (``handover.state_key``) with
the line parser's (``Carry``: the line number, a torn line, an open bench block), and a part is
taken only when its start state is the state the part before it ended in (this process's, or
the child's that read it, which hands over its end state). A part whose start state is not is
read here, from that state. Either way the records, the accounting and the run facts are those
of a single process (``tests/test_split.py``).

What a child did that the state does not hold comes back with its records: its counts
(``Accounting.add``), its cleaning counts (``SourceStats.add``), the lines with run facts
(replayed through ``runinfo.note_run_info``), the era markers it saw first, the unattributed
examples, and which TIMELINE keys it held at its start were named again in its part (an entry
left by the end of a call whose start the warm-up did not see is harmless only if no later
line names it; such entries are dropped from the state it hands over).
"""

from __future__ import annotations

import copy
import os
import pickle
import threading
from collections import Counter
from collections.abc import Callable, Generator, Iterator, Sequence
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
#: Files smaller than this are read by one process: the parts would be short next to a
#: child's start (about 0.5 s of imports) and its warm-up.
MIN_BYTES = 8 * WARM_BYTES
#: Warm-ups a child tries (``_warm_up``).
TRIES = 3
#: Records per pickled batch the child sends.
BATCH = 2048
_SCAN = 16 << 20
#: How the parts of this process's splits went: "adopted" (a child's part was taken) or "read
#: on" (its start state differed, or it failed: this process read the part itself), and
#: "resumed" (read here from the state a child handed over); "gave up": a call or block stayed
#: open in the first part (the rest read here, its parse in a child).
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
    # (``input_size`` is None for what is not plain UTF-8 text: compressed, UTF-16, a BOM)
    if name == "-" or (input_size(name) or 0) < MIN_BYTES:
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


@dataclass(frozen=True)
class Handover:
    """An assembly's state at a cut: its key, its parser's ``Carry``, its block counter, and
    the assembler itself, pickled (for reading on from there when the next part is not taken).
    """

    key: StateKey
    carry: Carry
    block_seq: int
    blob: bytes = b""


@dataclass
class Part:
    """What a child sends back: its state at the start of its part, what it did in the part,
    and (but for the last part) its state at the end."""

    start: Handover
    batches: list[bytes]  # pickled lists of records (and ``SegmentEnd``s), in order
    acc: Accounting  # its counts in the part
    stats: SourceStats  # the cleaning counts of the part's text
    unattributed: list[Event]
    era_added: list[tuple[str, int]]  # era markers first seen in the part, with their lines
    run_info: list[Event]  # lines with run facts in the part
    touched: set[tuple[str, int | None]]  # TIMELINE keys held at the start, named in the part
    end: Handover | None = None


def _warm_up(
    name: str, floor: int, lo: int, seed: Seed, warm: int, chunk_size: int, collector: Any
) -> tuple[Assembler, LineParser]:
    """An assembler and parser brought to the state at line start ``lo`` by reading from a
    line ``warm`` bytes (but not ``floor`` bytes) before it.

    A start in the middle of a call can leave open a call or block the whole log would not
    have (``_stale``); then the warm-up starts again half a warm-up earlier, up to ``TRIES``
    times. (This only spares a state the check would turn down.)"""
    start = None
    for k in range(TRIES):
        begin = max(floor, line_start(name, lo - warm - k * (warm // 2)))
        if begin == start:
            break
        start = begin
        asm = seed.assembler()
        parser = LineParser(0, asm.acc, full=False, first_line=count_lines(name, start) + 1)
        mid = line_start(name, (start + lo) // 2)
        half = (asm.seq, asm.block_seq)
        for a, b in ((start, mid), (mid, lo)):
            if a == mid:
                half = (asm.seq, asm.block_seq)
            for _stats, chunk in iter_input(open_window(name, a, b), chunk_size):
                asm.feed_many(parser.feed_parts(chunk).events())
                collector.chunk(len(chunk))
        if not _stale(asm, *half):
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
    warm: int = WARM_BYTES,
    chunk_size: int = CHUNK_SIZE,
    progress: Callable[[Any], None] | None = None,
) -> Part:
    """In a child: assemble the part of ``name`` from line start ``lo`` to ``hi`` (the end
    when None, where the assembly finishes) after a warm-up (``_warm_up``); ``progress`` is
    given the state at ``lo`` (a ``Handover``) once warmed up, then counts the part's bytes."""
    from cuzk_diag.ingest.stream import PacedCollector, settle_heap

    settle_heap()
    with PacedCollector() as collector:
        asm, parser = _warm_up(name, floor, lo, seed, warm, chunk_size, collector)
        start = _handover(asm, parser, False)
        if progress is not None:
            progress(start)  # (told early: a state this process turns down stops the child)
        held = set(asm.tl)
        markers = set(asm.era.markers)
        acc = asm.acc = Accounting()
        asm.unattributed = []
        parser = LineParser(0, acc, full=False)
        parser.resume(start.carry)
        part = Part(start, [], acc, SourceStats(name), [], [], [], set())
        pending: list[Any] = []

        def take(events: list[Event]) -> None:
            for ev in events:
                if ev.family is Family.TIMELINE:
                    if held and (k := timeline_key(ev.fields)) in held:
                        part.touched.add(k)
                elif has_run_info(ev):
                    part.run_info.append(ev)
            pending.extend(asm.feed_many(events))
            if len(pending) >= BATCH:
                part.batches.append(pickle.dumps(pending, pickle.HIGHEST_PROTOCOL))
                pending.clear()

        done = 0
        for stats, chunk in iter_input(open_window(name, lo, hi), chunk_size):
            part.stats = stats
            take(parser.feed_parts(chunk).events())
            collector.chunk(len(chunk))
            if progress is not None:
                progress(stats.bytes_read - done)
                done = stats.bytes_read
        if hi is None:
            take(parser.close())
            pending.extend(asm.finish())
        else:
            part.end = _handover(asm, parser, True)
    part.batches.append(pickle.dumps(pending, pickle.HIGHEST_PROTOCOL))
    part.unattributed = asm.unattributed
    part.era_added = [(k, n) for k, n in asm.era.markers.items() if k not in markers]
    return part


def _stale(asm: Assembler, seq: int, block_seq: int) -> bool:
    """Is a call or block the warm-up began before its counters read ``seq``, ``block_seq``
    still open? (Begun in the middle of a call, a warm-up may make a call or block of the
    lines of a call whose start it did not see, which then waits for lines that never come.)
    """
    return any(c.seq <= seq for c in asm.calls) or any(
        b.seq <= block_seq for b in (*asm.blocks, *asm.closed_blocks)
    )


def _long_open(asm: Assembler, marks: list[tuple[int, int]], before: int) -> bool:
    """Is a call or block whose first line lies before byte ``before`` still open? (``marks``:
    (byte offset, number of the line there), in order.) A call that failed inside its GPU region
    leaves its block open to the end of the log, and a child that starts after it cannot hold
    it: no later part can be taken."""
    line = 0
    for offset, number in marks:
        if offset > before:
            break
        line = number
    if not line:
        return False
    for c in asm.calls:
        lines = c.lines + (c.block.lines if c.block is not None else [])
        if lines and min(lines) < line:
            return True
    return any(b.lines[0] < line for b in (*asm.blocks, *asm.closed_blocks))


def cuts(name: str, size: int, parts: int, warm: int) -> list[int]:
    """Line starts that cut ``name`` into ``parts`` parts of about equal work: children read
    ``warm`` bytes more than their part and start later (their imports), and this process
    takes in their records at the end, so its part is about two warm-ups longer."""
    first = min(size, size // parts + 2 * warm)
    step = (size - first) / max(1, parts - 1)
    out = [line_start(name, first + int(i * step)) for i in range(parts - 1)]
    return sorted({c for c in out if 0 < c < size})


class _Truth:
    """The state at the next cut as far as it is known: this process's own assembly, or the
    handover of the child whose part ended there (less the TIMELINE entries its warm-up left,
    ``extra``). ``offset`` turns the block numbers of its assembler into the log's."""

    def __init__(self, ingest: Any) -> None:
        self.ingest = ingest
        self.handed: Handover | None = None
        self.extra: set[Any] = set()
        self.offset = 0

    def key(self) -> StateKey | None:
        if self.handed is None:
            try:
                return state_key(self.ingest.asm)
            except Uncomparable:
                return None
        key = self.handed.key
        timeline = {k: v for k, v in key.timeline.items() if k not in self.extra}
        return StateKey(key.main, timeline)

    def carry(self) -> Carry:
        return self.ingest.parser.carry() if self.handed is None else self.handed.carry

    def block_seq(self) -> int:
        handed = self.handed
        return (self.ingest.asm.block_seq if handed is None else handed.block_seq) + self.offset

    def takes(self, start: Handover, touched: set[Any] | None) -> bool:
        """Is ``start``, a part's start state, this one? Entries only the part holds must not
        be named in it (``touched``: the keys it named; None while the part is not done, when
        the answer is whether it can still be; see ``StateKey.matches``)."""
        mine = self.key()
        if mine is None or self.carry() != start.carry:
            return False
        return mine.matches(start.key, lambda extra: touched is not None and bool(extra & touched))

    def hand(self, part: Part) -> None:
        """The state at the part's end is the child's."""
        assert part.end is not None
        mine = self.key()
        assert mine is not None
        self.offset = self.block_seq() - part.start.block_seq
        self.extra = set(part.start.key.timeline) - set(mine.timeline)
        self.handed = part.end

    def resume(self) -> None:
        """Make the state this process's own again, to read on: the handed assembler with
        this process's accounting, run facts, era and examples, and a parser at its carry."""
        if self.handed is None:
            return
        outcomes["resumed"] += 1
        ing = self.ingest
        asm: Assembler = pickle.loads(self.handed.blob)
        for k in self.extra:
            asm.tl.pop(k, None)
        asm.acc, asm.info, asm.era = ing.acc, ing.info, ing.asm.era
        asm.unattributed = ing.asm.unattributed
        ing.asm = asm
        ing.parser = LineParser(0, ing.acc, full=False)
        ing.parser.resume(self.handed.carry)
        self.handed, self.extra = None, set()


def stream_split(
    name: str,
    ingest: Any,
    *,
    deliver: Callable[[list[Any]], Iterator[dict[str, Any]]],
    jobs: int = 2,
    progress: Callable[[int], None] | None = None,
    at: Sequence[int] | None = None,
    warm: int | None = None,
    chunk_size: int | None = None,
) -> Iterator[dict[str, Any]]:
    """The records of ``name`` through ``ingest`` (an ``stream.Ingest`` of that one input) in
    ``jobs`` parts (fewer when they would be shorter than two warm-ups), one assembled here and
    the others in children, each child's taken when its state at its start proves to be the
    state there (``_Truth.takes``), else read here from that state. ``at``: the cuts (line
    starts; by default ``cuts``). ``deliver`` turns a list of records and ``SegmentEnd``s into
    the records (calling back on segment ends). ``warm`` and ``chunk_size`` default to
    ``WARM_BYTES`` and ``CHUNK_BYTES``."""
    from cuzk_diag.ingest import parallel
    from cuzk_diag.ingest.stream import PacedCollector, input_read

    warm = WARM_BYTES if warm is None else warm
    chunk_size = CHUNK_BYTES if chunk_size is None else chunk_size
    size = os.path.getsize(name)
    # A part shorter than two warm-ups would cost its child more warming up than assembling.
    parts = max(1, min(jobs, size // (2 * warm) if warm else jobs))
    bounds: list[int | None] = [0, *(at if at is not None else cuts(name, size, parts, warm)), None]

    def start(i: int) -> int:
        """Where part ``i`` begins (only the last part's end is None)."""
        lo = bounds[i]
        assert lo is not None
        return lo

    children: dict[int, parallel.ChildCall] = {}  # part -> the child reading it
    started = False
    shown = [0] * len(bounds)  # bytes of each part the child's progress counted
    starts: dict[int, Handover] = {}  # part -> its child's state at its start, once told
    told = {i: threading.Event() for i in range(len(bounds))}
    collector = PacedCollector()
    truth = _Truth(ingest)

    def start_children(floor: int) -> None:
        """A child for each part that begins after ``floor`` (the first chunk)."""
        nonlocal started
        started = True
        seed = Seed.of(ingest.asm)
        for i in range(1, len(bounds) - 1):
            if not floor < start(i) < size:
                continue  # (read here)

            def counted(n: int | Handover, i: int = i) -> None:
                if isinstance(n, Handover):
                    starts[i] = n
                    told[i].set()
                    return
                shown[i] += n
                if progress is not None:
                    progress(n)

            children[i] = parallel.call_in_child(
                assemble_part,
                name,
                floor,
                start(i),
                bounds[i + 1],
                seed,
                warm,
                chunk_size,
                progress=counted,
            )

    def shifted(out: list[Any]) -> list[Any]:
        if truth.offset:
            for rec in out:
                if type(rec) is not SegmentEnd and rec.get("record") is not None:
                    rec["record"] += truth.offset
        return out

    def read(
        i: int, lo: int, hi: int | None, stats: SourceStats
    ) -> Generator[dict[str, Any], None, int | None]:
        """Assemble bytes ``[lo, hi)`` of part ``i`` here (their cleaning counts added to
        ``stats``): the first part read and parsed here, a later one (whose child's part was not
        taken) parsed in a child of its own ahead of the assembly, as several files are
        (``parallel``). The first part stops early when a call or block stays open longer than
        two warm-ups (``_long_open``): no later part could then be taken; returns where."""
        cleaned: list[SourceStats] = []
        parsed = (
            parse_here(lo, hi, cleaned)
            if i == 0
            else parallel.parse_window_in_child(name, lo, hi, ingest.parser.carry())
        )
        pos, marks = lo, [(lo, ingest.parser.next_line)]
        while True:
            with collector:
                try:
                    _idx, part, size, _ = next(parsed)
                except StopIteration as stop:
                    end = stop.value
                    break
                out = ingest.events(part.events())
                del part
                collector.chunk(size)
            if not started:
                start_children(size)  # (the first chunk's run facts start them)
            n, shown[i] = max(0, size - shown[i]), max(0, shown[i] - size)
            if progress is not None and n:
                progress(n)
            yield from deliver(shifted(out))
            pos += size
            marks.append((pos, ingest.parser.next_line))
            if i == 0 and children and _long_open(ingest.asm, marks, pos - 2 * warm):
                stats.add(cleaned[-1])
                return lo + cleaned[-1].bytes_taken  # (where the lines read so far end)
        if i == 0:
            stats.add(end)
        else:  # the window's parse counts, cleaning counts and where its parser ended
            acc, (window, carry) = end
            ingest.acc.add(acc)
            stats.add(window)
            ingest.parser = LineParser(0, ingest.acc, full=False)
            ingest.parser.resume(carry)
        return None

    def parse_here(
        lo: int, hi: int | None, cleaned: list[SourceStats]
    ) -> Generator[tuple[int, Any, int, None], None, SourceStats]:
        """The chunks of ``[lo, hi)`` parsed here, as ``parse_window`` yields them (their
        cleaning counts so far last in ``cleaned``); returns their cleaning counts."""
        done = 0
        for now, chunk in iter_input(open_window(name, lo, hi), chunk_size):
            cleaned[:] = [now]
            if chunk:
                n, done = now.bytes_taken - done, now.bytes_taken
                yield 0, ingest.parser.feed_parts(chunk), n, None
        return now

    ingest.begin(0)
    stats = SourceStats(name)
    try:
        stopped = yield from read(0, 0, bounds[1], stats)
        if stopped is not None:
            # Calls or blocks open for good (a call that failed in its GPU region): no child's
            # part can be taken; the rest is parsed in a child ahead of the assembly here.
            outcomes["gave up"] += 1
            for each in children.values():
                each.close()
            children.clear()
            bounds[1:] = [stopped, None]
            shown[1] = sum(shown[1:])  # (what the children's progress counted of the rest)
        for i in range(1, len(bounds) - 1):
            part: Part | None = None
            child = children.get(i)
            if child is not None:
                while not told[i].wait(0.05) and child.running():
                    pass  # (the child tells its start state after its warm-up)
                if i in starts and not truth.takes(starts[i], None):
                    child.close()  # (its part will not be taken: its CPU is free now)
                else:
                    try:
                        part = child.result()
                    except Exception:
                        pass  # (an error of the input is met again below, and raised there)
            if part is None or not truth.takes(part.start, part.touched):
                if i in children:
                    outcomes["read on"] += 1
                truth.resume()
                yield from read(i, start(i), bounds[i + 1], stats)
                continue
            outcomes["adopted"] += 1
            shift = truth.block_seq() - part.start.block_seq
            yield from _adopt(ingest, part, stats, deliver, shift)
            if part.end is not None:
                truth.hand(part)
            else:  # the last part: the log is done
                input_read(ingest.acc, stats)
                if ingest.guard is not None:
                    ingest.guard.finish()
                ingest.asm.era.apply(ingest.info)
                return
        yield from deliver(shifted(ingest.end(stats)))
        yield from deliver(shifted(ingest.finish()))
    finally:
        for child in children.values():
            child.close()


def _adopt(
    ingest: Any,
    part: Part,
    stats: SourceStats,
    deliver: Callable[[list[Any]], Iterator[dict[str, Any]]],
    shift: int,
) -> Iterator[dict[str, Any]]:
    """Take a child's records and counts as this process's."""
    asm = ingest.asm
    for blob in part.batches:
        out = pickle.loads(blob)
        if shift:
            for rec in out:
                if type(rec) is not SegmentEnd and rec.get("record") is not None:
                    rec["record"] += shift
        yield from deliver(out)
    ingest.acc.add(part.acc)
    stats.add(part.stats)
    room = max(0, 1000 - len(asm.unattributed))
    asm.unattributed.extend(part.unattributed[:room])
    for ev in part.run_info:
        note_run_info(ingest.info, ev)
    for k, line in part.era_added:
        asm.era.markers.setdefault(k, line)


__all__ = ["MIN_BYTES", "WARM_BYTES", "Part", "Seed", "cuts", "splittable", "stream_split"]
