"""The one loop of ingest: inputs -> cleaned chunks -> events -> (guard, assembly) -> records.

``Ingest`` is pushed text as it comes (live mode reads its inputs on a thread of its own);
``stream`` pulls the inputs through the same object for batch analysis and the exports, and
``stream_events`` stops after the parse (the line table).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from typing import Any

from cuzk_diag.heap import for_ingest
from cuzk_diag.ingest.assemble import Assembler, SegmentEnd
from cuzk_diag.ingest.parse import Carry, LineParser, ParsedChunk, apply_source_stats
from cuzk_diag.records import Accounting, Event, RunInfo
from cuzk_diag.sources import CHUNK_SIZE, Source, SourceStats, iter_input, open_window

Progress = Callable[[int], None]


_settled = False


def settle_heap() -> None:
    """Before each ingest, the C heap's settings for chunks (``heap.for_ingest``); once
    per process, before the first: collect, then take every object alive now (the imported
    modules, mostly) out of the garbage collector's view (``gc.freeze``).

    An ingest makes millions of short-lived objects, which make the collector run full
    collections; each scans the whole heap. With the modules frozen these scan only what the
    analysis holds (on a 50 MB log their time fell from 0.8 s to 0.3 s). Done once, so a
    process that ingests many times (fleet workers, tests) freezes only its start. Called where
    every ingest starts: ``parse_parts`` (batch, exports, the parse process of ``--jobs``) and
    ``Ingest`` (live mode)."""
    global _settled
    for_ingest()
    if not _settled:
        _settled = True
        gc.collect()
        gc.freeze()


class PacedCollector:
    """Garbage collection once per chunk instead of every 700 allocations.

    A chunk's events are made in one burst and stay alive until the chunk is assembled; the
    collector, run by allocation counts, would walk them again and again meanwhile (gen 0, then
    gen 1, then in full collections as they fill gen 2: 12 % of an ingest's time). Inside the
    context the automatic collector is off; ``chunk(n)``, called once a chunk of ``n`` bytes
    has been dealt with and its events released, collects what outlived it (open calls and
    blocks, pending records), and fully once per ``FULL_BYTES`` of input. (The reference
    cycles of emitted calls and their blocks are broken as they leave the assembly,
    ``GpuRegion._release``, so a full collection finds next to nothing: on the simulated logs
    of every era, 12 MB each, read without one, a collection at the end found 600-800 objects,
    the blocks the assembly holds to its end with their calls, as on a log of 1 MB, where one
    every 16 MiB took 22-39 ms each and found none. The rare one left guards against cycles
    from elsewhere.)
    Leaving the context restores the collector as it was. ``stream`` enters it per chunk,
    never across a ``yield``, so that a caller holding a suspended iterator keeps its collector;
    a loop that runs a whole input through in one go (the line-table export, the parse
    process of ``--jobs``) holds it throughout. (Live mode, fed small pieces as they are
    written, keeps the automatic collector: pacing it there made no measurable difference.)"""

    FULL_BYTES = 64 * CHUNK_SIZE

    def __init__(self) -> None:
        self.since_full = 0
        self.was_enabled = False

    def __enter__(self) -> PacedCollector:
        self.was_enabled = gc.isenabled()
        gc.disable()
        return self

    def chunk(self, nbytes: int = CHUNK_SIZE) -> None:
        self.since_full += nbytes
        if self.since_full >= self.FULL_BYTES:
            self.since_full = 0
            gc.collect(2)
        else:
            gc.collect(1)

    def __exit__(self, *exc: object) -> None:
        if self.was_enabled:
            gc.enable()


def input_read(acc: Accounting, stats: SourceStats | None) -> None:
    """An input is read: its cleaning counts and its name go into the accounting."""
    if stats is not None:
        apply_source_stats(acc, stats)
        acc.sources.append(stats.name)


class Ingest:
    """Parse, guard and assemble the inputs of one run, one chunk of text at a time.

    ``begin(i)`` starts input ``i``, ``feed(text)`` takes whole cleaned lines of it,
    ``end(stats)`` closes it and ``finish()`` the run; each returns the records (dicts of
    ``PARTITION_SCHEMA`` columns) the lines completed, with a ``SegmentEnd`` after the last
    record of a clock segment. Inputs of different runs are refused (``RunGuard``).
    """

    def __init__(
        self,
        names: Sequence[str | Source],
        acc: Accounting,
        info: RunInfo,
        *,
        guard: bool = True,
    ) -> None:
        from cuzk_diag.pipeline import RunGuard

        settle_heap()
        self.acc = acc
        self.info = info
        self.asm = Assembler(acc, info)
        # (One input cannot be refused as another run's: no guard reads its events.)
        self.guard = RunGuard(names, acc) if guard and len(names) > 1 else None
        self.parser: LineParser | None = None
        # Added to the block numbers (``record``) of what this assembler completes: once it is
        # an assembler another process handed over (``split``), counted from elsewhere.
        self.shift = 0

    def begin(self, index: int) -> None:
        self.parser = LineParser(index, self.acc, full=False)

    def feed(self, text: str | bytes) -> list[Any]:
        assert self.parser is not None, "feed before begin"
        return self.events(self.parser.feed(text))

    def end(self, stats: SourceStats | None) -> list[Any]:
        out = self.events(self.parser.close()) if self.parser is not None else []
        self.parser = None
        input_read(self.acc, stats)
        return out

    def finish(self) -> list[Any]:
        if self.guard is not None:
            self.guard.finish()
        return self._numbered(self.asm.finish())

    def events(self, events: Sequence[Event]) -> list[Any]:
        """Assemble parsed events (of the current input). The run facts' era is the one the
        lines so far show: what a streamed export writes for the records out so far (its
        batches are written before the run ends, ``writers.PartitionSink``)."""
        if self.guard is not None:
            self.guard.feed(events)
        out = self._numbered(self.asm.feed_many(events))
        self.asm.era.apply(self.info)
        return out

    def _numbered(self, out: list[Any]) -> list[Any]:
        if not self.shift:
            return out
        from cuzk_diag.ingest.split import renumbered

        return renumbered(out, self.shift)


def parse_chunks(
    inputs: Iterable[str | Source], acc: Accounting, *, full: bool
) -> Iterator[tuple[int, list[Event], int, bool]]:
    """(input index, events, bytes read for them, whether the input ended) per chunk of the
    inputs read in order; the last item of each input holds the events of ``LineParser.close``,
    after which its cleaning counts are in ``acc``. (Bytes are those of the log's text: of a
    compressed input, the decompressed bytes.)"""
    for idx, part, size, ended in parse_parts(inputs, acc, full=full):
        yield idx, part.events(), size, ended


def parse_parts(
    inputs: Iterable[str | Source],
    acc: Accounting,
    *,
    full: bool,
    chunk_size: int = CHUNK_SIZE,
    first: int = 0,
) -> Iterator[tuple[int, ParsedChunk, int, bool]]:
    """``parse_chunks`` with each chunk's events not yet put together (``ParsedChunk``);
    ``first``: the index of the first input among the run's."""
    settle_heap()
    for idx, name in enumerate(inputs, first):
        parser = LineParser(idx, acc, full=full)
        stats = None
        done = 0
        for chunk_stats, chunk in iter_input(name, chunk_size):
            stats = chunk_stats
            if chunk:
                part = parser.feed_parts(chunk)
                read, done = stats.bytes_read - done, stats.bytes_read
                yield idx, part, read, False
        last = ParsedChunk(idx, 0, [], head=parser.close())
        input_read(acc, stats)  # (iter_input yields at least once: stats is set)
        yield idx, last, 0, True


def parse_window(
    name: str,
    start: int,
    stop: int | None,
    parser: LineParser,
    chunk_size: int,
    *,
    until: Callable[[], bool] | None = None,
) -> Generator[tuple[int, ParsedChunk, int, bool], None, tuple[SourceStats, Carry]]:
    """``parse_parts`` over bytes ``[start, stop)`` of one file (``sources.open_window``) with
    ``parser`` (not closed: the input goes on after the window); each chunk's size is the bytes
    of its lines. ``until()``, asked when the consumer comes back for the next chunk, ends the
    window there. Returns the cleaning counts of the lines read (``SourceStats.bytes_taken``
    says where they end) and the parser's carry."""
    done = 0
    for stats, chunk in iter_input(open_window(name, start, stop), chunk_size):
        if chunk:
            part = parser.feed_parts(chunk)
            read, done = stats.bytes_taken - done, stats.bytes_taken
            yield 0, part, read, False
            if until is not None and until():
                break
    return stats, parser.carry()


def stream(
    inputs: Sequence[str | Source],
    acc: Accounting,
    info: RunInfo,
    *,
    progress: Progress | None = None,
    on_segment: Callable[[int], None] | None = None,
    jobs: int | None = 1,
    tables: bool = False,
    share: float | None = None,
) -> Iterator[Any]:
    """Partition records of the inputs, one by one as they complete; ``acc`` and ``info`` are
    complete once the iterator is exhausted. ``on_segment(n)`` is called once the records of
    a clock segment are out. With ``jobs`` > 1, one large log file is assembled in ``jobs``
    parts by as many processes, as is each large one of several plain files in turn (rotated
    files of one log: ``split.stream_files``), and other inputs that are regular files
    are parsed in a second process ahead of the assembly (``parallel``); the records are the
    same. ``jobs=None`` lets ``parallel.auto_jobs`` choose. With ``tables``, the records another
    process assembled may come as Arrow tables of several records (``frame.records_to_table``
    of them, made there), in their place among the others (dicts). ``share``: the fraction
    of a log assembled in parts that this process assembles (``split.cuts``; by default as much
    as each other process)."""
    from cuzk_diag.ingest import parallel, split

    def deliver(out: list[Any]) -> Iterator[Any]:
        for rec in out:
            if type(rec) is SegmentEnd:
                if on_segment is not None:
                    on_segment(rec.segment)
            else:
                yield rec

    if jobs is None:
        jobs = parallel.auto_jobs(inputs)
    ing = Ingest(inputs, acc, info)
    files = split.splittable_files(inputs, jobs) if jobs > 1 else None
    if files is not None:
        _by_name(inputs)
        yield from split.stream_files(
            files, ing, deliver=deliver, jobs=jobs, progress=progress, tables=tables, share=share
        )
        return
    parts: Iterator[tuple[int, ParsedChunk, int, Accounting | None]]
    if jobs > 1 and parallel.can_parallel(inputs):
        parts = parallel.parse_in_child(_by_name(inputs))
    else:
        parts = (
            (idx, part, size, None) for idx, part, size, _ in parse_parts(inputs, acc, full=False)
        )
    yield from assemble_parts(parts, ing, deliver, progress)
    yield from deliver(ing.finish())


def assemble_parts(
    parts: Iterator[tuple[int, ParsedChunk, int, Accounting | None]],
    ing: Ingest,
    deliver: Callable[[list[Any]], Iterator[Any]],
    progress: Progress | None,
) -> Iterator[Any]:
    """The records of parsed chunks (``parse_parts``' or a parse child's, with its accounting at
    the end of each input) through ``ing``, delivered chunk by chunk."""
    from cuzk_diag.ingest import parallel

    collector = PacedCollector()
    while True:
        # Read, parse and assemble a chunk with the collector paced (not across a yield: the
        # caller's code runs with its own collector).
        with collector:
            item = next(parts, None)
            if item is None:
                break
            _idx, part, size, parsed = item
            if parsed is not None:
                parallel.adopt_parse_counts(ing.acc, parsed)
            events = part.events()
            del item, part
            out = ing.events(events)
            del events  # (the part gave them up: the chunk's events are freed here)
            collector.chunk(size)
        if progress is not None and size:
            progress(size)
        yield from deliver(out)


def _by_name(inputs: Sequence[str | Source]) -> list[str]:
    """The inputs' paths, for other processes to open: the ones opened here are closed."""
    names = []
    for src in inputs:
        if isinstance(src, Source):
            names.append(src.name)
            src.close()
        else:
            names.append(src)
    return names


def stream_events(
    inputs: Iterable[str | Source],
    acc: Accounting | None = None,
    *,
    full: bool = True,
    progress: Progress | None = None,
) -> Iterator[list[Event]]:
    """The parsed events of the inputs, a list per chunk (no assembly): the line table."""
    acc = acc if acc is not None else Accounting()
    for _idx, events, size, _ended in parse_chunks(inputs, acc, full=full):
        yield events
        if progress is not None and size:
            progress(size)
