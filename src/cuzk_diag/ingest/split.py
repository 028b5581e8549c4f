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

import functools
import os
import pickle
import threading
from collections import Counter
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from cuzk_diag.ingest import parallel
from cuzk_diag.ingest.assemble import Assembler
from cuzk_diag.ingest.assemble.handover import StateKey, Uncomparable, state_key
from cuzk_diag.ingest.assemble.runinfo import note_run_info
from cuzk_diag.ingest.parse import Carry, LineParser
from cuzk_diag.ingest.part import (
    Batch,
    Handover,
    Part,
    Seed,
    assemble_part,
    count_lines,
    line_start,
    open_since,
    run_facts,
    taken,
    unpickled,
)
from cuzk_diag.sources import CHUNK_SIZE, Source, SourceStats

#: Bytes read at a time.
CHUNK_BYTES = CHUNK_SIZE
#: How far before the cut the child starts: the span in which it comes to the state at the cut.
WARM_BYTES = 4 << 20
#: Warm-ups by which this process's part is longer than an even share when the children of a
#: file were started before it (``stream_files``: while the file before it was read), rather
#: than as this process begins the file (``cuts``: three).
READY_LEAD = 1.0
#: Files smaller than this are read by one process: the parts would be short next to a
#: child's start (about 0.5 s of imports) and its warm-up.
MIN_BYTES = 8 * WARM_BYTES
#: How the parts of this process's splits went: "adopted" (a child's part was taken) or "read
#: on" (its start state differed, or it failed: this process read the part itself), and
#: "resumed" (read here from the state a child handed over); "gave up": a call or block stayed
#: open in the first part (the rest read here, its parse in a child).
outcomes: Counter[str] = Counter()


def _plain_file(src: str | Source) -> tuple[str, int] | None:
    """The path and size of an input that is a regular, uncompressed UTF-8 file, else None
    (``input_size`` is None for what is not plain UTF-8 text: stdin, a pipe, compressed input,
    UTF-16, a BOM)."""
    from cuzk_diag.sources import input_size

    if isinstance(src, Source) and not src.regular:
        return None
    name = src.name if isinstance(src, Source) else src
    size = input_size(name)
    return None if size is None else (name, size)


def splittable_files(inputs: Sequence[str | Source], jobs: int = 2) -> list[str] | None:
    """The paths of the inputs when each is a regular, uncompressed UTF-8 file (one log, or the
    rotated files of one) and one at least is of ``MIN_BYTES``, or, for two processes, the
    files can be cut once across (``across``: rotated files each smaller than that): they are
    assembled in parts (``stream_files``); else None."""
    if not inputs:
        return None
    plain = [_plain_file(src) for src in inputs]
    if any(p is None for p in plain):
        return None
    files = [p for p in plain if p is not None]
    names, sizes = [name for name, _ in files], [size for _, size in files]
    if max(sizes) >= MIN_BYTES or across(names, sizes, jobs, WARM_BYTES) is not None:
        return names
    return None


