"""Cleaned text -> typed ``Event``s, for every line family and code era of the daemon.

``LineParser.feed`` takes a chunk of whole lines: ``classify`` splits and counts them in bulk
(C code) and picks the lines to parse; ``columnar`` parses those of a fixed form column-wise;
one loop then hands each other picked line to the parser of its family (``timing``,
``timeline``, ``tracing``, ``bench``), repairing TIMELINE lines torn by another writer, and
``ParsedChunk`` puts all the events back in line order. Line numbers are kept on every event;
every physical line is counted once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cuzk_diag.ingest.parse.bench import MiscParser
from cuzk_diag.ingest.parse.classify import classify, family_counted, ints_array, split_lines
from cuzk_diag.ingest.parse.columnar import Group, extract_fixed
from cuzk_diag.ingest.parse.era import ERA_LABELS, ERAS, EraDetector
from cuzk_diag.ingest.parse.timeline import TIMELINE_PREFIX, intruder_at, parse_timeline
from cuzk_diag.ingest.parse.timing import NTT_H_PREFIX, TIMING_PREFIX, parse_ntt_h, parse_timing
from cuzk_diag.ingest.parse.tracing import TRACING_KINDS, parse_duration_ms, parse_tracing
from cuzk_diag.records import Accounting, Event, Family
from cuzk_diag.sources import MAX_LINE, Source

_BENCH = Family.BENCH  # (see records.Family)

__all__ = [
    "Carry",
    "ERAS",
    "ERA_LABELS",
    "EraDetector",
    "LineParser",
    "ParsedChunk",
    "TRACING_KINDS",
    "apply_source_stats",
    "iter_events",
    "parse_duration_ms",
    "parse_text",
]


@dataclass
class ParsedChunk:
    """A parsed chunk before its events are put together: the fixed-form lines as column
    groups, the other selected lines' events by row (a list where a torn line was repaired),
    the rows a repair consumed, and events before all of them (a torn line's end)."""

    source: int
    size: int  # selected lines
    groups: list[Group]
    rest: dict[int, Event | list[Event]] = field(default_factory=dict)
    cleared: list[int] = field(default_factory=list)
    head: list[Event] = field(default_factory=list)

    def others(self) -> tuple[list[Event], list[int]]:
        """The events that are not in column groups, in line order, each with the row it
        stands at (-1 for the head, which comes before every row); the chunk is left as it
        is. (Rows a repair consumed hold no event; a repaired torn line holds several.)"""
        events, rows = list(self.head), [-1] * len(self.head)
        for r in sorted(self.rest):
            ev = self.rest[r]
            if isinstance(ev, list):
                events.extend(ev)
                rows.extend([r] * len(ev))
            else:
                events.append(ev)
                rows.append(r)
        return events, rows

    def events(self) -> list[Event]:
        """The chunk's events in line order. The chunk gives its parts up (it is empty
        afterwards), so that the events live only as long as the list returned."""
        groups, rest, cleared, head = self.groups, self.rest, self.cleared, self.head
        self.groups, self.rest, self.cleared, self.head, size = [], {}, [], [], self.size
        self.size = 0
        # Each row's place among the chunk's events (after the head's), in row order: a row
        # holds one event of its group, or the per-line parsers' (one, or a repaired torn
        # line's several: those replace a group's), or none (a row a repair consumed); each
        # group's events are made straight into their places (``Group.place_events``), where
        # a list of them all was put in row order afterwards, an index per event.
        rows: list[int] = []
        others: list[Any] = []
        counts: list[int] = []
        for r, ev in rest.items():
            if ev is None:
                continue  # (a line the per-line parsers gave no event)
            rows.append(r)
            others.append(ev)
            counts.append(len(ev) if type(ev) is list else 1)
        count = np.zeros(size, dtype=np.int64)
        for g in groups:
            count[g.rows] = 1
        if cleared:
            count[cleared] = 0
        if rows:
            count[rows] = counts
        first = np.cumsum(count)
        total = int(first[-1]) if size else 0
        first -= count
        first += len(head)
        out: list[Any] = [*head, *([None] * total)]
        for g in groups:
            places = first[g.rows]
            places[count[g.rows] == 0] = -1
            g.place_events(self.source, out, places)
        # (After the groups': an event of the per-line parsers takes its row's place from a
        # group's.)
        for at, ev in zip(first[rows].tolist(), others, strict=True):
            if type(ev) is list:
                out[at : at + len(ev)] = ev
            else:
                out[at] = ev
        return out


@dataclass(frozen=True)
class Carry:
    """What a ``LineParser`` carries from one chunk of an input to the next."""

    next_line: int = 1  # number of the chunk's first line
    torn: tuple[int, str] | None = None  # a TIMELINE line torn at the boundary: (number, head)
    bench_open: bool = False  # a cuzk-bench block is open
    # The line before the chunk (``classify``'s edges): a C++ line; or a tracing line left out,
    # as its number and timestamp (a clock line if the chunk begins with a C++ line). So the
    # clock lines are those of the whole input, wherever its chunks end.
    after_cpp: bool = False
    tail: tuple[int, str] | None = None


class LineParser:
    """Turns cleaned text chunks of one input into events, keeping line numbers and the
    accounting.

    State carried across chunks (``Carry``): the line counter, a TIMELINE line torn at a chunk
    boundary, and whether a cuzk-bench block is open. ``full`` parses every line (for the line
    table); otherwise only the lines analysis needs become events (``classify``), and unrecognised
    INFO/DEBUG tracing lines among them keep only their header.
    """

    def __init__(
        self,
        source: int = 0,
        accounting: Accounting | None = None,
        *,
        full: bool = True,
        first_line: int = 1,
    ) -> None:
        self.source = source
        self.acc = accounting if accounting is not None else Accounting()
        self.full = full
        self.next_line = first_line
        self.misc = MiscParser(source, self.acc)
        self._torn: tuple[int, str] | None = None  # (line number, head line) awaiting its tail
        self._after_cpp = False  # (``Carry.after_cpp`` and ``Carry.tail``)
        self._tail: tuple[int, str] | None = None

    def carry(self) -> Carry:
        """The state the next chunk of this input starts from."""
        return Carry(self.next_line, self._torn, self.misc.bench_open, self._after_cpp, self._tail)

    def resume(self, carry: Carry) -> None:
        """Continue from ``carry`` (a chunk of an input parsed apart from the ones before it)."""
        self.next_line, self._torn = carry.next_line, carry.torn
        self.misc.bench_open = carry.bench_open
        self._after_cpp, self._tail = carry.after_cpp, carry.tail

    def feed(self, text: str | bytes) -> list[Event]:
        """Parse a chunk of whole lines (each ending in a newline; a ``str``, or valid UTF-8 as
        ``sources`` hands chunks on) and return its events."""
        return self.feed_parts(text).events()

    def feed_parts(self, text: str | bytes) -> ParsedChunk:
        """``feed`` up to the events of the fixed-form lines, which stay columns (a parse in
        another process sends them so, ``ParsedChunk.events`` makes them where they are used)."""
        arr, cut = split_lines(text, MAX_LINE)
        self.acc.oversized_lines += cut
        n = len(arr)
        chunk = classify(arr, full=self.full, after_cpp=self._after_cpp)
        counts = chunk.counts
        lineno = self.next_line
        self.next_line += n
        tail = None
        if n and not self.full:
            tail, self._tail = self._tail, None
            self._after_cpp = chunk.last_cpp
            if chunk.last_left:
                last = arr[n - 1].as_py()
                self._tail = (lineno + n - 1, last.split(" ", 1)[0])
        index = chunk.index
        size = len(index)
        groups = extract_fixed(
            chunk.selected,
            index,
            lineno,
            chunk.clock,
            chunk.tracing,
            full=self.full,
            prefixed=chunk.prefixed,
        )
        done = np.zeros(size, dtype=bool)
        for g in groups:
            done[g.rows] = True
        rest = np.flatnonzero(~done)
        part = ParsedChunk(self.source, size, groups)
        if tail is not None and chunk.first_cpp:
            # The previous chunk's last line, a tracing line before this C++ line: a clock line.
            part.head.append(Event(tail[0], self.source, Family.TRACING, "clock", {"ts": tail[1]}))
        # The other lines one by one: an event (or, for a repaired torn line, a list) per row.
        put = part.rest
        skip = -1
        if self._torn is not None and n:
            first = arr[0].as_py()
            if self._finish_torn(first, lineno, part.head):
                skip = 0
                counts[family_counted(first)] -= 1
                if size and index[0] == 0:
                    part.cleared.append(0)
        source, acc, full, misc = self.source, self.acc, self.full, self.misc.parse
        texts = chunk.selected.take(ints_array(rest)).to_pylist()
        for r, j, ln in zip(rest.tolist(), index[rest].tolist(), texts, strict=True):
            if j == skip:
                continue
            no = lineno + j
            c = ln[:1]
            if c == "C":
                if ln.startswith(TIMING_PREFIX):
                    put[r] = parse_timing(ln, no, source, acc)
                    continue
                if ln.startswith(NTT_H_PREFIX):
                    put[r] = parse_ntt_h(ln, no, source, acc)
                    continue
            elif c == "T" and ln.startswith(TIMELINE_PREFIX):
                ev = parse_timeline(ln, no, source, acc)
                if ev is not None:
                    put[r] = ev
                elif j + 1 < n:
                    # A TIMELINE line split by another writer: join it with the next line.
                    tail = arr[j + 1].as_py()
                    repaired: list[Event] = []
                    if self._repair(ln, no, tail, no + 1, repaired):
                        skip = j + 1
                        counts[family_counted(tail)] -= 1
                        if r + 1 < size and index[r + 1] == skip:
                            part.cleared.append(r + 1)
                    else:
                        self._unrepaired(ln, no, repaired)
                    put[r] = repaired
                else:
                    self._torn = (no, ln)
                continue
            if not ln:
                put[r] = Event(no, source, Family.BLANK, "blank", {})
                continue
            ev = parse_tracing(ln, no, source, full) if c.isdigit() else None
            if ev is not None and ev.malformed:
                acc.note_malformed(no)
            if ev is None:
                ev = misc(ln, no)
                if ev.family is _BENCH:
                    counts["bench"] += 1
                    counts["other"] -= 1
            put[r] = ev
        acc.by_family.update(counts)
        acc.lines_total += n
        return part

    def close(self) -> list[Event]:
        """End of input: a torn head that never got its tail is counted as malformed."""
        out: list[Event] = []
        if self._torn is not None:
            no, head = self._torn
            self._torn = None
            self._unrepaired(head, no, out)
        return out

    # -- torn TIMELINE lines (reference section 3.4) -----------------------------------------

    def _repair(self, head: str, head_no: int, tail: str, tail_no: int, out: list[Event]) -> bool:
        at = intruder_at(head)
        if at is None:
            return False
        ev = parse_timeline(head[:at] + tail, head_no, self.source, self.acc)
        if ev is None:
            return False
        ev.fields["torn_line"] = tail_no
        out.append(ev)
        # The head line is counted as TIMELINE; the tail line is counted under the family of
        # the line that tore it (so families still add up to physical lines).
        self.acc.torn_repaired += 1
        out.extend(self._reparse_intruder(head[at:], head_no))
        return True

    def _reparse_intruder(self, text: str, no: int) -> list[Event]:
        """Parse the line that tore a TIMELINE line; it is not a physical line of its own."""
        sub = LineParser(self.source, self.acc, full=True, first_line=no)
        events = sub.feed(text + "\n")
        self.acc.lines_total -= 1  # its physical line is the tail, counted by feed()
        return events

    def _unrepaired(self, ln: str, no: int, out: list[Event]) -> None:
        self.acc.torn_unrepaired += 1
        self.acc.note_malformed(no)
        out.append(Event(no, self.source, Family.TIMELINE, "torn", {"text": ln[:200]}, True))

    def _finish_torn(self, first: str, no: int, out: list[Event]) -> bool:
        assert self._torn is not None
        head_no, head = self._torn
        self._torn = None
        if self._repair(head, head_no, first, no, out):
            return True
        self._unrepaired(head, head_no, out)
        return False


def parse_text(text: str, *, full: bool = True) -> tuple[list[Event], Accounting]:
    """Parse a whole text (tests, notebooks): returns events and accounting."""
    from cuzk_diag.sources import SourceStats, clean_chunk

    stats = SourceStats("<text>")
    if text and not text.endswith("\n"):
        text += "\n"
    p = LineParser(full=full)
    cleaned = clean_chunk(text.encode("utf-8", "surrogateescape"), stats)
    events = p.feed(cleaned) + p.close()
    apply_source_stats(p.acc, stats)
    return events, p.acc


def apply_source_stats(acc: Accounting, stats: Any) -> None:
    """Add one input's cleaning counts (sources.SourceStats) to the accounting."""
    acc.ansi_lines += stats.ansi_lines
    acc.journald_lines += stats.journald_lines
    acc.journald_sources.update(stats.journald_hosts)
    acc.decode_errors += stats.decode_errors
    acc.oversized_lines += stats.oversized_lines
    if stats.truncated:
        acc.truncated_inputs[stats.name] = stats.truncated
    acc.stray_cr_lines += stats.stray_cr_lines


def iter_events(
    inputs: Iterable[str | Source],
    accounting: Accounting | None = None,
    *,
    full: bool = True,
    progress: Any = None,
) -> Iterator[Event]:
    """Events of several inputs (paths, ``-``, opened ``Source``s) in order; ``accounting`` is
    filled as it goes. (``ingest.stream`` is the same loop with assembly behind it.)"""
    from cuzk_diag.ingest.stream import stream_events

    for batch in stream_events(inputs, accounting, full=full, progress=progress):
        yield from batch