def stream_files(
    names: Sequence[str],
    ingest: Any,
    *,
    deliver: Callable[[list[Any]], Iterator[Any]],
    jobs: int = 2,
    progress: Callable[[int], None] | None = None,
    tables: bool = False,
    share: float | None = None,
) -> Iterator[Any]:
    """The records of the files of one run through ``ingest`` (an ``stream.Ingest`` of them
    all), in order: each file of at least ``MIN_BYTES`` in ``jobs`` parts
    (``stream_split``, which reads on into the next file from the state at its end), the others
    here. The same records, accounting and refusals of inputs of other runs as one process's.
    The children of a file's parts start as the file before it begins (``stream_split``'s
    ``ready``)."""
    sizes = [os.path.getsize(name) for name in names]
    plan = across(names, sizes, jobs, WARM_BYTES, share)
    if plan is not None:
        yield from _stream_across(
            names, sizes, plan, ingest, deliver, progress=progress, tables=tables
        )
        return

    def need(k: int) -> int:
        """The children of file ``k``'s later parts (none for a file read here)."""
        if k >= len(names) or sizes[k] < MIN_BYTES:
            return 0
        return part_count(sizes[k], jobs, WARM_BYTES) - 1

    # Children free for the next file's parts: those whose parts of this file were taken come
    # back (``stream_split``'s ``spare``), so that rotated files pay an interpreter's imports
    # once (3 children started for 4 files cost 1.3 s of CPU on two cores); those the next
    # file needs beyond them start as this file begins (their imports run meanwhile).
    idle: list[parallel.ChildCall] = []
    early: list[parallel.ChildCall] = []
    try:
        for k, name in enumerate(names):
            last = k == len(names) - 1
            mine, idle = idle + early, []
            more = need(k + 1) - max(need(k), len(mine))
            early = [parallel.waiting_child() for _ in range(more)]
            if sizes[k] >= MIN_BYTES:
                yield from stream_split(
                    name,
                    ingest,
                    deliver=deliver,
                    jobs=jobs,
                    progress=progress,
                    tables=tables,
                    share=share,
                    source=k,
                    last=last,
                    ready=mine,
                    spare=idle,
                )
            else:
                idle = mine
                yield from _read_here(name, k, last, ingest, deliver, progress)
    finally:
        for child in (*idle, *early):
            child.close()


def _read_here(
    name: str,
    k: int,
    last: bool,
    ingest: Any,
    deliver: Callable[[list[Any]], Iterator[Any]],
    progress: Callable[[int], None] | None,
    after_first: Callable[[], None] | None = None,
) -> Iterator[Any]:
    """File ``k`` of several assembled here, as ``stream`` assembles an input
    (``stream_files``); ``after_first()`` is called once its first chunk is assembled."""
    from cuzk_diag.ingest.stream import assemble_parts, parse_parts

    parts: Iterator[Any] = (
        (idx, part, size, None)
        for idx, part, size, _ in parse_parts([name], ingest.acc, full=False, first=k)
    )
    if after_first is not None:
        parts = _then_call(parts, after_first)
    yield from assemble_parts(parts, ingest, deliver, progress)
    if last:
        yield from deliver(ingest.finish())


def _then_call(items: Iterator[Any], call: Callable[[], None]) -> Iterator[Any]:
    """The items, ``call()`` made when the one after the first is asked for (the first is
    dealt with by then), or at the end."""
    for item in items:
        yield item
        break
    call()
    yield from items


def across(
    names: Sequence[str],
    sizes: Sequence[int],
    jobs: int,
    warm: int,
    share: float | None = None,
    lead: float = 3.0,
) -> tuple[int, int] | None:
    """Where to cut rotated files (several plain files of one run) for two processes: one cut
    across them all, as one file is cut (``cuts``: this process's share ``lead`` warm-ups
    longer), rather than a cut in each file, each with its warm-up and its parts meeting at the
    file's end. Returns the file and the line start there; the child's part runs from it to
    the end of the last file (``assemble_part(then=)``). The cut is two warm-ups into its file
    at least (the child's warm-up reads one file), or at the file's end when the file is
    shorter than that (the child's part is then the later files, its warm-up the file's last
    ``warm`` bytes or the whole file: whether that came to the state there, the state check
    says, ``_Truth.takes``). None (each file cut on its own) for one file, more than two
    processes, a run too short for two parts, or a cut that would leave the child nothing."""
    total = sum(sizes)
    if jobs != 2 or len(names) < 2 or total < MIN_BYTES:
        return None
    at = _own_end(total, 2, warm, share, lead)
    start = 0
    for k, size in enumerate(sizes):
        if at < start + size:
            cut = line_start(names[k], min(max(at - start, 2 * warm), size))
            return (k, cut) if cut < size or k < len(names) - 1 else None
        start += size
    return None


def _stream_across(
    names: Sequence[str],
    sizes: Sequence[int],
    plan: tuple[int, int],
    ingest: Any,
    deliver: Callable[[list[Any]], Iterator[Any]],
    *,
    progress: Callable[[int], None] | None,
    tables: bool,
) -> Iterator[Any]:
    """The records of rotated files cut once across them (``across``: file ``k`` at ``cut``):
    the files before ``k`` and ``k`` up to the cut assembled here; the rest, from the cut to the
    end of the last file, by one child, started as the run begins and given its part once the
    first chunk's run facts are in (``Seed``), as one large file's. Taken when its start state
    is the state here at the cut; else the rest is read here, ``k``'s rest and then each later
    file."""
    k, cut = plan
    last = k == len(names) - 1
    split = _Split(
        names[k], sizes[k], ingest, deliver, progress, WARM_BYTES, CHUNK_BYTES, tables, k, last
    )
    split.then = [(names[j], j) for j in range(k + 1, len(names))]
    split.prepare([cut])
    split.waiting[1] = parallel.waiting_child()
    try:
        for j in range(k):
            start = None if split.started else functools.partial(split.start_children, 0)
            yield from _read_here(names[j], j, False, ingest, deliver, progress, start)
        yield from split.run_prepared()
    finally:
        split.close()
    if split.covered:
        return
    # The child's part was read here up to the end of file k; the later files are read here
    # too. (What the child's progress counted of them is not counted again.)
    counted = _Counted(progress, split.shown[-2])
    for j in range(k + 1, len(names)):
        yield from _read_here(names[j], j, j == len(names) - 1, ingest, deliver, counted)


class _Counted:
    """A progress callback that passes on only the bytes beyond ``already`` (counted once)."""

    def __init__(self, progress: Callable[[int], None] | None, already: int) -> None:
        self.progress, self.already = progress, already

    def __call__(self, n: int) -> None:
        skip = min(n, self.already)
        self.already -= skip
        if self.progress is not None and n > skip:
            self.progress(n - skip)


def _made_before(marks: list[tuple[int, int, int]], before: int) -> tuple[int, int] | None:
    """The assembler's counters (``seq``, ``block_seq``) at the last mark at or before byte
    ``before`` (``marks``: byte offset and counters, in order); None before the first."""
    found = None
    for offset, seq, block_seq in marks:
        if offset > before:
            break
        found = seq, block_seq
    return found


def _own_end(size: int, parts: int, warm: int, share: float | None, lead: float) -> int:
    """Where this process's part of ``size`` bytes ends: its share (``share`` of them, else an
    even one of ``parts``) and ``lead`` warm-ups more (``cuts``, ``across``)."""
    own = size // parts if share is None else int(size * share)
    return min(size, own + int(lead * warm))


def cuts(
    name: str,
    size: int,
    parts: int,
    warm: int,
    share: float | None = None,
    lead: float = 3.0,
) -> list[int]:
    """Line starts that cut ``name`` into ``parts`` parts of about equal work: children read
    ``warm`` bytes more than their part (sometimes half a warm-up more again), start once this
    process has read its first chunk, and make the tables of their records, so this process's
    part is ``lead`` warm-ups longer (on the 250 MB log, two processes, it waited 0.5-1.2 s for
    its child with two and children started with it; ``READY_LEAD`` for children started
    earlier). ``share``: this process's part is that fraction of the file instead of ``1 /
    parts`` (as many warm-ups longer too), the others equal."""
    first = _own_end(size, parts, warm, share, lead)
    step = (size - first) / max(1, parts - 1)
    out = [line_start(name, first + int(i * step)) for i in range(parts - 1)]
    return sorted({c for c in out if 0 < c < size})


class _Truth:
    """The state at the next cut as far as it is known: this process's own assembly, or the
    handover of the child whose part ended there (less the TIMELINE entries its warm-up left,
    ``extra``). The ingest's ``shift`` turns the block numbers of its assembler into the
    log's (``stream.Ingest``). ``source``: the input's index."""

    def __init__(self, ingest: Any, source: int = 0) -> None:
        self.ingest = ingest
        self.source = source
        self.handed: Handover | None = None
        self.extra: set[Any] = set()

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
        handed, shift = self.handed, int(self.ingest.shift)
        return (self.ingest.asm.block_seq if handed is None else handed.block_seq) + shift

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
        self.ingest.shift = self.block_seq() - part.start.block_seq
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
        ing.parser = LineParser(self.source, ing.acc, full=False)
        ing.parser.resume(self.handed.carry)
        self.handed, self.extra = None, set()


def stream_split(
    name: str,
    ingest: Any,
    *,
    deliver: Callable[[list[Any]], Iterator[Any]],
    jobs: int = 2,
    progress: Callable[[int], None] | None = None,
    at: Sequence[int] | None = None,
    warm: int | None = None,
    chunk_size: int | None = None,
    tables: bool = False,
    share: float | None = None,
    source: int = 0,
    last: bool = True,
    ready: list[parallel.ChildCall] | None = None,
    spare: list[parallel.ChildCall] | None = None,
) -> Iterator[Any]:
    """The records of ``name`` through ``ingest`` (an ``stream.Ingest`` whose input ``source``
    it is, the ``last`` of the run's; the state of the ones before it is the ingest's) in
    ``jobs`` parts (fewer when they would be shorter than two warm-ups), one assembled here and
    the others in children, each child's taken when its state at its start proves to be the
    state there (``_Truth.takes``), else read here from that state. ``at``: the cuts (line
    starts; by default ``cuts``). ``deliver`` turns a list of records and ``SegmentEnd``s into
    the records (calling back on segment ends). ``warm`` and ``chunk_size`` default to
    ``WARM_BYTES`` and ``CHUNK_BYTES``. With ``tables``, the records of a child's part come as
    Arrow tables (``frame.records_to_table``, made by the child), the others as dicts.
    ``share``: the fraction of the file this process assembles (``cuts``). The ingest's run
    ends with the file if it is the ``last`` input, else it reads on in the next one from the
    state at the file's end (of this process, or handed over by the child of its last
    part). ``ready``: children started earlier (``parallel.waiting_child``) for its parts,
    which it takes (the file is then cut with ``READY_LEAD``); those it does not need, it
    stops, or with ``spare`` (a list) puts there, with each child whose part it took: the
    children free for another file's parts (which ``spare``'s owner stops in the end)."""
    warm = WARM_BYTES if warm is None else warm
    chunk_size = CHUNK_BYTES if chunk_size is None else chunk_size
    size = os.path.getsize(name)
    split = _Split(name, size, ingest, deliver, progress, warm, chunk_size, tables, source, last)
    split.ready = list(ready or [])
    split.spare = spare
    if at is None:
        lead = READY_LEAD if ready else 3.0
        at = cuts(name, size, part_count(size, jobs, warm), warm, share, lead)
    return split.run(list(at))


def part_count(size: int, jobs: int, warm: int) -> int:
    """The parts of a file of ``size`` bytes: ``jobs``, fewer when they would be shorter than
    two warm-ups (whose child would spend more warming up than assembling)."""
    return max(1, min(jobs, size // (2 * warm) if warm else jobs))


class _Split:
    """The parts of one file: their children, what they told, and the reading here."""

    def __init__(
        self,
        name: str,
        size: int,
        ingest: Any,
        deliver: Callable[[list[Any]], Iterator[Any]],
        progress: Callable[[int], None] | None,
        warm: int,
        chunk_size: int,
        tables: bool = False,
        source: int = 0,
        last: bool = True,
    ) -> None:
        from cuzk_diag.ingest.stream import PacedCollector

        self.name, self.size, self.ingest, self.deliver = name, size, ingest, deliver
        self.progress, self.warm, self.chunk_size = progress, warm, chunk_size
        self.tables, self.source, self.last = tables, source, last
        self.bounds: list[int | None] = [0, None]
        self.ready: list[parallel.ChildCall] = []  # children started before, for the parts
        self.spare: list[parallel.ChildCall] | None = None  # where children free again go
        # The later files the last part's child reads on into (a cut across rotated files,
        # ``across``), and whether its part, which covered them, was taken.
        self.then: list[tuple[str, int]] = []
        self.covered = False
        self.children: dict[int, parallel.ChildCall] = {}  # part -> the child reading it
        self.waiting: dict[int, parallel.ChildCall] = {}  # part -> its child, started early
        self.started = False
        self.shown: list[int] = []  # bytes of each part the child's progress counted
        self.starts: dict[int, Handover] = {}  # part -> its child's state at its start, told
        self.batches: dict[int, list[Batch]] = {}  # part -> its child's records so far
        self.told: dict[int, threading.Event] = {}
        self.collector = PacedCollector()
        self.truth = _Truth(ingest, source)
        self.stats = SourceStats(name)

    def start(self, i: int) -> int:
        """Where part ``i`` begins (only the last part's end is None)."""
        lo = self.bounds[i]
        assert lo is not None
        return lo

    def run(self, at: list[int]) -> Iterator[Any]:
        self.prepare(at)
        return self.run_prepared()

    def prepare(self, at: list[int]) -> None:
        """The parts: the file cut at the line starts ``at``."""
        self.bounds = [0, *at, None]
        self.shown = [0] * len(self.bounds)
        self.told = {i: threading.Event() for i in range(len(self.bounds))}

    def run_prepared(self) -> Iterator[Any]:
        ingest = self.ingest
        ingest.begin(self.source)
        try:
            # The children of parts that surely begin after the first chunk start now: their
            # imports run while this process reads that chunk, whose run facts they need.
            for i in range(1, len(self.bounds) - 1):
                if self.started or i in self.waiting:
                    break  # (started before: a cut across files, ``_stream_across``)
                if self.chunk_size < self.start(i) < self.size:
                    self.waiting[i] = self.ready.pop() if self.ready else parallel.waiting_child()
            self.let_go(self.ready)
            self.ready.clear()
            if self.source > 0 and not self.started:
                # A later file of the run: the run facts of the files before it are the
                # children's start, without waiting for this file's first chunk.
                self.start_children(0)
            stopped = yield from self.read(0, 0, self.bounds[1])
            if stopped is not None:
                self.give_up(stopped)
            for i in range(1, len(self.bounds) - 1):
                part = self.part(i)
                if part is None or not self.truth.takes(part.start, part.touched):
                    if i in self.children:
                        outcomes["read on"] += 1
                    self.truth.resume()
                    yield from self.read(i, self.start(i), self.bounds[i + 1])
                    continue
                outcomes["adopted"] += 1
                shift = self.truth.block_seq() - part.start.block_seq
                yield from _adopt(ingest, part, self.stats, self.deliver, shift)
                if part.end is None:  # the last part of the last input: the log is done
                    _finish_adopted(ingest, [self.stats, *part.more])
                    self.covered = bool(self.then)
                    return
                self.truth.hand(part)
            self.truth.resume()  # (the last part's child's state, the input ended)
            yield from self.deliver(ingest.end(self.stats))
            if self.last:
                yield from self.deliver(ingest.finish())
        finally:
            self.close()

    def close(self) -> None:
        """Stop the children still held (``let_go`` took those free for another file)."""
        for child in (*self.children.values(), *self.waiting.values(), *self.ready):
            child.close()

    def let_go(self, children: Sequence[parallel.ChildCall]) -> None:
        """Children this file's parts are done with: into ``spare``, else stopped."""
        for child in children:
            if self.spare is not None:
                self.spare.append(child)
            else:
                child.close()

    def start_children(self, floor: int) -> None:
        """A child for each part that begins after ``floor`` (the first chunk)."""
        self.started = True
        seed = Seed.of(self.ingest.asm)
        for i in range(1, len(self.bounds) - 1):
            last = self.bounds[i + 1] is None
            # (Else read here; a part at the file's end is one only when it reads on.)
            if floor < self.start(i) and (self.start(i) < self.size or (last and self.then)):
                then = self.then if last else []
                self.children[i] = parallel.call_in_child(
                    assemble_part,
                    self.name,
                    floor,
                    self.start(i),
                    self.bounds[i + 1],
                    seed,
                    self.warm,
                    self.chunk_size,
                    progress=functools.partial(self.heard, i),
                    child=self.waiting.pop(i, None),
                    needs_pandas=False,
                    tables=self.tables,
                    source=self.source,
                    last=self.last or bool(then),
                    guard=self.ingest.guard is not None,
                    then=then,
                )
        self.let_go(list(self.waiting.values()))  # (their parts begin in the first chunk)
        self.waiting.clear()

    def heard(self, i: int, news: int | Handover | Batch) -> None:
        """What part ``i``'s child tells: its start state once warmed up, then bytes read, and
        at the end its records."""
        if isinstance(news, Batch):
            self.batches.setdefault(i, []).append(news)
            return
        if isinstance(news, Handover):
            self.starts[i] = news
            self.told[i].set()
            return
        self.shown[i] += news
        if self.progress is not None:
            try:
                self.progress(news)
            except Exception:  # (a progress bar that fails must not stop the records)
                self.progress = None

    def part(self, i: int) -> Part | None:
        """Part ``i`` as its child read it; None when it has none, failed, or told a start
        state that is not the state here (then it is stopped at once)."""
        child = self.children.get(i)
        if child is None:
            return None
        while not self.told[i].wait(0.05) and child.running():
            pass  # (the child tells its start state after its warm-up)
        if i in self.starts and not self.truth.takes(self.starts[i], None):
            child.close()  # (its part will not be taken: its CPU is free now)
            self.batches.pop(i, None)
            return None
        try:
            part: Part = child.result(keep=self.spare is not None)
        except Exception:
            self.batches.pop(i, None)
            return None  # (an error of the input is met again when read here, and raised)
        if self.spare is not None:
            self.let_go([self.children.pop(i)])  # (its call done: free for another file's)
        sent = self.batches.pop(i, [])
        if len(sent) != part.sent:
            return None  # (records lost on the way: read here)
        part.batches[:0] = sent
        return part

    def give_up(self, stopped: int) -> None:
        """Calls or blocks open for good (a call that failed in its GPU region): no child's
        part can be taken; the rest, from ``stopped``, is read here as one part."""
        outcomes["gave up"] += 1
        for child in self.children.values():
            child.close()
        self.children.clear()
        self.bounds[1:] = [stopped, None]
        self.shown[1] = sum(self.shown[1:])  # (what the children's progress counted of it)

    def read(self, i: int, lo: int, hi: int | None) -> Generator[Any, None, int | None]:
        """Assemble bytes ``[lo, hi)`` of part ``i`` here (their cleaning counts added): the
        first part parsed here, a later one (whose child's part was not taken) parsed in a child
        of its own ahead of the assembly, as several files are (``parallel``). The first part
        stops early when a call or block stays open longer than two warm-ups
        (``part.open_since``): no later part could then be taken; returns where."""
        from cuzk_diag.ingest.stream import parse_window

        ingest = self.ingest
        pos, marks = lo, [(lo, ingest.asm.seq, ingest.asm.block_seq)]

        def long_open() -> bool:
            made = _made_before(marks, pos - 2 * self.warm)
            return bool(self.children) and made is not None and open_since(ingest.asm, *made)

        parsed = (
            parse_window(self.name, lo, hi, ingest.parser, self.chunk_size, until=long_open)
            if i == 0
            else parallel.parse_window_in_child(
                self.name, lo, hi, ingest.parser.carry(), self.source
            )
        )
        while True:
            with self.collector:
                try:
                    _idx, part, size, _ = next(parsed)
                except StopIteration as stop:
                    end = stop.value
                    break
                out = ingest.events(part.events())
                del part
                self.collector.chunk(size)
            if not self.started:
                self.start_children(size)  # (the first chunk's run facts start them)
            n, self.shown[i] = max(0, size - self.shown[i]), max(0, self.shown[i] - size)
            if self.progress is not None and n:
                self.progress(n)
            yield from self.deliver(out)
            pos += size
            marks.append((pos, ingest.asm.seq, ingest.asm.block_seq))
        if i == 0:
            window, _carry = end  # (the parser is this process's own)
        else:  # the window's parse counts too, and a parser where it ended
            acc, (window, carry) = end
            ingest.acc.add(acc)
            ingest.parser = LineParser(self.source, ingest.acc, full=False)
            ingest.parser.resume(carry)
        self.stats.add(window)
        stopped = lo + window.bytes_taken
        return stopped if i == 0 and hi is not None and stopped < hi else None


def renumbered(out: list[Any], shift: int) -> list[Any]:
    """Records, tables of records (and ``SegmentEnd``s) with their block numbers (``record``)
    moved by ``shift`` (a child's, or a child's handed-over assembler's, counted from
    elsewhere)."""
    if shift:
        for i, rec in enumerate(out):
            if type(rec) is dict:
                if rec.get("record") is not None:
                    rec["record"] += shift
            elif type(rec) is pa.Table:
                at = rec.schema.get_field_index("record")
                out[i] = rec.set_column(at, "record", pc.add(rec.column(at), shift))
    return out


def _finish_adopted(ingest: Any, stats: Sequence[SourceStats]) -> None:
    """The end of a log whose last part a child read: what ``Ingest.end`` and ``finish`` do
    besides the parsers' and the assembler's ends, which the child did (``stats``: the
    cleaning counts of the input of the part and of each later one it read on into)."""
    from cuzk_diag.ingest.stream import input_read

    for one in stats:
        input_read(ingest.acc, one)
    if ingest.guard is not None:
        ingest.guard.finish()
    # (The run facts' era: applied as the part was taken in, ``_adopt``.)


def _adopt(
    ingest: Any,
    part: Part,
    stats: SourceStats,
    deliver: Callable[[list[Any]], Iterator[Any]],
    shift: int,
) -> Iterator[Any]:
    """Take a child's records and counts as this process's (the guard of several inputs
    reads the lines it reads of them first)."""
    asm = ingest.asm
    if ingest.guard is not None and part.guard:
        ingest.guard.feed(part.guard)
    # The part's run facts first: a sink completing its records as they come (the partition
    # export's wall clock, from the engine starts before each call) finds an engine start of
    # the part, as one process reading on would have. (The wall clock of a call is that of
    # the last engine start before its last line, so the part's later ones change no call.)
    for ev in run_facts(part):
        note_run_info(ingest.info, ev)
    for k, line in part.era_added:
        asm.era.markers.setdefault(k, line)
    asm.era.apply(ingest.info)  # (the era so far, as ``Ingest.events`` keeps it)
    for batch in taken(part.batches):
        items = unpickled(batch.blob)
        del batch
        yield from deliver(renumbered(items, shift))
        del items
    ingest.acc.add(part.acc)
    stats.add(part.stats)
    room = max(0, 1000 - len(asm.unattributed))
    asm.unattributed.extend(part.unattributed[:room])
    part.unattributed = []  # (let go: a later file's parts are read meanwhile)


__all__ = [
    "MIN_BYTES",
    "WARM_BYTES",
    "count_lines",
    "cuts",
    "line_start",
    "renumbered",
    "splittable_files",
    "stream_files",
    "stream_split",
]
